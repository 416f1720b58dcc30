/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * driver/udp: the MAC encoding; device strings refused with an errno and a
 * message saying why; and, over 127.0.0.1 in this process, ports exchanging
 * frames of several sizes byte for byte, bursts of 32, broadcasts reaching
 * every peer of the list (and not the sender), and datagrams that lie about
 * their source, are not ours or not 0x88B5 dropped and counted. No
 * privilege needed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cu_main.h"
#include "pp_log.h"
#include "pp_port.h"
#include "udp/udp_addr.h"

#define NPORTS 4

static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static int setup(void)
{
	pp_log_set_level("off"); /* the error paths below log on purpose */
	return 0;
}

/* --- the MAC encoding ---------------------------------------------------- */

static struct sockaddr_in addr(const char *ip, unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static void test_mac_vectors(void)
{
	static const struct {
		const char *ip;
		unsigned port;
		uint8_t mac[6];
	} v[] = {
	    {"127.0.0.1", 49152, {0x02, 0x00, 0x7f, 0x00, 0x00, 0x01}},
	    {"10.1.2.3", 50000, {0x0e, 0x50, 0x0a, 0x01, 0x02, 0x03}},
	    {"192.168.255.254", 65535, {0xfe, 0xff, 0xc0, 0xa8, 0xff, 0xfe}},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct sockaddr_in a = addr(v[i].ip, v[i].port), back;
		uint8_t mac[6];
		pp_udp_mac_encode(&a, mac);
		CU_ASSERT_EQUAL(memcmp(mac, v[i].mac, 6), 0);
		CU_ASSERT_EQUAL(pp_udp_mac_decode(mac, &back), 0);
		CU_ASSERT_EQUAL(back.sin_family, AF_INET);
		CU_ASSERT_EQUAL(back.sin_port, a.sin_port);
		CU_ASSERT_EQUAL(back.sin_addr.s_addr, a.sin_addr.s_addr);
	}
	/* Every port of the range: unicast, locally administered, and back. */
	for (unsigned port = PP_UDP_PORT_MIN; port <= 65535; port++) {
		struct sockaddr_in a = addr("172.16.0.9", port), back;
		uint8_t mac[6];
		pp_udp_mac_encode(&a, mac);
		if ((mac[0] & 0x03) != 0x02 || pp_udp_mac_decode(mac, &back) ||
		    back.sin_port != a.sin_port) {
			CU_FAIL("port does not round-trip");
			break;
		}
	}
	/* Group and universal MACs stand for no address. */
	static const uint8_t not_udp[][6] = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
					     {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01},
					     {0x00, 0x1b, 0x21, 0x00, 0x00, 0x01},
					     {0x03, 0x00, 0x7f, 0x00, 0x00, 0x01}};
	for (size_t i = 0; i < sizeof(not_udp) / sizeof(not_udp[0]); i++) {
		struct sockaddr_in back;
		CU_ASSERT_EQUAL(pp_udp_mac_decode(not_udp[i], &back), -EINVAL);
	}
}

/* --- device strings ---------------------------------------------------------- */

/* Open dev with errors logged into msg: the result of pp_port_open. */
static int open_logged(const char *dev, struct pp_port **p, char *msg, size_t len)
{
	char path[] = "/tmp/test_port_udp_XXXXXX";
	int fd = mkstemp(path);
	int saved = dup(STDERR_FILENO);
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	pp_log_set_level("error");
	int rc = pp_port_open(p, dev, NULL);
	pp_log_set_level("off");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	ssize_t n = pread(fd, msg, len - 1, 0);
	msg[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	return rc;
}

static void test_bad_strings(void)
{
	static const struct {
		const char *dev;
		int rc;
		const char *says; /* part of the message */
	} bad[] = {
	    {"udp:", -EINVAL, "no address"},
	    {"udp:127.0.0.1", -EINVAL, "not ADDR:PORT"},
	    {"udp:127.0.0.1:", -EINVAL, "bad UDP port"},
	    {"udp:127.0.0.1:5x000", -EINVAL, "bad UDP port"},
	    {"udp:127.0.0.1:70000", -EINVAL, "bad UDP port"},
	    {"udp:127.0.0.1:8080", -EINVAL, "outside 49152..65535"},
	    {"udp:localhost:50000", -EINVAL, "not an IPv4 address"},
	    {"udp:127.1:50000", -EINVAL, "not an IPv4 address"},
	    {"udp:0.0.0.0:50000", -EINVAL, "not a wildcard"},
	    {"udp:239.1.1.1:50000", -EINVAL, "not a wildcard"},
	    {"udp:255.255.255.255:50000", -EINVAL, "not a wildcard"},
	    {"udp:127.0.0.1:50000,", -EINVAL, "unknown or empty option"},
	    {"udp:127.0.0.1:50000,bogus=1", -EINVAL, "unknown or empty option"},
	    {"udp:127.0.0.1:50000,peers=", -EINVAL, "unknown or empty option"},
	    {"udp:127.0.0.1:50000,peers=127.0.0.1", -EINVAL, "not ADDR:PORT"},
	    {"udp:127.0.0.1:50000,peers=127.0.0.1:0", -EINVAL, "outside 49152..65535"},
	    {"udp:127.0.0.1:50000,peers=127.0.0.1:50009-50001", -EINVAL, "outside"},
	    {"udp:127.0.0.1:50000,peers=127.0.0.1:49152-65535", -EINVAL, "more than 4096 peers"},
	    {"udp:127.0.0.1:50000,peerfile=/nonexistent/peers", -EINVAL, "cannot read the peer"},
	    {"udp:127.0.0.1:50000,mtu=100", -EINVAL, "mtu= wants the link MTU"},
	    {"udp:127.0.0.1:50000,mtu=70000", -EINVAL, "mtu= wants the link MTU"},
	    {"udp:127.0.0.1:50000,mtu=1500x", -EINVAL, "mtu= wants the link MTU"},
	    {"udp:127.0.0.1:50000,gso=2", -EINVAL, "unknown or empty option"},
	    /* TEST-NET-2: an address no interface here has */
	    {"udp:198.51.100.7:50000", -ENODEV, "no interface here has that address"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pp_port *p = (struct pp_port *)0x1;
		char msg[1024];
		int rc = open_logged(bad[i].dev, &p, msg, sizeof(msg));
		if (rc != bad[i].rc || !strstr(msg, bad[i].says))
			fprintf(stderr, "'%s' gave %d: %s\n", bad[i].dev, rc, msg);
		CU_ASSERT_EQUAL(rc, bad[i].rc);
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, bad[i].says));
		CU_ASSERT_PTR_EQUAL(p, (struct pp_port *)0x1);
	}
}

/* --- ports over 127.0.0.1 ----------------------------------------------------- */

static unsigned rnd_base(void)
{
	static unsigned s;
	if (!s)
		s = (unsigned)getpid() * 2654435761u;
	s = s * 1103515245u + 12345u;
	return PP_UDP_PORT_MIN + 1000 + (s >> 8) % 14000;
}

/* n ports on 127.0.0.1:base.., each listing all n as peers (extra options
 * appended); base in *base_out. 0, or the first error that is not a taken
 * port (those make it try another base). */
static int open_ports(struct pp_port **p, unsigned n, const char *extra, unsigned *base_out)
{
	for (int tries = 0; tries < 20; tries++) {
		unsigned base = rnd_base();
		unsigned i;
		int rc = 0;
		for (i = 0; i < n; i++) {
			char dev[256];
			snprintf(dev, sizeof(dev), "udp:127.0.0.1:%u,peers=127.0.0.1:%u-%u%s",
				 base + i, base, base + n - 1, extra ? extra : "");
			if ((rc = pp_port_open(&p[i], dev, NULL)))
				break;
		}
		if (i == n) {
			if (base_out)
				*base_out = base;
			return 0;
		}
		while (i--)
			pp_port_close(p[i]);
		if (rc != -EADDRINUSE)
			return rc;
	}
	return -EADDRINUSE;
}

static void close_ports(struct pp_port **p, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		pp_port_close(p[i]);
}

static uint8_t pattern(unsigned seed, unsigned i)
{
	return (uint8_t)(seed * 31u + i * 7u + (i >> 8));
}

/* A frame of len bytes from src to dst, its payload a pattern of seed. */
static void fill(struct pp_buf *b, const uint8_t dst[6], const uint8_t src[6], unsigned len,
		 unsigned seed)
{
	memcpy(b->data, dst, 6);
	memcpy(b->data + 6, src, 6);
	b->data[12] = PP_ETH_TYPE_PP >> 8;
	b->data[13] = PP_ETH_TYPE_PP & 0xff;
	for (unsigned i = PP_ETH_HLEN; i < len; i++)
		b->data[i] = pattern(seed, i);
	b->len = len;
}

static int frame_ok(const struct pp_buf *b, const uint8_t dst[6], const uint8_t src[6],
		    unsigned len, unsigned seed)
{
	if (b->len != len || memcmp(b->data, dst, 6) || memcmp(b->data + 6, src, 6))
		return 0;
	for (unsigned i = PP_ETH_HLEN; i < len; i++)
		if (b->data[i] != pattern(seed, i))
			return 0;
	return 1;
}

/* Up to want frames from p, waiting on its descriptor up to ms in all. */
static unsigned rx_wait(struct pp_port *p, struct pp_buf **bufs, unsigned want, int ms)
{
	unsigned got = 0;
	int fd = pp_port_wait_fd(p);
	for (int waited = 0; got < want && waited <= ms;) {
		got += pp_port_rx_burst(p, 0, bufs + got, want - got);
		if (got < want) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			if (poll(&pfd, 1, 10) == 0)
				waited += 10;
		}
	}
	return got;
}

static void test_sizes(void)
{
	struct pp_port *p[2];
	CU_ASSERT_EQUAL_FATAL(open_ports(p, 2, ",mtu=1500", NULL), 0);
	struct pp_port_info in[2];
	CU_ASSERT_EQUAL(pp_port_info(p[0], &in[0]), 0);
	CU_ASSERT_EQUAL(pp_port_info(p[1], &in[1]), 0);
	CU_ASSERT_EQUAL(in[0].mtu, 1500 - 28 - 14);
	CU_ASSERT_EQUAL(in[0].buf_cap, 1500 - 28);
	CU_ASSERT_STRING_EQUAL(in[0].driver, "udp");
	CU_ASSERT_EQUAL(in[0].mac[0] & 0x03, 0x02);
	CU_ASSERT_NOT_EQUAL(memcmp(in[0].mac, in[1].mac, 6), 0);
	CU_ASSERT(pp_port_wait_fd(p[0]) >= 0);

	const unsigned sizes[] = {PP_ETH_HLEN, 60, 77, 1000, 1024, in[0].mtu + 14u};
	for (unsigned dir = 0; dir < 2; dir++) {
		struct pp_port *tx = p[dir], *rx = p[1 - dir];
		const uint8_t *src = in[dir].mac, *dst = in[1 - dir].mac;
		for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			struct pp_buf *b, *r;
			CU_ASSERT_EQUAL_FATAL(pp_port_alloc(tx, &b, 1), 1);
			fill(b, dst, src, sizes[s], s + 10 * dir);
			CU_ASSERT_EQUAL_FATAL(pp_port_tx_burst(tx, 0, &b, 1), 1);
			CU_ASSERT_EQUAL_FATAL(rx_wait(rx, &r, 1, 2000), 1);
			CU_ASSERT(frame_ok(r, dst, src, sizes[s], s + 10 * dir));
			pp_port_free(rx, &r, 1);
		}
	}
	struct pp_port_stats st;
	CU_ASSERT_EQUAL(pp_port_stats(p[1], &st), 0);
	CU_ASSERT_EQUAL(st.rx_frames, 6);
	CU_ASSERT_EQUAL(st.tx_frames, 6);
	CU_ASSERT_EQUAL(st.rx_dropped, 0);

	/* Longer than the MTU, or to a MAC with no address: taken, not sent. */
	struct pp_buf *b[2];
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p[0], b, 2), 2);
	fill(b[0], in[1].mac, in[0].mac, 100, 1);
	b[0]->len = in[0].buf_cap + 1;
	static const uint8_t universal[6] = {0x00, 0x1b, 0x21, 0, 0, 1};
	fill(b[1], universal, in[0].mac, 100, 1);
	CU_ASSERT_EQUAL(pp_port_tx_burst(p[0], 0, b, 2), 2);
	CU_ASSERT_EQUAL(pp_port_stats(p[0], &st), 0);
	CU_ASSERT_EQUAL(st.tx_failed, 2);
	close_ports(p, 2);
}

static void test_burst(void)
{
	struct pp_port *p[2];
	CU_ASSERT_EQUAL_FATAL(open_ports(p, 2, NULL, NULL), 0);
	struct pp_port_info in[2];
	pp_port_info(p[0], &in[0]);
	pp_port_info(p[1], &in[1]);
	for (unsigned round = 0; round < 4; round++) {
		struct pp_buf *b[32], *r[32];
		CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p[0], b, 32), 32);
		for (unsigned i = 0; i < 32; i++)
			fill(b[i], in[1].mac, in[0].mac, 64 + 97 * i, 100 * round + i);
		unsigned sent = 0;
		for (int t = 0; sent < 32 && t < 1000; t++)
			sent += pp_port_tx_burst(p[0], 0, b + sent, 32 - sent);
		CU_ASSERT_EQUAL_FATAL(sent, 32);
		CU_ASSERT_EQUAL_FATAL(rx_wait(p[1], r, 32, 2000), 32);
		for (unsigned i = 0; i < 32; i++)
			CU_ASSERT(
			    frame_ok(r[i], in[1].mac, in[0].mac, 64 + 97 * i, 100 * round + i));
		pp_port_free(p[1], r, 32);
	}
	/* Every buffer went back to its pool. */
	struct pp_buf *all[1024];
	CU_ASSERT_EQUAL(pp_port_alloc(p[0], all, 1024), 1024);
	pp_port_free(p[0], all, 1024);
	CU_ASSERT_EQUAL(pp_port_alloc(p[1], all, 1024), 1024);
	pp_port_free(p[1], all, 1024);
	close_ports(p, 2);
}

/* Runs of frames to one peer (GSO groups, with gso=1: equal lengths, the
 * last shorter; full frames, 7 to a 64 KiB send) and frames to two peers
 * in turn: each arrives as its own datagram, in order, bytes checked. */
static void gso_bursts(const char *opt)
{
	struct pp_port *p[3];
	CU_ASSERT_EQUAL_FATAL(open_ports(p, 3, opt, NULL), 0);
	struct pp_port_info in[3];
	for (unsigned i = 0; i < 3; i++)
		pp_port_info(p[i], &in[i]);
	unsigned full = in[0].buf_cap;
	static const struct {
		unsigned n, len, last, spread; /* spread: to p[1] and p[2] in turn */
	} runs[] = {{33, 1000, 500, 0}, {20, 0, 0, 0}, {64, 300, 300, 0}, {40, 1400, 1400, 1}};
	for (unsigned t = 0; t < sizeof(runs) / sizeof(runs[0]); t++) {
		unsigned n = runs[t].n, len = runs[t].len ? runs[t].len : full;
		unsigned last = runs[t].last ? runs[t].last : full;
		struct pp_buf *b[64], *r[64];
		CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p[0], b, n), n);
		for (unsigned i = 0; i < n; i++) {
			unsigned to = runs[t].spread ? 1 + i % 2 : 1;
			fill(b[i], in[to].mac, in[0].mac, i + 1 < n ? len : last, 1000 * t + i);
		}
		unsigned sent = 0;
		for (int k = 0; sent < n && k < 1000; k++)
			sent += pp_port_tx_burst(p[0], 0, b + sent, n - sent);
		CU_ASSERT_EQUAL_FATAL(sent, n);
		for (unsigned to = 1; to <= (runs[t].spread ? 2u : 1u); to++) {
			unsigned want = runs[t].spread ? n / 2 : n;
			CU_ASSERT_EQUAL_FATAL(rx_wait(p[to], r, want, 2000), want);
			for (unsigned j = 0; j < want; j++) {
				unsigned i = runs[t].spread ? 2 * j + to - 1 : j;
				CU_ASSERT(frame_ok(r[j], in[to].mac, in[0].mac,
						   i + 1 < n ? len : last, 1000 * t + i));
			}
			pp_port_free(p[to], r, want);
		}
	}
	struct pp_port_stats st;
	pp_port_stats(p[0], &st);
	CU_ASSERT_EQUAL(st.tx_frames, 33 + 20 + 64 + 40);
	CU_ASSERT_EQUAL(st.tx_failed, 0);
	close_ports(p, 3);
}

static void test_gso(void)
{
	gso_bursts(NULL);
}

static void test_no_gso(void)
{
	gso_bursts(",gso=0");
}

static void test_broadcast(void)
{
	struct pp_port *p[NPORTS];
	CU_ASSERT_EQUAL_FATAL(open_ports(p, NPORTS, NULL, NULL), 0);
	struct pp_port_info in[NPORTS];
	for (unsigned i = 0; i < NPORTS; i++)
		pp_port_info(p[i], &in[i]);
	for (unsigned from = 0; from < NPORTS; from++) {
		struct pp_buf *b, *r[2];
		CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p[from], &b, 1), 1);
		fill(b, bcast, in[from].mac, 200, from);
		CU_ASSERT_EQUAL_FATAL(pp_port_tx_burst(p[from], 0, &b, 1), 1);
		for (unsigned i = 0; i < NPORTS; i++) {
			if (i == from)
				continue;
			CU_ASSERT_EQUAL_FATAL(rx_wait(p[i], r, 1, 2000), 1);
			CU_ASSERT(frame_ok(r[0], bcast, in[from].mac, 200, from));
			pp_port_free(p[i], r, 1);
		}
		/* Once each, and not back to the sender. */
		for (unsigned i = 0; i < NPORTS; i++)
			CU_ASSERT_EQUAL(rx_wait(p[i], r, 1, i ? 0 : 50), 0);
	}
	close_ports(p, NPORTS);
}

static void test_peerfile(void)
{
	struct pp_port *p[3];
	unsigned base;
	CU_ASSERT_EQUAL_FATAL(open_ports(p, 3, NULL, &base), 0);
	char path[] = "/tmp/test_port_udp_peers_XXXXXX";
	int fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "# the job's ports\n127.0.0.1:%u   # one\n\n127.0.0.1:%u+127.0.0.1:%u-%u\n",
		base, base + 1, base + 2, base + 2);
	fclose(f);
	char dev[256];
	struct pp_port *s = NULL;
	int rc = -EADDRINUSE;
	for (unsigned port = base + 3; rc == -EADDRINUSE && port < base + 40; port++) {
		snprintf(dev, sizeof(dev), "udp:127.0.0.1:%u,peerfile=%s", port, path);
		rc = pp_port_open(&s, dev, NULL);
	}
	unlink(path);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	struct pp_port_info si;
	pp_port_info(s, &si);
	struct pp_buf *b, *r;
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(s, &b, 1), 1);
	fill(b, bcast, si.mac, 300, 7);
	CU_ASSERT_EQUAL(pp_port_tx_burst(s, 0, &b, 1), 1);
	for (unsigned i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(rx_wait(p[i], &r, 1, 2000), 1);
		CU_ASSERT(frame_ok(r, bcast, si.mac, 300, 7));
		pp_port_free(p[i], &r, 1);
	}
	pp_port_close(s);
	close_ports(p, 3);
}

/* A plain UDP socket on 127.0.0.1:port (0: any). */
static int plain_socket(unsigned *port)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	for (int tries = 0; s >= 0 && tries < 50; tries++) {
		struct sockaddr_in a = addr("127.0.0.1", *port ? *port : rnd_base());
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) == 0) {
			*port = ntohs(a.sin_port);
			return s;
		}
		if (*port)
			break;
	}
	if (s >= 0)
		close(s);
	return -1;
}

static void test_spoofed_dropped(void)
{
	struct pp_port *p[2];
	CU_ASSERT_EQUAL_FATAL(open_ports(p, 2, NULL, NULL), 0);
	struct pp_port_info in[2];
	pp_port_info(p[0], &in[0]);
	pp_port_info(p[1], &in[1]);
	unsigned port = 0, low = 0;
	int s = plain_socket(&port);
	CU_ASSERT_FATAL(s >= 0);
	struct sockaddr_in own = addr("127.0.0.1", port), to;
	uint8_t own_mac[6];
	pp_udp_mac_encode(&own, own_mac);
	CU_ASSERT_EQUAL(pp_udp_mac_decode(in[1].mac, &to), 0);

	uint8_t f[300];
	struct pp_buf fb = {.data = f, .cap = sizeof(f)};
	struct pp_buf *r;
	struct pp_port_stats st;
	/* Claims to be p[0] from another address: dropped. */
	fill(&fb, in[1].mac, in[0].mac, 300, 3);
	CU_ASSERT_EQUAL(sendto(s, f, 300, 0, (struct sockaddr *)&to, sizeof(to)), 300);
	CU_ASSERT_EQUAL(rx_wait(p[1], &r, 1, 100), 0);
	pp_port_stats(p[1], &st);
	CU_ASSERT_EQUAL(st.rx_dropped, 1);
	CU_ASSERT_EQUAL(st.rx_frames, 0);
	/* Addressed to another port's MAC, not 0x88B5, shorter than a header. */
	fill(&fb, in[0].mac, own_mac, 300, 3);
	CU_ASSERT_EQUAL(sendto(s, f, 300, 0, (struct sockaddr *)&to, sizeof(to)), 300);
	fill(&fb, in[1].mac, own_mac, 300, 3);
	f[13] = 0x00;
	CU_ASSERT_EQUAL(sendto(s, f, 300, 0, (struct sockaddr *)&to, sizeof(to)), 300);
	CU_ASSERT_EQUAL(sendto(s, f, 10, 0, (struct sockaddr *)&to, sizeof(to)), 10);
	/* Longer than the port's buffers: truncated, dropped. */
	static uint8_t big[10000];
	fill(&(struct pp_buf){.data = big, .cap = sizeof(big)}, in[1].mac, own_mac, sizeof(big), 3);
	CU_ASSERT_EQUAL(sendto(s, big, sizeof(big), 0, (struct sockaddr *)&to, sizeof(to)),
			(ssize_t)sizeof(big));
	/* From a port below the range no MAC can name: dropped. */
	int sl = -1;
	for (low = 40000; sl < 0 && low < 40100; low++)
		sl = plain_socket(&low);
	CU_ASSERT_FATAL(sl >= 0);
	fill(&fb, in[1].mac, own_mac, 300, 3);
	CU_ASSERT_EQUAL(sendto(sl, f, 300, 0, (struct sockaddr *)&to, sizeof(to)), 300);
	CU_ASSERT_EQUAL(rx_wait(p[1], &r, 1, 100), 0);
	pp_port_stats(p[1], &st);
	CU_ASSERT_EQUAL(st.rx_dropped, 6);
	CU_ASSERT_EQUAL(st.rx_frames, 0);

	/* The truth from the same socket passes: the check is the address. */
	fill(&fb, in[1].mac, own_mac, 300, 4);
	CU_ASSERT_EQUAL(sendto(s, f, 300, 0, (struct sockaddr *)&to, sizeof(to)), 300);
	CU_ASSERT_EQUAL_FATAL(rx_wait(p[1], &r, 1, 2000), 1);
	CU_ASSERT(frame_ok(r, in[1].mac, own_mac, 300, 4));
	pp_port_free(p[1], &r, 1);
	pp_port_stats(p[1], &st);
	CU_ASSERT_EQUAL(st.rx_frames, 1);
	CU_ASSERT_EQUAL(st.rx_dropped, 6);
	close(s);
	close(sl);
	close_ports(p, 2);
}

static void test_port_taken(void)
{
	struct pp_port *p[1], *q = (struct pp_port *)0x1;
	unsigned base;
	CU_ASSERT_EQUAL_FATAL(open_ports(p, 1, NULL, &base), 0);
	char dev[64], msg[512];
	snprintf(dev, sizeof(dev), "udp:127.0.0.1:%u", base);
	CU_ASSERT_EQUAL(open_logged(dev, &q, msg, sizeof(msg)), -EADDRINUSE);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "UDP port in use"));
	CU_ASSERT_PTR_EQUAL(q, (struct pp_port *)0x1);
	/* Port 0: a free one of the range, and its MAC says which. */
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&q, "udp:127.0.0.1:0", NULL), 0);
	struct pp_port_info in;
	struct sockaddr_in a;
	pp_port_info(q, &in);
	CU_ASSERT_EQUAL(pp_udp_mac_decode(in.mac, &a), 0);
	CU_ASSERT(ntohs(a.sin_port) >= PP_UDP_PORT_MIN);
	CU_ASSERT_EQUAL(a.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	pp_port_close(q);
	close_ports(p, 1);
}

static CU_TestInfo mac_tests[] = {
    {"encoding: vectors, every port, group MACs refused", test_mac_vectors},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo open_tests[] = {
    {"bad strings: errno and message", test_bad_strings},
    {"port taken; port 0 picks one", test_port_taken},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo io_tests[] = {
    {"sizes both ways, bytes checked", test_sizes},
    {"bursts of 32", test_burst},
    {"runs to one peer (GSO), to two in turn", test_gso},
    {"the same with gso=0", test_no_gso},
    {"broadcast reaches every peer once", test_broadcast},
    {"peer file", test_peerfile},
    {"spoofed, misaddressed, malformed dropped", test_spoofed_dropped},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"udp_mac", setup, NULL, NULL, NULL, mac_tests},
    {"udp_open", setup, NULL, NULL, NULL, open_tests},
    {"udp_io", setup, NULL, NULL, NULL, io_tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
