#!/usr/bin/env bash
# pp_probe --blast over the test bed: ppn0 sends MTU-sized frames over DPDK
# af_packet for a second as fast as its port takes them, ppn1 counts and
# checks every byte; both print their rates, the listener's report reaches
# the sender, nothing arrives corrupt, no more arrives than was sent.
# usage: probe_blast.sh PP_PROBE TESTBED_SH
set -uo pipefail
probe=$1 testbed=$2
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d /tmp/pp-blast-test.XXXXXX)
lpid=
cleanup() {
  [ -z "$lpid" ] || { kill "$lpid" 2>/dev/null; wait "$lpid" 2>/dev/null; }
  rm -rf "$tmp"
}
trap cleanup EXIT

"$testbed" up 2 >/dev/null || fail "testbed.sh up 2"
peer=$("$testbed" mac 1 0)
dev=--vdev=net_af_packet0,iface=pp0
ip netns exec ppn1 taskset -c 1 "$probe" --dev "$dev" --listen --blast --check \
  --wait-ms 30000 >"$tmp/listen.out" 2>&1 &
lpid=$!
for _ in $(seq 100); do
  grep -q '^listening' "$tmp/listen.out" && break
  kill -0 "$lpid" 2>/dev/null || break
  sleep 0.1
done
rc=0
ip netns exec ppn0 taskset -c 0 timeout 60 "$probe" --dev "$dev" --peer "$peer" --blast \
  --size mtu --duration-ms 1000 >"$tmp/send.out" 2>&1 || rc=$?
lrc=0
wait "$lpid" || lrc=$?
lpid=
echo "--- sender"; cat "$tmp/send.out"
echo "--- listener"; cat "$tmp/listen.out"
[ $rc -eq 0 ] || fail "sender exited $rc"
[ $lrc -eq 0 ] || fail "listener exited $lrc"
# field LINE KEY: the value after KEY on the line starting with LINE.
field() { awk -v l="$2" -v k="$3" '$1 == l { for (i = 2; i < NF; i++) if ($i == k) print $(i + 1) }' "$1"; }
mtu=$(awk '$1 == "mtu" { print $2 }' "$tmp/send.out")
sent=$(field "$tmp/send.out" blast_tx frames)
got=$(field "$tmp/send.out" blast_rx frames)
[ "$(field "$tmp/send.out" blast_tx frame_bytes)" = $((mtu + 14)) ] || fail "frames not MTU-sized ($mtu)"
[ -n "$sent" ] && [ "$sent" -gt 0 ] || fail "nothing sent"
[ -n "$got" ] && [ "$got" -gt 0 ] && [ "$got" -le "$sent" ] || fail "received $got of $sent"
[ "$(field "$tmp/listen.out" blast_rx frames)" = "$got" ] || fail "the report differs from the listener's count"
[ "$(field "$tmp/send.out" blast_rx bad_payload)" = 0 ] || fail "bad payload"
awk '$1 == "blast_rx" { for (i = 2; i < NF; i++) if ($i == "payload_MBps" && $(i + 1) > 0) ok = 1 } END { exit !ok }' \
  "$tmp/send.out" || fail "no rate"
echo "PASS: blast, $got of $sent frames of $((mtu + 14)) B"
