/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided MPI between two ranks, every value checked: MPI_Put, MPI_Get,
 * MPI_Accumulate (MPI_SUM, MPI_MAX, MPI_BXOR, MPI_REPLACE), MPI_Get_accumulate,
 * MPI_Fetch_and_op and MPI_Compare_and_swap, under MPI_Win_fence and under
 * passive-target MPI_Win_lock/MPI_Win_unlock (exclusive and shared), on
 * windows made by MPI_Win_allocate and MPI_Win_create, sizes from one int to
 * 1 MiB. With Open MPI's osc rdma over btl ofi and provider pp, every access
 * to the other rank's window is the provider's RMA or atomics. Prints
 * "mpi_osc_check: N checks passed" and exits 0, or names the first failed
 * check and exits 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, checks;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		checks++;                                                                          \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "mpi_osc_check: rank %d: ", rank);                         \
			fprintf(stderr, __VA_ARGS__);                                              \
			fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);                         \
			MPI_Abort(MPI_COMM_WORLD, 1);                                              \
		}                                                                                  \
	} while (0)

static int val(int who, int i, int round)
{
	return who * 1000003 + i * 7 + round;
}

/* Fence epochs: each rank puts into the other's window, then gets it back,
 * then accumulates. */
static void fence_epochs(MPI_Win win, int *base, int n)
{
	int peer = 1 - rank;
	int *src = malloc((size_t)n * sizeof(int)), *back = malloc((size_t)n * sizeof(int));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < n; i++)
			src[i] = val(rank, i, round);
		MPI_Win_fence(0, win);
		MPI_Put(src, n, MPI_INT, peer, 0, n, MPI_INT, win);
		MPI_Win_fence(0, win);
		int bad = -1;
		for (int i = 0; i < n && bad < 0; i++)
			if (base[i] != val(peer, i, round))
				bad = i;
		CHECK(bad < 0, "fence put of %d ints, round %d: element %d is %d, not %d", n, round,
		      bad, bad < 0 ? 0 : base[bad], bad < 0 ? 0 : val(peer, bad, round));
		memset(back, 0, (size_t)n * sizeof(int));
		MPI_Get(back, n, MPI_INT, peer, 0, n, MPI_INT, win);
		MPI_Win_fence(0, win);
		for (int i = 0; i < n && bad < 0; i++)
			if (back[i] != val(rank, i, round))
				bad = i;
		CHECK(bad < 0, "fence get of %d ints, round %d: element %d", n, round, bad);
	}
	/* Accumulate: both ranks add into rank 0's first elements. */
	int m = n < 64 ? n : 64;
	MPI_Win_fence(0, win);
	if (rank == 0)
		for (int i = 0; i < m; i++)
			base[i] = i;
	MPI_Win_fence(0, win);
	for (int i = 0; i < m; i++)
		src[i] = 10 * (rank + 1);
	MPI_Accumulate(src, m, MPI_INT, 0, 0, m, MPI_INT, MPI_SUM, win);
	MPI_Win_fence(0, win);
	if (rank == 0)
		for (int i = 0; i < m; i++)
			CHECK(base[i] == i + 30, "accumulate sum: element %d is %d, not %d", i,
			      base[i], i + 30);
	MPI_Accumulate(src, m, MPI_INT, 0, 0, m, MPI_INT, MPI_MAX, win);
	MPI_Win_fence(0, win);
	if (rank == 0)
		for (int i = 0; i < m; i++)
			CHECK(base[i] == (i + 30 > 20 ? i + 30 : 20), "accumulate max: element %d",
			      i);
	free(src);
	free(back);
}

/* Make what others wrote into the own window visible to loads. */
static void see_own(MPI_Win win)
{
	MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
	MPI_Win_sync(win);
	MPI_Win_unlock(rank, win);
}

/* Passive target: rank 1 works on rank 0's window alone, under locks. */
static void passive(MPI_Win win, int64_t *base, int n)
{
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		int64_t *src = malloc((size_t)n * sizeof(int64_t)),
			*back = malloc((size_t)n * sizeof(int64_t));
		for (int i = 0; i < n; i++)
			src[i] = (int64_t)i * 3 - 5;
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		MPI_Put(src, n, MPI_INT64_T, 0, 0, n, MPI_INT64_T, win);
		MPI_Win_unlock(0, win);
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Get(back, n, MPI_INT64_T, 0, 0, n, MPI_INT64_T, win);
		MPI_Win_unlock(0, win);
		CHECK(memcmp(src, back, (size_t)n * sizeof(int64_t)) == 0,
		      "passive put then get of %d int64", n);

		/* Atomics on element 0. */
		int64_t one = 1, old = -1, zero = 0, seven = 7, res = -1;
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		MPI_Put(&zero, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win);
		MPI_Win_flush(0, win);
		for (int k = 0; k < 10; k++) {
			MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win);
			MPI_Win_flush(0, win);
			CHECK(old == k, "fetch_and_op %d fetched %lld", k, (long long)old);
		}
		MPI_Compare_and_swap(&seven, &zero, &res, MPI_INT64_T, 0, 0, win);
		MPI_Win_flush(0, win);
		CHECK(res == 10, "compare_and_swap (no swap) fetched %lld", (long long)res);
		int64_t ten = 10;
		MPI_Compare_and_swap(&seven, &ten, &res, MPI_INT64_T, 0, 0, win);
		MPI_Win_flush(0, win);
		CHECK(res == 10, "compare_and_swap (swap) fetched %lld", (long long)res);
		MPI_Fetch_and_op(NULL, &old, MPI_INT64_T, 0, 0, MPI_NO_OP, win);
		MPI_Win_flush(0, win);
		CHECK(old == 7, "after the swap the element is %lld", (long long)old);
		int64_t mask = 0x0f, acc = 0;
		MPI_Accumulate(&mask, 1, MPI_INT64_T, 0, 1, 1, MPI_INT64_T, MPI_REPLACE, win);
		MPI_Accumulate(&mask, 1, MPI_INT64_T, 0, 1, 1, MPI_INT64_T, MPI_BXOR, win);
		MPI_Win_flush(0, win);
		MPI_Get_accumulate(&seven, 1, MPI_INT64_T, &acc, 1, MPI_INT64_T, 0, 1, 1,
				   MPI_INT64_T, MPI_SUM, win);
		MPI_Win_unlock(0, win);
		CHECK(acc == 0, "replace then bxor left %lld", (long long)acc);
		free(src);
		free(back);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	see_own(win);
	if (rank == 0) {
		CHECK(base[0] == 7, "rank 0 sees element 0 = %lld, not 7", (long long)base[0]);
		CHECK(base[1] == 7, "rank 0 sees element 1 = %lld, not 7", (long long)base[1]);
		for (int i = 2; i < n; i++)
			CHECK(base[i] == (int64_t)i * 3 - 5, "rank 0's element %d", i);
	}
	/* Both ranks contend for one counter of rank 0 under shared locks. */
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		base[2] = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	int64_t one = 1, old;
	for (int k = 0; k < 100; k++) {
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 2, MPI_SUM, win);
		MPI_Win_unlock(0, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	see_own(win);
	if (rank == 0)
		CHECK(base[2] == 200, "the shared counter is %lld, not 200", (long long)base[2]);
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_osc_check: needs 2 ranks\n");
		MPI_Finalize();
		return 1;
	}
	int sizes[] = {1, 1024, 1 << 18}; /* ints: 4 B, 4 KiB, 1 MiB */
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int n = sizes[s], *base;
		MPI_Win win;
		MPI_Win_allocate((MPI_Aint)n * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
				 MPI_COMM_WORLD, &base, &win);
		memset(base, 0, (size_t)n * sizeof(int));
		fence_epochs(win, base, n);
		MPI_Win_free(&win);
	}
	int n = 4096;
	int64_t *mem = calloc((size_t)n, sizeof(int64_t));
	MPI_Win win;
	MPI_Win_create(mem, (MPI_Aint)n * (MPI_Aint)sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
		       MPI_COMM_WORLD, &win);
	passive(win, mem, n);
	MPI_Win_free(&win);
	free(mem);
	int all = 0;
	MPI_Reduce(&checks, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_osc_check: %d checks passed\n", all);
	MPI_Finalize();
	return 0;
}
