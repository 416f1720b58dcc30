/* SPDX-License-Identifier: BSD-3-Clause */
/* predict/trace: the CSV trace format, its errors with line numbers, round trips. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "synth.h"
#include "trace.h"

/* Parse text as a trace named "t.csv"; returns the reader's result. */
static int parse(const char *text, struct pp_trace *t, char *err, size_t errlen)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	memset(t, 0, sizeof(*t));
	int rc = pp_trace_read(f, "t.csv", t, err, errlen);
	fclose(f);
	return rc;
}

static void test_columns(void)
{
	struct pp_trace t;
	char err[256];
	/* Columns by name in any order, unknown ones ignored, comments skipped. */
	const char *text = "# a comment\n"
			   "\n"
			   "when,bytes,comm,tag,buf,src,site\n"
			   "1.5,4096,3,7,0x7f00aa,2,11\n"
			   "  # indented comment\n"
			   "2.0, 16 ,0,-1,ff,-1,\n"
			   "3.0,0,,5,,0,4294967294\r\n";
	CU_ASSERT_EQUAL_FATAL(parse(text, &t, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(t.n, 3);
	CU_ASSERT_EQUAL(t.obs[0].src, 2);
	CU_ASSERT_EQUAL(t.obs[0].tag, 7);
	CU_ASSERT_EQUAL(t.obs[0].bytes, 4096);
	CU_ASSERT_EQUAL(t.obs[0].buf, 0x7f00aa);
	CU_ASSERT_EQUAL(t.obs[0].site, 11);
	CU_ASSERT_EQUAL(t.obs[0].comm, 3);
	CU_ASSERT_EQUAL(t.obs[1].src, -1);
	CU_ASSERT_EQUAL(t.obs[1].tag, -1);
	CU_ASSERT_EQUAL(t.obs[1].bytes, 16);
	CU_ASSERT_EQUAL(t.obs[1].buf, 0xff);
	CU_ASSERT_EQUAL(t.obs[1].site, PP_PRED_NO_SITE); /* empty: unknown */
	CU_ASSERT_EQUAL(t.obs[2].buf, 0);
	CU_ASSERT_EQUAL(t.obs[2].comm, 0);
	CU_ASSERT_EQUAL(t.obs[2].site, 4294967294u);
	pp_trace_free(&t);

	/* Only the required columns. */
	CU_ASSERT_EQUAL_FATAL(parse("src,tag,bytes\n1,2,3\n", &t, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(t.n, 1);
	CU_ASSERT_EQUAL(t.obs[0].site, PP_PRED_NO_SITE);
	CU_ASSERT_EQUAL(t.obs[0].buf, 0);
	pp_trace_free(&t);
}

/* Numbers as tools write them: 0x hexadecimal wherever a number goes (a
 * site is often a code address or a hash), in either case, signed for the
 * integer columns. */
static void test_hex(void)
{
	struct pp_trace t;
	char err[256];
	const char *text = "src,tag,bytes,buf,site,comm\n"
			   "0x3,0X10,0x1000,0x7f00,0xfffffffe,0x2\n"
			   "-0x1,-0x7fffffff,0,7f00,0x0,-0X80000000\n"
			   "010,0x7FFFFFFF,18446744073709551615,,0xAbC,0\n";
	CU_ASSERT_EQUAL_FATAL(parse(text, &t, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(t.n, 3);
	CU_ASSERT_EQUAL(t.obs[0].src, 3);
	CU_ASSERT_EQUAL(t.obs[0].tag, 16);
	CU_ASSERT_EQUAL(t.obs[0].bytes, 4096);
	CU_ASSERT_EQUAL(t.obs[0].buf, 0x7f00);
	CU_ASSERT_EQUAL(t.obs[0].site, 0xfffffffeu);
	CU_ASSERT_EQUAL(t.obs[0].comm, 2);
	CU_ASSERT_EQUAL(t.obs[1].src, -1);
	CU_ASSERT_EQUAL(t.obs[1].tag, -0x7fffffff);
	CU_ASSERT_EQUAL(t.obs[1].site, 0);
	CU_ASSERT_EQUAL(t.obs[1].comm, INT32_MIN);
	CU_ASSERT_EQUAL(t.obs[2].src, 10); /* decimal, not octal */
	CU_ASSERT_EQUAL(t.obs[2].tag, INT32_MAX);
	CU_ASSERT_EQUAL(t.obs[2].bytes, UINT64_MAX);
	CU_ASSERT_EQUAL(t.obs[2].site, 0xabc);
	pp_trace_free(&t);

	static const char *const bad[] = {
	    "src,tag,bytes\n0x,1,2\n",
	    "src,tag,bytes\n1,0xg,2\n",
	    "src,tag,bytes\n1,2,0x-1\n",
	    "src,tag,bytes,site\n1,2,3,0xffffffff\n",
	    "src,tag,bytes\n0x80000000,2,3\n",
	    "src,tag,bytes\n-0x80000001,2,3\n",
	    "src,tag,bytes\n1,2,0x10000000000000000\n",
	    "src,tag,bytes\n1,2,+3\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(parse(bad[i], &t, err, sizeof(err)), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "t.csv:2: bad "));
	}
}

/* Each malformed input fails with -EINVAL and names file and line. */
static void test_errors(void)
{
	static const struct {
		const char *text;  /* the trace */
		const char *where; /* expected start of the message */
		const char *what;  /* expected part of the message */
	} cases[] = {
	    {"src,tag,bytes\n1,2,3\n1,x,3\n", "t.csv:3: ", "tag 'x'"},
	    {"# c\nsrc,tag,bytes\n\n1,2,-3\n", "t.csv:4: ", "bytes '-3'"},
	    {"src,tag\n1,2\n", "t.csv:1: ", "'bytes'"},
	    {"src,tag,bytes\n1,2,3\n1,2\n", "t.csv:3: ", "2 fields"},
	    {"src,tag,bytes\n1,2,3,4\n", "t.csv:2: ", "4 fields"},
	    {"src,tag,bytes,buf\n1,2,3,0xzz\n", "t.csv:2: ", "buf '0xzz'"},
	    {"src,tag,bytes,site\n1,2,3,4294967295\n", "t.csv:2: ", "site"},
	    {"src,tag,bytes\n99999999999,2,3\n", "t.csv:2: ", "src"},
	    {"src,tag,bytes\n1,,3\n", "t.csv:2: ", "tag ''"},
	    {"src,src,tag,bytes\n", "t.csv:1: ", "twice"},
	    {"# only a comment\n", "t.csv:2: ", "no header"},
	    {"", "t.csv:1: ", "no header"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pp_trace t;
		char err[256] = "";
		int rc = parse(cases[i].text, &t, err, sizeof(err));
		CU_ASSERT_EQUAL(rc, -EINVAL);
		CU_ASSERT_EQUAL(t.n, 0);
		CU_ASSERT_PTR_NULL(t.obs);
		if (strncmp(err, cases[i].where, strlen(cases[i].where)) != 0 ||
		    !strstr(err, cases[i].what)) {
			fprintf(stderr, "\ncase %zu: message '%s'\n", i, err);
			CU_FAIL("wrong message");
		}
	}
}

static void test_missing_file(void)
{
	struct pp_trace t = {0};
	char err[256];
	CU_ASSERT_EQUAL(pp_trace_load("/nonexistent/trace.csv", &t, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/trace.csv"));
}

/* What pp_trace_write writes, pp_trace_read reads back identically. */
static void test_round_trip(void)
{
	for (size_t p = 0; pp_synth_patterns[p]; p++) {
		struct pp_trace a = {0}, b;
		CU_ASSERT_EQUAL_FATAL(pp_synth(pp_synth_patterns[p], 3, 7, &a), 0);
		CU_ASSERT(a.n > 0);
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		CU_ASSERT_EQUAL(pp_trace_write(f, &a), 0);
		fclose(f);
		char err[256];
		CU_ASSERT_EQUAL_FATAL(parse(buf, &b, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(b.n, a.n);
		CU_ASSERT_EQUAL(memcmp(a.obs, b.obs, a.n * sizeof(*a.obs)), 0);
		pp_trace_free(&a);
		pp_trace_free(&b);
		free(buf);
	}
}

/* The synthetic patterns have the shapes they promise. */
static void test_synth_shapes(void)
{
	struct pp_trace t = {0};
	CU_ASSERT_EQUAL(pp_synth("nope", 1, 1, &t), -ENOENT);
	CU_ASSERT_EQUAL_FATAL(pp_synth("lu", 4, 1, &t), 0);
	CU_ASSERT_EQUAL_FATAL(t.n, 10 + 4 * 126);
	for (size_t i = 10; i + 126 < t.n; i++)
		CU_ASSERT_EQUAL(memcmp(&t.obs[i], &t.obs[i + 126], sizeof(t.obs[i])), 0);
	size_t large = 0;
	for (size_t i = 10; i < t.n; i++)
		large += t.obs[i].bytes >= 8192;
	CU_ASSERT_EQUAL(large, 8);
	pp_trace_free(&t);
	CU_ASSERT_EQUAL_FATAL(pp_synth("cycle", 5, 1, &t), 0);
	CU_ASSERT_EQUAL_FATAL(t.n, 20 + 5 * 7 + 10);
	for (size_t i = 20; i + 7 < 20 + 5 * 7; i++)
		CU_ASSERT_EQUAL(memcmp(&t.obs[i], &t.obs[i + 7], sizeof(t.obs[i])), 0);
	pp_trace_free(&t);
}

static CU_TestInfo tests[] = {
    {"hex numbers", test_hex},
    {"columns by name", test_columns},
    {"malformed lines", test_errors},
    {"missing file", test_missing_file},
    {"write and read back", test_round_trip},
    {"synthetic shapes", test_synth_shapes},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"predict_trace", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
