/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues. Progress is manual: every read runs one progress pass
 * of each endpoint bound to the queue first. Entries wait in growing rings,
 * so the engine never has a completion it cannot report (FI_RM_ENABLED);
 * errors wait in their own, and a read returns -FI_EAVAIL while one does.
 * With a wait object a blocking read sleeps on the ports between passes.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "pp_fi.h"

/* A full ring (pp_fi_ring_slot): twice the entries, in order from 0. */
void *pp_fi_ring_grow(struct pp_fi_ring *r)
{
	size_t cap = r->cap ? 2 * r->cap : 256;
	uint8_t *mem = malloc(cap * r->esize);
	if (!mem)
		return NULL;
	for (size_t i = r->head; i != r->tail; i++)
		memcpy(mem + (i - r->head) * r->esize, r->mem + (i & (r->cap - 1)) * r->esize,
		       r->esize);
	free(r->mem);
	r->mem = mem;
	r->tail -= r->head;
	r->head = 0;
	r->cap = cap;
	return r->mem + r->tail * r->esize;
}

int pp_fi_ring_push(struct pp_fi_ring *r, const void *e)
{
	void *slot = pp_fi_ring_slot(r);
	if (!slot)
		return -FI_ENOMEM;
	memcpy(slot, e, r->esize);
	pp_fi_ring_commit(r);
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

struct pp_fi_cqe *pp_fi_cq_slot(struct pp_fi_cq *cq)
{
	struct pp_fi_cqe *e = pp_fi_ring_slot(&cq->ok);
	if (!e)
		PP_FI_WARN(FI_LOG_CQ, "completion lost: no memory\n");
	return e;
}

void pp_fi_cq_write(struct pp_fi_cq *cq, const struct pp_fi_cqe *e)
{
	struct pp_fi_cqe *slot = pp_fi_cq_slot(cq);
	if (slot) {
		*slot = *e;
		pp_fi_ring_commit(&cq->ok);
	}
}

void pp_fi_cq_write_err(struct pp_fi_cq *cq, const struct pp_fi_cqerr *e)
{
	if (pp_fi_ring_push(&cq->err, e))
		PP_FI_WARN(FI_LOG_CQ, "error completion lost: no memory\n");
}

/* The bound endpoints are the first neps of eps, so a read's progress
 * looks at no empty slot. */
void pp_fi_cq_bind(struct pp_fi_cq *cq, struct pp_fi_ep *ep)
{
	for (int i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep)
			return;
	if (cq->neps < PP_FI_BINDS)
		cq->eps[cq->neps++] = ep;
}

void pp_fi_cq_unbind(struct pp_fi_cq *cq, struct pp_fi_ep *ep)
{
	for (int i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep) {
			cq->eps[i] = cq->eps[--cq->neps];
			cq->eps[cq->neps] = NULL;
			return;
		}
}

static void progress(struct pp_fi_cq *cq)
{
	for (int i = 0; i < cq->neps; i++)
		pp_fi_ep_progress(cq->eps[i]);
}

static ssize_t read_locked(struct pp_fi_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	/* A read of 0 entries is a request for progress alone (fabtests' way).
	 * A read right after one whose pass gave entries skips the pass: an
	 * MPI reads until the queue is empty (Open MPI's mtl ofi: again after
	 * every entry), and a second pass at once finds nothing new but costs
	 * as much as the first, on the path of the message just taken (under
	 * Open MPI over pp, 8 B: about 340 instructions a provider read, of
	 * about 530 to 630 a progress call, callgrind).
	 * The read after it makes progress again. */
	int skip = cq->fruitful && count;
	cq->fruitful = 0;
	if ((pp_fi_ring_len(&cq->ok) < count || !count) && !skip) {
		progress(cq);
		cq->fruitful = pp_fi_ring_len(&cq->ok) != 0;
	}
	if (pp_fi_ring_len(&cq->err))
		return -FI_EAVAIL;
	size_t n = 0;
	while (n < count && pp_fi_ring_len(&cq->ok)) {
		const struct pp_fi_cqe *e = pp_fi_ring_head(&cq->ok);
		/* Every format is a prefix of the tagged entry. */
		memcpy((uint8_t *)buf + n * cq->esize, &e->e, cq->esize);
		if (src)
			src[n] = e->src;
		cq->ok.head++;
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

/* What a sleeping read waits on: the wake-up eventfd and each bound,
 * enabled endpoint's port, until the earliest engine timer (*until,
 * CLOCK_MONOTONIC ns). Returns the descriptors in p, or -1 when one
 * endpoint's port has none (it must be polled: no sleep). */
static int wait_set(struct pp_fi_cq *cq, struct pollfd *p, uint64_t *until)
{
	int n = 0;
	p[n++] = (struct pollfd){.fd = cq->wake_fd, .events = POLLIN};
	pp_fi_lock(cq->dom);
	for (int i = 0; i < PP_FI_BINDS && n >= 0; i++) {
		int fd;
		uint64_t exp;
		if (!cq->eps[i] || pp_fi_ep_wait(cq->eps[i], &fd, &exp))
			continue;
		if (fd < 0) {
			n = -1;
			break;
		}
		if (exp < *until)
			*until = exp;
		p[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
	}
	pp_fi_unlock(cq->dom);
	return n;
}

/* A blocking read (timeout in ms, < 0: for ever) until an entry, an error
 * or fi_cq_signal. With a wait object (FI_WAIT_FD, FI_WAIT_UNSPEC) it sleeps
 * between progress passes until a frame arrives at a bound endpoint's port,
 * an engine timer is due or the queue is signalled; without one, or on a
 * port with no descriptor (DPDK), it polls. */
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
		uint64_t now = ms_now(), timer = UINT64_MAX;
		if (now >= end)
			return -FI_EAGAIN;
		struct pollfd p[PP_FI_BINDS + 1];
		int np = cq->wait ? wait_set(cq, p, &timer) : -1;
		if (np < 0)
			continue;
		uint64_t until = timer == UINT64_MAX ? end : (timer + 999999u) / 1000000u;
		if (until > end)
			until = end;
		int ms = until == UINT64_MAX ? -1 : until > now ? (int)(until - now) : 0;
		if (poll(p, (nfds_t)np, ms) > 0 && p[0].revents) {
			uint64_t v;
			if (read(cq->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				return -errno;
		}
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
	uint64_t v = 1;
	if (cq->wake_fd >= 0 && write(cq->wake_fd, &v, sizeof(v)) != sizeof(v))
		return -errno;
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

/* The wait object's descriptors (-1: not open). */
static void close_waits(struct pp_fi_cq *cq)
{
	if (cq->wake_fd >= 0)
		close(cq->wake_fd);
	if (cq->ep_fd >= 0)
		close(cq->ep_fd);
	if (cq->timer_fd >= 0)
		close(cq->timer_fd);
}

static int cq_close(struct fid *fid)
{
	struct pp_fi_cq *cq = (struct pp_fi_cq *)fid;
	for (int i = 0; i < PP_FI_BINDS; i++)
		if (cq->eps[i])
			return -FI_EBUSY;
	pp_fi_lock(cq->dom);
	cq->dom->refs--;
	pp_fi_unlock(cq->dom);
	close_waits(cq);
	free(cq->ok.mem);
	free(cq->err.mem);
	free(cq);
	return 0;
}

/* FI_GETWAIT: one descriptor for the application's own poll, readable when a
 * frame arrives at a bound endpoint's port or the queue is signalled (an
 * epoll of those, brought up to date at each call: endpoints have ports
 * once enabled). A wake-up may bring no completion (an ack): the
 * application reads, and waits again. It must not wait past the engine's
 * timers either: fi_trywait says when it may. */
/* Bring the epoll set up to date with the np descriptors of p. */
static int watch(struct pp_fi_cq *cq, const struct pollfd *p, int np)
{
	for (int i = 0; i < np; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = p[i].fd};
		if (epoll_ctl(cq->ep_fd, EPOLL_CTL_ADD, p[i].fd, &ev) && errno != EEXIST)
			return -errno;
	}
	return 0;
}

static int cq_getwait(struct pp_fi_cq *cq, int *out)
{
	struct pollfd p[PP_FI_BINDS + 1];
	uint64_t until = UINT64_MAX;
	int np = wait_set(cq, p, &until);
	if (np < 0)
		return -FI_ENODATA; /* a port without a descriptor: poll it */
	int rc = watch(cq, p, np);
	if (rc)
		return rc;
	*out = cq->ep_fd;
	return 0;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct pp_fi_cq *cq = (struct pp_fi_cq *)fid;
	if (!cq->wait)
		return -FI_ENOSYS;
	switch (command) {
	case FI_GETWAIT:
		return cq_getwait(cq, arg);
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = FI_WAIT_FD;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

/* Before the application sleeps on FI_GETWAIT's descriptor: nothing to
 * read, no engine timer due, and the timerfd in that descriptor's set armed
 * for the next one, so that a resend or an owed ack is not slept through. */
int pp_fi_cq_trywait(struct fid *fid)
{
	struct pp_fi_cq *cq = (struct pp_fi_cq *)fid;
	struct pollfd p[PP_FI_BINDS + 1];
	uint64_t until = UINT64_MAX, v;
	pp_fi_lock(cq->dom);
	int ready = pp_fi_ring_len(&cq->ok) || pp_fi_ring_len(&cq->err);
	pp_fi_unlock(cq->dom);
	if (ready)
		return -FI_EAGAIN;
	int np = cq->wait ? wait_set(cq, p, &until) : -1;
	if (np < 0)
		return -FI_ENOSYS;
	/* Endpoints enabled since FI_GETWAIT (fabtests ask before): theirs too. */
	int rc = watch(cq, p, np);
	if (rc)
		return rc;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (until <= (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec)
		return -FI_EAGAIN; /* a timer is due: progress first */
	if (read(cq->timer_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	struct itimerspec t = {0};
	if (until != UINT64_MAX)
		t.it_value = (struct timespec){.tv_sec = (time_t)(until / 1000000000u),
					       .tv_nsec = (long)(until % 1000000000u)};
	if (timerfd_settime(cq->timer_fd, TFD_TIMER_ABSTIME, &t, NULL))
		return -errno;
	return 0;
}

static struct fi_ops cq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cq_close,
    .bind = pp_fi_no_bind,
    .control = cq_control,
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
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS; /* wait sets, mutex and condition, yield */
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
	cq->wait = attr->wait_obj != FI_WAIT_NONE;
	cq->wake_fd = cq->ep_fd = cq->timer_fd = -1;
	if (cq->wait) {
		cq->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		cq->ep_fd = epoll_create1(EPOLL_CLOEXEC);
		cq->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = cq->wake_fd};
		struct epoll_event tv = {.events = EPOLLIN, .data.fd = cq->timer_fd};
		if (cq->wake_fd < 0 || cq->ep_fd < 0 || cq->timer_fd < 0 ||
		    epoll_ctl(cq->ep_fd, EPOLL_CTL_ADD, cq->wake_fd, &ev) ||
		    epoll_ctl(cq->ep_fd, EPOLL_CTL_ADD, cq->timer_fd, &tv)) {
			int e = errno;
			close_waits(cq);
			free(cq);
			return -e;
		}
	}
	pp_fi_lock(dom);
	dom->refs++;
	pp_fi_unlock(dom);
	*out = &cq->fid;
	return 0;
}
