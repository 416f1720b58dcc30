/* SPDX-License-Identifier: BSD-3-Clause */
/* An intrusive doubly linked list (the engine's queues, tagq.h). */
#ifndef PP_PROTO_LIST_H
#define PP_PROTO_LIST_H

#include <stddef.h>

struct pp_link {
	struct pp_link *next; /* following element, or the head */
	struct pp_link *prev; /* preceding element, or the head */
};

#define container_of(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

static inline void list_init(struct pp_link *h)
{
	h->next = h->prev = h;
}

static inline int list_empty(const struct pp_link *h)
{
	return h->next == h;
}

static inline void list_add_tail(struct pp_link *h, struct pp_link *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void list_add_head(struct pp_link *h, struct pp_link *n)
{
	list_add_tail(h->next, n);
}

static inline void list_del(struct pp_link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

/* As list_del, but n's own links are left stale: for an element whose links
 * are next read only once it joins a list again. */
static inline void list_unlink(struct pp_link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

#endif
