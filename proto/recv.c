/* SPDX-License-Identifier: BSD-3-Clause */
/* A message's receiving side (docs/protocol.md, rules 2 and 7): pushed and
 * pulled bytes taken into the user buffer, the pushed buffer or staging,
 * PULLs queued, receives finished. */
#include <errno.h>
#include <string.h>

#include "engine_impl.h"

static struct pp_proto_recv_rec *find_arrived(struct pp_proto_peer *p, uint32_t msg_id)
{
	for (struct pp_link *l = p->arrived.next; l != &p->arrived; l = l->next) {
		struct pp_proto_recv_rec *r = container_of(l, struct pp_proto_recv_rec, by_peer);
		if (r->msg_id == msg_id)
			return r;
	}
	return NULL;
}

/* Bytes of r at off; pl NULL: the layer below wrote them there already. */
static void place(struct pp_proto *e, struct pp_proto_recv_rec *r, uint64_t off, const uint8_t *pl,
		  uint32_t n)
{
	if (off < r->cap && pl) {
		uint64_t k = r->cap - off < n ? r->cap - off : n;
		memcpy(r->buf + off, pl, (size_t)k);
		e->st.copies_avoided += k;
	}
	r->got += n;
}

enum take pp_proto_push_in(struct pp_proto *e, struct pp_proto_peer *p, uint32_t src,
			   const struct pp_wire_hdr *h, const uint8_t *pl)
{
	struct pp_proto_recv_rec *r;
	if (h->flags & PP_WIRE_F_FIRST) {
		r = pp_proto_match_first(e, src, h->tag);
		if (r) {
			e->st.early_matches++;
		} else if (h->flags & PP_WIRE_F_WRITTEN) {
			e->st.drops[PP_DROP_STATE]++; /* written for no receive of ours */
			return TAKEN;
		} else {
			if (!e->rx_pool && pp_proto_rx_grow(e))
				return REFUSED_STATE;
			void *blk = e->staging ? pp_proto_stage_ask(e, src, h) : NULL;
			if (!e->staging && h->payload_len &&
			    e->pb.nfree < pp_pushbuf_cells(h->payload_len))
				return REFUSED_NOBUF;
			r = pp_proto_rx_take(e);
			pp_pushbuf_chain_init(&r->cells);
			r->stage = blk;
			r->state = RX_UNEXPECTED;
			r->m.src = (int32_t)src;
			r->m.tag = h->tag;
			r->m.ignore = 0;
			pp_tagq_add(&e->unexpected, &r->m);
		}
		r->peer = src;
		r->tag = h->tag;
		r->has_data = (h->xflags & PP_WIRE_XF_DATA) != 0;
		r->data = r->has_data ? h->data : 0;
		r->msg_id = h->msg_id;
		r->msg_len = h->msg_len;
		r->got = 0;
		r->wants_pull = (h->flags & PP_WIRE_F_PULL) != 0;
		list_add_tail(&p->arrived, &r->by_peer);
		if (r->state == RX_ACTIVE && pp_proto_rq_match(e, r, h))
			return TAKEN; /* the sender wrote it all: finished */
	} else {
		r = find_arrived(p, h->msg_id);
		if (r && !pl && r->state != RX_ACTIVE)
			return REFUSED_STATE; /* placed, yet not matched: send it whole */
		if (!r || r->msg_len != h->msg_len || h->offset != r->got - r->xgot ||
		    (h->type == PP_WIRE_DATA && r->state != RX_ACTIVE && !r->stage)) {
			if (h->type == PP_WIRE_PUSH) /* the sender counted its cells */
				pp_proto_credit_return(p, pp_pushbuf_cells(h->payload_len), 0);
			e->st.drops[PP_DROP_STATE]++;
			return TAKEN; /* in sequence, but fits nothing */
		}
	}
	uint32_t cells = pp_pushbuf_cells(h->payload_len);
	enum evict_result evicted = EVICT_NONE;
	if (r->state == RX_UNEXPECTED && (r->stage || r->evicted)) {
		pp_proto_stage_input(e, p, r, h, pl);
	} else if (r->state == RX_UNEXPECTED) {
		if (pp_pushbuf_append(&e->pb, &r->cells, pl, h->payload_len) &&
		    (!e->staging || (evicted = pp_proto_stage_evict(e, cells, r)) == EVICT_NONE ||
		     (evicted == EVICT_ROOM &&
		      pp_pushbuf_append(&e->pb, &r->cells, pl, h->payload_len)))) {
			if (h->flags & PP_WIRE_F_FIRST)
				pp_proto_rx_free(e, r);
			return REFUSED_NOBUF;
		}
		if (evicted == EVICT_SELF)
			pp_proto_stage_input(e, p, r, h, pl);
		else
			r->got += h->payload_len;
	} else {
		place(e, r, h->offset, pl, h->payload_len);
		if (h->type == PP_WIRE_PUSH)
			pp_proto_credit_return(p, cells, 0);
	}
	e->st.bytes_rx += h->payload_len;
	if (r->state == RX_ACTIVE) {
		if (r->got == r->msg_len)
			pp_proto_rx_finish(e, r, 0);
		else
			pp_proto_queue_pull(p, r);
	}
	return TAKEN;
}

enum take pp_proto_xdata_in(struct pp_proto *e, struct pp_proto_peer *p,
			    const struct pp_wire_hdr *h, const uint8_t *pl)
{
	struct pp_proto_recv_rec *r = find_arrived(p, h->msg_id);
	uint64_t end = h->offset + h->payload_len;
	if (r && !pl && r->state != RX_ACTIVE)
		return REFUSED_STATE; /* placed, yet not matched: send it whole */
	if (!r || r->msg_len != h->msg_len || end > r->msg_len ||
	    (r->state != RX_ACTIVE && !r->stage) || (r->xnext && h->offset != r->xnext)) {
		e->st.drops[PP_DROP_STATE]++;
		return TAKEN; /* in sequence, but fits nothing */
	}
	if (r->state == RX_ACTIVE) {
		place(e, r, h->offset, pl, h->payload_len);
	} else {
		/* Staged: matching moves the first got bytes, so only in order. */
		if (h->offset != r->got)
			return REFUSED_STATE;
		pp_proto_stage_input(e, p, r, h, pl);
	}
	r->xnext = end;
	r->xgot += h->payload_len;
	e->st.bytes_rx += h->payload_len;
	if (r->state == RX_ACTIVE && r->got == r->msg_len)
		pp_proto_rx_finish(e, r, 0);
	return TAKEN;
}

void pp_proto_queue_pull(struct pp_proto_peer *p, struct pp_proto_recv_rec *r)
{
	if (r->wants_pull && !r->pull_queued && r->got < r->msg_len) {
		r->pull_queued = 1;
		r->wants_pull = 0;
		if (p->direct) {
			/* Nothing pushed means Push-Zero (or no credit): else the
			 * peer pushes [0, min(L, BTP1 + BTP2)) before we copy. */
			uint64_t push = (uint64_t)p->btp1 + p->btp2;
			r->direct_from = r->got == 0 ? 0 : push < r->msg_len ? push : r->msg_len;
			list_add_tail(&p->directq, &r->pq);
			return;
		}
		list_add_tail(&p->pullq, &r->pq);
	}
}

/* Take back r's placement description: the layer below writes nothing
 * more into r->buf once this returns. */
void pp_proto_place_take(struct pp_proto *e, struct pp_proto_recv_rec *r)
{
	if (r->placed) {
		r->placed = 0;
		HOOK(e, place_cancel, r->peer, r->msg_id);
	}
}

void pp_proto_rx_free(struct pp_proto *e, struct pp_proto_recv_rec *r)
{
	pp_proto_place_take(e, r);
	if (r->help_pos) { /* an offer not settled (its peer lost): withdrawn if it can be */
		HOOK(e, help_settle, r->peer, r->help_pos - 1);
		r->help_pos = 0;
	}
	if (r->state == RX_POSTED && r->rq_slot)
		pp_proto_rq_withdraw(e, r);
	if (r->state == RX_UNEXPECTED)
		pp_tagq_del(&e->unexpected, &r->m);
	else if (r->state == RX_POSTED)
		pp_tagq_del(&e->posted, &r->m);
	if (r->state == RX_UNEXPECTED || r->state == RX_ACTIVE)
		list_del(&r->by_peer);
	if (r->pull_queued) {
		list_del(&r->pq);
		r->pull_queued = 0;
	}
	if (r->stage)
		pp_proto_stage_release(e, r);
	pp_proto_rx_put(e, r);
}

void pp_proto_rx_finish(struct pp_proto *e, struct pp_proto_recv_rec *r, int error)
{
	if (!error && r->msg_len > r->cap)
		error = -EMSGSIZE;
	pp_proto_place_take(e, r); /* before the user may reuse the buffer */
	struct pp_proto_cpl *c =
	    pp_proto_complete(e, r->cookie, 0, r->peer, r->tag, r->msg_len, error);
	c->data = r->data;
	c->has_data = r->has_data;
	c->post = r->post;
	if (!error || error == -EMSGSIZE)
		e->st.msgs_rx++;
	pp_proto_rx_free(e, r);
}
