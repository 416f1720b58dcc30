/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pp_malloc heap: first fit with coalescing inside one rank's heap area
 * of the node segment. Blocks tile the area, each after a 64-byte header
 * (its size and whether it is in use), so every block is 64-byte aligned
 * when the area is. Free neighbours merge as a walk passes them. Only the
 * owning rank allocates and frees; every local rank reaches the bytes
 * through its own mapping (segment offset -> address), so a buffer from here
 * moves between local ranks with plain memcpy. Cold path; not thread-safe.
 *
 * Other local ranks can write the area: every block header is read once and
 * checked (size of whole headers, at least one, ending inside the area;
 * magic; used flag) before a walk steps over it, so a corrupt heap makes
 * alloc and free fail (NULL, -EINVAL) instead of looping or leaving the
 * area; the first corrupt header met is reported with a warning.
 */
#ifndef PP_SHM_HEAP_H
#define PP_SHM_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* A process-local view of a heap area. */
struct pp_shm_heap {
	uint8_t *base;	  /* start of the area */
	size_t size;	  /* its length, a multiple of 64 */
	uint32_t corrupt; /* corrupt block headers met (the first is reported) */
};

/* Format mem (bytes long, 64-byte aligned) as one free block.
 * Errors: -EINVAL (misaligned, or too small for one block). */
int pp_shm_heap_init(struct pp_shm_heap *h, void *mem, size_t bytes);

/* A block of at least len bytes (64-byte aligned), or NULL when none fits
 * (or a corrupt header stops the walk). */
void *pp_shm_heap_alloc(struct pp_shm_heap *h, size_t len);

/* Give a block back. Errors: -EINVAL (p is not a block in use here, or its
 * header is corrupt). */
int pp_shm_heap_free(struct pp_shm_heap *h, void *p);

/* 1 when p lies inside the area. */
int pp_shm_heap_owns(const struct pp_shm_heap *h, const void *p);

/* Bytes in free blocks (headers excluded), and the largest of them, up to
 * the first corrupt header if any. */
size_t pp_shm_heap_free_bytes(struct pp_shm_heap *h, size_t *largest);

#endif
