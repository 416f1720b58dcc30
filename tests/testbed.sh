#!/usr/bin/env bash
# The local test bed: "nodes" as network namespaces on one L2 segment.
#
#   testbed.sh up NODES [PORTS_PER_NODE]   create (idempotent)
#   testbed.sh down                        remove everything it made
#   testbed.sh status                      what is up now
#   testbed.sh mac NODE PORT               MAC of port PORT in node NODE
#
# Node i is namespace ${PREFIX}n<i> (ppn0, ppn1, ...) holding veth ports
# pp0..pp<K-1>, one per rank that owns a port. Their other ends
# (${PREFIX}n<i>p<j> in the root namespace) sit on bridge ${PREFIX}br0, so
# broadcast reaches every port. MACs are fixed: 02:50:50:<node>:<port>:01.
# IPv6 is off on every port so the link carries only what the tests send.
# `up` also mounts hugetlbfs on /dev/hugepages and reserves TESTBED_HUGEPAGES
# 2 MiB pages (default 512) for DPDK.
#
# Environment: TESTBED_PREFIX (default "pp"), TESTBED_HUGEPAGES, TESTBED_MTU
# (default 1500; pprun asks 9000 for af_packet: far fewer frames per message).
# Not PP_*: the library reads those as its settings.
set -euo pipefail

P=${TESTBED_PREFIX:-pp}
BR=${P}br0
STATE=/run/pp-testbed-$P
MTU=${TESTBED_MTU:-1500}

die() { echo "testbed.sh: $*" >&2; exit 1; }

need_root() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (it creates network namespaces, veth pairs and a bridge, and mounts hugetlbfs); try: sudo $0 $*"
  command -v ip >/dev/null || die "needs 'ip' from iproute2 (apt-get install iproute2)"
}

mac() { printf '02:50:50:%02x:%02x:01' "$1" "$2"; }

ns_exists() { ip netns list | awk '{print $1}' | grep -qx "$1"; }

hugepages_up() {
  local want=${TESTBED_HUGEPAGES:-512}
  if ! mountpoint -q /dev/hugepages 2>/dev/null; then
    mkdir -p /dev/hugepages
    mount -t hugetlbfs nodev /dev/hugepages || echo "testbed.sh: notice: cannot mount hugetlbfs; DPDK will run with --no-huge" >&2
  fi
  local f=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
  if [ -w "$f" ] && [ "$(cat "$f")" -lt "$want" ]; then
    [ -f "$STATE.hugepages" ] || cat "$f" > "$STATE.hugepages"
    echo "$want" > "$f" 2>/dev/null || true
    [ "$(cat "$f")" -ge "$want" ] || echo "testbed.sh: notice: only $(cat "$f") of $want hugepages reserved" >&2
  fi
}

up() {
  local nodes=${1:-} ports=${2:-1}
  [[ $nodes =~ ^[0-9]+$ ]] && [ "$nodes" -ge 1 ] && [ "$nodes" -le 64 ] ||
    die "up: NODES must be 1..64 (got '${nodes}')"
  [[ $ports =~ ^[0-9]+$ ]] && [ "$ports" -ge 1 ] && [ "$ports" -le 15 ] ||
    die "up: PORTS_PER_NODE must be 1..15 (got '${ports}')"
  need_root up "$@"

  if ! ip link show "$BR" >/dev/null 2>&1; then
    ip link add "$BR" type bridge forward_delay 0 stp_state 0
  fi
  sysctl -qw "net.ipv6.conf.$BR.disable_ipv6=1" || true
  ip link set "$BR" mtu "$MTU" up

  for ((i = 0; i < nodes; i++)); do
    local ns=${P}n$i
    ns_exists "$ns" || ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    for ((j = 0; j < ports; j++)); do
      local host=${P}n${i}p$j
      if ! ip link show "$host" >/dev/null 2>&1; then
        # Port j gets ifindex (j+1)<<12 | 0x10 inside its namespace. DPDK's
        # af_packet joins a PACKET_FANOUT group numbered (pid ^ ifindex) &
        # 0xffff; with small ifindexes, two ranks of one node with adjacent
        # pids collide and the second port fails to open.
        local tmp=${P}t$$
        ip link add "$tmp" index $(( ((j + 1) << 12) | 0x10 )) mtu "$MTU" type veth \
          peer name "$host" mtu "$MTU"
        ip link set "$tmp" netns "$ns"
        ip -n "$ns" link set "$tmp" name "pp$j"
      fi
      sysctl -qw "net.ipv6.conf.$host.disable_ipv6=1" || true
      ip -n "$ns" link set "pp$j" address "$(mac "$i" "$j")" mtu "$MTU" up
      ip link set "$host" master "$BR" mtu "$MTU" up
    done
  done
  hugepages_up
  # af_xdp's libxdp keeps its programs in bpffs; without it, it complains.
  mountpoint -q /sys/fs/bpf 2>/dev/null || mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
  echo "$nodes $ports" > "$STATE"
  echo "testbed: $nodes node(s) x $ports port(s) on bridge $BR"
}

down() {
  need_root down
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${P}n[0-9]+$" || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns"
  done
  if ip link show "$BR" >/dev/null 2>&1; then
    ip link del "$BR"
  fi
  if [ -f "$STATE.hugepages" ]; then
    cat "$STATE.hugepages" > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null || true
    rm -f "$STATE.hugepages"
  fi
  rm -f "$STATE"
  echo "testbed: down"
}

status() {
  if [ -f "$STATE" ]; then
    read -r n k < "$STATE"
    echo "testbed: $n node(s) x $k port(s) on bridge $BR"
    ip netns list | awk '{print $1}' | grep -E "^${P}n[0-9]+$" | sort -V
  else
    echo "testbed: down"
    return 1
  fi
}

case ${1:-} in
  up) shift; up "$@" ;;
  down) down ;;
  status) status ;;
  mac) [ $# -eq 3 ] || die "usage: $0 mac NODE PORT"; mac "$2" "$3"; echo ;;
  -h|--help|help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    ;;
  *) echo "usage: $0 up NODES [PORTS_PER_NODE] | down | status | mac NODE PORT | --help" >&2; exit 2 ;;
esac
