/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replay a trace through a predictor and count hits. Before each receive the
 * predictor is asked for the next K ids (K = the largest look-ahead wanted),
 * given the receive's site as the pre-receive hint; the receive is then
 * scored against what was predicted for it 1..K receives earlier, and
 * observed. A hit at +a: the id predicted a receives ahead equals the id
 * received then. Only receives of at least min_bytes are scored (all are
 * observed).
 */
#ifndef PP_PRED_REPLAY_H
#define PP_PRED_REPLAY_H

#include <stdint.h>

#include "predict.h"
#include "trace.h"

#define PP_REPLAY_MAX_AHEADS 16 /* look-aheads one replay can score */

struct pp_replay_cfg {
	unsigned fields;		      /* message id fields (enum pp_pred_field) */
	uint64_t min_bytes;		      /* score only receives this large */
	unsigned n_ahead;		      /* look-aheads to score */
	unsigned ahead[PP_REPLAY_MAX_AHEADS]; /* each in 1..PP_PRED_MAX_AHEAD */
};

/* Counts for one look-ahead. */
struct pp_replay_row {
	uint64_t predictions; /* scored receives a prediction was made for */
	uint64_t hits;	      /* of those, predicted right */
};

struct pp_replay_res {
	uint64_t receives;				/* receives scored */
	struct pp_replay_row row[PP_REPLAY_MAX_AHEADS]; /* per cfg.ahead[i] */
};

/*
 * Run t through p (a fresh predictor created with max_ahead >= every
 * look-ahead). Errors: -EINVAL (bad cfg or look-ahead above p's max_ahead),
 * -ENOMEM.
 */
int pp_replay_run(struct pp_pred *p, const struct pp_trace *t, const struct pp_replay_cfg *cfg,
		  struct pp_replay_res *out);

#endif
