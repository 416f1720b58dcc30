/* SPDX-License-Identifier: BSD-3-Clause */
#include "cycle.h"

#include <string.h>

#include "predict.h"

void pp_cyc_init(struct pp_cyc *c, uint64_t *log, uint32_t cap, uint32_t max)
{
	c->log = log;
	c->cap = cap;
	c->n = 0;
	c->len = 0;
	c->pos = 0;
	c->patience = max / 4;
	c->phase = PP_CYC_INIT;
}

/* Enter PREDICTING with log[0..len) just completed by its head. */
static void follow(struct pp_cyc *c, uint32_t len)
{
	c->len = len;
	c->pos = len > 1 ? 1 : 0;
	c->n = 0;
	c->phase = PP_CYC_PREDICTING;
}

/*
 * Does the candidate log[j..n) (x == log[j] arriving at index n, length
 * L = n - j) qualify as the first cycle?
 */
static int first_cycle_ok(const struct pp_cyc *c, uint32_t j)
{
	uint32_t i = c->n, L = i - j;
	if (L >= PP_PRED_MIN_FIRST_CYCLE)
		return 1;
	/* Short: it must have repeated back to back over R >= 6 receives. */
	uint32_t R = L * ((PP_PRED_MIN_FIRST_CYCLE + L - 1) / L);
	if (i < R)
		return 0;
	for (uint32_t t = i - R + L; t < i; t++)
		if (c->log[t] != c->log[t - L])
			return 0;
	return 1;
}

/* The initialisation-phase search: does x end a first cycle? Follows it if so. */
static int search(struct pp_cyc *c, uint64_t x)
{
	for (uint32_t j = c->n; j-- > 0;) {
		if (c->log[j] != x)
			continue;
		if (!first_cycle_ok(c, j))
			return 0;
		uint32_t len = c->n - j;
		memmove(c->log, c->log + j, len * sizeof(*c->log));
		follow(c, len);
		return 1;
	}
	return 0;
}

static void append(struct pp_cyc *c, uint64_t x)
{
	if (c->n == c->cap) {
		uint32_t keep = c->cap - c->cap / 2;
		memmove(c->log, c->log + (c->cap - keep), keep * sizeof(*c->log));
		c->n = keep;
	}
	c->log[c->n++] = x;
}

int pp_cyc_observe(struct pp_cyc *c, uint64_t x)
{
	switch (c->phase) {
	case PP_CYC_PREDICTING:
		if (c->log[c->pos] == x) {
			if (++c->pos == c->len)
				c->pos = 0;
			return PP_CYC_HIT;
		}
		c->log[0] = x;
		c->n = 1;
		c->phase = PP_CYC_FORMING;
		return PP_CYC_MISS;
	case PP_CYC_FORMING:
		if (x == c->log[0]) {
			follow(c, c->n);
			return PP_CYC_FORMED;
		}
		if (c->n > c->patience && search(c, x))
			return PP_CYC_FORMED;
		if (c->n == c->cap)
			c->n = 0; /* too long: restart from this id */
		c->log[c->n++] = x;
		return PP_CYC_LEARNING;
	default: /* PP_CYC_INIT */
		if (search(c, x))
			return PP_CYC_FORMED;
		append(c, x);
		return PP_CYC_LEARNING;
	}
}

void pp_cyc_adopt(struct pp_cyc *c, const uint64_t *cyc, uint32_t len)
{
	memmove(c->log, cyc, len * sizeof(*c->log));
	follow(c, len);
}
