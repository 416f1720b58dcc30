#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The receive predictor on live MPI codes: each code runs under Open MPI
# over librt-pp (pml cm, mtl ofi, provider pp from the build), 2 ranks on 2
# nodes of the test bed (packet: ports; BT and SP 4, below), with
# predict=off and predict=hybrid in turn, and the run prints each code's
# time with both, hybrid / off (taken within each round; below 1 the
# predictor helped) and the predictor's hits / predictions and bytes
# staged, summed over the ranks (stats=text at finalize).
#   LAMMPS    Debian's lmp on its melt example (3d Lennard-Jones, 4000 atoms;
#             halo exchanges every step), --steps N steps (default 2000);
#             its "Loop time"
#   hpcc      Debian's HPC Challenge (HPL and PTRANS at N=500 on a 1 x 2
#             grid, RandomAccess, FFT, STREAM, DGEMM, b_eff); mpirun's time
#   is cg mg lu bt sp  the NAS Parallel Benchmarks' MPI codes, with --npb
#             DIR: DIR/is.C.x ... as NPB 3.4's `make is CLASS=C` leaves them
#             in its bin/ (C: --class, default W); their own "Time in
#             seconds", and their verification must say SUCCESSFUL. BT and
#             SP need a square number of ranks: 4, two on each node (each
#             on a port of its own, packet:pp0 and pp1)
# A code whose program is missing is left out, saying so
# (tests/bench/bench_deps.sh installs lammps, lammps-examples and hpcc;
# NPB is not packaged: its sources come from the NAS site).
#
#   tests/bench/predict_live.sh [--rounds R] [--steps N] [--config STR]
#                               [--npb DIR] [--class C] [--codes LIST]
#                               [--trace DIR] [--csv FILE] [--build DIR]
#
# --rounds R is 1..9 (default 3). --config passes more settings to every
# rank (key=value,...; e.g. progress=event: the engine runs while the code
# computes, which is what lets the predictor stage anything). --codes
# runs only those of the codes (comma-separated). --trace DIR writes each
# rank's receives in round 1 with predict=off to DIR/CODE.rRANK.csv
# (recv_trace=), which `pp_predict --trace` replays. --csv FILE
# writes code,predict,round,seconds,predictions,hits,bytes_staged. Needs
# root (the test bed), which is one per machine: run it under flock
# /tmp/testbed.lock.
set -euo pipefail
prog=predict_live.sh
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
rounds=3 md_steps=2000 config='' csv='' build=$root/build npb='' class=W only='' trace=
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help) sed -n '3,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --rounds) [[ ${2:-} =~ ^[1-9]$ ]] || bad "--rounds takes 1..9"; rounds=$2; shift 2 ;;
  --steps) posint "${2:-}" || bad "--steps takes a positive number"; md_steps=$2; shift 2 ;;
  --config) [[ ${2:-} =~ ^[a-z_]+=[^,]+(,[a-z_]+=[^,]+)*$ ]] || bad "--config takes key=value,..."; config=$2; shift 2 ;;
  --csv) [ -n "${2:-}" ] || bad "--csv takes a file"; csv=$2; shift 2 ;;
  --npb) [ -d "${2:-}" ] || bad "--npb takes a directory"; npb=$(cd "$2" && pwd); shift 2 ;;
  --class) [[ ${2:-} =~ ^[SWABC]$ ]] || bad "--class takes S, W, A, B or C"; class=$2; shift 2 ;;
  --codes) [[ ${2:-} =~ ^[a-z]+(,[a-z]+)*$ ]] || bad "--codes takes a comma-separated list"; only=,$2,; shift 2 ;;
  --trace) [ -n "${2:-}" ] || bad "--trace takes a directory"; mkdir -p "$2" && trace=$(cd "$2" && pwd) ||
      bad "cannot make $2"; shift 2 ;;
  --build) [ -n "${2:-}" ] || bad "--build takes a directory"; build=$2; shift 2 ;;
  *) bad "unknown argument '$1'" ;;
  esac
done
[ "$(id -u)" -eq 0 ] || die "needs root (the test bed)"
command -v mpirun >/dev/null || die "needs Open MPI's mpirun (tests/bench/bench_deps.sh)"
[ -f "$build/ofi/libpp-fi.so" ] || die "no $build/ofi/libpp-fi.so (meson -Dofi=enabled, then build)"
[ -z "$csv" ] || : >"$csv" || die "cannot write $csv"

codes=()
lmp_in=/usr/share/lammps/examples/melt/in.melt
if command -v lmp >/dev/null && [ -f "$lmp_in" ]; then codes+=(lammps); else log "lmp or $lmp_in missing: LAMMPS left out"; fi
hpcc_in=/usr/share/doc/hpcc/examples/_hpccinf.txt
if command -v hpcc >/dev/null && [ -f "$hpcc_in" ]; then codes+=(hpcc); else log "hpcc missing: left out"; fi
if [ -n "$npb" ]; then
  for c in is cg mg lu bt sp; do
    if [ -x "$npb/$c.$class.x" ]; then codes+=("$c"); else log "no $npb/$c.$class.x: NPB $c left out"; fi
  done
fi
if [ -n "$only" ]; then
  kept=()
  for c in "${codes[@]}"; do [[ $only == *,$c,* ]] && kept+=("$c"); done
  codes=("${kept[@]}")
fi
[ ${#codes[@]} -gt 0 ] || die "no code to run"

ip0=10.77.7.1 ip1=10.77.7.2 plen=24
tmp=$(mktemp -d)
cleanup() {
  ip -n ppn0 addr del "$ip0/$plen" dev pp0 2>/dev/null || true
  ip -n ppn1 addr del "$ip1/$plen" dev pp0 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# A signal too (meson's timeout, Ctrl-C): without it the EXIT trap does not
# run and the addresses given to the test bed's ports stay for the next job.
trap 'exit 130' INT TERM
# two ports a node when BT or SP runs (two ranks a node)
ports=1
[[ " ${codes[*]} " != *" bt "* && " ${codes[*]} " != *" sp "* ]] || ports=2
TESTBED_MTU=9000 "$root/tests/testbed.sh" up 2 $ports >/dev/null || die "testbed.sh up 2 $ports failed"
ip -n ppn0 addr add "$ip0/$plen" dev pp0 || die "cannot add $ip0 to ppn0 pp0 (another run?)"
ip -n ppn1 addr add "$ip1/$plen" dev pp0 || die "cannot add $ip1 to ppn1 pp0 (another run?)"
sed "s/^run.*/run $md_steps/" "$lmp_in" >"$tmp/in.melt"
# N=500 for HPL and PTRANS on a 1 x 2 grid, the example's other settings.
sed '6s/.*/500          Ns/; 11s/.*/1            Ps/; 12s/.*/2            Qs/' "$hpcc_in" >"$tmp/hpccinf.txt" 2>/dev/null || true
envs=(-x FI_PROVIDER_PATH="$build/ofi" -x PP_DEV=packet:pp0 -x PP_STATS=text)
IFS=, read -ra kvs <<<"$config"
for kv in "${kvs[@]}"; do
  k=${kv%%=*}
  envs+=(-x "PP_${k^^}=${kv#*=}")
done

# job CODE PREDICT ROUND: one run; prints "SECONDS PREDICTIONS HITS STAGED"
job() {
  local out=$tmp/$1.$2.$3.log t0 t1 secs
  local cmd=(lmp -in "$tmp/in.melt" -log none)
  case $1 in
  hpcc) cmd=(hpcc); rm -f "$tmp/hpccoutf.txt" ;;
  is | cg | mg | lu | bt | sp) cmd=("$npb/$1.$class.x") ;;
  esac
  # BT and SP: 4 ranks, two a node, each on the port its local rank names
  local np=2 hosts="$ip0,$ip1"
  case $1 in bt | sp) np=4 hosts="$ip0:2,$ip1:2" cmd=("$here/node_rank.sh" "${cmd[@]}") ;; esac
  local more=()
  [ -z "$trace" ] || [ "$2$3" != off0 ] || more=(-x "PP_RECV_TRACE=$trace/$1.r%r.csv")
  t0=$(date +%s%N)
  (cd "$tmp" && NETNS_AGENT_HOSTS="$ip0=ppn0=0 $ip1=ppn1=1" OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 600 ip netns exec ppn0 mpirun -np "$np" \
    --host "$hosts" --bind-to none --mca plm_rsh_agent "$here/netns_agent.sh" \
    --mca oob_tcp_if_include pp0 --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include pp \
    "${envs[@]}" "${more[@]}" -x PP_PREDICT="$2" "${cmd[@]}") >"$out" 2>&1 ||
    { tail -20 "$out" >&2; die "$1 with predict=$2 failed (round $3)"; }
  t1=$(date +%s%N)
  case $1 in
  lammps) secs=$(awk '/^Loop time of/ { print $4; exit }' "$out")
    [ -n "$secs" ] || { tail -20 "$out" >&2; die "lammps printed no loop time"; } ;;
  hpcc) grep -q '^Success=1$' "$tmp/hpccoutf.txt" 2>/dev/null ||
      { tail -20 "$out" >&2; die "hpcc did not succeed"; }
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') ;;
  *) grep -Eq '^ *Verification *= *SUCCESSFUL' "$out" ||
      { tail -20 "$out" >&2; die "NPB $1 did not verify"; }
    secs=$(awk '/^ *Time in seconds *=/ { print $NF; exit }' "$out")
    [ -n "$secs" ] || { tail -20 "$out" >&2; die "NPB $1 printed no time"; } ;;
  esac
  awk -v s="$secs" '/pp: stats: rank [0-9]+: pred_predictions / { p += $NF }
    /pp: stats: rank [0-9]+: pred_hits / { h += $NF }
    /pp: stats: rank [0-9]+: bytes_staged / { b += $NF }
    END { print s, p + 0, h + 0, b + 0 }' "$out"
}

declare -A secs pred hit staged
steps=$((rounds * 2 * ${#codes[@]}))
for ((r = 0; r < rounds; r++)); do
  for code in "${codes[@]}"; do
    order=(off hybrid)
    [ $((r % 2)) -eq 0 ] || order=(hybrid off)
    for p in "${order[@]}"; do
      step "round $((r + 1)): $code, predict=$p"
      read -r s np nh nb < <(job "$code" "$p" "$r")
      secs[$code $p $r]=$s
      pred[$code $p]=$((${pred[$code $p]:-0} + np))
      hit[$code $p]=$((${hit[$code $p]:-0} + nh))
      staged[$code $p]=$((${staged[$code $p]:-0} + nb))
      [ -z "$csv" ] || echo "$code,$p,$((r + 1)),$s,$np,$nh,$nb" >>"$csv"
    done
  done
done
step_clear
[ -z "$csv" ] || sed -i '1i code,predict,round,seconds,predictions,hits,bytes_staged' "$csv"

med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
spread() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f (%.2f-%.2f)\n", v[int((NR + 1) / 2)], v[1], v[NR]; else print "-" }'; }
echo "# Open MPI over librt-pp, 2 ranks on 2 nodes (BT, SP: 4, two a node), $rounds rounds${config:+, $config}: seconds (median)"
echo "# hybrid/off: taken within each round, median (lowest-highest); below 1 the predictor helped"
printf '%-8s %9s %9s  %-19s %-10s %s\n' code off hybrid hybrid/off hits/pred staged
for code in "${codes[@]}"; do
  o=$(for ((r = 0; r < rounds; r++)); do echo "${secs[$code off $r]}"; done | med)
  h=$(for ((r = 0; r < rounds; r++)); do echo "${secs[$code hybrid $r]}"; done | med)
  q=$(for ((r = 0; r < rounds; r++)); do ratio "${secs[$code hybrid $r]}" "${secs[$code off $r]}"; done | spread)
  hp=$(awk -v p="${pred[$code hybrid]}" -v h="${hit[$code hybrid]}" 'BEGIN { if (p) printf "%.3f", h / p; else print "-" }')
  printf '%-8s %9s %9s  %-19s %-10s %s\n' "$code" "$o" "$h" "$q" "$hp" "$(hsize "${staged[$code hybrid]}" | tr -d ' ')"
done
