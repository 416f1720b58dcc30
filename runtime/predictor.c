/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive predictor at work (predict=NAME; off by default). Every
 * completed receive is one observation: its envelope (source, tag) is the
 * message id, and the call site is the last pp_prerecv hint, if any. After
 * each observation the predictor is asked for the next id; when the next
 * receive completes, that prediction is scored a hit or a miss in pp_stats
 * (pred_predictions = pred_hits + pred_misses). The predictor is asked for
 * the next PP_PRED_AHEAD ids at once: the engine's staging hooks (below) stage
 * an unexpected message whose id is among them, in a block of the staging
 * pool (predict/staging.h, stage_bytes=) congruent to the buffer the last
 * receive of that id used, and rank pushed-buffer messages for eviction by
 * their position. The predictor allocates at create only; observe and
 * predict are cheap and lock-free, so this runs on the completion path. Every
 * hook runs inside the engine, under the progress lock.
 *
 * Receives complete in the order their messages came, which can differ from
 * run to run (two neighbours' halos; a receive posted after its message came
 * completes at once, one posted before waits for it), where the order the
 * code posts them is its own: the engine numbers receives as they are posted
 * (pp_proto_cpl.post), and each is observed once those posted before it
 * completed, held in a ring of PP_PRED_ORDER. A receive that stays posted
 * longer (a standing wildcard) is passed over once the ring is full, and
 * observed when it completes. Failed and cancelled receives are passed over.
 *
 * recv_trace=FILE writes each completed receive as one line of the trace
 * format pp_predict reads (predict/README.md), predictor or not, so the
 * predictors can be replayed offline on what a live code received: a
 * formatted line per receive into a 1 MiB stdio buffer, a diagnostic.
 */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "pp_log.h"
#include "predict.h"
#include "staging.h"

/* The staging pool of a predictor (pp_rt_pred_init). */
static int stage_start(pp_ctx *ctx)
{
	if (!ctx->pred.model)
		return 0; /* stage_bytes=0 still ranks messages for eviction */
	ctx->pred.bufs = calloc(PP_PRED_BUFS, sizeof(*ctx->pred.bufs));
	ctx->pred.stage = calloc(1, sizeof(*ctx->pred.stage));
	if (!ctx->pred.bufs || !ctx->pred.stage)
		return -ENOMEM;
	int rc = pp_stage_init(ctx->pred.stage, ctx->cfg.stage_bytes, -1, ctx->cfg.stage_remap);
	if (rc) {
		free(ctx->pred.stage);
		ctx->pred.stage = NULL;
		return rc;
	}
	return 0;
}

/* recv_trace=: the file, each "%r" in its name the rank. */
static int trace_open(pp_ctx *ctx)
{
	const char *t = ctx->cfg.recv_trace;
	char path[PP_CFG_STR + 64];
	size_t n = 0;
	for (; *t && n + 12 < sizeof(path); t++) {
		if (t[0] == '%' && t[1] == 'r') {
			n += (size_t)snprintf(path + n, sizeof(path) - n, "%d", ctx->rank);
			t++;
		} else {
			path[n++] = *t;
		}
	}
	path[n] = 0;
	ctx->pred.trace = fopen(path, "w");
	if (!ctx->pred.trace) {
		int rc = -errno;
		pp_err("recv_trace %s: cannot create: %s", path, strerror(-rc));
		return rc;
	}
	setvbuf(ctx->pred.trace, NULL, _IOFBF, 1 << 20);
	fprintf(ctx->pred.trace,
		"# receives of rank %d of %d, in the order they were posted\n"
		"src,tag,bytes,buf,comm\n",
		ctx->rank, ctx->size);
	return 0;
}

int pp_rt_pred_init(pp_ctx *ctx)
{
	ctx->pred.site = PP_PRED_NO_SITE;
	if (ctx->cfg.recv_trace[0]) {
		int rc = trace_open(ctx);
		if (rc)
			return rc;
	}
	if (strcmp(ctx->cfg.predict, "off") == 0 && !ctx->pred.trace)
		return 0;
	ctx->pred.order = calloc(PP_PRED_ORDER, sizeof(*ctx->pred.order));
	if (!ctx->pred.order)
		return -ENOMEM;
	if (strcmp(ctx->cfg.predict, "off") == 0)
		return 0;
	struct pp_pred_params prm = {.max_ahead = PP_PRED_AHEAD};
	int rc = pp_pred_create(ctx->cfg.predict, &prm, &ctx->pred.model);
	if (rc == -ENOENT) {
		char names[256];
		size_t n = 0;
		for (int i = 0; pp_pred_all[i] && n + 32 < sizeof(names); i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
					      pp_pred_all[i]->name);
		pp_err("predict=%s: no such predictor (off, %s)", ctx->cfg.predict, names);
		return -EINVAL;
	}
	return rc ? rc : stage_start(ctx);
}

void pp_rt_pred_fini(pp_ctx *ctx)
{
	if (ctx->pred.trace && fclose(ctx->pred.trace))
		pp_err("recv_trace: the trace could not be written whole");
	ctx->pred.trace = NULL;
	free(ctx->pred.order);
	ctx->pred.order = NULL;
	pp_pred_destroy(ctx->pred.model);
	ctx->pred.model = NULL;
	if (ctx->pred.stage) {
		pp_stage_fini(ctx->pred.stage);
		free(ctx->pred.stage);
		ctx->pred.stage = NULL;
	}
	free(ctx->pred.bufs);
	ctx->pred.bufs = NULL;
}

/* The message id of an envelope. A tag is 64 bits (an embedding library's
 * holds its communicator above the low 32: Open MPI's mtl ofi): the upper
 * half is the id's communicator. */
static uint64_t envelope_id(uint32_t src, uint64_t tag)
{
	struct pp_pred_obs o = {
	    .src = (int32_t)src, .tag = (int32_t)tag, .comm = (int32_t)(tag >> 32)};
	return pp_pred_id(&o, PP_PRED_KEY_ENVELOPE);
}

static int hook_ahead(void *arg, uint32_t src, uint64_t tag)
{
	const pp_ctx *ctx = arg;
	uint64_t id = envelope_id(src, tag);
	for (unsigned i = 0; i < ctx->pred.nahead; i++)
		if (ctx->pred.ahead[i] == id)
			return (int)i;
	return -1;
}

static void *hook_stage(void *arg, uint32_t src, uint64_t tag, uint64_t msg_len)
{
	pp_ctx *ctx = arg;
	if (hook_ahead(ctx, src, tag) < 0 || msg_len > SIZE_MAX)
		return NULL;
	uint64_t id = envelope_id(src, tag);
	const struct pp_rt_pred_buf *b = &ctx->pred.bufs[id % PP_PRED_BUFS];
	return pp_stage_alloc(ctx->pred.stage, (size_t)msg_len, b->id == id ? b->addr : 0);
}

static void hook_unstage(void *arg, void *block)
{
	pp_ctx *ctx = arg;
	if (pp_stage_free(ctx->pred.stage, block))
		pp_err("staging: a block the pool does not hold was given back");
}

static uint64_t hook_place(void *arg, void *dst, const void *block, uint64_t n)
{
	pp_ctx *ctx = arg;
	return pp_stage_place(ctx->pred.stage, dst, block, (size_t)n);
}

void pp_rt_stage_hooks(pp_ctx *ctx, struct pp_proto_hooks *h)
{
	if (!ctx->pred.stage)
		return;
	h->stage = hook_stage;
	h->unstage = hook_unstage;
	h->stage_place = hook_place;
	h->stage_ahead = hook_ahead;
}

void pp_rt_pred_site(pp_ctx *ctx, unsigned site)
{
	ctx->pred.site = site;
}

void pp_rt_pred_stats(const pp_ctx *ctx, struct pp_stats *st)
{
	st->pred_predictions = ctx->pred.predictions;
	st->pred_hits = ctx->pred.hits;
	st->pred_misses = ctx->pred.misses;
	st->stage_peak = ctx->pred.stage ? ctx->pred.stage->peak : 0;
}

void pp_rt_pred_grow(pp_ctx *ctx)
{
	ctx->pred.grow = 0;
	int rc = pp_pred_grow(ctx->pred.model);
	if (rc < 0) /* it asks again at its next receive */
		pp_debug("predict: tables cannot grow: %s", strerror(-rc));
	else
		pp_debug("predict: tables grew to %zu bytes", pp_pred_mem(ctx->pred.model));
}

static void observe(pp_ctx *ctx, uint32_t src, uint64_t tag, uint64_t len, uintptr_t buf)
{
	if (ctx->pred.trace)
		fprintf(ctx->pred.trace, "%u,%d,%llu,%#llx,%d\n", src, (int32_t)tag,
			(unsigned long long)len, (unsigned long long)buf, (int32_t)(tag >> 32));
	if (!ctx->pred.model)
		return;
	uint32_t site = ctx->pred.site;
	uint64_t id = envelope_id(src, tag);
	if (ctx->pred.have) {
		ctx->pred.predictions++;
		if (id == ctx->pred.next)
			ctx->pred.hits++;
		else
			ctx->pred.misses++;
	}
	pp_pred_observe(ctx->pred.model, id, site);
	ctx->pred.grow = ctx->pred.model->want;
	ctx->pred.site = PP_PRED_NO_SITE;
	if (ctx->pred.bufs)
		ctx->pred.bufs[id % PP_PRED_BUFS] = (struct pp_rt_pred_buf){id, (uintptr_t)buf};
	ctx->pred.nahead =
	    pp_pred_predict(ctx->pred.model, PP_PRED_NO_SITE, ctx->pred.ahead, PP_PRED_AHEAD);
	ctx->pred.have = ctx->pred.nahead >= 1;
	ctx->pred.next = ctx->pred.ahead[0];
}

/* Observe the held receive at base, if it completed, and move on. */
static int take_base(pp_ctx *ctx, int skip_empty)
{
	struct pp_rt_pred_rx *x = &ctx->pred.order[ctx->pred.base % PP_PRED_ORDER];
	if (!x->state && !skip_empty)
		return 0;
	if (x->state == 1)
		observe(ctx, x->src, x->tag, x->len, x->buf);
	x->state = 0;
	ctx->pred.base++;
	return 1;
}

void pp_rt_pred_receive(pp_ctx *ctx, const struct pp_proto_cpl *c, const void *buf)
{
	int ok = c->error == 0 || c->error == -EMSGSIZE;
	uint32_t d = c->post - ctx->pred.base;
	if (d >= UINT32_MAX / 2) { /* passed over already: observed now */
		if (ok)
			observe(ctx, (uint32_t)c->source, c->tag, c->len, (uintptr_t)buf);
		return;
	}
	while (d >= PP_PRED_ORDER) { /* the ring is full: the oldest is passed over */
		take_base(ctx, 1);
		d--;
	}
	ctx->pred.order[c->post % PP_PRED_ORDER] =
	    (struct pp_rt_pred_rx){.tag = c->tag,
				   .len = c->len,
				   .buf = (uintptr_t)buf,
				   .src = (uint32_t)c->source,
				   .state = ok ? 1 : 2};
	while (take_base(ctx, 0))
		;
}
