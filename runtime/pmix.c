/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The PMIx bootstrap (bootstrap.h says when it is used): the launcher gives
 * the rank, the job's size and namespace and the host's name; each rank
 * puts one record (PP_BOOT_KEY: its MAC, incarnation and node, as text),
 * commits, and waits in a fence that collects every rank's data; then it
 * reads each peer's record from its local copy and hands it to membership.
 *
 * The fence is the non-blocking one with our own deadline (timeout_ms),
 * since a rank that fails before it would leave the others waiting, and a
 * launcher need not honour PMIX_TIMEOUT. Peers' records are read with
 * PMIX_OPTIONAL: after a collecting fence they are local, and a missing one
 * is an error now rather than a request to the server that may never be
 * answered.
 *
 * The job's secret (auth.h), unless job_secret gives one: rank 0 draws it
 * (getrandom) and puts it under PP_SECRET_KEY with its record; after the
 * fence every rank reads rank 0's. The PMIx server hands a namespace's data
 * only to processes of that namespace (its clients, authenticated by the
 * server), so nobody outside the job learns it, while everything else the
 * server gives (namespace, ranks, hosts) is no secret at all and could not
 * stand for one.
 *
 * PMIx calls used are those of the PMIx standard (v4): PMIx_Init,
 * PMIx_Get, PMIx_Put, PMIx_Commit, PMIx_Fence_nb, PMIx_Finalize.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pmix.h>

#include "bootstrap.h"
#include "pp_log.h"

#define PP_SECRET_KEY "pp.secret" /* rank 0's job secret, 64 hex digits */

enum { PMIX_UNUSED = 0, PMIX_UP, PMIX_DONE };

static _Atomic int state;     /* this process's PMIx: unused, up, finalized */
static pmix_proc_t me;	      /* our namespace and rank, from PMIx_Init */
static char host[PP_CFG_STR]; /* the launcher's name for our host ("" unknown) */

/* A fence in flight: the callback may come after we gave up waiting, so
 * a fence that timed out keeps its state (a few bytes, once per process). */
struct fence {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	pmix_status_t st;
};

bool pp_pmix_built(void)
{
	return true;
}

/* Look only in what this process holds already (no request to the server). */
static void optional(pmix_info_t *info)
{
	bool yes = true;
	PMIX_INFO_LOAD(info, PMIX_OPTIONAL, &yes, PMIX_BOOL);
}

/* The job's size, or -EPROTO. */
static int job_size(void)
{
	pmix_proc_t wild;
	pmix_value_t *v = NULL;
	PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
	pmix_status_t rc = PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &v);
	int size = -EPROTO;
	if (rc == PMIX_SUCCESS && v && v->type == PMIX_UINT32 && v->data.uint32 > 0 &&
	    v->data.uint32 <= INT_MAX)
		size = (int)v->data.uint32;
	else
		pp_err("pp_init: PMIx gives no job size for namespace %s (%s)", me.nspace,
		       PMIx_Error_string(rc));
	if (v)
		PMIX_VALUE_RELEASE(v);
	return size;
}

/* Our host's name as the launcher knows it (mpirun --host, srun's node). */
static void host_name(void)
{
	pmix_info_t info;
	pmix_value_t *v = NULL;
	optional(&info);
	if (PMIx_Get(&me, PMIX_HOSTNAME, &info, 1, &v) == PMIX_SUCCESS && v &&
	    v->type == PMIX_STRING && v->data.string)
		snprintf(host, sizeof(host), "%s", v->data.string);
	if (v)
		PMIX_VALUE_RELEASE(v);
	PMIX_INFO_DESTRUCT(&info);
}

int pp_pmix_init(struct pp_config *c)
{
	int expect = PMIX_UNUSED;
	if (!atomic_compare_exchange_strong(&state, &expect, PMIX_UP)) {
		pp_err("pp_init: PMIx serves one context per process, and this process used it "
		       "already; set rank= and size= for another");
		return -EALREADY;
	}
	pmix_status_t rc = PMIx_Init(&me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		pp_err("pp_init: PMIx_Init: %s (a PMIx launcher set PMIX_NAMESPACE, but its "
		       "server cannot be reached)",
		       PMIx_Error_string(rc));
		/* Not again: libpmix 4.2 crashes in PMIx_Finalize after a failed init,
		 * and a second init is no safer. */
		atomic_store(&state, PMIX_DONE);
		return -ECONNREFUSED;
	}
	int size = job_size();
	if (size > 0 && me.rank >= (uint32_t)size) {
		pp_err("pp_init: PMIx gives rank %u in a job of %d", me.rank, size);
		size = -EPROTO;
	}
	if (size < 0) {
		pp_pmix_fini();
		return size;
	}
	host_name();
	c->rank = (int)me.rank;
	c->size = size;
	if (!c->job_set) {
		c->job = pp_boot_job_key(me.nspace);
		snprintf(c->job_name, sizeof(c->job_name), "%s", me.nspace);
	}
	if (!c->node[0])
		snprintf(c->node, sizeof(c->node), "%s", host);
	return 0;
}

void pp_pmix_fini(void)
{
	int expect = PMIX_UP;
	if (atomic_compare_exchange_strong(&state, &expect, PMIX_DONE))
		PMIx_Finalize(NULL, 0);
}

static void fence_done(pmix_status_t st, void *arg)
{
	struct fence *f = arg;
	pthread_mutex_lock(&f->mu);
	f->st = st;
	f->done = 1;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* Every rank of the namespace, its data collected; waits at most ms. */
static int fence(uint32_t ms)
{
	struct fence *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, &ca);
	pthread_condattr_destroy(&ca);

	pmix_proc_t all;
	pmix_info_t info;
	bool yes = true;
	PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	pmix_status_t rc = PMIx_Fence_nb(&all, 1, &info, 1, fence_done, f);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS) {
		pp_err("pp_init: PMIx_Fence_nb: %s", PMIx_Error_string(rc));
		free(f);
		return -EIO;
	}

	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&f->mu);
	while (!f->done && pthread_cond_timedwait(&f->cv, &f->mu, &until) != ETIMEDOUT)
		;
	int done = f->done;
	rc = f->st;
	pthread_mutex_unlock(&f->mu);
	if (!done) {
		pp_err("pp_init: PMIx fence: not every rank of namespace %s reached pp_init "
		       "within %u ms",
		       me.nspace, ms);
		return -ETIMEDOUT; /* f stays: its callback may still come */
	}
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
	if (rc != PMIX_SUCCESS) {
		pp_err("pp_init: PMIx fence: %s", PMIx_Error_string(rc));
		return -EIO;
	}
	return 0;
}

static int put_record(pp_ctx *ctx)
{
	const struct pp_peer_info *self = pp_membership_peer(ctx, (uint32_t)ctx->rank);
	struct pp_boot_peer p = {.inc = ctx->inc};
	char rec[PP_BOOT_RECORD];
	memcpy(p.mac, self->mac, sizeof(p.mac));
	snprintf(p.node, sizeof(p.node), "%s", self->node);
	if (pp_boot_record(rec, sizeof(rec), &p) < 0)
		return -EIO;

	pmix_value_t v = {.type = PMIX_STRING};
	v.data.string = rec; /* PMIx_Put copies it */
	pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, PP_BOOT_KEY, &v);
	char secret[PP_BOOT_RECORD];
	if (rc == PMIX_SUCCESS && ctx->rank == 0 && !ctx->mem.keyed) {
		if (pp_membership_secret_draw(secret, sizeof(secret)))
			return -EIO;
		v.data.string = secret;
		rc = PMIx_Put(PMIX_GLOBAL, PP_SECRET_KEY, &v);
	}
	if (rc == PMIX_SUCCESS)
		rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS) {
		pp_err("pp_init: PMIx_Put/Commit of our record: %s", PMIx_Error_string(rc));
		return -EIO;
	}
	return 0;
}

/* Peer r's record, from what the fence collected. */
static int get_record(pp_ctx *ctx, uint32_t r, pmix_info_t *opt)
{
	pmix_proc_t peer;
	pmix_value_t *v = NULL;
	struct pp_boot_peer p;
	PMIX_LOAD_PROCID(&peer, me.nspace, r);
	pmix_status_t rc = PMIx_Get(&peer, PP_BOOT_KEY, opt, 1, &v);
	int err = -EPROTO;
	if (rc != PMIX_SUCCESS || !v || v->type != PMIX_STRING || !v->data.string)
		pp_err("pp_init: PMIx: no record '%s' of rank %u (%s): is it a librt-pp rank?",
		       PP_BOOT_KEY, r, PMIx_Error_string(rc));
	else if (pp_boot_parse(v->data.string, &p))
		pp_err("pp_init: PMIx: rank %u's record '%s' is malformed (another release?)", r,
		       v->data.string);
	else
		err = pp_membership_learn(ctx, r, p.mac, p.inc, p.node);
	if (v)
		PMIX_VALUE_RELEASE(v);
	return err;
}

/* Rank 0's secret, from what the fence collected: the job's key. */
static int get_secret(pp_ctx *ctx, pmix_info_t *opt)
{
	pmix_proc_t zero;
	pmix_value_t *v = NULL;
	PMIX_LOAD_PROCID(&zero, me.nspace, 0);
	pmix_status_t rc = PMIx_Get(&zero, PP_SECRET_KEY, opt, 1, &v);
	int err = -EPROTO;
	if (rc != PMIX_SUCCESS || !v || v->type != PMIX_STRING || !v->data.string)
		pp_err("pp_init: PMIx: no job secret '%s' from rank 0 (%s)", PP_SECRET_KEY,
		       PMIx_Error_string(rc));
	else
		err = pp_membership_secret(ctx, v->data.string);
	if (v)
		PMIX_VALUE_RELEASE(v);
	return err;
}

int pp_pmix_exchange(pp_ctx *ctx)
{
	int keyed = ctx->mem.keyed; /* job_secret given: every rank has it */
	int rc = put_record(ctx);
	if (rc == 0)
		rc = fence(ctx->cfg.timeout_ms);
	if (rc)
		return rc;
	pmix_info_t opt;
	optional(&opt);
	if (!keyed)
		rc = get_secret(ctx, &opt);
	for (int r = 0; r < ctx->size && rc == 0; r++)
		if (r != ctx->rank)
			rc = get_record(ctx, (uint32_t)r, &opt);
	PMIX_INFO_DESTRUCT(&opt);
	return rc;
}
