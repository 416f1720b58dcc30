/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto/engine pull serving by the layer below (the handoff hooks): two
 * engines on the test link; the test plays the layer below of rank 0 (a
 * node daemon's pull handler): it records descriptions, claims PULLs or
 * gives them back, sends the pulled DATA on stream 1 from the sender's
 * buffer and reports completion. Checked: bytes exact, the sender's engine
 * sends no DATA for a served PULL, the send completes only after the layer
 * below says done (and fails when it says failed), a PULL not claimed is
 * served by the engine as before, and a send that ends otherwise is
 * withdrawn.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cu_main.h"
#include "test_proto_harness.h"

#define LEN (64u * 1024)

static uint8_t sbuf[LEN], rbuf[LEN];

/* The layer below of rank 0. */
struct below {
	int take;	    /* handoff returns 0 (took it) */
	int serve;	    /* claim returns 1 */
	unsigned handoffs;  /* handoff calls */
	unsigned claims;    /* claim calls */
	unsigned cancels;   /* cancel calls */
	uint32_t dst;	    /* last description: destination */
	uint32_t msg_id;    /* ... message */
	uint64_t tag;	    /* ... tag */
	const uint8_t *buf; /* ... buffer */
	uint64_t len;	    /* ... length */
	uint64_t off;	    /* ... pushed bytes */
	unsigned data0;	    /* DATA frames rank 0's engine sent */
	unsigned xacks;	    /* ACKs to rank 0 with ack_stream 1 */
	uint32_t xack;	    /* the last one's ack */
};

static int h_handoff(void *arg, uint32_t dst, uint32_t msg_id, uint64_t tag, const void *buf,
		     uint64_t len, uint64_t off)
{
	struct below *b = arg;
	b->handoffs++;
	if (!b->take)
		return -ENOSPC;
	b->dst = dst;
	b->msg_id = msg_id;
	b->tag = tag;
	b->buf = buf;
	b->len = len;
	b->off = off;
	return 0;
}

static int h_claim(void *arg, uint32_t dst, uint32_t msg_id)
{
	struct below *b = arg;
	b->claims++;
	CU_ASSERT_EQUAL(dst, b->dst);
	CU_ASSERT_EQUAL(msg_id, b->msg_id);
	return b->serve;
}

static void h_cancel(void *arg, uint32_t dst, uint32_t msg_id)
{
	struct below *b = arg;
	(void)dst, (void)msg_id;
	b->cancels++;
}

/* Watch the link: DATA from rank 0's engine, stream-1 acks to rank 0 (the
 * daemon would take those; here they are dropped after counting). */
static int watch(void *arg, unsigned src, unsigned dst, const struct pp_wire_hdr *h)
{
	struct below *b = arg;
	if (src == 0 && h->type == PP_WIRE_DATA)
		b->data0++;
	if (dst == 0 && h->ack_stream == 1 && (h->type == PP_WIRE_ACK || h->type == PP_WIRE_NACK)) {
		b->xacks++;
		b->xack = h->ack;
		return 1;
	}
	return 0;
}

static void setup(struct net *net, struct below *b, int take, int serve)
{
	memset(b, 0, sizeof(*b));
	b->take = take;
	b->serve = serve;
	struct pp_proto_conf c;
	pp_proto_conf_default(&c);
	c.hooks.handoff = h_handoff;
	c.hooks.handoff_claim = h_claim;
	c.hooks.handoff_cancel = h_cancel;
	c.hooks.arg = b;
	CU_ASSERT_EQUAL_FATAL(net_init(net, 2, &c), 0);
	net->filter = watch;
	net->arg = b;
	pat_fill(sbuf, LEN, 5);
	memset(rbuf, 0, sizeof(rbuf));
}

/* Send [b->off, b->len) as the handler would: DATA on stream 1, its own
 * sequence, no ack carried. */
static void serve_data(struct net *net, struct below *b)
{
	uint32_t seq = 0, maxp = 1500 - PP_WIRE_HDR_LEN;
	for (uint64_t off = b->off; off < b->len; off += maxp, seq++) {
		uint32_t n = (uint32_t)(b->len - off < maxp ? b->len - off : maxp);
		struct pp_wire_hdr h = {.type = PP_WIRE_DATA,
					.flags = off + n == b->len ? PP_WIRE_F_LAST : 0,
					.payload_len = (uint16_t)n,
					.job = 0x5eed,
					.stream = 1,
					.ack_stream = PP_PROTO_NO_ACK,
					.seq = seq,
					.src_rank = 0,
					.dst_rank = b->dst,
					.msg_id = b->msg_id,
					.tag = b->tag,
					.msg_len = b->len,
					.offset = off,
					.src_inc = net_inc(0),
					.dst_inc = net_inc(b->dst)};
		size_t fl = build_frame(net->frame, sizeof(net->frame), &h, b->buf + off);
		CU_ASSERT_EQUAL(pp_proto_input(net->e[1], net->frame, fl, net->now), 0);
	}
}

static void test_served_below(void)
{
	struct net net;
	struct below b;
	setup(&net, &b, 1, 1);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 4, sbuf, LEN, 1), 0);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(b.handoffs, 1);
	CU_ASSERT_EQUAL(b.off, 760);
	CU_ASSERT_EQUAL(b.len, LEN);
	CU_ASSERT_EQUAL(b.tag, 4);
	CU_ASSERT_PTR_EQUAL(b.buf, sbuf);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 4, 0, rbuf, LEN, 2), 0); /* late */
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(b.claims, 1);
	CU_ASSERT_EQUAL(b.data0, 0); /* the engine left the PULL to the layer below */
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 0);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 0);
	serve_data(&net, &b);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_EQUAL(c.len, LEN);
	CU_ASSERT(pat_check(rbuf, LEN, 5));
	uint32_t maxp = 1500 - PP_WIRE_HDR_LEN, frames = (LEN - 760 + maxp - 1) / maxp;
	CU_ASSERT(b.xacks >= 1);
	CU_ASSERT_EQUAL(b.xack, frames);
	/* Every byte is acked, but the layer below has not said done. */
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 0);
	CU_ASSERT_EQUAL(pp_proto_handoff_done(net.e[0], 1, b.msg_id + 1, 0), -ENOENT);
	CU_ASSERT_EQUAL(pp_proto_handoff_done(net.e[0], 1, b.msg_id, 0), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_EQUAL(pp_proto_handoff_done(net.e[0], 1, b.msg_id, 0), -ENOENT);
	CU_ASSERT_EQUAL(b.cancels, 0);
	net_run(&net, 1000000);
	CU_ASSERT(pp_proto_idle(net.e[0]));
	CU_ASSERT(pp_proto_idle(net.e[1]));
	net_fini(&net);
}

static void test_given_back(void)
{
	struct net net;
	struct below b;
	setup(&net, &b, 1, 0);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 4, 0, rbuf, LEN, 2), 0); /* early */
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 4, sbuf, LEN, 1), 0);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(b.handoffs, 1);
	CU_ASSERT_EQUAL(b.claims, 1);
	CU_ASSERT(b.data0 >= (LEN - 760) / (1500 - PP_WIRE_HDR_LEN));
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT(pat_check(rbuf, LEN, 5));
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_EQUAL(b.cancels, 0);
	net_fini(&net);
}

static void test_not_taken(void)
{
	struct net net;
	struct below b;
	setup(&net, &b, 0, 1);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 4, sbuf, LEN, 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 4, sbuf, 500, 3), 0); /* pushed whole */
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(b.handoffs, 1); /* the 500-byte send needs no PULL */
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 4, 0, rbuf, LEN, 2), 0);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(b.claims, 0);
	CU_ASSERT(b.data0 > 0);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT(pat_check(rbuf, LEN, 5));
	net_fini(&net);
}

static void test_failed_below(void)
{
	struct net net;
	struct below b;
	setup(&net, &b, 1, 1);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 4, sbuf, LEN, 1), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 4, 0, rbuf, LEN, 2), 0);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(b.claims, 1);
	CU_ASSERT_EQUAL(pp_proto_handoff_done(net.e[0], 1, b.msg_id, -EFAULT), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.error, -ECONNRESET);
	CU_ASSERT_EQUAL(b.cancels, 0);
	net_fini(&net);
}

/* The layer below may end before the engine has seen the PULL (it took the
 * PULL on its way in): told again after the claim, the engine acts then; in
 * between it neither completes the send nor serves the PULL itself. */
static void test_done_before_pull(void)
{
	struct net net;
	struct below b;
	setup(&net, &b, 1, 1);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 4, sbuf, LEN, 1), 0);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(b.handoffs, 1);
	CU_ASSERT_EQUAL(pp_proto_handoff_done(net.e[0], 1, b.msg_id, -EFAULT), -EAGAIN);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 4, 0, rbuf, LEN, 2), 0);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(b.claims, 1);
	CU_ASSERT_EQUAL(b.data0, 0);
	CU_ASSERT_EQUAL(pp_proto_handoff_done(net.e[0], 1, b.msg_id, -EFAULT), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.error, -ECONNRESET);
	CU_ASSERT_EQUAL(b.data0, 0);
	net_fini(&net);
}

/* Move one frame from engine from to engine to; its length (0: none). */
static int step(struct net *net, unsigned from, unsigned to)
{
	int len = pp_proto_output(net->e[from], net->frame, sizeof(net->frame), net->now);
	if (len > 0)
		pp_proto_input(net->e[to], net->frame, (size_t)len, net->now);
	return len;
}

/* The PULL comes (and is claimed) while the second push still waits for
 * the window: the engine sends that push and no DATA, and the layer below
 * may be done before the push even left: the push still goes, and the send
 * completes once it is acked. */
static void test_claimed_before_pushes(void)
{
	for (int done_early = 0; done_early < 2; done_early++) {
		struct net net;
		struct below b;
		memset(&b, 0, sizeof(b));
		b.take = b.serve = 1;
		struct pp_proto_conf conf;
		pp_proto_conf_default(&conf);
		conf.hooks.handoff = h_handoff;
		conf.hooks.handoff_claim = h_claim;
		conf.hooks.handoff_cancel = h_cancel;
		conf.hooks.arg = &b;
		conf.window = 1; /* the second push waits for the FIRST's ack */
		conf.copy_max = 0;
		CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
		net.filter = watch;
		net.arg = &b;
		pat_fill(sbuf, LEN, 6);
		memset(rbuf, 0, sizeof(rbuf));
		struct pp_proto_cpl c;
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 4, 0, rbuf, LEN, 2), 0); /* early */
		CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 4, sbuf, LEN, 1), 0);
		CU_ASSERT(step(&net, 0, 1) > 0);      /* FIRST */
		CU_ASSERT_EQUAL(step(&net, 0, 1), 0); /* the window is shut */
		CU_ASSERT(step(&net, 1, 0) > 0);      /* the PULL, which acks the FIRST */
		CU_ASSERT_EQUAL(b.claims, 1);
		if (done_early) { /* served and done before the second push left */
			serve_data(&net, &b);
			CU_ASSERT_EQUAL(pp_proto_handoff_done(net.e[0], 1, b.msg_id, 0), 0);
			CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 0);
		}
		net_run(&net, 1000000);
		if (!done_early) {
			CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 0);
			serve_data(&net, &b);
			net_run(&net, 1000000);
			CU_ASSERT_EQUAL(pp_proto_handoff_done(net.e[0], 1, b.msg_id, 0), 0);
			net_run(&net, 1000000);
		}
		CU_ASSERT_EQUAL(b.data0, 0);
		CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[1], &c), 1);
		CU_ASSERT_EQUAL(c.error, 0);
		CU_ASSERT_EQUAL(c.len, LEN);
		CU_ASSERT(pat_check(rbuf, LEN, 6));
		CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[0], &c), 1);
		CU_ASSERT_EQUAL(c.error, 0);
		CU_ASSERT_EQUAL(b.cancels, 0);
		net_fini(&net);
	}
}

static int drop_to_1(void *arg, unsigned src, unsigned dst, const struct pp_wire_hdr *h)
{
	(void)arg, (void)src, (void)h;
	return dst == 1;
}

static void test_withdrawn(void)
{
	struct net net;
	struct below b;
	setup(&net, &b, 1, 1);
	struct pp_proto_cpl c;
	net.filter = drop_to_1; /* rank 1 never hears: the sender gives up */
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 4, sbuf, LEN, 1), 0);
	net_run(&net, 60ull * 1000000000);
	CU_ASSERT_EQUAL(b.handoffs, 1);
	CU_ASSERT_EQUAL(b.claims, 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.error, -ECONNRESET);
	CU_ASSERT_EQUAL(b.cancels, 1);
	net_fini(&net);
}

/* watch, and the first PULL from rank 1 never reaches rank 0's engine:
 * the layer below took it on its way in, the engine dropped it out of order
 * (a frame before it was lost). */
static unsigned pulls_lost;
static int lose_first_pull(void *arg, unsigned src, unsigned dst, const struct pp_wire_hdr *h)
{
	if (src == 1 && h->type == PP_WIRE_PULL && !pulls_lost) {
		pulls_lost++;
		return 1;
	}
	return watch(arg, src, dst, h);
}

/* So the layer below serves the message and the receive ends before the
 * PULL's resend: the resend is a PULL for nothing (the receive's record is
 * gone). The sender's engine must still learn that the layer below holds
 * the send, else the send never completes (a job through ppd at 5 % loss
 * hung so). */
static void test_pull_resent_after_receive(void)
{
	struct net net;
	struct below b;
	setup(&net, &b, 1, 1);
	net.filter = lose_first_pull;
	pulls_lost = 0;
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 4, 0, rbuf, LEN, 2), 0); /* early */
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 4, sbuf, LEN, 1), 0);
	net_run(&net, 0); /* until the PULL is lost, before any timer */
	CU_ASSERT_EQUAL_FATAL(pulls_lost, 1);
	CU_ASSERT_EQUAL(b.claims, 0);
	serve_data(&net, &b); /* the handler below answered the lost PULL */
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT(pat_check(rbuf, LEN, 5));
	CU_ASSERT_EQUAL(pp_proto_handoff_done(net.e[0], 1, b.msg_id, 0), -EAGAIN);
	net_run(&net, 100ull * 1000000); /* the PULL goes again */
	CU_ASSERT_EQUAL(b.claims, 1);
	CU_ASSERT_EQUAL(pp_proto_handoff_done(net.e[0], 1, b.msg_id, 0), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_EQUAL(b.data0, 0);
	net_run(&net, 1000000);
	CU_ASSERT(pp_proto_idle(net.e[0]));
	CU_ASSERT(pp_proto_idle(net.e[1]));
	net_fini(&net);

	/* Not claimed below (the description was never taken up): the send
	 * ends with -ECONNRESET rather than wait for a PULL that cannot come. */
	setup(&net, &b, 1, 0);
	net.filter = lose_first_pull;
	pulls_lost = 0;
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 4, 0, rbuf, LEN, 2), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 4, sbuf, LEN, 1), 0);
	net_run(&net, 0);
	CU_ASSERT_EQUAL_FATAL(pulls_lost, 1);
	serve_data(&net, &b);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[1], &c), 1);
	net_run(&net, 100ull * 1000000);
	CU_ASSERT_EQUAL(b.claims, 1);
	CU_ASSERT_EQUAL_FATAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.error, -ECONNRESET);
	CU_ASSERT_EQUAL(b.data0, 0);
	net_fini(&net);
}

static void test_conf(void)
{
	struct pp_proto_conf c;
	struct pp_proto *e = NULL;
	pp_proto_conf_default(&c);
	c.nranks = 2;
	c.hooks.handoff = h_handoff; /* without claim and cancel */
	CU_ASSERT_EQUAL(pp_proto_create(&e, &c), -EINVAL);
}

static CU_TestInfo tests[] = {
    {"PULL served below: no DATA from the engine, done completes", test_served_below},
    {"PULL given back: the engine serves it", test_given_back},
    {"description not taken: served as before", test_not_taken},
    {"failure below fails the send", test_failed_below},
    {"done reported before the engine saw the PULL", test_done_before_pull},
    {"PULL claimed while the pushes wait for the window", test_claimed_before_pushes},
    {"a send that ends otherwise is withdrawn", test_withdrawn},
    {"PULL resent after the receive ended: the send still completes",
     test_pull_resent_after_receive},
    {"hooks all or none", test_conf},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"proto_handoff", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
