#!/usr/bin/env bash
# tests/bench/compare.sh (or compare_shm.sh): --help works and describes the
# options, and bad arguments are refused with status 2, before anything
# needs root or touches the test bed.
set -uo pipefail
sh=$1
fail() { echo "FAIL: $*"; exit 1; }
out=$("$sh" --help) || fail "--help gave status $?"
for opt in "--csv FILE" "--sizes SPEC" "--window W" "--max-bytes B" "ratio"; do
  grep -q -- "$opt" <<<"$out" || fail "--help does not describe '$opt'"
done
for args in "--bogus" "--max-time 10" "--iters 0" "--iters x" "--time 0" "--time 61" "--csv" "--build" "stray" \
            "--sizes" "--sizes x" "--sizes -8" "--window 0" "--window 1025" "--window" \
            "--max-bytes 0" "--max-bytes 1q" "--max-bytes"; do
  # shellcheck disable=SC2086
  "$sh" $args >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "'$args' gave status $rc, want 2"
done
echo "PASS"
