/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive predictors. A predictor watches one stream of receive calls (one
 * rank) and predicts the ids of the next k receives.
 *
 * An observation is one receive call: source, tag, size and, where known, the
 * buffer address, the communicator and the call-site id given by pp_prerecv.
 * Which of those fields form the message id is a setting (pp_pred_key):
 * the envelope (source, tag, communicator) as in the cycle papers, or buffer
 * address, size and source as in the long-term prediction paper. The id is a
 * 64-bit mix of the chosen fields; equal fields give equal ids.
 *
 * Calling pattern, per receive:
 *   n = pp_pred_predict(p, site, ids, k);  site: the pre-receive hint of the
 *                                          receive about to come
 *   ... the receive completes with id x ...
 *   pp_pred_observe(p, x, site);
 * ids[j] is the id predicted for the receive j + 1 calls ahead; n <= k is the
 * number of look-aheads the predictor could fill (0 while it is still
 * learning; the tag-based predictors fill only +1, as they know the site of
 * the next receive only).
 *
 * Predictors allocate all their memory in create; observe and predict never
 * allocate, lock or make system calls, and their tables have fixed
 * capacities (pp_pred_params). When a table is full, new entries are dropped
 * or the oldest reset, as each predictor documents; predictions degrade,
 * nothing fails.
 */
#ifndef PP_PREDICT_H
#define PP_PREDICT_H

#include <stddef.h>
#include <stdint.h>

/* No call-site id known for an observation. */
#define PP_PRED_NO_SITE UINT32_MAX

/* Largest look-ahead any predictor accepts. */
#define PP_PRED_MAX_AHEAD 64

/* Minimum length of the first cycle the cycle predictors accept. */
#define PP_PRED_MIN_FIRST_CYCLE 6

/* One receive call. */
struct pp_pred_obs {
	int32_t src;	/* source rank */
	int32_t tag;	/* message tag */
	int32_t comm;	/* communicator id, 0 when unknown */
	uint32_t site;	/* call-site id from pp_prerecv, PP_PRED_NO_SITE if none */
	uint64_t bytes; /* message size */
	uint64_t buf;	/* receive buffer address, 0 when unknown */
};

/* Fields that can make up a message id (bit mask). */
enum pp_pred_field {
	PP_PRED_F_SRC = 1u << 0,   /* source rank */
	PP_PRED_F_TAG = 1u << 1,   /* tag */
	PP_PRED_F_COMM = 1u << 2,  /* communicator */
	PP_PRED_F_BYTES = 1u << 3, /* size */
	PP_PRED_F_BUF = 1u << 4,   /* buffer address */
	PP_PRED_F_SITE = 1u << 5,  /* call site */
};

/* The papers' two message ids. */
#define PP_PRED_KEY_ENVELOPE	 (PP_PRED_F_SRC | PP_PRED_F_TAG | PP_PRED_F_COMM)
#define PP_PRED_KEY_BUF_SIZE_SRC (PP_PRED_F_BUF | PP_PRED_F_BYTES | PP_PRED_F_SRC)

/* Limits, fixed at create: the tables start small and grow up to them
 * (pp_pred_grow). Zero fields take the defaults in brackets. */
struct pp_pred_params {
	unsigned max_ahead;	/* largest k passed to predict [16], <= PP_PRED_MAX_AHEAD */
	unsigned max_cycle;	/* longest cycle single-cycle learns [1024], >= 12 */
	unsigned max_sites;	/* call sites the tag predictors track [256] */
	unsigned max_tag_cycle; /* longest cycle per site, tag-cycle predictors [128], >= 12 */
	unsigned max_stored;	/* ids kept in stored cycles by tag-bettercycle [16384] */
	unsigned max_states;	/* states of the graph predictor [4096] */
	unsigned window;	/* DPD window N [256] */
	unsigned max_period;	/* DPD longest period M [256], <= window */
};

struct pp_pred;

/* One predictor algorithm. */
struct pp_pred_ops {
	const char *name; /* name used by settings and pp_predict */
	/* Allocate a predictor; 0, -EINVAL or -ENOMEM. *out set on success only. */
	int (*create)(const struct pp_pred_params *prm, struct pp_pred **out);
	/* Learn one receive: its id and call site. */
	void (*observe)(struct pp_pred *p, uint64_t id, uint32_t site);
	/* Predict up to k ids ahead; returns how many were written. */
	unsigned (*predict)(struct pp_pred *p, uint32_t next_site, uint64_t *ids, unsigned k);
	/* Free everything create allocated. */
	void (*destroy)(struct pp_pred *p);
	/* Bytes allocated by the predictor. */
	size_t (*mem)(const struct pp_pred *p);
	/* Enlarge the tables observe found short (want set), within the max_
	 * parameters; 0 or -ENOMEM (the tables stay as they were). NULL when
	 * the tables never grow. */
	int (*grow)(struct pp_pred *p);
};

/* Common head of every predictor object. */
struct pp_pred {
	const struct pp_pred_ops *ops; /* the algorithm */
	unsigned max_ahead;	       /* k is clamped to this in pp_pred_predict */
	int want;		       /* a table below its max_ is short: call pp_pred_grow */
};

/* All predictors, in the order pp_predict lists them; NULL-terminated. */
extern const struct pp_pred_ops *const pp_pred_all[];

/* The algorithm called name, or NULL. */
const struct pp_pred_ops *pp_pred_find(const char *name);

/*
 * Create a predictor by name; prm may be NULL for the defaults.
 * Errors: -ENOENT (no such predictor), -EINVAL (bad parameter), -ENOMEM.
 */
int pp_pred_create(const char *name, const struct pp_pred_params *prm, struct pp_pred **out);

/* Fill zero fields of *prm with the defaults; -EINVAL when one is out of range. */
int pp_pred_params_resolve(struct pp_pred_params *prm);

/* Destroy a predictor; NULL is ignored. */
static inline void pp_pred_destroy(struct pp_pred *p)
{
	if (p)
		p->ops->destroy(p);
}

static inline void pp_pred_observe(struct pp_pred *p, uint64_t id, uint32_t site)
{
	p->ops->observe(p, id, site);
}

static inline unsigned pp_pred_predict(struct pp_pred *p, uint32_t next_site, uint64_t *ids,
				       unsigned k)
{
	if (k > p->max_ahead)
		k = p->max_ahead;
	return p->ops->predict(p, next_site, ids, k);
}

static inline size_t pp_pred_mem(const struct pp_pred *p)
{
	return p->ops->mem(p);
}

/*
 * Tables start small and grow as the stream needs, up to the max_
 * parameters. observe never allocates: a table left with one free entry
 * sets want, and the caller, off the receive path (an idle progress pass, a
 * replay between receives), calls this; should a table fill before, the
 * entry it could not make waits (a site or state not tracked, a cycle not
 * stored). 0 when nothing was wanted or the
 * tables grew; -ENOMEM leaves them as they were, and want set.
 */
static inline int pp_pred_grow(struct pp_pred *p)
{
	if (!p->want)
		return 0;
	int rc = p->ops->grow ? p->ops->grow(p) : 0;
	if (!rc)
		p->want = 0;
	return rc;
}

/* The message id of an observation under a field mask (enum pp_pred_field). */
uint64_t pp_pred_id(const struct pp_pred_obs *o, unsigned fields);

/*
 * The site the tag-based predictors see: the call site when known, else the
 * message tag (a trace without call sites still has one tag per call).
 */
static inline uint32_t pp_pred_site(const struct pp_pred_obs *o)
{
	return o->site != PP_PRED_NO_SITE ? o->site : (uint32_t)o->tag;
}

/*
 * Parse a key setting: "envelope", "buf-size-src", or fields joined by '+'
 * (src, tag, comm, bytes, buf, site). Errors: -EINVAL.
 */
int pp_pred_key_parse(const char *s, unsigned *fields);

#endif
