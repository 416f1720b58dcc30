#!/usr/bin/env bash
# udp: ports with UDP_GRO on receive against without (gro=0), in one run:
# two ranks of pp_pingpong on this host, each on its own udp: port over
# 127.0.0.1 (two "nodes", so their messages go through the ports, not
# shared memory), pinned to cores 0 and 1; --rounds rounds, GRO on and off
# taken in turns. Prints, per test and size, the median over rounds of
# pp_pingpong's figure (latency: one-way us, mean of the middle 80 %;
# window: MB/s) for each side and the ratio on/off for bandwidth, off/on for
# latency: above 1, GRO did better. Needs no root and no test bed.
#
# usage: udp_gro.sh [--build DIR] [--rounds R] [--iters N] [--sizes LIST] [--csv FILE]
#   --build DIR    build directory (default build)
#   --rounds R     rounds, 1..9 (default 3)
#   --iters N      pp_pingpong iterations per point (default 300)
#   --sizes LIST   pp_pingpong --sizes (default 8,64k,1m,4m)
#   --csv FILE     also write every figure: side,round,test,size,value
#   -h, --help     this text
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
prog=udp_gro.sh
. "$here/lib.sh" # bad, die, posint, sizespec
build=build rounds=3 iters=300 sizes=8,64k,1m,4m csv=
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --build) [ $# -ge 2 ] || bad "--build needs a directory"; build=$2; shift 2 ;;
    --rounds) [[ ${2:-} =~ ^[1-9]$ ]] || bad "--rounds needs 1..9"; rounds=$2; shift 2 ;;
    --iters) { [ $# -ge 2 ] && posint "$2"; } || bad "--iters needs a count"; iters=$2; shift 2 ;;
    --sizes) { [ $# -ge 2 ] && sizespec "$2"; } || bad "--sizes needs a size list (8,1k,...)"
      sizes=$2; shift 2 ;;
    --csv) [ $# -ge 2 ] || bad "--csv needs a file"; csv=$2; shift 2 ;;
    *) bad "unknown argument '$1'" ;;
  esac
done
pp=$build/apps/pp_pingpong
[ -x "$pp" ] || die "no $pp (meson setup $build && ninja -C $build)"
tmp=$(mktemp -d /tmp/pp-udpgro.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
peers=127.0.0.1:50100+127.0.0.1:50101

run() { # OPT TAG JOB: one job; its rank 0's rows into $tmp/TAG.rows
  local r pids=()
  for r in 0 1; do
    PP_RANK=$r PP_SIZE=2 PP_JOB=$3 PP_NODE=n$r \
      PP_DEV=udp:127.0.0.1:5010$r,peers=$peers$1 taskset -c $r timeout 300 "$pp" \
      --test latency,window --sizes "$sizes" --iters "$iters" >"$tmp/$2.$r.log" 2>&1 &
    pids+=($!)
  done
  for r in 0 1; do
    wait "${pids[$r]}" || { cat "$tmp/$2.$r.log" >&2; die "rank $r (GRO $2) failed"; }
  done
  awk -v side="$2" -v round="$4" \
    '$1=="latency"{print "latency",$5,$6} $1=="window"{print "window",$5,$9}
     $1=="latency"||$1=="window"{print side "," round "," $1 "," $5 "," ($1=="latency"?$6:$9) >> "'"$tmp/all.csv"'"}' \
    "$tmp/$2.0.log" >>"$tmp/$2.rows"
}
for ((i = 1; i <= rounds; i++)); do
  for side in on off; do
    opt=; [ $side = off ] && opt=,gro=0
    run "$opt" "$side" $((RANDOM + 1)) "$i" # one job key for both ranks of a run
  done
done
median() { sort -g | awk '{v[NR]=$1} END{print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
printf '%-8s %9s %12s %12s %7s\n' test size "gro on" "gro off" ratio
for t in latency window; do
  for s in $(awk -v t=$t '$1==t{print $2}' "$tmp/on.rows" | sort -gu); do
    on=$(awk -v t=$t -v s="$s" '$1==t&&$2==s{print $3}' "$tmp/on.rows" | median)
    off=$(awk -v t=$t -v s="$s" '$1==t&&$2==s{print $3}' "$tmp/off.rows" | median)
    awk -v t=$t -v s="$s" -v a="$on" -v b="$off" 'BEGIN{
      r = (t=="latency") ? b/a : a/b
      printf "%-8s %9s %12.2f %12.2f %7.2f\n", t, s, a, b, r }'
  done
done
echo "# latency: one-way us; window: MB/s; ratio > 1: GRO better; $rounds rounds, alternated"
[ -z "$csv" ] || { echo "side,round,test,size,value"; cat "$tmp/all.csv"; } >"$csv"
