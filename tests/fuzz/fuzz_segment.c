/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the attach side of the node segment (shm/segment.h)
 * reading a header built from fuzzer bytes. The input gives the attaching
 * rank's view of the job (local ranks, ring size), a sound header for it
 * (as the creator writes it: pp_shm_seg_layout) and then patches of 1 to 8
 * bytes anywhere in the header, and the object's size relative to the
 * layout's; the object is made in /dev/shm, this user's, mode 0600.
 * Properties: attach returns 0 or one of its documented errors, and when it
 * accepts, the layout it keeps is the one computed from the geometry and
 * every part any accessor hands out lies inside the mapping (each is
 * touched at both ends: a part outside would fault).
 *
 * Input: [nlocal-1 (%8)] [cells exponent (%8)] [heap pages (%64)] [nonce 1]
 *        [rank index] [size delta: int8 pages]
 *        then patches: [offset 2] [width 1 (%8 + 1)] [bytes ...]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recvq.h"
#include "segment.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t sink;

static void touch(const struct pp_shm_seg *s, const void *p, uint64_t n)
{
	const uint8_t *b = p;
	if (b < s->base || n > s->size || (uint64_t)(b - s->base) > s->size - n)
		abort();
	if (n) {
		sink = b[0];
		sink = b[n - 1];
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 6)
		return 0;
	struct pp_shm_geom g = {1 + data[0] % 8, 2u << (data[1] % 8),
				(uint64_t)(data[2] % 64) * 4096};
	uint64_t nonce = 1 + data[3];
	uint32_t ranks[8];
	for (uint32_t i = 0; i < 8; i++)
		ranks[i] = 3 * i + 1;
	uint32_t me = ranks[data[4] % g.nlocal];
	int64_t delta = (int8_t)data[5] * 4096;
	struct pp_shm_layout l;
	if (pp_shm_seg_layout(&g, &l))
		abort();
	/* The header as a sound creator writes it. */
	struct pp_shm_hdr h;
	memset(&h, 0, sizeof(h));
	h.magic = PP_SHM_SEG_MAGIC;
	h.version = PP_SHM_SEG_VERSION;
	h.nonce = nonce;
	h.size = l.size;
	h.nlocal = g.nlocal;
	h.ring_cells = g.ring_cells;
	h.ring_bytes = l.ring_bytes;
	h.rings_off = l.rings_off;
	h.descs_off = l.descs_off;
	h.recvqs_off = l.recvqs_off;
	h.heaps_off = l.heaps_off;
	h.heap_bytes = l.heap_bytes;
	for (uint32_t i = 0; i < g.nlocal; i++)
		h.slot[i].rank = ranks[i];
	/* Patches. */
	for (size_t k = 6; k + 3 <= size;) {
		size_t at = (size_t)(data[k] | data[k + 1] << 8) % sizeof(h);
		size_t w = 1 + data[k + 2] % 8;
		k += 3;
		for (size_t i = 0; i < w && k < size && at + i < sizeof(h); i++, k++)
			((uint8_t *)&h)[at + i] = data[k];
	}
	int64_t obj = (int64_t)l.size + delta;
	if (obj < 0)
		obj = 0;
	char name[64];
	snprintf(name, sizeof(name), "/pp-fuzz%d-seg", (int)getpid());
	shm_unlink(name);
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || fchmod(fd, 0600) || ftruncate(fd, obj) ||
	    pwrite(fd, &h, obj < (int64_t)sizeof(h) ? (size_t)obj : sizeof(h), 0) < 0)
		abort();
	close(fd);
	struct pp_shm_seg s;
	/* The attaching rank's heap size is not the creator's: not used. */
	struct pp_shm_geom mine = {g.nlocal, g.ring_cells, 12345};
	int rc = pp_shm_seg_attach(&s, name, &mine, ranks, nonce, me);
	shm_unlink(name);
	if (rc) {
		if (rc != -EPROTO && rc != -ESTALE && rc != -ESRCH)
			abort();
		return 0;
	}
	/* Accepted: the layout is the computed one, whatever else the header
	 * said, and everything handed out is inside the mapping. */
	struct pp_shm_geom got = {g.nlocal, g.ring_cells, h.heap_bytes};
	struct pp_shm_layout want;
	if (pp_shm_seg_layout(&got, &want) || memcmp(&want, &s.lay, sizeof(want)) ||
	    s.size != want.size || (uint64_t)obj != want.size || s.geom.nlocal != g.nlocal ||
	    (int)s.me != pp_shm_seg_index(&s, me))
		abort();
	for (uint32_t i = 0; i < g.nlocal; i++) {
		size_t hb;
		void *heap = pp_shm_seg_heap(&s, i, &hb);
		touch(&s, heap, hb);
		for (uint32_t j = 0; j < g.nlocal; j++) {
			if (i == j)
				continue;
			touch(&s, pp_shm_seg_ring(&s, i, j), s.lay.ring_bytes);
			touch(&s, pp_shm_seg_desc(&s, i, j, 0), sizeof(struct pp_shm_desc));
			touch(&s, pp_shm_seg_desc(&s, i, j, PP_SHM_DESC_SLOTS - 1),
			      sizeof(struct pp_shm_desc));
			touch(&s, pp_shm_seg_recvq(&s, i, j), sizeof(struct pp_shm_rq));
		}
	}
	pp_shm_seg_detach(&s);
	return 0;
}
