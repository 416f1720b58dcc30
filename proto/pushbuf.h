/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pushed buffer: receiver memory for pushed bytes of messages whose
 * receive is not posted yet. It is cut into 256-byte cells (the unit credits
 * are counted in); a frame's payload takes ceil(len / 256) cells, chained in
 * arrival order behind its message, so a message's pushed bytes are read back
 * by walking its chain. All cells are allocated at create; taking and giving
 * back cells is O(cells) with no allocation.
 */
#ifndef PP_PUSHBUF_H
#define PP_PUSHBUF_H

#include <stddef.h>
#include <stdint.h>

#define PP_PUSHBUF_CELL 256u
#define PP_PUSHBUF_NONE UINT32_MAX

struct pp_pushbuf {
	uint8_t *data;	 /* ncells * PP_PUSHBUF_CELL bytes */
	uint16_t *fill;	 /* bytes used in each cell */
	uint32_t *next;	 /* next cell in a chain, or PP_PUSHBUF_NONE */
	uint32_t *stack; /* free cell indices */
	uint32_t nfree;	 /* entries in stack */
	uint32_t ncells; /* cells in total */
	uint64_t bytes;	 /* payload bytes held now */
	uint64_t peak;	 /* most payload bytes ever held */
};

/* A message's chain of cells. */
struct pp_pushbuf_chain {
	uint32_t head;	/* first cell, or PP_PUSHBUF_NONE */
	uint32_t tail;	/* last cell, or PP_PUSHBUF_NONE */
	uint32_t cells; /* cells in the chain */
	uint64_t bytes; /* payload bytes in the chain */
};

/* Cells a payload of len bytes takes. */
static inline uint32_t pp_pushbuf_cells(uint64_t len)
{
	return (uint32_t)((len + PP_PUSHBUF_CELL - 1) / PP_PUSHBUF_CELL);
}

/* Allocate bytes (rounded down to cells). Errors: -ENOMEM. */
int pp_pushbuf_init(struct pp_pushbuf *pb, size_t bytes);
void pp_pushbuf_fini(struct pp_pushbuf *pb);

static inline void pp_pushbuf_chain_init(struct pp_pushbuf_chain *c)
{
	c->head = c->tail = PP_PUSHBUF_NONE;
	c->cells = 0;
	c->bytes = 0;
}

/* Append len bytes to chain c. Errors: -ENOBUFS (not enough free cells;
 * nothing is taken). */
int pp_pushbuf_append(struct pp_pushbuf *pb, struct pp_pushbuf_chain *c, const uint8_t *p,
		      uint32_t len);

/* Copy the chain's first cap bytes (at most) to dst, give its cells back and
 * empty it. Returns the cells given back. dst may be NULL to discard. */
uint32_t pp_pushbuf_drain(struct pp_pushbuf *pb, struct pp_pushbuf_chain *c, uint8_t *dst,
			  uint64_t cap);

#endif
