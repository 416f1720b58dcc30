/* SPDX-License-Identifier: BSD-3-Clause */
/* The node segment; the rules are in segment.h. */
#include "segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recvq.h"
#include "ring.h"

#define SEG_MAGIC   0x70705347u /* "ppSG" */
#define SEG_VERSION 2u
#define SEG_ALIGN   4096u

struct pp_shm_hdr {
	uint32_t magic;				   /* SEG_MAGIC once formatted */
	uint32_t version;			   /* SEG_VERSION */
	uint64_t nonce;				   /* the creator's, given to the others */
	uint64_t size;				   /* bytes of the object */
	uint32_t nlocal;			   /* local ranks */
	uint32_t ring_cells;			   /* cells per ring */
	uint64_t ring_bytes;			   /* bytes per ring, aligned */
	uint64_t rings_off;			   /* first ring */
	uint64_t descs_off;			   /* first send table */
	uint64_t recvqs_off;			   /* first receive-queue area */
	uint64_t heaps_off;			   /* first heap */
	uint64_t heap_bytes;			   /* bytes per heap */
	struct pp_shm_slot slot[PP_SHM_MAX_LOCAL]; /* local ranks, ascending */
};

static uint64_t align_up(uint64_t v)
{
	return (v + SEG_ALIGN - 1) & ~(uint64_t)(SEG_ALIGN - 1);
}

static uint32_t npairs(uint32_t n)
{
	return n * (n - 1);
}

/* Fill the geometry fields of h from g; returns the total size. */
static uint64_t layout(struct pp_shm_hdr *h, const struct pp_shm_geom *g)
{
	h->nlocal = g->nlocal;
	h->ring_cells = g->ring_cells;
	h->ring_bytes = align_up(pp_shm_ring_bytes(g->ring_cells));
	h->rings_off = align_up(sizeof(*h));
	h->descs_off = h->rings_off + h->ring_bytes * npairs(g->nlocal);
	uint64_t descs =
	    (uint64_t)npairs(g->nlocal) * PP_SHM_DESC_SLOTS * sizeof(struct pp_shm_desc);
	h->recvqs_off = align_up(h->descs_off + descs);
	uint64_t recvqs = (uint64_t)npairs(g->nlocal) * sizeof(struct pp_shm_rq);
	h->heaps_off = align_up(h->recvqs_off + recvqs);
	h->heap_bytes = align_up(g->heap_bytes);
	return h->heaps_off + h->heap_bytes * g->nlocal;
}

int pp_shm_seg_name(char *out, size_t cap, const char *job, const char *node)
{
	if (!job || !node || !job[0] || !node[0])
		return -EINVAL;
	int n = snprintf(out, cap, "/pp-%s-%s", job, node);
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	for (char *c = out + 1; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-'))
			*c = '_';
	return 0;
}

static void seg_fill(struct pp_shm_seg *s, void *base, size_t size, const char *name)
{
	s->base = base;
	s->size = size;
	s->hdr = base;
	s->slots = s->hdr->slot;
	s->geom.nlocal = s->hdr->nlocal;
	s->geom.ring_cells = s->hdr->ring_cells;
	s->geom.heap_bytes = s->hdr->heap_bytes;
	snprintf(s->name, sizeof(s->name), "%s", name);
}

int pp_shm_seg_create(struct pp_shm_seg *s, const char *name, const struct pp_shm_geom *g,
		      const uint32_t *ranks, uint64_t nonce)
{
	if (!s || !name || !g || !ranks || nonce == 0 || g->nlocal < 1 ||
	    g->nlocal > PP_SHM_MAX_LOCAL || !pp_shm_ring_bytes(g->ring_cells))
		return -EINVAL;
	for (uint32_t i = 1; i < g->nlocal; i++)
		if (ranks[i] <= ranks[i - 1])
			return -EINVAL;
	struct pp_shm_hdr tmp;
	memset(&tmp, 0, sizeof(tmp));
	uint64_t size = layout(&tmp, g);

	shm_unlink(name); /* a stale object a crash left behind */
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -errno;
	int rc = 0;
	void *base = MAP_FAILED;
	if (ftruncate(fd, (off_t)size) != 0)
		rc = -errno;
	else if ((base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
		rc = -errno;
	close(fd);
	if (rc) {
		shm_unlink(name);
		return rc;
	}
	struct pp_shm_hdr *h = base;
	*h = tmp; /* the object is zero-filled: descriptors start invalid, and
		   * receive-queue areas empty */
	h->version = SEG_VERSION;
	h->nonce = nonce;
	h->size = size;
	for (uint32_t i = 0; i < g->nlocal; i++) {
		h->slot[i].rank = ranks[i];
		atomic_init(&h->slot[i].state, PP_SHM_PENDING);
		atomic_init(&h->slot[i].pid, 0);
	}
	for (uint32_t k = 0; k < npairs(g->nlocal); k++)
		pp_shm_ring_format((uint8_t *)base + h->rings_off + k * h->ring_bytes,
				   g->ring_cells);
	atomic_store_explicit(&h->slot[0].pid, (int32_t)getpid(), memory_order_relaxed);
	atomic_store_explicit(&h->slot[0].state, PP_SHM_ATTACHED, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	h->magic = SEG_MAGIC;
	seg_fill(s, base, size, name);
	s->me = 0;
	return 0;
}

int pp_shm_seg_attach(struct pp_shm_seg *s, const char *name, uint64_t nonce, uint32_t rank)
{
	if (!s || !name)
		return -EINVAL;
	int fd = shm_open(name, O_RDWR, 0600);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = 0;
	void *base = MAP_FAILED;
	if (fstat(fd, &st) != 0)
		rc = -errno;
	else if ((size_t)st.st_size < sizeof(struct pp_shm_hdr))
		rc = -EPROTO;
	else if ((base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			      0)) == MAP_FAILED)
		rc = -errno;
	close(fd);
	if (rc)
		return rc;
	struct pp_shm_hdr *h = base;
	atomic_thread_fence(memory_order_acquire);
	if (h->magic != SEG_MAGIC || h->version != SEG_VERSION || h->size != (uint64_t)st.st_size ||
	    h->nlocal < 1 || h->nlocal > PP_SHM_MAX_LOCAL)
		rc = -EPROTO;
	else if (h->nonce != nonce)
		rc = -ESTALE;
	if (rc) {
		munmap(base, (size_t)st.st_size);
		return rc;
	}
	seg_fill(s, base, (size_t)st.st_size, name);
	int i = pp_shm_seg_index(s, rank);
	if (i < 0) {
		munmap(base, (size_t)st.st_size);
		return -ESRCH;
	}
	s->me = (uint32_t)i;
	atomic_store_explicit(&h->slot[i].pid, (int32_t)getpid(), memory_order_relaxed);
	atomic_store_explicit(&h->slot[i].state, PP_SHM_ATTACHED, memory_order_release);
	return 0;
}

/* 1 when no slot of the header at h has a live process. */
static int abandoned(const struct pp_shm_hdr *h)
{
	if (h->magic != SEG_MAGIC || h->nlocal < 1 || h->nlocal > PP_SHM_MAX_LOCAL)
		return 0; /* not ours, or still being formatted: leave it */
	for (uint32_t i = 0; i < h->nlocal; i++) {
		int32_t pid = atomic_load_explicit(&h->slot[i].pid, memory_order_relaxed);
		if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH))
			return 0;
	}
	return 1;
}

int pp_shm_seg_sweep(const char *dir, const char *node)
{
	char suffix[PP_SHM_NAME_MAX], name[NAME_MAX + 2];
	if (pp_shm_seg_name(suffix, sizeof(suffix), "x", node))
		return 0;
	const char *tail = suffix + 5; /* "-<node>" after "/pp-x" */
	size_t tl = strlen(tail);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n <= 3 + tl || n >= PP_SHM_NAME_MAX || strncmp(e->d_name, "pp-", 3) ||
		    strcmp(e->d_name + n - tl, tail))
			continue;
		snprintf(name, sizeof(name), "/%s", e->d_name);
		int fd = shm_open(name, O_RDONLY, 0);
		if (fd < 0)
			continue;
		struct stat st;
		void *m = MAP_FAILED;
		if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(struct pp_shm_hdr))
			m = mmap(NULL, sizeof(struct pp_shm_hdr), PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (m == MAP_FAILED)
			continue;
		int dead = abandoned(m);
		munmap(m, sizeof(struct pp_shm_hdr));
		if (dead && shm_unlink(name) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

int pp_shm_seg_unlink(const char *name)
{
	return shm_unlink(name) == 0 ? 0 : -errno;
}

void pp_shm_seg_detach(struct pp_shm_seg *s)
{
	if (!s || !s->base)
		return;
	pp_shm_seg_set_state(s, s->me, PP_SHM_LEFT);
	munmap(s->base, s->size);
	s->base = NULL;
	s->hdr = NULL;
	s->slots = NULL;
}

int pp_shm_seg_index(const struct pp_shm_seg *s, uint32_t rank)
{
	for (uint32_t i = 0; i < s->geom.nlocal; i++)
		if (s->slots[i].rank == rank)
			return (int)i;
	return -1;
}

void pp_shm_seg_set_state(struct pp_shm_seg *s, uint32_t i, enum pp_shm_state st)
{
	atomic_store_explicit(&s->slots[i].state, (uint32_t)st, memory_order_release);
}

enum pp_shm_state pp_shm_seg_state(const struct pp_shm_seg *s, uint32_t i)
{
	return (enum pp_shm_state)atomic_load_explicit(&s->slots[i].state, memory_order_acquire);
}

int pp_shm_seg_pid(const struct pp_shm_seg *s, uint32_t i)
{
	return atomic_load_explicit(&s->slots[i].pid, memory_order_relaxed);
}

/* Index of the ordered pair (i, j), i != j, among n * (n - 1). */
static uint32_t pair(const struct pp_shm_seg *s, uint32_t i, uint32_t j)
{
	return i * (s->geom.nlocal - 1) + (j < i ? j : j - 1);
}

void *pp_shm_seg_ring(const struct pp_shm_seg *s, uint32_t i, uint32_t j)
{
	return s->base + s->hdr->rings_off + (uint64_t)pair(s, i, j) * s->hdr->ring_bytes;
}

struct pp_shm_desc *pp_shm_seg_desc(const struct pp_shm_seg *s, uint32_t i, uint32_t j,
				    uint32_t msg_id)
{
	struct pp_shm_desc *t = (struct pp_shm_desc *)(s->base + s->hdr->descs_off);
	return &t[(uint64_t)pair(s, i, j) * PP_SHM_DESC_SLOTS + (msg_id & (PP_SHM_DESC_SLOTS - 1))];
}

struct pp_shm_rq *pp_shm_seg_recvq(const struct pp_shm_seg *s, uint32_t i, uint32_t j)
{
	struct pp_shm_rq *q = (struct pp_shm_rq *)(s->base + s->hdr->recvqs_off);
	return &q[pair(s, i, j)];
}

void *pp_shm_seg_heap(const struct pp_shm_seg *s, uint32_t i, size_t *bytes)
{
	*bytes = (size_t)s->hdr->heap_bytes;
	return s->base + s->hdr->heaps_off + (uint64_t)i * s->hdr->heap_bytes;
}

uint64_t pp_shm_seg_offset(const struct pp_shm_seg *s, const void *p, uint64_t len)
{
	const uint8_t *b = p;
	if (!s->base || b < s->base + s->hdr->heaps_off || b > s->base + s->size ||
	    len > (uint64_t)(s->base + s->size - b))
		return PP_SHM_NO_OFFSET;
	return (uint64_t)(b - s->base);
}
