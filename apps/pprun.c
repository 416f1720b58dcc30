/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pprun: start a librt-pp job on the local test bed, like mpirun for it.
 *
 * Ranks are placed in blocks on --nodes namespaces (ppn0, ppn1, ...); in the
 * embedded mode every rank owns a port of its own (rank i of a node gets port
 * pp<i>); with --daemon, pprun first starts one node daemon ppd per node
 * (on the node's port pp0), the ranks attach to it, and the daemons are
 * stopped (SIGTERM, which drains) after the ranks. Each rank gets its PP_* settings in the
 * environment, is pinned to a core (round robin, so busy-polling ranks do not starve each other),
 * and has its output prefixed with "[rank] ". pprun exits with the first non-zero status of a rank,
 * killing the others, or 124 on --timeout.
 *
 * --dev-kind udp needs neither root nor the test bed: without root, or with
 * --udp-addr ADDR, every rank runs here, in pprun's own network namespace,
 * with a udp: port on ADDR (127.0.0.1 by default) and a UDP port of its own,
 * and the list of every rank's port for HELLO broadcasts; --nodes only names
 * nodes then (ranks of one node still talk through shared memory). As root
 * without --udp-addr the ranks sit in the test bed's nodes like the other
 * kinds, each on its port's address (testbed.sh addr, given for the job:
 * testbed.sh ipv4), the peer list in a file.
 *
 * When pprun's stderr is a terminal, the ranks get PPRUN_TTY=1, and a
 * rank's stderr text ended by a carriage return instead of a newline is a
 * status line (pp_pingpong's progress, "[i/N] ..."): shown in place, once,
 * and cleared before any other line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ppd/ppd_shm.h"

#define MAX_RANKS    256
#define LINE_MAX_LEN 4096

struct opts {
	int nranks;	      /* -n */
	int nodes;	      /* --nodes */
	const char *dev_kind; /* af_xdp | af_packet | packet | pcap | udp */
	int udp;	      /* dev_kind is udp: no namespaces, no root */
	const char *udp_addr; /* --udp-addr */
	int udp_addr_set;     /* --udp-addr given */
	int udp_tb;	      /* udp on the test bed: root, no --udp-addr; or frame_udp */
	int frame_udp;	      /* --frame udp: raw ports framing in UDP/IPv4; -1 unset */
	char peerfile[64];    /* udp_tb: every rank's address, for broadcasts */
	unsigned udp_base;    /* rank r's UDP port is udp_base + r */
	const char *mode;     /* passed through as PP_MODE */
	const char *btp1, *btp2;
	int daemon;	       /* --daemon */
	int timeout_s;	       /* --timeout, 0 = none */
	const char *testbed;   /* path of testbed.sh */
	int no_pin;	       /* --no-pin */
	const char *ppd;       /* --ppd PATH */
	const char *ppd_cores; /* --ppd-cores LIST, else core node % ncpu */
	const char *fault;     /* --fault SPEC: faults on every port's receive */
	char **argv;	       /* program and its arguments */
};

/* One rank's output stream being cut into prefixed lines. */
struct stream {
	int fd;			/* read end of the rank's pipe, -1 when closed */
	int rank;		/* whose output */
	FILE *out;		/* stdout or stderr */
	size_t used;		/* bytes pending in buf */
	char buf[LINE_MAX_LEN]; /* an incomplete line */
};

static int status_tty;	 /* our stderr is a terminal: show ranks' status lines */
static int status_shown; /* a status line is on it, the cursor at its start */

static const char *find_testbed(const struct opts *o, char *buf, size_t len);

static void usage(FILE *f)
{
	fputs(
	    "usage: pprun -n NRANKS [options] [--] PROGRAM [ARGS...]\n"
	    "Start NRANKS processes of PROGRAM as one librt-pp job on the local test bed.\n\n"
	    "  -n, --np N            number of ranks (required, 1..256)\n"
	    "      --nodes N         namespaces to spread the ranks over in blocks (default: one\n"
	    "                        rank per node)\n"
	    "      --dev-kind KIND   packet (our own AF_PACKET rings, no DPDK; the default as\n"
	    "                        root, with --frame udp) | af_packet (DPDK's\n"
	    "                        net_af_packet) | af_xdp | pcap (libpcap) | udp (UDP\n"
	    "                        sockets; as root on the test bed's ports' addresses,\n"
	    "                        else every rank here, no root needed; the default when\n"
	    "                        not root)\n"
	    "      --udp-addr ADDR   with --dev-kind udp: every rank here, on this IPv4 address\n"
	    "                        (default 127.0.0.1)\n"
	    "      --frame eth|udp   with --dev-kind packet or af_packet: frames in\n"
	    "                        Ethernet, or in UDP/IPv4 on the test bed's port\n"
	    "                        addresses (packet:pp0,frame=udp,link=raw: runs of frames\n"
	    "                        as one GSO message; DPDK's: a frame=udp word); default\n"
	    "                        udp with the default kind, else eth\n"
	    "      --mode MODE       push-pull | push-all | push-zero\n"
	    "      --btp1 B, --btp2 B  bytes of the first and second push\n"
	    "      --daemon          start one node daemon ppd per node first; ranks attach to it\n"
	    "                        instead of owning ports\n"
	    "      --ppd PATH        the ppd program (default: $PPRUN_PPD, beside pprun, or PATH)\n"
	    "      --ppd-cores LIST  handler cores of every daemon (default: node i on core i)\n"
	    "      --fault SPEC      faults on what every port receives, e.g.\n"
	    "                        loss=0.05,dup=0.01,reorder=0.05 (driver/fault)\n"
	    "      --timeout SEC     kill the job after SEC seconds (exit 124)\n"
	    "      --testbed PATH    testbed.sh to bring the test bed up with\n"
	    "      --no-pin          do not pin ranks to cores\n"
	    "  -h, --help            this text\n\n"
	    "Each rank gets PP_RANK, PP_SIZE, PP_JOB, PP_NODE, PP_DEV (and PP_MODE, PP_BTP1,\n"
	    "PP_BTP2, a random PP_JOB_SECRET unless one is set, and with --daemon PP_DAEMON\n"
	    "and a random PP_TOKEN). Output lines are prefixed with [rank]. The exit status\n"
	    "is the first non-zero status of a rank; the others are then killed.\n",
	    f);
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || !*s || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	enum {
		O_NODES = 256,
		O_DEV,
		O_MODE,
		O_BTP1,
		O_BTP2,
		O_DAEMON,
		O_TIMEOUT,
		O_TB,
		O_NOPIN,
		O_PPD,
		O_PPD_CORES,
		O_FAULT,
		O_UDP_ADDR,
		O_FRAME,
	};
	static const struct option lo[] = {
	    {"np", required_argument, NULL, 'n'},
	    {"nodes", required_argument, NULL, O_NODES},
	    {"dev-kind", required_argument, NULL, O_DEV},
	    {"mode", required_argument, NULL, O_MODE},
	    {"btp1", required_argument, NULL, O_BTP1},
	    {"btp2", required_argument, NULL, O_BTP2},
	    {"daemon", no_argument, NULL, O_DAEMON},
	    {"timeout", required_argument, NULL, O_TIMEOUT},
	    {"testbed", required_argument, NULL, O_TB},
	    {"no-pin", no_argument, NULL, O_NOPIN},
	    {"ppd", required_argument, NULL, O_PPD},
	    {"ppd-cores", required_argument, NULL, O_PPD_CORES},
	    {"fault", required_argument, NULL, O_FAULT},
	    {"udp-addr", required_argument, NULL, O_UDP_ADDR},
	    {"frame", required_argument, NULL, O_FRAME},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c, bad = 0;
	*o = (struct opts){
	    .nranks = 0, .nodes = 0, .dev_kind = NULL, .udp_addr = "127.0.0.1", .frame_udp = -1};
	/* "+": stop at the first non-option, which is the program. */
	while ((c = getopt_long(argc, argv, "+n:h", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			bad |= parse_int(optarg, 1, MAX_RANKS, &o->nranks);
			break;
		case O_NODES:
			bad |= parse_int(optarg, 1, 64, &o->nodes);
			break;
		case O_DEV:
			o->dev_kind = optarg;
			break;
		case O_MODE:
			o->mode = optarg;
			break;
		case O_BTP1:
			o->btp1 = optarg;
			break;
		case O_BTP2:
			o->btp2 = optarg;
			break;
		case O_DAEMON:
			o->daemon = 1;
			break;
		case O_TIMEOUT:
			bad |= parse_int(optarg, 1, 86400, &o->timeout_s);
			break;
		case O_TB:
			o->testbed = optarg;
			break;
		case O_NOPIN:
			o->no_pin = 1;
			break;
		case O_PPD:
			o->ppd = optarg;
			break;
		case O_PPD_CORES:
			o->ppd_cores = optarg;
			break;
		case O_FAULT:
			o->fault = optarg;
			break;
		case O_UDP_ADDR:
			o->udp_addr = optarg;
			o->udp_addr_set = 1;
			break;
		case O_FRAME:
			if (strcmp(optarg, "udp") && strcmp(optarg, "eth")) {
				fprintf(stderr, "pprun: --frame must be eth or udp (got '%s')\n",
					optarg);
				exit(2);
			}
			o->frame_udp = strcmp(optarg, "udp") == 0;
			break;
		case 'h': {
			char tb[PATH_MAX + 32];
			usage(stdout);
			printf("\ntestbed.sh here: %s\n", find_testbed(o, tb, sizeof(tb)));
			exit(0);
		}
		default:
			usage(stderr);
			exit(2);
		}
		if (bad) {
			fprintf(stderr, "pprun: bad option value '%s' (see --help)\n", optarg);
			exit(2);
		}
	}
	if (o->nranks == 0 || optind >= argc) {
		fprintf(stderr, "pprun: %s\n",
			o->nranks ? "no program given" : "-n NRANKS is required");
		usage(stderr);
		exit(2);
	}
	if (o->nodes == 0)
		o->nodes = o->nranks;
	if (o->nodes > o->nranks) {
		fprintf(stderr, "pprun: --nodes %d is more than -n %d ranks\n", o->nodes,
			o->nranks);
		exit(2);
	}
	/* The default: the test bed's packet: ports as root, the fastest kind
	 * on its veths at every size (tests/bench/ports.sh: 1.13-1.22x DPDK's
	 * af_packet, README "Port kinds"), framing in UDP (frame=udp,link=raw:
	 * a long message's frames cross the veth 64 KiB at a time: medians
	 * 1.13-1.73x faster from 64 KiB, small ones level one way, the 1 KiB
	 * bandwidth 0.68-0.98x; README "Both at once");
	 * not under a daemon, which frames in Ethernet. Without root no raw
	 * port can be opened, so every rank gets a udp: port here. */
	if (!o->dev_kind) {
		o->dev_kind = geteuid() == 0 ? "packet" : "udp";
		if (o->frame_udp < 0 && geteuid() == 0 && !o->daemon)
			o->frame_udp = 1;
		if (geteuid() != 0)
			fprintf(stderr,
				"pprun: not root: the ranks use udp: ports on %s "
				"(--dev-kind chooses; the test bed's kinds need root)\n",
				o->udp_addr);
	}
	if (strcmp(o->dev_kind, "af_xdp") && strcmp(o->dev_kind, "af_packet") &&
	    strcmp(o->dev_kind, "packet") && strcmp(o->dev_kind, "pcap") &&
	    strcmp(o->dev_kind, "udp")) {
		fprintf(stderr,
			"pprun: --dev-kind must be af_packet, packet, af_xdp, pcap or udp (got "
			"'%s')\n",
			o->dev_kind);
		exit(2);
	}
	o->udp = strcmp(o->dev_kind, "udp") == 0;
	if (o->frame_udp < 0)
		o->frame_udp = 0;
	if (o->frame_udp &&
	    ((strcmp(o->dev_kind, "packet") && strcmp(o->dev_kind, "af_packet")) || o->daemon)) {
		/* af_xdp: its XDP program takes the kernel's ARP (driver/README.md) */
		fprintf(stderr,
			"pprun: --frame udp is for --dev-kind packet or af_packet (not "
			"af_xdp, whose XDP program takes the kernel's ARP; not --daemon)\n");
		exit(2);
	}
	o->udp_tb = (o->udp && geteuid() == 0 && !o->udp_addr_set) || o->frame_udp;
	if (o->udp_tb && (o->nranks + o->nodes - 1) / o->nodes > 254) {
		/* a port's address is 10.78.NODE.PORT+1 (testbed.sh addr) */
		fprintf(stderr,
			"pprun: at most 254 ranks per node on the test bed's addresses (%s)\n",
			o->udp ? "--dev-kind udp" : "--frame udp; --frame eth has no such limit");
		exit(2);
	}
	if (o->udp && o->daemon) {
		fprintf(stderr, "pprun: --daemon needs the test bed; not with --dev-kind udp\n");
		exit(2);
	}
	o->argv = argv + optind;
	return 0;
}

/* Ranks per node, in blocks: the first (nranks % nodes) nodes get one more. */
static void place(const struct opts *o, int rank, int *node, int *port)
{
	int base = o->nranks / o->nodes, extra = o->nranks % o->nodes;
	int first_small = extra * (base + 1);
	if (rank < first_small) {
		*node = rank / (base + 1);
		*port = rank % (base + 1);
	} else {
		*node = extra + (rank - first_small) / base;
		*port = (rank - first_small) % base;
	}
}

/* A program pprun runs: the option's value, else $ENV, else the first of
 * rel[] (relative to this binary's folder, e.g. the build tree) that is
 * executable, else name on PATH. */
static const char *find_tool(const char *given, const char *env, const char *const *rel,
			     unsigned nrel, const char *name, char *buf, size_t len)
{
	if (given)
		return given;
	const char *e = getenv(env);
	if (e && *e)
		return e;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			for (unsigned i = 0; i < nrel; i++) {
				if (rel[i][0] == '/')
					snprintf(buf, len, "%s", rel[i]);
				else
					snprintf(buf, len, "%s/%s", self, rel[i]);
				if (access(buf, X_OK) == 0)
					return buf;
			}
		}
	}
	return name;
}

/* testbed.sh: --testbed, $PPRUN_TESTBED, the source tree this binary was built
 * from (build/apps/../../tests), the installed copy (bindir/../libexecdir/
 * librt-pp, meson install), or PATH. */
static const char *find_testbed(const struct opts *o, char *buf, size_t len)
{
	static const char *const rel[] = {"../../tests/testbed.sh", PP_TESTBED_INSTALLED};
	return find_tool(o->testbed, "PPRUN_TESTBED", rel, 2, "testbed.sh", buf, len);
}

/* Run testbed.sh VERB [A B] quietly: 0, or -EIO when it failed. For "up",
 * jumbo frames for af_packet, packet and udp (a 1 MiB message in 117
 * frames, not 706) unless TESTBED_MTU says; AF_XDP on veth cannot attach
 * with an MTU above a page. */
static int testbed_run(const struct opts *o, const char *verb, const char *a, const char *b)
{
	char path[PATH_MAX + 32];
	const char *tb = find_testbed(o, path, sizeof(path));
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, STDOUT_FILENO);
		int jumbo = strcmp(o->dev_kind, "af_packet") == 0 ||
			    strcmp(o->dev_kind, "packet") == 0 || o->udp;
		if (strcmp(verb, "up") == 0 && !getenv("TESTBED_MTU"))
			setenv("TESTBED_MTU", jumbo ? "9000" : "1500", 1);
		execlp(tb, tb, verb, a, b, (char *)NULL);
		fprintf(stderr, "pprun: cannot run %s: %s (use --testbed PATH)\n", tb,
			strerror(errno));
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int testbed_up(const struct opts *o)
{
	char nodes[16], ports[16];
	snprintf(nodes, sizeof(nodes), "%d", o->nodes);
	/* With daemons each node needs one port, the daemon's. */
	snprintf(ports, sizeof(ports), "%d", o->daemon ? 1 : (o->nranks + o->nodes - 1) / o->nodes);
	return testbed_run(o, "up", nodes, ports);
}

/* testbed.sh ipv4 on|off: the nodes' port addresses for a udp job. */
static int testbed_ipv4(const struct opts *o, const char *onoff)
{
	return testbed_run(o, "ipv4", onoff, NULL);
}

/* --dev-kind udp: nranks consecutive UDP ports free on udp_addr, from a
 * random one of the range a udp: MAC holds (driver/udp/udp_addr.h). They
 * are free when pprun looks; a rank that finds its port taken since fails
 * at open, saying so. 0, or -1 with the reason printed. */
static int udp_ports(struct opts *o)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	if (inet_pton(AF_INET, o->udp_addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "pprun: --udp-addr '%s' is not an IPv4 address\n", o->udp_addr);
		return -1;
	}
	const unsigned lo = 49152, span = 65536 - lo - (unsigned)o->nranks;
	static int fds[MAX_RANKS];
	for (int tries = 0; tries < 64; tries++) {
		unsigned r = 0;
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (unsigned)getpid() * 2654435761u + (unsigned)tries;
		unsigned base = lo + r % span;
		int n = 0, err = 0;
		for (; n < o->nranks; n++) {
			fds[n] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			sa.sin_port = htons((uint16_t)(base + (unsigned)n));
			if (fds[n] < 0 || bind(fds[n], (struct sockaddr *)&sa, sizeof(sa)) != 0) {
				err = errno;
				if (fds[n] >= 0)
					close(fds[n]);
				break;
			}
		}
		for (int k = 0; k < n; k++)
			close(fds[k]);
		if (n == o->nranks) {
			o->udp_base = base;
			return 0;
		}
		if (err != EADDRINUSE) {
			fprintf(stderr, "pprun: cannot bind a UDP port on %s: %s\n", o->udp_addr,
				strerror(err));
			return -1;
		}
	}
	fprintf(stderr, "pprun: no %d free UDP ports in a row on %s\n", o->nranks, o->udp_addr);
	return -1;
}

static void set_env(const char *key, const char *val)
{
	if (val && setenv(key, val, 1) != 0) {
		perror("pprun: setenv");
		_exit(127);
	}
}

/* --fault SPEC: dev becomes "fault:SPEC,seed=SEED;dev" (its own seed per
 * port unless SPEC names one). */
static void faulty(const struct opts *o, char *dev, size_t len, int seed)
{
	if (!o->fault)
		return;
	char out[768];
	int n = strstr(o->fault, "seed=")
		    ? snprintf(out, sizeof(out), "fault:%s;%s", o->fault, dev)
		    : snprintf(out, sizeof(out), "fault:%s,seed=%d;%s", o->fault, seed, dev);
	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr, "pprun: --fault '%s': device string too long\n", o->fault);
		_exit(2);
	}
	memcpy(dev, out, (size_t)n + 1);
}

/* udp: ports on the test bed: rank r's is its port's address (testbed.sh
 * addr NODE PORT: 10.78.NODE.PORT+1) at UDP port UDP_TB_PORT. */
#define UDP_TB_ADDR "10.78.%d.%d"
#define UDP_TB_PORT 50000u

/* Every rank's udp: address, a line each, in a file the ranks' peerfile=
 * names (a peers= list of 256 ranks would not fit a device string). */
static int udp_tb_peers(struct opts *o)
{
	snprintf(o->peerfile, sizeof(o->peerfile), "/tmp/pprun-peers.XXXXXX");
	int fd = mkstemp(o->peerfile);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "pprun: cannot write a peer file in /tmp: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		o->peerfile[0] = 0;
		return -1;
	}
	fchmod(fd, 0644); /* ranks read it, whoever they run as */
	for (int r = 0; r < o->nranks; r++) {
		int node, port;
		place(o, r, &node, &port);
		fprintf(f, UDP_TB_ADDR ":%u\n", node, port + 1, UDP_TB_PORT);
	}
	if (fclose(f) != 0) {
		fprintf(stderr, "pprun: cannot write %s: %s\n", o->peerfile, strerror(errno));
		unlink(o->peerfile);
		o->peerfile[0] = 0;
		return -1;
	}
	return 0;
}

/* In the child: enter the node's namespace, pin, set PP_*, exec. */
static void child(const struct opts *o, int rank, unsigned job, uint64_t token, int out_fd,
		  int err_fd)
{
	int node, port;
	char buf[256], ns[64];
	place(o, rank, &node, &port);
	snprintf(ns, sizeof(ns), o->udp && !o->udp_tb ? "udp%d" : "ppn%d", node);
	setpgid(0, 0); /* its own group, so stopping a rank stops its children */

	dup2(out_fd, STDOUT_FILENO);
	dup2(err_fd, STDERR_FILENO);

	if (!o->udp || o->udp_tb) {
		snprintf(buf, sizeof(buf), "/var/run/netns/%s", ns);
		int fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
			fprintf(stderr, "pprun: cannot enter namespace %s: %s\n", ns,
				strerror(errno));
			_exit(127);
		}
		close(fd);
	}

	if (!o->no_pin) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(ncpu > 0 ? rank % ncpu : 0, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}

	snprintf(buf, sizeof(buf), "%d", rank);
	set_env("PP_RANK", buf);
	snprintf(buf, sizeof(buf), "%d", o->nranks);
	set_env("PP_SIZE", buf);
	snprintf(buf, sizeof(buf), "%u", job);
	set_env("PP_JOB", buf);
	set_env("PP_NODE", ns);
	if (o->daemon) {
		snprintf(buf, sizeof(buf), "/run/pp/ppd-%s.sock", ns);
		set_env("PP_DAEMON", buf);
		/* The daemons hold the job claimed for this uid and token
		 * (claim_job): nobody outside this launch can join it, take one
		 * of its ranks, or bind its number first. */
		snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)token);
		set_env("PP_TOKEN", buf);
	} else if (o->frame_udp) {
		/* pp0 of its node, framing in UDP on its address (testbed.sh
		 * addr), every rank's in the file; the test bed is one L2
		 * segment, so single frames go under the link EtherType. */
		char word[160];
		snprintf(word, sizeof(word),
			 "frame=udp,link=raw,addr=" UDP_TB_ADDR ",port=%u,peerfile=%s", node,
			 port + 1, UDP_TB_PORT, o->peerfile);
		if (strcmp(o->dev_kind, "packet") == 0)
			snprintf(buf, sizeof(buf), "packet:pp%d,%s", port, word);
		else /* DPDK's: the framing is a word of its own */
			snprintf(buf, sizeof(buf), "--vdev=net_%s0,iface=pp%d %s", o->dev_kind,
				 port, word);
		faulty(o, buf, sizeof(buf), 1 + rank);
		set_env("PP_DEV", buf);
	} else if (o->udp_tb) {
		/* Its port's address in its node (testbed.sh addr), every
		 * rank's in the file. */
		snprintf(buf, sizeof(buf), "udp:" UDP_TB_ADDR ":%u,peerfile=%s", node, port + 1,
			 UDP_TB_PORT, o->peerfile);
		faulty(o, buf, sizeof(buf), 1 + rank);
		set_env("PP_DEV", buf);
	} else if (o->udp) {
		/* Its own UDP port, and every rank's for broadcasts. */
		snprintf(buf, sizeof(buf), "udp:%s:%u,peers=%s:%u-%u", o->udp_addr,
			 o->udp_base + (unsigned)rank, o->udp_addr, o->udp_base,
			 o->udp_base + (unsigned)o->nranks - 1);
		faulty(o, buf, sizeof(buf), 1 + rank);
		set_env("PP_DEV", buf);
	} else if (strcmp(o->dev_kind, "pcap") == 0 || strcmp(o->dev_kind, "packet") == 0) {
		snprintf(buf, sizeof(buf), "%s:pp%d", o->dev_kind, port);
		faulty(o, buf, sizeof(buf), 1 + rank);
		set_env("PP_DEV", buf);
	} else {
		snprintf(buf, sizeof(buf), "--vdev=net_%s0,iface=pp%d", o->dev_kind, port);
		faulty(o, buf, sizeof(buf), 1 + rank);
		set_env("PP_DEV", buf);
	}
	set_env("PP_MODE", o->mode);
	set_env("PP_BTP1", o->btp1);
	set_env("PP_BTP2", o->btp2);
	if (status_tty)
		setenv("PPRUN_TTY", "1", 1);
	else
		unsetenv("PPRUN_TTY");

	execvp(o->argv[0], o->argv);
	fprintf(stderr, "pprun: cannot run %s: %s\n", o->argv[0], strerror(errno));
	_exit(127);
}

static void status_clear(void)
{
	if (status_shown) {
		fputs("\033[K", stderr);
		fflush(stderr);
		status_shown = 0;
	}
}

/* A rank's status line (n bytes at t, without its '\r'); its own
 * clear-to-end-of-line sequences are dropped, an empty one clears. */
static void status_show(int rank, const char *t, size_t n)
{
	char line[LINE_MAX_LEN];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '\033' && i + 2 < n && t[i + 1] == '[' && t[i + 2] == 'K') {
			i += 2;
			continue;
		}
		line[k++] = t[i];
	}
	if (k == 0) {
		status_clear();
		return;
	}
	fprintf(stderr, "[%d] %.*s\033[K\r", rank, (int)k, line);
	fflush(stderr);
	status_shown = 1;
}

/* Print every complete line of s->buf with the rank prefix; keep the rest. */
static void flush_lines(struct stream *s, int all)
{
	size_t start = 0;
	for (size_t i = 0; i < s->used; i++) {
		int status = s->buf[i] == '\r' && status_tty && s->out == stderr &&
			     !(i + 1 < s->used && s->buf[i + 1] == '\n');
		if (status) {
			status_show(s->rank, s->buf + start, i - start);
			start = i + 1;
		} else if (s->buf[i] == '\n') {
			status_clear();
			fprintf(s->out, "[%d] %.*s\n", s->rank, (int)(i - start), s->buf + start);
			start = i + 1;
		}
	}
	if (all && start < s->used) {
		status_clear();
		fprintf(s->out, "[%d] %.*s\n", s->rank, (int)(s->used - start), s->buf + start);
		start = s->used;
	}
	if (start == 0 && s->used == sizeof(s->buf)) { /* a line longer than the buffer */
		status_clear();
		fprintf(s->out, "[%d] %.*s\n", s->rank, (int)s->used, s->buf);
		start = s->used;
	}
	memmove(s->buf, s->buf + start, s->used - start);
	s->used -= start;
	fflush(s->out);
}

static void read_stream(struct stream *s)
{
	ssize_t n = read(s->fd, s->buf + s->used, sizeof(s->buf) - s->used);
	if (n > 0) {
		s->used += (size_t)n;
		flush_lines(s, 0);
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		flush_lines(s, 1);
		close(s->fd);
		s->fd = -1;
	}
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Set by SIGINT/SIGTERM: the main loop stops the ranks and exits. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void kill_all(const pid_t *pids, int n, int sig)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(-pids[i], sig);
}

/* The ppd program: --ppd, $PPRUN_PPD, beside this binary (build tree:
 * apps/ppd/ppd), or PATH. */
static const char *find_ppd(const struct opts *o, char *buf, size_t len)
{
	static const char *const rel[] = {"ppd/ppd", "ppd"};
	return find_tool(o->ppd, "PPRUN_PPD", rel, 2, "ppd", buf, len);
}

/* Start node's daemon in its namespace, on the node's port pp0. */
static pid_t daemon_start(const struct opts *o, int node)
{
	char path[PATH_MAX + 16], ns[64], nspath[96], dev[384], sock[128], cores[32];
	const char *ppd = find_ppd(o, path, sizeof(path));
	snprintf(ns, sizeof(ns), "ppn%d", node);
	snprintf(sock, sizeof(sock), "/run/pp/ppd-%s.sock", ns);
	if (strcmp(o->dev_kind, "pcap") == 0 || strcmp(o->dev_kind, "packet") == 0)
		snprintf(dev, sizeof(dev), "%s:pp0", o->dev_kind);
	else
		snprintf(dev, sizeof(dev), "--vdev=net_%s0,iface=pp0", o->dev_kind);
	faulty(o, dev, sizeof(dev), 100 + node);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(cores, sizeof(cores), "%ld", ncpu > 0 ? node % ncpu : 0);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	setpgid(0, 0);
	snprintf(nspath, sizeof(nspath), "/var/run/netns/%s", ns);
	int fd = open(nspath, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
		fprintf(stderr, "pprun: cannot enter namespace %s: %s\n", ns, strerror(errno));
		_exit(127);
	}
	execlp(ppd, ppd, "--dev", dev, "--socket", sock, "--cores",
	       o->ppd_cores ? o->ppd_cores : cores, (char *)NULL);
	fprintf(stderr, "pprun: cannot run %s: %s (use --ppd PATH)\n", ppd, strerror(errno));
	_exit(127);
}

/* Wait until node's daemon answers on its socket; 0, or -1 when it exited
 * or did not answer within 20 s. */
static int daemon_wait(pid_t pid, int node)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/run/pp/ppd-ppn%d.sock", node);
	for (int i = 0; i < 2000; i++) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return -1;
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		int ok = s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (s >= 0)
			close(s);
		if (ok)
			return 0;
		usleep(10000);
	}
	return -1;
}

/* Claim job at node's daemon for uid's ranks giving token, size ranks
 * (driver/ppd/ppd_shm.h, Claims): the connection holding the claim, or the
 * daemon's refusal (-errno, its message in why). */
static int claim_at(int node, uint32_t job, uint64_t token, int size, char *why, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/run/pp/ppd-ppn%d.sock", node);
	snprintf(why, len, "no answer");
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		snprintf(why, len, "%s", strerror(errno));
		if (s >= 0)
			close(s);
		return -ENODEV;
	}
	struct ppd_claim_req req = {.magic = PPD_CLAIM_MAGIC,
				    .version = PPD_VERSION,
				    .job = job,
				    .size = (uint32_t)size,
				    .uid = (uint32_t)getuid(),
				    .token = token};
	struct ppd_attach_rep rep;
	if (send(s, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req) ||
	    recv(s, &rep, sizeof(rep), 0) != (ssize_t)sizeof(rep)) {
		close(s);
		return -EPROTO;
	}
	rep.message[sizeof(rep.message) - 1] = '\0';
	snprintf(why, len, "%s", rep.message);
	if (rep.status) {
		close(s);
		return rep.status < 0 ? rep.status : -EPROTO;
	}
	return s;
}

/* Pick the job key at random and claim it at every node's daemon before a
 * rank starts, for this uid (the ranks run as it), the token the ranks are
 * given (as they hash it) and the job's size; another key when a daemon
 * has that one bound to someone else. The connections in fds hold the
 * claims for the job's life: they close when pprun exits, however it
 * ends, and each daemon then keeps the binding only while ranks of the
 * job are still attached. 0 (the key in *job), or -1 with the reason
 * printed. */
static int claim_job(const struct opts *o, const char *token_text, unsigned *job, int *fds)
{
	uint64_t token = ppd_token_hash(token_text);
	for (int tries = 0; tries < 16; tries++) {
		uint32_t key;
		if (getrandom(&key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
			perror("pprun: getrandom");
			return -1;
		}
		char why[192];
		int n, rc = 0;
		for (n = 0; n < o->nodes; n++)
			if ((rc = fds[n] = claim_at(n, key, token, o->nranks, why, sizeof(why))) <
			    0)
				break;
		if (n == o->nodes) {
			*job = key;
			return 0;
		}
		for (int k = 0; k < n; k++)
			close(fds[k]);
		if (rc != -EADDRINUSE) {
			fprintf(stderr,
				"pprun: the daemon of node ppn%d refused the job's claim: %s\n", n,
				why);
			return -1;
		}
	}
	fprintf(stderr, "pprun: every job key tried is bound at some daemon already\n");
	return -1;
}

/* SIGTERM (the daemons drain), then SIGKILL after 10 s. */
static void daemons_stop(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGTERM);
	for (int t = 0; t < 1000; t++) {
		int left = 0;
		for (int i = 0; i < n; i++) {
			if (pids[i] > 0 && waitpid(pids[i], NULL, WNOHANG) != 0)
				pids[i] = -1; /* exited, or reaped already */
			left += pids[i] > 0;
		}
		if (!left)
			return;
		usleep(10000);
	}
	for (int i = 0; i < n; i++)
		if (pids[i] > 0) {
			fprintf(stderr, "pprun: daemon of node %d did not stop; killing it\n", i);
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
}

int main(int argc, char **argv)
{
	struct opts o;
	parse_opts(argc, argv, &o);

	if (o.udp && !o.udp_tb) {
		if (udp_ports(&o) != 0)
			return 2;
	} else if (geteuid() != 0) {
		fprintf(stderr, "pprun: must run as root (it enters network namespaces)\n");
		return 2;
	} else if (testbed_up(&o) != 0) {
		fprintf(stderr, "pprun: could not bring up the test bed (%d nodes)\n", o.nodes);
		return 2;
	} else if (o.udp_tb && (udp_tb_peers(&o) != 0 || testbed_ipv4(&o, "on") != 0)) {
		fprintf(stderr, "pprun: could not give the test bed's ports their addresses\n");
		if (o.peerfile[0])
			unlink(o.peerfile);
		testbed_ipv4(&o, "off");
		return 2;
	}

	static pid_t pids[MAX_RANKS], dpids[MAX_RANKS];
	if (o.daemon) {
		for (int n = 0; n < o.nodes; n++)
			dpids[n] = daemon_start(&o, n);
		for (int n = 0; n < o.nodes; n++) {
			if (dpids[n] < 0 || daemon_wait(dpids[n], n) != 0) {
				fprintf(stderr, "pprun: the daemon of node ppn%d did not start\n",
					n);
				daemons_stop(dpids, o.nodes);
				return 2;
			}
		}
	}
	static struct stream streams[2 * MAX_RANKS];
	unsigned job = (unsigned)getpid() ^ (unsigned)time(NULL) << 8;
	uint64_t token = 0;
	if (getrandom(&token, sizeof(token), 0) != (ssize_t)sizeof(token))
		token = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	static int claims[MAX_RANKS]; /* held until pprun exits */
	if (o.daemon) {
		char text[24]; /* PP_TOKEN as child() writes it */
		snprintf(text, sizeof(text), "%016llx", (unsigned long long)token);
		if (claim_job(&o, text, &job, claims) != 0) {
			daemons_stop(dpids, o.nodes);
			return 2;
		}
	}
	int nstreams = 2 * o.nranks;
	/* One secret per launch for every rank (PP_JOB_SECRET): their HELLO and
	 * BYE prove it, so nobody else on the link can end, replace or join a
	 * rank of this job. A secret set by the caller is kept. */
	if (!getenv("PP_JOB_SECRET")) {
		uint8_t sb[32];
		char secret[2 * sizeof(sb) + 1];
		if (getrandom(sb, sizeof(sb), 0) != (ssize_t)sizeof(sb)) {
			perror("pprun: getrandom");
			return 2;
		}
		for (size_t i = 0; i < sizeof(sb); i++)
			snprintf(secret + 2 * i, 3, "%02x", sb[i]);
		setenv("PP_JOB_SECRET", secret, 1);
	}

	signal(SIGPIPE, SIG_IGN);
	status_tty = isatty(STDERR_FILENO);
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (int r = 0; r < o.nranks; r++) {
		int po[2], pe[2];
		if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
			perror("pprun: pipe");
			kill_all(pids, r, SIGKILL);
			return 2;
		}
		pids[r] = fork();
		if (pids[r] < 0) {
			perror("pprun: fork");
			kill_all(pids, r, SIGKILL);
			if (o.daemon)
				daemons_stop(dpids, o.nodes);
			return 2;
		}
		if (pids[r] == 0)
			child(&o, r, job, token, po[1], pe[1]);
		setpgid(pids[r], pids[r]); /* also here: no race with kill_all */
		close(po[1]);
		close(pe[1]);
		streams[2 * r] = (struct stream){.fd = po[0], .rank = r, .out = stdout};
		streams[2 * r + 1] = (struct stream){.fd = pe[0], .rank = r, .out = stderr};
	}

	int status = 0, alive = o.nranks, open_streams = nstreams;
	double deadline = o.timeout_s ? now_s() + o.timeout_s : 0;
	struct pollfd pfd[2 * MAX_RANKS];
	double drain_until = 0;
	while (alive > 0 || open_streams > 0) {
		if (alive == 0) { /* output a left-behind child still holds open */
			if (!drain_until)
				drain_until = now_s() + 1;
			else if (now_s() > drain_until)
				break;
		}
		int np = 0;
		for (int i = 0; i < nstreams; i++)
			if (streams[i].fd >= 0)
				pfd[np++] = (struct pollfd){.fd = streams[i].fd, .events = POLLIN};
		if (np)
			poll(pfd, (nfds_t)np, 100);
		else
			usleep(10000);
		for (int i = 0, k = 0; i < nstreams; i++)
			if (streams[i].fd >= 0 && pfd[k++].revents)
				read_stream(&streams[i]);
		open_streams = 0;
		for (int i = 0; i < nstreams; i++)
			open_streams += streams[i].fd >= 0;

		int st;
		pid_t pid;
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
			int r = 0;
			while (r < o.nranks && pids[r] != pid)
				r++;
			if (r == o.nranks) {
				for (int n = 0; o.daemon && n < o.nodes; n++)
					if (dpids[n] == pid) {
						dpids[n] = -1;
						fprintf(stderr,
							"pprun: the daemon of node ppn%d exited\n",
							n);
					}
				continue;
			}
			pids[r] = -1;
			alive--;
			int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			if (code != 0 && status == 0) {
				status = code;
				status_clear();
				fprintf(stderr,
					"pprun: rank %d exited with status %d; stopping the job\n",
					r, code);
				kill_all(pids, o.nranks, SIGTERM);
				/* Ranks stuck in a busy poll get 3 s before SIGKILL. */
				double soon = now_s() + 3;
				if (!deadline || deadline > soon)
					deadline = soon;
			}
		}
		if (stop_signal && status == 0) {
			/* Each rank leads its own group: pass the signal on, or the
			 * ranks would go on polling after we are gone. */
			status_clear();
			fprintf(stderr, "pprun: signal %d; stopping %d rank(s)\n", (int)stop_signal,
				alive);
			kill_all(pids, o.nranks, SIGTERM);
			status = 128 + stop_signal;
			double soon = now_s() + 3;
			if (!deadline || deadline > soon)
				deadline = soon;
		}
		if (deadline && alive > 0 && now_s() > deadline) {
			if (status == 0) {
				status_clear();
				fprintf(stderr, "pprun: timeout after %d s; killing %d rank(s)\n",
					o.timeout_s, alive);
				status = 124;
			}
			kill_all(pids, o.nranks, SIGKILL);
			deadline = 0;
		}
	}
	status_clear();
	if (o.daemon)
		daemons_stop(dpids, o.nodes);
	if (o.peerfile[0])
		unlink(o.peerfile);
	if (o.udp_tb)
		testbed_ipv4(&o, "off"); /* Open MPI's launcher reads the ports' addresses */
	return status;
}
