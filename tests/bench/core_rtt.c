/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The round trip of one cache line between two cores: a thread on each
 * (default cores 0 and 1) hands a counter back and forth, and the median of
 * many hand-overs is printed in nanoseconds. Every intranode message crosses
 * this at least once, so an intranode figure is worth comparing only with
 * one taken while the round trip was the same: on a virtual machine the
 * host moves virtual CPUs between physical cores (the same core complex,
 * another, another socket), and the figure can change severalfold within
 * seconds. tests/bench/compare.sh and compare_shm.sh run it before every
 * step of their rounds.
 *
 *   core_rtt [CORE_A CORE_B [ROUND_TRIPS]]   (default 0 1 20000)
 *
 * Output: "RESULT core_rtt A B median_ns min_ns p90_ns".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_attr_setaffinity_np */
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "two_cores.h"
#include "samples.h"

#define PER_SAMPLE                                                                                 \
	100 /* hand-overs per timed sample, so the clock reads are a small part of it              \
	     */

static _Alignas(64) atomic_uint_fast64_t line;
static long nsamples; /* timed samples, all kept */

/* The other side: answers every odd value with the next even one. */
static void *echo(void *arg)
{
	(void)arg;
	for (uint64_t v = 1; v < 2 * (uint64_t)nsamples * PER_SAMPLE; v += 2) {
		while (atomic_load_explicit(&line, memory_order_acquire) != v)
			__builtin_ia32_pause();
		atomic_store_explicit(&line, v + 1, memory_order_release);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: core_rtt [CORE_A CORE_B [ROUND_TRIPS]]\n"
		       "The round trip of one cache line between two cores (default 0 and 1,\n"
		       "20000 round trips, timed in samples of %d): prints\n"
		       "\"RESULT core_rtt A B median_ns min_ns p90_ns\".\n",
		       PER_SAMPLE);
		return 0;
	}
	if (argc != 1 && argc != 3 && argc != 4) {
		fprintf(stderr, "core_rtt: bad arguments (try --help)\n");
		return 2;
	}
	int core_a = argc > 2 ? atoi(argv[1]) : 0;
	int core_b = argc > 2 ? atoi(argv[2]) : 1;
	long trips = argc > 3 ? atol(argv[3]) : 20000;
	if (core_a < 0 || core_b < 0 || core_a == core_b || trips < PER_SAMPLE) {
		fprintf(stderr, "core_rtt: two different cores and at least %d round trips\n",
			PER_SAMPLE);
		return 2;
	}
	nsamples = trips / PER_SAMPLE;
	double *sample = malloc((size_t)nsamples * sizeof(*sample));
	pthread_t t;
	if (!sample || two_cores(core_a, core_b, echo, &t)) {
		fprintf(stderr, "core_rtt: cannot run on cores %d and %d\n", core_a, core_b);
		free(sample);
		return 1;
	}
	uint64_t v = 0;
	for (long r = 0; r < nsamples; r++) {
		uint64_t t0 = bench_now_ns();
		for (int k = 0; k < PER_SAMPLE; k++, v += 2) {
			atomic_store_explicit(&line, v + 1, memory_order_release);
			while (atomic_load_explicit(&line, memory_order_acquire) != v + 2)
				__builtin_ia32_pause();
		}
		sample[r] = (double)(bench_now_ns() - t0) / PER_SAMPLE;
	}
	pthread_join(t, NULL);
	bench_sort(sample, (size_t)nsamples);
	printf("RESULT core_rtt %d %d %.1f %.1f %.1f\n", core_a, core_b, sample[nsamples / 2],
	       sample[0], sample[nsamples * 9 / 10]);
	free(sample);
	return 0;
}
