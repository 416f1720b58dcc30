/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The UDP backend ("udp:ADDR:PORT[,peers=...][,peerfile=...][,mtu=N][,gso=0][,gro=0]"):
 * Ethernet frames carried whole, one per UDP/IPv4 datagram, through a kernel
 * socket. No privilege needed, and frames cross routers.
 *
 * The port's MAC is its address (udp_addr.h), so a frame's destination MAC
 * is where sendto sends it; a group destination (broadcast, for HELLO and
 * BYE) goes to every peer of the list, one datagram each. On receive a
 * datagram counts only when the source MAC inside it is the address it came
 * from, its destination is this port or a group, and it is 0x88B5: anyone
 * can send to a UDP port, and claiming a peer's MAC from elsewhere must not
 * pass for that peer.
 *
 * Buffers come from a pool made at open (a plain stack: one queue pair, one
 * thread); recvmmsg and sendmmsg move up to UDP_BURST frames per call, the
 * socket nonblocking, so the hot path makes no allocation and one system
 * call per burst; frames of one size to one peer leave as one GSO send
 * (pp_udp_tx_run; gso=0 turns it off).
 *
 * With UDP_GRO (gro=0 turns it off) the kernel hands a GSO send, or a run
 * of equal datagrams it coalesced itself, to recvmmsg as one datagram of up
 * to 64 KiB: too big for a slot. So with GRO every datagram is received
 * into staging buffers made at open and copied apart into slots, each inner
 * datagram checked as if it came alone (gro_rx_burst).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bufpool.h"
#include "iface.h"
#include "pp_log.h"
#include "pp_port.h"
#include "udp_addr.h"
#include "udp_frame.h"
#include "udp_sock.h"

#define POOL_DEFAULT  1024 /* slots when the queue depths ask for fewer */
#define UDP_BURST     PP_UDP_BURST
#define SOCK_BUF      (4u << 20)
#define GRO_MAX_BYTES 65536 /* a coalesced datagram: the kernel's GRO stops below 64 KiB */

/* Why received datagrams were dropped (logged at close, summed in
 * rx_dropped). */
struct udp_drops {
	uint64_t spoofed;   /* source MAC is not the address it came from */
	uint64_t malformed; /* shorter than a header, not 0x88B5, truncated */
	uint64_t misaddr;   /* destination MAC neither ours nor a group */
};

/* Datagrams received with UDP_GRO, waiting to be copied apart into slots.
 * One recvmmsg fills it; what one call cannot place (the pool ran short, the
 * caller's burst is full) stays for the next, ahead of anything newer in the
 * socket: a frame received is never dropped for want of a slot. */
struct udp_stage {
	uint8_t *mem;			/* UDP_BURST buffers of GRO_MAX_BYTES */
	struct mmsghdr msgs[UDP_BURST]; /* pointing at them, made at open */
	struct iovec iov[UDP_BURST];
	struct sockaddr_in from[UDP_BURST];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl[UDP_BURST];
	uint32_t seg[UDP_BURST]; /* each one's segment size (its length when not coalesced) */
	unsigned nb;		 /* datagrams in it */
	unsigned next;		 /* the first not yet wholly copied */
	uint32_t off;		 /* where its next segment begins */
	uint64_t coalesced;	 /* datagrams that held several (logged at close) */
	uint64_t segs;		 /* the datagrams they held */
};

struct udp_port {
	struct pp_port base; /* must be first */
	int fd;
	struct sockaddr_in self;
	uint8_t mac[6];
	struct pp_udp_tx tx;	/* sending: fd, GSO, peers (udp_sock.h) */
	struct udp_stage *gro;	/* UDP_GRO on: its staging buffers; NULL: off */
	struct pp_bufpool pool; /* its buffers (bufpool.h) */
	struct pp_port_info info;
	struct pp_port_stats st;
	struct udp_drops drops;
	char name[64]; /* "udp:ADDR:PORT", for messages */
};

static void udp_port_close(struct pp_port *port)
{
	struct udp_port *p = (struct udp_port *)port;
	if (p->drops.spoofed || p->drops.malformed || p->drops.misaddr)
		pp_info("%s: dropped %llu spoofed, %llu malformed, %llu misaddressed datagrams",
			p->name, (unsigned long long)p->drops.spoofed,
			(unsigned long long)p->drops.malformed,
			(unsigned long long)p->drops.misaddr);
	if (p->gro && p->gro->coalesced)
		pp_info("%s: GRO: %llu coalesced datagrams held %llu frames", p->name,
			(unsigned long long)p->gro->coalesced, (unsigned long long)p->gro->segs);
	if (p->fd >= 0)
		close(p->fd);
	pp_udp_tx_fini(&p->tx);
	if (p->gro)
		free(p->gro->mem);
	free(p->gro);
	pp_bufpool_fini(&p->pool);
	free(p);
}

/* The MTU and state of the interface holding addr, else of the first whose
 * subnet holds it (127.0.0.2 is lo's): 0, or -ENODEV. */
static int iface_of(const struct sockaddr_in *addr, unsigned *mtu, int *up, char *name, size_t len)
{
	struct ifaddrs *all, *best = NULL;
	if (getifaddrs(&all) != 0)
		return -ENODEV;
	for (struct ifaddrs *i = all; i; i = i->ifa_next) {
		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET)
			continue;
		uint32_t a = ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
		uint32_t m = ((const struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
		if (a == addr->sin_addr.s_addr) {
			best = i;
			break;
		}
		if (!best && (a & m) == (addr->sin_addr.s_addr & m))
			best = i;
	}
	int rc = -ENODEV;
	if (best) {
		snprintf(name, len, "%s", best->ifa_name);
		*up = (best->ifa_flags & IFF_UP) && (best->ifa_flags & IFF_RUNNING);
		int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq ifr = {0};
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", best->ifa_name);
		if (s >= 0 && ioctl(s, SIOCGIFMTU, &ifr) == 0) {
			*mtu = (unsigned)ifr.ifr_mtu;
			rc = 0;
		}
		if (s >= 0)
			close(s);
	}
	freeifaddrs(all);
	return rc;
}

static int setup_pool(struct udp_port *p, const struct pp_port_conf *conf, uint32_t cap)
{
	unsigned n = (unsigned)conf->rx_depth + conf->tx_depth;
	return pp_bufpool_init(&p->pool, n < POOL_DEFAULT ? POOL_DEFAULT : n, cap, p);
}

/* UDP_GRO's staging buffers, and the receive headers pointing at them. */
static int setup_stage(struct udp_port *p)
{
	struct udp_stage *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	p->gro = g; /* freed at close, even half made */
	g->mem = malloc((size_t)UDP_BURST * GRO_MAX_BYTES);
	if (!g->mem)
		return -ENOMEM;
	for (unsigned i = 0; i < UDP_BURST; i++) {
		g->iov[i] = (struct iovec){g->mem + (size_t)i * GRO_MAX_BYTES, GRO_MAX_BYTES};
		g->msgs[i].msg_hdr = (struct msghdr){.msg_name = &g->from[i],
						     .msg_iov = &g->iov[i],
						     .msg_iovlen = 1,
						     .msg_control = g->ctl[i].buf};
	}
	return 0;
}

/* Errors: -EINVAL bad string, -ENODEV address not here, -EADDRINUSE,
 * -ENOMEM, -errno of socket(). */
static int udp_port_open(struct pp_port **port, const char *dev, const struct pp_port_conf *conf)
{
	struct pp_udp_dev d;
	int rc = pp_udp_dev_parse(dev, &d);
	if (rc)
		return rc;
	struct udp_port *p = calloc(1, sizeof(*p));
	if (!p) {
		pp_udp_dev_free(&d);
		return -ENOMEM;
	}
	p->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd < 0) {
		rc = -errno;
		pp_err("udp:%s: socket: %s", dev, strerror(-rc));
		goto fail;
	}
	int sz = SOCK_BUF; /* best effort: the kernel caps it at rmem_max/wmem_max */
	setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	p->self = d.self;
	if ((rc = pp_udp_bind(p->fd, &p->self, dev)))
		goto fail;
	int zero = 0; /* kernels before 4.18 have no UDP_SEGMENT */
	p->tx.gso = !d.no_gso && setsockopt(p->fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof(zero)) == 0;
	int one = 1; /* kernels before 5.0 have no UDP_GRO: run without */
	if (!d.no_gro && setsockopt(p->fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0 &&
	    (rc = setup_stage(p)))
		goto fail;
	pp_udp_mac_encode(&p->self, p->mac);
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &p->self.sin_addr, ip, sizeof(ip));
	snprintf(p->name, sizeof(p->name), "udp:%s:%u", ip, ntohs(p->self.sin_port));

	/* The link MTU: mtu=, else the interface's, capped (loopback's 64 KiB
	 * would make every pool slot that big). */
	unsigned mtu = 0;
	int up = -1;
	char ifname[IFNAMSIZ] = "";
	if (iface_of(&p->self, &mtu, &up, ifname, sizeof(ifname)) != 0)
		mtu = 1500;
	if (mtu > PP_UDP_MTU_DEF)
		mtu = PP_UDP_MTU_DEF;
	if (d.mtu)
		mtu = d.mtu;
	if (mtu < PP_UDP_MTU_MIN) {
		pp_err("udp:%s: interface %s has MTU %u, below %d", dev, ifname, mtu,
		       PP_UDP_MTU_MIN);
		rc = -EMSGSIZE;
		goto fail;
	}
	uint32_t cap = mtu - PP_UDP_HDRS; /* a whole frame per datagram */
	if ((rc = setup_pool(p, conf, cap)))
		goto fail;

	/* Broadcast targets: the peer list without this port. */
	int gso = p->tx.gso;
	pp_udp_tx_init(&p->tx, p->fd, &d, &p->self, p->name, &p->st);
	p->tx.gso = gso;
	pp_udp_dev_free(&d);

	memcpy(p->info.mac, p->mac, 6);
	p->info.mtu = (uint16_t)(cap - PP_ETH_HLEN);
	p->info.nb_queues = 1;
	p->info.buf_cap = cap;
	p->info.link_up = up;
	/* The link's speed, as the raw ports report theirs: the engine starts
	 * its path rate there (rate_hint), and without one it pushes only the
	 * configured BTPs until it has measured a rate, so a 1 KiB message
	 * waited for a PULL. Loopback has none. */
	struct pp_port_info li;
	if (ifname[0] && pp_iface_query(ifname, &li, NULL, NULL) == 0)
		p->info.speed_mbps = li.speed_mbps;
	snprintf(p->info.driver, sizeof(p->info.driver), "udp");
	if (conf->nb_queues > 1)
		pp_info("%s: one queue pair only (%u asked)", p->name, conf->nb_queues);
	pp_info("%s: mtu %u (link %u%s%s), %u peers, GSO %s, GRO %s", p->name, p->info.mtu, mtu,
		ifname[0] ? ", " : "", ifname, p->tx.nb_peers, p->tx.gso ? "on" : "off",
		p->gro ? "on" : "off");
	if (!p->tx.nb_peers)
		pp_info("%s: no peers (peers=, peerfile=): broadcasts reach nobody", p->name);
	*port = &p->base;
	return 0;
fail:
	pp_udp_dev_free(&d);
	udp_port_close(&p->base);
	return rc;
}

static int udp_port_info(struct pp_port *port, struct pp_port_info *info)
{
	*info = ((struct udp_port *)port)->info;
	return 0;
}

static int udp_port_stats(struct pp_port *port, struct pp_port_stats *stats)
{
	struct udp_port *p = (struct udp_port *)port;
	*stats = p->st;
	stats->rx_dropped += p->drops.spoofed + p->drops.malformed + p->drops.misaddr;
#ifdef SO_MEMINFO
	/* What the socket's full receive queue dropped (SK_MEMINFO_DROPS). */
	uint32_t mi[9];
	socklen_t len = sizeof(mi);
	if (getsockopt(p->fd, SOL_SOCKET, SO_MEMINFO, mi, &len) == 0 && len >= sizeof(mi))
		stats->rx_dropped += mi[8];
#endif
	return 0;
}

static unsigned udp_port_alloc(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	struct udp_port *p = (struct udp_port *)port;
	unsigned got = pp_bufpool_alloc(&p->pool, bufs, n);
	if (got < n)
		p->st.alloc_failed++;
	return got;
}

static void udp_port_free(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	pp_bufpool_free(&((struct udp_port *)port)->pool, bufs, n);
}

/* 0 when datagram f of len bytes from `from` may pass (see the top);
 * else counted by reason. */
static int rx_check(struct udp_port *p, const uint8_t *f, unsigned len, int flags,
		    const struct sockaddr_in *from)
{
	enum pp_udp_drop why =
	    (flags & MSG_TRUNC) ? PP_UDP_MALFORMED : pp_udp_inner_check(f, len, from, p->mac);
	if (why == PP_UDP_OK)
		return 0;
	if (why == PP_UDP_SPOOFED)
		p->drops.spoofed++;
	else if (why == PP_UDP_MISADDR)
		p->drops.misaddr++;
	else
		p->drops.malformed++;
	return -1;
}

/* Up to n datagrams from the socket into the stage (empty before): how
 * many. Each one's segment size comes from its UDP_GRO message. */
static unsigned gro_recv(struct udp_port *p, unsigned n)
{
	struct udp_stage *g = p->gro;
	for (unsigned i = 0; i < n; i++) { /* the kernel wrote over these */
		g->msgs[i].msg_hdr.msg_namelen = sizeof(g->from[i]);
		g->msgs[i].msg_hdr.msg_controllen = sizeof(g->ctl[i].buf);
	}
	int r = recvmmsg(p->fd, g->msgs, n, MSG_DONTWAIT, NULL);
	if (r <= 0)
		return 0;
	for (unsigned i = 0; i < (unsigned)r; i++) {
		struct msghdr *h = &g->msgs[i].msg_hdr;
		uint32_t len = g->msgs[i].msg_len;
		int gso = 0;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
			if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO)
				memcpy(&gso, CMSG_DATA(c), sizeof(gso));
		/* Never 0 unless the datagram is empty: gro_drain moves on by it. */
		g->seg[i] = gso > 0 && (uint32_t)gso < len ? (uint32_t)gso : len;
		if (g->seg[i] < len) {
			g->coalesced++;
			g->segs += (len + g->seg[i] - 1) / g->seg[i];
		}
	}
	g->nb = (unsigned)r;
	g->next = 0;
	g->off = 0;
	return (unsigned)r;
}

/* Copy staged datagrams apart into free slots, in order, up to n frames:
 * every segment is one whole frame, checked on its own as a datagram from
 * the same address. Stops when the pool is empty; the rest stays. */
static unsigned gro_drain(struct udp_port *p, struct pp_buf **bufs, unsigned n)
{
	struct udp_stage *g = p->gro;
	unsigned got = 0;
	while (g->next < g->nb && got < n && p->pool.nb_free) {
		const struct mmsghdr *m = &g->msgs[g->next];
		const uint8_t *f = (const uint8_t *)g->iov[g->next].iov_base + g->off;
		uint32_t len = m->msg_len - g->off;
		if (len > g->seg[g->next])
			len = g->seg[g->next];
		/* Longer than a slot: what receiving into slots would truncate. */
		int flags = m->msg_hdr.msg_flags | (len > p->info.buf_cap ? MSG_TRUNC : 0);
		if (rx_check(p, f, len, flags, &g->from[g->next]) == 0) {
			struct pp_buf *b = NULL;
			pp_bufpool_alloc(&p->pool, &b, 1); /* one is free: the loop's test */
			memcpy(b->data, f, len);
			b->len = len;
			p->st.rx_frames++;
			p->st.rx_bytes += len;
			bufs[got++] = b;
		}
		g->off += len;
		if (g->off >= m->msg_len) { /* this datagram is done */
			g->next++;
			g->off = 0;
		}
	}
	return got;
}

/* rx_burst with UDP_GRO: first what an earlier call left staged, then, once
 * the stage is empty, a recvmmsg for no more datagrams than frames may be
 * placed (each holds at least one). */
static unsigned gro_rx_burst(struct udp_port *p, struct pp_buf **bufs, unsigned n)
{
	struct udp_stage *g = p->gro;
	if (!p->pool.nb_free) {
		p->st.alloc_failed++;
		return 0;
	}
	unsigned got = gro_drain(p, bufs, n);
	if (g->next < g->nb || got == n || !p->pool.nb_free)
		return got; /* no system call while frames wait here */
	unsigned want = n - got < p->pool.nb_free ? n - got : p->pool.nb_free;
	if (gro_recv(p, want))
		got += gro_drain(p, bufs + got, n - got);
	return got;
}

static unsigned udp_port_rx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs,
				  unsigned n)
{
	struct udp_port *p = (struct udp_port *)port;
	(void)queue;
	if (n > UDP_BURST)
		n = UDP_BURST;
	if (p->gro)
		return gro_rx_burst(p, bufs, n);
	if (n > p->pool.nb_free) {
		if (!p->pool.nb_free) {
			p->st.alloc_failed++;
			return 0;
		}
		n = p->pool.nb_free;
	}
	struct pp_buf *cand[UDP_BURST];
	struct mmsghdr msgs[UDP_BURST];
	struct iovec iov[UDP_BURST];
	struct sockaddr_in from[UDP_BURST];
	for (unsigned i = 0; i < n; i++) {
		/* the top n free slots, taken only if filled */
		cand[i] = p->pool.free_stack[p->pool.nb_free - 1 - i];
		iov[i] = (struct iovec){cand[i]->data, cand[i]->cap};
		msgs[i].msg_hdr = (struct msghdr){.msg_name = &from[i],
						  .msg_namelen = sizeof(from[i]),
						  .msg_iov = &iov[i],
						  .msg_iovlen = 1};
	}
	int r = recvmmsg(p->fd, msgs, n, MSG_DONTWAIT, NULL);
	if (r <= 0)
		return 0;
	p->pool.nb_free -= (unsigned)r;
	unsigned got = 0;
	for (unsigned i = 0; i < (unsigned)r; i++) {
		struct pp_buf *b = cand[i];
		unsigned len = msgs[i].msg_len;
		if (rx_check(p, b->data, len, msgs[i].msg_hdr.msg_flags, &from[i])) {
			p->pool.free_stack[p->pool.nb_free++] = b;
			continue;
		}
		b->len = len;
		b->ts_ns = 0;
		p->st.rx_frames++;
		p->st.rx_bytes += len;
		bufs[got++] = b;
	}
	return got;
}

static unsigned udp_port_tx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs,
				  unsigned n)
{
	struct udp_port *p = (struct udp_port *)port;
	(void)queue;
	unsigned i = 0;
	while (i < n) {
		struct pp_buf *b = bufs[i];
		struct sockaddr_in a;
		if (b->len < PP_ETH_HLEN || b->len > p->info.buf_cap) {
			p->st.tx_failed++; /* can never be sent: take and drop it */
			udp_port_free(port, &bufs[i++], 1);
			continue;
		}
		if (b->data[0] & 0x01) { /* broadcast or multicast */
			if (!pp_udp_tx_group(&p->tx, b))
				break;
			udp_port_free(port, &bufs[i++], 1);
			continue;
		}
		if (pp_udp_mac_decode(b->data, &a) != 0) {
			p->st.tx_failed++; /* a universal MAC: no address in it */
			udp_port_free(port, &bufs[i++], 1);
			continue;
		}
		/* A run of unicast frames, up to the next one that is not. */
		unsigned k = 1;
		while (i + k < n && k < UDP_BURST) {
			b = bufs[i + k];
			if (b->len < PP_ETH_HLEN || b->len > p->info.buf_cap ||
			    pp_udp_mac_decode(b->data, &a) != 0)
				break; /* dealt with above, on the next turn */
			k++;
		}
		unsigned taken = pp_udp_tx_run(&p->tx, &bufs[i], k);
		if (!taken)
			break;
		udp_port_free(port, &bufs[i], taken);
		i += taken;
	}
	return i;
}

/* The socket: readable while a datagram waits. */
static int udp_port_wait_fd(struct pp_port *port)
{
	return ((struct udp_port *)port)->fd;
}

const struct pp_port_ops pp_port_ops_udp = {
    .name = "udp",
    .open = udp_port_open,
    .close = udp_port_close,
    .info = udp_port_info,
    .stats = udp_port_stats,
    .alloc = udp_port_alloc,
    .free = udp_port_free,
    .rx_burst = udp_port_rx_burst,
    .tx_burst = udp_port_tx_burst,
    .wait_fd = udp_port_wait_fd,
};
