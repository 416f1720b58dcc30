#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What the library's calls cost around the engine for a small node-mate
# message, in instructions: runs pp_pingpong's latency test (two ranks on
# one node of the test bed, 8 bytes, every byte checked) under callgrind and
# prints, per call, the inclusive cost of pp_send (a lite message, rule 6:
# written into the peer's ring and complete in the call, no request) and of
# pp_irecv (a receive posted before its message); and, from the early
# receiver test (the receiver waits while its sender computes), of one idle
# spin of pp_wait's loop with every peer a node-mate (pp_ctx_spin: most look
# at the rings' next cells only, one in 16 makes a whole progress pass).
#
#   tests/bench/api_share.sh [--max-send N] [--max-spin N] PPRUN TESTBED [DEV_KIND]
#
# Prints "RESULT api_share send|irecv|spin <instructions>", each the higher
# of the two ranks. With --max-send N or --max-spin N it fails (exit 1) when
# pp_send or a spin costs more: the integration suite's deterministic lines
# on those paths (a send took 442 with a request and a wait, 293 without; a
# spin about 145, a whole pass each time, and 39 now). Needs root and valgrind.
set -euo pipefail
case "${1:-}" in -h | --help | "")
	sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac
max_send='' max_spin=''
while [ "${1:-}" = --max-send ] || [ "${1:-}" = --max-spin ]; do
	[[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "api_share.sh: $1 takes a number of instructions" >&2; exit 2; }
	[ "$1" = --max-send ] && max_send=$2 || max_spin=$2
	shift 2
done
[ $# -ge 2 ] || { echo "api_share.sh: needs PPRUN and TESTBED (--help)" >&2; exit 2; }
pprun=$1 tb=$2 kind=${3:-af_packet}
ppp=$(dirname "$pprun")/pp_pingpong
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v valgrind >/dev/null || { echo "api_share.sh: needs valgrind" >&2; exit 1; }
command -v callgrind_annotate >/dev/null || { echo "api_share.sh: needs callgrind_annotate" >&2; exit 1; }
[ -x "$ppp" ] || { echo "api_share.sh: no pp_pingpong beside $pprun" >&2; exit 1; }
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"; "$tb" down >/dev/null 2>&1' EXIT
"$tb" up 2 >/dev/null || { echo "api_share.sh: test bed" >&2; exit 1; }
iters=2000
# cg.latency.PID: the latency test (pp_send, pp_irecv); cg.early.PID: the early
# receiver's (its waits spin while the sender computes: pp_ctx_spin idle).
for t in latency early; do
	n=$iters
	[ $t = early ] && n=50
	PP_TIMEOUT_MS=30000 "$pprun" --dev-kind "$kind" --timeout 300 -n 2 --nodes 1 -- \
		valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$t.%p" "$ppp" --test $t \
		--sizes 8 --iters $n --warmup 0 --check >"$tmp/log" 2>&1 ||
		{ cat "$tmp/log"; echo "api_share.sh: the $t test under callgrind failed" >&2; exit 1; }
	n=$(ls "$tmp"/cg.$t.* | wc -l)
	[ "$n" -eq 2 ] || { cat "$tmp/log"; echo "api_share.sh: $n callgrind outputs of $t, want 2" >&2; exit 1; }
done
# Per call, the higher of the two ranks: FN's inclusive cost (its "*" line)
# over its calls (its callers' "> FN (Nx)" lines).
for f in "$tmp"/cg.*; do
	callgrind_annotate --threshold=100 --inclusive=yes --tree=calling "$f" 2>/dev/null >"$tmp/ann.${f#"$tmp"/cg.}"
done
per_call() { # FN TEST MIN_CALLS
	python3 - "$1" "$3" "$tmp"/ann."$2".* <<'PY'
import re, sys
fn, iters, worst = sys.argv[1], int(sys.argv[2]), 0
for path in sys.argv[3:]:
    ir = calls = 0
    for line in open(path):
        m = re.match(r'\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+([*>])\s+\S*/runtime/(?:api|progress)\.c:(\w+)\s+(\(([\d,]+)x\))?', line)
        if not m or m.group(3) != fn:
            continue
        if m.group(2) == '*':
            ir = int(m.group(1).replace(',', ''))
        elif m.group(5):
            calls += int(m.group(5).replace(',', ''))
    if calls < iters:
        sys.exit('api_share.sh: %s called %d times in %s, want >= %d' % (fn, calls, path, iters))
    worst = max(worst, ir // calls)
print(worst)
PY
}
worst_send=$(per_call pp_send latency $iters)
worst_irecv=$(per_call pp_irecv latency $iters)
worst_spin=$(per_call pp_ctx_spin early 1000)
echo "RESULT api_share send $worst_send"
echo "RESULT api_share irecv $worst_irecv"
echo "RESULT api_share spin $worst_spin"
rc=0
if [ -n "$max_send" ] && [ "$worst_send" -gt "$max_send" ]; then
	echo "FAIL: pp_send takes $worst_send instructions a small node-mate message (line: $max_send)"
	rc=1
fi
if [ -n "$max_spin" ] && [ "$worst_spin" -gt "$max_spin" ]; then
	echo "FAIL: an idle spin of pp_wait takes $worst_spin instructions (line: $max_spin)"
	rc=1
fi
exit $rc
