/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "ppd" backend: a rank's port served by its node daemon ppd (see
 * ppd_shm.h for the attach protocol and the shared region). Device string:
 *   ppd:job=JOB,rank=RANK,size=SIZE,inc=INC,token=HEX,timeout=MS,path=SOCKET
 * (the runtime builds it from daemon=SOCKET; timeout bounds the attach).
 * A daemon that dies is noticed by its socket's end of file, looked at
 * while the rank waits (an idle receive, a placement cancel): from then on
 * ppd_port_gone says so and nothing waits for the daemon. The rank never touches the NIC:
 * the engine writes each frame straight into a tx slot of the shared region
 * and tx_burst publishes one record per frame on the tx ring; rx_burst hands
 * out rx slots the daemon filled. One queue pair. attach_ext appends bytes of
 * the rank's own memory, which the daemon reads with process_vm_readv on this
 * process (so it can only ever read what this process may read).
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pp_log.h"
#include "pp_port.h"
#include "pp_prefault.h"
#include "ppd_place.h"
#include "ppd_pull.h"
#include "ppd_shm.h"
#include "ring.h"

#define PPD_IDLE_SPINS 4   /* empty polls before each one yields the core */
#define PPD_GONE_EVERY 256 /* idle polls between looks at the daemon's socket */
/* Empty polls further apart than this are not a wait loop spinning but an
 * application that computes and polls now and then (pp_progress, pp_test
 * between chunks of work): they do not count towards giving the core up. */
#define PPD_SPIN_GAP_NS 1000

/* Bytes attached to a tx slot by attach_ext, and whom to tell when done. */
struct ext {
	uint64_t addr;		 /* in this process */
	uint32_t len;		 /* bytes */
	void (*done)(void *arg); /* called once the daemon is done with them */
	void *arg;		 /* its argument */
};

struct ppd_port {
	struct pp_port base;	       /* must be first */
	int sock;		       /* connection to the daemon; closing it detaches */
	int wake_fd;		       /* the home handler's eventfd: written when it dozes */
	uint8_t *mem;		       /* the shared region */
	size_t mem_len;		       /* its size */
	struct ppd_region_hdr *hdr;    /* its header */
	struct pp_shm_ring tx, rx;     /* producer of tx, consumer of rx */
	uint32_t ntx, nrx;	       /* slots of each kind */
	struct pp_buf *bufs;	       /* ntx tx slots, then nrx rx slots */
	struct ext *ext;	       /* per tx slot */
	uint32_t *tx_free;	       /* free tx slot numbers (a stack) */
	uint32_t ntx_free;	       /* how many */
	uint32_t *inflight;	       /* tx slots in send order (ring of ntx) */
	uint64_t sent, reclaimed;      /* frames published, slots taken back */
	uint32_t rxfree[PPD_RX_SLOTS]; /* rx slots to give back */
	uint32_t nrxfree;	       /* how many */
	uint32_t idle;		       /* rx_burst calls in a row that found nothing */
	uint64_t idle_t;	       /* when the last of them returned (ppd_now_ns) */
	uint32_t empty;		       /* rx_burst calls that found nothing, ever */
	struct pp_port_stats st;       /* counters */
	uint64_t pulls_seen;	       /* hdr->pulls_done when last polled */
	uint32_t pulls_used;	       /* pull entries not FREE (ours to count) */
	int pulls_again;	       /* an ended entry waits for its PULL: poll again */
	uint32_t places_used;	       /* placement entries not FREE */
	uint8_t placed[PPD_RX_SLOTS];  /* by rx slot: it holds a placed frame's headers */
	int gone;		       /* the daemon is gone (its socket ended, or it said so) */
	int home_core;		       /* the home handler's core (hdr->home_core, read once) */
	uint64_t handovers;	       /* times hand_over gave the core to the home handler */
};

static struct ppd_port *to_ppd(struct pp_port *p)
{
	return (struct ppd_port *)p;
}

/* Parse "job=J,rank=R,size=S,inc=I,token=T,timeout=MS,path=P".
 * Errors: -EINVAL. */
static int parse_dev(const char *dev, struct ppd_attach_req *req, unsigned *timeout_ms,
		     const char **path)
{
	unsigned job, rank, size, inc;
	unsigned long long token;
	int n = 0;
	if (sscanf(dev, "job=%u,rank=%u,size=%u,inc=%u,token=%llx,timeout=%u,path=%n", &job, &rank,
		   &size, &inc, &token, timeout_ms, &n) != 6 ||
	    !n || !dev[n] || rank >= size || !inc || !*timeout_ms)
		return -EINVAL;
	*req = (struct ppd_attach_req){.magic = PPD_MAGIC,
				       .version = PPD_VERSION,
				       .job = job,
				       .rank = rank,
				       .size = size,
				       .inc = inc,
				       .token = token};
	*path = dev + n;
	return 0;
}

/* Bound every send and receive on s by ms (0: no bound). */
static void sock_timeout(int s, unsigned ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (long)(ms % 1000) * 1000};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Connect, send req, receive the answer and the memfd, within timeout_ms.
 * Errors: -ENODEV no daemon there, -EPERM refused, -ETIMEDOUT no answer,
 * -EPROTO, -errno. */
static int attach(const char *path, const struct ppd_attach_req *req, unsigned timeout_ms,
		  int *sock_out, int fd_out[2], struct ppd_attach_rep *rep)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return -EINVAL;
	strcpy(sa.sun_path, path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;
		close(s);
		pp_err("ppd: cannot reach the daemon at %s: %s (is ppd running%s?)", path,
		       strerror(e), e == EACCES ? ", and may this user attach" : "");
		return e == EACCES ? -EPERM : -ENODEV;
	}
	sock_timeout(s, timeout_ms);
	/* The daemon reaches this process's memory as this user would (its
	 * ptrace rule, apps/ppd/mem.c). Where Yama asks more than the same
	 * user (ptrace_scope 1), this process names the daemon it connected
	 * to as the one that may; without Yama the call fails and nothing is
	 * needed. */
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crl) == 0 && cr.pid > 0)
		(void)prctl(PR_SET_PTRACER, (unsigned long)cr.pid, 0, 0, 0);
	if (send(s, req, sizeof(*req), MSG_NOSIGNAL) != (ssize_t)sizeof(*req)) {
		int e = errno;
		close(s);
		if (e == EAGAIN) {
			pp_err("ppd: the daemon at %s took no request within %u ms", path,
			       timeout_ms);
			return -ETIMEDOUT;
		}
		return -EPROTO;
	}
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	struct iovec iov = {rep, sizeof(*rep)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cm.buf,
			    .msg_controllen = sizeof(cm.buf)};
	ssize_t got = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	if (got < 0 && errno == EAGAIN) {
		close(s);
		pp_err("ppd: the daemon at %s did not answer within %u ms", path, timeout_ms);
		return -ETIMEDOUT;
	}
	if (got != (ssize_t)sizeof(*rep)) {
		close(s);
		pp_err("ppd: the daemon at %s closed the connection without an answer", path);
		return -EPROTO;
	}
	sock_timeout(s, 0); /* from now on the connection only says the daemon is alive */
	rep->message[sizeof(rep->message) - 1] = '\0';
	if (rep->status) {
		close(s);
		pp_err("ppd: the daemon refused: %s", rep->message);
		return rep->status < 0 ? rep->status : -EPROTO;
	}
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    (c->cmsg_len != CMSG_LEN(sizeof(int)) && c->cmsg_len != CMSG_LEN(2 * sizeof(int)))) {
		if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++)
				close(((int *)(void *)CMSG_DATA(c))[k]);
		close(s);
		return -EPROTO;
	}
	memcpy(fd_out, CMSG_DATA(c), c->cmsg_len - CMSG_LEN(0)); /* the eventfd: dozing */
	*sock_out = s;
	return 0;
}

static void ppd_close(struct pp_port *port)
{
	struct ppd_port *p = to_ppd(port);
	if (p->mem)
		munmap(p->mem, p->mem_len);
	if (p->sock >= 0)
		close(p->sock);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	free(p->bufs);
	free(p->ext);
	free(p->tx_free);
	free(p->inflight);
	free(p);
}

/* Check the header the daemon wrote and build the slot descriptors.
 * Errors: -EPROTO, -ENOMEM. */
static int map_region(struct ppd_port *p, const struct ppd_attach_req *req)
{
	const struct ppd_region_hdr *h = p->hdr;
	uint64_t slot = h->slot_bytes;
	if (p->mem_len < PPD_HDR_BYTES || h->magic != PPD_MAGIC || h->version != PPD_VERSION ||
	    h->job != req->job || h->rank != req->rank || slot < 128 || slot % 64 ||
	    h->tx_slots != PPD_TX_SLOTS || h->rx_slots != PPD_RX_SLOTS ||
	    h->tx_slot_off + slot * h->tx_slots > p->mem_len ||
	    h->rx_slot_off + slot * h->rx_slots > p->mem_len || h->tx_ring_off >= p->mem_len ||
	    h->rx_ring_off >= p->mem_len)
		return -EPROTO;
	if (pp_shm_ring_attach(&p->tx, p->mem + h->tx_ring_off) ||
	    pp_shm_ring_attach(&p->rx, p->mem + h->rx_ring_off))
		return -EPROTO;
	p->ntx = h->tx_slots;
	p->nrx = h->rx_slots;
	p->bufs = calloc(p->ntx + p->nrx, sizeof(*p->bufs));
	p->ext = calloc(p->ntx, sizeof(*p->ext));
	p->tx_free = calloc(p->ntx, sizeof(*p->tx_free));
	p->inflight = calloc(p->ntx, sizeof(*p->inflight));
	if (!p->bufs || !p->ext || !p->tx_free || !p->inflight)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->ntx + p->nrx; i++) {
		uint64_t off =
		    i < p->ntx ? h->tx_slot_off + slot * i : h->rx_slot_off + slot * (i - p->ntx);
		p->bufs[i] =
		    (struct pp_buf){.data = p->mem + off, .cap = (uint32_t)slot, .priv = p};
	}
	for (uint32_t i = 0; i < p->ntx; i++)
		p->tx_free[i] = p->ntx - 1 - i;
	p->ntx_free = p->ntx;
	return 0;
}

static int ppd_open(struct pp_port **port, const char *dev, const struct pp_port_conf *conf)
{
	(void)conf; /* one queue pair, whatever was asked: info says so */
	struct ppd_attach_req req;
	const char *path;
	unsigned timeout_ms;
	if (parse_dev(dev, &req, &timeout_ms, &path)) {
		pp_err("ppd: bad device '%s' (want "
		       "job=J,rank=R,size=S,inc=I,token=T,timeout=MS,path=SOCKET)",
		       dev);
		return -EINVAL;
	}
	struct ppd_port *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->sock = p->wake_fd = -1;
	struct ppd_attach_rep rep;
	int fd[2] = {-1, -1};
	int rc = attach(path, &req, timeout_ms, &p->sock, fd, &rep);
	if (rc)
		goto fail;
	p->wake_fd = fd[1];
	p->mem_len = rep.region;
	void *m = mmap(NULL, p->mem_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd[0], 0);
	close(fd[0]);
	if (m == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	p->mem = m;
	/* pp_prefault.h; the daemon may be writing it: each touch adds 0. */
	pp_prefault(m, p->mem_len);
	p->hdr = (struct ppd_region_hdr *)m;
	if ((rc = map_region(p, &req))) {
		pp_err("ppd: the region the daemon sent is not one this version understands");
		goto fail;
	}
	p->home_core = p->hdr->home_core;
	pp_info("ppd: rank %u of job %u attached to %s", req.rank, req.job, path);
	*port = &p->base;
	return 0;
fail:
	ppd_close(&p->base);
	return rc;
}

static int ppd_info(struct pp_port *port, struct pp_port_info *info)
{
	struct ppd_port *p = to_ppd(port);
	memset(info, 0, sizeof(*info));
	memcpy(info->mac, p->hdr->mac, 6);
	info->mtu = p->hdr->mtu;
	info->speed_mbps = p->hdr->speed_mbps; /* starts the engine's rate estimate */
	info->nb_queues = 1;
	info->buf_cap = p->hdr->slot_bytes;
	info->link_up = p->gone || p->hdr->daemon_gone ? 0 : 1;
	snprintf(info->driver, sizeof(info->driver), "ppd");
	return 0;
}

static int ppd_stats(struct pp_port *port, struct pp_port_stats *stats)
{
	struct ppd_port *p = to_ppd(port);
	*stats = p->st;
	stats->tx_failed = __atomic_load_n(&p->hdr->tx_failed, __ATOMIC_RELAXED);
	stats->rx_dropped = __atomic_load_n(&p->hdr->rx_dropped, __ATOMIC_RELAXED);
	return 0;
}

/* 1 once the daemon is gone: it said so in the region, or (probe) its end
 * of the connection is closed, which is all a killed daemon leaves. */
static int daemon_gone(struct ppd_port *p, int probe)
{
	if (!p->gone && (__atomic_load_n(&p->hdr->daemon_gone, __ATOMIC_ACQUIRE) || p->rx.err)) {
		if (p->rx.err) /* what the daemon writes cannot be read any more */
			pp_warn("ppd: the daemon's ring to this rank is broken: operations fail");
		p->gone = 1;
	}
	if (!p->gone && probe) {
		char c;
		ssize_t n = recv(p->sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			pp_warn("ppd: the node daemon is gone: this rank's operations fail");
			p->gone = 1;
		}
	}
	return p->gone;
}

static int daemon_gone_probe(void *arg)
{
	return daemon_gone(arg, 1);
}

/* Give a tx slot back to the free stack, telling attach_ext's owner. */
static void tx_slot_put(struct ppd_port *p, uint32_t slot)
{
	struct ext *e = &p->ext[slot];
	if (e->done) {
		void (*done)(void *) = e->done;
		e->done = NULL;
		e->len = 0;
		done(e->arg);
	}
	e->len = 0;
	p->tx_free[p->ntx_free++] = slot;
}

/* Take back the slots of frames the daemon has copied out. */
static void reclaim(struct ppd_port *p)
{
	uint64_t done = __atomic_load_n(&p->hdr->tx_done, __ATOMIC_ACQUIRE);
	if (done > p->sent)
		done = p->sent; /* never trust the count beyond what we sent */
	while (p->reclaimed < done)
		tx_slot_put(p, p->inflight[p->reclaimed++ % p->ntx]);
}

/* Records are in the tx ring: if the home handler dozes, wake it (the
 * fence pairs with the daemon's, ppd_shm.h). A daemon whose handlers never
 * doze gave no eventfd: then nothing, not even the fence. */
static void wake_daemon(struct ppd_port *p)
{
	if (p->wake_fd < 0)
		return;
	ppd_full_fence();
	if (__atomic_load_n(&p->hdr->dozing, __ATOMIC_RELAXED)) {
		uint64_t one = 1;
		ssize_t w = write(p->wake_fd, &one, sizeof(one)); /* full: it is woken anyway */
		(void)w;
	}
}

/* After frames went into the tx ring: a home handler awake on this very
 * core gets the core at once, so they leave now. Otherwise an application
 * that goes back to computing after a send keeps them in the ring until its
 * time slice ends or it calls in again (pp_pingpong's early receiver through
 * ppd, 4 B: 30 us one way against 11 in a ping-pong). A dozing handler is
 * woken by the doorbell (wake_daemon) and takes the core itself; a handler
 * on another core needs nothing. */
static void hand_over(struct ppd_port *p)
{
	if (p->home_core < 0 ||
	    (p->wake_fd >= 0 && __atomic_load_n(&p->hdr->dozing, __ATOMIC_RELAXED)))
		return;
	if (sched_getcpu() != p->home_core)
		return;
	sched_yield();
	p->handovers++;
	p->idle = 0;
}

/* Send the rx slots the engine is done with back to the daemon. */
static void flush_rxfree(struct ppd_port *p)
{
	while (p->nrxfree) {
		uint32_t n = p->nrxfree < PPD_RXFREE_MAX ? p->nrxfree : PPD_RXFREE_MAX;
		void *ptr;
		if (pp_shm_ring_reserve(&p->tx, (uint32_t)(sizeof(struct ppd_rec) + 4 * n), &ptr))
			return; /* full: the next call tries again */
		struct ppd_rec *r = ptr;
		*r = (struct ppd_rec){.type = PPD_REC_RXFREE, .n = (uint16_t)n};
		p->nrxfree -= n;
		memcpy(r + 1, p->rxfree + p->nrxfree, 4 * n);
		pp_shm_ring_commit(&p->tx, (uint32_t)(sizeof(*r) + 4 * n));
		wake_daemon(p);
	}
}

static unsigned ppd_alloc(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	struct ppd_port *p = to_ppd(port);
	reclaim(p);
	unsigned i = 0;
	for (; i < n && p->ntx_free; i++) {
		struct pp_buf *b = &p->bufs[p->tx_free[--p->ntx_free]];
		b->len = 0;
		bufs[i] = b;
	}
	if (i < n)
		p->st.alloc_failed++;
	return i;
}

static void ppd_free(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	struct ppd_port *p = to_ppd(port);
	for (unsigned i = 0; i < n; i++) {
		uint32_t idx = (uint32_t)(bufs[i] - p->bufs);
		if (idx < p->ntx)
			tx_slot_put(p, idx);
		else if (p->nrxfree < PPD_RX_SLOTS)
			p->rxfree[p->nrxfree++] = idx - p->ntx;
	}
	flush_rxfree(p);
}

static unsigned ppd_rx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs, unsigned n)
{
	struct ppd_port *p = to_ppd(port);
	unsigned got = 0;
	const void *ptr;
	uint32_t len;
	if (queue != 0)
		return 0;
	if (p->nrxfree)
		flush_rxfree(p);
	while (got < n && pp_shm_ring_peek(&p->rx, &ptr, &len) > 0) {
		struct ppd_rec r;
		memcpy(&r, ptr, sizeof(r) <= len ? sizeof(r) : len);
		pp_shm_ring_release(&p->rx);
		if (len < sizeof(r) || (r.type != PPD_REC_FRAME && r.type != PPD_REC_PLACED) ||
		    r.slot >= p->nrx || r.len > p->hdr->slot_bytes)
			continue; /* not from a daemon of this version: ignore */
		p->placed[r.slot] = r.type == PPD_REC_PLACED;
		struct pp_buf *b = &p->bufs[p->ntx + r.slot];
		b->len = r.len;
		b->ts_ns = 0;
		bufs[got++] = b;
		p->st.rx_frames++;
		p->st.rx_bytes += r.len;
	}
	/* The daemon may share this core: a rank that polls an empty ring for
	 * long gives it the core instead of spinning out its time slice. */
	if (got) {
		p->idle = 0;
	} else {
		/* Now and then such a rank looks whether the daemon is still
		 * there. Only a wait loop gives the core up: an empty poll long
		 * after the last one starts the count again. Measured through ppd,
		 * pp_pingpong's early receiver with --poll 2000 (pp_progress
		 * between chunks of compute) took 1 282 us a message, each
		 * call handing the core to the daemon, against 58 without. */
		uint64_t now = ppd_now_ns();
		if (now - p->idle_t > PPD_SPIN_GAP_NS)
			p->idle = 0;
		else if (p->wake_fd >= 0) /* a wait loop: a dozing daemon stays awake */
			__atomic_store_n(&p->hdr->spin_ns, now, __ATOMIC_RELAXED);
		if (++p->empty % PPD_GONE_EVERY == 0)
			daemon_gone(p, 1);
		if (++p->idle > PPD_IDLE_SPINS) {
			sched_yield();
			now = ppd_now_ns();
		}
		p->idle_t = now;
	}
	return got;
}

static unsigned ppd_tx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs, unsigned n)
{
	struct ppd_port *p = to_ppd(port);
	unsigned i = 0;
	if (queue != 0)
		return 0;
	reclaim(p); /* attach_ext's done callbacks run here, as pp_port.h says */
	for (; i < n; i++) {
		uint32_t slot = (uint32_t)(bufs[i] - p->bufs);
		void *ptr;
		if (pp_shm_ring_reserve(&p->tx, sizeof(struct ppd_rec), &ptr))
			break;
		const struct ext *e = &p->ext[slot];
		*(struct ppd_rec *)ptr = (struct ppd_rec){.type = PPD_REC_FRAME,
							  .slot = slot,
							  .len = bufs[i]->len,
							  .ext_len = e->len,
							  .ext_addr = e->addr};
		pp_shm_ring_commit(&p->tx, sizeof(struct ppd_rec));
		/* The daemon sends it: if it shares this core, the next empty
		 * poll gives it the core at once (ppd_rx_burst). */
		p->idle = PPD_IDLE_SPINS;
		p->inflight[p->sent++ % p->ntx] = slot;
		p->st.tx_frames++;
		p->st.tx_bytes += bufs[i]->len + e->len;
	}
	if (i) {
		wake_daemon(p);
		hand_over(p);
	}
	return i;
}

/* Errors: -EINVAL not a tx buffer of this port or bad range, -EBUSY one
 * attached already, -EMSGSIZE over the MTU. The range is not checked here:
 * the daemon reads it from this process, and a range this process cannot
 * read makes the frame fail (counted in tx_failed), with nothing sent. */
static int ppd_attach_ext(struct pp_port *port, struct pp_buf *buf, void *addr, uint32_t len,
			  void (*done)(void *arg), void *arg)
{
	struct ppd_port *p = to_ppd(port);
	uint32_t slot = (uint32_t)(buf - p->bufs);
	if (buf < p->bufs || slot >= p->ntx || !len || !done)
		return -EINVAL;
	struct ext *e = &p->ext[slot];
	if (e->done)
		return -EBUSY;
	if ((uint64_t)buf->len + len > (uint64_t)p->hdr->mtu + PP_ETH_HLEN)
		return -EMSGSIZE;
	*e = (struct ext){.addr = (uint64_t)(uintptr_t)addr, .len = len, .done = done, .arg = arg};
	return 0;
}

/* Any memory of this process may be attached: the daemon reads it through
 * the kernel, which checks it. */
static int ppd_mem_register(struct pp_port *port, void *addr, size_t len)
{
	(void)port, (void)addr, (void)len;
	return 0;
}

const struct pp_port_ops pp_port_ops_ppd = {
    .name = "ppd",
    .open = ppd_open,
    .close = ppd_close,
    .info = ppd_info,
    .stats = ppd_stats,
    .alloc = ppd_alloc,
    .free = ppd_free,
    .rx_burst = ppd_rx_burst,
    .tx_burst = ppd_tx_burst,
    .attach_ext = ppd_attach_ext,
    .mem_register = ppd_mem_register,
    .mem_unregister = ppd_mem_register,
};

/* ---- pull descriptors (ppd_pull.h) ---- */

static struct ppd_port *pull_port(struct pp_port *port)
{
	return port && port->ops == &pp_port_ops_ppd ? to_ppd(port) : NULL;
}

static int pull_cas(struct ppd_pull *x, uint32_t from, uint32_t to)
{
	return __atomic_compare_exchange_n(&x->state, &from, to, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

/* The live entry (not FREE) of send msg_id to dst, or NULL. */
static struct ppd_pull *pull_find(struct ppd_port *p, uint32_t dst, uint32_t msg_id)
{
	if (!p->pulls_used)
		return NULL;
	for (uint32_t i = 0; i < PPD_PULLS; i++) {
		struct ppd_pull *x = &p->hdr->pulls[i];
		if (__atomic_load_n(&x->state, __ATOMIC_ACQUIRE) != PPD_PULL_FREE &&
		    x->dst == dst && x->msg_id == msg_id)
			return x;
	}
	return NULL;
}

int ppd_port_pull_post(struct pp_port *port, uint32_t dst, uint32_t msg_id, uint64_t tag,
		       const void *buf, uint64_t len, uint64_t off, uint32_t timeout_ms)
{
	struct ppd_port *p = pull_port(port);
	if (!p)
		return -ENOTSUP;
	if (off >= len)
		return -EINVAL;
	if (p->pulls_used == PPD_PULLS || daemon_gone(p, 0))
		return -ENOSPC;
	for (uint32_t i = 0; i < PPD_PULLS; i++) {
		struct ppd_pull *x = &p->hdr->pulls[i];
		if (__atomic_load_n(&x->state, __ATOMIC_ACQUIRE) != PPD_PULL_FREE)
			continue;
		x->dst = dst;
		x->msg_id = msg_id;
		x->tag = tag;
		x->addr = (uint64_t)(uintptr_t)buf;
		x->len = len;
		x->off = off;
		x->timeout_ms = timeout_ms;
		__atomic_store_n(&x->state, PPD_PULL_POSTED, __ATOMIC_RELEASE);
		p->pulls_used++;
		return 0;
	}
	return -ENOSPC;
}

int ppd_port_pull_claim(struct pp_port *port, uint32_t dst, uint32_t msg_id)
{
	struct ppd_port *p = pull_port(port);
	struct ppd_pull *x = p ? pull_find(p, dst, msg_id) : NULL;
	if (!x)
		return 0;
	if (pull_cas(x, PPD_PULL_POSTED, PPD_PULL_FREE)) {
		p->pulls_used--;
		return 0;
	}
	return 1; /* SERVING, or already DONE or FAILED: the poll reports it */
}

void ppd_port_pull_cancel(struct pp_port *port, uint32_t dst, uint32_t msg_id)
{
	struct ppd_port *p = pull_port(port);
	struct ppd_pull *x = p ? pull_find(p, dst, msg_id) : NULL;
	if (!x)
		return;
	if (pull_cas(x, PPD_PULL_POSTED, PPD_PULL_FREE)) {
		p->pulls_used--;
		return;
	}
	if (pull_cas(x, PPD_PULL_SERVING, PPD_PULL_CANCEL))
		return; /* the daemon ends it FAILED; the poll frees it (the
			 * engine no longer knows the send) */
	uint32_t st = __atomic_load_n(&x->state, __ATOMIC_ACQUIRE);
	if (st == PPD_PULL_DONE || st == PPD_PULL_FAILED) {
		__atomic_store_n(&x->state, PPD_PULL_FREE, __ATOMIC_RELEASE);
		p->pulls_used--;
	}
}

unsigned ppd_port_pull_poll(struct pp_port *port,
			    int (*done)(void *arg, uint32_t dst, uint32_t msg_id, int error),
			    void *arg)
{
	struct ppd_port *p = pull_port(port);
	if (!p || !p->pulls_used)
		return 0;
	uint64_t n = __atomic_load_n(&p->hdr->pulls_done, __ATOMIC_ACQUIRE);
	int gone = daemon_gone(p, 0), again = 0;
	if (n == p->pulls_seen && !gone && !p->pulls_again)
		return 0;
	p->pulls_seen = n;
	unsigned calls = 0;
	for (uint32_t i = 0; i < PPD_PULLS; i++) {
		struct ppd_pull *x = &p->hdr->pulls[i];
		uint32_t st = __atomic_load_n(&x->state, __ATOMIC_ACQUIRE);
		if (gone && (st == PPD_PULL_SERVING || st == PPD_PULL_POSTED) &&
		    pull_cas(x, st, PPD_PULL_FAILED))
			st = PPD_PULL_FAILED;
		if (gone && st == PPD_PULL_CANCEL && pull_cas(x, st, PPD_PULL_FAILED))
			st = PPD_PULL_FAILED;
		if (st != PPD_PULL_DONE && st != PPD_PULL_FAILED)
			continue;
		if (done(arg, x->dst, x->msg_id, st == PPD_PULL_DONE ? 0 : -EIO) == -EAGAIN) {
			again = 1; /* the daemon was quicker than the PULL's way here */
			continue;
		}
		__atomic_store_n(&x->state, PPD_PULL_FREE, __ATOMIC_RELEASE);
		p->pulls_used--;
		calls++;
	}
	p->pulls_again = again;
	return calls;
}

int ppd_port_set_key(struct pp_port *port, const uint8_t key[32])
{
	struct ppd_port *p = pull_port(port);
	if (!p)
		return -ENOTSUP;
	memcpy(p->hdr->auth_key, key, sizeof(p->hdr->auth_key));
	__atomic_store_n(&p->hdr->keyed, 1, __ATOMIC_RELEASE);
	return 0;
}

/* ---- placement descriptors (ppd_pull.h) ---- */

int ppd_port_place_post(struct pp_port *port, uint32_t src, uint32_t src_inc, uint32_t msg_id,
			void *buf, uint64_t len, uint64_t from_off)
{
	struct ppd_port *p = pull_port(port);
	if (!p)
		return -ENOTSUP;
	if (from_off >= len || !src_inc)
		return -EINVAL;
	if (p->places_used == PPD_PLACES || daemon_gone(p, 0))
		return -ENOSPC;
	int rc =
	    ppd_place_post(p->hdr, src, src_inc, msg_id, (uint64_t)(uintptr_t)buf, len, from_off);
	if (rc < 0)
		return rc;
	p->places_used++;
	return 0;
}

void ppd_port_place_cancel(struct pp_port *port, uint32_t src, uint32_t msg_id)
{
	struct ppd_port *p = pull_port(port);
	if (p && p->places_used && ppd_place_cancel(p->hdr, src, msg_id, daemon_gone_probe, p))
		p->places_used--;
}

int ppd_port_gone(struct pp_port *port)
{
	struct ppd_port *p = pull_port(port);
	return p ? daemon_gone(p, 0) : 0;
}

uint64_t ppd_port_handovers(struct pp_port *port)
{
	struct ppd_port *p = pull_port(port);
	return p ? p->handovers : 0;
}

int ppd_port_rx_placed(struct pp_port *port, const struct pp_buf *b)
{
	struct ppd_port *p = pull_port(port);
	if (!p || b < &p->bufs[p->ntx] || b >= &p->bufs[p->ntx + p->nrx])
		return 0;
	return p->placed[b - &p->bufs[p->ntx]];
}
