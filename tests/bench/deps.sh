#!/usr/bin/env bash
# Install what tests/bench/compare.sh needs besides tests/deps.sh (Debian 12,
# as root): Open MPI, sockperf, iperf3. Kept apart so CI does not install them.
# Idempotent: does nothing when every package is already there.
set -euo pipefail
pkgs=(openmpi-bin libopenmpi-dev sockperf iperf3 util-linux procps)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" -eq 0 ] || { echo "deps.sh: run as root to install: ${missing[*]}" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
