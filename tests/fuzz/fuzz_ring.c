/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the ring consumer (shm/ring.h) against a producer that
 * writes anything. The input gives the ring's size and its shared memory
 * (indices and cells), then a sequence of operations: the consumer's peek
 * and release, a sound producer's reserve and commit, and hostile writes
 * anywhere in the ring's memory between them. Properties: no crash (the ring
 * is its own heap block: ASan sees any read past it), every record handed
 * out lies wholly inside the cells (each byte is read), peek returns 1, 0 or
 * -EPROTO and -EPROTO for ever once it did, and the run ends.
 *
 * Input: [cells exponent 1..6] [head 8] [tail 8] [cells image ...]
 *        [ops: 1 byte each, some with arguments]
 * The ring's key is FUZZ_KEY, so that an image can hold marked records (a
 * record at index i is marked i ^ FUZZ_KEY).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR_BYTES 384 /* the shared header: head, tail, geometry blocks */
#define OFF_KEY	  264 /* the key, in the geometry block */
#define FUZZ_KEY  (1ull << 63)

struct in {
	const uint8_t *p; /* next byte */
	size_t n;	  /* bytes left */
};

static uint64_t take(struct in *in, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes && in->n; i++, in->p++, in->n--)
		v |= (uint64_t)*in->p << (8 * i);
	return v;
}

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	uint32_t ncells = 1u << (1 + take(&in, 1) % 6);
	size_t bytes = pp_shm_ring_bytes(ncells);
	uint8_t *mem = aligned_alloc(PP_SHM_RING_ALIGN, bytes);
	if (!mem || pp_shm_ring_format(mem, ncells))
		abort();
	uint8_t *cells = mem + HDR_BYTES;
	uint64_t key = FUZZ_KEY;
	memcpy(mem + OFF_KEY, &key, 8);
	uint64_t head = take(&in, 8), tail = take(&in, 8);
	memcpy(mem, &head, 8);
	memcpy(mem + 128, &tail, 8);
	size_t img = in.n < (size_t)ncells * PP_SHM_RING_CELL ? in.n : ncells * PP_SHM_RING_CELL;
	memcpy(cells, in.p, img);
	in.p += img;
	in.n -= img;

	struct pp_shm_ring cons, prod;
	int attached = pp_shm_ring_attach_cells(&cons, mem, ncells) == 0;
	if (!attached) {
		/* Indices no ring can have: refused. Start from sound ones. */
		memset(mem, 0, 8);
		memset(mem + 128, 0, 8);
		if (pp_shm_ring_attach_cells(&cons, mem, ncells))
			abort();
	}
	if (pp_shm_ring_attach(&prod, mem))
		abort();
	int poisoned = 0;
	while (in.n) {
		unsigned op = (unsigned)take(&in, 1) % 6;
		const void *q = NULL;
		uint32_t len = 0;
		void *w;
		switch (op) {
		case 0: /* peek */
		case 1: /* peek and release */ {
			int rc = pp_shm_ring_peek(&cons, &q, &len);
			if (rc != 1 && rc != 0 && rc != -EPROTO)
				abort();
			if (poisoned && rc != -EPROTO)
				abort();
			poisoned |= rc == -EPROTO;
			if (rc == 1) {
				const uint8_t *b = q;
				if (b < cells + PP_SHM_RING_REC_HDR ||
				    (size_t)(b - cells) % PP_SHM_RING_CELL != PP_SHM_RING_REC_HDR ||
				    len > (size_t)(cells + (size_t)ncells * PP_SHM_RING_CELL - b) ||
				    len > pp_shm_ring_max_record(&cons))
					abort();
				for (uint32_t i = 0; i < len; i++)
					sink = b[i];
			}
			if (op == 1)
				pp_shm_ring_release(&cons);
			break;
		}
		case 2: /* release */
			pp_shm_ring_release(&cons);
			break;
		case 3: /* a sound producer's record */ {
			uint32_t n = (uint32_t)take(&in, 2) % (pp_shm_ring_max_record(&prod) + 1);
			if (pp_shm_ring_reserve(&prod, n, &w) == 0) {
				memset(w, 0x5a, n);
				pp_shm_ring_commit(&prod, n);
			}
			break;
		}
		case 4: /* a hostile write of 8 bytes anywhere in the ring's memory */ {
			size_t at = (size_t)take(&in, 2) % (bytes - 7);
			uint64_t v = take(&in, 8);
			memcpy(mem + at, &v, 8);
			break;
		}
		case 5: /* a hostile record header, marked, near the consumer's index */ {
			uint64_t at = cons.tail + (uint64_t)(int8_t)take(&in, 1);
			uint64_t mark = at ^ FUZZ_KEY;
			uint32_t len = (uint32_t)take(&in, 2), kind = (uint32_t)take(&in, 1);
			uint8_t *c = cells + (size_t)(at & (ncells - 1)) * PP_SHM_RING_CELL;
			memcpy(c + 8, &len, 4);
			memcpy(c + 12, &kind, 4);
			memcpy(c, &mark, 8);
			break;
		}
		}
	}
	free(mem);
	return 0;
}
