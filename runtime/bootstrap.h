/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bootstrap: how a rank learns its rank, the job's size and key, and its
 * peers' ports. In this order:
 *
 * 1. PMIx, when a PMIx launcher started the process (Open MPI's mpirun,
 *    prterun, srun --mpi=pmix: PMIX_NAMESPACE and PMIX_RANK are in its
 *    environment) and the build has PMIx. Rank and size come from PMIx_Init
 *    and PMIX_JOB_SIZE, the job key is a hash of the namespace, the node is
 *    the launcher's host name; each rank's MAC, incarnation and node go
 *    through PMIx_Put, PMIx_Commit, a fence that collects the data and
 *    PMIx_Get (pmix.c) instead of HELLO frames.
 * 2. The settings (rank=, size=; PP_RANK, PP_SIZE; pprun sets them), with
 *    HELLO discovery by broadcast (membership.c),
 * 3. ... or, with cluster=FILE, HELLOs to the ports the file lists.
 *
 * Settings win: rank= or size= given, in the pp_init string or the
 * environment, means the settings bootstrap even under a PMIx launcher, as
 * the string wins over the environment everywhere else; a pprun started
 * from inside an mpirun job, or a program that names its ranks, never
 * reaches for the launcher. Under PMIx, job= and node= given explicitly
 * also win over the namespace and the launcher's host name.
 *
 * Only the environment decides whether PMIx is tried: PMIx_Init is never
 * called outside a launcher. Outside one it would look for a system server
 * and, with none, make the process a singleton whose fences never complete;
 * with one, it would join a job the rank is no part of.
 *
 * One PMIx-bootstrapped context per process: PMIx_Init again after
 * PMIx_Finalize is not served (Open MPI 4.1's server mixed the fences of a
 * second init with the first's data when tried), and two live contexts
 * would overwrite each other's record.
 */
#ifndef PP_BOOTSTRAP_H
#define PP_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ctx.h"
#include "pp_mac.h"

/* The PMIx key of a rank's record, and the record's largest text. */
#define PP_BOOT_KEY    "pp.peer"
#define PP_BOOT_RECORD (32 + PP_MAC_STRLEN + PP_NODE_NAME)

/* What a rank says of itself to its peers. */
struct pp_boot_peer {
	uint8_t mac[6];		 /* its port's MAC */
	uint32_t inc;		 /* its incarnation (never 0) */
	char node[PP_NODE_NAME]; /* its node name */
};

/* 1 when ns and rank look like a PMIx launcher's PMIX_NAMESPACE and
 * PMIX_RANK: both set, the namespace not empty, the rank a decimal number. */
int pp_boot_launcher(const char *ns, const char *rank);

/* The bootstrap for settings c, launcher as above, have_pmix when the build
 * has PMIx: PMIX when launched by PMIx, the build has it and neither rank
 * nor size is set; else CLUSTER with cluster=, else HELLO. */
enum pp_boot pp_boot_choose(const struct pp_config *c, int launcher, bool have_pmix);

/* "pmix", "settings, HELLO discovery", "settings, cluster file". */
const char *pp_boot_name(enum pp_boot b);

/* The job key of a PMIx namespace: pp_config_job_hash of its name (as
 * job=NAME would give; a numeric namespace is hashed too, not taken as the
 * number), never 0, the key of ranks started with no job=. */
uint32_t pp_boot_job_key(const char *nspace);

/* A rank's record as text, "pp1 MAC INC NODE" (pp1: the format; the node
 * is cut to PP_NODE_NAME - 1 bytes, as a HELLO carries it). Returns its
 * length, or -ENOSPC when len is too short. */
int pp_boot_record(char *buf, size_t len, const struct pp_boot_peer *p);

/* Parse a record into *p. Errors: -EINVAL (another format, a MAC that is
 * not unicast, incarnation 0 or above 2^32 - 1, no node, a node too long
 * or with control characters, anything malformed). */
int pp_boot_parse(const char *s, struct pp_boot_peer *p);

/* pp_init's part (bootstrap.c): choose, and with PMIx take rank, size, job
 * and node from the launcher into ctx->cfg; log the choice at info. end:
 * PMIx_Finalize when PMIx was up. Errors: -EINVAL (started by a PMIx
 * launcher but built without PMIx, and no rank=/size=), pp_pmix_init's. */
int pp_boot_start(pp_ctx *ctx);
void pp_boot_end(pp_ctx *ctx);

/* The PMIx side (pmix.c, or pmix_none.c in a build without PMIx).
 * built: whether this build has it. init: PMIx_Init, then rank, size, job
 * key and name, node into c (job and node only when not set explicitly).
 * Errors: -EALREADY (this process had a PMIx context already),
 * -ECONNREFUSED (PMIx_Init failed), -EPROTO (no usable job size or rank),
 * -ENOTSUP (no PMIx in this build). exchange: put our record, fence with
 * data collection (bounded by timeout_ms), get every peer's and hand it to
 * pp_membership_learn. Errors: -ETIMEDOUT (fence), -EPROTO (a record
 * missing or malformed), -EIO (PMIx refused the put or fence). fini:
 * PMIx_Finalize. */
bool pp_pmix_built(void);
int pp_pmix_init(struct pp_config *c);
int pp_pmix_exchange(pp_ctx *ctx);
void pp_pmix_fini(void);

#endif
