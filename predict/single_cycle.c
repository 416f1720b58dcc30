/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Single-cycle: one cycle-discovery engine (cycle.h) over the whole receive
 * stream. Predicts any look-ahead by walking the cycle.
 */
#include <errno.h>
#include <stdlib.h>

#include "cycle.h"
#include "pred_impl.h"

struct single_cycle {
	struct pp_pred base; /* common head */
	struct pp_cyc cyc;   /* the engine */
	uint64_t log[];	     /* its log, max_cycle ids */
};

static int sc_create(const struct pp_pred_params *prm, struct pp_pred **out)
{
	struct single_cycle *s = malloc(sizeof(*s) + prm->max_cycle * sizeof(uint64_t));
	if (!s)
		return -ENOMEM;
	pp_cyc_init(&s->cyc, s->log, prm->max_cycle, prm->max_cycle);
	*out = &s->base;
	return 0;
}

static void sc_observe(struct pp_pred *p, uint64_t id, uint32_t site)
{
	(void)site;
	pp_cyc_observe(&((struct single_cycle *)p)->cyc, id);
}

static unsigned sc_predict(struct pp_pred *p, uint32_t next_site, uint64_t *ids, unsigned k)
{
	(void)next_site;
	return pp_cyc_predict(&((struct single_cycle *)p)->cyc, ids, k);
}

static void sc_destroy(struct pp_pred *p)
{
	free(p);
}

static size_t sc_mem(const struct pp_pred *p)
{
	const struct single_cycle *s = (const struct single_cycle *)p;
	return sizeof(*s) + s->cyc.cap * sizeof(uint64_t);
}

const struct pp_pred_ops pp_pred_single_cycle_ops = {
    .name = "single-cycle",
    .create = sc_create,
    .observe = sc_observe,
    .predict = sc_predict,
    .destroy = sc_destroy,
    .mem = sc_mem,
};
