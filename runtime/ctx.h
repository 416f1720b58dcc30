/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The context of one rank with an embedded engine: its configuration, its
 * port, the protocol engine, the request pool and what discovery learnt.
 *
 * Progress (pp_ctx_progress) is one pass of: receive a burst from the port
 * and feed it to the engine (HELLO and BYE go to membership), the same from
 * the node-mates' rings, run the engine's timers, let the engine write frames
 * straight into port buffers and ring records and send them, take the node
 * daemon's finished pulls, and turn the engine's completions into finished
 * requests (docs/architecture.md, "The progress pass"). Frames the port would not take
 * stay queued in the context and go first next time. With pull handlers the
 * pass runs under ctx->lock, from whichever thread gets there.
 */
#ifndef PP_CTX_H
#define PP_CTX_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "engine.h"
#include "pp.h"
#include "pp_port.h"

/* The library's own tags: below zero, which user receives (tags >= 0, or
 * PP_ANY_TAG) never match (-1 is the engine's wildcard). */
enum pp_reserved_tag {
	PP_TAG_BARRIER = -2, /* pp_barrier's empty messages (barrier.c) */
	PP_TAG_SHM = -3,     /* the intranode link's set-up words (shm_link.c) */
};

/* pp.h's int tags in the engine's 64-bit space: sign-extended, so the
 * library's own (below zero) have the high bits set; PP_ANY_TAG ignores the
 * low 31 bits only, so it matches every tag >= 0 and none of those. */
static inline uint64_t pp_ctx_tag(int tag)
{
	return tag == PP_ANY_TAG ? 0 : (uint64_t)(int64_t)tag;
}

static inline uint64_t pp_ctx_tag_ignore(int tag)
{
	return tag == PP_ANY_TAG ? 0x7FFFFFFFu : 0;
}

#define PP_CTX_BURST 32
#define PP_NODE_NAME 64

#define PP_PRED_AHEAD 8	 /* receives ahead a message may be staged for */
#define PP_PRED_BUFS  64 /* ids whose last receive buffer is remembered */

enum pp_req_state {
	PP_REQ_FREE = 0, /* in the pool */
	PP_REQ_ACTIVE,	 /* handed to the engine */
	PP_REQ_DONE,	 /* completed, status valid, owned by the user */
};

struct pp_req {
	pp_ctx *ctx;		  /* owner */
	enum pp_req_state state;  /* see above */
	int is_send;		  /* 1 send, 0 receive */
	int peer;		  /* destination or source asked for (may be ANY) */
	pp_status st;		  /* result, valid once DONE */
	void *buf;		  /* the user's buffer */
	struct pp_req *next_free; /* pool free list link */
};

struct pp_peer_info {
	uint8_t mac[6];		 /* port MAC of the rank */
	uint32_t inc;		 /* its incarnation (wire.h), from its HELLO */
	uint8_t known;		 /* discovery heard from it */
	uint8_t knows_all;	 /* it said it knows every rank */
	uint8_t bye;		 /* it said goodbye: it sends nothing more */
	uint8_t has_our_bye;	 /* it said it has our goodbye */
	uint8_t byes_sent;	 /* our BYEs to it since it last said it lacks ours
				  * (saturating) */
	uint8_t learnt;		 /* known from a frame, not a launcher: a launcher replaces it */
	uint64_t born;		 /* when its incarnation began (ms), from its signed HELLO */
	char node[PP_NODE_NAME]; /* its node name */
};

/* What membership knows (membership.c owns it; others ask it). */
struct pp_membership {
	struct pp_peer_info *peers; /* per rank, from discovery */
	uint32_t nknown;	    /* ranks heard from (self included) */
	uint64_t next_hello;	    /* when discovery sends its next HELLO */
	uint32_t nbye;		    /* peers that said goodbye */
	int leaving;		    /* pp_finalize is saying goodbye */
	int joined;		    /* discovery is over */
	int keyed;		    /* the job has a secret: key is its key (auth.h) */
	uint8_t key[32];	    /* HELLO and BYE are signed and checked with it */
	uint64_t born;		    /* when our incarnation began (ms since the epoch) */
	uint64_t unproven;	    /* HELLO and BYE dropped: no proof, and they would act */
};

/* How the rank learnt its rank, size and peers (bootstrap.h). */
enum pp_boot {
	PP_BOOT_HELLO = 0, /* rank= and size= from the settings, HELLO broadcast discovery */
	PP_BOOT_CLUSTER,   /* ... with the peers' ports from cluster=FILE */
	PP_BOOT_PMIX,	   /* everything from a PMIx launcher (pmix.c) */
};

struct pp_pull_handlers; /* threads serving pulls while the application computes */
struct pp_shm_link;	 /* the node segment and its rings (shm_link.c) */
struct pp_stage;	 /* prediction staging memory (predict/staging.h) */

/* The buffer the last receive of a message id used (staging aims at it). */
struct pp_rt_pred_buf {
	uint64_t id;	/* message id */
	uintptr_t addr; /* its buffer */
};

/* A completed receive held until those posted before it completed. */
struct pp_rt_pred_rx {
	uint64_t tag, len; /* its envelope's tag, the message's length */
	uintptr_t buf;	   /* its buffer (0: the embedding library's) */
	uint32_t src;	   /* its source */
	uint8_t state;	   /* 0 empty, 1 to observe, 2 to skip (failed or cancelled) */
};

#define PP_PRED_ORDER 64 /* receives held to be observed in the order posted */

/* The receive predictor and its staging (predictor.c owns it). */
struct pp_rt_pred {
	struct pp_pred *model;	       /* NULL when predict=off */
	uint64_t next;		       /* id it expects for the next receive */
	int have;		       /* next is valid */
	uint32_t site;		       /* call site from pp_prerecv for the next receive */
	uint64_t predictions;	       /* predictions scored */
	uint64_t hits;		       /* ... that were right */
	uint64_t misses;	       /* ... that were wrong */
	uint64_t ahead[PP_PRED_AHEAD]; /* ids expected for the next receives */
	unsigned nahead;	       /* how many of them are valid */
	struct pp_rt_pred_buf *bufs;   /* last buffer per id, PP_PRED_BUFS slots */
	struct pp_stage *stage;	       /* staging memory, NULL when off */
	int grow;		       /* its tables want to grow: at an idle pass */
	FILE *trace;		       /* recv_trace= file, NULL when none */
	struct pp_rt_pred_rx *order;   /* PP_PRED_ORDER slots by post number; NULL: no
					  predictor, no trace, nothing observed */
	uint32_t base;		       /* post number observed next */
};

#define PP_ZC_MIN  2048 /* smallest payload sent from the user's buffer */
#define PP_ZC_REGS 16	/* send buffers kept registered with the port */

struct pp_zc_reg {
	const uint8_t *addr; /* registered send buffer */
	uint64_t len;	     /* its length; 0: slot empty */
};

/* Zero-copy transmit state (zcopy.c). */
struct pp_zc {
	int off;			   /* copy every payload (setting, or the port cannot) */
	int noreg;			   /* the port needs no registration */
	unsigned next;			   /* registration slot to reuse next */
	struct pp_zc_reg regs[PP_ZC_REGS]; /* registered send buffers */
	uint64_t frames;		   /* frames sent by reference */
};

struct pp_ctx {
	struct pp_config cfg;	       /* settings from env and pp_init */
	struct pp_port *port;	       /* the rank's own port */
	struct pp_proto *eng;	       /* protocol engine */
	struct pp_port_info port_info; /* MAC, MTU, ... of the port */
	int rank, size;		       /* this rank, ranks in the job */
	enum pp_boot boot;	       /* where they came from (PMIX: PMIx is up) */
	uint32_t inc;		       /* this rank's incarnation (wire.h) */

	struct pp_req **req_chunk; /* request pool: PP_REQ_CHUNK per chunk (req.c) */
	uint32_t nreqs;		   /* requests made */
	uint32_t max_reqs;	   /* ... at most */
	struct pp_req *free_req;   /* first free request, NULL if none */
	uint32_t active;	   /* requests handed to the engine */
	uint8_t said_full;	   /* the operations' limit was reported once */

	struct pp_membership mem; /* membership.c's */

	struct pp_buf *txq[PP_CTX_BURST];   /* frames written but not yet taken */
	unsigned ntxq;			    /* how many */
	struct pp_buf *spare[PP_CTX_BURST]; /* empty port buffers kept for output */
	unsigned nspare;		    /* how many */
	uint64_t last_rx;		    /* time of the last frame received */
	uint64_t frames_rx, frames_tx;	    /* port-level counters for pp_get_stats */

	struct pp_rt_pred pred; /* predictor.c's */

	struct pp_zc zc; /* zero-copy transmit */

	atomic_flag lock;		   /* progress lock, used with pull handlers */
	atomic_int lock_waiters;	   /* threads in pp_ctx_enter_wait */
	int locking;			   /* 1 when pull handlers run */
	struct pp_pull_handlers *handlers; /* NULL without pull_cores */
	struct pp_event *event;		   /* progress=event's thread, or NULL */
	atomic_int app_waiting;		   /* progress=event: the application polls */
	_Atomic uint64_t app_left;	   /* ... and when it last stopped (pp_now_ns) */
	atomic_int push_missed;		   /* progress=event: a push found the lock taken */

	int daemon_lost;	 /* daemon=SOCKET: the daemon went away; every peer failed */
	struct pp_shm_link *shm; /* intranode link, NULL when no local peer uses it */
	int shm_only;		 /* every peer is local: the port carries only membership */
	unsigned port_skip;	 /* passes since the port was last polled (shm_only) */
	unsigned look_skip;	 /* spins that may only look at the rings (pp_ctx_spin) */
	uint64_t now;		 /* the clock as the last pass read it */
	unsigned clock_skip;	 /* idle passes left that reuse it */
	unsigned expiry_skip;	 /* passes since the timers were last looked at */
	int in_pass;		 /* a progress pass is running (it must not nest) */

	/* An embedding library (embed.c) takes the engine's completions
	 * itself: its cookies are its own, not requests. NULL: requests. */
	void (*cpl_fn)(void *arg, const struct pp_proto_cpl *c);
	void *cpl_arg;
	int learn; /* embedded: a frame from an unknown rank of the job adds it */
};

/* embed.c: make the sender of a frame the engine dropped a peer when it is
 * a rank of this job not known yet. 0 when it became one. */
int pp_embed_learn(pp_ctx *ctx, const uint8_t *frame, size_t len);

/* Take and release the engine. Only pull handlers and the event thread make
 * this a real lock; without them it costs a predictable branch. */
void pp_ctx_enter_wait(pp_ctx *ctx); /* progress.c: the lock was taken */
static inline void pp_ctx_enter(pp_ctx *ctx)
{
	if (ctx->locking && atomic_flag_test_and_set_explicit(&ctx->lock, memory_order_acquire))
		pp_ctx_enter_wait(ctx);
}

static inline void pp_ctx_leave(pp_ctx *ctx)
{
	if (ctx->locking)
		atomic_flag_clear_explicit(&ctx->lock, memory_order_release);
}

/* pp_init's first half, without discovery, the intranode link or pull
 * handlers: the configuration (as pp_init's string), the port, and an engine
 * of size + extra_ranks ranks with no peer yet. boot: under a PMIx launcher,
 * take rank and size from it (pp_init); an embedding library (embed.c) has
 * its own launcher's and never starts PMIx. free undoes it, and anything
 * pp_init added. Errors: those of pp_init. */
int pp_ctx_open(pp_ctx **out, const char *config, uint32_t extra_ranks, int boot);
void pp_ctx_free(pp_ctx *ctx);

/* Monotonic time in ns (vDSO, no syscall). */
uint64_t pp_now_ns(void);

/* One progress pass; returns the events handled. */
int pp_ctx_progress(pp_ctx *ctx);

/* The same, for the passes after the first of one wait loop: it may reuse
 * the clock of a recent pass. */
int pp_ctx_spin(pp_ctx *ctx);

/* Only the sending half of a pass and the completions (a send was just
 * posted: its first push goes out before anything else is looked at). */
void pp_ctx_push(pp_ctx *ctx);

/* A new incarnation number: 32 random bits from getrandom, never 0 (so a
 * neighbour on the link cannot guess one from the clock). Which of two is
 * the later is said by the signed start time of a HELLO (membership.c). */
uint32_t pp_membership_incarnation(void);

/* Membership (membership.c). init/fini: its per-rank table (-ENOMEM).
 * join: discovery: find every rank of the job or fail after timeout_ms, then
 * add every peer to the engine; with the PMIx bootstrap the peers come
 * from the launcher instead (pp_pmix_exchange). Errors: -ETIMEDOUT (the
 * missing ranks are logged), -EINVAL (cluster file), -EPROTO (a peer's
 * PMIx record missing or malformed), the engine's. peer: what discovery knows
 * of rank. left: rank is gone (its BYE came, or crashed: it died without
 * one, and what needs it fails now); 1 when that is news, 0 when it had
 * left already. */
int pp_membership_init(pp_ctx *ctx);
void pp_membership_fini(pp_ctx *ctx);
int pp_membership_join(pp_ctx *ctx);
const struct pp_peer_info *pp_membership_peer(const pp_ctx *ctx, uint32_t rank);
int pp_membership_left(pp_ctx *ctx, uint32_t rank, int crashed);

/* What a bootstrap outside the port (PMIx) says of peer rank: its port's
 * MAC, incarnation and node. Called by join's exchange, before the peers
 * are added. A peer learnt from a frame (learnt) is replaced by what the
 * launcher says. Errors: -EINVAL (own rank, out of range, incarnation 0),
 * -EEXIST (rank already known from a launcher, otherwise). */
int pp_membership_learn(pp_ctx *ctx, uint32_t rank, const uint8_t mac[6], uint32_t inc,
			const char *node);

/* An embedded context (embed.c), which has no discovery. self: the own
 * rank's entry (port MAC, incarnation, node name: config key node, else the
 * host name), as join starts with; embedded: that, and discovery counts as
 * over, so a HELLO of a later incarnation means a restart. add: rank is at
 * mac, incarnation inc, on node ("" where unknown), told by the caller
 * (learnt 0: its address vector) or by a frame (learnt 1), and the engine
 * may reach it. 0 also when known so already; -EEXIST when the caller named
 * it otherwise before; -EINVAL for the own rank elsewhere; the engine's
 * error. What the caller says replaces what a frame taught (the engine's
 * peer is pointed at the address given; go-back-N sends again what went to
 * the other one). */
void pp_membership_self(pp_ctx *ctx);
void pp_membership_embedded(pp_ctx *ctx);
int pp_membership_add(pp_ctx *ctx, uint32_t rank, const uint8_t mac[6], uint32_t inc,
		      const char *node, int learnt);

/* The job's secret (a launcher's, config key job_secret): HELLO and BYE
 * are signed and checked with its key from now on. Errors: -EINVAL (empty),
 * -EIO (libsodium). */
int pp_membership_secret(pp_ctx *ctx, const char *secret);
/* Hand the job's key to the node daemon when the port is one (it checks
 * BYEs for the job and signs the one it sends for a dead rank); called once
 * the port is open, and whenever the secret comes later. */
void pp_membership_key_to_daemon(pp_ctx *ctx);

/* A fresh secret for a job, as text (64 hex digits) at out, from getrandom.
 * Errors: -ENOSPC (cap under 65), -EIO (no randomness). */
int pp_membership_secret_draw(char *out, size_t cap);

/* Say goodbye to every peer and wait for theirs (see membership.c).
 * Errors: -ETIMEDOUT (some peer silent past deadline). */
int pp_membership_leave(pp_ctx *ctx, uint64_t deadline);

/* Leave without waiting (pp_finalize gave up draining): one BYE to every
 * live peer that says it has theirs, so none answers, and their receives
 * from us fail at once instead of waiting for frames that will not come. */
void pp_membership_abandon(pp_ctx *ctx);

/* Handle a HELLO or BYE frame that progress found. */
void pp_membership_input(pp_ctx *ctx, const uint8_t *frame, size_t len);

/* Start a send or receive without checking the arguments (the public calls
 * do); internal users such as the barrier pass tags below zero.
 * Errors: -ENOMEM (no request free), the engine's errors. */
int pp_ctx_start(pp_ctx *ctx, int is_send, void *buf, size_t len, int peer, int tag, pp_req **out);

/* pp_wait for a request the library started itself (set-up exchanges, the
 * barrier): the same loop, no argument check. */
int pp_ctx_wait(pp_req **req, pp_status *st);

/* The receive predictor (predictor.c). init: -EINVAL for an unknown name,
 * -ENOMEM, a trace file's open error; with a predictor it makes the staging
 * pool too, with recv_trace= the trace file. receive: one receive's
 * completion (buf its buffer, NULL when unknown), on the completion path;
 * receives are observed in the order they were posted. stage_hooks: the
 * engine's staging hooks in h when there is a pool (arg: the context).
 * site: the call site of the next receive (pp_prerecv). stats: its counters
 * into st. */
int pp_rt_pred_init(pp_ctx *ctx);
void pp_rt_pred_fini(pp_ctx *ctx);
void pp_rt_pred_receive(pp_ctx *ctx, const struct pp_proto_cpl *c, const void *buf);
/* An idle progress pass while pred.grow: the predictor's tables grow (they
 * never allocate on a receive's path). */
void pp_rt_pred_grow(pp_ctx *ctx);
void pp_rt_stage_hooks(pp_ctx *ctx, struct pp_proto_hooks *h);
void pp_rt_pred_site(pp_ctx *ctx, unsigned site);
void pp_rt_pred_stats(const pp_ctx *ctx, struct pp_stats *st);

/* Zero-copy transmit (zcopy.c): the next frame into b, b->len set; returns
 * its length, 0 when none, or pp_proto_output's error. fini drops the
 * registrations. */
int pp_zc_output(pp_ctx *ctx, struct pp_buf *b, uint64_t now);
void pp_zc_fini(pp_ctx *ctx);

/* The intranode link (shm_link.c). init runs after discovery, with every
 * peer added: it sets up the node segment with the ranks of the same node
 * (Errors: -ENOMEM, -ETIMEDOUT, the errors of pp_wait; a segment that cannot
 * be made is not an error: the port serves those ranks). fini runs after the
 * engine is gone. rx and tx are the progress pass's share (ctx->shm set):
 * they return frames handled. hooks: the engine's intranode hooks in h
 * (direct and publish; the receive-queue hooks with shm_write), given at
 * create: until the link is up they find no peer and decline. */
int pp_shm_link_init(pp_ctx *ctx);
void pp_shm_link_fini(pp_ctx *ctx);
unsigned pp_shm_link_rx(pp_ctx *ctx, uint64_t now);
/* 1 when a local peer's ring has a record for us (or set-up still runs):
 * what pp_shm_link_rx would find, without taking it. */
int pp_shm_link_rx_ready(const pp_ctx *ctx);
/* Called only when pp_proto_local_take says a node-mate may have a frame
 * due: an idle pass asks the engine nothing (a call per peer, about 100
 * instructions a pass under Open MPI). */
unsigned pp_shm_link_tx(pp_ctx *ctx, uint64_t now);
void pp_shm_link_hooks(pp_ctx *ctx, struct pp_proto_hooks *h);
/* Every record written to a live local peer was taken (its lite messages
 * included, which no ack reports): 1, else 0; 1 without a link. */
int pp_shm_link_drained(pp_ctx *ctx);
/* pp_malloc from the rank's heap area: NULL when none or full. free: 0, or
 * -ENOENT when p is not from there. */
void *pp_shm_link_malloc(pp_ctx *ctx, size_t len);
int pp_shm_link_free(pp_ctx *ctx, void *p);
/* shm_copy_min: node-mates' messages up to this go whole through the rings
 * (the engine's local_whole), and an early receiver's from this size are
 * written by their sender (write_min); longer ones are copied by their
 * receiver in one call. pp_shm_copy_min is auto's rule for a call costing
 * call_ns, from floor up; pp_shm_link_copy_min the job's figure (auto
 * times a few calls; floor when the kernel refuses them). */
uint64_t pp_shm_copy_min(uint64_t call_ns, uint64_t floor);
uint64_t pp_shm_link_copy_min(const struct pp_config *c, uint64_t floor);
/* PP_PROTO_SEND_SHARED when a send of len bytes from buf is long enough to
 * stream (shm_stream) and lies in the node segment, else 0. */
unsigned pp_shm_link_send_flags(const pp_ctx *ctx, const void *buf, uint64_t len);
/* The same, without a call for the sends too short to stream. */
static inline unsigned pp_ctx_shm_send_flags(const pp_ctx *ctx, const void *buf, uint64_t len)
{
	return len >= ctx->cfg.shm_stream ? pp_shm_link_send_flags(ctx, buf, len) : 0;
}

/* Daemon mode (daemon=SOCKET): set the engine's handoff hooks in h so the
 * daemon's pull handlers may serve our PULLs (progress.c polls their
 * completions), and its place hooks so the daemon may write pulled DATA
 * straight into our receive buffers (progress.c hands the engine such
 * frames' headers with pp_proto_input_placed). Nothing without a daemon. */
void pp_rt_daemon_hooks(const pp_ctx *ctx, struct pp_proto_hooks *h);

/* stats=text|json: every counter on stderr (stats.c); nothing when off. */
void pp_rt_stats_print(pp_ctx *ctx);

/* Request pool. */
int pp_req_pool_init(pp_ctx *ctx, uint32_t n);
void pp_req_pool_fini(pp_ctx *ctx);
struct pp_req *pp_req_get(pp_ctx *ctx);
void pp_req_put(struct pp_req *req);

#define PP_REQ_CHUNK 1024u /* requests made at a time */

/* cookie is a request of the first chunk: in an embedded context, whose
 * other cookies are its caller's, the library's own words (the intranode
 * link's set-up) complete as requests. */
static inline int pp_req_own(const pp_ctx *ctx, uint64_t cookie)
{
	return cookie - (uint64_t)(uintptr_t)ctx->req_chunk[0] <
	       (uint64_t)PP_REQ_CHUNK * sizeof(struct pp_req);
}

/* Pull handlers (pull_cores). Errors: -EINVAL (bad core list), -errno. */
int pp_handlers_start(pp_ctx *ctx);
void pp_handlers_stop(pp_ctx *ctx);

/* progress=event's thread (event.c); started and stopped with the pull
 * handlers. Errors: -ENOTSUP the port has no wait descriptor, -ENOMEM. */
int pp_event_start(pp_ctx *ctx);
void pp_event_stop(pp_ctx *ctx);

/* The event thread's pass: -1 when another thread has the engine, else the
 * events handled, and the engine's next timer in *expiry. */
int pp_ctx_event_pass(pp_ctx *ctx, uint64_t *expiry);

#endif
