/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPDK environment (EAL), initialised once per process.
 *
 * A port's device string is split into EAL options and one device. Options
 * are checked against the list below before EAL sees them, because EAL exits
 * the process on some (--help) and cannot be initialised twice; anything
 * else is refused with -EINVAL. Defaults added unless the string sets them:
 * a unique --file-prefix per process, --in-memory (--no-shconf with
 * --no-huge, which --in-memory does not accept), --no-telemetry, -l with
 * the first CPU the calling thread may run on, --no-huge (with a notice)
 * when no hugetlbfs is mounted or no hugepage is free, and for a PCI device
 * "-a ADDR" (EAL probes that NIC the standard way) or else --no-pci. So a
 * process that mixes PCI and virtual ports opens a PCI one first.
 */
#include "dpdk_eal.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "pp_log.h"

#define MAX_ARGS 48
#define ARG_LEN	 640

/* EAL options a device string may carry. */
static const struct {
	const char *name; /* as written, "-l" or "--lcores" */
	int has_arg;	  /* takes a value */
} eal_opts[] = {
    {"-l", 1},
    {"-c", 1},
    {"-n", 1},
    {"-m", 1},
    {"-d", 1},
    {"--lcores", 1},
    {"--main-lcore", 1},
    {"--socket-mem", 1},
    {"--socket-limit", 1},
    {"--huge-dir", 1},
    {"--iova-mode", 1},
    {"--file-prefix", 1},
    {"--log-level", 1},
    {"--base-virtaddr", 1},
    {"--no-huge", 0},
    {"--in-memory", 0},
    {"--no-pci", 0},
    {"--no-telemetry", 0},
    {"--legacy-mem", 0},
    {"--single-file-segments", 0},
    {"--match-allocations", 0},
};

static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static int eal_state; /* 0 not tried, 1 up, < 0 the error it failed with */

/* Index of the EAL option tok names (tok may be "--opt=value" or "-lVALUE"),
 * or -1. */
static int find_opt(const char *tok, size_t *name_len)
{
	for (size_t i = 0; i < sizeof(eal_opts) / sizeof(eal_opts[0]); i++) {
		size_t n = strlen(eal_opts[i].name);
		if (strncmp(tok, eal_opts[i].name, n) != 0)
			continue;
		char next = tok[n];
		int short_opt = eal_opts[i].name[1] != '-';
		if (next == '\0' || (next == '=' && !short_opt && eal_opts[i].has_arg) ||
		    (short_opt && eal_opts[i].has_arg)) {
			*name_len = n;
			return (int)i;
		}
	}
	return -1;
}

static int add_arg(struct pp_dpdk_args *a, const char *s)
{
	if (a->nb_opts == PP_DPDK_MAX_OPTS || strlen(s) >= sizeof(a->opts[0])) {
		pp_err("dpdk: too many or too long EAL arguments");
		return -EINVAL;
	}
	snprintf(a->opts[a->nb_opts++], sizeof(a->opts[0]), "%s", s);
	return 0;
}

int pp_dpdk_args_parse(const char *dev, struct pp_dpdk_args *out)
{
	struct pp_dpdk_args a;
	memset(&a, 0, sizeof(a));
	char buf[1024];
	if (strlen(dev) >= sizeof(buf)) {
		pp_err("dpdk: device string too long");
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", dev);
	char *save = NULL;
	for (char *tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		const char *devarg = NULL;
		if (strncmp(tok, "frame=", 6) == 0) {
			if (a.frame[0]) {
				pp_err("dpdk: one framing word per port ('%s' and '%s' given)",
				       a.frame, tok);
				return -EINVAL;
			}
			snprintf(a.frame, sizeof(a.frame), "%s", tok); /* fits: buf does */
			continue;
		}
		if (strncmp(tok, "--vdev", 6) == 0 || strncmp(tok, "--allow", 7) == 0 ||
		    strncmp(tok, "-a", 2) == 0) {
			size_t n = tok[1] == 'a' ? 2 : (tok[2] == 'v' ? 6 : 7);
			if (tok[n] == '=' && n > 2)
				devarg = tok + n + 1;
			else if (tok[n] && n == 2)
				devarg = tok + n;
			else if (!tok[n])
				devarg = strtok_r(NULL, " \t\n", &save);
			if (!devarg || !devarg[0]) {
				pp_err(
				    "dpdk: '%s' needs a device (e.g. --vdev=net_af_xdp0,iface=pp0)",
				    tok);
				return -EINVAL;
			}
		} else if (tok[0] != '-') {
			devarg = tok; /* a bare device: "net_af_packet0,iface=pp0" */
		}
		if (devarg) {
			if (a.devargs[0]) {
				pp_err("dpdk: one device per port ('%s' and '%s' given)", a.devargs,
				       devarg);
				return -EINVAL;
			}
			if (strlen(devarg) >= sizeof(a.devargs)) {
				pp_err("dpdk: device arguments too long");
				return -EINVAL;
			}
			snprintf(a.devargs, sizeof(a.devargs), "%s", devarg);
			continue;
		}
		size_t n;
		int i = find_opt(tok, &n);
		if (i < 0) {
			pp_err("dpdk: unknown or unsupported EAL argument '%s' in '%s'", tok, dev);
			return -EINVAL;
		}
		int rc = add_arg(&a, tok);
		if (rc)
			return rc;
		if (eal_opts[i].has_arg && !tok[n]) {
			const char *val = strtok_r(NULL, " \t\n", &save);
			if (!val || val[0] == '-') {
				pp_err("dpdk: EAL argument '%s' needs a value", tok);
				return -EINVAL;
			}
			if ((rc = add_arg(&a, val)))
				return rc;
		} else if (eal_opts[i].has_arg && tok[n] == '=' && !tok[n + 1]) {
			pp_err("dpdk: EAL argument '%s' needs a value", tok);
			return -EINVAL;
		}
	}
	if (!a.devargs[0]) {
		pp_err("dpdk: no device in '%s' (e.g. --vdev=net_af_packet0,iface=pp0, or a PCI "
		       "address)",
		       dev);
		return -EINVAL;
	}
	*out = a;
	return 0;
}

int pp_dpdk_is_pci(const char *devargs)
{
	unsigned dom, bus, dev, fn;
	char c;
	if (sscanf(devargs, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &c) >= 4)
		return 1;
	return sscanf(devargs, "%x:%x.%x%c", &bus, &dev, &fn, &c) >= 3;
}

static int has_opt(const struct pp_dpdk_args *a, const char *name)
{
	size_t n = strlen(name);
	for (unsigned i = 0; i < a->nb_opts; i++)
		if (strncmp(a->opts[i], name, n) == 0 &&
		    (a->opts[i][n] == '\0' || a->opts[i][n] == '=' || name[1] != '-'))
			return 1;
	return 0;
}

/* 1 when hugetlbfs is mounted and at least one hugepage is free. */
static int hugepages_usable(void)
{
	int mounted = 0;
	char line[512];
	FILE *f = fopen("/proc/mounts", "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (strstr(line, " hugetlbfs "))
				mounted = 1;
		fclose(f);
	}
	long free_pages = 0;
	f = fopen("/proc/meminfo", "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "HugePages_Free: %ld", &free_pages) == 1)
				break;
		fclose(f);
	}
	return mounted && free_pages > 0;
}

static int first_cpu(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &set))
				return i;
	return 0;
}

static int eal_log_level(void)
{
	switch (pp_log_level()) {
	case PP_LOG_DEBUG:
		return 8;
	case PP_LOG_INFO:
		return 6;
	case PP_LOG_WARN:
		return 5;
	default:
		return 4;
	}
}

static int eal_errno(int e)
{
	switch (e) {
	case EACCES:
	case EPERM:
		pp_err("dpdk: EAL initialisation refused: missing privileges (run as root or "
		       "with CAP_SYS_ADMIN, CAP_NET_RAW, CAP_IPC_LOCK)");
		return -EPERM;
	case ENOMEM:
		pp_err("dpdk: EAL initialisation: out of memory (too few free hugepages? reserve "
		       "more, or put --no-huge in the device string)");
		return -ENOMEM;
	case EINVAL:
		pp_err("dpdk: EAL rejected the arguments");
		return -EINVAL;
	default:
		pp_err("dpdk: EAL initialisation failed: %s", rte_strerror(e));
		return e > 0 ? -e : -EIO;
	}
}

int pp_dpdk_eal_init(const struct pp_dpdk_args *a)
{
	pthread_mutex_lock(&eal_lock);
	int rc = eal_state;
	if (rc == 1) {
		if (a->nb_opts)
			pp_info("dpdk: EAL already running; EAL options of a later port ignored");
		rc = 0;
		goto out;
	}
	if (rc < 0) {
		pp_err("dpdk: EAL failed to start earlier in this process");
		goto out;
	}
	static char store[MAX_ARGS][ARG_LEN];
	char *argv[MAX_ARGS + 1];
	int argc = 0;
#define ARG(...) snprintf(store[argc], ARG_LEN, __VA_ARGS__), argv[argc] = store[argc], argc++
	ARG("librt-pp");
	for (unsigned i = 0; i < a->nb_opts; i++)
		ARG("%s", a->opts[i]);
	if (!has_opt(a, "--file-prefix"))
		ARG("--file-prefix=pp-%ld", (long)getpid());
	if (!has_opt(a, "--no-telemetry"))
		ARG("--no-telemetry");
	if (!has_opt(a, "-l") && !has_opt(a, "-c") && !has_opt(a, "--lcores"))
		ARG("-l%d", first_cpu());
	/* A PCI device is probed by EAL itself (the standard path, only that
	 * one); with a virtual device, leave the PCI bus alone. */
	if (pp_dpdk_is_pci(a->devargs) && !has_opt(a, "-a") && !has_opt(a, "--no-pci")) {
		ARG("-a");
		ARG("%s", a->devargs);
	} else if (!pp_dpdk_is_pci(a->devargs) && !has_opt(a, "--no-pci")) {
		ARG("--no-pci");
	}
	if (!has_opt(a, "--log-level"))
		ARG("--log-level=%d", eal_log_level());
	int no_huge = has_opt(a, "--no-huge");
	if (!no_huge && !has_opt(a, "--huge-dir") && !hugepages_usable()) {
		pp_warn("dpdk: no hugepages mounted or free: running with --no-huge (slower; "
			"mount hugetlbfs and reserve pages for speed)");
		ARG("--no-huge");
		if (!has_opt(a, "-m"))
			ARG("-m512");
		no_huge = 1;
	}
	/* --no-huge implies legacy memory, which --in-memory refuses; without
	 * hugepages there are no page files anyway, only the shared config. */
	if (!has_opt(a, "--in-memory") && !has_opt(a, "--no-shconf"))
		ARG(no_huge ? "--no-shconf" : "--in-memory");
#undef ARG
	argv[argc] = NULL;
	char cmd[1024] = "";
	for (int i = 0; i < argc; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " %s", argv[i]);
	pp_info("dpdk: EAL arguments:%s", cmd);
	if (rte_eal_init(argc, argv) < 0) {
		int e = rte_errno;
		rc = eal_errno(e);
		/* EAL can be retried only after a pure argument error. */
		eal_state = e == EINVAL ? 0 : rc;
		goto out;
	}
	eal_state = 1;
	rc = 0;
out:
	pthread_mutex_unlock(&eal_lock);
	return rc;
}
