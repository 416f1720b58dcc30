#!/usr/bin/env bash
# The MPI door's guard: Open MPI over librt-pp (pml cm, mtl ofi, provider pp)
# beside native librt-pp and Open MPI over TCP, in one run on the test bed
# (ppn0 and ppn1, one rank each, port pp0 at MTU 9000, packet: ports), the
# same method on every side (tests/bench/mpi_pingpong.c is pp_pingpong's
# latency and window tests, its statistics compiled in). Printed: one-way
# latency and windowed bandwidth (W=64) at 64 KiB and 1 MiB, each the median
# of --rounds rounds taken in turn, and the ratios: each the median of the
# rounds' own ratios (the two sides of a round run back to back, so what the
# machine does between rounds cancels; the rounds' ratios are printed too).
#
#   native     pp_pingpong, push-pull (pprun: ranks on cores 0 and 1)
#   native-udp the same over packet: ports with frame=udp (pprun --frame
#              udp): runs of frames as one GSO message (issue 33)
#   ompi-pp    Open MPI over pp, ranks on cores 0 and 1
#   ompi-tcp   Open MPI, ob1 over the TCP BTL, ranks on cores 0 and 1
#   ompi-pp-default  Open MPI over pp as mpirun binds by default: each
#              namespace is a node of one rank, so both ranks get core 0
#
# Then two ranks on one node (ppn0, ports pp0 and pp1), at 8 B and 1 MiB:
#   node-native   pp_pingpong, pprun --nodes 1 (node segment)
#   node-ompi-pp  Open MPI over pp, --bind-to core (node segment: issue 31)
#   node-vader    Open MPI, ob1 over btl self,vader, --bind-to core
#
# It fails (exit 1) when at 1 MiB windowed native librt-pp over frame=udp
# falls below 1.1 x itself over raw frames (the GSO path lost: seen 1.26 to
# 2.1 in alternated runs on the test bed's veth at MTU 9000) or below 0.9 x
# Open MPI over TCP (the goal is 1.0; compare.sh read 1.31 and 1.49).
# It fails when Open MPI over pp falls below 0.8 x native at 1 MiB
# (windowed bandwidth, or latency: native / ompi-pp). Medians of figures
# taken apart gave 0.72 to 1.20 in three clean runs on a 2-core VM (a 0.8
# line on those failed on noise); the rounds' own ratios gave 0.79 to 1.15,
# their median 1.07, and the regressions the line guards against cost 4x and
# more. It also fails when with the default binding Open MPI over pp falls
# below 0.3 x its own pinned figure (two busy-polling ranks on one core that
# only meet at the end of time slices lose a factor of 30 or more; seen:
# 0.78 to 1.11). On one node it fails when Open MPI over pp falls below
# 0.3 x native at 8 B or 0.8 x at 1 MiB, latency or window (node-mates
# through their ports instead of the segment cost 10x and more, 0.04 x at
# 8 B; seen: 1 MiB 1.0 to 1.1, 8 B 0.66 to 0.75 before lite records and
# 0.41 to 0.63 since: they made native 8 B twice as fast in a window, and
# Open MPI over pp, whose mtl and CQ add about 100 ns a message, 1.4 x).
# It also fails when native librt-pp's 8-byte one-way latency on one node
# falls below 0.9 x vader's speed (1.39 with lite records and ring marks,
# 0.98 to 1.02 before them; a line at 1.1 failed a CI run whose rounds read
# 1.75, 1.42, 1.06, 1.06 and 1.08, the machine slowing between rounds: at
# 0.2 us both sides are mostly the cores' hand-over, so the ratio moves with
# the machine; what the line guards against, node-mates through their
# ports, is 0.04, and the engine's own cost has a deterministic line,
# tests/bench/engine_share.sh --max in the unit suite), and when Open MPI over pp at 8 B is
# below 0.5 x ob1+vader's speed one way (0.7 until the one-node rounds of
# 10 000 iterations read 0.50 to 0.96 in one CI run on a CPU where the
# ratio sits near 0.75: a line inside the spread; what it guards against,
# node-mates through their ports, is 0.04) or 0.25 x its windowed rate (two
# CI runs: 0.85 and 0.90 one way, 0.72 and 0.45 windowed: a window point
# of --iters 100 is a millisecond, and its rounds moved from 0.40 to 0.80;
# in runs of 20 000 iterations 0.93 to 0.97 and 0.85 to 0.88 with
# completions written in their CQ slot, 0.80 and 0.70 before). The one-node
# 8 B points run 100 x --iters iterations: at --iters alone (30 us of
# measurement) one machine's rounds read 0.45 to 0.79 x vader one way and
# its runs failed and passed by turns; at 10 000, 0.73 to 0.89 (Open MPI
# over pp; native 1.19 to 1.41). Exit 77 when it cannot run (not root, no
# Open MPI or provider).
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
# A signal too (meson's timeout, Ctrl-C): without it the EXIT trap does not
# run and the addresses given to the test bed's ports stay for the next job.
trap 'exit 130' INT TERM
mpicc -std=c11 -D_GNU_SOURCE -O2 -Wall -I"$root/apps/perf" -o "$tmp/mpi_pingpong" \
  "$here/mpi_pingpong.c" "$root/apps/perf/sizes.c" "$root/apps/perf/sample_stats.c" || fail "mpicc"
TESTBED_MTU=9000 "$root/tests/testbed.sh" up 2 2 >/dev/null || fail "testbed.sh up 2 2"
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
native_udp() { # ROUND
  "$build/apps/pprun" -n 2 --nodes 2 --frame udp --timeout 300 -- \
    "$build/apps/pp_pingpong" --test latency,window --window 64 --sizes "$sizes" \
    --iters "$iters" --mode push-pull --csv "$tmp/native-udp.csv" >"$tmp/native-udp.log" 2>&1 ||
    { tail -20 "$tmp/native-udp.log"; fail "native pp_pingpong over frame=udp"; }
  awk -F, 'NR > 1 { print $1, $6, $8, ($11 == "" ? "-" : $11) }' "$tmp/native-udp.csv" >"$tmp/native-udp.$1"
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
# One node: each rank on its own port (the port by local rank), both in ppn0
# (node_rank.sh). 8 B points run 100 x --iters (each a few ms: 100 of them
# at 0.3 us, 30 us in all, read 0.45 to 0.79 x vader round by round on one
# machine), 1 MiB points as many as --iters x 1 MiB allows (at least 10).
node_iters=(--iters $((iters * 100)) --max-bytes $((iters * 1048576)))
node_native() { # ROUND
  "$build/apps/pprun" -n 2 --nodes 1 --dev-kind packet --timeout 300 -- \
    "$build/apps/pp_pingpong" --test latency,window --window 64 --sizes 8,1m \
    "${node_iters[@]}" --mode push-pull --csv "$tmp/node-native.csv" >"$tmp/node-native.log" 2>&1 ||
    { tail -20 "$tmp/node-native.log"; fail "node-native pp_pingpong"; }
  awk -F, 'NR > 1 { print $1, $6, $8, ($11 == "" ? "-" : $11) }' "$tmp/node-native.csv" >"$tmp/node-native.$1"
}
node_ompi() { # SYS ROUND MPIRUN-ARGS...
  local sys=$1 r=$2
  shift 2
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 300 ip netns exec ppn0 \
    mpirun -np 2 --host localhost:2 --bind-to core "$@" "$here/node_rank.sh" "$tmp/mpi_pingpong" --test latency,window \
    --window 64 --sizes 8,1m "${node_iters[@]}" >"$tmp/$sys.log" 2>&1 ||
    { tail -20 "$tmp/$sys.log"; fail "mpirun ($sys)"; }
  awk '$1 == "RESULT" { print $2, $3, $4, $7 }' "$tmp/$sys.log" >"$tmp/$sys.$r"
  [ -s "$tmp/$sys.$r" ] || { tail -20 "$tmp/$sys.log"; fail "$sys printed no RESULT rows"; }
}
for ((r = 1; r <= rounds; r++)); do
  native "$r"
  native_udp "$r"
  ompi ompi-pp "$r" --bind-to none "${pp[@]}"
  ompi ompi-tcp "$r" --bind-to none --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include pp0
  ompi ompi-pp-default "$r" "${pp[@]}"
  node_native "$r"
  node_ompi node-ompi-pp "$r" --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include pp \
    -x FI_PROVIDER_PATH="$build/ofi"
  node_ompi node-vader "$r" --mca pml ob1 --mca btl self,vader
done

# value SYS ROUND TEST SIZE FIELD(3: us, 4: MB/s): one round's figure
value() {
  awk -v t="$3" -v s="$4" -v f="$5" '$1 == t && $2 == s { print $f; exit }' "$tmp/$1.$2"
}
# median of its arguments
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "nan" }'; }
# ratio TEST A B: how A compares with B, above 1 when A is better (latency: B / A)
ratio() { awk -v t="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.2f\n", t == "latency" ? b / a : a / b }'; }
printf '%-8s %8s  %10s %10s %10s %10s  %8s %8s %8s\n' test size native ompi-pp ompi-tcp pp-default \
  pp/nat pp/tcp dflt/pp
declare -A ratio
for t in latency window; do
  f=3
  [ $t = window ] && f=4
  for s in 65536 1048576; do
    # Figures: medians over the rounds. Ratios: medians of each round's
    # own ratio, the two sides taken back to back, so that what the
    # machine did between rounds cancels.
    fn=() fp=() fc=() fd=() rn=() rc=() rd=()
    for ((r = 1; r <= rounds; r++)); do
      n=$(value native $r $t $s $f) p=$(value ompi-pp $r $t $s $f)
      c=$(value ompi-tcp $r $t $s $f) d=$(value ompi-pp-default $r $t $s $f)
      fn+=("$n") fp+=("$p") fc+=("$c") fd+=("$d")
      rn+=("$(ratio $t "$p" "$n")") rc+=("$(ratio $t "$p" "$c")") rd+=("$(ratio $t "$d" "$p")")
    done
    a=$(median "${rn[@]}") b=$(median "${rc[@]}") e=$(median "${rd[@]}")
    printf '%-8s %8s  %10s %10s %10s %10s  %8s %8s %8s\n' $t $s "$(median "${fn[@]}")" \
      "$(median "${fp[@]}")" "$(median "${fc[@]}")" "$(median "${fd[@]}")" "$a" "$b" "$e"
    echo "#   $t $s pp/nat by round: ${rn[*]}"
    ratio[$t.$s.nat]=$a ratio[$t.$s.dflt]=$e
  done
done
echo "# latency in us (one way), window in MB/s; medians of $rounds rounds; ratios: medians of the rounds' own, >1 is ompi-pp better"
echo
echo "# native librt-pp over packet: ports with frame=udp (GSO), beside raw frames and Open MPI over TCP"
printf '%-8s %8s  %10s %10s %10s  %8s %8s\n' test size udp eth ompi-tcp udp/eth udp/tcp
for t in latency window; do
  f=3
  [ $t = window ] && f=4
  for s in 65536 1048576; do
    fu=() fe=() fc=() re=() rc=()
    for ((r = 1; r <= rounds; r++)); do
      u=$(value native-udp $r $t $s $f) e=$(value native $r $t $s $f) c=$(value ompi-tcp $r $t $s $f)
      fu+=("$u") fe+=("$e") fc+=("$c")
      re+=("$(ratio $t "$u" "$e")") rc+=("$(ratio $t "$u" "$c")")
    done
    a=$(median "${re[@]}") b=$(median "${rc[@]}")
    printf '%-8s %8s  %10s %10s %10s  %8s %8s\n' $t $s "$(median "${fu[@]}")" \
      "$(median "${fe[@]}")" "$(median "${fc[@]}")" "$a" "$b"
    echo "#   $t $s udp/eth by round: ${re[*]}; udp/tcp: ${rc[*]}"
    ratio[udp.$t.$s]=$a ratio[udptcp.$t.$s]=$b
  done
done
echo
echo "# two ranks on one node"
printf '%-8s %8s  %10s %10s %10s  %8s %8s %9s\n' test size native ompi-pp vader pp/nat pp/vader nat/vader
for t in latency window; do
  f=3
  [ $t = window ] && f=4
  for s in 8 1048576; do
    fn=() fp=() fv=() rn=() rv=() rx=()
    for ((r = 1; r <= rounds; r++)); do
      n=$(value node-native $r $t $s $f) p=$(value node-ompi-pp $r $t $s $f)
      v=$(value node-vader $r $t $s $f)
      fn+=("$n") fp+=("$p") fv+=("$v")
      rn+=("$(ratio $t "$p" "$n")") rv+=("$(ratio $t "$p" "$v")") rx+=("$(ratio $t "$n" "$v")")
    done
    a=$(median "${rn[@]}") b=$(median "${rv[@]}") x=$(median "${rx[@]}")
    printf '%-8s %8s  %10s %10s %10s  %8s %8s %9s\n' $t $s "$(median "${fn[@]}")" \
      "$(median "${fp[@]}")" "$(median "${fv[@]}")" "$a" "$b" "$x"
    echo "#   $t $s pp/nat by round: ${rn[*]}; pp/vader: ${rv[*]}; nat/vader: ${rx[*]}"
    ratio[node.$t.$s]=$a ratio[nodepv.$t.$s]=$b ratio[nodev.$t.$s]=$x
  done
done
bad=0
awk -v v="${ratio[udp.window.1048576]}" 'BEGIN { exit !(v >= 1.1) }' ||
  { echo "FAIL: 1 MiB window: frame=udp at ${ratio[udp.window.1048576]} x raw frames (< 1.1)"; bad=1; }
awk -v v="${ratio[udptcp.window.1048576]}" 'BEGIN { exit !(v >= 0.9) }' ||
  { echo "FAIL: 1 MiB window: frame=udp at ${ratio[udptcp.window.1048576]} x Open MPI over TCP (< 0.9)"; bad=1; }
for t in latency window; do
  awk -v v="${ratio[$t.1048576.nat]}" 'BEGIN { exit !(v >= 0.8) }' ||
    { echo "FAIL: 1 MiB $t: Open MPI over pp at ${ratio[$t.1048576.nat]} x native (< 0.8)"; bad=1; }
  awk -v v="${ratio[$t.1048576.dflt]}" 'BEGIN { exit !(v >= 0.3) }' ||
    { echo "FAIL: 1 MiB $t: with mpirun's default binding ${ratio[$t.1048576.dflt]} x pinned (< 0.3)"; bad=1; }
done
for t in latency window; do
  for s in 8 1048576; do
    line=0.8
    [ $s = 8 ] && line=0.3
    awk -v v="${ratio[node.$t.$s]}" -v l=$line 'BEGIN { exit !(v >= l) }' ||
      { echo "FAIL: one node, $s B $t: Open MPI over pp at ${ratio[node.$t.$s]} x native (< $line)"; bad=1; }
  done
done
# Open MPI over pp against ob1+vader at 8 B, what an MPI user of one node
# sees first.
for t in latency window; do
  line=0.5
  [ $t = window ] && line=0.25
  awk -v v="${ratio[nodepv.$t.8]}" -v l=$line 'BEGIN { exit !(v >= l) }' ||
    { echo "FAIL: one node, 8 B $t: Open MPI over pp at ${ratio[nodepv.$t.8]} x ob1+vader (< $line)"; bad=1; }
done
# Native librt-pp against vader, 8 B one way: the node path's headline.
awk -v v="${ratio[nodev.latency.8]}" 'BEGIN { exit !(v >= 0.9) }' ||
  { echo "FAIL: one node, 8 B latency: native librt-pp at ${ratio[nodev.latency.8]} x vader's speed (< 0.9)"; bad=1; }
[ $bad -eq 0 ] && echo "ok: frame=udp holds its GSO gain and Open MPI's TCP at 1 MiB; Open MPI over pp holds against native librt-pp and its own pinned figures at 1 MiB, and on one node against native and vader; native holds against vader at 8 B"
exit $bad
