/* SPDX-License-Identifier: BSD-3-Clause */
/* The udp: device string (udp_addr.h). Cold path: runs once, at open. */
#include "udp_addr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iface.h"
#include "pp_log.h"

/* Digits only, 0..65535. */
static int parse_port(const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;
	if (n == 0 || n > 5)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*out = v;
	return 0;
}

static int port_ok(unsigned port)
{
	return port >= PP_UDP_PORT_MIN && port <= 65535;
}

/*
 * "ADDR:PORT" or, with last, "ADDR:PORT-PORT" in s[0..n): the address in
 * *sa, the range's last port in *last (PORT when no range). Says what is
 * wrong, naming dev. port 0, and an interface's name for ADDR, pass only for
 * the port's own address (no last).
 */
static int parse_endpoint(const char *dev, const char *s, size_t n, struct sockaddr_in *sa,
			  unsigned *last)
{
	char ip[INET_ADDRSTRLEN];
	const char *colon = memchr(s, ':', n);
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(ip)) {
		pp_err("udp:%s: '%.*s' is not ADDR:PORT (an IPv4 address, e.g. 127.0.0.1:50000)",
		       dev, (int)n, s);
		return -EINVAL;
	}
	memcpy(ip, s, (size_t)(colon - s));
	ip[colon - s] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	/* The port's own address may be named by its interface (udp:eth0:0):
	 * one device string then serves every rank of a job. */
	char named[INET_ADDRSTRLEN];
	if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1 &&
	    (last || pp_iface_ipv4(ip, named, sizeof(named)) ||
	     inet_pton(AF_INET, named, &sa->sin_addr) != 1)) {
		pp_err("udp:%s: '%s' is not an IPv4 address (dotted quad; no host names)%s", dev,
		       ip, last ? "" : " nor an interface that has one");
		return -EINVAL;
	}
	const char *p = colon + 1, *end = s + n;
	const char *dash = last ? memchr(p, '-', (size_t)(end - p)) : NULL;
	unsigned first, hi;
	if (parse_port(p, (size_t)((dash ? dash : end) - p), &first) ||
	    (dash && parse_port(dash + 1, (size_t)(end - dash - 1), &hi))) {
		pp_err("udp:%s: bad UDP port in '%.*s'", dev, (int)n, s);
		return -EINVAL;
	}
	if (!dash)
		hi = first;
	if (!(first == 0 && !last) && (!port_ok(first) || !port_ok(hi) || hi < first)) {
		pp_err("udp:%s: UDP port in '%.*s' outside %u..65535 (the MAC holds 14 bits of "
		       "it; udp_addr.h)",
		       dev, (int)n, s, PP_UDP_PORT_MIN);
		return -EINVAL;
	}
	sa->sin_port = htons((uint16_t)first);
	if (last)
		*last = hi;
	return 0;
}

static int add_peers(const char *dev, struct pp_udp_dev *d, const char *s, size_t n)
{
	struct sockaddr_in sa;
	unsigned last;
	int rc = parse_endpoint(dev, s, n, &sa, &last);
	if (rc)
		return rc;
	unsigned count = last - ntohs(sa.sin_port) + 1;
	if (d->nb_peers + count > PP_UDP_MAX_PEERS) {
		pp_err("udp:%s: more than %d peers", dev, PP_UDP_MAX_PEERS);
		return -EINVAL;
	}
	struct sockaddr_in *np = realloc(d->peers, (d->nb_peers + count) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	d->peers = np;
	for (unsigned i = 0; i < count; i++) {
		np[d->nb_peers + i] = sa;
		np[d->nb_peers + i].sin_port = htons((uint16_t)(ntohs(sa.sin_port) + i));
	}
	d->nb_peers += count;
	return 0;
}

/* Items of s[0..n) separated by any of seps; empty items are skipped. */
static int add_list(const char *dev, struct pp_udp_dev *d, const char *s, size_t n,
		    const char *seps)
{
	size_t i = 0;
	while (i < n) {
		size_t k = i;
		while (k < n && !strchr(seps, s[k]))
			k++;
		if (k > i) {
			int rc = add_peers(dev, d, s + i, k - i);
			if (rc)
				return rc;
		}
		i = k + 1;
	}
	return 0;
}

static int add_file(const char *dev, struct pp_udp_dev *d, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		pp_err("udp:%s: cannot read the peer file %s: %s", dev, path, strerror(errno));
		return -EINVAL;
	}
	char line[512];
	int rc = 0;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		rc = add_list(dev, d, line, strlen(line), " \t\r\n+,");
	}
	fclose(f);
	return rc;
}

static int parse_mtu(const char *dev, const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;
	size_t i = 0;
	for (; i < n && i < 6 && isdigit((unsigned char)s[i]); i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	if (i == 0 || i != n || v < PP_UDP_MTU_MIN || v > PP_UDP_MTU_MAX) {
		pp_err("udp:%s: mtu= wants the link MTU, %d..%d bytes of IP datagram", dev,
		       PP_UDP_MTU_MIN, PP_UDP_MTU_MAX);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_option(const char *dev, struct pp_udp_dev *d, const char *s, size_t n)
{
	const char *eq = memchr(s, '=', n);
	size_t klen = eq ? (size_t)(eq - s) : n;
	const char *v = eq ? eq + 1 : s + n;
	size_t vlen = (size_t)(s + n - v);
	if (eq && klen == 5 && memcmp(s, "peers", 5) == 0 && vlen)
		return add_list(dev, d, v, vlen, "+");
	if (eq && klen == 8 && memcmp(s, "peerfile", 8) == 0 && vlen) {
		char path[4096];
		if (vlen >= sizeof(path))
			return -EINVAL;
		memcpy(path, v, vlen);
		path[vlen] = '\0';
		return add_file(dev, d, path);
	}
	if (eq && klen == 3 && memcmp(s, "mtu", 3) == 0)
		return parse_mtu(dev, v, vlen, &d->mtu);
	if (eq && klen == 3 && memcmp(s, "gso", 3) == 0 && vlen == 1 && (*v == '0' || *v == '1')) {
		d->no_gso = *v == '0';
		return 0;
	}
	if (eq && klen == 3 && memcmp(s, "gro", 3) == 0 && vlen == 1 && (*v == '0' || *v == '1')) {
		d->no_gro = *v == '0';
		return 0;
	}
	pp_err("udp:%s: unknown or empty option '%.*s' (peers=LIST, peerfile=PATH, mtu=N, "
	       "gso=0|1, gro=0|1)",
	       dev, (int)n, s);
	return -EINVAL;
}

int pp_udp_dev_parse(const char *dev, struct pp_udp_dev *out)
{
	memset(out, 0, sizeof(*out));
	if (!dev[0]) {
		pp_err("udp: no address (use udp:ADDR:PORT[,peers=ADDR:PORT+...], e.g. "
		       "udp:127.0.0.1:50000)");
		return -EINVAL;
	}
	size_t n = strcspn(dev, ",");
	int rc = parse_endpoint(dev, dev, n, &out->self, NULL);
	if (rc)
		return rc;
	uint32_t ip = ntohl(out->self.sin_addr.s_addr);
	if (ip == INADDR_ANY || ip == INADDR_BROADCAST || IN_MULTICAST(ip)) {
		pp_err("udp:%s: the port's address is its identity (its MAC): give the unicast "
		       "address peers reach it at, not a wildcard, broadcast or multicast one",
		       dev);
		return -EINVAL;
	}
	for (const char *s = dev + n; rc == 0 && *s;) {
		s++; /* the ',' */
		size_t k = strcspn(s, ",");
		rc = parse_option(dev, out, s, k);
		s += k;
	}
	if (rc)
		pp_udp_dev_free(out);
	return rc;
}

void pp_udp_dev_free(struct pp_udp_dev *d)
{
	free(d->peers);
	d->peers = NULL;
	d->nb_peers = 0;
}
