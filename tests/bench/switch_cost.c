/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What it costs to pass one core between two processes: a parent and a child
 * pinned to the same core hand a counter back and forth, and the median of
 * many hand-overs is printed in nanoseconds, two ways:
 *
 *   yield  the waiting side calls sched_yield until the counter is its own
 *          (ppd's handlers and the ranks that share their cores do this);
 *   wake   the waiting side sleeps in read() on an eventfd the other writes
 *          (a dozing handler, or an event progress thread, woken).
 *
 * A rank attached to a node daemon that shares its core needs two hand-overs
 * on every one-way trip (its handler takes the core to send the frame; the
 * receiving rank takes it back from its handler), so twice the yield figure
 * is a floor under what the daemon adds to a ping-pong there.
 * apps/ppd/ppd_compare.sh runs it and prints that floor.
 *
 *   switch_cost [CORE [HAND_OVERS]]     (default core 0, 20000)
 *
 * Output: "RESULT switch_cost CORE yield_median_ns yield_p90_ns
 * wake_median_ns wake_p90_ns".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "samples.h"

#define PER_SAMPLE 100 /* round trips per timed sample (two hand-overs each) */

static int pin(int core)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(core, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* One eventfd count: 0, or -1 when the other side is gone. */
static int post(int fd)
{
	uint64_t one = 1;
	return write(fd, &one, sizeof(one)) == sizeof(one) ? 0 : -1;
}

static int take(int fd)
{
	uint64_t v;
	ssize_t n;
	while ((n = read(fd, &v, sizeof(v))) < 0 && errno == EINTR)
		;
	return n == sizeof(v) ? 0 : -1;
}

/* The child: answers every odd count with the next even one (yield), then
 * every post on to_child with one on to_parent (wake). */
static int child(atomic_uint_fast64_t *turn, uint64_t rounds, int to_child, int to_parent)
{
	for (uint64_t v = 1; v < 2 * rounds; v += 2) {
		while (atomic_load_explicit(turn, memory_order_acquire) != v)
			sched_yield();
		atomic_store_explicit(turn, v + 1, memory_order_release);
	}
	for (uint64_t i = 0; i < rounds; i++)
		if (take(to_child) || post(to_parent))
			return 1;
	return 0;
}

/* Median and 90th percentile of n samples, sorted in place. */
static void stats(double *s, long n, double *med, double *p90)
{
	bench_sort(s, (size_t)n);
	*med = s[n / 2];
	*p90 = s[n * 9 / 10];
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: switch_cost [CORE [HAND_OVERS]]\n"
		       "The cost of passing one core between two processes pinned to it\n"
		       "(default core 0, 20000 hand-overs each way, timed in samples of %d):\n"
		       "by sched_yield, and by an eventfd wake-up from sleep. Prints\n"
		       "\"RESULT switch_cost CORE yield_median_ns yield_p90_ns wake_median_ns "
		       "wake_p90_ns\".\n",
		       2 * PER_SAMPLE);
		return 0;
	}
	if (argc > 3) {
		fprintf(stderr, "switch_cost: bad arguments (try --help)\n");
		return 2;
	}
	char *end = NULL;
	long core = argc > 1 ? strtol(argv[1], &end, 10) : 0;
	if (argc > 1 && (*end || core < 0 || core >= CPU_SETSIZE)) {
		fprintf(stderr, "switch_cost: bad core '%s'\n", argv[1]);
		return 2;
	}
	long hand_overs = argc > 2 ? strtol(argv[2], &end, 10) : 20000;
	if (argc > 2 && (*end || hand_overs < 2 * PER_SAMPLE)) {
		fprintf(stderr, "switch_cost: at least %d hand-overs\n", 2 * PER_SAMPLE);
		return 2;
	}
	long nsamples = hand_overs / (2 * PER_SAMPLE);
	uint64_t rounds = (uint64_t)nsamples * PER_SAMPLE;
	double *ys = malloc((size_t)nsamples * sizeof(*ys));
	double *ws = malloc((size_t)nsamples * sizeof(*ws));
	atomic_uint_fast64_t *turn =
	    mmap(NULL, sizeof(*turn), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int to_child = eventfd(0, EFD_CLOEXEC), to_parent = eventfd(0, EFD_CLOEXEC);
	if (!ys || !ws || turn == MAP_FAILED || to_child < 0 || to_parent < 0) {
		fprintf(stderr, "switch_cost: out of resources\n");
		return 1;
	}
	atomic_init(turn, 0);
	if (pin((int)core)) {
		fprintf(stderr, "switch_cost: cannot run on core %ld\n", core);
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "switch_cost: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) { /* pinned like its parent; gone with it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(child(turn, rounds, to_child, to_parent));
	}
	uint64_t v = 0;
	for (long s = 0; s < nsamples; s++) {
		uint64_t t0 = bench_now_ns();
		for (int k = 0; k < PER_SAMPLE; k++, v += 2) {
			atomic_store_explicit(turn, v + 1, memory_order_release);
			while (atomic_load_explicit(turn, memory_order_acquire) != v + 2)
				sched_yield();
		}
		ys[s] = (double)(bench_now_ns() - t0) / (2 * PER_SAMPLE);
	}
	int bad = 0;
	for (long s = 0; s < nsamples && !bad; s++) {
		uint64_t t0 = bench_now_ns();
		for (int k = 0; k < PER_SAMPLE && !bad; k++)
			bad = post(to_child) || take(to_parent);
		ws[s] = (double)(bench_now_ns() - t0) / (2 * PER_SAMPLE);
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) || bad) {
		fprintf(stderr, "switch_cost: the other process failed\n");
		return 1;
	}
	double ym, y90, wm, w90;
	stats(ys, nsamples, &ym, &y90);
	stats(ws, nsamples, &wm, &w90);
	printf("RESULT switch_cost %ld %.0f %.0f %.0f %.0f\n", core, ym, y90, wm, w90);
	free(ys);
	free(ws);
	return 0;
}
