/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's receive path: pp_proto_input and what a frame does. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"

/* ---- receive path ---- */

static int rx_matches(const struct rx *posted, uint32_t src, uint32_t tag)
{
	return pp_proto_match(posted->want_src, posted->want_tag, src, tag);
}

/* A cumulative ack on our stream: the frames it acknowledges release their
 * sends (go-back-N decides which, gbn.h). */
static void ack_release(struct pp_proto *e, struct peer *p, uint32_t ack, uint64_t now)
{
	for (uint32_t n = pp_gbn_tx_ack(&p->tx, ack, now), seq = ack - n; seq != ack; seq++) {
		struct desc *d = &p->ring[seq & e->wmask];
		if (d->type == PP_WIRE_PULL || d->type == PP_WIRE_PING)
			continue;
		struct send *s = d->obj;
		if (--s->unacked == 0 && s->gen_done)
			pp_proto_send_finish(e, s, s->error);
	}
}

static struct rx *find_arrived(struct peer *p, uint32_t msg_id)
{
	for (struct link *l = p->arrived.next; l != &p->arrived; l = l->next) {
		struct rx *r = container_of(l, struct rx, by_peer);
		if (r->msg_id == msg_id)
			return r;
	}
	return NULL;
}

/* Bytes of r at off; pl NULL: the layer below wrote them there already. */
static void place(struct pp_proto *e, struct rx *r, uint64_t off, const uint8_t *pl, uint32_t n)
{
	if (off < r->cap && pl) {
		uint64_t k = r->cap - off < n ? r->cap - off : n;
		memcpy(r->buf + off, pl, (size_t)k);
		e->st.copies_avoided += k;
	}
	r->got += n;
}

/* A sequenced frame at rcv_nxt. Returns 0 when accepted, or the drop reason
 * + 1 when it must not be (it will be sent again). */
static int rx_push(struct pp_proto *e, struct peer *p, uint32_t src, const struct pp_wire_hdr *h,
		   const uint8_t *pl)
{
	struct rx *r;
	if (h->flags & PP_WIRE_F_FIRST) {
		r = NULL;
		for (struct link *l = e->posted.next; l != &e->posted; l = l->next) {
			struct rx *x = container_of(l, struct rx, q);
			if (rx_matches(x, src, h->tag)) {
				r = x;
				break;
			}
		}
		if (r) {
			list_del(&r->q);
			r->state = RX_ACTIVE;
			e->st.early_matches++;
		} else if (h->flags & PP_WIRE_F_WRITTEN) {
			e->st.drops[PP_DROP_STATE]++; /* written for no receive of ours */
			return 0;
		} else {
			if (list_empty(&e->pp_proto_rx_free))
				return PP_DROP_STATE + 1;
			void *blk = e->staging ? pp_proto_stage_ask(e, src, h) : NULL;
			if (!e->staging && h->payload_len &&
			    e->pb.nfree < pp_pushbuf_cells(h->payload_len))
				return PP_DROP_NOBUF + 1;
			r = container_of(e->pp_proto_rx_free.next, struct rx, q);
			list_del(&r->q);
			memset(r, 0, sizeof(*r));
			pp_pushbuf_chain_init(&r->cells);
			r->stage = blk;
			r->state = RX_UNEXPECTED;
			list_add_tail(&e->unexpected, &r->q);
		}
		r->peer = src;
		r->tag = h->tag;
		r->msg_id = h->msg_id;
		r->msg_len = h->msg_len;
		r->got = 0;
		r->wants_pull = (h->flags & PP_WIRE_F_PULL) != 0;
		list_add_tail(&p->arrived, &r->by_peer);
		if (r->state == RX_ACTIVE && pp_proto_rq_match(e, r, h))
			return 0; /* the sender wrote it all: finished */
	} else {
		r = find_arrived(p, h->msg_id);
		if (r && !pl && r->state != RX_ACTIVE)
			return PP_DROP_STATE + 1; /* placed, yet not matched: send it whole */
		if (!r || r->msg_len != h->msg_len || h->offset != r->got - r->xgot ||
		    (h->type == PP_WIRE_DATA && r->state != RX_ACTIVE && !r->stage)) {
			if (h->type == PP_WIRE_PUSH) /* the sender counted its cells */
				pp_proto_credit_return(p, pp_pushbuf_cells(h->payload_len), 0);
			e->st.drops[PP_DROP_STATE]++;
			return 0; /* accepted in sequence, fits nothing */
		}
	}
	uint32_t cells = pp_pushbuf_cells(h->payload_len);
	int evicted = 0; /* 1: room made by eviction, 2: this message gave its bytes up */
	if (r->state == RX_UNEXPECTED && (r->stage || r->evicted)) {
		pp_proto_stage_input(e, p, r, h, pl);
	} else if (r->state == RX_UNEXPECTED) {
		if (pp_pushbuf_append(&e->pb, &r->cells, pl, h->payload_len) &&
		    (!e->staging || !(evicted = pp_proto_stage_evict(e, cells, r)) ||
		     (evicted == 1 && pp_pushbuf_append(&e->pb, &r->cells, pl, h->payload_len)))) {
			if (h->flags & PP_WIRE_F_FIRST)
				pp_proto_rx_free(e, r);
			return PP_DROP_NOBUF + 1;
		}
		if (evicted == 2)
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
	return 0;
}

static void rx_pull(struct pp_proto *e, struct peer *p, const struct pp_wire_hdr *h)
{
	for (struct link *l = p->sends.next; l != &p->sends; l = l->next) {
		struct send *s = container_of(l, struct send, all);
		if (s->msg_id != h->msg_id)
			continue;
		/* A PULL again (its ack was lost) asks for nothing new. */
		if (s->len != h->msg_len || s->end_off == s->len || s->served || s->below) {
			e->st.drops[PP_DROP_STATE]++;
			return;
		}
		if (pp_proto_pull_local(e, p, s, h))
			return;
		if (s->handed) {
			/* The layer below decides once, seeing this PULL too. */
			s->handed = 0;
			if (!(h->flags & PP_WIRE_F_AGAIN) &&
			    e->c.handoff_claim(e->c.hook_arg, s->peer, s->msg_id)) {
				/* The rest is the layer below's; pushes still
				 * waiting for the window are still ours. */
				s->served = 1;
				return;
			}
			if (h->flags & PP_WIRE_F_AGAIN) /* it may still hold it */
				e->c.handoff_cancel(e->c.hook_arg, s->peer, s->msg_id);
		}
		/* The receiver gave the pushed bytes up: send them again as DATA. */
		if ((h->flags & PP_WIRE_F_AGAIN) && h->offset < s->next_off) {
			s->next_off = h->offset;
			if (s->push_end > h->offset)
				s->push_end = h->offset;
		}
		s->end_off = s->len;
		e->st.pulls_served++;
		if (!s->queued) {
			s->queued = 1;
			list_add_tail(&p->txq, &s->q);
		}
		return;
	}
	e->st.drops[PP_DROP_STATE]++;
}

/* DATA on an extra stream, at its rcv_nxt. Returns 0 when accepted, or the
 * drop reason + 1 when it must not be (it comes again). */
static int x_data(struct pp_proto *e, struct peer *p, const struct pp_wire_hdr *h,
		  const uint8_t *pl)
{
	struct rx *r = find_arrived(p, h->msg_id);
	uint64_t end = h->offset + h->payload_len;
	if (r && !pl && r->state != RX_ACTIVE)
		return PP_DROP_STATE + 1; /* placed, yet not matched: send it whole */
	if (!r || r->msg_len != h->msg_len || end > r->msg_len ||
	    (r->state != RX_ACTIVE && !r->stage) || (r->xnext && h->offset != r->xnext)) {
		e->st.drops[PP_DROP_STATE]++;
		return 0; /* accepted in sequence, fits nothing */
	}
	if (r->state == RX_ACTIVE) {
		place(e, r, h->offset, pl, h->payload_len);
	} else {
		/* Staged: matching moves the first got bytes, so only in order. */
		if (h->offset != r->got)
			return PP_DROP_STATE + 1;
		pp_proto_stage_input(e, p, r, h, pl);
	}
	r->xnext = end;
	r->xgot += h->payload_len;
	e->st.bytes_rx += h->payload_len;
	if (r->state == RX_ACTIVE && r->got == r->msg_len)
		pp_proto_rx_finish(e, r, 0);
	return 0;
}

/* A frame on extra stream h->stream (a pull handler's): only DATA, which is
 * sequenced and acked on that stream alone. */
static int x_input(struct pp_proto *e, struct peer *p, const struct pp_wire_hdr *h,
		   const uint8_t *pl, uint64_t now)
{
	struct pp_gbn_rx *x = &p->rx[h->stream];
	if (h->type != PP_WIRE_DATA) {
		e->st.drops[PP_DROP_STATE]++;
		return -EPROTO;
	}
	p->xowe |= 1u << h->stream;
	if (pp_gbn_rx_check(x, h->seq) != PP_GBN_NEXT) {
		e->st.drops[PP_DROP_DUP]++;
		return -EPROTO;
	}
	int rc = x_data(e, p, h, pl);
	if (rc) {
		e->st.drops[rc - 1]++;
		pp_gbn_rx_refuse(x); /* alive; the frame comes again */
		return -EPROTO;
	}
	pp_gbn_rx_take(x, now, e->c.ack_delay_ns, e->c.ack_every, h->flags & PP_WIRE_F_LAST);
	return 0;
}

enum input_form {
	FORM_WIRE = 0, /* a whole wire frame */
	FORM_LOCAL,    /* an intranode frame */
	FORM_PLACED,   /* a DATA frame's headers, its payload placed already */
};

/* from: the only source a local frame may have (its ring's), else unused. */
static int input(struct pp_proto *e, const uint8_t *frame, size_t len, uint64_t now,
		 enum input_form form, uint32_t from)
{
	struct pp_wire_hdr h;
	const uint8_t *pl = NULL;
	enum pp_drop_reason why;
	struct pp_wire_check chk = {e->c.job, e->c.rank, e->c.nranks, e->c.mtu, e->c.inc};
	int bad;
	e->st.frames_rx++;
	if (form == FORM_LOCAL)
		bad = pp_wire_decode_local(frame, len, &chk, &h, &pl, &why);
	else if (form == FORM_PLACED)
		bad = pp_wire_decode_placed(frame, len, &chk, &h, &why);
	else
		bad = pp_wire_decode(frame, len, &chk, &h, &pl, &why);
	if (bad) {
		e->st.drops[why]++;
		return -EPROTO;
	}
	if (form == FORM_LOCAL && h.src_rank != from) { /* a node-mate speaking for another */
		e->st.drops[PP_DROP_RANK]++;
		return -EPROTO;
	}
	if (h.type == PP_WIRE_HELLO || h.type == PP_WIRE_BYE)
		return 0; /* discovery and goodbye belong to the runtime */
	struct peer *p = &e->peers[h.src_rank];
	if (!p->present || p->lost) {
		e->st.drops[PP_DROP_STATE]++;
		return -EPROTO;
	}
	if (h.src_inc != p->inc) { /* an earlier (or unknown) life of the peer */
		e->st.drops[PP_DROP_STALE]++;
		return -EPROTO;
	}
	if (h.stream >= 1 && h.stream < PP_PROTO_STREAMS)
		return x_input(e, p, &h, pl, now);
	/* Every authentic frame of the peer's own stream carries its ack and
	 * credit. */
	if ((int16_t)(h.credit - p->credit_limit) > 0)
		p->credit_limit = h.credit;
	if (h.ack_stream == e->c.stream)
		ack_release(e, p, h.ack, now);
	switch (h.type) {
	case PP_WIRE_ACK:
		/* A standalone ack shows the peer alive even without progress
		 * (it refused a frame for lack of room): it is not lost. */
		if (h.ack_stream == e->c.stream)
			p->tx.tries = 0;
		return 0;
	case PP_WIRE_NACK:
		if (h.ack_stream == e->c.stream)
			pp_gbn_tx_nack(&p->tx, h.seq);
		return 0;
	default:
		break;
	}
	/* Sequenced: PUSH, PULL, DATA, PING. */
	struct pp_gbn_rx *x = &p->rx[0];
	if (pp_gbn_rx_check(x, h.seq) != PP_GBN_NEXT) {
		e->st.drops[PP_DROP_DUP]++;
		return -EPROTO;
	}
	int rc = 0;
	if (h.type == PP_WIRE_PULL)
		rx_pull(e, p, &h);
	else if (h.type == PP_WIRE_PING)
		x->owe |= PP_GBN_OWE_ACK_NOW; /* the prober waits for this answer */
	else
		rc = rx_push(e, p, h.src_rank, &h, pl);
	p->rx_stream = h.stream;
	if (rc) {
		/* No room now: the frame comes again; say we are alive. */
		e->st.drops[rc - 1]++;
		pp_gbn_rx_refuse(x);
		return -EPROTO;
	}
	if (h.type == PP_WIRE_PUSH && (h.flags & PP_WIRE_F_FIRST))
		p->rx_msg_next = h.msg_id + 1; /* seen: a receive posted now waits for the next */
	/* A frame that ends a message completes the sender's send once acked:
	 * ack it now, not after ack_delay, which a receiver that goes off to
	 * compute would stretch. One burst's LAST frames still share an ACK.
	 * A copied send completed already: its ack can wait for a ride. */
	pp_gbn_rx_take(x, now, e->c.ack_delay_ns, e->c.ack_every,
		       (h.flags & (PP_WIRE_F_LAST | PP_WIRE_F_COPIED)) == PP_WIRE_F_LAST);
	return 0;
}

int pp_proto_input(struct pp_proto *e, const uint8_t *frame, size_t len, uint64_t now)
{
	return input(e, frame, len, now, FORM_WIRE, 0);
}

int pp_proto_input_placed(struct pp_proto *e, const uint8_t *frame, size_t len, uint64_t now)
{
	return input(e, frame, len, now, FORM_PLACED, 0);
}

int pp_proto_input_local(struct pp_proto *e, uint32_t from, const uint8_t *frame, size_t len,
			 uint64_t now)
{
	return input(e, frame, len, now, FORM_LOCAL, from);
}
