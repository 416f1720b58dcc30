/* SPDX-License-Identifier: BSD-3-Clause */
/* Rank, size, job and node-mates' count of this process as its launcher states them (embed.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed.h"
#include "pp_hash.h"

/* A whole decimal number in [0, INT_MAX] from variable name, or -1. */
static int env_int(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return -1;
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	return errno || *end || x < 0 || x > INT_MAX ? -1 : (int)x;
}

/* FNV-1a of the variables' values that are set, joined by '/', or 0 when
 * none is (never 0 otherwise: 0 means none). */
static uint32_t env_hash(const char *const *names)
{
	uint32_t h = PP_FNV32_INIT;
	int any = 0;
	for (; *names; names++) {
		const char *v = getenv(*names);
		if (!v || !*v)
			continue;
		any = 1;
		h = pp_fnv1a32_add(pp_fnv1a32_add(h, v), "/");
	}
	return any ? (h ? h : 1) : 0;
}

struct launcher {
	const char *name;
	const char *rank, *size;
	const char *job[3];	/* joined and hashed; NULL-terminated */
	const char *local_size; /* ranks of the job on this node, or NULL */
};

/* In order: the first whose rank and size are both set wins. The job ids
 * are what every process of one job has alike and no other job has. */
static const struct launcher launchers[] = {
    /* Open MPI 4's ORTE and 5's PRRTE: the PMIx namespace names the job. */
    {"Open MPI",
     "OMPI_COMM_WORLD_RANK",
     "OMPI_COMM_WORLD_SIZE",
     {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", NULL},
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    /* Slurm's srun: job and step. Its count of tasks on this node has a
     * compressed form ("2(x3),1"), per node in turn: not read. */
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", {"SLURM_JOB_ID", "SLURM_STEP_ID", NULL}, NULL},
    /* PMI-1 and PMI-2 (MPICH's Hydra): the KVS name when it is passed, else
     * the address of the launcher's PMI server, one per job. */
    {"PMI", "PMI_RANK", "PMI_SIZE", {"PMI_KVSNAME", "PMI_PORT", NULL}, "MPI_LOCALNRANKS"},
};

void pp_launcher_env(struct pp_launcher *l)
{
	l->rank = l->size = l->local_size = -1;
	l->job = 0;
	l->name = "none";
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		const struct launcher *L = &launchers[i];
		int rank = env_int(L->rank), size = env_int(L->size);
		if (rank < 0 || size < 1 || rank >= size)
			continue;
		l->rank = rank;
		l->size = size;
		l->job = env_hash(L->job);
		l->name = L->name;
		int local = L->local_size ? env_int(L->local_size) : -1;
		l->local_size = local >= 1 && local <= size ? local : -1;
		return;
	}
}
