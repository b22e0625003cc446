// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ranks.c - xpmem-scale's ranks mode: for each N, N ranks export their
 * whole address space and attach a window of every other rank, all at
 * once (timed, in rounds of get+attach and detach+release); then, attached,
 * they read each other's windows, and rank 0 times its calls that
 * invalidate attached memory against the same calls on memory nobody
 * attached.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <xpmem.h>

#include "scale.h"

enum metric {
	M_ATT1, M_ATT, M_ATT_CPU, M_DET, M_DET_CPU, M_READ1, M_READ2, M_DN_ATT, M_DN_UN, M_UM_ATT, M_UM_UN, M_MMAP,
	M_DETACH, NMETRICS
};

static const struct {
	const char *csv, *label, *unit;
} minfo[NMETRICS] = {
	[M_ATT1]   = { "attach_all_first", "all-to-all get+attach 1st", "us" },
	[M_ATT]    = { "attach_all", "all-to-all get+attach", "us" },
	[M_ATT_CPU] = { "attach_all_cpu", "  CPU of all ranks", "us" },
	[M_DET]    = { "detach_all", "all-to-all detach+release", "us" },
	[M_DET_CPU] = { "detach_all_cpu", "  CPU of all ranks", "us" },
	[M_READ1]  = { "read1", "all-to-all read 1st", "MiB/s" },
	[M_READ2]  = { "read2", "all-to-all read 2nd", "MiB/s" },
	[M_DN_ATT] = { "dontneed_attached", "MADV_DONTNEED attached", "us" },
	[M_DN_UN]  = { "dontneed_unattached", "MADV_DONTNEED unattached", "us" },
	[M_UM_ATT] = { "munmap_attached", "munmap attached", "us" },
	[M_UM_UN]  = { "munmap_unattached", "munmap unattached", "us" },
	[M_MMAP]   = { "owner_mmap_munmap", "owner mmap+munmap elsewhere", "us" },
	[M_DETACH] = { "detach", "xpmem_detach", "us" },
};


/* Shared by all ranks of one N (MAP_SHARED before the fork). */
struct shared {
	pthread_barrier_t bar;
	int n;
	atomic_int failed;
	xpmem_segid_t segid[MAX_RANKS];
	uintptr_t win[MAX_RANKS];	/* each rank's window */
	size_t window;			/* its size */
	pid_t pid[MAX_RANKS];
	double t_pass[2][2];		/* rank 0: wall time of each pass */
	double cpu[MAX_RANKS];		/* each rank's CPU time of a round */
	double detach[MAX_RANKS];	/* each rank's median detach time */
	double cost[NMETRICS][MAX_REPEATS];	/* rank 0's timings */
};

static void sync_all(struct shared *sh)
{
	pthread_barrier_wait(&sh->bar);
}

/* Whether process @pid is asleep (state S or D in /proc/PID/stat). */
static int asleep(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 1;		/* gone: not in the way either */
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the name may hold anything */
	return !p || p[1] != ' ' || p[2] == 'S' || p[2] == 'D';
}

/*
 * Rank 0, before a timed call: wait (bounded, yielding) until every peer
 * sleeps in the barrier, so that the call is timed alone and not beside
 * N - 1 wake-ups, whose cost would grow with N like the call's own.
 */
static void peers_settle(struct shared *sh)
{
	int p, tries;

	for (p = 1; p < sh->n; p++)
		for (tries = 0; tries < 100000 && !asleep(sh->pid[p]); tries++)
			sched_yield();
}

static void rank_fail(struct shared *sh, int rank, const char *what)
{
	fprintf(stderr, "xpmem-scale: rank %d of %d: %s: %s\n", rank, sh->n,
		what, strerror(errno));
	atomic_store(&sh->failed, 1);
}

/*
 * Get and attach @window of every peer; the addresses go to @att, the
 * access ids to @apid (NULL and -1 for this rank and after a failure).
 */
static int rank_attach(struct shared *sh, int rank, size_t window,
		       char **att, xpmem_apid_t *apid)
{
	int p;

	for (p = 0; p < sh->n; p++) {
		att[p] = NULL;
		apid[p] = -1;
	}
	for (p = 0; p < sh->n; p++) {
		struct xpmem_addr a;

		if (p == rank)
			continue;
		apid[p] = xpmem_get(sh->segid[p], XPMEM_RDWR,
				    XPMEM_PERMIT_MODE, NULL);
		if (apid[p] == -1) {
			rank_fail(sh, rank, "xpmem_get");
			return -1;
		}
		a.apid = apid[p];
		a.offset = sh->win[p];
		att[p] = xpmem_attach(a, window, NULL);
		if (att[p] == (void *)-1) {
			att[p] = NULL;
			rank_fail(sh, rank, "xpmem_attach");
			return -1;
		}
	}
	return 0;
}

/* Detach and release what rank_attach() got; -1 if a call failed. */
static int rank_unattach(struct shared *sh, int rank, char **att,
			 xpmem_apid_t *apid)
{
	int p, rc = 0;

	for (p = 0; p < sh->n; p++) {
		if (att[p] && xpmem_detach(att[p])) {
			rank_fail(sh, rank, "xpmem_detach");
			rc = -1;
		}
		if (apid[p] != -1 && xpmem_release(apid[p])) {
			rank_fail(sh, rank, "xpmem_release");
			rc = -1;
		}
		att[p] = NULL;
		apid[p] = -1;
	}
	return rc;
}

/*
 * One timed step of every rank at once: @step runs between two barriers;
 * rank 0 records the wall time from the first barrier's end to the
 * second's, and the sum of the ranks' CPU times.  Returns -1 (in every
 * rank) if any rank failed.
 */
static int rank_step(struct shared *sh, int rank, int (*step)(struct shared *,
		     int, char **, xpmem_apid_t *), char **att,
		     xpmem_apid_t *apid, double *wall, double *cpu)
{
	double t0, c0;
	int p;

	sync_all(sh);
	t0 = now_us();
	c0 = cpu_us();
	step(sh, rank, att, apid);
	sh->cpu[rank] = cpu_us() - c0;
	sync_all(sh);
	if (rank == 0) {
		*wall = now_us() - t0;
		for (*cpu = 0, p = 0; p < sh->n; p++)
			*cpu += sh->cpu[p];
	}
	return atomic_load(&sh->failed) ? -1 : 0;
}

static int step_attach(struct shared *sh, int rank, char **att,
		       xpmem_apid_t *apid)
{
	return rank_attach(sh, rank, sh->window, att, apid);
}

/*
 * @repeats rounds of: every rank gets and attaches every peer's window,
 * then detaches and releases them all.  The first round's attach is
 * also the first attachment of every owner (its notifier registration).
 */
static int rank_rounds(struct shared *sh, int rank, int repeats)
{
	char *att[MAX_RANKS];
	xpmem_apid_t apid[MAX_RANKS];
	int r;

	for (r = 0; r < repeats; r++) {
		if (rank_step(sh, rank, step_attach, att, apid,
			      &sh->cost[M_ATT][r], &sh->cost[M_ATT_CPU][r]) ||
		    rank_step(sh, rank, rank_unattach, att, apid,
			      &sh->cost[M_DET][r], &sh->cost[M_DET_CPU][r]))
			return -1;
	}
	return 0;
}

/* Read every peer's window; rank 0 records the wall time of the pass. */
static void rank_pass(struct shared *sh, int rank, char **att,
		      size_t window, int pass)
{
	double t0;
	int p;

	sync_all(sh);
	t0 = now_us();
	for (p = 0; p < sh->n; p++)
		if (att[p])
			touch_read(att[p], window);
	sync_all(sh);
	if (rank == 0)
		sh->t_pass[pass][0] = now_us() - t0;
}

/*
 * Rank 0 times @op on the first @len bytes of its window (attached and
 * mapped by every peer) and of @priv (nobody's), @repeats times each.
 * Peers map the range again before every attached call.
 */
enum inval_op { OP_DONTNEED, OP_MUNMAP };

static double do_inval(enum inval_op op, char *p, size_t len)
{
	double t0 = now_us(), t;

	if (op == OP_DONTNEED)
		madvise(p, len, MADV_DONTNEED);
	else
		munmap(p, len);
	t = now_us() - t0;
	if (op == OP_MUNMAP &&
	    mmap(p, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p)
		return -1;
	madvise(p, len, MADV_NOHUGEPAGE);
	touch_write(p, len, 2);
	return t;
}

static void rank_inval(struct shared *sh, int rank, char **att, char *priv,
		       const struct opts *o, enum inval_op op)
{
	enum metric ma = op == OP_DONTNEED ? M_DN_ATT : M_UM_ATT;
	enum metric mu = op == OP_DONTNEED ? M_DN_UN : M_UM_UN;
	int r;

	for (r = 0; r < o->repeats; r++) {
		sync_all(sh);
		if (rank != 0)
			touch_read(att[0], o->inval);
		sync_all(sh);
		if (rank == 0) {
			peers_settle(sh);
			sh->cost[ma][r] = do_inval(op, (char *)sh->win[0],
						   o->inval);
			peers_settle(sh);
			sh->cost[mu][r] = do_inval(op, priv, o->inval);
			if (sh->cost[ma][r] < 0 || sh->cost[mu][r] < 0)
				rank_fail(sh, rank, "mmap after munmap");
		}
	}
	sync_all(sh);
}

static void rank_mmap_elsewhere(struct shared *sh, const struct opts *o)
{
	int r;

	for (r = 0; r < o->repeats; r++) {
		double t0 = now_us();
		void *p = mmap(NULL, o->inval, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED || munmap(p, o->inval)) {
			rank_fail(sh, 0, "mmap/munmap elsewhere");
			return;
		}
		sh->cost[M_MMAP][r] = now_us() - t0;
	}
}

static void rank_detach(struct shared *sh, int rank, char **att)
{
	double t[MAX_RANKS];
	int p, k = 0;

	for (p = 0; p < sh->n; p++) {
		double t0;

		if (!att[p])
			continue;
		t0 = now_us();
		if (xpmem_detach(att[p]))
			rank_fail(sh, rank, "xpmem_detach");
		else
			t[k++] = now_us() - t0;
	}
	sh->detach[rank] = summarize(t, k).med;
}

/* One rank: set up, then every phase in step with the others. */
static int rank_main(struct shared *sh, int rank, const struct opts *o)
{
	char *att[MAX_RANKS];
	xpmem_apid_t apid[MAX_RANKS];
	char *win, *priv;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sh->pid[rank] = getpid();
	win = map_anon(o->window);
	priv = map_anon(o->inval);
	if (!win || !priv) {
		rank_fail(sh, rank, "mmap");
	} else {
		sh->win[rank] = (uintptr_t)win;
		sh->segid[rank] = xpmem_make(NULL, XPMEM_MAXADDR_SIZE,
					     XPMEM_PERMIT_MODE, (void *)0600);
		if (sh->segid[rank] == -1)
			rank_fail(sh, rank, "xpmem_make (whole address space)");
	}
	sync_all(sh);
	if (atomic_load(&sh->failed) || rank_rounds(sh, rank, o->repeats))
		return 1;
	if (rank_attach(sh, rank, o->window, att, apid))
		atomic_store(&sh->failed, 1);
	sync_all(sh);
	if (atomic_load(&sh->failed))
		return 1;
	rank_pass(sh, rank, att, o->window, 0);
	rank_pass(sh, rank, att, o->window, 1);
	rank_inval(sh, rank, att, priv, o, OP_DONTNEED);
	rank_inval(sh, rank, att, priv, o, OP_MUNMAP);
	if (rank == 0)
		rank_mmap_elsewhere(sh, o);
	sync_all(sh);
	rank_detach(sh, rank, att);
	sync_all(sh);
	xpmem_remove(sh->segid[rank]);
	return atomic_load(&sh->failed) ? 1 : 0;
}

/* Run N ranks; fill @res[metric] with the summaries. */
static int run_ranks(int n, const struct opts *o, struct summary *res)
{
	pthread_barrierattr_t ba;
	struct shared *sh;
	pid_t pids[MAX_RANKS];
	double v[MAX_REPEATS], bytes;
	int i, m, bad;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("xpmem-scale: mmap");
		return -1;
	}
	memset(sh, 0, sizeof(*sh));
	sh->n = n;
	sh->window = o->window;
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->bar, &ba, n);
	fflush(NULL);
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("xpmem-scale: fork");
			while (i--)	/* they wait for a rank that never comes */
				kill(pids[i], SIGKILL);
			reap(pids, n, 60);
			munmap(sh, sizeof(*sh));
			return -1;
		}
		if (pids[i] == 0)
			_exit(rank_main(sh, i, o));
	}
	bad = reap(pids, n, 1800);
	if (bad || atomic_load(&sh->failed)) {
		fprintf(stderr, "xpmem-scale: N=%d failed\n", n);
		munmap(sh, sizeof(*sh));
		return -1;
	}
	res[M_ATT1] = (struct summary){ sh->cost[M_ATT][0], sh->cost[M_ATT][0],
					sh->cost[M_ATT][0] };
	for (m = M_ATT; m <= M_DET_CPU; m++) {
		memcpy(v, sh->cost[m], o->repeats * sizeof(double));
		res[m] = summarize(v, o->repeats);
	}
	bytes = (double)n * (n - 1) * o->window;
	for (i = 0; i < 2; i++) {
		double mibps = bytes / MIB / (sh->t_pass[i][0] / 1e6);

		res[M_READ1 + i] = (struct summary){ mibps, mibps, mibps };
	}
	for (m = M_DN_ATT; m <= M_MMAP; m++) {
		memcpy(v, sh->cost[m], o->repeats * sizeof(double));
		res[m] = summarize(v, o->repeats);
	}
	memcpy(v, sh->detach, n * sizeof(double));
	res[M_DETACH] = summarize(v, n);
	munmap(sh, sizeof(*sh));
	return 0;
}

/* Least-squares slope of @y over @x. */
static double slope(const double *x, const double *y, int n)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	int i;

	for (i = 0; i < n; i++) {
		sx += x[i];
		sy += y[i];
		sxx += x[i] * x[i];
		sxy += x[i] * y[i];
	}
	if (n < 2 || n * sxx == sx * sx)
		return __builtin_nan("");
	return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

int ranks_mode(const struct opts *o, FILE *csv)
{
	static struct summary res[MAX_NS][NMETRICS];
	double x[MAX_NS], y[MAX_NS];
	int i, m;

	for (i = 0; i < o->nn; i++) {
		fprintf(stderr, "xpmem-scale: N = %d ranks\n", o->ns[i]);
		if (run_ranks(o->ns[i], o, res[i]))
			return 1;
	}
	printf("== ranks: whole-address-space export, %zu KiB of each peer attached, %zu KiB discarded/unmapped, %d repeats (median) ==\n",
	       o->window / KIB, o->inval / KIB, o->repeats);
	printf("%-30s", "N (ranks)");
	for (i = 0; i < o->nn; i++)
		printf(" %9d", o->ns[i]);
	printf("  unit\n");
	for (m = 0; m < NMETRICS; m++) {
		printf("%-30s", minfo[m].label);
		for (i = 0; i < o->nn; i++)
			printf(" %9.1f", res[i][m].med);
		printf("  %s\n", minfo[m].unit);
		for (i = 0; csv && i < o->nn; i++)
			fprintf(csv, "ranks,%d,%s,%.3f,%.3f,%.3f,%s\n",
				o->ns[i], minfo[m].csv, res[i][m].med,
				res[i][m].min, res[i][m].max, minfo[m].unit);
	}
	for (m = M_DN_ATT; m <= M_UM_ATT; m += 2) {
		double s, r1 = __builtin_nan("");

		for (i = 0; i < o->nn; i++) {
			x[i] = o->ns[i] - 1;
			y[i] = res[i][m].med;
			if (o->ns[i] == 2)
				r1 = res[i][m].med / res[i][m + 1].med;
		}
		s = slope(x, y, o->nn);
		printf("%-30s %9.2f us per attacher; 1 attacher / unattached %.2f\n",
		       minfo[m].label, s, r1);
		if (csv) {
			fprintf(csv, "ranks,0,%s_per_attacher,%.3f,%.3f,%.3f,us\n",
				minfo[m].csv, s, s, s);
			fprintf(csv, "ranks,2,%s_over_unattached,%.3f,%.3f,%.3f,x\n",
				minfo[m].csv, r1, r1, r1);
		}
	}
	return 0;
}
