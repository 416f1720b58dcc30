/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_log.h"

static const char *const mode_names[] = {"push-pull", "push-all", "push-zero"};

const char *pp_mode_name(enum pp_mode mode)
{
	return (unsigned)mode < 3 ? mode_names[mode] : "?";
}

static int parse_u32(const char *v, uint32_t max, uint32_t *out)
{
	char *end;
	if (!isdigit((unsigned char)v[0]))
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 0);
	if (errno || *end || x > max)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

/* A byte count: digits with an optional k, m or g (binary) suffix. */
static int parse_bytes(const char *v, uint64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)v[0]))
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 0);
	unsigned shift = 0;
	switch (tolower((unsigned char)*end)) {
	case 'k':
		shift = 10;
		break;
	case 'm':
		shift = 20;
		break;
	case 'g':
		shift = 30;
		break;
	default:
		break;
	}
	if (shift)
		end++;
	if (errno || *end || x > (UINT64_MAX >> 34))
		return -EINVAL;
	*out = (uint64_t)x << shift;
	return 0;
}

static int set_str(char *dst, const char *v)
{
	size_t n = strlen(v);
	if (n >= PP_CFG_STR)
		return -EINVAL;
	memcpy(dst, v, n + 1);
	return 0;
}

/* FNV-1a: a job key given as a name still gives every rank the same number. */
static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The same in 64 bits, for the job token (never 0: 0 means none). */
static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 14695981039346656037ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ? h : 1;
}

static int set_one(struct pp_config *c, const char *key, const char *v)
{
	uint32_t u;
	int rc;

	if (strcmp(key, "rank") == 0 || strcmp(key, "size") == 0) {
		rc = parse_u32(v, INT_MAX, &u);
		if (rc == 0)
			*(key[0] == 'r' ? &c->rank : &c->size) = (int)u;
		return rc;
	}
	if (strcmp(key, "job") == 0) {
		if (!v[0] || set_str(c->job_name, v))
			return -EINVAL;
		c->job = parse_u32(v, UINT32_MAX, &u) == 0 ? u : fnv1a(v);
		return 0;
	}
	if (strcmp(key, "token") == 0) {
		c->token = v[0] ? fnv1a64(v) : 0;
		return 0;
	}
	if (strcmp(key, "mode") == 0) {
		for (unsigned i = 0; i < 3; i++)
			if (strcmp(v, mode_names[i]) == 0) {
				c->mode = (enum pp_mode)i;
				return 0;
			}
		return -EINVAL;
	}
	if (strcmp(key, "btp1") == 0 || strcmp(key, "btp2") == 0) {
		rc = parse_u32(v, UINT32_MAX, &u);
		if (rc == 0) {
			*(key[3] == '1' ? &c->btp1 : &c->btp2) = u;
			c->btp_set = true;
		}
		return rc;
	}
	if (strcmp(key, "timeout_ms") == 0) {
		rc = parse_u32(v, UINT32_MAX, &u);
		if (rc == 0 && u == 0)
			rc = -EINVAL;
		if (rc == 0)
			c->timeout_ms = u;
		return rc;
	}
	if (strcmp(key, "stage_bytes") == 0)
		return parse_u32(v, UINT32_MAX, &c->stage_bytes);
	if (strcmp(key, "stage_remap") == 0)
		return parse_u32(v, UINT32_MAX, &c->stage_remap);
	if (strcmp(key, "pushbuf_bytes") == 0)
		return parse_u32(v, UINT32_MAX, &c->pushbuf_bytes);
	if (strcmp(key, "credits") == 0) {
		rc = parse_u32(v, 1, &u);
		if (rc == 0)
			c->credits = u != 0;
		return rc;
	}
	if (strcmp(key, "log") == 0)
		return pp_log_set_level(v);
	if (strcmp(key, "zerocopy") == 0) {
		if (strcmp(v, "on") && strcmp(v, "off"))
			return -EINVAL;
		c->zerocopy = strcmp(v, "on") == 0;
		return 0;
	}
	if (strcmp(key, "shm") == 0) {
		static const char *const names[] = {"on", "off", "twocopy"};
		for (unsigned i = 0; i < 3; i++)
			if (strcmp(v, names[i]) == 0) {
				c->shm = (enum pp_shm_mode)i;
				return 0;
			}
		return -EINVAL;
	}
	if (strcmp(key, "shm_write") == 0) {
		if (strcmp(v, "on") && strcmp(v, "off"))
			return -EINVAL;
		c->shm_write = strcmp(v, "on") == 0;
		return 0;
	}
	if (strcmp(key, "shm_heap") == 0)
		return parse_bytes(v, &c->shm_heap);

	static const struct {
		const char *key;
		size_t off;
	} strs[] = {
	    {"node", offsetof(struct pp_config, node)},
	    {"dev", offsetof(struct pp_config, dev)},
	    {"pull_cores", offsetof(struct pp_config, pull_cores)},
	    {"daemon", offsetof(struct pp_config, daemon)},
	    {"predict", offsetof(struct pp_config, predict)},
	    {"pcap_dump", offsetof(struct pp_config, pcap_dump)},
	    {"cluster", offsetof(struct pp_config, cluster)},
	};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (strcmp(key, strs[i].key) == 0)
			return set_str((char *)c + strs[i].off, v);
	return -ENOENT;
}

/* Apply one pair; says which key was wrong and why. */
static int apply(struct pp_config *c, const char *key, const char *v, const char *origin)
{
	int rc = set_one(c, key, v);
	if (rc == -ENOENT) {
		pp_err("%s: unknown configuration key '%s'", origin, key);
		return -EINVAL;
	}
	if (rc) {
		pp_err("%s: bad value '%s' for key '%s'", origin, v, key);
		return -EINVAL;
	}
	return 0;
}

static int load_env(struct pp_config *c)
{
	extern char **environ;
	char key[64];

	for (char **e = environ; *e; e++) {
		if (strncmp(*e, "PP_", 3) != 0)
			continue;
		const char *eq = strchr(*e, '=');
		size_t n = eq ? (size_t)(eq - *e - 3) : 0;
		if (!eq || n == 0 || n >= sizeof(key))
			continue;
		for (size_t i = 0; i < n; i++)
			key[i] = (char)tolower((unsigned char)(*e)[3 + i]);
		key[n] = '\0';
		int rc = apply(c, key, eq + 1, "environment");
		if (rc)
			return rc;
	}
	return 0;
}

static int load_string(struct pp_config *c, const char *config)
{
	char *copy = strdup(config);
	if (!copy)
		return -ENOMEM;
	int rc = 0;
	char *save = NULL;
	for (char *pair = strtok_r(copy, ",", &save); pair && rc == 0;
	     pair = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(pair, '=');
		if (!eq || eq == pair) {
			pp_err("pp_init: malformed pair '%s' (want key=value)", pair);
			rc = -EINVAL;
			break;
		}
		*eq = '\0';
		rc = apply(c, pair, eq + 1, "pp_init");
	}
	free(copy);
	return rc;
}

int pp_config_load(struct pp_config *c, const char *config)
{
	memset(c, 0, sizeof(*c));
	c->rank = -1;
	c->size = -1;
	c->mode = PP_MODE_PUSH_PULL;
	c->btp1 = PP_BTP1_ETH_DEFAULT;
	c->btp2 = PP_BTP2_ETH_DEFAULT;
	c->timeout_ms = PP_TIMEOUT_MS_DEFAULT;
	c->zerocopy = false; /* measured slower on af_packet; see zcopy.c */
	c->stage_bytes = PP_STAGE_BYTES_DEFAULT;
	c->pushbuf_bytes = PP_PUSHBUF_BYTES_DEFAULT;
	c->credits = true;
	c->shm = PP_SHM_ON;
	c->shm_heap = PP_SHM_HEAP_DEFAULT;
	c->shm_write = true;
	strcpy(c->predict, "off");
	set_one(c, "job", "0");

	int rc = load_env(c);
	if (rc == 0 && config)
		rc = load_string(c, config);
	if (rc)
		return rc;
	if (c->size == 0 || (c->rank >= 0 && c->size > 0 && c->rank >= c->size)) {
		pp_err("configuration: rank %d is not below size %d", c->rank, c->size);
		return -EINVAL;
	}
	return 0;
}
