/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * predict/: observe and predict never allocate. The program is linked with
 * --wrap for malloc, calloc and realloc, so every call the predictor library
 * makes is counted; the counters must not move in observe and predict, only
 * in pp_pred_grow between receives (the tables growing with the stream).
 */
#include <stddef.h>
#include <string.h>

#include "cu_main.h"
#include "predict.h"
#include "synth.h"
#include "trace.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static unsigned long allocs; /* allocation calls from the wrapped objects */

void *__wrap_malloc(size_t n)
{
	allocs++;
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	allocs++;
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	allocs++;
	return __real_realloc(p, n);
}

static void test_no_alloc(void)
{
	struct pp_trace t = {0};
	CU_ASSERT_EQUAL_FATAL(pp_synth("noisy", 200, 1, &t), 0);
	CU_ASSERT_EQUAL_FATAL(pp_synth("lu", 5, 1, &t), 0);
	unsigned long before_create = allocs;
	for (size_t i = 0; pp_pred_all[i]; i++) {
		struct pp_pred *p;
		uint64_t ids[PP_PRED_MAX_AHEAD];
		unsigned long made = 0;
		CU_ASSERT_EQUAL_FATAL(pp_pred_create(pp_pred_all[i]->name, NULL, &p), 0);
		unsigned long before = allocs, in_path = 0;
		for (size_t r = 0; r < t.n; r++) {
			uint32_t site = pp_pred_site(&t.obs[r]);
			unsigned long a = allocs;
			made += pp_pred_predict(p, site, ids, 16);
			pp_pred_observe(p, pp_pred_id(&t.obs[r], PP_PRED_KEY_ENVELOPE), site);
			in_path += allocs - a;
			pp_pred_grow(p); /* between receives: may allocate */
		}
		CU_ASSERT_EQUAL(in_path, 0);
		if (strcmp(pp_pred_all[i]->name, "hybrid") == 0)
			CU_ASSERT(allocs > before); /* its tables grew, off the path */
		CU_ASSERT(made > 0);		    /* the loop did predict */
		pp_pred_destroy(p);
	}
	CU_ASSERT(allocs > before_create); /* the wrapping works: create allocates */
	pp_trace_free(&t);
}

static CU_TestInfo tests[] = {
    {"observe and predict do not allocate", test_no_alloc},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"predict_alloc", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
