#!/usr/bin/env bash
# Embedded engine against the node daemon ppd, side by side, on the test bed
# (2 nodes, one rank each, pinned to cores 0 and 1; with --daemon each node's
# ppd runs one handler, node i on core i):
#
#   1. pp_pingpong latency, early and late receiver (the paper's Figure 5)
#   2. the late receiver with the sender busy computing while the PULL comes
#      (pp_pingpong late, larger sizes): embedded without and with a pull
#      handler thread in the sender, rank 0 (pull_cores=CORE for rank 0
#      only); through daemons without pull serving (ppd --no-pull-serve: the
#      rank's engine answers the PULL when it calls in again), with the
#      daemon's handlers serving it (the default), and with both the daemon's
#      handlers and a pull thread in the rank
#   3. the same four ways, pp_pingpong busy: the receiver's time from posting
#      its late receive to completion while the sender computes --busy-us
#      without pp_* calls (the figure the pull handlers change most)
#
# Figures are pp_pingpong's: one-way latency in us, mean of the middle 80 %
# of --iters samples. The ratio column is daemon / embedded (above 1: the
# daemon is slower). With the daemons on their ranks' cores (no --ppd-cores),
# part 1 also gives the floor under that ratio: every one-way trip passes the
# core twice between two processes (rank to its handler to send, handler to
# rank to deliver), and tests/bench/switch_cost measures one such hand-over
# on core 0 first; floor = (embedded + 2 * hand-over) / embedded. Needs root
# and the build.
#
# usage: ppd_compare.sh [--build DIR] [--iters N] [--sizes LIST] [--pull-sizes LIST]
#                       [--pull-core N] [--pull-x N] [--csv FILE]
#   --build DIR         build directory (default build)
#   --iters N           measured iterations per point (default 300)
#   --sizes LIST        sizes for part 1 (default 4,1k,64k)
#   --pull-sizes LIST   sizes for part 2 (default 64k,1m)
#   --pull-core N       core of the sender's pull handler (default 1)
#   --pull-x N          part 2 computes x = N and y = 3N NOPs (default
#                       1000000): the receiver posts after y, the sender
#                       computes from x to x + y, so without a pull handler
#                       the PULL waits about x
#   --busy-us N         part 3: the sender computes N us (default 2000)
#   --ppd-cores LIST    the daemons' handler cores (default pprun's: node i on
#                       core i, sharing it with rank i)
#   --csv FILE          also write every figure as CSV (part,test,size,config,us;
#                       part 1's floor rows: embedded + 2 hand-overs, in us)
#   -h, --help          this text
set -uo pipefail
build=build iters=300 sizes=4,1k,64k psizes=64k,1m pcore=1 px=1000000 csv= busyus=2000 dcores=()
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
  --build) build=$2; shift 2 ;;
  --iters) iters=$2; shift 2 ;;
  --sizes) sizes=$2; shift 2 ;;
  --pull-sizes) psizes=$2; shift 2 ;;
  --pull-core) pcore=$2; shift 2 ;;
  --pull-x) px=$2; shift 2 ;;
  --busy-us) busyus=$2; shift 2 ;;
  --ppd-cores) dcores=(--ppd-cores "$2"); shift 2 ;;
  --csv) csv=$2; shift 2 ;;
  -h | --help) usage; exit 0 ;;
  *) echo "ppd_compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $iters =~ ^[1-9][0-9]*$ ]] || { echo "ppd_compare.sh: --iters wants a positive number" >&2; exit 2; }
[[ $px =~ ^[0-9]+$ ]] || { echo "ppd_compare.sh: --pull-x wants a number" >&2; exit 2; }
[[ $busyus =~ ^[1-9][0-9]*$ ]] || { echo "ppd_compare.sh: --busy-us wants a positive number" >&2; exit 2; }
[[ $pcore =~ ^[0-9]+$ ]] || { echo "ppd_compare.sh: --pull-core wants a core number" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "ppd_compare.sh: needs root (pprun enters namespaces)" >&2; exit 2; }
pprun=$build/apps/pprun pingpong=$build/apps/pp_pingpong ppd=$build/apps/ppd/ppd
[ -x "$pprun" ] && [ -x "$pingpong" ] && [ -x "$ppd" ] || { echo "ppd_compare.sh: no build in $build" >&2; exit 2; }
tmp=$(mktemp -d /tmp/ppd-compare.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The daemon without pull serving, for part 2.
printf '#!/bin/sh\nexec "%s" --no-pull-serve "$@"\n' "$(realpath "$ppd")" >"$tmp/ppd-nps"
chmod +x "$tmp/ppd-nps"

# one NAME PPRUN_ARGS -- PINGPONG_ARGS: a pp_pingpong run into $tmp/NAME.csv
one() {
  local name=$1
  shift
  local pre=()
  while [ "$1" != -- ]; do pre+=("$1"); shift; done
  shift
  # Through sh so that only rank 0 gets $handler (PP_PULL_CORES).
  "$pprun" -n 2 --nodes 2 --timeout 600 "${pre[@]}" -- /bin/sh -c \
    'if [ "$PP_RANK" = 0 ] && [ -n "$H" ]; then export PP_PULL_CORES=$H; fi; exec "$@"' sh \
    "$pingpong" --iters "$iters" --csv "$tmp/$name.csv" "$@" >"$tmp/$name.log" 2>&1 ||
    { grep -v '^\[[0-9]*\] EAL' "$tmp/$name.log" | tail -5 >&2; echo "ppd_compare.sh: run $name failed; its figures show as -" >&2; failed=1; }
}

# fig NAME TEST SIZE: the mid-80 % latency of one row
fig() {
  local v
  v=$(awk -F, -v t="$2" -v s="$3" '$1 == t && $6 == s { print $8 }' "$tmp/$1.csv" 2>/dev/null)
  echo "${v:--}"
}

bytes() {
  local v=${1,,}
  case $v in *k) echo $((${v%k} * 1024)) ;; *m) echo $((${v%m} * 1048576)) ;; *) echo "$v" ;; esac
}

failed=0
# One hand-over of a core between two processes, before anything else runs.
yield_ns='' wake_ns=''
if [ ${#dcores[@]} -eq 0 ]; then
  if [ -x "$build/tests/switch_cost" ] && sc=$("$build/tests/switch_cost" 0 2>&1); then
    read -r yield_ns wake_ns < <(awk '$1 == "RESULT" { print $4, $6 }' <<<"$sc")
  else
    echo "ppd_compare.sh: no switch_cost figure ($build/tests/switch_cost: ${sc:-not built}); the floor shows as -" >&2
  fi
fi
export H=
one emb -- --test latency,early,late --sizes "$sizes"
one dmn --daemon "${dcores[@]}" -- --test latency,early,late --sizes "$sizes"
one emb_nh -- --test late --sizes "$psizes" --compute-x "$px" --compute-y "$((3 * px))"
one dmn_nps --daemon "${dcores[@]}" --ppd "$tmp/ppd-nps" -- --test late --sizes "$psizes" --compute-x "$px" --compute-y "$((3 * px))"
one dmn_nh --daemon "${dcores[@]}" -- --test late --sizes "$psizes" --compute-x "$px" --compute-y "$((3 * px))"
one emb_nh_b -- --test busy --sizes "$psizes" --compute-us "$busyus"
one dmn_nps_b --daemon "${dcores[@]}" --ppd "$tmp/ppd-nps" -- --test busy --sizes "$psizes" --compute-us "$busyus"
one dmn_nh_b --daemon "${dcores[@]}" -- --test busy --sizes "$psizes" --compute-us "$busyus"
H=$pcore
one emb_h_b -- --test busy --sizes "$psizes" --compute-us "$busyus"
one emb_h -- --test late --sizes "$psizes" --compute-x "$px" --compute-y "$((3 * px))"
one dmn_h --daemon "${dcores[@]}" -- --test late --sizes "$psizes" --compute-x "$px" --compute-y "$((3 * px))"
H=

[ -n "$csv" ] && echo "part,test,size,config,us" >"$csv"
row() { [ -n "$csv" ] && echo "$1" >>"$csv"; }
echo "1. one-way latency (us, mid-80 % mean of $iters), embedded engine vs node daemon"
if [ ${#dcores[@]} -eq 0 ]; then
  echo "   a core passed between two processes on core 0 (switch_cost): sched_yield $(awk -v n="$yield_ns" 'BEGIN { if (n > 0) printf "%.2f", n / 1000; else print "-" }') us, eventfd wake-up $(awk -v n="$wake_ns" 'BEGIN { if (n > 0) printf "%.2f", n / 1000; else print "-" }') us; floor = (embedded + 2 * yield) / embedded"
else
  yield_ns=
fi
printf "%-8s %9s %10s %10s %7s %7s\n" test size embedded daemon ratio floor
for t in latency early late; do
  for s in ${sizes//,/ }; do
    b=$(bytes "$s") e=$(fig emb "$t" "$b") d=$(fig dmn "$t" "$b")
    printf "%-8s %9s %10s %10s %7s %7s\n" "$t" "$b" "$e" "$d" "$(awk -v e="$e" -v d="$d" 'BEGIN { if (e > 0) printf "%.2f", d / e; else print "-" }')" \
      "$(awk -v e="$e" -v y="${yield_ns:-}" 'BEGIN { if (e > 0 && y > 0) printf "%.2f", (e + 2 * y / 1000) / e; else print "-" }')"
    row "1,$t,$b,embedded,$e"
    row "1,$t,$b,daemon,$d"
    [ -z "$yield_ns" ] || row "1,$t,$b,floor,$(awk -v e="$e" -v y="$yield_ns" 'BEGIN { if (e > 0) printf "%.3f", e + 2 * y / 1000; else print "-" }')"
  done
done
echo
echo "2. late receiver, sender computing when the PULL comes (us): embedded without / with a pull thread in the sender (core $pcore); daemon without pull serving (--no-pull-serve), with its handlers serving, with its handlers and the rank's pull thread"
printf "%9s %14s %14s %14s %14s %14s\n" size emb-no-handler emb-handler dmn-no-serve dmn-serve dmn-serve+thr
for s in ${psizes//,/ }; do
  b=$(bytes "$s")
  printf "%9s %14s %14s %14s %14s %14s\n" "$b" "$(fig emb_nh late "$b")" "$(fig emb_h late "$b")" \
    "$(fig dmn_nps late "$b")" "$(fig dmn_nh late "$b")" "$(fig dmn_h late "$b")"
  for c in emb_nh emb_h dmn_nps dmn_nh dmn_h; do row "2,late,$b,$c,$(fig $c late "$b")"; done
done
echo
echo "3. busy: the late receiver's post-to-completion time (us) while the sender computes $busyus us without pp_* calls"
printf "%9s %14s %14s %14s %14s\n" size emb-no-handler emb-handler dmn-no-serve dmn-serve
for s in ${psizes//,/ }; do
  b=$(bytes "$s")
  printf "%9s %14s %14s %14s %14s\n" "$b" "$(fig emb_nh_b busy "$b")" "$(fig emb_h_b busy "$b")" \
    "$(fig dmn_nps_b busy "$b")" "$(fig dmn_nh_b busy "$b")"
  for c in emb_nh_b emb_h_b dmn_nps_b dmn_nh_b; do row "3,busy,$b,${c%_b},$(fig $c busy "$b")"; done
done
exit $failed
