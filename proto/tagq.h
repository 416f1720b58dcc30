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
 * left a wildcard. Buckets are allocated at init for the queue's capacity:
 * nothing is allocated afterwards.
 */
#ifndef PP_PROTO_TAGQ_H
#define PP_PROTO_TAGQ_H

#include <stdint.h>

#include "list.h"

#define PP_TAGQ_ANY (-1) /* a receive from any source */

/* Ignored bits a receive may take out of the mask; more make it a
 * wildcard. */
#define PP_TAGQ_NARROW_MAX 4

/* Embedded in what a queue holds (the engine's receives and messages). */
struct pp_tagq_entry {
	struct link all; /* the queue's order */
	struct link key; /* its bucket, or the wildcard list */
	uint64_t seq;	 /* insertion number */
	uint64_t tag;	 /* tag (a receive's wanted tag) */
	uint64_t ignore; /* tag bits that do not count (a message: 0) */
	int32_t src;	 /* source rank, or PP_TAGQ_ANY */
	uint8_t hashed;	 /* filed in a bucket */
};

struct pp_tagq {
	struct link all;     /* every entry, in insertion order */
	struct link wild;    /* entries not hashed, in insertion order */
	struct link *bucket; /* nbucket heads, each in insertion order */
	uint32_t nbucket;    /* a power of two */
	uint64_t mask;	     /* tag bits in the key */
	uint64_t seq;	     /* the next insertion number */
	uint64_t refiles;    /* times the mask narrowed */
	uint32_t n;	     /* entries */
};

/* A queue for up to about cap entries (buckets: cap / 2, at least 16);
 * 0 or -ENOMEM. fini frees the buckets (the entries are the caller's). */
int pp_tagq_init(struct pp_tagq *q, uint32_t cap);
void pp_tagq_fini(struct pp_tagq *q);

/* Append e, whose src, tag and ignore are set (a message: ignore 0). */
void pp_tagq_add(struct pp_tagq *q, struct pp_tagq_entry *e);
/* Take e out of q. */
void pp_tagq_del(struct pp_tagq *q, struct pp_tagq_entry *e);

/* In a queue of receives: the earliest that a message from src with tag
 * matches, or NULL. */
struct pp_tagq_entry *pp_tagq_find_recv(const struct pp_tagq *q, uint32_t src, uint64_t tag);
/* In a queue of messages: the earliest that a receive (src or PP_TAGQ_ANY,
 * tag, ignore) matches, or NULL. Not const: the receive may narrow the
 * mask first. */
struct pp_tagq_entry *pp_tagq_find_msg(struct pp_tagq *q, int32_t src, uint64_t tag,
				       uint64_t ignore);

/* 1 when a receive (want_src, want_tag, ignore) takes a message (src, tag). */
static inline int pp_tagq_match(int32_t want_src, uint64_t want_tag, uint64_t ignore, uint32_t src,
				uint64_t tag)
{
	return (want_src == PP_TAGQ_ANY || (uint32_t)want_src == src) &&
	       ((tag ^ want_tag) & ~ignore) == 0;
}

#endif
