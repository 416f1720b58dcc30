/* SPDX-License-Identifier: BSD-3-Clause */
/* The request pool: every request allocated at pp_init, a free list after. */
#include <errno.h>
#include <stdlib.h>

#include "ctx.h"

#define NONE UINT32_MAX

int pp_req_pool_init(pp_ctx *ctx, uint32_t n)
{
	ctx->reqs = calloc(n, sizeof(*ctx->reqs));
	if (!ctx->reqs)
		return -ENOMEM;
	ctx->nreqs = n;
	for (uint32_t i = 0; i < n; i++) {
		ctx->reqs[i].ctx = ctx;
		ctx->reqs[i].next_free = i + 1 < n ? i + 1 : NONE;
	}
	ctx->free_head = 0;
	return 0;
}

void pp_req_pool_fini(pp_ctx *ctx)
{
	free(ctx->reqs);
	ctx->reqs = NULL;
}

struct pp_req *pp_req_get(pp_ctx *ctx)
{
	if (ctx->free_head == NONE)
		return NULL;
	struct pp_req *r = &ctx->reqs[ctx->free_head];
	ctx->free_head = r->next_free;
	r->state = PP_REQ_ACTIVE;
	r->st = (pp_status){0};
	return r;
}

void pp_req_put(struct pp_req *r)
{
	pp_ctx *ctx = r->ctx;
	r->state = PP_REQ_FREE;
	r->next_free = ctx->free_head;
	ctx->free_head = (uint32_t)(r - ctx->reqs);
}
