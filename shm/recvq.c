/* SPDX-License-Identifier: BSD-3-Clause */
/* The receive-queue area; the rules are in recvq.h. */
#include "recvq.h"

#include <errno.h>
#include <string.h>

#include "cma.h"
#include "pp_tag.h"
#include "segment.h"

#define MASK (PP_SHM_RQ_ENTRIES - 1)

static uint64_t word(uint64_t pos, enum pp_shm_rq_state st)
{
	return (pos << 2) | (uint64_t)st;
}

static enum pp_shm_rq_state state_of(uint64_t w)
{
	return (enum pp_shm_rq_state)(w & 3);
}

/* An entry of kind at the tail; its position in *pos. */
static int post(struct pp_shm_rq *q, enum pp_shm_rq_kind kind, uint64_t tag, uint64_t ignore,
		uint64_t addr, uint64_t seg_off, uint64_t len, uint32_t expect, uint64_t *pos)
{
	/* Only r writes head and tail, but s can too: each is read once and
	 * must be no more than the ring apart (this bounds the walk below). */
	uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
	if (tail - head > PP_SHM_RQ_ENTRIES)
		return -EPROTO;
	/* Reclaim what is done at the head: a posted or claimed entry stops it. */
	while (head != tail) {
		struct pp_shm_rq_entry *x = &q->e[head & MASK];
		uint64_t w = atomic_load_explicit(&x->state, memory_order_acquire);
		enum pp_shm_rq_state st = state_of(w);
		if (st == PP_SHM_RQ_POSTED || st == PP_SHM_RQ_CLAIMED)
			break;
		if (st == PP_SHM_RQ_TAKEN)
			atomic_store_explicit(&x->state, word(head, PP_SHM_RQ_FREE),
					      memory_order_relaxed);
		head++;
	}
	atomic_store_explicit(&q->head, head, memory_order_release);
	if (tail - head >= PP_SHM_RQ_ENTRIES)
		return -ENOSPC;
	struct pp_shm_rq_entry *x = &q->e[tail & MASK];
	/* The entry at the tail was reclaimed or withdrawn: anything else means
	 * the indices were rewritten, and the entry may be a live receive. */
	if (state_of(atomic_load_explicit(&x->state, memory_order_acquire)) != PP_SHM_RQ_FREE)
		return -EPROTO;
	atomic_store_explicit(&x->tag, tag, memory_order_relaxed);
	atomic_store_explicit(&x->ignore, ignore, memory_order_relaxed);
	atomic_store_explicit(&x->addr, addr, memory_order_relaxed);
	atomic_store_explicit(&x->seg_off, seg_off, memory_order_relaxed);
	atomic_store_explicit(&x->len, len, memory_order_relaxed);
	atomic_store_explicit(&x->expect, expect, memory_order_relaxed);
	atomic_store_explicit(&x->kind, kind, memory_order_relaxed);
	atomic_store_explicit(&x->state, word(tail, PP_SHM_RQ_POSTED), memory_order_release);
	atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
	*pos = tail;
	return 0;
}

int pp_shm_rq_post(struct pp_shm_rq *q, uint64_t tag, uint64_t ignore, uint64_t addr,
		   uint64_t seg_off, uint64_t len, uint32_t expect)
{
	uint64_t pos;
	int rc = post(q, PP_SHM_RQ_RECV, tag, ignore, addr, seg_off, len, expect, &pos);
	return rc ? rc : (int)(pos & MASK);
}

int64_t pp_shm_rq_offer(struct pp_shm_rq *q, uint32_t msg_id, uint64_t off, uint64_t addr,
			uint64_t seg_off, uint64_t len)
{
	uint64_t pos;
	int rc = post(q, PP_SHM_RQ_HELP, off, 0, addr, seg_off, len, msg_id, &pos);
	return rc ? rc : (int64_t)pos;
}

int pp_shm_rq_settle(struct pp_shm_rq *q, uint64_t pos)
{
	struct pp_shm_rq_entry *x = &q->e[pos & MASK];
	uint64_t w = atomic_load_explicit(&x->state, memory_order_acquire);
	if (w >> 2 != pos)
		return -EPROTO;
	if (state_of(w) == PP_SHM_RQ_POSTED &&
	    atomic_compare_exchange_strong_explicit(&x->state, &w, word(pos, PP_SHM_RQ_FREE),
						    memory_order_acq_rel, memory_order_acquire))
		return 1; /* not claimed: the receiver copies the part */
	if (state_of(w) == PP_SHM_RQ_POSTED)
		return -EAGAIN; /* claimed just now (or given back): look again */
	if (state_of(w) != PP_SHM_RQ_CLAIMED)
		return -EPROTO;
	if (atomic_load_explicit(&x->kind, memory_order_acquire) != PP_SHM_RQ_HELPED)
		return -EAGAIN;
	/* Written: taken, reclaimed at the head by the next post. */
	return atomic_compare_exchange_strong_explicit(&x->state, &w, word(pos, PP_SHM_RQ_TAKEN),
						       memory_order_acq_rel, memory_order_relaxed)
		   ? 0
		   : -EPROTO;
}

int pp_shm_rq_take(struct pp_shm_rq *q, int slot, uint32_t msg_id, int written)
{
	struct pp_shm_rq_entry *x = &q->e[slot & MASK];
	uint64_t pos = atomic_load_explicit(&x->state, memory_order_relaxed) >> 2;
	enum pp_shm_rq_state want = written ? PP_SHM_RQ_CLAIMED : PP_SHM_RQ_POSTED;
	/* One exchange, not a compare-and-swap loop that a sender rewriting
	 * the word could keep failing: the state it replaces decides. */
	uint64_t w =
	    atomic_exchange_explicit(&x->state, word(pos, PP_SHM_RQ_TAKEN), memory_order_acq_rel);
	int ok = state_of(w) == want &&
		 (!written || atomic_load_explicit(&x->expect, memory_order_relaxed) == msg_id);
	return ok ? 0 : -EPROTO;
}

int pp_shm_rq_withdraw(struct pp_shm_rq *q, int slot)
{
	struct pp_shm_rq_entry *x = &q->e[slot & MASK];
	uint64_t w = atomic_load_explicit(&x->state, memory_order_acquire);
	if (state_of(w) != PP_SHM_RQ_POSTED)
		return state_of(w) == PP_SHM_RQ_CLAIMED ? -EBUSY : 0;
	if (atomic_compare_exchange_strong_explicit(&x->state, &w, word(w >> 2, PP_SHM_RQ_FREE),
						    memory_order_acq_rel, memory_order_acquire))
		return 0;
	return -EBUSY; /* only a claim changes a posted entry under us */
}

int pp_shm_rq_close(struct pp_shm_rq *q)
{
	int claimed = 0;
	for (int i = 0; i < PP_SHM_RQ_ENTRIES; i++)
		if (state_of(atomic_load_explicit(&q->e[i].state, memory_order_acquire)) !=
			PP_SHM_RQ_FREE &&
		    pp_shm_rq_withdraw(q, i) == -EBUSY)
			claimed++;
	return claimed;
}

int pp_shm_rq_claim(struct pp_shm_rq *q, uint64_t tag, uint32_t msg_id, uint64_t len,
		    struct pp_shm_rq_target *t)
{
	uint64_t head = atomic_load_explicit(&q->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
	if (tail - head > PP_SHM_RQ_ENTRIES)
		head = tail - PP_SHM_RQ_ENTRIES; /* head read long before tail */
	for (uint64_t pos = head; pos != tail; pos++) {
		struct pp_shm_rq_entry *x = &q->e[pos & MASK];
		uint64_t w = atomic_load_explicit(&x->state, memory_order_acquire);
		/* Another position: reclaimed and reused for a later receive. */
		if (w >> 2 != pos || state_of(w) != PP_SHM_RQ_POSTED ||
		    atomic_load_explicit(&x->kind, memory_order_relaxed) != PP_SHM_RQ_RECV)
			continue;
		if (!pp_tag_match(atomic_load_explicit(&x->tag, memory_order_relaxed),
				  atomic_load_explicit(&x->ignore, memory_order_relaxed), tag))
			continue;
		/* The first receive this message would match: it or nothing. */
		struct pp_shm_rq_target d = {
		    atomic_load_explicit(&x->addr, memory_order_relaxed),
		    atomic_load_explicit(&x->seg_off, memory_order_relaxed),
		    atomic_load_explicit(&x->len, memory_order_relaxed)};
		if (atomic_load_explicit(&x->expect, memory_order_relaxed) != msg_id || d.len < len)
			return -ENOENT;
		/* The fields read above belong to this position as long as the
		 * state word is unchanged: the CAS confirms both. */
		if (!atomic_compare_exchange_strong_explicit(
			&x->state, &w, word(pos, PP_SHM_RQ_CLAIMED), memory_order_acq_rel,
			memory_order_relaxed))
			return -ENOENT;
		*t = d;
		return (int)(pos & MASK);
	}
	return -ENOENT;
}

void pp_shm_rq_unclaim(struct pp_shm_rq *q, int slot)
{
	struct pp_shm_rq_entry *x = &q->e[slot & MASK];
	uint64_t w = atomic_load_explicit(&x->state, memory_order_acquire);
	if (state_of(w) == PP_SHM_RQ_CLAIMED)
		atomic_compare_exchange_strong_explicit(&x->state, &w,
							word(w >> 2, PP_SHM_RQ_POSTED),
							memory_order_release, memory_order_relaxed);
}

/* Write len bytes at buf to t: memcpy into the segment (bounded by it), or
 * cross-memory attach into process pid. */
static int put(const struct pp_shm_rq_target *t, pid_t pid, uint8_t *seg, uint64_t seg_size,
	       const void *buf, uint64_t len)
{
	if (t->seg_off != PP_SHM_NO_OFFSET) {
		if (!seg || t->seg_off > seg_size || len > seg_size - t->seg_off)
			return -EFAULT;
		memcpy(seg + t->seg_off, buf, (size_t)len);
		return 0;
	}
	return pp_shm_cma_denied() ? -EPERM : pp_shm_cma_write(pid, t->addr, buf, (size_t)len);
}

int pp_shm_rq_deliver(struct pp_shm_rq *q, pid_t pid, uint8_t *seg, uint64_t seg_size, uint64_t tag,
		      uint32_t msg_id, const void *buf, uint64_t len)
{
	struct pp_shm_rq_target t;
	int slot = pp_shm_rq_claim(q, tag, msg_id, len, &t);
	if (slot < 0)
		return slot;
	int rc = put(&t, pid, seg, seg_size, buf, len);
	if (rc)
		pp_shm_rq_unclaim(q, slot);
	return rc;
}

int64_t pp_shm_rq_help(struct pp_shm_rq *q, uint64_t pos, pid_t pid, uint8_t *seg,
		       uint64_t seg_size, uint32_t msg_id, const void *buf, uint64_t len)
{
	struct pp_shm_rq_entry *x = &q->e[pos & MASK];
	uint64_t w = atomic_load_explicit(&x->state, memory_order_acquire);
	if (w != word(pos, PP_SHM_RQ_POSTED) ||
	    atomic_load_explicit(&x->kind, memory_order_relaxed) != PP_SHM_RQ_HELP)
		return -ENOENT; /* settled already (the receiver copied it), or no help */
	uint64_t off = atomic_load_explicit(&x->tag, memory_order_relaxed);
	struct pp_shm_rq_target t = {atomic_load_explicit(&x->addr, memory_order_relaxed),
				     atomic_load_explicit(&x->seg_off, memory_order_relaxed),
				     atomic_load_explicit(&x->len, memory_order_relaxed)};
	if (atomic_load_explicit(&x->expect, memory_order_relaxed) != msg_id || off > len ||
	    t.len > len - off)
		return -ENOENT;
	/* The fields read above are this position's while the word is
	 * unchanged: the CAS confirms both. */
	if (!atomic_compare_exchange_strong_explicit(&x->state, &w, word(pos, PP_SHM_RQ_CLAIMED),
						     memory_order_acq_rel, memory_order_relaxed))
		return -ENOENT;
	int rc = put(&t, pid, seg, seg_size, (const uint8_t *)buf + off, t.len);
	if (rc) {
		pp_shm_rq_unclaim(q, (int)(pos & MASK));
		return rc;
	}
	atomic_store_explicit(&x->kind, PP_SHM_RQ_HELPED, memory_order_release);
	return (int64_t)t.len;
}

enum pp_shm_rq_state pp_shm_rq_state(const struct pp_shm_rq *q, int slot)
{
	return state_of(atomic_load_explicit(&q->e[slot & MASK].state, memory_order_acquire));
}
