/* SPDX-License-Identifier: BSD-3-Clause */
/* proto/pushbuf: cells, chains, exhaustion, draining with truncation. */
#include <errno.h>
#include <string.h>

#include "cu_main.h"
#include "pushbuf.h"
#include "test_proto_harness.h"

static void test_chain(void)
{
	struct pp_pushbuf pb;
	CU_ASSERT_EQUAL_FATAL(pp_pushbuf_init(&pb, 10 * PP_PUSHBUF_CELL + 100), 0);
	CU_ASSERT_EQUAL(pb.ncells, 10);
	CU_ASSERT_EQUAL(pb.nfree, 10);
	uint8_t src[3000], dst[3000];
	pat_fill(src, sizeof(src), 5);
	struct pp_pushbuf_chain a, b;
	pp_pushbuf_chain_init(&a);
	pp_pushbuf_chain_init(&b);
	/* Frames of 80, 680 and 300 bytes: 1 + 3 + 2 cells. */
	CU_ASSERT_EQUAL(pp_pushbuf_append(&pb, &a, src, 80), 0);
	CU_ASSERT_EQUAL(pp_pushbuf_append(&pb, &a, src + 80, 680), 0);
	CU_ASSERT_EQUAL(pp_pushbuf_append(&pb, &b, src, 300), 0);
	CU_ASSERT_EQUAL(a.cells, 4);
	CU_ASSERT_EQUAL(a.bytes, 760);
	CU_ASSERT_EQUAL(pb.nfree, 4);
	CU_ASSERT_EQUAL(pb.bytes, 1060);
	/* 5 cells do not fit in 4: nothing is taken. */
	CU_ASSERT_EQUAL(pp_pushbuf_append(&pb, &b, src, 1100), -ENOBUFS);
	CU_ASSERT_EQUAL(pb.nfree, 4);
	CU_ASSERT_EQUAL(b.bytes, 300);
	/* Drain a into a short buffer: the first 500 bytes, in order. */
	memset(dst, 0xEE, sizeof(dst));
	CU_ASSERT_EQUAL(pp_pushbuf_drain(&pb, &a, dst, 500), 4);
	CU_ASSERT_TRUE(pat_check(dst, 500, 5));
	CU_ASSERT_EQUAL(dst[500], 0xEE);
	CU_ASSERT_EQUAL(a.head, PP_PUSHBUF_NONE);
	CU_ASSERT_EQUAL(a.bytes, 0);
	CU_ASSERT_EQUAL(pb.nfree, 8);
	CU_ASSERT_EQUAL(pb.bytes, 300);
	CU_ASSERT_EQUAL(pb.peak, 1060);
	/* Discard b; the whole buffer is free again and reusable. */
	CU_ASSERT_EQUAL(pp_pushbuf_drain(&pb, &b, NULL, 0), 2);
	CU_ASSERT_EQUAL(pb.nfree, 10);
	CU_ASSERT_EQUAL(pp_pushbuf_append(&pb, &a, src, 2560), 0);
	CU_ASSERT_EQUAL(pb.nfree, 0);
	CU_ASSERT_EQUAL(pp_pushbuf_append(&pb, &b, src, 1), -ENOBUFS);
	CU_ASSERT_EQUAL(pp_pushbuf_append(&pb, &b, src, 0), 0);
	CU_ASSERT_EQUAL(pp_pushbuf_drain(&pb, &a, dst, sizeof(dst)), 10);
	CU_ASSERT_TRUE(pat_check(dst, 2560, 5));
	pp_pushbuf_fini(&pb);
	/* An empty pushed buffer is allowed and holds nothing. */
	CU_ASSERT_EQUAL(pp_pushbuf_init(&pb, 100), 0);
	CU_ASSERT_EQUAL(pp_pushbuf_append(&pb, &a, src, 1), -ENOBUFS);
	pp_pushbuf_fini(&pb);
}

static CU_TestInfo tests[] = {
    {"chains, exhaustion, drain", test_chain},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"proto_pushbuf", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
