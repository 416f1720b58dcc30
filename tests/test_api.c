/* SPDX-License-Identifier: BSD-3-Clause */
/* The public API's argument checks and error texts. */
#include <errno.h>
#include <string.h>

#include "cu_main.h"
#include "pp.h"
#include "pp_log.h"

static int setup(void)
{
	pp_log_set_level("off");
	return 0;
}

static void test_strerror(void)
{
	static const int errs[] = {0,	       -EINVAL,	    -ENOMEM, -EMSGSIZE,
				   -ETIMEDOUT, -ECONNRESET, -EPROTO};
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const char *s = pp_strerror(errs[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(s);
		CU_ASSERT_STRING_NOT_EQUAL(s, "unknown error");
	}
	CU_ASSERT_STRING_NOT_EQUAL(pp_strerror(-EMSGSIZE), pp_strerror(-ECONNRESET));
	CU_ASSERT_STRING_EQUAL(pp_strerror(12345678), "unknown error");
	CU_ASSERT_STRING_EQUAL(pp_strerror(-12345678), "unknown error");
}

static void test_null_args(void)
{
	pp_req *req = NULL;
	int done;
	CU_ASSERT_EQUAL(pp_init(NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_init(&(pp_ctx *){NULL}, "bogus=1"), -EINVAL);
	CU_ASSERT_EQUAL(pp_finalize(NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_rank(NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_size(NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_send(NULL, "x", 1, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(pp_recv(NULL, NULL, 0, 0, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_isend(NULL, "x", 1, 0, 0, &req), -EINVAL);
	CU_ASSERT_EQUAL(pp_irecv(NULL, NULL, 0, 0, 0, &req), -EINVAL);
	CU_ASSERT_EQUAL(pp_test(NULL, &done, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_test(&req, &done, NULL), -EINVAL); /* *req is NULL */
	CU_ASSERT_EQUAL(pp_wait(NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_barrier(NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_progress(NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_prerecv(NULL, 1), -EINVAL);
	CU_ASSERT_EQUAL(pp_get_stats(NULL, NULL), -EINVAL);
	CU_ASSERT_PTR_NULL(pp_malloc(NULL, 64));
	CU_ASSERT_EQUAL(errno, EINVAL);
	pp_free(NULL, NULL); /* must not crash */
}

static CU_TestInfo tests[] = {
    {"strerror", test_strerror},
    {"null arguments", test_null_args},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"api", setup, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
