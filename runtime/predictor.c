/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive predictor at work (predict=NAME; off by default). Every
 * completed receive is one observation: its envelope (source, tag) is the
 * message id, and the call site is the last pp_prerecv hint, if any. After
 * each observation the predictor is asked for the next id; when the next
 * receive completes, that prediction is scored a hit or a miss in pp_stats
 * (pred_predictions = pred_hits + pred_misses). Placing predicted messages
 * in staging memory is the staging work's; this file only feeds and scores.
 * The predictor allocates at create only; observe and predict are cheap and
 * lock-free, so this runs on the completion path.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctx.h"
#include "pp_log.h"
#include "pp_predict.h"

int pp_rt_pred_init(pp_ctx *ctx)
{
	ctx->pred_site = PP_PRED_NO_SITE;
	if (strcmp(ctx->cfg.predict, "off") == 0)
		return 0;
	int rc = pp_pred_create(ctx->cfg.predict, NULL, &ctx->pred);
	if (rc == -ENOENT) {
		char names[256];
		size_t n = 0;
		for (int i = 0; pp_pred_all[i] && n + 32 < sizeof(names); i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
					      pp_pred_all[i]->name);
		pp_err("predict=%s: no such predictor (off, %s)", ctx->cfg.predict, names);
		return -EINVAL;
	}
	return rc;
}

void pp_rt_pred_fini(pp_ctx *ctx)
{
	pp_pred_destroy(ctx->pred);
	ctx->pred = NULL;
}

void pp_rt_pred_receive(pp_ctx *ctx, const pp_status *st)
{
	struct pp_pred_obs o = {
	    .src = st->source, .tag = st->tag, .bytes = st->len, .site = ctx->pred_site};
	uint64_t id = pp_pred_id(&o, PP_PRED_KEY_ENVELOPE);
	if (ctx->pred_have) {
		ctx->pred_predictions++;
		if (id == ctx->pred_next)
			ctx->pred_hits++;
		else
			ctx->pred_misses++;
	}
	pp_pred_observe(ctx->pred, id, o.site);
	ctx->pred_site = PP_PRED_NO_SITE;
	ctx->pred_have = pp_pred_predict(ctx->pred, PP_PRED_NO_SITE, &ctx->pred_next, 1) == 1;
}
