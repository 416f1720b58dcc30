/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memcpy_bw: the ceiling of tests/bench/compare_shm.sh: single-thread memcpy
 * bandwidth between two distinct buffers of SIZE bytes (page-aligned, touched
 * first), timed per copy (below 64 KiB, per batch of 64 KiB / SIZE copies,
 * divided: a single small copy is shorter than the clock's resolution).
 * Prints
 *   RESULT memcpy <size> <mid80_us> <median_us> <p99_us> <MBps>
 * with MB/s = 10^6 B/s over the mean of the middle 80 % of the copy times.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples.h"

static int parse(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 0);
	if (errno || *end || !*s || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long size = 4ul << 20, iters = 1000;
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		puts("usage: memcpy_bw [SIZE [ITERS]]  (default 4194304 1000)\n"
		     "Single-thread memcpy bandwidth between two SIZE-byte buffers.");
		return 0;
	}
	if ((argc > 1 && parse(argv[1], 1, 1ul << 30, &size)) ||
	    (argc > 2 && parse(argv[2], 10, 1000000, &iters)) || argc > 3) {
		fprintf(stderr, "memcpy_bw: bad arguments (see --help)\n");
		return 2;
	}
	size_t alloc = (size + 4095) & ~4095ul;
	char *src = aligned_alloc(4096, alloc), *dst = aligned_alloc(4096, alloc);
	double *t = malloc(iters * sizeof(*t));
	if (!src || !dst || !t) {
		fprintf(stderr, "memcpy_bw: out of memory\n");
		return 1;
	}
	memset(src, 1, size);
	memset(dst, 2, size);
	unsigned long reps = size < 65536 ? 65536 / size : 1;
	for (unsigned long i = 0; i < iters + 10; i++) {
		double t0 = bench_now_us();
		for (unsigned long k = 0; k < reps; k++) {
			memcpy(dst, src, size);
			__asm__ volatile("" : : "r"(dst), "r"(src) : "memory");
		}
		double dt = (bench_now_us() - t0) / (double)reps;
		if (i >= 10)
			t[i - 10] = dt;
		src[i % size]++;
	}
	bench_sort(t, iters);
	unsigned long cut = iters / 10;
	double sum = 0;
	for (unsigned long i = cut; i < iters - cut; i++)
		sum += t[i];
	double mid = sum / (double)(iters - 2 * cut);
	printf("RESULT memcpy %lu %.3f %.3f %.3f %.1f\n", size, mid, t[iters / 2],
	       t[(99 * iters + 99) / 100 - 1], (double)size / mid);
	return 0;
}
