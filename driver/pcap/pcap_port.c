/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The libpcap backend ("pcap:IFACE"), for hosts without DPDK or hugepages.
 *
 * Live capture in immediate, non-blocking mode, inbound direction only, with
 * a BPF filter that keeps EtherType 0x88B5; pcap_inject sends. Frames live in
 * a pool of fixed slots allocated once at open, so the hot path allocates
 * nothing; libpcap's own ring forces one copy per received frame (the kernel
 * ring to the slot), which is why DPDK is the fast path.
 *
 * One queue pair only, used by one thread: the pool is a plain stack.
 */
#include <errno.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iface.h"
#include "bufpool.h"
#include "pp_log.h"
#include "pp_port.h"

#define POOL_DEFAULT	1024 /* slots when the queue depths ask for fewer */
#define PCAP_RING_BYTES (4u << 20)

struct pcap_port {
	struct pp_port base;	  /* must be first */
	pcap_t *pc;		  /* the live capture handle */
	struct pp_bufpool pool;	  /* its buffers (bufpool.h) */
	struct pp_port_info info; /* filled at open */
	struct pp_port_stats st;  /* counters kept by the burst calls */
};

/* Map a pcap_activate() result to a negative errno, logging why. */
static int activate_error(const char *iface, int status, pcap_t *pc)
{
	switch (status) {
	case PCAP_ERROR_NO_SUCH_DEVICE:
		pp_err("pcap:%s: no such interface (see `ip link`; inside a namespace run "
		       "under `ip netns exec`)",
		       iface);
		return -ENODEV;
	case PCAP_ERROR_PERM_DENIED:
		pp_warn("pcap:%s: permission denied (needs root or CAP_NET_RAW)", iface);
		return -EPERM;
	case PCAP_ERROR_IFACE_NOT_UP:
		pp_err("pcap:%s: interface is down (ip link set %s up)", iface, iface);
		return -ENETDOWN;
	default:
		pp_err("pcap:%s: %s", iface, pcap_geterr(pc));
		return -EIO;
	}
}

static void pcap_port_close(struct pp_port *port)
{
	struct pcap_port *p = (struct pcap_port *)port;
	if (p->pc)
		pcap_close(p->pc);
	pp_bufpool_fini(&p->pool);
	free(p);
}

/* Errors: -EINVAL empty iface, -ENODEV, -EPERM, -ENETDOWN, -ENOMEM, -EIO. */
static int pcap_port_open(struct pp_port **port, const char *iface, const struct pp_port_conf *conf)
{
	if (!iface[0]) {
		pp_err("pcap: no interface named (use pcap:IFACE, e.g. pcap:pp0)");
		return -EINVAL;
	}
	if (strlen(iface) >= IFNAMSIZ) {
		pp_err("pcap:%s: interface name too long", iface);
		return -EINVAL;
	}
	struct pcap_port *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	int rc = pp_iface_query(iface, &p->info, NULL, NULL);
	if (rc == -EPROTOTYPE) {
		pp_err("pcap:%s: not an Ethernet interface", iface);
		rc = -ENODEV;
	}
	if (rc) {
		if (rc == -ENODEV)
			pp_err("pcap:%s: no such interface (see `ip link`; inside a namespace "
			       "run under `ip netns exec`)",
			       iface);
		else
			pp_err("pcap:%s: cannot query the interface: %s", iface, strerror(-rc));
		free(p);
		return rc;
	}
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	p->pc = pcap_create(iface, errbuf);
	if (!p->pc) {
		pp_err("pcap:%s: %s", iface, errbuf);
		free(p);
		return -ENODEV;
	}
	uint32_t cap = (uint32_t)p->info.mtu + PP_ETH_HLEN;
	pcap_set_snaplen(p->pc, (int)cap);
	pcap_set_promisc(p->pc, 0);
	pcap_set_immediate_mode(p->pc, 1);
	pcap_set_buffer_size(p->pc, PCAP_RING_BYTES);
	int st = pcap_activate(p->pc);
	if (st < 0) {
		rc = activate_error(iface, st, p->pc);
		goto fail;
	}
	struct bpf_program prog;
	if (pcap_setnonblock(p->pc, 1, errbuf) < 0 || pcap_setdirection(p->pc, PCAP_D_IN) < 0 ||
	    pcap_compile(p->pc, &prog, "ether proto 0x88b5", 1, PCAP_NETMASK_UNKNOWN) < 0) {
		pp_err("pcap:%s: cannot set up capture: %s", iface, pcap_geterr(p->pc));
		rc = -EIO;
		goto fail;
	}
	st = pcap_setfilter(p->pc, &prog);
	pcap_freecode(&prog);
	if (st < 0) {
		pp_err("pcap:%s: cannot set the filter: %s", iface, pcap_geterr(p->pc));
		rc = -EIO;
		goto fail;
	}

	unsigned n = (unsigned)conf->rx_depth + conf->tx_depth;
	if ((rc = pp_bufpool_init(&p->pool, n < POOL_DEFAULT ? POOL_DEFAULT : n, cap, p)))
		goto fail;
	p->info.nb_queues = 1;
	p->info.buf_cap = cap;
	snprintf(p->info.driver, sizeof(p->info.driver), "libpcap");
	if (conf->nb_queues > 1)
		pp_info("pcap:%s: one queue pair only (%u asked)", iface, conf->nb_queues);
	*port = &p->base;
	return 0;
fail:
	pcap_port_close(&p->base);
	return rc;
}

static int pcap_port_info(struct pp_port *port, struct pp_port_info *info)
{
	*info = ((struct pcap_port *)port)->info;
	return 0;
}

static int pcap_port_stats(struct pp_port *port, struct pp_port_stats *stats)
{
	struct pcap_port *p = (struct pcap_port *)port;
	*stats = p->st;
	struct pcap_stat ps;
	if (pcap_stats(p->pc, &ps) == 0)
		stats->rx_dropped += ps.ps_drop + ps.ps_ifdrop;
	return 0;
}

static unsigned pcap_port_alloc(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	struct pcap_port *p = (struct pcap_port *)port;
	unsigned got = pp_bufpool_alloc(&p->pool, bufs, n);
	if (got < n)
		p->st.alloc_failed++;
	return got;
}

static void pcap_port_free(struct pp_port *port, struct pp_buf **bufs, unsigned n)
{
	pp_bufpool_free(&((struct pcap_port *)port)->pool, bufs, n);
}

static unsigned pcap_port_rx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs,
				   unsigned n)
{
	struct pcap_port *p = (struct pcap_port *)port;
	(void)queue;
	unsigned got = 0;
	while (got < n) {
		if (!p->pool.nb_free) {
			p->st.alloc_failed++;
			break;
		}
		struct pcap_pkthdr *h;
		const u_char *bytes;
		if (pcap_next_ex(p->pc, &h, &bytes) != 1)
			break;
		if (h->caplen != h->len || h->caplen > p->info.buf_cap) {
			p->st.rx_dropped++; /* truncated: longer than the MTU */
			continue;
		}
		struct pp_buf *b = p->pool.free_stack[--p->pool.nb_free];
		memcpy(b->data, bytes, h->caplen);
		b->len = h->caplen;
		b->ts_ns = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec * 1000u;
		p->st.rx_frames++;
		p->st.rx_bytes += b->len;
		bufs[got++] = b;
	}
	return got;
}

static unsigned pcap_port_tx_burst(struct pp_port *port, uint16_t queue, struct pp_buf **bufs,
				   unsigned n)
{
	struct pcap_port *p = (struct pcap_port *)port;
	(void)queue;
	unsigned i;
	for (i = 0; i < n; i++) {
		struct pp_buf *b = bufs[i];
		if (pcap_inject(p->pc, b->data, b->len) < 0) {
			int e = errno;
			if (e == EAGAIN || e == ENOBUFS || e == EINTR)
				break;	   /* full for now: the caller keeps the rest */
			p->st.tx_failed++; /* cannot ever be sent: take and drop it */
		} else {
			p->st.tx_frames++;
			p->st.tx_bytes += b->len;
		}
		pcap_port_free(port, &bufs[i], 1);
	}
	return i;
}

/* libpcap's selectable descriptor (immediate mode: readable per frame). */
static int pcap_port_wait_fd(struct pp_port *port)
{
	int fd = pcap_get_selectable_fd(((struct pcap_port *)port)->pc);
	return fd >= 0 ? fd : -ENOTSUP;
}

const struct pp_port_ops pp_port_ops_pcap = {
    .name = "pcap",
    .open = pcap_port_open,
    .close = pcap_port_close,
    .info = pcap_port_info,
    .stats = pcap_port_stats,
    .alloc = pcap_port_alloc,
    .free = pcap_port_free,
    .rx_burst = pcap_port_rx_burst,
    .tx_burst = pcap_port_tx_burst,
    .wait_fd = pcap_port_wait_fd,
};
