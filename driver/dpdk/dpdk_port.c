/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPDK backend: any ethdev (net_af_xdp, net_af_packet, net_memif,
 * net_pcap, net_ring, PCI NICs) behind the port ops table.
 *
 * EAL starts once per process (dpdk_eal.c); each port's device is then
 * hot-plugged with rte_dev_probe, so a bad device string fails that one open
 * and the process carries on. One RX/TX queue pair per engine core, as many
 * as the PMD allows; the mempool is sized from the queue depths.
 *
 * struct pp_buf lives in the mbuf's private area, so a burst converts
 * pointers and nothing is allocated per frame. Large payloads can go out
 * without a copy: pp_port_attach_ext chains a second mbuf whose data is the
 * caller's registered memory (rte_pktmbuf_attach_extbuf), with its shared
 * info in that mbuf's own private area.
 *
 * With a framing word "frame=udp,..." the port carries the udp: port's wire
 * format (udp/udp_raw.h, as packet:'s frame=udp does): its address is one of
 * its kernel interface's, a frame to a peer whose next hop is known goes
 * out behind Ethernet, IPv4 and UDP headers written into the mbuf's
 * headroom, the rest (group frames, peers not heard from yet) through the
 * kernel's UDP socket; received datagrams are checked and their outer
 * headers skipped in place. One queue pair; no GSO (a DPDK port cannot
 * take a GSO message whole) and no chained external buffers.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memory.h>
#include <rte_mempool.h>

#include "dpdk_eal.h"
#include "dpdk_xdp.h"
#include "pp_bytes.h"
#include "pp_log.h"
#include "pp_port.h"
#include "pp_prefault.h"
#include "udp/udp_frame.h"
#include "udp/udp_raw.h"

#define CHUNK	       64   /* mbuf pointers converted per step */
#define RX_DEPTH       1024 /* default descriptors per RX queue */
#define TX_DEPTH       1024 /* default descriptors per TX queue */
#define POOL_CACHE     256  /* per-lcore mempool cache */
#define POOL_SLACK     4096 /* buffers the engine may hold beyond the rings */
#define LINK_WAIT_MS   3000 /* how long start waits for the link */
#define MAX_DPDK_PORTS 64   /* ports open at once */

/* What each mbuf's private area holds. */
struct dpdk_buf {
	struct pp_buf pb;			/* what the engine sees */
	struct rte_mbuf_ext_shared_info shinfo; /* for an attached external buffer */
	void (*done)(void *arg);		/* called when the NIC is done with it */
	void *done_arg;				/* argument of done */
};

struct dpdk_port {
	struct pp_port base;		   /* must be first */
	uint16_t port_id;		   /* ethdev port */
	int hotplugged;			   /* we probed the device, so we remove it */
	struct rte_device *device;	   /* the device behind port_id */
	struct rte_mempool *pool;	   /* frame buffers */
	struct rte_mempool *ext_pool;	   /* data-less mbufs for external buffers */
	int multi_seg;			   /* TX takes chained mbufs */
	uint32_t frame_cap;		   /* af_packet: largest frame its rings carry */
	struct pp_port_info info;	   /* filled at open */
	atomic_uint_fast64_t alloc_failed; /* allocations that found the pool empty */
	struct pp_udp_raw *udp;		   /* frame=udp, else NULL */
	unsigned warned_gso;		   /* frame=udp: datagrams cut to the frame seen */
};

static struct dpdk_port *open_ports[MAX_DPDK_PORTS];

static inline struct dpdk_buf *to_dbuf(struct rte_mbuf *m)
{
	return (struct dpdk_buf *)((char *)m + sizeof(struct rte_mbuf));
}

static inline struct rte_mbuf *to_mbuf(struct pp_buf *b)
{
	return (struct rte_mbuf *)((char *)b - sizeof(struct rte_mbuf));
}

static inline struct pp_buf *to_pp(struct rte_mbuf *m)
{
	struct pp_buf *b = &to_dbuf(m)->pb;
	b->data = rte_pktmbuf_mtod(m, uint8_t *);
	b->len = m->data_len;
	return b;
}

/* Mempool object constructor helper: set the parts of pp_buf that never change. */
static void init_priv(struct rte_mempool *mp, void *arg, void *obj, unsigned idx)
{
	(void)mp;
	(void)arg;
	(void)idx;
	struct rte_mbuf *m = obj;
	struct dpdk_buf *d = to_dbuf(m);
	memset(d, 0, sizeof(*d));
	d->pb.priv = m;
	d->pb.cap = (uint32_t)(m->buf_len - RTE_PKTMBUF_HEADROOM);
}

static void sleep_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
}

static void dpdk_port_close(struct pp_port *port)
{
	struct dpdk_port *p = (struct dpdk_port *)port;
	if (p->device) {
		rte_eth_dev_stop(p->port_id);
		if (p->hotplugged) {
			if (rte_dev_remove(p->device) < 0)
				rte_eth_dev_close(p->port_id);
		} else {
			rte_eth_dev_close(p->port_id);
		}
		if (p->port_id < MAX_DPDK_PORTS)
			open_ports[p->port_id] = NULL;
	}
	rte_mempool_free(p->pool);
	rte_mempool_free(p->ext_pool);
	pp_udp_raw_close(p->udp);
	free(p);
}

/* Probe the device of devargs (or find it probed already) and return its port.
 * Errors: -ENODEV unknown driver or device, -EBUSY already open here. */
static int find_port(const char *devargs, uint16_t *port_id, int *hotplugged)
{
	struct rte_devargs da;
	memset(&da, 0, sizeof(da));
	if (rte_devargs_parse(&da, devargs) < 0) {
		pp_err("dpdk: no driver or bus takes device '%s' (known vdevs: net_af_xdp, "
		       "net_af_packet, net_memif, net_pcap, net_ring; PCI as 0000:01:00.0)",
		       devargs);
		return -ENODEV;
	}
	char name[RTE_DEV_NAME_MAX_LEN];
	snprintf(name, sizeof(name), "%s", da.name);
	rte_devargs_reset(&da);

	uint16_t pid;
	int rc = 0;
	*hotplugged = 0;
	if (rte_eth_dev_get_port_by_name(name, &pid) != 0) {
		rc = rte_dev_probe(devargs);
		if (rc < 0 && rc != -EEXIST && geteuid() != 0) {
			pp_err("dpdk: cannot start device '%s': %s; not running as root, so most "
			       "likely missing privileges (CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF, "
			       "CAP_IPC_LOCK)",
			       devargs, rte_strerror(-rc));
			return -EPERM;
		}
		if (rc < 0 && rc != -EEXIST) {
			pp_err("dpdk: cannot start device '%s': %s (a missing interface, a bad "
			       "argument, or missing privileges; the PMD log above says which)",
			       devargs, rte_strerror(-rc));
			return -ENODEV;
		}
		*hotplugged = rc == 0;
		if (rte_eth_dev_get_port_by_name(name, &pid) != 0) {
			pp_err("dpdk: device '%s' started but has no ethdev port", name);
			return -ENODEV;
		}
	}
	if (pid < MAX_DPDK_PORTS && open_ports[pid]) {
		pp_err("dpdk: port '%s' is already open in this process", name);
		return -EBUSY;
	}
	*port_id = pid;
	return 0;
}

/* MTU of a kernel interface, 0 when unknown. */
static uint32_t iface_mtu(const char *name)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	int rc = ioctl(fd, SIOCGIFMTU, &ifr);
	close(fd);
	return rc == 0 && ifr.ifr_mtu > 0 ? (uint32_t)ifr.ifr_mtu : 0;
}

/* The value of key in "drv,key=value,..." into out; 0 when absent. */
static int devarg_get(const char *devargs, const char *key, char *out, size_t cap)
{
	size_t klen = strlen(key);
	for (const char *c = strchr(devargs, ','); c; c = strchr(c + 1, ',')) {
		if (strncmp(c + 1, key, klen) == 0 && c[1 + klen] == '=') {
			const char *v = c + 2 + klen;
			size_t n = strcspn(v, ",");
			if (n >= cap)
				n = cap - 1;
			memcpy(out, v, n);
			out[n] = 0;
			return 1;
		}
	}
	return 0;
}

/* TPACKET_V2 ring frame = 32-byte header area + frame data (DPDK's
 * af_packet: data_size = framesz - (TPACKET2_HDRLEN - sockaddr_ll)). */
#define AF_PACKET_FRAME_HDR 32

/* af_packet's ring frames default to 2 KiB, too small for a jumbo veth: size
 * them for the interface MTU unless the user chose. Returns the largest frame
 * the rings carry (Ethernet header included), 0 for other devices. */
static uint32_t af_packet_tune(struct pp_dpdk_args *a)
{
	if (strncmp(a->devargs, "net_af_packet", 13) != 0)
		return 0;
	char v[64], bsz[32];
	uint32_t framesz = 2048;
	if (devarg_get(a->devargs, "framesz", v, sizeof(v))) {
		framesz = (uint32_t)strtoul(v, NULL, 0);
	} else if (devarg_get(a->devargs, "iface", v, sizeof(v)) &&
		   !devarg_get(a->devargs, "blocksz", bsz, sizeof(bsz))) {
		/* One frame per block, the block a whole number of pages
		 * (the PMD indexes frames as if blocks held them back to back):
		 * 12 KiB for MTU 9000, not 16, since every mbuf holds one. */
		uint32_t need = iface_mtu(v) + RTE_ETHER_HDR_LEN + AF_PACKET_FRAME_HDR;
		if (need > framesz && need <= 65536) {
			long pg = sysconf(_SC_PAGESIZE);
			framesz = (need + (uint32_t)pg - 1) & ~((uint32_t)pg - 1);
			size_t n = strlen(a->devargs);
			snprintf(a->devargs + n, sizeof(a->devargs) - n, ",framesz=%u,blocksz=%u",
				 framesz, framesz);
		}
	}
	return framesz > AF_PACKET_FRAME_HDR ? framesz - AF_PACKET_FRAME_HDR : 0;
}

/* net_af_packet maps the kernel's RX and TX rings itself and gives no
 * handle to them: they are this process's shared writable mappings of a
 * socket. Touched once here, or the first few hundred frames of a job each
 * meet a page for the first time (pp_prefault.h: 5 us a page under some
 * hypervisors; 8 B one way 31 us instead of 6.3 over the first 300 round
 * trips). */
static void prefault_socket_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perm[5];
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perm) == 3 && strcmp(perm, "rw-s") == 0 &&
		    strstr(line, " socket:["))
			pp_prefault((void *)lo, hi - lo);
	}
	fclose(f);
}

/* The MTU to run at. A kernel-backed port (af_packet, af_xdp) carries what
 * its interface carries, so a jumbo veth gives jumbo frames and far fewer of
 * them per message; the device's own limits cap it: af_packet's ring frame
 * (frame_cap; its ethdev reports a 1518-byte limit it does not have),
 * af_xdp's UMEM chunk. Other devices run at the Ethernet default. */
static uint16_t port_mtu(const struct rte_eth_dev_info *di, uint32_t frame_cap)
{
	uint32_t mtu = RTE_ETHER_MTU;
	char name[IF_NAMESIZE];
	uint32_t kmtu = di->if_index && if_indextoname(di->if_index, name) ? iface_mtu(name) : 0;
	if (kmtu)
		mtu = kmtu;
	if (mtu > di->max_mtu)
		mtu = di->max_mtu;
	uint32_t limit = frame_cap ? frame_cap - RTE_ETHER_HDR_LEN
				   : di->max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN;
	if (di->max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN && mtu > limit)
		mtu = limit;
	if (mtu > UINT16_MAX - 64) /* payload_len is 16 bits */
		mtu = UINT16_MAX - 64;
	if (mtu < di->min_mtu)
		mtu = di->min_mtu;
	return (uint16_t)mtu;
}

/* af_xdp: what a process that died with this port open left behind is
 * cleared before the PMD binds (dpdk_xdp.c). */
static int af_xdp_prepare(const char *devargs)
{
	char iface[IF_NAMESIZE], v[32];
	if (!devarg_get(devargs, "iface", iface, sizeof(iface)))
		return 0;
	unsigned start = 0, count = 1; /* the PMD's defaults */
	if (devarg_get(devargs, "start_queue", v, sizeof(v)))
		start = (unsigned)strtoul(v, NULL, 0);
	if (devarg_get(devargs, "queue_count", v, sizeof(v)))
		count = (unsigned)strtoul(v, NULL, 0);
	return pp_dpdk_xdp_prepare(iface, start, count);
}

/* Configure queues, mempools and start the port.
 * Errors: -ENOMEM, -EBUSY (af_xdp: a queue is taken; logged), -EIO (the PMD
 * refused; logged). */

static int setup(struct dpdk_port *p, const char *devargs, const struct pp_port_conf *conf)
{
	uint16_t pid = p->port_id;
	struct rte_eth_dev_info di;
	int rc = rte_eth_dev_info_get(pid, &di);
	if (rc)
		return rc < 0 ? rc : -EIO;
	p->device = di.device;
	if (strcmp(di.driver_name, "net_af_xdp") == 0 && (rc = af_xdp_prepare(devargs)))
		return rc;
	uint16_t nq = conf->nb_queues;
	if (nq > di.max_rx_queues)
		nq = di.max_rx_queues;
	if (nq > di.max_tx_queues)
		nq = di.max_tx_queues;
	if (nq < conf->nb_queues)
		pp_info("dpdk: %s allows %u queue pairs, %u asked", di.driver_name, nq,
			conf->nb_queues);
	if (nq == 0)
		return -EIO;
	uint16_t mtu = port_mtu(&di, p->frame_cap);
	uint32_t room = (uint32_t)mtu + PP_ETH_HLEN + 4;
	if (room < RTE_MBUF_DEFAULT_DATAROOM)
		room = RTE_MBUF_DEFAULT_DATAROOM;
	/* af_packet wants mbufs that hold its whole ring frame. */
	if (p->frame_cap > room)
		room = p->frame_cap;
	/* Jumbo buffers: a quarter as many (a window of 64 frames needs far
	 * fewer), so eight ranks of a node fit the test bed's hugepages. */
	int jumbo = room > 4 * RTE_MBUF_DEFAULT_DATAROOM;
	uint16_t nrx = conf->rx_depth ? conf->rx_depth : jumbo ? RX_DEPTH / 2 : RX_DEPTH;
	uint16_t ntx = conf->tx_depth ? conf->tx_depth : jumbo ? TX_DEPTH / 2 : TX_DEPTH;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nrx, &ntx);
	if (rc < 0)
		return -EIO;
	int socket = rte_eth_dev_socket_id(pid);
	if (socket < 0)
		socket = SOCKET_ID_ANY;
	unsigned slack = jumbo ? POOL_SLACK / 4 : POOL_SLACK;
	unsigned n = (unsigned)nq * (nrx + ntx) + (unsigned)nq * POOL_CACHE + slack;
	unsigned pool_n = 1;
	while (pool_n < n)
		pool_n <<= 1;
	pool_n -= 1; /* a power of two minus one suits the ring underneath */
	uint16_t priv = (uint16_t)RTE_ALIGN(sizeof(struct dpdk_buf), RTE_MBUF_PRIV_ALIGN);
	char name[RTE_MEMPOOL_NAMESIZE];
	snprintf(name, sizeof(name), "pp_mp%u", pid);
	p->pool = rte_pktmbuf_pool_create(name, pool_n, POOL_CACHE, priv,
					  (uint16_t)(room + RTE_PKTMBUF_HEADROOM), socket);
	if (!p->pool) {
		pp_err("dpdk: cannot create a pool of %u buffers: %s", pool_n,
		       rte_strerror(rte_errno));
		return -ENOMEM;
	}
	rte_mempool_obj_iter(p->pool, init_priv, NULL);
	snprintf(name, sizeof(name), "pp_ext%u", pid);
	p->ext_pool = rte_pktmbuf_pool_create(name, (unsigned)nq * ntx + POOL_SLACK - 1, POOL_CACHE,
					      priv, 0, socket);
	if (!p->ext_pool) {
		pp_err("dpdk: cannot create the external-buffer pool: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	rte_mempool_obj_iter(p->ext_pool, init_priv, NULL);

	struct rte_eth_conf ec;
	memset(&ec, 0, sizeof(ec));
	/* What ethdev validates; af_packet's real limit is its ring frame. */
	uint32_t ethdev_max = di.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN;
	ec.rxmode.mtu = mtu < ethdev_max ? mtu : ethdev_max;
	/* net_pcap linearises chained mbufs itself without saying so. */
	p->multi_seg = (di.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0 ||
		       strcmp(di.driver_name, "net_pcap") == 0;
	pp_debug(
	    "dpdk: %s: %u/%u queues, TX offloads 0x%llx, MTU %u (max %u, max frame %u, ifindex %u)",
	    di.driver_name, di.max_rx_queues, di.max_tx_queues,
	    (unsigned long long)di.tx_offload_capa, mtu, di.max_mtu, di.max_rx_pktlen, di.if_index);
	if (di.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	rc = rte_eth_dev_configure(pid, nq, nq, &ec);
	if (rc < 0) {
		pp_err("dpdk: %s: configure with %u queues failed: %s", di.driver_name, nq,
		       rte_strerror(-rc));
		return -EIO;
	}
	struct rte_eth_txconf txc = di.default_txconf;
	txc.offloads = ec.txmode.offloads;
	for (uint16_t q = 0; q < nq; q++) {
		rc = rte_eth_rx_queue_setup(pid, q, nrx, (unsigned)socket, NULL, p->pool);
		if (rc >= 0)
			rc = rte_eth_tx_queue_setup(pid, q, ntx, (unsigned)socket, &txc);
		if (rc < 0) {
			pp_err("dpdk: %s: queue %u setup failed: %s%s", di.driver_name, q,
			       rte_strerror(-rc),
			       strcmp(di.driver_name, "net_af_xdp") == 0 && mtu > RTE_ETHER_MTU
				   ? " (AF_XDP on veth needs an interface MTU of at most 1500 here)"
				   : "");
			return rc == -ENOMEM ? -ENOMEM : -EIO;
		}
	}
	rc = rte_eth_dev_start(pid);
	if (rc < 0) {
		pp_err("dpdk: %s: start failed: %s", di.driver_name, rte_strerror(-rc));
		return -EIO;
	}
	if (strcmp(di.driver_name, "net_af_packet") == 0)
		prefault_socket_maps();

	struct rte_eth_link link;
	memset(&link, 0, sizeof(link));
	for (int waited = 0;; waited += 100) {
		if (rte_eth_link_get_nowait(pid, &link) < 0 || link.link_status ||
		    waited >= LINK_WAIT_MS)
			break;
		sleep_ms(100);
	}
	if (!link.link_status)
		pp_warn("dpdk: %s: link is down", di.driver_name);

	struct rte_ether_addr mac;
	rte_eth_macaddr_get(pid, &mac);
	memcpy(p->info.mac, mac.addr_bytes, 6);
	p->info.mtu = mtu;
	p->info.nb_queues = nq;
	p->info.buf_cap = room;
	p->info.link_up = link.link_status ? 1 : 0;
	p->info.speed_mbps =
	    link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : (uint32_t)link.link_speed;
	snprintf(p->info.driver, sizeof(p->info.driver), "%s", di.driver_name);
	return 0;
}

/* The framing word: frame=udp on the kernel interface behind the port
 * (iface=, or the ethdev's ifindex), whose address it takes. Errors:
 * -EINVAL, -ENODEV (no kernel interface, or it has no IPv4 address),
 * -EMSGSIZE, -EADDRINUSE, -ENOMEM. */
static int framing(struct dpdk_port *p, const struct pp_dpdk_args *a)
{
	char ifn[IF_NAMESIZE] = "";
	struct rte_eth_dev_info di;
	if (!devarg_get(a->devargs, "iface", ifn, sizeof(ifn)) &&
	    (rte_eth_dev_info_get(p->port_id, &di) != 0 || !di.if_index ||
	     !if_indextoname(di.if_index, ifn))) {
		pp_err("dpdk: %s: frame=udp needs a kernel interface behind the port (af_packet, "
		       "or a NIC the kernel shares): its address is the port's, and the kernel "
		       "resolves next hops",
		       a->devargs);
		return -ENODEV;
	}
	if (strcmp(p->info.driver, "net_af_xdp") == 0) {
		/* Its XDP program hands the queue's every frame to the port, the
		 * kernel's ARP replies included: the socket's next hops never
		 * resolve (on the test bed 1 job in 2 to 4 lost its discovery, as
		 * the ranks' ARP crossed before or after their programs loaded). */
		pp_err("dpdk: %s: frame=udp does not work on net_af_xdp: its XDP program takes "
		       "the interface's ARP from the kernel, which resolves next hops; use "
		       "net_af_packet, or the packet: port",
		       a->devargs);
		return -EINVAL;
	}
	int rc = pp_udp_raw_open(&p->udp, "dpdk", ifn, a->frame, p->info.mac, 1);
	if (rc || !p->udp)
		return rc;
	if (p->info.mtu < 576 + PP_UDP_OUTER_HLEN) {
		pp_err("%s: MTU %u is too small for frame=udp", pp_udp_raw_name(p->udp),
		       p->info.mtu);
		return -EMSGSIZE;
	}
	p->info.mtu = (uint16_t)(p->info.mtu - PP_UDP_OUTER_HLEN);
	memcpy(p->info.mac, pp_udp_raw_mac(p->udp), 6);
	pp_info("%s: mtu %u", pp_udp_raw_name(p->udp), p->info.mtu);
	return 0;
}

/* Errors: -EINVAL bad string, -ENODEV, -EBUSY, -EPERM, -ENOMEM, -EIO. */
static int dpdk_port_open(struct pp_port **port, const char *dev, const struct pp_port_conf *conf)
{
	struct pp_dpdk_args *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	int rc = pp_dpdk_args_parse(dev, a);
	if (!rc)
		rc = pp_dpdk_eal_init(a);
	struct dpdk_port *p = NULL;
	if (rc)
		goto out;
	p = calloc(1, sizeof(*p));
	if (!p) {
		rc = -ENOMEM;
		goto out;
	}
	p->frame_cap = af_packet_tune(a);
	struct pp_port_conf one = *conf;
	if (a->frame[0] && conf->nb_queues > 1) {
		pp_info("dpdk: %s: one queue pair with a framing word (%u asked)", a->devargs,
			conf->nb_queues);
		one.nb_queues = 1;
	}
	rc = find_port(a->devargs, &p->port_id, &p->hotplugged);
	if (rc) {
		free(p);
		p = NULL;
		goto out;
	}
	rc = setup(p, a->devargs, &one);
	if (!rc && a->frame[0])
		rc = framing(p, a);
	if (rc) {
		if (!p->device) { /* info failed: nothing to stop */
			struct rte_eth_dev_info di;
			if (rte_eth_dev_info_get(p->port_id, &di) == 0)
				p->device = di.device;
		}
		dpdk_port_close(&p->base);
		p = NULL;
		goto out;
	}
	if (p->port_id < MAX_DPDK_PORTS)
		open_ports[p->port_id] = p;
	*port = &p->base;
out:
	free(a);
	return rc;
}

static int dpdk_port_info(struct pp_port *port, struct pp_port_info *info)
{
	struct dpdk_port *p = (struct dpdk_port *)port;
	struct rte_eth_link link;
	*info = p->info;
	if (rte_eth_link_get_nowait(p->port_id, &link) == 0)
		info->link_up = link.link_status ? 1 : 0;
	return 0;
}

static int dpdk_port_stats(struct pp_port *port, struct pp_port_stats *stats)
{
	struct dpdk_port *p = (struct dpdk_port *)port;
	struct rte_eth_stats es;
	int rc = rte_eth_stats_get(p->port_id, &es);
	if (rc)
		return rc < 0 ? rc : -EIO;
	memset(stats, 0, sizeof(*stats));
	stats->rx_frames = es.ipackets;
	stats->rx_bytes = es.ibytes;
	stats->tx_frames = es.opackets;
	stats->tx_bytes = es.obytes;
	stats->rx_dropped = es.imissed + es.ierrors + es.rx_nombuf;
	stats->tx_failed = es.oerrors;
	stats->alloc_failed = atomic_load_explicit(&p->alloc_failed, memory_order_relaxed);
	if (p->udp)
		pp_udp_raw_stats(p->udp, stats);
	return 0;
}

static unsigned dpdk_port_alloc(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	struct dpdk_port *p = (struct dpdk_port *)port;
	struct rte_mbuf *m[CHUNK];
	unsigned got = 0;
	while (got < n) {
		unsigned k = n - got < CHUNK ? n - got : CHUNK;
		if (rte_pktmbuf_alloc_bulk(p->pool, m, k) != 0) {
			/* less than k left: take them one by one */
			k = 0;
			while (got + k < n && k < CHUNK && (m[k] = rte_pktmbuf_alloc(p->pool)))
				k++;
			if (!k) {
				atomic_fetch_add_explicit(&p->alloc_failed, 1,
							  memory_order_relaxed);
				break;
			}
		}
		for (unsigned i = 0; i < k; i++) {
			struct pp_buf *b = to_pp(m[i]);
			b->ts_ns = 0;
			bufs[got + i] = b;
		}
		got += k;
	}
	return got;
}

static void dpdk_port_free(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	(void)port;
	struct rte_mbuf *m[CHUNK];
	for (unsigned done = 0; done < n;) {
		unsigned k = n - done < CHUNK ? n - done : CHUNK;
		for (unsigned i = 0; i < k; i++)
			m[i] = to_mbuf(bufs[done + i]);
		rte_pktmbuf_free_bulk(m, k);
		done += k;
	}
}

/* frame=udp: b's frame inside its datagram, or 0 (not ours, or refused:
 * counted). The outer headers stay in the mbuf's data, before b->data. */
static int udp_inner(struct dpdk_port *p, struct pp_buf *b)
{
	uint8_t *f;
	uint32_t len;
	if (!pp_udp_raw_ours(p->udp, b->data, b->len))
		return 0;
	if (!pp_udp_raw_split(p->udp, b->data, b->len, 0, &f, &len, 1)) {
		/* IPv4's total length beyond the frame: cut to the device's
		 * frame, a GSO message (or GRO's) that a DPDK port cannot take */
		uint32_t tot = pp_get_be16(b->data + PP_ETH_HLEN + 2);
		if (tot > b->len - PP_ETH_HLEN && !p->warned_gso++)
			pp_warn("%s: a datagram of %u bytes came in cut to %u: a peer sends GSO "
				"messages (give it gso=0) or the interface coalesces (ethtool -K "
				"IFACE gro off)",
				pp_udp_raw_name(p->udp), tot, b->len - PP_ETH_HLEN);
		return 0;
	}
	b->data = f;
	b->len = len;
	return 1;
}

static unsigned dpdk_port_rx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs,
				   unsigned n)
{
	struct dpdk_port *p = (struct dpdk_port *)port;
	struct rte_mbuf *m[CHUNK];
	unsigned got = 0;
	while (got < n) {
		uint16_t k = (uint16_t)(n - got < CHUNK ? n - got : CHUNK);
		uint16_t r = rte_eth_rx_burst(p->port_id, queue, m, k);
		for (uint16_t i = 0; i < r; i++) {
			if (unlikely(m[i]->nb_segs > 1)) {
				rte_pktmbuf_free(m[i]); /* larger than the MTU: never ours */
				continue;
			}
			struct pp_buf *b = to_pp(m[i]);
			if (p->udp && !udp_inner(p, b)) {
				rte_pktmbuf_free(m[i]);
				continue;
			}
			b->ts_ns = 0;
			bufs[got++] = b;
		}
		if (r < k)
			break;
	}
	return got;
}

/* frame=udp: each run of the burst through the device behind its outer
 * headers, or through the socket (udp/udp_raw.h), in order. */
static unsigned udp_tx_burst(struct dpdk_port *p, uint16_t queue, struct pp_buf **bufs, unsigned n)
{
	struct rte_mbuf *m[CHUNK];
	uint32_t cap = (uint32_t)p->info.mtu + PP_ETH_HLEN;
	unsigned i = 0;
	while (i < n) {
		unsigned k;
		enum pp_udp_raw_way way = pp_udp_raw_route(p->udp, &bufs[i], n - i, cap, &k);
		if (way == PP_UDP_RAW_SOCK) {
			unsigned taken = pp_udp_raw_send(p->udp, &bufs[i], k);
			if (!taken)
				break;
			dpdk_port_free(&p->base, &bufs[i], taken);
			i += taken;
			continue;
		}
		if (way == PP_UDP_RAW_DROP) { /* counted */
			dpdk_port_free(&p->base, &bufs[i++], 1);
			continue;
		}
		if (k > CHUNK)
			k = CHUNK;
		for (unsigned j = 0; j < k; j++) {
			struct pp_buf *b = bufs[i + j];
			struct rte_mbuf *mb = to_mbuf(b);
			if (b->data - (uint8_t *)mb->buf_addr < PP_UDP_OUTER_HLEN) {
				k = j; /* no headroom: dropped below when it comes first */
				break;
			}
			uint8_t *hdr = b->data - PP_UDP_OUTER_HLEN;
			pp_udp_raw_outer(p->udp, hdr, b->data, b->len);
			mb->data_off = (uint16_t)(hdr - (uint8_t *)mb->buf_addr);
			mb->data_len = (uint16_t)(b->len + PP_UDP_OUTER_HLEN);
			mb->pkt_len = mb->data_len;
			m[j] = mb;
		}
		if (!k) { /* the first has no headroom */
			dpdk_port_free(&p->base, &bufs[i++], 1);
			continue;
		}
		uint16_t s = rte_eth_tx_burst(p->port_id, queue, m, (uint16_t)k);
		i += s;
		if (s < k)
			break;
	}
	return i;
}

static unsigned dpdk_port_tx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs,
				   unsigned n)
{
	struct dpdk_port *p = (struct dpdk_port *)port;
	if (p->udp)
		return udp_tx_burst(p, queue, bufs, n);
	struct rte_mbuf *m[CHUNK];
	unsigned sent = 0;
	while (sent < n) {
		uint16_t k = (uint16_t)(n - sent < CHUNK ? n - sent : CHUNK);
		for (uint16_t i = 0; i < k; i++) {
			struct pp_buf *b = bufs[sent + i];
			struct rte_mbuf *mb = to_mbuf(b);
			mb->data_off = (uint16_t)(b->data - (uint8_t *)mb->buf_addr);
			mb->data_len = (uint16_t)b->len;
			mb->pkt_len = b->len + (mb->next ? mb->next->data_len : 0);
			m[i] = mb;
		}
		uint16_t s = rte_eth_tx_burst(p->port_id, queue, m, k);
		sent += s;
		if (s < k)
			break;
	}
	return sent;
}

static void ext_free_cb(void *addr, void *opaque)
{
	(void)addr;
	struct dpdk_buf *d = opaque;
	void (*done)(void *) = d->done;
	d->done = NULL;
	if (done)
		done(d->done_arg);
}

/* Errors: -ENOTSUP the PMD cannot send chained mbufs, -EINVAL, -EBUSY one
 * already attached, -EMSGSIZE over the MTU, -ENOMEM no data-less mbuf left. */
static int dpdk_port_attach_ext(struct pp_port *port, struct pp_buf *buf, void *addr, uint32_t len,
				void (*done)(void *arg), void *arg)
{
	struct dpdk_port *p = (struct dpdk_port *)port;
	if (!p->multi_seg || p->udp)
		return -ENOTSUP;
	if (!addr || !len || len > UINT16_MAX)
		return -EINVAL;
	struct rte_mbuf *head = to_mbuf(buf);
	if (head->next)
		return -EBUSY;
	if (buf->len + len > (uint32_t)p->info.mtu + PP_ETH_HLEN)
		return -EMSGSIZE;
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->ext_pool);
	if (!m) {
		atomic_fetch_add_explicit(&p->alloc_failed, 1, memory_order_relaxed);
		return -ENOMEM;
	}
	struct dpdk_buf *d = to_dbuf(m);
	d->done = done;
	d->done_arg = arg;
	d->shinfo.free_cb = ext_free_cb;
	d->shinfo.fcb_opaque = d;
	rte_mbuf_ext_refcnt_set(&d->shinfo, 1);
	rte_iova_t iova = rte_mem_virt2iova(addr);
	if (iova == RTE_BAD_IOVA)
		iova = (rte_iova_t)(uintptr_t)addr;
	rte_pktmbuf_attach_extbuf(m, addr, iova, (uint16_t)len, &d->shinfo);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	head->next = m;
	head->nb_segs = 2;
	return 0;
}

/* Errors: -EINVAL, -ENOMEM, -EEXIST overlapping a registered region. */
static int dpdk_port_mem_register(struct pp_port *port, void *addr, size_t len)
{
	struct dpdk_port *p = (struct dpdk_port *)port;
	if (!addr || !len)
		return -EINVAL;
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr & ~((uintptr_t)pg - 1);
	size_t l = RTE_ALIGN_CEIL((uintptr_t)addr + len - a, (size_t)pg);
	if (rte_extmem_register((void *)a, l, NULL, 0, (size_t)pg) < 0)
		return -rte_errno;
	/* Software PMDs have nothing to map; PCI ones need the IOMMU entry. */
	int rc = rte_dev_dma_map(p->device, (void *)a, rte_mem_virt2iova((void *)a), l);
	if (rc < 0 && rte_errno != ENOTSUP)
		pp_info("dpdk: DMA map of registered memory: %s", rte_strerror(rte_errno));
	return 0;
}

static int dpdk_port_mem_unregister(struct pp_port *port, void *addr, size_t len)
{
	struct dpdk_port *p = (struct dpdk_port *)port;
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr & ~((uintptr_t)pg - 1);
	size_t l = RTE_ALIGN_CEIL((uintptr_t)addr + len - a, (size_t)pg);
	rte_dev_dma_unmap(p->device, (void *)a, rte_mem_virt2iova((void *)a), l);
	return rte_extmem_unregister((void *)a, l) < 0 ? -rte_errno : 0;
}

const struct pp_port_ops pp_port_ops_dpdk = {
    .name = "dpdk",
    .open = dpdk_port_open,
    .close = dpdk_port_close,
    .info = dpdk_port_info,
    .stats = dpdk_port_stats,
    .alloc = dpdk_port_alloc,
    .free = dpdk_port_free,
    .rx_burst = dpdk_port_rx_burst,
    .tx_burst = dpdk_port_tx_burst,
    .attach_ext = dpdk_port_attach_ext,
    .mem_register = dpdk_port_mem_register,
    .mem_unregister = dpdk_port_mem_unregister,
};
