/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hybrid: runs the other predictors on the stream (but tag-cycle:
 * tag-bettercycle is the same engine and more, and with both the hybrid
 * predicted no better, in 17 KiB more; predict/README.md) and, separately for each
 * look-ahead +1..+K, answers with the one that has been right most often in
 * its last 64 predictions at that look-ahead (a look-ahead it did not fill
 * counts as wrong). Ties go to the earlier one in the component list. When the
 * chosen predictor has no prediction at some look-ahead, the best-scored one
 * that has is used.
 *
 * Each component's predictions are kept for K receives in a ring (slot =
 * receive index mod K) and scored when the receive they were for arrives.
 * Predictions are recorded by the first predict call after an observation;
 * a receive with no predict call before it scores no one.
 *
 * Only the components that earn their keep run. A survey runs all of them
 * for SURVEY receives: at the start (up to SURVEY_MAX while one has not
 * predicted yet), every RECHECK receives, and when the answer's hits at +1
 * in the last 64 fall DROP below what they were at the last survey's end,
 * and so do its hits at +K (no sooner than gap receives after it; the gap
 * doubles with each such survey): a stream whose short cycle breaks every
 * hundred receives (NPB CG) is followed at +1 by one that misses +K at
 * each break. At its end a component stays awake if it is
 * chosen at some look-ahead or made, in the survey's second half, USEFUL
 * hits the answer did not have (it answered and hit, or hit where the
 * answer missed); the others sleep: no observe, no predict, an empty score.
 * Past +1 a tie of scores goes to the one with more such hits: the last 64
 * receives may hold no break where one of them misses.
 * A survey's first half only warms the scores up: it scores +1 and +K as
 * between surveys (the look-aheads between follow +K); its second half
 * scores every look-ahead.
 * Between surveys +1 and +K are still scored (among the awake): +1 goes to
 * the best, and every look-ahead past +1 to the best at +K once it leads
 * the one chosen there by DROP (the choices in between are not scored). A
 * component woken for a survey first observes what it slept through, up to
 * the last RING receives, from a ring of (id, site).
 *
 * A component's tables grow when the hybrid's do (pp_pred_grow): it wants
 * to once one that ran wants to.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pp_compiler.h"
#include "pred_impl.h"

/* The components, most general first (ties go to the earlier one); the
 * first NFAR predict past +1, the others (per-site ones) only +1, so a
 * survey scores look-aheads past +1 for the first NFAR only. */
static const struct pp_pred_ops *const components[] = {
    &pp_pred_single_cycle_ops,	  &pp_pred_dpd_ops, &pp_pred_graph_ops,
    &pp_pred_tag_bettercycle_ops, &pp_pred_tag_ops,
};
#define NCOMP PP_ARRAY_SIZE(components)
#define NFAR  3

enum {
	SURVEY = 256,	  /* receives a survey runs every component */
	SURVEY_MAX = 512, /* the first one, waiting for slow learners */
	RECHECK = 32768,  /* receives from a survey's end to the next */
	DROP = 4,	  /* fall of the answer's hits at +1 that calls a survey */
	GAP = 128,	  /* least receives from a survey to one called so */
	RING = 256,	  /* receives a woken component catches up on */
	USEFUL = 2,	  /* hits in a survey's second half that keep one awake */
};

struct hybrid_pred {
	struct pp_pred base;	     /* common head */
	struct pp_pred *comp[NCOMP]; /* the component predictors */
	uint32_t K;		     /* look-aheads tracked */
	uint64_t t;		     /* receives observed */
	size_t slot;		     /* t mod K */
	int recorded;		     /* slot t mod K holds this step's predictions */
	/* Laid out so that scoring a receive reads each look-ahead's NCOMP
	 * entries side by side. */
	uint64_t *pred;		    /* [K slots][NCOMP][K] predicted ids */
	uint64_t *valid;	    /* [K slots][NCOMP] bit j: pred +j+1 made */
	uint64_t outcome[2][NCOMP]; /* last 64 outcomes at +1, at +K; bit 0 newest */
	uint8_t *hits;		    /* [K][NCOMP] ones in outcome (+1, +K) or in mid's window */
	uint8_t *choice;	    /* [K] chosen component per look-ahead */
	uint8_t *answer;	    /* [K slots][K] who answered +j+1 (NCOMP none): surveys only */
	/* The look-aheads between +1 and +K are scored in a survey's judged
	 * half only, all of them at once: mid[r][c] has bit j set when
	 * component c hit +j+1 at the r-th judged receive (mod 64), so that the
	 * one leaving a window of 64 is known (outcome is not kept for them). */
	uint64_t mid[64][NFAR];
	unsigned mid_n; /* judged receives scored since the survey began */
	uint8_t tail;	/* chosen at every look-ahead past +1, else NCOMP */

	unsigned awake;		  /* bit c: component c runs */
	uint8_t run[NCOMP];	  /* the awake components, in order */
	unsigned nrun;		  /* how many */
	int alone;		  /* one awake, no survey: it answers alone */
	uint64_t ans1;		  /* the answer at +1 for the next receive ... */
	unsigned ans1_ok;	  /* ... if one was given */
	uint64_t slept_at[NCOMP]; /* t when component c fell asleep */
	uint32_t useful[NCOMP];	  /* hits the answer did not have, judged half */
	uint32_t made[NCOMP];	  /* predictions at +1 made, judged half */
	uint64_t survey_begin;	  /* t the current survey began */
	uint64_t survey_end;	  /* t it ends; <= t: none */
	uint64_t next_survey;	  /* t of the next periodic survey */
	uint64_t called_ok;	  /* t from which a fall may call a survey */
	uint64_t gap;		  /* current least gap for that */
	int called;		  /* the current survey was called by a fall */
	uint64_t ans_o;		  /* last 64 answers at +1, bit 0 newest: 1 hit */
	unsigned ans_hits;	  /* ones in ans_o */
	unsigned ans_level;	  /* ans_hits when the last survey ended */
	uint64_t *ansK;		  /* [K slots] the answer at +K made there ... */
	uint64_t ansK_ok;	  /* ... bit s: slot s holds one */
	uint64_t ansK_o;	  /* last 64 answers at +K, as ans_o */
	unsigned ansK_hits;	  /* ones in ansK_o */
	unsigned ansK_level;	  /* ansK_hits when the last survey ended */
	uint64_t ring_id[RING];	  /* the last RING receives ... */
	uint32_t ring_site[RING]; /* ... and their sites */
};

static void set_awake(struct hybrid_pred *h, unsigned mask)
{
	h->awake = mask;
	h->nrun = 0;
	for (size_t c = 0; c < NCOMP; c++)
		if (mask >> c & 1)
			h->run[h->nrun++] = (uint8_t)c;
	h->alone = h->nrun == 1; /* all are awake in a survey */
}

static void hy_destroy(struct pp_pred *p)
{
	struct hybrid_pred *h = (struct hybrid_pred *)p;
	for (size_t c = 0; c < NCOMP; c++)
		pp_pred_destroy(h->comp[c]);
	free(h->pred);
	free(h->valid);
	free(h->hits);
	free(h->choice);
	free(h->answer);
	free(h->ansK);
	free(h);
}

static int hy_create(const struct pp_pred_params *prm, struct pp_pred **out)
{
	struct hybrid_pred *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->K = prm->max_ahead;
	size_t K = h->K;
	h->pred = calloc(NCOMP * K * K, sizeof(*h->pred));
	h->valid = calloc(NCOMP * K, sizeof(*h->valid));
	h->hits = calloc(NCOMP * K, sizeof(*h->hits));
	h->choice = calloc(K, sizeof(*h->choice));
	h->answer = malloc(K * K);
	h->ansK = calloc(K, sizeof(*h->ansK));
	int rc = -ENOMEM;
	if (!h->pred || !h->valid || !h->hits || !h->choice || !h->answer || !h->ansK)
		goto fail;
	memset(h->answer, NCOMP, K * K);
	for (size_t c = 0; c < NCOMP; c++) {
		rc = pp_pred_create(components[c]->name, prm, &h->comp[c]);
		if (rc < 0)
			goto fail;
	}
	set_awake(h, (1u << NCOMP) - 1);
	h->tail = NCOMP;
	h->survey_end = SURVEY;
	h->gap = GAP;
	*out = &h->base;
	return 0;
fail:
	hy_destroy(&h->base);
	return rc;
}

unsigned pp_pred_hybrid_awake(const struct pp_pred *p)
{
	return ((const struct hybrid_pred *)p)->awake;
}

static unsigned score(const struct hybrid_pred *h, size_t c, size_t j)
{
	return h->hits[j * NCOMP + c];
}

/* Wake every sleeping component, caught up on what it slept through. */
static __attribute__((noinline)) void survey_start(struct hybrid_pred *h, int called)
{
	for (size_t c = 0; c < NCOMP; c++) {
		if (h->awake >> c & 1)
			continue;
		uint64_t from = h->slept_at[c];
		if (h->t - from > RING)
			from = h->t - RING;
		for (uint64_t s = from; s < h->t; s++)
			pp_pred_observe(h->comp[c], h->ring_id[s % RING], h->ring_site[s % RING]);
		h->base.want |= h->comp[c]->want;
	}
	memset(h->useful, 0, sizeof(h->useful));
	memset(h->made, 0, sizeof(h->made));
	/* predictions made alone were not recorded: none are */
	memset(h->valid, 0, NCOMP * h->K * sizeof(*h->valid));
	memset(h->answer, NCOMP, h->K * h->K);
	/* the look-aheads between the ends are scored in the judged half only:
	 * from nothing there */
	for (size_t j = 1; j + 1 < h->K; j++)
		memset(&h->hits[j * NCOMP], 0, NCOMP);
	memset(h->mid, 0, sizeof(h->mid));
	h->mid_n = 0;
	set_awake(h, (1u << NCOMP) - 1);
	h->tail = NCOMP; /* the choices move every receive */
	h->survey_begin = h->t;
	h->survey_end = h->t + SURVEY;
	h->called = called;
}

/* Keep awake who is chosen or was useful; put the rest to sleep. */
static __attribute__((noinline)) void survey_end(struct hybrid_pred *h)
{
	unsigned keep = 0, learning = 0;
	for (size_t c = 0; c < NCOMP; c++)
		learning |= (unsigned)(h->made[c] == 0) << c;
	if (learning && h->survey_begin == 0 && h->t < SURVEY_MAX) {
		/* at the start, one that has not predicted yet cannot be judged:
		 * wait (a later survey has them caught up from the ring) */
		memset(h->useful, 0, sizeof(h->useful));
		memset(h->made, 0, sizeof(h->made));
		h->survey_end = h->t + SURVEY / 2;
		return;
	}
	for (size_t j = 1; j < h->K; j++) { /* a tie past +1: more useful hits win */
		size_t best = h->choice[j];
		for (size_t c = 0; c < NCOMP; c++)
			if (score(h, c, j) == score(h, best, j) && h->useful[c] > h->useful[best])
				best = c;
		h->choice[j] = (uint8_t)best;
	}
	for (size_t j = 0; j < h->K; j++)
		keep |= 1u << h->choice[j];
	for (size_t c = 0; c < NCOMP; c++)
		keep |= (unsigned)(h->useful[c] >= USEFUL) << c;
	for (size_t c = 0; c < NCOMP; c++) {
		if (keep >> c & 1)
			continue;
		h->slept_at[c] = h->t;
		h->outcome[0][c] = h->outcome[1][c] = 0; /* a sleeper's record starts over */
		for (size_t j = 0; j < h->K; j++)
			h->hits[j * NCOMP + c] = 0;
	}
	/* each called survey doubles the wait before the next: a noisy stream
	 * would otherwise call one every GAP receives */
	if (h->called)
		h->gap = h->gap * 2 > RECHECK ? RECHECK : h->gap * 2;
	set_awake(h, keep);
	h->tail = h->choice[h->K > 1];
	for (size_t j = 2; j < h->K; j++)
		if (h->choice[j] != h->tail)
			h->tail = NCOMP;
	h->next_survey = h->t + RECHECK;
	h->called_ok = h->t + h->gap;
	h->ans_level = h->ans_hits;
	h->ansK_level = h->ansK_hits;
}

/* Between surveys: score +1 and +K of the awake ones only (a sleeper's
 * record stays empty); +1 goes to the best, and every look-ahead past it
 * to the best at +K once it leads the one chosen there by DROP. Ties go to
 * the earlier. */
static void score_awake_ends(struct hybrid_pred *h, uint64_t id)
{
	/* locals: a store to hits (bytes) could alias any field of h */
	const size_t K = h->K, nrun = h->nrun, last = K - 1;
	const size_t s1 = h->slot, sK = s1 + 1 == K ? 0 : s1 + 1; /* +K was made at sK */
	const uint8_t *run = h->run;
	const uint64_t *v1 = &h->valid[s1 * NCOMP], *vK = &h->valid[sK * NCOMP];
	const uint64_t *p1 = &h->pred[s1 * NCOMP * K], *pK = &h->pred[sK * NCOMP * K + last];
	uint64_t *o1 = h->outcome[0], *oK = h->outcome[1];
	uint8_t *hits1 = h->hits, *hitsK = &h->hits[last * NCOMP];
	size_t best1 = run[0], bestK = run[0];
	unsigned top1 = 0, topK = 0;
	for (size_t i = 0; i < nrun; i++) {
		size_t c = run[i];
		uint64_t a = o1[c];
		unsigned h1 = (unsigned)(v1[c] & 1) & (p1[c * K] == id);
		unsigned n1 = hits1[c] + h1 - (unsigned)(a >> 63);
		o1[c] = a << 1 | h1;
		hits1[c] = (uint8_t)n1;
		best1 = n1 > top1 ? c : best1;
		top1 = n1 > top1 ? n1 : top1;
		if (K < 2)
			continue; /* +K is +1 */
		uint64_t b = oK[c];
		unsigned hK = (unsigned)(vK[c] >> last & 1) & (pK[c * K] == id);
		unsigned nK = hitsK[c] + hK - (unsigned)(b >> 63);
		oK[c] = b << 1 | hK;
		hitsK[c] = (uint8_t)nK;
		bestK = nK > topK ? c : bestK;
		topK = nK > topK ? nK : topK;
	}
	h->choice[0] = (uint8_t)best1;
	if (K < 2 || topK < score(h, h->choice[last], last) + DROP)
		return;
	memset(&h->choice[1], (int)bestK, last);
	h->tail = (uint8_t)bestK;
}

/* In a survey: score look-ahead j (+1 or +K) of the first n components for
 * receive id (their predictions made at slot), choose the best there, and in the
 * survey's judged half count who hit where the answer did not. */
static inline __attribute__((always_inline)) void score_survey(struct hybrid_pred *h, uint64_t id,
							       size_t j, size_t slot, size_t n)
{
	size_t K = h->K;
	const uint64_t *valid = &h->valid[slot * NCOMP];
	const uint64_t *pred = &h->pred[slot * NCOMP * K + j];
	uint64_t *o = h->outcome[j != 0]; /* j is +1 or +K here */
	uint8_t *hits = &h->hits[j * NCOMP];
	uint8_t hit[NCOMP + 1] = {0}; /* [NCOMP]: no answer, no hit */
	size_t best = 0;
#pragma GCC unroll 8 /* n is known: no loop, no branch */
	for (size_t c = 0; c < n; c++) {
		hit[c] = (uint8_t)((valid[c] >> j & 1) & (pred[c * K] == id));
		hits[c] = (uint8_t)(hits[c] + hit[c] - (o[c] >> 63));
		o[c] = o[c] << 1 | hit[c];
		best = hits[c] > hits[best] ? c : best;
	}
	h->choice[j] = (uint8_t)best;
	if (h->survey_end - h->t > SURVEY / 2)
		return; /* a survey's first half warms up; the second is judged */
	size_t ans = h->answer[slot * K + j];
#pragma GCC unroll 8
	for (size_t c = 0; c < n; c++)
		h->useful[c] += hit[c] & ((c == ans) | !hit[ans]);
	if (j == 0)
		for (size_t c = 0; c < NCOMP; c++)
			h->made[c] += (unsigned)(valid[c] & 1);
}

/* In a survey's judged half: score the look-aheads between +1 and +K of
 * the first NFAR components for receive id (each made at its slot, counted
 * back from slot), as score_survey does each, but as one bit mask a
 * component: a score and a choice change only where a hit entered or left
 * the window. */
static void score_middle(struct hybrid_pred *h, uint64_t id, size_t slot)
{
	const size_t K = h->K;
	uint64_t hit[NFAR] = {0}, made[NFAR] = {0};
	uint64_t by[NCOMP + 1] = {0}; /* by[c]: the look-aheads c answered */
	for (size_t j = 1, s = slot; j + 1 < K; j++) {
		s = s ? s - 1 : K - 1;
		const uint64_t bit = 1ull << j, *valid = &h->valid[s * NCOMP];
		const uint64_t *pred = &h->pred[s * NCOMP * K + j];
#pragma GCC unroll 8
		for (size_t c = 0; c < NFAR; c++) {
			made[c] |= valid[c] & bit;
			hit[c] |= pred[c * K] == id ? bit : 0;
		}
		by[h->answer[s * K + j]] |= bit;
	}
#pragma GCC unroll 8
	for (size_t c = 0; c < NFAR; c++)
		hit[c] &= made[c];
	uint64_t answer_hit = 0, moved = h->mid_n ? 0 : (1ull << (K - 1)) - 2; /* all at first */
	for (size_t c = 0; c < NFAR; c++)
		answer_hit |= hit[c] & by[c];
	uint64_t *old = h->mid[h->mid_n++ % 64];
	for (size_t c = 0; c < NFAR; c++) {
		uint64_t d = hit[c] ^ old[c];
		old[c] = hit[c];
		moved |= d;
		for (; d; d &= d - 1) {
			size_t j = (size_t)__builtin_ctzll(d);
			h->hits[j * NCOMP + c] += hit[c] >> j & 1 ? 1 : (uint8_t)-1;
		}
		h->useful[c] += (uint32_t)__builtin_popcountll(hit[c] & (by[c] | ~answer_hit));
	}
	for (; moved; moved &= moved - 1) {
		size_t j = (size_t)__builtin_ctzll(moved), best = 0;
		const uint8_t *hits = &h->hits[j * NCOMP];
		for (size_t c = 1; c < NFAR; c++)
			best = hits[c] > hits[best] ? c : best;
		h->choice[j] = (uint8_t)best;
	}
}

/* In a survey: the warm-up half scores the ends, as between surveys (the
 * look-aheads between follow +K); the judged half scores every look-ahead.
 * Kept out of hy_observe so that the path between surveys stays small. */
static __attribute__((noinline)) void score_in_survey(struct hybrid_pred *h, uint64_t id,
						      size_t slot)
{
	const size_t K = h->K;
	if (h->survey_end - h->t > SURVEY / 2) {
		score_survey(h, id, 0, slot, NCOMP);
		if (K > 1 && h->t >= K - 1) {
			score_survey(h, id, K - 1, slot + 1 == K ? 0 : slot + 1, NFAR);
			memset(&h->choice[1], h->choice[K - 1], K - 2);
			h->tail = h->choice[K - 1];
		}
		return;
	}
	h->tail = NCOMP; /* judged: the choices move every receive */
	score_survey(h, id, 0, slot, NCOMP);
	if (K > 1) { /* t >= SURVEY / 2 >= K here */
		score_middle(h, id, slot);
		score_survey(h, id, K - 1, slot + 1 == K ? 0 : slot + 1, NFAR);
	}
}

static void hy_observe(struct pp_pred *p, uint64_t id, uint32_t site)
{
	struct hybrid_pred *h = (struct hybrid_pred *)p;
	size_t K = h->K;
	size_t slot = h->slot; /* predictions made before this receive */
	int surveying = h->survey_end > h->t;
	unsigned hit1 = h->ans1_ok & (h->ans1 == id);
	h->ans_hits = h->ans_hits + hit1 - (unsigned)(h->ans_o >> 63);
	h->ans_o = h->ans_o << 1 | hit1;
	h->ans1_ok = 0;
	size_t sK = slot + 1 == K ? 0 : slot + 1; /* where +K for this receive was made */
	unsigned hitK = (unsigned)(h->ansK_ok >> sK & 1) & (h->ansK[sK] == id);
	h->ansK_hits = h->ansK_hits + hitK - (unsigned)(h->ansK_o >> 63);
	h->ansK_o = h->ansK_o << 1 | hitK;
	h->ansK_ok &= ~(1ull << sK); /* the next receive's slot, free again */
	if (h->alone) {
		pp_pred_observe(h->comp[h->run[0]], id, site);
		h->base.want |= h->comp[h->run[0]]->want;
		goto next;
	}
	if (!surveying) /* +1 and +K among the awake */
		score_awake_ends(h, id);
	else
		score_in_survey(h, id, slot);
	for (size_t i = 0; i < h->nrun; i++) {
		pp_pred_observe(h->comp[h->run[i]], id, site);
		h->base.want |= h->comp[h->run[i]]->want;
	}
	slot = h->slot + 1 == K ? 0 : h->slot + 1;
	memset(&h->valid[slot * NCOMP], 0, NCOMP * sizeof(*h->valid));
	if (surveying)
		memset(&h->answer[slot * K], NCOMP, K);
next:
	h->ring_id[h->t % RING] = id;
	h->ring_site[h->t % RING] = site;
	h->t++;
	h->slot = h->slot + 1 == K ? 0 : h->slot + 1;
	h->recorded = 0;
	if (surveying) {
		if (h->t == h->survey_end)
			survey_end(h);
	} else if (h->t >= h->next_survey) {
		survey_start(h, 0);
	} else if ((h->ans_hits + DROP <= h->ans_level || h->ansK_hits + DROP <= h->ansK_level) &&
		   h->t >= h->called_ok) {
		survey_start(h, 1);
	}
}

/* pick's other case: the best-scored awake component with a prediction at
 * +j+1, -1 for none. */
static int pick_other(const struct hybrid_pred *h, const uint64_t *valid, size_t j)
{
	int found = -1;
	for (size_t i = 0; i < h->nrun; i++) { /* a sleeper has none */
		size_t o = h->run[i];
		if ((valid[o] >> j & 1) &&
		    (found < 0 || score(h, o, j) > score(h, (size_t)found, j)))
			found = (int)o;
	}
	return found;
}

/* The component that answers +j+1: the chosen one, or when it has no
 * prediction there the best-scored awake one that has; -1 for none. */
static inline int pick(const struct hybrid_pred *h, const uint64_t *valid, size_t j)
{
	size_t c = h->choice[j];
	return valid[c] >> j & 1 ? (int)c : pick_other(h, valid, j);
}

static unsigned hy_predict(struct pp_pred *p, uint32_t next_site, uint64_t *ids, unsigned k)
{
	struct hybrid_pred *h = (struct hybrid_pred *)p;
	size_t K = h->K, slot = h->slot;
	int surveying = h->survey_end > h->t;
	if (h->alone) {
		unsigned n = pp_pred_predict(h->comp[h->run[0]], next_site, ids, k);
		if (!h->recorded) {
			h->ans1 = ids[0];
			h->ans1_ok = n > 0;
			h->recorded = 1;
			if (n == K) {
				h->ansK[slot] = ids[K - 1];
				h->ansK_ok |= 1ull << slot;
			}
		}
		return n;
	}
	if (!h->recorded) {
		for (size_t i = 0; i < h->nrun; i++) {
			size_t c = h->run[i];
			unsigned n = pp_pred_predict(h->comp[c], next_site,
						     &h->pred[(slot * NCOMP + c) * K], (unsigned)K);
			if (c >= NFAR && n > 1)
				n = 1; /* see NFAR */
			h->valid[slot * NCOMP + c] = n >= 64 ? ~0ull : (1ull << n) - 1;
		}
		h->recorded = 1;
	}
	const uint64_t *valid = &h->valid[slot * NCOMP];
	const uint64_t *pred = &h->pred[slot * NCOMP * K];
	/* who answered: what the judged half scores (K receives on) */
	int judged = surveying && h->survey_end - h->t <= SURVEY / 2 + K;
	uint8_t *answer = judged ? &h->answer[slot * K] : NULL;
	unsigned j = 0;
	size_t t = h->tail;
	int c0 = k ? pick(h, valid, 0) : -1;
	if (c0 >= 0 && !answer && t < NCOMP && k > 1 &&
	    (valid[t] >> 1 & ((1ull << (k - 1)) - 1)) == (1ull << (k - 1)) - 1) {
		/* past +1 one component, and it filled them all: a copy */
		ids[0] = pred[(size_t)c0 * K];
		memcpy(&ids[1], &pred[t * K + 1], (k - 1) * sizeof(*ids));
		j = k;
	}
	for (; j < k; j++) {
		int c = pick(h, valid, j);
		if (c < 0)
			break;
		if (answer)
			answer[j] = (uint8_t)c;
		ids[j] = pred[(size_t)c * K + j];
	}
	if (!h->ans1_ok && j > 0) { /* the first answer at +1 since the receive */
		h->ans1 = ids[0];
		h->ans1_ok = 1;
		if (j == K) {
			h->ansK[slot] = ids[K - 1];
			h->ansK_ok |= 1ull << slot;
		}
	}
	return j;
}

static int hy_grow(struct pp_pred *p)
{
	struct hybrid_pred *h = (struct hybrid_pred *)p;
	int rc = 0;
	for (size_t c = 0; c < NCOMP; c++) {
		int r = pp_pred_grow(h->comp[c]);
		rc = rc ? rc : r;
	}
	return rc;
}

static size_t hy_mem(const struct pp_pred *p)
{
	const struct hybrid_pred *h = (const struct hybrid_pred *)p;
	size_t K = h->K, m = sizeof(*h);
	m += NCOMP * K * K * sizeof(*h->pred) + NCOMP * K * sizeof(*h->valid) +
	     NCOMP * K * sizeof(*h->hits) + K * sizeof(*h->choice) + K * K * sizeof(*h->answer) +
	     K * sizeof(*h->ansK);
	for (size_t c = 0; c < NCOMP; c++)
		m += pp_pred_mem(h->comp[c]);
	return m;
}

const struct pp_pred_ops pp_pred_hybrid_ops = {
    .name = "hybrid",
    .create = hy_create,
    .observe = hy_observe,
    .predict = hy_predict,
    .destroy = hy_destroy,
    .mem = hy_mem,
    .grow = hy_grow,
};
