/* SPDX-License-Identifier: BSD-3-Clause */
/* What a received frame does: decode it, check whose it is, run go-back-N
 * on its stream, and hand it to the rule it is for (pp_proto_input*). */
#include <errno.h>

#include "engine_impl.h"

/* A cumulative ack on our stream: the frames it acknowledges release their
 * sends (go-back-N decides which, gbn.h). */
static void ack_release(struct pp_proto *e, struct pp_proto_peer *p, uint32_t ack, uint64_t now)
{
	uint32_t n = pp_gbn_tx_ack(&p->tx, ack, now);
	if (!n)
		return;
	uint64_t bytes = 0;
	for (uint32_t seq = ack - n; seq != ack; seq++) {
		struct pp_proto_desc *d = &p->ring[seq & e->wmask];
		if (d->type == PP_WIRE_PULL || d->type == PP_WIRE_PING)
			continue;
		bytes += d->len;
		struct pp_proto_send_rec *s = d->obj;
		if (--s->unacked == 0 && s->gen_done)
			pp_proto_send_finish(e, s, s->error);
	}
	/* What the path carries (path.h): a node-mate's pushes are sized by
	 * local_whole, not by its path, and its figures are not reported. */
	if (e->c.btp_fit && !p->local) {
		pp_path_rtt(&p->path, now, p->tx.rtt_new);
		pp_path_acked(&p->path, now, bytes, !pp_gbn_tx_busy(&p->tx) && list_empty(&p->txq));
	}
}

static enum pp_drop_reason take_drop(enum take t)
{
	return t == REFUSED_NOBUF ? PP_DROP_NOBUF : PP_DROP_STATE;
}

/* A frame on extra stream h->stream (a pull handler's): only DATA, which is
 * sequenced and acked on that stream alone. */
static int x_input(struct pp_proto *e, struct pp_proto_peer *p, const struct pp_wire_hdr *h,
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
	enum take t = pp_proto_xdata_in(e, p, h, pl);
	if (t != TAKEN) {
		e->st.drops[take_drop(t)]++;
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
	int bad;
	e->st.frames_rx++;
	if (form == FORM_LOCAL)
		bad = pp_wire_decode_local(frame, len, &e->chk, &h, &pl, &why);
	else if (form == FORM_PLACED)
		bad = pp_wire_decode_placed(frame, len, &e->chk, &h, &why);
	else
		bad = pp_wire_decode(frame, len, &e->chk, &h, &pl, &why);
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
	struct pp_proto_peer *p = &e->peers[h.src_rank];
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
	pp_proto_credit_seen(p, h.credit);
	if (h.ack_stream == e->c.stream)
		ack_release(e, p, h.ack, now);
	switch (h.type) {
	case PP_WIRE_ACK:
		/* A standalone ack shows the peer alive even without progress
		 * (it refused a frame for lack of room): it is not lost. */
		if (h.ack_stream == e->c.stream)
			pp_gbn_tx_heard(&p->tx);
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
	enum take t = TAKEN;
	if (h.type == PP_WIRE_PULL)
		pp_proto_pull_in(e, p, &h, now);
	else if (h.type == PP_WIRE_PING)
		pp_gbn_rx_owe_now(x); /* the prober waits for this answer */
	else
		t = pp_proto_push_in(e, p, h.src_rank, &h, pl);
	p->rx_stream = h.stream;
	if (t != TAKEN) {
		/* No room now: the frame comes again; say we are alive. */
		e->st.drops[take_drop(t)]++;
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
	e->local_due = 1;
	return input(e, frame, len, now, FORM_WIRE, 0);
}

int pp_proto_input_placed(struct pp_proto *e, const uint8_t *frame, size_t len, uint64_t now)
{
	e->local_due = 1;
	return input(e, frame, len, now, FORM_PLACED, 0);
}

/* A lite record (rule 6) from the ring of local peer from. */
static int input_lite(struct pp_proto *e, uint32_t from, const uint8_t *rec, size_t len,
		      uint64_t now)
{
	struct pp_wire_lite l;
	const uint8_t *pl;
	enum pp_drop_reason why;
	e->st.frames_rx++;
	if (pp_wire_decode_lite(rec, len, &e->chk, &l, &pl, &why)) {
		e->st.drops[why]++;
		return -EPROTO;
	}
	struct pp_proto_peer *p = &e->peers[from];
	if (!p->present || p->lost) {
		e->st.drops[PP_DROP_STATE]++;
		return -EPROTO;
	}
	/* Ack and credit when the sender had news (cumulative: taking them
	 * again when the record waits costs nothing). */
	if (l.flags & PP_WIRE_LITE_ACK) {
		e->local_due = 1; /* what waited for the ack or the credit may go */
		pp_proto_credit_seen(p, l.credit);
		if (l.ack_stream == e->c.stream && l.ack != p->tx.una)
			ack_release(e, p, l.ack, now);
	}
	l.msg_id = p->rx_msg_next; /* not in the record (wire.h) */
	return pp_proto_lite_in(e, p, from, &l, pl);
}

int pp_proto_input_local(struct pp_proto *e, uint32_t from, const uint8_t *frame, size_t len,
			 uint64_t now)
{
	if (len && frame[0] == PP_WIRE_LITE && from < e->c.nranks)
		return input_lite(e, from, frame, len, now);
	e->local_due = 1;
	return input(e, frame, len, now, FORM_LOCAL, from);
}
