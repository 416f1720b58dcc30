/* SPDX-License-Identifier: BSD-3-Clause */
/* A message's sending side (docs/protocol.md, rules 1 and 7): a send is
 * posted, framed as the window opens, served when its PULL comes (by the
 * engine or the layer below) and finished when every frame is acked. */
#include <errno.h>
#include <string.h>

#include "engine_impl.h"

/* ---- user operations ---- */

/* Bytes a message of len bytes to p pushes unasked (rule 1). Push-Pull:
 * BTP(1) + BTP(2); with btp_fit, at least what the path to p carries in one
 * round trip of the PULL (so it is back before the pushes end), all that
 * push_cap allows while p's receives come late (late_rx), and to a node-mate
 * the whole message up to local_whole (two copies through the ring beat the
 * DONE round trip and a copy call there) or when the rest would be too short
 * for a direct copy (pulled as DATA, it would cost a round trip for
 * nothing); a longer one to a node-mate pushes nothing, and the receiver's
 * one copy call takes it all (16 KiB one way 1.43 us against 1.89 with the
 * BTPs pushed first: their copies out of the ring came before the call),
 * up to local_stream, from which it streams through the ring whole. */
uint64_t pp_proto_push_of(const struct pp_proto *e, const struct pp_proto_peer *p, uint64_t len)
{
	if (e->c.mode != PP_PROTO_PUSH_PULL)
		return e->c.mode == PP_PROTO_PUSH_ZERO ? 0 : len;
	uint64_t push = (uint64_t)p->btp1 + p->btp2;
	if (len <= push)
		return len;
	if (!e->c.btp_fit)
		return push;
	if (p->local) /* pushed whole, or nothing: the receiver's one copy takes it all */
		return len <= e->c.local_whole || pp_proto_local_streamed(e, len) ||
			       len - push < e->c.direct_min
			   ? len
			   : 0;
	uint64_t fit = p->late_rx ? e->push_cap : pp_path_fit(&p->path);
	if (fit > push) {
		/* In whole frames (the first one full too, pp_proto_first_len):
		 * a short last push would cost a frame of its own, and frames,
		 * not bytes, are what a port spends its time on. */
		uint64_t whole = (fit + e->maxp - 1) / e->maxp * e->maxp;
		if (whole > e->push_cap)
			whole = e->push_cap / e->maxp * e->maxp;
		push = whole > push ? whole : push;
	}
	return len < push ? len : push;
}

/* The bytes of s, a send completed at once, in the engine's copy. */
static void copy_in(struct pp_proto *e, struct pp_proto_send_rec *s)
{
	uint8_t *copy = e->copies + (size_t)(s - e->sends) * e->c.copy_max;
	if (s->len)
		memcpy(copy, s->buf, (size_t)s->len);
	s->buf = copy;
}

int pp_proto_sendf(struct pp_proto *e, uint32_t dst, uint64_t tag, const void *buf, uint64_t len,
		   uint32_t data, unsigned flags, uint64_t cookie)
{
	if (!e || dst >= e->c.nranks || dst == e->c.rank || !e->peers[dst].present ||
	    (!buf && len) || ((flags & PP_PROTO_SEND_COPY) && len > e->c.copy_max))
		return -EINVAL;
	struct pp_proto_peer *p = &e->peers[dst];
	if (p->lost || p->gone)
		return -ECONNRESET;
	if (pp_proto_ops_room(e))
		return -ENOMEM;
	int now = (flags & PP_PROTO_SEND_NOW) != 0;
	if (p->local && e->lite &&
	    pp_proto_lite_send(e, p, dst, tag, buf, len, flags, data, cookie) == 0)
		return now; /* nothing to send after it: no local_due */
	if (flags & PP_PROTO_SEND_TRY)
		return -EAGAIN;
	e->local_due = 1;
	if (list_empty(&e->send_free))
		return e->nsends_copied ? -EAGAIN : -ENOMEM;
	struct pp_proto_send_rec *s = container_of(e->send_free.next, struct pp_proto_send_rec, q);
	list_del(&s->q);
	uint64_t push = pp_proto_push_of(e, p, len);
	/* In the segment, one memcpy by the receiver beats the stream: 4 MiB
	 * windowed 13.5-15.4 against 9.9-10.0 GB/s (pp_malloc_bw). */
	if ((flags & PP_PROTO_SEND_SHARED) && p->local && e->c.mode == PP_PROTO_PUSH_PULL &&
	    e->c.btp_fit && pp_proto_local_streamed(e, len))
		push = 0;
	if (e->c.mode == PP_PROTO_PUSH_PULL && push > (uint64_t)p->btp1 + p->btp2)
		e->st.pushes_fitted++;
	s->state = SEND_ACTIVE;
	s->buf = buf;
	s->len = len;
	s->push_end = push;
	s->next_off = 0;
	s->end_off = push;
	s->await_pull = 0;
	s->first_t = 0;
	s->cookie = cookie;
	s->peer = dst;
	s->tag = tag;
	s->has_data = (flags & PP_PROTO_SEND_DATA) != 0;
	s->data = s->has_data ? data : 0;
	s->msg_id = p->next_msg_id++;
	s->unacked = 0;
	s->first_sent = 0;
	s->gen_done = 0;
	s->queued = 1;
	s->copied = 0;
	s->late = 0;
	s->written = 0;
	s->handed = 0;
	s->served = 0;
	s->below = 0;
	s->error = 0;
	list_add_tail(&p->sends, &s->all);
	list_add_tail(&p->txq, &s->q);
	e->push_owed = 1;
	/* Written straight into a receive the peer published: done too. */
	int written = pp_proto_rq_write(e, p, s);
	/* PP_PROTO_SEND_COPY (len <= copy_max, checked above) is eager always. */
	uint32_t eager = p->local && e->c.copy_max_local && e->c.copy_max_local < e->c.copy_max
			     ? e->c.copy_max_local
			     : e->c.copy_max;
	int done = written || (e->c.copy_max &&
			       ((flags & PP_PROTO_SEND_COPY) || (len <= eager && push == len)));
	if (done) {
		/* Eager: pushed whole, so nothing waits for a PULL that a
		 * sender gone computing would serve late; the user's buffer is
		 * free again now. */
		if (!written && (flags & PP_PROTO_SEND_LATE) && p->local && len) {
			/* Its frames go into the ring from buf; the copy
			 * waits for pp_proto_settle, off their path. */
			s->late = 1;
			list_add_tail(&e->late, &s->lq);
		} else if (!written) {
			copy_in(e, s);
		}
		s->copied = 1;
		e->nsends_copied++;
		e->st.msgs_tx++;
	}
	if (!done || !now) { /* else the caller reports it done: no completion */
		e->user_ops++;
		if (done)
			pp_proto_complete(e, cookie, 1, dst, tag, len, 0);
	}
	if (p->local && push < len && e->c.hooks.publish && !written)
		HOOK(e, publish, dst, s->msg_id, buf, len);
	return done && now;
}

int pp_proto_send(struct pp_proto *e, uint32_t dst, uint64_t tag, const void *buf, uint64_t len,
		  uint64_t cookie)
{
	return pp_proto_sendf(e, dst, tag, buf, len, 0, 0, cookie);
}

int pp_proto_send_data(struct pp_proto *e, uint32_t dst, uint64_t tag, const void *buf,
		       uint64_t len, uint32_t data, uint64_t cookie)
{
	return pp_proto_sendf(e, dst, tag, buf, len, data, PP_PROTO_SEND_DATA, cookie);
}

int pp_proto_send_copy(struct pp_proto *e, uint32_t dst, uint64_t tag, const void *buf,
		       uint64_t len, int has_data, uint32_t data, uint64_t cookie)
{
	return pp_proto_sendf(e, dst, tag, buf, len, data,
			      PP_PROTO_SEND_COPY | (has_data ? PP_PROTO_SEND_DATA : 0), cookie);
}

int pp_proto_send_late(struct pp_proto *e, uint32_t dst, uint64_t tag, const void *buf,
		       uint64_t len, uint64_t cookie)
{
	return pp_proto_sendf(e, dst, tag, buf, len, 0, PP_PROTO_SEND_LATE, cookie);
}

void pp_proto_settle(struct pp_proto *e)
{
	while (!list_empty(&e->late)) {
		struct pp_proto_send_rec *s =
		    container_of(e->late.next, struct pp_proto_send_rec, lq);
		list_del(&s->lq);
		s->late = 0;
		copy_in(e, s);
	}
}

int pp_proto_push_owed(struct pp_proto *e)
{
	int owed = e->push_owed;
	e->push_owed = 0;
	return owed;
}

uint64_t pp_proto_first_len(const struct pp_proto *e, const struct pp_proto_peer *p, uint64_t push,
			    uint64_t len)
{
	/* BTP(1) lets the receiver send its PULL early. With btp_fit, a
	 * message pushed whole waits for none, and one whose pushes were
	 * fitted to the PULL's round trip has it back in time anyway: their
	 * first frame is as long as any. */
	if (e->c.mode == PP_PROTO_PUSH_PULL && push > p->btp1 &&
	    !(e->c.btp_fit && (push == len || push > (uint64_t)p->btp1 + p->btp2)))
		push = p->btp1;
	return push < e->maxp ? push : e->maxp;
}

/* Take the next frame of the send at the head of txq into d. */
void pp_proto_send_frame(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_send_rec *s,
			 struct pp_proto_desc *d)
{
	uint64_t off = s->next_off, n;
	uint8_t flags = 0;
	if (!s->first_sent) {
		pp_proto_credit_spend(e, p, s);
		n = pp_proto_first_len(e, p, s->push_end, s->len);
		flags = PP_WIRE_F_FIRST;
		if (s->written) {
			flags |= PP_WIRE_F_WRITTEN | PP_WIRE_F_LAST;
		} else if (s->push_end < s->len) {
			flags |= PP_WIRE_F_PULL;
			/* The rest may be served below: say so before the
			 * FIRST frame, and with it the PULL, can exist. */
			if (e->c.hooks.handoff && !p->local && !s->copied)
				s->handed = HOOK(e, handoff, s->peer, s->msg_id, s->tag, s->buf,
						 s->len, s->push_end) == 0;
		}
		s->first_sent = 1;
	} else {
		uint64_t lim = off < s->push_end ? s->push_end : s->end_off;
		n = lim - off;
		if (n > e->maxp)
			n = e->maxp;
	}
	if (off + n == s->len)
		flags |= PP_WIRE_F_LAST;
	if (s->copied)
		flags |= PP_WIRE_F_COPIED;
	d->type = off < s->push_end || (flags & PP_WIRE_F_FIRST) ? PP_WIRE_PUSH : PP_WIRE_DATA;
	d->flags = flags;
	d->len = (uint16_t)n;
	d->obj = s;
	d->offset = off;
	s->next_off = s->written ? s->len : off + n;
	if (s->below && s->next_off == s->push_end) /* the rest went below */
		s->next_off = s->end_off = s->len;
	s->unacked++;
	if (s->next_off == s->len)
		s->gen_done = 1;
	list_del(&s->q);
	if (s->next_off < s->end_off)
		list_add_tail(&p->txq, &s->q); /* round robin between messages */
	else
		s->queued = 0;
}

void pp_proto_pull_in(struct pp_proto *e, struct pp_proto_peer *p, const struct pp_wire_hdr *h,
		      uint64_t now)
{
	for (struct pp_link *l = p->sends.next; l != &p->sends; l = l->next) {
		struct pp_proto_send_rec *s = container_of(l, struct pp_proto_send_rec, all);
		if (s->msg_id != h->msg_id)
			continue;
		if (s->first_t) {
			pp_path_pull(&p->path, now, now - s->first_t);
			s->first_t = 0;
			/* Its pushes out and the sender idle longer than two
			 * round trips of the path: the receive was posted
			 * late, not the PULL slow on its way. A PULL that
			 * overtook the pushes ends that. */
			p->late_rx = s->await_pull && p->starved_t && p->path.rtt_min &&
				     now - p->starved_t > 2 * p->path.rtt_min;
		}
		if (s->await_pull) {
			s->await_pull = 0;
			p->await_pull--;
			if (p->starved_t) { /* the round trip its pushes did not hide */
				e->st.pull_waits++;
				e->st.pull_wait_ns += now - p->starved_t;
				p->starved_t = 0;
			}
		}
		/* A node-mate copying the rest asks us to write a part of it
		 * (rule 6, help): while the bytes are still ours to read. */
		if ((h->flags & PP_WIRE_F_HELP) && p->local) {
			if (e->c.hooks.help_serve && !s->served && !s->below)
				HOOK(e, help_serve, s->peer, h->offset, s->msg_id, s->buf, s->len);
			return;
		}
		/* A PULL sent again after its receive ended (output.c): DATA
		 * on a pull handler's stream finished the receive, so the
		 * layer below served it, having acted on this PULL's first
		 * copy, which reached the engine out of order and was
		 * dropped. The layer below says so; without it nobody will
		 * ever pull the rest. */
		if (s->handed && h->msg_len != s->len && h->offset == h->msg_len) {
			s->handed = 0;
			if (HOOK(e, handoff_claim, s->peer, s->msg_id))
				s->served = 1;
			else
				pp_proto_send_end(e, s, -ECONNRESET);
			return;
		}
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
			    HOOK(e, handoff_claim, s->peer, s->msg_id)) {
				/* The rest is the layer below's; pushes still
				 * waiting for the window are still ours. */
				s->served = 1;
				return;
			}
			if (h->flags & PP_WIRE_F_AGAIN) /* it may still hold it */
				HOOK(e, handoff_cancel, s->peer, s->msg_id);
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

int pp_proto_handoff_done(struct pp_proto *e, uint32_t dst, uint32_t msg_id, int error)
{
	if (!e || dst >= e->c.nranks || !e->peers[dst].present)
		return -EINVAL;
	e->local_due = 1;
	struct pp_proto_peer *p = &e->peers[dst];
	for (struct pp_link *l = p->sends.next; l != &p->sends; l = l->next) {
		struct pp_proto_send_rec *s = container_of(l, struct pp_proto_send_rec, all);
		if (s->msg_id != msg_id)
			continue;
		if (s->handed)
			return -EAGAIN; /* its PULL is not in yet: say it again then */
		if (!s->served)
			return -ENOENT;
		s->served = 0;
		s->below = 1;
		s->error = error ? -ECONNRESET : 0;
		/* Pushes that wait for the window still go (next_frame ends the
		 * send after the last of them). */
		if (s->next_off >= s->push_end) {
			s->next_off = s->end_off = s->len;
			s->gen_done = 1;
			if (s->unacked == 0)
				pp_proto_send_finish(e, s, s->error);
		}
		return 0;
	}
	return -ENOENT;
}

void pp_proto_send_end(struct pp_proto *e, struct pp_proto_send_rec *s, int error)
{
	s->next_off = s->end_off = s->len;
	s->gen_done = 1;
	s->error = error;
	if (s->queued) {
		list_del(&s->q);
		s->queued = 0;
	}
	if (s->unacked == 0)
		pp_proto_send_finish(e, s, error);
}

void pp_proto_send_finish(struct pp_proto *e, struct pp_proto_send_rec *s, int error)
{
	if (s->await_pull) { /* ended without its PULL (peer lost, served below) */
		struct pp_proto_peer *p = &e->peers[s->peer];
		if (--p->await_pull == 0)
			p->starved_t = 0; /* nobody waits any more */
	}
	if (s->late) { /* ended before pp_proto_settle: nothing reads buf again */
		list_del(&s->lq);
		s->late = 0;
	}
	if (s->copied) {
		e->nsends_copied--; /* its completion went out at pp_proto_send */
	} else {
		/* The layer below still holds it: no byte more is read. */
		if (s->handed || s->served)
			HOOK(e, handoff_cancel, s->peer, s->msg_id);
		pp_proto_complete(e, s->cookie, 1, s->peer, s->tag, s->len, error);
		if (!error)
			e->st.msgs_tx++;
	}
	list_del(&s->all);
	if (s->queued)
		list_del(&s->q);
	s->state = SEND_FREE;
	list_add_head(&e->send_free, &s->q); /* reused first, while its lines are warm */
}
