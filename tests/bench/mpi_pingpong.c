/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_pingpong: the Open MPI baseline of tests/bench/compare.sh, measured the
 * way pp_pingpong measures librt-pp.
 *
 *   latency    SIZE-byte ping-pong; one-way latency = round trip / 2
 *   bandwidth  send BW_SIZE bytes, get a 4-byte reply; bandwidth = BW_SIZE /
 *              (transfer time - one-way latency of a 4-byte message measured
 *              in the same run)
 *
 * Each point runs --warmup discarded iterations, then --iters measured ones
 * after a barrier. Statistics: mean of the middle 80 % (first and last 10 %
 * of the sorted samples dropped), median, p99. Rank 0 prints one line per
 * point:  RESULT <test> <size> <mid80_us> <median_us> <p99_us> <bw_MBps|->
 * Two ranks exactly. Build: mpicc -O2 -o mpi_pingpong mpi_pingpong.c
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

/* Command-line settings. */
struct opts {
	unsigned long lat_size; /* latency message size in bytes */
	unsigned long bw_size;	/* bandwidth message size in bytes */
	unsigned iters;		/* measured iterations per point */
	unsigned warmup;	/* discarded iterations before them */
};

/* Statistics of one point, in microseconds. */
struct summary {
	double mid80;  /* mean of the middle 80 % */
	double median; /* 50th percentile */
	double p99;    /* 99th percentile (nearest rank) */
};

static void usage(FILE *f)
{
	fputs("usage: mpirun -np 2 ... mpi_pingpong [options]\n"
	      "  --lat-size N   latency message size in bytes (default 8)\n"
	      "  --bw-size N    bandwidth message size in bytes (default 1048576)\n"
	      "  --iters N      measured iterations per point (default 1000)\n"
	      "  --warmup N     discarded iterations first (default 10)\n"
	      "  -h, --help     this text\n"
	      "Prints 'RESULT test size mid80_us median_us p99_us bw_MBps' lines on rank 0.\n"
	      "Latencies are one-way (round trip / 2); bandwidth in MB/s (10^6 B/s).\n",
	      f);
}

/* Parse a positive count; -EINVAL when s is not one. */
static int parse_count(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > max || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

/* 0 on success, 1 after --help, 2 on a bad argument. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"lat-size", required_argument, NULL, 'l'}, {"bw-size", required_argument, NULL, 'b'},
	    {"iters", required_argument, NULL, 'i'},	{"warmup", required_argument, NULL, 'w'},
	    {"help", no_argument, NULL, 'h'},		{NULL, 0, NULL, 0},
	};
	unsigned long v;
	int c;

	*o = (struct opts){.lat_size = 8, .bw_size = 1048576, .iters = 1000, .warmup = 10};
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 1;
		case 'l':
		case 'b':
		case 'i':
		case 'w':
			if (parse_count(optarg, c == 'i' || c == 'w' ? 10000000UL : 1UL << 30,
					&v)) {
				fprintf(stderr, "mpi_pingpong: bad value '%s' for --%s\n", optarg,
					c == 'l'   ? "lat-size"
					: c == 'b' ? "bw-size"
					: c == 'i' ? "iters"
						   : "warmup");
				return 2;
			}
			if (c == 'l')
				o->lat_size = v;
			else if (c == 'b')
				o->bw_size = v;
			else if (c == 'i')
				o->iters = (unsigned)v;
			else
				o->warmup = (unsigned)v;
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
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts samples in place. */
static void summarise(double *s, unsigned n, struct summary *out)
{
	qsort(s, n, sizeof(*s), cmp_double);
	unsigned cut = n / 10, used = n - 2 * cut;
	double sum = 0;
	for (unsigned i = cut; i < n - cut; i++)
		sum += s[i];
	unsigned p99 = (unsigned)((99ULL * n + 99) / 100);
	out->mid80 = sum / used;
	out->median = s[n / 2];
	out->p99 = s[(p99 ? p99 : 1) - 1];
}

/* One ping-pong point: rank 0 sends len bytes and waits for reply bytes back;
 * samples get the round trip divided by div, in microseconds. */
static void pingpong(int rank, char *buf, int len, int reply, unsigned n, double div,
		     double *samples)
{
	MPI_Barrier(MPI_COMM_WORLD);
	for (unsigned i = 0; i < n; i++) {
		double t0 = MPI_Wtime();
		if (rank == 0) {
			MPI_Send(buf, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, reply, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, reply, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
		}
		if (samples)
			samples[i] = (MPI_Wtime() - t0) * 1e6 / div;
	}
}

/* Warm-up, then the measured run; rank 0's summary in *s. */
static void point(int rank, char *buf, int len, int reply, const struct opts *o, double div,
		  double *samples, struct summary *s)
{
	pingpong(rank, buf, len, reply, o->warmup, div, NULL);
	pingpong(rank, buf, len, reply, o->iters, div, samples);
	summarise(samples, o->iters, s);
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : 2;

	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_pingpong: needs exactly 2 ranks (got %d)\n", size);
		MPI_Finalize();
		return 2;
	}
	size_t max = o.lat_size > o.bw_size ? o.lat_size : o.bw_size;
	char *buf = malloc(max < 4 ? 4 : max);
	double *samples = malloc(o.iters * sizeof(*samples));
	if (!buf || !samples) {
		fprintf(stderr, "mpi_pingpong: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(buf, 0x5a, max < 4 ? 4 : max);

	struct summary lat, lat4, bw;
	point(rank, buf, (int)o.lat_size, (int)o.lat_size, &o, 2, samples, &lat);
	point(rank, buf, 4, 4, &o, 2, samples, &lat4);
	point(rank, buf, (int)o.bw_size, 4, &o, 1, samples, &bw);
	if (rank == 0) {
		printf("RESULT latency %lu %.3f %.3f %.3f -\n", o.lat_size, lat.mid80, lat.median,
		       lat.p99);
		printf("RESULT latency 4 %.3f %.3f %.3f -\n", lat4.mid80, lat4.median, lat4.p99);
		if (bw.mid80 > lat4.mid80)
			printf("RESULT bandwidth %lu %.3f %.3f %.3f %.1f\n", o.bw_size, bw.mid80,
			       bw.median, bw.p99, (double)o.bw_size / (bw.mid80 - lat4.mid80));
		else
			printf("RESULT bandwidth %lu %.3f %.3f %.3f -\n", o.bw_size, bw.mid80,
			       bw.median, bw.p99);
		fflush(stdout);
	}
	free(samples);
	free(buf);
	MPI_Finalize();
	return 0;
}
