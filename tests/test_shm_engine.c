/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine with intranode peers (docs/protocol.md, rule 6): two
 * engines whose frames go through pp_proto_output_local, with a direct hook
 * that copies from the sender's published buffer, as the runtime's does
 * through the segment. Early and late receivers, every mode, BTP with a
 * second push, truncation, a hook that fails at once or after some chunks
 * (the rest comes as DATA), and a peer that dies. Lite messages: small
 * messages written whole into a modelled ring, in order with the sequenced
 * frames, held at its head when the receiver has no room. Split copies: the
 * sender writes the first half of a long chunk while the receiver copies the
 * second, or never does and the receiver copies it too. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "pp_eth.h"
#include "test_proto_harness.h"
#include "engine.h"
#include "wire.h"

#define SLOTS		 64
#define PP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A published send. */
struct pub {
	const uint8_t *buf; /* sender's buffer */
	uint64_t len;	    /* its length */
	uint32_t msg_id;    /* the message */
	int valid;	    /* published */
};

static struct world {
	struct pp_proto *e[2];	  /* engine of rank 0 and 1 */
	struct pub pub[2][SLOTS]; /* [sender][msg_id % SLOTS] */
	int fail_from;		  /* direct calls before they fail (-1: never) */
	int calls;		  /* direct calls made */
	uint64_t copied;	  /* bytes they copied */
	int published;		  /* publish calls */
	uint8_t frame[4300];	  /* scratch: a frame at MTU 4200 */
	uint64_t now;		  /* virtual time */
} w;

static int hook_direct(void *arg, uint32_t src, uint32_t msg_id, uint64_t off, void *dst,
		       uint64_t len)
{
	(void)arg;
	struct pub *p = &w.pub[src][msg_id % SLOTS];
	if (!p->valid || p->msg_id != msg_id || off + len > p->len)
		return -ENOENT;
	if (w.fail_from >= 0 && w.calls >= w.fail_from)
		return -EPERM;
	w.calls++;
	memcpy(dst, p->buf + off, len);
	w.copied += len;
	return 0;
}

static void hook_publish(void *arg, uint32_t dst, uint32_t msg_id, const void *buf, uint64_t len)
{
	uint32_t src = (uint32_t)(uintptr_t)arg;
	(void)dst;
	w.pub[src][msg_id % SLOTS] = (struct pub){buf, len, msg_id, 1};
	w.published++;
}

/* A fresh world, and c the engines' defaults with its hooks. */
static void world_conf(struct pp_proto_conf *c)
{
	memset(&w, 0, sizeof(w));
	w.fail_from = -1;
	w.now = 1000;
	pp_proto_conf_default(c);
	c->hooks.direct = hook_direct;
	c->hooks.publish = hook_publish;
}

static void world_init(enum pp_proto_mode mode, uint32_t btp1, uint32_t btp2, uint64_t chunk)
{
	struct pp_proto_conf c;
	world_conf(&c);
	c.mode = mode;
	c.direct_chunk = chunk;
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &c, btp1, btp2), 0);
}

static void world_fini(void)
{
	pp_proto_destroy(w.e[0]);
	pp_proto_destroy(w.e[1]);
}

/* Move frames both ways, and run timers, until nothing has happened for a
 * few rounds; returns the frames moved. */
static unsigned pump(void)
{
	int n = local_pump(w.e, w.frame, sizeof(w.frame), &w.now, 1);
	CU_ASSERT_FATAL(n >= 0);
	return (unsigned)n;
}

static int take(uint32_t i, struct pp_proto_cpl *c)
{
	return pp_proto_poll(w.e[i], c);
}

/* One message of n bytes from 0 to 1, the receive posted before (early) or
 * after (late) the pushes arrive, into a buffer of cap bytes (r has 16 more,
 * to see that nothing is written past it). Returns the
 * receive's completion error. */
/* The send flags one() gives (pp_proto_sendf). */
static unsigned send_flags;

static int one(uint64_t n, uint64_t cap, int late, unsigned seed, uint8_t *s, uint8_t *r)
{
	struct pp_proto_cpl c;
	pat_fill(s, n, seed);
	memset(r, 0xEE, cap + 16);
	if (!late)
		CU_ASSERT_EQUAL_FATAL(pp_proto_recv(w.e[1], 0, 5, 0, r, cap, 2), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_sendf(w.e[0], 1, 5, s, n, 0, send_flags, 1), 0);
	pump();
	if (late) {
		CU_ASSERT_EQUAL(pp_proto_probe(w.e[1], 0, 5, 0, &c), 1);
		CU_ASSERT_EQUAL_FATAL(pp_proto_recv(w.e[1], 0, 5, 0, r, cap, 2), 0);
		pump();
	}
	CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
	CU_ASSERT(c.cookie == 2 && !c.is_send && c.len == n && c.source == 0);
	int err = c.error;
	uint64_t k = n < cap ? n : cap;
	CU_ASSERT(pat_check(r, k, seed));
	CU_ASSERT_EQUAL(r[cap], 0xEE); /* nothing past the buffer */
	CU_ASSERT_EQUAL_FATAL(take(0, &c), 1);
	CU_ASSERT(c.cookie == 1 && c.is_send && c.error == 0 && c.len == n);
	CU_ASSERT_EQUAL(take(0, &c) + take(1, &c), 0);
	CU_ASSERT(pp_proto_idle(w.e[0]) && pp_proto_idle(w.e[1]));
	return err;
}

static const uint64_t sizes[] = {0, 1, 15, 16, 17, 31, 32, 33, 1000, 65536, 65537, 3u << 20};

/* Single copy: everything past the pushes is copied by the receiver; the
 * sender frames only the pushes. Every mode, early and late. */
static void test_direct(void)
{
	static uint8_t s[(3u << 20) + 64], r[(3u << 20) + 64];
	for (int mode = 0; mode < 3; mode++) {
		world_init((enum pp_proto_mode)mode, 16, 0, 1u << 20);
		for (size_t k = 0; k < PP_ARRAY_SIZE(sizes); k++)
			for (int late = 0; late < 2; late++) {
				uint64_t n = sizes[k];
				struct pp_stats a, b;
				pp_proto_stats(w.e[0], &a);
				uint64_t copied = w.copied;
				CU_ASSERT_EQUAL(one(n, n, late, (unsigned)(k + late), s, r), 0);
				pp_proto_stats(w.e[0], &b);
				uint64_t push = mode == PP_PROTO_PUSH_ALL    ? n
						: mode == PP_PROTO_PUSH_ZERO ? 0
						: n < 16		     ? n
									     : 16;
				CU_ASSERT_EQUAL(b.bytes_tx - a.bytes_tx, push);
				CU_ASSERT_EQUAL(w.copied - copied, n - push);
			}
		struct pp_stats st;
		pp_proto_stats(w.e[1], &st);
		CU_ASSERT_EQUAL(st.msgs_rx, 2 * PP_ARRAY_SIZE(sizes));
		CU_ASSERT_EQUAL(st.drops[PP_DROP_STATE], 0);
		world_fini();
	}
}

/* BTP 16 + 16: the copy waits for the second push, early or late. */
static void test_second_push(void)
{
	static uint8_t s[100000], r[100000 + 16];
	world_init(PP_PROTO_PUSH_PULL, 16, 16, 1u << 20);
	for (int late = 0; late < 2; late++) {
		uint64_t copied = w.copied;
		CU_ASSERT_EQUAL(one(100000, 100000, late, 3, s, r), 0);
		CU_ASSERT_EQUAL(w.copied - copied, 100000 - 32);
	}
	struct pp_stats st;
	pp_proto_stats(w.e[1], &st);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_STATE], 0);
	world_fini();
}

/* A receive buffer shorter than the message: the copy stops at its end. */
static void test_truncated(void)
{
	static uint8_t s[300000], r[300000 + 16];
	world_init(PP_PROTO_PUSH_PULL, 16, 0, 65536);
	uint64_t caps[] = {8, 16, 20, 70000, 299999};
	for (size_t k = 0; k < PP_ARRAY_SIZE(caps); k++)
		for (int late = 0; late < 2; late++)
			CU_ASSERT_EQUAL(one(300000, caps[k], late, 9, s, r), -EMSGSIZE);
	world_fini();
}

/* The hook fails at once (cross-memory attach refused) or after two chunks:
 * the PULL asks for what is missing and it comes as DATA frames. */
static void test_fallback(void)
{
	static uint8_t s[1u << 20], r[(1u << 20) + 16];
	for (int after = 0; after <= 2; after += 2)
		for (int late = 0; late < 2; late++) {
			world_init(PP_PROTO_PUSH_PULL, 16, 0, 100000);
			w.fail_from = after;
			struct pp_stats a;
			CU_ASSERT_EQUAL(one(sizeof(s), sizeof(s), late, 4, s, r), 0);
			CU_ASSERT_EQUAL(w.copied, (uint64_t)after * 100000);
			pp_proto_stats(w.e[0], &a);
			CU_ASSERT_EQUAL(a.bytes_tx, sizeof(s) - w.copied);
			CU_ASSERT_EQUAL(a.pulls_served, 1);
			/* And the next message too. */
			CU_ASSERT_EQUAL(one(5000, 5000, !late, 6, s, r), 0);
			world_fini();
		}
}

/* Fewer bytes than direct_min left after the pushes: DATA frames, no copy
 * call; at direct_min and above: one copy. */
static void test_direct_min(void)
{
	static uint8_t s[5000], r[5000 + 16];
	world_init(PP_PROTO_PUSH_PULL, 16, 0, 1u << 20);
	pp_proto_destroy(w.e[1]);
	struct pp_proto_conf c;
	pp_proto_conf_default(&c);
	c.rank = 1;
	c.nranks = 2;
	c.job = 0x5eed; /* local_pair's */
	c.inc = net_inc(1);
	c.mac[5] = 1;
	c.hooks.direct = hook_direct;
	c.hooks.publish = hook_publish;
	c.hooks.arg = (void *)(uintptr_t)1;
	c.direct_chunk = 1u << 20;
	c.direct_min = 1000;
	uint8_t mac[6] = {0};
	CU_ASSERT_EQUAL_FATAL(pp_proto_create(&w.e[1], &c), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_peer_add(w.e[1], 0, mac, net_inc(0)), 0);
	CU_ASSERT_EQUAL_FATAL(pp_proto_peer_local(w.e[1], 0, 16, 0), 0);
	for (int late = 0; late < 2; late++) {
		CU_ASSERT_EQUAL(one(1015, 1015, late, 1, s, r), 0); /* 999 left */
		CU_ASSERT_EQUAL(w.calls, 0);
		CU_ASSERT_EQUAL(one(1016, 1016, late, 2, s, r), 0); /* 1000 left */
		CU_ASSERT_EQUAL(w.calls, 1);
		CU_ASSERT_EQUAL(w.copied, 1000);
		w.calls = 0;
		w.copied = 0;
	}
	world_fini();
}

/* BTP fitted (btp_fit): a message whose rest after the pushes would be too
 * short for a direct copy, no longer than local_whole, or from local_stream
 * on, is pushed whole, with no PULL round trip; else nothing is pushed and
 * one copy takes it all. One from a buffer node-mates map
 * (PP_PROTO_SEND_SHARED) is never streamed.
 * With btp_fit off the rest is pulled as DATA, or copied. */
static void test_fit(void)
{
	static uint8_t s[40000], r[40000 + 16];
	for (int cfg = 0; cfg < 5; cfg++) {
		int fit = cfg > 0;
		uint64_t lw = cfg == 2 ? 32768 : 0;
		uint64_t ls = cfg >= 3 ? 20000 : 0;
		send_flags = cfg == 4 ? PP_PROTO_SEND_SHARED : 0;
		struct pp_proto_conf c;
		world_conf(&c);
		c.direct_min = 4096;
		c.btp_fit = fit;
		c.local_whole = lw;
		c.local_stream = ls;
		CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &c, 16, 744), 0);
		for (int late = 0; late < 2; late++) {
			struct pp_stats a, b;
			const uint64_t sz[] = {2000, 4855, 4856, 20000, 40000};
			for (size_t k = 0; k < PP_ARRAY_SIZE(sz); k++) {
				pp_proto_stats(w.e[1], &a);
				w.calls = 0;
				w.copied = 0;
				CU_ASSERT_EQUAL(one(sz[k], sz[k], late, (unsigned)k, s, r), 0);
				pp_proto_stats(w.e[1], &b);
				int whole = fit && (sz[k] - 760 < 4096 || sz[k] <= lw ||
						    (ls && sz[k] >= ls && !send_flags));
				int copied = !whole && sz[k] - 760 >= 4096;
				CU_ASSERT_EQUAL(b.pulls_tx - a.pulls_tx, whole ? 0u : 1u);
				CU_ASSERT_EQUAL(w.calls, copied ? 1u : 0u);
				/* Fitted, a copied message pushed nothing: one copy
				 * takes it all. */
				CU_ASSERT_EQUAL(w.copied, !copied ? 0 : fit ? sz[k] : sz[k] - 760);
			}
		}
		world_fini();
	}
	send_flags = 0;
}

/* The eager bound (proto/send.c): to a node-mate a message pushed whole
 * completes at once up to copy_max_local, not up to copy_max; above it the
 * send completes when the receiver has it. */
static void test_eager_local(void)
{
	static uint8_t s[12288], r[12288 + 16];
	struct pp_proto_conf c;
	world_conf(&c);
	c.btp_fit = 1;
	c.direct_min = 1u << 20; /* every message here pushed whole */
	c.local_whole = 65536;	 /* as a job raises it where copy calls are dear */
	c.copy_max = 32768;
	c.copy_max_local = 8192;
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &c, 16, 744), 0);
	const uint64_t sz[] = {8192, 8193, 12288};
	for (size_t k = 0; k < PP_ARRAY_SIZE(sz); k++) {
		struct pp_proto_cpl cpl;
		pat_fill(s, sz[k], (unsigned)k);
		memset(r, 0xEE, sizeof(r));
		CU_ASSERT_EQUAL_FATAL(pp_proto_recv(w.e[1], 0, 5, 0, r, sz[k], 2), 0);
		CU_ASSERT_EQUAL_FATAL(pp_proto_send(w.e[0], 1, 5, s, sz[k], 1), 0);
		int at_once = take(0, &cpl) == 1;
		CU_ASSERT_EQUAL(at_once, sz[k] <= 8192);
		pump();
		if (!at_once)
			CU_ASSERT_EQUAL(take(0, &cpl), 1);
		CU_ASSERT_EQUAL(cpl.cookie, 1);
		CU_ASSERT_EQUAL(cpl.error, 0);
		CU_ASSERT_EQUAL_FATAL(take(1, &cpl), 1);
		CU_ASSERT_EQUAL(cpl.len, sz[k]);
		CU_ASSERT(pat_check(r, sz[k], (unsigned)k));
		CU_ASSERT_EQUAL(r[sz[k]], 0xEE);
	}
	world_fini();
}

/* Many messages outstanding both ways, matched in order. */
static void test_many(void)
{
	enum { N = 40 };
	static uint8_t s[2][N][9000], r[2][N][9000];
	world_init(PP_PROTO_PUSH_PULL, 16, 0, 4096);
	for (uint32_t i = 0; i < 2; i++)
		for (int k = 0; k < N; k++) {
			uint64_t n = 1000 + (uint64_t)k * 200;
			pat_fill(s[i][k], n, (unsigned)(i * 100 + k));
			if (k % 2)
				CU_ASSERT_EQUAL(pp_proto_recv(w.e[1 - i], (int)i, 0,
							      PP_PROTO_IGNORE_ALL, r[i][k], 9000,
							      1000 + (uint64_t)k),
						0);
			CU_ASSERT_EQUAL(pp_proto_send(w.e[i], 1 - i, k, s[i][k], n, (uint64_t)k),
					0);
		}
	pump();
	for (uint32_t i = 0; i < 2; i++)
		for (int k = 0; k < N; k += 2)
			CU_ASSERT_EQUAL(pp_proto_recv(w.e[1 - i], (int)i, 0, PP_PROTO_IGNORE_ALL,
						      r[i][k], 9000, 1000 + (uint64_t)k),
					0);
	pump();
	int got[2] = {0, 0};
	struct pp_proto_cpl c;
	for (uint32_t j = 0; j < 2; j++)
		while (take(j, &c)) {
			CU_ASSERT_EQUAL(c.error, 0);
			if (c.is_send)
				continue;
			/* Odd receives were posted first, so in order; the even
			 * ones then take the rest in arrival order. */
			uint32_t i = 1 - j;
			int k = (int)(c.cookie - 1000);
			CU_ASSERT_EQUAL(c.len, 1000 + (uint64_t)c.tag * 200);
			CU_ASSERT(pat_check(r[i][k], c.len, (unsigned)(i * 100 + c.tag)));
			got[j]++;
		}
	CU_ASSERT(got[0] == N && got[1] == N);
	world_fini();
}

/* pp_proto_send_late: a small send to a node-mate completes at once, its
 * frames copied from the user's buffer; pp_proto_settle makes the eager copy,
 * and from then on nothing reads that buffer: a frame lost before settle
 * comes again with the bytes as they were at the send, whatever the buffer
 * holds since. Settled before its frames, the same. */
static void test_send_late(void)
{
	static uint8_t s[500], want[500], r[600], lost[2000];
	struct pp_proto_cpl c;
	for (int early_settle = 0; early_settle < 2; early_settle++) {
		world_init(PP_PROTO_PUSH_PULL, 16, 744, 4096);
		pat_fill(s, sizeof(s), 7 + (unsigned)early_settle);
		memcpy(want, s, sizeof(s));
		CU_ASSERT_EQUAL_FATAL(pp_proto_send_late(w.e[0], 1, 5, s, sizeof(s), 1), 0);
		CU_ASSERT_EQUAL_FATAL(take(0, &c), 1); /* eager: complete at once */
		CU_ASSERT(c.cookie == 1 && c.is_send && c.error == 0 && c.len == sizeof(s));
		if (early_settle) {
			pp_proto_settle(w.e[0]);
		} else {
			/* Its frames leave from s (the first push, then the
			 * rest), read until settle, and are lost on the way. */
			s[100] ^= 0xFF;
			want[100] ^= 0xFF;
			int n, frames = 0;
			while ((n = pp_proto_output_local(w.e[0], 1, lost, sizeof(lost), w.now)) >
			       0)
				frames++;
			CU_ASSERT_EQUAL(n, 0);
			CU_ASSERT_EQUAL(frames, 2);
			pp_proto_settle(w.e[0]);
		}
		memset(s, 0x5A, sizeof(s)); /* the user's buffer is the user's again */
		pp_proto_settle(w.e[0]);    /* nothing left: no copy again */
		memset(r, 0xEE, sizeof(r));
		CU_ASSERT_EQUAL_FATAL(pp_proto_recv(w.e[1], 0, 5, 0, r, sizeof(r), 2), 0);
		pump(); /* sent again (go-back-N) from the copy */
		CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
		CU_ASSERT(c.cookie == 2 && !c.is_send && c.error == 0 && c.len == sizeof(s));
		CU_ASSERT_EQUAL(memcmp(r, want, sizeof(s)), 0);
		CU_ASSERT_EQUAL(r[sizeof(s)], 0xEE);
		CU_ASSERT(pp_proto_idle(w.e[0]) && pp_proto_idle(w.e[1]));
		world_fini();
	}
}

/* A local peer that died: its sends and posted receives fail at once. */
static void test_fail(void)
{
	static uint8_t s[100000], r[10];
	world_init(PP_PROTO_PUSH_PULL, 16, 0, 1u << 20);
	/* Busy: nothing at first; a whole small message waiting unreceived is
	 * not; a big one with bytes still at the sender is. */
	CU_ASSERT(!pp_proto_peer_busy(w.e[0], 1) && !pp_proto_peer_busy(w.e[1], 0));
	CU_ASSERT_EQUAL(pp_proto_send(w.e[1], 0, 9, s, 10, 7), 0);
	pump();
	CU_ASSERT(!pp_proto_peer_busy(w.e[0], 1) && !pp_proto_peer_busy(w.e[1], 0));
	CU_ASSERT_EQUAL(pp_proto_send(w.e[1], 0, 9, s, 1000, 8), 0);
	pump();
	CU_ASSERT(pp_proto_peer_busy(w.e[0], 1) && pp_proto_peer_busy(w.e[1], 0));
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(take(1, &c), 1); /* the small send */
	pp_proto_destroy(w.e[1]);
	w.e[1] = NULL;
	/* It died: its unfinished message goes, a send to it fails at once. */
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 1, s, sizeof(s), 1), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[0], 1, 2, 0, r, sizeof(r), 2), 0);
	CU_ASSERT(pp_proto_output_local(w.e[0], 1, w.frame, sizeof(w.frame), w.now) > 0);
	CU_ASSERT(pp_proto_peer_busy(w.e[0], 1));
	pp_proto_peer_fail(w.e[0], 1);
	CU_ASSERT(pp_proto_peer_lost(w.e[0], 1));
	CU_ASSERT(!pp_proto_peer_busy(w.e[0], 1));
	int n = 0;
	while (take(0, &c)) {
		CU_ASSERT_EQUAL(c.error, -ECONNRESET);
		n++;
	}
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 1, s, 1, 3), -ECONNRESET);
	CU_ASSERT_EQUAL(pp_proto_output_local(w.e[0], 1, w.frame, sizeof(w.frame), w.now), 0);
	CU_ASSERT_EQUAL(pp_proto_output_local(w.e[0], 0, w.frame, sizeof(w.frame), w.now), -EINVAL);
	world_fini();
}

/* A frame in a node-mate's ring that names another source is dropped (a
 * hostile node-mate cannot speak for another rank of the node). */
static void test_ring_owner(void)
{
	world_init(PP_PROTO_PUSH_PULL, 16, 0, 1u << 20);
	static uint8_t s[10], r[10];
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 3, 0, r, sizeof(r), 1), 0);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 3, s, sizeof(s), 2), 0);
	int len = pp_proto_output_local(w.e[0], 1, w.frame, sizeof(w.frame), w.now);
	CU_ASSERT_FATAL(len > 0);
	struct pp_stats st;
	pp_proto_stats(w.e[1], &st);
	uint64_t before = st.drops[PP_DROP_RANK];
	CU_ASSERT_EQUAL(pp_proto_input_local(w.e[1], 5, w.frame, (size_t)len, w.now), -EPROTO);
	pp_proto_stats(w.e[1], &st);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_RANK], before + 1);
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(pp_proto_poll(w.e[1], &c), 0); /* nothing matched */
	CU_ASSERT_EQUAL(pp_proto_input_local(w.e[1], 0, w.frame, (size_t)len, w.now), 0);
	CU_ASSERT_EQUAL(pp_proto_poll(w.e[1], &c), 1);
	world_fini();
}

/* ---- lite messages (rule 6) ---- */

/* Each direction's ring: lite records and sequenced frames in one FIFO. */
#define RING_RECS 512
static struct ring {
	uint8_t rec[RING_RECS][4300]; /* a frame at MTU 4200 at most */
	uint32_t len[RING_RECS];
	unsigned head, tail;
	unsigned lites; /* lite records committed */
} q[2];

static void *lite_reserve(void *arg, uint32_t dst, uint32_t len)
{
	struct ring *r = &q[(uintptr_t)arg];
	(void)dst;
	if (r->tail - r->head == RING_RECS || len > sizeof(r->rec[0]))
		return NULL;
	return r->rec[r->tail % RING_RECS];
}

static void lite_commit(void *arg, uint32_t dst, uint32_t len)
{
	struct ring *r = &q[(uintptr_t)arg];
	(void)dst;
	r->len[r->tail++ % RING_RECS] = len;
	r->lites++;
}

/* A fresh world and the node-mates' settings with the lite rings' hooks:
 * the caller changes what its test needs, then calls local_pair. */
static void lite_conf(struct pp_proto_conf *c)
{
	memset(&w, 0, sizeof(w));
	memset(q, 0, sizeof(q));
	w.fail_from = -1;
	w.now = 1000;
	node_mate_conf(c);
	c->hooks.direct = hook_direct;
	c->hooks.publish = hook_publish;
	c->hooks.lite_reserve = lite_reserve;
	c->hooks.lite_commit = lite_commit;
	c->mtu = 1500;
	c->lite_max = 1024; /* the tests' bound; the job's is test_lite_job_bound's */
}

static void lite_init(uint32_t max_recvs, uint32_t pushbuf)
{
	struct pp_proto_conf c;
	lite_conf(&c);
	if (max_recvs)
		c.max_recvs = max_recvs;
	if (pushbuf)
		c.pushbuf_bytes = pushbuf;
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &c, 16, 744), 0);
}

/* Frames into the rings behind what is there, then each ring into its
 * reader in order, up to a record it holds back (-EAGAIN); timers run.
 * Until nothing moves for a few rounds. Returns the records taken. */
static unsigned ring_pump(void)
{
	unsigned taken = 0;
	for (int quiet = 0; quiet < 8;) {
		int moved = 0;
		for (uint32_t i = 0; i < 2; i++) {
			pp_proto_handle_expiry(w.e[i], w.now);
			struct ring *r = &q[i];
			int len;
			while (r->tail - r->head < RING_RECS &&
			       (len = pp_proto_output_local(w.e[i], 1 - i, w.frame, sizeof(w.frame),
							    w.now)) > 0) {
				memcpy(r->rec[r->tail % RING_RECS], w.frame, (size_t)len);
				r->len[r->tail++ % RING_RECS] = (uint32_t)len;
			}
			while (r->head != r->tail) {
				int rc =
				    pp_proto_input_local(w.e[1 - i], i, r->rec[r->head % RING_RECS],
							 r->len[r->head % RING_RECS], w.now);
				if (rc == -EAGAIN)
					break;
				r->head++;
				taken++;
				moved = 1;
			}
		}
		w.now += 1000;
		quiet = moved ? 0 : quiet + 1;
	}
	return taken;
}

/* Small messages (0 B to lite_max, with immediate data or not) go as one
 * record each and complete at once; the receiver matches them early or
 * late, bytes and data intact; a message one byte longer goes sequenced. */
static void test_lite(void)
{
	static uint8_t s[2000], r[2100];
	static const uint64_t n[] = {0, 1, 8, 100, 1023, 1024};
	struct pp_proto_cpl c;
	for (int late = 0; late < 2; late++) {
		lite_init(0, 0);
		for (size_t k = 0; k < PP_ARRAY_SIZE(n); k++) {
			pat_fill(s, n[k], (unsigned)k);
			memset(r, 0xEE, sizeof(r));
			if (!late)
				CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 9, 0, r, 1024, 2), 0);
			unsigned before = q[0].lites;
			CU_ASSERT_EQUAL(
			    pp_proto_send_data(w.e[0], 1, 9, s, n[k], 0xabc0u + (uint32_t)k, 1), 0);
			CU_ASSERT_EQUAL(q[0].lites, before + 1);
			CU_ASSERT_EQUAL(take(0, &c), 1); /* done at once */
			CU_ASSERT(c.is_send && c.cookie == 1 && c.len == n[k] && !c.error);
			memset(s, 0x55, n[k]);		 /* the record holds its own copy */
			CU_ASSERT_EQUAL(ring_pump(), 1); /* the record, and nothing back */
			if (late) /* its credit is announced: an ACK goes back */
				CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 9, 0, r, 1024, 2), 0);
			CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
			CU_ASSERT(!c.is_send && c.cookie == 2 && c.len == n[k] && !c.error);
			CU_ASSERT(c.has_data && c.data == 0xabc0u + (uint32_t)k);
			CU_ASSERT(pat_check(r, n[k], (unsigned)k));
			CU_ASSERT_EQUAL(r[n[k]], 0xEE);
			CU_ASSERT_EQUAL(ring_pump(), late && n[k] ? 1u : 0u);
			CU_ASSERT(pp_proto_idle(w.e[0]) && pp_proto_idle(w.e[1]));
		}
		/* Longer than lite_max, or to a truncating receive. */
		unsigned before = q[0].lites;
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 9, 0, r, 2000, 2), 0);
		CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 9, s, 1025, 1), 0);
		CU_ASSERT_EQUAL(q[0].lites, before);
		ring_pump();
		CU_ASSERT_EQUAL(take(1, &c), 1);
		CU_ASSERT(c.len == 1025 && !c.error);
		CU_ASSERT_EQUAL(take(0, &c), 1);
		memset(r, 0xEE, sizeof(r));
		pat_fill(s, 100, 77);
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 9, 0, r, 10, 2), 0);
		CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 9, s, 100, 1), 0);
		ring_pump();
		CU_ASSERT_EQUAL(take(1, &c), 1);
		CU_ASSERT(c.len == 100 && c.error == -EMSGSIZE);
		CU_ASSERT(pat_check(r, 10, 77)); /* what fits, and not a byte more */
		CU_ASSERT_EQUAL(r[10], 0xEE);
		world_fini();
	}
}

/* A lite reply carries the ack of what it answers: a sequenced send
 * completes when the reply's record comes in, no standalone ACK behind it
 * (no timer runs here, so none would be due). */
static void test_lite_carries_ack(void)
{
	static uint8_t s[4000], r[4000], small[40], got[40];
	struct pp_proto_cpl c;
	struct pp_stats st;
	struct pp_proto_conf conf;
	lite_conf(&conf);
	conf.copy_max = 0; /* the send completes on its ack, not on a copy */
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &conf, 16, 744), 0);
	pat_fill(s, sizeof(s), 5);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 3, 0, r, sizeof(r), 2), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[0], 1, 4, 0, got, sizeof(got), 3), 0);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 3, s, sizeof(s), 1), 0);
	CU_ASSERT_EQUAL(q[0].lites, 0u);
	int len, frames = 0;
	while ((len = pp_proto_output_local(w.e[0], 1, w.frame, sizeof(w.frame), w.now)) > 0) {
		CU_ASSERT_EQUAL(pp_proto_input_local(w.e[1], 0, w.frame, (size_t)len, w.now), 0);
		frames++;
	}
	CU_ASSERT(frames > 0);
	CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
	CU_ASSERT(c.cookie == 2 && c.len == sizeof(s) && pat_check(r, sizeof(s), 5));
	CU_ASSERT_EQUAL(take(0, &c), 0); /* unacknowledged yet */
	/* The reply, as a lite record: its ack releases the send. */
	pat_fill(small, sizeof(small), 6);
	CU_ASSERT_EQUAL(pp_proto_send_data(w.e[1], 0, 4, small, sizeof(small), 0xd00d, 4), 0);
	CU_ASSERT_EQUAL_FATAL(q[1].lites, 1u);
	/* An ack was owed: ack, credit and the data, and a message longer
	 * than what fits the first line beside them. */
	CU_ASSERT_EQUAL(q[1].rec[0][1], PP_WIRE_LITE_ACK | PP_WIRE_LITE_DATA);
	CU_ASSERT_EQUAL(q[1].len[0], PP_WIRE_LITE_HDR + PP_WIRE_LITE_ACK_LEN +
					 PP_WIRE_LITE_DATA_LEN + sizeof(small));
	CU_ASSERT_EQUAL(pp_proto_input_local(w.e[0], 1, q[1].rec[0], q[1].len[0], w.now), 0);
	int sent = 0, received = 0;
	while (take(0, &c)) {
		CU_ASSERT_EQUAL(c.error, 0);
		sent += c.is_send && c.cookie == 1;
		received += !c.is_send && c.cookie == 3 && c.has_data && c.data == 0xd00d &&
			    pat_check(got, sizeof(got), 6);
	}
	CU_ASSERT_EQUAL(sent, 1);
	CU_ASSERT_EQUAL(received, 1);
	pp_proto_stats(w.e[1], &st);
	CU_ASSERT_EQUAL(st.acks_tx, 0u);
	world_fini();
}

/* An ack in a lite record opens the sender's window: its link must look
 * again (pp_proto_local_take), or the rest of the message would wait for
 * the retransmission timer. */
static void test_lite_ack_opens_window(void)
{
	static uint8_t s[8000], r[8000], small[8], got[8];
	struct pp_proto_cpl c;
	struct pp_proto_conf conf;
	lite_conf(&conf);
	conf.copy_max = 0;
	conf.window = 2;
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &conf, 16, 744), 0);
	pat_fill(s, sizeof(s), 7);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 3, 0, r, sizeof(r), 2), 0);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[0], 1, 4, 0, got, sizeof(got), 3), 0);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 3, s, sizeof(s), 1), 0);
	int len, frames = 0;
	while ((len = pp_proto_output_local(w.e[0], 1, w.frame, sizeof(w.frame), w.now)) > 0) {
		CU_ASSERT_EQUAL(pp_proto_input_local(w.e[1], 0, w.frame, (size_t)len, w.now), 0);
		frames++;
	}
	CU_ASSERT_EQUAL(frames, 2); /* the window is shut */
	CU_ASSERT_EQUAL(take(1, &c), 0);
	pp_proto_local_take(w.e[0]);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[1], 0, 4, small, sizeof(small), 4), 0);
	CU_ASSERT_EQUAL_FATAL(q[1].lites, 1u);
	CU_ASSERT(q[1].rec[0][1] & PP_WIRE_LITE_ACK);
	CU_ASSERT_EQUAL(pp_proto_input_local(w.e[0], 1, q[1].rec[0], q[1].len[0], w.now), 0);
	CU_ASSERT_EQUAL(pp_proto_local_take(w.e[0]), 1);
	CU_ASSERT(pp_proto_output_local(w.e[0], 1, w.frame, sizeof(w.frame), w.now) > 0);
	world_fini();
}

/* A lite send with PP_PROTO_SEND_NOW is done in the call: 1 returned, its
 * record in the ring, no completion on the sending side; the receiver gets
 * every byte and its immediate data. Without the flag one completion comes. */
static void test_lite_send_now(void)
{
	static uint8_t s[100], r[2][100];
	struct pp_proto_cpl c;
	lite_init(0, 0);
	pat_fill(s, sizeof(s), 7);
	for (int k = 0; k < 2; k++)
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 9, 0, r[k], sizeof(r[k]), 20 + k), 0);
	CU_ASSERT_EQUAL(pp_proto_sendf(w.e[0], 1, 9, s, sizeof(s), 0xAB,
				       PP_PROTO_SEND_NOW | PP_PROTO_SEND_DATA, 1),
			1);
	CU_ASSERT_EQUAL(q[0].lites, 1u);
	CU_ASSERT_EQUAL(take(0, &c), 0);
	CU_ASSERT_EQUAL(pp_proto_sendf(w.e[0], 1, 9, s, sizeof(s), 0, 0, 2), 0);
	CU_ASSERT_EQUAL(q[0].lites, 2u);
	CU_ASSERT_EQUAL_FATAL(take(0, &c), 1);
	CU_ASSERT(c.is_send && c.cookie == 2 && c.error == 0);
	CU_ASSERT_EQUAL(take(0, &c), 0);
	ring_pump();
	for (int k = 0; k < 2; k++) {
		CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
		CU_ASSERT(c.cookie == 20u + (unsigned)k && c.len == sizeof(s) && c.error == 0);
		CU_ASSERT_EQUAL(c.has_data, !k);
		CU_ASSERT_EQUAL(c.data, k ? 0u : 0xABu);
		CU_ASSERT(pat_check(r[k], sizeof(s), 7));
	}
	CU_ASSERT_TRUE(pp_proto_idle(w.e[0]));
	world_fini();
}

/* Lite and sequenced messages mixed (small, large, small...): matched in the
 * order they were sent, by receives for any tag, posted before and after. */
static void test_lite_order(void)
{
	enum { N = 60 };
	static uint8_t s[N][20000], r[N][20000];
	struct pp_proto_cpl c;
	for (int late = 0; late < 2; late++) {
		lite_init(0, 0);
		for (int k = 0; k < N; k++) {
			uint64_t n = k % 5 == 2 ? 20000 : (uint64_t)(k * 13) % 1024;
			pat_fill(s[k], n, (unsigned)k);
			if (!late)
				CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 0, PP_PROTO_IGNORE_ALL,
							      r[k], 20000, 100 + (uint64_t)k),
						0);
			CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, (uint64_t)k, s[k], n, 1), 0);
			if (k % 7 == 0)
				ring_pump(); /* some acked before the next, some not */
		}
		CU_ASSERT(q[0].lites >= 5 && q[0].lites < N); /* both kinds */
		ring_pump();
		if (late)
			for (int k = 0; k < N; k++)
				CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 0, PP_PROTO_IGNORE_ALL,
							      r[k], 20000, 100 + (uint64_t)k),
						0);
		ring_pump();
		int got = 0;
		while (take(1, &c)) {
			int k = (int)(c.cookie - 100);
			CU_ASSERT_EQUAL(c.tag, (uint64_t)k); /* the k-th receive took the k-th */
			CU_ASSERT(!c.error && pat_check(r[k], c.len, (unsigned)k));
			got++;
		}
		CU_ASSERT_EQUAL(got, N);
		world_fini();
	}
}

/* A receiver with room for 2 messages: the third lite record waits at the
 * head of the ring (what is behind it too), and comes in as receives take
 * the others: none lost, none out of order. Credit spent: the rest goes
 * sequenced, in order too. */
static void test_lite_held(void)
{
	enum { N = 6 };
	static uint8_t s[N][64], r[N][64];
	struct pp_proto_cpl c;
	lite_init(2, 0);
	for (int k = 0; k < N; k++) {
		pat_fill(s[k], 64, (unsigned)k);
		CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 7, s[k], 64, 1), 0);
	}
	CU_ASSERT_EQUAL(q[0].lites, N);
	CU_ASSERT_EQUAL(ring_pump(), 2); /* two unexpected, the rest held */
	CU_ASSERT_EQUAL(q[0].tail - q[0].head, N - 2);
	for (int k = 0; k < N; k++) {
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 7, 0, r[k], 64, 10 + (uint64_t)k), 0);
		ring_pump();
		CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
		CU_ASSERT(c.cookie == 10 + (uint64_t)k && c.len == 64 && !c.error);
		CU_ASSERT(pat_check(r[k], 64, (unsigned)k));
	}
	CU_ASSERT_EQUAL(q[0].head, q[0].tail);
	world_fini();

	/* 2 cells of credit (a 512-byte pushed buffer): two lites spend them,
	 * the next ones go sequenced until credit comes back. */
	lite_init(0, 512);
	for (int k = 0; k < N; k++)
		CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 7, s[k], 64, 1), 0);
	CU_ASSERT_EQUAL(q[0].lites, 2);
	for (int k = 0; k < N; k++) {
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 7, 0, r[k], 64, 10 + (uint64_t)k), 0);
		ring_pump();
	}
	for (int k = 0; k < N; k++) {
		CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
		CU_ASSERT(c.cookie == 10 + (uint64_t)k && !c.error &&
			  pat_check(r[k], 64, (unsigned)k));
	}
	world_fini();
}

/* Receive-queue hooks that only count (no sender writes): what the engine
 * publishes, takes back and withdraws. */
static int rq_posted, rq_taken, rq_withdrawn;
static uint32_t rq_next_posted, rq_id_taken; /* the last entry's message numbers */
static int rq_post_count(void *arg, uint32_t src, uint64_t tag, uint64_t ignore, void *buf,
			 uint64_t cap, uint32_t msg_next)
{
	(void)arg, (void)src, (void)tag, (void)ignore, (void)buf, (void)cap;
	rq_next_posted = msg_next;
	return rq_posted++;
}
static int rq_take_count(void *arg, uint32_t src, int slot, uint32_t msg_id, int written)
{
	(void)arg, (void)src, (void)slot;
	CU_ASSERT_FALSE(written);
	rq_id_taken = msg_id;
	rq_taken++;
	return 0;
}
static int rq_withdraw_count(void *arg, uint32_t src, int slot)
{
	(void)arg, (void)src, (void)slot;
	rq_withdrawn++;
	return 0;
}
static int rq_write_none(void *arg, uint32_t dst, uint32_t msg_id, uint64_t tag, const void *buf,
			 uint64_t len)
{
	(void)arg, (void)dst, (void)msg_id, (void)tag, (void)buf, (void)len;
	return -ENOTSUP;
}

/* A lite pair whose receive-queue hooks only count, with receives longer
 * than what is pushed whole published (a job's engine: not). */
static void rq_count_pair(void)
{
	rq_posted = rq_taken = rq_withdrawn = 0;
	struct pp_proto_conf conf;
	lite_conf(&conf);
	conf.hooks.rq_post = rq_post_count;
	conf.hooks.rq_take = rq_take_count;
	conf.hooks.rq_withdraw = rq_withdraw_count;
	conf.hooks.rq_write = rq_write_none;
	conf.write_rest = 1;
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &conf, 16, 744), 0);
}

/* A lite record leaves its message number out: the receiver counts it, one
 * after the last message that began, sequenced or lite. Each lite message
 * here meets a receive published to the sender with the number the
 * receiver expects next, and takes it back with the number it counted:
 * the two agree, after a sequenced message and after a lite one. */
static void test_lite_counted(void)
{
	static uint8_t s[4000], r[4000], big[64 << 10];
	struct pp_proto_cpl c;
	rq_count_pair();
	pat_fill(s, sizeof(s), 1);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 3, 0, r, sizeof(r), 2), 0);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 3, s, sizeof(s), 1), 0); /* message 0 */
	ring_pump();
	CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
	CU_ASSERT(c.len == sizeof(s) && !c.error && pat_check(r, sizeof(r), 1));
	w.now += 100 * 1000 * 1000; /* past the ack's delay: the sender hears it */
	ring_pump();
	while (take(0, &c))
		CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_EQUAL(q[0].lites, 0u);
	for (uint32_t k = 1; k <= 2; k++) { /* messages 1 and 2, lite */
		pat_fill(s, 64, 10 + k);
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 3, 0, big, sizeof(big), 2), 0);
		CU_ASSERT_EQUAL(rq_posted, (int)k);
		CU_ASSERT_EQUAL(rq_next_posted, k);
		CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 3, s, 64, 1), 0);
		CU_ASSERT_EQUAL(q[0].lites, k);
		ring_pump();
		CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
		CU_ASSERT(c.len == 64 && !c.error && pat_check(big, 64, 10 + k));
		CU_ASSERT_EQUAL(rq_taken, (int)k);
		CU_ASSERT_EQUAL(rq_id_taken, k);
		while (take(0, &c))
			CU_ASSERT_EQUAL(c.error, 0);
	}
	struct pp_stats st;
	pp_proto_stats(w.e[1], &st);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_STATE], 0u);
	world_fini();
}

/* A lite message for a receive the engine published to its sender (longer
 * than what is pushed whole): the published entry is taken back before the
 * receive completes, so the sender can never write into it afterwards; a
 * receive no longer than that is not published and completes at once. */
static void test_lite_published(void)
{
	static uint8_t s[64], big[64 << 10], small[64];
	struct pp_proto_cpl c;
	rq_count_pair();
	pat_fill(s, 64, 5);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 3, 0, big, sizeof(big), 2), 0);
	CU_ASSERT_EQUAL(rq_posted, 1);
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 3, s, 64, 1), 0);
	CU_ASSERT_EQUAL(q[0].lites, 1);
	ring_pump();
	CU_ASSERT_EQUAL(take(1, &c), 1);
	CU_ASSERT(c.cookie == 2 && c.len == 64 && !c.error && pat_check(big, 64, 5));
	CU_ASSERT_EQUAL(rq_taken, 1); /* taken back as it matched */
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 3, 0, small, sizeof(small), 3), 0);
	CU_ASSERT_EQUAL(rq_posted, 1); /* pushed whole: not published */
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 3, s, 64, 1), 0);
	ring_pump();
	CU_ASSERT_EQUAL(take(1, &c), 1);
	CU_ASSERT(c.cookie == 3 && c.len == 64 && !c.error && pat_check(small, 64, 5));
	CU_ASSERT_EQUAL(rq_taken, 1);
	CU_ASSERT_EQUAL(rq_withdrawn, 0);
	world_fini();
}

/* lite_max above one frame's payload (MTU 576: 500 bytes): a message
 * longer than a frame goes sequenced, whole and intact, not as a record the
 * receiver would drop. */
static void test_lite_frame_bound(void)
{
	static uint8_t s[1024], r[1024];
	struct pp_proto_cpl c;
	struct pp_proto_conf conf;
	lite_conf(&conf);
	conf.mtu = 576;
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &conf, 16, 744), 0);
	for (int k = 0; k < 2; k++) {
		uint64_t n = k ? 501 : 500;
		pat_fill(s, n, (unsigned)k);
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 4, 0, r, sizeof(r), 2), 0);
		CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 4, s, n, 1), 0);
		CU_ASSERT_EQUAL(q[0].lites, 1u); /* 500 B as a record, 501 B not */
		ring_pump();
		CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
		CU_ASSERT(c.len == n && !c.error && pat_check(r, n, (unsigned)k));
		while (take(0, &c))
			CU_ASSERT_EQUAL(c.error, 0);
	}
	world_fini();
}

/* The job's bound (pp_proto_conf_job): 4 KiB go as one record where a frame
 * holds them, 4 KiB and a byte sequenced. */
static void test_lite_job_bound(void)
{
	static uint8_t s[4097], r[4097];
	struct pp_proto_cpl c;
	struct pp_proto_conf conf, job;
	pp_proto_conf_job(&job);
	CU_ASSERT_EQUAL(job.lite_max, 4096u);
	lite_conf(&conf);
	conf.lite_max = job.lite_max;
	conf.mtu = 4200;
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &conf, 16, 744), 0);
	for (int k = 0; k < 2; k++) {
		uint64_t n = k ? 4097 : 4096;
		pat_fill(s, n, (unsigned)k + 3);
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 4, 0, r, sizeof(r), 2), 0);
		CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 4, s, n, 1), 0);
		CU_ASSERT_EQUAL(q[0].lites, 1u); /* 4096 B as a record, 4097 B not */
		ring_pump();
		CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
		CU_ASSERT(c.len == n && !c.error && pat_check(r, n, (unsigned)k + 3));
		while (take(0, &c))
			CU_ASSERT_EQUAL(c.error, 0);
	}
	world_fini();
}

/* A ping-pong of lite messages: a record carries ack and credit only when
 * a quarter of the share came back since the last that did (16 cells of
 * 256 bytes: every fourth message of one cell), and the credit so told is
 * enough that every message goes lite, bytes intact. */
static void test_lite_credit_news(void)
{
	enum { N = 100 };
	static uint8_t s[64], r[64];
	struct pp_proto_cpl c;
	lite_init(0, 16 * 256); /* proto/pushbuf.h: 256-byte cells */
	unsigned told[2] = {0, 0}, got = 0;
	for (int k = 0; k < 2 * N; k++) {
		uint32_t from = (uint32_t)k & 1, to = 1 - from;
		pat_fill(s, sizeof(s), (unsigned)k);
		CU_ASSERT_EQUAL(pp_proto_recv(w.e[to], from, 5, 0, r, sizeof(r), 2), 0);
		CU_ASSERT_EQUAL(pp_proto_send(w.e[from], to, 5, s, sizeof(s), 1), 0);
		CU_ASSERT_EQUAL_FATAL(q[from].lites, (unsigned)k / 2 + 1);
		const uint8_t *rec = q[from].rec[(q[from].tail - 1) % RING_RECS];
		told[from] += (rec[1] & PP_WIRE_LITE_ACK) != 0;
		CU_ASSERT_EQUAL(ring_pump(), 1);
		while (take(from, &c))
			CU_ASSERT(c.is_send && !c.error);
		CU_ASSERT_EQUAL_FATAL(take(to, &c), 1);
		got += c.len == sizeof(r) && !c.error && pat_check(r, sizeof(r), (unsigned)k);
	}
	CU_ASSERT_EQUAL(got, 2 * N);
	CU_ASSERT_EQUAL(told[1], N / 4);     /* replies 4, 8, ..., 100 */
	CU_ASSERT_EQUAL(told[0], N / 4 - 1); /* sends 5, 9, ..., 97 */
	world_fini();
}

/* A lite record with no news is 16 bytes of header, so a 32-byte message
 * and the ring's record header take one 64-byte cell. It is taken only from
 * a ring: framed for a port it is dropped. From the ring, one whose length
 * disagrees with the record's (its own len, or a flag that says a part is
 * there that is not), or with an unknown flag, is dropped, counted, and
 * completes nothing; the sound one then matches. */
static void test_lite_not_wire(void)
{
	lite_init(0, 0);
	static uint8_t s[8] = {1, 2, 3, 4, 5, 6, 7, 8}, r[8], frame[200], bad[64];
	CU_ASSERT_EQUAL(pp_proto_send(w.e[0], 1, 1, s, 8, 1), 0);
	CU_ASSERT_EQUAL_FATAL(q[0].lites, 1);
	const uint8_t *rec = q[0].rec[0];
	uint32_t len = q[0].len[0];
	CU_ASSERT_EQUAL(rec[0], PP_WIRE_LITE);
	CU_ASSERT_EQUAL(rec[1], 0); /* no data, no news */
	CU_ASSERT_EQUAL(len, PP_WIRE_LITE_HDR + 8);
	/* 32 bytes with immediate data: with the ring's 16-byte record header
	 * (shm/ring.h), one 64-byte cell. */
	static uint8_t s32[32];
	CU_ASSERT_EQUAL(pp_proto_send_data(w.e[0], 1, 2, s32, sizeof(s32), 7, 3), 0);
	CU_ASSERT_EQUAL_FATAL(q[0].lites, 2);
	CU_ASSERT_EQUAL(q[0].rec[1][1], PP_WIRE_LITE_DATA);
	CU_ASSERT(q[0].len[1] + 16 <= 64);
	CU_ASSERT_EQUAL(pp_proto_recv(w.e[1], 0, 1, 0, r, 8, 2), 0);
	/* Framed for a port. */
	uint8_t mac[2][6];
	net_mac(0, mac[0]);
	net_mac(1, mac[1]);
	pp_eth_set_dst(frame, mac[1]);
	pp_eth_set_src(frame, mac[0]);
	pp_eth_set_type(frame, PP_ETH_TYPE_PP);
	memcpy(frame + PP_ETH_HLEN, rec, len);
	CU_ASSERT_EQUAL(pp_proto_input(w.e[1], frame, PP_ETH_HLEN + len, w.now), -EPROTO);
	/* From the ring, broken. */
	struct pp_stats before, after;
	static const struct {
		size_t at;     /* byte changed */
		uint8_t add;   /* added to it */
		int len_delta; /* and the record's length changed by */
		int why;       /* the drop counted */
	} breaks[] = {
	    {2, 1, 0, PP_DROP_LENGTH}, /* len */
	    {0, 0, -1, PP_DROP_LENGTH},
	    {1, PP_WIRE_LITE_ACK, 0, PP_DROP_LENGTH},  /* no room for ack and credit */
	    {1, PP_WIRE_LITE_DATA, 0, PP_DROP_LENGTH}, /* nor for the data */
	    {1, 0x80, 0, PP_DROP_TYPE},		       /* flags */
	    {1, 0x04, 0, PP_DROP_TYPE},
	    {0, 0, -(int)PP_WIRE_LITE_HDR, PP_DROP_SHORT},
	};
	for (size_t i = 0; i < PP_ARRAY_SIZE(breaks); i++) {
		memcpy(bad, rec, len);
		bad[breaks[i].at] = (uint8_t)(bad[breaks[i].at] + breaks[i].add);
		pp_proto_stats(w.e[1], &before);
		CU_ASSERT_EQUAL(
		    pp_proto_input_local(w.e[1], 0, bad, len + breaks[i].len_delta, w.now),
		    -EPROTO);
		pp_proto_stats(w.e[1], &after);
		CU_ASSERT_EQUAL(after.drops[breaks[i].why], before.drops[breaks[i].why] + 1);
	}
	struct pp_proto_cpl c;
	CU_ASSERT_EQUAL(take(1, &c), 0);
	/* The sound record. */
	CU_ASSERT_EQUAL(pp_proto_input_local(w.e[1], 0, rec, len, w.now), 0);
	CU_ASSERT_EQUAL_FATAL(take(1, &c), 1);
	CU_ASSERT(c.error == 0 && !c.is_send && c.len == 8 && !memcmp(r, s, 8));
	world_fini();
}

/* ---- split copies (rule 6, help): a modelled offer table ---- */

#define HELP_POS0 1000 /* the first offer's position: passed on untouched */

static struct {
	int serve;	/* help_serve writes the part (0: leaves the HELP unanswered) */
	int busy;	/* settles that answer -EAGAIN first (the sender still writes) */
	int settle_err; /* settles answer this (0: what the offer's state says) */
	struct {
		uint32_t msg_id;
		uint64_t off, len;
		uint8_t *dst;
		int state; /* 1 offered, 2 written, 3 settled */
	} o[8];
	uint64_t next;		/* offers made */
	int served;		/* parts the sender wrote */
	int written, withdrawn; /* offers settled either way */
	uint64_t bytes;		/* bytes the sender wrote */
} hw;

static int64_t hook_help_offer(void *arg, uint32_t src, uint32_t msg_id, uint64_t off, void *dst,
			       uint64_t len)
{
	(void)arg;
	CU_ASSERT_EQUAL(src, 0);
	uint64_t pos = HELP_POS0 + hw.next++;
	hw.o[pos % 8].msg_id = msg_id;
	hw.o[pos % 8].off = off;
	hw.o[pos % 8].len = len;
	hw.o[pos % 8].dst = dst;
	hw.o[pos % 8].state = 1;
	return (int64_t)pos;
}

static int hook_help_settle(void *arg, uint32_t src, uint64_t pos)
{
	(void)arg;
	(void)src;
	CU_ASSERT_FATAL(pos >= HELP_POS0 && pos < HELP_POS0 + hw.next);
	int *st = &hw.o[pos % 8].state;
	CU_ASSERT(*st == 1 || *st == 2);
	if (hw.busy > 0) {
		hw.busy--;
		return -EAGAIN;
	}
	int was = *st;
	*st = 3;
	if (hw.settle_err)
		return hw.settle_err;
	hw.written += was == 2;
	hw.withdrawn += was == 1;
	return was == 2 ? 0 : 1;
}

static void hook_help_serve(void *arg, uint32_t dst, uint64_t pos, uint32_t msg_id, const void *buf,
			    uint64_t len)
{
	(void)arg;
	CU_ASSERT_EQUAL(dst, 1);
	CU_ASSERT_FATAL(pos >= HELP_POS0 && pos < HELP_POS0 + hw.next);
	CU_ASSERT_EQUAL(hw.o[pos % 8].msg_id, msg_id);
	if (!hw.serve || hw.o[pos % 8].state != 1)
		return;
	CU_ASSERT_FATAL(hw.o[pos % 8].off + hw.o[pos % 8].len <= len);
	memcpy(hw.o[pos % 8].dst, (const uint8_t *)buf + hw.o[pos % 8].off, hw.o[pos % 8].len);
	hw.o[pos % 8].state = 2;
	hw.served++;
	hw.bytes += hw.o[pos % 8].len;
}

/* The world with help hooks: chunks of 1 MiB, split from min bytes. */
static void help_init(int serve, uint64_t min)
{
	struct pp_proto_conf c;
	world_conf(&c);
	memset(&hw, 0, sizeof(hw));
	hw.serve = serve;
	c.direct_chunk = 1u << 20;
	c.help_min = min;
	c.hooks.help_offer = hook_help_offer;
	c.hooks.help_settle = hook_help_settle;
	c.hooks.help_serve = hook_help_serve;
	CU_ASSERT_EQUAL_FATAL(local_pair(w.e, &c, 16, 0), 0);
}

/* Chunks of 1 MiB past the 16 pushed bytes: those of 64 KiB or more are
 * split; the sender writes half of each (a multiple of 4 KiB), the receiver
 * copies the rest. Early and late, bytes checked. */
static void test_help(void)
{
	static uint8_t s[(3u << 20) + 64], r[(3u << 20) + 64];
	static const uint64_t n[] = {65535 + 16, 65536 + 16, 200001, (3u << 20) + 5};
	static const int parts[] = {0, 1, 1, 3};
	help_init(1, 65536);
	for (size_t k = 0; k < PP_ARRAY_SIZE(n); k++)
		for (int late = 0; late < 2; late++) {
			int served = hw.served;
			uint64_t copied = w.copied, bytes = hw.bytes;
			CU_ASSERT_EQUAL(one(n[k], n[k], late, (unsigned)(k * 2 + late), s, r), 0);
			CU_ASSERT_EQUAL(hw.served - served, parts[k]);
			CU_ASSERT(hw.bytes - bytes >= (n[k] - 16) / 2 - 4096 * (uint64_t)parts[k] ||
				  !parts[k]);
			CU_ASSERT_EQUAL(w.copied - copied + hw.bytes - bytes, n[k] - 16);
		}
	CU_ASSERT_EQUAL(hw.written, hw.served);
	CU_ASSERT_EQUAL(hw.withdrawn, 0);
	struct pp_stats st;
	pp_proto_stats(w.e[0], &st);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_STATE], 0);
	world_fini();
}

/* A sender that never answers (busy computing): the receiver withdraws the
 * offer and copies the part itself; one that is still writing when the
 * receiver's half is done: the receiver waits for it. */
static void test_help_unanswered(void)
{
	static uint8_t s[1u << 20], r[(1u << 20) + 16];
	help_init(0, 65536);
	CU_ASSERT_EQUAL(one(sizeof(s), sizeof(s), 0, 11, s, r), 0);
	CU_ASSERT_EQUAL(hw.withdrawn, 1);
	CU_ASSERT_EQUAL(w.copied, sizeof(s) - 16);
	hw.serve = 1;
	hw.busy = 3;
	CU_ASSERT_EQUAL(one(sizeof(s), sizeof(s), 1, 12, s, r), 0);
	CU_ASSERT_EQUAL(hw.busy, 0);
	CU_ASSERT_EQUAL(hw.written, 1);
	world_fini();
}

/* The receiver's own copy fails after the sender wrote its half: the rest
 * comes as DATA from the middle. A broken offer (settle fails): the part is
 * copied again. */
static void test_help_fallback(void)
{
	static uint8_t s[1u << 20], r[(1u << 20) + 16];
	help_init(1, 65536);
	w.fail_from = 0;
	struct pp_stats a;
	CU_ASSERT_EQUAL(one(sizeof(s), sizeof(s), 0, 13, s, r), 0);
	pp_proto_stats(w.e[0], &a);
	CU_ASSERT_EQUAL(hw.written, 1);
	CU_ASSERT_EQUAL(a.bytes_tx, sizeof(s) - hw.bytes);
	CU_ASSERT_EQUAL(a.pulls_served, 1);
	w.fail_from = -1;
	hw.settle_err = -EPROTO;
	uint64_t copied = w.copied;
	CU_ASSERT_EQUAL(one(sizeof(s), sizeof(s), 1, 14, s, r), 0);
	CU_ASSERT_EQUAL(w.copied - copied, sizeof(s) - 16);
	world_fini();
}

/* help_min set under 8 KiB: a chunk with no 4 KiB half is copied whole,
 * nothing offered; one of 8 KiB is split. */
static void test_help_short(void)
{
	static uint8_t s[9000], r[9000 + 16];
	help_init(1, 1);
	CU_ASSERT_EQUAL(one(5000, 5000, 0, 15, s, r), 0);
	CU_ASSERT_EQUAL(hw.next, 0);
	CU_ASSERT_EQUAL(w.copied, 5000 - 16);
	CU_ASSERT_EQUAL(one(8192 + 16, 8192 + 16, 1, 16, s, r), 0);
	CU_ASSERT_EQUAL(hw.served, 1);
	CU_ASSERT_EQUAL(hw.bytes, 4096);
	world_fini();
}

static CU_TestInfo tests[] = {
    {"single copy, every mode, early and late", test_direct},
    {"a second push comes before the copy", test_second_push},
    {"truncated receives", test_truncated},
    {"hook refused at once or later: DATA frames", test_fallback},
    {"too little for a copy call: DATA", test_direct_min},
    {"btp_fit: pushed whole below the direct copy's least", test_fit},
    {"eager to a node-mate up to copy_max_local, not copy_max", test_eager_local},
    {"many outstanding both ways", test_many},
    {"a local peer that died", test_fail},
    {"a late eager copy: frames from the buffer, resent from the copy", test_send_late},
    {"a frame in a ring names its owner", test_ring_owner},
    {"lite: 0 B to lite_max whole in one record, data, early and late", test_lite},
    {"lite and sequenced messages matched in send order", test_lite_order},
    {"lite: a reply's record carries the ack of what it answers", test_lite_carries_ack},
    {"lite: a send with SEND_NOW is done in the call, no completion", test_lite_send_now},
    {"lite: held at the ring's head without room; credit spent", test_lite_held},
    {"lite: never from a port", test_lite_not_wire},
    {"lite: ack and credit ride only when they are news", test_lite_credit_news},
    {"lite: the job's bound, 4 KiB", test_lite_job_bound},
    {"lite: an ack in a record opens the window, and the link looks", test_lite_ack_opens_window},
    {"lite: no record longer than a frame", test_lite_frame_bound},
    {"lite: a published receive is taken back as it matches", test_lite_published},
    {"lite: the message number is the receiver's count", test_lite_counted},
    {"help: the sender writes half of each long chunk", test_help},
    {"help: unanswered, withdrawn; answered late, waited for", test_help_unanswered},
    {"help: own copy or offer fails: DATA, copied again", test_help_fallback},
    {"help: a chunk with no 4 KiB half is copied whole", test_help_short},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"shm_engine", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
