/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag (the paper's Tagging predictor): each call site (the pre-receive tag)
 * predicts the id it received last time. Predicts +1 only: the site of the
 * receive after next is not known yet. The sites' table starts small and
 * asks to grow (pp_pred_grow) with one entry left; a site it has no room for yet,
 * or beyond max_sites, is not tracked (no prediction for it).
 */
#include <errno.h>
#include <stdlib.h>

#include "pred_impl.h"
#include "pred_map.h"

struct tag_pred {
	struct pp_pred base;	/* common head */
	struct pp_pred_map map; /* site -> slot */
	uint64_t *last;		/* per slot: the id last received there */
	uint32_t max_sites;	/* map.cap's limit */
};

static void tag_destroy(struct pp_pred *p)
{
	struct tag_pred *t = (struct tag_pred *)p;
	pp_pred_map_fini(&t->map);
	free(t->last);
	free(t);
}

static int tag_create(const struct pp_pred_params *prm, struct pp_pred **out)
{
	struct tag_pred *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->max_sites = prm->max_sites;
	int rc = pp_pred_map_init(&t->map, pp_pred_first_cap(prm->max_sites));
	if (rc < 0) {
		free(t);
		return rc;
	}
	t->last = calloc(t->map.cap, sizeof(*t->last));
	if (!t->last) {
		tag_destroy(&t->base);
		return -ENOMEM;
	}
	*out = &t->base;
	return 0;
}

static void tag_observe(struct pp_pred *p, uint64_t id, uint32_t site)
{
	struct tag_pred *t = (struct tag_pred *)p;
	int added;
	int64_t s = pp_pred_map_get(&t->map, site, &added);
	if (s >= 0)
		t->last[s] = id;
	if (added || s < 0)
		t->base.want |= pp_pred_filling(t->map.n, t->map.cap, t->max_sites);
}

static int tag_grow(struct pp_pred *p)
{
	struct tag_pred *t = (struct tag_pred *)p;
	uint32_t cap = pp_pred_next_cap(t->map.cap, t->max_sites);
	uint64_t *last = realloc(t->last, cap * sizeof(*last));
	if (!last)
		return -ENOMEM;
	t->last = last; /* written as sites are added */
	return pp_pred_map_grow(&t->map, cap);
}

static unsigned tag_predict(struct pp_pred *p, uint32_t next_site, uint64_t *ids, unsigned k)
{
	struct tag_pred *t = (struct tag_pred *)p;
	int64_t s = pp_pred_map_find(&t->map, next_site);
	if (s < 0 || k == 0)
		return 0;
	ids[0] = t->last[s];
	return 1;
}

static size_t tag_mem(const struct pp_pred *p)
{
	const struct tag_pred *t = (const struct tag_pred *)p;
	return sizeof(*t) + pp_pred_map_mem(&t->map) + t->map.cap * sizeof(*t->last);
}

const struct pp_pred_ops pp_pred_tag_ops = {
    .name = "tag",
    .create = tag_create,
    .observe = tag_observe,
    .predict = tag_predict,
    .destroy = tag_destroy,
    .mem = tag_mem,
    .grow = tag_grow,
};
