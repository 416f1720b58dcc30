/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The runtime's intranode link (runtime/shm_link.c) with a neighbour that
 * rewrites the node segment's header and slot table while the job runs: two
 * ranks (threads, one node name, their own contexts and "sim:" ports)
 * exchange messages of every path (ring frames, single copies from the
 * sender's buffer and from pp_malloc memory, writes into receives posted
 * early), then the header's offsets and sizes, the slots' ranks and pids
 * are overwritten through the process's own mapping of the segment, and
 * they exchange again: every byte arrives, nothing faults. A rank that read
 * the header again would write to where it points now (far past the
 * mapping).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cu_main.h"
#include "pp.h"
#include "segment.h"
#include "sim/pp_sim.h"

static struct pp_sim_link *link_;
static char job[32];
static pthread_barrier_t bar;
static atomic_int hostile_done; /* 1 once the header was rewritten, -1 when not found */
static const char *extra;	/* more pp_init settings */

struct run {
	int rank;	 /* who */
	int failures;	 /* counted by the thread */
	char first[200]; /* the first failure */
};

#define EXPECT(run, cond)                                                                          \
	do {                                                                                       \
		if (!(cond) && !(run)->failures++)                                                 \
			snprintf((run)->first, sizeof((run)->first), "rank %d line %d: %s",        \
				 (run)->rank, __LINE__, #cond);                                    \
	} while (0)

static uint8_t pat(size_t i, int seed)
{
	return (uint8_t)(i * 13u + (unsigned)seed * 71u + (i >> 11));
}

static const size_t sizes[] = {0, 100, 5000, 100000, 1 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Every size both ways, from malloc and from pp_malloc memory, every byte
 * checked; round makes each phase's bytes its own. */
static void exchange(struct run *run, pp_ctx *ctx, int round)
{
	size_t max = sizes[NSIZES - 1];
	for (int heap = 0; heap < 2; heap++) {
		uint8_t *s = heap ? pp_malloc(ctx, max) : malloc(max);
		uint8_t *r = heap ? pp_malloc(ctx, max) : malloc(max);
		EXPECT(run, s && r);
		if (!s || !r)
			return;
		for (size_t k = 0; k < NSIZES; k++) {
			size_t n = sizes[k];
			int tag = round * 100 + heap * 10 + (int)k;
			pp_status st;
			for (size_t i = 0; i < n; i++)
				s[i] = pat(i, tag + run->rank);
			memset(r, 0xEE, n);
			if (run->rank == 0) {
				EXPECT(run, pp_send(ctx, s, n, 1, tag) == 0);
				EXPECT(run, pp_recv(ctx, r, n, 1, tag, &st) == 0);
			} else {
				EXPECT(run, pp_recv(ctx, r, n, 0, tag, &st) == 0);
				EXPECT(run, pp_send(ctx, s, n, 0, tag) == 0);
			}
			EXPECT(run, st.len == n && st.error == 0);
			size_t bad = 0;
			for (size_t i = 0; i < n; i++)
				bad += r[i] != pat(i, tag + !run->rank);
			EXPECT(run, bad == 0);
		}
		if (heap) {
			pp_free(ctx, s);
			pp_free(ctx, r);
		} else {
			free(s);
			free(r);
		}
	}
}

/* Rewrite the segment's header through this process's mapping of it (the
 * object is unlinked by now: /proc/self/maps still names it). */
static int rewrite_header(void)
{
	char want[PP_SHM_NAME_MAX], line[512];
	if (pp_shm_seg_name(want, sizeof(want), job, "secnode"))
		return -1;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	unsigned long lo = 0, hi = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, want) && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			break;
		else
			lo = 0;
	fclose(f);
	if (!lo)
		return -1;
	struct pp_shm_hdr *h = (struct pp_shm_hdr *)lo;
	h->descs_off = 0x7fff000100a0ull;
	h->rings_off = 1ull << 44;
	h->recvqs_off = UINT64_MAX - 4095;
	h->heaps_off = 8;
	h->ring_bytes = 1ull << 40;
	h->heap_bytes = 1ull << 41;
	h->size = 4096;
	h->nlocal = 64;
	h->ring_cells = 1u << 31;
	for (int i = 0; i < 2; i++) {
		h->slot[i].rank = 1000 + (uint32_t)i;
		atomic_store(&h->slot[i].pid, 1); /* init: not a peer */
	}
	return 0;
}

static void *rank_main(void *arg)
{
	struct run *run = arg;
	char cfg[256];
	snprintf(cfg, sizeof(cfg),
		 "rank=%d,size=2,job=%s,node=secnode,dev=sim:%s/%d,timeout_ms=5000,shm_heap=8m%s",
		 run->rank, job, job, run->rank, extra);
	pp_ctx *ctx;
	int rc = pp_init(&ctx, cfg);
	EXPECT(run, rc == 0);
	pthread_barrier_wait(&bar);
	if (rc) {
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
		return NULL;
	}
	exchange(run, ctx, 0);
	EXPECT(run, pp_barrier(ctx) == 0);
	pthread_barrier_wait(&bar);
	if (run->rank == 0)
		atomic_store(&hostile_done, rewrite_header() == 0 ? 1 : -1);
	pthread_barrier_wait(&bar);
	exchange(run, ctx, 1);
	EXPECT(run, pp_barrier(ctx) == 0);
	EXPECT(run, pp_finalize(ctx) == 0);
	return NULL;
}

static void run_pair(const char *more)
{
	static int n;
	extra = more;
	atomic_store(&hostile_done, 0);
	snprintf(job, sizeof(job), "seclink%d-%d", (int)getpid(), n++);
	struct pp_sim_conf sc = {.seed = 7, .mtu = 1500};
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&link_, job, 2, &sc), 0);
	pthread_barrier_init(&bar, NULL, 2);
	struct run runs[2] = {{.rank = 0}, {.rank = 1}};
	pthread_t th[2];
	for (int r = 0; r < 2; r++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[r], NULL, rank_main, &runs[r]), 0);
	for (int r = 0; r < 2; r++) {
		pthread_join(th[r], NULL);
		if (runs[r].failures)
			fprintf(stderr, "\n  %s (%d failures)\n", runs[r].first, runs[r].failures);
		CU_ASSERT_EQUAL(runs[r].failures, 0);
	}
	CU_ASSERT_EQUAL(atomic_load(&hostile_done), 1); /* the segment was there and rewritten */
	pthread_barrier_destroy(&bar);
	pp_sim_link_destroy(link_);
}

/* Receives posted early: the sender writes into them. */
static void test_header_rewritten(void)
{
	run_pair("");
}

/* No sender writes: the receiver copies from the sender's buffer. */
static void test_header_rewritten_pull(void)
{
	run_pair(",shm_write=off");
}

static CU_TestInfo tests[] = {
    {"segment header rewritten while two local ranks talk", test_header_rewritten},
    {"... and copy from each other's buffers", test_header_rewritten_pull},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sec_link", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
