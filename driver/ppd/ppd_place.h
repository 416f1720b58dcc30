/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The placement descriptors of a rank's region (ppd_shm.h, "Placement
 * descriptors"): the four changes of state, shared by the rank's port
 * (post, cancel) and the daemon's handlers (take, give). Each is one
 * compare-and-swap or release store on the entry's state:
 *   rank    FREE -> POSTED   post: fields written first, then published
 *   daemon  POSTED -> BUSY   take: only then are the fields read for a write
 *   daemon  BUSY -> POSTED   give: after the write
 *   rank    POSTED -> FREE   cancel: waits while BUSY; once it returns no
 *                            handler holds the entry, and none can take it
 *                            again, so nothing more is written into the buffer
 */
#ifndef PP_PPD_PLACE_H
#define PP_PPD_PLACE_H

#include <errno.h>
#include <stdint.h>

#include "ppd_shm.h"

static inline int ppd_place_cas(struct ppd_place *x, uint32_t from, uint32_t to)
{
	return __atomic_compare_exchange_n(&x->state, &from, to, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

/* Rank: describe [from, len) of the buffer at addr for message msg_id from
 * src in incarnation src_inc. Returns the entry's index, or -ENOSPC (no
 * free entry). */
static inline int ppd_place_post(struct ppd_region_hdr *hdr, uint32_t src, uint32_t src_inc,
				 uint32_t msg_id, uint64_t addr, uint64_t len, uint64_t from)
{
	for (uint32_t i = 0; i < PPD_PLACES; i++) {
		struct ppd_place *x = &hdr->places[i];
		if (__atomic_load_n(&x->state, __ATOMIC_ACQUIRE) != PPD_PLACE_FREE)
			continue;
		x->src = src;
		x->src_inc = src_inc;
		x->msg_id = msg_id;
		x->addr = addr;
		x->len = len;
		x->from = from;
		__atomic_store_n(&x->state, PPD_PLACE_POSTED, __ATOMIC_RELEASE);
		return (int)i;
	}
	return -ENOSPC;
}

/* Rank: take the description of (src, msg_id) back, waiting while a
 * handler writes (BUSY), unless the daemon is gone: its header says so, or
 * gone(arg), asked every PPD_PLACE_GONE_SPINS spins of the wait (a daemon
 * killed in the middle of a write never says anything). Returns 1 when an
 * entry was freed, 0 when there was none. */
#define PPD_PLACE_GONE_SPINS 4096
static inline int ppd_place_cancel(struct ppd_region_hdr *hdr, uint32_t src, uint32_t msg_id,
				   int (*gone)(void *arg), void *arg)
{
	for (uint32_t i = 0; i < PPD_PLACES; i++) {
		struct ppd_place *x = &hdr->places[i];
		if (__atomic_load_n(&x->state, __ATOMIC_ACQUIRE) == PPD_PLACE_FREE ||
		    x->src != src || x->msg_id != msg_id)
			continue;
		for (unsigned spin = 1; !ppd_place_cas(x, PPD_PLACE_POSTED, PPD_PLACE_FREE);
		     spin++) {
			if (__atomic_load_n(&hdr->daemon_gone, __ATOMIC_ACQUIRE) ||
			    (spin % PPD_PLACE_GONE_SPINS == 0 && gone && gone(arg))) {
				__atomic_store_n(&x->state, PPD_PLACE_FREE, __ATOMIC_RELEASE);
				break;
			}
			__builtin_ia32_pause();
		}
		return 1;
	}
	return 0;
}

/* Daemon: 1 when (src, msg_id) has a POSTED entry now (a cheap look before
 * the frame is checked and the entry taken). */
static inline int ppd_place_posted(const struct ppd_region_hdr *hdr, uint32_t src, uint32_t msg_id)
{
	for (uint32_t i = 0; i < PPD_PLACES; i++) {
		const struct ppd_place *x = &hdr->places[i];
		if (__atomic_load_n(&x->state, __ATOMIC_ACQUIRE) == PPD_PLACE_POSTED &&
		    x->src == src && x->msg_id == msg_id)
			return 1;
	}
	return 0;
}

/* Daemon: take the POSTED entry of (src, msg_id) (-> BUSY) and copy its
 * fields, read after the take, into *out. Returns the entry, or NULL (none,
 * or another handler holds it). */
static inline struct ppd_place *ppd_place_take(struct ppd_region_hdr *hdr, uint32_t src,
					       uint32_t msg_id, struct ppd_place *out)
{
	for (uint32_t i = 0; i < PPD_PLACES; i++) {
		struct ppd_place *x = &hdr->places[i];
		if (__atomic_load_n(&x->state, __ATOMIC_ACQUIRE) != PPD_PLACE_POSTED ||
		    x->src != src || x->msg_id != msg_id ||
		    !ppd_place_cas(x, PPD_PLACE_POSTED, PPD_PLACE_BUSY))
			continue;
		/* Field by field: state is the rank's to CAS meanwhile. */
		out->src = x->src;
		out->msg_id = x->msg_id;
		out->src_inc = x->src_inc;
		out->addr = x->addr;
		out->len = x->len;
		out->from = x->from;
		out->state = PPD_PLACE_BUSY;
		if (out->src == src && out->msg_id == msg_id)
			return x;
		/* Reused between the look and the take: not ours. */
		__atomic_store_n(&x->state, PPD_PLACE_POSTED, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* An entry's from once a frame was placed: the next frame must start
 * exactly there. Before, it is the rank's bytes when it posted, and the
 * first DATA frame starts at or after it: the sender's pushes go on while
 * the PULL is on its way (BTP(2)), so where its DATA begins is the
 * sender's to know. */
#define PPD_PLACE_STARTED (1ull << 63)

/* Daemon: 1 when a DATA frame of the entry's message (e: its fields, read
 * at the take; next: from as placing goes on) may be written into the
 * buffer: it carries the incarnation the rank described (an earlier life
 * of the sender is stale), starts where the bytes placed so far end (a
 * duplicate, or a frame past a gap, is one go-back-N refuses), and ends
 * within the buffer. Any other frame goes to the rank whole, for its
 * engine to judge. */
static inline int ppd_place_fits(const struct ppd_place *e, uint64_t next, uint32_t src_inc,
				 uint64_t offset, uint32_t len)
{
	int at = next & PPD_PLACE_STARTED ? offset == (next & ~PPD_PLACE_STARTED) : offset >= next;
	return src_inc == e->src_inc && at && offset <= e->len && e->len - offset >= len;
}

/* Daemon: from after a frame at offset of len bytes is placed. */
static inline uint64_t ppd_place_after(uint64_t offset, uint32_t len)
{
	return (offset + len) | PPD_PLACE_STARTED;
}

/* Daemon: the write into the entry's buffer is over (BUSY -> POSTED); the
 * next frame placed must start at from. */
static inline void ppd_place_give(struct ppd_place *x, uint64_t from)
{
	x->from = from;
	__atomic_store_n(&x->state, PPD_PLACE_POSTED, __ATOMIC_RELEASE);
}

#endif
