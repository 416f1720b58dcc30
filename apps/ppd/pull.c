/* SPDX-License-Identifier: BSD-3-Clause */
/* ppd's pull handlers: PULLs of ranks served from the daemon, each handler
 * on its own go-back-N stream (see ppd.h, "Pull serving"). Hot path: no
 * allocation; the one syscall is the CMA read of each frame's payload. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "engine.h"
#include "gbn.h"
#include "pp_log.h"
#include "ppd.h"
#include "pp_xorshift.h"
#include "wire.h"

#define WINDOW	       64u	  /* frames in flight per job */
#define TIMEOUT_MIN_NS 100000000u /* least silence before a job fails */
#define TX_ROOM	       PPD_BURST  /* frames a pass may queue for the NIC */
#define FAIL_NOW       2 /* j->failing bit: end at once (bit 1: once nothing is in flight) */

_Static_assert(PPD_SERVERS == PP_PROTO_STREAMS - 1, "a stream per serving handler");

static int rank_alive(const struct ppd_rank *r, pid_t pid)
{
	return atomic_load_explicit(&r->state, memory_order_acquire) == PPD_RANK_ACTIVE &&
	       r->pid == pid;
}

static int cas_state(struct ppd_pull *x, uint32_t from, uint32_t to)
{
	return __atomic_compare_exchange_n(&x->state, &from, to, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

/* Put m in handler to's inbox; 0, or -ENOSPC when full. */
static int post(struct ppd_handler *to, const struct ppd_msg *m)
{
	int rc = -ENOSPC;
	while (atomic_flag_test_and_set_explicit(&to->inbox_lock, memory_order_acquire))
		__builtin_ia32_pause();
	if (to->ninbox < PPD_INBOX) {
		to->inbox[to->ninbox++] = *m;
		rc = 0;
	}
	atomic_flag_clear_explicit(&to->inbox_lock, memory_order_release);
	return rc;
}

/* The least loaded serving handler: queue depth, then busy time. */
static struct ppd_handler *least_loaded(struct ppd *d)
{
	int n = d->nh < PPD_SERVERS ? d->nh : PPD_SERVERS;
	struct ppd_handler *best = &d->h[0];
	for (int i = 1; i < n; i++) {
		struct ppd_handler *a = &d->h[i];
		unsigned la = atomic_load_explicit(&a->load, memory_order_relaxed);
		unsigned lb = atomic_load_explicit(&best->load, memory_order_relaxed);
		if (la < lb ||
		    (la == lb && __atomic_load_n(&a->c.busy_ns, __ATOMIC_RELAXED) <
				     __atomic_load_n(&best->c.busy_ns, __ATOMIC_RELAXED)))
			best = a;
	}
	return best;
}

/* A PULL from the NIC for rank r: take the matching POSTED entry. */
static void take_pull(struct ppd_handler *h, struct ppd_rank *r, const struct pp_wire_hdr *w,
		      const uint8_t *f)
{
	struct ppd *d = h->d;
	if (w->flags & (PP_WIRE_F_AGAIN | PP_WIRE_F_DONE)) {
		COUNT(h, pulls_left, 1); /* everything again, or nothing */
		return;
	}
	for (uint32_t i = 0; i < PPD_PULLS; i++) {
		struct ppd_pull *x = &r->hdr->pulls[i];
		if (__atomic_load_n(&x->state, __ATOMIC_ACQUIRE) != PPD_PULL_POSTED ||
		    x->dst != w->src_rank || x->msg_id != w->msg_id)
			continue;
		/* The entry is the rank's to write: copy it, then check the copy. */
		struct ppd_msg m = {.type = PPD_MSG_JOB,
				    .r = r,
				    .pid = r->pid,
				    .slot = i,
				    .job = r->job,
				    .src = r->rank,
				    .dst = w->src_rank,
				    .src_inc = r->inc,
				    .dst_inc = w->src_inc,
				    .msg_id = w->msg_id,
				    .tag = x->tag,
				    .addr = x->addr,
				    .len = x->len,
				    .off = x->off,
				    .timeout_ns = (uint64_t)x->timeout_ms * 1000000u};
		if (m.timeout_ns < TIMEOUT_MIN_NS)
			m.timeout_ns = TIMEOUT_MIN_NS;
		memcpy(m.mac, pp_eth_src(f), 6);
		if (m.len != w->msg_len || m.off >= m.len) {
			COUNT(h, pulls_left, 1); /* not what the PULL is for */
			return;
		}
		struct ppd_handler *to = least_loaded(d);
		/* Taken only when the job has room (load, which only posters
		 * raise, under the inbox lock); the rank takes an
		 * entry back only once it sees this PULL, after us. */
		while (atomic_flag_test_and_set_explicit(&to->inbox_lock, memory_order_acquire))
			__builtin_ia32_pause();
		if (to->ninbox < PPD_INBOX &&
		    atomic_load_explicit(&to->load, memory_order_relaxed) < PPD_PJOBS &&
		    cas_state(x, PPD_PULL_POSTED, PPD_PULL_SERVING)) {
			to->inbox[to->ninbox++] = m;
			atomic_fetch_add_explicit(&to->load, 1, memory_order_relaxed);
		} else {
			COUNT(h, pulls_left, 1); /* no room: the rank serves it */
		}
		atomic_flag_clear_explicit(&to->inbox_lock, memory_order_release);
		return;
	}
	COUNT(h, pulls_left, 1); /* a PULL seen again, or never described */
}

/* Rank dst (incarnation dst_inc) of job said goodbye; have: its BYE says it
 * has ours (a daemon's BYE for a dead rank says so too). A rank whose BYE
 * lacks ours is still leaving: it answers retransmissions until it has
 * every peer's goodbye (runtime/membership.c), so jobs sending to it send
 * nothing new but end well once what is in flight is acked (its last ack
 * may have been lost: failing them at once failed sends whose every byte
 * had arrived, about one storm run in ten at 5 % loss). Otherwise what it
 * did not ack by now it never will, and they end at once. */
static void bye_post(struct ppd *d, uint32_t job, uint32_t dst, uint32_t dst_inc, int have)
{
	struct ppd_msg m = {
	    .type = PPD_MSG_BYE, .job = job, .dst = dst, .dst_inc = dst_inc, .msg_id = have != 0};
	int n = d->nh < PPD_SERVERS ? d->nh : PPD_SERVERS;
	for (int i = 0; i < n; i++)
		if (atomic_load_explicit(&d->h[i].load, memory_order_relaxed))
			post(&d->h[i], &m); /* full: the job times out instead */
}

/* 1 when a BYE (whole frame f, decoded) proves the job's secret with the
 * key rank r of its job gave (auth.h). A job without a secret has no BYE
 * the daemon acts on: its pulls for a peer that left end by their timeout,
 * as its ranks' peers do (membership.c). */
static int bye_proven(const struct ppd_rank *r, const uint8_t *f, uint32_t len)
{
	uint8_t key[PP_AUTH_KEY_LEN];
	return ppd_rank_key(r, key) && pp_auth_verify(key, f, len) == 0;
}

void ppd_pull_bye(struct ppd_handler *h, const uint8_t *f, uint32_t len,
		  const struct pp_wire_peek *pk)
{
	struct ppd *d = h->d;
	if (d->no_pull_serve)
		return;
	/* Checked as one of its job's ranks here would check it. */
	for (int i = 0; i < PPD_MAX_RANKS; i++) {
		const struct ppd_rank *r = &d->ranks[i];
		if (atomic_load_explicit(&r->state, memory_order_acquire) != PPD_RANK_ACTIVE ||
		    r->job != pk->job)
			continue;
		struct pp_wire_check chk = {r->job, r->rank, r->size, d->info.mtu, r->inc};
		struct pp_wire_hdr w;
		const uint8_t *pl;
		enum pp_drop_reason why;
		if (pp_wire_decode(f, len, &chk, &w, &pl, &why) == 0 && bye_proven(r, f, len))
			bye_post(d, w.job, w.src_rank, w.src_inc, w.msg_id != 0);
		return;
	}
}

int ppd_pull_intercept(struct ppd_handler *h, struct ppd_rank *r, const uint8_t *f, uint32_t len,
		       const struct pp_wire_peek *pk)
{
	struct ppd *d = h->d;
	uint8_t type = pk->type;
	int ours = pk->ack_stream >= 1 && pk->ack_stream <= PPD_SERVERS && pk->ack_stream <= d->nh;
	int act = 0;
	switch (type) {
	case PP_WIRE_BYE:
	case PP_WIRE_PULL:
		act = !d->no_pull_serve;
		break;
	case PP_WIRE_ACK:
	case PP_WIRE_NACK:
		act = ours; /* on a handler's stream: the handler's, not the rank's */
		break;
	}
	if (!act)
		return 0;
	/* Acted on only once the whole frame is checked, as the rank will. */
	struct pp_wire_hdr w;
	const uint8_t *pl;
	enum pp_drop_reason why;
	struct pp_wire_check chk = {r->job, r->rank, r->size, d->info.mtu, r->inc};
	if (pp_wire_decode(f, len, &chk, &w, &pl, &why))
		return 0; /* the rank's engine counts it */
	if (type == PP_WIRE_BYE) {
		if (bye_proven(r, f, len))
			bye_post(d, r->job, w.src_rank, w.src_inc, w.msg_id != 0);
		return 0; /* the rank needs it too (and judges it itself) */
	}
	if (type == PP_WIRE_PULL) {
		take_pull(h, r, &w, f);
		return 0; /* the rank needs it for its own sequence */
	}
	struct ppd_msg m = {.type = type == PP_WIRE_ACK ? PPD_MSG_ACK : PPD_MSG_NACK,
			    .job = r->job,
			    .src = r->rank,
			    .dst = w.src_rank,
			    .src_inc = r->inc,
			    .dst_inc = w.src_inc,
			    .ack = w.ack};
	post(&d->h[pk->ack_stream - 1], &m); /* full: go-back-N recovers */
	return 1;
}

/* ---- the serving handler's side ---- */

/* 1 when rank src of job, in incarnation inc, is attached here. */
static int attached(const struct ppd *d, uint32_t job, uint32_t src, uint32_t inc)
{
	for (int i = 0; i < PPD_MAX_RANKS; i++) {
		const struct ppd_rank *r = &d->ranks[i];
		if (atomic_load_explicit(&r->state, memory_order_acquire) == PPD_RANK_ACTIVE &&
		    r->job == job && r->rank == src && r->inc == inc)
			return 1;
	}
	return 0;
}

/* Start t's sequence at seq with the daemon's timer. */
static void flow_start(const struct ppd *d, struct pp_gbn_tx *t, uint32_t seq)
{
	pp_gbn_tx_start(t, seq, d->pull_rto_ns,
			d->pull_rto_ns > PPD_PULL_RTO_MAX_NS ? d->pull_rto_ns
							     : PPD_PULL_RTO_MAX_NS);
}

static uint32_t rnd32(struct ppd_handler *h)
{
	return (uint32_t)(pp_xorshift64(&h->rng) >> 16);
}

/* The sequence of (job, src, dst, their incarnations) on h's stream. A
 * full table (or probe run) gives up the entry of a rank no longer
 * attached, else the one idle longest: the table cannot be exhausted, since
 * at most PPD_PJOBS jobs run on flows at once. A flow new to this pair
 * starts at 0, like the receiver's sequence; one whose entry was given up
 * may meet a receiver anywhere in its sequence, so it starts at a random
 * seq and follows the receiver's first ack (take_msgs), which can then
 * never be mistaken for one of its own frames' but by a 64 in 2^32 chance. */
static struct ppd_flow *flow_get(struct ppd_handler *h, const struct ppd_pjob *j, uint64_t now)
{
	uint32_t job = j->job, src = j->src, dst = j->dst;
	uint32_t k = (job * 2654435761u ^ src * 40503u ^ dst ^ j->dst_inc * 97u) % PPD_FLOWS;
	struct ppd_flow *slot = NULL;
	for (uint32_t i = 0; i < PPD_FLOWS; i++) {
		struct ppd_flow *f = &h->flows[(k + i) % PPD_FLOWS];
		if (!f->used) {
			slot = f;
			break;
		}
		if (f->job == job && f->src == src && f->dst == dst && f->src_inc == j->src_inc &&
		    f->dst_inc == j->dst_inc) {
			f->last = now;
			return f;
		}
	}
	int evicted = !slot;
	if (!slot) { /* cold */
		for (uint32_t i = 0; !slot && i < PPD_FLOWS; i++) {
			struct ppd_flow *f = &h->flows[i];
			if (!f->busy && !attached(h->d, f->job, f->src, f->src_inc))
				slot = f;
		}
		for (uint32_t i = 0; i < PPD_FLOWS && !slot; i++) {
			struct ppd_flow *f = &h->flows[i];
			if (!f->busy && (!slot || f->last < slot->last))
				slot = f;
		}
	}
	*slot = (struct ppd_flow){.job = job,
				  .src = src,
				  .dst = dst,
				  .src_inc = j->src_inc,
				  .dst_inc = j->dst_inc,
				  .fresh = (uint8_t)evicted,
				  .last = now,
				  .used = 1};
	flow_start(h->d, &slot->tx, evicted ? rnd32(h) : 0);
	COUNT(h, flows_evicted, (uint64_t)evicted);
	return slot;
}

/* End job j: the entry goes DONE or FAILED (or was dropped by the rank, or
 * the rank is gone: nothing to tell). */
static void job_end(struct ppd_handler *h, struct ppd_pjob *j, int ok)
{
	if (j->started) /* frames sent and not acked may or may not be in: the
			 * next job resynchronises on the receiver's first ack */
		j->flow->busy = 0;
	if (rank_alive(j->r, j->pid)) {
		struct ppd_pull *x = &j->r->hdr->pulls[j->slot];
		if (!cas_state(x, PPD_PULL_SERVING, ok ? PPD_PULL_DONE : PPD_PULL_FAILED))
			cas_state(x, PPD_PULL_CANCEL, PPD_PULL_FAILED);
		__atomic_fetch_add(&j->r->hdr->pulls_done, 1, __ATOMIC_RELEASE);
	}
	if (ok)
		COUNT(h, pulls_served, 1);
	else
		COUNT(h, pulls_failed, 1);
	j->used = 0;
	atomic_fetch_sub_explicit(&h->load, 1, memory_order_relaxed);
}

static uint32_t maxp(const struct ppd *d)
{
	return d->info.mtu - PP_WIRE_HDR_LEN;
}

/* The payload of frame k of job j, read from the rank straight into a NIC
 * buffer: 1 (*out), 0 no buffer now, -1 the rank's range cannot be read. */
static int frame_read(struct ppd_handler *h, struct ppd_pjob *j, uint32_t k, struct pp_buf **out)
{
	struct ppd *d = h->d;
	uint32_t mp = maxp(d);
	uint64_t off = j->off + (uint64_t)k * mp;
	uint32_t n = (uint32_t)(j->len - off < mp ? j->len - off : mp);
	struct pp_buf *b;
	if (pp_port_alloc(d->port, &b, 1) != 1)
		return 0;
	/* With the rank's rights (mem.c); the job runs only while its rank
	 * is ACTIVE with the pid it had, so the descriptor is that rank's. */
	int rc = ppd_mem_read(j->r, b->data + PP_WIRE_MIN_FRAME, j->addr + off, n);
	if (rc) {
		pp_port_free(d->port, &b, 1);
		COUNT(h, drops[PPD_DROP_BAD_RANGE], 1);
		ppd_mem_failed(j->r, rc);
		return -1;
	}
	COUNT(h, ext_bytes, n);
	b->len = PP_WIRE_MIN_FRAME + n;
	*out = b;
	return 1;
}

/* Send buffer b, holding frame k of job j read by frame_read, as sequence
 * number seq (retx: sent again). */
static void frame_send(struct ppd_handler *h, struct ppd_pjob *j, struct pp_buf *b, uint32_t k,
		       uint32_t seq, int retx)
{
	struct ppd *d = h->d;
	uint64_t off = j->off + (uint64_t)k * maxp(d);
	uint32_t n = b->len - PP_WIRE_MIN_FRAME;
	struct pp_wire_hdr w = {.type = PP_WIRE_DATA,
				.flags = (uint8_t)((off + n == j->len ? PP_WIRE_F_LAST : 0) |
						   (retx ? PP_WIRE_F_RETX : 0)),
				.payload_len = (uint16_t)n,
				.job = j->job,
				.stream = (uint16_t)(1 + h->id),
				.ack_stream = PP_PROTO_NO_ACK,
				.seq = seq,
				.src_rank = j->src,
				.dst_rank = j->dst,
				.msg_id = j->msg_id,
				.tag = j->tag,
				.msg_len = j->len,
				.offset = off,
				.src_inc = j->src_inc,
				.dst_inc = j->dst_inc};
	pp_wire_encode_hdr(b->data, b->cap, j->mac, d->info.mac, &w, b->data + PP_WIRE_MIN_FRAME);
	h->txq[h->ntxq++] = b;
	COUNT(h, pull_frames, 1);
	if (retx)
		COUNT(h, pull_retx, 1);
}

static void take_msgs(struct ppd_handler *h, uint64_t now)
{
	struct ppd_msg in[PPD_INBOX];
	unsigned n;
	while (atomic_flag_test_and_set_explicit(&h->inbox_lock, memory_order_acquire))
		__builtin_ia32_pause();
	n = h->ninbox;
	memcpy(in, h->inbox, n * sizeof(in[0]));
	h->ninbox = 0;
	atomic_flag_clear_explicit(&h->inbox_lock, memory_order_release);
	for (unsigned i = 0; i < n; i++) {
		const struct ppd_msg *m = &in[i];
		if (m->type == PPD_MSG_JOB) {
			struct ppd_pjob *j = NULL;
			for (unsigned k = 0; k < PPD_PJOBS && !j; k++)
				if (!h->jobs[k].used)
					j = &h->jobs[k];
			if (!j) { /* cannot happen: load bounds the jobs */
				struct ppd_pjob tmp = {.r = m->r, .pid = m->pid, .slot = m->slot};
				job_end(h, &tmp, 0);
				continue;
			}
			uint32_t mp = maxp(h->d);
			*j = (struct ppd_pjob){.used = 1,
					       .r = m->r,
					       .pid = m->pid,
					       .job = m->job,
					       .src = m->src,
					       .dst = m->dst,
					       .src_inc = m->src_inc,
					       .dst_inc = m->dst_inc,
					       .msg_id = m->msg_id,
					       .tag = m->tag,
					       .slot = m->slot,
					       .addr = m->addr,
					       .len = m->len,
					       .off = m->off,
					       .timeout_ns = m->timeout_ns,
					       .progress = now,
					       .nframes =
						   (uint32_t)((m->len - m->off + mp - 1) / mp)};
			memcpy(j->mac, m->mac, 6);
			continue;
		}
		if (m->type == PPD_MSG_BYE) {
			for (unsigned k = 0; k < PPD_PJOBS; k++) {
				struct ppd_pjob *j = &h->jobs[k];
				if (j->used && j->job == m->job && j->dst == m->dst &&
				    j->dst_inc == m->dst_inc)
					j->failing |= m->msg_id ? FAIL_NOW : 1;
			}
			continue;
		}
		/* An ACK or NACK for the job running on its flow. */
		for (unsigned k = 0; k < PPD_PJOBS; k++) {
			struct ppd_pjob *j = &h->jobs[k];
			if (!j->used || !j->started || j->job != m->job || j->src != m->src ||
			    j->dst != m->dst || j->src_inc != m->src_inc ||
			    j->dst_inc != m->dst_inc)
				continue;
			struct pp_gbn_tx *t = &j->flow->tx;
			if (pp_gbn_tx_restart_at(t, j->seq0, m->ack, WINDOW, j->flow->fresh)) {
				/* The receiver expects another seq than this job
				 * started at (a job before it ended with frames
				 * unacked, or the flow is new after its entry was
				 * given up): nothing of this one is in, so it starts
				 * again there. */
				flow_start(h->d, t, m->ack);
				j->seq0 = m->ack;
				break;
			}
			if (pp_gbn_tx_ack(t, m->ack, now)) {
				j->flow->fresh = 0;
				j->progress = now;
			}
			if (m->type == PPD_MSG_NACK)
				pp_gbn_tx_nack(t, m->ack);
			break;
		}
	}
}

unsigned ppd_pull_run(struct ppd_handler *h)
{
	if (!atomic_load_explicit(&h->load, memory_order_relaxed) &&
	    !__atomic_load_n(&h->ninbox, __ATOMIC_RELAXED))
		return 0;
	uint64_t now = ppd_now_ns();
	unsigned work = 0;
	take_msgs(h, now);
	for (unsigned k = 0; k < PPD_PJOBS; k++) {
		struct ppd_pjob *j = &h->jobs[k];
		if (!j->used)
			continue;
		if (!rank_alive(j->r, j->pid)) {
			job_end(h, j, 0); /* withdrawn: no more DATA */
			continue;
		}
		if (__atomic_load_n(&j->r->hdr->pulls[j->slot].state, __ATOMIC_ACQUIRE) ==
		    PPD_PULL_CANCEL)
			j->failing |= 1; /* the rank dropped the send */
		if (!j->started) {
			struct ppd_flow *f = flow_get(h, j, now);
			if (f->busy)
				continue; /* one job per flow at a time */
			f->busy = 1;
			j->flow = f;
			flow_start(h->d, &f->tx, pp_gbn_tx_next(&f->tx));
			j->seq0 = pp_gbn_tx_next(&f->tx);
			j->started = 1;
			j->progress = now;
		}
		struct pp_gbn_tx *t = &j->flow->tx;
		if (pp_gbn_tx_acked_since(t, j->seq0) == j->nframes) {
			job_end(h, j, 1);
			work++;
			continue;
		}
		if ((j->failing & FAIL_NOW) || (j->failing && !pp_gbn_tx_busy(t))) {
			job_end(h, j, 0);
			work++;
			continue;
		}
		if (pp_gbn_tx_timer(t, now, UINT32_MAX) == PP_GBN_PROBE &&
		    now - j->progress > j->timeout_ns) {
			job_end(h, j, 0); /* the receiver is silent */
			continue;
		}
		/* What must go again first, then new frames while the window
		 * is open; a frame's payload is read before its seq is taken,
		 * so a range the rank cannot read takes none. */
		uint32_t seq;
		while (h->ntxq < TX_ROOM && pp_gbn_tx_resend_due(t, &seq)) {
			struct pp_buf *b;
			int rc = frame_read(h, j, seq - j->seq0, &b);
			if (rc <= 0) {
				j->failing |= rc < 0;
				break;
			}
			pp_gbn_tx_resend(t, now, &seq);
			frame_send(h, j, b, seq - j->seq0, seq, 1);
			work++;
		}
		while (!j->failing && pp_gbn_tx_sent_since(t, j->seq0) < j->nframes &&
		       pp_gbn_tx_open(t, WINDOW) && h->ntxq < TX_ROOM) {
			struct pp_buf *b;
			int rc = frame_read(h, j, pp_gbn_tx_sent_since(t, j->seq0), &b);
			if (rc <= 0) {
				j->failing |= rc < 0;
				break;
			}
			seq = pp_gbn_tx_send(t, now);
			frame_send(h, j, b, seq - j->seq0, seq, 0);
			work++;
		}
	}
	__atomic_store_n(&h->c.pull_jobs, atomic_load(&h->load), __ATOMIC_RELAXED);
	return work;
}
