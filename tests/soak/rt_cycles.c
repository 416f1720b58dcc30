/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ranks that finalize and init again, many times, in one program: one thread
 * per rank, each with its own "sim:" port on a lossy in-memory link that
 * duplicates, reorders and delays frames (a clock thread drives the link's
 * time from the real clock, so a frame of one job can arrive after both ends
 * started the next). Every cycle uses the same job key and the same ports, so
 * only incarnations keep the jobs apart. Each rank sleeps a random time
 * before pp_init and before pp_finalize, so ranks leave and arrive at
 * different moments.
 *
 * A cycle: every rank sends every other rank messages of several sizes (the
 * tag and every byte depend on the cycle, the pair and the message), receives
 * theirs and checks every byte and status, then meets the others in a
 * barrier. Any error, mismatch or hang (timeout_ms) is a failure. Prints one
 * line of figures; exit status 0 only when every cycle of every rank passed.
 *
 * usage: rt_cycles [--ranks N] [--cycles C] [--loss P] [--dup P]
 *                  [--reorder P] [--delay-us U] [--offset-us U] [--seed S]
 *                  [--mode MODE]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pp.h"
#include "pp_log.h"
#include "sim/pp_sim.h"

#define MAXR 8

static const size_t sizes[] = {0, 8, 100, 1000, 3000, 70000};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct opts {
	int ranks, cycles;
	double loss, dup, reorder;
	unsigned delay_us, offset_us;
	uint64_t seed;
	const char *mode;
};

struct rank_run {
	int rank;	      /* who */
	const struct opts *o; /* the run */
	uint64_t rng;	      /* its own generator */
	int cycles_done;      /* cycles it finished */
	uint64_t msgs, bytes; /* messages and bytes it received and checked */
	char failure[256];    /* the first failure, empty when none */
	uint8_t *sbuf[MAXR][NSIZES], *rbuf[MAXR][NSIZES]; /* its buffers, kept across cycles */
};

static struct pp_sim_link *link_;
static char link_name[32];
static atomic_int stop_clock;

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The byte at i of message k from src to dst in cycle c. */
static uint8_t pat(int c, int src, int dst, size_t k, size_t i)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)c << 40 ^ (uint64_t)src << 32 ^
		     (uint64_t)dst << 24 ^ k << 16;
	return (uint8_t)(x >> 56 ^ x >> 17);
}

static int tag_of(int c, size_t k)
{
	return (c % 100000) * 16 + (int)k;
}

static void *clock_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_clock)) {
		pp_sim_link_set_time(link_, mono_ns());
		usleep(20);
	}
	return NULL;
}

#define FAIL(run, ...)                                                                             \
	do {                                                                                       \
		if (!(run)->failure[0])                                                            \
			snprintf((run)->failure, sizeof((run)->failure), __VA_ARGS__);             \
	} while (0)

/* One cycle's traffic and barrier; 0, or -1 with run->failure set. */
static int exchange(struct rank_run *run, pp_ctx *ctx, int c)
{
	const int n = run->o->ranks, me = run->rank;
	uint8_t *(*sbuf)[NSIZES] = run->sbuf, *(*rbuf)[NSIZES] = run->rbuf;
	pp_req *rr[MAXR][NSIZES], *sr[MAXR][NSIZES];
	int rc;
	for (int p = 0; p < n; p++)
		for (size_t k = 0; k < NSIZES && p != me; k++) {
			if (!sbuf[p][k]) {
				sbuf[p][k] = malloc(sizes[k] + 1);
				rbuf[p][k] = malloc(sizes[k] + 1);
			}
			for (size_t i = 0; i < sizes[k]; i++)
				sbuf[p][k][i] = pat(c, me, p, k, i);
			memset(rbuf[p][k], 0xEE, sizes[k] + 1);
			if ((rc = pp_irecv(ctx, rbuf[p][k], sizes[k] + 1, p, tag_of(c, k),
					   &rr[p][k]))) {
				FAIL(run, "cycle %d: pp_irecv from %d: %s", c, p, pp_strerror(rc));
				return -1;
			}
		}
	for (int p = 0; p < n; p++)
		for (size_t k = 0; k < NSIZES && p != me; k++)
			if ((rc =
				 pp_isend(ctx, sbuf[p][k], sizes[k], p, tag_of(c, k), &sr[p][k]))) {
				FAIL(run, "cycle %d: pp_isend to %d: %s", c, p, pp_strerror(rc));
				return -1;
			}
	for (int p = 0; p < n; p++)
		for (size_t k = 0; k < NSIZES && p != me; k++) {
			pp_status st;
			if ((rc = pp_wait(&sr[p][k], &st))) {
				FAIL(run, "cycle %d: send of %zu B to %d: %s", c, sizes[k], p,
				     pp_strerror(rc));
				return -1;
			}
			if ((rc = pp_wait(&rr[p][k], &st))) {
				FAIL(run, "cycle %d: receive of %zu B from %d: %s", c, sizes[k], p,
				     pp_strerror(rc));
				return -1;
			}
			if (st.source != p || st.tag != tag_of(c, k) || st.len != sizes[k]) {
				FAIL(run, "cycle %d: from %d got source %d tag %d len %zu", c, p,
				     st.source, st.tag, st.len);
				return -1;
			}
			for (size_t i = 0; i < sizes[k]; i++)
				if (rbuf[p][k][i] != pat(c, p, me, k, i)) {
					FAIL(run, "cycle %d: %zu B from %d: byte %zu wrong", c,
					     sizes[k], p, i);
					return -1;
				}
			if (rbuf[p][k][sizes[k]] != 0xEE) {
				FAIL(run, "cycle %d: %zu B from %d: wrote past the end", c,
				     sizes[k], p);
				return -1;
			}
			run->msgs++;
			run->bytes += sizes[k];
		}
	if ((rc = pp_barrier(ctx))) {
		FAIL(run, "cycle %d: pp_barrier: %s", c, pp_strerror(rc));
		return -1;
	}
	return 0;
}

static void *rank_main(void *arg)
{
	struct rank_run *run = arg;
	const struct opts *o = run->o;
	char cfg[512];
	snprintf(cfg, sizeof(cfg),
		 "rank=%d,size=%d,job=%s,node=n%d,dev=sim:%s/%d,mode=%s,timeout_ms=10000",
		 run->rank, o->ranks, link_name, run->rank, link_name, run->rank, o->mode);
	for (int c = 0; c < o->cycles; c++) {
		if (o->offset_us)
			usleep((useconds_t)(rnd(&run->rng) % o->offset_us));
		pp_ctx *ctx;
		int rc = pp_init(&ctx, cfg);
		if (rc) {
			FAIL(run, "cycle %d: pp_init: %s", c, pp_strerror(rc));
			return NULL;
		}
		int bad = exchange(run, ctx, c);
		if (o->offset_us)
			usleep((useconds_t)(rnd(&run->rng) % o->offset_us));
		rc = pp_finalize(ctx);
		if (bad)
			return NULL;
		if (rc) {
			FAIL(run, "cycle %d: pp_finalize: %s", c, pp_strerror(rc));
			return NULL;
		}
		run->cycles_done++;
	}
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rt_cycles [--ranks N] [--cycles C] [--loss P] [--dup P] [--reorder P]\n"
		   "                 [--delay-us U] [--offset-us U] [--seed S] [--mode MODE]\n"
		   "Ranks (threads) that pp_init and pp_finalize C times on one job key over a\n"
		   "lossy in-memory link, every byte checked. Defaults: 2 ranks, 20 cycles,\n"
		   "5%% loss, 1%% duplicates, 20%% reordered (by up to twice the delay),\n"
		   "2000 us delay, up to 3000 us offsets, seed 1, push-pull.\n");
}

static int parse_p(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (*end || v < 0 || v > 0.5)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.ranks = 2,
			 .cycles = 20,
			 .loss = 0.05,
			 .dup = 0.01,
			 .reorder = 0.2,
			 .delay_us = 2000,
			 .offset_us = 3000,
			 .seed = 1,
			 .mode = "push-pull"};
	static const struct option lo[] = {{"ranks", required_argument, NULL, 'n'},
					   {"cycles", required_argument, NULL, 'c'},
					   {"loss", required_argument, NULL, 'l'},
					   {"dup", required_argument, NULL, 'd'},
					   {"reorder", required_argument, NULL, 'r'},
					   {"delay-us", required_argument, NULL, 'D'},
					   {"offset-us", required_argument, NULL, 'o'},
					   {"seed", required_argument, NULL, 's'},
					   {"mode", required_argument, NULL, 'm'},
					   {"help", no_argument, NULL, 'h'},
					   {NULL, 0, NULL, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		int bad = 0;
		switch (ch) {
		case 'n':
			o.ranks = atoi(optarg);
			bad = o.ranks < 2 || o.ranks > MAXR;
			break;
		case 'c':
			o.cycles = atoi(optarg);
			bad = o.cycles < 1;
			break;
		case 'l':
			bad = parse_p(optarg, &o.loss);
			break;
		case 'd':
			bad = parse_p(optarg, &o.dup);
			break;
		case 'r':
			bad = parse_p(optarg, &o.reorder);
			break;
		case 'D':
			o.delay_us = (unsigned)atoi(optarg);
			break;
		case 'o':
			o.offset_us = (unsigned)atoi(optarg);
			break;
		case 's':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			o.mode = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (bad) {
			const char *name = "?";
			for (const struct option *x = lo; x->name; x++)
				if (x->val == ch)
					name = x->name;
			fprintf(stderr, "rt_cycles: bad value '%s' for --%s\n", optarg, name);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!getenv("PP_LOG"))
		pp_log_set_level("off"); /* lost peers are expected to be named in failures */
	struct pp_sim_conf sc = {.seed = o.seed,
				 .loss = o.loss,
				 .dup = o.dup,
				 .reorder = o.reorder,
				 .delay_ns = (uint64_t)o.delay_us * 1000,
				 .mtu = 1500};
	snprintf(link_name, sizeof(link_name), "cyc%d", (int)getpid());
	int rc = pp_sim_link_create(&link_, link_name, (unsigned)o.ranks, &sc);
	if (rc) {
		fprintf(stderr, "rt_cycles: cannot create the link: %s\n", strerror(-rc));
		return 1;
	}
	pthread_t clk, th[MAXR];
	struct rank_run runs[MAXR];
	pthread_create(&clk, NULL, clock_main, NULL);
	uint64_t t0 = mono_ns();
	for (int r = 0; r < o.ranks; r++) {
		runs[r] =
		    (struct rank_run){.rank = r, .o = &o, .rng = o.seed * 7919 + (uint64_t)r + 1};
		pthread_create(&th[r], NULL, rank_main, &runs[r]);
	}
	int failures = 0, cycles = o.cycles;
	uint64_t msgs = 0, bytes = 0;
	for (int r = 0; r < o.ranks; r++) {
		pthread_join(th[r], NULL);
		for (int p = 0; p < MAXR; p++)
			for (size_t k = 0; k < NSIZES; k++) {
				free(runs[r].sbuf[p][k]);
				free(runs[r].rbuf[p][k]);
			}
		if (runs[r].failure[0]) {
			failures++;
			fprintf(stderr, "rt_cycles: rank %d: %s\n", r, runs[r].failure);
		}
		if (runs[r].cycles_done < cycles)
			cycles = runs[r].cycles_done;
		msgs += runs[r].msgs;
		bytes += runs[r].bytes;
	}
	atomic_store(&stop_clock, 1);
	pthread_join(clk, NULL);
	struct pp_sim_stats st;
	pp_sim_link_stats(link_, &st);
	pp_sim_link_destroy(link_);
	printf("rt_cycles: %d ranks, %s, %d of %d cycles, %" PRIu64 " messages and %" PRIu64
	       " bytes checked, link: %" PRIu64 " frames, %" PRIu64 " lost, %" PRIu64
	       " duplicated, %" PRIu64 " reordered; %.1f s; failures: %d\n",
	       o.ranks, o.mode, cycles, o.cycles, msgs, bytes, st.sent, st.lost, st.duplicated,
	       st.reordered, (double)(mono_ns() - t0) / 1e9, failures);
	return failures ? 1 : 0;
}
