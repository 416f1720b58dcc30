/* SPDX-License-Identifier: BSD-3-Clause */
/* One progress pass of an embedded engine (see ctx.h). The hot path. */
#include <errno.h>
#include <time.h>

#include "ctx.h"
#include "pp_compiler.h"
#include "wire.h"

uint64_t pp_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* HELLO and BYE are the runtime's; everything else is the engine's. */
static int is_membership(const struct pp_buf *b)
{
	if (b->len < PP_WIRE_MIN_FRAME)
		return 0;
	unsigned type = b->data[PP_WIRE_ETH_LEN] & 0x0f;
	return type == PP_WIRE_HELLO || type == PP_WIRE_BYE;
}

static unsigned rx(pp_ctx *ctx, uint64_t now)
{
	struct pp_buf *bufs[PP_CTX_BURST];
	unsigned n = pp_port_rx_burst(ctx->port, 0, bufs, PP_CTX_BURST);
	if (!n)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		if (i + 1 < n)
			__builtin_prefetch(bufs[i + 1]->data);
		if (pp_unlikely(is_membership(bufs[i])))
			pp_membership_input(ctx, bufs[i]->data, bufs[i]->len, now);
		else
			pp_proto_input(ctx->eng, bufs[i]->data, bufs[i]->len, now);
	}
	pp_port_free(ctx->port, bufs, n);
	ctx->frames_rx += n;
	ctx->last_rx = now;
	return n;
}

/* Fill port buffers with whatever the engine has to send, then send them.
 * Frames the port does not take wait in ctx->txq, in order. */
static unsigned tx(pp_ctx *ctx, uint64_t now)
{
	unsigned sent_total = 0;
	for (;;) {
		while (ctx->ntxq < PP_CTX_BURST) {
			if (!ctx->nspare) {
				ctx->nspare = pp_port_alloc(ctx->port, ctx->spare, PP_CTX_BURST);
				if (!ctx->nspare)
					break;
			}
			struct pp_buf *b = ctx->spare[ctx->nspare - 1];
			int len = pp_proto_output(ctx->eng, b->data, b->cap, now);
			if (len <= 0)
				break;
			b->len = (uint32_t)len;
			ctx->txq[ctx->ntxq++] = b;
			ctx->nspare--;
		}
		if (!ctx->ntxq)
			return sent_total;
		unsigned sent = pp_port_tx_burst(ctx->port, 0, ctx->txq, ctx->ntxq);
		for (unsigned i = sent; i < ctx->ntxq; i++)
			ctx->txq[i - sent] = ctx->txq[i];
		ctx->ntxq -= sent;
		ctx->frames_tx += sent;
		sent_total += sent;
		if (ctx->ntxq || !sent) /* the port is full: try again next pass */
			return sent_total;
	}
}

static unsigned completions(pp_ctx *ctx)
{
	struct pp_proto_cpl c;
	unsigned n = 0;
	while (pp_proto_poll(ctx->eng, &c)) {
		struct pp_req *r = (struct pp_req *)(uintptr_t)c.cookie;
		r->st.source = c.source;
		r->st.tag = c.tag;
		r->st.len = (size_t)c.len;
		r->st.error = c.error;
		if (ctx->pred && !r->is_send && (c.error == 0 || c.error == -EMSGSIZE))
			pp_rt_pred_receive(ctx, &r->st);
		r->state = PP_REQ_DONE;
		ctx->active--;
		n++;
	}
	return n;
}

static int progress_locked(pp_ctx *ctx)
{
	uint64_t now = pp_now_ns();
	unsigned n = rx(ctx, now);
	if (ctx->shm)
		n += pp_shm_link_rx(ctx, now);
	if (pp_unlikely(now >= pp_proto_expiry(ctx->eng)))
		pp_proto_handle_expiry(ctx->eng, now);
	n += tx(ctx, now);
	if (ctx->shm)
		n += pp_shm_link_tx(ctx, now);
	n += completions(ctx);
	return (int)n;
}

int pp_ctx_progress(pp_ctx *ctx)
{
	if (!ctx->locking)
		return progress_locked(ctx);
	/* Another thread is in there: its pass serves us too. */
	if (atomic_flag_test_and_set_explicit(&ctx->lock, memory_order_acquire))
		return 0;
	int n = progress_locked(ctx);
	atomic_flag_clear_explicit(&ctx->lock, memory_order_release);
	return n;
}
