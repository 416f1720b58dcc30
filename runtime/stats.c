/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stats=text|json: every counter of pp_stats on stderr at pp_finalize, so a
 * run can be examined without code. Text: one "pp: stats: rank R: NAME
 * VALUE" line per counter. JSON: one document on one line per rank (ranks
 * sharing a stderr give JSON lines). The block is written under stderr's
 * lock, so ranks in threads of one process do not interleave. Cold path.
 */
#include <stddef.h>
#include <stdio.h>

#include "ctx.h"
#include "pp_counters.h"
#include "pp_json.h"
#include "ppd/ppd_pull.h"
#include "wire.h"

/* The counters of struct pp_stats by name, in its order (drops apart). */
static const struct pp_counter_name fields[] = {
#define F(x) PP_COUNTER(struct pp_stats, x)
    F(frames_tx),      F(frames_rx),	    F(bytes_tx),	 F(bytes_rx),
    F(msgs_tx),	       F(msgs_rx),	    F(retransmits),	 F(nacks_tx),
    F(acks_tx),	       F(pulls_tx),	    F(pulls_served),	 F(early_matches),
    F(late_matches),   F(pushed_buf_bytes), F(pushed_buf_peak),	 F(push_degraded),
    F(copies_avoided), F(pred_predictions), F(pred_hits),	 F(pred_misses),
    F(spec_pulls),     F(bytes_staged),	    F(pages_remapped),	 F(evictions),
    F(staged_msgs),    F(stage_peak),	    F(pushes_fitted),	 F(push_now),
    F(path_rtt_ns),    F(path_rate),	    F(path_pull_rtt_ns), F(pull_waits),
    F(pull_wait_ns),
#undef F
};

/* A counter added to pp_stats must be added above. */
_Static_assert(sizeof(struct pp_stats) ==
		   (sizeof(fields) / sizeof(fields[0]) + PP_DROP_MAX) * sizeof(uint64_t),
	       "every pp_stats counter is named in runtime/stats.c");

static uint64_t field(const struct pp_stats *s, size_t i)
{
	return pp_counter_get(s, &fields[i]);
}

static void text(const pp_ctx *ctx, const struct pp_stats *s)
{
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		fprintf(stderr, "pp: stats: rank %d: %s %llu\n", ctx->rank, fields[i].name,
			(unsigned long long)field(s, i));
	for (int r = 0; r < PP_DROP_MAX; r++)
		fprintf(stderr, "pp: stats: rank %d: drops.%s %llu\n", ctx->rank,
			pp_wire_drop_name((enum pp_drop_reason)r), (unsigned long long)s->drops[r]);
	fprintf(stderr, "pp: stats: rank %d: zerocopy_frames %llu\n", ctx->rank,
		(unsigned long long)ctx->zc.frames);
	if (ctx->cfg.daemon[0])
		fprintf(stderr, "pp: stats: rank %d: daemon_handovers %llu\n", ctx->rank,
			(unsigned long long)ppd_port_handovers(ctx->port));
}

static void json(const pp_ctx *ctx, const struct pp_stats *s)
{
	struct pp_json j;
	pp_json_begin(&j, stderr, 0);
	pp_json_object(&j, NULL);
	pp_json_i64(&j, "rank", ctx->rank);
	pp_json_i64(&j, "size", ctx->size);
	pp_json_str(&j, "job", ctx->cfg.job_name);
	pp_json_u64(&j, "incarnation", ctx->inc);
	pp_json_str(&j, "node", ctx->cfg.node);
	pp_json_str(&j, "mode", pp_mode_name(ctx->cfg.mode));
	pp_json_str(&j, "port", ctx->port_info.driver);
	pp_json_object(&j, "stats");
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		pp_json_u64(&j, fields[i].name, field(s, i));
	pp_json_object(&j, "drops");
	for (int r = 0; r < PP_DROP_MAX; r++)
		pp_json_u64(&j, pp_wire_drop_name((enum pp_drop_reason)r), s->drops[r]);
	pp_json_close(&j);
	pp_json_u64(&j, "zerocopy_frames", ctx->zc.frames);
	if (ctx->cfg.daemon[0])
		pp_json_u64(&j, "daemon_handovers", ppd_port_handovers(ctx->port));
	pp_json_close(&j);
	pp_json_close(&j);
	pp_json_finish(&j);
}

void pp_rt_stats_print(pp_ctx *ctx)
{
	struct pp_stats s;
	if (ctx->cfg.stats == PP_STATS_OFF || pp_get_stats(ctx, &s))
		return;
	flockfile(stderr);
	if (ctx->cfg.stats == PP_STATS_JSON)
		json(ctx, &s);
	else
		text(ctx, &s);
	funlockfile(stderr);
}
