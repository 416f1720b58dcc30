/* SPDX-License-Identifier: BSD-3-Clause */
/* driver/sim through the port interface: open strings, bursts, broadcast,
 * unicast, virtual time, rate, and the lossy behaviours' statistics. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#include "cu_main.h"
#include "pp_log.h"
#include "pp_port.h"
#include "sim/pp_sim.h"

static int setup(void)
{
	pp_log_set_level("off"); /* error paths log on purpose */
	return 0;
}

static void frame(struct pp_buf *b, unsigned dst, unsigned src, uint32_t n, uint8_t fill)
{
	memset(b->data, 0, 12);
	if (dst == 255) {
		memset(b->data, 0xff, 6);
	} else {
		b->data[0] = 0x02;
		b->data[5] = (uint8_t)dst;
	}
	b->data[6] = 0x02;
	b->data[11] = (uint8_t)src;
	b->data[12] = 0x88;
	b->data[13] = 0xB5;
	memset(b->data + 14, fill, n - 14);
	b->len = n;
}

static void test_open_strings(void)
{
	struct pp_sim_conf sc = {.seed = 1};
	struct pp_sim_link *l;
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&l, "t0", 3, &sc), 0);
	struct pp_sim_link *l2;
	CU_ASSERT_EQUAL(pp_sim_link_create(&l2, "t0", 2, &sc), -EEXIST);
	CU_ASSERT_EQUAL(pp_sim_link_create(&l2, "a/b", 2, &sc), -EINVAL);
	CU_ASSERT_EQUAL(pp_sim_link_create(&l2, "t1", 0, &sc), -EINVAL);
	sc.loss = 1.5;
	CU_ASSERT_EQUAL(pp_sim_link_create(&l2, "t1", 2, &sc), -EINVAL);
	struct pp_port *p = NULL, *q = NULL;
	CU_ASSERT_EQUAL(pp_port_open(&p, "sim:", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "sim:t0", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "sim:t0/", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "sim:/1", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "sim:t0/x", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "sim:t0/-1", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "sim:t0/3", NULL), -ENODEV);
	CU_ASSERT_EQUAL(pp_port_open(&p, "sim:nope/0", NULL), -ENODEV);
	struct pp_port_conf two = {.nb_queues = 2};
	CU_ASSERT_EQUAL(pp_port_open(&p, "sim:t0/0", &two), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&p, "sim:t0/2", NULL), 0);
	CU_ASSERT_EQUAL(pp_port_open(&q, "sim:t0/2", NULL), -EBUSY);
	struct pp_port_info info;
	CU_ASSERT_EQUAL(pp_port_info(p, &info), 0);
	static const uint8_t mac[6] = {2, 0, 0, 0, 0, 2};
	CU_ASSERT_EQUAL(memcmp(info.mac, mac, 6), 0);
	CU_ASSERT_EQUAL(info.mtu, 1500);
	CU_ASSERT(info.buf_cap >= 1514);
	CU_ASSERT_STRING_EQUAL(info.driver, "sim");
	pp_port_close(p);
	CU_ASSERT_EQUAL(pp_port_open(&p, "sim:t0/2", NULL), 0);
	pp_port_close(p);
	pp_sim_link_destroy(l);
}

static void test_unicast_broadcast(void)
{
	struct pp_sim_conf sc = {.seed = 2};
	struct pp_sim_link *l;
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&l, "t1", 3, &sc), 0);
	struct pp_port *p[3];
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&p[0], "sim:t1/0", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&p[1], "sim:t1/1", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&p[2], "sim:t1/2", NULL), 0);
	struct pp_buf *b[8];
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p[0], b, 4), 4);
	frame(b[0], 1, 0, 100, 0xA1);
	frame(b[1], 2, 0, 200, 0xA2);
	frame(b[2], 255, 0, 64, 0xBB);
	frame(b[3], 7, 0, 64, 0xCC); /* no such port */
	CU_ASSERT_EQUAL(pp_port_tx_burst(p[0], 0, b, 4), 4);
	struct pp_buf *r[8];
	unsigned n = pp_port_rx_burst(p[1], 0, r, 8);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(r[0]->len, 100);
	CU_ASSERT_EQUAL(r[0]->data[50], 0xA1);
	CU_ASSERT_EQUAL(r[1]->len, 64);
	CU_ASSERT_EQUAL(r[1]->data[20], 0xBB);
	pp_port_free(p[1], r, n);
	n = pp_port_rx_burst(p[2], 0, r, 8);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(r[0]->len, 200);
	CU_ASSERT_EQUAL(r[0]->data[150], 0xA2);
	CU_ASSERT_EQUAL(r[1]->data[20], 0xBB);
	pp_port_free(p[2], r, n);
	CU_ASSERT_EQUAL(pp_port_rx_burst(p[0], 0, r, 8), 0); /* not to itself */
	struct pp_sim_stats st;
	pp_sim_link_stats(l, &st);
	CU_ASSERT_EQUAL(st.no_dest, 1);
	CU_ASSERT_EQUAL(st.delivered, 4);
	struct pp_port_stats ps;
	CU_ASSERT_EQUAL(pp_port_stats(p[0], &ps), 0);
	CU_ASSERT_EQUAL(ps.tx_frames, 4);
	CU_ASSERT_EQUAL(pp_port_stats(p[1], &ps), 0);
	CU_ASSERT_EQUAL(ps.rx_frames, 2);
	CU_ASSERT_EQUAL(ps.rx_bytes, 164);
	for (int i = 0; i < 3; i++)
		pp_port_close(p[i]);
	pp_sim_link_destroy(l);
}

static void test_time_rate(void)
{
	/* 1 Gbit/s, 10 us delay: a 1250-byte frame takes 10 us on the wire. */
	struct pp_sim_conf sc = {.seed = 3, .delay_ns = 10000, .rate_bps = 1000000000};
	struct pp_sim_link *l;
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&l, "t2", 2, &sc), 0);
	struct pp_port *a, *b;
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&a, "sim:t2/0", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&b, "sim:t2/1", NULL), 0);
	CU_ASSERT_EQUAL(pp_sim_link_next_event(l), UINT64_MAX);
	struct pp_buf *x[2], *r[4];
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(a, x, 2), 2);
	frame(x[0], 1, 0, 1250, 1);
	frame(x[1], 1, 0, 1250, 2);
	CU_ASSERT_EQUAL(pp_port_tx_burst(a, 0, x, 2), 2);
	CU_ASSERT_EQUAL(pp_sim_link_next_event(l), 20000);
	pp_sim_link_set_time(l, 19999);
	CU_ASSERT_EQUAL(pp_port_rx_burst(b, 0, r, 4), 0);
	pp_sim_link_set_time(l, 20000);
	CU_ASSERT_EQUAL(pp_port_rx_burst(b, 0, r, 4), 1);
	CU_ASSERT_EQUAL(r[0]->data[14], 1);
	pp_port_free(b, r, 1);
	CU_ASSERT_EQUAL(pp_sim_link_next_event(l), 30000);
	pp_sim_link_set_time(l, 30000);
	CU_ASSERT_EQUAL(pp_port_rx_burst(b, 0, r, 4), 1);
	CU_ASSERT_EQUAL(r[0]->data[14], 2);
	pp_port_free(b, r, 1);
	CU_ASSERT_EQUAL(pp_sim_link_next_event(l), UINT64_MAX);
	pp_port_close(a);
	pp_port_close(b);
	pp_sim_link_destroy(l);
}

static unsigned count_changed(struct pp_buf **r, unsigned k)
{
	unsigned changed = 0;
	for (unsigned j = 0; j < k; j++) {
		int same = r[j]->len == 200 && r[j]->data[0] == 2 && r[j]->data[5] == 1 &&
			   r[j]->data[11] == 0 && r[j]->data[12] == 0x88 && r[j]->data[13] == 0xB5;
		for (unsigned o = 1; o < 5 && same; o++)
			same = r[j]->data[o] == 0 && r[j]->data[6 + o] == 0;
		same = same && r[j]->data[6] == 2;
		for (unsigned o = 14; o < 200 && same; o++)
			same = r[j]->data[o] == 0x5A;
		changed += !same;
	}
	return changed;
}

/* Send n frames with the given behaviour; return the link's counters and
 * check what arrived against them. */
static void lossy(const struct pp_sim_conf *sc, unsigned n, struct pp_sim_stats *st,
		  unsigned *changed)
{
	struct pp_sim_link *l;
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&l, "t3", 2, sc), 0);
	struct pp_port *a, *b;
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&a, "sim:t3/0", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&b, "sim:t3/1", NULL), 0);
	unsigned got = 0;
	*changed = 0;
	for (unsigned i = 0; i < n; i++) {
		struct pp_buf *x, *r[4];
		CU_ASSERT_EQUAL_FATAL(pp_port_alloc(a, &x, 1), 1);
		frame(x, 1, 0, 200, 0x5A);
		CU_ASSERT_EQUAL(pp_port_tx_burst(a, 0, &x, 1), 1);
		pp_sim_link_set_time(l, (uint64_t)i * 1000000);
		unsigned k = pp_port_rx_burst(b, 0, r, 4);
		*changed += count_changed(r, k);
		got += k;
		pp_port_free(b, r, k);
	}
	pp_sim_link_set_time(l, UINT64_MAX / 2);
	struct pp_buf *r[4];
	unsigned k;
	while ((k = pp_port_rx_burst(b, 0, r, 4)) > 0) {
		*changed += count_changed(r, k);
		got += k;
		pp_port_free(b, r, k);
	}
	pp_sim_link_stats(l, st);
	CU_ASSERT_EQUAL(st->sent, n);
	CU_ASSERT_EQUAL(got, n - st->lost + st->duplicated);
	CU_ASSERT_EQUAL(st->delivered, got);
	pp_port_close(a);
	pp_port_close(b);
	pp_sim_link_destroy(l);
}

static void test_lossy_stats(void)
{
	struct pp_sim_conf sc = {.seed = 42,
				 .loss = 0.05,
				 .dup = 0.02,
				 .corrupt = 0.01,
				 .reorder = 0.03,
				 .delay_ns = 500000};
	struct pp_sim_stats st, st2;
	unsigned changed, changed2;
	lossy(&sc, 20000, &st, &changed);
	/* Binomial expectations, within about five standard deviations. */
	CU_ASSERT(st.lost > 1000 - 160 && st.lost < 1000 + 160);
	CU_ASSERT(st.duplicated > 380 - 100 && st.duplicated < 380 + 100);
	CU_ASSERT(st.corrupted > 190 - 70 && st.corrupted < 190 + 70);
	CU_ASSERT(st.reordered > 570 - 120 && st.reordered < 570 + 120);
	/* Each corrupted frame (and its duplicate, if any) arrives changed. */
	CU_ASSERT(changed >= st.corrupted && changed <= 2 * st.corrupted);
	/* Same seed, same run. */
	lossy(&sc, 20000, &st2, &changed2);
	CU_ASSERT_EQUAL(memcmp(&st, &st2, sizeof(st)), 0);
	CU_ASSERT_EQUAL(changed, changed2);
	struct pp_sim_conf clean = {.seed = 42};
	lossy(&clean, 1000, &st, &changed);
	CU_ASSERT_EQUAL(st.lost + st.duplicated + st.corrupted + st.reordered, 0);
	CU_ASSERT_EQUAL(changed, 0);
}

struct side {
	struct pp_port *port; /* this thread's port */
	unsigned peer;	      /* index of the other port */
	unsigned sent;	      /* frames it sent */
	unsigned got;	      /* frames it received */
};

enum { THREAD_FRAMES = 20000 };

/* Send THREAD_FRAMES frames to the peer while receiving, concurrently with
 * the other side. Frames a full receive ring refuses are counted by the port. */
static void *side_run(void *arg)
{
	struct side *sd = arg;
	while (sd->sent < THREAD_FRAMES) {
		struct pp_buf *b[8];
		unsigned want = THREAD_FRAMES - sd->sent < 8 ? THREAD_FRAMES - sd->sent : 8;
		unsigned n = pp_port_alloc(sd->port, b, want);
		for (unsigned i = 0; i < n; i++)
			frame(b[i], sd->peer, 1 - sd->peer, 100, (uint8_t)i);
		sd->sent += pp_port_tx_burst(sd->port, 0, b, n);
		unsigned k = pp_port_rx_burst(sd->port, 0, b, 8);
		sd->got += k;
		pp_port_free(sd->port, b, k);
	}
	return NULL;
}

static void test_threads(void)
{
	struct pp_sim_conf sc = {.seed = 9};
	struct pp_sim_link *l;
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&l, "t4", 2, &sc), 0);
	struct side sd[2] = {{.peer = 1}, {.peer = 0}};
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&sd[0].port, "sim:t4/0", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&sd[1].port, "sim:t4/1", NULL), 0);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, side_run, &sd[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	/* Every frame either arrived or was refused by a full ring: exact
	 * counts show no update was lost to a race. */
	uint64_t dropped = 0;
	for (int i = 0; i < 2; i++) {
		struct pp_buf *b[8];
		unsigned k;
		while ((k = pp_port_rx_burst(sd[i].port, 0, b, 8)) > 0) {
			sd[i].got += k;
			pp_port_free(sd[i].port, b, k);
		}
		struct pp_port_stats ps;
		CU_ASSERT_EQUAL(pp_port_stats(sd[i].port, &ps), 0);
		CU_ASSERT_EQUAL(sd[i].sent, THREAD_FRAMES);
		CU_ASSERT_EQUAL(sd[i].got + ps.rx_dropped, THREAD_FRAMES);
		CU_ASSERT_EQUAL(ps.rx_frames, sd[i].got);
		dropped += ps.rx_dropped;
	}
	struct pp_sim_stats st;
	pp_sim_link_stats(l, &st);
	CU_ASSERT_EQUAL(st.delivered + st.overflow, 2 * THREAD_FRAMES);
	CU_ASSERT_EQUAL(st.overflow, dropped);
	/* Every buffer is back in the pool: the whole pool can be taken. */
	static struct pp_buf *all[2 * 4096 + 8];
	unsigned total = 0, k;
	while ((k = pp_port_alloc(sd[0].port, all + total, 8)) > 0)
		total += k;
	CU_ASSERT_EQUAL(total, 2 * 4096);
	pp_port_free(sd[0].port, all, total);
	pp_port_close(sd[0].port);
	pp_port_close(sd[1].port);
	pp_sim_link_destroy(l);
}

/* poll() says readable now (timeout 0). */
static int readable(int fd)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	return poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN);
}

/* The wait descriptor is readable exactly while frames wait in the ring:
 * not before they arrive (virtual time), not once rx_burst took them all. */
static void test_wait_fd(void)
{
	struct pp_sim_conf sc = {.seed = 6, .delay_ns = 1000};
	struct pp_sim_link *l;
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&l, "t6", 2, &sc), 0);
	struct pp_port *p[2];
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&p[0], "sim:t6/0", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&p[1], "sim:t6/1", NULL), 0);
	int fd = pp_port_wait_fd(p[1]);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pp_port_wait_fd(p[1]), fd); /* the same one each time */
	CU_ASSERT(!readable(fd));
	struct pp_buf *b[3], *r[3];
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p[0], b, 3), 3);
	for (int i = 0; i < 3; i++)
		frame(b[i], 1, 0, 64, (uint8_t)i);
	CU_ASSERT_EQUAL(pp_port_tx_burst(p[0], 0, b, 3), 3);
	CU_ASSERT(!readable(fd)); /* in flight */
	pp_sim_link_set_time(l, 1000);
	CU_ASSERT(readable(fd));
	CU_ASSERT_EQUAL(pp_port_rx_burst(p[1], 0, r, 2), 2);
	CU_ASSERT(readable(fd)); /* one still waits */
	pp_port_free(p[1], r, 2);
	CU_ASSERT_EQUAL(pp_port_rx_burst(p[1], 0, r, 3), 1);
	CU_ASSERT(!readable(fd));
	pp_port_free(p[1], r, 1);
	pp_port_close(p[0]);
	pp_port_close(p[1]);
	pp_sim_link_destroy(l);
}

static CU_TestInfo tests[] = {
    {"open strings and errors", test_open_strings},
    {"unicast and broadcast", test_unicast_broadcast},
    {"virtual time, delay and rate", test_time_rate},
    {"loss, dup, corrupt, reorder statistics", test_lossy_stats},
    {"two threads on one link", test_threads},
    {"wait descriptor readable while frames wait", test_wait_fd},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sim", setup, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
