/* SPDX-License-Identifier: BSD-3-Clause */
/* Cross-memory attach copies; the rules are in cma.h. */
#include "cma.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "pp_log.h"

#define PAGE 4096u

static atomic_int denied;

int pp_shm_cma_denied(void)
{
	return atomic_load_explicit(&denied, memory_order_relaxed);
}

static void deny(int err)
{
	if (!atomic_exchange(&denied, 1))
		pp_warn("shm: cross-memory attach refused (%s): intranode messages take the "
			"two-copy path through the segment",
			strerror(err));
}

static size_t total(const struct iovec *v, unsigned n)
{
	size_t t = 0;
	for (unsigned i = 0; i < n; i++)
		t += v[i].iov_len;
	return t;
}

/* Drop the first k bytes of the list v[*i..n), adjusting its first entry. */
static void advance(struct iovec *v, unsigned n, unsigned *i, size_t k)
{
	while (k && *i < n) {
		size_t t = k < v[*i].iov_len ? k : v[*i].iov_len;
		v[*i].iov_base = (uint8_t *)v[*i].iov_base + t;
		v[*i].iov_len -= t;
		k -= t;
		if (v[*i].iov_len == 0)
			(*i)++;
	}
	while (*i < n && v[*i].iov_len == 0)
		(*i)++;
}

int pp_shm_cma_copy(pid_t pid, int write, const struct iovec *local, unsigned nlocal,
		    const struct iovec *remote, unsigned nremote)
{
	if (nlocal > PP_SHM_IOV_MAX || nremote > PP_SHM_IOV_MAX ||
	    total(local, nlocal) != total(remote, nremote))
		return -EINVAL;
	struct iovec l[PP_SHM_IOV_MAX], r[PP_SHM_IOV_MAX];
	memcpy(l, local, nlocal * sizeof(*l));
	memcpy(r, remote, nremote * sizeof(*r));
	unsigned li = 0, ri = 0;
	advance(l, nlocal, &li, 0);
	advance(r, nremote, &ri, 0);
	while (li < nlocal) {
		ssize_t n =
		    write ? process_vm_writev(pid, l + li, nlocal - li, r + ri, nremote - ri, 0)
			  : process_vm_readv(pid, l + li, nlocal - li, r + ri, nremote - ri, 0);
		if (n < 0) {
			int err = errno;
			if (err == EINTR)
				continue;
			if (err == EPERM || err == ENOSYS)
				deny(err);
			return -err;
		}
		if (n == 0)
			return -EIO;
		/* A partial transfer: go on from where it stopped. */
		advance(l, nlocal, &li, (size_t)n);
		advance(r, nremote, &ri, (size_t)n);
	}
	return 0;
}

int pp_shm_cma_read(pid_t pid, void *dst, uint64_t raddr, size_t len)
{
	struct iovec l = {dst, len}, r = {(void *)(uintptr_t)raddr, len};
	return pp_shm_cma_copy(pid, 0, &l, 1, &r, 1);
}

int pp_shm_cma_write(pid_t pid, uint64_t raddr, const void *src, size_t len)
{
	struct iovec l = {(void *)(uintptr_t)src, len}, r = {(void *)(uintptr_t)raddr, len};
	return pp_shm_cma_copy(pid, 1, &l, 1, &r, 1);
}

unsigned pp_shm_zbuf(struct iovec *out, unsigned max, uint64_t addr, size_t len)
{
	unsigned n = 0;
	while (len && n < max) {
		size_t room = PAGE - (size_t)(addr & (PAGE - 1));
		size_t t = n + 1 == max || room > len ? len : room;
		out[n].iov_base = (void *)(uintptr_t)addr;
		out[n].iov_len = t;
		n++;
		addr += t;
		len -= t;
	}
	return n;
}
