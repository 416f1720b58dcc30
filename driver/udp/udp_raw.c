/* SPDX-License-Identifier: BSD-3-Clause */
/* frame=udp on raw ports (packet:, dpdk:): see udp_raw.h. */
#include "udp_raw.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h> /* before the linux/ headers */
#include <linux/filter.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pp_compiler.h"
#include "pp_log.h"
#include "udp_addr.h"
#include "udp_frame.h"
#include "udp_sock.h"

#define HOPS	  1024 /* next hops remembered (a power of two) */
#define HOP_PROBE 8    /* slots looked at for one */
#define SOCK_BUF  (4u << 20)
/* A run to one peer goes through the socket as one GSO message when its
 * frames fill at least half a frame's room (a long message's DATA) and it
 * has this many bytes; else its frames go through the TX ring one by one
 * (two ACKs are not worth a system call of their own, nor is a window of
 * 1 KiB messages worth the IPv4 stack's work: 0.57 to 0.85 of the ring's
 * rate at 9000 bytes of MTU, runs alternated). */
#define GSO_MIN_BYTES 8192

struct hop {
	uint64_t key;	/* 1 << 63 | the peer's MAC; 0: empty */
	uint8_t mac[6]; /* the next hop's */
};

#define SUBNETS 8 /* IPv4 subnets of the interface remembered */

struct pp_udp_raw {
	struct sockaddr_in self;
	int link;	  /* link=raw: on-link peers get PP_UDP_ETH_LINK frames */
	unsigned nb_nets; /* the interface's subnets (network order) */
	uint32_t net[SUBNETS], mask[SUBNETS];
	uint8_t mac[6];	   /* self, encoded */
	uint8_t if_mac[6]; /* the interface's: the outer source */
	int fd;		   /* the UDP socket */
	struct pp_udp_tx tx;
	struct pp_port_stats st;		   /* the socket side's sends */
	uint64_t spoofed, malformed, misaddr, gso; /* receive drops; GSO messages taken */
	uint64_t learnt;			   /* next hops learnt or changed */
	struct hop hops[HOPS];
	const char *who; /* the port kind, for messages */
	char name[IF_NAMESIZE + 48];
};

static uint64_t mac_key(const uint8_t *m)
{
	uint64_t k = 1ull << 63;
	for (int i = 0; i < 6; i++)
		k |= (uint64_t)m[i] << (8 * (5 - i));
	return k;
}

static unsigned hop_home(uint64_t key)
{
	return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 54) & (HOPS - 1);
}

static const uint8_t *hop_find(const struct pp_udp_raw *u, const uint8_t *peer)
{
	uint64_t key = mac_key(peer);
	for (unsigned j = 0, s = hop_home(key); j < HOP_PROBE; j++) {
		const struct hop *h = &u->hops[(s + j) & (HOPS - 1)];
		if (h->key == key)
			return h->mac;
		if (!h->key)
			return NULL;
	}
	return NULL;
}

static void hop_learn(struct pp_udp_raw *u, const uint8_t *peer, const uint8_t *via)
{
	uint64_t key = mac_key(peer);
	unsigned s = hop_home(key);
	struct hop *h = &u->hops[s];
	for (unsigned j = 0; j < HOP_PROBE; j++) {
		struct hop *c = &u->hops[(s + j) & (HOPS - 1)];
		if (c->key == key || !c->key) {
			h = c;
			break;
		}
	}
	if (h->key == key && memcmp(h->mac, via, 6) == 0)
		return;
	h->key = key; /* full: the home slot's peer goes by the socket again */
	memcpy(h->mac, via, 6);
	u->learnt++;
}

const uint8_t *pp_udp_raw_mac(const struct pp_udp_raw *u)
{
	return u->mac;
}

const char *pp_udp_raw_name(const struct pp_udp_raw *u)
{
	return u->name;
}

void pp_udp_raw_close(struct pp_udp_raw *u)
{
	if (!u)
		return;
	if (u->spoofed || u->malformed || u->misaddr)
		pp_info("%s: dropped %llu spoofed, %llu malformed, %llu misaddressed frames",
			u->name, (unsigned long long)u->spoofed, (unsigned long long)u->malformed,
			(unsigned long long)u->misaddr);
	pp_debug("%s: %llu GSO messages taken whole, %llu next hops learnt, %llu frames sent "
		 "through the socket",
		 u->name, (unsigned long long)u->gso, (unsigned long long)u->learnt,
		 (unsigned long long)u->st.tx_frames);
	if (u->fd >= 0)
		close(u->fd);
	pp_udp_tx_fini(&u->tx);
	free(u);
}

/* The udp: device string for these options: "IFACE:PORT" and the options
 * udp_addr.c parses. 0, or -EINVAL (said). */
static int udp_dev_of(const char *who, const char *iface, const char *opts, char *out, size_t cap,
		      int *udp, int *link)
{
	unsigned port = 0;
	char rest[4096] = "", addr[64] = "";
	size_t tail = 0;
	*udp = 0;
	for (const char *s = opts; *s;) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len == 9 && memcmp(s, "frame=udp", 9) == 0)
			*udp = 1;
		else if (len == 9 && memcmp(s, "frame=eth", 9) == 0)
			*udp = 0;
		else if (len > 5 && memcmp(s, "port=", 5) == 0) {
			char *end;
			unsigned long v = strtoul(s + 5, &end, 10);
			if (end != s + len || v > 65535 || (v && v < PP_UDP_PORT_MIN)) {
				pp_err("%s:%s: port=%.*s: give 0 or %u..65535", who, iface,
				       (int)(len - 5), s + 5, PP_UDP_PORT_MIN);
				return -EINVAL;
			}
			port = (unsigned)v;
		} else if (len == 8 && memcmp(s, "link=raw", 8) == 0) {
			*link = 1;
		} else if (len == 7 && memcmp(s, "link=ip", 7) == 0) {
			*link = 0;
		} else if (len > 5 && len - 5 < sizeof(addr) && memcmp(s, "addr=", 5) == 0) {
			memcpy(addr, s + 5, len - 5);
			addr[len - 5] = '\0';
		} else if ((len > 6 && memcmp(s, "peers=", 6) == 0) ||
			   (len > 9 && memcmp(s, "peerfile=", 9) == 0) ||
			   (len == 5 &&
			    (memcmp(s, "gso=0", 5) == 0 || memcmp(s, "gso=1", 5) == 0))) {
			if (tail + len + 2 > sizeof(rest))
				return -EINVAL;
			rest[tail++] = ',';
			memcpy(rest + tail, s, len);
			tail += len;
			rest[tail] = '\0';
		} else {
			pp_err(
			    "%s:%s: unknown option '%.*s' (frame=eth|udp; with frame=udp: "
			    "addr=IPV4, port=N, peers=LIST, peerfile=PATH, gso=0|1, link=ip|raw)",
			    who, iface, (int)len, s);
			return -EINVAL;
		}
		s = e ? e + 1 : s + len;
	}
	if (!*udp && (port || tail || addr[0] || *link)) {
		pp_err("%s:%s: addr=, port=, peers=, peerfile=, gso= and link= need frame=udp", who,
		       iface);
		return -EINVAL;
	}
	int n = snprintf(out, cap, "%s:%u%s", addr[0] ? addr : iface, port, rest);
	return n < 0 || (size_t)n >= cap ? -EINVAL : 0;
}

/* IFACE's IPv4 subnets: a peer in one is on the link (link=raw). */
static void subnets_of(struct pp_udp_raw *u, const char *iface)
{
	struct ifaddrs *all;
	if (getifaddrs(&all) != 0)
		return;
	for (struct ifaddrs *i = all; i && u->nb_nets < SUBNETS; i = i->ifa_next) {
		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET ||
		    strcmp(i->ifa_name, iface) != 0)
			continue;
		uint32_t m = ((const struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
		u->mask[u->nb_nets] = m;
		u->net[u->nb_nets++] =
		    ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr & m;
	}
	freeifaddrs(all);
}

static int on_link(const struct pp_udp_raw *u, uint32_t addr)
{
	for (unsigned i = 0; i < u->nb_nets; i++)
		if ((addr & u->mask[i]) == u->net[i])
			return 1;
	return 0;
}

static int sock_setup(struct pp_udp_raw *u, const char *iface, const char *dev, int no_gso,
		      int no_gro)
{
	u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (u->fd < 0) {
		int e = errno;
		pp_err("%s: socket: %s", dev, strerror(e));
		return -e;
	}
	int sz = SOCK_BUF, one = 1, zero = 0;
	setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	/* It receives nothing: every datagram is dropped at the socket, and
	 * taken whole (UDP_GRO) so that the kernel does not cut a GSO message
	 * apart only to drop the pieces. Bound, the port sends no ICMP. */
	struct sock_filter none = BPF_STMT(BPF_RET | BPF_K, 0);
	struct sock_fprog prog = {.len = 1, .filter = &none};
	if (setsockopt(u->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0) {
		int e = errno;
		pp_err("%s: cannot filter the UDP socket: %s", dev, strerror(e));
		return -EIO;
	}
	/* What it sends leaves by IFACE, the port's own: with a second port on
	 * the same subnet the kernel's route could pick that one, whose ring
	 * would then see our peers' answers (their next hop learnt from it). */
	if (setsockopt(u->fd, SOL_SOCKET, SO_BINDTODEVICE, iface, (socklen_t)strlen(iface)) < 0) {
		int e = errno;
		pp_err("%s: cannot bind the UDP socket to %s: %s", dev, iface, strerror(e));
		return -e;
	}
	if (!no_gro) /* else its peers send it no GSO message, nor may GRO make one */
		(void)setsockopt(u->fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	int rc = pp_udp_bind(u->fd, &u->self, dev);
	if (rc)
		return rc;
	u->tx.gso = !no_gso && setsockopt(u->fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof(zero)) == 0;
	return 0;
}

int pp_udp_raw_open(struct pp_udp_raw **out, const char *who, const char *iface, const char *opts,
		    const uint8_t if_mac[6], int no_gso)
{
	*out = NULL;
	char dev[4400];
	int udp, link = 0,
		 rc = udp_dev_of(who, iface, opts ? opts : "", dev, sizeof(dev), &udp, &link);
	if (rc || !udp)
		return rc;
	struct pp_udp_dev d;
	if ((rc = pp_udp_dev_parse(dev, &d)))
		return rc;
	struct pp_udp_raw *u = calloc(1, sizeof(*u));
	if (!u) {
		pp_udp_dev_free(&d);
		return -ENOMEM;
	}
	u->fd = -1;
	u->who = who;
	u->self = d.self;
	u->link = link;
	memcpy(u->if_mac, if_mac, 6);
	subnets_of(u, iface);
	if ((rc = sock_setup(u, iface, dev, d.no_gso || no_gso, no_gso))) {
		pp_udp_dev_free(&d);
		pp_udp_raw_close(u);
		return rc;
	}
	pp_udp_mac_encode(&u->self, u->mac);
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &u->self.sin_addr, ip, sizeof(ip));
	snprintf(u->name, sizeof(u->name), "%s:%s,udp:%s:%u%s", who, iface, ip,
		 ntohs(u->self.sin_port), link ? ",link=raw" : "");
	int gso = u->tx.gso;
	pp_udp_tx_init(&u->tx, u->fd, &d, &u->self, u->name, &u->st);
	u->tx.gso = gso;
	pp_udp_dev_free(&d);
	*out = u;
	return 0;
}

int pp_udp_raw_filter(struct pp_udp_raw *u, int fd)
{
	/* Offsets from the Ethernet header: unfragmented IPv4 UDP to our port
	 * (EtherType IPv4, or the link one), whole; anything else not at all. */
	struct sock_filter code[] = {
	    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x0800, 1, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PP_UDP_ETH_LINK, 0, 8),
	    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 23),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 6),
	    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 20),
	    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x3fff, 4, 0),
	    BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 14),
	    BPF_STMT(BPF_LD | BPF_H | BPF_IND, 16),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ntohs(u->self.sin_port), 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, 0x40000),
	    BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) == 0)
		return 0;
	pp_err("%s: cannot attach the receive filter: %s", u->name, strerror(errno));
	return -EIO;
}

int pp_udp_raw_ours(const struct pp_udp_raw *u, const uint8_t *f, uint32_t len)
{
	return pp_udp_outer_for(f, len, &u->self);
}

void pp_udp_raw_outer(const struct pp_udp_raw *u, uint8_t *hdr, const uint8_t *f, uint32_t len)
{
	struct sockaddr_in to;
	(void)pp_udp_mac_decode(f, &to); /* pp_udp_raw_route saw it decode */
	const uint8_t *hop = hop_find(u, f);
	static const uint8_t none[6];
	pp_udp_outer_write(hdr, u->if_mac, hop ? hop : none, &u->self, &to, len,
			   u->link && on_link(u, to.sin_addr.s_addr));
}

unsigned pp_udp_raw_split(struct pp_udp_raw *u, uint8_t *f, uint32_t len, uint32_t gso_size,
			  uint8_t **seg, uint32_t *seg_len, unsigned max)
{
	struct pp_udp_outer o;
	if (pp_udp_outer_parse(f, len, u->self.sin_port, &o) != PP_UDP_OK || !o.len) {
		u->malformed++;
		return 0;
	}
	uint32_t size = gso_size ? gso_size : o.len;
	if ((o.len + size - 1) / size > max) {
		u->malformed++;
		return 0;
	}
	u->gso += gso_size != 0;
	unsigned k = 0;
	for (uint32_t off = 0; off < o.len; off += size) {
		uint32_t l = o.len - off < size ? o.len - off : size;
		uint8_t *s = f + o.off + off;
		enum pp_udp_drop why = pp_udp_inner_check(s, l, &o.from, u->mac);
		if (pp_unlikely(why != PP_UDP_OK)) {
			if (why == PP_UDP_SPOOFED)
				u->spoofed++;
			else if (why == PP_UDP_MISADDR)
				u->misaddr++;
			else
				u->malformed++;
			continue;
		}
		if (!k)
			hop_learn(u, pp_eth_src(s), pp_eth_src(f));
		seg[k] = s;
		seg_len[k++] = l;
	}
	return k;
}

enum pp_udp_raw_way pp_udp_raw_route(struct pp_udp_raw *u, struct pp_buf **bufs, unsigned n,
				     uint32_t cap, unsigned *k)
{
	struct pp_buf *b = bufs[0];
	*k = 1;
	if (b->len < PP_ETH_HLEN || b->len > cap ||
	    (!(b->data[0] & 0x01) && (b->data[0] & 0x03) != 0x02)) {
		u->st.tx_failed++; /* too long, a runt, or a universal MAC: no address */
		return PP_UDP_RAW_DROP;
	}
	if (b->data[0] & 0x01)
		return PP_UDP_RAW_SOCK; /* a group frame: to every peer */
	/* The run to b's peer: frames of b's length, the last maybe shorter. */
	unsigned r = 1;
	uint32_t bytes = b->len;
	while (r < n && r < PP_UDP_GSO_SEGS && bufs[r - 1]->len == b->len) {
		const struct pp_buf *c = bufs[r];
		if (c->len < PP_ETH_HLEN || c->len > b->len || bytes + c->len > PP_UDP_GSO_BYTES ||
		    memcmp(c->data, b->data, 6) != 0)
			break;
		bytes += c->len;
		r++;
	}
	*k = r;
	if (!hop_find(u, b->data) ||
	    (u->tx.gso && r > 1 && 2 * b->len >= cap && bytes >= GSO_MIN_BYTES))
		return PP_UDP_RAW_SOCK;
	return PP_UDP_RAW_OUT;
}

unsigned pp_udp_raw_send(struct pp_udp_raw *u, struct pp_buf **bufs, unsigned k)
{
	if (bufs[0]->data[0] & 0x01)
		return (unsigned)pp_udp_tx_group(&u->tx, bufs[0]);
	return pp_udp_tx_run(&u->tx, bufs, k);
}

void pp_udp_raw_stats(const struct pp_udp_raw *u, struct pp_port_stats *st)
{
	st->tx_frames += u->st.tx_frames;
	st->tx_bytes += u->st.tx_bytes;
	st->tx_failed += u->st.tx_failed;
	st->rx_dropped += u->spoofed + u->malformed + u->misaddr;
}
