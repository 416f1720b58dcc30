/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pp_probe: the first thing to run on a new cluster. Opens a port from a
 * device string, prints what it found (MAC, MTU, queues, driver, link), and
 * with --peer (or --listen on the other side) exchanges frames and prints the
 * round-trip min/median/p99 and the loss. With --blast the --peer side sends
 * frames of one size as fast as its port takes them for --duration-ms, the
 * listener counts what arrives, and both print frames/s, MB/s of payload
 * and the loss: the ceiling of the path for that frame size.
 *
 * Probe frames are Ethernet II, EtherType 0x88B5, then this 16-byte header
 * (network byte order), then a payload whose bytes are a function of the
 * sequence number and their offset, so every byte can be checked:
 *
 *   off len field
 *    0  1   ver (high 4 bits) = 0 | kind (low 4 bits): 1 request, 2 reply,
 *           3 hello, 4 hello reply, 5 blast, 6 blast end, 7 blast report
 *    1  1   reserved, zero
 *    2  2   payload_len: bytes after this header
 *    4  4   magic "PPRB"
 *    8  4   seq
 *   12  4   reserved, zero
 *   16      payload
 *
 * Blast frames carry the payload pattern of sequence number 0 whatever their
 * seq, so the sender copies one template. A blast end's payload is three
 * 64-bit counters: frames sent, their bytes (Ethernet header on), the
 * sending time in ns; a blast report's: frames received, their bytes, the
 * ns from the first to the last, frames with a bad payload (--check).
 *
 * Version 0 is not a protocol version, so a librt-pp engine that sees a probe
 * frame rejects and counts it as a bad version; probing never disturbs a job.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp_bytes.h"
#include "pp_log.h"
#include "pp_mac.h"
#include "pp_port.h"

#define PROBE_HDR_LEN  16
#define PROBE_MIN      (PP_ETH_HLEN + PROBE_HDR_LEN)
#define PROBE_MAGIC    0x50505242u /* "PPRB" */
#define KIND_REQ       1
#define KIND_REPLY     2
#define KIND_HELLO     3
#define KIND_HELLO_REP 4
#define KIND_BLAST     5
#define KIND_BLAST_END 6
#define KIND_BLAST_REP 7
#define BLAST_CTL_LEN  (PROBE_MIN + 32) /* end and report frames */
#define MAX_SIZES      64
#define BURST	       32

struct opts {
	const char *dev;	   /* --dev */
	const char *pcap_dump;	   /* --pcap-dump */
	uint8_t peer[6];	   /* --peer */
	int have_peer;		   /* --peer given */
	int listen;		   /* --listen */
	int check;		   /* --check: exit non-zero on loss or bad bytes */
	long count;		   /* --count */
	unsigned sizes[MAX_SIZES]; /* --size list, frame bytes without FCS */
	unsigned nb_sizes;	   /* entries in sizes */
	int size_mtu;		   /* a "mtu" entry in --size: index+1, 0 if none */
	long timeout_ms;	   /* --timeout-ms */
	long wait_ms;		   /* --wait-ms */
	unsigned queues;	   /* --queues */
	int blast;		   /* --blast */
	long duration_ms;	   /* --duration-ms: the blast's length */
};

static volatile sig_atomic_t stop;
static uint64_t frames_tx, frames_rx; /* frames through the burst calls */

static unsigned probe_rx(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	unsigned got = pp_port_rx_burst(port, 0, bufs, n);
	frames_rx += got;
	return got;
}

static unsigned probe_tx(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	unsigned sent = pp_port_tx_burst(port, 0, bufs, n);
	frames_tx += sent;
	return sent;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pp_probe --dev DEV [--peer MAC | --listen] [options]\n"
		"\n"
		"Open a frame I/O port, print its MAC, MTU, queues, driver and link state;\n"
		"with --peer, exchange probe frames with a pp_probe --listen on that MAC and\n"
		"print the round-trip min/median/p99 and the loss.\n"
		"\n"
		"  --dev DEV         device: pcap:IFACE (libpcap), sim:..., or DPDK EAL\n"
		"                    arguments, e.g. \"--vdev=net_af_xdp0,iface=pp0\" or\n"
		"                    \"--vdev=net_af_packet0,iface=pp0\" or \"-a 0000:01:00.0\"\n"
		"  --peer MAC        send --count requests to MAC, one at a time\n"
		"  --listen          echo every probe request back to its sender\n"
		"  --count N         requests to send (default 1000), or with --listen to\n"
		"                    echo before exiting (default 0: until interrupted)\n"
		"  --size LIST       frame sizes in bytes without FCS, comma-separated,\n"
		"                    cycled through; 'mtu' means MTU+14 (default 64; min %d)\n"
		"  --check           verify every payload byte; exit 1 on any loss or\n"
		"                    mismatch (with --listen: on mismatch, or fewer than\n"
		"                    --count requests seen)\n"
		"  --timeout-ms MS   --peer: wait this long for each reply (default 1000);\n"
		"                    --listen: exit after this long without a request once\n"
		"                    the first one came (default 0: never)\n"
		"  --wait-ms MS      wait this long for the other side to appear\n"
		"                    (default 10000; 0 with --listen: forever)\n"
		"  --queues N        queue pairs to configure (default 1; probing uses 0)\n"
		"  --blast           with --peer: instead of round trips, send frames of the\n"
		"                    one --size as fast as the port takes them for\n"
		"                    --duration-ms, then ask the listener what arrived;\n"
		"                    with --listen: count one blast, report it, exit (a\n"
		"                    plain --listen counts and reports blasts too, and goes\n"
		"                    on). Both print frames, frames/s, MB/s (10^6 B/s) of\n"
		"                    payload (the bytes after the 14-byte Ethernet header)\n"
		"                    and, received, the loss: the path's ceiling at that\n"
		"                    frame size. --check verifies every received byte (and\n"
		"                    slows the receiver)\n"
		"  --duration-ms MS  --blast: how long to send (default 2000)\n"
		"  --pcap-dump FILE  write every frame sent and received to FILE\n"
		"  --help            this text\n"
		"\n"
		"Exit status: 0 ok, 1 loss or mismatch under --check (a blast: a bad\n"
		"payload; loss is its result, not an error), 2 bad usage, 3 the port could\n"
		"not be opened, 4 the peer never answered (a blast: no report came).\n",
		PROBE_MIN);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_sizes(const char *s, struct opts *o)
{
	char buf[512];
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	o->nb_sizes = 0;
	o->size_mtu = 0;
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nb_sizes == MAX_SIZES)
			return -EINVAL;
		long v;
		if (strcmp(tok, "mtu") == 0) {
			o->size_mtu = (int)o->nb_sizes + 1;
			v = 0; /* filled once the MTU is known */
		} else if (parse_long(tok, PROBE_MIN, 65535, &v)) {
			return -EINVAL;
		}
		o->sizes[o->nb_sizes++] = (unsigned)v;
	}
	return o->nb_sizes ? 0 : -EINVAL;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint8_t pattern(uint32_t seq, unsigned off)
{
	return (uint8_t)(seq * 7u + off * 13u + 1u);
}

/* Build a probe frame of size bytes into b. */
static void build(struct pp_buf *b, const uint8_t dst[6], const uint8_t src[6], int kind,
		  uint32_t seq, unsigned size)
{
	uint8_t *f = b->data;
	pp_eth_set_dst(f, dst);
	pp_eth_set_src(f, src);
	pp_eth_set_type(f, PP_ETH_TYPE_PP);
	uint8_t *h = f + PP_ETH_HLEN;
	h[0] = (uint8_t)kind; /* version 0 */
	h[1] = 0;
	pp_put_be16(h + 2, (uint16_t)(size - PROBE_MIN));
	pp_put_be32(h + 4, PROBE_MAGIC);
	pp_put_be32(h + 8, seq);
	pp_put_be32(h + 12, 0);
	for (unsigned i = PROBE_MIN; i < size; i++)
		f[i] = pattern(seq, i);
	b->len = size;
}

/* The probe kind of frame b, or 0 when it is not a well-formed probe. */
static int probe_kind(const struct pp_buf *b)
{
	const uint8_t *f = b->data;
	if (b->len < PROBE_MIN || pp_eth_type(f) != PP_ETH_TYPE_PP)
		return 0;
	const uint8_t *h = f + PP_ETH_HLEN;
	if ((h[0] >> 4) != 0 || pp_get_be32(h + 4) != PROBE_MAGIC)
		return 0;
	if (pp_get_be16(h + 2) != b->len - PROBE_MIN && b->len > 60)
		return 0; /* short frames may carry Ethernet padding */
	return h[0] & 0x0f;
}

static uint32_t probe_seq(const struct pp_buf *b)
{
	return pp_get_be32(b->data + PP_ETH_HLEN + 8);
}

/* 1 when every payload byte of b is what seq's pattern says (blast frames:
 * sequence number 0's). */
static int payload_ok(const struct pp_buf *b)
{
	uint32_t seq = probe_kind(b) == KIND_BLAST ? 0 : probe_seq(b);
	unsigned end = PROBE_MIN + pp_get_be16(b->data + PP_ETH_HLEN + 2);
	if (end > b->len)
		return 0;
	for (unsigned i = PROBE_MIN; i < end; i++)
		if (b->data[i] != pattern(seq, i))
			return 0;
	return 1;
}

/* Send one buffer, retrying while the queue is full, until deadline.
 * Returns 0 when sent; frees it and returns -ETIMEDOUT otherwise. */
static int send_one(struct pp_port *port, struct pp_buf *b, uint64_t deadline)
{
	while (probe_tx(port, &b, 1) == 0) {
		if (now_ns() > deadline || stop) {
			pp_port_free(port, &b, 1);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

static void print_mac(const char *label, const uint8_t m[6])
{
	printf("%-8s %02x:%02x:%02x:%02x:%02x:%02x\n", label, m[0], m[1], m[2], m[3], m[4], m[5]);
}

static void print_info(const char *dev, const struct pp_port_info *in)
{
	printf("%-8s %s\n", "dev", dev);
	printf("%-8s %s\n", "driver", in->driver);
	print_mac("mac", in->mac);
	printf("%-8s %u\n", "mtu", in->mtu);
	printf("%-8s %u\n", "queues", in->nb_queues);
	if (in->link_up < 0)
		printf("%-8s unknown\n", "link");
	else if (in->speed_mbps)
		printf("%-8s %s (%" PRIu32 " Mb/s)\n", "link", in->link_up ? "up" : "down",
		       in->speed_mbps);
	else
		printf("%-8s %s\n", "link", in->link_up ? "up" : "down");
	fflush(stdout);
}

/* What a listener counted of one blast. */
struct blast_rx {
	uint64_t frames, bytes, bad; /* received, their bytes, bad payloads */
	uint64_t first_ns, last_ns;  /* arrival of the first and the last */
	uint64_t end_ns;	     /* when the sender's end came; 0 before */
};

/* "frames N bytes B seconds S frames_per_s F payload_MBps M": payload is
 * what follows the Ethernet header; rates over the n - 1 gaps between the
 * first and the last frame when first_to_last, else over ns. */
static void print_rate(const char *label, uint64_t frames, uint64_t bytes, uint64_t ns,
		       int first_to_last)
{
	double secs = ns / 1e9, fps = 0, mbps = 0;
	uint64_t gaps = first_to_last ? (frames ? frames - 1 : 0) : frames;
	if (ns && frames) {
		fps = gaps / secs;
		mbps = fps * ((double)bytes / frames - PP_ETH_HLEN) / 1e6;
	}
	printf("%-8s frames %" PRIu64 " bytes %" PRIu64 " seconds %.3f frames_per_s %.0f "
	       "payload_MBps %.1f",
	       label, frames, bytes, secs, fps, mbps);
}

static void print_blast_rx(const struct blast_rx *x, uint64_t sent)
{
	print_rate("blast_rx", x->frames, x->bytes, x->last_ns - x->first_ns, 1);
	uint64_t lost = sent > x->frames ? sent - x->frames : 0;
	printf(" lost %" PRIu64 " loss_pct %.2f bad_payload %" PRIu64 "\n", lost,
	       sent ? 100.0 * lost / sent : 0.0, x->bad);
	fflush(stdout);
}

/* A blast frame or a blast end for the listener; returns 1 when b was one
 * (and is consumed). A blast end is answered with the report, each time it
 * comes; a blast frame after the previous blast's linger starts a new one. */
static int listen_blast(struct pp_port *port, const struct pp_port_info *in, const struct opts *o,
			struct pp_buf *b, int kind, uint64_t t, struct blast_rx *x)
{
	if (kind == KIND_BLAST) {
		if (x->end_ns && t - x->end_ns > 500000000u)
			memset(x, 0, sizeof(*x));
		if (!x->frames)
			x->first_ns = t;
		x->frames++;
		x->bytes += b->len;
		x->last_ns = t;
		if (o->check && !payload_ok(b))
			x->bad++;
		pp_port_free(port, &b, 1);
		return 1;
	}
	if (kind != KIND_BLAST_END)
		return 0;
	uint64_t sent = b->len >= BLAST_CTL_LEN ? pp_get_be64(b->data + PROBE_MIN) : 0;
	if (!x->end_ns) {
		x->end_ns = t ? t : 1;
		print_blast_rx(x, sent);
	}
	pp_eth_set_dst(b->data, pp_eth_src(b->data));
	pp_eth_set_src(b->data, in->mac);
	uint8_t *h = b->data + PP_ETH_HLEN;
	h[0] = KIND_BLAST_REP;
	pp_put_be16(h + 2, BLAST_CTL_LEN - PROBE_MIN);
	pp_put_be64(b->data + PROBE_MIN, x->frames);
	pp_put_be64(b->data + PROBE_MIN + 8, x->bytes);
	pp_put_be64(b->data + PROBE_MIN + 16, x->last_ns - x->first_ns);
	pp_put_be64(b->data + PROBE_MIN + 24, x->bad);
	b->len = BLAST_CTL_LEN;
	send_one(port, b, now_ns() + 1000000000u);
	return 1;
}

static int listen_loop(struct pp_port *port, const struct pp_port_info *in, const struct opts *o)
{
	uint64_t start = now_ns(), last = 0;
	long echoed = 0, corrupt = 0, other = 0;
	struct pp_buf *bufs[BURST];
	struct blast_rx blast = {0};
	printf("listening for probes on %02x:%02x:%02x:%02x:%02x:%02x\n", in->mac[0], in->mac[1],
	       in->mac[2], in->mac[3], in->mac[4], in->mac[5]);
	fflush(stdout);
	while (!stop && (o->count == 0 || echoed < o->count)) {
		uint64_t t = now_ns();
		if (!last && o->wait_ms && t - start > (uint64_t)o->wait_ms * 1000000u)
			break;
		if (last && o->timeout_ms && t - last > (uint64_t)o->timeout_ms * 1000000u)
			break;
		/* --blast: the report is out; answer repeated ends a while. */
		if (o->blast && blast.end_ns && t - blast.end_ns > 500000000u)
			break;
		unsigned n = probe_rx(port, bufs, BURST);
		if (n)
			t = now_ns();
		for (unsigned i = 0; i < n; i++) {
			struct pp_buf *b = bufs[i];
			int kind = probe_kind(b);
			if (!memcmp(pp_eth_dst(b->data), in->mac, 6) &&
			    listen_blast(port, in, o, b, kind, t, &blast)) {
				last = t;
				continue;
			}
			if ((kind != KIND_REQ && kind != KIND_HELLO) ||
			    memcmp(pp_eth_dst(b->data), in->mac, 6)) {
				other++;
				pp_port_free(port, &b, 1);
				continue;
			}
			if (kind == KIND_REQ) {
				echoed++;
				last = now_ns();
				if (o->check && !payload_ok(b))
					corrupt++;
			}
			/* Echo in place: the received buffer goes straight back out. */
			pp_eth_set_dst(b->data, pp_eth_src(b->data));
			pp_eth_set_src(b->data, in->mac);
			b->data[PP_ETH_HLEN] = kind == KIND_REQ ? KIND_REPLY : KIND_HELLO_REP;
			send_one(port, b, now_ns() + 1000000000u);
		}
	}
	printf("echoed   %ld requests, %ld with bad payload, %ld other frames ignored\n", echoed,
	       corrupt, other);
	if (o->blast)
		return !blast.end_ns ? (stop ? 1 : 4) : o->check && blast.bad ? 1 : 0;
	if (!echoed && !stop)
		return 4;
	if (o->check && (corrupt || (o->count && echoed < o->count)))
		return 1;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Send hellos every 100 ms until one is answered or wait_ms passes. */
static int wait_for_peer(struct pp_port *port, const struct pp_port_info *in, const struct opts *o)
{
	uint64_t deadline = now_ns() + (uint64_t)o->wait_ms * 1000000u;
	uint32_t hello = 0;
	struct pp_buf *bufs[BURST];
	while (!stop && now_ns() < deadline) {
		struct pp_buf *b;
		if (pp_port_alloc(port, &b, 1) == 1) {
			build(b, o->peer, in->mac, KIND_HELLO, hello++, PROBE_MIN + 30);
			send_one(port, b, deadline);
		}
		uint64_t next = now_ns() + 100000000u;
		while (!stop && now_ns() < next) {
			unsigned n = probe_rx(port, bufs, BURST);
			int found = 0;
			for (unsigned i = 0; i < n; i++)
				if (probe_kind(bufs[i]) == KIND_HELLO_REP &&
				    !memcmp(pp_eth_src(bufs[i]->data), o->peer, 6))
					found = 1;
			pp_port_free(port, bufs, n);
			if (found)
				return 0;
		}
	}
	return -ETIMEDOUT;
}

static int probe_loop(struct pp_port *port, const struct pp_port_info *in, const struct opts *o)
{
	if (wait_for_peer(port, in, o)) {
		fprintf(stderr,
			"pp_probe: no answer from %02x:%02x:%02x:%02x:%02x:%02x within %ld ms "
			"(is pp_probe --listen running there, on the same segment?)\n",
			o->peer[0], o->peer[1], o->peer[2], o->peer[3], o->peer[4], o->peer[5],
			o->wait_ms);
		return 4;
	}
	uint64_t *rtt = malloc((size_t)o->count * sizeof(*rtt));
	if (!rtt) {
		fprintf(stderr, "pp_probe: out of memory\n");
		return 1;
	}
	long got = 0, lost = 0, corrupt = 0, late = 0, sent = 0;
	struct pp_buf *bufs[BURST];
	for (long i = 0; i < o->count && !stop; i++) {
		unsigned size = o->sizes[i % o->nb_sizes];
		uint32_t seq = (uint32_t)i;
		struct pp_buf *b;
		uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)o->timeout_ms * 1000000u;
		while (pp_port_alloc(port, &b, 1) != 1) {
			if (now_ns() > deadline) {
				fprintf(stderr, "pp_probe: buffer pool empty\n");
				free(rtt);
				return 1;
			}
		}
		build(b, o->peer, in->mac, KIND_REQ, seq, size);
		t0 = now_ns();
		if (send_one(port, b, deadline)) {
			lost++;
			continue;
		}
		sent++;
		int done = 0;
		while (!done && !stop && now_ns() < deadline) {
			unsigned n = probe_rx(port, bufs, BURST);
			uint64_t t1 = now_ns();
			for (unsigned k = 0; k < n; k++) {
				struct pp_buf *r = bufs[k];
				if (probe_kind(r) != KIND_REPLY ||
				    memcmp(pp_eth_src(r->data), o->peer, 6))
					continue;
				if (probe_seq(r) != seq) {
					late++;
					continue;
				}
				if (done)
					continue; /* a duplicate */
				done = 1;
				int ok = r->len == size || (size < 60 && r->len == 60);
				if (o->check && (!ok || !payload_ok(r)))
					corrupt++;
				rtt[got++] = t1 - t0;
			}
			pp_port_free(port, bufs, n);
		}
		if (!done)
			lost++;
	}
	printf("probe    %ld requests to %02x:%02x:%02x:%02x:%02x:%02x: sent %ld, answered %ld, "
	       "lost %ld, bad payload %ld, late %ld\n",
	       o->count, o->peer[0], o->peer[1], o->peer[2], o->peer[3], o->peer[4], o->peer[5],
	       sent, got, lost, corrupt, late);
	if (got) {
		qsort(rtt, (size_t)got, sizeof(*rtt), cmp_u64);
		size_t p99 = ((size_t)got * 99 + 99) / 100 - 1;
		printf("rtt_us   min %.1f median %.1f p99 %.1f max %.1f (%ld samples)\n",
		       rtt[0] / 1e3, rtt[got / 2] / 1e3, rtt[p99] / 1e3, rtt[got - 1] / 1e3, got);
	}
	free(rtt);
	if (stop)
		return 1;
	if (o->check && (lost || corrupt))
		return 1;
	return 0;
}

/* --blast on the --peer side: frames of one size for duration_ms, as fast as
 * the port takes them, then a blast end (every 100 ms) until the listener's
 * report comes. */
static int blast_loop(struct pp_port *port, const struct pp_port_info *in, const struct opts *o)
{
	if (wait_for_peer(port, in, o)) {
		fprintf(stderr,
			"pp_probe: no answer from %02x:%02x:%02x:%02x:%02x:%02x within %ld ms "
			"(is pp_probe --listen running there, on the same segment?)\n",
			o->peer[0], o->peer[1], o->peer[2], o->peer[3], o->peer[4], o->peer[5],
			o->wait_ms);
		return 4;
	}
	unsigned size = o->sizes[0];
	uint8_t *tpl = malloc(size);
	if (!tpl) {
		fprintf(stderr, "pp_probe: out of memory\n");
		return 1;
	}
	struct pp_buf t = {.data = tpl, .cap = size};
	build(&t, o->peer, in->mac, KIND_BLAST, 0, size);

	struct pp_buf *bufs[BURST];
	unsigned have = 0; /* built, not yet taken by the port */
	uint64_t sent = 0, seq = 0;
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)o->duration_ms * 1000000u, t1;
	for (;;) {
		if (!have) {
			if (stop || now_ns() >= end)
				break;
			have = pp_port_alloc(port, bufs, BURST);
			for (unsigned i = 0; i < have; i++) {
				memcpy(bufs[i]->data, tpl, size);
				bufs[i]->len = size;
				pp_put_be32(bufs[i]->data + PP_ETH_HLEN + 8, (uint32_t)seq++);
			}
			continue;
		}
		unsigned n = probe_tx(port, bufs, have);
		sent += n;
		have -= n;
		memmove(bufs, bufs + n, have * sizeof(*bufs));
		if (stop)
			break;
	}
	t1 = now_ns();
	if (have)
		pp_port_free(port, bufs, have);
	free(tpl);

	/* The end, until the report comes. */
	uint64_t wait = (uint64_t)(o->timeout_ms > 2000 ? o->timeout_ms : 2000) * 1000000u;
	uint64_t deadline = now_ns() + wait, next = 0;
	uint64_t rep[4] = {0};
	int got = 0;
	while (!got && !stop && now_ns() < deadline) {
		struct pp_buf *b;
		if (now_ns() >= next && pp_port_alloc(port, &b, 1) == 1) {
			build(b, o->peer, in->mac, KIND_BLAST_END, 0, BLAST_CTL_LEN);
			pp_put_be64(b->data + PROBE_MIN, sent);
			pp_put_be64(b->data + PROBE_MIN + 8, sent * size);
			pp_put_be64(b->data + PROBE_MIN + 16, t1 - t0);
			send_one(port, b, deadline);
			next = now_ns() + 100000000u;
		}
		unsigned n = probe_rx(port, bufs, BURST);
		for (unsigned i = 0; i < n; i++) {
			struct pp_buf *r = bufs[i];
			if (!got && probe_kind(r) == KIND_BLAST_REP && r->len >= BLAST_CTL_LEN &&
			    !memcmp(pp_eth_src(r->data), o->peer, 6) &&
			    !memcmp(pp_eth_dst(r->data), in->mac, 6)) {
				for (int k = 0; k < 4; k++)
					rep[k] = pp_get_be64(r->data + PROBE_MIN + 8 * k);
				got = 1;
			}
		}
		pp_port_free(port, bufs, n);
	}
	print_rate("blast_tx", sent, sent * size, t1 - t0, 0);
	printf(" frame_bytes %u\n", size);
	if (!got) {
		fflush(stdout);
		fprintf(stderr,
			"pp_probe: no blast report from %02x:%02x:%02x:%02x:%02x:%02x (is it "
			"pp_probe --listen, and does it still run?)\n",
			o->peer[0], o->peer[1], o->peer[2], o->peer[3], o->peer[4], o->peer[5]);
		return stop ? 1 : 4;
	}
	struct blast_rx x = {.frames = rep[0], .bytes = rep[1], .last_ns = rep[2], .bad = rep[3]};
	print_blast_rx(&x, sent);
	if (stop)
		return 1;
	return o->check && x.bad ? 1 : 0;
}

static const char *open_hint(int rc)
{
	switch (rc) {
	case -ENODEV:
		return "no such interface or device (check `ip link`, the vdev name, or run "
		       "inside the namespace with `ip netns exec NS pp_probe ...`)";
	case -EPERM:
	case -EACCES:
		return "missing privileges (run as root, or grant CAP_NET_RAW, CAP_NET_ADMIN "
		       "and CAP_IPC_LOCK)";
	case -ENOMEM:
		return "out of memory (for DPDK: too few free hugepages; reserve more in "
		       "/sys/kernel/mm/hugepages or pass --no-huge in --dev)";
	case -EINVAL:
		return "malformed device string (see --help for examples)";
	case -ENOTSUP:
		return "backend not built in";
	case -ENETDOWN:
		return "interface is down";
	default:
		return strerror(-rc);
	}
}

int main(int argc, char **argv)
{
	struct opts o = {
	    .count = -1, .timeout_ms = -1, .wait_ms = -1, .queues = 1, .duration_ms = 2000};
	o.sizes[0] = 64;
	o.nb_sizes = 1;
	static const struct option longopts[] = {
	    {"dev", required_argument, NULL, 'd'},
	    {"peer", required_argument, NULL, 'p'},
	    {"listen", no_argument, NULL, 'l'},
	    {"count", required_argument, NULL, 'n'},
	    {"size", required_argument, NULL, 's'},
	    {"check", no_argument, NULL, 'c'},
	    {"timeout-ms", required_argument, NULL, 't'},
	    {"wait-ms", required_argument, NULL, 'w'},
	    {"queues", required_argument, NULL, 'q'},
	    {"pcap-dump", required_argument, NULL, 'P'},
	    {"blast", no_argument, NULL, 'b'},
	    {"duration-ms", required_argument, NULL, 'D'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	long v;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.dev = optarg;
			break;
		case 'p':
			if (pp_mac_parse(optarg, o.peer)) {
				fprintf(stderr,
					"pp_probe: --peer: '%s' is not a MAC address "
					"(like 02:50:50:01:00:01)\n",
					optarg);
				return 2;
			}
			o.have_peer = 1;
			break;
		case 'l':
			o.listen = 1;
			break;
		case 'n':
			if (parse_long(optarg, 0, 100000000, &o.count)) {
				fprintf(stderr, "pp_probe: --count: '%s' is not 0..100000000\n",
					optarg);
				return 2;
			}
			break;
		case 's':
			if (parse_sizes(optarg, &o)) {
				fprintf(stderr,
					"pp_probe: --size: '%s' is not a list of sizes %d..65535 "
					"or 'mtu' (at most %d)\n",
					optarg, PROBE_MIN, MAX_SIZES);
				return 2;
			}
			break;
		case 'c':
			o.check = 1;
			break;
		case 't':
		case 'w':
			if (parse_long(optarg, 0, 86400000,
				       c == 't' ? &o.timeout_ms : &o.wait_ms)) {
				fprintf(stderr, "pp_probe: --%s: '%s' is not 0..86400000\n",
					c == 't' ? "timeout-ms" : "wait-ms", optarg);
				return 2;
			}
			break;
		case 'q':
			if (parse_long(optarg, 1, PP_PORT_MAX_QUEUES, &v)) {
				fprintf(stderr, "pp_probe: --queues: '%s' is not 1..%d\n", optarg,
					PP_PORT_MAX_QUEUES);
				return 2;
			}
			o.queues = (unsigned)v;
			break;
		case 'P':
			o.pcap_dump = optarg;
			break;
		case 'b':
			o.blast = 1;
			break;
		case 'D':
			if (parse_long(optarg, 1, 3600000, &o.duration_ms)) {
				fprintf(stderr, "pp_probe: --duration-ms: '%s' is not 1..3600000\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pp_probe: unexpected argument '%s' (see --help)\n", argv[optind]);
		return 2;
	}
	if (!o.dev) {
		fprintf(stderr, "pp_probe: --dev is required (see --help)\n");
		return 2;
	}
	if (o.have_peer && o.listen) {
		fprintf(stderr, "pp_probe: --peer and --listen exclude each other\n");
		return 2;
	}
	if (o.blast && !o.have_peer && !o.listen) {
		fprintf(stderr, "pp_probe: --blast needs --peer (send) or --listen (count)\n");
		return 2;
	}
	if (o.blast && o.have_peer && o.nb_sizes != 1) {
		fprintf(stderr, "pp_probe: --blast sends one --size, not a list\n");
		return 2;
	}
	if (o.count < 0)
		o.count = o.listen ? 0 : 1000;
	if (o.timeout_ms < 0)
		o.timeout_ms = o.listen ? 0 : 1000;
	if (o.wait_ms < 0)
		o.wait_ms = 10000;

	if (!getenv("PP_LOG"))
		pp_log_set_level("warn"); /* a diagnostic tool: show notices */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	struct pp_port_conf conf = {.nb_queues = (uint16_t)o.queues, .pcap_dump = o.pcap_dump};
	struct pp_port *port;
	int rc = pp_port_open(&port, o.dev, &conf);
	if (rc) {
		fprintf(stderr, "pp_probe: cannot open port '%s': %s\n", o.dev, open_hint(rc));
		return 3;
	}
	struct pp_port_info in;
	rc = pp_port_info(port, &in);
	if (rc) {
		fprintf(stderr, "pp_probe: cannot query port '%s': %s\n", o.dev, strerror(-rc));
		pp_port_close(port);
		return 3;
	}
	print_info(o.dev, &in);
	int status = 0;
	unsigned max = (unsigned)in.mtu + PP_ETH_HLEN;
	if (max > in.buf_cap)
		max = in.buf_cap;
	if (o.size_mtu)
		o.sizes[o.size_mtu - 1] = max;
	for (unsigned i = 0; i < o.nb_sizes; i++) {
		if (o.sizes[i] > max) {
			fprintf(stderr, "pp_probe: --size %u is larger than the port allows (%u)\n",
				o.sizes[i], max);
			status = 2;
		}
	}
	if (!status && o.listen)
		status = listen_loop(port, &in, &o);
	else if (!status && o.have_peer && o.blast)
		status = blast_loop(port, &in, &o);
	else if (!status && o.have_peer)
		status = probe_loop(port, &in, &o);
	if (o.listen || o.have_peer)
		printf("frames   sent %" PRIu64 ", received %" PRIu64 "\n", frames_tx, frames_rx);
	struct pp_port_stats st;
	if (!pp_port_stats(port, &st) && (o.listen || o.have_peer))
		printf("port     rx %" PRIu64 " frames, tx %" PRIu64 " frames, rx dropped %" PRIu64
		       ", tx failed %" PRIu64 "\n",
		       st.rx_frames, st.tx_frames, st.rx_dropped, st.tx_failed);
	pp_port_close(port);
	return status;
}
