/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ppd: the node daemon (see ppd.h for its threads and ppd_shm.h for what it
 * shares with a rank). This file is the main thread: options, the UNIX
 * socket (attach and stats requests), rank deaths, SIGTERM. Cold path.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "affinity.h"
#include "pp_log.h"
#include "ppd.h"
#include "sim/pp_sim.h"

#define DRAIN_MS_DEFAULT 5000

struct opts {
	const char *dev;    /* --dev */
	const char *sock;   /* --socket */
	const char *node;   /* --node */
	const char *cores;  /* --cores */
	int topology;	    /* --topology */
	int stats;	    /* --stats */
	int tx_copy;	    /* --tx-copy */
	int no_pull_serve;  /* --no-pull-serve */
	int no_place;	    /* --no-place */
	unsigned drain_ms;  /* --drain-ms */
	char sock_buf[108]; /* default socket path */
};

static void usage(FILE *f)
{
	fputs("usage: ppd --dev DEVARGS [options]        run the node daemon\n"
	      "       ppd --topology [--dev DEVARGS] [--cores LIST]\n"
	      "       ppd --stats [--socket PATH | --node NAME]\n"
	      "The librt-pp node daemon: owns the node's port and serves every rank that\n"
	      "sets daemon=SOCKET (PP_DAEMON) through rings in shared memory.\n\n"
	      "  --dev DEVARGS   the port, as the dev key: DPDK EAL arguments such as\n"
	      "                  --dev=--vdev=net_af_packet0,iface=eth1, or pcap:IFACE;\n"
	      "                  sim:NAME/0 is an in-memory link of its own (tests: only\n"
	      "                  the ranks of this node, through the daemon's loopback)\n"
	      "  --socket PATH   UNIX socket ranks attach to (default " PPD_SOCKET_PREFIX
	      "NODE.sock)\n"
	      "  --node NAME     node name for the default socket (default $PP_NODE, else\n"
	      "                  the host name)\n"
	      "  --cores LIST    one pull-handler thread per listed core (e.g. 0 or 1-3);\n"
	      "                  default: one per physical core on the NIC's NUMA node\n"
	      "  --drain-ms N    on SIGTERM, wait up to N ms for ranks to detach (default 5000)\n"
	      "  --tx-copy       copy every frame out of the ranks' slots (default: large\n"
	      "                  frames to other nodes leave straight from the slot where\n"
	      "                  the port supports external buffers)\n"
	      "  --no-pull-serve leave every PULL to the rank's own engine (default: the\n"
	      "                  handlers send the pulled bytes of a rank's sends, so a\n"
	      "                  rank busy computing still answers PULLs)\n"
	      "  --no-place      hand every DATA frame to its rank whole (default: the\n"
	      "                  payload of a large one is written straight into the\n"
	      "                  receive buffer the rank described, one copy in all)\n"
	      "  --topology      print cores, caches, NUMA nodes, the NIC's node and the\n"
	      "                  handler placement, then exit\n"
	      "  --stats         print the running daemon's per-handler counters, then exit\n"
	      "  -h, --help      this text\n"
	      "SIGTERM or SIGINT: stop taking ranks, wait for attached ones, exit 0.\n",
	      f);
}

static void parse(int argc, char **argv, struct opts *o)
{
	enum {
		O_DEV = 256,
		O_SOCK,
		O_NODE,
		O_CORES,
		O_TOPO,
		O_STATS,
		O_DRAIN,
		O_TXCOPY,
		O_NOPULL,
		O_NOPLACE
	};
	static const struct option lo[] = {
	    {"dev", required_argument, NULL, O_DEV},
	    {"socket", required_argument, NULL, O_SOCK},
	    {"node", required_argument, NULL, O_NODE},
	    {"cores", required_argument, NULL, O_CORES},
	    {"drain-ms", required_argument, NULL, O_DRAIN},
	    {"topology", no_argument, NULL, O_TOPO},
	    {"stats", no_argument, NULL, O_STATS},
	    {"tx-copy", no_argument, NULL, O_TXCOPY},
	    {"no-pull-serve", no_argument, NULL, O_NOPULL},
	    {"no-place", no_argument, NULL, O_NOPLACE},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	*o = (struct opts){.drain_ms = DRAIN_MS_DEFAULT};
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		char *end;
		switch (c) {
		case O_DEV:
			o->dev = optarg;
			break;
		case O_SOCK:
			o->sock = optarg;
			break;
		case O_NODE:
			o->node = optarg;
			break;
		case O_CORES:
			o->cores = optarg;
			break;
		case O_TOPO:
			o->topology = 1;
			break;
		case O_STATS:
			o->stats = 1;
			break;
		case O_TXCOPY:
			o->tx_copy = 1;
			break;
		case O_NOPULL:
			o->no_pull_serve = 1;
			break;
		case O_NOPLACE:
			o->no_place = 1;
			break;
		case O_DRAIN:
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v > 600000) {
				fprintf(stderr, "ppd: --drain-ms wants 0..600000 (got '%s')\n",
					optarg);
				exit(2);
			}
			o->drain_ms = (unsigned)v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ppd: unexpected argument '%s' (see --help)\n", argv[optind]);
		exit(2);
	}
	if (!o->sock) {
		char host[64];
		const char *node = o->node ? o->node : getenv("PP_NODE");
		if (!node || !*node) {
			if (gethostname(host, sizeof(host)) != 0)
				strcpy(host, "local");
			host[sizeof(host) - 1] = '\0';
			node = host;
		}
		if (strchr(node, '/')) {
			fprintf(stderr, "ppd: node name '%s' may not contain '/'\n", node);
			exit(2);
		}
		snprintf(o->sock_buf, sizeof(o->sock_buf), "%s%.60s.sock", PPD_SOCKET_PREFIX, node);
		o->sock = o->sock_buf;
	}
	if (strlen(o->sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		fprintf(stderr, "ppd: socket path too long: %s\n", o->sock);
		exit(2);
	}
}

/* --- ppd --stats ------------------------------------------------------------ */

static int stats_client(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strcpy(sa.sun_path, path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "ppd: no daemon at %s: %s\n", path, strerror(errno));
		if (s >= 0)
			close(s);
		return 1;
	}
	struct ppd_attach_req req = {.magic = PPD_STATS_MAGIC, .version = PPD_VERSION};
	if (send(s, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req)) {
		fprintf(stderr, "ppd: %s: %s\n", path, strerror(errno));
		close(s);
		return 1;
	}
	char buf[4096];
	ssize_t n;
	int any = 0;
	while ((n = recv(s, buf, sizeof(buf), 0)) > 0) {
		fwrite(buf, 1, (size_t)n, stdout);
		any = 1;
	}
	close(s);
	if (!any) {
		fprintf(stderr, "ppd: the daemon at %s sent no counters\n", path);
		return 1;
	}
	return 0;
}

/* --- attach ----------------------------------------------------------------- */

static uint32_t round_up(uint64_t v, uint64_t a)
{
	return (uint32_t)((v + a - 1) / a * a);
}

/* Answer on connection c: status, and the memfd when status is 0. */
static void reply(int c, int status, uint64_t region, int fd, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void reply(int c, int status, uint64_t region, int fd, const char *fmt, ...)
{
	struct ppd_attach_rep rep = {.status = status, .region = region};
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(rep.message, sizeof(rep.message), fmt, ap);
		va_end(ap);
		pp_warn("ppd: refused an attach: %s", rep.message);
	}
	struct iovec iov = {&rep, sizeof(rep)};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &fd, sizeof(int));
	}
	if (sendmsg(c, &mh, MSG_NOSIGNAL) < 0)
		pp_warn("ppd: cannot answer a rank: %s", strerror(errno));
}

/* Create, seal and format the region of rank r. Errors: -errno. */
static int make_region(struct ppd *d, struct ppd_rank *r, int *memfd)
{
	uint64_t rb = pp_shm_ring_bytes(PPD_RING_CELLS);
	uint64_t tx_ring = PPD_HDR_BYTES;
	uint64_t rx_ring = round_up(tx_ring + rb, 4096);
	uint64_t tx_slot = round_up(rx_ring + rb, 4096);
	uint64_t rx_slot = tx_slot + (uint64_t)d->slot_bytes * PPD_TX_SLOTS;
	uint64_t total = round_up(rx_slot + (uint64_t)d->slot_bytes * PPD_RX_SLOTS, 4096);
	int fd = memfd_create("ppd-rank", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* Sealed: the rank cannot shrink it under the daemon (SIGBUS). */
	if (ftruncate(fd, (off_t)total) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;
		close(fd);
		return -e;
	}
	r->mem = m;
	r->mem_len = total;
	r->hdr = m;
	*r->hdr = (struct ppd_region_hdr){
	    .magic = PPD_MAGIC,
	    .version = PPD_VERSION,
	    .job = r->job,
	    .rank = r->rank,
	    .mtu = d->info.mtu,
	    .slot_bytes = d->slot_bytes,
	    .tx_slots = PPD_TX_SLOTS,
	    .rx_slots = PPD_RX_SLOTS,
	    .tx_ring_off = tx_ring,
	    .rx_ring_off = rx_ring,
	    .tx_slot_off = tx_slot,
	    .rx_slot_off = rx_slot,
	};
	memcpy(r->hdr->mac, d->info.mac, 6);
	r->tx_slots = r->mem + tx_slot;
	r->rx_slots = r->mem + rx_slot;
	/* Attached here, before the rank can write anything: the geometry
	 * each side keeps is the daemon's, not what the region says later. */
	pp_shm_ring_format(r->mem + tx_ring, PPD_RING_CELLS);
	pp_shm_ring_format(r->mem + rx_ring, PPD_RING_CELLS);
	pp_shm_ring_attach(&r->tx, r->mem + tx_ring);
	pp_shm_ring_attach(&r->rx, r->mem + rx_ring);
	atomic_flag_clear(&r->rx_lock);
	for (uint32_t i = 0; i < PPD_RX_SLOTS; i++) {
		r->rx_free[i] = PPD_RX_SLOTS - 1 - i;
		r->at_rank[i] = 0;
	}
	r->nrx_free = PPD_RX_SLOTS;
	r->tx_seq = r->tx_done = 0;
	memset(r->pend, 0, sizeof(r->pend));
	atomic_store(&r->zc_out, 0);
	/* Large frames leave straight from the tx slots where the port can
	 * read registered memory (DPDK external buffers). */
	r->zc = !d->tx_copy && pp_port_mem_register(d->port, r->tx_slots,
						    (size_t)d->slot_bytes * PPD_TX_SLOTS) == 0;
	*memfd = fd;
	return 0;
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/* The least loaded handler: fewest ranks, then least busy. */
static int least_loaded(const struct ppd *d)
{
	int best = 0;
	for (int i = 1; i < d->nh; i++) {
		const struct ppd_handler *a = &d->h[i], *b = &d->h[best];
		if (a->nhome < b->nhome ||
		    (a->nhome == b->nhome && __atomic_load_n(&a->c.busy_ns, __ATOMIC_RELAXED) <
						 __atomic_load_n(&b->c.busy_ns, __ATOMIC_RELAXED)))
			best = i;
	}
	return best;
}

/* A rank asks to attach on connection c (already read: req). Takes c. */
static void attach(struct ppd *d, int c, const struct ppd_attach_req *req, const struct ucred *cr)
{
	uid_t me = geteuid();
	if (cr->uid != me && cr->uid != 0) {
		reply(c, -EPERM, 0, -1, "uid %u may not attach to a daemon of uid %u", cr->uid, me);
		goto refuse;
	}
	if (req->version != PPD_VERSION || req->size == 0 || req->rank >= req->size || !req->inc) {
		reply(c, -EINVAL, 0, -1, "bad request (version %u, rank %u of %u, incarnation %u)",
		      req->version, req->rank, req->size, req->inc);
		goto refuse;
	}
	struct ppd_rank *r = NULL;
	for (int i = 0; i < PPD_MAX_RANKS; i++) {
		struct ppd_rank *e = &d->ranks[i];
		int st = atomic_load(&e->state);
		if (st != PPD_RANK_FREE && e->job == req->job && e->rank == req->rank &&
		    st == PPD_RANK_ACTIVE) {
			reply(c, -EADDRINUSE, 0, -1, "rank %u of job %u is attached already",
			      req->rank, req->job);
			goto refuse;
		}
		if (!r && st == PPD_RANK_FREE)
			r = e;
	}
	if (!r) {
		reply(c, -ENOSPC, 0, -1, "%d ranks attached: no room for more", PPD_MAX_RANKS);
		goto refuse;
	}
	r->job = req->job;
	r->rank = req->rank;
	r->size = req->size;
	r->inc = req->inc;
	r->pid = cr->pid;
	r->uid = cr->uid;
	int memfd = -1, rc = make_region(d, r, &memfd);
	if (rc) {
		reply(c, rc, 0, -1, "cannot create the shared region: %s", strerror(-rc));
		goto refuse;
	}
	r->pidfd = pidfd_open_(cr->pid);
	if (r->pidfd < 0)
		pp_info("ppd: no pidfd for pid %d (%s); watching its socket only", (int)cr->pid,
			strerror(errno));
	r->conn = c;
	r->home = least_loaded(d);
	d->h[r->home].nhome++;
	/* Active before the answer: once the rank has it, a node-mate may send
	 * to it at once, and a handler that did not see it yet would route
	 * that frame to the NIC. A rank gone before reading the answer is
	 * reaped like any dead one. */
	atomic_store_explicit(&r->state, PPD_RANK_ACTIVE, memory_order_release);
	atomic_fetch_add(&d->nattached, 1);
	reply(c, 0, r->mem_len, memfd, NULL);
	close(memfd);
	pp_info("ppd: rank %u of job %u (pid %d) attached, handler %d", r->rank, r->job,
		(int)r->pid, r->home);
	return;
refuse:
	close(c);
}

/* A new connection: an attach or a stats request. */
static void accept_one(struct ppd *d, int lfd)
{
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	struct timeval tv = {.tv_sec = 1};
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct ppd_attach_req req;
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 ||
	    recv(c, &req, sizeof(req), 0) != (ssize_t)sizeof(req)) {
		close(c);
		return;
	}
	if (req.magic == PPD_STATS_MAGIC) {
		static char text[16384];
		ppd_stats_format(d, text, sizeof(text));
		size_t n = strlen(text);
		for (size_t o = 0; o < n; o += 4000)
			if (send(c, text + o, n - o < 4000 ? n - o : 4000, MSG_NOSIGNAL) < 0)
				break;
		close(c);
		return;
	}
	if (req.magic != PPD_MAGIC) {
		reply(c, -EPROTO, 0, -1, "not a ppd request");
		close(c);
		return;
	}
	attach(d, c, &req, &cr);
}

/* --- deaths ------------------------------------------------------------------ */

static void rank_died(struct ppd_rank *r, const char *how)
{
	int expect = PPD_RANK_ACTIVE;
	if (atomic_compare_exchange_strong(&r->state, &expect, PPD_RANK_DYING))
		pp_info("ppd: rank %u of job %u left (%s)", r->rank, r->job, how);
}

/* Wait until every running handler has begun a new pass. */
static void grace(struct ppd *d)
{
	uint64_t seen[PPD_MAX_HANDLERS];
	for (int i = 0; i < d->nh; i++)
		seen[i] = atomic_load(&d->h[i].epoch);
	for (int i = 0; i < d->nh; i++)
		while (atomic_load(&d->h[i].epoch) == seen[i] && !atomic_load(&d->stop))
			usleep(50);
}

/* Free the entries whose goodbye is said. Returns entries still in use. */
static int reclaim(struct ppd *d)
{
	int used = 0;
	for (int i = 0; i < PPD_MAX_RANKS; i++) {
		struct ppd_rank *r = &d->ranks[i];
		int st = atomic_load(&r->state);
		if (st != PPD_RANK_GONE) {
			used += st != PPD_RANK_FREE;
			continue;
		}
		grace(d);
		if (atomic_load(&r->zc_out)) {
			/* The port still reads some of its slots: not yet. */
			used++;
			continue;
		}
		if (r->zc)
			pp_port_mem_unregister(d->port, r->tx_slots,
					       (size_t)d->slot_bytes * PPD_TX_SLOTS);
		r->hdr->daemon_gone = 1;
		munmap(r->mem, r->mem_len);
		close(r->conn);
		if (r->pidfd >= 0)
			close(r->pidfd);
		d->h[r->home].nhome--;
		r->mem = NULL;
		atomic_store(&r->state, PPD_RANK_FREE);
	}
	return used;
}

/* --- main ------------------------------------------------------------------- */

static int listen_on(const char *path)
{
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
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -1;
	/* A socket nobody answers on is left over from a daemon that died. */
	int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		fprintf(stderr, "ppd: a daemon is already serving %s\n", path);
		close(probe);
		close(s);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	unlink(path);
	/* Ranks of the same uid (or root) may connect; the credentials decide. */
	mode_t old = umask(0111);
	int rc = bind(s, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc != 0 || listen(s, 64) != 0) {
		fprintf(stderr, "ppd: cannot listen on %s: %s\n", path, strerror(errno));
		close(s);
		return -1;
	}
	return s;
}

static struct pp_sim_link *sim_link; /* with --dev sim:NAME/0 */

static int start(struct ppd *d, const struct opts *o, int *cores, int *ncores)
{
	if (o->cores) {
		*ncores = pp_corelist_parse(o->cores, cores, PPD_MAX_HANDLERS);
		int have = pp_affinity_ncores();
		for (int i = 0; *ncores > 0 && i < *ncores; i++)
			if (cores[i] >= have)
				*ncores = -EINVAL;
		if (*ncores <= 0) {
			fprintf(stderr,
				"ppd: --cores '%s': want up to %d cores below %d, e.g. 0 or 1-2\n",
				o->cores, PPD_MAX_HANDLERS, have);
			return -EINVAL;
		}
	} else {
		*ncores = ppd_default_cores(o->dev, cores, PPD_MAX_HANDLERS);
		if (*ncores <= 0) {
			fprintf(stderr,
				"ppd: cannot choose cores from the topology (%s); use --cores\n",
				strerror(-*ncores));
			return -ENODEV;
		}
	}
	struct pp_port_conf pc = {.nb_queues = (uint16_t)*ncores};
	int rc;
	if (strncmp(o->dev, "sim:", 4) == 0) {
		/* The in-memory link lives in this process: make it, one port
		 * wide, with one queue (so one handler). */
		char name[64];
		const char *slash = strrchr(o->dev, '/');
		if (!slash || strcmp(slash, "/0") != 0 ||
		    slash - o->dev - 4 >= (long)sizeof(name)) {
			fprintf(stderr, "ppd: --dev sim:NAME/0 expected, got '%s'\n", o->dev);
			return -EINVAL;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(slash - o->dev - 4), o->dev + 4);
		struct pp_sim_conf sc = {.seed = 1};
		if ((rc = pp_sim_link_create(&sim_link, name, 1, &sc))) {
			fprintf(stderr, "ppd: cannot create in-memory link '%s': %s\n", name,
				strerror(-rc));
			return rc;
		}
		*ncores = 1;
		pc.nb_queues = 1;
	}
	/* Frames leave straight from the ranks' slots as DPDK external buffers;
	 * in IOVA-as-PA mode DPDK looks each one's physical address up in
	 * /proc/self/pagemap (measured: 1 MiB bandwidth through the daemon
	 * fell from about 300 to 37 MB/s), so virtual devices run IOVA as VA
	 * unless the string says otherwise. */
	char dev[sizeof(((struct opts *)0)->sock_buf) + 512];
	if (!d->tx_copy && strstr(o->dev, "--vdev") && !strstr(o->dev, "--iova-mode") &&
	    strlen(o->dev) < sizeof(dev) - 20)
		snprintf(dev, sizeof(dev), "--iova-mode=va %s", o->dev);
	else
		snprintf(dev, sizeof(dev), "%s", o->dev);
	rc = pp_port_open(&d->port, dev, &pc);
	if (rc) {
		fprintf(stderr, "ppd: cannot open port '%s': %s\n", o->dev, strerror(-rc));
		return rc;
	}
	if ((rc = pp_port_info(d->port, &d->info)))
		return rc;
	if (d->info.nb_queues < *ncores) {
		fprintf(stderr,
			"ppd: notice: port gives %u queue pair(s); running %u handler(s), not %d\n",
			d->info.nb_queues, d->info.nb_queues, *ncores);
		*ncores = d->info.nb_queues;
	}
	d->slot_bytes = round_up((uint64_t)d->info.mtu + PP_ETH_HDR_LEN, 64);
	if (d->slot_bytes < 128)
		d->slot_bytes = 128;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	parse(argc, argv, &o);
	if (o.topology) {
		int rc = ppd_topology_print(o.dev, o.cores);
		if (rc)
			fprintf(stderr, "ppd: --topology: %s\n", strerror(-rc));
		return rc ? 1 : 0;
	}
	if (o.stats)
		return stats_client(o.sock);
	if (!o.dev) {
		fprintf(stderr, "ppd: --dev DEVARGS is required (see --help)\n");
		return 2;
	}

	/* Signals are read from a signalfd; every thread inherits the mask. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &sigs, SFD_CLOEXEC);

	static struct ppd d;
	d.tx_copy = o.tx_copy;
	d.no_pull_serve = o.no_pull_serve;
	d.no_place = o.no_place;
	int cores[PPD_MAX_HANDLERS], ncores;
	int rc = start(&d, &o, cores, &ncores);
	int lfd = rc ? -1 : listen_on(o.sock);
	if (rc || lfd < 0 || sfd < 0) {
		if (d.port)
			pp_port_close(d.port);
		return 1;
	}
	if ((rc = ppd_handlers_start(&d, cores, ncores))) {
		pp_port_close(d.port);
		unlink(o.sock);
		return 1;
	}
	fprintf(stderr, "ppd: serving %s on %s with %d handler(s)\n", o.sock, d.info.driver, d.nh);

	struct pollfd pfd[2 + 2 * PPD_MAX_RANKS];
	struct ppd_rank *who[2 + 2 * PPD_MAX_RANKS];
	struct timespec drain_end = {0};
	for (;;) {
		int np = 0;
		pfd[np++] = (struct pollfd){.fd = sfd, .events = POLLIN};
		if (lfd >= 0)
			pfd[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < PPD_MAX_RANKS; i++) {
			struct ppd_rank *r = &d.ranks[i];
			if (atomic_load(&r->state) != PPD_RANK_ACTIVE)
				continue;
			who[np] = r;
			pfd[np++] = (struct pollfd){.fd = r->conn, .events = POLLIN};
			if (r->pidfd >= 0) {
				who[np] = r;
				pfd[np++] = (struct pollfd){.fd = r->pidfd, .events = POLLIN};
			}
		}
		poll(pfd, (nfds_t)np, 20);
		for (int i = 0; i < np; i++) {
			if (!pfd[i].revents)
				continue;
			if (pfd[i].fd == sfd) {
				struct signalfd_siginfo si;
				if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) && lfd >= 0) {
					fprintf(stderr, "ppd: signal %u: draining\n", si.ssi_signo);
					close(lfd);
					lfd = -1;
					unlink(o.sock);
					clock_gettime(CLOCK_MONOTONIC, &drain_end);
					drain_end.tv_sec += o.drain_ms / 1000;
					drain_end.tv_nsec += (long)(o.drain_ms % 1000) * 1000000;
				}
			} else if (pfd[i].fd == lfd) {
				accept_one(&d, lfd);
			} else if (pfd[i].fd == who[i]->pidfd) {
				rank_died(who[i], "process exited");
			} else {
				char b[64];
				ssize_t n = recv(pfd[i].fd, b, sizeof(b), MSG_DONTWAIT);
				if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
					rank_died(who[i], "connection closed");
			}
		}
		int used = reclaim(&d);
		atomic_store(&d.nattached, used);
		if (lfd < 0) { /* draining */
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			int late =
			    now.tv_sec > drain_end.tv_sec ||
			    (now.tv_sec == drain_end.tv_sec && now.tv_nsec >= drain_end.tv_nsec);
			if (!used)
				break;
			if (late)
				for (int i = 0; i < PPD_MAX_RANKS; i++)
					rank_died(&d.ranks[i], "daemon stopping");
		}
	}
	char text[16384];
	ppd_stats_format(&d, text, sizeof(text));
	ppd_handlers_stop(&d);
	pp_port_close(d.port);
	if (sim_link)
		pp_sim_link_destroy(sim_link);
	fputs(text, stderr);
	fprintf(stderr, "ppd: stopped\n");
	return 0;
}
