/* SPDX-License-Identifier: BSD-3-Clause */
/* The request pool: requests made PP_REQ_CHUNK at a time as they are
 * needed (the first chunk at pp_init), up to the pool's size, on a free
 * list. A request stays where it was made: its address is the engine's
 * cookie. */
#include <errno.h>
#include <stdlib.h>

#include "ctx.h"

/* A chunk more; 0 or -ENOMEM (at the size, or no memory). */
static int grow(pp_ctx *ctx)
{
	if (ctx->nreqs >= ctx->max_reqs)
		return -ENOMEM;
	uint32_t n =
	    ctx->max_reqs - ctx->nreqs < PP_REQ_CHUNK ? ctx->max_reqs - ctx->nreqs : PP_REQ_CHUNK;
	struct pp_req *c = calloc(n, sizeof(*c));
	if (!c)
		return -ENOMEM;
	ctx->req_chunk[ctx->nreqs / PP_REQ_CHUNK] = c;
	for (uint32_t i = n; i-- > 0;) {
		c[i].ctx = ctx;
		c[i].next_free = ctx->free_req;
		ctx->free_req = &c[i];
	}
	ctx->nreqs += n;
	return 0;
}

int pp_req_pool_init(pp_ctx *ctx, uint32_t n)
{
	ctx->req_chunk = calloc((n + PP_REQ_CHUNK - 1) / PP_REQ_CHUNK, sizeof(*ctx->req_chunk));
	if (!ctx->req_chunk)
		return -ENOMEM;
	ctx->nreqs = 0;
	ctx->max_reqs = n;
	ctx->free_req = NULL;
	return grow(ctx);
}

void pp_req_pool_fini(pp_ctx *ctx)
{
	for (uint32_t i = 0; ctx->req_chunk && i * PP_REQ_CHUNK < ctx->nreqs; i++)
		free(ctx->req_chunk[i]);
	free(ctx->req_chunk);
	ctx->req_chunk = NULL;
	ctx->nreqs = 0;
}

struct pp_req *pp_req_get(pp_ctx *ctx)
{
	if (!ctx->free_req && grow(ctx))
		return NULL;
	struct pp_req *r = ctx->free_req;
	ctx->free_req = r->next_free;
	r->state = PP_REQ_ACTIVE;
	r->st = (pp_status){0};
	return r;
}

void pp_req_put(struct pp_req *r)
{
	pp_ctx *ctx = r->ctx;
	r->state = PP_REQ_FREE;
	r->next_free = ctx->free_req;
	ctx->free_req = r;
}
