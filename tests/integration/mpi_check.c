/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An MPI program that checks what an MPI library does over the "pp"
 * libfabric provider (tests/integration/ofi_mpi.sh; 2 ranks or more): every
 * byte of messages from 0 B to 16 MiB both ways, a storm of non-blocking
 * sends and receives of mixed sizes completed out of order, MPI_ANY_SOURCE
 * and MPI_ANY_TAG with the status they fill, MPI_Probe and MPI_Iprobe,
 * MPI_Mprobe and MPI_Mrecv, MPI_Ssend, a message to oneself, truncation
 * reported as MPI_ERR_TRUNCATE, MPI_Cancel of a receive, and collectives (barrier, allreduce,
 * bcast, alltoall, allgather, reduce) on MPI_COMM_WORLD, a duplicate of it and split communicators,
 * with the same tags in flight on two communicators at once (messages must not cross between them).
 * Messages to oneself (issue 30) on MPI_COMM_SELF and to the own rank of MPI_COMM_WORLD: every
 * send mode blocking and not, probe, iprobe, improbe, mprobe, mrecv and imrecv, cancel, 300 long
 * sends before their receives; Alltoallw with MPI_BOTTOM and absolute-address struct types,
 * Alltoallv and Gatherv with derived types. With one rank only these run.
 * Each step has a time limit (alarm): a hang ends the run naming the step.
 * Prints "mpi_check: N checks passed" on rank 0, or every failure, and exits 1. Built with mpicc by
 * the test script.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, checks, fails;

/* The step running: a step still running after STEP_S seconds ends the
 * run, named, with exit status 1. */
#define STEP_S 60
static const char *volatile step = "MPI_Init";

static void step_timeout(int sig)
{
	char b[200];
	int n = snprintf(b, sizeof(b), "rank %d: mpi_check: timed out (%d s) in %s\n", rank, STEP_S,
			 step);
	(void)sig;
	if (n > 0)
		(void)!write(2, b, (size_t)n);
	_exit(1);
}

static void step_start(const char *name)
{
	step = name;
	alarm(STEP_S);
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		checks++;                                                                          \
		if (!(cond)) {                                                                     \
			fails++;                                                                   \
			fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);             \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 8));
}

static size_t mismatch(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 131 + seed * 7 + (i >> 8)))
			return i + 1;
	return 0;
}

/* Rank 0 and rank 1 exchange every size both ways, blocking and not. */
static void bytes(void)
{
	/* 1424 and 8924: one frame's payload at MTU 1500 and 9000 (wire v5's
	 * 76-byte header); one byte more takes two. */
	static const int sizes[] = {0,	  1,	 7,	 80,	  760,	   1424,
				    1425, 4096,	 4097,	 8192,	  8193,	   8924,
				    8925, 65536, 100000, 1 << 20, 4 << 20, (16 << 20) + 3};
	unsigned char *buf = malloc((16 << 20) + 3);
	if (rank > 1)
		goto out;
	int peer = !rank;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int n = sizes[i];
		if (rank == 0) {
			fill(buf, (size_t)n, (unsigned)i);
			MPI_Send(buf, n, MPI_BYTE, peer, 100 + (int)i, MPI_COMM_WORLD);
			memset(buf, 0, (size_t)n);
			MPI_Status st;
			MPI_Recv(buf, n, MPI_BYTE, peer, 200 + (int)i, MPI_COMM_WORLD, &st);
			int got;
			MPI_Get_count(&st, MPI_BYTE, &got);
			CHECK(got == n, "size %d: echo of %d bytes", n, got);
			CHECK(!mismatch(buf, (size_t)n, (unsigned)i + 1), "size %d: echo byte %zu",
			      n, mismatch(buf, (size_t)n, (unsigned)i + 1));
		} else {
			MPI_Request rq;
			MPI_Status st;
			MPI_Irecv(buf, n, MPI_BYTE, peer, 100 + (int)i, MPI_COMM_WORLD, &rq);
			MPI_Wait(&rq, &st);
			CHECK(!mismatch(buf, (size_t)n, (unsigned)i), "size %d: byte %zu", n,
			      mismatch(buf, (size_t)n, (unsigned)i));
			fill(buf, (size_t)n, (unsigned)i + 1);
			MPI_Isend(buf, n, MPI_BYTE, peer, 200 + (int)i, MPI_COMM_WORLD, &rq);
			MPI_Wait(&rq, MPI_STATUS_IGNORE);
		}
	}
out:
	free(buf);
}

/* Ranks 2i and 2i+1 each post 64 receives, then 64 sends of mixed sizes (0 B
 * to 300 000 B), eight of each tag: MPI's order among messages of one source
 * and tag says receive k gets send k, whatever order the requests complete. */
static void storm(void)
{
	enum { N = 64 };
	static const int sz[] = {0, 8, 1000, 1425, 8925, 70000, 300000};
	int peer = rank ^ 1;
	if (peer >= size)
		return;
	unsigned char *rb[N], *sb[N];
	MPI_Request rq[2 * N];
	for (int k = 0; k < N; k++) {
		int n = sz[k % 7];
		rb[k] = malloc((size_t)n + 1);
		sb[k] = malloc((size_t)n + 1);
		memset(rb[k], 0, (size_t)n + 1);
		fill(sb[k], (size_t)n, (unsigned)(1000 * rank + k));
		MPI_Irecv(rb[k], n, MPI_BYTE, peer, k % 8, MPI_COMM_WORLD, &rq[k]);
	}
	for (int k = 0; k < N; k++)
		MPI_Isend(sb[k], sz[k % 7], MPI_BYTE, peer, k % 8, MPI_COMM_WORLD, &rq[N + k]);
	MPI_Status st[2 * N];
	MPI_Waitall(2 * N, rq, st);
	for (int k = 0; k < N; k++) {
		int n = sz[k % 7], got = -1;
		MPI_Get_count(&st[k], MPI_BYTE, &got);
		size_t bad = mismatch(rb[k], (size_t)n, (unsigned)(1000 * peer + k));
		CHECK(got == n && !bad && st[k].MPI_TAG == k % 8,
		      "storm: receive %d: %d of %d bytes, tag %d, byte %zu wrong", k, got, n,
		      st[k].MPI_TAG, bad);
		free(rb[k]);
		free(sb[k]);
	}
}

/* Every other rank sends two messages to rank 0, which takes them with
 * wildcards and checks the status each fills in. */
static void wildcards(void)
{
	int v[2];
	if (rank != 0) {
		v[0] = rank;
		v[1] = 1000 * rank + 7;
		MPI_Send(v, 2, MPI_INT, 0, 30 + rank, MPI_COMM_WORLD);
		MPI_Send(v, 1, MPI_INT, 0, 60 + rank, MPI_COMM_WORLD);
		/* Nothing else may reach rank 0's wildcards before they are done
		 * (rank 1's probes would, with more than two ranks). */
		MPI_Barrier(MPI_COMM_WORLD);
		return;
	}
	int seen[2 * 64] = {0};
	for (int k = 0; k < 2 * (size - 1); k++) {
		MPI_Status st;
		v[0] = v[1] = -1;
		MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		int n, src = st.MPI_SOURCE, tag = st.MPI_TAG;
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(src > 0 && src < size && v[0] == src, "any source: source %d, data %d", src,
		      v[0]);
		CHECK(tag == 30 + src || tag == 60 + src, "any tag: tag %d from %d", tag, src);
		CHECK(n == (tag < 60 ? 2 : 1), "any tag: %d ints with tag %d", n, tag);
		if (tag < 60)
			CHECK(v[1] == 1000 * src + 7, "second int %d", v[1]);
		if (src > 0 && src < 64)
			seen[2 * src + (tag >= 60)]++;
	}
	for (int s = 1; s < size && s < 64; s++)
		CHECK(seen[2 * s] == 1 && seen[2 * s + 1] == 1, "rank %d's messages seen %d, %d", s,
		      seen[2 * s], seen[2 * s + 1]);
	MPI_Barrier(MPI_COMM_WORLD);
}

/* Probe, Iprobe, Mprobe with Mrecv. */
static void probes(void)
{
	if (rank > 1)
		return;
	if (rank == 1) {
		int a[3] = {1, 2, 3}, b[5] = {5, 6, 7, 8, 9};
		static double c[20000];
		for (int i = 0; i < 20000; i++)
			c[i] = i * 0.5;
		MPI_Send(a, 3, MPI_INT, 0, 11, MPI_COMM_WORLD);
		MPI_Send(b, 5, MPI_INT, 0, 12, MPI_COMM_WORLD);
		MPI_Send(c, 20000, MPI_DOUBLE, 0, 13, MPI_COMM_WORLD);
		return;
	}
	MPI_Status st;
	int n, flag = 0;
	MPI_Probe(1, 12, MPI_COMM_WORLD, &st); /* skips tag 11 */
	MPI_Get_count(&st, MPI_INT, &n);
	CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 12 && n == 5, "probe: %d %d %d", st.MPI_SOURCE,
	      st.MPI_TAG, n);
	while (!flag)
		MPI_Iprobe(MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &flag, &st);
	MPI_Get_count(&st, MPI_INT, &n);
	CHECK(st.MPI_TAG == 11 && n == 3, "iprobe: tag %d, %d ints", st.MPI_TAG, n);
	/* Mprobe the long one, then a wildcard receive must not take it. */
	MPI_Message msg;
	MPI_Mprobe(MPI_ANY_SOURCE, 13, MPI_COMM_WORLD, &msg, &st);
	MPI_Get_count(&st, MPI_DOUBLE, &n);
	CHECK(n == 20000, "mprobe: %d doubles", n);
	int x[5] = {0};
	MPI_Recv(x, 5, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
	CHECK(st.MPI_TAG == 11 && x[2] == 3, "after mprobe: tag %d", st.MPI_TAG);
	MPI_Recv(x, 5, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
	CHECK(st.MPI_TAG == 12 && x[4] == 9, "after mprobe: tag %d", st.MPI_TAG);
	double *c = malloc(20000 * sizeof(double));
	MPI_Mrecv(c, 20000, MPI_DOUBLE, &msg, &st);
	int bad = 0;
	for (int i = 0; i < 20000; i++)
		bad += c[i] != i * 0.5;
	CHECK(!bad && st.MPI_TAG == 13, "mrecv: %d wrong, tag %d", bad, st.MPI_TAG);
	free(c);
}

/* Synchronous send, a message to oneself, truncation, a cancelled receive. */
static void others(void)
{
	int v = 42 + rank, w = -1;
	MPI_Status st;
	/* A receive nobody sends to: cancelled, it completes as cancelled and
	 * its buffer is untouched. */
	MPI_Request rq;
	int never = -7, flag = 0;
	MPI_Irecv(&never, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &rq);
	MPI_Cancel(&rq);
	MPI_Wait(&rq, &st);
	MPI_Test_cancelled(&st, &flag);
	CHECK(flag && never == -7, "cancel: cancelled %d, buffer %d", flag, never);
	/* To oneself, through the provider too. */
	MPI_Sendrecv(&v, 1, MPI_INT, rank, 5, &w, 1, MPI_INT, rank, 5, MPI_COMM_WORLD, &st);
	CHECK(w == v && st.MPI_SOURCE == rank, "self: %d from %d", w, st.MPI_SOURCE);
	if (rank > 1)
		return;
	if (rank == 0) {
		MPI_Ssend(&v, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
		int big[100];
		for (int i = 0; i < 100; i++)
			big[i] = i;
		MPI_Send(big, 100, MPI_INT, 1, 7, MPI_COMM_WORLD);
	} else {
		MPI_Recv(&w, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, &st);
		CHECK(w == 42, "ssend: %d", w);
		int small[10];
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		int rc = MPI_Recv(small, 10, MPI_INT, 0, 7, MPI_COMM_WORLD, &st);
		int cls = MPI_SUCCESS;
		MPI_Error_class(rc, &cls);
		CHECK(cls == MPI_ERR_TRUNCATE, "truncation: error class %d", cls);
		CHECK(small[9] == 9, "truncation: the first 10 ints, got %d", small[9]);
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	}
}

static void collectives(void)
{
	for (int i = 0; i < 50; i++)
		MPI_Barrier(MPI_COMM_WORLD);
	long long in[1000], out[1000];
	for (int i = 0; i < 1000; i++)
		in[i] = (long long)rank * i + 1;
	MPI_Allreduce(in, out, 1000, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	long long s = (long long)size * (size - 1) / 2;
	int bad = 0;
	for (int i = 0; i < 1000; i++)
		bad += out[i] != s * i + size;
	CHECK(!bad, "allreduce: %d wrong", bad);
	double d = rank + 0.25, m;
	MPI_Allreduce(&d, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	CHECK(m == size - 1 + 0.25, "allreduce max %f", m);
}

/* Collectives on one communicator; cr and cs: this rank's rank and the size
 * there, root the last rank. */
static void collectives_on(MPI_Comm c, const char *name)
{
	int cr, cs;
	MPI_Comm_rank(c, &cr);
	MPI_Comm_size(c, &cs);
	enum { B = 100000 };
	unsigned char *b = malloc(B);
	if (cr == cs - 1)
		fill(b, B, (unsigned)(50 + cs));
	else
		memset(b, 0, B);
	MPI_Bcast(b, B, MPI_BYTE, cs - 1, c);
	CHECK(!mismatch(b, B, (unsigned)(50 + cs)), "%s: bcast byte %zu", name,
	      mismatch(b, B, (unsigned)(50 + cs)));
	free(b);
	int *s = malloc(2 * (size_t)cs * sizeof(int)), *r = s + cs, bad = 0;
	for (int j = 0; j < cs; j++)
		s[j] = cr * 1000 + j, r[j] = -1;
	MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, c);
	for (int j = 0; j < cs; j++)
		bad += r[j] != j * 1000 + cr;
	CHECK(!bad, "%s: alltoall: %d wrong", name, bad);
	int v = cr * 7 + 1;
	MPI_Allgather(&v, 1, MPI_INT, r, 1, MPI_INT, c);
	bad = 0;
	for (int j = 0; j < cs; j++)
		bad += r[j] != j * 7 + 1;
	CHECK(!bad, "%s: allgather: %d wrong", name, bad);
	free(s);
	int one = cr + 1, sum = -1;
	MPI_Reduce(&one, &sum, 1, MPI_INT, MPI_SUM, 0, c);
	if (cr == 0)
		CHECK(sum == cs * (cs + 1) / 2, "%s: reduce: %d", name, sum);
}

/* MPI_COMM_WORLD, a duplicate, the world split in two by rank parity (ranks
 * reversed in each half) and the world reversed: collectives on each, the
 * same tag on two communicators between the same ranks taken in the other
 * order, and two non-blocking allreduces on two communicators at once. */
static void communicators(void)
{
	MPI_Comm dup, half, rev;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
	MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
	int rr;
	MPI_Comm_rank(rev, &rr);
	CHECK(rr == size - 1 - rank, "reversed communicator: rank %d there", rr);
	collectives_on(MPI_COMM_WORLD, "world");
	collectives_on(dup, "dup");
	collectives_on(half, "half");
	collectives_on(rev, "reversed");
	if (rank < 2) {
		int a = 111, b = 222, x = -1, y = -1;
		MPI_Request q[2];
		if (rank == 0) {
			MPI_Isend(&a, 1, MPI_INT, 1, 9, dup, &q[0]);
			MPI_Isend(&b, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, &q[1]);
		} else {
			MPI_Irecv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &q[0]);
			MPI_Irecv(&x, 1, MPI_INT, 0, MPI_ANY_TAG, dup, &q[1]);
		}
		MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
		if (rank == 1)
			CHECK(x == a && y == b, "tag 9 on two communicators: dup got %d, world %d",
			      x, y);
	}
	long long w = rank + 1, d = 10 * (rank + 1), ws = 0, ds = 0;
	MPI_Request q[2];
	MPI_Iallreduce(&w, &ws, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &q[0]);
	MPI_Iallreduce(&d, &ds, 1, MPI_LONG_LONG, MPI_SUM, dup, &q[1]);
	MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
	long long t = (long long)size * (size + 1) / 2;
	CHECK(ws == t && ds == 10 * t, "iallreduce on two communicators: %lld, %lld", ws, ds);
	MPI_Comm_free(&rev);
	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
}

/* ---- messages to oneself (issue 30) ---- */

/* A message to oneself of n bytes (seed) arrived whole: its bytes and the
 * status (source me, tag, count). */
static void self_got(const char *what, const char *cn, const unsigned char *b, int n, unsigned seed,
		     const MPI_Status *st, int me, int tag)
{
	int got = -1;
	MPI_Get_count(st, MPI_BYTE, &got);
	size_t bad = mismatch(b, (size_t)n, seed);
	CHECK(!bad && got == n && st->MPI_SOURCE == me && st->MPI_TAG == tag,
	      "self %s on %s, %d B: byte %zu wrong, count %d, source %d, tag %d", what, cn, n, bad,
	      got, st->MPI_SOURCE, st->MPI_TAG);
}

/* Every send mode to oneself on c (me: the own rank there), blocking and
 * not, for each size: a receive posted first where a blocking send could
 * otherwise wait for it. */
static void self_modes(MPI_Comm c, const char *cn, int me)
{
	static const int sizes[] = {0, 7, 70000};
	enum { MODES = 8 };
	static const char *names[MODES] = {"send",  "ssend",  "bsend",	"rsend",
					   "isend", "issend", "ibsend", "irsend"};
	int bsz = 70000 + 4 * MPI_BSEND_OVERHEAD;
	void *bb = malloc((size_t)bsz);
	MPI_Buffer_attach(bb, bsz);
	unsigned char *s = malloc(70000), *r = malloc(70000);
	for (int mode = 0; mode < MODES; mode++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			char what[64];
			int n = sizes[i], tag = 40 + mode;
			unsigned seed = (unsigned)(mode * 10 + i);
			snprintf(what, sizeof(what), "self %s %d B", names[mode], n);
			step_start(what);
			fill(s, (size_t)n, seed);
			memset(r, 0, 70000);
			MPI_Request rq, sq;
			MPI_Status st;
			if (mode < 4) { /* blocking: the receive first */
				MPI_Irecv(r, n, MPI_BYTE, me, tag, c, &rq);
				if (mode == 0)
					MPI_Send(s, n, MPI_BYTE, me, tag, c);
				else if (mode == 1)
					MPI_Ssend(s, n, MPI_BYTE, me, tag, c);
				else if (mode == 2)
					MPI_Bsend(s, n, MPI_BYTE, me, tag, c);
				else
					MPI_Rsend(s, n, MPI_BYTE, me, tag, c);
				MPI_Wait(&rq, &st);
			} else { /* the send first, then a blocking receive */
				if (mode == 4)
					MPI_Isend(s, n, MPI_BYTE, me, tag, c, &sq);
				else if (mode == 5)
					MPI_Issend(s, n, MPI_BYTE, me, tag, c, &sq);
				else if (mode == 6)
					MPI_Ibsend(s, n, MPI_BYTE, me, tag, c, &sq);
				else /* ready: the receive must be posted first */
					MPI_Irecv(r, n, MPI_BYTE, me, tag, c, &rq);
				if (mode == 7) {
					MPI_Irsend(s, n, MPI_BYTE, me, tag, c, &sq);
					MPI_Wait(&rq, &st);
				} else {
					MPI_Recv(r, n, MPI_BYTE, me, tag, c, &st);
				}
				MPI_Wait(&sq, MPI_STATUS_IGNORE);
			}
			self_got(names[mode], cn, r, n, seed, &st, me, tag);
			/* A wildcard receive takes a message to oneself too. */
			MPI_Isend(s, n, MPI_BYTE, me, tag, c, &sq);
			MPI_Recv(r, n, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st);
			MPI_Wait(&sq, MPI_STATUS_IGNORE);
			self_got("isend, any source and tag", cn, r, n, seed, &st, me, tag);
		}
	MPI_Buffer_detach(&bb, &bsz);
	free(bb);
	free(s);
	free(r);
}

/* Probe, iprobe, improbe, mprobe with mrecv and imrecv, to oneself. */
static void self_probes(MPI_Comm c, const char *cn, int me)
{
	unsigned char s[3000], r[3000];
	MPI_Request sq, rq;
	MPI_Status st;
	MPI_Message msg;
	int flag = 0, n = 0;
	fill(s, sizeof(s), 61);
	step_start("self probe");
	MPI_Isend(s, 1000, MPI_BYTE, me, 61, c, &sq);
	MPI_Probe(me, 61, c, &st);
	MPI_Get_count(&st, MPI_BYTE, &n);
	CHECK(st.MPI_SOURCE == me && st.MPI_TAG == 61 && n == 1000,
	      "self probe on %s: source %d, tag %d, %d B", cn, st.MPI_SOURCE, st.MPI_TAG, n);
	MPI_Recv(r, 1000, MPI_BYTE, me, 61, c, &st);
	MPI_Wait(&sq, MPI_STATUS_IGNORE);
	self_got("probe, then recv", cn, r, 1000, 61, &st, me, 61);
	step_start("self iprobe");
	MPI_Isend(s, 3000, MPI_BYTE, me, 62, c, &sq);
	for (flag = 0; !flag;)
		MPI_Iprobe(MPI_ANY_SOURCE, 62, c, &flag, &st);
	MPI_Get_count(&st, MPI_BYTE, &n);
	CHECK(st.MPI_SOURCE == me && n == 3000, "self iprobe on %s: source %d, %d B", cn,
	      st.MPI_SOURCE, n);
	MPI_Recv(r, 3000, MPI_BYTE, me, 62, c, &st);
	MPI_Wait(&sq, MPI_STATUS_IGNORE);
	self_got("iprobe, then recv", cn, r, 3000, 61, &st, me, 62);
	/* Mprobe: a wildcard receive posted after it must not take it. */
	step_start("self mprobe, mrecv");
	MPI_Isend(s, 1000, MPI_BYTE, me, 63, c, &sq);
	MPI_Mprobe(me, 63, c, &msg, &st);
	MPI_Get_count(&st, MPI_BYTE, &n);
	CHECK(st.MPI_SOURCE == me && st.MPI_TAG == 63 && n == 1000,
	      "self mprobe on %s: source %d, tag %d, %d B", cn, st.MPI_SOURCE, st.MPI_TAG, n);
	int other = 5, x = -1;
	MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &rq);
	MPI_Mrecv(r, 1000, MPI_BYTE, &msg, &st);
	MPI_Wait(&sq, MPI_STATUS_IGNORE);
	self_got("mprobe, mrecv", cn, r, 1000, 61, &st, me, 63);
	MPI_Send(&other, 1, MPI_INT, me, 64, c);
	MPI_Wait(&rq, &st);
	CHECK(x == 5 && st.MPI_TAG == 64, "self: the wildcard after mprobe took tag %d (%d)",
	      st.MPI_TAG, x);
	step_start("self improbe, imrecv");
	MPI_Isend(s, 3000, MPI_BYTE, me, 65, c, &sq);
	for (flag = 0; !flag;)
		MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &flag, &msg, &st);
	CHECK(st.MPI_SOURCE == me && st.MPI_TAG == 65, "self improbe on %s: source %d, tag %d", cn,
	      st.MPI_SOURCE, st.MPI_TAG);
	MPI_Imrecv(r, 3000, MPI_BYTE, &msg, &rq);
	MPI_Wait(&rq, &st);
	MPI_Wait(&sq, MPI_STATUS_IGNORE);
	self_got("improbe, imrecv", cn, r, 3000, 61, &st, me, 65);
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
	/* Open MPI 4's mtl ofi never acknowledges a synchronous send taken by
	 * MPI_Mrecv (fixed in 5.0): MPI_Issend with Mprobe waits for ever on
	 * any provider, so it is not tried there. */
#else
	step_start("self issend, mprobe, mrecv");
	MPI_Issend(s, 1000, MPI_BYTE, me, 66, c, &sq);
	MPI_Mprobe(me, 66, c, &msg, &st);
	MPI_Mrecv(r, 1000, MPI_BYTE, &msg, &st);
	MPI_Wait(&sq, MPI_STATUS_IGNORE);
	self_got("issend, mprobe, mrecv", cn, r, 1000, 61, &st, me, 66);
#endif
}

/* Cancel of a receive from oneself, and of a send to oneself where the MPI
 * lets it (Open MPI's mtl ofi cannot cancel sends: then the message must
 * arrive as sent). 300 long sends to oneself before their receives. */
static void self_cancel_many(MPI_Comm c, const char *cn, int me)
{
	MPI_Request rq, sq;
	MPI_Status st;
	int never = -7, flag = 0, v = 77, w = -1;
	step_start("self cancel of a receive");
	MPI_Irecv(&never, 1, MPI_INT, me, 70, c, &rq);
	MPI_Cancel(&rq);
	MPI_Wait(&rq, &st);
	MPI_Test_cancelled(&st, &flag);
	CHECK(flag && never == -7, "self cancel of a receive on %s: cancelled %d, buffer %d", cn,
	      flag, never);
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
	/* Open MPI 4's mtl ofi cannot cancel a send, and MPI_Cancel of an
	 * MPI_Isend crashes in it (the request names no communicator): not
	 * tried there. */
	(void)sq;
	(void)v;
	(void)w;
#else
	step_start("self cancel of a send");
	MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
	MPI_Isend(&v, 1, MPI_INT, me, 71, c, &sq);
	int rc = MPI_Cancel(&sq);
	MPI_Wait(&sq, &st);
	flag = 0;
	if (rc == MPI_SUCCESS)
		MPI_Test_cancelled(&st, &flag);
	MPI_Comm_set_errhandler(c, MPI_ERRORS_ARE_FATAL);
	if (!flag) {
		MPI_Recv(&w, 1, MPI_INT, me, 71, c, &st);
		CHECK(w == 77 && st.MPI_SOURCE == me, "self send not cancelled on %s: %d from %d",
		      cn, w, st.MPI_SOURCE);
	} else {
		MPI_Iprobe(me, 71, c, &flag, &st);
		CHECK(!flag, "self send cancelled on %s, yet its message arrived", cn);
	}
#endif
	/* More long sends than the MPI needs to complete any of them. */
	step_start("self 300 long isends before their receives");
	enum { N = 300, LEN = 70000 };
	unsigned char *s = malloc((size_t)N * LEN), *r = calloc(N, LEN);
	MPI_Request *q = malloc(2 * N * sizeof(*q));
	for (int i = 0; i < N; i++) {
		fill(s + (size_t)i * LEN, LEN, (unsigned)i);
		MPI_Isend(s + (size_t)i * LEN, LEN, MPI_BYTE, me, 1000 + i, c, &q[i]);
	}
	for (int i = N - 1; i >= 0; i--)
		MPI_Irecv(r + (size_t)i * LEN, LEN, MPI_BYTE, me, 1000 + i, c, &q[N + i]);
	MPI_Waitall(2 * N, q, MPI_STATUSES_IGNORE);
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += mismatch(r + (size_t)i * LEN, LEN, (unsigned)i) != 0;
	CHECK(!bad, "self 300 long isends on %s: %d messages wrong", cn, bad);
	free(q);
	free(s);
	free(r);
}

static void self_all(void)
{
	self_modes(MPI_COMM_SELF, "MPI_COMM_SELF", 0);
	self_modes(MPI_COMM_WORLD, "MPI_COMM_WORLD", rank);
	self_probes(MPI_COMM_SELF, "MPI_COMM_SELF", 0);
	self_probes(MPI_COMM_WORLD, "MPI_COMM_WORLD", rank);
	self_cancel_many(MPI_COMM_SELF, "MPI_COMM_SELF", 0);
	self_cancel_many(MPI_COMM_WORLD, "MPI_COMM_WORLD", rank);
	step_start("self: barrier after");
	MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- collectives with MPI_BOTTOM and derived datatypes ---- */

/* Block j of this rank's send (3 + j ints at stride 2, a vector) and of its
 * receive (3 + rank ints from rank j, contiguous), as struct types at
 * absolute addresses. Alltoallw with MPI_BOTTOM, then Alltoallv and
 * Gatherv. */
static void derived(void)
{
	step_start("alltoallw with MPI_BOTTOM");
	int n = size, *sb = malloc((size_t)n * 64 * sizeof(int)),
	    *rb = malloc((size_t)n * 64 * sizeof(int));
	MPI_Datatype *st = malloc(2 * (size_t)n * sizeof(*st)), *rt = st + n, vec;
	int *cnt = calloc(4 * (size_t)n, sizeof(int)), *zero = cnt + n, *rc = cnt + 2 * n,
	    *dis = cnt + 3 * n;
	for (int i = 0; i < n * 64; i++)
		sb[i] = rank * 100000 + i, rb[i] = -1;
	for (int j = 0; j < n; j++) {
		int k = 3 + j;
		MPI_Aint a;
		MPI_Type_vector(k, 1, 2, MPI_INT, &vec);
		MPI_Get_address(sb + 64 * j, &a);
		int one = 1;
		MPI_Type_create_struct(1, &one, &a, &vec, &st[j]);
		MPI_Type_commit(&st[j]);
		MPI_Type_free(&vec);
		int m = 3 + rank;
		MPI_Get_address(rb + 64 * j, &a);
		MPI_Type_create_struct(1, &m, &a, (MPI_Datatype[]){MPI_INT}, &rt[j]);
		MPI_Type_commit(&rt[j]);
		cnt[j] = 1;
	}
	MPI_Alltoallw(MPI_BOTTOM, cnt, zero, st, MPI_BOTTOM, cnt, zero, rt, MPI_COMM_WORLD);
	int bad = 0;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < 3 + rank; i++) /* from rank j: its block for us */
			bad += rb[64 * j + i] != j * 100000 + 64 * rank + 2 * i;
	CHECK(!bad, "alltoallw with MPI_BOTTOM: %d ints wrong", bad);
	for (int j = 0; j < n; j++) {
		MPI_Type_free(&st[j]);
		MPI_Type_free(&rt[j]);
	}
	/* Alltoallv: 1 + j ints to rank j at displacement 64 j, received at
	 * displacements 64 j. */
	step_start("alltoallv");
	for (int j = 0; j < n; j++)
		cnt[j] = 1 + j, rc[j] = 1 + rank, dis[j] = 64 * j;
	for (int i = 0; i < n * 64; i++)
		rb[i] = -1;
	MPI_Alltoallv(sb, cnt, dis, MPI_INT, rb, rc, dis, MPI_INT, MPI_COMM_WORLD);
	bad = 0;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < 1 + rank; i++)
			bad += rb[64 * j + i] != j * 100000 + 64 * rank + i;
	CHECK(!bad, "alltoallv: %d ints wrong", bad);
	/* Gatherv to the last rank: 2 + rank ints at stride 3 (a vector), into
	 * displacements 64 j. */
	step_start("gatherv of a vector type");
	int root = n - 1;
	MPI_Type_vector(2 + rank, 1, 3, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	for (int j = 0; j < n; j++)
		rc[j] = 2 + j;
	for (int i = 0; i < n * 64; i++)
		rb[i] = -1;
	MPI_Gatherv(sb, 1, vec, rb, rc, dis, MPI_INT, root, MPI_COMM_WORLD);
	MPI_Type_free(&vec);
	if (rank == root) {
		bad = 0;
		for (int j = 0; j < n; j++)
			for (int i = 0; i < 2 + j; i++)
				bad += rb[64 * j + i] != j * 100000 + 3 * i;
		CHECK(!bad, "gatherv of a vector type: %d ints wrong", bad);
	}
	free(cnt);
	free(st);
	free(sb);
	free(rb);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	signal(SIGALRM, step_timeout);
	self_all();
	derived();
	if (size > 1) { /* one rank: the messages to oneself alone */
		step_start("bytes");
		bytes();
		step_start("storm");
		storm();
		step_start("wildcards");
		wildcards();
		step_start("probes");
		probes();
		step_start("others");
		others();
		step_start("collectives");
		collectives();
		step_start("communicators");
		communicators();
	}
	step_start("the final allreduce");
	int all = 0;
	MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0 && !all)
		printf("mpi_check: %d checks passed\n", checks);
	else if (rank == 0)
		printf("mpi_check: %d checks failed on all ranks; rank 0 made %d\n", all, checks);
	MPI_Finalize();
	return all ? 1 : 0;
}
