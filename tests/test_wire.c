/* SPDX-License-Identifier: BSD-3-Clause */
/* proto/wire and proto/crc32c: round trips, known values, every rejection. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cu_main.h"
#include "pp_copy.h"
#include "test_proto_harness.h"

static const struct pp_wire_check chk = {0x5eed, 1, 4, 1500, 0x7001};

static struct pp_wire_hdr sample(void)
{
	struct pp_wire_hdr h = {
	    .type = PP_WIRE_PUSH,
	    .flags = PP_WIRE_F_FIRST | PP_WIRE_F_PULL,
	    .payload_len = 100,
	    .job = 0x5eed,
	    .stream = 0x1234,
	    .ack_stream = 0xbeef,
	    .seq = 0xdeadbeef,
	    .ack = 0x01020304,
	    .credit = 0x8001,
	    .src_rank = 2,
	    .dst_rank = 1,
	    .msg_id = 0xfffffffe,
	    .tag = 0xa1b2c3d4e5f60718ull, /* all 64 bits travel */
	    .msg_len = 0x123456789ull,
	    .offset = 0,
	    .src_inc = 0x7002,
	    .dst_inc = 0x7001,
	    .xflags = PP_WIRE_XF_DATA,
	    .data = 0xc0ffee42, /* immediate data: all 32 bits travel */
	};
	return h;
}

static int hdr_eq(const struct pp_wire_hdr *a, const struct pp_wire_hdr *b)
{
	return a->type == b->type && a->flags == b->flags && a->payload_len == b->payload_len &&
	       a->job == b->job && a->stream == b->stream && a->ack_stream == b->ack_stream &&
	       a->seq == b->seq && a->ack == b->ack && a->credit == b->credit &&
	       a->src_rank == b->src_rank && a->dst_rank == b->dst_rank && a->msg_id == b->msg_id &&
	       a->tag == b->tag && a->msg_len == b->msg_len && a->offset == b->offset &&
	       a->src_inc == b->src_inc && a->dst_inc == b->dst_inc && a->xflags == b->xflags &&
	       a->data == b->data;
}

static void test_crc_known(void)
{
	/* The standard check value of CRC-32C. */
	CU_ASSERT_EQUAL(pp_crc32c(0, "123456789", 9), 0xE3069283u);
	CU_ASSERT_EQUAL(pp_crc32c_sw(0, "123456789", 9), 0xE3069283u);
	CU_ASSERT_EQUAL(pp_crc32c(0, "", 0), 0);
	uint8_t buf[4099];
	pat_fill(buf, sizeof(buf), 3);
	uint32_t whole = pp_crc32c_sw(0, buf, sizeof(buf));
	for (size_t cut = 0; cut < 20; cut++)
		CU_ASSERT_EQUAL(pp_crc32c(pp_crc32c(0, buf, cut), buf + cut, sizeof(buf) - cut),
				whole);
	if (pp_crc32c_hw_available()) {
		for (size_t n = 0; n < 64; n++)
			CU_ASSERT_EQUAL(pp_crc32c_hw(7, buf + n, 1000 + n),
					pp_crc32c_sw(7, buf + n, 1000 + n));
		for (size_t n = 0; n < 4000; n += 37)
			CU_ASSERT_EQUAL(pp_crc32c_hw(0, buf + 3, n), pp_crc32c_sw(0, buf + 3, n));
	}
}

/* Folding: every length up to 1100 (across its register and block edges:
 * 256, 64, 16, 8 bytes) at offsets 0 to 3, chained, and a jumbo frame's
 * payload. */
static void test_crc_fold(void)
{
	if (!pp_crc32c_fold_available()) {
		printf("(no folding: the CPU or the compiler lacks AVX-512 VPCLMULQDQ) ");
		return;
	}
	static uint8_t buf[9100];
	pat_fill(buf, sizeof(buf), 5);
	unsigned bad = 0;
	for (size_t n = 0; n <= 1100; n++)
		for (size_t off = 0; off < 4; off++)
			bad += pp_crc32c_fold((uint32_t)(n * 2654435761u), buf + off, n) !=
			       pp_crc32c_sw((uint32_t)(n * 2654435761u), buf + off, n);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(pp_crc32c_fold(0, buf, 9000), pp_crc32c_sw(0, buf, 9000));
	CU_ASSERT_EQUAL(pp_crc32c_fold(pp_crc32c_fold(0, buf, 300), buf + 300, 8700),
			pp_crc32c_sw(0, buf, 9000));
	/* The dispatcher takes it for long buffers. */
	CU_ASSERT_EQUAL(pp_crc32c(0, buf + 1, 9099), pp_crc32c_sw(0, buf + 1, 9099));
}

static void test_roundtrip(void)
{
	uint8_t f[2048], pl[1440];
	pat_fill(pl, sizeof(pl), 1);
	struct pp_wire_hdr h = sample();
	size_t n = build_frame(f, sizeof(f), &h, pl);
	CU_ASSERT_EQUAL(n, 90 + 100);
	/* Fixed layout: EtherType and a few fields in network byte order. */
	CU_ASSERT_EQUAL(f[12], 0x88);
	CU_ASSERT_EQUAL(f[13], 0xB5);
	CU_ASSERT_EQUAL(f[14], 0x52); /* ver 5, type PUSH */
	CU_ASSERT_EQUAL(f[14 + 12], 0xde);
	CU_ASSERT_EQUAL(f[14 + 20], 0x80);
	CU_ASSERT_EQUAL(f[14 + 36], 0xa1); /* tag, high byte first */
	CU_ASSERT_EQUAL(f[14 + 43], 0x18);
	CU_ASSERT_EQUAL(f[14 + 48], 0x23); /* msg_len low word starts 0x23456789 */
	CU_ASSERT_EQUAL(f[14 + 62], 0x70); /* src_inc 0x7002 */
	CU_ASSERT_EQUAL(f[14 + 63], 0x02);
	CU_ASSERT_EQUAL(f[14 + 67], 0x01); /* dst_inc 0x7001 */
	CU_ASSERT_EQUAL(f[14 + 22], 0x00); /* xflags DATA */
	CU_ASSERT_EQUAL(f[14 + 23], 0x01);
	CU_ASSERT_EQUAL(f[14 + 68], 0xc0); /* data 0xc0ffee42 */
	CU_ASSERT_EQUAL(f[14 + 71], 0x42);
	struct pp_wire_hdr g;
	const uint8_t *p;
	enum pp_drop_reason why = PP_DROP_MAX;
	CU_ASSERT_EQUAL(pp_wire_decode(f, n, &chk, &g, &p, &why), 0);
	CU_ASSERT_EQUAL(why, PP_DROP_MAX);
	CU_ASSERT_TRUE(hdr_eq(&g, &h));
	CU_ASSERT_EQUAL(memcmp(p, pl, 100), 0);
	/* Every type, largest payload, and no payload. */
	for (uint8_t t = PP_WIRE_HELLO; t <= PP_WIRE_BYE; t++) {
		h = sample();
		h.type = t;
		h.flags = 0;
		h.payload_len =
		    (t == PP_WIRE_PUSH || t == PP_WIRE_DATA) ? 1500 - PP_WIRE_HDR_LEN : 0;
		h.offset = 5;
		n = build_frame(f, sizeof(f), &h, pl);
		CU_ASSERT_EQUAL_FATAL(pp_wire_decode(f, n, &chk, &g, &p, &why), 0);
		CU_ASSERT_EQUAL(g.type, t);
		CU_ASSERT_EQUAL(g.payload_len, h.payload_len);
		CU_ASSERT_EQUAL(memcmp(p, pl, h.payload_len), 0);
	}
	CU_ASSERT_EQUAL(pp_wire_encode(f, 50, f, f, &h, pl), -ENOSPC);
	h.type = 0;
	CU_ASSERT_EQUAL(pp_wire_encode(f, sizeof(f), f, f, &h, pl), -EINVAL);
}

/* Build the sample, apply a change, expect rejection for reason r. */
/* The local (ring) form: a round trip, and every rule but the CRC. */
static void test_local(void)
{
	uint8_t f[256], pl[100];
	pat_fill(pl, sizeof(pl), 2);
	struct pp_wire_hdr h = sample(), g;
	int n = pp_wire_encode_local(f, sizeof(f), &h, pl);
	CU_ASSERT_EQUAL_FATAL(n, (int)(PP_WIRE_LOCAL_HDR + h.payload_len));
	const uint8_t *p;
	enum pp_drop_reason why = PP_DROP_MAX;
	CU_ASSERT_EQUAL(pp_wire_decode_local(f, (size_t)n, &chk, &g, &p, &why), 0);
	CU_ASSERT_TRUE(hdr_eq(&g, &h));
	CU_ASSERT_EQUAL(memcmp(p, pl, h.payload_len), 0);
	CU_ASSERT_EQUAL(pp_wire_encode_local(f, (size_t)n - 1, &h, pl), -ENOSPC);
	struct {
		int len_delta;		  /* frame length change */
		enum pp_drop_reason want; /* the rule it breaks */
	} bad[] = {
	    {-1, PP_DROP_LENGTH},
	    {-(int)h.payload_len - 1, PP_DROP_SHORT},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = PP_DROP_MAX;
		CU_ASSERT_EQUAL(
		    pp_wire_decode_local(f, (size_t)(n + bad[i].len_delta), &chk, &g, &p, &why),
		    -EPROTO);
		CU_ASSERT_EQUAL(why, bad[i].want);
	}
	struct pp_wire_hdr x = h;
	x.job++;
	pp_wire_encode_local(f, sizeof(f), &x, pl);
	CU_ASSERT_EQUAL(pp_wire_decode_local(f, (size_t)n, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, PP_DROP_JOB);
	x = h;
	x.src_rank = chk.rank;
	pp_wire_encode_local(f, sizeof(f), &x, pl);
	CU_ASSERT_EQUAL(pp_wire_decode_local(f, (size_t)n, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, PP_DROP_RANK);
	x = h;
	x.offset = x.msg_len;
	pp_wire_encode_local(f, sizeof(f), &x, pl);
	CU_ASSERT_EQUAL(pp_wire_decode_local(f, (size_t)n, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, PP_DROP_RANGE);
	x = h;
	x.type = 0;
	memcpy(f, &x, PP_WIRE_LOCAL_HDR); /* the encoder refuses it */
	CU_ASSERT_EQUAL(pp_wire_decode_local(f, (size_t)n, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, PP_DROP_TYPE);
	x = h;
	x.type = PP_WIRE_ACK; /* carries no payload */
	pp_wire_encode_local(f, sizeof(f), &x, pl);
	CU_ASSERT_EQUAL(pp_wire_decode_local(f, (size_t)n, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, PP_DROP_LENGTH);
}

static void expect(enum pp_drop_reason r, void (*mutate)(struct pp_wire_hdr *h), int byte_off,
		   uint8_t byte_val, int fix_crc, int trim)
{
	uint8_t f[2048], pl[2048];
	pat_fill(pl, sizeof(pl), 2);
	struct pp_wire_hdr h = sample(), g;
	if (mutate)
		mutate(&h);
	size_t n = build_frame(f, sizeof(f), &h, pl);
	CU_ASSERT_FATAL(n > 0);
	if (byte_off >= 0)
		f[byte_off] = byte_val;
	if (fix_crc)
		refresh_crc(f, n);
	n = (size_t)((int)n + trim);
	const uint8_t *p;
	enum pp_drop_reason why = PP_DROP_MAX;
	CU_ASSERT_EQUAL(pp_wire_decode(f, n, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, r);
	if (why != r)
		fprintf(stderr, "expected %s got %s\n", pp_wire_drop_name(r),
			pp_wire_drop_name(why));
}

static void m_job(struct pp_wire_hdr *h)
{
	h->job = 0x5eee;
}
static void m_src_big(struct pp_wire_hdr *h)
{
	h->src_rank = 4;
}
static void m_src_self(struct pp_wire_hdr *h)
{
	h->src_rank = 1;
}
static void m_dst(struct pp_wire_hdr *h)
{
	h->dst_rank = 3;
}
static void m_range(struct pp_wire_hdr *h)
{
	h->flags = 0;
	h->msg_len = 1000;
	h->offset = 901;
}
static void m_range_wrap(struct pp_wire_hdr *h)
{
	h->flags = 0;
	h->msg_len = UINT64_MAX;
	h->offset = UINT64_MAX - 10;
}
static void m_first_off(struct pp_wire_hdr *h)
{
	h->offset = 8;
}
static void m_pull_off(struct pp_wire_hdr *h)
{
	h->type = PP_WIRE_PULL;
	h->payload_len = 0;
	h->msg_len = 10;
	h->offset = 11;
}
static void m_ack_payload(struct pp_wire_hdr *h)
{
	h->type = PP_WIRE_ACK;
}
static void m_big(struct pp_wire_hdr *h)
{
	h->payload_len = 1425; /* 76 + 1425 > MTU 1500 */
}
static void m_dst_inc(struct pp_wire_hdr *h)
{
	h->dst_inc = 0x7000; /* an earlier life of rank 1 */
}
static void m_dst_inc0(struct pp_wire_hdr *h)
{
	h->dst_inc = 0; /* "whichever" is not for a PUSH */
}

static void test_reject(void)
{
	expect(PP_DROP_SHORT, NULL, -1, 0, 0, -101);
	expect(PP_DROP_SHORT, NULL, 12, 0x08, 0, 0); /* IPv4 EtherType */
	expect(PP_DROP_VERSION, NULL, 14, 0x62, 0, 0);
	expect(PP_DROP_VERSION, NULL, 14, 0x42, 1, 0); /* version 4 */
	expect(PP_DROP_VERSION, NULL, 14, 0x32, 1, 0); /* version 3 */
	expect(PP_DROP_VERSION, NULL, 14, 0x22, 1, 0); /* version 2 */
	expect(PP_DROP_VERSION, NULL, 14, 0x12, 1, 0); /* version 1 */
	expect(PP_DROP_TYPE, NULL, 14, 0x50, 1, 0);
	expect(PP_DROP_TYPE, NULL, 14, 0x59, 1, 0);
	expect(PP_DROP_LENGTH, NULL, -1, 0, 0, -1);
	expect(PP_DROP_LENGTH, NULL, -1, 0, 0, 1);
	expect(PP_DROP_LENGTH, m_ack_payload, -1, 0, 0, 0);
	expect(PP_DROP_LENGTH, m_big, -1, 0, 0, 0);
	expect(PP_DROP_CRC, NULL, 14 + 76 + 5, 0x55, 0, 0);
	expect(PP_DROP_CRC, NULL, 14 + 72, 0x55, 0, 0);
	expect(PP_DROP_CRC, NULL, 14 + 69, 0x55, 0, 0); /* the immediate data is covered */
	expect(PP_DROP_CRC, NULL, 14 + 23, 0x55, 0, 0); /* and xflags */
	expect(PP_DROP_CRC, NULL, 14 + 61, 0x55, 0, 0); /* the incarnations are covered */
	expect(PP_DROP_CRC, NULL, 14 + 37, 0x55, 0, 0); /* and the tag's high bits */
	expect(PP_DROP_CRC, NULL, 14 + 30, 0x55, 0, 0);
	expect(PP_DROP_JOB, m_job, -1, 0, 0, 0);
	expect(PP_DROP_RANK, m_src_big, -1, 0, 0, 0);
	expect(PP_DROP_RANK, m_src_self, -1, 0, 0, 0);
	expect(PP_DROP_RANK, m_dst, -1, 0, 0, 0);
	expect(PP_DROP_STALE, m_dst_inc, -1, 0, 0, 0);
	expect(PP_DROP_STALE, m_dst_inc0, -1, 0, 0, 0);
	expect(PP_DROP_RANGE, m_range, -1, 0, 0, 0);
	expect(PP_DROP_RANGE, m_range_wrap, -1, 0, 0, 0);
	expect(PP_DROP_RANGE, m_first_off, -1, 0, 0, 0);
	expect(PP_DROP_RANGE, m_pull_off, -1, 0, 0, 0);
	/* Every bit flip of a frame is caught (by CRC or an earlier rule). */
	uint8_t f[256], pl[100];
	pat_fill(pl, sizeof(pl), 4);
	struct pp_wire_hdr h = sample(), g;
	size_t n = build_frame(f, sizeof(f), &h, pl);
	unsigned caught = 0;
	for (size_t bit = 12 * 8; bit < n * 8; bit++) {
		const uint8_t *p;
		enum pp_drop_reason why;
		f[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		caught += pp_wire_decode(f, n, &chk, &g, &p, &why) == -EPROTO;
		f[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	CU_ASSERT_EQUAL(caught, (n - 12) * 8);
	CU_ASSERT_STRING_EQUAL(pp_wire_drop_name(PP_DROP_CRC), "crc");
	CU_ASSERT_STRING_EQUAL(pp_wire_drop_name(PP_DROP_MAX), "?");
	CU_ASSERT_STRING_EQUAL(pp_wire_type_name(PP_WIRE_PULL), "pull");
}

static void test_hello_broadcast(void)
{
	uint8_t f[256];
	struct pp_wire_hdr h = sample(), g;
	h.type = PP_WIRE_HELLO;
	h.flags = 0;
	h.payload_len = 0;
	h.dst_rank = PP_WIRE_RANK_ALL;
	size_t n = build_frame(f, sizeof(f), &h, NULL);
	const uint8_t *p;
	enum pp_drop_reason why;
	CU_ASSERT_EQUAL(pp_wire_decode(f, n, &chk, &g, &p, &why), 0);
	h.dst_inc = 0; /* nobody known yet */
	n = build_frame(f, sizeof(f), &h, NULL);
	CU_ASSERT_EQUAL(pp_wire_decode(f, n, &chk, &g, &p, &why), 0);
	h.type = PP_WIRE_ACK;
	n = build_frame(f, sizeof(f), &h, NULL);
	CU_ASSERT_EQUAL(pp_wire_decode(f, n, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, PP_DROP_RANK);
}

/* Incarnations: 0 stands for "whichever" only on HELLO and BYE; the serial
 * order wraps. */
static void test_incarnation(void)
{
	uint8_t f[256];
	struct pp_wire_hdr h = sample(), g;
	const uint8_t *p;
	enum pp_drop_reason why;
	h.type = PP_WIRE_BYE;
	h.flags = 0;
	h.payload_len = 0;
	h.dst_inc = 0; /* a daemon's BYE for a dead rank */
	size_t n = build_frame(f, sizeof(f), &h, NULL);
	CU_ASSERT_EQUAL(pp_wire_decode(f, n, &chk, &g, &p, &why), 0);
	CU_ASSERT_EQUAL(g.src_inc, 0x7002);
	h.dst_inc = 0x7000; /* a BYE meant for an earlier life of ours */
	n = build_frame(f, sizeof(f), &h, NULL);
	CU_ASSERT_EQUAL(pp_wire_decode(f, n, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, PP_DROP_STALE);
	h.type = PP_WIRE_HELLO; /* an answer names us */
	h.dst_inc = 0x7000;
	n = build_frame(f, sizeof(f), &h, NULL);
	CU_ASSERT_EQUAL(pp_wire_decode(f, n, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, PP_DROP_STALE);
	h.dst_inc = 0; /* a HELLO to rank 1 whose incarnation is not known yet */
	n = build_frame(f, sizeof(f), &h, NULL);
	CU_ASSERT_EQUAL(pp_wire_decode(f, n, &chk, &g, &p, &why), 0);
	h.type = PP_WIRE_ACK; /* but no other type */
	n = build_frame(f, sizeof(f), &h, NULL);
	CU_ASSERT_EQUAL(pp_wire_decode(f, n, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, PP_DROP_STALE);
	/* The local form keeps the rule. */
	h = sample();
	h.dst_inc = 0x7003;
	static const uint8_t pl[100]; /* sample()'s payload */
	int m = pp_wire_encode_local(f, sizeof(f), &h, pl);
	CU_ASSERT_EQUAL(pp_wire_decode_local(f, (size_t)m, &chk, &g, &p, &why), -EPROTO);
	CU_ASSERT_EQUAL(why, PP_DROP_STALE);
	CU_ASSERT_TRUE(pp_wire_inc_after(2, 1));
	CU_ASSERT_FALSE(pp_wire_inc_after(1, 1));
	CU_ASSERT_FALSE(pp_wire_inc_after(1, 2));
	CU_ASSERT_TRUE(pp_wire_inc_after(3, 0xfffffff0u)); /* after a wrap */
	CU_ASSERT_STRING_EQUAL(pp_wire_drop_name(PP_DROP_STALE), "stale");
}

/* The daemon routes by pp_wire_peek: the fields the decoder reads, from
 * any frame of our EtherType and version, checked or not. */
static void test_peek(void)
{
	uint8_t f[256], pl[100];
	pat_fill(pl, sizeof(pl), 5);
	struct pp_wire_hdr h = sample();
	size_t n = build_frame(f, sizeof(f), &h, pl);
	struct pp_wire_peek pk;
	CU_ASSERT_EQUAL_FATAL(pp_wire_peek(f, n, &pk), 0);
	CU_ASSERT_EQUAL(pk.type, h.type);
	CU_ASSERT_EQUAL(pk.flags, h.flags);
	CU_ASSERT_EQUAL(pk.job, h.job);
	CU_ASSERT_EQUAL(pk.stream, h.stream);
	CU_ASSERT_EQUAL(pk.ack_stream, h.ack_stream);
	CU_ASSERT_EQUAL(pk.src_rank, h.src_rank);
	CU_ASSERT_EQUAL(pk.dst_rank, h.dst_rank);
	CU_ASSERT_EQUAL(pk.msg_id, h.msg_id);
	CU_ASSERT_EQUAL(pk.src_inc, h.src_inc);
	CU_ASSERT_EQUAL(pk.dst_inc, h.dst_inc);
	f[20] ^= 1; /* a bad CRC is not peek's business */
	CU_ASSERT_EQUAL(pp_wire_peek(f, n, &pk), 0);
	CU_ASSERT_EQUAL(pp_wire_peek(f, PP_WIRE_MIN_FRAME - 1, &pk), -EPROTO);
	f[14] = 0x12; /* version 1 */
	CU_ASSERT_EQUAL(pp_wire_peek(f, n, &pk), -EPROTO);
	f[14] = 0x22;
	f[12] = 0x08;
	CU_ASSERT_EQUAL(pp_wire_peek(f, n, &pk), -EPROTO);
}

/* pp_copy_short moves exactly n bytes, 0 to 160, at any alignment: the
 * bytes around the copy stay as they were. */
static void test_copy_short(void)
{
	uint8_t src[176], dst[192];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	for (size_t n = 0; n <= 160; n++)
		for (size_t at = 0; at < 8; at++) {
			memset(dst, 0xA5, sizeof(dst));
			pp_copy_short(dst + 8 + at, src + at, n);
			CU_ASSERT_EQUAL(memcmp(dst + 8 + at, src + at, n), 0);
			for (size_t i = 0; i < 8 + at; i++)
				CU_ASSERT_EQUAL(dst[i], 0xA5);
			for (size_t i = 8 + at + n; i < sizeof(dst); i++)
				CU_ASSERT_EQUAL(dst[i], 0xA5);
		}
}

/* Lite records round trip with every set of flags and every length from 0
 * to 100 bytes (the message past the first line written first, then that
 * line): the decoder gives back the fields sent, 0 for parts not sent, and
 * the message; the length is the header the flags call for plus the
 * message. */
static void test_lite(void)
{
	uint8_t msg[100], rec[160];
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(0x30 + i);
	for (uint8_t fl = 0; fl < 4; fl++)
		for (uint16_t n = 0; n <= sizeof(msg); n++) {
			struct pp_wire_lite l = {.kind = PP_WIRE_LITE,
						 .flags = fl,
						 .len = n,
						 .tag = 0x0123456789abcdefull + n,
						 .ack = 11,
						 .credit = 22,
						 .ack_stream = 33,
						 .data = 0xdada};
			memset(rec, 0xEE, sizeof(rec));
			uint32_t len = pp_wire_encode_lite(rec, &l, msg);
			CU_ASSERT_EQUAL(len, pp_wire_lite_hdr_len(fl) + n);
			CU_ASSERT_EQUAL(rec[len], 0xEE);
			struct pp_wire_lite got;
			const uint8_t *pl;
			enum pp_drop_reason why;
			CU_ASSERT_EQUAL_FATAL(pp_wire_decode_lite(rec, len, &chk, &got, &pl, &why),
					      0);
			CU_ASSERT(got.kind == PP_WIRE_LITE && got.flags == fl && got.len == n);
			CU_ASSERT_EQUAL(got.tag, l.tag);
			int ack = (fl & PP_WIRE_LITE_ACK) != 0,
			    data = (fl & PP_WIRE_LITE_DATA) != 0;
			CU_ASSERT(got.ack == (ack ? 11u : 0) && got.credit == (ack ? 22 : 0) &&
				  got.ack_stream == (ack ? 33 : 0));
			CU_ASSERT_EQUAL(got.data, data ? 0xdadau : 0);
			CU_ASSERT_EQUAL(memcmp(pl, msg, n), 0);
		}
}

static CU_TestInfo tests[] = {
    {"crc32c known values and chaining", test_crc_known},
    {"crc32c folding matches the table", test_crc_fold},
    {"encode/decode round trip", test_roundtrip},
    {"every rejection reason", test_reject},
    {"hello to all ranks", test_hello_broadcast},
    {"incarnations", test_incarnation},
    {"peek", test_peek},
    {"local (ring) form: round trip and every rule", test_local},
    {"the short copy: exactly n bytes", test_copy_short},
    {"lite records: every part round trips", test_lite},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"wire", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
