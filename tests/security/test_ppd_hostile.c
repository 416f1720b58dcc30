/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node daemon against a hostile or broken neighbour: raw clients that
 * attach and then publish malformed ring records, attach with absurd
 * numbers, hold connections idle, claim ranks and jobs that are not theirs,
 * hand their socket to another process, or die in the middle; a daemon
 * stopped with connections pending, or killed under its ranks. After each,
 * a victim job (two ranks of another job attached all along) still gets its
 * frames through and the daemon still answers --stats.
 *
 * The daemons run on in-memory links of their own (tests/ppd_harness.h):
 * no test bed, no privilege (a test that needs root says so and skips).
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "cu_main.h"
#include "pp.h"
#include "ppd/ppd_shm.h"
#include "ppd_harness.h"

#define VICTIM_JOB 100
#define EVIL_JOB   200

static struct td dmn;		  /* the daemon the victim and the attackers share */
static struct pp_port *victim[2]; /* ranks 0 and 1 of VICTIM_JOB */
static unsigned victim_id;	  /* last frame id the victim sent */

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int suite_init(void)
{
	if (td_start(&dmn, "hostile", NULL))
		return -1;
	/* The jobs the raw clients attach to (the victim's claims its own). */
	if (td_claim(&dmn, EVIL_JOB, 0, 2) || td_claim(&dmn, 303, 0, 1u << 20))
		return -1;
	if (td_open(&dmn, &victim[0], VICTIM_JOB, 0, 2) ||
	    td_open(&dmn, &victim[1], VICTIM_JOB, 1, 2))
		return -1;
	return 0;
}

static int suite_clean(void)
{
	for (int i = 0; i < 2; i++)
		if (victim[i])
			pp_port_close(victim[i]);
	return td_stop(&dmn);
}

/* The victim's frames still flow (a few, each within 2 s) and the daemon
 * still answers --stats. */
static void victim_ok(void)
{
	uint8_t f[256];
	for (int k = 0; k < 3; k++) {
		unsigned id = ++victim_id;
		CU_ASSERT_EQUAL(
		    td_send(victim[0], PP_WIRE_ACK, VICTIM_JOB, 0, 1, id, NULL, 0, NULL, NULL), 0);
		int len = td_recv(victim[1], f, sizeof(f));
		CU_ASSERT_EQUAL(len, PP_WIRE_MIN_FRAME);
		CU_ASSERT(len > 0 && td_field32(f, PP_WIRE_OFF_MSG_ID) == id);
	}
	char out[8192];
	CU_ASSERT_EQUAL(td_stats(&dmn, out, sizeof(out)), 0);
}

/* --- raw clients ---------------------------------------------------------- */

/* A client that speaks the attach protocol by hand and then does what it
 * likes with its region. */
struct raw {
	int sock;		    /* its connection */
	uint8_t *mem;		    /* its region */
	size_t len;		    /* bytes */
	struct ppd_region_hdr *hdr; /* the region's header */
};

static int raw_connect(const struct td *t)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", t->sock);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(s);
		return -1;
	}
	return s;
}

/* Send req on s, read the answer: its status (and the region, mapped into
 * r, when 0), or -EPROTO when none came within 3 s. */
static char raw_why[192]; /* the message of the last answer raw_request read */

static int raw_request(int s, const struct ppd_attach_req *req, struct raw *r)
{
	struct timeval tv = {.tv_sec = 3};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* A refusal may come before the request is sent (the daemon judges
	 * the connection itself first): then the send fails and the answer
	 * is still there to read. */
	send(s, req, sizeof(*req), MSG_NOSIGNAL);
	struct ppd_attach_rep rep;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	struct iovec iov = {&rep, sizeof(rep)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cm.buf,
			    .msg_controllen = sizeof(cm.buf)};
	if (recvmsg(s, &mh, 0) != (ssize_t)sizeof(rep))
		return -EPROTO;
	memcpy(raw_why, rep.message, sizeof(raw_why));
	raw_why[sizeof(raw_why) - 1] = '\0';
	if (rep.status)
		return rep.status;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	int fd[2] = {-1, -1}; /* the region, the handler's wake-up eventfd */
	memcpy(fd, CMSG_DATA(c),
	       c->cmsg_len - CMSG_LEN(0) < sizeof(fd) ? c->cmsg_len - CMSG_LEN(0) : sizeof(fd));
	if (fd[1] >= 0)
		close(fd[1]);
	r->len = rep.region;
	r->mem = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd[0], 0);
	close(fd[0]);
	if (r->mem == MAP_FAILED)
		return -EPROTO;
	r->hdr = (struct ppd_region_hdr *)r->mem;
	r->sock = s;
	return 0;
}

static struct ppd_attach_req req_of(unsigned job, unsigned rank, unsigned size, unsigned inc,
				    uint64_t token)
{
	return (struct ppd_attach_req){.magic = PPD_MAGIC,
				       .version = PPD_VERSION,
				       .job = job,
				       .rank = rank,
				       .size = size,
				       .inc = inc,
				       .token = token};
}

/* Attach as rank 0 of EVIL_JOB (size 2): 0, or the daemon's status. */
static int raw_attach(struct raw *r, unsigned rank)
{
	int s = raw_connect(&dmn);
	if (s < 0)
		return -ENODEV;
	struct ppd_attach_req req = req_of(EVIL_JOB, rank, 2, inc_of(EVIL_JOB, rank), 0);
	int rc = raw_request(s, &req, r);
	if (rc)
		close(s);
	return rc;
}

static void raw_close(struct raw *r)
{
	munmap(r->mem, r->len);
	close(r->sock);
}

/* The tx ring's parts (shm/ring.h: three 128-byte blocks, head, tail and
 * geometry, then the cells; a record starts with {len, kind}). */
static _Atomic uint64_t *ring_head(struct raw *r)
{
	return (_Atomic uint64_t *)(r->mem + r->hdr->tx_ring_off);
}

static _Atomic uint64_t *ring_tail(struct raw *r)
{
	return (_Atomic uint64_t *)(r->mem + r->hdr->tx_ring_off + 128);
}

/* Write a record header {len, kind} at the producer's position and move
 * the head by advance cells, as a hostile producer may. */
static void publish(struct raw *r, uint32_t len, uint32_t kind, uint64_t advance)
{
	uint8_t *cells = r->mem + r->hdr->tx_ring_off + 3 * 128;
	uint64_t h = atomic_load(ring_head(r));
	uint32_t *rec = (uint32_t *)(cells + (size_t)(h & (PPD_RING_CELLS - 1)) * 64);
	rec[0] = len;
	rec[1] = kind;
	atomic_store(ring_head(r), h + advance);
}

/* --- tests ---------------------------------------------------------------- */

/* Malformed records in a rank's tx ring never hang the daemon. */
static void test_ring_garbage(void)
{
	static const struct {
		uint32_t len, kind;
		uint64_t advance;
	} bad[] = {
	    {0xFFFFFFB9u, 0, 1},	/* a length whose cell count wraps to 0 */
	    {12345, 1, 1},		/* a pad of more cells than the ring has */
	    {100000, 0, 1},		/* a record longer than the ring allows */
	    {64, 0, (uint64_t)1 << 40}, /* a head far past the tail */
	    {64, 7, 1},			/* an unknown kind */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct raw r;
		CU_ASSERT_EQUAL_FATAL(raw_attach(&r, 0), 0);
		publish(&r, bad[i].len, bad[i].kind, bad[i].advance);
		usleep(50000);
		victim_ok();
		raw_close(&r);
	}
	/* A tail the producer rewrote (the consumer's index is its own). */
	struct raw r;
	CU_ASSERT_EQUAL_FATAL(raw_attach(&r, 0), 0);
	atomic_store(ring_tail(&r), (uint64_t)1 << 50);
	publish(&r, 16, 0, 1);
	usleep(50000);
	victim_ok();
	raw_close(&r);
}

/* A flood of well-formed but useless records costs the victim nothing but
 * its share of the handler: they come in bursts the handler bounds. */
static void test_record_flood(void)
{
	struct raw r;
	CU_ASSERT_EQUAL_FATAL(raw_attach(&r, 0), 0);
	pid_t child = fork();
	if (child == 0) {
		/* Frames in slots that are out of range, as fast as it can. */
		for (;;) {
			uint64_t h = atomic_load(ring_head(&r)), t = atomic_load(ring_tail(&r));
			if (h - t < PPD_RING_CELLS / 2) {
				uint8_t *cells = r.mem + r.hdr->tx_ring_off + 3 * 128;
				struct {
					uint32_t len, kind;
					struct ppd_rec rec;
				} x = {sizeof(struct ppd_rec),
				       0,
				       {.type = PPD_REC_FRAME, .slot = 999999, .len = 100}};
				memcpy(cells + (size_t)(h & (PPD_RING_CELLS - 1)) * 64, &x,
				       sizeof(x));
				atomic_store(ring_head(&r), h + 1);
			}
		}
	}
	usleep(100000);
	victim_ok();
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	raw_close(&r);
}

/* Absurd numbers are refused; a huge job's rank that leaves costs one BYE. */
static void test_absurd_attach(void)
{
	struct raw r;
	static const unsigned sizes[][2] = {{0xFFFFFFFFu, 0}, {0, 0}, {4, 4}};
	for (size_t i = 0; i < 3; i++) {
		int s = raw_connect(&dmn);
		CU_ASSERT_FATAL(s >= 0);
		struct ppd_attach_req req = req_of(300, sizes[i][1], sizes[i][0], 7, 0);
		CU_ASSERT_EQUAL(raw_request(s, &req, &r), -EINVAL);
		close(s);
	}
	int s = raw_connect(&dmn);
	struct ppd_attach_req req = req_of(301, 0, 2, 0, 0); /* no incarnation */
	CU_ASSERT_EQUAL(raw_request(s, &req, &r), -EINVAL);
	close(s);
	s = raw_connect(&dmn);
	req = req_of(302, 0, 2, 7, 0);
	req.version = PPD_VERSION + 1;
	CU_ASSERT_EQUAL(raw_request(s, &req, &r), -EPROTO);
	close(s);
	/* The largest job allowed, then leaving: one BYE, to all its ranks. */
	char before[8192], after[8192];
	CU_ASSERT_EQUAL_FATAL(td_stats(&dmn, before, sizeof(before)), 0);
	s = raw_connect(&dmn);
	req = req_of(303, 5, 1u << 20, 7, 0);
	CU_ASSERT_EQUAL_FATAL(raw_request(s, &req, &r), 0);
	raw_close(&r);
	usleep(200000);
	CU_ASSERT_EQUAL_FATAL(td_stats(&dmn, after, sizeof(after)), 0);
	long long sent = td_nic_tx(after) - td_nic_tx(before);
	CU_ASSERT(sent >= 1 && sent <= 2);
	victim_ok();
}

/* Idle connections hold nothing: an attach and --stats go through at once,
 * and each idle one is closed after a second. */
static void test_idle_connections(void)
{
	int idle[40];
	for (int i = 0; i < 40; i++)
		idle[i] = raw_connect(&dmn);
	double t0 = now_s();
	struct pp_port *p;
	CU_ASSERT_EQUAL(td_open(&dmn, &p, 400, 0, 1), 0);
	CU_ASSERT(now_s() - t0 < 0.5);
	pp_port_close(p);
	victim_ok();
	/* The ones still queued are closed on their deadline. */
	usleep(1500000);
	int closed = 0;
	for (int i = 0; i < 40; i++) {
		char c;
		closed += idle[i] >= 0 && recv(idle[i], &c, 1, MSG_DONTWAIT) == 0;
		if (idle[i] >= 0)
			close(idle[i]);
	}
	CU_ASSERT_EQUAL(closed, 40);
}

/* Another uid may not even connect: the socket is 0600 (as root only). */
static void test_other_uid(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "(skipped: needs root to become another user) ");
		return;
	}
	pid_t c = fork();
	if (c == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		int s = raw_connect(&dmn);
		_exit(s < 0 && errno == EACCES ? 0 : 1);
	}
	int st;
	waitpid(c, &st, 0);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	victim_ok();
}

/* A job is bound to its first attacher's uid and token and size; a rank
 * attached already cannot be taken. */
static void test_spoof(void)
{
	struct pp_port *p;
	struct raw r;
	/* The victim's job was attached with token "0" (none). */
	CU_ASSERT_EQUAL(td_open_token(&dmn, &p, VICTIM_JOB, 1, 2, "1"), -EPERM);
	CU_ASSERT_EQUAL(td_open(&dmn, &p, VICTIM_JOB, 1, 2), -EADDRINUSE);
	int s = raw_connect(&dmn);
	struct ppd_attach_req req = req_of(VICTIM_JOB, 3, 4, 9, 0); /* another size */
	CU_ASSERT_EQUAL(raw_request(s, &req, &r), -EINVAL);
	close(s);
	/* A job with a token takes only ranks with the same one. */
	struct pp_port *a, *b;
	CU_ASSERT_EQUAL_FATAL(td_open_token(&dmn, &a, 500, 0, 2, "5ec7e7"), 0);
	CU_ASSERT_EQUAL(td_open_token(&dmn, &b, 500, 1, 2, "9e55"), -EPERM);
	CU_ASSERT_EQUAL(td_open_token(&dmn, &b, 500, 1, 2, "0"), -EPERM);
	CU_ASSERT_EQUAL_FATAL(td_open_token(&dmn, &b, 500, 1, 2, "5ec7e7"), 0);
	pp_port_close(a);
	pp_port_close(b);
	victim_ok();
}

/* The process that connected hands its socket to a child and exits before
 * the request: the daemon refuses, it never attaches a pid that may be
 * another process's by now. */
static void test_pid_gone(void)
{
	int go[2], res[2];
	CU_ASSERT_FATAL(pipe(go) == 0 && pipe(res) == 0);
	pid_t c = fork();
	if (c == 0) {
		int s = raw_connect(&dmn);
		if (fork() == 0) {
			char x = 0, v;
			/* Once the process that connected is gone and reaped: */
			if (read(go[0], &x, 1) != 1)
				_exit(3);
			struct raw r;
			struct ppd_attach_req req = req_of(600, 0, 1, 7, 0);
			v = raw_request(s, &req, &r) == -ESRCH ? 'y' : 'n';
			_exit(write(res[1], &v, 1) == 1 ? 0 : 4);
		}
		_exit(0);
	}
	waitpid(c, NULL, 0);
	CU_ASSERT_FATAL(write(go[1], "x", 1) == 1);
	struct pollfd pf = {.fd = res[0], .events = POLLIN};
	char v = 0;
	CU_ASSERT(poll(&pf, 1, 5000) == 1 && read(res[0], &v, 1) == 1);
	CU_ASSERT_EQUAL(v, 'y');
	close(go[0]), close(go[1]), close(res[0]), close(res[1]);
	victim_ok();
}

/* A rank that dies in the middle (a record half written, a placement
 * entry taken) leaves the daemon serving the others. */
static void test_die_mid_operation(void)
{
	pid_t c = fork();
	if (c == 0) {
		struct raw r;
		if (raw_attach(&r, 1))
			_exit(1);
		/* Half a record: cells written, head not moved, then death. */
		uint8_t *cells = r.mem + r.hdr->tx_ring_off + 3 * 128;
		memset(cells, 0xAB, 256);
		r.hdr->places[0].state = PPD_PLACE_BUSY;
		kill(getpid(), SIGKILL);
	}
	waitpid(c, NULL, 0);
	usleep(100000);
	victim_ok();
}

/* SIGTERM with connections pending: the daemon drains and exits 0. */
static void test_sigterm_pending(void)
{
	struct td t;
	CU_ASSERT_EQUAL_FATAL(td_start(&t, "term", NULL), 0);
	int s[5];
	for (int i = 0; i < 5; i++)
		s[i] = raw_connect(&t);
	usleep(50000);
	CU_ASSERT_EQUAL(td_stop(&t), 0);
	for (int i = 0; i < 5; i++)
		if (s[i] >= 0)
			close(s[i]);
}

struct waiter {
	pp_ctx *ctx;   /* the rank */
	int rc;	       /* what its receive ended with */
	double took_s; /* after how long */
};

static void *wait_recv(void *arg)
{
	struct waiter *w = arg;
	char b[16];
	pp_status st;
	double t0 = now_s();
	w->rc = pp_recv(w->ctx, b, sizeof(b), 1, 3, &st);
	w->took_s = now_s() - t0;
	return NULL;
}

struct initer {
	int rank;	  /* which */
	const char *sock; /* the daemon */
	pp_ctx *ctx;	  /* the result */
	int rc;
};

static void *init_rank(void *arg)
{
	struct initer *x = arg;
	char cfg[256];
	snprintf(cfg, sizeof(cfg), "rank=%d,size=2,job=killd,node=n0,daemon=%s,timeout_ms=30000",
		 x->rank, x->sock);
	x->rc = pp_init(&x->ctx, cfg);
	return NULL;
}

/* The daemon killed under its ranks: their operations fail with
 * -ECONNRESET at once, not after timeout_ms, and nothing spins for ever. */
static void test_daemon_killed(void)
{
	struct td t;
	CU_ASSERT_EQUAL_FATAL(td_start(&t, "killd", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(td_claim(&t, pp_config_job_hash("killd"), 0, 2), 0);
	struct initer in[2] = {{0, t.sock, NULL, 0}, {1, t.sock, NULL, 0}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, init_rank, &in[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CU_ASSERT_FATAL(in[0].rc == 0 && in[1].rc == 0);
	struct waiter w = {.ctx = in[0].ctx};
	pthread_t wt;
	pthread_create(&wt, NULL, wait_recv, &w);
	usleep(100000);
	kill(t.pid, SIGKILL);
	waitpid(t.pid, NULL, 0);
	t.pid = -1;
	pthread_join(wt, NULL);
	CU_ASSERT_EQUAL(w.rc, -ECONNRESET);
	CU_ASSERT(w.took_s < 5.0);
	static char big[100000]; /* too big to complete by an eager copy */
	CU_ASSERT_EQUAL(pp_send(in[1].ctx, big, sizeof(big), 0, 3), -ECONNRESET);
	/* Nor does finalize wait timeout_ms for a node-mate's ring that nobody
	 * reads any more (it did: rank 0 waited 30 s for rank 1's ring). */
	double t0 = now_s();
	for (int i = 0; i < 2; i++)
		pp_finalize(in[i].ctx);
	CU_ASSERT(now_s() - t0 < 5.0);
	td_stop(&t);
}

/* --- other users: admission and claims ---------------------------------- */

#define NOBODY 65534

/* What a child running as nobody found. */
struct verdict {
	int n;	       /* attaches that succeeded */
	int status;    /* the first refusal (0: none) */
	char why[192]; /* ... its message */
};

/* Start t, a daemon whose socket nobody's group may use too. */
static int start_shared(struct td *t, const char *tag, const char *max_ranks)
{
	struct group *g = getgrgid(NOBODY);
	if (!g)
		return -1;
	static char name[64];
	snprintf(name, sizeof(name), "%s", g->gr_name);
	const char *extra[] = {"--group", name, max_ranks ? "--max-ranks-per-uid" : NULL, max_ranks,
			       NULL};
	/* Its folder is mkdtemp's (0700): nobody may reach the socket too. */
	return td_start(t, tag, extra) || chmod(t->dir, 0711) ? -1 : 0;
}

/* In a child: become nobody (uid and gid 65534, no other group). */
static void become_nobody(void)
{
	td_become(NOBODY);
}

/* Run fn as nobody in a child; its verdict in v. 0, or -1 when it failed. */
static int as_nobody(void (*fn)(const struct td *t, struct verdict *v), const struct td *t,
		     struct verdict *v)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t c = fork();
	if (c == 0) {
		close(p[0]);
		become_nobody();
		struct verdict mine = {0};
		fn(t, &mine);
		_exit(write(p[1], &mine, sizeof(mine)) == (ssize_t)sizeof(mine) ? 0 : 4);
	}
	close(p[1]);
	memset(v, 0, sizeof(*v));
	ssize_t got = read(p[0], v, sizeof(*v));
	close(p[0]);
	int st;
	waitpid(c, &st, 0);
	return got == (ssize_t)sizeof(*v) && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Attach rank of job (size ranks, token) to t: 0 (the region in r), or the
 * daemon's status (its message in raw_why). */
static int raw_attach_to(const struct td *t, struct raw *r, unsigned job, unsigned rank,
			 unsigned size, uint64_t token)
{
	int s = raw_connect(t);
	if (s < 0)
		return -ENODEV;
	struct ppd_attach_req req = req_of(job, rank, size, inc_of(job, rank), token);
	int rc = raw_request(s, &req, r);
	if (rc)
		close(s);
	return rc;
}

#define FAIR_JOB  700 /* the victim's job on the shared daemon */
#define FLOOD_JOB 701 /* nobody's */

static void flooder_ranks(const struct td *t, struct verdict *v)
{
	static struct raw held[40];
	for (unsigned i = 0; i < 40; i++) {
		int rc = raw_attach_to(t, &held[i], FLOOD_JOB, i, 64, 0);
		if (rc == 0) {
			v->n++;
		} else if (!v->status) {
			v->status = rc;
			snprintf(v->why, sizeof(v->why), "%s", raw_why);
		}
	}
}

/* Finding 6: one uid opening connections without end evicts only its own
 * pending connections: every attach of another user goes through; and
 * one uid holds at most its share of the rank table (--max-ranks-per-uid,
 * 32 by default), the 33rd refused with the reason while others attach. */
static void test_fair_admission(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "(skipped: needs root to become another user) ");
		return;
	}
	struct td t;
	CU_ASSERT_EQUAL_FATAL(start_shared(&t, "fair", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(td_claim(&t, FAIR_JOB, 0, 64), 0);
	CU_ASSERT_EQUAL_FATAL(td_claim_at(t.sock, FLOOD_JOB, NOBODY, 0, 64, NULL, 0) >= 0, 1);
	int ready[2];
	CU_ASSERT_FATAL(pipe(ready) == 0);
	pid_t flood = fork();
	if (flood == 0) {
		become_nobody();
		static int fds[400];
		for (unsigned long k = 0;; k++) {
			int i = (int)(k % 400);
			if (fds[i] > 0)
				close(fds[i]);
			fds[i] = raw_connect(&t);
			if (k == 400 && write(ready[1], "x", 1) != 1)
				_exit(4);
		}
	}
	char x;
	CU_ASSERT_FATAL(read(ready[0], &x, 1) == 1);
	int ok = 0;
	for (unsigned i = 0; i < 40; i++) {
		struct raw r;
		int rc = raw_attach_to(&t, &r, FAIR_JOB, i, 64, 0);
		if (rc == 0) {
			ok++;
			raw_close(&r);
		} else {
			fprintf(stderr, "[attach %u: %d %s] ", i, rc, raw_why);
		}
	}
	kill(flood, SIGKILL);
	waitpid(flood, NULL, 0);
	close(ready[0]), close(ready[1]);
	CU_ASSERT_EQUAL(ok, 40);

	/* The rank table: nobody holds 32 entries, no more, while root's
	 * ranks still attach. */
	struct verdict v;
	pid_t holder = 0;
	int hp[2], gop[2];
	CU_ASSERT_FATAL(pipe(hp) == 0 && pipe(gop) == 0);
	if ((holder = fork()) == 0) {
		become_nobody();
		struct verdict mine = {0};
		flooder_ranks(&t, &mine);
		if (write(hp[1], &mine, sizeof(mine)) != (ssize_t)sizeof(mine) ||
		    read(gop[0], &x, 1) != 1)
			_exit(4);
		_exit(0); /* its ranks leave with it */
	}
	CU_ASSERT_FATAL(read(hp[0], &v, sizeof(v)) == (ssize_t)sizeof(v));
	CU_ASSERT_EQUAL(v.n, 32);
	CU_ASSERT_EQUAL(v.status, -ENOSPC);
	CU_ASSERT_STRING_EQUAL(v.why,
			       "uid 65534 has 32 ranks here, its most (ppd --max-ranks-per-uid)");
	struct raw r;
	CU_ASSERT_EQUAL(raw_attach_to(&t, &r, FAIR_JOB, 63, 64, 0), 0);
	raw_close(&r);
	CU_ASSERT(write(gop[1], "x", 1) == 1);
	waitpid(holder, NULL, 0);
	close(hp[0]), close(hp[1]), close(gop[0]), close(gop[1]);
	CU_ASSERT_EQUAL(td_stop(&t), 0);
}

/* An unclaimed job's rank is refused, and told how to claim it. */
static void test_unclaimed(void)
{
	struct raw r;
	CU_ASSERT_EQUAL(raw_attach_to(&dmn, &r, 801, 0, 2, 0), -EACCES);
	CU_ASSERT_STRING_EQUAL(raw_why,
			       "job 801 is not claimed here: its launcher claims it "
			       "(pprun --daemon), or root: ppd --claim JOB:UID:TOKEN[:SIZE]");
}

#define SQUAT_JOB   800	     /* root's, claimed with a token */
#define SQUAT_TOKEN 0xabcull /* ... this one */

static void squatter(const struct td *t, struct verdict *v)
{
	struct raw r;
	/* First to attach, even with the right token: refused. */
	v->status = raw_attach_to(t, &r, SQUAT_JOB, 0, 2, SQUAT_TOKEN);
	snprintf(v->why, sizeof(v->why), "%s", raw_why);
	/* Nor may it claim a job for itself. */
	char why[192] = "";
	int fd = td_claim_at(t->sock, 802, NOBODY, 1, 1, why, sizeof(why));
	v->n = fd;
	if (fd >= 0)
		close(fd);
	snprintf(v->why + strlen(v->why) + 1, sizeof(v->why) - strlen(v->why) - 1, "%s", why);
}

/* Finding 7: a job is bound by its claim, not by its first attacher: a
 * squatter of another uid attaching the job first is refused with the
 * reason, the claimed owner's ranks attach; a non-root claim is refused; a
 * claim on a job claimed by someone else too; the binding outlives the
 * claiming connection while ranks are attached, and no longer. */
static void test_squatting(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "(skipped: needs root to become another user) ");
		return;
	}
	struct td t;
	CU_ASSERT_EQUAL_FATAL(start_shared(&t, "squat", NULL), 0);
	int claim = td_claim_at(t.sock, SQUAT_JOB, 0, SQUAT_TOKEN, 2, NULL, 0);
	CU_ASSERT_FATAL(claim >= 0);
	struct verdict v;
	CU_ASSERT_EQUAL_FATAL(as_nobody(squatter, &t, &v), 0);
	CU_ASSERT_EQUAL(v.status, -EPERM);
	CU_ASSERT_STRING_EQUAL(v.why,
			       "job 800 is bound here to another launch (uid 0, its own token)");
	CU_ASSERT_EQUAL(v.n, -EPERM);
	CU_ASSERT_STRING_EQUAL(v.why + strlen(v.why) + 1,
			       "uid 65534 may not claim jobs here (root or uid 0 only)");
	char why[192];
	CU_ASSERT_EQUAL(td_claim_at(t.sock, SQUAT_JOB, NOBODY, 0, 2, why, sizeof(why)),
			-EADDRINUSE);
	CU_ASSERT_STRING_EQUAL(why, "job 800 is claimed here already (uid 0)");
	struct raw a, b;
	CU_ASSERT_EQUAL_FATAL(raw_attach_to(&t, &a, SQUAT_JOB, 0, 2, SQUAT_TOKEN), 0);
	CU_ASSERT_EQUAL_FATAL(raw_attach_to(&t, &b, SQUAT_JOB, 1, 2, SQUAT_TOKEN), 0);
	/* The launcher gone, its ranks hold the binding ... */
	close(claim);
	raw_close(&b);
	struct raw c;
	CU_ASSERT_EQUAL_FATAL(as_nobody(squatter, &t, &v), 0);
	CU_ASSERT_EQUAL(v.status, -EPERM);
	CU_ASSERT_EQUAL(raw_attach_to(&t, &c, SQUAT_JOB, 1, 2, 0x1ull), -EPERM);
	/* ... and once they are gone too, nothing is left of it. */
	raw_close(&a);
	int rc = 0;
	for (int i = 0; i < 200 && (rc = raw_attach_to(&t, &c, SQUAT_JOB, 1, 2, 1)) == -EPERM; i++)
		usleep(10000);
	CU_ASSERT_EQUAL(rc, -EACCES);
	CU_ASSERT_EQUAL(td_stop(&t), 0);
}

static CU_TestInfo tests[] = {
    {"malformed ring records", test_ring_garbage},
    {"a flood of useless records", test_record_flood},
    {"absurd attach requests", test_absurd_attach},
    {"idle connections", test_idle_connections},
    {"another uid", test_other_uid},
    {"spoofed jobs and ranks", test_spoof},
    {"an unclaimed job", test_unclaimed},
    {"another uid floods connections and ranks", test_fair_admission},
    {"another uid squats a job number", test_squatting},
    {"a process gone before its request", test_pid_gone},
    {"a rank dies mid-operation", test_die_mid_operation},
    {"SIGTERM with connections pending", test_sigterm_pending},
    {"the daemon killed under its ranks", test_daemon_killed},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"ppd hostile neighbours", suite_init, suite_clean, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
