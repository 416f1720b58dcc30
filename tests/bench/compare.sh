#!/usr/bin/env bash
# librt-pp against what a user would otherwise run over the same veth, in one
# run on the test bed (namespaces ppn0 and ppn1, port pp0 each, bridge ppbr0):
#
#   pp_pingpong   push-pull, push-all, push-zero over DPDK af_packet (pprun)
#   Open MPI      tests/bench/mpi_pingpong.c, TCP BTL only (btl tcp,self)
#   sockperf      UDP ping-pong, blocking, and busy-polling (--nonblocked --lls)
#   sockperf      TCP ping-pong, blocking (latency only)
#   iperf3        TCP bandwidth (one stream)
#
# and then, through tests/bench/compare_shm.sh, the intranode part: two ranks
# on one node (shared memory) against Open MPI's vader+CMA and UCX's sm
# transports, and single-thread memcpy (8-byte latency, 4 MiB bandwidth).
#
# Figures: 8-byte one-way latency in us and 1 MiB bandwidth in MB/s (10^6 B/s),
# every system over the same veth at MTU 9000 (TESTBED_MTU to change it).
# Latency is round trip / 2 everywhere and the statistic is the mean of the
# middle 80 % of the samples (pp_pingpong's; sockperf's samples come from its
# --full-log). sockperf cannot send fewer than 14 bytes, so its row is 14-byte.
# Bandwidth is pp_pingpong's method for librt-pp and Open MPI (1 MiB sent, 4
# bytes back, size / (time - 4-byte one-way latency)); iperf3 gives a stream
# rate; UDP has no 1 MiB message (a datagram holds at most 65507 bytes).
# Ratios: baseline latency / pp latency and pp bandwidth / baseline bandwidth,
# so a ratio above 1 means librt-pp did better.
#
# The script gives pp0 in ppn0/ppn1 the addresses 10.77.0.1/24 and 10.77.0.2/24
# (private, inside those namespaces only; traffic stays on the bridge) and
# removes them at the end, kills every server it started and, if it brought
# the test bed up, takes it down again, also on failure or Ctrl-C. The two
# sides of every test are pinned to cores 0 and 1. Needs root, the build
# (meson setup build && ninja -C build) and tests/bench/deps.sh.
#
# The whole run is bounded (--max-time, default 400 s): every step gets what
# is left of it, a step that runs out is killed and its figures show as "-".
# Exit status: 0 when every figure was measured, 1 otherwise, 2 on bad usage.
#
# usage: compare.sh [--build DIR] [--iters N] [--time SEC] [--max-time SEC] [--csv FILE]
#   --build DIR   build directory with apps/pprun, apps/pp_pingpong (default build)
#   --iters N     measured ping-pong iterations per point (default 1000)
#   --time SEC    seconds per sockperf and iperf3 run (default 5)
#   --max-time SEC  bound on the whole run (default 400)
#   --csv FILE    also write every figure and ratio as CSV rows to FILE (the
#                 intranode rows go to FILE.shm)
#   -h, --help    this text
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=build
iters=1000
secs=5
max_time=400
csv=
ip0=10.77.0.1
ip1=10.77.0.2
plen=24
port_udp=17711
port_tcp=17712
port_iperf=17713

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
prog=compare.sh
pp_nodes=2
steps=8 # the calls of step below
# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"

while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --build) [ $# -ge 2 ] || bad "--build needs a directory"; build=$2; shift 2 ;;
    --iters)
      if [ $# -lt 2 ] || ! posint "$2"; then bad "--iters needs a positive count"; fi
      iters=$2; shift 2 ;;
    --time)
      if [ $# -lt 2 ] || ! posint "$2" || [ "$2" -gt 60 ]; then bad "--time needs 1..60 seconds"; fi
      secs=$2; shift 2 ;;
    --max-time)
      if [ $# -lt 2 ] || ! posint "$2" || [ "$2" -lt 30 ]; then bad "--max-time needs 30 or more seconds"; fi
      max_time=$2; shift 2 ;;
    --csv)
      if [ $# -lt 2 ] || [ -z "$2" ]; then bad "--csv needs a file name"; fi
      csv=$2; shift 2 ;;
    *) bad "unknown argument '$1'" ;;
  esac
done
[[ $build = /* ]] || build=$root/$build
[ -z "$csv" ] || [[ $csv = /* ]] || csv=$PWD/$csv

[ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, addresses, raw ports)"
for t in ip taskset timeout pgrep mpicc mpirun sockperf iperf3 awk sort; do
  command -v "$t" >/dev/null || die "'$t' is missing; run tests/bench/deps.sh (as root)"
done
for p in apps/pprun apps/pp_pingpong; do
  [ -x "$build/$p" ] || die "$build/$p not built; run: meson setup build && ninja -C build"
done

bench_start pp-bench
# Start a server in a namespace on a core; its pid (exec'd through) is kept.
server() { # NS CPU LOGFILE CMD...
  local ns=$1 cpu=$2 out=$3
  shift 3
  ip netns exec "$ns" taskset -c "$cpu" "$@" >"$out" 2>&1 &
  pids+=($!)
  sleep 1
  kill -0 $! 2>/dev/null || { cat "$out" >&2; die "server '$*' did not start"; }
}
# Run a client in a namespace on a core, bounded.
client() { # NS CPU SECS CMD...
  local ns=$1 cpu=$2 limit
  limit=$(budget "$3") || return 1
  shift 3
  run timeout -k 5 "$limit" ip netns exec "$ns" taskset -c "$cpu" "$@"
}
stop_last_server() {
  local p=${pids[-1]}
  kill "$p" 2>/dev/null
  wait "$p" 2>/dev/null
  unset 'pids[-1]'
}

# The Open MPI side of the comparison, built now so a broken MPI stops the run
# before the test bed is touched.
mpicc -std=c11 -D_GNU_SOURCE -O2 -Wall -o "$tmp/mpi_pingpong" "$here/mpi_pingpong.c" ||
  die "mpicc could not build tests/bench/mpi_pingpong.c"

# --- the test bed and the addresses ---------------------------------------
# Everything runs at the MTU pprun picks for af_packet (9000), so the
# baselines use the same link as librt-pp.
"$root/tests/testbed.sh" status >/dev/null 2>&1 || testbed_ours=1
TESTBED_MTU=${TESTBED_MTU:-9000} "$root/tests/testbed.sh" up 2 >&2 || die "testbed.sh up 2 failed"
for ns in ppn0 ppn1; do
  ip -n "$ns" link show pp0 >/dev/null 2>&1 || die "$ns has no port pp0; run tests/testbed.sh up 2"
done
for a in "ppn0 $ip0/$plen" "ppn1 $ip1/$plen"; do
  ns=${a%% *}
  if ip -n "$ns" -4 addr show dev pp0 | grep -q "inet ${a#* } "; then
    die "$ns pp0 already has ${a#* } (another run?); not touching it"
  fi
  ip -n "$ns" addr add "${a#* }" dev pp0 || die "cannot add ${a#* } to $ns pp0"
  addrs+=("$a")
done
log "pp0 addresses: ppn0 $ip0, ppn1 $ip1; link MTU $(cat /sys/class/net/ppn0p0/mtu)"

declare -A lat bw
modes=(push-pull push-all push-zero)

# mid80, median and p99 of the numbers on stdin.
stats() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "- - -"; exit }
    cut = int(NR / 10); s = 0
    for (i = cut + 1; i <= NR - cut; i++) s += v[i]
    r = int((99 * NR + 99) / 100); if (r < 1) r = 1
    printf "%.3f %.3f %.3f\n", s / (NR - 2 * cut), v[int(NR / 2) + 1], v[r] }'
}

# --- librt-pp: pp_pingpong, three modes ------------------------------------
step "pp_pingpong latency, 8 B, 3 modes"
if pp_job pp-lat "$tmp/pp-lat.csv" 60 --test latency --sizes 8; then
  for m in "${modes[@]}"; do
    lat[$m]=$(awk -F, -v m="$m" '$1 == "latency" && $2 == m && $6 == 8 { print $8 }' "$tmp/pp-lat.csv")
  done
fi
step "pp_pingpong bandwidth, 1 MiB, 3 modes"
if pp_job pp-bw "$tmp/pp-bw.csv" 150 --test bandwidth --sizes 1m; then
  for m in "${modes[@]}"; do
    bw[$m]=$(awk -F, -v m="$m" '$1 == "bandwidth" && $2 == m && $6 == 1048576 { print $11 }' "$tmp/pp-bw.csv")
  done
fi

# --- Open MPI over TCP --------------------------------------------------------
# mpirun runs in ppn0; the rank on 10.77.0.2 is started through netns_agent.sh
# (as plm_rsh_agent) in ppn1; both ranks and the daemons talk over pp0 only.
step "Open MPI TCP: 8 B latency, 1 MiB bandwidth"
if limit=$(budget 60); then
  if PP_BENCH_HOSTS="$ip0=ppn0=0 $ip1=ppn1=1" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    run timeout -k 5 "$limit" ip netns exec ppn0 taskset -c 0 mpirun -np 2 --host "$ip0,$ip1" --bind-to none \
    --mca plm_rsh_agent "$here/netns_agent.sh" --mca btl tcp,self \
    --mca btl_tcp_if_include pp0 --mca oob_tcp_if_include pp0 \
    "$tmp/mpi_pingpong" --lat-size 8 --bw-size 1048576 --iters "$iters" >"$tmp/mpi.log" 2>&1; then
    lat[mpi]=$(awk '$1 == "RESULT" && $2 == "latency" && $3 == 8 { print $4 }' "$tmp/mpi.log")
    bw[mpi]=$(awk '$1 == "RESULT" && $2 == "bandwidth" && $7 != "-" { print $7 }' "$tmp/mpi.log")
  else
    log "mpirun failed:"
    tail -20 "$tmp/mpi.log" >&2
  fi
fi

# --- sockperf ping-pong --------------------------------------------------------
sockperf_pp() { # KEY SERVER-OPTS CLIENT-OPTS  (options word-split on purpose)
  local key=$1 sopts=$2 copts=$3 port=$port_udp
  [[ $sopts == *--tcp* ]] && port=$port_tcp
  # shellcheck disable=SC2086
  server ppn0 0 "$tmp/$key-server.log" sockperf sr -i "$ip0" -p "$port" $sopts
  # shellcheck disable=SC2086
  if client ppn1 1 $((secs + 15)) sockperf pp -i "$ip0" -p "$port" -m 14 -t "$secs" $copts \
    --full-log "$tmp/$key.full" >"$tmp/$key.log" 2>&1; then
    # --full-log rows: packet, txTime, rxTime, latency(usec) = round trip / 2
    lat[$key]=$(awk -F', *' '$1 ~ /^[0-9]+$/ && NF == 4 { print $4 }' "$tmp/$key.full" | stats | cut -d' ' -f1)
  else
    log "sockperf $key failed:"
    tail -5 "$tmp/$key.log" >&2
  fi
  stop_last_server
}
step "sockperf UDP blocking, 14 B, ${secs} s"
sockperf_pp udp "" ""
step "sockperf UDP busy-poll (--nonblocked --lls 100), 14 B, ${secs} s"
sockperf_pp udp-busy "--nonblocked --lls 100" "--nonblocked --lls 100"
step "sockperf TCP blocking, 14 B, ${secs} s"
sockperf_pp tcp "--tcp" "--tcp"

# --- iperf3 TCP bandwidth ---------------------------------------------------
step "iperf3 TCP, ${secs} s"
server ppn0 0 "$tmp/iperf-server.log" iperf3 -s -B "$ip0" -p "$port_iperf" -1
if client ppn1 1 $((secs + 15)) iperf3 -c "$ip0" -p "$port_iperf" -t "$secs" -J >"$tmp/iperf.json" 2>"$tmp/iperf.err"; then
  bw[iperf]=$(awk '/"sum_received"/ { f = 1 } f && /"bits_per_second"/ {
    gsub(/[^0-9.eE+-]/, "", $2); printf "%.1f\n", $2 / 8e6; exit }' "$tmp/iperf.json")
else
  log "iperf3 failed:"
  cat "$tmp/iperf.err" >&2
fi
stop_last_server

# --- the table ------------------------------------------------------------
rows=(push-pull push-all push-zero mpi udp udp-busy tcp iperf)
declare -A label=(
  [push-pull]="librt-pp push-pull" [push-all]="librt-pp push-all" [push-zero]="librt-pp push-zero"
  [mpi]="Open MPI 4.1 TCP BTL" [udp]="sockperf UDP blocking (14 B)"
  [udp-busy]="sockperf UDP busy-poll (14 B)" [tcp]="sockperf TCP blocking (14 B)"
  [iperf]="iperf3 TCP (1 stream)"
)
declare -A short=([mpi]="OMPI-TCP" [udp]="UDP-blk" [udp-busy]="UDP-busy" [tcp]="TCP-blk" [iperf]="iperf3")

[ -z "$csv" ] || echo "record,system,baseline,metric,value" >"$csv" || die "cannot write $csv"

step_clear
echo "# librt-pp vs. the same veth (ppn0/pp0 <-> ppn1/pp0 over ppbr0), $iters iterations, ${secs} s runs"
echo "# latency: one-way (round trip / 2), mean of middle 80 %, 8 B unless noted; bandwidth: 1 MiB, MB/s"
printf "%-32s %12s %12s\n" "system" "lat_us" "bw_MBps"
for r in "${rows[@]}"; do
  l=$(val "${lat[$r]:-}")
  b=$(val "${bw[$r]:-}")
  printf "%-32s %12s %12s\n" "${label[$r]}" "$l" "$b"
  emit_csv measure "$r" "" lat_us "$l"
  emit_csv measure "$r" "" bw_MBps "$b"
done
ratios() { # TITLE METRIC BASELINES...
  local title=$1 metric=$2 m b r
  shift 2
  echo "# $title"
  printf "%-20s" "pp mode"
  for b in "$@"; do printf " %10s" "${short[$b]}"; done
  echo
  for m in "${modes[@]}"; do
    printf "%-20s" "$m"
    for b in "$@"; do
      if [ "$metric" = lat ]; then r=$(ratio "${lat[$b]:-}" "${lat[$m]:-}"); else r=$(ratio "${bw[$m]:-}" "${bw[$b]:-}"); fi
      printf " %10s" "$r"
      emit_csv ratio "$m" "$b" "$metric" "$r"
    done
    echo
  done
}
ratios "latency ratio = baseline / librt-pp (> 1: librt-pp faster)" lat mpi udp udp-busy tcp
ratios "bandwidth ratio = librt-pp / baseline (> 1: librt-pp faster)" bw mpi iperf

# --- intranode: tests/bench/compare_shm.sh ------------------------------------
missing=0
echo
# A step on a terminal only: piped, compare_shm.sh's own lines follow.
if [ -t 2 ]; then step "the intranode part: compare_shm.sh"; fi
if limit=$(budget 200) && [ "$limit" -ge 30 ]; then
  # Ten times the iterations: an intranode ping-pong is 20x faster than one
  # over the veth, and a run of a few milliseconds has not settled yet.
  run "$here/compare_shm.sh" --build "$build" --iters $((iters * 10)) --max-time "$limit" \
    ${csv:+--csv "$csv.shm"} || missing=1
else
  log "no time left for the intranode part"
  missing=1
fi

# Every measurement must have produced its figure.
for k in push-pull push-all push-zero mpi udp udp-busy tcp; do [ -n "${lat[$k]:-}" ] || missing=1; done
for k in push-pull push-all push-zero mpi iperf; do [ -n "${bw[$k]:-}" ] || missing=1; done
[ "$missing" -eq 0 ] || die "some measurements failed (shown as '-')"
exit 0
