/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_random: random traffic among the ranks of a job for a given time, every
 * byte checked. Started by pprun (one process per rank, settings from PP_*).
 *
 * The job runs in rounds. Every rank draws the same plan for a round from
 * the seed and the round number: for each rank, a few messages to random
 * peers, of random sizes from 0 B to --max-size (more small ones than large:
 * the size is 2^U(0..log2 max) plus a random part), each with its own tag.
 * Every rank posts the receives for the messages it gets: in a round, all
 * for their source and tag, or all for any source (with the tag, which names
 * one message), or all for any source and any tag (the payload says what it
 * is, so any match is checked; mixing a wildcard with specific receives in
 * one round could leave a specific one without its message),
 * sends its own, waits for all, checks every byte and status, and the round
 * ends with a barrier (so a wildcard receive can only take a message of its
 * round).
 *
 * The payload's first 16 bytes are (round, source, index, length); the
 * rest is a pattern of those. A wrong byte, a wrong status, or an error is a
 * failure: the rank says what and exits 1. When the run is meant to lose
 * ranks (--allow-reset: a daemon killed mid-run), an operation that fails
 * with -ECONNRESET ends the rank cleanly with exit status 3 instead; a hang
 * is what must never happen (pprun --timeout catches one).
 *
 * Prints, at rank 0 at the end: rounds, messages and bytes checked, time.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp.h"

#define MAX_PER_ROUND 8	      /* messages a rank sends in one round, at most */
#define HDR	      16      /* the payload's self-description */
#define TAG_GO	      2000000 /* rank 0's "another round" (or not) */
#define TAG_TOTALS    2000001 /* the counts, to rank 0 at the end */

static int rank_, size_;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* The plan's k-th random number for (round, rank). */
static uint64_t draw(uint64_t seed, uint32_t round, int who, int k)
{
	return mix(seed ^ mix((uint64_t)round << 32 | (uint32_t)who) ^ (uint64_t)k * 0x9E37);
}

struct msg {
	int src, dst; /* who sends it to whom */
	int idx;      /* its index among src's messages of the round */
	int tag;      /* its tag */
	size_t len;   /* its length */
};

/* Messages rank src sends in round (same on every rank). */
static int plan(uint64_t seed, uint32_t round, int src, size_t max, struct msg *out)
{
	int n = 1 + (int)(draw(seed, round, src, 0) % MAX_PER_ROUND);
	unsigned bits = 0;
	while (((size_t)1 << (bits + 1)) <= max)
		bits++;
	for (int i = 0; i < n; i++) {
		uint64_t r = draw(seed, round, src, 1 + i);
		int dst = (int)(r % (uint64_t)(size_ - 1));
		if (dst >= src)
			dst++;
		unsigned b = (unsigned)((r >> 8) % (bits + 1));
		size_t len = ((size_t)1 << b) - 1 + (size_t)((r >> 16) % ((uint64_t)1 << b));
		if (len > max)
			len = max;
		if ((r >> 60) == 0)
			len = 0;
		/* Unique within a round (src < 100), below TAG_GO. */
		out[i] = (struct msg){src, dst, i, (int)(round % 1000) * 1000 + src * 10 + i, len};
	}
	return n;
}

static uint8_t pat(const struct msg *m, uint32_t round, size_t i)
{
	uint64_t x =
	    mix((uint64_t)round << 40 ^ (uint64_t)m->src << 20 ^ (uint64_t)m->idx << 8 ^ i);
	return (uint8_t)x;
}

static void fill(uint8_t *b, const struct msg *m, uint32_t round)
{
	uint32_t h[4] = {round, (uint32_t)m->src, (uint32_t)m->idx, (uint32_t)m->len};
	memcpy(b, h, m->len < HDR ? m->len : HDR);
	for (size_t i = HDR; i < m->len; i++)
		b[i] = pat(m, round, i);
}

static int allow_reset;

/* An operation failed: a clean end when the run may lose ranks. */
static void failed(const char *what, int rc, uint32_t round)
{
	if (allow_reset && rc == -ECONNRESET) {
		printf("rank %d: round %u: %s: %s (a peer or the daemon is gone): stopping\n",
		       rank_, round, what, pp_strerror(rc));
		exit(3);
	}
	printf("FAIL rank %d: round %u: %s: %s\n", rank_, round, what, pp_strerror(rc));
	exit(1);
}

int main(int argc, char **argv)
{
	double seconds = 10;
	size_t max = 4u << 20;
	uint64_t seed = 1;
	static const struct option lo[] = {
	    {"seconds", required_argument, NULL, 't'}, {"max-size", required_argument, NULL, 'm'},
	    {"seed", required_argument, NULL, 's'},    {"allow-reset", no_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},	       {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			seconds = atof(optarg);
			break;
		case 'm':
			max = (size_t)strtoull(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			allow_reset = 1;
			break;
		case 'h':
			printf("usage: rt_random [--seconds S] [--max-size BYTES] [--seed N] "
			       "[--allow-reset]\n"
			       "Random traffic among the ranks of a pprun job for S seconds "
			       "(default 10),\nmessages of 0 B to BYTES (default 4 MiB), every "
			       "byte checked.\n--allow-reset: a peer lost (-ECONNRESET) ends a "
			       "rank cleanly (exit 3).\n");
			return 0;
		default:
			return 2;
		}
	}
	if (seconds <= 0 || max < HDR) {
		fprintf(stderr, "rt_random: bad --seconds or --max-size (at least %d)\n", HDR);
		return 2;
	}
	pp_ctx *ctx;
	int rc = pp_init(&ctx, NULL);
	if (rc) {
		fprintf(stderr, "rt_random: pp_init: %s\n", pp_strerror(rc));
		return 1;
	}
	rank_ = pp_rank(ctx);
	size_ = pp_size(ctx);
	if (size_ < 2 || size_ > 100) {
		fprintf(stderr, "rt_random: needs 2 to 100 ranks\n");
		return 2;
	}
	uint8_t *sb[MAX_PER_ROUND], **rb = calloc((size_t)size_ * MAX_PER_ROUND, sizeof(*rb));
	struct msg *mine = calloc(MAX_PER_ROUND, sizeof(*mine));
	struct msg *in = calloc((size_t)size_ * MAX_PER_ROUND, sizeof(*in));
	pp_req **rr = calloc((size_t)size_ * MAX_PER_ROUND, sizeof(*rr));
	for (int i = 0; i < MAX_PER_ROUND; i++)
		sb[i] = malloc(max);
	for (int i = 0; i < size_ * MAX_PER_ROUND; i++)
		rb[i] = malloc(max);
	uint64_t msgs = 0, bytes = 0;
	double t0 = now_s();
	uint32_t round = 0;
	/* Rank 0 decides when to stop and says so in the round's barrier-like
	 * exchange: every round starts with its verdict, so all stop together. */
	for (;; round++) {
		int go = rank_ == 0 ? now_s() - t0 < seconds : 0;
		if (rank_ == 0) {
			for (int r = 1; r < size_; r++)
				if ((rc = pp_send(ctx, &go, sizeof(go), r, TAG_GO)))
					failed("send of the go", rc, round);
		} else {
			pp_status st;
			if ((rc = pp_recv(ctx, &go, sizeof(go), 0, TAG_GO, &st)))
				failed("receive of the go", rc, round);
		}
		if (!go)
			break;
		int nin = 0;
		struct msg tmp[MAX_PER_ROUND];
		for (int s = 0; s < size_; s++) {
			int n = plan(seed, round, s, max, tmp);
			for (int i = 0; i < n; i++)
				if (tmp[i].dst == rank_)
					in[nin++] = tmp[i];
		}
		int nmine = plan(seed, round, rank_, max, mine);
		/* Receives: 3 rounds in 5 specific, 1 for any source, 1 for
		 * anything; a wildcard one may take any message of the round to
		 * us, so every buffer is max long and the status and payload say
		 * which it got. */
		unsigned how = (unsigned)(draw(seed, round, 1000 + rank_, 0) % 5);
		for (int i = 0; i < nin; i++) {
			int src = how == 3 || how == 4 ? PP_ANY_SOURCE : in[i].src;
			int tag = how == 4 ? PP_ANY_TAG : in[i].tag;
			if ((rc = pp_irecv(ctx, rb[i], max, src, tag, &rr[i])))
				failed("pp_irecv", rc, round);
		}
		pp_req *sr[MAX_PER_ROUND];
		for (int i = 0; i < nmine; i++) {
			fill(sb[i], &mine[i], round);
			if ((rc = pp_isend(ctx, sb[i], mine[i].len, mine[i].dst, mine[i].tag,
					   &sr[i])))
				failed("pp_isend", rc, round);
		}
		for (int i = 0; i < nmine; i++) {
			pp_status st;
			if ((rc = pp_wait(&sr[i], &st)))
				failed("send", rc, round);
		}
		/* Which message each receive got: by its status and payload. */
		uint8_t *seen = calloc((size_t)nin + 1, 1);
		for (int i = 0; i < nin; i++) {
			pp_status st;
			if ((rc = pp_wait(&rr[i], &st)))
				failed("receive", rc, round);
			const struct msg *m = NULL;
			for (int k = 0; k < nin && !m; k++)
				if (in[k].src == st.source && in[k].tag == st.tag && !seen[k])
					m = &in[k];
			if (!m || st.len != m->len) {
				printf("FAIL rank %d: round %u: a message from %d tag %d of %zu B "
				       "that the plan does not have\n",
				       rank_, round, st.source, st.tag, st.len);
				return 1;
			}
			seen[m - in] = 1;
			uint32_t h[4] = {round, (uint32_t)m->src, (uint32_t)m->idx,
					 (uint32_t)m->len};
			if (memcmp(rb[i], h, m->len < HDR ? m->len : HDR) != 0) {
				printf("FAIL rank %d: round %u: header of %zu B from %d wrong\n",
				       rank_, round, m->len, m->src);
				return 1;
			}
			for (size_t b = HDR; b < m->len; b++)
				if (rb[i][b] != pat(m, round, b)) {
					printf("FAIL rank %d: round %u: byte %zu of %zu from %d "
					       "wrong\n",
					       rank_, round, b, m->len, m->src);
					return 1;
				}
			msgs++;
			bytes += m->len;
		}
		free(seen);
		if ((rc = pp_barrier(ctx)))
			failed("pp_barrier", rc, round);
	}
	double t = now_s() - t0;
	uint64_t all[2] = {msgs, bytes};
	if (rank_ == 0) {
		for (int r = 1; r < size_; r++) {
			uint64_t x[2];
			pp_status st;
			if ((rc = pp_recv(ctx, x, sizeof(x), r, TAG_TOTALS, &st)))
				failed("receive of the totals", rc, round);
			all[0] += x[0];
			all[1] += x[1];
		}
		printf("rt_random: %d ranks, %u rounds, %" PRIu64 " messages and %" PRIu64
		       " bytes checked in %.1f s, failures: 0\n",
		       size_, round, all[0], all[1], t);
	} else if ((rc = pp_send(ctx, all, sizeof(all), 0, TAG_TOTALS))) {
		failed("send of the totals", rc, round);
	}
	rc = pp_finalize(ctx);
	if (rc) {
		printf("FAIL rank %d: pp_finalize: %s\n", rank_, pp_strerror(rc));
		return 1;
	}
	return 0;
}
