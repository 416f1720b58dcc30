#!/usr/bin/env bash
# One-sided MPI over librt-pp: Open MPI 4.1's osc rdma over its btl ofi,
# restricted to provider pp (libpp-fi.so from the build), runs
# tests/integration/mpi_osc_check.c (put, get, accumulate, fetch-and-op,
# compare-and-swap under fence and under passive-target locks), two ranks on
# two nodes; point-to-point goes over btl tcp. The run must print
# "mpi_osc_check: N checks passed" and exit 0, and each rank's pp port must
# have carried the 1 MiB windows' puts and gets (its pcap_dump holds more
# than 8 MiB of librt-pp frames).
#   ofi_mpi_osc.sh OFI_DIR TESTBED_SH MPI_OSC_CHECK_C NETNS_AGENT
# On the test bed (namespaces ppn0, ppn1, port pp0 of each) unless
# OFI_OSC_NODES names two nodes of one's own, "NS:PORT:IP NS:PORT:IP"
# (namespaces up, each port's IP on one subnet); then the test bed is not
# touched.
# Debian's /etc/openmpi/openmpi-mca-params.conf leaves btl ofi out
# (btl = ^uct,openib,ofi): the command line's --mca btl self,tcp,ofi takes it
# back. Open MPI 4.1's osc rdma hands btl ofi accumulate operations its
# to_fi_op aborts on (all but sum and replace), so accumulates go by
# compare-and-swap (osc_rdma_acc_use_amo false). Skips (77) without root,
# mpicc, mpirun or Open MPI's btl ofi.
set -uo pipefail
ofi=$(realpath "$1") tb=$2 src=$3 agent=$(realpath "$4")
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in mpicc mpirun ompi_info python3; do
  command -v "$t" >/dev/null || { echo "SKIP: '$t' is missing (tests/deps.sh)"; exit 77; }
done
[ -f "$ofi/libpp-fi.so" ] || { echo "SKIP: $ofi/libpp-fi.so not built (-Dofi)"; exit 77; }
ompi_info | grep -q 'MCA btl: ofi' || { echo "SKIP: Open MPI has no btl ofi"; exit 77; }
ompi_info | grep -q 'MCA osc: rdma' || { echo "SKIP: Open MPI has no osc rdma"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

tmp=$(mktemp -d /tmp/pp-ofi-osc.XXXXXX)
plen=24 own=${OFI_OSC_NODES:-}
if [ -z "$own" ]; then
  # Not ofi_mpi.sh's or fabtests.sh's addresses.
  ip0=10.77.8.1 ip1=10.77.8.2
  set -- "ppn0:pp0:$ip0" "ppn1:pp0:$ip1"
else
  # shellcheck disable=SC2086
  set -- $own
fi
IFS=: read -r ns0 dev0 ip0 <<<"$1"
IFS=: read -r ns1 dev1 ip1 <<<"$2"
cleanup() {
  if [ -z "$own" ]; then
    ip -n "$ns0" addr del "$ip0/$plen" dev "$dev0" 2>/dev/null
    ip -n "$ns1" addr del "$ip1/$plen" dev "$dev1" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
# A signal too (meson's timeout, Ctrl-C): without it the EXIT trap does not
# run and the addresses given to the test bed's ports stay for the next job.
trap 'exit 130' INT TERM

mpicc -std=c11 -O2 -Wall -o "$tmp/mpi_osc_check" "$src" || fail "mpicc $src"
if [ -z "$own" ]; then
  TESTBED_MTU=9000 "$tb" up 2 1 >/dev/null || fail "testbed.sh up 2 1"
  ip -n "$ns0" addr add "$ip0/$plen" dev "$dev0" || fail "address on $ns0 $dev0"
  ip -n "$ns1" addr add "$ip1/$plen" dev "$dev1" || fail "address on $ns1 $dev1"
fi
net=${ip0%.*}.0/$plen

# Each rank: its node's port, a capture of it.
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then export PP_DEV=packet:$dev0; else export PP_DEV=packet:$dev1; fi
export PP_PCAP_DUMP=$tmp/cap.\$OMPI_COMM_WORLD_RANK.pcap
exec "$tmp/mpi_osc_check"
EOF
chmod +x "$tmp/rank.sh"

rc=0
(cd "$tmp" && NETNS_AGENT_HOSTS="$ip0=$ns0=0 $ip1=$ns1=$(($(nproc) > 1 ? 1 : 0))" \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  timeout -k 5 240 ip netns exec "$ns0" mpirun -np 2 --host "$ip0,$ip1" --bind-to none \
  --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include "$net" \
  --mca pml ob1 --mca btl self,tcp,ofi --mca btl_tcp_if_include "$net" \
  --mca btl_ofi_provider_include pp --mca osc rdma --mca osc_rdma_btls ofi \
  --mca osc_rdma_acc_use_amo false -x FI_PROVIDER_PATH="$ofi" "$tmp/rank.sh") \
  >"$tmp/osc.log" 2>&1 || rc=$?
[ $rc -eq 0 ] || { cat "$tmp/osc.log"; fail "mpirun exited $rc"; }
grep -Eq '^mpi_osc_check: [1-9][0-9]* checks passed$' "$tmp/osc.log" ||
  { cat "$tmp/osc.log"; fail "no 'checks passed'"; }

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
for r in 0 1; do
  [ -s "$tmp/cap.$r.pcap" ] || fail "rank $r's port captured nothing"
  read -r n b < <(frames "$tmp/cap.$r.pcap")
  [ "$b" -gt $((8 << 20)) ] || fail "rank $r's port carried $n librt-pp frames, $b bytes"
done
echo "ok: $(grep '^mpi_osc_check:' "$tmp/osc.log"), osc rdma over btl ofi and provider pp ($n frames, $b bytes at rank 1's port)"
