#!/usr/bin/env bash
# The local test bed: "nodes" as network namespaces on one L2 segment.
#
#   testbed.sh up NODES [PORTS_PER_NODE]   create (idempotent), repair leftovers
#   testbed.sh down                        remove everything it made, and wait
#                                          until the kernel has
#   testbed.sh status                      what is up now
#   testbed.sh mac NODE PORT               MAC of port PORT in node NODE
#   testbed.sh addr NODE PORT              its IPv4 address (udp: ports)
#   testbed.sh ipv4 on|off                 give every port its address, or
#                                          take them away
#
# Node i is namespace ${PREFIX}n<i> (ppn0, ppn1, ...) holding veth ports
# pp0..pp<K-1>, one per rank that owns a port. Their other ends
# (${PREFIX}n<i>p<j> in the root namespace) sit on bridge ${PREFIX}br0, so
# broadcast reaches every port. MACs are fixed: 02:50:50:<node>:<port>:01.
# Each port also has a fixed IPv4 address, 10.78.<node>.<port + 1>/16, for
# udp: ports (pprun --dev-kind udp as root), on the port only between
# `ipv4 on` and `ipv4 off` (pprun's udp jobs): an address on the ports
# changes what Open MPI's launcher sees of the nodes, and `up` takes a
# leftover one away. Ports of one node share the subnet: a frame=udp
# port's socket sends through its own port (SO_BINDTODEVICE). Each node answers
# ARP only on the port that holds the address asked for (arp_ignore 1,
# arp_announce 2): as on any host with two ports on one segment, else the
# other port answers too, and a peer may send there for good. And it takes
# ARP and datagrams from its own addresses (accept_local 1): else two ports
# of one node never resolve each other, and node-mates on frame=udp ports
# meet only through frames the bridge happens to flood (a 4-rank job under
# 5 % loss lost its discovery 1 time in about 40).
# IPv6 is off on every port so the link carries only what the tests send.
# `up` also mounts hugetlbfs on /dev/hugepages and reserves TESTBED_HUGEPAGES
# 2 MiB pages (default 512) for DPDK.
#
# `up` returns at once when the links, addresses, mounts and pages are as
# an `up` of as many nodes and ports or more, at the same MTU, left them (a
# snapshot in /run; sysctls it does not read); else it reuses only what
# checks out, and rebuilds the rest with one line
# "testbed: repaired ..." each: a namespace it cannot enter; a host-side
# port whose veth peer is not pp<j> of its node (the end of a namespace the
# kernel is still destroying, or of an `up` that was interrupted); a pp<j>
# without its host-side end; an XDP program left on a port while no process
# is in the node (an AF_XDP job that was killed: it also caps the MTU).
# `down` kills the processes in the nodes (and those holding a node's
# namespace open), deletes the host-side ports, the namespaces and the
# bridge, then waits up to TESTBED_DOWN_WAIT seconds (default 10) until
# none of them is left, and fails naming what is. (The kernel destroys a
# deleted namespace in the background, its veth pairs with it, and not at
# all while a socket or an open file still refers to it.)
#
# Environment: TESTBED_PREFIX (default "pp"), TESTBED_HUGEPAGES, TESTBED_MTU
# (default 1500; pprun asks 9000 for af_packet: far fewer frames per message),
# TESTBED_DOWN_WAIT. Not PP_*: the library reads those as its settings.
set -euo pipefail

P=${TESTBED_PREFIX:-pp}
BR=${P}br0
STATE=/run/pp-testbed-$P
MTU=${TESTBED_MTU:-1500}
DOWN_WAIT=${TESTBED_DOWN_WAIT:-10}

die() { echo "testbed.sh: $*" >&2; exit 1; }
say() { echo "testbed: $*"; }

need_root() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (it creates network namespaces, veth pairs and a bridge, and mounts hugetlbfs); try: sudo $0 $*"
  command -v ip >/dev/null || die "needs 'ip' from iproute2 (apt-get install iproute2)"
}

mac() { printf '02:50:50:%02x:%02x:01' "$1" "$2"; }
addr() { printf '10.78.%d.%d' "$1" "$(($2 + 1))"; }

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

# The namespaces of this prefix, and its links in the root namespace: the
# host-side ports and the temporary veth ends an interrupted `up` leaves.
our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${P}n[0-9]+$" || true; }
our_links() { ip -o link show 2>/dev/null | sed -nE "s/^[0-9]+: (${P}n[0-9]+p[0-9]+|${P}t[0-9]+)[@:].*/\1/p"; }

# Processes in namespace $1, or holding it open (an nsfs file descriptor).
ns_pids() {
  ip netns pids "$1" 2>/dev/null || true
  [ -e "/run/netns/$1" ] || return 0
  find -L /proc/[0-9]*/fd -maxdepth 1 -samefile "/run/netns/$1" 2>/dev/null | cut -d/ -f3
}

# Those of the pids still running (a zombie has released what it held).
alive() {
  local p st
  for p in "$@"; do
    st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || continue
    case ${st%% *} in Z | X | x) ;; *) echo "$p" ;; esac
  done
}

# Why host-side port $2 and port $3 of namespace $1 are not the two ends of
# one veth pair; nothing when they are, "absent" when neither exists.
pair_fault() {
  local ns=$1 host=$2 port=$3 h p
  h=$(ip -o link show dev "$host" 2>/dev/null) || h=
  p=$(ip -n "$ns" -o link show dev "$port" 2>/dev/null) || p=
  h=${h//\\/ } # -o joins the lines with backslashes
  if [ -z "$h" ] && [ -z "$p" ]; then echo absent; return; fi
  [ -n "$h" ] || { echo "$ns/$port has no host-side end"; return; }
  # "IDX: NAME@ifPEERIDX: ... link-netns NS": each names the other's index
  # (a peer in the same namespace shows as "NAME@PEERNAME:").
  local re='^([0-9]+): [^@:]+@([^:]+):' hidx hpeer pidx ppeer
  [[ $h =~ $re ]] || { echo "not a veth end"; return; }
  hidx=${BASH_REMATCH[1]} hpeer=${BASH_REMATCH[2]}
  [[ $hpeer == if* ]] || { echo "its peer $hpeer is in the root namespace"; return; }
  [ -n "$p" ] || { echo "peer missing"; return; }
  [[ $p =~ $re ]] || { echo "$ns/$port is not a veth end"; return; }
  pidx=${BASH_REMATCH[1]} ppeer=${BASH_REMATCH[2]}
  if [[ "$h " != *" link-netns $ns "* ]] || [ "$hpeer" != "if$pidx" ] || [ "$ppeer" != "if$hidx" ]; then
    echo "its peer is not $ns/$port"
  fi
}

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

# What `up` leaves, as the tools print it: our links in the root namespace,
# each node's links and addresses, the mounts it makes and the pages it
# reserves. A few commands where `up` runs dozens.
snapshot() { # NODES
  local l i mnt type
  while IFS= read -r l; do [[ $l == *": ${P}"* ]] && echo "$l"; done < <(ip -o link show 2>&1)
  for ((i = 0; i < $1; i++)); do
    ip -n "${P}n$i" -o link show 2>&1 || echo "${P}n$i: cannot enter"
    ip -n "${P}n$i" -o addr show 2>&1 || true
  done
  while read -r _ mnt type _; do
    [[ $mnt == /dev/hugepages || $mnt == /sys/fs/bpf ]] && echo "$mnt $type"
  done </proc/mounts
  read -r l </sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null && echo "hugepages $l"
  return 0
}

up() {
  local nodes=${1:-} ports=${2:-1}
  [[ $nodes =~ ^[0-9]+$ ]] && [ "$nodes" -ge 1 ] && [ "$nodes" -le 64 ] ||
    die "up: NODES must be 1..64 (got '${nodes}')"
  [[ $ports =~ ^[0-9]+$ ]] && [ "$ports" -ge 1 ] && [ "$ports" -le 15 ] ||
    die "up: PORTS_PER_NODE must be 1..15 (got '${ports}')"
  need_root up "$@"
  # Nothing changed since an `up` of these settings left it (each job of
  # pprun asks, and the full check took half a second): done. Any
  # difference, a repair included, takes the full path below.
  # An `up` of more nodes or ports (same MTU and pages) covers this one.
  local key="$nodes $ports $MTU ${TESTBED_HUGEPAGES:-512}" snap sn sp smtu shp
  if [ -f "$STATE.snap" ] && read -r sn sp smtu shp <"$STATE.snap" &&
    [ "$nodes" -le "$sn" ] && [ "$ports" -le "$sp" ] && [ "$smtu $shp" = "$MTU ${TESTBED_HUGEPAGES:-512}" ] &&
    [ "$(<"$STATE.snap")" = "$sn $sp $smtu $shp"$'\n'"$(snapshot "$sn")" ]; then
    echo "$nodes $ports" >"$STATE"
    say "$nodes node(s) x $ports port(s) on bridge $BR"
    return 0
  fi
  rm -f "$STATE.snap"
  # Inside a node (ip netns exec ppn0 ...) a test bed would be built within
  # that namespace, beside the real one, and cut the node off.
  local here
  here=$(ip netns identify $$ 2>/dev/null) || here=
  [[ ! $here =~ ^${P}n[0-9]+$ ]] ||
    die "up: run outside the test bed's nodes, not inside $here (pprun enters the nodes itself)"

  local l peer
  for l in $(our_links); do
    # A temporary end whose `up` is gone (its pid is in the name).
    if [[ $l =~ ^${P}t([0-9]+)$ ]] && [ -z "$(alive "${BASH_REMATCH[1]}")" ]; then
      peer=$(ip -o link show dev "$l" 2>/dev/null | sed -nE 's/^[0-9]+: [^@:]+@([^:]+):.*/ and its peer \1/p')
      ip link del "$l" 2>/dev/null || true
      say "repaired: removed $l$peer (left by an interrupted up)"
    fi
  done
  if ip link show "$BR" >/dev/null 2>&1 && ! ip -d -o link show "$BR" | grep -q ' bridge '; then
    ip link del "$BR"
    say "repaired $BR (not a bridge)"
  fi
  if ! ip link show "$BR" >/dev/null 2>&1; then
    ip link add "$BR" type bridge forward_delay 0 stp_state 0
  fi
  sysctl -qw "net.ipv6.conf.$BR.disable_ipv6=1" || true
  ip link set "$BR" mtu "$MTU" up

  for ((i = 0; i < nodes; i++)); do
    local ns=${P}n$i
    if ns_exists "$ns" && ! ip -n "$ns" link show lo >/dev/null 2>&1; then
      ip netns del "$ns" 2>/dev/null || rm -f "/run/netns/$ns"
      say "repaired $ns (could not enter it)"
    fi
    ns_exists "$ns" || ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    # A node's ports share one segment: by default each would answer ARP
    # for pp0's address, and a peer that learnt pp1's MAC sends there for
    # good (its probes go to pp1 and pp1 confirms), where the udp: port on
    # pp0 never sees a datagram: a job lost its peer whenever pp0's reply
    # was the one lost (5 of 13 udp: jobs under loss). Only the port that
    # holds an address answers for it, and speaks from it.
    ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 \
      net.ipv4.conf.all.accept_local=1
    for ((j = 0; j < ports; j++)); do
      local host=${P}n${i}p$j why
      why=$(pair_fault "$ns" "$host" "pp$j")
      if [ -n "$why" ]; then
        # Deleting either end of a veth deletes both.
        ip link del "$host" 2>/dev/null || true
        ip -n "$ns" link del "pp$j" 2>/dev/null || true
        [ "$why" = absent ] || say "repaired $host ($why)"
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
      # An AF_XDP process killed on this port leaves its XDP program
      # attached (which also caps the port's MTU); with nobody in the node,
      # nobody uses it.
      local xdp
      xdp=$(ip -n "$ns" -o link show dev "pp$j" 2>/dev/null |
        sed -nE 's/.* prog\/(xdp[a-z]*) id ([0-9]+) name ([^ ]+).*/\1 \3 \2/p')
      if [ -n "$xdp" ] && [ -z "$(ip netns pids "$ns")" ]; then
        local mode name id
        read -r mode name id <<<"$xdp"
        ip -n "$ns" link set dev "pp$j" "$mode" off
        say "repaired $ns/pp$j (detached XDP program $name, id $id, left with no process in $ns)"
      fi
      sysctl -qw "net.ipv6.conf.$host.disable_ipv6=1" || true
      ip -n "$ns" link set "pp$j" address "$(mac "$i" "$j")" mtu "$MTU" up
      ip -n "$ns" addr del "$(addr "$i" "$j")/16" dev "pp$j" 2>/dev/null || true # ipv4 off
      ip link set "$host" master "$BR" mtu "$MTU" up
    done
  done
  hugepages_up
  # af_xdp's libxdp keeps its programs in bpffs; without it, it complains.
  mountpoint -q /sys/fs/bpf 2>/dev/null || mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
  echo "$nodes $ports" > "$STATE"
  # Kept only without an XDP program on a port: one left by a process that
  # is gone must meet the full path's repair.
  snap=$(snapshot "$nodes")
  [[ $snap == *" prog/xdp"* ]] || printf '%s\n%s' "$key" "$snap" >"$STATE.snap"
  say "$nodes node(s) x $ports port(s) on bridge $BR"
}

# What down has not removed yet: namespaces, links, the bridge, processes.
leftovers() {
  local left
  left=$(
    our_namespaces
    our_links
    ip link show "$BR" >/dev/null 2>&1 && echo "$BR"
    for p in $(alive "$@"); do echo "pid $p ($(cat "/proc/$p/comm" 2>/dev/null))"; done
  ) || true
  echo "${left//$'\n'/ }"
}

down() {
  need_root down
  local deadline=$((SECONDS + DOWN_WAIT)) ns l killed=() nns=0 nlinks=0 br=
  for ns in $(our_namespaces); do
    local found pids=() p
    mapfile -t found < <(ns_pids "$ns" | sort -un)
    for p in $(alive "${found[@]}"); do
      [ "$p" != $$ ] && pids+=("$p")
    done
    [ ${#pids[@]} -gt 0 ] || continue
    local names=
    for p in "${pids[@]}"; do names+=" $p ($(cat "/proc/$p/comm" 2>/dev/null))"; done
    kill -9 "${pids[@]}" 2>/dev/null || true
    killed+=("${pids[@]}")
    say "killed${names} in $ns"
  done
  # A process is not gone when kill returns: until it has exited it still
  # holds its sockets, and through them its namespace and ports.
  while [ -n "$(alive "${killed[@]}")" ] && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  # The host-side ends go now, not when the kernel gets round to the
  # namespace (which a socket kept elsewhere can put off for ever).
  for l in $(our_links); do
    ip link del "$l" 2>/dev/null || true
    nlinks=$((nlinks + 1))
  done
  for ns in $(our_namespaces); do
    ip netns del "$ns" 2>/dev/null || true
    nns=$((nns + 1))
  done
  if ip link show "$BR" >/dev/null 2>&1; then
    ip link del "$BR" 2>/dev/null || true
    br=", bridge $BR"
  fi
  if [ -f "$STATE.hugepages" ]; then
    cat "$STATE.hugepages" > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null || true
    rm -f "$STATE.hugepages"
  fi
  rm -f "$STATE" "$STATE.snap"
  local left
  while left=$(leftovers "${killed[@]}"); [ -n "$left" ]; do
    [ $SECONDS -lt $deadline ] || die "down: still there after ${DOWN_WAIT} s: $left"
    sleep 0.05
  done
  say "down (removed $nns namespace(s), $nlinks host-side link(s)$br)"
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

# ipv4 on|off: pp0 of every node of the test bed with its address, or not.
ipv4() {
  need_root ipv4 "$@"
  [ -f "$STATE" ] || die "ipv4: the test bed is not up"
  local nodes ports i
  read -r nodes ports <"$STATE"
  local j
  for ((i = 0; i < nodes; i++)); do
    ip -n "${P}n$i" neigh flush all 2>/dev/null || true # what an earlier job learnt
    for ((j = 0; j < ports; j++)); do
      if [ "$1" = on ]; then
        ip -n "${P}n$i" addr replace "$(addr "$i" "$j")/16" dev "pp$j" ||
          die "ipv4: cannot give ${P}n$i/pp$j its address"
      else
        ip -n "${P}n$i" addr del "$(addr "$i" "$j")/16" dev "pp$j" 2>/dev/null || true
      fi
    done
  done
}

case ${1:-} in
  up) shift; up "$@" ;;
  down) down ;;
  status) status ;;
  mac) [ $# -eq 3 ] || die "usage: $0 mac NODE PORT"; mac "$2" "$3"; echo ;;
  addr) [ $# -eq 3 ] || die "usage: $0 addr NODE PORT"; addr "$2" "$3"; echo ;;
  ipv4) [ $# -eq 2 ] && [[ $2 =~ ^(on|off)$ ]] || die "usage: $0 ipv4 on|off"; ipv4 "$2" ;;
  -h|--help|help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    ;;
  *) echo "usage: $0 up NODES [PORTS_PER_NODE] | down | status | mac NODE PORT | addr NODE PORT | ipv4 on|off | --help" >&2; exit 2 ;;
esac
