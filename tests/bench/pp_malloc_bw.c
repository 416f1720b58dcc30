/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pp_malloc_bw: the intranode bandwidth of librt-pp with buffers from
 * pp_malloc (in the node segment: the receiver copies with memcpy) and from
 * ordinary process memory (process_vm_readv), measured as pp_pingpong does:
 * send SIZE bytes, get 4 back; bandwidth = SIZE / (transfer time - 4-byte
 * one-way latency), over the mean of the middle 80 % of ITERS samples. Two
 * ranks (pprun -n 2 --nodes 1). Rank 0 prints per kind
 *   RESULT <pp_malloc|process> <size> <mid80_us> <lat4_us> <MBps>
 * Used by tests/bench/compare_shm.sh (pp_pingpong has no pp_malloc option).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp.h"
#include "samples.h"

static double mid80(double *v, unsigned n)
{
	bench_sort(v, n);
	double s = 0;
	for (unsigned i = n / 10; i < n - n / 10; i++)
		s += v[i];
	return s / (double)(n - 2 * (n / 10));
}

static void check(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "pp_malloc_bw: %s: %s\n", what, pp_strerror(rc));
		exit(1);
	}
}

/* One kind of buffer: 4-byte ping-pongs, then SIZE-byte transfers. */
static void measure(pp_ctx *c, int rank, const char *kind, uint8_t *buf, size_t size,
		    unsigned iters, double *t)
{
	int peer = 1 - rank;
	uint8_t small[4] = {0};
	double lat4;
	memset(buf, rank + 1, size);
	for (unsigned i = 0; i < iters + 10; i++) {
		double t0 = bench_now_us();
		if (rank == 0) {
			check(pp_send(c, small, 4, peer, 1), "send");
			check(pp_recv(c, small, 4, peer, 2, NULL), "recv");
		} else {
			check(pp_recv(c, small, 4, peer, 1, NULL), "recv");
			check(pp_send(c, small, 4, peer, 2), "send");
		}
		if (i >= 10)
			t[i - 10] = (bench_now_us() - t0) / 2;
	}
	lat4 = mid80(t, iters);
	for (unsigned i = 0; i < iters + 10; i++) {
		double t0 = bench_now_us();
		if (rank == 0) {
			check(pp_send(c, buf, size, peer, 3), "send");
			check(pp_recv(c, small, 4, peer, 4, NULL), "recv");
		} else {
			check(pp_recv(c, buf, size, peer, 3, NULL), "recv");
			check(pp_send(c, small, 4, peer, 4), "send");
		}
		if (i >= 10)
			t[i - 10] = bench_now_us() - t0;
	}
	double m = mid80(t, iters);
	if (rank == 0)
		printf("RESULT %s %zu %.3f %.3f %.1f\n", kind, size, m, lat4,
		       (double)size / (m - lat4));
}

int main(int argc, char **argv)
{
	unsigned long size = 4ul << 20, iters = 500;
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		puts("usage: pprun -n 2 --nodes 1 pp_malloc_bw [SIZE [ITERS]]  (default 4194304 "
		     "500)\nIntranode bandwidth with pp_malloc and with process buffers.");
		return 0;
	}
	char *end;
	if (argc > 1 && ((size = strtoul(argv[1], &end, 0)) < 8 || *end || size > (1ul << 30)))
		argc = 99;
	if (argc > 2 && ((iters = strtoul(argv[2], &end, 0)) < 10 || *end || iters > 100000))
		argc = 99;
	if (argc > 3) {
		fprintf(stderr, "pp_malloc_bw: bad arguments (see --help)\n");
		return 2;
	}
	pp_ctx *c;
	check(pp_init(&c, NULL), "pp_init");
	int rank = pp_rank(c);
	if (pp_size(c) != 2) {
		fprintf(stderr, "pp_malloc_bw: needs 2 ranks\n");
		return 2;
	}
	double *t = malloc(iters * sizeof(*t));
	uint8_t *shared = pp_malloc(c, size);
	uint8_t *own = aligned_alloc(4096, (size + 4095) & ~4095ul);
	if (!t || !shared || !own) {
		fprintf(stderr, "pp_malloc_bw: out of memory\n");
		return 1;
	}
	measure(c, rank, "pp_malloc", shared, size, (unsigned)iters, t);
	measure(c, rank, "process", own, size, (unsigned)iters, t);
	pp_free(c, shared);
	free(own);
	free(t);
	return pp_finalize(c) ? 1 : 0;
}
