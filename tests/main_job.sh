#!/usr/bin/env bash
# What the README's first command runs once the test bed is up (2 nodes):
# pp_probe round trips between namespaces ppn1 and ppn0 over each frame
# backend (libpcap, DPDK af_packet, DPDK af_xdp), every byte checked.
# Each process is pinned to its own core so busy polling starves nobody.
# usage: main_job.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
probe=$build/apps/pp_probe
peer=$(tests/testbed.sh mac 0 0)
status=0
for dev in "pcap:pp0" "--vdev=net_af_packet0,iface=pp0" "--vdev=net_af_xdp0,iface=pp0"; do
  echo "== pp_probe, 64-byte frames, dev $dev"
  ip netns exec ppn0 taskset -c 0 "$probe" --dev "$dev" --listen --count 2000 \
    --wait-ms 20000 --timeout-ms 5000 >/dev/null 2>&1 &
  listener=$!
  sleep 0.5
  ip netns exec ppn1 taskset -c 1 "$probe" --dev "$dev" --peer "$peer" --count 2000 \
    --size 64 --check 2>/dev/null || status=1
  wait "$listener" || status=1
done
exit $status
