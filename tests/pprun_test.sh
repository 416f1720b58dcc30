#!/usr/bin/env bash
# pprun: placement in blocks, PP_* settings, output prefixes, exit status of
# the first failing rank, timeout. usage: pprun_test.sh PPRUN TESTBED_SH
set -euo pipefail
pprun=$1 tb=$2
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
out=$(mktemp); trap 'rm -f "$out"' EXIT

# 5 ranks on 2 nodes: ranks 0-2 on ppn0 (ports pp0-pp2), 3-4 on ppn1.
"$pprun" -n 5 --nodes 2 --testbed "$tb" --mode push-all --btp1 16 -- \
  sh -c 'echo "r=$PP_RANK s=$PP_SIZE n=$PP_NODE d=$PP_DEV m=$PP_MODE b=$PP_BTP1 j=$PP_JOB"; \
         p=${PP_DEV#packet:}; ip -o link show "${p%%,*}" >/dev/null && echo port-ok' > "$out"
# As root the default kind is packet: (the fastest on the test bed), framing
# in UDP on each port's address.
udp=",frame=udp,link=raw,addr="
for want in "[0] r=0 s=5 n=ppn0 d=packet:pp0${udp}10.78.0.1,port=50000,peerfile=" \
            "[2] r=2 s=5 n=ppn0 d=packet:pp2${udp}10.78.0.3," \
            "[3] r=3 s=5 n=ppn1 d=packet:pp0${udp}10.78.1.1," \
            "[4] r=4 s=5 n=ppn1 d=packet:pp1${udp}10.78.1.2,"; do
  grep -qF -- "$want" "$out" || { cat "$out"; fail "missing line: $want"; }
done
[ "$(grep -c port-ok "$out")" -eq 5 ] || fail "a rank does not see its port"
grep -q "m=push-all b=16" "$out" || { cat "$out"; fail "PP_MODE or PP_BTP1"; }
# --frame eth: packet: frames in Ethernet.
"$pprun" -n 2 --frame eth --testbed "$tb" -- sh -c 'echo "$PP_DEV"' | grep -qx '\[1\] packet:pp0' ||
  fail "--frame eth device string"
[ "$(grep -o 'j=[0-9]*' "$out" | sort -u | wc -l)" -eq 1 ] || fail "ranks got different job keys"

"$pprun" -n 2 --dev-kind af_packet --testbed "$tb" -- sh -c 'echo "$PP_DEV"' |
  grep -qx '\[1\] --vdev=net_af_packet0,iface=pp0' || fail "af_packet device string"
# --frame udp is refused on af_xdp, saying why (driver/README.md).
rc=0
"$pprun" -n 2 --dev-kind af_xdp --frame udp --testbed "$tb" -- true 2>"$out" || rc=$?
[ "$rc" -eq 2 ] && grep -q "not af_xdp, whose XDP program takes the kernel's ARP" "$out" ||
  { cat "$out"; fail "--frame udp with af_xdp: status $rc"; }
# udp as root: the test bed's nodes, one rank each on pp0's address
# (testbed.sh addr), given for the job only, and every rank's in a peer file
# pprun removes at the end.
"$pprun" -n 2 --dev-kind udp --testbed "$tb" -- \
  sh -c 'echo "$PP_NODE $PP_DEV"; cat "${PP_DEV##*peerfile=}"; ip -4 -o addr show dev pp0' > "$out"
for want in "[0] ppn0 udp:10.78.0.1:50000,peerfile=" "[1] ppn1 udp:10.78.1.1:50000,peerfile=" \
            "[0] 10.78.1.1:50000" "inet 10.78.1.1/16"; do
  grep -qF -- "$want" "$out" || { cat "$out"; fail "udp on the test bed: missing $want"; }
done
[ "$(grep -c '^\[1\] 10\.78\.' "$out")" -eq 2 ] || { cat "$out"; fail "udp peer file: want 2 lines"; }
pf=$(sed -n 's/^\[0\] ppn0 udp:.*peerfile=//p' "$out")
[ -n "$pf" ] && [ ! -e "$pf" ] || fail "peer file '$pf' left behind"
[ "$("$tb" addr 1 0)" = 10.78.1.1 ] || fail "testbed.sh addr 1 0"
[ -z "$(ip -n ppn1 -4 -o addr show dev pp0)" ] || fail "ppn1's pp0 kept its address after the job"
# Two ranks on a node: each on its own port's address.
"$pprun" -n 3 --nodes 2 --dev-kind udp --testbed "$tb" -- sh -c 'echo "$PP_DEV"' >"$out" 2>&1 ||
  { cat "$out"; fail "udp, 2 ranks on a node"; }
grep -q '^\[1\] udp:10\.78\.0\.2:50000,' "$out" || { cat "$out"; fail "udp: rank 1 not on ppn0/pp1's address"; }
[ -z "$(ip -n ppn0 -4 -o addr show dev pp1)" ] || fail "ppn0's pp1 kept its address after the job"
"$pprun" -n 2 --dev-kind pcap --testbed "$tb" -- sh -c 'echo "$PP_DEV"' | grep -qx '\[1\] pcap:pp0' ||
  fail "pcap device string"
# packet: our own AF_PACKET rings, on jumbo links like af_packet.
"$pprun" -n 2 --dev-kind packet --testbed "$tb" -- \
  sh -c 'echo "$PP_DEV $(ip -o link show "${PP_DEV#packet:}" | grep -o "mtu [0-9]*")"' |
  grep -qx '\[1\] packet:pp0 mtu 9000' || fail "packet device string or MTU"
rc=0
"$pprun" -n 1 --dev-kind bogus --testbed "$tb" -- true >"$out" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "af_packet, packet, af_xdp, pcap or udp" "$out" || fail "unknown --dev-kind"

# The first failure is the job's status, and the others are stopped.
set +e
"$pprun" -n 2 --testbed "$tb" -- sh -c '[ "$PP_RANK" = 1 ] && exit 7; sleep 30' 2>/dev/null
rc=$?
[ $rc -eq 7 ] || fail "exit status $rc, want 7"
start=$SECONDS
"$pprun" -n 2 --timeout 1 --testbed "$tb" -- sleep 30 2>/dev/null
rc=$?
[ $rc -eq 124 ] || fail "timeout status $rc, want 124"
[ $((SECONDS - start)) -lt 10 ] || fail "timeout did not stop the job"
# SIGTERM to pprun reaches the ranks: none is left running.
"$pprun" -n 2 --testbed "$tb" -- sleep 300 2>/dev/null &
pp=$!
sleep 1
kill -TERM $pp
wait $pp
rc=$?
[ $rc -eq 143 ] || fail "pprun status after SIGTERM $rc, want 143"
sleep 0.5
pgrep -x "sleep" -a | grep -q "sleep 300" && fail "ranks left running after SIGTERM"
"$pprun" --nodes 2 -- true 2>/dev/null; [ $? -eq 2 ] || fail "missing -n accepted"
"$pprun" -n 2 --dev-kind tap -- true 2>/dev/null; [ $? -eq 2 ] || fail "bad --dev-kind accepted"
set -e
echo "PASS: pprun"
