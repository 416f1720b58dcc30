#!/usr/bin/env bash
# Frames of 60 bytes to MTU+14 round-trip intact between two pp_probe
# processes, over one backend:
#
#   driver_probe.sh PP_PROBE TESTBED_SH BACKEND
#
# BACKEND is pcap, packet, af_packet or af_xdp (ppn0 <-> ppn1 of the test bed, each
# process pinned to its own core), or memif (two processes in ppn0 joined by
# a memif socket). Both sides run with --check: every payload byte is
# verified, and any loss or mismatch fails the test. The sender also writes
# a pcap_dump, which tshark must read back with every frame in it.
set -euo pipefail
probe=$1 testbed=$2 backend=$3
count=${PP_PROBE_COUNT:-720}
sizes=60,61,63,64,65,100,127,128,255,256,511,512,1000,1023,1024,1499,1513,mtu
tmp=$(mktemp -d)
lpid=
cleanup() {
  [ -n "$lpid" ] && kill "$lpid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

"$testbed" up 2 >/dev/null
peer=$("$testbed" mac 1 0)
ns_l=ppn1 ns_s=ppn0
case $backend in
  pcap) dev_l=pcap:pp0 dev_s=pcap:pp0 ;;
  packet) dev_l=packet:pp0 dev_s=packet:pp0 ;;
  af_packet) dev_l=--vdev=net_af_packet0,iface=pp0 dev_s=$dev_l ;;
  af_xdp) dev_l=--vdev=net_af_xdp0,iface=pp0,start_queue=0,queue_count=1 dev_s=$dev_l ;;
  memif)
    sock=$tmp/memif.sock
    ns_l=ppn0
    peer=02:50:50:00:0a:01
    dev_l="--vdev=net_memif0,role=server,id=0,socket=$sock,socket-abstract=no,mac=$peer"
    dev_s="--vdev=net_memif0,role=client,id=0,socket=$sock,socket-abstract=no,mac=02:50:50:00:0b:01"
    ;;
  *) echo "driver_probe.sh: unknown backend '$backend'" >&2; exit 2 ;;
esac

ip netns exec "$ns_l" taskset -c 1 "$probe" --dev "$dev_l" --listen --check \
  --count "$count" --wait-ms 30000 --timeout-ms 10000 >"$tmp/listen.out" 2>&1 &
lpid=$!
# memif: the server must create the socket before the client connects
for _ in $(seq 100); do
  grep -q '^listening' "$tmp/listen.out" && break
  kill -0 "$lpid" 2>/dev/null || break
  sleep 0.1
done
rc=0
ip netns exec "$ns_s" taskset -c 0 "$probe" --dev "$dev_s" --peer "$peer" --check \
  --count "$count" --size "$sizes" --pcap-dump "$tmp/sent.pcap" >"$tmp/send.out" 2>&1 || rc=$?
lrc=0
wait "$lpid" || lrc=$?
lpid=
echo "--- sender ($dev_s)"; cat "$tmp/send.out"
echo "--- listener ($dev_l)"; cat "$tmp/listen.out"
[ $rc -eq 0 ] || { echo "FAIL: sender exited $rc"; exit 1; }
[ $lrc -eq 0 ] || { echo "FAIL: listener exited $lrc"; exit 1; }
grep -q "answered $count, lost 0, bad payload 0" "$tmp/send.out" || { echo "FAIL: loss"; exit 1; }

# The capture holds every frame the sender's port sent and received.
read -r tx rx < <(sed -n 's/^frames *sent \([0-9]*\), received \([0-9]*\)$/\1 \2/p' "$tmp/send.out")
if command -v tshark >/dev/null; then
  n=$(tshark -r "$tmp/sent.pcap" -T fields -e frame.number 2>/dev/null | wc -l)
  probes=$(tshark -r "$tmp/sent.pcap" -Y 'eth.type == 0x88b5' -T fields -e frame.len 2>/dev/null | wc -l)
  echo "capture: $n frames read back by tshark ($probes EtherType 0x88B5), pp_probe sent $tx + received $rx"
  [ "$n" -eq $((rx + tx)) ] && [ "$probes" -eq "$n" ] || { echo "FAIL: capture"; exit 1; }
else
  echo "capture: tshark missing, not checked"
fi
if [ "$backend" = af_xdp ]; then
  # frame=udp is refused on af_xdp (its XDP program takes the kernel's ARP),
  # saying why, and the port is left as it was: a probe over it still runs.
  if ip netns exec "$ns_s" "$probe" --dev "$dev_s frame=udp" --peer "$peer" --count 1 \
    >"$tmp/udp.out" 2>&1; then
    echo "FAIL: af_xdp took frame=udp"; exit 1
  fi
  grep -q "frame=udp does not work on net_af_xdp" "$tmp/udp.out" ||
    { cat "$tmp/udp.out"; echo "FAIL: af_xdp's frame=udp refusal does not say why"; exit 1; }
  ip netns exec "$ns_l" taskset -c 1 "$probe" --dev "$dev_l" --listen --count 10 \
    --wait-ms 30000 --timeout-ms 10000 >"$tmp/listen2.out" 2>&1 &
  lpid=$!
  for _ in $(seq 100); do grep -q '^listening' "$tmp/listen2.out" && break; sleep 0.1; done
  ip netns exec "$ns_s" taskset -c 0 "$probe" --dev "$dev_s" --peer "$peer" --count 10 \
    >"$tmp/send2.out" 2>&1 || { cat "$tmp/send2.out"; echo "FAIL: af_xdp after the refusal"; exit 1; }
  wait "$lpid" || { cat "$tmp/listen2.out"; echo "FAIL: listener after the refusal"; exit 1; }
  lpid=
  echo "frame=udp on af_xdp: refused, and the port runs after"
fi
echo "PASS: $backend"
