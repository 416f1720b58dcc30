/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank's engine embedded in another library: the libfabric provider
 * (ofi/) opens a context without discovery, adds the peers whose addresses
 * its application hands it, and posts sends and receives with 64-bit tags,
 * ignore masks and cookies of its own; each completion comes back through a
 * callback from the progress pass. Internal: not installed, not in pp.h.
 *
 * Configuration is pp_init's (runtime/config.c): defaults, PP_<KEY>
 * variables, then the launcher's rank, size and job id where PP_RANK,
 * PP_SIZE and PP_JOB are not set (pp_launcher_env), then the embedding
 * library's string. Pull handlers are not started.
 *
 * Node-mates: a peer whose address carries this node's key (the node name,
 * config key node, else the host name and network namespace) shares the
 * node. Once the address vector holds as many such ranks as the launcher
 * counts on this node (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, Hydra's
 * MPI_LOCALNRANKS), they set up the node segment as pp_init's ranks do and
 * talk through it (shm=on; shm=off keeps them on the port). Without a
 * launcher's count they talk through the port.
 *
 * Self: the engine cannot send to its own rank, but MPI libraries do. A send
 * to the own rank is made by a second, small engine in the process (the
 * twin, embed_self.c) that holds rank `size` of the engine's rank space and
 * is an intranode peer of the rank's engine, its frames moved in memory. So
 * the rank's one engine still matches every receive, wildcards included;
 * completions name the own rank, never the twin's.
 *
 * Not thread-safe: the caller serialises every call on one context.
 */
#ifndef PP_EMBED_H
#define PP_EMBED_H

#include <stdint.h>

#include "ctx.h"
#include "engine.h"

/* What a peer needs to reach a rank. */
struct pp_embed_addr {
	uint8_t mac[6]; /* its port's MAC */
	uint32_t rank;	/* its rank */
	uint32_t size;	/* ranks in its job */
	uint32_t inc;	/* its incarnation (docs/wire.md) */
	uint32_t job;	/* its job key */
	uint64_t node;	/* its node's key: equal keys share a node */
};

struct pp_embed_conf {
	const char *config; /* pp_init's "key=value,..." string, set last (NULL: none) */
	/* Each completion of the context's sends and receives, from inside a
	 * pp_embed_* call. source is the own rank for a message to itself. */
	void (*cpl)(void *arg, const struct pp_proto_cpl *c);
	void *arg;
};

struct pp_embed {
	pp_ctx *ctx;		   /* the rank's context; its engine matches everything */
	struct pp_proto *twin;	   /* sends to the own rank (embed_self.c) */
	uint8_t *self_frame;	   /* one frame between the two engines */
	uint32_t self_cap;	   /* its size */
	int self_busy;		   /* frames may be owed between the two engines */
	uint32_t sends;		   /* sends posted and not completed */
	uint32_t idle;		   /* progress passes in a row that did nothing */
	uint32_t yield_every;	   /* ... after which the core is offered (embed.c) */
	uint64_t switches;	   /* the thread's context switches at the last offer */
	uint64_t node;		   /* this node's key (pp_embed_addr) */
	int local_size;		   /* ranks on this node as the launcher says, -1: unknown */
	int shm_tried;		   /* the node segment's set-up ran */
	struct pp_embed_conf conf; /* as given */
};

/* The launcher's view of this process (runtime/launcher.c): Open MPI
 * (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_SIZE; its job id or PMIx namespace),
 * PMI (MPICH's Hydra: PMI_RANK, PMI_SIZE, MPI_LOCALNRANKS), Slurm
 * (SLURM_PROCID, SLURM_NTASKS, its job and step). rank, size and local_size
 * are -1 when no launcher says; job hashes its job id (FNV-1a) and is 0 when
 * none is found. */
struct pp_launcher {
	int rank;	  /* this process's rank, -1: none */
	int size;	  /* ranks in the job, -1: none */
	int local_size;	  /* ranks of the job on this node, itself included, -1: none */
	uint32_t job;	  /* job key, 0: none */
	const char *name; /* the launcher recognised, "none" */
};
void pp_launcher_env(struct pp_launcher *l);

/* Open a context. Errors: those of pp_init except discovery's (-EINVAL for
 * a configuration without rank, size or port), -ENOMEM. */
int pp_embed_open(struct pp_embed **out, const struct pp_embed_conf *c);

/* Send what is posted, wait for its acknowledgement (at most timeout_ms),
 * then free everything. Posted receives are dropped without completion. */
void pp_embed_close(struct pp_embed *m);

/* Free what embedding keeps for the process (the in-memory links made for
 * dev=sim:) once no context is open; the provider's cleanup, before
 * libfabric unloads it. */
void pp_embed_cleanup(void);

/* This rank's address. */
void pp_embed_addr(const struct pp_embed *m, struct pp_embed_addr *a);

/* Make a peer reachable. The own address is accepted and changes nothing;
 * the same address again, likewise. Errors: -EINVAL (another job or size,
 * rank out of range, the own rank at another address), -EEXIST (the rank is
 * known at another MAC or incarnation), -ENOMEM. */
int pp_embed_peer_add(struct pp_embed *m, const struct pp_embed_addr *a);

/* Start a send of len bytes at buf to rank dst (the own rank too); buf is
 * read until it completes. Errors: pp_proto_send's (-EINVAL for a peer not
 * added, -ENOMEM and -EAGAIN when full: progress, then again). */
int pp_embed_send(struct pp_embed *m, uint32_t dst, uint64_t tag, const void *buf, uint64_t len,
		  uint64_t cookie);

/* As pp_embed_send, for a caller that reports a send completed in the
 * call itself: 1 then (a node-mate's small message, an eager copy), and no
 * completion will come for it; 0 when one will; or pp_embed_send's errors.
 * has_data: 32 bits of immediate data go with it, which the receiver's
 * completion and probes report (pp_proto_send_data; remote CQ data).
 * copy: for len up to the engine's copy (8 KiB), the engine copies buf
 * before this returns, and the send completes at once (FI_INJECT with no
 * copy of the caller's); -ENOTSUP to the own rank (the caller copies),
 * -EINVAL when longer. */
int pp_embed_send_now(struct pp_embed *m, uint32_t dst, uint64_t tag, const void *buf, uint64_t len,
		      int has_data, uint32_t data, int copy, uint64_t cookie);

/* Take back a receive not matched yet (pp_proto_cancel): 0, -ENOENT, -EBUSY. */
int pp_embed_cancel(struct pp_embed *m, uint64_t cookie);

/* Post a receive from src (PP_PROTO_ANY: any rank, the own included).
 * Errors: pp_proto_recv's. */
int pp_embed_recv(struct pp_embed *m, int src, uint64_t tag, uint64_t ignore, void *buf,
		  uint64_t len, uint64_t cookie);

/* pp_proto_probe over every source, the own rank included: 1 and *c filled
 * with the first message in matching order, 0 when none has arrived. */
int pp_embed_probe(struct pp_embed *m, int src, uint64_t tag, uint64_t ignore,
		   struct pp_proto_cpl *c);

/* One progress pass (completions are delivered from it); returns the events
 * handled. */
int pp_embed_progress(struct pp_embed *m);

/* What a caller that wants to sleep between progress calls waits for: the
 * port's descriptor (*fd, -1 when the port has none: then it must not
 * sleep), readable when a frame arrives, and the engine's next timer
 * (*expiry, CLOCK_MONOTONIC ns, UINT64_MAX: none), after which progress
 * must run again whatever arrived (a resend, an owed ack). */
void pp_embed_wait(struct pp_embed *m, int *fd, uint64_t *expiry);

/* The twin (embed_self.c). open: make it and pair it with the rank's engine
 * (-ENOMEM, -EINVAL). send: pp_embed_send(_data) to the own rank. pump: move frames
 * between the engines, run the twin's timers, deliver its completions;
 * returns events. idle: nothing of the twin's in flight. close: free it. */
int pp_embed_self_open(struct pp_embed *m);
int pp_embed_self_send(struct pp_embed *m, uint64_t tag, const void *buf, uint64_t len,
		       int has_data, uint32_t data, uint64_t cookie);
unsigned pp_embed_self_pump(struct pp_embed *m);
int pp_embed_self_idle(const struct pp_embed *m);
void pp_embed_self_close(struct pp_embed *m);

#endif
