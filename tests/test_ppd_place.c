/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The placement descriptors between a rank and its daemon (ppd_place.h):
 * the rank's post and cancel against a daemon thread's take, write and give,
 * on a region header in this process. Checked: fields as posted, a take
 * after the cancel finds nothing, a cancel waits while a write is under way
 * and returns only after it, and (a race run) no byte is ever written into
 * a buffer after the cancel that took its description back returned.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "ppd/ppd_place.h"

static struct ppd_region_hdr *hdr_new(void)
{
	struct ppd_region_hdr *h = calloc(1, sizeof(*h));
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	return h;
}

static void test_post_take(void)
{
	struct ppd_region_hdr *h = hdr_new();
	uint8_t buf[64];
	CU_ASSERT(ppd_place_post(h, 3, 7, 17, (uint64_t)(uintptr_t)buf, 64, 8) >= 0);
	CU_ASSERT_EQUAL(ppd_place_posted(h, 3, 17), 1);
	CU_ASSERT_EQUAL(ppd_place_posted(h, 3, 18), 0);
	CU_ASSERT_EQUAL(ppd_place_posted(h, 2, 17), 0);
	/* Zeroed: a take that finds nothing stops the test, which the compiler
	 * without LTO cannot see (-Wmaybe-uninitialized). */
	struct ppd_place e = {0};
	CU_ASSERT_PTR_NULL(ppd_place_take(h, 3, 18, &e));
	struct ppd_place *x = ppd_place_take(h, 3, 17, &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_EQUAL(e.addr, (uint64_t)(uintptr_t)buf);
	CU_ASSERT_EQUAL(e.len, 64);
	CU_ASSERT_EQUAL(e.from, 8);
	CU_ASSERT_EQUAL(e.src_inc, 7);
	CU_ASSERT_EQUAL(x->state, PPD_PLACE_BUSY);
	/* Held by one handler: another cannot take it. */
	CU_ASSERT_PTR_NULL(ppd_place_take(h, 3, 17, &e));
	ppd_place_give(x, 40); /* the daemon placed up to 40: the next frame starts there */
	CU_ASSERT_EQUAL(x->state, PPD_PLACE_POSTED);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ppd_place_take(h, 3, 17, &e));
	CU_ASSERT_EQUAL(e.from, 40);
	ppd_place_give(x, e.from);
	CU_ASSERT_EQUAL(ppd_place_cancel(h, 3, 17, NULL, NULL), 1);
	CU_ASSERT_EQUAL(x->state, PPD_PLACE_FREE);
	CU_ASSERT_PTR_NULL(ppd_place_take(h, 3, 17, &e)); /* gone: frames go whole */
	CU_ASSERT_EQUAL(ppd_place_cancel(h, 3, 17, NULL, NULL), 0);
	free(h);
}

static void test_full_and_reuse(void)
{
	struct ppd_region_hdr *h = hdr_new();
	for (uint32_t i = 0; i < PPD_PLACES; i++)
		CU_ASSERT_EQUAL(ppd_place_post(h, 1, 7, i, 0x1000, 100, 0), (int)i);
	CU_ASSERT_EQUAL(ppd_place_post(h, 1, 7, 999, 0x1000, 100, 0), -ENOSPC);
	CU_ASSERT_EQUAL(ppd_place_cancel(h, 1, 5, NULL, NULL), 1);
	CU_ASSERT_EQUAL(ppd_place_post(h, 2, 7, 5, 0x2000, 50, 0), 5); /* entry reused */
	struct ppd_place e = {0};
	CU_ASSERT_PTR_NULL(ppd_place_take(h, 1, 5, &e)); /* the old message: none */
	struct ppd_place *x = ppd_place_take(h, 2, 5, &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_EQUAL(e.addr, 0x2000);
	ppd_place_give(x, e.from);
	free(h);
}

/* The rank's cancel while a handler holds the entry. */
struct canceller {
	struct ppd_region_hdr *h; /* the region */
	atomic_int started;	  /* the rank is about to cancel */
	atomic_int written;	  /* the handler finished its write */
	int seen;		  /* written, as the rank saw it when cancel returned */
};

static void *cancel_main(void *arg)
{
	struct canceller *c = arg;
	atomic_store(&c->started, 1);
	ppd_place_cancel(c->h, 4, 9, NULL, NULL);
	c->seen = atomic_load(&c->written);
	return NULL;
}

static void test_cancel_waits(void)
{
	struct canceller c = {.h = hdr_new()};
	CU_ASSERT(ppd_place_post(c.h, 4, 7, 9, 0x1000, 100, 0) >= 0);
	struct ppd_place e = {0};
	struct ppd_place *x = ppd_place_take(c.h, 4, 9, &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	pthread_t t;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, cancel_main, &c), 0);
	while (!atomic_load(&c.started))
		sched_yield();
	for (int i = 0; i < 200; i++) /* let the rank reach its wait */
		sched_yield();
	CU_ASSERT_EQUAL(__atomic_load_n(&x->state, __ATOMIC_ACQUIRE),
			PPD_PLACE_BUSY); /* the rank did not take it */
	atomic_store(&c.written, 1);
	ppd_place_give(x, e.from);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(c.seen, 1);
	CU_ASSERT_EQUAL(x->state, PPD_PLACE_FREE);
	free(c.h);
}

/* A daemon that is gone frees a rank waiting on a BUSY entry. */
static void test_daemon_gone(void)
{
	struct canceller c = {.h = hdr_new()};
	CU_ASSERT(ppd_place_post(c.h, 4, 7, 9, 0x1000, 100, 0) >= 0);
	struct ppd_place e = {0};
	CU_ASSERT_PTR_NOT_NULL_FATAL(ppd_place_take(c.h, 4, 9, &e));
	pthread_t t;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, cancel_main, &c), 0);
	__atomic_store_n(&c.h->daemon_gone, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(c.h->places[0].state, PPD_PLACE_FREE);
	free(c.h);
}

/* Race run: a handler thread takes, writes the whole buffer, gives, as fast
 * as it can; the rank posts, lets it write, cancels, zeroes the buffer and
 * waits for several more handler passes: the buffer must stay zero. */
#define RACE_ROUNDS 2000
#define RACE_LEN    256

struct race {
	struct ppd_region_hdr *h; /* the region */
	uint8_t buf[RACE_LEN];	  /* the receive buffer */
	atomic_uint msg;	  /* message the handler looks for */
	atomic_ulong passes;	  /* handler passes */
	atomic_ulong writes;	  /* ... that wrote */
	atomic_int stop;	  /* end the handler */
};

static void *race_handler(void *arg)
{
	struct race *g = arg;
	while (!atomic_load(&g->stop)) {
		struct ppd_place e;
		struct ppd_place *x = ppd_place_take(g->h, 1, atomic_load(&g->msg), &e);
		if (x) {
			memset((void *)(uintptr_t)e.addr, 0xab, (size_t)e.len);
			atomic_fetch_add(&g->writes, 1);
			ppd_place_give(x, e.from);
		}
		atomic_fetch_add(&g->passes, 1);
	}
	return NULL;
}

static void test_race(void)
{
	struct race *g = calloc(1, sizeof(*g));
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	g->h = hdr_new();
	pthread_t t;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, race_handler, g), 0);
	unsigned dirty = 0;
	for (uint32_t m = 0; m < RACE_ROUNDS; m++) {
		atomic_store(&g->msg, m);
		CU_ASSERT_FATAL(
		    ppd_place_post(g->h, 1, 7, m, (uint64_t)(uintptr_t)g->buf, RACE_LEN, 0) >= 0);
		unsigned long w0 = atomic_load(&g->writes);
		for (int i = 0; i < 100000 && atomic_load(&g->writes) == w0; i++)
			sched_yield();
		CU_ASSERT_EQUAL(ppd_place_cancel(g->h, 1, m, NULL, NULL), 1);
		memset(g->buf, 0, RACE_LEN);
		unsigned long p0 = atomic_load(&g->passes);
		while (atomic_load(&g->passes) < p0 + 3)
			sched_yield();
		for (unsigned i = 0; i < RACE_LEN; i++)
			dirty += g->buf[i] != 0;
	}
	atomic_store(&g->stop, 1);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(dirty, 0);
	CU_ASSERT(atomic_load(&g->writes) >= RACE_ROUNDS / 2); /* the race really ran */
	free(g->h);
	free(g);
}

static int gone_after(void *arg)
{
	return --*(int *)arg <= 0;
}

/* A daemon killed mid-write says nothing in the region: the cancel asks
 * gone() while it waits, and returns once it says the daemon is gone. */
static void test_daemon_killed(void)
{
	struct ppd_region_hdr *h = hdr_new();
	CU_ASSERT(ppd_place_post(h, 4, 7, 9, 0x1000, 100, 0) >= 0);
	struct ppd_place e = {0};
	CU_ASSERT_PTR_NOT_NULL_FATAL(ppd_place_take(h, 4, 9, &e)); /* BUSY for ever */
	int asks = 3;
	CU_ASSERT_EQUAL(ppd_place_cancel(h, 4, 9, gone_after, &asks), 1);
	CU_ASSERT_EQUAL(asks, 0);
	CU_ASSERT_EQUAL(h->places[0].state, PPD_PLACE_FREE);
	free(h);
}

static CU_TestInfo tests[] = {
    {"post, take, give, cancel", test_post_take},
    {"table full, entry reused", test_full_and_reuse},
    {"cancel waits for a write under way", test_cancel_waits},
    {"a gone daemon frees a waiting cancel", test_daemon_gone},
    {"a killed daemon frees a waiting cancel", test_daemon_killed},
    {"no write after cancel (race run)", test_race},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"ppd_place", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
