/* SPDX-License-Identifier: BSD-3-Clause */
#include "cu_main.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CU_TEST=TEXT runs only the tests whose name holds TEXT (by hand, while
 * working on one). */
static void select_tests(const char *want)
{
	for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext)
		for (CU_pTest t = s->pTest; t; t = t->pNext)
			CU_set_test_active(t, strstr(t->pName, want) ? CU_TRUE : CU_FALSE);
}

int pp_cu_main(CU_SuiteInfo *suites)
{
	if (CU_initialize_registry() != CUE_SUCCESS || CU_register_suites(suites) != CUE_SUCCESS) {
		fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
		return 2;
	}
	const char *want = getenv("CU_TEST");
	if (want && *want)
		select_tests(want);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	unsigned ran = CU_get_number_of_tests_run();
	/* A suite whose set-up or clean-up failed (a daemon that did not
	 * start, or did not exit cleanly) fails the program too. */
	unsigned failed = CU_get_number_of_tests_failed() + CU_get_number_of_failures() +
			  CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	if (ran == 0) {
		fprintf(stderr, "no test ran: failing\n");
		return 1;
	}
	return failed ? 1 : 0;
}
