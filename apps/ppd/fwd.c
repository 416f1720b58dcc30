/* SPDX-License-Identifier: BSD-3-Clause */
/* ppd's handler threads: the frame switch between the NIC and the ranks'
 * rings (see ppd.h). The hot path: no allocation, no syscall but the CMA read
 * of an appended range and a yield when there is nothing to do. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "affinity.h"
#include "auth.h"
#include "pp_log.h"
#include "ppd.h"
#include "ppd_place.h"
#include "wire.h"

#define IDLE_SPINS	4    /* empty passes before each one yields the core */
#define IDLE_NO_RANK_US 1000 /* sleep per empty pass while no rank is attached */
/* Dozing (ppd_shm.h): a rank that polled in a wait loop this recently keeps
 * its handler awake (passing the core back and forth costs about 2 us on a
 * virtual machine, a wake-up from sleep about 10, both measured); the longest
 * sleep, for what no descriptor announces (a rank dying). */
#define DOZE_QUIET_NS 50000u
#define DOZE_MAX_NS   2000000u

/* PULL frames moved, either way (ppd --stats). */
static void count_pull(struct ppd_handler *h, const struct pp_wire_peek *pk)
{
	if (pk->type == PP_WIRE_PULL)
		COUNT(h, pulls, 1);
}

static void drop(struct ppd_handler *h, enum ppd_drop why)
{
	COUNT(h, drops[why], 1);
}

/* 1 when a frame is for rank r's incarnation (wire.h: or names none where
 * that is allowed); a frame for an earlier life of (job, rank) is not. */
static int for_inc(const struct ppd_rank *r, const struct pp_wire_peek *pk)
{
	return pk->dst_inc == r->inc || (pk->dst_inc == 0 && pp_wire_inc_any_ok(pk->type));
}

/* A read or write of rank r's memory failed (rc): the frame is dropped. */
static void mem_failed(struct ppd_handler *h, struct ppd_rank *r, int rc)
{
	drop(h, PPD_DROP_BAD_RANGE);
	ppd_mem_failed(r, rc);
}

static struct ppd_rank *lookup(struct ppd *d, uint32_t job, uint32_t rank)
{
	for (int i = 0; i < PPD_MAX_RANKS; i++) {
		struct ppd_rank *r = &d->ranks[i];
		if (atomic_load_explicit(&r->state, memory_order_acquire) == PPD_RANK_ACTIVE &&
		    r->job == job && r->rank == rank)
			return r;
	}
	return NULL;
}

/* Copy a frame into rank r's next free rx slot and publish it in a record
 * of type (PPD_REC_FRAME, or PPD_REC_PLACED for a placed frame's headers). */
static void deliver_rec(struct ppd_handler *h, struct ppd_rank *r, const uint8_t *f, uint32_t len,
			uint16_t type)
{
	void *ptr;
	while (atomic_flag_test_and_set_explicit(&r->rx_lock, memory_order_acquire))
		__builtin_ia32_pause();
	if (len > h->d->slot_bytes || !r->nrx_free ||
	    pp_shm_ring_reserve(&r->rx, sizeof(struct ppd_rec), &ptr)) {
		atomic_flag_clear_explicit(&r->rx_lock, memory_order_release);
		__atomic_fetch_add(&r->hdr->rx_dropped, 1, __ATOMIC_RELAXED);
		drop(h, len > h->d->slot_bytes ? PPD_DROP_BAD_FRAME : PPD_DROP_RANK_FULL);
		return;
	}
	uint32_t slot = r->rx_free[--r->nrx_free];
	r->at_rank[slot] = 1;
	memcpy(r->rx_slots + (size_t)slot * h->d->slot_bytes, f, len);
	*(struct ppd_rec *)ptr = (struct ppd_rec){.type = type, .slot = slot, .len = len};
	pp_shm_ring_commit(&r->rx, sizeof(struct ppd_rec));
	atomic_flag_clear_explicit(&r->rx_lock, memory_order_release);
	COUNT(h, to_ranks, 1);
}

static void deliver(struct ppd_handler *h, struct ppd_rank *r, const uint8_t *f, uint32_t len)
{
	deliver_rec(h, r, f, len, PPD_REC_FRAME);
}

/* Placed frames of one burst for one rank. Frames are delivered in the
 * order they came: any other frame is delivered only after the batch is
 * flushed. */
struct pbatch;
static void place_flush_empty(struct pbatch *b);

struct pbatch {
	struct ppd_rank *r;		   /* whose (NULL: empty) */
	unsigned n;			   /* frames */
	const uint8_t *pl[PPD_BURST];	   /* their payloads here */
	uint32_t plen[PPD_BURST];	   /* ... bytes */
	uint64_t off[PPD_BURST];	   /* ... offset in the message */
	unsigned ent[PPD_BURST];	   /* ... entry (index into held) */
	const uint8_t *f[PPD_BURST];	   /* the frames */
	uint32_t len[PPD_BURST];	   /* their lengths */
	unsigned nheld;			   /* entries taken */
	struct ppd_place *held[PPD_BURST]; /* ... BUSY until the flush */
	struct ppd_place e[PPD_BURST];	   /* ... their fields, read at the take */
	uint64_t next[PPD_BURST];	   /* ... from for the next frame added (ppd_place.h) */
	uint64_t placed[PPD_BURST];	   /* ... and, at the flush, as the writes went */
};

/* Write the batch frame by frame into the rank (a frame whose write fails,
 * and every later one of its message, go whole), give its entries back
 * (BUSY -> POSTED, with the offset placed so far), then deliver each frame
 * in order: its headers alone when its payload was written, else whole. */
static void place_flush(struct ppd_handler *h, struct pbatch *b)
{
	if (!b->n) {
		place_flush_empty(b);
		return;
	}
	int ok[PPD_BURST], gone = 0;
	for (unsigned k = 0; k < b->nheld; k++)
		b->placed[k] = b->e[k].from;
	for (unsigned i = 0; i < b->n; i++) {
		unsigned k = b->ent[i];
		ok[i] = 0;
		if (gone ||
		    !ppd_place_fits(&b->e[k], b->placed[k], b->e[k].src_inc, b->off[i], b->plen[i]))
			continue; /* an earlier frame of it failed */
		int rc = ppd_mem_write(b->r, b->pl[i], b->e[k].addr + b->off[i], b->plen[i]);
		if (rc) {
			gone = rc == -ESRCH;
			mem_failed(h, b->r, rc);
			continue;
		}
		ok[i] = 1;
		b->placed[k] = ppd_place_after(b->off[i], b->plen[i]);
	}
	/* Written before the rank can see any headers: a receive cannot
	 * complete (and take its entry back) before its bytes are there. */
	for (unsigned k = 0; k < b->nheld; k++)
		ppd_place_give(b->held[k], b->placed[k]);
	for (unsigned i = 0; i < b->n; i++) {
		if (ok[i]) {
			deliver_rec(h, b->r, b->f[i], PP_WIRE_MIN_FRAME, PPD_REC_PLACED);
			COUNT(h, placed_frames, 1);
			COUNT(h, placed_bytes, b->plen[i]);
		} else {
			COUNT(h, place_failed, 1);
			deliver(h, b->r, b->f[i], b->len[i]);
		}
	}
	b->n = b->nheld = 0;
	b->r = NULL;
}

/* A batch with entries taken and no frame: give them back unchanged. */
static void place_flush_empty(struct pbatch *b)
{
	for (unsigned k = 0; k < b->nheld; k++)
		ppd_place_give(b->held[k], b->e[k].from);
	b->nheld = 0;
	b->r = NULL;
}

/* A DATA frame from the NIC for rank r: when r described the receive buffer
 * of its message, add it to the batch (flushed first if it is another
 * rank's). Returns 1 when added, 0 when the frame is to be delivered whole
 * for the rank's engine to judge: not such a frame, no description, bad
 * CRC or fields, or not the frame the engine takes next (ppd_place_fits:
 * nothing is written that the engine would refuse). */
static int place_add(struct ppd_handler *h, struct pbatch *b, struct ppd_rank *r, const uint8_t *f,
		     uint32_t len, const struct pp_wire_peek *pk)
{
	if (pk->type != PP_WIRE_DATA || len < PP_WIRE_MIN_FRAME + PPD_PLACE_MIN)
		return 0;
	if (b->r && b->r != r)
		place_flush(h, b);
	uint32_t src = pk->src_rank, msg_id = pk->msg_id;
	/* An entry this batch holds already, else a POSTED one to take. */
	unsigned k = 0;
	while (k < b->nheld && (b->e[k].src != src || b->e[k].msg_id != msg_id))
		k++;
	if (k == b->nheld && !ppd_place_posted(r->hdr, src, msg_id))
		return 0;
	/* The whole frame checked (CRC included) before a byte is written. */
	struct pp_wire_check chk = {r->job, r->rank, r->size, h->d->info.mtu, r->inc};
	struct pp_wire_hdr wh;
	const uint8_t *pl;
	enum pp_drop_reason why;
	if (pp_wire_decode(f, len, &chk, &wh, &pl, &why))
		return 0;
	if (k == b->nheld) {
		/* BUSY: the rank changes nothing in the entry until it is POSTED
		 * again, so the fields read now hold for the write. A rank that
		 * breaks that only writes into its own memory. */
		struct ppd_place *x = ppd_place_take(r->hdr, src, msg_id, &b->e[k]);
		if (!x)
			return 0; /* taken back (or another handler holds it): whole */
		b->held[k] = x;
		b->next[k] = b->e[k].from;
		b->nheld++;
		b->r = r;
	}
	if (!ppd_place_fits(&b->e[k], b->next[k], wh.src_inc, wh.offset, wh.payload_len)) {
		if (!b->n) /* nothing else waits: give the entry back now */
			place_flush_empty(b);
		return 0;
	}
	b->pl[b->n] = pl;
	b->plen[b->n] = wh.payload_len;
	b->off[b->n] = wh.offset;
	b->ent[b->n] = k;
	b->f[b->n] = f;
	b->len[b->n] = len;
	b->n++;
	b->next[k] = ppd_place_after(wh.offset, wh.payload_len);
	return 1;
}

/* Give every attached rank of job but skip the frame (a broadcast). */
static void deliver_job(struct ppd_handler *h, uint32_t job, uint32_t skip, const uint8_t *f,
			uint32_t len)
{
	for (int i = 0; i < PPD_MAX_RANKS; i++) {
		struct ppd_rank *r = &h->d->ranks[i];
		if (atomic_load_explicit(&r->state, memory_order_acquire) == PPD_RANK_ACTIVE &&
		    r->job == job && r->rank != skip)
			deliver(h, r, f, len);
	}
}

/* NIC -> ranks. */
static unsigned nic_rx(struct ppd_handler *h)
{
	struct ppd *d = h->d;
	struct pp_buf *bufs[PPD_BURST];
	struct pbatch pb;
	pb.r = NULL;
	pb.n = pb.nheld = 0;
	unsigned n = pp_port_rx_burst(d->port, h->queue, bufs, PPD_BURST);
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *f = bufs[i]->data;
		uint32_t len = bufs[i]->len;
		struct pp_wire_peek pk;
		if (pp_wire_peek(f, len, &pk)) {
			place_flush(h, &pb);
			drop(h, PPD_DROP_BAD_FRAME);
			continue;
		}
		struct ppd_rank *r =
		    pk.dst_rank == PP_WIRE_RANK_ALL ? NULL : lookup(d, pk.job, pk.dst_rank);
		if (r && !for_inc(r, &pk)) {
			place_flush(h, &pb);
			drop(h, PPD_DROP_STALE);
			continue;
		}
		if (r && !d->no_place && place_add(h, &pb, r, f, len, &pk))
			continue;    /* its payload goes straight into the buffer */
		place_flush(h, &pb); /* frames reach each rank in order */
		count_pull(h, &pk);
		if (pk.dst_rank == PP_WIRE_RANK_ALL) {
			if (pk.type == PP_WIRE_BYE)
				ppd_pull_bye(h, f, len, &pk);
			deliver_job(h, pk.job, pk.src_rank, f, len);
			continue;
		}
		if (r && ppd_pull_intercept(h, r, f, len, &pk))
			continue; /* a pull handler's ACK or NACK */
		if (r)
			deliver(h, r, f, len);
		else
			drop(h, PPD_DROP_NO_RANK);
	}
	place_flush(h, &pb);
	if (n) {
		pp_port_free(d->port, bufs, n);
		COUNT(h, nic_rx, n);
	}
	return n;
}

/* Send what waits for the NIC; returns frames sent. */
static unsigned flush(struct ppd_handler *h)
{
	if (!h->ntxq)
		return 0;
	unsigned sent = pp_port_tx_burst(h->d->port, h->queue, h->txq, h->ntxq);
	memmove(h->txq, h->txq + sent, (h->ntxq - sent) * sizeof(h->txq[0]));
	h->ntxq -= sent;
	COUNT(h, nic_tx, sent);
	__atomic_store_n(&h->c.queue, h->ntxq, __ATOMIC_RELAXED);
	return sent;
}

/* Route a checked frame from rank r, in NIC buffer b (pk: its fields): to
 * ranks here, to the wire, or both (broadcast). Takes b. */
static void route(struct ppd_handler *h, struct ppd_rank *r, struct pp_buf *b,
		  const struct pp_wire_peek *pk)
{
	count_pull(h, pk);
	if (pk->dst_rank == PP_WIRE_RANK_ALL) {
		deliver_job(h, r->job, r->rank, b->data, b->len);
	} else {
		struct ppd_rank *to = lookup(h->d, r->job, pk->dst_rank);
		if (to) {
			if (for_inc(to, pk)) {
				deliver(h, to, b->data, b->len);
				COUNT(h, loopback, 1);
			} else {
				drop(h, PPD_DROP_STALE);
			}
			pp_port_free(h->d->port, &b, 1);
			return;
		}
	}
	h->txq[h->ntxq++] = b;
}

/* Publish how many of rank r's frame records are done with their slot:
 * the longest prefix, in record order, that the NIC no longer reads. */
static void advance(struct ppd_rank *r)
{
	while (r->tx_done < r->tx_seq && !r->pend[r->tx_done % PPD_TX_SLOTS])
		r->tx_done++;
	__atomic_store_n(&r->hdr->tx_done, r->tx_done, __ATOMIC_RELEASE);
}

/* The port is done with a slot sent without a copy (runs on the home
 * handler's thread, inside its tx_burst or a buffer free). */
static void zc_done(void *arg)
{
	struct ppd_zc *z = arg;
	z->r->pend[z->seq % PPD_TX_SLOTS] = 0;
	advance(z->r);
	/* Last: once zc_out is 0 the main thread may unmap the region. */
	atomic_fetch_sub_explicit(&z->r->zc_out, 1, memory_order_release);
}

/* Payloads below this are copied: attaching costs more than copying. */
#define ZC_MIN 256

/* Take frame record rec (record number seq) of rank r into a NIC buffer:
 * the header is copied and checked on the copy (so the rank cannot change
 * it afterwards: *pk is read from it); the payload is copied too, or, for a
 * large frame to another node when the port can, attached where it lies in
 * the rank's slot (*zc set: the slot stays busy until the port is done).
 * Returns the buffer, or NULL (dropped and counted). *retry is set when no
 * NIC buffer was free: the record must stay for the next pass. */
static struct pp_buf *take_frame(struct ppd_handler *h, struct ppd_rank *r,
				 const struct ppd_rec *rec, uint64_t seq, int *retry, int *zc,
				 struct pp_wire_peek *pk)
{
	struct ppd *d = h->d;
	struct pp_buf *b;
	uint64_t total = (uint64_t)rec->len + rec->ext_len;
	if (rec->slot >= PPD_TX_SLOTS || rec->len > d->slot_bytes ||
	    total > pp_eth_frame_max(d->info.mtu) || rec->len < PP_WIRE_MIN_FRAME) {
		drop(h, PPD_DROP_BAD_FRAME);
		return NULL;
	}
	if (pp_port_alloc(d->port, &b, 1) != 1) {
		*retry = 1;
		return NULL;
	}
	if (total > b->cap) {
		pp_port_free(d->port, &b, 1);
		drop(h, PPD_DROP_BAD_FRAME);
		return NULL;
	}
	const uint8_t *slot = r->tx_slots + (size_t)rec->slot * d->slot_bytes;
	memcpy(b->data, slot, PP_WIRE_MIN_FRAME);
	if (pp_wire_peek(b->data, (uint32_t)total, pk)) {
		pp_port_free(d->port, &b, 1);
		drop(h, PPD_DROP_BAD_FRAME);
		return NULL;
	}
	if (pk->job != r->job || pk->src_rank != r->rank || pk->src_inc != r->inc) {
		pp_port_free(d->port, &b, 1);
		drop(h, PPD_DROP_SPOOF);
		return NULL;
	}
	pp_eth_set_src(b->data, d->info.mac); /* every frame of the node leaves from here */
	uint32_t dst = pk->dst_rank;
	b->len = PP_WIRE_MIN_FRAME;
	if (r->zc && !rec->ext_len && rec->len >= PP_WIRE_MIN_FRAME + ZC_MIN &&
	    dst != PP_WIRE_RANK_ALL && !lookup(d, r->job, dst)) {
		struct ppd_zc *z = &r->zcs[seq % PPD_TX_SLOTS];
		z->r = r;
		z->seq = seq;
		r->pend[seq % PPD_TX_SLOTS] = 1;
		if (pp_port_attach_ext(d->port, b, (void *)(uintptr_t)(slot + PP_WIRE_MIN_FRAME),
				       rec->len - PP_WIRE_MIN_FRAME, zc_done, z) == 0) {
			atomic_fetch_add_explicit(&r->zc_out, 1, memory_order_relaxed);
			COUNT(h, zc_frames, 1);
			*zc = 1;
			return b;
		}
		r->pend[seq % PPD_TX_SLOTS] = 0;
	}
	memcpy(b->data + PP_WIRE_MIN_FRAME, slot + PP_WIRE_MIN_FRAME, rec->len - PP_WIRE_MIN_FRAME);
	if (rec->ext_len) {
		/* The rank's own memory, with its rights (mem.c): a range it
		 * does not own fails (EFAULT) and nothing of it is used. */
		int rc = ppd_mem_read(r, b->data + rec->len, rec->ext_addr, rec->ext_len);
		if (rc) {
			pp_port_free(d->port, &b, 1);
			mem_failed(h, r, rc);
			return NULL;
		}
		COUNT(h, ext_bytes, rec->ext_len);
	}
	b->len = (uint32_t)total;
	return b;
}

/* Rank r hands rx slots back. */
static void rx_slots_back(struct ppd_handler *h, struct ppd_rank *r, const uint8_t *p, uint32_t len)
{
	struct ppd_rec rec;
	memcpy(&rec, p, sizeof(rec));
	if (rec.n > PPD_RXFREE_MAX || len < sizeof(rec) + 4u * rec.n) {
		drop(h, PPD_DROP_BAD_FRAME);
		return;
	}
	uint32_t slots[PPD_RXFREE_MAX];
	memcpy(slots, p + sizeof(rec), 4u * rec.n);
	while (atomic_flag_test_and_set_explicit(&r->rx_lock, memory_order_acquire))
		__builtin_ia32_pause();
	for (unsigned i = 0; i < rec.n; i++) {
		uint32_t s = slots[i];
		if (s < PPD_RX_SLOTS && r->at_rank[s]) {
			r->at_rank[s] = 0;
			r->rx_free[r->nrx_free++] = s;
		}
	}
	atomic_flag_clear_explicit(&r->rx_lock, memory_order_release);
}

/* Rank r's tx ring -> NIC or ranks here. */
static unsigned rank_tx(struct ppd_handler *h, struct ppd_rank *r)
{
	unsigned n = 0;
	const void *ptr;
	uint32_t len;
	int got = 0;
	/* At most PPD_BURST records of any kind a pass (one rank gets its
	 * share of the handler, whatever it publishes), and no more frames in
	 * flight than the rank has slots (pend is indexed by record number). */
	while (n < PPD_BURST && h->ntxq < PPD_BURST && r->tx_seq - r->tx_done < PPD_TX_SLOTS &&
	       (got = pp_shm_ring_peek(&r->tx, &ptr, &len)) > 0) {
		n++;
		/* The record lies in memory the rank can write: read it once. */
		uint8_t raw[sizeof(struct ppd_rec) + 4 * PPD_RXFREE_MAX];
		if (len > sizeof(raw))
			len = sizeof(raw);
		if (len < sizeof(struct ppd_rec)) {
			pp_shm_ring_release(&r->tx);
			drop(h, PPD_DROP_BAD_FRAME);
			continue;
		}
		memcpy(raw, ptr, len);
		struct ppd_rec rec;
		memcpy(&rec, raw, sizeof(rec));
		if (rec.type == PPD_REC_RXFREE) {
			rx_slots_back(h, r, raw, len);
			pp_shm_ring_release(&r->tx);
			continue;
		}
		if (rec.type != PPD_REC_FRAME) {
			pp_shm_ring_release(&r->tx);
			drop(h, PPD_DROP_BAD_FRAME);
			continue;
		}
		int retry = 0, zc = 0;
		uint64_t seq = r->tx_seq;
		struct pp_wire_peek pk;
		struct pp_buf *b = take_frame(h, r, &rec, seq, &retry, &zc, &pk);
		if (retry) {
			n--;
			break; /* no NIC buffer now: the record stays */
		}
		pp_shm_ring_release(&r->tx);
		if (!b)
			__atomic_fetch_add(&r->hdr->tx_failed, 1, __ATOMIC_RELAXED);
		r->tx_seq++;
		if (!zc) {
			/* Copied out: the slot is free again for the rank. */
			r->pend[seq % PPD_TX_SLOTS] = 0;
			advance(r);
		}
		COUNT(h, from_ranks, 1);
		if (b)
			route(h, r, b, &pk);
	}
	/* A tx ring the rank broke (ring.h: poisoned): as if it closed its
	 * connection, the rank is dying. */
	int active = PPD_RANK_ACTIVE;
	if (got < 0 && atomic_compare_exchange_strong(&r->state, &active, PPD_RANK_DYING))
		pp_warn("ppd: rank %u of job %u broke its tx ring: detached", r->rank, r->job);
	return n;
}

/* Rank r left (closed its connection, or died): send what it had queued
 * (a rank that finalised may have written its last acks just before it
 * closed; every record was complete when published), drop what cannot go
 * now (bounded: a rank that closed its connection but lives on may go on
 * publishing), and tell every rank of its job that it left, with one BYE
 * from it to all that says it has their goodbye (so nobody answers):
 * posted receives for it then fail at once instead of timing out. Frames
 * for it are no longer delivered (it is not ACTIVE), and its rx ring goes
 * with its region. */
static void say_bye(struct ppd_handler *h, struct ppd_rank *r)
{
	struct ppd *d = h->d;
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	const void *ptr;
	uint32_t len;
	for (unsigned pass = 0; pass < 2 * PPD_TX_SLOTS / PPD_BURST; pass++) {
		flush(h);
		if (!rank_tx(h, r) && !h->ntxq)
			break;
	}
	flush(h);
	for (uint32_t k = 0; k < PPD_RING_CELLS && pp_shm_ring_peek(&r->tx, &ptr, &len) > 0; k++) {
		pp_shm_ring_release(&r->tx);
		drop(h, PPD_DROP_DEAD);
	}
	/* Whichever incarnation its peers are in (dst_inc 0): they judge it
	 * by its own, so no later job of the same ranks takes it. */
	struct pp_wire_hdr hdr = {.type = PP_WIRE_BYE,
				  .job = r->job,
				  .src_rank = r->rank,
				  .dst_rank = PP_WIRE_RANK_ALL,
				  .msg_id = 1,
				  .tag = r->size,
				  .src_inc = r->inc};
	struct pp_buf *b;
	if (h->ntxq == PPD_BURST || pp_port_alloc(d->port, &b, 1) != 1)
		return; /* cannot now: its peers fall back on their timeout */
	/* It ends in the tag proving the job's secret (auth.h), signed with
	 * the key the rank gave; without one it proves nothing, and its peers
	 * find it lost by their timeout. */
	static const uint8_t no_tag[PP_AUTH_TAG_LEN];
	uint8_t key[PP_AUTH_KEY_LEN];
	hdr.payload_len = PP_AUTH_TAG_LEN;
	int flen = pp_wire_encode(b->data, b->cap, bcast, d->info.mac, &hdr, no_tag);
	if (flen <= 0 || (ppd_rank_key(r, key) && pp_auth_sign(key, b->data, (size_t)flen))) {
		pp_port_free(d->port, &b, 1);
		return;
	}
	b->len = (uint32_t)flen;
	deliver_job(h, r->job, r->rank, b->data, b->len);
	h->txq[h->ntxq++] = b;
	flush(h);
}

/* Sleep until the NIC or one of h's ranks has something, if none of its
 * ranks waits and nothing of its own is pending; 0 when it may not. */
static int doze(struct ppd_handler *h)
{
	struct ppd *d = h->d;
	struct ppd_rank *mine[PPD_MAX_RANKS];
	int n = 0;
	if (d->doze_fd < 0 || h->ntxq || atomic_load_explicit(&h->load, memory_order_relaxed))
		return 0;
	uint64_t now = ppd_now_ns();
	for (int i = 0; i < PPD_MAX_RANKS; i++) {
		struct ppd_rank *r = &d->ranks[i];
		int st = atomic_load_explicit(&r->state, memory_order_acquire);
		if (r->home != h->id || (st != PPD_RANK_ACTIVE && st != PPD_RANK_DYING))
			continue;
		if (st == PPD_RANK_DYING ||
		    now - __atomic_load_n(&r->hdr->spin_ns, __ATOMIC_RELAXED) < DOZE_QUIET_NS)
			return 0;
		mine[n++] = r;
	}
	for (int k = 0; k < n; k++)
		__atomic_store_n(&mine[k]->hdr->dozing, 1, __ATOMIC_RELAXED);
	ppd_full_fence(); /* pairs with the rank's (wake_daemon) */
	int ready = 0;
	for (int k = 0; k < n && !ready; k++) {
		const void *ptr;
		uint32_t len;
		ready = pp_shm_ring_peek(&mine[k]->tx, &ptr, &len) > 0;
	}
	if (!ready) {
		struct pollfd p[2] = {{.fd = d->doze_fd, .events = POLLIN},
				      {.fd = h->wake_fd, .events = POLLIN}};
		struct timespec t = {0, DOZE_MAX_NS};
		ppoll(p, 2, &t, NULL);
		COUNT(h, dozes, 1);
	}
	for (int k = 0; k < n; k++)
		__atomic_store_n(&mine[k]->hdr->dozing, 0, __ATOMIC_RELAXED);
	uint64_t v;
	ssize_t got = read(h->wake_fd, &v, sizeof(v)); /* nonblocking: empty is fine */
	(void)got;
	return 1;
}

unsigned ppd_handler_pass(struct ppd_handler *h)
{
	struct ppd *d = h->d;
	atomic_fetch_add_explicit(&h->epoch, 1, memory_order_acq_rel);
	unsigned n = nic_rx(h);
	for (int i = 0; i < PPD_MAX_RANKS; i++) {
		struct ppd_rank *r = &d->ranks[i];
		int st = atomic_load_explicit(&r->state, memory_order_acquire);
		if ((st != PPD_RANK_ACTIVE && st != PPD_RANK_DYING) || r->home != h->id)
			continue;
		if (st == PPD_RANK_ACTIVE) {
			n += rank_tx(h, r);
		} else {
			say_bye(h, r);
			atomic_store_explicit(&r->state, PPD_RANK_GONE, memory_order_release);
		}
	}
	n += ppd_pull_run(h);
	return n + flush(h);
}

static void *handler_main(void *arg)
{
	struct ppd_handler *h = arg;
	struct ppd *d = h->d;
	int rc = pp_affinity_pin_self(h->core);
	if (rc)
		pp_warn("ppd: handler %d: cannot pin to core %d (%s); running unpinned", h->id,
			h->core, strerror(-rc));
	if ((rc = ppd_mem_thread(h)))
		pp_warn("ppd: handler %d: its copies are not watched (%s)", h->id, strerror(-rc));
	/* A thread started for an abandoned one (mem.c) goes on counting. */
	uint64_t busy = h->c.busy_ns, start = ppd_now_ns() - h->c.run_ns;
	unsigned idle = 0;
	while (!atomic_load_explicit(&d->stop, memory_order_acquire)) {
		uint64_t t0 = ppd_now_ns(), delivered = h->c.to_ranks;
		unsigned n = ppd_handler_pass(h);
		uint64_t t1 = ppd_now_ns();
		if (n) {
			busy += t1 - t0;
			/* A rank got frames: it may share this core and wait for
			 * them, so the next empty pass gives the core up at once. */
			idle = h->c.to_ranks != delivered ? IDLE_SPINS : 0;
		} else if (++idle > IDLE_SPINS) {
			if (!atomic_load_explicit(&d->nattached, memory_order_relaxed))
				usleep(IDLE_NO_RANK_US); /* nobody to serve: no need to spin */
			else if (!doze(h))
				sched_yield(); /* the core may be shared with the ranks */
		} else {
			__builtin_ia32_pause();
		}
		__atomic_store_n(&h->c.busy_ns, busy, __ATOMIC_RELAXED);
		__atomic_store_n(&h->c.run_ns, t1 - start, __ATOMIC_RELAXED);
	}
	/* Drain: what the NIC has not taken yet gets a few more tries. */
	for (int i = 0; i < 1000 && h->ntxq; i++)
		flush(h);
	if (h->ntxq)
		pp_port_free(d->port, h->txq, h->ntxq);
	h->ntxq = 0;
	atomic_fetch_add_explicit(&h->epoch, 1, memory_order_acq_rel);
	return NULL;
}

void ppd_init(struct ppd *d)
{
	for (int i = 0; i < PPD_CLAIMS; i++)
		d->claims[i].fd = -1;
	d->doze_fd = -1;
	d->pull_rto_ns = PPD_PULL_RTO_NS;
}

int ppd_use_port(struct ppd *d, struct pp_port *port)
{
	int rc = pp_port_info(port, &d->info);
	if (rc)
		return rc;
	d->port = port;
	d->slot_bytes = (uint32_t)((pp_eth_frame_max(d->info.mtu) + 63) / 64 * 64);
	if (d->slot_bytes < 128)
		d->slot_bytes = 128;
	return 0;
}

int ppd_handler_setup(struct ppd *d, int i, int core)
{
	struct ppd_handler *h = &d->h[i];
	h->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->wake_fd < 0)
		return -errno;
	h->d = d;
	h->id = i;
	h->core = core;
	h->queue = (uint16_t)i;
	h->rng = (ppd_now_ns() | 1) * 0x9E3779B97F4A7C15ull + (uint64_t)i;
	atomic_flag_clear(&h->inbox_lock);
	return 0;
}

int ppd_handlers_start(struct ppd *d, const int *cores, int n)
{
	/* Dozing needs the NIC's wait descriptor, and one handler: it wakes
	 * for frames of any queue. */
	int fd = n == 1 && d->doze ? pp_port_wait_fd(d->port) : -1;
	d->doze_fd = fd >= 0 ? fd : -1;
	for (int i = 0; i < n; i++) {
		struct ppd_handler *h = &d->h[i];
		int rc = ppd_handler_setup(d, i, cores[i]);
		if (rc) {
			pp_err("ppd: cannot make handler %d's eventfd: %s", i, strerror(-rc));
			ppd_handlers_stop(d);
			return rc;
		}
		rc = pthread_create(&h->thread, NULL, handler_main, h);
		if (rc) {
			pp_err("ppd: cannot start handler %d: %s", i, strerror(rc));
			close(h->wake_fd);
			ppd_handlers_stop(d);
			return -rc;
		}
		d->nh = i + 1;
	}
	return 0;
}

int ppd_handler_restart(struct ppd_handler *h)
{
	/* The old thread is never joined: it ends on its own, or with the
	 * process. */
	pthread_t old = h->thread;
	int rc = pthread_create(&h->thread, NULL, handler_main, h);
	if (rc) {
		h->thread = old;
		return -rc;
	}
	pthread_detach(old);
	return 0;
}

/* How long stopping waits for a handler to end its pass. One held up in
 * the kernel (a rank's memory behind a file system that does not answer)
 * is left to the process's exit, which ends it. */
#define STOP_WAIT_S 2

void ppd_handlers_stop(struct ppd *d)
{
	atomic_store_explicit(&d->stop, 1, memory_order_release);
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += STOP_WAIT_S;
	for (int i = 0; i < d->nh; i++) {
		int rc = pthread_timedjoin_np(d->h[i].thread, NULL, &end);
		if (rc) {
			pp_warn("ppd: handler %d did not stop (%s): left to the exit", i,
				strerror(rc));
			continue; /* it may still use its eventfd */
		}
		close(d->h[i].wake_fd); /* the ranks hold their own copies */
	}
	d->nh = 0;
}
