/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ppd's rank table, main thread only (cold path): an attach request becomes
 * an ACTIVE entry with its shared region; a death makes it DYING; once its
 * home handler said goodbye for it (GONE) and no handler can still hold a
 * pointer into it, reclaim frees the entry.
 *
 * What an attach must pass (the README's trust model): the connection was
 * accepted from an allowed uid and its process is pinned by a pidfd
 * (server.c); the request's numbers are within bounds (job size, rank,
 * incarnation not 0); the job is claimed here (claims.c: by its launcher or
 * root, before its ranks start) and the rank runs as the claimed uid and
 * gives the claimed token and size: a rank of another launch or of another
 * user can neither join it, take one of its ranks, nor speak for it, nor
 * bind a job number first. A job nobody claimed is refused, saying how to
 * claim it; with --bind-first-attacher (single-user nodes) it is bound to
 * its first rank instead. Last, no uid but root and the daemon's own may
 * hold more than --max-ranks-per-uid entries of the table (default
 * PPD_RANKS_UID, half of it), so one user cannot fill it and keep every
 * other from attaching.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pp_log.h"
#include "pp_prefault.h"
#include "ppd.h"

static uint32_t round_up(uint64_t v, uint64_t a)
{
	return (uint32_t)((v + a - 1) / a * a);
}

/* Create, seal and format the region of rank r. Errors: -errno. */
static int make_region(struct ppd *d, struct ppd_rank *r, int *memfd)
{
	uint64_t rb = pp_shm_ring_bytes(PPD_RING_CELLS);
	uint64_t tx_ring = PPD_HDR_BYTES;
	uint64_t rx_ring = round_up(tx_ring + rb, 4096);
	uint64_t tx_slot = round_up(rx_ring + rb, 4096);
	uint64_t rx_slot = tx_slot + (uint64_t)d->slot_bytes * PPD_TX_SLOTS;
	uint64_t total = round_up(rx_slot + (uint64_t)d->slot_bytes * PPD_RX_SLOTS, 4096);
	int fd = memfd_create("ppd-rank", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* Sealed: the rank cannot shrink it under the daemon (SIGBUS). */
	if (ftruncate(fd, (off_t)total) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;
		close(fd);
		return -e;
	}
	r->mem = m;
	r->mem_len = total;
	pp_prefault(m, total); /* pp_prefault.h: before the rank attaches */
	r->hdr = m;
	*r->hdr = (struct ppd_region_hdr){
	    .magic = PPD_MAGIC,
	    .version = PPD_VERSION,
	    .job = r->job,
	    .rank = r->rank,
	    .mtu = d->info.mtu,
	    .speed_mbps = d->info.speed_mbps,
	    .slot_bytes = d->slot_bytes,
	    .tx_slots = PPD_TX_SLOTS,
	    .rx_slots = PPD_RX_SLOTS,
	    .tx_ring_off = tx_ring,
	    .rx_ring_off = rx_ring,
	    .tx_slot_off = tx_slot,
	    .rx_slot_off = rx_slot,
	};
	memcpy(r->hdr->mac, d->info.mac, 6);
	r->tx_slots = r->mem + tx_slot;
	r->rx_slots = r->mem + rx_slot;
	/* Attached here, before the rank can write anything: the geometry
	 * each side keeps is the daemon's, not what the region says later. */
	pp_shm_ring_format(r->mem + tx_ring, PPD_RING_CELLS);
	pp_shm_ring_format(r->mem + rx_ring, PPD_RING_CELLS);
	pp_shm_ring_attach(&r->tx, r->mem + tx_ring);
	pp_shm_ring_attach(&r->rx, r->mem + rx_ring);
	atomic_flag_clear(&r->rx_lock);
	for (uint32_t i = 0; i < PPD_RX_SLOTS; i++) {
		r->rx_free[i] = PPD_RX_SLOTS - 1 - i;
		r->at_rank[i] = 0;
	}
	r->nrx_free = PPD_RX_SLOTS;
	r->tx_seq = r->tx_done = 0;
	memset(r->pend, 0, sizeof(r->pend));
	atomic_store(&r->zc_out, 0);
	/* Large frames leave straight from the tx slots where the port can
	 * read registered memory (DPDK external buffers). */
	r->zc = !d->tx_copy && pp_port_mem_register(d->port, r->tx_slots,
						    (size_t)d->slot_bytes * PPD_TX_SLOTS) == 0;
	*memfd = fd;
	return 0;
}

/* The least loaded handler: fewest ranks, then least busy. */
static int least_loaded(const struct ppd *d)
{
	int best = 0;
	for (int i = 1; i < d->nh; i++) {
		const struct ppd_handler *a = &d->h[i], *b = &d->h[best];
		if (a->nhome < b->nhome ||
		    (a->nhome == b->nhome && __atomic_load_n(&a->c.busy_ns, __ATOMIC_RELAXED) <
						 __atomic_load_n(&b->c.busy_ns, __ATOMIC_RELAXED)))
			best = i;
	}
	return best;
}

/* Entries of the table uid holds (any state but FREE: each takes room). */
static int uid_entries(const struct ppd *d, uid_t uid)
{
	int n = 0;
	for (int i = 0; i < PPD_MAX_RANKS; i++)
		n += atomic_load(&d->ranks[i].state) != PPD_RANK_FREE && d->ranks[i].uid == uid;
	return n;
}

/* How the process holding entry e has gone, though the main loop has not
 * seen it yet (its connection at its end, or its pidfd fired), or NULL. A
 * rank that finalizes and attaches again (pp_pingpong's modes, one pp_init
 * each) closed its connection before it connected anew, but the loop may
 * read the new request first: it accepted the connection in a pass whose
 * poll came before the close. */
static const char *holder_gone(const struct ppd_rank *e)
{
	char b;
	ssize_t n = recv(e->conn, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		return "connection closed";
	struct pollfd p = {.fd = e->pidfd, .events = POLLIN};
	return e->pidfd >= 0 && poll(&p, 1, 0) == 1 ? "process exited" : NULL;
}

int ppd_rank_attach(struct ppd *d, struct ppd_conn *c, const struct ppd_attach_req *req)
{
	const struct ucred *cr = &c->cr;
	if (req->version != PPD_VERSION) {
		ppd_reply(c->fd, -EPROTO, 0, NULL, 0, "version %u, this daemon speaks %u",
			  req->version, PPD_VERSION);
		return -EPROTO;
	}
	if (req->size == 0 || req->size > PPD_MAX_JOB_RANKS || req->rank >= req->size ||
	    !req->inc) {
		ppd_reply(c->fd, -EINVAL, 0, NULL, 0,
			  "bad request (rank %u of %u, at most %u; incarnation %u)", req->rank,
			  req->size, PPD_MAX_JOB_RANKS, req->inc);
		return -EINVAL;
	}
	struct ppd_claim *bound = ppd_claim_find(d, req->job);
	if (!bound && !d->bind_first) {
		ppd_reply(c->fd, -EACCES, 0, NULL, 0,
			  "job %u is not claimed here: its launcher claims it (pprun --daemon), "
			  "or root: ppd --claim JOB:UID:TOKEN[:SIZE]",
			  req->job);
		return -EACCES;
	}
	if (bound && (bound->uid != cr->uid || bound->token != req->token)) {
		ppd_reply(c->fd, -EPERM, 0, NULL, 0,
			  "job %u is bound here to another launch (uid %u, its own token)",
			  req->job, (unsigned)bound->uid);
		return -EPERM;
	}
	if (bound && bound->size && bound->size != req->size) {
		ppd_reply(c->fd, -EINVAL, 0, NULL, 0, "job %u has %u ranks here, not %u", req->job,
			  bound->size, req->size);
		return -EINVAL;
	}
	struct ppd_rank *r = NULL;
	for (int i = 0; i < PPD_MAX_RANKS; i++) {
		struct ppd_rank *e = &d->ranks[i];
		int st = atomic_load(&e->state);
		if (st == PPD_RANK_ACTIVE && e->job == req->job && e->rank == req->rank) {
			const char *how = holder_gone(e);
			if (how) {
				ppd_rank_died(e, how);
				continue;
			}
			ppd_reply(c->fd, -EADDRINUSE, 0, NULL, 0,
				  "rank %u of job %u is attached already", req->rank, req->job);
			return -EADDRINUSE;
		}
		if (!r && st == PPD_RANK_FREE)
			r = e;
	}
	if (cr->uid != 0 && cr->uid != geteuid() && uid_entries(d, cr->uid) >= d->max_ranks_uid) {
		ppd_reply(c->fd, -ENOSPC, 0, NULL, 0,
			  "uid %u has %d ranks here, its most (ppd --max-ranks-per-uid)", cr->uid,
			  d->max_ranks_uid);
		return -ENOSPC;
	}
	if (!r) {
		ppd_reply(c->fd, -ENOSPC, 0, NULL, 0, "%d ranks attached: no room for more",
			  PPD_MAX_RANKS);
		return -ENOSPC;
	}
	if (ppd_mem_uid_stuck(d, cr->uid)) {
		/* One thread of ours waits in the kernel on memory of an earlier
		 * rank of this uid (mem.c): no more until it is let go. */
		ppd_reply(c->fd, -EBUSY, 0, NULL, 0,
			  "a copy of the memory of an earlier rank of uid %u still waits in the "
			  "kernel (a file system that does not answer?)",
			  (unsigned)cr->uid);
		return -EBUSY;
	}
	if (!bound && ppd_claim_bind(d, req->job, cr->uid, req->token, req->size)) {
		ppd_reply(c->fd, -ENOSPC, 0, NULL, 0, "%d jobs are bound here: no room for more",
			  PPD_CLAIMS);
		return -ENOSPC;
	}
	if (bound && !bound->size)
		bound->size = req->size; /* claimed without a size: the first rank's */
	r->job = req->job;
	r->rank = req->rank;
	r->size = req->size;
	r->inc = req->inc;
	r->token = req->token;
	r->pid = cr->pid;
	r->uid = cr->uid;
	r->gid = cr->gid;
	/* Its memory as the rank itself may reach it (mem.c), or no attach:
	 * a process that is not plainly its own (a setuid image, or not
	 * dumpable) is refused here rather than at its first message. */
	atomic_store(&r->mem_held, 0);
	r->memfd = ppd_mem_open(cr->pid, c->pidfd, cr->uid, cr->gid);
	if (r->memfd < 0) {
		int e = r->memfd;
		ppd_reply(c->fd, e, 0, NULL, 0,
			  "cannot reach the memory of pid %d with its own rights (uid %u): %s",
			  (int)cr->pid, (unsigned)cr->uid, strerror(-e));
		return e;
	}
	int memfd = -1, rc = make_region(d, r, &memfd);
	if (rc) {
		close(r->memfd);
		ppd_reply(c->fd, rc, 0, NULL, 0, "cannot create the shared region: %s",
			  strerror(-rc));
		return rc;
	}
	/* The connection and the pidfd are the entry's from now on. */
	r->conn = c->fd;
	r->pidfd = c->pidfd;
	c->fd = c->pidfd = -1;
	r->home = least_loaded(d);
	d->h[r->home].nhome++;
	r->hdr->home_core = d->h[r->home].core;
	/* Active before the answer: once the rank has it, a node-mate may send
	 * to it at once, and a handler that did not see it yet would route
	 * that frame to the NIC. A rank gone before reading the answer is
	 * reaped like any dead one. */
	atomic_store_explicit(&r->state, PPD_RANK_ACTIVE, memory_order_release);
	int fds[2] = {memfd, d->h[r->home].wake_fd};
	ppd_reply(r->conn, 0, r->mem_len, fds, d->doze_fd >= 0 ? 2 : 1, NULL); /* ppd_shm.h */
	close(memfd);
	pp_info("ppd: rank %u of job %u (pid %d, incarnation %u) attached, handler %d", r->rank,
		r->job, (int)r->pid, r->inc, r->home);
	return 0;
}

int ppd_rank_key(const struct ppd_rank *r, uint8_t key[32])
{
	if (!__atomic_load_n(&r->hdr->keyed, __ATOMIC_ACQUIRE))
		return 0;
	memcpy(key, r->hdr->auth_key, 32);
	return 1;
}

void ppd_rank_died(struct ppd_rank *r, const char *how)
{
	int expect = PPD_RANK_ACTIVE;
	if (atomic_compare_exchange_strong(&r->state, &expect, PPD_RANK_DYING))
		pp_info("ppd: rank %u of job %u left (%s)", r->rank, r->job, how);
}

/* Wait until every running handler has begun a new pass: 0, or -ETIMEDOUT
 * after PPD_GRACE_NS (a handler held up: nothing is freed this time, and
 * the main thread goes on serving its socket and signals). */
#define PPD_GRACE_NS 100000000ull
static int grace(struct ppd *d)
{
	uint64_t seen[PPD_MAX_HANDLERS], end = ppd_now_ns() + PPD_GRACE_NS;
	for (int i = 0; i < d->nh; i++)
		seen[i] = atomic_load(&d->h[i].epoch);
	for (int i = 0; i < d->nh; i++)
		while (atomic_load(&d->h[i].epoch) == seen[i] && !atomic_load(&d->stop)) {
			if (ppd_now_ns() > end)
				return -ETIMEDOUT;
			usleep(50);
		}
	return 0;
}

/* Free the entries whose goodbye is said. Returns entries still in use. */
int ppd_ranks_reclaim(struct ppd *d)
{
	int used = 0;
	for (int i = 0; i < PPD_MAX_RANKS; i++) {
		struct ppd_rank *r = &d->ranks[i];
		int st = atomic_load(&r->state);
		if (st != PPD_RANK_GONE) {
			used += st != PPD_RANK_FREE;
			continue;
		}
		if (grace(d) || atomic_load(&r->zc_out)) {
			/* A handler may still hold it, or the port still reads
			 * some of its slots: not yet. */
			used++;
			continue;
		}
		if (r->zc)
			pp_port_mem_unregister(d->port, r->tx_slots,
					       (size_t)d->slot_bytes * PPD_TX_SLOTS);
		r->hdr->daemon_gone = 1;
		munmap(r->mem, r->mem_len);
		if (!atomic_load(&r->mem_held))
			close(r->memfd); /* else a given-up copy's thread closes it (mem.c) */
		close(r->conn);
		if (r->pidfd >= 0)
			close(r->pidfd);
		d->h[r->home].nhome--;
		r->mem = NULL;
		atomic_store(&r->state, PPD_RANK_FREE);
	}
	return used;
}
