/* SPDX-License-Identifier: BSD-3-Clause */
/* Touch every page of a buffer once from user space, before the job runs.
 *
 * MAP_POPULATE and the kernel's own writes fill the page tables, but a
 * process's first access to each page can still trap: under hypervisors
 * that shadow the guest's page tables, each page costs about 5 us the first
 * time this process reads or writes it (measured on a test bed VM: 5.4 us a
 * page after MAP_POPULATE, 35 ns after). A ring met slot by slot during
 * the job pays that on its first few hundred messages (internode 8 B one
 * way 24 us instead of 4.5 over the first 300 round trips, and
 * retransmissions once a trip outlasts the RTO); paid at open it costs
 * 5.4 us a page once (a packet: port's 22 MB of rings: about 30 ms).
 *
 * Each touch is an atomic add of 0: a write access, so the page is mapped
 * writable, that changes nothing even where another process or the kernel
 * writes the same memory.
 *
 * pp_prefault_kernel: the kernel's own first access to a page through this
 * process's mapping (copy_from_user, as a UDP socket's send does) traps
 * again on such a hypervisor, however often user space touched it: the
 * kernel and user space run under separate shadows. Measured: frame=udp on
 * packet: sends a long message's frames from the TX ring through a UDP
 * socket, and the first ~600 12 KiB round trips of a job took 27 us one way
 * against 13 later, 21 % of the sender's time in the kernel's copy (2 %
 * later). A pipe's write copies every page in once: 13.9 from the first.
 * Header-only. */
#ifndef PP_PREFAULT_H
#define PP_PREFAULT_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define PP_PREFAULT_STRIDE 4096 /* the smallest page; larger pages are touched more than once */

static inline void pp_prefault(void *p, size_t len)
{
	uint8_t *b = p;
	for (size_t i = 0; i < len; i += PP_PREFAULT_STRIDE)
		__atomic_fetch_add(b + i, 0, __ATOMIC_RELAXED);
	if (len)
		__atomic_fetch_add(b + len - 1, 0, __ATOMIC_RELAXED);
}

/* Have the kernel read every page of [p, p + len) once through this
 * process's mapping: written through a pipe and read back into a small
 * buffer. 0 or -errno (the pages touched so far stay touched). */
static inline int pp_prefault_kernel(const void *p, size_t len)
{
	enum { CHUNK = 65536 }; /* a pipe's default capacity */
	int fd[2], rc = 0;
	char *sink = malloc(CHUNK);
	if (!sink)
		return -ENOMEM;
	/* Nonblocking: a user over fs.pipe-user-pages-soft gets pipes of a
	 * page or two, and a blocking write of 64 KiB would wait forever for
	 * the read after it. Written in part then, read, and on. */
	if (pipe2(fd, O_CLOEXEC | O_NONBLOCK)) {
		rc = -errno;
		free(sink);
		return rc;
	}
	const char *b = p;
	for (size_t i = 0; i < len;) {
		size_t n = len - i < CHUNK ? len - i : CHUNK;
		ssize_t w = write(fd[1], b + i, n);
		if (w <= 0 || read(fd[0], sink, (size_t)w) != w) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		i += (size_t)w;
	}
	close(fd[0]);
	close(fd[1]);
	free(sink);
	return rc;
}

#endif
