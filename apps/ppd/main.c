/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ppd: the node daemon (see ppd.h for its threads and ppd_shm.h for what it
 * shares with a rank). This file is the command line and the main thread's
 * loop: signals, the socket (server.c), rank deaths and reclaim (ranks.c),
 * SIGTERM's drain. Cold path.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
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
#include "config.h"
#include "pp_log.h"
#include "ppd.h"
#include "sim/pp_sim.h"
#include "topo.h"

#define DRAIN_MS_DEFAULT 5000

struct opts {
	const char *dev;    /* --dev */
	const char *sock;   /* --socket */
	const char *node;   /* --node */
	const char *cores;  /* --cores */
	const char *group;  /* --group */
	int topology;	    /* --topology */
	int stats;	    /* --stats */
	int json;	    /* --json */
	int tx_copy;	    /* --tx-copy */
	int no_pull_serve;  /* --no-pull-serve */
	int no_place;	    /* --no-place */
	int doze;	    /* --doze */
	int bind_first;	    /* --bind-first-attacher */
	int max_ranks_uid;  /* --max-ranks-per-uid */
	const char *claim;  /* --claim JOB:UID:TOKEN[:SIZE] */
	unsigned drain_ms;  /* --drain-ms */
	char sock_buf[108]; /* default socket path */
};

static void usage(FILE *f)
{
	fputs("usage: ppd --dev DEVARGS [options]        run the node daemon\n"
	      "       ppd --topology [--dev DEVARGS] [--cores LIST]\n"
	      "       ppd --stats [--json] [--socket PATH | --node NAME]\n"
	      "       ppd --claim JOB:UID:TOKEN[:SIZE] [--socket PATH | --node NAME]\n"
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
	      "  --group NAME    members of group NAME may attach and read the counters too\n"
	      "                  (the socket is then mode 0660, that group's; without it\n"
	      "                  0600: only root and the daemon's own user)\n"
	      "  --drain-ms N    on SIGTERM, wait up to N ms for ranks to detach (default 5000)\n"
	      "  --max-ranks-per-uid N\n"
	      "                  ranks one uid may have attached at once (default 32, half\n"
	      "                  the table of 64; root and the daemon's own uid: any), so\n"
	      "                  one user cannot fill the table and lock the others out\n"
	      "  --bind-first-attacher\n"
	      "                  a job nobody claimed is bound to the uid, token and size of\n"
	      "                  its first rank to attach (default: refused until claimed).\n"
	      "                  Only for nodes with one user: anyone who may attach can then\n"
	      "                  take another user's job number first and lock its ranks out\n"
	      "  --tx-copy       copy every frame out of the ranks' slots (default: large\n"
	      "                  frames to other nodes leave straight from the slot where\n"
	      "                  the port supports external buffers)\n"
	      "  --no-pull-serve leave every PULL to the rank's own engine (default: the\n"
	      "                  handlers send the pulled bytes of a rank's sends, so a\n"
	      "                  rank busy computing still answers PULLs)\n"
	      "  --no-place      hand every DATA frame to its rank whole (default: the\n"
	      "                  payload of a large one is written straight into the\n"
	      "                  receive buffer the rank described, one copy in all)\n"
	      "  --doze          let a handler none of whose ranks is waiting sleep until a\n"
	      "                  frame comes from the NIC or a rank sends, instead of taking\n"
	      "                  turns on the cores its ranks compute on (ports with a wait\n"
	      "                  descriptor, packet: and pcap:, and one handler only;\n"
	      "                  default: handlers never sleep while ranks are attached)\n"
	      "  --topology      print cores, caches, NUMA nodes, the NIC's node and the\n"
	      "                  handler placement, then exit\n"
	      "  --stats         print the running daemon's per-handler counters, then exit\n"
	      "  --claim JOB:UID:TOKEN[:SIZE]\n"
	      "                  (root) bind job JOB (a number or a name, as PP_JOB) at the\n"
	      "                  running daemon to the ranks of UID (a number or a user name)\n"
	      "                  that give TOKEN (as PP_TOKEN; empty: none) and, when given,\n"
	      "                  number SIZE; prints 'claimed' and holds the claim until\n"
	      "                  killed (SIGTERM, SIGINT), or the job's ranks hold it after.\n"
	      "                  pprun --daemon claims its jobs itself\n"
	      "  --json          with --stats: one JSON document (per handler and totals)\n"
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
		O_NOPLACE,
		O_DOZE,
		O_GROUP,
		O_JSON,
		O_BINDFIRST,
		O_MAXUID,
		O_CLAIM
	};
	static const struct option lo[] = {
	    {"dev", required_argument, NULL, O_DEV},
	    {"socket", required_argument, NULL, O_SOCK},
	    {"node", required_argument, NULL, O_NODE},
	    {"cores", required_argument, NULL, O_CORES},
	    {"drain-ms", required_argument, NULL, O_DRAIN},
	    {"topology", no_argument, NULL, O_TOPO},
	    {"stats", no_argument, NULL, O_STATS},
	    {"json", no_argument, NULL, O_JSON},
	    {"tx-copy", no_argument, NULL, O_TXCOPY},
	    {"no-pull-serve", no_argument, NULL, O_NOPULL},
	    {"no-place", no_argument, NULL, O_NOPLACE},
	    {"doze", no_argument, NULL, O_DOZE},
	    {"group", required_argument, NULL, O_GROUP},
	    {"bind-first-attacher", no_argument, NULL, O_BINDFIRST},
	    {"max-ranks-per-uid", required_argument, NULL, O_MAXUID},
	    {"claim", required_argument, NULL, O_CLAIM},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	*o = (struct opts){.drain_ms = DRAIN_MS_DEFAULT, .max_ranks_uid = PPD_RANKS_UID};
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
		case O_GROUP:
			o->group = optarg;
			break;
		case O_TOPO:
			o->topology = 1;
			break;
		case O_STATS:
			o->stats = 1;
			break;
		case O_JSON:
			o->json = 1;
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
		case O_DOZE:
			o->doze = 1;
			break;
		case O_BINDFIRST:
			o->bind_first = 1;
			break;
		case O_CLAIM:
			o->claim = optarg;
			break;
		case O_MAXUID: {
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v < 1 || v > PPD_MAX_RANKS) {
				fprintf(stderr, "ppd: --max-ranks-per-uid wants 1..%d (got '%s')\n",
					PPD_MAX_RANKS, optarg);
				exit(2);
			}
			o->max_ranks_uid = (int)v;
			break;
		}
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
	if (o->json && !o->stats) {
		fprintf(stderr, "ppd: --json goes with --stats (see --help)\n");
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

/* --- ppd --claim ------------------------------------------------------------ */

static volatile sig_atomic_t claim_stop;

static void on_claim_signal(int sig)
{
	claim_stop = sig;
}

/* Parse JOB:UID:TOKEN[:SIZE] into req; 0, or -1 with the reason printed.
 * JOB and TOKEN become what a rank given them as PP_JOB and PP_TOKEN
 * sends (runtime/config.c). */
static int claim_parse(const char *spec, struct ppd_claim_req *req)
{
	char buf[256], *f[4] = {NULL};
	int n = 0;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *p = buf, *colon; n < 4; p = colon + 1) {
		f[n++] = p;
		if (!(colon = strchr(p, ':')))
			break;
		*colon = '\0';
	}
	if (n < 3 || !*f[0] || !*f[1] || strlen(spec) >= sizeof(buf)) {
		fprintf(stderr, "ppd: --claim JOB:UID:TOKEN[:SIZE], not '%s'\n", spec);
		return -1;
	}
	*req = (struct ppd_claim_req){.magic = PPD_CLAIM_MAGIC, .version = PPD_VERSION};
	char *end;
	errno = 0;
	unsigned long v = strtoul(f[0], &end, 10);
	req->job = !errno && !*end && v <= UINT32_MAX ? (uint32_t)v : pp_config_job_hash(f[0]);
	errno = 0;
	v = strtoul(f[1], &end, 10);
	if (errno || *end || v > UINT32_MAX) {
		struct passwd *pw = getpwnam(f[1]);
		if (!pw) {
			fprintf(stderr, "ppd: --claim: no user '%s'\n", f[1]);
			return -1;
		}
		v = pw->pw_uid;
	}
	req->uid = (uint32_t)v;
	req->token = *f[2] ? ppd_token_hash(f[2]) : 0;
	if (n == 4) {
		errno = 0;
		v = strtoul(f[3], &end, 10);
		if (errno || *end || !*f[3] || v < 1 || v > PPD_MAX_JOB_RANKS) {
			fprintf(stderr, "ppd: --claim: SIZE wants 1..%u, not '%s'\n",
				PPD_MAX_JOB_RANKS, f[3]);
			return -1;
		}
		req->size = (uint32_t)v;
	}
	return 0;
}

/* A connection to the daemon's socket at path, or -1 (said on stderr). */
static int connect_daemon(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "ppd: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "ppd: no daemon at %s: %s\n", path, strerror(errno));
		if (s >= 0)
			close(s);
		return -1;
	}
	return s;
}

/* ppd --claim: claim the job, say so, and hold the claim until a signal or
 * the daemon's end. 0 once released by a signal, 1 otherwise. */
static int claim_client(const char *path, const char *spec)
{
	struct ppd_claim_req req;
	if (claim_parse(spec, &req))
		return 2;
	int s = connect_daemon(path);
	if (s < 0)
		return 1;
	struct ppd_attach_rep rep;
	if (send(s, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req) ||
	    recv(s, &rep, sizeof(rep), 0) != (ssize_t)sizeof(rep)) {
		fprintf(stderr, "ppd: the daemon at %s gave no answer to the claim\n", path);
		close(s);
		return 1;
	}
	if (rep.status) {
		rep.message[sizeof(rep.message) - 1] = '\0';
		fprintf(stderr, "ppd: claim refused: %s\n", rep.message);
		close(s);
		return 1;
	}
	struct sigaction sa_ = {.sa_handler = on_claim_signal};
	sigaction(SIGTERM, &sa_, NULL);
	sigaction(SIGINT, &sa_, NULL);
	printf("claimed job %u for uid %u at %s\n", req.job, req.uid, path);
	fflush(stdout);
	struct pollfd p = {.fd = s, .events = POLLIN};
	while (!claim_stop && (poll(&p, 1, -1) < 0 ? errno == EINTR : !p.revents))
		;
	close(s);
	if (claim_stop)
		return 0;
	fprintf(stderr, "ppd: the daemon at %s closed the claim\n", path);
	return 1;
}

/* --- ppd --stats ------------------------------------------------------------ */

static int stats_client(const char *path, int json)
{
	int s = connect_daemon(path);
	if (s < 0)
		return 1;
	struct ppd_attach_req req = {
	    .magic = PPD_STATS_MAGIC, .version = PPD_VERSION, .rank = json ? PPD_STATS_JSON : 0};
	if (send(s, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req)) {
		fprintf(stderr, "ppd: %s: %s\n", path, strerror(errno));
		close(s);
		return 1;
	}
	char buf[4096];
	ssize_t n;
	int any = 0;
	while ((n = recv(s, buf, sizeof(buf), 0)) > 0) {
		if (json && !any && buf[0] != '{') {
			fprintf(stderr,
				"ppd: the daemon at %s answered in text, not JSON (an "
				"older release?)\n",
				path);
			close(s);
			return 1;
		}
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
		*ncores = pp_topo_default_cores(o->dev, cores, PPD_MAX_HANDLERS);
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
	const char *eal = o->dev; /* the DPDK part, after any fault: wrappers */
	while (strncmp(eal, "fault:", 6) == 0 && strchr(eal, ';'))
		eal = strchr(eal, ';') + 1;
	if (!d->tx_copy && strstr(eal, "--vdev") && !strstr(eal, "--iova-mode") &&
	    strlen(o->dev) < sizeof(dev) - 20)
		snprintf(dev, sizeof(dev), "%.*s--iova-mode=va %s", (int)(eal - o->dev), o->dev,
			 eal);
	else
		snprintf(dev, sizeof(dev), "%s", o->dev);
	struct pp_port *port;
	rc = pp_port_open(&port, dev, &pc);
	if (rc) {
		fprintf(stderr, "ppd: cannot open port '%s': %s\n", o->dev, strerror(-rc));
		return rc;
	}
	if ((rc = ppd_use_port(d, port))) {
		pp_port_close(port);
		return rc;
	}
	if (d->info.nb_queues < *ncores) {
		fprintf(stderr,
			"ppd: notice: port gives %u queue pair(s); running %u handler(s), not %d\n",
			d->info.nb_queues, d->info.nb_queues, *ncores);
		*ncores = d->info.nb_queues;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	parse(argc, argv, &o);
	if (o.topology) {
		int rc = pp_topo_print(stdout, o.dev, o.cores, PPD_MAX_HANDLERS);
		if (rc)
			fprintf(stderr, "ppd: --topology: %s\n", strerror(-rc));
		return rc ? 1 : 0;
	}
	if (o.stats)
		return stats_client(o.sock, o.json);
	if (o.claim)
		return claim_client(o.sock, o.claim);
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
	ppd_init(&d);
	d.tx_copy = o.tx_copy;
	d.no_pull_serve = o.no_pull_serve;
	d.no_place = o.no_place;
	d.doze = o.doze;
	d.bind_first = o.bind_first;
	d.max_ranks_uid = o.max_ranks_uid;
	int cores[PPD_MAX_HANDLERS], ncores;
	static struct ppd_server srv;
	int rc = start(&d, &o, cores, &ncores);
	if (rc == 0)
		rc = ppd_server_open(&srv, o.sock, o.group);
	if (rc || sfd < 0) {
		if (d.port)
			pp_port_close(d.port);
		return 1;
	}
	if ((rc = ppd_handlers_start(&d, cores, ncores))) {
		ppd_server_close(&srv);
		pp_port_close(d.port);
		return 1;
	}
	fprintf(stderr, "ppd: serving %s on %s with %d handler(s)\n", o.sock, d.info.driver, d.nh);

	/* The loop: signals, the socket, the connections waiting for their
	 * request, and each rank's connection and pidfd (either ending is the
	 * rank's death). Every fd is non-blocking: one slow client holds
	 * nothing. */
	enum { T_SIG, T_LISTEN, T_CONN, T_RANK_CONN, T_RANK_PIDFD, T_CLAIM };
	struct pollfd pfd[2 + PPD_PENDING + 2 * PPD_MAX_RANKS + PPD_CLAIMS];
	struct {
		int kind, i; /* T_*, and the index of its connection, rank or claim */
	} tag[2 + PPD_PENDING + 2 * PPD_MAX_RANKS + PPD_CLAIMS];
	uint64_t drain_end = 0;
	int draining = 0;
	for (;;) {
		int np = 0;
#define ADD(fd_, kind_, i_)                                                                        \
	do {                                                                                       \
		pfd[np] = (struct pollfd){.fd = (fd_), .events = POLLIN};                          \
		tag[np].kind = (kind_);                                                            \
		tag[np++].i = (i_);                                                                \
	} while (0)
		ADD(sfd, T_SIG, 0);
		if (srv.lfd >= 0)
			ADD(srv.lfd, T_LISTEN, 0);
		for (int i = 0; i < PPD_PENDING; i++)
			if (srv.conn[i].fd >= 0)
				ADD(srv.conn[i].fd, T_CONN, i);
		for (int i = 0; i < PPD_MAX_RANKS; i++) {
			struct ppd_rank *r = &d.ranks[i];
			if (atomic_load(&r->state) != PPD_RANK_ACTIVE)
				continue;
			ADD(r->conn, T_RANK_CONN, i);
			ADD(r->pidfd, T_RANK_PIDFD, i);
		}
		for (int i = 0; i < PPD_CLAIMS; i++)
			if (d.claims[i].used && d.claims[i].fd >= 0)
				ADD(d.claims[i].fd, T_CLAIM, i);
#undef ADD
		poll(pfd, (nfds_t)np, 20);
		uint64_t now = ppd_now_ns();
		for (int k = 0; k < np; k++) {
			if (!pfd[k].revents)
				continue;
			struct ppd_rank *r = &d.ranks[tag[k].i];
			switch (tag[k].kind) {
			case T_SIG: {
				struct signalfd_siginfo si;
				if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
				    !draining) {
					fprintf(stderr, "ppd: signal %u: draining\n", si.ssi_signo);
					draining = 1;
					drain_end = now + (uint64_t)o.drain_ms * 1000000u;
				}
				break;
			}
			case T_LISTEN:
				if (!draining)
					ppd_server_accept(&srv, now);
				break;
			case T_CONN:
				if (!draining)
					ppd_server_input(&d, &srv, tag[k].i);
				break;
			case T_RANK_PIDFD:
				ppd_rank_died(r, "process exited");
				break;
			case T_RANK_CONN: {
				char b[64];
				ssize_t n = recv(r->conn, b, sizeof(b), MSG_DONTWAIT);
				if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
					ppd_rank_died(r, "connection closed");
				break;
			}
			case T_CLAIM: { /* its end: the job's ranks alone hold it now */
				char b[64];
				ssize_t n = recv(d.claims[tag[k].i].fd, b, sizeof(b), MSG_DONTWAIT);
				if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
					ppd_claim_closed(&d, tag[k].i);
				break;
			}
			}
		}
		/* After the events: a signal seen in this round has already
		 * made the later entries of the same round stale. */
		if (draining)
			ppd_server_close(&srv);
		ppd_server_expire(&srv, now);
		ppd_mem_watch(&d, now);
		int used = ppd_ranks_reclaim(&d);
		ppd_claims_sweep(&d);
		atomic_store(&d.nattached, used);
		if (draining) {
			if (!used)
				break;
			if (now >= drain_end)
				for (int i = 0; i < PPD_MAX_RANKS; i++)
					ppd_rank_died(&d.ranks[i], "daemon stopping");
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
