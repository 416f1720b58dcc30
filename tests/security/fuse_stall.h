/* SPDX-License-Identifier: BSD-3-Clause */
/* A FUSE file system whose file's reads are never answered (tests only). */
#ifndef FUSE_STALL_H
#define FUSE_STALL_H

#include <stddef.h>
#include <sys/types.h>

struct fuse_stall {
	char dir[256]; /* mount point */
	int dev;       /* /dev/fuse */
	pid_t server;  /* the serving child */
};

/* Mount at dir (made if missing) and serve from a child: 0 or -errno
 * (needs root and /dev/fuse). */
int fuse_stall_start(struct fuse_stall *s, const char *dir);
/* len bytes of its file mapped read-only (touching them waits for ever),
 * or NULL. */
void *fuse_stall_map(struct fuse_stall *s, size_t len);
/* Abort the connection (every waiting read fails), unmount. */
void fuse_stall_stop(struct fuse_stall *s);

#endif
