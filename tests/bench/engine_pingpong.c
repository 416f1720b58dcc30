/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's share of an intranode small-message ping-pong: two engines in
 * one thread, local peers of each other, exchanging messages through
 * pp_proto_output_local / pp_proto_input_local as the runtime's shared-memory
 * link does, with the same calls per message (post the receive for the
 * reply, send, one output pass when pp_proto_local_take says a frame may be
 * due, input, poll). No ring, no second core, no
 * clock: what is left is the protocol work alone, so
 *   valgrind --tool=callgrind engine_pingpong 8 100000
 * gives instructions per message by function, and a plain run gives ns per
 * one-way message on one core. Every received byte is checked.
 *
 *   engine_pingpong [SIZE [ITERS]]     (default 8 bytes, 1000000 round trips)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../test_proto_harness.h"

static struct pp_proto *e[2];
static uint8_t frame[9216];
static uint64_t now = 1000;
static uint8_t expect[4096];
/* Each engine's lite record for its peer (rule 6), one at a time: the ring. */
static uint8_t box[2][9216];
static uint32_t box_len[2];

static void *lite_reserve(void *arg, uint32_t dst, uint32_t len)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	(void)dst;
	return box_len[i] || len > sizeof(box[i]) ? NULL : box[i];
}

static void lite_commit(void *arg, uint32_t dst, uint32_t len)
{
	(void)dst;
	box_len[(uintptr_t)arg] = len;
}

static void die(const char *what)
{
	fprintf(stderr, "engine_pingpong: %s\n", what);
	exit(1);
}

/* Move every frame e[i] has for its peer, then take e[1-i]'s completions. */
static void pass(int i)
{
	int len = 0;
	if (box_len[i]) { /* written before anything output makes now */
		if (pp_proto_input_local(e[1 - i], (uint32_t)i, box[i], box_len[i], now))
			die("a lite record was refused");
		box_len[i] = 0;
	}
	if (!pp_proto_local_take(e[i])) /* as the runtime's link: nothing due */
		return;
	while ((len = pp_proto_output_local(e[i], (uint32_t)(1 - i), frame, sizeof(frame), now)) >
	       0)
		if (pp_proto_input_local(e[1 - i], (uint32_t)i, frame, (size_t)len, now))
			die("a frame was refused");
	if (len < 0)
		die("output failed");
}

/* Completions of e[i]; returns the receives among them. */
static int drain(int i, uint64_t size, const uint8_t *buf, uint8_t want)
{
	struct pp_proto_cpl c;
	int recvs = 0;
	while (pp_proto_poll(e[i], &c)) {
		if (c.error)
			die("an operation failed");
		if (c.cookie == 1 && !buf)
			die("a receive completed on the sending side");
		if (c.cookie == 1) {
			if (c.len != size)
				die("wrong length");
			/* memcmp, not a loop: the check must not outweigh
			 * the engine's copy it checks. */
			if (size) { /* libc's calls for 0 bytes took half the run */
				memset(expect, want, (size_t)size);
				if (memcmp(buf, expect, (size_t)size))
					die("wrong byte");
			}
			recvs++;
		}
	}
	return recvs;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: engine_pingpong [SIZE [ITERS]]\n"
		       "Two protocol engines in one thread, intranode peers, ping-pong SIZE-byte\n"
		       "messages (default 8) ITERS round trips (default 1000000); prints ns per\n"
		       "one-way message. Run under callgrind for instructions per message.\n");
		return 0;
	}
	uint64_t size = argc > 1 ? strtoull(argv[1], NULL, 0) : 8;
	long iters = argc > 2 ? atol(argv[2]) : 1000000;
	if (size > 4096 || iters <= 0)
		die("SIZE must be 0..4096, ITERS > 0");
	struct pp_proto_conf c;
	node_mate_conf(&c); /* as the runtime sets node-mates' engines */
	c.hooks.lite_reserve = lite_reserve;
	c.hooks.lite_commit = lite_commit;
	if (local_pair(e, &c, 16, 744))
		die("engine setup");
	static uint8_t sbuf[2][4096], rbuf[2][4096];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Each side keeps one receive posted ahead, as an early receiver. */
	for (int i = 0; i < 2; i++)
		if (pp_proto_recv(e[i], 1 - i, 0, 0, rbuf[i], size, 1))
			die("recv");
	for (long it = 0; it < iters; it++) {
		for (int i = 0; i < 2; i++) {
			uint8_t b = (uint8_t)(it * 2 + i);
			memset(sbuf[i], b, size);
			/* As pp_isend does: a send done in the call (a lite
			 * record, an eager copy) queues no completion. */
			int sent = pp_proto_sendf(e[i], (uint32_t)(1 - i), 0, sbuf[i], size, 0,
						  PP_PROTO_SEND_NOW, 2);
			if (sent < 0)
				die("send");
			/* Larger messages take PULLs and DATA: a few passes each way. */
			int got = 0;
			for (int k = 0; !got && k < 64; k++) {
				pass(i);
				got = drain(1 - i, size, rbuf[1 - i], b);
				if (!got)
					pass(1 - i);
			}
			if (got != 1)
				die("the message did not arrive");
			if (pp_proto_recv(e[1 - i], i, 0, 0, rbuf[1 - i], size, 1))
				die("recv");
			if (!sent) /* as pp_isend: a send done in the call completes nothing */
				drain(i, size, NULL, 0);
		}
		now += 500;
		if ((it & 7) == 0)
			for (int i = 0; i < 2; i++)
				pp_proto_handle_expiry(e[i], now);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("size %llu: %ld round trips, %.1f ns per one-way message (engine work only, one "
	       "core)\n",
	       (unsigned long long)size, iters, ns / (2.0 * (double)iters));
	pp_proto_destroy(e[0]);
	pp_proto_destroy(e[1]);
	return 0;
}
