#!/usr/bin/env bash
# The main job: install dependencies, build, bring up a two-node test bed and
# run the end-to-end demonstration over it. Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

tests/deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build
tests/testbed.sh up 2
tests/main_job.sh build
