// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xpmem-scale - the costs of xpmem that grow with the size of a job, as
 * MPI uses it: N ranks, each exporting its whole address space and
 * attaching a window of every other rank (classic API).  Companion of
 * xpmem-bench; man/xpmem-scale.1 describes every number.
 *
 * Ranks mode (default), for each N of -n:
 *   - all-to-all first and second read pass over the peers' windows
 *     (aggregate MiB/s, all ranks at once);
 *   - rank 0's MADV_DONTNEED and munmap of a range that its N-1 peers
 *     have attached and mapped, against the same call on a range of its
 *     own that nobody attached (us per call);
 *   - rank 0's mmap+munmap of fresh memory elsewhere (us per pair);
 *   - xpmem_detach() of one attachment (us, median over ranks).
 * The last lines give the growth of the attached calls per attacher (the
 * least-squares slope over N) and the one-attacher cost over the
 * unattached one.
 *
 * Churn mode (-c SECONDS): two processes attach each other's buffer
 * read-write through whole-address-space segments; in each, one thread
 * writes the peer's buffer page by page while another discards pieces of
 * its own buffer (MADV_DONTNEED) and, in the "mutual" variant, maps and
 * unmaps memory elsewhere.  Reports both sides' passes (progress) and the
 * module's fault and retry counters.
 *
 * Output: a table on stdout and, with -o, a CSV in xpmem-bench's format
 * (kind,size,metric,median,min,max,unit; kind "ranks" with size = N, or
 * "churn-mutual"/"churn-plain" with size = seconds).  Under emulation
 * (QEMU TCG) only ratios inside one run mean anything.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xpmem.h>

#define PAGE		4096UL
#define KIB		(1UL << 10)
#define MIB		(1UL << 20)
#define MAX_RANKS	64
#define MAX_NS		16
#define MAX_REPEATS	1000
#define STATS_DIR	"/sys/class/misc/xpmem/stats/"

/* ---- metrics ------------------------------------------------------------ */

enum metric {
	M_READ1, M_READ2, M_DN_ATT, M_DN_UN, M_UM_ATT, M_UM_UN, M_MMAP,
	M_DETACH, NMETRICS
};

static const struct {
	const char *csv, *label, *unit;
} minfo[NMETRICS] = {
	[M_READ1]  = { "read1", "all-to-all read 1st", "MiB/s" },
	[M_READ2]  = { "read2", "all-to-all read 2nd", "MiB/s" },
	[M_DN_ATT] = { "dontneed_attached", "MADV_DONTNEED attached", "us" },
	[M_DN_UN]  = { "dontneed_unattached", "MADV_DONTNEED unattached", "us" },
	[M_UM_ATT] = { "munmap_attached", "munmap attached", "us" },
	[M_UM_UN]  = { "munmap_unattached", "munmap unattached", "us" },
	[M_MMAP]   = { "owner_mmap_munmap", "owner mmap+munmap elsewhere", "us" },
	[M_DETACH] = { "detach", "xpmem_detach", "us" },
};

struct summary {
	double med, min, max;
};

struct opts {
	int ns[MAX_NS], nn;
	size_t window;		/* bytes of each peer attached */
	size_t inval;		/* bytes discarded or unmapped */
	int repeats;
	int churn_secs;		/* 0: ranks mode */
	const char *csv;
};

/* ---- helpers ------------------------------------------------------------ */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static struct summary summarize(double *v, int n)
{
	struct summary s = { __builtin_nan(""), __builtin_nan(""),
			     __builtin_nan("") };

	if (n <= 0)
		return s;
	qsort(v, n, sizeof(*v), cmp_double);
	s.min = v[0];
	s.max = v[n - 1];
	s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return s;
}

static long stat_read(const char *name)
{
	char path[128], buf[64];
	FILE *f;
	long v = -1;

	snprintf(path, sizeof(path), STATS_DIR "%s", name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

static int touch_write(char *p, size_t len, char v)
{
	size_t i;

	for (i = 0; i < len; i += PAGE)
		p[i] = v;
	return 0;
}

static uint64_t touch_read(const volatile char *p, size_t len)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < len; i += 64)
		sum += p[i];
	return sum;
}

/*
 * Wait for @n children; those still running after @secs seconds (a rank
 * stuck on a peer that failed) are killed.  Return: 0 if all exited 0.
 */
static int reap(pid_t *pids, int n, int secs)
{
	double deadline = now_us() + secs * 1e6;
	int left = 0, bad = 0, i, st;

	for (i = 0; i < n; i++)
		left += pids[i] > 0;
	while (left) {
		for (i = 0; i < n; i++) {
			pid_t r;

			if (pids[i] <= 0)
				continue;
			r = waitpid(pids[i], &st, WNOHANG);
			if (r == 0)
				continue;
			if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
				bad = 1;
			pids[i] = 0;
			left--;
		}
		if (left && now_us() > deadline) {
			fprintf(stderr, "xpmem-scale: %d process(es) still running after %d s: killed\n",
				left, secs);
			for (i = 0; i < n; i++)
				if (pids[i] > 0)
					kill(pids[i], SIGKILL);
			deadline = now_us() + 3600e6;
			bad = 1;
		}
		if (left)
			usleep(10000);
	}
	return bad;
}

/* Private anonymous 4 KiB pages, populated. */
static char *map_anon(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	touch_write(p, len, 1);
	return p;
}

/* ---- ranks mode --------------------------------------------------------- */

/* Shared by all ranks of one N (MAP_SHARED before the fork). */
struct shared {
	pthread_barrier_t bar;
	int n;
	atomic_int failed;
	xpmem_segid_t segid[MAX_RANKS];
	uintptr_t win[MAX_RANKS];	/* each rank's window */
	pid_t pid[MAX_RANKS];
	double t_pass[2][2];		/* rank 0: wall time of each pass */
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

/* Attach @sh->window of every peer; the addresses go to @att. */
static int rank_attach(struct shared *sh, int rank, size_t window,
		       char **att)
{
	int p;

	for (p = 0; p < sh->n; p++) {
		struct xpmem_addr a;

		att[p] = NULL;
		if (p == rank)
			continue;
		a.apid = xpmem_get(sh->segid[p], XPMEM_RDWR,
				   XPMEM_PERMIT_MODE, NULL);
		if (a.apid == -1) {
			rank_fail(sh, rank, "xpmem_get");
			return -1;
		}
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
	if (atomic_load(&sh->failed) || rank_attach(sh, rank, o->window, att))
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

static int ranks_mode(const struct opts *o, FILE *csv)
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

/* ---- churn mode --------------------------------------------------------- */

#define CHURN_BUF	(8UL << 20)
#define CHURN_PIECE	(64UL << 10)

struct churn_shared {
	pthread_barrier_t bar;
	atomic_int stop;
	atomic_int failed;
	xpmem_segid_t segid[2];
	uintptr_t buf[2];
	unsigned long passes[2];	/* write passes over the peer */
	unsigned long discards[2];	/* MADV_DONTNEED of own pieces */
	unsigned long cycles[2];	/* mmap+munmap elsewhere */
};

struct churn_side {
	struct churn_shared *sh;
	int me;
	int mutual;
	char *own, *peer;
};

static void *churn_writer(void *arg)
{
	struct churn_side *s = arg;
	unsigned long v = 0;

	while (!atomic_load(&s->sh->stop)) {
		size_t i;

		for (i = 0; i < CHURN_BUF && !atomic_load(&s->sh->stop);
		     i += PAGE)
			s->peer[i] = (char)++v;
		s->sh->passes[s->me]++;
	}
	return NULL;
}

/* Discard pieces of the own buffer in turn; maps and unmaps elsewhere. */
static void *churn_owner(void *arg)
{
	struct churn_side *s = arg;
	size_t off = 0;

	while (!atomic_load(&s->sh->stop)) {
		madvise(s->own + off, CHURN_PIECE, MADV_DONTNEED);
		s->sh->discards[s->me]++;
		off = (off + CHURN_PIECE) % CHURN_BUF;
		if (s->mutual) {
			void *p = mmap(NULL, CHURN_PIECE, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p != MAP_FAILED) {
				((char *)p)[0] = 1;
				munmap(p, CHURN_PIECE);
				s->sh->cycles[s->me]++;
			}
		}
		usleep(100);
	}
	return NULL;
}

static int churn_side_main(struct churn_shared *sh, int me, int mutual)
{
	struct churn_side s = { .sh = sh, .me = me, .mutual = mutual };
	struct xpmem_addr a;
	pthread_t w, ow;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	s.own = map_anon(CHURN_BUF);
	if (!s.own)
		goto fail;
	sh->buf[me] = (uintptr_t)s.own;
	sh->segid[me] = xpmem_make(NULL, XPMEM_MAXADDR_SIZE, XPMEM_PERMIT_MODE,
				   (void *)0600);
	if (sh->segid[me] == -1)
		goto fail;
	pthread_barrier_wait(&sh->bar);
	a.apid = xpmem_get(sh->segid[!me], XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	if (a.apid == -1)
		goto fail;
	a.offset = sh->buf[!me];
	s.peer = xpmem_attach(a, CHURN_BUF, NULL);
	if (s.peer == (void *)-1)
		goto fail;
	pthread_barrier_wait(&sh->bar);
	if (pthread_create(&w, NULL, churn_writer, &s) ||
	    pthread_create(&ow, NULL, churn_owner, &s))
		goto fail;
	pthread_join(w, NULL);
	pthread_join(ow, NULL);
	pthread_barrier_wait(&sh->bar);	/* the peer is done writing */
	xpmem_detach(s.peer);
	return 0;
fail:
	fprintf(stderr, "xpmem-scale: churn side %d: %s\n", me, strerror(errno));
	atomic_store(&sh->failed, 1);
	atomic_store(&sh->stop, 1);
	return 1;
}

static int churn_run(const struct opts *o, int mutual, FILE *csv)
{
	static const char *const cnt[] = {
		"faults", "fault_retries", "fault_seq_retries",
		"fault_owner_waits",
	};
	const char *name = mutual ? "churn-mutual" : "churn-plain";
	long before[4], after[4], d[4];
	pthread_barrierattr_t ba;
	struct churn_shared *sh;
	pid_t pid[2];
	int i, bad = 0;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	memset(sh, 0, sizeof(*sh));
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->bar, &ba, 2);
	for (i = 0; i < 4; i++)
		before[i] = stat_read(cnt[i]);
	fflush(NULL);
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(churn_side_main(sh, i, mutual));
		if (pid[i] < 0)
			bad = 1;
	}
	if (!bad)
		sleep(o->churn_secs);
	atomic_store(&sh->stop, 1);
	bad |= reap(pid, 2, 60);
	for (i = 0; i < 4; i++) {
		after[i] = stat_read(cnt[i]);
		d[i] = before[i] < 0 || after[i] < 0 ? -1 : after[i] - before[i];
	}
	if (bad || atomic_load(&sh->failed)) {
		fprintf(stderr, "xpmem-scale: %s failed\n", name);
		munmap(sh, sizeof(*sh));
		return 1;
	}
	printf("== %s, %d s: two processes write each other's %lu MiB page by page, discarding 64 KiB of their own every 100 us%s ==\n",
	       name, o->churn_secs, CHURN_BUF / MIB,
	       mutual ? ", mmap+munmap elsewhere" : "");
	printf("passes (A, B)           %lu, %lu\n", sh->passes[0], sh->passes[1]);
	printf("discards (A, B)         %lu, %lu\n", sh->discards[0],
	       sh->discards[1]);
	if (mutual)
		printf("mmap cycles (A, B)      %lu, %lu\n", sh->cycles[0],
		       sh->cycles[1]);
	for (i = 0; i < 4; i++)
		printf("%-23s %ld\n", cnt[i], d[i]);
	/*
	 * A contended owner mmap_lock is waited for (fault_owner_waits) or
	 * makes the access repeat; a seq retry always restarts the fault.
	 */
	if (d[0] > 0)
		printf("per 100 faults          %.1f restarts (%.1f seq, %.1f lock), %.1f owner lock waits\n",
		       100.0 * (d[2] + d[1] - d[3]) / d[0],
		       100.0 * d[2] / d[0], 100.0 * (d[1] - d[3]) / d[0],
		       100.0 * d[3] / d[0]);
	if (csv) {
		for (i = 0; i < 2; i++)
			fprintf(csv, "%s,%d,passes_%c,%lu,%lu,%lu,count\n", name,
				o->churn_secs, 'a' + i, sh->passes[i],
				sh->passes[i], sh->passes[i]);
		for (i = 0; i < 4; i++)
			fprintf(csv, "%s,%d,%s,%ld,%ld,%ld,count\n", name,
				o->churn_secs, cnt[i], d[i], d[i], d[i]);
	}
	munmap(sh, sizeof(*sh));
	return 0;
}

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: xpmem-scale [-n N,N,...] [-w SIZE] [-i SIZE] [-r REPEATS] [-c SECONDS] [-o CSV]\n"
		"  -n  rank counts, 2..%d (default 2,4,8,16)\n"
		"  -w  window of each peer attached (default 4M)\n"
		"  -i  range discarded and unmapped (default 64K; at most the window)\n"
		"  -r  repeats of each timed call (default 7)\n"
		"  -c  churn mode instead: two processes for SECONDS each, mutual and plain\n"
		"  -o  also write a CSV\n", MAX_RANKS);
}

static int parse_size(const char *opt, const char *arg, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (errno || end == arg || *end || !v || v % PAGE || v > (1ULL << 30)) {
		fprintf(stderr, "xpmem-scale: %s '%s': want a multiple of 4K up to 1G (K and M suffixes)\n",
			opt, arg);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_int(const char *opt, const char *arg, int min, int max,
		     int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "xpmem-scale: %s '%s': want a number from %d to %d\n",
			opt, arg, min, max);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int parse_ns(const char *arg, struct opts *o)
{
	char buf[256], *tok, *save;

	if (strlen(arg) >= sizeof(buf)) {
		fprintf(stderr, "xpmem-scale: -n: list too long\n");
		return -1;
	}
	strcpy(buf, arg);
	o->nn = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->nn == MAX_NS) {
			fprintf(stderr, "xpmem-scale: -n: at most %d counts\n",
				MAX_NS);
			return -1;
		}
		if (parse_int("-n", tok, 2, MAX_RANKS, &o->ns[o->nn++]))
			return -1;
	}
	if (!o->nn) {
		fprintf(stderr, "xpmem-scale: -n: empty list\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.ns = { 2, 4, 8, 16 }, .nn = 4, .window = 4 * MIB,
		.inval = 64 * KIB, .repeats = 7,
	};
	FILE *csv = NULL;
	int c, rc;

	while ((c = getopt(argc, argv, "n:w:i:r:c:o:h")) != -1) {
		switch (c) {
		case 'n':
			if (parse_ns(optarg, &o))
				return 2;
			break;
		case 'w':
			if (parse_size("-w", optarg, &o.window))
				return 2;
			break;
		case 'i':
			if (parse_size("-i", optarg, &o.inval))
				return 2;
			break;
		case 'r':
			if (parse_int("-r", optarg, 1, MAX_REPEATS, &o.repeats))
				return 2;
			break;
		case 'c':
			if (parse_int("-c", optarg, 1, 3600, &o.churn_secs))
				return 2;
			break;
		case 'o':
			o.csv = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "xpmem-scale: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if (o.inval > o.window) {
		fprintf(stderr, "xpmem-scale: -i %zu is larger than the window -w %zu\n",
			o.inval, o.window);
		return 2;
	}
	if (o.csv) {
		csv = fopen(o.csv, "we");
		if (!csv) {
			fprintf(stderr, "xpmem-scale: %s: %s\n", o.csv,
				strerror(errno));
			return 1;
		}
		fprintf(csv, "kind,size,metric,median,min,max,unit\n");
	}
	if (o.churn_secs)
		rc = churn_run(&o, 1, csv) | churn_run(&o, 0, csv);
	else
		rc = ranks_mode(&o, csv);
	if (csv && fclose(csv)) {
		fprintf(stderr, "xpmem-scale: %s: %s\n", o.csv, strerror(errno));
		rc = 1;
	}
	return rc;
}
