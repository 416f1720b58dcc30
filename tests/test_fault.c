/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * driver/fault: a sim port wrapped with loss, duplication and reordering on
 * receive. 20 000 frames, each numbered and patterned: every frame
 * delivered is intact, each number arrives at most twice, the shares lost,
 * doubled and out of order are near what was asked, and held frames come
 * out once calls go by with nothing new.
 */
#include <stdlib.h>
#include <string.h>

#include "cu_main.h"
#include "pp_port.h"
#include "sim/pp_sim.h"

#define N 20000

static void frame(struct pp_buf *b, uint32_t k)
{
	memset(b->data, 0xff, 6); /* broadcast: the other port */
	memcpy(b->data + 6, "\x02\0\0\0\0\0", 6);
	b->data[12] = 0x88, b->data[13] = 0xB5;
	memcpy(b->data + 14, &k, 4);
	for (int i = 18; i < 100; i++)
		b->data[i] = (uint8_t)(k * 7 + (uint32_t)i);
	b->len = 100;
}

static int intact(const struct pp_buf *b, uint32_t *k)
{
	if (b->len != 100)
		return 0;
	memcpy(k, b->data + 14, 4);
	for (int i = 18; i < 100; i++)
		if (b->data[i] != (uint8_t)(*k * 7 + (uint32_t)i))
			return 0;
	return *k < N;
}

static void test_faults(void)
{
	struct pp_sim_link *l;
	struct pp_sim_conf sc = {.seed = 1, .mtu = 1500};
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&l, "fault", 2, &sc), 0);
	struct pp_port *tx, *rx;
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&tx, "sim:fault/0", NULL), 0);
	CU_ASSERT_EQUAL(pp_port_open(&rx, "fault:loss=0.6;sim:fault/1", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&rx, "fault:loss=0.05;", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&rx, "fault:jitter=0.1;sim:fault/1", NULL), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(
	    pp_port_open(&rx, "fault:loss=0.05,dup=0.01,reorder=0.05,seed=3;sim:fault/1", NULL), 0);
	static uint8_t seen[N];
	unsigned got = 0, dups = 0, late = 0, bad = 0;
	uint32_t high = 0;
	for (uint32_t k = 0; k < N; k++) {
		struct pp_buf *b;
		CU_ASSERT_FATAL(pp_port_alloc(tx, &b, 1) == 1);
		frame(b, k);
		CU_ASSERT_FATAL(pp_port_tx_burst(tx, 0, &b, 1) == 1);
		struct pp_buf *in[32];
		/* A few calls per frame, some with nothing new: held frames
		 * must come out by themselves. */
		for (int c = 0; c < 2; c++) {
			unsigned n = pp_port_rx_burst(rx, 0, in, 32);
			for (unsigned i = 0; i < n; i++) {
				uint32_t x;
				if (!intact(in[i], &x)) {
					bad++;
					continue;
				}
				got++;
				dups += seen[x]++ > 0;
				late += x < high;
				if (x > high)
					high = x;
			}
			pp_port_free(rx, in, n);
		}
	}
	for (int c = 0; c < 10; c++) { /* the last held ones */
		struct pp_buf *in[32];
		unsigned n = pp_port_rx_burst(rx, 0, in, 32);
		for (unsigned i = 0; i < n; i++) {
			uint32_t x;
			if (intact(in[i], &x)) {
				got++;
				dups += seen[x]++ > 0;
			}
		}
		pp_port_free(rx, in, n);
	}
	unsigned missing = 0, thrice = 0;
	for (uint32_t k = 0; k < N; k++) {
		missing += !seen[k];
		thrice += seen[k] > 2;
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(thrice, 0);
	CU_ASSERT(missing > N * 4 / 100 && missing < N * 6 / 100); /* 5% lost */
	CU_ASSERT(dups > N / 200 && dups < N * 15 / 1000);	   /* 1% doubled */
	CU_ASSERT(late > N * 3 / 100 && late < N * 7 / 100);	   /* 5% held back */
	CU_ASSERT_EQUAL(got, N - missing + dups);
	struct pp_port_stats st;
	CU_ASSERT_EQUAL(pp_port_stats(rx, &st), 0);
	CU_ASSERT_EQUAL(st.rx_dropped, missing);
	/* Bursts received into small arrays: never more than asked for. */
	for (int round = 0; round < 200; round++) {
		struct pp_buf *b[32];
		CU_ASSERT_FATAL(pp_port_alloc(tx, b, 32) == 32);
		for (int i = 0; i < 32; i++)
			frame(b[i], (uint32_t)i);
		CU_ASSERT_FATAL(pp_port_tx_burst(tx, 0, b, 32) == 32);
		for (int c = 0; c < 40; c++) {
			struct pp_buf *in[4] = {NULL, NULL, NULL, NULL};
			unsigned want = 1 + (unsigned)(c % 3),
				 n = pp_port_rx_burst(rx, 0, in, want);
			CU_ASSERT(n <= want);
			pp_port_free(rx, in, n);
		}
	}
	pp_port_close(rx);
	pp_port_close(tx);
	pp_sim_link_destroy(l);
}

static CU_TestInfo tests[] = {
    {"loss, duplication and reordering on receive", test_faults},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"fault", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
