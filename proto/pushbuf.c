/* SPDX-License-Identifier: BSD-3-Clause */
/* Pushed-buffer cells: a free stack and per-message chains. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pushbuf.h"

int pp_pushbuf_init(struct pp_pushbuf *pb, size_t bytes)
{
	memset(pb, 0, sizeof(*pb));
	uint32_t n = (uint32_t)(bytes / PP_PUSHBUF_CELL);
	pb->ncells = n;
	if (!n)
		return 0;
	pb->data = malloc((size_t)n * PP_PUSHBUF_CELL);
	pb->fill = calloc(n, sizeof(*pb->fill));
	pb->next = calloc(n, sizeof(*pb->next));
	pb->stack = calloc(n, sizeof(*pb->stack));
	if (!pb->data || !pb->fill || !pb->next || !pb->stack) {
		pp_pushbuf_fini(pb);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		pb->stack[i] = n - 1 - i;
	pb->nfree = n;
	return 0;
}

void pp_pushbuf_fini(struct pp_pushbuf *pb)
{
	free(pb->data);
	free(pb->fill);
	free(pb->next);
	free(pb->stack);
	memset(pb, 0, sizeof(*pb));
}

int pp_pushbuf_append(struct pp_pushbuf *pb, struct pp_pushbuf_chain *c, const uint8_t *p,
		      uint32_t len)
{
	uint32_t need = pp_pushbuf_cells(len);
	if (need > pb->nfree)
		return -ENOBUFS;
	while (len) {
		uint32_t cell = pb->stack[--pb->nfree];
		uint32_t n = len < PP_PUSHBUF_CELL ? len : PP_PUSHBUF_CELL;
		memcpy(pb->data + (size_t)cell * PP_PUSHBUF_CELL, p, n);
		pb->fill[cell] = (uint16_t)n;
		pb->next[cell] = PP_PUSHBUF_NONE;
		if (c->tail == PP_PUSHBUF_NONE)
			c->head = cell;
		else
			pb->next[c->tail] = cell;
		c->tail = cell;
		c->cells++;
		c->bytes += n;
		pb->bytes += n;
		p += n;
		len -= n;
	}
	if (pb->bytes > pb->peak)
		pb->peak = pb->bytes;
	return 0;
}

uint32_t pp_pushbuf_drain(struct pp_pushbuf *pb, struct pp_pushbuf_chain *c, uint8_t *dst,
			  uint64_t cap)
{
	uint32_t given = 0;
	uint64_t off = 0;
	for (uint32_t cell = c->head; cell != PP_PUSHBUF_NONE;) {
		uint32_t nx = pb->next[cell];
		uint32_t n = pb->fill[cell];
		if (dst && off < cap) {
			uint64_t k = cap - off < n ? cap - off : n;
			memcpy(dst + off, pb->data + (size_t)cell * PP_PUSHBUF_CELL, (size_t)k);
		}
		off += n;
		pb->bytes -= n;
		pb->stack[pb->nfree++] = cell;
		given++;
		cell = nx;
	}
	pp_pushbuf_chain_init(c);
	return given;
}
