/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pp_predict: replay a receive trace through the predictors and print their
 * hit ratios at each look-ahead, the cost of one observe+predict and the
 * memory each uses; or write a synthetic trace (--synth).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"
#include "predict.h"
#include "replay.h"
#include "synth.h"
#include "trace.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pp_predict --trace FILE [--pred all|NAME,...] [--ahead 1,10]\n"
		"                  [--min-bytes N] [--key envelope|buf-size-src|F+F...] [--csv]\n"
		"       pp_predict --synth PATTERN [--reps N] [--seed N] [-o FILE]\n"
		"\n"
		"Replays a receive trace (CSV; see predict/README.md) through receive\n"
		"predictors and prints, per predictor and look-ahead, the hit ratio over\n"
		"the predictions made and over all receives, the ns per observe+predict\n"
		"and the bytes the predictor uses.\n"
		"\n"
		"  --trace FILE     the trace to replay\n"
		"  --pred LIST      predictors, comma-separated, or all (default):\n"
		"                   single-cycle, tag, tag-cycle, tag-bettercycle, graph,\n"
		"                   dpd, hybrid\n"
		"  --ahead LIST     look-aheads to score, comma-separated, 1..%d (default 1,10)\n"
		"  --min-bytes N    score only receives of at least N bytes (default 0)\n"
		"  --key KEY        message id: envelope (src,tag,comm; default),\n"
		"                   buf-size-src, or fields joined by '+' from\n"
		"                   src, tag, comm, bytes, buf, site\n"
		"  --csv            print CSV: predictor,ahead,receives,predictions,hits,\n"
		"                   ns_per_op,bytes\n"
		"  --synth PATTERN  write a synthetic trace instead: cycle, noisy or lu\n"
		"  --reps N         repetitions of the pattern's cycle (default per pattern)\n"
		"  --seed N         random seed for the noise (default 1)\n"
		"  -o, --out FILE   where --synth writes (default standard output)\n"
		"  -h, --help       this text\n",
		PP_PRED_MAX_AHEAD);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*s == '\0' || *s == '-' || *end != '\0' || errno)
		return -EINVAL;
	*out = v;
	return 0;
}

/* --ahead: a value list in pp_perf_parse_list's syntax, each 1..max. */
static int parse_aheads(const char *s, struct pp_replay_cfg *cfg)
{
	uint64_t v[PP_REPLAY_MAX_AHEADS];
	int n = pp_perf_parse_list(s, v, PP_REPLAY_MAX_AHEADS);
	if (n <= 0)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (v[i] == 0 || v[i] > PP_PRED_MAX_AHEAD)
			return -EINVAL;
		cfg->ahead[i] = (unsigned)v[i];
	}
	cfg->n_ahead = n;
	return 0;
}

/* Fill sel[] with the predictors named in list; returns the count or -1. */
static int parse_preds(const char *list, const struct pp_pred_ops **sel, int max)
{
	int n = 0;
	if (strcmp(list, "all") == 0) {
		for (int i = 0; pp_pred_all[i] && n < max; i++)
			sel[n++] = pp_pred_all[i];
		return n;
	}
	char buf[512];
	if (strlen(list) >= sizeof(buf))
		return -1;
	strcpy(buf, list);
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct pp_pred_ops *ops = pp_pred_find(tok);
		if (!ops) {
			fprintf(stderr, "pp_predict: unknown predictor '%s' (known:", tok);
			for (int i = 0; pp_pred_all[i]; i++)
				fprintf(stderr, " %s", pp_pred_all[i]->name);
			fprintf(stderr, ")\n");
			return -1;
		}
		if (n == max)
			return -1;
		sel[n++] = ops;
	}
	return n;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/*
 * ns per observe+predict of name over the trace: whole passes on fresh
 * predictors until 50 ms have been measured (at most 1000 passes), and the
 * median pass's figure (a mean took every pause of the machine in: single
 * runs moved by 2x).
 */
static int time_pred(const char *name, const struct pp_pred_params *prm, const uint64_t *ids,
		     const uint32_t *sites, size_t n, double *ns_per_op)
{
	enum { MAX_PASSES = 1000 };
	static double per_pass[MAX_PASSES];
	uint64_t out[PP_PRED_MAX_AHEAD];
	double total = 0;
	int passes = 0;
	volatile uint64_t sink = 0;
	for (; n > 0 && passes < MAX_PASSES && total < 50e6; passes++) {
		struct pp_pred *p;
		int rc = pp_pred_create(name, prm, &p);
		if (rc < 0)
			return rc;
		double t0 = now_ns();
		for (size_t i = 0; i < n; i++) {
			unsigned k = pp_pred_predict(p, sites[i], out, prm->max_ahead);
			if (k)
				sink += out[0];
			pp_pred_observe(p, ids[i], sites[i]);
			pp_pred_grow(p); /* timed too: a flag unless a table is short */
		}
		double t = now_ns() - t0;
		total += t;
		per_pass[passes] = t / (double)n;
		pp_pred_destroy(p);
	}
	(void)sink;
	qsort(per_pass, (size_t)passes, sizeof(per_pass[0]), cmp_double);
	*ns_per_op = passes ? per_pass[passes / 2] : 0;
	return 0;
}

static int do_synth(const char *pattern, uint64_t reps, uint64_t seed, const char *out)
{
	struct pp_trace t = {0};
	int rc = pp_synth(pattern, (unsigned)reps, seed, &t);
	if (rc == -ENOENT) {
		fprintf(stderr, "pp_predict: unknown pattern '%s' (known:", pattern);
		for (int i = 0; pp_synth_patterns[i]; i++)
			fprintf(stderr, " %s", pp_synth_patterns[i]);
		fprintf(stderr, ")\n");
		return 2;
	}
	if (rc < 0) {
		fprintf(stderr, "pp_predict: %s\n", strerror(-rc));
		return 1;
	}
	FILE *f = out ? fopen(out, "w") : stdout;
	if (!f) {
		fprintf(stderr, "pp_predict: %s: %s\n", out, strerror(errno));
		pp_trace_free(&t);
		return 1;
	}
	fprintf(f, "# pp_predict --synth %s --reps %" PRIu64 " --seed %" PRIu64 "\n", pattern, reps,
		seed);
	rc = pp_trace_write(f, &t);
	if (out && fclose(f) != 0)
		rc = -EIO;
	pp_trace_free(&t);
	if (rc < 0) {
		fprintf(stderr, "pp_predict: writing %s failed\n", out ? out : "standard output");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"trace", required_argument, NULL, 't'}, {"pred", required_argument, NULL, 'p'},
	    {"ahead", required_argument, NULL, 'a'}, {"min-bytes", required_argument, NULL, 'm'},
	    {"key", required_argument, NULL, 'k'},   {"csv", no_argument, NULL, 'c'},
	    {"synth", required_argument, NULL, 's'}, {"reps", required_argument, NULL, 'r'},
	    {"seed", required_argument, NULL, 'S'},  {"out", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},	     {NULL, 0, NULL, 0},
	};
	const char *trace = NULL, *preds = "all", *synth = NULL, *out = NULL, *key = "envelope";
	const char *ahead = "1,10";
	uint64_t reps = 0, seed = 1, min_bytes = 0;
	int csv = 0, c;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			trace = optarg;
			break;
		case 'p':
			preds = optarg;
			break;
		case 'a':
			ahead = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'c':
			csv = 1;
			break;
		case 's':
			synth = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'm':
			if (parse_u64(optarg, &min_bytes) < 0) {
				fprintf(stderr, "pp_predict: bad --min-bytes '%s'\n", optarg);
				return 2;
			}
			break;
		case 'r':
			if (parse_u64(optarg, &reps) < 0 || reps > 1000000) {
				fprintf(stderr, "pp_predict: bad --reps '%s' (1..1000000)\n",
					optarg);
				return 2;
			}
			break;
		case 'S':
			if (parse_u64(optarg, &seed) < 0) {
				fprintf(stderr, "pp_predict: bad --seed '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pp_predict: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (synth) {
		if (trace) {
			fprintf(stderr, "pp_predict: --synth and --trace exclude each other\n");
			return 2;
		}
		return do_synth(synth, reps, seed, out);
	}
	if (!trace) {
		fprintf(stderr, "pp_predict: --trace FILE or --synth PATTERN is required\n");
		usage(stderr);
		return 2;
	}

	struct pp_replay_cfg cfg = {.min_bytes = min_bytes};
	if (parse_aheads(ahead, &cfg) < 0) {
		fprintf(stderr,
			"pp_predict: bad --ahead '%s' (comma-separated 1..%d, at most %d)\n", ahead,
			PP_PRED_MAX_AHEAD, PP_REPLAY_MAX_AHEADS);
		return 2;
	}
	if (pp_pred_key_parse(key, &cfg.fields) < 0) {
		fprintf(stderr, "pp_predict: bad --key '%s'\n", key);
		return 2;
	}
	const struct pp_pred_ops *sel[32];
	int nsel = parse_preds(preds, sel, 32);
	if (nsel <= 0) {
		if (nsel == 0)
			fprintf(stderr, "pp_predict: bad --pred '%s'\n", preds);
		return 2;
	}

	struct pp_trace t = {0};
	char err[512];
	if (pp_trace_load(trace, &t, err, sizeof(err)) < 0) {
		fprintf(stderr, "pp_predict: %s\n", err);
		return 1;
	}
	struct pp_pred_params prm = {0};
	for (unsigned i = 0; i < cfg.n_ahead; i++)
		if (cfg.ahead[i] > prm.max_ahead)
			prm.max_ahead = cfg.ahead[i];

	uint64_t *ids = malloc((t.n ? t.n : 1) * sizeof(*ids));
	uint32_t *sites = malloc((t.n ? t.n : 1) * sizeof(*sites));
	int status = 0;
	if (!ids || !sites) {
		fprintf(stderr, "pp_predict: out of memory\n");
		status = 1;
		goto done;
	}
	for (size_t i = 0; i < t.n; i++) {
		ids[i] = pp_pred_id(&t.obs[i], cfg.fields);
		sites[i] = pp_pred_site(&t.obs[i]);
	}

	if (csv)
		printf("predictor,ahead,receives,predictions,hits,ns_per_op,bytes\n");
	else
		printf("trace %s: %zu receives, key %s, min-bytes %" PRIu64 "\n"
		       "%-16s %5s %9s %9s %9s %8s %8s %8s %9s\n",
		       trace, t.n, key, min_bytes, "predictor", "ahead", "receives", "predicted",
		       "hits", "hit/pred", "hit/all", "ns/op", "bytes");
	for (int s = 0; s < nsel; s++) {
		struct pp_pred *p;
		struct pp_replay_res res;
		double ns = 0;
		int rc = pp_pred_create(sel[s]->name, &prm, &p);
		if (rc == 0) {
			rc = pp_replay_run(p, &t, &cfg, &res);
			size_t mem = pp_pred_mem(p);
			pp_pred_destroy(p);
			if (rc == 0)
				rc = time_pred(sel[s]->name, &prm, ids, sites, t.n, &ns);
			for (unsigned a = 0; rc == 0 && a < cfg.n_ahead; a++) {
				const struct pp_replay_row *r = &res.row[a];
				if (csv) {
					printf("%s,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64
					       ",%.1f,%zu\n",
					       sel[s]->name, cfg.ahead[a], res.receives,
					       r->predictions, r->hits, ns, mem);
					continue;
				}
				char plus[16];
				snprintf(plus, sizeof(plus), "+%u", cfg.ahead[a]);
				printf("%-16s %5s %9" PRIu64 " %9" PRIu64 " %9" PRIu64
				       " %8.3f %8.3f %8.1f %9zu\n",
				       sel[s]->name, plus, res.receives, r->predictions, r->hits,
				       r->predictions ? (double)r->hits / (double)r->predictions
						      : 0.0,
				       res.receives ? (double)r->hits / (double)res.receives : 0.0,
				       ns, mem);
			}
		}
		if (rc < 0) {
			fprintf(stderr, "pp_predict: %s: %s\n", sel[s]->name, strerror(-rc));
			status = 1;
			break;
		}
	}
done:
	free(ids);
	free(sites);
	pp_trace_free(&t);
	return status;
}
