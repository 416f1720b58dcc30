/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port's buffers when the backend keeps them itself (the pcap and udp
 * ports): every descriptor and every frame's bytes allocated at open, a
 * stack of the free ones. Single-threaded, as a port's queue is.
 */
#ifndef PP_BUFPOOL_H
#define PP_BUFPOOL_H

#include <stdint.h>

#include "pp_port.h"

struct pp_bufpool {
	struct pp_buf *slots;	    /* every buffer descriptor */
	uint8_t *mem;		    /* frame bytes of every slot, cap each */
	struct pp_buf **free_stack; /* slots not handed out (the top is the last) */
	unsigned nb_free;	    /* entries in free_stack */
	unsigned nb_slots;	    /* slots in the pool */
};

/* n buffers of cap bytes, each with priv as its backend handle: 0 or
 * -ENOMEM (fini frees what was made). */
int pp_bufpool_init(struct pp_bufpool *bp, unsigned n, uint32_t cap, void *priv);
void pp_bufpool_fini(struct pp_bufpool *bp);

/* Up to n free buffers, emptied; how many. */
static inline unsigned pp_bufpool_alloc(struct pp_bufpool *bp, struct pp_buf **bufs, unsigned n)
{
	unsigned got = n < bp->nb_free ? n : bp->nb_free;
	for (unsigned i = 0; i < got; i++) {
		struct pp_buf *b = bp->free_stack[--bp->nb_free];
		b->len = 0;
		b->ts_ns = 0;
		bufs[i] = b;
	}
	return got;
}

static inline void pp_bufpool_free(struct pp_bufpool *bp, struct pp_buf **bufs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct pp_buf *b = bufs[i];
		/* data may have been moved inside the slot; put it back */
		b->data = bp->mem + (size_t)(b - bp->slots) * b->cap;
		bp->free_stack[bp->nb_free++] = b;
	}
}

#endif
