/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * driver/dpdk through the port interface, without privileges or hardware:
 * net_ring (a loopback: what is sent comes back) for the data path and the
 * pool, net_pcap for file in / file out and for external-buffer TX, and
 * device strings that must fail cleanly once EAL is up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "cu_main.h"
#include "port_pcap_file.h"
#include "pp_log.h"
#include "pp_port.h"

static struct pp_port *ring; /* the loopback port every test shares */
static struct pp_port_info ring_info;

static int setup(void)
{
	pp_log_set_level("off"); /* the error paths below log on purpose */
	return 0;
}

static int teardown(void)
{
	pp_port_close(ring);
	ring = NULL;
	return 0;
}

static void fill(struct pp_buf *b, uint32_t len, unsigned seed)
{
	static const uint8_t hdr[14] = {0x02, 0x50, 0x50, 0, 0, 1,    0x02,
					0x50, 0x50, 0,	  0, 2, 0x88, 0xb5};
	memcpy(b->data, hdr, sizeof(hdr));
	for (uint32_t i = sizeof(hdr); i < len; i++)
		b->data[i] = (uint8_t)(seed * 11 + i * 7);
	b->len = len;
}

static int check(const uint8_t *data, uint32_t len, unsigned seed)
{
	for (uint32_t i = 14; i < len; i++)
		if (data[i] != (uint8_t)(seed * 11 + i * 7))
			return 0;
	return data[12] == 0x88 && data[13] == 0xb5;
}

/* First DPDK open of the process: EAL starts here, without hugepages. */
static void test_ring_open(void)
{
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&ring, "--no-huge -m 512 --vdev=net_ring0", NULL), 0);
	CU_ASSERT_EQUAL(pp_port_info(ring, &ring_info), 0);
	CU_ASSERT_STRING_EQUAL(ring_info.driver, "net_ring");
	CU_ASSERT_EQUAL(ring_info.nb_queues, 1);
	CU_ASSERT(ring_info.mtu >= 1500);
	CU_ASSERT(ring_info.buf_cap >= (uint32_t)ring_info.mtu + PP_ETH_HLEN);
	CU_ASSERT_EQUAL(ring_info.link_up, 1);
}

static void test_bad_devices(void)
{
	static const struct {
		const char *dev; /* device string */
		int rc;		 /* expected error */
	} bad[] = {
	    {"--vdev=net_bogus0", -ENODEV},
	    {"net_bogus0", -ENODEV},
	    {"garbage", -ENODEV},
	    {"--vdev=net_af_packet0,iface=nonexistent0", -ENODEV},
	    {"--vdev=net_af_xdp0,iface=nonexistent0", -ENODEV},
	    {"--vdev=net_pcap9,rx_pcap=/nonexistent/in.pcap,tx_pcap=/tmp/x.pcap", -ENODEV},
	    {"--vdev=net_ring0", -EBUSY}, /* open already */
	    {"--vdev=net_ring0 --bogus", -EINVAL},
	    /* frame=udp needs a kernel interface's address (net_ring has none) */
	    {"--vdev=net_ring1 frame=udp", -ENODEV},
	    {"--vdev=net_ring1 frame=udp,port=50000 frame=eth", -EINVAL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pp_port *p = (struct pp_port *)0x1;
		int rc = pp_port_open(&p, bad[i].dev, NULL);
		if (rc != bad[i].rc)
			fprintf(stderr, "'%s' gave %d, not %d\n", bad[i].dev, rc, bad[i].rc);
		CU_ASSERT_EQUAL(rc, bad[i].rc);
		CU_ASSERT_PTR_EQUAL(p, (struct pp_port *)0x1);
	}
}

static void test_ring_loopback(void)
{
	CU_ASSERT_FATAL(ring != NULL);
	struct pp_port_stats s0, s1;
	CU_ASSERT_EQUAL(pp_port_stats(ring, &s0), 0);
	enum { N = 40 };
	struct pp_buf *b[N], *r[N + 8];
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(ring, b, N), N);
	uint32_t max = (uint32_t)ring_info.mtu + PP_ETH_HLEN;
	uint32_t lens[N];
	for (unsigned i = 0; i < N; i++) {
		CU_ASSERT(b[i]->cap >= max);
		lens[i] = 60 + (uint32_t)i * (max - 60) / (N - 1); /* 60 .. MTU+14 */
		fill(b[i], lens[i], i);
	}
	CU_ASSERT_EQUAL(lens[N - 1], max);
	CU_ASSERT_EQUAL(pp_port_tx_burst(ring, 0, b, N), N);
	unsigned got = pp_port_rx_burst(ring, 0, r, N + 8);
	CU_ASSERT_EQUAL_FATAL(got, N);
	for (unsigned i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(r[i]->len, lens[i]);
		CU_ASSERT(check(r[i]->data, r[i]->len, i));
	}
	CU_ASSERT_EQUAL(pp_port_rx_burst(ring, 0, r + N, 8), 0);
	pp_port_free(ring, r, N);
	CU_ASSERT_EQUAL(pp_port_stats(ring, &s1), 0);
	CU_ASSERT_EQUAL(s1.tx_frames - s0.tx_frames, N);
	CU_ASSERT_EQUAL(s1.rx_frames - s0.rx_frames, N);
}

static void test_pool_exhaustion(void)
{
	CU_ASSERT_FATAL(ring != NULL);
	enum { MAX = 1 << 17 };
	struct pp_buf **all = malloc(MAX * sizeof(*all));
	CU_ASSERT_FATAL(all != NULL);
	unsigned total = 0, got;
	do {
		got = pp_port_alloc(ring, all + total, 100);
		total += got;
	} while (got == 100 && total + 100 <= MAX);
	CU_ASSERT(total > 1000);
	CU_ASSERT(total + 100 <= MAX);
	CU_ASSERT(got < 100); /* the pool ran dry ... */
	struct pp_buf *one;
	CU_ASSERT_EQUAL(pp_port_alloc(ring, &one, 1), 0);
	struct pp_port_stats s;
	CU_ASSERT_EQUAL(pp_port_stats(ring, &s), 0);
	CU_ASSERT(s.alloc_failed >= 1); /* ... and said so */
	pp_port_free(ring, all, total);
	CU_ASSERT_EQUAL(pp_port_alloc(ring, all, total), total); /* all came back */
	pp_port_free(ring, all, total);
	free(all);
}

/* One queue pair per engine core: frames sent on queue q come back on q. */
static void test_ring_queues(void)
{
	struct pp_port_conf conf = {.nb_queues = 4};
	struct pp_port *p;
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&p, "--vdev=net_ring1", &conf), 0);
	struct pp_port_info in;
	CU_ASSERT_EQUAL(pp_port_info(p, &in), 0);
	CU_ASSERT_EQUAL(in.nb_queues, 4);
	for (uint16_t q = 0; q < 4; q++) {
		struct pp_buf *b[2], *r[4];
		CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p, b, 2), 2);
		fill(b[0], 60, 20u + q);
		fill(b[1], 200, 30u + q);
		CU_ASSERT_EQUAL(pp_port_tx_burst(p, q, b, 2), 2);
		for (uint16_t o = 0; o < 4; o++)
			if (o != q)
				CU_ASSERT_EQUAL(pp_port_rx_burst(p, o, r, 4), 0);
		CU_ASSERT_EQUAL_FATAL(pp_port_rx_burst(p, q, r, 4), 2);
		CU_ASSERT(r[0]->len == 60 && check(r[0]->data, 60, 20u + q));
		CU_ASSERT(r[1]->len == 200 && check(r[1]->data, 200, 30u + q));
		pp_port_free(p, r, 2);
	}
	pp_port_close(p);
}

static unsigned ext_done_calls;
static void *ext_done_arg;

static void ext_done(void *arg)
{
	ext_done_calls++;
	ext_done_arg = arg;
}

static void tmpname(char *path, size_t n, const char *what)
{
	snprintf(path, n, "/tmp/pp_test_port_dpdk_%ld_%s.pcap", (long)getpid(), what);
}

/* net_pcap: frames from a file written by pp_capture come in intact; frames
 * sent, one of them with an external buffer, land in the output file. */
static void test_pcap_files_and_ext(void)
{
	char in[128], out[128], dev[400];
	tmpname(in, sizeof(in), "in");
	tmpname(out, sizeof(out), "out");
	/* The input file: 6 frames written by the capture writer. */
	struct pp_capture *cap;
	CU_ASSERT_FATAL(pp_capture_open(&cap, in) == 0);
	static uint8_t mem[6][1514];
	static const uint32_t in_lens[6] = {60, 61, 64, 500, 1513, 1514};
	for (unsigned i = 0; i < 6; i++) {
		struct pp_buf b = {.data = mem[i], .cap = 1514};
		fill(&b, in_lens[i], 100 + i);
		struct pp_buf *v = &b;
		pp_capture_frames(cap, &v, 1);
	}
	pp_capture_close(cap);

	snprintf(dev, sizeof(dev), "--vdev=net_pcap0,rx_pcap=%s,tx_pcap=%s", in, out);
	struct pp_port *p;
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&p, dev, NULL), 0);
	struct pp_buf *r[16];
	unsigned got = 0;
	for (int tries = 0; tries < 1000 && got < 6; tries++)
		got += pp_port_rx_burst(p, 0, r + got, 16 - got);
	CU_ASSERT_EQUAL_FATAL(got, 6);
	for (unsigned i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL(r[i]->len, in_lens[i]);
		CU_ASSERT(check(r[i]->data, r[i]->len, 100 + i));
	}
	pp_port_free(p, r, got);

	/* External buffer: registered memory, 1000 bytes after a 30-byte header. */
	size_t region = 1 << 16;
	uint8_t *user = aligned_alloc(4096, region);
	CU_ASSERT_FATAL(user != NULL);
	for (size_t i = 0; i < region; i++)
		user[i] = (uint8_t)(i * 5 + 3);
	CU_ASSERT_EQUAL_FATAL(pp_port_mem_register(p, user, region), 0);

	struct pp_buf *t[3];
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p, t, 3), 3);
	fill(t[0], 60, 1);
	fill(t[1], 1514, 2);
	fill(t[2], 30, 3);
	CU_ASSERT_EQUAL(pp_port_attach_ext(p, t[2], NULL, 10, ext_done, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_attach_ext(p, t[2], user, 1485, ext_done, NULL), -EMSGSIZE);
	int rc = pp_port_attach_ext(p, t[2], user + 4096, 1000, ext_done, &ext_done_calls);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(pp_port_attach_ext(p, t[2], user, 10, ext_done, NULL), -EBUSY);
	CU_ASSERT_EQUAL(ext_done_calls, 0); /* not before it is sent */
	CU_ASSERT_EQUAL(pp_port_tx_burst(p, 0, t, 3), 3);
	struct pp_port_stats s;
	CU_ASSERT_EQUAL(pp_port_stats(p, &s), 0);
	CU_ASSERT_EQUAL(s.tx_frames, 3);
	CU_ASSERT_EQUAL(s.tx_bytes, 60 + 1514 + 1030);
	/* net_pcap writes and frees in tx_burst: the bytes are given back. */
	CU_ASSERT_EQUAL(ext_done_calls, 1);
	CU_ASSERT_PTR_EQUAL(ext_done_arg, &ext_done_calls);
	CU_ASSERT_EQUAL(pp_port_mem_unregister(NULL, user, region), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_mem_unregister(p, user, region), 0);
	pp_port_close(p); /* flushes the output file */

	struct pcap_file pf;
	CU_ASSERT_FATAL(pcap_file_read(out, &pf) == 0);
	CU_ASSERT_EQUAL_FATAL(pf.n, 3);
	CU_ASSERT_EQUAL(pf.recs[0].len, 60);
	CU_ASSERT(check(pf.recs[0].data, 60, 1));
	CU_ASSERT_EQUAL(pf.recs[1].len, 1514);
	CU_ASSERT(check(pf.recs[1].data, 1514, 2));
	CU_ASSERT_EQUAL_FATAL(pf.recs[2].caplen, 1030);
	CU_ASSERT(check(pf.recs[2].data, 30, 3));
	CU_ASSERT_EQUAL(memcmp(pf.recs[2].data + 30, user + 4096, 1000), 0);
	pcap_file_free(&pf);
	free(user);
	unlink(in);
	unlink(out);
}

/* On the loopback: an attached buffer freed unsent calls done too. */
static void test_ext_free_unsent(void)
{
	char in[128], out[128], dev[400];
	tmpname(in, sizeof(in), "in2");
	tmpname(out, sizeof(out), "out2");
	struct pp_capture *cap;
	CU_ASSERT_FATAL(pp_capture_open(&cap, in) == 0); /* an empty input */
	pp_capture_close(cap);
	snprintf(dev, sizeof(dev), "--vdev=net_pcap1,rx_pcap=%s,tx_pcap=%s", in, out);
	struct pp_port *p;
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&p, dev, NULL), 0);
	static uint8_t user[8192] __attribute__((aligned(4096)));
	CU_ASSERT_EQUAL_FATAL(pp_port_mem_register(p, user, sizeof(user)), 0);
	struct pp_buf *b;
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p, &b, 1), 1);
	fill(b, 30, 9);
	ext_done_calls = 0;
	CU_ASSERT_EQUAL(pp_port_attach_ext(p, b, user, 500, ext_done, user), 0);
	pp_port_free(p, &b, 1);
	CU_ASSERT_EQUAL(ext_done_calls, 1);
	CU_ASSERT_PTR_EQUAL(ext_done_arg, user);
	CU_ASSERT_EQUAL(pp_port_mem_unregister(p, user, sizeof(user)), 0);
	pp_port_close(p);
	unlink(in);
	unlink(out);
}

static CU_TestInfo tests[] = {
    {"net_ring opens (EAL starts, --no-huge)", test_ring_open},
    {"bad devices fail cleanly after EAL is up", test_bad_devices},
    {"loopback: 60..MTU+14 bytes intact, in order", test_ring_loopback},
    {"pool runs dry, reports it, refills", test_pool_exhaustion},
    {"four queue pairs, each its own path", test_ring_queues},
    {"net_pcap file in/out, external-buffer TX", test_pcap_files_and_ext},
    {"external buffer freed unsent calls done", test_ext_free_unsent},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"dpdk", setup, teardown, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
