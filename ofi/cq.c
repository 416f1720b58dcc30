/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues. Progress is manual: every read runs one progress pass
 * of each endpoint bound to the queue first. Entries wait in growing rings,
 * so the engine never has a completion it cannot report (FI_RM_ENABLED);
 * errors wait in their own, and a read returns -FI_EAVAIL while one does.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp_fi.h"

int pp_fi_ring_push(struct pp_fi_ring *r, const void *e)
{
	if (r->tail - r->head == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		uint8_t *mem = malloc(cap * r->esize);
		if (!mem)
			return -FI_ENOMEM;
		for (size_t i = r->head; i != r->tail; i++)
			memcpy(mem + (i - r->head) * r->esize,
			       r->mem + (i & (r->cap - 1)) * r->esize, r->esize);
		free(r->mem);
		r->mem = mem;
		r->tail -= r->head;
		r->head = 0;
		r->cap = cap;
	}
	memcpy(r->mem + (r->tail & (r->cap - 1)) * r->esize, e, r->esize);
	r->tail++;
	return 0;
}

int pp_fi_ring_pop(struct pp_fi_ring *r, void *e)
{
	if (r->head == r->tail)
		return 0;
	memcpy(e, r->mem + (r->head & (r->cap - 1)) * r->esize, r->esize);
	r->head++;
	return 1;
}

void pp_fi_cq_write(struct pp_fi_cq *cq, const struct pp_fi_cqe *e)
{
	if (pp_fi_ring_push(&cq->ok, e))
		PP_FI_WARN(FI_LOG_CQ, "completion lost: no memory\n");
}

void pp_fi_cq_write_err(struct pp_fi_cq *cq, const struct pp_fi_cqerr *e)
{
	if (pp_fi_ring_push(&cq->err, e))
		PP_FI_WARN(FI_LOG_CQ, "error completion lost: no memory\n");
}

void pp_fi_cq_bind(struct pp_fi_cq *cq, struct pp_fi_ep *ep)
{
	for (int i = 0; i < PP_FI_BINDS; i++) {
		if (cq->eps[i] == ep)
			return;
		if (!cq->eps[i]) {
			cq->eps[i] = ep;
			return;
		}
	}
}

void pp_fi_cq_unbind(struct pp_fi_cq *cq, struct pp_fi_ep *ep)
{
	for (int i = 0; i < PP_FI_BINDS; i++)
		if (cq->eps[i] == ep)
			cq->eps[i] = NULL;
}

static void progress(struct pp_fi_cq *cq)
{
	for (int i = 0; i < PP_FI_BINDS; i++)
		if (cq->eps[i])
			pp_fi_ep_progress(cq->eps[i]);
}

static ssize_t read_locked(struct pp_fi_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	/* A read of 0 entries is a request for progress alone (fabtests' way). */
	if (pp_fi_ring_len(&cq->ok) < count || !count)
		progress(cq);
	if (pp_fi_ring_len(&cq->err))
		return -FI_EAVAIL;
	size_t n = 0;
	struct pp_fi_cqe e;
	while (n < count && pp_fi_ring_pop(&cq->ok, &e)) {
		/* Every format is a prefix of the tagged entry. */
		memcpy((uint8_t *)buf + n * cq->esize, &e.e, cq->esize);
		if (src)
			src[n] = e.src;
		n++;
	}
	return n ? (ssize_t)n : -FI_EAGAIN;
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct pp_fi_cq *cq = (struct pp_fi_cq *)fcq;
	pp_fi_lock(cq->dom);
	ssize_t n = read_locked(cq, buf, count, src);
	pp_fi_unlock(cq->dom);
	return n;
}

static ssize_t cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	return cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct pp_fi_cq *cq = (struct pp_fi_cq *)fcq;
	struct pp_fi_cqerr e;
	(void)flags;
	pp_fi_lock(cq->dom);
	int got = pp_fi_ring_pop(&cq->err, &e);
	pp_fi_unlock(cq->dom);
	if (!got)
		return -FI_EAGAIN;
	/* err_data and its size stay the caller's: there is none to copy. */
	buf->op_context = e.e.op_context;
	buf->flags = e.e.flags;
	buf->len = e.e.len;
	buf->buf = e.e.buf;
	buf->data = e.e.data;
	buf->tag = e.e.tag;
	buf->olen = e.e.olen;
	buf->err = e.e.err;
	buf->prov_errno = e.e.prov_errno;
	if (FI_VERSION_GE(((struct pp_fi_fabric *)cq->dom->fabric)->fid.api_version,
			  FI_VERSION(1, 5)))
		buf->err_data_size = 0;
	else
		buf->err_data = NULL;
	return 1;
}

static uint64_t ms_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* No wait object: a blocking read spins on progress (timeout in ms, < 0:
 * for ever) until an entry, an error or fi_cq_signal. */
static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src,
			    const void *cond, int timeout)
{
	struct pp_fi_cq *cq = (struct pp_fi_cq *)fcq;
	(void)cond;
	uint64_t end = timeout < 0 ? UINT64_MAX : ms_now() + (uint64_t)timeout;
	for (;;) {
		ssize_t n = cq_readfrom(fcq, buf, count, src);
		if (n != -FI_EAGAIN)
			return n;
		if (__atomic_exchange_n(&cq->signaled, 0, __ATOMIC_ACQ_REL))
			return -FI_EAGAIN;
		if (ms_now() >= end)
			return -FI_EAGAIN;
	}
}

static ssize_t cq_sread(struct fid_cq *fcq, void *buf, size_t count, const void *cond, int timeout)
{
	return cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fcq)
{
	struct pp_fi_cq *cq = (struct pp_fi_cq *)fcq;
	__atomic_store_n(&cq->signaled, 1, __ATOMIC_RELEASE);
	return 0;
}

static const char *cq_strerror(struct fid_cq *fcq, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	(void)fcq;
	(void)err_data;
	const char *s;
	switch (prov_errno) {
	case ECONNRESET:
		s = "peer lost: no acknowledgement within timeout_ms, or it left";
		break;
	case EMSGSIZE:
		s = "message truncated: longer than the receive buffer";
		break;
	case ENOMSG:
		s = "no message matched the peek";
		break;
	default:
		s = fi_strerror(prov_errno);
		break;
	}
	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return s;
}

static struct fi_ops_cq cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = cq_read,
    .readfrom = cq_readfrom,
    .readerr = cq_readerr,
    .sread = cq_sread,
    .sreadfrom = cq_sreadfrom,
    .signal = cq_signal,
    .strerror = cq_strerror,
};

static int cq_close(struct fid *fid)
{
	struct pp_fi_cq *cq = (struct pp_fi_cq *)fid;
	for (int i = 0; i < PP_FI_BINDS; i++)
		if (cq->eps[i])
			return -FI_EBUSY;
	pp_fi_lock(cq->dom);
	cq->dom->refs--;
	pp_fi_unlock(cq->dom);
	free(cq->ok.mem);
	free(cq->err.mem);
	free(cq);
	return 0;
}

static struct fi_ops cq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cq_close,
    .bind = pp_fi_no_bind,
    .control = pp_fi_no_control,
    .ops_open = pp_fi_no_ops_open,
};

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return 0;
	}
}

int pp_fi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **out,
		  void *context)
{
	struct pp_fi_domain *dom = (struct pp_fi_domain *)domain;
	if (!attr || !entry_size(attr->format))
		return -FI_EINVAL;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS; /* no file descriptor to wait on: the engine polls */
	if (attr->flags & FI_AFFINITY || attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_ENOSYS;
	struct pp_fi_cq *cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->fid.fid.fclass = FI_CLASS_CQ;
	cq->fid.fid.context = context;
	cq->fid.fid.ops = &cq_fi_ops;
	cq->fid.ops = &cq_ops;
	cq->dom = dom;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_TAGGED : attr->format;
	cq->esize = entry_size(cq->format);
	cq->ok.esize = sizeof(struct pp_fi_cqe);
	cq->err.esize = sizeof(struct pp_fi_cqerr);
	pp_fi_lock(dom);
	dom->refs++;
	pp_fi_unlock(dom);
	*out = &cq->fid;
	return 0;
}
