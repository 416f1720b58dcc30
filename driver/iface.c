/* SPDX-License-Identifier: BSD-3-Clause */
/* The interface query of the socket backends (iface.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h> /* before the linux/ headers: glibc's if.h guards theirs */
#include <net/if_arp.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iface.h"

static int query(int fd, const char *iface, struct pp_port_info *info, int *ifindex, int *admin_up)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0)
		return errno == ENODEV ? -ENODEV : -errno;
	if (ifindex)
		*ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		return -errno;
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER && ifr.ifr_hwaddr.sa_family != ARPHRD_LOOPBACK)
		return -EPROTOTYPE;
	memcpy(info->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0)
		return -errno;
	info->mtu =
	    (uint16_t)(ifr.ifr_mtu > 65535 - PP_ETH_HLEN ? 65535 - PP_ETH_HLEN : ifr.ifr_mtu);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	if (admin_up)
		*admin_up = (ifr.ifr_flags & IFF_UP) != 0;
	info->link_up = (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING) ? 1 : 0;
	struct ethtool_cmd ec;
	memset(&ec, 0, sizeof(ec));
	ec.cmd = ETHTOOL_GSET;
	ifr.ifr_data = (char *)&ec;
	info->speed_mbps = 0;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) {
		uint32_t s = ethtool_cmd_speed(&ec);
		if (s != (uint32_t)SPEED_UNKNOWN && s != 0)
			info->speed_mbps = s;
	}
	return 0;
}

int pp_iface_query(const char *iface, struct pp_port_info *info, int *ifindex, int *admin_up)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = query(fd, iface, info, ifindex, admin_up);
	close(fd);
	return rc;
}

int pp_iface_ipv4(const char *iface, char *buf, size_t len)
{
	struct ifaddrs *all;
	if (getifaddrs(&all))
		return -errno;
	int rc = -EADDRNOTAVAIL;
	for (const struct ifaddrs *a = all; a && rc; a = a->ifa_next)
		if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
		    !strcmp(a->ifa_name, iface) &&
		    inet_ntop(AF_INET, &((const struct sockaddr_in *)a->ifa_addr)->sin_addr, buf,
			      (socklen_t)len))
			rc = 0;
	freeifaddrs(all);
	return rc;
}
