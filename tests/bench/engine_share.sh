#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The engine's share of a small node-mate message, in instructions: runs
# engine_pingpong under callgrind and adds the self cost of every line in
# proto/ and runtime/util/ (the engine and the headers it inlines) and of
# memcpy (the engine's payload copies), per one-way message. The harness's
# own work (its buffers filled and checked) is left out. Works on an LTO
# build: inlined code keeps its file name.
#
#   tests/bench/engine_share.sh [--max N] [BUILD_DIR [SIZE [ROUND_TRIPS]]]
#
# Prints "RESULT engine_share <size> <instructions per message>", the total
# per message, and the share by file. With --max N it fails (exit 1) when
# the share is above N: the unit suite's deterministic line on the engine's
# cost (callgrind counts do not move with the machine).
set -euo pipefail
case "${1:-}" in -h | --help)
	sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac
max=
if [ "${1:-}" = --max ]; then
	[[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "engine_share.sh: --max takes a number of instructions" >&2; exit 2; }
	max=$2
	shift 2
fi
build=${1:-build}
size=${2:-8}
trips=${3:-20000}
command -v valgrind >/dev/null || { echo "engine_share.sh: needs valgrind" >&2; exit 1; }
command -v python3 >/dev/null || { echo "engine_share.sh: needs python3" >&2; exit 1; }
[ -x "$build/tests/engine_pingpong" ] || { echo "engine_share.sh: no $build/tests/engine_pingpong (build it first)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$build/tests/engine_pingpong" "$size" "$trips" >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err" >&2; exit 1; }
callgrind_annotate --threshold=100 "$tmp/cg" >"$tmp/txt" 2>/dev/null
python3 - "$tmp/txt" "$trips" "$size" "$max" <<'PY'
import re, sys
txt, trips, size, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
msgs = 2 * trips
engine, total, by_file = 0, 0, {}
for line in open(txt):
    if 'PROGRAM TOTALS' in line:
        total = int(line.split()[0].replace(',', ''))
        continue
    m = re.match(r'\s*([\d,]+)\s+\(.*?\)\s+(\S+):(\S+)', line)
    if not m:
        continue
    ir, path = int(m.group(1).replace(',', '')), m.group(2)
    # set-up (pools, crc tables) runs once: below a tenth of an instruction
    # a message, it is not the per-message path
    if ir < msgs / 10 or 'crc32c' in path:
        continue
    if '/proto/' in path or '/runtime/util/' in path or 'memmove' in path:
        engine += ir
        name = path.rsplit('/', 1)[-1]
        by_file[name] = by_file.get(name, 0) + ir
print('RESULT engine_share %s %.0f' % (size, engine / msgs))
print('# total %.0f instructions a message; by file: %s' % (total / msgs, ' '.join(
    '%s %.0f' % (k, v / msgs) for k, v in sorted(by_file.items(), key=lambda x: -x[1]))))
if limit and engine / msgs > int(limit):
    print('FAIL: the engine takes %.0f instructions a message (line: %s)' % (engine / msgs, limit))
    sys.exit(1)
PY
