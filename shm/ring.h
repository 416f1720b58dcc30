/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A lock-free single-producer/single-consumer ring of 64-byte cells in
 * memory the caller provides (a shared-memory segment, or any buffer).
 *
 * Layout: a header of three 128-byte blocks (the producer index, the consumer
 * index, the geometry), then ncells cells. The indices count cells for ever
 * (64 bits, never wrapping in practice); a position is index & (ncells - 1).
 *
 * Records: a record is len bytes spanning whole cells, after an 8-byte record
 * header in its first cell; its payload never wraps: when it does not fit
 * before the end of the cells, the producer fills the rest with a pad record
 * and starts the record at cell 0. A record may take at most half the ring.
 *
 * Ordering: the producer writes a record, then publishes it with a release
 * store of the producer index; the consumer sees it with an acquire load,
 * reads it, and gives the cells back with a release store of the consumer
 * index, which the producer reads with an acquire load. Each side keeps, in
 * its own process-local handle, a cached copy of the other's index: the
 * other side's line is read only when the cache says the ring is full
 * (producer) or empty (consumer); an empty ring costs one compare.
 *
 * One producer and one consumer at a time; each may be in any process that
 * maps the memory (addresses differ, offsets do not).
 */
#ifndef PP_SHM_RING_H
#define PP_SHM_RING_H

#include <stddef.h>
#include <stdint.h>

#define PP_SHM_RING_CELL    64u	 /* bytes per cell */
#define PP_SHM_RING_REC_HDR 8u	 /* record header bytes in the first cell */
#define PP_SHM_RING_ALIGN   128u /* alignment of a ring's memory */

struct pp_shm_ring_shared; /* the shared header, in the caller's memory */

/* One side's process-local view of a ring. */
struct pp_shm_ring {
	struct pp_shm_ring_shared *sh; /* shared header */
	uint8_t *cells;		       /* first cell */
	uint32_t ncells;	       /* cells, a power of two */
	uint32_t mask;		       /* ncells - 1 */
	uint64_t mine;		       /* own index when the record was reserved / peeked */
	uint64_t theirs;	       /* cached index of the other side */
	uint32_t held;		       /* cells of the reserved / peeked record, pad included */
	uint32_t held_pos;	       /* position of the reserved / peeked record */
};

/* Bytes of memory a ring of ncells cells needs (header included); 0 when
 * ncells is not a power of two of at least 2. */
size_t pp_shm_ring_bytes(uint32_t ncells);

/* Format mem (pp_shm_ring_bytes(ncells) bytes, PP_SHM_RING_ALIGN-aligned) as an empty
 * ring. Errors: -EINVAL (ncells not a power of two >= 2, mem misaligned). */
int pp_shm_ring_format(void *mem, uint32_t ncells);

/* Make r a view of the formatted ring at mem, for the producer or the
 * consumer (the same call: the role is in which functions are used).
 * Errors: -EINVAL (mem misaligned or not a formatted ring). */
int pp_shm_ring_attach(struct pp_shm_ring *r, void *mem);

/* Largest record payload the ring takes. */
uint32_t pp_shm_ring_max_record(const struct pp_shm_ring *r);

/* Producer: room for a record of up to len bytes; *ptr is where its payload
 * goes (8-byte aligned). Reserving again before commit replaces the
 * reservation. Errors: -EAGAIN (full now: the consumer must release first),
 * -EMSGSIZE (len above pp_shm_ring_max_record). */
int pp_shm_ring_reserve(struct pp_shm_ring *r, uint32_t len, void **ptr);

/* Producer: publish the reserved record with its real length len (at most
 * what was reserved). */
void pp_shm_ring_commit(struct pp_shm_ring *r, uint32_t len);

/* Consumer: the oldest record. Returns 1 and sets *ptr, *len, or 0 when the
 * ring is empty. The record stays until pp_shm_ring_release. */
int pp_shm_ring_peek(struct pp_shm_ring *r, const void **ptr, uint32_t *len);

/* Consumer: give the peeked record's cells back to the producer. */
void pp_shm_ring_release(struct pp_shm_ring *r);

#endif
