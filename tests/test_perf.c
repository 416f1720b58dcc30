/* SPDX-License-Identifier: BSD-3-Clause */
/* apps/perf: the paper's statistics, value lists and the timer. */
#include <errno.h>
#include <math.h>

#include "cu_main.h"
#include "perf.h"

static void test_summary(void)
{
	/* 1..100 shuffled: middle 80 % is 11..90, mean 50.5; median 50.5; p99 99. */
	double s[100];
	for (int i = 0; i < 100; i++)
		s[i] = (double)((i * 37) % 100 + 1);
	struct pp_perf_summary r;
	CU_ASSERT_EQUAL_FATAL(pp_perf_summarise(s, 100, &r), 0);
	CU_ASSERT_DOUBLE_EQUAL(r.mid80, 50.5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.median, 50.5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.p99, 99.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.min, 1.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.max, 100.0, 1e-9);

	/* Outliers in the first and last 10 % do not move the mid-80 mean. */
	double o[10] = {5, 5, 5, 5, 5, 5, 5, 5, 1000, 0};
	CU_ASSERT_EQUAL_FATAL(pp_perf_summarise(o, 10, &r), 0);
	CU_ASSERT_DOUBLE_EQUAL(r.mid80, 5.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.p99, 1000.0, 1e-9);

	double one = 7;
	CU_ASSERT_EQUAL(pp_perf_summarise(&one, 1, &r), 0);
	CU_ASSERT_DOUBLE_EQUAL(r.mid80, 7.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.median, 7.0, 1e-9);
	CU_ASSERT_EQUAL(pp_perf_summarise(&one, 0, &r), -EINVAL);
}

static void test_lists(void)
{
	uint64_t v[PP_PERF_MAX_VALUES];
	CU_ASSERT_EQUAL(pp_perf_parse_list("80", v, 16), 1);
	CU_ASSERT_EQUAL(v[0], 80);
	CU_ASSERT_EQUAL(pp_perf_parse_list("8,64,1k", v, 16), 3);
	CU_ASSERT_EQUAL(v[2], 1024);
	CU_ASSERT_EQUAL(pp_perf_parse_list("0:16", v, 16), 6); /* 0 1 2 4 8 16 */
	CU_ASSERT_EQUAL(v[0], 0);
	CU_ASSERT_EQUAL(v[1], 1);
	CU_ASSERT_EQUAL(v[5], 16);
	CU_ASSERT_EQUAL(pp_perf_parse_list("1:1m:x4", v, 16), 11); /* 4^0 .. 4^10 */
	CU_ASSERT_EQUAL(v[10], 1u << 20);
	CU_ASSERT_EQUAL(pp_perf_parse_list("0:800:+80", v, 16), 11);
	CU_ASSERT_EQUAL(v[10], 800);
	CU_ASSERT_EQUAL(pp_perf_parse_list("16m,1g", v, 16), 2);
	CU_ASSERT_EQUAL(v[1], 1u << 30);
	CU_ASSERT_EQUAL(pp_perf_parse_list("0:100:+1", v, 16), -E2BIG);

	static const char *const bad[] = {"",
					  "x",
					  "-1",
					  "8:4",
					  "1:8:x1",
					  "1:8:+0",
					  "1:8:y2",
					  "1k2",
					  "4:",
					  ":4",
					  "99999999999999999999g"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(pp_perf_parse_list(bad[i], v, 16), -EINVAL);
}

static void test_clock(void)
{
	CU_ASSERT_EQUAL_FATAL(pp_perf_clock_init(PP_PERF_CLOCK_MONO), 0);
	CU_ASSERT_STRING_EQUAL(pp_perf_clock_name(), "mono");
	CU_ASSERT_DOUBLE_EQUAL(pp_perf_ticks_per_us(), 1000.0, 1e-9);
	CU_ASSERT_EQUAL_FATAL(pp_perf_clock_init(PP_PERF_CLOCK_AUTO), 0);
	uint64_t a = pp_perf_now();
	pp_perf_compute(100000);
	uint64_t b = pp_perf_now();
	CU_ASSERT_TRUE(b > a); /* monotonic and it advanced */
	CU_ASSERT_TRUE(pp_perf_ticks_per_us() > 0);
}

static CU_TestInfo tests[] = {
    {"summary", test_summary},
    {"lists", test_lists},
    {"clock", test_clock},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"perf", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
