/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test-only helpers for the node daemon ppd without the test bed: a daemon
 * started on an in-memory link of its own (--dev sim:NAME/0), so every rank
 * attached is on its node and all traffic takes its loopback; ranks opened
 * as ppd ports; frames with headers only sent and received; the daemon's
 * counters. The ppd program comes from $PPD. This process lets the daemon
 * read its memory (PR_SET_PTRACER), as a rank launched under a ptrace
 * policy would have to. A daemon takes ranks only of claimed jobs: td_open
 * claims its job first, as this process's uid, the way pprun --daemon does,
 * and the daemon's struct td holds the claims until td_stop.
 */
#ifndef PP_TEST_PPD_HARNESS_H
#define PP_TEST_PPD_HARNESS_H

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pp_port.h"
#include "ppd/ppd_shm.h"
#include "wire.h"

#define TD_CLAIMS 16 /* claims one daemon of a test holds */

/* One daemon of a test. */
struct td {
	pid_t pid;		       /* the daemon, -1 when not running */
	char dir[64];		       /* its temporary folder */
	char sock[96];		       /* its socket, in dir */
	char link[64];		       /* its in-memory link */
	int claim_fd[TD_CLAIMS];       /* connections holding claims, -1: none */
	unsigned claim_job[TD_CLAIMS]; /* ... the jobs they claim */
};

/* 1 when something accepts connections on path. */
static inline int td_listening(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	int ok = s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

/* Start a daemon named by tag with extra arguments (NULL-ended, may be
 * empty); 0 once it listens, -1 otherwise. */
static inline int td_start(struct td *t, const char *tag, const char *const *extra)
{
	const char *ppd = getenv("PPD");
	t->pid = -1;
	for (int i = 0; i < TD_CLAIMS; i++)
		t->claim_fd[i] = -1;
	if (!ppd)
		return -1;
	snprintf(t->dir, sizeof(t->dir), "/tmp/pp-test-%s.XXXXXX", tag);
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(t->sock, sizeof(t->sock), "%s/ppd.sock", t->dir);
	snprintf(t->link, sizeof(t->link), "sim:%s%d/0", tag, (int)getpid());
	const char *argv[32] = {ppd,	   "--dev", t->link,	  "--socket", t->sock,
				"--cores", "0",	    "--drain-ms", "2000"};
	int n = 9;
	for (int i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	t->pid = fork();
	if (t->pid == 0) {
		execv(ppd, (char *const *)argv);
		_exit(127);
	}
	prctl(PR_SET_PTRACER, (unsigned long)t->pid, 0, 0, 0);
	for (int i = 0; i < 500 && !td_listening(t->sock); i++)
		usleep(10000);
	return td_listening(t->sock) ? 0 : -1;
}

/* Stop it with SIGTERM; 0 when it exited with status 0. */
static inline int td_stop(struct td *t)
{
	int st = -1;
	for (int i = 0; i < TD_CLAIMS; i++)
		if (t->claim_fd[i] >= 0) {
			close(t->claim_fd[i]);
			t->claim_fd[i] = -1;
		}
	if (t->pid > 0) {
		kill(t->pid, SIGTERM);
		waitpid(t->pid, &st, 0);
		t->pid = -1;
	}
	unlink(t->sock);
	rmdir(t->dir);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Become uid (and gid uid, no other groups) for good, dumpable as a user's
 * process started as that user is (a set*id call makes it not, and the
 * daemon reaches a rank's memory only as the kernel lets that user). For a
 * root test's child; exits with status 3 when it cannot. */
static inline void td_become(unsigned uid)
{
	if (setgroups(0, NULL) || setgid((gid_t)uid) || setuid((uid_t)uid))
		_exit(3);
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

/* The incarnation these tests give rank of job. */
static inline unsigned inc_of(unsigned job, unsigned rank)
{
	return 0x1000 + job * 16 + rank;
}

/* Claim job for uid's ranks giving token (as sent: ppd_token_hash of a
 * PP_TOKEN text), size ranks (0: the first rank's) at the daemon on sock.
 * The connection holding the claim (>= 0), or the daemon's refusal
 * (negative errno; its message in why, when not NULL). */
static inline int td_claim_at(const char *sock, unsigned job, unsigned uid, uint64_t token,
			      unsigned size, char *why, size_t why_len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (s >= 0)
			close(s);
		return -ENODEV;
	}
	struct ppd_claim_req req = {.magic = PPD_CLAIM_MAGIC,
				    .version = PPD_VERSION,
				    .job = job,
				    .size = size,
				    .uid = uid,
				    .token = token};
	struct ppd_attach_rep rep;
	struct timeval tv = {.tv_sec = 3};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	send(s, &req, sizeof(req), MSG_NOSIGNAL);
	if (recv(s, &rep, sizeof(rep), 0) != (ssize_t)sizeof(rep)) {
		close(s);
		return -EPROTO;
	}
	rep.message[sizeof(rep.message) - 1] = '\0';
	if (why)
		snprintf(why, why_len, "%s", rep.message);
	if (rep.status) {
		close(s);
		return rep.status;
	}
	return s;
}

/* Claim job at daemon t for this uid (token as sent, size ranks); t holds
 * the claim until td_stop. 0, or the daemon's refusal (-errno). */
static inline int td_claim(struct td *t, unsigned job, uint64_t token, unsigned size)
{
	int i = 0;
	while (i < TD_CLAIMS && t->claim_fd[i] >= 0)
		i++;
	if (i == TD_CLAIMS)
		return -ENOSPC;
	int fd = td_claim_at(t->sock, job, (unsigned)getuid(), token, size, NULL, 0);
	if (fd < 0)
		return fd;
	t->claim_fd[i] = fd;
	t->claim_job[i] = job;
	return 0;
}

/* Attach rank of job (size ranks, job token token, in hex as sent) as a
 * ppd port, claiming the job first unless t holds its claim already. */
static inline int td_open_token(struct td *t, struct pp_port **p, unsigned job, unsigned rank,
				unsigned size, const char *token)
{
	int held = 0;
	for (int i = 0; i < TD_CLAIMS; i++)
		held |= t->claim_fd[i] >= 0 && t->claim_job[i] == job;
	if (!held)
		td_claim(t, job, strtoull(token, NULL, 16), size); /* a refusal shows below */
	char dev[256];
	snprintf(dev, sizeof(dev),
		 "ppd:job=%u,rank=%u,size=%u,inc=%u,token=%s,timeout=5000,path=%s", job, rank, size,
		 inc_of(job, rank), token, t->sock);
	return pp_port_open(p, dev, NULL);
}

static inline int td_open(struct td *t, struct pp_port **p, unsigned job, unsigned rank,
			  unsigned size)
{
	return td_open_token(t, p, job, rank, size, "0");
}

/* Wait up to about 2 s for one frame on p; its length, or -1. */
static inline int td_recv(struct pp_port *p, uint8_t *out, size_t cap)
{
	struct pp_buf *b;
	/* By the clock: a count of usleep(10) calls was 2 s on paper and 16 s
	 * where a short sleep takes 80 us. */
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (pp_port_rx_burst(p, 0, &b, 1) == 1) {
			int len = (int)b->len;
			memcpy(out, b->data, b->len < cap ? b->len : cap);
			pp_port_free(p, &b, 1);
			return len;
		}
		usleep(10);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 2000000000L);
	return -1;
}

/* A frame with headers only (and ext_len bytes of ext appended), from
 * (job, src) in incarnation src_inc to dst's incarnation dst_inc. */
static inline int td_send_inc(struct pp_port *p, uint8_t type, unsigned job, unsigned src,
			      unsigned dst, unsigned src_inc, unsigned dst_inc, unsigned id,
			      void *ext, uint32_t ext_len, void (*done)(void *), void *arg)
{
	struct pp_port_info pi;
	struct pp_buf *b;
	pp_port_info(p, &pi);
	if (pp_port_alloc(p, &b, 1) != 1)
		return -ENOMEM;
	struct pp_wire_hdr h = {.type = type,
				.job = job,
				.src_rank = src,
				.dst_rank = dst,
				.msg_id = id,
				.src_inc = src_inc,
				.dst_inc = dst_inc};
	b->len = (uint32_t)pp_wire_encode(b->data, b->cap, pi.mac, pi.mac, &h, NULL);
	if (ext) {
		int rc = pp_port_attach_ext(p, b, ext, ext_len, done, arg);
		if (rc) {
			pp_port_free(p, &b, 1);
			return rc;
		}
	}
	return pp_port_tx_burst(p, 0, &b, 1) == 1 ? 0 : -EAGAIN;
}

/* The same between the incarnations these tests give the ranks. */
static inline int td_send(struct pp_port *p, uint8_t type, unsigned job, unsigned src, unsigned dst,
			  unsigned id, void *ext, uint32_t ext_len, void (*done)(void *), void *arg)
{
	return td_send_inc(p, type, job, src, dst, inc_of(job, src), inc_of(job, dst), id, ext,
			   ext_len, done, arg);
}

/* A 32-bit header field of a received frame. */
static inline uint32_t td_field32(const uint8_t *frame, unsigned off)
{
	const uint8_t *p = frame + PP_ETH_HLEN + off;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ppd --stats of daemon t into out (NUL-ended); 0 when it answered. */
static inline int td_stats(const struct td *t, char *out, size_t cap)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "timeout 5 %s --stats --socket %s", getenv("PPD"), t->sock);
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	size_t n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	return pclose(f) == 0 && n > 0 ? 0 : -1;
}

/* The sum over handlers of counter name= in a stats text, or -1. */
static inline long long td_counter(const char *stats, const char *name)
{
	char key[64];
	snprintf(key, sizeof(key), " %s=", name);
	long long sum = -1;
	for (const char *p = strstr(stats, key); p; p = strstr(p + 1, key))
		sum = (sum < 0 ? 0 : sum) + atoll(p + strlen(key));
	return sum;
}

/* Frames sent to the NIC by every handler (the nic_tx column), or -1. */
static inline long long td_nic_tx(const char *stats)
{
	long long sum = -1;
	for (const char *l = stats; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		int h, core, ranks;
		unsigned long long rx, tx;
		if (*l >= '0' && *l <= '9' &&
		    sscanf(l, "%d %d %d %llu %llu", &h, &core, &ranks, &rx, &tx) == 5)
			sum = (sum < 0 ? 0 : sum) + (long long)tx;
	}
	return sum;
}

#endif
