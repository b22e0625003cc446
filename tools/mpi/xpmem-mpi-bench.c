// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xpmem-mpi-bench - what MPI transfers between two ranks cost, over
 * whatever the MPI library picks (with Open MPI's pml ucx and
 * libucx0-xpmem preloaded: UCX's xpmem transport):
 *
 *   pingpong  MPI_Send/MPI_Recv ping-pong; usec is half a round trip
 *   stream    a window of MPI_Isend into pre-posted MPI_Irecv, then an
 *             acknowledgement; usec is the time per message
 *   put, get  MPI_Put / MPI_Get into / from an MPI_Win_allocate window
 *             of the other rank, each in its own passive-target epoch
 *             (MPI_Win_lock ... MPI_Win_unlock); usec is per epoch
 *
 * for every power of two from 8 B to 4 MiB (-m changes the top).  Every
 * byte of every transfer, warm-up included, is checked by the rank that
 * receives it against a pattern that changes with each transfer; the
 * checks and fills are outside the timed sections.  Rank 0 prints a table
 * on stdout and, with -o, writes a CSV (test,bytes,iterations,usec,MBps);
 * MB/s is 10^6 bytes per second.
 *
 *   mpirun -np 2 xpmem-mpi-bench [-m MAX] [-n ITERS] [-o FILE.csv]
 */
#define _POSIX_C_SOURCE 200809L	/* getopt */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIN_SIZE	8
#define DEF_MAX		(4UL << 20)
#define STREAM_BYTES	(8UL << 20)	/* a stream window holds at most this */
#define MAX_WINDOW	64
#define WARMUP		2

enum { TAG_DATA = 1, TAG_READY, TAG_ACK };

struct opts {
	size_t max;		/* -m: largest transfer */
	int iters;		/* -n: iterations per size, 0: by size */
	const char *csv;	/* -o, or NULL */
};

struct ctx {
	int rank;
	MPI_Comm comm;
	unsigned char *a, *b;	/* send and receive buffers */
	unsigned char *wbase;	/* this rank's MPI window */
	MPI_Win win;
	unsigned long long checked;	/* bytes this rank checked */
};

struct result {
	const char *test;
	size_t size;
	int iters;
	double secs;	/* timed total */
	double ops;	/* transfers timed (messages or epochs) */
};

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: mpirun -np 2 %s [-m MAX] [-n ITERS] [-o FILE.csv]\n"
		"  -m MAX    largest transfer in bytes (K and M suffixes; default 4M)\n"
		"  -n ITERS  timed iterations for every size (default: by size)\n"
		"  -o FILE   also write the results as CSV to FILE\n", prog);
}

static int parse_size(const char *arg, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 10);

	if (end == arg)
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || v < MIN_SIZE || v > (1ULL << 30))
		return -1;
	*out = (size_t)v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	o->max = DEF_MAX;
	o->iters = 0;
	o->csv = NULL;
	while ((c = getopt(argc, argv, "m:n:o:h")) != -1) {
		switch (c) {
		case 'm':
			if (parse_size(optarg, &o->max))
				return -1;
			break;
		case 'n':
			o->iters = atoi(optarg);
			if (o->iters < 1)
				return -1;
			break;
		case 'o':
			o->csv = optarg;
			break;
		default:
			return -1;
		}
	}
	return optind == argc ? 0 : -1;
}

/* The byte at offset i of transfer seed: every byte changes with the seed. */
static unsigned char pattern(size_t i, unsigned int seed)
{
	return (unsigned char)(seed * 151u + i + (i >> 8) * 31u + (i >> 16) * 7u);
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(i, seed);
}

static void check(struct ctx *c, const unsigned char *p, size_t n,
		  unsigned int seed, const char *test)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != pattern(i, seed)) {
			fprintf(stderr, "xpmem-mpi-bench: rank %d: %s, %zu bytes: byte %zu is 0x%02x, expected 0x%02x\n",
				c->rank, test, n, i, p[i], pattern(i, seed));
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	c->checked += n;
}

/* Timed iterations for n bytes a round (both ranks compute the same). */
static int iters_for(const struct opts *o, size_t n)
{
	size_t it = (64UL << 20) / n;

	if (o->iters)
		return o->iters;
	return it < 20 ? 20 : it > 1000 ? 1000 : (int)it;
}

static int window_for(size_t n)
{
	size_t w = STREAM_BYTES / n;

	return w < 1 ? 1 : w > MAX_WINDOW ? MAX_WINDOW : (int)w;
}

/* A different seed for every transfer of a run. */
static unsigned int seed_of(int test, size_t n, int i)
{
	return (unsigned int)test * 7919u + (unsigned int)__builtin_ctzl(n) * 104729u +
	       (unsigned int)(i + WARMUP);
}

static double pingpong(struct ctx *c, size_t n, int iters)
{
	double t = 0, t0;
	int cnt = (int)n;

	for (int i = -WARMUP; i < iters; i++) {
		unsigned int seed = seed_of(0, n, i);

		if (c->rank == 0) {
			fill(c->a, n, seed);
			t0 = MPI_Wtime();
			MPI_Send(c->a, cnt, MPI_BYTE, 1, TAG_DATA, c->comm);
			MPI_Recv(c->b, cnt, MPI_BYTE, 1, TAG_DATA, c->comm, MPI_STATUS_IGNORE);
			if (i >= 0)
				t += MPI_Wtime() - t0;
			check(c, c->b, n, seed, "pingpong (echo)");
		} else {
			MPI_Recv(c->b, cnt, MPI_BYTE, 0, TAG_DATA, c->comm, MPI_STATUS_IGNORE);
			MPI_Send(c->b, cnt, MPI_BYTE, 0, TAG_DATA, c->comm);
			check(c, c->b, n, seed, "pingpong");
		}
	}
	return t;
}

/* Rank 1 of stream: post the window, say ready, wait, acknowledge, check. */
static void stream_recv(struct ctx *c, size_t n, int win, unsigned int seed)
{
	MPI_Request req[MAX_WINDOW];

	for (int w = 0; w < win; w++)
		MPI_Irecv(c->b + (size_t)w * n, (int)n, MPI_BYTE, 0, TAG_DATA, c->comm, &req[w]);
	MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, c->comm);
	MPI_Waitall(win, req, MPI_STATUSES_IGNORE);
	MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, c->comm);
	for (int w = 0; w < win; w++)
		check(c, c->b + (size_t)w * n, n, seed + (unsigned int)w * 65537u, "stream");
}

static double stream(struct ctx *c, size_t n, int win, int iters)
{
	MPI_Request req[MAX_WINDOW];
	double t = 0, t0;

	for (int i = -WARMUP; i < iters; i++) {
		unsigned int seed = seed_of(1, n, i);

		if (c->rank == 1) {
			stream_recv(c, n, win, seed);
			continue;
		}
		for (int w = 0; w < win; w++)
			fill(c->a + (size_t)w * n, n, seed + (unsigned int)w * 65537u);
		MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_READY, c->comm, MPI_STATUS_IGNORE);
		t0 = MPI_Wtime();
		for (int w = 0; w < win; w++)
			MPI_Isend(c->a + (size_t)w * n, (int)n, MPI_BYTE, 1, TAG_DATA, c->comm, &req[w]);
		MPI_Waitall(win, req, MPI_STATUSES_IGNORE);
		MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, c->comm, MPI_STATUS_IGNORE);
		if (i >= 0)
			t += MPI_Wtime() - t0;
	}
	return t;
}

/* Rank 0 puts into rank 1's window; rank 1 checks it in an epoch of its own. */
static double put(struct ctx *c, size_t n, int iters)
{
	double t = 0, t0;
	int cnt = (int)n;

	for (int i = -WARMUP; i < iters; i++) {
		unsigned int seed = seed_of(2, n, i);

		if (c->rank == 0) {
			fill(c->a, n, seed);
			t0 = MPI_Wtime();
			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->win);
			MPI_Put(c->a, cnt, MPI_BYTE, 1, 0, cnt, MPI_BYTE, c->win);
			MPI_Win_unlock(1, c->win);
			if (i >= 0)
				t += MPI_Wtime() - t0;
		}
		MPI_Barrier(c->comm);
		if (c->rank == 1) {
			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->win);
			check(c, c->wbase, n, seed, "put");
			MPI_Win_unlock(1, c->win);
		}
		MPI_Barrier(c->comm);
	}
	return t;
}

/* Rank 1 fills its window in an epoch of its own; rank 0 gets and checks. */
static double get(struct ctx *c, size_t n, int iters)
{
	double t = 0, t0;
	int cnt = (int)n;

	for (int i = -WARMUP; i < iters; i++) {
		unsigned int seed = seed_of(3, n, i);

		if (c->rank == 1) {
			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->win);
			fill(c->wbase, n, seed);
			MPI_Win_unlock(1, c->win);
		}
		MPI_Barrier(c->comm);
		if (c->rank == 0) {
			t0 = MPI_Wtime();
			MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, c->win);
			MPI_Get(c->a, cnt, MPI_BYTE, 1, 0, cnt, MPI_BYTE, c->win);
			MPI_Win_unlock(1, c->win);
			if (i >= 0)
				t += MPI_Wtime() - t0;
			check(c, c->a, n, seed, "get");
		}
		MPI_Barrier(c->comm);
	}
	return t;
}

static void print_row(const struct result *r, FILE *csv)
{
	double usec = r->secs * 1e6 / r->ops;
	double mbps = (double)r->size * r->ops / r->secs / 1e6;

	printf("%-9s %9zu %6d %12.2f %11.1f\n", r->test, r->size, r->iters, usec, mbps);
	fflush(stdout);
	if (csv)
		fprintf(csv, "%s,%zu,%d,%.3f,%.1f\n", r->test, r->size, r->iters, usec, mbps);
}

/* Every test for every size; rank 0 prints the rows as they come. */
static void run_all(struct ctx *c, const struct opts *o, FILE *csv)
{
	static const char *const names[] = { "pingpong", "stream", "put", "get" };

	for (int test = 0; test < 4; test++) {
		for (size_t n = MIN_SIZE; n <= o->max; n *= 2) {
			int win = test == 1 ? window_for(n) : 1;
			struct result r = { names[test], n, iters_for(o, n * (size_t)win), 0, 0 };

			switch (test) {
			case 0:
				r.secs = pingpong(c, n, r.iters) / 2;
				r.ops = r.iters;
				break;
			case 1:
				r.secs = stream(c, n, win, r.iters);
				r.ops = (double)r.iters * win;
				break;
			case 2:
				r.secs = put(c, n, r.iters);
				r.ops = r.iters;
				break;
			default:
				r.secs = get(c, n, r.iters);
				r.ops = r.iters;
			}
			if (c->rank == 0)
				print_row(&r, csv);
		}
	}
}

/* The header: the MPI library and where the two ranks run. */
static void print_header(struct ctx *c)
{
	char lib[MPI_MAX_LIBRARY_VERSION_STRING], name[2][MPI_MAX_PROCESSOR_NAME] = { "" };
	int len;

	MPI_Get_library_version(lib, &len);
	MPI_Get_processor_name(name[c->rank], &len);
	MPI_Gather(c->rank ? name[1] : MPI_IN_PLACE, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, name,
		   MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, c->comm);
	if (c->rank)
		return;
	lib[strcspn(lib, "\n")] = '\0';
	printf("# xpmem-mpi-bench: %s\n# ranks on %s and %s%s\n", lib, name[0], name[1],
	       strcmp(name[0], name[1]) ? " (two nodes: no shared memory between them)" : "");
	printf("%-9s %9s %6s %12s %11s\n", "test", "bytes", "iters", "usec", "MB/s");
}

static int setup(struct ctx *c, const struct opts *o)
{
	size_t sbuf = o->max > STREAM_BYTES ? o->max : STREAM_BYTES;

	c->a = malloc(sbuf);
	c->b = malloc(sbuf);
	if (!c->a || !c->b)
		return -1;
	memset(c->a, 0, sbuf);
	memset(c->b, 0, sbuf);
	MPI_Win_allocate((MPI_Aint)o->max, 1, MPI_INFO_NULL, c->comm, &c->wbase, &c->win);
	memset(c->wbase, 0, o->max);
	return 0;
}

/* Rank 0's CSV file (opened before the run so that a bad path fails early). */
static FILE *open_csv(const struct ctx *c, const struct opts *o)
{
	FILE *f;

	if (c->rank || !o->csv)
		return NULL;
	f = fopen(o->csv, "w");
	if (!f) {
		perror(o->csv);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	fprintf(f, "test,bytes,iterations,usec,MBps\n");
	return f;
}

int main(int argc, char **argv)
{
	struct ctx c = { .comm = MPI_COMM_WORLD };
	unsigned long long total = 0;
	struct opts o;
	FILE *csv;
	int size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(c.comm, &c.rank);
	MPI_Comm_size(c.comm, &size);
	if (parse_opts(argc, argv, &o) || size != 2) {
		if (c.rank == 0) {
			if (size != 2)
				fprintf(stderr, "xpmem-mpi-bench: needs exactly 2 ranks, not %d\n", size);
			usage(argv[0]);
		}
		MPI_Finalize();
		return 2;
	}
	if (setup(&c, &o)) {
		fprintf(stderr, "xpmem-mpi-bench: rank %d: out of memory\n", c.rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	csv = open_csv(&c, &o);
	print_header(&c);
	run_all(&c, &o, csv);
	MPI_Reduce(&c.checked, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, c.comm);
	if (c.rank == 0)
		printf("# every transfer checked: %llu bytes\n", total);
	if (csv && fclose(csv)) {
		perror(o.csv);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Win_free(&c.win);
	free(c.a);
	free(c.b);
	MPI_Finalize();
	return 0;
}
