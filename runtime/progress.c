/* SPDX-License-Identifier: BSD-3-Clause */
/* One progress pass of an embedded engine (see ctx.h). The hot path. */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "ctx.h"
#include "pp_log.h"
#include "pp_compiler.h"
#include "ppd/ppd_pull.h"
#include "wire.h"

#define PP_PORT_EVERY	32 /* passes per port poll when every peer is local */
#define PP_CLOCK_EVERY	4  /* idle passes per clock read */
#define PP_EXPIRY_EVERY 8  /* passes per look at the timers */
#define PP_LOOK_EVERY	16 /* spins per pass while only the rings can bring work */

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The clock of the progress pass, read every pass: with an invariant TSC,
 * CLOCK_MONOTONIC at calibration plus TSC ticks scaled to ns (a few ns a
 * read instead of tens); else CLOCK_MONOTONIC itself. */
static struct {
	uint64_t tsc0; /* TSC at calibration */
	uint64_t ns0;  /* CLOCK_MONOTONIC then */
	uint64_t mult; /* ns per tick, 32.32 fixed point */
	int tsc;       /* 1: use the TSC */
} clk;
static pthread_once_t clk_once = PTHREAD_ONCE_INIT;
static atomic_int clk_ready; /* clk is set (skips pthread_once) */

static void clk_init(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
		return; /* no invariant TSC */
	uint64_t n0 = mono_ns(), t0 = __rdtsc(), n1, t1;
	do { /* 200 us: the error is the clock's resolution over that */
		n1 = mono_ns();
		t1 = __rdtsc();
	} while (n1 - n0 < 200000);
	if (t1 <= t0)
		return;
	clk.mult = (uint64_t)((((unsigned __int128)(n1 - n0)) << 32) / (t1 - t0));
	clk.tsc0 = t1;
	clk.ns0 = n1;
	clk.tsc = clk.mult != 0;
#endif
	atomic_store_explicit(&clk_ready, 1, memory_order_release);
}

uint64_t pp_now_ns(void)
{
	if (pp_unlikely(!atomic_load_explicit(&clk_ready, memory_order_acquire)))
		pthread_once(&clk_once, clk_init);
#if defined(__x86_64__)
	if (pp_likely(clk.tsc))
		return clk.ns0 +
		       (uint64_t)(((unsigned __int128)(__rdtsc() - clk.tsc0) * clk.mult) >> 32);
#endif
	return mono_ns();
}

/* HELLO and BYE are the runtime's; everything else is the engine's. */
static int is_membership(const struct pp_buf *b)
{
	if (b->len < PP_WIRE_MIN_FRAME)
		return 0;
	unsigned type = pp_wire_type_of(b->data);
	return type == PP_WIRE_HELLO || type == PP_WIRE_BYE;
}

/* Idle passes that reuse the last clock reading (pp_ctx_progress): none
 * through the node daemon, whose port gives the core away inside a pass
 * when the daemon shares it (sched_yield), so a reused reading can be
 * microseconds old and an ack's round trip measured far too short (0.2 us
 * through two daemons whose ping-pong takes 25). */
static unsigned clock_skips(const pp_ctx *ctx)
{
	return ctx->cfg.daemon[0] ? 0 : PP_CLOCK_EVERY - 1;
}

/* Returns the frames the engine took: those it dropped (another job's,
 * corrupt, stale) are no work, so a flood of them does not keep the event
 * thread awake (event.c). HELLO and BYE are done with in the pass: none. */
static unsigned rx(pp_ctx *ctx, uint64_t now)
{
	struct pp_buf *bufs[PP_CTX_BURST];
	unsigned n = pp_port_rx_burst(ctx->port, 0, bufs, PP_CTX_BURST);
	if (!n)
		return 0;
	unsigned took = 0;
	for (unsigned i = 0; i < n; i++) {
		if (i + 1 < n)
			__builtin_prefetch(bufs[i + 1]->data);
		int rc;
		if (pp_unlikely(is_membership(bufs[i]))) {
			pp_membership_input(ctx, bufs[i]->data, bufs[i]->len);
			continue;
		}
		if (ctx->cfg.daemon[0] && ppd_port_rx_placed(ctx->port, bufs[i]))
			rc = pp_proto_input_placed(ctx->eng, bufs[i]->data, bufs[i]->len, now);
		else if ((rc = pp_proto_input(ctx->eng, bufs[i]->data, bufs[i]->len, now)) &&
			 pp_unlikely(ctx->learn) &&
			 pp_embed_learn(ctx, bufs[i]->data, bufs[i]->len) == 0)
			rc = pp_proto_input(ctx->eng, bufs[i]->data, bufs[i]->len, now);
		took += rc == 0;
	}
	pp_port_free(ctx->port, bufs, n);
	ctx->frames_rx += n;
	__atomic_store_n(&ctx->last_rx, now, __ATOMIC_RELAXED); /* read by waits */
	return took;
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
			int len;
			if (ctx->zc.off) {
				len = pp_proto_output(ctx->eng, b->data, b->cap, now);
				b->len = (uint32_t)len;
			} else {
				len = pp_zc_output(ctx, b, now); /* sets b->len */
			}
			if (len <= 0)
				break;
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
		if (ctx->cpl_fn && !pp_req_own(ctx, c.cookie)) { /* an embedding library's cookie */
			/* its buffer is unknown here: blocks start at a line */
			if (ctx->pred.order && !c.is_send)
				pp_rt_pred_receive(ctx, &c, NULL);
			ctx->cpl_fn(ctx->cpl_arg, &c);
			n++;
			continue;
		}
		struct pp_req *r = (struct pp_req *)(uintptr_t)c.cookie;
		r->st.source = c.source;
		r->st.tag = (int)c.tag; /* pp.h's tags are ints, sign-extended */
		r->st.len = (size_t)c.len;
		r->st.error = c.error;
		if (ctx->pred.order && !r->is_send)
			pp_rt_pred_receive(ctx, &c, r->buf);
		/* Published last: the owner may be waiting in another thread
		 * than this pass's (pull handlers). */
		__atomic_store_n(&r->state, PP_REQ_DONE, __ATOMIC_RELEASE);
		ctx->active--;
		n++;
	}
	return n;
}

/* Pull serving by the node daemon (daemon=SOCKET): the engine's handoff
 * hooks are the port's pull descriptors. */
static int handoff_post(void *arg, uint32_t dst, uint32_t msg_id, uint64_t tag, const void *buf,
			uint64_t len, uint64_t off)
{
	pp_ctx *ctx = arg;
	return ppd_port_pull_post(ctx->port, dst, msg_id, tag, buf, len, off, ctx->cfg.timeout_ms);
}

static int handoff_claim(void *arg, uint32_t dst, uint32_t msg_id)
{
	return ppd_port_pull_claim(((pp_ctx *)arg)->port, dst, msg_id);
}

static void handoff_cancel(void *arg, uint32_t dst, uint32_t msg_id)
{
	ppd_port_pull_cancel(((pp_ctx *)arg)->port, dst, msg_id);
}

static int handoff_done(void *arg, uint32_t dst, uint32_t msg_id, int error)
{
	return pp_proto_handoff_done(((pp_ctx *)arg)->eng, dst, msg_id, error);
}

/* Placement by the node daemon: the engine's place hooks are the port's
 * placement descriptors. */
static int place_post(void *arg, uint32_t src, uint32_t src_inc, uint32_t msg_id, void *buf,
		      uint64_t len, uint64_t from_off)
{
	return ppd_port_place_post(((pp_ctx *)arg)->port, src, src_inc, msg_id, buf, len, from_off);
}

static void place_cancel(void *arg, uint32_t src, uint32_t msg_id)
{
	ppd_port_place_cancel(((pp_ctx *)arg)->port, src, msg_id);
}

void pp_rt_daemon_hooks(const pp_ctx *ctx, struct pp_proto_hooks *h)
{
	if (!ctx->cfg.daemon[0])
		return;
	h->handoff = handoff_post;
	h->handoff_claim = handoff_claim;
	h->handoff_cancel = handoff_cancel;
	h->place_post = place_post;
	h->place_cancel = place_cancel;
}

/* The node daemon is gone (killed, or stopped): nothing more reaches any
 * peer, so every peer is lost and every operation fails with -ECONNRESET
 * now rather than after timeout_ms. */
static unsigned daemon_lost(pp_ctx *ctx)
{
	ctx->daemon_lost = 1;
	pp_err("rank %d: the node daemon at %s is gone; operations fail", ctx->rank,
	       ctx->cfg.daemon);
	for (int r = 0; r < ctx->size; r++)
		if (r != ctx->rank)
			pp_proto_peer_fail(ctx->eng, (uint32_t)r);
	return 1;
}

static int progress_locked(pp_ctx *ctx, int spin)
{
	/* Nothing a pass calls may start another pass (a hook that waits). */
	assert(!ctx->in_pass);
	ctx->in_pass = 1;
	/* An idle pass costs well under 0.1 us, a fifth of it the clock read and
	 * the timer scan: passes of one wait loop (spin) reuse the last reading a
	 * few times and look at the timers every few passes. Timers are
	 * microseconds apart; a pass after one that did work, and the first pass
	 * of any call (the application may have been away for long), read the
	 * clock afresh. */
	if (spin && ctx->clock_skip) {
		ctx->clock_skip--;
	} else {
		ctx->now = pp_now_ns();
		ctx->clock_skip = clock_skips(ctx);
	}
	uint64_t now = ctx->now;
	unsigned n = 0;
	/* With every peer local the port carries only HELLO and BYE: look at it
	 * every PP_PORT_EVERY passes, and it never has engine frames to send. */
	if (!ctx->shm_only || ++ctx->port_skip >= PP_PORT_EVERY) {
		ctx->port_skip = 0;
		n += rx(ctx, now);
	}
	if (ctx->shm)
		n += pp_shm_link_rx(ctx, now);
	if (++ctx->expiry_skip >= PP_EXPIRY_EVERY) {
		ctx->expiry_skip = 0;
		if (pp_unlikely(now >= pp_proto_expiry(ctx->eng)))
			pp_proto_handle_expiry(ctx->eng, now);
	}
	if (!ctx->shm_only || ctx->ntxq)
		n += tx(ctx, now);
	if (ctx->shm && pp_proto_local_take(ctx->eng))
		n += pp_shm_link_tx(ctx, now);
	if (ctx->cfg.daemon[0]) { /* a load or two unless the daemon finished a pull */
		n += ppd_port_pull_poll(ctx->port, handoff_done, ctx);
		if (pp_unlikely(ppd_port_gone(ctx->port)) && !ctx->daemon_lost)
			n += daemon_lost(ctx);
	}
	n += completions(ctx);
	if (n)
		ctx->clock_skip = 0;
	else if (pp_unlikely(ctx->pred.grow))
		pp_rt_pred_grow(ctx);
	ctx->in_pass = 0;
	return (int)n;
}

void pp_ctx_push(pp_ctx *ctx)
{
	if (ctx->locking && atomic_flag_test_and_set_explicit(&ctx->lock, memory_order_acquire)) {
		if (!ctx->event)
			return; /* a handler's pass is sending it */
		/* The event thread, which sleeps after its pass: it looks at
		 * push_missed after each release (event.c); one of us sees the
		 * other (both sequentially consistent). */
		atomic_store(&ctx->push_missed, 1);
		if (atomic_flag_test_and_set(&ctx->lock))
			return;
	}
	/* A lite send (rule 6) is in its peer's ring and complete already:
	 * no output pass (about 180 instructions a send under Open MPI). */
	if (pp_proto_push_owed(ctx->eng)) {
		uint64_t now = ctx->now = pp_now_ns(); /* the send's timer starts now */
		ctx->clock_skip = clock_skips(ctx);
		if (!ctx->shm_only || ctx->ntxq)
			tx(ctx, now);
		if (ctx->shm && pp_proto_local_take(ctx->eng))
			pp_shm_link_tx(ctx, now);
	}
	pp_proto_settle(ctx->eng); /* its frames are out: the eager copy now */
	/* No completions pass: a send done in the call was reported by its
	 * caller (PP_PROTO_SEND_NOW), and nothing else completes here. */
	if (ctx->locking)
		atomic_flag_clear_explicit(&ctx->lock, memory_order_release);
}

/* The lock's holder may be a pull handler on this very core, preempted in
 * its pass: a plain spin then keeps it off the core for the rest of our
 * time slice, and it takes the lock again as soon as it runs. rt_check's
 * handlers test (pull_cores=0 beside rank 0, which posts its send there)
 * saw that send's first push leave 18 s late, in about 1 run of 20 on
 * af_xdp (a capture on the bridge). A waiter counts
 * itself, so that handlers step aside (handlers.c), and offers the core
 * after a short spin. */
void pp_ctx_enter_wait(pp_ctx *ctx)
{
	atomic_fetch_add_explicit(&ctx->lock_waiters, 1, memory_order_relaxed);
	unsigned spins = 0;
	while (atomic_flag_test_and_set_explicit(&ctx->lock, memory_order_acquire))
		if (++spins % 256)
			__builtin_ia32_pause();
		else
			sched_yield();
	atomic_fetch_sub_explicit(&ctx->lock_waiters, 1, memory_order_relaxed);
}

static int progress(pp_ctx *ctx, int spin)
{
	if (!ctx->locking)
		return progress_locked(ctx, spin);
	/* Another thread is in there: its pass serves us too. */
	if (atomic_flag_test_and_set_explicit(&ctx->lock, memory_order_acquire))
		return 0;
	int n = progress_locked(ctx, spin);
	atomic_flag_clear_explicit(&ctx->lock, memory_order_release);
	return n;
}

int pp_ctx_event_pass(pp_ctx *ctx, uint64_t *expiry)
{
	if (atomic_flag_test_and_set_explicit(&ctx->lock, memory_order_acquire))
		return -1;
	ctx->expiry_skip = PP_EXPIRY_EVERY - 1; /* it sleeps until the next timer: look */
	int n = progress_locked(ctx, 0);
	*expiry = pp_proto_expiry(ctx->eng);
	atomic_flag_clear(&ctx->lock); /* before push_missed is read (pp_ctx_push) */
	return n;
}

int pp_ctx_progress(pp_ctx *ctx)
{
	return progress(ctx, 0);
}

int pp_ctx_spin(pp_ctx *ctx)
{
	/* Every peer a node-mate, no other thread in the engine, nothing
	 * waiting for the port or for room in a ring: until a ring holds a
	 * record a pass finds only its timers, which are microseconds apart.
	 * So most spins look at the rings' next cells alone (a load and a
	 * compare a peer, where an idle pass takes about 140 instructions),
	 * and a record is seen that much sooner; one spin in PP_LOOK_EVERY
	 * runs the whole pass. locking is read first: pull handlers spin too,
	 * and then look_skip is not ours alone. */
	if (!ctx->locking && ctx->shm_only && !ctx->ntxq && !ctx->cfg.daemon[0]) {
		if (ctx->look_skip && !pp_proto_local_pending(ctx->eng) &&
		    !pp_shm_link_rx_ready(ctx)) {
			ctx->look_skip--;
			return 0;
		}
		ctx->look_skip = PP_LOOK_EVERY - 1;
	}
	return progress(ctx, 1);
}
