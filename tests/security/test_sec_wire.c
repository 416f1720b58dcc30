/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A neighbour on the link that cannot talk a job out of its peers (README,
 * "Trust model"): two embedded ranks (runtime/embed.c, the libfabric
 * provider's engine) on a three-port in-memory link, and a third port that
 * forges frames. Every check is on real behaviour: which rank a send
 * reaches, the bytes a receive gets, the error an operation ends with.
 *
 * - A frame with a bad CRC from a foreign MAC makes no rank known and
 *   redirects no send.
 * - A rank learnt from a frame is replaced by the caller's AV insert.
 * - Incarnations are not the clock.
 * - A HELLO of a newer incarnation without proof of the job secret ends
 *   nothing; one signed with the job's key is taken.
 * - A BYE without proof ends nothing; a signed one ends the peer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "ctx.h"
#include "cu_main.h"
#include "embed.h"
#include "pp_port.h"
#include "sim/pp_sim.h"
#include "wire.h"

#define SECRET "sec-wire-secret"
#define PUMPS  20000 /* progress passes a step may take: bounded, never timed */

static struct pp_sim_link *link_;
static char name[64];
static struct pp_embed *e[2];	  /* rank 0 and rank 1 */
static struct pp_embed_addr a[2]; /* their addresses */
static struct pp_port *evil;	  /* the neighbour's port */
static struct pp_port_info evil_info;

/* Completions, per rank: the last of each kind. */
struct seen {
	int recvs, sends; /* how many */
	int recv_err;	  /* the last receive's error */
	uint64_t recv_len;
	int recv_source;
};
static struct seen seen[2];

static void on_cpl(void *arg, const struct pp_proto_cpl *c)
{
	struct seen *s = arg;
	if (c->is_send) {
		s->sends++;
		return;
	}
	s->recvs++;
	s->recv_err = c->error;
	s->recv_len = c->len;
	s->recv_source = c->source;
}

static void pump(void)
{
	for (int i = 0; i < 2; i++)
		pp_embed_progress(e[i]);
}

/* Pump until *n reaches want, at most PUMPS passes: 1 when it did. */
static int pump_until(const int *n, int want)
{
	for (int i = 0; i < PUMPS && *n < want; i++)
		pump();
	return *n >= want;
}

/* Open both ranks (with job_secret when keyed) and the neighbour's port;
 * introduce each rank to the other when introduce. */
static void setup(int keyed, int introduce)
{
	static int n;
	snprintf(name, sizeof(name), "secwire%d-%d", (int)getpid(), n++);
	struct pp_sim_conf sc = {.seed = 1};
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&link_, name, 3, &sc), 0);
	memset(seen, 0, sizeof(seen));
	for (int r = 0; r < 2; r++) {
		char cfg[256];
		snprintf(cfg, sizeof(cfg), "rank=%d,size=2,job=%s,dev=sim:%s/%d,timeout_ms=2000%s",
			 r, name, name, r, keyed ? ",job_secret=" SECRET : "");
		struct pp_embed_conf c = {.config = cfg, .cpl = on_cpl, .arg = &seen[r]};
		CU_ASSERT_EQUAL_FATAL(pp_embed_open(&e[r], &c), 0);
		pp_embed_addr(e[r], &a[r]);
	}
	char dev[96];
	snprintf(dev, sizeof(dev), "sim:%s/2", name);
	struct pp_port_conf pc = {.nb_queues = 1};
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&evil, dev, &pc), 0);
	CU_ASSERT_EQUAL_FATAL(pp_port_info(evil, &evil_info), 0);
	if (introduce) {
		CU_ASSERT_EQUAL_FATAL(pp_embed_peer_add(e[0], &a[1]), 0);
		CU_ASSERT_EQUAL_FATAL(pp_embed_peer_add(e[1], &a[0]), 0);
	}
}

static void teardown(void)
{
	pp_port_close(evil);
	for (int r = 0; r < 2; r++)
		pp_embed_close(e[r]);
	pp_sim_link_destroy(link_);
}

/* A frame from the neighbour's port, as rank src to rank 0. kind: 0 a good
 * CRC, 1 a bad CRC; with a key the HELLO/BYE tag is signed (else zero). */
static void forge(const struct pp_wire_hdr *h, const void *payload, int bad_crc, const uint8_t *key)
{
	struct pp_buf *b;
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(evil, &b, 1), 1);
	const uint8_t *dst = h->dst_rank == PP_WIRE_RANK_ALL
				 ? (const uint8_t[6]){0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
				 : a[0].mac;
	int len = pp_wire_encode(b->data, b->cap, dst, evil_info.mac, h, payload);
	CU_ASSERT_FATAL(len > 0);
	if (key)
		CU_ASSERT_EQUAL(pp_auth_sign(key, b->data, (size_t)len), 0);
	if (bad_crc)
		b->data[PP_ETH_HLEN + PP_WIRE_OFF_CRC] ^= 0x5a;
	b->len = (uint32_t)len;
	CU_ASSERT_EQUAL_FATAL(pp_port_tx_burst(evil, 0, &b, 1), 1);
	for (int i = 0; i < 50; i++)
		pump(); /* delivered and handled */
}

/* An ACK "from rank 1" to rank 0, right job and incarnations. */
static struct pp_wire_hdr ack_from_1(void)
{
	return (struct pp_wire_hdr){.type = PP_WIRE_ACK,
				    .job = a[0].job,
				    .credit = 64,
				    .src_rank = 1,
				    .dst_rank = 0,
				    .src_inc = 0x1badcafe,
				    .dst_inc = a[0].inc};
}

static uint8_t pat(size_t i, int seed)
{
	return (uint8_t)(i * 7u + (unsigned)seed * 31u);
}

/* Rank from sends n pattern bytes to rank to: 1 when they arrive whole and
 * intact and both sides complete without error. */
static int deliver(int from, int to, size_t n, int seed)
{
	uint8_t *s = malloc(n), *r = malloc(n);
	if (!s || !r)
		return 0;
	for (size_t i = 0; i < n; i++)
		s[i] = pat(i, seed);
	memset(r, 0, n);
	int recvs = seen[to].recvs + 1, sends = seen[from].sends + 1;
	int ok = pp_embed_recv(e[to], from, (uint64_t)seed, 0, r, n, 1) == 0 &&
		 pp_embed_send(e[from], (uint32_t)to, (uint64_t)seed, s, n, 2) == 0 &&
		 pump_until(&seen[to].recvs, recvs) && pump_until(&seen[from].sends, sends) &&
		 seen[to].recv_err == 0 && seen[to].recv_len == n && seen[to].recv_source == from &&
		 memcmp(s, r, n) == 0;
	free(s);
	free(r);
	return ok;
}

/* (a) One frame with a bad CRC from a foreign MAC, for rank 0's incarnation,
 * "from rank 1": rank 1 stays unknown, and once the AV names the real rank
 * 1 a send reaches it. */
static void test_bad_crc_learns_nothing(void)
{
	setup(0, 0);
	CU_ASSERT_EQUAL_FATAL(pp_embed_peer_add(e[1], &a[0]), 0);
	struct pp_wire_hdr h = ack_from_1();
	forge(&h, NULL, 1, NULL);
	CU_ASSERT_FALSE(pp_membership_peer(e[0]->ctx, 1)->known);
	CU_ASSERT_EQUAL(pp_embed_peer_add(e[0], &a[1]), 0);
	CU_ASSERT_EQUAL(memcmp(pp_membership_peer(e[0]->ctx, 1)->mac, a[1].mac, 6), 0);
	CU_ASSERT_TRUE(deliver(0, 1, 3000, 1));
	CU_ASSERT_TRUE(deliver(1, 0, 100, 2));
	teardown();
}

/* (b) A frame that decodes whole teaches rank 0 a "rank 1" at the
 * neighbour's MAC; the AV insert of the real rank 1 then replaces it
 * instead of failing with -EEXIST, and sends reach the real one. */
static void test_av_replaces_learnt(void)
{
	setup(0, 0);
	CU_ASSERT_EQUAL_FATAL(pp_embed_peer_add(e[1], &a[0]), 0);
	struct pp_wire_hdr h = ack_from_1();
	forge(&h, NULL, 0, NULL);
	const struct pp_peer_info *pi = pp_membership_peer(e[0]->ctx, 1);
	CU_ASSERT_TRUE(pi->known); /* learnt, as an MPI's unannounced sender is */
	CU_ASSERT_EQUAL(memcmp(pi->mac, evil_info.mac, 6), 0);
	CU_ASSERT_EQUAL(pp_embed_peer_add(e[0], &a[1]), 0);
	CU_ASSERT_EQUAL(memcmp(pi->mac, a[1].mac, 6), 0);
	CU_ASSERT_EQUAL(pi->inc, a[1].inc);
	CU_ASSERT_EQUAL(pp_embed_peer_add(e[0], &a[1]), 0); /* the same again: fine */
	struct pp_embed_addr other = a[1];
	other.inc ^= 1;
	CU_ASSERT_EQUAL(pp_embed_peer_add(e[0], &other), -EEXIST); /* the AV's own word stays */
	CU_ASSERT_TRUE(deliver(0, 1, 3000, 3));
	CU_ASSERT_TRUE(deliver(1, 0, 3000, 4));
	teardown();
}

/* (c) Incarnations are random, not the millisecond clock: a clock (or
 * anything that follows it) gives a sequence where each is later than the
 * one before; 64 random draws are not (probability 1/64!), and none is 0. */
static void test_incarnation_not_clock(void)
{
	uint32_t v[64];
	int later = 0, zero = 0;
	for (int i = 0; i < 64; i++) {
		v[i] = pp_membership_incarnation();
		zero += v[i] == 0;
		if (i)
			later += pp_wire_inc_after(v[i], v[i - 1]);
	}
	CU_ASSERT_EQUAL(zero, 0);
	CU_ASSERT(later < 63);
	/* Nor near the clock: the old rule gave the ms clock itself. */
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	uint32_t ms = (uint32_t)((uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u);
	int near = 0;
	for (int i = 0; i < 64; i++)
		near += (uint32_t)(ms - v[i]) < 1000000u || (uint32_t)(v[i] - ms) < 1000000u;
	CU_ASSERT(near < 8); /* 64 draws in a window of 2e6 of 4.3e9: 0.03 expected */
}

/* A HELLO of rank 1's "newer incarnation" (an hour from now), broadcast as
 * discovery sends them, tagged with key (NULL: a zero tag). */
static void hello_from_1(const uint8_t *key)
{
	uint8_t pl[PP_NODE_NAME + 1 + PP_AUTH_TAG_LEN] = {0};
	snprintf((char *)pl, PP_NODE_NAME, "evil");
	pl[PP_NODE_NAME] = 1; /* knows all */
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	struct pp_wire_hdr h = {.type = PP_WIRE_HELLO,
				.payload_len = sizeof(pl),
				.job = a[0].job,
				.src_rank = 1,
				.dst_rank = PP_WIRE_RANK_ALL,
				.tag = 2, /* the job's size */
				.msg_len = sizeof(pl),
				.offset = (uint64_t)t.tv_sec * 1000u + 3600000u,
				.src_inc = a[1].inc + 3600000u,
				.dst_inc = 0};
	forge(&h, pl, 0, key);
}

/* (d) A forged HELLO (right job key and size, newer incarnation) with no
 * proof, or a tag made with another key, ends nothing: the pair still sends
 * and receives. One signed with the job's key is taken: rank 1 started
 * again, so what rank 0 does with it fails with -ECONNRESET. */
static void forged_hello(int keyed)
{
	setup(keyed, 1);
	CU_ASSERT_TRUE_FATAL(deliver(0, 1, 2000, 5));
	uint8_t wrong[PP_AUTH_KEY_LEN];
	CU_ASSERT_EQUAL(pp_auth_key_derive("not the secret", wrong), 0);
	uint64_t before = e[0]->ctx->mem.unproven;
	hello_from_1(NULL);
	hello_from_1(wrong);
	CU_ASSERT_EQUAL(e[0]->ctx->mem.unproven, before + 2);
	CU_ASSERT_FALSE(pp_proto_peer_lost(e[0]->ctx->eng, 1));
	CU_ASSERT_EQUAL(pp_membership_peer(e[0]->ctx, 1)->inc, a[1].inc);
	CU_ASSERT_TRUE(deliver(1, 0, 2000, 6));
	CU_ASSERT_TRUE(deliver(0, 1, 2000, 7));
	if (keyed) {
		uint8_t key[PP_AUTH_KEY_LEN];
		CU_ASSERT_EQUAL(pp_auth_key_derive(SECRET, key), 0);
		hello_from_1(key);
		CU_ASSERT_TRUE(pp_proto_peer_lost(e[0]->ctx->eng, 1));
		uint8_t b[8];
		CU_ASSERT_EQUAL(pp_embed_send(e[0], 1, 9, b, sizeof(b), 3), -ECONNRESET);
	}
	teardown();
}

static void test_forged_hello_keyed(void)
{
	forged_hello(1);
}

static void test_forged_hello_no_secret(void)
{
	forged_hello(0);
}

/* (e) A BYE "from rank 1" (its incarnation, to rank 0's) without proof ends
 * nothing: a receive from rank 1 posted before it still gets rank 1's
 * message. A signed one ends rank 1: the next such receive fails with
 * -ECONNRESET. */
static void test_forged_bye(void)
{
	setup(1, 1);
	CU_ASSERT_TRUE_FATAL(deliver(1, 0, 100, 8));
	struct pp_wire_hdr h = {.type = PP_WIRE_BYE,
				.payload_len = PP_AUTH_TAG_LEN,
				.job = a[0].job,
				.src_rank = 1,
				.dst_rank = 0,
				.src_inc = a[1].inc,
				.dst_inc = a[0].inc};
	uint8_t tag[PP_AUTH_TAG_LEN] = {0};
	uint8_t r[64], s[64];
	memset(s, 0x3c, sizeof(s));
	int recvs = seen[0].recvs + 1;
	CU_ASSERT_EQUAL(pp_embed_recv(e[0], 1, 10, 0, r, sizeof(r), 4), 0);
	uint64_t before = e[0]->ctx->mem.unproven;
	forge(&h, tag, 0, NULL);
	h.payload_len = 0; /* as a node daemon's BYE for a dead rank */
	forge(&h, NULL, 0, NULL);
	CU_ASSERT_EQUAL(e[0]->ctx->mem.unproven, before + 2);
	CU_ASSERT_EQUAL(seen[0].recvs, recvs - 1); /* still waiting */
	CU_ASSERT_EQUAL(pp_embed_send(e[1], 0, 10, s, sizeof(s), 5), 0);
	CU_ASSERT_TRUE(pump_until(&seen[0].recvs, recvs));
	CU_ASSERT_EQUAL(seen[0].recv_err, 0);
	CU_ASSERT_EQUAL(memcmp(r, s, sizeof(s)), 0);
	CU_ASSERT_TRUE(deliver(0, 1, 100, 11));
	/* Signed with the job's key: taken. */
	uint8_t key[PP_AUTH_KEY_LEN];
	CU_ASSERT_EQUAL(pp_auth_key_derive(SECRET, key), 0);
	recvs = seen[0].recvs + 1;
	CU_ASSERT_EQUAL(pp_embed_recv(e[0], 1, 12, 0, r, sizeof(r), 6), 0);
	h.payload_len = PP_AUTH_TAG_LEN;
	forge(&h, tag, 0, key);
	CU_ASSERT_TRUE(pump_until(&seen[0].recvs, recvs));
	CU_ASSERT_EQUAL(seen[0].recv_err, -ECONNRESET);
	teardown();
}

/* The tag: what it covers, and a verification that fails on any change. */
static void test_tag(void)
{
	uint8_t key[PP_AUTH_KEY_LEN], other[PP_AUTH_KEY_LEN], f[256];
	CU_ASSERT_EQUAL(pp_auth_key_derive("", key), -EINVAL);
	CU_ASSERT_EQUAL(pp_auth_key_derive(NULL, key), -EINVAL);
	CU_ASSERT_EQUAL(pp_auth_key_derive(SECRET, key), 0);
	CU_ASSERT_EQUAL(pp_auth_key_derive(SECRET "x", other), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(key, other, sizeof(key)), 0);
	uint8_t pl[20 + PP_AUTH_TAG_LEN] = {1, 2, 3};
	const uint8_t mac[6] = {2, 0, 0, 0, 0, 1};
	struct pp_wire_hdr h = {.type = PP_WIRE_HELLO,
				.payload_len = sizeof(pl),
				.job = 7,
				.src_rank = 1,
				.dst_rank = 0,
				.tag = 2,
				.src_inc = 5};
	int n = pp_wire_encode(f, sizeof(f), mac, mac, &h, pl);
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL(pp_auth_verify(key, f, (size_t)n), -EACCES); /* zero tag */
	CU_ASSERT_EQUAL(pp_auth_sign(key, f, (size_t)n), 0);
	CU_ASSERT_EQUAL(pp_auth_verify(key, f, (size_t)n), 0);
	CU_ASSERT_EQUAL(pp_auth_verify(other, f, (size_t)n), -EACCES);
	struct pp_wire_check chk = {7, 0, 2, 1500, 9};
	struct pp_wire_hdr g;
	const uint8_t *p;
	enum pp_drop_reason why;
	CU_ASSERT_EQUAL(pp_wire_decode(f, (size_t)n, &chk, &g, &p, &why), 0); /* CRC redone */
	/* Source MAC, header and payload are covered; the destination is not. */
	const int covered[] = {6,
			       11,
			       PP_ETH_HLEN + PP_WIRE_OFF_SRC_INC + 3,
			       PP_ETH_HLEN + PP_WIRE_OFF_OFFSET + 7,
			       PP_WIRE_MIN_FRAME + 2,
			       n - 1};
	for (size_t i = 0; i < sizeof(covered) / sizeof(covered[0]); i++) {
		f[covered[i]] ^= 1;
		CU_ASSERT_EQUAL(pp_auth_verify(key, f, (size_t)n), -EACCES);
		f[covered[i]] ^= 1;
	}
	f[0] ^= 1;
	CU_ASSERT_EQUAL(pp_auth_verify(key, f, (size_t)n), 0);
	CU_ASSERT_EQUAL(pp_auth_verify(key, f, PP_WIRE_MIN_FRAME + 4), -EPROTO);
	CU_ASSERT_EQUAL(pp_auth_sign(key, f, (size_t)n - 1), -EINVAL);
}

static CU_TestInfo tests[] = {
    {"a bad-CRC frame makes no rank known", test_bad_crc_learns_nothing},
    {"the AV replaces a rank learnt from a frame", test_av_replaces_learnt},
    {"incarnations are not the clock", test_incarnation_not_clock},
    {"a forged HELLO ends no pair (secret)", test_forged_hello_keyed},
    {"a forged HELLO ends no pair (no secret)", test_forged_hello_no_secret},
    {"a BYE without proof ends no peer", test_forged_bye},
    {"HELLO/BYE tag: coverage and verification", test_tag},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sec_wire", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
