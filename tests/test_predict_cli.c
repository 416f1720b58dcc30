/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pp_predict end to end: write synthetic traces with --synth, replay them
 * with --csv and check the papers' qualitative results (cycle predictors
 * above 0.9 at +1 on short cycles, DPD beating the graph at +10 on the
 * LU-like trace, the hybrid at least as good as every other predictor), plus
 * --help and the error paths. The program's path comes from PP_PREDICT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cu_main.h"

#define MAX_ROWS 32

/* One CSV row. */
struct row {
	char pred[32];			/* predictor */
	unsigned ahead;			/* look-ahead */
	unsigned long long receives;	/* receives scored */
	unsigned long long predictions; /* predictions made */
	unsigned long long hits;	/* right ones */
	double ns;			/* ns per observe+predict */
	unsigned long long bytes;	/* memory */
};

static char dir[] = "/tmp/pp_predict_cli.XXXXXX";

static const char *prog(void)
{
	const char *p = getenv("PP_PREDICT");
	return p ? p : "pp_predict";
}

/* Run "pp_predict args" with stderr folded into out; returns the exit status. */
static int run(const char *args, char *out, size_t outlen)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", prog(), args);
	FILE *f = popen(cmd, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	size_t n = fread(out, 1, outlen - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Parse pp_predict --csv output; returns the row count. */
static int parse_csv(char *text, struct row *rows)
{
	char *save, *line = strtok_r(text, "\n", &save);
	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	CU_ASSERT_STRING_EQUAL(line, "predictor,ahead,receives,predictions,hits,ns_per_op,bytes");
	int n = 0;
	while ((line = strtok_r(NULL, "\n", &save)) && n < MAX_ROWS) {
		struct row *r = &rows[n];
		int got = sscanf(line, "%31[^,],%u,%llu,%llu,%llu,%lf,%llu", r->pred, &r->ahead,
				 &r->receives, &r->predictions, &r->hits, &r->ns, &r->bytes);
		CU_ASSERT_EQUAL(got, 7);
		if (got == 7) {
			CU_ASSERT(r->hits <= r->predictions);
			CU_ASSERT(r->predictions <= r->receives);
			CU_ASSERT(r->bytes > 0);
			n++;
		}
	}
	return n;
}

static const struct row *find(const struct row *rows, int n, const char *pred, unsigned ahead)
{
	for (int i = 0; i < n; i++)
		if (strcmp(rows[i].pred, pred) == 0 && rows[i].ahead == ahead)
			return &rows[i];
	CU_FAIL_FATAL("row missing");
	return NULL;
}

static void hybrid_is_best(const struct row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		const struct row *h = find(rows, n, "hybrid", rows[i].ahead);
		CU_ASSERT(h->hits >= rows[i].hits);
	}
}

static int setup(void)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_help(void)
{
	static char out[8192];
	CU_ASSERT_EQUAL(run("--help", out, sizeof(out)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "usage: pp_predict --trace FILE"));
	CU_ASSERT_EQUAL(run("", out, sizeof(out)), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "--trace FILE or --synth PATTERN is required"));
	CU_ASSERT_EQUAL(run("--synth nope", out, sizeof(out)), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown pattern 'nope'"));
	CU_ASSERT_EQUAL(run("--trace /dev/null --pred nope", out, sizeof(out)), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown predictor 'nope'"));
	CU_ASSERT_EQUAL(run("--trace /dev/null --ahead 0", out, sizeof(out)), 2);
	CU_ASSERT_EQUAL(run("--trace /dev/null --key size", out, sizeof(out)), 2);
	CU_ASSERT_EQUAL(run("--trace /nonexistent.csv", out, sizeof(out)), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "/nonexistent.csv"));
}

static void test_malformed(void)
{
	static char out[8192];
	char path[256], args[512];
	snprintf(path, sizeof(path), "%s/bad.csv", dir);
	FILE *f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("# receives\nsrc,tag,bytes\n1,2,three\n", f);
	fclose(f);
	snprintf(args, sizeof(args), "--trace '%s'", path);
	CU_ASSERT_EQUAL(run(args, out, sizeof(out)), 1);
	char want[300];
	snprintf(want, sizeof(want), "%s:3: bad bytes 'three'", path);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
}

static void test_short_cycles(void)
{
	static char out[16384];
	char args[512];
	struct row rows[MAX_ROWS];
	snprintf(args, sizeof(args), "--synth cycle --seed 3 -o '%s/cycle.csv'", dir);
	CU_ASSERT_EQUAL_FATAL(run(args, out, sizeof(out)), 0);
	snprintf(args, sizeof(args), "--csv --trace '%s/cycle.csv'", dir);
	CU_ASSERT_EQUAL_FATAL(run(args, out, sizeof(out)), 0);
	int n = parse_csv(out, rows);
	CU_ASSERT_EQUAL_FATAL(n, 14); /* 7 predictors at +1 and +10 */
	static const char *const cycles[] = {"single-cycle", "tag-cycle", "tag-bettercycle"};
	for (size_t i = 0; i < 3; i++) {
		const struct row *r = find(rows, n, cycles[i], 1);
		CU_ASSERT((double)r->hits / (double)r->receives > 0.9);
	}
	const struct row *tag = find(rows, n, "tag", 1);
	CU_ASSERT((double)tag->hits / (double)tag->receives < 0.5); /* "not good" */
	hybrid_is_best(rows, n);
}

/* The same trace with every number written 0x hexadecimal (as a tool that
 * prints call sites as addresses would) replays to the same counts. */
static void test_hex_trace(void)
{
	static char out[16384], out_hex[16384];
	char args[512], path[256], path_hex[256], line[512];
	struct row rows[MAX_ROWS], rows_hex[MAX_ROWS];
	snprintf(path, sizeof(path), "%s/dec.csv", dir);
	snprintf(path_hex, sizeof(path_hex), "%s/hex.csv", dir);
	snprintf(args, sizeof(args), "--synth noisy --seed 5 -o '%s'", path);
	CU_ASSERT_EQUAL_FATAL(run(args, out, sizeof(out)), 0);
	FILE *in = fopen(path, "r"), *o = fopen(path_hex, "w");
	CU_ASSERT_FATAL(in && o);
	int rows_in = 0, header = 0;
	while (fgets(line, sizeof(line), in)) {
		if (line[0] == '#' || !header) { /* comments, then the header */
			header |= line[0] != '#';
			if (header)
				CU_ASSERT_STRING_EQUAL(line, "src,tag,bytes,buf,site,comm\n");
			fputs(line, o);
			continue;
		}
		long long src, tag, comm;
		unsigned long long bytes, buf, site;
		char sitebuf[32] = "";
		int got = sscanf(line, "%lld,%lld,%llu,0x%llx,%31[^,],%lld", &src, &tag, &bytes,
				 &buf, sitebuf, &comm);
		CU_ASSERT_EQUAL_FATAL(got, 6);
		site = strtoull(sitebuf, NULL, 10);
		fprintf(o, "%s0x%llx,%s0X%llX,0x%llx,%llx,0x%llx,%s0x%llx\n", src < 0 ? "-" : "",
			(unsigned long long)(src < 0 ? -src : src), tag < 0 ? "-" : "",
			(unsigned long long)(tag < 0 ? -tag : tag), bytes, buf, site,
			comm < 0 ? "-" : "", (unsigned long long)(comm < 0 ? -comm : comm));
		rows_in++;
	}
	fclose(in);
	fclose(o);
	CU_ASSERT(rows_in > 100);
	snprintf(args, sizeof(args), "--csv --trace '%s' --key envelope", path);
	CU_ASSERT_EQUAL_FATAL(run(args, out, sizeof(out)), 0);
	snprintf(args, sizeof(args), "--csv --trace '%s' --key envelope", path_hex);
	CU_ASSERT_EQUAL_FATAL(run(args, out_hex, sizeof(out_hex)), 0);
	int n = parse_csv(out, rows), m = parse_csv(out_hex, rows_hex);
	CU_ASSERT_EQUAL_FATAL(n, 14);
	CU_ASSERT_EQUAL_FATAL(m, n);
	for (int i = 0; i < n; i++) {
		CU_ASSERT_STRING_EQUAL(rows[i].pred, rows_hex[i].pred);
		CU_ASSERT_EQUAL(rows[i].receives, rows_hex[i].receives);
		CU_ASSERT_EQUAL(rows[i].predictions, rows_hex[i].predictions);
		CU_ASSERT_EQUAL(rows[i].hits, rows_hex[i].hits);
	}
}

static void test_lu(void)
{
	static char out[16384];
	char args[512];
	struct row rows[MAX_ROWS];
	snprintf(args, sizeof(args), "--synth lu -o '%s/lu.csv'", dir);
	CU_ASSERT_EQUAL_FATAL(run(args, out, sizeof(out)), 0);
	snprintf(args, sizeof(args),
		 "--csv --trace '%s/lu.csv' --key buf-size-src --min-bytes 8192 "
		 "--pred graph,dpd,hybrid",
		 dir);
	CU_ASSERT_EQUAL_FATAL(run(args, out, sizeof(out)), 0);
	int n = parse_csv(out, rows);
	CU_ASSERT_EQUAL_FATAL(n, 6);
	const struct row *g = find(rows, n, "graph", 10), *d = find(rows, n, "dpd", 10);
	CU_ASSERT(d->hits > g->hits);
	CU_ASSERT((double)d->hits / (double)d->receives > 0.8);
	CU_ASSERT_EQUAL(g->hits, 0);
	hybrid_is_best(rows, n);
}

static CU_TestInfo tests[] = {
    {"help and usage errors", test_help},  {"malformed trace line", test_malformed},
    {"short cycles", test_short_cycles},   {"lu-like period 126", test_lu},
    {"hexadecimal trace", test_hex_trace}, CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"predict_cli", setup, teardown, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

PP_CU_MAIN(suites)
