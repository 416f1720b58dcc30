/* SPDX-License-Identifier: BSD-3-Clause */
/* The SPSC cell ring; the rules are in ring.h. */
#include "ring.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "pp_compiler.h"

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
	uint64_t key;			     /* XORed into every record's mark */
};

_Static_assert(sizeof(struct pp_shm_ring_shared) == 3 * 128, "ring header is three line pairs");
_Static_assert(_Alignof(struct pp_shm_ring_shared) == PP_SHM_RING_ALIGN, "ring alignment");

/* The header at the start of a record's first cell. */
struct rec_hdr {
	uint64_t mark; /* pp_shm_ring_mark_of this cell's index: published, written last */
	uint32_t len;  /* payload bytes (REC_DATA) or cells (REC_PAD) */
	uint32_t kind; /* REC_DATA or REC_PAD */
};

_Static_assert(sizeof(struct rec_hdr) == PP_SHM_RING_REC_HDR, "record header size");
_Static_assert(offsetof(struct rec_hdr, mark) == 0, "pp_shm_ring_ready reads the mark first");

/* Cells of a record of len payload bytes, len at most max_len (a larger one
 * would wrap the count: 0xFFFFFFB9 to 0 cells). */
static uint32_t cells_of(uint32_t len)
{
	return (len + PP_SHM_RING_REC_HDR + PP_SHM_RING_CELL - 1) / PP_SHM_RING_CELL;
}

static struct rec_hdr *hdr_at(const struct pp_shm_ring *r, uint32_t pos)
{
	return (struct rec_hdr *)(r->cells + (size_t)pos * PP_SHM_RING_CELL);
}

/* 1 when the record header at pos is marked with index, and then *h holds
 * its len and kind, read once: the producer can rewrite them under us, and
 * the checks and the use must see the same values. They are read only once
 * the mark matches: a header not yet marked may be being written. */
static int read_hdr(const struct pp_shm_ring *r, uint32_t pos, uint64_t index, struct rec_hdr *h)
{
	if (!pp_shm_ring_marked(r, pos, index))
		return 0;
	const volatile struct rec_hdr *v = hdr_at(r, pos);
	h->len = v->len;
	h->kind = v->kind;
	return 1;
}

/* A fresh key with its top bit set: index 0's mark (the key itself) is
 * never a cleared cell's 0; another index's is with odds of 2^-64. */
static uint64_t new_key(void)
{
	uint64_t k = 0;
	if (getrandom(&k, sizeof(k), GRND_NONBLOCK) != (ssize_t)sizeof(k)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		k = ((uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec) * 0x9e3779b97f4a7c15ull ^
		    (uint64_t)(uintptr_t)&k;
	}
	return k | 1ull << 63;
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
	memset(sh, 0, sizeof(*sh)); /* not the cells: untouched pages stay unallocated */
	atomic_init(&sh->head, 0);
	atomic_init(&sh->tail, 0);
	sh->ncells = ncells;
	sh->key = new_key();
	atomic_thread_fence(memory_order_release);
	sh->magic = RING_MAGIC;
	return 0;
}

int pp_shm_ring_attach_cells(struct pp_shm_ring *r, void *mem, uint32_t ncells)
{
	struct pp_shm_ring_shared *sh = mem;
	if (!r || !sh || misaligned(sh))
		return -EINVAL;
	/* The geometry is read once: the private copy is what is used. */
	const volatile struct pp_shm_ring_shared *v = sh;
	uint32_t magic = v->magic, n = v->ncells;
	uint64_t key = v->key;
	if (magic != RING_MAGIC || !pow2(n) || (ncells && n != ncells))
		return -EINVAL;
	uint64_t head = atomic_load_explicit(&sh->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&sh->tail, memory_order_acquire);
	if (head - tail > n)
		return -EINVAL; /* tail ahead of head, or more than the ring apart */
	memset(r, 0, sizeof(*r));
	r->sh = sh;
	r->cells = (uint8_t *)mem + sizeof(*sh);
	r->ncells = n;
	r->mask = n - 1;
	r->max_len = n / 2 * PP_SHM_RING_CELL - PP_SHM_RING_REC_HDR;
	r->key = key;
	/* Each side's own index starts where the ring is: the producer's at the
	 * head, the consumer's at the tail. */
	r->head = head;
	r->tail = tail;
	return 0;
}

int pp_shm_ring_attach(struct pp_shm_ring *r, void *mem)
{
	return pp_shm_ring_attach_cells(r, mem, 0);
}

uint32_t pp_shm_ring_max_record(const struct pp_shm_ring *r)
{
	return r->max_len;
}

int pp_shm_ring_reserve(struct pp_shm_ring *r, uint32_t len, void **ptr)
{
	if (len > pp_shm_ring_max_record(r))
		return -EMSGSIZE;
	uint64_t head = r->head;
	uint32_t need = cells_of(len);
	uint32_t pos = (uint32_t)(head & r->mask);
	uint32_t pad = pos + need > r->ncells ? r->ncells - pos : 0;
	uint64_t total = (uint64_t)pad + need;
	if (head + total - r->tail > r->ncells) {
		uint64_t tail = atomic_load_explicit(&r->sh->tail, memory_order_acquire);
		if (head - tail > r->ncells)
			return -EPROTO; /* released what was never committed */
		r->tail = tail;
		if (head + total - tail > r->ncells)
			return -EAGAIN;
	}
	if (pad) {
		struct rec_hdr *ph = hdr_at(r, pos);
		ph->len = pad;
		ph->kind = REC_PAD;
		pos = 0;
	}
	r->held = pad;
	r->held_pos = pos;
	*ptr = r->cells + (size_t)pos * PP_SHM_RING_CELL + PP_SHM_RING_REC_HDR;
	return 0;
}

void pp_shm_ring_commit(struct pp_shm_ring *r, uint32_t len)
{
	struct rec_hdr *h = hdr_at(r, r->held_pos);
	h->len = len;
	h->kind = REC_DATA;
	__atomic_store_n(&h->mark, pp_shm_ring_mark_of(r->key, r->head + r->held),
			 __ATOMIC_RELEASE);
	if (r->held) /* the pad, marked after its record: a consumer past it finds one */
		__atomic_store_n(&hdr_at(r, (uint32_t)(r->head & r->mask))->mark,
				 pp_shm_ring_mark_of(r->key, r->head), __ATOMIC_RELEASE);
	uint64_t head = r->head + r->held + cells_of(len);
	r->held = 0;
	r->head = head;
	atomic_store_explicit(&r->sh->head, head, memory_order_release);
}

int pp_shm_ring_drained(struct pp_shm_ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->sh->tail, memory_order_acquire);
	if (r->head - tail <= r->ncells) /* a sound index: cache it */
		r->tail = tail;
	return tail == r->head;
}

/* The consumer found the ring broken: from now on it reads nothing from it. */
static int poison(struct pp_shm_ring *r)
{
	r->err = -EPROTO;
	r->held = 0;
	return -EPROTO;
}

int pp_shm_ring_empty(struct pp_shm_ring *r)
{
	return r->err || !pp_shm_ring_marked(r, (uint32_t)(r->tail & r->mask), r->tail);
}

uint64_t pp_shm_ring_backlog(const struct pp_shm_ring *r)
{
	if (r->err)
		return 0;
	uint64_t n = atomic_load_explicit(&r->sh->head, memory_order_relaxed) - r->tail;
	return (n <= r->ncells ? n : 0) * PP_SHM_RING_CELL; /* unsound: none */
}

int pp_shm_ring_peek(struct pp_shm_ring *r, const void **ptr, uint32_t *len)
{
	if (pp_unlikely(r->err))
		return r->err;
	uint64_t tail = r->tail;
	uint32_t pos = (uint32_t)(tail & r->mask), pad = 0;
	struct rec_hdr h;
	if (!read_hdr(r, pos, tail, &h))
		return 0; /* empty */
	if (pp_unlikely(h.kind != REC_DATA)) {
		/* A pad fills exactly the cells left to the end; its record, at
		 * cell 0, was marked before it. */
		if (h.kind != REC_PAD || h.len != r->ncells - pos)
			return poison(r);
		pad = h.len;
		pos = 0;
		if (!read_hdr(r, 0, tail + pad, &h) || h.kind != REC_DATA)
			return poison(r);
	}
	/* At most half the ring (then the count below cannot wrap) and inside
	 * the cells. */
	if (h.len > r->max_len)
		return poison(r);
	uint32_t need = cells_of(h.len);
	if (pos + need > r->ncells)
		return poison(r);
	r->held = pad + need;
	*ptr = r->cells + (size_t)pos * PP_SHM_RING_CELL + PP_SHM_RING_REC_HDR;
	*len = h.len;
	return 1;
}

void pp_shm_ring_release(struct pp_shm_ring *r)
{
	uint64_t tail = r->tail + r->held;
	r->held = 0;
	r->tail = tail;
	atomic_store_explicit(&r->sh->tail, tail, memory_order_release);
}
