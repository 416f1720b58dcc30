/* SPDX-License-Identifier: BSD-3-Clause */
/* Matching queues: hashed exact keys, ordered wildcards (tagq.h). */
#include <errno.h>
#include <stdlib.h>

#include "tagq.h"

int pp_tagq_init(struct pp_tagq *q, uint32_t cap)
{
	uint32_t nb = 16;
	while (nb < cap / 2 && nb < (1u << 24))
		nb <<= 1;
	q->bucket = malloc(sizeof(*q->bucket) * nb);
	if (!q->bucket)
		return -ENOMEM;
	for (uint32_t i = 0; i < nb; i++)
		list_init(&q->bucket[i]);
	list_init(&q->all);
	list_init(&q->wild);
	q->nbucket = nb;
	q->mask = ~0ull;
	q->seq = q->narrowed = 0;
	q->n = 0;
	q->filed = 0;
	return 0;
}

void pp_tagq_fini(struct pp_tagq *q)
{
	free(q->bucket);
	q->bucket = NULL;
}

static struct pp_link *bucket_of(const struct pp_tagq *q, uint32_t src, uint64_t tag)
{
	uint64_t h = ((tag & q->mask) ^ ((uint64_t)src << 40 | src)) * 0x9E3779B97F4A7C15ull;
	return &q->bucket[(h >> 32) & (q->nbucket - 1)];
}

static int hashable(const struct pp_tagq *q, int32_t src, uint64_t ignore)
{
	return src != PP_TAGQ_ANY && (ignore & q->mask) == 0;
}

static void file(struct pp_tagq *q, struct pp_tagq_entry *e)
{
	e->hashed = (uint8_t)hashable(q, e->src, e->ignore);
	list_add_tail(e->hashed ? bucket_of(q, (uint32_t)e->src, e->tag) : &q->wild, &e->key);
}

/* File every entry again, in order (the mask changed, or filing starts). */
static void refile(struct pp_tagq *q)
{
	list_init(&q->wild);
	for (uint32_t i = 0; i < q->nbucket; i++)
		list_init(&q->bucket[i]);
	for (struct pp_link *l = q->all.next; l != &q->all; l = l->next)
		file(q, container_of(l, struct pp_tagq_entry, all));
}

void pp_tagq_narrow_slow(struct pp_tagq *q, int32_t src, uint64_t ignore)
{
	uint64_t extra = ignore & q->mask;
	if (src == PP_TAGQ_ANY || !extra || __builtin_popcountll(extra) > PP_TAGQ_NARROW_MAX)
		return;
	q->mask &= ~extra;
	q->narrowed++;
	if (q->filed)
		refile(q);
}

void pp_tagq_add_slow(struct pp_tagq *q, struct pp_tagq_entry *e)
{
	pp_tagq_narrow(q, e->src, e->ignore);
	e->seq = q->seq++;
	list_add_tail(&q->all, &e->all);
	q->n++;
	if (q->filed && q->n > 4 * q->nbucket && q->nbucket < (1u << 24)) {
		/* Deeper than ever: twice the buckets (only at a new depth; the
		 * old ones stay if there is no memory). */
		struct pp_link *b = malloc(sizeof(*b) * 2 * q->nbucket);
		if (b) {
			free(q->bucket);
			q->bucket = b;
			q->nbucket *= 2;
			refile(q);
			return;
		}
	}
	if (q->filed)
		file(q, e);
}

void pp_tagq_file(struct pp_tagq *q)
{
	if (q->filed)
		return;
	/* Buckets for the depth it has now (the old ones stay if there is
	 * no memory). */
	uint32_t nb = q->nbucket;
	while (q->n > 4 * nb && nb < (1u << 24))
		nb *= 2;
	struct pp_link *b = nb != q->nbucket ? malloc(sizeof(*b) * nb) : NULL;
	if (b) {
		free(q->bucket);
		q->bucket = b;
		q->nbucket = nb;
	}
	q->filed = 1;
	refile(q);
}

struct pp_tagq_entry *pp_tagq_find_recv_filed(const struct pp_tagq *q, uint32_t src, uint64_t tag)
{
	struct pp_tagq_entry *best = NULL;
	const struct pp_link *b = bucket_of(q, src, tag);
	for (const struct pp_link *l = b->next; l != b; l = l->next) {
		struct pp_tagq_entry *e = container_of(l, struct pp_tagq_entry, key);
		if (pp_tagq_match(e->src, e->tag, e->ignore, src, tag)) {
			best = e;
			break;
		}
	}
	/* A wildcard posted before it (or none found) takes the message. */
	for (const struct pp_link *l = q->wild.next; l != &q->wild; l = l->next) {
		struct pp_tagq_entry *e = container_of(l, struct pp_tagq_entry, key);
		if (best && e->seq > best->seq)
			break;
		if (pp_tagq_match(e->src, e->tag, e->ignore, src, tag))
			return e;
	}
	return best;
}

struct pp_tagq_entry *pp_tagq_find_msg_filed(const struct pp_tagq *q, int32_t src, uint64_t tag,
					     uint64_t ignore)
{
	if (hashable(q, src, ignore)) {
		const struct pp_link *b = bucket_of(q, (uint32_t)src, tag);
		for (const struct pp_link *l = b->next; l != b; l = l->next) {
			struct pp_tagq_entry *e = container_of(l, struct pp_tagq_entry, key);
			if (pp_tagq_match(src, tag, ignore, (uint32_t)e->src, e->tag))
				return e;
		}
		return NULL;
	}
	uint32_t passed;
	return pp_tagq_walk_msg(q, src, tag, ignore, &passed);
}
