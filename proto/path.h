/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the path to one peer carries (docs/protocol.md, rule 1, "BTP fitted
 * to the link"): the least round trip seen lately and the delivery rate, so
 * the bytes in flight that keep the path busy for one round trip, its
 * bandwidth-delay product. A leaf: the engine feeds it the round-trip
 * samples of its go-back-N sender and the bytes each ack releases, and asks
 * it how much a message may push before its PULL can come back.
 *
 * Until a rate is measured, the engine starts it at the link's (rate_hint),
 * which also bounds every sample: acks that arrive bunched would otherwise
 * measure more than the link carries.
 * Round trip: the least sample of the last PP_PATH_RTT_EPOCH, so a path that
 * got slower is followed within that time. Rate: bytes acknowledged over an
 * interval of at least PP_PATH_MIN_INTERVAL and two least round trips, taken
 * only when the interval released at least PP_PATH_MIN_BYTES (a ping-pong of
 * small messages says nothing of the rate); the estimate follows a higher
 * sample at once and a lower one slowly. A lower sample from an interval in
 * which the sender ran out of frames (an ack left nothing in flight: a
 * ping-pong, a window that the application refilled late) is not taken at
 * all: it measured the application, not the path (BBR's "application
 * limited" samples). Measured: a ping-pong of 1 KiB .. 64 KiB in one
 * process had brought a 1250 MB/s estimate down to 582, so 8 KiB waited
 * for a PULL (18.5 us against Push-All's 8.8).
 *
 * The PULL's own round trip: from a split message's FIRST frame leaving to
 * its PULL coming in, least of the epoch like the path's. It is the path's
 * round trip when the receive was posted, and more when the receiver posts
 * it only after its own send completed (a blocking ping-pong: pp_send, then
 * pp_recv); the pushes must cover that, not the path's alone, or the sender
 * sits idle for the difference (pull_wait_ns). Measured (packet: veth, a
 * blocking 16 KiB ping-pong, BTP(1) 80 and BTP(2) 0 to 8 KiB): the sender's
 * engine had nothing to send for 10.5 to 17.5 us a message while it waited
 * for the PULL, the path's round trip being 8 us. Fitted to the PULL's round
 * trip (and in whole frames, send.c), 32 KiB went from 1.45, 1.17 and 1.12
 * times Push-All's one-way time to 0.97, 1.04 and 1.00 (three runs each,
 * alternated).
 */
#ifndef PP_PROTO_PATH_H
#define PP_PROTO_PATH_H

#include <stdint.h>

#define PP_PATH_RTT_EPOCH    1000000000ull /* ns a least round trip is kept */
#define PP_PATH_MIN_INTERVAL 50000ull	   /* ns: shortest rate interval */
#define PP_PATH_MIN_BYTES    32768u	   /* bytes an interval must release */

struct pp_path {
	uint64_t rtt_min;  /* least round trip of this epoch, ns (0: none yet) */
	uint64_t rtt_t;	   /* when this epoch started */
	uint64_t pull_rtt; /* least FIRST-to-PULL time of its epoch, ns (0: none yet) */
	uint64_t pull_t;   /* when that epoch started */
	uint64_t rate;	   /* delivery rate, bytes per ms (0: none yet) */
	uint64_t rate_max; /* the link's rate, bytes per ms: no sample above it (0: none) */
	uint64_t t0;	   /* start of the current rate interval (0: none) */
	uint64_t bytes;	   /* bytes acknowledged since t0 */
	uint64_t samples;  /* rate samples taken */
	uint8_t limited;   /* the sender ran dry during the current interval */
};

/* Keep in *least the least sample of its epoch (started at *since): r at
 * now replaces it when smaller, or when the epoch is over. */
static inline void pp_path_least(uint64_t *least, uint64_t *since, uint64_t now, uint64_t r)
{
	if (r && (!*least || r < *least || now - *since > PP_PATH_RTT_EPOCH)) {
		*least = r;
		*since = now;
	}
}

/* A round-trip sample r (ns) at now. */
static inline void pp_path_rtt(struct pp_path *p, uint64_t now, uint64_t r)
{
	pp_path_least(&p->rtt_min, &p->rtt_t, now, r);
}

/* A split message's PULL came r ns after its FIRST frame left, at now. */
static inline void pp_path_pull(struct pp_path *p, uint64_t now, uint64_t r)
{
	pp_path_least(&p->pull_rtt, &p->pull_t, now, r);
}

/* An ack released n payload bytes at now; dry: it left nothing in flight
 * and nothing to send. */
static inline void pp_path_acked(struct pp_path *p, uint64_t now, uint64_t n, int dry)
{
	if (!p->t0) {
		p->t0 = now;
		p->bytes = 0;
		p->limited = (uint8_t)dry;
		return;
	}
	p->bytes += n;
	uint64_t dt = now - p->t0, least = 2 * p->rtt_min;
	if (dt < PP_PATH_MIN_INTERVAL || dt < least) {
		p->limited |= (uint8_t)dry;
		return;
	}
	if (p->bytes >= PP_PATH_MIN_BYTES) {
		uint64_t s = p->bytes * 1000000u / dt; /* bytes per ms */
		if (p->rate_max && s > p->rate_max)
			s = p->rate_max; /* acks that came bunched */
		if (s >= p->rate)
			p->rate = s;
		else if (!p->limited)
			p->rate -= (p->rate - s) / 16;
		p->samples++;
	}
	p->t0 = now;
	p->bytes = 0;
	p->limited = (uint8_t)dry; /* the next interval starts with nothing to send */
}

/* Bytes a message pushes so that its PULL is back before they are out: the
 * rate times the longer of the path's and the PULL's round trips (the
 * path's bandwidth-delay product at least), or 0 while neither is known. */
static inline uint64_t pp_path_fit(const struct pp_path *p)
{
	uint64_t rtt = p->pull_rtt > p->rtt_min ? p->pull_rtt : p->rtt_min;
	return p->rate * rtt / 1000000u;
}

#endif
