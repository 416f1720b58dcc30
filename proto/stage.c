/* SPDX-License-Identifier: BSD-3-Clause */
/* Prediction staging and pushed-buffer eviction (docs/protocol.md,
 * rule 8). */
#include <errno.h>
#include <string.h>

#include "engine_impl.h"

void *pp_proto_stage_ask(struct pp_proto *e, uint32_t src, const struct pp_wire_hdr *h)
{
	/* Intranode the rest moves in one copy straight into the user buffer
	 * once the receive is posted; staging would add a copy. */
	if (!h->msg_len || e->peers[src].local)
		return NULL;
	void *blk = HOOK(e, stage, src, h->tag, h->msg_len);
	if (blk)
		e->st.staged_msgs++;
	return blk;
}

void pp_proto_stage_release(struct pp_proto *e, struct pp_proto_recv_rec *r)
{
	HOOK(e, unstage, r->stage);
	r->stage = NULL;
}

void pp_proto_stage_input(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_recv_rec *r,
			  const struct pp_wire_hdr *h, const uint8_t *pl)
{
	if (r->stage) {
		memcpy(r->stage + h->offset, pl, h->payload_len);
		e->st.bytes_staged += h->payload_len;
		if ((h->flags & PP_WIRE_F_FIRST) && r->wants_pull) {
			/* Speculative pull: the rest comes before the receive. */
			pp_proto_queue_pull(p, r);
			e->st.spec_pulls++;
		}
	}
	/* Staged bytes and thrown-away bytes hold no cell: give them back. */
	if (h->type == PP_WIRE_PUSH)
		pp_proto_credit_return(p, pp_pushbuf_cells(h->payload_len), 0);
	r->got += h->payload_len;
}

/* How far ahead r is expected: its position, INT32_MAX when not at all. */
static int32_t expected_at(struct pp_proto *e, const struct pp_proto_recv_rec *r)
{
	int a = HOOK(e, stage_ahead, r->peer, r->tag);
	return a < 0 ? INT32_MAX : a;
}

/* An unexpected message may give its pushed bytes up when its sender still
 * holds the rest (it waits for a PULL, so it can send everything again). */
static int evictable(const struct pp_proto_recv_rec *r)
{
	return r->state == RX_UNEXPECTED && !r->stage && !r->evicted && r->wants_pull &&
	       !r->pull_queued;
}

static void evict(struct pp_proto *e, struct pp_proto_recv_rec *r)
{
	struct pp_proto_peer *p = &e->peers[r->peer];
	pp_proto_credit_return(p, pp_pushbuf_drain(&e->pb, &r->cells, NULL, 0), 1);
	r->evicted = 1;
	e->st.evictions++;
}

enum evict_result pp_proto_stage_evict(struct pp_proto *e, uint32_t need,
				       struct pp_proto_recv_rec *self)
{
	while (e->pb.nfree < need) {
		struct pp_proto_recv_rec *victim = NULL;
		int32_t far = -1;
		/* Cold path: the pushed buffer is full. Later arrivals win ties. */
		for (struct pp_link *l = e->unexpected.all.next; l != &e->unexpected.all;
		     l = l->next) {
			struct pp_proto_recv_rec *x =
			    container_of(l, struct pp_proto_recv_rec, m.all);
			if (!evictable(x))
				continue;
			int32_t a = expected_at(e, x);
			if (a >= far) {
				far = a;
				victim = x;
			}
		}
		if (!victim)
			return EVICT_NONE;
		evict(e, victim);
		if (victim == self)
			return EVICT_SELF;
	}
	return EVICT_ROOM;
}

void pp_proto_stage_match(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_recv_rec *r)
{
	if (r->evicted) {
		/* Everything comes again, as DATA, straight into the buffer. */
		r->got = 0;
		r->rewind = 1;
		pp_proto_queue_pull(p, r);
		return;
	}
	uint64_t n = r->got < r->cap ? r->got : r->cap;
	uint64_t pages = n ? HOOK(e, stage_place, r->buf, r->stage, n) : 0;
	e->st.pages_remapped += pages;
	e->st.copies_avoided += pages * 4096u;
	pp_proto_stage_release(e, r);
	if (r->got == r->msg_len && !r->wants_pull && !r->pull_queued)
		pp_proto_rx_finish(e, r, 0);
	else
		pp_proto_queue_pull(p, r);
}
