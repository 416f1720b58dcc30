/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ppd_check: integration checks of the node daemon ppd.
 *
 *   ppd_check killmate
 *     Under pprun --daemon, 4 ranks on 2 nodes (0,1 on ppn0; 2,3 on ppn1).
 *     Rank 3 sends rank 1 a 16 MiB message; rank 1 exits without pp_finalize
 *     once 2 MiB have come. Meanwhile ranks 0 and 2 exchange 200 messages
 *     (every byte checked), each with a receive from rank 1 posted
 *     beforehand that only rank 1 could satisfy: it must fail with
 *     -ECONNRESET, which only the BYE the daemon sends for the dead rank
 *     brings (nothing of theirs awaits an acknowledgement from rank 1, so
 *     their engines would never declare it lost). Rank 3's send fails with
 *     -ECONNRESET.
 *
 *   ppd_check badrange SOCKET
 *     One process attaches two ports to the daemon at SOCKET as ranks 0 and
 *     1 of a job of its own, and sends frames from rank 0 to rank 1 whose
 *     payload is a range of its memory (pp_port_attach_ext): a good range
 *     arrives intact; an unmapped range, and one running past the end of a
 *     mapping, make the frame fail (tx_failed +1) and nothing of it arrives;
 *     a frame claiming another rank as source is dropped.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pp.h"
#include "pp_port.h"
#include "wire.h"

static int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			printf("FAIL line %d: %s: ", __LINE__, #cond);                             \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
			fflush(stdout);                                                            \
		}                                                                                  \
	} while (0)

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint8_t pattern(size_t i, unsigned seed)
{
	return (uint8_t)(i * 13u + seed * 7u + (i >> 8));
}

/* --- killmate ------------------------------------------------------------- */

#define BIG    ((size_t)16 << 20)
#define ROUNDS 200

static void victim(pp_ctx *ctx)
{
	uint8_t *b = malloc(BIG);
	pp_req *q;
	struct pp_stats s = {0};
	int rc = pp_irecv(ctx, b, BIG, 3, 1, &q);
	EXPECT(rc == 0, "irecv: %s", pp_strerror(rc));
	for (int done = 0; rc == 0 && !done;) {
		rc = pp_test(&q, &done, NULL);
		pp_get_stats(ctx, &s);
		if (s.bytes_rx >= (2u << 20)) {
			printf("killmate: rank 1 exits without pp_finalize after %llu of %zu B\n",
			       (unsigned long long)s.bytes_rx, BIG);
			fflush(stdout);
			_exit(failures ? 1 : 0);
		}
	}
	EXPECT(0, "the 16 MiB receive ended (%s) before 2 MiB had come", pp_strerror(rc));
	exit(1);
}

static void killer_peer(pp_ctx *ctx)
{
	uint8_t *b = malloc(BIG);
	memset(b, 0x5a, BIG);
	int rc = pp_send(ctx, b, BIG, 1, 1);
	EXPECT(rc == -ECONNRESET, "16 MiB send to the killed rank 1: %s, want -ECONNRESET",
	       pp_strerror(rc));
	free(b);
	printf("killmate: rank 3's send to the dead rank 1 failed with -ECONNRESET: %s\n",
	       failures ? "FAILED" : "ok");
}

/* Ranks 0 and 2: ping-pong ROUNDS messages of growing size, bytes checked,
 * while a receive from rank 1 waits for the news of its death. */
static void survivor(pp_ctx *ctx, int rank, unsigned timeout_ms)
{
	int peer = rank == 0 ? 2 : 0, rc;
	uint8_t one[16];
	pp_req *from1;
	rc = pp_irecv(ctx, one, sizeof(one), 1, 9, &from1);
	EXPECT(rc == 0, "irecv from rank 1: %s", pp_strerror(rc));
	size_t max = 70000;
	uint8_t *s = malloc(max), *r = malloc(max);
	int done1 = 0, rc1 = 0, rounds = 0;
	double deadline = now_s() + 2.0 * timeout_ms / 1000.0 + 10;
	for (int k = 0; failures == 0 && (k < ROUNDS || !done1); k++) {
		size_t n = (size_t)(k * 347) % max;
		int sending = (k % 2 == 0) == (rank == 0);
		if (sending) {
			for (size_t i = 0; i < n; i++)
				s[i] = pattern(i, (unsigned)k);
			rc = pp_send(ctx, s, n, peer, k);
			EXPECT(rc == 0, "round %d: send %zu B to %d: %s", k, n, peer,
			       pp_strerror(rc));
		} else {
			pp_status st = {0};
			memset(r, 0xee, n);
			rc = pp_recv(ctx, r, n, peer, k, &st);
			EXPECT(rc == 0 && st.len == n, "round %d: recv %zu B from %d: %s, len %zu",
			       k, n, peer, pp_strerror(rc), st.len);
			for (size_t i = 0; rc == 0 && i < n; i++)
				if (r[i] != pattern(i, (unsigned)k)) {
					EXPECT(0, "round %d: byte %zu of %zu wrong", k, i, n);
					break;
				}
		}
		rounds++;
		if (!done1) {
			rc1 = pp_test(&from1, &done1, NULL);
			if (rc1 != 0)
				done1 = 1;
		}
		if (now_s() > deadline) {
			EXPECT(0, "the receive from the dead rank 1 never failed");
			break;
		}
	}
	EXPECT(rc1 == -ECONNRESET, "receive from the dead rank 1: %s, want -ECONNRESET",
	       pp_strerror(rc1));
	free(s);
	free(r);
	printf("killmate: rank %d exchanged %d messages with rank %d, bytes checked, while its "
	       "receive from the dead rank 1 failed with -ECONNRESET: %s\n",
	       rank, rounds, peer, failures ? "FAILED" : "ok");
}

static int killmate(void)
{
	pp_ctx *ctx;
	int rc = pp_init(&ctx, NULL);
	if (rc) {
		fprintf(stderr, "ppd_check: pp_init: %s\n", pp_strerror(rc));
		return 1;
	}
	int rank = pp_rank(ctx);
	if (pp_size(ctx) != 4) {
		fprintf(stderr, "ppd_check: killmate wants 4 ranks\n");
		return 2;
	}
	const char *t = getenv("PP_TIMEOUT_MS");
	unsigned timeout_ms = t ? (unsigned)atoi(t) : 10000;
	if (rank == 1)
		victim(ctx);
	else if (rank == 3)
		killer_peer(ctx);
	else
		survivor(ctx, rank, timeout_ms);
	/* Rank 1 is gone: pp_finalize's goodbye does not wait for it. */
	rc = pp_finalize(ctx);
	EXPECT(rc == 0 || rc == -ETIMEDOUT, "pp_finalize: %s", pp_strerror(rc));
	return failures ? 1 : 0;
}

/* --- badrange ------------------------------------------------------------- */

#define JOB 0x7e57

/* The last frame rank 1 got: waits for one, returns its length or -1. */
static int receive_one(struct pp_port *p, uint8_t *out, size_t cap)
{
	struct pp_buf *b;
	for (long spins = 0; spins < 200000000L; spins++) {
		if (pp_port_rx_burst(p, 0, &b, 1) == 1) {
			size_t n = b->len < cap ? b->len : cap;
			memcpy(out, b->data, n);
			int len = (int)b->len;
			pp_port_free(p, &b, 1);
			return len;
		}
		if (spins % 1024 == 0)
			usleep(100);
	}
	return -1;
}

/* Send from port p a frame of msg_id id claiming src as its source. */
static int send_frame(struct pp_port *p, const struct pp_port_info *pi, uint32_t src, uint32_t id)
{
	struct pp_buf *b;
	if (pp_port_alloc(p, &b, 1) != 1)
		return -ENOMEM;
	struct pp_wire_hdr h = {
	    .type = PP_WIRE_HELLO, .job = JOB, .src_rank = src, .dst_rank = 1, .msg_id = id};
	b->len = (uint32_t)pp_wire_encode(b->data, b->cap, pi->mac, pi->mac, &h, NULL);
	return pp_port_tx_burst(p, 0, &b, 1) == 1 ? 0 : -EAGAIN;
}

static void set_done(void *arg)
{
	*(int *)arg += 1;
}

static int send_ext(struct pp_port *p, const struct pp_port_info *pi, uint32_t id, void *ext,
		    uint32_t ext_len, int *done)
{
	struct pp_buf *b;
	if (pp_port_alloc(p, &b, 1) != 1)
		return -ENOMEM;
	struct pp_wire_hdr h = {.type = PP_WIRE_HELLO,
				.job = JOB,
				.src_rank = 0,
				.dst_rank = 1,
				.msg_id = id,
				.src_inc = 1,
				.dst_inc = 2};
	int len = pp_wire_encode(b->data, b->cap, pi->mac, pi->mac, &h, NULL);
	b->len = (uint32_t)len;
	int rc = pp_port_attach_ext(p, b, ext, ext_len, set_done, done);
	if (rc) {
		pp_port_free(p, &b, 1);
		return rc;
	}
	return pp_port_tx_burst(p, 0, &b, 1) == 1 ? 0 : -EAGAIN;
}

static uint32_t msg_id_of(const uint8_t *f)
{
	const uint8_t *p = f + PP_ETH_HLEN + PP_WIRE_OFF_MSG_ID;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int badrange(const char *sock)
{
	char dev[512];
	struct pp_port *a, *b;
	struct pp_port_info ai;
	snprintf(dev, sizeof(dev), "ppd:job=%u,rank=0,size=2,inc=1,token=0,timeout=5000,path=%s",
		 JOB, sock);
	int rc = pp_port_open(&a, dev, NULL);
	snprintf(dev, sizeof(dev), "ppd:job=%u,rank=1,size=2,inc=2,token=0,timeout=5000,path=%s",
		 JOB, sock);
	if (rc == 0)
		rc = pp_port_open(&b, dev, NULL);
	if (rc) {
		fprintf(stderr, "ppd_check: cannot attach to %s: %s\n", sock, strerror(-rc));
		return 1;
	}
	pp_port_info(a, &ai);
	long pg = sysconf(_SC_PAGESIZE);
	/* Two pages mapped, the second then unmapped: a hole the process does
	 * not own, right after memory it does. */
	uint8_t *map =
	    mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(map != MAP_FAILED, "mmap");
	munmap(map + pg, (size_t)pg);
	uint32_t n = 1000;
	uint8_t *good = map + pg - n; /* ends exactly at the hole */
	for (uint32_t i = 0; i < n; i++)
		good[i] = pattern(i, 3);
	uint8_t frame[4096];
	int done = 0;
	struct pp_port_stats st0, st1;
	pp_port_stats(a, &st0);

	/* 1. A good range arrives intact, right after the header. */
	EXPECT(send_ext(a, &ai, 1, good, n, &done) == 0, "send good");
	int len = receive_one(b, frame, sizeof(frame));
	EXPECT(len == PP_WIRE_MIN_FRAME + (int)n && msg_id_of(frame) == 1,
	       "good range: got %d bytes (id %u), want %d", len, len > 0 ? msg_id_of(frame) : 0,
	       PP_WIRE_MIN_FRAME + (int)n);
	EXPECT(len > 0 && memcmp(frame + PP_WIRE_MIN_FRAME, good, n) == 0,
	       "good range: payload differs");

	/* 2. The hole, 3. a range running into it, 4. a kernel address, then
	 * 5. a good frame: the daemon works in order, so the first frame rank 1
	 * sees after 1 must be 5. */
	EXPECT(send_ext(a, &ai, 2, map + pg, 64, &done) == 0, "send hole");
	EXPECT(send_ext(a, &ai, 3, good + 10, n, &done) == 0, "send straddling");
	EXPECT(send_ext(a, &ai, 4, (void *)(uintptr_t)0xffffffff81000000ull, 64, &done) == 0,
	       "send kernel address");
	/* 6. A frame claiming to come from rank 1 (spoofed source). */
	EXPECT(send_frame(a, &ai, 1, 6) == 0, "send spoofed");
	EXPECT(send_ext(a, &ai, 5, good, 100, &done) == 0, "send good again");
	len = receive_one(b, frame, sizeof(frame));
	EXPECT(len == PP_WIRE_MIN_FRAME + 100 && msg_id_of(frame) == 5,
	       "after the bad ranges: got %d bytes (id %u), want frame 5 of %d bytes", len,
	       len > 0 ? msg_id_of(frame) : 0, PP_WIRE_MIN_FRAME + 100);
	EXPECT(len > 0 && memcmp(frame + PP_WIRE_MIN_FRAME, good, 100) == 0,
	       "frame 5: payload differs");
	/* The daemon is done with every range: take the slots back. */
	struct pp_buf *tmp[8];
	unsigned got = 0;
	for (int i = 0; i < 100000 && done < 5; i++) {
		got = pp_port_alloc(a, tmp, 8);
		pp_port_free(a, tmp, got);
		usleep(10);
	}
	pp_port_stats(a, &st1);
	EXPECT(done == 5, "attach_ext done callbacks: %d, want 5", done);
	EXPECT(st1.tx_failed - st0.tx_failed == 4,
	       "frames the daemon failed: %llu, want 4 (3 bad ranges, 1 spoofed)",
	       (unsigned long long)(st1.tx_failed - st0.tx_failed));
	pp_port_close(a);
	pp_port_close(b);
	printf("badrange: a good range arrives intact; an unmapped range, one running past a "
	       "mapping and a kernel address fail with nothing sent, a spoofed source is "
	       "dropped: %s\n",
	       failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "killmate") == 0)
		return killmate();
	if (argc >= 3 && strcmp(argv[1], "badrange") == 0)
		return badrange(argv[2]);
	fprintf(argc >= 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr,
		"usage: ppd_check killmate          (under pprun --daemon, 4 ranks on 2 nodes)\n"
		"       ppd_check badrange SOCKET   (against a running ppd)\n");
	return argc >= 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
}
