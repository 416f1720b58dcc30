/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm/ring against a hostile producer (or consumer): the other side writes
 * anything into the ring's memory. The consumer must refuse malformed records
 * with -EPROTO at once and from then on, never hand out a pointer or length
 * outside the cells, and never take its own index back from shared memory.
 * The ring's cells end where a PROT_NONE page begins: a read past them kills
 * the test. An alarm kills a test that spins.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cu_main.h"
#include "ring.h"

#define CELLS 64u
#define CELL  PP_SHM_RING_CELL

/* The shared header as ring.c lays it out: head, tail, then the geometry,
 * each in its own 128-byte block. */
#define OFF_HEAD   0
#define OFF_TAIL   128
#define OFF_MAGIC  256
#define OFF_NCELLS 260
#define OFF_KEY	   264
#define HDR_BYTES  384
#define ONE	   (CELL - PP_SHM_RING_REC_HDR) /* the payload of a one-cell record */

static uint8_t *pages; /* two pages of memory, then a PROT_NONE page */
static size_t page;    /* bytes per page */
static uint8_t *mem;   /* the ring: its cells end at the guard page */
static struct pp_shm_ring prod, cons;

static int setup(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	pages = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED || mprotect(pages + 2 * page, page, PROT_NONE))
		return 1;
	mem = pages + 2 * page - pp_shm_ring_bytes(CELLS);
	return (uintptr_t)mem % PP_SHM_RING_ALIGN != 0;
}

static int teardown(void)
{
	munmap(pages, 3 * page);
	return 0;
}

static void fresh(void)
{
	alarm(20);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_format(mem, CELLS), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&prod, mem), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&cons, mem), 0);
}

static _Atomic uint64_t *shared_head(void)
{
	return (_Atomic uint64_t *)(mem + OFF_HEAD);
}

static _Atomic uint64_t *shared_tail(void)
{
	return (_Atomic uint64_t *)(mem + OFF_TAIL);
}

static uint8_t *cell(uint32_t pos)
{
	return mem + HDR_BYTES + (size_t)pos * CELL;
}

/* Write a record header (len, kind: 0 data, 1 pad) for ring index at, and
 * mark it published, as a producer may (pp_shm_ring_mark_of the ring's key
 * and the index). */
static void put_hdr(uint64_t at, uint32_t len, uint32_t kind)
{
	uint64_t key;
	memcpy(&key, mem + OFF_KEY, 8);
	uint8_t *c = cell((uint32_t)(at % CELLS));
	memcpy(c + 8, &len, 4);
	memcpy(c + 12, &kind, 4);
	__atomic_store_n((uint64_t *)c, pp_shm_ring_mark_of(key, at), __ATOMIC_RELEASE);
}

static void send(uint32_t len, uint8_t fillc)
{
	void *p;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&prod, len, &p), 0);
	memset(p, fillc, len);
	pp_shm_ring_commit(&prod, len);
}

/* The consumer refuses: -EPROTO now and on every later call, nothing handed
 * out, and a release after it publishes no progress. */
static void refused(void)
{
	const void *q = NULL;
	uint32_t len = 12345;
	uint64_t tail = atomic_load(shared_tail());
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), -EPROTO);
	CU_ASSERT_PTR_NULL(q);
	CU_ASSERT_EQUAL(len, 12345);
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), -EPROTO);
	pp_shm_ring_release(&cons);
	CU_ASSERT_EQUAL(atomic_load(shared_tail()), tail);
	/* Even once the producer writes a sound record again: poisoned. */
	put_hdr(cons.tail, 8, 0);
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), -EPROTO);
}

/* A length that wraps the cell count to 0 (0xFFFFFFB1 + 16 + 63 = 2^32) and
 * other lengths past what the ring allows. */
static void test_lengths(void)
{
	static const uint32_t bad[] = {0xFFFFFFB1u, 0xFFFFFFFFu, 0xFFFFFFC8u, 0x80000000u,
				       CELLS / 2 * CELL - PP_SHM_RING_REC_HDR + 1};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fresh();
		send(100, 1); /* 2 cells published */
		put_hdr(0, bad[i], 0);
		refused();
	}
	/* A record of more than half the ring: refused too. */
	fresh();
	put_hdr(0, CELLS / 2 * CELL, 0);
	refused();
	/* The largest legal record passes. */
	fresh();
	send(pp_shm_ring_max_record(&prod), 7);
	const void *q;
	uint32_t len;
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 1);
	CU_ASSERT_EQUAL(len, pp_shm_ring_max_record(&cons));
	pp_shm_ring_release(&cons);
	CU_ASSERT_EQUAL(atomic_load(shared_tail()), CELLS / 2);
}

/* A marked data record near the end of the cells that would run past them. */
static void test_past_end(void)
{
	fresh();
	for (int i = 0; i < 31; i++) {
		send(ONE, 2); /* one cell each */
		const void *q;
		uint32_t len;
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
		pp_shm_ring_release(&cons);
	}
	/* Tail at 31; fill to cell 62, then a 3-cell record at 62. */
	for (int i = 0; i < 31; i++)
		send(ONE, 3);
	for (int i = 0; i < 31; i++) {
		const void *q;
		uint32_t len;
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
		pp_shm_ring_release(&cons);
	}
	CU_ASSERT_EQUAL_FATAL(cons.tail, 62);
	put_hdr(62, 2 * CELL, 0);
	refused();
}

/* A fresh ring whose consumer is at cell 60: 60 one-cell records sent and
 * taken, 4 cells left before the end. */
static void at_cell_60(void)
{
	fresh();
	for (int k = 0; k < 60; k++)
		send(ONE, 4);
	const void *q;
	uint32_t len;
	for (int k = 0; k < 60; k++) {
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
		pp_shm_ring_release(&cons);
	}
}

/* Pad records: a pad must reach exactly to the end of the cells and be
 * followed by a data record at cell 0. */
static void test_pads(void)
{
	static const uint32_t pads[] = {0, 1, 3, 5, 0xFFFFFFFFu};
	for (size_t i = 0; i < sizeof(pads) / sizeof(pads[0]); i++) {
		at_cell_60();
		/* 4 cells left to the end; a sound pad would say 4. */
		send(260, 5); /* pad 4 + 5 cells at cell 0 */
		CU_ASSERT_EQUAL_FATAL(atomic_load(shared_head()), 69);
		put_hdr(60, pads[i], 1);
		refused();
	}
	/* Sound pad, but a pad again at cell 0. */
	at_cell_60();
	const void *q;
	uint32_t len;
	send(260, 5);
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 1); /* as sent: fine */
	CU_ASSERT(len == 260 && q == cell(0) + PP_SHM_RING_REC_HDR);
	put_hdr(64, 4, 1);
	refused();
	/* A pad at cell 0 would be the whole ring. */
	fresh();
	put_hdr(0, CELLS, 1);
	refused();
	/* A marked pad whose record is not marked: a sound producer marks the
	 * record first. */
	at_cell_60();
	put_hdr(60, 4, 1);
	refused();
	/* A pad whose record carries another index's mark. */
	at_cell_60();
	put_hdr(0, 200, 0); /* index 0, not 64 */
	put_hdr(60, 4, 1);
	refused();
}

/* A kind that is neither data nor pad. */
static void test_kind(void)
{
	static const uint32_t kinds[] = {2, 3, 0x80000000u, 0xFFFFFFFFu};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		fresh();
		send(10, 6);
		put_hdr(0, 10, kinds[i]);
		refused();
	}
}

/* Marks of other indices (a stale lap, a future one, one not XORed with the
 * key, a neighbour's) are not records: the ring reads as empty, and is not
 * poisoned. The producer index is not read at all. */
static void test_marks(void)
{
	uint64_t key;
	fresh();
	memcpy(&key, mem + OFF_KEY, 8);
	const void *q;
	uint32_t len;
	for (int k = 0; k < 3; k++) {
		send(ONE, 8);
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
		pp_shm_ring_release(&cons);
	}
	/* tail 3 */
	static const uint64_t stale[] = {3 + CELLS, 3 + 2 * CELLS, 2, 0, 4, UINT64_MAX, 3 - CELLS};
	for (size_t i = 0; i < sizeof(stale) / sizeof(stale[0]); i++) {
		put_hdr(stale[i], ONE, 0);
		CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 0);
		CU_ASSERT_EQUAL(pp_shm_ring_empty(&cons), 1);
	}
	uint64_t plain = 3; /* the index without the key */
	memcpy(cell(3), &plain, 8);
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 0);
	atomic_store(shared_head(), UINT64_MAX);
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 0);
	put_hdr(3, ONE, 0);
	CU_ASSERT_EQUAL(pp_shm_ring_empty(&cons), 0);
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 1);
	CU_ASSERT(len == ONE && q == cell(3) + PP_SHM_RING_REC_HDR);
	pp_shm_ring_release(&cons);
	/* Every cell a sound record, the ring's whole length ahead: all read. */
	fresh();
	for (uint32_t k = 0; k < CELLS; k++)
		put_hdr(k, ONE, 0);
	uint32_t n = 0;
	while (pp_shm_ring_peek(&cons, &q, &len) == 1 && n <= CELLS) {
		CU_ASSERT(len == ONE && q == cell(n) + PP_SHM_RING_REC_HDR);
		pp_shm_ring_release(&cons);
		n++;
	}
	CU_ASSERT_EQUAL(n, CELLS);
	/* Two formats give two keys, each with its top bit set. */
	fresh();
	uint64_t again;
	memcpy(&again, mem + OFF_KEY, 8);
	CU_ASSERT(again != key && (again >> 63) && (key >> 63));
}

/* The consumer's index is its own: a tail rewritten in shared memory does not
 * move it, and its next release publishes the right one again. */
static void test_tail_rewritten(void)
{
	fresh();
	for (uint8_t k = 0; k < 4; k++)
		send(100, (uint8_t)(10 + k));
	const void *q;
	uint32_t len;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
	CU_ASSERT(len == 100 && ((const uint8_t *)q)[0] == 10);
	pp_shm_ring_release(&cons);
	static const uint64_t tails[] = {0, 1000, UINT64_MAX, 7};
	for (uint8_t k = 1; k < 4; k++) {
		atomic_store(shared_tail(), tails[k]);
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
		CU_ASSERT(len == 100 && ((const uint8_t *)q)[0] == 10 + k &&
			  ((const uint8_t *)q)[99] == 10 + k);
		CU_ASSERT_PTR_EQUAL(q, cell(2u * k) + PP_SHM_RING_REC_HDR);
		pp_shm_ring_release(&cons);
		CU_ASSERT_EQUAL(atomic_load(shared_tail()), 2u * (k + 1));
	}
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 0);
	/* The producer's index is its own too. */
	atomic_store(shared_head(), 3);
	send(20, 42);
	CU_ASSERT_EQUAL(atomic_load(shared_head()), 9);
	/* A consumer index ahead of the producer's, or more than the ring
	 * behind, is refused by the producer when it must read it. */
	for (int k = 0; k < 2; k++) {
		fresh();
		for (uint32_t c = 0; c < CELLS / 2; c++)
			send(ONE, 1); /* the cache says half free */
		/* Read when the head is at 64: one ahead of it, or 65 behind
		 * (indices count modulo 2^64). */
		atomic_store(shared_tail(), k ? CELLS + 1 : UINT64_MAX);
		void *p;
		int rc = 0;
		for (uint32_t c = 0; c <= CELLS / 2 && rc == 0; c++)
			if ((rc = pp_shm_ring_reserve(&prod, ONE, &p)) == 0)
				pp_shm_ring_commit(&prod, ONE);
		CU_ASSERT_EQUAL(rc, -EPROTO);
	}
}

/* Attach takes the geometry once and only what the memory was sized for. */
static void test_attach(void)
{
	fresh();
	struct pp_shm_ring r;
	CU_ASSERT_EQUAL(pp_shm_ring_attach_cells(&r, mem, CELLS), 0);
	CU_ASSERT_EQUAL(pp_shm_ring_attach_cells(&r, mem, CELLS / 2), -EINVAL);
	uint32_t n = 1u << 20;
	memcpy(mem + OFF_NCELLS, &n, 4); /* cells far past the memory */
	CU_ASSERT_EQUAL(pp_shm_ring_attach_cells(&r, mem, CELLS), -EINVAL);
	/* After attach, the header's size and key are not read again. */
	CU_ASSERT_EQUAL(cons.ncells, CELLS);
	put_hdr(0, 100, 0);
	uint64_t key, other = 0x8000000012345678ull;
	memcpy(&key, mem + OFF_KEY, 8);
	memcpy(mem + OFF_KEY, &other, 8);
	const void *q;
	uint32_t len;
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 1);
	memcpy(mem + OFF_KEY, &key, 8);
	n = CELLS;
	memcpy(mem + OFF_NCELLS, &n, 4);
	/* Indices that no ring can have. */
	atomic_store(shared_head(), 5);
	atomic_store(shared_tail(), 6);
	CU_ASSERT_EQUAL(pp_shm_ring_attach_cells(&r, mem, CELLS), -EINVAL);
	atomic_store(shared_head(), 6 + CELLS + 1);
	CU_ASSERT_EQUAL(pp_shm_ring_attach_cells(&r, mem, CELLS), -EINVAL);
	atomic_store(shared_head(), 6 + CELLS);
	CU_ASSERT_EQUAL(pp_shm_ring_attach_cells(&r, mem, CELLS), 0);
	CU_ASSERT(r.head == 6 + CELLS && r.tail == 6);
	uint32_t bad = 0x12345678;
	memcpy(mem + OFF_MAGIC, &bad, 4);
	CU_ASSERT_EQUAL(pp_shm_ring_attach_cells(&r, mem, CELLS), -EINVAL);
}

static CU_TestInfo tests[] = {
    {"lengths that wrap or overrun", test_lengths},
    {"a record past the end of the cells", test_past_end},
    {"bad pad records", test_pads},
    {"bad record kinds", test_kind},
    {"marks of other indices are no records", test_marks},
    {"rewritten consumer and producer indices", test_tail_rewritten},
    {"attach checks the geometry once", test_attach},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sec_ring", setup, teardown, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
