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
 * Prints "mpi_check: N checks passed" on rank 0, or every failure, and exits 1. Built with mpicc by
 * the test script.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, checks, fails;

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
	static const int sizes[] = {
	    0,	  1,	7,    80,    760,    1428,    1429,    4096,
	    4097, 8192, 8193, 65536, 100000, 1 << 20, 4 << 20, (16 << 20) + 3};
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
	static const int sz[] = {0, 8, 1000, 1429, 9000, 70000, 300000};
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

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: run 2 ranks or more\n");
		MPI_Finalize();
		return 2;
	}
	bytes();
	storm();
	wildcards();
	probes();
	others();
	collectives();
	communicators();
	int all = 0;
	MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0 && !all)
		printf("mpi_check: %d checks passed\n", checks);
	else if (rank == 0)
		printf("mpi_check: %d checks failed on all ranks; rank 0 made %d\n", all, checks);
	MPI_Finalize();
	return all ? 1 : 0;
}
