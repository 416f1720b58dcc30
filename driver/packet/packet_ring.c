/* SPDX-License-Identifier: BSD-3-Clause */
/* The slot bookkeeping of the packet: backend; see packet_ring.h. */
#include "packet_ring.h"

#include <errno.h>
#include <linux/if_packet.h>
#include <stdlib.h>
#include <string.h>

#include "pp_compiler.h"

static inline struct tpacket2_hdr *hdr_of(uint8_t *slot)
{
	return (struct tpacket2_hdr *)(void *)slot;
}

static inline uint32_t status_of(uint8_t *slot)
{
	return __atomic_load_n(&hdr_of(slot)->tp_status, __ATOMIC_ACQUIRE);
}

static inline void status_set(uint8_t *slot, uint32_t st)
{
	__atomic_store_n(&hdr_of(slot)->tp_status, st, __ATOMIC_RELEASE);
}

static int ring_ok(uint32_t n)
{
	return n >= 2 && (n & (n - 1)) == 0;
}

/* --- RX ------------------------------------------------------------------- */

int pp_pkt_rx_init(struct pp_pkt_rx *rx, uint8_t **slot, uint32_t n, uint32_t frame_size)
{
	memset(rx, 0, sizeof(*rx));
	if (!slot || !ring_ok(n) || frame_size < TPACKET2_HDRLEN + PP_ETH_HLEN)
		return -EINVAL;
	rx->buf = calloc(n, sizeof(*rx->buf));
	rx->refs = calloc(n, sizeof(*rx->refs));
	if (!rx->buf || !rx->refs) {
		free(rx->buf);
		free(rx->refs);
		memset(rx, 0, sizeof(*rx));
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		rx->buf[i].pos = i;
		rx->buf[i].pb.priv = rx;
	}
	rx->segs = 1;
	rx->slot = slot;
	rx->n = n;
	rx->mask = n - 1;
	rx->frame_size = frame_size;
	return 0;
}

int pp_pkt_rx_set_split(struct pp_pkt_rx *rx, uint32_t segs, pp_pkt_split_fn split, void *arg)
{
	if (!split || segs < 1 || segs > PP_PKT_SEGS_MAX || rx->next)
		return -EINVAL;
	struct pp_pkt_buf *b = calloc((size_t)rx->n * segs, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (uint32_t i = 0; i < rx->n * segs; i++) {
		b[i].pos = i / segs;
		b[i].pb.priv = rx;
	}
	free(rx->buf);
	rx->buf = b;
	rx->segs = segs;
	rx->split = split;
	rx->split_arg = arg;
	return 0;
}

void pp_pkt_rx_fini(struct pp_pkt_rx *rx)
{
	free(rx->buf);
	free(rx->refs);
	free(rx->slot);
	memset(rx, 0, sizeof(*rx));
}

/* Slot i's frames as the split callback finds them: how many, their
 * descriptors filled; the first at once, the rest pending. */
static unsigned rx_split(struct pp_pkt_rx *rx, uint32_t i, uint8_t *f, uint32_t len, uint64_t ts)
{
	uint8_t *seg[PP_PKT_SEGS_MAX];
	uint32_t seg_len[PP_PKT_SEGS_MAX];
	unsigned max = rx->segs < PP_PKT_SEGS_MAX ? rx->segs : PP_PKT_SEGS_MAX;
	unsigned k = rx->split(rx->split_arg, f, len, seg, seg_len, max);
	struct pp_pkt_buf *d = &rx->buf[(size_t)i * rx->segs];
	for (unsigned j = 0; j < k; j++) {
		d[j].pb.data = seg[j];
		d[j].pb.len = seg_len[j];
		d[j].pb.cap = seg_len[j];
		d[j].pb.ts_ns = ts;
	}
	rx->pend = i;
	rx->pend_next = 0;
	rx->pend_end = k;
	return k;
}

unsigned pp_pkt_rx_take(struct pp_pkt_rx *rx, struct pp_buf **bufs, unsigned n)
{
	unsigned got = 0;
	uint64_t bytes = 0;
	while (got < n) {
		if (pp_unlikely(rx->pend_next < rx->pend_end)) {
			struct pp_pkt_buf *d =
			    &rx->buf[(size_t)rx->pend * rx->segs + rx->pend_next++];
			d->out = 1;
			bytes += d->pb.len;
			bufs[got++] = &d->pb;
			continue;
		}
		uint32_t i = rx->next & rx->mask;
		if (rx->refs[i])
			break; /* the caller still holds it: the kernel waits there too */
		uint8_t *s = rx->slot[i];
		if (!(status_of(s) & TP_STATUS_USER))
			break;
		rx->next++;
		const struct tpacket2_hdr *h = hdr_of(s);
		uint32_t mac = h->tp_mac, len = h->tp_snaplen;
		const struct sockaddr_ll *sll =
		    (const struct sockaddr_ll *)(void *)(s + TPACKET_ALIGN(sizeof(*h)));
		if (pp_unlikely(len != h->tp_len || (uint64_t)mac + len > rx->frame_size ||
				len < PP_ETH_HLEN || sll->sll_pkttype == PACKET_OUTGOING)) {
			/* cut short (longer than a slot), a runt, or one we sent
			 * (PACKET_IGNORE_OUTGOING keeps those away where it exists) */
			if (sll->sll_pkttype != PACKET_OUTGOING)
				rx->dropped++;
			status_set(s, TP_STATUS_KERNEL);
			continue;
		}
		uint64_t ts = (uint64_t)h->tp_sec * 1000000000u + h->tp_nsec;
		if (rx->split) {
			unsigned k = rx_split(rx, i, s + mac, len, ts);
			if (!k)
				status_set(s, TP_STATUS_KERNEL);
			rx->refs[i] = (uint16_t)k;
			continue; /* handed out from pend */
		}
		struct pp_pkt_buf *d = &rx->buf[i];
		d->pb.data = s + mac;
		d->pb.len = len;
		d->pb.cap = rx->frame_size - mac;
		d->pb.ts_ns = ts;
		d->out = 1;
		rx->refs[i] = 1;
		bytes += len;
		bufs[got++] = &d->pb;
	}
	rx->nout += got;
	rx->frames += got;
	rx->bytes += bytes;
	return got;
}

void pp_pkt_rx_release(struct pp_pkt_rx *rx, struct pp_pkt_buf *d)
{
	if (pp_unlikely(!d->out))
		return; /* freed twice: the slot may be the kernel's already */
	d->out = 0;
	rx->nout--;
	if (--rx->refs[d->pos] == 0)
		status_set(rx->slot[d->pos], TP_STATUS_KERNEL);
}

/* --- TX ------------------------------------------------------------------- */

int pp_pkt_tx_init(struct pp_pkt_tx *tx, uint8_t **slot, uint32_t n, uint32_t frame_size,
		   uint32_t cap)
{
	memset(tx, 0, sizeof(*tx));
	if (!slot || !ring_ok(n) || cap < PP_ETH_HLEN || cap + PP_PKT_TX_DATA_OFF > frame_size)
		return -EINVAL;
	tx->holder = calloc(n, sizeof(*tx->holder));
	tx->desc = calloc(n, sizeof(*tx->desc));
	tx->free = calloc(n, sizeof(*tx->free));
	tx->bounce = malloc(cap);
	if (!tx->holder || !tx->desc || !tx->free || !tx->bounce) {
		free(tx->holder);
		free(tx->desc);
		free(tx->free);
		free(tx->bounce);
		memset(tx, 0, sizeof(*tx));
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		tx->desc[i].tx = 1;
		tx->desc[i].pb.priv = tx;
		tx->free[n - 1 - i] = &tx->desc[i];
	}
	tx->nfree = n;
	tx->slot = slot;
	tx->n = n;
	tx->mask = n - 1;
	tx->cap = cap;
	tx->frame_size = frame_size;
	return 0;
}

void pp_pkt_tx_fini(struct pp_pkt_tx *tx)
{
	free(tx->holder);
	free(tx->desc);
	free(tx->free);
	free(tx->bounce);
	free(tx->slot);
	memset(tx, 0, sizeof(*tx));
}

int pp_pkt_tx_set_room(struct pp_pkt_tx *tx, uint32_t room, pp_pkt_hdr_fn hdr, void *arg)
{
	if (!hdr || tx->end || (uint64_t)room + tx->cap + PP_PKT_TX_DATA_OFF > tx->frame_size)
		return -EINVAL;
	tx->room = room;
	tx->hdr = hdr;
	tx->hdr_arg = arg;
	return 0;
}

static inline uint8_t *tx_data(const struct pp_pkt_tx *tx, uint32_t pos)
{
	return tx->slot[pos & tx->mask] + PP_PKT_TX_DATA_OFF + tx->room;
}

/* A descriptor for position pos, empty. There is always one: the caller
 * holds fewer than n, since [sub, end) has at most n positions and at least
 * one is free whenever this is called (a hole, or end - sub < n). */
static struct pp_pkt_buf *bind(struct pp_pkt_tx *tx, uint32_t pos)
{
	struct pp_pkt_buf *d = tx->free[--tx->nfree];
	d->pos = pos;
	d->out = 1;
	d->pb.data = tx_data(tx, pos);
	d->pb.len = 0;
	d->pb.cap = tx->cap;
	d->pb.ts_ns = 0;
	tx->holder[pos & tx->mask] = d;
	return d;
}

/* Holes at the top of [sub, end) go back to being fresh slots. */
static void retract(struct pp_pkt_tx *tx)
{
	while (tx->end != tx->sub && !tx->holder[(tx->end - 1) & tx->mask]) {
		tx->end--;
		tx->holes--;
	}
}

unsigned pp_pkt_tx_alloc(struct pp_pkt_tx *tx, struct pp_buf **bufs, unsigned n)
{
	unsigned got = 0;
	if (pp_unlikely(tx->holes))
		for (uint32_t p = tx->sub; p != tx->end && got < n && tx->holes; p++)
			if (!tx->holder[p & tx->mask]) {
				bufs[got++] = &bind(tx, p)->pb;
				tx->holes--;
			}
	while (got < n && tx->end - tx->sub < tx->n) {
		/* the kernel is done with it once it is AVAILABLE again */
		if (status_of(tx->slot[tx->end & tx->mask]) != TP_STATUS_AVAILABLE)
			break;
		bufs[got++] = &bind(tx, tx->end)->pb;
		tx->end++;
	}
	for (unsigned i = 0; i < got / 2; i++) { /* lowest position last */
		struct pp_buf *t = bufs[i];
		bufs[i] = bufs[got - 1 - i];
		bufs[got - 1 - i] = t;
	}
	if (got < n)
		tx->alloc_failed++;
	return got;
}

void pp_pkt_tx_release(struct pp_pkt_tx *tx, struct pp_pkt_buf *d)
{
	if (pp_unlikely(!d->out))
		return; /* freed twice, or freed after it was sent */
	d->out = 0;
	tx->holder[d->pos & tx->mask] = NULL;
	tx->holes++;
	tx->free[tx->nfree++] = d;
	retract(tx);
}

/* Make x, held at a position above sub, the holder of sub. */
static void move_to_sub(struct pp_pkt_tx *tx, struct pp_pkt_buf *x)
{
	uint32_t h = tx->sub, k = x->pos, m = tx->mask;
	uint8_t *dst = tx_data(tx, h);
	tx->moved++;
	if (!tx->holder[h & m]) {
		/* a hole at sub: x's frame fills it and leaves a hole behind */
		memcpy(dst, x->pb.data, x->pb.len);
		tx->holder[k & m] = NULL;
	} else {
		/* every holder of [sub, k) moves one slot up, keeping len bytes */
		int keep = 0;
		for (uint32_t p = h; p != k && !keep; p++)
			keep = tx->holder[p & m] && tx->holder[p & m]->pb.len;
		const uint8_t *src = x->pb.data;
		if (keep) {
			memcpy(tx->bounce, src, x->pb.len);
			src = tx->bounce;
		}
		for (uint32_t p = k; p != h; p--) {
			struct pp_pkt_buf *y = tx->holder[(p - 1) & m];
			tx->holder[p & m] = y;
			if (!y)
				continue;
			uint8_t *nd = tx->slot[p & m] + (y->pb.data - tx->slot[(p - 1) & m]);
			if (y->pb.len)
				memcpy(nd, y->pb.data, y->pb.len);
			y->pb.data = nd;
			y->pos = p;
		}
		memcpy(dst, src, x->pb.len);
	}
	x->pb.data = dst;
	x->pos = h;
	tx->holder[h & m] = x;
	retract(tx);
}

unsigned pp_pkt_tx_submit(struct pp_pkt_tx *tx, struct pp_pkt_rx *rx, struct pp_buf **bufs,
			  unsigned n, unsigned *marked)
{
	unsigned i, mk = 0;
	uint64_t bytes = 0;
	for (i = 0; i < n; i++) {
		struct pp_pkt_buf *d = (struct pp_pkt_buf *)bufs[i];
		uint32_t len = d->pb.len;
		if (pp_unlikely(!d->tx)) {
			/* a received frame sent back out: into a TX slot */
			if (len < PP_ETH_HLEN || len > tx->cap) {
				tx->failed++;
				pp_pkt_rx_release(rx, d);
				continue;
			}
			struct pp_buf *t;
			if (pp_pkt_tx_alloc(tx, &t, 1) != 1)
				break; /* no slot now: the caller keeps the rest */
			memcpy(t->data, d->pb.data, len);
			t->len = len;
			pp_pkt_rx_release(rx, d);
			d = (struct pp_pkt_buf *)t;
		}
		if (pp_unlikely(!d->out))
			continue; /* sent or freed already: nothing of it is ours */
		if (pp_unlikely(len < PP_ETH_HLEN || len > tx->cap)) {
			tx->failed++; /* can never be sent: take and drop it */
			pp_pkt_tx_release(tx, d);
			continue;
		}
		if (pp_unlikely(d->pos != tx->sub))
			move_to_sub(tx, d);
		uint8_t *s = tx->slot[tx->sub & tx->mask], *k = s + PP_PKT_TX_DATA_OFF;
		if (pp_unlikely(d->pb.data != k + tx->room))
			memmove(k + tx->room, d->pb.data, len); /* moved in its slot */
		if (tx->hdr)
			tx->hdr(tx->hdr_arg, k, len);
		struct tpacket2_hdr *h = hdr_of(s);
		h->tp_len = len + tx->room;
		h->tp_snaplen = len + tx->room;
		status_set(s, TP_STATUS_SEND_REQUEST);
		tx->holder[tx->sub & tx->mask] = NULL;
		tx->sub++;
		d->out = 0;
		tx->free[tx->nfree++] = d;
		bytes += len;
		mk++;
	}
	tx->frames += mk;
	tx->bytes += bytes;
	*marked = mk;
	return i;
}

int pp_pkt_tx_waiting(const struct pp_pkt_tx *tx)
{
	return status_of(tx->slot[(tx->sub - 1) & tx->mask]) == TP_STATUS_SEND_REQUEST;
}
