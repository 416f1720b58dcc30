/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The intranode rings alone (shm/ring.h), between two cores: a thread on
 * each (default cores 0 and 1) sends a record of SIZE bytes through one ring
 * and gets one back through another, as two ranks' shared-memory links do,
 * and the median one-way time of many exchanges is printed in nanoseconds.
 * Between tests/bench/core_rtt (one cache line's round trip, the hardware's
 * part) and pp_pingpong's intranode latency (the whole path), it gives the
 * rings' part; engine_pingpong gives the protocol engine's. Every record's
 * bytes are checked.
 *
 *   ring_pingpong [SIZE [EXCHANGES [CORE_A CORE_B]]]
 *                 (default 88 bytes: an 8-byte message's local frame; 100000)
 *
 * Output: "RESULT ring_pingpong SIZE A B median_ns min_ns p90_ns".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_attr_setaffinity_np */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "samples.h"
#include "two_cores.h"

#define CELLS	   4096u /* as the runtime's rings */
#define PER_SAMPLE 100	 /* exchanges per timed sample */

static struct pp_shm_ring there_tx, there_rx, back_tx, back_rx;
static uint32_t size;
static long nsamples;
static int broken; /* a record came back wrong (set by either side) */

/* A record of size bytes of v: waits while the ring is full (the other
 * side has not caught up); any other refusal ends the program. */
static void put(struct pp_shm_ring *r, uint8_t v)
{
	void *p;
	int rc;
	while ((rc = pp_shm_ring_reserve(r, size, &p)) == -EAGAIN)
		;
	if (rc) {
		fprintf(stderr, "ring_pingpong: the ring refused a record (%d)\n", rc);
		exit(1);
	}
	memset(p, v, size);
	pp_shm_ring_commit(r, size);
}

/* The next record, which must be size bytes of v; 0 when it is. */
static int get(struct pp_shm_ring *r, uint8_t v)
{
	const void *p;
	uint32_t len;
	int rc;
	while ((rc = pp_shm_ring_peek(r, &p, &len)) == 0)
		;
	const uint8_t *b = p;
	int bad = rc < 0 || len != size || b[0] != v || b[len - 1] != v;
	if (rc > 0)
		pp_shm_ring_release(r);
	return bad;
}

/* The other side: answers every record with one of the next byte value. */
static void *echo(void *arg)
{
	(void)arg;
	for (long i = 0; i < nsamples * PER_SAMPLE; i++) {
		if (get(&there_rx, (uint8_t)i)) {
			broken = 1;
			put(&back_tx, (uint8_t)(i + 2)); /* not what the other side waits for */
			return NULL;
		}
		put(&back_tx, (uint8_t)(i + 1));
	}
	return NULL;
}

static int ring(struct pp_shm_ring *tx, struct pp_shm_ring *rx)
{
	void *mem = aligned_alloc(PP_SHM_RING_ALIGN, pp_shm_ring_bytes(CELLS));
	return !mem || pp_shm_ring_format(mem, CELLS) || pp_shm_ring_attach(tx, mem) ||
	       pp_shm_ring_attach(rx, mem);
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: ring_pingpong [SIZE [EXCHANGES [CORE_A CORE_B]]]\n"
		       "A record of SIZE bytes (default 88, an 8-byte message's local frame)\n"
		       "there and back through two intranode rings between two cores (default\n"
		       "0 and 1), EXCHANGES times (default 100000, timed in samples of %d):\n"
		       "prints \"RESULT ring_pingpong SIZE A B median_ns min_ns p90_ns\", one "
		       "way.\n",
		       PER_SAMPLE);
		return 0;
	}
	if (argc > 5 || argc == 4) {
		fprintf(stderr, "ring_pingpong: bad arguments (try --help)\n");
		return 2;
	}
	long sz = argc > 1 ? atol(argv[1]) : 88;
	long exchanges = argc > 2 ? atol(argv[2]) : 100000;
	int core_a = argc > 4 ? atoi(argv[3]) : 0;
	int core_b = argc > 4 ? atoi(argv[4]) : 1;
	if (sz < 1 || exchanges < PER_SAMPLE || core_a < 0 || core_b < 0 || core_a == core_b) {
		fprintf(stderr,
			"ring_pingpong: a size of at least 1, at least %d exchanges, two "
			"different cores\n",
			PER_SAMPLE);
		return 2;
	}
	if (ring(&there_tx, &there_rx) || ring(&back_tx, &back_rx) ||
	    (uint64_t)sz > pp_shm_ring_max_record(&there_tx)) {
		fprintf(stderr, "ring_pingpong: no memory, or a size above %u\n",
			pp_shm_ring_max_record(&there_tx));
		return 2;
	}
	size = (uint32_t)sz;
	nsamples = exchanges / PER_SAMPLE;
	double *sample = malloc((size_t)nsamples * sizeof(*sample));
	pthread_t t;
	if (!sample || two_cores(core_a, core_b, echo, &t)) {
		fprintf(stderr, "ring_pingpong: cannot run on cores %d and %d\n", core_a, core_b);
		return 1;
	}
	long i = 0;
	for (long s = 0; s < nsamples && !broken; s++) {
		uint64_t t0 = bench_now_ns();
		for (int k = 0; k < PER_SAMPLE && !broken; k++, i++) {
			put(&there_tx, (uint8_t)i);
			if (get(&back_rx, (uint8_t)(i + 1)))
				broken = 1;
		}
		sample[s] = (double)(bench_now_ns() - t0) / (2 * PER_SAMPLE);
	}
	if (broken) { /* the other thread may wait for ever: not joined */
		fprintf(stderr, "ring_pingpong: a record came back wrong\n");
		return 1;
	}
	pthread_join(t, NULL);
	bench_sort(sample, (size_t)nsamples);
	printf("RESULT ring_pingpong %u %d %d %.1f %.1f %.1f\n", size, core_a, core_b,
	       sample[nsamples / 2], sample[0], sample[nsamples * 9 / 10]);
	free(sample);
	return 0;
}
