/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The slot bookkeeping of the packet: backend (packet_port.c), apart from
 * the socket so that it can be tested on plain memory (tests/test_packet.c
 * plays the kernel's part by writing tp_status).
 *
 * Both rings are TPACKET_V2 rings of n slots, n a power of two; slot i
 * starts with a struct tpacket2_hdr whose tp_status the kernel and we hand
 * back and forth. Every pp_buf the backend gives out is a struct pp_pkt_buf
 * whose data points into its slot, so no byte is copied on the way.
 *
 * RX. The kernel fills slots in ring order and sets TP_STATUS_USER; it stops
 * (and drops) at the first slot that is not TP_STATUS_KERNEL. pp_pkt_rx_take
 * hands out slots in the same order from `next`, and stops at a slot that
 * is not the user's yet or that the caller still holds (its `out` flag: a
 * slot still held has TP_STATUS_USER from its last frame, so the flag is
 * what keeps it from being handed out twice when `next` comes round to it).
 * Buffers may be freed in any order: pp_pkt_rx_release gives that one slot
 * back (TP_STATUS_KERNEL) at once; TPACKET_V2 statuses are per slot.
 *
 * TX. The kernel sends slots strictly in ring order: at sendto() it takes
 * the slot at its head while that slot is TP_STATUS_SEND_REQUEST, and stops
 * at the first one that is not. Positions are unwrapped 32-bit counters
 * (slot = pos & mask):
 *   [.., sub)      submitted (the kernel's until it sets TP_STATUS_AVAILABLE)
 *   [sub, end)     the caller's: each slot held by one buffer, or a hole
 *                  (a buffer freed unsent)
 *   [end, ..)      free once the kernel has made them TP_STATUS_AVAILABLE
 * pp_pkt_tx_alloc hands out holes first, then fresh slots from end, and
 * returns them in DESCENDING ring order (bufs[got-1] is the lowest): the
 * runtime's progress pass keeps allocated buffers as a stack and fills
 * spare[nspare-1] first (runtime/progress.c), so it fills and sends them in
 * ring order. pp_pkt_tx_submit takes buffers in the order given; a buffer
 * whose slot is not at sub (sent before one allocated earlier, e.g. a HELLO
 * while the progress pass keeps spare buffers) is moved to sub first: its
 * frame is copied there, and the buffers holding [sub, pos) each move one
 * slot up, keeping their first len bytes (an empty spare, len 0, moves
 * without a copy). So a caller may send in any order and free unsent
 * buffers in any order; only a buffer not yet sent may see its data pointer
 * change, and only its first len bytes are kept when it does.
 *
 * A buffer from rx_take may be given to pp_pkt_tx_submit (pp_probe echoes
 * in place): its frame is copied into a TX slot and the RX slot released.
 *
 * Headers the port adds (frame=udp, packet_port.c). With pp_pkt_tx_set_room
 * a TX buffer's frame starts `room` bytes into the kernel's frame, and the
 * port's hook writes those bytes at submit, once the slot is final. With
 * pp_pkt_rx_set_split a slot the kernel filled may hold several frames (a
 * GSO super-frame taken whole): the port's split callback says where each
 * lies, each becomes a buffer of its own, and the slot goes back to the
 * kernel when the last of them is freed. A slot whose frames did not all
 * fit the caller's burst hands out the rest at the next take.
 *
 * One thread per port, no locks, no allocation after init.
 */
#ifndef PP_PACKET_RING_H
#define PP_PACKET_RING_H

#include <stdint.h>

#include "pp_port.h"

/* Where the kernel looks for a TX frame in a TPACKET_V2 slot, without
 * PACKET_TX_HAS_OFF: TPACKET2_HDRLEN - sizeof(struct sockaddr_ll). */
#define PP_PKT_TX_DATA_OFF 32u

/* What the caller holds: a pp_buf and where it lives. */
struct pp_pkt_buf {
	struct pp_buf pb; /* what the caller sees; must be first */
	uint32_t pos;	  /* TX: ring position held (unwrapped); RX: slot */
	uint8_t tx;	  /* 1 a TX descriptor, 0 an RX one */
	uint8_t out;	  /* 1 while the caller holds it */
};

#define PP_PKT_SEGS_MAX 64 /* frames a received slot may hold, at most */

/* Where the frames of a received slot lie: how many (0: drop the slot,
 * counted by the callback), each at seg[k] for seg_len[k] bytes, at most
 * max. f is the frame the kernel wrote, len its bytes. */
typedef unsigned (*pp_pkt_split_fn)(void *arg, uint8_t *f, uint32_t len, uint8_t **seg,
				    uint32_t *seg_len, unsigned max);
/* Write the room bytes before a frame of len bytes at room + tx->room. */
typedef void (*pp_pkt_hdr_fn)(void *arg, uint8_t *room, uint32_t len);

struct pp_pkt_rx {
	uint8_t **slot;		/* n slot starts (struct tpacket2_hdr) */
	struct pp_pkt_buf *buf; /* n * segs descriptors, slot i's from buf[i * segs] */
	uint16_t *refs;		/* per slot: its buffers the caller holds */
	uint32_t segs;		/* descriptors per slot (1 without split) */
	pp_pkt_split_fn split;	/* NULL: a slot is one frame */
	void *split_arg;
	uint32_t pend, pend_next, pend_end; /* slot pend's frames [next, end) to hand out */
	uint32_t n, mask;		    /* slots; n - 1 */
	uint32_t frame_size;		    /* bytes of a slot */
	uint32_t next;			    /* next position to look at */
	uint32_t nout;			    /* buffers the caller holds */
	uint64_t frames, bytes;		    /* handed out */
	uint64_t dropped;		    /* frames we threw away (truncated, our own) */
};

struct pp_pkt_tx {
	uint8_t **slot;		    /* n slot starts */
	struct pp_pkt_buf **holder; /* per slot in [sub, end): its buffer, NULL a hole */
	struct pp_pkt_buf *desc;    /* n descriptors */
	struct pp_pkt_buf **free;   /* descriptors not held */
	uint8_t *bounce;	    /* one frame, for moving a frame past held ones */
	uint32_t n, mask;	    /* slots; n - 1 */
	uint32_t cap;		    /* bytes a frame may have (mtu + 14) */
	uint32_t frame_size;	    /* bytes of a slot */
	uint32_t room;		    /* bytes before each frame the hook writes */
	pp_pkt_hdr_fn hdr;	    /* NULL: no room */
	void *hdr_arg;
	uint32_t nfree;		/* entries in free */
	uint32_t sub, end;	/* see the top of this file */
	uint32_t holes;		/* holes in [sub, end) */
	uint64_t frames, bytes; /* submitted */
	uint64_t failed;	/* frames taken and dropped (bad length) */
	uint64_t moved;		/* frames copied to keep the ring's order */
	uint64_t alloc_failed;	/* alloc calls that got fewer than asked */
};

/* Set up over n slots (a power of two, >= 2) starting at slot[0..n) of
 * frame_size bytes each; the kernel's statuses there must be KERNEL (RX)
 * and AVAILABLE (TX), as a new ring's are. TX frames hold up to cap bytes
 * (cap + PP_PKT_TX_DATA_OFF <= frame_size). The slot arrays become the
 * ring's. Cold path. Errors: -EINVAL, -ENOMEM. */
int pp_pkt_rx_init(struct pp_pkt_rx *rx, uint8_t **slot, uint32_t n, uint32_t frame_size);
void pp_pkt_rx_fini(struct pp_pkt_rx *rx);
int pp_pkt_tx_init(struct pp_pkt_tx *tx, uint8_t **slot, uint32_t n, uint32_t frame_size,
		   uint32_t cap);
void pp_pkt_tx_fini(struct pp_pkt_tx *tx);
/* Frames carry room bytes of headers before them, written by hdr at submit
 * (room + cap + PP_PKT_TX_DATA_OFF <= frame_size). Before the first alloc.
 * Errors: -EINVAL. */
int pp_pkt_tx_set_room(struct pp_pkt_tx *tx, uint32_t room, pp_pkt_hdr_fn hdr, void *arg);
/* Slots may hold up to segs frames, found by split. Before the first take.
 * Errors: -EINVAL, -ENOMEM. */
int pp_pkt_rx_set_split(struct pp_pkt_rx *rx, uint32_t segs, pp_pkt_split_fn split, void *arg);

/* Hand out up to n received frames, in ring order. */
unsigned pp_pkt_rx_take(struct pp_pkt_rx *rx, struct pp_buf **bufs, unsigned n);
/* Give an RX buffer's slot back to the kernel. */
void pp_pkt_rx_release(struct pp_pkt_rx *rx, struct pp_pkt_buf *d);

/* Hand out up to n empty TX buffers (descending ring order, see above). */
unsigned pp_pkt_tx_alloc(struct pp_pkt_tx *tx, struct pp_buf **bufs, unsigned n);
/* A TX buffer freed unsent: its slot can be handed out again. */
void pp_pkt_tx_release(struct pp_pkt_tx *tx, struct pp_pkt_buf *d);
/* Mark bufs[0..n) TP_STATUS_SEND_REQUEST in that order. Returns how many
 * were taken (the rest stay the caller's: only RX buffers when no TX slot is
 * left to copy them into). Frames of a bad length are taken and dropped
 * (failed). *marked says how many now wait for the kernel's sendto. */
unsigned pp_pkt_tx_submit(struct pp_pkt_tx *tx, struct pp_pkt_rx *rx, struct pp_buf **bufs,
			  unsigned n, unsigned *marked);
/* 1 when the last frame submitted still waits for the kernel. */
int pp_pkt_tx_waiting(const struct pp_pkt_tx *tx);

/* Free bufs[0..n), RX or TX, in any order. */
static inline void pp_pkt_free(struct pp_pkt_rx *rx, struct pp_pkt_tx *tx, struct pp_buf **bufs,
			       unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct pp_pkt_buf *d = (struct pp_pkt_buf *)bufs[i];
		if (d->tx)
			pp_pkt_tx_release(tx, d);
		else
			pp_pkt_rx_release(rx, d);
	}
}

#endif
