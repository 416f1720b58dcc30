#!/usr/bin/env bash
# Issue 5's integration tests over the test bed, with rt_check (one process
# per rank, started by pprun):
#   runtime_check.sh PPRUN RT_CHECK TESTBED DEV_KIND
# 1. every scenario (sizes 0 B .. 16 MiB + 3 both ways, many outstanding,
#    wildcards and order, truncation, early and late receivers) with 2 ranks
#    in every mode and with 4 ranks on 2 nodes;
# 2. a rank killed mid-transfer: its sender and its receiver get -ECONNRESET
#    within the timeout, no hang;
# 3. pull handlers (pull_cores; progress=thread, which needs them), and
#    progress=event over the packet port: a late receiver completes while
#    its sender computes without pp_* calls, and does not without them;
#    progress=thread refused without pull_cores, progress=event where the
#    port has nothing to sleep on;
# 4. cluster=FILE: the rank -> MAC table replaces discovery; a wrong MAC in
#    it makes the job fail.
# Over udp, packet-udp and af_packet-udp (packet: and DPDK's af_packet
# ports with frame=udp, each on its port's address) all but 4: their MACs
# encode addresses, which a cluster file of the ports' MACs does not name.
set -uo pipefail
pprun=$1 rtc=$2 tb=$3 kind=$4
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
export PP_TIMEOUT_MS=3000
"$tb" up 2 2 >/dev/null || fail "test bed"
log=$(mktemp /tmp/pp-rtcheck.XXXXXX)
tmp=$(mktemp -d /tmp/pp-cluster.XXXXXX)
trap 'rm -rf "$log" "$tmp"' EXIT

# run NAME WANT_OK_LINES PPRUN_ARGS... -- RT_CHECK_ARGS...
. "$(dirname "$0")/rt_run.sh"
run() {
  rt_run "$@" || return
  echo "ok: $rt_name ($rt_ok checks)"
}

for mode in push-pull push-all push-zero; do
  run "2 ranks, $mode, all scenarios" 9 -n 2 --nodes 2 --mode "$mode" -- "$rtc" all
done
run "4 ranks on 2 nodes, push-pull, all scenarios" 17 -n 4 --nodes 2 -- "$rtc" all
# af_packet takes chained buffers; AF_XDP cannot, and copies instead.
run "2 ranks, push-pull, zero-copy transmit, sizes" 2 -n 2 --nodes 2 -- \
  "$rtc" -c zerocopy=on,log=info sizes
[ "$kind" != af_packet ] || grep -q "zero-copy frames [1-9]" "$log" ||
  fail "zero-copy run sent no frame by reference"
for mode in push-all push-zero; do
  run "4 ranks, $mode, many" 4 -n 4 --nodes 2 --mode "$mode" -- "$rtc" many
done

# Kills: the dead rank exits 0 without pp_finalize (pprun would stop the
# job on a non-zero status); rt_check bounds each failure by timeout + 2 s.
run "kill: receiver dies, 2 ranks" 1 -n 2 --nodes 2 -- "$rtc" kill
run "kill: receivers die, 4 ranks" 2 -n 4 --nodes 2 -- "$rtc" kill
for mode in push-pull push-all; do
  run "kill: sender dies, $mode" 1 -n 2 --nodes 2 --mode "$mode" -- "$rtc" killsend
done

# Pull handlers: with them the ack comes while the sender computes; without
# them (the check that the test can fail) it does not.
run "pull handlers serve a computing sender" 1 -n 2 --nodes 2 -- \
  "$rtc" -c pull_cores=0 --compute 10 handlers
run "no pull handlers: no progress while computing" 1 -n 2 --nodes 2 -- \
  "$rtc" --no-progress --compute 1 handlers
grep -q "ack did not arrive" "$log" || fail "control run"
# refused WHAT CONFIG PATTERN: a job with rt_check -c CONFIG must not start,
# and its log must say why (PATTERN).
refused() {
  # shellcheck disable=SC2046 # the options split
  "$pprun" -n 2 --nodes 2 $(rt_kind_args) --timeout 60 -- \
    "$rtc" -c "$2" handlers >"$log" 2>&1 && { cat "$log"; fail "$1 started"; }
  grep -q "$3" "$log" || { cat "$log"; fail "$1: no clear error"; }
  echo "ok: $1 is refused with a clear error"
}
# progress=thread names the same threads; without pull_cores it has no core
# to run them on, and pp_init says so.
run "progress=thread serves a computing sender" 1 -n 2 --nodes 2 -- \
  "$rtc" -c progress=thread,pull_cores=0 --compute 10 handlers
refused "progress=thread without pull_cores" progress=thread \
  "progress=thread: set pull_cores=LIST too"
# progress=event: the thread asleep on the port serves the computing sender
# (ports with a wait descriptor); a DPDK port refuses it with a clear error.
if [ "$kind" = packet ] || [ "$kind" = udp ] || [ "$kind" = packet-udp ]; then
  run "event progress serves a computing sender" 1 -n 2 --nodes 2 -- \
    "$rtc" -c progress=event --compute 10 handlers
else
  refused "progress=event over $kind" progress=event \
    "progress=event: the port .* has nothing to sleep on"
fi

# udp and *-udp ports' MACs encode their addresses: not the ports' MACs.
case $kind in udp | *-udp) echo "PASS: rt_check over $kind"; exit 0 ;; esac
# cluster=FILE: rank r is on node r/2, port r%2 (pprun's blocks).
for r in 0 1 2 3; do
  echo "$r $("$tb" mac $((r / 2)) $((r % 2))) ppn$((r / 2))"
done >"$tmp/good"
run "cluster file, 4 ranks, many" 4 -n 4 --nodes 2 -- "$rtc" -c "cluster=$tmp/good" many
run "cluster file, 4 ranks, sizes" 4 -n 4 --nodes 2 -- "$rtc" -c "cluster=$tmp/good" sizes
# Rank 1 listed at the MAC of a port nobody uses (node 0, port 1; an unknown
# MAC would be flooded to every port by the bridge): rank 0 sends there and
# never hears back.
{ echo "0 $("$tb" mac 0 0)"; echo "1 $("$tb" mac 0 1)"; } >"$tmp/bad"
"$pprun" -n 2 --nodes 2 --dev-kind "$kind" --timeout 60 -- \
  "$rtc" -c "cluster=$tmp/bad,timeout_ms=1000" match >"$log" 2>&1 &&
  { cat "$log"; fail "a job with a wrong MAC in its cluster file succeeded"; }
grep -q -e "peer lost" -e "timed out" "$log" || { cat "$log"; fail "wrong MAC: no rank reported a lost peer or a timeout"; }
echo "ok: a wrong MAC in the cluster file makes the job fail (peer lost or timed out)"
echo "PASS: rt_check over $kind"
