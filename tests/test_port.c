/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * driver/port.c and driver/capture.c: opening by device string (every bad
 * string gives a clear negative errno, never a crash), the libpcap backend's
 * errors, and pcap_dump: every frame sent and received is in the file,
 * byte for byte, once, in order, readable by tshark.
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

static int setup(void)
{
	pp_log_set_level("off"); /* the error paths below log on purpose */
	return 0;
}

static void test_open_bad_args(void)
{
	struct pp_port *p = (struct pp_port *)0x1; /* must stay untouched */
	struct pp_port_conf conf = {.nb_queues = 1};
	CU_ASSERT_EQUAL(pp_port_open(&p, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(NULL, "pcap:lo", NULL), -EINVAL);
	conf.nb_queues = 0;
	CU_ASSERT_EQUAL(pp_port_open(&p, "pcap:lo", &conf), -EINVAL);
	conf.nb_queues = PP_PORT_MAX_QUEUES + 1;
	CU_ASSERT_EQUAL(pp_port_open(&p, "pcap:lo", &conf), -EINVAL);
	CU_ASSERT_PTR_EQUAL(p, (struct pp_port *)0x1);
	CU_ASSERT_EQUAL(pp_port_info(NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_stats(NULL, NULL), -EINVAL);
	pp_port_close(NULL);
}

static void test_open_pcap_bad(void)
{
	struct pp_port *p = (struct pp_port *)0x1;
	CU_ASSERT_EQUAL(pp_port_open(&p, "pcap:", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "pcap:nonexistent0", NULL), -ENODEV);
	CU_ASSERT_EQUAL(pp_port_open(&p, "pcap:an-interface-name-far-too-long-for-linux", NULL),
			-EINVAL);
	CU_ASSERT_PTR_EQUAL(p, (struct pp_port *)0x1);
}

/* Strings the DPDK parser refuses before EAL sees them. */
static void test_open_dpdk_bad_syntax(void)
{
	static const char *const bad[] = {
	    "--bogus",
	    "-h",
	    "--help",
	    "-v",
	    "--vdev",
	    "--vdev=",
	    "-a",
	    "--no-huge",	   /* options but no device */
	    "-l",		   /* option without its value */
	    "--vdev=net_ring0 -l", /* same, after a device */
	    "--vdev=net_ring0 --file-prefix=",
	    "--vdev=net_ring0 --vdev=net_ring1", /* one device per port */
	    "net_ring0 net_ring1",
	    "--vdev=net_ring0 --proc-type=secondary",
	    "--vdev=net_ring0 ;rm -rf /",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pp_port *p = (struct pp_port *)0x1;
		int rc = pp_port_open(&p, bad[i], NULL);
		if (rc != -EINVAL)
			fprintf(stderr, "'%s' gave %d\n", bad[i], rc);
		CU_ASSERT_EQUAL(rc, -EINVAL);
		CU_ASSERT_PTR_EQUAL(p, (struct pp_port *)0x1);
	}
}

/* A port whose TX takes at most tx_limit frames per call. */
struct fake_port {
	struct pp_port base;   /* must be first */
	unsigned tx_limit;     /* frames tx_burst takes per call */
	unsigned nb_sent;      /* frames taken so far */
	uint8_t sent[16][128]; /* copies of what was taken */
	uint32_t sent_len[16]; /* their lengths */
	struct pp_buf *rx[4];  /* what rx_burst hands out */
	unsigned nb_rx;	       /* entries in rx */
};

static unsigned fake_tx(struct pp_port *port, uint16_t q, struct pp_buf **bufs, unsigned n)
{
	struct fake_port *f = (struct fake_port *)port;
	(void)q;
	unsigned k = n < f->tx_limit ? n : f->tx_limit;
	for (unsigned i = 0; i < k; i++) {
		memcpy(f->sent[f->nb_sent], bufs[i]->data, bufs[i]->len);
		f->sent_len[f->nb_sent++] = bufs[i]->len;
	}
	return k;
}

static unsigned fake_rx(struct pp_port *port, uint16_t q, struct pp_buf **bufs, unsigned n)
{
	struct fake_port *f = (struct fake_port *)port;
	(void)q;
	unsigned k = n < f->nb_rx ? n : f->nb_rx;
	memcpy(bufs, f->rx, k * sizeof(*bufs));
	f->nb_rx -= k;
	return k;
}

static const struct pp_port_ops fake_ops = {
    .name = "fake", .rx_burst = fake_rx, .tx_burst = fake_tx};

static void fill(struct pp_buf *b, uint8_t *mem, uint32_t len, uint8_t seed)
{
	b->data = mem;
	b->len = len;
	b->cap = 128;
	b->ts_ns = 0;
	for (uint32_t i = 0; i < len; i++)
		mem[i] = (uint8_t)(seed + i * 3);
	mem[12] = 0x88; /* EtherType 0x88B5 */
	mem[13] = 0xb5;
}

static void test_capture_roundtrip(void)
{
	char path[] = "/tmp/pp_test_capture_XXXXXX";
	int fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	struct fake_port f;
	memset(&f, 0, sizeof(f));
	f.base.ops = &fake_ops;
	CU_ASSERT_FATAL(pp_capture_open(&f.base.capture, path) == 0);

	static uint8_t mem[8][128];
	struct pp_buf b[8];
	struct pp_buf *v[8];
	static const uint32_t lens[8] = {60, 61, 64, 100, 127, 128, 60, 90};
	for (int i = 0; i < 8; i++) {
		fill(&b[i], mem[i], lens[i], (uint8_t)(i * 17));
		v[i] = &b[i];
	}
	/* TX of 5 where the port takes 2: only those 2 are recorded ... */
	f.tx_limit = 2;
	CU_ASSERT_EQUAL(pp_port_tx_burst(&f.base, 0, v, 5), 2);
	/* ... then the other 3 when they really go out. */
	f.tx_limit = 16;
	CU_ASSERT_EQUAL(pp_port_tx_burst(&f.base, 0, v + 2, 3), 3);
	/* RX of 3, one with a receive time. */
	b[5].ts_ns = 1700000000123456789ull;
	f.rx[0] = &b[5];
	f.rx[1] = &b[6];
	f.rx[2] = &b[7];
	f.nb_rx = 3;
	struct pp_buf *got[8];
	CU_ASSERT_EQUAL(pp_port_rx_burst(&f.base, 0, got, 8), 3);
	pp_capture_close(f.base.capture);

	struct pcap_file pf;
	CU_ASSERT_FATAL(pcap_file_read(path, &pf) == 0);
	CU_ASSERT_EQUAL(pf.linktype, 1);
	CU_ASSERT_EQUAL(pf.nsec, 1);
	CU_ASSERT_EQUAL_FATAL(pf.n, 8);
	for (unsigned i = 0; i < 8; i++) {
		CU_ASSERT_EQUAL(pf.recs[i].len, lens[i]);
		CU_ASSERT_EQUAL(pf.recs[i].caplen, lens[i]);
		CU_ASSERT_EQUAL(memcmp(pf.recs[i].data, mem[i], lens[i]), 0);
	}
	CU_ASSERT_EQUAL(pf.recs[5].ts_ns, 1700000000123456789ull);
	CU_ASSERT(pf.recs[0].ts_ns > 1700000000000000000ull); /* now, not zero */
	pcap_file_free(&pf);
	/* The port got each frame once, in order. */
	CU_ASSERT_EQUAL(f.nb_sent, 5);
	for (unsigned i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(memcmp(f.sent[i], mem[i], lens[i]), 0);

	/* tshark, where installed, reads the same 8 frames. */
	if (system("command -v tshark >/dev/null 2>&1") == 0) {
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "tshark -r %s -T fields -e frame.len -e eth.type 2>&1",
			 path);
		FILE *t = popen(cmd, "r");
		CU_ASSERT_FATAL(t != NULL);
		char line[256];
		unsigned n = 0;
		while (fgets(line, sizeof(line), t)) {
			unsigned len;
			char type[32];
			if (sscanf(line, "%u %31s", &len, type) == 2 && n < 8) {
				CU_ASSERT_EQUAL(len, lens[n]);
				CU_ASSERT_STRING_EQUAL(type, "0x88b5");
				n++;
			}
		}
		CU_ASSERT_EQUAL(pclose(t), 0);
		CU_ASSERT_EQUAL(n, 8);
	}
	unlink(path);
}

/* A backend without the optional external-buffer ops says so. */
static void test_optional_ops_absent(void)
{
	struct fake_port f;
	memset(&f, 0, sizeof(f));
	f.base.ops = &fake_ops;
	static uint8_t mem[128], user[4096];
	struct pp_buf b;
	fill(&b, mem, 60, 1);
	CU_ASSERT_EQUAL(pp_port_mem_register(&f.base, user, sizeof(user)), -ENOTSUP);
	CU_ASSERT_EQUAL(pp_port_mem_unregister(&f.base, user, sizeof(user)), -ENOTSUP);
	CU_ASSERT_EQUAL(pp_port_mem_register(NULL, user, sizeof(user)), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_attach_ext(&f.base, &b, user, 100, NULL, NULL), -ENOTSUP);
}

static void test_capture_open_bad(void)
{
	struct pp_capture *c = (struct pp_capture *)0x1;
	CU_ASSERT_EQUAL(pp_capture_open(&c, "/nonexistent-dir/x.pcap"), -ENOENT);
	CU_ASSERT_PTR_EQUAL(c, (struct pp_capture *)0x1);
	pp_capture_close(NULL);
}

static CU_TestInfo open_tests[] = {
    {"bad arguments", test_open_bad_args},
    {"pcap: bad interfaces", test_open_pcap_bad},
    {"dpdk: malformed strings", test_open_dpdk_bad_syntax},
    {"optional ops absent: -ENOTSUP", test_optional_ops_absent},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo capture_tests[] = {
    {"frames sent and received, once, in order", test_capture_roundtrip},
    {"open errors", test_capture_open_bad},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"port_open", setup, NULL, NULL, NULL, open_tests},
    {"capture", setup, NULL, NULL, NULL, capture_tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
