/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Push-Pull protocol engine, sans I/O: one per rank. The caller passes in
 * received frames, sends and receives to post, the current time and frame
 * buffers; the engine writes frames to transmit, places bytes straight into
 * receive buffers and reports completions. It never reads a clock or blocks;
 * it allocates its pools in pp_proto_create and, on the cold path, a peer's
 * window when it is added or made local, never while traffic flows. What it does with messages and
 * frames is stated in docs/protocol.md, rule by rule, with the file that owns each.
 *
 * Driving it: post operations (pp_proto_send, pp_proto_recv); hand in what
 * arrives (pp_proto_input, _input_local for an intranode ring, _input_placed
 * for headers whose payload the layer below placed); take what is to be sent
 * (pp_proto_output, _output_ref, _output_local) until it returns 0; run the
 * timers when pp_proto_expiry says; take completions (pp_proto_poll).
 *
 * The layer below may lend the engine more (struct pp_proto_hooks, given at
 * create): single copies between the processes of a node, pull serving and
 * placement by a node daemon, a receive queue the sender writes into, and
 * prediction staging. Each group of hooks is all there or all NULL.
 */
#ifndef PP_PROTO_ENGINE_H
#define PP_PROTO_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "pp.h"

#define PP_PROTO_ANY	    (-1)       /* wildcard source of pp_proto_recv */
#define PP_PROTO_IGNORE_ALL UINT64_MAX /* ignore mask that matches every tag */
#define PP_PROTO_STREAMS    8	       /* a peer's own stream + pull handlers' streams 1..7 */
#define PP_PROTO_NO_ACK	    0xFFFF     /* ack_stream of frames that carry no ack */

enum pp_proto_mode {
	PP_PROTO_PUSH_PULL = 0, /* BTP1 + BTP2 pushed, the rest pulled */
	PP_PROTO_PUSH_ALL,	/* everything pushed */
	PP_PROTO_PUSH_ZERO,	/* header pushed, everything pulled */
};

/*
 * What the layer below may lend the engine (docs/protocol.md, rules 6-8).
 * Every hook takes arg first; src and dst are ranks. A group is all there or
 * all NULL (pp_proto_create checks).
 */
struct pp_proto_hooks {
	/* Intranode single copy (rule 6). direct: copy [off, off + len) of
	 * message msg_id from local rank src into dst: 0, or a negative errno
	 * when it cannot (the bytes are then pulled as DATA). publish: a send
	 * of len bytes at buf to local rank dst starts as msg_id. Either may
	 * be NULL alone. */
	int (*direct)(void *arg, uint32_t src, uint32_t msg_id, uint64_t off, void *dst,
		      uint64_t len);
	void (*publish)(void *arg, uint32_t dst, uint32_t msg_id, const void *buf, uint64_t len);
	/* Pull serving below (rule 7). handoff: the rest [off, len) of send
	 * msg_id to dst (tag, buf) waits for a PULL; 0 when the layer below
	 * took the description. claim: its PULL came; 1 when the layer below
	 * serves it, 0 when it gave it back. cancel: forget the description
	 * (the send ended without it). */
	int (*handoff)(void *arg, uint32_t dst, uint32_t msg_id, uint64_t tag, const void *buf,
		       uint64_t len, uint64_t off);
	int (*handoff_claim)(void *arg, uint32_t dst, uint32_t msg_id);
	void (*handoff_cancel)(void *arg, uint32_t dst, uint32_t msg_id);
	/* Placement below (rule 7). place_post: a PULL for message msg_id
	 * from src (in incarnation src_inc) goes out; bytes of it from
	 * from_off on may be written straight into [buf, buf + len), in order,
	 * from frames of that incarnation only; 0 when the layer below took
	 * the description. place_cancel: take it back; returns only once the
	 * layer below writes no more into buf. */
	int (*place_post)(void *arg, uint32_t src, uint32_t src_inc, uint32_t msg_id, void *buf,
			  uint64_t len, uint64_t from_off);
	void (*place_cancel)(void *arg, uint32_t src, uint32_t msg_id);
	/* Receive queue of the intranode peers (rule 6, sender writes).
	 * rq_post: publish a receive of cap bytes at buf for a message from
	 * src whose tag tag and ignore match (pp_proto_recv), expected to be message number
	 * expect: its slot (>= 0), or a negative errno (not published).
	 * rq_take: the receive of slot matched message msg_id (written: a
	 * WRITTEN frame): 0, or -EPROTO when the entry was not in the state
	 * that implies; the entry is taken either way. rq_withdraw: the receive
	 * of slot ends without a message: 0, or -EBUSY when the sender has
	 * claimed it. rq_write: write message msg_id (tag, len bytes at buf)
	 * into dst's receive posted for it, if there is one: 0 when written,
	 * else a negative errno (nothing claimed: it goes the ordinary way). */
	int (*rq_post)(void *arg, uint32_t src, uint64_t tag, uint64_t ignore, void *buf,
		       uint64_t cap, uint32_t expect);
	int (*rq_take)(void *arg, uint32_t src, int slot, uint32_t msg_id, int written);
	int (*rq_withdraw)(void *arg, uint32_t src, int slot);
	int (*rq_write)(void *arg, uint32_t dst, uint32_t msg_id, uint64_t tag, const void *buf,
			uint64_t len);
	/* Prediction staging (rule 8). stage: a block of msg_len bytes for an
	 * unexpected (src, tag) message, or NULL. unstage: give such a block
	 * back. stage_place: move n bytes from block to dst; returns the pages
	 * remapped (0: copied). stage_ahead: the position of (src, tag) among
	 * the predicted next receives (0: next), or -1 when not expected. */
	void *(*stage)(void *arg, uint32_t src, uint64_t tag, uint64_t msg_len);
	void (*unstage)(void *arg, void *block);
	uint64_t (*stage_place)(void *arg, void *dst, const void *block, uint64_t n);
	int (*stage_ahead)(void *arg, uint32_t src, uint64_t tag);
	/* A node-mate's ring, written by the engine itself (rule 6, lite
	 * messages). lite_reserve: room for a record of len bytes to local rank
	 * dst, after everything handed over before, or NULL (the ring is full,
	 * or dst has none): the message goes the sequenced way. lite_commit:
	 * the record reserved is written (len bytes). Both or neither. */
	void *(*lite_reserve)(void *arg, uint32_t dst, uint32_t len);
	void (*lite_commit)(void *arg, uint32_t dst, uint32_t len);
	/* A direct copy split with its sender (rule 6, help). help_offer: ask
	 * local rank src to write [off, off + len) of message msg_id into dst
	 * while the receiver copies the rest: a position (>= 0) the sender is
	 * told in a PULL with HELP, or a negative errno (not offered; -EXDEV:
	 * nor copied, the rest comes as DATA, as when direct fails).
	 * help_settle: the offer at pos: 0 when the sender wrote its part, 1
	 * when it did not claim it (withdrawn: the receiver copies the part),
	 * -EAGAIN while it writes, another negative errno when the offer
	 * is broken (the part is copied again). help_serve: the sender's side:
	 * write the part the offer at pos from dst asks of send msg_id (len
	 * bytes at buf). All three or none; with direct. */
	int64_t (*help_offer)(void *arg, uint32_t src, uint32_t msg_id, uint64_t off, void *dst,
			      uint64_t len);
	int (*help_settle)(void *arg, uint32_t src, uint64_t pos);
	void (*help_serve)(void *arg, uint32_t dst, uint64_t pos, uint32_t msg_id, const void *buf,
			   uint64_t len);
	void *arg; /* passed to every hook */
};

struct pp_proto_conf {
	uint32_t rank;		 /* own rank */
	uint32_t nranks;	 /* ranks in the job */
	uint32_t job;		 /* job key carried by every frame */
	uint32_t inc;		 /* own incarnation (wire.h), carried by every frame */
	uint8_t mac[6];		 /* own MAC, source of every frame */
	uint16_t stream;	 /* own TX stream id */
	enum pp_proto_mode mode; /* how much of a message is pushed */
	uint32_t btp1;		 /* bytes of the first push */
	uint32_t btp2;		 /* bytes of the second push */
	int btp_fit;		 /* 1: push more when the path holds more (rule 1) */
	uint64_t rate_hint;	 /* btp_fit: the link's rate, bytes/s, until measured (0: none) */
	uint64_t local_whole;	 /* btp_fit: node-mates' messages up to this are pushed whole */
	uint64_t local_stream;	 /* btp_fit: ... and from this on (0: none): streamed through
				  * the ring, both cores copying, not copied by the receiver */
	uint32_t window;	 /* go-back-N window, frames, power of two */
	uint64_t rto_ns;	 /* initial retransmission timeout */
	uint64_t rto_max_ns;	 /* largest timeout after back-off */
	uint32_t rto_tries;	 /* expiries without progress before the peer is lost */
	uint64_t ack_delay_ns;	 /* longest a cumulative ack waits for a ride */
	uint32_t ack_every;	 /* frames after which an ack is sent at once */
	uint32_t pushbuf_bytes;	 /* pushed-buffer size */
	int credits;		 /* 1: credits on; 0: off (Push-All overflow) */
	uint16_t mtu;		 /* largest frame after the Ethernet header */
	uint32_t max_msgs;	 /* sends outstanding at most */
	uint32_t max_recvs;	 /* receives posted or messages unexpected at most (0: 2 x
				  * max_msgs); their records are made as needed, 1024 at a
				  * time */
	uint32_t copy_max;	 /* sends up to this size are copied and complete at once */
	uint32_t copy_max_local; /* the same to a node-mate, if less (0: copy_max) */
	uint64_t direct_chunk;	 /* bytes per direct copy call (hooks.direct) */
	uint64_t direct_min;	 /* fewer bytes left than this: pulled as DATA instead */
	uint64_t write_min;	 /* a message pushed whole that a published receive waits for
				  * is written into it by its sender from this size on (0:
				  * never): one copy instead of two through the ring */
	int write_rest;		 /* 1: one whose rest would be pulled (direct_min or more) is
				  * written by its sender too; 0: its receiver copies it */
	uint32_t lite_max;	 /* node-mates (lite hooks): messages up to this go whole as
				  * one ring record, unsequenced (0: none) */
	uint64_t help_min;	 /* a direct copy of this many bytes or more is split with
				  * its sender (help hooks; 0: never) */
	struct pp_proto_hooks hooks; /* what the layer below lends; all NULL: nothing */
};

/* One finished operation. */
struct pp_proto_cpl {
	uint64_t cookie; /* the caller's value given with the operation */
	int is_send;	 /* 1 for a send, 0 for a receive */
	int source;	 /* sending rank (receives), destination (sends) */
	uint64_t tag;	 /* message tag */
	uint64_t len;	 /* full message length */
	int error;	 /* 0, -EMSGSIZE (truncated), -ECONNRESET (peer lost) */
	uint32_t data;	 /* receives and probes: the sender's immediate data ... */
	int has_data;	 /* ... when 1 (pp_proto_send_data); 0 for sends */
	uint32_t post;	 /* receives: how many were posted before it (mod 2^32), so
			    a caller can see them in the order they were posted */
};

struct pp_proto;

/* Defaults: Push-Pull, BTP 80/680, W 64, RTO 200 us..50 ms x 12, ack delay
 * 20 us or every 16 frames, 1 MiB pushed buffer, credits on, MTU 1500,
 * 256 messages, sends up to 1 KiB copied, no hooks, direct chunks of 1 MiB.
 * rank, nranks, job, inc and mac are left zero. */
void pp_proto_conf_default(struct pp_proto_conf *c);

/* What a job of the runtime runs, the one home of each of its settings (the
 * runtime, the libfabric provider, pp_simnet and the benchmarks start from
 * it, and set only what is the job's own: ranks, MTU, BTPs, pushed buffer,
 * timeouts): the defaults above, and PP_PROTO_JOB_MAX_MSGS sends,
 * PP_PROTO_JOB_MAX_RECVS receives, btp_fit, sends up to 8 KiB copied,
 * node-mates' messages pushed whole up to 16 KiB and lite up to 4 KiB,
 * direct copies in 4 MiB calls and of at least 4 KiB (engine.c says why). */
#define PP_PROTO_JOB_MAX_MSGS  1024u
#define PP_PROTO_JOB_MAX_RECVS 65536u
void pp_proto_conf_job(struct pp_proto_conf *c);

/* Create an engine; every pool is allocated here, and the hooks are copied.
 * Errors: -EINVAL (bad conf: rank >= nranks, window not a power of two or
 * above 32768, mtu too small, zero max_msgs, stream in 1..PP_PROTO_STREAMS-1,
 * a group of hooks given in part), -ENOMEM. */
int pp_proto_create(struct pp_proto **eng, const struct pp_proto_conf *c);
void pp_proto_destroy(struct pp_proto *eng);

/* Make rank, in incarnation inc, reachable at mac: frames to it carry inc,
 * and its frames are taken only when they carry inc (others are dropped as
 * STALE). Errors: -EINVAL (own rank, out of range), -ENOMEM. */
int pp_proto_peer_add(struct pp_proto *eng, uint32_t rank, const uint8_t mac[6], uint32_t inc);

/* Make rank, already added, an intranode peer with its own BTP: its frames
 * come from pp_proto_output_local from now on. Cold path.
 * Errors: -EINVAL (not added, own rank, out of range), -ENOMEM. */
int pp_proto_peer_local(struct pp_proto *eng, uint32_t rank, uint32_t btp1, uint32_t btp2);

/* Write the next frame for intranode peer rank into buf, as pp_proto_output
 * does for the others (direct copies happen here too), but in the local form
 * (wire.h: host order, no CRC), which the receiver takes with
 * pp_proto_input_local. Returns its length, 0 when there is nothing to send
 * to it now, -ENOSPC when cap < mtu + 14, -EINVAL when rank is not a local
 * peer. */
int pp_proto_output_local(struct pp_proto *eng, uint32_t rank, uint8_t *buf, size_t cap,
			  uint64_t now);

/* For a link that would ask pp_proto_output_local after every pass: 1 when
 * a node-mate may have a frame due, and cleared. It is set by every call
 * that can give a node-mate something to send (sends, receives, cancels,
 * input, timers, changes of peers, pings) and by pp_proto_output_local when
 * it leaves one with something still to send (a delayed ack, a closed
 * window). 0 means pp_proto_output_local would return 0 for every
 * node-mate: an idle pass skips those calls. A link that could not take a
 * frame (its ring full) sets it again with pp_proto_local_kick. */
int pp_proto_local_take(struct pp_proto *eng);
void pp_proto_local_kick(struct pp_proto *eng);
/* What pp_proto_local_take would say now, without clearing it. */
int pp_proto_local_pending(const struct pp_proto *eng);

/* rank is known dead (its process is gone without a goodbye): declare it
 * lost now, as the retransmission timer would: its operations fail with
 * -ECONNRESET. */
void pp_proto_peer_fail(struct pp_proto *eng, uint32_t rank);

/* 1 when something in progress needs rank: a send to it, a message from it
 * not wholly here (matched or not), or frames to it unacknowledged. */
int pp_proto_peer_busy(const struct pp_proto *eng, uint32_t rank);

/* 1 when nothing is in flight with rank on the engine's stream: every frame
 * sent to it acknowledged, and no ack (or NACK) owed to it; or rank is no
 * peer. */
int pp_proto_peer_settled(const struct pp_proto *eng, uint32_t rank);

/* Start a send of len bytes to dst with a 64-bit tag; buf is read until the
 * send completes. Errors: -EINVAL (bad rank, NULL buf with len),
 * -ENOMEM (max_msgs sends outstanding), -EAGAIN (every send slot holds
 * a completed small send awaiting its ack: make progress and try again),
 * -ECONNRESET (peer lost). */
int pp_proto_send(struct pp_proto *eng, uint32_t dst, uint64_t tag, const void *buf, uint64_t len,
		  uint64_t cookie);

/* As pp_proto_send, with 32 bits of immediate data that the receiver's
 * completion (and a probe) reports with has_data set (libfabric's remote CQ
 * data). It travels in the message's FIRST frame (docs/wire.md). */
int pp_proto_send_data(struct pp_proto *eng, uint32_t dst, uint64_t tag, const void *buf,
		       uint64_t len, uint32_t data, uint64_t cookie);

/* As pp_proto_send (with data when has_data), for len <= copy_max, copied
 * at once whatever part of it is pushed: buf may change as soon as this
 * returns 0, and the send completes at once (an inject; libfabric's
 * FI_INJECT). A longer len: -EINVAL. */
int pp_proto_send_copy(struct pp_proto *eng, uint32_t dst, uint64_t tag, const void *buf,
		       uint64_t len, int has_data, uint32_t data, uint64_t cookie);

/* Send flags (pp_proto_sendf). */
#define PP_PROTO_SEND_DATA 0x1u /* data is the message's immediate data (pp_proto_send_data) */
#define PP_PROTO_SEND_COPY 0x2u /* copied at once: an inject (pp_proto_send_copy) */
#define PP_PROTO_SEND_LATE 0x4u /* a node-mate's eager copy made late (pp_proto_send_late) */
#define PP_PROTO_SEND_NOW  0x8u /* done in the call: 1 returned, no completion queued */
/* buf lies in memory node-mates map (pp_malloc): their receiver copies it
 * with one memcpy at any size, never streamed through the ring. */
#define PP_PROTO_SEND_SHARED 0x10u
/* With PP_PROTO_SEND_NOW: only a send done in the call is made; any other
 * is left undone, and -EAGAIN returned (pp_send's way without a request). */
#define PP_PROTO_SEND_TRY 0x20u

/* The one send the four above are forms of. With PP_PROTO_SEND_NOW, a send
 * that completes in the call (a node-mate's small message, an eager copy,
 * a write into a published receive) returns 1 and queues no completion:
 * its caller reports it done itself, without a trip through pp_proto_poll.
 * Otherwise as the forms: 0, or their errors. */
int pp_proto_sendf(struct pp_proto *eng, uint32_t dst, uint64_t tag, const void *buf, uint64_t len,
		   uint32_t data, unsigned flags, uint64_t cookie);

/* As pp_proto_send, but the copy that makes a small send to a node-mate
 * complete at once (eager) is made by the next pp_proto_settle, not now:
 * its frames can leave first, copied into the ring from buf, and the copy
 * happens while the peer takes them. The caller calls pp_proto_settle
 * before buf may change (before its own caller gets control back); until
 * then buf is read as by pp_proto_send. */
int pp_proto_send_late(struct pp_proto *eng, uint32_t dst, uint64_t tag, const void *buf,
		       uint64_t len, uint64_t cookie);

/* Make the copies pp_proto_send_late left: from here on no send reads its
 * caller's buffer if it completed at once. Nothing when none is left. */
void pp_proto_settle(struct pp_proto *eng);

/* 1 when a send since the last call went the sequenced way, so that frames
 * wait in the engine for the caller to move them out (its push); 0 when
 * every one was a lite message (rule 6), in its peer's ring already.
 * Clears the mark. */
int pp_proto_push_owed(struct pp_proto *eng);

/* Post a receive from src (or PP_PROTO_ANY) for a message whose tag t has
 * ((t ^ tag) & ~ignore) == 0, as libfabric's tagged receives: ignore 0 is an
 * exact tag, PP_PROTO_IGNORE_ALL any tag. (pp.h's tags are the int values
 * sign-extended; its PP_ANY_TAG ignores the low 31 bits, so it matches every
 * tag >= 0 and never the library's own, below zero.)
 * Errors: -EINVAL, -ENOMEM (max_recvs receives and unexpected messages
 * held, or no memory for more records), -ECONNRESET (src is lost). */
int pp_proto_recv(struct pp_proto *eng, int src, uint64_t tag, uint64_t ignore, void *buf,
		  uint64_t len, uint64_t cookie);

/* Take back the posted receive of cookie that no message has matched yet:
 * it completes with -ECANCELED (a completion like any other, through
 * pp_proto_poll or the completion hook). Returns 0, -ENOENT when no such
 * receive is waiting (matched, done, or never posted: it completes as
 * usual), -EBUSY when a node-mate is writing its message into it. */
int pp_proto_cancel(struct pp_proto *eng, uint64_t cookie);

/* Look for an arrived, unmatched message from src (or PP_PROTO_ANY) that
 * tag and ignore match, the first in matching order. Returns 1 and fills
 * cpl->source, tag, len, data and has_data (cookie 0, error 0) when there is
 * one, else 0. */
int pp_proto_probe(const struct pp_proto *eng, int src, uint64_t tag, uint64_t ignore,
		   struct pp_proto_cpl *cpl);

/* Hand in one received Ethernet frame. Returns 0 when accepted, -EPROTO when
 * dropped (counted in stats.drops by reason). */
int pp_proto_input(struct pp_proto *eng, const uint8_t *frame, size_t len, uint64_t now);

/* The headers alone of a DATA frame whose payload the layer below wrote
 * into the receive buffer described by place_post (it checked the frame's
 * crc32c): as pp_proto_input, but nothing is copied. Returns 0 when
 * accepted, -EPROTO when dropped (counted in stats.drops by reason; also a
 * frame for a message that is not a matched receive). */
int pp_proto_input_placed(struct pp_proto *eng, const uint8_t *frame, size_t len, uint64_t now);

/* The same for a frame of pp_proto_output_local from the intranode ring of
 * local peer from: a frame whose source is any other rank is dropped (RANK;
 * the header is checked on a copy, so the peer cannot change it after).
 * -EAGAIN for a lite record (rule 6) that cannot be taken now (no receive
 * record or pushed-buffer room): it was not taken, and must be given again,
 * before anything behind it in the ring, once receives were posted or
 * messages taken. */
int pp_proto_input_local(struct pp_proto *eng, uint32_t from, const uint8_t *frame, size_t len,
			 uint64_t now);

/* Write the next frame to transmit into buf. Returns its length, 0 when there
 * is nothing to send now, -ENOSPC when cap < mtu + 14. */
int pp_proto_output(struct pp_proto *eng, uint8_t *buf, size_t cap, uint64_t now);

/* A payload pp_proto_output_ref leaves where it is. */
struct pp_proto_ref {
	const void *addr; /* the payload: in the user's send buffer */
	uint32_t len;	  /* its length; 0 when the frame was written whole */
	const void *msg;  /* the whole send buffer it lies in */
	uint64_t msg_len; /* that buffer's length */
};

/* As pp_proto_output, but a frame with at least ref_min payload bytes (never
 * a FIRST frame) comes back as its headers alone, in buf, the return value
 * being their length; ref then names the payload, which must follow those
 * bytes on the wire unchanged (the crc32c covers it). It stays valid until
 * the send completes. ref->len is 0 for frames written whole. */
int pp_proto_output_ref(struct pp_proto *eng, uint8_t *buf, size_t cap, uint64_t now,
			uint32_t ref_min, struct pp_proto_ref *ref);

/* Earliest time pp_proto_handle_expiry has work, UINT64_MAX if none. */
uint64_t pp_proto_expiry(const struct pp_proto *eng);

/* Run the timers due at now (retransmission, delayed acks, peer loss). */
void pp_proto_handle_expiry(struct pp_proto *eng, uint64_t now);

/* Take one completion. Returns 1 and fills *cpl, or 0 when none. */
int pp_proto_poll(struct pp_proto *eng, struct pp_proto_cpl *cpl);

/* The layer below finished serving the PULL of send msg_id to dst (error 0)
 * or gave up (error < 0: the send fails with -ECONNRESET). The send
 * completes once its pushed frames are acked too.
 * Errors: -EINVAL (bad rank), -ENOENT (no such send served below), -EAGAIN
 * (the engine has not seen that PULL yet: report it again once it has). */
int pp_proto_handoff_done(struct pp_proto *eng, uint32_t dst, uint32_t msg_id, int error);

/* Copy the counters (the pp_stats fields the engine knows). */
void pp_proto_stats(const struct pp_proto *eng, struct pp_stats *st);

/* 1 when no operation, unacked frame or owed frame remains. */
int pp_proto_idle(const struct pp_proto *eng);

/* rank said goodbye (BYE): everything it sent has arrived, so receives
 * posted for it alone, now or later, fail with -ECONNRESET unless a message
 * already here matches them. Messages it sent stay receivable. */
void pp_proto_peer_gone(struct pp_proto *eng, uint32_t rank);

/* Probe rank's liveness: unless frames to it await an ack already (their
 * timer does the same), send it a PING, which a live engine acks like any
 * sequenced frame; a dead one gets declared lost by the retransmission timer
 * and its operations fail with -ECONNRESET. For a receiver whose sender went
 * silent mid-message, where nothing of its own is in flight. */
void pp_proto_ping(struct pp_proto *eng, uint32_t rank);

/* 1 when rank was declared lost (its operations failed with -ECONNRESET). */
int pp_proto_peer_lost(const struct pp_proto *eng, uint32_t rank);

#endif
