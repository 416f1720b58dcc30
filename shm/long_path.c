/* SPDX-License-Identifier: BSD-3-Clause */
/* The copy call or the rings for a long message's rest; the rules are in long_path.h. */
#include "long_path.h"

static uint64_t *rate_of(struct pp_shm_path *p, int ring)
{
	return ring ? &p->ring_rate : &p->copy_rate;
}

/* The rings only when clearly faster: the copy call needs nothing of the
 * sender, and where the two are close their figures swap from run to run
 * (cores far apart: copy calls 15-21 GB/s, rings 14-16; close: the rings
 * twice the calls and more). */
static void choose(struct pp_shm_path *p)
{
	if (p->copy_rate && p->ring_rate)
		p->use_ring = p->ring_rate * 4 > p->copy_rate * 5;
}

/* A try is over: its best sample is its path's figure (a try that got
 * none leaves a figure it had, else counts its path as slow). */
static void commit(struct pp_shm_path *p)
{
	uint64_t *rate = rate_of(p, p->trial_ring);
	if (p->trial_best)
		*rate = p->trial_best;
	else if (!*rate)
		*rate = 1;
	p->trial_on = 0;
	choose(p);
}

/* A sample: bytes in ns by path ring (0: the copy call). In a try the best
 * one counts: the first messages after a switch pay for the other path's
 * cache state (the sender's lines in its own cache: a copy call right after
 * the rings measured 2.5 GB/s, against 17 in a run of calls). Otherwise a
 * sample moves the figure a quarter of the way: a preempted call is one
 * among many. */
static void sample(struct pp_shm_path *p, int ring, uint64_t bytes, uint64_t ns)
{
	uint64_t r = bytes * 1000 / (ns ? ns : 1);
	r = r ? r : 1; /* measured, however slow */
	if (p->trial_on && p->trial_ring == ring) {
		p->trial_best = r > p->trial_best ? r : p->trial_best;
		if (!--p->trial_left)
			commit(p);
		return;
	}
	uint64_t *rate = rate_of(p, ring);
	*rate = *rate ? (3 * *rate + r) / 4 : r;
	choose(p);
}

static void ring_end(struct pp_shm_path *p, uint64_t now)
{
	p->ring_want = 0;
	sample(p, 1, p->ring_got, now - p->ring_from);
}

/* A ring measurement that waited PP_SHM_PATH_WAIT_NS: a sender that never
 * served the rings in that time makes them slow; traffic that stopped
 * before the bytes it waited for leaves no sample (idle time is no speed). */
static void ring_timeout(struct pp_shm_path *p, uint64_t now)
{
	p->ring_want = 0;
	if (!p->ring_from)
		sample(p, 1, 0, now - p->ring_t0);
}

static void trial(struct pp_shm_path *p, int ring, uint64_t now)
{
	p->trial_on = 1;
	p->trial_ring = (uint8_t)ring;
	/* The rings' first try is longer: their first laps pay for the
	 * pull path's first use (128 KiB ping-pongs timed 328, 133 and 14 us,
	 * where a warm one takes 4 one way). */
	p->trial_left = !ring	       ? PP_SHM_PATH_TRIAL_COPY
			: p->ring_rate ? PP_SHM_PATH_TRIAL_RING
				       : 3 * PP_SHM_PATH_TRIAL_RING;
	p->trial_best = 0;
	p->trial_t0 = now;
	p->probe_at = now + PP_SHM_PATH_PROBE_NS;
}

static void measure(struct pp_shm_path *p, uint64_t len, uint64_t now)
{
	p->ring_t0 = now;
	p->ring_from = 0;
	p->ring_skip = 0;
	p->ring_want = len;
	p->ring_got = 0;
}

int pp_shm_path_ring(struct pp_shm_path *p, uint64_t len, uint64_t now)
{
	if (len < PP_SHM_PATH_MIN)
		return 0;
	if (p->ring_want) {
		if (now - p->ring_t0 < PP_SHM_PATH_WAIT_NS) {
			p->rings++;
			return 1; /* no copy call beside a ring measurement */
		}
		ring_timeout(p, now);
	}
	if (p->trial_on && now - p->trial_t0 >= PP_SHM_PATH_TRIAL_NS)
		commit(p); /* with the samples it has */
	if (!p->trial_on) {
		if (!p->copy_rate)
			trial(p, 0, now); /* the copy call first, then the rings */
		else if (!p->ring_rate)
			trial(p, 1, now);
		else if (now >= p->probe_at)
			trial(p, !p->use_ring, now);
	}
	if (!(p->trial_on ? p->trial_ring : p->use_ring))
		return 0;
	measure(p, len, now);
	p->rings++;
	return 1;
}

void pp_shm_path_copied(struct pp_shm_path *p, uint64_t len, uint64_t ns)
{
	if (len >= PP_SHM_PATH_MIN)
		sample(p, 0, len, ns);
}

/* Bytes left to time: what the message still brings, PP_SHM_PATH_TIME_MIN
 * at least (past a short rest, a stream's next messages time as well). */
static uint64_t left(uint64_t want, uint64_t came)
{
	uint64_t l = want > came ? want - came : 0;
	return l > PP_SHM_PATH_TIME_MIN ? l : PP_SHM_PATH_TIME_MIN;
}

void pp_shm_path_rx(struct pp_shm_path *p, uint64_t len, uint64_t now, uint64_t backlog)
{
	if (!p->ring_from) {
		/* The clock starts at the first long record: the rings' speed,
		 * not how soon the sender turned to the PULL (in a window it
		 * posts its other sends first: 29-56 us for 128 KiB that then
		 * came in 4). Its own bytes came before the clock, and so do
		 * those behind it in the rings already (skip): the receiver
		 * drains them faster than a slower sender fills (a 512 KiB
		 * window read 21 GB/s that moved 14). */
		if (len < PP_SHM_PATH_REC_MIN)
			return;
		p->ring_from = now;
		p->ring_skip = backlog;
		p->ring_want = left(p->ring_want, len);
		p->ring_got = 0;
		return;
	}
	p->ring_got += len;
	if (p->ring_skip) {
		if (p->ring_got < p->ring_skip)
			return;
		p->ring_want = left(p->ring_want, p->ring_got);
		p->ring_skip = 0;
		p->ring_got = 0;
		p->ring_from = now;
		return;
	}
	if (p->ring_got >= p->ring_want)
		ring_end(p, now);
}
