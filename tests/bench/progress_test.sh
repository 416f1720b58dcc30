#!/usr/bin/env bash
# The comparison scripts' progress (tests/bench/lib.sh, step): piped, a step
# is the same line log writes, nothing else; on a terminal (script(1) gives
# one), "PROG: [i/N] WHAT" on one line that the next step overwrites and any
# other message clears first. Each script's step count is its calls of step.
# usage: progress_test.sh LIB_SH COMPARE_SH COMPARE_SHM_SH
set -uo pipefail
lib=$1
shift
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d /tmp/pp-progress-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/run.sh" <<EOS
prog=demo steps=3
. '$lib'
step "one"
step "two"
log "a message"
step "three"
step_clear
echo "the table"
EOS

# Piped: the log lines alone, stdout untouched.
bash "$tmp/run.sh" >"$tmp/out" 2>"$tmp/err" || fail "run.sh piped"
printf 'demo: one\ndemo: two\ndemo: a message\ndemo: three\n' | cmp -s - "$tmp/err" ||
  { cat -A "$tmp/err"; fail "piped stderr differs from the log lines"; }
[ "$(cat "$tmp/out")" = "the table" ] || fail "piped stdout"

# On a terminal: the steps in place, cleared before the message and the table.
if command -v script >/dev/null; then
  script -qfec "bash '$tmp/run.sh'" /dev/null >"$tmp/tty" 2>&1 || fail "run.sh under script"
  tr -d '\n' <"$tmp/tty" >"$tmp/tty1"
  want=$'\r\e[Kdemo: [1/3] one\r\e[Kdemo: [2/3] two\r\e[Kdemo: a message\r\r\e[Kdemo: [3/3] three\r\e[Kthe table\r'
  [ "$(cat "$tmp/tty1")" = "$want" ] || { cat -A "$tmp/tty"; fail "terminal output"; }
fi

# Each script announces as many steps as it takes.
for sh in "$@"; do
  n=$(grep -Ec '^ *(if \[ -t 2 \]; then )?step "' "$sh")
  s=$(sed -n 's/^steps=\([0-9]*\).*/\1/p' "$sh")
  if [ -z "$s" ] || [ "$n" -ne "$s" ]; then fail "$(basename "$sh"): steps=$s but $n calls of step"; fi
done
echo "PASS"
