/* SPDX-License-Identifier: BSD-3-Clause */
/* For the benchmarks that time something between two cores (core_rtt,
 * ring_pingpong): the calling thread moves to one core and a second thread
 * is created on the other, or not at all. */
#ifndef PP_BENCH_TWO_CORES_H
#define PP_BENCH_TWO_CORES_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_attr_setaffinity_np */
#endif
#include <pthread.h>
#include <sched.h>

/* 0, with fn running in *t on core_b and the caller on core_a; -1 when
 * either cannot be. */
static inline int two_cores(int core_a, int core_b, void *(*fn)(void *), pthread_t *t)
{
	cpu_set_t a, b;
	CPU_ZERO(&a);
	CPU_SET(core_a, &a);
	CPU_ZERO(&b);
	CPU_SET(core_b, &b);
	pthread_attr_t attr;
	if (pthread_setaffinity_np(pthread_self(), sizeof(a), &a) || pthread_attr_init(&attr))
		return -1;
	int bad =
	    pthread_attr_setaffinity_np(&attr, sizeof(b), &b) || pthread_create(t, &attr, fn, NULL);
	pthread_attr_destroy(&attr);
	return bad ? -1 : 0;
}

#endif
