/* SPDX-License-Identifier: BSD-3-Clause */
#include "replay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pp_replay_run(struct pp_pred *p, const struct pp_trace *t, const struct pp_replay_cfg *cfg,
		  struct pp_replay_res *out)
{
	unsigned K = 0;
	if (cfg->n_ahead == 0 || cfg->n_ahead > PP_REPLAY_MAX_AHEADS)
		return -EINVAL;
	for (unsigned i = 0; i < cfg->n_ahead; i++) {
		if (cfg->ahead[i] == 0 || cfg->ahead[i] > p->max_ahead)
			return -EINVAL;
		if (cfg->ahead[i] > K)
			K = cfg->ahead[i];
	}
	/* pend[s % K]: the ids predicted before receive s, for s+1..s+K. */
	uint64_t *pend = malloc((size_t)K * K * sizeof(*pend));
	unsigned *made = calloc(K, sizeof(*made));
	if (!pend || !made) {
		free(pend);
		free(made);
		return -ENOMEM;
	}
	struct pp_replay_res r;
	memset(&r, 0, sizeof(r));
	for (size_t i = 0; i < t->n; i++) {
		const struct pp_pred_obs *o = &t->obs[i];
		uint32_t site = pp_pred_site(o);
		uint64_t id = pp_pred_id(o, cfg->fields);
		made[i % K] = pp_pred_predict(p, site, &pend[(i % K) * K], K);
		if (o->bytes >= cfg->min_bytes) {
			r.receives++;
			for (unsigned a = 0; a < cfg->n_ahead; a++) {
				unsigned ah = cfg->ahead[a];
				if (i + 1 < ah)
					continue;
				size_t s = (i + 1 - ah) % K; /* predicted before receive i+1-ah */
				if (made[s] < ah)
					continue;
				r.row[a].predictions++;
				r.row[a].hits += pend[s * K + ah - 1] == id;
			}
		}
		pp_pred_observe(p, id, site);
		pp_pred_grow(p); /* as a runtime's idle pass would */
	}
	free(pend);
	free(made);
	*out = r;
	return 0;
}
