#!/usr/bin/env bash
# udp: ports across a router: two namespaces of this test's own (udp0,
# udp1), each on its own subnet, joined by a third that forwards (udpr),
# with pp_pingpong's two ranks started by hand in them as user nobody.
#   udp_routed.sh PP_PINGPONG
# 1. pp_pingpong --check in every mode, sizes at the port's edge on 1500-byte
#    links (1458 bytes after the Ethernet header, 1382 of payload).
# 2. The early and late receiver tests.
# 3. packet: ports with frame=udp (as root: raw sockets) across the same
#    router, and one rank of each kind: the same wire format; then DPDK's
#    af_packet ports with frame=udp, both ranks and beside each other kind
#    (their peers with gso=0: a DPDK port cannot take a GSO message whole).
# Every frame went through the router: its counters show it. The
# namespaces are deleted on exit, whatever happens.
set -uo pipefail
pingpong=$(realpath "$1")
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (it makes namespaces)"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
"${as[@]}" test -x "$pingpong" || { echo "SKIP: user nobody cannot run $pingpong"; exit 77; }

drop_ns() { for ns in udp0 udpr udp1; do ip netns del "$ns" 2>/dev/null; done; }
tmp=$(mktemp -d)
trap 'drop_ns; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM # the EXIT trap on a signal too
drop_ns # left by a run that was killed

set -e
for ns in udp0 udpr udp1; do
  ip netns add "$ns"
  ip -n "$ns" link set lo up
done
ip link add u0 netns udp0 type veth peer name r0 netns udpr
ip link add u1 netns udp1 type veth peer name r1 netns udpr
ip -n udp0 addr add 10.77.0.2/24 dev u0
ip -n udpr addr add 10.77.0.1/24 dev r0
ip -n udp1 addr add 10.77.1.2/24 dev u1
ip -n udpr addr add 10.77.1.1/24 dev r1
for l in "udp0 u0" "udpr r0" "udp1 u1" "udpr r1"; do
  set -- $l
  ip -n "$1" link set "$2" up
done
ip -n udp0 route add default via 10.77.0.1
ip -n udp1 route add default via 10.77.1.1
ip netns exec udpr sysctl -qw net.ipv4.ip_forward=1
set +e

secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
peers=10.77.0.2:50000+10.77.1.2:50000
# Rank r's port: kind[r] udp (a udp: port, as nobody), raw (packet:u<r>
# with frame=udp, as root) or dpdk (DPDK's net_af_packet on u<r> with
# frame=udp, as root).
kind=(udp udp)
dev_of() {
  local opts=port=50000,peers=$peers
  [ "${kind[0]}" = dpdk ] || [ "${kind[1]}" = dpdk ] && opts+=,gso=0
  case ${kind[$1]} in
    raw) echo "packet:u$1,frame=udp,$opts" ;;
    dpdk) echo "--vdev=net_af_packet0,iface=u$1 frame=udp,$opts" ;;
    *) echo "udp:10.77.$1.2:50000,${opts#port=50000,}" ;;
  esac
}
# Both ranks, rank r in namespace udp<r> at 10.77.<r>.2:50000; pp_pingpong's
# arguments after. Rank 0's output in $tmp/0.log, rank 1's in $tmp/1.log.
pair() {
  local job=$((RANDOM * 32768 + RANDOM)) pids=() st=0
  for r in 0 1; do
    local who=("${as[@]}")
    [ "${kind[$r]}" = udp ] || who=()
    ip netns exec "udp$r" "${who[@]}" env PP_RANK=$r PP_SIZE=2 PP_JOB=$job \
      PP_JOB_SECRET="$secret" PP_NODE="n$r" PP_DEV="$(dev_of $r)" \
      timeout 120 "$pingpong" "$@" > "$tmp/$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || st=1; done
  return $st
}
forwarded() { ip netns exec udpr cat /sys/class/net/r1/statistics/tx_bytes; }

before=$(forwarded)
sizes=0,1,80,761,1382,1383,65539,1m
for mode in push-pull push-all push-zero; do
  pair --test latency --mode "$mode" --sizes "$sizes" --iters 5 --warmup 1 --check ||
    { cat "$tmp"/*.log; fail "pp_pingpong $mode across the router"; }
  rows=$(grep -c "^latency" "$tmp/0.log")
  [ "$rows" -eq 8 ] || { cat "$tmp"/*.log; fail "$mode: $rows result rows, want 8"; }
  echo "ok: $mode across the router as nobody, 8 sizes, every byte checked"
done
pair --test early,late --sizes 16,4k,64k --iters 10 --warmup 2 --check ||
  { cat "$tmp"/*.log; fail "early/late across the router"; }
for t in early late; do
  rows=$(grep -c "^$t " "$tmp/0.log")
  [ "$rows" -eq 3 ] || { cat "$tmp"/*.log; fail "$t: $rows result rows, want 3"; }
done
echo "ok: early and late receivers across the router, every byte checked"
# At least rank 0's 1 MiB messages: 6 per mode (a warm-up and 5).
n=$(($(forwarded) - before))
[ "$n" -gt $((3 * 6 * 1048576)) ] || fail "only $n bytes forwarded to udp1: not through the router?"
echo "ok: the router forwarded $n bytes to udp1"

# packet: ports framing in UDP, both ranks, then one of each kind.
for k in "raw raw" "udp raw" "raw udp" "dpdk dpdk" "udp dpdk" "dpdk raw"; do
  read -r -a kind <<<"$k"
  before=$(forwarded)
  for mode in push-pull push-all; do
    pair --test latency --mode "$mode" --sizes "$sizes" --iters 5 --warmup 1 --check ||
      { cat "$tmp"/*.log; fail "pp_pingpong $mode across the router, ranks on $k"; }
    rows=$(grep -c "^latency" "$tmp/0.log")
    [ "$rows" -eq 8 ] || { cat "$tmp"/*.log; fail "$k, $mode: $rows result rows, want 8"; }
  done
  n=$(($(forwarded) - before))
  [ "$n" -gt $((2 * 6 * 1048576)) ] || fail "$k: only $n bytes forwarded to udp1"
  echo "ok: ranks on $k ports (raw: packet: with frame=udp; dpdk: af_packet with frame=udp) across the router, 8 sizes, push-pull and push-all, every byte checked, $n bytes forwarded"
done
kind=(udp udp)
# The port reports its interface's speed, as the raw ports do: the engine
# starts its path rate there, and without it a 1 KiB message waited for a
# PULL (12 against 3.5 us one way over a veth).
info=$(dirname "$pingpong")/pp_info
speed=$(ip netns exec udp0 cat /sys/class/net/u0/speed 2>/dev/null)
if [ -x "$info" ] && [ "${speed:-0}" -gt 0 ] 2>/dev/null; then
  out=$(ip netns exec udp0 "$info" --check udp:10.77.0.2:50010 2>&1)
  grep -q "up, $speed Mb/s" <<<"$out" || { echo "$out"; fail "the udp: port does not report u0's $speed Mb/s"; }
  echo "ok: the port reports its link's $speed Mb/s"
fi
echo "PASS: udp across a router"
