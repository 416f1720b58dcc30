/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm/heap against a local rank that rewrites block headers in the heap
 * area (every rank maps every heap): a size of 0, one past the area, one
 * that is not whole headers, a bad magic or used flag. pp_shm_heap_alloc and
 * pp_shm_heap_free must fail cleanly (NULL, -EINVAL), never loop (an alarm
 * kills a test that does) and never reach outside the area (it ends at a
 * PROT_NONE page).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cu_main.h"
#include "heap.h"

#define AREA 8192u

static uint8_t *pages; /* two pages of area, then a PROT_NONE page */
static size_t page;
static uint8_t *area;

/* The block header as heap.c lays it out. */
struct blk {
	uint64_t size;
	uint32_t magic;
	uint32_t used;
};

static int setup(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	pages = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED || mprotect(pages + 2 * page, page, PROT_NONE))
		return 1;
	area = pages + 2 * page - AREA;
	return 0;
}

static int teardown(void)
{
	munmap(pages, 3 * page);
	return 0;
}

static struct blk *hdr_of(void *p)
{
	return (struct blk *)((uint8_t *)p - 64);
}

static void fresh(struct pp_shm_heap *h)
{
	alarm(10);
	CU_ASSERT_EQUAL_FATAL(pp_shm_heap_init(h, area, AREA), 0);
}

/* The whole heap is one free block whose header is rewritten. */
static void test_first_block(void)
{
	static const struct blk bad[] = {
	    {0, 0x7070484bu, 0},	       /* size 0: the walk never advanced */
	    {64 * 1000, 0x7070484bu, 0},       /* past the area */
	    {UINT64_MAX - 63, 0x7070484bu, 0}, /* wraps the offset */
	    {65, 0x7070484bu, 0},	       /* not whole headers */
	    {32, 0x7070484bu, 0},	       /* less than a header */
	    {AREA, 0x12345678u, 0},	       /* bad magic */
	    {AREA, 0x7070484bu, 7},	       /* used is 0 or 1 */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pp_shm_heap h;
		fresh(&h);
		memcpy(area, &bad[i], sizeof(bad[i]));
		CU_ASSERT_PTR_NULL(pp_shm_heap_alloc(&h, 1));
		CU_ASSERT_PTR_NULL(pp_shm_heap_alloc(&h, AREA - 64));
		size_t big = 1;
		CU_ASSERT_EQUAL(pp_shm_heap_free_bytes(&h, &big), 0);
		CU_ASSERT_EQUAL(big, 0);
		CU_ASSERT(h.corrupt > 0);
	}
}

/* A block in use, then one rewritten: the walk fails there; freeing the
 * rewritten one fails; a free neighbour that claims more than the area is
 * not merged. */
static void test_later_block(void)
{
	struct pp_shm_heap h;
	fresh(&h);
	uint8_t *a = pp_shm_heap_alloc(&h, 100), *b = pp_shm_heap_alloc(&h, 100),
		*c = pp_shm_heap_alloc(&h, 100);
	CU_ASSERT_FATAL(a && b && c);
	hdr_of(b)->size = 0;
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, b), -EINVAL);
	CU_ASSERT_PTR_NULL(pp_shm_heap_alloc(&h, 1000)); /* the walk meets b */
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, a), 0);	 /* a itself is sound */
	hdr_of(b)->size = 192;				 /* as it was */
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, b), 0);
	/* The free rest after c claims to run far past the area. */
	uint8_t *rest = c + 128;
	struct blk *r = (struct blk *)rest;
	CU_ASSERT_EQUAL_FATAL(r->magic, 0x7070484bu);
	CU_ASSERT_EQUAL_FATAL(r->used, 0);
	r->size = 1ull << 40;
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, c), 0); /* c is freed; the merge stops */
	size_t big;
	size_t sum = pp_shm_heap_free_bytes(&h, &big);
	CU_ASSERT(sum <= AREA && big <= AREA);
	CU_ASSERT_PTR_NULL(pp_shm_heap_alloc(&h, AREA - 64));
	/* Mended, the heap is whole again. */
	r->size = AREA - (size_t)(rest - area);
	CU_ASSERT_EQUAL(pp_shm_heap_free_bytes(&h, &big), AREA - 64);
	CU_ASSERT_EQUAL(big, AREA - 64);
	uint8_t *all = pp_shm_heap_alloc(&h, AREA - 64);
	CU_ASSERT_PTR_EQUAL(all, area + 64);
}

/* A header rewritten while the owner walks over it many times: every call
 * returns, every block handed out lies inside the area. */
static void test_many(void)
{
	struct pp_shm_heap h;
	fresh(&h);
	uint8_t *v[40];
	int n = 0;
	while (n < 40 && (v[n] = pp_shm_heap_alloc(&h, 64 + (size_t)n * 8)))
		n++;
	CU_ASSERT_FATAL(n > 10);
	for (int i = 0; i < n; i += 2)
		pp_shm_heap_free(&h, v[i]);
	static const uint64_t sizes[] = {0, 1, 63, 64, 128, 4096, 1ull << 63, UINT64_MAX};
	for (int round = 0; round < 2000; round++) {
		struct blk *x = hdr_of(v[(round * 7) % n]);
		x->size = sizes[round % 8];
		x->used = (uint32_t)round & 1;
		uint8_t *p = pp_shm_heap_alloc(&h, (size_t)(round % 300));
		if (p) {
			CU_ASSERT(p >= area + 64 && p + round % 300 <= area + AREA);
			pp_shm_heap_free(&h, p);
		}
		pp_shm_heap_free(&h, v[(round * 3) % n]);
		size_t big;
		CU_ASSERT(pp_shm_heap_free_bytes(&h, &big) <= AREA);
	}
}

static CU_TestInfo tests[] = {
    {"the first block's header rewritten", test_first_block},
    {"a later block's header rewritten", test_later_block},
    {"headers rewritten while the owner works", test_many},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sec_heap", setup, teardown, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
