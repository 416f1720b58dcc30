/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto/engine over a lossless link: every mode x early/late receiver x the
 * sizes around BTP1 and BTP2, every byte checked; matching with wildcards,
 * non-overtaking order, truncation, credits on and off.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "pp_compiler.h"
#include "test_proto_harness.h"

#define GUARD 64

struct buf {
	uint8_t *p;   /* GUARD bytes, then len bytes, then GUARD bytes */
	uint64_t len; /* usable bytes */
};

static struct buf buf_new(uint64_t len)
{
	struct buf b = {malloc(len + 2 * GUARD), len};
	CU_ASSERT_PTR_NOT_NULL_FATAL(b.p);
	memset(b.p, 0xEE, len + 2 * GUARD);
	return b;
}

static uint8_t *buf_at(struct buf *b)
{
	return b->p + GUARD;
}

static int guards_intact(const struct buf *b)
{
	for (uint64_t i = 0; i < GUARD; i++)
		if (b->p[i] != 0xEE || b->p[GUARD + b->len + i] != 0xEE)
			return 0;
	return 1;
}

/* Take exactly one completion from engine e and check it. */
static void expect_cpl(struct pp_proto *e, uint64_t cookie, int is_send, int src, uint64_t tag,
		       uint64_t len, int error)
{
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(e, &c), 1);
	CU_ASSERT_EQUAL(c.cookie, cookie);
	CU_ASSERT_EQUAL(c.is_send, is_send);
	CU_ASSERT_EQUAL(c.source, src);
	CU_ASSERT_EQUAL(c.tag, tag);
	CU_ASSERT_EQUAL(c.len, len);
	CU_ASSERT_EQUAL(c.error, error);
}

static void one_message(enum pp_proto_mode mode, int late, uint64_t len)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = mode;
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	struct buf s = buf_new(len), r = buf_new(len);
	pat_fill(buf_at(&s), len, (uint32_t)len);
	if (!late)
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 5, 0, buf_at(&r), len, 11), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 5, buf_at(&s), len, 22), 0);
	net_run(&net, 1000000000);
	struct pp_stats st;
	if (late) {
		pp_proto_stats(net.e[1], &st);
		CU_ASSERT_EQUAL(st.msgs_rx, 0);
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 5, 0, buf_at(&r), len, 11), 0);
		net_run(&net, 1000000000);
	}
	expect_cpl(net.e[0], 22, 1, 1, 5, len, 0);
	expect_cpl(net.e[1], 11, 0, 0, 5, len, 0);
	CU_ASSERT_TRUE(pat_check(buf_at(&r), len, (uint32_t)len));
	CU_ASSERT_TRUE(guards_intact(&r));
	CU_ASSERT_TRUE(pp_proto_idle(net.e[0]));
	CU_ASSERT_TRUE(pp_proto_idle(net.e[1]));
	struct pp_stats ss;
	pp_proto_stats(net.e[0], &ss);
	pp_proto_stats(net.e[1], &st);
	uint64_t push = mode == PP_PROTO_PUSH_ALL    ? len
			: mode == PP_PROTO_PUSH_ZERO ? 0
			: len < 760		     ? len
						     : 760;
	if (ss.push_degraded)
		push = 0;
	CU_ASSERT_EQUAL(st.pulls_tx, push < len ? 1 : 0);
	CU_ASSERT_EQUAL(ss.pulls_served, push < len ? 1 : 0);
	CU_ASSERT_EQUAL(st.early_matches, late ? 0 : 1);
	CU_ASSERT_EQUAL(st.late_matches, late ? 1 : 0);
	CU_ASSERT_EQUAL(st.bytes_rx, len);
	CU_ASSERT_EQUAL(ss.retransmits, 0);
	CU_ASSERT_EQUAL(st.pushed_buf_bytes, 0);
	CU_ASSERT_EQUAL(st.pushed_buf_peak, late ? push : 0);
	for (int d = 0; d < PP_DROP_MAX; d++)
		CU_ASSERT_EQUAL(st.drops[d] + ss.drops[d], 0);
	CU_ASSERT_EQUAL(ss.msgs_tx, 1);
	CU_ASSERT_EQUAL(st.msgs_rx, 1);
	free(s.p);
	free(r.p);
	net_fini(&net);
}

static void test_modes_sizes(void)
{
	static const uint64_t sizes[] = {
	    0, 1, 79, 80, 81, 759, 760, 761, 1424, 1425, 1440, 1441, 65536, 16u << 20,
	};
	for (int mode = PP_PROTO_PUSH_PULL; mode <= PP_PROTO_PUSH_ZERO; mode++)
		for (int late = 0; late < 2; late++)
			for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
				one_message((enum pp_proto_mode)mode, late, sizes[i]);
}

static void test_wildcards_order(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 3, &conf), 0);
	enum { N = 6, LEN = 3000 };
	static uint8_t sb[N][LEN], rb[N][LEN];
	for (uint32_t m = 0; m < N; m++)
		pat_fill(sb[m], LEN, m);
	/* Posted: a specific source wins over an earlier-sent message of
	 * another source with the same tag. */
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], 2, 7, 0, rb[0], LEN, 100), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[1], 0, 7, sb[1], LEN, 1), 0);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[2], 0, 7, sb[0], LEN, 2), 0);
	net_run(&net, 1000000);
	expect_cpl(net.e[0], 100, 0, 2, 7, LEN, 0);
	CU_ASSERT_TRUE(pat_check(rb[0], LEN, 0));
	/* The unexpected message from rank 1 is taken by a wildcard receive. */
	CU_ASSERT_EQUAL(
	    pp_proto_recv(net.e[0], PP_PROTO_ANY, 0, PP_PROTO_IGNORE_ALL, rb[1], LEN, 101), 0);
	net_run(&net, 1000000);
	expect_cpl(net.e[0], 101, 0, 1, 7, LEN, 0);
	CU_ASSERT_TRUE(pat_check(rb[1], LEN, 1));
	/* Non-overtaking: three messages with one tag arrive in send order; a
	 * tag-specific receive picks the first of its tag. */
	CU_ASSERT_EQUAL(pp_proto_send(net.e[1], 0, 3, sb[2], LEN, 3), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[1], 0, 4, sb[3], LEN, 4), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[1], 0, 3, sb[4], LEN, 5), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[1], 0, 3, sb[5], LEN, 6), 0);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], 1, 4, 0, rb[3], LEN, 103), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], PP_PROTO_ANY, 3, 0, rb[2], LEN, 102), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], 1, 0, PP_PROTO_IGNORE_ALL, rb[4], LEN, 104), 0);
	CU_ASSERT_EQUAL(
	    pp_proto_recv(net.e[0], PP_PROTO_ANY, 0, PP_PROTO_IGNORE_ALL, rb[5], LEN, 105), 0);
	net_run(&net, 1000000);
	expect_cpl(net.e[0], 103, 0, 1, 4, LEN, 0);
	expect_cpl(net.e[0], 102, 0, 1, 3, LEN, 0);
	expect_cpl(net.e[0], 104, 0, 1, 3, LEN, 0);
	expect_cpl(net.e[0], 105, 0, 1, 3, LEN, 0);
	for (uint32_t m = 2; m < N; m++)
		CU_ASSERT_TRUE(pat_check(rb[m], LEN, m));
	/* Early receives with wildcards match in posting order. */
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], PP_PROTO_ANY, 9, 0, rb[0], LEN, 200), 0);
	CU_ASSERT_EQUAL(
	    pp_proto_recv(net.e[0], PP_PROTO_ANY, 0, PP_PROTO_IGNORE_ALL, rb[1], LEN, 201), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[2], 0, 9, sb[0], LEN, 7), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[2], 0, 9, sb[1], LEN, 8), 0);
	net_run(&net, 1000000);
	expect_cpl(net.e[0], 200, 0, 2, 9, LEN, 0);
	expect_cpl(net.e[0], 201, 0, 2, 9, LEN, 0);
	CU_ASSERT_TRUE(pat_check(rb[0], LEN, 0));
	CU_ASSERT_TRUE(pat_check(rb[1], LEN, 1));
	/* Ignore masks: a receive that ignores the low 31 bits (pp.h's
	 * PP_ANY_TAG) lets a tag with high bits set by (the library's own, -2
	 * sign-extended) and takes the one sent after it; only the exact tag
	 * takes the first. */
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], PP_PROTO_ANY, 0, 0x7fffffff, rb[2], LEN, 300), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[1], 0, (uint64_t)-2, sb[2], LEN, 9), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[1], 0, 5, sb[3], LEN, 10), 0);
	net_run(&net, 1000000);
	expect_cpl(net.e[0], 300, 0, 1, 5, LEN, 0);
	CU_ASSERT_TRUE(pat_check(rb[2], LEN, 3));
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], 1, (uint64_t)-2, 0, rb[3], LEN, 301), 0);
	net_run(&net, 1000000);
	expect_cpl(net.e[0], 301, 0, 1, (uint64_t)-2, LEN, 0);
	CU_ASSERT_TRUE(pat_check(rb[3], LEN, 2));
	/* 64-bit tags, matched under a mask as libfabric's: ignoring the low
	 * byte, 0x12345678_9abcde00 takes ..de77 and not ..df00, which the
	 * exact receive after it takes. */
	const uint64_t T = 0x123456789abcde00ull;
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], 1, T, 0xff, rb[4], LEN, 302), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], 1, T + 0x100, 0, rb[5], LEN, 303), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[1], 0, T + 0x100, sb[4], LEN, 11), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[1], 0, T + 0x77, sb[5], LEN, 12), 0);
	net_run(&net, 1000000);
	expect_cpl(net.e[0], 303, 0, 1, T + 0x100, LEN, 0);
	expect_cpl(net.e[0], 302, 0, 1, T + 0x77, LEN, 0);
	CU_ASSERT_TRUE(pat_check(rb[4], LEN, 5));
	CU_ASSERT_TRUE(pat_check(rb[5], LEN, 4));
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 0);
	int sends = 0;
	while (pp_proto_poll(net.e[1], &c) || pp_proto_poll(net.e[2], &c)) {
		CU_ASSERT_EQUAL(c.error, 0);
		sends++;
	}
	CU_ASSERT_EQUAL(sends, 12);
	net_fini(&net);
}

static void truncated(enum pp_proto_mode mode, int late, uint64_t len, uint64_t cap)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = mode;
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	struct buf s = buf_new(len), r = buf_new(cap);
	pat_fill(buf_at(&s), len, 9);
	if (!late)
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 1, 0, buf_at(&r), cap, 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 1, buf_at(&s), len, 2), 0);
	net_run(&net, 1000000);
	if (late)
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 1, 0, buf_at(&r), cap, 1), 0);
	net_run(&net, 1000000);
	expect_cpl(net.e[1], 1, 0, 0, 1, len, -EMSGSIZE);
	expect_cpl(net.e[0], 2, 1, 1, 1, len, 0);
	CU_ASSERT_TRUE(pat_check(buf_at(&r), cap, 9));
	CU_ASSERT_TRUE(guards_intact(&r));
	free(s.p);
	free(r.p);
	net_fini(&net);
}

static void test_truncation(void)
{
	for (int mode = PP_PROTO_PUSH_PULL; mode <= PP_PROTO_PUSH_ZERO; mode++)
		for (int late = 0; late < 2; late++) {
			truncated((enum pp_proto_mode)mode, late, 5000, 1000);
			truncated((enum pp_proto_mode)mode, late, 700, 50);
			truncated((enum pp_proto_mode)mode, late, 1, 0);
		}
}

/* Many late messages against a small pushed buffer. */
static void many_late(int credits, enum pp_proto_mode mode)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = mode;
	conf.credits = credits;
	conf.pushbuf_bytes = 16384;
	conf.rto_tries = 30;
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	enum { N = 64, LEN = 1000 };
	static uint8_t sb[N][LEN], rb[N][LEN];
	for (uint32_t m = 0; m < N; m++) {
		pat_fill(sb[m], LEN, m);
		CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, (int)m, sb[m], LEN, m), 0);
	}
	net_run(&net, 1000000); /* 1 ms: a few retransmission timeouts */
	struct pp_stats st, ss;
	pp_proto_stats(net.e[1], &st);
	pp_proto_stats(net.e[0], &ss);
	CU_ASSERT(st.pushed_buf_peak <= 16384);
	if (credits) {
		CU_ASSERT_EQUAL(st.drops[PP_DROP_NOBUF], 0);
		CU_ASSERT(ss.push_degraded > 0);
		CU_ASSERT_EQUAL(ss.retransmits, 0);
	} else {
		CU_ASSERT(st.drops[PP_DROP_NOBUF] > 0); /* the overflow */
		CU_ASSERT_EQUAL(ss.push_degraded, 0);
	}
	/* Receive in reverse tag order: every message comes out intact. */
	for (uint32_t m = N; m-- > 0;)
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, (int)m, 0, rb[m], LEN, m), 0);
	net_run(&net, 10000000000ull);
	unsigned seen[N] = {0};
	struct pp_proto_cpl rc;
	while (pp_proto_poll(net.e[1], &rc)) {
		CU_ASSERT_FATAL(rc.cookie < N);
		CU_ASSERT_EQUAL(rc.tag, (int)rc.cookie);
		CU_ASSERT_EQUAL(rc.error, 0);
		CU_ASSERT_EQUAL(rc.len, LEN);
		seen[rc.cookie]++;
	}
	for (uint32_t m = 0; m < N; m++)
		CU_ASSERT_EQUAL(seen[m], 1);
	for (uint32_t m = 0; m < N; m++) {
		CU_ASSERT_TRUE(pat_check(rb[m], LEN, m));
		struct pp_proto_cpl c;
		CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
		CU_ASSERT_EQUAL(c.error, 0);
	}
	pp_proto_stats(net.e[1], &st);
	pp_proto_stats(net.e[0], &ss);
	if (credits) {
		CU_ASSERT_EQUAL(st.drops[PP_DROP_NOBUF], 0);
	} else {
		CU_ASSERT(ss.retransmits > 0); /* recovered by go-back-N */
	}
	CU_ASSERT_TRUE(pp_proto_idle(net.e[0]));
	CU_ASSERT_TRUE(pp_proto_idle(net.e[1]));
	net_fini(&net);
}

static void test_credits(void)
{
	many_late(1, PP_PROTO_PUSH_ALL);
	many_late(1, PP_PROTO_PUSH_PULL);
	many_late(0, PP_PROTO_PUSH_ALL);
}

/* pp_proto_output_ref: large non-FIRST payloads come back by reference (the
 * headers in the buffer, the crc over the payload where it lies); headers
 * followed by that payload are a valid frame, and the message arrives
 * intact. The FIRST frame is always written whole. */
static void ref_message(enum pp_proto_mode mode)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = mode;
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	enum { LEN = 100000 };
	static uint8_t sb[LEN], rb[LEN], f[FRAME_CAP];
	pat_fill(sb, LEN, 4);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb, LEN, 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, LEN, 2), 0);
	unsigned refs = 0, whole = 0, first_whole = 0;
	for (int moved = 1; moved;) {
		moved = 0;
		struct pp_proto_ref ref;
		int n;
		while ((n = pp_proto_output_ref(net.e[0], f, sizeof(f), net.now, 1024, &ref)) > 0) {
			moved = 1;
			if (ref.len) {
				CU_ASSERT_EQUAL(n, PP_WIRE_MIN_FRAME);
				CU_ASSERT_FALSE(f[PP_ETH_HLEN + 1] & PP_WIRE_F_FIRST);
				CU_ASSERT_PTR_EQUAL(ref.msg, sb);
				CU_ASSERT_EQUAL(ref.msg_len, LEN);
				CU_ASSERT((const uint8_t *)ref.addr >= sb &&
					  (const uint8_t *)ref.addr + ref.len <= sb + LEN);
				memcpy(f + n, ref.addr, ref.len);
				n += (int)ref.len;
				refs++;
			} else {
				whole++;
				if (f[PP_ETH_HLEN + 1] & PP_WIRE_F_FIRST)
					first_whole++;
			}
			CU_ASSERT_EQUAL(pp_proto_input(net.e[1], f, (size_t)n, net.now), 0);
		}
		while ((n = pp_proto_output(net.e[1], f, sizeof(f), net.now)) > 0) {
			moved = 1;
			CU_ASSERT_EQUAL(pp_proto_input(net.e[0], f, (size_t)n, net.now), 0);
		}
		if (!moved && pp_proto_expiry(net.e[1]) != UINT64_MAX) {
			net.now = pp_proto_expiry(net.e[1]); /* the delayed ack */
			pp_proto_handle_expiry(net.e[1], net.now);
			moved = 1;
		}
	}
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_TRUE(pat_check(rb, LEN, 4));
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT(refs >= LEN / (1500 - PP_WIRE_HDR_LEN) - 2);
	CU_ASSERT_EQUAL(first_whole, 1);
	net_fini(&net);
}

static void test_output_ref(void)
{
	ref_message(PP_PROTO_PUSH_ALL);
	ref_message(PP_PROTO_PUSH_PULL);
}

static void test_errors(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct pp_proto *e = NULL;
	conf.nranks = 2;
	conf.rank = 2;
	CU_ASSERT_EQUAL(pp_proto_create(&e, &conf), -EINVAL);
	conf.rank = 0;
	conf.window = 48;
	CU_ASSERT_EQUAL(pp_proto_create(&e, &conf), -EINVAL);
	conf.window = 64;
	conf.mtu = 100;
	CU_ASSERT_EQUAL(pp_proto_create(&e, &conf), -EINVAL);
	conf.mtu = 1500;
	conf.max_msgs = 1;
	conf.copy_max = 0; /* the slot stays busy until acked */
	CU_ASSERT_EQUAL_FATAL(pp_proto_create(&e, &conf), 0);
	uint8_t mac[6] = {2, 0, 0, 0, 0, 1}, b[8] = {0}, f[64];
	CU_ASSERT_EQUAL(pp_proto_peer_add(e, 0, mac, 0), -EINVAL);
	CU_ASSERT_EQUAL(pp_proto_peer_add(e, 2, mac, 0), -EINVAL);
	CU_ASSERT_EQUAL(pp_proto_send(e, 1, 0, b, 8, 0), -EINVAL); /* peer not added */
	CU_ASSERT_EQUAL(pp_proto_peer_add(e, 1, mac, 0), 0);
	CU_ASSERT_EQUAL(pp_proto_send(e, 1, 0, NULL, 8, 0), -EINVAL);
	CU_ASSERT_EQUAL(pp_proto_recv(e, 2, 0, 0, b, 8, 0), -EINVAL);
	CU_ASSERT_EQUAL(pp_proto_recv(e, -2, 0, 0, b, 8, 0), -EINVAL);
	CU_ASSERT_EQUAL(pp_proto_send(e, 1, 0, b, 8, 0), 0);
	CU_ASSERT_EQUAL(pp_proto_send(e, 1, 0, b, 8, 0), -ENOMEM);
	CU_ASSERT_EQUAL(pp_proto_output(e, f, sizeof(f), 0), -ENOSPC);
	pp_proto_destroy(e);
}

/* Frames carry both incarnations; one from, or for, another life of a rank
 * is dropped as STALE and changes nothing. */
static void test_incarnations(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	static uint8_t pl[100], rb[100];
	pat_fill(pl, sizeof(pl), 3);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 7, 0, rb, sizeof(rb), 1), 0);
	struct pp_wire_hdr h = msg0_frame(PP_WIRE_PUSH, 0, 0, 0, sizeof(pl), sizeof(pl));
	h.flags = PP_WIRE_F_FIRST | PP_WIRE_F_LAST;
	uint8_t f[256];
	struct pp_stats st;
	struct pp_proto_cpl c;
	/* From a later life of rank 0 than the one added. */
	h.src_inc = net_inc(0) + 1;
	size_t n = build_frame(f, sizeof(f), &h, pl);
	CU_ASSERT_EQUAL(pp_proto_input(net.e[1], f, n, net.now), -EPROTO);
	/* For an earlier life of rank 1. */
	h.src_inc = net_inc(0);
	h.dst_inc = net_inc(1) - 1;
	n = build_frame(f, sizeof(f), &h, pl);
	CU_ASSERT_EQUAL(pp_proto_input(net.e[1], f, n, net.now), -EPROTO);
	pp_proto_stats(net.e[1], &st);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_STALE], 2);
	CU_ASSERT_EQUAL(st.early_matches, 0);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 0);
	/* The right pair of incarnations is taken. */
	h.dst_inc = net_inc(1);
	n = build_frame(f, sizeof(f), &h, pl);
	CU_ASSERT_EQUAL(pp_proto_input(net.e[1], f, n, net.now), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT(pat_check(rb, sizeof(pl), 3));
	/* What an engine sends names both. */
	int len = pp_proto_output(net.e[1], net.frame, sizeof(net.frame), net.now + 1000000);
	CU_ASSERT_FATAL(len > 0);
	struct pp_wire_peek pk;
	CU_ASSERT_EQUAL_FATAL(pp_wire_peek(net.frame, (size_t)len, &pk), 0);
	CU_ASSERT_EQUAL(pk.src_inc, net_inc(1));
	CU_ASSERT_EQUAL(pk.dst_inc, net_inc(0));
	net_fini(&net);
}

/* A posted receive taken back completes -ECANCELED with its cookie; what
 * was matched (or never posted) cannot be, and the next message goes to
 * the receive behind the cancelled one. */
static void test_cancel(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	static uint8_t sb[3000], r1[3000], r2[3000];
	pat_fill(sb, sizeof(sb), 9);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(
	    pp_proto_recv(net.e[1], PP_PROTO_ANY, 7, PP_PROTO_IGNORE_ALL, r1, sizeof(r1), 11), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 7, 0, r2, sizeof(r2), 12), 0);
	CU_ASSERT_EQUAL(pp_proto_cancel(net.e[1], 99), -ENOENT); /* never posted */
	CU_ASSERT_EQUAL(pp_proto_cancel(net.e[1], 11), 0);
	CU_ASSERT_EQUAL(pp_proto_cancel(net.e[1], 11), -ENOENT); /* once */
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 11);
	CU_ASSERT_EQUAL(c.error, -ECANCELED);
	CU_ASSERT_EQUAL(c.is_send, 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 7, sb, sizeof(sb), 21), 0);
	net_run(&net, 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 12); /* the one behind it */
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT(pat_check(r2, sizeof(r2), 9));
	CU_ASSERT_EQUAL(pp_proto_cancel(net.e[1], 12), -ENOENT); /* done */
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 0);
	CU_ASSERT(pp_proto_idle(net.e[1]) || pp_proto_poll(net.e[0], &c) >= 0);
	net_fini(&net);
}

/* Receive one completion of e and check its immediate data. */
static void expect_data(struct pp_proto *e, uint64_t cookie, int has_data, uint32_t data)
{
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(e, &c), 1);
	CU_ASSERT_EQUAL(c.cookie, cookie);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_EQUAL(c.has_data, has_data);
	CU_ASSERT_EQUAL(c.data, data);
}

/* Immediate data (pp_proto_send_data) reaches the receive's completion and
 * a probe, in every mode, early and late, pushed whole and pulled; a plain
 * send after reports none, nor does any send's own completion. Then the
 * same between node-mates (frames in the local form, the rest pulled). */
static void test_send_data(void)
{
	static const uint64_t sizes[] = {0, 100, 3000, 100000};
	for (int mode = PP_PROTO_PUSH_PULL; mode <= PP_PROTO_PUSH_ZERO; mode++)
		for (int late = 0; late < 2; late++)
			for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
				uint64_t len = sizes[i];
				uint32_t data =
				    i ? 0xDA7A0000u | (uint32_t)(mode << 8 | late << 4 | i)
				      : 0; /* 0 is data too */
				struct pp_proto_conf conf;
				pp_proto_conf_default(&conf);
				conf.mode = mode;
				struct net net;
				CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
				struct buf s = buf_new(len), r = buf_new(len);
				pat_fill(buf_at(&s), len, (uint32_t)len);
				if (!late)
					CU_ASSERT_EQUAL(
					    pp_proto_recv(net.e[1], 0, 5, 0, buf_at(&r), len, 11),
					    0);
				CU_ASSERT_EQUAL(
				    pp_proto_send_data(net.e[0], 1, 5, buf_at(&s), len, data, 22),
				    0);
				net_run(&net, 1000000000);
				if (late) {
					struct pp_proto_cpl c;
					CU_ASSERT_EQUAL_FATAL(
					    pp_proto_probe(net.e[1], PP_PROTO_ANY, 5, 0, &c), 1);
					CU_ASSERT_EQUAL(c.has_data, 1);
					CU_ASSERT_EQUAL(c.data, data);
					CU_ASSERT_EQUAL(c.len, len);
					CU_ASSERT_EQUAL(
					    pp_proto_recv(net.e[1], 0, 5, 0, buf_at(&r), len, 11),
					    0);
					net_run(&net, 1000000000);
				}
				expect_data(net.e[0], 22, 0, 0);
				expect_data(net.e[1], 11, 1, data);
				CU_ASSERT_TRUE(pat_check(buf_at(&r), len, (uint32_t)len));
				/* A plain send after carries none. */
				CU_ASSERT_EQUAL(
				    pp_proto_recv(net.e[1], 0, 6, 0, buf_at(&r), len, 12), 0);
				CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 6, buf_at(&s), len, 23),
						0);
				net_run(&net, 1000000000);
				expect_data(net.e[0], 23, 0, 0);
				expect_data(net.e[1], 12, 0, 0);
				free(s.p);
				free(r.p);
				net_fini(&net);
			}
	/* Node-mates: pushed (16 B), and 64 KiB whose rest is pulled. */
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct pp_proto *e[2];
	CU_ASSERT_EQUAL_FATAL(local_pair(e, &conf, 16, 744), 0);
	static uint8_t sb[65536], rb[65536], f[2048];
	pat_fill(sb, sizeof(sb), 3);
	uint64_t now = 1;
	for (int late = 0; late < 2; late++) {
		memset(rb, 0, sizeof(rb));
		if (!late)
			CU_ASSERT_EQUAL(pp_proto_recv(e[1], 0, 9, 0, rb, sizeof(rb), 31), 0);
		CU_ASSERT_EQUAL(pp_proto_send_data(e[0], 1, 9, sb, sizeof(sb), 0xBEEF + late, 41),
				0);
		CU_ASSERT(local_pump(e, f, sizeof(f), &now, 1) >= 0);
		if (late) {
			CU_ASSERT_EQUAL(pp_proto_recv(e[1], 0, 9, 0, rb, sizeof(rb), 31), 0);
			CU_ASSERT(local_pump(e, f, sizeof(f), &now, 1) >= 0);
		}
		expect_data(e[0], 41, 0, 0);
		expect_data(e[1], 31, 1, 0xBEEF + (uint32_t)late);
		CU_ASSERT(pat_check(rb, sizeof(rb), 3));
	}
	pp_proto_destroy(e[0]);
	pp_proto_destroy(e[1]);
}

/* Deep queues (MPI codes post thousands of receives): 64 K receives with
 * distinct tags are posted, one more is refused with -ENOMEM, and messages
 * sent in the reverse order each take their own; then 32 K arrive before
 * their receives (what the pushed buffer holds: the credit field counts 64 K
 * cells at most), which come in the reverse order too. Every byte checked. */
#define DEEP (64u * 1024)
static void test_deep_queues(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.max_msgs = 1024;
	conf.max_recvs = DEEP;
	conf.pushbuf_bytes = 64u << 20; /* room for the unexpected pass's pushes */
	struct net net;
	CU_ASSERT_FATAL(net_init(&net, 2, &conf) == 0);
	static uint32_t got[DEEP];
	uint64_t dummy;
	for (uint32_t i = 0; i < DEEP; i++)
		CU_ASSERT_FATAL(pp_proto_recv(net.e[1], 0, i, 0, &got[i], 4, i) == 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, DEEP, 0, &dummy, 4, DEEP), -ENOMEM);
	for (int pass = 0; pass < 2; pass++) {
		const uint32_t n = pass ? DEEP / 2 : DEEP;
		memset(got, 0, sizeof(got));
		uint32_t sent = 0, done = 0, bad = 0;
		static uint32_t val[DEEP];
		for (uint32_t i = 0; i < n; i++)
			val[i] = i * 2654435761u;
		while (sent < n || done < n) {
			/* Sends in windows of the send pool, newest tag first. */
			while (sent < n) {
				uint32_t t = n - 1 - sent;
				if (pp_proto_send(net.e[0], 1, t, &val[t], 4, t))
					break;
				sent++;
			}
			net_run(&net, 1000000);
			struct pp_proto_cpl c;
			while (pp_proto_poll(net.e[0], &c) == 1)
				bad += c.error != 0;
			while (pp_proto_poll(net.e[1], &c) == 1) {
				bad += c.error != 0 || c.len != 4 || c.tag != c.cookie;
				done++;
			}
			if (pass && sent == n && done == 0) {
				/* Every message waits unexpected: post in reverse. */
				struct pp_proto_cpl p0, p1;
				CU_ASSERT(pp_proto_probe(net.e[1], 0, 0, 0, &p0) == 1 &&
					  pp_proto_probe(net.e[1], 0, n - 1, 0, &p1) == 1);
				for (uint32_t i = n; i-- > 0;)
					bad += pp_proto_recv(net.e[1], 0, i, 0, &got[i], 4, i) != 0;
			}
		}
		CU_ASSERT_EQUAL(bad, 0);
		for (uint32_t i = 0; i < n; i++)
			bad += got[i] != val[i];
		CU_ASSERT_EQUAL(bad, 0);
	}
	net_fini(&net);
}

/* PP_PROTO_SEND_NOW: a send done in the call (an eager copy) returns 1 and
 * queues no completion; without the flag, or for a send that waits for its
 * acks, it returns 0 and reports through poll. Every byte arrives either way. */
static void test_send_now(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct net net;
	CU_ASSERT_FATAL(net_init(&net, 2, &conf) == 0);
	static uint8_t a[64], b[64], big[64 << 10], got[3][64 << 10];
	pat_fill(a, sizeof(a), 1);
	pat_fill(b, sizeof(b), 2);
	pat_fill(big, sizeof(big), 3);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 5, 0, got[i], sizeof(got[i]), 10 + i),
				0);
	CU_ASSERT_EQUAL(pp_proto_send_copy(net.e[0], 1, 5, a, sizeof(a), 0, 0, 1), 0);
	CU_ASSERT_EQUAL(pp_proto_sendf(net.e[0], 1, 5, b, sizeof(b), 0,
				       PP_PROTO_SEND_COPY | PP_PROTO_SEND_NOW, 2),
			1);
	memset(b, 0, sizeof(b)); /* copied: the buffer is the caller's again */
	CU_ASSERT_EQUAL(pp_proto_sendf(net.e[0], 1, 5, big, sizeof(big), 0, PP_PROTO_SEND_NOW, 3),
			0); /* waits for its acks */
	net_run(&net, 1000000000);
	struct pp_proto_cpl c;
	uint64_t seen = 0;
	while (pp_proto_poll(net.e[0], &c) == 1) {
		CU_ASSERT_EQUAL(c.error, 0);
		seen |= 1u << c.cookie;
	}
	CU_ASSERT_EQUAL(seen, (1u << 1) | (1u << 3)); /* 2 was reported by its return */
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[1], &c), 1);
		CU_ASSERT_EQUAL(c.cookie, 10 + i);
	}
	CU_ASSERT(pat_check(got[0], sizeof(a), 1) && pat_check(got[1], sizeof(a), 2) &&
		  pat_check(got[2], sizeof(big), 3));
	CU_ASSERT_TRUE(pp_proto_idle(net.e[0]));
	net_fini(&net);
}

/* Receive records are reused: one that served a receive ignoring every tag
 * bit (a wildcard) and then holds an unexpected message is filed by that
 * message's own tag, so a receive naming the tag finds it. Twenty of each,
 * past PP_TAGQ_LIST_MAX, so the unexpected queue is filed in buckets. */
static void test_reused_records(void)
{
	enum { N = 20 };
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct net net;
	CU_ASSERT_FATAL(net_init(&net, 2, &conf) == 0);
	uint32_t val[N], got[N];
	struct pp_proto_cpl c;
	for (uint32_t i = 0; i < N; i++) {
		val[i] = 0x5EED0000u + i;
		CU_ASSERT_FATAL(pp_proto_recv(net.e[1], 0, 0, 0xFFFFFFFFu, &got[i], 4, i) == 0);
		CU_ASSERT_FATAL(pp_proto_send(net.e[0], 1, 1000 + i, &val[i], 4, i) == 0);
	}
	net_run(&net, 1000000000);
	uint32_t done = 0;
	while (pp_proto_poll(net.e[1], &c) == 1)
		done += c.error == 0 && c.tag == 1000 + c.cookie;
	CU_ASSERT_EQUAL(done, N);
	while (pp_proto_poll(net.e[0], &c) == 1)
		;
	/* Now unexpected: each takes a record a wildcard receive left. */
	for (uint32_t i = 0; i < N; i++)
		CU_ASSERT_FATAL(pp_proto_send(net.e[0], 1, 100 + i, &val[i], 4, i) == 0);
	net_run(&net, 1000000000);
	struct pp_proto_cpl p;
	CU_ASSERT_EQUAL(pp_proto_probe(net.e[1], 0, 100 + N - 1, 0, &p), 1);
	memset(got, 0, sizeof(got));
	for (uint32_t i = N; i-- > 0;)
		CU_ASSERT_FATAL(pp_proto_recv(net.e[1], 0, 100 + i, 0, &got[i], 4, 100 + i) == 0);
	net_run(&net, 1000000000);
	done = 0;
	while (pp_proto_poll(net.e[1], &c) == 1)
		done += c.error == 0 && c.tag == c.cookie && got[c.tag - 100] == val[c.tag - 100];
	CU_ASSERT_EQUAL(done, N);
	net_fini(&net);
}

/* An inject (pp_proto_send_copy): a message longer than the pushes, whose
 * buffer is overwritten as soon as the call returns, arrives as it was when
 * sent, and the send completes before any frame moved; longer than copy_max
 * it is refused. */
static void test_send_copy(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.copy_max = 4096;
	struct net net;
	CU_ASSERT_FATAL(net_init(&net, 2, &conf) == 0);
	static uint8_t buf[4096], got[4096];
	pat_fill(buf, sizeof(buf), 9);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 5, 0, got, sizeof(got), 77), 0);
	CU_ASSERT_EQUAL(pp_proto_send_copy(net.e[0], 1, 5, buf, 4096, 1, 0xabcd, 66), 0);
	memset(buf, 0xEE, sizeof(buf)); /* the caller's buffer is free at once */
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 66);
	CU_ASSERT_EQUAL(c.error, 0);
	net_run(&net, 100000000);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 77);
	CU_ASSERT_EQUAL(c.len, 4096);
	CU_ASSERT(c.has_data && c.data == 0xabcd);
	CU_ASSERT(pat_check(got, sizeof(got), 9));
	CU_ASSERT_EQUAL(pp_proto_send_copy(net.e[0], 1, 5, buf, 4097, 0, 0, 1), -EINVAL);
	net_fini(&net);
}

/* The eager bound to a peer across the network is copy_max (copy_max_local
 * is a node-mate's): a send pushed whole completes at once up to it, and a
 * longer one when acked. */
static void test_eager_bound(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = PP_PROTO_PUSH_ALL;
	conf.copy_max = 32768;
	conf.copy_max_local = 8192;
	struct net net;
	CU_ASSERT_FATAL(net_init(&net, 2, &conf) == 0);
	static uint8_t buf[32769], got[32769];
	const uint64_t sz[] = {8193, 32768, 32769};
	for (size_t k = 0; k < PP_ARRAY_SIZE(sz); k++) {
		struct pp_proto_cpl c;
		pat_fill(buf, sz[k], (unsigned)k);
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 5, 0, got, sz[k], 77), 0);
		CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 5, buf, sz[k], 66), 0);
		int at_once = pp_proto_poll(net.e[0], &c) == 1;
		CU_ASSERT_EQUAL(at_once, sz[k] <= 32768);
		if (at_once)
			memset(buf, 0xEE, sz[k]); /* the caller's buffer is free */
		net_run(&net, 100000000);
		if (!at_once)
			CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
		CU_ASSERT_EQUAL(c.cookie, 66);
		CU_ASSERT_EQUAL(c.error, 0);
		CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[1], &c), 1);
		CU_ASSERT_EQUAL(c.len, sz[k]);
		CU_ASSERT(pat_check(got, sz[k], (unsigned)k));
	}
	net_fini(&net);
}

static CU_TestInfo tests[] = {
    {"modes x early/late x sizes", test_modes_sizes},
    {"64 K receives posted, or unexpected, each matched", test_deep_queues},
    {"an inject is copied at once, whatever is pushed", test_send_copy},
    {"eager up to copy_max across the network", test_eager_bound},
    {"a reused record holds an unexpected message under its own tag", test_reused_records},
    {"a send done at once with SEND_NOW: 1 returned, no completion", test_send_now},
    {"wildcards and order", test_wildcards_order},
    {"payloads by reference", test_output_ref},
    {"truncation", test_truncation},
    {"credits on and off", test_credits},
    {"argument errors", test_errors},
    {"incarnations", test_incarnations},
    {"cancel a posted receive", test_cancel},
    {"immediate data: modes, early/late, probe, node-mates", test_send_data},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"proto_engine", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
