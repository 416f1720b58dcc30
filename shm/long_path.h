/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which way the rest of a node-mate's long message comes: by the receiver's
 * one copy call (cross-memory attach), or pulled through the segment's rings
 * (the sender copies a cell in while the receiver copies the last one out).
 * Which is faster depends on where the two cores sit, and a virtual
 * machine's host moves them while a job runs: with a cache line's round
 * trip between the cores at 56-78 ns the rings moved 37-40 GB/s where one
 * call moved 17-21; at 390-465 ns the rings moved 13-14 and the call 16-21
 * (tests/bench/core_rtt.c, pp_pingpong windows of 128 KiB to 4 MiB).
 *
 * So the receiver measures both, per peer, and takes the faster (the rings
 * only when a quarter faster or more). A copy call of PP_SHM_PATH_MIN bytes
 * or more is timed when the rings from that peer are quiet beside it (the
 * caller's check). A message sent to the rings is timed from its first
 * long record, and from the end of what was behind that record in them
 * already (bytes there would come at a speed the sender did not have to
 * match), until they have brought the rest (PP_SHM_PATH_TIME_MIN at
 * least); while that runs every long message takes the rings, so that no
 * copy call holds up their draining. Each path is first tried (the copy
 * call, then the rings) for a few samples or PP_SHM_PATH_TRIAL_NS, its best
 * sample counting, and the path not in use is tried again every
 * PP_SHM_PATH_PROBE_NS, so a change of placement is seen: the slower path
 * costs a try a period.
 *
 * Plain data, one per peer, used by the receiving thread only; times are
 * the caller's (ns), so the tests drive it with their own clock.
 */
#ifndef PP_SHM_LONG_PATH_H
#define PP_SHM_LONG_PATH_H

#include <stdint.h>

#define PP_SHM_PATH_MIN	       (64u << 10) /* shorter: always the copy call, not timed */
#define PP_SHM_PATH_PROBE_NS   500000000u  /* the path not in use, tried again */
#define PP_SHM_PATH_TRIAL_COPY 32u	   /* samples a try of the copy call takes, */
#define PP_SHM_PATH_TRIAL_RING 3u	   /* ... of the rings (one a burst at most), */
#define PP_SHM_PATH_TRIAL_NS   20000000u   /* or this long at most: its best counts */
#define PP_SHM_PATH_REC_MIN    1024u	   /* a ring measurement starts at a record this long */
#define PP_SHM_PATH_TIME_MIN   (32u << 10) /* ... and times this many bytes at least */
#define PP_SHM_PATH_WAIT_NS    10000000u   /* a ring measurement ends by then at least */

struct pp_shm_path {
	uint64_t copy_rate;  /* bytes per us lately by a copy call (0: not measured yet) */
	uint64_t ring_rate;  /* ... pulled through the rings */
	uint64_t probe_at;   /* when the path not in use is tried again */
	uint64_t ring_t0;    /* a ring measurement: when it was chosen, */
	uint64_t ring_from;  /* its first long record (0: none yet), */
	uint64_t ring_want;  /* the bytes it waits for (0: none running), */
	uint64_t ring_skip;  /* bytes in the rings at the clock's start, not timed, */
	uint64_t ring_got;   /* the bytes the rings brought since */
	uint64_t trial_best; /* a try: its best sample so far, */
	uint64_t trial_t0;   /* its start, */
	uint32_t trial_left; /* the samples it still wants, */
	uint8_t trial_ring;  /* its path (1: the rings), */
	uint8_t trial_on;    /* and whether one runs */
	uint8_t use_ring;    /* the rings are the faster lately */
	uint64_t rings;	     /* messages sent to the rings */
};

/* The copy call's turn for a message whose rest is len bytes, at now: 0 to
 * copy it (then report the call with pp_shm_path_copied), 1 to pull it
 * through the rings (a ring measurement starts with it if none runs). */
int pp_shm_path_ring(struct pp_shm_path *p, uint64_t len, uint64_t now);

/* A copy call moved len bytes in ns. */
void pp_shm_path_copied(struct pp_shm_path *p, uint64_t len, uint64_t ns);

/* The rings brought len bytes (a record) at now; call while ring_want.
 * backlog: the bytes still in the rings after it (pp_shm_ring_backlog),
 * read only while the clock has not started (ring_from 0), else 0. */
void pp_shm_path_rx(struct pp_shm_path *p, uint64_t len, uint64_t now, uint64_t backlog);

#endif
