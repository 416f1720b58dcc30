/* SPDX-License-Identifier: BSD-3-Clause */
/* proto/tagq: hashed matching gives what an ordered list would, for every
 * mix of exact receives, ignored protocol bits, any-tag and any-source
 * receives, in both directions; the mask narrows once per bit. */
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "tagq.h"

#define N 2048

/* The reference: the same entries in one ordered array, matched by a
 * walk. */
struct ref {
	struct pp_tagq_entry *e[N];
	int n;
};

static void ref_add(struct ref *r, struct pp_tagq_entry *e)
{
	r->e[r->n++] = e;
}

static void ref_del(struct ref *r, struct pp_tagq_entry *e)
{
	for (int i = 0; i < r->n; i++)
		if (r->e[i] == e) {
			memmove(&r->e[i], &r->e[i + 1], sizeof(r->e[0]) * (size_t)(r->n - i - 1));
			r->n--;
			return;
		}
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A receive as MPI libraries post them: tag bits 0-31 the tag, bit 62 a
 * protocol bit every receive ignores (as Open MPI's synchronous-send bit),
 * some with any tag or any source. */
#define PROTO_BIT (1ull << 62)
#define TAG_BITS  0xffffffffull

static void random_recv(struct pp_tagq_entry *e, int nsrc, int ntag)
{
	memset(e, 0, sizeof(*e));
	uint64_t k = next() % 100;
	e->src = k < 10 ? PP_TAGQ_ANY : (int32_t)(next() % (uint64_t)nsrc);
	e->tag = next() % (uint64_t)ntag | (next() % 4 == 0 ? 7ull << 40 : 0);
	e->ignore = PROTO_BIT | (k >= 10 && k < 20 ? TAG_BITS : 0);
}

static void random_msg(struct pp_tagq_entry *e, int nsrc, int ntag)
{
	memset(e, 0, sizeof(*e));
	e->src = (int32_t)(next() % (uint64_t)nsrc);
	e->tag = next() % (uint64_t)ntag | (next() % 4 == 0 ? 7ull << 40 : 0) |
		 (next() % 2 ? PROTO_BIT : 0);
}

/* Messages meet posted receives, receives meet unexpected messages, in a
 * random interleaving; every match must be the reference's. */
static void run(int nsrc, int ntag, int steps, int deep)
{
	static struct pp_tagq_entry pool[2 * N];
	static struct ref posted_ref, unexp_ref;
	struct pp_tagq posted, unexp;
	CU_ASSERT_FATAL(pp_tagq_init(&posted, N) == 0);
	CU_ASSERT_FATAL(pp_tagq_init(&unexp, N) == 0);
	posted_ref.n = unexp_ref.n = 0;
	int used = 0, bad = 0;
	struct pp_tagq_entry *freel[2 * N];
	int nfree = 0;
	for (int s = 0; s < steps; s++) {
		struct pp_tagq_entry *e = nfree		 ? freel[--nfree]
					  : used < 2 * N ? &pool[used++]
							 : NULL;
		if (!e)
			break;
		if (next() % 2) { /* a receive is posted */
			random_recv(e, nsrc, ntag);
			pp_tagq_narrow(&unexp, e->src, e->ignore);
			struct pp_tagq_entry *got =
			    pp_tagq_find_msg(&unexp, e->src, e->tag, e->ignore);
			struct pp_tagq_entry *want = NULL;
			for (int i = 0; i < unexp_ref.n && !want; i++)
				if (pp_tagq_match(e->src, e->tag, e->ignore,
						  (uint32_t)unexp_ref.e[i]->src,
						  unexp_ref.e[i]->tag))
					want = unexp_ref.e[i];
			bad += got != want;
			if (got) {
				pp_tagq_del(&unexp, got);
				ref_del(&unexp_ref, got);
				freel[nfree++] = got;
				freel[nfree++] = e;
			} else if (posted_ref.n < N) {
				pp_tagq_add(&posted, e);
				ref_add(&posted_ref, e);
			} else {
				freel[nfree++] = e;
			}
		} else { /* a message comes */
			random_msg(e, nsrc, ntag);
			struct pp_tagq_entry *got =
			    pp_tagq_find_recv(&posted, (uint32_t)e->src, e->tag);
			struct pp_tagq_entry *want = NULL;
			for (int i = 0; i < posted_ref.n && !want; i++)
				if (pp_tagq_match(posted_ref.e[i]->src, posted_ref.e[i]->tag,
						  posted_ref.e[i]->ignore, (uint32_t)e->src,
						  e->tag))
					want = posted_ref.e[i];
			bad += got != want;
			if (got) {
				pp_tagq_del(&posted, got);
				ref_del(&posted_ref, got);
				freel[nfree++] = got;
				freel[nfree++] = e;
			} else if (unexp_ref.n < N) {
				pp_tagq_add(&unexp, e);
				ref_add(&unexp_ref, e);
			} else {
				freel[nfree++] = e;
			}
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(posted.n, (uint32_t)posted_ref.n);
	CU_ASSERT_EQUAL(unexp.n, (uint32_t)unexp_ref.n);
	/* The protocol bit left both masks, once each; any-tag left them whole. */
	CU_ASSERT_EQUAL(posted.mask, ~PROTO_BIT);
	CU_ASSERT_EQUAL(unexp.mask, ~PROTO_BIT);
	CU_ASSERT_EQUAL(posted.narrowed, 1);
	CU_ASSERT_EQUAL(unexp.narrowed, 1);
	CU_ASSERT_EQUAL(posted.filed, deep);
	CU_ASSERT_EQUAL(unexp.filed, deep);
	pp_tagq_fini(&posted);
	pp_tagq_fini(&unexp);
}

static void test_few_keys(void)
{
	run(2, 3, 200000, 1); /* many equal keys: order within a bucket decides */
}

static void test_many_keys(void)
{
	run(64, 1 << 20, 200000, 1); /* deep queues of distinct keys */
}

static void test_mid(void)
{
	run(8, 64, 200000, 1);
}

/* Queues that stay short are lists: the same answers. */
static void test_short(void)
{
	run(2, 4, 12, 0);
}

/* Earliest wins across the two places a receive can be filed. */
static void test_wildcard_order(void)
{
	struct pp_tagq q;
	CU_ASSERT_FATAL(pp_tagq_init(&q, 64) == 0);
	struct pp_tagq_entry a = {.src = 3, .tag = 9}, w = {.src = PP_TAGQ_ANY, .tag = 9},
			     b = {.src = 3, .tag = 9};
	pp_tagq_add(&q, &a);
	pp_tagq_add(&q, &w);
	pp_tagq_add(&q, &b);
	for (int i = 0; i < PP_TAGQ_LIST_MAX; i++) { /* deep enough to be filed */
		static struct pp_tagq_entry pad[PP_TAGQ_LIST_MAX];
		pad[i] = (struct pp_tagq_entry){.src = 100, .tag = (uint64_t)i};
		pp_tagq_add(&q, &pad[i]);
	}
	CU_ASSERT(!q.filed);				    /* a list until a walk is long */
	CU_ASSERT_PTR_NULL(pp_tagq_find_recv(&q, 100, 99)); /* passes all 19 */
	CU_ASSERT(q.filed);
	CU_ASSERT(a.hashed && !w.hashed && b.hashed);
	CU_ASSERT_PTR_EQUAL(pp_tagq_find_recv(&q, 3, 9), &a);
	pp_tagq_del(&q, &a);
	CU_ASSERT_PTR_EQUAL(pp_tagq_find_recv(&q, 3, 9), &w); /* posted before b */
	CU_ASSERT_PTR_EQUAL(pp_tagq_find_recv(&q, 4, 9), &w);
	pp_tagq_del(&q, &w);
	CU_ASSERT_PTR_EQUAL(pp_tagq_find_recv(&q, 3, 9), &b);
	CU_ASSERT_PTR_NULL(pp_tagq_find_recv(&q, 4, 9));
	CU_ASSERT_PTR_NULL(pp_tagq_find_recv(&q, 3, 8));
	pp_tagq_del(&q, &b);
	CU_ASSERT_EQUAL(q.n, PP_TAGQ_LIST_MAX);
	/* Many ignored bits (any tag) leave the mask whole: a wildcard. */
	struct pp_tagq_entry t = {.src = 1, .tag = 0, .ignore = 0xffffffff};
	pp_tagq_add(&q, &t);
	CU_ASSERT(!t.hashed);
	CU_ASSERT_EQUAL(q.mask, ~0ull);
	CU_ASSERT_PTR_EQUAL(pp_tagq_find_recv(&q, 1, 12345), &t);
	pp_tagq_fini(&q);
}

/* A deep queue whose matches are at its front stays a list: a window of
 * receives under one key, taken in order; likewise messages taken in the
 * order they came. One walk past PP_TAGQ_LIST_MAX entries files it, its
 * buckets sized for its depth, and the answers stay the same. */
static void test_front_stays_list(void)
{
	enum { DEPTH = 1000 };
	static struct pp_tagq_entry r[DEPTH], m[DEPTH];
	for (int msgs = 0; msgs < 2; msgs++) {
		struct pp_tagq q;
		struct pp_tagq_entry *e = msgs ? m : r;
		CU_ASSERT_FATAL(pp_tagq_init(&q, 16) == 0);
		for (int round = 0; round < 3; round++) {
			for (int i = 0; i < DEPTH; i++) {
				e[i] =
				    (struct pp_tagq_entry){.src = 2, .tag = msgs ? (uint64_t)i : 7};
				pp_tagq_add(&q, &e[i]);
			}
			for (int i = 0; i < DEPTH; i++) {
				struct pp_tagq_entry *got =
				    msgs ? pp_tagq_find_msg(&q, 2, (uint64_t)i, 0)
					 : pp_tagq_find_recv(&q, 2, 7);
				CU_ASSERT_PTR_EQUAL(got, &e[i]);
				if (got)
					pp_tagq_del(&q, got);
			}
			CU_ASSERT(!q.filed);
		}
		/* Out of order: the walk for the last passes the rest. */
		for (int i = 0; i < DEPTH; i++) {
			e[i] = (struct pp_tagq_entry){.src = 2, .tag = (uint64_t)i};
			pp_tagq_add(&q, &e[i]);
		}
		for (int i = DEPTH - 1; i >= 0; i--) {
			struct pp_tagq_entry *got = msgs ? pp_tagq_find_msg(&q, 2, (uint64_t)i, 0)
							 : pp_tagq_find_recv(&q, 2, (uint64_t)i);
			CU_ASSERT_PTR_EQUAL(got, &e[i]);
			CU_ASSERT(q.filed);
			if (got)
				pp_tagq_del(&q, got);
		}
		CU_ASSERT(q.nbucket * 4 >= DEPTH); /* sized for the depth it was filed at */
		CU_ASSERT_EQUAL(q.n, 0u);
		pp_tagq_fini(&q);
	}
}

static CU_TestInfo tests[] = {
    {"a message takes the earlier of bucket and wildcard", test_wildcard_order},
    {"short queues are lists", test_short},
    {"a deep queue matched at its front stays a list", test_front_stays_list},
    {"as a list would: few keys", test_few_keys},
    {"as a list would: some keys", test_mid},
    {"as a list would: many keys, deep queues", test_many_keys},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"proto tagq", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
