/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_pingpong: the MPI baseline of tests/bench/compare.sh and compare_shm.sh,
 * measured the way pp_pingpong (apps/pp_pingpong.c) measures librt-pp, size
 * by size, with pp_pingpong's own size lists and statistics (apps/perf/sizes.c
 * and stats.c are compiled in):
 *
 *   latency    SIZE-byte ping-pong; one-way latency = round trip / 2
 *   bandwidth  send SIZE bytes, get a 4-byte reply; bandwidth = SIZE /
 *              (transfer time - one-way latency of a 4-byte message measured
 *              in the same run)
 *   window     osu_bw's windowed bandwidth with pre-posted receives: rank 1
 *              posts W = --window MPI_Irecv of SIZE bytes, then sends a 0-byte
 *              "go"; rank 0, once the go is in, starts the clock, posts W
 *              MPI_Isend, MPI_Waitall, and receives rank 1's 4-byte reply,
 *              sent once its MPI_Waitall returned. Bandwidth = W * SIZE /
 *              iteration time; W / iteration time messages per second. As in
 *              osu_bw (and pp_pingpong without --check), the W messages share
 *              one send and one receive buffer.
 *
 * Each point runs the warm-up iterations, then, after a barrier, the
 * measured ones (--max-bytes cuts both for large sizes exactly as
 * pp_pingpong does). Statistics over the per-iteration times: mean of the
 * middle 80 %, median, p99; bandwidth from the mean of the middle 80 %.
 * Rank 0 prints one line per point:
 *   RESULT <test> <size> <mid80_us> <median_us> <p99_us> <bw_MBps|-> <msgs_per_s|-> <iters>
 * (latency rows: one-way latency; bandwidth rows: the transfer time; window
 * rows: the iteration time). Two ranks exactly. Build:
 *   mpicc -O2 -Iapps/perf -o mpi_pingpong tests/bench/mpi_pingpong.c \
 *     apps/perf/sizes.c apps/perf/sample_stats.c
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "perf.h"

#define WINDOW_MAX    1024 /* as pp_pingpong: librt-pp's outstanding sends */
#define CAP_MIN_ITERS 10   /* --max-bytes never cuts a point below this */

enum test { T_LATENCY, T_BANDWIDTH, T_WINDOW, T_COUNT };
static const char *const test_names[T_COUNT] = {"latency", "bandwidth", "window"};

/* Command-line settings. */
struct opts {
	int tests[T_COUNT];
	uint64_t sizes[PP_PERF_MAX_VALUES];
	int nsizes;
	unsigned iters;	    /* measured iterations per point */
	unsigned warmup;    /* discarded iterations before them */
	unsigned window;    /* window: messages in flight per iteration */
	uint64_t max_bytes; /* bytes rank 0 sends per point at most (0: no cap) */
};

#define DEFAULT_SIZES "8,32,128,256,512,1k,2k,8k,32k,64k,128k,512k,1m,2m,4m"

static void usage(FILE *f)
{
	fputs("usage: mpirun -np 2 ... mpi_pingpong [options]\n"
	      "  --test LIST    latency,bandwidth,window (default latency,window)\n"
	      "  --sizes SPEC   message sizes, as pp_pingpong takes them: V | V,V,... |\n"
	      "                 A:B[:xF|:+S] with k/m/g suffixes (default\n"
	      "                 " DEFAULT_SIZES ")\n"
	      "  --window W     window: messages in flight per iteration, 1..1024 (default\n"
	      "                 64); receives posted first (rank 1 sends a 0-byte go)\n"
	      "  --iters N      measured iterations per point (default 1000)\n"
	      "  --warmup N     discarded iterations first (default 10)\n"
	      "  --max-bytes B  cap each point at B bytes sent by rank 0, as pp_pingpong\n"
	      "                 does (W*SIZE per window iteration, SIZE otherwise; at least\n"
	      "                 10 iterations; default: no cap)\n"
	      "  -h, --help     this text\n"
	      "Prints 'RESULT test size mid80_us median_us p99_us bw_MBps msgs_per_s iters'\n"
	      "lines on rank 0. Latencies are one-way (round trip / 2); bandwidth in MB/s\n"
	      "(10^6 B/s).\n",
	      f);
}

/* A number lo..hi, or -EINVAL. */
static int parse_num(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_tests(const char *list, int *chosen)
{
	char *copy = strdup(list), *save = NULL;
	int any = 0;
	if (!copy)
		return -ENOMEM;
	memset(chosen, 0, T_COUNT * sizeof(*chosen));
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k;
		for (k = 0; k < T_COUNT && strcmp(t, test_names[k]) != 0; k++)
			;
		if (k == T_COUNT) {
			free(copy);
			return -EINVAL;
		}
		chosen[k] = any = 1;
	}
	free(copy);
	return any ? 0 : -EINVAL;
}

/* 0 on success, 1 after --help, 2 on a bad argument. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"test", required_argument, NULL, 't'},   {"sizes", required_argument, NULL, 's'},
	    {"window", required_argument, NULL, 'W'}, {"iters", required_argument, NULL, 'i'},
	    {"warmup", required_argument, NULL, 'w'}, {"max-bytes", required_argument, NULL, 'B'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0},
	};
	const char *tests = "latency,window", *sizes = DEFAULT_SIZES;
	unsigned long v;
	uint64_t b[PP_PERF_MAX_VALUES];
	int c;

	*o = (struct opts){.iters = 1000, .warmup = 10, .window = 64};
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 1;
		case 't':
			tests = optarg;
			break;
		case 's':
			sizes = optarg;
			break;
		case 'W':
		case 'i':
		case 'w':
			if (parse_num(optarg, c == 'w' ? 0 : 1,
				      c == 'W'	 ? WINDOW_MAX
				      : c == 'i' ? 10000000UL
						 : 1000000UL,
				      &v)) {
				fprintf(stderr, "mpi_pingpong: bad value '%s' for --%s\n", optarg,
					c == 'W'   ? "window"
					: c == 'i' ? "iters"
						   : "warmup");
				return 2;
			}
			if (c == 'W')
				o->window = (unsigned)v;
			else if (c == 'i')
				o->iters = (unsigned)v;
			else
				o->warmup = (unsigned)v;
			break;
		case 'B':
			if (pp_perf_parse_list(optarg, b, PP_PERF_MAX_VALUES) != 1 || b[0] == 0 ||
			    strchr(optarg, ':')) {
				fprintf(stderr, "mpi_pingpong: bad --max-bytes '%s'\n", optarg);
				return 2;
			}
			o->max_bytes = b[0];
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mpi_pingpong: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (parse_tests(tests, o->tests)) {
		fprintf(stderr, "mpi_pingpong: bad --test '%s' (latency,bandwidth,window)\n",
			tests);
		return 2;
	}
	o->nsizes = pp_perf_parse_list(sizes, o->sizes, PP_PERF_MAX_VALUES);
	if (o->nsizes <= 0) {
		fprintf(stderr, "mpi_pingpong: bad --sizes '%s'\n", sizes);
		return 2;
	}
	for (int i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > (1u << 30)) {
			fprintf(stderr, "mpi_pingpong: sizes above 1 GiB are not supported\n");
			return 2;
		}
	return 0;
}

/* pp_pingpong's cap_iters, the same rule. */
static void cap_iters(const struct opts *o, uint64_t per, unsigned *iters, unsigned *warmup)
{
	if (!o->max_bytes || !per || *iters <= o->max_bytes / per)
		return;
	uint64_t n = o->max_bytes / per;
	if (n < CAP_MIN_ITERS)
		n = CAP_MIN_ITERS;
	if (n >= *iters)
		return;
	uint64_t w = (uint64_t)*warmup * n / *iters;
	*warmup = w ? (unsigned)w : (*warmup ? 1 : 0);
	*iters = (unsigned)n;
}

struct run {
	int rank;
	const struct opts *o;
	char *sbuf, *rbuf; /* page-aligned, as pp_pingpong's */
	double *samples;   /* o->iters of them, microseconds */
	MPI_Request *reqs; /* window: o->window of them */
};

/* Ping-pong: rank 0 sends len bytes and gets reply bytes back; samples get
 * the round trip divided by div, in microseconds. */
static void pingpong(struct run *r, int len, int reply, unsigned n, double div, int keep)
{
	MPI_Barrier(MPI_COMM_WORLD);
	for (unsigned i = 0; i < n; i++) {
		double t0 = MPI_Wtime();
		if (r->rank == 0) {
			MPI_Send(r->sbuf, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(r->rbuf, reply, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(r->rbuf, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(r->sbuf, reply, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
		}
		if (keep)
			r->samples[i] = (MPI_Wtime() - t0) * 1e6 / div;
	}
}

/* osu_bw's window with the receives posted first; samples are rank 0's
 * iteration times in microseconds. */
static void window(struct run *r, int len, unsigned n, int keep)
{
	int w = (int)r->o->window;
	MPI_Barrier(MPI_COMM_WORLD);
	for (unsigned i = 0; i < n; i++) {
		if (r->rank == 0) {
			MPI_Recv(r->rbuf, 0, MPI_BYTE, 1, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			double t0 = MPI_Wtime();
			for (int k = 0; k < w; k++)
				MPI_Isend(r->sbuf, len, MPI_BYTE, 1, 20, MPI_COMM_WORLD,
					  &r->reqs[k]);
			MPI_Waitall(w, r->reqs, MPI_STATUSES_IGNORE);
			MPI_Recv(r->rbuf, 4, MPI_BYTE, 1, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (keep)
				r->samples[i] = (MPI_Wtime() - t0) * 1e6;
		} else {
			for (int k = 0; k < w; k++)
				MPI_Irecv(r->rbuf, len, MPI_BYTE, 0, 20, MPI_COMM_WORLD,
					  &r->reqs[k]);
			MPI_Send(r->sbuf, 0, MPI_BYTE, 0, 21, MPI_COMM_WORLD);
			MPI_Waitall(w, r->reqs, MPI_STATUSES_IGNORE);
			MPI_Send(r->sbuf, 4, MPI_BYTE, 0, 22, MPI_COMM_WORLD);
		}
	}
}

/* One point: warm-up, then measured; rank 0 prints its RESULT line. */
static void point(struct run *r, enum test t, uint64_t size, double lat4)
{
	const struct opts *o = r->o;
	unsigned iters = o->iters, warmup = o->warmup;
	int len = (int)size;
	struct pp_perf_summary s;

	cap_iters(o, size * (t == T_WINDOW ? o->window : 1), &iters, &warmup);
	for (int pass = 0; pass < 2; pass++) {
		unsigned n = pass ? iters : warmup;
		if (t == T_LATENCY)
			pingpong(r, len, len, n, 2, pass);
		else if (t == T_BANDWIDTH)
			pingpong(r, len, 4, n, 1, pass);
		else
			window(r, len, n, pass);
	}
	if (r->rank != 0)
		return;
	pp_perf_summarise(r->samples, iters, &s);
	char bw[32] = "-", msgs[32] = "-";
	if (t == T_BANDWIDTH && s.mid80 > lat4)
		snprintf(bw, sizeof(bw), "%.1f", (double)size / (s.mid80 - lat4));
	if (t == T_WINDOW && s.mid80 > 0) {
		if (size)
			snprintf(bw, sizeof(bw), "%.1f", (double)size * o->window / s.mid80);
		snprintf(msgs, sizeof(msgs), "%.0f", o->window * 1e6 / s.mid80);
	}
	printf("RESULT %s %llu %.3f %.3f %.3f %s %s %u\n", test_names[t], (unsigned long long)size,
	       s.mid80, s.median, s.p99, bw, msgs, iters);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : 2;

	int rank, nranks;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_pingpong: needs exactly 2 ranks (got %d)\n", nranks);
		MPI_Finalize();
		return 2;
	}
	uint64_t max = 4;
	for (int i = 0; i < o.nsizes; i++)
		if (o.sizes[i] > max)
			max = o.sizes[i];
	size_t alloc = (max + 4095) & ~(size_t)4095;
	struct run r = {.rank = rank, .o = &o};
	r.sbuf = aligned_alloc(4096, alloc);
	r.rbuf = aligned_alloc(4096, alloc);
	r.samples = malloc(o.iters * sizeof(*r.samples));
	r.reqs = malloc(o.window * sizeof(*r.reqs));
	if (!r.sbuf || !r.rbuf || !r.samples || !r.reqs) {
		fprintf(stderr, "mpi_pingpong: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(r.sbuf, 0x5a, alloc);
	memset(r.rbuf, 0, alloc);

	double lat4 = 0; /* the bandwidth test's correction, measured now */
	if (o.tests[T_BANDWIDTH]) {
		pingpong(&r, 4, 4, o.warmup, 2, 0);
		pingpong(&r, 4, 4, o.iters, 2, 1);
		struct pp_perf_summary s;
		pp_perf_summarise(r.samples, o.iters, &s);
		lat4 = s.mid80;
		if (rank == 0)
			printf("# one-way 4-byte latency for the bandwidth rows: %.3f us\n", lat4);
	}
	/* Test by test, size by size, as pp_pingpong runs them. */
	for (int t = 0; t < T_COUNT; t++)
		for (int i = 0; o.tests[t] && i < o.nsizes; i++)
			point(&r, (enum test)t, o.sizes[i], lat4);
	free(r.reqs);
	free(r.samples);
	free(r.rbuf);
	free(r.sbuf);
	MPI_Finalize();
	return 0;
}
