/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BTP fitted to the link: proto/path.h alone (least round trip, delivery
 * rate, bandwidth-delay product), then two engines over a link with a delay
 * and a rate on virtual time, where a message the path holds in one round
 * trip goes without a PULL and a longer one's PULL comes back before its
 * pushes end; explicit BTPs (btp_fit off) stay as given.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "path.h"
#include "test_proto_harness.h"

/* ---- the leaf ---- */

static void test_rtt(void)
{
	struct pp_path p = {0};
	pp_path_rtt(&p, 1000, 0); /* no sample */
	CU_ASSERT_EQUAL(p.rtt_min, 0);
	pp_path_rtt(&p, 1000, 30000);
	pp_path_rtt(&p, 2000, 20000);
	pp_path_rtt(&p, 3000, 25000);
	CU_ASSERT_EQUAL(p.rtt_min, 20000);
	/* An epoch later the least sample is forgotten: the path got slower. */
	pp_path_rtt(&p, 2000 + PP_PATH_RTT_EPOCH + 1, 40000);
	CU_ASSERT_EQUAL(p.rtt_min, 40000);
}

static void test_rate(void)
{
	struct pp_path p = {0};
	pp_path_rtt(&p, 1, 10000);
	uint64_t t = 1000000;
	pp_path_acked(&p, t, 5000, 0); /* starts the interval, counts nothing */
	CU_ASSERT_EQUAL(p.rate, 0);
	/* 1 byte/ns for 100 us: 1e6 bytes/ms, a sample every 50 us. */
	for (int i = 1; i <= 10; i++)
		pp_path_acked(&p, t + (uint64_t)i * 10000, 10000, 0);
	CU_ASSERT_EQUAL(p.samples, 2);
	CU_ASSERT_EQUAL(p.rate, 1000000);
	CU_ASSERT_EQUAL(pp_path_fit(&p), 10000);
	/* Too few bytes in an interval (a ping-pong of small messages): no
	 * sample. */
	t += 100000;
	for (int i = 1; i <= 10; i++)
		pp_path_acked(&p, t + (uint64_t)i * 10000, 8, 0);
	CU_ASSERT_EQUAL(p.samples, 2);
	CU_ASSERT_EQUAL(p.rate, 1000000);
	/* A lower sample moves the estimate a sixteenth of the way... */
	t += 100000;
	pp_path_acked(&p, t + 100000, 50000, 0); /* 0.5 byte/ns */
	CU_ASSERT_EQUAL(p.samples, 3);
	CU_ASSERT_EQUAL(p.rate, 1000000 - 500000 / 16);
	/* ... a higher one all the way. */
	t += 100000;
	pp_path_acked(&p, t + 50000, 100000, 0); /* 2 bytes/ns */
	CU_ASSERT_EQUAL(p.rate, 2000000);
	/* No sample above the link's rate. */
	p.rate_max = 1500000;
	t += 100000;
	pp_path_acked(&p, t + 50000, 200000, 0); /* 4 bytes/ns, bunched acks */
	CU_ASSERT_EQUAL(p.rate, 2000000 - 500000 / 16);
	p.rate_max = 0;
	/* An interval shorter than two least round trips waits. */
	p.rtt_min = 80000;
	uint64_t before = p.samples;
	t += 50000;
	pp_path_acked(&p, t + 100000, 100000, 0);
	CU_ASSERT_EQUAL(p.samples, before);
	pp_path_acked(&p, t + 160000, 100000, 0);
	CU_ASSERT_EQUAL(p.samples, before + 1);
	/* An interval in which the sender ran dry (an ack left nothing in
	 * flight: a ping-pong) measured the application: lower, it is not
	 * taken; higher, it is. */
	p.rtt_min = 10000;
	uint64_t r = p.rate;
	t += 200000;
	pp_path_acked(&p, t, 0, 1);		 /* dry: the next interval is limited */
	pp_path_acked(&p, t + 100000, 40000, 0); /* 0.4 byte/ns */
	CU_ASSERT_EQUAL(p.rate, r);
	pp_path_acked(&p, t + 120000, 5000, 1); /* dry within the interval */
	pp_path_acked(&p, t + 200000, 40000, 0);
	CU_ASSERT_EQUAL(p.rate, r);
	pp_path_acked(&p, t + 250000, 500000, 0); /* 10 bytes/ns, not dry */
	CU_ASSERT_EQUAL(p.rate, 10000000);
	pp_path_acked(&p, t + 350000, 40000, 0); /* not dry: lowers */
	CU_ASSERT_EQUAL(p.rate, 10000000 - (10000000 - 400000) / 16);
}

/* ---- two engines over a link with a delay and a rate ---- */

#define DELAY_NS 5000 /* one way */
#define QCAP	 2048 /* frames in flight per direction */

struct inflight {
	uint64_t at; /* arrival time */
	uint16_t len;
	uint8_t f[1600];
};

static struct link_state {
	struct pp_proto *e[2];
	uint64_t now;
	uint64_t free_at[2]; /* when direction i's wire is free again (1 byte/ns) */
	struct inflight q[2][QCAP];
	unsigned head[2], tail[2];
	unsigned pulls[2];  /* PULL frames sent by engine i */
	unsigned pushes[2]; /* PUSH frames sent by engine i */
} L;

static void link_init(int fit, uint32_t btp1, uint32_t btp2, uint64_t rate_hint)
{
	memset(&L, 0, sizeof(L));
	L.now = 1000;
	struct pp_proto_conf c;
	pp_proto_conf_default(&c);
	c.btp_fit = fit;
	c.rate_hint = rate_hint;
	c.btp1 = btp1;
	c.btp2 = btp2;
	c.window = 256;
	c.pushbuf_bytes = 4u << 20;
	for (unsigned i = 0; i < 2; i++) {
		struct pp_proto_conf ci = c;
		ci.rank = i;
		ci.nranks = 2;
		ci.job = 0x5eed;
		ci.inc = net_inc(i);
		net_mac(i, ci.mac);
		CU_ASSERT_EQUAL_FATAL(pp_proto_create(&L.e[i], &ci), 0);
	}
	for (unsigned i = 0; i < 2; i++) {
		uint8_t mac[6];
		net_mac(1 - i, mac);
		CU_ASSERT_EQUAL_FATAL(pp_proto_peer_add(L.e[i], 1 - i, mac, net_inc(1 - i)), 0);
	}
}

static void link_fini(void)
{
	pp_proto_destroy(L.e[0]);
	pp_proto_destroy(L.e[1]);
}

/* Run until nothing is in flight or due; returns the time it went quiet. */
static uint64_t link_run(void)
{
	uint64_t quiet = L.now;
	for (int guard = 0; guard < 1000000; guard++) {
		for (unsigned i = 0; i < 2; i++) {
			for (;;) {
				struct inflight *x = &L.q[i][L.tail[i] % QCAP];
				CU_ASSERT_FATAL(L.tail[i] - L.head[i] < QCAP);
				int len = pp_proto_output(L.e[i], x->f, sizeof(x->f), L.now);
				CU_ASSERT_FATAL(len >= 0);
				if (len == 0)
					break;
				uint64_t start = L.free_at[i] > L.now ? L.free_at[i] : L.now;
				L.free_at[i] = start + (uint64_t)len;
				x->at = L.free_at[i] + DELAY_NS;
				x->len = (uint16_t)len;
				L.pulls[i] += pp_wire_type_of(x->f) == PP_WIRE_PULL;
				L.pushes[i] += pp_wire_type_of(x->f) == PP_WIRE_PUSH;
				L.tail[i]++;
				quiet = L.now;
			}
		}
		uint64_t t = UINT64_MAX;
		for (unsigned i = 0; i < 2; i++) {
			if (L.head[i] != L.tail[i] && L.q[i][L.head[i] % QCAP].at < t)
				t = L.q[i][L.head[i] % QCAP].at;
			uint64_t x = pp_proto_expiry(L.e[i]);
			if (x < t)
				t = x;
		}
		if (t == UINT64_MAX)
			return quiet;
		if (t > L.now)
			L.now = t;
		for (unsigned i = 0; i < 2; i++) {
			while (L.head[i] != L.tail[i] && L.q[i][L.head[i] % QCAP].at <= L.now) {
				struct inflight *x = &L.q[i][L.head[i] % QCAP];
				pp_proto_input(L.e[1 - i], x->f, x->len, L.now);
				L.head[i]++;
				quiet = L.now;
			}
			if (pp_proto_expiry(L.e[i]) <= L.now)
				pp_proto_handle_expiry(L.e[i], L.now);
		}
	}
	CU_FAIL("the link never went quiet");
	return L.now;
}

/* One message of n bytes from 0 to 1, the receive posted late ns after the
 * send (once the link went quiet), or first (0); returns the virtual time
 * from the send to the receive's completion. */
static uint64_t transfer_late(uint64_t n, unsigned seed, uint64_t late)
{
	static uint8_t s[2u << 20], r[2u << 20];
	pat_fill(s, n, seed);
	memset(r, 0, n);
	if (!late)
		CU_ASSERT_EQUAL_FATAL(pp_proto_recv(L.e[1], 0, 1, 0, r, n, 2), 0);
	uint64_t t0 = L.now;
	CU_ASSERT_EQUAL_FATAL(pp_proto_send(L.e[0], 1, 1, s, n, 1), 0);
	if (late) {
		link_run();
		L.now = t0 + late > L.now ? t0 + late : L.now;
		CU_ASSERT_EQUAL_FATAL(pp_proto_recv(L.e[1], 0, 1, 0, r, n, 2), 0);
	}
	uint64_t done = 0;
	struct pp_proto_cpl c;
	/* Step the link until the receive completes. */
	while (!done) {
		uint64_t before = L.now;
		link_run();
		while (pp_proto_poll(L.e[1], &c)) {
			CU_ASSERT(c.cookie == 2 && c.error == 0 && c.len == n);
			done = L.now;
		}
		if (!done && L.now == before)
			CU_FAIL_FATAL("the receive never completed");
	}
	while (pp_proto_poll(L.e[0], &c))
		CU_ASSERT(c.cookie == 1 && c.error == 0);
	CU_ASSERT(pat_check(r, n, seed));
	return done - t0;
}

static uint64_t transfer(uint64_t n, unsigned seed)
{
	return transfer_late(n, seed, 0);
}

/* Traffic that teaches the sender its path: messages of one frame (acked at
 * once: clean round trips) and long ones (rate samples). */
static void warm_up(void)
{
	for (unsigned k = 0; k < 4; k++) {
		transfer(64, k);
		transfer(256u << 10, 10 + k);
	}
}

/* Messages of one size, from one link, to find when each completes: the
 * time is taken at the receive's completion in link_run's steps, so a
 * quiet link (it finished) bounds it. */
static void test_fit(void)
{
	link_init(1, 80, 680, 0);
	warm_up();
	struct pp_stats st;
	pp_proto_stats(L.e[0], &st);
	/* Round trip: two delays and the two frames' wire time. */
	CU_ASSERT(st.path_rtt_ns >= 2 * DELAY_NS && st.path_rtt_ns <= 2 * DELAY_NS + 2000);
	/* Rate: 1 byte/ns on the wire, headers included. */
	CU_ASSERT(st.path_rate >= 850000000u && st.path_rate <= 1000000000u);
	/* What the path carries in a round trip, in whole frames. */
	const uint64_t maxp = 1500 - PP_WIRE_HDR_LEN;
	uint64_t bdp = st.path_rate * st.path_rtt_ns / 1000000000u;
	CU_ASSERT_EQUAL(st.push_now, (bdp + maxp - 1) / maxp * maxp);
	CU_ASSERT(bdp > 8192);

	/* 8 KiB fits the path's round trip: pushed whole, no PULL. */
	unsigned pulls = L.pulls[1];
	uint64_t fitted_before = st.pushes_fitted;
	transfer(8192, 100);
	CU_ASSERT_EQUAL(L.pulls[1], pulls);
	pp_proto_stats(L.e[0], &st);
	CU_ASSERT_EQUAL(st.pushes_fitted, fitted_before + 1);

	/* 512 KiB: one PULL, back about when the pushes end, so the message
	 * takes its wire time and one delay, not a round trip more (within a
	 * fifth of one: the estimate counts payload bytes, the wire carries
	 * headers too, and the first frame is a whole one, so the PULL leaves
	 * a frame's time later than after BTP(1)'s). The pushes are whole
	 * frames, the first one too: no frame more than the message needs. */
	pulls = L.pulls[1];
	unsigned pushes = L.pushes[0];
	pp_proto_stats(L.e[0], &st);
	uint64_t push = st.push_now, n = 512u << 10, t = transfer(n, 101);
	CU_ASSERT_EQUAL(L.pulls[1], pulls + 1);
	CU_ASSERT_EQUAL(L.pushes[0] - pushes, push / maxp);
	/* payload and headers at 1 byte/ns (MTU 1500) */
	uint64_t wire = n + (n / maxp + 1) * PP_WIRE_MIN_FRAME;
	CU_ASSERT(t <= wire + 2 * DELAY_NS + 2000);
	link_fini();

	/* Explicit BTPs: 8 KiB waits for a PULL, and 512 KiB takes a round
	 * trip more. */
	link_init(0, 80, 680, 0);
	warm_up();
	pulls = L.pulls[1];
	transfer(8192, 100);
	CU_ASSERT_EQUAL(L.pulls[1], pulls + 1);
	uint64_t t_fixed = transfer(n, 101);
	CU_ASSERT(t_fixed > t + DELAY_NS);
	pp_proto_stats(L.e[0], &st);
	CU_ASSERT_EQUAL(st.pushes_fitted, 0);
	CU_ASSERT_EQUAL(st.push_now, 760);
	link_fini();
}

/* A receiver that posts its receive after the message came (a blocking
 * ping-pong: its own send completes first): the PULL comes back after that
 * wait, not after the path's round trip, and the sender, its pushes out,
 * sits idle until then (pull_wait_ns). The next messages push what covers
 * the PULL's round trip: 32 KiB, split before, now goes whole. Then a
 * receive posted far later (the sender idle for more than two of the
 * path's round trips: the receiver's lateness, not the path's): the next
 * messages push all that credit allows (push_cap), so 256 KiB goes whole
 * too; until a PULL comes back while the pushes are still going (an early
 * receiver of a message longer than that), which brings the fit back. */
static void test_fit_pull_rtt(void)
{
	const uint64_t late = 40000;
	link_init(1, 80, 680, 1000000000u); /* the link's rate: 1 byte/ns */
	transfer(64, 1);		    /* the path's round trip */
	struct pp_stats st;
	pp_proto_stats(L.e[0], &st);
	CU_ASSERT(st.push_now >= 2 * DELAY_NS && st.push_now < 32768);
	CU_ASSERT_EQUAL(st.pull_waits, 0);

	unsigned pulls = L.pulls[1];
	transfer_late(64u << 10, 2, late);
	CU_ASSERT_EQUAL(L.pulls[1], pulls + 1);
	pp_proto_stats(L.e[0], &st);
	CU_ASSERT_EQUAL(st.pull_waits, 1);
	/* Idle from its last push to the PULL; here frames are made at once,
	 * so that is the PULL's whole round trip, which the fit takes (at 1
	 * byte/ns, as many bytes as ns, in whole frames). */
	const uint64_t maxp = 1500 - PP_WIRE_HDR_LEN;
	CU_ASSERT(st.pull_wait_ns >= late && st.pull_wait_ns < 2 * late);
	CU_ASSERT_EQUAL(st.push_now, (st.pull_wait_ns + maxp - 1) / maxp * maxp);

	pulls = L.pulls[1];
	transfer(32768, 3);
	CU_ASSERT_EQUAL(L.pulls[1], pulls); /* pushed whole */
	pp_proto_stats(L.e[0], &st);
	CU_ASSERT_EQUAL(st.pull_waits, 1);
	uint64_t fit = st.push_now;
	CU_ASSERT(st.pull_wait_ns < 2 * st.path_rtt_ns); /* not late by the rule */

	pulls = L.pulls[1];
	transfer_late(512u << 10, 4, 20 * late);
	CU_ASSERT_EQUAL(L.pulls[1], pulls + 1);
	pp_proto_stats(L.e[0], &st);
	CU_ASSERT_EQUAL(st.pull_waits, 2);
	CU_ASSERT(st.push_now >= 512u << 10); /* push_cap: half the 4 MiB share, to 1 MiB */
	pulls = L.pulls[1];
	transfer(256u << 10, 5);
	CU_ASSERT_EQUAL(L.pulls[1], pulls); /* pushed whole */

	pulls = L.pulls[1];
	transfer(2u << 20, 6);	       /* posted first: its PULL overtakes the pushes */
	CU_ASSERT(L.pulls[1] > pulls); /* a PULL for each 1 MiB chunk */
	pp_proto_stats(L.e[0], &st);
	CU_ASSERT_EQUAL(st.pull_waits, 2);
	CU_ASSERT(st.push_now < fit); /* the fit again (a shorter round trip seen since) */
	link_fini();
}

/* A link rate given at create (the port's speed) fits the pushes from the
 * first round trip on, before any rate is measured: 8 KiB after one
 * one-frame message goes without a PULL; without the hint it waits for one. */
static void test_rate_hint(void)
{
	for (int hint = 0; hint < 2; hint++) {
		link_init(1, 80, 680, hint ? 1000000000u : 0);
		transfer(64, 1); /* a round trip, no rate sample */
		unsigned pulls = L.pulls[1];
		transfer(8192, 2);
		CU_ASSERT_EQUAL(L.pulls[1], pulls + (hint ? 0u : 1u));
		link_fini();
	}
}

/* A message pushed whole has no reason for a short first frame (BTP(1) lets
 * the receiver send its PULL early): with btp_fit, 500 bytes go in one
 * frame; with explicit BTPs in BTP(1) and the rest. */
static void test_first_frame(void)
{
	for (int fit = 0; fit < 2; fit++) {
		link_init(fit, 80, 680, 0);
		unsigned pushes = L.pushes[0];
		transfer(500, 3);
		CU_ASSERT_EQUAL(L.pushes[0] - pushes, fit ? 1u : 2u);
		link_fini();
	}
}

static CU_TestInfo tests[] = {
    {"least round trip, kept for an epoch", test_rtt},
    {"delivery rate: intervals, small messages, slow decrease", test_rate},
    {"engine: a message the path holds goes without a PULL", test_fit},
    {"engine: a late receive's PULL round trip fits the pushes", test_fit_pull_rtt},
    {"engine: the link's rate until one is measured", test_rate_hint},
    {"engine: a message pushed whole goes in frames as long as any", test_first_frame},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"proto_path", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
