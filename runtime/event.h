/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * @file progress=event's thread (event.c), as its tests see it: what it has
 * done so far, and the busy budget that bounds its share of the rank's core.
 *
 * The thread shares the core with the computation it serves. A wakeup that
 * moved nothing (frames of another job, corrupt ones: progress.c does not
 * count them as work) is followed by a sleep that doubles while they keep
 * coming. However much real work comes, in each PP_EVENT_SLICE_NS it runs at
 * most PP_EVENT_BUSY_NS (and one pass past it: a pass is not cut short),
 * then sleeps out the slice.
 */
#ifndef PP_EVENT_H
#define PP_EVENT_H

#include <pthread.h>
#include <stdint.h>

#include "ctx.h"

/* Half of each 2 ms: the computation keeps at least half of its core even
 * at SCHED_FIFO (event_fifo), where nothing else would take the core back
 * from the thread; a burst of work shorter than 1 ms (a 1 MiB message
 * arriving takes about 0.6 ms on the test bed) is still served at once. */
#define PP_EVENT_SLICE_NS 2000000u
#define PP_EVENT_BUSY_NS  1000000u

/* The thread's time on the core in the current slice. */
struct pp_event_budget {
	uint64_t start; /* when the slice began (pp_now_ns) */
	uint64_t busy;	/* ns spent in passes since */
};

/* How much of the budget is left for a run starting at now. */
static inline uint64_t pp_event_budget_left(const struct pp_event_budget *b, uint64_t now)
{
	if (now - b->start >= PP_EVENT_SLICE_NS)
		return PP_EVENT_BUSY_NS; /* a new slice */
	return b->busy < PP_EVENT_BUSY_NS ? PP_EVENT_BUSY_NS - b->busy : 0;
}

/* Account a run of passes from t0 to t1: a run starting past the slice's
 * end starts a new slice. Returns how long to sleep before the next run:
 * 0 while the slice's budget lasts, else until the slice ends. */
static inline uint64_t pp_event_budget_charge(struct pp_event_budget *b, uint64_t t0, uint64_t t1)
{
	if (t0 - b->start >= PP_EVENT_SLICE_NS) {
		b->start = t0;
		b->busy = 0;
	}
	b->busy += t1 - t0;
	if (b->busy < PP_EVENT_BUSY_NS)
		return 0;
	uint64_t end = b->start + PP_EVENT_SLICE_NS;
	return t1 < end ? end - t1 : 0;
}

/* What the thread has done since it started. */
struct pp_event_counts {
	uint64_t wakeups; /* sleeps on the port ended by its descriptor */
	uint64_t passes;  /* passes that did work */
	uint64_t dry;	  /* sleeps after a wakeup that brought no work */
	uint64_t yields;  /* sleeps for the busy budget */
};

/* ctx's event thread and its counts so far. Errors: -ENOENT (no event
 * thread: progress is not event). */
int pp_event_counts(const pp_ctx *ctx, struct pp_event_counts *out, pthread_t *thread);

#endif
