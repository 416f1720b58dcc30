#!/usr/bin/env bash
# The MPI door's guard: Open MPI over librt-pp (pml cm, mtl ofi, provider pp)
# beside native librt-pp and Open MPI over TCP, in one run on the test bed
# (ppn0 and ppn1, one rank each, port pp0 at MTU 9000, packet: ports), the
# same method on every side (tests/bench/mpi_pingpong.c is pp_pingpong's
# latency and window tests, its statistics compiled in). Printed: one-way
# latency and windowed bandwidth (W=64) at 64 KiB and 1 MiB, each the median
# of --rounds rounds taken in turn, and the ratios.
#
#   native     pp_pingpong, push-pull (pprun: ranks on cores 0 and 1)
#   ompi-pp    Open MPI over pp, ranks on cores 0 and 1
#   ompi-tcp   Open MPI, ob1 over the TCP BTL, ranks on cores 0 and 1
#   ompi-pp-default  Open MPI over pp as mpirun binds by default: each
#              namespace is a node of one rank, so both ranks get core 0
#
# The goal is Open MPI over pp within 0.8 x native at 1 MiB; a run says
# "below the goal" when it is not. It fails (exit 1) only below 0.5 x
# native (windowed bandwidth, or latency: native / ompi-pp): three clean
# runs on a 2-core VM gave 0.72 to 1.20 for the window ratio, so a 0.8 line
# would fail on noise, while the regressions it guards against cost 4x and
# more. It also fails when with the default binding Open MPI over pp falls
# below 0.3 x its own pinned figure (two busy-polling ranks on one core that
# only meet at the end of time slices lose a factor of 30 or more; seen:
# 0.78 to 1.11). Exit 77 when it cannot run (not root, no Open MPI or
# provider).
#
# usage: mpi_guard.sh BUILD_DIR [--rounds R] [--iters N]
set -uo pipefail
build=${1:?usage: mpi_guard.sh BUILD_DIR [--rounds R] [--iters N]}
shift
rounds=5 iters=100
while [ $# -gt 0 ]; do
  case $1 in
  --rounds) rounds=$2; shift 2 ;;
  --iters) iters=$2; shift 2 ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "mpi_guard.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd) root=$(cd "$here/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in mpicc mpirun ompi_info; do
  command -v "$t" >/dev/null || { echo "SKIP: '$t' is missing (tests/deps.sh)"; exit 77; }
done
[ -f "$build/ofi/libpp-fi.so" ] || { echo "SKIP: $build/ofi/libpp-fi.so not built"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

ip0=10.77.11.1 ip1=10.77.11.2 plen=24 sizes=64k,1m
tmp=$(mktemp -d /tmp/pp-mpi-guard.XXXXXX)
cleanup() {
  ip -n ppn0 addr del "$ip0/$plen" dev pp0 2>/dev/null
  ip -n ppn1 addr del "$ip1/$plen" dev pp0 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mpicc -std=c11 -D_GNU_SOURCE -O2 -Wall -I"$root/apps/perf" -o "$tmp/mpi_pingpong" \
  "$here/mpi_pingpong.c" "$root/apps/perf/list.c" "$root/apps/perf/stats.c" || fail "mpicc"
TESTBED_MTU=9000 "$root/tests/testbed.sh" up 2 1 >/dev/null || fail "testbed.sh up 2 1"
ip -n ppn0 addr add "$ip0/$plen" dev pp0 || fail "address on ppn0"
ip -n ppn1 addr add "$ip1/$plen" dev pp0 || fail "address on ppn1"

# Rows "TEST SIZE US MBPS" of one run into $tmp/SYS.ROUND.
native() { # ROUND
  "$build/apps/pprun" -n 2 --nodes 2 --dev-kind packet --timeout 300 -- \
    "$build/apps/pp_pingpong" --test latency,window --window 64 --sizes "$sizes" \
    --iters "$iters" --mode push-pull --csv "$tmp/native.csv" >"$tmp/native.log" 2>&1 ||
    { tail -20 "$tmp/native.log"; fail "native pp_pingpong"; }
  awk -F, 'NR > 1 { print $1, $6, $8, ($11 == "" ? "-" : $11) }' "$tmp/native.csv" >"$tmp/native.$1"
}
ompi() { # SYS ROUND MPIRUN-ARGS...: pinned unless SYS is ompi-pp-default
  local sys=$1 r=$2 pin=(taskset -c 0) agent="$ip0=ppn0=0 $ip1=ppn1=1"
  shift 2
  if [ "$sys" = ompi-pp-default ]; then pin=() agent="$ip0=ppn0=0-$(($(nproc) - 1)) $ip1=ppn1=0-$(($(nproc) - 1))"; fi
  NETNS_AGENT_HOSTS="$agent" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout -k 5 300 ip netns exec ppn0 "${pin[@]}" mpirun -np 2 --host "$ip0,$ip1" "$@" \
    --mca plm_rsh_agent "$here/netns_agent.sh" --mca oob_tcp_if_include pp0 \
    "$tmp/mpi_pingpong" --test latency,window --window 64 --sizes "$sizes" --iters "$iters" \
    >"$tmp/$sys.log" 2>&1 || { tail -20 "$tmp/$sys.log"; fail "mpirun ($sys)"; }
  awk '$1 == "RESULT" { print $2, $3, $4, $7 }' "$tmp/$sys.log" >"$tmp/$sys.$r"
  [ -s "$tmp/$sys.$r" ] || { tail -20 "$tmp/$sys.log"; fail "$sys printed no RESULT rows"; }
}
pp=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include pp -x FI_PROVIDER_PATH="$build/ofi"
  -x PP_DEV=packet:pp0)
for ((r = 1; r <= rounds; r++)); do
  native "$r"
  ompi ompi-pp "$r" --bind-to none "${pp[@]}"
  ompi ompi-tcp "$r" --bind-to none --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include pp0
  ompi ompi-pp-default "$r" "${pp[@]}"
done

# median SYS TEST SIZE FIELD(3: us, 4: MB/s) over the rounds
median() {
  cat "$tmp/$1".[0-9]* | awk -v t="$2" -v s="$3" -v f="$4" '$1 == t && $2 == s { print $f }' |
    sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "nan" }'
}
printf '%-8s %8s  %10s %10s %10s %10s  %8s %8s %8s\n' test size native ompi-pp ompi-tcp pp-default \
  pp/nat pp/tcp dflt/pp
declare -A ratio
for t in latency window; do
  f=3
  [ $t = window ] && f=4
  for s in 65536 1048576; do
    n=$(median native $t $s $f) p=$(median ompi-pp $t $s $f) c=$(median ompi-tcp $t $s $f)
    d=$(median ompi-pp-default $t $s $f)
    # Ratios above 1 are better for ompi-pp (latency: the other / ompi-pp).
    read -r a b e < <(awk -v t=$t -v n="$n" -v p="$p" -v c="$c" -v d="$d" 'BEGIN {
      if (t == "latency") printf "%.2f %.2f %.2f\n", n / p, c / p, p / d
      else printf "%.2f %.2f %.2f\n", p / n, p / c, d / p }')
    printf '%-8s %8s  %10s %10s %10s %10s  %8s %8s %8s\n' $t $s "$n" "$p" "$c" "$d" "$a" "$b" "$e"
    ratio[$t.$s.nat]=$a ratio[$t.$s.dflt]=$e
  done
done
echo "# latency in us (one way), window in MB/s; medians of $rounds rounds; ratios: >1 is ompi-pp better"
bad=0
for t in latency window; do
  awk -v v="${ratio[$t.1048576.nat]}" 'BEGIN { exit !(v >= 0.8) }' ||
    echo "below the goal: 1 MiB $t: Open MPI over pp at ${ratio[$t.1048576.nat]} x native (< 0.8)"
  awk -v v="${ratio[$t.1048576.nat]}" 'BEGIN { exit !(v >= 0.5) }' ||
    { echo "FAIL: 1 MiB $t: Open MPI over pp at ${ratio[$t.1048576.nat]} x native (< 0.5)"; bad=1; }
  awk -v v="${ratio[$t.1048576.dflt]}" 'BEGIN { exit !(v >= 0.3) }' ||
    { echo "FAIL: 1 MiB $t: with mpirun's default binding ${ratio[$t.1048576.dflt]} x pinned (< 0.3)"; bad=1; }
done
[ $bad -eq 0 ] && echo "ok: Open MPI over pp holds against native librt-pp and its own pinned figures at 1 MiB"
exit $bad
