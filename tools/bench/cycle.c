// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cycle.c - xpmem-bench -c: what a registration-cache miss costs.  An MPI
 * runtime that caches attachments (UCX's registration cache) pays, on
 * each miss, one attach of a window of the peer's buffer, the first
 * touch of what it copies and, when the entry is evicted, one detach.
 *
 * For each kind of owner memory and each repeat, this process (the
 * attacher) forks a new owner, which maps -v more pages apart (an MPI
 * process has many mappings), allocates and fills its buffer (at least
 * 64 MiB), exports it and sends the segid through a pipe.  The attacher takes one permit and measures:
 *   - the first attach of the new owner (a window of the largest size),
 *     which is where a module may set up its per-owner state;
 *   - for each size B, CYCLES cycles of: attach B bytes at the next
 *     offset of the buffer, touch one byte of every page (read, or write
 *     with -w), detach; per cycle the attach, touch and detach times;
 *   - one attach of 64 MiB, a touch of every page, and its detach.
 * Then it releases the permit and the owner removes its segment and
 * exits.  Only the classic calls are used (xpmem_make, xpmem_get,
 * xpmem_attach, xpmem_detach, xpmem_release, xpmem_remove), so this mode
 * also runs linked against another implementation's libxpmem
 * (xpmem-bench-classic, Makefile).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

enum cmetric { C_CYCLE, C_ATTACH, C_TOUCH, C_DETACH, NCM };

static const char *const cm_csv[NCM] = {
	"miss_cycle", "miss_attach", "miss_touch", "miss_detach",
};
static const char *const cm_label[NCM] = {
	"attach+touch+detach", "  attach", "  touch", "  detach",
};

/* The single attachments' metrics, after the cycles' */
enum smetric { S_FIRST, S_ATT64, S_TOUCH64, S_DET64, NSM };

static const char *const sm_csv[NSM] = {
	"first_attach", "single_attach", "single_touch", "single_detach",
};

/* What one kind's repeats found: v[..][rep], in microseconds. */
struct cycle_res {
	double cyc[MAX_SIZES][NCM][MAX_REPEATS];
	double one[NSM][MAX_REPEATS];
};

/* The largest window. */
static size_t cycle_big(const struct run *run)
{
	size_t big = 0;
	int si;

	for (si = 0; si < run->nsizes; si++)
		if (run->sizes[si] > big)
			big = run->sizes[si];
	return big;
}

/* The owner's buffer: every window of every cycle fits in it. */
static size_t cycle_pool(const struct cycle_opts *co)
{
	size_t pool = TARGET_SIZE;
	int si;

	for (si = 0; si < co->run->nsizes; si++)
		if (co->run->sizes[si] * CYCLES > pool)
			pool = co->run->sizes[si] * CYCLES;
	return pool;
}

/*
 * @n more mappings of one page in the owner, every other one read-only
 * so that none merge: an MPI process has hundreds or thousands.
 */
static int owner_vmas(int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (mmap(NULL, PAGE, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			return odie("owner mappings (-v)");
	return 0;
}

/* The owner's buffer of @kind: MAP_FAILED on an error. */
static char *owner_buffer(int kind, size_t pool)
{
	char *buf;

	if (kind == K_THP) {
		buf = map_aligned(pool, MAP_PRIVATE | MAP_ANONYMOUS, -1);
		if (buf != MAP_FAILED)
			madvise(buf, pool, MADV_HUGEPAGE);
	} else {
		buf = mmap(NULL, pool, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf != MAP_FAILED)
			madvise(buf, pool, MADV_NOHUGEPAGE);
	}
	return buf;
}

/*
 * The owner, in a child: its mappings (-v) and its memory of @kind,
 * filled and exported, the segid sent on @out; then it waits for the
 * attacher's word on @in (or its end), removes the segment and exits.
 */
static int cycle_owner(const struct cycle_opts *co, int kind, size_t pool,
		       int in, int out)
{
	xpmem_segid_t segid = -1;
	char *buf;
	char c;

	buf = owner_vmas(co->owner_vmas) ? MAP_FAILED : owner_buffer(kind, pool);
	if (buf == MAP_FAILED) {
		odie("owner memory");
	} else {
		memset(buf, PATTERN, pool);
		segid = xpmem_make(buf, pool, XPMEM_PERMIT_MODE, (void *)0600);
		if (segid == -1)
			odie("xpmem_make");
	}
	if (full_write(out, &segid, sizeof(segid)) || segid == -1)
		return 1;
	(void)!read(in, &c, 1);
	return xpmem_remove(segid) ? odie("xpmem_remove") : 0;
}

/* One byte of every page of [@p, @p + @len): read (summed) or written. */
static __attribute__((noinline)) unsigned int touch(char *p, size_t len,
						    int write)
{
	volatile char *q = p;
	unsigned int s = 0;
	size_t i;

	for (i = 0; i < len; i += PAGE) {
		if (write)
			q[i] = PATTERN;
		else
			s += (unsigned char)q[i];
	}
	return s;
}

/*
 * Attach @len bytes at segment offset @off, touch them, detach; the three
 * times into @t (us, [C_ATTACH..C_DETACH]).  0, or 1 with a message.
 */
static int miss(xpmem_apid_t apid, size_t off, size_t len, int write,
		double *t)
{
	struct xpmem_addr addr = { .apid = apid, .offset = off };
	double t0, t1, t2;
	unsigned int s;
	char *m;

	t0 = now_ns();
	m = xpmem_attach(addr, len, NULL);
	t1 = now_ns();
	if (m == (void *)-1)
		return afail("xpmem_attach");
	s = touch(m, len, write);
	t2 = now_ns();
	if (xpmem_detach(m))
		return afail("xpmem_detach");
	t[C_DETACH] = (now_ns() - t2) / 1e3;
	t[C_ATTACH] = (t1 - t0) / 1e3;
	t[C_TOUCH] = (t2 - t1) / 1e3;
	if (!write && s != (unsigned int)PATTERN * ((len + PAGE - 1) / PAGE)) {
		fprintf(stderr, "xpmem-bench: attacher: read other bytes than the owner wrote\n");
		return 1;
	}
	return 0;
}

/* Repeat @rep's measurements through permit @apid into @r. */
static int cycle_measure(const struct cycle_opts *co, xpmem_apid_t apid,
			 size_t pool, int rep, struct cycle_res *r)
{
	const struct run *run = co->run;
	size_t big = cycle_big(run), off = 0;
	double t[NCM];
	int si, c, m;

	if (miss(apid, 0, big, co->write, t))
		return 1;
	r->one[S_FIRST][rep] = t[C_ATTACH];
	for (si = 0; si < run->nsizes; si++) {
		size_t b = run->sizes[si];
		double sum[NCM] = { 0 };

		for (c = 0; c < CYCLES; c++) {
			off = (off + b) % (pool - b + 1) / PAGE * PAGE;
			if (miss(apid, off, b, co->write, t))
				return 1;
			for (m = C_ATTACH; m < NCM; m++)
				sum[m] += t[m];
		}
		sum[C_CYCLE] = sum[C_ATTACH] + sum[C_TOUCH] + sum[C_DETACH];
		for (m = 0; m < NCM; m++)
			r->cyc[si][m][rep] = sum[m] / CYCLES;
	}
	if (miss(apid, 0, TARGET_SIZE, co->write, t))
		return 1;
	r->one[S_ATT64][rep] = t[C_ATTACH];
	r->one[S_TOUCH64][rep] = t[C_TOUCH];
	r->one[S_DET64][rep] = t[C_DETACH];
	return 0;
}

/* One repeat with a new owner of @kind: 0, or 1 with a message. */
static int cycle_repeat(const struct cycle_opts *co, int kind, int rep,
			struct cycle_res *r)
{
	size_t pool = cycle_pool(co);
	int to_owner[2], to_me[2], status, err = 1;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	pid_t pid;

	if (pipe(to_owner) || pipe(to_me))
		return odie("pipe");
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return odie("fork");
	if (pid == 0) {
		close(to_owner[1]);
		close(to_me[0]);
		_exit(cycle_owner(co, kind, pool, to_owner[0], to_me[1]));
	}
	close(to_owner[0]);
	close(to_me[1]);
	if (!full_read(to_me[0], &segid, sizeof(segid)) && segid != -1) {
		apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
		if (apid == -1)
			afail("xpmem_get");
		else
			err = cycle_measure(co, apid, pool, rep, r) |
			      (xpmem_release(apid) ? afail("xpmem_release") : 0);
	}
	close(to_owner[1]);	/* the owner's signal to end */
	close(to_me[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		err = 1;
	return err;
}

/* Row @m of the table: per size the median and the spread, in us. */
static void cycle_row(const struct run *run, const struct cycle_res *r,
		      int m)
{
	double med, min, max, spread;
	char num[32];
	int si;

	printf("%-22s", cm_label[m]);
	for (si = 0; si < run->nsizes; si++) {
		if (!summarize(r->cyc[si][m], run->repeats, &med, &min, &max)) {
			printf(" %12s", "-");
			continue;
		}
		fmt_num(num, sizeof(num), med);
		spread = med > 0 ? (max - min) * 100 / med : 0;
		printf(" %7s %3.0f%%", num, spread > 999 ? 999 : spread);
	}
	printf("  us\n");
}

/* A single attachment's line: median (min..max) of @v, in us. */
static void cycle_single(const char *what, const double *v, int repeats)
{
	char a[32], b[32], c[32];
	double med, min, max;

	if (!summarize(v, repeats, &med, &min, &max))
		return;
	fmt_num(a, sizeof(a), med);
	fmt_num(b, sizeof(b), min);
	fmt_num(c, sizeof(c), max);
	printf("%-40s %9s us  (%s..%s)\n", what, a, b, c);
}

/* The table of one kind. */
static void cycle_table(const struct cycle_opts *co, int kind,
			const struct cycle_res *r)
{
	const struct run *run = co->run;
	char lbl[24], what[64];
	int si, m;

	printf("\n== miss cycles, %s owner pages (%s touch of one byte a page,\n"
	       "   %d cycles a repeat, each at the next window of the buffer)\n",
	       kind_name[kind], co->write ? "write" : "read", CYCLES);
	printf("%-22s", "window");
	for (si = 0; si < run->nsizes; si++)
		printf(" %12s", size_label(run->sizes[si], lbl, sizeof(lbl)));
	printf("  unit\n");
	for (m = 0; m < NCM; m++)
		cycle_row(run, r, m);
	snprintf(what, sizeof(what), "first attach of a new owner (%s)",
		 size_label(cycle_big(run), lbl, sizeof(lbl)));
	cycle_single(what, r->one[S_FIRST], run->repeats);
	cycle_single("single attach of 64M", r->one[S_ATT64], run->repeats);
	cycle_single("  its touch", r->one[S_TOUCH64], run->repeats);
	cycle_single("  its detach (after the touch)", r->one[S_DET64],
		     run->repeats);
}

/* The CSV rows of one kind (kind,size,metric,median,min,max,unit). */
static void cycle_csv(const struct cycle_opts *co, int kind,
		      const struct cycle_res *r, FILE *f)
{
	const struct run *run = co->run;
	size_t one_size[NSM] = { cycle_big(run), TARGET_SIZE,
				 TARGET_SIZE, TARGET_SIZE };
	double med, min, max;
	int si, m;

	for (si = 0; si < run->nsizes; si++)
		for (m = 0; m < NCM; m++)
			if (summarize(r->cyc[si][m], run->repeats, &med, &min,
				      &max))
				fprintf(f, "%s,%zu,%s,%.6g,%.6g,%.6g,us\n",
					kind_name[kind], run->sizes[si],
					cm_csv[m], med, min, max);
	for (m = 0; m < NSM; m++)
		if (summarize(r->one[m], run->repeats, &med, &min, &max))
			fprintf(f, "%s,%zu,%s,%.6g,%.6g,%.6g,us\n",
				kind_name[kind], one_size[m], sm_csv[m], med,
				min, max);
}

/**
 * cycle_run - the -c mode: every kind of @co, table on stdout, CSV to
 * @csv (if not NULL); progress on stderr.  Returns 0, or 1 after an error.
 */
int cycle_run(const struct cycle_opts *co, FILE *csv)
{
	const struct run *run = co->run;
	static struct cycle_res r;
	int ki, rep, err = 0;

	printf("xpmem-bench -c: registration-cache miss cycles, %d repeats, owner buffer %zu MiB,\n"
	       "%d more owner mappings (-v)\n"
	       "Wall-clock timings (under QEMU TCG compare only within one run); each cell:\n"
	       "the median of the repeats (a new owner each), then the spread (max - min).\n",
	       run->repeats, cycle_pool(co) / MIB, co->owner_vmas);
	if (csv)
		fprintf(csv, "kind,size,metric,median,min,max,unit\n");
	for (ki = 0; ki < run->nkinds && !err; ki++) {
		int kind = run->kinds[ki];

		fprintf(stderr, "xpmem-bench: -c %s ...", kind_name[kind]);
		fflush(stderr);
		for (rep = 0; rep < run->repeats && !err; rep++)
			err = cycle_repeat(co, kind, rep, &r);
		fprintf(stderr, " %s\n", err ? "FAILED" : "done");
		if (err)
			break;
		cycle_table(co, kind, &r);
		if (csv)
			cycle_csv(co, kind, &r, csv);
	}
	fflush(stdout);
	if (csv && (fflush(csv) || ferror(csv)))
		err = 1;
	return err;
}
