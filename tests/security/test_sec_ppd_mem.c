/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node daemon's access to ranks' memory (apps/ppd/mem.c), attacked:
 *  - a rank of another uid that keeps its connection in a child and execs a
 *    setuid-root program, then asks the daemon to read that program's memory
 *    for another rank of its job: nothing of it comes out, and the rank is
 *    detached (its job gets the daemon's BYE);
 *  - a rank whose range lies behind a userfaultfd nobody serves: the daemon's
 *    only handler goes on serving another job, and SIGTERM still stops it;
 *  - a rank whose range is a FUSE file whose server never answers (a wait
 *    in the kernel nothing ends): the copy is given up after a second, the
 *    rank detached, another job served by a new thread, no rank of that uid
 *    attached while the copy is held, and the old thread gone once the file
 *    system's server is;
 *  - placement's rule: a DATA payload is written only when it is the frame
 *    the rank's engine takes next, from the sender's incarnation it named.
 * Root only where it must be (setuid, userfaultfd for kernel faults): each
 * such test says so and passes nothing off when it cannot run.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "cu_main.h"
#include "fuse_stall.h"
#include "ppd/ppd_pull.h"
#include "ppd/ppd_place.h"
#include "ppd_harness.h"

#define NOBODY	   65534u
#define SECRET_JOB 310
#define UFFD_JOB   320
#define VICTIM_JOB 330
#define BYE_JOB	   340
#define FUSE_JOB   350

static const char control[] = "pp-control-bytes-of-the-rank";

static void ext_done(void *arg)
{
	(void)arg;
}

/* 1 when needle is somewhere in hay. */
static int contains(const uint8_t *hay, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = 0; i + k <= n; i++)
		if (!memcmp(hay + i, needle, k))
			return 1;
	return 0;
}

/* Rank 1 of the job: what it received, over about 2 s of silence. Bits: 1
 * the control bytes, 2 the secret, 4 a BYE from rank 0. */
static int receive_all(struct pp_port *p, const char *secret)
{
	uint8_t f[16384];
	int seen = 0, len;
	while ((len = td_recv(p, f, sizeof(f))) > 0) {
		size_t n = (size_t)len < sizeof(f) ? (size_t)len : sizeof(f);
		if (contains(f, n, control))
			seen |= 1;
		if (contains(f, n, secret))
			seen |= 2;
		if (n >= PP_WIRE_MIN_FRAME && (f[PP_ETH_HLEN] & 0xf) == PP_WIRE_BYE &&
		    td_field32(f, 24) == 0)
			seen |= 4;
	}
	return seen;
}

static void test_setuid_exec(void)
{
	const char *prog = getenv("SETUID_SECRET");
	if (geteuid() != 0 || !prog) {
		printf("\n  needs root (setuid, another uid) and $SETUID_SECRET: not run ");
		return;
	}
	/* The setuid-root program, where nobody may run it but not read it. */
	char dir[] = "/tmp/pp-setuid.XXXXXX", path[64], cmd[256];
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	chmod(dir, 0755);
	snprintf(path, sizeof(path), "%s/secret", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", prog, path);
	CU_ASSERT_FATAL(system(cmd) == 0);
	CU_ASSERT_FATAL(chown(path, 0, 0) == 0 && chmod(path, 04711) == 0);

	struct td d;
	const char *extra[] = {"--group", "nogroup", NULL};
	CU_ASSERT_FATAL(td_start(&d, "setuid", extra) == 0);
	chmod(d.dir, 0755);
	int cfd = td_claim_at(d.sock, SECRET_JOB, NOBODY, 0, 2, NULL, 0);
	CU_ASSERT_FATAL(cfd >= 0);
	d.claim_fd[0] = cfd;
	d.claim_job[0] = SECRET_JOB;

	/* Rank 1, the attacker's other rank: reports what it got. */
	int rp[2], ready[2], addrp[2];
	CU_ASSERT_FATAL(pipe(rp) == 0 && pipe(ready) == 0 && pipe(addrp) == 0);
	pid_t r1 = fork();
	if (r1 == 0) {
		td_become(NOBODY);
		struct pp_port *p;
		if (td_open(&d, &p, SECRET_JOB, 1, 2))
			_exit(91);
		char go = 1;
		if (write(ready[1], &go, 1) != 1)
			_exit(92);
		int seen = receive_all(p, "pp-root-only-secret");
		_exit(write(rp[1], &seen, sizeof(seen)) == sizeof(seen) ? 0 : 93);
	}
	char go;
	CU_ASSERT_FATAL(read(ready[0], &go, 1) == 1);

	/* Rank 0: attaches, shows the path works on its own bytes, hands its
	 * connection to a child and execs the setuid program, whose secret
	 * the child then asks the daemon to send to rank 1. */
	pid_t r0 = fork();
	if (r0 == 0) {
		setpgid(0, 0); /* with the keeper below: killed as one group */
		td_become(NOBODY);
		struct pp_port *p;
		if (td_open(&d, &p, SECRET_JOB, 0, 2))
			_exit(94);
		static char mine[64];
		memcpy(mine, control, sizeof(control));
		if (td_send(p, PP_WIRE_PUSH, SECRET_JOB, 0, 1, 1, mine, sizeof(control), ext_done,
			    NULL))
			_exit(95);
		usleep(200000); /* read before the exec: the control arrives */
		pid_t keeper = fork();
		if (keeper == 0) {
			char line[64] = {0};
			unsigned long addr = 0;
			size_t len = 0;
			if (read(addrp[0], line, sizeof(line) - 1) <= 0 ||
			    sscanf(line, "%lx %zu", &addr, &len) != 2)
				_exit(96);
			td_send(p, PP_WIRE_PUSH, SECRET_JOB, 0, 1, 2, (void *)(uintptr_t)addr,
				(uint32_t)len, ext_done, NULL);
			pause();
			_exit(0);
		}
		dup2(addrp[1], STDOUT_FILENO);
		execl(path, path, (char *)NULL);
		_exit(97);
	}
	int seen = -1;
	CU_ASSERT_EQUAL(read(rp[0], &seen, sizeof(seen)), (ssize_t)sizeof(seen));
	CU_ASSERT(seen & 1);	/* the path works: the rank's own bytes came */
	CU_ASSERT(!(seen & 2)); /* nothing of the setuid program did */
	CU_ASSERT(seen & 4);	/* rank 0 was detached: its job got its BYE */
	int st0 = 0;
	CU_ASSERT_EQUAL(waitpid(r0, &st0, WNOHANG), 0); /* the setuid program runs on */
	kill(-r0, SIGKILL);
	waitpid(r0, &st0, 0);
	waitpid(r1, NULL, 0);
	CU_ASSERT_EQUAL(td_stop(&d), 0);
	unlink(path);
	rmdir(dir);
}

/* A region behind a userfaultfd that nobody serves; its address, or NULL
 * (no userfaultfd for kernel faults here). */
static void *stalling_region(int *ufd, size_t len)
{
	*ufd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (*ufd < 0)
		return NULL;
	struct uffdio_api api = {.api = UFFD_API};
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct uffdio_register reg = {.range = {(uintptr_t)m, len},
				      .mode = UFFDIO_REGISTER_MODE_MISSING};
	if (m == MAP_FAILED || ioctl(*ufd, UFFDIO_API, &api) ||
	    ioctl(*ufd, UFFDIO_REGISTER, &reg)) {
		close(*ufd);
		return NULL;
	}
	return m;
}

static void test_uffd_no_stall(void)
{
	int ufd;
	void *stall = stalling_region(&ufd, 1 << 20);
	if (!stall) {
		printf("\n  no userfaultfd for kernel faults (needs root): not run ");
		return;
	}
	struct td d;
	CU_ASSERT_FATAL(td_start(&d, "uffd", NULL) == 0);
	struct pp_port *e0, *e1, *v0, *v1;
	CU_ASSERT_FATAL(td_open(&d, &e0, UFFD_JOB, 0, 2) == 0);
	CU_ASSERT_FATAL(td_open(&d, &e1, UFFD_JOB, 1, 2) == 0);
	CU_ASSERT_FATAL(td_open(&d, &v0, VICTIM_JOB, 0, 2) == 0);
	CU_ASSERT_FATAL(td_open(&d, &v1, VICTIM_JOB, 1, 2) == 0);
	/* The daemon's one handler is asked to read the stalling range ... */
	CU_ASSERT_EQUAL(td_send(e0, PP_WIRE_PUSH, UFFD_JOB, 0, 1, 1, stall, 1024, ext_done, NULL),
			0);
	/* ... and still serves the other job. */
	uint8_t f[2048];
	for (unsigned id = 1; id <= 3; id++) {
		CU_ASSERT_EQUAL(td_send(v0, PP_WIRE_ACK, VICTIM_JOB, 0, 1, id, NULL, 0, NULL, NULL),
				0);
		CU_ASSERT(td_recv(v1, f, sizeof(f)) >= PP_WIRE_MIN_FRAME);
	}
	char st[8192];
	CU_ASSERT_EQUAL(td_stats(&d, st, sizeof(st)), 0);
	CU_ASSERT(td_counter(st, "bad_range") >= 1); /* the range failed, nothing waited */
	/* SIGTERM stops it (bounded: a handler stuck in the range never would). */
	kill(d.pid, SIGTERM);
	int status = -1;
	pid_t w = 0;
	for (int i = 0; i < 1000 && (w = waitpid(d.pid, &status, WNOHANG)) == 0; i++)
		usleep(10000);
	CU_ASSERT_EQUAL(w, d.pid);
	if (w != d.pid) {
		kill(d.pid, SIGKILL);
		waitpid(d.pid, NULL, 0);
	}
	d.pid = -1;
	pp_port_close(e0);
	pp_port_close(e1);
	pp_port_close(v0);
	pp_port_close(v1);
	td_stop(&d);
	close(ufd);
}

/* Frames on p until a BYE from rank src comes (1) or none for about 2 s. */
static int bye_from(struct pp_port *p, unsigned src)
{
	uint8_t f[2048];
	while (td_recv(p, f, sizeof(f)) > 0)
		if ((f[PP_ETH_HLEN] & 0xf) == PP_WIRE_BYE && td_field32(f, 24) == src)
			return 1;
	return 0;
}

/* Rank 0 of FUSE_JOB, in a process of its own (while the daemon's copy
 * waits, it holds this process's memory map: a fork or mmap here would
 * wait too): names len bytes of the file as a frame's range, says so on
 * ready, and waits to be killed. */
static void fuse_rank(struct td *d, struct fuse_stall *fs, size_t len, int ready)
{
	struct pp_port *e0;
	close(fs->dev); /* the server's end alone keeps the file system up */
	void *stall = fuse_stall_map(fs, len);
	char ok = stall && td_open(d, &e0, FUSE_JOB, 0, 2) == 0 &&
		  td_send(e0, PP_WIRE_PUSH, FUSE_JOB, 0, 1, 1, stall, 1024, ext_done, NULL) == 0;
	if (write(ready, &ok, 1) != 1 || !ok)
		_exit(1);
	for (;;)
		pause();
}

static void test_fuse_given_up(void)
{
	struct fuse_stall fs;
	char dir[] = "/tmp/pp-fuse-XXXXXX";
	if (!mkdtemp(dir) || fuse_stall_start(&fs, dir)) {
		printf("\n  no FUSE mount here (needs root and /dev/fuse): not run ");
		rmdir(dir);
		return;
	}
	struct td d;
	int pfd[2];
	CU_ASSERT_FATAL(td_start(&d, "fuse", NULL) == 0 && pipe(pfd) == 0);
	struct pp_port *e1, *v0, *v1, *x;
	CU_ASSERT_FATAL(td_open(&d, &e1, FUSE_JOB, 1, 2) == 0);
	CU_ASSERT_FATAL(td_open(&d, &v0, VICTIM_JOB, 0, 2) == 0);
	CU_ASSERT_FATAL(td_open(&d, &v1, VICTIM_JOB, 1, 2) == 0);
	/* The daemon's one handler is sent into the file ... */
	pid_t rank0 = fork();
	if (rank0 == 0)
		fuse_rank(&d, &fs, 1 << 20, pfd[1]);
	char ok = 0;
	CU_ASSERT_FATAL(read(pfd[0], &ok, 1) == 1 && ok);
	/* ... and the other job is served again (by a new thread). */
	uint8_t f[2048];
	for (unsigned id = 1; id <= 3; id++) {
		CU_ASSERT_EQUAL(td_send(v0, PP_WIRE_ACK, VICTIM_JOB, 0, 1, id, NULL, 0, NULL, NULL),
				0);
		CU_ASSERT(td_recv(v1, f, sizeof(f)) >= PP_WIRE_MIN_FRAME);
	}
	/* The rank whose memory held it is detached: its job hears so. */
	CU_ASSERT(bye_from(e1, 0));
	char st[8192];
	CU_ASSERT_EQUAL(td_stats(&d, st, sizeof(st)), 0);
	CU_ASSERT_EQUAL(td_counter(st, "copies_abandoned"), 1);
	CU_ASSERT_EQUAL(td_counter(st, "copies_held"), 1);
	/* While the copy is held, its uid attaches nothing more. */
	CU_ASSERT_NOT_EQUAL(td_open(&d, &x, FUSE_JOB + 1, 0, 2), 0);
	/* The file system's server ends: the old thread's copy fails, and
	 * the thread leaves; the uid may attach again. */
	fuse_stall_stop(&fs);
	long long held = -1;
	for (int i = 0; i < 50 && held != 0; i++) {
		usleep(100000);
		held = td_stats(&d, st, sizeof(st)) ? -1 : td_counter(st, "copies_held");
	}
	CU_ASSERT_EQUAL(held, 0);
	CU_ASSERT_EQUAL_FATAL(td_open(&d, &x, FUSE_JOB + 1, 0, 2), 0);
	pp_port_close(x);
	kill(rank0, SIGKILL);
	waitpid(rank0, NULL, 0);
	close(pfd[0]);
	close(pfd[1]);
	pp_port_close(e1);
	pp_port_close(v0);
	pp_port_close(v1);
	CU_ASSERT_EQUAL(td_stop(&d), 0);
}

static void test_place_rule(void)
{
	struct ppd_place e = {.src = 3, .src_inc = 0x77, .msg_id = 9, .len = 30000, .from = 8000};
	/* Nothing placed yet: DATA starts at or after the rank's bytes (pushes
	 * went on while the PULL was on its way). */
	CU_ASSERT(ppd_place_fits(&e, 8000, 0x77, 8000, 8000));
	CU_ASSERT(ppd_place_fits(&e, 8000, 0x77, 16000, 8000));
	CU_ASSERT(!ppd_place_fits(&e, 8000, 0x77, 4000, 8000)); /* before: the rank has it */
	CU_ASSERT(!ppd_place_fits(&e, 8000, 0x76, 8000, 8000)); /* an earlier life */
	CU_ASSERT(!ppd_place_fits(&e, 8000, 0, 8000, 8000));	/* names none */
	/* Once placing started: exactly after the last frame placed. */
	uint64_t next = ppd_place_after(8000, 8000);
	CU_ASSERT(ppd_place_fits(&e, next, 0x77, 16000, 8000));	 /* the next frame */
	CU_ASSERT(!ppd_place_fits(&e, next, 0x77, 8000, 8000));	 /* a duplicate */
	CU_ASSERT(!ppd_place_fits(&e, next, 0x77, 24000, 6000)); /* past a gap */
	CU_ASSERT(!ppd_place_fits(&e, next, 0x76, 16000, 8000)); /* an earlier life */
	next = ppd_place_after(16000, 8000);
	CU_ASSERT(!ppd_place_fits(&e, next, 0x77, 24000, 8000)); /* beyond the buffer */
	CU_ASSERT(ppd_place_fits(&e, next, 0x77, 24000, 6000));	 /* the last bytes */
}

/* The BYE the daemon sends for a rank that left proves its job's secret
 * with the key the rank handed over, and proves nothing without one. */
static void test_bye_signed(void)
{
	struct td d;
	CU_ASSERT_FATAL(td_start(&d, "bye", NULL) == 0);
	uint8_t key[PP_AUTH_KEY_LEN], other[PP_AUTH_KEY_LEN];
	CU_ASSERT_FATAL(pp_auth_key_derive("the job's secret", key) == 0);
	CU_ASSERT_FATAL(pp_auth_key_derive("another job's", other) == 0);
	for (int keyed = 0; keyed < 2; keyed++) {
		unsigned job = BYE_JOB + (unsigned)keyed;
		struct pp_port *a, *b;
		CU_ASSERT_FATAL(td_open(&d, &a, job, 0, 2) == 0);
		CU_ASSERT_FATAL(td_open(&d, &b, job, 1, 2) == 0);
		if (keyed)
			CU_ASSERT_EQUAL(ppd_port_set_key(a, key), 0);
		pp_port_close(a); /* rank 0 leaves: the daemon says goodbye for it */
		uint8_t f[2048];
		int len, bye = 0;
		while (!bye && (len = td_recv(b, f, sizeof(f))) > 0)
			bye = (f[PP_ETH_HLEN] & 0xf) == PP_WIRE_BYE && td_field32(f, 24) == 0;
		CU_ASSERT_FATAL(bye);
		CU_ASSERT_EQUAL(pp_auth_verify(key, f, (size_t)len) == 0, keyed);
		CU_ASSERT_NOT_EQUAL(pp_auth_verify(other, f, (size_t)len), 0);
		pp_port_close(b);
	}
	CU_ASSERT_EQUAL(td_stop(&d), 0);
}

static CU_TestInfo tests[] = {
    {"a setuid image under a rank's pid gives nothing away", test_setuid_exec},
    {"a range behind an unserved userfaultfd stalls nobody", test_uffd_no_stall},
    {"a copy held by a FUSE file that never answers is given up", test_fuse_given_up},
    {"placement writes only the frame the engine takes next", test_place_rule},
    {"the daemon's BYE for a rank proves its job's secret", test_bye_signed},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"ppd memory access", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
