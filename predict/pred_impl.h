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

/* The period the DPD predictor p currently detects, 0 for none (tests). */
unsigned pp_pred_dpd_period(const struct pp_pred *p);

/* The hybrid's awake components, bit c for its component c (tests). */
unsigned pp_pred_hybrid_awake(const struct pp_pred *p);

#endif
