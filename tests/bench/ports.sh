#!/usr/bin/env bash
# Port backends against each other on the test bed, in one run: the same
# programs on both sides over each kind of port (default: packet, our own
# AF_PACKET rings, and af_packet, DPDK's net_af_packet vdev), in turns:
#
#   pp_pingpong --test latency,bandwidth --sizes SIZES   (pprun, 2 ranks on
#                                                        ppn0 and ppn1)
#   pp_probe frame round trips of 64-byte and MTU-sized frames (ppn0 -> ppn1)
#
# repeated --reps times, the kinds' order swapped every repetition, so load
# that comes and goes (other builds on the machine) falls on each kind
# alike. Everything runs at MTU 9000 (TESTBED_MTU to change it), each side
# pinned to its own core (0 and 1).
#
# The table gives, per kind, test and size, the median over repetitions of
# pp_pingpong's median one-way latency in us (bandwidth rows: transfer
# time), with the smallest and largest of those medians; bandwidth in MB/s
# (10^6 B/s) as pp_pingpong computes it (size / (mean of the middle 80 % of
# transfer times - 4-byte latency)), and as size / median transfer time,
# which stalls of a loaded machine move less. pp_probe rows: median and
# p99 round trip in us. The ratio column is the first kind's advantage:
# second / first for times, first / second for bandwidths, so above 1 means
# the first kind did better.
#
# Needs root, the build (meson setup build && ninja -C build), and the test
# bed to itself: run it as
#   flock /tmp/testbed.lock tests/bench/ports.sh
#
# usage: ports.sh [--build DIR] [--kinds A,B] [--reps N] [--iters N]
#                 [--sizes LIST] [--probe-count N] [--csv FILE]
#   --build DIR      build directory (default build)
#   --kinds A,B      two of packet, af_packet, af_xdp, pcap, udp (default packet,af_packet;
#                    udp: the test bed's port addresses, as pprun gives them as
#                    root; no pp_probe rows, it takes raw ports)
#   --reps N         repetitions (default 5)
#   --iters N        pp_pingpong iterations per point (default 1000)
#   --sizes LIST     pp_pingpong --sizes (default 8,1k,64k,1m,4m)
#   --probe-count N  pp_probe round trips per frame size (default 2000)
#   --csv FILE       also write every measurement: kind,rep,test,size,metric,value
#   -h, --help       this text
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
prog=ports.sh
# bad, die, posint, sizespec (only those: the rest serves compare*.sh; it
# sets sizes=(), so the defaults come after it)
. "$here/lib.sh"
build=build kinds=packet,af_packet reps=5 iters=1000 sizes=8,1k,64k,1m,4m pcount=2000 csv=
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --build) [ $# -ge 2 ] || bad "--build needs a directory"; build=$2; shift 2 ;;
    --kinds) [ $# -ge 2 ] || bad "--kinds needs A,B"; kinds=$2; shift 2 ;;
    --reps) { [ $# -ge 2 ] && posint "$2"; } || bad "--reps needs a count"; reps=$2; shift 2 ;;
    --iters) { [ $# -ge 2 ] && posint "$2"; } || bad "--iters needs a count"; iters=$2; shift 2 ;;
    --sizes) { [ $# -ge 2 ] && sizespec "$2"; } || bad "--sizes needs a size list (8,1k,...)"
      sizes=$2; shift 2 ;;
    --probe-count) { [ $# -ge 2 ] && posint "$2"; } || bad "--probe-count needs a count"
      pcount=$2; shift 2 ;;
    --csv) [ $# -ge 2 ] || bad "--csv needs a file"; csv=$2; shift 2 ;;
    *) bad "unknown argument '$1'" ;;
  esac
done
IFS=, read -r k1 k2 extra <<<"$kinds"
if [ -z "$k1" ] || [ -z "${k2:-}" ] || [ -n "${extra:-}" ]; then bad "--kinds needs two kinds, A,B"; fi
for k in "$k1" "$k2"; do
  case $k in packet | af_packet | af_xdp | pcap | udp) ;; *) bad "unknown kind '$k' (packet, af_packet, af_xdp, pcap, udp)" ;; esac
done
[[ $build = /* ]] || build=$root/$build
[ "$(id -u)" -eq 0 ] || die "must run as root"
for p in apps/pprun apps/pp_pingpong apps/pp_probe; do
  [ -x "$build/$p" ] || die "$build/$p not built"
done
tmp=$(mktemp -d /tmp/pp-ports.XXXXXX)
lpid=
cleanup() {
  [ -z "$lpid" ] || kill "$lpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export TESTBED_MTU=${TESTBED_MTU:-9000}
"$root/tests/testbed.sh" up 2 >/dev/null || die "testbed.sh up 2 failed"
peer=$("$root/tests/testbed.sh" mac 1 0)
res=$tmp/results # kind rep test size metric value
: >"$res"

dev_of() {
  case $1 in
    packet | pcap) echo "$1:pp0" ;;
    *) echo "--vdev=net_${1}0,iface=pp0" ;;
  esac
}

pingpong() { # KIND REP
  local out=$tmp/pp.$1.$2
  if ! timeout -k 5 900 "$build/apps/pprun" -n 2 --nodes 2 --dev-kind "$1" --timeout 800 -- \
    "$build/apps/pp_pingpong" --test latency,bandwidth --sizes "$sizes" --iters "$iters" \
    --csv "$out.csv" >"$out.log" 2>&1; then
    echo "ports.sh: pp_pingpong over $1 failed (repetition $2):" >&2
    tail -5 "$out.log" >&2
    return
  fi
  # test,mode,btp1,btp2,predict,size,iters,mid80,median,p99,bw,...
  awk -F, -v k="$1" -v r="$2" 'NR > 1 {
      print k, r, $1, $6, "lat_median", $9
      if ($1 == "bandwidth") {
        print k, r, $1, $6, "bw", $11
        if ($9 > 0) printf "%s %s %s %s bw_at_median %.1f\n", k, r, $1, $6, $6 / $9
      }
    }' "$out.csv" >>"$res"
}

probe() { # KIND REP SIZE
  local dev out=$tmp/probe.$1.$2.$3 rc=0
  dev=$(dev_of "$1")
  ip netns exec ppn1 taskset -c 1 "$build/apps/pp_probe" --dev "$dev" --listen \
    --count "$pcount" --wait-ms 30000 --timeout-ms 5000 >"$out.l" 2>&1 &
  lpid=$!
  for _ in $(seq 100); do
    grep -q '^listening' "$out.l" && break
    kill -0 "$lpid" 2>/dev/null || break
    sleep 0.1
  done
  timeout -k 5 120 ip netns exec ppn0 taskset -c 0 "$build/apps/pp_probe" --dev "$dev" \
    --peer "$peer" --count "$pcount" --size "$3" >"$out" 2>&1 || rc=$?
  wait "$lpid" 2>/dev/null
  lpid=
  [ $rc -eq 0 ] || { echo "ports.sh: pp_probe over $1, size $3 failed:" >&2; tail -3 "$out" >&2; }
  local name=$3
  [ "$name" = mtu ] && name=$((TESTBED_MTU + 14))
  sed -n 's/^rtt_us *min \([0-9.]*\) median \([0-9.]*\) p99 \([0-9.]*\).*/\1 \2 \3/p' "$out" |
    while read -r _ md p99; do
      echo "$1 $2 probe $name rtt_median $md"
      echo "$1 $2 probe $name rtt_p99 $p99"
    done >>"$res"
}

start=$SECONDS
for r in $(seq "$reps"); do
  if [ $((r % 2)) -eq 1 ]; then order="$k1 $k2"; else order="$k2 $k1"; fi
  for k in $order; do
    echo "ports.sh: [$r/$reps] $k: pp_pingpong" >&2
    pingpong "$k" "$r"
    [ "$k" != udp ] || continue # pp_probe takes raw ports
    echo "ports.sh: [$r/$reps] $k: pp_probe" >&2
    probe "$k" "$r" 64
    probe "$k" "$r" mtu
  done
done

[ -z "$csv" ] || { echo "kind,rep,test,size,metric,value"; tr ' ' , <"$res"; } >"$csv"

# Per kind, test, size, metric: median over repetitions, and min..max.
echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "MTU $TESTBED_MTU, $reps repetitions, $iters iterations, $((SECONDS - start)) s"
echo "# medians over repetitions [min..max]; ratio > 1: $k1 better"
printf "%-9s %8s %-12s %26s %26s %6s\n" test size metric "$k1" "$k2" ratio
awk -v k1="$k1" -v k2="$k2" '
  { key = $3 " " $4 " " $5; v[$1, key, ++n[$1, key]] = $6; keys[key] = 1 }
  function med(k, key,   m, i, j, t, a) {
    m = n[k, key]; if (!m) return ""
    for (i = 1; i <= m; i++) a[i] = v[k, key, i] + 0
    for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    lo[k, key] = a[1]; hi[k, key] = a[m]
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  END {
    for (key in keys) {
      split(key, f, " ")
      a = med(k1, key); b = med(k2, key)
      sa = a == "" ? "-" : sprintf("%.1f [%.1f..%.1f]", a, lo[k1, key], hi[k1, key])
      sb = b == "" ? "-" : sprintf("%.1f [%.1f..%.1f]", b, lo[k2, key], hi[k2, key])
      r = "-"
      if (a != "" && b != "" && a > 0 && b > 0)
        r = sprintf("%.2f", f[3] ~ /^bw/ ? a / b : b / a)
      printf "%-9s %8s %-12s %26s %26s %6s\n", f[1], f[2], f[3], sa, sb, r
    }
  }' "$res" | sort -k1,1 -k2,2n -k3,3
