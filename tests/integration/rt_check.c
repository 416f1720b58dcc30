/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_check: integration checks of the runtime over real ports, one process
 * per rank, started by pprun (which sets PP_RANK, PP_SIZE, PP_JOB, PP_DEV).
 * Each scenario prints what it checked and exits non-zero on any mismatch.
 *
 * Ranks are paired across the two halves of the job (r with r + size/2), so
 * with ranks placed in blocks on two nodes every pair crosses the bridge;
 * "many" and "match" involve every rank.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pp.h"

#define BIG ((size_t)(16u << 20) + 3)

static int rank_, size_, failures;
static size_t big_size = BIG;	/* --max-size: the largest message of sizes */
static size_t buf_offset;	/* --offset: sizes' buffers start this far into a page */
static int use_pp_malloc;	/* --pp-malloc: sizes' buffers from pp_malloc */
static const char *expect_copy; /* --expect-copy: direct or frames */

static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			printf("FAIL line %d: %s: ", __LINE__, #cond);                             \
			say(__VA_ARGS__);                                                          \
		}                                                                                  \
	} while (0)

static uint8_t pattern(size_t i, unsigned seed)
{
	return (uint8_t)(i * 7u + seed * 31u + (i >> 9) + (i >> 17));
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(i, seed);
}

/* Index of the first wrong byte, or n when all are right. */
static size_t first_bad(const uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pattern(i, seed))
			return i;
	return n;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "rt_check: out of memory (%zu bytes)\n", n);
		exit(2);
	}
	return p;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Seed of the message of kind k from src to dst: distinct per pair and kind. */
static unsigned seed_of(int src, int dst, int k)
{
	return (unsigned)(src * 1000 + dst * 100 + k);
}

static int partner(void)
{
	return (rank_ + size_ / 2) % size_;
}

static int lower_half(void)
{
	return rank_ < size_ / 2;
}

/* --- sizes: every protocol edge to 16 MiB + 3, both ways -------------------- */

static const size_t sizes[] = {
    0,	  1,	79,    80,    81,    759,   760,     761,	    1440,    1441,
    1500, 4096, 65535, 65536, 65539, 99999, 1 << 20, (1 << 20) + 1, 4 << 20, BIG};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void one_way(pp_ctx *ctx, int sending, size_t n, int k, uint8_t *s, uint8_t *r)
{
	int peer = partner();
	if (sending) {
		fill(s, n, seed_of(rank_, peer, k));
		int rc = pp_send(ctx, s, n, peer, k);
		EXPECT(rc == 0, "send %zu B to %d: %s", n, peer, pp_strerror(rc));
		return;
	}
	pp_status st = {0};
	memset(r, 0xEE, n);
	int rc = pp_recv(ctx, r, n, peer, k, &st);
	EXPECT(rc == 0, "recv %zu B from %d: %s", n, peer, pp_strerror(rc));
	EXPECT(st.len == n && st.source == peer && st.tag == k && st.error == 0,
	       "status of %zu B: len %zu source %d tag %d error %d", n, st.len, st.source, st.tag,
	       st.error);
	size_t bad = first_bad(r, n, seed_of(peer, rank_, k));
	EXPECT(bad == n, "%zu B from %d: byte %zu wrong", n, peer, bad);
}

static void stats(pp_ctx *ctx, struct pp_stats *s);

/* A buffer for sizes: page-aligned process memory, or pp_malloc's. */
static uint8_t *sizes_buf(pp_ctx *ctx, size_t n)
{
	void *p = use_pp_malloc ? pp_malloc(ctx, n) : aligned_alloc(4096, (n + 4095) & ~4095ul);
	if (!p) {
		fprintf(stderr, "rt_check: out of memory (%zu bytes)\n", n);
		exit(2);
	}
	return p;
}

static void sizes_free(pp_ctx *ctx, void *p)
{
	if (use_pp_malloc)
		pp_free(ctx, p);
	else
		free(p);
}

static void sc_sizes(pp_ctx *ctx)
{
	uint8_t *sa = sizes_buf(ctx, big_size + buf_offset),
		*ra = sizes_buf(ctx, big_size + buf_offset);
	uint8_t *s = sa + buf_offset, *r = ra + buf_offset;
	int before = failures;
	struct pp_stats a, b;
	uint64_t sent = 0;
	stats(ctx, &a);
	for (int k = 0; k < (int)NSIZES; k++) {
		size_t n = k == (int)NSIZES - 1 || sizes[k] > big_size ? big_size : sizes[k];
		one_way(ctx, lower_half(), n, k, s, r);
		one_way(ctx, !lower_half(), n, k, s, r);
		sent += n;
	}
	stats(ctx, &b);
	sizes_free(ctx, sa);
	sizes_free(ctx, ra);
	say("sizes: %zu sizes 0 B .. %zu B both ways with rank %d, buffers at page offset %zu%s, "
	    "every byte checked: %s",
	    NSIZES, big_size, partner(), buf_offset, use_pp_malloc ? " from pp_malloc" : "",
	    failures == before ? "ok" : "FAILED");
	if (!expect_copy)
		return;
	/* Bytes the rank put in frames: the pushes only when the receiver
	 * copied the rest straight from our buffer; everything otherwise. */
	uint64_t framed = b.bytes_tx - a.bytes_tx;
	int direct = strcmp(expect_copy, "direct") == 0;
	before = failures;
	EXPECT(direct ? framed * 100 < sent : framed >= sent, "%llu of %llu B sent went in frames",
	       (unsigned long long)framed, (unsigned long long)sent);
	say("sizes: %llu of %llu B sent went in frames (%s): %s", (unsigned long long)framed,
	    (unsigned long long)sent, direct ? "copied straight by the receiver" : "pulled as DATA",
	    failures == before ? "ok" : "FAILED");
}

/* --- many: every rank to every other, many requests outstanding ------------ */

#define MANY_N	  48
#define STORM_N	  64   /* storm: messages each way with every peer */
#define STORM_LEN 3000 /* ... of this size: past the pushes, pulled */

static size_t many_len(int i)
{
	static const size_t base[] = {0, 100, 1500, 3000, 20000, 70000};
	return base[i % 6] + (size_t)i;
}

static size_t storm_len(int i)
{
	(void)i;
	return STORM_LEN;
}

/* nper messages each way with every other rank, message i of len(i) bytes
 * and tag i, all outstanding at once; receives first on half the peers
 * (recv_first_all: on all of them), so some messages find their receive
 * posted and some arrive before it. */
static void exchange_all(pp_ctx *ctx, const char *name, int nper, size_t (*len_of)(int),
			 int recv_first_all)
{
	int npeer = size_ - 1, nreq = 2 * npeer * nper;
	size_t per = 0;
	for (int i = 0; i < nper; i++)
		per += len_of(i);
	uint8_t *sb = xmalloc(per * (size_t)npeer), *rb = xmalloc(per * (size_t)npeer);
	pp_req **req = calloc((size_t)nreq, sizeof(*req));
	int *kind = calloc((size_t)nreq, sizeof(*kind)); /* peer*nper+i, negative: send */
	size_t *off = calloc((size_t)nreq, sizeof(*off));
	int n = 0, before = failures;
	if (!req || !kind || !off)
		exit(2);
	memset(rb, 0xEE, per * (size_t)npeer);
	for (int pass = 0; pass < 2; pass++) {
		size_t o = 0;
		for (int p = 0; p < size_; p++) {
			if (p == rank_)
				continue;
			for (int i = 0; i < nper; i++) {
				size_t len = len_of(i);
				int recv_first = recv_first_all || (p + rank_) % 2 == 0;
				int rc;
				if ((pass == 0) == recv_first) {
					rc = pp_irecv(ctx, rb + o, len, p, i, &req[n]);
					kind[n] = p * nper + i;
				} else {
					fill(sb + o, len, seed_of(rank_, p, i));
					rc = pp_isend(ctx, sb + o, len, p, i, &req[n]);
					kind[n] = -(p * nper + i) - 1;
				}
				EXPECT(rc == 0, "start %d with %d: %s", i, p, pp_strerror(rc));
				off[n++] = o;
				o += len;
			}
		}
	}
	int left = n;
	while (left > 0) {
		for (int j = 0; j < n; j++) {
			int done = 0;
			pp_status st = {0};
			if (!req[j])
				continue;
			int rc = pp_test(&req[j], &done, &st);
			if (!done && rc == 0)
				continue;
			left--;
			req[j] = NULL;
			if (kind[j] < 0) {
				EXPECT(rc == 0, "send %d: %s", -kind[j] - 1, pp_strerror(rc));
				continue;
			}
			int p = kind[j] / nper, i = kind[j] % nper;
			size_t len = len_of(i);
			EXPECT(rc == 0 && st.len == len && st.source == p && st.tag == i,
			       "recv %d from %d: %s, len %zu", i, p, pp_strerror(rc), st.len);
			size_t bad = first_bad(rb + off[j], len, seed_of(p, rank_, i));
			EXPECT(bad == len, "recv %d from %d (%zu B): byte %zu wrong", i, p, len,
			       bad);
		}
	}
	free(req);
	free(kind);
	free(off);
	free(sb);
	free(rb);
	say("%s: %d requests outstanding at once with %d peer(s), every byte checked: %s", name, n,
	    npeer, failures == before ? "ok" : "FAILED");
}

/* many: every rank to every other, many sizes, many requests outstanding. */
static void sc_many(pp_ctx *ctx)
{
	exchange_all(ctx, "many", MANY_N, many_len, 0);
}

/* storm: every rank posts all its receives, then all its sends, of one size
 * past the pushes (so every message is pulled), to every other rank. */
static void sc_storm(pp_ctx *ctx)
{
	exchange_all(ctx, "storm", STORM_N, storm_len, 1);
}

/* --- match: wildcards and non-overtaking order, at rank 0 ------------------- */

#define MATCH_K 20

static void sc_match(pp_ctx *ctx)
{
	uint8_t buf[256];
	int before = failures;
	if (rank_ != 0) {
		/* Non-blocking: in push-zero a send completes only once its
		 * receive is posted, and rank 0 takes the last tag first. */
		static uint8_t sb[MATCH_K + 1][64 + MATCH_K];
		pp_req *q[MATCH_K + 1];
		for (int t = 1; t <= MATCH_K; t++) {
			fill(sb[t], 64 + (size_t)t, seed_of(rank_, 0, t));
			int rc = pp_isend(ctx, sb[t], 64 + (size_t)t, 0, t, &q[t]);
			EXPECT(rc == 0, "isend tag %d: %s", t, pp_strerror(rc));
			if (rc)
				q[t] = NULL;
		}
		for (int t = 1; t <= MATCH_K; t++) {
			int rc = q[t] ? pp_wait(&q[t], NULL) : 0;
			EXPECT(rc == 0, "send tag %d: %s", t, pp_strerror(rc));
		}
		say("match: sent tags 1..%d to rank 0", MATCH_K);
		return;
	}
	static uint8_t taken[64][MATCH_K + 1]; /* [source][tag] already received */
	pp_status st = {0};
	int last = size_ - 1, rc, total = 0;
	/* A specific tag, last of its source: found behind the others. */
	rc = pp_recv(ctx, buf, sizeof(buf), last, MATCH_K, &st);
	EXPECT(rc == 0 && st.source == last && st.tag == MATCH_K,
	       "(%d, %d): rc %d source %d tag %d", last, MATCH_K, rc, st.source, st.tag);
	/* A specific source, any tag: its first message. */
	if (rc == 0) {
		taken[last][MATCH_K] = 1;
		rc = pp_recv(ctx, buf, sizeof(buf), 1, PP_ANY_TAG, &st);
		EXPECT(rc == 0 && st.source == 1 && st.tag == 1, "(1, ANY): rc %d tag %d", rc,
		       st.tag);
	}
	/* Any source, a specific tag. */
	if (rc == 0) {
		taken[1][1] = 1;
		rc = pp_recv(ctx, buf, sizeof(buf), PP_ANY_SOURCE, MATCH_K - 1, &st);
		EXPECT(rc == 0 && st.tag == MATCH_K - 1 && st.source > 0 && st.source < size_,
		       "(ANY, %d): rc %d source %d tag %d", MATCH_K - 1, rc, st.source, st.tag);
	}
	if (rc == 0) {
		taken[st.source][MATCH_K - 1] = 1;
		total = (size_ - 1) * MATCH_K - 3;
	}
	/* The rest with (ANY, ANY): from each source, its lowest tag not yet taken. */
	for (int m = 0; m < total; m++) {
		memset(buf, 0, sizeof(buf));
		rc = pp_recv(ctx, buf, sizeof(buf), PP_ANY_SOURCE, PP_ANY_TAG, &st);
		if (rc != 0 || st.source < 1 || st.source >= size_ || st.tag < 1 ||
		    st.tag > MATCH_K) {
			EXPECT(0, "(ANY, ANY) #%d: rc %d source %d tag %d", m, rc, st.source,
			       st.tag);
			break;
		}
		int p = st.source, want = 1;
		while (want <= MATCH_K && taken[p][want])
			want++;
		EXPECT(st.tag == want, "from %d: tag %d arrived, tag %d expected (overtaken)", p,
		       st.tag, want);
		EXPECT(st.len == 64 + (size_t)st.tag &&
			   first_bad(buf, st.len, seed_of(p, 0, st.tag)) == st.len,
		       "from %d tag %d: bytes wrong", p, st.tag);
		taken[p][st.tag] = 1;
	}
	for (int p = 1; p < size_; p++)
		for (int t = 1; t <= MATCH_K; t++)
			EXPECT(taken[p][t], "tag %d of rank %d never received", t, p);
	say("match: (src, tag), (src, ANY), (ANY, tag) and %d (ANY, ANY) receives from %d "
	    "rank(s), per-source order kept: %s",
	    total, size_ - 1, failures == before ? "ok" : "FAILED");
}

/* --- trunc: receive buffers shorter than the message ----------------------- */

static const size_t trunc_len[] = {1, 100, 1500, 70000, (1 << 20) + 5};
#define NTRUNC (sizeof(trunc_len) / sizeof(trunc_len[0]))
#define GUARD  64

static void trunc_way(pp_ctx *ctx, int sending, uint8_t *s, uint8_t *r)
{
	int peer = partner();
	for (int k = 0; k < (int)NTRUNC; k++) {
		size_t n = trunc_len[k], cap = n / 2;
		if (sending) {
			fill(s, n, seed_of(rank_, peer, k));
			int rc = pp_send(ctx, s, n, peer, k);
			EXPECT(rc == 0, "send %zu B (truncated there): %s", n, pp_strerror(rc));
			continue;
		}
		pp_status st = {0};
		memset(r, 0xA5, cap + GUARD);
		pp_req *q;
		int rc = pp_irecv(ctx, r, cap, peer, k, &q);
		if (rc == 0)
			rc = pp_wait(&q, &st);
		EXPECT(rc == -EMSGSIZE && st.error == -EMSGSIZE && st.len == n && st.source == peer,
		       "%zu B into %zu: rc %s, len %zu", n, cap, pp_strerror(rc), st.len);
		size_t bad = first_bad(r, cap, seed_of(peer, rank_, k));
		EXPECT(bad == cap, "%zu B into %zu: byte %zu wrong", n, cap, bad);
		for (size_t i = cap; i < cap + GUARD; i++)
			if (r[i] != 0xA5) {
				EXPECT(0, "%zu B into %zu: byte %zu past the buffer written", n,
				       cap, i);
				break;
			}
	}
	/* The stream goes on: a whole message after the truncated ones. */
	one_way(ctx, sending, 5000, 50, s, r);
}

static void sc_trunc(pp_ctx *ctx)
{
	size_t max = trunc_len[NTRUNC - 1];
	uint8_t *s = xmalloc(max + GUARD), *r = xmalloc(max + GUARD);
	int before = failures;
	trunc_way(ctx, lower_half(), s, r);
	trunc_way(ctx, !lower_half(), s, r);
	free(s);
	free(r);
	say("trunc: %zu truncated receives each way with rank %d (-EMSGSIZE, full length, prefix "
	    "intact, nothing written past the buffer), then a whole message: %s",
	    NTRUNC, partner(), failures == before ? "ok" : "FAILED");
}

/* --- earlylate: receive posted before the message, and after it ------------ */

static const size_t el_len[] = {0, 50, 1500, 100000, (4 << 20) + 1};
#define NEL (sizeof(el_len) / sizeof(el_len[0]))

static void stats(pp_ctx *ctx, struct pp_stats *s)
{
	int rc = pp_get_stats(ctx, s);
	EXPECT(rc == 0, "pp_get_stats: %s", pp_strerror(rc));
}

/* Data tag k, token tag 100 + k. */
static void early_late_way(pp_ctx *ctx, int sending, int late, uint8_t *s, uint8_t *r)
{
	int peer = partner(), rc;
	uint8_t tok = 0;
	for (int k = 0; k < (int)NEL; k++) {
		size_t n = el_len[k];
		if (sending) {
			fill(s, n, seed_of(rank_, peer, k + 10 * late));
			if (late) { /* data first, then the token behind it */
				pp_req *q;
				rc = pp_isend(ctx, s, n, peer, k, &q);
				EXPECT(rc == 0, "isend: %s", pp_strerror(rc));
				rc = pp_send(ctx, &tok, 1, peer, 100 + k);
				EXPECT(rc == 0, "token: %s", pp_strerror(rc));
				rc = rc ? rc : pp_wait(&q, NULL);
				EXPECT(rc == 0, "late send %zu B: %s", n, pp_strerror(rc));
			} else { /* the receiver's token says its receive is posted */
				rc = pp_recv(ctx, &tok, 1, peer, 100 + k, NULL);
				EXPECT(rc == 0, "token: %s", pp_strerror(rc));
				rc = pp_send(ctx, s, n, peer, k);
				EXPECT(rc == 0, "early send %zu B: %s", n, pp_strerror(rc));
			}
			continue;
		}
		struct pp_stats a, b;
		pp_status st = {0};
		memset(r, 0xEE, n);
		if (late) {
			rc = pp_recv(ctx, &tok, 1, peer, 100 + k, NULL);
			EXPECT(rc == 0, "token: %s", pp_strerror(rc));
			if (k == (int)NEL - 1)
				usleep(200000); /* the sender waits in pp_wait meanwhile */
			stats(ctx, &a);
			rc = pp_recv(ctx, r, n, peer, k, &st);
			stats(ctx, &b);
		} else {
			pp_req *q;
			rc = pp_irecv(ctx, r, n, peer, k, &q);
			EXPECT(rc == 0, "irecv: %s", pp_strerror(rc));
			stats(ctx, &a);
			int rc2 = pp_send(ctx, &tok, 1, peer, 100 + k);
			EXPECT(rc2 == 0, "token: %s", pp_strerror(rc2));
			rc = pp_wait(&q, &st);
			stats(ctx, &b);
		}
		EXPECT(rc == 0 && st.len == n, "%s recv %zu B: %s, len %zu",
		       late ? "late" : "early", n, pp_strerror(rc), st.len);
		size_t bad = first_bad(r, n, seed_of(peer, rank_, k + 10 * late));
		EXPECT(bad == n, "%s %zu B: byte %zu wrong", late ? "late" : "early", n, bad);
		uint64_t de = b.early_matches - a.early_matches,
			 dl = b.late_matches - a.late_matches;
		EXPECT(late ? (dl == 1 && de == 0) : (de == 1 && dl == 0),
		       "%s %zu B: early_matches +%llu, late_matches +%llu", late ? "late" : "early",
		       n, (unsigned long long)de, (unsigned long long)dl);
	}
}

static void sc_earlylate(pp_ctx *ctx)
{
	size_t max = el_len[NEL - 1];
	uint8_t *s = xmalloc(max), *r = xmalloc(max);
	int before = failures;
	for (int late = 0; late < 2; late++) {
		early_late_way(ctx, lower_half(), late, s, r);
		early_late_way(ctx, !lower_half(), late, s, r);
	}
	free(s);
	free(r);
	say("earlylate: %zu sizes each way with rank %d, receive posted before (early_matches +1) "
	    "and after (late_matches +1) the message, bytes checked: %s",
	    NEL, partner(), failures == before ? "ok" : "FAILED");
}

/* --- kill: the upper half exits in the middle of a 16 MiB receive ----------- */

static void sc_kill(pp_ctx *ctx, unsigned timeout_ms)
{
	int peer = partner(), rc;
	uint8_t *b = xmalloc(BIG);
	if (!lower_half()) {
		pp_req *q;
		struct pp_stats s = {0};
		rc = pp_irecv(ctx, b, BIG, peer, 1, &q);
		EXPECT(rc == 0, "irecv: %s", pp_strerror(rc));
		for (int done = 0; rc == 0 && !done;) {
			rc = pp_test(&q, &done, NULL);
			stats(ctx, &s);
			if (s.bytes_rx >= (2u << 20)) {
				say("kill: exiting without pp_finalize after %llu of %zu B",
				    (unsigned long long)s.bytes_rx, BIG);
				_exit(failures ? 1 : 0); /* no BYE: to the peers, a crash */
			}
		}
		EXPECT(0, "the 16 MiB receive ended (%s) before 2 MiB had come", pp_strerror(rc));
		exit(1);
	}
	fill(b, BIG, 1);
	double t0 = now_s();
	rc = pp_send(ctx, b, BIG, peer, 1);
	double dt = now_s() - t0;
	double limit = timeout_ms / 1000.0 + 2.0;
	EXPECT(rc == -ECONNRESET, "16 MiB send to the killed rank %d: %s, want -ECONNRESET", peer,
	       pp_strerror(rc));
	EXPECT(dt < limit, "the send failed after %.1f s, want under %.1f s", dt, limit);
	rc = pp_send(ctx, b, 10, peer, 2);
	EXPECT(rc == -ECONNRESET, "a later send to the lost rank: %s", pp_strerror(rc));
	rc = pp_recv(ctx, b, 10, peer, 3, NULL);
	EXPECT(rc == -ECONNRESET, "a receive from the lost rank: %s", pp_strerror(rc));
	free(b);
	say("kill: send to rank %d that died mid-transfer failed with -ECONNRESET within "
	    "timeout_ms (%u) + 2 s, later send/recv too: %s",
	    peer, timeout_ms, failures ? "FAILED" : "ok");
}

/* --- killsend: the upper half exits in the middle of a 16 MiB send --------- */

/* A receiver has nothing awaiting acknowledgement once its PULL is answered
 * (in push-all it never sends one), so silence is all it sees; after a
 * quarter of timeout_ms of it, pp_wait pings the sender, whose loss then
 * fails the receive with -ECONNRESET (pp.h, pp_wait). A send to the dead
 * rank fails the same way. */
static void sc_killsend(pp_ctx *ctx, unsigned timeout_ms)
{
	int peer = partner(), rc;
	uint8_t *b = xmalloc(BIG);
	if (!lower_half()) {
		pp_req *q;
		struct pp_stats s = {0};
		fill(b, BIG, 1);
		rc = pp_isend(ctx, b, BIG, peer, 1, &q);
		EXPECT(rc == 0, "isend: %s", pp_strerror(rc));
		for (int done = 0; rc == 0 && !done;) {
			rc = pp_test(&q, &done, NULL);
			stats(ctx, &s);
			if (s.bytes_tx >= (2u << 20)) {
				say("killsend: exiting without pp_finalize after sending %llu of "
				    "%zu B",
				    (unsigned long long)s.bytes_tx, BIG);
				_exit(failures ? 1 : 0);
			}
		}
		EXPECT(0, "the 16 MiB send ended (%s) before 2 MiB had gone", pp_strerror(rc));
		exit(1);
	}
	double t0 = now_s(), limit = timeout_ms / 1000.0 + 2.0;
	pp_req *q;
	rc = pp_irecv(ctx, b, BIG, peer, 1, &q);
	EXPECT(rc == 0, "irecv: %s", pp_strerror(rc));
	rc = pp_wait(&q, NULL);
	double dt = now_s() - t0;
	EXPECT(rc == -ECONNRESET, "16 MiB receive from the killed rank %d: %s, want -ECONNRESET",
	       peer, pp_strerror(rc));
	EXPECT(dt < limit, "the receive failed after %.1f s, want under %.1f s", dt, limit);
	/* Above the 1 KiB eager limit, so the send waits for an ack that
	 * never comes (a small send would complete from its copy at once). */
	t0 = now_s();
	rc = pp_send(ctx, b, 4096, peer, 2);
	dt = now_s() - t0;
	EXPECT(rc == -ECONNRESET, "a send to the dead rank: %s, want -ECONNRESET", pp_strerror(rc));
	EXPECT(dt < limit, "the send failed after %.1f s, want under %.1f s", dt, limit);
	if (q) {
		rc = pp_wait(&q, NULL);
		EXPECT(rc == -ECONNRESET, "the receive, waited on again: %s, want -ECONNRESET",
		       pp_strerror(rc));
	}
	free(b);
	say("killsend: receive from rank %d that died mid-transfer gave -ECONNRESET within "
	    "timeout_ms (%u) + 2 s; a send to it then -ECONNRESET, and the receive too: %s",
	    peer, timeout_ms, failures ? "FAILED" : "ok");
}

/* --- crash: the upper half sends, then exits without pp_finalize ----------- */

/* With its partner on the same node, a rank sees the death from the pid:
 * the message that came before it is still received, a receive only the
 * dead rank could satisfy and a send to it fail at once, and pp_finalize
 * does not wait for its goodbye. */
static void sc_crash(pp_ctx *ctx)
{
	int peer = partner(), rc;
	uint8_t b[500];
	if (!lower_half()) {
		fill(b, sizeof(b), seed_of(rank_, peer, 1));
		rc = pp_send(ctx, b, sizeof(b), peer, 1);
		EXPECT(rc == 0, "send: %s", pp_strerror(rc));
		say("crash: sent %zu B, exiting without pp_finalize", sizeof(b));
		_exit(failures ? 1 : 0);
	}
	usleep(300000); /* the partner is gone by now, and seen to be */
	pp_status st = {0};
	memset(b, 0, sizeof(b));
	rc = pp_recv(ctx, b, sizeof(b), peer, 1, &st);
	EXPECT(rc == 0 && st.len == sizeof(b) &&
		   first_bad(b, sizeof(b), seed_of(peer, rank_, 1)) == sizeof(b),
	       "the message sent before the crash: %s", pp_strerror(rc));
	double t0 = now_s();
	rc = pp_recv(ctx, b, 10, peer, 2, NULL);
	EXPECT(rc == -ECONNRESET, "a receive only the dead rank could satisfy: %s",
	       pp_strerror(rc));
	rc = pp_send(ctx, b, 10, peer, 3);
	EXPECT(rc == -ECONNRESET, "a send to the dead rank: %s", pp_strerror(rc));
	EXPECT(now_s() - t0 < 1.0, "the failures took %.1f s", now_s() - t0);
	say("crash: rank %d died after sending; its message received, a receive from it and "
	    "a send to it failed at once: %s",
	    peer, failures ? "FAILED" : "ok");
}

/* --- handlers: a sender that computes while its receiver comes late -------- */

#define H_LEN ((size_t)(4u << 20) + 7)
#define H_ACK 0x5a

/* Busy work that makes no pp_* call; stops when *flag turns H_ACK or after
 * max_s. Returns the seconds spent. */
static double compute(const volatile uint8_t *flag, double max_s)
{
	double t0 = now_s(), t = t0;
	volatile uint64_t x = 1;
	while (*flag != H_ACK && (t = now_s()) - t0 < max_s)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
	return t - t0;
}

static void sc_handlers(pp_ctx *ctx, int expect_served, double max_s)
{
	int peer = partner(), rc;
	uint8_t *b = xmalloc(H_LEN);
	int before = failures;
	if (lower_half()) {
		volatile uint8_t ack = 0;
		pp_req *sq, *aq;
		fill(b, H_LEN, seed_of(rank_, peer, 7));
		rc = pp_irecv(ctx, (void *)&ack, 1, peer, 8, &aq);
		EXPECT(rc == 0, "irecv ack: %s", pp_strerror(rc));
		rc = pp_isend(ctx, b, H_LEN, peer, 7, &sq);
		EXPECT(rc == 0, "isend: %s", pp_strerror(rc));
		double dt = compute(&ack, max_s);
		int served = ack == H_ACK;
		say("handlers: computed %.2f s without pp_* calls; the receiver's ack %s during it",
		    dt, served ? "arrived" : "did not arrive");
		EXPECT(served == expect_served, "ack during compute: %d, expected %d", served,
		       expect_served);
		rc = pp_wait(&sq, NULL);
		EXPECT(rc == 0, "send: %s", pp_strerror(rc));
		rc = pp_wait(&aq, NULL);
		EXPECT(rc == 0 && ack == H_ACK, "ack: %s", pp_strerror(rc));
	} else {
		pp_status st = {0};
		uint8_t ack = H_ACK;
		usleep(100000); /* late: the sender is computing by now */
		memset(b, 0xEE, H_LEN);
		rc = pp_recv(ctx, b, H_LEN, peer, 7, &st);
		EXPECT(rc == 0 && st.len == H_LEN, "recv: %s", pp_strerror(rc));
		size_t bad = first_bad(b, H_LEN, seed_of(peer, rank_, 7));
		EXPECT(bad == H_LEN, "byte %zu wrong", bad);
		rc = pp_send(ctx, &ack, 1, peer, 8);
		EXPECT(rc == 0, "ack: %s", pp_strerror(rc));
		say("handlers: late receive of %zu B from a computing rank %d, bytes checked: %s",
		    H_LEN, peer, failures == before ? "ok" : "FAILED");
	}
	free(b);
}

/* --- daemonpull: the node daemon serves a computing sender's PULLs --------- */

static const size_t dp_len[] = {1024, 64 << 10, 1 << 20, (16 << 20) + 3};

/* Flag what of round k between this pair: a file both ranks see. */
static void dp_flag(char *path, size_t len, int sender, int k, const char *what)
{
	const char *job = getenv("PP_JOB");
	snprintf(path, len, "/tmp/rt_check-dp-%s-%d-%d-%s", job ? job : "0", sender, k, what);
}

static void dp_set(const char *path)
{
	FILE *f = fopen(path, "w");
	EXPECT(f != NULL, "%s: %s", path, strerror(errno));
	if (f)
		fclose(f);
}

/* Wait up to max_s for a flag, calling pp_progress meanwhile when ctx. */
static int dp_wait(pp_ctx *ctx, const char *path, double max_s)
{
	for (double t0 = now_s(); now_s() - t0 < max_s;) {
		if (access(path, F_OK) == 0)
			return 1;
		if (ctx)
			pp_progress(ctx);
		else
			usleep(100);
	}
	return 0;
}

/* Each round, in this order (flag files; nothing is timed): the sender
 * posts an isend and makes progress until the receiver has the pushes
 * ("pushed"); it says "computing" and computes without any pp_* call until
 * the receiver says "received", or max_s; the receiver posts its receive
 * (late) only once the sender computes. With the daemon serving PULLs the
 * receive completes while the sender computes; without, it cannot (the rest
 * of the message is only in the sender's memory). */
static void sc_daemonpull(pp_ctx *ctx, int expect_served, double max_s)
{
	int peer = partner(), rc;
	int before = failures;
	char pushed[128], computing[128], received[128];
	/* Both engines know each other before a frame must get through at once
	 * (a computing sender resends nothing). The counters first: the
	 * barrier may take the first pushes in. */
	struct pp_stats s0;
	pp_get_stats(ctx, &s0);
	rc = pp_barrier(ctx);
	EXPECT(rc == 0, "barrier: %s", pp_strerror(rc));
	for (int k = 0; k < (int)(sizeof(dp_len) / sizeof(dp_len[0])); k++) {
		size_t n = dp_len[k];
		uint64_t push = n < 760 ? n : 760;
		uint8_t *b = xmalloc(n);
		int sender = lower_half() ? rank_ : peer;
		dp_flag(pushed, sizeof(pushed), sender, k, "pushed");
		dp_flag(computing, sizeof(computing), sender, k, "computing");
		dp_flag(received, sizeof(received), sender, k, "received");
		if (k)
			pp_get_stats(ctx, &s0);
		if (lower_half()) {
			pp_req *sq;
			uint8_t tok;
			unlink(pushed);
			unlink(computing);
			unlink(received);
			fill(b, n, seed_of(rank_, peer, k));
			rc = pp_isend(ctx, b, n, peer, 20 + k, &sq);
			EXPECT(rc == 0, "isend: %s", pp_strerror(rc));
			EXPECT(dp_wait(ctx, pushed, 30), "%zu B: the pushes did not arrive", n);
			dp_set(computing);
			double t0 = now_s();
			volatile uint64_t x = 1;
			int served;
			while (!(served = access(received, F_OK) == 0) && now_s() - t0 < max_s)
				for (int i = 0; i < 10000; i++)
					x = x * 6364136223846793005u + 1442695040888963407u;
			say("daemonpull: %zu B: computed %.3f s without pp_* calls; the receiver "
			    "%s "
			    "the message during it",
			    n, now_s() - t0, served ? "received" : "did not receive");
			EXPECT(served == expect_served,
			       "%zu B: received during compute: %d, expected %d", n, served,
			       expect_served);
			rc = pp_wait(&sq, NULL);
			EXPECT(rc == 0, "%zu B: send: %s", n, pp_strerror(rc));
			rc = pp_recv(ctx, &tok, 1, peer, 40 + k, NULL); /* the flags are set */
			EXPECT(rc == 0, "%zu B: token: %s", n, pp_strerror(rc));
			unlink(pushed);
			unlink(computing);
			unlink(received);
		} else {
			pp_status st = {0};
			uint8_t tok = 1;
			struct pp_stats s;
			double t0 = now_s();
			do {
				pp_progress(ctx);
				pp_get_stats(ctx, &s);
			} while (s.bytes_rx - s0.bytes_rx < push && now_s() - t0 < 30);
			EXPECT(s.bytes_rx - s0.bytes_rx >= push, "%zu B: the pushes did not arrive",
			       n);
			dp_set(pushed);
			EXPECT(dp_wait(NULL, computing, 30), "%zu B: the sender did not compute",
			       n);
			memset(b, 0xEE, n);
			rc = pp_recv(ctx, b, n, peer, 20 + k, &st);
			EXPECT(rc == 0 && st.len == n, "%zu B: recv: %s", n, pp_strerror(rc));
			size_t bad = first_bad(b, n, seed_of(peer, rank_, k));
			EXPECT(bad == n, "%zu B: byte %zu wrong", n, bad);
			struct pp_stats s1;
			pp_get_stats(ctx, &s1);
			EXPECT(s1.late_matches == s0.late_matches + 1, "%zu B: not a late receive",
			       n);
			dp_set(received);
			rc = pp_send(ctx, &tok, 1, peer, 40 + k);
			EXPECT(rc == 0, "%zu B: token: %s", n, pp_strerror(rc));
		}
		free(b);
	}
	if (!lower_half())
		say("daemonpull: %zu late receives of 1 KiB .. 16 MiB from a computing rank %d, "
		    "bytes checked: %s",
		    sizeof(dp_len) / sizeof(dp_len[0]), peer, failures == before ? "ok" : "FAILED");
}

/* --- badpull: the daemon cannot read what it should serve ------------------ */

#define BP_LEN ((size_t)256 << 10)

/* The sender's buffer is gone (unmapped after the pushes were acked) when
 * the PULL comes: the daemon's read fails, it sends nothing and fails the
 * entry; the send fails with -ECONNRESET; the receiver gets nothing past the
 * pushes (its receive can never complete: it stays posted). */
static void sc_badpull(pp_ctx *ctx)
{
	int peer = partner(), rc, before = failures;
	uint8_t tok = 1;
	struct pp_stats s0, s;
	pp_get_stats(ctx, &s0); /* before: the barrier may take the pushes in */
	rc = pp_barrier(ctx);
	EXPECT(rc == 0, "barrier: %s", pp_strerror(rc));
	if (lower_half()) {
		uint8_t *b =
		    mmap(NULL, BP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		EXPECT(b != MAP_FAILED, "mmap: %s", strerror(errno));
		if (b == MAP_FAILED)
			return;
		fill(b, BP_LEN, 3);
		pp_req *q;
		rc = pp_isend(ctx, b, BP_LEN, peer, 30, &q);
		EXPECT(rc == 0, "isend: %s", pp_strerror(rc));
		/* The receiver has the pushes; its token carries their ack. */
		rc = pp_recv(ctx, &tok, 1, peer, 31, NULL);
		EXPECT(rc == 0, "token: %s", pp_strerror(rc));
		munmap(b, BP_LEN);
		rc = pp_send(ctx, &tok, 1, peer, 32);
		EXPECT(rc == 0, "go: %s", pp_strerror(rc));
		pp_status st = {0};
		rc = pp_wait(&q, &st);
		EXPECT(rc == -ECONNRESET, "send from an unmapped buffer: %s, want -ECONNRESET",
		       pp_strerror(rc));
		rc = pp_send(ctx, &tok, 1, peer, 33);
		EXPECT(rc == 0, "done: %s", pp_strerror(rc));
		say("badpull: a send whose buffer was gone when its PULL came failed: %s",
		    failures == before ? "ok" : "FAILED");
	} else {
		uint8_t *b = xmalloc(BP_LEN);
		double t0 = now_s();
		do {
			pp_progress(ctx);
			pp_get_stats(ctx, &s);
		} while (s.bytes_rx - s0.bytes_rx < 760 && now_s() - t0 < 30);
		rc = pp_send(ctx, &tok, 1, peer, 31);
		EXPECT(rc == 0, "token: %s", pp_strerror(rc));
		rc = pp_recv(ctx, &tok, 1, peer, 32, NULL);
		EXPECT(rc == 0, "go: %s", pp_strerror(rc));
		memset(b, 0xEE, BP_LEN);
		pp_req *q;
		rc = pp_irecv(ctx, b, BP_LEN, peer, 30, &q);
		EXPECT(rc == 0, "irecv: %s", pp_strerror(rc));
		rc = pp_recv(ctx, &tok, 1, peer, 33, NULL);
		EXPECT(rc == 0, "done: %s", pp_strerror(rc));
		int done = 1;
		rc = pp_test(&q, &done, NULL);
		EXPECT(rc == 0 && !done, "the receive completed (%s)", pp_strerror(rc));
		size_t bad = first_bad(b, 760, 3), past = 760;
		while (past < BP_LEN && b[past] == 0xEE)
			past++;
		EXPECT(bad == 760 && past == BP_LEN,
		       "the pushes (first bad byte %zu), and nothing after them (byte %zu written)",
		       bad, past);
		say("badpull: the receiver got the pushes and nothing more: %s",
		    failures == before ? "ok" : "FAILED");
		/* b stays: the receive is still posted into it. */
	}
}

/* --- predict: late receivers with the predictor on (predict=NAME) ---------- */

/* One message, late: the sender's isend, then a token behind it; the receiver
 * takes the token, gives the message up to wait_ms to arrive whole (staged
 * messages are pulled at once; it watches bytes_staged), then receives it
 * into dst. The sender waits for its send after the token. */
static void pr_one(pp_ctx *ctx, int sending, int tag, size_t n, uint8_t *src, uint8_t *dst,
		   unsigned seed, double wait_s)
{
	int peer = partner(), rc;
	uint8_t tok = 0;
	if (sending) {
		pp_req *q;
		fill(src, n, seed);
		rc = pp_isend(ctx, src, n, peer, tag, &q);
		EXPECT(rc == 0, "isend: %s", pp_strerror(rc));
		rc = pp_send(ctx, &tok, 1, peer, 999);
		EXPECT(rc == 0, "token: %s", pp_strerror(rc));
		rc = pp_wait(&q, NULL);
		EXPECT(rc == 0, "send %zu B tag %d: %s", n, tag, pp_strerror(rc));
		return;
	}
	struct pp_stats a, b;
	stats(ctx, &a);
	rc = pp_recv(ctx, &tok, 1, peer, 999, NULL);
	EXPECT(rc == 0, "token: %s", pp_strerror(rc));
	/* Intranode nothing is staged by design (sc_predict): the wait would
	 * always run out (27 s of the test), and the message is ahead of the
	 * token in its ring already, so the receive below is late anyway. */
	if (expect_copy && strcmp(expect_copy, "direct") == 0)
		wait_s = 0;
	for (double t0 = now_s(); now_s() - t0 < wait_s;) {
		stats(ctx, &b);
		if (b.bytes_staged - a.bytes_staged >= n)
			break;
		pp_progress(ctx);
	}
	pp_status st = {0};
	memset(dst, 0xEE, n);
	rc = pp_recv(ctx, dst, n, peer, tag, &st);
	EXPECT(rc == 0 && st.len == n && st.tag == tag, "recv %zu B tag %d: %s, len %zu", n, tag,
	       pp_strerror(rc), st.len);
	size_t bad = first_bad(dst, n, seed);
	EXPECT(bad == n, "%zu B tag %d: byte %zu wrong", n, tag, bad);
}

/* Counters that must hold at any time. */
static void pr_consistent(pp_ctx *ctx, const char *what, uint64_t budget)
{
	struct pp_stats s;
	stats(ctx, &s);
	EXPECT(s.pred_hits + s.pred_misses == s.pred_predictions,
	       "%s: hits %llu + misses %llu != predictions %llu", what,
	       (unsigned long long)s.pred_hits, (unsigned long long)s.pred_misses,
	       (unsigned long long)s.pred_predictions);
	EXPECT(s.stage_peak <= budget, "%s: staging peak %llu over the budget %llu", what,
	       (unsigned long long)s.stage_peak, (unsigned long long)budget);
}

static uint32_t pr_rand(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void sc_predict(pp_ctx *ctx, uint64_t budget, int remap)
{
	enum { CYCLES = 30, PAGES = 64, RANDOM = 200, BATCH = 8 };
	static const size_t cyc_len[] = {50, 1500, 100000};
	const size_t plen = (size_t)PAGES * 4096, maplen = plen + 8192;
	int peer = partner();
	size_t maxlen = 1024 * 1024;
	uint8_t *s = xmalloc(maxlen), *r = xmalloc(maxlen);
	uint8_t *map =
	    mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *map2 =
	    mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *shr =
	    mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || map2 == MAP_FAILED || shr == MAP_FAILED) {
		fprintf(stderr, "rt_check: mmap failed\n");
		exit(2);
	}
	for (int way = 0; way < 2; way++) {
		int sending = way == 0 ? lower_half() : !lower_half();
		int before = failures;
		struct pp_stats a, b;
		unsigned k = 0; /* message number, for seeds */
#define SEED                                                                                       \
	(seed_of(sending ? rank_ : peer, sending ? peer : rank_, (int)(k++ % 90)) + 1000u * way)
		/* 1. A regular cycle of three tags and sizes. */
		stats(ctx, &a);
		for (int c = 0; c < CYCLES; c++)
			for (int t = 0; t < 3; t++)
				pr_one(ctx, sending, 1 + t, cyc_len[t], s, r, SEED, 0.05);
		pr_consistent(ctx, "cycle", budget);
		stats(ctx, &b);
		if (!sending) {
			uint64_t staged = b.staged_msgs - a.staged_msgs;
			uint64_t spec = b.spec_pulls - a.spec_pulls;
			uint64_t hits = b.pred_hits - a.pred_hits;
			if (expect_copy && strcmp(expect_copy, "direct") == 0) {
				/* Intranode the rest is copied once, straight into
				 * the user buffer: nothing is staged by design. */
				EXPECT(staged == 0 && spec == 0,
				       "cycle, intranode: %llu staged, %llu speculative pulls",
				       (unsigned long long)staged, (unsigned long long)spec);
			} else {
				EXPECT(staged >= CYCLES * 3 / 2,
				       "cycle: only %llu of %d messages staged",
				       (unsigned long long)staged, CYCLES * 3);
				EXPECT(spec >= CYCLES && spec <= 2 * CYCLES,
				       "cycle: %llu speculative pulls for %d pulled messages",
				       (unsigned long long)spec, 2 * CYCLES);
			}
			EXPECT(hits >= CYCLES * 3, "cycle: %llu hits (token and message each turn)",
			       (unsigned long long)hits);
			say("predict: cycle of 3 tags from rank %d, %d late messages, bytes "
			    "checked, "
			    "%llu staged, %llu speculative pulls, %llu hits / %llu predictions: %s",
			    peer, CYCLES * 3, (unsigned long long)staged, (unsigned long long)spec,
			    (unsigned long long)hits,
			    (unsigned long long)(b.pred_predictions - a.pred_predictions),
			    failures == before ? "ok" : "FAILED");
		}
		/* 2. Page memory: congruent destinations are remapped; a destination
		 * other than the predicted one, or shared memory, is copied. */
		before = failures;
		stats(ctx, &a);
		for (int i = 0; i < 10; i++)
			pr_one(ctx, sending, 10, plen, s, map, SEED, 0.3);
		stats(ctx, &b);
		uint64_t remapped = b.pages_remapped - a.pages_remapped;
		/* A new offset each time: the block is aimed at an earlier buffer
		 * (the last one received into, or older when the sender runs
		 * ahead), never congruent with this one. */
		for (int i = 0; i < 10; i++)
			pr_one(ctx, sending, 11, plen, s, (i % 2 ? map : map2) + 64 * (i + 1), SEED,
			       0.3);
		for (int i = 0; i < 10; i++)
			pr_one(ctx, sending, 12, plen, s, shr, SEED, 0.3);
		struct pp_stats c;
		stats(ctx, &c);
		pr_consistent(ctx, "pages", budget);
		if (!sending) {
			EXPECT(remap ? remapped >= 5 * (PAGES - 1) : remapped == 0,
			       "pages: %llu pages remapped into a page-aligned anonymous buffer "
			       "(stage_remap %s)",
			       (unsigned long long)remapped, remap ? "on" : "off");
			EXPECT(c.pages_remapped == b.pages_remapped,
			       "pages: %llu pages remapped into incongruent or shared buffers",
			       (unsigned long long)(c.pages_remapped - b.pages_remapped));
			say("predict: %zu B messages from rank %d into page-aligned anonymous "
			    "memory "
			    "(%llu pages remapped), incongruent and shared memory (none), bytes "
			    "checked: %s",
			    plen, peer, (unsigned long long)remapped,
			    failures == before ? "ok" : "FAILED");
		}
		/* 3. Random tags and sizes, BATCH outstanding, received in another
		 * order: nothing lost or corrupt, staging within its budget. */
		before = failures;
		uint32_t x = 0x9e3779b9u + (uint32_t)way;
		stats(ctx, &a);
		for (int i = 0; i < RANDOM / BATCH; i++) {
			int tags[BATCH];
			size_t lens[BATCH];
			unsigned seeds[BATCH];
			for (int j = 0; j < BATCH; j++) {
				tags[j] = 100 + j * 50 + (int)(pr_rand(&x) % 50); /* distinct */
				lens[j] = pr_rand(&x) % (maxlen / BATCH);
				seeds[j] = SEED;
			}
			if (sending) {
				pp_req *q[BATCH];
				uint8_t tok = 0;
				for (int j = 0; j < BATCH; j++) {
					fill(s + j * (maxlen / BATCH), lens[j], seeds[j]);
					int rc = pp_isend(ctx, s + j * (maxlen / BATCH), lens[j],
							  peer, tags[j], &q[j]);
					EXPECT(rc == 0, "isend: %s", pp_strerror(rc));
				}
				int rc = pp_send(ctx, &tok, 1, peer, 999);
				EXPECT(rc == 0, "token: %s", pp_strerror(rc));
				for (int j = 0; j < BATCH; j++) {
					rc = pp_wait(&q[j], NULL);
					EXPECT(rc == 0, "send: %s", pp_strerror(rc));
				}
				continue;
			}
			uint8_t tok;
			int rc = pp_recv(ctx, &tok, 1, peer, 999, NULL);
			EXPECT(rc == 0, "token: %s", pp_strerror(rc));
			for (int j0 = 0; j0 < BATCH; j0++) {
				int j = (j0 * 5 + i) % BATCH; /* another order */
				uint8_t *d = r + j * (maxlen / BATCH);
				pp_status st = {0};
				memset(d, 0xEE, lens[j]);
				rc = pp_recv(ctx, d, lens[j], peer, tags[j], &st);
				EXPECT(rc == 0 && st.len == lens[j], "recv %zu B tag %d: %s",
				       lens[j], tags[j], pp_strerror(rc));
				size_t bad = first_bad(d, lens[j], seeds[j]);
				EXPECT(bad == lens[j], "%zu B tag %d: byte %zu wrong", lens[j],
				       tags[j], bad);
			}
			pr_consistent(ctx, "random", budget);
		}
		stats(ctx, &b);
		if (!sending)
			say("predict: %d messages from rank %d with random tags and sizes, %d "
			    "outstanding, bytes checked, %llu staged, staging peak %llu <= %llu: "
			    "%s",
			    RANDOM, peer, BATCH,
			    (unsigned long long)(b.staged_msgs - a.staged_msgs),
			    (unsigned long long)b.stage_peak, (unsigned long long)budget,
			    failures == before ? "ok" : "FAILED");
#undef SEED
	}
	munmap(map, maplen);
	munmap(map2, maplen);
	munmap(shr, maplen);
	free(s);
	free(r);
}

/* --- evict: a full pushed buffer (credits=0, a small pushbuf_bytes) -------- */

/* EV_N late messages of EV_LEN bytes, more than the pushed buffer holds. With
 * the predictor on, the messages expected furthest give their pushed bytes
 * up (evictions, no frame refused); with it off the overflow is refused and
 * sent again. Either way every byte arrives. */
#define EV_N   48
#define EV_LEN 5000

static void sc_evict(pp_ctx *ctx, int predicting)
{
	int peer = partner(), rc;
	uint8_t *b = xmalloc((size_t)EV_N * EV_LEN);
	for (int way = 0; way < 2; way++) {
		int sending = way == 0 ? lower_half() : !lower_half();
		int before = failures;
		uint8_t tok = 0;
		if (sending) {
			pp_req *q[EV_N];
			for (int i = 0; i < EV_N; i++) {
				fill(b + (size_t)i * EV_LEN, EV_LEN,
				     seed_of(rank_, peer, i + 50 * way));
				rc = pp_isend(ctx, b + (size_t)i * EV_LEN, EV_LEN, peer, 300 + i,
					      &q[i]);
				EXPECT(rc == 0, "isend %d: %s", i, pp_strerror(rc));
			}
			for (int i = 0; i < EV_N; i++) {
				rc = pp_wait(&q[i], NULL);
				EXPECT(rc == 0, "send %d: %s", i, pp_strerror(rc));
			}
			rc = pp_recv(ctx, &tok, 1, peer, 999, NULL); /* the receiver is done */
			EXPECT(rc == 0, "token: %s", pp_strerror(rc));
			continue;
		}
		/* Late: take what comes for a while (no token: behind a refused
		 * frame it would never come), then receive in order. */
		struct pp_stats a, s;
		stats(ctx, &a);
		for (double t0 = now_s(); now_s() - t0 < 0.3;)
			pp_progress(ctx);
		stats(ctx, &s);
		uint64_t ev = s.evictions - a.evictions,
			 nobuf = s.drops[PP_DROP_NOBUF] - a.drops[PP_DROP_NOBUF];
		/* Every receive at once: without eviction, a refused FIRST is let
		 * in only by a posted receive it matches (one at a time, the
		 * rest of a message waits behind refused frames). */
		memset(b, 0xEE, (size_t)EV_N * EV_LEN);
		pp_req *q[EV_N];
		for (int i = 0; i < EV_N; i++) {
			rc = pp_irecv(ctx, b + (size_t)i * EV_LEN, EV_LEN, peer, 300 + i, &q[i]);
			EXPECT(rc == 0, "irecv %d: %s", i, pp_strerror(rc));
		}
		for (int i = 0; i < EV_N; i++) {
			pp_status st = {0};
			rc = pp_wait(&q[i], &st);
			EXPECT(rc == 0 && st.len == EV_LEN, "recv %d: %s", i, pp_strerror(rc));
			size_t bad = first_bad(b + (size_t)i * EV_LEN, EV_LEN,
					       seed_of(peer, rank_, i + 50 * way));
			EXPECT(bad == EV_LEN, "message %d: byte %zu wrong", i, bad);
		}
		stats(ctx, &s);
		if (predicting) {
			EXPECT(ev > 0 && nobuf == 0,
			       "predict on: %llu evictions, %llu frames refused for room",
			       (unsigned long long)ev, (unsigned long long)nobuf);
		} else {
			EXPECT(ev == 0 && nobuf > 0,
			       "predict off: %llu evictions, %llu frames refused for room",
			       (unsigned long long)ev, (unsigned long long)nobuf);
		}
		EXPECT(s.pushed_buf_bytes == 0, "%llu bytes left in the pushed buffer",
		       (unsigned long long)s.pushed_buf_bytes);
		rc = pp_send(ctx, &tok, 1, peer, 999);
		EXPECT(rc == 0, "token: %s", pp_strerror(rc));
		say("evict: %d late messages of %d B from rank %d over a full pushed buffer, %llu "
		    "evictions, %llu frames refused for room, bytes checked: %s",
		    EV_N, EV_LEN, peer, (unsigned long long)ev, (unsigned long long)nobuf,
		    failures == before ? "ok" : "FAILED");
	}
	free(b);
}

/* --- main ------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: rt_check [options] SCENARIO\n"
	      "Integration checks of librt-pp, one process per rank (start it with pprun).\n\n"
	      "Scenarios:\n"
	      "  sizes      0 B .. 16 MiB + 3 both ways between rank pairs, bytes checked\n"
	      "  many       every rank to every other, many requests outstanding\n"
	      "  storm      every rank posts 64 receives, then 64 sends of 3000 B, to every\n"
	      "             other rank at once (every message pulled)\n"
	      "  match      wildcards and per-source order at rank 0\n"
	      "  trunc      receive buffers shorter than the message (-EMSGSIZE)\n"
	      "  earlylate  receives posted before and after their message\n"
	      "  kill       the upper half exits mid 16 MiB receive; senders get -ECONNRESET\n"
	      "  killsend   the upper half exits mid 16 MiB send; receivers get -ECONNRESET\n"
	      "             (their wait pings the silent sender), and so does a send to it\n"
	      "  handlers   late receiver of a sender that computes (run with pull_cores=)\n"
	      "  daemonpull late receives of 1 KiB .. 16 MiB from a sender that computes\n"
	      "             without pp_* calls until they completed (daemon=: its pull\n"
	      "             handlers serve the PULLs; --no-progress: expect them not to)\n"
	      "  badpull    daemon=: a send whose buffer is unmapped when its PULL comes\n"
	      "             fails with -ECONNRESET, nothing past the pushes is sent\n"
	      "  crash      the upper half sends, then exits; its partner (on the same node)\n"
	      "             receives the message and fails at once on what needs the dead rank\n"
	      "  predict    late receivers with predict=NAME: a cycle of tags (staged,\n"
	      "             speculative pulls), page memory (remapped with stage_remap=,\n"
	      "             never when incongruent or shared), random tags\n"
	      "  evict      late messages over a full pushed buffer (run with credits=0 and\n"
	      "             a small pushbuf_bytes): evictions with predict=, refusals without\n"
	      "  all        sizes, many, match, trunc, earlylate\n\n"
	      "Options:\n"
	      "  -c, --config CFG      extra pp_init settings, e.g. pull_cores=1,timeout_ms=3000\n"
	      "      --max-size B      sizes: the largest message (default 16 MiB + 3)\n"
	      "      --offset N        sizes: buffers start N bytes into a page (unaligned)\n"
	      "      --pp-malloc       sizes: buffers from pp_malloc\n"
	      "      --expect-copy K   sizes: direct (the receiver copied all but the pushes\n"
	      "                        straight from the sender's buffer) or frames (every byte\n"
	      "                        was sent in frames)\n"
	      "      --no-progress     handlers, daemonpull: expect the message NOT to arrive\n"
	      "                        while the sender computes (the check without pull\n"
	      "                        handlers)\n"
	      "      --compute SEC     handlers, daemonpull: compute at most SEC seconds\n"
	      "                        (default 5)\n"
	      "      --expect-loss     fail unless some frame was retransmitted or NACKed\n"
	      "                        (the link drops frames: the loss was real)\n"
	      "  -h, --help            this text\n\n"
	      "Ranks come from PP_RANK, PP_SIZE etc. (pprun sets them); pair scenarios need an\n"
	      "even number of ranks. Exit status 0 when every check passed.\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"no-progress", no_argument, NULL, 'N'},
	    {"compute", required_argument, NULL, 'C'},
	    {"expect-loss", no_argument, NULL, 'L'},
	    {"help", no_argument, NULL, 'h'},
	    {"max-size", required_argument, NULL, 'M'},
	    {"offset", required_argument, NULL, 'O'},
	    {"pp-malloc", no_argument, NULL, 'P'},
	    {"expect-copy", required_argument, NULL, 'E'},
	    {NULL, 0, NULL, 0},
	};
	const char *cfg = NULL;
	int expect_served = 1, expect_loss = 0, c;
	double max_s = 5.0;
	while ((c = getopt_long(argc, argv, "c:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			cfg = optarg;
			break;
		case 'N':
			expect_served = 0;
			break;
		case 'L':
			expect_loss = 1;
			break;
		case 'C': {
			char *end;
			max_s = strtod(optarg, &end);
			if (*end || !(max_s > 0 && max_s < 600)) {
				fprintf(stderr, "rt_check: --compute wants seconds in (0, 600)\n");
				return 2;
			}
			break;
		}
		case 'M':
		case 'O': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 0);
			if (*end || !isdigit((unsigned char)optarg[0]) ||
			    (c == 'M' ? v < (4u << 20) || v > (1ull << 30) : v > 4095)) {
				fprintf(stderr, "rt_check: --%s: want %s\n",
					c == 'M' ? "max-size" : "offset",
					c == 'M' ? "4 MiB .. 1 GiB" : "0 .. 4095");
				return 2;
			}
			*(c == 'M' ? &big_size : &buf_offset) = (size_t)v;
			break;
		}
		case 'P':
			use_pp_malloc = 1;
			break;
		case 'E':
			if (strcmp(optarg, "direct") && strcmp(optarg, "frames")) {
				fprintf(stderr, "rt_check: --expect-copy: direct or frames\n");
				return 2;
			}
			expect_copy = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	const char *sc = argv[optind];
	static const char *const known[] = {"sizes", "many",	   "match",    "trunc", "earlylate",
					    "kill",  "killsend",   "handlers", "crash", "predict",
					    "evict", "daemonpull", "badpull",  "storm", "all"};
	int ok = 0;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		ok |= strcmp(sc, known[i]) == 0;
	if (!ok) {
		fprintf(stderr, "rt_check: unknown scenario '%s' (see --help)\n", sc);
		return 2;
	}

	pp_ctx *ctx;
	int rc = pp_init(&ctx, cfg);
	if (rc) {
		fprintf(stderr, "rt_check: pp_init: %s\n", pp_strerror(rc));
		return 1;
	}
	rank_ = pp_rank(ctx);
	size_ = pp_size(ctx);
	int pairs = strcmp(sc, "many") != 0 && strcmp(sc, "match") != 0 && strcmp(sc, "storm") != 0;
	if (size_ < 2 || (pairs && size_ % 2)) {
		fprintf(stderr, "rt_check: %s needs %s ranks (have %d)\n", sc,
			pairs ? "an even number of" : "at least 2", size_);
		pp_finalize(ctx);
		return 2;
	}
	const char *t = getenv("PP_TIMEOUT_MS");
	unsigned timeout_ms = t ? (unsigned)strtoul(t, NULL, 10) : 10000;
	if (cfg && strstr(cfg, "timeout_ms="))
		timeout_ms = (unsigned)strtoul(strstr(cfg, "timeout_ms=") + 11, NULL, 10);

	int all = strcmp(sc, "all") == 0;
	if (all || strcmp(sc, "sizes") == 0)
		sc_sizes(ctx);
	if (all || strcmp(sc, "many") == 0)
		sc_many(ctx);
	if (strcmp(sc, "storm") == 0)
		sc_storm(ctx);
	if (all || strcmp(sc, "match") == 0)
		sc_match(ctx);
	if (all || strcmp(sc, "trunc") == 0)
		sc_trunc(ctx);
	if (all || strcmp(sc, "earlylate") == 0)
		sc_earlylate(ctx);
	if (strcmp(sc, "kill") == 0)
		sc_kill(ctx, timeout_ms);
	if (strcmp(sc, "killsend") == 0)
		sc_killsend(ctx, timeout_ms);
	if (strcmp(sc, "handlers") == 0)
		sc_handlers(ctx, expect_served, max_s);
	if (strcmp(sc, "crash") == 0)
		sc_crash(ctx);
	if (strcmp(sc, "daemonpull") == 0)
		sc_daemonpull(ctx, expect_served, max_s);
	if (strcmp(sc, "badpull") == 0)
		sc_badpull(ctx);
	if (strcmp(sc, "predict") == 0) {
		const char *sb = getenv("PP_STAGE_BYTES");
		uint64_t budget = sb ? strtoull(sb, NULL, 0) : 4u << 20;
		if (cfg && strstr(cfg, "stage_bytes="))
			budget = strtoull(strstr(cfg, "stage_bytes=") + 12, NULL, 0);
		const char *sr = getenv("PP_STAGE_REMAP");
		int remap = sr && strtoul(sr, NULL, 0) != 0;
		if (cfg && strstr(cfg, "stage_remap="))
			remap = strtoul(strstr(cfg, "stage_remap=") + 12, NULL, 0) != 0;
		sc_predict(ctx, budget, remap);
	}
	if (strcmp(sc, "evict") == 0)
		sc_evict(ctx, cfg && strstr(cfg, "predict=") && !strstr(cfg, "predict=off"));

	struct pp_stats ps;
	if (pp_get_stats(ctx, &ps) == 0) {
		say("stats: frames tx %llu rx %llu, retransmits %llu, nacks %llu, crc drops %llu",
		    (unsigned long long)ps.frames_tx, (unsigned long long)ps.frames_rx,
		    (unsigned long long)ps.retransmits, (unsigned long long)ps.nacks_tx,
		    (unsigned long long)ps.drops[PP_DROP_CRC]);
		EXPECT(!expect_loss || ps.retransmits + ps.nacks_tx > 0,
		       "--expect-loss: no frame was retransmitted or NACKed");
	}
	rc = pp_finalize(ctx);
	/* After a kill, peers that never talked to the dead rank wait for its
	 * goodbye in vain: pp_finalize then reports -ETIMEDOUT, as documented. */
	if ((strncmp(sc, "kill", 4) == 0 || strcmp(sc, "crash") == 0) && rc == -ETIMEDOUT)
		rc = 0;
	/* badpull: the receive of the failed send stays posted, so the
	 * receiver is never drained (it gives up, -ETIMEDOUT, with one BYE). */
	if (strcmp(sc, "badpull") == 0 && rc == -ETIMEDOUT)
		rc = 0;
	EXPECT(rc == 0, "pp_finalize: %s", pp_strerror(rc));
	if (failures)
		say("rt_check %s: %d check(s) FAILED", sc, failures);
	return failures ? 1 : 0;
}
