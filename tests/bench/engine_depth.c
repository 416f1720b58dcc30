/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine_depth: what a message costs the engines at a matching depth, as
 * the node-path issue's test measures it: rank 1 posts DEPTH receives with
 * distinct tags (each ignoring one protocol bit, as Open MPI's receives
 * do), rank 0 sends DEPTH 8-byte messages in the reverse order, so each
 * finds its receive at the far end of the queue; then the same with the
 * messages first and the receives after, in the reverse order too. Two
 * engines in one thread, intranode peers (as engine_pingpong), no clock in
 * the loop but the one around it: the protocol and matching work alone.
 *
 *   engine_depth [MAXDEPTH]    (default 65536; depths 1, 4, 16, ... up to it)
 *
 * Prints "RESULT depth <posted|unexpected> <depth> <ns per message>" (the
 * median of five samples, each about 64 K messages; every byte checked),
 * and per depth its time over the time at depth 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_proto_harness.h"
#include "samples.h"

#define SAMPLES	  5
#define PROTO_BIT (1ull << 62)
#define MAXD	  (1u << 16)

static struct pp_proto *e[2];
static uint8_t frame[9216];
static uint64_t now = 1000;
static uint64_t sbuf[MAXD], rbuf[MAXD];

static void die(const char *what)
{
	fprintf(stderr, "engine_depth: %s\n", what);
	exit(1);
}

/* Move frames both ways until neither engine has one. */
static void pump(void)
{
	for (int moved = 1; moved;) {
		moved = 0;
		for (int i = 0; i < 2; i++) {
			int len;
			while ((len = pp_proto_output_local(e[i], (uint32_t)(1 - i), frame,
							    sizeof(frame), now)) > 0) {
				if (pp_proto_input_local(e[1 - i], (uint32_t)i, frame, (size_t)len,
							 now))
					die("a frame was refused");
				moved = 1;
			}
			if (len < 0)
				die("output failed");
		}
	}
	now += 1000;
	for (int i = 0; i < 2; i++)
		pp_proto_handle_expiry(e[i], now);
}

/* Completions of both; returns rank 1's receives, their bytes checked. */
static uint32_t drain(void)
{
	struct pp_proto_cpl c;
	uint32_t got = 0;
	while (pp_proto_poll(e[0], &c))
		if (c.error)
			die("a send failed");
	while (pp_proto_poll(e[1], &c)) {
		if (c.error || c.len != 8 || c.tag != c.cookie || rbuf[c.cookie] != ~c.cookie)
			die("a receive completed wrong");
		got++;
	}
	return got;
}

static void post(uint32_t t)
{
	if (pp_proto_recv(e[1], 0, t, PROTO_BIT, &rbuf[t], 8, t))
		die("recv");
}

/* One pass at depth n: n messages matched the far end first. */
static void pass(uint32_t n, int unexpected)
{
	uint32_t sent = 0, done = 0;
	if (!unexpected)
		for (uint32_t t = 0; t < n; t++)
			post(t);
	while (done < n) {
		while (sent < n) {
			uint32_t t = n - 1 - sent;
			sbuf[t] = ~(uint64_t)t;
			if (pp_proto_send(e[0], 1, t, &sbuf[t], 8, t))
				break; /* the send pool is full: move frames */
			sent++;
		}
		pump();
		if (unexpected && sent == n && done == 0)
			for (uint32_t t = n; t-- > 0;)
				post(t);
		done += drain();
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: engine_depth [MAXDEPTH]\n"
		       "ns per 8-byte message between two intranode engines in one thread when\n"
		       "DEPTH receives are posted (or DEPTH messages wait unexpected) and each\n"
		       "message matches at the far end; depths 1, 4, 16, ... MAXDEPTH (default\n"
		       "and most 65536; unexpected up to 16384, what the pushed buffer holds).\n");
		return 0;
	}
	long max = argc > 1 ? atol(argv[1]) : MAXD;
	if (max < 1 || max > MAXD || argc > 2) {
		fprintf(stderr, "engine_depth: MAXDEPTH must be 1 to 65536 (try --help)\n");
		return 2;
	}
	/* The runtime's settings for node-mates, and its receive capacity. */
	struct pp_proto_conf c;
	node_mate_conf(&c);
	c.max_msgs = 1024;
	c.max_recvs = MAXD;
	c.pushbuf_bytes = 8u << 20;
	if (local_pair(e, &c, 16, 744))
		die("engine setup");
	static const char *const way[2] = {"posted", "unexpected"};
	for (int u = 0; u < 2; u++) {
		double base = 0;
		for (long n = 1; n <= max && (!u || n <= 16384); n *= 4) {
			int reps = (int)(65536 / n) > 0 ? (int)(65536 / n) : 1;
			double s[SAMPLES];
			for (int k = 0; k < SAMPLES; k++) {
				uint64_t t0 = bench_now_ns();
				for (int r = 0; r < reps; r++)
					pass((uint32_t)n, u);
				s[k] = (double)(bench_now_ns() - t0) / ((double)n * reps);
			}
			bench_sort(s, SAMPLES);
			if (n == 1)
				base = s[SAMPLES / 2];
			printf("RESULT depth %s %ld %.1f\n", way[u], n, s[SAMPLES / 2]);
			printf("# %s depth %ld: %.2f x depth 1\n", way[u], n,
			       s[SAMPLES / 2] / base);
		}
	}
	pp_proto_destroy(e[0]);
	pp_proto_destroy(e[1]);
	return 0;
}
