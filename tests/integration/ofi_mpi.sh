#!/usr/bin/env bash
# An existing MPI program over librt-pp through libfabric: Open MPI's pml cm
# with mtl ofi, restricted to the "pp" provider (libpp-fi.so from the build),
# on the test bed (issue 16).
#   ofi_mpi.sh OFI_DIR TESTBED_SH MPI_CHECK_C NETNS_AGENT PPD
# 1. mpi_check (tests/integration/mpi_check.c, built with mpicc), 2 ranks on
#    2 nodes (ppn0, ppn1; mpirun in ppn0 starts the other side through
#    tests/bench/netns_agent.sh as its rsh agent); 2 ranks on one node
#    (ppn0, ports pp0 and pp1).
#    Each run must print "mpi_check: N checks passed" and exit 0, Open
#    MPI's mtl must name provider pp, and the ranks' librt-pp ports must
#    have carried the messages: every rank's pcap_dump holds librt-pp frames
#    (EtherType 0x88B5) with more payload than mpi_check's 16 MiB messages
#    both ways. Over any other path (TCP, shared memory) this fails.
#    On one node the node-mates talk through the node segment (every rank
#    says so, and the ports carry less than 1 MiB), then with shm=off
#    through their ports, then as nobody, whose packet: ports fall back to
#    udp: (udp_fallback). Then 4 ranks on 2 nodes (node-mates through the
#    segment, the rest through the ports), 2 nodes at 5 % loss, and hpcc.
# 2. Through the node daemons: one ppd per node on its port pp1, every rank
#    attached to its node's daemon (PP_DAEMON; the job PP_JOB claimed on
#    each daemon with ppd --claim for PP_TOKEN, as a prolog would) instead
#    of owning a port: mpi_check on 2 nodes (the daemons' NIC counters carry
#    the messages, their handlers place payload and serve PULLs), on one
#    node (the two ranks talk through the daemon's loopback), 4 ranks on 2
#    nodes, and 2 nodes with 5 % of the frames each daemon receives dropped.
# 3. fi_pingpong -p pp (libfabric-bin) between ppn0 and ppn1, untagged and
#    tagged, every size, data checked (-c).
# Skips (77) without root, mpicc, mpirun, Open MPI's mtl ofi, fi_pingpong or
# the built provider.
set -uo pipefail
ofi=$1 tb=$2 src=$3 agent=$4 ppd=$5
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in mpicc mpirun ompi_info fi_pingpong python3; do
  command -v "$t" >/dev/null || { echo "SKIP: '$t' is missing (tests/deps.sh)"; exit 77; }
done
[ -f "$ofi/libpp-fi.so" ] || { echo "SKIP: $ofi/libpp-fi.so not built (-Dofi)"; exit 77; }
ompi_info | grep -q 'MCA mtl: ofi' || { echo "SKIP: Open MPI has no mtl ofi"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

# Addresses for mpirun's daemons and fi_pingpong's control socket, on pp0
# (not compare.sh's, so neither refuses the other's leftovers).
ip0=10.77.9.1 ip1=10.77.9.2 plen=24
tmp=$(mktemp -d /tmp/pp-ofi-mpi.XXXXXX)
spid= dpids=() cpids=()
cleanup() {
  [ -z "$spid" ] || { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }
  for p in "${dpids[@]}" "${cpids[@]}"; do kill -9 "$p" 2>/dev/null; done
  ip -n ppn0 addr del "$ip0/$plen" dev pp0 2>/dev/null
  ip -n ppn1 addr del "$ip1/$plen" dev pp0 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# A signal too (meson's timeout, Ctrl-C): without it the EXIT trap does not
# run and the addresses given to the test bed's ports stay for the next job.
trap 'exit 130' INT TERM

mpicc -std=c11 -O2 -Wall -o "$tmp/mpi_check" "$src" || fail "mpicc $src"
# Jumbo frames, as pprun asks for packet: ports; two ports per node.
TESTBED_MTU=9000 "$tb" up 2 2 >/dev/null || fail "testbed.sh up 2 2"
ip -n ppn0 addr add "$ip0/$plen" dev pp0 || fail "address on ppn0 pp0"
ip -n ppn1 addr add "$ip1/$plen" dev pp0 || fail "address on ppn1 pp0"

# Each rank: its node's port by its local rank, a capture of that port; or
# with OFI_MPI_DAEMON its node's daemon (the socket named after its
# namespace).
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
if [ -n "\$OFI_MPI_DAEMON" ]; then
  export PP_DAEMON=\$OFI_MPI_DAEMON-\$(ip netns identify \$\$).sock PP_JOB=\$OFI_MPI_JOB
else
  export PP_DEV=\${OFI_MPI_FAULT:+fault:\$OFI_MPI_FAULT;}packet:pp\$OMPI_COMM_WORLD_LOCAL_RANK
  export PP_PCAP_DUMP=\$OFI_MPI_CAPTURE.\$OMPI_COMM_WORLD_RANK.pcap
fi
[ -z "\$OFI_MPI_SHM" ] || export PP_SHM=\$OFI_MPI_SHM
[ -z "\$OFI_MPI_LOG" ] || export PP_LOG=\$OFI_MPI_LOG
[ -z "\$OFI_MPI_SHM_WRITE" ] || export PP_SHM_WRITE=\$OFI_MPI_SHM_WRITE
[ -z "\$OFI_MPI_COPY_MIN" ] || export PP_SHM_COPY_MIN=\$OFI_MPI_COPY_MIN
exec "\$RANK_PROGRAM"
EOF
chmod +x "$tmp/rank.sh"

# frames PCAP: "FRAMES BYTES" of librt-pp frames (EtherType 0x88B5) in it.
frames() {
  python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, n, b = 24, 0, 0
while off + 16 <= len(d):
    incl, orig = struct.unpack_from("<II", d, off + 8)
    fr = d[off + 16:off + 16 + incl]
    off += 16 + incl
    if fr[12:14] == b"\x88\xb5":
        n, b = n + 1, b + orig
print(n, b)
PY
}

# mpi_job NAME HOSTS MIN-BYTES PROGRAM EXTRA-MPIRUN-ARGS...: $np ranks (2
# unless set) of PROGRAM (run in $tmp) over provider pp, with $fault (a
# fault: spec, none unless set) on every port; mpirun must exit 0, the mtl
# name provider pp, and each rank's port carry more than MIN-BYTES of
# librt-pp frames. The output is in $tmp/NAME.log; n and b: the last rank's
# frames, bytes.
mpi_job() {
  local name=$1 hosts=$2 min=$3 prog=$4 out=$tmp/$1.log rc=0 r
  shift 4
  (cd "$tmp" && NETNS_AGENT_HOSTS="$ip0=ppn0=0 $ip1=ppn1=1" OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RANK_PROGRAM="$prog" \
    OFI_MPI_FAULT=${fault:-} OFI_MPI_DAEMON=${daemon:-} PP_TOKEN=${token:-} OFI_MPI_JOB=${pp_job:-} \
    OFI_MPI_SHM=${shm:-} OFI_MPI_LOG=${log:-} OFI_MPI_SHM_WRITE=${shm_write:-} OFI_MPI_COPY_MIN=${copy_min:-} timeout -k 5 240 ip netns exec ppn0 mpirun -np "${np:-2}" --host "$hosts" --bind-to none \
    --mca oob_tcp_if_include pp0 --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include pp \
    --mca mtl_base_verbose 100 -x FI_PROVIDER_PATH="$ofi" -x OFI_MPI_CAPTURE="$tmp/$name" \
    -x RANK_PROGRAM -x OFI_MPI_FAULT -x OFI_MPI_DAEMON -x OFI_MPI_JOB -x PP_TOKEN -x OFI_MPI_SHM \
    -x OFI_MPI_LOG -x OFI_MPI_SHM_WRITE -x OFI_MPI_COPY_MIN "$@" "$tmp/rank.sh") >"$out" 2>&1 || rc=$?
  [ $rc -eq 0 ] || { cat "$out"; fail "$name: mpirun exited $rc"; }
  grep -Eq 'provider: pp$' "$out" || { cat "$out"; fail "$name: Open MPI's mtl did not name provider pp"; }
  # The provider's engine takes its peers from the MPI, never from PMIx.
  ! grep -q "pp: .*PMIx" "$out" || { grep "pp: .*PMIx" "$out"; fail "$name: the provider's engine spoke of PMIx"; }
  [ -z "${daemon:-}" ] || return 0 # no captures: the daemons' counters say
  for ((r = 0; r < ${np:-2}; r++)); do
    [ -s "$tmp/$name.$r.pcap" ] || { cat "$out"; fail "$name: rank $r's port captured nothing"; }
    read -r n b < <(frames "$tmp/$name.$r.pcap")
    [ "$b" -gt "$min" ] || fail "$name: rank $r's port carried $n librt-pp frames, $b bytes"
    [ -z "${max_bytes:-}" ] || [ "$b" -lt "$max_bytes" ] ||
      fail "$name: rank $r's port carried $n librt-pp frames, $b bytes; the node segment should have"
  done
}

mpi_run() { # NAME HOSTS EXTRA-MPIRUN-ARGS...: mpi_check
  local name=$1 hosts=$2
  shift 2
  mpi_job "$name" "$hosts" "${min_bytes:-$((32 << 20))}" "$tmp/mpi_check" "$@"
  grep -Eq '^mpi_check: [1-9][0-9]* checks passed$' "$tmp/$name.log" ||
    { cat "$tmp/$name.log"; fail "$name: no 'checks passed'"; }
  [ -n "${daemon:-}" ] && return 0
  echo "ok: $name: $(grep '^mpi_check:' "$tmp/$name.log"), over provider pp ($n frames, $b bytes at the last rank's port)"
}

mpi_run two-nodes "$ip0,$ip1" --mca plm_rsh_agent "$agent"
# shm_ranks NAME N: N ranks of the run said they reach their node-mates
# through the node segment (log=info).
shm_ranks() {
  local k
  k=$(grep -c 'local peer(s) through shared memory' "$tmp/$1.log")
  [ "$k" -eq "$2" ] || { cat "$tmp/$1.log"; fail "$1: $k of $2 ranks use shared memory"; }
}
# One node: the node-mates through the node segment (issue 31), the 16 MiB
# messages never on the ports (max_bytes); then with shm=off through their
# ports, as before.
# Messages a job's ranks wrote into receives (the counters at PP_LOG=info).
writes() {
  sed -n 's/.*shm: sender writes: \([0-9]*\) messages.*/\1/p' "$tmp/$1.log" | awk '{ s += $1 } END { print s + 0 }'
}
# Sender writes are on, as in native jobs: MPI's 64-bit tags and ignore
# masks are published and matched by the sender (pp_tag.h). Writes are made
# from shm_copy_min, which auto sets by what a copy call costs here: 8k
# keeps the sizes this test writes the same on every machine.
max_bytes=$((1 << 20)) min_bytes=-1 log=info copy_min=8k mpi_run one-node "$ip0:2"
shm_ranks one-node 2
w=$(writes one-node)
[ "$w" -gt 0 ] || { cat "$tmp/one-node.log"; fail "one-node: no message written by its sender"; }
echo "ok: one-node: $w messages written into receives by their senders"
shm=off mpi_run one-node-port "$ip0:2"
# Turned off, they are not made.
max_bytes=$((1 << 20)) min_bytes=-1 log=info copy_min=8k shm_write=off mpi_run one-node-nowrites "$ip0:2"
w=$(writes one-node-nowrites)
[ "$w" -eq 0 ] || { cat "$tmp/one-node-nowrites.log"; fail "one-node-nowrites: $w messages written with shm_write=off"; }
# An unprivileged job: mpirun and its ranks as nobody, both on packet:pp0,
# which needs CAP_NET_RAW: each provider falls back to udp: on pp0's
# address (udp_fallback), its peers' from Open MPI's address vector, and
# with shm=off every check goes over those ports. No captures (a udp:
# port's frames are the kernel's datagrams): the ranks' own log says.
nob=$(mktemp -d /tmp/pp-ofi-nobody.XXXXXX)
chmod 755 "$nob" && cp "$tmp/mpi_check" "$nob/" || fail "a directory nobody can read"
(cd "$nob" && timeout -k 5 240 ip netns exec ppn0 runuser -u nobody -- mpirun -np 2 --bind-to none \
  --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include pp -x FI_PROVIDER_PATH="$ofi" \
  -x PP_DEV=packet:pp0 -x PP_SHM=off -x PP_LOG=info "$nob/mpi_check") >"$tmp/unprivileged.log" 2>&1
rc=$?
k=$(grep -c "pp_init: port 'packet:pp0': .*uses udp:$ip0:0 instead" "$tmp/unprivileged.log")
u=$(grep -c "udp:$ip0:[0-9]*: mtu" "$tmp/unprivileged.log")
rm -rf "$nob"
[ $rc -eq 0 ] && [ "$k" -eq 2 ] && [ "$u" -eq 2 ] &&
  grep -Eq '^mpi_check: [1-9][0-9]* checks passed$' "$tmp/unprivileged.log" ||
  { cat "$tmp/unprivileged.log"; fail "unprivileged: status $rc, $k ranks fell back, $u udp: ports"; }
echo "ok: unprivileged: $(grep '^mpi_check:' "$tmp/unprivileged.log"), as nobody over udp: ports the provider fell back to"
# Four ranks, two per node (each on a port of its own): Open MPI inserts
# only the addresses of ranks it sends to, so rank 0 hears from ranks 2 and
# 3 before it knows them (ranks 2 and 3 take part in the wildcards and the
# collectives only). Then two nodes with 5 % of the frames each port
# receives dropped: go-back-N under MPI.
np=4 min_bytes=1 log=info mpi_run four-ranks "$ip0:2,$ip1:2" --mca plm_rsh_agent "$agent"
shm_ranks four-ranks 4
fault=loss=0.05 mpi_run lossy "$ip0,$ip1" --mca plm_rsh_agent "$agent"

# Through the daemons. ppd_sum NODE COLUMN: that column of the daemon's
# --stats summed over its handlers.
ppd_sum() {
  ip netns exec "ppn$1" "$ppd" --stats --socket "$daemon-ppn$1.sock" |
    awk -v c="$2" '$1 == "handler" { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
      k && $1 ~ /^[0-9]+$/ { s += $k } END { print s + 0 }'
}
# ppd_run NAME HOSTS NODES EXTRA-MPIRUN-ARGS...: mpi_check through fresh
# daemons on nodes 0 .. NODES-1; the daemons' counters in $tmp/NAME.ppdN.
ppd_run() {
  local name=$1 hosts=$2 nodes=$3 i p
  shift 3
  daemon=/run/pp/ppd-ofi token=$(printf '%016x' $((RANDOM << 32 | RANDOM << 16 | RANDOM)))
  job=$((RANDOM << 15 | RANDOM))
  dpids=() cpids=()
  for ((i = 0; i < nodes; i++)); do
    ip netns exec "ppn$i" "$ppd" --dev "${fault:+fault:$fault;}packet:pp1" --socket "$daemon-ppn$i.sock" --cores "$((i % $(nproc)))" \
      >"$tmp/$name.ppd$i.log" 2>&1 &
    dpids+=($!)
  done
  for ((i = 0; i < nodes; i++)); do
    for _ in $(seq 200); do
      ip netns exec "ppn$i" "$ppd" --stats --socket "$daemon-ppn$i.sock" >/dev/null 2>&1 && break
      kill -0 "${dpids[i]}" 2>/dev/null || { cat "$tmp/$name.ppd$i.log"; fail "$name: ppd of ppn$i exited"; }
      sleep 0.05
    done
    # The job is claimed for the ranks (root's, as a site's prolog would)
    # before they start; the claim is held until the job is over.
    ip netns exec "ppn$i" "$ppd" --claim "$job:0:$token:${np:-2}" --socket "$daemon-ppn$i.sock" \
      >"$tmp/$name.claim$i.log" 2>&1 &
    cpids+=($!)
    for _ in $(seq 200); do
      grep -q '^claimed' "$tmp/$name.claim$i.log" && break
      kill -0 "${cpids[i]}" 2>/dev/null || { cat "$tmp/$name.claim$i.log"; fail "$name: the claim on ppn$i failed"; }
      sleep 0.05
    done
  done
  # Node-mates through the daemon's loopback, not the node segment.
  fault= min_bytes=0 pp_job=$job shm=off mpi_run "$name" "$hosts" "$@"
  for p in "${cpids[@]}"; do kill -TERM "$p"; wait "$p" 2>/dev/null; done
  cpids=()
  local tx=0 lo=0 placed=0
  for ((i = 0; i < nodes; i++)); do
    tx=$((tx + $(ppd_sum "$i" nic_tx))) lo=$((lo + $(ppd_sum "$i" loopback)))
  done
  for p in "${dpids[@]}"; do kill -TERM "$p"; done
  for p in "${dpids[@]}"; do wait "$p" || fail "$name: a daemon exited $? after SIGTERM"; done
  dpids=()
  placed=$(grep -ho 'placed_bytes=[0-9]*' "$tmp/$name".ppd*.log | awk -F= '{ s += $2 } END { print s + 0 }')
  echo "ok: $name: $(grep '^mpi_check:' "$tmp/$name.log"), through ppd ($tx frames sent to the NICs, $lo through loopback, $placed bytes placed)"
  daemon= token=
  last_tx=$tx last_lo=$lo last_placed=$placed
}
ppd_run ppd-two-nodes "$ip0,$ip1" 2 --mca plm_rsh_agent "$agent"
[ "$last_tx" -gt 4000 ] && [ "$last_placed" -gt $((16 << 20)) ] ||
  fail "ppd-two-nodes: the daemons sent $last_tx frames and placed $last_placed bytes; the 16 MiB messages went elsewhere"
clean_tx=$last_tx
ppd_run ppd-one-node "$ip0:2" 1
[ "$last_lo" -gt 2000 ] || fail "ppd-one-node: $last_lo frames through the daemon's loopback"
# Two ranks per node: node-mates through each daemon's loopback, the rest
# through the NICs.
np=4 ppd_run ppd-four-ranks "$ip0:2,$ip1:2" 2 --mca plm_rsh_agent "$agent"
[ "$last_lo" -gt 2000 ] && [ "$last_tx" -gt 100 ] ||
  fail "ppd-four-ranks: $last_lo frames through the loopbacks and $last_tx to the NICs; want both"
# 5 % of the frames lost on the way: the same checks pass, the 16 MiB
# messages still go through the daemons, and more frames leave than
# without loss (the resends).
fault=loss=0.05 ppd_run ppd-lossy "$ip0,$ip1" 2 --mca plm_rsh_agent "$agent"
[ "$last_tx" -gt "$clean_tx" ] && [ "$last_placed" -gt $((16 << 20)) ] ||
  fail "ppd-lossy: the daemons sent $last_tx frames (without loss $clean_tx) and placed $last_placed bytes"

# An unmodified MPI application: Debian's hpcc (the HPC Challenge suite,
# built against Open MPI: HPL, PTRANS, RandomAccess, FFT, STREAM, DGEMM and
# b_eff's ping-pongs and rings), small problems on a 1 x 2 grid, 2 nodes. It
# checks its own results; every check must have passed.
if command -v hpcc >/dev/null && [ -f /usr/share/doc/hpcc/examples/_hpccinf.txt ]; then
  # N=500 for HPL and PTRANS, the example's other settings.
  sed '6s/.*/500          Ns/; 11s/.*/1            Ps/; 12s/.*/2            Qs/' \
    /usr/share/doc/hpcc/examples/_hpccinf.txt >"$tmp/hpccinf.txt"
  mpi_job hpcc "$ip0,$ip1" $((1 << 20)) "$(command -v hpcc)" --mca plm_rsh_agent "$agent"
  o=$tmp/hpccoutf.txt
  [ -s "$o" ] || { cat "$tmp/hpcc.log"; fail "hpcc wrote no hpccoutf.txt"; }
  for want in '^Success=1$' '^MPIRandomAccess_Errors=0$' '^MPIRandomAccess_LCG_Errors=0$' \
    ' 0 tests completed and failed residual checks' 'Solution Validates'; do
    grep -Eq -- "$want" "$o" || { grep -E "FAIL|Failure|rror" "$o"; fail "hpcc: no '$want' in hpccoutf.txt"; }
  done
  ! grep -Eq 'FAILED|Failure=[1-9]' "$o" || { grep -E 'FAILED|Failure=' "$o"; fail "hpcc: a check failed"; }
  echo "ok: hpcc (HPL $(grep -E '^HPL_Tflops=' "$o" | cut -d= -f2) Tflop/s, PTRANS, RandomAccess, FFT, STREAM verified; b_eff latency $(grep -E '^MaxPingPongLatency_usec=' "$o" | cut -d= -f2) us) over provider pp ($n frames, $b bytes at the last rank's port)"
else
  echo "SKIP part: hpcc is not installed (tests/deps.sh)"
fi

# fi_pingpong: ranks 0 and 1 of a job of 2, one per node; the client gets
# the server's address over a control socket on pp0. Its port lies below
# the kernel's ephemeral range (32768-60999): fi_pingpong's default, 47592,
# is inside it, and a connection of the MPI runs above that had taken it as
# its local port and sat in TIME_WAIT made the server's bind fail (EADDRINUSE).
job=$((RANDOM + 1)) ctl=31592
for mode in msg tagged; do
  ip netns exec ppn1 env PP_RANK=0 PP_SIZE=2 PP_JOB=$job PP_DEV=packet:pp0 FI_PROVIDER_PATH="$ofi" \
    timeout -k 5 120 fi_pingpong -p pp -e rdm -m "$mode" -S all -I 20 -c -B "$ctl" >"$tmp/fpp-server.log" 2>&1 &
  spid=$!
  # The client connects once: wait until the server listens (or is gone).
  for _ in $(seq 300); do
    [ -z "$(ip netns exec ppn1 ss -Hltn "sport = :$ctl")" ] || break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  rc=0
  ip netns exec ppn0 env PP_RANK=1 PP_SIZE=2 PP_JOB=$job PP_DEV=packet:pp0 FI_PROVIDER_PATH="$ofi" \
    timeout -k 5 120 fi_pingpong -p pp -e rdm -m "$mode" -S all -I 20 -c -P "$ctl" "$ip1" >"$tmp/fpp.log" 2>&1 || rc=$?
  src=0
  wait "$spid" || src=$?
  spid=
  if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
    echo "--- client"; cat "$tmp/fpp.log"; echo "--- server"; cat "$tmp/fpp-server.log"
    fail "fi_pingpong -m $mode: client exited $rc, server $src"
  fi
  cat "$tmp/fpp.log"
  rows=$(grep -Ec '^[0-9.]+[kmg]? +[0-9]+ += *[0-9]+' "$tmp/fpp.log")
  [ "$rows" -gt 0 ] || fail "fi_pingpong -m $mode: no result rows"
  echo "ok: fi_pingpong -p pp -e rdm -m $mode, $rows sizes, data checked"
done
