/* SPDX-License-Identifier: BSD-3-Clause */
/* runtime/util/json.c: documents byte for byte, escaping, misuse. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "pp_json.h"

static char *buf;
static size_t len;
static FILE *mem;

static void start(struct pp_json *j, int indent)
{
	mem = open_memstream(&buf, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
	pp_json_begin(j, mem, indent);
}

/* Finish, check the result code and the text, free. */
static void expect(struct pp_json *j, int rc, const char *text)
{
	CU_ASSERT_EQUAL(pp_json_finish(j), rc);
	fclose(mem);
	if (text && strcmp(buf, text) != 0) {
		fprintf(stderr, "\n got: %s\nwant: %s\n", buf, text);
		CU_FAIL("document differs");
	}
	free(buf);
	buf = NULL;
}

static void test_compact(void)
{
	struct pp_json j;
	start(&j, 0);
	pp_json_object(&j, NULL);
	pp_json_str(&j, "name", "pp");
	pp_json_u64(&j, "big", UINT64_MAX);
	pp_json_i64(&j, "neg", INT64_MIN);
	pp_json_num(&j, "x", 0.25);
	pp_json_num(&j, "nan", NAN);
	pp_json_num(&j, "inf", -INFINITY);
	pp_json_bool(&j, "t", 1);
	pp_json_bool(&j, "f", 0);
	pp_json_null(&j, "n");
	pp_json_str(&j, "s", NULL);
	pp_json_array(&j, "a");
	pp_json_u64(&j, NULL, 1);
	pp_json_object(&j, NULL);
	pp_json_close(&j);
	pp_json_array(&j, NULL);
	pp_json_close(&j);
	pp_json_close(&j);
	pp_json_close(&j);
	expect(&j, 0,
	       "{\"name\":\"pp\",\"big\":18446744073709551615,\"neg\":-9223372036854775808,"
	       "\"x\":0.25,\"nan\":null,\"inf\":null,\"t\":true,\"f\":false,\"n\":null,"
	       "\"s\":null,\"a\":[1,{},[]]}\n");
}

static void test_indent(void)
{
	struct pp_json j;
	start(&j, 2);
	pp_json_object(&j, NULL);
	pp_json_u64(&j, "a", 1);
	pp_json_array(&j, "b");
	pp_json_u64(&j, NULL, 2);
	pp_json_u64(&j, NULL, 3);
	/* finish closes what is open */
	expect(&j, 0, "{\n  \"a\": 1,\n  \"b\": [\n    2,\n    3\n  ]\n}\n");
}

static void test_escaping(void)
{
	struct pp_json j;
	start(&j, 0);
	pp_json_object(&j, NULL);
	pp_json_str(&j, "q\"k", "a\"b\\c/\n\t\r\x01\x1f\x7f");
	pp_json_str(&j, "utf8", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	/* a lone continuation byte, a cut sequence, an overlong '/', a
	 * surrogate, 0xff */
	pp_json_str(&j, "bad", "\x80|\xe2\x82|\xc0\xaf|\xed\xa0\x80|\xff");
	expect(
	    &j, 0,
	    "{\"q\\\"k\":\"a\\\"b\\\\c/\\n\\t\\r\\u0001\\u001f\\u007f\","
	    "\"utf8\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
	    "\"bad\":\"\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\"}\n");
}

static void test_misuse(void)
{
	struct pp_json j;
	start(&j, 0); /* a value without its key in an object */
	pp_json_object(&j, NULL);
	pp_json_u64(&j, NULL, 1);
	expect(&j, -EINVAL, NULL);
	start(&j, 0); /* a key inside an array */
	pp_json_array(&j, NULL);
	pp_json_u64(&j, "k", 1);
	expect(&j, -EINVAL, NULL);
	start(&j, 0); /* closing nothing */
	pp_json_close(&j);
	expect(&j, -EINVAL, NULL);
	start(&j, 0); /* two documents */
	pp_json_u64(&j, NULL, 1);
	pp_json_u64(&j, NULL, 2);
	expect(&j, -EINVAL, NULL);
	start(&j, 0); /* nothing at all */
	expect(&j, -EINVAL, NULL);
	start(&j, 0); /* too deep */
	for (int i = 0; i <= PP_JSON_DEPTH; i++)
		pp_json_array(&j, NULL);
	expect(&j, -EINVAL, NULL);
	start(&j, 0); /* exactly as deep as allowed */
	for (int i = 0; i < PP_JSON_DEPTH; i++)
		pp_json_array(&j, NULL);
	expect(&j, 0, "[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]\n");
}

static void test_io_error(void)
{
	struct pp_json j;
	FILE *f = fopen("/dev/full", "w");
	if (!f)
		return;
	pp_json_begin(&j, f, 0);
	pp_json_str(&j, NULL, "x");
	CU_ASSERT_EQUAL(pp_json_finish(&j), -EIO);
	fclose(f);
}

static CU_TestInfo tests[] = {
    {"compact", test_compact}, {"indented", test_indent},   {"escaping", test_escaping},
    {"misuse", test_misuse},   {"io error", test_io_error}, CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"json", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
