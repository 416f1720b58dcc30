/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hybrid: runs every other predictor on the stream and, separately for each
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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pp_compiler.h"
#include "pred_impl.h"

/* The components, most general first (ties go to the earlier one). */
static const struct pp_pred_ops *const components[] = {
    &pp_pred_single_cycle_ops,	  &pp_pred_dpd_ops,	  &pp_pred_graph_ops,
    &pp_pred_tag_bettercycle_ops, &pp_pred_tag_cycle_ops, &pp_pred_tag_ops,
};
#define NCOMP PP_ARRAY_SIZE(components)

struct hybrid_pred {
	struct pp_pred base;	     /* common head */
	struct pp_pred *comp[NCOMP]; /* the component predictors */
	uint32_t K;		     /* look-aheads tracked */
	uint64_t t;		     /* receives observed */
	size_t slot;		     /* t mod K */
	int recorded;		     /* slot t mod K holds this step's predictions */
	/* Laid out so that scoring a receive reads each look-ahead's NCOMP
	 * entries side by side. */
	uint64_t *pred;	   /* [K slots][NCOMP][K] predicted ids */
	uint64_t *valid;   /* [K slots][NCOMP] bit j: pred +j+1 made */
	uint64_t *outcome; /* [K][NCOMP] last 64 outcomes, bit 0 newest */
	uint8_t *hits;	   /* [K][NCOMP] ones in outcome */
	uint8_t *choice;   /* [K] chosen component per look-ahead */
};

static void hy_destroy(struct pp_pred *p)
{
	struct hybrid_pred *h = (struct hybrid_pred *)p;
	for (size_t c = 0; c < NCOMP; c++)
		pp_pred_destroy(h->comp[c]);
	free(h->pred);
	free(h->valid);
	free(h->outcome);
	free(h->hits);
	free(h->choice);
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
	h->outcome = calloc(NCOMP * K, sizeof(*h->outcome));
	h->hits = calloc(NCOMP * K, sizeof(*h->hits));
	h->choice = calloc(K, sizeof(*h->choice));
	int rc = -ENOMEM;
	if (!h->pred || !h->valid || !h->outcome || !h->hits || !h->choice)
		goto fail;
	for (size_t c = 0; c < NCOMP; c++) {
		rc = pp_pred_create(components[c]->name, prm, &h->comp[c]);
		if (rc < 0)
			goto fail;
	}
	*out = &h->base;
	return 0;
fail:
	hy_destroy(&h->base);
	return rc;
}

static unsigned score(const struct hybrid_pred *h, size_t c, size_t j)
{
	return h->hits[j * NCOMP + c];
}

static void hy_observe(struct pp_pred *p, uint64_t id, uint32_t site)
{
	struct hybrid_pred *h = (struct hybrid_pred *)p;
	size_t K = h->K;
	size_t slot = h->slot; /* predictions made before this receive */
	for (size_t j = 0; j < K && j <= h->t; j++, slot = slot ? slot - 1 : K - 1) {
		const uint64_t *valid = &h->valid[slot * NCOMP];
		const uint64_t *pred = &h->pred[slot * NCOMP * K + j];
		uint64_t *o = &h->outcome[j * NCOMP];
		uint8_t *hits = &h->hits[j * NCOMP];
		size_t best = 0;
#pragma GCC unroll 8 /* NCOMP is known: no loop, no branch */
		for (size_t c = 0; c < NCOMP; c++) {
			uint64_t hit = (valid[c] >> j & 1) & (pred[c * K] == id);
			hits[c] = (uint8_t)(hits[c] + hit - (o[c] >> 63));
			o[c] = o[c] << 1 | hit;
			best = hits[c] > hits[best] ? c : best;
		}
		h->choice[j] = (uint8_t)best;
	}
	for (size_t c = 0; c < NCOMP; c++)
		pp_pred_observe(h->comp[c], id, site);
	h->t++;
	h->slot = h->slot + 1 == K ? 0 : h->slot + 1;
	memset(&h->valid[h->slot * NCOMP], 0, NCOMP * sizeof(*h->valid));
	h->recorded = 0;
}

static unsigned hy_predict(struct pp_pred *p, uint32_t next_site, uint64_t *ids, unsigned k)
{
	struct hybrid_pred *h = (struct hybrid_pred *)p;
	size_t K = h->K, slot = h->slot;
	if (!h->recorded) {
		for (size_t c = 0; c < NCOMP; c++) {
			unsigned n = pp_pred_predict(h->comp[c], next_site,
						     &h->pred[(slot * NCOMP + c) * K], (unsigned)K);
			h->valid[slot * NCOMP + c] = n >= 64 ? ~0ull : (1ull << n) - 1;
		}
		h->recorded = 1;
	}
	unsigned j;
	for (j = 0; j < k; j++) {
		size_t c = h->choice[j];
		if (!(h->valid[slot * NCOMP + c] >> j & 1)) {
			int found = -1;
			for (size_t o = 0; o < NCOMP; o++)
				if ((h->valid[slot * NCOMP + o] >> j & 1) &&
				    (found < 0 || score(h, o, j) > score(h, (size_t)found, j)))
					found = (int)o;
			if (found < 0)
				break;
			c = (size_t)found;
		}
		ids[j] = h->pred[(slot * NCOMP + c) * K + j];
	}
	return j;
}

static size_t hy_mem(const struct pp_pred *p)
{
	const struct hybrid_pred *h = (const struct hybrid_pred *)p;
	size_t K = h->K, m = sizeof(*h);
	m += NCOMP * K * K * sizeof(*h->pred) + NCOMP * K * sizeof(*h->valid) +
	     NCOMP * K * (sizeof(*h->outcome) + sizeof(*h->hits)) + K * sizeof(*h->choice);
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
};
