/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A file system whose one file never answers a read (tests only): a raw
 * FUSE server (no libfuse) that answers INIT, LOOKUP, GETATTR and OPEN, and
 * holds every READ. A page of its file mapped into a process is a page the
 * kernel waits on, uninterruptibly, for as long as the server lives.
 * Needs root (mount(2) of type fuse).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuse_stall.h"

#define FILE_INO 2
#define FILE_LEN (1u << 20)

static void fill_attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->mode = ino == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0644;
	a->nlink = ino == FUSE_ROOT_ID ? 2 : 1;
	a->size = ino == FUSE_ROOT_ID ? 0 : FILE_LEN;
	a->blocks = a->size / 512;
	a->blksize = 4096;
}

static void reply(int fd, uint64_t unique, int error, const void *out, size_t len)
{
	char buf[sizeof(struct fuse_out_header) + 256];
	struct fuse_out_header *h = (struct fuse_out_header *)buf;
	if (len > 256)
		len = 256;
	h->len = (uint32_t)(sizeof(*h) + (error ? 0 : len));
	h->error = error;
	h->unique = unique;
	if (!error && len)
		memcpy(buf + sizeof(*h), out, len);
	ssize_t w = write(fd, buf, h->len);
	(void)w;
}

/* Serve until the device is gone. */
static void serve(int fd)
{
	static char req[FUSE_MIN_READ_BUFFER + 4096];
	for (;;) {
		ssize_t n = read(fd, req, sizeof(req));
		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			return;
		const struct fuse_in_header *in = (const void *)req;
		const void *arg = req + sizeof(*in);
		switch (in->opcode) {
		case FUSE_INIT: {
			const struct fuse_init_in *ii = arg;
			struct fuse_init_out o = {.major = FUSE_KERNEL_VERSION,
						  .minor = ii->minor < FUSE_KERNEL_MINOR_VERSION
							       ? ii->minor
							       : FUSE_KERNEL_MINOR_VERSION,
						  .max_readahead = ii->max_readahead,
						  .max_write = 4096,
						  .max_background = 16,
						  .congestion_threshold = 12};
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			if (strcmp((const char *)arg, "f") != 0) {
				reply(fd, in->unique, -ENOENT, NULL, 0);
				break;
			}
			struct fuse_entry_out o = {
			    .nodeid = FILE_INO, .entry_valid = 3600, .attr_valid = 3600};
			fill_attr(&o.attr, FILE_INO);
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o = {.attr_valid = 3600};
			fill_attr(&o.attr, in->nodeid);
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPEN: {
			struct fuse_open_out o = {.fh = 1};
			reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_READ:
			break; /* never answered */
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break; /* no reply expected; interrupts are ignored */
		default:
			reply(fd, in->unique, -ENOSYS, NULL, 0);
			break;
		}
	}
}

int fuse_stall_start(struct fuse_stall *s, const char *dir)
{
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->server = -1;
	s->dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (s->dev < 0)
		return -errno;
	char opts[128];
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other",
		 s->dev);
	if (mkdir(dir, 0755) && errno != EEXIST)
		goto fail;
	if (mount("stall", dir, "fuse", MS_NOSUID | MS_NODEV, opts))
		goto fail;
	s->server = fork();
	if (s->server < 0) {
		int e = -errno;
		umount2(dir, MNT_DETACH);
		close(s->dev);
		return e;
	}
	if (s->server == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		serve(s->dev);
		_exit(0);
	}
	return 0;
fail:;
	int e = -errno;
	close(s->dev);
	return e;
}

void *fuse_stall_map(struct fuse_stall *s, size_t len)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/f", s->dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

void fuse_stall_stop(struct fuse_stall *s)
{
	/* The server's end closing aborts the connection: whatever waits on
	 * a read fails then. */
	if (s->server > 0) {
		kill(s->server, SIGKILL);
		waitpid(s->server, NULL, 0);
	}
	if (s->dev >= 0)
		close(s->dev);
	umount2(s->dir, MNT_DETACH);
	rmdir(s->dir);
}
