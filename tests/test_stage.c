/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prediction staging: the staging pool (congruence, budget, reuse), the
 * copy-or-remap helper (remap only into private anonymous memory and only
 * when congruent), and the engine's staging hooks over the in-process link:
 * staged late messages with speculative pulls, every byte checked, a receive
 * that comes while the pull is under way, truncation, the budget, and
 * pushed-buffer eviction by predicted position (PULL with AGAIN).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cu_main.h"
#include "pp_compiler.h"
#include "staging.h"
#include "test_proto_harness.h"

#define PAGE 4096u

/* ---- the pool ---- */

static void test_alloc_congruent(void)
{
	struct pp_stage s;
	CU_ASSERT_EQUAL_FATAL(pp_stage_init(&s, 64 * 1024, -1, 0), 0);
	CU_ASSERT_EQUAL(s.size, 64 * 1024);
	uint8_t *a = pp_stage_alloc(&s, 100, 0x1234);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(((uintptr_t)a ^ 0x1234) & 63, 0);
	uint8_t *b = pp_stage_alloc(&s, 3 * PAGE, 0x7000123);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(((uintptr_t)b ^ 0x7000123) & (PAGE - 1), 0);
	uint8_t *c = pp_stage_alloc(&s, 5000, 0x40); /* < 2 pages: line only */
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(((uintptr_t)c ^ 0x40) & 63, 0);
	/* Blocks do not overlap: fill each, then check each. */
	memset(a, 0xA1, 100);
	memset(b, 0xB2, 3 * PAGE);
	memset(c, 0xC3, 5000);
	for (size_t i = 0; i < 100; i++)
		CU_ASSERT_EQUAL_FATAL(a[i], 0xA1);
	for (size_t i = 0; i < 3 * PAGE; i++)
		CU_ASSERT_EQUAL_FATAL(b[i], 0xB2);
	for (size_t i = 0; i < 5000; i++)
		CU_ASSERT_EQUAL_FATAL(c[i], 0xC3);
	CU_ASSERT(s.used >= 100 + 3 * PAGE + 5000);
	CU_ASSERT_EQUAL(pp_stage_free(&s, b), 0);
	CU_ASSERT_EQUAL(pp_stage_free(&s, b), -EINVAL);
	CU_ASSERT_EQUAL(pp_stage_free(&s, a + 1), -EINVAL);
	CU_ASSERT_EQUAL(pp_stage_free(&s, a), 0);
	CU_ASSERT_EQUAL(pp_stage_free(&s, c), 0);
	CU_ASSERT_EQUAL(s.used, 0);
	CU_ASSERT_EQUAL(s.nblk, 0);
	CU_ASSERT_PTR_NULL(pp_stage_alloc(&s, 0, 0));
	CU_ASSERT_PTR_NULL(pp_stage_alloc(&s, 64 * 1024 + 1, 0));
	pp_stage_fini(&s);
}

static void test_alloc_budget(void)
{
	struct pp_stage s;
	CU_ASSERT_EQUAL_FATAL(pp_stage_init(&s, 32 * 1024, -1, 0), 0);
	void *held[64];
	unsigned n = 0;
	while (n < 64 && (held[n] = pp_stage_alloc(&s, 1000, n * 7u)) != NULL) {
		CU_ASSERT(s.used <= s.size);
		n++;
	}
	CU_ASSERT(n >= 28 && n <= 32); /* 1024-byte spans, some lost to congruence */
	CU_ASSERT(s.peak <= s.size);
	/* A hole in the middle is found again. */
	CU_ASSERT_EQUAL(pp_stage_free(&s, held[n / 2]), 0);
	void *again = pp_stage_alloc(&s, 900, (uintptr_t)held[n / 2]);
	CU_ASSERT_PTR_EQUAL(again, held[n / 2]);
	CU_ASSERT_PTR_NULL(pp_stage_alloc(&s, 2000, 0));
	pp_stage_fini(&s);

	/* Budget 0: staging off. */
	CU_ASSERT_EQUAL_FATAL(pp_stage_init(&s, 0, -1, 0), 0);
	CU_ASSERT_PTR_NULL(pp_stage_alloc(&s, 1, 0));
	pp_stage_fini(&s);

	/* The block table bounds the count too. */
	CU_ASSERT_EQUAL_FATAL(pp_stage_init(&s, 1u << 20, -1, 0), 0);
	unsigned m = 0;
	while (pp_stage_alloc(&s, 64, 0))
		m++;
	CU_ASSERT_EQUAL(m, PP_STAGE_MAX_BLOCKS);
	pp_stage_fini(&s);
}

/* ---- copy or remap ---- */

static void fill_seed(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7u + seed + (i >> 12));
}

static int check_seed(const uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 7u + seed + (i >> 12)))
			return 0;
	return 1;
}

static void test_remap(void)
{
	struct pp_stage s;
	CU_ASSERT_EQUAL_FATAL(pp_stage_init(&s, 1u << 20, -1, 1), 0); /* 2 pages */
	size_t maplen = 64 * PAGE;
	uint8_t *map =
	    mmap(NULL, maplen + PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(map != MAP_FAILED);
	CU_ASSERT_EQUAL_FATAL(munmap(map + maplen, PAGE), 0); /* a hole after it */
	memset(map, 0x5A, maplen);
	CU_ASSERT_EQUAL(pp_stage_anon_private((uintptr_t)map, maplen), 1);

	/* Congruent: the whole pages move, head and tail are copied. */
	uint8_t *dst = map + 100;
	size_t n = 40000, head = PAGE - 100, whole = (n - head) / PAGE;
	uint8_t *blk = pp_stage_alloc(&s, n, (uintptr_t)dst);
	CU_ASSERT_PTR_NOT_NULL_FATAL(blk);
	fill_seed(blk, n, 1);
	CU_ASSERT_EQUAL(pp_stage_place(&s, dst, blk, n), whole);
	CU_ASSERT_TRUE(check_seed(dst, n, 1));
	CU_ASSERT_EQUAL(map[99], 0x5A); /* around it: untouched */
	CU_ASSERT_EQUAL(map[100 + n], 0x5A);
	CU_ASSERT_EQUAL(map[maplen - 1], 0x5A);
	/* The pool got fresh pages in place: the block is usable again. */
	fill_seed(blk, n, 2);
	CU_ASSERT_TRUE(check_seed(blk, n, 2));
	CU_ASSERT_TRUE(check_seed(dst, n, 1)); /* and no longer shared with dst */
	CU_ASSERT_EQUAL(pp_stage_free(&s, blk), 0);

	/* Again into the same buffer (cached region), a larger message. */
	n = 48 * PAGE;
	blk = pp_stage_alloc(&s, n, (uintptr_t)map);
	CU_ASSERT_PTR_NOT_NULL_FATAL(blk);
	fill_seed(blk, n, 3);
	CU_ASSERT_EQUAL(pp_stage_place(&s, map, blk, n), 48);
	CU_ASSERT_TRUE(check_seed(map, n, 3));
	CU_ASSERT_EQUAL(pp_stage_free(&s, blk), 0);

	/* Not congruent modulo the page: copied. */
	n = 40000;
	blk = pp_stage_alloc(&s, n, (uintptr_t)map + 1024);
	CU_ASSERT_PTR_NOT_NULL_FATAL(blk);
	fill_seed(blk, n, 4);
	CU_ASSERT_EQUAL(pp_stage_place(&s, map + 64, blk, n), 0);
	CU_ASSERT_TRUE(check_seed(map + 64, n, 4));
	CU_ASSERT_EQUAL(pp_stage_free(&s, blk), 0);

	/* Shared memory is never remapped over. */
	uint8_t *shr =
	    mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(shr != MAP_FAILED);
	CU_ASSERT_EQUAL(pp_stage_anon_private((uintptr_t)shr, maplen), 0);
	blk = pp_stage_alloc(&s, n, (uintptr_t)shr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(blk);
	fill_seed(blk, n, 5);
	CU_ASSERT_EQUAL(pp_stage_place(&s, shr, blk, n), 0);
	CU_ASSERT_TRUE(check_seed(shr, n, 5));
	CU_ASSERT_EQUAL(pp_stage_free(&s, blk), 0);

	/* Nor the stack, nor a span running past its mapping. */
	uint8_t local[64];
	CU_ASSERT_EQUAL(pp_stage_anon_private((uintptr_t)local, sizeof(local)), 0);
	CU_ASSERT_EQUAL(pp_stage_anon_private((uintptr_t)map, maplen + PAGE), 0);

	/* Memory outside the pool: a plain copy. */
	uint8_t *src = malloc(3 * PAGE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(src);
	fill_seed(src, 3 * PAGE, 6);
	CU_ASSERT_EQUAL(pp_stage_place(&s, map + 8 * PAGE, src, 3 * PAGE), 0);
	CU_ASSERT_TRUE(check_seed(map + 8 * PAGE, 3 * PAGE, 6));
	free(src);
	munmap(shr, maplen);
	munmap(map, maplen);
	pp_stage_fini(&s);
}

/* ---- the engine's hooks ---- */

/* A stand-in predictor: tag t is expected at position pos[t] (-1: not). */
struct hooks {
	struct pp_stage pool; /* staging memory */
	int pos[64];	      /* position of each tag among the next receives */
	uintptr_t dst[64];    /* destination each tag is aimed at */
	unsigned staged;      /* blocks given out */
	unsigned unstaged;    /* blocks given back */
};

static int h_ahead(void *arg, uint32_t src, uint64_t tag)
{
	struct hooks *k = arg;
	(void)src;
	return tag < 64 ? k->pos[tag] : -1;
}

static void *h_stage(void *arg, uint32_t src, uint64_t tag, uint64_t len)
{
	struct hooks *k = arg;
	if (h_ahead(arg, src, tag) < 0)
		return NULL;
	void *b = pp_stage_alloc(&k->pool, (size_t)len, k->dst[tag]);
	k->staged += b != NULL;
	return b;
}

static void h_unstage(void *arg, void *blk)
{
	struct hooks *k = arg;
	CU_ASSERT_EQUAL(pp_stage_free(&k->pool, blk), 0);
	k->unstaged++;
}

static uint64_t h_place(void *arg, void *dst, const void *blk, uint64_t n)
{
	struct hooks *k = arg;
	return pp_stage_place(&k->pool, dst, blk, (size_t)n);
}

/* A pool of budget bytes, nothing expected; returns the engine's hooks. */
static struct pp_proto_hooks hooks_init(struct hooks *k, size_t budget)
{
	memset(k, 0, sizeof(*k));
	CU_ASSERT_EQUAL(pp_stage_init(&k->pool, budget, -1, 2 * PAGE), 0);
	for (int i = 0; i < 64; i++)
		k->pos[i] = -1;
	return (struct pp_proto_hooks){.stage = h_stage,
				       .unstage = h_unstage,
				       .stage_place = h_place,
				       .stage_ahead = h_ahead,
				       .arg = k};
}

/* Two engines; rank 1 stages with k's pool of budget bytes. */
static void staged_net(struct net *net, const struct pp_proto_conf *conf, struct hooks *k,
		       size_t budget)
{
	struct pp_proto_hooks h = hooks_init(k, budget);
	CU_ASSERT_EQUAL_FATAL(net_init_with(net, 2, conf, 1, &h), 0);
}

static int one_cpl(struct pp_proto *e, uint64_t cookie, int error, uint64_t len)
{
	struct pp_proto_cpl c;
	return pp_proto_poll(e, &c) == 1 && c.cookie == cookie && c.error == error && c.len == len;
}

/* A late message expected next: staged whole before its receive, which then
 * completes at once. The block is aimed at aim (rbuf: page remap possible in
 * page memory; rbuf + 64: never). */
static void staged_one(uint64_t len, uint8_t *rbuf, uint8_t *aim, int expect_remap)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct net net;
	struct hooks k;
	staged_net(&net, &conf, &k, 4u << 20);
	k.pos[5] = 0;
	k.dst[5] = (uintptr_t)aim;
	uint8_t *sbuf = malloc(len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sbuf);
	pat_fill(sbuf, len, (uint32_t)len);
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 5, sbuf, len, 1), 0);
	net_run(&net, 1000000000);
	struct pp_stats st;
	pp_proto_stats(net.e[1], &st);
	int pulled = len > 760;
	CU_ASSERT_EQUAL(st.staged_msgs, 1);
	CU_ASSERT_EQUAL(st.bytes_staged, len);
	CU_ASSERT_EQUAL(st.spec_pulls, (uint64_t)pulled);
	CU_ASSERT_EQUAL(st.pulls_tx, (uint64_t)pulled);
	CU_ASSERT_EQUAL(st.pushed_buf_peak, 0);
	CU_ASSERT_EQUAL(st.msgs_rx, 0);
	CU_ASSERT_TRUE(one_cpl(net.e[0], 1, 0, len)); /* the send is done already */
	/* The receive: everything is here, it completes in the call. */
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 5, 0, rbuf, len, 2), 0);
	CU_ASSERT_TRUE(one_cpl(net.e[1], 2, 0, len));
	CU_ASSERT_TRUE(pat_check(rbuf, len, (uint32_t)len));
	pp_proto_stats(net.e[1], &st);
	CU_ASSERT_EQUAL(st.late_matches, 1);
	CU_ASSERT_EQUAL(st.pulls_tx, (uint64_t)pulled); /* no second pull */
	if (expect_remap) {
		CU_ASSERT(st.pages_remapped >= len / PAGE - 1);
	} else {
		CU_ASSERT_EQUAL(st.pages_remapped, 0);
	}
	CU_ASSERT_EQUAL(k.staged, 1);
	CU_ASSERT_EQUAL(k.unstaged, 1);
	CU_ASSERT_EQUAL(k.pool.used, 0);
	for (int d = 0; d < PP_DROP_MAX; d++)
		CU_ASSERT_EQUAL(st.drops[d], 0);
	net_run(&net, 1000000000);
	CU_ASSERT_TRUE(pp_proto_idle(net.e[0]));
	CU_ASSERT_TRUE(pp_proto_idle(net.e[1]));
	net_fini(&net);
	pp_stage_fini(&k.pool);
	free(sbuf);
}

static void test_engine_staged(void)
{
	static const uint64_t sizes[] = {1, 80, 700, 760, 761, 5000, 100000};
	for (size_t i = 0; i < PP_ARRAY_SIZE(sizes); i++) {
		uint8_t *r = malloc(sizes[i] + 64);
		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		staged_one(sizes[i], r + 3, r + 3 + 64, 0);
		free(r);
	}
	/* Page memory, page-congruent: the whole pages are remapped. */
	size_t maplen = 80 * PAGE;
	uint8_t *map =
	    mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(map != MAP_FAILED);
	staged_one(64 * PAGE, map, map, 1);
	staged_one(300000, map + 200, map + 200, 1);
	staged_one(300000, map + 200, map + 264, 0); /* aimed elsewhere: copied */
	munmap(map, maplen);
}

static int drop_data(void *arg, unsigned src, unsigned dst, const struct pp_wire_hdr *h)
{
	(void)arg;
	(void)src;
	(void)dst;
	return h->type == PP_WIRE_DATA;
}

/* Not expected: the normal path; expected but over budget: the normal path;
 * a receive that comes while the pull is under way; a short buffer. */
static void test_engine_paths(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	struct net net;
	struct hooks k;
	staged_net(&net, &conf, &k, 16384);
	k.pos[1] = 0;
	k.pos[2] = 1;
	k.pos[3] = 2;
	enum { LEN = 12000 };
	static uint8_t sb[5][LEN], rb[5][LEN];
	for (uint32_t m = 0; m < 5; m++)
		pat_fill(sb[m], LEN, m + 100);
	/* tag 0: not expected; tag 1: staged; tag 2: over the budget. */
	for (uint32_t m = 0; m < 3; m++)
		CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, (int)m, sb[m], LEN, m), 0);
	net_run(&net, 1000000000);
	struct pp_stats st;
	pp_proto_stats(net.e[1], &st);
	CU_ASSERT_EQUAL(st.staged_msgs, 1);
	CU_ASSERT_EQUAL(st.spec_pulls, 1);
	CU_ASSERT_EQUAL(st.bytes_staged, LEN);
	CU_ASSERT_EQUAL(st.pushed_buf_bytes, 2 * 760);
	CU_ASSERT(k.pool.peak <= k.pool.size);
	for (uint32_t m = 0; m < 3; m++)
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, (int)m, 0, rb[m], LEN, m), 0);
	net_run(&net, 1000000000);
	unsigned done = 0;
	struct pp_proto_cpl c;
	while (pp_proto_poll(net.e[1], &c)) {
		CU_ASSERT_EQUAL(c.error, 0);
		done++;
	}
	CU_ASSERT_EQUAL(done, 3);
	for (uint32_t m = 0; m < 3; m++)
		CU_ASSERT_TRUE(pat_check(rb[m], LEN, m + 100));

	/* tag 3 staged, its DATA held back: the receive takes the pushed part
	 * from the block and the DATA lands in the user buffer. */
	net.filter = drop_data;
	CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, 3, sb[3], LEN, 3), 0);
	net_run(&net, 100000);
	pp_proto_stats(net.e[1], &st);
	CU_ASSERT_EQUAL(st.staged_msgs, 2);
	CU_ASSERT_EQUAL(st.spec_pulls, 2);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 3, 0, rb[3], 5000, 3), 0); /* short */
	CU_ASSERT_EQUAL(pp_proto_poll(net.e[1], &c), 0);
	CU_ASSERT_EQUAL(k.pool.used, 0); /* block given back at the match */
	net.filter = NULL;
	net_run(&net, 10000000000ull);
	CU_ASSERT_TRUE(one_cpl(net.e[1], 3, -EMSGSIZE, LEN));
	CU_ASSERT_TRUE(pat_check(rb[3], 5000, 103));
	CU_ASSERT_EQUAL(k.staged, k.unstaged);
	while (pp_proto_poll(net.e[0], &c))
		CU_ASSERT_EQUAL(c.error, 0);
	CU_ASSERT_TRUE(pp_proto_idle(net.e[0]));
	CU_ASSERT_TRUE(pp_proto_idle(net.e[1]));
	net_fini(&net);
	pp_stage_fini(&k.pool);
}

/* Pushed buffer full (credits off): the message expected furthest gives its
 * pushed bytes up, and is pulled whole when its receive comes. */
static void test_engine_evict(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.credits = 0;
	conf.pushbuf_bytes = 16384; /* 64 cells: 16 messages of 80 + 680 pushed */
	struct net net;
	struct hooks k;
	staged_net(&net, &conf, &k, 0); /* no staging memory: eviction only */
	enum { N = 24, LEN = 5000 };
	static uint8_t sb[N][LEN], rb[N][LEN];
	for (int t = 0; t < N; t++)
		k.pos[t] = N - 1 - t; /* the last sent is expected first */
	for (uint32_t m = 0; m < N; m++) {
		pat_fill(sb[m], LEN, m);
		CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, (int)m, sb[m], LEN, m), 0);
	}
	net_run(&net, 1000000000);
	struct pp_stats st, ss;
	pp_proto_stats(net.e[1], &st);
	pp_proto_stats(net.e[0], &ss);
	CU_ASSERT_EQUAL(st.evictions, N - 16);
	CU_ASSERT_EQUAL(st.drops[PP_DROP_NOBUF], 0);
	CU_ASSERT_EQUAL(ss.retransmits, 0);
	CU_ASSERT_EQUAL(st.pushed_buf_bytes, 16 * 760);
	CU_ASSERT_EQUAL(st.staged_msgs, 0);
	/* Tags 0..7 (expected furthest) gave their bytes up: receiving one
	 * frees no cell; receiving tag 8 frees its 760 bytes. */
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 0, 0, rb[0], LEN, 0), 0);
	pp_proto_stats(net.e[1], &st);
	CU_ASSERT_EQUAL(st.pushed_buf_bytes, 16 * 760);
	CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, 8, 0, rb[8], LEN, 8), 0);
	pp_proto_stats(net.e[1], &st);
	CU_ASSERT_EQUAL(st.pushed_buf_bytes, 15 * 760);
	for (uint32_t m = 1; m < N; m++) {
		if (m != 8)
			CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, (int)m, 0, rb[m], LEN, m), 0);
	}
	net_run(&net, 10000000000ull);
	unsigned seen[N] = {0};
	struct pp_proto_cpl c;
	while (pp_proto_poll(net.e[1], &c)) {
		CU_ASSERT_FATAL(c.cookie < N);
		CU_ASSERT_EQUAL(c.error, 0);
		CU_ASSERT_EQUAL(c.len, LEN);
		seen[c.cookie]++;
	}
	for (uint32_t m = 0; m < N; m++) {
		CU_ASSERT_EQUAL(seen[m], 1);
		CU_ASSERT_TRUE(pat_check(rb[m], LEN, m));
	}
	while (pp_proto_poll(net.e[0], &c))
		CU_ASSERT_EQUAL(c.error, 0);
	pp_proto_stats(net.e[1], &st);
	pp_proto_stats(net.e[0], &ss);
	CU_ASSERT_EQUAL(st.pushed_buf_bytes, 0);
	CU_ASSERT_EQUAL(ss.pulls_served, N);
	/* The evicted messages came again whole: 8 x 760 bytes more. */
	CU_ASSERT_EQUAL(ss.bytes_tx, (uint64_t)N * LEN + (N - 16) * 760);
	CU_ASSERT_EQUAL(ss.retransmits, 0);
	CU_ASSERT_TRUE(pp_proto_idle(net.e[0]));
	CU_ASSERT_TRUE(pp_proto_idle(net.e[1]));
	net_fini(&net);
	pp_stage_fini(&k.pool);
}

/* Drops every 29th frame (a deterministic lossy link). */
static int drop_some(void *arg, unsigned src, unsigned dst, const struct pp_wire_hdr *h)
{
	unsigned *n = arg;
	(void)src;
	(void)dst;
	(void)h;
	return ++*n % 29 == 0;
}

/* Move at most max frames from engine src to engine dst (no timers). */
static void net_step(struct net *net, unsigned src, unsigned max)
{
	int len;
	while (max-- &&
	       (len = pp_proto_output(net->e[src], net->frame, sizeof(net->frame), net->now)) > 0)
		pp_proto_input(net->e[net->frame[5]], net->frame, (size_t)len, net->now);
}

/* More messages than the window, frames of several messages interleaved, a
 * shuffled prediction, receives in another order, with and without loss, and
 * receives posted part-way: victims may hold part of their pushed bytes, a
 * send may be rewound before its pushes are all out, and every byte arrives. */
static void evict_mixed(int lossy, unsigned early_frames)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.credits = 0;
	conf.pushbuf_bytes = 16384;
	struct net net;
	struct hooks k;
	staged_net(&net, &conf, &k, 0);
	unsigned drops = 0;
	if (lossy) {
		net.filter = drop_some;
		net.arg = &drops;
	}
	enum { N = 60, LEN = 3000 };
	static uint8_t sb[N][LEN], rb[N][LEN];
	for (int t = 0; t < N; t++)
		k.pos[t] = t % 3 == 0 ? -1 : (t * 37) % N; /* some not expected at all */
	for (uint32_t m = 0; m < N; m++) {
		pat_fill(sb[m], LEN, m + 7);
		CU_ASSERT_EQUAL(pp_proto_send(net.e[0], 1, (int)m, sb[m], LEN, m), 0);
	}
	struct pp_stats st, ss;
	if (early_frames) {
		/* Receives come while most pushed frames are not sent yet: a
		 * PULL with AGAIN then finds its send part-way through its
		 * pushes. */
		net_step(&net, 0, early_frames);
		pp_proto_stats(net.e[1], &st);
		CU_ASSERT(st.evictions > 0);
	} else {
		net_run(&net, 1000000000);
		pp_proto_stats(net.e[1], &st);
		CU_ASSERT(st.evictions >= N - 16);
	}
	if (!lossy)
		CU_ASSERT_EQUAL(st.drops[PP_DROP_NOBUF], 0);
	CU_ASSERT(st.pushed_buf_peak <= 16384);
	for (uint32_t j = 0; j < N; j++) {
		uint32_t m = (j * 7 + 3) % N;
		CU_ASSERT_EQUAL(pp_proto_recv(net.e[1], 0, (int)m, 0, rb[m], LEN, m), 0);
	}
	net_run(&net, 100000000000ull);
	unsigned seen[N] = {0};
	struct pp_proto_cpl c;
	while (pp_proto_poll(net.e[1], &c)) {
		CU_ASSERT_FATAL(c.cookie < N);
		CU_ASSERT_EQUAL(c.error, 0);
		seen[c.cookie]++;
	}
	for (uint32_t m = 0; m < N; m++) {
		CU_ASSERT_EQUAL(seen[m], 1);
		CU_ASSERT_TRUE(pat_check(rb[m], LEN, m + 7));
	}
	unsigned sent = 0;
	while (pp_proto_poll(net.e[0], &c)) {
		CU_ASSERT_EQUAL(c.error, 0);
		sent++;
	}
	CU_ASSERT_EQUAL(sent, N);
	pp_proto_stats(net.e[1], &st);
	pp_proto_stats(net.e[0], &ss);
	CU_ASSERT_EQUAL(st.pushed_buf_bytes, 0);
	CU_ASSERT_EQUAL(ss.pulls_served, N);
	if (lossy)
		CU_ASSERT(net.dropped > 0);
	CU_ASSERT_TRUE(pp_proto_idle(net.e[0]));
	CU_ASSERT_TRUE(pp_proto_idle(net.e[1]));
	net_fini(&net);
	pp_stage_fini(&k.pool);
}

static void test_engine_evict_mixed(void)
{
	evict_mixed(0, 0);
	evict_mixed(1, 0);
	evict_mixed(0, 90);
}

/* The staging hooks are all given or none. */
static void test_set_stage_errors(void)
{
	struct pp_proto_conf conf;
	pp_proto_conf_default(&conf);
	conf.nranks = 2;
	struct pp_proto *e = NULL;
	conf.hooks = (struct pp_proto_hooks){
	    .stage = h_stage, .unstage = h_unstage, .stage_ahead = h_ahead}; /* no stage_place */
	CU_ASSERT_EQUAL(pp_proto_create(&e, &conf), -EINVAL);
	CU_ASSERT_PTR_NULL(e);
	conf.hooks.stage_place = h_place;
	CU_ASSERT_EQUAL_FATAL(pp_proto_create(&e, &conf), 0);
	pp_proto_destroy(e);
}

static CU_TestInfo stage_tests[] = {
    {"pool: congruent blocks", test_alloc_congruent},
    {"pool: budget and block table", test_alloc_budget},
    {"remap: congruent anonymous pages only", test_remap},
    {"engine: staged late messages", test_engine_staged},
    {"engine: unexpected, over budget, partial, short", test_engine_paths},
    {"engine: eviction by predicted position", test_engine_evict},
    {"engine: eviction, interleaved and lossy", test_engine_evict_mixed},
    {"engine: hook errors", test_set_stage_errors},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"stage", NULL, NULL, NULL, NULL, stage_tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
