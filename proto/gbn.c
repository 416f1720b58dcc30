/* SPDX-License-Identifier: BSD-3-Clause */
/* Go-back-N's sender and receiver; the rules are in gbn.h. */
#include "gbn.h"

void pp_gbn_tx_start(struct pp_gbn_tx *t, uint32_t seq, uint64_t rto_min, uint64_t rto_max)
{
	t->una = t->nxt = t->rtx_nxt = t->rtx_end = seq;
	t->probing = t->rtt_on = 0;
	t->tries = 0;
	t->rto_min = rto_min;
	t->rto_max = rto_max < rto_min ? rto_min : rto_max;
	t->rto = t->srtt ? pp_gbn_tx_rto(t) : rto_min;
	t->deadline = 0;
}

void pp_gbn_tx_nack(struct pp_gbn_tx *t, uint32_t seq)
{
	if (pp_gbn_lt(seq, t->una) || !pp_gbn_lt(seq, t->nxt))
		return;
	if (pp_gbn_lt(seq, t->rtx_nxt))
		t->rtx_nxt = seq; /* go back */
	t->rtx_end = t->nxt;
	t->probing = 0;
	t->rtt_on = 0; /* Karn: no sample across a resend */
}

enum pp_gbn_timer pp_gbn_tx_timer(struct pp_gbn_tx *t, uint64_t now, uint32_t max_tries)
{
	if (t->una == t->nxt || now < t->deadline)
		return PP_GBN_QUIET;
	if (++t->tries > max_tries)
		return PP_GBN_LOST;
	t->rto = t->rto * 2 > t->rto_max ? t->rto_max : t->rto * 2;
	t->deadline = now + t->rto;
	/* Only the oldest goes again: a receiver that was merely slow has the
	 * rest, and its ack says so (pp_gbn_tx_ack). */
	t->rtx_nxt = t->una;
	t->rtx_end = t->una + 1;
	t->probing = 1;
	t->rtt_on = 0;
	return PP_GBN_PROBE;
}

void pp_gbn_tx_drop(struct pp_gbn_tx *t)
{
	t->una = t->rtx_nxt = t->rtx_end = t->nxt;
	t->probing = 0;
	t->rtt_on = 0;
}
