/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node segment: one POSIX shared-memory object per (job, node), named
 * /pp-<job>-<node> (characters other than [A-Za-z0-9._-] become '_'), mode
 * 0600, shared by the ranks of the job on that node ("local ranks").
 *
 * Layout (every part 4096-byte aligned):
 *   header     magic, version, nonce, geometry, and a slot per local rank
 *              (its rank, pid, state: pending, attached, refused, left)
 *   rings      one SPSC ring (ring.h) per ordered pair of local ranks, for
 *              frames in the local form (docs/wire.md) from the first to the second
 *   send table per ordered pair, PP_SHM_DESC_SLOTS descriptors of sends in
 *              progress (msg_id, address, length, segment offset), so the
 *              receiver can copy straight from the sender's buffer
 *   recv queues per ordered pair (i -> j), the receives j has posted for
 *              messages from i (recvq.h), so i can write straight into them
 *   heaps      per local rank heap_bytes for pp_malloc (heap.h)
 *
 * Life: the lowest local rank removes a stale object of the same name,
 * creates the object with O_EXCL, sizes and formats it, and gives the others
 * the nonce it wrote (over the network); they open it, check magic, version
 * and nonce, and attach (pid, state). Once every local rank has attached or
 * refused, the creator unlinks the name: the memory lives until the last
 * rank unmaps it, and a crash leaves nothing behind (a crash before the
 * unlink is cleaned by the next run's unlink of the name, and by
 * pp_shm_seg_sweep, run by every creator first, which removes the node's
 * segments whose processes are all gone). Cold path throughout.
 *
 * Trust: any local rank can write anything into the segment at any moment,
 * and other users can own objects in /dev/shm. An object is used (mapped,
 * swept, replaced) only when it belongs to this user and has mode 0600; one
 * of another user at the job's name is refused with a warning that names its
 * owner. Each rank computes the layout itself from the geometry (local ranks
 * and ring size: known to every rank; the heap size: the creator's, read
 * once from the header), checks that the header and the object's size agree,
 * and from then on uses only its private copy: offsets, sizes and the slot
 * table's ranks are never read from the segment again. A peer's pid is read
 * once, checked against the kernel's view (the process must map this very
 * object), and kept (pp_shm_seg_peer_pid). States are read where they are
 * needed and only compared. What remains: a rank of this user can still
 * shrink the object (ftruncate) under the others, who then fault; memfd
 * seals would close that.
 */
#ifndef PP_SHM_SEGMENT_H
#define PP_SHM_SEGMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define PP_SHM_NAME_MAX	  128  /* bytes of a segment name, NUL included */
#define PP_SHM_MAX_LOCAL  64   /* local ranks per segment at most */
#define PP_SHM_DESC_SLOTS 2048 /* send descriptors per ordered pair, a power of two */
#define PP_SHM_NO_OFFSET  UINT64_MAX

enum pp_shm_state {
	PP_SHM_PENDING = 0, /* not attached yet */
	PP_SHM_ATTACHED,    /* mapped and polling its rings */
	PP_SHM_REFUSED,	    /* will not use the segment */
	PP_SHM_LEFT,	    /* detached */
};

/* One local rank, in the header. */
struct pp_shm_slot {
	uint32_t rank;		/* its rank in the job */
	_Atomic uint32_t state; /* enum pp_shm_state */
	_Atomic int32_t pid;	/* its process id once attached */
	uint32_t reserved;	/* zero */
};

/* A send in progress, published by the sender for the receiver. */
struct pp_shm_desc {
	_Atomic uint64_t key; /* (msg_id << 1) | 1 once valid, 0 before */
	uint64_t addr;	      /* the buffer in the sender's address space */
	uint64_t len;	      /* its length */
	uint64_t seg_off;     /* its offset in the segment, or PP_SHM_NO_OFFSET */
};

/* Sizes chosen by the creator. */
struct pp_shm_geom {
	uint32_t nlocal;     /* local ranks */
	uint32_t ring_cells; /* cells per ring, a power of two */
	uint64_t heap_bytes; /* pp_malloc bytes per local rank (0: none) */
};

#define PP_SHM_SEG_MAGIC   0x70705347u /* "ppSG" */
#define PP_SHM_SEG_VERSION 4u	       /* 4: help entries in the receive queues */

/* The header, at offset 0: the segment's format. A rank reads it once, at
 * attach, into a private copy. */
struct pp_shm_hdr {
	uint32_t magic;				   /* PP_SHM_SEG_MAGIC once formatted */
	uint32_t version;			   /* PP_SHM_SEG_VERSION */
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

/* Where the parts are: computed by each rank from the geometry. */
struct pp_shm_layout {
	uint64_t ring_bytes; /* bytes per ring, aligned */
	uint64_t rings_off;  /* first ring */
	uint64_t descs_off;  /* first send table */
	uint64_t recvqs_off; /* first receive-queue area */
	uint64_t heaps_off;  /* first heap */
	uint64_t heap_bytes; /* bytes per heap, aligned */
	uint64_t size;	     /* bytes of the whole object */
};

/* One rank's mapping of the segment. Everything but base's contents is
 * private: set at create / attach and never taken from the segment again. */
struct pp_shm_seg {
	uint8_t *base;			    /* start of the mapping */
	size_t size;			    /* its length (= lay.size) */
	struct pp_shm_hdr *hdr;		    /* the header (= base): written, never trusted */
	struct pp_shm_slot *slots;	    /* the slot table: states and pids live there */
	struct pp_shm_geom geom;	    /* sizes */
	struct pp_shm_layout lay;	    /* where the parts are */
	uint32_t rank[PP_SHM_MAX_LOCAL];    /* slot -> rank */
	int32_t peer_pid[PP_SHM_MAX_LOCAL]; /* slot -> pid once captured, -errno once
					     * refused, 0 before (pp_shm_seg_peer_pid) */
	uint64_t dev;			    /* the object's device ... */
	uint64_t ino;			    /* ... and inode (fstat), for the pid check */
	uint32_t me;			    /* own slot */
	char name[PP_SHM_NAME_MAX];	    /* object name */
};

/* The layout of a segment of geometry g into *l. Errors: -EINVAL (nlocal
 * not in 1..PP_SHM_MAX_LOCAL, ring_cells not a power of two >= 2, or a heap
 * size that makes the object too large to address). */
int pp_shm_seg_layout(const struct pp_shm_geom *g, struct pp_shm_layout *l);

/* Write "/pp-<job>-<node>", sanitised, to out.
 * Errors: -ENAMETOOLONG (does not fit cap bytes), -EINVAL (empty part). */
int pp_shm_seg_name(char *out, size_t cap, const char *job, const char *node);

/* Creator: remove a stale object of that name (ours: this user's), create a
 * new one (O_EXCL, 0600), size and format it for the local ranks
 * ranks[0..g->nlocal) (ranks in increasing order; ranks[0] is the creator,
 * attached), and write nonce (non-zero) into it.
 * Errors: -EINVAL (bad geometry or nonce), -EACCES (an object of another
 * user holds the name: a warning names its owner), -EEXIST (raced by
 * another creator), -ENOMEM / -ENOSPC / -errno of shm_open, ftruncate, mmap. */
int pp_shm_seg_create(struct pp_shm_seg *s, const char *name, const struct pp_shm_geom *g,
		      const uint32_t *ranks, uint64_t nonce);

/* Others: open the object, check it and attach as rank. g->nlocal,
 * g->ring_cells and ranks[0..g->nlocal) are what the attaching rank knows
 * of the job (as given to the creator); g->heap_bytes is not used: the
 * creator's heap size is read from the header once. The object must be this
 * user's with mode 0600, its header must say exactly the layout computed
 * from that geometry, and its size must be that layout's.
 * Errors: -ENOENT (no such object), -EACCES (not this user's, or not mode
 * 0600: a warning says whose), -EPROTO (bad magic or version, or a header or
 * size that does not agree with the geometry or ranks), -ESTALE (another
 * nonce: not this job's segment), -ESRCH (rank has no slot), -errno of
 * shm_open, fstat, pread, mmap. */
int pp_shm_seg_attach(struct pp_shm_seg *s, const char *name, const struct pp_shm_geom *g,
		      const uint32_t *ranks, uint64_t nonce, uint32_t rank);

/* Remove every segment of this node left behind by a crashed job: objects
 * named pp-*-<node> (node sanitised as in pp_shm_seg_name) in dir (the shm
 * mount, "/dev/shm") that belong to this user with mode 0600 and whose
 * header lists no live process. Others' objects, and ours of another mode,
 * are left alone (said at PP_LOG=info); headers are read with pread, never
 * mapped, so an object that changes size under the sweep is harmless.
 * Returns how many it removed; errors are skipped. Cold path. */
int pp_shm_seg_sweep(const char *dir, const char *node);

/* Remove the name (the memory stays while mapped). Errors: -errno. */
int pp_shm_seg_unlink(const char *name);

/* Mark own slot left and unmap. */
void pp_shm_seg_detach(struct pp_shm_seg *s);

/* Slot index of rank, or -1 when it has none. */
int pp_shm_seg_index(const struct pp_shm_seg *s, uint32_t rank);

/* Set slot i's state (the creator records refusals this way); nothing when
 * i is not a slot. */
void pp_shm_seg_set_state(struct pp_shm_seg *s, uint32_t i, enum pp_shm_state st);

/* State of slot i as the segment says now (PP_SHM_LEFT for a value that is
 * no state, or i not a slot). */
enum pp_shm_state pp_shm_seg_state(const struct pp_shm_seg *s, uint32_t i);

/* The process of slot i (another rank's, attached): read from its slot the
 * first time, checked to be a live process that maps this object, and kept;
 * later calls return the kept pid (or error) and never read the slot again.
 * Errors: -EINVAL (i is not another slot), -EAGAIN (slot i has not attached
 * yet: nothing kept), -ESRCH (no pid, or no such process: it has exited),
 * -EPERM (that process does not map this segment, or its mappings cannot be
 * read). */
int pp_shm_seg_peer_pid(struct pp_shm_seg *s, uint32_t i);

/* Memory of the ring from slot i to slot j (i != j), for
 * pp_shm_ring_attach_cells with geom.ring_cells. */
void *pp_shm_seg_ring(const struct pp_shm_seg *s, uint32_t i, uint32_t j);

/* The send descriptor of msg_id from slot i to slot j. */
struct pp_shm_desc *pp_shm_seg_desc(const struct pp_shm_seg *s, uint32_t i, uint32_t j,
				    uint32_t msg_id);

struct pp_shm_rq;

/* The receive-queue area of the pair from slot i to slot j (i != j): the
 * receives j posted for messages from i. */
struct pp_shm_rq *pp_shm_seg_recvq(const struct pp_shm_seg *s, uint32_t i, uint32_t j);

/* Fault in this slot's mapping of everything it shares with slot peer: the
 * rings, send descriptors and receive-queue areas both ways. Left to first
 * touch, their pages cost a fault each on both sides the first time round
 * a ring: a 100-iteration 8 B window read 35-53 MB/s, 120-125 populated.
 * The heaps are not touched. Errors: -EINVAL, -errno of madvise (-EINVAL
 * from kernels before 5.14, which lack MADV_POPULATE_WRITE). */
int pp_shm_seg_populate(const struct pp_shm_seg *s, uint32_t peer);

/* Heap area of slot i; *bytes gets its length (0: no heap). */
void *pp_shm_seg_heap(const struct pp_shm_seg *s, uint32_t i, size_t *bytes);

/* Offset of [p, p + len) in the segment, or PP_SHM_NO_OFFSET when it is
 * not wholly inside a heap area. */
uint64_t pp_shm_seg_offset(const struct pp_shm_seg *s, const void *p, uint64_t len);

#endif
