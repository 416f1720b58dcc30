#!/usr/bin/env bash
# The test bed comes up (idempotently) and goes down cleanly, twice in a row,
# under its own prefix so it never disturbs a running test bed.
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
fail() { echo "FAIL: $*"; "$tb" down >/dev/null 2>&1 || true; exit 1; }

"$tb" up 0 2>/dev/null && fail "up 0 accepted"
"$tb" up x 2>/dev/null && fail "up x accepted"

for round in 1 2; do
  "$tb" up 3 2
  "$tb" up 3 2 >/dev/null                  # idempotent
  for i in 0 1 2; do
    ip netns list | grep -qw "pptn$i" || fail "namespace pptn$i missing"
    for j in 0 1; do
      m=$(ip -n "pptn$i" -o link show "pp$j") || fail "pptn$i/pp$j missing"
      grep -q "state UP\|LOWER_UP" <<<"$m" || fail "pptn$i/pp$j not up"
      grep -q "$("$tb" mac $i $j)" <<<"$m" || fail "pptn$i/pp$j wrong MAC"
      ip -o link show "pptn${i}p$j" | grep -q "master pptbr0" || fail "pptn${i}p$j not on bridge"
    done
  done
  mountpoint -q /dev/hugepages || echo "notice: hugetlbfs not mounted"
  "$tb" status >/dev/null || fail "status says down"
  "$tb" down
  ip netns list | grep -q "pptn" && fail "namespaces left after down"
  ip link show pptbr0 >/dev/null 2>&1 && fail "bridge left after down"
  "$tb" status >/dev/null && fail "status says up after down"
  echo "round $round: ok"
done
echo "PASS: testbed up/down twice"
