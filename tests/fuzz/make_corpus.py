#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed corpus of the fuzz targets: well-formed frames of every
# type (fuzz_wire) and short frame sequences for the engine (fuzz_engine).
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
          msg_len=None, offset=0, credit=64, job=0x5EED, src_inc=None, dst_inc=None):
    """A wire frame of version 2 (proto/wire.h): 68-byte header, CRC last.
    Incarnations follow the fuzz targets' rigs: rank r is 0x100 + r."""
    if msg_len is None:
        msg_len = offset + len(payload)
    if src_inc is None:
        src_inc = 0x100 + src
    if dst_inc is None:
        dst_inc = 0 if dst == 0xFFFFFFFF else 0x100 + dst
    h = struct.pack(">BBHIHHIIHHIIIIQQIII", 0x20 | typ, flags, len(payload), job, 0, 0,
                    seq, ack, credit, 0, src, dst, msg_id, tag, msg_len, offset,
                    src_inc, dst_inc, 0)
    h = h[:64] + struct.pack(">I", crc32c(h + payload))
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
    "push_whole": frame(2, 0x03, pl),
    "push_zero": frame(2, 0x09, b"", msg_len=5000),
    "pull": frame(3, 0, b"", msg_len=5000, offset=760),
    "data_last": frame(4, 0x02, bytes(1432), offset=3568, msg_len=5000),
    "ack": frame(5, 0, b"", ack=3),
    "nack": frame(6, 0, b"", seq=1, ack=1),
    "hello": frame(1, 0, b"", dst=0xFFFFFFFF),
    "bye": frame(7, 0, b""),
}
engine = {
    "early_whole": rec(ef(2, 0x03, pl, seq=0, tag=3), 5),
    "push_pull": rec(ef(2, 0x09, pl, seq=0, msg_len=2000), 5)
    + rec(ef(2, 0, bytes(680), seq=1, offset=80, msg_len=2000), 5)
    + rec(ef(4, 0x02, bytes(1240), seq=2, offset=760, msg_len=2000), 5),
    "acks": rec(ef(5, 0, b"", ack=1), 5) + rec(ef(6, 0, b"", seq=0), 0x35),
    "pull_for_send": rec(ef(3, 0, b"", seq=0, msg_len=5000, offset=760, tag=5, ack=2), 5),
    "dup_gap": rec(ef(2, 0x03, pl, seq=0), 5) + rec(ef(2, 0x03, pl, seq=0), 5)
    + rec(ef(2, 0x03, pl, seq=5), 1),
}
for d, files in (("corpus/fuzz_wire", wire), ("corpus/fuzz_engine", engine)):
    os.makedirs(d, exist_ok=True)
    for k, v in files.items():
        with open(os.path.join(d, k), "wb") as f:
            f.write(v)
