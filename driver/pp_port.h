/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame I/O: one small interface, several peer backends.
 *
 * A port is opened from a device string; the prefix chooses the backend once,
 * and from then on every call goes through that backend's ops table:
 *   "sim:LINK/INDEX"          the in-memory lossy link (driver/sim)
 *   "pcap:IFACE"              libpcap live capture + inject (driver/pcap)
 *   "packet:IFACE"            an AF_PACKET socket whose RX and TX ring slots
 *                             are the port's buffers (driver/packet; Linux)
 *   "udp:ADDR:PORT,peers=..."  whole frames in UDP/IPv4 datagrams through a
 *                             kernel socket; no privilege, routable
 *                             (driver/udp; Linux)
 *   "fault:SPEC;DEV"          DEV with loss, duplication and reordering
 *                             injected into what it receives (driver/fault)
 *   "ppd:job=..,path=SOCKET"  a rank's rings to its node daemon (driver/ppd;
 *                             the runtime builds it from daemon=)
 *   anything else             DPDK EAL device arguments, e.g.
 *                             "--vdev=net_af_xdp0,iface=pp0" (driver/dpdk)
 *
 * Frames travel in buffers the port owns (struct pp_buf): rx_burst hands the
 * caller buffers that the backend filled, tx_burst takes buffers the caller
 * filled (allocated from the same port), so no byte is copied between the
 * driver and the engine. Burst calls return how many buffers they moved;
 * buffers tx_burst did not take stay the caller's.
 *
 * The hot-path calls (alloc, free, rx_burst, tx_burst) are inline dispatches
 * through the ops table; they never allocate or log, and lock only in the
 * sim backend (a test link shared by threads: driver/sim/pp_sim.h).
 */
#ifndef PP_PORT_H
#define PP_PORT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "pp_eth.h"

#define PP_PORT_MAX_QUEUES 16

/* One frame buffer. The backend keeps it inside its own buffer (an mbuf's
 * private area, a slot of a preallocated pool), so handing it around costs
 * nothing. */
struct pp_buf {
	uint8_t *data;	/* first byte of the Ethernet frame */
	uint32_t len;	/* bytes of frame in data */
	uint32_t cap;	/* bytes data can hold */
	uint64_t ts_ns; /* receive time where the backend knows it, else 0 */
	void *priv;	/* the backend's own handle for this buffer */
};

struct pp_port_conf {
	uint16_t nb_queues;    /* RX/TX queue pairs wanted (>= 1) */
	uint16_t rx_depth;     /* descriptors per RX queue (0: default) */
	uint16_t tx_depth;     /* descriptors per TX queue (0: default) */
	const char *pcap_dump; /* capture every frame to this file, or NULL */
};

struct pp_port_info {
	uint8_t mac[6];	     /* the port's own MAC address */
	uint16_t mtu;	     /* largest payload after the Ethernet header */
	uint16_t nb_queues;  /* queue pairs actually configured */
	uint32_t buf_cap;    /* bytes a pp_buf can hold (>= mtu + 14) */
	int link_up;	     /* 1 link up, 0 down, -1 unknown */
	uint32_t speed_mbps; /* link speed, 0 if unknown */
	char driver[32];     /* backend or PMD name */
};

struct pp_port_stats {
	uint64_t rx_frames;    /* frames received */
	uint64_t rx_bytes;     /* bytes received */
	uint64_t tx_frames;    /* frames sent */
	uint64_t tx_bytes;     /* bytes sent */
	uint64_t rx_dropped;   /* frames the port dropped (ring full, filter) */
	uint64_t tx_failed;    /* frames the port refused to send */
	uint64_t alloc_failed; /* buffer allocations that found the pool empty */
};

struct pp_port;

struct pp_port_ops {
	const char *name;
	/* Open the port named by dev (the prefix already stripped for sim:,
	 * pcap: and packet:). Errors: -EINVAL bad string, -ENODEV no such
	 * device, -EPERM missing privilege, -ENOMEM; see pp_port_open. */
	int (*open)(struct pp_port **port, const char *dev, const struct pp_port_conf *conf);
	void (*close)(struct pp_port *port);
	int (*info)(struct pp_port *port, struct pp_port_info *info);
	int (*stats)(struct pp_port *port, struct pp_port_stats *stats);
	/* Fill bufs[0..n) with fresh buffers; returns how many (0 when empty). */
	unsigned (*alloc)(struct pp_port *port, struct pp_buf **bufs, unsigned n);
	void (*free)(struct pp_port *port, struct pp_buf **bufs, unsigned n);
	unsigned (*rx_burst)(struct pp_port *port, uint16_t queue, struct pp_buf **bufs,
			     unsigned n);
	unsigned (*tx_burst)(struct pp_port *port, uint16_t queue, struct pp_buf **bufs,
			     unsigned n);
	/* Optional (NULL when the backend cannot): see pp_port_attach_ext. */
	int (*attach_ext)(struct pp_port *port, struct pp_buf *buf, void *addr, uint32_t len,
			  void (*done)(void *arg), void *arg);
	/* Optional: see pp_port_mem_register / pp_port_mem_unregister. */
	int (*mem_register)(struct pp_port *port, void *addr, size_t len);
	int (*mem_unregister)(struct pp_port *port, void *addr, size_t len);
	/* Optional: see pp_port_wait_fd. */
	int (*wait_fd)(struct pp_port *port);
};

/* Every backend's port begins with this. */
struct pp_port {
	const struct pp_port_ops *ops; /* chosen once, at open */
	struct pp_capture *capture;    /* pcap_dump writer, or NULL */
};

/*
 * Open a port from a device string (see the top of this file).
 * Errors: -EINVAL (NULL or malformed dev, bad conf), -ENODEV (unknown
 * backend or device; the reason is logged), -EPERM, -ENOMEM, -ENOTSUP
 * (backend not built in); pcap: and packet: also -ENETDOWN (interface
 * down) and -EIO, packet: -EMSGSIZE (interface MTU too small); udp:
 * -EADDRINUSE (UDP port taken) and -EMSGSIZE (mtu below 576).
 */
int pp_port_open(struct pp_port **port, const char *dev, const struct pp_port_conf *conf);
void pp_port_close(struct pp_port *port);

/* A backend, as pp_port_open matches device strings against them. */
struct pp_port_backend {
	const char *prefix;  /* "sim:", "pcap:", ...; "" for DPDK (anything else) */
	const char *name;    /* "sim", "pcap", "packet", "udp", "ppd", "fault", "dpdk" */
	int built;	     /* 1: compiled in */
	const char *missing; /* why not, when not built */
};

/* Backend i, in matching order: 0, or -ENOENT past the last one. */
int pp_port_backend(size_t i, struct pp_port_backend *out);
int pp_port_info(struct pp_port *port, struct pp_port_info *info);
int pp_port_stats(struct pp_port *port, struct pp_port_stats *stats);

/* Capture hooks, called by the inline burst wrappers when capture is on
 * (capture.c): record received frames; record and send a TX burst, keeping
 * in the file exactly the frames the backend took. */
void pp_capture_frames(struct pp_capture *cap, struct pp_buf *const *bufs, unsigned n);
unsigned pp_capture_tx_burst(struct pp_port *p, uint16_t q, struct pp_buf **bufs, unsigned n);

static inline unsigned pp_port_alloc(struct pp_port *p, struct pp_buf **bufs, unsigned n)
{
	return p->ops->alloc(p, bufs, n);
}

static inline void pp_port_free(struct pp_port *p, struct pp_buf **bufs, unsigned n)
{
	p->ops->free(p, bufs, n);
}

static inline unsigned pp_port_rx_burst(struct pp_port *p, uint16_t q, struct pp_buf **bufs,
					unsigned n)
{
	unsigned got = p->ops->rx_burst(p, q, bufs, n);
	if (p->capture && got)
		pp_capture_frames(p->capture, bufs, got);
	return got;
}

static inline unsigned pp_port_tx_burst(struct pp_port *p, uint16_t q, struct pp_buf **bufs,
					unsigned n)
{
	if (p->capture)
		return pp_capture_tx_burst(p, q, bufs, n);
	return p->ops->tx_burst(p, q, bufs, n);
}

/*
 * Zero-copy TX of large payloads. Register user memory once
 * (pp_port_mem_register), then make len bytes at addr, inside a registered
 * region, the tail of buf's frame: the frame sent is buf's own buf->len bytes
 * (the headers) followed by those bytes, which the NIC reads where they are.
 * done(arg) runs once the port no longer needs them (after transmission, or
 * when buf is freed unsent), on whichever thread frees the buffer: usually
 * inside a later tx_burst on the same queue. Capture records only the
 * headers of such frames. At most one region per buffer.
 * Errors: -ENOTSUP the backend or its NIC cannot (copy instead), -EINVAL,
 * -EBUSY buf already has one, -EMSGSIZE the frame would exceed the MTU,
 * -ENOMEM no descriptor left.
 */
static inline int pp_port_attach_ext(struct pp_port *p, struct pp_buf *buf, void *addr,
				     uint32_t len, void (*done)(void *arg), void *arg)
{
	if (!p->ops->attach_ext)
		return -ENOTSUP;
	return p->ops->attach_ext(p, buf, addr, len, done, arg);
}

/* A file descriptor that poll() reports readable (POLLIN) when queue 0 may
 * have frames for rx_burst: for a thread that sleeps until a frame comes
 * (progress=event). It may report readable with nothing to take (a frame
 * still held by the caller, one the backend keeps back), and a backend that
 * holds frames itself (fault:'s reordering) does not wake it for those: a
 * sleeper bounds its sleep. The port keeps the descriptor; close it never.
 * Errors: -ENOTSUP the backend has none (DPDK's PMDs here, the node
 * daemon's). */
static inline int pp_port_wait_fd(struct pp_port *p)
{
	return p->ops->wait_fd ? p->ops->wait_fd(p) : -ENOTSUP;
}

/* Register [addr, addr+len) for pp_port_attach_ext (pinned and mapped for
 * the NIC where it needs that). Cold path.
 * Errors: -ENOTSUP, -EINVAL, -ENOMEM, -EEXIST overlaps a registered region. */
int pp_port_mem_register(struct pp_port *port, void *addr, size_t len);

/* Undo pp_port_mem_register with the same addr and len.
 * Errors: -ENOTSUP, -EINVAL, -ENOENT not registered. */
int pp_port_mem_unregister(struct pp_port *port, void *addr, size_t len);

#endif
