/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm/recvq against a hostile side of the pair: head and tail rewritten far
 * apart, behind each other, or back onto a live receive; the walks stay
 * bounded (an alarm kills one that spins) and no live entry is overwritten.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cu_main.h"
#include "recvq.h"
#include "segment.h"

static struct pp_shm_rq *fresh(void)
{
	alarm(10);
	struct pp_shm_rq *q = aligned_alloc(64, sizeof(*q));
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	memset(q, 0, sizeof(*q));
	return q;
}

/* Far apart: the reclaim walk over free entries would go on for 2^40
 * steps. Refused at once, and so is a head past the tail. */
static void test_far_apart(void)
{
	struct pp_shm_rq *q = fresh();
	atomic_store(&q->tail, 1ull << 40);
	CU_ASSERT_EQUAL(pp_shm_rq_post(q, 1, 0, 0x1000, PP_SHM_NO_OFFSET, 10, 0), -EPROTO);
	atomic_store(&q->tail, 5);
	atomic_store(&q->head, 9);
	CU_ASSERT_EQUAL(pp_shm_rq_post(q, 1, 0, 0x1000, PP_SHM_NO_OFFSET, 10, 0), -EPROTO);
	atomic_store(&q->head, (1ull << 40) + 3);
	atomic_store(&q->tail, 3);
	CU_ASSERT_EQUAL(pp_shm_rq_post(q, 1, 0, 0x1000, PP_SHM_NO_OFFSET, 10, 0), -EPROTO);
	/* The sender's scan is bounded by the ring too. */
	atomic_store(&q->head, 0);
	atomic_store(&q->tail, UINT64_MAX);
	struct pp_shm_rq_target t;
	CU_ASSERT_EQUAL(pp_shm_rq_claim(q, 1, 0, 10, &t), -ENOENT);
	/* Mended: posts work again. */
	atomic_store(&q->tail, 0);
	CU_ASSERT_EQUAL(pp_shm_rq_post(q, 1, 0, 0x1000, PP_SHM_NO_OFFSET, 10, 0), 0);
	free(q);
}

/* The tail moved back onto a receive that is posted: the post is refused
 * and that receive stays as it was. */
static void test_tail_on_live(void)
{
	struct pp_shm_rq *q = fresh();
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL_FATAL(pp_shm_rq_post(q, 10 + i, 0, 0x1000u * (i + 1),
						     PP_SHM_NO_OFFSET, 100, (uint32_t)i),
				      i);
	atomic_store(&q->tail, 1);
	CU_ASSERT_EQUAL(pp_shm_rq_post(q, 99, 0, 0xdead, PP_SHM_NO_OFFSET, 5, 7), -EPROTO);
	CU_ASSERT_EQUAL(pp_shm_rq_state(q, 1), PP_SHM_RQ_POSTED);
	CU_ASSERT_EQUAL(atomic_load(&q->e[1].tag), 11);
	CU_ASSERT_EQUAL(atomic_load(&q->e[1].addr), 0x2000);
	CU_ASSERT_EQUAL(atomic_load(&q->e[1].len), 100);
	/* The sender still finds it, as posted. */
	atomic_store(&q->tail, 3);
	struct pp_shm_rq_target t;
	CU_ASSERT_EQUAL(pp_shm_rq_claim(q, 11, 1, 100, &t), 1);
	CU_ASSERT(t.addr == 0x2000 && t.len == 100);
	/* A tail rewritten to wrap onto the posted entry at the head: the ring
	 * reads full. */
	atomic_store(&q->tail, 32);
	CU_ASSERT_EQUAL(pp_shm_rq_post(q, 99, 0, 0xdead, PP_SHM_NO_OFFSET, 5, 7), -ENOSPC);
	CU_ASSERT_EQUAL(pp_shm_rq_state(q, 0), PP_SHM_RQ_POSTED);
	CU_ASSERT_EQUAL(atomic_load(&q->e[0].addr), 0x1000);
	free(q);
}

/* States and fields the other side rewrote: take reports them and always
 * ends with the entry taken; a claimed offset outside the segment is never
 * written. */
static void test_states(void)
{
	struct pp_shm_rq *q = fresh();
	CU_ASSERT_EQUAL_FATAL(pp_shm_rq_post(q, 4, 0, 0, 1ull << 50, 64, 0), 0);
	atomic_store(&q->e[0].state, 0xffffffffffffffffull);
	CU_ASSERT_EQUAL(pp_shm_rq_take(q, 0, 0, 1), -EPROTO);
	CU_ASSERT_EQUAL(pp_shm_rq_state(q, 0), PP_SHM_RQ_TAKEN);
	CU_ASSERT_EQUAL_FATAL(pp_shm_rq_post(q, 4, 0, 0, 1ull << 50, 64, 1), 1);
	static uint8_t seg[4096];
	static const uint8_t msg[64] = {1, 2, 3};
	CU_ASSERT_EQUAL(pp_shm_rq_deliver(q, getpid(), seg, sizeof(seg), 4, 1, msg, 64), -EFAULT);
	CU_ASSERT_EQUAL(pp_shm_rq_state(q, 1), PP_SHM_RQ_POSTED); /* given back */
	atomic_store(&q->e[1].seg_off, sizeof(seg) - 10);
	CU_ASSERT_EQUAL(pp_shm_rq_deliver(q, getpid(), seg, sizeof(seg), 4, 1, msg, 64), -EFAULT);
	atomic_store(&q->e[1].seg_off, 64);
	CU_ASSERT_EQUAL(pp_shm_rq_deliver(q, getpid(), seg, sizeof(seg), 4, 1, msg, 64), 0);
	CU_ASSERT_EQUAL(memcmp(seg + 64, msg, 64), 0);
	free(q);
}

static CU_TestInfo tests[] = {
    {"head and tail far apart", test_far_apart},
    {"a tail moved back onto a live receive", test_tail_on_live},
    {"rewritten states and offsets", test_states},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sec_recvq", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
