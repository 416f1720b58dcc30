/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pull handlers: with pull_cores=LIST, one thread per listed core, pinned
 * there, runs progress passes so PULLs are served and DATA is placed while
 * the application computes. The engine is then shared, so every entry into
 * it goes through ctx->lock (pp_ctx_enter/leave); progress passes only
 * try the lock, since one pass serves everybody.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "affinity.h"
#include "ctx.h"
#include "pp_log.h"

struct pp_pull_handlers {
	atomic_int stop;       /* set to end the threads */
	int n;		       /* threads started */
	int cores[64];	       /* where each runs */
	pthread_t threads[64]; /* the threads */
	pp_ctx *ctx;	       /* what they serve */
};

struct start {
	struct pp_pull_handlers *h; /* the set */
	int i;			    /* which thread */
};

static void *handler_main(void *arg)
{
	struct pp_pull_handlers *h = ((struct start *)arg)->h;
	int i = ((struct start *)arg)->i;
	free(arg);
	int rc = pp_affinity_pin_self(h->cores[i]);
	if (rc)
		pp_warn("pull handler %d: cannot pin to core %d (%d); running unpinned", i,
			h->cores[i], rc);
	while (!atomic_load_explicit(&h->stop, memory_order_relaxed)) {
		/* The application waits for the engine (pp_ctx_enter_wait): let
		 * it in, and let it have this core if it shares it. */
		if (atomic_load_explicit(&h->ctx->lock_waiters, memory_order_relaxed)) {
			sched_yield();
			continue;
		}
		if (pp_ctx_spin(h->ctx) == 0)
			__builtin_ia32_pause();
	}
	return NULL;
}

int pp_handlers_start(pp_ctx *ctx)
{
	if (!ctx->cfg.pull_cores[0] && ctx->cfg.progress == PP_PROGRESS_THREAD) {
		pp_err("progress=thread: set pull_cores=LIST too, the cores its busy-polling "
		       "threads run on (each takes its core whole; e.g. pull_cores=1)");
		return -EINVAL;
	}
	if (!ctx->cfg.pull_cores[0])
		return pp_event_start(ctx);
	struct pp_pull_handlers *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	int n = pp_corelist_parse(ctx->cfg.pull_cores, h->cores, 64);
	int ncores = pp_affinity_ncores();
	for (int i = 0; n > 0 && i < n; i++)
		if (h->cores[i] >= ncores)
			n = -EINVAL;
	if (n <= 0) {
		pp_err("pull_cores '%s': want a list of cores below %d, e.g. 1 or 1-2",
		       ctx->cfg.pull_cores, ncores);
		free(h);
		return -EINVAL;
	}
	h->ctx = ctx;
	ctx->locking = 1;
	ctx->handlers = h;
	for (int i = 0; i < n; i++) {
		struct start *s = malloc(sizeof(*s));
		int rc = s ? 0 : ENOMEM;
		if (s) {
			*s = (struct start){h, i};
			rc = pthread_create(&h->threads[i], NULL, handler_main, s);
		}
		if (rc) {
			free(s);
			pp_err("pull handler on core %d: cannot start (errno %d)", h->cores[i], rc);
			pp_handlers_stop(ctx);
			return -rc;
		}
		h->n++;
	}
	pp_info("%d pull handler(s) on cores %s", n, ctx->cfg.pull_cores);
	return pp_event_start(ctx);
}

void pp_handlers_stop(pp_ctx *ctx)
{
	pp_event_stop(ctx);
	struct pp_pull_handlers *h = ctx->handlers;
	if (!h)
		return;
	atomic_store(&h->stop, 1);
	for (int i = 0; i < h->n; i++)
		pthread_join(h->threads[i], NULL);
	free(h);
	ctx->handlers = NULL;
	ctx->locking = ctx->event != NULL;
}
