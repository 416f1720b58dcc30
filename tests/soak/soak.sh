#!/usr/bin/env bash
# Soak and fault runs over the test bed (run as root, after the build):
#
#   tests/soak/soak.sh [--full] [BUILD_DIR]
#
# The bounded form (the default, in the test command through the meson suite
# "soak", about a minute on 2 cores) and the full one (--full, about twenty
# minutes; run it by hand before a release):
#   1. the main job, tests/main_job.sh, back to back: 1 | 20 runs
#   2. a rank killed with SIGKILL in the middle of random traffic, then at
#      once a new job on the same ports, every byte checked: 3 | 50 times
#      each over af_packet, af_xdp and through ppd
#   3. random traffic (0 B to 4 MiB, wildcards; tests/soak/rt_random.c) among
#      4 ranks on 2 nodes with 5% loss, 1% duplication and 5% reordering on
#      every port (pprun --fault), the three modes in turn: 21 s | 600 s
#   4. the same through ppd with one node's daemon killed mid-run: its ranks
#      fail with -ECONNRESET at once, the job ends without a hang, and a new
#      job through fresh daemons runs clean: 1 | 5 times
#   5. ranks that finalize and init again on a lossy link (rt_cycles, 2 and
#      4 ranks): 60 cycles each as tests of the same meson suite | 200 here
# Each part prints a line of figures; a failure shows the run's output and
# fails the script. Nothing is retried.
set -uo pipefail
full=0
[ "${1:-}" = "--full" ] && { full=1; shift; }
case ${1:-} in -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd) || exit 2
[ "$(id -u)" -eq 0 ] || { echo "soak.sh: needs root (the test bed)"; exit 77; }
tb=$top/tests/testbed.sh pprun=$build/apps/pprun rtr=$build/tests/rt_random rtc=$build/tests/rt_check
export PPRUN_PPD=$build/apps/ppd/ppd
if [ $full -eq 1 ]; then mainjobs=20 kills=50 traffic_s=600 ppdkills=5
else mainjobs=1 kills=3 traffic_s=21 ppdkills=1; fi
tmp=$(mktemp -d /tmp/pp-soak.XXXXXX)
bg=
cleanup() {
  [ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
show() { grep -v -e '^\[[0-9]*\] EAL:' -e 'libxdp\|libbpf' "$1" | tail -40; }
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
total_msgs=0 total_bytes=0 total_runs=0

# Messages and bytes from rt_random's summary line in a log: into m and b,
# and added to the totals.
count_random() {
  read -r m b < <(awk '/rt_random: .* messages and .* bytes checked/ {
    for (i = 1; i <= NF; i++) { if ($(i) == "messages") m = $(i - 1); if ($(i) == "bytes") b = $(i - 1) }
  } END { printf "%.0f %.0f\n", m, b }' "$1")
  total_msgs=$((total_msgs + m)) total_bytes=$((total_bytes + b))
}

# The pid of program PROG running in namespace NS, or nothing.
pid_in() { # NS PROG
  local p
  for p in $(ip netns pids "$1" 2>/dev/null); do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$2" ] && { echo "$p"; return; }
  done
}

"$tb" up 2 1 >/dev/null || fail "test bed"

# --- 1. the main job ---------------------------------------------------------
t0=$(now)
for i in $(seq "$mainjobs"); do
  "$top/tests/main_job.sh" "$build" >"$tmp/main.log" 2>&1 || { show "$tmp/main.log"; fail "main job run $i of $mainjobs"; }
  total_runs=$((total_runs + 1))
done
echo "soak: main job: $mainjobs of $mainjobs runs passed ($(took "$t0") s)"

# --- 2. a rank killed mid-transfer, a new job at once --------------------------
for kind in af_packet af_xdp daemon; do
  t0=$(now) checked=0
  args=(--dev-kind "$kind")
  [ "$kind" = daemon ] && args=(--dev-kind af_packet --daemon)
  for i in $(seq "$kills"); do
    "$pprun" -n 2 --nodes 2 "${args[@]}" --timeout 60 -- "$rtr" --seconds 30 --allow-reset \
      --max-size 1048576 --seed "$i" >"$tmp/kill.log" 2>&1 &
    bg=$!
    # Somewhere in its traffic: 1 to 2.5 s after the start (discovery included).
    sleep "$(awk -v i="$i" 'BEGIN { srand(i); printf "%.2f", 1 + 1.5 * rand() }')"
    victim=$(pid_in ppn1 rt_random)
    [ -n "$victim" ] || { wait "$bg"; show "$tmp/kill.log"; fail "$kind run $i: no rank to kill"; }
    kill -9 "$victim"
    wait "$bg"; bg=
    # At once, on the same ports: a new job, every byte checked.
    "$pprun" -n 2 --nodes 2 "${args[@]}" --timeout 60 -- "$rtc" many >"$tmp/next.log" 2>&1 ||
      { show "$tmp/kill.log"; show "$tmp/next.log"; fail "$kind run $i: the job after a killed rank failed"; }
    [ "$(grep -c 'many: .*: ok$' "$tmp/next.log")" -eq 2 ] || { show "$tmp/next.log"; fail "$kind run $i: checks missing"; }
    checked=$((checked + 1)) total_runs=$((total_runs + 2))
  done
  echo "soak: $kind: $checked of $kills kills mid-transfer, each followed at once by a clean job ($(took "$t0") s)"
done

# --- 3. random traffic on a lossy, duplicating, reordering link ---------------
# The faults are injected where each port receives (pprun --fault, the
# driver's fault: backend; this kernel has no netem): 5% of frames lost, 1%
# delivered twice, 5% held back behind one to four later ones.
fault=loss=0.05,dup=0.01,reorder=0.05
t0=$(now) msgs0=$total_msgs bytes0=$total_bytes
per=$((traffic_s / 3))
for mode in push-pull push-all push-zero; do
  "$pprun" -n 4 --nodes 2 --dev-kind af_packet --mode "$mode" --fault "$fault" --timeout $((per + 120)) -- \
    "$rtr" --seconds "$per" --seed 7 >"$tmp/random.log" 2>&1 || { show "$tmp/random.log"; fail "random traffic, $mode"; }
  count_random "$tmp/random.log"
  echo "soak: random traffic, $mode, 4 ranks, ${per} s: $m messages, $b bytes checked"
  total_runs=$((total_runs + 1))
done
echo "soak: random traffic at 5% loss, 1% duplication, 5% reordering: $((total_msgs - msgs0)) messages, $((total_bytes - bytes0)) bytes checked ($(took "$t0") s)"

# --- 4. through ppd, a daemon killed mid-run ---------------------------------
t0=$(now)
for i in $(seq "$ppdkills"); do
  "$pprun" -n 4 --nodes 2 --dev-kind af_packet --daemon --timeout 120 -- "$rtr" --seconds 60 \
    --allow-reset --max-size 1048576 --seed "$i" >"$tmp/ppd.log" 2>&1 &
  bg=$!
  sleep 4
  d=$(pid_in ppn1 ppd)
  [ -n "$d" ] || { wait "$bg"; show "$tmp/ppd.log"; fail "daemon run $i: no daemon to kill"; }
  killed=$(now)
  kill -9 "$d"
  wait "$bg"; rc=$?; bg=
  after=$(took "$killed")
  grep -q "FAIL" "$tmp/ppd.log" && { show "$tmp/ppd.log"; fail "daemon run $i: a check failed"; }
  grep -q "is gone; operations fail" "$tmp/ppd.log" || { show "$tmp/ppd.log"; fail "daemon run $i: its ranks did not see the daemon go"; }
  [ $rc -ne 0 ] || { show "$tmp/ppd.log"; fail "daemon run $i: the job passed with a daemon killed"; }
  awk -v a="$after" 'BEGIN { exit !(a < 30) }' || fail "daemon run $i: the job took $after s to end after the kill"
  "$pprun" -n 4 --nodes 2 --dev-kind af_packet --daemon --timeout 60 -- "$rtc" many >"$tmp/next.log" 2>&1 ||
    { show "$tmp/next.log"; fail "daemon run $i: the job through fresh daemons failed"; }
  echo "soak: daemon killed mid-run ($i of $ppdkills): its ranks failed with -ECONNRESET, the job ended $after s after the kill, the next job ran clean"
  total_runs=$((total_runs + 2))
done
# --- 5. finalize and init again, 200 cycles (--full; meson runs 60) ---------
if [ $full -eq 1 ]; then
  for n in 2 4; do
    t0=$(now)
    "$build/tests/rt_cycles" --ranks "$n" --cycles 200 --seed "$n" >"$tmp/cycles.log" 2>&1 ||
      { show "$tmp/cycles.log"; fail "rt_cycles, $n ranks"; }
    echo "soak: rt_cycles, $n ranks, 200 cycles ($(took "$t0") s)"
    total_runs=$((total_runs + 1))
  done
fi
echo "soak: $total_runs runs, $total_msgs messages and $total_bytes bytes of random traffic checked, failures: 0"
