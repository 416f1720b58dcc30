/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pp_pingpong: the Push-Pull paper's benchmark (section 5) over librt-pp.
 *
 * Two ranks: rank 0 pings, rank 1 pongs. Tests:
 *   latency    ping-pong; one-way latency = round trip / 2
 *   bandwidth  send SIZE bytes, get a 4-byte reply; bandwidth = SIZE / (time -
 *              one-way latency of a 4-byte message measured in the same run)
 *   window     osu_bw's windowed bandwidth with pre-posted receives: rank 1
 *              posts W = --window receives of SIZE bytes, then sends a 0-byte
 *              "go"; rank 0, once the go is in, starts the clock, posts W
 *              sends (pp_isend), waits for all of them and for rank 1's
 *              4-byte reply, which rank 1 sends once its W receives are
 *              complete. Bandwidth = W * SIZE / iteration time, and W /
 *              iteration time messages per second (the go is outside the
 *              clock; the reply's latency is inside, as in osu_bw).
 *              tests/bench/mpi_pingpong.c does the same with MPI
 *   early      the paper's Figure 5 with compute x=500000, y=100000 NOPs: the
 *              receive is posted before the send starts
 *   late       the same with x=100000, y=300000: the message arrives first and
 *              waits in the pushed buffer
 *   busy       the late receiver of a sender busy computing: rank 0 posts an
 *              isend, and once rank 1 says it has the pushes, computes C =
 *              --compute-us microseconds without pp_* calls; rank 1 waits
 *              C/2 (so the sender is computing: a PULL that came with the
 *              "go" would be served before the compute), then posts the
 *              receive; the sample is rank 1's time from posting to
 *              completion (PULL served only by the sender's engine: about
 *              C/2 plus the transfer; by a pull handler or the node daemon:
 *              the transfer alone)
 * For early/late the reported one-way latency is (iteration time - the
 * compute on the critical path, max(x, y) + x NOPs, timed beforehand) / 2,
 * and each row is followed by the predictor and staging counters of the
 * measured iterations, summed over both ranks (predictions, hits, misses,
 * speculative pulls, bytes staged, bytes placed without a copy, pages
 * remapped, evictions; also the last CSV columns).
 * Every measurement starts with a barrier; for early/late every iteration
 * does, as in the paper. Statistics: mean of the middle 80 %, median, p99.
 * The table goes to stdout (rank 0 only), --csv FILE gets one row per
 * measurement; with --json stdout gets one JSON document instead of the
 * table, the same results as its rows. While a sweep runs, rank 0 shows what
 * it measures now ("[i/N] ...") on one line of stderr when stderr is a
 * terminal (or pprun's stderr is: PPRUN_TTY), and nothing when it is not.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pp.h>

#include "perf.h"
#include "pp_json.h"

enum test { T_LATENCY, T_BANDWIDTH, T_EARLY, T_LATE, T_BUSY, T_WINDOW, T_COUNT };
static const char *const test_names[T_COUNT] = {"latency", "bandwidth", "early",
						"late",	   "busy",	"window"};

#define WINDOW_MAX    1024 /* the library's outstanding sends (and receives) */
#define CAP_MIN_ITERS 10   /* --max-bytes never cuts a point below this */
static const char *const mode_names[] = {"push-pull", "push-all", "push-zero"};

struct opts {
	int tests[T_COUNT]; /* which tests to run */
	int modes[3];	    /* which modes to run */
	uint64_t sizes[PP_PERF_MAX_VALUES];
	int nsizes;
	uint64_t btp1[PP_PERF_MAX_VALUES], btp2[PP_PERF_MAX_VALUES];
	int nbtp1, nbtp2;	   /* 0: library default */
	unsigned iters, warmup;	   /* measured and discarded iterations */
	long compute_x, compute_y; /* -1: the paper's value for the test */
	const char *predict;	   /* predictor name or NULL */
	const char *csv;	   /* CSV file or NULL */
	int json;		   /* --json: a JSON document on stdout, no table */
	const char *config;	   /* extra pp_init settings */
	enum pp_perf_clock clock;
	int check;	     /* verify every received byte */
	uint64_t poll;	     /* early/late: NOPs between pp_progress calls (0: none) */
	uint64_t compute_us; /* busy: the sender's compute, microseconds */
	unsigned window;     /* window: sends in flight per iteration */
	uint64_t max_bytes;  /* bytes rank 0 sends per point at most (0: no cap) */
};

static void usage(FILE *f)
{
	fputs("usage: pp_pingpong [options]   (run 2 ranks, e.g. pprun -n 2 pp_pingpong ...)\n"
	      "  --test LIST        latency,bandwidth,early,late,busy,window (default latency)\n"
	      "  --mode LIST        push-pull,push-all,push-zero or all (default push-pull)\n"
	      "  --sizes SPEC       message sizes: V | V,V,... | A:B[:xF|:+S] with k/m/g\n"
	      "                     suffixes (default 0:1m:x4)\n"
	      "  --btp1 SPEC        BTP(1) values to sweep, same syntax (default: library's)\n"
	      "  --btp2 SPEC        BTP(2) values to sweep\n"
	      "  --iters N          measured iterations per point (default 1000)\n"
	      "  --warmup N         discarded iterations first (default 10)\n"
	      "  --compute-x N      NOPs for x (default: early 500000, late 100000)\n"
	      "  --compute-y N      NOPs for y (default: early 100000, late 300000)\n"
	      "  --predict NAME     receive predictor (or off)\n"
	      "  --poll N           early/late: call pp_progress every N NOPs of the compute\n"
	      "                     loops (default 0: the paper's loops, no calls); models\n"
	      "                     asynchronous progress, the polling is not counted as\n"
	      "                     compute\n"
	      "  --compute-us N     busy: the sender computes N us (default 2000)\n"
	      "  --window W         window: messages in flight per iteration, 1..1024\n"
	      "                     (default 64). Rank 1 posts W receives, then sends a\n"
	      "                     0-byte go message; rank 0 starts the clock when the go\n"
	      "                     is in (so every receive is posted before the first\n"
	      "                     send), sends W messages with pp_isend, waits for them\n"
	      "                     and for rank 1's 4-byte reply (sent when all W are in).\n"
	      "                     bw = W * SIZE / iteration time; also messages/s\n"
	      "  --max-bytes B      cap each point at B bytes sent by rank 0 (k/m/g; W*SIZE\n"
	      "                     per window iteration, SIZE per iteration otherwise):\n"
	      "                     fewer iterations for large sizes, never below 10 (nor\n"
	      "                     above --iters), warm-up cut in proportion, at least 1\n"
	      "                     (default: no cap); rows give the iterations run\n"
	      "  --config STR       more pp_init settings, key=value,...\n"
	      "  --clock KIND       auto | tsc | mono (default auto)\n"
	      "  --check            verify every byte received (window: each of the W\n"
	      "                     messages has a buffer and a byte pattern of its own)\n"
	      "  --csv FILE         also write CSV rows to FILE\n"
	      "  --json             print one JSON document instead of the table (the same\n"
	      "                     results: one object per row, counters included)\n"
	      "  -h, --help         this text\n"
	      "Latencies are one-way, in microseconds (bandwidth rows: the transfer time;\n"
	      "window rows: the iteration time); bandwidth in MB/s (10^6 B/s).\n",
	      f);
}

/* --- what rank 0 shows ------------------------------------------------- */

/* The progress line: off, or "[i/N] what" on stderr, ended by '\r' so that
 * pprun can show it too (PPRUN_TTY); \033[K clears the rest of the line. */
static struct {
	int on;		  /* stderr (or pprun's) is a terminal, and we are rank 0 */
	int shown;	  /* a progress line is on the screen */
	unsigned i, n;	  /* measurement under way, of how many */
	struct pp_json j; /* --json: the document on stdout */
} ui;

static void progress_clear(void)
{
	if (ui.shown) {
		fputs("\033[K\r", stderr);
		fflush(stderr);
		ui.shown = 0;
	}
}

static void progress(const char *test, const char *mode, long btp1, long btp2, uint64_t size)
{
	ui.i++;
	if (!ui.on)
		return;
	fprintf(stderr, "pp_pingpong: [%u/%u] %s %s", ui.i, ui.n, test, mode);
	if (btp1 >= 0)
		fprintf(stderr, " btp1=%ld", btp1);
	if (btp2 >= 0)
		fprintf(stderr, " btp2=%ld", btp2);
	fprintf(stderr, " %" PRIu64 " B\033[K\r", size);
	fflush(stderr);
	ui.shown = 1;
}

static void die(const char *what, int err)
{
	progress_clear();
	fprintf(stderr, "pp_pingpong: %s: %s\n", what, pp_strerror(err));
	exit(1);
}

static int pick(const char *list, const char *const *names, int n, int *chosen)
{
	char *copy = strdup(list), *save = NULL;
	int any = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k;
		if (strcmp(t, "all") == 0) {
			for (k = 0; k < n; k++)
				chosen[k] = 1;
			any = 1;
			continue;
		}
		for (k = 0; k < n && strcmp(t, names[k]) != 0; k++)
			;
		if (k == n) {
			fprintf(stderr, "pp_pingpong: unknown name '%s'\n", t);
			free(copy);
			return -EINVAL;
		}
		chosen[k] = any = 1;
	}
	free(copy);
	return any ? 0 : -EINVAL;
}

static int list_opt(const char *name, const char *spec, uint64_t *out)
{
	int n = pp_perf_parse_list(spec, out, PP_PERF_MAX_VALUES);
	if (n <= 0) {
		fprintf(stderr, "pp_pingpong: bad %s '%s' (see --help)\n", name, spec);
		exit(2);
	}
	return n;
}

static long num_opt(const char *name, const char *v, long lo, long hi)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || *end || !*v || x < lo || x > hi) {
		fprintf(stderr, "pp_pingpong: bad %s '%s' (want %ld..%ld)\n", name, v, lo, hi);
		exit(2);
	}
	return x;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"test", required_argument, NULL, 't'},
	    {"mode", required_argument, NULL, 'm'},
	    {"sizes", required_argument, NULL, 's'},
	    {"btp1", required_argument, NULL, '1'},
	    {"btp2", required_argument, NULL, '2'},
	    {"iters", required_argument, NULL, 'i'},
	    {"warmup", required_argument, NULL, 'w'},
	    {"compute-x", required_argument, NULL, 'x'},
	    {"compute-y", required_argument, NULL, 'y'},
	    {"predict", required_argument, NULL, 'p'},
	    {"config", required_argument, NULL, 'c'},
	    {"clock", required_argument, NULL, 'k'},
	    {"check", no_argument, NULL, 'C'},
	    {"poll", required_argument, NULL, 'P'},
	    {"compute-us", required_argument, NULL, 'U'},
	    {"window", required_argument, NULL, 'W'},
	    {"max-bytes", required_argument, NULL, 'B'},
	    {"csv", required_argument, NULL, 'o'},
	    {"json", no_argument, NULL, 'J'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static const char *const clocks[] = {"auto", "tsc", "mono"};
	const char *tests = "latency", *modes = "push-pull", *sizes = "0:1m:x4";
	int c, k[3] = {0};

	memset(o, 0, sizeof(*o));
	o->iters = 1000;
	o->warmup = 10;
	o->compute_x = o->compute_y = -1;
	o->compute_us = 2000;
	o->window = 64;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			tests = optarg;
			break;
		case 'm':
			modes = optarg;
			break;
		case 's':
			sizes = optarg;
			break;
		case '1':
			o->nbtp1 = list_opt("--btp1", optarg, o->btp1);
			break;
		case '2':
			o->nbtp2 = list_opt("--btp2", optarg, o->btp2);
			break;
		case 'i':
			o->iters = (unsigned)num_opt("--iters", optarg, 1, 10000000);
			break;
		case 'w':
			o->warmup = (unsigned)num_opt("--warmup", optarg, 0, 1000000);
			break;
		case 'x':
			o->compute_x = num_opt("--compute-x", optarg, 0, 1000000000);
			break;
		case 'y':
			o->compute_y = num_opt("--compute-y", optarg, 0, 1000000000);
			break;
		case 'p':
			o->predict = optarg;
			break;
		case 'c':
			o->config = optarg;
			break;
		case 'C':
			o->check = 1;
			break;
		case 'P':
			o->poll = (uint64_t)num_opt("--poll", optarg, 0, 1000000000);
			break;
		case 'U':
			o->compute_us = (uint64_t)num_opt("--compute-us", optarg, 1, 10000000);
			break;
		case 'W':
			o->window = (unsigned)num_opt("--window", optarg, 1, WINDOW_MAX);
			break;
		case 'B': {
			uint64_t v[PP_PERF_MAX_VALUES];
			if (pp_perf_parse_list(optarg, v, PP_PERF_MAX_VALUES) != 1 || v[0] == 0 ||
			    strchr(optarg, ':')) {
				fprintf(stderr,
					"pp_pingpong: bad --max-bytes '%s' (one byte count above "
					"0, k/m/g suffixes)\n",
					optarg);
				exit(2);
			}
			o->max_bytes = v[0];
			break;
		}
		case 'o':
			o->csv = optarg;
			break;
		case 'J':
			o->json = 1;
			break;
		case 'k':
			if (pick(optarg, clocks, 3, k))
				exit(2);
			o->clock = k[1]	  ? PP_PERF_CLOCK_TSC
				   : k[2] ? PP_PERF_CLOCK_MONO
					  : PP_PERF_CLOCK_AUTO;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pp_pingpong: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
	if (pick(tests, test_names, T_COUNT, o->tests) || pick(modes, mode_names, 3, o->modes)) {
		fprintf(stderr, "pp_pingpong: bad --test or --mode (see --help)\n");
		exit(2);
	}
	o->nsizes = list_opt("--sizes", sizes, o->sizes);
	for (int i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > (1ull << 30)) {
			fprintf(stderr, "pp_pingpong: sizes above 1 GiB are not supported\n");
			exit(2);
		}
}

/* --- one measurement ---------------------------------------------------- */

/* The predictor and staging counters reported for early/late, in order. */
#define NCTR 8
static const char *const ctr_names[NCTR] = {"pred_predictions", "pred_hits",	"pred_misses",
					    "spec_pulls",	"bytes_staged", "copies_avoided",
					    "pages_remapped",	"evictions"};

static void ctr_get(pp_ctx *ctx, uint64_t v[NCTR])
{
	struct pp_stats s;
	int rc = pp_get_stats(ctx, &s);
	if (rc)
		die("pp_get_stats", rc);
	const uint64_t x[NCTR] = {s.pred_predictions, s.pred_hits,    s.pred_misses,
				  s.spec_pulls,	      s.bytes_staged, s.copies_avoided,
				  s.pages_remapped,   s.evictions};
	memcpy(v, x, sizeof(x));
}

struct run {
	pp_ctx *ctx;
	int rank;
	const struct opts *o;
	uint8_t *sbuf, *rbuf; /* page-aligned, as in the paper */
	double *samples;      /* o->iters of them, microseconds */
	double *compute;      /* early/late: own loop timings, 2 per iteration */
	double *compute_peer; /* early/late: the pong's, on the ping */
	uint64_t ctr[NCTR];   /* early/late: counters of the measured pass, both ranks */
	int have_ctr;	      /* ctr is valid for the row being written */
	uint64_t x, y;	      /* early/late: the compute loops, NOPs */
	double x_us, y_us;    /* ... and their timed length */
};

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 131u + seed);
}

static void xsend(struct run *r, size_t len, int tag)
{
	int rc = pp_send(r->ctx, r->sbuf, len, !r->rank, tag);
	if (rc)
		die("pp_send", rc);
}

static void xrecv(struct run *r, size_t len, int tag, unsigned seed)
{
	pp_status st;
	int rc = pp_recv(r->ctx, r->rbuf, len, !r->rank, tag, &st);
	if (rc)
		die("pp_recv", rc);
	if (st.len != len) {
		fprintf(stderr, "pp_pingpong: got %zu bytes, want %zu\n", st.len, len);
		exit(1);
	}
	if (r->o->check) {
		for (size_t i = 0; i < len; i++)
			if (r->rbuf[i] != (uint8_t)(i * 131u + seed)) {
				fprintf(stderr, "pp_pingpong: byte %zu of %zu corrupt\n", i, len);
				exit(1);
			}
	}
}

static void xbarrier(struct run *r)
{
	int rc = pp_barrier(r->ctx);
	if (rc)
		die("pp_barrier", rc);
}

/* Median time of compute(n) over a few runs, in microseconds. */
static double time_compute(uint64_t n)
{
	double t[9];
	for (int i = 0; i < 9; i++) {
		uint64_t t0 = pp_perf_now();
		pp_perf_compute(n);
		t[i] = pp_perf_ticks_to_us(pp_perf_now() - t0);
	}
	struct pp_perf_summary s;
	pp_perf_summarise(t, 9, &s);
	return s.median;
}

/* Ping-pong of len bytes, iters times; samples are one-way latencies. */
static void latency(struct run *r, size_t len, unsigned iters, int keep)
{
	xbarrier(r);
	for (unsigned i = 0; i < iters; i++) {
		uint64_t t0 = pp_perf_now();
		if (r->rank == 0) {
			xsend(r, len, 1);
			xrecv(r, len, 2, 1);
		} else {
			xrecv(r, len, 1, 0);
			xsend(r, len, 2);
		}
		if (keep)
			r->samples[i] = pp_perf_ticks_to_us(pp_perf_now() - t0) / 2;
	}
}

/* Send len bytes, get 4 back; samples are the transfer times. */
static void bandwidth(struct run *r, size_t len, unsigned iters, int keep)
{
	xbarrier(r);
	for (unsigned i = 0; i < iters; i++) {
		uint64_t t0 = pp_perf_now();
		if (r->rank == 0) {
			xsend(r, len, 3);
			xrecv(r, 4, 4, 1);
		} else {
			xrecv(r, len, 3, 0);
			xsend(r, 4, 4);
		}
		if (keep)
			r->samples[i] = pp_perf_ticks_to_us(pp_perf_now() - t0);
	}
}

/* Where window message k of len bytes lives: one buffer for all W, as in
 * osu_bw, except under --check, where each message has a slot of its own
 * and its own byte pattern, so a byte that lands in the wrong message is
 * seen too. */
static size_t slot_off(const struct run *r, size_t len, unsigned k)
{
	return r->o->check ? k * ((len + 63) & ~(size_t)63) : 0;
}

static void xwait(pp_req **q, size_t len)
{
	pp_status st;
	int rc = pp_wait(q, &st);
	if (rc)
		die("pp_wait", rc);
	if (st.len != len) {
		fprintf(stderr, "pp_pingpong: got %zu bytes, want %zu\n", st.len, len);
		exit(1);
	}
}

/* osu_bw's windowed bandwidth with the receives posted first (see the top
 * of the file); samples are rank 0's iteration times. */
static void window(struct run *r, size_t len, unsigned iters, int keep)
{
	unsigned w = r->o->window;
	pp_req *q[WINDOW_MAX];
	int rc;

	if (r->rank == 0 && r->o->check)
		for (unsigned k = 0; k < w; k++)
			fill(r->sbuf + slot_off(r, len, k), len, k);
	if (r->rank == 1)
		fill(r->sbuf, 4, 1); /* the reply, as --check expects it */
	xbarrier(r);
	for (unsigned i = 0; i < iters; i++) {
		if (r->rank == 0) {
			xrecv(r, 0, 21, 0); /* go: rank 1's receives are posted */
			uint64_t t0 = pp_perf_now();
			for (unsigned k = 0; k < w; k++)
				if ((rc = pp_isend(r->ctx, r->sbuf + slot_off(r, len, k), len, 1,
						   20, &q[k])))
					die("pp_isend", rc);
			for (unsigned k = 0; k < w; k++)
				xwait(&q[k], len);
			xrecv(r, 4, 22, 1);
			if (keep)
				r->samples[i] = pp_perf_ticks_to_us(pp_perf_now() - t0);
		} else {
			if (r->o->check) /* what an iteration leaves must not pass */
				memset(r->rbuf, 0, slot_off(r, len, w));
			for (unsigned k = 0; k < w; k++)
				if ((rc = pp_irecv(r->ctx, r->rbuf + slot_off(r, len, k), len, 0,
						   20, &q[k])))
					die("pp_irecv", rc);
			xsend(r, 0, 21);
			for (unsigned k = 0; k < w; k++)
				xwait(&q[k], len);
			for (unsigned k = 0; r->o->check && k < w; k++) {
				const uint8_t *b = r->rbuf + slot_off(r, len, k);
				for (size_t j = 0; j < len; j++)
					if (b[j] != (uint8_t)(j * 131u + k)) {
						fprintf(
						    stderr,
						    "pp_pingpong: window message %u of %u: byte "
						    "%zu of %zu corrupt\n",
						    k, w, j, len);
						exit(1);
					}
			}
			xsend(r, 4, 22);
		}
	}
}

/* n NOPs; with --poll, pp_progress between chunks of o->poll NOPs. Returns
 * the microseconds spent in NOPs only: progress is not compute. */
static double compute_loop(struct run *r, uint64_t n)
{
	uint64_t t0 = pp_perf_now();
	if (!r->o->poll) {
		pp_perf_compute(n);
		return pp_perf_ticks_to_us(pp_perf_now() - t0);
	}
	uint64_t nops = 0;
	for (uint64_t done = 0; done < n;) {
		uint64_t k = n - done < r->o->poll ? n - done : r->o->poll;
		uint64_t t = pp_perf_now();
		pp_perf_compute(k);
		nops += pp_perf_now() - t;
		done += k;
		pp_progress(r->ctx);
	}
	return pp_perf_ticks_to_us(nops);
}

/* The paper's Figure 5. Both ranks time their own compute loops in every
 * iteration; after the measured loop the pong sends its timings over, and
 * the ping takes the compute on the critical path off each iteration:
 *   ping: x_p, send, y_p, receive      pong: y_q, receive, x_q, send
 *   critical = max(x_p + y_p, max(x_p, y_q) + x_q)
 * The sample is (iteration - critical) / 2, a per-message latency. Loops are
 * timed, not assumed: a NOP loop runs slower while the sibling hyperthread
 * polls. */
static void early_late(struct run *r, size_t len, unsigned iters, int keep, uint64_t x, uint64_t y)
{
	double *mine = r->compute; /* x then y, per iteration, microseconds */
	uint64_t c0[NCTR], c1[NCTR], peer[NCTR];
	ctr_get(r->ctx, c0);
	for (unsigned i = 0; i < iters; i++) {
		xbarrier(r);
		uint64_t t0 = pp_perf_now();
		if (r->rank == 0) {
			mine[2 * i] = compute_loop(r, x);
			xsend(r, len, 5);
			mine[2 * i + 1] = compute_loop(r, y);
			xrecv(r, len, 6, 1);
			if (keep) /* samples has --iters slots, the warm-up may run more */
				r->samples[i] = pp_perf_ticks_to_us(pp_perf_now() - t0);
		} else {
			mine[2 * i + 1] = compute_loop(r, y);
			xrecv(r, len, 5, 0);
			mine[2 * i] = compute_loop(r, x);
			xsend(r, len, 6);
		}
	}
	if (!keep)
		return;
	ctr_get(r->ctx, c1);
	for (int k = 0; k < NCTR; k++)
		c1[k] -= c0[k];
	/* Outside the measurement: the pong's loop timings and counters go to
	 * the ping. */
	size_t bytes = 2 * iters * sizeof(double);
	int rc = r->rank == 0 ? pp_recv(r->ctx, r->compute_peer, bytes, 1, 7, NULL)
			      : pp_send(r->ctx, mine, bytes, 0, 7);
	if (rc)
		die("exchanging compute timings", rc);
	rc = r->rank == 0 ? pp_recv(r->ctx, peer, sizeof(peer), 1, 8, NULL)
			  : pp_send(r->ctx, c1, sizeof(c1), 0, 8);
	if (rc)
		die("exchanging counters", rc);
	if (r->rank != 0)
		return;
	for (int k = 0; k < NCTR; k++)
		r->ctr[k] = c1[k] + peer[k];
	r->have_ctr = 1;
	for (unsigned i = 0; i < iters; i++) {
		double xp = mine[2 * i], yp = mine[2 * i + 1];
		double xq = r->compute_peer[2 * i], yq = r->compute_peer[2 * i + 1];
		double a = xp + yp, b = (xp > yq ? xp : yq) + xq;
		double rest = r->samples[i] - (a > b ? a : b);
		r->samples[i] = rest > 0 ? rest / 2 : 0;
	}
}

/* Compute us microseconds by the clock, without pp_* calls. */
static void busy_wait_us(uint64_t us)
{
	uint64_t t0 = pp_perf_now();
	while (pp_perf_ticks_to_us(pp_perf_now() - t0) < (double)us)
		pp_perf_compute(1000);
}

/* The late receiver of a sender busy computing (see the top of the file).
 * Samples are rank 1's, sent to rank 0 after the loop. */
static void busy(struct run *r, size_t len, unsigned iters, int keep)
{
	uint8_t go = 1;
	int rc;
	for (unsigned i = 0; i < iters; i++) {
		struct pp_stats s0, s;
		pp_get_stats(r->ctx, &s0); /* before: the barrier may take pushes in */
		xbarrier(r);
		if (r->rank == 0) {
			pp_req *q;
			if ((rc = pp_isend(r->ctx, r->sbuf, len, 1, 10, &q)))
				die("pp_isend", rc);
			/* Progress until the receiver has the pushes. */
			if ((rc = pp_recv(r->ctx, &go, 1, 1, 11, NULL)))
				die("pp_recv", rc);
			busy_wait_us(r->o->compute_us);
			if ((rc = pp_wait(&q, NULL)))
				die("pp_wait", rc);
		} else {
			/* Pushed bytes with the default BTP1 + BTP2 (other BTPs:
			 * the receive may be posted early). */
			uint64_t push = len < 760 ? len : 760;
			do {
				pp_progress(r->ctx);
				pp_get_stats(r->ctx, &s);
			} while (s.bytes_rx - s0.bytes_rx < push);
			if ((rc = pp_send(r->ctx, &go, 1, 0, 11)))
				die("pp_send", rc);
			busy_wait_us(r->o->compute_us / 2);
			uint64_t t0 = pp_perf_now();
			xrecv(r, len, 10, 0);
			if (keep)
				r->samples[i] = pp_perf_ticks_to_us(pp_perf_now() - t0);
		}
	}
	if (!keep)
		return;
	size_t bytes = iters * sizeof(double);
	rc = r->rank == 0 ? pp_recv(r->ctx, r->samples, bytes, 1, 12, NULL)
			  : pp_send(r->ctx, r->samples, bytes, 0, 12);
	if (rc)
		die("exchanging busy samples", rc);
}

/* --- one configuration: a mode and a BTP pair ------------------------- */

struct point {
	const char *mode; /* mode name */
	long btp1, btp2;  /* -1: the library's default */
	FILE *csv;	  /* CSV output or NULL */
};

/* What a row reports besides the latency statistics. */
struct figures {
	unsigned iters, warmup; /* run for this point (--max-bytes may cut them) */
	unsigned window;	/* window: messages per iteration; else 0 */
	double bw;		/* MB/s, or 0 when the test has none */
	double msgs;		/* window: messages per second; else 0 */
};

/* One row as a JSON object in the results array. */
static void emit_json(const struct run *r, const struct point *p, const char *test, uint64_t size,
		      const struct pp_perf_summary *s, const struct figures *f)
{
	struct pp_json *j = &ui.j;
	pp_json_object(j, NULL);
	pp_json_str(j, "test", test);
	pp_json_str(j, "mode", p->mode);
	if (p->btp1 >= 0)
		pp_json_i64(j, "btp1", p->btp1);
	else
		pp_json_null(j, "btp1");
	if (p->btp2 >= 0)
		pp_json_i64(j, "btp2", p->btp2);
	else
		pp_json_null(j, "btp2");
	pp_json_str(j, "predict", r->o->predict ? r->o->predict : "off");
	pp_json_u64(j, "size", size);
	pp_json_u64(j, "iters", f->iters);
	pp_json_num(j, "lat_us_mid80", s->mid80);
	pp_json_num(j, "lat_us_median", s->median);
	pp_json_num(j, "lat_us_p99", s->p99);
	if (f->bw > 0)
		pp_json_num(j, "bw_MBps", f->bw);
	else
		pp_json_null(j, "bw_MBps");
	if (f->window) {
		pp_json_u64(j, "window", f->window);
		pp_json_num(j, "msgs_per_s", f->msgs);
	}
	if (strcmp(test, "early") == 0 || strcmp(test, "late") == 0) {
		pp_json_object(j, "compute");
		pp_json_u64(j, "x_nops", r->x);
		pp_json_u64(j, "y_nops", r->y);
		pp_json_num(j, "x_us", r->x_us);
		pp_json_num(j, "y_us", r->y_us);
		pp_json_close(j);
	} else if (strcmp(test, "busy") == 0) {
		pp_json_u64(j, "compute_us", r->o->compute_us);
	}
	if (r->have_ctr) {
		pp_json_object(j, "counters");
		for (int k = 0; k < NCTR; k++)
			pp_json_u64(j, ctr_names[k], r->ctr[k]);
		pp_json_close(j);
	} else {
		pp_json_null(j, "counters");
	}
	pp_json_close(j);
	fflush(stdout);
}

static void emit(const struct run *r, const struct point *p, const char *test, uint64_t size,
		 const struct pp_perf_summary *s, const struct figures *f)
{
	char b1[24] = "-", b2[24] = "-", bws[24] = "-", msgs[24] = "-";
	const char *predict = r->o->predict ? r->o->predict : "off";
	if (p->btp1 >= 0)
		snprintf(b1, sizeof(b1), "%ld", p->btp1);
	if (p->btp2 >= 0)
		snprintf(b2, sizeof(b2), "%ld", p->btp2);
	if (f->bw > 0)
		snprintf(bws, sizeof(bws), "%.1f", f->bw);
	if (f->msgs > 0)
		snprintf(msgs, sizeof(msgs), "%.0f", f->msgs);
	if (r->o->json) {
		emit_json(r, p, test, size, s, f);
	} else {
		progress_clear();
		printf("%-9s %-9s %6s %6s %10" PRIu64 " %12.2f %10.2f %10.2f %10s %11s\n", test,
		       p->mode, b1, b2, size, s->mid80, s->median, s->p99, bws, msgs);
		if (f->iters != r->o->iters)
			printf("#   %u iterations (--max-bytes), %u warm-up\n", f->iters,
			       f->warmup);
		if (r->have_ctr) {
			printf("#   counters, both ranks:");
			for (int k = 0; k < NCTR; k++)
				printf(" %s %" PRIu64, ctr_names[k], r->ctr[k]);
			printf("\n");
		}
		fflush(stdout);
	}
	if (p->csv) {
		fprintf(p->csv, "%s,%s,%s,%s,%s,%" PRIu64 ",%u,%.3f,%.3f,%.3f,%s", test, p->mode,
			b1, b2, predict, size, f->iters, s->mid80, s->median, s->p99,
			f->bw > 0 ? bws : "");
		for (int k = 0; k < NCTR; k++)
			if (r->have_ctr)
				fprintf(p->csv, ",%" PRIu64, r->ctr[k]);
			else
				fputc(',', p->csv);
		if (f->window)
			fprintf(p->csv, ",%u,%s", f->window, f->msgs > 0 ? msgs : "");
		else
			fputs(",,", p->csv);
		fputc('\n', p->csv);
	}
}

/* --max-bytes: the measured and warm-up iterations of a point whose
 * iterations each send per bytes from rank 0. Both ranks compute the same. */
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

/* Run one test over every size. lat4 is the one-way 4-byte latency. */
static void run_test(struct run *r, const struct point *p, enum test t, double lat4)
{
	const struct opts *o = r->o;
	uint64_t x = 0, y = 0;

	if (t == T_EARLY || t == T_LATE) {
		x = o->compute_x >= 0 ? (uint64_t)o->compute_x : t == T_EARLY ? 500000 : 100000;
		y = o->compute_y >= 0 ? (uint64_t)o->compute_y : t == T_EARLY ? 100000 : 300000;
		r->x = x;
		r->y = y;
		if (r->rank == 0) {
			r->x_us = time_compute(x);
			r->y_us = time_compute(y);
		}
		if (r->rank == 0 && !o->json) {
			progress_clear();
			printf("# %s: x=%" PRIu64 " y=%" PRIu64 " NOPs (x %.1f us, y %.1f us)\n",
			       test_names[t], x, y, r->x_us, r->y_us);
		}
	}
	if (t == T_BUSY && r->rank == 0 && !o->json) {
		progress_clear();
		printf("# busy: the sender computes %" PRIu64
		       " us; receiver's post-to-completion\n",
		       o->compute_us);
	}
	for (int si = 0; si < o->nsizes; si++) {
		size_t len = o->sizes[si];
		struct pp_perf_summary s;
		struct figures f = {.iters = o->iters, .warmup = o->warmup};

		if (t == T_WINDOW)
			f.window = o->window;
		cap_iters(o, (uint64_t)len * (f.window ? f.window : 1), &f.iters, &f.warmup);
		fill(r->sbuf, len, (unsigned)r->rank);
		if (r->rank == 0)
			progress(test_names[t], p->mode, p->btp1, p->btp2, len);
		for (int pass = 0; pass < 2; pass++) { /* warm-up, then measured */
			unsigned n = pass ? f.iters : f.warmup;
			if (t == T_LATENCY)
				latency(r, len, n, pass);
			else if (t == T_BANDWIDTH)
				bandwidth(r, len, n, pass);
			else if (t == T_BUSY)
				busy(r, len, n, pass);
			else if (t == T_WINDOW)
				window(r, len, n, pass);
			else
				early_late(r, len, n, pass, x, y);
		}
		pp_perf_summarise(r->samples, f.iters, &s);
		r->have_ctr = t == T_EARLY || t == T_LATE;
		if (t == T_BANDWIDTH && s.mid80 > lat4)
			f.bw = (double)len / (s.mid80 - lat4);
		if (t == T_WINDOW && s.mid80 > 0) {
			f.bw = (double)len * f.window / s.mid80;
			f.msgs = f.window * 1e6 / s.mid80;
		}
		if (r->rank == 0)
			emit(r, p, test_names[t], len, &s, &f);
	}
}

/* Push-Pull with the library's BTPs fits them to the path (pp_stats): say
 * what a long message pushed at the end of the point, and what the path
 * measured, as a comment of the table (the writer's side only). */
static void btp_in_use(const struct run *r, const struct point *p)
{
	struct pp_stats s;
	if (r->rank != 0 || r->o->json || strcmp(p->mode, "push-pull") != 0 || p->btp1 >= 0 ||
	    p->btp2 >= 0 || pp_get_stats(r->ctx, &s))
		return;
	printf("# push-pull, BTP fitted to the path: a long message pushes %llu bytes unasked "
	       "(least round trip %.1f us, of a PULL %.1f us, rate %.0f MB/s; %llu messages "
	       "pushed more than BTP(1)+BTP(2); %llu waited %.1f us on average for their PULL)\n",
	       (unsigned long long)s.push_now, s.path_rtt_ns / 1e3, s.path_pull_rtt_ns / 1e3,
	       s.path_rate / 1e6, (unsigned long long)s.pushes_fitted,
	       (unsigned long long)s.pull_waits,
	       s.pull_waits ? (double)s.pull_wait_ns / (double)s.pull_waits / 1e3 : 0.0);
}

static void run_point(struct run *r, const struct point *p)
{
	const struct opts *o = r->o;
	char cfg[512];
	int n = snprintf(cfg, sizeof(cfg), "mode=%s", p->mode), rc;

	if (p->btp1 >= 0)
		n += snprintf(cfg + n, sizeof(cfg) - n, ",btp1=%ld", p->btp1);
	if (p->btp2 >= 0)
		n += snprintf(cfg + n, sizeof(cfg) - n, ",btp2=%ld", p->btp2);
	if (o->predict)
		n += snprintf(cfg + n, sizeof(cfg) - n, ",predict=%s", o->predict);
	if (o->config)
		snprintf(cfg + n, sizeof(cfg) - n, ",%s", o->config);
	if ((rc = pp_init(&r->ctx, cfg)))
		die("pp_init", rc);
	r->rank = pp_rank(r->ctx);
	if (pp_size(r->ctx) != 2) {
		fprintf(stderr, "pp_pingpong: needs exactly 2 ranks, the job has %d\n",
			pp_size(r->ctx));
		exit(2);
	}
	double lat4 = 0; /* the bandwidth test's correction, measured now */
	if (o->tests[T_BANDWIDTH]) {
		struct pp_perf_summary s;
		fill(r->sbuf, 4, (unsigned)r->rank); /* what --check expects */
		latency(r, 4, o->warmup, 0);
		latency(r, 4, o->iters, 1);
		pp_perf_summarise(r->samples, o->iters, &s);
		lat4 = s.mid80;
	}
	for (int t = 0; t < T_COUNT; t++)
		if (o->tests[t])
			run_test(r, p, (enum test)t, lat4);
	btp_in_use(r, p);
	if ((rc = pp_finalize(r->ctx)))
		die("pp_finalize", rc);
}

/* --- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct opts o;
	parse(argc, argv, &o);
	if (pp_perf_clock_init(o.clock)) {
		fprintf(stderr, "pp_pingpong: --clock tsc: no invariant TSC on this CPU\n");
		return 2;
	}

	size_t maxlen = 4;
	for (int i = 0; i < o.nsizes; i++)
		if (o.sizes[i] > maxlen)
			maxlen = o.sizes[i];
	size_t alloc = (maxlen + 4095) & ~(size_t)4095;
	if (o.tests[T_WINDOW] && o.check) /* a slot per message (slot_off) */
		alloc = (o.window * ((maxlen + 63) & ~(size_t)63) + 4095) & ~(size_t)4095;
	struct run r = {.o = &o};
	r.sbuf = aligned_alloc(4096, alloc);
	r.rbuf = aligned_alloc(4096, alloc);
	r.samples = calloc(o.iters, sizeof(double));
	r.compute = calloc(2 * (size_t)(o.iters > o.warmup ? o.iters : o.warmup), sizeof(double));
	r.compute_peer = calloc(2 * (size_t)o.iters, sizeof(double));
	if (!r.sbuf || !r.rbuf || !r.samples || !r.compute || !r.compute_peer)
		die("allocating buffers", -ENOMEM);

	/* Only rank 0 writes; PP_RANK says which we are before pp_init, or, in
	 * a job a PMIx launcher started (mpirun, srun), PMIX_RANK. */
	const char *env_rank = getenv("PP_RANK");
	if (!env_rank)
		env_rank = getenv("PMIX_RANK");
	int writer = !env_rank || strcmp(env_rank, "0") == 0;
	struct point p = {0};
	if (writer && o.csv) {
		if (!(p.csv = fopen(o.csv, "w"))) {
			perror(o.csv);
			return 2;
		}
		fputs("test,mode,btp1,btp2,predict,size,iters,lat_us_mid80,lat_us_median,"
		      "lat_us_p99,bw_MBps",
		      p.csv);
		for (int k = 0; k < NCTR; k++)
			fprintf(p.csv, ",%s", ctr_names[k]);
		fputs(",window,msgs_per_s\n", p.csv);
	}
	if (writer && o.json) {
		pp_json_begin(&ui.j, stdout, 2);
		pp_json_object(&ui.j, NULL);
		pp_json_str(&ui.j, "program", "pp_pingpong");
		pp_json_str(&ui.j, "clock", pp_perf_clock_name());
		pp_json_num(&ui.j, "ticks_per_us", pp_perf_ticks_per_us());
		pp_json_u64(&ui.j, "iters", o.iters);
		pp_json_u64(&ui.j, "warmup", o.warmup);
		pp_json_bool(&ui.j, "check", o.check);
		pp_json_str(&ui.j, "config", o.config);
		pp_json_object(&ui.j, "units");
		pp_json_str(&ui.j, "lat",
			    "us, one-way (bandwidth rows: transfer time; window "
			    "rows: iteration time)");
		pp_json_str(&ui.j, "msgs_per_s", "window rows: messages per second");
		pp_json_str(&ui.j, "bw", "MB/s (10^6 B/s)");
		pp_json_close(&ui.j);
		pp_json_array(&ui.j, "results");
		fflush(stdout);
	} else if (writer) {
		printf("# clock %s, %.1f ticks/us; latencies one-way in us (bandwidth rows: "
		       "transfer time; window rows: iteration time)\n",
		       pp_perf_clock_name(), pp_perf_ticks_per_us());
		if (o.tests[T_WINDOW])
			printf("# window: %u messages per iteration, receives posted first (a "
			       "0-byte go); bw = %u * size / iteration time\n",
			       o.window, o.window);
		printf("%-9s %-9s %6s %6s %10s %12s %10s %10s %10s %11s\n", "test", "mode", "btp1",
		       "btp2", "size", "lat_mid80", "median", "p99", "bw_MBps", "msgs_per_s");
	}
	/* The progress line: every measurement of the sweep is one row. */
	const char *ptty = getenv("PPRUN_TTY");
	ui.on = writer && (isatty(STDERR_FILENO) || (ptty && strcmp(ptty, "1") == 0));
	int ntests = 0, nmodes = 0;
	for (int t = 0; t < T_COUNT; t++)
		ntests += o.tests[t] != 0;
	for (int m = 0; m < 3; m++)
		nmodes += o.modes[m] != 0;
	ui.n = (unsigned)(nmodes * (o.nbtp1 ? o.nbtp1 : 1) * (o.nbtp2 ? o.nbtp2 : 1) * ntests *
			  o.nsizes);
	for (int m = 0; m < 3; m++) {
		if (!o.modes[m])
			continue;
		p.mode = mode_names[m];
		for (int i1 = 0; i1 < (o.nbtp1 ? o.nbtp1 : 1); i1++) {
			p.btp1 = o.nbtp1 ? (long)o.btp1[i1] : -1;
			for (int i2 = 0; i2 < (o.nbtp2 ? o.nbtp2 : 1); i2++) {
				p.btp2 = o.nbtp2 ? (long)o.btp2[i2] : -1;
				run_point(&r, &p);
			}
		}
	}
	progress_clear();
	if (writer && o.json && pp_json_finish(&ui.j)) {
		fprintf(stderr, "pp_pingpong: cannot write the JSON document\n");
		return 1;
	}
	if (p.csv && fclose(p.csv)) {
		perror(o.csv);
		return 1;
	}
	free(r.sbuf);
	free(r.rbuf);
	free(r.samples);
	free(r.compute);
	free(r.compute_peer);
	return 0;
}
