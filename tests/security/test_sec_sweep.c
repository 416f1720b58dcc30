/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm mount is shared with everyone: objects of other users at names a
 * job uses, FIFOs, objects whose size flips while the sweep looks at them.
 * The sweep never touches (opens, maps, removes) another user's object, and
 * never faults on one of ours that changes size under it; a job's name held
 * by another user is refused, not taken over. Tests that need a second user
 * run only as root (a forked child drops to uid/gid 65534); otherwise they
 * say so and pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cu_main.h"
#include "segment.h"

#define NOBODY	 65534
#define SWEEPS	 300
#define OBJ_SIZE (64 * 1024)

static char node[64];
static pid_t dead_pid; /* a pid with no process */

static int setup(void)
{
	snprintf(node, sizeof(node), "swp%d", (int)getpid());
	dead_pid = fork();
	if (dead_pid < 0)
		return 1;
	if (dead_pid == 0)
		_exit(0);
	int st;
	waitpid(dead_pid, &st, 0);
	return 0;
}

static void obj_name(char *out, const char *job)
{
	CU_ASSERT_EQUAL_FATAL(pp_shm_seg_name(out, PP_SHM_NAME_MAX, job, node), 0);
}

static int exists(const char *n)
{
	char path[PP_SHM_NAME_MAX + 16];
	struct stat st;
	snprintf(path, sizeof(path), "/dev/shm%s", n);
	return lstat(path, &st) == 0;
}

static uid_t owner(const char *n)
{
	char path[PP_SHM_NAME_MAX + 16];
	struct stat st;
	snprintf(path, sizeof(path), "/dev/shm%s", n);
	return lstat(path, &st) == 0 ? st.st_uid : (uid_t)-1;
}

/* A segment header whose one process is pid: swept when pid is gone. */
static void put_header(int fd, pid_t pid)
{
	struct pp_shm_hdr h;
	memset(&h, 0, sizeof(h));
	h.magic = PP_SHM_SEG_MAGIC;
	h.version = PP_SHM_SEG_VERSION;
	h.nlocal = 1;
	atomic_store(&h.slot[0].pid, pid);
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		_exit(3);
}

/* An object at name with mode, sized and holding a header naming pid. */
static int make_obj(const char *n, mode_t mode, pid_t pid)
{
	int fd = shm_open(n, O_RDWR | O_CREAT | O_EXCL, mode);
	if (fd < 0 || fchmod(fd, mode) || ftruncate(fd, OBJ_SIZE))
		return -1;
	put_header(fd, pid);
	return fd;
}

static int is_root(const char *test)
{
	if (geteuid() == 0)
		return 1;
	fprintf(stderr, "\n    %s: skipped, needs root to act as a second user\n", test);
	CU_PASS("skipped: not root");
	return 0;
}

/* Another user's objects at names of this node: mode 0600 and 0666, both
 * abandoned-looking, a FIFO, and one whose size its owner flips all the
 * time. The sweep (as root, who could open and remove them all) leaves
 * every one alone, and never blocks or faults. */
static void test_other_user(void)
{
	if (!is_root("other user's objects"))
		return;
	char a[PP_SHM_NAME_MAX], b[PP_SHM_NAME_MAX], f[PP_SHM_NAME_MAX], flip[PP_SHM_NAME_MAX];
	obj_name(a, "ou600");
	obj_name(b, "ou666");
	obj_name(f, "oufifo");
	obj_name(flip, "ouflip");
	int ready[2];
	CU_ASSERT_EQUAL_FATAL(pipe(ready), 0);
	pid_t child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (child == 0) {
		char path[PP_SHM_NAME_MAX + 16];
		snprintf(path, sizeof(path), "/dev/shm%s", f);
		/* Dies with the test (set after setuid, which clears it). */
		if (setgid(NOBODY) || setuid(NOBODY) || prctl(PR_SET_PDEATHSIG, SIGKILL) ||
		    getppid() == 1 || make_obj(a, 0600, dead_pid) < 0 ||
		    make_obj(b, 0666, dead_pid) < 0 || mkfifo(path, 0666))
			_exit(2);
		int fd = make_obj(flip, 0666, dead_pid);
		char c = 1;
		if (fd < 0 || write(ready[1], &c, 1) != 1)
			_exit(2);
		for (;;) { /* until killed */
			if (ftruncate(fd, 0) || ftruncate(fd, OBJ_SIZE))
				_exit(4);
			put_header(fd, dead_pid);
		}
	}
	close(ready[1]); /* a child that fails closes the pipe: no wait for ever */
	char c = 0;
	CU_ASSERT_EQUAL_FATAL(read(ready[0], &c, 1), 1);
	alarm(60); /* a sweep that opened the FIFO would block */
	int removed = 0;
	for (int i = 0; i < SWEEPS; i++)
		removed += pp_shm_seg_sweep("/dev/shm", node);
	alarm(0);
	CU_ASSERT_EQUAL(removed, 0);
	CU_ASSERT(exists(a) && exists(b) && exists(f) && exists(flip));
	CU_ASSERT(owner(a) == NOBODY && owner(b) == NOBODY && owner(flip) == NOBODY);
	/* The job's name squatted: create refuses and leaves the object; attach
	 * refuses it too (0666: it could be opened). */
	struct pp_shm_geom g = {2, 16, 0};
	const uint32_t ranks[2] = {0, 1};
	struct pp_shm_seg s;
	CU_ASSERT_EQUAL(pp_shm_seg_create(&s, a, &g, ranks, 5), -EACCES);
	CU_ASSERT_EQUAL(owner(a), NOBODY);
	CU_ASSERT_EQUAL(pp_shm_seg_create(&s, f, &g, ranks, 5), -EACCES);
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&s, b, &g, ranks, 5, 1), -EACCES);
	CU_ASSERT_EQUAL(pp_shm_seg_attach(&s, flip, &g, ranks, 5, 1), -EACCES);
	kill(child, SIGKILL);
	int st;
	waitpid(child, &st, 0);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL); /* it flipped until the end */
	pp_shm_seg_unlink(a);
	pp_shm_seg_unlink(b);
	pp_shm_seg_unlink(f);
	pp_shm_seg_unlink(flip);
	close(ready[0]);
}

struct flipper {
	int fd;		 /* the object */
	pid_t pid;	 /* what its header names */
	atomic_int stop; /* set to end */
	unsigned long n; /* flips done */
};

static void *flip_main(void *arg)
{
	struct flipper *fl = arg;
	while (!atomic_load(&fl->stop)) {
		if (ftruncate(fl->fd, 0) || ftruncate(fl->fd, OBJ_SIZE))
			break;
		put_header(fl->fd, fl->pid);
		if (ftruncate(fl->fd, 100) || ftruncate(fl->fd, OBJ_SIZE))
			break;
		put_header(fl->fd, fl->pid);
		atomic_fetch_add(&fl->n, 1);
	}
	return NULL;
}

/* Objects of ours whose size flips between 0, a part of the header and the
 * whole, all the time: one of a live job (kept) and one abandoned (removed,
 * once, whenever the sweep catches it whole). Hundreds of sweeps, no fault;
 * a dead segment of ours of another mode stays. */
static void test_flipping(void)
{
	char live[PP_SHM_NAME_MAX], dead[PP_SHM_NAME_MAX], odd[PP_SHM_NAME_MAX];
	obj_name(live, "flive");
	obj_name(dead, "fdead");
	obj_name(odd, "fmode");
	struct flipper fl[2] = {{.pid = getpid()}, {.pid = dead_pid}};
	fl[0].fd = make_obj(live, 0600, getpid());
	fl[1].fd = make_obj(dead, 0600, dead_pid);
	int fo = make_obj(odd, 0644, dead_pid);
	CU_ASSERT_FATAL(fl[0].fd >= 0 && fl[1].fd >= 0 && fo >= 0);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, flip_main, &fl[i]), 0);
	/* At least SWEEPS sweeps, and on until both objects flipped many times
	 * under them (or 20 s went by). */
	int removed = 0;
	time_t end = time(NULL) + 20;
	for (int i = 0;
	     i < SWEEPS ||
	     ((atomic_load(&fl[0].n) < 1000 || atomic_load(&fl[1].n) < 1000) && time(NULL) < end);
	     i++)
		removed += pp_shm_seg_sweep("/dev/shm", node);
	for (int i = 0; i < 2; i++) {
		atomic_store(&fl[i].stop, 1);
		pthread_join(th[i], NULL);
	}
	CU_ASSERT(atomic_load(&fl[0].n) >= 1000 && atomic_load(&fl[1].n) >= 1000);
	CU_ASSERT(removed <= 1);
	CU_ASSERT(exists(live) && exists(odd));
	/* Still: whole again, the dead one goes, the live one and the odd
	 * mode stay. */
	if (exists(dead))
		CU_ASSERT_EQUAL(pp_shm_seg_sweep("/dev/shm", node), 1);
	CU_ASSERT(exists(live) && !exists(dead) && exists(odd));
	CU_ASSERT_EQUAL(pp_shm_seg_sweep("/dev/shm", node), 0);
	for (int i = 0; i < 2; i++)
		close(fl[i].fd);
	close(fo);
	pp_shm_seg_unlink(live);
	pp_shm_seg_unlink(odd);
}

static CU_TestInfo tests[] = {
    {"another user's objects are never touched", test_other_user},
    {"objects that change size under the sweep", test_flipping},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sec_sweep", setup, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
