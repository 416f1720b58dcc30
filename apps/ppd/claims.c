/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ppd's job bindings, main thread only (cold path). A rank may attach to a
 * job only as the uid, with the token, and in a job of the size the job is
 * bound to here; what binds it is a claim, not the first rank to come.
 *
 * Who claims: root or the daemon's own uid, over the socket (struct
 * ppd_claim_req, driver/ppd/ppd_shm.h). pprun --daemon runs as root and
 * claims its job at every daemon before it starts a rank; a site's prolog
 * does the same with ppd --claim. A group member (--group) may attach but
 * never claim: otherwise it could bind another user's job number first,
 * which is the squatting claims exist to stop.
 *
 * How long: a binding lasts while its claiming connection is open or any
 * rank of its job is in the table (ACTIVE, DYING or GONE). So a launcher
 * that dies before its ranks leaves nothing behind once they are gone, and
 * ranks that restart while the launcher lives find their job still theirs.
 * A claim on a job bound already is refused, unless the binding is the
 * same and no connection holds it (a launcher taking over its own job).
 *
 * --bind-first-attacher restores the old rule for single-user nodes: a job
 * nobody claimed is bound to its first rank's uid, token and size, held by
 * its ranks alone. Anyone who may attach can then take a job number first.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pp_log.h"
#include "ppd.h"

struct ppd_claim *ppd_claim_find(struct ppd *d, uint32_t job)
{
	for (int i = 0; i < PPD_CLAIMS; i++)
		if (d->claims[i].used && d->claims[i].job == job)
			return &d->claims[i];
	return NULL;
}

/* A free entry bound to (job, uid, token, size) and held by fd, or NULL. */
static struct ppd_claim *claim_new(struct ppd *d, uint32_t job, uid_t uid, uint64_t token,
				   uint32_t size, int fd)
{
	for (int i = 0; i < PPD_CLAIMS; i++) {
		struct ppd_claim *cl = &d->claims[i];
		if (cl->used)
			continue;
		*cl = (struct ppd_claim){
		    .used = 1, .fd = fd, .job = job, .size = size, .token = token, .uid = uid};
		return cl;
	}
	return NULL;
}

int ppd_claim_bind(struct ppd *d, uint32_t job, uid_t uid, uint64_t token, uint32_t size)
{
	return claim_new(d, job, uid, token, size, -1) ? 0 : -ENOSPC;
}

void ppd_claim_serve(struct ppd *d, struct ppd_conn *c, const struct ppd_claim_req *req)
{
	if (c->cr.uid != 0 && c->cr.uid != geteuid()) {
		ppd_reply(c->fd, -EPERM, 0, NULL, 0,
			  "uid %u may not claim jobs here (root or uid %u only)", c->cr.uid,
			  geteuid());
		return;
	}
	if (req->version != PPD_VERSION) {
		ppd_reply(c->fd, -EPROTO, 0, NULL, 0, "version %u, this daemon speaks %u",
			  req->version, PPD_VERSION);
		return;
	}
	if (req->size > PPD_MAX_JOB_RANKS) {
		ppd_reply(c->fd, -EINVAL, 0, NULL, 0, "a claim of %u ranks, at most %u", req->size,
			  PPD_MAX_JOB_RANKS);
		return;
	}
	struct ppd_claim *cl = ppd_claim_find(d, req->job);
	if (cl && (cl->fd >= 0 || cl->uid != req->uid || cl->token != req->token ||
		   (req->size && cl->size && cl->size != req->size))) {
		ppd_reply(c->fd, -EADDRINUSE, 0, NULL, 0, "job %u is claimed here already (uid %u)",
			  req->job, cl->uid);
		return;
	}
	if (cl) {
		cl->fd = c->fd; /* its own binding, left to its ranks: held again */
		if (!cl->size)
			cl->size = req->size;
	} else if (!(cl = claim_new(d, req->job, req->uid, req->token, req->size, c->fd))) {
		ppd_reply(c->fd, -ENOSPC, 0, NULL, 0, "%d jobs are bound here: no room for more",
			  PPD_CLAIMS);
		return;
	}
	c->fd = -1; /* the claim's from now on */
	ppd_reply(cl->fd, 0, 0, NULL, 0, NULL);
	pp_info("ppd: job %u claimed for uid %u (%u ranks) by pid %d", cl->job, (unsigned)cl->uid,
		cl->size, (int)c->cr.pid);
}

void ppd_claim_closed(struct ppd *d, int i)
{
	struct ppd_claim *cl = &d->claims[i];
	if (cl->fd >= 0)
		close(cl->fd);
	cl->fd = -1;
}

void ppd_claims_sweep(struct ppd *d)
{
	for (int i = 0; i < PPD_CLAIMS; i++) {
		struct ppd_claim *cl = &d->claims[i];
		if (!cl->used || cl->fd >= 0)
			continue;
		int held = 0;
		for (int k = 0; k < PPD_MAX_RANKS && !held; k++)
			held = atomic_load(&d->ranks[k].state) != PPD_RANK_FREE &&
			       d->ranks[k].job == cl->job;
		if (!held) {
			pp_info("ppd: job %u released", cl->job);
			cl->used = 0;
		}
	}
}
