/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RMA (fi_rma.h) and the transport of atomics: the initiator's requests and
 * the target's service, over the engine's tagged messages (rma.h has the
 * protocol). Records come from pools made at fi_enable: PP_FI_QUEUE
 * initiator operations, as many served requests, PP_FI_RMA_HDRS request
 * receives; none is allocated on the way (but the copy of an FI_INJECT
 * write too large to travel inline).
 *
 * Engine cookies: a record's address with bit 0 set (pp_fi_op records,
 * ep.c's, are aligned and have it clear) and the part of the record's work
 * in bits 1-2.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "rma.h"

#define HDR	sizeof(struct pp_fi_rma_hdr)
#define REQ_MAX (HDR + PP_FI_RMA_INLINE) /* the largest request */
_Static_assert(PP_FI_RMA_INLINE >= 2 * PP_FI_ATOMIC_MAX, "atomic operands travel inline");

#define ERR_SHIFT 32
#define ERR_BITS  (0xffffull << ERR_SHIFT)
#define ID_BITS	  0xffffffffull

/* Parts of a record's work (cookie bits 1-2). */
enum part {
	P_RESP = 0, /* initiator: the RESP receive */
	P_REQ = 1,  /* initiator: the request send; target: a REQ receive */
	P_DATA = 2, /* initiator: the DATA send; target: the DATA receive */
	P_ANS = 3,  /* target: the RESP send */
};

/* An initiator's operation. */
struct ini {
	alignas(8) uint32_t id; /* index | generation << 16: the RESP and DATA tags */
	uint32_t dst;		/* the target's rank */
	int pending;		/* engine operations not completed */
	int err;		/* FI_E* of the first failure, 0 */
	int report;		/* a completion on success */
	int dead;		/* the call failed: no completion at all */
	void *context;		/* the application's */
	uint64_t cqflags;	/* FI_RMA or FI_ATOMIC, FI_READ or FI_WRITE */
	uint64_t rlen;		/* bytes the answer must have */
	const void *data;	/* a large write's payload (DATA) */
	uint64_t data_len;	/* its length */
	void *bounce;		/* an FI_INJECT payload's copy, beyond inline */
	struct ini *next;	/* free list, owed DATA sends */
	uint64_t msg_len;	/* bytes of msg sent */
	union {
		struct pp_fi_rma_hdr h;
		uint8_t b[REQ_MAX];
	} msg; /* the request */
};

/* A request the target serves. */
struct srv {
	alignas(8) uint32_t src;       /* the initiator's rank */
	uint32_t id;		       /* its record */
	int err;		       /* FI_E* answered, 0 */
	uint64_t want;		       /* a large write: the bytes its DATA must have */
	const void *ans;	       /* the answer's bytes (a read's, old values) */
	uint64_t ans_len;	       /* their length */
	struct srv *next;	       /* free list, owed answers */
	uint8_t old[PP_FI_ATOMIC_MAX]; /* a fetching atomic's old values */
};

/* A posted REQ receive. */
struct slot {
	alignas(8) uint8_t buf[REQ_MAX]; /* the request */
	struct pp_proto_cpl cpl;	 /* its completion */
	struct slot *next;		 /* ready or idle list */
};

struct pp_fi_rma_ep {
	struct ini *ini;		  /* PP_FI_QUEUE initiator records */
	struct ini *ini_free;		  /* free ones */
	struct ini *ini_owed;		  /* DATA sends the engine had no room for */
	struct srv *srv;		  /* PP_FI_QUEUE served requests */
	struct srv *srv_free;		  /* free ones */
	struct srv *srv_owed;		  /* answers the engine had no room for */
	struct slot *slots;		  /* PP_FI_RMA_HDRS REQ receives */
	struct slot *ready, **ready_tail; /* arrived requests, in order */
	struct slot *idle;		  /* not posted (the engine was full) */
	uint16_t gen;			  /* initiator ids' generation */
};

static uint64_t cookie(const void *rec, enum part p)
{
	return (uint64_t)(uintptr_t)rec | (uint64_t)p << 1 | 1u;
}

/* The engine's error as the FI_E* of a completion: a lost peer, or bytes
 * that are not what the request asked. */
static int fi_errno(int e)
{
	return e == -ECANCELED ? FI_ECANCELED : FI_EIO;
}

static int is_full(int rc)
{
	return rc == -EAGAIN || rc == -ENOMEM;
}

/* ---- initiator ---- */

static void ini_put(struct pp_fi_rma_ep *r, struct ini *o)
{
	free(o->bounce);
	o->bounce = NULL;
	o->next = r->ini_free;
	r->ini_free = o;
}

/* Every engine operation of o completed: its CQ entry, and the record back. */
static void ini_finish(struct pp_fi_ep *ep, struct ini *o)
{
	struct pp_fi_cq *cq = ep->tx_cq;
	if (!o->dead && cq && o->err) {
		struct pp_fi_cqerr e = {.src = FI_ADDR_NOTAVAIL};
		e.e.op_context = o->context;
		e.e.flags = o->cqflags;
		e.e.err = o->err;
		e.e.prov_errno = o->err;
		pp_fi_cq_write_err(cq, &e);
	} else if (!o->dead && cq && o->report) {
		struct pp_fi_cqe e = {.src = FI_ADDR_NOTAVAIL};
		e.e.op_context = o->context;
		e.e.flags = o->cqflags;
		pp_fi_cq_write(cq, &e);
	}
	ini_put(ep->rma, o);
}

static void ini_cpl(struct pp_fi_ep *ep, struct ini *o, enum part p, const struct pp_proto_cpl *c)
{
	int err = 0;
	if (c->error)
		err = fi_errno(c->error);
	else if (p == P_RESP && (c->tag & PP_FI_RMA_ERR))
		err = (int)((c->tag & ERR_BITS) >> ERR_SHIFT);
	else if (p == P_RESP && c->len != o->rlen)
		err = FI_EIO; /* the target answered the wrong bytes */
	if (err && !o->err)
		o->err = err;
	if (--o->pending == 0)
		ini_finish(ep, o);
}

/* Send o's DATA, or owe it. Touches o only when it is still pending. */
static void ini_send_data(struct pp_fi_ep *ep, struct ini *o)
{
	o->pending++;
	int rc = pp_embed_send(ep->rt, o->dst, PP_FI_RMA_DATA | o->id, o->data, o->data_len,
			       cookie(o, P_DATA));
	if (rc == 0)
		return;
	o->pending--;
	if (is_full(rc)) {
		o->next = ep->rma->ini_owed;
		ep->rma->ini_owed = o;
	} else {
		/* The target waits for the DATA in vain (the peer is gone): the
		 * answer will not come either, so its receive is taken back. */
		o->err = fi_errno(rc);
		if (o->pending == 0)
			ini_finish(ep, o);
		else
			pp_embed_cancel(ep->rt, cookie(o, P_RESP));
	}
}

ssize_t pp_fi_rma_submit(struct pp_fi_ep *ep, const struct pp_fi_rma_call *call)
{
	int atomic = call->op == PP_FI_RMA_ATOMIC;
	uint64_t f = call->flags;
	if (!(ep->caps & (atomic ? FI_ATOMIC : FI_RMA)))
		return -FI_EOPNOTSUPP;
	if (f & FI_REMOTE_CQ_DATA)
		return -FI_EINVAL; /* cq_data_size is 0 */
	if (call->len > PP_FI_MAX_MSG || ((f & FI_INJECT) && call->len > PP_FI_INJECT))
		return -FI_EMSGSIZE;
	if (call->len && !(call->op == PP_FI_RMA_READ ? call->result : call->buf) &&
	    !(atomic && call->aop == FI_ATOMIC_READ))
		return -FI_EINVAL;
	ssize_t rc = 0;
	pp_fi_lock(ep->dom);
	struct pp_fi_rma_ep *r = ep->rma;
	int rank = pp_fi_av_rank(ep->av, call->dest);
	struct ini *o = NULL;
	if (!ep->rt || !r)
		rc = -FI_EOPBADSTATE;
	else if (rank < 0)
		rc = -FI_EINVAL;
	else if (!(o = r->ini_free))
		rc = -FI_EAGAIN;
	if (rc)
		goto out;
	r->ini_free = o->next;
	uint32_t idx = (uint32_t)(o - r->ini);
	o->id = idx | (uint32_t)++r->gen << 16;
	o->dst = (uint32_t)rank;
	o->pending = 0;
	o->err = 0;
	o->dead = 0;
	o->context = call->context;
	o->report = !(f & FI_INJECT) && (!ep->tx_selective || (f & FI_COMPLETION));
	o->data = NULL;
	o->data_len = 0;

	struct pp_fi_rma_hdr *h = &o->msg.h;
	memset(h, 0, sizeof(*h));
	h->op = (uint8_t)call->op;
	h->id = o->id;
	h->key = call->key;
	h->addr = call->addr;
	h->len = call->len;
	o->msg_len = HDR;
	void *rbuf = NULL;
	o->rlen = 0;
	if (call->op == PP_FI_RMA_WRITE) {
		o->cqflags = FI_RMA | FI_WRITE;
		if (call->len <= PP_FI_RMA_INLINE) {
			h->flags = PP_FI_RMA_F_INLINE;
			if (call->len)
				memcpy(o->msg.b + HDR, call->buf, call->len);
			o->msg_len += call->len;
		} else if (f & FI_INJECT) {
			if (!(o->bounce = malloc(call->len))) {
				ini_put(r, o);
				rc = -FI_EAGAIN;
				goto out;
			}
			o->data = memcpy(o->bounce, call->buf, call->len);
			o->data_len = call->len;
		} else {
			o->data = call->buf;
			o->data_len = call->len;
		}
	} else if (call->op == PP_FI_RMA_READ) {
		o->cqflags = FI_RMA | FI_READ;
		rbuf = call->result;
		o->rlen = call->len;
	} else {
		int fetch = !!(f & (FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC));
		o->cqflags = FI_ATOMIC | (fetch ? FI_READ : FI_WRITE);
		h->aop = (uint8_t)call->aop;
		h->dt = (uint8_t)call->dt;
		h->flags = (fetch ? PP_FI_RMA_F_FETCH : 0) |
			   (f & FI_COMPARE_ATOMIC ? PP_FI_RMA_F_COMPARE : 0);
		if (call->buf && call->len)
			memcpy(o->msg.b + o->msg_len, call->buf, call->len);
		o->msg_len += call->aop == FI_ATOMIC_READ ? 0 : call->len;
		if (f & FI_COMPARE_ATOMIC) {
			memcpy(o->msg.b + o->msg_len, call->compare, call->len);
			o->msg_len += call->len;
		}
		if (fetch) {
			rbuf = call->result;
			o->rlen = call->len;
		}
	}

	/* The answer's receive first: it may come before the send completes. */
	o->pending = 1;
	int e = pp_embed_recv(ep->rt, rank, PP_FI_RMA_RESP | o->id, PP_FI_RMA_ERR | ERR_BITS, rbuf,
			      o->rlen, cookie(o, P_RESP));
	if (e) {
		ini_put(r, o);
		rc = pp_fi_err(e);
		goto out;
	}
	o->pending++;
	e = pp_embed_send(ep->rt, (uint32_t)rank, PP_FI_RMA_REQ, o->msg.b, o->msg_len,
			  cookie(o, P_REQ));
	if (e) {
		/* Nothing went out: take the receive back; its cancelled
		 * completion frees the record. */
		o->pending--;
		o->dead = 1;
		if (pp_embed_cancel(ep->rt, cookie(o, P_RESP)))
			PP_FI_WARN(FI_LOG_EP_DATA, "RMA answer receive not taken back\n");
		rc = pp_fi_err(e);
		goto out;
	}
	if (o->data)
		ini_send_data(ep, o); /* the last use of o here: it may complete inside */
out:
	if (rc == -FI_EAGAIN && ep->rt)
		pp_embed_progress(ep->rt); /* full: let what is in flight move on */
	pp_fi_unlock(ep->dom);
	return rc;
}

/* ---- target ---- */

static void slot_post(struct pp_fi_ep *ep, struct slot *s)
{
	if (pp_embed_recv(ep->rt, PP_PROTO_ANY, PP_FI_RMA_REQ, 0, s->buf, REQ_MAX,
			  cookie(s, P_REQ))) {
		s->next = ep->rma->idle;
		ep->rma->idle = s;
	}
}

static void srv_put(struct pp_fi_rma_ep *r, struct srv *s)
{
	s->next = r->srv_free;
	r->srv_free = s;
}

/* Queue s's answer; flush() sends it. */
static void srv_answer(struct pp_fi_rma_ep *r, struct srv *s)
{
	s->next = r->srv_owed;
	r->srv_owed = s;
}

/* Send the answers and DATA the engine had no room for, while it has. */
static void flush(struct pp_fi_ep *ep)
{
	struct pp_fi_rma_ep *r = ep->rma;
	while (r->srv_owed) {
		struct srv *s = r->srv_owed;
		uint64_t tag = PP_FI_RMA_RESP | s->id;
		if (s->err)
			tag |= PP_FI_RMA_ERR | (uint64_t)(s->err & 0xffff) << ERR_SHIFT;
		r->srv_owed = s->next;
		int rc = pp_embed_send(ep->rt, s->src, tag, s->err ? NULL : s->ans,
				       s->err ? 0 : s->ans_len, cookie(s, P_ANS));
		if (is_full(rc)) {
			s->next = r->srv_owed;
			r->srv_owed = s;
			return;
		}
		if (rc)
			srv_put(r, s); /* the initiator is gone */
	}
	while (r->ini_owed) {
		struct ini *o = r->ini_owed;
		r->ini_owed = o->next;
		ini_send_data(ep, o);
		if (r->ini_owed == o)
			return; /* owed again: still full */
	}
}

/* Apply an atomic request: 0, or the FI_E* to answer. */
static int serve_atomic(struct pp_fi_ep *ep, const struct pp_fi_rma_hdr *h, const uint8_t *ops,
			uint64_t got, struct srv *s)
{
	uint64_t cls = h->flags & PP_FI_RMA_F_COMPARE ? FI_COMPARE_ATOMIC
		       : h->flags & PP_FI_RMA_F_FETCH ? FI_FETCH_ATOMIC
						      : 0;
	enum fi_datatype dt = h->dt;
	enum fi_op op = h->aop;
	size_t size = pp_fi_atomic_size(dt);
	if (pp_fi_atomic_check(dt, op, cls))
		return FI_EOPNOTSUPP;
	uint64_t operands = (op == FI_ATOMIC_READ ? 0 : 1) + (cls == FI_COMPARE_ATOMIC ? 1 : 0);
	if (h->len > PP_FI_ATOMIC_MAX || h->len % size || got != HDR + operands * h->len)
		return FI_EINVAL;
	uint64_t need = (op == FI_ATOMIC_READ ? 0 : FI_REMOTE_WRITE) | (cls ? FI_REMOTE_READ : 0);
	uint8_t *p;
	int rc = pp_fi_mr_check(ep->dom, h->key, h->addr, h->len, need, &p);
	if (rc)
		return -rc;
	if ((uintptr_t)p % size)
		return FI_EINVAL; /* elements must be aligned to be atomic */
	const uint8_t *operand = op == FI_ATOMIC_READ ? NULL : ops;
	const uint8_t *compare = cls == FI_COMPARE_ATOMIC ? ops + h->len : NULL;
	pp_fi_atomic_apply(dt, op, p, operand, compare, cls ? s->old : NULL, h->len / size);
	if (cls) {
		s->ans = s->old;
		s->ans_len = h->len;
	}
	return 0;
}

/* Serve one arrived request: 0 when done with its slot, -FI_EAGAIN when it
 * must wait (no record, the engine full). */
static int serve(struct pp_fi_ep *ep, struct slot *sl)
{
	struct pp_fi_rma_ep *r = ep->rma;
	const struct pp_proto_cpl *c = &sl->cpl;
	if ((c->error && c->error != -EMSGSIZE) || c->len < HDR)
		return 0; /* a lost peer's, or no request at all: nothing to answer */
	struct srv *s = r->srv_free;
	if (!s)
		return -FI_EAGAIN;
	struct pp_fi_rma_hdr h;
	memcpy(&h, sl->buf, HDR);
	const uint8_t *payload = sl->buf + HDR;
	uint64_t got = c->error ? UINT64_MAX : c->len; /* a longer one is no request of ours */
	uint8_t *p = NULL;
	s->src = (uint32_t)c->source;
	s->id = h.id;
	s->ans = NULL;
	s->ans_len = 0;
	int err = 0;
	switch (h.op) {
	case PP_FI_RMA_WRITE:
		if (h.flags & PP_FI_RMA_F_INLINE) {
			if (h.len > PP_FI_RMA_INLINE || got != HDR + h.len)
				err = FI_EINVAL;
			else if (!(err = -pp_fi_mr_check(ep->dom, h.key, h.addr, h.len,
							 FI_REMOTE_WRITE, &p)) &&
				 h.len)
				memcpy(p, payload, h.len);
			break;
		}
		if (got != HDR) {
			err = FI_EINVAL;
			break; /* its DATA, if any, stays unexpected: no id to trust */
		}
		/* The payload goes straight to its place, or, refused, nowhere
		 * (a receive of 0 bytes drops it); the answer follows. */
		err = -pp_fi_mr_check(ep->dom, h.key, h.addr, h.len, FI_REMOTE_WRITE, &p);
		s->err = err;
		s->want = h.len;
		int rc = pp_embed_recv(ep->rt, c->source, PP_FI_RMA_DATA | h.id, 0, err ? NULL : p,
				       err ? 0 : h.len, cookie(s, P_DATA));
		if (rc)
			return is_full(rc) ? -FI_EAGAIN : 0;
		r->srv_free = s->next;
		return 0;
	case PP_FI_RMA_READ:
		if (got != HDR)
			err = FI_EINVAL;
		else if (!(err = -pp_fi_mr_check(ep->dom, h.key, h.addr, h.len, FI_REMOTE_READ,
						 &p))) {
			s->ans = p;
			s->ans_len = h.len;
		}
		break;
	case PP_FI_RMA_ATOMIC:
		err = serve_atomic(ep, &h, payload, got, s);
		break;
	default:
		err = FI_EINVAL;
		break;
	}
	r->srv_free = s->next;
	s->err = err;
	srv_answer(r, s);
	return 0;
}

static void srv_cpl(struct pp_fi_ep *ep, struct srv *s, enum part p, const struct pp_proto_cpl *c)
{
	struct pp_fi_rma_ep *r = ep->rma;
	if (p == P_ANS) {
		srv_put(r, s);
		return;
	}
	/* P_DATA: the payload is in place (or was refused); answer. */
	if (c->error == -ECONNRESET) {
		srv_put(r, s);
		return;
	}
	if (!s->err && (c->error || c->len != s->want))
		s->err = FI_EINVAL; /* not as long as the request said */
	srv_answer(r, s);
}

/* ---- the endpoint's hooks ---- */

void pp_fi_rma_cpl(struct pp_fi_ep *ep, const struct pp_proto_cpl *c)
{
	struct pp_fi_rma_ep *r = ep->rma;
	uintptr_t a = (uintptr_t)c->cookie & ~(uintptr_t)7;
	enum part p = (enum part)((c->cookie >> 1) & 3);
	if (a >= (uintptr_t)r->ini && a < (uintptr_t)(r->ini + PP_FI_QUEUE)) {
		ini_cpl(ep, (struct ini *)a, p, c);
	} else if (a >= (uintptr_t)r->srv && a < (uintptr_t)(r->srv + PP_FI_QUEUE)) {
		srv_cpl(ep, (struct srv *)a, p, c);
	} else {
		struct slot *s = (struct slot *)a; /* an arrived request */
		s->cpl = *c;
		s->next = NULL;
		*r->ready_tail = s;
		r->ready_tail = &s->next;
	}
}

void pp_fi_rma_progress(struct pp_fi_ep *ep)
{
	struct pp_fi_rma_ep *r = ep->rma;
	if (!r || !ep->rt)
		return;
	while (r->idle) {
		struct slot *s = r->idle;
		r->idle = s->next;
		slot_post(ep, s);
		if (r->idle == s)
			break; /* still full */
	}
	flush(ep);
	while (r->ready) {
		struct slot *s = r->ready;
		if (serve(ep, s))
			break;
		if (!(r->ready = s->next))
			r->ready_tail = &r->ready;
		slot_post(ep, s);
	}
	flush(ep);
}

int pp_fi_rma_enable(struct pp_fi_ep *ep)
{
	struct pp_fi_rma_ep *r = calloc(1, sizeof(*r));
	if (!r)
		return -FI_ENOMEM;
	r->ini = calloc(PP_FI_QUEUE, sizeof(*r->ini));
	r->srv = calloc(PP_FI_QUEUE, sizeof(*r->srv));
	r->slots = calloc(PP_FI_RMA_HDRS, sizeof(*r->slots));
	if (!r->ini || !r->srv || !r->slots) {
		free(r->ini);
		free(r->srv);
		free(r->slots);
		free(r);
		return -FI_ENOMEM;
	}
	for (unsigned i = PP_FI_QUEUE; i-- > 0;) {
		ini_put(r, &r->ini[i]);
		srv_put(r, &r->srv[i]);
	}
	r->ready_tail = &r->ready;
	ep->rma = r;
	for (unsigned i = 0; i < PP_FI_RMA_HDRS; i++)
		slot_post(ep, &r->slots[i]);
	return 0;
}

void pp_fi_rma_close(struct pp_fi_ep *ep)
{
	struct pp_fi_rma_ep *r = ep->rma;
	if (!r)
		return;
	for (unsigned i = 0; i < PP_FI_QUEUE; i++)
		free(r->ini[i].bounce);
	free(r->ini);
	free(r->srv);
	free(r->slots);
	free(r);
	ep->rma = NULL;
}

/* ---- fi_ops_rma ---- */

#define EP(fid) ((struct pp_fi_ep *)(fid))

static int iov_one(const struct iovec *iov, size_t count, void **buf, size_t *len)
{
	if (count > 1)
		return -FI_EINVAL; /* iov_limit 1 */
	*buf = count ? iov[0].iov_base : NULL;
	*len = count ? iov[0].iov_len : 0;
	return 0;
}

static ssize_t rw(struct fid_ep *fep, enum pp_fi_rma_op op, const void *buf, size_t len,
		  fi_addr_t peer, uint64_t addr, uint64_t key, void *context, uint64_t flags)
{
	struct pp_fi_rma_call c = {
	    .op = op,
	    .dest = peer,
	    .addr = addr,
	    .key = key,
	    .buf = op == PP_FI_RMA_WRITE ? buf : NULL,
	    .result = op == PP_FI_RMA_READ ? (void *)buf : NULL,
	    .len = len,
	    .context = context,
	    .flags = flags,
	};
	return pp_fi_rma_submit(EP(fep), &c);
}

static ssize_t r_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
		      uint64_t addr, uint64_t key, void *context)
{
	(void)desc;
	return rw(ep, PP_FI_RMA_READ, buf, len, src, addr, key, context, EP(ep)->tx_flags);
}

static ssize_t r_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	void *buf;
	size_t len;
	(void)desc;
	int rc = iov_one(iov, count, &buf, &len);
	return rc ? rc : r_read(ep, buf, len, NULL, src, addr, key, context);
}

/* fi_readmsg and fi_writemsg: one local and one remote iov. */
static ssize_t rw_msg(struct fid_ep *ep, enum pp_fi_rma_op kind, const struct fi_msg_rma *msg,
		      uint64_t flags)
{
	void *buf;
	size_t len;
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;
	int rc = iov_one(msg->msg_iov, msg->iov_count, &buf, &len);
	if (rc == 0 && len > msg->rma_iov[0].len)
		rc = -FI_EINVAL;
	return rc ? rc
		  : rw(ep, kind, buf, len, msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key,
		       msg->context, flags);
}

static ssize_t r_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	return rw_msg(ep, PP_FI_RMA_READ, msg, flags);
}

static ssize_t r_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
		       uint64_t addr, uint64_t key, void *context)
{
	(void)desc;
	return rw(ep, PP_FI_RMA_WRITE, buf, len, dest, addr, key, context, EP(ep)->tx_flags);
}

static ssize_t r_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	void *buf;
	size_t len;
	(void)desc;
	int rc = iov_one(iov, count, &buf, &len);
	return rc ? rc : r_write(ep, buf, len, NULL, dest, addr, key, context);
}

static ssize_t r_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	return rw_msg(ep, PP_FI_RMA_WRITE, msg, flags);
}

static ssize_t r_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			uint64_t addr, uint64_t key)
{
	return rw(ep, PP_FI_RMA_WRITE, buf, len, dest, addr, key, NULL, FI_INJECT);
}

/* No remote CQ data (cq_data_size 0). */
static ssize_t r_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			   uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
			   void *context)
{
	(void)ep;
	(void)buf;
	(void)len;
	(void)desc;
	(void)data;
	(void)dest;
	(void)addr;
	(void)key;
	(void)context;
	return -FI_ENOSYS;
}

static ssize_t r_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest, uint64_t addr, uint64_t key)
{
	(void)ep;
	(void)buf;
	(void)len;
	(void)data;
	(void)dest;
	(void)addr;
	(void)key;
	return -FI_ENOSYS;
}

struct fi_ops_rma pp_fi_rma_ops = {
    .size = sizeof(struct fi_ops_rma),
    .read = r_read,
    .readv = r_readv,
    .readmsg = r_readmsg,
    .write = r_write,
    .writev = r_writev,
    .writemsg = r_writemsg,
    .inject = r_inject,
    .writedata = r_writedata,
    .injectdata = r_injectdata,
};
