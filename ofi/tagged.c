/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path: tagged (fi_tagged.h) and untagged (fi_endpoint.h's msg
 * calls) sends and receives over the endpoint's engine, which matches
 * 64-bit tags under an ignore mask as libfabric's tagged receives do.
 * Untagged messages carry the tag PP_FI_MSG_TAG, a bit no tagged message may
 * use (the endpoint's mem_tag_format leaves it out when FI_MSG is on), so
 * neither kind ever matches the other.
 *
 * Peek and claim (FI_PEEK, FI_CLAIM, FI_DISCARD; MPI_Probe and MPI_Mprobe in
 * Open MPI's mtl ofi): a peek asks the engine for the first unmatched
 * message the receive would match. To claim it, a receive for exactly its
 * source and tag is posted at once into a buffer of ours: it takes that very
 * message (the first from that source with that tag, so no other), and no
 * later receive can. The FI_CLAIM receive then copies it out. One copy, only
 * for claimed messages.
 *
 * iovs of up to PP_FI_IOV_LIMIT entries: one entry is the buffer itself;
 * more are gathered into, or scattered from, a buffer of the endpoint's
 * (iov.c).
 */
#include <stdlib.h>
#include <string.h>

#include "pp_fi.h"

/* An operation's completion is written on success unless the binding is
 * selective and the call did not ask for one (FI_COMPLETION). */
static int wants(int selective, uint64_t flags)
{
	return !selective || (flags & FI_COMPLETION);
}

/* With FI_REMOTE_CQ_DATA, data's low PP_FI_CQ_DATA bytes travel with the
 * message (libfabric transfers the least significant cq_data_size bytes).
 * With iov (count entries, len bytes in all), the message is those entries
 * gathered (iov.c); else len bytes at buf. */
static ssize_t send_common(struct pp_fi_ep *ep, const void *buf, size_t len,
			   const struct iovec *iov, size_t count, fi_addr_t dest, uint64_t tag,
			   uint64_t data, void *context, uint64_t flags)
{
	if ((flags & FI_INJECT) && len > PP_FI_INJECT)
		return -FI_EMSGSIZE;
	if (len > PP_FI_MAX_MSG)
		return -FI_EMSGSIZE;
	if ((flags & FI_TAGGED) && (tag & ~ep->tag_mask))
		return -FI_EINVAL;
	if (!(flags & FI_TAGGED) && !(ep->caps & FI_MSG))
		return -FI_EOPNOTSUPP;
	ssize_t rc;
	pp_fi_lock(ep->dom);
	int rank = pp_fi_av_rank(ep->av, dest);
	/* The record a send in flight needs; one that completes in the call
	 * (most small ones) leaves it in the pool and reports itself. */
	struct pp_fi_op *op = NULL;
	if (!ep->rt) {
		rc = -FI_EOPBADSTATE;
	} else if (rank < 0) {
		rc = -FI_EINVAL;
	} else if (!(op = pp_fi_op_next(ep))) {
		rc = -FI_EAGAIN;
	} else {
		uint64_t cflags = FI_SEND | (flags & FI_TAGGED ? FI_TAGGED : FI_MSG);
		int report = !(flags & FI_INJECT) && wants(ep->tx_selective, flags);
		int has_data = (flags & FI_REMOTE_CQ_DATA) != 0;
		int inject = (flags & FI_INJECT) && len;
		uint64_t t = flags & FI_TAGGED ? tag : PP_FI_MSG_TAG;
		uint64_t cookie = (uint64_t)(uintptr_t)op;
		/* Out of the pool before the send when it holds a buffer (a
		 * gather, an inject's copy) or when its completion can come
		 * inside the call (to the own rank: embed_self.c). */
		int taken = (iov && len) || rank == pp_rank(ep->rt->ctx);
		if (taken) {
			op = pp_fi_op_take(ep, op);
			op->kind = PP_FI_SEND;
			op->context = context;
			op->flags = cflags;
			op->report = report;
		}
		if (iov && len) { /* gathered: a copy, so an inject's too */
			void *g = pp_fi_iov_take(ep, op, len);
			if (g)
				pp_fi_iov_gather(g, iov, count);
			rc = g ? pp_embed_send_now(ep->rt, (uint32_t)rank, t, g, len, has_data,
						   (uint32_t)data, 0, cookie)
			       : -ENOMEM; /* -FI_EAGAIN: sends in flight give theirs back */
		} else {
			/* An inject's buffer may be reused at once: the engine
			 * copies it (no allocation); to the own rank it does not
			 * (-ENOTSUP), and the copy is made here. */
			rc = pp_embed_send_now(ep->rt, (uint32_t)rank, t, buf, len, has_data,
					       (uint32_t)data, inject, cookie);
			if (rc == -ENOTSUP && taken) {
				op->bounce = malloc(len);
				rc = op->bounce
					 ? pp_embed_send_now(ep->rt, (uint32_t)rank, t,
							     memcpy(op->bounce, buf, len), len,
							     has_data, (uint32_t)data, 0, cookie)
					 : -ENOMEM;
			}
		}
		if (rc == 1) { /* done in the call: no completion will come */
			if (report)
				pp_fi_ep_send_done(ep, context, cflags, t);
			if (taken)
				pp_fi_op_put(ep, op);
			rc = 0;
		} else if (rc == 0) {
			if (!taken) { /* in flight: the record the cookie names reports it */
				op = pp_fi_op_take(ep, op);
				op->kind = PP_FI_SEND;
				op->context = context;
				op->flags = cflags;
				op->report = report;
			}
		} else {
			if (taken)
				pp_fi_op_put(ep, op);
			rc = pp_fi_err((int)rc);
			if (rc == -FI_EAGAIN) /* full: let what is in flight move on */
				pp_embed_progress(ep->rt);
		}
	}
	pp_fi_unlock(ep->dom);
	return rc;
}

#define NO_SOURCE (-2) /* not PP_PROTO_ANY (-1) */

/* The engine's source rank for a receive from src: PP_PROTO_ANY, a rank, or
 * NO_SOURCE for an address not in the AV. */
static int recv_source(const struct pp_fi_ep *ep, fi_addr_t src)
{
	if (src == FI_ADDR_UNSPEC || !(ep->caps & FI_DIRECTED_RECV))
		return PP_PROTO_ANY;
	/* No map address is 0 (av.c): Open MPI's acknowledgement of MPI_Ssend
	 * names the sender in the tag and passes 0 here. */
	if (src == 0 && ep->av && ep->av->type == FI_AV_MAP)
		return PP_PROTO_ANY;
	int rank = pp_fi_av_rank(ep->av, src);
	return rank < 0 ? NO_SOURCE : rank;
}

/* With iov (count entries, len bytes in all), the message lands in a buffer
 * of ours and is scattered into them as it completes (ep.c). */
static ssize_t recv_common(struct pp_fi_ep *ep, void *buf, size_t len, const struct iovec *iov,
			   size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore,
			   void *context, uint64_t flags)
{
	if (flags & FI_TAGGED) {
		ignore &= ep->tag_mask; /* the untagged bit must match: 0 */
		tag &= ep->tag_mask;
	} else {
		if (!(ep->caps & FI_MSG))
			return -FI_EOPNOTSUPP;
		tag = PP_FI_MSG_TAG;
		ignore = 0;
	}
	ssize_t rc;
	pp_fi_lock(ep->dom);
	int rank = recv_source(ep, src);
	struct pp_fi_op *op = NULL;
	if (!ep->rt) {
		rc = -FI_EOPBADSTATE;
	} else if (rank == NO_SOURCE) {
		rc = -FI_EINVAL;
	} else if (!(op = pp_fi_op_get(ep))) {
		rc = -FI_EAGAIN;
	} else {
		op->kind = PP_FI_RECV;
		op->context = context;
		op->flags = FI_RECV | (flags & FI_TAGGED ? FI_TAGGED : FI_MSG);
		op->report = wants(ep->rx_selective, flags);
		op->buf = buf;
		op->len = len;
		void *into = buf;
		if (iov) {
			memcpy(op->iov, iov, count * sizeof(*iov));
			op->niov = count;
			op->buf = iov[0].iov_base;
			into = len ? pp_fi_iov_take(ep, op, len) : NULL;
		}
		rc = len && !into ? -ENOMEM
				  : pp_embed_recv(ep->rt, rank, tag, ignore, into, len,
						  (uint64_t)(uintptr_t)op);
		if (rc) {
			pp_fi_op_put(ep, op);
			rc = pp_fi_err((int)rc);
			if (rc == -FI_EAGAIN)
				pp_embed_progress(ep->rt);
		}
	}
	pp_fi_unlock(ep->dom);
	return rc;
}

/* ---- peek and claim ---- */

static void claim_finish(struct pp_fi_ep *ep, struct pp_fi_claim *cl)
{
	struct pp_fi_op *b = cl->bounce, *t = cl->taker;
	struct pp_proto_cpl c = cl->cpl;
	c.cookie = (uint64_t)(uintptr_t)t;
	if (cl->discard) {
		t->len = 0;
		c.len = 0;
		c.error = c.error == -EMSGSIZE ? 0 : c.error;
	} else if (c.error == 0 || c.error == -EMSGSIZE) {
		uint64_t n = c.len < t->len ? c.len : t->len;
		if (t->niov)
			pp_fi_iov_scatter(t->iov, t->niov, b->bounce, n);
		else if (n)
			memcpy(t->buf, b->bounce, n);
		c.error = c.len > t->len ? -EMSGSIZE : 0;
	}
	pp_fi_ep_complete(ep, t, &c);
	pp_fi_op_put(ep, t);
	pp_fi_op_put(ep, b);
	for (struct pp_fi_claim **p = &ep->claims; *p; p = &(*p)->next)
		if (*p == cl) {
			*p = cl->next;
			break;
		}
	free(cl);
}

void pp_fi_claim_done(struct pp_fi_ep *ep, struct pp_fi_op *op, const struct pp_proto_cpl *c)
{
	struct pp_fi_claim *cl = op->claim;
	cl->done = 1;
	cl->cpl = *c;
	if (cl->taker)
		claim_finish(ep, cl);
}

/* FI_PEEK (with FI_CLAIM or FI_DISCARD): the answer is a completion, or an
 * FI_ENOMSG error completion when nothing matches yet. */
static ssize_t peek(struct pp_fi_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	uint64_t tag = msg->tag & ep->tag_mask, ignore = msg->ignore & ep->tag_mask;
	int rank = recv_source(ep, msg->addr);
	if (rank == NO_SOURCE)
		return -FI_EINVAL;
	if (!ep->rx_cq)
		return -FI_ENOCQ;
	pp_embed_progress(ep->rt); /* look at what has arrived by now */
	struct pp_proto_cpl c;
	if (!pp_embed_probe(ep->rt, rank, tag, ignore, &c)) {
		struct pp_fi_cqerr e = {.src = FI_ADDR_NOTAVAIL};
		e.e.op_context = msg->context;
		e.e.flags = FI_RECV | FI_TAGGED;
		e.e.tag = msg->tag;
		e.e.err = FI_ENOMSG;
		e.e.prov_errno = ENOMSG;
		pp_fi_cq_write_err(ep->rx_cq, &e);
		return 0;
	}
	if (flags & (FI_CLAIM | FI_DISCARD)) {
		struct pp_fi_op *op = pp_fi_op_get(ep);
		struct pp_fi_claim *cl = flags & FI_CLAIM ? calloc(1, sizeof(*cl)) : NULL;
		void *bounce = flags & FI_CLAIM ? malloc(c.len ? c.len : 1) : NULL;
		if (!op || ((flags & FI_CLAIM) && (!cl || !bounce))) {
			free(cl);
			free(bounce);
			if (op)
				pp_fi_op_put(ep, op);
			return -FI_EAGAIN;
		}
		op->kind = flags & FI_CLAIM ? PP_FI_CLAIMED : PP_FI_DISCARD;
		op->bounce = bounce;
		op->claim = cl;
		/* Exactly its source and tag: the first such message is this one. */
		int rc = pp_embed_recv(ep->rt, c.source, c.tag, 0, bounce, bounce ? c.len : 0,
				       (uint64_t)(uintptr_t)op);
		if (rc) {
			free(cl);
			pp_fi_op_put(ep, op);
			return pp_fi_err(rc);
		}
		if (cl) {
			cl->context = msg->context;
			cl->bounce = op;
			cl->next = ep->claims;
			ep->claims = cl;
		}
	}
	if (wants(ep->rx_selective, flags)) {
		struct pp_fi_cqe e = {.src = pp_fi_av_addr(ep->av, c.source)};
		e.e.op_context = msg->context;
		e.e.flags = FI_RECV | FI_TAGGED;
		e.e.len = c.len;
		e.e.tag = c.tag;
		if (c.has_data) {
			e.e.flags |= FI_REMOTE_CQ_DATA;
			e.e.data = c.data;
		}
		pp_fi_cq_write(ep->rx_cq, &e);
	}
	return 0;
}

/* FI_CLAIM without FI_PEEK: take the message a peek claimed with this
 * context, into the buffer given (or discard it, FI_DISCARD). */
static ssize_t claim(struct pp_fi_ep *ep, void *buf, size_t len, const struct iovec *iov,
		     size_t count, void *context, uint64_t flags)
{
	struct pp_fi_claim *cl = ep->claims;
	while (cl && (cl->context != context || cl->taker))
		cl = cl->next;
	if (!cl)
		return -FI_EINVAL; /* no peek claimed a message with this context */
	struct pp_fi_op *op = pp_fi_op_get(ep);
	if (!op)
		return -FI_EAGAIN;
	op->kind = PP_FI_RECV;
	op->context = context;
	op->flags = FI_RECV | FI_TAGGED;
	op->report = wants(ep->rx_selective, flags);
	op->buf = buf;
	op->len = len;
	if (iov) {
		memcpy(op->iov, iov, count * sizeof(*iov));
		op->niov = count;
		op->buf = iov[0].iov_base;
	}
	cl->taker = op;
	cl->discard = !!(flags & FI_DISCARD);
	if (cl->done)
		claim_finish(ep, cl);
	return 0;
}

/* ---- fi_ops_tagged ---- */

/* The buffer of count entries: the one entry's (*multi NULL), or, for more
 * (*multi the entries), their total length, gathered or scattered. */
static int iov_args(const struct iovec *iov, size_t count, void **buf, size_t *len,
		    const struct iovec **multi)
{
	*multi = NULL;
	*buf = NULL;
	*len = 0;
	if (count && !iov)
		return -FI_EINVAL;
	if (count == 1) { /* zero-copy, as a plain send or receive */
		*buf = iov[0].iov_base;
		*len = iov[0].iov_len;
	}
	if (count <= 1)
		return 0;
	*multi = iov;
	return pp_fi_iov_total(iov, count, len);
}

#define EP(fid) ((struct pp_fi_ep *)(fid))

static ssize_t t_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
		      uint64_t tag, uint64_t ignore, void *context)
{
	(void)desc;
	return recv_common(EP(fep), buf, len, NULL, 0, src, tag, ignore, context,
			   EP(fep)->rx_flags | FI_TAGGED);
}

static ssize_t t_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	void *buf;
	size_t len;
	const struct iovec *multi;
	(void)desc;
	int rc = iov_args(iov, count, &buf, &len, &multi);
	return rc ? rc
		  : recv_common(EP(fep), buf, len, multi, count, src, tag, ignore, context,
				EP(fep)->rx_flags | FI_TAGGED);
}

static ssize_t t_recvmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct pp_fi_ep *ep = EP(fep);
	void *buf;
	size_t len, n = msg->iov_count;
	const struct iovec *multi;
	if (flags & FI_MULTI_RECV)
		return -FI_EINVAL;
	int rc = iov_args(msg->msg_iov, n, &buf, &len, &multi);
	if (rc)
		return rc;
	if (!(flags & (FI_PEEK | FI_CLAIM)))
		return recv_common(ep, buf, len, multi, n, msg->addr, msg->tag, msg->ignore,
				   msg->context, flags | FI_TAGGED);
	ssize_t r;
	pp_fi_lock(ep->dom);
	if (!ep->rt)
		r = -FI_EOPBADSTATE;
	else if (flags & FI_PEEK)
		r = peek(ep, msg, flags);
	else
		r = claim(ep, buf, len, multi, n, msg->context, flags);
	pp_fi_unlock(ep->dom);
	return r;
}

static ssize_t t_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
		      uint64_t tag, void *context)
{
	(void)desc;
	return send_common(EP(fep), buf, len, NULL, 0, dest, tag, 0, context,
			   EP(fep)->tx_flags | FI_TAGGED);
}

static ssize_t t_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, uint64_t tag, void *context)
{
	void *buf;
	size_t len;
	const struct iovec *multi;
	(void)desc;
	int rc = iov_args(iov, count, &buf, &len, &multi);
	return rc ? rc
		  : send_common(EP(fep), buf, len, multi, count, dest, tag, 0, context,
				EP(fep)->tx_flags | FI_TAGGED);
}

static ssize_t t_sendmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	void *buf;
	size_t len;
	const struct iovec *multi;
	int rc = iov_args(msg->msg_iov, msg->iov_count, &buf, &len, &multi);
	return rc ? rc
		  : send_common(EP(fep), buf, len, multi, msg->iov_count, msg->addr, msg->tag,
				msg->data, msg->context, flags | FI_TAGGED);
}

static ssize_t t_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
			uint64_t tag)
{
	return send_common(EP(fep), buf, len, NULL, 0, dest, tag, 0, NULL, FI_INJECT | FI_TAGGED);
}

static ssize_t t_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			  uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	(void)desc;
	return send_common(EP(fep), buf, len, NULL, 0, dest, tag, data, context,
			   EP(fep)->tx_flags | FI_TAGGED | FI_REMOTE_CQ_DATA);
}

static ssize_t t_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest, uint64_t tag)
{
	return send_common(EP(fep), buf, len, NULL, 0, dest, tag, data, NULL,
			   FI_INJECT | FI_TAGGED | FI_REMOTE_CQ_DATA);
}

struct fi_ops_tagged pp_fi_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = t_recv,
    .recvv = t_recvv,
    .recvmsg = t_recvmsg,
    .send = t_send,
    .sendv = t_sendv,
    .sendmsg = t_sendmsg,
    .inject = t_inject,
    .senddata = t_senddata,
    .injectdata = t_injectdata,
};

/* ---- fi_ops_msg ---- */

static ssize_t m_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
		      void *context)
{
	(void)desc;
	return recv_common(EP(fep), buf, len, NULL, 0, src, 0, 0, context,
			   EP(fep)->rx_flags & ~FI_TAGGED);
}

static ssize_t m_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, void *context)
{
	void *buf;
	size_t len;
	const struct iovec *multi;
	(void)desc;
	int rc = iov_args(iov, count, &buf, &len, &multi);
	return rc ? rc
		  : recv_common(EP(fep), buf, len, multi, count, src, 0, 0, context,
				EP(fep)->rx_flags & ~FI_TAGGED);
}

static ssize_t m_recvmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	void *buf;
	size_t len;
	const struct iovec *multi;
	if (flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM))
		return -FI_EINVAL;
	int rc = iov_args(msg->msg_iov, msg->iov_count, &buf, &len, &multi);
	return rc ? rc
		  : recv_common(EP(fep), buf, len, multi, msg->iov_count, msg->addr, 0, 0,
				msg->context, flags & ~FI_TAGGED);
}

static ssize_t m_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
		      void *context)
{
	(void)desc;
	return send_common(EP(fep), buf, len, NULL, 0, dest, 0, 0, context,
			   EP(fep)->tx_flags & ~FI_TAGGED);
}

static ssize_t m_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, void *context)
{
	void *buf;
	size_t len;
	const struct iovec *multi;
	(void)desc;
	int rc = iov_args(iov, count, &buf, &len, &multi);
	return rc ? rc
		  : send_common(EP(fep), buf, len, multi, count, dest, 0, 0, context,
				EP(fep)->tx_flags & ~FI_TAGGED);
}

static ssize_t m_sendmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	void *buf;
	size_t len;
	const struct iovec *multi;
	int rc = iov_args(msg->msg_iov, msg->iov_count, &buf, &len, &multi);
	return rc ? rc
		  : send_common(EP(fep), buf, len, multi, msg->iov_count, msg->addr, 0, msg->data,
				msg->context, flags & ~FI_TAGGED);
}

static ssize_t m_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
	return send_common(EP(fep), buf, len, NULL, 0, dest, 0, 0, NULL, FI_INJECT);
}

static ssize_t m_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			  uint64_t data, fi_addr_t dest, void *context)
{
	(void)desc;
	return send_common(EP(fep), buf, len, NULL, 0, dest, 0, data, context,
			   (EP(fep)->tx_flags & ~FI_TAGGED) | FI_REMOTE_CQ_DATA);
}

static ssize_t m_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest)
{
	return send_common(EP(fep), buf, len, NULL, 0, dest, 0, data, NULL,
			   FI_INJECT | FI_REMOTE_CQ_DATA);
}

struct fi_ops_msg pp_fi_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = m_recv,
    .recvv = m_recvv,
    .recvmsg = m_recvmsg,
    .send = m_send,
    .sendv = m_sendv,
    .sendmsg = m_sendmsg,
    .inject = m_inject,
    .senddata = m_senddata,
    .injectdata = m_injectdata,
};
