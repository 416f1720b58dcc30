/* SPDX-License-Identifier: BSD-3-Clause */
/* runtime/config: environment, pp_init string, defaults and every error. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctx.h"
#include "cu_main.h"
#include "engine.h"
#include "pp_log.h"
#include "predict.h"

static void clear_env(void)
{
	static const char *const vars[] = {"PP_RANK", "PP_SIZE", "PP_JOB",
					   "PP_MODE", "PP_BTP1", "PP_BTP2",
					   "PP_DEV",  "PP_FROB", "PP_TIMEOUT_MS"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static int setup(void)
{
	clear_env();
	pp_log_set_level("off"); /* the error paths below log on purpose */
	return 0;
}

static void test_defaults(void)
{
	struct pp_config c;
	CU_ASSERT_EQUAL(pp_config_load(&c, NULL), 0);
	CU_ASSERT_EQUAL(c.rank, -1);
	CU_ASSERT_EQUAL(c.size, -1);
	CU_ASSERT_EQUAL(c.mode, PP_MODE_PUSH_PULL);
	CU_ASSERT_EQUAL(c.btp1, 80);
	CU_ASSERT_EQUAL(c.btp2, 680);
	CU_ASSERT_FALSE(c.btp_set);
	CU_ASSERT_EQUAL(c.timeout_ms, 10000);
	CU_ASSERT_STRING_EQUAL(c.predict, "off");
	CU_ASSERT_STRING_EQUAL(c.daemon, "");
	CU_ASSERT_EQUAL(c.shm, PP_SHM_ON);
	CU_ASSERT_TRUE(c.shm_write);
	CU_ASSERT_TRUE(c.credits);
	CU_ASSERT_FALSE(c.zerocopy);
	CU_ASSERT_EQUAL(c.shm_heap, 64u << 20);
	CU_ASSERT_EQUAL(c.shm_stream, 0);
	CU_ASSERT_EQUAL(c.shm_long, PP_SHM_LONG_AUTO);
	CU_ASSERT_EQUAL(c.shm_copy_min, 0); /* auto */
	CU_ASSERT_EQUAL(c.stage_bytes, 4u << 20);
	CU_ASSERT_EQUAL(c.stage_remap, 0);
	CU_ASSERT_EQUAL(c.pushbuf_bytes, 1u << 20);
	CU_ASSERT_EQUAL(c.stats, PP_STATS_OFF);
	CU_ASSERT_EQUAL(c.job, 0);
	CU_ASSERT_EQUAL(c.token, 0);
}

/* The keys the engine reads keep its defaults: the table's strings and the
 * engine's numbers cannot drift apart. */
static void test_engine_defaults(void)
{
	struct pp_config c;
	struct pp_proto_conf e;
	CU_ASSERT_EQUAL(pp_config_load(&c, NULL), 0);
	pp_proto_conf_job(&e); /* what a job runs */
	CU_ASSERT_EQUAL(c.btp1, e.btp1);
	CU_ASSERT_EQUAL(c.btp2, e.btp2);
	CU_ASSERT_EQUAL(c.pushbuf_bytes, e.pushbuf_bytes);
	CU_ASSERT_EQUAL(c.credits, e.credits != 0);
	CU_ASSERT_EQUAL((int)c.mode, (int)e.mode);
	CU_ASSERT_EQUAL(c.shm_stream, e.local_stream);
	/* shm_copy_min sets both, which the engine keeps equal */
	CU_ASSERT_EQUAL(e.local_whole, e.write_min);
}

/* shm_long: auto, copy or rings, nothing else. */
static void test_shm_long(void)
{
	struct pp_config c;
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_long=copy"), 0);
	CU_ASSERT_EQUAL(c.shm_long, PP_SHM_LONG_COPY);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_long=rings"), 0);
	CU_ASSERT_EQUAL(c.shm_long, PP_SHM_LONG_RINGS);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_long=rings,shm_long=auto"), 0);
	CU_ASSERT_EQUAL(c.shm_long, PP_SHM_LONG_AUTO);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_long=fast"), -EINVAL);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_long="), -EINVAL);
}

/* shm_copy_min: auto or bytes; auto's rule, and a set figure kept as given
 * (no copy call measured for it). */
static void test_shm_copy_min(void)
{
	struct pp_config c;
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_copy_min=64k"), 0);
	CU_ASSERT_EQUAL(c.shm_copy_min, 64u << 10);
	CU_ASSERT_EQUAL(pp_shm_link_copy_min(&c, 8192), 64u << 10);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_copy_min=3000"), 0);
	CU_ASSERT_EQUAL(pp_shm_link_copy_min(&c, 8192), 3000);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_copy_min=auto"), 0);
	CU_ASSERT_EQUAL(c.shm_copy_min, 0);
	uint64_t a = pp_shm_link_copy_min(&c, 8192); /* measured here */
	CU_ASSERT(a >= 8192 && a <= (512u << 10) && (a & (a - 1)) == 0);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_copy_min=0"), -EINVAL);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_copy_min=Auto"), -EINVAL);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm_copy_min="), -EINVAL);
	/* 40 bytes a ns of a call's cost, a power of two from the floor up,
	 * 512 KiB at most */
	CU_ASSERT_EQUAL(pp_shm_copy_min(0, 8192), 8192);
	CU_ASSERT_EQUAL(pp_shm_copy_min(200, 8192), 8192);
	CU_ASSERT_EQUAL(pp_shm_copy_min(410, 8192), 16384);
	CU_ASSERT_EQUAL(pp_shm_copy_min(1600, 8192), 32768);
	CU_ASSERT_EQUAL(pp_shm_copy_min(1700, 8192), 65536);
	CU_ASSERT_EQUAL(pp_shm_copy_min(3200, 8192), 65536);
	CU_ASSERT_EQUAL(pp_shm_copy_min(3300, 8192), 131072);
	CU_ASSERT_EQUAL(pp_shm_copy_min(1000000, 8192), 512u << 10);
	CU_ASSERT_EQUAL(pp_shm_copy_min(1700, 65536), 65536);
	CU_ASSERT_EQUAL(pp_shm_copy_min(0, 1u << 20), 1u << 20);
}

static void test_string(void)
{
	struct pp_config c;
	CU_ASSERT_EQUAL(pp_config_load(&c, "rank=1,size=4,mode=push-zero,btp1=16,btp2=0,"
					   "dev=pcap:pp0,node=n1,timeout_ms=500,pull_cores=1-2"),
			0);
	CU_ASSERT_EQUAL(c.rank, 1);
	CU_ASSERT_EQUAL(c.size, 4);
	CU_ASSERT_EQUAL(c.mode, PP_MODE_PUSH_ZERO);
	CU_ASSERT_EQUAL(c.btp1, 16);
	CU_ASSERT_EQUAL(c.btp2, 0);
	CU_ASSERT_TRUE(c.btp_set);
	CU_ASSERT_STRING_EQUAL(c.dev, "pcap:pp0");
	CU_ASSERT_STRING_EQUAL(c.node, "n1");
	CU_ASSERT_STRING_EQUAL(c.pull_cores, "1-2");
	CU_ASSERT_EQUAL(c.timeout_ms, 500);
}

static void test_env_then_string(void)
{
	struct pp_config c;
	setenv("PP_RANK", "3", 1);
	setenv("PP_SIZE", "8", 1);
	setenv("PP_MODE", "push-all", 1);
	CU_ASSERT_EQUAL(pp_config_load(&c, "rank=5"), 0);
	CU_ASSERT_EQUAL(c.rank, 5); /* the string wins */
	CU_ASSERT_EQUAL(c.size, 8);
	CU_ASSERT_EQUAL(c.mode, PP_MODE_PUSH_ALL);
	clear_env();
}

static void test_job_key(void)
{
	struct pp_config a, b, n;
	CU_ASSERT_EQUAL(pp_config_load(&a, "job=alpha"), 0);
	CU_ASSERT_EQUAL(pp_config_load(&b, "job=alpha"), 0);
	CU_ASSERT_EQUAL(pp_config_load(&n, "job=0x1234"), 0);
	CU_ASSERT_EQUAL(a.job, b.job);
	CU_ASSERT_NOT_EQUAL(a.job, 0);
	CU_ASSERT_EQUAL(n.job, 0x1234);
	CU_ASSERT_STRING_EQUAL(a.job_name, "alpha");
	CU_ASSERT_EQUAL(pp_config_load(&b, "job=beta"), 0);
	CU_ASSERT_NOT_EQUAL(a.job, b.job);
	/* Given, even as its default: it wins over a PMIx namespace. */
	CU_ASSERT_TRUE(a.job_set);
	CU_ASSERT_EQUAL(pp_config_load(&b, "job=0"), 0);
	CU_ASSERT_TRUE(b.job_set);
	CU_ASSERT_EQUAL(a.job, pp_config_job_hash("alpha"));
}

static void test_errors(void)
{
	struct pp_config c;
	static const char *const bad[] = {
	    "frobnicate=1",	/* unknown key */
	    "rank",		/* no '=' */
	    "=3",		/* no key */
	    "rank=-1",		/* negative */
	    "rank=x",		/* not a number */
	    "size=0",		/* empty job */
	    "rank=4,size=4",	/* rank out of range */
	    "mode=push-some",	/* unknown mode */
	    "btp1=99999999999", /* overflow */
	    "timeout_ms=0",	/* zero timeout */
	    "log=loud",		/* unknown log level */
	    "job=",		/* empty job key */
	    "zerocopy=maybe",	/* a boolean */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(pp_config_load(&c, bad[i]), -EINVAL);

	char longval[PP_CFG_STR + 8] = "dev=";
	memset(longval + 4, 'x', PP_CFG_STR);
	longval[4 + PP_CFG_STR] = '\0';
	CU_ASSERT_EQUAL(pp_config_load(&c, longval), -EINVAL);
	CU_ASSERT_EQUAL(pp_config_load(&c, NULL), 0);
	CU_ASSERT_FALSE(c.zerocopy);
	CU_ASSERT_EQUAL(pp_config_load(&c, "zerocopy=on"), 0);
	CU_ASSERT_TRUE(c.zerocopy);

	setenv("PP_FROB", "1", 1);
	CU_ASSERT_EQUAL(pp_config_load(&c, NULL), -EINVAL);
	clear_env();
}

/* Every boolean key takes the same words, in any case; nothing else. */
static void test_booleans(void)
{
	static const char *const keys[] = {"credits", "zerocopy", "shm_write"};
	static const char *const yes[] = {"on", "yes", "true", "1", "ON", "Yes", "TRUE"};
	static const char *const no[] = {"off", "no", "false", "0", "OFF", "No", "False"};
	static const char *const bad[] = {"", "2", "y", "n", "onn", "enable", "-1", " on"};
	struct pp_config c;
	char cfg[64];
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		bool *field = strcmp(keys[k], "credits") == 0	 ? &c.credits
			      : strcmp(keys[k], "zerocopy") == 0 ? &c.zerocopy
								 : &c.shm_write;
		for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
			snprintf(cfg, sizeof(cfg), "%s=%s", keys[k], no[i]);
			CU_ASSERT_EQUAL(pp_config_load(&c, cfg), 0);
			CU_ASSERT_FALSE(*field);
			snprintf(cfg, sizeof(cfg), "%s=%s", keys[k], yes[i]);
			CU_ASSERT_EQUAL(pp_config_load(&c, cfg), 0);
			CU_ASSERT_TRUE(*field);
		}
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(cfg, sizeof(cfg), "%s=%s", keys[k], bad[i]);
			CU_ASSERT_EQUAL(pp_config_load(&c, cfg), -EINVAL);
		}
	}
	/* What the README offers, and the same through the environment. */
	CU_ASSERT_EQUAL(pp_config_load(&c, "credits=off"), 0);
	CU_ASSERT_FALSE(c.credits);
	setenv("PP_CREDITS", "No", 1);
	CU_ASSERT_EQUAL(pp_config_load(&c, NULL), 0);
	CU_ASSERT_FALSE(c.credits);
	unsetenv("PP_CREDITS");
	/* shm takes the boolean words for on and off, and twocopy. */
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm=no"), 0);
	CU_ASSERT_EQUAL(c.shm, PP_SHM_OFF);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm=TRUE"), 0);
	CU_ASSERT_EQUAL(c.shm, PP_SHM_ON);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm=twocopy"), 0);
	CU_ASSERT_EQUAL(c.shm, PP_SHM_TWOCOPY);
	CU_ASSERT_EQUAL(pp_config_load(&c, "shm=threecopy"), -EINVAL);
	/* progress: inline (the default), event or thread. */
	CU_ASSERT_EQUAL(pp_config_load(&c, NULL), 0);
	CU_ASSERT_EQUAL(c.progress, PP_PROGRESS_INLINE);
	CU_ASSERT_EQUAL(pp_config_load(&c, "progress=event"), 0);
	CU_ASSERT_EQUAL(c.progress, PP_PROGRESS_EVENT);
	CU_ASSERT_EQUAL(pp_config_load(&c, "progress=thread"), 0);
	CU_ASSERT_EQUAL(c.progress, PP_PROGRESS_THREAD);
	CU_ASSERT_EQUAL(pp_config_load(&c, "progress=spin"), -EINVAL);
	CU_ASSERT_EQUAL(pp_config_bool("oN"), 1);
	CU_ASSERT_EQUAL(pp_config_bool("fAlSe"), 0);
	CU_ASSERT_EQUAL(pp_config_bool("maybe"), -EINVAL);
}

/* Numbers are decimal or 0x hexadecimal (never octal); byte counts take
 * k, m, g. */
static void test_numbers(void)
{
	struct pp_config c;
	CU_ASSERT_EQUAL(pp_config_load(&c, "btp1=010,btp2=0x20,timeout_ms=0X10"), 0);
	CU_ASSERT_EQUAL(c.btp1, 10);
	CU_ASSERT_EQUAL(c.btp2, 32);
	CU_ASSERT_EQUAL(c.timeout_ms, 16);
	CU_ASSERT_EQUAL(
	    pp_config_load(&c, "stage_bytes=2m,pushbuf_bytes=64k,shm_heap=0x10k,shm_stream=1m"), 0);
	CU_ASSERT_EQUAL(c.shm_stream, 1u << 20);
	CU_ASSERT_EQUAL(c.stage_bytes, 2u << 20);
	CU_ASSERT_EQUAL(c.pushbuf_bytes, 64u << 10);
	CU_ASSERT_EQUAL(c.shm_heap, 16u << 10);
	CU_ASSERT_EQUAL(pp_config_load(&c, "stage_remap=4096"), 0);
	CU_ASSERT_EQUAL(c.stage_remap, 4096);
	static const char *const bad[] = {"btp1=0x",	 "btp1=0xg",	   "btp1=+1",
					  "btp1=1k",	 "stage_bytes=4g", "pushbuf_bytes=1t",
					  "shm_heap=-1", "timeout_ms=0x0"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(pp_config_load(&c, bad[i]), -EINVAL);
}

/* The key table is what the parser parses: every key is accepted, its
 * default parses to the value pp_config_load sets, and every key's name is
 * unique. */
static void test_key_table(void)
{
	struct pp_config c, d;
	char cfg[512];
	size_t n = 0;
	CU_ASSERT_EQUAL_FATAL(pp_config_load(&d, NULL), 0);
	for (const struct pp_config_key *k; (k = pp_config_key(n)); n++) {
		CU_ASSERT_PTR_NOT_NULL(k->values);
		CU_ASSERT_PTR_NOT_NULL(k->help);
		for (size_t j = 0; j < n; j++)
			CU_ASSERT_STRING_NOT_EQUAL(pp_config_key(j)->name, k->name);
		/* A key the parser does not know would be -EINVAL here. */
		snprintf(cfg, sizeof(cfg), "size=2,rank=0,%s=%s", k->name,
			 k->def && k->def[0] ? k->def : "1");
		if (strcmp(k->name, "log") == 0)
			snprintf(cfg, sizeof(cfg), "log=off");
		CU_ASSERT_EQUAL(pp_config_load(&c, cfg), 0);
		if (strcmp(k->name, "predict") == 0) { /* lists every predictor */
			char want[256] = "off";
			for (size_t p = 0; pp_pred_all[p]; p++)
				snprintf(want + strlen(want), sizeof(want) - strlen(want), "|%s",
					 pp_pred_all[p]->name);
			CU_ASSERT_STRING_EQUAL(k->values, want);
		}
		if (!k->def || strcmp(k->name, "log") == 0)
			continue;
		/* The default, given explicitly, changes nothing. */
		snprintf(cfg, sizeof(cfg), "%s=%s", k->name, k->def);
		CU_ASSERT_EQUAL(pp_config_load(&c, cfg), 0);
		c.btp_set = false;
		c.job_set = false; /* given explicitly: a PMIx launcher's is not used */
		CU_ASSERT(memcmp(&c, &d, sizeof(c)) == 0);
		/* The environment parses as the string does, good values and bad. */
		char var[64] = "PP_";
		for (size_t i = 0; k->name[i] && i + 4 < sizeof(var); i++)
			var[3 + i] = (char)toupper((unsigned char)k->name[i]);
		static const char *const vals[] = {"!bad", "on", "7"};
		for (size_t v = 0; v < 3; v++) {
			unsetenv(var);
			snprintf(cfg, sizeof(cfg), "%s=%s", k->name, vals[v]);
			int want = pp_config_load(&c, cfg);
			setenv(var, vals[v], 1);
			CU_ASSERT_EQUAL(pp_config_load(&c, NULL), want);
		}
		unsetenv(var);
	}
	CU_ASSERT(n >= 25);
	CU_ASSERT_PTR_NULL(pp_config_key(n));
	CU_ASSERT_EQUAL(pp_config_load(&c, "stats=json"), 0);
	CU_ASSERT_EQUAL(c.stats, PP_STATS_JSON);
	CU_ASSERT_EQUAL(pp_config_load(&c, "stats=text"), 0);
	CU_ASSERT_EQUAL(c.stats, PP_STATS_TEXT);
	CU_ASSERT_EQUAL(pp_config_load(&c, "stats=xml"), -EINVAL);
}

static CU_TestInfo tests[] = {
    {"defaults", test_defaults},
    {"the engine's keys keep the engine's defaults", test_engine_defaults},
    {"string", test_string},
    {"env then string", test_env_then_string},
    {"job key", test_job_key},
    {"errors", test_errors},
    {"booleans", test_booleans},
    {"numbers", test_numbers},
    {"key table", test_key_table},
    {"shm_long: auto, copy or rings", test_shm_long},
    {"shm_copy_min", test_shm_copy_min},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"config", setup, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
