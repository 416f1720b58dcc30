/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * runtime/bootstrap: what can be checked without a launcher. Which bootstrap
 * is chosen (PMIx, the settings with HELLO, a cluster file), the job key of
 * a namespace, the record a rank puts and its parser, membership's learn,
 * and that ranks given rank= and size= start over sim ports even with a
 * PMIx launcher's variables in the environment (PMIx is never touched: in
 * a build with PMIx, PMIx_Init would fail there).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap.h"
#include "cu_main.h"
#include "embed.h"
#include "pp.h"
#include "pp_log.h"
#include "sim/pp_sim.h"

static void clear_env(void)
{
	static const char *const vars[] = {"PP_RANK",	 "PP_SIZE", "PP_JOB",	 "PP_NODE",
					   "PP_CLUSTER", "PP_DEV",  "PMIX_RANK", "PMIX_NAMESPACE"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static int setup(void)
{
	clear_env();
	pp_log_set_level("off"); /* the refusals below log on purpose */
	return 0;
}

static void test_launcher(void)
{
	CU_ASSERT_TRUE(pp_boot_launcher("159711233", "0"));
	CU_ASSERT_TRUE(pp_boot_launcher("slurm.pmix.12.0", "17"));
	CU_ASSERT_FALSE(pp_boot_launcher(NULL, "0"));
	CU_ASSERT_FALSE(pp_boot_launcher("ns", NULL));
	CU_ASSERT_FALSE(pp_boot_launcher("", "0"));
	CU_ASSERT_FALSE(pp_boot_launcher("ns", ""));
	CU_ASSERT_FALSE(pp_boot_launcher("ns", "-1"));
	CU_ASSERT_FALSE(pp_boot_launcher("ns", "1x"));
	CU_ASSERT_FALSE(pp_boot_launcher("ns", " 1"));
}

static enum pp_boot choose(const char *settings, int launcher, bool have_pmix)
{
	struct pp_config c;
	CU_ASSERT_EQUAL_FATAL(pp_config_load(&c, settings), 0);
	return pp_boot_choose(&c, launcher, have_pmix);
}

static void test_choose(void)
{
	/* PMIx only when launched by it, built with it, and no rank or size given. */
	CU_ASSERT_EQUAL(choose(NULL, 1, true), PP_BOOT_PMIX);
	CU_ASSERT_EQUAL(choose("dev=pcap:pp0,job=7,node=n0", 1, true), PP_BOOT_PMIX);
	CU_ASSERT_EQUAL(choose("cluster=/etc/pp.cluster", 1, true), PP_BOOT_PMIX);
	CU_ASSERT_EQUAL(choose(NULL, 0, true), PP_BOOT_HELLO);
	CU_ASSERT_EQUAL(choose(NULL, 1, false), PP_BOOT_HELLO);
	CU_ASSERT_EQUAL(choose("cluster=/etc/pp.cluster", 1, false), PP_BOOT_CLUSTER);
	/* Settings win, given either way. */
	CU_ASSERT_EQUAL(choose("rank=0,size=2", 1, true), PP_BOOT_HELLO);
	CU_ASSERT_EQUAL(choose("rank=1", 1, true), PP_BOOT_HELLO);
	CU_ASSERT_EQUAL(choose("size=4", 1, true), PP_BOOT_HELLO);
	CU_ASSERT_EQUAL(choose("rank=0,size=2,cluster=/etc/pp.cluster", 1, true), PP_BOOT_CLUSTER);
	setenv("PP_RANK", "0", 1);
	setenv("PP_SIZE", "2", 1);
	CU_ASSERT_EQUAL(choose(NULL, 1, true), PP_BOOT_HELLO);
	clear_env();
}

static void test_names(void)
{
	CU_ASSERT_STRING_EQUAL(pp_boot_name(PP_BOOT_PMIX), "pmix");
	CU_ASSERT_STRING_EQUAL(pp_boot_name(PP_BOOT_HELLO), "settings, HELLO discovery");
	CU_ASSERT_STRING_EQUAL(pp_boot_name(PP_BOOT_CLUSTER), "settings, cluster file");
}

static void test_job_key(void)
{
	/* FNV-1a's published values. */
	CU_ASSERT_EQUAL(pp_boot_job_key("a"), 0xe40c292cu);
	CU_ASSERT_EQUAL(pp_boot_job_key("foobar"), 0xbf9cf968u);
	/* As job=NAME gives it, so a rank started by hand can join. */
	struct pp_config c;
	CU_ASSERT_EQUAL_FATAL(pp_config_load(&c, "job=slurm.pmix.12.0"), 0);
	CU_ASSERT_EQUAL(pp_boot_job_key("slurm.pmix.12.0"), c.job);
	CU_ASSERT_TRUE(c.job_set);
	/* Open MPI's namespaces are numbers: hashed too, not taken as the key. */
	CU_ASSERT_EQUAL(pp_boot_job_key("159711233"), pp_config_job_hash("159711233"));
	CU_ASSERT_NOT_EQUAL(pp_boot_job_key("159711233"), 159711233u);
	CU_ASSERT_NOT_EQUAL(pp_boot_job_key("159711233"), pp_boot_job_key("159711234"));
	CU_ASSERT_NOT_EQUAL(pp_boot_job_key(""), 0);
	CU_ASSERT_EQUAL_FATAL(pp_config_load(&c, NULL), 0);
	CU_ASSERT_FALSE(c.job_set);
}

static void test_record(void)
{
	struct pp_boot_peer p = {{0x02, 0x50, 0x50, 0x00, 0x01, 0x01}, 3735928559u, "ppn0"}, q;
	char buf[PP_BOOT_RECORD];
	int n = pp_boot_record(buf, sizeof(buf), &p);
	CU_ASSERT_EQUAL(n, (int)strlen(buf));
	CU_ASSERT_STRING_EQUAL(buf, "pp1 02:50:50:00:01:01 3735928559 ppn0");
	memset(&q, 0xee, sizeof(q));
	CU_ASSERT_EQUAL(pp_boot_parse(buf, &q), 0);
	CU_ASSERT_EQUAL(memcmp(q.mac, p.mac, 6), 0);
	CU_ASSERT_EQUAL(q.inc, p.inc);
	CU_ASSERT_STRING_EQUAL(q.node, "ppn0");

	/* A node name with spaces is the rest of the record. */
	CU_ASSERT_EQUAL(pp_boot_parse("pp1 02:50:50:00:01:01 1 rack 3 node 4", &q), 0);
	CU_ASSERT_STRING_EQUAL(q.node, "rack 3 node 4");
	CU_ASSERT_EQUAL(q.inc, 1);

	/* The longest node a HELLO carries, cut as a HELLO cuts it. */
	memset(p.node, 'n', sizeof(p.node) - 1);
	p.node[sizeof(p.node) - 1] = '\0';
	CU_ASSERT_TRUE(pp_boot_record(buf, sizeof(buf), &p) > 0);
	CU_ASSERT_EQUAL(pp_boot_parse(buf, &q), 0);
	CU_ASSERT_EQUAL(strlen(q.node), PP_NODE_NAME - 1);
	CU_ASSERT_EQUAL(pp_boot_record(buf, 20, &p), -ENOSPC);
}

static void test_record_bad(void)
{
	static const char *const bad[] = {
	    "",
	    "pp1",
	    "pp2 02:50:50:00:01:01 5 n",	  /* another format */
	    "PP1 02:50:50:00:01:01 5 n",	  /* ... */
	    "pp1 02:50:50:00:01 5 n",		  /* short MAC */
	    "pp1 02:50:50:00:01:0g 5 n",	  /* not hex */
	    "pp1 03:50:50:00:01:01 5 n",	  /* group address */
	    "pp1 ff:ff:ff:ff:ff:ff 5 n",	  /* broadcast */
	    "pp1 02:50:50:00:01:01  5 n",	  /* two spaces */
	    "pp1 02:50:50:00:01:01 0 n",	  /* incarnation 0 */
	    "pp1 02:50:50:00:01:01 -5 n",	  /* negative */
	    "pp1 02:50:50:00:01:01 +5 n",	  /* signed */
	    "pp1 02:50:50:00:01:01 5x n",	  /* not a number */
	    "pp1 02:50:50:00:01:01 4294967296 n", /* above 32 bits */
	    "pp1 02:50:50:00:01:01 99999999999999999999999 n",
	    "pp1 02:50:50:00:01:01 5",	   /* no node */
	    "pp1 02:50:50:00:01:01 5 ",	   /* empty node */
	    "pp1 02:50:50:00:01:01 5 n\n", /* control character */
	    "pp1 02:50:50:00:01:01 5 a\tb",
	    "pp1 02:50:50:00:01:01 5 "
	    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn", /* 64: too long */
	};
	struct pp_boot_peer q;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = pp_boot_parse(bad[i], &q);
		if (rc != -EINVAL)
			fprintf(stderr, "\n  accepted: '%s'\n", bad[i]);
		CU_ASSERT_EQUAL(rc, -EINVAL);
	}
}

static void test_learn(void)
{
	pp_ctx *ctx = calloc(1, sizeof(*ctx));
	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	ctx->rank = 1;
	ctx->size = 3;
	CU_ASSERT_EQUAL_FATAL(pp_membership_init(ctx), 0);
	const uint8_t mac[6] = {2, 0x50, 0x50, 0, 0, 1};
	CU_ASSERT_EQUAL(pp_membership_learn(ctx, 0, mac, 42, "ppn0"), 0);
	CU_ASSERT_EQUAL(pp_membership_learn(ctx, 0, mac, 43, "ppn0"), -EEXIST);
	CU_ASSERT_EQUAL(pp_membership_learn(ctx, 1, mac, 42, "self"), -EINVAL);
	CU_ASSERT_EQUAL(pp_membership_learn(ctx, 3, mac, 42, "out"), -EINVAL);
	CU_ASSERT_EQUAL(pp_membership_learn(ctx, 2, mac, 0, "no inc"), -EINVAL);
	const struct pp_peer_info *pi = pp_membership_peer(ctx, 0);
	CU_ASSERT_TRUE(pi->known);
	CU_ASSERT_EQUAL(pi->inc, 42);
	CU_ASSERT_EQUAL(memcmp(pi->mac, mac, 6), 0);
	CU_ASSERT_STRING_EQUAL(pi->node, "ppn0");
	CU_ASSERT_FALSE(pp_membership_peer(ctx, 2)->known);
	CU_ASSERT_EQUAL(ctx->mem.nknown, 1);
	pp_membership_fini(ctx);
	free(ctx);
}

/* --- settings win over a launcher's variables ------------------------------ */

struct rank_run {
	int rank, rc, size_seen;
};

static char link_name[32];

static void *rank_main(void *arg)
{
	struct rank_run *run = arg;
	char cfg[256];
	pp_ctx *ctx;
	snprintf(cfg, sizeof(cfg), "rank=%d,size=2,job=boot,node=n%d,dev=sim:%s/%d,timeout_ms=5000",
		 run->rank, run->rank, link_name, run->rank);
	run->rc = pp_init(&ctx, cfg);
	if (run->rc)
		return NULL;
	run->size_seen = pp_size(ctx);
	int v = run->rank;
	run->rc = run->rank == 0 ? pp_send(ctx, &v, sizeof(v), 1, 3)
				 : pp_recv(ctx, &v, sizeof(v), 0, 3, NULL);
	if (run->rc == 0 && pp_finalize(ctx))
		run->rc = -EIO;
	return NULL;
}

static void test_settings_win(void)
{
	/* As if a pprun rank ran inside an mpirun job: PMIx would say rank 7. */
	setenv("PMIX_NAMESPACE", "not.a.launcher", 1);
	setenv("PMIX_RANK", "7", 1);
	struct pp_sim_conf sc = {.seed = 1, .mtu = 1500};
	struct pp_sim_link *l;
	snprintf(link_name, sizeof(link_name), "boot%d", (int)getpid());
	CU_ASSERT_EQUAL_FATAL(pp_sim_link_create(&l, link_name, 2, &sc), 0);
	struct rank_run runs[2] = {{.rank = 0}, {.rank = 1}};
	pthread_t th[2];
	for (int r = 0; r < 2; r++)
		pthread_create(&th[r], NULL, rank_main, &runs[r]);
	for (int r = 0; r < 2; r++) {
		pthread_join(th[r], NULL);
		CU_ASSERT_EQUAL(runs[r].rc, 0);
		CU_ASSERT_EQUAL(runs[r].size_seen, 2);
	}
	pp_sim_link_destroy(l);
	clear_env();
}

/* A build without PMIx under a launcher, with no rank= or size=: pp_init
 * refuses at once (it cannot know its rank) instead of waiting in HELLO
 * discovery. A build with PMIx would call PMIx_Init there, which needs a
 * real launcher: pmix_launch.sh covers it. */
static void test_launcher_no_pmix(void)
{
	if (pp_pmix_built())
		return;
	setenv("PMIX_NAMESPACE", "not.a.launcher", 1);
	setenv("PMIX_RANK", "0", 1);
	pp_ctx *ctx = NULL;
	CU_ASSERT_EQUAL(pp_init(&ctx, "dev=sim:none/0,timeout_ms=100"), -EINVAL);
	CU_ASSERT_PTR_NULL(ctx);
	clear_env();
}

/* pp_launcher_env: rank, size, job and node-mates' count as Open MPI,
 * Hydra and Slurm state them; a count outside 1..size is none. */
static void test_launcher_env(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_RANK",
					   "OMPI_COMM_WORLD_SIZE",
					   "OMPI_COMM_WORLD_LOCAL_SIZE",
					   "OMPI_MCA_ess_base_jobid",
					   "PMI_RANK",
					   "PMI_SIZE",
					   "MPI_LOCALNRANKS",
					   "PMI_KVSNAME",
					   "SLURM_PROCID",
					   "SLURM_NTASKS",
					   "SLURM_JOB_ID"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	struct pp_launcher l;
	pp_launcher_env(&l);
	CU_ASSERT_EQUAL(l.rank, -1);
	CU_ASSERT_EQUAL(l.local_size, -1);
	CU_ASSERT_STRING_EQUAL(l.name, "none");

	setenv("OMPI_COMM_WORLD_RANK", "3", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
	setenv("OMPI_MCA_ess_base_jobid", "1234", 1);
	pp_launcher_env(&l);
	CU_ASSERT_STRING_EQUAL(l.name, "Open MPI");
	CU_ASSERT_EQUAL(l.rank, 3);
	CU_ASSERT_EQUAL(l.size, 8);
	CU_ASSERT_EQUAL(l.local_size, 4);
	CU_ASSERT_NOT_EQUAL(l.job, 0);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "9", 1); /* more than the job */
	pp_launcher_env(&l);
	CU_ASSERT_EQUAL(l.local_size, -1);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "0", 1);
	pp_launcher_env(&l);
	CU_ASSERT_EQUAL(l.local_size, -1);
	for (size_t i = 0; i < 4; i++)
		unsetenv(vars[i]);

	setenv("PMI_RANK", "1", 1);
	setenv("PMI_SIZE", "2", 1);
	setenv("MPI_LOCALNRANKS", "2", 1);
	pp_launcher_env(&l);
	CU_ASSERT_STRING_EQUAL(l.name, "PMI");
	CU_ASSERT_EQUAL(l.local_size, 2);
	unsetenv("PMI_RANK");

	setenv("SLURM_PROCID", "0", 1);
	setenv("SLURM_NTASKS", "2", 1);
	pp_launcher_env(&l);
	CU_ASSERT_STRING_EQUAL(l.name, "Slurm");
	CU_ASSERT_EQUAL(l.local_size, -1); /* Slurm's per-node counts are not read */
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static CU_TestInfo tests[] = {
    {"a launcher's variables", test_launcher},
    {"rank, size, job and node-mates from a launcher's environment", test_launcher_env},
    {"the choice", test_choose},
    {"names", test_names},
    {"job key of a namespace", test_job_key},
    {"record and parse", test_record},
    {"malformed records", test_record_bad},
    {"membership learns a peer", test_learn},
    {"settings win over a launcher", test_settings_win},
    {"a launcher, no PMIx in the build", test_launcher_no_pmix},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"bootstrap", setup, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
