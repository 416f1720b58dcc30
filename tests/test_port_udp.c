/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * driver/udp: the MAC encoding; device strings refused with an errno and a
 * message saying why; and, over 127.0.0.1 in this process, ports exchanging
 * frames of several sizes byte for byte, bursts of 32, broadcasts reaching
 * every peer of the list (and not the sender), and datagrams that lie about
 * their source, are not ours or not 0x88B5 dropped and counted; with UDP_GRO
 * (the default) GSO sends arriving coalesced, copied apart into frames,
 * checked segment by segment, and kept when the pool runs short. No
 * privilege needed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/udp.h>
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
#include "udp/udp_frame.h"

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

/* The log (stderr) at level into a file from log_begin to log_end, which
 * reads it into msg. */
struct logcap {
	int fd, saved;
	char path[32];
};

static void log_begin(struct logcap *c, const char *level)
{
	snprintf(c->path, sizeof(c->path), "/tmp/test_port_udp_XXXXXX");
	c->fd = mkstemp(c->path);
	c->saved = dup(STDERR_FILENO);
	fflush(stderr);
	dup2(c->fd, STDERR_FILENO);
	pp_log_set_level(level);
}

static void log_end(struct logcap *c, char *msg, size_t len)
{
	pp_log_set_level("off");
	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	ssize_t n = pread(c->fd, msg, len - 1, 0);
	msg[n > 0 ? n : 0] = '\0';
	close(c->fd);
	unlink(c->path);
}

/* Open dev with errors logged into msg: the result of pp_port_open. */
static int open_logged(const char *dev, struct pp_port **p, char *msg, size_t len)
{
	struct logcap c;
	log_begin(&c, "error");
	int rc = pp_port_open(p, dev, NULL);
	log_end(&c, msg, len);
	return rc;
}

/* Close p with what it logs at info level (its drop and GRO counts) in msg. */
static void close_logged(struct pp_port *p, char *msg, size_t len)
{
	struct logcap c;
	log_begin(&c, "info");
	pp_port_close(p);
	log_end(&c, msg, len);
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
	    {"udp:nosuchif0:50000", -EINVAL, "nor an interface that has one"},
	    {"udp:127.0.0.1:50000,peers=lo:50000", -EINVAL, "not an IPv4 address"},
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
	    {"udp:127.0.0.1:50000,gro=", -EINVAL, "unknown or empty option"},
	    {"udp:127.0.0.1:50000,gro=on", -EINVAL, "gro=0|1"},
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

/* Two ports (open_ports) and their infos: 0 or its error. */
static int open_pair(struct pp_port **p, struct pp_port_info *in, const char *extra)
{
	int rc = open_ports(p, 2, extra, NULL);
	for (unsigned i = 0; rc == 0 && i < 2; i++)
		pp_port_info(p[i], &in[i]);
	return rc;
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

/* A plain socket on 127.0.0.1, on a port of the range: its MAC in own_mac,
 * and in *to the address of the port whose MAC is to_mac. */
static int plain_sender(const uint8_t to_mac[6], uint8_t own_mac[6], struct sockaddr_in *to)
{
	unsigned port = 0;
	int s = plain_socket(&port);
	struct sockaddr_in own = addr("127.0.0.1", port);
	pp_udp_mac_encode(&own, own_mac);
	CU_ASSERT_EQUAL(pp_udp_mac_decode(to_mac, to), 0);
	return s;
}

/* len bytes from socket s to *to as one UDP_SEGMENT send the kernel cuts
 * into datagrams of seg bytes (the last shorter); the socket is left
 * sending plain datagrams again. The bytes sent, as sendto. */
static ssize_t send_segments(int s, const struct sockaddr_in *to, const void *buf, size_t len,
			     int seg)
{
	CU_ASSERT_EQUAL_FATAL(setsockopt(s, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)), 0);
	ssize_t n = sendto(s, buf, len, 0, (const struct sockaddr *)to, sizeof(*to));
	int off = 0;
	CU_ASSERT_EQUAL(setsockopt(s, SOL_UDP, UDP_SEGMENT, &off, sizeof(off)), 0);
	return n;
}

/* With and without UDP_GRO: what does not pass is dropped either way (with
 * it, a datagram too long for a slot lands whole in a staging buffer). */
static void spoofed_dropped(const char *opt)
{
	struct pp_port *p[2];
	struct pp_port_info in[2];
	CU_ASSERT_EQUAL_FATAL(open_pair(p, in, opt), 0);
	struct sockaddr_in to;
	uint8_t own_mac[6];
	int s = plain_sender(in[1].mac, own_mac, &to);
	CU_ASSERT_FATAL(s >= 0);
	unsigned low = 0;

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

static void test_spoofed_dropped(void)
{
	spoofed_dropped(NULL);
}

static void test_spoofed_dropped_no_gro(void)
{
	spoofed_dropped(",gro=0");
}

/* --- UDP_GRO: coalesced datagrams copied apart -------------------------------- */

/* A run: 40 frames of the whole buffer (8958 + 14 bytes at loopback's
 * default MTU) and a short last one, sent with one tx_burst: GSO sends of 7,
 * 7, 7, 7, 7 and 5 + 1 frames (64 KiB each at most). */
#define RUN_N 41

static unsigned run_len(const struct pp_port_info *in, unsigned i)
{
	return i + 1 < RUN_N ? in->buf_cap : 700;
}

static void send_run(struct pp_port *tx, const struct pp_port_info *in, unsigned seed)
{
	struct pp_buf *b[RUN_N];
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(tx, b, RUN_N), RUN_N);
	for (unsigned i = 0; i < RUN_N; i++)
		fill(b[i], in[1].mac, in[0].mac, run_len(in, i), seed + i);
	CU_ASSERT_EQUAL_FATAL(pp_port_tx_burst(tx, 0, b, RUN_N), RUN_N);
}

/* The k frames just received are the run's next ones, from *got on. */
static void check_run(const struct pp_port_info *in, struct pp_buf **r, unsigned k, unsigned *got,
		      unsigned seed)
{
	for (unsigned j = 0; j < k; j++, (*got)++) {
		CU_ASSERT_FATAL(*got < RUN_N);
		CU_ASSERT(frame_ok(r[j], in[1].mac, in[0].mac, run_len(in, *got), seed + *got));
	}
}

/* Wait up to 10 ms for rx's descriptor: 1 readable. */
static int readable(struct pp_port *rx)
{
	struct pollfd pfd = {.fd = pp_port_wait_fd(rx), .events = POLLIN};
	return poll(&pfd, 1, 10) > 0;
}

/* The rest of a run from p[0] (from frame got on), received by p[1] in
 * calls of up to per frames, each handed back at once: in order, every one.
 * Returns the calls that brought frames, the most one brought in *most. */
static unsigned recv_run(struct pp_port *rx, const struct pp_port_info *in, unsigned seed,
			 unsigned per, unsigned got, unsigned *most)
{
	struct pp_buf *r[64];
	unsigned calls = 0;
	*most = 0;
	for (int waited = 0; got < RUN_N && waited <= 2000;) {
		unsigned k = pp_port_rx_burst(rx, 0, r, per);
		CU_ASSERT(k <= per);
		check_run(in, r, k, &got, seed);
		pp_port_free(rx, r, k);
		calls += k > 0;
		*most = k > *most ? k : *most;
		if (!k && !readable(rx))
			waited += 10;
	}
	CU_ASSERT_EQUAL(got, RUN_N);
	return calls;
}

/* Two runs from one port to another (opt for both), received in calls of
 * up to per frames: exactly those frames, in order, byte for byte. With
 * GRO each GSO send arrives as one coalesced datagram (the close message
 * counts them), without it as RUN_N datagrams the kernel cut apart. */
static void gro_runs(const char *opt, unsigned per)
{
	int gro = !opt || !strstr(opt, "gro=0");
	struct pp_port *p[2];
	struct pp_port_info in[2];
	struct logcap c;
	char msg[2048];
	log_begin(&c, "info");
	int rc = open_pair(p, in, opt);
	log_end(&c, msg, sizeof(msg));
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, gro ? "GSO on, GRO on" : "GSO on, GRO off"));
	CU_ASSERT_EQUAL_FATAL(in[0].buf_cap, 8958 + 14);
	for (unsigned round = 0; round < 2; round++) {
		unsigned most; /* how many a call brings depends on the timing */
		send_run(p[0], in, 100 * round);
		recv_run(p[1], in, 100 * round, per, 0, &most);
	}
	struct pp_buf *r[1024];
	CU_ASSERT_EQUAL(rx_wait(p[1], r, 1, 50), 0); /* nothing more */
	struct pp_port_stats st;
	pp_port_stats(p[1], &st);
	CU_ASSERT_EQUAL(st.rx_frames, 2 * RUN_N);
	CU_ASSERT_EQUAL(st.rx_bytes, 2 * ((RUN_N - 1) * in[0].buf_cap + 700));
	CU_ASSERT_EQUAL(st.rx_dropped, 0);
	pp_port_stats(p[0], &st);
	CU_ASSERT_EQUAL(st.tx_frames, 2 * RUN_N);
	/* Every slot back in the pool. */
	CU_ASSERT_EQUAL(pp_port_alloc(p[1], r, 1024), 1024);
	pp_port_free(p[1], r, 1024);
	close_logged(p[1], msg, sizeof(msg));
	if (gro) {
		if (!strstr(msg, "GRO: 12 coalesced datagrams held 82 frames"))
			fprintf(stderr, "close said: %s\n", msg);
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, "GRO: 12 coalesced datagrams held 82 frames"));
	} else {
		CU_ASSERT_PTR_NULL(strstr(msg, "coalesced"));
	}
	pp_port_close(p[0]);
}

static void test_gro(void)
{
	gro_runs(NULL, 64);
}

/* Calls smaller than a coalesced datagram: the rest waits for the next. */
static void test_gro_small_calls(void)
{
	gro_runs(NULL, 5);
}

static void test_gro_off(void)
{
	gro_runs(",gro=0", 64);
}

/* The receiver's pool short of slots when a run arrives: none free (nothing
 * taken, nothing lost); then 3, which the first call fills, leaving the
 * rest of its datagrams staged; held, nothing more comes; handed back after
 * each call, the rest arrives, in order, over many calls. */
static void test_gro_pool_short(void)
{
	struct pp_port *p[2];
	struct pp_port_info in[2];
	CU_ASSERT_EQUAL_FATAL(open_pair(p, in, NULL), 0);
	static struct pp_buf *hold[4096];
	unsigned held = pp_port_alloc(p[1], hold, 4096);
	CU_ASSERT_FATAL(held > 3 && held < 4096);
	send_run(p[0], in, 7);
	for (int t = 0; t < 200 && !readable(p[1]); t++)
		;
	struct pp_buf *r[32];
	CU_ASSERT_EQUAL(pp_port_rx_burst(p[1], 0, r, 32), 0);
	held -= 3;
	pp_port_free(p[1], hold + held, 3);
	unsigned got = 0, most;
	CU_ASSERT_EQUAL_FATAL(pp_port_rx_burst(p[1], 0, r, 32), 3);
	check_run(in, r, 3, &got, 7);
	CU_ASSERT_EQUAL(pp_port_rx_burst(p[1], 0, r + 3, 29), 0); /* slots held */
	pp_port_free(p[1], r, 3);
	CU_ASSERT(recv_run(p[1], in, 7, 32, got, &most) >= (RUN_N - 3 + 2) / 3);
	CU_ASSERT_EQUAL(most, 3);
	CU_ASSERT_EQUAL(rx_wait(p[1], r, 1, 50), 0);
	struct pp_port_stats st;
	pp_port_stats(p[1], &st);
	CU_ASSERT_EQUAL(st.rx_frames, RUN_N);
	CU_ASSERT_EQUAL(st.rx_dropped, 0);
	CU_ASSERT(st.alloc_failed >= 2);
	pp_port_free(p[1], hold, held);
	close_ports(p, 2);
}

/* Segments of one coalesced datagram checked each on its own: from a plain
 * socket sending with UDP_SEGMENT, ten frames of 1000 bytes (the last 500)
 * of which the fourth claims p[0]'s MAC and the eighth is not 0x88B5: just
 * those two dropped. Then two segments longer than a slot: both dropped.
 * Without GRO the kernel cuts them apart first: the same result. */
static void gro_bad_segments(const char *opt)
{
	int gro = !opt;
	struct pp_port *p[2];
	struct pp_port_info in[2];
	CU_ASSERT_EQUAL_FATAL(open_pair(p, in, opt), 0);
	struct sockaddr_in to;
	uint8_t own_mac[6];
	int s = plain_sender(in[1].mac, own_mac, &to);
	CU_ASSERT_FATAL(s >= 0);

	static uint8_t buf[20000];
	for (unsigned i = 0; i < 10; i++) {
		struct pp_buf fb = {.data = buf + 1000 * i, .cap = 1000};
		fill(&fb, in[1].mac, i == 3 ? in[0].mac : own_mac, i < 9 ? 1000 : 500, 50 + i);
	}
	buf[7 * 1000 + 13] = 0x00;
	CU_ASSERT_EQUAL(send_segments(s, &to, buf, 9500, 1000), 9500);
	struct pp_buf *r[10];
	CU_ASSERT_EQUAL_FATAL(rx_wait(p[1], r, 8, 2000), 8);
	for (unsigned i = 0, j = 0; i < 10; i++)
		if (i != 3 && i != 7) {
			CU_ASSERT(frame_ok(r[j], in[1].mac, own_mac, i < 9 ? 1000 : 500, 50 + i));
			j++;
		}
	pp_port_free(p[1], r, 8);
	CU_ASSERT_EQUAL(rx_wait(p[1], r, 1, 50), 0);
	struct pp_port_stats st;
	pp_port_stats(p[1], &st);
	CU_ASSERT_EQUAL(st.rx_frames, 8);
	CU_ASSERT_EQUAL(st.rx_dropped, 2);

	/* Two of 10000 bytes: a peer with a larger MTU than this port's. */
	fill(&(struct pp_buf){.data = buf, .cap = 10000}, in[1].mac, own_mac, 10000, 1);
	fill(&(struct pp_buf){.data = buf + 10000, .cap = 10000}, in[1].mac, own_mac, 10000, 2);
	CU_ASSERT_EQUAL(send_segments(s, &to, buf, 20000, 10000), 20000);
	CU_ASSERT_EQUAL(rx_wait(p[1], r, 1, 100), 0);
	pp_port_stats(p[1], &st);
	CU_ASSERT_EQUAL(st.rx_frames, 8);
	CU_ASSERT_EQUAL(st.rx_dropped, 4);
	close(s);

	char msg[2048];
	close_logged(p[1], msg, sizeof(msg));
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "dropped 1 spoofed, 3 malformed, 0 misaddressed"));
	if (gro) {
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, "GRO: 2 coalesced datagrams held 12 frames"));
	} else {
		CU_ASSERT_PTR_NULL(strstr(msg, "coalesced"));
	}
	pp_port_close(p[0]);
}

static void test_gro_bad_segments(void)
{
	gro_bad_segments(NULL);
}

static void test_gro_bad_segments_off(void)
{
	gro_bad_segments(",gro=0");
}

/* Single-frame datagrams and a coalesced one, likely in one recvmmsg
 * batch: from a plain socket, a single frame, a datagram of three
 * segments, then two single frames, all sent before the port looks. They
 * come out in sending order, each intact, and one datagram counts as
 * coalesced. With gro=0: the same frames, in order. */
static void gro_mixed(const char *opt)
{
	struct pp_port *p[2];
	struct pp_port_info in[2];
	CU_ASSERT_EQUAL_FATAL(open_pair(p, in, opt), 0);
	struct sockaddr_in to;
	uint8_t own_mac[6];
	int s = plain_sender(in[1].mac, own_mac, &to);
	CU_ASSERT_FATAL(s >= 0);
	static uint8_t buf[6][2000];
	static const unsigned len[6] = {300, 1200, 1200, 700, 64, 1500};
	for (unsigned i = 0; i < 6; i++)
		fill(&(struct pp_buf){.data = buf[i], .cap = 2000}, in[1].mac, own_mac, len[i],
		     90 + i);
	CU_ASSERT_EQUAL(sendto(s, buf[0], len[0], 0, (struct sockaddr *)&to, sizeof(to)),
			(ssize_t)len[0]);
	static uint8_t three[3 * 1200];
	memcpy(three, buf[1], 1200);
	memcpy(three + 1200, buf[2], 1200);
	memcpy(three + 2400, buf[3], 700);
	CU_ASSERT_EQUAL(send_segments(s, &to, three, 3100, 1200), 3100);
	for (unsigned i = 4; i < 6; i++)
		CU_ASSERT_EQUAL(sendto(s, buf[i], len[i], 0, (struct sockaddr *)&to, sizeof(to)),
				(ssize_t)len[i]);
	struct pp_buf *r[6];
	CU_ASSERT_EQUAL_FATAL(rx_wait(p[1], r, 6, 2000), 6);
	for (unsigned i = 0; i < 6; i++)
		CU_ASSERT(frame_ok(r[i], in[1].mac, own_mac, len[i], 90 + i));
	pp_port_free(p[1], r, 6);
	close(s);
	char msg[2048];
	close_logged(p[1], msg, sizeof(msg));
	if (!opt)
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, "GRO: 1 coalesced datagrams held 3 frames"));
	pp_port_close(p[0]);
}

static void test_gro_mixed(void)
{
	gro_mixed(NULL);
}

static void test_gro_mixed_off(void)
{
	gro_mixed(",gro=0");
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
	struct sockaddr_in a = {0}; /* filled when the decode succeeds (asserted) */
	pp_port_info(q, &in);
	CU_ASSERT_EQUAL(pp_udp_mac_decode(in.mac, &a), 0);
	CU_ASSERT(ntohs(a.sin_port) >= PP_UDP_PORT_MIN);
	CU_ASSERT_EQUAL(a.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	pp_port_close(q);
	/* The address by its interface's name: lo's is 127.0.0.1. */
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&q, "udp:lo:0", NULL), 0);
	pp_port_info(q, &in);
	CU_ASSERT_EQUAL(pp_udp_mac_decode(in.mac, &a), 0);
	CU_ASSERT_EQUAL(a.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	CU_ASSERT(ntohs(a.sin_port) >= PP_UDP_PORT_MIN);
	pp_port_close(q);
	close_ports(p, 1);
}

/* --- the UDP/IPv4 headers of raw frames (udp_frame.h) ------------------------ */

static void sa_of(struct sockaddr_in *a, const char *ip, unsigned port)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	CU_ASSERT_EQUAL_FATAL(inet_pton(AF_INET, ip, &a->sin_addr), 1);
}

/* A raw frame carrying an inner frame of len bytes from src to dst. */
static uint32_t outer_frame(uint8_t *f, const struct sockaddr_in *src,
			    const struct sockaddr_in *dst, uint32_t len)
{
	static const uint8_t me[6] = {2, 1, 2, 3, 4, 5}, hop[6] = {2, 9, 8, 7, 6, 5};
	pp_udp_outer_write(f, me, hop, src, dst, len, 0);
	uint8_t *in = f + PP_UDP_OUTER_HLEN;
	pp_udp_mac_encode(dst, in);
	pp_udp_mac_encode(src, in + 6);
	in[12] = PP_ETH_TYPE_PP >> 8;
	in[13] = PP_ETH_TYPE_PP & 0xff;
	for (uint32_t i = 14; i < len; i++)
		in[i] = (uint8_t)i;
	return PP_UDP_OUTER_HLEN + len;
}

static void fix_ip_sum(uint8_t *f)
{
	uint8_t *ip = f + 14;
	ip[10] = ip[11] = 0;
	uint32_t sum = 0;
	for (unsigned i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
}

/* What is written parses back; every field the checks read, broken alone,
 * makes the frame malformed; the inner checks name each reason. */
static void test_outer_headers(void)
{
	struct sockaddr_in a, b, c;
	sa_of(&a, "10.1.2.3", 50000);
	sa_of(&b, "10.9.8.7", 60001);
	sa_of(&c, "10.9.8.7", 60002);
	uint8_t f[2048], g[2048];
	uint32_t len = outer_frame(f, &a, &b, 1000);
	struct pp_udp_outer o;
	CU_ASSERT_EQUAL_FATAL(pp_udp_outer_parse(f, len, b.sin_port, &o), PP_UDP_OK);
	CU_ASSERT_EQUAL(o.off, PP_UDP_OUTER_HLEN);
	CU_ASSERT_EQUAL(o.len, 1000);
	CU_ASSERT_EQUAL(o.from.sin_addr.s_addr, a.sin_addr.s_addr);
	CU_ASSERT_EQUAL(o.from.sin_port, a.sin_port);
	CU_ASSERT_EQUAL(f[14 + 6] & 0x40, 0x40); /* DF */
	CU_ASSERT_EQUAL(f[14 + 8], PP_UDP_IP_TTL);
	CU_ASSERT_EQUAL(f[12] << 8 | f[13], 0x0800);
	/* the same under the link EtherType */
	memcpy(g, f, len);
	static const uint8_t m6[6] = {2, 1, 2, 3, 4, 5}, h6[6] = {2, 9, 8, 7, 6, 5};
	pp_udp_outer_write(g, m6, h6, &a, &b, 1000, 1);
	CU_ASSERT_EQUAL(g[12] << 8 | g[13], PP_UDP_ETH_LINK);
	CU_ASSERT_EQUAL(memcmp(g + 14, f + 14, 28), 0);
	CU_ASSERT_EQUAL(pp_udp_outer_parse(g, len, b.sin_port, &o), PP_UDP_OK);
	/* Ethernet padding after the datagram is not part of it */
	CU_ASSERT_EQUAL(pp_udp_outer_parse(f, len + 4, b.sin_port, &o), PP_UDP_OK);
	CU_ASSERT_EQUAL(o.len, 1000);
	CU_ASSERT_EQUAL(pp_udp_outer_parse(f, len, c.sin_port, &o), PP_UDP_MALFORMED);
	CU_ASSERT_EQUAL(pp_udp_outer_parse(f, len - 1, b.sin_port, &o), PP_UDP_MALFORMED);
	CU_ASSERT_EQUAL(pp_udp_outer_parse(f, 41, b.sin_port, &o), PP_UDP_MALFORMED);
	struct {
		unsigned at;
		uint8_t val;
		int resum; /* 1: the IPv4 checksum made right again */
	} breaks[] = {
	    {12, 0x86, 0},	 /* EtherType IPv6 */
	    {14, 0x65, 1},	 /* IPv6 version */
	    {14, 0x44, 1},	 /* a header of 16 bytes */
	    {14, 0x4f, 1},	 /* 60 bytes: the UDP header would be elsewhere */
	    {16, 0x40, 1},	 /* total length past the frame */
	    {17, 0x01, 1},	 /* total length below the headers (with byte 16 0) */
	    {20, 0x60, 1},	 /* more fragments */
	    {21, 0x01, 1},	 /* a fragment offset */
	    {23, 6, 1},		 /* TCP */
	    {24, 0x55, 0},	 /* a bad checksum */
	    {14 + 20 + 5, 0, 1}, /* UDP length not IPv4's */
	};
	for (size_t i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++) {
		memcpy(g, f, len);
		if (breaks[i].at == 17)
			g[16] = 0;
		g[breaks[i].at] = breaks[i].val;
		if (breaks[i].resum)
			fix_ip_sum(g);
		CU_ASSERT_EQUAL(pp_udp_outer_parse(g, len, b.sin_port, &o), PP_UDP_MALFORMED);
	}
	/* options in the IPv4 header (24 bytes): the payload moves with them */
	memcpy(g, f, 34);
	memset(g + 34, 1, 4); /* NOP options */
	memcpy(g + 38, f + 34, len - 34);
	g[14] = 0x46;
	g[16] = (uint8_t)((1000 + 32) >> 8);
	g[17] = (uint8_t)(1000 + 32);
	fix_ip_sum(g); /* over 20 bytes: the options are 1s, so the sum needs them too */
	uint32_t sum = 0;
	g[24] = g[25] = 0;
	for (unsigned i = 0; i < 24; i += 2)
		sum += (uint32_t)(g[14 + i] << 8 | g[15 + i]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	g[24] = (uint8_t)(~sum >> 8);
	g[25] = (uint8_t)~sum;
	CU_ASSERT_EQUAL_FATAL(pp_udp_outer_parse(g, len + 4, b.sin_port, &o), PP_UDP_OK);
	CU_ASSERT_EQUAL(o.off, PP_UDP_OUTER_HLEN + 4);
	CU_ASSERT_EQUAL(o.len, 1000);

	/* the frame inside */
	uint8_t self[6], other[6];
	pp_udp_mac_encode(&b, self);
	pp_udp_mac_encode(&c, other);
	uint8_t *in = f + PP_UDP_OUTER_HLEN;
	CU_ASSERT_EQUAL(pp_udp_inner_check(in, 1000, &a, self), PP_UDP_OK);
	CU_ASSERT_EQUAL(pp_udp_inner_check(in, 1000, &a, other), PP_UDP_MISADDR);
	CU_ASSERT_EQUAL(pp_udp_inner_check(in, 1000, &c, self), PP_UDP_SPOOFED);
	struct sockaddr_in low = a;
	low.sin_port = htons(1000);
	CU_ASSERT_EQUAL(pp_udp_inner_check(in, 1000, &low, self), PP_UDP_SPOOFED);
	CU_ASSERT_EQUAL(pp_udp_inner_check(in, 13, &a, self), PP_UDP_MALFORMED);
	in[0] = 0xff; /* broadcast: for every port */
	CU_ASSERT_EQUAL(pp_udp_inner_check(in, 1000, &a, other), PP_UDP_OK);
	in[13] ^= 1;
	CU_ASSERT_EQUAL(pp_udp_inner_check(in, 1000, &a, self), PP_UDP_MALFORMED);
}

static CU_TestInfo mac_tests[] = {
    {"encoding: vectors, every port, group MACs refused", test_mac_vectors},
    {"raw frames' IPv4 and UDP headers: written, parsed, refused", test_outer_headers},
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
    {"the same with gro=0", test_spoofed_dropped_no_gro},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo gro_tests[] = {
    {"GSO runs arrive coalesced, copied apart exactly", test_gro},
    {"the same, in calls of 5 frames", test_gro_small_calls},
    {"runs with gro=0", test_gro_off},
    {"pool short of slots: every frame over many calls", test_gro_pool_short},
    {"bad segments of a coalesced datagram dropped alone", test_gro_bad_segments},
    {"bad segments with gro=0", test_gro_bad_segments_off},
    {"single frames in their slots and a coalesced datagram, in order", test_gro_mixed},
    {"the same with gro=0", test_gro_mixed_off},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"udp_mac", setup, NULL, NULL, NULL, mac_tests},
    {"udp_open", setup, NULL, NULL, NULL, open_tests},
    {"udp_io", setup, NULL, NULL, NULL, io_tests},
    {"udp_gro", setup, NULL, NULL, NULL, gro_tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
