/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * For predictor implementations only: the ops tables the registry lists.
 * create receives resolved parameters (pp_pred_params_resolve) and the
 * registry fills the common head after it returns.
 */
#ifndef PP_PRED_IMPL_H
#define PP_PRED_IMPL_H

#include "predict.h"

extern const struct pp_pred_ops pp_pred_single_cycle_ops;
extern const struct pp_pred_ops pp_pred_tag_ops;
extern const struct pp_pred_ops pp_pred_tag_cycle_ops;
extern const struct pp_pred_ops pp_pred_tag_bettercycle_ops;
extern const struct pp_pred_ops pp_pred_graph_ops;
extern const struct pp_pred_ops pp_pred_dpd_ops;
extern const struct pp_pred_ops pp_pred_hybrid_ops;

/* Entries a growing table starts with (at most max), and the next size of
 * one holding cur (twice, at most max): pp_pred_grow's steps. */
#define PP_PRED_FIRST_CAP 4u
static inline uint32_t pp_pred_first_cap(uint32_t max)
{
	return max < PP_PRED_FIRST_CAP ? max : PP_PRED_FIRST_CAP;
}
static inline uint32_t pp_pred_next_cap(uint32_t cur, uint32_t max)
{
	return cur > max / 2 ? max : 2 * cur;
}
/* A table of cap entries (limit max) holding n asks to grow when one entry
 * is left: a receive adds at most one, so a table grown between receives
 * never turns an entry away. */
static inline int pp_pred_filling(uint32_t n, uint32_t cap, uint32_t max)
{
	return cap < max && n + 1 >= cap;
}

/* The period the DPD predictor p currently detects, 0 for none (tests). */
unsigned pp_pred_dpd_period(const struct pp_pred *p);

/* The hybrid's awake components, bit c for its component c (tests). */
unsigned pp_pred_hybrid_awake(const struct pp_pred *p);

#endif
