/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Go-back-N: proto/gbn's sender and receiver alone, and through the engine:
 * the window, cumulative and delayed acks, NACK on a gap, duplicates,
 * retransmission back-off, peer loss, and a seeded lossy soak in every mode.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "gbn.h"
#include "test_proto_harness.h"

struct drop_ctl {
	int from;	      /* drop frames from this rank (-1: none) */
	int seq;	      /* ... only this sequenced seq, once (-1: all) */
	int done;	      /* the single drop happened */
	uint64_t *now;	      /* virtual clock */
	uint64_t retx_at[16]; /* times of retransmitted frames seen */
	unsigned nretx;	      /* entries in retx_at */
	uint64_t rng;	      /* random drops: xorshift state */
	double loss;	      /* random drop probability */
};

static int drop_filter(void *arg, unsigned src, unsigned dst, const struct pp_wire_hdr *h)
{
	struct drop_ctl *d = arg;
	(void)dst;
	if ((h->flags & PP_WIRE_F_RETX) && d->nretx < 16)
		d->retx_at[d->nretx++] = *d->now;
	if ((int)src != d->from)
		return 0;
	if (d->seq < 0)
		return 1;
	if (!d->done && pp_wire_sequenced(h->type) && h->seq == (uint32_t)d->seq &&
	    !(h->flags & PP_WIRE_F_RETX)) {
		d->done = 1;
		return 1;
	}
	return 0;
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int random_filter(void *arg, unsigned src, unsigned dst, const struct pp_wire_hdr *h)
{
	struct drop_ctl *d = arg;
	(void)src;
	(void)dst;
	(void)h;
	return (double)(xs(&d->rng) % 1000000) < d->loss * 1e6;
}

static void test_nack_on_gap(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	struct drop_ctl d = {.from = 0, .seq = 10, .now = &net.now};
	net.filter = drop_filter;
	net.arg = &d;
	enum { LEN = 100000 };
	static uint8_t sb[LEN], rb[LEN];
	pat_fill(sb, LEN, 1);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb, LEN, 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, LEN, 2), 0);
	uint64_t t0 = net.now;
	net_run(&net, 1000000000);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_TRUE(pat_check(rb, LEN, 1));
	struct pp_stats ss, sr;
	pp_proto_stats(net.e[0], &ss);
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT_EQUAL(d.done, 1);
	CU_ASSERT_EQUAL(sr.nacks_tx, 1);
	CU_ASSERT(sr.drops[PP_DROP_DUP] > 0); /* frames past the gap */
	CU_ASSERT(ss.retransmits > 0);
	/* The NACK, not the timer, recovered: no time passed beyond acks. */
	CU_ASSERT(net.now - t0 < conf.rto_ns);
	net_fini(&net);
}

static void test_window_and_rto(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = PP_PROTO_PUSH_ALL;
	conf.window = 8;
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	struct drop_ctl d = {.from = 1, .seq = -1, .now = &net.now};
	net.filter = drop_filter;
	net.arg = &d;
	enum { LEN = 40 * 1440 };
	static uint8_t sb[LEN], rb[LEN];
	pat_fill(sb, LEN, 2);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb, LEN, 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, LEN, 2), 0);
	net_run(&net, 0); /* no timer fires */
	struct pp_stats ss;
	pp_proto_stats(net.e[0], &ss);
	CU_ASSERT_EQUAL(ss.frames_tx, 8); /* the window, then silence */
	CU_ASSERT_EQUAL(pp_proto_expiry(net.e[0]), net.now + conf.rto_ns);
	net_run(&net, conf.rto_ns + 1); /* the first timeout only */
	pp_proto_stats(net.e[0], &ss);
	/* A timeout resends the oldest frame only: the receiver has the
	 * other seven (only its acks are lost), and its answer will say so. */
	CU_ASSERT_EQUAL(ss.retransmits, 1);
	CU_ASSERT_EQUAL(ss.frames_tx, 9);
	net.filter = NULL;
	net_run(&net, 1000000000);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_TRUE(pat_check(rb, LEN, 2));
	pp_proto_stats(net.e[0], &ss);
	/* The second probe's ack covered the whole window: nothing else was
	 * sent twice (whole-window go-back would have resent 16). */
	CU_ASSERT_EQUAL(ss.retransmits, 2);
	net_fini(&net);
}

/* A whole window lost (say the receiver's ring overflowed) and nothing after
 * it to draw a NACK: the timeout's probe is acked for itself alone, and that
 * ack sends the rest at once instead of one frame per timeout. */
static void test_probe_then_rest(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = PP_PROTO_PUSH_ALL;
	conf.window = 8;
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	struct drop_ctl d = {.from = 0, .seq = -1, .now = &net.now};
	net.filter = drop_filter;
	net.arg = &d;
	enum { LEN = 8 * 1440 };
	static uint8_t sb[LEN], rb[LEN];
	pat_fill(sb, LEN, 5);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb, LEN, 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, LEN, 2), 0);
	net_run(&net, 0);
	uint64_t fire = pp_proto_expiry(net.e[0]);
	net.filter = NULL; /* the link is back */
	net_run(&net, 1000000000);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_TRUE(pat_check(rb, LEN, 5));
	struct pp_stats ss;
	pp_proto_stats(net.e[0], &ss);
	CU_ASSERT_EQUAL(ss.retransmits, 8); /* each lost frame exactly once */
	/* Done within the first back-off, not after eight timeouts. */
	CU_ASSERT(net.now < fire + 2 * conf.rto_ns);
	net_fini(&net);
}

static void test_acks(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = PP_PROTO_PUSH_ALL;
	conf.copy_max = 0; /* small sends wait for their ack */
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	static uint8_t sb[40 * 1440], rb[40 * 1440];
	struct pp_proto_cpl c;
	struct pp_stats sr;
	/* Immediate: a frame that ends a message is acked at once, so the
	 * send completes without any time passing. */
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb, 100, 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, 100, 2), 0);
	net_run(&net, 0);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT_EQUAL(sr.acks_tx, 1);
	net_fini(&net);
	/* Delayed: pushed frames that leave the rest to a PULL (late receiver,
	 * Push-Pull) are acked after ack_delay, not before. */
	conf.mode = PP_PROTO_PUSH_PULL;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, 2000, 2), 0);
	net_run(&net, 0);
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT_EQUAL(sr.acks_tx, 0);
	CU_ASSERT_EQUAL(pp_proto_expiry(net.e[1]), net.now + conf.ack_delay_ns);
	net_run(&net, 1000000);
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT_EQUAL(sr.acks_tx, 1);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 0); /* the rest waits for a PULL */
	net_fini(&net);
	conf.mode = PP_PROTO_PUSH_ALL;
	/* Cumulative: 40 frames in a window of 64 take a single ack. */
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb, sizeof(rb), 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, sizeof(sb), 2), 0);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT_EQUAL(sr.acks_tx, 1);
	net_fini(&net);
	/* Every ack_every frames: window 16 -> acks after 16, 32, then the
	 * delayed one for the last 8. */
	conf.window = 16;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb, sizeof(rb), 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, sizeof(sb), 2), 0);
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT_EQUAL(sr.acks_tx, 3);
	net_fini(&net);
}

/* Sends of copy_max bytes or fewer complete at once from a copy: the user
 * buffer may change straight away, the receiver still gets the original, and
 * spends no frame on an immediate ack; the slot frees on the delayed ack. A
 * send finding every slot so held gets -EAGAIN, and a lost peer gives no
 * second completion. */
static void test_copied_sends(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.max_msgs = 2;
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	uint8_t sb[600], rb[2][600];
	struct pp_proto_cpl c;
	pat_fill(sb, sizeof(sb), 9);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb[0], sizeof(rb[0]), 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, sizeof(sb), 2), 0);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1); /* before any frame */
	CU_ASSERT_EQUAL(c.cookie, 2);
	CU_ASSERT_EQUAL(c.error, 0);
	memset(sb, 0xee, sizeof(sb));
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 1, sb, 0, 3), 0); /* 0 bytes too */
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 2, sb, 8, 4), -EAGAIN);
	net_run(&net, 0); /* no time passes */
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(c.len, 600);
	CU_ASSERT_TRUE(pat_check(rb[0], sizeof(rb[0]), 9));
	struct pp_stats sr;
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT_EQUAL(sr.acks_tx, 0); /* nothing waits for it */
	CU_ASSERT_FALSE(pp_proto_idle(net.e[0]));
	net_run(&net, conf.ack_delay_ns + 1); /* the delayed ack frees the slots */
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT_EQUAL(sr.acks_tx, 1);
	CU_ASSERT_TRUE(pp_proto_idle(net.e[0]));
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 2, sb, 8, 4), 0);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	/* The peer goes silent: the copied send is dropped without a second
	 * completion, the receive naming the peer fails. */
	struct drop_ctl d = {.from = 0, .seq = -1, .now = &net.now};
	net.filter = drop_filter;
	net.arg = &d;
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], 1, 0, 0, rb[1], sizeof(rb[1]), 5), 0);
	net_run(&net, 10000000000ull);
	CU_ASSERT_TRUE(pp_proto_peer_lost(net.e[0], 1));
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 5);
	CU_ASSERT_EQUAL(c.error, -ECONNRESET);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 0);
	CU_ASSERT_TRUE(pp_proto_idle(net.e[0]));
	net_fini(&net);
}

/* A small send that leaves bytes to a PULL is not copied: its sender must be
 * in a pp_* call to serve the PULL, so it completes when acknowledged. */
static void test_uncopied_small(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf); /* push-pull, BTP 80 + 680 */
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	static uint8_t sb[1000], rb[1000];
	struct pp_proto_cpl c;
	pat_fill(sb, sizeof(sb), 3);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, sizeof(sb), 2), 0);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb, sizeof(rb), 1), 0);
	net_run(&net, 0);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_TRUE(pat_check(rb, sizeof(rb), 3));
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1); /* acked at once: LAST */
	CU_ASSERT_EQUAL(c.cookie, 2);
	net_fini(&net);
}

/* pp_proto_ping: a live peer acks the PING and stays; a silent one is
 * declared lost, failing the receive that waits on it. */
static void test_ping(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	uint8_t rb[64];
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], 1, 0, 0, rb, sizeof(rb), 7), 0);
	pp_proto_ping(net.e[0], 1);
	net_run(&net, 1000000000);
	struct pp_stats s1;
	pp_proto_stats(net.e[1], &s1);
	CU_ASSERT_EQUAL(s1.drops[PP_DROP_TYPE], 0);
	CU_ASSERT_FALSE(pp_proto_peer_lost(net.e[0], 1));
	CU_ASSERT_TRUE(pp_proto_idle(net.e[1]));
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 0); /* still waiting */
	struct drop_ctl d = {.from = 1, .seq = -1, .now = &net.now};
	net.filter = drop_filter; /* rank 1 falls silent */
	net.arg = &d;
	pp_proto_ping(net.e[0], 1);
	net_run(&net, 10000000000ull);
	CU_ASSERT_TRUE(pp_proto_peer_lost(net.e[0], 1));
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[0], &c), 1);
	CU_ASSERT_EQUAL(c.cookie, 7);
	CU_ASSERT_EQUAL(c.error, -ECONNRESET);
	net_fini(&net);
}

static void test_duplicate(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = PP_PROTO_PUSH_ALL;
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	/* Two frames: the first does not end the message, so its ack waits. */
	static uint8_t sb[2000], rb[2000], f[2048], g[2048];
	pat_fill(sb, sizeof(sb), 3);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb, sizeof(rb), 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, sizeof(sb), 2), 0);
	int n = pp_proto_output(net.e[0], f, sizeof(f), 10);
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL(pp_proto_input(net.e[1], f, (size_t)n, 10), 0);
	CU_ASSERT_EQUAL(pp_proto_output(net.e[1], g, sizeof(g), 10), 0); /* ack delayed */
	CU_ASSERT_EQUAL(pp_proto_input(net.e[1], f, (size_t)n, 11), -EPROTO);
	struct pp_stats sr;
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT_EQUAL(sr.drops[PP_DROP_DUP], 1);
	CU_ASSERT(pp_proto_output(net.e[1], g, sizeof(g), 11) > 0); /* re-acked at once */
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 0); /* half the message is here */
	net_run(&net, 1000000);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 1);
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 0);
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT_EQUAL(sr.msgs_rx, 1);
	CU_ASSERT_TRUE(pat_check(rb, sizeof(rb), 3));
	net_fini(&net);
}

static void test_backoff_and_loss(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.rto_ns = 200000;
	conf.rto_max_ns = 1600000;
	conf.rto_tries = 6;
	conf.mode = PP_PROTO_PUSH_ALL; /* one frame */
	conf.copy_max = 0;	       /* the send waits for its ack */
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	struct drop_ctl d = {.from = 0, .seq = -1, .now = &net.now};
	net.filter = drop_filter;
	net.arg = &d;
	uint8_t sb[100] = {0}, rb[100];
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], 1, 0, 0, rb, 100, 7), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], PP_PROTO_ANY, 0, 0, rb, 100, 8), 0);
	uint64_t t0 = net.now;
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, 100, 9), 0);
	net_run(&net, 1000000000);
	static const uint64_t at[] = {200, 600, 1400, 3000, 4600, 6200};
	CU_ASSERT_EQUAL(d.nretx, 6);
	for (unsigned i = 0; i < 6 && i < d.nretx; i++)
		CU_ASSERT_EQUAL(d.retx_at[i] - t0, at[i] * 1000);
	CU_ASSERT_EQUAL(net.now - t0, 7800000u);
	/* The send and the receive naming rank 1 fail; the wildcard stays. */
	struct pp_proto_cpl c;
	int got_send = 0, got_recv = 0;
	while (pp_proto_poll(net.e[0], &c)) {
		CU_ASSERT_EQUAL(c.error, -ECONNRESET);
		got_send += c.cookie == 9;
		got_recv += c.cookie == 7;
	}
	CU_ASSERT_EQUAL(got_send, 1);
	CU_ASSERT_EQUAL(got_recv, 1);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 0, sb, 100, 10), -ECONNRESET);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[0], 1, 0, 0, rb, 100, 11), -ECONNRESET);
	net_fini(&net);
}

/* A receiver that refuses pushes for far longer than the retransmission
 * budget (credits off, pushed buffer full, no receive posted) is alive, not
 * lost: once receives are posted every message arrives. */
static void test_slow_receiver_not_lost(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = PP_PROTO_PUSH_ALL;
	conf.credits = 0;
	conf.pushbuf_bytes = 4096;
	conf.rto_tries = 4;
	conf.rto_max_ns = 1000000;
	conf.copy_max = 0; /* sends complete only when acked */
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	enum { N = 12, LEN = 1000 };
	static uint8_t sb[N][LEN], rb[N][LEN];
	for (uint32_t m = 0; m < N; m++) {
		pat_fill(sb[m], LEN, m);
		CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, (int)m, sb[m], LEN, m), 0);
	}
	net_run(&net, 100000000); /* 100 ms: many times the 4-try budget */
	struct pp_stats sr;
	pp_proto_stats(net.e[1], &sr);
	CU_ASSERT(sr.drops[PP_DROP_NOBUF] > 4);
	struct pp_proto_cpl c;
	unsigned ok = 0;
	while (pp_proto_poll(net.e[0], &c)) {
		CU_ASSERT_EQUAL(c.error, 0); /* the sends that fit; none failed */
		ok += c.error == 0;
	}
	CU_ASSERT(ok < N);
	for (uint32_t m = 0; m < N; m++)
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, (int)m, 0, rb[m], LEN, m), 0);
	net_run(&net, 1000000000);
	while (pp_proto_poll(net.e[0], &c))
		ok += c.error == 0;
	while (pp_proto_poll(net.e[1], &c))
		ok += c.error == 0 && pat_check(rb[c.cookie], LEN, (uint32_t)c.cookie);
	CU_ASSERT_EQUAL(ok, 2 * N);
	net_fini(&net);
}

/* Seeded random loss in both directions, random sizes, early and late. */
static void soak(enum pp_proto_mode mode, double loss, uint64_t seed)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.mode = mode;
	conf.window = 32;
	conf.pushbuf_bytes = 65536;
	conf.rto_tries = 30;
	struct net net;
	CU_ASSERT_EQUAL_FATAL(net_init(&net, 2, &conf), 0);
	struct drop_ctl d = {.rng = seed, .loss = loss, .now = &net.now};
	net.filter = random_filter;
	net.arg = &d;
	enum { N = 200, B = 8, MAXLEN = 200000 };
	uint8_t *sb = malloc((size_t)B * MAXLEN), *rb = malloc((size_t)B * MAXLEN);
	CU_ASSERT_FATAL(sb && rb);
	uint64_t rng = seed * 7 + 1, delivered = 0;
	for (uint32_t m0 = 0; m0 < N; m0 += B) {
		uint64_t len[B];
		int late[B];
		for (uint32_t i = 0; i < B; i++) {
			uint32_t m = m0 + i;
			len[i] = (xs(&rng) % 2) ? xs(&rng) % 2000 : xs(&rng) % MAXLEN;
			late[i] = (int)(xs(&rng) % 2);
			pat_fill(sb + (size_t)i * MAXLEN, len[i], m);
			memset(rb + (size_t)i * MAXLEN, 0, len[i]);
			if (!late[i])
				CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, (int)m, 0,
							      rb + (size_t)i * MAXLEN, len[i], m),
						0);
			CU_ASSERT_EQUAL(
			    pp_proto_send(net.e[0], 1, (int)m, sb + (size_t)i * MAXLEN, len[i], m),
			    0);
		}
		net_run(&net, 50000);
		for (uint32_t i = 0; i < B; i++)
			if (late[i])
				CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, (int)(m0 + i), 0,
							      rb + (size_t)i * MAXLEN, len[i],
							      m0 + i),
						0);
		net_run(&net, 10000000000ull);
		struct pp_proto_cpl c;
		unsigned sends = 0, recvs = 0;
		while (pp_proto_poll(net.e[0], &c)) {
			CU_ASSERT_EQUAL(c.error, 0);
			sends++;
		}
		while (pp_proto_poll(net.e[1], &c)) {
			uint32_t i = (uint32_t)c.cookie - m0;
			CU_ASSERT_FATAL(i < B);
			CU_ASSERT_EQUAL(c.error, 0);
			CU_ASSERT_EQUAL(c.len, len[i]);
			CU_ASSERT_TRUE(
			    pat_check(rb + (size_t)i * MAXLEN, len[i], (uint32_t)c.cookie));
			recvs++;
		}
		CU_ASSERT_EQUAL(sends, B);
		CU_ASSERT_EQUAL_FATAL(recvs, B);
		delivered += recvs;
	}
	CU_ASSERT_EQUAL(delivered, N);
	struct pp_stats ss;
	pp_proto_stats(net.e[0], &ss);
	if (loss > 0)
		CU_ASSERT(ss.retransmits > 0);
	free(sb);
	free(rb);
	net_fini(&net);
}

static void test_soak(void)
{
	for (int mode = PP_PROTO_PUSH_PULL; mode <= PP_PROTO_PUSH_ZERO; mode++) {
		soak((enum pp_proto_mode)mode, 0.0, 1);
		soak((enum pp_proto_mode)mode, 0.01, 2);
		soak((enum pp_proto_mode)mode, 0.30, 3);
	}
}

/* ---- proto/gbn alone: the sender and the receiver objects ---- */

#define US 1000ull

static void test_obj_sender(void)
{
	struct pp_gbn_tx t;
	memset(&t, 0, sizeof(t));
	pp_gbn_tx_start(&t, 0xfffffffe, 200 * US, 1600 * US); /* wraps on the way */
	uint32_t seq;
	CU_ASSERT_FALSE(pp_gbn_tx_busy(&t));
	CU_ASSERT_EQUAL(pp_gbn_tx_expiry(&t), UINT64_MAX);
	CU_ASSERT_EQUAL(pp_gbn_tx_send(&t, 1000), 0xfffffffe);
	CU_ASSERT_EQUAL(pp_gbn_tx_send(&t, 1000), 0xffffffff);
	CU_ASSERT_EQUAL(pp_gbn_tx_send(&t, 1000), 0);
	CU_ASSERT_EQUAL(pp_gbn_tx_send(&t, 1000), 1);
	CU_ASSERT_TRUE(pp_gbn_tx_open(&t, 5));
	CU_ASSERT_FALSE(pp_gbn_tx_open(&t, 4));
	CU_ASSERT_EQUAL(pp_gbn_tx_expiry(&t), 1000 + 200 * US);
	CU_ASSERT_FALSE(pp_gbn_tx_resend(&t, 1000, &seq));
	/* An ack for two frames; old and future acks are no news. */
	CU_ASSERT_EQUAL(pp_gbn_tx_ack(&t, 0, 51000), 2);
	CU_ASSERT_EQUAL(t.srtt, 50000); /* the first frame was timed */
	CU_ASSERT_EQUAL(pp_gbn_tx_ack(&t, 0xffffffff, 52000), 0);
	CU_ASSERT_EQUAL(pp_gbn_tx_ack(&t, 3, 52000), 0);
	/* A NACK goes back: 0 and 1 again, oldest first, then nothing. */
	pp_gbn_tx_nack(&t, 0);
	CU_ASSERT_TRUE(pp_gbn_tx_resend(&t, 53000, &seq) && seq == 0);
	CU_ASSERT_TRUE(pp_gbn_tx_resend(&t, 53000, &seq) && seq == 1);
	CU_ASSERT_FALSE(pp_gbn_tx_resend(&t, 53000, &seq));
	pp_gbn_tx_nack(&t, 7); /* outside [una, nxt): ignored */
	CU_ASSERT_FALSE(pp_gbn_tx_resend(&t, 53000, &seq));
	/* Timeouts: back-off doubles up to rto_max, each probe resends una. */
	uint64_t now = pp_gbn_tx_expiry(&t);
	uint64_t rto = t.rto;
	CU_ASSERT_EQUAL(pp_gbn_tx_timer(&t, now - 1, 3), PP_GBN_QUIET);
	CU_ASSERT_EQUAL(pp_gbn_tx_timer(&t, now, 3), PP_GBN_PROBE);
	CU_ASSERT_EQUAL(t.rto, 2 * rto);
	CU_ASSERT_TRUE(pp_gbn_tx_resend(&t, now, &seq) && seq == 0);
	CU_ASSERT_FALSE(pp_gbn_tx_resend(&t, now, &seq)); /* the probe alone */
	/* An ack for exactly the probe: the rest is lacking and goes again. */
	CU_ASSERT_EQUAL(pp_gbn_tx_ack(&t, 1, now + 10), 1);
	CU_ASSERT_TRUE(pp_gbn_tx_resend(&t, now + 10, &seq) && seq == 1);
	CU_ASSERT_FALSE(pp_gbn_tx_resend(&t, now + 10, &seq));
	/* Without progress: lost after max_tries timeouts, rto capped. */
	enum pp_gbn_timer r = PP_GBN_QUIET;
	int probes = 0;
	for (int i = 0; i < 10 && r != PP_GBN_LOST; i++) {
		now = pp_gbn_tx_expiry(&t);
		r = pp_gbn_tx_timer(&t, now, 3);
		probes += r == PP_GBN_PROBE;
		CU_ASSERT(t.rto <= 1600 * US);
	}
	CU_ASSERT_EQUAL(r, PP_GBN_LOST);
	CU_ASSERT_EQUAL(probes, 3);
	pp_gbn_tx_drop(&t);
	CU_ASSERT_FALSE(pp_gbn_tx_busy(&t));
	CU_ASSERT_FALSE(pp_gbn_tx_resend(&t, now, &seq));
}

static void test_obj_probe_slow_receiver(void)
{
	struct pp_gbn_tx t;
	memset(&t, 0, sizeof(t));
	pp_gbn_tx_start(&t, 10, 100, 10000);
	for (int i = 0; i < 4; i++)
		pp_gbn_tx_send(&t, 0);
	CU_ASSERT_EQUAL(pp_gbn_tx_timer(&t, 100, 5), PP_GBN_PROBE);
	uint32_t seq;
	CU_ASSERT_TRUE(pp_gbn_tx_resend(&t, 100, &seq) && seq == 10);
	/* The ack reaches past the probe: the receiver had it all. */
	CU_ASSERT_EQUAL(pp_gbn_tx_ack(&t, 14, 150), 4);
	CU_ASSERT_FALSE(pp_gbn_tx_resend(&t, 150, &seq));
	CU_ASSERT_FALSE(pp_gbn_tx_busy(&t));
	CU_ASSERT_EQUAL(t.tries, 0);
}

static void test_obj_receiver(void)
{
	struct pp_gbn_rx x;
	memset(&x, 0, sizeof(x));
	x.rcv_nxt = 0xffffffff;
	CU_ASSERT_EQUAL(pp_gbn_rx_check(&x, 0xffffffff), PP_GBN_NEXT);
	pp_gbn_rx_take(&x, 1000, 20, 3, 0);
	CU_ASSERT_EQUAL(x.rcv_nxt, 0);
	CU_ASSERT_FALSE(pp_gbn_rx_ack_due(&x, 1019));
	CU_ASSERT_TRUE(pp_gbn_rx_ack_due(&x, 1020));
	CU_ASSERT_EQUAL(pp_gbn_rx_expiry(&x), 1020);
	pp_gbn_rx_timer(&x, 1020);
	CU_ASSERT_EQUAL(pp_gbn_rx_expiry(&x), UINT64_MAX); /* due now */
	pp_gbn_rx_acked(&x);
	CU_ASSERT_FALSE(pp_gbn_rx_ack_due(&x, 5000));
	/* Every 3 frames an ack is due at once; a flagged frame too. */
	pp_gbn_rx_take(&x, 2000, 20, 3, 0);
	pp_gbn_rx_take(&x, 2000, 20, 3, 0);
	CU_ASSERT_FALSE(pp_gbn_rx_ack_due(&x, 2000));
	pp_gbn_rx_take(&x, 2000, 20, 3, 0);
	CU_ASSERT_TRUE(pp_gbn_rx_ack_due(&x, 2000));
	pp_gbn_rx_acked(&x);
	pp_gbn_rx_take(&x, 2000, 20, 3, 1);
	CU_ASSERT_TRUE(pp_gbn_rx_ack_due(&x, 2000));
	pp_gbn_rx_acked(&x);
	/* A duplicate is re-acked at once; a gap NACKed once. */
	CU_ASSERT_EQUAL(x.rcv_nxt, 4);
	CU_ASSERT_EQUAL(pp_gbn_rx_check(&x, 2), PP_GBN_DUP);
	CU_ASSERT_TRUE(pp_gbn_rx_ack_due(&x, 0));
	pp_gbn_rx_acked(&x);
	CU_ASSERT_EQUAL(pp_gbn_rx_check(&x, 6), PP_GBN_GAP);
	CU_ASSERT_TRUE(pp_gbn_rx_nack_due(&x));
	CU_ASSERT_EQUAL(pp_gbn_rx_check(&x, 7), PP_GBN_GAP);
	CU_ASSERT_FALSE(pp_gbn_rx_nack_due(&x)); /* one per gap */
	CU_ASSERT_EQUAL(pp_gbn_rx_check(&x, 4), PP_GBN_NEXT);
	pp_gbn_rx_take(&x, 3000, 20, 3, 0);
	CU_ASSERT_EQUAL(pp_gbn_rx_check(&x, 6), PP_GBN_GAP);
	CU_ASSERT_TRUE(pp_gbn_rx_nack_due(&x)); /* a new gap */
	/* A frame refused for lack of room: ack at once; credit: ack soon. */
	pp_gbn_rx_acked(&x);
	pp_gbn_rx_refuse(&x);
	CU_ASSERT_TRUE(pp_gbn_rx_ack_due(&x, 0));
	pp_gbn_rx_acked(&x);
	pp_gbn_rx_owe(&x);
	CU_ASSERT_TRUE(pp_gbn_rx_ack_due(&x, 0));
}

/* A run of frames a daemon's handler starts on a flow (apps/ppd/pull.c):
 * what is due to go again is read before it is taken, and an ack for
 * another start restarts the run there, within 4 windows or on a fresh
 * flow. */
static void test_obj_runs(void)
{
	struct pp_gbn_tx t;
	memset(&t, 0, sizeof(t));
	const uint32_t W = 64, base = 0xfffffff0; /* the run wraps */
	pp_gbn_tx_start(&t, base, 100, 10000);
	CU_ASSERT_EQUAL(pp_gbn_tx_next(&t), base);
	for (int i = 0; i < 20; i++)
		pp_gbn_tx_send(&t, 0);
	CU_ASSERT_EQUAL(pp_gbn_tx_sent_since(&t, base), 20);
	CU_ASSERT_EQUAL(pp_gbn_tx_acked_since(&t, base), 0);
	/* Acks inside [base, nxt] are the run's own; base itself says nothing. */
	CU_ASSERT_FALSE(pp_gbn_tx_restart_at(&t, base, base, W, 0));
	CU_ASSERT_FALSE(pp_gbn_tx_restart_at(&t, base, base + 7, W, 0));
	CU_ASSERT_FALSE(pp_gbn_tx_restart_at(&t, base, base + 20, W, 1));
	/* Behind base or past nxt: the receiver expects another start, unless
	 * the ack is further than 4 windows away on a flow that is not fresh. */
	CU_ASSERT_TRUE(pp_gbn_tx_restart_at(&t, base, base - 5, W, 0));
	CU_ASSERT_TRUE(pp_gbn_tx_restart_at(&t, base, base + 21, W, 0));
	CU_ASSERT_TRUE(pp_gbn_tx_restart_at(&t, base, base - 4 * W, W, 0));
	CU_ASSERT_FALSE(pp_gbn_tx_restart_at(&t, base, base - 4 * W - 1, W, 0));
	CU_ASSERT_FALSE(pp_gbn_tx_restart_at(&t, base, base + 4 * W, W, 0));
	CU_ASSERT_TRUE(pp_gbn_tx_restart_at(&t, base, base + 4 * W, W, 1));
	CU_ASSERT_TRUE(pp_gbn_tx_restart_at(&t, base, base + 12345, W, 1));
	/* Once part of the run is acknowledged, it is the receiver's. */
	CU_ASSERT_EQUAL(pp_gbn_tx_ack(&t, base + 4, 10), 4);
	CU_ASSERT_EQUAL(pp_gbn_tx_acked_since(&t, base), 4);
	CU_ASSERT_FALSE(pp_gbn_tx_restart_at(&t, base, base - 5, W, 1));
	/* A NACK: what is due is shown, not taken, until resend takes it. */
	uint32_t seq = 0, got = 0;
	pp_gbn_tx_nack(&t, base + 6);
	CU_ASSERT_TRUE(pp_gbn_tx_resend_due(&t, &seq) && seq == base + 6);
	CU_ASSERT_TRUE(pp_gbn_tx_resend_due(&t, &seq) && seq == base + 6);
	CU_ASSERT_TRUE(pp_gbn_tx_resend(&t, 20, &got) && got == base + 6);
	CU_ASSERT_TRUE(pp_gbn_tx_resend_due(&t, &seq) && seq == base + 7);
	while (pp_gbn_tx_resend(&t, 20, &got))
		;
	CU_ASSERT_FALSE(pp_gbn_tx_resend_due(&t, &seq));
	/* A timeout counts a try; a standalone ack heard starts them over. */
	CU_ASSERT_EQUAL(pp_gbn_tx_timer(&t, pp_gbn_tx_expiry(&t), 5), PP_GBN_PROBE);
	CU_ASSERT_EQUAL(t.tries, 1);
	pp_gbn_tx_heard(&t);
	CU_ASSERT_EQUAL(t.tries, 0);
}

/* What the receiver owes, as the engine asks it. */
static void test_obj_owes(void)
{
	struct pp_gbn_rx x;
	memset(&x, 0, sizeof(x));
	CU_ASSERT_FALSE(pp_gbn_rx_owes(&x));
	CU_ASSERT_FALSE(pp_gbn_rx_owes_ack(&x));
	pp_gbn_rx_take(&x, 1000, 20, 16, 0);
	CU_ASSERT_TRUE(pp_gbn_rx_owes_ack(&x));
	CU_ASSERT_FALSE(pp_gbn_rx_ack_due(&x, 1000));
	pp_gbn_rx_owe_now(&x); /* a PING */
	CU_ASSERT_TRUE(pp_gbn_rx_ack_due(&x, 1000));
	pp_gbn_rx_acked(&x);
	CU_ASSERT_FALSE(pp_gbn_rx_owes(&x));
	CU_ASSERT_EQUAL(pp_gbn_rx_check(&x, 9), PP_GBN_GAP);
	CU_ASSERT_TRUE(pp_gbn_rx_owes(&x));
	CU_ASSERT_FALSE(pp_gbn_rx_owes_ack(&x)); /* a NACK, not an ack */
	pp_gbn_rx_forget(&x);
	CU_ASSERT_FALSE(pp_gbn_rx_owes(&x));
	CU_ASSERT_FALSE(pp_gbn_rx_nack_due(&x));
}

static CU_TestInfo tests[] = {
    {"small sends complete from a copy", test_copied_sends},
    {"ping: live peer acks, silent peer lost", test_ping},
    {"a small send with a pulled part waits", test_uncopied_small},
    {"NACK on a gap", test_nack_on_gap},
    {"window and retransmission timeout", test_window_and_rto},
    {"timeout probe, then the rest", test_probe_then_rest},
    {"delayed, cumulative, every-N acks", test_acks},
    {"duplicate dropped and re-acked", test_duplicate},
    {"RTO back-off and peer loss", test_backoff_and_loss},
    {"slow receiver is not lost", test_slow_receiver_not_lost},
    {"lossy soak, every mode, 0/1/30 %", test_soak},
    {"gbn sender alone: send, ack, NACK, probe, back-off, loss, wrap", test_obj_sender},
    {"gbn sender alone: a probe answered past itself", test_obj_probe_slow_receiver},
    {"gbn receiver alone: next, duplicate, gap, acks due", test_obj_receiver},
    {"gbn sender alone: a daemon's runs, restart, resend read first", test_obj_runs},
    {"gbn receiver alone: what is owed", test_obj_owes},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"proto_gbn", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
