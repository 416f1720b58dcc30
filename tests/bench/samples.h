/* SPDX-License-Identifier: BSD-3-Clause */
/* For the benchmark programs that time samples and print order statistics
 * of them (core_rtt, ring_pingpong, switch_cost, crc_speed, memcpy_bw,
 * pp_malloc_bw): the clock and the sort. */
#ifndef PP_BENCH_SAMPLES_H
#define PP_BENCH_SAMPLES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns. */
static inline uint64_t bench_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The same clock in us, for figures kept as doubles. */
static inline double bench_now_us(void)
{
	return (double)bench_now_ns() * 1e-3;
}

/* Samples in ascending order: s[n / 2] is the median. */
static inline void bench_sort(double *s, size_t n)
{
	qsort(s, n, sizeof(*s), bench_cmp);
}

#endif
