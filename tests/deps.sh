#!/usr/bin/env bash
# Install what librt-pp needs to build and test on Debian 12 (as root), or,
# given package names, just those (tests/bench/bench_deps.sh does that).
# Idempotent: does nothing when every package is already there.
set -euo pipefail
pkgs=("$@")
[ $# -gt 0 ] || pkgs=(
  build-essential clang libclang-rt-14-dev meson ninja-build pkg-config
  libpmix-dev openmpi-bin
  dpdk dpdk-dev libdpdk-dev libpcap-dev libhwloc-dev libcunit1-dev
  iproute2 bridge-utils tshark libbpf-dev python3-matplotlib libfabric-dev libfabric-bin
  openmpi-bin libopenmpi-dev hpcc
  autoconf automake libtool libsodium-dev valgrind
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" -eq 0 ] || { echo "deps.sh: run as root to install: ${missing[*]}" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
