/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's intranode additions (engine.h, "Intranode peers"): local peers,
 * direct copies in place of pulled DATA, and DONE PULLs.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine_impl.h"

int pp_proto_peer_local(struct pp_proto *e, uint32_t rank, uint32_t btp1, uint32_t btp2)
{
	if (!e || rank >= e->c.nranks || rank == e->c.rank || !e->peers[rank].present)
		return -EINVAL;
	struct peer *p = &e->peers[rank];
	if (!p->doneq) {
		/* Each owed DONE is a send of the peer: it has max_msgs at most. */
		uint32_t n = 1;
		while (n < 2 * e->c.max_msgs)
			n <<= 1;
		p->doneq = calloc(n, sizeof(*p->doneq));
		if (!p->doneq)
			return -ENOMEM;
		p->done_mask = n - 1;
	}
	p->local = 1;
	p->direct = e->c.direct != NULL;
	p->btp1 = btp1;
	p->btp2 = btp2;
	return 0;
}

int pp_proto_peer_busy(const struct pp_proto *e, uint32_t rank)
{
	if (rank >= e->c.nranks || !e->peers[rank].present)
		return 0;
	const struct peer *p = &e->peers[rank];
	if (!list_empty(&p->sends) || p->snd_una != p->snd_nxt)
		return 1;
	for (const struct link *l = p->arrived.next; l != &p->arrived; l = l->next) {
		const struct rx *r = container_of(l, struct rx, by_peer);
		if (r->state == RX_ACTIVE || r->got < r->msg_len)
			return 1;
	}
	return 0;
}

void pp_proto_direct_step(struct pp_proto *e, uint32_t rank, struct peer *p)
{
	if (list_empty(&p->directq))
		return;
	struct rx *r = container_of(p->directq.next, struct rx, pq);
	if (r->got < r->direct_from)
		return; /* pushed bytes still on their way */
	if (r->msg_len - r->got < e->c.direct_min) {
		list_del(&r->pq); /* too little for a copy call: DATA frames */
		list_add_tail(&p->pullq, &r->pq);
		return;
	}
	if (p->done_tail - p->done_head > p->done_mask)
		return; /* no room to owe another DONE yet */
	uint64_t end =
	    r->msg_len - r->got > e->c.direct_chunk ? r->got + e->c.direct_chunk : r->msg_len;
	uint64_t to = end < r->cap ? end : r->cap; /* truncated: the rest is not copied */
	if (to > r->got) {
		int rc = e->c.direct(e->c.hook_arg, rank, r->msg_id, r->got, r->buf + r->got,
				     to - r->got);
		if (rc) {
			/* Pull what is left as DATA frames instead. */
			list_del(&r->pq);
			list_add_tail(&p->pullq, &r->pq);
			return;
		}
		e->st.copies_avoided += to - r->got;
	}
	e->st.bytes_rx += end - r->got;
	r->got = end;
	if (r->got < r->msg_len)
		return;
	struct done *d = &p->doneq[p->done_tail++ & p->done_mask];
	d->msg_id = r->msg_id;
	d->msg_len = r->msg_len;
	pp_proto_rx_finish(e, r, 0);
}

int pp_proto_done_desc(struct pp_proto *e, struct peer *p, struct desc *d)
{
	if (p->done_head == p->done_tail)
		return 0;
	const struct done *x = &p->doneq[p->done_head++ & p->done_mask];
	d->type = PP_WIRE_PULL;
	d->flags = PP_WIRE_F_DONE;
	d->len = 0;
	d->obj = NULL;
	d->offset = x->msg_len;
	d->msg_id = x->msg_id;
	e->st.pulls_tx++;
	return 1;
}

int pp_proto_pull_local(struct pp_proto *e, struct peer *p, struct send *s,
			const struct pp_wire_hdr *h)
{
	if (h->flags & PP_WIRE_F_DONE) {
		if (h->offset != s->len) {
			e->st.drops[PP_DROP_STATE]++;
			return 1;
		}
		s->next_off = s->end_off = s->len;
		s->gen_done = 1;
		if (s->queued) {
			list_del(&s->q);
			s->queued = 0;
		}
		e->st.pulls_served++;
		if (s->unacked == 0)
			pp_proto_send_finish(e, s, 0);
		return 1;
	}
	/* The receiver copied part before its direct copy failed. */
	if (p->local && h->offset > s->next_off && h->offset < s->len && s->next_off >= s->push_end)
		s->next_off = h->offset;
	return 0;
}
