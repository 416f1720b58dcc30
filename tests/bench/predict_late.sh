#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Push-Pull paper's late-receiver test with and without the receive
# predictor, as a user runs it: pp_pingpong --test late under pprun with its
# default port kind, one rank per node of the test bed, no pp_progress calls
# in the compute loops unless --poll says so. Each round runs three jobs, in
# an order that turns by one every round:
#   push-all   mode push-all (the paper's baseline)
#   off        mode push-pull, predict=off (the runtime's default)
#   hybrid     mode push-pull, predict=hybrid
# and prints, per size, the median over the rounds of each job's median
# one-way latency (us), hybrid / push-all and hybrid / off taken within each
# round (below 1: hybrid is faster), hybrid's hits / predictions and the
# bytes it staged (all rounds). Bytes are not checked (--check touches every
# buffer between iterations, which moves large sizes by 2-3x;
# tests/integration/runtime_predict.sh checks the predictor's bytes).
#
#   tests/bench/predict_late.sh [--rounds R] [--iters N] [--sizes SPEC]
#                               [--poll N] [--config STR] [--csv FILE] [--build DIR]
#
# --rounds R is 1..9. --csv FILE also writes every job's rows there:
# config,round,size,lat_us_median,pred_predictions,pred_hits,bytes_staged.
# Defaults: 3 rounds of 200 iterations at 16 B to 1 MiB in x4 steps, no
# --poll, build/. --config passes more settings to every job, e.g.
# progress=event: the engine runs while the ranks compute, which is what
# lets the predictor stage anything (inline, frames wait in the port's
# queue until the receive is posted). Needs root (the test bed), which is
# one per machine: run it under flock /tmp/testbed.lock.
set -euo pipefail
prog=predict_late.sh
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/bench/lib.sh"
rounds=3 iters=200 sizes_arg=16:1m:x4 poll=0 config='' csv='' build=$root/build
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help) sed -n '3,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --rounds) [[ ${2:-} =~ ^[1-9]$ ]] || bad "--rounds takes 1..9"; rounds=$2; shift 2 ;;
  --iters) posint "${2:-}" || bad "--iters takes a positive number"; iters=$2; shift 2 ;;
  --sizes) sizespec "${2:-}" || bad "--sizes takes a size list, e.g. 16:1m:x4"; sizes_arg=$2; shift 2 ;;
  --poll) [[ ${2:-} =~ ^[0-9]{1,9}$ ]] || bad "--poll takes a number of NOPs"; poll=$2; shift 2 ;;
  --config) [ -n "${2:-}" ] || bad "--config takes key=value,..."; config=$2; shift 2 ;;
  --csv) [ -n "${2:-}" ] || bad "--csv takes a file"; csv=$2; shift 2 ;;
  --build) [ -n "${2:-}" ] || bad "--build takes a directory"; build=$2; shift 2 ;;
  *) bad "unknown argument '$1'" ;;
  esac
done
[ "$(id -u)" -eq 0 ] || die "needs root (the test bed)"
for p in apps/pprun apps/pp_pingpong; do
  [ -x "$build/$p" ] || die "no $build/$p (build first, or --build DIR)"
done
[ -z "$csv" ] || : >"$csv" || die "cannot write $csv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/tests/testbed.sh" up 2 >/dev/null || die "testbed.sh up 2 failed"

configs=(push-all off hybrid)
declare -A args=([push-all]="--mode push-all" [off]="--mode push-pull --predict off"
  [hybrid]="--mode push-pull --predict hybrid")
steps=$((rounds * 3))
for r in $(seq 0 $((rounds - 1))); do
  for i in 0 1 2; do
    c=${configs[$(((i + r) % 3))]}
    step "round $((r + 1)): $c"
    # shellcheck disable=SC2086 # args holds words
    "$build/apps/pprun" -n 2 --timeout 600 -- "$build/apps/pp_pingpong" --test late \
      ${args[$c]} --sizes "$sizes_arg" --iters "$iters" --poll "$poll" ${config:+--config "$config"} \
      --csv "$tmp/$c.$r.csv" >"$tmp/$c.$r.out" 2>&1 || { cat "$tmp/$c.$r.out" >&2; die "the $c job failed"; }
  done
done
step_clear

# size median predictions hits bytes_staged, one line per size, of config $1 in round $2
rows() { awk -F, 'NR > 1 && $1 == "late" { print $6, $9, $12, $13, $16 }' "$tmp/$1.$2.csv"; }
declare -A lat pred hit staged
for c in "${configs[@]}"; do
  for r in $(seq 0 $((rounds - 1))); do
    while read -r size med np nh nb; do
      add_size "$size"
      lat[$c $size $r]=$med
      pred[$c $size]=$((${pred[$c $size]:-0} + np))
      staged[$c $size]=$((${staged[$c $size]:-0} + nb))
      hit[$c $size]=$((${hit[$c $size]:-0} + nh))
    done < <(rows "$c" "$r")
  done
done
sort_sizes
if [ -n "$csv" ]; then
  echo "config,round,size,lat_us_median,pred_predictions,pred_hits,bytes_staged" >"$csv"
  for c in "${configs[@]}"; do
    for r in $(seq 0 $((rounds - 1))); do
      rows "$c" "$r" | awk -v c="$c" -v r="$((r + 1))" '{ print c "," r "," $1 "," $2 "," $3 "," $4 "," $5 }' >>"$csv"
    done
  done
fi
# median, lowest and highest of the numbers on stdin: "M (L-H)"
spread() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f (%.2f-%.2f)\n", v[int((NR + 1) / 2)], v[1], v[NR]; else print "-" }'; }
# per_round A B SIZE: A's latency over B's in each round, one a line
per_round() { local r; for r in $(seq 0 $((rounds - 1))); do ratio "${lat[$1 $3 $r]:-}" "${lat[$2 $3 $r]:-}"; done | grep -v '^-$' || true; }
echo "# late receiver, pprun -n 2 (default port kind), $rounds rounds of $iters iterations, poll $poll${config:+, $config}"
echo "# us: median over the rounds of each job's median one-way latency;"
echo "# ratios: taken within each round, median (lowest-highest); below 1 hybrid is faster"
printf '%-7s %9s %9s %9s  %-19s %-19s %-9s %s\n' size push-all off hybrid hybrid/push-all hybrid/off hits/pred staged
for s in "${sizes[@]}"; do
  med() { local r; for r in $(seq 0 $((rounds - 1))); do echo "${lat[$1 $s $r]:-}"; done | grep . | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
  hp=$(awk -v p="${pred[hybrid $s]:-0}" -v h="${hit[hybrid $s]:-0}" 'BEGIN { if (p) printf "%.3f", h / p; else print "-" }')
  printf '%-7s %9s %9s %9s  %-19s %-19s %-9s %s\n' "$(hsize "$s" | tr -d ' ')" "$(med push-all)" "$(med off)" "$(med hybrid)" \
    "$(per_round hybrid push-all "$s" | spread)" "$(per_round hybrid off "$s" | spread)" "$hp" \
    "$(hsize "${staged[hybrid $s]:-0}" | tr -d ' ')"
done
