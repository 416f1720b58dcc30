/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm/segment against a hostile local rank that rewrites the segment header
 * and the slot table: a rank attached uses its own layout, ranks and peers'
 * pids, never what the segment says later; an attach refuses a header that
 * does not say exactly the layout it computes.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cu_main.h"
#include "recvq.h"
#include "ring.h"
#include "segment.h"

static char name[PP_SHM_NAME_MAX];
static const uint32_t ranks3[3] = {2, 5, 7};
static const struct pp_shm_geom geom = {3, 64, 1 << 16};

static void make_name(const char *tag)
{
	char job[64];
	snprintf(job, sizeof(job), "sec%d%s", (int)getpid(), tag);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_name(name, sizeof(name), job, "secnode"), 0);
}

/* 1 when [p, p + n) lies inside s's mapping. */
static int inside(const struct pp_shm_seg *s, const void *p, size_t n)
{
	const uint8_t *b = p;
	return b >= s->base && b <= s->base + s->size && n <= (size_t)(s->base + s->size - b);
}

/* What rank b (slot 1) reaches through its segment handle. */
struct view {
	void *ring_in, *ring_out;
	struct pp_shm_desc *desc;
	struct pp_shm_rq *rq;
	void *heap;
	size_t heap_bytes;
	uint64_t off;
	int idx7;
};

static struct view look(const struct pp_shm_seg *s)
{
	struct view v;
	v.ring_in = pp_shm_seg_ring(s, 0, 1);
	v.ring_out = pp_shm_seg_ring(s, 1, 0);
	v.desc = pp_shm_seg_desc(s, 1, 0, 77);
	v.rq = pp_shm_seg_recvq(s, 0, 1);
	v.heap = pp_shm_seg_heap(s, 1, &v.heap_bytes);
	v.off = pp_shm_seg_offset(s, (uint8_t *)v.heap + 64, 64);
	v.idx7 = pp_shm_seg_index(s, 7);
	return v;
}

/* Offsets, sizes and slot ranks rewritten after attach change nothing a
 * rank reaches: a send through them still works, inside the mapping. */
static void test_header_rewritten(void)
{
	make_name("h");
	struct pp_shm_seg a, b;
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&a, name, &geom, ranks3, 11), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_attach(&b, name, &geom, ranks3, 11, 5), 0);
	pp_shm_seg_unlink(name);
	struct view before = look(&b);
	CU_ASSERT(inside(&b, before.desc, sizeof(*before.desc)));
	CU_ASSERT(inside(&b, before.heap, before.heap_bytes));
	CU_ASSERT_EQUAL(before.idx7, 2);
	/* As the review saw it: descs_off far past the mapping. */
	struct pp_shm_hdr *h = a.hdr;
	h->descs_off = 0x7fff000100a0ull;
	h->rings_off = 0x10000000000ull;
	h->recvqs_off = UINT64_MAX - 100;
	h->heaps_off = 3;
	h->ring_bytes = 1;
	h->heap_bytes = 1ull << 40;
	h->nlocal = 64;
	h->ring_cells = 1u << 30;
	h->size = 1;
	h->slot[2].rank = 99;
	h->slot[0].rank = 7;
	struct view after = look(&b);
	CU_ASSERT_PTR_EQUAL(after.ring_in, before.ring_in);
	CU_ASSERT_PTR_EQUAL(after.ring_out, before.ring_out);
	CU_ASSERT_PTR_EQUAL(after.desc, before.desc);
	CU_ASSERT_PTR_EQUAL(after.rq, before.rq);
	CU_ASSERT_PTR_EQUAL(after.heap, before.heap);
	CU_ASSERT_EQUAL(after.heap_bytes, before.heap_bytes);
	CU_ASSERT_EQUAL(after.off, before.off);
	CU_ASSERT_EQUAL(after.idx7, 2);
	CU_ASSERT_EQUAL(pp_shm_seg_index(&b, 99), -1);
	/* A send from b to a: descriptor, record, and a write into a receive
	 * a posted, all where a's own handle finds them. */
	struct pp_shm_desc *d = pp_shm_seg_desc(&b, 1, 0, 77);
	CU_ASSERT_FATAL(inside(&b, d, sizeof(*d)));
	d->len = 4242;
	atomic_store(&d->key, (77u << 1) | 1);
	CU_ASSERT_EQUAL(pp_shm_seg_desc(&a, 1, 0, 77)->len, 4242);
	struct pp_shm_ring tx, rx;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach_cells(&tx, pp_shm_seg_ring(&b, 1, 0), 64), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach_cells(&rx, pp_shm_seg_ring(&a, 1, 0), 64), 0);
	void *p;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&tx, 6, &p), 0);
	memcpy(p, "frame", 6);
	pp_shm_ring_commit(&tx, 6);
	const void *q;
	uint32_t len;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&rx, &q, &len), 1);
	CU_ASSERT(len == 6 && memcmp(q, "frame", 6) == 0);
	pp_shm_ring_release(&rx);
	size_t hb;
	uint8_t *heap_a = pp_shm_seg_heap(&a, 0, &hb);
	uint64_t off = pp_shm_seg_offset(&a, heap_a + 128, 100);
	CU_ASSERT_EQUAL_FATAL(pp_shm_rq_post(pp_shm_seg_recvq(&a, 1, 0), 3, 0, 0, off, 100, 0), 0);
	static const char msg[] = "written through the segment";
	CU_ASSERT_EQUAL(pp_shm_rq_deliver(pp_shm_seg_recvq(&b, 1, 0), getpid(), b.base, b.size, 3,
					  0, msg, sizeof(msg)),
			0);
	CU_ASSERT_EQUAL(memcmp(heap_a + 128, msg, sizeof(msg)), 0);
	pp_shm_seg_detach(&b);
	pp_shm_seg_detach(&a);
}

/* Attach computes the layout itself: a header that disagrees with it in
 * any field, or an object of another size, is refused before it is mapped. */
static void test_attach_checks(void)
{
	struct {
		const char *what;
		size_t at;	/* offset of the field */
		size_t width;	/* its bytes */
		uint64_t value; /* what the neighbour writes */
	} cases[] = {
	    {"descs_off", offsetof(struct pp_shm_hdr, descs_off), 8, 0x7fff000100a0ull},
	    {"rings_off", offsetof(struct pp_shm_hdr, rings_off), 8, 0},
	    {"recvqs_off", offsetof(struct pp_shm_hdr, recvqs_off), 8, 4096},
	    {"heaps_off", offsetof(struct pp_shm_hdr, heaps_off), 8, UINT64_MAX},
	    {"ring_bytes", offsetof(struct pp_shm_hdr, ring_bytes), 8, 1ull << 40},
	    {"heap_bytes huge", offsetof(struct pp_shm_hdr, heap_bytes), 8, 1ull << 62},
	    {"heap_bytes odd", offsetof(struct pp_shm_hdr, heap_bytes), 8, (1 << 16) + 64},
	    {"heap_bytes wraps", offsetof(struct pp_shm_hdr, heap_bytes), 8, UINT64_MAX - 4095},
	    {"size", offsetof(struct pp_shm_hdr, size), 8, 1ull << 20},
	    {"nlocal", offsetof(struct pp_shm_hdr, nlocal), 4, 64},
	    {"ring_cells", offsetof(struct pp_shm_hdr, ring_cells), 4, 1u << 20},
	    {"slot rank", offsetof(struct pp_shm_hdr, slot[1].rank), 4, 6},
	    {"version", offsetof(struct pp_shm_hdr, version), 4, PP_SHM_SEG_VERSION + 1},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		make_name("c");
		struct pp_shm_seg a, b;
		CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&a, name, &geom, ranks3, 12), 0);
		memcpy((uint8_t *)a.hdr + cases[k].at, &cases[k].value, cases[k].width);
		int rc = pp_shm_seg_attach(&b, name, &geom, ranks3, 12, 5);
		if (rc != -EPROTO)
			fprintf(stderr, "\n    %s rewritten: attach gave %d\n", cases[k].what, rc);
		CU_ASSERT_EQUAL(rc, -EPROTO);
		if (rc == 0)
			pp_shm_seg_detach(&b);
		pp_shm_seg_unlink(name);
		pp_shm_seg_detach(&a);
	}
	/* The attaching rank's own view of the job must match too. */
	make_name("v");
	struct pp_shm_seg a, b;
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&a, name, &geom, ranks3, 13), 0);
	struct pp_shm_geom two = {2, 64, 0}, cells = {3, 128, 0};
	const uint32_t others[3] = {2, 5, 8};
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &two, ranks3, 13, 5), -EPROTO);
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &cells, ranks3, 13, 5), -EPROTO);
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &geom, others, 13, 5), -EPROTO);
	/* The object grown or shrunk behind the header's back. */
	int fd = shm_open(name, O_RDWR, 0);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ftruncate(fd, (off_t)a.size + 4096), 0);
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &geom, ranks3, 13, 5), -EPROTO);
	CU_ASSERT_EQUAL(ftruncate(fd, (off_t)a.size - 4096), 0);
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &geom, ranks3, 13, 5), -EPROTO);
	CU_ASSERT_EQUAL(ftruncate(fd, (off_t)a.size), 0);
	/* Heap size: the creator's, whatever the attaching rank would pick. */
	struct pp_shm_geom mine = {3, 64, 12345};
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_attach(&b, name, &mine, ranks3, 13, 5), 0);
	CU_ASSERT_EQUAL(b.geom.heap_bytes, 1 << 16);
	pp_shm_seg_detach(&b);
	/* Ours, but a mode others could open: refused. */
	CU_ASSERT_EQUAL(fchmod(fd, 0644), 0);
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &geom, ranks3, 13, 5), -EACCES);
	close(fd);
	pp_shm_seg_unlink(name);
	pp_shm_seg_detach(&a);
}

/* A peer's pid is read once, checked to be a process that maps the segment,
 * and kept: a pid rewritten in the slot table afterwards, or named there
 * before for a process that is no peer, is not used. */
static void test_peer_pid(void)
{
	make_name("p");
	struct pp_shm_seg a;
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&a, name, &geom, ranks3, 14), 0);
	int go[2];
	CU_ASSERT_EQUAL_FATAL(pipe(go), 0);
	pid_t child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (child == 0) {
		struct pp_shm_seg b;
		char c = 0;
		if (pp_shm_seg_attach(&b, name, &geom, ranks3, 14, 5) || write(go[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c;
	CU_ASSERT_EQUAL_FATAL(read(go[0], &c, 1), 1);
	/* A process that is no peer (it never mapped the segment). */
	pid_t other = fork();
	CU_ASSERT_FATAL(other >= 0);
	if (other == 0) {
		munmap(a.base, a.size); /* inherited: a process with no mapping of it */
		if (write(go[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	CU_ASSERT_EQUAL_FATAL(read(go[0], &c, 1), 1);
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&a, 2), -EAGAIN); /* not attached */
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&a, 0), -EINVAL); /* own */
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&a, 3), -EINVAL);
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&a, 1), child);
	/* Rewritten after it was read: not read again. */
	atomic_store(&a.slots[1].pid, other);
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&a, 1), child);
	atomic_store(&a.slots[1].pid, -1);
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&a, 1), child);
	/* Slot 2 claims attached with a pid that maps nothing of ours: refused,
	 * and the refusal kept even once the slot names a process that does. */
	atomic_store(&a.slots[2].pid, other);
	atomic_store(&a.slots[2].state, PP_SHM_ATTACHED);
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&a, 2), -EPERM);
	atomic_store(&a.slots[2].pid, child);
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&a, 2), -EPERM);
	kill(other, SIGKILL);
	kill(child, SIGKILL);
	int st;
	waitpid(other, &st, 0);
	waitpid(child, &st, 0);
	close(go[0]);
	close(go[1]);
	/* No pid, or a process that is gone. */
	struct pp_shm_seg b;
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_attach(&b, name, &geom, ranks3, 14, 7), 0);
	atomic_store(&a.slots[2].pid, 0);
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&b, 1), -ESRCH); /* child: gone */
	atomic_store(&b.slots[1].pid, 0);
	struct pp_shm_seg c2;
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_attach(&c2, name, &geom, ranks3, 14, 7), 0);
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&c2, 1), -ESRCH); /* 0 */
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&c2, 0), getpid());
	pp_shm_seg_unlink(name);
	pp_shm_seg_detach(&c2);
	pp_shm_seg_detach(&b);
	pp_shm_seg_detach(&a);
}

/* States that are no state read as gone; slot numbers past the table are
 * not written. */
static void test_states(void)
{
	make_name("s");
	struct pp_shm_seg a;
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&a, name, &geom, ranks3, 15), 0);
	atomic_store(&a.slots[1].state, 0xdeadbeef);
	CU_ASSERT_EQUAL(pp_shm_seg_state(&a, 1), PP_SHM_LEFT);
	CU_ASSERT_EQUAL(pp_shm_seg_state(&a, 1000), PP_SHM_LEFT);
	pp_shm_seg_set_state(&a, 1000, PP_SHM_REFUSED); /* nothing happens */
	pp_shm_seg_set_state(&a, 2, PP_SHM_REFUSED);
	CU_ASSERT_EQUAL(pp_shm_seg_state(&a, 2), PP_SHM_REFUSED);
	pp_shm_seg_unlink(name);
	pp_shm_seg_detach(&a);
}

static CU_TestInfo tests[] = {
    {"header rewritten after attach: own layout kept", test_header_rewritten},
    {"attach refuses a header that disagrees", test_attach_checks},
    {"peer pids read once, checked, kept", test_peer_pid},
    {"slot states checked", test_states},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sec_segment", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
