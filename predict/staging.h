/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prediction staging memory: where a predicted message waits for its
 * receive. One pool of budget bytes, allocated once, bound to the memory
 * node of the consuming core (hwloc) when it can be, else plain anonymous
 * memory. A block of len bytes is placed so that it starts at the same
 * offset as the predicted destination modulo the cache line (64) and, for
 * messages of two pages or more, modulo the page: the copy into the user
 * buffer then runs line for line, and whole pages can be moved by a remap
 * instead of copied.
 *
 * Blocks are kept in address order in a fixed table (PP_STAGE_MAX_BLOCKS);
 * allocation is first fit over the gaps, O(blocks), no system call. The sum
 * of the spans taken (padding included) never exceeds the budget, which is
 * the pool size.
 *
 * Remap (pp_stage_place): for the whole pages of a block that is congruent
 * to its destination modulo the page, mremap(MREMAP_FIXED) moves the staged
 * pages over the destination pages, and fresh anonymous pages are mapped
 * back into the pool in their place; the head and tail are copied. This is
 * done only when the destination lies inside a private anonymous mapping
 * with no name (not the heap, a stack or a file), checked in /proc/self/maps
 * once per region and cached (PP_STAGE_MAX_REGIONS regions): a region the
 * application unmaps and maps again as something else (a file) while cached
 * would be remapped over: the cache lives as long as the pool, so buffers
 * given to receives must stay anonymous memory while the pool lives.
 * Not thread-safe: the caller serialises (the runtime's progress lock).
 */
#ifndef PP_STAGING_H
#define PP_STAGING_H

#include <stddef.h>
#include <stdint.h>

#define PP_STAGE_LINE	     64u   /* congruence of every block */
#define PP_STAGE_PAGE	     4096u /* congruence of blocks of 2 pages or more */
#define PP_STAGE_MAX_BLOCKS  256u  /* blocks held at once at most */
#define PP_STAGE_MAX_REGIONS 16u   /* destination regions remembered as remappable */

/* One block handed out. */
struct pp_stage_blk {
	uintptr_t start; /* first byte of the span taken (padding included) */
	uintptr_t end;	 /* one past its last byte */
	uintptr_t data;	 /* the block as handed out */
};

/* A destination region known to be a private anonymous mapping. */
struct pp_stage_region {
	uintptr_t start; /* first byte */
	uintptr_t end;	 /* one past the last byte */
};

struct pp_stage {
	uint8_t *base; /* the pool, page-aligned */
	size_t size;   /* its bytes: the budget */
	int mmapped;   /* 1: from mmap (pages can be remapped) */
	int dead;      /* 1: a remap left a hole; nothing more is handed out */
	int hwloc;     /* 1: bound near the consuming core by hwloc */
	void *topo;    /* hwloc topology kept for free, or NULL */
	uint32_t nblk; /* blocks held */
	struct pp_stage_blk blk[PP_STAGE_MAX_BLOCKS];	  /* held, by address */
	size_t used;					  /* bytes of the spans held */
	size_t peak;					  /* most bytes ever held */
	uint32_t nreg;					  /* regions cached */
	uint32_t reg_next;				  /* next region slot to replace */
	struct pp_stage_region reg[PP_STAGE_MAX_REGIONS]; /* remappable destinations */
	size_t remap_min; /* fewest bytes of whole pages worth a remap, 0: none */
};

/*
 * Set up a pool of budget bytes (rounded up to pages; 0 leaves the pool empty
 * and every allocation fails). near_core: the core that consumes the blocks
 * (its NUMA node gets the memory, on machines with several), or -1 for the
 * calling thread's. Remap is on for at least remap_min bytes of whole pages
 * (0: never; below 2 pages counts as 2 pages).
 * Errors: -ENOMEM.
 */
int pp_stage_init(struct pp_stage *s, size_t budget, int near_core, size_t remap_min);
void pp_stage_fini(struct pp_stage *s);

/*
 * A block of len bytes whose address is congruent to dst modulo 64, and
 * modulo 4096 when len >= 2 pages. Returns NULL when it does not fit in the
 * budget (or the table is full, or len is 0).
 */
void *pp_stage_alloc(struct pp_stage *s, size_t len, uintptr_t dst);

/* Give a block back. Returns 0, or -EINVAL when blk is not a held block. */
int pp_stage_free(struct pp_stage *s, void *blk);

/*
 * Move n bytes from blk (a held block, or any memory for a plain copy) to
 * dst: the whole pages a remap can take are remapped when blk and dst are
 * congruent modulo the page, the pages lie inside the pool, at least
 * remap_min bytes would move and dst lies in a private anonymous mapping;
 * everything else is copied. Returns the pages remapped (0: all copied).
 * A failed remap falls back to the copy. The block stays held.
 */
uint64_t pp_stage_place(struct pp_stage *s, void *dst, const void *blk, size_t n);

/*
 * 1 when [addr, addr + len) lies inside one private anonymous mapping
 * without a name, 0 when not, by /proc/self/maps (no cache).
 * Errors: -errno when the maps cannot be read.
 */
int pp_stage_anon_private(uintptr_t addr, size_t len);

#endif
