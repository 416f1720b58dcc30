/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pp_barrier: the dissemination barrier. In round k (k = 1, 2, 4, ... < size)
 * rank r sends an empty message to r + k and receives one from r - k (mod
 * size); after ceil(log2 size) rounds every rank has heard, directly or not,
 * from every other. Its messages use tags below zero, which user receives
 * (tags >= 0, or PP_ANY_TAG) never match.
 */
#include <errno.h>

#include "ctx.h"

PP_API int pp_barrier(pp_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	for (int k = 1; k < ctx->size; k <<= 1) {
		int to = (ctx->rank + k) % ctx->size;
		int from = (ctx->rank - k + ctx->size) % ctx->size;
		pp_req *s, *r;
		char dummy;
		int rc = pp_ctx_start(ctx, 0, &dummy, 0, from, PP_TAG_BARRIER, &r);
		if (rc)
			return rc;
		if ((rc = pp_ctx_start(ctx, 1, &dummy, 0, to, PP_TAG_BARRIER, &s))) {
			pp_ctx_wait(&r, NULL);
			return rc;
		}
		int rs = pp_ctx_wait(&s, NULL), rr = pp_ctx_wait(&r, NULL);
		if (rs || rr)
			return rs ? rs : rr;
	}
	return 0;
}
