/* SPDX-License-Identifier: BSD-3-Clause */
/* Prediction staging memory: the pool, first-fit congruent blocks, and the
 * copy-or-remap into user buffers (rules in staging.h). */
#include "staging.h"

#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pp_log.h"

/* Bind [p, p + len) to the memory nearest core (or the calling thread).
 * Best effort: 1 when bound, 0 when not. */
static int bind_near(hwloc_topology_t topo, void *p, size_t len, int core)
{
	hwloc_cpuset_t set = hwloc_bitmap_alloc();
	if (!set)
		return 0;
	int ok;
	if (core >= 0) {
		hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)core);
		ok = pu && pu->cpuset && hwloc_bitmap_copy(set, pu->cpuset) == 0;
	} else {
		ok = hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0;
	}
	if (ok)
		ok = hwloc_set_area_membind(topo, p, len, set, HWLOC_MEMBIND_BIND, 0) == 0;
	hwloc_bitmap_free(set);
	return ok;
}

int pp_stage_init(struct pp_stage *s, size_t budget, int near_core, size_t remap_min)
{
	memset(s, 0, sizeof(*s));
	s->remap_min = remap_min && remap_min < 2 * (size_t)PP_STAGE_PAGE
			   ? 2 * (size_t)PP_STAGE_PAGE
			   : remap_min;
	if (!budget)
		return 0;
	size_t size = (budget + PP_STAGE_PAGE - 1) & ~(size_t)(PP_STAGE_PAGE - 1);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		p = aligned_alloc(PP_STAGE_PAGE, size);
		if (!p)
			return -ENOMEM;
	} else {
		s->mmapped = 1;
		hwloc_topology_t topo;
		if (hwloc_topology_init(&topo) == 0) {
			/* One memory node: nothing to choose, no mbind on remaps. */
			if (hwloc_topology_load(topo) == 0 &&
			    hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE) > 1 &&
			    bind_near(topo, p, size, near_core)) {
				s->hwloc = 1;
				s->topo = topo;
			} else {
				hwloc_topology_destroy(topo);
			}
		}
	}
	memset(p, 0, size); /* fault the pages in now, not on the first message */
	s->base = p;
	s->size = size;
	return 0;
}

void pp_stage_fini(struct pp_stage *s)
{
	if (s->base) {
		if (s->mmapped)
			munmap(s->base, s->size);
		else
			free(s->base);
	}
	if (s->topo)
		hwloc_topology_destroy((hwloc_topology_t)s->topo);
	memset(s, 0, sizeof(*s));
}

/* Lowest address >= a congruent to want modulo align (a power of two). */
static uintptr_t congruent_at_least(uintptr_t a, uintptr_t want, uintptr_t align)
{
	uintptr_t r = (want - a) & (align - 1);
	return a + r;
}

void *pp_stage_alloc(struct pp_stage *s, size_t len, uintptr_t dst)
{
	if (!len || !s->base || s->dead || s->nblk == PP_STAGE_MAX_BLOCKS || len > s->size)
		return NULL;
	uintptr_t align = len >= 2 * (size_t)PP_STAGE_PAGE ? PP_STAGE_PAGE : PP_STAGE_LINE;
	uintptr_t lo = (uintptr_t)s->base, top = lo + s->size;
	/* Spans start and end on cache lines so blocks never share one. */
	for (uint32_t i = 0; i <= s->nblk; i++) {
		uintptr_t gap_lo = i ? s->blk[i - 1].end : lo;
		uintptr_t gap_hi = i < s->nblk ? s->blk[i].start : top;
		uintptr_t data = congruent_at_least(gap_lo, dst, align);
		uintptr_t start = data & ~(uintptr_t)(PP_STAGE_LINE - 1);
		uintptr_t end = (data + len + PP_STAGE_LINE - 1) & ~(uintptr_t)(PP_STAGE_LINE - 1);
		if (data < gap_lo || end > gap_hi || end < data)
			continue;
		memmove(&s->blk[i + 1], &s->blk[i], (s->nblk - i) * sizeof(s->blk[0]));
		s->blk[i] = (struct pp_stage_blk){start, end, data};
		s->nblk++;
		s->used += end - start;
		if (s->used > s->peak)
			s->peak = s->used;
		return (void *)data;
	}
	return NULL;
}

static int find_blk(const struct pp_stage *s, uintptr_t data)
{
	uint32_t lo = 0, hi = s->nblk;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (s->blk[mid].data < data)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nblk && s->blk[lo].data == data ? (int)lo : -1;
}

int pp_stage_free(struct pp_stage *s, void *blk)
{
	int i = find_blk(s, (uintptr_t)blk);
	if (i < 0)
		return -EINVAL;
	s->used -= s->blk[i].end - s->blk[i].start;
	memmove(&s->blk[i], &s->blk[i + 1], (s->nblk - (uint32_t)i - 1) * sizeof(s->blk[0]));
	s->nblk--;
	return 0;
}

int pp_stage_anon_private(uintptr_t addr, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	char line[512];
	uintptr_t at = addr, end = addr + len; /* at: first byte not yet covered */
	int ok = 0;
	/* A remap splits a mapping: the span may cover several consecutive
	 * mappings, each of which must qualify. */
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, inode;
		char perms[8], dev[16];
		int name_at = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &lo, &hi, perms, &off, dev, &inode,
			   &name_at) < 6)
			continue;
		if (hi <= at)
			continue;
		if (lo > at)
			break; /* a hole */
		const char *name = line + name_at;
		if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p' || inode != 0 ||
		    (name_at != 0 && *name != '\n' && *name != '\0'))
			break;
		if (hi >= end) {
			ok = 1;
			break;
		}
		at = hi;
	}
	fclose(f);
	return ok;
}

/* 1 when [a, a + n) may be remapped over: cached, or checked now. */
static int dst_remappable(struct pp_stage *s, uintptr_t a, size_t n)
{
	for (uint32_t i = 0; i < s->nreg; i++)
		if (a >= s->reg[i].start && a + n <= s->reg[i].end)
			return 1;
	if (pp_stage_anon_private(a, n) != 1)
		return 0;
	/* Remember the whole page span, so later messages into the same
	 * buffer skip the look-up. */
	uint32_t slot =
	    s->nreg < PP_STAGE_MAX_REGIONS ? s->nreg++ : s->reg_next++ % PP_STAGE_MAX_REGIONS;
	s->reg[slot] = (struct pp_stage_region){a, a + n};
	return 1;
}

/* Move the whole pages [src, src + n) over [dst, dst + n) and put fresh pages
 * back under src. Returns 0, or -errno with nothing moved. */
static int remap_pages(struct pp_stage *s, uintptr_t dst, uintptr_t src, size_t n)
{
	void *p = mremap((void *)src, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)dst);
	if (p == MAP_FAILED)
		return -errno;
	void *q = mmap((void *)src, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE, -1, 0);
	if (q == MAP_FAILED) {
		/* The pool has a hole now: it hands out nothing more. */
		pp_err("staging: cannot refill the pool after a remap (errno %d); staging off",
		       errno);
		s->dead = 1;
		s->remap_min = 0;
		return 0; /* the bytes did move */
	}
	if (s->topo)
		bind_near((hwloc_topology_t)s->topo, q, n, -1);
	return 0;
}

uint64_t pp_stage_place(struct pp_stage *s, void *dst, const void *blk, size_t n)
{
	uintptr_t d = (uintptr_t)dst, b = (uintptr_t)blk;
	const uintptr_t pm = PP_STAGE_PAGE - 1;
	if (s->mmapped && s->remap_min && n >= s->remap_min && ((d ^ b) & pm) == 0 &&
	    b >= (uintptr_t)s->base && b + n <= (uintptr_t)s->base + s->size) {
		uintptr_t head = ((d + pm) & ~pm) - d;
		size_t whole = head < n ? (n - head) & ~(size_t)pm : 0;
		if (whole && whole >= s->remap_min && dst_remappable(s, d + head, whole) &&
		    remap_pages(s, d + head, b + head, whole) == 0) {
			memcpy(dst, blk, head);
			memcpy((uint8_t *)dst + head + whole, (const uint8_t *)blk + head + whole,
			       n - head - whole);
			return whole / PP_STAGE_PAGE;
		}
	}
	memcpy(dst, blk, n);
	return 0;
}
