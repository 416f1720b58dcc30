/* SPDX-License-Identifier: BSD-3-Clause */
/* Intranode peers (docs/protocol.md, rule 6): direct copies in place of
 * pulled DATA, DONE PULLs, the receive queue the sender writes into, and
 * lite messages. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "pp_copy.h"

/* Own a DONE (or HELP) entry: 1 when the ring had room. */
static int done_add(struct pp_proto_peer *p, uint32_t msg_id, uint64_t v, int help)
{
	if (p->done_tail - p->done_head > p->done_mask)
		return 0;
	struct pp_proto_done *d = &p->doneq[p->done_tail++ & p->done_mask];
	d->msg_id = msg_id;
	d->msg_len = v;
	d->help = (uint8_t)help;
	return 1;
}

/* Copy [from, to) of r from local rank rank: 0, or the hook's error. */
static int copy_part(struct pp_proto *e, uint32_t rank, struct pp_proto_recv_rec *r, uint64_t from,
		     uint64_t to)
{
	if (to <= from)
		return 0;
	int rc = HOOK(e, direct, rank, r->msg_id, from, r->buf + from, to - from);
	if (!rc)
		e->st.copies_avoided += to - from;
	return rc;
}

/* A chunk of help_min bytes or more: its sender writes the first half
 * while we copy the second (help hooks). The offer goes out first (a PULL
 * with HELP, this pass), our half on the next step; then the offer is
 * settled: the sender wrote its half, or never claimed it and we copy it
 * too, or it still writes and we look again on the next step. 1 while the
 * chunk is not done; 0 when [r->got, to) is there; -1 when a copy failed
 * (r->got is what is there). */
static int help_step(struct pp_proto *e, uint32_t rank, struct pp_proto_peer *p,
		     struct pp_proto_recv_rec *r, uint64_t to)
{
	if (!r->help_pos) {
		uint64_t half = ((to - r->got) / 2) & ~(uint64_t)4095;
		/* Room for the HELP and the DONE after it. */
		if (p->done_tail - p->done_head + 2 > p->done_mask + 1)
			return 1;
		int64_t pos =
		    half ? HOOK(e, help_offer, rank, r->msg_id, r->got, r->buf + r->got, half)
			 : -ENOSPC; /* under 8 KiB (help_min set so low): no halves */
		if (pos == -EXDEV)
			return -1; /* not to be copied at all: DATA frames */
		if (pos < 0)
			return copy_part(e, rank, r, r->got, to) ? -1 : 0;
		r->help_pos = (uint64_t)pos + 1;
		r->help_len = half;
		r->help_own = 0;
		done_add(p, r->msg_id, (uint64_t)pos, 1);
		return 1;
	}
	uint64_t mid = r->got + r->help_len;
	if (!r->help_own)
		r->help_own = copy_part(e, rank, r, mid, to) ? 2 : 1;
	int rc = HOOK(e, help_settle, rank, r->help_pos - 1);
	if (rc == -EAGAIN)
		return 1; /* the sender writes its half: not done before it is */
	r->help_pos = 0;
	if (rc == 0)
		e->st.copies_avoided += r->help_len;
	else if (copy_part(e, rank, r, r->got, mid))
		return -1;
	if (r->help_own == 2) {
		r->got = mid; /* the second half is pulled instead */
		return -1;
	}
	return 0;
}

void pp_proto_direct_step(struct pp_proto *e, uint32_t rank, struct pp_proto_peer *p)
{
	if (list_empty(&p->directq))
		return;
	struct pp_proto_recv_rec *r = container_of(p->directq.next, struct pp_proto_recv_rec, pq);
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
		int rc;
		if (e->c.help_min && to - r->got >= e->c.help_min)
			rc = help_step(e, rank, p, r, to);
		else
			rc = copy_part(e, rank, r, r->got, to) ? -1 : 0;
		if (rc > 0)
			return;
		if (rc < 0) {
			/* Pull what is left as DATA frames instead. */
			list_del(&r->pq);
			list_add_tail(&p->pullq, &r->pq);
			return;
		}
	}
	e->st.bytes_rx += end - r->got;
	r->got = end;
	if (r->got < r->msg_len)
		return;
	done_add(p, r->msg_id, r->msg_len, 0);
	pp_proto_rx_finish(e, r, 0);
}

int pp_proto_done_desc(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_desc *d)
{
	if (p->done_head == p->done_tail)
		return 0;
	const struct pp_proto_done *x = &p->doneq[p->done_head++ & p->done_mask];
	d->type = PP_WIRE_PULL;
	d->flags = x->help ? PP_WIRE_F_HELP : PP_WIRE_F_DONE;
	d->len = 0;
	d->obj = NULL;
	d->offset = x->msg_len; /* a HELP's: the offer's position */
	d->msg_id = x->msg_id;
	e->st.pulls_tx += !x->help;
	return 1;
}

int pp_proto_pull_local(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_send_rec *s,
			const struct pp_wire_hdr *h)
{
	if (h->flags & PP_WIRE_F_DONE) {
		if (h->offset != s->len) {
			e->st.drops[PP_DROP_STATE]++;
			return 1;
		}
		e->st.pulls_served++;
		pp_proto_send_end(e, s, 0);
		return 1;
	}
	/* The receiver copied part before its direct copy failed. */
	if (p->local && h->offset > s->next_off && h->offset < s->len && s->next_off >= s->push_end)
		s->next_off = h->offset;
	return 0;
}

int pp_proto_writable(const struct pp_proto *e, const struct pp_proto_peer *p, uint64_t len)
{
	if (len < e->writable_min) /* most receives: no push_of to compute */
		return 0;
	uint64_t push = pp_proto_push_of(e, p, len);
	if (push >= len) /* one streamed through the ring is never written */
		return e->c.write_min && len >= e->c.write_min && !pp_proto_local_streamed(e, len)
			   ? PP_PROTO_WRITE_WHOLE
			   : 0;
	return e->c.write_rest && len - push >= e->c.direct_min ? PP_PROTO_WRITE_REST : 0;
}

void pp_proto_rq_post(struct pp_proto *e, struct pp_proto_recv_rec *r)
{
	if (!e->recvq || r->m.src < 0 || e->c.mode == PP_PROTO_PUSH_ALL)
		return;
	struct pp_proto_peer *p = &e->peers[r->m.src];
	if (!p->local)
		return;
	/* The sender writes what it would not push, and what it pushes whole
	 * from write_min on (pp_proto_rq_write): a shorter receive is never
	 * written, and publishing it would only cost both cores the entry's
	 * cache lines. */
	int kind = pp_proto_writable(e, p, r->cap);
	if (!kind)
		return;
	/* A message from the peer must not find a receive the sender cannot
	 * see before this one: one for any source, or one not published. One
	 * the sender would push whole is written only when it travels alone
	 * (pp_proto_rq_write), so only the first receive from that peer is
	 * worth an entry: a window's others would cost both cores their lines
	 * (8 KiB windowed: 5 % with all 64 published). */
	int whole = kind == PP_PROTO_WRITE_WHOLE;
	for (struct pp_link *l = e->posted.all.next; l != &r->m.all; l = l->next) {
		const struct pp_proto_recv_rec *x =
		    container_of(l, struct pp_proto_recv_rec, m.all);
		if (x->m.src == PP_PROTO_ANY || (x->m.src == r->m.src && (whole || !x->rq_slot)))
			return;
	}
	int slot = HOOK(e, rq_post, (uint32_t)r->m.src, r->m.tag, r->m.ignore, r->buf, r->cap,
			p->rx_msg_next);
	if (slot >= 0)
		r->rq_slot = slot + 1;
}

int pp_proto_rq_match(struct pp_proto *e, struct pp_proto_recv_rec *r, const struct pp_wire_hdr *h)
{
	int written = (h->flags & PP_WIRE_F_WRITTEN) != 0;
	if (!r->rq_slot && !written)
		return 0;
	int rc = r->rq_slot && e->recvq
		     ? HOOK(e, rq_take, r->peer, r->rq_slot - 1, h->msg_id, written)
		     : -EPROTO;
	r->rq_slot = 0;
	if (rc)
		e->st.drops[PP_DROP_STATE]++;
	if (!written)
		return 0;
	if (rc || r->msg_len > r->cap) {
		pp_proto_rx_finish(e, r, -EPROTO);
		return 1;
	}
	/* Every byte is in the buffer already: no PULL, no copy. */
	r->got = r->msg_len;
	e->st.bytes_rx += r->msg_len;
	e->st.copies_avoided += r->msg_len;
	pp_proto_rx_finish(e, r, 0);
	return 1;
}

void pp_proto_rq_withdraw(struct pp_proto *e, struct pp_proto_recv_rec *r)
{
	/* A claimed entry (-EBUSY) means the sender is writing this message:
	 * the receive ends anyway (its peer is lost or the engine goes). */
	if (r->rq_slot && e->recvq)
		HOOK(e, rq_withdraw, (uint32_t)r->m.src, r->rq_slot - 1);
	r->rq_slot = 0;
}

int pp_proto_rq_write(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_send_rec *s)
{
	if (!e->recvq || !p->local || e->c.mode == PP_PROTO_PUSH_ALL ||
	    !pp_proto_writable(e, p, s->len))
		return 0;
	/* One a ring would carry whole, only when it is the one message on
	 * its way to p: one copy by a system call wins alone, but a stream
	 * through the ring has both cores copying at once. */
	if (s->push_end >= s->len &&
	    (pp_gbn_tx_busy(&p->tx) || p->txq.next != &s->q || s->q.next != &p->txq))
		return 0;
	if (HOOK(e, rq_write, s->peer, s->msg_id, s->tag, s->buf, s->len))
		return 0;
	s->written = 1;
	s->push_end = s->end_off = 0;
	return 1;
}

/* ---- lite messages ----
 *
 * A small message to a node-mate goes whole as one record of the ring,
 * outside the sequence: no send record, no window, no ack, no timer. Order
 * holds because the ring keeps it and because a lite record is sent only
 * when nothing sequenced of ours to that peer is unacknowledged or queued:
 * a sequenced frame before it was taken already, and none the receiver
 * refused can come again behind it. Nor does it carry its message number:
 * it is the one after the last message whose first frame (or lite record)
 * the receiver took, which the sender knows as id_told once nothing of it
 * is unacknowledged; a message with another number goes sequenced. The
 * receiver never refuses it either:
 * the sender spent the credit its pushed bytes take, and a record that
 * still finds no room (no receive record) stays at the head of the ring
 * until it does (-EAGAIN). */

int pp_proto_lite_send(struct pp_proto *e, struct pp_proto_peer *p, uint32_t dst, uint64_t tag,
		       const void *buf, uint64_t len, unsigned flags, uint32_t data,
		       uint64_t cookie)
{
	int has_data = (flags & PP_PROTO_SEND_DATA) != 0;
	/* One frame's payload at most: the receiver's decoder bounds a record
	 * so (LENGTH), and nothing would send a dropped one again. */
	if (len > e->lite_len || pp_gbn_tx_busy(&p->tx) || !list_empty(&p->txq) ||
	    p->next_msg_id != p->id_told)
		return -EAGAIN;
	uint32_t cells = pp_pushbuf_cells(len);
	if ((uint16_t)(p->credit_limit - p->credit_used) < cells && e->c.credits)
		return -EAGAIN;
	/* Ack and credit only when they are news: an ack is owed, or enough
	 * credit was given back (engine.c, credit_news). */
	int news = pp_gbn_rx_owes_ack(&p->rx[0]) |
		   ((uint16_t)(p->credit_adv - p->credit_told) >= e->credit_news);
	uint8_t fl = (uint8_t)((has_data ? PP_WIRE_LITE_DATA : 0) | (news ? PP_WIRE_LITE_ACK : 0));
	uint32_t rec_len = pp_wire_lite_hdr_len(fl) + (uint32_t)len;
	uint8_t *rec = HOOK(e, lite_reserve, dst, rec_len);
	if (!rec)
		return -EAGAIN;
	struct pp_wire_lite l = {
	    .kind = PP_WIRE_LITE,
	    .flags = fl,
	    .len = (uint16_t)len,
	    .msg_id = p->next_msg_id++, /* the receiver's count: not written */
	    .tag = tag,
	    .data = data,
	};
	if (news) {
		l.ack = p->rx[0].rcv_nxt;
		l.credit = p->credit_adv;
		l.ack_stream = p->rx_stream;
		p->credit_told = p->credit_adv;
		pp_gbn_rx_acked(&p->rx[0]); /* the record carries the ack */
	}
	pp_wire_encode_lite(rec, &l, buf);
	HOOK(e, lite_commit, dst, rec_len);
	p->id_told = p->next_msg_id;
	p->credit_used = (uint16_t)(p->credit_used + cells); /* read with credits on only */
	if (!(flags & PP_PROTO_SEND_NOW)) {
		e->user_ops++;
		pp_proto_complete(e, cookie, 1, dst, tag, len, 0);
	}
	e->st.msgs_tx++;
	e->st.bytes_tx += len;
	e->st.frames_tx++;
	return 0;
}

/* A lite message for a receive posted and waiting, not published to the
 * sender (rule 6's common case): its bytes go straight into the receive,
 * which completes, without the arrival bookkeeping push_in keeps for
 * messages of several frames. 1 when taken so, 0 for push_in's way. */
static int lite_to_posted(struct pp_proto *e, struct pp_proto_peer *p, uint32_t from,
			  const struct pp_wire_lite *l, const uint8_t *pl)
{
	struct pp_tagq_entry *m = pp_tagq_find_recv(&e->posted, from, l->tag);
	if (!m)
		return 0;
	struct pp_proto_recv_rec *r = container_of(m, struct pp_proto_recv_rec, m);
	if (r->rq_slot)
		return 0; /* its entry must be taken back: push_in does */
	pp_tagq_del(&e->posted, m);
	uint64_t k = l->len < r->cap ? l->len : r->cap;
	pp_copy_short(r->buf, pl, (size_t)k);
	pp_proto_credit_return(p, pp_pushbuf_cells(l->len), 0);
	struct pp_proto_cpl *c = pp_proto_complete(e, r->cookie, 0, from, l->tag, l->len,
						   l->len > r->cap ? -EMSGSIZE : 0);
	c->post = r->post;
	if (l->flags & PP_WIRE_LITE_DATA) {
		c->data = l->data;
		c->has_data = 1;
	}
	e->st.early_matches++;
	e->st.msgs_rx++;
	e->st.bytes_rx += l->len;
	e->st.copies_avoided += k;
	pp_proto_rx_put(e, r);
	return 1;
}

/* The FIRST | LAST PUSH a lite record stands for, for push_in: what it
 * takes from a frame that matches late, is kept, or waits for room. */
static void lite_as_push(const struct pp_proto *e, uint32_t from, const struct pp_wire_lite *l,
			 struct pp_wire_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->type = PP_WIRE_PUSH;
	h->flags = PP_WIRE_F_FIRST | PP_WIRE_F_LAST | PP_WIRE_F_COPIED;
	h->xflags = (l->flags & PP_WIRE_LITE_DATA) ? PP_WIRE_XF_DATA : 0;
	h->payload_len = l->len;
	h->job = e->c.job;
	h->src_rank = from;
	h->dst_rank = e->c.rank;
	h->msg_id = l->msg_id;
	h->tag = l->tag;
	h->msg_len = l->len;
	h->src_inc = e->peers[from].inc; /* the ring's pair (wire.h) */
	h->dst_inc = e->c.inc;
	h->data = l->data;
}

int pp_proto_lite_in(struct pp_proto *e, struct pp_proto_peer *p, uint32_t from,
		     const struct pp_wire_lite *l, const uint8_t *pl)
{
	if (!lite_to_posted(e, p, from, l, pl)) {
		e->local_due = 1; /* push_in may owe an ack, a PULL */
		struct pp_wire_hdr h;
		lite_as_push(e, from, l, &h);
		if (pp_proto_push_in(e, p, from, &h, pl) != TAKEN)
			return -EAGAIN; /* nothing was taken: it comes again */
	}
	p->rx_msg_next = l->msg_id + 1;
	return 0;
}
