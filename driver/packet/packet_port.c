/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The AF_PACKET backend ("packet:IFACE"), Linux only, no DPDK or libpcap.
 *
 * One raw AF_PACKET socket bound to IFACE and EtherType 0x88B5 (the kernel
 * delivers it nothing else), with a TPACKET_V2 RX ring and TX ring mapped
 * into the process. The port's buffers ARE the ring slots: rx_burst hands
 * out slots the kernel filled, alloc hands out TX slots, and tx_burst marks
 * them for sending and kicks the kernel with one sendto() per burst. So the
 * engine writes each frame where the kernel sends it from and reads each
 * frame where the kernel put it: against DPDK's net_af_packet, which copies
 * every frame between its mbufs and these same rings, two copies a frame
 * fewer (one on each side). The kernel's own copies stay: it copies each
 * frame into the receiving socket's RX ring, and on veth also a sent
 * frame's ring pages when the skb crosses to the peer (skb_copy_ubufs: the
 * pages are the user's, and the veth orphans the skb); a NIC sends from the
 * ring. The slot bookkeeping (out-of-order frees, the ring order of TX) is
 * packet_ring.c.
 *
 * Slots are sized for the interface MTU (SIOCGIFMTU at open): a jumbo veth
 * gives jumbo frames. PACKET_QDISC_BYPASS sends straight to the driver,
 * PACKET_LOSS makes the kernel drop (not stall on) a frame it refuses,
 * PACKET_IGNORE_OUTGOING keeps other sockets' sends on IFACE out of the RX
 * ring. Needs CAP_NET_RAW. One queue pair, used by one thread.
 *
 * Open errors (logged): -EINVAL bad name, -ENODEV no such interface or not
 * Ethernet, -EPERM no CAP_NET_RAW, -ENETDOWN interface down, -EMSGSIZE MTU
 * below PACKET_MIN_MTU, -ENOMEM rings refused, -EIO anything else.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h> /* before the linux/ headers: glibc's if.h guards theirs */
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iface.h"
#include "packet_ring.h"
#include "udp/udp_frame.h"
#include "udp/udp_raw.h"
#include "pp_compiler.h"
#include "pp_log.h"
#include "pp_prefault.h"
#include "pp_port.h"

#define PACKET_MIN_MTU	   576		/* below this the port refuses the interface */
#define DEPTH_DEFAULT	   1024		/* slots per ring for standard frames */
#define DEPTH_JUMBO	   512		/* slots per ring when a slot exceeds a page */
#define DEPTH_MAX	   32768	/* slots per ring at most */
#define BLOCK_MAX	   (128u << 10) /* bytes of a ring block at most */
#define FRAMES_PER_BLK_MAX 64
#define DEPTH_UDP_RX	   256	 /* frame=udp: RX slots of a GSO message each */
#define GSO_FRAME_MAX	   65549 /* frame=udp: a GSO message taken whole (IPv4's 65535 + 14) */
#define VNET_HLEN	   10	 /* frame=udp: struct virtio_net_hdr, before every frame */

struct packet_port {
	struct pp_port base;   /* must be first */
	int fd;		       /* the AF_PACKET socket */
	int kick_pending;      /* frames marked that the kernel has not taken yet */
	struct pp_pkt_rx rx;   /* the RX ring's slots */
	struct pp_pkt_tx tx;   /* the TX ring's slots */
	uint8_t *map;	       /* both rings, RX first */
	size_t map_len;	       /* bytes mapped */
	uint64_t kdrops;       /* frames the kernel dropped (ring full), so far */
	uint64_t kicks_failed; /* sendto() calls that failed (retried later) */
	char iface[IF_NAMESIZE];
	struct pp_port_info info; /* filled at open */
	struct pp_udp_raw *udp;	  /* frame=udp (udp/udp_raw.h), else NULL */
};

static struct packet_port *to_pkt(struct pp_port *p)
{
	return (struct packet_port *)p;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t n = 2;
	while (n < v && n < DEPTH_MAX)
		n <<= 1;
	return n;
}

static uint32_t round_up(uint32_t v, uint32_t to)
{
	return (v + to - 1) / to * to;
}

/* Frames per block (a power of two), block bytes (whole pages) and frame
 * bytes (at least frame, a multiple of TPACKET_ALIGNMENT) for n slots: the
 * least waste, blocks of at most BLOCK_MAX. A frame grows to share out its
 * block's slack, since the kernel counts block_size / frame_size frames in
 * a block and wants exactly per_block of them. */
static void geometry(uint32_t frame, uint32_t n, uint32_t *per_block, uint32_t *block,
		     uint32_t *frame_out)
{
	uint32_t pg = (uint32_t)sysconf(_SC_PAGESIZE);
	uint32_t bk = 1, bb = round_up(frame, pg);
	for (uint32_t k = 2; k <= FRAMES_PER_BLK_MAX && k <= n; k *= 2) {
		uint32_t b = round_up(k * frame, pg);
		if (b > BLOCK_MAX)
			break;
		if (b / (b / k / TPACKET_ALIGNMENT * TPACKET_ALIGNMENT) != k)
			continue; /* grown, the frames would still leave room for one more */
		if ((uint64_t)(b - k * frame) * bb < (uint64_t)(bb - bk * frame) * b) {
			bk = k;
			bb = b;
		}
	}
	*per_block = bk;
	*block = bb;
	*frame_out = bb / bk / TPACKET_ALIGNMENT * TPACKET_ALIGNMENT; /* >= frame */
}

/* The slot starts of a ring of n frames at base. */
static uint8_t **slots_of(uint8_t *base, uint32_t n, uint32_t frame, uint32_t per_block,
			  uint32_t block)
{
	uint8_t **s = malloc(n * sizeof(*s));
	if (!s)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		s[i] = base + (size_t)(i / per_block) * block + (size_t)(i % per_block) * frame;
	return s;
}

static void packet_port_close(struct pp_port *port)
{
	struct packet_port *p = to_pkt(port);
	if (p->tx.moved || p->kicks_failed)
		pp_debug("packet:%s: %llu frames moved to keep the TX ring's order, %llu sendto "
			 "kicks failed",
			 p->iface, (unsigned long long)p->tx.moved,
			 (unsigned long long)p->kicks_failed);
	if (p->map)
		munmap(p->map, p->map_len);
	if (p->fd >= 0)
		close(p->fd);
	pp_udp_raw_close(p->udp);
	pp_pkt_rx_fini(&p->rx);
	pp_pkt_tx_fini(&p->tx);
	free(p);
}

static int sockopt(struct packet_port *p, int level, int name, const void *v, socklen_t len,
		   const char *what)
{
	if (setsockopt(p->fd, level, name, v, len) == 0)
		return 0;
	int e = errno;
	pp_err("packet:%s: %s: %s", p->iface, what, strerror(e));
	return e == ENOMEM ? -ENOMEM : e == EPERM ? -EPERM : -EIO;
}

/* frame=udp, the TX ring's room before a frame of len bytes: a
 * virtio_net_hdr (no GSO, no checksum to finish) and the outer headers. */
static void udp_hdr(void *arg, uint8_t *room, uint32_t len)
{
	memset(room, 0, VNET_HLEN);
	pp_udp_raw_outer(arg, room + VNET_HLEN, room + VNET_HLEN + PP_UDP_OUTER_HLEN, len);
}

/* frame=udp, an RX slot: the virtio_net_hdr before frame f says whether the
 * kernel took a GSO message whole (gso_type) and its datagrams' size. */
static unsigned udp_split(void *arg, uint8_t *f, uint32_t len, uint8_t **seg, uint32_t *seg_len,
			  unsigned max)
{
	const uint8_t *vh = f - VNET_HLEN;
	uint32_t size = vh[1] ? (uint32_t)(vh[4] | vh[5] << 8) : 0;
	return pp_udp_raw_split(arg, f, len, size, seg, seg_len, max);
}

/* Socket options, both rings, the mapping, the bind. */
static int setup(struct packet_port *p, int ifindex, const struct pp_port_conf *conf)
{
	int one = 1, v2 = TPACKET_V2, rc;
	if ((rc = sockopt(p, SOL_PACKET, PACKET_VERSION, &v2, sizeof(v2), "TPACKET_V2")) ||
	    (rc = sockopt(p, SOL_PACKET, PACKET_LOSS, &one, sizeof(one), "PACKET_LOSS")))
		return rc;
	if (setsockopt(p->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0)
		pp_warn("packet:%s: no PACKET_QDISC_BYPASS (%s): frames go through the qdisc",
			p->iface, strerror(errno));
	/* Before 4.20: outgoing frames of other sockets come in and are
	 * dropped by pp_pkt_rx_take. */
	(void)setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));

	/* A slot: the V2 header, sockaddr_ll, the padding the kernel puts
	 * before an RX frame (it starts at TPACKET_ALIGN(hdrlen + 16) - 14),
	 * and the frame. TX frames start at PP_PKT_TX_DATA_OFF, earlier.
	 * frame=udp: a virtio_net_hdr before each frame, and the outer headers
	 * (room) before the engine's frame; RX slots take a GSO message whole. */
	uint32_t vnet = p->udp ? VNET_HLEN : 0;
	uint32_t room = p->udp ? vnet + PP_UDP_OUTER_HLEN : 0;
	uint32_t cap = (uint32_t)p->info.mtu + PP_ETH_HLEN - (p->udp ? PP_UDP_OUTER_HLEN : 0);
	uint32_t frame =
	    TPACKET_ALIGN(TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - PP_ETH_HLEN + cap + room);
	uint32_t rframe = p->udp ? TPACKET_ALIGN(TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - PP_ETH_HLEN +
						 vnet + GSO_FRAME_MAX)
				 : frame;
	uint32_t jumbo = frame > 4096;
	uint32_t nrx = pow2_at_least(conf->rx_depth ? conf->rx_depth
				     : p->udp	    ? DEPTH_UDP_RX
				     : jumbo	    ? DEPTH_JUMBO
						    : DEPTH_DEFAULT);
	uint32_t ntx = pow2_at_least(conf->tx_depth ? conf->tx_depth
				     : jumbo	    ? DEPTH_JUMBO
						    : DEPTH_DEFAULT);
	uint32_t krx, brx, frx, ktx, btx, ftx;
	if (p->udp &&
	    ((rc = sockopt(p, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one), "PACKET_VNET_HDR")) ||
	     (rc = pp_udp_raw_filter(p->udp, p->fd))))
		return rc;
	geometry(rframe, nrx, &krx, &brx, &frx);
	geometry(frame, ntx, &ktx, &btx, &ftx);
	struct tpacket_req rq = {.tp_block_size = brx,
				 .tp_block_nr = nrx / krx,
				 .tp_frame_size = frx,
				 .tp_frame_nr = nrx};
	struct tpacket_req tq = {.tp_block_size = btx,
				 .tp_block_nr = ntx / ktx,
				 .tp_frame_size = ftx,
				 .tp_frame_nr = ntx};
	if ((rc = sockopt(p, SOL_PACKET, PACKET_RX_RING, &rq, sizeof(rq), "PACKET_RX_RING")) ||
	    (rc = sockopt(p, SOL_PACKET, PACKET_TX_RING, &tq, sizeof(tq), "PACKET_TX_RING")))
		return rc;
	size_t rx_len = (size_t)rq.tp_block_nr * brx, tx_len = (size_t)tq.tp_block_nr * btx;
	p->map_len = rx_len + tx_len;
	void *m =
	    mmap(NULL, p->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, p->fd, 0);
	if (m == MAP_FAILED) {
		pp_err("packet:%s: cannot map the rings (%zu bytes): %s", p->iface, p->map_len,
		       strerror(errno));
		return -ENOMEM;
	}
	p->map = m;
	pp_prefault(m, p->map_len); /* before the bind: no frame is in yet */
	/* frame=udp: a run leaves from the TX ring through the UDP socket, whose
	 * send copies it in through this mapping (pp_prefault.h). Only a
	 * first-messages cost if it fails. */
	if (p->udp)
		(void)pp_prefault_kernel(m + rx_len, tx_len);
	uint8_t **rs = slots_of(p->map, nrx, frx, krx, brx);
	uint8_t **ts = slots_of(p->map + rx_len, ntx, ftx, ktx, btx);
	if (!rs || !ts || pp_pkt_rx_init(&p->rx, rs, nrx, frx) ||
	    pp_pkt_tx_init(&p->tx, ts, ntx, ftx, cap)) {
		if (!p->rx.slot)
			free(rs);
		if (!p->tx.slot)
			free(ts);
		return -ENOMEM;
	}
	if (p->udp && (pp_pkt_tx_set_room(&p->tx, room, udp_hdr, p->udp) ||
		       pp_pkt_rx_set_split(&p->rx, PP_PKT_SEGS_MAX, udp_split, p->udp)))
		return -ENOMEM;
	/* Room in the socket's send buffer for a whole ring in flight. */
	int sndbuf = (int)(ntx * (ftx + 1024u));
	if (setsockopt(p->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
		(void)setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));

	struct sockaddr_ll sll = {.sll_family = AF_PACKET,
				  .sll_protocol = htons(p->udp ? ETH_P_ALL : PP_ETH_TYPE_PP),
				  .sll_ifindex = ifindex};
	if (bind(p->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		int e = errno;
		pp_err("packet:%s: bind: %s", p->iface, strerror(e));
		return e == ENODEV ? -ENODEV : -EIO;
	}
	struct tpacket_stats st;
	socklen_t sl = sizeof(st);
	(void)getsockopt(p->fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl); /* zero them */
	pp_debug("packet:%s: MTU %u; RX %u slots of %u bytes, %u per %u-byte block; TX %u of %u, "
		 "%u per %u; %zu bytes mapped",
		 p->iface, p->info.mtu, nrx, frx, krx, brx, ntx, ftx, ktx, btx, p->map_len);
	return 0;
}

static int packet_port_open(struct pp_port **port, const char *dev, const struct pp_port_conf *conf)
{
	/* IFACE[,OPTIONS] */
	const char *comma = strchr(dev, ',');
	size_t ilen = comma ? (size_t)(comma - dev) : strlen(dev);
	char iface[IF_NAMESIZE + 1];
	snprintf(iface, sizeof(iface), "%.*s", (int)(ilen < IF_NAMESIZE ? ilen : IF_NAMESIZE), dev);
	if (!iface[0]) {
		pp_err("packet: no interface named (use packet:IFACE, e.g. packet:pp0)");
		return -EINVAL;
	}
	if (ilen >= IF_NAMESIZE) {
		pp_err("packet:%s: interface name too long", iface);
		return -EINVAL;
	}
	struct packet_port *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fd = -1;
	memcpy(p->iface, iface, ilen + 1); /* ilen < IF_NAMESIZE, checked above */
	int ifindex = 0, up = 0;
	int rc = pp_iface_query(iface, &p->info, &ifindex, &up);
	if (rc == -ENODEV) {
		pp_err("packet:%s: no such interface (see `ip link`; inside a namespace run under "
		       "`ip netns exec`)",
		       iface);
		goto fail;
	}
	if (rc == -EPROTOTYPE) {
		pp_err("packet:%s: not an Ethernet interface", iface);
		rc = -ENODEV;
		goto fail;
	}
	if (rc) {
		pp_err("packet:%s: cannot query the interface: %s", iface, strerror(-rc));
		rc = -EIO;
		goto fail;
	}
	if (!up) {
		pp_err("packet:%s: interface is down (ip link set %s up)", iface, iface);
		rc = -ENETDOWN;
		goto fail;
	}
	if (p->info.mtu < PACKET_MIN_MTU) {
		pp_err("packet:%s: MTU %u is too small: the port needs at least %d (ip link set %s "
		       "mtu 1500)",
		       iface, p->info.mtu, PACKET_MIN_MTU, iface);
		rc = -EMSGSIZE;
		goto fail;
	}
	if (comma && (rc = pp_udp_raw_open(&p->udp, "packet", iface, comma + 1, p->info.mac, 0)))
		goto fail;
	if (p->udp && p->info.mtu < PACKET_MIN_MTU + PP_UDP_OUTER_HLEN) {
		pp_err("packet:%s: MTU %u is too small for frame=udp", iface, p->info.mtu);
		rc = -EMSGSIZE;
		goto fail;
	}
	/* Protocol 0: nothing comes in before the rings are set and bound. */
	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (p->fd < 0) {
		int e = errno;
		if (e == EPERM || e == EACCES) {
			/* A warning: the caller may go on without it (udp_fallback),
			 * else it says the open failed. */
			pp_warn(
			    "packet:%s: permission denied: an AF_PACKET socket needs CAP_NET_RAW "
			    "(run as root, or setcap cap_net_raw+ep on the program)",
			    iface);
			rc = -EPERM;
		} else {
			pp_err("packet:%s: cannot open an AF_PACKET socket: %s", iface,
			       strerror(e));
			rc = e == EAFNOSUPPORT ? -ENOTSUP : -EIO;
		}
		goto fail;
	}
	if ((rc = setup(p, ifindex, conf)))
		goto fail;
	p->info.nb_queues = 1;
	p->info.buf_cap = p->tx.cap;
	if (p->udp) {
		memcpy(p->info.mac, pp_udp_raw_mac(p->udp), 6);
		p->info.mtu = (uint16_t)(p->tx.cap - PP_ETH_HLEN);
		pp_info("%s: mtu %u", pp_udp_raw_name(p->udp), p->info.mtu);
	}
	snprintf(p->info.driver, sizeof(p->info.driver), "packet");
	if (conf->nb_queues > 1)
		pp_info("packet:%s: one queue pair only (%u asked)", iface, conf->nb_queues);
	*port = &p->base;
	return 0;
fail:
	packet_port_close(&p->base);
	return rc;
}

static int packet_port_info(struct pp_port *port, struct pp_port_info *info)
{
	struct packet_port *p = to_pkt(port);
	struct pp_port_info now = p->info;
	if (pp_iface_query(p->iface, &now, NULL, NULL) == 0) { /* the link may have changed */
		p->info.link_up = now.link_up;
		p->info.speed_mbps = now.speed_mbps;
	}
	*info = p->info;
	return 0;
}

static int packet_port_stats(struct pp_port *port, struct pp_port_stats *stats)
{
	struct packet_port *p = to_pkt(port);
	struct tpacket_stats st;
	socklen_t sl = sizeof(st);
	if (getsockopt(p->fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl) == 0)
		p->kdrops += st.tp_drops; /* reading resets them */
	memset(stats, 0, sizeof(*stats));
	stats->rx_frames = p->rx.frames;
	stats->rx_bytes = p->rx.bytes;
	stats->tx_frames = p->tx.frames;
	stats->tx_bytes = p->tx.bytes;
	stats->rx_dropped = p->rx.dropped + p->kdrops;
	stats->tx_failed = p->tx.failed;
	stats->alloc_failed = p->tx.alloc_failed;
	if (p->udp)
		pp_udp_raw_stats(p->udp, stats);
	return 0;
}

/* Have the kernel send every frame marked: one system call for a burst. */
static void kick(struct packet_port *p)
{
	if (sendto(p->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0)
		p->kicks_failed++;
	/* Full (no send buffer) or down: what is left goes at the next call. */
	p->kick_pending = pp_pkt_tx_waiting(&p->tx);
}

static unsigned packet_port_alloc(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	struct packet_port *p = to_pkt(port);
	if (pp_unlikely(p->kick_pending))
		kick(p);
	return pp_pkt_tx_alloc(&p->tx, bufs, n);
}

static void packet_port_free(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	struct packet_port *p = to_pkt(port);
	pp_pkt_free(&p->rx, &p->tx, bufs, n);
}

static unsigned packet_port_rx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs,
				     unsigned n)
{
	struct packet_port *p = to_pkt(port);
	if (pp_unlikely(queue))
		return 0;
	if (pp_unlikely(p->kick_pending))
		kick(p);
	return pp_pkt_rx_take(&p->rx, bufs, n);
}

/* frame=udp: each part of the burst through the ring or the socket, in
 * order (the ring's frames are kicked before the socket sends). */
static unsigned udp_tx_burst(struct packet_port *p, struct pp_buf **bufs, unsigned n)
{
	unsigned i = 0, pending = 0;
	while (i < n) {
		unsigned k, taken, marked;
		enum pp_udp_raw_way way = pp_udp_raw_route(p->udp, &bufs[i], n - i, p->tx.cap, &k);
		if (way == PP_UDP_RAW_DROP) {
			pp_pkt_free(&p->rx, &p->tx, &bufs[i++], 1);
			continue;
		}
		if (way == PP_UDP_RAW_OUT) {
			taken = pp_pkt_tx_submit(&p->tx, &p->rx, &bufs[i], k, &marked);
			pending += marked;
			i += taken;
			if (taken < k)
				break;
			continue;
		}
		if (pending || p->kick_pending) {
			kick(p);
			pending = 0;
		}
		taken = pp_udp_raw_send(p->udp, &bufs[i], k);
		if (!taken)
			break;
		pp_pkt_free(&p->rx, &p->tx, &bufs[i], taken);
		i += taken;
	}
	if (pending || p->kick_pending)
		kick(p);
	return i;
}

static unsigned packet_port_tx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs,
				     unsigned n)
{
	struct packet_port *p = to_pkt(port);
	if (pp_unlikely(queue))
		return 0;
	if (p->udp)
		return udp_tx_burst(p, bufs, n);
	unsigned marked;
	unsigned taken = pp_pkt_tx_submit(&p->tx, &p->rx, bufs, n, &marked);
	if (marked || p->kick_pending)
		kick(p);
	return taken;
}

/* The socket: readable while the RX ring's newest slot is the user's. */
static int packet_port_wait_fd(struct pp_port *port)
{
	return to_pkt(port)->fd;
}

const struct pp_port_ops pp_port_ops_packet = {
    .name = "packet",
    .open = packet_port_open,
    .close = packet_port_close,
    .info = packet_port_info,
    .stats = packet_port_stats,
    .alloc = packet_port_alloc,
    .free = packet_port_free,
    .rx_burst = packet_port_rx_burst,
    .tx_burst = packet_port_tx_burst,
    .wait_fd = packet_port_wait_fd,
};
