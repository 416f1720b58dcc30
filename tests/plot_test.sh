#!/usr/bin/env bash
# pp_plot on the CSV fixtures in tests/plot (a pp_pingpong --csv file with
# early, late, latency, a BTP sweep, bandwidth and window rows; compare.sh's CSV and
# compare_shm.sh's): every figure is written as a non-empty PNG and an SVG
# whose text has the axis labels, titles and legend entries; malformed input
# is named (file and line) with status 1 and nothing written; bad usage is
# status 2.
# usage: plot_test.sh PP_PLOT FIXTURE_DIR
set -uo pipefail
plot=$1 fix=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d /tmp/pp-plot-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$plot" --help >"$tmp/help" || fail "--help"
grep -q "^usage: pp_plot" "$tmp/help" || fail "--help: no usage line"

mkdir "$tmp/out"
"$plot" -o "$tmp/out" "$fix/pp_pingpong.csv" "$fix/compare.csv" "$fix/compare.csv.shm" \
  >"$tmp/list" 2>"$tmp/err" || { cat "$tmp/err"; fail "pp_plot on the fixtures"; }
[ ! -s "$tmp/err" ] || { cat "$tmp/err"; fail "pp_plot wrote to stderr"; }
figs=(early-late latency btp-latency bandwidth compare sizes)
for f in "${figs[@]}"; do
  for ext in png svg; do
    p=$tmp/out/pp_pingpong-$f.$ext
    [ -s "$p" ] || fail "$p not written"
    grep -qx "$p" "$tmp/list" || fail "$p not listed on stdout"
  done
  [ "$(head -c 8 "$tmp/out/pp_pingpong-$f.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
    fail "pp_pingpong-$f.png is not a PNG"
  head -c 200 "$tmp/out/pp_pingpong-$f.svg" | grep -q "<svg" || fail "pp_pingpong-$f.svg is not an SVG"
done
[ "$(wc -l <"$tmp/list")" -eq $((2 * ${#figs[@]})) ] || { cat "$tmp/list"; fail "unexpected files listed"; }
[ "$(find "$tmp/out" -type f | wc -l)" -eq $((2 * ${#figs[@]})) ] || fail "unexpected files written"

# svg FIGURE TEXT...: each text is in the figure (axis labels, titles, legend).
svg() {
  local f=$tmp/out/pp_pingpong-$1.svg t
  shift
  for t in "$@"; do grep -qF -- "$t" "$f" || fail "$(basename "$f") lacks '$t'"; done
}
svg early-late "One-way latency (µs)" "Message size (bytes)" "Early receiver" "Late receiver" \
  push-pull push-all push-zero "16 B" "64 KiB"
svg latency "Ping-pong latency" "One-way latency (µs)" push-zero
svg btp-latency "BTP sweep, push-pull" "BTP(1) 16, BTP(2) 680" "BTP(1) 400, BTP(2) 680" "library default"
svg bandwidth "Bandwidth (MB/s, 10^6 B/s)" "Message size (bytes)" "librt-pp push-pull" "librt-pp push-zero, window" "Open MPI TCP" \
  "iperf3 TCP" "UCX sm" "memcpy, 1 thread" "1 MiB" "4 MiB"
svg compare "8-byte one-way latency" "Latency (µs)" "sockperf UDP busy-poll" "Open MPI vader+CMA" \
  "librt-pp pp_malloc (shm)"
svg sizes "Network: one-way latency" "Network: windowed bandwidth" "Intranode: windowed bandwidth" \
  "Open MPI TCP" "Open MPI + UCX sm" "memcpy, 1 thread" "librt-pp push-zero (shm)" "4 MiB"
# The log-log figures leave out the 0-byte row (no place on a log axis).
grep -q ">0 B<" "$tmp/out/pp_pingpong-latency.svg" && fail "a 0-byte tick on a log axis"

# One input alone, another name and format, quiet.
mkdir "$tmp/one"
"$plot" -q -f svg -n run -o "$tmp/one" "$fix/compare.csv" >"$tmp/list" || fail "compare alone"
[ ! -s "$tmp/list" ] || fail "-q listed files"
[ -s "$tmp/one/run-compare.svg" ] && [ -s "$tmp/one/run-sizes.svg" ] &&
  [ "$(find "$tmp/one" -type f | wc -l)" -eq 2 ] || fail "compare alone: want run-compare.svg and run-sizes.svg"
# A comparison CSV of before (no size column): the bars alone.
mkdir "$tmp/old"
printf 'record,system,baseline,metric,value\nmeasure,push-pull,,lat_us,9.8\nmeasure,mpi,,lat_us,24.3\nratio,push-pull,mpi,lat,2.48\n' \
  >"$tmp/old.csv"
"$plot" -q -f svg -o "$tmp/old" "$tmp/old.csv" || fail "a comparison CSV without sizes"
[ "$(ls "$tmp/old")" = old-compare.svg ] || fail "old format: want old-compare.svg only"

# Malformed input: named, status 1, no figure.
bad() { # NAME CONTENT WANT-IN-MESSAGE
  local f=$tmp/$1.csv
  printf '%b' "$2" >"$f"
  mkdir -p "$tmp/bad"
  "$plot" -o "$tmp/bad" "$f" >"$tmp/out.txt" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 1 ] || fail "$1: status $rc, want 1"
  grep -qF -- "$3" "$tmp/err" || { cat "$tmp/err"; fail "$1: message lacks '$3'"; }
  grep -q "^pp_plot: " "$tmp/err" || fail "$1: message not prefixed"
  [ -z "$(ls -A "$tmp/bad")" ] || fail "$1: figures written"
}
head=$(head -1 "$fix/pp_pingpong.csv")
bad not-number "$head\nearly,push-pull,-,-,off,16,1000,fast,1,1,,0,0,0,0,0,0,0,0\n" \
  "not-number.csv:2: lat_us_mid80 'fast' is not a number"
bad bad-mode "$head\nearly,push-most,-,-,off,16,1000,1,1,1,,0,0,0,0,0,0,0,0\n" \
  "bad-mode.csv:2: unknown mode 'push-most'"
bad short-row "$head\nearly,push-pull,-,-\n" "short-row.csv:2: 4 fields"
bad negative "$head\nlate,push-all,-,-,off,-16,1000,1,1,1,,0,0,0,0,0,0,0,0\n" "size '-16'"
bad header "size,latency\n8,1.0\n" "not a pp_pingpong or comparison CSV"
bad empty "" "empty"
bad only-header "$head\n" "no measurements"
bad compare-row "record,system,baseline,metric,value\nmeasure,mpi,lat_us,1.0\n" \
  "compare-row.csv:2: 4 fields"
bad compare-size "record,system,baseline,metric,size,value\nsize,mpi,,lat_us,,1.0\n" \
  "compare-size.csv:2: a size row without its size"
bad compare-record "record,system,baseline,metric,size,value\nguess,mpi,,lat_us,8,1.0\n" \
  "unknown record 'guess'"
bad compare-metric "record,system,baseline,metric,value\nmeasure,mpi,,speed,1.0\n" \
  "unknown metric 'speed'"
bad binary "\x89PNG\x00\xff\xfe" "pp_plot: "
"$plot" -o "$tmp/bad" "$tmp/no-such.csv" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && grep -q "no-such.csv" "$tmp/err" || fail "a missing file: status $rc"

# Bad usage: status 2.
for args in "" "--formats bmp $fix/compare.csv" "--bogus $fix/compare.csv"; do
  # shellcheck disable=SC2086
  "$plot" $args >/dev/null 2>"$tmp/err"; rc=$?
  [ $rc -eq 2 ] || fail "'$args' gave status $rc, want 2"
  [ -s "$tmp/err" ] || fail "'$args': no message"
done
echo "PASS"
