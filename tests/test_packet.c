/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * driver/packet: the slot bookkeeping on plain memory, with this file
 * playing the kernel (it fills RX slots in ring order and sends TX slots in
 * ring order, as af_packet does), and the port itself over the loopback
 * interface of a private network namespace when run as root.
 *
 * What must hold: RX slots freed in any order are never handed out twice
 * and the kernel gets each back; TX frames reach the kernel in the order
 * tx_burst was given them whatever order they were allocated in, with every
 * byte; buffers freed unsent, or moved to keep the ring's order, keep their
 * bytes and slots; the port's open errors name the reason.
 */
#include <errno.h>
#include <linux/capability.h>
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cu_main.h"
#include "packet/packet_ring.h"
#include "udp/udp_addr.h"
#include "pp_log.h"
#include "pp_port.h"

#define FRAME	 256 /* bytes of a fake slot */
#define TX_CAP	 200 /* bytes of a fake TX frame */
#define RX_MAC	 66  /* where the kernel puts an RX frame in a V2 slot */
#define MAX_SEEN 4096

/* --- a fake kernel ------------------------------------------------------------- */

struct fake {
	uint8_t *mem;	  /* n slots */
	uint8_t **slot;	  /* given to the ring */
	uint32_t n;	  /* slots */
	uint32_t head;	  /* the kernel's position */
	uint32_t dropped; /* RX: frames it found no slot for */
	/* TX: what it sent, in order */
	uint32_t nseen;
	uint32_t seen_len[MAX_SEEN];
	uint8_t seen_first[MAX_SEEN]; /* byte 14 of each frame: a sequence number */
};

static struct tpacket2_hdr *h2(uint8_t *s)
{
	return (struct tpacket2_hdr *)(void *)s;
}

static void fake_init(struct fake *f, uint32_t n)
{
	memset(f, 0, sizeof(*f));
	f->n = n;
	f->mem = calloc(n, FRAME);
	f->slot = malloc(n * sizeof(*f->slot));
	CU_ASSERT_FATAL(f->mem && f->slot);
	for (uint32_t i = 0; i < n; i++)
		f->slot[i] = f->mem + (size_t)i * FRAME;
}

/* The kernel receives a frame of len bytes whose byte 14 is seq. */
static int kput(struct fake *f, uint8_t seq, uint32_t len, uint8_t pkttype)
{
	uint8_t *s = f->slot[f->head % f->n];
	if (__atomic_load_n(&h2(s)->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_KERNEL) {
		f->dropped++;
		return 0;
	}
	struct tpacket2_hdr *h = h2(s);
	h->tp_mac = RX_MAC;
	h->tp_len = len;
	h->tp_snaplen = len > FRAME - RX_MAC ? FRAME - RX_MAC : len;
	h->tp_sec = 1;
	h->tp_nsec = seq;
	struct sockaddr_ll *sll = (struct sockaddr_ll *)(void *)(s + TPACKET_ALIGN(sizeof(*h)));
	sll->sll_pkttype = pkttype;
	memset(s + RX_MAC, 0xee, h->tp_snaplen);
	s[RX_MAC + PP_ETH_HLEN] = seq;
	__atomic_store_n(&h->tp_status, TP_STATUS_USER, __ATOMIC_RELEASE);
	f->head++;
	return 1;
}

/* The kernel's sendto(): every SEND_REQUEST slot from its head on, in order. */
static unsigned ksend(struct fake *f)
{
	unsigned n = 0;
	for (;;) {
		uint8_t *s = f->slot[f->head % f->n];
		if (__atomic_load_n(&h2(s)->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_SEND_REQUEST)
			return n;
		uint32_t len = h2(s)->tp_len;
		CU_ASSERT_FATAL(f->nseen < MAX_SEEN);
		f->seen_len[f->nseen] = len;
		f->seen_first[f->nseen++] = s[PP_PKT_TX_DATA_OFF + PP_ETH_HLEN];
		__atomic_store_n(&h2(s)->tp_status, TP_STATUS_AVAILABLE, __ATOMIC_RELEASE);
		f->head++;
		n++;
	}
}

static void fill(struct pp_buf *b, uint8_t seq, uint32_t len)
{
	memset(b->data, seq ^ 0x5a, len);
	b->data[PP_ETH_HLEN] = seq;
	b->len = len;
}

static int intact(const struct pp_buf *b, uint8_t seq, uint32_t len)
{
	if (b->len != len || b->data[PP_ETH_HLEN] != seq)
		return 0;
	for (uint32_t i = 0; i < len; i++)
		if (i != PP_ETH_HLEN && b->data[i] != (uint8_t)(seq ^ 0x5a))
			return 0;
	return 1;
}

static uint8_t rx_seq(const struct pp_buf *b)
{
	return b->data[PP_ETH_HLEN];
}

/* --- RX ------------------------------------------------------------------------ */

static void test_rx_in_order(void)
{
	struct fake k;
	struct pp_pkt_rx rx;
	fake_init(&k, 8);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_init(&rx, k.slot, 8, FRAME), 0);
	struct pp_buf *b[16];
	CU_ASSERT_EQUAL(pp_pkt_rx_take(&rx, b, 16), 0);
	for (uint8_t i = 0; i < 5; i++)
		CU_ASSERT(kput(&k, i, 60 + i, PACKET_HOST));
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_take(&rx, b, 16), 5);
	for (uint8_t i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(rx_seq(b[i]), i);
		CU_ASSERT_EQUAL(b[i]->len, 60u + i);
		CU_ASSERT_PTR_EQUAL(b[i]->data, k.slot[i] + RX_MAC);
		CU_ASSERT_EQUAL(b[i]->cap, FRAME - RX_MAC);
		CU_ASSERT_EQUAL(b[i]->ts_ns, 1000000000ull + i);
	}
	CU_ASSERT_EQUAL(rx.nout, 5);
	pp_pkt_free(&rx, NULL, b, 5);
	CU_ASSERT_EQUAL(rx.nout, 0);
	for (unsigned i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(h2(k.slot[i])->tp_status, TP_STATUS_KERNEL);
	/* round the ring twice more */
	for (uint8_t i = 5; i < 21; i++) {
		CU_ASSERT(kput(&k, i, 64, PACKET_HOST));
		CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_take(&rx, b, 16), 1);
		CU_ASSERT_EQUAL(rx_seq(b[0]), i);
		pp_pkt_free(&rx, NULL, b, 1);
	}
	CU_ASSERT_EQUAL(rx.frames, 21);
	CU_ASSERT_EQUAL(k.dropped, 0);
	pp_pkt_rx_fini(&rx);
	free(k.mem);
}

/* Slots freed out of order: the one still held stops both the kernel and
 * the consumer when they come round to it, and is never handed out twice. */
static void test_rx_out_of_order(void)
{
	struct fake k;
	struct pp_pkt_rx rx;
	fake_init(&k, 4);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_init(&rx, k.slot, 4, FRAME), 0);
	struct pp_buf *b[8], *held1, *held3;
	for (uint8_t i = 0; i < 4; i++)
		CU_ASSERT(kput(&k, i, 60, PACKET_HOST));
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_take(&rx, b, 8), 4);
	held1 = b[1];
	held3 = b[3];
	pp_pkt_free(&rx, NULL, &b[2], 1);
	pp_pkt_free(&rx, NULL, &b[0], 1);
	CU_ASSERT(kput(&k, 4, 60, PACKET_HOST));  /* into slot 0 */
	CU_ASSERT(!kput(&k, 5, 60, PACKET_HOST)); /* slot 1 is held: dropped */
	CU_ASSERT_EQUAL(k.dropped, 1);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_take(&rx, b, 8), 1);
	CU_ASSERT_EQUAL(rx_seq(b[0]), 4);
	/* slot 1 has TP_STATUS_USER still, from its frame: not again */
	CU_ASSERT_EQUAL(pp_pkt_rx_take(&rx, b + 1, 7), 0);
	CU_ASSERT_EQUAL(rx_seq(held1), 1);
	pp_pkt_free(&rx, NULL, &held1, 1);
	CU_ASSERT_EQUAL(pp_pkt_rx_take(&rx, b + 1, 7), 0); /* slot 1 is the kernel's now */
	CU_ASSERT(kput(&k, 6, 60, PACKET_HOST));	   /* slot 1 */
	CU_ASSERT(kput(&k, 7, 60, PACKET_HOST));	   /* slot 2 */
	CU_ASSERT(!kput(&k, 8, 60, PACKET_HOST));	   /* slot 3: held */
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_take(&rx, b + 1, 7), 2);
	CU_ASSERT_EQUAL(rx_seq(b[1]), 6);
	CU_ASSERT_EQUAL(rx_seq(b[2]), 7);
	CU_ASSERT_EQUAL(pp_pkt_rx_take(&rx, b + 3, 5), 0); /* slot 3 still held */
	CU_ASSERT_EQUAL(rx_seq(held3), 3);
	pp_pkt_free(&rx, NULL, b, 3);
	pp_pkt_free(&rx, NULL, &held3, 1);
	pp_pkt_free(&rx, NULL, &held3, 1); /* twice: ignored */
	CU_ASSERT_EQUAL(rx.nout, 0);
	pp_pkt_rx_fini(&rx);
	free(k.mem);
}

/* Random frees against a kernel that fills as it can: every frame the
 * kernel wrote comes out once, in order, and no slot is out twice. */
static void test_rx_random(void)
{
	enum { N = 16 };
	struct fake k;
	struct pp_pkt_rx rx;
	fake_init(&k, N);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_init(&rx, k.slot, N, FRAME), 0);
	struct pp_buf *held[N];
	unsigned nheld = 0;
	uint8_t put = 0, want = 0;
	uint64_t rng = 12345;
	unsigned long errors = 0;
	for (int step = 0; step < 200000; step++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		switch (rng % 3) {
		case 0:
			for (unsigned j = 0; j < (rng >> 8) % 5; j++)
				if (kput(&k, put, 60, PACKET_HOST))
					put++;
			break;
		case 1: {
			struct pp_buf *b[N];
			unsigned got = pp_pkt_rx_take(&rx, b, (unsigned)((rng >> 8) % N) + 1);
			for (unsigned j = 0; j < got; j++) {
				errors += rx_seq(b[j]) != want++;
				for (unsigned x = 0; x < nheld; x++)
					errors += held[x] == b[j];
				held[nheld++] = b[j];
			}
			errors += nheld > N;
			break;
		}
		default:
			for (unsigned j = 0; j < (rng >> 8) % 4 && nheld; j++) {
				unsigned x = (unsigned)(rng >> (12 + j * 4)) % nheld;
				pp_pkt_free(&rx, NULL, &held[x], 1);
				held[x] = held[--nheld];
			}
		}
		errors += rx.nout != nheld;
	}
	CU_ASSERT_EQUAL(errors, 0);
	CU_ASSERT(rx.frames > 10000);
	CU_ASSERT(k.dropped > 0); /* the ring did fill behind held slots */
	pp_pkt_free(&rx, NULL, held, nheld);
	pp_pkt_rx_fini(&rx);
	free(k.mem);
}

/* Frames cut short, runts and our own sends are not handed out; the
 * slot goes straight back. */
static void test_rx_bad_frames(void)
{
	struct fake k;
	struct pp_pkt_rx rx;
	fake_init(&k, 8);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_init(&rx, k.slot, 8, FRAME), 0);
	CU_ASSERT(kput(&k, 1, FRAME, PACKET_HOST)); /* longer than the slot holds */
	CU_ASSERT(kput(&k, 2, 10, PACKET_HOST));    /* shorter than a header */
	CU_ASSERT(kput(&k, 3, 60, PACKET_OUTGOING));
	CU_ASSERT(kput(&k, 4, 60, PACKET_BROADCAST));
	struct pp_buf *b[8];
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_take(&rx, b, 8), 1);
	CU_ASSERT_EQUAL(rx_seq(b[0]), 4);
	CU_ASSERT_EQUAL(rx.dropped, 2);
	for (unsigned i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(h2(k.slot[i])->tp_status, TP_STATUS_KERNEL);
	pp_pkt_free(&rx, NULL, b, 1);
	pp_pkt_rx_fini(&rx);
	free(k.mem);
}

/* --- TX ------------------------------------------------------------------------ */

static void tx_setup(struct fake *k, struct pp_pkt_tx *tx, uint32_t n)
{
	fake_init(k, n);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_tx_init(tx, k->slot, n, FRAME, TX_CAP), 0);
}

/* As the progress pass uses them: a stack of spares, the top filled and
 * sent first. Nothing is moved. */
static void test_tx_stack_order(void)
{
	struct fake k;
	struct pp_pkt_tx tx;
	tx_setup(&k, &tx, 64);
	struct pp_buf *spare[32];
	unsigned marked, ns = pp_pkt_tx_alloc(&tx, spare, 32);
	CU_ASSERT_EQUAL_FATAL(ns, 32);
	for (unsigned i = 0; i < 32; i++) /* descending ring order */
		CU_ASSERT_PTR_EQUAL(spare[i]->data, k.slot[31 - i] + PP_PKT_TX_DATA_OFF);
	CU_ASSERT_EQUAL(spare[0]->cap, TX_CAP);
	uint8_t seq = 0;
	for (unsigned round = 0; round < 20; round++) {
		struct pp_buf *q[8];
		unsigned nq = 0;
		for (unsigned j = 0; j < 1 + round % 8; j++) {
			if (!ns)
				ns = pp_pkt_tx_alloc(&tx, spare, 32);
			CU_ASSERT_FATAL(ns > 0);
			struct pp_buf *b = spare[--ns];
			fill(b, seq++, 60 + j);
			q[nq++] = b;
		}
		CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, NULL, q, nq, &marked), nq);
		CU_ASSERT_EQUAL(marked, nq);
		CU_ASSERT_TRUE(pp_pkt_tx_waiting(&tx));
		CU_ASSERT_EQUAL(ksend(&k), nq);
		CU_ASSERT_FALSE(pp_pkt_tx_waiting(&tx));
	}
	CU_ASSERT_EQUAL(tx.moved, 0);
	CU_ASSERT_EQUAL(k.nseen, seq);
	for (unsigned i = 0; i < k.nseen; i++)
		CU_ASSERT_EQUAL(k.seen_first[i], (uint8_t)i);
	pp_pkt_free(NULL, &tx, spare, ns);
	CU_ASSERT_EQUAL(tx.end, tx.sub);
	pp_pkt_tx_fini(&tx);
	free(k.mem);
}

/* A frame allocated after the spares (a HELLO) is sent before them: it
 * goes out first, and the spares, moved up one slot each, still go out in
 * ring order after it, without another move. */
static void test_tx_later_alloc_first(void)
{
	struct fake k;
	struct pp_pkt_tx tx;
	tx_setup(&k, &tx, 64);
	struct pp_buf *spare[32], *x;
	unsigned marked, ns = pp_pkt_tx_alloc(&tx, spare, 32);
	CU_ASSERT_EQUAL_FATAL(ns, 32);
	for (uint8_t i = 0; i < 3; i++) {
		fill(spare[ns - 1], i, 100);
		CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, NULL, &spare[--ns], 1, &marked), 1);
	}
	CU_ASSERT_EQUAL_FATAL(pp_pkt_tx_alloc(&tx, &x, 1), 1);
	CU_ASSERT_PTR_EQUAL(x->data, k.slot[32] + PP_PKT_TX_DATA_OFF);
	fill(x, 3, 90);
	CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, NULL, &x, 1, &marked), 1);
	CU_ASSERT_EQUAL(tx.moved, 1);
	for (uint8_t i = 4; i < 20; i++) {
		fill(spare[ns - 1], i, 80);
		CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, NULL, &spare[--ns], 1, &marked), 1);
	}
	CU_ASSERT_EQUAL(tx.moved, 1);
	CU_ASSERT_EQUAL(ksend(&k), 20);
	for (unsigned i = 0; i < 20; i++)
		CU_ASSERT_EQUAL(k.seen_first[i], i);
	CU_ASSERT_EQUAL(k.seen_len[3], 90);
	pp_pkt_free(NULL, &tx, spare, ns);
	CU_ASSERT_EQUAL(tx.end, tx.sub);
	pp_pkt_tx_fini(&tx);
	free(k.mem);
}

/* Filled first-to-last (bufs[0] first): the frames still reach the kernel
 * in the order sent, and a buffer written but not yet sent keeps its bytes
 * when it is moved. */
static void test_tx_fifo_order(void)
{
	struct fake k;
	struct pp_pkt_tx tx;
	tx_setup(&k, &tx, 16);
	struct pp_buf *b[8];
	unsigned marked;
	CU_ASSERT_EQUAL_FATAL(pp_pkt_tx_alloc(&tx, b, 8), 8);
	for (uint8_t i = 0; i < 8; i++)
		fill(b[i], i, 60 + i * 10);
	CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, NULL, b, 3, &marked), 3);
	for (uint8_t i = 3; i < 8; i++)
		CU_ASSERT(intact(b[i], i, 60 + i * 10u));
	CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, NULL, b + 3, 5, &marked), 5);
	CU_ASSERT(tx.moved > 0);
	CU_ASSERT_EQUAL(ksend(&k), 8);
	for (unsigned i = 0; i < 8; i++) {
		CU_ASSERT_EQUAL(k.seen_first[i], i);
		CU_ASSERT_EQUAL(k.seen_len[i], 60 + i * 10);
	}
	/* every byte arrived: look in the slots themselves */
	for (unsigned i = 0; i < 8; i++) {
		struct pp_buf v = {.data = k.slot[i] + PP_PKT_TX_DATA_OFF, .len = 60 + i * 10};
		CU_ASSERT(intact(&v, (uint8_t)i, 60 + i * 10));
	}
	CU_ASSERT_EQUAL(tx.end, tx.sub);
	pp_pkt_tx_fini(&tx);
	free(k.mem);
}

/* Freed unsent, in any order: holes are handed out again (lowest last,
 * like fresh slots), and the top of the held range goes back at once. */
static void test_tx_free_unsent(void)
{
	struct fake k;
	struct pp_pkt_tx tx;
	tx_setup(&k, &tx, 8);
	struct pp_buf *b[8], *c[8];
	unsigned marked;
	CU_ASSERT_EQUAL_FATAL(pp_pkt_tx_alloc(&tx, b, 4), 4); /* b[3] lowest: slot 0 */
	pp_pkt_free(NULL, &tx, &b[2], 1);		      /* slot 1 */
	pp_pkt_free(NULL, &tx, &b[1], 1);		      /* slot 2 */
	CU_ASSERT_EQUAL(tx.holes, 2);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_tx_alloc(&tx, c, 3), 3);
	CU_ASSERT_PTR_EQUAL(c[2]->data, k.slot[1] + PP_PKT_TX_DATA_OFF);
	CU_ASSERT_PTR_EQUAL(c[1]->data, k.slot[2] + PP_PKT_TX_DATA_OFF);
	CU_ASSERT_PTR_EQUAL(c[0]->data, k.slot[4] + PP_PKT_TX_DATA_OFF);
	CU_ASSERT_EQUAL(tx.holes, 0);
	pp_pkt_free(NULL, &tx, &c[0], 1); /* the top: back to fresh */
	CU_ASSERT_EQUAL(tx.end - tx.sub, 4);
	pp_pkt_free(NULL, &tx, &b[0], 1); /* slot 3, now the top */
	CU_ASSERT_EQUAL(tx.end - tx.sub, 3);
	/* a hole at sub: the frame sent fills it, no holder moves */
	pp_pkt_free(NULL, &tx, &b[3], 1); /* slot 0 */
	fill(c[1], 7, 70);
	CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, NULL, &c[1], 1, &marked), 1);
	CU_ASSERT_EQUAL(ksend(&k), 1);
	CU_ASSERT_EQUAL(k.seen_first[0], 7);
	CU_ASSERT_PTR_EQUAL(c[2]->data, k.slot[1] + PP_PKT_TX_DATA_OFF);
	pp_pkt_free(NULL, &tx, &c[2], 1);
	pp_pkt_free(NULL, &tx, &c[2], 1); /* twice: ignored */
	CU_ASSERT_EQUAL(tx.end, tx.sub);
	CU_ASSERT_EQUAL(tx.holes, 0);
	CU_ASSERT_EQUAL(tx.nfree, 8);
	CU_ASSERT_EQUAL(pp_pkt_tx_alloc(&tx, b, 8), 8);
	pp_pkt_free(NULL, &tx, b, 8);
	pp_pkt_tx_fini(&tx);
	free(k.mem);
}

/* Every slot out or with the kernel: alloc finds none, then finds them as
 * the kernel gives them back. Bad lengths are taken and dropped. */
static void test_tx_full_and_bad(void)
{
	struct fake k;
	struct pp_pkt_tx tx;
	tx_setup(&k, &tx, 4);
	struct pp_buf *b[4], *x;
	unsigned marked;
	CU_ASSERT_EQUAL_FATAL(pp_pkt_tx_alloc(&tx, b, 4), 4);
	CU_ASSERT_EQUAL(pp_pkt_tx_alloc(&tx, &x, 1), 0);
	CU_ASSERT_EQUAL(tx.alloc_failed, 1);
	for (unsigned i = 0; i < 4; i++)
		fill(b[3 - i], (uint8_t)i, 64);
	b[1]->len = 0;		/* slot 2: too short */
	b[0]->len = TX_CAP + 1; /* slot 3: too long */
	struct pp_buf *order[4] = {b[3], b[2], b[1], b[0]};
	CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, NULL, order, 4, &marked), 4);
	CU_ASSERT_EQUAL(marked, 2);
	CU_ASSERT_EQUAL(tx.failed, 2);
	CU_ASSERT_EQUAL(tx.end, tx.sub);		/* the dropped ones' slots are free again */
	CU_ASSERT_EQUAL(pp_pkt_tx_alloc(&tx, b, 4), 2); /* two still with the kernel */
	CU_ASSERT_EQUAL(ksend(&k), 2);
	CU_ASSERT_EQUAL(pp_pkt_tx_alloc(&tx, b + 2, 2), 2);
	pp_pkt_free(NULL, &tx, b, 4);
	CU_ASSERT_EQUAL(tx.frames, 2);
	pp_pkt_tx_fini(&tx);
	free(k.mem);
}

/* A received buffer sent back out (an echo in place): copied into a TX
 * slot, and its RX slot is the kernel's again. With no TX slot it stays
 * the caller's. */
static void test_tx_rx_buffer(void)
{
	struct fake kr, kt;
	struct pp_pkt_rx rx;
	struct pp_pkt_tx tx;
	fake_init(&kr, 4);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_init(&rx, kr.slot, 4, FRAME), 0);
	tx_setup(&kt, &tx, 2);
	struct pp_buf *r[4], *t[2];
	unsigned marked;
	for (uint8_t i = 0; i < 3; i++)
		CU_ASSERT(kput(&kr, 10 + i, 100, PACKET_HOST));
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_take(&rx, r, 4), 3);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_tx_alloc(&tx, t, 1), 1);
	r[0]->data[0] = 0x42;
	CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, &rx, r, 1, &marked), 1);
	CU_ASSERT_EQUAL(h2(kr.slot[0])->tp_status, TP_STATUS_KERNEL);
	CU_ASSERT_EQUAL(rx.nout, 2);
	/* the TX ring has one slot left, held by t[0]: r[1] cannot go now */
	CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, &rx, r + 1, 2, &marked), 0);
	CU_ASSERT_EQUAL(rx.nout, 2);
	CU_ASSERT_EQUAL(ksend(&kt), 1);
	CU_ASSERT_EQUAL(kt.seen_first[0], 10);
	CU_ASSERT_EQUAL(kt.slot[0][PP_PKT_TX_DATA_OFF], 0x42);
	CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, &rx, r + 1, 2, &marked), 1);
	CU_ASSERT_EQUAL(ksend(&kt), 1);
	CU_ASSERT_EQUAL(kt.seen_first[1], 11);
	pp_pkt_free(&rx, &tx, r + 2, 1);
	pp_pkt_free(&rx, &tx, t, 1);
	CU_ASSERT_EQUAL(rx.nout, 0);
	CU_ASSERT_EQUAL(tx.end, tx.sub);
	pp_pkt_rx_fini(&rx);
	pp_pkt_tx_fini(&tx);
	free(kr.mem);
	free(kt.mem);
}

/* Random allocations, fills, sends in random order, unsent frees, and a
 * kernel that sends late: the kernel sees exactly the frames submitted, in
 * submission order, every byte intact; a held buffer keeps its bytes. */
static void test_tx_random(void)
{
	enum { N = 32, HOLD = 64 };
	struct fake k;
	struct pp_pkt_tx tx;
	tx_setup(&k, &tx, N);
	struct {
		struct pp_buf *b;
		int filled;
		uint8_t seq;
		uint32_t len;
	} held[HOLD];
	unsigned nheld = 0, marked;
	uint8_t seq = 0;
	uint32_t want_len[256];
	uint64_t rng = 987654321, submitted = 0, checked = 0;
	unsigned long errors = 0;
	for (int step = 0; step < 100000; step++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		unsigned op = (unsigned)(rng % 5), r = (unsigned)(rng >> 8);
		if (op == 0 && nheld < HOLD - N) { /* alloc */
			struct pp_buf *b[N];
			unsigned got = pp_pkt_tx_alloc(&tx, b, 1 + r % 8);
			for (unsigned j = 0; j < got; j++) {
				for (unsigned x = 0; x < nheld; x++)
					errors += held[x].b == b[j];
				held[nheld].b = b[j];
				held[nheld++].filled = 0;
			}
		} else if (op == 1 && nheld) { /* fill one */
			unsigned x = r % nheld;
			held[x].seq = seq++;
			held[x].len = 14 + 1 + (r >> 8) % (TX_CAP - 14);
			fill(held[x].b, held[x].seq, held[x].len);
			held[x].filled = 1;
		} else if (op == 2) { /* send some filled ones, in random order */
			struct pp_buf *q[HOLD];
			unsigned nq = 0;
			for (unsigned x = 0; x < nheld && nq < 1 + r % 6;) {
				if (held[x].filled && ((r >> (x % 20)) & 1)) {
					errors += !intact(held[x].b, held[x].seq, held[x].len);
					want_len[held[x].seq] = held[x].len;
					q[nq++] = held[x].b;
					held[x] = held[--nheld];
				} else {
					x++;
				}
			}
			errors += pp_pkt_tx_submit(&tx, NULL, q, nq, &marked) != nq;
			errors += marked != nq;
			submitted += nq;
		} else if (op == 3 && nheld && r % 3 == 0) { /* free one unsent */
			unsigned x = r % nheld;
			pp_pkt_free(NULL, &tx, &held[x].b, 1);
			held[x] = held[--nheld];
		} else if (op == 4) { /* the kernel sends, now and then */
			unsigned before = k.nseen;
			if (r % 2)
				ksend(&k);
			for (unsigned i = before; i < k.nseen; i++) {
				errors += k.seen_len[i] != want_len[k.seen_first[i]];
				checked++;
			}
			k.nseen = 0;
		}
		if (step % 8 == 0) /* moves kept every held buffer's bytes */
			for (unsigned x = 0; x < nheld; x++)
				if (held[x].filled && !intact(held[x].b, held[x].seq, held[x].len))
					errors++;
		errors += tx.nfree + nheld != N;
	}
	CU_ASSERT_EQUAL(errors, 0);
	CU_ASSERT(submitted > 5000);
	CU_ASSERT(tx.moved > 0);
	CU_ASSERT(checked > 1000);
	for (unsigned x = 0; x < nheld; x++)
		pp_pkt_free(NULL, &tx, &held[x].b, 1);
	CU_ASSERT_EQUAL(tx.end, tx.sub);
	pp_pkt_tx_fini(&tx);
	free(k.mem);
}

/* Submission order, checked on its own: sequence numbers as sent. */
static void test_tx_random_order(void)
{
	enum { N = 16 };
	struct fake k;
	struct pp_pkt_tx tx;
	tx_setup(&k, &tx, N);
	struct pp_buf *held[N];
	unsigned nheld = 0, marked;
	uint8_t seq = 0, next = 0;
	uint64_t rng = 42;
	unsigned long errors = 0, sent = 0;
	for (int step = 0; step < 50000; step++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		unsigned r = (unsigned)(rng >> 4);
		if (nheld < N)
			nheld += pp_pkt_tx_alloc(&tx, held + nheld, 1 + r % (N - nheld));
		if (!nheld)
			goto send;
		/* send one held buffer picked at random */
		unsigned x = (r >> 6) % nheld;
		fill(held[x], seq++, 60);
		errors += pp_pkt_tx_submit(&tx, NULL, &held[x], 1, &marked) != 1;
		held[x] = held[--nheld];
		sent++;
	send:
		if ((r >> 12) % 3 == 0) {
			unsigned before = k.nseen;
			ksend(&k);
			for (unsigned i = before; i < k.nseen; i++)
				errors += k.seen_first[i] != next++;
			k.nseen = 0;
		}
	}
	CU_ASSERT_EQUAL(errors, 0);
	CU_ASSERT(sent > 10000);
	pp_pkt_free(NULL, &tx, held, nheld);
	pp_pkt_tx_fini(&tx);
	free(k.mem);
}

/* --- headers before TX frames, several frames in an RX slot ---------------- */

#define ROOM 24

static void room_hook(void *arg, uint8_t *room, uint32_t len)
{
	unsigned *calls = arg;
	(*calls)++;
	memset(room, 0xa0, ROOM);
	memcpy(room, &len, 4);
}

/* With room, each frame sits ROOM bytes into the kernel's, the hook writes
 * those bytes once the slot is final (after a move too), and the kernel's
 * length counts them. */
static void test_tx_room(void)
{
	struct fake k;
	struct pp_pkt_tx tx;
	unsigned calls = 0, marked;
	fake_init(&k, 8);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_tx_init(&tx, k.slot, 8, FRAME, TX_CAP), 0);
	CU_ASSERT_EQUAL(
	    pp_pkt_tx_set_room(&tx, FRAME - TX_CAP - PP_PKT_TX_DATA_OFF + 1, room_hook, &calls),
	    -EINVAL);
	CU_ASSERT_EQUAL(pp_pkt_tx_set_room(&tx, ROOM, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_tx_set_room(&tx, ROOM, room_hook, &calls), 0);
	struct pp_buf *b[4];
	CU_ASSERT_EQUAL_FATAL(pp_pkt_tx_alloc(&tx, b, 4), 4);
	CU_ASSERT_EQUAL(pp_pkt_tx_set_room(&tx, ROOM, room_hook, &calls), -EINVAL);
	for (unsigned i = 0; i < 4; i++) {
		CU_ASSERT_PTR_EQUAL(b[i]->data, k.slot[3 - i] + PP_PKT_TX_DATA_OFF + ROOM);
		CU_ASSERT_EQUAL(b[i]->cap, TX_CAP);
		fill(b[i], (uint8_t)i, 60 + 10 * i);
	}
	/* b[0] holds the highest slot: sent first, it moves to the lowest */
	CU_ASSERT_EQUAL(pp_pkt_tx_submit(&tx, NULL, b, 4, &marked), 4);
	CU_ASSERT_EQUAL(marked, 4);
	CU_ASSERT_EQUAL(calls, 4);
	CU_ASSERT(tx.moved > 0);
	for (unsigned i = 0; i < 4; i++) {
		uint8_t *s = k.slot[i];
		uint32_t len = 60 + 10 * i, got;
		CU_ASSERT_EQUAL(h2(s)->tp_status, TP_STATUS_SEND_REQUEST);
		CU_ASSERT_EQUAL(h2(s)->tp_len, len + ROOM);
		memcpy(&got, s + PP_PKT_TX_DATA_OFF, 4);
		CU_ASSERT_EQUAL(got, len);
		CU_ASSERT_EQUAL(s[PP_PKT_TX_DATA_OFF + ROOM - 1], 0xa0);
		struct pp_buf v = {.data = s + PP_PKT_TX_DATA_OFF + ROOM, .len = len};
		CU_ASSERT(intact(&v, (uint8_t)i, len));
	}
	pp_pkt_tx_fini(&tx);
	free(k.mem);
}

struct splitter {
	uint32_t size; /* each frame's bytes */
	unsigned calls;
};

/* Frames of sp->size bytes one after another; a slot starting 0xdd holds
 * none that passes. */
static unsigned split_fixed(void *arg, uint8_t *f, uint32_t len, uint8_t **seg, uint32_t *seg_len,
			    unsigned max)
{
	struct splitter *sp = arg;
	unsigned k = 0;
	sp->calls++;
	if (f[0] == 0xdd)
		return 0;
	for (uint32_t off = 0; off < len && k < max; off += sp->size) {
		seg[k] = f + off;
		seg_len[k++] = len - off < sp->size ? len - off : sp->size;
	}
	return k;
}

/* A slot of several frames: each handed out in place, those past the
 * caller's burst at the next take, and the slot the kernel's again only
 * when the last of them is freed, in whatever order. */
static void test_rx_split(void)
{
	struct fake k;
	struct pp_pkt_rx rx;
	struct splitter sp = {.size = 30};
	fake_init(&k, 4);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_init(&rx, k.slot, 4, FRAME), 0);
	CU_ASSERT_EQUAL(pp_pkt_rx_set_split(&rx, 0, split_fixed, &sp), -EINVAL);
	CU_ASSERT_EQUAL(pp_pkt_rx_set_split(&rx, PP_PKT_SEGS_MAX + 1, split_fixed, &sp), -EINVAL);
	CU_ASSERT_EQUAL(pp_pkt_rx_set_split(&rx, 4, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_set_split(&rx, 8, split_fixed, &sp), 0);
	CU_ASSERT(kput(&k, 1, 100, PACKET_HOST)); /* 30, 30, 30, 10 */
	CU_ASSERT(kput(&k, 2, 60, PACKET_HOST));  /* 30, 30 */
	struct pp_buf *b[8];
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_take(&rx, b, 3), 3);
	for (unsigned i = 0; i < 3; i++) {
		CU_ASSERT_PTR_EQUAL(b[i]->data, k.slot[0] + RX_MAC + 30 * i);
		CU_ASSERT_EQUAL(b[i]->len, 30);
		CU_ASSERT_EQUAL(b[i]->cap, 30);
	}
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_take(&rx, b + 3, 8), 3);
	CU_ASSERT_PTR_EQUAL(b[3]->data, k.slot[0] + RX_MAC + 90);
	CU_ASSERT_EQUAL(b[3]->len, 10);
	CU_ASSERT_PTR_EQUAL(b[4]->data, k.slot[1] + RX_MAC);
	CU_ASSERT_PTR_EQUAL(b[5]->data, k.slot[1] + RX_MAC + 30);
	CU_ASSERT_EQUAL(rx.nout, 6);
	CU_ASSERT_EQUAL(sp.calls, 2);
	/* slot 1's frames first, then slot 0's, the last of them last */
	pp_pkt_free(&rx, NULL, b + 4, 2);
	CU_ASSERT_EQUAL(h2(k.slot[1])->tp_status, TP_STATUS_KERNEL);
	pp_pkt_free(&rx, NULL, b + 1, 3);
	pp_pkt_free(&rx, NULL, b + 1, 1); /* twice: no effect */
	CU_ASSERT_EQUAL(h2(k.slot[0])->tp_status & TP_STATUS_USER, TP_STATUS_USER);
	CU_ASSERT_EQUAL(pp_pkt_rx_take(&rx, b + 1, 8), 0);
	pp_pkt_free(&rx, NULL, b, 1);
	CU_ASSERT_EQUAL(h2(k.slot[0])->tp_status, TP_STATUS_KERNEL);
	CU_ASSERT_EQUAL(rx.nout, 0);
	/* a slot of nothing that passes goes straight back */
	CU_ASSERT(kput(&k, 3, 50, PACKET_HOST));
	k.slot[2][RX_MAC] = 0xdd;
	CU_ASSERT_EQUAL(pp_pkt_rx_take(&rx, b, 8), 0);
	CU_ASSERT_EQUAL(h2(k.slot[2])->tp_status, TP_STATUS_KERNEL);
	/* the ring goes round: slot 0 filled again, whole */
	CU_ASSERT(kput(&k, 4, 30, PACKET_HOST));
	CU_ASSERT(kput(&k, 5, 40, PACKET_HOST));
	CU_ASSERT_EQUAL_FATAL(pp_pkt_rx_take(&rx, b, 8), 3);
	CU_ASSERT_EQUAL(rx_seq(b[0]), 4);
	CU_ASSERT_PTR_EQUAL(b[1]->data, k.slot[0] + RX_MAC);
	CU_ASSERT_EQUAL(b[2]->len, 10);
	pp_pkt_free(&rx, NULL, b, 3);
	CU_ASSERT_EQUAL(rx.frames, 9);
	CU_ASSERT_EQUAL(k.dropped, 0);
	pp_pkt_rx_fini(&rx);
	free(k.mem);
}

static void test_init_bad(void)
{
	struct pp_pkt_rx rx;
	struct pp_pkt_tx tx;
	uint8_t *s[4] = {0};
	CU_ASSERT_EQUAL(pp_pkt_rx_init(&rx, s, 3, FRAME), -EINVAL);
	CU_ASSERT_EQUAL(pp_pkt_rx_init(&rx, s, 1, FRAME), -EINVAL);
	CU_ASSERT_EQUAL(pp_pkt_rx_init(&rx, NULL, 4, FRAME), -EINVAL);
	CU_ASSERT_EQUAL(pp_pkt_tx_init(&tx, s, 4, FRAME, FRAME), -EINVAL);
	CU_ASSERT_EQUAL(pp_pkt_tx_init(&tx, s, 4, FRAME, 10), -EINVAL);
	CU_ASSERT_EQUAL(pp_pkt_tx_init(&tx, s, 6, FRAME, TX_CAP), -EINVAL);
}

/* --- the port ------------------------------------------------------------------ */

static int setup(void)
{
	pp_log_set_level("off"); /* the error paths below log on purpose */
	return 0;
}

static void test_open_bad(void)
{
	struct pp_port *p = (struct pp_port *)0x1;
	CU_ASSERT_EQUAL(pp_port_open(&p, "packet:", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "packet:nonexistent0", NULL), -ENODEV);
	CU_ASSERT_EQUAL(pp_port_open(&p, "packet:an-interface-name-far-too-long-for-linux", NULL),
			-EINVAL);
	CU_ASSERT_PTR_EQUAL(p, (struct pp_port *)0x1);
	struct pp_port_backend b;
	int found = 0;
	for (size_t i = 0; pp_port_backend(i, &b) == 0; i++)
		if (strcmp(b.prefix, "packet:") == 0)
			found = b.built && strcmp(b.name, "packet") == 0;
	CU_ASSERT(found);
}

/* Without CAP_NET_RAW the open fails with -EPERM (a child drops it). */
static void test_open_no_privilege(void)
{
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct hd = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct d[2];
		if (syscall(SYS_capget, &hd, d) != 0)
			_exit(2);
		d[CAP_NET_RAW / 32].effective &= ~(1u << (CAP_NET_RAW % 32));
		if (syscall(SYS_capset, &hd, d) != 0)
			_exit(3);
		struct pp_port *p;
		_exit(pp_port_open(&p, "packet:lo", NULL) == -EPERM ? 0 : 1);
	}
	int st;
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int in_netns; /* root, in a network namespace of our own */

static int lo_set(unsigned long req, struct ifreq *ifr)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "lo");
	int rc = ioctl(fd, req, ifr) == 0 ? 0 : -errno;
	close(fd);
	return rc;
}

static int lo_mtu(int mtu)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_mtu = mtu;
	return lo_set(SIOCSIFMTU, &ifr);
}

static int lo_up(int up)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = up ? IFF_UP | IFF_LOOPBACK | IFF_RUNNING : IFF_LOOPBACK;
	return lo_set(SIOCSIFFLAGS, &ifr);
}

static int setup_netns(void)
{
	pp_log_set_level("off");
	if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) {
		printf("\n  (not root: the loopback tests are skipped)\n");
		return 0;
	}
	in_netns = lo_mtu(1500) == 0 && lo_up(1) == 0;
	return 0;
}

static void test_open_down_small_mtu(void)
{
	if (!in_netns)
		return;
	struct pp_port *p = (struct pp_port *)0x1;
	CU_ASSERT_EQUAL(lo_up(0), 0);
	CU_ASSERT_EQUAL(pp_port_open(&p, "packet:lo", NULL), -ENETDOWN);
	CU_ASSERT_EQUAL(lo_up(1), 0);
	CU_ASSERT_EQUAL(lo_mtu(500), 0);
	CU_ASSERT_EQUAL(pp_port_open(&p, "packet:lo", NULL), -EMSGSIZE);
	CU_ASSERT_EQUAL(lo_mtu(1500), 0);
	CU_ASSERT_PTR_EQUAL(p, (struct pp_port *)0x1);
}

static void frame(struct pp_buf *b, uint32_t seq, uint32_t len)
{
	memset(b->data, 0, 12); /* lo: every MAC is zero */
	b->data[12] = PP_ETH_TYPE_PP >> 8;
	b->data[13] = PP_ETH_TYPE_PP & 0xff;
	for (uint32_t i = 14; i < len; i++)
		b->data[i] = (uint8_t)(seq * 7 + i);
	memcpy(b->data + 14, &seq, 4);
	b->len = len;
}

static int frame_ok(const struct pp_buf *b, uint32_t seq, uint32_t len)
{
	uint32_t s;
	memcpy(&s, b->data + 14, 4);
	if (b->len != len || s != seq || b->data[12] != (PP_ETH_TYPE_PP >> 8))
		return 0;
	for (uint32_t i = 18; i < len; i++)
		if (b->data[i] != (uint8_t)(seq * 7 + i))
			return 0;
	return 1;
}

/* Receive up to want frames, polling a while. */
static unsigned rx_some(struct pp_port *p, struct pp_buf **r, unsigned want)
{
	unsigned got = 0;
	for (int spin = 0; spin < 2000000 && got < want; spin++)
		got += pp_port_rx_burst(p, 0, r + got, want - got);
	return got;
}

/* Frames through the real rings on lo: sent in bursts from a stack of
 * spares, received in order and intact, freed out of order; an echo of a
 * received buffer; info and counters; a capture of what went through. */
static void test_loopback(void)
{
	if (!in_netns)
		return;
	char cap_path[] = "/tmp/pp-test-packet-XXXXXX";
	int cfd = mkstemp(cap_path);
	CU_ASSERT_FATAL(cfd >= 0);
	close(cfd);
	struct pp_port_conf conf = {
	    .nb_queues = 1, .rx_depth = 64, .tx_depth = 64, .pcap_dump = cap_path};
	struct pp_port *p;
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&p, "packet:lo", &conf), 0);
	struct pp_port_info in;
	CU_ASSERT_EQUAL(pp_port_info(p, &in), 0);
	CU_ASSERT_STRING_EQUAL(in.driver, "packet");
	CU_ASSERT_EQUAL(in.mtu, 1500);
	CU_ASSERT_EQUAL(in.buf_cap, 1514);
	CU_ASSERT_EQUAL(in.nb_queues, 1);
	CU_ASSERT_EQUAL(in.link_up, 1);

	struct pp_buf *spare[32], *r[64];
	unsigned ns = 0;
	uint32_t seq = 0, rseq = 0;
	unsigned long bad = 0;
	for (int round = 0; round < 200; round++) {
		struct pp_buf *q[24];
		unsigned nq = 0, want = 1 + round % 24;
		while (nq < want) {
			if (!ns)
				ns = pp_port_alloc(p, spare, 32);
			CU_ASSERT_FATAL(ns > 0);
			struct pp_buf *b = spare[--ns];
			CU_ASSERT(b->cap >= 1514);
			frame(b, seq, 60 + (seq * 37) % 1455);
			seq++;
			q[nq++] = b;
		}
		CU_ASSERT_EQUAL_FATAL(pp_port_tx_burst(p, 0, q, nq), nq);
		unsigned got = rx_some(p, r, nq);
		CU_ASSERT_EQUAL_FATAL(got, nq);
		for (unsigned i = 0; i < got; i++, rseq++)
			bad += !frame_ok(r[i], rseq, 60 + (rseq * 37) % 1455);
		/* free them back to front, the odd ones first */
		for (unsigned i = got; i-- > 0;)
			if (i % 2)
				pp_port_free(p, &r[i], 1);
		for (unsigned i = got; i-- > 0;)
			if (!(i % 2))
				pp_port_free(p, &r[i], 1);
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* a received buffer sent back out as it is */
	struct pp_buf *b;
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p, &b, 1), 1);
	frame(b, 7777, 300);
	CU_ASSERT_EQUAL(pp_port_tx_burst(p, 0, &b, 1), 1);
	CU_ASSERT_EQUAL_FATAL(rx_some(p, r, 1), 1);
	CU_ASSERT_EQUAL(pp_port_tx_burst(p, 0, r, 1), 1);
	CU_ASSERT_EQUAL_FATAL(rx_some(p, r, 1), 1);
	CU_ASSERT(frame_ok(r[0], 7777, 300));
	pp_port_free(p, r, 1);
	/* a frame too long for the MTU is taken and dropped, not sent */
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p, &b, 1), 1);
	frame(b, 1, 200);
	b->len = 1515;
	CU_ASSERT_EQUAL(pp_port_tx_burst(p, 0, &b, 1), 1);
	CU_ASSERT_EQUAL(rx_some(p, r, 1), 0);

	struct pp_port_stats st;
	CU_ASSERT_EQUAL(pp_port_stats(p, &st), 0);
	CU_ASSERT_EQUAL(st.tx_frames, seq + 2);
	CU_ASSERT_EQUAL(st.rx_frames, seq + 2);
	CU_ASSERT_EQUAL(st.tx_failed, 1);
	CU_ASSERT_EQUAL(st.rx_dropped, 0);
	pp_port_free(p, spare, ns);
	pp_port_close(p);

	/* the capture holds each frame received (seq + 2) and each frame the
	 * port took to send (seq + 3: the one too long too) */
	FILE *f = fopen(cap_path, "rb");
	CU_ASSERT_FATAL(f != NULL);
	uint8_t gh[24];
	unsigned recs = 0;
	CU_ASSERT_EQUAL(fread(gh, 1, sizeof(gh), f), sizeof(gh));
	for (;;) {
		uint32_t rh[4];
		if (fread(rh, 1, sizeof(rh), f) != sizeof(rh))
			break;
		if (fseek(f, rh[2], SEEK_CUR) != 0)
			break;
		recs++;
	}
	fclose(f);
	unlink(cap_path);
	CU_ASSERT_EQUAL(recs, 2 * seq + 5);
}

/* Two ports on one interface: each gets every frame once (lo brings what
 * it sends back in, to the sender too; no second copy from the way out).
 * Both close cleanly with buffers still out. */
static void test_two_ports(void)
{
	if (!in_netns)
		return;
	struct pp_port_conf conf = {.nb_queues = 1, .rx_depth = 16, .tx_depth = 16};
	struct pp_port *a, *b;
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&a, "packet:lo", &conf), 0);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&b, "packet:lo", &conf), 0);
	struct pp_buf *t[4], *r[8];
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(a, t, 4), 4);
	for (unsigned i = 0; i < 4; i++)
		frame(t[3 - i], i, 100);
	struct pp_buf *q[4] = {t[3], t[2], t[1], t[0]};
	CU_ASSERT_EQUAL(pp_port_tx_burst(a, 0, q, 4), 4);
	CU_ASSERT_EQUAL_FATAL(rx_some(b, r, 4), 4);
	for (unsigned i = 0; i < 4; i++)
		CU_ASSERT(frame_ok(r[i], i, 100));
	/* a gets them too: lo delivers each frame sent back in */
	CU_ASSERT_EQUAL_FATAL(rx_some(a, r + 4, 4), 4);
	CU_ASSERT(frame_ok(r[4], 0, 100));
	CU_ASSERT_EQUAL(rx_some(a, r, 1), 0);
	CU_ASSERT_EQUAL(rx_some(b, r, 1), 0);
	CU_ASSERT_EQUAL(pp_port_alloc(b, t, 2), 2); /* held at close */
	pp_port_close(a);
	pp_port_close(b);
}

/* --- frame=udp on lo: the udp: port's wire format through the rings --------- */

static void lo_addr(struct sockaddr_in *a, unsigned port)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

/* An inner frame from UDP port `from` to `to` on 127.0.0.1, seq in it. */
static void uframe(struct pp_buf *b, unsigned from, unsigned to, uint32_t seq, uint32_t len)
{
	struct sockaddr_in a;
	frame(b, seq, len);
	lo_addr(&a, to);
	pp_udp_mac_encode(&a, b->data);
	lo_addr(&a, from);
	pp_udp_mac_encode(&a, b->data + 6);
}

static int uframe_ok(const struct pp_buf *b, unsigned from, uint32_t seq, uint32_t len)
{
	struct sockaddr_in a;
	uint8_t mac[6];
	lo_addr(&a, from);
	pp_udp_mac_encode(&a, mac);
	return memcmp(b->data + 6, mac, 6) == 0 && b->len == len && frame_ok(b, seq, len);
}

/* Counter `field` of protocol `proto` ("Ip:", "Udp:") in this namespace
 * (/proc/net/snmp). */
static long snmp(const char *proto, const char *field)
{
	FILE *f = fopen("/proc/net/snmp", "r");
	char head[1024], vals[1024];
	long out = -1;
	while (f && fgets(head, sizeof(head), f) && fgets(vals, sizeof(vals), f)) {
		if (strncmp(head, proto, strlen(proto)) != 0)
			continue;
		char *hs, *vs, *h = strtok_r(head, " \n", &hs), *v = strtok_r(vals, " \n", &vs);
		while (h && v && strcmp(h, field) != 0) {
			h = strtok_r(NULL, " \n", &hs);
			v = strtok_r(NULL, " \n", &vs);
		}
		if (h && v)
			out = atol(v);
		break;
	}
	if (f)
		fclose(f);
	return out;
}

/* UDP datagrams this namespace's sockets sent: the frames that went
 * through a socket and not through the TX ring. */
static long udp_out(void)
{
	return snmp("Udp:", "OutDatagrams");
}

/* Send k frames of len bytes from p (its UDP port from) to port to, seq on. */
static void usend(struct pp_port *p, unsigned from, unsigned to, uint32_t *seq, unsigned k,
		  uint32_t len)
{
	struct pp_buf *b[64];
	CU_ASSERT_FATAL(k <= 64);
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p, b, k), k);
	for (unsigned i = 0; i < k; i++)
		uframe(b[i], from, to, (*seq)++, i + 1 < k ? len : len / 2 + 14);
	CU_ASSERT_EQUAL(pp_port_tx_burst(p, 0, b, k), k);
}

static unsigned urecv(struct pp_port *p, unsigned from, uint32_t *seq, unsigned k, uint32_t len,
		      int whole)
{
	struct pp_buf *r[64];
	unsigned got = rx_some(p, r, k), bad = 0;
	for (unsigned i = 0; i < got; i++) {
		uint32_t l = i + 1 < k ? len : len / 2 + 14;
		bad += !uframe_ok(r[i], from, (*seq)++, l);
		/* a GSO message taken whole: its frames lie one after another */
		if (whole && i)
			bad += r[i]->data != r[i - 1]->data + len;
	}
	pp_port_free(p, r, got);
	CU_ASSERT_EQUAL(bad, 0);
	return got;
}

/* k frames of len bytes from port p (UDP port from) to port q (UDP port
 * to), all received intact in order (whole: as one GSO message). */
static void xfer(struct pp_port *p, unsigned from, struct pp_port *q, unsigned to, uint32_t *sseq,
		 uint32_t *rseq, unsigned k, uint32_t len, int whole)
{
	usend(p, from, to, sseq, k, len);
	CU_ASSERT_EQUAL(urecv(q, from, rseq, k, len, whole), k);
}

/* packet:lo,frame=udp against a udp: port: the same wire format both ways;
 * frames to a peer whose next hop is unknown go through the socket, and
 * through the TX ring once the peer has been heard; a GSO message comes in
 * whole and its frames are handed out in place; what is not ours is not
 * seen, what is spoofed is dropped and counted; bad options are refused. */
static void test_frame_udp(void)
{
	if (!in_netns)
		return;
	/* A frame written to lo has no route attached, as one from another
	 * host has none: 127.0.0.1 must be routable, and a local source
	 * accepted, for the kernel to receive it. */
	const char *conf_lo[] = {"/proc/sys/net/ipv4/conf/lo/route_localnet",
				 "/proc/sys/net/ipv4/conf/lo/accept_local"};
	for (int i = 0; i < 2; i++) {
		FILE *sc = fopen(conf_lo[i], "w");
		CU_ASSERT_FATAL(sc != NULL);
		fputs("1\n", sc);
		fclose(sc);
	}
	struct pp_port_conf conf = {.nb_queues = 1, .rx_depth = 64, .tx_depth = 64};
	struct pp_port *a = NULL, *u = NULL, *x = (struct pp_port *)0x1;
	CU_ASSERT_EQUAL(pp_port_open(&x, "packet:lo,frame=ip", &conf), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&x, "packet:lo,port=50000", &conf), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&x, "packet:lo,frame=udp,port=80", &conf), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&x, "packet:lo,frame=udp,mtu=1000", &conf), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&x, "packet:lo,addr=127.0.0.1", &conf), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&x, "packet:lo,frame=udp,addr=10.9.9.9", &conf), -ENODEV);
	CU_ASSERT_PTR_EQUAL(x, (struct pp_port *)0x1);
	/* addr=: the port's address given; port 0: a free one of the range */
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&x, "packet:lo,frame=udp,addr=127.0.0.1,port=0", &conf),
			      0);
	struct pp_port_info ix;
	CU_ASSERT_EQUAL(pp_port_info(x, &ix), 0);
	CU_ASSERT_EQUAL(ix.mac[0] & 0x03, 0x02);
	CU_ASSERT_EQUAL(ix.mac[2], 127);
	CU_ASSERT_EQUAL(ix.mac[5], 1);
	pp_port_close(x);
	CU_ASSERT_EQUAL_FATAL(
	    pp_port_open(&a, "packet:lo,frame=udp,port=50001,peers=127.0.0.1:50002", &conf), 0);
	CU_ASSERT_EQUAL(pp_port_open(&x, "packet:lo,frame=udp,port=50001", &conf), -EADDRINUSE);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&u, "udp:127.0.0.1:50002,peers=127.0.0.1:50001", &conf),
			      0);
	struct pp_port_info ia, iu;
	CU_ASSERT_EQUAL(pp_port_info(a, &ia), 0);
	CU_ASSERT_EQUAL(pp_port_info(u, &iu), 0);
	struct sockaddr_in sa;
	uint8_t mac[6];
	lo_addr(&sa, 50001);
	pp_udp_mac_encode(&sa, mac);
	CU_ASSERT_EQUAL(memcmp(ia.mac, mac, 6), 0);
	CU_ASSERT_STRING_EQUAL(ia.driver, "packet");
	CU_ASSERT_EQUAL(ia.mtu, iu.mtu); /* the same frames fit both */
	CU_ASSERT_EQUAL(ia.buf_cap, iu.buf_cap);

	uint32_t sa_seq = 0, ra_seq = 0, su_seq = 1000, ru_seq = 1000;
	/* a's peer not heard yet: through the socket */
	long out0 = udp_out();
	xfer(a, 50001, u, 50002, &sa_seq, &ra_seq, 3, 300, 0);
	CU_ASSERT(udp_out() - out0 >= 1);
	/* u to a: single frames, then a run u sends as one GSO message */
	xfer(u, 50002, a, 50001, &su_seq, &ru_seq, 1, 100, 0);
	xfer(u, 50002, a, 50001, &su_seq, &ru_seq, 12, 1000, 1);
	/* heard: single frames and short runs through the ring, no datagram
	 * of a socket; a long run through the socket as one message */
	out0 = udp_out();
	for (int i = 0; i < 20; i++) {
		xfer(a, 50001, u, 50002, &sa_seq, &ra_seq, 1 + i % 3, 200 + 50 * i, 0);
	}
	/* a run of more than 8 KiB of short frames (a window of small
	 * messages) stays on the ring too */
	xfer(a, 50001, u, 50002, &sa_seq, &ra_seq, 14, 700, 0);
	CU_ASSERT_EQUAL(udp_out() - out0, 0);
	xfer(a, 50001, u, 50002, &sa_seq, &ra_seq, 20, 1400, 0);
	CU_ASSERT(udp_out() - out0 >= 1);
	/* a broadcast goes to the peer list */
	struct pp_buf *b, *r[4];
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(a, &b, 1), 1);
	uframe(b, 50001, 0, 77, 90);
	memset(b->data, 0xff, 6);
	CU_ASSERT_EQUAL(pp_port_tx_burst(a, 0, &b, 1), 1);
	CU_ASSERT_EQUAL_FATAL(rx_some(u, r, 1), 1);
	CU_ASSERT(uframe_ok(r[0], 50001, 77, 90));
	pp_port_free(u, r, 1);

	/* a datagram claiming u's address from another port: dropped and
	 * counted; one to another UDP port: never seen */
	struct pp_port_stats st0, st1;
	CU_ASSERT_EQUAL(pp_port_stats(a, &st0), 0);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in me, to;
	lo_addr(&me, 50003);
	CU_ASSERT_EQUAL_FATAL(bind(s, (struct sockaddr *)&me, sizeof(me)), 0);
	uint8_t dg[200];
	struct pp_buf fake = {.data = dg, .cap = sizeof(dg)};
	uframe(&fake, 50002, 50001, 5, sizeof(dg));
	lo_addr(&to, 50001);
	CU_ASSERT_EQUAL(sendto(s, dg, sizeof(dg), 0, (struct sockaddr *)&to, sizeof(to)),
			(ssize_t)sizeof(dg));
	lo_addr(&to, 50009);
	uframe(&fake, 50003, 50009, 6, sizeof(dg));
	CU_ASSERT_EQUAL(sendto(s, dg, sizeof(dg), 0, (struct sockaddr *)&to, sizeof(to)),
			(ssize_t)sizeof(dg));
	close(s);
	CU_ASSERT_EQUAL(rx_some(a, r, 1), 0);
	CU_ASSERT_EQUAL(pp_port_stats(a, &st1), 0);
	CU_ASSERT_EQUAL(st1.rx_dropped - st0.rx_dropped, 1);
	CU_ASSERT_EQUAL(st1.rx_frames, st0.rx_frames);
	CU_ASSERT_EQUAL(st1.tx_frames, sa_seq + 1);
	pp_port_close(u);
	pp_port_close(a);

	/* link=raw: to a peer on the link (127.0.0.0/8 is lo's), once heard,
	 * the same headers under EtherType 0x88B6: the kernel's IPv4 stack
	 * never sees them; a long run still goes as one UDP GSO message. */
	struct pp_port *p5, *p6;
	CU_ASSERT_EQUAL(pp_port_open(&x, "packet:lo,link=raw", &conf), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&x, "packet:lo,frame=udp,link=eth", &conf), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(
	    pp_port_open(&p5, "packet:lo,frame=udp,link=raw,port=50005,peers=127.0.0.1:50006",
			 &conf),
	    0);
	CU_ASSERT_EQUAL_FATAL(
	    pp_port_open(&p6, "packet:lo,frame=udp,link=raw,port=50006,peers=127.0.0.1:50005",
			 &conf),
	    0);
	uint32_t s5 = 0, r5 = 0, s6 = 500, r6 = 500;
	xfer(p5, 50005, p6, 50006, &s5, &r5, 1, 100, 0);
	xfer(p6, 50006, p5, 50005, &s6, &r6, 1, 100, 0);
	long ip0 = snmp("Ip:", "InReceives");
	out0 = udp_out();
	for (int i = 0; i < 10; i++) {
		xfer(p5, 50005, p6, 50006, &s5, &r5, 1 + i % 2, 300 + 100 * i, 0);
		xfer(p6, 50006, p5, 50005, &s6, &r6, 1, 200, 0);
	}
	CU_ASSERT(ip0 >= 0);
	CU_ASSERT_EQUAL(snmp("Ip:", "InReceives") - ip0, 0);
	CU_ASSERT_EQUAL(udp_out() - out0, 0);
	xfer(p5, 50005, p6, 50006, &s5, &r5, 16, 1400, 1);
	CU_ASSERT(snmp("Ip:", "InReceives") - ip0 >= 1);
	pp_port_close(p6);
	pp_port_close(p5);
}

static CU_TestInfo ring_tests[] = {
    {"init: bad arguments", test_init_bad},
    {"rx: in order, round the ring", test_rx_in_order},
    {"rx: out-of-order frees, a held slot never twice", test_rx_out_of_order},
    {"rx: random frees against a filling kernel", test_rx_random},
    {"rx: cut short, runts, our own sends", test_rx_bad_frames},
    {"tx: a stack of spares goes out in ring order", test_tx_stack_order},
    {"tx: a later allocation sent first", test_tx_later_alloc_first},
    {"tx: filled first to last", test_tx_fifo_order},
    {"tx: freed unsent, holes reused", test_tx_free_unsent},
    {"tx: ring full, bad lengths", test_tx_full_and_bad},
    {"tx: a received buffer sent back", test_tx_rx_buffer},
    {"tx: random alloc, fill, send, free; bytes kept", test_tx_random},
    {"tx: random order, the kernel sees submission order", test_tx_random_order},
    {"tx: headers written before each frame at submit", test_tx_room},
    {"rx: a slot of several frames, handed out in place", test_rx_split},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo open_tests[] = {
    {"bad names, missing interface, the backend table", test_open_bad},
    {"no CAP_NET_RAW: -EPERM", test_open_no_privilege},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo lo_tests[] = {
    {"interface down, MTU too small", test_open_down_small_mtu},
    {"frames through the rings on lo", test_loopback},
    {"two ports on one interface", test_two_ports},
    {"frame=udp: a udp: port's peer, ring and socket, GSO whole", test_frame_udp},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"packet_ring", setup, NULL, NULL, NULL, ring_tests},
    {"packet_open", setup, NULL, NULL, NULL, open_tests},
    {"packet_lo", setup_netns, NULL, NULL, NULL, lo_tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
