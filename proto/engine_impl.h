/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inside the engine, not for other layers: the records every module shares
 * (a peer, a send, a receive, a window descriptor) and what each module
 * offers the others. The modules, one rule each (docs/protocol.md):
 *   engine.c   life cycle, peers, completions
 *   send.c     a message's sending side: post, frames, PULLs served, handoff
 *   recv.c     a message's receiving side: bytes placed, PULLs queued, finish
 *   match.c    posted receives and unexpected messages (MPI matching)
 *   credit.c   the pushed buffer's shares: spent, given back
 *   gbn.c      go-back-N of one stream (a leaf: gbn.h)
 *   input.c    a received frame: decode, check, go-back-N, dispatch
 *   output.c   frames to send, and the timers
 *   local.c    intranode peers: direct copies, DONE PULLs, receive queue
 *   stage.c    prediction staging and pushed-buffer eviction
 * The layer below's hooks (conf.hooks) are called through HOOK only.
 */
#ifndef PP_PROTO_ENGINE_IMPL_H
#define PP_PROTO_ENGINE_IMPL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine.h"
#include "gbn.h"
#include "dlist.h"
#include "path.h"
#include "pushbuf.h"
#include "tagq.h"
#include "wire.h"

#define PP_PROTO_PUSH_CAP (1u << 20) /* btp_fit: a push is never longer */
#define PP_PROTO_RX_CHUNK 1024u	     /* receive records made at a time */

/* Call hook name of the layer below (struct pp_proto_hooks) with its arg. */
#define HOOK(e, name, ...) ((e)->c.hooks.name((e)->c.hooks.arg, __VA_ARGS__))

enum send_state {
	SEND_FREE = 0, /* in the free pool */
	SEND_ACTIVE,   /* frames being produced or acknowledged */
};

enum rx_state {
	RX_FREE = 0,   /* in the free pool */
	RX_POSTED,     /* receive posted, no message yet */
	RX_UNEXPECTED, /* message arrived, no receive yet: bytes in the pushed buffer */
	RX_ACTIVE,     /* matched: bytes go to the user buffer */
};

struct pp_proto_send_rec {
	enum send_state state; /* where it is in its life */
	const uint8_t *buf;    /* the user's bytes */
	uint64_t len;	       /* message length */
	uint64_t push_end;     /* bytes pushed unasked (P) */
	uint64_t next_off;     /* next byte to put in a frame */
	uint64_t end_off;      /* bytes that may be framed now */
	uint64_t first_t;      /* btp_fit: when its FIRST frame left asking a PULL (0: not) */
	uint8_t await_pull;    /* its pushes are out, the rest waits for its PULL */
	uint64_t cookie;       /* caller's value */
	uint32_t peer;	       /* destination rank */
	uint64_t tag;	       /* message tag */
	uint32_t data;	       /* immediate data, when has_data */
	uint8_t has_data;      /* the FIRST frame carries data (xflags DATA) */
	uint32_t msg_id;       /* per-pair message number */
	uint32_t unacked;      /* frames sent and not acknowledged */
	uint8_t first_sent;    /* the FIRST frame is produced */
	uint8_t gen_done;      /* every frame is produced */
	uint8_t queued;	       /* on the peer's txq */
	uint8_t copied;	       /* buf is the engine's copy; completion already given */
	uint8_t late;	       /* copied, but buf is still the user's until pp_proto_settle */
	uint8_t written;       /* written into the receive buffer: one empty FIRST frame */
	uint8_t handed;	       /* the handoff hook holds its description, no PULL yet */
	uint8_t served;	       /* the lower layer serves its PULL; handoff_done pending */
	uint8_t below; /* the lower layer sent [push_end, len): the engine sends the pushes alone */
	int error;     /* result given once its frames are acknowledged */
	struct pp_link all; /* peer's list of active sends */
	struct pp_link q;   /* peer's txq, or the free pool */
	struct pp_link lq;  /* the engine's late list while late */
};

struct pp_proto_recv_rec {
	/* A posted receive's source (or PP_PROTO_ANY), tag and ignored bits are
	 * its queue entry's, m.src, m.tag and m.ignore. Largest fields first:
	 * pp_proto_rx_take clears all of these on every receive. */
	uint8_t *buf;		       /* user buffer (posted, active) */
	uint64_t cap;		       /* its length */
	uint64_t cookie;	       /* caller's value */
	uint64_t tag;		       /* tag of the message */
	uint64_t msg_len;	       /* message length */
	uint64_t got;		       /* bytes received so far */
	uint64_t direct_from;	       /* local peer: bytes it pushes; the copy starts there */
	uint64_t xnext;		       /* next offset expected on an extra stream (0: none yet) */
	uint64_t xgot;		       /* bytes that came on extra streams (after the pushes) */
	uint64_t help_pos;	       /* local peer: its help offer's position + 1 (0: none), */
	uint64_t help_len;	       /* ... for [got, got + help_len) of the chunk in copy */
	uint8_t *stage;		       /* staging block holding the message, or NULL */
	struct pp_pushbuf_chain cells; /* pushed bytes (unexpected) */
	enum rx_state state;	       /* where it is in its life */
	uint32_t peer;		       /* source rank of the message */
	uint32_t data;		       /* its immediate data, when has_data */
	uint32_t msg_id;	       /* message number */
	uint32_t post;		       /* receives posted before it (pp_proto_cpl.post) */
	int rq_slot;		       /* receive-queue entry + 1 when published, else 0 */
	uint8_t has_data;	       /* its FIRST frame carried data */
	uint8_t wants_pull;	       /* sender waits for a PULL */
	uint8_t pull_queued;	       /* on the peer's pullq or directq */
	uint8_t evicted;	       /* pushed bytes given up: pull all again */
	uint8_t rewind;		       /* the PULL carries AGAIN */
	uint8_t placed;		       /* place_post holds a description of buf */
	uint8_t help_own;	       /* the rest of the chunk past the help: 1 copied, 2 failed */
	/* From here on: not cleared by pp_proto_rx_take. m's fields are set
	 * by whoever takes the record (src, tag, ignore) and pp_tagq_add. */
	struct pp_tagq_entry m;		     /* in the posted or unexpected queue (tagq.h) */
	struct pp_proto_recv_rec *next_free; /* the free pool's next record */
	struct pp_link by_peer;		     /* peer's list of arrived messages */
	struct pp_link pq;		     /* peer's pullq or directq */
};

/* One sequenced frame in the window, enough to regenerate it. */
struct pp_proto_desc {
	uint8_t type;  /* PUSH, DATA or PULL */
	uint8_t flags; /* wire flags as first sent */
	uint16_t len;  /* payload bytes */
	void *obj; /* struct pp_proto_send_rec (PUSH, DATA), struct pp_proto_recv_rec (PULL), NULL
		      (DONE PULL) */
	uint64_t offset; /* payload position, or PULL offset */
	uint32_t msg_id; /* DONE PULL: its message (the receive is gone) */
};

/* A message copied straight from a local peer's buffer, owed a DONE PULL;
 * or (help) a help offer to tell it of, in a PULL with HELP. */
struct pp_proto_done {
	uint64_t msg_len; /* its length; help: the offer's position */
	uint32_t msg_id;  /* its number */
	uint8_t help;	  /* 1: a HELP, not a DONE */
};

struct pp_proto_peer {
	uint8_t mac[6];	 /* where frames to it go */
	uint32_t inc;	 /* its incarnation: its frames carry it, ours to it too */
	uint8_t present; /* added with pp_proto_peer_add */
	uint8_t lost;	 /* declared lost: operations fail */
	uint8_t gone;	 /* said goodbye: it sends nothing more */
	uint8_t local;	 /* intranode: frames via pp_proto_output_local */
	uint8_t direct;	 /* local, and the engine has a direct hook */
	uint32_t btp1;	 /* bytes of the first push to it */
	uint32_t btp2;	 /* bytes of the second push to it */
	/* TX channel (our stream to this peer). */
	struct pp_gbn_tx tx;	     /* its go-back-N sender */
	struct pp_path path;	     /* what the path to it carries (btp_fit) */
	uint32_t await_pull;	     /* sends to it whose pushes are out and PULL not in */
	uint64_t starved_t;	     /* since then nothing to send but those (0: not) */
	uint8_t ping_owed;	     /* pp_proto_ping: a PING waits for the window */
	uint8_t late_rx;	     /* its last PULL came after our pushes had ended */
	struct pp_proto_desc *ring;  /* window descriptors, indexed seq & mask */
	uint32_t next_msg_id;	     /* next message number to this peer */
	uint32_t rx_msg_next;	     /* next message number from it not seen yet */
	uint32_t id_told;	     /* its rx_msg_next once it took what we sent (lite) */
	uint16_t credit_limit;	     /* cells the peer has allowed us, cumulative */
	uint16_t credit_used;	     /* cells we pushed, cumulative */
	struct pp_link sends;	     /* active sends to it */
	struct pp_link txq;	     /* sends with frames to produce */
	struct pp_link pullq;	     /* receives owing it a PULL */
	struct pp_link directq;	     /* local: receives copying straight from its buffers */
	struct pp_proto_done *doneq; /* local: messages owed a DONE PULL (ring) */
	uint32_t done_mask;	     /* its size - 1 */
	uint32_t done_head;	     /* next to send */
	uint32_t done_tail;	     /* next to fill */
	/* RX channels: its own stream (rx[0], whatever number the peer gives
	 * it) and the extra streams 1..PP_PROTO_STREAMS-1 of pull handlers
	 * sending DATA on its behalf (rx[s]). */
	uint16_t rx_stream;		       /* its own stream's number, from its last frame */
	struct pp_gbn_rx rx[PP_PROTO_STREAMS]; /* go-back-N receivers, by stream */
	uint32_t xowe;			       /* bit s: extra stream s owes an ACK or NACK */
	uint16_t credit_adv;		       /* cells allowed to it, cumulative (advertised) */
	uint16_t credit_told;		       /* credit_adv as a lite record last told it */
	struct pp_link arrived;		       /* unexpected and active receives from it */
};

struct pp_proto {
	struct pp_proto_conf c;		 /* configuration */
	struct pp_wire_check chk;	 /* c's fields every received frame is checked against */
	uint32_t maxp;			 /* payload bytes per frame */
	uint32_t wmask;			 /* window - 1 */
	uint32_t credit_share;		 /* cells each peer may hold */
	uint16_t credit_news;		 /* cells given back that a lite record tells */
	uint64_t push_cap;		 /* btp_fit: most bytes a message pushes unasked */
	struct pp_proto_peer *peers;	 /* indexed by rank */
	uint32_t rr;			 /* next peer output looks at */
	struct pp_proto_send_rec *sends; /* send pool */
	uint8_t *copies;		 /* copy_max bytes per send, for small sends */
	struct pp_proto_ref *ref_out;	 /* pp_proto_output_ref's result, NULL otherwise */
	uint32_t ref_min;		 /* its smallest payload sent by reference */
	uint32_t nsends_copied;		 /* sends completed early, awaiting acks */
	struct pp_proto_recv_rec **rx_chunk; /* receive records, PP_PROTO_RX_CHUNK per chunk */
	uint32_t nrx;			     /* records made (a multiple of the chunk) */
	uint32_t max_rx;		     /* ... at most (max_recvs) */
	struct pp_link send_free;	     /* free sends */
	struct pp_link late;		     /* sends whose eager copy waits for pp_proto_settle */
	struct pp_proto_recv_rec *rx_pool;   /* free receives: a stack, by next_free */
	struct pp_tagq posted;		     /* posted receives, in order (tagq.h) */
	struct pp_tagq unexpected;	     /* unexpected messages, in arrival order */
	uint32_t user_ops;		     /* sends + receives outstanding or unpolled */
	uint32_t recv_posts;		     /* receives posted so far (mod 2^32) */
	uint32_t ops_easy;	  /* user_ops below this: room, no check (pp_proto_ops_room) */
	int push_owed;		  /* a send queued frames (pp_proto_push_owed) */
	uint8_t local_due;	  /* a node-mate may have a frame due (pp_proto_local_take) */
	struct pp_proto_cpl *cpl; /* completion ring */
	uint32_t cpl_mask;	  /* ring size - 1 */
	uint32_t cpl_head;	  /* next to poll */
	uint32_t cpl_tail;	  /* next to fill */
	struct pp_pushbuf pb;	  /* the pushed buffer */
	struct pp_stats st;	  /* counters */
	uint8_t staging;	  /* the staging hooks are there */
	uint8_t recvq;		  /* the receive-queue hooks are there */
	uint8_t local_out;	  /* in pp_proto_output_local: frames in the local form */
	uint8_t lite;		  /* the lite hooks are there, lite_max > 0, Push-Pull */
	uint32_t lite_len;	  /* longest lite message: lite_max, one frame's payload at most */
	uint64_t writable_min;	  /* shorter messages are never written (pp_proto_writable) */
};

/* What a frame in sequence did: taken, or refused for now (it comes again,
 * and the reason is counted). */
enum take {
	TAKEN = 0,     /* in: the stream moves on */
	REFUSED_STATE, /* no record for it now */
	REFUSED_NOBUF, /* no pushed-buffer room */
};

/* What eviction could do for a frame that finds the pushed buffer full. */
enum evict_result {
	EVICT_NONE = 0, /* nothing could give its cells up */
	EVICT_ROOM,	/* others gave theirs: the frame fits now */
	EVICT_SELF,	/* the frame's own message gave its bytes up: throw it away */
};

/* ---- engine.c ---- */

/* Queue a completion (no immediate data: the caller may add it to the
 * record returned). */
struct pp_proto_cpl *pp_proto_complete(struct pp_proto *e, uint64_t cookie, int is_send,
				       uint32_t peer, uint64_t tag, uint64_t len, int error);

/* Declare a peer lost: its operations fail with -ECONNRESET. */
void pp_proto_peer_lose(struct pp_proto *e, uint32_t rank);

/* ---- credit.c ---- */

/* The cells peer p's share gets at first (an equal share of the buffer). */
uint32_t pp_proto_credit_share(const struct pp_pushbuf *pb, uint32_t nranks);

/* Pushing s to p: spend its cells, or degrade it to Push-Zero (s->push_end
 * becomes 0) when the peer's credit does not cover them. */
void pp_proto_credit_spend(struct pp_proto *e, struct pp_proto_peer *p,
			   struct pp_proto_send_rec *s);

/* The peer's frame advertised credit (cumulative, 16 bits): take it when it
 * is news. */
static inline void pp_proto_credit_seen(struct pp_proto_peer *p, uint16_t credit)
{
	if ((int16_t)(credit - p->credit_limit) > 0)
		p->credit_limit = credit;
}

/* Give cells of the pushed buffer back to peer p: the cumulative count we
 * advertise in every frame to it grows; with announce, an ack is owed soon
 * so that the update goes even when no frame would. */
static inline void pp_proto_credit_return(struct pp_proto_peer *p, uint32_t cells, int announce)
{
	p->credit_adv = (uint16_t)(p->credit_adv + cells);
	if (cells && announce)
		pp_gbn_rx_owe(&p->rx[0]);
}

/* The fields every frame to p (rank) carries: job, streams, ack, credit,
 * ranks, incarnations (output.c). */
void pp_proto_hdr_common(const struct pp_proto *e, const struct pp_proto_peer *p, uint32_t rank,
			 struct pp_wire_hdr *h);

/* ---- local.c: lite messages (rule 6) ---- */

/* Send len bytes at buf to local peer p (rank dst) whole as one record of
 * its ring, complete at once (a completion queued unless flags has
 * PP_PROTO_SEND_NOW; immediate data with PP_PROTO_SEND_DATA): 0, or
 * -EAGAIN when it must go the sequenced way (too long, something of ours
 * to p unacknowledged or queued, no credit, the ring full). */
int pp_proto_lite_send(struct pp_proto *e, struct pp_proto_peer *p, uint32_t dst, uint64_t tag,
		       const void *buf, uint64_t len, unsigned flags, uint32_t data,
		       uint64_t cookie);
/* A lite record from p: 0 taken, -EAGAIN not now, -EPROTO dropped. */
int pp_proto_lite_in(struct pp_proto *e, struct pp_proto_peer *p, uint32_t from,
		     const struct pp_wire_lite *l, const uint8_t *pl);

/* ---- send.c ---- */

/* Bytes a message of len bytes to p pushes unasked (rule 1). */
uint64_t pp_proto_push_of(const struct pp_proto *e, const struct pp_proto_peer *p, uint64_t len);

/* 1 when a node-mate's message of len bytes streams through the ring
 * whole (local_stream), with BTPs fitted. */
static inline int pp_proto_local_streamed(const struct pp_proto *e, uint64_t len)
{
	return e->c.local_stream && len >= e->c.local_stream;
}

/* Payload bytes of the first frame of a message of len bytes that pushes
 * push of them. */
uint64_t pp_proto_first_len(const struct pp_proto *e, const struct pp_proto_peer *p, uint64_t push,
			    uint64_t len);

/* Take the next frame of the send at the head of p's txq into d. */
void pp_proto_send_frame(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_send_rec *s,
			 struct pp_proto_desc *d);

/* A PULL in sequence from p. */
void pp_proto_pull_in(struct pp_proto *e, struct pp_proto_peer *p, const struct pp_wire_hdr *h,
		      uint64_t now);

/* Finish a send (error 0, or -ECONNRESET) and return it to the pool. */
void pp_proto_send_finish(struct pp_proto *e, struct pp_proto_send_rec *s, int error);
/* The receiver holds all of s (or never will): no frame more of it is made;
 * it ends with error once its frames are acknowledged. */
void pp_proto_send_end(struct pp_proto *e, struct pp_proto_send_rec *s, int error);

/* ---- recv.c ---- */

/* A PUSH or DATA frame in sequence on p's own stream (pl NULL: its payload
 * was placed below). */
enum take pp_proto_push_in(struct pp_proto *e, struct pp_proto_peer *p, uint32_t src,
			   const struct pp_wire_hdr *h, const uint8_t *pl);

/* DATA in sequence on one of p's extra streams. */
enum take pp_proto_xdata_in(struct pp_proto *e, struct pp_proto_peer *p,
			    const struct pp_wire_hdr *h, const uint8_t *pl);

/* Queue a PULL for r if its sender waits for one and bytes remain (for a
 * local peer with a direct hook: queue the direct copy instead). */
void pp_proto_queue_pull(struct pp_proto_peer *p, struct pp_proto_recv_rec *r);

/* Take back r's placement description: the layer below writes nothing
 * more into r->buf once this returns. */
void pp_proto_place_take(struct pp_proto *e, struct pp_proto_recv_rec *r);

/* Return a receive record to the pool, unlinking it from every list. */
/* Receive records (engine.c). grow: a chunk more, up to max_recvs; 0 or
 * -ENOMEM. take: a free record (the pool grown when empty), or NULL at the
 * limit. ops_room: 0 when one more operation may start (the completion
 * ring grown to hold it: cpl_grow), else -ENOMEM. The common cases inline. */
int pp_proto_rx_grow(struct pp_proto *e);
int pp_proto_cpl_grow(struct pp_proto *e);

_Static_assert(offsetof(struct pp_proto_recv_rec, m) - 64 <= 128,
	       "pp_proto_rx_take clears a receive record in two parts of at most 128 bytes");

/* A record from the pool, every field zero but its queue entry and links
 * (they are set as it joins a queue or list): a third of the record less to
 * clear on every receive. */
static inline struct pp_proto_recv_rec *pp_proto_rx_take(struct pp_proto *e)
{
	if (pp_unlikely(!e->rx_pool) && pp_proto_rx_grow(e))
		return NULL;
	struct pp_proto_recv_rec *r = e->rx_pool;
	e->rx_pool = r->next_free;
	/* In two parts: GCC clears more than 128 bytes with rep stosb/stosq,
	 * whose start-up costs more than the ten stores two parts compile to. */
	memset(r, 0, 64);
	memset((uint8_t *)r + 64, 0, offsetof(struct pp_proto_recv_rec, m) - 64);
	return r;
}

/* Put r back in the pool, on top: reused first, while its lines are warm. */
static inline void pp_proto_rx_put(struct pp_proto *e, struct pp_proto_recv_rec *r)
{
	r->state = RX_FREE;
	r->next_free = e->rx_pool;
	e->rx_pool = r;
}

static inline int pp_proto_ops_room(struct pp_proto *e)
{
	if (pp_likely(e->user_ops < e->ops_easy))
		return 0;
	if (e->user_ops >= e->c.max_msgs + e->max_rx)
		return -ENOMEM;
	return pp_proto_cpl_grow(e);
}

void pp_proto_rx_free(struct pp_proto *e, struct pp_proto_recv_rec *r);

/* Complete a receive (-EMSGSIZE when truncated) and free its record. */
void pp_proto_rx_finish(struct pp_proto *e, struct pp_proto_recv_rec *r, int error);

/* ---- match.c ---- */

/* The first posted receive that matches a message from src with tag, taken
 * off the posted list (now ACTIVE), or NULL. */
struct pp_proto_recv_rec *pp_proto_match_first(struct pp_proto *e, uint32_t src, uint64_t tag);

/* ---- local.c ---- */

/* Local peer: one chunk of the direct copy at the head of p->directq; a
 * receive whose copy fails moves to p->pullq. */
void pp_proto_direct_step(struct pp_proto *e, uint32_t rank, struct pp_proto_peer *p);

/* A PULL for s from a local peer: the DONE kind finishes s (returns 1); one
 * asking from past the pushes (part was copied) moves s->next_off there.
 * Returns 0 when the PULL is to be served as usual. */
int pp_proto_pull_local(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_send_rec *s,
			const struct pp_wire_hdr *h);

/* Local peer: fill d with the next owed DONE PULL; 0 when none is owed. */
int pp_proto_done_desc(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_desc *d);

/* Receive queue. post: publish r, just queued, if the rules allow. match: r
 * (active) matched the FIRST frame h: take its entry; returns 1 when it
 * finished r (a WRITTEN message, or a protocol error), 0 when r goes on as
 * usual. withdraw: r, posted, ends without a message (also every published
 * one when the engine goes). write: let the receiver take s whole; returns
 * 1 when it did. */
void pp_proto_rq_post(struct pp_proto *e, struct pp_proto_recv_rec *r);
/* Whether a message of len bytes to or from node-mate p is one its sender
 * writes into a published receive: PP_PROTO_WRITE_WHOLE when it is pushed
 * whole and at least write_min, PP_PROTO_WRITE_REST when the rest it does
 * not push is at least direct_min (and write_rest), else 0. Both sides ask,
 * the receiver of its receive's length. */
enum { PP_PROTO_WRITE_WHOLE = 1, PP_PROTO_WRITE_REST = 2 };
int pp_proto_writable(const struct pp_proto *e, const struct pp_proto_peer *p, uint64_t len);
int pp_proto_rq_match(struct pp_proto *e, struct pp_proto_recv_rec *r, const struct pp_wire_hdr *h);
void pp_proto_rq_withdraw(struct pp_proto *e, struct pp_proto_recv_rec *r);
int pp_proto_rq_write(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_send_rec *s);

/* ---- stage.c ---- */

/* ask: a block for an unexpected FIRST, or NULL. input: a frame of a staged
 * or evicted unexpected message (stored or thrown away). evict: make room
 * for need cells, maybe by evicting self. match: a receive took a staged or
 * evicted message. release: give a staging block back. */
void *pp_proto_stage_ask(struct pp_proto *e, uint32_t src, const struct pp_wire_hdr *h);
void pp_proto_stage_input(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_recv_rec *r,
			  const struct pp_wire_hdr *h, const uint8_t *pl);
enum evict_result pp_proto_stage_evict(struct pp_proto *e, uint32_t need,
				       struct pp_proto_recv_rec *self);
void pp_proto_stage_match(struct pp_proto *e, struct pp_proto_peer *p, struct pp_proto_recv_rec *r);
void pp_proto_stage_release(struct pp_proto *e, struct pp_proto_recv_rec *r);

#endif
