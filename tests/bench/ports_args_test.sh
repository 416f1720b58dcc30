#!/usr/bin/env bash
# tests/bench/ports.sh: --help describes its options, and bad arguments are
# refused with status 2 before anything needs root or touches the test bed.
# (args_test.sh checks compare.sh's options, which ports.sh does not take.)
set -uo pipefail
sh=$1
fail() { echo "FAIL: $*"; exit 1; }
out=$("$sh" --help) || fail "--help gave status $?"
for opt in "--build DIR" "--kinds A,B" "--reps N" "--iters N" "--sizes LIST" "--probe-count N" "--csv FILE"; do
  grep -q -- "$opt" <<<"$out" || fail "--help does not describe '$opt'"
done
for args in "--bogus" "stray" "--build" "--kinds" "--kinds packet" "--kinds packet,bogus" \
            "--kinds packet,af_packet,pcap" "--reps" "--reps 0" "--reps x" "--iters 0" "--iters -1" \
            "--sizes" "--probe-count 0" "--probe-count" "--csv"; do
  # shellcheck disable=SC2086
  "$sh" $args >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "'$args' gave status $rc, want 2"
done
echo "PASS"
