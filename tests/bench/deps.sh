#!/usr/bin/env bash
# What tests/bench/compare.sh needs beyond the build: Open MPI, sockperf,
# iperf3 (Debian 12, as root). Idempotent.
set -euo pipefail
exec "$(dirname "$0")/../deps.sh" openmpi-bin libopenmpi-dev sockperf iperf3 util-linux procps
