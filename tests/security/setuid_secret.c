/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stand-in for a setuid-root program holding something only root may
 * read (test_sec_ppd_mem.c installs a copy setuid root, mode 04711). It
 * prints where its secret lies and how long it is, then waits to be killed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char secret[64] = "pp-root-only-secret-5c1e09d7";

int main(void)
{
	printf("%lx %zu\n", (unsigned long)(uintptr_t)secret, strlen(secret));
	fflush(stdout);
	for (;;)
		pause();
}
