#!/usr/bin/env bash
# tests/bench/compare.sh: --help works and bad arguments are refused with
# status 2, before anything needs root or touches the test bed.
set -uo pipefail
sh=$1
fail() { echo "FAIL: $*"; exit 1; }
out=$("$sh" --help) || fail "--help gave status $?"
grep -q -- "--csv FILE" <<<"$out" || fail "--help does not describe --csv"
for args in "--bogus" "--max-time 10" "--iters 0" "--iters x" "--time 0" "--time 61" "--csv" "--build" "stray"; do
  # shellcheck disable=SC2086
  "$sh" $args >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "'$args' gave status $rc, want 2"
done
echo "PASS"
