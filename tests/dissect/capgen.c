/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Captures for the Wireshark dissector's test (dissector_test.sh), made
 * without the test bed:
 *   MODE.pcap     two ranks (threads, sim: ports, lossless) in each mode;
 *                 rank 0's port writes every frame it sends and receives
 *                 (pcap_dump=). Rank 1 posts a receive of 20000 bytes, tag
 *                 77, before a barrier, then rank 0 sends it (early
 *                 receiver); rank 0 sends 3000 bytes, tag 78, that rank 1
 *                 receives 20 ms later (late receiver); rank 1 sends 16
 *                 bytes, tag 79, back.
 *   crafted.pcap  one frame of every type and every flag with known fields
 *                 (frames 1..12, see crafted[] below), then two version 1
 *                 frames (60-byte header, CRC at offset 56) and two version
 *                 2 frames (68-byte header, 32-bit tag).
 *   badcrc.pcap   a PUSH whose payload has one byte flipped after its CRC was
 *                 computed, then the same frame intact.
 * usage: capgen DIR
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "crc32c.h"
#include "pp.h"
#include "pp_bytes.h"
#include "pp_port.h"
#include "sim/pp_sim.h"
#include "wire.h"

static const char *dir;

/* --- traffic of each mode ----------------------------------------------- */

struct rank_run {
	int rank;	  /* 0 or 1 */
	const char *mode; /* push-pull, ... */
	char link[32];	  /* sim link name */
	int failed;	  /* set by the thread */
};

static int rank_body(pp_ctx *ctx, int rank)
{
	static uint8_t big[2][20000]; /* a buffer per rank */
	uint8_t *b = big[rank], small[16];
	pp_req *q;
	pp_status st;
	int bad = 0;
	for (size_t i = 0; i < sizeof(big[0]); i++)
		b[i] = (uint8_t)(i * 7 + (size_t)rank);
	if (rank == 1) {
		bad += pp_irecv(ctx, b, 20000, 0, 77, &q) != 0;
		bad += pp_barrier(ctx) != 0;
		bad += pp_wait(&q, &st) != 0 || st.len != 20000;
		usleep(20000); /* the next message arrives first */
		bad += pp_recv(ctx, b, 3000, 0, 78, &st) != 0 || st.len != 3000;
		memset(small, 16, sizeof(small));
		bad += pp_send(ctx, small, sizeof(small), 0, 79) != 0;
	} else {
		bad += pp_barrier(ctx) != 0;
		bad += pp_send(ctx, b, 20000, 1, 77) != 0;
		bad += pp_send(ctx, b, 3000, 1, 78) != 0;
		bad += pp_recv(ctx, small, sizeof(small), 1, 79, &st) != 0 || st.len != 16;
	}
	return bad;
}

static void *rank_main(void *arg)
{
	struct rank_run *run = arg;
	char cfg[512];
	int n = snprintf(cfg, sizeof(cfg),
			 "rank=%d,size=2,job=capgen,node=n%d,dev=sim:%s/%d,mode=%s,timeout_ms=5000",
			 run->rank, run->rank, run->link, run->rank, run->mode);
	if (run->rank == 0)
		snprintf(cfg + n, sizeof(cfg) - (size_t)n, ",pcap_dump=%s/%s.pcap", dir, run->mode);
	pp_ctx *ctx;
	int rc = pp_init(&ctx, cfg);
	if (rc) {
		fprintf(stderr, "capgen: rank %d, %s: pp_init: %s\n", run->rank, run->mode,
			pp_strerror(rc));
		run->failed = 1;
		return NULL;
	}
	run->failed = rank_body(ctx, run->rank);
	if (pp_finalize(ctx))
		run->failed = 1;
	return NULL;
}

static int traffic(const char *mode)
{
	struct pp_sim_conf sc = {.seed = 1, .mtu = 1500};
	struct pp_sim_link *l;
	struct rank_run runs[2];
	pthread_t th[2];
	char name[32];
	snprintf(name, sizeof(name), "cap-%s", mode);
	int rc = pp_sim_link_create(&l, name, 2, &sc);
	if (rc)
		return rc;
	for (int r = 0; r < 2; r++) {
		runs[r] = (struct rank_run){.rank = r, .mode = mode};
		snprintf(runs[r].link, sizeof(runs[r].link), "%s", name);
		pthread_create(&th[r], NULL, rank_main, &runs[r]);
	}
	for (int r = 0; r < 2; r++)
		pthread_join(th[r], NULL);
	pp_sim_link_destroy(l);
	if (runs[0].failed || runs[1].failed) {
		fprintf(stderr, "capgen: %s: the ranks failed\n", mode);
		return -EIO;
	}
	return 0;
}

/* --- crafted frames -------------------------------------------------------- */

static const uint8_t mac0[6] = {0x02, 0x50, 0x50, 0, 0, 1};
static const uint8_t mac1[6] = {0x02, 0x50, 0x50, 1, 0, 1};
static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

#define JOB  0xABCD1234u
#define INC0 1111u
#define INC1 2222u

/* Frame k of crafted.pcap (from 1): known fields, every type, every flag. */
static const struct pp_wire_hdr crafted[] = {
    /* 1 HELLO to all, a 12-byte payload, no receiver incarnation */
    {.type = PP_WIRE_HELLO,
     .payload_len = 12,
     .job = JOB,
     .ack_stream = 0xFFFF,
     .src_rank = 0,
     .dst_rank = PP_WIRE_RANK_ALL,
     .msg_id = 1,
     .src_inc = INC0},
    /* 2 the FIRST PUSH of a 20000-byte message whose rest waits for a PULL */
    {.type = PP_WIRE_PUSH,
     .flags = PP_WIRE_F_FIRST | PP_WIRE_F_PULL,
     .payload_len = 80,
     .job = JOB,
     .ack_stream = 0,
     .seq = 100,
     .ack = 55,
     .credit = 300,
     .src_rank = 0,
     .dst_rank = 1,
     .msg_id = 7,
     .tag = 4242,
     .msg_len = 20000,
     .offset = 0,
     .src_inc = INC0,
     .dst_inc = INC1,
     .xflags = PP_WIRE_XF_DATA, /* with immediate data */
     .data = 0xc0de},
    /* 3 its second push, sent again, the sender holding a copy */
    {.type = PP_WIRE_PUSH,
     .flags = PP_WIRE_F_RETX | PP_WIRE_F_COPIED,
     .payload_len = 680,
     .job = JOB,
     .seq = 101,
     .ack = 55,
     .credit = 300,
     .src_rank = 0,
     .dst_rank = 1,
     .msg_id = 7,
     .tag = 4242,
     .msg_len = 20000,
     .offset = 80,
     .src_inc = INC0,
     .dst_inc = INC1},
    /* 4 the receiver's PULL for the rest, acking both pushes */
    {.type = PP_WIRE_PULL,
     .job = JOB,
     .seq = 55,
     .ack = 102,
     .credit = 310,
     .src_rank = 1,
     .dst_rank = 0,
     .msg_id = 7,
     .tag = 4242,
     .msg_len = 20000,
     .offset = 760,
     .src_inc = INC1,
     .dst_inc = INC0},
    /* 5 the last DATA frame */
    {.type = PP_WIRE_DATA,
     .flags = PP_WIRE_F_LAST,
     .payload_len = 100,
     .job = JOB,
     .seq = 102,
     .ack = 56,
     .src_rank = 0,
     .dst_rank = 1,
     .msg_id = 7,
     .tag = 4242,
     .msg_len = 20000,
     .offset = 19900,
     .src_inc = INC0,
     .dst_inc = INC1},
    /* 6 a standalone ACK of it */
    {.type = PP_WIRE_ACK,
     .job = JOB,
     .ack = 103,
     .credit = 320,
     .src_rank = 1,
     .dst_rank = 0,
     .src_inc = INC1,
     .dst_inc = INC0},
    /* 7 a PULL again from 0 (eviction) */
    {.type = PP_WIRE_PULL,
     .flags = PP_WIRE_F_AGAIN,
     .job = JOB,
     .seq = 56,
     .ack = 103,
     .src_rank = 1,
     .dst_rank = 0,
     .msg_id = 8,
     .tag = 5,
     .msg_len = 4096,
     .offset = 0,
     .src_inc = INC1,
     .dst_inc = INC0},
    /* 8 a PULL saying DONE (intranode) */
    {.type = PP_WIRE_PULL,
     .flags = PP_WIRE_F_DONE,
     .job = JOB,
     .seq = 57,
     .ack = 103,
     .src_rank = 1,
     .dst_rank = 0,
     .msg_id = 9,
     .tag = 6,
     .msg_len = 65536,
     .offset = 65536,
     .src_inc = INC1,
     .dst_inc = INC0},
    /* 9 a FIRST PUSH saying WRITTEN, no payload, from a pull handler's stream */
    {.type = PP_WIRE_PUSH,
     .flags = PP_WIRE_F_FIRST | PP_WIRE_F_WRITTEN | PP_WIRE_F_LAST,
     .job = JOB,
     .stream = 3,
     .ack_stream = 0xFFFF,
     .seq = 7,
     .src_rank = 0,
     .dst_rank = 1,
     .msg_id = 10,
     .tag = 0x8000000000000007ull, /* all 64 bits of a tag */
     .msg_len = 1000000,
     .src_inc = INC0,
     .dst_inc = INC1},
    /* 10 a NACK: go back to 40 */
    {.type = PP_WIRE_NACK,
     .job = JOB,
     .seq = 40,
     .ack = 40,
     .src_rank = 1,
     .dst_rank = 0,
     .src_inc = INC1,
     .dst_inc = INC0},
    /* 11 a PING, then a BYE to all */
    {.type = PP_WIRE_PING,
     .job = JOB,
     .seq = 103,
     .ack = 58,
     .src_rank = 0,
     .dst_rank = 1,
     .src_inc = INC0,
     .dst_inc = INC1},
    {.type = PP_WIRE_BYE,
     .job = JOB,
     .ack_stream = 0xFFFF,
     .src_rank = 1,
     .dst_rank = PP_WIRE_RANK_ALL,
     .msg_id = 3,
     .src_inc = INC1},
};

/* A frame of an older version, written field by field: the first 36 bytes
 * as today's, then a 32-bit tag, msg_len at 40 and offset at 48; version 2
 * adds src_inc at 56 and dst_inc at 60 with the CRC at 64 (a 68-byte
 * header), version 1 has the CRC at 56 (60 bytes, no incarnations).
 * Returns its length, 0 when it does not fit. */
static size_t encode_old(uint8_t *frame, unsigned ver, const struct pp_wire_hdr *h,
			 const uint8_t *payload)
{
	uint8_t tmp[PP_WIRE_MIN_FRAME + 2048];
	if (pp_wire_encode(tmp, sizeof(tmp), mac0, mac1, h, payload) < 0)
		return 0;
	size_t hdr = ver == 1 ? 60 : 68, crc_at = hdr - 4;
	memcpy(frame, tmp, PP_ETH_HLEN + 36);
	uint8_t *p = frame + PP_ETH_HLEN;
	p[0] = (uint8_t)(ver << 4 | h->type);
	pp_put_be32(p + 36, (uint32_t)h->tag);
	pp_put_be64(p + 40, h->msg_len);
	pp_put_be64(p + 48, h->offset);
	if (ver == 2) {
		pp_put_be32(p + 56, h->src_inc);
		pp_put_be32(p + 60, h->dst_inc);
	}
	memset(p + crc_at, 0, 4);
	memcpy(p + hdr, payload, h->payload_len);
	pp_put_be32(p + crc_at, pp_crc32c(0, p, hdr + (size_t)h->payload_len));
	return PP_ETH_HLEN + hdr + (size_t)h->payload_len;
}

static int write_file(const char *name, uint8_t frames[][2048], const size_t *lens, unsigned n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct pp_capture *cap;
	int rc = pp_capture_open(&cap, path);
	if (rc)
		return rc;
	for (unsigned i = 0; i < n; i++) {
		struct pp_buf b = {.data = frames[i],
				   .len = (uint32_t)lens[i],
				   .cap = 2048,
				   .ts_ns = 1700000000000000000ull + i * 1000000ull};
		struct pp_buf *bp = &b;
		pp_capture_frames(cap, &bp, 1);
	}
	pp_capture_close(cap);
	return 0;
}

static int crafted_files(void)
{
	static uint8_t frames[16][2048];
	static uint8_t payload[1024];
	size_t lens[16];
	unsigned n = 0;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 13 + 5);
	for (size_t k = 0; k < sizeof(crafted) / sizeof(crafted[0]); k++) {
		const struct pp_wire_hdr *h = &crafted[k];
		int len = pp_wire_encode(frames[n], sizeof(frames[n]),
					 h->dst_rank == PP_WIRE_RANK_ALL ? bcast
					 : h->src_rank == 0		 ? mac1
									 : mac0,
					 h->src_rank == 0 ? mac0 : mac1, h, payload);
		if (len < 0)
			return len;
		lens[n++] = (size_t)len;
	}
	/* Versions 1 and 2: a FIRST PUSH of 10 bytes and a PULL (version 2's
	 * of another message: they carry incarnations, unlike version 1's). */
	for (unsigned ver = 1; ver <= 2; ver++) {
		struct pp_wire_hdr old = crafted[1];
		old.payload_len = 10;
		old.msg_len = 300;
		old.msg_id += 10 * (ver - 1);
		lens[n] = encode_old(frames[n], ver, &old, payload);
		n++;
		old = crafted[3];
		old.msg_len = 300;
		old.offset = 10;
		old.msg_id += 10 * (ver - 1);
		lens[n] = encode_old(frames[n], ver, &old, payload);
		n++;
	}
	int rc = write_file("crafted.pcap", frames, lens, n);
	if (rc)
		return rc;

	/* A PUSH with one payload byte flipped after encoding, then intact. */
	struct pp_wire_hdr h = crafted[2];
	h.flags = 0;
	int len = pp_wire_encode(frames[0], sizeof(frames[0]), mac1, mac0, &h, payload);
	if (len < 0)
		return len;
	memcpy(frames[1], frames[0], (size_t)len);
	frames[0][PP_WIRE_MIN_FRAME + 100] ^= 0x01;
	lens[0] = lens[1] = (size_t)len;
	return write_file("badcrc.pcap", frames, lens, 2);
}

int main(int argc, char **argv)
{
	if (argc != 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(argc == 2 ? stdout : stderr,
			"usage: capgen DIR\n"
			"Writes the dissector test's captures into DIR: push-pull.pcap,\n"
			"push-all.pcap, push-zero.pcap (two ranks over the in-memory link),\n"
			"crafted.pcap (every type and flag, version 1 frames), badcrc.pcap.\n");
		return argc == 2 ? 0 : 2;
	}
	dir = argv[1];
	static const char *const modes[] = {"push-pull", "push-all", "push-zero"};
	for (int m = 0; m < 3; m++) {
		int rc = traffic(modes[m]);
		if (rc) {
			fprintf(stderr, "capgen: %s: %s\n", modes[m], pp_strerror(rc));
			return 1;
		}
	}
	int rc = crafted_files();
	if (rc) {
		fprintf(stderr, "capgen: crafted frames: %s\n", pp_strerror(rc));
		return 1;
	}
	return 0;
}
