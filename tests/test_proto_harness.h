/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test-only helpers for the protocol engine: a few engines joined by a direct
 * in-process link with virtual time and a per-frame drop hook, byte patterns,
 * and a frame builder for crafting malformed frames.
 */
#ifndef PP_TEST_PROTO_HARNESS_H
#define PP_TEST_PROTO_HARNESS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "engine.h"
#include "wire.h"

#define NET_MAX	  4
#define FRAME_CAP 9216

/* Decides the fate of one frame: return 1 to drop it. */
typedef int (*net_filter)(void *arg, unsigned src, unsigned dst, const struct pp_wire_hdr *h);

struct net {
	struct pp_proto *e[NET_MAX]; /* engines, rank = index */
	unsigned n;		     /* engines in use */
	uint64_t now;		     /* virtual time, ns */
	net_filter filter;	     /* drop hook, or NULL */
	void *arg;		     /* its argument */
	uint64_t frames;	     /* frames delivered */
	uint64_t dropped;	     /* frames the hook dropped */
	uint8_t frame[FRAME_CAP];    /* scratch frame */
};

static inline void net_mac(unsigned rank, uint8_t mac[6])
{
	static const uint8_t base[6] = {0x02, 0, 0, 0, 0, 0};
	memcpy(mac, base, 6);
	mac[5] = (uint8_t)rank;
}

/* Incarnation of rank in these rigs: non-zero and distinct, as in a job. */
static inline uint32_t net_inc(unsigned rank)
{
	return 0x1000u + rank;
}

/* Start n engines from conf (rank, nranks, job, inc, mac filled in here), as
 * net_init does, but engine who gets hooks (the others none). */
static inline int net_init_with(struct net *net, unsigned n, const struct pp_proto_conf *conf,
				unsigned who, const struct pp_proto_hooks *hooks)
{
	memset(net, 0, sizeof(*net));
	net->n = n;
	net->now = 1000;
	for (unsigned i = 0; i < n; i++) {
		struct pp_proto_conf c = *conf;
		c.rank = i;
		c.nranks = n;
		c.job = 0x5eed;
		c.inc = net_inc(i);
		net_mac(i, c.mac);
		if (i == who)
			c.hooks = *hooks;
		int rc = pp_proto_create(&net->e[i], &c);
		if (rc)
			return rc;
	}
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < n; j++)
			if (i != j) {
				uint8_t mac[6];
				net_mac(j, mac);
				if (pp_proto_peer_add(net->e[i], j, mac, net_inc(j)))
					return -1;
			}
	return 0;
}

/* Start n engines from conf (rank, nranks, job, inc, mac filled in here). */
static inline int net_init(struct net *net, unsigned n, const struct pp_proto_conf *conf)
{
	return net_init_with(net, n, conf, n, NULL);
}

static inline void net_fini(struct net *net)
{
	for (unsigned i = 0; i < net->n; i++)
		pp_proto_destroy(net->e[i]);
}

/* Move frames until nothing moves and no timer is pending within limit_ns of
 * virtual time. Returns the frames moved. */
static inline uint64_t net_run(struct net *net, uint64_t limit_ns)
{
	uint64_t start = net->now, moved_total = 0;
	for (;;) {
		unsigned moved = 0;
		for (unsigned i = 0; i < net->n; i++) {
			int len;
			while ((len = pp_proto_output(net->e[i], net->frame, sizeof(net->frame),
						      net->now)) > 0) {
				unsigned dst = net->frame[5];
				moved++;
				struct pp_wire_hdr h;
				const uint8_t *pl;
				enum pp_drop_reason why;
				struct pp_wire_check chk = {0x5eed, dst, net->n, 9000,
							    net_inc(dst)};
				if (net->filter &&
				    pp_wire_decode(net->frame, (size_t)len, &chk, &h, &pl, &why) ==
					0 &&
				    net->filter(net->arg, i, dst, &h)) {
					net->dropped++;
					continue;
				}
				if (dst < net->n) {
					net->frames++;
					pp_proto_input(net->e[dst], net->frame, (size_t)len,
						       net->now);
				}
			}
		}
		moved_total += moved;
		if (moved)
			continue;
		uint64_t t = UINT64_MAX;
		for (unsigned i = 0; i < net->n; i++) {
			uint64_t x = pp_proto_expiry(net->e[i]);
			if (x < t)
				t = x;
		}
		if (t == UINT64_MAX || t > start + limit_ns)
			return moved_total;
		if (t > net->now)
			net->now = t;
		for (unsigned i = 0; i < net->n; i++)
			pp_proto_handle_expiry(net->e[i], net->now);
	}
}

/* The settings the runtime gives an engine whose node-mates are on the
 * rings (runtime/api.c proto_conf, runtime/shm_link.c activate), so that
 * every size takes the frames it takes there: a message up to local_whole
 * pushed whole, one up to copy_max copied and complete at once. */
static inline void node_mate_conf(struct pp_proto_conf *c)
{
	pp_proto_conf_job(c);
	c->mtu = 9000;
}

/* Two engines started from conf, ranks 0 and 1 of job 0x5eed (rank, nranks,
 * job, mac and hooks.arg, the rank, filled in here), each the other's local
 * peer with BTP btp1/btp2. Returns 0 or the first error. */
static inline int local_pair(struct pp_proto *e[2], const struct pp_proto_conf *conf, uint32_t btp1,
			     uint32_t btp2)
{
	for (unsigned i = 0; i < 2; i++) {
		struct pp_proto_conf c = *conf;
		c.rank = i;
		c.nranks = 2;
		c.job = 0x5eed;
		c.inc = net_inc(i);
		c.hooks.arg = (void *)(uintptr_t)i;
		net_mac(i, c.mac);
		int rc = pp_proto_create(&e[i], &c);
		if (rc)
			return rc;
	}
	for (unsigned i = 0; i < 2; i++) {
		uint8_t mac[6];
		net_mac(1 - i, mac);
		int rc = pp_proto_peer_add(e[i], 1 - i, mac, net_inc(1 - i));
		if (!rc)
			rc = pp_proto_peer_local(e[i], 1 - i, btp1, btp2);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Two intranode engines (each the other's local peer): move frames between
 * e[0] and e[1] through pp_proto_output_local and pp_proto_input_local, and
 * run their timers, until nothing has happened for 8 rounds (when only a
 * timer can move things, time jumps to it). Returns the frames moved, or -1
 * when an output call failed, when a frame came while pp_proto_local_take
 * said none could (the runtime's link would never have asked), or, with
 * strict, when a frame was refused or anything came out of the port path
 * (nothing for a local peer may). As the runtime's pass, a timer runs when
 * it is due, before the link's look.
 */
static inline int local_pump(struct pp_proto *e[2], uint8_t *f, size_t cap, uint64_t *now,
			     int strict)
{
	int total = 0;
	for (int quiet = 0; quiet < 8;) {
		int moved = 0;
		for (uint32_t i = 0; i < 2; i++) {
			if (*now >= pp_proto_expiry(e[i]))
				pp_proto_handle_expiry(e[i], *now);
			if (strict && pp_proto_output(e[i], f, cap, *now) != 0)
				return -1;
			int due = pp_proto_local_take(e[i]);
			int len = pp_proto_output_local(e[i], 1 - i, f, cap, *now);
			if (len < 0 || (len > 0 && !due))
				return -1;
			if (len > 0) {
				/* The link asks again in the same pass, until 0:
				 * here, in the next round. */
				pp_proto_local_kick(e[i]);
				if (pp_proto_input_local(e[1 - i], i, f, (size_t)len, *now) &&
				    strict)
					return -1;
				moved = 1;
				total++;
			}
		}
		*now += 1000;
		uint64_t t0 = pp_proto_expiry(e[0]), t1 = pp_proto_expiry(e[1]);
		uint64_t t = t0 < t1 ? t0 : t1;
		if (moved)
			quiet = 0;
		else if (t == UINT64_MAX)
			quiet++;
		else if (t > *now)
			*now = t; /* only a timer can move things now */
	}
	return total;
}

/* A header of message 0 (tag 7, len bytes) from rank 0 to rank 1 of job
 * 0x5eed (incarnations net_inc): n bytes at off on stream (a stream other than 0 carries no ack),
 * FIRST with PULL at offset 0, LAST at the end. */
static inline struct pp_wire_hdr msg0_frame(uint8_t type, uint16_t stream, uint32_t seq,
					    uint64_t off, uint32_t n, uint64_t len)
{
	struct pp_wire_hdr h = {.type = type,
				.job = 0x5eed,
				.stream = stream,
				.ack_stream = stream ? PP_PROTO_NO_ACK : 0,
				.seq = seq,
				.src_rank = 0,
				.dst_rank = 1,
				.msg_id = 0,
				.tag = 7,
				.msg_len = len,
				.offset = off,
				.src_inc = net_inc(0),
				.dst_inc = net_inc(1),
				.payload_len = (uint16_t)n};
	if (off == 0)
		h.flags = PP_WIRE_F_FIRST | PP_WIRE_F_PULL;
	if (off + n == len)
		h.flags |= PP_WIRE_F_LAST;
	return h;
}

/* The byte at position i of message m. */
static inline uint8_t pat(uint32_t m, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)m << 40);
	return (uint8_t)(x >> 56 ^ x >> 13);
}

static inline void pat_fill(uint8_t *b, uint64_t len, uint32_t m)
{
	for (uint64_t i = 0; i < len; i++)
		b[i] = pat(m, i);
}

/* 1 when b[0..len) is message m's pattern. */
static inline int pat_check(const uint8_t *b, uint64_t len, uint32_t m)
{
	for (uint64_t i = 0; i < len; i++)
		if (b[i] != pat(m, i))
			return 0;
	return 1;
}

/* Frame builder: a valid frame from h (ranks/job as given), then the test
 * may break it. Returns its length. */
static inline size_t build_frame(uint8_t *f, size_t cap, const struct pp_wire_hdr *h,
				 const void *payload)
{
	uint8_t dst[6], src[6];
	net_mac(h->dst_rank & 0xff, dst);
	net_mac(h->src_rank & 0xff, src);
	int n = pp_wire_encode(f, cap, dst, src, h, payload);
	return n > 0 ? (size_t)n : 0;
}

/* Recompute the crc32c of a frame after the test changed it. */
static inline void refresh_crc(uint8_t *f, size_t len)
{
	uint8_t *p = f + PP_ETH_HLEN, *q = p + PP_WIRE_OFF_CRC;
	memset(q, 0, 4);
	uint32_t c = pp_crc32c(0, p, len - PP_ETH_HLEN);
	q[0] = (uint8_t)(c >> 24);
	q[1] = (uint8_t)(c >> 16);
	q[2] = (uint8_t)(c >> 8);
	q[3] = (uint8_t)c;
}

#endif
