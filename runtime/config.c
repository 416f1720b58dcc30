/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pp_hash.h"
#include "pp_log.h"
#include "ppd/ppd_shm.h"

static const char *const mode_names[] = {"push-pull", "push-all", "push-zero"};

const char *pp_mode_name(enum pp_mode mode)
{
	return (unsigned)mode < 3 ? mode_names[mode] : "?";
}

/* Digits, decimal or 0x hexadecimal (a leading 0 is not octal). */
static int parse_num(const char *v, unsigned long long *out, char **end)
{
	int base = 10;
	if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
		base = 16;
		v += 2;
	}
	if (!isxdigit((unsigned char)v[0]) || (base == 10 && !isdigit((unsigned char)v[0])))
		return -EINVAL;
	errno = 0;
	*out = strtoull(v, end, base);
	return errno ? -EINVAL : 0;
}

static int parse_u32(const char *v, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long long x;
	if (parse_num(v, &x, &end) || *end || x > max)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

/* A byte count: a number with an optional k, m or g (binary) suffix. */
static int parse_bytes(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long x;
	if (parse_num(v, &x, &end))
		return -EINVAL;
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
	if (*end || x > (UINT64_MAX >> 34))
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
uint32_t pp_config_job_hash(const char *s)
{
	return pp_fnv1a32_add(PP_FNV32_INIT, s);
}

/* --- the keys ------------------------------------------------------------ */

int pp_config_bool(const char *v)
{
	static const char *const yes[] = {"on", "yes", "true", "1"};
	static const char *const no[] = {"off", "no", "false", "0"};
	for (unsigned i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return 1;
		if (strcasecmp(v, no[i]) == 0)
			return 0;
	}
	return -EINVAL;
}

/* Index of v in names (n of them), or -EINVAL. */
static int choice(const char *v, const char *const *names, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return (int)i;
	return -EINVAL;
}

static int set_bool(bool *dst, const char *v)
{
	int b = pp_config_bool(v);
	if (b < 0)
		return b;
	*dst = b;
	return 0;
}

static int set_rank(struct pp_config *c, const char *v)
{
	uint32_t u;
	int rc = parse_u32(v, INT_MAX, &u);
	if (rc == 0)
		c->rank = (int)u;
	return rc;
}

static int set_size(struct pp_config *c, const char *v)
{
	uint32_t u;
	int rc = parse_u32(v, INT_MAX, &u);
	if (rc == 0)
		c->size = (int)u;
	return rc;
}

static int set_job(struct pp_config *c, const char *v)
{
	uint32_t u;
	if (!v[0] || set_str(c->job_name, v))
		return -EINVAL;
	c->job = parse_u32(v, UINT32_MAX, &u) == 0 ? u : pp_config_job_hash(v);
	c->job_set = true;
	return 0;
}

static int set_token(struct pp_config *c, const char *v)
{
	c->token = v[0] ? ppd_token_hash(v) : 0; /* what launchers claim the job with */
	return 0;
}

static int set_job_secret(struct pp_config *c, const char *v)
{
	return set_str(c->job_secret, v);
}

static int set_node(struct pp_config *c, const char *v)
{
	return set_str(c->node, v);
}

static int set_local_size(struct pp_config *c, const char *v)
{
	uint32_t u;
	int rc = parse_u32(v, INT_MAX, &u);
	if (rc == 0)
		c->local_size = (int)u;
	return rc;
}

static int set_dev(struct pp_config *c, const char *v)
{
	return set_str(c->dev, v);
}

static int set_mode(struct pp_config *c, const char *v)
{
	int i = choice(v, mode_names, 3);
	if (i < 0)
		return i;
	c->mode = (enum pp_mode)i;
	return 0;
}

static int set_btp1(struct pp_config *c, const char *v)
{
	int rc = parse_u32(v, UINT32_MAX, &c->btp1);
	c->btp_set |= rc == 0;
	return rc;
}

static int set_btp2(struct pp_config *c, const char *v)
{
	int rc = parse_u32(v, UINT32_MAX, &c->btp2);
	c->btp_set |= rc == 0;
	return rc;
}

static int set_pull_cores(struct pp_config *c, const char *v)
{
	return set_str(c->pull_cores, v);
}

static int set_daemon(struct pp_config *c, const char *v)
{
	return set_str(c->daemon, v);
}

static int set_progress(struct pp_config *c, const char *v)
{
	static const char *const names[] = {"inline", "event", "thread"};
	int i = choice(v, names, 3);
	if (i < 0)
		return i;
	c->progress = (enum pp_progress_mode)i;
	return 0;
}

static int set_event_fifo(struct pp_config *c, const char *v)
{
	return set_bool(&c->event_fifo, v);
}

static int set_predict(struct pp_config *c, const char *v)
{
	return set_str(c->predict, v);
}

static int set_pcap_dump(struct pp_config *c, const char *v)
{
	return set_str(c->pcap_dump, v);
}

static int set_recv_trace(struct pp_config *c, const char *v)
{
	return set_str(c->recv_trace, v);
}

static int set_timeout_ms(struct pp_config *c, const char *v)
{
	uint32_t u;
	int rc = parse_u32(v, UINT32_MAX, &u);
	if (rc == 0 && u == 0)
		rc = -EINVAL;
	if (rc == 0)
		c->timeout_ms = u;
	return rc;
}

static int set_cluster(struct pp_config *c, const char *v)
{
	return set_str(c->cluster, v);
}

static int set_log(struct pp_config *c, const char *v)
{
	(void)c;
	return pp_log_set_level(v);
}

static int set_stats(struct pp_config *c, const char *v)
{
	static const char *const names[] = {"off", "text", "json"};
	int i = choice(v, names, 3);
	if (i < 0)
		return i;
	c->stats = (enum pp_stats_out)i;
	return 0;
}

static int set_shm(struct pp_config *c, const char *v)
{
	int b = pp_config_bool(v);
	if (b >= 0)
		c->shm = b ? PP_SHM_ON : PP_SHM_OFF;
	else if (strcmp(v, "twocopy") == 0)
		c->shm = PP_SHM_TWOCOPY;
	else
		return -EINVAL;
	return 0;
}

static int set_shm_write(struct pp_config *c, const char *v)
{
	return set_bool(&c->shm_write, v);
}

static int set_udp_fallback(struct pp_config *c, const char *v)
{
	return set_bool(&c->udp_fallback, v);
}

static int set_shm_heap(struct pp_config *c, const char *v)
{
	return parse_bytes(v, &c->shm_heap);
}

static int set_shm_help(struct pp_config *c, const char *v)
{
	return parse_bytes(v, &c->shm_help);
}

static int set_shm_stream(struct pp_config *c, const char *v)
{
	return parse_bytes(v, &c->shm_stream);
}

static int set_shm_long(struct pp_config *c, const char *v)
{
	static const char *const names[] = {"auto", "copy", "rings"};
	int i = choice(v, names, 3);
	if (i < 0)
		return i;
	c->shm_long = (enum pp_shm_long)i;
	return 0;
}

/* auto (0: measured at pp_init, pp_shm_copy_min) or a byte count. */
static int set_shm_copy_min(struct pp_config *c, const char *v)
{
	if (strcmp(v, "auto") == 0) {
		c->shm_copy_min = 0;
		return 0;
	}
	int rc = parse_bytes(v, &c->shm_copy_min);
	if (!rc && c->shm_copy_min == 0)
		rc = -EINVAL; /* 0 would read as auto */
	return rc;
}

/* A byte count that fits 32 bits. */
static int set_bytes32(uint32_t *dst, const char *v)
{
	uint64_t x;
	int rc = parse_bytes(v, &x);
	if (rc == 0 && x > UINT32_MAX)
		rc = -EINVAL;
	if (rc == 0)
		*dst = (uint32_t)x;
	return rc;
}

static int set_stage_bytes(struct pp_config *c, const char *v)
{
	return set_bytes32(&c->stage_bytes, v);
}

static int set_stage_remap(struct pp_config *c, const char *v)
{
	return set_bytes32(&c->stage_remap, v);
}

static int set_credits(struct pp_config *c, const char *v)
{
	return set_bool(&c->credits, v);
}

static int set_pushbuf_bytes(struct pp_config *c, const char *v)
{
	return set_bytes32(&c->pushbuf_bytes, v);
}

static int set_zerocopy(struct pp_config *c, const char *v)
{
	return set_bool(&c->zerocopy, v);
}

#define BOOL  "on|off (or yes|no, true|false, 1|0; any case)"
#define BYTES "bytes, with an optional k, m or g suffix (binary)"

/* Every key: its description and its parser. The defaults are parsed by
 * pp_config_load like any value, except log's (process-wide: set only when
 * given; PP_LOG is read by the logger itself). */
static const struct key {
	struct pp_config_key doc;
	int (*set)(struct pp_config *c, const char *v);
	bool global; /* not per context: the default is not applied */
} keys[] = {
    {{"rank", "0..size-1", NULL, "this rank (pprun sets it)"}, set_rank, false},
    {{"size", "1..2147483647", NULL, "ranks in the job (pprun sets it)"}, set_size, false},
    {{"job", "a number, or a name (hashed)", "0", "job key: frames of other jobs are dropped"},
     set_job,
     false},
    {{"token", "any text (empty: none)", "",
      "binds the job at its node daemons (pprun --daemon draws one)"},
     set_token,
     false},
    {{"job_secret", "any text (empty: none)", "",
      "the job's secret: HELLO and BYE prove it (pprun and PMIx jobs draw one; without "
      "one, frames cannot end or replace a peer)"},
     set_job_secret,
     false},
    {{"node", "a name", "", "node name: ranks of one node talk through shared memory"},
     set_node,
     false},
    {{"local_size", "0..2147483647", "0",
      "ranks of the job on this node, for the libfabric provider's node segment (0: "
      "the launcher's count, else none)"},
     set_local_size,
     false},
    {{"dev",
      "packet:IFACE | pcap:IFACE | udp:ADDR:PORT | sim:LINK/I | fault:SPEC;DEV | DPDK EAL "
      "arguments",
      "", "the port this rank owns"},
     set_dev,
     false},
    {{"udp_fallback", BOOL, "on",
      "a packet: or pcap: port this rank may not open (no CAP_NET_RAW) becomes udp: on the "
      "interface's IPv4 address, when peers come from PMIx or an MPI's address vector"},
     set_udp_fallback,
     false},
    {{"mode", "push-pull|push-all|push-zero", "push-pull",
      "BTP(1)+BTP(2) pushed and the rest pulled | everything pushed | everything pulled"},
     set_mode,
     false},
    {{"btp1", "bytes, 0..4294967295", "80", "bytes in the first push"}, set_btp1, false},
    {{"btp2", "bytes, 0..4294967295", "680", "bytes in the second push, overlapping the ack"},
     set_btp2,
     false},
    {{"pull_cores", "core list such as 0,2-3 (empty: none)", "",
      "pull-handler threads, one pinned to each core"},
     set_pull_cores,
     false},
    {{"progress", "inline|event|thread", "inline",
      "the engine runs inside pp_* calls only | also in a thread that sleeps until "
      "a frame comes (packet: and pcap: ports), for a rank busy computing | also in "
      "busy-polling threads on pull_cores (which it needs), for machines with cores "
      "to spare"},
     set_progress,
     false},
    {{"event_fifo", BOOL, "off",
      "progress=event's thread at real-time priority (SCHED_FIFO, where permitted): woken "
      "sooner, it still leaves the computation half its core | SCHED_OTHER"},
     set_event_fifo,
     false},
    {{"daemon", "path of a ppd socket (empty: none)", "",
      "attach to the node daemon instead of owning a port"},
     set_daemon,
     false},
    {{"predict", "off|single-cycle|tag|tag-cycle|tag-bettercycle|graph|dpd|hybrid", "off",
      "receive predictor feeding the staging of early messages"},
     set_predict,
     false},
    {{"pcap_dump", "file name (empty: none)", "",
      "write every frame the port sends and receives to a pcap file"},
     set_pcap_dump,
     false},
    {{"recv_trace", "file name, %r for the rank (empty: none)", "",
      "write every completed receive to a trace pp_predict reads"},
     set_recv_trace,
     false},
    {{"timeout_ms", "1..4294967295", "10000", "discovery and peer-loss timeout, ms"},
     set_timeout_ms,
     false},
    {{"cluster", "file name (empty: discover)", "",
      "rank-to-MAC file instead of discovery by broadcast"},
     set_cluster,
     false},
    {{"log", "debug|info|warn|error|off", "error",
      "diagnostics on stderr (process-wide; info adds a line of counters at pp_finalize)"},
     set_log,
     true},
    {{"stats", "off|text|json", "off", "every counter on stderr at pp_finalize"}, set_stats, false},
    {{"shm", "on|off|twocopy (on, off: also as for booleans)", "on",
      "shared memory between ranks of a node | over the port | through the rings only"},
     set_shm,
     false},
    {{"shm_write", BOOL, "on",
      "an early receiver's message is written by its sender (off: the receiver copies)"},
     set_shm_write,
     false},
    {{"shm_heap", BYTES, "64m", "pp_malloc memory per rank in the node segment"},
     set_shm_heap,
     false},
    {{"shm_help", BYTES, "256k",
      "node-mates' messages from this size, copied by their receiver's copy call, are "
      "split: the sender writes the first half while the receiver copies the second "
      "(0: never)"},
     set_shm_help,
     false},
    {{"shm_stream", BYTES, "0",
      "node-mates' messages from this size are pushed whole through the rings, both cores "
      "copying (0: never; shm_long decides)"},
     set_shm_stream,
     false},
    {{"shm_long", "auto|copy|rings", "auto",
      "node-mates' messages past shm_copy_min: the receiver's one copy call, or pulled "
      "through the rings (auto: the faster lately, measured per peer)"},
     set_shm_long,
     false},
    {{"shm_copy_min", "auto or " BYTES, "auto",
      "node-mates' messages from this size move by one copy call, shorter ones through the "
      "rings (auto: from what a copy call costs on this machine, 8k at least)"},
     set_shm_copy_min,
     false},
    {{"stage_bytes", BYTES, "4m", "prediction staging memory (0: no staging)"},
     set_stage_bytes,
     false},
    {{"stage_remap", BYTES, "0",
      "staged messages of at least this many bytes move by page remap "
      "(0: always copied)"},
     set_stage_remap,
     false},
    {{"credits", BOOL, "on", "pushed-buffer credits (off: the paper's Push-All overflow)"},
     set_credits,
     false},
    {{"pushbuf_bytes", BYTES, "1m", "pushed-buffer size"}, set_pushbuf_bytes, false},
    {{"zerocopy", BOOL, "off", "payloads of 2 KiB or more leave from the user's buffer"},
     set_zerocopy,
     false},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

const struct pp_config_key *pp_config_key(size_t i)
{
	return i < NKEYS ? &keys[i].doc : NULL;
}

static int set_one(struct pp_config *c, const char *key, const char *v)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(key, keys[i].doc.name) == 0)
			return keys[i].set(c, v);
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
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].doc.def && !keys[i].global && keys[i].set(c, keys[i].doc.def)) {
			pp_err("configuration: the default of '%s' does not parse",
			       keys[i].doc.name);
			return -EINVAL;
		}
	c->btp_set = false;
	c->job_set = false;

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
