/* SPDX-License-Identifier: BSD-3-Clause */
/* The socket side both UDP framings share: see udp_sock.h. */
#include "udp_sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pp_log.h"
#include "udp_addr.h"

void pp_udp_tx_init(struct pp_udp_tx *p, int fd, struct pp_udp_dev *d,
		    const struct sockaddr_in *self, const char *name, struct pp_port_stats *st)
{
	*p = (struct pp_udp_tx){.fd = fd, .peers = d->peers, .name = name, .st = st};
	d->peers = NULL;
	for (unsigned i = 0; i < d->nb_peers; i++)
		if (p->peers[i].sin_addr.s_addr != self->sin_addr.s_addr ||
		    p->peers[i].sin_port != self->sin_port)
			p->peers[p->nb_peers++] = p->peers[i];
}

void pp_udp_tx_fini(struct pp_udp_tx *p)
{
	free(p->peers);
	p->peers = NULL;
	p->nb_peers = 0;
}

int pp_udp_bind(int fd, struct sockaddr_in *self, const char *dev)
{
	unsigned span = 65536 - PP_UDP_PORT_MIN;
	unsigned start = 0, tries = 1;
	if (self->sin_port == 0) {
		if (getrandom(&start, sizeof(start), 0) != (ssize_t)sizeof(start))
			start = (unsigned)getpid();
		tries = span;
	}
	for (unsigned t = 0; t < tries; t++) {
		if (tries > 1)
			self->sin_port = htons((uint16_t)(PP_UDP_PORT_MIN + (start + t) % span));
		if (bind(fd, (struct sockaddr *)self, sizeof(*self)) == 0)
			return 0;
		if (errno != EADDRINUSE)
			break;
	}
	int e = errno;
	if (e == EADDRINUSE)
		pp_err("udp:%s: UDP port in use (%s)", dev,
		       tries > 1 ? "every one of the range" : "choose another");
	else if (e == EADDRNOTAVAIL)
		pp_err("udp:%s: no interface here has that address (see `ip addr`)", dev);
	else
		pp_err("udp:%s: bind: %s", dev, strerror(e));
	return e == EADDRNOTAVAIL ? -ENODEV : -e;
}

/* A group frame (HELLO, BYE): one datagram to every peer. Cold path.
 * 1 taken (a peer it did not reach lost it, as any datagram may be lost:
 * discovery repeats), 0 the socket is full before the first peer: the
 * caller keeps it. */
int pp_udp_tx_group(struct pp_udp_tx *p, const struct pp_buf *b)
{
	unsigned failed = 0;
	for (unsigned i = 0; i < p->nb_peers; i++) {
		if (sendto(p->fd, b->data, b->len, MSG_DONTWAIT, (struct sockaddr *)&p->peers[i],
			   sizeof(p->peers[i])) >= 0)
			continue;
		if (i == 0 && (errno == EAGAIN || errno == ENOBUFS))
			return 0;
		failed++;
	}
	if (failed)
		p->st->tx_failed++;
	else {
		p->st->tx_frames++;
		p->st->tx_bytes += b->len;
	}
	return 1;
}

/* One sendmmsg for unicast frames bufs[0..n) (n <= PP_UDP_BURST, each with an
 * address). With GSO, consecutive frames to one address, all of the first
 * one's length but the last (which may be shorter), go as one message the
 * kernel cuts into those datagrams (UDP_SEGMENT): one pass down the stack
 * instead of one per frame. Returns the frames taken (sent, or dropped as
 * never sendable), 0 when the socket is full. */
unsigned pp_udp_tx_run(struct pp_udp_tx *p, struct pp_buf **bufs, unsigned n)
{
	struct mmsghdr msgs[PP_UDP_BURST];
	struct iovec iov[PP_UDP_BURST];
	struct sockaddr_in to[PP_UDP_BURST];
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl[PP_UDP_BURST];
	unsigned frames[PP_UDP_BURST];
	uint32_t bytes[PP_UDP_BURST], seg[PP_UDP_BURST];
	unsigned m = 0;
	int open_group = 0; /* the last message may take another frame */
	for (unsigned k = 0; k < n; k++) {
		struct pp_buf *b = bufs[k];
		struct sockaddr_in a;
		pp_udp_mac_decode(b->data, &a);
		iov[k] = (struct iovec){b->data, b->len};
		if (open_group && a.sin_addr.s_addr == to[m - 1].sin_addr.s_addr &&
		    a.sin_port == to[m - 1].sin_port && b->len <= seg[m - 1] &&
		    frames[m - 1] < PP_UDP_GSO_SEGS && bytes[m - 1] + b->len <= PP_UDP_GSO_BYTES) {
			msgs[m - 1].msg_hdr.msg_iovlen++;
			frames[m - 1]++;
			bytes[m - 1] += b->len;
			open_group = b->len == seg[m - 1];
			continue;
		}
		to[m] = a;
		msgs[m].msg_hdr = (struct msghdr){.msg_name = &to[m],
						  .msg_namelen = sizeof(to[m]),
						  .msg_iov = &iov[k],
						  .msg_iovlen = 1};
		frames[m] = 1;
		bytes[m] = seg[m] = b->len;
		open_group = p->gso;
		m++;
	}
	for (unsigned j = 0; j < m; j++) {
		if (frames[j] < 2)
			continue;
		struct msghdr *h = &msgs[j].msg_hdr;
		memset(&ctl[j], 0,
		       sizeof(ctl[j])); /* CMSG_SPACE's padding goes to the kernel too */
		h->msg_control = ctl[j].buf;
		h->msg_controllen = sizeof(ctl[j].buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(h);
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
		uint16_t sz = (uint16_t)seg[j];
		memcpy(CMSG_DATA(c), &sz, sizeof(sz));
	}
	int r = sendmmsg(p->fd, msgs, m, MSG_DONTWAIT);
	if (r < 0) {
		int e = errno;
		if (e == EAGAIN || e == ENOBUFS || e == EINTR)
			return 0; /* full for now: the caller keeps them */
		if (frames[0] > 1) {
			/* GSO refused (a device without checksum offload, a
			 * segment above the route's MTU): plain datagrams from
			 * now on. Once in the port's life. */
			p->gso = 0;
			pp_info("%s: GSO refused (%s); one datagram per send from now on", p->name,
				strerror(e));
			return pp_udp_tx_run(p, bufs, n);
		}
		p->st->tx_failed++; /* the first cannot ever go: the caller drops it */
		return 1;
	}
	/* When r < m, the next sendmmsg says why the rest did not go. */
	unsigned taken = 0;
	for (int j = 0; j < r; j++) {
		taken += frames[j];
		p->st->tx_bytes += bytes[j];
	}
	p->st->tx_frames += taken;
	return taken;
}
