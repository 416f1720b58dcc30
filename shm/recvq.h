/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive-queue area of one ordered pair of local ranks (s -> r): r
 * describes the receives it has posted for messages from s, so that s, when
 * it sends, can see that a matching receive waits and write the message
 * straight into its buffer (the early receiver's single copy, done by the
 * sender).
 *
 * A ring of PP_SHM_RQ_ENTRIES entries, one cache line each, in post order,
 * with head and tail positions (64-bit, never wrapping) on their own cache
 * lines. Only r writes head, tail and the fields of an entry; both sides
 * change an entry's state word, which holds the entry's position (so an
 * entry reused for a later receive is never taken for the earlier one) and
 * its state:
 *
 *   FREE     withdrawn, or reclaimed; not in use
 *   POSTED   r waits for a message from s whose tag matches this tag and
 *            ignore mask (pp_tag.h, the engine's rule), expecting it to
 *            be message number `expect` of the pair
 *   CLAIMED  s took it for message `expect` and writes (or wrote) into it
 *   TAKEN    r matched it (the ordinary way, or after s's write)
 *
 * A help entry (kind PP_SHM_RQ_HELP) is no receive: r, copying the rest of
 * a long message `expect` from s out of s's buffer, asks s to write one
 * part of it ([tag, tag + len) of the message, tag standing for the offset)
 * while r copies the rest, so that both cores copy at once. It sits in the
 * same ring, and s's scan for a receive passes over it; s claims it by its
 * position (which r tells s in a PULL frame), writes, and then marks it
 * written (kind PP_SHM_RQ_HELPED). r settles it: written (CLAIMED and
 * HELPED: TAKEN), not claimed (withdrawn: r copies the part itself), or
 * still being written. A write that fails gives the claim back.
 *
 * Transitions: r: FREE -> POSTED (post), POSTED -> FREE (withdraw),
 * POSTED or CLAIMED -> TAKEN (take), TAKEN -> FREE (reclaimed at the head by
 * the next post); s: POSTED -> CLAIMED (claim, CAS), CLAIMED -> POSTED
 * (unclaim, when its write failed before r could see the message).
 * s scans from head to tail for the first POSTED entry whose tag matches the
 * message's; it claims it only if `expect` is the message's number and the
 * buffer holds the whole message, otherwise it claims nothing. The zero-
 * filled area is a valid empty ring. Lock-free; no system call.
 *
 * Either side may be broken or hostile: every index, length and state is
 * read once and checked, every walk is bounded by the ring's size (head and
 * tail more than PP_SHM_RQ_ENTRIES apart are refused), an index is used
 * only masked, and a write goes only where the segment or the receiver's
 * process has the bytes. What a hostile side can do is make the pair's own
 * receives fail.
 */
#ifndef PP_SHM_RECVQ_H
#define PP_SHM_RECVQ_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define PP_SHM_RQ_ENTRIES 32 /* entries per pair, a power of two */

enum pp_shm_rq_state {
	PP_SHM_RQ_FREE = 0, /* not in use */
	PP_SHM_RQ_POSTED,   /* a receive waits */
	PP_SHM_RQ_CLAIMED,  /* the sender writes the message into it */
	PP_SHM_RQ_TAKEN,    /* matched by the receiver */
};

/* One posted receive, as the sender sees it. */
struct pp_shm_rq_entry {
	_Atomic uint64_t state;	  /* (position << 2) | enum pp_shm_rq_state */
	_Atomic uint64_t tag;	  /* the tag it wants ... */
	_Atomic uint64_t ignore;  /* ... but for these bits (pp_tag_match) */
	_Atomic uint64_t addr;	  /* the buffer in the receiver's address space */
	_Atomic uint64_t seg_off; /* its offset in the segment (pp_malloc), or PP_SHM_NO_OFFSET */
	_Atomic uint64_t len;	  /* its length */
	_Atomic uint32_t expect;  /* the message number it waits for */
	_Atomic uint32_t kind;	  /* enum pp_shm_rq_kind */
	uint8_t pad[8];		  /* to a cache line */
};

/* What an entry is (the scan for a receive passes over help entries). */
enum pp_shm_rq_kind {
	PP_SHM_RQ_RECV = 0, /* a posted receive */
	PP_SHM_RQ_HELP,	    /* a part of message expect for s to write */
	PP_SHM_RQ_HELPED,   /* ... which s wrote */
};

/* The area of one ordered pair. */
struct pp_shm_rq {
	_Alignas(64) _Atomic uint64_t head;	     /* oldest position in use */
	uint8_t pad_h[56];			     /* head alone on its line */
	_Alignas(64) _Atomic uint64_t tail;	     /* next position to post */
	uint8_t pad_t[56];			     /* tail alone on its line */
	struct pp_shm_rq_entry e[PP_SHM_RQ_ENTRIES]; /* the ring */
};

/* What a claim gives the sender. */
struct pp_shm_rq_target {
	uint64_t addr;	  /* the receive buffer in the receiver's address space */
	uint64_t seg_off; /* its segment offset, or PP_SHM_NO_OFFSET */
	uint64_t len;	  /* its length */
};

/* Receiver: reclaim taken entries at the head, then post a receive (tag,
 * and the tag bits ignore that do not count) of len bytes at addr (seg_off: its segment offset or
 * PP_SHM_NO_OFFSET) waiting for message number expect. Returns its slot
 * (0..PP_SHM_RQ_ENTRIES-1). Errors: -ENOSPC (every entry in use), -EPROTO
 * (head and tail were rewritten: further apart than the ring, or a tail on
 * an entry in use). */
int pp_shm_rq_post(struct pp_shm_rq *q, uint64_t tag, uint64_t ignore, uint64_t addr,
		   uint64_t seg_off, uint64_t len, uint32_t expect);

/* Receiver: the receive of slot matched message msg_id; written: the sender
 * says it wrote the message. The entry is TAKEN afterwards in every case.
 * Errors: -EPROTO (written, but the entry was not claimed for msg_id; or not
 * written, but the entry was claimed). */
int pp_shm_rq_take(struct pp_shm_rq *q, int slot, uint32_t msg_id, int written);

/* Receiver: the receive of slot ends without a message: POSTED -> FREE.
 * Errors: -EBUSY (the sender claimed it: its message comes). */
int pp_shm_rq_withdraw(struct pp_shm_rq *q, int slot);

/* Receiver leaving: withdraw every posted entry; returns how many entries
 * stay claimed. */
int pp_shm_rq_close(struct pp_shm_rq *q);

/* Sender: find the first posted entry matching tag; if it waits for
 * message msg_id and holds len bytes, claim it and describe it in *t.
 * Returns the slot. Errors: -ENOENT (no matching entry, or the first one
 * waits for another message or is too short, or it changed under us). */
int pp_shm_rq_claim(struct pp_shm_rq *q, uint64_t tag, uint32_t msg_id, uint64_t len,
		    struct pp_shm_rq_target *t);

/* Sender: give a claim back (the write failed; the message goes the
 * ordinary way). */
void pp_shm_rq_unclaim(struct pp_shm_rq *q, int slot);

/* Sender: claim the receive posted for message msg_id (as
 * pp_shm_rq_claim) and write the len bytes at buf into it: memcpy when it is
 * in the segment mapped at seg (seg_size bytes; the receiver gave its
 * offset), else cross-memory attach into process pid (cma.h). A write that
 * fails gives the claim back. Errors: -ENOENT (nothing to claim), -EFAULT
 * (an offset outside the segment, or a range not mapped there), the errors
 * of pp_shm_cma_write (-EPERM also when cross-memory attach was refused
 * before). */
int pp_shm_rq_deliver(struct pp_shm_rq *q, pid_t pid, uint8_t *seg, uint64_t seg_size, uint64_t tag,
		      uint32_t msg_id, const void *buf, uint64_t len);

/* Receiver: ask the sender to write [off, off + len) of message msg_id
 * into addr (seg_off: its segment offset or PP_SHM_NO_OFFSET). Returns the
 * entry's position (what the sender claims it by). Errors: those of
 * pp_shm_rq_post. */
int64_t pp_shm_rq_offer(struct pp_shm_rq *q, uint32_t msg_id, uint64_t off, uint64_t addr,
			uint64_t seg_off, uint64_t len);

/* Receiver: settle the help entry at position pos: 0 when the sender wrote
 * its part (the entry is TAKEN), 1 when the sender had not claimed it
 * (withdrawn: the receiver copies the part itself), -EAGAIN while the
 * sender writes, -EPROTO when the entry is in no state an offer leads to
 * (taken; its part not written). */
int pp_shm_rq_settle(struct pp_shm_rq *q, uint64_t pos);

/* Sender: write the part the help entry at position pos asks of message
 * msg_id, whose len bytes are at buf (into the segment mapped at seg of
 * seg_size bytes, or into process pid), and mark it written. Returns the
 * bytes written. Errors:
 * -ENOENT (no help entry for msg_id at pos, or a part outside the
 * message), -EFAULT, -EPERM and the errors of pp_shm_cma_write (the claim
 * is given back). */
int64_t pp_shm_rq_help(struct pp_shm_rq *q, uint64_t pos, pid_t pid, uint8_t *seg,
		       uint64_t seg_size, uint32_t msg_id, const void *buf, uint64_t len);

/* State of slot (for tests and diagnostics). */
enum pp_shm_rq_state pp_shm_rq_state(const struct pp_shm_rq *q, int slot);

#endif
