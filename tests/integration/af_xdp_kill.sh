#!/usr/bin/env bash
# AF_XDP after a crash: pp_probe processes on net_af_xdp ports killed with
# SIGKILL mid-run, and new ones at once on the same ports, with no rebuild of
# the test bed in between:
#
#   af_xdp_kill.sh PP_PROBE TESTBED_SH
#
# 1. A listener (ppn1) and a sender (ppn0) are killed while frames flow. The
#    XDP program libxdp attached for the listener stays on ppn1's pp0 (shown).
# 2. At once a new pair binds the same ports and passes a --check run; the
#    listener's driver says it detached the dead process's program, and when
#    both have exited no XDP program is left on either port.
# 3. Killed again mid-run, then `testbed.sh down && testbed.sh up 2` at once,
#    and a --check run over the rebuilt bed.
set -euo pipefail
probe=$1 testbed=$2
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
dev=--vdev=net_af_xdp0,iface=pp0,start_queue=0,queue_count=1
count=${PP_PROBE_COUNT:-500}
tmp=$(mktemp -d)
pids=()
cleanup() {
  [ ${#pids[@]} -eq 0 ] || kill -9 "${pids[@]}" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
xdp_prog() { ip -n "$1" -o link show pp0 | sed -nE 's/.* prog\/xdp[a-z]* (id [0-9]+ name [^ ]+).*/\1/p'; }

# wait_for FILE PATTERN PID: until FILE has a line matching PATTERN (10 s).
wait_for() {
  for _ in $(seq 100); do
    grep -q "$2" "$1" && return 0
    kill -0 "$3" 2>/dev/null || break
    sleep 0.1
  done
  cat "$1"
  fail "no '$2' from pid $3"
}

# crash NAME: a listener in ppn1 and a sender in ppn0, SIGKILLed mid-run.
crash() {
  local l=$tmp/$1.listen s=$tmp/$1.send lpid spid
  ip netns exec ppn1 taskset -c 1 "$probe" --dev "$dev" --listen --count 0 \
    --wait-ms 30000 >"$l" 2>&1 &
  lpid=$!
  pids+=("$lpid")
  wait_for "$l" '^listening' "$lpid"
  ip netns exec ppn0 taskset -c 0 "$probe" --dev "$dev" --peer "$("$testbed" mac 1 0)" \
    --count 100000000 --timeout-ms 100 >"$s" 2>&1 &
  spid=$!
  pids+=("$spid")
  sleep 1
  kill -0 "$lpid" "$spid" || { cat "$l" "$s"; fail "$1: a probe ended before the kill"; }
  kill -9 "$lpid" "$spid"
  wait "$lpid" "$spid" 2>/dev/null || true
  pids=()
  echo "$1: listener and sender killed mid-run; ppn1/pp0 XDP program: $(xdp_prog ppn1)"
}

# check NAME: a new pair, both with --check, at once.
check() {
  local l=$tmp/$1.listen s=$tmp/$1.send lpid rc=0 lrc=0
  ip netns exec ppn1 taskset -c 1 "$probe" --dev "$dev" --listen --check --count "$count" \
    --wait-ms 30000 --timeout-ms 10000 >"$l" 2>&1 &
  lpid=$!
  pids+=("$lpid")
  wait_for "$l" '^listening' "$lpid"
  ip netns exec ppn0 taskset -c 0 "$probe" --dev "$dev" --peer "$("$testbed" mac 1 0)" \
    --check --count "$count" --size 60,1000,mtu >"$s" 2>&1 || rc=$?
  wait "$lpid" || lrc=$?
  pids=()
  echo "--- $1: sender"; grep -v '^EAL:' "$s"
  echo "--- $1: listener"; grep -v '^EAL:' "$l"
  [ $rc -eq 0 ] || fail "$1: sender exited $rc"
  [ $lrc -eq 0 ] || fail "$1: listener exited $lrc"
  grep -q "answered $count, lost 0, bad payload 0" "$s" || fail "$1: loss"
}

"$testbed" up 2 >/dev/null
crash crash1
[ -n "$(xdp_prog ppn1)" ] || fail "no XDP program left on ppn1/pp0 by the killed listener"
check after-kill
grep -q "detached XDP program xsk_def_prog" "$tmp/after-kill.listen" ||
  fail "the listener did not detach the killed one's XDP program"
for ns in ppn0 ppn1; do
  [ -z "$(xdp_prog $ns)" ] || fail "XDP program left on $ns/pp0 after a clean exit: $(xdp_prog $ns)"
done
echo "ok: a new pair bound the ports of the killed one at once and passed --check"

crash crash2
"$testbed" down
"$testbed" up 2
check after-rebuild
echo "ok: down && up 2 right after a killed job, then --check"
echo "PASS: af_xdp after SIGKILL"
