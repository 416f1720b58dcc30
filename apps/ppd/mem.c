/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ppd's access to a rank's memory, with the rank's own rights.
 *
 * ppd runs as root, and root may read and write any process's memory. So
 * the daemon never asks the kernel by pid at the time of a copy (a pid keeps
 * its number across exec: a rank that exec'd a setuid program would have
 * the daemon read that program for it). Instead, when a rank attaches, the
 * attaching thread takes on the rank's file-system identity (fsuid, fsgid)
 * and gives up every effective capability, and opens /proc/PID/mem. The
 * kernel then decides as it would for the rank itself (ptrace's rule: the
 * target's real, effective and saved ids must be the rank's, and it must
 * be dumpable); the thread's rights are restored right after. Signals are
 * judged by real ids, which never change, so the rank gets no hold on the
 * daemon meanwhile.
 *
 * The descriptor holds the address space it was opened on, not the pid:
 * after an exec the process has a new one and reads of the old one return
 * nothing (0 bytes: the rank's image is gone, and the rank is failed), so
 * nothing of a later image can ever come out or be written. A copy through
 * it never waits on another process: a page behind a userfaultfd that
 * nobody serves fails at once (EIO) instead of blocking the handler, as
 * process_vm_readv would.
 *
 * One wait remains that nothing can end: a page of a file whose file system
 * does not answer (a FUSE server that never replies to the read; the wait
 * is uninterruptible, even SIGKILL waits for it). A rank can map such a file
 * and name it as its buffer. So each copy is watched: the handler thread
 * marks its copier before and after (two stores, no system call), and the
 * main thread gives up a copy that has run PPD_COPY_STALL_NS: it claims it
 * with a compare-and-swap (a copy that ended meanwhile wins, and nothing is
 * given up), detaches the rank, and starts a new thread for the handler.
 * The old thread is left in the kernel with what it held at that moment
 * (the buffer it copies into or out of, the frames of its burst), none of
 * which anyone else knows of; when its copy ends it sees the mark and exits
 * at once, touching nothing. Until then the rank's uid may attach no rank
 * (ranks.c), so one uid holds at most one such thread, and PPD_STUCK of
 * them in all (past that a stuck handler stays stuck, as before).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pp_log.h"
#include "ppd.h"

/* Raw system calls: the C library's set*id calls change every thread of
 * the process, these change the calling thread alone. */
static int caps_get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	return (int)syscall(SYS_capget, &h, d);
}

static int caps_set(const struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	return (int)syscall(SYS_capset, &h, d);
}

/* Open /proc/pid/mem as uid and gid without capabilities: the kernel
 * requires the target's ids to be theirs, it to be dumpable, and its
 * permitted capabilities to be none beyond ours (none). fd or -errno. */
static int open_as(pid_t pid, uid_t uid, gid_t gid)
{
	struct __user_cap_data_struct saved[2], none[2];
	if (caps_get(saved) != 0)
		return -errno;
	none[0] = saved[0];
	none[1] = saved[1];
	none[0].effective = none[1].effective = 0;
	/* fsgid before fsuid (changing fsgid needs CAP_SETGID), both before
	 * the capabilities go (changing either needs them). A daemon that is
	 * not root cannot change them: it opens as itself. */
	gid_t old_gid = (gid_t)syscall(SYS_setfsgid, gid);
	uid_t old_uid = (uid_t)syscall(SYS_setfsuid, uid);
	int fd = -1, err = 0;
	if (caps_set(none) != 0) {
		err = errno;
	} else {
		char path[32];
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			err = errno;
		caps_set(saved);
	}
	syscall(SYS_setfsuid, old_uid);
	syscall(SYS_setfsgid, old_gid);
	return fd >= 0 ? fd : -(err == EACCES ? EPERM : err ? err : EPERM);
}

int ppd_mem_open(pid_t pid, int pidfd, uid_t uid, gid_t gid)
{
	/* A rank that connected as root may reach any memory itself: the
	 * daemon's rights are no more than its own. Every other rank's are
	 * the kernel's to judge, as that uid with no capability. (uid and
	 * gid are from the connection, taken when the rank connected: what
	 * the process exec'd since does not raise them.) */
	int fd;
	if (uid == 0) {
		char path[32];
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	} else {
		fd = open_as(pid, uid, gid);
		if (fd < 0)
			return fd;
	}
	/* The pid named the rank only while the pidfd says it lives: a pid
	 * freed and taken again would be another process. */
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	if (pidfd >= 0 && poll(&p, 1, 0) != 0) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

/* The calling handler thread's copier (NULL in any other thread). */
static _Thread_local struct ppd_copier *self;

int ppd_mem_thread(struct ppd_handler *h)
{
	struct ppd_copier *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->d = h->d;
	c->stuck = -1;
	self = c;
	atomic_store_explicit(&h->cp, c, memory_order_release);
	return 0;
}

/* The copy that began at value v was given up by the main thread: its
 * thread is no longer the handler's, and anything it held may be another's
 * view by now. Say the copy ended and leave. */
static _Noreturn void abandoned(struct ppd_copier *c)
{
	struct ppd_stuck *st = &c->d->stuck[c->stuck];
	if (st->fd >= 0)
		close(st->fd);
	atomic_store_explicit(&st->used, 0, memory_order_release);
	free(c);
	self = NULL;
	pthread_exit(NULL);
}

/* n bytes at addr of the rank's memory <-> buf, through its descriptor. */
static int mem_rw(struct ppd_rank *r, void *buf, uint64_t addr, size_t n, int write)
{
	/* Once a copy of its memory was given up, any other would wait as
	 * long (its BYE still goes out: what it queued is dropped). */
	if (atomic_load_explicit(&r->mem_held, memory_order_relaxed))
		return -EFAULT;
	struct ppd_copier *c = self;
	uint64_t v = 0;
	if (c) {
		v = atomic_load_explicit(&c->copy, memory_order_relaxed);
		c->rank = r;
		atomic_store_explicit(&c->copy, v + 1, memory_order_release);
	}
	size_t done = 0;
	int rc = 0;
	while (done < n) {
		ssize_t got =
		    write
			? pwrite(r->memfd, (const char *)buf + done, n - done, (off_t)(addr + done))
			: pread(r->memfd, (char *)buf + done, n - done, (off_t)(addr + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			/* 0: the address space is gone (exec or exit) */
			rc = got == 0 ? -ESRCH : errno == EIO ? -EFAULT : -errno;
			break;
		}
		done += (size_t)got;
	}
	uint64_t running = v + 1;
	if (c && !atomic_compare_exchange_strong_explicit(
		     &c->copy, &running, v + 2, memory_order_acq_rel, memory_order_acquire))
		abandoned(c);
	return rc;
}

void ppd_mem_failed(struct ppd_rank *r, int rc)
{
	int active = PPD_RANK_ACTIVE;
	if (rc == -ESRCH && atomic_compare_exchange_strong(&r->state, &active, PPD_RANK_DYING))
		pp_warn("ppd: rank %u of job %u: its address space is gone (exec?): detached",
			r->rank, r->job);
}

int ppd_mem_read(struct ppd_rank *r, void *dst, uint64_t addr, size_t n)
{
	if (addr > INT64_MAX || n > INT64_MAX - addr)
		return -EFAULT;
	return mem_rw(r, dst, addr, n, 0);
}

int ppd_mem_write(struct ppd_rank *r, const void *src, uint64_t addr, size_t n)
{
	if (addr > INT64_MAX || n > INT64_MAX - addr)
		return -EFAULT;
	return mem_rw(r, (void *)(uintptr_t)src, addr, n, 1);
}

int ppd_mem_uid_stuck(struct ppd *d, uid_t uid)
{
	int n = 0;
	for (int i = 0; i < PPD_STUCK; i++)
		n += atomic_load_explicit(&d->stuck[i].used, memory_order_acquire) &&
		     d->stuck[i].uid == uid;
	return n;
}

/* Give up c's copy that began at value v (main thread): 1 when given up,
 * 0 when it ended meanwhile or no entry is free. */
static int give_up(struct ppd *d, struct ppd_handler *h, struct ppd_copier *c, uint64_t v)
{
	int k = 0;
	while (k < PPD_STUCK && atomic_load_explicit(&d->stuck[k].used, memory_order_acquire))
		k++;
	if (k == PPD_STUCK) {
		if (c->since != UINT64_MAX)
			pp_warn("ppd: handler %d is held by a copy and %d others are already "
				"given up: it stays held",
				h->id, PPD_STUCK);
		c->since = UINT64_MAX; /* said once */
		return 0;
	}
	struct ppd_rank *r = c->rank; /* set before v was published */
	d->stuck[k].uid = r->uid;
	/* The descriptor the copy reads through is the thread's to close,
	 * not the rank entry's (the first such copy's, if two held it). */
	d->stuck[k].fd = atomic_load_explicit(&r->mem_held, memory_order_relaxed) ? -1 : r->memfd;
	c->stuck = k;
	atomic_store_explicit(&d->stuck[k].used, 1, memory_order_release);
	if (!atomic_compare_exchange_strong_explicit(&c->copy, &v, PPD_COPY_ABANDONED,
						     memory_order_acq_rel, memory_order_acquire)) {
		atomic_store_explicit(&d->stuck[k].used, 0, memory_order_release);
		return 0; /* it ended just now */
	}
	/* No entry is freed while the thread held its pass (its epoch stood
	 * still): r is still the rank whose memory holds it. */
	pp_warn("ppd: rank %u of job %u (uid %u): a copy of its memory has waited %llu ms in "
		"the kernel: rank detached, handler %d's thread given up",
		r->rank, r->job, (unsigned)r->uid,
		(unsigned long long)(PPD_COPY_STALL_NS / 1000000u), h->id);
	atomic_store_explicit(&r->mem_held, 1, memory_order_relaxed);
	ppd_rank_died(r, "its memory does not answer");
	atomic_fetch_add_explicit(&d->abandoned, 1, memory_order_relaxed);
	/* c is the old thread's from now on: it frees it when it leaves. */
	atomic_store_explicit(&h->cp, NULL, memory_order_release);
	int rc = ppd_handler_restart(h);
	if (rc)
		pp_err("ppd: cannot start a new thread for handler %d: %s", h->id, strerror(-rc));
	return 1;
}

int ppd_mem_watch(struct ppd *d, uint64_t now)
{
	int n = 0;
	for (int i = 0; i < d->nh; i++) {
		struct ppd_handler *h = &d->h[i];
		struct ppd_copier *c = atomic_load_explicit(&h->cp, memory_order_acquire);
		if (!c)
			continue;
		uint64_t v = atomic_load_explicit(&c->copy, memory_order_acquire);
		if (!(v & 1) || v == PPD_COPY_ABANDONED || v != c->seen) {
			c->seen = v;
			c->since = now;
			continue;
		}
		if (c->since != UINT64_MAX && now - c->since >= PPD_COPY_STALL_NS)
			n += give_up(d, h, c, v);
	}
	return n;
}
