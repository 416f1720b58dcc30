#!/usr/bin/env bash
# A benchmark script of tests/bench (compare.sh, compare_shm.sh, ports.sh):
# --help works and describes the options, and bad arguments are refused with
# status 2, before anything needs root or touches the test bed.
#   args_test.sh SCRIPT [TEXT...]   each TEXT must appear in --help
# Bad values of --sizes, --window and --max-bytes are tried where --help
# describes those options.
set -uo pipefail
sh=$1
shift
fail() { echo "FAIL: $*"; exit 1; }
out=$("$sh" --help) || fail "--help gave status $?"
for opt in "--csv FILE" "$@"; do
  grep -q -- "$opt" <<<"$out" || fail "--help does not describe '$opt'"
done
bad=("--bogus" "--max-time 10" "--iters 0" "--iters x" "--time 0" "--time 61" "--csv" "--build" "stray")
grep -q -- "--sizes" <<<"$out" && bad+=("--sizes" "--sizes x" "--sizes -8")
grep -q -- "--window" <<<"$out" && bad+=("--window 0" "--window 1025" "--window")
grep -q -- "--max-bytes" <<<"$out" && bad+=("--max-bytes 0" "--max-bytes 1q" "--max-bytes")
grep -q -- "--offload" <<<"$out" && bad+=("--offload" "--offload maybe")
grep -q -- "--rounds" <<<"$out" && bad+=("--rounds" "--rounds 0" "--rounds 10" "--rounds x")
for args in "${bad[@]}"; do
  # shellcheck disable=SC2086
  "$sh" $args >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "'$args' gave status $rc, want 2"
done
echo "PASS"
