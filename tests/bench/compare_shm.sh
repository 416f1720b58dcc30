#!/usr/bin/env bash
# librt-pp intranode (two ranks on one node, shared memory) against the
# shared-memory transports of Open MPI and UCX, in one run, and the
# single-thread memcpy ceiling:
#
#   pp_pingpong   push-pull, push-all, push-zero, pprun --nodes 1 (shm=on:
#                 pushes through the segment's rings, the rest in one copy)
#   Open MPI      tests/bench/mpi_pingpong.c, btl self,vader with its CMA
#                 single copy (btl_vader_single_copy_mechanism cma)
#   UCX           ucx_perftest tag_lat / tag_bw, UCX_TLS=sm,self (shared
#                 memory with CMA)
#   memcpy        tests/bench/memcpy_bw.c, one thread, two buffers
#   pp_malloc     tests/bench/pp_malloc_bw.c: librt-pp push-pull bandwidth with
#                 buffers from pp_malloc (in the segment: one memcpy by the
#                 receiver), measured as pp_pingpong measures
#
# Figures: 8-byte one-way latency in us and 4 MiB bandwidth in MB/s (10^6
# B/s). pp_pingpong and mpi_pingpong measure alike (latency: round trip / 2,
# mean of the middle 80 %; bandwidth: 4 MiB sent, 4 bytes back, size / (time
# - 4-byte one-way latency)); ucx_perftest reports its own way (latency: the
# median of half round trips; bandwidth: a stream of tag sends, converted from
# its MiB/s); memcpy: size over the mean of the middle 80 % of copy times.
# Ratios: baseline latency / pp latency and pp bandwidth / baseline
# bandwidth, so a ratio above 1 means librt-pp did better; against memcpy the
# ratio is the share of the ceiling reached.
#
# The two sides of every test are pinned to cores 0 and 1. Needs root, the
# build (meson setup build && ninja -C build) and tests/bench/deps.sh. The
# run is bounded (--max-time, default 200 s); a step that runs out is killed
# and its figures show as "-". Exit status: 0 when every figure was measured,
# 1 otherwise, 2 on bad usage.
#
# usage: compare_shm.sh [--build DIR] [--iters N] [--max-time SEC] [--csv FILE]
#   --build DIR     build directory with apps/pprun, apps/pp_pingpong (default build)
#   --iters N       measured ping-pong iterations per point (default 20000: a sub-microsecond
#                   ping-pong needs a run of tens of milliseconds to settle)
#   --max-time SEC  bound on the whole run (default 200)
#   --csv FILE      also write every figure and ratio as CSV rows to FILE
#   -h, --help      this text
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=build
iters=20000
max_time=200
csv=
ucx_port=17821
bw_size=4194304

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
prog=compare_shm.sh
pp_nodes=1
steps=6 # the calls of step below
# shellcheck source=tests/bench/lib.sh
. "$here/lib.sh"

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
    *) bad "unknown argument '$1'" ;;
  esac
done
[[ $build = /* ]] || build=$root/$build
[ -z "$csv" ] || [[ $csv = /* ]] || csv=$PWD/$csv

[ "$(id -u)" -eq 0 ] || die "must run as root (pprun enters network namespaces)"
for t in taskset timeout pgrep mpicc mpirun ucx_perftest cc awk sort; do
  command -v "$t" >/dev/null || die "'$t' is missing; run tests/bench/deps.sh (as root)"
done
for p in apps/pprun apps/pp_pingpong; do
  [ -x "$build/$p" ] || die "$build/$p not built; run: meson setup build && ninja -C build"
done

bench_start pp-bench-shm

mpicc -std=c11 -D_GNU_SOURCE -O2 -Wall -o "$tmp/mpi_pingpong" "$here/mpi_pingpong.c" ||
  die "mpicc could not build tests/bench/mpi_pingpong.c"
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -o "$tmp/memcpy_bw" "$here/memcpy_bw.c" ||
  die "cc could not build tests/bench/memcpy_bw.c"
[ -e "$build/runtime/librt-pp.so" ] || die "$build/runtime/librt-pp.so not built"
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -I"$root/runtime/include" -o "$tmp/pp_malloc_bw" \
  "$here/pp_malloc_bw.c" -L"$build/runtime" -lrt-pp -Wl,-rpath,"$build/runtime" ||
  die "cc could not build tests/bench/pp_malloc_bw.c"
"$root/tests/testbed.sh" status >/dev/null 2>&1 || testbed_ours=1

declare -A lat bw
modes=(push-pull push-all push-zero)

# --- librt-pp: pp_pingpong, three modes, one node -------------------------------
step "pp_pingpong intranode latency, 8 B, 3 modes"
if pp_job pp-lat "$tmp/pp-lat.csv" 60 --test latency --sizes 8; then
  for m in "${modes[@]}"; do
    lat[$m]=$(awk -F, -v m="$m" '$1 == "latency" && $2 == m && $6 == 8 { print $8 }' "$tmp/pp-lat.csv")
  done
fi
step "pp_pingpong intranode bandwidth, 4 MiB, 3 modes"
if pp_job pp-bw "$tmp/pp-bw.csv" 90 --test bandwidth --sizes "$bw_size"; then
  for m in "${modes[@]}"; do
    bw[$m]=$(awk -F, -v m="$m" -v s="$bw_size" '$1 == "bandwidth" && $2 == m && $6 == s { print $11 }' "$tmp/pp-bw.csv")
  done
fi

step "librt-pp push-pull bandwidth, 4 MiB, pp_malloc buffers"
if limit=$(budget 60) &&
  run "$build/apps/pprun" -n 2 --nodes 1 --dev-kind af_packet --timeout "$limit" -- \
    "$tmp/pp_malloc_bw" "$bw_size" "$iters" >"$tmp/pmalloc.log" 2>&1; then
  bw[pmalloc]=$(awk '$2 == "RESULT" && $3 == "pp_malloc" { print $7 }' "$tmp/pmalloc.log")
else
  log "pp_malloc_bw failed:"
  tail -5 "$tmp/pmalloc.log" >&2
fi

# --- Open MPI, vader (shared memory) with CMA -------------------------------------
step "Open MPI vader+CMA: 8 B latency, 4 MiB bandwidth"
if limit=$(budget 60); then
  if OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    run timeout -k 5 "$limit" mpirun -np 2 --bind-to core --map-by core \
    --mca btl self,vader --mca btl_vader_single_copy_mechanism cma \
    "$tmp/mpi_pingpong" --lat-size 8 --bw-size "$bw_size" --iters "$iters" >"$tmp/mpi.log" 2>&1; then
    lat[mpi]=$(awk '$1 == "RESULT" && $2 == "latency" && $3 == 8 { print $4 }' "$tmp/mpi.log")
    bw[mpi]=$(awk '$1 == "RESULT" && $2 == "bandwidth" && $7 != "-" { print $7 }' "$tmp/mpi.log")
  else
    log "mpirun failed:"
    tail -20 "$tmp/mpi.log" >&2
  fi
fi

# --- UCX over shared memory: ucx_perftest -----------------------------------------
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
step "UCX sm: tag_lat 8 B, tag_bw 4 MiB"
if row=$(ucx tag_lat 8 $((iters * 20))) && [ -n "$row" ]; then
  lat[ucx]=$(awk '{ printf "%.3f\n", $2 }' <<<"$row")
fi
if row=$(ucx tag_bw "$bw_size" $((iters / 2 > 50 ? iters / 2 : 50))) && [ -n "$row" ]; then
  bw[ucx]=$(awk '{ printf "%.1f\n", $6 * 1.048576 }' <<<"$row")
fi

# --- memcpy, one thread ------------------------------------------------------------
step "memcpy, one thread, 4 MiB"
if limit=$(budget 30) &&
  run timeout -k 2 "$limit" taskset -c 1 "$tmp/memcpy_bw" "$bw_size" "$iters" >"$tmp/memcpy.log" 2>&1; then
  bw[memcpy]=$(awk '$1 == "RESULT" { print $7 }' "$tmp/memcpy.log")
fi

# --- the table ------------------------------------------------------------------
rows=(push-pull push-all push-zero pmalloc mpi ucx memcpy)
declare -A label=(
  [push-pull]="librt-pp push-pull (shm)" [push-all]="librt-pp push-all (shm)"
  [push-zero]="librt-pp push-zero (shm)" [pmalloc]="librt-pp pp_malloc bufs (shm)"
  [mpi]="Open MPI 4.1 vader+CMA"
  [ucx]="UCX 1.13 sm (ucx_perftest)" [memcpy]="memcpy, 1 thread"
)
declare -A short=([mpi]="OMPI-vader" [ucx]="UCX-sm" [memcpy]="memcpy")

[ -z "$csv" ] || echo "record,system,baseline,metric,value" >"$csv" || die "cannot write $csv"

step_clear
echo "# librt-pp intranode (2 ranks, cores 0 and 1), $iters iterations"
echo "# latency: one-way, 8 B (UCX: median; others: mean of middle 80 %); bandwidth: 4 MiB, MB/s"
printf "%-32s %12s %12s\n" "system" "lat_us" "bw_MBps"
for r in "${rows[@]}"; do
  l=$(val "${lat[$r]:-}")
  b=$(val "${bw[$r]:-}")
  [ "$r" = memcpy ] || [ "$r" = pmalloc ] && l="-"
  printf "%-32s %12s %12s\n" "${label[$r]}" "$l" "$b"
  emit_csv measure "shm-$r" "" lat_us "$l"
  emit_csv measure "shm-$r" "" bw_MBps "$b"
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
      emit_csv ratio "shm-$m" "$b" "$metric" "$r"
    done
    echo
  done
}
bw_rows=(push-pull push-all push-zero pmalloc)
ratios "intranode latency ratio = baseline / librt-pp (> 1: librt-pp faster)" lat modes mpi ucx
ratios "intranode bandwidth ratio = librt-pp / baseline (> 1: librt-pp faster; memcpy: share of the ceiling)" bw bw_rows mpi ucx memcpy

missing=0
for k in push-pull push-all push-zero mpi ucx; do [ -n "${lat[$k]:-}" ] || missing=1; done
for k in push-pull push-all push-zero pmalloc mpi ucx memcpy; do [ -n "${bw[$k]:-}" ] || missing=1; done
[ "$missing" -eq 0 ] || die "some measurements failed (shown as '-')"
exit 0
