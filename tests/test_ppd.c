/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node daemon ppd and its rank-side port (driver/ppd), without the test
 * bed: the daemon runs on an in-memory link of its own (--dev sim:NAME/0),
 * so every rank attached is on its node and all traffic takes the daemon's
 * loopback. Needs no privilege: this process lets the daemon read its memory
 * (PR_SET_PTRACER) as a rank launched under a ptrace policy would have to.
 * The ppd program comes from $PPD.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "cu_main.h"
#include "config.h"
#include "pp.h"
#include "ppd_harness.h"

static struct td dmn; /* the daemon of these tests */

static int suite_init(void)
{
	/* pp_init's ranks (job=ppdunit, no token) find their job claimed. */
	return td_start(&dmn, "ppd", NULL) || td_claim(&dmn, pp_config_job_hash("ppdunit"), 0, 2);
}

static int suite_clean(void)
{
	return td_stop(&dmn);
}

static int open_rank(struct pp_port **p, unsigned job, unsigned rank, unsigned size)
{
	return td_open(&dmn, p, job, rank, size);
}

/* --- attach ------------------------------------------------------------- */

static void test_attach_errors(void)
{
	struct pp_port *p, *q;
	CU_ASSERT_EQUAL(
	    pp_port_open(&p, "ppd:job=1,rank=2,size=2,inc=1,token=0,timeout=100,path=/x", NULL),
	    -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "ppd:rank=0", NULL), -EINVAL);
	CU_ASSERT_EQUAL(pp_port_open(&p, "ppd:job=1,rank=0,size=2,path=/x", NULL), -EINVAL);
	CU_ASSERT_EQUAL(
	    pp_port_open(&p, "ppd:job=1,rank=0,size=2,inc=0,token=0,timeout=100,path=/x", NULL),
	    -EINVAL);
	CU_ASSERT_EQUAL(
	    pp_port_open(
		&p, "ppd:job=1,rank=0,size=2,inc=1,token=0,timeout=100,path=/nonexistent/ppd.sock",
		NULL),
	    -ENODEV);
	CU_ASSERT_EQUAL_FATAL(open_rank(&p, 11, 0, 2), 0);
	CU_ASSERT_EQUAL(open_rank(&q, 11, 0, 2), -EADDRINUSE);
	struct pp_port_info pi;
	CU_ASSERT_EQUAL(pp_port_info(p, &pi), 0);
	CU_ASSERT_STRING_EQUAL(pi.driver, "ppd");
	CU_ASSERT(pi.mtu >= 1500 && pi.buf_cap >= pi.mtu + 14u);
	pp_port_close(p);
	/* Gone, the rank may attach again at once: the daemon looks at the
	 * holder's connection when its loop has not yet (ranks.c). */
	int rc = open_rank(&q, 11, 0, 2);
	CU_ASSERT_EQUAL(rc, 0);
	if (rc == 0)
		pp_port_close(q);
}

/* --- frames between two ranks of the node -------------------------------- */

static void count(void *arg)
{
	++*(int *)arg;
}

static void test_ranges(void)
{
	struct pp_port *a, *b;
	CU_ASSERT_EQUAL_FATAL(open_rank(&a, 12, 0, 2), 0);
	CU_ASSERT_EQUAL_FATAL(open_rank(&b, 12, 1, 2), 0);
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *map =
	    mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(map != MAP_FAILED);
	munmap(map + pg, (size_t)pg);
	uint8_t *good = map + pg - 512, frame[2048];
	for (int i = 0; i < 512; i++)
		good[i] = (uint8_t)(i * 7 + 1);
	int done = 0;
	struct pp_port_stats s0, s1;
	pp_port_stats(a, &s0);
	/* good, then a hole, a range into the hole, a spoofed source, another
	 * job, another incarnation of the sender, a frame for an earlier
	 * incarnation of rank 1, then good again: rank 1 sees exactly the
	 * two good ones. */
	unsigned me = inc_of(12, 0), you = inc_of(12, 1);
	CU_ASSERT_EQUAL(td_send(a, PP_WIRE_HELLO, 12, 0, 1, 1, good, 512, count, &done), 0);
	CU_ASSERT_EQUAL(td_send(a, PP_WIRE_HELLO, 12, 0, 1, 2, map + pg, 16, count, &done), 0);
	CU_ASSERT_EQUAL(td_send(a, PP_WIRE_HELLO, 12, 0, 1, 3, good + 1, 512, count, &done), 0);
	CU_ASSERT_EQUAL(td_send(a, PP_WIRE_HELLO, 12, 1, 1, 4, NULL, 0, NULL, NULL), 0);
	CU_ASSERT_EQUAL(td_send(a, PP_WIRE_HELLO, 13, 0, 1, 5, NULL, 0, NULL, NULL), 0);
	CU_ASSERT_EQUAL(td_send_inc(a, PP_WIRE_ACK, 12, 0, 1, me + 1, you, 7, NULL, 0, NULL, NULL),
			0);
	CU_ASSERT_EQUAL(td_send_inc(a, PP_WIRE_ACK, 12, 0, 1, me, you - 1, 8, NULL, 0, NULL, NULL),
			0);
	CU_ASSERT_EQUAL(td_send(a, PP_WIRE_HELLO, 12, 0, 1, 6, good, 100, count, &done), 0);
	int len = td_recv(b, frame, sizeof(frame));
	CU_ASSERT_EQUAL(len, PP_WIRE_MIN_FRAME + 512);
	CU_ASSERT(len > 0 && td_field32(frame, PP_WIRE_OFF_MSG_ID) == 1);
	CU_ASSERT(len > 0 && memcmp(frame + PP_WIRE_MIN_FRAME, good, 512) == 0);
	len = td_recv(b, frame, sizeof(frame));
	CU_ASSERT_EQUAL(len, PP_WIRE_MIN_FRAME + 100);
	CU_ASSERT(len > 0 && td_field32(frame, PP_WIRE_OFF_MSG_ID) == 6);
	struct pp_buf *t[4];
	for (int i = 0; i < 10000 && done < 4; i++) {
		unsigned n = pp_port_alloc(a, t, 4);
		pp_port_free(a, t, n);
		usleep(10);
	}
	CU_ASSERT_EQUAL(done, 4);
	pp_port_stats(a, &s1);
	CU_ASSERT_EQUAL(s1.tx_failed - s0.tx_failed, 5);
	/* attach_ext refuses what cannot be: not a tx buffer, too long. */
	struct pp_buf *x;
	CU_ASSERT_EQUAL_FATAL(pp_port_alloc(a, &x, 1), 1);
	x->len = PP_WIRE_MIN_FRAME;
	CU_ASSERT_EQUAL(pp_port_attach_ext(a, x, good, 4000, count, &done), -EMSGSIZE);
	CU_ASSERT_EQUAL(pp_port_attach_ext(a, x, good, 10, count, &done), 0);
	CU_ASSERT_EQUAL(pp_port_attach_ext(a, x, good, 10, count, &done), -EBUSY);
	pp_port_free(a, &x, 1); /* freed unsent: done runs */
	CU_ASSERT_EQUAL(done, 5);
	munmap(map, (size_t)pg);
	pp_port_close(a);
	pp_port_close(b);
}

/* A rank that dies: its node-mate gets a BYE from it, sent by the daemon:
 * one frame to every rank of the job, whatever its size. */
static void test_dead_rank(void)
{
	struct pp_port *a;
	CU_ASSERT_EQUAL_FATAL(open_rank(&a, 14, 0, 3), 0);
	pid_t child = fork();
	if (child == 0) {
		struct pp_port *c;
		_exit(open_rank(&c, 14, 2, 3) == 0 ? 0 : 1); /* dies attached */
	}
	int st;
	waitpid(child, &st, 0);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	uint8_t f[256];
	int len = td_recv(a, f, sizeof(f));
	CU_ASSERT_EQUAL(len, PP_WIRE_MIN_FRAME + PP_AUTH_TAG_LEN); /* headers and the tag */
	struct pp_wire_peek pk;
	CU_ASSERT_FATAL(len > 0 && pp_wire_peek(f, (size_t)len, &pk) == 0);
	CU_ASSERT_EQUAL(pk.type, PP_WIRE_BYE);
	CU_ASSERT_EQUAL(pk.src_rank, 2); /* from the dead rank */
	CU_ASSERT_EQUAL(pk.src_inc, inc_of(14, 2));
	CU_ASSERT_EQUAL(pk.dst_rank, PP_WIRE_RANK_ALL); /* one BYE, to every rank */
	CU_ASSERT_EQUAL(pk.dst_inc, 0);			/* the daemon knows none of theirs */
	pp_port_close(a);
}

/* --- the whole API through the daemon ----------------------------------- */

struct rank_run {
	int rank;      /* who */
	int failures;  /* counted by the thread */
	char why[160]; /* the first failure */
};

#define BIGM ((size_t)(1u << 20) + 3)

static void *rank_main(void *arg)
{
	struct rank_run *run = arg;
	char cfg[400];
	pp_ctx *ctx;
	snprintf(cfg, sizeof(cfg), "rank=%d,size=2,job=ppdunit,daemon=%s,timeout_ms=5000",
		 run->rank, dmn.sock);
	int rc = pp_init(&ctx, cfg);
	if (rc) {
		run->failures++;
		snprintf(run->why, sizeof(run->why), "pp_init: %s", pp_strerror(rc));
		return NULL;
	}
	static const size_t sizes[] = {0, 1, 80, 81, 760, 761, 1500, 4096, 65539, BIGM};
	uint8_t *b = malloc(BIGM);
	int peer = 1 - run->rank;
	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (int dir = 0; dir < 2; dir++) {
			size_t n = sizes[k];
			int tag = (int)(2 * k) + dir;
			if ((dir == 0) == (run->rank == 0)) {
				for (size_t i = 0; i < n; i++)
					b[i] = (uint8_t)(i * 3 + (size_t)tag);
				rc = pp_send(ctx, b, n, peer, tag);
			} else {
				pp_status s;
				memset(b, 0, n);
				rc = pp_recv(ctx, b, n, peer, tag, &s);
				for (size_t i = 0; rc == 0 && i < n; i++)
					if (b[i] != (uint8_t)(i * 3 + (size_t)tag))
						rc = -EIO;
				if (rc == 0 && s.len != n)
					rc = -EIO;
			}
			if (rc && !run->failures++)
				snprintf(run->why, sizeof(run->why), "size %zu dir %d: %s", n, dir,
					 pp_strerror(rc));
		}
	}
	free(b);
	rc = pp_finalize(ctx);
	if (rc && !run->failures++)
		snprintf(run->why, sizeof(run->why), "pp_finalize: %s", pp_strerror(rc));
	return NULL;
}

static void test_api_loopback(void)
{
	pthread_t t[2];
	struct rank_run runs[2] = {{.rank = 0}, {.rank = 1}};
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, rank_main, &runs[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		if (runs[i].failures)
			fprintf(stderr, "rank %d: %s\n", i, runs[i].why);
		CU_ASSERT_EQUAL(runs[i].failures, 0);
	}
}

static void test_stats(void)
{
	char out[8192];
	CU_ASSERT_EQUAL_FATAL(td_stats(&dmn, out, sizeof(out)), 0);
	/* The earlier tests: two bad ranges, a spoofed source, another job,
	 * another incarnation; a frame for an earlier incarnation. */
	CU_ASSERT(strstr(out, "bad_range=2 ") != NULL);
	CU_ASSERT(strstr(out, "spoof=3 ") != NULL);
	CU_ASSERT(strstr(out, "stale=1 ") != NULL);
	CU_ASSERT(strstr(out, "handler") != NULL);
}

/* --topology: what hwloc sees and the placement, without a port. */
static void test_topology(void)
{
	char cmd[512], out[8192];
	snprintf(cmd, sizeof(cmd), "%s --topology --cores 0", getenv("PPD"));
	FILE *f = popen(cmd, "r");
	CU_ASSERT_FATAL(f != NULL);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	CU_ASSERT_EQUAL(pclose(f), 0);
	CU_ASSERT(strstr(out, "machine: ") != NULL);
	CU_ASSERT(strstr(out, "core 0: cpus ") != NULL);
	CU_ASSERT(strstr(out, "placement (--cores): 1 pull handler(s): 0->cpu0") != NULL);
	snprintf(cmd, sizeof(cmd), "%s --topology --cores 5-2 2>/dev/null", getenv("PPD"));
	f = popen(cmd, "r");
	CU_ASSERT_FATAL(f != NULL);
	while (fread(out, 1, sizeof(out), f) > 0)
		;
	CU_ASSERT_NOT_EQUAL(pclose(f), 0); /* a descending range is refused */
}

static CU_TestInfo tests[] = {
    {"attach errors", test_attach_errors},
    {"ranges a rank does not own", test_ranges},
    {"dead rank: BYE on its behalf", test_dead_rank},
    {"pp.h through the daemon", test_api_loopback},
    {"stats", test_stats},
    {"topology", test_topology},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"ppd", suite_init, suite_clean, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
