/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's life cycle, its peers and its completions (engine.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine_impl.h"

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

void pp_proto_conf_default(struct pp_proto_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->mode = PP_PROTO_PUSH_PULL;
	c->btp1 = 80;
	c->btp2 = 680;
	c->window = 64;
	c->rto_ns = 200000;
	c->rto_max_ns = 50000000;
	c->rto_tries = 12;
	c->ack_delay_ns = 20000;
	c->ack_every = 16;
	c->pushbuf_bytes = 1u << 20;
	c->credits = 1;
	c->mtu = 1500;
	c->max_msgs = 256;
	c->copy_max = 1024;
	c->direct_chunk = 1u << 20;
	c->write_rest = 1;
}

void pp_proto_conf_job(struct pp_proto_conf *c)
{
	pp_proto_conf_default(c);
	/* Sends outstanding at most; an embedded rank's twin (the provider's
	 * sends to itself) holds as many. */
	c->max_msgs = PP_PROTO_JOB_MAX_MSGS;
	/* MPI codes post thousands of receives (halo exchanges, many
	 * neighbours); their records are made as the queues deepen. */
	c->max_recvs = PP_PROTO_JOB_MAX_RECVS;
	c->btp_fit = 1;
	/* An eager send completes at once: its ack may ride on the reply
	 * instead of costing a frame of its own. Any other send's LAST frame
	 * is acked at once, and on a veth the receiver's core carries that ACK
	 * through the kernel to the sender's ring before its reply can go:
	 * internode one way (pp_pingpong, packet: frame=udp, veth, 2000 round
	 * trips) jumped from 6.6 us at 8 KiB to 12.2 at 8800 B. Eager up to
	 * 32 KiB, in one compare.sh run (3 rounds): 12 KiB 7.97 us against Open
	 * MPI over TCP's 13.88, 32 KiB 12.21 against 27.70 (in the run before,
	 * 14.24 against 14.01 and 18.58 against 28.10); windowed 12 KiB to
	 * 1 MiB unchanged within the spread of alternated runs with bounds of
	 * 8, 32 and 64 KiB. The copies: copies_map. */
	c->copy_max = 32u << 10;
	/* Node-mates stay at 8 KiB: there the copy is one more beside the
	 * ring's two, and no ACK crosses a kernel (windowed 12-32 KiB fell
	 * 15-30 % when they were eager up to 32 KiB, alternated runs). */
	c->copy_max_local = 8u << 10;
	/* Node-mates' messages pushed whole through the rings: two copies
	 * there beat the DONE round trip and a copy call up to 8 KiB. Above it
	 * one copy wins: a ring copy moves every line between the cores twice
	 * (the sender's store takes it back from the reader first), so where a
	 * line's round trip between the cores is slow (a virtual machine whose
	 * cores the host placed apart, tests/bench/core_rtt.c) 32 KiB took 16.7
	 * us through the ring and 5.7 by a direct copy. One way, with lite
	 * records and ring marks: 12 KiB 2.2 us through the ring, 1.75 by the
	 * receiver's copy call; 16 KiB 2.55 against 1.82 (ob1+vader 1.69).
	 * A job raises it where a copy call is dear (shm_copy_min=auto). */
	c->local_whole = 8u << 10;
	/* A node-mate's long message is not pushed whole from its start: its
	 * receiver takes the rest by its copy call or pulls it through the
	 * rings, whichever its runtime measured faster lately (shm_long;
	 * shm/long_path.h says why neither wins everywhere). A job may still
	 * push from a size on (shm_stream): the stream then needs no PULL. */
	c->local_stream = 0;
	/* Rule 6: one ring record, outside the sequence. Up to 4 KiB: a
	 * sequenced message of 1.5 to 4 KiB cost its FIRST PUSH's bookkeeping,
	 * a DONE and a window slot; as one record, runs alternated, one way
	 * 2 KiB 0.66-0.68 against 0.82-0.84 us (vader 0.76), 4 KiB 0.96-1.10
	 * against 1.09-1.24, windowed 2 KiB 8.7 against 4.2-6.0 GB/s, 4 KiB
	 * 12.7-13.3 against 8.1-9.7 (at 1 KiB, the bound before, unchanged). */
	c->lite_max = 4096;
	/* Direct copy calls: big enough that the system call is noise, small
	 * enough that other work goes on between the calls of a huge message;
	 * fewer bytes than direct_min are pulled as DATA (a copy call costs
	 * more). */
	c->direct_chunk = 4u << 20;
	c->direct_min = 4096;
	/* A message pushed whole, alone on its way, into a receive waiting
	 * published: 8 KiB one way 1.25 us written against 1.62 through the
	 * ring (ob1+vader 1.43). A stream keeps the ring (pp_proto_rq_write).
	 * Longer ones are copied by their receiver: one way level with the
	 * sender's write (16 KiB to 512 KiB within 0.1 us), windowed 5 to 10 %
	 * faster (16 KiB 17.4 against 16.3 GB/s, 512 KiB 33.1 against 30.1). */
	c->write_min = 8u << 10;
	c->write_rest = 0;
}

/* 1 when a group of hooks is given in part. */
static int partial(const void *const *hooks, unsigned n)
{
	unsigned set = 0;
	for (unsigned i = 0; i < n; i++)
		set += hooks[i] != NULL;
	return set != 0 && set != n;
}

/* The hooks' groups are all there or all NULL (engine.h). */
static int hooks_valid(const struct pp_proto_hooks *h)
{
	const void *handoff[] = {(const void *)h->handoff, (const void *)h->handoff_claim,
				 (const void *)h->handoff_cancel};
	const void *place[] = {(const void *)h->place_post, (const void *)h->place_cancel};
	const void *rq[] = {(const void *)h->rq_post, (const void *)h->rq_take,
			    (const void *)h->rq_withdraw, (const void *)h->rq_write};
	const void *stage[] = {(const void *)h->stage, (const void *)h->unstage,
			       (const void *)h->stage_place, (const void *)h->stage_ahead};
	const void *help[] = {(const void *)h->help_offer, (const void *)h->help_settle,
			      (const void *)h->help_serve};
	return !partial(handoff, 3) && !partial(place, 2) && !partial(rq, 4) &&
	       !partial(stage, 4) && !partial(help, 3) && (!h->help_offer || h->direct);
}

/* Operations that fit the limits and the completion ring as it is. */
static void ops_easy_set(struct pp_proto *e)
{
	uint32_t limit = e->c.max_msgs + e->max_rx;
	e->ops_easy = limit < e->cpl_mask + 1 ? limit : e->cpl_mask + 1;
}

/* The eager copies: copy_max bytes for each send record, 32 MiB of a job's
 * engine. Address space, not memory: a page is met only when a send of its
 * record is copied, and a freed record is reused first, so a job touches
 * what its outstanding eager sends need. Mapped, not allocated, so that no
 * allocator fills it (glibc's MALLOC_PERTURB_, which meson's tests set, had
 * every engine's creation write all of it: rt_cycles' 800 inits went from
 * 77 to 181 s). NULL when copy_max is 0 or the map fails. */
static uint8_t *copies_map(const struct pp_proto_conf *c)
{
	size_t len = (size_t)c->max_msgs * c->copy_max;
	if (!len)
		return NULL;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

int pp_proto_create(struct pp_proto **engp, const struct pp_proto_conf *c)
{
	if (!engp || !c || c->nranks == 0 || c->rank >= c->nranks || c->window == 0 ||
	    (c->window & (c->window - 1)) || c->window > 32768 || c->mtu < PP_WIRE_HDR_LEN + 64 ||
	    c->max_msgs == 0 || c->max_msgs > (1u << 24) || c->max_recvs > (1u << 24) ||
	    c->mode > PP_PROTO_PUSH_ZERO || c->rto_ns == 0 || c->rto_tries == 0 ||
	    c->ack_every == 0 || (c->hooks.direct && c->direct_chunk == 0) ||
	    (c->stream >= 1 && c->stream < PP_PROTO_STREAMS) || !hooks_valid(&c->hooks))
		return -EINVAL;
	struct pp_proto *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->c = *c;
	e->chk = (struct pp_wire_check){c->job, c->rank, c->nranks, c->mtu, c->inc};
	if (e->c.rto_max_ns < e->c.rto_ns)
		e->c.rto_max_ns = e->c.rto_ns;
	e->maxp = c->mtu - PP_WIRE_HDR_LEN;
	e->wmask = c->window - 1;
	uint32_t cpl_n = pow2_at_least(2 * c->max_msgs);
	e->peers = calloc(c->nranks, sizeof(*e->peers));
	e->sends = calloc(c->max_msgs, sizeof(*e->sends));
	e->max_rx = c->max_recvs ? c->max_recvs : 2 * c->max_msgs;
	e->rx_chunk =
	    calloc((e->max_rx + PP_PROTO_RX_CHUNK - 1) / PP_PROTO_RX_CHUNK, sizeof(*e->rx_chunk));
	e->cpl = calloc(cpl_n, sizeof(*e->cpl));
	e->copies = copies_map(c);
	/* Buckets for the records of the first chunks; past that a bucket
	 * holds a few entries (tagq.h). */
	uint32_t qcap = e->max_rx < 8192 ? e->max_rx : 8192;
	if (!e->peers || !e->sends || !e->rx_chunk || !e->cpl || (c->copy_max && !e->copies) ||
	    pp_pushbuf_init(&e->pb, c->pushbuf_bytes) || pp_tagq_init(&e->posted, qcap) ||
	    pp_tagq_init(&e->unexpected, qcap) || pp_proto_rx_grow(e)) {
		pp_proto_destroy(e);
		return -ENOMEM;
	}
	e->cpl_mask = cpl_n - 1;
	ops_easy_set(e);
	e->credit_share = pp_proto_credit_share(&e->pb, c->nranks);
	/* A lite record tells a quarter of the share given back (or an owed
	 * ack): the sender's view lags by that much at most, and a ping-pong's
	 * records mostly go without the 8 bytes. */
	e->credit_news = (uint16_t)(e->credit_share / 4 ? e->credit_share / 4 : 1);
	/* A fitted push may take half a peer's share: two such messages in
	 * flight never wait for credit. */
	e->push_cap = (c->credits ? (uint64_t)e->credit_share * PP_PUSHBUF_CELL
				  : (uint64_t)c->pushbuf_bytes) /
		      2;
	if (e->push_cap > PP_PROTO_PUSH_CAP)
		e->push_cap = PP_PROTO_PUSH_CAP;
	e->staging = c->hooks.stage != NULL;
	e->recvq = c->hooks.rq_post != NULL;
	e->lite = c->hooks.lite_reserve && c->hooks.lite_commit && c->lite_max &&
		  c->mode == PP_PROTO_PUSH_PULL;
	e->lite_len = c->lite_max < e->maxp ? c->lite_max : e->maxp;
	/* pp_proto_writable: whole from write_min, the rest from direct_min */
	uint64_t whole = c->write_min ? c->write_min : UINT64_MAX;
	uint64_t rest = c->write_rest ? c->direct_min : UINT64_MAX;
	e->writable_min = whole < rest ? whole : rest;
	list_init(&e->send_free);
	list_init(&e->late);
	for (uint32_t i = 0; i < c->max_msgs; i++)
		list_add_tail(&e->send_free, &e->sends[i].q);
	for (uint32_t r = 0; r < c->nranks; r++) {
		struct pp_proto_peer *p = &e->peers[r];
		list_init(&p->sends);
		list_init(&p->txq);
		list_init(&p->pullq);
		list_init(&p->directq);
		list_init(&p->arrived);
	}
	*engp = e;
	return 0;
}

void pp_proto_destroy(struct pp_proto *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; i < e->nrx; i++) {
		/* What the layer below holds of a receive is taken back. */
		struct pp_proto_recv_rec *r =
		    &e->rx_chunk[i / PP_PROTO_RX_CHUNK][i % PP_PROTO_RX_CHUNK];
		if (r->state == RX_POSTED)
			pp_proto_rq_withdraw(e, r);
		pp_proto_place_take(e, r);
	}
	if (e->peers)
		for (uint32_t r = 0; r < e->c.nranks; r++) {
			free(e->peers[r].ring);
			free(e->peers[r].doneq);
		}
	free(e->peers);
	free(e->sends);
	for (uint32_t i = 0; e->rx_chunk && i * PP_PROTO_RX_CHUNK < e->nrx; i++)
		free(e->rx_chunk[i]);
	free(e->rx_chunk);
	pp_tagq_fini(&e->posted);
	pp_tagq_fini(&e->unexpected);
	free(e->cpl);
	if (e->copies)
		munmap(e->copies, (size_t)e->c.max_msgs * e->c.copy_max);
	pp_pushbuf_fini(&e->pb);
	free(e);
}

int pp_proto_peer_add(struct pp_proto *e, uint32_t rank, const uint8_t mac[6], uint32_t inc)
{
	if (!e || !mac || rank >= e->c.nranks || rank == e->c.rank)
		return -EINVAL;
	e->local_due = 1;
	struct pp_proto_peer *p = &e->peers[rank];
	if (!p->ring) {
		/* Cold path: the window ring is the only per-peer allocation. */
		p->ring = calloc(e->c.window, sizeof(*p->ring));
		if (!p->ring)
			return -ENOMEM;
		pp_gbn_tx_start(&p->tx, 0, e->c.rto_ns, e->c.rto_max_ns);
		p->path.rate = p->path.rate_max = e->c.rate_hint / 1000; /* bytes/ms */
	}
	memcpy(p->mac, mac, 6);
	p->inc = inc;
	p->present = 1;
	if (!p->local) {
		p->btp1 = e->c.btp1;
		p->btp2 = e->c.btp2;
	}
	p->credit_limit = (uint16_t)e->credit_share;
	p->credit_adv = (uint16_t)e->credit_share;
	p->credit_told = p->credit_adv;
	return 0;
}

int pp_proto_peer_local(struct pp_proto *e, uint32_t rank, uint32_t btp1, uint32_t btp2)
{
	if (!e || rank >= e->c.nranks || rank == e->c.rank || !e->peers[rank].present)
		return -EINVAL;
	e->local_due = 1;
	struct pp_proto_peer *p = &e->peers[rank];
	if (!p->doneq) {
		/* Each owed DONE is a send of the peer: it has max_msgs at most. */
		uint32_t n = 1;
		while (n < 2 * e->c.max_msgs)
			n <<= 1;
		p->doneq = calloc(n, sizeof(*p->doneq));
		if (!p->doneq)
			return -ENOMEM;
		p->done_mask = n - 1;
	}
	p->local = 1;
	p->direct = e->c.hooks.direct != NULL;
	p->btp1 = btp1;
	p->btp2 = btp2;
	return 0;
}

/* ---- receive records ---- */

int pp_proto_rx_grow(struct pp_proto *e)
{
	if (e->nrx >= e->max_rx)
		return -ENOMEM;
	uint32_t n =
	    e->max_rx - e->nrx < PP_PROTO_RX_CHUNK ? e->max_rx - e->nrx : PP_PROTO_RX_CHUNK;
	struct pp_proto_recv_rec *c = calloc(n, sizeof(*c));
	if (!c)
		return -ENOMEM;
	e->rx_chunk[e->nrx / PP_PROTO_RX_CHUNK] = c;
	for (uint32_t i = n; i-- > 0;) /* c[0] on top */
		pp_proto_rx_put(e, &c[i]);
	e->nrx += n;
	return 0;
}

/* ---- completions ---- */

int pp_proto_cpl_grow(struct pp_proto *e)
{
	/* Every operation outstanding has a completion to come: the ring
	 * doubles before it could overflow (only up to the deepest queue). */
	uint32_t n = e->cpl_mask + 1;
	struct pp_proto_cpl *c = malloc(2 * (size_t)n * sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (uint32_t i = 0; i < e->cpl_tail - e->cpl_head; i++)
		c[i] = e->cpl[(e->cpl_head + i) & e->cpl_mask];
	e->cpl_tail -= e->cpl_head;
	e->cpl_head = 0;
	free(e->cpl);
	e->cpl = c;
	e->cpl_mask = 2 * n - 1;
	ops_easy_set(e);
	return 0;
}

struct pp_proto_cpl *pp_proto_complete(struct pp_proto *e, uint64_t cookie, int is_send,
				       uint32_t peer, uint64_t tag, uint64_t len, int error)
{
	struct pp_proto_cpl *x = &e->cpl[e->cpl_tail++ & e->cpl_mask];
	x->cookie = cookie;
	x->is_send = is_send;
	x->source = (int)peer;
	x->tag = tag;
	x->len = len;
	x->error = error;
	x->data = 0;
	x->has_data = 0;
	x->post = 0;
	return x;
}

int pp_proto_poll(struct pp_proto *e, struct pp_proto_cpl *cpl)
{
	if (e->cpl_head == e->cpl_tail)
		return 0;
	*cpl = e->cpl[e->cpl_head++ & e->cpl_mask];
	e->user_ops--;
	return 1;
}

/* ---- peer loss ---- */

void pp_proto_peer_lose(struct pp_proto *e, uint32_t rank)
{
	struct pp_proto_peer *p = &e->peers[rank];
	p->lost = 1;
	while (!list_empty(&p->sends))
		pp_proto_send_finish(e, container_of(p->sends.next, struct pp_proto_send_rec, all),
				     -ECONNRESET);
	while (!list_empty(&p->arrived)) {
		struct pp_proto_recv_rec *r =
		    container_of(p->arrived.next, struct pp_proto_recv_rec, by_peer);
		if (r->state == RX_UNEXPECTED) {
			pp_pushbuf_drain(&e->pb, &r->cells, NULL, 0);
			pp_proto_rx_free(e, r);
		} else {
			pp_proto_rx_finish(e, r, -ECONNRESET);
		}
	}
	for (struct pp_link *l = e->posted.all.next; l != &e->posted.all;) {
		struct pp_proto_recv_rec *r = container_of(l, struct pp_proto_recv_rec, m.all);
		l = l->next;
		if (r->m.src == (int)rank)
			pp_proto_rx_finish(e, r, -ECONNRESET);
	}
	pp_gbn_tx_drop(&p->tx);
	p->done_head = p->done_tail;
	for (unsigned i = 0; i < PP_PROTO_STREAMS; i++)
		pp_gbn_rx_forget(&p->rx[i]);
	p->xowe = 0;
}

void pp_proto_peer_fail(struct pp_proto *e, uint32_t rank)
{
	e->local_due = 1;
	if (rank < e->c.nranks && e->peers[rank].present && !e->peers[rank].lost)
		pp_proto_peer_lose(e, rank);
}

void pp_proto_ping(struct pp_proto *e, uint32_t rank)
{
	e->local_due = 1;
	if (rank >= e->c.nranks || rank == e->c.rank)
		return;
	struct pp_proto_peer *p = &e->peers[rank];
	if (p->present && !p->lost && !p->gone && !pp_gbn_tx_busy(&p->tx))
		p->ping_owed = 1;
}

void pp_proto_peer_gone(struct pp_proto *e, uint32_t rank)
{
	e->local_due = 1;
	if (rank >= e->c.nranks || !e->peers[rank].present)
		return;
	e->peers[rank].gone = 1;
	for (struct pp_link *l = e->posted.all.next; l != &e->posted.all;) {
		struct pp_proto_recv_rec *r = container_of(l, struct pp_proto_recv_rec, m.all);
		l = l->next;
		if (r->m.src == (int)rank)
			pp_proto_rx_finish(e, r, -ECONNRESET);
	}
}

int pp_proto_peer_lost(const struct pp_proto *e, uint32_t rank)
{
	return rank < e->c.nranks && e->peers[rank].present && e->peers[rank].lost;
}

int pp_proto_peer_settled(const struct pp_proto *e, uint32_t rank)
{
	if (rank >= e->c.nranks || !e->peers[rank].present)
		return 1;
	const struct pp_proto_peer *p = &e->peers[rank];
	return !pp_gbn_tx_busy(&p->tx) && !pp_gbn_rx_owes(&p->rx[0]);
}

int pp_proto_peer_busy(const struct pp_proto *e, uint32_t rank)
{
	if (rank >= e->c.nranks || !e->peers[rank].present)
		return 0;
	const struct pp_proto_peer *p = &e->peers[rank];
	if (!list_empty(&p->sends) || pp_gbn_tx_busy(&p->tx))
		return 1;
	for (const struct pp_link *l = p->arrived.next; l != &p->arrived; l = l->next) {
		const struct pp_proto_recv_rec *r =
		    container_of(l, struct pp_proto_recv_rec, by_peer);
		if (r->state == RX_ACTIVE || r->got < r->msg_len)
			return 1;
	}
	return 0;
}

void pp_proto_stats(const struct pp_proto *e, struct pp_stats *st)
{
	*st = e->st;
	st->pushed_buf_bytes = e->pb.bytes;
	st->pushed_buf_peak = e->pb.peak;
	for (uint32_t r = 0; r < e->c.nranks; r++) {
		const struct pp_proto_peer *p = &e->peers[r];
		if (!p->present || p->local)
			continue;
		uint64_t push = pp_proto_push_of(e, p, UINT64_MAX);
		if (push > st->push_now)
			st->push_now = push;
		if (p->path.rtt_min && (!st->path_rtt_ns || p->path.rtt_min < st->path_rtt_ns))
			st->path_rtt_ns = p->path.rtt_min;
		if (p->path.pull_rtt > st->path_pull_rtt_ns)
			st->path_pull_rtt_ns = p->path.pull_rtt;
		if (p->path.rate * 1000u > st->path_rate)
			st->path_rate = p->path.rate * 1000u;
	}
}

int pp_proto_idle(const struct pp_proto *e)
{
	if (e->user_ops)
		return 0;
	for (uint32_t r = 0; r < e->c.nranks; r++) {
		const struct pp_proto_peer *p = &e->peers[r];
		if (p->present && !p->lost &&
		    (pp_gbn_tx_busy(&p->tx) || pp_gbn_rx_owes_ack(&p->rx[0]) || p->xowe ||
		     p->done_head != p->done_tail))
			return 0;
	}
	return 1;
}
