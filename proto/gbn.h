/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Go-back-N, the reliability of one stream in one direction (docs/protocol.md,
 * rule 3), as two leaf objects: the sender's and the receiver's. The engine
 * keeps one sender per peer (its own stream) and one receiver per (peer,
 * stream); a node daemon's pull handlers keep one sender per flow. Neither
 * object knows frames or buffers: callers send, regenerate and release
 * frames by sequence number, and ask the objects what is due.
 *
 * Sender. Sequence numbers [una, nxt) are sent and not yet acknowledged; at
 * most window of them (pp_gbn_tx_open). A cumulative ack moves una on and
 * restarts the retransmission timer (RTO = srtt + 4 rttvar within
 * [rto_min, rto_max], RFC 6298 gains, one frame timed at a time and none
 * across a resend: Karn). A NACK for seq in [una, nxt) goes back: [seq, nxt)
 * is sent again, oldest first, before anything new. A timeout doubles the
 * RTO and resends una alone (a probe): an ack for exactly it says the
 * receiver lacks the rest, which then goes again; an ack reaching further is
 * a slow receiver working through its backlog, which needs nothing sent
 * again. After max_tries timeouts without progress the stream is lost.
 *
 * Receiver. Only rcv_nxt is taken. A duplicate (older seq) is answered by an
 * ack at once; a frame past a gap by one NACK per gap. A frame taken owes a
 * cumulative ack within ack_delay, or at once after ack_every frames or when
 * the caller says so (a frame that ends a message). A frame in sequence that
 * the caller cannot take now (no room) is refused: an ack goes at once (the
 * sender sees we are alive) and the frame comes again.
 *
 * All sequence arithmetic is serial (pp_gbn_lt): numbers wrap.
 */
#ifndef PP_PROTO_GBN_H
#define PP_PROTO_GBN_H

#include <stdint.h>

#include "rtt.h"

/* a before b, in serial arithmetic. */
static inline int pp_gbn_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* ---- sender ---- */

struct pp_gbn_tx {
	uint32_t una;	   /* oldest unacknowledged seq */
	uint32_t nxt;	   /* next new seq */
	uint32_t rtx_nxt;  /* next seq to send again, while below rtx_end */
	uint32_t rtx_end;  /* end of the range being sent again */
	uint8_t probing;   /* a timeout resent una alone; its ack decides */
	uint8_t rtt_on;	   /* rtt_seq is being timed */
	uint32_t rtt_seq;  /* the timed frame */
	uint32_t tries;	   /* timeouts without progress */
	uint64_t rtt_t0;   /* when it was sent */
	uint64_t rtt_new;  /* the sample the last ack took, ns (0: it took none) */
	uint64_t srtt;	   /* smoothed round trip, ns (0: no sample yet) */
	uint64_t rttvar;   /* its mean deviation, ns */
	uint64_t rto;	   /* current timeout */
	uint64_t rto_min;  /* least timeout */
	uint64_t rto_max;  /* largest timeout after back-off */
	uint64_t deadline; /* when the timer fires, while [una, nxt) is not empty */
};

/* What a timer check found. */
enum pp_gbn_timer {
	PP_GBN_QUIET = 0, /* nothing due */
	PP_GBN_PROBE,	  /* timed out: una is sent again (pp_gbn_tx_resend) */
	PP_GBN_LOST,	  /* max_tries timeouts without progress: the stream is lost */
};

/* A sender starting at seq, with timeouts in [rto_min, rto_max] (the first
 * rto_min); any round-trip estimate is kept. */
void pp_gbn_tx_start(struct pp_gbn_tx *t, uint32_t seq, uint64_t rto_min, uint64_t rto_max);

/* 1 when a new frame fits in a window of window frames. */
static inline int pp_gbn_tx_open(const struct pp_gbn_tx *t, uint32_t window)
{
	return t->nxt - t->una < window;
}

/* The seq the next new frame takes. */
static inline uint32_t pp_gbn_tx_next(const struct pp_gbn_tx *t)
{
	return t->nxt;
}

/* 1 when frames are sent and unacknowledged. */
static inline int pp_gbn_tx_busy(const struct pp_gbn_tx *t)
{
	return t->una != t->nxt;
}

/* The timeout after progress: srtt + 4 rttvar within [rto_min, rto_max]. */
static inline uint64_t pp_gbn_tx_rto(const struct pp_gbn_tx *t)
{
	uint64_t r = t->srtt + 4 * t->rttvar;
	if (r < t->rto_min)
		r = t->rto_min;
	return r > t->rto_max ? t->rto_max : r;
}

/* The seq of a new frame sent now (arms the timer when it is the only one
 * out, and times it when no frame is being timed). */
static inline uint32_t pp_gbn_tx_send(struct pp_gbn_tx *t, uint64_t now)
{
	if (t->una == t->nxt)
		t->deadline = now + t->rto;
	uint32_t seq = t->nxt++;
	t->rtx_nxt = t->rtx_end = t->nxt;
	if (!t->rtt_on) {
		t->rtt_on = 1;
		t->rtt_seq = seq;
		t->rtt_t0 = now;
	}
	return seq;
}

/* 1 and *seq when a frame is due to be sent again now (after a NACK, a
 * probe or an ack that says the rest is lacking), else 0. */
static inline int pp_gbn_tx_resend(struct pp_gbn_tx *t, uint64_t now, uint32_t *seq)
{
	if (!pp_gbn_lt(t->rtx_nxt, t->rtx_end))
		return 0;
	*seq = t->rtx_nxt++;
	if (t->rtx_nxt == t->rtx_end)
		t->deadline = now + t->rto;
	return 1;
}

/* 1 and *seq when a frame is due to be sent again, without taking it: a
 * caller that must read the frame first (it may fail) takes it afterwards
 * with pp_gbn_tx_resend. */
static inline int pp_gbn_tx_resend_due(const struct pp_gbn_tx *t, uint32_t *seq)
{
	*seq = t->rtx_nxt;
	return pp_gbn_lt(t->rtx_nxt, t->rtx_end);
}

/* Frames of a run started at base: sent so far, and acknowledged. */
static inline uint32_t pp_gbn_tx_sent_since(const struct pp_gbn_tx *t, uint32_t base)
{
	return t->nxt - base;
}

static inline uint32_t pp_gbn_tx_acked_since(const struct pp_gbn_tx *t, uint32_t base)
{
	return t->una - base;
}

/* A run of frames started at base, none acknowledged yet, meets an ack that
 * is neither base nor within [base, nxt]: 1 when the receiver expects the
 * run to start at ack instead, and the caller restarts it there
 * (pp_gbn_tx_start). So it does when a run before this one ended with frames
 * unacknowledged (the ack lies within 4 windows of base; further away it is
 * a stray of another life), or whatever the ack when the stream is fresh
 * (its receiver's state is unknown: a flow made anew). */
static inline int pp_gbn_tx_restart_at(const struct pp_gbn_tx *t, uint32_t base, uint32_t ack,
				       uint32_t window, int fresh)
{
	return t->una == base && ack != base && (pp_gbn_lt(ack, base) || pp_gbn_lt(t->nxt, ack)) &&
	       (fresh || (uint32_t)(ack - base + 4 * window) < 8 * window);
}

/* The receiver answered (a standalone ack): alive, even when its ack is not
 * news (it refused a frame for lack of room), so timeouts start over. */
static inline void pp_gbn_tx_heard(struct pp_gbn_tx *t)
{
	t->tries = 0;
}

/* A cumulative ack: every seq before ack is received. Returns how many
 * frames it acknowledged for the first time, [ack - n, ack) (0: not news:
 * old, or beyond what was sent). */
static inline uint32_t pp_gbn_tx_ack(struct pp_gbn_tx *t, uint32_t ack, uint64_t now)
{
	if (!pp_gbn_lt(t->una, ack) || pp_gbn_lt(t->nxt, ack))
		return 0;
	/* After a probe (rtx_end = una + 1), an ack for exactly that frame says
	 * the receiver lacks everything after it. */
	int lacks_rest = t->probing && ack == t->rtx_end;
	uint32_t n = ack - t->una;
	t->probing = 0;
	t->una = ack;
	if (pp_gbn_lt(t->rtx_nxt, t->una))
		t->rtx_nxt = t->una;
	if (pp_gbn_lt(t->rtx_end, t->rtx_nxt) || lacks_rest)
		t->rtx_end = lacks_rest ? t->nxt : t->rtx_nxt;
	t->rtt_new = 0;
	if (t->rtt_on && pp_gbn_lt(t->rtt_seq, ack)) {
		t->rtt_new = now - t->rtt_t0;
		pp_rtt_sample(&t->srtt, &t->rttvar, t->rtt_new);
		t->rtt_on = 0;
	}
	t->rto = pp_gbn_tx_rto(t);
	t->tries = 0;
	t->deadline = now + t->rto;
	return n;
}

/* A NACK: the receiver expects seq; [seq, nxt) goes again when seq is in
 * [una, nxt). */
void pp_gbn_tx_nack(struct pp_gbn_tx *t, uint32_t seq);

/* Earliest time pp_gbn_tx_timer has work, UINT64_MAX when none. */
static inline uint64_t pp_gbn_tx_expiry(const struct pp_gbn_tx *t)
{
	return t->una != t->nxt ? t->deadline : UINT64_MAX;
}

/* Run the timer at now: PP_GBN_PROBE (back-off, una goes again) or
 * PP_GBN_LOST after more than max_tries timeouts without progress. */
enum pp_gbn_timer pp_gbn_tx_timer(struct pp_gbn_tx *t, uint64_t now, uint32_t max_tries);

/* Forget what is unacknowledged (the peer is lost): nothing is due. */
void pp_gbn_tx_drop(struct pp_gbn_tx *t);

/* ---- receiver ---- */

/* What the receiver owes (bit flags). */
enum pp_gbn_owe {
	PP_GBN_OWE_ACK = 0x01,	   /* a cumulative ack, by ack_deadline */
	PP_GBN_OWE_ACK_NOW = 0x02, /* ... due now */
	PP_GBN_OWE_NACK = 0x04,	   /* a NACK for rcv_nxt */
};

struct pp_gbn_rx {
	uint32_t rcv_nxt;      /* next seq expected */
	uint32_t unacked;      /* frames taken since our last ack */
	uint32_t nacked;       /* rcv_nxt a NACK was last owed for, + 1 (0: none) */
	uint64_t ack_deadline; /* when an owed ack must go */
	uint8_t owe;	       /* enum pp_gbn_owe bits */
};

/* What a sequenced frame is to the receiver. */
enum pp_gbn_verdict {
	PP_GBN_NEXT = 0, /* rcv_nxt: take it (pp_gbn_rx_take) or refuse it */
	PP_GBN_DUP,	 /* seen already: an ack is owed now */
	PP_GBN_GAP,	 /* past a gap: a NACK is owed (once per gap) */
};

/* Judge the frame with sequence seq. */
static inline enum pp_gbn_verdict pp_gbn_rx_check(struct pp_gbn_rx *x, uint32_t seq)
{
	if (seq == x->rcv_nxt)
		return PP_GBN_NEXT;
	if (pp_gbn_lt(seq, x->rcv_nxt)) {
		x->owe |= PP_GBN_OWE_ACK | PP_GBN_OWE_ACK_NOW; /* ack a duplicate again */
		return PP_GBN_DUP;
	}
	if (x->nacked != x->rcv_nxt + 1) {
		x->owe |= PP_GBN_OWE_NACK;
		x->nacked = x->rcv_nxt + 1;
	}
	return PP_GBN_GAP;
}

/* The frame at rcv_nxt was taken at now: an ack is owed within delay, at
 * once after every frames or when now_flag says so. */
static inline void pp_gbn_rx_take(struct pp_gbn_rx *x, uint64_t now, uint64_t delay, uint32_t every,
				  int now_flag)
{
	x->rcv_nxt++;
	x->nacked = 0;
	if (!(x->owe & PP_GBN_OWE_ACK)) {
		x->owe |= PP_GBN_OWE_ACK;
		x->ack_deadline = now + delay;
	}
	if (++x->unacked >= every || now_flag)
		x->owe |= PP_GBN_OWE_ACK_NOW;
}

/* The frame at rcv_nxt could not be taken (it comes again): ack at once. */
static inline void pp_gbn_rx_refuse(struct pp_gbn_rx *x)
{
	x->owe |= PP_GBN_OWE_ACK | PP_GBN_OWE_ACK_NOW;
}

/* Owe an ack soon although no frame came (a credit update): due at the
 * next look unless one is owed already. */
static inline void pp_gbn_rx_owe(struct pp_gbn_rx *x)
{
	if (!(x->owe & PP_GBN_OWE_ACK)) {
		x->owe |= PP_GBN_OWE_ACK;
		x->ack_deadline = 0;
	}
}

/* Owe an ack at once (a PING: its prober waits for the answer). */
static inline void pp_gbn_rx_owe_now(struct pp_gbn_rx *x)
{
	x->owe |= PP_GBN_OWE_ACK_NOW;
}

/* 1 when an ack is owed, due or not. */
static inline int pp_gbn_rx_owes_ack(const struct pp_gbn_rx *x)
{
	return (x->owe & PP_GBN_OWE_ACK) != 0;
}

/* 1 when anything is owed (an ack or a NACK). */
static inline int pp_gbn_rx_owes(const struct pp_gbn_rx *x)
{
	return x->owe != 0;
}

/* Nothing is owed any more (the peer is gone). */
static inline void pp_gbn_rx_forget(struct pp_gbn_rx *x)
{
	x->owe = 0;
}

/* 1 when an ack is due at now. */
static inline int pp_gbn_rx_ack_due(const struct pp_gbn_rx *x, uint64_t now)
{
	return (x->owe & PP_GBN_OWE_ACK) &&
	       ((x->owe & PP_GBN_OWE_ACK_NOW) || now >= x->ack_deadline);
}

/* An ack of this stream went (alone or riding on a frame). */
static inline void pp_gbn_rx_acked(struct pp_gbn_rx *x)
{
	x->owe &= (uint8_t) ~(PP_GBN_OWE_ACK | PP_GBN_OWE_ACK_NOW);
	x->unacked = 0;
}

/* 1, and the NACK counted as sent, when one is owed. */
static inline int pp_gbn_rx_nack_due(struct pp_gbn_rx *x)
{
	if (!(x->owe & PP_GBN_OWE_NACK))
		return 0;
	x->owe &= (uint8_t)~PP_GBN_OWE_NACK;
	return 1;
}

/* Earliest time an owed ack turns due, UINT64_MAX when none waits. */
static inline uint64_t pp_gbn_rx_expiry(const struct pp_gbn_rx *x)
{
	return (x->owe & PP_GBN_OWE_ACK) && !(x->owe & PP_GBN_OWE_ACK_NOW) ? x->ack_deadline
									   : UINT64_MAX;
}

/* Run the ack timer at now. */
static inline void pp_gbn_rx_timer(struct pp_gbn_rx *x, uint64_t now)
{
	if ((x->owe & PP_GBN_OWE_ACK) && now >= x->ack_deadline)
		x->owe |= PP_GBN_OWE_ACK_NOW;
}

#endif
