/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto/engine placement by the layer below: the PULL of a receive from a
 * remote peer describes its buffer through place_post; the test, playing
 * the node daemon, writes each DATA payload straight into that buffer and
 * hands the engine the frame's headers alone (pp_proto_input_placed): in
 * order, duplicated, out of order, on an extra stream, for a message that
 * is not matched, and a receive that ends by peer loss. Bytes, completions,
 * drops and the take-back (place_cancel before completion) are checked.
 */
#include <errno.h>
#include <string.h>

#include "cu_main.h"
#include "test_proto_harness.h"

#define LEN  4000u		       /* message: 80 + 680 pushed, 3240 pulled in 3 DATA frames */
#define MAXP (1500u - PP_WIRE_HDR_LEN) /* payload per frame at MTU 1500 */
#define XS   3			       /* a pull handler's stream */

static uint8_t sbuf[LEN], rbuf[LEN];

/* What the hooks saw. */
static struct {
	unsigned posts, cancels; /* calls */
	uint32_t src, msg_id;	 /* last post */
	uint32_t src_inc;	 /* ... its sender's incarnation */
	void *buf;		 /* ... its buffer */
	uint64_t len, from;	 /* ... length and first offset */
	int held;		 /* a description is held now */
	unsigned cpl_at_cancel;	 /* completions polled when cancel ran */
} hk;
static unsigned polled;

static int h_post(void *arg, uint32_t src, uint32_t src_inc, uint32_t msg_id, void *buf,
		  uint64_t len, uint64_t from_off)
{
	(void)arg;
	hk.posts++;
	hk.src = src;
	hk.src_inc = src_inc;
	hk.msg_id = msg_id;
	hk.buf = buf;
	hk.len = len;
	hk.from = from_off;
	hk.held = 1;
	return 0;
}

static void h_cancel(void *arg, uint32_t src, uint32_t msg_id)
{
	(void)arg;
	CU_ASSERT_EQUAL(src, hk.src);
	CU_ASSERT_EQUAL(msg_id, hk.msg_id);
	hk.cancels++;
	hk.held = 0;
	hk.cpl_at_cancel = polled;
}

struct rig {
	struct pp_proto *e; /* the receiver, rank 1 */
	uint64_t now;	    /* virtual time */
	uint8_t f[FRAME_CAP];
	unsigned pulls, nacks; /* frames of those types it sent */
};

static void rig_init(struct rig *g)
{
	struct pp_proto_conf c;
	pp_proto_conf_default(&c);
	c.rank = 1;
	c.nranks = 2;
	c.job = 0x5eed;
	c.inc = net_inc(1);
	c.hooks.place_post = h_post;
	c.hooks.place_cancel = h_cancel;
	net_mac(1, c.mac);
	memset(g, 0, sizeof(*g));
	memset(&hk, 0, sizeof(hk));
	polled = 0;
	g->now = 1000;
	CU_ASSERT_EQUAL_FATAL(pp_proto_create(&g->e, &c), 0);
	uint8_t mac[6];
	net_mac(0, mac);
	CU_ASSERT_EQUAL_FATAL(pp_proto_peer_add(g->e, 0, mac, net_inc(0)), 0);
	pat_fill(sbuf, LEN, 9);
	memset(rbuf, 0, sizeof(rbuf));
}

static void drain(struct rig *g)
{
	g->now += 50000;
	pp_proto_handle_expiry(g->e, g->now);
	int len;
	while ((len = pp_proto_output(g->e, g->f, sizeof(g->f), g->now)) > 0) {
		struct pp_wire_check chk = {0x5eed, 0, 2, 9000, net_inc(0)};
		const uint8_t *pl;
		enum pp_drop_reason why;
		struct pp_wire_hdr h;
		CU_ASSERT_EQUAL_FATAL(pp_wire_decode(g->f, (size_t)len, &chk, &h, &pl, &why), 0);
		g->pulls += h.type == PP_WIRE_PULL;
		g->nacks += h.type == PP_WIRE_NACK;
	}
}

static struct pp_wire_hdr frame(uint8_t type, uint16_t stream, uint32_t seq, uint64_t off,
				uint32_t n)
{
	return msg0_frame(type, stream, seq, off, n, LEN);
}

static int inject(struct rig *g, const struct pp_wire_hdr *h)
{
	uint8_t f[FRAME_CAP];
	size_t n = build_frame(f, sizeof(f), h, h->payload_len ? sbuf + h->offset : NULL);
	CU_ASSERT_FATAL(n > 0);
	return pp_proto_input(g->e, f, n, g->now);
}

/* As the daemon does: write the payload where the description says (when
 * it fits), then hand the headers alone to the engine. */
static int inject_placed(struct rig *g, const struct pp_wire_hdr *h)
{
	uint8_t f[FRAME_CAP];
	size_t n = build_frame(f, sizeof(f), h, sbuf + h->offset);
	CU_ASSERT_FATAL(n > PP_WIRE_MIN_FRAME);
	if (hk.held && h->offset >= hk.from && h->offset + h->payload_len <= hk.len)
		memcpy((uint8_t *)hk.buf + h->offset, f + PP_WIRE_MIN_FRAME, h->payload_len);
	return pp_proto_input_placed(g->e, f, PP_WIRE_MIN_FRAME, g->now);
}

/* DATA frame k (0..2) of the pulled part, on stream s with seq. */
static struct pp_wire_hdr data(unsigned k, uint16_t stream, uint32_t seq)
{
	uint64_t off = 760 + (uint64_t)k * MAXP;
	uint32_t n = (uint32_t)(LEN - off < MAXP ? LEN - off : MAXP);
	return frame(PP_WIRE_DATA, stream, seq, off, n);
}

/* Post the receive, push both parts on stream 0: the PULL describes rbuf. */
static void start(struct rig *g)
{
	CU_ASSERT_EQUAL(pp_proto_recv(g->e, 0, 7, 0, rbuf, LEN, 11), 0);
	struct pp_wire_hdr h = frame(PP_WIRE_PUSH, 0, 0, 0, 80);
	CU_ASSERT_EQUAL(inject(g, &h), 0);
	h = frame(PP_WIRE_PUSH, 0, 1, 80, 680);
	CU_ASSERT_EQUAL(inject(g, &h), 0);
	drain(g);
	CU_ASSERT_EQUAL(g->pulls, 1);
	CU_ASSERT_EQUAL(hk.posts, 1);
	CU_ASSERT_EQUAL(hk.src, 0);
	CU_ASSERT_EQUAL(hk.src_inc, net_inc(0)); /* only the sender's frames of now are placed */
	CU_ASSERT_EQUAL(hk.msg_id, 0);
	CU_ASSERT_PTR_EQUAL(hk.buf, rbuf);
	CU_ASSERT_EQUAL(hk.len, LEN);
	CU_ASSERT_EQUAL(hk.from, 760);
}

static int poll1(struct rig *g, struct pp_proto_cpl *c)
{
	int n = pp_proto_poll(g->e, c);
	polled += (unsigned)n;
	return n;
}

/* Completed once, exact, and the description was taken back before. */
static void check_done(struct rig *g)
{
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(hk.cancels, 1);
	CU_ASSERT_EQUAL(hk.cpl_at_cancel, 0);
	CU_ASSERT_EQUAL_FATAL(poll1(g, &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 11);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_EQUAL(c.len, LEN);
	CU_ASSERT(pat_check(rbuf, LEN, 9));
	CU_ASSERT_EQUAL(poll1(g, &c), 0);
	struct pp_stats st;
	pp_proto_stats(g->e, &st);
	CU_ASSERT_EQUAL(st.bytes_rx, LEN);
	CU_ASSERT_EQUAL(st.msgs_rx, 1);
}

static void test_in_order(void)
{
	struct rig g;
	rig_init(&g);
	start(&g);
	for (unsigned k = 0; k < 3; k++) {
		struct pp_wire_hdr h = data(k, 0, 2 + k);
		CU_ASSERT_EQUAL(hk.cancels, 0);
		CU_ASSERT_EQUAL(inject_placed(&g, &h), 0);
	}
	check_done(&g);
	pp_proto_destroy(g.e);
	CU_ASSERT_EQUAL(hk.cancels, 1); /* not taken back twice */
}

static void test_duplicate(void)
{
	struct rig g;
	rig_init(&g);
	start(&g);
	struct pp_wire_hdr h = data(0, 0, 2);
	CU_ASSERT_EQUAL(inject_placed(&g, &h), 0);
	CU_ASSERT_EQUAL(inject_placed(&g, &h), -EPROTO);
	struct pp_stats st;
	pp_proto_stats(g.e, &st);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_DUP], 1);
	for (unsigned k = 1; k < 3; k++) {
		h = data(k, 0, 2 + k);
		CU_ASSERT_EQUAL(inject_placed(&g, &h), 0);
	}
	check_done(&g);
	/* A stale duplicate after completion: the description is gone, so the
	 * daemon would deliver it whole; the engine drops it as a duplicate. */
	h = data(2, 0, 4);
	CU_ASSERT_EQUAL(inject(&g, &h), -EPROTO);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(poll1(&g, &c), 0);
	pp_proto_destroy(g.e);
}

static void test_out_of_order(void)
{
	struct rig g;
	rig_init(&g);
	start(&g);
	struct pp_wire_hdr h = data(1, 0, 3); /* frame 0 lost */
	CU_ASSERT_EQUAL(inject_placed(&g, &h), -EPROTO);
	h = data(2, 0, 4);
	CU_ASSERT_EQUAL(inject_placed(&g, &h), -EPROTO);
	drain(&g);
	CU_ASSERT_EQUAL(g.nacks, 1);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(poll1(&g, &c), 0);
	for (unsigned k = 0; k < 3; k++) { /* go-back-N resends all three */
		h = data(k, 0, 2 + k);
		CU_ASSERT_EQUAL(inject_placed(&g, &h), 0);
	}
	check_done(&g);
	pp_proto_destroy(g.e);
}

static void test_extra_stream(void)
{
	struct rig g;
	rig_init(&g);
	start(&g);
	struct pp_wire_hdr h = data(0, XS, 0);
	CU_ASSERT_EQUAL(inject_placed(&g, &h), 0);
	CU_ASSERT_EQUAL(inject_placed(&g, &h), -EPROTO); /* duplicate on XS */
	h = data(2, XS, 2);
	CU_ASSERT_EQUAL(inject_placed(&g, &h), -EPROTO); /* past a gap on XS */
	h = data(1, XS, 1);
	CU_ASSERT_EQUAL(inject_placed(&g, &h), 0);
	h = data(2, XS, 2);
	CU_ASSERT_EQUAL(inject_placed(&g, &h), 0);
	check_done(&g);
	pp_proto_destroy(g.e);
}

/* Headers of a placed frame for a message that no receive matched: not
 * taken (nothing was placed for it), so it comes again whole. */
static void test_unmatched(void)
{
	struct rig g;
	rig_init(&g);
	struct pp_wire_hdr h = frame(PP_WIRE_PUSH, 0, 0, 0, 80);
	CU_ASSERT_EQUAL(inject(&g, &h), 0); /* unexpected */
	h = frame(PP_WIRE_PUSH, 0, 1, 80, 680);
	CU_ASSERT_EQUAL(inject(&g, &h), 0);
	h = data(0, 0, 2);
	CU_ASSERT_EQUAL(
	    pp_proto_input_placed(g.e, (uint8_t[PP_WIRE_MIN_FRAME]){0}, PP_WIRE_MIN_FRAME, g.now),
	    -EPROTO); /* not even a frame */
	uint8_t f[FRAME_CAP];
	size_t n = build_frame(f, sizeof(f), &h, sbuf + h.offset);
	CU_ASSERT_EQUAL(pp_proto_input_placed(g.e, f, n, g.now), -EPROTO); /* whole: no */
	CU_ASSERT_EQUAL(pp_proto_input_placed(g.e, f, PP_WIRE_MIN_FRAME, g.now), -EPROTO);
	struct pp_stats st;
	pp_proto_stats(g.e, &st);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_STATE], 1);
	CU_ASSERT_EQUAL(st.bytes_rx, 760);
	/* Not taken in sequence: the same frame whole is then taken at that seq
	 * (as DATA for an unmatched message always is: accepted, fits nothing),
	 * not dropped as a duplicate. */
	CU_ASSERT_EQUAL(inject(&g, &h), 0);
	pp_proto_stats(g.e, &st);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_DUP], 0);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_STATE], 2);
	CU_ASSERT_EQUAL(hk.posts, 0); /* an unmatched message describes no buffer */
	pp_proto_destroy(g.e);
}

/* A receive that ends without its bytes (peer lost) gives the description
 * back before it completes with an error. */
static void test_peer_lost(void)
{
	struct rig g;
	rig_init(&g);
	start(&g);
	struct pp_wire_hdr h = data(0, 0, 2);
	CU_ASSERT_EQUAL(inject_placed(&g, &h), 0);
	pp_proto_peer_fail(g.e, 0);
	CU_ASSERT_EQUAL(hk.cancels, 1);
	CU_ASSERT_EQUAL(hk.cpl_at_cancel, 0);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL_FATAL(poll1(&g, &c), 1);
	CU_ASSERT_EQUAL(c.error, -ECONNRESET);
	pp_proto_destroy(g.e);
	CU_ASSERT_EQUAL(hk.cancels, 1);
}

/* Destroying the engine with a receive in flight takes it back too. */
static void test_destroy(void)
{
	struct rig g;
	rig_init(&g);
	start(&g);
	CU_ASSERT_EQUAL(hk.cancels, 0);
	pp_proto_destroy(g.e);
	CU_ASSERT_EQUAL(hk.cancels, 1);
}

static void test_conf(void)
{
	struct pp_proto_conf c;
	struct pp_proto *e;
	pp_proto_conf_default(&c);
	c.rank = 0;
	c.nranks = 2;
	c.hooks.place_post = h_post;
	CU_ASSERT_EQUAL(pp_proto_create(&e, &c), -EINVAL);
}

static CU_TestInfo tests[] = {
    {"placed DATA in order", test_in_order},
    {"placed duplicate", test_duplicate},
    {"placed out of order", test_out_of_order},
    {"placed on an extra stream", test_extra_stream},
    {"placed headers for an unmatched message", test_unmatched},
    {"peer lost takes the description back", test_peer_lost},
    {"destroy takes the description back", test_destroy},
    {"only one place hook", test_conf},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"proto_place", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
