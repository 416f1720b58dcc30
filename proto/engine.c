/* SPDX-License-Identifier: BSD-3-Clause */
/* The Push-Pull engine: see engine.h for the rules it follows. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "pushbuf.h"
#include "wire.h"

#define CREDIT_SHARE_MAX 32767u /* cells; keeps 16-bit credit arithmetic sound */

/* An intrusive doubly linked list. */
struct link {
	struct link *next; /* following element, or the head */
	struct link *prev; /* preceding element, or the head */
};

#define container_of(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

static void list_init(struct link *h)
{
	h->next = h->prev = h;
}

static int list_empty(const struct link *h)
{
	return h->next == h;
}

static void list_add_tail(struct link *h, struct link *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static void list_del(struct link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

/* Work a peer owes (bit flags). */
enum owe {
	OWE_ACK = 0x01,	    /* a cumulative ack is owed, by ack_deadline */
	OWE_ACK_NOW = 0x02, /* ... and it is due now */
	OWE_NACK = 0x04,    /* a NACK for rcv_nxt is owed */
};

enum send_state {
	SEND_FREE = 0, /* in the free pool */
	SEND_ACTIVE,   /* frames being produced or acknowledged */
};

enum rx_state {
	RX_FREE = 0,   /* in the free pool */
	RX_POSTED,     /* receive posted, no message yet */
	RX_UNEXPECTED, /* message arrived, no receive yet: bytes in the pushed buffer */
	RX_ACTIVE,     /* matched: bytes go to the user buffer */
};

struct send {
	enum send_state state; /* where it is in its life */
	const uint8_t *buf;    /* the user's bytes */
	uint64_t len;	       /* message length */
	uint64_t push_end;     /* bytes pushed unasked (P) */
	uint64_t next_off;     /* next byte to put in a frame */
	uint64_t end_off;      /* bytes that may be framed now */
	uint64_t cookie;       /* caller's value */
	uint32_t peer;	       /* destination rank */
	uint32_t tag;	       /* message tag */
	uint32_t msg_id;       /* per-pair message number */
	uint32_t unacked;      /* frames sent and not acknowledged */
	uint8_t first_sent;    /* the FIRST frame is produced */
	uint8_t gen_done;      /* every frame is produced */
	uint8_t queued;	       /* on the peer's txq */
	struct link all;       /* peer's list of active sends */
	struct link q;	       /* peer's txq, or the free pool */
};

struct rx {
	enum rx_state state;	       /* where it is in its life */
	int want_src;		       /* posted: source or PP_PROTO_ANY */
	int want_tag;		       /* posted: tag or PP_PROTO_ANY */
	uint8_t *buf;		       /* user buffer (posted, active) */
	uint64_t cap;		       /* its length */
	uint64_t cookie;	       /* caller's value */
	uint32_t peer;		       /* source rank of the message */
	uint32_t tag;		       /* tag of the message */
	uint32_t msg_id;	       /* message number */
	uint64_t msg_len;	       /* message length */
	uint64_t got;		       /* bytes received so far */
	uint8_t wants_pull;	       /* sender waits for a PULL */
	uint8_t pull_queued;	       /* on the peer's pullq */
	struct pp_pushbuf_chain cells; /* pushed bytes (unexpected) */
	struct link q;		       /* posted or unexpected queue, or free pool */
	struct link by_peer;	       /* peer's list of arrived messages */
	struct link pq;		       /* peer's pullq */
};

/* One sequenced frame in the window, enough to regenerate it. */
struct desc {
	uint8_t type;	 /* PUSH, DATA or PULL */
	uint8_t flags;	 /* wire flags as first sent */
	uint16_t len;	 /* payload bytes */
	void *obj;	 /* struct send (PUSH, DATA) or struct rx (PULL) */
	uint64_t offset; /* payload position, or PULL offset */
};

struct peer {
	uint8_t mac[6];	 /* where frames to it go */
	uint8_t present; /* added with pp_proto_peer_add */
	uint8_t lost;	 /* declared lost: operations fail */
	/* TX channel (our stream to this peer). */
	uint32_t snd_una;      /* oldest unacked seq */
	uint32_t snd_nxt;      /* next new seq */
	uint32_t rtx_nxt;      /* next seq to send again when < snd_nxt */
	struct desc *ring;     /* window descriptors, indexed seq & mask */
	uint64_t rto;	       /* current timeout */
	uint64_t rto_deadline; /* when the timer fires (if frames unacked) */
	uint32_t tries;	       /* expiries without progress */
	uint32_t next_msg_id;  /* next message number to this peer */
	uint16_t credit_limit; /* cells the peer has allowed us, cumulative */
	uint16_t credit_used;  /* cells we pushed, cumulative */
	struct link sends;     /* active sends to it */
	struct link txq;       /* sends with frames to produce */
	struct link pullq;     /* receives owing it a PULL */
	/* RX channel (its stream to us). */
	uint16_t rx_stream;    /* its stream, from its last sequenced frame */
	uint32_t rcv_nxt;      /* next seq expected */
	uint32_t unacked_rx;   /* frames accepted since our last ack */
	uint32_t nacked;       /* rcv_nxt a NACK was last sent for, + 1 (0: none) */
	uint64_t ack_deadline; /* when an owed ack must go */
	uint8_t owe;	       /* enum owe bits */
	uint16_t credit_adv;   /* cells allowed to it, cumulative (advertised) */
	struct link arrived;   /* unexpected and active receives from it */
};

struct pp_proto {
	struct pp_proto_conf c;	  /* configuration */
	uint32_t maxp;		  /* payload bytes per frame */
	uint32_t wmask;		  /* window - 1 */
	uint32_t credit_share;	  /* cells each peer may hold */
	struct peer *peers;	  /* indexed by rank */
	uint32_t rr;		  /* next peer output looks at */
	struct send *sends;	  /* send pool */
	struct rx *rxs;		  /* receive pool (posted + unexpected) */
	struct link send_free;	  /* free sends */
	struct link rx_free;	  /* free receives */
	struct link posted;	  /* posted receives, in order */
	struct link unexpected;	  /* unexpected messages, in arrival order */
	uint32_t user_ops;	  /* sends + receives outstanding or unpolled */
	struct pp_proto_cpl *cpl; /* completion ring */
	uint32_t cpl_mask;	  /* ring size - 1 */
	uint32_t cpl_head;	  /* next to poll */
	uint32_t cpl_tail;	  /* next to fill */
	struct pp_pushbuf pb;	  /* the pushed buffer */
	struct pp_stats st;	  /* counters */
};

static inline int seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

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
}

int pp_proto_create(struct pp_proto **engp, const struct pp_proto_conf *c)
{
	if (!engp || !c || c->nranks == 0 || c->rank >= c->nranks || c->window == 0 ||
	    (c->window & (c->window - 1)) || c->window > 32768 || c->mtu < PP_WIRE_HDR_LEN + 64 ||
	    c->max_msgs == 0 || c->max_msgs > (1u << 24) || c->mode > PP_PROTO_PUSH_ZERO ||
	    c->rto_ns == 0 || c->rto_tries == 0 || c->ack_every == 0)
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
	if (!e->peers || !e->sends || !e->rxs || !e->cpl ||
	    pp_pushbuf_init(&e->pb, c->pushbuf_bytes)) {
		pp_proto_destroy(e);
		return -ENOMEM;
	}
	e->cpl_mask = cpl_n - 1;
	uint32_t share = c->nranks > 1 ? e->pb.ncells / (c->nranks - 1) : 0;
	e->credit_share = share > CREDIT_SHARE_MAX ? CREDIT_SHARE_MAX : share;
	list_init(&e->send_free);
	list_init(&e->rx_free);
	list_init(&e->posted);
	list_init(&e->unexpected);
	for (uint32_t i = 0; i < c->max_msgs; i++)
		list_add_tail(&e->send_free, &e->sends[i].q);
	for (uint32_t i = 0; i < 2 * c->max_msgs; i++)
		list_add_tail(&e->rx_free, &e->rxs[i].q);
	for (uint32_t r = 0; r < c->nranks; r++) {
		struct peer *p = &e->peers[r];
		list_init(&p->sends);
		list_init(&p->txq);
		list_init(&p->pullq);
		list_init(&p->arrived);
	}
	*engp = e;
	return 0;
}

void pp_proto_destroy(struct pp_proto *e)
{
	if (!e)
		return;
	if (e->peers)
		for (uint32_t r = 0; r < e->c.nranks; r++)
			free(e->peers[r].ring);
	free(e->peers);
	free(e->sends);
	free(e->rxs);
	free(e->cpl);
	pp_pushbuf_fini(&e->pb);
	free(e);
}

int pp_proto_peer_add(struct pp_proto *e, uint32_t rank, const uint8_t mac[6])
{
	if (!e || !mac || rank >= e->c.nranks || rank == e->c.rank)
		return -EINVAL;
	struct peer *p = &e->peers[rank];
	if (!p->ring) {
		/* Cold path: the window ring is the only per-peer allocation. */
		p->ring = calloc(e->c.window, sizeof(*p->ring));
		if (!p->ring)
			return -ENOMEM;
	}
	memcpy(p->mac, mac, 6);
	p->present = 1;
	p->rto = e->c.rto_ns;
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

static void send_finish(struct pp_proto *e, struct send *s, int error)
{
	complete(e, s->cookie, 1, s->peer, s->tag, s->len, error);
	if (!error)
		e->st.msgs_tx++;
	list_del(&s->all);
	if (s->queued)
		list_del(&s->q);
	s->state = SEND_FREE;
	list_add_tail(&e->send_free, &s->q);
}

static void rx_free(struct pp_proto *e, struct rx *r)
{
	if (r->state == RX_UNEXPECTED || r->state == RX_POSTED)
		list_del(&r->q);
	if (r->state == RX_UNEXPECTED || r->state == RX_ACTIVE)
		list_del(&r->by_peer);
	if (r->pull_queued) {
		list_del(&r->pq);
		r->pull_queued = 0;
	}
	r->state = RX_FREE;
	list_add_tail(&e->rx_free, &r->q);
}

static void rx_finish(struct pp_proto *e, struct rx *r, int error)
{
	if (!error && r->msg_len > r->cap)
		error = -EMSGSIZE;
	complete(e, r->cookie, 0, r->peer, r->tag, r->msg_len, error);
	if (!error || error == -EMSGSIZE)
		e->st.msgs_rx++;
	rx_free(e, r);
}

/* ---- peer loss ---- */

static void peer_lose(struct pp_proto *e, uint32_t rank)
{
	struct peer *p = &e->peers[rank];
	p->lost = 1;
	while (!list_empty(&p->sends))
		send_finish(e, container_of(p->sends.next, struct send, all), -ECONNRESET);
	while (!list_empty(&p->arrived)) {
		struct rx *r = container_of(p->arrived.next, struct rx, by_peer);
		if (r->state == RX_UNEXPECTED) {
			pp_pushbuf_drain(&e->pb, &r->cells, NULL, 0);
			rx_free(e, r);
		} else {
			rx_finish(e, r, -ECONNRESET);
		}
	}
	for (struct link *l = e->posted.next; l != &e->posted;) {
		struct rx *r = container_of(l, struct rx, q);
		l = l->next;
		if (r->want_src == (int)rank)
			rx_finish(e, r, -ECONNRESET);
	}
	p->snd_una = p->rtx_nxt = p->snd_nxt;
	p->owe = 0;
}

/* ---- user operations ---- */

int pp_proto_send(struct pp_proto *e, uint32_t dst, int tag, const void *buf, uint64_t len,
		  uint64_t cookie)
{
	if (!e || dst >= e->c.nranks || dst == e->c.rank || !e->peers[dst].present || tag < 0 ||
	    (!buf && len))
		return -EINVAL;
	struct peer *p = &e->peers[dst];
	if (p->lost)
		return -ECONNRESET;
	if (e->user_ops >= 2 * e->c.max_msgs || list_empty(&e->send_free))
		return -ENOMEM;
	struct send *s = container_of(e->send_free.next, struct send, q);
	list_del(&s->q);
	uint64_t push = len;
	if (e->c.mode == PP_PROTO_PUSH_PULL && len > (uint64_t)e->c.btp1 + e->c.btp2)
		push = (uint64_t)e->c.btp1 + e->c.btp2;
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
	list_add_tail(&p->sends, &s->all);
	list_add_tail(&p->txq, &s->q);
	e->user_ops++;
	return 0;
}

static int rx_matches(const struct rx *posted, uint32_t src, uint32_t tag)
{
	return (posted->want_src == PP_PROTO_ANY || posted->want_src == (int)src) &&
	       (posted->want_tag == PP_PROTO_ANY || posted->want_tag == (int)tag);
}

static void queue_pull(struct peer *p, struct rx *r)
{
	if (r->wants_pull && !r->pull_queued && r->got < r->msg_len) {
		r->pull_queued = 1;
		r->wants_pull = 0;
		list_add_tail(&p->pullq, &r->pq);
	}
}

static void owe_ack(struct pp_proto *e, struct peer *p, uint64_t now)
{
	if (!(p->owe & OWE_ACK)) {
		p->owe |= OWE_ACK;
		p->ack_deadline = now + e->c.ack_delay_ns;
	}
}

int pp_proto_recv(struct pp_proto *e, int src, int tag, void *buf, uint64_t len, uint64_t cookie)
{
	if (!e || src < PP_PROTO_ANY || (src >= 0 && (uint32_t)src >= e->c.nranks) ||
	    tag < PP_PROTO_ANY || (!buf && len))
		return -EINVAL;
	if (src >= 0 && e->peers[src].lost)
		return -ECONNRESET;
	if (e->user_ops >= 2 * e->c.max_msgs)
		return -ENOMEM;
	for (struct link *l = e->unexpected.next; l != &e->unexpected; l = l->next) {
		struct rx *r = container_of(l, struct rx, q);
		if ((src != PP_PROTO_ANY && (uint32_t)src != r->peer) ||
		    (tag != PP_PROTO_ANY && (uint32_t)tag != r->tag))
			continue;
		/* Late receiver: copy the pushed bytes once, then pull the rest. */
		struct peer *p = &e->peers[r->peer];
		list_del(&r->q);
		r->state = RX_ACTIVE;
		r->buf = buf;
		r->cap = len;
		r->cookie = cookie;
		uint32_t cells = pp_pushbuf_drain(&e->pb, &r->cells, buf, len);
		p->credit_adv = (uint16_t)(p->credit_adv + cells);
		if (cells && !(p->owe & OWE_ACK)) {
			p->owe |= OWE_ACK; /* the credit update goes out soon */
			p->ack_deadline = 0;
		}
		e->st.late_matches++;
		e->user_ops++;
		if (r->got == r->msg_len && !r->wants_pull)
			rx_finish(e, r, 0);
		else
			queue_pull(p, r);
		return 0;
	}
	if (list_empty(&e->rx_free))
		return -ENOMEM;
	struct rx *r = container_of(e->rx_free.next, struct rx, q);
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
	return 0;
}

int pp_proto_probe(const struct pp_proto *e, int src, int tag, struct pp_proto_cpl *cpl)
{
	for (const struct link *l = e->unexpected.next; l != &e->unexpected; l = l->next) {
		const struct rx *r = container_of(l, struct rx, q);
		if ((src != PP_PROTO_ANY && (uint32_t)src != r->peer) ||
		    (tag != PP_PROTO_ANY && (uint32_t)tag != r->tag))
			continue;
		memset(cpl, 0, sizeof(*cpl));
		cpl->source = (int)r->peer;
		cpl->tag = (int)r->tag;
		cpl->len = r->msg_len;
		return 1;
	}
	return 0;
}

/* ---- receive path ---- */

static void ack_release(struct pp_proto *e, struct peer *p, uint32_t ack, uint64_t now)
{
	if (!seq_lt(p->snd_una, ack) || seq_lt(p->snd_nxt, ack))
		return;
	while (p->snd_una != ack) {
		struct desc *d = &p->ring[p->snd_una & e->wmask];
		p->snd_una++;
		if (d->type == PP_WIRE_PULL)
			continue;
		struct send *s = d->obj;
		if (--s->unacked == 0 && s->gen_done)
			send_finish(e, s, 0);
	}
	if (seq_lt(p->rtx_nxt, p->snd_una))
		p->rtx_nxt = p->snd_una;
	p->rto = e->c.rto_ns;
	p->tries = 0;
	p->rto_deadline = now + p->rto;
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

static void place(struct pp_proto *e, struct rx *r, uint64_t off, const uint8_t *pl, uint32_t n)
{
	if (off < r->cap) {
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
		} else {
			if (list_empty(&e->rx_free))
				return PP_DROP_STATE + 1;
			if (h->payload_len && e->pb.nfree < pp_pushbuf_cells(h->payload_len))
				return PP_DROP_NOBUF + 1;
			r = container_of(e->rx_free.next, struct rx, q);
			list_del(&r->q);
			memset(r, 0, sizeof(*r));
			pp_pushbuf_chain_init(&r->cells);
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
	} else {
		r = find_arrived(p, h->msg_id);
		if (!r || r->msg_len != h->msg_len || h->offset != r->got ||
		    (h->type == PP_WIRE_DATA && r->state != RX_ACTIVE)) {
			if (h->type == PP_WIRE_PUSH) /* the sender counted its cells */
				p->credit_adv =
				    (uint16_t)(p->credit_adv + pp_pushbuf_cells(h->payload_len));
			e->st.drops[PP_DROP_STATE]++;
			return 0; /* accepted in sequence, fits nothing */
		}
	}
	uint32_t cells = pp_pushbuf_cells(h->payload_len);
	if (r->state == RX_UNEXPECTED) {
		if (pp_pushbuf_append(&e->pb, &r->cells, pl, h->payload_len)) {
			if (h->flags & PP_WIRE_F_FIRST)
				rx_free(e, r);
			return PP_DROP_NOBUF + 1;
		}
		r->got += h->payload_len;
	} else {
		place(e, r, h->offset, pl, h->payload_len);
		if (h->type == PP_WIRE_PUSH)
			p->credit_adv = (uint16_t)(p->credit_adv + cells);
	}
	e->st.bytes_rx += h->payload_len;
	if (r->state == RX_ACTIVE) {
		if (r->got == r->msg_len)
			rx_finish(e, r, 0);
		else
			queue_pull(p, r);
	}
	return 0;
}

static void rx_pull(struct pp_proto *e, struct peer *p, const struct pp_wire_hdr *h)
{
	for (struct link *l = p->sends.next; l != &p->sends; l = l->next) {
		struct send *s = container_of(l, struct send, all);
		if (s->msg_id != h->msg_id)
			continue;
		if (s->len != h->msg_len || s->end_off == s->len) {
			e->st.drops[PP_DROP_STATE]++;
			return;
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

int pp_proto_input(struct pp_proto *e, const uint8_t *frame, size_t len, uint64_t now)
{
	struct pp_wire_hdr h;
	const uint8_t *pl;
	enum pp_drop_reason why;
	struct pp_wire_check chk = {e->c.job, e->c.rank, e->c.nranks, e->c.mtu};
	e->st.frames_rx++;
	if (pp_wire_decode(frame, len, &chk, &h, &pl, &why)) {
		e->st.drops[why]++;
		return -EPROTO;
	}
	if (h.type == PP_WIRE_HELLO || h.type == PP_WIRE_BYE)
		return 0; /* discovery and goodbye belong to the runtime */
	struct peer *p = &e->peers[h.src_rank];
	if (!p->present || p->lost) {
		e->st.drops[PP_DROP_STATE]++;
		return -EPROTO;
	}
	/* Every authentic frame carries the peer's ack and credit. */
	if ((int16_t)(h.credit - p->credit_limit) > 0)
		p->credit_limit = h.credit;
	if (h.ack_stream == e->c.stream)
		ack_release(e, p, h.ack, now);
	switch (h.type) {
	case PP_WIRE_ACK:
		/* A standalone ack shows the peer alive even without progress
		 * (it refused a frame for lack of room): it is not lost. */
		if (h.ack_stream == e->c.stream)
			p->tries = 0;
		return 0;
	case PP_WIRE_NACK:
		if (h.ack_stream == e->c.stream && !seq_lt(h.seq, p->snd_una) &&
		    seq_lt(h.seq, p->rtx_nxt))
			p->rtx_nxt = h.seq; /* go back */
		return 0;
	default:
		break;
	}
	/* Sequenced: PUSH, PULL, DATA. */
	if (h.seq != p->rcv_nxt) {
		e->st.drops[PP_DROP_DUP]++;
		if (seq_lt(h.seq, p->rcv_nxt)) {
			p->owe |= OWE_ACK | OWE_ACK_NOW; /* re-ack a duplicate */
		} else if (p->nacked != p->rcv_nxt + 1) {
			p->owe |= OWE_NACK;
			p->nacked = p->rcv_nxt + 1;
		}
		return -EPROTO;
	}
	int rc = 0;
	if (h.type == PP_WIRE_PULL)
		rx_pull(e, p, &h);
	else
		rc = rx_push(e, p, h.src_rank, &h, pl);
	if (rc) {
		/* No room now: the frame comes again; say we are alive. */
		e->st.drops[rc - 1]++;
		p->rx_stream = h.stream;
		p->owe |= OWE_ACK | OWE_ACK_NOW;
		return -EPROTO;
	}
	p->rx_stream = h.stream;
	p->rcv_nxt++;
	p->nacked = 0;
	owe_ack(e, p, now);
	if (++p->unacked_rx >= e->c.ack_every)
		p->owe |= OWE_ACK_NOW;
	return 0;
}

/* ---- transmit path ---- */

static uint32_t push_cells(const struct pp_proto *e, uint64_t push)
{
	uint64_t first = push;
	if (e->c.mode == PP_PROTO_PUSH_PULL && first > e->c.btp1)
		first = e->c.btp1;
	if (first > e->maxp)
		first = e->maxp;
	uint64_t rest = push - first;
	uint64_t cells = pp_pushbuf_cells(first) + (rest / e->maxp) * pp_pushbuf_cells(e->maxp) +
			 pp_pushbuf_cells(rest % e->maxp);
	return cells > UINT16_MAX ? UINT16_MAX : (uint32_t)cells;
}

static void hdr_common(const struct pp_proto *e, const struct peer *p, uint32_t rank,
		       struct pp_wire_hdr *h)
{
	h->job = e->c.job;
	h->stream = e->c.stream;
	h->ack_stream = p->rx_stream;
	h->ack = p->rcv_nxt;
	h->credit = p->credit_adv;
	h->src_rank = e->c.rank;
	h->dst_rank = rank;
}

/* Encode the frame of descriptor d with sequence seq. */
static int emit_desc(struct pp_proto *e, struct peer *p, uint32_t rank, const struct desc *d,
		     uint32_t seq, uint8_t extra, uint8_t *buf, size_t cap)
{
	struct pp_wire_hdr h;
	const void *pl = NULL;
	memset(&h, 0, sizeof(h));
	hdr_common(e, p, rank, &h);
	h.type = d->type;
	h.flags = d->flags | extra;
	h.seq = seq;
	h.offset = d->offset;
	if (d->type == PP_WIRE_PULL) {
		const struct rx *r = d->obj;
		h.msg_id = r->msg_id;
		h.tag = r->tag;
		h.msg_len = r->msg_len;
	} else {
		const struct send *s = d->obj;
		h.msg_id = s->msg_id;
		h.tag = s->tag;
		h.msg_len = s->len;
		h.payload_len = d->len;
		pl = s->buf + d->offset;
		e->st.bytes_tx += d->len;
	}
	p->owe &= (uint8_t) ~(OWE_ACK | OWE_ACK_NOW);
	p->unacked_rx = 0;
	return pp_wire_encode(buf, cap, p->mac, e->c.mac, &h, pl);
}

static int emit_ctl(struct pp_proto *e, struct peer *p, uint32_t rank, uint8_t type, uint8_t *buf,
		    size_t cap)
{
	struct pp_wire_hdr h;
	memset(&h, 0, sizeof(h));
	hdr_common(e, p, rank, &h);
	h.type = type;
	h.seq = p->rcv_nxt;
	p->owe &= (uint8_t) ~(OWE_ACK | OWE_ACK_NOW);
	p->unacked_rx = 0;
	return pp_wire_encode(buf, cap, p->mac, e->c.mac, &h, NULL);
}

/* Take the next frame of the send at the head of txq into d. */
static void next_frame(struct pp_proto *e, struct peer *p, struct send *s, struct desc *d)
{
	uint64_t off = s->next_off, n;
	uint8_t flags = 0;
	if (!s->first_sent) {
		if (e->c.credits && s->push_end) {
			uint32_t need = push_cells(e, s->push_end);
			uint16_t avail = (uint16_t)(p->credit_limit - p->credit_used);
			if (need > avail || need > CREDIT_SHARE_MAX) {
				s->push_end = 0; /* degrade to Push-Zero */
				s->end_off = 0;
				e->st.push_degraded++;
			} else {
				p->credit_used = (uint16_t)(p->credit_used + need);
			}
		}
		n = s->push_end;
		if (e->c.mode == PP_PROTO_PUSH_PULL && n > e->c.btp1)
			n = e->c.btp1;
		if (n > e->maxp)
			n = e->maxp;
		flags = PP_WIRE_F_FIRST;
		if (s->push_end < s->len)
			flags |= PP_WIRE_F_PULL;
		s->first_sent = 1;
	} else {
		uint64_t lim = off < s->push_end ? s->push_end : s->end_off;
		n = lim - off;
		if (n > e->maxp)
			n = e->maxp;
	}
	if (off + n == s->len)
		flags |= PP_WIRE_F_LAST;
	d->type = off < s->push_end || (flags & PP_WIRE_F_FIRST) ? PP_WIRE_PUSH : PP_WIRE_DATA;
	d->flags = flags;
	d->len = (uint16_t)n;
	d->obj = s;
	d->offset = off;
	s->next_off = off + n;
	s->unacked++;
	if (s->next_off == s->len)
		s->gen_done = 1;
	list_del(&s->q);
	if (s->next_off < s->end_off)
		list_add_tail(&p->txq, &s->q); /* round robin between messages */
	else
		s->queued = 0;
}

static int peer_output(struct pp_proto *e, uint32_t rank, uint8_t *buf, size_t cap, uint64_t now)
{
	struct peer *p = &e->peers[rank];
	if (seq_lt(p->rtx_nxt, p->snd_nxt)) {
		uint32_t seq = p->rtx_nxt++;
		e->st.retransmits++;
		if (p->rtx_nxt == p->snd_nxt)
			p->rto_deadline = now + p->rto;
		return emit_desc(e, p, rank, &p->ring[seq & e->wmask], seq, PP_WIRE_F_RETX, buf,
				 cap);
	}
	if (p->owe & OWE_NACK) {
		p->owe &= (uint8_t)~OWE_NACK;
		e->st.nacks_tx++;
		return emit_ctl(e, p, rank, PP_WIRE_NACK, buf, cap);
	}
	int open = p->snd_nxt - p->snd_una < e->c.window;
	if (open && (!list_empty(&p->pullq) || !list_empty(&p->txq))) {
		struct desc *d = &p->ring[p->snd_nxt & e->wmask];
		if (!list_empty(&p->pullq)) {
			struct rx *r = container_of(p->pullq.next, struct rx, pq);
			list_del(&r->pq);
			r->pull_queued = 0;
			d->type = PP_WIRE_PULL;
			d->flags = 0;
			d->len = 0;
			d->obj = r;
			d->offset = r->got;
			e->st.pulls_tx++;
		} else {
			next_frame(e, p, container_of(p->txq.next, struct send, q), d);
		}
		if (p->snd_una == p->snd_nxt)
			p->rto_deadline = now + p->rto;
		uint32_t seq = p->snd_nxt++;
		p->rtx_nxt = p->snd_nxt;
		return emit_desc(e, p, rank, d, seq, 0, buf, cap);
	}
	if ((p->owe & OWE_ACK) && ((p->owe & OWE_ACK_NOW) || now >= p->ack_deadline)) {
		e->st.acks_tx++;
		return emit_ctl(e, p, rank, PP_WIRE_ACK, buf, cap);
	}
	return 0;
}

int pp_proto_output(struct pp_proto *e, uint8_t *buf, size_t cap, uint64_t now)
{
	if (cap < (size_t)e->c.mtu + PP_WIRE_ETH_LEN)
		return -ENOSPC;
	uint32_t n = e->c.nranks;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t rank = (e->rr + i) % n;
		struct peer *p = &e->peers[rank];
		if (!p->present || p->lost)
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

/* ---- timers ---- */

uint64_t pp_proto_expiry(const struct pp_proto *e)
{
	uint64_t t = UINT64_MAX;
	for (uint32_t r = 0; r < e->c.nranks; r++) {
		const struct peer *p = &e->peers[r];
		if (!p->present || p->lost)
			continue;
		if (p->snd_una != p->snd_nxt && p->rto_deadline < t)
			t = p->rto_deadline;
		if ((p->owe & OWE_ACK) && !(p->owe & OWE_ACK_NOW) && p->ack_deadline < t)
			t = p->ack_deadline;
	}
	return t;
}

void pp_proto_handle_expiry(struct pp_proto *e, uint64_t now)
{
	for (uint32_t r = 0; r < e->c.nranks; r++) {
		struct peer *p = &e->peers[r];
		if (!p->present || p->lost)
			continue;
		if ((p->owe & OWE_ACK) && now >= p->ack_deadline)
			p->owe |= OWE_ACK_NOW;
		if (p->snd_una == p->snd_nxt || now < p->rto_deadline)
			continue;
		if (++p->tries > e->c.rto_tries) {
			peer_lose(e, r);
			continue;
		}
		p->rto = p->rto * 2 > e->c.rto_max_ns ? e->c.rto_max_ns : p->rto * 2;
		p->rto_deadline = now + p->rto;
		p->rtx_nxt = p->snd_una; /* go back */
	}
}

void pp_proto_stats(const struct pp_proto *e, struct pp_stats *st)
{
	*st = e->st;
	st->pushed_buf_bytes = e->pb.bytes;
	st->pushed_buf_peak = e->pb.peak;
}

int pp_proto_idle(const struct pp_proto *e)
{
	if (e->user_ops)
		return 0;
	for (uint32_t r = 0; r < e->c.nranks; r++) {
		const struct peer *p = &e->peers[r];
		if (p->present && !p->lost && (p->snd_una != p->snd_nxt || (p->owe & OWE_ACK)))
			return 0;
	}
	return 1;
}
