#!/usr/bin/env bash
# What tests/bench/compare.sh (and compare_shm.sh, predict_live.sh) need
# beyond the build: Open MPI, sockperf, iperf3, ucx_perftest, hpcc and LAMMPS
# with its examples (Debian 12, as root). Idempotent.
set -euo pipefail
exec "$(dirname "$0")/../deps.sh" openmpi-bin libopenmpi-dev sockperf iperf3 ucx-utils util-linux procps ethtool hpcc lammps lammps-examples
