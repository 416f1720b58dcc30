/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cycle-discovery engine behind single-cycle, tag-cycle and
 * tag-bettercycle (one engine per stream or per call site).
 *
 * Phases:
 *  - INIT (the paper's initialisation phase): a cycle is searched for from
 *    every id at once. When id x comes again, the ids since its most recent
 *    earlier occurrence form a candidate cycle; the first candidate of at
 *    least PP_PRED_MIN_FIRST_CYCLE ids ends the phase. A shorter candidate
 *    also counts once it has repeated back to back over at least that many
 *    receives (so a stream of one repeated id, or a 2-cycle, is learnt too).
 *    In the paper's Figure 3 sequence 1 3 5 4 6 7 8 9 10 4 ... the phase ends
 *    at the second 4 with the cycle 4 6 7 8 9 10.
 *  - PREDICTING: the cycle is followed; a receive that is not the predicted
 *    one breaks it and becomes the head of a new cycle.
 *  - FORMING: ids are logged from that head until the head comes again; the
 *    log is then the new cycle. No predictions while forming. A head that
 *    does not come back within cap / 4 receives (a stray id) stops being
 *    waited for alone: from then on the initialisation-phase search also
 *    runs over the log, and whichever cycle qualifies first is taken.
 * The log holds cap ids; when the initial search fills it the oldest half is
 * dropped, and a formation longer than cap restarts at the current id. A
 * caller may grow the log between observations (pp_cyc_filling says when).
 */
#ifndef PP_PRED_CYCLE_H
#define PP_PRED_CYCLE_H

#include <stdint.h>
#include <string.h>

enum pp_cyc_phase {
	PP_CYC_INIT = 0,   /* initialisation phase: searching from every id */
	PP_CYC_FORMING,	   /* logging from a cycle head until it comes again */
	PP_CYC_PREDICTING, /* following the cycle */
};

/* What one observation did. */
enum pp_cyc_event {
	PP_CYC_LEARNING = 0, /* no cycle yet */
	PP_CYC_HIT,	     /* the id was the predicted one */
	PP_CYC_MISS,	     /* the cycle broke; forming a new one from this id */
	PP_CYC_FORMED,	     /* a cycle formed; it is log[0..len), head log[0] */
};

struct pp_cyc {
	uint64_t *log;	   /* cap ids: initial history, formation log, then the cycle */
	uint32_t cap;	   /* capacity of log */
	uint32_t n;	   /* ids in log during INIT and FORMING */
	uint32_t len;	   /* cycle length while PREDICTING */
	uint32_t pos;	   /* index in the cycle of the next expected id */
	uint32_t patience; /* FORMING ids after which any id may end the search */
	uint8_t phase;	   /* enum pp_cyc_phase */
};

/* Start in the initialisation phase over a caller's log of cap >= 1 ids,
 * which may grow to max >= cap (pp_cyc_move): the patience is max's. */
void pp_cyc_init(struct pp_cyc *c, uint64_t *log, uint32_t cap, uint32_t max);

/* The log now at log (its ids moved there by the caller), cap ids long. */
static inline void pp_cyc_move(struct pp_cyc *c, uint64_t *log, uint32_t cap)
{
	c->log = log;
	c->cap = cap;
}

/* One id more would fill the log (INIT or FORMING): a log grown before the
 * next observation acts as one of the larger size. */
static inline int pp_cyc_filling(const struct pp_cyc *c)
{
	return c->phase != PP_CYC_PREDICTING && c->n + 1 >= c->cap;
}

/* Learn one id; returns an enum pp_cyc_event. */
int pp_cyc_observe(struct pp_cyc *c, uint64_t x);

/*
 * Follow a known cycle (1 <= len <= cap; cyc[0] is the id just observed).
 * Used by tag-bettercycle after a miss on a head it has a stored cycle for.
 */
void pp_cyc_adopt(struct pp_cyc *c, const uint64_t *cyc, uint32_t len);

/* Predict up to k ids; 0 unless following a cycle. */
static inline unsigned pp_cyc_predict(const struct pp_cyc *c, uint64_t *ids, unsigned k)
{
	if (c->phase != PP_CYC_PREDICTING)
		return 0;
	uint32_t p = c->pos;
	if (c->len - p >= k) { /* one run, no wrap: the usual case */
		memcpy(ids, &c->log[p], k * sizeof(*ids));
		return k;
	}
	for (unsigned j = 0; j < k; j++) {
		ids[j] = c->log[p];
		if (++p == c->len)
			p = 0;
	}
	return k;
}

#endif
