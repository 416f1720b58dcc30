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
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdio.h>
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

/* n bytes at addr of the rank's memory <-> buf, through its descriptor. */
static int mem_rw(int fd, void *buf, uint64_t addr, size_t n, int write)
{
	size_t done = 0;
	while (done < n) {
		ssize_t got =
		    write ? pwrite(fd, (const char *)buf + done, n - done, (off_t)(addr + done))
			  : pread(fd, (char *)buf + done, n - done, (off_t)(addr + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return errno == EIO ? -EFAULT : -errno;
		if (got == 0)
			return -ESRCH; /* the address space is gone: exec or exit */
		done += (size_t)got;
	}
	return 0;
}

void ppd_mem_failed(struct ppd_rank *r, int rc)
{
	int active = PPD_RANK_ACTIVE;
	if (rc == -ESRCH && atomic_compare_exchange_strong(&r->state, &active, PPD_RANK_DYING))
		pp_warn("ppd: rank %u of job %u: its address space is gone (exec?): detached",
			r->rank, r->job);
}

int ppd_mem_read(int fd, void *dst, uint64_t addr, size_t n)
{
	if (addr > INT64_MAX || n > INT64_MAX - addr)
		return -EFAULT;
	return mem_rw(fd, dst, addr, n, 0);
}

int ppd_mem_write(int fd, const void *src, uint64_t addr, size_t n)
{
	if (addr > INT64_MAX || n > INT64_MAX - addr)
		return -EFAULT;
	return mem_rw(fd, (void *)(uintptr_t)src, addr, n, 1);
}
