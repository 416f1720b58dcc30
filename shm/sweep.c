/* SPDX-License-Identifier: BSD-3-Clause */
/* pp_shm_seg_sweep: the node's segments that crashed jobs left behind; the
 * rules are in segment.h. Objects are looked at without mapping them: a
 * header is read with pread into a private copy, so an object that another
 * process shrinks or grows meanwhile gives a short read, never a fault. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pp_log.h"
#include "seg_obj.h"
#include "segment.h"

/* 1 when no slot of the header copy h names a live process. */
static int abandoned(const struct pp_shm_hdr *h)
{
	if (h->magic != PP_SHM_SEG_MAGIC || h->nlocal < 1 || h->nlocal > PP_SHM_MAX_LOCAL)
		return 0; /* not a segment, or still being formatted: leave it */
	for (uint32_t i = 0; i < h->nlocal; i++) {
		int32_t pid = atomic_load_explicit(&h->slot[i].pid, memory_order_relaxed);
		if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH))
			return 0;
	}
	return 1;
}

/* The header of the object name in the directory dfd, if it is ours and one
 * of ours may be: 1 and *h filled, else 0. */
static int read_hdr(int dfd, const char *name, struct pp_shm_hdr *h)
{
	struct stat st, st2;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	if (!pp_shm_obj_ours(&st)) {
		pp_info("shm: sweep: %s belongs to uid %u with mode %04o (type %07o): not ours, "
			"left alone",
			name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			(unsigned)(st.st_mode & S_IFMT));
		return 0;
	}
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* The object opened must be the one looked at. */
	int ok = fstat(fd, &st2) == 0 && st2.st_dev == st.st_dev && st2.st_ino == st.st_ino &&
		 pp_shm_obj_ours(&st2) && pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h);
	close(fd);
	return ok;
}

int pp_shm_seg_sweep(const char *dir, const char *node)
{
	char suffix[PP_SHM_NAME_MAX];
	if (pp_shm_seg_name(suffix, sizeof(suffix), "x", node))
		return 0;
	const char *tail = suffix + 5; /* "-<node>" after "/pp-x" */
	size_t tl = strlen(tail);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n <= 3 + tl || n >= PP_SHM_NAME_MAX || strncmp(e->d_name, "pp-", 3) ||
		    strcmp(e->d_name + n - tl, tail))
			continue;
		struct pp_shm_hdr h;
		if (read_hdr(dirfd(d), e->d_name, &h) && abandoned(&h) &&
		    unlinkat(dirfd(d), e->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
