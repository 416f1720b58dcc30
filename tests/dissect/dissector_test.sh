#!/usr/bin/env bash
# The Wireshark dissector (apps/wireshark/librt-pp.lua) under tshark, on the
# captures capgen writes (tests/dissect/capgen.c: traffic of every mode over
# the in-memory link, crafted frames of every type and flag, version 1
# frames, a flipped payload byte):
#   - every field the wire format has is registered under its name;
#   - every frame of real traffic decodes: nothing malformed, no error, every
#     CRC correct, incarnations set;
#   - known frames have the values the protocol gives them: the FIRST PUSH's
#     msg_len, tag and pushed bytes per mode, the PULL's offset, DATA offsets
#     back to back up to msg_len, ACKs that acknowledge the message, and
#     every frame of the message grouped under one pp.msg;
#   - crafted frames: every field and flag, types by number and by name,
#     version 1 decoded as such;
#   - a flipped payload byte gives pp.crc.bad and an expert error;
#   - the push-pull traffic carried whole in UDP/IPv4 datagrams (as udp:
#     ports and frame=udp send it), under EtherType IPv4 and under 0x88B6
#     (link=raw), decodes to the same fields, frame by frame.
# tshark runs once per capture (its start-up is most of the cost); python3
# checks the fields it printed.
# usage: dissector_test.sh CAPGEN LUA
set -uo pipefail
capgen=$1 lua=$2
fail() { echo "FAIL: $*"; exit 1; }
command -v tshark >/dev/null || fail "tshark is missing (tests/deps.sh installs it)"
command -v python3 >/dev/null || fail "python3 is missing"
tshark -v 2>/dev/null | grep -q "with Lua" || fail "this tshark has no Lua support"
tmp=$(mktemp -d /tmp/pp-dissect-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$capgen" "$tmp" || fail "capgen could not write the captures"

cols=(frame.number pp.version pp.type pp.flags pp.flags.first pp.flags.last pp.flags.retx
      pp.flags.pull pp.flags.done pp.flags.copied pp.flags.again pp.flags.written pp.payload_len
      pp.job pp.stream pp.ack_stream pp.seq pp.ack pp.credit pp.xflags pp.xflags.data pp.data
      pp.src_rank pp.dst_rank
      pp.msg_id pp.tag pp.msg_len pp.offset pp.src_inc pp.dst_inc pp.crc pp.crc.status
      pp.crc.calculated pp.crc.bad pp.msg pp.acked pp.msg.first pp.msg.prev pp.msg.index data.len
      _ws.malformed _ws.expert.severity _ws.expert.message)

# ts NAME OUT TSHARK-ARGS...: tshark with the dissector on NAME.pcap; a Lua
# error fails (tshark itself would carry on without the dissector).
ts() {
  local name=$1 out=$2
  shift 2
  tshark -n -X "lua_script:$lua" -r "$tmp/$name.pcap" "$@" >"$out" 2>"$tmp/ts.err"
  local rc=$?
  if grep -q "Lua" "$tmp/ts.err"; then cat "$tmp/ts.err"; fail "the dissector does not load"; fi
  [ $rc -eq 0 ] || { cat "$tmp/ts.err"; fail "tshark $* on $name.pcap: status $rc"; }
}
# table NAME [TSHARK-ARGS...]: every column above, one row per frame, in NAME.tsv
table() {
  local name=$1 e=()
  shift
  for c in "${cols[@]}"; do e+=(-e "$c"); done
  ts "$name" "$tmp/$name.tsv" -T fields -E header=y -E occurrence=a -E aggregator=';' "${e[@]}" "$@"
}

# The push-pull capture with each frame in a UDP/IPv4 datagram to 50000,
# under EtherType IPv4 and under 0x88B6.
for et in 0800 88b6; do
python3 - "$tmp/push-pull.pcap" "$tmp/push-pull-udp$et.pcap" "$et" <<'PY' || fail "cannot wrap the capture in UDP"
import struct, sys
src = open(sys.argv[1], "rb").read()
out = [src[:24]]
at = 24
while at + 16 <= len(src):
    sec, usec, incl, orig = struct.unpack_from("<IIII", src, at)
    frame = src[at + 16:at + 16 + incl]
    at += 16 + incl
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + len(frame), 0, 0x4000, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    s = sum(struct.unpack("!10H", ip))
    s = (s & 0xFFFF) + (s >> 16)
    ip = ip[:10] + struct.pack("!H", ~s & 0xFFFF) + ip[12:]
    udp = struct.pack("!HHHH", 50001, 50000, 8 + len(frame), 0)
    eth = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01" + bytes.fromhex(sys.argv[3])
    pkt = eth + ip + udp + frame
    out.append(struct.pack("<IIII", sec, usec, len(pkt), len(pkt)) + pkt)
open(sys.argv[2], "wb").write(b"".join(out))
PY
table "push-pull-udp$et"
done

tshark -G fields -X "lua_script:$lua" 2>/dev/null | awk -F'\t' '$1 == "F" { print $3 }' >"$tmp/fields"
for name in push-pull push-all push-zero crafted badcrc; do table "$name"; done
ts crafted "$tmp/by-name" -Y "pp.type == PULL" -T fields -e frame.number
ts crafted "$tmp/by-number" -Y "pp.type == 3" -T fields -e frame.number
ts badcrc "$tmp/unverified" -o pp.check_crc:FALSE -T fields -e pp.crc.status

python3 - "$tmp" "${cols[@]}" <<'PY' || fail "see above"
import sys

tmp, cols = sys.argv[1], sys.argv[2:]
bad = []


def check(what, got, want):
    if got != want:
        bad.append(f"{what}: got {got!r}, want {want!r}")


def load(name):
    lines = open(f"{tmp}/{name}.tsv").read().splitlines()
    head = lines[0].split("\t")
    assert head == cols, head
    return [dict(zip(head, l.split("\t"))) for l in lines[1:]]


def num(v):
    return int(v, 0) if v else None


ERROR, NOTE = 8388608, 4194304


def severities(r):
    return [int(s) for s in r["_ws.expert.severity"].split(";") if s]


# Every field of the wire format, under its name.
fields = set(open(f"{tmp}/fields").read().split())
for c in cols:
    if c.startswith("pp.") and c not in fields:
        bad.append(f"field {c} is not registered")

# --- traffic of every mode ---------------------------------------------------
for mode, push, pull, start, carrier in (("push-pull", 80, "1", 760, "4"),
                                         ("push-all", 1424, "0", 0, "2"),
                                         ("push-zero", 0, "1", 0, "4")):
    rows = load(mode)
    m = lambda what: f"{mode}: {what}"
    if len(rows) < 20:
        bad.append(m(f"only {len(rows)} frames"))
    for r in rows:
        f = f"frame {r['frame.number']}"
        if r["pp.version"] != "5":
            bad.append(m(f"{f} not dissected as version 5"))
        if r["_ws.malformed"] or any(s >= ERROR for s in severities(r)):
            bad.append(m(f"{f} malformed or in error: {r['_ws.expert.message']}"))
        if r["pp.crc.status"] != "0":
            bad.append(m(f"{f} CRC status {r['pp.crc.status']}"))
        if num(r["pp.src_inc"]) == 0:
            bad.append(m(f"{f} without a source incarnation"))
        if num(r["pp.dst_inc"]) == 0 and r["pp.type"] not in ("1", "7"):
            bad.append(m(f"{f} to one rank without its incarnation"))
        if r["pp.payload_len"] != "0" and r["data.len"] != r["pp.payload_len"]:
            bad.append(m(f"{f} payload not handed on as data"))
    types = {r["pp.type"] for r in rows}
    for t, n in (("1", "HELLO"), ("5", "ACK"), ("7", "BYE")):
        if t not in types:
            bad.append(m(f"no {n}"))
    fresh = [r for r in rows if r["pp.flags.retx"] == "0"]
    t77 = [r for r in fresh if r["pp.tag"] == "77"]
    first = [r for r in t77 if r["pp.type"] == "2" and r["pp.flags.first"] == "1"]
    if not first:
        bad.append(m("no FIRST PUSH of tag 77"))
        continue
    f = first[0]
    check(m("FIRST PUSH (src, dst, msg_len, offset, payload_len, PULL flag)"),
          [f[k] for k in ("pp.src_rank", "pp.dst_rank", "pp.msg_len", "pp.offset",
                          "pp.payload_len", "pp.flags.pull")],
          ["0", "1", "20000", "0", str(push), pull])
    msg = f["pp.msg"]
    check(m("message name"), msg, f"0>1:{f['pp.msg_id']}")
    # Every frame of the message carries its name, nothing else does.
    all77 = [r for r in rows if r["pp.tag"] == "77"]
    check(m("frames of tag 77 grouped"), sorted(r["frame.number"] for r in all77),
          sorted(r["frame.number"] for r in rows if r["pp.msg"] == msg))
    check(m("their first frame"), {r["pp.msg.first"] or r["frame.number"] for r in all77},
          {f["frame.number"]})
    pulls = [(r["pp.offset"], r["pp.src_rank"]) for r in t77 if r["pp.type"] == "3"]
    check(m("PULLs (offset, from)"), pulls, [] if mode == "push-all" else [(str(start), "1")])
    # After the pushes: offsets back to back from the PULL's, LAST at msg_len.
    rest = [r for r in t77 if r["pp.type"] == carrier and int(r["pp.offset"]) >= start]
    off = start
    for r in rest:
        check(m(f"frame {r['frame.number']} offset"), int(r["pp.offset"]), off)
        off = int(r["pp.offset"]) + int(r["pp.payload_len"])
    check(m("bytes up to"), off, 20000)
    check(m("LAST on the last frame"), rest[-1]["pp.flags.last"] if rest else None, "1")
    # Acknowledged: its pushes and DATA by the receiver, its PULL by the
    # sender (with the DATA that follows).
    acks = [r for r in rows if msg in r["pp.acked"].split(";")]
    check(m(f"ranks acknowledging {msg}"), {r["pp.src_rank"] for r in acks},
          {"1"} if mode == "push-all" else {"0", "1"})
    # The late message and the 16 bytes back.
    if not [r for r in fresh if r["pp.tag"] == "78" and r["pp.msg_len"] == "3000"]:
        bad.append(m("no tag 78"))
    t79 = [r for r in fresh if r["pp.tag"] == "79" and r["pp.type"] != "3"]
    check(m("tag 79 (src, dst, msg_len)"), {(r["pp.src_rank"], r["pp.dst_rank"], r["pp.msg_len"])
                                           for r in t79}, {("1", "0", "16")})
    check(m("tag 79 bytes"), sum(int(r["pp.payload_len"]) for r in t79), 16)

# --- crafted frames -----------------------------------------------------------------
rows = load("crafted")
want = """\
1,5,1,0x00,12,0xabcd1234,0,65535,0,0,0,0x0000,0,4294967295,1,0,0,0,1111,0,12,0x00000000
2,5,2,0x09,80,0xabcd1234,0,0,100,55,300,0x0001,0,1,7,4242,20000,0,1111,2222,80,0x0000c0de
3,5,2,0x24,680,0xabcd1234,0,0,101,55,300,0x0000,0,1,7,4242,20000,80,1111,2222,680,0x00000000
4,5,3,0x00,0,0xabcd1234,0,0,55,102,310,0x0000,1,0,7,4242,20000,760,2222,1111,,0x00000000
5,5,4,0x02,100,0xabcd1234,0,0,102,56,0,0x0000,0,1,7,4242,20000,19900,1111,2222,100,0x00000000
6,5,5,0x00,0,0xabcd1234,0,0,0,103,320,0x0000,1,0,0,0,0,0,2222,1111,,0x00000000
7,5,3,0x40,0,0xabcd1234,0,0,56,103,0,0x0000,1,0,8,5,4096,0,2222,1111,,0x00000000
8,5,3,0x10,0,0xabcd1234,0,0,57,103,0,0x0000,1,0,9,6,65536,65536,2222,1111,,0x00000000
9,5,2,0x83,0,0xabcd1234,3,65535,7,0,0,0x0000,0,1,10,9223372036854775815,1000000,0,1111,2222,,0x00000000
10,5,6,0x00,0,0xabcd1234,0,0,40,40,0,0x0000,1,0,0,0,0,0,2222,1111,,0x00000000
11,5,8,0x00,0,0xabcd1234,0,0,103,58,0,0x0000,0,1,0,0,0,0,1111,2222,,0x00000000
12,5,7,0x00,0,0xabcd1234,0,65535,0,0,0,0x0000,1,4294967295,3,0,0,0,2222,0,,0x00000000
13,1,2,0x09,10,0xabcd1234,0,0,100,55,300,,0,1,7,4242,300,0,,,10,
14,1,3,0x00,0,0xabcd1234,0,0,55,102,310,,1,0,7,4242,300,10,,,,
15,2,2,0x09,10,0xabcd1234,0,0,100,55,300,,0,1,17,4242,300,0,1111,2222,10,
16,2,3,0x00,0,0xabcd1234,0,0,55,102,310,,1,0,17,4242,300,10,2222,1111,,""".splitlines()
keys = ["frame.number", "pp.version", "pp.type", "pp.flags", "pp.payload_len", "pp.job",
        "pp.stream", "pp.ack_stream", "pp.seq", "pp.ack", "pp.credit", "pp.xflags",
        "pp.src_rank", "pp.dst_rank", "pp.msg_id", "pp.tag", "pp.msg_len", "pp.offset",
        "pp.src_inc", "pp.dst_inc", "data.len", "pp.data"]
check("crafted: frames", len(rows), len(want))
for r, w in zip(rows, want):
    check(f"crafted: frame {r['frame.number']}", ",".join(r[k] for k in keys), w)
for r in rows:
    if r["_ws.malformed"] or any(s >= ERROR for s in severities(r)) or r["pp.crc.status"] != "0":
        bad.append(f"crafted: frame {r['frame.number']} malformed, in error or bad CRC")
    # Each flag bit field agrees with the flags byte.
    for i, flag in enumerate(("first", "last", "retx", "pull", "done", "copied", "again",
                              "written")):
        check(f"crafted: frame {r['frame.number']} flag {flag}", r[f"pp.flags.{flag}"],
              "1" if int(r["pp.flags"], 16) >> i & 1 else "0")
check("crafted: every flag set somewhere",
      [flag for flag in ("first", "last", "retx", "pull", "done", "copied", "again", "written")
       if not any(r[f"pp.flags.{flag}"] == "1" for r in rows)], [])
check("crafted: every type", sorted({int(r["pp.type"]) for r in rows}), list(range(1, 9)))
by_name = open(f"{tmp}/by-name").read().split()
check("crafted: pp.type == PULL", by_name, ["4", "7", "8", "14", "16"])
check("crafted: pp.type == 3", open(f"{tmp}/by-number").read().split(), by_name)
# One message followed: its pushes, its PULL, its DATA, the ACK of it; the
# version 1 frames (no incarnations) are a message of their own.
got = [(r["frame.number"], r["pp.msg.index"], r["pp.msg.first"], r["pp.msg.prev"], r["pp.acked"])
       for r in rows if r["pp.msg"] == "0>1:7" or "0>1:7" in r["pp.acked"].split(";")]
check("crafted: message 0>1:7", got,
      [("2", "1", "", "", ""), ("3", "2", "2", "2", ""), ("4", "3", "2", "3", "0>1:7"),
       ("5", "4", "2", "4", "0>1:7"), ("6", "", "", "", "0>1:7"),
       ("13", "1", "", "", ""), ("14", "2", "13", "13", "")])
check("crafted: a PING acks two PULLs", rows[10]["pp.acked"], "0>1:8;0>1:9")
check("crafted: versions 1 and 2 flagged as such (a note)",
      [r["frame.number"] for r in rows if NOTE in severities(r) and r["pp.version"] in ("1", "2")],
      ["13", "14", "15", "16"])

# --- the same traffic in UDP/IPv4 -------------------------------------------------------
raw = load("push-pull")
for et in ("0800", "88b6"):
    udp = load(f"push-pull-udp{et}")
    check(f"in UDP ({et}): frames", len(udp), len(raw))
    for r, u in zip(raw, udp):
        diff = [c for c in cols if c.startswith("pp.") and r[c] != u[c]]
        check(f"in UDP ({et}): frame {r['frame.number']}: fields that differ", diff, [])
        check(f"in UDP ({et}): frame {r['frame.number']}: payload", u["data.len"], r["data.len"])

# --- a flipped payload byte ------------------------------------------------------------
rows = load("badcrc")
check("badcrc: (status, bad)", [(r["pp.crc.status"], r["pp.crc.bad"]) for r in rows],
      [("1", "1"), ("0", "")])
check("badcrc: errors", [ERROR in severities(r) for r in rows], [True, False])
check("badcrc: the message", "Bad CRC-32C" in rows[0]["_ws.expert.message"], True)
check("badcrc: same CRC field, different payload", rows[0]["pp.crc"], rows[1]["pp.crc"])
check("badcrc: calculated", rows[0]["pp.crc.calculated"] != rows[0]["pp.crc"], True)
check("badcrc: unverified when pp.check_crc is off", open(f"{tmp}/unverified").read().split(),
      ["2", "2"])

for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "PASS"
