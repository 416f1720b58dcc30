#!/usr/bin/env bash
# Loss on the link, survived with every byte intact:
#   runtime_lossy.sh PPRUN RT_CHECK TESTBED DEV_KIND [PERMILLE]
# Frames the bridge sends toward each rank's port are dropped at random
# (PERMILLE per thousand, default 50) by a tc BPF program on the host-side
# veth's egress: receive-side loss, which AF_XDP transmit cannot bypass. (This
# kernel has no netem; the program is built here with clang -target bpf.)
# rt_check then runs its scenarios with --expect-loss: every byte checked,
# and frames really were retransmitted. Over udp (kind udp: datagrams with
# GSO and GRO) the loss takes whole coalesced datagrams, the frames in them
# together.
set -uo pipefail
pprun=$1 rtc=$2 tb=$3 kind=$4 permille=${5:-50}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
export PP_TIMEOUT_MS=5000
"$tb" up 2 2 >/dev/null || fail "test bed"
dir=$(mktemp -d /tmp/pp-lossy.XXXXXX)
ports="ppn0p0 ppn0p1 ppn1p0 ppn1p1"
cleanup() {
  for p in $ports; do tc qdisc del dev "$p" clsact 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT

cat >"$dir/loss.c" <<'BPF'
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
SEC("tc")
int loss(struct __sk_buff *skb)
{
	(void)skb;
	return bpf_get_prandom_u32() % 1000 < LOSS_PERMILLE ? TC_ACT_SHOT : TC_ACT_OK;
}
char _license[] SEC("license") = "GPL";
BPF
clang -O2 -target bpf -DLOSS_PERMILLE="$permille" -I"/usr/include/$(uname -m)-linux-gnu" \
  -c "$dir/loss.c" -o "$dir/loss.o" 2>"$dir/cc.log" ||
  { cat "$dir/cc.log"; echo "SKIP: cannot build the BPF loss program (clang -target bpf)"; exit 77; }
for p in $ports; do
  tc qdisc add dev "$p" clsact && tc filter add dev "$p" egress bpf da obj "$dir/loss.o" sec tc ||
    fail "cannot attach the loss program to $p"
done

log=$dir/log
. "$(dirname "$0")/rt_run.sh"
rt_timeout=120
rt_label="at $permille/1000 loss"
run() {
  rt_run "$@" || return
  echo "ok: $rt_name at $permille/1000 loss ($rt_ok checks); $(grep -o 'retransmits [0-9]*' "$log" | paste -sd, -)"
}

for mode in push-pull push-all push-zero; do
  run "2 ranks, $mode, all scenarios" 9 -n 2 --nodes 2 --mode "$mode" -- "$rtc" --expect-loss all
done
run "4 ranks on 2 nodes, many" 4 -n 4 --nodes 2 -- "$rtc" --expect-loss many
echo "PASS: loss survived over $kind"
