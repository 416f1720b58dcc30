/* SPDX-License-Identifier: BSD-3-Clause */
/* The SPSC cell ring; the rules are in ring.h. */
#include "ring.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#define RING_MAGIC 0x70705247u /* "ppRG" */
#define REC_DATA   0u	       /* a record */
#define REC_PAD	   1u	       /* filler to the end of the cells */

/* Each index has a 128-byte block of its own: CPUs fetch lines in adjacent
 * pairs, and head and tail in one pair bounce between the two sides (about
 * 0.05 us more per message, one way, in a two-thread ping-pong). */
struct pp_shm_ring_shared {
	_Alignas(128) _Atomic uint64_t head; /* producer index: cells ever committed */
	_Alignas(128) _Atomic uint64_t tail; /* consumer index: cells ever released */
	_Alignas(128) uint32_t magic;	     /* RING_MAGIC once formatted */
	uint32_t ncells;		     /* cells after the header */
};

_Static_assert(sizeof(struct pp_shm_ring_shared) == 3 * 128, "ring header is three line pairs");
_Static_assert(_Alignof(struct pp_shm_ring_shared) == PP_SHM_RING_ALIGN, "ring alignment");

/* The header at the start of a record's first cell. */
struct rec_hdr {
	uint32_t len;  /* payload bytes (REC_DATA) or cells (REC_PAD) */
	uint32_t kind; /* REC_DATA or REC_PAD */
};

static uint32_t cells_of(uint32_t len)
{
	return (len + PP_SHM_RING_REC_HDR + PP_SHM_RING_CELL - 1) / PP_SHM_RING_CELL;
}

/* The header's indices sit in 128-byte blocks; memory off that boundary
 * would put both in one adjacent-line pair again (and is undefined C). */
static int misaligned(const void *mem)
{
	return ((uintptr_t)mem & (PP_SHM_RING_ALIGN - 1)) != 0;
}

static int pow2(uint32_t n)
{
	return n >= 2 && (n & (n - 1)) == 0;
}

size_t pp_shm_ring_bytes(uint32_t ncells)
{
	if (!pow2(ncells))
		return 0;
	return sizeof(struct pp_shm_ring_shared) + (size_t)ncells * PP_SHM_RING_CELL;
}

int pp_shm_ring_format(void *mem, uint32_t ncells)
{
	if (!mem || !pow2(ncells) || misaligned(mem))
		return -EINVAL;
	struct pp_shm_ring_shared *sh = mem;
	memset(sh, 0, sizeof(*sh));
	atomic_init(&sh->head, 0);
	atomic_init(&sh->tail, 0);
	sh->ncells = ncells;
	atomic_thread_fence(memory_order_release);
	sh->magic = RING_MAGIC;
	return 0;
}

int pp_shm_ring_attach(struct pp_shm_ring *r, void *mem)
{
	struct pp_shm_ring_shared *sh = mem;
	if (!r || !sh || misaligned(sh) || sh->magic != RING_MAGIC || !pow2(sh->ncells))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->sh = sh;
	r->cells = (uint8_t *)mem + sizeof(*sh);
	r->ncells = sh->ncells;
	r->mask = sh->ncells - 1;
	/* The cache starts at the tail: for the producer that is the consumer's
	 * index; for the consumer it equals its own, so its first peek looks at
	 * the producer's. */
	r->theirs = atomic_load_explicit(&sh->tail, memory_order_acquire);
	return 0;
}

uint32_t pp_shm_ring_max_record(const struct pp_shm_ring *r)
{
	return r->ncells / 2 * PP_SHM_RING_CELL - PP_SHM_RING_REC_HDR;
}

int pp_shm_ring_reserve(struct pp_shm_ring *r, uint32_t len, void **ptr)
{
	if (len > pp_shm_ring_max_record(r))
		return -EMSGSIZE;
	/* The producer's own index is the shared head: only it writes it. */
	uint64_t head = atomic_load_explicit(&r->sh->head, memory_order_relaxed);
	uint32_t need = cells_of(len);
	uint32_t pos = (uint32_t)(head & r->mask);
	uint32_t pad = pos + need > r->ncells ? r->ncells - pos : 0;
	uint64_t total = (uint64_t)pad + need;
	if (head + total - r->theirs > r->ncells) {
		r->theirs = atomic_load_explicit(&r->sh->tail, memory_order_acquire);
		if (head + total - r->theirs > r->ncells)
			return -EAGAIN;
	}
	if (pad) {
		struct rec_hdr *ph = (struct rec_hdr *)(r->cells + (size_t)pos * PP_SHM_RING_CELL);
		ph->len = pad;
		ph->kind = REC_PAD;
		pos = 0;
	}
	r->mine = head;
	r->held = pad;
	r->held_pos = pos;
	*ptr = r->cells + (size_t)pos * PP_SHM_RING_CELL + PP_SHM_RING_REC_HDR;
	return 0;
}

void pp_shm_ring_commit(struct pp_shm_ring *r, uint32_t len)
{
	struct rec_hdr *h = (struct rec_hdr *)(r->cells + (size_t)r->held_pos * PP_SHM_RING_CELL);
	h->len = len;
	h->kind = REC_DATA;
	uint64_t head = r->mine + r->held + cells_of(len);
	r->held = 0;
	r->mine = head;
	atomic_store_explicit(&r->sh->head, head, memory_order_release);
}

int pp_shm_ring_peek(struct pp_shm_ring *r, const void **ptr, uint32_t *len)
{
	/* The consumer's own index is the shared tail: only it writes it. */
	uint64_t tail = atomic_load_explicit(&r->sh->tail, memory_order_relaxed);
	if (tail == r->theirs) {
		r->theirs = atomic_load_explicit(&r->sh->head, memory_order_acquire);
		if (tail == r->theirs)
			return 0;
	}
	uint32_t pos = (uint32_t)(tail & r->mask), pad = 0;
	const struct rec_hdr *h =
	    (const struct rec_hdr *)(r->cells + (size_t)pos * PP_SHM_RING_CELL);
	if (h->kind == REC_PAD) {
		/* A pad is committed with the record after it, at cell 0. */
		pad = h->len;
		pos = 0;
		h = (const struct rec_hdr *)r->cells;
	}
	r->mine = tail;
	r->held = pad + cells_of(h->len);
	r->held_pos = pos;
	*ptr = (const uint8_t *)h + PP_SHM_RING_REC_HDR;
	*len = h->len;
	return 1;
}

void pp_shm_ring_release(struct pp_shm_ring *r)
{
	uint64_t tail = r->mine + r->held;
	r->held = 0;
	r->mine = tail;
	atomic_store_explicit(&r->sh->tail, tail, memory_order_release);
}
