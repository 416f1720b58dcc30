/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <time.h>

#include "perf.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif

static enum pp_perf_clock clock_kind = PP_PERF_CLOCK_MONO;
static double ticks_per_us = 1000.0; /* MONOTONIC_RAW ticks are ns */

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int tsc_invariant(void)
{
#if HAVE_TSC
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

int pp_perf_clock_init(enum pp_perf_clock want)
{
	if (want == PP_PERF_CLOCK_MONO || (want == PP_PERF_CLOCK_AUTO && !tsc_invariant())) {
		clock_kind = PP_PERF_CLOCK_MONO;
		ticks_per_us = 1000.0;
		return 0;
	}
	if (!tsc_invariant())
		return -ENOTSUP;
#if HAVE_TSC
	/* Calibrate over 50 ms: long enough for better than 0.1 % accuracy. */
	uint64_t n0 = mono_ns(), t0 = __rdtsc(), n1, t1;
	do {
		n1 = mono_ns();
		t1 = __rdtsc();
	} while (n1 - n0 < 50000000u);
	ticks_per_us = (double)(t1 - t0) * 1000.0 / (double)(n1 - n0);
	clock_kind = PP_PERF_CLOCK_TSC;
#endif
	return 0;
}

const char *pp_perf_clock_name(void)
{
	return clock_kind == PP_PERF_CLOCK_TSC ? "tsc" : "mono";
}

double pp_perf_ticks_per_us(void)
{
	return ticks_per_us;
}

uint64_t pp_perf_now(void)
{
#if HAVE_TSC
	if (clock_kind == PP_PERF_CLOCK_TSC)
		return __rdtsc();
#endif
	return mono_ns();
}

void pp_perf_compute(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		__asm__ volatile("nop");
}
