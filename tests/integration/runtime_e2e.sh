#!/usr/bin/env bash
# The runtime end to end over the test bed: real processes in namespaces,
# each rank on its own port, launched by pprun (udp: on the ports' IPv4
# addresses).
#   runtime_e2e.sh PPRUN PP_PINGPONG EXAMPLE_BIN DEV_KIND
# 1. pp_pingpong --check in every mode, sizes 0 B .. 16 MiB + 3 at the
#    protocol's edges (BTP1, BTP1+BTP2, MTU, ...), both directions.
# 1b. pp_pingpong --test window --check in every mode: 16 messages in flight,
#    each with a buffer and a byte pattern of its own, the same edges.
# 2. The example program with 4 ranks on 2 nodes (rank 0 to every rank).
# 1c. The main job (tests/main_job.sh: the paper's early- and late-receiver
#    tests, every mode, 16 B .. 64 KiB, every byte checked), 5 iterations
#    (fewer than the warm-up's 10).
# 3. Ranks of two jobs with different keys on one segment do not meet:
#    a 2-rank job whose second rank belongs to another job times out.
# DEV_KIND is a pprun --dev-kind, or KIND-udp for that kind with --frame
# udp (packet-udp, af_packet-udp); those run 1 to 2 (3's device strings
# are raw frames'; runtime_check_KIND-udp runs the rest over them).
set -uo pipefail
pprun=$1 pingpong=$2 example=$3 kind=$4
case $kind in
  *-udp) kargs=(--dev-kind "${kind%-udp}" --frame udp) ;;
  *) kargs=(--dev-kind "$kind") ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
sizes=0,1,79,80,81,759,760,761,1440,1441,4096,65539,1m,16777219

for mode in push-pull push-all push-zero; do
  out=$("$pprun" -n 2 --nodes 2 "${kargs[@]}" --timeout 120 -- \
    "$pingpong" --test latency --mode "$mode" --sizes "$sizes" --iters 3 --warmup 1 --check 2>&1) ||
    { echo "$out"; fail "pp_pingpong $mode over $kind"; }
  rows=$(grep -c "^\[0\] latency" <<<"$out")
  [ "$rows" -eq 14 ] || { echo "$out"; fail "$mode: $rows result rows, want 14"; }
  echo "ok: $mode, 14 sizes, every byte checked"
done

wsizes=0,1,80,761,1441,65539,1m
for mode in push-pull push-all push-zero; do
  out=$("$pprun" -n 2 --nodes 2 "${kargs[@]}" --timeout 120 -- \
    "$pingpong" --test window --window 16 --mode "$mode" --sizes "$wsizes" --iters 3 --warmup 1 \
    --check 2>&1) || { echo "$out"; fail "pp_pingpong --test window $mode over $kind"; }
  rows=$(grep -c "^\[0\] window" <<<"$out")
  [ "$rows" -eq 7 ] || { echo "$out"; fail "window $mode: $rows result rows, want 7"; }
  echo "ok: window $mode, 16 in flight, 7 sizes, every byte checked"
done

# One job a mode: af_xdp's ports do not open twice in one process (DPDK
# 22.11), which pp_pingpong --mode all would ask.
for mode in push-pull push-all push-zero; do
  out=$("$pprun" -n 2 --nodes 2 "${kargs[@]}" --timeout 120 -- \
    "$pingpong" --test early,late --mode $mode --sizes 16:64k:x4 --iters 5 --check 2>&1) ||
    { echo "$out"; fail "the main job over $kind, $mode"; }
  rows=$(grep -cE "^\[0\] (early|late) " <<<"$out")
  [ "$rows" -eq 14 ] || { echo "$out"; fail "main job, $mode: $rows result rows, want 14"; }
done
echo "ok: the main job (early and late, every mode, 7 sizes, every byte checked)"

nodes=2
out=$("$pprun" -n 4 --nodes $nodes "${kargs[@]}" --timeout 60 -- "$example" 2>&1) ||
  { echo "$out"; fail "example with 4 ranks"; }
for r in 1 2 3; do
  grep -q "^\[$r\] rank $r got \"hello from rank 0 of 4\"" <<<"$out" || { echo "$out"; fail "rank $r"; }
done
echo "ok: example, 4 ranks on $nodes nodes"
case $kind in *-udp) echo "PASS: runtime over $kind"; exit 0 ;; esac

# Different job keys: each rank waits for a partner that never answers.
tb=$(dirname "$pprun")/../../tests/testbed.sh
case $kind in
  pcap | packet) dev0=$kind:pp0 dev1=$dev0 ;;
  udp) # the test bed's addresses (testbed.sh addr), given as pprun does
    "$tb" ipv4 on || fail "testbed.sh ipv4 on"
    trap '"$tb" ipv4 off' EXIT
    peers=10.78.0.1:50000+10.78.1.1:50000
    dev0=udp:10.78.0.1:50000,peers=$peers dev1=udp:10.78.1.1:50000,peers=$peers ;;
  *) dev0=--vdev=net_${kind}0,iface=pp0 dev1=$dev0 ;;
esac
start=$SECONDS
ip netns exec ppn0 env PP_RANK=0 PP_SIZE=2 PP_JOB=111 PP_DEV="$dev0" PP_TIMEOUT_MS=1500 \
  taskset -c 0 "$example" > /tmp/pp-job-a.log 2>&1 &
a=$!
ip netns exec ppn1 env PP_RANK=1 PP_SIZE=2 PP_JOB=222 PP_DEV="$dev1" PP_TIMEOUT_MS=1500 \
  taskset -c 1 "$example" > /tmp/pp-job-b.log 2>&1
b=$?
wait $a; a=$?
[ $a -ne 0 ] && [ $b -ne 0 ] || fail "ranks of different jobs met (status $a, $b)"
grep -q "no HELLO from rank(s) 1" /tmp/pp-job-a.log || { cat /tmp/pp-job-a.log; fail "rank 0 error"; }
grep -q "timed out" /tmp/pp-job-b.log || { cat /tmp/pp-job-b.log; fail "rank 1 error"; }
[ $((SECONDS - start)) -lt 20 ] || fail "job-key timeout took too long"
echo "ok: different job keys do not meet, and the missing rank is named"
echo "PASS: runtime over $kind"
