/* SPDX-License-Identifier: BSD-3-Clause */
/* Opening a port: the device string's prefix picks the backend, once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "pp_log.h"
#include "pp_port.h"

#ifdef PP_HAVE_SIM
extern const struct pp_port_ops pp_port_ops_sim;
#endif
#ifdef PP_HAVE_PCAP
extern const struct pp_port_ops pp_port_ops_pcap;
#endif
#ifdef PP_HAVE_PACKET
extern const struct pp_port_ops pp_port_ops_packet;
#endif
#ifdef PP_HAVE_UDP
extern const struct pp_port_ops pp_port_ops_udp;
#endif
#ifdef PP_HAVE_DPDK
extern const struct pp_port_ops pp_port_ops_dpdk;
#endif
extern const struct pp_port_ops pp_port_ops_ppd;
extern const struct pp_port_ops pp_port_ops_fault;

static const struct {
	const char *prefix; /* "" matches anything: DPDK takes EAL arguments */
	const char *name;   /* for people (pp_info) */
	const struct pp_port_ops *ops;
	const char *missing; /* why it is absent, when it is */
} backends[] = {
    {"sim:", "sim",
#ifdef PP_HAVE_SIM
     &pp_port_ops_sim,
#else
     NULL,
#endif
     "the in-memory link is not built in"},
    {"pcap:", "pcap",
#ifdef PP_HAVE_PCAP
     &pp_port_ops_pcap,
#else
     NULL,
#endif
     "built without libpcap (install libpcap-dev and reconfigure)"},
    {"packet:", "packet",
#ifdef PP_HAVE_PACKET
     &pp_port_ops_packet,
#else
     NULL,
#endif
     "AF_PACKET rings are Linux only"},
    {"udp:", "udp",
#ifdef PP_HAVE_UDP
     &pp_port_ops_udp,
#else
     NULL,
#endif
     "UDP ports use recvmmsg and sendmmsg: Linux only"},
    {"ppd:", "ppd", &pp_port_ops_ppd, NULL},
    {"fault:", "fault", &pp_port_ops_fault, NULL},
    {"", "dpdk",
#ifdef PP_HAVE_DPDK
     &pp_port_ops_dpdk,
#else
     NULL,
#endif
     "built without DPDK (install libdpdk-dev and reconfigure)"},
};

int pp_port_backend(size_t i, struct pp_port_backend *out)
{
	if (!out || i >= sizeof(backends) / sizeof(backends[0]))
		return -ENOENT;
	out->prefix = backends[i].prefix;
	out->name = backends[i].name;
	out->built = backends[i].ops != NULL;
	out->missing = backends[i].ops ? NULL : backends[i].missing;
	return 0;
}

int pp_port_open(struct pp_port **port, const char *dev, const struct pp_port_conf *conf)
{
	static const struct pp_port_conf defaults = {.nb_queues = 1};
	if (!port || !dev || !dev[0]) {
		pp_err("port: no device given");
		return -EINVAL;
	}
	if (!conf)
		conf = &defaults;
	if (conf->nb_queues < 1 || conf->nb_queues > PP_PORT_MAX_QUEUES) {
		pp_err("port %s: %u queues asked, 1..%d possible", dev, conf->nb_queues,
		       PP_PORT_MAX_QUEUES);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		size_t n = strlen(backends[i].prefix);
		if (strncmp(dev, backends[i].prefix, n) != 0)
			continue;
		if (!backends[i].ops) {
			pp_err("port %s: %s", dev, backends[i].missing);
			return -ENOTSUP;
		}
		struct pp_port *p = NULL;
		int rc = backends[i].ops->open(&p, dev + n, conf);
		if (rc)
			return rc;
		p->ops = backends[i].ops;
		p->capture = NULL;
		if (conf->pcap_dump && conf->pcap_dump[0]) {
			rc = pp_capture_open(&p->capture, conf->pcap_dump);
			if (rc) {
				p->ops->close(p);
				return rc;
			}
		}
		*port = p;
		return 0;
	}
	return -ENODEV; /* not reached: "" matches every string */
}

void pp_port_close(struct pp_port *port)
{
	if (!port)
		return;
	struct pp_capture *cap = port->capture;
	port->ops->close(port);
	pp_capture_close(cap);
}

int pp_port_info(struct pp_port *port, struct pp_port_info *info)
{
	if (!port || !info)
		return -EINVAL;
	return port->ops->info(port, info);
}

int pp_port_stats(struct pp_port *port, struct pp_port_stats *stats)
{
	if (!port || !stats)
		return -EINVAL;
	return port->ops->stats(port, stats);
}

int pp_port_mem_register(struct pp_port *port, void *addr, size_t len)
{
	if (!port || !addr || !len)
		return -EINVAL;
	if (!port->ops->mem_register)
		return -ENOTSUP;
	return port->ops->mem_register(port, addr, len);
}

int pp_port_mem_unregister(struct pp_port *port, void *addr, size_t len)
{
	if (!port || !addr || !len)
		return -EINVAL;
	if (!port->ops->mem_unregister)
		return -ENOTSUP;
	return port->ops->mem_unregister(port, addr, len);
}
