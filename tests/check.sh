#!/usr/bin/env bash
# The test command: install dependencies, build with warnings as errors, run
# every suite (unit, security, integration, slow, soak), then the unit and
# security suites again under AddressSanitizer and UBSan, and under
# ThreadSanitizer (the daemon's handlers, pull-handler threads, the rings).
# Fails if anything fails or if no test ran.
# Run as root on Debian 12 (integration tests build network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
took() { echo "check.sh: $1 done at $((SECONDS - start)) s"; }

tests/deps.sh
took "dependencies"

setup() { # DIR ARGS...: configure once, reconfigure afterwards
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" "$@" >/dev/null
  else meson setup "$dir" "$@" >/dev/null; fi
}

count() { # DIR: "passed failed" from meson's JSON log
  python3 - "$1/meson-logs/testlog.json" <<'PY'
import json, sys
p = f = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"): p += 1
    elif r != "SKIP": f += 1
print(p, f)
PY
}

total_p=0 total_f=0
run() { # DIR MESON-TEST-ARGS...
  local dir=$1 rc=0; shift
  meson test -C "$dir" --print-errorlogs --num-processes 2 "$@" || rc=$?
  read -r p f < <(count "$dir")
  total_p=$((total_p + p)) total_f=$((total_f + f))
  if [ "$p" -eq 0 ]; then echo "check.sh: no test ran in $dir" >&2; return 1; fi
  return $rc
}

status=0
setup build -Dwerror=true
ninja -C build
took "build"
run build || status=1
took "every suite"

setup build-san -Dbuildtype=debug -Db_lto=false -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true
ninja -C build-san
# Tests that run no program of ours (suite no-c: Python) run once, above.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  run build-san --suite unit --suite security --no-suite no-c --timeout-multiplier 2 || status=1
took "ASan and UBSan"

setup build-tsan -Dbuildtype=debug -Db_lto=false -Db_sanitize=thread -Db_lundef=false -Dwerror=true -Dfuzz=disabled
ninja -C build-tsan
# Sanitized programs run several times slower (TSan's test_runtime: 50 s in
# one full run, 97 s beside a build): their limits are doubled. The sans-I/O
# engine's programs (suite single-thread) start no thread: nothing for TSan to
# see there, and about 90 s of its run (engine depth alone 42 s).
TSAN_OPTIONS=halt_on_error=1 run build-tsan --suite unit --suite security --no-suite single-thread --no-suite no-c \
  --timeout-multiplier 2 || status=1
took "TSan"

echo "$total_p passed, $total_f failed"
exit $status
