/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which bootstrap a rank uses, and the record it gives its peers through
 * PMIx (the rules are in bootstrap.h). Built with or without PMIx: the
 * PMIx calls themselves are in pmix.c.
 */
#include "bootstrap.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_log.h"

#define RECORD_TAG "pp1 " /* the record's format; another means another release */

int pp_boot_launcher(const char *ns, const char *rank)
{
	if (!ns || !ns[0] || !rank || !rank[0])
		return 0;
	for (const char *c = rank; *c; c++)
		if (!isdigit((unsigned char)*c))
			return 0;
	return 1;
}

enum pp_boot pp_boot_choose(const struct pp_config *c, int launcher, bool have_pmix)
{
	if (launcher && have_pmix && c->rank < 0 && c->size < 0)
		return PP_BOOT_PMIX;
	return c->cluster[0] ? PP_BOOT_CLUSTER : PP_BOOT_HELLO;
}

const char *pp_boot_name(enum pp_boot b)
{
	switch (b) {
	case PP_BOOT_PMIX:
		return "pmix";
	case PP_BOOT_CLUSTER:
		return "settings, cluster file";
	case PP_BOOT_HELLO:
		break;
	}
	return "settings, HELLO discovery";
}

uint32_t pp_boot_job_key(const char *nspace)
{
	uint32_t key = pp_config_job_hash(nspace);
	return key ? key : 1;
}

int pp_boot_record(char *buf, size_t len, const struct pp_boot_peer *p)
{
	const uint8_t *m = p->mac;
	int n = snprintf(buf, len, RECORD_TAG "%02x:%02x:%02x:%02x:%02x:%02x %" PRIu32 " %.*s",
			 m[0], m[1], m[2], m[3], m[4], m[5], p->inc, PP_NODE_NAME - 1, p->node);
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

int pp_boot_parse(const char *s, struct pp_boot_peer *p)
{
	const size_t tag = sizeof(RECORD_TAG) - 1, mac_len = PP_MAC_STRLEN - 1;
	char mac[PP_MAC_STRLEN];

	if (strncmp(s, RECORD_TAG, tag) != 0)
		return -EINVAL;
	s += tag;
	if (strnlen(s, mac_len + 1) <= mac_len || s[mac_len] != ' ')
		return -EINVAL;
	memcpy(mac, s, mac_len);
	mac[mac_len] = '\0';
	if (pp_mac_parse(mac, p->mac) || (p->mac[0] & 1)) /* a group address is no port's */
		return -EINVAL;
	s += mac_len + 1;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long inc = strtoull(s, &end, 10);
	if (errno || inc == 0 || inc > UINT32_MAX || *end != ' ')
		return -EINVAL;
	p->inc = (uint32_t)inc;

	const char *node = end + 1;
	size_t n = strnlen(node, PP_NODE_NAME);
	if (n == 0 || n == PP_NODE_NAME)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (iscntrl((unsigned char)node[i]))
			return -EINVAL;
	memcpy(p->node, node, n + 1);
	return 0;
}

int pp_boot_start(pp_ctx *ctx)
{
	struct pp_config *c = &ctx->cfg;
	const char *ns = getenv("PMIX_NAMESPACE");
	int launcher = pp_boot_launcher(ns, getenv("PMIX_RANK"));
	enum pp_boot b = pp_boot_choose(c, launcher, pp_pmix_built());

	if (launcher && b != PP_BOOT_PMIX) {
		if (c->rank < 0 && c->size < 0) {
			pp_err("pp_init: started by a PMIx launcher (PMIX_NAMESPACE %s), but this "
			       "librt-pp was built without PMIx: install libpmix-dev and rebuild, "
			       "or set rank= and size=",
			       ns);
			return -EINVAL;
		}
		pp_warn("pp_init: rank= or size= is set (pp_init string, PP_RANK or PP_SIZE): "
			"the PMIx launcher's rank and size are not used");
	}
	if (b == PP_BOOT_PMIX) {
		int rc = pp_pmix_init(c);
		if (rc)
			return rc;
		ctx->boot = b; /* PMIx is up: pp_boot_end finalizes it */
		if (c->cluster[0])
			pp_warn("pp_init: cluster=%s is not used: PMIx gives the peers' ports",
				c->cluster);
		pp_info("pp_init: bootstrap pmix (namespace %s): rank %d of %d, job key %" PRIu32
			", node %s",
			ns, c->rank, c->size, c->job, c->node[0] ? c->node : "(host name)");
		return 0;
	}
	ctx->boot = b;
	if (c->rank >= 0 && c->size > 0) /* else pp_init refuses the settings next */
		pp_info("pp_init: bootstrap %s: rank %d of %d, job %s%s%s", pp_boot_name(b),
			c->rank, c->size, c->job_name, b == PP_BOOT_CLUSTER ? ", file " : "",
			b == PP_BOOT_CLUSTER ? c->cluster : "");
	return 0;
}

void pp_boot_end(pp_ctx *ctx)
{
	if (ctx->boot == PP_BOOT_PMIX)
		pp_pmix_fini();
	ctx->boot = PP_BOOT_HELLO;
}
