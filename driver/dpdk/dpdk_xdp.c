/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * af_xdp ports after a crash.
 *
 * A process killed with an af_xdp port open leaves two things behind:
 *
 * - The XDP program libxdp attached for it (xsk_def_prog; "legacy", one
 *   program on the interface, where libxdp's dispatcher cannot load). Only
 *   a clean close detaches it. Left there it caps the MTU of a veth and of
 *   its peer, and libxdp reuses it through a reference count kept inside
 *   the program that the dead process never gave back (one that had reached
 *   0, "being detached", makes libxdp load a second program, which cannot
 *   attach over the first: every later open fails).
 * - Its claim on the queue. The kernel releases a closed socket's buffer
 *   pool, and with it the queue, from a work item some time after the
 *   socket is gone (here up to ~25 ms after the killed process was reaped);
 *   a bind before that fails with EBUSY, which the PMD reports as EINVAL.
 *
 * So before the PMD binds, the live AF_XDP sockets of this network namespace
 * are looked at: which interface and queue each is bound to where the
 * kernel has sock_diag for AF_XDP (CONFIG_XDP_SOCKETS_DIAG), else how many
 * there are (/proc/net/protocols). A queue bound by a live socket is an
 * error naming its process; xsk_def_prog with no socket that could use it
 * is detached (only that program: the detach names it); on veth, a queue
 * still claimed is waited for, bounded. The claim is seen by binding a
 * small socket for zero-copy, which veth refuses right after the kernel's
 * "queue in use" check, before anything is registered.
 */
#include "dpdk_xdp.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/if_xdp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <linux/xdp_diag.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#ifdef PP_HAVE_LIBBPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#endif

#include "pp_log.h"

#ifndef SOL_XDP
#define SOL_XDP 283
#endif

#define MAX_XSKS     256 /* sockets of one interface looked at */
#define POLL_MS	     5	 /* between two looks at a held queue */
#define XSK_DEF_PROG "xsk_def_prog"

/* One AF_XDP socket bound to the interface. */
struct xsk_seen {
	uint32_t ino;	/* socket inode */
	uint32_t queue; /* queue it is bound to */
};

/* The AF_XDP sockets of this namespace bound to ifindex, at most max of them
 * into out. Returns how many, or -errno when the kernel cannot tell. */
static int list_xsks(unsigned ifindex, struct xsk_seen *out, int max)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	struct {
		struct nlmsghdr nlh;
		struct xdp_diag_req req;
	} msg;
	memset(&msg, 0, sizeof(msg));
	msg.nlh.nlmsg_len = sizeof(msg);
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	msg.req.sdiag_family = AF_XDP;
	msg.req.xdiag_show = XDP_SHOW_INFO;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	int n = 0, rc = 0;
	if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		goto out;
	}
	for (;;) {
		_Alignas(struct nlmsghdr) char buf[16384];
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0 && errno == EINTR)
			continue;
		if (len <= 0) {
			rc = len < 0 ? -errno : -EIO;
			goto out;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE)
				goto out;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				rc = e->error ? e->error : -EIO;
				goto out;
			}
			const struct xdp_diag_msg *m = NLMSG_DATA(h);
			int alen = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*m));
			for (const struct rtattr *a = (const struct rtattr *)(m + 1);
			     RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				const struct xdp_diag_info *i = RTA_DATA(a);
				if (a->rta_type == XDP_DIAG_INFO && i->ifindex == ifindex &&
				    n < max)
					out[n++] = (struct xsk_seen){m->xdiag_ino, i->queue_id};
			}
		}
	}
out:
	close(fd);
	return rc < 0 ? rc : n;
}

/* "process PID (COMM)" holding socket inode ino open, into out. */
static void socket_owner(uint32_t ino, char *out, size_t cap)
{
	char want[32], path[512], link[64];
	snprintf(want, sizeof(want), "socket:[%u]", ino);
	snprintf(out, cap, "a process not found in /proc");
	DIR *proc = opendir("/proc");
	if (!proc)
		return;
	for (struct dirent *p; (p = readdir(proc));) {
		long pid = atol(p->d_name);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
		DIR *fds = opendir(path);
		if (!fds)
			continue;
		int found = 0;
		for (struct dirent *f; !found && (f = readdir(fds));) {
			snprintf(path, sizeof(path), "/proc/%ld/fd/%s", pid, f->d_name);
			ssize_t n = readlink(path, link, sizeof(link) - 1);
			found = n > 0 && (link[n] = 0, strcmp(link, want) == 0);
		}
		closedir(fds);
		if (!found)
			continue;
		char comm[32] = "?";
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		FILE *c = fopen(path, "r");
		if (c) {
			if (fgets(comm, sizeof(comm), c))
				comm[strcspn(comm, "\n")] = 0;
			fclose(c);
		}
		if (pid == (long)getpid())
			snprintf(out, cap,
				 "this process (%ld, %s): a port on it closed earlier keeps its "
				 "socket until the process exits (DPDK 22.11's af_xdp)",
				 pid, comm);
		else
			snprintf(out, cap, "process %ld (%s)", pid, comm);
		break;
	}
	closedir(proc);
}

/* Live AF_XDP sockets in this network namespace (the "sockets" column of
 * /proc/net/protocols, which is per namespace), or -1 when unknown. */
static int xsks_in_namespace(void)
{
	FILE *f = fopen("/proc/net/protocols", "r");
	if (!f)
		return -1;
	char line[256];
	int n = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "XDP %*u %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* AF_XDP sockets this process has open. */
static int own_xsks(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 0;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		int fd = atoi(e->d_name), domain = 0;
		socklen_t len = sizeof(domain);
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd != dirfd(d) &&
		    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_XDP)
			n++;
	}
	closedir(d);
	return n;
}

/* 1 when iface is a veth (the kernel driver ethtool names). */
static int is_veth(const char *iface)
{
	struct ethtool_drvinfo di = {.cmd = ETHTOOL_GDRVINFO};
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	ifr.ifr_data = (void *)&di;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	int rc = ioctl(fd, SIOCETHTOOL, &ifr);
	close(fd);
	return rc == 0 && strcmp(di.driver, "veth") == 0;
}

/* -EBUSY while a socket, live or closed but not released yet, holds queue q
 * of ifindex; 0 or another negative errno when not. Only for devices without
 * zero-copy (veth): there the bind fails right after the queue check. */
static int queue_held(unsigned ifindex, unsigned q)
{
	int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = 4 * pg;
	void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		close(fd);
		return -ENOMEM;
	}
	struct xdp_umem_reg reg;
	memset(&reg, 0, sizeof(reg));
	reg.addr = (uintptr_t)mem;
	reg.len = len;
	reg.chunk_size = (uint32_t)pg;
	int ring = 4, rc = 0;
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)) ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &ring, sizeof(ring)) ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &ring, sizeof(ring)) ||
	    setsockopt(fd, SOL_XDP, XDP_RX_RING, &ring, sizeof(ring))) {
		rc = -errno;
	} else {
		struct sockaddr_xdp sx = {.sxdp_family = AF_XDP,
					  .sxdp_ifindex = ifindex,
					  .sxdp_queue_id = q,
					  .sxdp_flags = XDP_ZEROCOPY};
		rc = bind(fd, (struct sockaddr *)&sx, sizeof(sx)) ? -errno : 0;
	}
	close(fd);
	munmap(mem, len);
	return rc;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

#ifdef PP_HAVE_LIBBPF
/* Detach libxdp's AF_XDP program from ifindex, which no socket uses. */
static void detach_stale_prog(const char *iface, unsigned ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	if (bpf_xdp_query((int)ifindex, 0, &q) < 0)
		return;
	uint32_t id, mode;
	if (q.attach_mode == XDP_ATTACHED_DRV) {
		id = q.drv_prog_id;
		mode = XDP_FLAGS_DRV_MODE;
	} else if (q.attach_mode == XDP_ATTACHED_SKB) {
		id = q.skb_prog_id;
		mode = XDP_FLAGS_SKB_MODE;
	} else {
		return; /* none, offloaded, or several: not libxdp's AF_XDP program */
	}
	int fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return;
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && strcmp(info.name, XSK_DEF_PROG) == 0) {
		LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = fd);
		int rc = bpf_xdp_detach((int)ifindex, mode | XDP_FLAGS_REPLACE, &o);
		if (rc == 0)
			pp_warn(
			    "dpdk: %s: detached XDP program %s (id %u) left by an AF_XDP process "
			    "that is gone (no live AF_XDP socket could be using it)",
			    iface, XSK_DEF_PROG, id);
		else
			pp_info("dpdk: %s: cannot detach the unused XDP program %s (id %u): %s",
				iface, XSK_DEF_PROG, id, strerror(-rc));
	}
	close(fd);
}
#endif

/* Wait, bounded, until no socket holds queue q of iface (a veth). */
static int wait_queue(const char *iface, unsigned ifindex, unsigned q)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = queue_held(ifindex, q), warned = 0;
	while (rc == -EBUSY && ms_since(&t0) < PP_XSK_RELEASE_WAIT_MS) {
		if (!warned++)
			pp_warn(
			    "dpdk: %s: queue %u is still taken by an AF_XDP socket; waiting up to "
			    "%d ms for the kernel to release it (it does so some time after the "
			    "socket is closed)",
			    iface, q, PP_XSK_RELEASE_WAIT_MS);
		struct timespec t = {0, POLL_MS * 1000000L};
		nanosleep(&t, NULL);
		rc = queue_held(ifindex, q);
	}
	if (rc != -EBUSY) {
		if (warned)
			pp_warn("dpdk: %s: queue %u released after %ld ms", iface, q,
				ms_since(&t0));
		return 0;
	}
	int own = own_xsks();
	if (own > 0)
		pp_err("dpdk: %s: queue %u still taken after %d ms; this process has %d AF_XDP "
		       "socket(s) open (DPDK 22.11's af_xdp keeps the socket of a closed port "
		       "until the process exits)",
		       iface, q, PP_XSK_RELEASE_WAIT_MS, own);
	else
		pp_err("dpdk: %s: queue %u still taken after %d ms (%d AF_XDP socket(s) open in "
		       "this network namespace)",
		       iface, q, PP_XSK_RELEASE_WAIT_MS, xsks_in_namespace());
	return -EBUSY;
}

int pp_dpdk_xdp_prepare(const char *iface, unsigned start, unsigned count)
{
	unsigned ifindex = if_nametoindex(iface);
	if (!ifindex)
		return 0; /* the PMD says the interface is missing */
	struct xsk_seen seen[MAX_XSKS];
	/* Live sockets that may use iface: those bound to it, else all. */
	int users = list_xsks(ifindex, seen, MAX_XSKS);
	for (int i = 0; i < users; i++) {
		if (seen[i].queue < start || seen[i].queue - start >= count)
			continue;
		char owner[192];
		socket_owner(seen[i].ino, owner, sizeof(owner));
		pp_err("dpdk: %s: queue %u is bound by an AF_XDP socket of %s", iface,
		       seen[i].queue, owner);
		return -EBUSY;
	}
	if (users < 0)
		users = xsks_in_namespace();
#ifdef PP_HAVE_LIBBPF
	if (users == 0)
		detach_stale_prog(iface, ifindex);
#endif
	if (!is_veth(iface))
		return 0;
	for (unsigned q = start; q < start + count; q++) {
		int rc = wait_queue(iface, ifindex, q);
		if (rc)
			return rc;
	}
	return 0;
}
