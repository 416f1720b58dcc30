#!/usr/bin/env bash
# pp_probe: --help describes --blast, and bad arguments (blast ones
# included) are refused with status 2 before any port is opened.
set -uo pipefail
probe=$1
fail() { echo "FAIL: $*"; exit 1; }
out=$("$probe" --help) || fail "--help gave status $?"
for opt in "--blast" "--duration-ms MS" "frames/s" "loss"; do
  grep -q -- "$opt" <<<"$out" || fail "--help does not describe '$opt'"
done
mac=02:50:50:01:00:01
for args in "--bogus" "--dev x --blast" "--dev x --peer $mac --blast --size 64,128" \
            "--dev x --peer $mac --blast --duration-ms 0" "--dev x --listen --duration-ms x" \
            "--dev x --peer $mac --listen" "--blast --listen" "--dev x --peer nomac" "--dev x stray"; do
  # shellcheck disable=SC2086
  "$probe" $args >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "'$args' gave status $rc, want 2"
done
echo "PASS"
