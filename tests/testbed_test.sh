#!/usr/bin/env bash
# The test bed comes up (idempotently) and goes down cleanly, twice in a row,
# under its own prefix so it never disturbs a running test bed. Then what
# used to wedge it: processes holding the namespaces during `down`, `up` at
# once after it, and broken leftovers that `up` must repair (an interrupted
# `up`'s veth, a port renamed inside its node, an XDP program left by a
# killed AF_XDP process, which caps the MTU).
# usage: testbed_test.sh PATH/TO/testbed.sh
set -euo pipefail
tb=$1
if [ "$(id -u)" -ne 0 ]; then
  # Without root the script must refuse clearly, then this test is skipped.
  out=$("$tb" up 2 2>&1) && { echo "FAIL: up succeeded without root"; exit 1; }
  grep -q "must run as root" <<<"$out" || { echo "FAIL: unclear error: $out"; exit 1; }
  echo "SKIP: needs root"; exit 77
fi
export TESTBED_PREFIX=ppt
holders=()
fail() {
  echo "FAIL: $*"
  [ ${#holders[@]} -eq 0 ] || kill -9 "${holders[@]}" 2>/dev/null || true
  "$tb" down >/dev/null 2>&1 || true
  exit 1
}

# check NODES PORTS: every port up, right MAC, on the bridge, and the two
# ends of one veth pair (each end names the other's ifindex).
check() {
  local i j m h
  for ((i = 0; i < $1; i++)); do
    ip netns list | grep -qw "pptn$i" || fail "namespace pptn$i missing"
    for ((j = 0; j < $2; j++)); do
      m=$(ip -n "pptn$i" -o link show "pp$j") || fail "pptn$i/pp$j missing"
      grep -q "state UP\|LOWER_UP" <<<"$m" || fail "pptn$i/pp$j not up"
      grep -q "$("$tb" mac $i $j)" <<<"$m" || fail "pptn$i/pp$j wrong MAC"
      h=$(ip -o link show "pptn${i}p$j") || fail "pptn${i}p$j missing"
      grep -q "master pptbr0" <<<"$h" || fail "pptn${i}p$j not on bridge"
      grep -q "link-netns pptn$i\b" <<<"$h" || fail "pptn${i}p$j: peer not in pptn$i: $h"
      [ "${h%%:*}" = "$(sed -E 's/^[0-9]+: [^@]*@if([0-9]+):.*/\1/' <<<"$m")" ] &&
        [ "${m%%:*}" = "$(sed -E 's/^[0-9]+: [^@]*@if([0-9]+):.*/\1/' <<<"$h")" ] ||
        fail "pptn${i}p$j and pptn$i/pp$j are not one veth pair: $h / $m"
    done
  done
}

# gone: nothing of the test bed is left.
gone() {
  ! ip netns list | grep -q "pptn" || fail "namespaces left after down: $(ip netns list | grep pptn)"
  ! ip -o link show | grep -q ": ppt" || fail "links left after down: $(ip -br link | grep ppt)"
  "$tb" status >/dev/null && fail "status says up after down"
  return 0
}

"$tb" up 0 2>/dev/null && fail "up 0 accepted"
"$tb" up x 2>/dev/null && fail "up x accepted"

for round in 1 2; do
  "$tb" up 3 2
  "$tb" up 3 2 >/dev/null                  # idempotent
  check 3 2
  mountpoint -q /dev/hugepages || echo "notice: hugetlbfs not mounted"
  "$tb" status >/dev/null || fail "status says down"
  "$tb" down
  gone
  echo "round $round: ok"
done

# Processes holding the namespaces: one inside pptn0, one outside holding
# pptn1 open. The kernel keeps a held namespace, and its veth ends with it,
# after `ip netns del`; `down` must remove them itself and wait.
"$tb" up 2 2 >/dev/null
ip netns exec pptn0 sleep 60 &
holders+=($!)
(exec 3</run/netns/pptn1 && exec sleep 60) &
holders+=($!)
sleep 0.2
out=$("$tb" down) || fail "down with held namespaces: $out"
echo "$out"
grep -q "killed.* in pptn0" <<<"$out" || fail "down did not say it killed the process in pptn0"
grep -q "killed.* in pptn1" <<<"$out" || fail "down did not say it killed the holder of pptn1"
gone
wait "${holders[@]}" 2>/dev/null || true
holders=()
"$tb" up 2 2 || fail "up right after down"
check 2 2
echo "held namespaces: ok"

# Broken leftovers. pptn0p0 is the host end of a veth whose other end is
# still in the root namespace under the temporary name of an `up` that died;
# pptn0p1's peer is some other link of the root namespace; pptn1's pp1 was
# renamed, so pptn1p1's peer is no port of the test bed.
ip link del pptn0p0
ip link add pptt4194305 type veth peer name pptn0p0
ip link del pptn0p1
ip link add pptn0p1 type veth peer name junk0
ip -n pptn1 link set pp1 down
ip -n pptn1 link set pp1 name junk1
xdp_obj=$(ls /usr/lib/*/bpf/xsk_def_xdp_prog.o 2>/dev/null | head -1) || true
if [ -n "$xdp_obj" ]; then
  # As a killed AF_XDP process leaves it: attached, nobody using it.
  ip -n pptn1 link set dev pp0 xdp obj "$xdp_obj" sec xdp
else
  echo "notice: no xsk_def_xdp_prog.o (libxdp1): stale XDP program not checked"
fi
out=$(TESTBED_MTU=9000 "$tb" up 2 2) || fail "up did not repair the leftovers: $out"
echo "$out"
grep -q "repaired: removed pptt4194305 and its peer pptn0p0" <<<"$out" ||
  fail "the interrupted up's veth pair: not reported"
grep -q "repaired pptn0p1 (its peer junk0 is in the root namespace)" <<<"$out" ||
  fail "pptn0p1: not reported"
grep -q "repaired pptn1p1 " <<<"$out" || fail "pptn1p1: not reported"
! ip link show pptt4194305 >/dev/null 2>&1 || fail "pptt4194305 left"
! ip link show junk0 >/dev/null 2>&1 || fail "junk0 left"
! ip -n pptn1 link show junk1 >/dev/null 2>&1 || fail "pptn1/junk1 left"
check 2 2
if [ -n "$xdp_obj" ]; then
  grep -q "repaired pptn1/pp0 (detached XDP program" <<<"$out" || fail "stale XDP program: not reported"
  ip -n pptn1 -o link show pp0 | grep -q "mtu 9000" || fail "pptn1/pp0 not at MTU 9000"
fi
out=$("$tb" up 2 2) || fail "up after the repair: $out"
! grep -q repaired <<<"$out" || fail "a second up repaired again: $out"
# A second up of the same settings returns on its snapshot; anything it
# made, changed since, is made again: a port down, an address left on.
ip -n pptn0 link set pp1 down
"$tb" ipv4 on || fail "ipv4 on"
"$tb" up 2 2 >/dev/null || fail "up after a port went down"
ip -n pptn0 -o link show dev pp1 | grep -q "[<,]UP[,>]" || fail "up left pptn0/pp1 down"
[ -z "$(ip -n pptn1 -o -4 addr show dev pp0)" ] || fail "up left pptn1/pp0 its address"
# ARP: only pp0 answers for pp0's address. With pptn1/pp0 down, pptn0 gets
# no answer (pp1 would give its own MAC by default, and a peer would send
# there for good); with it up, pp0's MAC. A datagram to the discard port
# makes pptn0 ask.
"$tb" ipv4 on || fail "ipv4 on"
a1=$("$tb" addr 1 0)
ask() { ip netns exec pptn0 bash -c "echo x >/dev/udp/$a1/9" 2>/dev/null; sleep 1; ip -n pptn0 neigh show "$a1"; }
ip -n pptn1 link set pp0 down
n=$(ask)
grep -qi "$("$tb" mac 1 1)" <<<"$n" && fail "pptn0 learnt pptn1/pp1's MAC for $a1: $n"
grep -qi "lladdr" <<<"$n" && fail "pptn1/pp0 down, yet $a1 was answered: $n"
ip -n pptn1 link set pp0 up
# A carrier change takes effect through the kernel's link watch, up to a
# second later (the device's queue, its operstate, the bridge port's state):
# until then pp0's answer may be dropped. Wait for both ends to be up.
for _ in $(seq 50); do
  ip -n pptn1 -o link show pp0 | grep -q "state UP" &&
    bridge -o link show dev pptn1p0 | grep -q "state forwarding" && break
  sleep 0.1
done
ip -n pptn0 neigh flush all
n=$(ask)
grep -qi "$("$tb" mac 1 0)" <<<"$n" || fail "pptn0 did not learn pptn1/pp0's MAC for $a1: $n"
"$tb" ipv4 off
echo "arp: ok"
# From inside a node, up is refused and builds nothing there.
out=$(ip netns exec pptn0 "$tb" up 2 1 2>&1) && fail "up inside pptn0 accepted"
grep -q "not inside pptn0" <<<"$out" || fail "up inside pptn0: no reason given: $out"
! ip -n pptn0 link show pptbr0 >/dev/null 2>&1 || fail "up inside pptn0 made a bridge there"
"$tb" down >/dev/null
gone
echo "repairs: ok"
echo "PASS: testbed up/down twice, held namespaces, repairs, refused inside a node"
