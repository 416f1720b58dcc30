/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoints: one librt-pp engine each (runtime/embed.h), opened at
 * fi_enable with the configuration of PP_<KEY> variables, the launcher and
 * FI_OPT_PP_CONFIG. The engine's completions come back here and become CQ
 * entries; operation records (the engine's cookies) are pooled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_fi.h"

#define OPS_CHUNK 64 /* operation records allocated at a time */

/* A chunk of operation records, freed with the endpoint. */
struct pp_fi_op_chunk {
	struct pp_fi_op_chunk *next;
	struct pp_fi_op ops[OPS_CHUNK];
};

struct pp_fi_op *pp_fi_op_next(struct pp_fi_ep *ep)
{
	if (!ep->free) {
		struct pp_fi_op_chunk *c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		c->next = ep->chunks;
		ep->chunks = c;
		for (int i = 0; i < OPS_CHUNK; i++) {
			c->ops[i].next = ep->free;
			ep->free = &c->ops[i];
		}
	}
	return ep->free;
}

struct pp_fi_op *pp_fi_op_take(struct pp_fi_ep *ep, struct pp_fi_op *op)
{
	/* At the head, unless a completion gave records back meanwhile. */
	struct pp_fi_op **at = &ep->free;
	while (*at != op)
		at = &(*at)->next;
	*at = op->next;
	/* Every field the data path reads is set here or by the caller; bounce
	 * and slot are NULL already (pp_fi_op_put). Not a memset: the iov
	 * array alone is 128 bytes, and most operations have none. */
	op->context = NULL;
	op->flags = 0;
	op->report = 0;
	op->buf = NULL;
	op->len = 0;
	op->niov = 0;
	op->claim = NULL;
	op->next = NULL;
	return op;
}

struct pp_fi_op *pp_fi_op_get(struct pp_fi_ep *ep)
{
	struct pp_fi_op *op = pp_fi_op_next(ep);
	return op ? pp_fi_op_take(ep, op) : NULL;
}

void pp_fi_op_put(struct pp_fi_ep *ep, struct pp_fi_op *op)
{
	if (op->bounce) {
		free(op->bounce);
		op->bounce = NULL;
	}
	if (op->slot)
		pp_fi_iov_give(ep, op);
	op->next = ep->free;
	ep->free = op;
}

/* A success entry. */
static void cq_ok(struct pp_fi_cq *cq, fi_addr_t src, void *context, uint64_t flags, uint64_t len,
		  void *buf, uint64_t tag, uint64_t data)
{
	struct pp_fi_cqe *e = pp_fi_cq_slot(cq);
	if (!e)
		return;
	e->src = src;
	e->e.op_context = context;
	e->e.flags = flags;
	e->e.len = len;
	e->e.buf = buf;
	e->e.tag = tag;
	e->e.data = data;
	pp_fi_ring_commit(&cq->ok);
}

/* The CQ entry of a finished operation: success, or an error entry. */
void pp_fi_ep_complete(struct pp_fi_ep *ep, struct pp_fi_op *op, const struct pp_proto_cpl *c)
{
	int is_send = op->kind == PP_FI_SEND;
	struct pp_fi_cq *cq = is_send ? ep->tx_cq : ep->rx_cq;
	fi_addr_t src = is_send ? FI_ADDR_NOTAVAIL : pp_fi_av_addr(ep->av, c->source);
	uint64_t tag = op->flags & FI_TAGGED ? c->tag : 0;
	uint64_t got = is_send ? 0 : (c->len < op->len ? c->len : op->len);
	if (!cq)
		return;
	if (c->error) {
		struct pp_fi_cqerr e = {.src = src};
		e.e.op_context = op->context;
		e.e.flags = op->flags;
		e.e.len = got;
		e.e.buf = is_send ? NULL : op->buf;
		e.e.tag = tag;
		if (!is_send && c->has_data) {
			e.e.flags |= FI_REMOTE_CQ_DATA;
			e.e.data = c->data;
		}
		e.e.prov_errno = -c->error;
		if (c->error == -EMSGSIZE) {
			e.e.err = FI_ETRUNC;
			e.e.olen = c->len - got;
		} else {
			e.e.err = c->error == -ECONNRESET ? FI_EIO : -c->error;
		}
		pp_fi_cq_write_err(cq, &e);
	} else if (op->report) {
		int data = !is_send && c->has_data;
		cq_ok(cq, src, op->context, op->flags | (data ? FI_REMOTE_CQ_DATA : 0), got,
		      is_send || !got ? NULL : op->buf, tag, data ? c->data : 0);
	}
}

void pp_fi_ep_send_done(struct pp_fi_ep *ep, void *context, uint64_t flags, uint64_t tag)
{
	if (ep->tx_cq)
		cq_ok(ep->tx_cq, FI_ADDR_NOTAVAIL, context, flags, 0, NULL,
		      flags & FI_TAGGED ? tag : 0, 0);
}

/* The engine's completion (from inside a progress pass or a send). */
static void engine_cpl(void *arg, const struct pp_proto_cpl *c)
{
	struct pp_fi_ep *ep = arg;
	if (c->cookie & 1) {
		pp_fi_rma_cpl(ep, c);
		return;
	}
	struct pp_fi_op *op = (struct pp_fi_op *)(uintptr_t)c->cookie;
	switch (op->kind) {
	case PP_FI_SEND:
	case PP_FI_RECV:
		/* A receive of several entries landed in a buffer of ours. */
		if (op->niov && (c->error == 0 || c->error == -EMSGSIZE))
			pp_fi_iov_scatter(op->iov, op->niov, op->slot ? op->slot : op->bounce,
					  c->len < op->len ? c->len : op->len);
		pp_fi_ep_complete(ep, op, c);
		pp_fi_op_put(ep, op);
		break;
	case PP_FI_CLAIMED:
		pp_fi_claim_done(ep, op, c);
		break;
	case PP_FI_DISCARD:
		pp_fi_op_put(ep, op);
		break;
	}
}

void pp_fi_ep_progress(struct pp_fi_ep *ep)
{
	if (ep->rt) {
		pp_embed_progress(ep->rt);
		pp_fi_rma_progress(ep);
	}
}

int pp_fi_ep_wait(struct pp_fi_ep *ep, int *fd, uint64_t *expiry)
{
	if (!ep->rt)
		return -1;
	pp_embed_wait(ep->rt, fd, expiry);
	return 0;
}

int pp_fi_ep_peer(struct pp_fi_ep *ep, const struct pp_embed_addr *a)
{
	if (!ep->rt)
		return 0; /* fi_enable adds what the AV holds by then */
	int rc = pp_embed_peer_add(ep->rt, a);
	if (rc)
		PP_FI_WARN(FI_LOG_AV,
			   "rank %u (job %u, %u ranks) is no peer of this endpoint: %s\n", a->rank,
			   a->job, a->size, strerror(-rc));
	return rc == -EINVAL || rc == -EEXIST ? -FI_EINVAL : rc;
}

static int enable(struct pp_fi_ep *ep)
{
	if (ep->rt)
		return 0;
	if (!ep->av || (!ep->tx_cq && !ep->rx_cq))
		return -FI_ENOCQ; /* an address vector and a completion queue first */
	struct pp_embed_conf c = {.config = ep->config, .cpl = engine_cpl, .arg = ep};
	int rc = pp_embed_open(&ep->rt, &c);
	if (rc) {
		PP_FI_WARN(FI_LOG_EP_CTRL,
			   "librt-pp context not opened (%s): PP_DEV, PP_RANK/PP_SIZE or a "
			   "launcher, PP_LOG=info for more\n",
			   strerror(-rc));
		ep->rt = NULL;
		return rc == -EINVAL ? -FI_EINVAL : -FI_ENODEV;
	}
	for (size_t i = 0; i < ep->av->n; i++)
		if (ep->av->ent[i].valid && (rc = pp_fi_ep_peer(ep, &ep->av->ent[i].a)))
			return rc;
	if ((rc = pp_fi_iov_enable(ep)))
		return rc;
	return ep->caps & (FI_RMA | FI_ATOMIC) ? pp_fi_rma_enable(ep) : 0;
}

/* ---- fi_ops ---- */

static int ep_close(struct fid *fid)
{
	struct pp_fi_ep *ep = (struct pp_fi_ep *)fid;
	struct pp_fi_domain *dom = ep->dom;
	pp_fi_lock(dom);
	/* Drains the sends; their completions may still reach the CQs. */
	pp_embed_close(ep->rt);
	ep->rt = NULL;
	pp_fi_rma_close(ep);
	while (ep->claims) {
		struct pp_fi_claim *cl = ep->claims;
		ep->claims = cl->next;
		free(cl);
	}
	if (ep->av)
		pp_fi_av_unbind(ep->av, ep);
	if (ep->tx_cq)
		pp_fi_cq_unbind(ep->tx_cq, ep);
	if (ep->rx_cq)
		pp_fi_cq_unbind(ep->rx_cq, ep);
	dom->refs--;
	pp_fi_unlock(dom);
	/* Receives the engine dropped still hold their records (and a claim
	 * its bounce buffer): free every record's. */
	while (ep->chunks) {
		struct pp_fi_op_chunk *c = ep->chunks;
		ep->chunks = c->next;
		for (int i = 0; i < OPS_CHUNK; i++)
			free(c->ops[i].bounce);
		free(c);
	}
	pp_fi_iov_close(ep); /* the slots records held went with them */
	fi_freeinfo(ep->info);
	free(ep->config);
	free(ep);
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct pp_fi_ep *ep = (struct pp_fi_ep *)fid;
	int rc = 0;
	pp_fi_lock(ep->dom);
	if (ep->rt) {
		rc = -FI_EOPBADSTATE;
	} else if (bfid->fclass == FI_CLASS_AV) {
		if (ep->av)
			rc = -FI_EINVAL;
		else
			pp_fi_av_bind(ep->av = (struct pp_fi_av *)bfid, ep);
	} else if (bfid->fclass == FI_CLASS_CQ) {
		struct pp_fi_cq *cq = (struct pp_fi_cq *)bfid;
		if (flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) {
			rc = -FI_EBADFLAGS;
		} else {
			if (flags & FI_TRANSMIT) {
				ep->tx_cq = cq;
				ep->tx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
			}
			if (flags & FI_RECV) {
				ep->rx_cq = cq;
				ep->rx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
			}
			pp_fi_cq_bind(cq, ep);
		}
	} else {
		rc = -FI_ENOSYS; /* no counters, event queues or shared contexts */
	}
	pp_fi_unlock(ep->dom);
	return rc;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct pp_fi_ep *ep = (struct pp_fi_ep *)fid;
	int rc = -FI_ENOSYS;
	pp_fi_lock(ep->dom);
	switch (command) {
	case FI_ENABLE:
		rc = enable(ep);
		break;
	case FI_GETOPSFLAG: {
		uint64_t *f = arg;
		if (*f & FI_TRANSMIT)
			*f = ep->tx_flags;
		else if (*f & FI_RECV)
			*f = ep->rx_flags;
		else
			break;
		rc = 0;
		break;
	}
	case FI_SETOPSFLAG: {
		uint64_t f = *(uint64_t *)arg;
		if (f & FI_TRANSMIT)
			ep->tx_flags = f & ~(uint64_t)FI_TRANSMIT;
		else if (f & FI_RECV)
			ep->rx_flags = f & ~(uint64_t)FI_RECV;
		else
			break;
		rc = 0;
		break;
	}
	default:
		break;
	}
	pp_fi_unlock(ep->dom);
	return rc;
}

static struct fi_ops ep_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = ep_close,
    .bind = ep_bind,
    .control = ep_control,
    .ops_open = pp_fi_no_ops_open,
};

/* ---- fi_ops_ep ---- */

/* A receive no message has matched yet is taken back: its completion, an
 * error entry FI_ECANCELED with its context, comes in the next CQ read
 * (Open MPI's MPI_Cancel waits for it). Sends, matched receives and claims
 * go on: -FI_ENOENT. */
static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct pp_fi_ep *ep = (struct pp_fi_ep *)fid;
	ssize_t rc = -FI_ENOENT;
	pp_fi_lock(ep->dom);
	/* Cold path: the records are few chunks; the engine knows which of
	 * them wait. */
	for (struct pp_fi_op_chunk *c = ep->chunks; ep->rt && c && rc == -FI_ENOENT; c = c->next)
		for (int i = 0; i < OPS_CHUNK && rc == -FI_ENOENT; i++) {
			struct pp_fi_op *op = &c->ops[i];
			if (op->kind != PP_FI_RECV || op->context != context)
				continue;
			int r = pp_embed_cancel(ep->rt, (uint64_t)(uintptr_t)op);
			rc = r == 0 ? 0 : r == -EBUSY ? -FI_EBUSY : -FI_ENOENT;
		}
	pp_fi_unlock(ep->dom);
	return rc;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct pp_fi_ep *ep = (struct pp_fi_ep *)fid;
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname != FI_OPT_PP_CONFIG)
		return -FI_ENOPROTOOPT;
	const char *s = ep->config ? ep->config : "";
	size_t n = strlen(s) + 1;
	if (*optlen < n) {
		*optlen = n;
		return -FI_ETOOSMALL;
	}
	memcpy(optval, s, n);
	*optlen = n;
	return 0;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct pp_fi_ep *ep = (struct pp_fi_ep *)fid;
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_PP_CONFIG)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || memchr(optval, '\0', optlen) == NULL)
		return -FI_EINVAL;
	int rc = 0;
	pp_fi_lock(ep->dom);
	if (ep->rt) {
		rc = -FI_EOPBADSTATE;
	} else {
		char *s = strdup(optval);
		if (!s) {
			rc = -FI_ENOMEM;
		} else {
			free(ep->config);
			ep->config = s;
		}
	}
	pp_fi_unlock(ep->dom);
	return rc;
}

static int no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx_ep,
		     void *context)
{
	(void)sep;
	(void)index;
	(void)attr;
	(void)tx_ep;
	(void)context;
	return -FI_ENOSYS;
}

static int no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		     void *context)
{
	(void)sep;
	(void)index;
	(void)attr;
	(void)rx_ep;
	(void)context;
	return -FI_ENOSYS;
}

static ssize_t no_size_left(struct fid_ep *ep)
{
	(void)ep;
	return -FI_ENOSYS;
}

static struct fi_ops_ep ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = ep_cancel,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = no_tx_ctx,
    .rx_ctx = no_rx_ctx,
    .rx_size_left = no_size_left,
    .tx_size_left = no_size_left,
};

/* ---- fi_ops_cm: the endpoint's name ---- */

static int cm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct pp_fi_ep *ep = (struct pp_fi_ep *)fid;
	int rc = 0;
	pp_fi_lock(ep->dom);
	if (!ep->rt) {
		rc = -FI_EOPBADSTATE; /* the name exists once the port is open */
	} else {
		struct pp_embed_addr a;
		uint8_t name[FI_PP_NAME_LEN];
		pp_embed_addr(ep->rt, &a);
		pp_fi_name_encode(name, &a);
		if (*addrlen < sizeof(name))
			rc = -FI_ETOOSMALL;
		else
			memcpy(addr, name, sizeof(name));
		*addrlen = sizeof(name);
	}
	pp_fi_unlock(ep->dom);
	return rc;
}

static int no_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void)fid;
	(void)addr;
	(void)addrlen;
	return -FI_ENOSYS;
}

static int no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	(void)ep;
	(void)addr;
	(void)addrlen;
	return -FI_ENOSYS;
}

static int no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	(void)ep;
	(void)addr;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS;
}

static int no_listen(struct fid_pep *pep)
{
	(void)pep;
	return -FI_ENOSYS;
}

static int no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	(void)ep;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS;
}

static int no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	(void)pep;
	(void)handle;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS;
}

static int no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	(void)ep;
	(void)flags;
	return -FI_ENOSYS;
}

static int no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		   void *context)
{
	(void)ep;
	(void)addr;
	(void)flags;
	(void)mc;
	(void)context;
	return -FI_ENOSYS;
}

static struct fi_ops_cm cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = no_setname,
    .getname = cm_getname,
    .getpeer = no_getpeer,
    .connect = no_connect,
    .listen = no_listen,
    .accept = no_accept,
    .reject = no_reject,
    .shutdown = no_shutdown,
    .join = no_join,
};

int pp_fi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **out,
		  void *context)
{
	struct pp_fi_domain *dom = (struct pp_fi_domain *)domain;
	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM ||
	    (info->caps & ~PP_FI_CAPS & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM)))
		return -FI_EINVAL;
	struct pp_fi_ep *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->fid.fid.fclass = FI_CLASS_EP;
	ep->fid.fid.context = context;
	ep->fid.fid.ops = &ep_fi_ops;
	ep->fid.ops = &ep_ops;
	ep->fid.cm = &cm_ops;
	ep->fid.msg = &pp_fi_msg_ops;
	ep->fid.tagged = &pp_fi_tagged_ops;
	ep->fid.rma = &pp_fi_rma_ops;
	ep->fid.atomic = &pp_fi_atomic_ops;
	ep->dom = dom;
	ep->caps = info->caps ? info->caps : PP_FI_CAPS;
	ep->tag_mask = pp_fi_tag_mask(ep->caps);
	ep->tx_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	pp_fi_lock(dom);
	dom->refs++;
	pp_fi_unlock(dom);
	*out = &ep->fid;
	return 0;
}
