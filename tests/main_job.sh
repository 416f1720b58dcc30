#!/usr/bin/env bash
# What the README's first command runs once the test bed is up: for now the
# installed library is built against and checked (the network programs
# arrive with the driver and runtime issues).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
tests/testbed.sh status
tests/install_test.sh "$build" apps/example.c
