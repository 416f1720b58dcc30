/* SPDX-License-Identifier: BSD-3-Clause */
/* What goes out: frames sent again first, owed NACKs and the ACKs of extra
 * streams, new frames while the window is open, owed ACKs; and the timers
 * (pp_proto_output*, pp_proto_expiry). */
#include <errno.h>
#include <string.h>

#include "engine_impl.h"

void pp_proto_hdr_common(const struct pp_proto *e, const struct pp_proto_peer *p, uint32_t rank,
			 struct pp_wire_hdr *h)
{
	h->job = e->c.job;
	h->stream = e->c.stream;
	h->ack_stream = p->rx_stream;
	h->ack = p->rx[0].rcv_nxt;
	h->credit = p->credit_adv;
	h->src_rank = e->c.rank;
	h->dst_rank = rank;
	h->src_inc = e->c.inc;
	h->dst_inc = p->inc;
}

/* Encode the frame of descriptor d with sequence seq. */
/* A whole frame: the wire's for a link, the local form for an intranode ring. */
static int encode(const struct pp_proto *e, uint8_t *buf, size_t cap, const struct pp_proto_peer *p,
		  const struct pp_wire_hdr *h, const void *pl)
{
	if (e->local_out)
		return pp_wire_encode_local(buf, cap, h, pl);
	return pp_wire_encode(buf, cap, p->mac, e->c.mac, h, pl);
}

static int emit_desc(struct pp_proto *e, struct pp_proto_peer *p, uint32_t rank,
		     const struct pp_proto_desc *d, uint32_t seq, uint8_t extra, uint8_t *buf,
		     size_t cap)
{
	struct pp_wire_hdr h;
	const void *pl = NULL;
	memset(&h, 0, sizeof(h));
	pp_proto_hdr_common(e, p, rank, &h);
	h.type = d->type;
	h.flags = d->flags | extra;
	h.seq = seq;
	h.offset = d->offset;
	if (d->type == PP_WIRE_PING) {
		/* no message fields */
	} else if (d->type == PP_WIRE_PULL && !d->obj) { /* DONE: the receive is gone */
		h.msg_id = d->msg_id;
		h.msg_len = d->offset;
	} else if (d->type == PP_WIRE_PULL) {
		const struct pp_proto_recv_rec *r = d->obj;
		if ((r->state == RX_ACTIVE || r->state == RX_UNEXPECTED) && r->peer == rank &&
		    r->msg_id == d->msg_id) {
			h.msg_id = r->msg_id;
			h.tag = r->tag;
			h.msg_len = r->msg_len;
		} else {
			/* Sent again after its receive ended (DATA on a pull
			 * handler's stream can finish it before this is acked)
			 * and its record went to another message: a PULL for
			 * nothing, which the sender drops. */
			h.msg_id = d->msg_id;
			h.msg_len = d->offset;
		}
	} else {
		const struct pp_proto_send_rec *s = d->obj;
		h.msg_id = s->msg_id;
		h.tag = s->tag;
		h.msg_len = s->len;
		h.payload_len = d->len;
		if ((h.flags & PP_WIRE_F_FIRST) && s->has_data) {
			h.xflags = PP_WIRE_XF_DATA;
			h.data = s->data;
		}
		/* The peer's rx_msg_next once it takes this (in sequence
		 * order, as it goes now): what a lite record's number is. */
		if ((h.flags & PP_WIRE_F_FIRST) && d->type == PP_WIRE_PUSH &&
		    !(extra & PP_WIRE_F_RETX))
			p->id_told = s->msg_id + 1;
		pl = s->buf + d->offset;
		e->st.bytes_tx += d->len;
		/* By reference: never the FIRST frame, so whatever the caller
		 * must do to a buffer before the port may read it happens
		 * once the first push is on the wire (address translation
		 * masking, the paper's section 4.3). */
		if (e->ref_out && d->len >= e->ref_min && !(h.flags & PP_WIRE_F_FIRST)) {
			pp_gbn_rx_acked(&p->rx[0]);
			e->ref_out->addr = pl;
			e->ref_out->len = d->len;
			e->ref_out->msg = s->buf;
			e->ref_out->msg_len = s->len;
			return pp_wire_encode_hdr(buf, cap, p->mac, e->c.mac, &h, pl);
		}
	}
	pp_gbn_rx_acked(&p->rx[0]); /* the frame carries the ack */
	return encode(e, buf, cap, p, &h, pl);
}

static int emit_ctl(struct pp_proto *e, struct pp_proto_peer *p, uint32_t rank, uint8_t type,
		    uint8_t *buf, size_t cap)
{
	struct pp_wire_hdr h;
	memset(&h, 0, sizeof(h));
	pp_proto_hdr_common(e, p, rank, &h);
	h.type = type;
	h.seq = p->rx[0].rcv_nxt;
	pp_gbn_rx_acked(&p->rx[0]);
	return encode(e, buf, cap, p, &h, NULL);
}

/* The ACK or NACK an extra stream owes, if any is due: its ack_stream is
 * that stream, so the peer's own ack state is left alone. */
static int emit_xctl(struct pp_proto *e, struct pp_proto_peer *p, uint32_t rank, uint8_t *buf,
		     size_t cap, uint64_t now)
{
	for (uint32_t i = 1; i < PP_PROTO_STREAMS; i++) {
		if (!(p->xowe & (1u << i)))
			continue;
		struct pp_gbn_rx *x = &p->rx[i];
		uint8_t type = 0;
		if (pp_gbn_rx_nack_due(x)) {
			type = PP_WIRE_NACK;
			e->st.nacks_tx++;
		} else if (pp_gbn_rx_ack_due(x, now)) {
			type = PP_WIRE_ACK;
			e->st.acks_tx++;
		}
		if (!pp_gbn_rx_owes(x) || type)
			p->xowe &= ~(1u << i);
		if (!type)
			continue;
		pp_gbn_rx_acked(x);
		if (pp_gbn_rx_owes(x))
			p->xowe |= 1u << i;
		struct pp_wire_hdr h;
		memset(&h, 0, sizeof(h));
		pp_proto_hdr_common(e, p, rank, &h);
		h.type = type;
		h.ack_stream = (uint16_t)i;
		h.ack = x->rcv_nxt;
		h.seq = x->rcv_nxt;
		return pp_wire_encode(buf, cap, p->mac, e->c.mac, &h, NULL);
	}
	return 0;
}

/* 1 when peer_output would find nothing to send to p and change nothing,
 * asked before calling it: a node-mate's link asks after every message,
 * and lite messages (rule 6) leave a peer so. */
static inline int peer_quiet(const struct pp_proto_peer *p)
{
	uint32_t seq;
	return !pp_gbn_tx_resend_due(&p->tx, &seq) && !pp_gbn_rx_owes(&p->rx[0]) && !p->xowe &&
	       list_empty(&p->directq) && p->done_head == p->done_tail && !p->ping_owed &&
	       list_empty(&p->pullq) && list_empty(&p->txq) && !p->await_pull;
}

static int peer_output(struct pp_proto *e, uint32_t rank, uint8_t *buf, size_t cap, uint64_t now)
{
	struct pp_proto_peer *p = &e->peers[rank];
	uint32_t seq;
	if (pp_gbn_tx_resend(&p->tx, now, &seq)) {
		e->st.retransmits++;
		return emit_desc(e, p, rank, &p->ring[seq & e->wmask], seq, PP_WIRE_F_RETX, buf,
				 cap);
	}
	if (pp_gbn_rx_nack_due(&p->rx[0])) {
		e->st.nacks_tx++;
		return emit_ctl(e, p, rank, PP_WIRE_NACK, buf, cap);
	}
	if (p->xowe) {
		int len = emit_xctl(e, p, rank, buf, cap, now);
		if (len)
			return len;
	}
	if (p->direct)
		pp_proto_direct_step(e, rank, p);
	int open = pp_gbn_tx_open(&p->tx, e->c.window);
	int done = p->done_head != p->done_tail;
	if (open && (done || p->ping_owed || !list_empty(&p->pullq) || !list_empty(&p->txq))) {
		struct pp_proto_desc *d = &p->ring[pp_gbn_tx_next(&p->tx) & e->wmask];
		if (done) {
			pp_proto_done_desc(e, p, d);
		} else if (p->ping_owed) {
			p->ping_owed = 0;
			d->type = PP_WIRE_PING;
			d->flags = 0;
			d->len = 0;
			d->obj = NULL;
			d->offset = 0;
		} else if (!list_empty(&p->pullq)) {
			struct pp_proto_recv_rec *r =
			    container_of(p->pullq.next, struct pp_proto_recv_rec, pq);
			list_del(&r->pq);
			r->pull_queued = 0;
			d->type = PP_WIRE_PULL;
			d->flags = r->rewind ? PP_WIRE_F_AGAIN : 0;
			d->len = 0;
			d->obj = r;
			d->offset = r->got;
			d->msg_id = r->msg_id;
			e->st.pulls_tx++;
			if (e->c.hooks.place_post && !p->local && !r->placed &&
			    r->state == RX_ACTIVE && r->cap)
				r->placed =
				    HOOK(e, place_post, r->peer, p->inc, r->msg_id, r->buf,
					 r->cap < r->msg_len ? r->cap : r->msg_len, r->got) == 0;
		} else {
			struct pp_proto_send_rec *s =
			    container_of(p->txq.next, struct pp_proto_send_rec, q);
			pp_proto_send_frame(e, p, s, d);
			if ((d->flags & PP_WIRE_F_PULL) && e->c.btp_fit)
				s->first_t = now; /* the PULL's round trip (path.h) */
			if (s->next_off == s->end_off && s->end_off < s->len && !s->served &&
			    !s->await_pull) {
				s->await_pull = 1; /* pushes out, the PULL not in */
				p->await_pull++;
			}
		}
		return emit_desc(e, p, rank, d, pp_gbn_tx_send(&p->tx, now), 0, buf, cap);
	}
	if (pp_gbn_rx_ack_due(&p->rx[0], now)) {
		e->st.acks_tx++;
		return emit_ctl(e, p, rank, PP_WIRE_ACK, buf, cap);
	}
	if (p->await_pull && !p->starved_t && list_empty(&p->txq))
		p->starved_t = now; /* idle until a PULL comes (pull_wait_ns) */
	return 0;
}

int pp_proto_output(struct pp_proto *e, uint8_t *buf, size_t cap, uint64_t now)
{
	if (cap < pp_eth_frame_max(e->c.mtu))
		return -ENOSPC;
	uint32_t n = e->c.nranks;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t rank = (e->rr + i) % n;
		struct pp_proto_peer *p = &e->peers[rank];
		if (!p->present || p->lost || p->local || peer_quiet(p))
			continue;
		int len = peer_output(e, rank, buf, cap, now);
		if (len > 0) {
			e->rr = (rank + 1) % n;
			e->st.frames_tx++;
			return len;
		}
	}
	return 0;
}

int pp_proto_output_ref(struct pp_proto *e, uint8_t *buf, size_t cap, uint64_t now,
			uint32_t ref_min, struct pp_proto_ref *ref)
{
	ref->len = 0;
	e->ref_out = ref;
	e->ref_min = ref_min;
	int n = pp_proto_output(e, buf, cap, now);
	e->ref_out = NULL;
	return n;
}

int pp_proto_output_local(struct pp_proto *e, uint32_t rank, uint8_t *buf, size_t cap, uint64_t now)
{
	if (rank >= e->c.nranks || !e->peers[rank].local)
		return -EINVAL;
	if (cap < pp_eth_frame_max(e->c.mtu))
		return -ENOSPC;
	if (e->peers[rank].lost || peer_quiet(&e->peers[rank]))
		return 0;
	e->local_out = 1;
	int len = peer_output(e, rank, buf, cap, now);
	e->local_out = 0;
	if (len > 0)
		e->st.frames_tx++;
	else
		e->local_due = 1; /* something waits: a deadline, the window */
	return len;
}

int pp_proto_local_take(struct pp_proto *e)
{
	int due = e->local_due;
	e->local_due = 0;
	return due;
}

void pp_proto_local_kick(struct pp_proto *e)
{
	e->local_due = 1;
}

int pp_proto_local_pending(const struct pp_proto *e)
{
	return e->local_due;
}

/* ---- timers ---- */

uint64_t pp_proto_expiry(const struct pp_proto *e)
{
	uint64_t t = UINT64_MAX;
	for (uint32_t r = 0; r < e->c.nranks; r++) {
		const struct pp_proto_peer *p = &e->peers[r];
		if (!p->present || p->lost)
			continue;
		uint64_t x = pp_gbn_tx_expiry(&p->tx);
		if (x < t)
			t = x;
		for (unsigned m = p->xowe | 1u; m; m &= m - 1) { /* as pp_proto_handle_expiry */
			x = pp_gbn_rx_expiry(&p->rx[__builtin_ctz(m)]);
			if (x < t)
				t = x;
		}
	}
	return t;
}

void pp_proto_handle_expiry(struct pp_proto *e, uint64_t now)
{
	e->local_due = 1;
	for (uint32_t r = 0; r < e->c.nranks; r++) {
		struct pp_proto_peer *p = &e->peers[r];
		if (!p->present || p->lost)
			continue;
		for (unsigned m = p->xowe | 1u; m; m &= m - 1) /* stream 0, and extras owing */
			pp_gbn_rx_timer(&p->rx[__builtin_ctz(m)], now);
		if (pp_gbn_tx_timer(&p->tx, now, e->c.rto_tries) == PP_GBN_LOST)
			pp_proto_peer_lose(e, r);
	}
}
