/* SPDX-License-Identifier: BSD-3-Clause */
/* runtime/util/pp_prefault.h: every page of a range touched, nothing in it
 * changed, even under a writer beside it; the same of the kernel's touch,
 * and its error where nothing is mapped. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cu_main.h"
#include "pp_prefault.h"

#define PAGES 64

static size_t resident(uint8_t *m, size_t pg)
{
	unsigned char v[PAGES];
	if (mincore(m, PAGES * pg, v) != 0)
		return (size_t)-1;
	size_t n = 0;
	for (size_t i = 0; i < PAGES; i++)
		n += v[i] & 1;
	return n;
}

/* The two touches, as one type: user space's, and the kernel's. */
typedef int (*touch_fn)(void *p, size_t len);

static int user_touch(void *p, size_t len)
{
	pp_prefault(p, len);
	return 0;
}

static int kernel_touch(void *p, size_t len)
{
	return pp_prefault_kernel(p, len);
}

/* A range from the middle of page 1 to the first byte of page 62: pages 1
 * to 62 in, 0 and 63 untouched; an empty range touches nothing. */
static void every_page(touch_fn touch)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *m =
	    mmap(NULL, PAGES * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(m != MAP_FAILED);
	CU_ASSERT_EQUAL(resident(m, pg), 0);
	CU_ASSERT_EQUAL(touch(m + pg + pg / 2, (PAGES - 3) * pg - pg / 2 + 1), 0);
	unsigned char v[PAGES];
	CU_ASSERT_EQUAL_FATAL(mincore(m, PAGES * pg, v), 0);
	CU_ASSERT_EQUAL(v[0] & 1, 0);
	for (size_t i = 1; i < PAGES - 1; i++)
		CU_ASSERT_EQUAL(v[i] & 1, 1);
	CU_ASSERT_EQUAL(v[PAGES - 1] & 1, 0);
	CU_ASSERT_EQUAL(touch(m, 0), 0); /* nothing */
	CU_ASSERT_EQUAL_FATAL(mincore(m, PAGES * pg, v), 0);
	CU_ASSERT_EQUAL(v[0] & 1, 0);
	munmap(m, PAGES * pg);
}

static void contents_kept(touch_fn touch)
{
	static uint8_t b[PAGES * 4096 + 17];
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 131 + 7);
	CU_ASSERT_EQUAL(touch(b + 3, sizeof(b) - 3), 0);
	size_t bad = 0;
	for (size_t i = 0; i < sizeof(b); i++)
		bad += b[i] != (uint8_t)(i * 131 + 7);
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_every_page(void)
{
	every_page(user_touch);
}

static void test_contents_kept(void)
{
	contents_kept(user_touch);
}

/* pp_prefault_kernel: the kernel's reads (a pipe's write, in chunks of
 * 64 KiB) fault exactly those pages in, and change nothing. */
static void test_kernel_every_page(void)
{
	every_page(kernel_touch);
}

static void test_kernel_contents_kept(void)
{
	contents_kept(kernel_touch);
}

/* Another thread counts in the first byte of each page while the range is
 * touched again and again: a plain read and write-back would lose some of
 * its increments. */
#define COUNTS 200000
static uint8_t shared[4 * 4096];
static int running; /* the counter has started */

static void *counter(void *arg)
{
	(void)arg;
	__atomic_store_n(&running, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < COUNTS; i++)
		for (unsigned p = 0; p < 4; p++)
			__atomic_fetch_add(&shared[p * 4096], 1, __ATOMIC_RELAXED);
	return NULL;
}

static void test_beside_a_writer(void)
{
	pthread_t t;
	memset(shared, 0, sizeof(shared));
	__atomic_store_n(&running, 0, __ATOMIC_RELAXED);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, counter, NULL), 0);
	while (!__atomic_load_n(&running, __ATOMIC_ACQUIRE))
		;
	for (int i = 0; i < 20000; i++)
		pp_prefault(shared, sizeof(shared));
	pthread_join(t, NULL);
	for (unsigned p = 0; p < 4; p++)
		CU_ASSERT_EQUAL(shared[p * 4096], (uint8_t)COUNTS);
}

/* A range the kernel cannot read: unmapped, or mapped without access. */
static void test_kernel_fault(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(m != MAP_FAILED);
	CU_ASSERT_EQUAL(pp_prefault_kernel(m, 2 * pg), -EFAULT);
	munmap(m, 2 * pg);
	CU_ASSERT_EQUAL(pp_prefault_kernel(m, 2 * pg), -EFAULT);
}

/* A user over fs.pipe-user-pages-soft gets pipes of two pages: the kernel
 * touch must not wait on its own pipe (a blocking write of 64 KiB did,
 * forever). As root: the limit set to 1 page for a child running as
 * nobody, and put back. */
static void test_kernel_small_pipes(void)
{
	const char *knob = "/proc/sys/fs/pipe-user-pages-soft";
	char old[32] = "";
	FILE *f = fopen(knob, "r");
	if (geteuid() != 0 || !f || !fgets(old, sizeof(old), f)) {
		if (f)
			fclose(f);
		return; /* not root here: nothing to set */
	}
	fclose(f);
	f = fopen(knob, "w");
	CU_ASSERT_FATAL(f && fputs("1", f) >= 0 && fclose(f) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		static uint8_t b[PAGES * 4096];
		alarm(10);
		_exit(setgid(65534) == 0 && setuid(65534) == 0 &&
			      pp_prefault_kernel(b, sizeof(b)) == 0
			  ? 0
			  : 1);
	}
	int st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	f = fopen(knob, "w");
	CU_ASSERT_FATAL(f && fputs(old, f) >= 0 && fclose(f) == 0);
	CU_ASSERT(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static CU_TestInfo tests[] = {
    {"every page of the range", test_every_page},
    {"contents kept", test_contents_kept},
    {"beside a writer", test_beside_a_writer},
    {"kernel: every page of the range", test_kernel_every_page},
    {"kernel: contents kept", test_kernel_contents_kept},
    {"kernel: nothing readable", test_kernel_fault},
    {"kernel: pipes of two pages (a user over its soft limit)", test_kernel_small_pipes},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"prefault", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
