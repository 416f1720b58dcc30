/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One SPSC ring (shm/ring.h) in one thread: reserve, commit, peek and
 * release of records of one size, round after round, so that
 *   valgrind --tool=callgrind ring_cost 64 1000000
 * gives the instructions of each call per record (divide its inclusive cost
 * by the records). Records of some sizes wrap with pad records, as in use.
 * Every record's first and last bytes are checked.
 *
 *   ring_cost [SIZE [RECORDS]]     (default 64 bytes, 1000000 records)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

#define CELLS 4096u /* as the runtime's rings */

int main(int argc, char **argv)
{
	uint32_t size = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 64;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 1000000ul;
	void *mem = aligned_alloc(PP_SHM_RING_ALIGN, pp_shm_ring_bytes(CELLS));
	struct pp_shm_ring prod, cons;
	if (!mem || pp_shm_ring_format(mem, CELLS) || pp_shm_ring_attach(&prod, mem) ||
	    pp_shm_ring_attach(&cons, mem) || size < 2 || size > pp_shm_ring_max_record(&prod)) {
		fprintf(stderr, "ring_cost: bad size or no memory\n");
		return 1;
	}
	for (unsigned long i = 0; i < n; i++) {
		void *p;
		const void *q;
		uint32_t len;
		if (pp_shm_ring_reserve(&prod, size, &p))
			return 1;
		((uint8_t *)p)[0] = (uint8_t)i;
		((uint8_t *)p)[size - 1] = (uint8_t)(i >> 8);
		pp_shm_ring_commit(&prod, size);
		if (pp_shm_ring_peek(&cons, &q, &len) != 1 || len != size ||
		    ((const uint8_t *)q)[0] != (uint8_t)i ||
		    ((const uint8_t *)q)[size - 1] != (uint8_t)(i >> 8)) {
			fprintf(stderr, "ring_cost: record %lu arrived wrong\n", i);
			return 1;
		}
		pp_shm_ring_release(&cons);
	}
	printf("ring_cost: %lu records of %u bytes\n", n, size);
	free(mem);
	return 0;
}
