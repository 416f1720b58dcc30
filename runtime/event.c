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
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "ctx.h"
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
	uint64_t wakeups; /* for the log at the end */
	uint64_t passes;  /* passes that did work */
	uint64_t cpu_ns;  /* the thread's CPU time, at its end */
	uint64_t start;	  /* when it started (pp_now_ns) */
};

static void sleep_ns(uint64_t ns)
{
	struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	nanosleep(&t, NULL);
}

/* Passes until the engine is idle (or PASSES_MAX); the next timer in *expiry.
 * Returns the passes that did work, or -1 when the application has the
 * engine. */
static int run(struct pp_event *ev, uint64_t *expiry)
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
		while (worked < PASSES_MAX && (n = pp_ctx_event_pass(ctx, expiry)) > 0)
			worked++;
	} while (atomic_load(&ctx->push_missed)); /* a send posted meanwhile */
	return worked;
}

static void *event_main(void *arg)
{
	struct pp_event *ev = arg;
	pp_ctx *ctx = ev->ctx;
	uint64_t park = PARK_MIN_NS;
	int woken = 0; /* the last sleep ended on the descriptor */
	/* Every turn either did work or sleeps: the thread may run at real-time
	 * priority on the application's core, where spinning would starve the
	 * application (and, holding nothing, wait for a lock it holds). */
	while (!atomic_load_explicit(&ev->stop, memory_order_relaxed)) {
		uint64_t expiry = UINT64_MAX;
		int polling =
		    atomic_load_explicit(&ctx->app_waiting, memory_order_relaxed) ||
		    pp_now_ns() - atomic_load_explicit(&ctx->app_left, memory_order_relaxed) <
			QUIET_NS;
		int n = polling ? -1 /* its own passes serve it */ : run(ev, &expiry);
		if (n < 0 || (n == 0 && woken)) {
			/* The application has the engine, or the descriptor said
			 * readable and nothing came (a frame still held): sleep,
			 * longer each time in a row. */
			sleep_ns(park);
			park = park * 2 < PARK_MAX_NS ? park * 2 : PARK_MAX_NS;
			woken = 0;
			continue;
		}
		park = PARK_MIN_NS;
		if (n > 0) {
			ev->passes += (uint64_t)n;
			woken = 0;
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
		ev->wakeups += (uint64_t)woken;
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
		       "packet: or pcap: port, or progress=inline",
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
	int rc = pthread_create(&ev->thread, NULL, event_main, ev);
	if (rc) {
		pp_err("progress=event: cannot start the thread (errno %d)", rc);
		ctx->event = NULL;
		ctx->locking = ctx->handlers != NULL;
		free(ev);
		return -rc;
	}
	/* Woken, it must run before the computation it interrupts: a sleeper
	 * under EEVDF may wait out the running task's slice (a millisecond or
	 * more). Real-time priority needs CAP_SYS_NICE; without it, say so. */
	struct sched_param sp = {.sched_priority = 1};
	rc = pthread_setschedparam(ev->thread, SCHED_FIFO, &sp);
	pp_info("progress=event: thread on the port's descriptor %d%s", fd,
		rc ? " (no real-time priority: a wakeup may wait for the scheduler)"
		   : ", SCHED_FIFO");
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
	pp_info("progress=event: %llu wakeups by frames, %llu passes with work, thread CPU "
		"%.1f ms in %.1f s (%.2f %% of a core)",
		(unsigned long long)ev->wakeups, (unsigned long long)ev->passes,
		(double)ev->cpu_ns / 1e6, life / 1e9,
		life > 0 ? 100.0 * (double)ev->cpu_ns / life : 0.0);
	free(ev);
	ctx->event = NULL;
	ctx->locking = ctx->handlers != NULL;
}
