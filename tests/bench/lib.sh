# Shared by compare.sh and compare_shm.sh (sourced, not run). The caller sets
# prog (its name, for messages), root, build, iters, max_time, pp_nodes
# (the --nodes of its pp_pingpong jobs) and steps (how many times it calls
# step) first; addrs may list "NS ADDR/LEN" to remove from pp0 at exit.

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
val() { local v=${1:-}; [ -n "$v" ] && echo "$v" || echo "-"; }
# ratio A B = A / B, or "-" when either is missing.
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'; }
emit_csv() { [ -z "$csv" ] || [ "$5" = "-" ] || echo "$1,$2,$3,$4,$5" >>"$csv"; }

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
  [ "$testbed_ours" -eq 0 ] || "$root/tests/testbed.sh" down >/dev/null 2>&1
  rm -rf "$tmp"
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

# One pprun job of pp_pingpong (all three modes) on pp_nodes nodes, at most
# LIMIT seconds. A job that fails is a failure: its output is shown and the
# figures it would have given are missing (a rerun would hide the bug).
pp_job() { # NAME CSV LIMIT PINGPONG-ARGS...
  local name=$1 out=$2 limit=$3
  shift 3
  rm -f "$out"
  limit=$(budget "$limit") || return 1
  if run "$build/apps/pprun" -n 2 --nodes "$pp_nodes" --dev-kind af_packet --timeout "$limit" -- \
    "$build/apps/pp_pingpong" --mode all --iters "$iters" --csv "$out" "$@" \
    >"$tmp/$name.log" 2>&1; then
    return 0
  fi
  log "pp_pingpong $name failed:"
  tail -20 "$tmp/$name.log" >&2
  return 1
}
