/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A lock-free single-producer/single-consumer ring of 64-byte cells in
 * memory the caller provides (a shared-memory segment, or any buffer).
 *
 * Layout: a header of three 128-byte blocks (the producer index, the consumer
 * index, the geometry and the ring's key), then ncells cells. The indices
 * count cells for ever (64 bits, never wrapping in practice); a position is
 * index & (ncells - 1).
 *
 * Records: a record is len bytes spanning whole cells, after a 16-byte record
 * header in its first cell; its payload never wraps: when it does not fit
 * before the end of the cells, the producer fills the rest with a pad record
 * and starts the record at cell 0. A record may take at most half the ring.
 *
 * Ordering: the producer writes a record, then publishes it with a release
 * store of its mark (pp_shm_ring_mark_of: the index of its first cell,
 * mixed, XOR the ring's key), in the record header. The consumer polls the mark in the cell at its
 * own index with an acquire load, so a message costs the one line it is written in: polling the
 * producer index instead would put a second line, read before the record's, on every message's path
 * (88-byte records one way between two cores: 200 against 310 ns, tests/bench/ring_pingpong). The
 * consumer gives cells back with a release store of the consumer index, which the producer reads
 * with an acquire load only when its cached copy says the ring is full. The producer index is
 * published too, for attach and for the producer's own restart; the consumer does not poll it.
 *
 * The key is random, chosen at format, and the index is multiplied by an
 * odd constant before the XOR, so that marks of indices a lap or two apart
 * differ in every byte. A stale cell (the middle of an old record, data a
 * remote peer chose included) then holds the mark of an index yet to come
 * only with odds of about 2^-64 per cell and lap, also when the last bytes
 * of a record's payload overwrote only the first bytes of an old mark.
 * With the index XOR the key alone, such a word kept the old mark's high
 * bytes, which a later index's mark shares: one payload byte then matched
 * with odds of 1 in 256, and a stress run read a stale record as new.
 *
 * Trust: the other side may be broken or hostile and write anything into the
 * shared memory at any moment. Neither side reads its own index back from
 * the shared header (it only publishes it there), the geometry is read once
 * at attach, and each value read from the other side is read once into a
 * private copy and checked before it is used: the consumer checks every
 * marked record header (kind DATA or PAD; a pad reaching exactly to the end
 * of the cells; a record of at most half the ring that does not run past the
 * end of the cells); the producer checks the consumer
 * index (not ahead of its own, at most ncells behind). A consumer that
 * finds the ring broken stops ("poisoned"): peek returns -EPROTO from then
 * on, and reads nothing more from the ring; what to do with the peer is the
 * caller's choice. No pointer or length the consumer hands out leaves the
 * cells.
 *
 * One producer and one consumer at a time; each may be in any process that
 * maps the memory (addresses differ, offsets do not).
 */
#ifndef PP_SHM_RING_H
#define PP_SHM_RING_H

#include <stddef.h>
#include <stdint.h>

#define PP_SHM_RING_CELL    64u	 /* bytes per cell */
#define PP_SHM_RING_REC_HDR 16u	 /* record header bytes in the first cell */
#define PP_SHM_RING_ALIGN   128u /* alignment of a ring's memory */

struct pp_shm_ring_shared; /* the shared header, in the caller's memory */

/* One side's process-local view of a ring. */
struct pp_shm_ring {
	struct pp_shm_ring_shared *sh; /* shared header */
	uint8_t *cells;		       /* first cell */
	uint32_t ncells;	       /* cells, a power of two (read once, at attach) */
	uint32_t mask;		       /* ncells - 1 */
	uint64_t head;		       /* producer: its own index; consumer: unused */
	uint64_t tail;		       /* consumer: its own index; producer: the consumer's as last
					* read and checked */
	uint32_t held;		       /* cells of the reserved / peeked record, pad included */
	uint32_t held_pos;	       /* producer: position of the reserved record */
	uint32_t max_len;	       /* largest record payload: half the cells, less the header */
	uint64_t key;		       /* the ring's key (read once, at attach) */
	int err;		       /* consumer: 0, or -EPROTO once the ring was found broken
					* (poisoned; ncells is 0 then) */
};

/* Bytes of memory a ring of ncells cells needs (header included); 0 when
 * ncells is not a power of two of at least 2. */
size_t pp_shm_ring_bytes(uint32_t ncells);

/* Format mem (pp_shm_ring_bytes(ncells) bytes, PP_SHM_RING_ALIGN-aligned) as an empty
 * ring with a fresh random key. The cells are left as they are: a cell
 * holds a record only once marked with an index and this key.
 * Errors: -EINVAL (ncells not a power of two >= 2, mem misaligned). */
int pp_shm_ring_format(void *mem, uint32_t ncells);

/* Make r a view of the formatted ring at mem, for the producer or the
 * consumer (the same call: the role is in which functions are used). The
 * ring's size is taken from its header: only for memory nobody else can
 * have written yet (use pp_shm_ring_attach_cells otherwise).
 * Errors: -EINVAL (mem misaligned or not a formatted ring). */
int pp_shm_ring_attach(struct pp_shm_ring *r, void *mem);

/* As pp_shm_ring_attach, for memory sized for a ring of ncells cells that
 * another process may have written: the header must say ncells (else the
 * cells could run past the memory), and its indices must be consistent.
 * Errors: -EINVAL (mem misaligned, not a formatted ring of ncells cells, or
 * indices that no ring can have). */
int pp_shm_ring_attach_cells(struct pp_shm_ring *r, void *mem, uint32_t ncells);

/* Largest record payload the ring takes. */
uint32_t pp_shm_ring_max_record(const struct pp_shm_ring *r);

/* Producer: room for a record of up to len bytes; *ptr is where its payload
 * goes (8-byte aligned). Reserving again before commit replaces the
 * reservation. Errors: -EAGAIN (full now: the consumer must release first),
 * -EMSGSIZE (len above pp_shm_ring_max_record), -EPROTO (the consumer index
 * read from the ring is impossible: ahead of the producer's, or further
 * behind than the ring holds; the ring is broken). */
int pp_shm_ring_reserve(struct pp_shm_ring *r, uint32_t len, void **ptr);

/* Producer, pp_shm_ring_reserve's common case inline: the payload pointer
 * when a record of len bytes fits before the end of the cells in what the
 * consumer was last seen to have released, else NULL (call
 * pp_shm_ring_reserve, which reads the consumer index or pads). */
static inline void *pp_shm_ring_reserve_fast(struct pp_shm_ring *r, uint32_t len)
{
	uint32_t need = (len + PP_SHM_RING_REC_HDR + PP_SHM_RING_CELL - 1) / PP_SHM_RING_CELL;
	uint32_t pos = (uint32_t)(r->head & r->mask);
	if (len > r->max_len || pos + need > r->ncells || r->head + need - r->tail > r->ncells)
		return NULL;
	r->held = 0;
	r->held_pos = pos;
	return r->cells + (size_t)pos * PP_SHM_RING_CELL + PP_SHM_RING_REC_HDR;
}

/* Producer: publish the reserved record with its real length len (at most
 * what was reserved). */
void pp_shm_ring_commit(struct pp_shm_ring *r, uint32_t len);

/* Producer: ask for the cell ahead cells past the next record's first, for
 * writing, now (a hint: nothing is read or written). A cell the consumer
 * read a lap ago must come back to the producer's core before the
 * producer's store can go; while the producer streams records, asking early
 * takes that wait out of the next stores (pp_shm_link's lite sends). */
static inline void pp_shm_ring_warm(const struct pp_shm_ring *r, uint32_t ahead)
{
	const uint8_t *c =
	    r->cells + (size_t)((uint32_t)(r->head + ahead) & r->mask) * PP_SHM_RING_CELL;
#if defined(__x86_64__) /* for writing: a plain prefetch takes the line shared */
	__asm__ volatile("prefetchw %0" ::"m"(*c));
#else
	__builtin_prefetch(c, 1, 3);
#endif
}

/* Producer: 1 when the consumer has given back every record committed (its
 * index read now), 0 when some are still in the ring. */
int pp_shm_ring_drained(struct pp_shm_ring *r);

/* Consumer: 1 when nothing is in the ring (the mark at its index read now),
 * 0 when a record waits; a poisoned ring counts as empty. */
int pp_shm_ring_empty(struct pp_shm_ring *r);

/* The mark that publishes the record whose first cell has index, in a
 * ring with key (see Ordering above). */
static inline uint64_t pp_shm_ring_mark_of(uint64_t key, uint64_t index)
{
	return index * 0x9E3779B97F4A7C15ull ^ key;
}

/* 1 when the record at cell pos is marked as published with index
 * (acquire: what its producer wrote before the mark is visible after it).
 * A cell's mark is its first 8 bytes (ring.c). */
static inline int pp_shm_ring_marked(const struct pp_shm_ring *r, uint32_t pos, uint64_t index)
{
	const uint64_t *mark = (const uint64_t *)(r->cells + (size_t)pos * PP_SHM_RING_CELL);
	return __atomic_load_n(mark, __ATOMIC_ACQUIRE) == pp_shm_ring_mark_of(r->key, index);
}

/* Consumer: 0 when pp_shm_ring_peek would return 0 now (the cell at its
 * index is not marked with it), else 1: a poll loop's look without a call.
 * A poisoned ring says 1, so peek reports it. */
static inline int pp_shm_ring_ready(const struct pp_shm_ring *r)
{
	return r->err || pp_shm_ring_marked(r, (uint32_t)(r->tail & r->mask), r->tail);
}

/* Consumer: bytes of the cells committed and not yet released, from the
 * producer index it publishes (read now; 0 when that index is not sound).
 * For measurements only: the records are still found by their marks. */
uint64_t pp_shm_ring_backlog(const struct pp_shm_ring *r);

/* Consumer: the oldest record. Returns 1 and sets *ptr, *len (the payload
 * lies wholly inside the cells), or 0 when the ring is empty. The record
 * stays until pp_shm_ring_release. Its payload is in memory the producer can
 * still write: read what is checked once.
 * Errors: -EPROTO (the producer broke the ring's rules: see Trust above);
 * the ring is poisoned and every later peek returns -EPROTO too. */
int pp_shm_ring_peek(struct pp_shm_ring *r, const void **ptr, uint32_t *len);

/* Consumer: give the peeked record's cells back to the producer (nothing
 * when no record is peeked). */
void pp_shm_ring_release(struct pp_shm_ring *r);

#endif
