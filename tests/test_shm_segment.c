/* SPDX-License-Identifier: BSD-3-Clause */
/* shm/segment, shm/heap and shm/cma: names, create/attach/unlink, a stale
 * object replaced, rings and send tables shared between two processes, the
 * pp_malloc heap, and single copies (including the refusal that switches to
 * the two-copy path). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cma.h"
#include "cu_main.h"
#include "heap.h"
#include "recvq.h"
#include "ring.h"
#include "segment.h"

static char name[PP_SHM_NAME_MAX];

static void make_name(const char *tag)
{
	char job[64];
	snprintf(job, sizeof(job), "test%d%s", (int)getpid(), tag);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_name(name, sizeof(name), job, "node/0 x"), 0);
}

static int exists(const char *n)
{
	int fd = shm_open(n, O_RDONLY, 0);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static void test_name(void)
{
	char out[PP_SHM_NAME_MAX];
	CU_ASSERT_EQUAL(pp_shm_seg_name(out, sizeof(out), "1234", "ppn0"), 0);
	CU_ASSERT_STRING_EQUAL(out, "/pp-1234-ppn0");
	CU_ASSERT_EQUAL(pp_shm_seg_name(out, sizeof(out), "my job", "a/b:c"), 0);
	CU_ASSERT_STRING_EQUAL(out, "/pp-my_job-a_b_c");
	CU_ASSERT_EQUAL(pp_shm_seg_name(out, sizeof(out), "", "x"), -EINVAL);
	CU_ASSERT_EQUAL(pp_shm_seg_name(out, 8, "job", "node"), -ENAMETOOLONG);
}

static const uint32_t ranks3[3] = {2, 5, 7};

static void test_create_attach(void)
{
	make_name("a");
	struct pp_shm_geom g = {3, 64, 1 << 20};
	struct pp_shm_seg a, b, c;
	uint32_t bad[3] = {5, 2, 7};
	CU_ASSERT_EQUAL(pp_shm_seg_create(&a, name, &g, bad, 42), -EINVAL);   /* not ascending */
	CU_ASSERT_EQUAL(pp_shm_seg_create(&a, name, &g, ranks3, 0), -EINVAL); /* no nonce */
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &g, ranks3, 42, 5), -ENOENT);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&a, name, &g, ranks3, 42), 0);
	CU_ASSERT_EQUAL(a.me, 0);
	CU_ASSERT_EQUAL(pp_shm_seg_state(&a, 0), PP_SHM_ATTACHED);
	CU_ASSERT_EQUAL(atomic_load(&a.slots[0].pid), getpid());
	CU_ASSERT_EQUAL(pp_shm_seg_state(&a, 1), PP_SHM_PENDING);
	/* The mode is 0600. */
	struct stat st;
	int fd = shm_open(name, O_RDONLY, 0);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(fstat(fd, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
	close(fd);
	/* A wrong nonce is another job's segment; an unknown rank has no slot. */
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &g, ranks3, 43, 5), -ESTALE);
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &g, ranks3, 42, 6), -ESRCH);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_attach(&b, name, &g, ranks3, 42, 5), 0);
	CU_ASSERT_EQUAL(b.me, 1);
	CU_ASSERT_EQUAL(pp_shm_seg_index(&b, 7), 2);
	CU_ASSERT_EQUAL(pp_shm_seg_state(&a, 1), PP_SHM_ATTACHED);
	pp_shm_seg_set_state(&a, 2, PP_SHM_REFUSED);
	CU_ASSERT_EQUAL(pp_shm_seg_state(&b, 2), PP_SHM_REFUSED);
	/* Once unlinked, nobody new can attach, but the memory stays. */
	CU_ASSERT_EQUAL(pp_shm_seg_unlink(name), 0);
	CU_ASSERT_FALSE(exists(name));
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&c, name, &g, ranks3, 42, 7), -ENOENT);

	/* Rings: one per ordered pair, distinct, seen at the same offset by
	 * both mappings; a record from a to b arrives. */
	for (uint32_t i = 0; i < 3; i++)
		for (uint32_t j = 0; j < 3; j++)
			for (uint32_t k = 0; k < 3; k++)
				for (uint32_t l = 0; l < 3; l++)
					if (i != j && k != l && (i != k || j != l))
						CU_ASSERT_PTR_NOT_EQUAL(pp_shm_seg_ring(&a, i, j),
									pp_shm_seg_ring(&a, k, l));
	struct pp_shm_ring tx, rx;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&tx, pp_shm_seg_ring(&a, 0, 1)), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&rx, pp_shm_seg_ring(&b, 0, 1)), 0);
	void *p;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_reserve(&tx, 5, &p), 0);
	memcpy(p, "hello", 5);
	pp_shm_ring_commit(&tx, 5);
	const void *q;
	uint32_t len;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_peek(&rx, &q, &len), 1);
	CU_ASSERT(len == 5 && memcmp(q, "hello", 5) == 0);
	pp_shm_ring_release(&rx);

	/* Send tables: per ordered pair, one slot per msg_id modulo the size. */
	struct pp_shm_desc *d = pp_shm_seg_desc(&a, 0, 1, 9);
	CU_ASSERT_EQUAL(atomic_load(&d->key), 0);
	d->len = 77;
	CU_ASSERT_EQUAL(pp_shm_seg_desc(&b, 0, 1, 9 + PP_SHM_DESC_SLOTS)->len, 77);
	CU_ASSERT_NOT_EQUAL(pp_shm_seg_desc(&b, 1, 0, 9)->len, 77);

	/* Receive-queue areas: per ordered pair, distinct, empty at first, a
	 * receive b posts for messages from a is seen (and claimed) by a, and
	 * none is inside a heap. */
	for (uint32_t i = 0; i < 3; i++)
		for (uint32_t j = 0; j < 3; j++)
			if (i != j) {
				struct pp_shm_rq *x = pp_shm_seg_recvq(&a, i, j);
				CU_ASSERT(atomic_load(&x->head) == 0 && atomic_load(&x->tail) == 0);
				CU_ASSERT_EQUAL(pp_shm_seg_offset(&a, x, sizeof(*x)),
						PP_SHM_NO_OFFSET);
				for (uint32_t k = 0; k < 3; k++)
					for (uint32_t l = 0; l < 3; l++)
						if (k != l && (i != k || j != l))
							CU_ASSERT_PTR_NOT_EQUAL(
							    x, pp_shm_seg_recvq(&a, k, l));
			}
	struct pp_shm_rq_target t;
	CU_ASSERT_EQUAL(
	    pp_shm_rq_post(pp_shm_seg_recvq(&b, 0, 1), 4, 0, 0x1234, PP_SHM_NO_OFFSET, 100, 0), 0);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(pp_shm_seg_recvq(&a, 1, 0), 4, 0, 100, &t), -ENOENT);
	CU_ASSERT_EQUAL(pp_shm_rq_claim(pp_shm_seg_recvq(&a, 0, 1), 4, 0, 100, &t), 0);
	CU_ASSERT_EQUAL(t.addr, 0x1234);

	/* Heaps: per slot, disjoint; offsets only inside them. */
	size_t n0, n1;
	uint8_t *h0 = pp_shm_seg_heap(&a, 0, &n0), *h1 = pp_shm_seg_heap(&a, 1, &n1);
	CU_ASSERT(n0 == (1 << 20) && n1 == n0 && h1 >= h0 + n0);
	uint64_t off = pp_shm_seg_offset(&a, h1 + 100, 50);
	CU_ASSERT_NOT_EQUAL_FATAL(off, PP_SHM_NO_OFFSET);
	h1[100] = 0x5a;
	CU_ASSERT_EQUAL(b.base[off], 0x5a);
	CU_ASSERT_EQUAL(pp_shm_seg_offset(&a, &len, 4), PP_SHM_NO_OFFSET);
	CU_ASSERT_EQUAL(pp_shm_seg_offset(&a, pp_shm_seg_ring(&a, 0, 1), 4), PP_SHM_NO_OFFSET);
	CU_ASSERT_EQUAL(pp_shm_seg_offset(&a, h0 + 3 * n0 - 4, 8), PP_SHM_NO_OFFSET);

	pp_shm_seg_detach(&b);
	CU_ASSERT_EQUAL(pp_shm_seg_state(&a, 1), PP_SHM_LEFT);
	pp_shm_seg_detach(&a);
}

/* A stale object of the same name (a crash before the unlink) is replaced:
 * old nonce refused, new one accepted. */
static void test_stale(void)
{
	make_name("s");
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ftruncate(fd, 8192), 0);
	close(fd);
	struct pp_shm_seg a, b;
	struct pp_shm_geom g = {2, 16, 0};
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &g, ranks3, 1, 5), -EPROTO); /* garbage */
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&a, name, &g, ranks3, 99), 0);
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&b, name, &g, ranks3, 98, 5), -ESTALE);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_attach(&b, name, &g, ranks3, 99, 5), 0);
	size_t n;
	pp_shm_seg_heap(&a, 0, &n);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL(pp_shm_seg_unlink(name), 0);
	pp_shm_seg_detach(&b);
	pp_shm_seg_detach(&a);
}

/* Segments of this node whose processes are all gone are swept away; a
 * live one, and another node's, stay. */
static void test_sweep(void)
{
	char node[64], live[PP_SHM_NAME_MAX], dead[PP_SHM_NAME_MAX], other[PP_SHM_NAME_MAX];
	snprintf(node, sizeof(node), "sweep%d", (int)getpid());
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_name(live, sizeof(live), "j1", node), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_name(dead, sizeof(dead), "j2", node), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_name(other, sizeof(other), "j2", "elsewhere-x"), 0);
	pid_t gone = fork();
	CU_ASSERT_FATAL(gone >= 0);
	if (gone == 0)
		_exit(0);
	int st;
	waitpid(gone, &st, 0); /* a pid with no process any more */
	struct pp_shm_geom g = {2, 16, 0};
	struct pp_shm_seg a, b, c;
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&a, live, &g, ranks3, 1), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&b, dead, &g, ranks3, 1), 0);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&c, other, &g, ranks3, 1), 0);
	atomic_store(&b.slots[0].pid, gone);
	atomic_store(&c.slots[0].pid, gone);
	CU_ASSERT_EQUAL(pp_shm_seg_sweep("/dev/shm", node), 1);
	CU_ASSERT(exists(live) && !exists(dead) && exists(other));
	CU_ASSERT_EQUAL(pp_shm_seg_sweep("/dev/shm", node), 0);
	CU_ASSERT_EQUAL(pp_shm_seg_sweep("/nonexistent", node), 0);
	pp_shm_seg_unlink(live);
	pp_shm_seg_unlink(other);
	pp_shm_seg_detach(&a);
	pp_shm_seg_detach(&b);
	pp_shm_seg_detach(&c);
}

/* Two processes: the child attaches, sends through a ring, and publishes a
 * buffer; the parent reads it with one process_vm_readv. */
static void test_two_processes(void)
{
	make_name("p");
	struct pp_shm_geom g = {2, 64, 0};
	struct pp_shm_seg a;
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&a, name, &g, ranks3, 7), 0);
	static uint8_t src[300000];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 13 + 1);
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct pp_shm_seg b;
		struct pp_shm_ring tx;
		void *p;
		if (pp_shm_seg_attach(&b, name, &g, ranks3, 7, 5) ||
		    pp_shm_ring_attach(&tx, pp_shm_seg_ring(&b, 1, 0)) ||
		    pp_shm_ring_reserve(&tx, 8, &p))
			_exit(1);
		struct pp_shm_desc *d = pp_shm_seg_desc(&b, 1, 0, 3);
		d->addr = (uint64_t)(uintptr_t)src;
		d->len = sizeof(src);
		atomic_store(&d->key, (3u << 1) | 1);
		memcpy(p, "ready!!", 8);
		pp_shm_ring_commit(&tx, 8);
		pause(); /* until killed */
		_exit(0);
	}
	struct pp_shm_ring rx;
	CU_ASSERT_EQUAL_FATAL(pp_shm_ring_attach(&rx, pp_shm_seg_ring(&a, 1, 0)), 0);
	const void *q;
	uint32_t len;
	while (pp_shm_ring_peek(&rx, &q, &len) == 0)
		usleep(1000);
	CU_ASSERT(len == 8 && memcmp(q, "ready!!", 8) == 0);
	pp_shm_ring_release(&rx);
	CU_ASSERT_EQUAL(pp_shm_seg_state(&a, 1), PP_SHM_ATTACHED);
	CU_ASSERT_EQUAL(pp_shm_seg_peer_pid(&a, 1), pid);
	struct pp_shm_desc *d = pp_shm_seg_desc(&a, 1, 0, 3);
	CU_ASSERT_EQUAL(atomic_load(&d->key), (3u << 1) | 1);
	/* Read from the child's address space into an unaligned buffer, both
	 * as zero-buffer lists split at page boundaries. */
	static uint8_t dst[300000 + 5];
	struct iovec l[PP_SHM_IOV_MAX], r[PP_SHM_IOV_MAX];
	unsigned nl = pp_shm_zbuf(l, PP_SHM_IOV_MAX, (uint64_t)(uintptr_t)(dst + 5), d->len);
	unsigned nr = pp_shm_zbuf(r, 7, d->addr, d->len);
	CU_ASSERT(nl > 60 && nr == 7);
	memset(dst, 0, sizeof(dst));
	CU_ASSERT_EQUAL(pp_shm_cma_copy(pid, 0, l, nl, r, nr), 0);
	CU_ASSERT_EQUAL(memcmp(dst + 5, src, sizeof(src)), 0);
	CU_ASSERT_EQUAL(pp_shm_cma_read(pid, dst, d->addr + 1000, 4), 0);
	CU_ASSERT_EQUAL(memcmp(dst, src + 1000, 4), 0);
	/* Lists of different lengths; an unmapped range there. */
	CU_ASSERT_EQUAL(pp_shm_cma_copy(pid, 0, l, nl, r, 1), -EINVAL);
	CU_ASSERT_EQUAL(pp_shm_cma_read(pid, dst, 4096, 4), -EFAULT);
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	CU_ASSERT_EQUAL(pp_shm_cma_read(pid, dst, d->addr, 4), -ESRCH);
	CU_ASSERT_FALSE(pp_shm_cma_denied());
	pp_shm_seg_unlink(name);
	pp_shm_seg_detach(&a);
}

/* A reader without CAP_SYS_PTRACE and a target that is not dumpable: the
 * kernel refuses cross-memory attach and the process switches to the
 * two-copy path for good. */
static void test_denied(void)
{
	int p[2];
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	pid_t target = fork();
	CU_ASSERT_FATAL(target >= 0);
	if (target == 0) {
		prctl(PR_SET_DUMPABLE, 0);
		char c = 1;
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c;
	CU_ASSERT_EQUAL(read(p[0], &c, 1), 1);
	pid_t reader = fork();
	CU_ASSERT_FATAL(reader >= 0);
	if (reader == 0) {
		struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct d[2];
		if (syscall(SYS_capget, &h, d) == 0) {
			d[0].effective &= ~(1u << CAP_SYS_PTRACE);
			syscall(SYS_capset, &h, d);
		}
		static uint8_t buf[64];
		int rc = pp_shm_cma_read(target, buf, (uint64_t)(uintptr_t)buf, sizeof(buf));
		_exit(rc == -EPERM && pp_shm_cma_denied() ? 0 : 1);
	}
	int st;
	CU_ASSERT_EQUAL(waitpid(reader, &st, 0), reader);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	kill(target, SIGKILL);
	waitpid(target, &st, 0);
	close(p[0]);
	close(p[1]);
	CU_ASSERT_FALSE(pp_shm_cma_denied()); /* the reader's flag, not ours */
}

static void test_heap(void)
{
	static uint8_t area[64 * 1024] __attribute__((aligned(64)));
	struct pp_shm_heap h;
	CU_ASSERT_EQUAL(pp_shm_heap_init(&h, area + 8, sizeof(area) - 64), -EINVAL);
	CU_ASSERT_EQUAL(pp_shm_heap_init(&h, area, 100), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(pp_shm_heap_init(&h, area, sizeof(area)), 0);
	size_t big;
	CU_ASSERT_EQUAL(pp_shm_heap_free_bytes(&h, &big), sizeof(area) - 64);
	uint8_t *a = pp_shm_heap_alloc(&h, 1), *b = pp_shm_heap_alloc(&h, 1000),
		*c = pp_shm_heap_alloc(&h, 5000);
	CU_ASSERT_FATAL(a && b && c);
	CU_ASSERT((uintptr_t)a % 64 == 0 && (uintptr_t)b % 64 == 0 && (uintptr_t)c % 64 == 0);
	CU_ASSERT(pp_shm_heap_owns(&h, b) && !pp_shm_heap_owns(&h, &h));
	/* Blocks do not overlap: fill each, check each. */
	memset(a, 1, 1);
	memset(b, 2, 1000);
	memset(c, 3, 5000);
	CU_ASSERT(a[0] == 1 && b[0] == 2 && b[999] == 2 && c[0] == 3 && c[4999] == 3);
	CU_ASSERT(b >= a + 64 && c >= b + 1000);
	CU_ASSERT_PTR_NULL(pp_shm_heap_alloc(&h, sizeof(area)));
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, b + 64), -EINVAL); /* not a block */
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, &big), -EINVAL);
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, b), 0);
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, b), -EINVAL); /* twice */
	/* First fit: the hole b left takes a block that fits it. */
	uint8_t *d = pp_shm_heap_alloc(&h, 900);
	CU_ASSERT_PTR_EQUAL(d, b);
	/* Freed neighbours merge: a, d and c free make room for one block of
	 * nearly the whole area again. */
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, c), 0);
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, a), 0);
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, d), 0);
	CU_ASSERT_EQUAL(pp_shm_heap_free_bytes(&h, &big), sizeof(area) - 64);
	CU_ASSERT_EQUAL(big, sizeof(area) - 64);
	uint8_t *e = pp_shm_heap_alloc(&h, sizeof(area) - 64);
	CU_ASSERT_PTR_EQUAL(e, area + 64);
	CU_ASSERT_PTR_NULL(pp_shm_heap_alloc(&h, 1));
	CU_ASSERT_EQUAL(pp_shm_heap_free(&h, e), 0);
	/* Many small blocks, freed in a scattered order, coalesce back. */
	uint8_t *v[200];
	int n = 0;
	while (n < 200 && (v[n] = pp_shm_heap_alloc(&h, 100 + (size_t)n)))
		n++;
	CU_ASSERT(n > 100);
	for (int i = 0; i < n; i += 2)
		CU_ASSERT_EQUAL(pp_shm_heap_free(&h, v[i]), 0);
	for (int i = 1; i < n; i += 2)
		CU_ASSERT_EQUAL(pp_shm_heap_free(&h, v[i]), 0);
	pp_shm_heap_free_bytes(&h, &big);
	CU_ASSERT_EQUAL(big, sizeof(area) - 64);
}

/* Pages of [p, p + len) this process maps (/proc/self/pagemap bit 63). */
static uint64_t mapped_pages(const void *p, uint64_t len)
{
	const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	int fd = open("/proc/self/pagemap", O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	uint64_t n = 0;
	for (uintptr_t a = (uintptr_t)p & ~(pg - 1); a < (uintptr_t)p + len; a += pg) {
		uint64_t e = 0;
		CU_ASSERT_EQUAL(pread(fd, &e, sizeof(e), (off_t)(a / pg * sizeof(e))), sizeof(e));
		n += e >> 63;
	}
	close(fd);
	return n;
}

static void test_populate(void)
{
	make_name("p");
	struct pp_shm_geom g = {3, 4096, 1 << 20};
	struct pp_shm_seg a;
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_create(&a, name, &g, ranks3, 42), 0);
	const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), ring = a.lay.ring_bytes,
		       descs = PP_SHM_DESC_SLOTS * sizeof(struct pp_shm_desc);
	CU_ASSERT_EQUAL(pp_shm_seg_populate(&a, 0), -EINVAL); /* itself */
	CU_ASSERT_EQUAL(pp_shm_seg_populate(&a, 3), -EINVAL);
	/* Formatting a ring touched its header page only. */
	CU_ASSERT(mapped_pages(pp_shm_seg_ring(&a, 0, 1), ring) < 2);
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_populate(&a, 1), 0);
	/* Everything slots 0 and 1 share, both ways, is mapped... */
	for (uint32_t dir = 0; dir < 2; dir++) {
		uint32_t i = dir, j = 1 - dir;
		CU_ASSERT_EQUAL(mapped_pages(pp_shm_seg_ring(&a, i, j), ring), ring / pg);
		CU_ASSERT_EQUAL(mapped_pages(pp_shm_seg_desc(&a, i, j, 0), descs), descs / pg);
		CU_ASSERT_EQUAL(mapped_pages(pp_shm_seg_recvq(&a, i, j), sizeof(struct pp_shm_rq)),
				(sizeof(struct pp_shm_rq) + pg - 1) / pg);
	}
	/* ...and nothing of slot 2's, nor the heaps. */
	CU_ASSERT(mapped_pages(pp_shm_seg_ring(&a, 0, 2), ring) < 2);
	CU_ASSERT(mapped_pages(pp_shm_seg_ring(&a, 2, 1), ring) < 2);
	CU_ASSERT_EQUAL(mapped_pages(pp_shm_seg_desc(&a, 0, 2, 0), descs), 0);
	size_t hb;
	void *heap = pp_shm_seg_heap(&a, 0, &hb);
	CU_ASSERT_EQUAL(mapped_pages(heap, hb), 0);
	pp_shm_seg_detach(&a);
	pp_shm_seg_unlink(name);
}

static CU_TestInfo tests[] = {
    {"segment names", test_name},
    {"create, attach, unlink; rings, tables, heaps", test_create_attach},
    {"a stale object is replaced", test_stale},
    {"crashed jobs' segments swept", test_sweep},
    {"two processes: ring and single copy", test_two_processes},
    {"cross-memory attach refused", test_denied},
    {"heap: first fit, coalescing", test_heap},
    {"populate maps what a pair shares, nothing else", test_populate},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"shm_segment", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
