/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node daemon's core (apps/ppd, the ppd_core library) driven as the
 * program drives it, without its threads: a daemon on port 0 of an
 * in-memory link, its socket and rank table served from this thread, one
 * handler turned pass by pass (ppd_handler_pass), and ranks of this very
 * process attached through the socket with the "ppd:" port a rank opens.
 * Port 1 of the link is another node. Checked: frames through the daemon
 * both ways with their bytes intact, the spoofed and misaddressed ones
 * dropped and counted, node-mates' frames never on the wire, pull serving
 * (DATA frames of the rank's own memory, acked to DONE, sent again from a
 * NACK, failed for a range the rank cannot read and for a silent
 * receiver), placement of DATA payloads into a rank's buffer (and the
 * frames that must not be placed), and the BYE a dead rank's home handler
 * sends, signed with the rank's key.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "cu_main.h"
#include "engine.h"
#include "pp_port.h"
#include "ppd.h"
#include "ppd_pull.h"
#include "sim/pp_sim.h"
#include "wire.h"

#define JOB   7u
#define TOKEN 0x1234abcdull
#define MTU   1500u

static const uint8_t nic_mac[6] = {2, 0, 0, 0, 0, 0};	/* the daemon's port */
static const uint8_t other_mac[6] = {2, 0, 0, 0, 0, 1}; /* another node */

static struct ppd d; /* large: not on the stack */
static struct {
	struct pp_sim_link *link;
	struct pp_port *nic, *other;
	struct ppd_server srv;
	char sock[64];
} bed;

static void bed_up(void)
{
	memset(&d, 0, sizeof(d));
	memset(&bed, 0, sizeof(bed));
	ppd_init(&d);
	struct pp_sim_conf sc = {.seed = 1, .mtu = MTU};
	struct pp_port_conf pc = {.nb_queues = 1};
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&bed.link, "ppdcore", 2, &sc), 0);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&bed.nic, "sim:ppdcore/0", &pc), 0);
	CU_ASSERT_EQUAL_FATAL(pp_port_open(&bed.other, "sim:ppdcore/1", &pc), 0);
	CU_ASSERT_EQUAL_FATAL(ppd_use_port(&d, bed.nic), 0);
	CU_ASSERT_EQUAL_FATAL(memcmp(d.info.mac, nic_mac, 6), 0);
	/* Frames go again on the timer only where a test waits for it: a
	 * slow run (a sanitizer's) must not find its pull jobs resending. */
	d.pull_rto_ns = 60000000000ull;
	CU_ASSERT_EQUAL_FATAL(ppd_handler_setup(&d, 0, 0), 0);
	d.nh = 1;
	snprintf(bed.sock, sizeof(bed.sock), "/tmp/ppd-core-%d.sock", (int)getpid());
	CU_ASSERT_EQUAL_FATAL(ppd_server_open(&bed.srv, bed.sock, NULL), 0);
	/* The launcher's claim (pprun --daemon): this uid, this token. */
	CU_ASSERT_EQUAL_FATAL(ppd_claim_bind(&d, JOB, geteuid(), TOKEN, 2), 0);
}

static unsigned pass(void)
{
	unsigned n = ppd_handler_pass(&d.h[0]);
	pp_sim_link_set_time(bed.link, 0);
	return n;
}

static struct ppd_rank *entry(uint32_t rank)
{
	for (int i = 0; i < PPD_MAX_RANKS; i++)
		if (atomic_load(&d.ranks[i].state) == PPD_RANK_ACTIVE && d.ranks[i].rank == rank)
			return &d.ranks[i];
	return NULL;
}

/* ---- a rank attaching: its open waits for the answer this thread serves */

struct opener {
	char dev[256];
	struct pp_port *port;
	int rc;
	atomic_int done;
};

static void *open_main(void *arg)
{
	struct opener *o = arg;
	struct pp_port_conf pc = {.nb_queues = 1};
	o->rc = pp_port_open(&o->port, o->dev, &pc);
	atomic_store(&o->done, 1);
	return NULL;
}

/* Attach rank (incarnation inc), serving the daemon's socket from this
 * thread until the open returns: its result, the port in *port. The
 * loop serves the socket only, never the attached ranks' connections: a
 * rank's end is seen only where the daemon looks for it itself. */
static int attach_rc(uint32_t rank, uint32_t inc, struct pp_port **port)
{
	struct opener o = {.port = NULL};
	snprintf(o.dev, sizeof(o.dev),
		 "ppd:job=%u,rank=%u,size=2,inc=%u,token=%llx,timeout=5000,path=%s", JOB, rank, inc,
		 (unsigned long long)TOKEN, bed.sock);
	pthread_t t;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, open_main, &o), 0);
	while (!atomic_load(&o.done)) {
		struct pollfd p[1 + PPD_PENDING];
		int n = 0, idx[1 + PPD_PENDING];
		p[n++] = (struct pollfd){.fd = bed.srv.lfd, .events = POLLIN};
		for (int i = 0; i < PPD_PENDING; i++)
			if (bed.srv.conn[i].fd >= 0) {
				idx[n] = i;
				p[n++] =
				    (struct pollfd){.fd = bed.srv.conn[i].fd, .events = POLLIN};
			}
		poll(p, (nfds_t)n, 10);
		if (p[0].revents)
			ppd_server_accept(&bed.srv, ppd_now_ns());
		for (int k = 1; k < n; k++)
			if (p[k].revents)
				ppd_server_input(&d, &bed.srv, idx[k]);
	}
	pthread_join(t, NULL);
	*port = o.port;
	return o.rc;
}

static struct pp_port *attach(uint32_t rank, uint32_t inc)
{
	struct pp_port *port;
	CU_ASSERT_EQUAL_FATAL(attach_rc(rank, inc, &port), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(entry(rank));
	return port;
}

/* Free the entries whose goodbye is said: the grace it waits for (every
 * handler in a new pass) is over at once, no handler running on its own. */
static int reclaim(void)
{
	atomic_store(&d.stop, 1);
	int used = ppd_ranks_reclaim(&d);
	atomic_store(&d.stop, 0);
	return used;
}

/* Every rank dies (as its connection's end makes it), its goodbye is said
 * and its entry freed; then the daemon goes. */
static void bed_down(struct pp_port *r0, struct pp_port *r1)
{
	struct pp_port *ranks[] = {r0, r1};
	int n = 2;
	for (int i = 0; i < PPD_MAX_RANKS; i++)
		if (atomic_load(&d.ranks[i].state) == PPD_RANK_ACTIVE)
			ppd_rank_died(&d.ranks[i], "test end");
	pass();
	CU_ASSERT_EQUAL(reclaim(), 0);
	for (int i = 0; i < n; i++)
		if (ranks[i])
			pp_port_close(ranks[i]);
	ppd_server_close(&bed.srv);
	close(d.h[0].wake_fd);
	pp_port_close(bed.nic);
	pp_port_close(bed.other);
	pp_sim_link_destroy(bed.link);
}

/* ---- frames ---- */

static struct pp_wire_hdr hdr(uint8_t type, uint32_t src, uint32_t dst, uint32_t src_inc,
			      uint32_t dst_inc)
{
	return (struct pp_wire_hdr){.type = type,
				    .job = JOB,
				    .ack_stream = PP_PROTO_NO_ACK,
				    .src_rank = src,
				    .dst_rank = dst,
				    .src_inc = src_inc,
				    .dst_inc = dst_inc};
}

/* Send h with n pattern bytes (seed s) from port p (the rank's queue 0). */
static void send_on(struct pp_port *p, const uint8_t dst_mac[6], struct pp_wire_hdr h, uint32_t n,
		    uint8_t s)
{
	uint8_t payload[MTU];
	for (uint32_t i = 0; i < n; i++)
		payload[i] = (uint8_t)(s + i * 7);
	h.payload_len = (uint16_t)n;
	if (h.type == PP_WIRE_PUSH) /* a message of n bytes, all in this frame */
		h.msg_len = n;
	struct pp_buf *b;
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(p, &b, 1), 1);
	int len = pp_wire_encode(b->data, b->cap, dst_mac, other_mac, &h, payload);
	CU_ASSERT_FATAL(len > 0);
	b->len = (uint32_t)len;
	CU_ASSERT_EQUAL_FATAL(pp_port_tx_burst(p, 0, &b, 1), 1);
}

/* Frames waiting on port p, decoded as rank `as` (incarnation inc) checks
 * them: how many arrived, each decoded into h[] and its payload copied to
 * pl[] (at most max; every one must decode). */
static unsigned recv_on(struct pp_port *p, uint32_t as, uint32_t inc, struct pp_wire_hdr *h,
			uint8_t (*pl)[MTU], uint8_t (*src)[6], unsigned max)
{
	struct pp_buf *bufs[64];
	unsigned got = 0, n;
	struct pp_wire_check chk = {JOB, as, 2, MTU, inc};
	while ((n = pp_port_rx_burst(p, 0, bufs, 64)) > 0) {
		for (unsigned i = 0; i < n; i++, got++) {
			struct pp_wire_hdr w;
			const uint8_t *payload;
			enum pp_drop_reason why;
			int rc =
			    pp_wire_decode(bufs[i]->data, bufs[i]->len, &chk, &w, &payload, &why);
			CU_ASSERT_EQUAL(rc, 0);
			if (rc)
				fprintf(stderr, "decode: %s\n", pp_wire_drop_name(why));
			if (got < max) {
				h[got] = w;
				if (pl)
					memcpy(pl[got], payload, w.payload_len);
				if (src)
					memcpy(src[got], pp_eth_src(bufs[i]->data), 6);
			}
		}
		pp_port_free(p, bufs, n);
	}
	return got;
}

static int pattern_ok(const uint8_t *p, uint32_t n, uint8_t s)
{
	for (uint32_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(s + i * 7))
			return 0;
	return 1;
}

/* ---- forwarding ---- */

static void test_rank_to_wire(void)
{
	bed_up();
	struct pp_port *r0 = attach(0, 1);
	send_on(r0, other_mac, hdr(PP_WIRE_PUSH, 0, 1, 1, 1), 300, 3);
	pass();
	struct pp_wire_hdr h[4];
	uint8_t pl[4][MTU], src[4][6];
	CU_ASSERT_EQUAL(recv_on(bed.other, 1, 1, h, pl, src, 4), 1);
	CU_ASSERT_EQUAL(h[0].type, PP_WIRE_PUSH);
	CU_ASSERT_EQUAL(h[0].payload_len, 300);
	CU_ASSERT(pattern_ok(pl[0], 300, 3));
	CU_ASSERT_EQUAL(memcmp(src[0], nic_mac, 6), 0); /* the node's own MAC */
	CU_ASSERT_EQUAL(d.h[0].c.from_ranks, 1);
	CU_ASSERT_EQUAL(d.h[0].c.nic_tx, 1);
	bed_down(r0, NULL);
}

static void test_spoof_dropped(void)
{
	bed_up();
	struct pp_port *r0 = attach(0, 1);
	send_on(r0, other_mac, hdr(PP_WIRE_PUSH, 1, 0, 1, 1), 10, 0); /* another rank */
	struct pp_wire_hdr other_job = hdr(PP_WIRE_PUSH, 0, 1, 1, 1);
	other_job.job = JOB + 1;
	send_on(r0, other_mac, other_job, 10, 0);
	send_on(r0, other_mac, hdr(PP_WIRE_PUSH, 0, 1, 2, 1), 10, 0); /* another life */
	send_on(r0, other_mac, hdr(PP_WIRE_PUSH, 0, 1, 1, 1), 10, 0); /* its own */
	pass();
	struct pp_wire_hdr h[4];
	CU_ASSERT_EQUAL(recv_on(bed.other, 1, 1, h, NULL, NULL, 4), 1);
	CU_ASSERT_EQUAL(h[0].src_rank, 0);
	CU_ASSERT_EQUAL(d.h[0].c.drops[PPD_DROP_SPOOF], 3);
	CU_ASSERT_EQUAL(d.h[0].c.nic_tx, 1);
	bed_down(r0, NULL);
}

static void test_wire_to_rank(void)
{
	bed_up();
	struct pp_port *r0 = attach(0, 1);
	send_on(bed.other, nic_mac, hdr(PP_WIRE_PUSH, 1, 0, 1, 1), 500, 9);
	send_on(bed.other, nic_mac, hdr(PP_WIRE_PUSH, 1, 5, 1, 1), 10, 0); /* not here */
	send_on(bed.other, nic_mac, hdr(PP_WIRE_PUSH, 1, 0, 1, 9), 10, 0); /* another life */
	pp_sim_link_set_time(bed.link, 0);
	pass();
	struct pp_wire_hdr h[4];
	uint8_t pl[4][MTU];
	CU_ASSERT_EQUAL(recv_on(r0, 0, 1, h, pl, NULL, 4), 1);
	CU_ASSERT_EQUAL(h[0].payload_len, 500);
	CU_ASSERT(pattern_ok(pl[0], 500, 9));
	CU_ASSERT_EQUAL(d.h[0].c.drops[PPD_DROP_NO_RANK], 1);
	CU_ASSERT_EQUAL(d.h[0].c.drops[PPD_DROP_STALE], 1);
	CU_ASSERT_EQUAL(d.h[0].c.to_ranks, 1);
	bed_down(r0, NULL);
}

static void test_node_mates(void)
{
	bed_up();
	struct pp_port *r0 = attach(0, 1), *r1 = attach(1, 1);
	send_on(r0, other_mac, hdr(PP_WIRE_PUSH, 0, 1, 1, 1), 700, 5);
	pass();
	struct pp_wire_hdr h[4];
	uint8_t pl[4][MTU];
	CU_ASSERT_EQUAL(recv_on(r1, 1, 1, h, pl, NULL, 4), 1);
	CU_ASSERT(pattern_ok(pl[0], 700, 5));
	CU_ASSERT_EQUAL(recv_on(bed.other, 1, 1, h, NULL, NULL, 4), 0);
	CU_ASSERT_EQUAL(d.h[0].c.loopback, 1);
	CU_ASSERT_EQUAL(d.h[0].c.nic_tx, 0);
	bed_down(r0, r1);
}

/* ---- pull serving ---- */

#define MSG_LEN	 20000u
#define MSG_ID	 5u
#define BTP	 1000u /* pushed before the PULL: the daemon sends the rest */
#define MSG_SEED 11

struct ended {
	int n, error;
	uint32_t dst, msg_id;
};

static int on_end(void *arg, uint32_t dst, uint32_t msg_id, int error)
{
	struct ended *e = arg;
	e->n++;
	e->dst = dst;
	e->msg_id = msg_id;
	e->error = error;
	return 0;
}

/* The other node's PULL for the rest of message MSG_ID from rank 0. */
static void send_pull(void)
{
	struct pp_wire_hdr w = hdr(PP_WIRE_PULL, 1, 0, 1, 1);
	w.msg_id = MSG_ID;
	w.msg_len = MSG_LEN;
	w.offset = BTP;
	send_on(bed.other, nic_mac, w, 0, 0);
}

/* Its ACK (or NACK) on handler 0's stream (1): next is the seq it expects. */
static void send_ack(uint8_t type, uint32_t next)
{
	struct pp_wire_hdr w = hdr(type, 1, 0, 1, 1);
	w.ack_stream = 1;
	w.ack = next;
	send_on(bed.other, nic_mac, w, 0, 0);
}

/* DATA frames the other node got: checked against the message's bytes
 * (buf), in order from offset *off, each frame's seq *seq; both advance. */
static unsigned take_data(const uint8_t *buf, uint64_t *off, uint32_t *seq, int *last)
{
	static struct pp_wire_hdr h[64];
	static uint8_t pl[64][MTU];
	unsigned n = recv_on(bed.other, 1, 1, h, pl, NULL, 64);
	CU_ASSERT_FATAL(n <= 64);
	for (unsigned i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(h[i].type, PP_WIRE_DATA);
		CU_ASSERT_EQUAL(h[i].stream, 1);
		CU_ASSERT_EQUAL(h[i].msg_id, MSG_ID);
		CU_ASSERT_EQUAL(h[i].msg_len, MSG_LEN);
		CU_ASSERT_EQUAL(h[i].seq, *seq);
		CU_ASSERT_EQUAL(h[i].offset, *off);
		CU_ASSERT_EQUAL(memcmp(pl[i], buf + *off, h[i].payload_len), 0);
		*last = (h[i].flags & PP_WIRE_F_LAST) != 0;
		*off += h[i].payload_len;
		*seq += 1;
	}
	return n;
}

static uint8_t *message(void)
{
	uint8_t *buf = malloc(MSG_LEN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	for (uint32_t i = 0; i < MSG_LEN; i++)
		buf[i] = (uint8_t)(MSG_SEED + i * 13);
	return buf;
}

/* Handler passes until the other node has every DATA frame from offset
 * off (seq seq) to the message's end, the last one marked: how many. */
static unsigned take_rest(const uint8_t *buf, uint64_t off, uint32_t seq)
{
	unsigned n = 0;
	int last = 0;
	for (int k = 0; k < 8 && !last; k++, pass())
		n += take_data(buf, &off, &seq, &last);
	CU_ASSERT_EQUAL(off, MSG_LEN);
	CU_ASSERT(last);
	return n;
}

/* The other node's ACK or NACK, and the passes that take it in. */
static void answer(uint8_t type, uint32_t next)
{
	send_ack(type, next);
	pass();
	pass();
}

/* A daemon, rank 0 attached, its message described for the daemon to
 * serve (the other node silent for timeout_ms: the pull fails), and the
 * other node's PULL for it sent. */
static uint8_t *start_pull(struct pp_port **r0, uint32_t timeout_ms)
{
	bed_up();
	*r0 = attach(0, 1);
	uint8_t *buf = message();
	CU_ASSERT_EQUAL(ppd_port_pull_post(*r0, 1, MSG_ID, 42, buf, MSG_LEN, BTP, timeout_ms), 0);
	send_pull();
	return buf;
}

static void test_pull_served(void)
{
	struct pp_port *r0;
	uint8_t *buf = start_pull(&r0, 1000);
	pass(); /* the PULL: a job for the handler, and the PULL for the rank too */
	struct pp_wire_hdr h[4];
	CU_ASSERT_EQUAL(recv_on(r0, 0, 1, h, NULL, NULL, 4), 1);
	CU_ASSERT_EQUAL(h[0].type, PP_WIRE_PULL);
	CU_ASSERT_EQUAL(ppd_port_pull_claim(r0, 1, MSG_ID), 1); /* the daemon serves it */
	unsigned frames = take_rest(buf, BTP, 0);
	struct ended e = {0};
	CU_ASSERT_EQUAL(ppd_port_pull_poll(r0, on_end, &e), 0); /* nothing acked yet */
	answer(PP_WIRE_ACK, frames);
	CU_ASSERT_EQUAL(ppd_port_pull_poll(r0, on_end, &e), 1);
	CU_ASSERT_EQUAL(e.n, 1);
	CU_ASSERT_EQUAL(e.error, 0);
	CU_ASSERT_EQUAL(e.dst, 1);
	CU_ASSERT_EQUAL(e.msg_id, MSG_ID);
	CU_ASSERT_EQUAL(d.h[0].c.pulls_served, 1);
	CU_ASSERT_EQUAL(d.h[0].c.pull_retx, 0);
	CU_ASSERT_EQUAL(d.h[0].c.ext_bytes, MSG_LEN - BTP);
	free(buf);
	bed_down(r0, NULL);
}

/* A frame lost on the way: the receiver's NACK names it, and it and every
 * frame after it come again, marked, with the same bytes. */
static void test_pull_nack(void)
{
	struct pp_port *r0;
	uint8_t *buf = start_pull(&r0, 1000);
	pass();
	unsigned frames = take_rest(buf, BTP, 0);
	CU_ASSERT_FATAL(frames > 4);
	/* Frame 3 was lost: the receiver has 0-2 and asks from 3. */
	answer(PP_WIRE_NACK, 3);
	uint32_t maxp = MTU - PP_WIRE_HDR_LEN;
	CU_ASSERT_EQUAL(take_rest(buf, BTP + 3ull * maxp, 3), frames - 3);
	CU_ASSERT_EQUAL(d.h[0].c.pull_retx, frames - 3);
	answer(PP_WIRE_ACK, frames);
	struct ended e = {0};
	CU_ASSERT_EQUAL(ppd_port_pull_poll(r0, on_end, &e), 1);
	CU_ASSERT_EQUAL(e.error, 0);
	free(buf);
	bed_down(r0, NULL);
}

/* A buffer the rank cannot read (no longer mapped): nothing of it goes
 * out, the pull fails, the rank stays attached. */
static void test_pull_bad_range(void)
{
	bed_up();
	struct pp_port *r0 = attach(0, 1);
	long pg = sysconf(_SC_PAGESIZE);
	size_t span = ((MSG_LEN + (size_t)pg - 1) / (size_t)pg) * (size_t)pg;
	void *gone = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(gone != MAP_FAILED);
	munmap(gone, span);
	CU_ASSERT_EQUAL(ppd_port_pull_post(r0, 1, MSG_ID, 42, gone, MSG_LEN, BTP, 1000), 0);
	send_pull();
	for (int k = 0; k < 4; k++)
		pass();
	struct pp_wire_hdr h[4];
	CU_ASSERT_EQUAL(recv_on(bed.other, 1, 1, h, NULL, NULL, 4), 0);
	CU_ASSERT_EQUAL(d.h[0].c.drops[PPD_DROP_BAD_RANGE], 1);
	CU_ASSERT_EQUAL(d.h[0].c.pulls_failed, 1);
	struct ended e = {0};
	CU_ASSERT_EQUAL(ppd_port_pull_poll(r0, on_end, &e), 1);
	CU_ASSERT_EQUAL(e.error, -EIO);
	CU_ASSERT_PTR_NOT_NULL(entry(0));
	bed_down(r0, NULL);
}

/* A receiver that never acks: frames go again on the timer (backing off),
 * and the pull fails once it has been silent for its timeout. */
static void test_pull_silent(void)
{
	struct pp_port *r0;
	uint8_t *buf = start_pull(&r0, 1);
	d.pull_rto_ns = PPD_PULL_RTO_NS; /* as the program runs */
	struct ended e = {0};
	uint64_t t0 = ppd_now_ns();
	while (!ppd_port_pull_poll(r0, on_end, &e) && ppd_now_ns() - t0 < 5000000000ull) {
		pass();
		recv_on(bed.other, 1, 1, NULL, NULL, NULL, 0);
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	uint64_t took = ppd_now_ns() - t0;
	CU_ASSERT_EQUAL(e.n, 1);
	CU_ASSERT_EQUAL(e.error, -EIO);
	CU_ASSERT(took >= 100000000ull); /* not before the least timeout */
	CU_ASSERT(d.h[0].c.pull_retx > 0);
	CU_ASSERT_EQUAL(d.h[0].c.pulls_failed, 1);
	free(buf);
	bed_down(r0, NULL);
}

/* ---- placement ---- */

#define PL_LEN 6000u
#define PL_ID  9u

/* The other node's DATA frame of message PL_ID (PL_LEN bytes) from rank 1
 * in incarnation inc: n pattern bytes (seed s) at off; bad: one payload
 * byte flipped after the CRC was made. */
static void send_data(uint32_t inc, uint64_t off, uint32_t n, uint8_t s, int bad)
{
	uint8_t payload[MTU];
	for (uint32_t i = 0; i < n; i++)
		payload[i] = (uint8_t)(s + i * 7);
	struct pp_wire_hdr w = hdr(PP_WIRE_DATA, 1, 0, inc, 1);
	w.msg_id = PL_ID;
	w.msg_len = PL_LEN;
	w.offset = off;
	w.payload_len = (uint16_t)n;
	struct pp_buf *b;
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(bed.other, &b, 1), 1);
	int len = pp_wire_encode(b->data, b->cap, nic_mac, other_mac, &w, payload);
	CU_ASSERT_FATAL(len > 0);
	if (bad)
		b->data[len - 1] ^= 0x40;
	b->len = (uint32_t)len;
	CU_ASSERT_EQUAL_FATAL(pp_port_tx_burst(bed.other, 0, &b, 1), 1);
}

/* What rank port p got (16 frames at most, placed[] as many): for each
 * frame, 1 when its payload was placed (its headers alone came), 0 when it
 * came whole; their count. */
static unsigned rank_got(struct pp_port *p, int placed[16])
{
	struct pp_buf *bufs[16];
	unsigned n = pp_port_rx_burst(p, 0, bufs, 16);
	for (unsigned i = 0; i < n; i++) {
		placed[i] = ppd_port_rx_placed(p, bufs[i]);
		CU_ASSERT_EQUAL(bufs[i]->len == PP_WIRE_MIN_FRAME, placed[i]);
	}
	pp_port_free(p, bufs, n);
	return n;
}

static int zeros(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* DATA from the wire into a receive the rank described: the payloads of
 * the frames its engine takes next are written into its buffer and their
 * headers alone reach it; a frame out of order, of another incarnation of
 * the sender, with a bad CRC, or after the description was taken back
 * comes whole and writes nothing. */
static void test_placement(void)
{
	bed_up();
	struct pp_port *r0 = attach(0, 1);
	uint8_t *buf = calloc(1, PL_LEN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_EQUAL(ppd_port_place_post(r0, 1, 1, PL_ID, buf, PL_LEN, 0), 0);
	send_data(1, 0, 1400, 1, 0);
	send_data(1, 1400, 1400, 2, 0);
	send_data(1, 4200, 1400, 3, 0); /* 2800 is next: out of order */
	send_data(2, 2800, 1400, 4, 0); /* another life of rank 1 */
	send_data(1, 2800, 1400, 5, 1); /* bad CRC */
	pp_sim_link_set_time(bed.link, 0);
	pass();
	int placed[16];
	CU_ASSERT_EQUAL(rank_got(r0, placed), 5);
	CU_ASSERT(placed[0] && placed[1]);
	CU_ASSERT(!placed[2] && !placed[3] && !placed[4]);
	CU_ASSERT(pattern_ok(buf, 1400, 1));
	CU_ASSERT(pattern_ok(buf + 1400, 1400, 2));
	CU_ASSERT(zeros(buf + 2800, PL_LEN - 2800));
	CU_ASSERT_EQUAL(d.h[0].c.placed_frames, 2);
	CU_ASSERT_EQUAL(d.h[0].c.placed_bytes, 2800);
	/* The next frame in order is placed; once taken back, none is. */
	send_data(1, 2800, 1400, 6, 0);
	pp_sim_link_set_time(bed.link, 0);
	pass();
	CU_ASSERT_EQUAL(rank_got(r0, placed), 1);
	CU_ASSERT(placed[0]);
	CU_ASSERT(pattern_ok(buf + 2800, 1400, 6));
	ppd_port_place_cancel(r0, 1, PL_ID);
	send_data(1, 4200, 1400, 7, 0);
	pp_sim_link_set_time(bed.link, 0);
	pass();
	CU_ASSERT_EQUAL(rank_got(r0, placed), 1);
	CU_ASSERT(!placed[0]);
	CU_ASSERT(zeros(buf + 4200, PL_LEN - 4200));
	CU_ASSERT_EQUAL(d.h[0].c.placed_frames, 3);
	free(buf);
	bed_down(r0, NULL);
}

/* ---- a rank's death ---- */

static void test_bye_for_dead(void)
{
	bed_up();
	struct pp_port *r0 = attach(0, 1);
	uint8_t key[PP_AUTH_KEY_LEN];
	CU_ASSERT_EQUAL(pp_auth_key_derive("a job's secret", key), 0);
	CU_ASSERT_EQUAL(ppd_port_set_key(r0, key), 0);
	ppd_rank_died(entry(0), "killed");
	CU_ASSERT_PTR_NULL(entry(0));
	pass();
	struct pp_buf *bufs[4];
	unsigned n = pp_port_rx_burst(bed.other, 0, bufs, 4);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	struct pp_wire_peek pk;
	CU_ASSERT_EQUAL(pp_wire_peek(bufs[0]->data, bufs[0]->len, &pk), 0);
	CU_ASSERT_EQUAL(pk.type, PP_WIRE_BYE);
	CU_ASSERT_EQUAL(pk.src_rank, 0);
	CU_ASSERT_EQUAL(pk.dst_rank, PP_WIRE_RANK_ALL);
	CU_ASSERT_EQUAL(pp_auth_verify(key, bufs[0]->data, bufs[0]->len), 0);
	uint8_t wrong[PP_AUTH_KEY_LEN];
	CU_ASSERT_EQUAL(pp_auth_key_derive("another secret", wrong), 0);
	CU_ASSERT_NOT_EQUAL(pp_auth_verify(wrong, bufs[0]->data, bufs[0]->len), 0);
	pp_port_free(bed.other, bufs, n);
	CU_ASSERT_EQUAL(reclaim(), 0);
	bed_down(r0, NULL);
}

/* A rank that closed its port and attaches again at once (pp_finalize,
 * then pp_init: pp_pingpong's modes) is let in, though the daemon's loop
 * has not seen the old connection end: its entry dies then. One whose
 * holder is still there is refused. */
static void test_attach_again(void)
{
	bed_up();
	struct pp_port *r0 = attach(0, 1), *again = NULL;
	CU_ASSERT_EQUAL(attach_rc(0, 2, &again), -EADDRINUSE); /* inc 1 holds it */
	CU_ASSERT_PTR_NULL(again);
	struct ppd_rank *old = entry(0);
	pp_port_close(r0);
	again = attach(0, 3);
	CU_ASSERT_EQUAL(atomic_load(&old->state), PPD_RANK_DYING);
	CU_ASSERT_EQUAL(entry(0)->inc, 3);
	CU_ASSERT_PTR_NOT_EQUAL(entry(0), old);
	bed_down(again, NULL);
}

static CU_TestInfo tests[] = {
    {"a rank's frame leaves with the node's MAC, bytes intact", test_rank_to_wire},
    {"frames with another job, rank or life as source are dropped", test_spoof_dropped},
    {"a frame from the wire reaches its rank; not here or stale: dropped", test_wire_to_rank},
    {"node-mates' frames never reach the wire", test_node_mates},
    {"pull serving: the rest as DATA from the rank's memory, acked to DONE", test_pull_served},
    {"pull serving: a NACK sends the rest again, same bytes", test_pull_nack},
    {"pull serving: a range the rank cannot read fails, nothing sent", test_pull_bad_range},
    {"pull serving: a silent receiver fails the pull after its timeout", test_pull_silent},
    {"placement: in-order DATA written into the rank; others whole, nothing written",
     test_placement},
    {"a dead rank's BYE is sent for it, signed with its key", test_bye_for_dead},
    {"a rank attaches again at once after closing; a live holder is refused", test_attach_again},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"ppd_core", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
