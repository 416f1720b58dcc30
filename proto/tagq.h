/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Matching queues whose cost does not grow with depth (docs/protocol.md,
 * rule 2: a message takes the earliest posted receive it matches; a
 * receive takes the earliest arrived message it matches).
 *
 * A queue keeps its entries in order (all), and files each one either in a
 * hash bucket of its key, (source, tag & mask), or in an ordered wildcard
 * list. An entry is hashed when every entry that could match it has the
 * same key: a message (one source, one tag) always is; a receive is when
 * it names its source and ignores no tag bit of the mask. So:
 *  - a message looks for its receive in one bucket and in the wildcards,
 *    and takes the earlier of the two first matches (by insertion number);
 *  - a receive that is hashed looks for its message in one bucket; one that
 *    is not (any source, or ignored bits the mask keeps) walks the queue in
 *    order, as a list would.
 * The mask starts with every bit. A receive that ignores a few bits (MPI
 * libraries set a protocol bit or two in every receive's ignore mask:
 * Open MPI's synchronous-send bit) takes them out of the mask, and the
 * queue is filed again once (the mask only narrows, so that happens at most
 * once per bit in a queue's life); one that ignores more (MPI_ANY_TAG) is
 * left a wildcard. Buckets are allocated at init for the queue's expected
 * depth and doubled when it holds more than 4 entries a bucket (a new
 * deepest: the allocation happens only on the way to it). A queue is only
 * a list, walked in order, until a walk has to pass more than
 * PP_TAGQ_LIST_MAX entries: a window of receives that all share one key,
 * or messages that come in the order their receives were posted, find
 * theirs at the front however deep the queue, and pay for no buckets
 * (Open MPI over pp, one node, a window of 64 at 8 B, callgrind: the
 * receiver's MPI_Irecv 710 -> 687 instructions a message, its input 230 ->
 * 126).
 */
#ifndef PP_PROTO_TAGQ_H
#define PP_PROTO_TAGQ_H

#include <stdint.h>

#include "dlist.h"
#include "pp_compiler.h"
#include "pp_tag.h"

#define PP_TAGQ_ANY (-1) /* a receive from any source */

/* Ignored bits a receive may take out of the mask; more make it a
 * wildcard. */
#define PP_TAGQ_NARROW_MAX 4
/* Entries a walk may pass before the queue starts filing them: a walk of
 * so few costs less than keeping buckets (once filed, a queue stays so). */
#define PP_TAGQ_LIST_MAX 16

/* Embedded in what a queue holds (the engine's receives and messages). */
struct pp_tagq_entry {
	struct pp_link all; /* the queue's order */
	struct pp_link key; /* its bucket, or the wildcard list */
	uint64_t seq;	    /* insertion number */
	uint64_t tag;	    /* tag (a receive's wanted tag) */
	uint64_t ignore;    /* tag bits that do not count (a message: 0) */
	int32_t src;	    /* source rank, or PP_TAGQ_ANY */
	uint8_t hashed;	    /* filed in a bucket */
};

struct pp_tagq {
	struct pp_link all;	/* every entry, in insertion order */
	struct pp_link wild;	/* entries not hashed, in insertion order */
	struct pp_link *bucket; /* nbucket heads, each in insertion order */
	uint32_t nbucket;	/* a power of two */
	uint64_t mask;		/* tag bits in the key */
	uint64_t seq;		/* the next insertion number */
	uint64_t narrowed;	/* times the mask narrowed */
	uint32_t n;		/* entries */
	uint8_t filed;		/* entries are in buckets and wild (a walk once passed
				 * more than PP_TAGQ_LIST_MAX) */
};

/* A queue for up to about cap entries (buckets: cap / 2, at least 16);
 * 0 or -ENOMEM. fini frees the buckets (the entries are the caller's). */
int pp_tagq_init(struct pp_tagq *q, uint32_t cap);
void pp_tagq_fini(struct pp_tagq *q);

/* 1 when a receive (want_src, want_tag, ignore) takes a message (src, tag). */
static inline int pp_tagq_match(int32_t want_src, uint64_t want_tag, uint64_t ignore, uint32_t src,
				uint64_t tag)
{
	return (want_src == PP_TAGQ_ANY || (uint32_t)want_src == src) &&
	       pp_tag_match(want_tag, ignore, tag);
}

/* Out of line: what a filed queue does (tagq.c). add_slow: an entry that
 * may narrow the mask, start filing, or double the buckets. */
void pp_tagq_add_slow(struct pp_tagq *q, struct pp_tagq_entry *e);
struct pp_tagq_entry *pp_tagq_find_recv_filed(const struct pp_tagq *q, uint32_t src, uint64_t tag);
struct pp_tagq_entry *pp_tagq_find_msg_filed(const struct pp_tagq *q, int32_t src, uint64_t tag,
					     uint64_t ignore);

void pp_tagq_narrow_slow(struct pp_tagq *q, int32_t src, uint64_t ignore);

/* Start filing q's entries (a walk was long): buckets for its depth, every
 * entry filed in order. */
void pp_tagq_file(struct pp_tagq *q);

/* A receive (src, ignore) is about to look: when it ignores a few bits the
 * mask keeps and names its source, they leave the mask and the queue is
 * filed again (add does this for the receives it takes). */
static inline void pp_tagq_narrow(struct pp_tagq *q, int32_t src, uint64_t ignore)
{
	if (ignore & q->mask)
		pp_tagq_narrow_slow(q, src, ignore);
}

/* The first message of q, in order, that a receive matches; *passed gets
 * the entries walked past. */
static inline struct pp_tagq_entry *pp_tagq_walk_msg(const struct pp_tagq *q, int32_t src,
						     uint64_t tag, uint64_t ignore,
						     uint32_t *passed)
{
	*passed = 0;
	for (const struct pp_link *l = q->all.next; l != &q->all; l = l->next, ++*passed) {
		struct pp_tagq_entry *e = container_of(l, struct pp_tagq_entry, all);
		if (pp_tagq_match(src, tag, ignore, (uint32_t)e->src, e->tag))
			return e;
	}
	return NULL;
}

/* Append e, whose src, tag and ignore are set (a message: ignore 0). A
 * list's case inline. */
static inline void pp_tagq_add(struct pp_tagq *q, struct pp_tagq_entry *e)
{
	if (q->filed || (e->ignore & q->mask)) {
		pp_tagq_add_slow(q, e);
		return;
	}
	e->seq = q->seq++;
	list_add_tail(&q->all, &e->all);
	q->n++;
}

/* Take e out of q. Its links are left stale: add sets them again, and
 * nothing reads an entry's links while it is in no queue. */
static inline void pp_tagq_del(struct pp_tagq *q, struct pp_tagq_entry *e)
{
	list_unlink(&e->all);
	if (q->filed)
		list_unlink(&e->key);
	q->n--;
}

/* In a queue of receives: the earliest that a message from src with tag
 * matches, or NULL. A walk that passes more than PP_TAGQ_LIST_MAX entries
 * files the queue. */
static inline struct pp_tagq_entry *pp_tagq_find_recv(struct pp_tagq *q, uint32_t src, uint64_t tag)
{
	if (q->filed)
		return pp_tagq_find_recv_filed(q, src, tag);
	uint32_t passed = 0;
	struct pp_tagq_entry *found = NULL;
	for (const struct pp_link *l = q->all.next; l != &q->all; l = l->next, passed++) {
		struct pp_tagq_entry *e = container_of(l, struct pp_tagq_entry, all);
		if (pp_tagq_match(e->src, e->tag, e->ignore, src, tag)) {
			found = e;
			break;
		}
	}
	if (pp_unlikely(passed > PP_TAGQ_LIST_MAX))
		pp_tagq_file(q);
	return found;
}

/* In a queue of messages: the earliest that a receive (src or PP_TAGQ_ANY,
 * tag, ignore) matches, or NULL: one bucket when the receive is hashed
 * under the queue's mask, else a walk of the queue (narrow first). look
 * only looks (a probe); find files a list its walk found long. */
static inline struct pp_tagq_entry *pp_tagq_look_msg(const struct pp_tagq *q, int32_t src,
						     uint64_t tag, uint64_t ignore)
{
	uint32_t passed;
	if (q->filed)
		return pp_tagq_find_msg_filed(q, src, tag, ignore);
	return pp_tagq_walk_msg(q, src, tag, ignore, &passed);
}

static inline struct pp_tagq_entry *pp_tagq_find_msg(struct pp_tagq *q, int32_t src, uint64_t tag,
						     uint64_t ignore)
{
	uint32_t passed;
	if (q->filed)
		return pp_tagq_find_msg_filed(q, src, tag, ignore);
	struct pp_tagq_entry *found = pp_tagq_walk_msg(q, src, tag, ignore, &passed);
	if (pp_unlikely(passed > PP_TAGQ_LIST_MAX))
		pp_tagq_file(q);
	return found;
}

#endif
