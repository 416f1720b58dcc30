/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's life cycle, user operations and completions; the rules are in
 * engine.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

void pp_proto_conf_default(struct pp_proto_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->mode = PP_PROTO_PUSH_PULL;
	c->btp1 = 80;
	c->btp2 = 680;
	c->window = 64;
	c->rto_ns = 200000;
	c->rto_max_ns = 50000000;
	c->rto_tries = 12;
	c->ack_delay_ns = 20000;
	c->ack_every = 16;
	c->pushbuf_bytes = 1u << 20;
	c->credits = 1;
	c->mtu = 1500;
	c->max_msgs = 256;
	c->copy_max = 1024;
	c->direct_chunk = 1u << 20;
}

int pp_proto_create(struct pp_proto **engp, const struct pp_proto_conf *c)
{
	if (!engp || !c || c->nranks == 0 || c->rank >= c->nranks || c->window == 0 ||
	    (c->window & (c->window - 1)) || c->window > 32768 || c->mtu < PP_WIRE_HDR_LEN + 64 ||
	    c->max_msgs == 0 || c->max_msgs > (1u << 24) || c->mode > PP_PROTO_PUSH_ZERO ||
	    c->rto_ns == 0 || c->rto_tries == 0 || c->ack_every == 0 ||
	    (c->direct && c->direct_chunk == 0) ||
	    (c->stream >= 1 && c->stream < PP_PROTO_STREAMS) ||
	    (!c->handoff != !c->handoff_claim || !c->handoff != !c->handoff_cancel) ||
	    !c->place_post != !c->place_cancel)
		return -EINVAL;
	struct pp_proto *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->c = *c;
	if (e->c.rto_max_ns < e->c.rto_ns)
		e->c.rto_max_ns = e->c.rto_ns;
	e->maxp = c->mtu - PP_WIRE_HDR_LEN;
	e->wmask = c->window - 1;
	uint32_t cpl_n = pow2_at_least(2 * c->max_msgs);
	e->peers = calloc(c->nranks, sizeof(*e->peers));
	e->sends = calloc(c->max_msgs, sizeof(*e->sends));
	e->rxs = calloc(2 * (size_t)c->max_msgs, sizeof(*e->rxs));
	e->cpl = calloc(cpl_n, sizeof(*e->cpl));
	e->copies = c->copy_max ? malloc((size_t)c->max_msgs * c->copy_max) : NULL;
	if (!e->peers || !e->sends || !e->rxs || !e->cpl || (c->copy_max && !e->copies) ||
	    pp_pushbuf_init(&e->pb, c->pushbuf_bytes)) {
		pp_proto_destroy(e);
		return -ENOMEM;
	}
	e->cpl_mask = cpl_n - 1;
	uint32_t share = c->nranks > 1 ? e->pb.ncells / (c->nranks - 1) : 0;
	e->credit_share = share > CREDIT_SHARE_MAX ? CREDIT_SHARE_MAX : share;
	list_init(&e->send_free);
	list_init(&e->pp_proto_rx_free);
	list_init(&e->posted);
	list_init(&e->unexpected);
	for (uint32_t i = 0; i < c->max_msgs; i++)
		list_add_tail(&e->send_free, &e->sends[i].q);
	for (uint32_t i = 0; i < 2 * c->max_msgs; i++)
		list_add_tail(&e->pp_proto_rx_free, &e->rxs[i].q);
	for (uint32_t r = 0; r < c->nranks; r++) {
		struct peer *p = &e->peers[r];
		list_init(&p->sends);
		list_init(&p->txq);
		list_init(&p->pullq);
		list_init(&p->directq);
		list_init(&p->arrived);
	}
	*engp = e;
	return 0;
}

static void place_take(struct pp_proto *e, struct rx *r);

void pp_proto_destroy(struct pp_proto *e)
{
	if (!e)
		return;
	if (e->recvq)
		pp_proto_set_recvq(e, NULL); /* withdraw what is published */
	if (e->rxs)
		for (size_t i = 0; i < 2 * (size_t)e->c.max_msgs; i++)
			place_take(e, &e->rxs[i]);
	if (e->peers)
		for (uint32_t r = 0; r < e->c.nranks; r++) {
			free(e->peers[r].ring);
			free(e->peers[r].doneq);
		}
	free(e->peers);
	free(e->sends);
	free(e->rxs);
	free(e->cpl);
	free(e->copies);
	pp_pushbuf_fini(&e->pb);
	free(e);
}

int pp_proto_peer_add(struct pp_proto *e, uint32_t rank, const uint8_t mac[6], uint32_t inc)
{
	if (!e || !mac || rank >= e->c.nranks || rank == e->c.rank)
		return -EINVAL;
	struct peer *p = &e->peers[rank];
	if (!p->ring) {
		/* Cold path: the window ring is the only per-peer allocation. */
		p->ring = calloc(e->c.window, sizeof(*p->ring));
		if (!p->ring)
			return -ENOMEM;
		pp_gbn_tx_start(&p->tx, 0, e->c.rto_ns, e->c.rto_max_ns);
	}
	memcpy(p->mac, mac, 6);
	p->inc = inc;
	p->present = 1;
	if (!p->local) {
		p->btp1 = e->c.btp1;
		p->btp2 = e->c.btp2;
	}
	p->credit_limit = (uint16_t)e->credit_share;
	p->credit_adv = (uint16_t)e->credit_share;
	return 0;
}

/* ---- completions ---- */

static void complete(struct pp_proto *e, uint64_t cookie, int is_send, uint32_t peer, uint32_t tag,
		     uint64_t len, int error)
{
	struct pp_proto_cpl *x = &e->cpl[e->cpl_tail++ & e->cpl_mask];
	x->cookie = cookie;
	x->is_send = is_send;
	x->source = (int)peer;
	x->tag = (int)tag;
	x->len = len;
	x->error = error;
}

int pp_proto_poll(struct pp_proto *e, struct pp_proto_cpl *cpl)
{
	if (e->cpl_head == e->cpl_tail)
		return 0;
	*cpl = e->cpl[e->cpl_head++ & e->cpl_mask];
	e->user_ops--;
	return 1;
}

void pp_proto_send_finish(struct pp_proto *e, struct send *s, int error)
{
	if (s->copied) {
		e->nsends_copied--; /* its completion went out at pp_proto_send */
	} else {
		/* The layer below still holds it: no byte more is read. */
		if (s->handed || s->served)
			e->c.handoff_cancel(e->c.hook_arg, s->peer, s->msg_id);
		complete(e, s->cookie, 1, s->peer, s->tag, s->len, error);
		if (!error)
			e->st.msgs_tx++;
	}
	list_del(&s->all);
	if (s->queued)
		list_del(&s->q);
	s->state = SEND_FREE;
	list_add_head(&e->send_free, &s->q); /* reused first, while its lines are warm */
}

/* Take back r's placement description: the layer below writes nothing
 * more into r->buf once this returns. */
static void place_take(struct pp_proto *e, struct rx *r)
{
	if (r->placed) {
		r->placed = 0;
		e->c.place_cancel(e->c.hook_arg, r->peer, r->msg_id);
	}
}

void pp_proto_rx_free(struct pp_proto *e, struct rx *r)
{
	place_take(e, r);
	if (r->state == RX_POSTED && r->rq_slot)
		pp_proto_rq_withdraw(e, r);
	if (r->state == RX_UNEXPECTED || r->state == RX_POSTED)
		list_del(&r->q);
	if (r->state == RX_UNEXPECTED || r->state == RX_ACTIVE)
		list_del(&r->by_peer);
	if (r->pull_queued) {
		list_del(&r->pq);
		r->pull_queued = 0;
	}
	if (r->stage)
		pp_proto_stage_release(e, r);
	r->state = RX_FREE;
	list_add_head(&e->pp_proto_rx_free, &r->q); /* reused first, while its lines are warm */
}

void pp_proto_rx_finish(struct pp_proto *e, struct rx *r, int error)
{
	if (!error && r->msg_len > r->cap)
		error = -EMSGSIZE;
	place_take(e, r); /* before the user may reuse the buffer */
	complete(e, r->cookie, 0, r->peer, r->tag, r->msg_len, error);
	if (!error || error == -EMSGSIZE)
		e->st.msgs_rx++;
	pp_proto_rx_free(e, r);
}

/* ---- peer loss ---- */

void pp_proto_peer_lose(struct pp_proto *e, uint32_t rank)
{
	struct peer *p = &e->peers[rank];
	p->lost = 1;
	while (!list_empty(&p->sends))
		pp_proto_send_finish(e, container_of(p->sends.next, struct send, all), -ECONNRESET);
	while (!list_empty(&p->arrived)) {
		struct rx *r = container_of(p->arrived.next, struct rx, by_peer);
		if (r->state == RX_UNEXPECTED) {
			pp_pushbuf_drain(&e->pb, &r->cells, NULL, 0);
			pp_proto_rx_free(e, r);
		} else {
			pp_proto_rx_finish(e, r, -ECONNRESET);
		}
	}
	for (struct link *l = e->posted.next; l != &e->posted;) {
		struct rx *r = container_of(l, struct rx, q);
		l = l->next;
		if (r->want_src == (int)rank)
			pp_proto_rx_finish(e, r, -ECONNRESET);
	}
	pp_gbn_tx_drop(&p->tx);
	p->done_head = p->done_tail;
	for (unsigned i = 0; i < PP_PROTO_STREAMS; i++)
		p->rx[i].owe = 0;
	p->xowe = 0;
}

void pp_proto_peer_fail(struct pp_proto *e, uint32_t rank)
{
	if (rank < e->c.nranks && e->peers[rank].present && !e->peers[rank].lost)
		pp_proto_peer_lose(e, rank);
}

void pp_proto_ping(struct pp_proto *e, uint32_t rank)
{
	if (rank >= e->c.nranks || rank == e->c.rank)
		return;
	struct peer *p = &e->peers[rank];
	if (p->present && !p->lost && !p->gone && !pp_gbn_tx_busy(&p->tx))
		p->ping_owed = 1;
}

/* ---- user operations ---- */

int pp_proto_send(struct pp_proto *e, uint32_t dst, int tag, const void *buf, uint64_t len,
		  uint64_t cookie)
{
	if (!e || dst >= e->c.nranks || dst == e->c.rank || !e->peers[dst].present ||
	    tag == PP_PROTO_ANY || (!buf && len))
		return -EINVAL;
	struct peer *p = &e->peers[dst];
	if (p->lost || p->gone)
		return -ECONNRESET;
	if (e->user_ops >= 2 * e->c.max_msgs)
		return -ENOMEM;
	if (list_empty(&e->send_free))
		return e->nsends_copied ? -EAGAIN : -ENOMEM;
	struct send *s = container_of(e->send_free.next, struct send, q);
	list_del(&s->q);
	uint64_t push = len;
	if (e->c.mode == PP_PROTO_PUSH_PULL && len > (uint64_t)p->btp1 + p->btp2)
		push = (uint64_t)p->btp1 + p->btp2;
	else if (e->c.mode == PP_PROTO_PUSH_ZERO)
		push = 0;
	s->state = SEND_ACTIVE;
	s->buf = buf;
	s->len = len;
	s->push_end = push;
	s->next_off = 0;
	s->end_off = push;
	s->cookie = cookie;
	s->peer = dst;
	s->tag = (uint32_t)tag;
	s->msg_id = p->next_msg_id++;
	s->unacked = 0;
	s->first_sent = 0;
	s->gen_done = 0;
	s->queued = 1;
	s->copied = 0;
	s->written = 0;
	s->handed = 0;
	s->served = 0;
	s->below = 0;
	s->error = 0;
	list_add_tail(&p->sends, &s->all);
	list_add_tail(&p->txq, &s->q);
	e->user_ops++;
	/* Written straight into a receive the peer published: done too. */
	int written = pp_proto_rq_write(e, p, s);
	if (written || (e->c.copy_max && len <= e->c.copy_max && push == len)) {
		/* Eager: pushed whole, so nothing waits for a PULL that a
		 * sender gone computing would serve late; the user's buffer is
		 * free again now. */
		if (!written) {
			uint8_t *copy = e->copies + (size_t)(s - e->sends) * e->c.copy_max;
			if (len)
				memcpy(copy, buf, (size_t)len);
			s->buf = copy;
		}
		s->copied = 1;
		e->nsends_copied++;
		complete(e, cookie, 1, dst, (uint32_t)tag, len, 0);
		e->st.msgs_tx++;
	}
	if (p->local && push < len && e->c.publish && !written)
		e->c.publish(e->c.hook_arg, dst, s->msg_id, buf, len);
	return 0;
}

void pp_proto_queue_pull(struct peer *p, struct rx *r)
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

int pp_proto_recv(struct pp_proto *e, int src, int tag, void *buf, uint64_t len, uint64_t cookie)
{
	if (!e || src < PP_PROTO_ANY || (src >= 0 && (uint32_t)src >= e->c.nranks) || (!buf && len))
		return -EINVAL;
	if (src >= 0 && e->peers[src].lost)
		return -ECONNRESET;
	if (e->user_ops >= 2 * e->c.max_msgs)
		return -ENOMEM;
	for (struct link *l = e->unexpected.next; l != &e->unexpected; l = l->next) {
		struct rx *r = container_of(l, struct rx, q);
		if (!pp_proto_match(src, tag, r->peer, r->tag))
			continue;
		/* Late receiver: copy the pushed bytes once, then pull the rest. */
		struct peer *p = &e->peers[r->peer];
		list_del(&r->q);
		r->state = RX_ACTIVE;
		r->buf = buf;
		r->cap = len;
		r->cookie = cookie;
		if (r->stage || r->evicted) {
			e->st.late_matches++;
			e->user_ops++;
			pp_proto_stage_match(e, p, r);
			return 0;
		}
		pp_proto_credit_return(p, pp_pushbuf_drain(&e->pb, &r->cells, buf, len), 1);
		e->st.late_matches++;
		e->user_ops++;
		if (r->got == r->msg_len && !r->wants_pull)
			pp_proto_rx_finish(e, r, 0);
		else
			pp_proto_queue_pull(p, r);
		return 0;
	}
	/* Nothing that is not here already will come from a departed peer. */
	if (src >= 0 && e->peers[src].gone)
		return -ECONNRESET;
	if (list_empty(&e->pp_proto_rx_free))
		return -ENOMEM;
	struct rx *r = container_of(e->pp_proto_rx_free.next, struct rx, q);
	list_del(&r->q);
	memset(r, 0, sizeof(*r));
	r->state = RX_POSTED;
	r->want_src = src;
	r->want_tag = tag;
	r->buf = buf;
	r->cap = len;
	r->cookie = cookie;
	pp_pushbuf_chain_init(&r->cells);
	list_add_tail(&e->posted, &r->q);
	e->user_ops++;
	pp_proto_rq_post(e, r);
	return 0;
}

int pp_proto_probe(const struct pp_proto *e, int src, int tag, struct pp_proto_cpl *cpl)
{
	for (const struct link *l = e->unexpected.next; l != &e->unexpected; l = l->next) {
		const struct rx *r = container_of(l, struct rx, q);
		if (!pp_proto_match(src, tag, r->peer, r->tag))
			continue;
		memset(cpl, 0, sizeof(*cpl));
		cpl->source = (int)r->peer;
		cpl->tag = (int)r->tag;
		cpl->len = r->msg_len;
		return 1;
	}
	return 0;
}

void pp_proto_stats(const struct pp_proto *e, struct pp_stats *st)
{
	*st = e->st;
	st->pushed_buf_bytes = e->pb.bytes;
	st->pushed_buf_peak = e->pb.peak;
}

void pp_proto_peer_gone(struct pp_proto *e, uint32_t rank)
{
	if (rank >= e->c.nranks || !e->peers[rank].present)
		return;
	e->peers[rank].gone = 1;
	for (struct link *l = e->posted.next; l != &e->posted;) {
		struct rx *r = container_of(l, struct rx, q);
		l = l->next;
		if (r->want_src == (int)rank)
			pp_proto_rx_finish(e, r, -ECONNRESET);
	}
}

int pp_proto_handoff_done(struct pp_proto *e, uint32_t dst, uint32_t msg_id, int error)
{
	if (!e || dst >= e->c.nranks || !e->peers[dst].present)
		return -EINVAL;
	struct peer *p = &e->peers[dst];
	for (struct link *l = p->sends.next; l != &p->sends; l = l->next) {
		struct send *s = container_of(l, struct send, all);
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

int pp_proto_peer_lost(const struct pp_proto *e, uint32_t rank)
{
	return rank < e->c.nranks && e->peers[rank].present && e->peers[rank].lost;
}

int pp_proto_idle(const struct pp_proto *e)
{
	if (e->user_ops)
		return 0;
	for (uint32_t r = 0; r < e->c.nranks; r++) {
		const struct peer *p = &e->peers[r];
		if (p->present && !p->lost &&
		    (pp_gbn_tx_busy(&p->tx) || (p->rx[0].owe & PP_GBN_OWE_ACK) || p->xowe ||
		     p->done_head != p->done_tail))
			return 0;
	}
	return 1;
}
