/* SPDX-License-Identifier: BSD-3-Clause */
/* A port's own buffers (bufpool.h). */
#include <errno.h>
#include <stdlib.h>

#include "bufpool.h"

int pp_bufpool_init(struct pp_bufpool *bp, unsigned n, uint32_t cap, void *priv)
{
	bp->nb_slots = n;
	bp->nb_free = 0;
	bp->slots = calloc(n, sizeof(*bp->slots));
	bp->free_stack = calloc(n, sizeof(*bp->free_stack));
	bp->mem = malloc((size_t)n * cap);
	if (!bp->slots || !bp->free_stack || !bp->mem)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		bp->slots[i].data = bp->mem + (size_t)i * cap;
		bp->slots[i].cap = cap;
		bp->slots[i].priv = priv;
		bp->free_stack[i] = &bp->slots[i];
	}
	bp->nb_free = n;
	return 0;
}

void pp_bufpool_fini(struct pp_bufpool *bp)
{
	free(bp->free_stack);
	free(bp->slots);
	free(bp->mem);
	bp->free_stack = NULL;
	bp->slots = NULL;
	bp->mem = NULL;
	bp->nb_free = bp->nb_slots = 0;
}
