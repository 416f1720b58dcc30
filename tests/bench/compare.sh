#!/usr/bin/env bash
# librt-pp against Open MPI over the same veth, size by size, measured the
# same way on both sides, in one run on the test bed (namespaces ppn0 and
# ppn1, port pp0 each, bridge ppbr0):
#
#   pp_pingpong   push-pull, push-all, push-zero over pprun's default ports (packet: with frame=udp; --dev-kind):
#                 --test latency and --test window at every size
#   Open MPI      tests/bench/mpi_pingpong.c, ob1 over the TCP BTL only (btl
#                 tcp,self): the same two tests at the same sizes, with
#                 pp_pingpong's size lists and statistics compiled in
#   Open MPI      the same mpi_pingpong over librt-pp: pml cm, mtl ofi, the
#   over pp       libfabric provider pp of the build (ofi/libpp-fi.so; left
#                 out when not built), push-pull over the same port kind
#   pp_probe      --blast: MTU-sized frames from ppn0 to ppn1 over that port
#                 kind as fast as the port takes them: the path's ceiling
#   sockperf      UDP ping-pong, blocking, and busy-polling (--nonblocked --lls)
#   sockperf      TCP ping-pong, blocking (latency only)
#   iperf3        TCP bandwidth (one stream)
#
# and then, through tests/bench/compare_shm.sh, the intranode part: two ranks
# on one node (shared memory) against Open MPI's vader+CMA, UCX's sm, and
# single-thread memcpy, size by size as well.
#
# The headline is the per-size table: for each size (--sizes, default 8 B to
# 4 MiB in x4 steps plus 256 B, 1 KiB, 64 KiB, 1 MiB), the one-way latency of
# each librt-pp mode and of Open MPI with the ratio Open MPI / librt-pp, and
# the windowed bandwidth of each with the ratio librt-pp / Open MPI: a ratio
# above 1 means librt-pp did better. Latency is round trip / 2; windowed
# bandwidth is osu_bw's with the receives posted first: W (--window, 64)
# messages of the size in flight, then a 4-byte reply, W * size / iteration
# time. Both are the mean of the middle 80 % of the per-iteration figures.
# Large sizes run fewer iterations (--max-bytes: each point moves at most
# that many bytes, at least 10 iterations), the same on both sides.
# librt-pp's and Open MPI's tests run in --rounds rounds (default 3), taken
# in turn, each with its share of the iterations and bytes; a point's figure
# is the median of its rounds, so that a stretch in which the host ran the
# machine slow falls on both sides or on neither figure (compare_shm.sh,
# which takes the same --rounds, says more). The run prints the cache line
# round trip between cores 0 and 1 (tests/bench/core_rtt.c) before each of
# those steps: over the veth too, a 1 MiB one-way time moved from about
# 560 us to 860 with it (60 ns against 330).
#
# Then the path's ceiling: pp_probe --blast's received frames/s and MB/s of
# payload (the bytes after the Ethernet header) at MTU-sized frames
# (TESTBED_MTU, default 9000, + 14), and its loss; librt-pp's (and Open
# MPI's) windowed bandwidth at 1 MiB and 4 MiB as a share of it. It is the
# ceiling of raw frames through af_packet: kernel TCP on veth hands over
# segments far larger than the MTU (TSO/GSO), so Open MPI may pass it.
#
# Then the summary of before, with the other tools: 8-byte latency (sockperf:
# 14 bytes, the least it sends; the statistic from its --full-log samples) and
# 1 MiB bandwidth (librt-pp and Open MPI: windowed; iperf3: a stream rate;
# UDP has no 1 MiB message), and their ratios.
#
# The script gives pp0 in ppn0/ppn1 the addresses 10.77.0.1/24 and 10.77.0.2/24
# (private, inside those namespaces only; traffic stays on the bridge) and
# removes them at the end, kills every server it started and, if it brought
# the test bed up, takes it down again, also on failure or Ctrl-C. The two
# sides of every test are pinned to cores 0 and 1. Needs root, the build
# (meson setup build && ninja -C build) and tests/bench/bench_deps.sh. The test bed
# is one per machine: run it under flock /tmp/testbed.lock.
#
# The whole run is bounded (--max-time, default 900 s): every step gets what
# is left of it, a step that runs out is killed and its figures show as "-".
# A failure is not retried (a rerun would hide it): its output is shown.
# Exit status: 0 when every figure was measured, 1 otherwise, 2 on bad usage.
#
# usage: compare.sh [--build DIR] [--iters N] [--time SEC] [--max-time SEC] [--csv FILE]
#                   [--sizes SPEC] [--window W] [--max-bytes B] [--rounds R] [--dev-kind K]
#   --build DIR     build directory with apps/pprun, apps/pp_pingpong, apps/pp_probe
#                   (default build)
#   --iters N       measured iterations per point (default 1000)
#   --time SEC      seconds per sockperf, iperf3 and pp_probe --blast run (default 5)
#   --max-time SEC  bound on the whole run (default 900)
#   --csv FILE      also write every figure and ratio as CSV rows to FILE
#                   (record,system,baseline,metric,size,value; the intranode
#                   rows go to FILE.shm)
#   --sizes SPEC    message sizes, as pp_pingpong takes them (default
#                   8,32,128,256,512,1k,2k,8k,32k,64k,128k,512k,1m,2m,4m)
#   --window W      messages in flight in the window test, 1..1024 (default 64)
#   --max-bytes B   bytes a point may move at most, k/m/g (default 256m)
#   --rounds R      rounds of the librt-pp and Open MPI tests, 1..9 (default 3;
#                   the intranode part takes the same)
#   --dev-kind K    librt-pp's port on both sides and pp_probe's: packet (the
#                   packet: backend, AF_PACKET rings without DPDK, raw EtherType
#                   frames), af_packet (DPDK's net_af_packet) or udp (udp:
#                   ports on the test bed's port addresses, GSO and GRO; Open
#                   MPI over pp on udp:pp0:0, each rank's own pp0 address;
#                   pp_probe --blast, which needs the peer's MAC, left out)
#                   or packet-udp (packet: ports with frame=udp: raw frames
#                   for single frames, one GSO message for a run; Open MPI
#                   over pp on packet:pp0,frame=udp,link=raw; no pp_probe
#                   --blast; the default, as pprun's as root)
#   --offload on|off  TCP segmentation offloads of the veth ends (default on, as
#                   the test bed leaves them). off: TSO, GSO and GRO are turned
#                   off on both ends of ppn0's and ppn1's pp0 for the run (and
#                   turned back at the end), so kernel TCP puts MTU-sized frames
#                   through the veth one at a time, as librt-pp does and as a
#                   real link carries them; on, a TCP segment of up to 64 KiB
#                   crosses the veth whole, with no per-frame cost at either end
#   -h, --help      this text
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=build
iters=1000
secs=5
max_time=900
csv=
window=64
max_bytes=256m
ip0=10.77.0.1
ip1=10.77.0.2
plen=24
port_udp=17711
port_tcp=17712
port_iperf=17713

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
prog=compare.sh
pp_nodes=2
dev_kind=packet-udp
offload=on
rounds=3
steps=10 # the calls of step below; set from --rounds after parsing
# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"
size_spec=$default_sizes
shm_args=()

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
    --sizes)
      if [ $# -lt 2 ] || ! sizespec "$2"; then bad "--sizes needs a size list (8,1k,... or 8:4m:x4)"; fi
      size_spec=$2; shm_args+=(--sizes "$2"); shift 2 ;;
    --window)
      if [ $# -lt 2 ] || ! posint "$2" || [ "$2" -gt 1024 ]; then bad "--window needs 1..1024"; fi
      window=$2; shm_args+=(--window "$2"); shift 2 ;;
    --max-bytes)
      if [ $# -lt 2 ] || ! bytespec "$2"; then bad "--max-bytes needs a byte count (k/m/g)"; fi
      max_bytes=$2; shm_args+=(--max-bytes "$2"); shift 2 ;;
    --rounds)
      if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9]$ ]]; then bad "--rounds needs 1..9"; fi
      rounds=$2; shm_args+=(--rounds "$2"); shift 2 ;;
    --dev-kind)
      case ${2:-} in af_packet | packet | udp | packet-udp) ;; *) bad "--dev-kind needs packet, af_packet, udp or packet-udp" ;; esac
      dev_kind=$2; shift 2 ;;
    --offload)
      case ${2:-} in on | off) ;; *) bad "--offload needs on or off" ;; esac
      offload=$2; shift 2 ;;
    *) bad "unknown argument '$1'" ;;
  esac
done
steps=$((4 * rounds + 6))
[[ $build = /* ]] || build=$root/$build
[ -z "$csv" ] || [[ $csv = /* ]] || csv=$PWD/$csv

[ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, addresses, raw ports)"
tools=(ip taskset timeout pgrep mpicc mpirun sockperf iperf3 awk sort)
[ "$offload" = on ] || tools+=(ethtool)
for t in "${tools[@]}"; do
  command -v "$t" >/dev/null || die "'$t' is missing; run tests/bench/bench_deps.sh (as root)"
done
for p in apps/pprun apps/pp_pingpong apps/pp_probe; do
  [ -x "$build/$p" ] || die "$build/$p not built; run: meson setup build && ninja -C build"
done
ompi_pp=() # Open MPI over librt-pp, when the provider is built
[ ! -f "$build/ofi/libpp-fi.so" ] || ompi_pp=(ompi-pp)

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
mpicc_pingpong "$tmp/mpi_pingpong" || die "mpicc could not build tests/bench/mpi_pingpong.c"

# --- the test bed and the addresses ---------------------------------------
# Everything runs at the MTU pprun picks for packet and af_packet (9000), so the
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
mtu=$(cat /sys/class/net/ppn0p0/mtu)
log "pp0 addresses: ppn0 $ip0, ppn1 $ip1; link MTU $mtu"
if [ "$offload" = off ]; then
  for end in "ppn0 pp0" "ppn1 pp0" "- ppn0p0" "- ppn1p0"; do
    offload_off "${end% *}" "${end#* }" || die "cannot turn the offloads of ${end#* } off"
  done
  log "TSO, GSO and GRO off on every end of the two links"
fi

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

# --- the rounds: librt-pp (three modes), Open MPI over TCP and over librt-pp ----
# mpirun runs in ppn0; the rank on 10.77.0.2 is started through netns_agent.sh
# (as plm_rsh_agent) in ppn1; the daemons talk over pp0 only.
mpi_job() { # NAME SYSTEM MPIRUN-ARGS...: mpi_pingpong's rows into SYSTEM
  local name=$1 sys=$2 limit
  shift 2
  limit=$(budget 300) || return 1
  if NETNS_AGENT_HOSTS="$ip0=ppn0=0 $ip1=ppn1=1" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    run timeout -k 5 "$limit" ip netns exec ppn0 taskset -c 0 mpirun -np 2 --host "$ip0,$ip1" --bind-to none \
    --mca plm_rsh_agent "$here/netns_agent.sh" --mca oob_tcp_if_include pp0 "$@" \
    "$tmp/mpi_pingpong" --test latency,window --window "$window" "${same[@]}" --iters "$iters" \
    >"$tmp/$name.log" 2>&1; then
    mpi_rows "$tmp/$name.log" "$sys"
  else
    log "mpirun ($name) failed:"
    tail -20 "$tmp/$name.log" >&2
    return 1
  fi
}
# Over librt-pp: the provider takes the port from PP_DEV (the kind of
# --dev-kind, as pp_probe's below), its rank and job from mpirun's environment.
# udp: one string serves both ranks, the address named by its interface.
case $dev_kind in
  af_packet) dev=--vdev=net_af_packet0,iface=pp0; ompi_dev=$dev ;;
  packet) dev=packet:pp0; ompi_dev=$dev ;;
  udp) dev=; ompi_dev=udp:pp0:0 ;; # pp_pingpong's: pprun gives them
  packet-udp) dev=; ompi_dev=packet:pp0,frame=udp,link=raw ;;
esac
[ ${#ompi_pp[@]} -gt 0 ] ||
  log "$build/ofi/libpp-fi.so not built (meson -Dofi=enabled): Open MPI over pp left out"
[ -n "$dev" ] || log "--dev-kind $dev_kind: pp_probe --blast left out"
# Each round takes its share of the iterations and bytes (pp_job and mpi_job
# read iters and same). A step that fails in any round fails the run: the
# other rounds' figures fill its points, so the tables alone would not show it.
failed=0
round_shares "$(bytes_of "$max_bytes")"
for ((round = 1; round <= rounds; round++)); do
  at="round $round/$rounds:"
  probe
  step "$at pp_pingpong latency, every size, 3 modes"
  pp_job pp-lat "$tmp/pp-lat.csv" 300 --test latency "${same[@]}" && pp_rows "$tmp/pp-lat.csv" ||
    failed=$((failed + 1))
  probe
  step "$at pp_pingpong window (W=$window), every size, 3 modes"
  pp_job pp-win "$tmp/pp-win.csv" 300 --test window --window "$window" "${same[@]}" &&
    pp_rows "$tmp/pp-win.csv" || failed=$((failed + 1))
  probe
  step "$at Open MPI TCP: latency and window (W=$window), every size"
  mpi_job mpi mpi --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include pp0 ||
    failed=$((failed + 1))
  probe
  step "$at Open MPI over librt-pp (mtl ofi, provider pp): latency and window, every size"
  if [ ${#ompi_pp[@]} -gt 0 ]; then
    mpi_job ompi-pp ompi-pp --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include pp \
      -x FI_PROVIDER_PATH="$build/ofi" -x PP_DEV="$ompi_dev" || failed=$((failed + 1))
  fi
done
iters=$all_iters
round_medians L B M
sort_sizes

# --- the path's ceiling: pp_probe --blast -------------------------------------
# ppn0 sends (as rank 0 does in the window test), ppn1 counts.
step "pp_probe --blast, MTU-sized frames, ppn0 -> ppn1, ${secs} s"
declare -A lim
if [ -n "$dev" ] && limit=$(budget $((secs + 40))); then
  server ppn1 1 "$tmp/blast-listen.log" timeout -k 2 "$limit" "$build/apps/pp_probe" --dev "$dev" \
    --listen --blast --wait-ms 30000
  if client ppn0 0 $((secs + 30)) "$build/apps/pp_probe" --dev "$dev" \
    --peer "$("$root/tests/testbed.sh" mac 1 0)" --blast --size mtu --duration-ms $((secs * 1000)) \
    >"$tmp/blast.log" 2>&1; then
    # "blast_rx frames N ... frames_per_s F payload_MBps M ... loss_pct P"
    for k in frames_per_s payload_MBps loss_pct; do
      lim[$k]=$(awk -v k="$k" '$1 == "blast_rx" { for (i = 2; i < NF; i++) if ($i == k) print $(i + 1) }' "$tmp/blast.log")
    done
    lim[tx_fps]=$(awk '$1 == "blast_tx" { for (i = 2; i < NF; i++) if ($i == "frames_per_s") print $(i + 1) }' "$tmp/blast.log")
    lim[frame]=$(awk '$1 == "blast_tx" { for (i = 2; i < NF; i++) if ($i == "frame_bytes") print $(i + 1) }' "$tmp/blast.log")
  else
    log "pp_probe --blast failed:"
    tail -5 "$tmp/blast.log" "$tmp/blast-listen.log" >&2
  fi
  stop_last_server
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

# --- the tables ---------------------------------------------------------------
step_clear
csv_header
echo "# librt-pp vs. Open MPI 4.1 (ob1, TCP BTL) over the same veth (ppn0/pp0 <-> ppn1/pp0 over ppbr0, MTU $mtu)"
[ ${#ompi_pp[@]} -eq 0 ] || echo "# ompi-pp: Open MPI 4.1 over librt-pp (pml cm, mtl ofi, provider pp; push-pull over $dev_kind)"
echo "# $iters iterations per point (fewer above --max-bytes $max_bytes, at least 10 a round) in $rounds rounds taken in"
echo "# turn with Open MPI's; a figure is the median of its rounds', each the mean of the middle 80 %"
echo "# cache line round trip core 0 <-> core 1 before each step of the rounds, ns (core_rtt):"
probe_lines
echo
echo "# one-way latency, us; r:MODE = Open MPI / librt-pp (> 1: librt-pp faster)"
size_table lat "" mpi OMPI-TCP "${modes[@]}" "${ompi_pp[@]}"
echo
echo "# windowed bandwidth, MB/s (W=$window in flight, receives posted first); r:MODE = librt-pp / Open MPI (> 1: librt-pp faster)"
size_table bw "" mpi OMPI-TCP "${modes[@]}" "${ompi_pp[@]}"
size_csv "" "${modes[@]}" mpi "${ompi_pp[@]}"

echo
if [ -n "$dev" ]; then # a raw port's (udp: has none: left out above)
  echo "# the path's ceiling: pp_probe --blast, $(val "${lim[frame]:-}")-byte frames ppn0 -> ppn1 for ${secs} s over $dev_kind"
  printf "%-32s %12s %12s %10s %14s\n" "limit" "frames/s" "MB/s" "loss %" "sent frames/s"
  printf "%-32s %12s %12s %10s %14s\n" "pp_probe --blast (payload)" "$(val "${lim[frames_per_s]:-}")" \
    "$(val "${lim[payload_MBps]:-}")" "$(val "${lim[loss_pct]:-}")" "$(val "${lim[tx_fps]:-}")"
  emit_csv limit probe "" frames_per_s "${lim[frame]:-}" "$(val "${lim[frames_per_s]:-}")"
  emit_csv limit probe "" bw_MBps "${lim[frame]:-}" "$(val "${lim[payload_MBps]:-}")"
  emit_csv limit probe "" loss_pct "${lim[frame]:-}" "$(val "${lim[loss_pct]:-}")"
  emit_csv limit probe "" tx_frames_per_s "${lim[frame]:-}" "$(val "${lim[tx_fps]:-}")"
  echo "# windowed bandwidth as a share of the ceiling (of raw MTU-sized frames: Open MPI's kernel TCP"
  echo "# moves segments larger than the MTU over veth, TSO/GSO, and may pass it)"
  printf "%-8s" size
  for x in "${modes[@]}" OMPI-TCP "${ompi_pp[@]}"; do printf " %10s" "$x"; done
  echo
  for s in 1048576 4194304; do
    printf "%-8s" "$(hsize "$s")"
    for x in "${modes[@]}" mpi "${ompi_pp[@]}"; do
      r=$(ratio "${B[$x $s]:-}" "${lim[payload_MBps]:-}")
      printf " %10s" "$r"
      emit_csv share "$x" probe bw "$s" "$r"
    done
    echo
  done
fi

# The summary, with the other tools: latency at 8 B (or the smallest size),
# bandwidth at 1 MiB (or the largest).
ls=${sizes[0]:-8} bs=${sizes[-1]:-1048576}
for s in "${sizes[@]}"; do
  [ "$s" != 8 ] || ls=8
  [ "$s" != 1048576 ] || bs=1048576
done
for m in "${modes[@]}" mpi "${ompi_pp[@]}"; do
  lat[$m]=${L[$m $ls]:-}
  bw[$m]=${B[$m $bs]:-}
done
rows=(push-pull push-all push-zero mpi "${ompi_pp[@]}" udp udp-busy tcp iperf)
declare -A label=(
  [push-pull]="librt-pp push-pull" [push-all]="librt-pp push-all" [push-zero]="librt-pp push-zero"
  [mpi]="Open MPI 4.1 TCP BTL" [ompi-pp]="Open MPI 4.1 over librt-pp" [udp]="sockperf UDP blocking (14 B)"
  [udp-busy]="sockperf UDP busy-poll (14 B)" [tcp]="sockperf TCP blocking (14 B)"
  [iperf]="iperf3 TCP (1 stream)"
)
declare -A short=([mpi]="OMPI-TCP" [ompi-pp]="OMPI-pp" [udp]="UDP-blk" [udp-busy]="UDP-busy" [tcp]="TCP-blk" [iperf]="iperf3")
declare -A lsize=([udp]=14 [udp-busy]=14 [tcp]=14)

echo
echo "# summary with the other tools: latency one-way, $(hsize "$ls") unless noted, mean of middle 80 %;"
echo "# bandwidth $(hsize "$bs") (librt-pp, Open MPI: windowed, W=$window), MB/s"
printf "%-32s %12s %12s\n" "system" "lat_us" "bw_MBps"
for r in "${rows[@]}"; do
  l=$(val "${lat[$r]:-}")
  b=$(val "${bw[$r]:-}")
  printf "%-32s %12s %12s\n" "${label[$r]}" "$l" "$b"
  emit_csv measure "$r" "" lat_us "${lsize[$r]:-$ls}" "$l"
  emit_csv measure "$r" "" bw_MBps "$([ "$r" = iperf ] || echo "$bs")" "$b"
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
      emit_csv ratio "$m" "$b" "$metric" "" "$r"
    done
    echo
  done
}
ratios "latency ratio = baseline / librt-pp (> 1: librt-pp faster)" lat mpi "${ompi_pp[@]}" udp udp-busy tcp
ratios "bandwidth ratio = librt-pp / baseline (> 1: librt-pp faster)" bw mpi "${ompi_pp[@]}" iperf

# --- intranode: tests/bench/compare_shm.sh ------------------------------------
missing=0
echo
# A step on a terminal only: piped, compare_shm.sh's own lines follow.
if [ -t 2 ]; then step "the intranode part: compare_shm.sh"; fi
if limit=$(budget 400) && [ "$limit" -ge 30 ]; then
  # Ten times the iterations: an intranode ping-pong is 20x faster than one
  # over the veth, and a run of a few milliseconds has not settled yet.
  run "$here/compare_shm.sh" --build "$build" --iters $((iters * 10)) --max-time "$limit" \
    ${csv:+--csv "$csv.shm"} "${shm_args[@]}" || missing=1
else
  log "no time left for the intranode part"
  missing=1
fi

# Every measurement must have produced its figure.
size_complete "${modes[@]}" mpi "${ompi_pp[@]}" || missing=1
for k in udp udp-busy tcp; do [ -n "${lat[$k]:-}" ] || missing=1; done
[ -n "${bw[iperf]:-}" ] || missing=1
[ -z "$dev" ] || [ -n "${lim[payload_MBps]:-}" ] || missing=1
[ "$failed" -eq 0 ] || missing=1
[ "$missing" -eq 0 ] || die "some measurements failed (shown as '-', or a round's step logged above)"
exit 0
