#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed corpus of the fuzz targets: well-formed frames of every
# type (fuzz_wire), short frame sequences for the engine (fuzz_engine),
# rings with sound and broken records (fuzz_ring) and segment headers with
# and without rewritten fields (fuzz_segment), raw frames in UDP/IPv4
# (fuzz_udp_frame).
# Run from this folder: ./make_corpus.py
import os
import struct


def crc32c(b, crc=0):
    crc ^= 0xFFFFFFFF
    for x in b:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def frame(typ, flags, payload, seq=0, ack=0, src=2, dst=1, msg_id=0, tag=5,
          msg_len=None, offset=0, credit=64, job=0x5EED, src_inc=None, dst_inc=None,
          data=None):
    """A wire frame of version 5 (proto/wire.h): 76-byte header, CRC last;
    data given: xflags DATA and the immediate data.
    Incarnations follow the fuzz targets' rigs: rank r is 0x100 + r."""
    if msg_len is None:
        msg_len = offset + len(payload)
    if src_inc is None:
        src_inc = 0x100 + src
    if dst_inc is None:
        dst_inc = 0 if dst == 0xFFFFFFFF else 0x100 + dst
    h = struct.pack(">BBHIHHIIHHIIIQQQIIII", 0x50 | typ, flags, len(payload), job, 0, 0,
                    seq, ack, credit, 0 if data is None else 1, src, dst, msg_id, tag, msg_len,
                    offset, src_inc, dst_inc, data or 0, 0)
    h = h[:72] + struct.pack(">I", crc32c(h + payload))
    eth = bytes([2, 0, 0, 0, 0, dst & 0xFF, 2, 0, 0, 0, 0, src & 0xFF]) + b"\x88\xb5"
    return eth + h + payload


def rec(f, sel):
    return struct.pack(">HB", len(f), sel) + f


def ef(*a, **k):
    k.setdefault("src", 1)
    k.setdefault("dst", 0)
    return frame(*a, **k)


pl = bytes(range(80))
wire = {
    "push_first": frame(2, 0x09, pl, msg_len=1000),
    "push_data": frame(2, 0x09, pl, msg_len=1000, data=0xC0FFEE),
    "push_whole": frame(2, 0x03, pl),
    "push_zero": frame(2, 0x09, b"", msg_len=5000),
    "pull": frame(3, 0, b"", msg_len=5000, offset=760),
    "data_last": frame(4, 0x02, bytes(1424), offset=3576, msg_len=5000),
    "ack": frame(5, 0, b"", ack=3),
    "nack": frame(6, 0, b"", seq=1, ack=1),
    "hello": frame(1, 0, b"", dst=0xFFFFFFFF),
    "bye": frame(7, 0, b""),
}
engine = {
    "early_whole": rec(ef(2, 0x03, pl, seq=0, tag=3), 5),
    "early_data": rec(ef(2, 0x03, pl, seq=0, tag=3, data=7), 5),
    "push_pull": rec(ef(2, 0x09, pl, seq=0, msg_len=2000), 5)
    + rec(ef(2, 0, bytes(680), seq=1, offset=80, msg_len=2000), 5)
    + rec(ef(4, 0x02, bytes(1240), seq=2, offset=760, msg_len=2000), 5),
    "acks": rec(ef(5, 0, b"", ack=1), 5) + rec(ef(6, 0, b"", seq=0), 0x35),
    "pull_for_send": rec(ef(3, 0, b"", seq=0, msg_len=5000, offset=760, tag=5, ack=2), 5),
    "dup_gap": rec(ef(2, 0x03, pl, seq=0), 5) + rec(ef(2, 0x03, pl, seq=0), 5)
    + rec(ef(2, 0x03, pl, seq=5), 1),
}


def ring(exp, head, tail, cells, ops):
    """fuzz_ring.c's input: 2 << exp cells, the indices, the cells image
    (padded to the ring), then the operations."""
    n = 2 << exp
    img = b"".join(cells).ljust(n * 64, b"\0")[: n * 64]
    return bytes([exp]) + struct.pack("<QQ", head, tail) + img + ops


FUZZ_KEY = 1 << 63  # fuzz_ring.c's ring key


def cellrec(length, kind=0, index=0):
    """A cell holding a record header (mark of index, len, kind) and nothing
    else."""
    return struct.pack("<QII", index ^ FUZZ_KEY, length, kind).ljust(64, b"\0")


PEEK, PEEK_REL, REL, PROD, POKE, NEAR = range(6)
rings = {
    "sound": ring(3, 0, 0, [], bytes([PROD, 100, 0, PROD, 0, 0, PEEK_REL, PEEK_REL, PEEK_REL]
                                     + [PROD, 200, 1, PEEK_REL] * 6)),
    "wrap_len": ring(3, 0, 0, [cellrec(0xFFFFFFB1)], bytes([PEEK, PEEK_REL, PEEK_REL])),
    "bad_pad": ring(2, 6, 6, [cellrec(48, 0, k) for k in range(6)] + [cellrec(5, 1, 6)],
                    bytes([PEEK_REL] * 4)),
    "bad_kind": ring(2, 0, 0, [cellrec(10, 7)], bytes([PEEK_REL, PEEK])),
    "marks_ahead": ring(3, 0, 0, [cellrec(48, 0, k) for k in range(16)], bytes([PEEK_REL] * 3)),
    "stale_marks": ring(3, 0, 0, [cellrec(48, 0, k + 16) for k in range(16)],
                        bytes([PEEK, PROD, 48, 0, PEEK_REL, PEEK])),
    "near": ring(3, 0, 0, [], bytes([PROD, 48, 0, PEEK_REL, NEAR, 0, 0xFF, 0xFF, 0, PEEK,
                                     NEAR, 0, 100, 0, 1, PEEK])),
    "hostile_writes": ring(3, 0, 0, [],
                           bytes([PROD, 120, 0, POKE, 136, 1]) + struct.pack("<Q", 0xFFFFFFB1)
                           + bytes([PEEK_REL, PROD, 40, 0, POKE, 0, 0])
                           + struct.pack("<Q", 1 << 40) + bytes([PEEK_REL, PEEK])),
}


def seg(nlocal, exp, heap_pages, nonce, me, delta, patches=b""):
    """fuzz_segment.c's input: geometry, then patches to the sound header."""
    return bytes([nlocal - 1, exp, heap_pages, nonce, me, delta & 0xFF]) + patches


def patch(off, value, width=8):
    return struct.pack("<HB", off, width - 1) + value.to_bytes(width, "little")


# Header fields (segment.h, struct pp_shm_hdr).
SIZE, NLOCAL, RING_BYTES, RINGS, DESCS, RECVQS, HEAPS, HEAP_BYTES = 16, 24, 32, 40, 48, 56, 64, 72
segs = {
    "sound": seg(3, 5, 4, 9, 1, 0),
    "sound_one": seg(1, 0, 0, 1, 0, 0),
    "descs_off": seg(3, 5, 4, 9, 1, 0, patch(DESCS, 0x7FFF000100A0)),
    "heap_bytes": seg(2, 3, 1, 2, 1, 0, patch(HEAP_BYTES, 1 << 62)),
    "rings_off": seg(4, 2, 0, 3, 2, 0, patch(RINGS, 0)),
    "size_delta": seg(2, 3, 2, 4, 1, -1),
    "slot_rank": seg(3, 3, 0, 5, 2, 0, patch(80 + 16, 99, 4)),
    "nlocal": seg(2, 1, 0, 6, 1, 0, patch(NLOCAL, 64, 4)),
}


def ip_sum(h):
    s = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_mac(ip, port):
    p = port - 49152
    return bytes([((p >> 8) & 0x3F) << 2 | 2, p & 0xFF]) + bytes(ip)


def raw_udp(payload, sport=50000, dport=50001, src=(10, 0, 0, 2), dst=(10, 0, 0, 1),
            frag=0x4000, ihl=5):
    """fuzz_udp_frame.c's input: the port, a segment size, then a raw frame
    (driver/udp/udp_frame.h) carrying payload."""
    opts = b"\x01" * (4 * (ihl - 5))
    tot = 4 * ihl + 8 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tot, 0, frag, 64, 17, 0,
                     bytes(src), bytes(dst)) + opts
    ip = ip[:10] + struct.pack("!H", ip_sum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    return b"\x02\x09\x08\x07\x06\x05\x02\x01\x02\x03\x04\x05\x08\x00" + ip + udp + payload


def inner(n, sport=50000, dport=50001):
    return (udp_mac((10, 0, 0, 1), dport) + udp_mac((10, 0, 0, 2), sport) + b"\x88\xb5" +
            bytes(i & 0xFF for i in range(n - 14)))


def udp_in(frame, seg=0, port=50001):
    return struct.pack("!H", port) + struct.pack("<H", seg) + frame


udps = {
    "one": udp_in(raw_udp(inner(200))),
    "gso": udp_in(raw_udp(inner(1000) * 7 + inner(300)), seg=1000),
    "options": udp_in(raw_udp(inner(100), ihl=7)),
    "fragment": udp_in(raw_udp(inner(100), frag=0x2000)),
    "spoofed": udp_in(raw_udp(inner(100, sport=50007))),
    "broadcast": udp_in(raw_udp(b"\xff" * 6 + inner(100)[6:])),
}
for d, files in (("corpus/fuzz_wire", wire), ("corpus/fuzz_engine", engine),
                 ("corpus/fuzz_ring", rings), ("corpus/fuzz_segment", segs),
                 ("corpus/fuzz_udp_frame", udps)):
    os.makedirs(d, exist_ok=True)
    for k, v in files.items():
        with open(os.path.join(d, k), "wb") as f:
            f.write(v)
