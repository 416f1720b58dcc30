#!/usr/bin/env bash
# pp_pingpong: --help works and bad arguments are refused with status 2.
set -uo pipefail
pp=$1
fail() { echo "FAIL: $*"; exit 1; }
"$pp" --help | grep -q -- "--compute-x" || fail "--help"
"$pp" --help | grep -q -- "--json" || fail "--help does not describe --json"
for opt in "--window W" "--max-bytes B" "0-byte go message" "latency,bandwidth,early,late,busy,window"; do
  "$pp" --help | grep -q -- "$opt" || fail "--help does not describe '$opt'"
done
for args in "--test nosuch" "--mode push-some" "--sizes 8:4" "--iters 0" "--btp1 x" \
            "--clock sundial" "stray" "--window 0" "--window 1025" "--window 8x" \
            "--max-bytes 0" "--max-bytes 1k:4k" "--max-bytes 1k,2k" "--max-bytes lots"; do
  # shellcheck disable=SC2086
  "$pp" $args >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "'$args' gave status $rc, want 2"
done
echo "PASS"
