#!/usr/bin/env bash
# The runtime over udp: ports, as an unprivileged user (nobody when started
# as root), on 127.0.0.1: no test bed, no namespaces, no capability.
#   runtime_udp.sh PPRUN PP_PINGPONG EXAMPLE_BIN
# 0. pprun's device strings for udp, --daemon refused with it, and udp the
#    kind pprun chooses when not root.
# 1. pprun --dev-kind udp: pp_pingpong --check in every mode, sizes at the
#    protocol's and the port's edges (BTP1, BTP1+BTP2, a frame's payload at
#    the udp port's MTU), 0 B to 1 MiB.
# 2. The early and late receiver tests (pp_pingpong --test early,late).
# 3. 5 % of what every port receives lost (--fault): go-back-N repairs it.
# 4. The example program with 4 ranks on 2 nodes: HELLO broadcasts reach
#    every rank through the peer list, node mates talk through shared memory.
set -uo pipefail
pprun=$(realpath "$1") pingpong=$(realpath "$2") example=$(realpath "$3")
fail() { echo "FAIL: $*"; exit 1; }

as=()
if [ "$(id -u)" -eq 0 ]; then
  as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  "${as[@]}" test -x "$pprun" -a -x "$pingpong" -a -x "$example" ||
    { echo "SKIP: user nobody cannot run the build's programs"; exit 77; }
fi
uid=$("${as[@]}" id -u)
[ "$uid" -ne 0 ] || fail "not running unprivileged"
cd /tmp || fail "no /tmp"
run() { "${as[@]}" timeout 150 "$pprun" --timeout 120 "$@"; }

# The device strings: consecutive UDP ports, every rank's in the peer list;
# --nodes names nodes; --daemon is refused.
out=$(run -n 3 --nodes 2 --dev-kind udp -- sh -c 'echo "$PP_NODE $PP_DEV"' 2>&1) ||
  { echo "$out"; fail "pprun --dev-kind udp"; }
base=$(sed -n 's/^\[0\] udp0 udp:127\.0\.0\.1:\([0-9]*\),.*/\1/p' <<<"$out")
[ -n "$base" ] || { echo "$out"; fail "rank 0's device string"; }
for r in 0 1 2; do
  node=udp$((r < 2 ? 0 : 1))
  want="[$r] $node udp:127.0.0.1:$((base + r)),peers=127.0.0.1:$base-$((base + 2))"
  grep -qxF -- "$want" <<<"$out" || { echo "$out"; fail "missing line: $want"; }
done
rc=0
out=$(run -n 2 --dev-kind udp --daemon -- true 2>&1) || rc=$?
[ $rc -eq 2 ] && grep -q "not with --dev-kind udp" <<<"$out" || { echo "$out"; fail "--daemon"; }
# Without --dev-kind and without root, pprun gives udp: ports and says so.
out=$(run -n 2 -- sh -c 'echo "$PP_DEV"' 2>&1) || { echo "$out"; fail "pprun without --dev-kind"; }
grep -q "^pprun: not root: the ranks use udp: ports" <<<"$out" &&
  grep -q '^\[1\] udp:127\.0\.0\.1:' <<<"$out" || { echo "$out"; fail "the default kind unprivileged"; }
echo "ok: device strings, and --daemon refused, udp the default without root"

# A frame at the port's MTU: lo's 65536 is capped at a 9000-byte datagram,
# 8958 bytes after the Ethernet header, 8882 of payload after the 76-byte
# pp header.
sizes=0,1,79,80,81,759,760,761,8881,8882,8883,65539,1m
for mode in push-pull push-all push-zero; do
  out=$(run -n 2 --dev-kind udp -- "$pingpong" --test latency --mode "$mode" --sizes "$sizes" \
    --iters 5 --warmup 1 --check 2>&1) || { echo "$out"; fail "pp_pingpong $mode over udp"; }
  rows=$(grep -c "^\[0\] latency" <<<"$out")
  [ "$rows" -eq 13 ] || { echo "$out"; fail "$mode: $rows result rows, want 13"; }
  echo "ok: $mode as uid $uid, 13 sizes, every byte checked"
done

out=$(run -n 2 --dev-kind udp -- "$pingpong" --test early,late --sizes 16,4k,64k --iters 20 \
  --warmup 2 --check 2>&1) || { echo "$out"; fail "early/late receiver over udp"; }
for t in early late; do
  rows=$(grep -c "^\[0\] $t " <<<"$out")
  [ "$rows" -eq 3 ] || { echo "$out"; fail "$t: $rows result rows, want 3"; }
done
echo "ok: early and late receivers, 3 sizes each, every byte checked"

out=$(run -n 2 --dev-kind udp --fault loss=0.05 -- "$pingpong" --sizes 0,1500,64k,1m \
  --iters 10 --warmup 1 --check 2>&1) || { echo "$out"; fail "5 % loss over udp"; }
[ "$(grep -c "^\[0\] latency" <<<"$out")" -eq 4 ] || { echo "$out"; fail "lossy rows"; }
echo "ok: 5 % loss on receive repaired, every byte checked"

out=$(run -n 4 --nodes 2 --dev-kind udp -- "$example" 2>&1) ||
  { echo "$out"; fail "example with 4 ranks"; }
for r in 1 2 3; do
  grep -q "^\[$r\] rank $r got \"hello from rank 0 of 4\"" <<<"$out" ||
    { echo "$out"; fail "rank $r"; }
done
echo "ok: example, 4 ranks on 2 nodes"
echo "PASS: runtime over udp as uid $uid"
