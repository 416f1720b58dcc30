/* SPDX-License-Identifier: BSD-3-Clause */
/* ppd's pull handlers: PULLs of ranks served from the daemon, each handler
 * on its own go-back-N stream (see ppd.h, "Pull serving"). Hot path: no
 * allocation; the one syscall is the CMA read of each frame's payload. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "engine.h"
#include "pp_log.h"
#include "ppd.h"
#include "rtt.h"
#include "wire.h"

#define WINDOW	       64u	  /* frames in flight per job */
#define RTO_NS	       1000000u	  /* smallest timeout: ranks share cores with the daemon */
#define RTO_MAX_NS     50000000u  /* largest after back-off */
#define TIMEOUT_MIN_NS 100000000u /* least silence before a job fails */
#define TX_ROOM	       PPD_BURST  /* frames a pass may queue for the NIC */

_Static_assert(PPD_SERVERS == PP_PROTO_STREAMS - 1, "a stream per serving handler");

#define COUNT(h, field, n) __atomic_store_n(&(h)->c.field, (h)->c.field + (n), __ATOMIC_RELAXED)

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

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
		memcpy(m.mac, f + 6, 6);
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

/* Rank dst (incarnation dst_inc) of job left: what it did not ack by now
 * it never will, so every job sending to it ends. */
static void bye_post(struct ppd *d, uint32_t job, uint32_t dst, uint32_t dst_inc)
{
	struct ppd_msg m = {.type = PPD_MSG_BYE, .job = job, .dst = dst, .dst_inc = dst_inc};
	int n = d->nh < PPD_SERVERS ? d->nh : PPD_SERVERS;
	for (int i = 0; i < n; i++)
		if (atomic_load_explicit(&d->h[i].load, memory_order_relaxed))
			post(&d->h[i], &m); /* full: the job times out instead */
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
		if (pp_wire_decode(f, len, &chk, &w, &pl, &why) == 0)
			bye_post(d, w.job, w.src_rank, w.src_inc);
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
		bye_post(d, r->job, w.src_rank, w.src_inc);
		return 0; /* the rank needs it too */
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

static uint32_t rnd32(struct ppd_handler *h)
{
	uint64_t x = h->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	h->rng = x;
	return (uint32_t)(x >> 16);
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
				  .snd_nxt = evicted ? rnd32(h) : 0,
				  .fresh = (uint8_t)evicted,
				  .last = now,
				  .used = 1};
	COUNT(h, flows_evicted, (uint64_t)evicted);
	return slot;
}

/* Round-trip estimate of a flow (RFC 6298 gains), one timed frame at a
 * time; samples include the receiving rank's scheduling gaps, which is
 * what the timeout must ride out. */
static void rtt_sample(struct ppd_flow *f, uint64_t r)
{
	pp_rtt_sample(&f->srtt, &f->rttvar, r);
}

static uint64_t rto_of(const struct ppd_flow *f)
{
	uint64_t t = f->srtt + 4 * f->rttvar;
	return t < RTO_NS ? RTO_NS : t > RTO_MAX_NS ? RTO_MAX_NS : t;
}

/* End job j: the entry goes DONE or FAILED (or was dropped by the rank, or
 * the rank is gone: nothing to tell). */
static void job_end(struct ppd_handler *h, struct ppd_pjob *j, int ok)
{
	if (j->started) {
		/* Frames sent but not acked may or may not be in: the next
		 * job resynchronises on the receiver's first ack. */
		j->flow->snd_nxt = j->seq0 + j->sent;
		j->flow->busy = 0;
	}
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

/* Frame k of job j into a NIC buffer on h's txq. 1 sent, 0 no buffer now,
 * -1 the rank's range cannot be read. */
static int send_frame(struct ppd_handler *h, struct ppd_pjob *j, uint32_t k, int retx)
{
	struct ppd *d = h->d;
	uint32_t mp = maxp(d);
	uint64_t off = j->off + (uint64_t)k * mp;
	uint32_t n = (uint32_t)(j->len - off < mp ? j->len - off : mp);
	struct pp_buf *b;
	if (pp_port_alloc(d->port, &b, 1) != 1)
		return 0;
	uint8_t *pl = b->data + PP_WIRE_MIN_FRAME;
	struct iovec local = {pl, n};
	struct iovec remote = {(void *)(uintptr_t)(j->addr + off), n};
	if (process_vm_readv(j->pid, &local, 1, &remote, 1, 0) != (ssize_t)n) {
		pp_port_free(d->port, &b, 1);
		COUNT(h, drops[PPD_DROP_BAD_RANGE], 1);
		return -1;
	}
	COUNT(h, ext_bytes, n);
	struct pp_wire_hdr w = {.type = PP_WIRE_DATA,
				.flags = (uint8_t)((off + n == j->len ? PP_WIRE_F_LAST : 0) |
						   (retx ? PP_WIRE_F_RETX : 0)),
				.payload_len = (uint16_t)n,
				.job = j->job,
				.stream = (uint16_t)(1 + h->id),
				.ack_stream = PP_PROTO_NO_ACK,
				.seq = j->seq0 + k,
				.src_rank = j->src,
				.dst_rank = j->dst,
				.msg_id = j->msg_id,
				.tag = j->tag,
				.msg_len = j->len,
				.offset = off,
				.src_inc = j->src_inc,
				.dst_inc = j->dst_inc};
	if (pp_wire_encode_hdr(b->data, b->cap, j->mac, d->info.mac, &w, pl) <= 0) {
		pp_port_free(d->port, &b, 1);
		return -1;
	}
	b->len = PP_WIRE_MIN_FRAME + n;
	h->txq[h->ntxq++] = b;
	COUNT(h, pull_frames, 1);
	if (retx)
		COUNT(h, pull_retx, 1);
	return 1;
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
						   (uint32_t)((m->len - m->off + mp - 1) / mp),
					       .rto = RTO_NS};
			memcpy(j->mac, m->mac, 6);
			continue;
		}
		if (m->type == PPD_MSG_BYE) {
			for (unsigned k = 0; k < PPD_PJOBS; k++) {
				struct ppd_pjob *j = &h->jobs[k];
				if (j->used && j->job == m->job && j->dst == m->dst &&
				    j->dst_inc == m->dst_inc && j->una < j->nframes) {
					j->failing = 1;
					j->nxt = j->una;
				}
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
			uint32_t una = j->seq0 + j->una, sent = j->seq0 + j->sent;
			if (j->una == 0 && m->ack != j->seq0 &&
			    (seq_lt(m->ack, j->seq0) || seq_lt(sent, m->ack)) &&
			    (j->flow->fresh ||
			     (uint32_t)(m->ack - j->seq0 + 4 * WINDOW) < 8 * WINDOW)) {
				/* The receiver expects another seq than this job
				 * started at (a job before it ended with frames
				 * unacked, or the flow is new after its entry was
				 * given up): nothing of this one is in, so it starts
				 * again there. */
				j->seq0 = m->ack;
				j->nxt = j->sent = 0;
				j->probing = j->probe_owed = 0;
				j->rtt_on = 0;
				break;
			}
			if (seq_lt(una, m->ack) && !seq_lt(sent, m->ack)) {
				/* After a probe, an ack for exactly it says the
				 * receiver lacks the rest: go back. */
				int lacks_rest = j->probing && m->ack == una + 1;
				j->flow->fresh = 0;
				j->probing = j->probe_owed = 0;
				j->una = m->ack - j->seq0;
				if (j->rtt_on && j->rtt_k < j->una) {
					rtt_sample(j->flow, now - j->rtt_t0);
					j->rtt_on = 0;
				}
				j->tries = 0;
				j->progress = now;
				j->rto = rto_of(j->flow);
				j->deadline = now + j->rto;
				if (lacks_rest || seq_lt(j->seq0 + j->nxt, m->ack))
					j->nxt = j->una;
			}
			if (m->type == PPD_MSG_NACK && !seq_lt(m->ack, j->seq0 + j->una) &&
			    seq_lt(m->ack, j->seq0 + j->sent)) {
				j->nxt = m->ack - j->seq0; /* go back */
				j->probing = j->probe_owed = 0;
				j->rtt_on = 0;
			}
			break;
		}
	}
}

unsigned ppd_pull_run(struct ppd_handler *h)
{
	if (!atomic_load_explicit(&h->load, memory_order_relaxed) &&
	    !__atomic_load_n(&h->ninbox, __ATOMIC_RELAXED))
		return 0;
	uint64_t now = now_ns();
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
			j->failing = 1; /* the rank dropped the send */
		if (!j->started) {
			struct ppd_flow *f = flow_get(h, j, now);
			if (f->busy)
				continue; /* one job per flow at a time */
			f->busy = 1;
			j->flow = f;
			j->seq0 = f->snd_nxt;
			j->started = 1;
			j->progress = now;
			j->rto = rto_of(f);
			j->deadline = now + j->rto;
		}
		if (j->una == j->nframes) {
			job_end(h, j, 1);
			work++;
			continue;
		}
		if (j->failing && j->una == j->nxt) {
			job_end(h, j, 0);
			work++;
			continue;
		}
		if (j->una != j->sent && now >= j->deadline) {
			j->tries++;
			if (now - j->progress > j->timeout_ns) {
				j->nxt = j->una;
				job_end(h, j, 0);
				continue;
			}
			j->rto = j->rto * 2 > RTO_MAX_NS ? RTO_MAX_NS : j->rto * 2;
			j->deadline = now + j->rto;
			/* Resend only the oldest frame: a receiver that was
			 * merely slow has the rest, and its ack says so. */
			j->probing = j->probe_owed = 1;
			j->rtt_on = 0;
		}
		if (j->probe_owed && h->ntxq < TX_ROOM) {
			int rc = send_frame(h, j, j->una, 1);
			if (rc < 0)
				j->failing = 1;
			else if (rc > 0)
				j->probe_owed = 0;
			work += rc > 0;
		}
		while (!j->failing && !j->probing && j->nxt < j->nframes &&
		       j->nxt - j->una < WINDOW && h->ntxq < TX_ROOM) {
			if (j->una == j->sent)
				j->deadline = now + j->rto;
			if (!j->rtt_on && j->nxt == j->sent) {
				j->rtt_on = 1;
				j->rtt_k = j->nxt;
				j->rtt_t0 = now;
			}
			int rc = send_frame(h, j, j->nxt, j->nxt < j->sent);
			if (rc == 0)
				break;
			if (rc < 0) {
				j->failing = 1;
				break;
			}
			j->nxt++;
			if (j->nxt > j->sent)
				j->sent = j->nxt;
			work++;
		}
	}
	__atomic_store_n(&h->c.pull_jobs, atomic_load(&h->load), __ATOMIC_RELAXED);
	return work;
}
