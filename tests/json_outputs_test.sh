#!/usr/bin/env bash
# The JSON outputs, parsed by python3's json module, and pp_pingpong's
# progress line, without the test bed: a node daemon on an in-memory link of
# its own (ppd --dev sim:NAME/0) and two pp_pingpong ranks attached to it.
#   pp_pingpong --json     one document on stdout: every row, known values
#   stats=json             one JSON line per pp_init on stderr (PP_STATS)
#   ppd --stats --json     the daemon's counters and totals
#   progress               nothing on a piped stderr; "[i/N] ..." on a terminal
# usage: json_outputs_test.sh PPD PP_PINGPONG
set -uo pipefail
ppd=$1 pp=$2
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || fail "python3 is missing"
tmp=$(mktemp -d /tmp/pp-json-test.XXXXXX)
dpid=
cleanup() {
  [ -z "$dpid" ] || { kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; }
  rm -rf "$tmp"
}
trap cleanup EXIT
sock=$tmp/ppd.sock
"$ppd" --dev "sim:ppjson$$/0" --socket "$sock" --cores 0 --drain-ms 2000 --bind-first-attacher 2>"$tmp/ppd.err" &
dpid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
[ -S "$sock" ] || { cat "$tmp/ppd.err"; fail "ppd did not start"; }

# pingpong JOB OUT ERR ARGS...: both ranks, rank 0's stdout and stderr kept;
# rank 1's output goes to OUT.1 and ERR.1.
pingpong() {
  local job=$1 out=$2 err=$3 pid rc=0
  shift 3
  PP_DAEMON=$sock PP_RANK=1 PP_SIZE=2 PP_JOB=$job PP_NODE=n0 "$pp" "$@" >"$out.1" 2>"$err.1" &
  pid=$!
  PP_DAEMON=$sock PP_RANK=0 PP_SIZE=2 PP_JOB=$job PP_NODE=n0 timeout 60 "$pp" "$@" >"$out" 2>"$err" || rc=$?
  wait "$pid" || rc=$?
  return $rc
}

# shellcheck disable=SC2054  # the commas are pp_pingpong's lists
args=(--test latency,bandwidth,early --mode all --sizes 8,4k --iters 20 --warmup 2
      --compute-x 1000 --compute-y 1000 --check --json)
PP_STATS=json pingpong "json$$" "$tmp/r0.json" "$tmp/r0.err" "${args[@]}" ||
  { cat "$tmp/r0.err" "$tmp/r0.err.1"; fail "pp_pingpong --json"; }
python3 - "$tmp/r0.json" "$tmp/r0.err" "$tmp/r0.json.1" <<'PY' || fail "pp_pingpong --json or stats=json"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["program"] == "pp_pingpong" and doc["iters"] == 20 and doc["check"] is True, doc
rows = doc["results"]
assert len(rows) == 3 * 3 * 2, len(rows)  # modes x tests x sizes
seen = {(r["test"], r["mode"], r["size"]) for r in rows}
for t in ("latency", "bandwidth", "early"):
    for m in ("push-pull", "push-all", "push-zero"):
        for s in (8, 4096):
            assert (t, m, s) in seen, (t, m, s)
for r in rows:
    assert r["iters"] == 20 and r["predict"] == "off" and r["btp1"] is None, r
    assert r["lat_us_median"] > 0 and r["lat_us_p99"] >= r["lat_us_median"], r
    if r["test"] == "bandwidth":
        assert r["bw_MBps"] is None or r["bw_MBps"] > 0, r
    else:
        assert r["bw_MBps"] is None, r
    if r["test"] == "early":
        c = r["compute"]
        assert c["x_nops"] == 1000 and c["y_nops"] == 1000 and c["x_us"] > 0, r
        assert set(r["counters"]) >= {"pred_predictions", "evictions"}, r
    else:
        assert r["counters"] is None and "compute" not in r, r
# stats=json: one line per pp_init (one per mode), nothing else on stderr
# (no progress line: stderr is a file).
lines = open(sys.argv[2]).read().splitlines()
assert len(lines) == 3, lines
modes = []
for l in lines:
    d = json.loads(l)
    assert d["rank"] == 0 and d["size"] == 2 and d["node"] == "n0", d
    assert d["incarnation"] > 0 and d["port"] == "ppd", d
    st = d["stats"]
    assert st["msgs_tx"] > 0 and st["msgs_rx"] > 0, st
    assert set(st["drops"]) >= {"short", "crc", "stale"}, st
    modes.append(d["mode"])
assert modes == ["push-pull", "push-all", "push-zero"], modes
# rank 1 prints no table and no document.
assert open(sys.argv[3]).read() == "", "rank 1 wrote to stdout"
PY

# ppd --stats --json while ranks have come and gone.
"$ppd" --stats --json --socket "$sock" >"$tmp/ppd.json" 2>"$tmp/stats.err" ||
  { cat "$tmp/stats.err"; fail "ppd --stats --json"; }
python3 - "$tmp/ppd.json" <<'PY' || fail "ppd --stats --json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["handlers"] == 1 and d["port"] == "sim" and len(d["handler"]) == 1, d
h = d["handler"][0]
assert h["id"] == 0 and h["core"] == 0, h
assert d["total"]["from_ranks"] > 0 and d["total"]["from_ranks"] == h["from_ranks"], d
assert set(d["total"]["drops"]) >= {"no_rank", "spoof", "stale"}, d
PY
"$ppd" --json >/dev/null 2>&1 && fail "ppd --json without --stats was accepted"

# Progress: nothing extra on a piped stderr (the table alone on stdout) ...
pingpong "prog$$" "$tmp/p.out" "$tmp/p.err" --test latency --mode all --sizes 8,64 --iters 10 ||
  { cat "$tmp/p.err"; fail "pp_pingpong"; }
[ ! -s "$tmp/p.err" ] || { cat -A "$tmp/p.err"; fail "pp_pingpong wrote to a piped stderr"; }
grep -q $'\r' "$tmp/p.out" && fail "a carriage return in the table"
[ "$(grep -c '^latency ' "$tmp/p.out")" -eq 6 ] || { cat "$tmp/p.out"; fail "table rows"; }
# ... and "[i/N] what" on a terminal, the last one [6/6], cleared at the end.
if command -v script >/dev/null; then
  PP_DAEMON=$sock PP_RANK=1 PP_SIZE=2 PP_JOB=tty$$ PP_NODE=n0 \
    "$pp" --test latency --mode all --sizes 8,64 --iters 10 >/dev/null 2>&1 &
  p1=$!
  PP_DAEMON=$sock PP_RANK=0 PP_SIZE=2 PP_JOB=tty$$ PP_NODE=n0 timeout 60 script -qfec \
    "'$pp' --test latency --mode all --sizes 8,64 --iters 10 >'$tmp/t.out'" /dev/null \
    >"$tmp/t.tty" 2>&1 || fail "pp_pingpong under script"
  wait "$p1" || fail "rank 1 under script"
  for i in 1 2 3 4 5 6; do
    grep -q "pp_pingpong: \[$i/6\] latency " "$tmp/t.tty" || { cat -A "$tmp/t.tty"; fail "no [$i/6] on a terminal"; }
  done
  grep -q "\[6/6\] latency push-zero 64 B" "$tmp/t.tty" || { cat -A "$tmp/t.tty"; fail "the last step"; }
  [ "$(tail -c 4 "$tmp/t.tty" | od -An -c | tr -d ' ')" = '033[K\r' ] || { cat -A "$tmp/t.tty"; fail "not cleared at the end"; }
  [ "$(grep -c '^latency ' "$tmp/t.out")" -eq 6 ] || fail "table rows with a terminal"
fi
echo "PASS"
