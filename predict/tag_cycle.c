/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag-cycle and tag-bettercycle: one cycle-discovery engine (cycle.h) per
 * call site, each seeing only the receives of its site. Predict +1 only (the
 * site of the receive after next is not known yet).
 *
 * Tag-bettercycle also keeps every cycle it has formed, keyed by (site, cycle
 * head). When a cycle breaks on an id that heads a stored cycle of the same
 * site, it follows the stored one at once instead of forming it again. Stored
 * cycles live in one arena of up to max_stored ids; when it (or its index)
 * is full at its limit everything stored is forgotten and storing starts
 * over.
 *
 * The sites' table, the arena and its index start small and ask to grow
 * (pp_pred_grow) with one entry left (the arena: one longest cycle); should
 * one fill before it grew, a site with
 * no room is not tracked and a cycle with no room is not stored. Sites
 * beyond max_sites are never tracked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cycle.h"
#include "pred_impl.h"
#include "pred_map.h"

/* Ids a site's log starts with; it doubles, to max_tag_cycle, when it is
 * one id from full (a dozen sites of short cycles kept 128 each). */
#define FIRST_LOG 16u

struct tag_cycle {
	struct pp_pred base;	   /* common head */
	struct pp_pred_map map;	   /* site -> slot */
	struct pp_cyc *cyc;	   /* per slot: its engine (and its log, its own) */
	uint32_t max_cycle;	   /* a slot's log grows to this (max_tag_cycle) */
	uint32_t nlogs;		   /* slots of cyc with a log made (>= map.cap) */
	int log_short;		   /* a slot's log is one id from full */
	int better;		   /* keep and reuse broken cycles */
	struct pp_pred_map stored; /* (site, head) -> stored cycle (better only) */
	uint32_t *st_off;	   /* per stored cycle: offset in arena */
	uint32_t *st_len;	   /* per stored cycle: length */
	uint64_t *arena;	   /* stored cycles back to back */
	uint32_t arena_cap;	   /* ids in arena */
	uint32_t arena_used;	   /* ids used */
	uint32_t need;		   /* ids a cycle found no room for (grow) */
	uint32_t max_sites;	   /* map.cap's limit */
	uint32_t max_entries;	   /* stored.cap's limit */
	uint32_t max_stored;	   /* arena_cap's limit */
};

/* A first log for each slot of cyc (allocated to hold to) from nlogs on:
 * observe never allocates, so a new site finds its log ready. */
static int add_logs(struct tag_cycle *t, uint32_t to)
{
	uint32_t cap = t->max_cycle < FIRST_LOG ? t->max_cycle : FIRST_LOG;
	for (; t->nlogs < to; t->nlogs++) {
		struct pp_cyc *c = &t->cyc[t->nlogs];
		c->log = malloc(cap * sizeof(*c->log));
		if (!c->log)
			return -ENOMEM;
		c->cap = cap;
	}
	return 0;
}

static void tc_destroy(struct pp_pred *p)
{
	struct tag_cycle *t = (struct tag_cycle *)p;
	pp_pred_map_fini(&t->map);
	pp_pred_map_fini(&t->stored);
	for (uint32_t s = 0; s < t->nlogs; s++)
		free(t->cyc[s].log);
	free(t->cyc);
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
	t->max_sites = prm->max_sites;
	int rc = pp_pred_map_init(&t->map, pp_pred_first_cap(prm->max_sites));
	if (rc < 0)
		goto fail;
	rc = -ENOMEM;
	t->cyc = calloc(t->map.cap, sizeof(*t->cyc));
	if (!t->cyc || add_logs(t, t->map.cap))
		goto fail;
	if (better) {
		t->max_entries = prm->max_stored / 2 ? prm->max_stored / 2 : 1;
		t->max_stored = prm->max_stored;
		rc = pp_pred_map_init(&t->stored, pp_pred_first_cap(t->max_entries));
		if (rc < 0)
			goto fail;
		rc = -ENOMEM;
		t->st_off = calloc(t->stored.cap, sizeof(*t->st_off));
		t->st_len = calloc(t->stored.cap, sizeof(*t->st_len));
		t->arena_cap = t->max_stored < t->max_cycle ? t->max_stored : t->max_cycle;
		t->arena = calloc(t->arena_cap, sizeof(*t->arena));
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

/* An arena of cap ids (below its limit) without room for one more cycle of
 * the longest kind after what it holds and what was turned away. */
static int arena_short(const struct tag_cycle *t, uint32_t cap)
{
	return cap < t->max_stored && t->arena_used + t->need + t->max_cycle > cap;
}

/* Remember the cycle just formed at site (its head is c->log[0]). */
static void store_cycle(struct tag_cycle *t, uint32_t site, const struct pp_cyc *c)
{
	if (c->len > t->max_stored)
		return;
	int arena_full = t->arena_used + c->len > t->arena_cap;
	int index_full = t->stored.n == t->stored.cap;
	if ((arena_full && t->arena_cap < t->max_stored) ||
	    (index_full && t->stored.cap < t->max_entries)) {
		t->need = c->len; /* not stored: wait to grow */
		t->base.want = 1;
		return;
	}
	if (arena_full || index_full) {
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
	if (pp_pred_filling(t->stored.n, t->stored.cap, t->max_entries) ||
	    arena_short(t, t->arena_cap))
		t->base.want = 1;
}

static void tc_observe(struct pp_pred *p, uint64_t id, uint32_t site)
{
	struct tag_cycle *t = (struct tag_cycle *)p;
	int added;
	int64_t s = pp_pred_map_get(&t->map, site, &added);
	if (added || s < 0)
		t->base.want |= pp_pred_filling(t->map.n, t->map.cap, t->max_sites);
	if (s < 0)
		return;
	struct pp_cyc *c = &t->cyc[s];
	if (added)
		pp_cyc_init(c, c->log, c->cap, t->max_cycle); /* the slot's log, as grown */
	int ev = pp_cyc_observe(c, id);
	if (pp_cyc_filling(c) && c->cap < t->max_cycle)
		t->base.want = t->log_short = 1;
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

/* The sites' table twice as large, with a first log for each new slot. */
static int grow_sites(struct tag_cycle *t)
{
	uint32_t cap = pp_pred_next_cap(t->map.cap, t->max_sites);
	struct pp_cyc *cyc = realloc(t->cyc, cap * sizeof(*cyc));
	if (!cyc)
		return -ENOMEM;
	t->cyc = cyc;
	int rc = add_logs(t, cap);
	return rc < 0 ? rc : pp_pred_map_grow(&t->map, cap);
}

/* Each slot's log one id from full twice as long (to max_cycle). */
static int grow_logs(struct tag_cycle *t)
{
	for (uint32_t s = 0; s < t->map.n; s++) {
		struct pp_cyc *c = &t->cyc[s];
		if (!pp_cyc_filling(c) || c->cap >= t->max_cycle)
			continue;
		uint32_t cap = pp_pred_next_cap(c->cap, t->max_cycle);
		uint64_t *log = realloc(c->log, cap * sizeof(*log));
		if (!log)
			return -ENOMEM;
		pp_cyc_move(c, log, cap);
	}
	t->log_short = 0;
	return 0;
}

static int grow_stored(struct tag_cycle *t)
{
	if (pp_pred_filling(t->stored.n, t->stored.cap, t->max_entries)) {
		uint32_t cap = pp_pred_next_cap(t->stored.cap, t->max_entries);
		uint32_t *off = realloc(t->st_off, cap * sizeof(*off));
		if (off)
			t->st_off = off;
		uint32_t *len = off ? realloc(t->st_len, cap * sizeof(*len)) : NULL;
		if (len)
			t->st_len = len;
		int rc = len ? pp_pred_map_grow(&t->stored, cap) : -ENOMEM;
		if (rc < 0)
			return rc;
	}
	uint32_t cap = t->arena_cap;
	while (arena_short(t, cap))
		cap = pp_pred_next_cap(cap, t->max_stored);
	if (cap > t->arena_cap) {
		uint64_t *a = realloc(t->arena, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		t->arena = a;
		t->arena_cap = cap;
	}
	t->need = 0;
	return 0;
}

static int tc_grow(struct pp_pred *p)
{
	struct tag_cycle *t = (struct tag_cycle *)p;
	int rc = 0;
	if (pp_pred_filling(t->map.n, t->map.cap, t->max_sites))
		rc = grow_sites(t);
	if (!rc && t->log_short)
		rc = grow_logs(t);
	if (!rc && t->better)
		rc = grow_stored(t);
	return rc;
}

static size_t tc_mem(const struct pp_pred *p)
{
	const struct tag_cycle *t = (const struct tag_cycle *)p;
	size_t n = t->map.cap;
	size_t m = sizeof(*t) + pp_pred_map_mem(&t->map) + n * sizeof(*t->cyc);
	for (uint32_t s = 0; s < n; s++)
		m += t->cyc[s].cap * sizeof(*t->cyc[s].log);
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
    .grow = tc_grow,
};

const struct pp_pred_ops pp_pred_tag_bettercycle_ops = {
    .name = "tag-bettercycle",
    .create = tbc_create,
    .observe = tc_observe,
    .predict = tc_predict,
    .destroy = tc_destroy,
    .mem = tc_mem,
    .grow = tc_grow,
};
