/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * progress=event: one thread that sleeps in the kernel until a frame for the
 * rank arrives (the port's wait descriptor) or the engine's next timer is
 * due, runs progress passes for what came (match, stage a predicted message,
 * send the speculative PULL, answer a PULL, ack) and sleeps again. It is the
 * paper's on-arrival processing for a rank that computes: no core spins for
 * it, and it runs on the rank's own core (it inherits the rank's affinity).
 *
 * While the application waits inside a pp_* call, or left one less than
 * QUIET_NS ago, it polls the port itself; the thread then stays away (the
 * application's passes are faster than a wakeup): it sleeps a while, longer
 * each time it finds the application polling again, up to PARK_MAX_NS, so a
 * rank in a ping-pong costs it about a thousand wakeups a second. The
 * application only stores a flag and a time; it makes no syscall for the
 * thread.
 *
 * Sends: pp_ctx_push finding the engine taken (the thread in a pass) sets
 * push_missed; the thread looks at it after every release and makes one
 * more pass, so a send posted before a long computation leaves at once.
 *
 * The core is the computation's (event.h): frames that move nothing (of
 * another job, corrupt) are no work, and a wakeup that brought only those
 * sleeps, from PARK_MIN_NS doubling to PARK_MAX_NS while they keep coming,
 * so a flood of them finds the thread mostly asleep; and in each slice it
 * runs at most its busy budget, however much real work comes. It runs at
 * SCHED_OTHER unless event_fifo asks for real-time priority.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "ctx.h"
#include "event.h"
#include "pp_log.h"

#define PARK_MIN_NS 20000u /* first sleep after finding the application waiting */
/* The application is computing once it has not waited for this long: a
 * rank in a ping-pong leaves its waits every few microseconds, and the
 * thread woken by each frame there would only take its core. */
#define QUIET_NS    30000u
#define PARK_MAX_NS 1000000u /* longest (doubling from PARK_MIN_NS) */
/* The longest sleep on the port: frames of local peers (shared memory), and
 * those a backend holds back, wake nobody, so with node-mates it is short.
 * Each wakeup costs the core some 25 us on a virtual machine (measured:
 * 2.7 % of a core at a thousand a second), so without them it is long. */
#define SLEEP_MAX_NS	   10000000u
#define SLEEP_MAX_LOCAL_NS 1000000u
#define PASSES_MAX	   64 /* passes per wakeup before looking at the flags */

struct pp_event {
	atomic_int stop; /* set to end the thread */
	int fd;		 /* the port's wait descriptor */
	pthread_t thread;
	pp_ctx *ctx;
	_Atomic uint64_t wakeups; /* sleeps on the port ended by the descriptor */
	_Atomic uint64_t passes;  /* passes that did work */
	_Atomic uint64_t dry;	  /* sleeps after a wakeup that brought no work */
	_Atomic uint64_t yields;  /* sleeps for the busy budget */
	uint64_t cpu_ns;	  /* the thread's CPU time, at its end */
	uint64_t start;		  /* when it started (pp_now_ns) */
};

static void sleep_ns(uint64_t ns)
{
	struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	nanosleep(&t, NULL);
}

/* Counters the thread alone writes; pp_event_counts reads them meanwhile. */
static void count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static uint64_t doubled(uint64_t ns)
{
	return ns * 2 < PARK_MAX_NS ? ns * 2 : PARK_MAX_NS;
}

/* Passes until the engine is idle (or PASSES_MAX, or the clock passes
 * until: the busy budget); the next timer in *expiry. Returns the passes
 * that did work, or -1 when the application has the engine. */
static int run(struct pp_event *ev, uint64_t *expiry, uint64_t until)
{
	pp_ctx *ctx = ev->ctx;
	int worked = 0;
	do {
		atomic_store(&ctx->push_missed, 0);
		int n = pp_ctx_event_pass(ctx, expiry);
		if (n < 0)
			return worked ? worked : -1;
		if (n == 0)
			continue;
		worked++;
		/* More may have come while this pass ran. */
		while (worked < PASSES_MAX && pp_now_ns() < until &&
		       (n = pp_ctx_event_pass(ctx, expiry)) > 0)
			worked++;
	} while (atomic_load(&ctx->push_missed)); /* a send posted meanwhile */
	return worked;
}

static void *event_main(void *arg)
{
	struct pp_event *ev = arg;
	pp_ctx *ctx = ev->ctx;
	uint64_t park = PARK_MIN_NS; /* sleep while the application polls */
	uint64_t dry = PARK_MIN_NS;  /* sleep after a wakeup that brought no work */
	struct pp_event_budget budget = {0, 0};
	int woken = 0; /* the last sleep ended on the descriptor */
	/* Every turn either did work or sleeps: the thread may run at real-time
	 * priority on the application's core, where spinning would starve the
	 * application (and, holding nothing, wait for a lock it holds). */
	while (!atomic_load_explicit(&ev->stop, memory_order_relaxed)) {
		uint64_t expiry = UINT64_MAX;
		uint64_t t0 = pp_now_ns();
		int polling =
		    atomic_load_explicit(&ctx->app_waiting, memory_order_relaxed) ||
		    t0 - atomic_load_explicit(&ctx->app_left, memory_order_relaxed) < QUIET_NS;
		int n = polling ? -1 /* its own passes serve it */
				: run(ev, &expiry, t0 + pp_event_budget_left(&budget, t0));
		if (n < 0) {
			/* The application has the engine: sleep, longer each
			 * time in a row. */
			sleep_ns(park);
			park = doubled(park);
			woken = 0;
			continue;
		}
		park = PARK_MIN_NS;
		uint64_t rest = pp_event_budget_charge(&budget, t0, pp_now_ns());
		if (n == 0 && woken) {
			/* The descriptor said readable and nothing moved: a
			 * frame still held, or frames of nobody's (another
			 * job's, corrupt ones). Sleep, longer each time in a
			 * row: a flood of them must not keep the core. */
			sleep_ns(dry > rest ? dry : rest);
			dry = doubled(dry);
			count(&ev->dry, 1);
			woken = 0;
			continue;
		}
		if (n > 0) {
			count(&ev->passes, (uint64_t)n);
			dry = PARK_MIN_NS;
			woken = 0;
			if (rest) { /* its budget spent: the slice's rest is the application's */
				sleep_ns(rest);
				count(&ev->yields, 1);
			}
			continue; /* look at the flags, then sleep */
		}
		uint64_t now = pp_now_ns(), wait = ctx->shm ? SLEEP_MAX_LOCAL_NS : SLEEP_MAX_NS;
		if (expiry != UINT64_MAX)
			/* A timer still due after a pass that looked at it
			 * (a retransmission the port did not take): soon,
			 * not at once. */
			wait = expiry <= now	     ? PARK_MIN_NS
			       : expiry - now < wait ? expiry - now
						     : wait;
		struct pollfd p = {.fd = ev->fd, .events = POLLIN};
		struct timespec t = {0, (long)wait};
		woken = ppoll(&p, 1, &t, NULL) > 0;
		if (woken)
			count(&ev->wakeups, 1);
		else
			dry = PARK_MIN_NS; /* the link was quiet */
	}
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		ev->cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	return NULL;
}

int pp_event_start(pp_ctx *ctx)
{
	if (ctx->cfg.progress != PP_PROGRESS_EVENT)
		return 0;
	int fd = pp_port_wait_fd(ctx->port);
	if (fd < 0) {
		pp_err("progress=event: the port '%s' has nothing to sleep on (%s); use a "
		       "packet:, pcap: or udp: port, or progress=inline",
		       ctx->cfg.dev, ctx->cfg.daemon[0] ? "it is the node daemon's" : "DPDK");
		return -ENOTSUP;
	}
	struct pp_event *ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	ev->fd = fd;
	ev->ctx = ctx;
	ev->start = pp_now_ns();
	ctx->locking = 1;
	ctx->event = ev;
	/* SCHED_OTHER whatever the application's own policy, unless asked. */
	pthread_attr_t attr;
	struct sched_param other = {.sched_priority = 0};
	int rc = pthread_attr_init(&attr);
	if (rc == 0) {
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
		pthread_attr_setschedparam(&attr, &other);
		rc = pthread_create(&ev->thread, &attr, event_main, ev);
		pthread_attr_destroy(&attr);
	}
	if (rc) {
		pp_err("progress=event: cannot start the thread (errno %d)", rc);
		ctx->event = NULL;
		ctx->locking = ctx->handlers != NULL;
		free(ev);
		return -rc;
	}
	/* event_fifo: woken, it runs before the computation it interrupts (a
	 * sleeper under EEVDF may wait out the running task's slice, a
	 * millisecond or more); its busy budget still leaves the application
	 * half the core. Real-time priority needs CAP_SYS_NICE; without it,
	 * say so. */
	const char *how = ", SCHED_OTHER (event_fifo=1: real-time priority)";
	if (ctx->cfg.event_fifo) {
		struct sched_param sp = {.sched_priority = 1};
		rc = pthread_setschedparam(ev->thread, SCHED_FIFO, &sp);
		how = rc ? " (event_fifo: no real-time priority here, a wakeup may wait for "
			   "the scheduler)"
			 : ", SCHED_FIFO";
	}
	pp_info("progress=event: thread on the port's descriptor %d%s", fd, how);
	return 0;
}

int pp_event_counts(const pp_ctx *ctx, struct pp_event_counts *out, pthread_t *thread)
{
	struct pp_event *ev = ctx->event;
	if (!ev)
		return -ENOENT;
	out->wakeups = atomic_load_explicit(&ev->wakeups, memory_order_relaxed);
	out->passes = atomic_load_explicit(&ev->passes, memory_order_relaxed);
	out->dry = atomic_load_explicit(&ev->dry, memory_order_relaxed);
	out->yields = atomic_load_explicit(&ev->yields, memory_order_relaxed);
	if (thread)
		*thread = ev->thread;
	return 0;
}

void pp_event_stop(pp_ctx *ctx)
{
	struct pp_event *ev = ctx->event;
	if (!ev)
		return;
	atomic_store(&ev->stop, 1);
	pthread_join(ev->thread, NULL);
	double life = (double)(pp_now_ns() - ev->start);
	struct pp_event_counts c;
	pp_event_counts(ctx, &c, NULL);
	pp_info("progress=event: %llu wakeups by frames, %llu passes with work, %llu sleeps "
		"after wakeups without work, %llu for the busy budget, thread CPU %.1f ms in "
		"%.1f s (%.2f %% of a core)",
		(unsigned long long)c.wakeups, (unsigned long long)c.passes,
		(unsigned long long)c.dry, (unsigned long long)c.yields, (double)ev->cpu_ns / 1e6,
		life / 1e9, life > 0 ? 100.0 * (double)ev->cpu_ns / life : 0.0);
	free(ev);
	ctx->event = NULL;
	ctx->locking = ctx->handlers != NULL;
}
