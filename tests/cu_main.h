/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One main for every CUnit test program: registers the suites given, runs
 * them verbosely, and fails when any assertion failed or when no test ran at
 * all (a run that tests nothing must not pass).
 */
#ifndef PP_CU_MAIN_H
#define PP_CU_MAIN_H

#include <CUnit/CUnit.h>

int pp_cu_main(CU_SuiteInfo *suites);

/* Define main() for a test program from a CU_SuiteInfo array. */
#define PP_CU_MAIN(suites)                                                                         \
	int main(void)                                                                             \
	{                                                                                          \
		return pp_cu_main(suites);                                                         \
	}

#endif
