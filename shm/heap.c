/* SPDX-License-Identifier: BSD-3-Clause */
/* The pp_malloc heap; the rules are in heap.h. */
#include "heap.h"

#include <errno.h>

#include "pp_log.h"

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

/* The header at off, read once into *b and checked: the magic, a used flag
 * of 0 or 1, and a size of whole headers (at least one) that ends inside
 * the area, so that a walk always advances and stays inside. Other ranks
 * can write the area: a broken header is reported (once) and refused. */
static int blk_read(struct pp_shm_heap *h, size_t off, struct blk *b)
{
	const volatile struct blk *v = (const volatile struct blk *)(h->base + off);
	*b = (struct blk){.size = v->size, .magic = v->magic, .used = v->used};
	if (b->magic == BLK_MAGIC && b->used <= 1 && b->size >= HDR && b->size % HDR == 0 &&
	    b->size <= h->size - off)
		return 0;
	if (!h->corrupt++)
		pp_warn("shm heap: block at offset %zu is corrupt (size %llu, magic %#x, used %u): "
			"pp_malloc and pp_free fail there",
			off, (unsigned long long)b->size, (unsigned)b->magic, (unsigned)b->used);
	return -EINVAL;
}

int pp_shm_heap_init(struct pp_shm_heap *h, void *mem, size_t bytes)
{
	bytes &= ~(size_t)(HDR - 1);
	if (!h || !mem || ((uintptr_t)mem & (HDR - 1)) || bytes < 2 * HDR)
		return -EINVAL;
	h->base = mem;
	h->size = bytes;
	h->corrupt = 0;
	*at(h, 0) = (struct blk){.size = bytes, .magic = BLK_MAGIC, .used = 0};
	return 0;
}

/* Merge the free blocks that follow the free block at off (size bytes) into
 * it, up to a block in use or a corrupt header (which the caller's walk then
 * meets); returns its new size. */
static uint64_t merge(struct pp_shm_heap *h, size_t off, uint64_t size)
{
	struct blk n;
	while (off + size < h->size && !blk_read(h, off + size, &n) && !n.used) {
		at(h, off + size)->magic = 0;
		size += n.size;
	}
	at(h, off)->size = size;
	return size;
}

void *pp_shm_heap_alloc(struct pp_shm_heap *h, size_t len)
{
	if (!h->base || len > h->size)
		return NULL;
	uint64_t need = ((uint64_t)len + HDR + HDR - 1) & ~(uint64_t)(HDR - 1);
	struct blk b;
	for (size_t off = 0; off < h->size; off += b.size) {
		if (blk_read(h, off, &b))
			return NULL;
		if (b.used)
			continue;
		b.size = merge(h, off, b.size);
		if (b.size < need)
			continue;
		if (b.size - need >= 2 * HDR) { /* split: the rest stays free */
			*at(h, off + need) =
			    (struct blk){.size = b.size - need, .magic = BLK_MAGIC, .used = 0};
			b.size = need;
		}
		*at(h, off) = (struct blk){.size = b.size, .magic = BLK_MAGIC, .used = 1};
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
	struct blk b;
	if (blk_read(h, off, &b) || !b.used)
		return -EINVAL;
	at(h, off)->used = 0;
	merge(h, off, b.size);
	return 0;
}

size_t pp_shm_heap_free_bytes(struct pp_shm_heap *h, size_t *largest)
{
	size_t sum = 0, big = 0;
	struct blk b;
	for (size_t off = 0; off < h->size; off += b.size) {
		if (blk_read(h, off, &b))
			break;
		if (b.used)
			continue;
		b.size = merge(h, off, b.size);
		sum += b.size - HDR;
		if (b.size - HDR > big)
			big = b.size - HDR;
	}
	if (largest)
		*largest = big;
	return sum;
}
