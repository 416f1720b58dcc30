/* SPDX-License-Identifier: BSD-3-Clause */
/* The DPDK environment: device-string parsing and once-per-process EAL set-up. */
#ifndef PP_DPDK_EAL_H
#define PP_DPDK_EAL_H

#define PP_DPDK_MAX_OPTS 24

/* A DPDK device string split into its parts. */
struct pp_dpdk_args {
	char devargs[512];		  /* the one device: "net_af_xdp0,iface=pp0" */
	char opts[PP_DPDK_MAX_OPTS][128]; /* EAL options, one per argv entry */
	unsigned nb_opts;		  /* entries in opts */
	char frame[1024];		  /* the framing word, "frame=udp,addr=...", or "" */
};

/* Split dev ("--vdev=X", "-a X", a bare device, plus EAL options such as
 * "-l 1" or "--no-huge", and the port's framing: a word "frame=eth|udp,..."
 * with udp/udp_raw.h's options) into out.
 * Errors: -EINVAL no device, two devices, or an option EAL does not take
 * from a device string (the reason is logged). */
int pp_dpdk_args_parse(const char *dev, struct pp_dpdk_args *out);

/* 1 when devargs starts with a PCI address (0000:01:00.0 or 01:00.0). */
int pp_dpdk_is_pci(const char *devargs);

/* Initialise EAL the first time it is called in the process (with a's
 * options and the defaults), and do nothing later.
 * Errors: -EINVAL EAL rejected the options, -EPERM, -ENOMEM, another
 * negative errno from EAL; after a failure other than -EINVAL every later
 * call fails with the same error. */
int pp_dpdk_eal_init(const struct pp_dpdk_args *a);

#endif
