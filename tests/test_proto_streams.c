/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto/engine extra streams: DATA of one message arriving on a pull
 * handler's stream (3 here) in order, out of order, duplicated, lost and
 * resent. The sender is played by the test (frames built by hand, as a
 * daemon's handler would send them); the receiver is a real engine whose
 * frames are decoded and checked: bytes exact, acks on the right stream,
 * stream 0's sequence unaffected, and acks for another stream never taken
 * as acks of our own.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cu_main.h"
#include "test_proto_harness.h"

#define LEN  4000u		       /* message: 80 + 680 pushed, 3240 pulled in 3 DATA frames */
#define MAXP (1500u - PP_WIRE_HDR_LEN) /* payload per frame at MTU 1500 */
#define XS   3			       /* the handler's stream */

static uint8_t sbuf[LEN], rbuf[LEN];

/* Frames the receiver sent, decoded. */
struct seen {
	struct pp_wire_hdr h[64]; /* headers in order */
	unsigned n;		  /* how many */
};

struct rig {
	struct pp_proto *e; /* the receiver, rank 1 */
	uint64_t now;	    /* virtual time */
	struct seen out;    /* what it sent */
	uint8_t f[FRAME_CAP];
};

static void rig_init(struct rig *g, uint32_t copy_max)
{
	struct pp_proto_conf c;
	pp_proto_conf_default(&c);
	c.rank = 1;
	c.nranks = 2;
	c.job = 0x5eed;
	c.inc = net_inc(1);
	c.copy_max = copy_max;
	net_mac(1, c.mac);
	memset(g, 0, sizeof(*g));
	g->now = 1000;
	CU_ASSERT_EQUAL_FATAL(pp_proto_create(&g->e, &c), 0);
	uint8_t mac[6];
	net_mac(0, mac);
	CU_ASSERT_EQUAL_FATAL(pp_proto_peer_add(g->e, 0, mac, net_inc(0)), 0);
	pat_fill(sbuf, LEN, 9);
	memset(rbuf, 0, sizeof(rbuf));
}

/* Collect what the receiver sends after adv ns. */
static void drain_at(struct rig *g, uint64_t adv)
{
	g->now += adv;
	pp_proto_handle_expiry(g->e, g->now);
	int len;
	while ((len = pp_proto_output(g->e, g->f, sizeof(g->f), g->now)) > 0) {
		struct pp_wire_check chk = {0x5eed, 0, 2, 9000, net_inc(0)};
		const uint8_t *pl;
		enum pp_drop_reason why;
		struct pp_wire_hdr h;
		CU_ASSERT_EQUAL_FATAL(pp_wire_decode(g->f, (size_t)len, &chk, &h, &pl, &why), 0);
		if (g->out.n < 64)
			g->out.h[g->out.n++] = h;
	}
}

/* ... once delayed acks are due (20 us). */
static void drain(struct rig *g)
{
	drain_at(g, 50000);
}

static int inject(struct rig *g, const struct pp_wire_hdr *h)
{
	uint8_t f[FRAME_CAP];
	size_t n = build_frame(f, sizeof(f), h, h->payload_len ? sbuf + h->offset : NULL);
	CU_ASSERT_FATAL(n > 0);
	return pp_proto_input(g->e, f, n, g->now);
}

/* A frame of message 0 from rank 0 (the test's sender) to rank 1. */
static struct pp_wire_hdr frame(uint8_t type, uint16_t stream, uint32_t seq, uint64_t off,
				uint32_t n)
{
	return msg0_frame(type, stream, seq, off, n, LEN);
}

/* DATA frame k (0..2) of the pulled part, on stream XS with seq. */
static struct pp_wire_hdr xdata(unsigned k, uint32_t seq)
{
	uint64_t off = 760 + (uint64_t)k * MAXP;
	uint32_t n = (uint32_t)(LEN - off < MAXP ? LEN - off : MAXP);
	return frame(PP_WIRE_DATA, XS, seq, off, n);
}

/* Post the receive, push both parts on stream 0, and check the PULL. */
static void start(struct rig *g)
{
	CU_ASSERT_EQUAL(pp_proto_recv(g->e, 0, 7, 0, rbuf, LEN, 11), 0);
	struct pp_wire_hdr h = frame(PP_WIRE_PUSH, 0, 0, 0, 80);
	CU_ASSERT_EQUAL(inject(g, &h), 0);
	h = frame(PP_WIRE_PUSH, 0, 1, 80, 680);
	CU_ASSERT_EQUAL(inject(g, &h), 0);
	drain(g);
	int pulls = 0;
	for (unsigned i = 0; i < g->out.n; i++)
		if (g->out.h[i].type == PP_WIRE_PULL) {
			pulls++;
			CU_ASSERT_EQUAL(g->out.h[i].msg_id, 0);
			CU_ASSERT_EQUAL(g->out.h[i].stream, 0);
		}
	CU_ASSERT_EQUAL(pulls, 1);
	g->out.n = 0;
}

/* The receive completed once, whole and exact. */
static void check_done(struct rig *g)
{
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(g->e, &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 11);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_EQUAL(c.len, LEN);
	CU_ASSERT(pat_check(rbuf, LEN, 9));
	CU_ASSERT_EQUAL(pp_proto_poll(g->e, &c), 0);
}

static int not_done(struct rig *g)
{
	struct pp_proto_cpl c;
	return pp_proto_poll(g->e, &c) == 0;
}

/* The last frame on stream XS of the given type, or NULL. */
static const struct pp_wire_hdr *last_on(const struct rig *g, uint8_t type)
{
	const struct pp_wire_hdr *x = NULL;
	for (unsigned i = 0; i < g->out.n; i++)
		if (g->out.h[i].type == type && g->out.h[i].ack_stream == XS)
			x = &g->out.h[i];
	return x;
}

/* Stream 0 still expects seq 2: a new message's FIRST frame there is taken
 * (arrives unexpected), not dropped as a duplicate or after a gap. */
static void check_stream0(struct rig *g)
{
	struct pp_stats st0, st1;
	pp_proto_stats(g->e, &st0);
	struct pp_wire_hdr h = frame(PP_WIRE_PUSH, 0, 2, 0, 80);
	h.msg_id = 1;
	h.msg_len = 80;
	h.flags = PP_WIRE_F_FIRST | PP_WIRE_F_LAST;
	CU_ASSERT_EQUAL(inject(g, &h), 0);
	pp_proto_stats(g->e, &st1);
	CU_ASSERT_EQUAL(st1.drops[PP_DROP_DUP], st0.drops[PP_DROP_DUP]);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_probe(g->e, 0, 7, 0, &c), 1);
	CU_ASSERT_EQUAL(c.len, 80);
	/* Every ack for stream 0 the receiver sent is within stream 0's seqs. */
	for (unsigned i = 0; i < g->out.n; i++)
		if (g->out.h[i].ack_stream == 0)
			CU_ASSERT(g->out.h[i].ack <= 3);
}

static void test_in_order(void)
{
	struct rig g;
	rig_init(&g, 1024);
	start(&g);
	for (unsigned k = 0; k < 3; k++) {
		struct pp_wire_hdr h = xdata(k, k);
		CU_ASSERT_EQUAL(inject(&g, &h), 0);
	}
	check_done(&g);
	drain(&g);
	const struct pp_wire_hdr *a = last_on(&g, PP_WIRE_ACK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(a->ack, 3);
	CU_ASSERT_EQUAL(a->stream, 0);
	CU_ASSERT_PTR_NULL(last_on(&g, PP_WIRE_NACK));
	/* No DATA, PUSH or PULL carries stream XS's ack. */
	for (unsigned i = 0; i < g.out.n; i++)
		if (g.out.h[i].type != PP_WIRE_ACK && g.out.h[i].type != PP_WIRE_NACK)
			CU_ASSERT_NOT_EQUAL(g.out.h[i].ack_stream, XS);
	check_stream0(&g);
	CU_ASSERT(pp_proto_idle(g.e) == 0); /* the unexpected message is there */
	pp_proto_destroy(g.e);
}

static void test_out_of_order(void)
{
	struct rig g;
	rig_init(&g, 1024);
	start(&g);
	struct pp_wire_hdr h = xdata(1, 1);
	CU_ASSERT_EQUAL(inject(&g, &h), -EPROTO); /* past a gap */
	drain(&g);
	const struct pp_wire_hdr *n = last_on(&g, PP_WIRE_NACK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	CU_ASSERT_EQUAL(n->seq, 0);
	CU_ASSERT_EQUAL(n->ack, 0);
	CU_ASSERT(not_done(&g));
	/* A second frame past the same gap gets no second NACK. */
	g.out.n = 0;
	h = xdata(2, 2);
	CU_ASSERT_EQUAL(inject(&g, &h), -EPROTO);
	drain(&g);
	CU_ASSERT_PTR_NULL(last_on(&g, PP_WIRE_NACK));
	/* The handler goes back to seq 0. */
	for (unsigned k = 0; k < 3; k++) {
		h = xdata(k, k);
		h.flags |= k ? PP_WIRE_F_RETX : 0;
		CU_ASSERT_EQUAL(inject(&g, &h), 0);
	}
	check_done(&g);
	g.out.n = 0;
	drain(&g);
	const struct pp_wire_hdr *a = last_on(&g, PP_WIRE_ACK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(a->ack, 3);
	check_stream0(&g);
	pp_proto_destroy(g.e);
}

static void test_duplicate(void)
{
	struct rig g;
	rig_init(&g, 1024);
	start(&g);
	struct pp_stats st0, st1;
	struct pp_wire_hdr h = xdata(0, 0);
	CU_ASSERT_EQUAL(inject(&g, &h), 0);
	pp_proto_stats(g.e, &st0);
	CU_ASSERT_EQUAL(inject(&g, &h), -EPROTO); /* the same again */
	pp_proto_stats(g.e, &st1);
	CU_ASSERT_EQUAL(st1.drops[PP_DROP_DUP], st0.drops[PP_DROP_DUP] + 1);
	CU_ASSERT_EQUAL(st1.bytes_rx, st0.bytes_rx);
	drain(&g);
	const struct pp_wire_hdr *a = last_on(&g, PP_WIRE_ACK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a); /* re-acked at once */
	CU_ASSERT_EQUAL(a->ack, 1);
	CU_ASSERT(not_done(&g));
	for (unsigned k = 1; k < 3; k++) {
		h = xdata(k, k);
		CU_ASSERT_EQUAL(inject(&g, &h), 0);
	}
	check_done(&g);
	/* A duplicate after completion: dropped, nothing placed. */
	h = xdata(2, 2);
	CU_ASSERT_EQUAL(inject(&g, &h), -EPROTO);
	CU_ASSERT(not_done(&g));
	check_stream0(&g);
	pp_proto_destroy(g.e);
}

static void test_lost_and_resent(void)
{
	struct rig g;
	rig_init(&g, 1024);
	start(&g);
	struct pp_wire_hdr h = xdata(0, 0);
	CU_ASSERT_EQUAL(inject(&g, &h), 0);
	h = xdata(2, 2); /* seq 1 lost */
	CU_ASSERT_EQUAL(inject(&g, &h), -EPROTO);
	drain(&g);
	const struct pp_wire_hdr *n = last_on(&g, PP_WIRE_NACK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	CU_ASSERT_EQUAL(n->seq, 1);
	CU_ASSERT(not_done(&g));
	h = xdata(1, 1);
	h.flags |= PP_WIRE_F_RETX;
	CU_ASSERT_EQUAL(inject(&g, &h), 0);
	CU_ASSERT(not_done(&g));
	h = xdata(2, 2);
	h.flags |= PP_WIRE_F_RETX;
	CU_ASSERT_EQUAL(inject(&g, &h), 0);
	check_done(&g);
	check_stream0(&g);
	pp_proto_destroy(g.e);
}

/* Pulled DATA may overtake the second push (it went another way): placed by
 * offset, the receive completes when the push comes. */
static void test_overtakes_push(void)
{
	struct rig g;
	rig_init(&g, 1024);
	CU_ASSERT_EQUAL(pp_proto_recv(g.e, 0, 7, 0, rbuf, LEN, 11), 0);
	struct pp_wire_hdr h = frame(PP_WIRE_PUSH, 0, 0, 0, 80);
	CU_ASSERT_EQUAL(inject(&g, &h), 0);
	for (unsigned k = 0; k < 3; k++) {
		h = xdata(k, k);
		CU_ASSERT_EQUAL(inject(&g, &h), 0);
	}
	CU_ASSERT(not_done(&g));
	h = frame(PP_WIRE_PUSH, 0, 1, 80, 680);
	CU_ASSERT_EQUAL(inject(&g, &h), 0);
	check_done(&g);
	pp_proto_destroy(g.e);
}

/* The receive ends through the handler's stream before its PULL on stream 0
 * is acked, and its record goes to the next message at once: the PULL sent
 * again on timeout still names message 0, not the record's new message. */
static void test_pull_resent_after_done(void)
{
	struct rig g;
	rig_init(&g, 1024);
	start(&g); /* PULL of message 0, seq 0, never acked */
	for (unsigned k = 0; k < 3; k++) {
		struct pp_wire_hdr h = xdata(k, k);
		CU_ASSERT_EQUAL(inject(&g, &h), 0);
	}
	check_done(&g);
	static uint8_t rbuf2[LEN];
	CU_ASSERT_EQUAL(pp_proto_recv(g.e, 0, 7, 0, rbuf2, LEN, 12), 0);
	struct pp_wire_hdr h = frame(PP_WIRE_PUSH, 0, 2, 0, 80);
	h.msg_id = 1;
	CU_ASSERT_EQUAL(inject(&g, &h), 0);
	drain_at(&g, 0); /* message 1's PULL, and an ACK */
	unsigned pulls = 0;
	for (unsigned i = 0; i < g.out.n; i++) {
		if (g.out.h[i].type == PP_WIRE_PULL) {
			pulls++;
			CU_ASSERT_EQUAL(g.out.h[i].msg_id, 1);
			CU_ASSERT_EQUAL(g.out.h[i].seq, 1);
		}
	}
	CU_ASSERT_EQUAL(pulls, 1);
	g.out.n = 0;
	drain_at(&g, 100000000); /* past the RTO: the oldest frame again */
	unsigned resent = 0;
	for (unsigned i = 0; i < g.out.n; i++) {
		const struct pp_wire_hdr *x = &g.out.h[i];
		if (x->type != PP_WIRE_PULL || !(x->flags & PP_WIRE_F_RETX))
			continue;
		resent++;
		CU_ASSERT_EQUAL(x->seq, 0);
		CU_ASSERT_EQUAL(x->msg_id, 0);
		CU_ASSERT_NOT_EQUAL(x->msg_len, LEN); /* a PULL for nothing */
	}
	CU_ASSERT_EQUAL(resent, 1);
	pp_proto_destroy(g.e);
}

/* Acks on a stream that is not ours, and credit on extra-stream frames,
 * leave our send state alone. */
static void test_foreign_ack(void)
{
	struct rig g;
	rig_init(&g, 0); /* no copies: the send waits for its ack */
	CU_ASSERT_EQUAL(pp_proto_send(g.e, 0, 5, sbuf, 100, 21), 0);
	drain_at(&g, 0);
	CU_ASSERT_EQUAL(g.out.n, 2); /* 80 bytes, then 20 */
	CU_ASSERT_EQUAL(g.out.h[0].type, PP_WIRE_PUSH);
	CU_ASSERT_EQUAL(g.out.h[1].type, PP_WIRE_PUSH);
	struct pp_wire_hdr a = {.type = PP_WIRE_ACK,
				.job = 0x5eed,
				.stream = 0,
				.ack_stream = XS,
				.ack = 2,
				.src_rank = 0,
				.dst_rank = 1,
				.src_inc = net_inc(0),
				.dst_inc = net_inc(1)};
	CU_ASSERT_EQUAL(inject(&g, &a), 0);
	CU_ASSERT(not_done(&g));
	CU_ASSERT_EQUAL(pp_proto_peer_busy(g.e, 0), 1);
	a.ack_stream = PP_PROTO_NO_ACK;
	CU_ASSERT_EQUAL(inject(&g, &a), 0);
	CU_ASSERT(not_done(&g));
	a.ack_stream = 0;
	CU_ASSERT_EQUAL(inject(&g, &a), 0);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_poll(g.e, &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 21);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT(pp_proto_idle(g.e));
	pp_proto_destroy(g.e);
}

static void test_conf(void)
{
	struct pp_proto_conf c;
	struct pp_proto *e = NULL;
	pp_proto_conf_default(&c);
	c.nranks = 2;
	c.stream = 3; /* a pull handler's */
	CU_ASSERT_EQUAL(pp_proto_create(&e, &c), -EINVAL);
	c.stream = PP_PROTO_STREAMS;
	CU_ASSERT_EQUAL(pp_proto_create(&e, &c), 0);
	pp_proto_destroy(e);
}

static CU_TestInfo tests[] = {
    {"stream 3 DATA in order", test_in_order},
    {"stream 3 DATA out of order: NACK on stream 3", test_out_of_order},
    {"stream 3 duplicate dropped and re-acked", test_duplicate},
    {"stream 3 frame lost and resent", test_lost_and_resent},
    {"pulled DATA overtakes a push", test_overtakes_push},
    {"a PULL resent after its receive ended names its own message", test_pull_resent_after_done},
    {"acks of another stream are not ours", test_foreign_ack},
    {"own stream outside the handlers' range", test_conf},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"proto_streams", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
