# Shared by compare.sh and compare_shm.sh (sourced, not run). The caller sets
# prog (its name, for messages), root, build, iters, max_time, pp_nodes
# (the --nodes of its pp_pingpong jobs), dev_kind (their port kind, default
# packet: raw EtherType frames; packet-udp: packet with --frame udp, pprun's default) and steps (how many times it calls
# step) first; addrs may list "NS ADDR/LEN" to remove from pp0 at exit; csv
# names the CSV file or is empty.

# The sizes both sides measure by default: 8 B to 4 MiB in x4 steps, and
# the sizes named in the goals between them (256 B, 1 KiB, 64 KiB, 1 MiB).
default_sizes=8,32,128,256,512,1k,2k,8k,32k,64k,128k,512k,1m,2m,4m

# step WHAT: the run's next step begins. On a terminal, one line that the
# next step overwrites: "PROG: [i/N] WHAT"; piped, a line as log writes it,
# so logs read as they always did. Any other message clears the line first.
step_i=0
step_shown=0
step_clear() {
  [ "$step_shown" -eq 0 ] || printf '\r\033[K' >&2
  step_shown=0
}
step() {
  step_i=$((step_i + 1))
  if [ -t 2 ]; then
    printf '\r\033[K%s: [%d/%d] %s' "$prog" "$step_i" "$steps" "$*" >&2
    step_shown=1
  else
    echo "$prog: $*" >&2
  fi
}
bad() { step_clear; echo "$prog: $*" >&2; echo "try: $prog --help" >&2; exit 2; }
die() { step_clear; echo "$prog: $*" >&2; exit 1; }
log() { step_clear; echo "$prog: $*" >&2; }
posint() { [[ $1 =~ ^[1-9][0-9]{0,6}$ ]]; }
# A size list as pp_pingpong and mpi_pingpong take it (they check the rest).
sizespec() { [[ $1 =~ ^[0-9][0-9kKmMgG,:x+]*$ ]]; }
bytespec() { [[ $1 =~ ^[1-9][0-9]{0,12}[kKmMgG]?$ ]]; }
# bytes_of SPEC: a bytespec's count of bytes (k, m, g: powers of 1024).
bytes_of() {
  awk -v s="$1" 'BEGIN { m = 1; u = substr(s, length(s)); if (u ~ /[kK]/) m = 2^10;
    else if (u ~ /[mM]/) m = 2^20; else if (u ~ /[gG]/) m = 2^30; printf "%.0f\n", (s + 0) * m }'
}
val() { local v=${1:-}; [ -n "$v" ] && echo "$v" || echo "-"; }
# ratio A B = A / B, or "-" when either is missing.
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'; }
# CSV rows: record,system,baseline,metric,size,value (size empty when the
# figure has none, e.g. iperf3's stream); a "-" value is not written.
#   size        a figure of one size: lat_us, bw_MBps, msgs_per_s
#   size_ratio  baseline/librt-pp latency (lat), librt-pp/baseline bandwidth (bw)
#   limit       the path's ceiling (pp_probe --blast; size: the frame's bytes)
#   share       a bandwidth over the ceiling (baseline: probe or memcpy)
#   probe       the cache line round trip between cores 0 and 1 before a
#               step (system core-rtt, metric rtt_ns; see probe below)
#   measure     the summary rows (8 B latency, 1 MiB or 4 MiB bandwidth, and
#               the other tools), ratio  their ratios
csv_header() { [ -z "$csv" ] || echo "record,system,baseline,metric,size,value" >"$csv" || die "cannot write $csv"; }
emit_csv() { [ -z "$csv" ] || [ "$6" = "-" ] || echo "$1,$2,$3,$4,$5,$6" >>"$csv"; }
# 8 B, 64 KiB, 4 MiB, 1000 B.
hsize() {
  local s=$1
  if [ "$s" -ge 1048576 ] && [ $((s % 1048576)) -eq 0 ]; then echo "$((s / 1048576)) MiB"
  elif [ "$s" -ge 1024 ] && [ $((s % 1024)) -eq 0 ]; then echo "$((s / 1024)) KiB"
  else echo "$s B"; fi
}

# --- the per-size figures ---------------------------------------------------
# Figures live in the associative arrays L (one-way latency, us), B (window
# bandwidth, MB/s) and M (window messages/s), keyed "SYSTEM SIZE"; sizes
# holds every size measured, ascending.
declare -A L B M
sizes=()
add_size() { local s; for s in "${sizes[@]}"; do [ "$s" != "$1" ] || return 0; done; sizes+=("$1"); }
sort_sizes() { [ ${#sizes[@]} -eq 0 ] || mapfile -t sizes < <(printf '%s\n' "${sizes[@]}" | sort -n); }
# add_fig ARRAY KEY VALUE: one more figure of a point ("-" or empty: none);
# a point measured in several rounds keeps them all until round_medians.
add_fig() {
  local -n a_=$1
  [ -n "$3" ] && [ "$3" != - ] || return 0
  a_[$2]="${a_[$2]:+${a_[$2]} }$3"
}
# round_medians ARRAY...: each point's figures become their median (the
# upper middle one of an even count), so that one round taken while the
# machine ran slow (tests/bench/core_rtt.c) does not make the figure.
round_medians() {
  local k n
  for n in "$@"; do
    local -n a_=$n
    for k in "${!a_[@]}"; do
      a_[$k]=$(tr ' ' '\n' <<<"${a_[$k]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int(NR / 2) + 1] }')
    done
  done
}
# probe: the cache line's round trip between cores 0 and 1 now (core_rtt's
# median, ns; "-" when it could not run or was not built: it comes with the
# unit tests, which need CUnit), into probes; probe_lines prints
# them on one line and as CSV probe rows. On a virtual machine the host moves
# the virtual CPUs, and every figure of a step follows (compare_shm.sh).
probes=()
probe() {
  local p=
  [ ! -x "$build/tests/core_rtt" ] ||
    p=$(timeout -k 2 10 "$build/tests/core_rtt" 0 1 20000 2>/dev/null | awk '$1 == "RESULT" { print $5 }')
  probes+=("${p:--}")
}
probe_lines() {
  local p
  echo "#   ${probes[*]}"
  for p in "${probes[@]}"; do emit_csv probe core-rtt "" rtt_ns "" "$p"; done
}
# round_shares BYTES: what one of the rounds runs (the caller sets rounds
# and size_spec): iters becomes all_iters / rounds (at least 10), all_iters
# keeping the whole, and same the size and byte arguments of a round's
# pp_pingpong and mpi_pingpong (BYTES / rounds, at least 1).
round_shares() {
  all_iters=$iters
  iters=$((all_iters / rounds))
  [ "$iters" -ge 10 ] || iters=10
  local b=$(($1 / rounds))
  [ "$b" -ge 1 ] || b=1
  same=(--sizes "$size_spec" --max-bytes "$b")
}
# pp_rows CSV: pp_pingpong --csv rows into L, B, M (system: the mode).
pp_rows() {
  local t m s lat bw msgs
  while IFS=, read -r t m s lat bw msgs; do
    add_size "$s"
    case $t in
      latency) add_fig L "$m $s" "$lat" ;;
      window) add_fig B "$m $s" "$bw"; add_fig M "$m $s" "$msgs" ;;
    esac
  done < <(awk -F, 'NR > 1 { print $1 "," $2 "," $6 "," $8 "," $11 "," $21 }' "$1")
}
# mpi_rows LOG SYSTEM: mpi_pingpong's RESULT lines into L, B, M.
mpi_rows() {
  local t s lat bw msgs
  while read -r t s lat bw msgs; do
    add_size "$s"
    case $t in
      latency) add_fig L "$2 $s" "$lat" ;;
      window) add_fig B "$2 $s" "$bw"; add_fig M "$2 $s" "$msgs" ;;
    esac
  done < <(awk '$1 == "RESULT" { print $2, $3, $4, $7, $8 }' "$1")
}
# size_table METRIC CSV-PREFIX BASELINE SHORT SYSTEMS...: one row per size,
# the systems' figures, the baseline's, then each system's ratio to it
# (lat: baseline / system; bw: system / baseline; > 1: the system wins),
# every figure and ratio also as a CSV row.
size_table() {
  local metric=$1 pre=$2 base=$3 short=$4 s x r arr=L
  shift 4
  [ "$metric" = lat ] || arr=B
  local -n fig=$arr
  printf "%-8s" size
  for x in "$@"; do printf " %10s" "$x"; done
  printf " %10s" "$short"
  for x in "$@"; do printf " %10s" "r:${x#push-}"; done
  echo
  for s in "${sizes[@]}"; do
    printf "%-8s" "$(hsize "$s")"
    for x in "$@" "$base"; do printf " %10s" "$(val "${fig[$x $s]:-}")"; done
    for x in "$@"; do
      if [ "$metric" = lat ]; then r=$(ratio "${fig[$base $s]:-}" "${fig[$x $s]:-}")
      else r=$(ratio "${fig[$x $s]:-}" "${fig[$base $s]:-}"); fi
      printf " %10s" "$r"
      emit_csv size_ratio "$pre$x" "$base" "$metric" "$s" "$r"
    done
    echo
  done
}
# size_csv CSV-PREFIX SYSTEM...: every per-size figure of the systems as CSV
# rows (system: CSV-PREFIX SYSTEM).
size_csv() {
  local pre=$1 x s
  shift
  for x in "$@"; do
    for s in "${sizes[@]}"; do
      emit_csv size "$pre$x" "" lat_us "$s" "$(val "${L[$x $s]:-}")"
      emit_csv size "$pre$x" "" bw_MBps "$s" "$(val "${B[$x $s]:-}")"
      emit_csv size "$pre$x" "" msgs_per_s "$s" "$(val "${M[$x $s]:-}")"
    done
  done
}
# size_complete SYSTEM...: true when every system has a latency and (above
# 0 bytes) a bandwidth figure at every size, and some size was measured.
size_complete() {
  local x s
  [ ${#sizes[@]} -gt 0 ] || return 1
  for x in "$@"; do
    for s in "${sizes[@]}"; do
      [ -n "${L[$x $s]:-}" ] || return 1
      [ "$s" -eq 0 ] || [ -n "${B[$x $s]:-}" ] || return 1
    done
  done
}

# Seconds a step may take: LIMIT, or what is left of --max-time (less a
# margin for the clean-up); fails when too little is left to start it.
budget() {
  local left=$((max_time - SECONDS - 5))
  [ "$left" -ge 5 ] || { log "out of time (--max-time $max_time), skipping"; return 1; }
  echo $((left < $1 ? left : $1))
}

# --- clean-up, also on failure -------------------------------------------
bench_start() { # TMP-PREFIX
  SECONDS=0
  tmp=$(mktemp -d "/tmp/$1.XXXXXX")
  pids=()
  cur=
  addrs=()
  offloads=()
  testbed_ours=0
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}
# shellcheck disable=SC2317  # called from the EXIT trap
bench_cleanup() {
  local p a
  step_clear
  if [ -n "$cur" ]; then
    # pprun's ranks lead their own process groups; stop them with it.
    for p in $(pgrep -P "$cur"); do kill -TERM -- "-$p" 2>/dev/null; done
    kill -TERM "$cur" 2>/dev/null
    wait "$cur" 2>/dev/null
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for a in "${addrs[@]}"; do ip -n "${a%% *}" addr del "${a#* }" dev pp0 2>/dev/null; done
  # shellcheck disable=SC2086  # "DEV tso X gso Y gro Z": words on purpose
  for a in "${offloads[@]}"; do in_ns "${a%% *}" ethtool -K ${a#* } 2>/dev/null; done
  [ "$testbed_ours" -eq 0 ] || "$root/tests/testbed.sh" down >/dev/null 2>&1
  rm -rf "$tmp"
}

# CMD... in namespace NS ("-": the host's).
in_ns() { # NS CMD...
  local ns=$1
  shift
  if [ "$ns" = - ]; then "$@"; else ip netns exec "$ns" "$@"; fi
}

# Turn TSO, GSO and GRO off on port DEV of namespace NS ("-": the host's);
# what they were is put back at exit.
offload_off() { # NS DEV
  local ns=$1 dev=$2 was
  was=$(in_ns "$ns" ethtool -k "$dev" | awk -v d="$dev" '
    /^tcp-segmentation-offload:/ { t = $2 } /^generic-segmentation-offload:/ { g = $2 }
    /^generic-receive-offload:/ { r = $2 }
    END { if (t && g && r) print d, "tso", t, "gso", g, "gro", r }') || return 1
  [ -n "$was" ] || return 1
  offloads+=("$ns $was")
  in_ns "$ns" ethtool -K "$dev" tso off gso off gro off
}

# Run a step in the background and wait for it, so that INT/TERM reach the
# traps at once (bash runs a trap only after a foreground command ends).
run() {
  local rc
  "$@" &
  cur=$!
  wait "$cur"
  rc=$?
  cur=
  return "$rc"
}

# mpicc_pingpong OUT: builds tests/bench/mpi_pingpong.c with pp_pingpong's
# size lists and statistics (apps/perf).
mpicc_pingpong() {
  mpicc -std=c11 -D_GNU_SOURCE -O2 -Wall -I"$root/apps/perf" -o "$1" "$here/mpi_pingpong.c" \
    "$root/apps/perf/sizes.c" "$root/apps/perf/sample_stats.c"
}

# One pprun job of pp_pingpong (all three modes) on pp_nodes nodes, at most
# LIMIT seconds. A job that fails is a failure: its output is shown and the
# figures it would have given are missing (a rerun would hide the bug).
pp_job() { # NAME CSV LIMIT PINGPONG-ARGS...
  local name=$1 out=$2 limit=$3
  shift 3
  rm -f "$out"
  limit=$(budget "$limit") || return 1
  local kind=(--dev-kind "${dev_kind:-packet}")
  [ "${dev_kind:-}" != packet-udp ] || kind=(--dev-kind packet --frame udp)
  if run "$build/apps/pprun" -n 2 --nodes "$pp_nodes" "${kind[@]}" --timeout "$limit" -- \
    "$build/apps/pp_pingpong" --mode all --iters "$iters" --csv "$out" "$@" \
    >"$tmp/$name.log" 2>&1; then
    return 0
  fi
  log "pp_pingpong $name failed:"
  tail -20 "$tmp/$name.log" >&2
  return 1
}
