/* SPDX-License-Identifier: BSD-3-Clause */
/* Credits (docs/protocol.md, rule 4): each peer's share of the pushed
 * buffer, spent by the sender when it pushes, given back by the receiver. */
#include <stdint.h>

#include "engine_impl.h"

#define CREDIT_SHARE_MAX 32767u /* cells; keeps 16-bit credit arithmetic sound */

uint32_t pp_proto_credit_share(const struct pp_pushbuf *pb, uint32_t nranks)
{
	uint32_t share = nranks > 1 ? pb->ncells / (nranks - 1) : 0;
	return share > CREDIT_SHARE_MAX ? CREDIT_SHARE_MAX : share;
}

/* Cells a push of push bytes takes in the receiver's pushed buffer, frame
 * by frame as the sender cuts it. */
static uint32_t cells_of(const struct pp_proto *e, const struct pp_proto_peer *p, uint64_t push,
			 uint64_t len)
{
	uint64_t first = pp_proto_first_len(e, p, push, len);
	uint64_t rest = push - first;
	uint64_t cells = pp_pushbuf_cells(first) + (rest / e->maxp) * pp_pushbuf_cells(e->maxp) +
			 pp_pushbuf_cells(rest % e->maxp);
	return cells > UINT16_MAX ? UINT16_MAX : (uint32_t)cells;
}

void pp_proto_credit_spend(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_send_rec *s)
{
	if (!e->c.credits || !s->push_end)
		return;
	uint32_t need = cells_of(e, p, s->push_end, s->len);
	uint16_t avail = (uint16_t)(p->credit_limit - p->credit_used);
	if (need > avail || need > CREDIT_SHARE_MAX) {
		s->push_end = 0; /* degrade to Push-Zero */
		s->end_off = 0;
		e->st.push_degraded++;
	} else {
		p->credit_used = (uint16_t)(p->credit_used + need);
	}
}
