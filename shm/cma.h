/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Single-copy transfers between processes of a node: cross-memory attach
 * (process_vm_readv / process_vm_writev) over zero-buffer iovec lists, the
 * address/length pairs describing a user buffer. The kernel walks the pages
 * of both lists, so buffers spanning many pages (or unaligned) move in one
 * copy; partial transfers are continued until every byte has moved.
 *
 * When the kernel refuses cross-memory attach (EPERM: ptrace scope, another
 * user; ENOSYS: not built in), pp_shm_cma_denied() turns 1 for the life of
 * the process and one notice line says so: callers then take the two-copy
 * path through the segment.
 */
#ifndef PP_SHM_CMA_H
#define PP_SHM_CMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define PP_SHM_IOV_MAX 64 /* entries of a zero-buffer list at most */

/* Copy the bytes the remote list (in process pid) describes into the local
 * list, or (write = 1) the local list's bytes into the remote list. Both
 * lists describe the same number of bytes.
 * Errors: -EINVAL (lists of different lengths or too long), -EPERM / -ENOSYS
 * (denied: see pp_shm_cma_denied), -ESRCH (no such process), -EFAULT (a
 * range is not mapped there), -EIO (no progress). */
int pp_shm_cma_copy(pid_t pid, int write, const struct iovec *local, unsigned nlocal,
		    const struct iovec *remote, unsigned nremote);

/* One contiguous range each way: len bytes from raddr in pid to dst.
 * Errors: those of pp_shm_cma_copy. */
int pp_shm_cma_read(pid_t pid, void *dst, uint64_t raddr, size_t len);

/* len bytes from src to raddr in pid. Errors: those of pp_shm_cma_copy. */
int pp_shm_cma_write(pid_t pid, uint64_t raddr, const void *src, size_t len);

/* 1 once the kernel refused cross-memory attach in this process. */
int pp_shm_cma_denied(void);

/* Split [addr, addr + len) at page boundaries into at most max entries of
 * out (the last takes whatever remains); returns the entries written. */
unsigned pp_shm_zbuf(struct iovec *out, unsigned max, uint64_t addr, size_t len);

#endif
