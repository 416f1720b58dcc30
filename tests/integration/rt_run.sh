# Sourced by the runtime integration scripts: one pprun job of rt_check,
# judged by how many "...: ok" lines it printed.
#   rt_run NAME WANT_OK_LINES PPRUN_ARGS... -- RT_CHECK_ARGS...
# Needs: $pprun, $kind (a --dev-kind, or KIND-udp: KIND with --frame udp,
# packet-udp and af_packet-udp), $log (a scratch file), fail(); optional
# $rt_timeout (seconds, default 60) and $rt_label (added to failures).
# On success rt_name and rt_ok hold the name and the count of ok lines.
# pprun's options for $kind.
rt_kind_args() {
  case $kind in
    *-udp) echo "--dev-kind ${kind%-udp} --frame udp" ;;
    *) echo "--dev-kind $kind" ;;
  esac
}

rt_run() {
  local want=$2
  rt_name=$1
  shift 2
  # shellcheck disable=SC2046 # the options split
  "$pprun" $(rt_kind_args) --timeout "${rt_timeout:-60}" "$@" >"$log" 2>&1
  local rc=$?
  rt_ok=$(grep -c ': ok$' "$log")
  if [ $rc -ne 0 ] || [ "$rt_ok" -ne "$want" ] || grep -q FAIL "$log"; then
    grep -v -e '^\[[0-9]*\] EAL:' -e 'libxdp\|libbpf' "$log"
    fail "$rt_name${rt_label:+ $rt_label}: status $rc, $rt_ok of $want checks ok"
  fi
}
