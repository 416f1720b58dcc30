/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The intranode link: ranks of the job with the same node name share a
 * segment (shm/segment.h) and the engine's frames to them go through its
 * rings instead of the port; matching stays in the engine.
 *
 * Set-up (pp_shm_link_init, after discovery): the lowest local rank creates
 * the segment and sends each other local rank its nonce (tag PP_TAG_SHM, over
 * the port; 0 when it made no segment). Each opens and attaches (or refuses:
 * shm=off, an error) and answers 1 or 0; the creator records refusals in the
 * slots and, with every answer in, unlinks the name. A rank polls the ring
 * from a peer as soon as both are attached, and sends into rings once every
 * slot is settled and nothing is in flight with its peers by the port (so
 * no ring frame overtakes a port frame); until then frames go by the port,
 * and the engine takes frames from either.
 *
 * Pulled bytes (shm=on): the engine's publish hook describes each send to a
 * local rank in the pair's send table; where the receiver would send a PULL
 * its direct hook copies straight from the sender's buffer: memcpy when the
 * buffer is in a heap area of the segment (pp_malloc), else one
 * process_vm_readv. If cross-memory attach is refused, or with
 * shm=twocopy, the hook fails or is absent and the bytes come as DATA frames
 * through the rings. The hook also declines a long message (shm_long) when
 * the rings moved bytes from that peer faster lately: which of the two wins
 * changes with where the cores sit (shm/long_path.h).
 *
 * Early receiver (shm=on, shm_write=on): the engine's receive-queue hooks
 * describe each receive it may publish in the pair's receive-queue area
 * (shm/recvq.h: buffer address, or its segment offset for a pp_malloc
 * buffer); a sender that finds its message's receive there claims it and
 * writes the whole message in (one process_vm_writev, or memcpy into the
 * segment), then sends one empty FIRST frame with WRITTEN. Leaving, a rank
 * withdraws what it still has published.
 *
 * Split copies (shm=on, shm_help): a receiver about to copy a chunk of
 * shm_help bytes or more by one call offers the first half to its sender in
 * the same receive-queue area (a help entry) and copies the second half
 * while the sender, told by a PULL with HELP, writes the first (one
 * process_vm_writev, or memcpy into the segment): both cores copy at once.
 * An offer the sender has not claimed when the receiver's half is done is
 * withdrawn and the receiver copies that half too.
 *
 * A local peer that dies without a goodbye is noticed from its pid (pidfd)
 * within PP_SHM_CHECK_NS and declared lost.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cma.h"
#include "ctx.h"
#include "heap.h"
#include "long_path.h"
#include "pp_compiler.h"
#include "pp_log.h"
#include "recvq.h"
#include "ring.h"
#include "segment.h"

#define PP_SHM_RING_CELLS 4096 /* 256 KiB per ordered pair */
/* Intranode BTP: the paper's 16 bytes in the first push, which is matched;
 * the second push takes the total to the Ethernet default (760 bytes), so a
 * message is eager (its send completes without waiting for the receive) up
 * to the same size whether its ranks share a node or not, and no message
 * that small pays for a copy system call and a DONE round trip. */
#define PP_SHM_BTP1	16
#define PP_SHM_BTP2	744
#define PP_SHM_RX_BURST 64	  /* records per ring per pass at most */
#define PP_SHM_CHECK_NS 10000000u /* liveness checks of local peers */
/* Sender writes up to this size; a longer message is pulled by its receiver.
 * One-way latency, two ranks on cores 0 and 1 of a 2-core VM, writes on
 * against off: level to 512 KiB (21.5 against 22.3 us), then 105 against 75
 * us at 1 MiB and 424 against 384 at 4 MiB: writing into lines the
 * receiver's cache holds costs more than reading lines the sender's holds,
 * once the message no longer fits in a core's L2. */
#define PP_SHM_WRITE_MAX (512u << 10)

/* One other local rank. */
struct shm_peer {
	uint32_t rank;		 /* its rank */
	uint32_t idx;		 /* its slot */
	int32_t pid;		 /* its process, read once and checked (pp_shm_seg_peer_pid); 0:
				  * none that could be checked, so no single copies with it */
	int pidfd;		 /* readable once it has exited; -1: use kill(pid, 0) */
	uint8_t rx_on;		 /* its ring to us is polled */
	uint8_t tx_on;		 /* the engine's frames to it go into our ring */
	uint8_t dead;		 /* its process is gone */
	uint8_t exited;		 /* its slot's process had exited when we first looked */
	struct pp_shm_ring tx;	 /* us -> it */
	struct pp_shm_ring rx;	 /* it -> us */
	void *rec;		 /* a record reserved in tx and not filled yet, or NULL */
	uint32_t streak;	 /* lite records to it since the last record from it */
	struct pp_shm_path path; /* its long messages: our copy call or the rings */
	uint64_t help_t0;	 /* our offer to it was made then (0: none out) ... */
	uint64_t help_chunk;	 /* ... for a chunk this long: timed as one copy call */
};

struct pp_shm_link {
	struct pp_shm_seg seg;	 /* the mapping */
	struct pp_shm_heap heap; /* own pp_malloc area (size 0: none) */
	atomic_flag heap_lock;	 /* pp_malloc / pp_free from several threads */
	int setup;		 /* set-up still running: refresh rx_on */
	uint32_t npeers;	 /* other local ranks */
	struct shm_peer *peer;	 /* them */
	int32_t *by_rank;	 /* rank -> index in peer, or -1 */
	uint32_t nranks;	 /* ranks by_rank covers: the job's (an embedded
				  * engine's twin, one more, is no node-mate) */
	uint32_t frame_cap;	 /* bytes reserved per frame: MTU + Ethernet header */
	uint64_t next_check;	 /* time of the next liveness check */
	uint64_t copies;	 /* direct copies made */
	uint64_t bytes;		 /* bytes they moved */
	uint64_t posted;	 /* receives published in receive-queue areas */
	uint64_t writes;	 /* messages this rank wrote into a peer's receive */
	uint64_t write_bytes;	 /* bytes they moved */
	uint64_t write_fails;	 /* claimed receives whose write failed (sent as usual) */
	uint64_t helps_asked;	 /* parts of our copies offered to their senders */
	uint64_t helps;		 /* parts of our sends we wrote for their receivers */
	uint64_t help_bytes;	 /* bytes they moved */
};

/* ---- engine hooks ---- */

static struct shm_peer *peer_of(struct pp_shm_link *L, uint32_t rank)
{
	int32_t i = rank < L->nranks ? L->by_rank[rank] : -1;
	return i >= 0 ? &L->peer[i] : NULL;
}

/* 1 when the rest of a long message from pe comes through the rings
 * (shm_long; auto: shm/long_path.h). */
static int by_rings(const pp_ctx *ctx, struct shm_peer *pe, uint64_t len, uint64_t now)
{
	if (ctx->cfg.shm_long != PP_SHM_LONG_AUTO)
		return ctx->cfg.shm_long == PP_SHM_LONG_RINGS;
	return pp_shm_path_ring(&pe->path, len, now);
}

/* Send msg_id's description from pe's send table into *d: 0, or -ENOENT.
 * The sender can rewrite its descriptor at any moment: one private copy is
 * checked and used. */
static int send_desc(const struct pp_shm_link *L, const struct shm_peer *pe, uint32_t msg_id,
		     struct pp_shm_desc *d)
{
	const struct pp_shm_desc *sd = pp_shm_seg_desc(&L->seg, pe->idx, L->seg.me, msg_id);
	if (atomic_load_explicit(&sd->key, memory_order_acquire) != (((uint64_t)msg_id << 1) | 1))
		return -ENOENT;
	const volatile struct pp_shm_desc *v = sd;
	*d = (struct pp_shm_desc){.addr = v->addr, .len = v->len, .seg_off = v->seg_off};
	return 0;
}

/* 1 when d's buffer lies in the segment (pp_malloc): copied by memcpy. */
static int desc_in_seg(const struct pp_shm_link *L, const struct pp_shm_desc *d)
{
	return d->seg_off != PP_SHM_NO_OFFSET && d->seg_off <= L->seg.size &&
	       d->len <= L->seg.size - d->seg_off;
}

static int direct(void *arg, uint32_t src, uint32_t msg_id, uint64_t off, void *dst, uint64_t len)
{
	pp_ctx *ctx = arg;
	struct pp_shm_link *L = ctx->shm;
	struct shm_peer *pe = L ? peer_of(L, src) : NULL;
	if (!pe || !pe->tx_on)
		return -ENODEV;
	struct pp_shm_desc d;
	if (send_desc(L, pe, msg_id, &d) || off > d.len || len > d.len - off)
		return -ENOENT;
	if (desc_in_seg(L, &d)) {
		memcpy(dst, L->seg.base + d.seg_off + off, (size_t)len);
	} else {
		if (pp_shm_cma_denied() || pe->pid <= 0)
			return -EPERM;
		uint64_t t0 = pp_now_ns();
		/* An offer out: its chunk's way was chosen with it (help_offer). */
		if (!pe->help_t0 && by_rings(ctx, pe, len, t0))
			return -EXDEV; /* the engine pulls the rest through the rings */
		/* Only a long call is timed, and only while the peer does not
		 * stream earlier messages into our ring beside it: that shares
		 * the lines (after the rings, 12 GB/s calls that alone moved
		 * 16-18). A short one skips the look at the ring's line. */
		int timed = len >= PP_SHM_PATH_MIN && !pe->help_t0 && pp_shm_ring_empty(&pe->rx);
		int rc = pp_shm_cma_read(pe->pid, dst, d.addr + off, (size_t)len);
		if (rc)
			return rc;
		if (timed)
			pp_shm_path_copied(&pe->path, len, pp_now_ns() - t0);
	}
	L->copies++;
	L->bytes += len;
	return 0;
}

static void publish(void *arg, uint32_t dst, uint32_t msg_id, const void *buf, uint64_t len)
{
	pp_ctx *ctx = arg;
	struct pp_shm_link *L = ctx->shm;
	struct shm_peer *pe = L ? peer_of(L, dst) : NULL;
	if (!pe)
		return;
	struct pp_shm_desc *d = pp_shm_seg_desc(&L->seg, L->seg.me, pe->idx, msg_id);
	atomic_store_explicit(&d->key, 0, memory_order_relaxed);
	d->addr = (uint64_t)(uintptr_t)buf;
	d->len = len;
	d->seg_off = pp_shm_seg_offset(&L->seg, buf, len);
	atomic_store_explicit(&d->key, ((uint64_t)msg_id << 1) | 1, memory_order_release);
}

/* Receive-queue hooks (shm_write). */

/* The peer rank reaches through the rings, alive; NULL otherwise. */
static struct shm_peer *live_peer(pp_ctx *ctx, uint32_t rank)
{
	struct pp_shm_link *L = ctx->shm;
	struct shm_peer *pe = L ? peer_of(L, rank) : NULL;
	return pe && pe->tx_on && !pe->dead ? pe : NULL;
}

static int rq_post(void *arg, uint32_t src, uint64_t tag, uint64_t ignore, void *buf, uint64_t cap,
		   uint32_t expect)
{
	pp_ctx *ctx = arg;
	struct shm_peer *pe = live_peer(ctx, src);
	if (!pe)
		return -ENODEV;
	struct pp_shm_link *L = ctx->shm;
	uint64_t off = pp_shm_seg_offset(&L->seg, buf, cap);
	if (off == PP_SHM_NO_OFFSET && pp_shm_cma_denied())
		return -EPERM; /* the sender could not write it either */
	int slot = pp_shm_rq_post(pp_shm_seg_recvq(&L->seg, pe->idx, L->seg.me), tag, ignore,
				  (uint64_t)(uintptr_t)buf, off, cap, expect);
	if (slot >= 0)
		L->posted++;
	return slot;
}

/* The receive-queue area of the pair src -> us, src's peer in *pe; NULL when
 * src is none (or the areas were closed already). */
static struct pp_shm_rq *rq_in(pp_ctx *ctx, uint32_t src, struct shm_peer **pe)
{
	struct pp_shm_link *L = ctx->shm;
	*pe = L ? peer_of(L, src) : NULL;
	return *pe ? pp_shm_seg_recvq(&L->seg, (*pe)->idx, L->seg.me) : NULL;
}

static int rq_take(void *arg, uint32_t src, int slot, uint32_t msg_id, int written)
{
	struct shm_peer *pe;
	struct pp_shm_rq *q = rq_in(arg, src, &pe);
	if (!q)
		return -EPROTO;
	int rc = pp_shm_rq_take(q, slot, msg_id, written);
	if (rc)
		pp_warn("shm: receive-queue entry of rank %u for message %u in the wrong state",
			src, msg_id);
	return rc;
}

static int rq_withdraw(void *arg, uint32_t src, int slot)
{
	struct shm_peer *pe;
	struct pp_shm_rq *q = rq_in(arg, src, &pe);
	return q ? pp_shm_rq_withdraw(q, slot) : 0; /* closed already: nothing to withdraw */
}

/* Help hooks (shm_help): a copy call split with the sender (recvq.h). */

static int64_t help_offer(void *arg, uint32_t src, uint32_t msg_id, uint64_t off, void *dst,
			  uint64_t len)
{
	pp_ctx *ctx = arg;
	struct shm_peer *pe = live_peer(ctx, src);
	if (!pe || pe->pid <= 0 || pp_shm_cma_denied())
		return -ENODEV;
	struct pp_shm_link *L = ctx->shm;
	/* A sender's pp_malloc buffer is copied by one memcpy in the segment
	 * (the direct hook): no offer. */
	struct pp_shm_desc d;
	if (send_desc(L, pe, msg_id, &d) || desc_in_seg(L, &d))
		return -ENOENT;
	/* The chunk's way, chosen once for it (twice the half, to a page), as
	 * the direct hook would: when the rings move it, nothing is offered
	 * and nothing copied. */
	uint64_t now = pp_now_ns();
	if (by_rings(ctx, pe, 2 * len, now))
		return -EXDEV;
	int64_t pos =
	    pp_shm_rq_offer(pp_shm_seg_recvq(&L->seg, pe->idx, L->seg.me), msg_id, off,
			    (uint64_t)(uintptr_t)dst, pp_shm_seg_offset(&L->seg, dst, len), len);
	if (pos >= 0) {
		L->helps_asked++;
		pe->help_t0 = now;
		pe->help_chunk = 2 * len;
	}
	return pos;
}

static int help_settle(void *arg, uint32_t src, uint64_t pos)
{
	struct shm_peer *pe;
	struct pp_shm_rq *q = rq_in(arg, src, &pe);
	if (!q)
		return -ENODEV;
	int rc = pp_shm_rq_settle(q, pos);
	if (rc == -EAGAIN && !pe->dead)
		return rc;
	/* Both halves in: the chunk's speed is the copy call's (shm_long
	 * compares it with the rings'); one half withdrawn: the receiver's
	 * call for it is timed as usual. */
	if (rc == 0 && pe->help_chunk >= PP_SHM_PATH_MIN && pp_shm_ring_empty(&pe->rx))
		pp_shm_path_copied(&pe->path, pe->help_chunk, pp_now_ns() - pe->help_t0);
	pe->help_t0 = 0;
	/* A sender that died while it wrote never will: copied again. */
	return rc == -EAGAIN ? -ECONNRESET : rc;
}

static void help_serve(void *arg, uint32_t dst, uint64_t pos, uint32_t msg_id, const void *buf,
		       uint64_t len)
{
	pp_ctx *ctx = arg;
	struct shm_peer *pe = live_peer(ctx, dst);
	if (!pe || pe->pid <= 0)
		return; /* unclaimed: the receiver copies the part itself */
	struct pp_shm_link *L = ctx->shm;
	int64_t n = pp_shm_rq_help(pp_shm_seg_recvq(&L->seg, L->seg.me, pe->idx), pos, pe->pid,
				   L->seg.base, L->seg.size, msg_id, buf, len);
	if (n >= 0) {
		L->helps++;
		L->help_bytes += (uint64_t)n;
	}
}

static int rq_write(void *arg, uint32_t dst, uint32_t msg_id, uint64_t tag, const void *buf,
		    uint64_t len)
{
	pp_ctx *ctx = arg;
	if (len > PP_SHM_WRITE_MAX)
		return -ENOENT; /* pulled by the receiver (above) */
	struct shm_peer *pe = live_peer(ctx, dst);
	if (!pe)
		return -ENODEV;
	if (pe->pid <= 0)
		return -EPERM; /* no process we could check to write into */
	struct pp_shm_link *L = ctx->shm;
	int rc = pp_shm_rq_deliver(pp_shm_seg_recvq(&L->seg, L->seg.me, pe->idx), pe->pid,
				   L->seg.base, L->seg.size, tag, msg_id, buf, len);
	if (rc == 0) {
		L->writes++;
		L->write_bytes += len;
	} else if (rc != -ENOENT) {
		L->write_fails++;
	}
	return rc;
}

/* Lite messages (rule 6): the engine writes the record itself, into the
 * record pp_shm_link_tx keeps reserved (frame_cap) or a new one of the
 * cells its length needs, and commits it at once. */
static void *lite_reserve(void *arg, uint32_t dst, uint32_t len)
{
	pp_ctx *ctx = arg;
	struct shm_peer *pe = live_peer(ctx, dst);
	if (!pe || len > ctx->shm->frame_cap)
		return NULL;
	if (pe->rec)
		return pe->rec;
	void *rec = pp_shm_ring_reserve_fast(&pe->tx, len);
	if (!rec && pp_shm_ring_reserve(&pe->tx, len, &rec))
		return NULL;
	return rec;
}

/* Cells asked for ahead of a stream of one-cell lite records
 * (pp_shm_ring_warm). pp_pingpong and Open MPI's 8 B windows, cores far
 * apart (core_rtt 370-435 ns), against none: 4 cells 17.1 against 9.1-9.4 M
 * msgs/s native, 8.6-9.4 against 4.7-4.8 under Open MPI; 8 cells no gain
 * at 8 B; 1 cell 6.7 M under Open MPI. Asked on every record, 4 ahead cost
 * an 8 B ping-pong 70-150 ns one way: so only from the second record in a
 * row to a peer that sent nothing meanwhile (a stream, not a reply). Asked
 * after longer records too, native windows of 256 B to 4 KiB lost 20-45 %:
 * one-cell records only. */
#define PP_SHM_WARM_AHEAD 4u

static void lite_commit(void *arg, uint32_t dst, uint32_t len)
{
	pp_ctx *ctx = arg;
	struct shm_peer *pe = peer_of(ctx->shm, dst);
	pp_shm_ring_commit(&pe->tx, len);
	pe->rec = NULL;
	if (pe->streak++ && len <= PP_SHM_RING_CELL - PP_SHM_RING_REC_HDR)
		pp_shm_ring_warm(&pe->tx, PP_SHM_WARM_AHEAD);
}

void pp_shm_link_hooks(pp_ctx *ctx, struct pp_proto_hooks *h)
{
	const struct pp_config *c = &ctx->cfg;
	/* Pulled bytes copied straight between user buffers, unless
	 * shm=twocopy sends them through the rings. */
	if (c->shm == PP_SHM_ON)
		h->direct = direct;
	h->publish = publish;
	h->lite_reserve = lite_reserve;
	h->lite_commit = lite_commit;
	if (c->shm == PP_SHM_ON && c->shm_help) {
		h->help_offer = help_offer;
		h->help_settle = help_settle;
		h->help_serve = help_serve;
	}
	if (c->shm == PP_SHM_ON && c->shm_write) {
		h->rq_post = rq_post;
		h->rq_take = rq_take;
		h->rq_withdraw = rq_withdraw;
		h->rq_write = rq_write;
	}
}

/* ---- progress ---- */

/* Set-up: attach the rings of each peer that has attached too, and poll. */
static void refresh(struct pp_shm_link *L)
{
	for (uint32_t i = 0; i < L->npeers; i++) {
		struct shm_peer *pe = &L->peer[i];
		if (pe->rx_on || pp_shm_seg_state(&L->seg, pe->idx) != PP_SHM_ATTACHED)
			continue;
		uint32_t cells = L->seg.geom.ring_cells;
		if (pp_shm_ring_attach_cells(&pe->tx, pp_shm_seg_ring(&L->seg, L->seg.me, pe->idx),
					     cells) ||
		    pp_shm_ring_attach_cells(&pe->rx, pp_shm_seg_ring(&L->seg, pe->idx, L->seg.me),
					     cells))
			continue; /* not a sound ring: never polled */
		int pop = pp_shm_seg_populate(&L->seg, pe->idx);
		if (pop)
			pp_debug("shm: rings with rank %u not faulted in (%s): their first pass "
				 "pays a fault per page",
				 pe->rank, strerror(-pop));
		int pid = pp_shm_seg_peer_pid(&L->seg, pe->idx);
		pe->pid = pid > 0 ? pid : 0;
		/* Gone before we looked (it sent, then died): what is in its
		 * ring is taken, then it is lost (check_alive). */
		pe->exited = pid == -ESRCH;
		pe->rx_on = 1;
	}
}

static int exited(const struct shm_peer *pe)
{
	if (pe->exited)
		return 1;
	if (pe->pidfd >= 0) {
		struct pollfd p = {.fd = pe->pidfd, .events = POLLIN};
		return poll(&p, 1, 0) == 1;
	}
	return pe->pid > 0 && kill(pe->pid, 0) != 0 && errno == ESRCH;
}

/* A local peer gone without a goodbye has crashed (its process exited, or it
 * broke the rules of a ring it writes: ring.h). What is in progress with it
 * fails now (rather than after the retransmission timer gives up): it is
 * lost. Otherwise it is as if it had said goodbye: what it sent stays
 * receivable, receives only it could satisfy fail, and pp_finalize does not
 * wait for its goodbye. */
static void peer_lost(pp_ctx *ctx, struct shm_peer *pe, const char *why)
{
	pe->dead = 1;
	if (pp_membership_left(ctx, pe->rank, 1))
		pp_warn("shm: local rank %u (pid %d) %s; its operations fail", pe->rank,
			(int)pe->pid, why);
}

static void check_alive(pp_ctx *ctx, struct pp_shm_link *L)
{
	for (uint32_t i = 0; i < L->npeers; i++) {
		struct shm_peer *pe = &L->peer[i];
		/* What it wrote before it died is taken first. */
		if (pe->rx_on && !pe->dead && exited(pe) && pp_shm_ring_empty(&pe->rx))
			peer_lost(ctx, pe, "died");
	}
}

int pp_shm_link_rx_ready(const pp_ctx *ctx)
{
	const struct pp_shm_link *L = ctx->shm;
	if (pp_unlikely(L->setup))
		return 1;
	for (uint32_t i = 0; i < L->npeers; i++)
		if (L->peer[i].rx_on && pp_shm_ring_ready(&L->peer[i].rx))
			return 1;
	return 0;
}

unsigned pp_shm_link_rx(pp_ctx *ctx, uint64_t now)
{
	struct pp_shm_link *L = ctx->shm;
	unsigned n = 0;
	if (pp_unlikely(L->setup))
		refresh(L);
	for (uint32_t i = 0; i < L->npeers; i++) {
		struct shm_peer *pe = &L->peer[i];
		if (!pe->rx_on)
			continue;
		const void *rec;
		uint32_t len;
		int got = 0;
		for (unsigned k = 0; k < PP_SHM_RX_BURST && pp_shm_ring_ready(&pe->rx) &&
				     (got = pp_shm_ring_peek(&pe->rx, &rec, &len)) > 0;
		     k++) {
			/* A lite message that finds no room yet stays at the
			 * head, and what is behind it waits (engine.h). */
			if (pp_proto_input_local(ctx->eng, pe->rank, rec, len, now) == -EAGAIN)
				break;
			pp_shm_ring_release(&pe->rx);
			pe->streak = 0;
			if (pp_unlikely(pe->path.ring_want))
				pp_shm_path_rx(&pe->path, len, pp_now_ns(),
					       pe->path.ring_from ? 0
								  : pp_shm_ring_backlog(&pe->rx));
			n++;
		}
		/* A broken ring stays poisoned: peek refuses at once from now on. */
		if (pp_unlikely(got < 0) && !pe->dead)
			peer_lost(ctx, pe, "wrote a malformed record into its ring");
	}
	if (n)
		__atomic_store_n(&ctx->last_rx, now, __ATOMIC_RELAXED);
	if (pp_unlikely(now >= L->next_check)) {
		L->next_check = now + PP_SHM_CHECK_NS;
		check_alive(ctx, L);
	}
	return n;
}

unsigned pp_shm_link_tx(pp_ctx *ctx, uint64_t now)
{
	struct pp_shm_link *L = ctx->shm;
	unsigned n = 0;
	for (uint32_t i = 0; i < L->npeers; i++) {
		struct shm_peer *pe = &L->peer[i];
		if (!pe->tx_on)
			continue; /* not the engine's node-mate (yet): its frames take the port */
		/* The engine writes each frame straight into a ring record; a
		 * record it did not fill is kept for the next pass. */
		for (;;) {
			if (!pe->rec && pp_shm_ring_reserve(&pe->tx, L->frame_cap, &pe->rec)) {
				pp_proto_local_kick(ctx->eng); /* full: again next pass */
				break;			       /* the peer has not caught up */
			}
			int len =
			    pp_proto_output_local(ctx->eng, pe->rank, pe->rec, L->frame_cap, now);
			if (len <= 0)
				break;
			pp_shm_ring_commit(&pe->tx, (uint32_t)len);
			pe->rec = NULL;
			n++;
		}
	}
	return n;
}

int pp_shm_link_drained(pp_ctx *ctx)
{
	struct pp_shm_link *L = ctx->shm;
	for (uint32_t i = 0; L && i < L->npeers; i++) {
		struct shm_peer *pe = &L->peer[i];
		/* A peer the engine has lost (its process, or the node daemon
		 * gone) reads nothing more: its ring is not waited for. */
		if (pe->tx_on && !pe->dead && !pp_proto_peer_lost(ctx->eng, pe->rank) &&
		    !pp_shm_ring_drained(&pe->tx))
			return 0;
	}
	return 1;
}

/* ---- set-up ---- */

/* Send, or receive, one 8-byte set-up word with a local rank. */
static int xfer(pp_ctx *ctx, int is_send, uint64_t *word, int peer)
{
	pp_req *r;
	int rc = pp_ctx_start(ctx, is_send, word, sizeof(*word), peer, PP_TAG_SHM, &r);
	return rc ? rc : pp_ctx_wait(&r, NULL);
}

static int link_alloc(pp_ctx *ctx, struct pp_shm_link **out, const uint32_t *locals,
		      uint32_t nlocal)
{
	struct pp_shm_link *L = calloc(1, sizeof(*L));
	if (!L)
		return -ENOMEM;
	L->peer = calloc(nlocal, sizeof(*L->peer));
	L->by_rank = malloc((size_t)ctx->size * sizeof(*L->by_rank));
	if (!L->peer || !L->by_rank) {
		free(L->peer);
		free(L->by_rank);
		free(L);
		return -ENOMEM;
	}
	L->nranks = (uint32_t)ctx->size;
	for (int r = 0; r < ctx->size; r++)
		L->by_rank[r] = -1;
	for (uint32_t i = 0; i < nlocal; i++) {
		if (locals[i] == (uint32_t)ctx->rank)
			continue;
		struct shm_peer *pe = &L->peer[L->npeers];
		pe->rank = locals[i];
		pe->idx = i;
		pe->pidfd = -1;
		L->by_rank[locals[i]] = (int32_t)L->npeers++;
	}
	L->frame_cap = (uint32_t)pp_eth_frame_max(ctx->port_info.mtu);
	atomic_flag_clear(&L->heap_lock);
	L->setup = 1;
	*out = L;
	return 0;
}

static void link_free(struct pp_shm_link *L)
{
	for (uint32_t i = 0; i < L->npeers; i++)
		if (L->peer[i].pidfd >= 0)
			close(L->peer[i].pidfd);
	pp_shm_seg_detach(&L->seg);
	free(L->peer);
	free(L->by_rank);
	free(L);
}

/* Wait (serving the engine) until nothing is in flight by the port with
 * the attached peers: every frame the port took to them (the set-up's
 * messages) acknowledged, and our acks of theirs sent. A frame put in the
 * ring before would reach a peer ahead of them, be refused out of order,
 * and come again only when resent: never, by a rank that exits at once (a
 * message sent just before a crash was lost so, 5 jobs in 15). Our acks go
 * before we leave, for a peer waiting here while we compute. */
static int port_quiet(pp_ctx *ctx, struct pp_shm_link *L)
{
	uint64_t deadline = pp_now_ns() + (uint64_t)ctx->cfg.timeout_ms * 1000000u;
	for (uint32_t i = 0; i < L->npeers;) {
		const struct shm_peer *pe = &L->peer[i];
		if (!pe->rx_on || pp_proto_peer_settled(ctx->eng, pe->rank)) {
			i++;
			continue;
		}
		if (pp_now_ns() > deadline) {
			pp_err("shm: frames with rank %u still in flight after %u ms", pe->rank,
			       ctx->cfg.timeout_ms);
			return -ETIMEDOUT;
		}
		pp_ctx_progress(ctx);
	}
	return 0;
}

/* Every slot settled: the engine's frames to attached peers go to the
 * rings from now on, once the port's are acknowledged. */
static int activate(pp_ctx *ctx, struct pp_shm_link *L)
{
	const struct pp_config *c = &ctx->cfg;
	uint32_t btp1 = c->btp_set ? c->btp1 : PP_SHM_BTP1;
	uint32_t btp2 = c->btp_set ? c->btp2 : PP_SHM_BTP2;
	uint32_t active = 0;
	refresh(L);
	int rc = port_quiet(ctx, L);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < L->npeers; i++) {
		struct shm_peer *pe = &L->peer[i];
		if (!pe->rx_on)
			continue;
		pe->pidfd = pe->pid > 0 ? (int)syscall(SYS_pidfd_open, pe->pid, 0) : -1;
		if ((rc = pp_proto_peer_local(ctx->eng, pe->rank, btp1, btp2)))
			return rc;
		pe->tx_on = 1;
		active++;
	}
	L->setup = 0;
	ctx->shm_only = active == (uint32_t)ctx->size - 1;
	pp_info("shm: segment %s, %u local peer(s) through shared memory (%s)", L->seg.name, active,
		c->shm == PP_SHM_TWOCOPY ? "two copies" : "single copy");
	return 0;
}

/* Wait (serving the engine) until every slot has left PENDING. */
static int settle(pp_ctx *ctx, struct pp_shm_link *L)
{
	uint64_t deadline = pp_now_ns() + (uint64_t)ctx->cfg.timeout_ms * 1000000u;
	for (;;) {
		uint32_t pending = 0;
		for (uint32_t i = 0; i < L->seg.geom.nlocal; i++)
			pending += pp_shm_seg_state(&L->seg, i) == PP_SHM_PENDING;
		if (!pending)
			return 0;
		if (pp_now_ns() > deadline) {
			pp_err("shm: %u local rank(s) never attached to %s", pending, L->seg.name);
			return -ETIMEDOUT;
		}
		pp_ctx_progress(ctx);
	}
}

static int create_side(pp_ctx *ctx, struct pp_shm_link *L, const uint32_t *locals, uint32_t nlocal,
		       const char *name)
{
	uint64_t nonce = 0;
	int made = 0;
	if (ctx->cfg.shm != PP_SHM_OFF) {
		struct pp_shm_geom g = {nlocal, PP_SHM_RING_CELLS, ctx->cfg.shm_heap};
		if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
			nonce = (uint64_t)pp_now_ns() ^ ((uint64_t)getpid() << 32);
		nonce |= 1;
		int swept = pp_shm_seg_sweep("/dev/shm",
					     pp_membership_peer(ctx, (uint32_t)ctx->rank)->node);
		if (swept)
			pp_info("shm: removed %d segment(s) that crashed jobs left on this node",
				swept);
		int rc = pp_shm_seg_create(&L->seg, name, &g, locals, nonce);
		if (rc) {
			pp_warn("shm: cannot create segment %s (%s): local ranks use the port",
				name, strerror(-rc));
			nonce = 0;
		} else {
			made = 1;
			ctx->shm = L; /* rings from peers are polled as they attach */
		}
	}
	int rc = 0;
	for (uint32_t i = 0; i < L->npeers && rc == 0; i++)
		rc = xfer(ctx, 1, &nonce, (int)L->peer[i].rank);
	for (uint32_t i = 0; i < L->npeers && rc == 0; i++) {
		uint64_t ok = 0;
		rc = xfer(ctx, 0, &ok, (int)L->peer[i].rank);
		if (rc == 0 && made && ok != 1)
			pp_shm_seg_set_state(&L->seg, L->peer[i].idx, PP_SHM_REFUSED);
	}
	if (made)
		pp_shm_seg_unlink(name);
	if (rc || !made)
		return rc ? rc : 1;
	return settle(ctx, L);
}

static int attach_side(pp_ctx *ctx, struct pp_shm_link *L, const uint32_t *locals, uint32_t nlocal,
		       const char *name)
{
	uint64_t nonce = 0, ok = 0;
	uint32_t creator = locals[0];
	int rc = xfer(ctx, 0, &nonce, (int)creator);
	if (rc)
		return rc;
	if (nonce && ctx->cfg.shm != PP_SHM_OFF) {
		/* The geometry as the creator chose it; its heap size is read
		 * from the segment. */
		struct pp_shm_geom g = {nlocal, PP_SHM_RING_CELLS, 0};
		int a = pp_shm_seg_attach(&L->seg, name, &g, locals, nonce, (uint32_t)ctx->rank);
		if (a)
			pp_warn("shm: cannot attach to segment %s (%s): local ranks use the port",
				name, strerror(-a));
		else
			ok = 1;
	}
	if (ok)
		ctx->shm = L;
	rc = xfer(ctx, 1, &ok, (int)creator);
	if (rc || !ok)
		return rc ? rc : 1;
	return settle(ctx, L);
}

int pp_shm_link_init(pp_ctx *ctx)
{
	const char *node = pp_membership_peer(ctx, (uint32_t)ctx->rank)->node;
	uint32_t *locals = malloc((size_t)ctx->size * sizeof(*locals)), nlocal = 0;
	if (!locals)
		return -ENOMEM;
	for (int r = 0; r < ctx->size; r++)
		if (strncmp(pp_membership_peer(ctx, r)->node, node, PP_NODE_NAME) == 0)
			locals[nlocal++] = (uint32_t)r;
	int rc = 0;
	if (nlocal < 2)
		goto out;
	if (nlocal > PP_SHM_MAX_LOCAL) {
		pp_warn("shm: %u ranks on node %s, more than %d: they use the port", nlocal, node,
			PP_SHM_MAX_LOCAL);
		goto out;
	}
	char name[PP_SHM_NAME_MAX];
	if ((rc = pp_shm_seg_name(name, sizeof(name), ctx->cfg.job_name, node))) {
		pp_err("shm: no segment name for job %s on node %s", ctx->cfg.job_name, node);
		goto out;
	}
	struct pp_shm_link *L;
	if ((rc = link_alloc(ctx, &L, locals, nlocal)))
		goto out;
	rc = locals[0] == (uint32_t)ctx->rank ? create_side(ctx, L, locals, nlocal, name)
					      : attach_side(ctx, L, locals, nlocal, name);
	if (rc == 0 && (rc = activate(ctx, L)) == 0) {
		size_t bytes;
		void *area = pp_shm_seg_heap(&L->seg, L->seg.me, &bytes);
		if (bytes && pp_shm_heap_init(&L->heap, area, bytes))
			memset(&L->heap, 0, sizeof(L->heap));
	}
	if (rc) {
		/* 1: no segment, the port serves everyone; else a real error. */
		ctx->shm = NULL;
		link_free(L);
		rc = rc == 1 ? 0 : rc;
	}
out:
	free(locals);
	return rc;
}

void pp_shm_link_fini(pp_ctx *ctx)
{
	ctx->shm_only = 0;
	if (!ctx->shm)
		return;
	struct pp_shm_link *L = ctx->shm;
	pp_info("shm: %llu direct copies moved %llu bytes straight between user buffers",
		(unsigned long long)L->copies, (unsigned long long)L->bytes);
	for (uint32_t i = 0; i < L->npeers; i++) {
		const struct pp_shm_path *a = &L->peer[i].path;
		if (a->copy_rate || a->ring_rate)
			pp_info("shm: long messages from rank %u: %llu pulled through the rings "
				"(lately: copy call %llu MB/s, rings %llu MB/s)",
				L->peer[i].rank, (unsigned long long)a->rings,
				(unsigned long long)a->copy_rate, (unsigned long long)a->ring_rate);
	}
	pp_info("shm: sender writes: %llu messages, %llu bytes written into receives posted "
		"early; %llu receives published, %llu writes failed",
		(unsigned long long)L->writes, (unsigned long long)L->write_bytes,
		(unsigned long long)L->posted, (unsigned long long)L->write_fails);
	pp_info("shm: split copies: %llu parts offered to senders; %llu parts, %llu bytes "
		"written for receivers",
		(unsigned long long)L->helps_asked, (unsigned long long)L->helps,
		(unsigned long long)L->help_bytes);
	/* Nothing published may outlive us: a sender would write into freed
	 * memory. The engine withdrew its receives' entries when destroyed; a
	 * claimed entry's write is under way or done already. */
	int claimed = 0;
	for (uint32_t i = 0; i < L->npeers; i++)
		if (L->peer[i].rx_on)
			claimed +=
			    pp_shm_rq_close(pp_shm_seg_recvq(&L->seg, L->peer[i].idx, L->seg.me));
	if (claimed)
		pp_warn("shm: %d receive(s) claimed by their sender at finalize", claimed);
	link_free(L);
	ctx->shm = NULL;
}

/* ---- pp_malloc ---- */

static void heap_lock(struct pp_shm_link *L)
{
	while (atomic_flag_test_and_set_explicit(&L->heap_lock, memory_order_acquire))
		__builtin_ia32_pause();
}

void *pp_shm_link_malloc(pp_ctx *ctx, size_t len)
{
	struct pp_shm_link *L = ctx->shm;
	if (!L)
		return NULL;
	heap_lock(L);
	void *p = pp_shm_heap_alloc(&L->heap, len);
	atomic_flag_clear_explicit(&L->heap_lock, memory_order_release);
	return p;
}

/* A copy call's fixed cost differs tenfold between machines (a system call
 * and a page walk: 2.2 us on one virtual machine with page-table isolation,
 * where the rings moved 16 to 48 KiB faster: one way 2.0 against 5.0 us at
 * 16 KiB, 3.8 against 6.4 at 48 KiB; level near 96 KiB, windowed level near
 * 56 KiB). The rings are worth it up to what they move in about 40 times
 * that cost (40 B/ns: 64 KiB for a call of 1.6 to 3.3 us, so that ranks
 * measuring 1.8 and 2.4 us agree), a power of two from floor (the engine's
 * bound, measured where a call was cheap) to 512 KiB (short of shm_stream's
 * 1 MiB). */
uint64_t pp_shm_copy_min(uint64_t call_ns, uint64_t floor)
{
	uint64_t m = floor, want = call_ns * 40;
	while (m * 2 <= want && m * 2 <= (512u << 10))
		m *= 2;
	return m;
}

/* A copy call's fixed cost, ns: the fewest of 16 64-byte reads from this
 * process itself (a preemption or a cold page walk only adds); 0 when the
 * kernel refuses them. */
static uint64_t copy_call_ns(void)
{
	uint8_t src[64] = {1}, dst[64];
	uint64_t best = UINT64_MAX;
	pid_t self = getpid();
	for (int i = 0; i < 16; i++) {
		uint64_t t0 = pp_now_ns();
		if (pp_shm_cma_read(self, dst, (uint64_t)(uintptr_t)src, sizeof(dst)))
			return 0;
		uint64_t t = pp_now_ns() - t0;
		best = t < best ? t : best;
	}
	return best;
}

uint64_t pp_shm_link_copy_min(const struct pp_config *c, uint64_t floor)
{
	if (c->shm_copy_min)
		return c->shm_copy_min;
	uint64_t ns = copy_call_ns();
	if (!ns)
		return floor; /* refused: nothing moves by a call anyway */
	uint64_t m = pp_shm_copy_min(ns, floor);
	pp_info("shm: a copy call costs %llu ns: node-mates' messages up to %llu B go through "
		"the rings (shm_copy_min=auto)",
		(unsigned long long)ns, (unsigned long long)m);
	return m;
}

unsigned pp_shm_link_send_flags(const pp_ctx *ctx, const void *buf, uint64_t len)
{
	const struct pp_shm_link *L = ctx->shm;
	if (!L || !ctx->cfg.shm_stream || len < ctx->cfg.shm_stream)
		return 0;
	return pp_shm_seg_offset(&L->seg, buf, len) != PP_SHM_NO_OFFSET ? PP_PROTO_SEND_SHARED : 0;
}

int pp_shm_link_free(pp_ctx *ctx, void *p)
{
	struct pp_shm_link *L = ctx->shm;
	if (!L || !pp_shm_heap_owns(&L->heap, p))
		return -ENOENT;
	heap_lock(L);
	int rc = pp_shm_heap_free(&L->heap, p);
	atomic_flag_clear_explicit(&L->heap_lock, memory_order_release);
	return rc;
}
