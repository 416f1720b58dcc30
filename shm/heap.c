/* SPDX-License-Identifier: BSD-3-Clause */
/* The pp_malloc heap; the rules are in heap.h. */
#include "heap.h"

#include <errno.h>

#define HDR	  64u
#define BLK_MAGIC 0x7070484bu /* "ppHK" */

struct blk {
	uint64_t size;	/* bytes of the block, header included */
	uint32_t magic; /* BLK_MAGIC */
	uint32_t used;	/* 1 in use, 0 free */
};

static struct blk *at(const struct pp_shm_heap *h, size_t off)
{
	return (struct blk *)(h->base + off);
}

int pp_shm_heap_init(struct pp_shm_heap *h, void *mem, size_t bytes)
{
	bytes &= ~(size_t)(HDR - 1);
	if (!h || !mem || ((uintptr_t)mem & (HDR - 1)) || bytes < 2 * HDR)
		return -EINVAL;
	h->base = mem;
	h->size = bytes;
	*at(h, 0) = (struct blk){.size = bytes, .magic = BLK_MAGIC, .used = 0};
	return 0;
}

/* Merge the free blocks that follow the free block at off into it. */
static void merge(struct pp_shm_heap *h, size_t off)
{
	struct blk *b = at(h, off);
	while (off + b->size < h->size) {
		struct blk *n = at(h, off + b->size);
		if (n->used)
			break;
		b->size += n->size;
		n->magic = 0;
	}
}

void *pp_shm_heap_alloc(struct pp_shm_heap *h, size_t len)
{
	if (!h->base || len > h->size)
		return NULL;
	uint64_t need = ((uint64_t)len + HDR + HDR - 1) & ~(uint64_t)(HDR - 1);
	for (size_t off = 0; off < h->size; off += at(h, off)->size) {
		struct blk *b = at(h, off);
		if (b->used)
			continue;
		merge(h, off);
		if (b->size < need)
			continue;
		if (b->size - need >= 2 * HDR) { /* split: the rest stays free */
			*at(h, off + need) =
			    (struct blk){.size = b->size - need, .magic = BLK_MAGIC, .used = 0};
			b->size = need;
		}
		b->used = 1;
		return h->base + off + HDR;
	}
	return NULL;
}

int pp_shm_heap_owns(const struct pp_shm_heap *h, const void *p)
{
	const uint8_t *b = p;
	return h->base && b >= h->base && b < h->base + h->size;
}

int pp_shm_heap_free(struct pp_shm_heap *h, void *p)
{
	if (!pp_shm_heap_owns(h, p) || ((uintptr_t)p & (HDR - 1)) || (uint8_t *)p < h->base + HDR)
		return -EINVAL;
	size_t off = (size_t)((uint8_t *)p - h->base) - HDR;
	struct blk *b = at(h, off);
	if (b->magic != BLK_MAGIC || !b->used)
		return -EINVAL;
	b->used = 0;
	merge(h, off);
	return 0;
}

size_t pp_shm_heap_free_bytes(struct pp_shm_heap *h, size_t *largest)
{
	size_t sum = 0, big = 0;
	for (size_t off = 0; off < h->size; off += at(h, off)->size) {
		struct blk *b = at(h, off);
		if (b->used)
			continue;
		merge(h, off);
		sum += b->size - HDR;
		if (b->size - HDR > big)
			big = b->size - HDR;
	}
	if (largest)
		*largest = big;
	return sum;
}
