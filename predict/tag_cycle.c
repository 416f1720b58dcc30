/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag-cycle and tag-bettercycle: one cycle-discovery engine (cycle.h) per
 * call site, each seeing only the receives of its site. Predict +1 only (the
 * site of the receive after next is not known yet).
 *
 * Tag-bettercycle also keeps every cycle it has formed, keyed by (site, cycle
 * head). When a cycle breaks on an id that heads a stored cycle of the same
 * site, it follows the stored one at once instead of forming it again. Stored
 * cycles live in one arena of max_stored ids; when it (or its index) is full
 * everything stored is forgotten and storing starts over.
 *
 * Sites beyond max_sites are not tracked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cycle.h"
#include "pred_impl.h"
#include "pred_map.h"

struct tag_cycle {
	struct pp_pred base;	   /* common head */
	struct pp_pred_map map;	   /* site -> slot */
	struct pp_cyc *cyc;	   /* per slot: its engine */
	uint64_t *logs;		   /* per slot: max_tag_cycle ids of log */
	uint32_t max_cycle;	   /* log length per slot */
	int better;		   /* keep and reuse broken cycles */
	struct pp_pred_map stored; /* (site, head) -> stored cycle (better only) */
	uint32_t *st_off;	   /* per stored cycle: offset in arena */
	uint32_t *st_len;	   /* per stored cycle: length */
	uint64_t *arena;	   /* stored cycles back to back */
	uint32_t arena_cap;	   /* ids in arena */
	uint32_t arena_used;	   /* ids used */
};

static void tc_destroy(struct pp_pred *p)
{
	struct tag_cycle *t = (struct tag_cycle *)p;
	pp_pred_map_fini(&t->map);
	pp_pred_map_fini(&t->stored);
	free(t->cyc);
	free(t->logs);
	free(t->st_off);
	free(t->st_len);
	free(t->arena);
	free(t);
}

static int tc_create_common(const struct pp_pred_params *prm, int better, struct pp_pred **out)
{
	struct tag_cycle *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->better = better;
	t->max_cycle = prm->max_tag_cycle;
	int rc = pp_pred_map_init(&t->map, prm->max_sites);
	if (rc < 0)
		goto fail;
	rc = -ENOMEM;
	t->cyc = calloc(prm->max_sites, sizeof(*t->cyc));
	t->logs = calloc((size_t)prm->max_sites * t->max_cycle, sizeof(*t->logs));
	if (!t->cyc || !t->logs)
		goto fail;
	if (better) {
		uint32_t entries = prm->max_stored / 2 ? prm->max_stored / 2 : 1;
		rc = pp_pred_map_init(&t->stored, entries);
		if (rc < 0)
			goto fail;
		rc = -ENOMEM;
		t->st_off = calloc(entries, sizeof(*t->st_off));
		t->st_len = calloc(entries, sizeof(*t->st_len));
		t->arena = calloc(prm->max_stored, sizeof(*t->arena));
		t->arena_cap = prm->max_stored;
		if (!t->st_off || !t->st_len || !t->arena)
			goto fail;
	}
	*out = &t->base;
	return 0;
fail:
	tc_destroy(&t->base);
	return rc;
}

static int tc_create(const struct pp_pred_params *prm, struct pp_pred **out)
{
	return tc_create_common(prm, 0, out);
}

static int tbc_create(const struct pp_pred_params *prm, struct pp_pred **out)
{
	return tc_create_common(prm, 1, out);
}

static uint64_t stored_key(uint32_t site, uint64_t head)
{
	return pp_pred_mix(head ^ pp_pred_mix(0x5c0ffee5ull + site));
}

/* Remember the cycle just formed at site (its head is c->log[0]). */
static void store_cycle(struct tag_cycle *t, uint32_t site, const struct pp_cyc *c)
{
	if (c->len > t->arena_cap)
		return;
	if (t->arena_used + c->len > t->arena_cap || t->stored.n == t->stored.cap) {
		pp_pred_map_reset(&t->stored);
		t->arena_used = 0;
	}
	int added;
	int64_t s = pp_pred_map_get(&t->stored, stored_key(site, c->log[0]), &added);
	if (s < 0)
		return;
	if (added || t->st_len[s] != c->len) { /* else overwrite in place */
		t->st_off[s] = t->arena_used;
		t->arena_used += c->len;
	}
	t->st_len[s] = c->len;
	memcpy(t->arena + t->st_off[s], c->log, c->len * sizeof(*c->log));
}

static void tc_observe(struct pp_pred *p, uint64_t id, uint32_t site)
{
	struct tag_cycle *t = (struct tag_cycle *)p;
	int added;
	int64_t s = pp_pred_map_get(&t->map, site, &added);
	if (s < 0)
		return;
	struct pp_cyc *c = &t->cyc[s];
	if (added)
		pp_cyc_init(c, t->logs + (size_t)s * t->max_cycle, t->max_cycle);
	int ev = pp_cyc_observe(c, id);
	if (!t->better)
		return;
	if (ev == PP_CYC_FORMED) {
		store_cycle(t, site, c);
	} else if (ev == PP_CYC_MISS) {
		int64_t k = pp_pred_map_find(&t->stored, stored_key(site, id));
		if (k >= 0)
			pp_cyc_adopt(c, t->arena + t->st_off[k], t->st_len[k]);
	}
}

static unsigned tc_predict(struct pp_pred *p, uint32_t next_site, uint64_t *ids, unsigned k)
{
	struct tag_cycle *t = (struct tag_cycle *)p;
	int64_t s = pp_pred_map_find(&t->map, next_site);
	if (s < 0)
		return 0;
	return pp_cyc_predict(&t->cyc[s], ids, k < 1 ? k : 1);
}

static size_t tc_mem(const struct pp_pred *p)
{
	const struct tag_cycle *t = (const struct tag_cycle *)p;
	size_t n = t->map.cap;
	size_t m = sizeof(*t) + pp_pred_map_mem(&t->map) + n * sizeof(*t->cyc) +
		   n * t->max_cycle * sizeof(*t->logs);
	if (t->better)
		m += pp_pred_map_mem(&t->stored) +
		     t->stored.cap * (sizeof(*t->st_off) + sizeof(*t->st_len)) +
		     t->arena_cap * sizeof(*t->arena);
	return m;
}

const struct pp_pred_ops pp_pred_tag_cycle_ops = {
    .name = "tag-cycle",
    .create = tc_create,
    .observe = tc_observe,
    .predict = tc_predict,
    .destroy = tc_destroy,
    .mem = tc_mem,
};

const struct pp_pred_ops pp_pred_tag_bettercycle_ops = {
    .name = "tag-bettercycle",
    .create = tbc_create,
    .observe = tc_observe,
    .predict = tc_predict,
    .destroy = tc_destroy,
    .mem = tc_mem,
};
