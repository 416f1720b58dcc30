/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Graph-based predictor (long-term prediction paper, section 3.2). A state is
 * the last three ids; each state counts the ids that followed it (up to
 * GRAPH_SUCC successors; a new one replaces the least counted, the oldest on
 * a tie). The next id is the most counted successor of the current state (the
 * most recent on a tie); k steps ahead are predicted by walking: append the
 * predicted id, move to the state it leads to, repeat. The states' table
 * starts small and asks to grow (pp_pred_grow) with one entry left; should it
 * fill below max_states before it grew, a new state waits (no current
 * state, so no prediction); full at max_states, the graph is cleared and
 * learnt again.
 *
 * The walk is kept between calls: while the stream follows it, a receive
 * takes one step off its front and a prediction adds what is missing at its
 * end, one state looked up instead of k. Nothing it passed through can have
 * changed: a receive counts only at the state it leaves, and when it is the
 * walk's first id it was that state's most counted successor, which counting
 * it once more keeps. Any other receive, or the graph cleared, walks afresh.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pred_impl.h"
#include "pred_map.h"

#define GRAPH_SUCC 4 /* successors kept per state */
#define WALK_MASK  (PP_PRED_MAX_AHEAD - 1)
_Static_assert((PP_PRED_MAX_AHEAD & WALK_MASK) == 0, "the walk is a ring");

/* Successors of one state. */
struct graph_state {
	uint64_t id[GRAPH_SUCC];   /* successor id */
	uint32_t cnt[GRAPH_SUCC];  /* times it followed, 0 = unused */
	uint32_t last[GRAPH_SUCC]; /* observation clock when it last followed */
};

/* One step of a walk. */
struct graph_step {
	uint64_t id;	/* predicted */
	uint64_t mixed; /* pp_pred_mix(id) */
};

struct graph_pred {
	struct pp_pred base;	   /* common head */
	struct pp_pred_map map;	   /* state key -> slot */
	struct graph_state *state; /* per slot, map.cap of them */
	uint32_t max_states;	   /* map.cap's limit */
	uint64_t h[3];		   /* the last three ids mixed (pp_pred_mix), oldest first */
	uint32_t seen;		   /* ids observed, saturating at 3 */
	uint32_t clock;		   /* observations, for recency */
	int64_t cur;		   /* slot of the current state, -1 none */
	/* The walk, a ring from head: step i predicts the id i + 1 receives
	 * ahead (step 0 from cur). */
	unsigned head, n; /* n steps (0: none) */
	struct graph_step walk[PP_PRED_MAX_AHEAD];
};

static uint64_t rotl(uint64_t x, unsigned r)
{
	return x << r | x >> (64 - r);
}

/* The key of the state (a, b, c) from the mixed ids ma, mb, mc. */
static uint64_t state_key(uint64_t ma, uint64_t mb, uint64_t mc)
{
	return ma ^ rotl(mb, 21) ^ rotl(mc, 42);
}

static void graph_destroy(struct pp_pred *p)
{
	struct graph_pred *g = (struct graph_pred *)p;
	pp_pred_map_fini(&g->map);
	free(g->state);
	free(g);
}

static int graph_create(const struct pp_pred_params *prm, struct pp_pred **out)
{
	struct graph_pred *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->max_states = prm->max_states;
	int rc = pp_pred_map_init(&g->map, pp_pred_first_cap(prm->max_states));
	if (rc < 0) {
		free(g);
		return rc;
	}
	g->state = calloc(g->map.cap, sizeof(*g->state));
	if (!g->state) {
		graph_destroy(&g->base);
		return -ENOMEM;
	}
	g->cur = -1;
	*out = &g->base;
	return 0;
}

static void count(struct graph_state *s, uint64_t x, uint32_t now)
{
	int victim = 0;
	for (int i = 0; i < GRAPH_SUCC; i++) {
		if (s->cnt[i] && s->id[i] == x) {
			if (++s->cnt[i] >= (1u << 30))
				for (int j = 0; j < GRAPH_SUCC; j++)
					s->cnt[j] = (s->cnt[j] + 1) / 2;
			s->last[i] = now;
			return;
		}
		if (s->cnt[i] < s->cnt[victim] ||
		    (s->cnt[i] == s->cnt[victim] && s->last[i] < s->last[victim]))
			victim = i;
	}
	s->id[victim] = x;
	s->cnt[victim] = 1;
	s->last[victim] = now;
}

static void graph_observe(struct pp_pred *p, uint64_t id, uint32_t site)
{
	struct graph_pred *g = (struct graph_pred *)p;
	(void)site;
	const struct graph_step *first = &g->walk[g->head];
	int followed = g->n && first->id == id;
	unsigned keep = followed ? g->n - 1 : 0; /* steps of the walk still ahead */
	g->n = 0;
	g->clock++;
	if (g->cur >= 0)
		count(&g->state[g->cur], id, g->clock);
	g->h[0] = g->h[1];
	g->h[1] = g->h[2];
	g->h[2] = followed ? first->mixed : pp_pred_mix(id);
	if (g->seen < 3 && ++g->seen < 3)
		return;
	int added;
	uint64_t key = state_key(g->h[0], g->h[1], g->h[2]);
	int64_t s = pp_pred_map_get(&g->map, key, &added);
	if (s < 0 && g->map.cap < g->max_states) { /* full: wait to grow */
		g->base.want = 1;
		g->cur = -1;
		return;
	}
	if (s < 0) { /* full at its limit: start over */
		pp_pred_map_reset(&g->map);
		s = pp_pred_map_get(&g->map, key, &added);
	}
	if (added) {
		memset(&g->state[s], 0, sizeof(g->state[s]));
		g->base.want |= pp_pred_filling(g->map.n, g->map.cap, g->max_states);
	}
	g->cur = s;
	/* When the walk goes on, s is its step 1's state, which was known: the
	 * graph was not cleared. */
	g->head = (g->head + 1) & WALK_MASK;
	g->n = keep;
}

/* The most likely successor of a state, or 0 when it has none. */
static int best_succ(const struct graph_state *s, uint64_t *id)
{
	int b = -1;
	for (int i = 0; i < GRAPH_SUCC; i++)
		if (s->cnt[i] && (b < 0 || s->cnt[i] > s->cnt[b] ||
				  (s->cnt[i] == s->cnt[b] && s->last[i] > s->last[b])))
			b = i;
	if (b < 0)
		return 0;
	*id = s->id[b];
	return 1;
}

/* The mixed id at step i of the walk; i < 0: the last receives' (h). */
static uint64_t walk_mixed(const struct graph_pred *g, int i)
{
	return i < 0 ? g->h[3 + i] : g->walk[(g->head + (unsigned)i) & WALK_MASK].mixed;
}

static unsigned graph_predict(struct pp_pred *p, uint32_t next_site, uint64_t *ids, unsigned k)
{
	struct graph_pred *g = (struct graph_pred *)p;
	(void)next_site;
	unsigned j = g->n;
	while (j < k) { /* what is missing: step j from the state the 3 before lead to */
		int64_t s = j ? pp_pred_map_find(&g->map, state_key(walk_mixed(g, (int)j - 3),
								    walk_mixed(g, (int)j - 2),
								    walk_mixed(g, (int)j - 1)))
			      : g->cur;
		uint64_t id;
		if (s < 0 || !best_succ(&g->state[s], &id))
			break;
		struct graph_step *w = &g->walk[(g->head + j) & WALK_MASK];
		w->id = id;
		w->mixed = pp_pred_mix(id);
		j++;
	}
	g->n = j;
	if (j > k)
		j = k;
	for (unsigned i = 0; i < j; i++)
		ids[i] = g->walk[(g->head + i) & WALK_MASK].id;
	return j;
}

static int graph_grow(struct pp_pred *p)
{
	struct graph_pred *g = (struct graph_pred *)p;
	uint32_t cap = pp_pred_next_cap(g->map.cap, g->max_states);
	struct graph_state *st = realloc(g->state, cap * sizeof(*st));
	if (!st)
		return -ENOMEM;
	g->state = st; /* states are cleared as they are added */
	return pp_pred_map_grow(&g->map, cap);
}

static size_t graph_mem(const struct pp_pred *p)
{
	const struct graph_pred *g = (const struct graph_pred *)p;
	return sizeof(*g) + pp_pred_map_mem(&g->map) + g->map.cap * sizeof(*g->state);
}

const struct pp_pred_ops pp_pred_graph_ops = {
    .name = "graph",
    .create = graph_create,
    .observe = graph_observe,
    .predict = graph_predict,
    .destroy = graph_destroy,
    .mem = graph_mem,
    .grow = graph_grow,
};
