/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Event queues. The provider itself puts nothing here: its endpoints are
 * reliable datagrams (no connection events) and AV inserts complete at once
 * (no FI_AV_ASYNC events). Applications open one anyway (fi_pingpong does),
 * and those that write their own events (FI_WRITE) read them back, peek at
 * them, and wait for them on the queue's wait object: a descriptor
 * (FI_WAIT_FD, or FI_WAIT_UNSPEC) that is readable while an event is queued,
 * as libfabric's own providers give (prov/util/src/util_eq.c). Cold path:
 * one mutex per queue.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "pp_fi.h"

#define EQ_DATA	   256	 /* bytes an event carries at most */
#define EQ_DEFAULT 64	 /* entries when the attributes name none */
#define EQ_MAX	   65536 /* entries at most (calloc: pages only as written) */

struct eq_ent {
	uint32_t event;	       /* FI_NOTIFY, ... */
	uint32_t len;	       /* bytes of data */
	uint8_t data[EQ_DATA]; /* as written */
};

struct pp_fi_eq {
	struct fid_eq eq;     /* what the application holds */
	pthread_mutex_t lock; /* guards what follows */
	struct eq_ent *ents;  /* ring of cap entries */
	size_t cap, head, n;  /* size, first queued, how many */
	uint64_t flags;	      /* FI_WRITE: the application may write */
	int fd;		      /* eventfd: readable while n > 0 (-1: FI_WAIT_NONE) */
};

/* The descriptor's readiness follows the queue: called under the lock. */
static void fd_sync(struct pp_fi_eq *q)
{
	if (q->fd < 0)
		return;
	uint64_t v = 1;
	if (q->n) {
		struct pollfd p = {.fd = q->fd, .events = POLLIN};
		if (poll(&p, 1, 0) == 0 && write(q->fd, &v, sizeof(v)) != sizeof(v))
			PP_FI_WARN(FI_LOG_EQ, "eq: cannot signal its descriptor: %s\n",
				   strerror(errno));
	} else if (read(q->fd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
		PP_FI_WARN(FI_LOG_EQ, "eq: cannot clear its descriptor: %s\n", strerror(errno));
	}
}

static int eq_close(struct fid *fid)
{
	struct pp_fi_eq *q = container_of(fid, struct pp_fi_eq, eq.fid);
	if (q->fd >= 0)
		close(q->fd);
	pthread_mutex_destroy(&q->lock);
	free(q->ents);
	free(q);
	return 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct pp_fi_eq *q = container_of(fid, struct pp_fi_eq, eq.fid);
	switch (command) {
	case FI_GETWAIT:
		if (q->fd < 0)
			return -FI_ENODATA;
		*(int *)arg = q->fd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = q->fd < 0 ? FI_WAIT_NONE : FI_WAIT_FD;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops eq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = eq_close,
    .bind = pp_fi_no_bind,
    .control = eq_control,
    .ops_open = pp_fi_no_ops_open,
};

static ssize_t eq_read(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct pp_fi_eq *q = container_of(eq, struct pp_fi_eq, eq);
	ssize_t rc;
	pthread_mutex_lock(&q->lock);
	if (!q->n) {
		rc = -FI_EAGAIN;
	} else {
		const struct eq_ent *e = &q->ents[q->head];
		if (len < e->len) {
			rc = -FI_ETOOSMALL;
		} else {
			if (event)
				*event = e->event;
			memcpy(buf, e->data, e->len);
			rc = (ssize_t)e->len;
			if (!(flags & FI_PEEK)) {
				q->head = (q->head + 1) % q->cap;
				q->n--;
				fd_sync(q);
			}
		}
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

/* No error events are ever queued. */
static ssize_t eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	(void)eq;
	(void)buf;
	(void)flags;
	return -FI_EAGAIN;
}

static ssize_t eq_write(struct fid_eq *eq, uint32_t event, const void *buf, size_t len,
			uint64_t flags)
{
	struct pp_fi_eq *q = container_of(eq, struct pp_fi_eq, eq);
	if (!(q->flags & FI_WRITE) || flags || len > EQ_DATA || (len && !buf))
		return -FI_EINVAL;
	ssize_t rc = (ssize_t)len;
	pthread_mutex_lock(&q->lock);
	if (q->n == q->cap) {
		rc = -FI_EAGAIN;
	} else {
		struct eq_ent *e = &q->ents[(q->head + q->n) % q->cap];
		e->event = event;
		e->len = (uint32_t)len;
		memcpy(e->data, buf, len);
		q->n++;
		fd_sync(q);
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

static uint64_t ms_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Wait up to timeout ms (< 0: for ever) for an event: on the descriptor,
 * or without one in 1 ms sleeps (only another thread's write can come). */
static ssize_t eq_sread(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, int timeout,
			uint64_t flags)
{
	struct pp_fi_eq *q = container_of(eq, struct pp_fi_eq, eq);
	uint64_t end = timeout < 0 ? UINT64_MAX : ms_now() + (uint64_t)timeout;
	for (;;) {
		ssize_t rc = eq_read(eq, event, buf, len, flags);
		if (rc != -FI_EAGAIN)
			return rc;
		uint64_t now = ms_now();
		if (now >= end)
			return -FI_EAGAIN;
		int wait = end == UINT64_MAX ? -1 : (int)(end - now);
		if (q->fd >= 0) {
			struct pollfd p = {.fd = q->fd, .events = POLLIN};
			if (poll(&p, 1, wait) < 0 && errno != EINTR)
				return -errno;
		} else {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	(void)eq;
	(void)err_data;
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

static struct fi_ops_eq eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = eq_read,
    .readerr = eq_readerr,
    .write = eq_write,
    .sread = eq_sread,
    .strerror = eq_strerror,
};

int pp_fi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		  void *context)
{
	(void)fabric;
	if (!attr || attr->wait_set || attr->size > EQ_MAX || (attr->flags & ~(uint64_t)FI_WRITE))
		return -FI_EINVAL;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS; /* wait sets, mutex and condition, yield */
	struct pp_fi_eq *q = calloc(1, sizeof(*q));
	if (!q)
		return -FI_ENOMEM;
	q->cap = attr->size ? attr->size : EQ_DEFAULT;
	q->ents = calloc(q->cap, sizeof(*q->ents));
	q->flags = attr->flags;
	q->fd = attr->wait_obj == FI_WAIT_NONE ? -1 : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!q->ents || (attr->wait_obj != FI_WAIT_NONE && q->fd < 0)) {
		if (q->fd >= 0)
			close(q->fd);
		free(q->ents);
		free(q);
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&q->lock, NULL);
	q->eq.fid.fclass = FI_CLASS_EQ;
	q->eq.fid.context = context;
	q->eq.fid.ops = &eq_fi_ops;
	q->eq.ops = &eq_ops;
	*eq = &q->eq;
	return 0;
}

int pp_fi_eq_trywait(struct fid *fid)
{
	struct pp_fi_eq *q = container_of(fid, struct pp_fi_eq, eq.fid);
	pthread_mutex_lock(&q->lock);
	int busy = q->n != 0;
	pthread_mutex_unlock(&q->lock);
	return busy ? -FI_EAGAIN : 0;
}
