/* SPDX-License-Identifier: BSD-3-Clause */
/* The node segment; the rules are in segment.h (the sweep is in sweep.c). */
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "pp_log.h"
#include "recvq.h"
#include "ring.h"
#include "seg_obj.h"

#define SEG_ALIGN    4096u
#define SEG_SIZE_MAX (UINT64_C(1) << 46) /* no segment is larger (64 TiB) */
#define SHM_DIR	     "/dev/shm"		 /* where shm_open puts objects */

static uint64_t align_up(uint64_t v)
{
	return (v + SEG_ALIGN - 1) & ~(uint64_t)(SEG_ALIGN - 1);
}

static uint32_t npairs(uint32_t n)
{
	return n * (n - 1);
}

int pp_shm_seg_layout(const struct pp_shm_geom *g, struct pp_shm_layout *l)
{
	/* The bound keeps every sum below from wrapping. */
	if (!g || !l || g->nlocal < 1 || g->nlocal > PP_SHM_MAX_LOCAL ||
	    !pp_shm_ring_bytes(g->ring_cells) || g->ring_cells > (1u << 24) ||
	    g->heap_bytes > SEG_SIZE_MAX / PP_SHM_MAX_LOCAL)
		return -EINVAL;
	uint64_t np = npairs(g->nlocal);
	l->ring_bytes = align_up(pp_shm_ring_bytes(g->ring_cells));
	l->rings_off = align_up(sizeof(struct pp_shm_hdr));
	l->descs_off = l->rings_off + l->ring_bytes * np;
	l->recvqs_off =
	    align_up(l->descs_off + np * PP_SHM_DESC_SLOTS * sizeof(struct pp_shm_desc));
	l->heaps_off = align_up(l->recvqs_off + np * sizeof(struct pp_shm_rq));
	l->heap_bytes = align_up(g->heap_bytes);
	l->size = l->heaps_off + l->heap_bytes * g->nlocal;
	return 0;
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

/* The private view: everything from the caller's geometry and ranks. */
static void seg_fill(struct pp_shm_seg *s, void *base, const struct pp_shm_geom *g,
		     const struct pp_shm_layout *l, const uint32_t *ranks, const struct stat *st,
		     const char *name)
{
	memset(s, 0, sizeof(*s));
	s->base = base;
	s->size = (size_t)l->size;
	s->hdr = base;
	s->slots = s->hdr->slot;
	s->geom = *g;
	s->geom.heap_bytes = l->heap_bytes;
	s->lay = *l;
	memcpy(s->rank, ranks, g->nlocal * sizeof(*ranks));
	s->dev = (uint64_t)st->st_dev;
	s->ino = (uint64_t)st->st_ino;
	snprintf(s->name, sizeof(s->name), "%s", name);
}

/* An object of another user, or of another mode, holds name: say whose. */
static int refuse(const char *name, const struct stat *st, const char *what)
{
	if (st->st_uid != geteuid())
		pp_warn("shm: %s belongs to uid %u, not to us (uid %u): %s", name,
			(unsigned)st->st_uid, (unsigned)geteuid(), what);
	else
		pp_warn("shm: %s has mode %04o (type %07o), not a regular object of mode 0600: %s",
			name, (unsigned)(st->st_mode & 07777), (unsigned)(st->st_mode & S_IFMT),
			what);
	return -EACCES;
}

/* The owner and mode of the object at name, without opening it (opening
 * another user's object may be refused, and a FIFO would block). */
static int shm_stat(const char *name, struct stat *st)
{
	char path[sizeof(SHM_DIR) + PP_SHM_NAME_MAX];
	snprintf(path, sizeof(path), SHM_DIR "%s", name);
	return lstat(path, st) == 0 ? 0 : -errno;
}

/* Remove a stale object of ours at name; refuse one of someone else. */
static int clear_name(const char *name)
{
	struct stat st;
	int rc = shm_stat(name, &st);
	if (rc)
		return rc == -ENOENT ? 0 : rc;
	if (st.st_uid != geteuid())
		return refuse(name, &st, "not replaced: the job's local ranks use the port");
	shm_unlink(name); /* ours: a stale object a crash left behind */
	return 0;
}

int pp_shm_seg_create(struct pp_shm_seg *s, const char *name, const struct pp_shm_geom *g,
		      const uint32_t *ranks, uint64_t nonce)
{
	struct pp_shm_layout l;
	if (!s || !name || !ranks || nonce == 0 || pp_shm_seg_layout(g, &l))
		return -EINVAL;
	for (uint32_t i = 1; i < g->nlocal; i++)
		if (ranks[i] <= ranks[i - 1])
			return -EINVAL;
	int rc = clear_name(name);
	if (rc)
		return rc;
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -errno;
	struct stat st;
	void *base = MAP_FAILED;
	/* Exactly 0600, whatever the umask: the others check it. */
	if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)l.size) != 0 || fstat(fd, &st) != 0)
		rc = -errno;
	else if ((base = mmap(NULL, l.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
		 MAP_FAILED)
		rc = -errno;
	close(fd);
	if (rc) {
		shm_unlink(name);
		return rc;
	}
	/* The object is zero-filled: descriptors start invalid, and
	 * receive-queue areas empty. */
	struct pp_shm_hdr *h = base;
	h->version = PP_SHM_SEG_VERSION;
	h->nonce = nonce;
	h->size = l.size;
	h->nlocal = g->nlocal;
	h->ring_cells = g->ring_cells;
	h->ring_bytes = l.ring_bytes;
	h->rings_off = l.rings_off;
	h->descs_off = l.descs_off;
	h->recvqs_off = l.recvqs_off;
	h->heaps_off = l.heaps_off;
	h->heap_bytes = l.heap_bytes;
	for (uint32_t i = 0; i < g->nlocal; i++) {
		h->slot[i].rank = ranks[i];
		atomic_init(&h->slot[i].state, PP_SHM_PENDING);
		atomic_init(&h->slot[i].pid, 0);
	}
	for (uint32_t k = 0; k < npairs(g->nlocal); k++)
		pp_shm_ring_format((uint8_t *)base + l.rings_off + k * l.ring_bytes, g->ring_cells);
	atomic_store_explicit(&h->slot[0].pid, (int32_t)getpid(), memory_order_relaxed);
	atomic_store_explicit(&h->slot[0].state, PP_SHM_ATTACHED, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	h->magic = PP_SHM_SEG_MAGIC;
	seg_fill(s, base, g, &l, ranks, &st, name);
	s->me = 0;
	return 0;
}

/* Check the header copy h against the attaching rank's view of the job;
 * the layout it computed goes to *l. Errors: -EPROTO, -ESTALE. */
static int check_hdr(const struct pp_shm_hdr *h, const struct pp_shm_geom *g, const uint32_t *ranks,
		     uint64_t nonce, uint64_t obj_size, struct pp_shm_layout *l)
{
	if (h->magic != PP_SHM_SEG_MAGIC || h->version != PP_SHM_SEG_VERSION)
		return -EPROTO;
	if (h->nonce != nonce)
		return -ESTALE;
	struct pp_shm_geom mine = {g->nlocal, g->ring_cells, h->heap_bytes};
	if (h->nlocal != g->nlocal || h->ring_cells != g->ring_cells || h->heap_bytes % SEG_ALIGN ||
	    pp_shm_seg_layout(&mine, l))
		return -EPROTO;
	if (h->size != l->size || obj_size != l->size || h->ring_bytes != l->ring_bytes ||
	    h->rings_off != l->rings_off || h->descs_off != l->descs_off ||
	    h->recvqs_off != l->recvqs_off || h->heaps_off != l->heaps_off ||
	    h->heap_bytes != l->heap_bytes)
		return -EPROTO;
	for (uint32_t i = 0; i < g->nlocal; i++)
		if (h->slot[i].rank != ranks[i])
			return -EPROTO;
	return 0;
}

int pp_shm_seg_attach(struct pp_shm_seg *s, const char *name, const struct pp_shm_geom *g,
		      const uint32_t *ranks, uint64_t nonce, uint32_t rank)
{
	if (!s || !name || !g || !ranks || g->nlocal < 1 || g->nlocal > PP_SHM_MAX_LOCAL)
		return -EINVAL;
	uint32_t me = 0;
	while (me < g->nlocal && ranks[me] != rank)
		me++;
	struct stat st, st2;
	int fd = shm_open(name, O_RDWR | O_NONBLOCK, 0600);
	if (fd < 0) {
		int err = errno;
		if (err == EACCES && shm_stat(name, &st) == 0 && !pp_shm_obj_ours(&st))
			return refuse(name, &st, "not attached");
		return -err;
	}
	struct pp_shm_hdr h;
	struct pp_shm_layout l;
	void *base = MAP_FAILED;
	int rc = 0;
	ssize_t n;
	/* Only ours is read at all; its header is read with pread into a
	 * private copy, and mapped only once it says exactly the layout this
	 * rank computes, of the object's size. */
	if (fstat(fd, &st) != 0)
		rc = -errno;
	else if (!pp_shm_obj_ours(&st))
		rc = refuse(name, &st, "not attached");
	else if ((uint64_t)st.st_size < sizeof(h))
		rc = -EPROTO;
	else if ((n = pread(fd, &h, sizeof(h), 0)) != (ssize_t)sizeof(h))
		rc = n < 0 ? -errno : -EPROTO;
	else if ((rc = check_hdr(&h, g, ranks, nonce, (uint64_t)st.st_size, &l)) != 0)
		;
	else if (me == g->nlocal)
		rc = -ESRCH;
	else if ((base = mmap(NULL, l.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
		 MAP_FAILED)
		rc = -errno;
	else if (fstat(fd, &st2) != 0 || (uint64_t)st2.st_size != l.size)
		rc = -EPROTO; /* resized while we looked */
	close(fd);
	if (rc) {
		if (base != MAP_FAILED)
			munmap(base, l.size);
		return rc;
	}
	seg_fill(s, base, g, &l, ranks, &st, name);
	s->me = me;
	atomic_store_explicit(&s->slots[me].pid, (int32_t)getpid(), memory_order_relaxed);
	atomic_store_explicit(&s->slots[me].state, PP_SHM_ATTACHED, memory_order_release);
	return 0;
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
		if (s->rank[i] == rank)
			return (int)i;
	return -1;
}

void pp_shm_seg_set_state(struct pp_shm_seg *s, uint32_t i, enum pp_shm_state st)
{
	if (i < s->geom.nlocal)
		atomic_store_explicit(&s->slots[i].state, (uint32_t)st, memory_order_release);
}

enum pp_shm_state pp_shm_seg_state(const struct pp_shm_seg *s, uint32_t i)
{
	if (i >= s->geom.nlocal)
		return PP_SHM_LEFT;
	uint32_t st = atomic_load_explicit(&s->slots[i].state, memory_order_acquire);
	return st <= PP_SHM_LEFT ? (enum pp_shm_state)st : PP_SHM_LEFT;
}

/* 1 when process pid maps the object (dev, ino), 0 when it does not; -ESRCH
 * when there is no such process or it has exited (a zombie maps nothing),
 * -EPERM when its mappings cannot be read. */
static int maps_object(int32_t pid, uint64_t dev, uint64_t ino)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -EPERM;
	int found = 0, lines = 0;
	while (!found && fgets(line, sizeof(line), f) && ++lines) {
		unsigned maj, min;
		uint64_t i;
		found = sscanf(line, "%*x-%*x %*s %*x %x:%x %" SCNu64, &maj, &min, &i) == 3 &&
			i == ino && makedev(maj, min) == dev;
		/* The rest of a line longer than the buffer (a long path). */
		while (!strchr(line, '\n') && fgets(line, sizeof(line), f))
			;
	}
	fclose(f);
	return found ? 1 : lines ? 0 : -ESRCH;
}

int pp_shm_seg_peer_pid(struct pp_shm_seg *s, uint32_t i)
{
	if (!s->base || i >= s->geom.nlocal || i == s->me)
		return -EINVAL;
	if (s->peer_pid[i])
		return s->peer_pid[i];
	if (pp_shm_seg_state(s, i) != PP_SHM_ATTACHED)
		return -EAGAIN;
	/* Read once; whatever the slot says later is not looked at. */
	int32_t pid = atomic_load_explicit(&s->slots[i].pid, memory_order_relaxed);
	int rc = pid > 0 ? maps_object(pid, s->dev, s->ino) : -ESRCH;
	s->peer_pid[i] = rc == 1 ? pid : rc < 0 ? rc : -EPERM;
	if (s->peer_pid[i] < 0)
		pp_warn("shm: %s: slot %u (rank %u) names pid %d, not a process attached to the "
			"segment (%s): no single copies with it",
			s->name, i, s->rank[i], (int)pid, strerror(-s->peer_pid[i]));
	return s->peer_pid[i];
}

/* Index of the ordered pair (i, j), i != j, among n * (n - 1). */
static uint64_t pair(const struct pp_shm_seg *s, uint32_t i, uint32_t j)
{
	return (uint64_t)i * (s->geom.nlocal - 1) + (j < i ? j : j - 1);
}

void *pp_shm_seg_ring(const struct pp_shm_seg *s, uint32_t i, uint32_t j)
{
	return s->base + s->lay.rings_off + pair(s, i, j) * s->lay.ring_bytes;
}

struct pp_shm_desc *pp_shm_seg_desc(const struct pp_shm_seg *s, uint32_t i, uint32_t j,
				    uint32_t msg_id)
{
	struct pp_shm_desc *t = (struct pp_shm_desc *)(s->base + s->lay.descs_off);
	return &t[pair(s, i, j) * PP_SHM_DESC_SLOTS + (msg_id & (PP_SHM_DESC_SLOTS - 1))];
}

struct pp_shm_rq *pp_shm_seg_recvq(const struct pp_shm_seg *s, uint32_t i, uint32_t j)
{
	struct pp_shm_rq *q = (struct pp_shm_rq *)(s->base + s->lay.recvqs_off);
	return &q[pair(s, i, j)];
}

/* Fault in [p, p + len) for writing, whole pages. */
static int populate(const uint8_t *p, uint64_t len)
{
	const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(pg - 1), b = ((uintptr_t)p + len + pg - 1) & ~(pg - 1);
	return madvise((void *)a, b - a, MADV_POPULATE_WRITE) == 0 ? 0 : -errno;
}

int pp_shm_seg_populate(const struct pp_shm_seg *s, uint32_t peer)
{
	if (!s->base || peer >= s->geom.nlocal || peer == s->me)
		return -EINVAL;
	int rc = 0;
	for (int dir = 0; dir < 2 && rc == 0; dir++) {
		uint32_t i = dir ? peer : s->me, j = dir ? s->me : peer;
		if ((rc = populate(pp_shm_seg_ring(s, i, j), s->lay.ring_bytes)) == 0 &&
		    (rc = populate((const uint8_t *)pp_shm_seg_desc(s, i, j, 0),
				   PP_SHM_DESC_SLOTS * sizeof(struct pp_shm_desc))) == 0)
			rc = populate((const uint8_t *)pp_shm_seg_recvq(s, i, j),
				      sizeof(struct pp_shm_rq));
	}
	return rc;
}

void *pp_shm_seg_heap(const struct pp_shm_seg *s, uint32_t i, size_t *bytes)
{
	*bytes = (size_t)s->lay.heap_bytes;
	return s->base + s->lay.heaps_off + (uint64_t)i * s->lay.heap_bytes;
}

uint64_t pp_shm_seg_offset(const struct pp_shm_seg *s, const void *p, uint64_t len)
{
	const uint8_t *b = p;
	if (!s->base || b < s->base + s->lay.heaps_off || b > s->base + s->size ||
	    len > (uint64_t)(s->base + s->size - b))
		return PP_SHM_NO_OFFSET;
	return (uint64_t)(b - s->base);
}
