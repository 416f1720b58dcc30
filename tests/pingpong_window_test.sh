#!/usr/bin/env bash
# pp_pingpong --test window without the test bed: a node daemon on an
# in-memory link of its own (ppd --dev sim:NAME/0) and two pp_pingpong ranks
# attached to it, as json_outputs_test.sh runs them.
#   --check           every mode, sizes 0 B to 100000 B (pushed whole, pulled,
#                     not a multiple of anything), every byte of every message
#                     of the window verified in its own slot
#   --json, --csv     the window rows: W, messages/s, bandwidth = W * size /
#                     iteration time, the iterations --max-bytes left
#   the table         window rows with bw_MBps and msgs_per_s, the header line
# usage: pingpong_window_test.sh PPD PP_PINGPONG
set -uo pipefail
ppd=$1 pp=$2
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || fail "python3 is missing"
tmp=$(mktemp -d /tmp/pp-window-test.XXXXXX)
dpid=
cleanup() {
  [ -z "$dpid" ] || { kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; }
  rm -rf "$tmp"
}
trap cleanup EXIT
sock=$tmp/ppd.sock
"$ppd" --dev "sim:ppwin$$/0" --socket "$sock" --cores 0 --drain-ms 2000 --bind-first-attacher 2>"$tmp/ppd.err" &
dpid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
[ -S "$sock" ] || { cat "$tmp/ppd.err"; fail "ppd did not start"; }

# pingpong JOB OUT ARGS...: both ranks; rank 0's stdout in OUT, stderr of
# both in OUT.err.
pingpong() {
  local job=$1 out=$2 pid rc=0
  shift 2
  PP_DAEMON=$sock PP_RANK=1 PP_SIZE=2 PP_JOB=$job PP_NODE=n0 timeout 120 "$pp" "$@" \
    >/dev/null 2>"$out.err1" &
  pid=$!
  PP_DAEMON=$sock PP_RANK=0 PP_SIZE=2 PP_JOB=$job PP_NODE=n0 timeout 120 "$pp" "$@" \
    >"$out" 2>"$out.err" || rc=$?
  wait "$pid" || rc=$?
  cat "$out.err1" >>"$out.err"
  return $rc
}

# Every mode, every byte checked; JSON and CSV of the same run.
# shellcheck disable=SC2054  # the commas are pp_pingpong's lists
args=(--test window --mode all --sizes 0,8,1000,4k,100000 --window 16 --iters 12 --warmup 2
      --max-bytes 800k --check --json --csv "$tmp/w.csv")
pingpong "win$$" "$tmp/w.json" "${args[@]}" || { cat "$tmp/w.json.err"; fail "pp_pingpong --test window --check"; }
python3 - "$tmp/w.json" "$tmp/w.csv" <<'PY' || fail "window rows"
import csv, json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["results"]
assert len(rows) == 3 * 5, len(rows)
for r in rows:
    assert r["test"] == "window" and r["window"] == 16, r
    lat, size = r["lat_us_mid80"], r["size"]
    assert lat > 0 and r["lat_us_p99"] >= r["lat_us_median"] > 0, r
    assert abs(r["msgs_per_s"] - 16e6 / lat) <= 1e-6 * r["msgs_per_s"], r
    if size:
        assert abs(r["bw_MBps"] - 16 * size / lat) <= 1e-6 * r["bw_MBps"], r
    else:
        assert r["bw_MBps"] is None, r
    # --max-bytes 800k: 16 * 100000 B a window, so the floor of 10
    # iterations; the others fit 12.
    assert r["iters"] == (10 if size == 100000 else 12), r
with open(sys.argv[2], newline="") as f:
    c = list(csv.DictReader(f))
assert len(c) == len(rows), len(c)
for r in c:
    assert r["test"] == "window" and r["window"] == "16" and float(r["msgs_per_s"]) > 0, r
    assert r["iters"] == ("10" if r["size"] == "100000" else "12"), r
    assert (r["bw_MBps"] == "") == (r["size"] == "0"), r
PY

# The table: a note on the window, rows with bandwidth and messages/s, and
# the --max-bytes note under each capped row.
pingpong "tab$$" "$tmp/t.out" --test latency,window --sizes 8,64k --window 4 --iters 20 \
  --warmup 2 --max-bytes 512k || { cat "$tmp/t.out.err"; fail "pp_pingpong table"; }
grep -q "^# window: 4 messages per iteration, receives posted first (a 0-byte go)" "$tmp/t.out" ||
  { cat "$tmp/t.out"; fail "no window note"; }
grep -q "bw_MBps  msgs_per_s$" "$tmp/t.out" || { cat "$tmp/t.out"; fail "table header"; }
awk '$1 == "window" && $5 == 65536 && $9 + 0 > 0 && $10 + 0 > 0 { ok = 1 } END { exit !ok }' "$tmp/t.out" ||
  { cat "$tmp/t.out"; fail "window row"; }
awk '$1 == "latency" && $9 == "-" && $10 == "-" { n++ } END { exit n != 2 }' "$tmp/t.out" ||
  { cat "$tmp/t.out"; fail "latency rows"; }
grep -q "^#   10 iterations (--max-bytes), 1 warm-up" "$tmp/t.out" ||
  { cat "$tmp/t.out"; fail "no --max-bytes note (4 x 64 KiB a window, 512 KiB: 10 iterations)"; }
# 64 KiB latency: 20 x 64 KiB > 512 KiB, cut to 10 as well; 8 B rows are not.
[ "$(grep -c "iterations (--max-bytes)" "$tmp/t.out")" -eq 2 ] || { cat "$tmp/t.out"; fail "--max-bytes notes"; }
echo "PASS"
