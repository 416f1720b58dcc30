#!/usr/bin/env bash
# tests/bench/mpi_pingpong.c: it builds with mpicc against apps/perf, --help
# describes the options pp_pingpong shares with it, and bad arguments are
# refused with status 2 before MPI starts. Skipped (77) without mpicc
# (tests/bench/bench_deps.sh installs it).
# usage: mpi_args_test.sh SOURCE_ROOT
set -uo pipefail
root=$1
fail() { echo "FAIL: $*"; exit 1; }
command -v mpicc >/dev/null || { echo "SKIP: no mpicc (tests/bench/bench_deps.sh)"; exit 77; }
tmp=$(mktemp -d /tmp/pp-mpi-args.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpicc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$root/apps/perf" -o "$tmp/mpi_pingpong" \
  "$root/tests/bench/mpi_pingpong.c" "$root/apps/perf/sizes.c" "$root/apps/perf/sample_stats.c" ||
  fail "mpicc"
out=$("$tmp/mpi_pingpong" --help) || fail "--help gave status $?"
for opt in "--sizes SPEC" "--window W" "--max-bytes B" "latency,bandwidth,window" "0-byte go" "RESULT"; do
  grep -q -- "$opt" <<<"$out" || fail "--help does not describe '$opt'"
done
for args in "--bogus" "--test nosuch" "--sizes 8:4" "--sizes x" "--sizes 2g" "--window 0" \
            "--window 1025" "--iters 0" "--warmup x" "--max-bytes 0" "--max-bytes 1k:2k" "stray"; do
  # shellcheck disable=SC2086
  "$tmp/mpi_pingpong" $args >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "'$args' gave status $rc, want 2"
done
echo "PASS"
