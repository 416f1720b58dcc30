/* SPDX-License-Identifier: BSD-3-Clause */
/* runtime/affinity: core lists and pinning. */
#include <errno.h>
#include <sched.h>

#include "affinity.h"
#include "cu_main.h"

static void test_parse(void)
{
	int c[8];
	CU_ASSERT_EQUAL(pp_corelist_parse("3", c, 8), 1);
	CU_ASSERT_EQUAL(c[0], 3);
	CU_ASSERT_EQUAL(pp_corelist_parse("0,2-4,7", c, 8), 5);
	CU_ASSERT_EQUAL(c[1], 2);
	CU_ASSERT_EQUAL(c[3], 4);
	CU_ASSERT_EQUAL(c[4], 7);
	CU_ASSERT_EQUAL(pp_corelist_parse("5,1", c, 8), 2); /* order kept */
	CU_ASSERT_EQUAL(c[0], 5);

	static const char *const bad[] = {"",	  "a",	"1-",  "-1",	"3-1",
					  "1,,2", "1,", "1,1", "0-2,2", "1 2"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(pp_corelist_parse(bad[i], c, 8), -EINVAL);
	CU_ASSERT_EQUAL(pp_corelist_parse("0-8", c, 8), -E2BIG);
	CU_ASSERT_EQUAL(pp_corelist_parse("99999", c, 8), -E2BIG);
}

static void test_pin(void)
{
	int n = pp_affinity_ncores();
	CU_ASSERT_TRUE_FATAL(n >= 1);
	CU_ASSERT_EQUAL(pp_affinity_pin_self(n - 1), 0);
	CU_ASSERT_EQUAL(sched_getcpu(), n - 1);
	CU_ASSERT_EQUAL(pp_affinity_pin_self(PP_MAX_CORES - 1), -EINVAL);
	CU_ASSERT_EQUAL(pp_affinity_pin_self(-1), -EINVAL);
}

static CU_TestInfo tests[] = {
    {"parse", test_parse},
    {"pin", test_pin},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"affinity", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
