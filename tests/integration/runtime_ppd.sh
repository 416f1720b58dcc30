#!/usr/bin/env bash
# The node daemon ppd over the test bed (issue 8):
#   runtime_ppd.sh PPRUN RT_CHECK PPD_CHECK PPD PP_PINGPONG TESTBED
# 1. 2 nodes x 2 ranks through daemons (pprun --daemon): every rt_check
#    scenario (sizes 0 B .. 16 MiB + 3, many outstanding, matching, truncation,
#    early/late), bytes checked; storms of pulled messages; node-mates talk through the daemon's loopback
#    (its counters say so), large frames to the other node leave from the
#    ranks' slots without a copy; the same with two handlers per daemon (two
#    NIC queue pairs); pp_pingpong early and late with --check; a rank that
#    shares its handler's core hands it the core at each send, one on
#    another core never (stats=text: daemon_handovers).
# 2. A rank killed mid-transfer while the other rank of its node keeps
#    exchanging messages (ppd_check killmate): the survivors' traffic is
#    intact, their receives from the dead rank fail with -ECONNRESET (the BYE
#    the daemon sends for it), its sender's send too.
# 3. A rank hands the daemon ranges it does not own (ppd_check badrange):
#    each such frame fails and nothing of it is sent; the daemon counts them.
#    A process of another uid may not attach.
# 5. Pull handlers (ppd's own): a sender posts isends of 1 KiB .. 16 MiB and
#    computes without pp_* calls until its late receiver has each whole
#    message (rt_check daemonpull, a flag file): the daemon's handlers served
#    the PULLs (its --stats count them); with --no-pull-serve the same run
#    sees nothing arrive while the sender computes (the control); with loss on
#    the link every byte still arrives, the handlers resending; a send whose
#    buffer is gone when its PULL comes fails (-ECONNRESET) with nothing sent.
# 6. Placement: 2 nodes x 1 rank, messages 64 KiB .. 16 MiB (rt_check
#    sizes), bytes checked: the daemons write large DATA payload straight
#    into the receive buffers (--stats: placed_bytes > 0); the same with
#    --no-place places nothing; at 20/1000 loss (5.) every byte still
#    arrives, with frames placed.
#    At 5 % loss on the daemons' ports (pprun --fault): a storm of pulled
#    messages and every size, bytes checked.
# 7. Dozing daemons (ppd --doze, packet: ports): every scenario and a
#    computing sender's late receives; the daemons slept (--stats: dozes >
#    0); without --doze they never do.
# 4. The daemon restarted between two jobs: each pprun --daemon starts and
#    stops its daemons; a daemon killed with SIGKILL leaves a socket behind
#    that the next one replaces; SIGTERM drains and exits 0, removing the
#    socket.
set -uo pipefail
pprun=$1 rtc=$2 ppdc=$3 ppd=$4 pingpong=$5 tb=$6
kind=af_packet
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
export PP_TIMEOUT_MS=3000 PPRUN_PPD=$ppd
"$tb" up 2 1 >/dev/null || fail "test bed"
log=$(mktemp /tmp/pp-ppd.XXXXXX)
dpid=
trap '[ -n "$dpid" ] && kill -9 "$dpid" 2>/dev/null; rm -f "$log"; "$tb" down >/dev/null 2>&1' EXIT

. "$(dirname "$0")/rt_run.sh"
run() {
  rt_run "$@" || return
  echo "ok: $rt_name ($rt_ok checks)"
}

# Sum of one column of the daemons' final counters in the log.
counter() {
  awk -v col="$1" '$1 ~ /^[0-9]+$/ && NF > 10 && $0 ~ /no_rank=/ { s += $col } END { print s + 0 }' "$log"
}

# 1. Two nodes, two ranks each, through the daemons.
run "4 ranks on 2 nodes through daemons, all scenarios" 17 -n 4 --nodes 2 --daemon -- "$rtc" all
# Every rank posts 64 receives and 64 sends of 3000 B to every other at once:
# the rest of each is served by the handlers while the second push may still
# wait for the window (a send once ended early and its receive hung).
for k in 1 2 3; do
  run "storm $k of 3, push-pull through daemons" 4 -n 4 --nodes 2 --daemon --mode push-pull -- "$rtc" storm
done
[ "$(counter 8)" -gt 0 ] || { cat "$log"; fail "no frame went between node-mates through the daemon's loopback"; }
[ "$(counter 5)" -gt 0 ] || fail "no frame went from the daemons to the NIC"
[ "$(counter 9)" -gt 0 ] || fail "no frame left a rank's slot without a copy (af_packet takes external buffers)"
echo "ok: node-mates through the daemon's loopback ($(counter 8) frames), others over the NIC ($(counter 5) frames, $(counter 9) sent from the ranks' slots without a copy)"
# Two handlers per daemon, each with its own NIC queue pair and its own ranks:
# a wrapper gives ppd two queue pairs and two cores.
wrap=$(mktemp /tmp/ppd-2q.XXXXXX)
cat >"$wrap" <<EOF
#!/bin/sh
# ppd with two handlers: --dev gets qpairs=2, --cores becomes 0-1
n=\$#; i=0
while [ \$i -lt \$n ]; do
  a=\$1; shift; i=\$((i + 1))
  case \$a in
  --dev) set -- "\$@" --dev "\$1,qpairs=2"; shift; i=\$((i + 1)) ;;
  --cores) set -- "\$@" --cores 0-1; shift; i=\$((i + 1)) ;;
  *) set -- "\$@" "\$a" ;;
  esac
done
exec "$ppd" "\$@"
EOF
chmod +x "$wrap"
run "2 handlers per daemon, 4 ranks on 2 nodes, all scenarios" 17 -n 4 --nodes 2 --daemon --ppd "$wrap" -- "$rtc" all
rm -f "$wrap"
handlers=$(grep -c -E '^1 +[0-9]+ +[0-9]+ .*no_rank=' "$log")
[ "$handlers" -eq 2 ] || { cat "$log"; fail "want a second handler in each of the 2 daemons, saw $handlers"; }
echo "ok: each daemon ran 2 handlers"
out=$("$pprun" -n 2 --nodes 2 --daemon --dev-kind "$kind" --timeout 120 -- \
  "$pingpong" --test early,late --sizes 4,4096,65536 --iters 20 --warmup 2 --check 2>&1) ||
  { echo "$out"; fail "pp_pingpong early/late through daemons"; }
rows=$(grep -c -E "^\[0\] (early|late)" <<<"$out")
[ "$rows" -eq 6 ] || { echo "$out"; fail "pp_pingpong: $rows early/late rows, want 6"; }
echo "ok: pp_pingpong early and late through daemons, 3 sizes, bytes checked"
# The BTP fit through daemons: the port gives the NIC's speed (the rate
# starts there) and the round trips are timed with a fresh clock (a reused
# reading made them 0.2 us, and 1 KiB waited 30 us for its PULL).
fit=$(grep -o 'least round trip [0-9.]* us, of a PULL [0-9.]* us, rate [0-9]* MB/s' <<<"$out" | head -1)
awk '{ exit !($4 >= 1.0 && $12 > 0) }' <<<"$fit" ||
  { echo "$out"; fail "BTP fit through daemons: '$fit', want a round trip of 1 us or more and a rate"; }
echo "ok: BTP fit through daemons: $fit"
# The hand-over at send (driver/ppd/ppd_port.c): a rank whose home handler is
# awake on the rank's own core gives it the core once frames are queued, so
# they leave before the rank goes back to computing; a rank on another core
# has no reason to. --ppd-cores 1 puts both daemons' handlers on core 1,
# with rank 1 and away from rank 0.
out=$("$pprun" -n 2 --nodes 2 --daemon --ppd-cores 1 --dev-kind "$kind" --timeout 120 -- \
  "$pingpong" --test early --sizes 4 --iters 20 --warmup 2 --check --config stats=text 2>&1) ||
  { echo "$out"; fail "pp_pingpong early through daemons on core 1"; }
h0=$(awk '/rank 0: daemon_handovers/ { print $NF }' <<<"$out")
h1=$(awk '/rank 1: daemon_handovers/ { print $NF }' <<<"$out")
[ "${h0:-x}" = 0 ] && [ "${h1:-0}" -ge 22 ] ||
  { echo "$out"; fail "hand-overs: rank 0 (core 0) ${h0:-none}, want 0; rank 1 (its handler's core) ${h1:-none}, want >= 22 (one per send)"; }
echo "ok: hand-over at send: $h1 by the rank sharing its handler's core, none by the other"

# 5. Pull handlers. The paper's split BTPs (not fitted to the path), so that
# every message above 760 bytes waits for its PULL: fitted, through daemons
# a message of tens of KiB is pushed whole.
split=(-c btp1=80,btp2=680)
named() { grep -o "$1=[0-9]*" "$log" | awk -F= '{ s += $2 } END { print s + 0 }'; }
run "late receives from a computing sender, served by the daemon's handlers" 1 \
  -n 2 --nodes 2 --daemon -- "$rtc" "${split[@]}" --compute 20 daemonpull
[ "$(grep -c 'the receiver received the message during it' "$log")" -eq 4 ] ||
  { cat "$log"; fail "want 4 messages received while the sender computed"; }
[ "$(named pulls_served)" -ge 4 ] && [ "$(named pulls_failed)" -eq 0 ] ||
  { cat "$log"; fail "want >= 4 pulls served by the handlers, none failed"; }
echo "ok: 4 late receives (1 KiB .. 16 MiB) completed while the sender computed; the handlers served $(named pulls_served) pulls ($(named pull_frames) DATA frames)"
nps=$(mktemp /tmp/ppd-nps.XXXXXX)
printf '#!/bin/sh\nexec "%s" --no-pull-serve "$@"\n' "$ppd" >"$nps"
chmod +x "$nps"
run "the same with --no-pull-serve (control)" 1 \
  -n 2 --nodes 2 --daemon --ppd "$nps" -- "$rtc" "${split[@]}" --no-progress --compute 0.5 daemonpull
rm -f "$nps"
[ "$(grep -c 'the receiver did not receive the message during it' "$log")" -eq 4 ] &&
  [ "$(named pulls_served)" -eq 0 ] || { cat "$log"; fail "control: served without the handlers"; }
echo "ok: control: with --no-pull-serve nothing arrived while the sender computed, 0 pulls served"
# 6. Placement.
run "sizes 2 nodes x 1 rank through daemons, DATA placed" 2 -n 2 --nodes 2 --daemon -- "$rtc" sizes
[ "$(named placed_bytes)" -gt 0 ] && [ "$(named place_failed)" -eq 0 ] ||
  { cat "$log"; fail "want DATA payload placed into the receive buffers, no failed write"; }
echo "ok: every byte intact; the daemons placed $(named placed_bytes) bytes in $(named placed_frames) frames"
npl=$(mktemp /tmp/ppd-npl.XXXXXX)
printf '#!/bin/sh\nexec "%s" --no-place "$@"\n' "$ppd" >"$npl"
chmod +x "$npl"
run "the same with --no-place" 2 -n 2 --nodes 2 --daemon --ppd "$npl" -- "$rtc" sizes
rm -f "$npl"
[ "$(named placed_frames)" -eq 0 ] || { cat "$log"; fail "--no-place placed frames"; }
echo "ok: with --no-place every byte intact, nothing placed"
# 7. Dozing (ppd --doze): on packet: ports (a wait descriptor) a handler
# none of whose ranks waits sleeps until the NIC or a rank wakes it. Every
# scenario and a computing sender's late receives through dozing daemons,
# then the control without --doze.
dz=$(mktemp /tmp/ppd-dz.XXXXXX)
printf '#!/bin/sh\nexec "%s" --doze "$@"\n' "$ppd" >"$dz"
chmod +x "$dz"
run "4 ranks on 2 nodes through dozing daemons (packet), all scenarios" 17 \
  -n 4 --nodes 2 --daemon --dev-kind packet --ppd "$dz" -- "$rtc" all
run "late receives from a computing sender through dozing daemons (packet)" 1 \
  -n 2 --nodes 2 --daemon --dev-kind packet --ppd "$dz" -- "$rtc" "${split[@]}" --compute 20 daemonpull
rm -f "$dz"
[ "$(grep -c 'the receiver received the message during it' "$log")" -eq 4 ] ||
  { cat "$log"; fail "dozing: want 4 messages received while the sender computed"; }
[ "$(named dozes)" -gt 0 ] || { cat "$log"; fail "the daemons never dozed"; }
echo "ok: every scenario and 4 late receives through dozing daemons; they slept $(named dozes) times"
run "the same without --doze (control)" 1 \
  -n 2 --nodes 2 --daemon --dev-kind packet -- "$rtc" "${split[@]}" --compute 20 daemonpull
[ "$(named dozes)" -eq 0 ] || { cat "$log"; fail "without --doze a handler dozed"; }
echo "ok: without --doze no handler slept"
if command -v clang >/dev/null; then
  bpf=$(mktemp -d /tmp/pp-ppd-loss.XXXXXX)
  cat >"$bpf/loss.c" <<'BPF'
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
SEC("tc")
int loss(struct __sk_buff *skb)
{
	(void)skb;
	return bpf_get_prandom_u32() % 1000 < 20 ? TC_ACT_SHOT : TC_ACT_OK;
}
char _license[] SEC("license") = "GPL";
BPF
  if clang -O2 -target bpf -I"/usr/include/$(uname -m)-linux-gnu" -c "$bpf/loss.c" -o "$bpf/loss.o" 2>/dev/null; then
    for p in ppn0p0 ppn1p0; do
      tc qdisc add dev "$p" clsact && tc filter add dev "$p" egress bpf da obj "$bpf/loss.o" sec tc ||
        fail "cannot attach the loss program to $p"
    done
    rt_timeout=180 run "sizes through daemons at 20/1000 loss, handlers serving" 2 \
      -n 2 --nodes 2 --daemon -- "$rtc" --expect-loss sizes
    for p in ppn0p0 ppn1p0; do tc qdisc del dev "$p" clsact 2>/dev/null; done
    [ "$(named pulls_served)" -gt 0 ] && [ "$(named pull_retx)" -gt 0 ] ||
      { cat "$log"; fail "at 20/1000 loss: want pulls served and DATA resent by the handlers"; }
    [ "$(named placed_bytes)" -gt 0 ] || { cat "$log"; fail "at 20/1000 loss: nothing placed"; }
    echo "ok: at 20/1000 loss every byte arrived; the handlers served $(named pulls_served) pulls, resending $(named pull_retx) frames; $(named placed_bytes) bytes placed"
  else
    echo "skip: loss run (cannot build the BPF loss program)"
  fi
  rm -rf "$bpf"
fi
# The daemons' own port with 5 % of what it receives dropped (pprun --fault
# wraps the daemons' DPDK ports): a PULL the daemon takes can reach the
# rank's engine out of order and be dropped there, its resend coming after
# the handler's DATA finished the receive; the sender must still complete
# (a storm of pulled messages once hung so, every time). Five runs: a
# receiver's goodbye ending the daemon's pull jobs towards it before its last
# ack was repaired failed about one run in thirteen.
for k in 1 2 3 4 5; do
  run "storm $k of 5 through daemons, 5 % loss at the daemons' ports" 2 \
    -n 2 --nodes 2 --daemon --fault loss=0.05 --mode push-pull -- "$rtc" storm
  [ "$(named pulls_served)" -gt 0 ] || { cat "$log"; fail "storm at 5 % loss: no pull served by the handlers"; }
done
rt_timeout=180 run "sizes through daemons, 5 % loss at the daemons' ports" 2 \
  -n 2 --nodes 2 --daemon --fault loss=0.05 -- "$rtc" --expect-loss sizes
[ "$(named pull_retx)" -gt 0 ] || { cat "$log"; fail "sizes at 5 % loss: the handlers resent nothing"; }
echo "ok: at 5 % loss the storm and every size arrived; the handlers served $(named pulls_served) pulls, resending $(named pull_retx) frames"
run "a send whose buffer is gone when its PULL comes" 2 -n 2 --nodes 2 --daemon -- "$rtc" "${split[@]}" badpull
[ "$(named pulls_failed)" -eq 1 ] && [ "$(named bad_range)" -eq 1 ] && [ "$(named pull_frames)" -eq 0 ] ||
  { cat "$log"; fail "badpull: want 1 pull failed on 1 bad range, no DATA frame sent"; }
echo "ok: the daemon could not read the buffer: it sent nothing, the send failed with -ECONNRESET"

# 2. A rank killed while its node-mate keeps exchanging.
run "rank 1 killed mid-transfer, node-mate 0 keeps exchanging with 2" 3 -n 4 --nodes 2 --daemon -- "$ppdc" killmate

# 3. Address ranges a rank does not own.
sock=/run/pp/ppd-check.sock
ip netns exec ppn0 "$ppd" --dev "--vdev=net_${kind}0,iface=pp0" --socket "$sock" --cores 0 --bind-first-attacher >"$log" 2>&1 &
dpid=$!
for _ in $(seq 200); do "$ppd" --stats --socket "$sock" >/dev/null 2>&1 && break; sleep 0.05; done
"$ppdc" badrange "$sock" || { cat "$log"; fail "badrange"; }
stats=$("$ppd" --stats --socket "$sock") || fail "ppd --stats"
grep -q "bad_range=3 " <<<"$stats" && grep -q "spoof=1 " <<<"$stats" ||
  { echo "$stats"; fail "the daemon did not count 3 bad ranges and 1 spoofed frame"; }
echo "ok: ranges a rank does not own fail with nothing sent; ppd --stats counts them"
# Credentials: a process of another uid cannot even connect (the socket is
# 0600), and is told why.
if command -v setpriv >/dev/null; then
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$ppdc" badrange "$sock" 2>&1) &&
    { echo "$out"; fail "a rank of uid 65534 attached to a daemon of uid 0"; }
  grep -q "Permission denied.*may this user attach" <<<"$out" || { echo "$out"; fail "no reason given for the refusal"; }
  echo "ok: a rank of another uid is refused (socket mode 0600), and told why"
fi

# 4. Restarts. SIGKILL leaves the socket behind...
kill -9 "$dpid"; wait "$dpid" 2>/dev/null; dpid=
[ -S "$sock" ] || fail "expected a socket left behind by the killed daemon"
ip netns exec ppn0 "$ppd" --dev "--vdev=net_${kind}0,iface=pp0" --socket "$sock" --cores 0 --bind-first-attacher >"$log" 2>&1 &
dpid=$!
for _ in $(seq 200); do "$ppd" --stats --socket "$sock" >/dev/null 2>&1 && break; sleep 0.05; done
"$ppd" --stats --socket "$sock" >/dev/null || { cat "$log"; fail "a new daemon did not replace the stale socket"; }
# ... SIGTERM drains, exits 0 and removes it.
kill -TERM "$dpid"; wait "$dpid"; rc=$?; dpid=
[ $rc -eq 0 ] || { cat "$log"; fail "ppd exited $rc on SIGTERM"; }
[ ! -e "$sock" ] || fail "ppd left its socket behind after SIGTERM"
echo "ok: a daemon replaces a dead one's socket; SIGTERM drains, exits 0, removes the socket"
for job in 1 2; do
  run "job $job of 2, daemons started afresh, many" 4 -n 4 --nodes 2 --daemon -- "$rtc" many
done
echo "PASS: ranks through the node daemon ppd"
