/* SPDX-License-Identifier: BSD-3-Clause */
/* runtime/config: environment, pp_init string, defaults and every error. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cu_main.h"
#include "pp_log.h"

static void clear_env(void)
{
	static const char *const vars[] = {"PP_RANK", "PP_SIZE", "PP_JOB", "PP_MODE", "PP_BTP1",
					   "PP_BTP2", "PP_DEV", "PP_FROB", "PP_TIMEOUT_MS"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static int setup(void)
{
	clear_env();
	pp_log_set_level("off"); /* the error paths below log on purpose */
	return 0;
}

static void test_defaults(void)
{
	struct pp_config c;
	CU_ASSERT_EQUAL(pp_config_load(&c, NULL), 0);
	CU_ASSERT_EQUAL(c.rank, -1);
	CU_ASSERT_EQUAL(c.size, -1);
	CU_ASSERT_EQUAL(c.mode, PP_MODE_PUSH_PULL);
	CU_ASSERT_EQUAL(c.btp1, 80);
	CU_ASSERT_EQUAL(c.btp2, 680);
	CU_ASSERT_FALSE(c.btp_set);
	CU_ASSERT_EQUAL(c.timeout_ms, PP_TIMEOUT_MS_DEFAULT);
	CU_ASSERT_STRING_EQUAL(c.predict, "off");
	CU_ASSERT_STRING_EQUAL(c.daemon, "");
}

static void test_string(void)
{
	struct pp_config c;
	CU_ASSERT_EQUAL(pp_config_load(&c, "rank=1,size=4,mode=push-zero,btp1=16,btp2=0,"
					   "dev=pcap:pp0,node=n1,timeout_ms=500,pull_cores=1-2"),
			0);
	CU_ASSERT_EQUAL(c.rank, 1);
	CU_ASSERT_EQUAL(c.size, 4);
	CU_ASSERT_EQUAL(c.mode, PP_MODE_PUSH_ZERO);
	CU_ASSERT_EQUAL(c.btp1, 16);
	CU_ASSERT_EQUAL(c.btp2, 0);
	CU_ASSERT_TRUE(c.btp_set);
	CU_ASSERT_STRING_EQUAL(c.dev, "pcap:pp0");
	CU_ASSERT_STRING_EQUAL(c.node, "n1");
	CU_ASSERT_STRING_EQUAL(c.pull_cores, "1-2");
	CU_ASSERT_EQUAL(c.timeout_ms, 500);
}

static void test_env_then_string(void)
{
	struct pp_config c;
	setenv("PP_RANK", "3", 1);
	setenv("PP_SIZE", "8", 1);
	setenv("PP_MODE", "push-all", 1);
	CU_ASSERT_EQUAL(pp_config_load(&c, "rank=5"), 0);
	CU_ASSERT_EQUAL(c.rank, 5); /* the string wins */
	CU_ASSERT_EQUAL(c.size, 8);
	CU_ASSERT_EQUAL(c.mode, PP_MODE_PUSH_ALL);
	clear_env();
}

static void test_job_key(void)
{
	struct pp_config a, b, n;
	CU_ASSERT_EQUAL(pp_config_load(&a, "job=alpha"), 0);
	CU_ASSERT_EQUAL(pp_config_load(&b, "job=alpha"), 0);
	CU_ASSERT_EQUAL(pp_config_load(&n, "job=0x1234"), 0);
	CU_ASSERT_EQUAL(a.job, b.job);
	CU_ASSERT_NOT_EQUAL(a.job, 0);
	CU_ASSERT_EQUAL(n.job, 0x1234);
	CU_ASSERT_STRING_EQUAL(a.job_name, "alpha");
	CU_ASSERT_EQUAL(pp_config_load(&b, "job=beta"), 0);
	CU_ASSERT_NOT_EQUAL(a.job, b.job);
}

static void test_errors(void)
{
	struct pp_config c;
	static const char *const bad[] = {
		"frobnicate=1",       /* unknown key */
		"rank",               /* no '=' */
		"=3",                 /* no key */
		"rank=-1",            /* negative */
		"rank=x",             /* not a number */
		"size=0",             /* empty job */
		"rank=4,size=4",      /* rank out of range */
		"mode=push-some",     /* unknown mode */
		"btp1=99999999999",   /* overflow */
		"timeout_ms=0",       /* zero timeout */
		"log=loud",           /* unknown log level */
		"job=",               /* empty job key */
		"zerocopy=maybe",     /* on or off only */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(pp_config_load(&c, bad[i]), -EINVAL);

	char longval[PP_CFG_STR + 8] = "dev=";
	memset(longval + 4, 'x', PP_CFG_STR);
	longval[4 + PP_CFG_STR] = '\0';
	CU_ASSERT_EQUAL(pp_config_load(&c, longval), -EINVAL);
	CU_ASSERT_EQUAL(pp_config_load(&c, NULL), 0);
	CU_ASSERT_FALSE(c.zerocopy);
	CU_ASSERT_EQUAL(pp_config_load(&c, "zerocopy=on"), 0);
	CU_ASSERT_TRUE(c.zerocopy);

	setenv("PP_FROB", "1", 1);
	CU_ASSERT_EQUAL(pp_config_load(&c, NULL), -EINVAL);
	clear_env();
}

static CU_TestInfo tests[] = {
	{"defaults", test_defaults},
	{"string", test_string},
	{"env then string", test_env_then_string},
	{"job key", test_job_key},
	{"errors", test_errors},
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{"config", setup, NULL, NULL, NULL, tests},
	CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
