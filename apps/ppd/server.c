/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ppd's UNIX socket, main thread only (cold path): the listening socket and
 * the connections that have not sent their request yet. Nothing here
 * blocks: every connection is non-blocking and has PPD_CONN_NS to send its
 * one request (an attach, a claim or a stats request), after which it is
 * closed (or taken by the rank or the claim it made), so no client can hold
 * the main thread.
 *
 * Fair admission: at most PPD_PENDING connections wait at once, at most
 * PPD_PENDING_UID of them from one uid. A connection of a uid that has its
 * share waiting closes that uid's own oldest one; one that finds the table
 * full closes the oldest of the uid with the most waiting. So a uid that
 * opens connections without end evicts only its own, and never another
 * user's attach.
 *
 * Who may connect: the socket is made mode 0600 (0660 and owned by the
 * group with --group), and the credentials the kernel gives for the
 * connection (SO_PEERCRED) must be root's, the daemon's own uid, or, with
 * --group, those of a member of that group; anyone else is refused before
 * a byte is read. The peer's process is pinned at once by a pidfd (taken
 * from the connection itself where the kernel can, SO_PEERPIDFD, else opened
 * from its pid right away and refused if that process has already exited),
 * so a pid reused later can never stand for the rank.
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "pp_log.h"
#include "ppd.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

void ppd_reply(int c, int status, uint64_t region, const int *fds, int nfds, const char *fmt, ...)
{
	struct ppd_attach_rep rep = {.status = status, .region = region};
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(rep.message, sizeof(rep.message), fmt, ap);
		va_end(ap);
		pp_warn("ppd: refused a request: %s", rep.message);
	}
	struct iovec iov = {&rep, sizeof(rep)};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds > 0 && nfds <= 2) {
		mh.msg_control = cm.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(h), fds, (size_t)nfds * sizeof(int));
	}
	if (sendmsg(c, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		pp_warn("ppd: cannot answer a rank: %s", strerror(errno));
}

int ppd_server_open(struct ppd_server *s, const char *path, const char *group)
{
	*s = (struct ppd_server){.lfd = -1, .path = path};
	for (int i = 0; i < PPD_PENDING; i++)
		s->conn[i].fd = s->conn[i].pidfd = -1;
	if (group) {
		struct group *g = getgrnam(group);
		if (!g) {
			fprintf(stderr, "ppd: --group %s: no such group\n", group);
			return -1;
		}
		s->gid = g->gr_gid;
		s->grouped = 1;
	}
	char dir[108];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "ppd: cannot create %s: %s\n", dir, strerror(errno));
			return -1;
		}
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	/* A socket nobody answers on is left over from a daemon that died. */
	int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		fprintf(stderr, "ppd: a daemon is already serving %s\n", path);
		close(probe);
		close(fd);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	unlink(path);
	/* Made 0600 from the start, then opened to the group if asked: there
	 * is no moment when anyone else may connect. */
	mode_t old = umask(0177);
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc == 0 && s->grouped &&
	    (chown(path, (uid_t)-1, s->gid) != 0 || chmod(path, 0660) != 0))
		rc = -1;
	if (rc != 0 || listen(fd, 64) != 0) {
		fprintf(stderr, "ppd: cannot listen on %s: %s\n", path, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	s->lfd = fd;
	return 0;
}

/* Close a client's connection. What it sent and we did not read is read
 * first (a few messages, without waiting): a UNIX socket closed with unread
 * data resets the other end, which would then lose our answer. */
static void client_close(int fd)
{
	char junk[64];
	for (int i = 0; i < 8 && recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
}

static void conn_close(struct ppd_conn *c)
{
	if (c->fd >= 0)
		client_close(c->fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->fd = c->pidfd = -1;
}

void ppd_server_close(struct ppd_server *s)
{
	if (s->lfd >= 0) {
		close(s->lfd);
		unlink(s->path);
		s->lfd = -1;
	}
	for (int i = 0; i < PPD_PENDING; i++)
		conn_close(&s->conn[i]);
}

/* 1 when the peer of connection fd (credentials cr) may attach here. */
static int allowed(const struct ppd_server *s, int fd, const struct ucred *cr)
{
	if (cr->uid == 0 || cr->uid == geteuid())
		return 1;
	if (!s->grouped)
		return 0;
	if (cr->gid == s->gid)
		return 1;
	gid_t gs[256];
	socklen_t len = sizeof(gs);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, gs, &len) != 0)
		return 0;
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (gs[i] == s->gid)
			return 1;
	return 0;
}

/* A pidfd of the process at the other end of fd, or -1 when there is none
 * that surely is that process (it has exited, or the kernel has no pidfds). */
static int peer_pidfd(int fd, pid_t pid)
{
	int pfd = -1;
	socklen_t len = sizeof(pfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pfd, &len) != 0) {
#ifdef SYS_pidfd_open
		pfd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
		(void)pid;
		return -1;
#endif
	}
	if (pfd < 0)
		return -1;
	/* Readable: that process has exited (and its pid may be another's). */
	struct pollfd p = {.fd = pfd, .events = POLLIN};
	if (poll(&p, 1, 0) != 0) {
		close(pfd);
		return -1;
	}
	return pfd;
}

/* The entry a new connection of uid takes (fair admission, at the top):
 * a free one while uid is below its share, else uid's own oldest when it
 * has its share, else the oldest of the uid with the most entries. */
static struct ppd_conn *conn_slot(struct ppd_server *s, uid_t uid)
{
	struct ppd_conn *free_ = NULL, *own = NULL, *most = NULL;
	int mine = 0, most_n = 0;
	for (int i = 0; i < PPD_PENDING; i++) {
		struct ppd_conn *e = &s->conn[i];
		if (e->fd < 0) {
			free_ = free_ ? free_ : e;
			continue;
		}
		int n = 0;
		for (int k = 0; k < PPD_PENDING; k++)
			n += s->conn[k].fd >= 0 && s->conn[k].cr.uid == e->cr.uid;
		if (n > most_n || (n == most_n && e->deadline < most->deadline)) {
			most = e;
			most_n = n;
		}
		if (e->cr.uid == uid) {
			mine++;
			if (!own || e->deadline < own->deadline)
				own = e;
		}
	}
	if (mine >= PPD_PENDING_UID)
		return own;
	return free_ ? free_ : most;
}

void ppd_server_accept(struct ppd_server *s, uint64_t now)
{
	for (int k = 0; k < PPD_PENDING; k++) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
			close(fd);
			continue;
		}
		if (!allowed(s, fd, &cr)) {
			ppd_reply(fd, -EPERM, 0, NULL, 0, "uid %u may not use this daemon", cr.uid);
			client_close(fd);
			continue;
		}
		int pidfd = peer_pidfd(fd, cr.pid);
		if (pidfd < 0) {
			ppd_reply(fd, -ESRCH, 0, NULL, 0, "pid %d: no pidfd for it (exited?)",
				  (int)cr.pid);
			client_close(fd);
			continue;
		}
		struct ppd_conn *c = conn_slot(s, cr.uid);
		conn_close(c);
		*c = (struct ppd_conn){
		    .fd = fd, .pidfd = pidfd, .cr = cr, .deadline = now + PPD_CONN_NS};
	}
}

/* The daemon's counters on connection c: text, or JSON when asked
 * (PPD_STATS_JSON). */
static void stats_reply(const struct ppd *d, int c, uint32_t format)
{
	static char text[65536];
	if (format == PPD_STATS_JSON) {
		FILE *f = fmemopen(text, sizeof(text), "w");
		int rc = f ? ppd_stats_json(d, f) : -ENOMEM;
		if (f)
			fclose(f);
		if (rc) { /* the client says it got nothing */
			pp_warn("ppd: --stats --json: the counters do not fit (%d)", rc);
			return;
		}
	} else {
		ppd_stats_format(d, text, sizeof(text));
	}
	size_t n = strlen(text);
	for (size_t o = 0; o < n; o += 4000)
		if (send(c, text + o, n - o < 4000 ? n - o : 4000, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			break;
}

void ppd_server_input(struct ppd *d, struct ppd_server *s, int i)
{
	struct ppd_conn *c = &s->conn[i];
	union {
		struct ppd_attach_req a; /* attach or stats (magic first in both) */
		struct ppd_claim_req c;	 /* claim */
	} u;
	ssize_t n = recv(c->fd, &u, sizeof(u), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	size_t want = n >= 4 && u.a.magic == PPD_CLAIM_MAGIC ? sizeof(u.c) : sizeof(u.a);
	if (n != (ssize_t)want) {
		if (n > 0)
			ppd_reply(c->fd, -EPROTO, 0, NULL, 0, "a request of %zd bytes, not %zu", n,
				  want);
		conn_close(c);
		return;
	}
	const struct ppd_attach_req req = u.a;
	struct pollfd pf = {.fd = c->pidfd, .events = POLLIN};
	if (poll(&pf, 1, 0) != 0)
		/* The process that connected is gone; another holds its socket. */
		ppd_reply(c->fd, -ESRCH, 0, NULL, 0, "pid %d, which connected, has exited",
			  (int)c->cr.pid);
	else if (req.magic == PPD_STATS_MAGIC)
		stats_reply(d, c->fd, req.rank);
	else if (req.magic == PPD_CLAIM_MAGIC)
		ppd_claim_serve(d, c, &u.c);
	else if (req.magic != PPD_MAGIC)
		ppd_reply(c->fd, -EPROTO, 0, NULL, 0, "not a ppd request");
	else if (ppd_rank_attach(d, c, &req) == 0)
		atomic_fetch_add(&d->nattached, 1);
	conn_close(c); /* its pidfd alone when a rank or a claim took the connection */
}

void ppd_server_expire(struct ppd_server *s, uint64_t now)
{
	for (int i = 0; i < PPD_PENDING; i++)
		if (s->conn[i].fd >= 0 && now >= s->conn[i].deadline)
			conn_close(&s->conn[i]);
}
