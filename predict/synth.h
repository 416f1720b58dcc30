/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Synthetic receive traces shaped like the papers' workloads (seeded, so the
 * same arguments give the same trace):
 *  - "cycle": a 7-receive cycle over 3 call sites (4 neighbours received in a
 *    loop at one site, 2 at another, one reduction), repeated, with a noisy
 *    initialisation phase of 20 receives before and a conclusion phase of 10
 *    after (the first cycle-paper's workloads).
 *  - "noisy": "cycle" with 2% of the main-phase receives replaced by random
 *    ones.
 *  - "lu": a period of 126 with nested repeats, like NAS LU in the long-term
 *    paper: 31 identical small receives from one neighbour, 31 from another,
 *    a large one (40 KiB), and again with the other large one; after 10
 *    noisy initial receives.
 */
#ifndef PP_PRED_SYNTH_H
#define PP_PRED_SYNTH_H

#include <stdint.h>

#include "trace.h"

/* Names of the patterns, NULL-terminated. */
extern const char *const pp_synth_patterns[];

/*
 * Append a pattern to t: reps repetitions of its cycle or period (0: a
 * default of 500 for cycle/noisy, 60 for lu). Errors: -ENOENT (no such
 * pattern), -ENOMEM.
 */
int pp_synth(const char *pattern, unsigned reps, uint64_t seed, struct pp_trace *t);

#endif
