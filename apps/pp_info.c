/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pp_info: what this build of librt-pp is and what it can do here, in the
 * spirit of ucx_info and fi_info: versions (library, wire format, node
 * daemon region), build features, the port backends built in, the network
 * devices of this host (or namespace) with their MTU, the topology as ppd
 * places its handlers, and every configuration key with its default, the
 * values it takes and its value in the environment (PP_<KEY>). --check DEV
 * opens a port and reports it; --config STR checks settings as pp_init
 * would, and which bootstrap it would use. Everything comes from the code
 * that does the thing: the key table of runtime/config.c, the backend table
 * of driver/port.c, runtime/topo.c, runtime/bootstrap.c.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap.h"
#include "config.h"
#include "iface.h"
#include "pp.h"
#include "pp_build.h"
#include "pp_port.h"
#include "ppd.h"
#include "sim/pp_sim.h"
#include "topo.h"
#include "wire.h"

enum section {
	S_VERSION = 1,
	S_FEATURES = 2,
	S_DEVICES = 4,
	S_TOPOLOGY = 8,
	S_KEYS = 16,
	S_ALL = 31,
};

static void usage(FILE *f)
{
	fputs("usage: pp_info [--version] [--features] [--devices] [--topology] [--keys]\n"
	      "       pp_info --check DEV\n"
	      "       pp_info --config STR\n"
	      "What this build of librt-pp is and what it can use here. With no option,\n"
	      "every section; with section options, those.\n\n"
	      "  --version      library, wire format and node-daemon region versions\n"
	      "  --features     what the build has: DPDK, libpcap, hwloc, PMIx, libfabric\n"
	      "  --devices      port backends built in, and the network interfaces here\n"
	      "                 (/sys/class/net) with their MTU and device strings\n"
	      "  --topology     NUMA nodes, cores, caches and where ppd puts its handlers\n"
	      "  --keys         every configuration key: default, values, PP_<KEY> now\n"
	      "  --check DEV    open the port DEV (as the dev key: packet:IFACE, pcap:IFACE,\n"
	      "                 udp:ADDR:PORT, sim:LINK/I, DPDK EAL arguments) and report\n"
	      "                 it, or why it cannot be opened\n"
	      "  --config STR   check settings (key=value,...) and the PP_* environment as\n"
	      "                 pp_init reads them, and say which bootstrap it would use\n"
	      "  -h, --help     this text\n"
	      "Exit status: 0, 1 when --check or --config fails, 2 on bad usage.\n",
	      f);
}

/* --- versions and features ------------------------------------------------ */

static void version(void)
{
	printf("librt-pp %s (%s, %s)\n", PP_BUILD_VERSION, PP_BUILD_TYPE, PP_BUILD_CC);
	printf("wire format version %d (EtherType 0x%04X, %d-byte header; docs/wire.md)\n",
	       PP_WIRE_VERSION, PP_ETH_TYPE_PP, PP_WIRE_HDR_LEN);
	printf("ppd region version %u (ranks and daemons must agree)\n", PPD_VERSION);
}

static void feature(const char *name, const char *ver, const char *why_not)
{
	if (ver[0])
		printf("  %-10s yes (%s)\n", name, ver);
	else
		printf("  %-10s no (%s)\n", name, why_not);
}

static void features(void)
{
	printf("build features:\n");
	feature("DPDK", PP_BUILD_DPDK, "install libdpdk-dev and reconfigure");
	feature("libpcap", PP_BUILD_PCAP, "install libpcap-dev and reconfigure");
	feature("hwloc", PP_BUILD_HWLOC, "required");
	feature("PMIx", PP_BUILD_PMIX,
		"install libpmix-dev and reconfigure: mpirun, prterun, srun --mpi=pmix");
	feature("libfabric", PP_BUILD_OFI,
		"install libfabric-dev and reconfigure: the provider libpp-fi.so (ofi/README.md)");
}

/* --- devices ---------------------------------------------------------------- */

/* The first line of /sys/class/net/IFACE/FILE into buf, "?" when absent. */
static void sysfs(const char *iface, const char *file, char *buf, size_t len)
{
	char path[320];
	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", iface, file);
	FILE *f = fopen(path, "r");
	if (!f || !fgets(buf, (int)len, f))
		snprintf(buf, len, "?");
	else
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

/* The first IPv4 address of iface into buf ("" when it has none). */
/* 1 when this process may open raw ports (packet:, pcap:, DPDK's af_packet):
 * an AF_PACKET socket needs CAP_NET_RAW. */
static int raw_allowed(void)
{
	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void devices(void)
{
	static const char *const how[] = {
	    "sim",
	    "sim:LINK/INDEX  the in-memory lossy link (one process; tests)",
	    "pcap",
	    "pcap:IFACE      libpcap capture and inject",
	    "packet",
	    "packet:IFACE    AF_PACKET socket, its RX/TX ring slots as buffers (CAP_NET_RAW); "
	    ",frame=udp: in UDP/IPv4, runs as one GSO message, routable",
	    "udp",
	    "udp:ADDR:PORT   frames in UDP/IPv4 datagrams, no privilege, routable "
	    "(,peers=A:P+... for broadcasts)",
	    "ppd",
	    "ppd:...         the node daemon (set daemon=SOCKET instead)",
	    "fault",
	    "fault:SPEC;DEV  DEV with loss, duplication, reordering on receive",
	    "dpdk",
	    "EAL arguments   DPDK: --vdev=net_af_packet0,iface=IFACE, net_af_xdp, "
	    "net_memif, PCI",
	};
	printf("port backends (the dev key):\n");
	struct pp_port_backend b;
	for (size_t i = 0; pp_port_backend(i, &b) == 0; i++) {
		const char *text = b.name;
		for (size_t k = 0; k < sizeof(how) / sizeof(how[0]); k += 2)
			if (strcmp(how[k], b.name) == 0)
				text = how[k + 1];
		printf("  %-6s %-3s  %s%s%s\n", b.name, b.built ? "yes" : "no", text,
		       b.built ? "" : ": ", b.built ? "" : b.missing);
	}

	char *names[256];
	int n = 0;
	DIR *d = opendir("/sys/class/net");
	if (!d) {
		printf("network interfaces: /sys/class/net: %s\n", strerror(errno));
		return;
	}
	for (struct dirent *e; (e = readdir(d)) && n < 256;)
		if (e->d_name[0] != '.' && (names[n] = strdup(e->d_name)))
			n++;
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), name_cmp);
	printf("\nnetwork interfaces here (/sys/class/net):\n");
	printf("  %-16s %6s %-8s %-17s  %s\n", "name", "mtu", "state", "mac", "dev");
	for (int i = 0; i < n; i++) {
		char mtu[32], state[32], mac[64], ip[INET_ADDRSTRLEN], udp[128] = "";
		sysfs(names[i], "mtu", mtu, sizeof(mtu));
		sysfs(names[i], "operstate", state, sizeof(state));
		sysfs(names[i], "address", mac, sizeof(mac));
		if (pp_iface_ipv4(names[i], ip, sizeof(ip)) == 0)
			snprintf(udp, sizeof(udp), " | udp:%s:PORT | packet:%s,frame=udp", ip,
				 names[i]);
		printf("  %-16s %6s %-8s %-17s  packet:%s | pcap:%s | "
		       "--vdev=net_af_packet0,iface=%s%s\n",
		       names[i], mtu, state, mac, names[i], names[i], names[i], udp);
		free(names[i]);
	}
	/* Which kind to give a rank here, and why (README, "Port kinds"). */
	if (raw_allowed())
		printf("\nport kind for a rank here: packet:IFACE (raw ports open here: "
		       "CAP_NET_RAW), pprun's default as root: the fastest on one L2 segment "
		       "at small sizes; packet:IFACE,frame=udp where the link offloads large "
		       "messages (GSO) or the ranks are on different subnets (,link=raw on "
		       "one segment: small messages as fast as packet:IFACE)\n");
	else
		printf("\nport kind for a rank here: udp:ADDR:PORT (no raw port opens "
		       "here: no CAP_NET_RAW; udp: needs no privilege and crosses "
		       "routers), pprun's default without root; under a PMIx launcher "
		       "or the libfabric provider packet:IFACE becomes udp: on IFACE's "
		       "address by itself (udp_fallback); or a node daemon's ranks "
		       "(daemon=SOCKET)\n");
}

/* --- configuration keys ------------------------------------------------------ */

static void env_name(const char *key, char *out, size_t len)
{
	size_t i = 0;
	int n = snprintf(out, len, "PP_");
	for (; key[i] && (size_t)n + i + 1 < len; i++)
		out[n + i] = (char)toupper((unsigned char)key[i]);
	out[n + i] = '\0';
}

static void keys(void)
{
	printf("configuration (pp_init \"key=value,...\", or PP_<KEY>; the string wins):\n");
	printf("  %-14s %-10s %-16s %s\n", "key", "default", "environment", "values");
	const struct pp_config_key *k;
	for (size_t i = 0; (k = pp_config_key(i)); i++) {
		char var[64];
		env_name(k->name, var, sizeof(var));
		const char *now = getenv(var);
		printf("  %-14s %-10s %-16s %s\n", k->name, k->def && k->def[0] ? k->def : "-",
		       now ? now : "-", k->values);
		printf("  %-14s %s\n", "", k->help);
	}
	/* The environment as pp_init would read it: an unknown PP_ variable or
	 * a bad value is an error there. */
	struct pp_config c;
	if (pp_config_load(&c, NULL) == 0)
		printf("environment: every PP_* variable parses\n");
	else
		printf("environment: pp_init would refuse it (see the error above)\n");
}

/* --- --check and --config ---------------------------------------------------- */

/* For a sim: device (alone or under fault:), make its link, with enough
 * ports for the index named. */
static int sim_link_for(const char *dev, struct pp_sim_link **l)
{
	const char *p = strncmp(dev, "sim:", 4) == 0 ? dev : strstr(dev, ";sim:");
	*l = NULL;
	if (!p)
		return 0;
	p += p[0] == ';' ? 5 : 4;
	const char *slash = strrchr(p, '/');
	char name[64];
	if (!slash || slash == p || (size_t)(slash - p) >= sizeof(name))
		return 0; /* pp_port_open says what is wrong */
	char *end;
	unsigned long idx = strtoul(slash + 1, &end, 10);
	if (*end || idx > 253)
		return 0;
	memcpy(name, p, (size_t)(slash - p));
	name[slash - p] = '\0';
	struct pp_sim_conf sc = {.seed = 1};
	return pp_sim_link_create(l, name, (unsigned)idx + 1, &sc);
}

static int check(const char *dev)
{
	struct pp_sim_link *l;
	int rc = sim_link_for(dev, &l);
	if (rc) {
		fprintf(stderr, "pp_info: --check %s: cannot make the in-memory link: %s\n", dev,
			pp_strerror(rc));
		return 1;
	}
	struct pp_port *p;
	struct pp_port_conf conf = {.nb_queues = 1};
	rc = pp_port_open(&p, dev, &conf);
	if (rc) {
		fprintf(stderr, "pp_info: --check %s: cannot open the port: %s\n", dev,
			pp_strerror(rc));
		if (l)
			pp_sim_link_destroy(l);
		return 1;
	}
	struct pp_port_info pi;
	rc = pp_port_info(p, &pi);
	if (rc == 0) {
		printf("port %s\n", dev);
		printf("  driver    %s\n", pi.driver);
		printf("  mac       %02x:%02x:%02x:%02x:%02x:%02x\n", pi.mac[0], pi.mac[1],
		       pi.mac[2], pi.mac[3], pi.mac[4], pi.mac[5]);
		printf("  mtu       %u (at most %d payload bytes per frame)\n", pi.mtu,
		       pi.mtu > PP_WIRE_HDR_LEN ? pi.mtu - PP_WIRE_HDR_LEN : 0);
		printf("  queues    %u\n", pi.nb_queues);
		printf("  buffers   %u bytes\n", pi.buf_cap);
		printf("  link      %s", pi.link_up > 0	   ? "up"
					 : pi.link_up == 0 ? "down"
							   : "unknown");
		if (pi.speed_mbps)
			printf(", %u Mb/s", pi.speed_mbps);
		printf("\n");
	} else {
		fprintf(stderr, "pp_info: --check %s: no port information: %s\n", dev,
			pp_strerror(rc));
	}
	pp_port_close(p);
	if (l)
		pp_sim_link_destroy(l);
	return rc ? 1 : 0;
}

static int check_config(const char *str)
{
	struct pp_config c;
	if (pp_config_load(&c, str)) {
		fprintf(stderr, "pp_info: --config: refused (the key and value are named above)\n");
		return 1;
	}
	printf("configuration: ok (rank %d, size %d, mode %s, job '%s', dev '%s')\n", c.rank,
	       c.size, pp_mode_name(c.mode), c.job_name, c.dev);
	int launcher = pp_boot_launcher(getenv("PMIX_NAMESPACE"), getenv("PMIX_RANK"));
	printf("bootstrap: %s%s\n", pp_boot_name(pp_boot_choose(&c, launcher, pp_pmix_built())),
	       launcher ? " (a PMIx launcher's variables are set)" : "");
	return 0;
}

int main(int argc, char **argv)
{
	enum { O_VERSION = 256, O_FEATURES, O_DEVICES, O_TOPOLOGY, O_KEYS, O_CHECK, O_CONFIG };
	static const struct option lo[] = {
	    {"version", no_argument, NULL, O_VERSION},
	    {"features", no_argument, NULL, O_FEATURES},
	    {"devices", no_argument, NULL, O_DEVICES},
	    {"topology", no_argument, NULL, O_TOPOLOGY},
	    {"keys", no_argument, NULL, O_KEYS},
	    {"check", required_argument, NULL, O_CHECK},
	    {"config", required_argument, NULL, O_CONFIG},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	unsigned sections = 0;
	const char *dev = NULL, *config = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_VERSION:
			sections |= S_VERSION;
			break;
		case O_FEATURES:
			sections |= S_FEATURES;
			break;
		case O_DEVICES:
			sections |= S_DEVICES;
			break;
		case O_TOPOLOGY:
			sections |= S_TOPOLOGY;
			break;
		case O_KEYS:
			sections |= S_KEYS;
			break;
		case O_CHECK:
			dev = optarg;
			break;
		case O_CONFIG:
			config = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pp_info: unexpected argument '%s' (see --help)\n", argv[optind]);
		return 2;
	}
	if ((dev || config) && (sections || (dev && config))) {
		fprintf(stderr, "pp_info: --check and --config go alone (see --help)\n");
		return 2;
	}
	if (dev && !dev[0]) {
		fprintf(stderr, "pp_info: --check needs a device string (see --help)\n");
		return 2;
	}
	if (dev)
		return check(dev);
	if (config)
		return check_config(config);
	if (!sections)
		sections = S_ALL;
	const char *sep = "";
	if (sections & S_VERSION) {
		version();
		sep = "\n";
	}
	if (sections & S_FEATURES) {
		printf("%s", sep);
		features();
		sep = "\n";
	}
	if (sections & S_DEVICES) {
		printf("%s", sep);
		devices();
		sep = "\n";
	}
	if (sections & S_TOPOLOGY) {
		printf("%s", sep);
		printf("topology (ppd's default handler placement; PP_DEV names the NIC):\n");
		fflush(stdout);
		int rc = pp_topo_print(stdout, getenv("PP_DEV"), NULL, PPD_MAX_HANDLERS);
		if (rc)
			printf("  not available: %s\n", pp_strerror(rc));
		sep = "\n";
	}
	if (sections & S_KEYS) {
		printf("%s", sep);
		fflush(stdout);
		keys();
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
