/* SPDX-License-Identifier: BSD-3-Clause */
/* shm/ring: geometry, wrap-around with pad records, back-pressure when full,
 * and a producer and a consumer thread checking every record's contents. */
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "ring.h"

static void *ring_mem(uint32_t ncells)
{
	size_t n = pp_shm_ring_bytes(ncells);
	void *m = aligned_alloc(PP_SHM_RING_ALIGN, n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	memset(m, 0xA5, n); /* format must not rely on zeroed memory */
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_format(m, ncells), 0);
	return m;
}

static void fill(uint8_t *p, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31u + i * 7u + 1u);
}

static int check(const uint8_t *p, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed * 31u + i * 7u + 1u))
			return 0;
	return 1;
}

static void test_geometry(void)
{
	CU_ASSERT_EQUAL(pp_shm_ring_bytes(3), 0);
	CU_ASSERT_EQUAL(pp_shm_ring_bytes(1), 0);
	CU_ASSERT_EQUAL(pp_shm_ring_bytes(16), 3 * 128 + 16 * 64);
	uint8_t raw[4096] __attribute__((aligned(PP_SHM_RING_ALIGN)));
	CU_ASSERT_EQUAL(pp_shm_ring_format(raw + 8, 16), -EINVAL);
	CU_ASSERT_EQUAL(pp_shm_ring_format(raw + 64, 16), -EINVAL); /* one line, not a pair */
	CU_ASSERT_EQUAL(pp_shm_ring_format(raw, 12), -EINVAL);
	struct pp_shm_ring r;
	memset(raw, 0, sizeof(raw));
	CU_ASSERT_EQUAL(pp_shm_ring_attach(&r, raw), -EINVAL); /* not formatted */
	CU_ASSERT_EQUAL(pp_shm_ring_format(raw, 16), 0);
	CU_ASSERT_EQUAL(pp_shm_ring_attach(&r, raw), 0);
	CU_ASSERT_EQUAL(pp_shm_ring_attach(&r, raw + 64), -EINVAL);
	CU_ASSERT_EQUAL(pp_shm_ring_max_record(&r), 8 * 64 - PP_SHM_RING_REC_HDR);
	void *p;
	CU_ASSERT_EQUAL(pp_shm_ring_reserve(&r, 8 * 64 - PP_SHM_RING_REC_HDR + 1, &p), -EMSGSIZE);
	CU_ASSERT_EQUAL(pp_shm_ring_reserve(&r, 8 * 64 - PP_SHM_RING_REC_HDR, &p), 0);
	CU_ASSERT_EQUAL((uintptr_t)p % 8, 0);
	const void *q;
	uint32_t len;
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&r, &q, &len), 0); /* reserved is not committed */
}

/* Records of every size from 0 to 300 bytes through a 16-cell ring, one at a
 * time and several at a time: positions wrap many times, pad records are
 * skipped, every byte arrives. */
static void test_wrap(void)
{
	void *m = ring_mem(16);
	struct pp_shm_ring prod, cons;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&prod, m), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&cons, m), 0);
	uint32_t sent = 0, got = 0;
	for (uint32_t round = 0; round < 2000; round++) {
		uint32_t burst = 1 + round % 3;
		for (uint32_t k = 0; k < burst; k++) {
			uint32_t n = (sent * 37u) % 301u;
			void *p;
			int rc = pp_shm_ring_reserve(&prod, n, &p);
			if (rc == -EAGAIN)
				break;
			CU_ASSERT_EQUAL_FATAL(rc, 0);
			/* Reserve more than needed, commit the real length. */
			fill(p, n, sent);
			pp_shm_ring_commit(&prod, n);
			sent++;
		}
		const void *q;
		uint32_t len;
		for (;;) {
			/* The cheap look agrees with peek, pads included. */
			int ready = pp_shm_ring_ready(&cons);
			int rc = pp_shm_ring_peek(&cons, &q, &len);
			CU_ASSERT_EQUAL_FATAL(ready, rc == 1);
			if (rc != 1)
				break;
			CU_ASSERT_EQUAL_FATAL(len, (got * 37u) % 301u);
			CU_ASSERT_FATAL(check(q, len, got));
			pp_shm_ring_release(&cons);
			got++;
		}
	}
	CU_ASSERT_EQUAL(got, sent);
	CU_ASSERT(sent > 1500);
	/* Each record took 1 to 5 cells: the 16 cells went round many times. */
	CU_ASSERT(cons.tail > 16 * 100);
	cons.err = -EPROTO; /* poisoned: the look sends the poll to peek's error */
	CU_ASSERT_EQUAL(pp_shm_ring_ready(&cons), 1);
	free(m);
}

#define ONE   (PP_SHM_RING_CELL - PP_SHM_RING_REC_HDR) /* one cell's payload */
#define THREE (3 * PP_SHM_RING_CELL - PP_SHM_RING_REC_HDR)
#define FOUR  (4 * PP_SHM_RING_CELL - PP_SHM_RING_REC_HDR)

/* A full ring refuses with -EAGAIN and keeps what it has; one release makes
 * exactly the room of the released record. */
static void test_full(void)
{
	void *m = ring_mem(8);
	struct pp_shm_ring prod, cons;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&prod, m), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&cons, m), 0);
	void *p;
	/* ONE payload bytes + the record header = one cell each: eight fit. */
	for (uint32_t i = 0; i < 8; i++) {
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&prod, ONE, &p), 0);
		fill(p, ONE, i);
		pp_shm_ring_commit(&prod, ONE);
	}
	CU_ASSERT_EQUAL(pp_shm_ring_reserve(&prod, 0, &p), -EAGAIN);
	CU_ASSERT_EQUAL(pp_shm_ring_reserve(&prod, ONE, &p), -EAGAIN);
	CU_ASSERT_EQUAL(pp_shm_ring_backlog(&cons), 8 * PP_SHM_RING_CELL);
	const void *q;
	uint32_t len;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
	CU_ASSERT(len == ONE && check(q, ONE, 0));
	/* Peeked but not released: still full. */
	CU_ASSERT_EQUAL(pp_shm_ring_reserve(&prod, ONE, &p), -EAGAIN);
	CU_ASSERT_EQUAL(pp_shm_ring_backlog(&cons), 8 * PP_SHM_RING_CELL);
	pp_shm_ring_release(&cons);
	CU_ASSERT_EQUAL(pp_shm_ring_backlog(&cons), 7 * PP_SHM_RING_CELL);
	/* A producer index no sound producer could publish reads as none. */
	_Atomic uint64_t *head = (_Atomic uint64_t *)m; /* the header's first word */
	uint64_t h = atomic_load(head);
	atomic_store(head, h + 64);
	CU_ASSERT_EQUAL(pp_shm_ring_backlog(&cons), 0);
	atomic_store(head, h);
	CU_ASSERT_EQUAL(pp_shm_ring_reserve(&prod, ONE + 1, &p), -EAGAIN); /* two cells: no */
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&prod, ONE, &p), 0);
	fill(p, ONE, 8);
	pp_shm_ring_commit(&prod, ONE);
	CU_ASSERT_EQUAL(pp_shm_ring_reserve(&prod, 0, &p), -EAGAIN);
	for (uint32_t i = 1; i <= 8; i++) {
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
		CU_ASSERT(len == ONE && check(q, ONE, i));
		pp_shm_ring_release(&cons);
	}
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 0);
	/* A record that would straddle the end is placed at cell 0 after a pad
	 * record, and the pad and the record must both fit in the free cells. */
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&prod, ONE, &p), 0);
	pp_shm_ring_commit(&prod, ONE); /* head at 10: position 2 */
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
	pp_shm_ring_release(&cons);
	/* 4 cells (FOUR bytes) from position 2 fit before the end: no pad. */
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&prod, FOUR, &p), 0);
	pp_shm_ring_commit(&prod, FOUR); /* head 14: position 6 */
	/* 3 cells from position 6 need a 2-cell pad: 5 cells, and 4 are free. */
	CU_ASSERT_EQUAL(pp_shm_ring_reserve(&prod, THREE, &p), -EAGAIN);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
	CU_ASSERT_EQUAL(len, FOUR);
	pp_shm_ring_release(&cons);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&prod, THREE, &p), 0);
	fill(p, THREE, 99);
	pp_shm_ring_commit(&prod, THREE);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
	CU_ASSERT(len == THREE && check(q, THREE, 99));
	CU_ASSERT_PTR_EQUAL(q, cons.cells + PP_SHM_RING_REC_HDR); /* placed at cell 0 */
	pp_shm_ring_release(&cons);
	CU_ASSERT_EQUAL(cons.tail, 14 + 2 + 3);
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 0);
	free(m);
}

/* Records of len bytes, n of them, each made and taken at once. */
static void pass_through(struct pp_shm_ring *prod, struct pp_shm_ring *cons, uint32_t len,
			 unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p;
		const void *q;
		uint32_t got;
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(prod, len, &p), 0);
		fill(p, len, i);
		pp_shm_ring_commit(prod, len);
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(cons, &q, &got), 1);
		CU_ASSERT(got == len && check(q, len, i));
		pp_shm_ring_release(cons);
	}
}

/* A record's last payload byte may land on the first byte of the next
 * cell, over the mark an older record left there. The word then holds one
 * byte of payload and seven of an old mark: it must not read as the mark
 * of the index the consumer waits for, whatever that byte is. With marks
 * of index XOR key alone it did whenever the byte was the awaited mark's
 * low byte (the two marks shared the other seven), and the consumer took
 * the old record as new. */
static void test_stale_mark(void)
{
	void *m = ring_mem(8);
	struct pp_shm_ring prod, cons;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&prod, m), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&cons, m), 0);
	/* Lap 0: a one-cell record starts at every cell (index 2 at cell 2). */
	pass_through(&prod, &cons, ONE, 8);
	/* Lap 1: at index 9 (cell 1) a record of 49 bytes, whose last byte is
	 * the first of cell 2; that byte is the low byte of index 18's mark. */
	pass_through(&prod, &cons, ONE, 1);
	void *p;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&prod, ONE + 1, &p), 0);
	memset(p, 0x5a, ONE + 1);
	((uint8_t *)p)[ONE] = (uint8_t)pp_shm_ring_mark_of(prod.key, 18);
	pp_shm_ring_commit(&prod, ONE + 1);
	const void *q;
	uint32_t len;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
	CU_ASSERT_EQUAL(len, ONE + 1);
	pp_shm_ring_release(&cons);
	pass_through(&prod, &cons, ONE, 5); /* to index 16 */
	/* Lap 2: indices 16 and 17; the consumer then waits at 18, cell 2. */
	pass_through(&prod, &cons, ONE, 2);
	CU_ASSERT_EQUAL_FATAL(cons.tail, 18);
	CU_ASSERT_EQUAL(pp_shm_ring_ready(&cons), 0);
	CU_ASSERT_EQUAL(pp_shm_ring_empty(&cons), 1);
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 0);
	/* And the record written there is the one it gets. */
	pass_through(&prod, &cons, 8, 1);
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 0);
	free(m);
}

#define STRESS_RECORDS 400000u

struct stress {
	void *mem;	   /* the ring */
	uint32_t bad;	   /* records that arrived wrong */
	uint32_t received; /* records the consumer saw */
};

static void *stress_producer(void *arg)
{
	struct stress *s = arg;
	struct pp_shm_ring r;
	if (pp_shm_ring_attach(&r, s->mem))
		return NULL;
	for (uint32_t i = 0; i < STRESS_RECORDS;) {
		uint32_t n = 4 + (i * 2654435761u) % 500u;
		void *p;
		if (pp_shm_ring_reserve(&r, n, &p) == -EAGAIN) {
			sched_yield(); /* the consumer may share this core */
			continue;
		}
		memcpy(p, &i, 4);
		fill((uint8_t *)p + 4, n - 4, i);
		pp_shm_ring_commit(&r, n);
		i++;
	}
	return NULL;
}

static void *stress_consumer(void *arg)
{
	struct stress *s = arg;
	struct pp_shm_ring r;
	if (pp_shm_ring_attach(&r, s->mem))
		return NULL;
	while (s->received < STRESS_RECORDS) {
		const void *q;
		uint32_t len, seq;
		if (!pp_shm_ring_peek(&r, &q, &len)) {
			sched_yield(); /* the producer may share this core */
			continue;
		}
		memcpy(&seq, q, 4);
		if (seq != s->received || len != 4 + (seq * 2654435761u) % 500u ||
		    !check((const uint8_t *)q + 4, len - 4, seq))
			s->bad++;
		pp_shm_ring_release(&r);
		s->received++;
	}
	return NULL;
}

/* Two threads, a 64-cell ring (so it is full most of the time), records of
 * 4 to 503 bytes carrying their sequence number and a pattern. */
static void test_stress(void)
{
	struct stress s = {.mem = ring_mem(64)};
	pthread_t a, b;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&b, NULL, stress_consumer, &s), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&a, NULL, stress_producer, &s), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	CU_ASSERT_EQUAL(s.received, STRESS_RECORDS);
	CU_ASSERT_EQUAL(s.bad, 0);
	free(s.mem);
}

/* The inline reserve takes the common case only: a record that fits before
 * the end of the cells in what the consumer was last seen to release. It
 * gives NULL where pp_shm_ring_reserve must pad, read the consumer index or
 * refuse, and the same place as pp_shm_ring_reserve otherwise. */
static void test_reserve_fast(void)
{
	void *m = ring_mem(8);
	struct pp_shm_ring prod, cons;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&prod, m), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&cons, m), 0);
	CU_ASSERT_PTR_NULL(pp_shm_ring_reserve_fast(&prod, pp_shm_ring_max_record(&prod) + 1));
	void *p, *f;
	const void *q;
	uint32_t len;
	for (uint32_t i = 0; i < 6; i++) { /* six cells of eight */
		f = pp_shm_ring_reserve_fast(&prod, ONE);
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&prod, ONE, &p), 0);
		CU_ASSERT_PTR_EQUAL(f, p);
		fill(p, ONE, i);
		pp_shm_ring_commit(&prod, ONE);
	}
	CU_ASSERT_PTR_NULL(pp_shm_ring_reserve_fast(&prod, THREE)); /* past the end */
	f = pp_shm_ring_reserve_fast(&prod, ONE + 1);		    /* cells 6 and 7 */
	CU_ASSERT_PTR_EQUAL(f, prod.cells + 6 * PP_SHM_RING_CELL + PP_SHM_RING_REC_HDR);
	fill(f, ONE + 1, 6);
	pp_shm_ring_commit(&prod, ONE + 1);
	CU_ASSERT_PTR_NULL(pp_shm_ring_reserve_fast(&prod, 0)); /* full */
	for (uint32_t i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
		pp_shm_ring_release(&cons);
	}
	/* Released, but not seen by the producer yet: the slow way reads it. */
	CU_ASSERT_PTR_NULL(pp_shm_ring_reserve_fast(&prod, ONE));
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&prod, ONE, &p), 0);
	fill(p, ONE, 7);
	pp_shm_ring_commit(&prod, ONE);
	f = pp_shm_ring_reserve_fast(&prod, ONE); /* now it knows */
	CU_ASSERT_PTR_EQUAL(f, prod.cells + PP_SHM_RING_CELL + PP_SHM_RING_REC_HDR);
	fill(f, ONE, 8);
	pp_shm_ring_commit(&prod, ONE);
	for (uint32_t i = 2; i <= 8; i++) {
		uint32_t want = i == 6 ? ONE + 1 : ONE;
		CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&cons, &q, &len), 1);
		CU_ASSERT(len == want && check(q, want, i));
		pp_shm_ring_release(&cons);
	}
	CU_ASSERT_EQUAL(pp_shm_ring_peek(&cons, &q, &len), 0);
	free(m);
}

static CU_TestInfo tests[] = {
    {"geometry and argument checks", test_geometry},
    {"wrap-around with pad records", test_wrap},
    {"full ring back-pressure", test_full},
    {"the inline reserve: the common case, NULL for the rest", test_reserve_fast},
    {"a mark overwritten in part by payload is no mark", test_stale_mark},
    {"two-thread producer/consumer stress", test_stress},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"shm_ring", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
