/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Push-Pull protocol engine, sans I/O: one per rank. The caller passes in
 * received frames, sends and receives to post, the current time and frame
 * buffers; the engine writes frames to transmit, places bytes straight into
 * receive buffers and reports completions. It never reads a clock, blocks or
 * allocates after pp_proto_create.
 *
 * Sending (DESIGN.md 5.1): a send of L bytes pushes P bytes at once, the
 * first frame carrying min(BTP1, P) bytes and FIRST, the next frames the rest
 * of P (BTP2 overlapping the receiver's PULL); P = min(L, BTP1+BTP2) in
 * Push-Pull, L in Push-All, 0 in Push-Zero. When P < L the FIRST frame has
 * the PULL flag and the rest, [P, L), is sent as DATA once a PULL for the
 * message arrives, produced lazily from the user's buffer as the window
 * opens. A send completes when every frame it produced is acknowledged.
 *
 * Receiving (5.2, 5.3): a FIRST frame is matched against posted receives in
 * posting order (source and tag, with wildcards). Matched (early receiver):
 * bytes go straight to the user buffer and a PULL goes out at once if the
 * sender waits for one. Unmatched (late): the pushed bytes wait in the pushed
 * buffer until a receive matches them in arrival order; they are copied once
 * into the user buffer and the PULL then goes out. A receive shorter than the
 * message takes what fits and completes with -EMSGSIZE and the full length.
 *
 * Reliability (5.4): PUSH, PULL and DATA are sequenced per peer on the
 * engine's stream. The sender keeps a ring of W descriptors (seq -> message,
 * offset, length), never copies of frames; retransmission regenerates frames
 * from the user buffer. The receiver accepts only the next expected seq, acks
 * cumulatively in every frame it sends to the peer, or in a standalone ACK
 * after ack_delay or ack_every frames; a duplicate is dropped and acked at
 * once; a frame past a gap is dropped and answered by one NACK per gap. A
 * NACK, or the retransmission timer (RTO, doubling up to rto_max) rolls the
 * sender back to the oldest unacked seq. After rto_tries expiries without
 * progress the peer is lost: its operations fail with -ECONNRESET. A
 * receiver that must refuse the next frame (no receive record or pushed-
 * buffer room) answers with an ACK at once; a standalone ACK clears the
 * expiry count, so a live but slow receiver is not declared lost.
 *
 * Credits (5.5): each peer owns an equal share of the pushed buffer. The
 * receiver advertises, in every frame, the cumulative number of cells it has
 * ever allowed that peer (a 16-bit counter: share + cells given back); the
 * sender counts cells it pushed and pushes a message only if its cells fit,
 * otherwise it degrades the push to Push-Zero. With credits off the sender
 * pushes regardless; a push finding no cell is dropped (counted NOBUF) and
 * recovered by go-back-N.
 *
 * Small sends that are pushed whole (copy_max bytes or fewer, within the
 * mode's push) are copied into the engine and complete at once, like an MPI
 * eager send: frames, retransmissions and any
 * PULL are served from the copy, and their frames carry F_COPIED so the
 * receiver acks them at leisure, usually on its reply, instead of spending a
 * frame on it. An error after that completion (peer lost) is not reported
 * for such a send; the receives that depend on it fail instead.
 *
 * Intranode peers (pp_proto_peer_local): frames to them come out of
 * pp_proto_output_local (the caller puts them in a shared-memory ring), not
 * pp_proto_output, and they have their own BTP. Sends to them are described
 * to the caller's publish hook as they start. Where the engine would send
 * a PULL to such a peer, once every pushed byte is in, it asks the direct hook
 * to copy the rest, [P, L), straight from the sender's buffer into the
 * receive buffer (unless fewer than direct_min bytes are left: a copy call
 * costs more than DATA frames then), in chunks of direct_chunk bytes (one per output call, so
 * other work goes on), then completes the receive at once and sends a PULL
 * with DONE (offset L): the sender completes when it arrives and its pushes
 * are acknowledged. When the hook fails, the PULL asks for the bytes not yet
 * copied and they come as DATA frames (the two-copy path). Pushes of a local
 * peer are expected to be [0, min(L, its BTP1 + BTP2)), or nothing when its
 * FIRST frame is empty: both ends must give the pair the same BTP.
 *
 * Early receiver, sender writes (pp_proto_set_recvq): a receive posted for
 * a specific local source s, of at least direct_min + the pair's push bytes
 * (not in Push-All), that finds nothing arrived is published through the
 * post hook, expecting the next message number from s not seen yet, but
 * only when no earlier posted receive could take a message from s first (one
 * for any source, or one for s not published). When a published receive
 * matches a message the ordinary way the take hook marks it taken; one that
 * ends otherwise (peer lost or gone, engine destroyed) is withdrawn. A send
 * to a local peer that would otherwise be copied by the receiver (at least
 * direct_min bytes past the pushes) first offers itself to the write hook:
 * when the receiver's first matching published receive waits for exactly
 * this message and holds it, the hook writes the whole message into it;
 * the send then completes at once (as a copied one) and its only frame is an
 * empty FIRST PUSH with WRITTEN. The receiver matches that frame as usual
 * (the first match must be the claimed receive, else the receive fails with
 * -EPROTO and a STATE drop is counted) and completes it with no PULL and no
 * copy. Any other case takes the path above.
 *
 * Extra streams (pull handlers, DESIGN.md 7): a peer's engine sends on its
 * own stream (0); a node daemon's pull handlers send DATA on its behalf on
 * streams 1..PP_PROTO_STREAMS-1, each its own go-back-N sequence. The
 * receiver keeps rcv_nxt, ack and NACK state per (peer, stream); a DATA
 * frame on an extra stream is accepted, dropped as a duplicate or NACKed
 * against that stream, placed by msg_id and offset (its bytes may overtake a
 * late push of stream 0), and acked by standalone ACK or NACK frames whose
 * ack_stream is that stream (piggybacked acks always refer to stream 0).
 * Frames on extra streams carry no ack or credit for us (ack_stream 0xFFFF).
 * A staged message takes extra-stream DATA only in order (offset = bytes
 * here): a frame that overtook a push is refused and comes again.
 *
 * Pull serving by the layer below (handoff hooks): when a send's FIRST frame
 * goes out and the rest waits for a PULL (not to a local peer, not a copied
 * send), handoff() is given its description; 0 means the layer below keeps
 * it. When the PULL arrives (without AGAIN), claim() says whether the layer
 * below serves it (1: the PULL is acked as usual and the engine sends no
 * DATA, only the pushes that may still wait for the window; the send
 * completes when pp_proto_handoff_done reports the layer below done and
 * every pushed frame is sent and acked) or gave the description back
 * (0: the engine serves the PULL as usual). A send that ends otherwise (peer
 * lost) while the layer below holds it is withdrawn with cancel().
 *
 * Placement by the layer below (place hooks): when a receive from a peer
 * that is not local sends its PULL, place_post() describes its buffer;
 * the layer below may then write the payload of the message's DATA frames
 * (any stream) straight into it and hand the engine the frame's headers
 * alone through pp_proto_input_placed, which runs the sequence and ack
 * logic of a DATA frame and accounts the bytes without copying them. A
 * placed frame the engine drops (duplicate, out of sequence) loses
 * nothing: its retransmission brings the same bytes to the same place.
 * Every receive that posted a description takes it back with
 * place_cancel() before it completes or ends otherwise, so nothing is
 * written into a buffer the user has been given back.
 *
 * Limits: each peer engine uses one TX stream (0, or PP_PROTO_STREAMS and
 * above); the ack_stream of frames we send is the stream of the peer's last
 * sequenced frame on its own stream.
 */
#ifndef PP_PROTO_ENGINE_H
#define PP_PROTO_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "pp.h"

#define PP_PROTO_ANY	 (-1)	/* wildcard source or tag of pp_proto_recv */
#define PP_PROTO_STREAMS 8	/* a peer's own stream + pull handlers' streams 1..7 */
#define PP_PROTO_NO_ACK	 0xFFFF /* ack_stream of frames that carry no ack */

enum pp_proto_mode {
	PP_PROTO_PUSH_PULL = 0, /* BTP1 + BTP2 pushed, the rest pulled */
	PP_PROTO_PUSH_ALL,	/* everything pushed */
	PP_PROTO_PUSH_ZERO,	/* header pushed, everything pulled */
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
	uint32_t window;	 /* go-back-N window, frames, power of two */
	uint64_t rto_ns;	 /* initial retransmission timeout */
	uint64_t rto_max_ns;	 /* largest timeout after back-off */
	uint32_t rto_tries;	 /* expiries without progress before the peer is lost */
	uint64_t ack_delay_ns;	 /* longest a cumulative ack waits for a ride */
	uint32_t ack_every;	 /* frames after which an ack is sent at once */
	uint32_t pushbuf_bytes;	 /* pushed-buffer size */
	int credits;		 /* 1: credits on; 0: off (Push-All overflow) */
	uint16_t mtu;		 /* largest frame after the Ethernet header */
	uint32_t max_msgs;	 /* sends, and receives, outstanding at most */
	uint32_t copy_max;	 /* sends up to this size are copied and complete at once */
	/* Intranode hooks (NULL: none). direct copies [off, off + len) of
	 * message msg_id from local rank src to dst: 0, or a negative errno
	 * when it cannot (the bytes are then pulled as DATA). publish tells
	 * that a send of len bytes at buf to local rank dst starts as msg_id. */
	int (*direct)(void *arg, uint32_t src, uint32_t msg_id, uint64_t off, void *dst,
		      uint64_t len);
	void (*publish)(void *arg, uint32_t dst, uint32_t msg_id, const void *buf, uint64_t len);
	/* Pull serving hooks (NULL: none; all three or none), see above.
	 * handoff: the rest [off, len) of send msg_id to dst (tag, buf) waits
	 * for a PULL; 0 when the layer below took the description. claim: its
	 * PULL came; 1 when the layer below serves it, 0 when it gave it back.
	 * cancel: forget the description (the send ended without it). */
	int (*handoff)(void *arg, uint32_t dst, uint32_t msg_id, uint32_t tag, const void *buf,
		       uint64_t len, uint64_t off);
	int (*handoff_claim)(void *arg, uint32_t dst, uint32_t msg_id);
	void (*handoff_cancel)(void *arg, uint32_t dst, uint32_t msg_id);
	/* Placement hooks (NULL: none; both or none), see "Placement by the
	 * layer below". place_post: a PULL for message msg_id from src goes
	 * out; bytes of it from from_off on may be written straight into
	 * [buf, buf + len); 0 when the layer below took the description.
	 * place_cancel: take it back; returns only once the layer below writes
	 * no more into buf. */
	int (*place_post)(void *arg, uint32_t src, uint32_t msg_id, void *buf, uint64_t len,
			  uint64_t from_off);
	void (*place_cancel)(void *arg, uint32_t src, uint32_t msg_id);
	void *hook_arg;	       /* first argument of direct, publish and the handoff hooks */
	uint64_t direct_chunk; /* bytes per direct call */
	uint64_t direct_min;   /* fewer bytes left than this: pulled as DATA instead */
};

/* One finished operation. */
struct pp_proto_cpl {
	uint64_t cookie; /* the caller's value given with the operation */
	int is_send;	 /* 1 for a send, 0 for a receive */
	int source;	 /* sending rank (receives), destination (sends) */
	int tag;	 /* message tag */
	uint64_t len;	 /* full message length */
	int error;	 /* 0, -EMSGSIZE (truncated), -ECONNRESET (peer lost) */
};

struct pp_proto;

/* Defaults: Push-Pull, BTP 80/680, W 64, RTO 200 us..50 ms x 12, ack delay
 * 20 us or every 16 frames, 1 MiB pushed buffer, credits on, MTU 1500,
 * 256 messages, sends up to 1 KiB copied, no hooks, direct chunks of 1 MiB. rank,
 * nranks, job, inc and mac are left zero. */
void pp_proto_conf_default(struct pp_proto_conf *c);

/* Create an engine; every pool is allocated here.
 * Errors: -EINVAL (bad conf: rank >= nranks, window not a power of two or
 * above 32768, mtu too small, zero max_msgs, stream in 1..PP_PROTO_STREAMS-1,
 * only some of the handoff or place hooks), -ENOMEM. */
int pp_proto_create(struct pp_proto **eng, const struct pp_proto_conf *c);
void pp_proto_destroy(struct pp_proto *eng);

/* Make rank, in incarnation inc, reachable at mac: frames to it carry inc,
 * and its frames are taken only when they carry inc (others are dropped as
 * STALE). Errors: -EINVAL (own rank, out of range). */
int pp_proto_peer_add(struct pp_proto *eng, uint32_t rank, const uint8_t mac[6], uint32_t inc);

/* Make rank, already added, an intranode peer with its own BTP: its frames
 * come from pp_proto_output_local from now on. Cold path.
 * Errors: -EINVAL (not added, own rank, out of range), -ENOMEM. */
int pp_proto_peer_local(struct pp_proto *eng, uint32_t rank, uint32_t btp1, uint32_t btp2);

/* Write the next frame for intranode peer rank into buf, as pp_proto_output
 * does for the others (direct copies happen here too), but in the local form
 * (wire.h: host order, no CRC), which the receiver takes with
 * pp_proto_input_local. Returns its length, 0
 * when there is nothing to send to it now, -ENOSPC when cap < mtu + 14,
 * -EINVAL when rank is not a local peer. */
int pp_proto_output_local(struct pp_proto *eng, uint32_t rank, uint8_t *buf, size_t cap,
			  uint64_t now);

/* rank is known dead (its process is gone without a goodbye): declare it
 * lost now, as the retransmission timer would: its operations fail with
 * -ECONNRESET. */
void pp_proto_peer_fail(struct pp_proto *eng, uint32_t rank);

/* 1 when something in progress needs rank: a send to it, a message from it
 * not wholly here (matched or not), or frames to it unacknowledged. */
int pp_proto_peer_busy(const struct pp_proto *eng, uint32_t rank);

/* Start a send of len bytes to dst with tag (any value but PP_PROTO_ANY;
 * tags below zero are the library's own, see pp_proto_recv); buf is read
 * until the send completes. Errors: -EINVAL (bad rank or tag, NULL buf with len),
 * -ENOMEM (max_msgs operations outstanding), -EAGAIN (every send slot holds
 * a completed small send awaiting its ack: make progress and try again),
 * -ECONNRESET (peer lost). */
int pp_proto_send(struct pp_proto *eng, uint32_t dst, int tag, const void *buf, uint64_t len,
		  uint64_t cookie);

/* Post a receive from src (or PP_PROTO_ANY) with tag (or PP_PROTO_ANY, which
 * matches tags >= 0 only: the library's own tags, below zero, never match a
 * wildcard).
 * Errors: -EINVAL, -ENOMEM (max_msgs receives outstanding), -ECONNRESET
 * (src is lost). */
int pp_proto_recv(struct pp_proto *eng, int src, int tag, void *buf, uint64_t len, uint64_t cookie);

/* Look for an arrived, unmatched message from src (or PP_PROTO_ANY) with tag
 * (or PP_PROTO_ANY), the first in matching order. Returns 1 and fills
 * cpl->source, tag and len (cookie 0, error 0) when there is one, else 0. */
int pp_proto_probe(const struct pp_proto *eng, int src, int tag, struct pp_proto_cpl *cpl);

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
 * the header is checked on a copy, so the peer cannot change it after). */
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

/*
 * Prediction staging (engine_stage.c). The engine knows no predictor and no
 * memory policy; the caller fills these hooks. When the FIRST frame of an
 * unexpected message arrives, stage() may give a block of msg_len bytes: the
 * message is then staged, its pushed bytes and its DATA go to the block, and
 * if its sender waits for a PULL the PULL goes out at once (speculative pull,
 * counted spec_pulls). When a receive matches a staged message, place() moves
 * what has arrived into the user buffer (a copy, or a remap of whole pages),
 * unstage() gives the block back, and the rest, if any, lands in the user
 * buffer directly. A staged message that is never received keeps its block
 * until its peer is lost or the engine is destroyed.
 *
 * Eviction: with hooks set, when the pushed buffer has no room for a frame,
 * unexpected messages whose senders still wait for a PULL give their cells up,
 * the one ahead() puts furthest first (not predicted at all: furthest; ties:
 * the latest arrival), until the frame fits; the frame's own message may be
 * the one. An evicted message keeps nothing: later pushed frames are thrown
 * away, and when its receive comes its PULL carries AGAIN and offset 0, so
 * the sender sends the whole message as DATA (counted in evictions).
 */
struct pp_proto_stage_ops {
	/* A block of msg_len bytes for an unexpected (src, tag) message, or NULL. */
	void *(*stage)(void *arg, uint32_t src, uint32_t tag, uint64_t msg_len);
	/* Give a block from stage() back. */
	void (*unstage)(void *arg, void *block);
	/* Move n bytes from block to dst; returns the pages remapped (0: copied). */
	uint64_t (*place)(void *arg, void *dst, const void *block, uint64_t n);
	/* Position of (src, tag) among the predicted next receives (0: next),
	 * or -1 when it is not expected. */
	int (*ahead)(void *arg, uint32_t src, uint32_t tag);
	void *arg; /* passed to every hook */
};

/*
 * The receive-queue hooks of the intranode peers (see "Early receiver,
 * sender writes" above). src and dst are local ranks.
 */
struct pp_proto_recvq_ops {
	/* Publish a receive of cap bytes at buf for a message from src with
	 * tag (or PP_PROTO_ANY), expected to be message number expect:
	 * returns its slot (>= 0), or a negative errno (not published). */
	int (*post)(void *arg, uint32_t src, int tag, void *buf, uint64_t cap, uint32_t expect);
	/* The receive of slot matched message msg_id (written: a WRITTEN
	 * frame): 0, or -EPROTO when the entry was not in the state that
	 * implies. The entry is taken either way. */
	int (*take)(void *arg, uint32_t src, int slot, uint32_t msg_id, int written);
	/* The receive of slot ends without a message: 0, or -EBUSY when the
	 * sender has claimed it. */
	int (*withdraw)(void *arg, uint32_t src, int slot);
	/* Write message msg_id (tag, len bytes at buf) into dst's receive
	 * posted for it, if there is one: 0 when written, else a negative
	 * errno (nothing claimed; send it the ordinary way). */
	int (*write)(void *arg, uint32_t dst, uint32_t msg_id, uint32_t tag, const void *buf,
		     uint64_t len);
	void *arg; /* passed to every hook */
};

/* Install the receive-queue hooks (copied; every hook must be set), or
 * remove them with NULL (receives published already are withdrawn). Cold
 * path. Errors: -EINVAL (a hook missing). */
int pp_proto_set_recvq(struct pp_proto *eng, const struct pp_proto_recvq_ops *ops);

/* Install the staging hooks (copied; every hook must be set), or remove them
 * with NULL. Set them before traffic flows. Errors: -EINVAL (a hook missing). */
int pp_proto_set_stage(struct pp_proto *eng, const struct pp_proto_stage_ops *ops);

#endif
