/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * progress=event's thread and the rank's core (runtime/event.c): the
 * thread shares the core with the computation it serves, so whoever can
 * put frames on the link must not be able to take that core.
 *
 * - Its scheduling policy is SCHED_OTHER unless event_fifo=1 asks for
 *   SCHED_FIFO, even when the application itself runs at SCHED_FIFO (a
 *   thread at real-time priority that kept busy would never give the core
 *   back).
 * - A flood of frames the engine drops (another job's, corrupt, from a rank
 *   outside the job) on the rank's in-memory link is no work: the thread
 *   does no pass with work, sleeps after its wakeups, and its CPU time stays
 *   far below the flood's length.
 * - A frame that matters still wakes it: a message sent to a rank that is
 *   not in any call is taken by the thread.
 * - Its busy budget: in each slice it runs at most PP_EVENT_BUSY_NS.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cu_main.h"
#include "event.h"
#include "pp.h"
#include "pp_log.h"
#include "pp_port.h"
#include "sim/pp_sim.h"
#include "wire.h"

#define JOB	   7u		 /* the job's key on the wire */
#define FLOOD_NS   1000000000u	 /* how long the junk flood lasts */
#define WAIT_NS	   5000000000ull /* the longest wait for what must happen */
#define JUNK_BURST 32u

static int link_gen;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t cpu_ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void nap_us(unsigned us)
{
	struct timespec t = {0, (long)us * 1000};
	nanosleep(&t, NULL);
}

/* A fresh link of nports ports; its name in name. */
static struct pp_sim_link *new_link(char *name, size_t cap, unsigned nports)
{
	struct pp_sim_conf sc = {.seed = 9, .mtu = 1500};
	struct pp_sim_link *l = NULL;
	snprintf(name, cap, "ev%d", link_gen++);
	CU_ASSERT_EQUAL(pp_sim_link_create(&l, name, nports, &sc), 0);
	return l;
}

/* A rank of size ranks on port rank of link, progress=event and extra. */
static pp_ctx *open_rank(const char *link, int rank, int size, const char *extra)
{
	char cfg[256];
	snprintf(cfg, sizeof(cfg),
		 "rank=%d,size=%d,job=%u,node=n%d,dev=sim:%s/%d,timeout_ms=5000,progress=%s%s%s",
		 rank, size, JOB, rank, link, rank, rank == 0 ? "event" : "inline",
		 extra ? "," : "", extra ? extra : "");
	pp_ctx *ctx = NULL;
	int rc = pp_init(&ctx, cfg);
	CU_ASSERT_EQUAL(rc, 0);
	return rc ? NULL : ctx;
}

/* The policy of ctx's event thread, or -1. */
static int event_policy(pp_ctx *ctx)
{
	struct pp_event_counts c;
	pthread_t th;
	int pol;
	struct sched_param sp;
	if (pp_event_counts(ctx, &c, &th) || pthread_getschedparam(th, &pol, &sp))
		return -1;
	return pol;
}

/* May this process put a thread at SCHED_FIFO? Tried on the caller, which
 * goes back to SCHED_OTHER. */
static int fifo_permitted(void)
{
	struct sched_param fifo = {.sched_priority = 1}, other = {.sched_priority = 0};
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo))
		return 0;
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
	return 1;
}

struct policy_run {
	const char *link;  /* the link's name */
	const char *extra; /* settings */
	int policy;	   /* the event thread's, or -1 */
};

static void *policy_main(void *arg)
{
	struct policy_run *r = arg;
	pp_ctx *ctx = open_rank(r->link, 0, 1, r->extra);
	r->policy = ctx ? event_policy(ctx) : -1;
	if (ctx)
		CU_ASSERT_EQUAL(pp_finalize(ctx), 0);
	return NULL;
}

/* The thread runs SCHED_OTHER unless asked; SCHED_FIFO when asked (and
 * permitted); SCHED_OTHER still when the application is at SCHED_FIFO. */
static void test_policy(void)
{
	char name[32];
	struct pp_sim_link *l = new_link(name, sizeof(name), 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	pp_ctx *ctx = open_rank(name, 0, 1, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	CU_ASSERT_EQUAL(event_policy(ctx), SCHED_OTHER);
	CU_ASSERT_EQUAL(pp_finalize(ctx), 0);

	if (!fifo_permitted()) {
		fprintf(stderr, "\n  skipped: SCHED_FIFO is not permitted here (no CAP_SYS_NICE or "
				"no real-time budget): event_fifo=1 and an application at "
				"SCHED_FIFO not checked\n");
		pp_sim_link_destroy(l);
		return;
	}
	ctx = open_rank(name, 0, 1, "event_fifo=1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	CU_ASSERT_EQUAL(event_policy(ctx), SCHED_FIFO);
	CU_ASSERT_EQUAL(pp_finalize(ctx), 0);

	/* An application thread at SCHED_FIFO: the event thread does not
	 * inherit it. */
	pthread_attr_t attr;
	struct sched_param fifo = {.sched_priority = 1};
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &fifo);
	struct policy_run r = {name, NULL, -1};
	pthread_t th;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, &attr, policy_main, &r), 0);
	pthread_join(th, NULL);
	pthread_attr_destroy(&attr);
	CU_ASSERT_EQUAL(r.policy, SCHED_OTHER);
	pp_sim_link_destroy(l);
}

/* Frame kind k of the junk, for port 0 of the link, into buf; its length. */
static int junk_frame(uint8_t *buf, size_t cap, unsigned k)
{
	static const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0}, src[6] = {0x02, 0, 0, 0, 0, 1};
	static uint8_t payload[64];
	struct pp_wire_hdr h = {
	    .type = PP_WIRE_PUSH,
	    .flags = PP_WIRE_F_FIRST | PP_WIRE_F_LAST,
	    .payload_len = sizeof(payload),
	    .job = JOB,
	    .src_rank = 0,
	    .dst_rank = 0,
	    .msg_id = 1,
	    .msg_len = sizeof(payload),
	    .src_inc = 1,
	};
	if (k == 0)
		h.job = JOB + 1; /* another job's */
	else if (k == 1)
		h.src_rank = 5; /* a rank outside the job */
	int len = pp_wire_encode(buf, cap, dst, src, &h, payload);
	if (k == 2 && len > 0)
		buf[len - 5] ^= 0x40; /* the job's own frame, corrupt (its crc fails) */
	return len;
}

/* A flood of frames the engine drops: the thread counts none as work,
 * sleeps after the wakeups they cause, and stays off the core. Without
 * that, each burst of them was a pass with work and the thread went round
 * again at once for as long as they came. */
static void test_junk_flood(void)
{
	char name[32];
	struct pp_sim_link *l = new_link(name, sizeof(name), 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	pp_ctx *ctx = open_rank(name, 0, 1, NULL); /* a job of one: nothing real can come */
	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	struct pp_port *inj = NULL;
	char dev[48];
	snprintf(dev, sizeof(dev), "sim:%s/1", name);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&inj, dev, NULL), 0);
	uint8_t frames[3][256];
	int lens[3];
	for (unsigned k = 0; k < 3; k++) {
		lens[k] = junk_frame(frames[k], sizeof(frames[k]), k);
		CU_ASSERT_FATAL(lens[k] > 0);
	}

	struct pp_event_counts c0, c1;
	pthread_t th;
	clockid_t clk;
	nap_us(50000); /* pp_init's own frames are done with */
	CU_ASSERT_EQUAL_FATAL(pp_event_counts(ctx, &c0, &th), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_getcpuclockid(th, &clk), 0);
	struct pp_stats s0, s1;
	CU_ASSERT_EQUAL(pp_get_stats(ctx, &s0), 0);
	uint64_t cpu0 = cpu_ns(clk), t0 = now_ns(), sent = 0;
	unsigned k = 0;
	while (now_ns() - t0 < FLOOD_NS) {
		struct pp_buf *b[JUNK_BURST];
		unsigned n = pp_port_alloc(inj, b, JUNK_BURST);
		for (unsigned i = 0; i < n; i++, k = (k + 1) % 3) {
			memcpy(b[i]->data, frames[k], (size_t)lens[k]);
			b[i]->len = (uint32_t)lens[k];
		}
		sent += pp_port_tx_burst(inj, 0, b, n);
		if (n < JUNK_BURST)
			nap_us(20); /* the pool is in the rank's ring: it drops the rest */
	}
	uint64_t wall = now_ns() - t0, cpu = cpu_ns(clk) - cpu0;
	CU_ASSERT_EQUAL(pp_event_counts(ctx, &c1, NULL), 0);
	CU_ASSERT_EQUAL(pp_get_stats(ctx, &s1), 0);
	uint64_t taken = s1.frames_rx - s0.frames_rx;
	fprintf(stderr,
		"\n  flood of %.1f s: %llu frames sent, %llu read by the rank; the thread: "
		"%llu passes with work, %llu wakeups, %llu sleeps without work, "
		"CPU %.1f ms\n",
		(double)wall / 1e9, (unsigned long long)sent, (unsigned long long)taken,
		(unsigned long long)(c1.passes - c0.passes),
		(unsigned long long)(c1.wakeups - c0.wakeups),
		(unsigned long long)(c1.dry - c0.dry), (double)cpu / 1e6);
	/* The flood reached the thread: it read (and dropped) frames. */
	CU_ASSERT(taken >= 1000);
	/* None of them was work, and it slept after the wakeups they caused
	 * (the sleeps double to 1 ms: several hundred in a second). */
	CU_ASSERT_EQUAL(c1.passes, c0.passes);
	CU_ASSERT(c1.dry - c0.dry >= 10);
	/* A few passes a millisecond at most: about 1 % of the core; half is a
	 * bound the mechanism never comes near. */
	CU_ASSERT(cpu < wall / 2);
	pp_port_close(inj);
	CU_ASSERT_EQUAL(pp_finalize(ctx), 0);
	pp_sim_link_destroy(l);
}

struct peer_run {
	const char *link; /* the link's name */
	pp_ctx *ctx;	  /* rank 1, once joined */
};

static void *peer_init(void *arg)
{
	struct peer_run *r = arg;
	r->ctx = open_rank(r->link, 1, 2, NULL);
	return NULL;
}

static void *peer_finalize(void *arg)
{
	CU_ASSERT_EQUAL(pp_finalize(((struct peer_run *)arg)->ctx), 0);
	return NULL;
}

/* Frames that matter still count: rank 1 sends while rank 0 is in no call;
 * the thread takes the message (a pass with work), and the receive posted
 * afterwards finds it complete with its bytes. */
static void test_real_frames_work(void)
{
	char name[32];
	struct pp_sim_link *l = new_link(name, sizeof(name), 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	struct peer_run pr = {name, NULL};
	pthread_t th;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, peer_init, &pr), 0);
	pp_ctx *ctx = open_rank(name, 0, 2, NULL);
	pthread_join(th, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pr.ctx);
	struct pp_event_counts c0, c1;
	CU_ASSERT_EQUAL_FATAL(pp_event_counts(ctx, &c0, NULL), 0);
	char msg[100], got[100];
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (char)(i * 7 + 1);
	pp_req *sreq;
	CU_ASSERT_EQUAL_FATAL(pp_isend(pr.ctx, msg, sizeof(msg), 0, 3, &sreq), 0);
	uint64_t t0 = now_ns();
	do { /* rank 1 polls for its send; rank 0 does nothing */
		pp_progress(pr.ctx);
		pp_event_counts(ctx, &c1, NULL);
	} while (c1.passes == c0.passes && now_ns() - t0 < WAIT_NS);
	CU_ASSERT(c1.passes > c0.passes);
	pp_status st;
	CU_ASSERT_EQUAL(pp_wait(&sreq, &st), 0);
	memset(got, 0, sizeof(got));
	CU_ASSERT_EQUAL(pp_recv(ctx, got, sizeof(got), 1, 3, &st), 0);
	CU_ASSERT(memcmp(got, msg, sizeof(msg)) == 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, peer_finalize, &pr), 0);
	CU_ASSERT_EQUAL(pp_finalize(ctx), 0);
	pthread_join(th, NULL);
	pp_sim_link_destroy(l);
}

/* The budget: runs add up within a slice; past PP_EVENT_BUSY_NS the rest
 * of the slice is a sleep; a run after the slice starts a new one. */
static void test_budget(void)
{
	struct pp_event_budget b = {0, 0};
	uint64_t t = 10 * PP_EVENT_SLICE_NS;
	CU_ASSERT_EQUAL(pp_event_budget_left(&b, t), PP_EVENT_BUSY_NS);
	CU_ASSERT_EQUAL(pp_event_budget_charge(&b, t, t + 1000), 0);
	CU_ASSERT_EQUAL(b.start, t);
	uint64_t half = PP_EVENT_BUSY_NS / 2;
	CU_ASSERT_EQUAL(pp_event_budget_charge(&b, t + 2000, t + 2000 + half), 0);
	CU_ASSERT_EQUAL(pp_event_budget_left(&b, t + 2000 + half), PP_EVENT_BUSY_NS - half - 1000);
	/* This run spends the budget: sleep out the slice. */
	uint64_t end = t + 3000 + half + half;
	CU_ASSERT_EQUAL(pp_event_budget_charge(&b, t + 3000 + half, end),
			t + PP_EVENT_SLICE_NS - end);
	CU_ASSERT(t + PP_EVENT_SLICE_NS - end >= PP_EVENT_SLICE_NS - PP_EVENT_BUSY_NS - 4000);
	CU_ASSERT_EQUAL(pp_event_budget_left(&b, end), 0);
	/* The next slice: its budget is whole again. */
	t += PP_EVENT_SLICE_NS;
	CU_ASSERT_EQUAL(pp_event_budget_charge(&b, t, t + 1000), 0);
	CU_ASSERT_EQUAL(b.busy, 1000);
	/* One run longer than the slice: nothing of the slice left to sleep. */
	t += PP_EVENT_SLICE_NS;
	CU_ASSERT_EQUAL(pp_event_budget_charge(&b, t, t + 3 * PP_EVENT_SLICE_NS), 0);
	/* However long it runs, a thread gets no more than the budget in a
	 * slice before a sleep: busy runs back to back, each 10 us. */
	struct pp_event_budget c = {0, 0};
	uint64_t now = 100 * PP_EVENT_SLICE_NS, busy = 0, slept = 0;
	for (int i = 0; i < 10000; i++) {
		uint64_t rest = pp_event_budget_charge(&c, now, now + 10000);
		now += 10000;
		busy += 10000;
		now += rest;
		slept += rest;
	}
	CU_ASSERT(busy <= (busy + slept) / 2 + PP_EVENT_BUSY_NS);
}

static int setup(void)
{
	pp_log_set_level("off");
	return 0;
}

static CU_TestInfo tests[] = {
    {"SCHED_OTHER unless event_fifo=1", test_policy},
    {"a flood of junk frames is no work: the thread sleeps", test_junk_flood},
    {"a frame that matters is work", test_real_frames_work},
    {"at most the busy budget in each slice", test_budget},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sec_event", setup, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
