#!/usr/bin/env bash
# pp_info: its sections say what the code says (wire and region versions from
# the headers, every configuration key the parser takes, each one in the
# README, PP_<KEY> shown), --check opens a port (an in-memory one), --config
# checks settings and names the bootstrap, and bad arguments are refused
# with a clear message.
# usage: pp_info_test.sh PP_INFO SOURCE_ROOT PMIX OFI (yes|no: the build has it)
set -uo pipefail
info=$1 src=$2 pmix=$3 ofi=$4
fail() { echo "FAIL: $*"; exit 1; }
out=$(mktemp /tmp/pp-info-test.XXXXXX)
trap 'rm -f "$out"' EXIT

"$info" --help >"$out" || fail "--help"
grep -q "^usage: pp_info" "$out" || fail "--help: no usage line"

# Versions, from the headers that define them.
wire=$(awk '$2 == "PP_WIRE_VERSION" { print $3 }' "$src/proto/wire.h")
region=$(awk '$2 == "PPD_VERSION" { sub(/u$/, "", $3); print $3 }' "$src/driver/ppd/ppd_shm.h")
[ -n "$wire" ] && [ -n "$region" ] || fail "versions not found in the headers"
"$info" --version >"$out" || fail "--version"
grep -q "^librt-pp [0-9]" "$out" || fail "no library version"
grep -q "^wire format version $wire " "$out" || { cat "$out"; fail "wire version is not $wire"; }
grep -q "^ppd region version $region " "$out" || { cat "$out"; fail "region version is not $region"; }

"$info" --features >"$out" || fail "--features"
for f in DPDK libpcap hwloc PMIx libfabric; do
  grep -Eq "^  $f +(yes|no)" "$out" || { cat "$out"; fail "feature $f missing"; }
done
grep -Eq "^  PMIx +$pmix" "$out" || { cat "$out"; fail "PMIx is not '$pmix' as the build says"; }
grep -Eq "^  libfabric +$ofi" "$out" || { cat "$out"; fail "libfabric is not '$ofi' as the build says"; }
grep -Eq "^  hwloc +yes" "$out" || fail "hwloc is required"

"$info" --devices >"$out" || fail "--devices"
grep -Eq "^  sim +yes " "$out" || { cat "$out"; fail "sim backend not listed"; }
grep -Eq "^  packet +yes +packet:IFACE " "$out" || { cat "$out"; fail "packet backend not listed"; }
grep -Eq "^  udp +yes +udp:ADDR:PORT " "$out" || { cat "$out"; fail "udp backend not listed"; }
lo_mtu=$(cat /sys/class/net/lo/mtu)
grep -Eq "^  lo +$lo_mtu " "$out" || { cat "$out"; fail "lo with MTU $lo_mtu not listed"; }
grep -Eq "^  lo .*\| udp:127\.0\.0\.1:PORT \| packet:lo,frame=udp$" "$out" ||
  { cat "$out"; fail "lo's udp: and frame=udp devices not offered"; }
# The kind to give a rank here, and why: packet: where raw ports open
# (root), udp: where they do not (user nobody).
if [ "$(id -u)" -eq 0 ]; then
  grep -q "^port kind for a rank here: packet:IFACE (raw ports open here" "$out" ||
    { cat "$out"; fail "as root: packet: not named"; }
  as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  if "${as[@]}" test -x "$info"; then
    "${as[@]}" "$info" --devices >"$out" 2>&1 || fail "--devices as nobody"
    grep -q "^port kind for a rank here: udp:ADDR:PORT (no raw port opens here" "$out" &&
      grep -q "becomes udp: on IFACE's address by itself (udp_fallback)" "$out" ||
      { cat "$out"; fail "as nobody: udp: and the fallback not named"; }
  else
    echo "notice: user nobody cannot run $info: the unprivileged line not checked"
  fi
fi

"$info" --topology >"$out" || fail "--topology"
grep -q "^placement (default): [0-9]* pull handler(s):" "$out" || { cat "$out"; fail "no placement"; }

# Every key listed is one the parser takes, with its default; every key is
# in the README's configuration section; PP_<KEY> is shown.
PP_BTP1=96 "$info" --keys >"$out" || fail "--keys"
mapfile -t rows < <(awk '/^  [a-z]/ && $1 != "key" { print $1, $2 }' "$out")
[ "${#rows[@]}" -ge 25 ] || { cat "$out"; fail "only ${#rows[@]} keys listed"; }
readme=$(sed -n '/^## Configuration/,/^## /p' "$src/README.md")
for r in "${rows[@]}"; do
  key=${r%% *} def=${r#* }
  grep -q "\`$key\`" <<<"$readme" || fail "key '$key' is not in the README's Configuration section"
  [ "$def" = "-" ] && val=1 || val=$def
  [ "$key" = size ] && val=2
  "$info" --config "rank=0,size=2,$key=$val" >/dev/null 2>&1 ||
    fail "the parser refuses listed key '$key' with its default '$val'"
done
grep -Eq "^  btp1 +80 +96 " "$out" || { grep btp1 "$out"; fail "PP_BTP1 not shown"; }
grep -q "^environment: every PP_\* variable parses" "$out" || fail "environment verdict"
PP_FROB=1 "$info" --keys >"$out" 2>&1 || fail "--keys with a bad environment"
grep -q "unknown configuration key 'frob'" "$out" || fail "unknown PP_FROB not named"
grep -q "^environment: pp_init would refuse it" "$out" || fail "bad environment not said"

# --config: good, and bad ones named.
"$info" --config "credits=off,mode=push-all,size=4,rank=3" >"$out" 2>&1 || fail "--config good"
grep -q "rank 3, size 4, mode push-all" "$out" || { cat "$out"; fail "--config summary"; }
grep -qx "bootstrap: settings, HELLO discovery" "$out" || { cat "$out"; fail "--config bootstrap"; }
# The bootstrap pp_init would use: a PMIx launcher's variables, and settings that win.
want=$([ "$pmix" = yes ] && echo pmix || echo "settings, HELLO discovery")
PMIX_NAMESPACE=t.1 PMIX_RANK=0 "$info" --config "dev=pcap:lo" >"$out" 2>&1 || fail "--config pmix"
grep -qx "bootstrap: $want (a PMIx launcher's variables are set)" "$out" ||
  { cat "$out"; fail "--config under a launcher: want $want"; }
PMIX_NAMESPACE=t.1 PMIX_RANK=0 "$info" --config "rank=0,size=2,cluster=/x" >"$out" 2>&1 ||
  fail "--config settings under a launcher"
grep -q "^bootstrap: settings, cluster file " "$out" || { cat "$out"; fail "settings do not win"; }
"$info" --config "frobnicate=1" >"$out" 2>&1 && fail "--config took an unknown key"
grep -q "unknown configuration key 'frobnicate'" "$out" || { cat "$out"; fail "unknown key not named"; }
"$info" --config "credits=maybe" >"$out" 2>&1 && fail "--config took credits=maybe"
grep -q "bad value 'maybe' for key 'credits'" "$out" || { cat "$out"; fail "bad value not named"; }

# --check on an in-memory port, and ports that cannot open.
"$info" --check sim:infotest/1 >"$out" 2>&1 || { cat "$out"; fail "--check sim:"; }
grep -Eq "^  driver +sim$" "$out" || { cat "$out"; fail "--check: driver"; }
grep -Eq "^  mac +02:00:00:00:00:01$" "$out" || { cat "$out"; fail "--check: mac"; }
grep -Eq "^  mtu +1500 " "$out" || { cat "$out"; fail "--check: mtu"; }
grep -Eq "^  queues +1$" "$out" || fail "--check: queues"
grep -Eq "^  link +up" "$out" || fail "--check: link"
"$info" --check sim:nolink >"$out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "--check sim:nolink gave $rc, want 1"
grep -q "cannot open the port" "$out" || { cat "$out"; fail "--check: no reason"; }
"$info" --check pcap:no-such-if0 >"$out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "--check pcap:no-such-if0 gave $rc, want 1"
"$info" --check packet:no-such-if0 >"$out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "--check packet:no-such-if0 gave $rc, want 1"
grep -q "packet:no-such-if0: no such interface" "$out" || { cat "$out"; fail "--check packet: no reason"; }
# udp: needs no privilege; its MAC holds the address (locally administered
# unicast, 127.0.0.1 in the last four bytes).
"$info" --check udp:127.0.0.1:0 >"$out" 2>&1 || { cat "$out"; fail "--check udp:127.0.0.1:0"; }
grep -Eq "^  driver +udp$" "$out" || { cat "$out"; fail "--check udp: driver"; }
grep -Eq "^  mac +[0-9a-f][26ae]:[0-9a-f]{2}:7f:00:00:01$" "$out" || { cat "$out"; fail "--check udp: mac"; }
"$info" --check udp:127.0.0.1:80 >"$out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "--check udp:127.0.0.1:80 gave $rc, want 1"
grep -q "outside 49152..65535" "$out" || { cat "$out"; fail "--check udp: no reason"; }

# Bad usage: status 2 and a message.
for args in "--bogus" "stray" "--check" "--check sim:a/0 --keys" "--check sim:a/0 --config x=1" \
            "--check="; do
  # shellcheck disable=SC2086
  "$info" $args >"$out" 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "'$args' gave status $rc, want 2"
  [ -s "$out" ] || fail "'$args': no message"
done
echo "PASS"
