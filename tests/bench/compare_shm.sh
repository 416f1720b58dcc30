#!/usr/bin/env bash
# librt-pp intranode (two ranks on one node, shared memory) against the
# shared-memory transports of Open MPI and UCX, size by size and measured the
# same way on every side, in one run, and the single-thread memcpy ceiling:
#
#   pp_pingpong   push-pull, push-all, push-zero, pprun --nodes 1 (shm=on:
#                 pushes through the segment's rings, the rest in one copy):
#                 --test latency and --test window at every size
#   Open MPI      tests/bench/mpi_pingpong.c (pp_pingpong's size lists and
#                 statistics compiled in), the same tests at the same sizes:
#                 ob1 over btl self,vader with its CMA single copy
#                 (btl_vader_single_copy_mechanism cma), and pml ucx over
#                 UCX_TLS=sm,self (UCX's shared memory, CMA included;
#                 pml_ucx_tls any, or Open MPI refuses UCX without InfiniBand)
#   Open MPI over librt-pp   the same mpi_pingpong, pml cm over mtl ofi and
#                 the provider pp (build/ofi), each rank on its own packet:
#                 port of one test-bed node (pp0, pp1): node-mates through the
#                 node segment, as a user's MPI job on one node; against
#                 vader and against native push-pull (left out, with a
#                 note, when the build has no provider)
#   memcpy        tests/bench/memcpy_bw.c, one thread, two buffers, every size
#   UCX           ucx_perftest tag_lat 8 B and tag_bw 4 MiB over sm,self: UCX's
#                 own tool, measuring its own way (summary rows)
#   pp_malloc     tests/bench/pp_malloc_bw.c: librt-pp push-pull bandwidth with
#                 buffers from pp_malloc (in the segment: one memcpy by the
#                 receiver), one 4 MiB message and a 4-byte reply (summary row)
#
# The headline is the per-size tables (--sizes, default 8 B to 4 MiB in x4
# steps plus 256 B, 1 KiB, 64 KiB, 1 MiB): one-way latency of each librt-pp
# mode and of the baseline with the ratio baseline / librt-pp, and windowed
# bandwidth (osu_bw's, receives posted first: W = --window messages in
# flight, then a 4-byte reply; W * size / iteration time) with the ratio
# librt-pp / baseline, once against Open MPI vader and once against Open MPI
# over UCX; a ratio above 1 means librt-pp did better. Both are the mean of
# the middle 80 % of the per-iteration figures; large sizes run fewer
# iterations (--max-bytes, at least 10), the same on every side. Then the
# windowed bandwidth as a share of memcpy's at each size, and the summary
# of before: 8-byte latency and 4 MiB bandwidth of every system, with
# ratios (ucx_perftest: its median latency and its stream bandwidth).
#
# The librt-pp and Open MPI tests run in --rounds rounds (default 3), in
# turn, each round with its share of the iterations and bytes, and a point's
# figure is the median of its rounds: on a virtual machine the host moves
# the virtual CPUs between physical cores, a cache line's round trip between
# cores 0 and 1 changes severalfold for seconds at a time, and an intranode
# figure with it. tests/bench/core_rtt.c measures that round trip before
# each of those steps; the run prints what it found (probe rows in the CSV).
#
# The two sides of every test are pinned to cores 0 and 1. Needs root, the
# build (meson setup build && ninja -C build) and tests/bench/bench_deps.sh; pprun
# uses the test bed: run under flock /tmp/testbed.lock. The run is bounded
# (--max-time, default 400 s); a step that runs out is killed and its
# figures show as "-"; a failure is shown, not retried (nor made up for by
# another round). Exit status: 0 when every step of every round ran and every
# figure was measured, 1 otherwise, 2 on bad usage.
#
# usage: compare_shm.sh [--build DIR] [--iters N] [--max-time SEC] [--csv FILE]
#                       [--sizes SPEC] [--window W] [--max-bytes B] [--rounds R]
#   --build DIR     build directory with apps/pprun, apps/pp_pingpong (default build)
#   --iters N       measured iterations per point (default 20000: a sub-microsecond
#                   ping-pong needs a run of tens of milliseconds to settle)
#   --max-time SEC  bound on the whole run (default 400)
#   --csv FILE      also write every figure and ratio as CSV rows to FILE
#                   (record,system,baseline,metric,size,value)
#   --sizes SPEC    message sizes, as pp_pingpong takes them (default
#                   8,32,128,256,512,1k,2k,8k,32k,64k,128k,512k,1m,2m,4m)
#   --window W      messages in flight in the window test, 1..1024 (default 64)
#   --max-bytes B   bytes a point may move at most, k/m/g (default 1g)
#   --rounds R      rounds of the librt-pp and Open MPI tests, 1..9 (default 3)
#   -h, --help      this text
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=build
iters=20000
max_time=400
csv=
window=64
max_bytes=1g
rounds=3
ucx_port=17821
bw_size=4194304

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
prog=compare_shm.sh
pp_nodes=1
steps=8 # the calls of step below (the first five once per round, four without the provider: set below)
# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"
size_spec=$default_sizes

while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --build) [ $# -ge 2 ] || bad "--build needs a directory"; build=$2; shift 2 ;;
    --iters)
      if [ $# -lt 2 ] || ! posint "$2"; then bad "--iters needs a positive count"; fi
      iters=$2; shift 2 ;;
    --max-time)
      if [ $# -lt 2 ] || ! posint "$2" || [ "$2" -lt 30 ]; then bad "--max-time needs 30 or more seconds"; fi
      max_time=$2; shift 2 ;;
    --csv)
      if [ $# -lt 2 ] || [ -z "$2" ]; then bad "--csv needs a file name"; fi
      csv=$2; shift 2 ;;
    --sizes)
      if [ $# -lt 2 ] || ! sizespec "$2"; then bad "--sizes needs a size list (8,1k,... or 8:4m:x4)"; fi
      size_spec=$2; shift 2 ;;
    --window)
      if [ $# -lt 2 ] || ! posint "$2" || [ "$2" -gt 1024 ]; then bad "--window needs 1..1024"; fi
      window=$2; shift 2 ;;
    --max-bytes)
      if [ $# -lt 2 ] || ! bytespec "$2"; then bad "--max-bytes needs a byte count (k/m/g)"; fi
      max_bytes=$2; shift 2 ;;
    --rounds)
      if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9]$ ]]; then bad "--rounds needs 1..9"; fi
      rounds=$2; shift 2 ;;
    *) bad "unknown argument '$1'" ;;
  esac
done
[[ $build = /* ]] || build=$root/$build
[ -z "$csv" ] || [[ $csv = /* ]] || csv=$PWD/$csv
[ -e "$build/ofi/libpp-fi.so" ] && ompi_pp=1 || ompi_pp=0
steps=$(((4 + ompi_pp) * rounds + 3))

[ "$(id -u)" -eq 0 ] || die "must run as root (pprun enters network namespaces)"
for t in taskset timeout pgrep mpicc mpirun ucx_perftest cc awk sort; do
  command -v "$t" >/dev/null || die "'$t' is missing; run tests/bench/bench_deps.sh (as root)"
done
for p in apps/pprun apps/pp_pingpong; do
  [ -x "$build/$p" ] || die "$build/$p not built; run: meson setup build && ninja -C build"
done

bench_start pp-bench-shm

mpicc_pingpong "$tmp/mpi_pingpong" || die "mpicc could not build tests/bench/mpi_pingpong.c"
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -o "$tmp/memcpy_bw" "$here/memcpy_bw.c" ||
  die "cc could not build tests/bench/memcpy_bw.c"
[ -e "$build/runtime/librt-pp.so" ] || die "$build/runtime/librt-pp.so not built"
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -I"$root/runtime/include" -o "$tmp/pp_malloc_bw" \
  "$here/pp_malloc_bw.c" -L"$build/runtime" -lrt-pp -Wl,-rpath,"$build/runtime" ||
  die "cc could not build tests/bench/pp_malloc_bw.c"
"$root/tests/testbed.sh" status >/dev/null 2>&1 || testbed_ours=1

declare -A lat bw
modes=(push-pull push-all push-zero)

# As many 4 MiB transfers as --max-bytes allows (at least 10).
mb=$(bytes_of "$max_bytes")
pm_iters=$((mb / bw_size))
[ "$pm_iters" -ge 10 ] || pm_iters=10
[ "$pm_iters" -le "$iters" ] || pm_iters=$iters

# --- the rounds: librt-pp (three modes) and Open MPI (vader, UCX sm) ---------------
# mpi KEY [--node] MPIRUN-ARGS...: mpi_pingpong's latency and window tests
# under mpirun, cores 0 and 1. --node: both ranks in the test bed's node 0,
# each on the packet: port its local rank names (node_rank.sh), as Open MPI
# over librt-pp needs.
mpi() {
  local key=$1 limit
  local ns=() prog=("$tmp/mpi_pingpong")
  shift
  if [ "${1:-}" = --node ]; then
    ns=(ip netns exec ppn0)
    prog=("$here/node_rank.sh" "$tmp/mpi_pingpong")
    set -- --host localhost:2 "${@:2}"
  fi
  limit=$(budget 120) || return 1
  if OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    run timeout -k 5 "$limit" "${ns[@]}" mpirun -np 2 --bind-to core --map-by core "$@" \
    "${prog[@]}" --test latency,window --window "$window" "${same[@]}" --iters "$iters" \
    >"$tmp/$key.log" 2>&1; then
    mpi_rows "$tmp/$key.log" "$key"
  else
    log "mpirun ($key) failed:"
    tail -20 "$tmp/$key.log" >&2
    return 1
  fi
}
[ "$ompi_pp" -eq 1 ] || log "no $build/ofi/libpp-fi.so (libfabric-dev): Open MPI over librt-pp left out"
# Each round takes its share of the iterations and bytes (pp_job and mpi
# read iters and same). A step that fails in any round fails the run: the
# other rounds' figures fill its points, so the tables alone would not show it.
failed=0
round_shares "$mb"
for ((round = 1; round <= rounds; round++)); do
  at="round $round/$rounds:"
  probe
  step "$at pp_pingpong intranode latency, every size, 3 modes"
  pp_job pp-lat "$tmp/pp-lat.csv" 120 --test latency "${same[@]}" && pp_rows "$tmp/pp-lat.csv" ||
    failed=$((failed + 1))
  probe
  step "$at pp_pingpong intranode window (W=$window), every size, 3 modes"
  pp_job pp-win "$tmp/pp-win.csv" 180 --test window --window "$window" "${same[@]}" &&
    pp_rows "$tmp/pp-win.csv" || failed=$((failed + 1))
  probe
  step "$at Open MPI vader+CMA: latency and window (W=$window), every size"
  mpi mpi --mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism cma ||
    failed=$((failed + 1))
  probe
  step "$at Open MPI pml ucx, UCX_TLS=sm,self: latency and window (W=$window), every size"
  # Open MPI takes pml ucx only over the transports of pml_ucx_tls
  # (InfiniBand's by default); "any" lets it use sm.
  mpi mpi-ucx --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=sm,self ||
    failed=$((failed + 1))
  if [ "$ompi_pp" -eq 1 ]; then
    probe
    step "$at Open MPI over librt-pp (mtl ofi, provider pp): latency and window (W=$window), every size"
    mpi mpi-pp --node --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include pp \
      -x FI_PROVIDER_PATH="$build/ofi" -x LD_LIBRARY_PATH="$build/runtime:$build/ofi" ||
      failed=$((failed + 1))
  fi
done
iters=$all_iters
round_medians L B M
sort_sizes

step "librt-pp push-pull bandwidth, 4 MiB, pp_malloc buffers"
if limit=$(budget 60) &&
  run "$build/apps/pprun" -n 2 --nodes 1 --dev-kind af_packet --timeout "$limit" -- \
    "$tmp/pp_malloc_bw" "$bw_size" "$pm_iters" >"$tmp/pmalloc.log" 2>&1; then
  bw[pmalloc]=$(awk '$2 == "RESULT" && $3 == "pp_malloc" { print $7 }' "$tmp/pmalloc.log")
else
  log "pp_malloc_bw failed:"
  tail -5 "$tmp/pmalloc.log" >&2
fi

# --- UCX's own tool: ucx_perftest -----------------------------------------
# ucx_perftest TEST SIZE ITERS: server on core 0, client on core 1; prints the
# client's final row (iterations, lat 50 %, lat avg, lat overall, bw avg, bw
# overall MiB/s, rate avg, rate overall).
ucx() {
  local t=$1 s=$2 n=$3 limit
  limit=$(budget 40) || return 1
  UCX_TLS=sm,self timeout -k 2 "$limit" taskset -c 0 ucx_perftest -t "$t" -s "$s" -n "$n" \
    -p "$ucx_port" >"$tmp/ucx-$t-server.log" 2>&1 &
  pids+=($!)
  sleep 1
  UCX_TLS=sm,self run timeout -k 2 "$limit" taskset -c 1 ucx_perftest 127.0.0.1 -t "$t" -s "$s" \
    -n "$n" -p "$ucx_port" -f >"$tmp/ucx-$t.log" 2>&1
  local rc=$?
  wait "${pids[-1]}" 2>/dev/null
  unset 'pids[-1]'
  [ $rc -eq 0 ] || { log "ucx_perftest $t failed:"; tail -5 "$tmp/ucx-$t.log" >&2; return 1; }
  awk 'NF == 8 && $1 ~ /^[0-9]+$/ { row = $0 } END { print row }' "$tmp/ucx-$t.log"
}
step "ucx_perftest sm: tag_lat 8 B, tag_bw 4 MiB"
if row=$(ucx tag_lat 8 $((iters * 20))) && [ -n "$row" ]; then
  lat[ucx]=$(awk '{ printf "%.3f\n", $2 }' <<<"$row")
fi
if row=$(ucx tag_bw "$bw_size" $((pm_iters > 50 ? pm_iters : 50))) && [ -n "$row" ]; then
  bw[ucx]=$(awk '{ printf "%.1f\n", $6 * 1.048576 }' <<<"$row")
fi

# --- memcpy, one thread, every size ------------------------------------------------
step "memcpy, one thread, every size"
for s in "${sizes[@]}"; do
  [ "$s" -gt 0 ] || continue
  n=$((mb / s)); [ "$n" -ge 10 ] || n=10; [ "$n" -le 1000 ] || n=1000
  if limit=$(budget 30) &&
    run timeout -k 2 "$limit" taskset -c 1 "$tmp/memcpy_bw" "$s" "$n" >"$tmp/memcpy.log" 2>&1; then
    B[memcpy $s]=$(awk '$1 == "RESULT" { print $7 }' "$tmp/memcpy.log")
  else
    log "memcpy_bw $s failed:"
    tail -5 "$tmp/memcpy.log" >&2
  fi
done

# --- the tables ------------------------------------------------------------------
step_clear
csv_header
echo "# librt-pp intranode (2 ranks, cores 0 and 1), size by size; $iters iterations per point"
echo "# (fewer above --max-bytes $max_bytes, at least 10 a round) in $rounds rounds taken in turn with Open MPI's;"
echo "# a figure is the median of its rounds', each the mean of the middle 80 %"
echo "# cache line round trip core 0 <-> core 1 before each step of the rounds, ns (core_rtt):"
probe_lines
echo
echo "# one-way latency, us; r:MODE = Open MPI vader / librt-pp (> 1: librt-pp faster)"
size_table lat shm- mpi OMPI-vader "${modes[@]}"
echo "# one-way latency, us; r:MODE = Open MPI over UCX sm / librt-pp"
size_table lat shm- mpi-ucx OMPI-UCX "${modes[@]}"
echo
echo "# windowed bandwidth, MB/s (W=$window in flight, receives posted first); r:MODE = librt-pp / Open MPI vader"
size_table bw shm- mpi OMPI-vader "${modes[@]}"
echo "# windowed bandwidth, MB/s; r:MODE = librt-pp / Open MPI over UCX sm"
size_table bw shm- mpi-ucx OMPI-UCX "${modes[@]}"
echo "# windowed bandwidth, MB/s; r:MODE = librt-pp / memcpy (one thread): the share of the ceiling"
size_table bw shm- memcpy memcpy "${modes[@]}"
if [ "$ompi_pp" -eq 1 ]; then
  echo "# Open MPI over librt-pp (pml cm, mtl ofi, provider pp; node-mates through the segment)"
  echo "# one-way latency, us; r:mpi-pp = Open MPI vader / Open MPI over librt-pp (> 1: over librt-pp faster)"
  size_table lat shm- mpi OMPI-vader mpi-pp
  echo "# one-way latency, us; r:mpi-pp = native push-pull / Open MPI over librt-pp (1: what native gets)"
  size_table lat shm- push-pull native mpi-pp
  echo "# windowed bandwidth, MB/s; r:mpi-pp = Open MPI over librt-pp / Open MPI vader"
  size_table bw shm- mpi OMPI-vader mpi-pp
  echo "# windowed bandwidth, MB/s; r:mpi-pp = Open MPI over librt-pp / native push-pull"
  size_table bw shm- push-pull native mpi-pp
  size_csv shm- mpi-pp
fi
size_csv shm- "${modes[@]}" mpi mpi-ucx memcpy

# The summary: latency at 8 B (or the smallest size), bandwidth at 4 MiB (or
# the largest).
ls=${sizes[0]:-8} bs=${sizes[-1]:-$bw_size}
for s in "${sizes[@]}"; do
  [ "$s" != 8 ] || ls=8
  [ "$s" != "$bw_size" ] || bs=$bw_size
done
for x in "${modes[@]}" mpi mpi-ucx; do
  lat[$x]=${L[$x $ls]:-}
  bw[$x]=${B[$x $bs]:-}
done
bw[memcpy]=${B[memcpy $bs]:-}
rows=(push-pull push-all push-zero pmalloc mpi mpi-ucx ucx memcpy)
declare -A label=(
  [push-pull]="librt-pp push-pull (shm)" [push-all]="librt-pp push-all (shm)"
  [push-zero]="librt-pp push-zero (shm)" [pmalloc]="librt-pp pp_malloc bufs (shm) *"
  [mpi]="Open MPI 4.1 vader+CMA" [mpi-ucx]="Open MPI 4.1 + UCX sm"
  [ucx]="UCX 1.13 sm (ucx_perftest) *" [memcpy]="memcpy, 1 thread"
)
declare -A short=([mpi]="OMPI-vader" [mpi-ucx]="OMPI-UCX" [ucx]="UCX-sm" [memcpy]="memcpy")
declare -A lsize=([ucx]=8) bsize=([pmalloc]=$bw_size [ucx]=$bw_size)

echo
echo "# summary: latency one-way, $(hsize "$ls") (ucx_perftest: 8 B, its median); bandwidth $(hsize "$bs"), MB/s"
echo "# (windowed, W=$window, except * : pp_malloc_bw one message and a 4-byte reply, ucx_perftest a tag_bw stream)"
printf "%-32s %12s %12s\n" "system" "lat_us" "bw_MBps"
for r in "${rows[@]}"; do
  l=$(val "${lat[$r]:-}")
  b=$(val "${bw[$r]:-}")
  [ "$r" = memcpy ] || [ "$r" = pmalloc ] && l="-"
  printf "%-32s %12s %12s\n" "${label[$r]}" "$l" "$b"
  emit_csv measure "shm-$r" "" lat_us "${lsize[$r]:-$ls}" "$l"
  emit_csv measure "shm-$r" "" bw_MBps "${bsize[$r]:-$bs}" "$b"
done
ratios() { # TITLE METRIC ROWS-ARRAY BASELINES...
  local title=$1 metric=$2 m b r
  local -n rows_=$3
  shift 3
  echo "# $title"
  printf "%-20s" "pp mode"
  for b in "$@"; do printf " %10s" "${short[$b]}"; done
  echo
  for m in "${rows_[@]}"; do
    printf "%-20s" "$m"
    for b in "$@"; do
      if [ "$metric" = lat ]; then r=$(ratio "${lat[$b]:-}" "${lat[$m]:-}"); else r=$(ratio "${bw[$m]:-}" "${bw[$b]:-}"); fi
      printf " %10s" "$r"
      emit_csv ratio "shm-$m" "$b" "$metric" "" "$r"
    done
    echo
  done
}
# shellcheck disable=SC2034  # read through ratios' nameref
bw_rows=(push-pull push-all push-zero pmalloc)
ratios "intranode latency ratio = baseline / librt-pp (> 1: librt-pp faster)" lat modes mpi mpi-ucx ucx
ratios "intranode bandwidth ratio = librt-pp / baseline (> 1: librt-pp faster; memcpy: share of the ceiling)" bw bw_rows mpi mpi-ucx ucx memcpy

missing=0
size_complete "${modes[@]}" mpi mpi-ucx || missing=1
[ "$ompi_pp" -eq 0 ] || size_complete mpi-pp || missing=1
for s in "${sizes[@]}"; do [ "$s" -eq 0 ] || [ -n "${B[memcpy $s]:-}" ] || missing=1; done
[ -n "${lat[ucx]:-}" ] && [ -n "${bw[ucx]:-}" ] && [ -n "${bw[pmalloc]:-}" ] || missing=1
[ "$failed" -eq 0 ] || die "$failed step(s) of the rounds failed (logged above)"
[ "$missing" -eq 0 ] || die "some measurements failed (shown as '-')"
exit 0
