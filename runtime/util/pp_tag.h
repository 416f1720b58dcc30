/* SPDX-License-Identifier: BSD-3-Clause */
/* The one rule of tag matching (docs/protocol.md, rule 2): a receive wants
 * tag want with the bits of ignore not counting. The engine's queues
 * (proto/tagq.h) and the receive-queue areas a node-mate's sender reads
 * (shm/recvq.h) both match by it; pp.h's tags and MPI_ANY_TAG are a tag and
 * a mask of this kind (runtime/ctx.h: pp_ctx_tag). Header-only. */
#ifndef PP_TAG_H
#define PP_TAG_H

#include <stdint.h>

static inline int pp_tag_match(uint64_t want, uint64_t ignore, uint64_t tag)
{
	return ((tag ^ want) & ~ignore) == 0;
}

#endif
