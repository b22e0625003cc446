// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_stress - adversarial stress of xpmem.ko
 *
 *   fuzz              seeded multi-process ioctl fuzzer with memory operations
 *                     on both sides (ids shared between processes); the
 *                     workers are in stress/fuzz.c
 *   kill_storm        owner/attacher lifecycles SIGKILLed at random points
 *   owner_churn_*     attacher threads fault while the owner munmaps, mremaps,
 *                     mprotects, forks and exits and another thread detaches
 *   fault_vs_owner_mmap   whole-address-space attachment faulted while owner
 *                     threads mmap/munmap: both sides must make progress
 *   mutual_mkwrite    two processes write through RDWR attachments of each
 *                     other's whole address space while mmap/munmap-ing
 *   madv_free_writes  attacher writes into MADV_FREE'd owner memory survive
 *                     MADV_PAGEOUT
 *   fault_injection   failslab + fail_page_alloc on every ioctl path
 *
 * Every test ends by waiting (bounded) for the module's object counters to
 * return to the values read before it.  Runs as root in the test VM with
 * the module loaded; skips without /dev/xpmem.
 *
 * Settings (environment; selftests/vm/run.sh passes XPMEM_STRESS* through):
 *   XPMEM_STRESS            quick | ci (default) | long: picks the defaults
 *   XPMEM_STRESS_SEED       base seed (decimal or 0x...), else random; every
 *                           test prints the value to replay it with
 *   XPMEM_STRESS_ONLY       comma-separated test names: skip the others
 *   XPMEM_STRESS_FUZZ_OPS   fuzz operations in total   (20000/100000/1000000)
 *   XPMEM_STRESS_PROCS      fuzz processes             (4)
 *   XPMEM_STRESS_KILLS      kill-storm lifecycles      (200/1000/10000)
 *   XPMEM_STRESS_SECONDS    length of each concurrency case (6/12/300)
 *   XPMEM_STRESS_WINDOW     progress window in seconds (3/6/30): each side
 *                           of a concurrency case must complete an
 *                           iteration in every window
 *   XPMEM_STRESS_STALL      fuzz stall limit in seconds (120/120/300): the
 *                           fuzz case fails if no worker starts another
 *                           operation for that long (a livelock in the
 *                           kernel), after printing where each worker is
 *   XPMEM_STRESS_FI_ROUNDS  fault-injection rounds per process (100/1000/10000)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"
#include "stress/fuzz.h"
#include "stress/stress.h"

/* Bound on the wait for deferred teardown to bring the counters back. */
#define SETTLE_SECONDS	30

/* ---- settings ----------------------------------------------------------- */

struct stress_params {
	int level;		/* 0 quick, 1 ci, 2 long */
	uint64_t seed;
	long fuzz_ops;
	int procs;
	long kills;
	int seconds;
	int window;
	int stall;
	long fi_rounds;
	const char *only;
};

static struct stress_params P;
static const char *const level_names[] = { "quick", "ci", "long" };

static long env_long(const char *name, long def, long min, long max)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || *end || v < min || v > max) {
		fprintf(stderr, "# %s=%s ignored (want %ld..%ld)\n", name, s,
			min, max);
		return def;
	}
	return v;
}

static void params_init(void)
{
	static int ready;
	const char *m = getenv("XPMEM_STRESS"), *s;
	int l;

	if (ready)
		return;
	ready = 1;
	P.level = 1;
	if (m && !strcmp(m, "quick"))
		P.level = 0;
	else if (m && !strcmp(m, "long"))
		P.level = 2;
	l = P.level;
	P.fuzz_ops = env_long("XPMEM_STRESS_FUZZ_OPS",
			      (long[]){ 20000, 100000, 1000000 }[l], 1, 1L << 40);
	P.procs = env_long("XPMEM_STRESS_PROCS", 4, 2, 16);
	P.kills = env_long("XPMEM_STRESS_KILLS",
			   (long[]){ 200, 1000, 10000 }[l], 1, 1L << 30);
	P.seconds = env_long("XPMEM_STRESS_SECONDS",
			     (int[]){ 6, 12, 300 }[l], 1, 86400);
	P.window = env_long("XPMEM_STRESS_WINDOW",
			    (int[]){ 3, 6, 30 }[l], 1, 3600);
	P.stall = env_long("XPMEM_STRESS_STALL",
			   (int[]){ 120, 120, 300 }[l], 5, 86400);
	P.fi_rounds = env_long("XPMEM_STRESS_FI_ROUNDS",
			       (long[]){ 100, 1000, 10000 }[l], 1, 1L << 30);
	P.only = getenv("XPMEM_STRESS_ONLY");
	s = getenv("XPMEM_STRESS_SEED");
	if (s && *s) {
		P.seed = strtoull(s, NULL, 0);
	} else if (getrandom(&P.seed, sizeof(P.seed), 0) != sizeof(P.seed)) {
		P.seed = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	}
}

/* Per-test harness timeout: generous, scaled with the mode. */
static int tmo(int quick, int ci, int lng)
{
	params_init();
	return P.level == 0 ? quick : P.level == 1 ? ci : lng;
}

static int only_selected(const char *name)
{
	const char *p;
	size_t n = strlen(name);

	if (!P.only || !*P.only)
		return 1;
	for (p = P.only; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return 1;
	}
	return 0;
}

/* One line on stdout, flushed (output goes to a file; children fork). */
static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* ---- object counters ---------------------------------------------------- */

static const char *const counter_names[3] = {
	"segments", "permits", "attachments"
};

static void counters_read(long c[3])
{
	int i;

	for (i = 0; i < 3; i++)
		c[i] = stat_read(counter_names[i]);
}

/*
 * Wait until the counters equal @base.  The last fput of a killed
 * process's files and the module's deferred work may lag behind waitpid();
 * this is the only polling loop in the suite, and it gives up after
 * SETTLE_SECONDS.  Returns 0 or -1 (and @now holds the last values).
 */
static int counters_settle(const long base[3], long now[3], double *waited)
{
	uint64_t t0 = now_ns();

	for (;;) {
		counters_read(now);
		if (now[0] == base[0] && now[1] == base[1] && now[2] == base[2])
			break;
		if (now_ns() - t0 > SETTLE_SECONDS * 1000000000ULL) {
			*waited = (now_ns() - t0) / 1e9;
			return -1;
		}
		poll(NULL, 0, 20);
	}
	*waited = (now_ns() - t0) / 1e9;
	return 0;
}

#define ASSERT_COUNTERS_SETTLE(base) do {				\
	long __now[3];							\
	double __w;							\
	int __r = counters_settle(base, __now, &__w);			\
	if (__r)							\
		TH_LOG("counters after %.1fs: segments %ld (base %ld), " \
		       "permits %ld (base %ld), attachments %ld (base %ld)", \
		       __w, __now[0], (base)[0], __now[1], (base)[1],	\
		       __now[2], (base)[2]);				\
	else if (__w > 1.0)						\
		note("counters back to baseline after %.1fs", __w);	\
	ASSERT_EQ(0, __r);						\
} while (0)

/* ---- processes ---------------------------------------------------------- */

/* SIGKILL and reap every pid in @pids (> 0); how many could not be reaped. */
static int kill_and_reap(pid_t *pids, int n)
{
	int i, st, stuck = 0;

	for (i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	for (i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		if (wait_bounded(pids[i], &st, 30)) {
			note("pid %d cannot be reaped (stuck in the kernel?)",
			     pids[i]);
			stuck++;
		} else {
			char how[64];

			describe_status(st, how, sizeof(how));
			note("child %d: %s", pids[i], how);
		}
		pids[i] = 0;
	}
	return stuck;
}

/* A PROT_NONE reservation of @len bytes aligned to @align. */
static uint8_t *reserve_aligned(size_t len, size_t align)
{
	uint8_t *p = mmap(NULL, len + align, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((uint8_t *)a + len, (uintptr_t)p + align - a);
	return (uint8_t *)a;
}

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(stress)
{
	int fd;
	long base[3];
	uint64_t seed;
};

FIXTURE_SETUP(stress)
{
	params_init();
	self->fd = -1;
	if (!only_selected(_metadata->name))
		SKIP(return, "not in XPMEM_STRESS_ONLY");
	self->fd = xp_open();
	if (self->fd < 0)
		SKIP(return, "no %s (module not loaded)", XPMEM_DEV_PATH);
	counters_read(self->base);
	self->seed = mix64(P.seed ^ mix64((uintptr_t)_metadata->name[0] +
					  strlen(_metadata->name) * 131));
	note("%s: mode %s, XPMEM_STRESS_SEED=0x%" PRIx64
	     " (replay: XPMEM_STRESS=%s XPMEM_STRESS_SEED=0x%" PRIx64
	     " XPMEM_STRESS_ONLY=%s)", _metadata->name, level_names[P.level],
	     P.seed, level_names[P.level], P.seed, _metadata->name);
}

FIXTURE_TEARDOWN(stress)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* ==== 1. fuzz ============================================================ */

/* Operations the fuzz workers have started so far, all together. */
static long fuzz_started(const struct fz_shared *sh, int n)
{
	long done = 0;
	int i;

	for (i = 0; i < n; i++)
		done += sh->procs[i].opi;
	return done;
}

/* Print one line of /proc/@pid/@file (the first), for a stall report. */
static void proc_line(pid_t pid, const char *file)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		note("  %s: %s", file, line);
	}
	fclose(f);
}

/* The kernel stack of @pid, if readable (root), for a stall report. */
static void proc_stack(pid_t pid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stack", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		note("    %s", line);
	}
	fclose(f);
}

TEST_F_TIMEOUT(stress, fuzz, tmo(300, 900, 14400))
{
	struct fz_shared *sh = map_shared(sizeof(*sh));
	uint8_t *arena = reserve_aligned(FZ_ARENA, 512 * PAGE);
	int n = P.procs, i, st, live, lp[2], bad = 0;
	long per = (P.fuzz_ops + n - 1) / n, done, ok = 0;
	pid_t pids[FZ_MAXPROCS] = { 0 };
	uint64_t t0 = now_ns(), last = t0, moved = t0;
	long started = 0;
	int stalled = 0;
	char how[64], line[512];
	struct pollfd pf;

	ASSERT_NE(NULL, sh);
	ASSERT_NE(NULL, arena);
	ASSERT_EQ(0, pipe2(lp, O_CLOEXEC));
	note("fuzz: %d processes x %ld operations, arena %p (16 MiB)", n, per,
	     (void *)arena);
	for (i = 0; i < n; i++) {
		pids[i] = fork_child();
		ASSERT_LE(0, pids[i]);
		if (!pids[i]) {
			close(lp[0]);
			_exit(fz_worker(sh, arena, i, self->seed, per));
		}
	}
	close(lp[1]);
	/*
	 * Progress every 15 s; a worker that dies stops the others, and so
	 * does a stall: no worker starting another operation for P.stall
	 * seconds (every worker stuck in the kernel, e.g. a fault that
	 * repeats forever).
	 */
	note("fuzz: stall limit %d s (XPMEM_STRESS_STALL)", P.stall);
	pf.fd = lp[0];
	pf.events = POLLIN;
	for (live = n; live;) {
		poll(&pf, 1, 1000);
		if (fuzz_started(sh, n) != started) {
			started = fuzz_started(sh, n);
			moved = now_ns();
		} else if (now_ns() - moved > P.stall * 1000000000ULL) {
			TH_LOG("fuzz: no operation started for %d s after %ld: stalled",
			       P.stall, started);
			for (i = 0; i < n; i++) {
				if (pids[i] <= 0)
					continue;
				note("worker %d (pid %d) at op #%" PRId64 " (%s):", i,
				     pids[i], (int64_t)sh->procs[i].opi,
				     fz_names[sh->procs[i].op]);
				proc_line(pids[i], "stat");
				proc_line(pids[i], "wchan");
				proc_stack(pids[i]);
			}
			stalled = 1;
			sh->failed = sh->failed ? sh->failed : 2;
			if (kill_and_reap(pids, n))
				TH_LOG("fuzz: workers that SIGKILL did not end");
			break;
		}
		for (i = 0; i < n; i++) {
			if (pids[i] <= 0 || waitpid(pids[i], &st, WNOHANG) != pids[i])
				continue;
			pids[i] = 0;
			live--;
			if (WIFEXITED(st) && !WEXITSTATUS(st))
				continue;
			describe_status(st, how, sizeof(how));
			TH_LOG("fuzz worker %d: %s at op #%" PRId64 " (%s)%s", i,
			       how, (int64_t)sh->procs[i].opi,
			       fz_names[sh->procs[i].op],
			       sh->crash_addr[i] ? ", unexpected fault address" : "");
			if (sh->crash_addr[i])
				TH_LOG("  fault address 0x%" PRIx64, sh->crash_addr[i]);
			bad++;
			sh->failed = sh->failed ? sh->failed : 2;
		}
		if (now_ns() - last > 15000000000ULL || !live) {
			last = now_ns();
			for (done = 0, i = 0; i < n; i++)
				done += sh->procs[i].opi;
			snprintf(line, sizeof(line), "fuzz: %ld/%ld operations after %.0fs;",
				 done, per * n, (last - t0) / 1e9);
			for (i = 0; i < n && live; i++)
				snprintf(line + strlen(line), sizeof(line) - strlen(line),
					 " w%d:%s", i, pids[i] ? fz_names[sh->procs[i].op] : "done");
			note("%s", line);
		}
	}
	close(lp[0]);
	if (sh->failed == 1)
		TH_LOG("%s", sh->fail);
	for (i = 0; i < FZ_NOPS; i++)
		ok += sh->ok[i];
	line[0] = 0;
	for (i = 0; i < FZ_NOPS; i++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 "%s%s %ld/%ld", i ? ", " : "", fz_names[i], sh->ok[i],
			 sh->ops[i]);
	for (done = 0, i = 0; i < FZ_NOPS; i++)
		done += sh->ops[i];
	note("fuzz: %ld operations in %.0fs, seed 0x%" PRIx64 " (succeeded/issued):",
	     done, (now_ns() - t0) / 1e9, self->seed);
	note("  %s", line);
	line[0] = 0;
	for (i = 0; i < FZ_NOPS; i++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 "%s%s %.1f", i ? ", " : "", fz_names[i], sh->ns[i] / 1e9);
	note("  seconds spent (all processes): %s", line);
	note("  touches %ld (+%ld in fork children): SIGBUS %ld, SIGSEGV %ld; "
	     "invalid requests refused %ld; self/cross-mapping attaches %ld; forks %ld; "
	     "memfd_secret owner memory: %s", sh->touches, sh->child_touches,
	     sh->sigbus, sh->sigsegv, sh->refused, sh->selfmaps, sh->forks,
	     sh->secretmem ? "yes" : "no (unavailable)");
	note("  EXT_ATTACH %ld, EXT_MAKE %ld, EXT_GET %ld (random options); "
	     "EXT_COPY/EXT_POPULATE %ld, %ld of them through io_uring",
	     sh->ext_attaches, sh->ext_makes, sh->ext_gets, sh->ext_copies,
	     sh->uring_cmds);
	ASSERT_EQ(0, stalled) {
		TH_LOG("fuzz stalled after %ld operations", started);
	}
	ASSERT_EQ(0, bad);
	ASSERT_EQ(0, sh->failed);
	ASSERT_EQ(P.fuzz_ops <= per * n ? 1 : 0, 1);
	ASSERT_COUNTERS_SETTLE(self->base);
}


/* ==== 2. kill storm ====================================================== */

/*
 * Lifecycles of an owner and an attacher, each multi-threaded and busy in
 * every ioctl and fault path at once, SIGKILLed at a random point: after a
 * random number (0..12) of completed operations, counted by an eventfd
 * the victim's threads write after each.  Two lanes run concurrently.
 */

#define KS_PAGES	16
#define KS_LANES	2

enum ks_variant {
	KS_OWNER_FIRST, KS_ATTACHER_FIRST, KS_BOTH, KS_OWNER_AT_ONCE,
	KS_SELF, KS_OWNER_EXITS, KS_NVARIANTS
};

static const char *const ks_names[KS_NVARIANTS] = {
	"owner-first", "attacher-first", "both", "owner-at-fork", "self-attach",
	"owner-exits",
};

struct ks_shared {
	long lifecycles[KS_NVARIANTS];
	volatile long done;
	long killed, exited, victims_sigbus;
	int failed;
	char fail[512];
};

/* State of one victim process (its threads share it). */
struct ks_victim {
	struct rng r;
	int fd, efd;
	xpmem_segid_t segid;
	uint8_t *buf;		/* owner: exported memory */
	uint8_t *win;		/* attacher: the fixed attach window */
	xpmem_apid_t apid;
	uint64_t off;
	int whole;
	pthread_mutex_t rlock;
};

static void ks_progress(struct ks_victim *v)
{
	uint64_t one = 1;

	if (write(v->efd, &one, sizeof(one)) < 0)
		_exit(31);
}

static unsigned long ks_rnd(struct ks_victim *v, unsigned long n)
{
	unsigned long x;

	pthread_mutex_lock(&v->rlock);
	x = rnd(&v->r, n);
	pthread_mutex_unlock(&v->rlock);
	return x;
}

/* owner: one change of the exported memory (an invalidation of some kind) */
static void ks_owner_churn(struct ks_victim *v)
{
	unsigned long p = ks_rnd(v, KS_PAGES), n = 1 + ks_rnd(v, KS_PAGES - p);
	void *q;

	switch (ks_rnd(v, 5)) {
	case 0:
		mmap(v->buf + p * PAGE, n * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		v->buf[p * PAGE] = 1;
		break;
	case 1:
		mprotect(v->buf + p * PAGE, n * PAGE, PROT_READ);
		mprotect(v->buf + p * PAGE, n * PAGE, PROT_READ | PROT_WRITE);
		break;
	case 2:
		madvise(v->buf + p * PAGE, n * PAGE, MADV_DONTNEED);
		break;
	case 3:
		q = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q != MAP_FAILED)
			munmap(q, 8 * PAGE);
		break;
	default:
		memset(v->buf + p * PAGE, (int)n, PAGE);
		break;
	}
}

/* owner: make, get, attach, touch, detach, release, remove its own */
static void ks_owner_self(struct ks_victim *v)
{
	xpmem_segid_t seg2;
	xpmem_apid_t apid2;
	void *a;

	if (xp_make(v->fd, v->buf + ks_rnd(v, KS_PAGES / 2) * PAGE,
		    PAGE * (1 + ks_rnd(v, KS_PAGES / 2)), 0600, &seg2))
		return;
	if (!xp_get(v->fd, seg2, XPMEM_RDWR, &apid2)) {
		if (!xp_attach(v->fd, apid2, 0, PAGE, NULL, &a)) {
			/* SIGBUS when the churn made it read-only */
			touch(a, 1, 1);
			if (ks_rnd(v, 2))
				xp_detach(v->fd, a);
		}
		if (ks_rnd(v, 2))
			xp_release(v->fd, apid2);
	}
	xp_remove(v->fd, seg2);
}

/* attacher: fault the window (SIGBUS/SIGSEGV are expected) */
static void ks_fault(struct ks_victim *v)
{
	touch(v->win + ks_rnd(v, KS_PAGES) * PAGE, ks_rnd(v, 2), 1);
}

/* attacher: detach and re-attach the window, or a second permit */
static void ks_reattach(struct ks_victim *v)
{
	xpmem_apid_t apid2;
	void *a;

	if (ks_rnd(v, 2)) {
		xp_detach(v->fd, v->win);
		xp_attach(v->fd, v->apid, v->off, KS_PAGES * PAGE, v->win, &a);
		return;
	}
	if (xp_get(v->fd, v->segid, XPMEM_RDONLY, &apid2))
		return;
	if (!xp_attach(v->fd, apid2, v->off, PAGE * (1 + ks_rnd(v, 4)), NULL,
		       &a)) {
		touch(a, 0, 0);
		if (ks_rnd(v, 2))
			xp_detach(v->fd, a);
	}
	xp_release(v->fd, apid2);
}

/* the second thread of a victim: detaches while the main thread faults */
static void *ks_thread(void *arg)
{
	struct ks_victim *v = arg;

	probe_install();
	for (;;) {
		ks_reattach(v);
		ks_progress(v);
	}
	return NULL;
}

static int ks_start(void *(*fn)(void *), struct ks_victim *v)
{
	pthread_t t;

	return pthread_create(&t, NULL, fn, v);
}

/*
 * The owner: exports, tells the attacher, then changes its memory and
 * makes, attaches and removes segments of its own until killed (or until
 * @exit_after operations: exit_group with the other thread busy).  With
 * @self it is its own attacher: a second thread detaches and re-attaches
 * while the main thread also faults.
 */
static int ks_owner(struct ks_victim *v, int wfd, int self, int exit_after)
{
	void *a;
	long i;

	v->fd = xp_open();
	if (v->fd < 0)
		return 40;
	v->buf = mmap(NULL, KS_PAGES * PAGE, PROT_READ | PROT_WRITE,
		      ks_rnd(v, 2) ? MAP_SHARED | MAP_ANONYMOUS :
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->buf == MAP_FAILED)
		return 41;
	memset(v->buf, 0x5a, KS_PAGES * PAGE);
	v->whole = ks_rnd(v, 2);
	if (xp_make(v->fd, v->whole ? NULL : v->buf,
		    v->whole ? XPMEM_MAXADDR_SIZE : KS_PAGES * PAGE, 0666, &v->segid))
		return 42;
	v->off = v->whole ? (uintptr_t)v->buf : 0;
	if (wfd >= 0) {
		uint64_t msg[2] = { v->segid, v->off };

		/* EPIPE: the attacher was killed already */
		signal(SIGPIPE, SIG_IGN);
		if (write(wfd, msg, sizeof(msg)) != sizeof(msg) && errno != EPIPE)
			return 43;
	}
	probe_install();
	if (self) {
		v->win = reserve_aligned(KS_PAGES * PAGE, PAGE);
		if (!v->win || xp_get(v->fd, v->segid, XPMEM_RDWR, &v->apid) ||
		    xp_attach(v->fd, v->apid, v->off, KS_PAGES * PAGE, v->win,
			      &a))
			return 45;
		if (ks_start(ks_thread, v))
			return 46;
	}
	for (i = 0;; i++) {
		if (exit_after >= 0 && i >= exit_after)
			_exit(0);
		switch (ks_rnd(v, self ? 3 : 2)) {
		case 0:
			ks_owner_churn(v);
			break;
		case 1:
			ks_owner_self(v);
			break;
		default:
			ks_fault(v);
			break;
		}
		ks_progress(v);
	}
}

/* The attacher: the main thread faults, a second one (re)attaches. */
static int ks_attacher(struct ks_victim *v, int rfd)
{
	uint64_t msg[2];
	void *a;

	if (read(rfd, msg, sizeof(msg)) != sizeof(msg))
		return 0;	/* the owner died before it made the segment */
	v->segid = msg[0];
	v->off = msg[1];
	v->fd = xp_open();
	if (v->fd < 0)
		return 50;
	v->win = reserve_aligned(KS_PAGES * PAGE, PAGE);
	if (!v->win)
		return 51;
	if (xp_get(v->fd, v->segid, XPMEM_RDWR, &v->apid) ||
	    xp_attach(v->fd, v->apid, v->off, KS_PAGES * PAGE, v->win, &a))
		return 0;	/* the owner is gone already */
	probe_install();
	if (ks_start(ks_thread, v))
		return 52;
	for (;;) {
		ks_fault(v);
		ks_progress(v);
	}
}

/*
 * Wait until the victim reports @k more operations, or exits, or 30 s
 * pass.  1: progressed, 0: exited, -1: neither in 30 s (stuck?).
 */
static int ks_wait_ops(int efd, pid_t pid, long k)
{
	int pfd = syscall(SYS_pidfd_open, pid, 0), ret = -1;
	uint64_t t0 = now_ns(), cnt;
	struct pollfd p[2] = { { .fd = efd, .events = POLLIN },
			       { .fd = pfd, .events = POLLIN } };
	long got = 0;

	if (!k) {
		if (pfd >= 0)
			close(pfd);
		return 1;
	}
	for (;;) {
		if (poll(p, pfd >= 0 ? 2 : 1, 1000) < 0 && errno != EINTR)
			break;
		if (read(efd, &cnt, sizeof(cnt)) == sizeof(cnt))
			got += cnt;
		if (got >= k) {
			ret = 1;
			break;
		}
		if (pfd >= 0 && p[1].revents) {
			ret = 0;
			break;
		}
		if (now_ns() - t0 > 30000000000ULL)
			break;
	}
	if (pfd >= 0)
		close(pfd);
	return ret;
}

static void __attribute__((format(printf, 2, 3)))
ks_fail(struct ks_shared *sh, const char *fmt, ...)
{
	va_list ap;

	if (__atomic_exchange_n(&sh->failed, 1, __ATOMIC_ACQ_REL))
		return;
	va_start(ap, fmt);
	vsnprintf(sh->fail, sizeof(sh->fail), fmt, ap);
	va_end(ap);
}

/* Reap @pid; SIGKILL or (if @may_exit) exit 0 are expected. */
static int ks_reap(struct ks_shared *sh, pid_t pid, const char *who,
		   int may_exit, long lc, int variant)
{
	char how[64];
	int st;

	if (wait_bounded(pid, &st, 30)) {
		ks_fail(sh, "lifecycle %ld (%s): %s %d not reapable 30 s after "
			"SIGKILL (stuck in the kernel)", lc, ks_names[variant],
			who, pid);
		return -1;
	}
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
		__atomic_fetch_add(&sh->killed, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (WIFEXITED(st) && !WEXITSTATUS(st) && may_exit) {
		__atomic_fetch_add(&sh->exited, 1, __ATOMIC_RELAXED);
		return 0;
	}
	describe_status(st, how, sizeof(how));
	ks_fail(sh, "lifecycle %ld (%s): %s %d ended with %s", lc,
		ks_names[variant], who, pid, how);
	return -1;
}

static pid_t ks_spawn(struct ks_victim *v, int role, int pfd[2], int variant,
		      int exit_after)
{
	pid_t pid = fork_child();

	if (pid)
		return pid;
	crash_addr_slot = NULL;
	pthread_mutex_init(&v->rlock, NULL);
	if (role == 0) {
		close(pfd[0]);
		_exit(ks_owner(v, variant == KS_SELF ? -1 : pfd[1],
			       variant == KS_SELF, exit_after));
	}
	close(pfd[1]);
	_exit(ks_attacher(v, pfd[0]));
}

static void ks_lane(struct ks_shared *sh, int lane, uint64_t seed, long n)
{
	struct rng r;
	long lc;

	rng_init(&r, seed, 1000 + lane);
	for (lc = 0; lc < n && !sh->failed; lc++) {
		int variant = rnd(&r, KS_NVARIANTS), pfd[2], oefd, aefd;
		struct ks_victim v = { 0 };
		pid_t o = 0, a = 0;
		long k = rnd(&r, 13), k2 = rnd(&r, 5);
		int res;

		rng_init(&v.r, rnd64(&r), lc);
		oefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		aefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (oefd < 0 || aefd < 0 || pipe(pfd)) {
			ks_fail(sh, "eventfd/pipe: %s", strerror(errno));
			break;
		}
		v.efd = oefd;
		o = ks_spawn(&v, 0, pfd, variant,
			     variant == KS_OWNER_EXITS ? (int)k : -1);
		if (variant != KS_SELF) {
			v.efd = aefd;
			a = ks_spawn(&v, 1, pfd, variant, -1);
		}
		close(pfd[0]);
		close(pfd[1]);
		if (o < 0 || a < 0) {
			ks_fail(sh, "fork: %s", strerror(errno));
			break;
		}
		switch (variant) {
		case KS_OWNER_FIRST:
		case KS_OWNER_AT_ONCE:
			res = variant == KS_OWNER_AT_ONCE ? 1 :
			      ks_wait_ops(oefd, o, k);
			kill(o, SIGKILL);
			if (res >= 0)
				res = ks_wait_ops(aefd, a, k2);
			kill(a, SIGKILL);
			break;
		case KS_ATTACHER_FIRST:
		case KS_BOTH:
			res = ks_wait_ops(aefd, a, k);
			kill(a, SIGKILL);
			if (res >= 0 && variant == KS_ATTACHER_FIRST)
				res = ks_wait_ops(oefd, o, k2);
			kill(o, SIGKILL);
			break;
		case KS_SELF:
			res = ks_wait_ops(oefd, o, k);
			kill(o, SIGKILL);
			break;
		default:	/* KS_OWNER_EXITS */
			res = ks_wait_ops(oefd, o, k + 5);
			if (res >= 0)
				res = ks_wait_ops(aefd, a, k2);
			kill(o, SIGKILL);
			kill(a, SIGKILL);
			break;
		}
		if (res < 0)
			ks_fail(sh, "lifecycle %ld (%s): no progress in 30 s "
				"(k=%ld)", lc, ks_names[variant], k);
		ks_reap(sh, o, "owner", variant == KS_OWNER_EXITS, lc, variant);
		if (a > 0)
			ks_reap(sh, a, "attacher", 1, lc, variant);
		close(oefd);
		close(aefd);
		__atomic_fetch_add(&sh->lifecycles[variant], 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->done, 1, __ATOMIC_RELAXED);
	}
}

TEST_F_TIMEOUT(stress, kill_storm, tmo(300, 900, 14400))
{
	struct ks_shared *sh = map_shared(sizeof(*sh));
	long per = (P.kills + KS_LANES - 1) / KS_LANES, total = 0;
	pid_t lanes[KS_LANES];
	uint64_t t0 = now_ns();
	char line[256] = "";
	int i, st;

	ASSERT_NE(NULL, sh);
	for (i = 0; i < KS_LANES; i++) {
		lanes[i] = fork_child();
		ASSERT_LE(0, lanes[i]);
		if (!lanes[i]) {
			ks_lane(sh, i, self->seed, per);
			_exit(0);
		}
	}
	for (i = 0; i < KS_LANES; i++) {
		/* progress every 15 s, so a hang shows where it stopped */
		while (wait_bounded(lanes[i], &st, 15))
			note("kill storm: %ld/%ld lifecycles after %.0fs", sh->done,
			     per * KS_LANES, (now_ns() - t0) / 1e9);
		EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
	}
	for (i = 0; i < KS_NVARIANTS; i++) {
		total += sh->lifecycles[i];
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s %ld",
			 i ? ", " : "", ks_names[i], sh->lifecycles[i]);
	}
	note("kill storm: %ld lifecycles in %.0fs (%s); %ld processes "
	     "SIGKILLed, %ld exited first", total, (now_ns() - t0) / 1e9, line,
	     sh->killed, sh->exited);
	if (sh->failed)
		TH_LOG("%s", sh->fail);
	ASSERT_EQ(0, sh->failed);
	ASSERT_GE(total, P.kills);
	ASSERT_COUNTERS_SETTLE(self->base);
}

/* ==== 3. concurrency ===================================================== */

/*
 * Run for P.seconds, rounded up to whole windows of P.window seconds; in
 * every window each counter must advance.  The clock is poll() on the
 * children's pidfds (a child that exits early ends the wait at once);
 * nothing sleeps.  Returns 0, or -1 with a message in @msg.
 */
static int watch_progress(struct kids *k, volatile long *const ctr[],
			  const char *const names[], int n, char *msg, size_t len)
{
	uint64_t win = P.window * 1000000000ULL, t0 = now_ns(), t, deadline;
	long nwin = (P.seconds + P.window - 1) / P.window, w, last[8], i;
	struct pollfd pf[4];
	int np = 0, ret = 0;

	for (i = 0; i < k->n; i++) {
		pf[np].fd = syscall(SYS_pidfd_open, k->pid[i], 0);
		pf[np].events = POLLIN;
		if (pf[np].fd >= 0)
			np++;
	}
	for (i = 0; i < n; i++)
		last[i] = *ctr[i];
	for (w = 0; w < (nwin > 0 ? nwin : 1) && !ret; w++) {
		deadline = t0 + (w + 1) * win;
		while (!ret && (t = now_ns()) < deadline) {
			if (poll(pf, np, (int)((deadline - t) / 1000000) + 1) > 0) {
				snprintf(msg, len, "a child exited after %.1fs, "
					 "before the end", (now_ns() - t0) / 1e9);
				ret = -1;
			}
		}
		for (i = 0; i < n && !ret; i++) {
			if (*ctr[i] == last[i]) {
				snprintf(msg, len, "%s made no progress from %lds to "
					 "%lds (stuck at %ld)", names[i],
					 w * P.window, (w + 1) * P.window, last[i]);
				ret = -1;
			}
			last[i] = *ctr[i];
		}
	}
	for (i = 0; i < np; i++)
		close(pf[i].fd);
	return ret;
}

/* Reap every child: 0 if all exited 0 within 30 s each. */
static int reap_kids(struct __test_metadata *_metadata, struct kids *k)
{
	char how[64];
	int i, st, bad = 0;

	for (i = 0; i < k->n; i++) {
		if (k->pid[i] <= 0)
			continue;
		if (wait_bounded(k->pid[i], &st, 30)) {
			TH_LOG("child %d did not exit within 30 s; SIGKILL", k->pid[i]);
			kill_and_reap(&k->pid[i], 1);
			bad++;
			continue;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			describe_status(st, how, sizeof(how));
			TH_LOG("child %d: %s", k->pid[i], how);
			bad++;
		}
		k->pid[i] = 0;
	}
	return bad;
}

/* read() that gives up after @seconds (-1) */
static ssize_t read_bounded(int fd, void *buf, size_t len, int seconds)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, seconds * 1000) != 1)
		return -1;
	return read(fd, buf, len);
}

static void thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	if (pthread_create(t, NULL, fn, arg))
		_exit(90);
}

/* ---- owner churn: munmap/mremap/mprotect/fork/exit vs faulting attachers */

#define OC_PAGES	256

struct oc_shared {
	volatile long owner_it, faults, reattach;
	volatile int stop, stop_att;
	xpmem_segid_t segid;
	long sigbus, sigsegv, bad, final_sigbus, final_other;
	uint64_t bad_val;
	long bad_idx;
};

struct oc_att {
	struct oc_shared *sh;
	int fd;
	xpmem_apid_t apid;
	uint8_t *win;
	int tid;
};

static void oc_tag(uint8_t *b, unsigned long p, unsigned long k, uint64_t gen)
{
	unsigned long i;

	for (i = p; i < p + k; i++)
		if (i < OC_PAGES / 2)
			*(volatile uint64_t *)(b + i * PAGE) = (uint64_t)i << 32 | gen;
}

static int oc_owner(struct oc_shared *sh, int shared, int wfd, uint64_t seed)
{
	int flags = (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS;
	uint8_t *b = reserve_aligned(OC_PAGES * PAGE, 512 * PAGE);
	uint8_t *park = reserve_aligned(OC_PAGES * PAGE, PAGE);
	unsigned long p, k;
	uint64_t gen = 1;
	struct rng r;
	pid_t c;
	int fd = xp_open(), st;

	rng_init(&r, seed, 77);
	if (fd < 0 || !b || !park ||
	    mmap(b, OC_PAGES * PAGE, PROT_READ | PROT_WRITE, flags | MAP_FIXED,
		 -1, 0) != b)
		return 60;
	oc_tag(b, 0, OC_PAGES, gen);
	if (xp_make(fd, b, OC_PAGES * PAGE, 0600, &sh->segid) ||
	    write(wfd, "g", 1) != 1)
		return 61;
	while (!sh->stop) {
		p = rnd(&r, OC_PAGES);
		k = 1 + rnd(&r, OC_PAGES - p < 16 ? OC_PAGES - p : 16);
		gen++;
		switch (rnd(&r, 6)) {
		case 0:
			if (munmap(b + p * PAGE, k * PAGE) ||
			    mmap(b + p * PAGE, k * PAGE, PROT_READ | PROT_WRITE,
				 flags | MAP_FIXED, -1, 0) != b + p * PAGE)
				return 62;
			oc_tag(b, p, k, gen);
			break;
		case 1:		/* away and back: contents preserved */
			if (mremap(b + p * PAGE, k * PAGE, k * PAGE,
				   MREMAP_MAYMOVE | MREMAP_FIXED, park + p * PAGE) ==
			    MAP_FAILED) {
				/* EFAULT: the range spans two mappings */
				if (errno != EFAULT)
					return 63;
				mmap(park + p * PAGE, k * PAGE, PROT_NONE, MAP_PRIVATE |
				     MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
				break;
			}
			if (mremap(park + p * PAGE, k * PAGE, k * PAGE,
				   MREMAP_MAYMOVE | MREMAP_FIXED, b + p * PAGE) ==
			    MAP_FAILED)
				return 64;
			/* the park range is a hole now: reserve it again */
			mmap(park + p * PAGE, k * PAGE, PROT_NONE, MAP_PRIVATE |
			     MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
			break;
		case 2:
			if (mprotect(b + p * PAGE, k * PAGE, PROT_READ) ||
			    mprotect(b + p * PAGE, k * PAGE, PROT_READ | PROT_WRITE))
				return 65;
			break;
		case 3:		/* fork, then write: COW breaks in the owner */
			c = fork_child();
			if (c == 0)
				_exit(0);
			if (c < 0 || waitpid(c, &st, 0) != c)
				return 66;
			oc_tag(b, p, k, gen);
			break;
		case 4:
			if (madvise(b + p * PAGE, k * PAGE, MADV_DONTNEED))
				return 67;
			oc_tag(b, p, k, gen);
			break;
		default:
			oc_tag(b, p, k, gen);
			break;
		}
		sh->owner_it++;
	}
	return 0;	/* exits while the attacher's threads still fault */
}

static void *oc_faulter(void *arg)
{
	struct oc_att *a = arg;
	struct oc_shared *sh = a->sh;
	unsigned long i;
	struct rng r;
	uint64_t v;
	int sig;

	rng_init(&r, (uintptr_t)a, a->tid);
	probe_install();
	while (!sh->stop_att) {
		i = rnd(&r, OC_PAGES);
		if (i < OC_PAGES / 2) {
			sig = touch_read64((uint64_t *)(a->win + i * PAGE), &v);
			/* 0 (a fresh page) or the owner's tag for this page */
			if (!sig && v && v >> 32 != i) {
				__atomic_fetch_add(&sh->bad, 1, __ATOMIC_RELAXED);
				sh->bad_val = v;
				sh->bad_idx = i;
			}
		} else {
			sig = touch_write64((uint64_t *)(a->win + i * PAGE) + a->tid,
					    (uint64_t)i << 32 | 0x80000000u);
		}
		if (sig == SIGBUS)
			__atomic_fetch_add(&sh->sigbus, 1, __ATOMIC_RELAXED);
		else if (sig)
			__atomic_fetch_add(&sh->sigsegv, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->faults, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *oc_reattacher(void *arg)
{
	struct oc_att *a = arg;
	void *got;
	long next = 0;
	int over = 0;

	while (!a->sh->stop_att) {
		/* pace: one re-attach per 64 accesses of the faulters */
		next += 64;
		while (a->sh->faults < next && !a->sh->stop_att)
			sched_yield();
		/* sometimes attach over the live attachment without detaching */
		if (!(over++ % 4) ||
		    xp_attach(a->fd, a->apid, 0, OC_PAGES * PAGE, a->win, &got)) {
			xp_detach(a->fd, a->win);
			xp_attach(a->fd, a->apid, 0, OC_PAGES * PAGE, a->win, &got);
		}
		a->sh->reattach++;
	}
	return NULL;
}

static int oc_attacher(struct oc_shared *sh, int rfd, int gofd)
{
	struct oc_att a[3];
	pthread_t t[3];
	void *got, *keep;
	xpmem_apid_t apid;
	char c;
	int fd, i, sig;
	uint8_t *win;

	if (read(rfd, &c, 1) != 1)
		return 70;
	fd = xp_open();
	win = reserve_aligned(OC_PAGES * PAGE, 512 * PAGE);
	if (fd < 0 || !win || xp_get(fd, sh->segid, XPMEM_RDWR, &apid) ||
	    xp_attach(fd, apid, 0, OC_PAGES * PAGE, win, &got) ||
	    xp_attach(fd, apid, 0, OC_PAGES * PAGE, NULL, &keep))
		return 71;
	for (i = 0; i < 3; i++) {
		a[i] = (struct oc_att){ .sh = sh, .fd = fd, .apid = apid,
					.win = win, .tid = i };
		thread_start(&t[i], i < 2 ? oc_faulter : oc_reattacher, &a[i]);
	}
	/* the parent says when the owner has exited and been reaped */
	if (read(gofd, &c, 1) != 1)
		return 72;
	sh->stop_att = 1;
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	/* owner exit revokes the attachment: every access is SIGBUS */
	for (i = 0; i < OC_PAGES; i++) {
		sig = touch((uint8_t *)keep + i * PAGE, 0, 0);
		if (sig == SIGBUS)
			sh->final_sigbus++;
		else
			sh->final_other++;
	}
	xp_detach(fd, keep);
	xp_release(fd, apid);
	close(fd);
	return 0;
}

static void owner_churn(struct __test_metadata *_metadata, int shared,
			uint64_t seed, const long base[3])
{
	struct oc_shared *sh = map_shared(sizeof(*sh));
	volatile long *const ctr[] = { &sh->owner_it, &sh->faults, &sh->reattach };
	static const char *const names[] = {
		"the owner (munmap/mremap/mprotect/fork)", "the faulting attacher threads",
		"the detach/re-attach thread",
	};
	struct kids k = { .n = 2 };
	int ready[2], go[2], ret;
	char msg[256] = "";

	ASSERT_NE(NULL, sh);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	k.pid[0] = fork_child();
	ASSERT_LE(0, k.pid[0]);
	if (!k.pid[0])
		_exit(oc_owner(sh, shared, ready[1], seed));
	k.pid[1] = fork_child();
	ASSERT_LE(0, k.pid[1]);
	if (!k.pid[1])
		_exit(oc_attacher(sh, ready[0], go[0]));
	ret = watch_progress(&k, ctr, names, 3, msg, sizeof(msg));
	sh->stop = 1;
	if (ret) {
		TH_LOG("%s", msg);
		kill_and_reap(k.pid, 2);
		ASSERT_EQ(0, ret);
	}
	/* the owner exits; once it is reaped the attacher checks SIGBUS */
	EXPECT_EQ(0, reap_kids(_metadata, &(struct kids){ .n = 1, .pid = { k.pid[0] } }));
	ASSERT_EQ(1, write(go[1], "x", 1));
	EXPECT_EQ(0, reap_kids(_metadata, &(struct kids){ .n = 1, .pid = { k.pid[1] } }));
	note("owner churn (%s): owner %ld operations, attacher %ld accesses "
	     "(SIGBUS %ld, SIGSEGV %ld), %ld re-attaches; after owner exit: "
	     "%ld/%d pages SIGBUS", shared ? "shared" : "anonymous", sh->owner_it,
	     sh->faults, sh->sigbus, sh->sigsegv, sh->reattach, sh->final_sigbus,
	     OC_PAGES);
	if (sh->bad)
		TH_LOG("%ld reads saw another page's data: page %ld read 0x%" PRIx64,
		       sh->bad, sh->bad_idx, sh->bad_val);
	EXPECT_EQ(0, sh->bad);
	EXPECT_EQ(0, sh->final_other);
	ASSERT_COUNTERS_SETTLE(base);
}

TEST_F_TIMEOUT(stress, owner_churn_anon, tmo(120, 180, 1200))
{
	owner_churn(_metadata, 0, self->seed, self->base);
}

TEST_F_TIMEOUT(stress, owner_churn_shared, tmo(120, 180, 1200))
{
	owner_churn(_metadata, 1, self->seed, self->base);
}

/* ---- whole-address-space fault vs owner mmap/munmap (livelock case) ---- */

#define LV_PAGES	512

struct lv_shared {
	volatile long owner_it, faults;
	volatile int stop;
	xpmem_segid_t segid;
	uint64_t buf;
	long sigs;
};

/*
 * Unrelated memory: mmap, touch, mprotect, munmap.  Each takes the owner's
 * mmap_lock for writing, and mprotect and munmap invalidate a range of the
 * whole-address-space segment, which the attacher's fault (a 2 MiB window)
 * must not keep losing to.
 */
static void *lv_mapper(void *arg)
{
	struct lv_shared *sh = arg;
	uint8_t *q;
	int i;

	while (!sh->stop) {
		q = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q == MAP_FAILED)
			_exit(80);
		for (i = 0; i < 4; i++)
			q[i * PAGE] = 1;
		munmap(q, 4 * PAGE);
		__atomic_fetch_add(&sh->owner_it, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int lv_owner(struct lv_shared *sh, int wfd)
{
	uint8_t *b = mmap(NULL, LV_PAGES * PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = xp_open();
	pthread_t t;

	if (fd < 0 || b == MAP_FAILED)
		return 81;
	memset(b, 0x3c, LV_PAGES * PAGE);
	sh->buf = (uintptr_t)b;
	if (xp_make(fd, NULL, XPMEM_MAXADDR_SIZE, 0600, &sh->segid) ||
	    write(wfd, "g", 1) != 1)
		return 82;
	thread_start(&t, lv_mapper, sh);
	lv_mapper(sh);
	pthread_join(t, NULL);
	return 0;
}

struct lv_att {
	struct lv_shared *sh;
	uint8_t *a;
	int tid;
};

static void *lv_faulter(void *arg)
{
	struct lv_att *la = arg;
	struct lv_shared *sh = la->sh;
	struct rng r;
	int sig;

	rng_init(&r, 5, la->tid);
	probe_install();
	while (!sh->stop) {
		/* drop our PTEs so that the next access faults again */
		madvise(la->a, LV_PAGES * PAGE, MADV_DONTNEED);
		sig = touch(la->a + rnd(&r, LV_PAGES) * PAGE, 0, 0);
		if (sig && !sh->stop)
			__atomic_fetch_add(&sh->sigs, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->faults, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int lv_attacher(struct lv_shared *sh, int rfd)
{
	struct lv_att la[2];
	pthread_t t[2];
	xpmem_apid_t apid;
	void *a;
	int fd, i;
	char c;

	if (read(rfd, &c, 1) != 1)
		return 83;
	fd = xp_open();
	if (fd < 0 || xp_get(fd, sh->segid, XPMEM_RDONLY, &apid) ||
	    xp_attach(fd, apid, sh->buf, LV_PAGES * PAGE, NULL, &a))
		return 84;
	for (i = 0; i < 2; i++) {
		la[i] = (struct lv_att){ .sh = sh, .a = a,
					 .tid = i };
		thread_start(&t[i], lv_faulter, &la[i]);
	}
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	xp_detach(fd, a);
	xp_release(fd, apid);
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(stress, fault_vs_owner_mmap, tmo(120, 180, 1200))
{
	struct lv_shared *sh = map_shared(sizeof(*sh));
	volatile long *const ctr[] = { &sh->owner_it, &sh->faults };
	static const char *const names[] = {
		"the owner's mmap/munmap threads",
		"the attacher threads faulting the whole-address-space attachment",
	};
	struct kids k = { .n = 2 };
	char msg[256] = "";
	int ready[2], ret;
	long retries;

	ASSERT_NE(NULL, sh);
	ASSERT_EQ(0, pipe(ready));
	k.pid[0] = fork_child();
	ASSERT_LE(0, k.pid[0]);
	if (!k.pid[0])
		_exit(lv_owner(sh, ready[1]));
	k.pid[1] = fork_child();
	ASSERT_LE(0, k.pid[1]);
	if (!k.pid[1])
		_exit(lv_attacher(sh, ready[0]));
	retries = stat_read("fault_retries");
	ret = watch_progress(&k, ctr, names, 2, msg, sizeof(msg));
	sh->stop = 1;
	note("fault vs owner mmap: owner %ld mmap/munmap cycles, attacher %ld "
	     "faults in %ds (module fault_retries +%ld)", sh->owner_it, sh->faults,
	     P.seconds, stat_read("fault_retries") - retries);
	if (ret) {
		TH_LOG("%s", msg);
		kill_and_reap(k.pid, 2);
		ASSERT_EQ(0, ret);
	}
	EXPECT_EQ(0, reap_kids(_metadata, &k));
	EXPECT_EQ(0, sh->sigs);
	ASSERT_COUNTERS_SETTLE(self->base);
}

/* ---- mutual RDWR attachments, mkwrite, and mmap/munmap on both sides ---- */

#define MK_PAGES	64

struct mk_side {
	volatile long w_it, m_it;
	xpmem_segid_t segid;
	uint64_t buf;
	long sigs;
};

struct mk_shared {
	struct mk_side side[2];
	volatile int stop;
};

struct mk_ctx {
	struct mk_shared *sh;
	struct mk_side *me;
	uint8_t *a;
};

static void *mk_writer(void *arg)
{
	struct mk_ctx *m = arg;
	struct rng r;
	unsigned long p;
	int j, sig;

	rng_init(&r, 9, (uintptr_t)m->me);
	probe_install();
	while (!m->sh->stop) {
		madvise(m->a, MK_PAGES * PAGE, MADV_DONTNEED);
		for (j = 0; j < 4; j++) {
			p = rnd(&r, MK_PAGES);
			/* read (maps read-only), then write: ->mkwrite */
			sig = touch(m->a + p * PAGE, 0, 0);
			if (!sig)
				sig = touch(m->a + p * PAGE + 64, 1, (uint8_t)j);
			if (sig && !m->sh->stop)
				__atomic_fetch_add(&m->me->sigs, 1, __ATOMIC_RELAXED);
		}
		m->me->w_it++;
	}
	return NULL;
}

static int mk_side(struct mk_shared *sh, int i, int rfd, int wfd)
{
	struct mk_side *me = &sh->side[i], *peer = &sh->side[!i];
	uint8_t *b = mmap(NULL, MK_PAGES * PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *q;
	struct mk_ctx m = { .sh = sh, .me = me };
	int fd = xp_open();
	xpmem_apid_t apid;
	pthread_t t;
	void *a;
	char c;

	if (fd < 0 || b == MAP_FAILED)
		return 85;
	memset(b, i + 1, MK_PAGES * PAGE);
	me->buf = (uintptr_t)b;
	if (xp_make(fd, NULL, XPMEM_MAXADDR_SIZE, 0600, &me->segid) ||
	    write(wfd, "r", 1) != 1 || read(rfd, &c, 1) != 1)
		return 86;
	if (xp_get(fd, peer->segid, XPMEM_RDWR, &apid) ||
	    xp_attach(fd, apid, peer->buf, MK_PAGES * PAGE, NULL, &a))
		return 87;
	m.a = a;
	thread_start(&t, mk_writer, &m);
	while (!sh->stop) {
		q = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q == MAP_FAILED)
			return 88;
		q[0] = 1;
		munmap(q, 16 * PAGE);
		me->m_it++;
	}
	pthread_join(t, NULL);
	/* both sides stop writing before either removes its segment */
	if (write(wfd, "d", 1) != 1 || read(rfd, &c, 1) != 1)
		return 89;
	xp_detach(fd, a);
	xp_release(fd, apid);
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(stress, mutual_mkwrite, tmo(120, 180, 1200))
{
	struct mk_shared *sh = map_shared(sizeof(*sh));
	volatile long *const ctr[] = {
		&sh->side[0].w_it, &sh->side[0].m_it,
		&sh->side[1].w_it, &sh->side[1].m_it,
	};
	static const char *const names[] = {
		"process A's writer (through B's whole address space)",
		"process A's mmap/munmap thread",
		"process B's writer (through A's whole address space)",
		"process B's mmap/munmap thread",
	};
	struct kids k = { .n = 2 };
	int up[2][2], down[2][2], i, ret;
	char msg[256] = "", c;

	ASSERT_NE(NULL, sh);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pipe(up[i]));
		ASSERT_EQ(0, pipe(down[i]));
		k.pid[i] = fork_child();
		ASSERT_LE(0, k.pid[i]);
		if (!k.pid[i])
			_exit(mk_side(sh, i, down[i][0], up[i][1]));
		close(up[i][1]);
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(1, read_bounded(up[i][0], &c, 1, 60));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(1, write(down[i][1], "g", 1));
	ret = watch_progress(&k, ctr, names, 4, msg, sizeof(msg));
	sh->stop = 1;
	note("mutual mkwrite: A wrote %ld rounds and mapped %ld times, B %ld and %ld",
	     sh->side[0].w_it, sh->side[0].m_it, sh->side[1].w_it, sh->side[1].m_it);
	if (ret) {
		TH_LOG("%s", msg);
		kill_and_reap(k.pid, 2);
		ASSERT_EQ(0, ret);
	}
	/* both writers stopped?  (bounded: a deadlocked side never answers) */
	for (i = 0; i < 2; i++) {
		if (read_bounded(up[i][0], &c, 1, 30) != 1) {
			TH_LOG("side %c did not stop its threads within 30 s", 'A' + i);
			kill_and_reap(k.pid, 2);
			ASSERT_TRUE(0);
		}
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(1, write(down[i][1], "e", 1));
	EXPECT_EQ(0, reap_kids(_metadata, &k));
	EXPECT_EQ(0, sh->side[0].sigs + sh->side[1].sigs);
	ASSERT_COUNTERS_SETTLE(self->base);
}

/* ---- attacher writes into MADV_FREE'd owner memory survive reclaim ---- */

#define MF_PAGES	16

static uint64_t mf_word(int round, int page)
{
	return 0xa5a5000000000000ULL | (uint64_t)round << 16 | page;
}

TEST_F_TIMEOUT(stress, madv_free_writes, tmo(60, 120, 1200))
{
	int rounds = P.level == 0 ? 5 : P.level == 1 ? 20 : 200;
	const unsigned int offs[] = { 0, 2048, (unsigned int)PAGE - 8 };
	struct { long lost, checked; xpmem_segid_t segid; } *sh = map_shared(sizeof(*sh));
	int to_att[2], to_own[2], r, j, o;
	struct kids k = { .n = 2 };
	char c;

	ASSERT_NE(NULL, sh);
	ASSERT_EQ(0, pipe(to_att));
	ASSERT_EQ(0, pipe(to_own));
	k.pid[0] = fork_child();
	ASSERT_LE(0, k.pid[0]);
	if (!k.pid[0]) {
		uint8_t *b = mmap(NULL, MF_PAGES * PAGE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int fd = xp_open();
		cpu_set_t one;

		/* madvise drains the LRU batches of the CPU it runs on */
		CPU_ZERO(&one);
		CPU_SET(0, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			_exit(6);
		if (b == MAP_FAILED || fd < 0 ||
		    xp_make(fd, b, MF_PAGES * PAGE, 0600, &sh->segid))
			_exit(1);
		for (r = 0; r < rounds; r++) {
			memset(b, 0x11, MF_PAGES * PAGE);
			if (madvise(b, MF_PAGES * PAGE, MADV_FREE) ||
			    write(to_att[1], "w", 1) != 1 || read(to_own[0], &c, 1) != 1)
				_exit(2);
			/* reclaim discards clean lazy-free pages */
			madvise(b, MF_PAGES * PAGE, MADV_PAGEOUT);
			for (j = 0; j < MF_PAGES; j++) {
				for (o = 0; o < 3; o++)
					if (*(uint64_t *)(b + j * PAGE + offs[o]) !=
					    mf_word(r, j))
						break;
				sh->lost += o < 3;
				sh->checked++;
			}
		}
		_exit(0);
	}
	k.pid[1] = fork_child();
	ASSERT_LE(0, k.pid[1]);
	if (!k.pid[1]) {
		int fd = xp_open();
		xpmem_apid_t apid;
		void *a;

		for (r = 0; r < rounds; r++) {
			if (read(to_att[0], &c, 1) != 1)
				_exit(3);
			if (!r && (fd < 0 || xp_get(fd, sh->segid, XPMEM_RDWR, &apid) ||
				   xp_attach(fd, apid, 0, MF_PAGES * PAGE, NULL, &a)))
				_exit(4);
			for (j = 0; j < MF_PAGES; j++)
				for (o = 0; o < 3; o++)
					*(volatile uint64_t *)((uint8_t *)a + j * PAGE +
							       offs[o]) = mf_word(r, j);
			if (write(to_own[1], "d", 1) != 1)
				_exit(5);
		}
		_exit(0);
	}
	EXPECT_EQ(0, reap_kids(_metadata, &k));
	note("MADV_FREE: %ld of %ld pages written through the attachment lost "
	     "after MADV_PAGEOUT (%d rounds)", sh->lost, sh->checked, rounds);
	EXPECT_EQ(0, sh->lost);
	EXPECT_EQ(rounds * MF_PAGES, sh->checked);
	ASSERT_COUNTERS_SETTLE(self->base);
}

/* ==== 4. fault injection ================================================= */

/*
 * failslab and fail_page_alloc, filtered to our tasks (task-filter,
 * /proc/self/make-it-fail) and, where the kernel has the stack filter, to
 * allocations made with xpmem's text on the stack (require-start/-end =
 * the module's .text and size).  Two processes run every ioctl path, the
 * fault path and the owner's invalidation path in rounds; every call must
 * succeed or fail with a clean errno; afterwards the counters return to
 * the baseline (the runner's kmemleak scan then looks for leaks).
 */

#define FI_DEBUGFS	"/sys/kernel/debug/"
#define FI_PAGES	32

enum {
	FI_OPEN, FI_MAKE, FI_GET, FI_ATTACH, FI_FAULT, FI_GET_PEER,
	FI_ATTACH_PEER, FI_FAULT_PEER, FI_OWNER_MM, FI_DETACH, FI_RELEASE,
	FI_REMOVE, FI_CLOSE, FI_NOPS
};

static const char *const fi_names[FI_NOPS] = {
	"open", "make", "get", "attach", "fault", "get(peer)", "attach(peer)",
	"fault(peer)", "owner munmap/mmap", "detach", "release", "remove", "close",
};

struct fi_shared {
	xpmem_segid_t segid[2];
	uint64_t off[2];
	long calls[FI_NOPS], enomem[FI_NOPS], fails[FI_NOPS];
	int failed;
	char fail[256];
};

struct fi_saved {
	char path[128];
	char val[64];
};

static struct fi_saved fi_saved[32];
static int fi_nsaved;

static int fi_write(const char *dir, const char *attr, const char *val)
{
	char path[128], old[64] = "";
	int fd, n;

	snprintf(path, sizeof(path), FI_DEBUGFS "%s/%s", dir, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	n = read(fd, old, sizeof(old) - 1);
	close(fd);
	if (n > 0 && fi_nsaved < 32) {
		old[n] = 0;
		snprintf(fi_saved[fi_nsaved].path, sizeof(fi_saved[0].path), "%s", path);
		snprintf(fi_saved[fi_nsaved].val, sizeof(fi_saved[0].val), "%s", old);
		fi_nsaved++;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	n = write(fd, val, strlen(val));
	close(fd);
	if (n == (int)strlen(val))
		return 0;
fail:
	note("cannot write '%s' to %s: %s", val, path, strerror(errno));
	return -1;
}

static void fi_restore(void)
{
	int fd;

	while (fi_nsaved--) {
		fd = open(fi_saved[fi_nsaved].path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (write(fd, fi_saved[fi_nsaved].val, strlen(fi_saved[fi_nsaved].val)) < 0)
			note("cannot restore %s", fi_saved[fi_nsaved].path);
		close(fd);
	}
	fi_nsaved = 0;
}

static int set_make_it_fail(int on)
{
	int fd = open("/proc/self/make-it-fail", O_WRONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	r = write(fd, on ? "1" : "0", 1) == 1 ? 0 : -1;
	close(fd);
	return r;
}

/* The module's text range: [.text, .text + size from /proc/modules). */
static int module_text(uint64_t *start, uint64_t *end)
{
	char line[256], name[64];
	unsigned long size;
	FILE *f = fopen("/sys/module/xpmem/sections/.text", "re");
	int found = 0;

	if (!f)
		return -1;
	if (fscanf(f, "%" SCNx64, start) != 1)
		*start = 0;
	fclose(f);
	f = fopen("/proc/modules", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lu", name, &size) == 2 &&
		    !strcmp(name, "xpmem")) {
			found = 1;
			break;
		}
	fclose(f);
	if (!found || !*start)
		return -1;
	*end = *start + size;
	return 0;
}

static void fi_rec(struct fi_shared *sh, int op, long r)
{
	__atomic_fetch_add(&sh->calls[op], 1, __ATOMIC_RELAXED);
	if (r == -ENOMEM)
		__atomic_fetch_add(&sh->enomem[op], 1, __ATOMIC_RELAXED);
	else if (r < 0)
		__atomic_fetch_add(&sh->fails[op], 1, __ATOMIC_RELAXED);
	if (r < 0 && !clean_errno(r) &&
	    !__atomic_exchange_n(&sh->failed, 1, __ATOMIC_ACQ_REL))
		snprintf(sh->fail, sizeof(sh->fail), "%s: unexpected errno %ld (%s)",
			 fi_names[op], -r, strerror(-r));
}

static void fi_touch(struct fi_shared *sh, int op, void *a, int write)
{
	int i, sig, bad = 0;

	for (i = 0; i < 8; i++) {
		sig = touch((uint8_t *)a + i * PAGE, write, (uint8_t)i);
		bad |= sig;
	}
	/* a fault that cannot allocate is retried or SIGBUS */
	fi_rec(sh, op, bad ? -ENOMEM : 0);
}

static int fi_worker(struct fi_shared *sh, int me, long rounds, uint64_t seed)
{
	uint8_t *b = mmap(NULL, FI_PAGES * PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	xpmem_segid_t segid, psegid;
	xpmem_apid_t apid, papid;
	void *a, *pa;
	uint64_t off;
	struct rng r;
	long i, ret;
	int fd, whole;

	if (b == MAP_FAILED)
		return 1;
	memset(b, 0x77, FI_PAGES * PAGE);
	rng_init(&r, seed, me);
	probe_install();
	if (set_make_it_fail(1))
		return 2;
	for (i = 0; i < rounds; i++) {
		a = pa = NULL;
		apid = papid = segid = -1;
		fd = xp_open();
		fi_rec(sh, FI_OPEN, fd < 0 ? -errno : 0);
		if (fd < 0)
			continue;
		whole = chance(&r, 30);
		off = whole ? (uintptr_t)b : 0;
		ret = xp_make(fd, whole ? NULL : b,
			      whole ? XPMEM_MAXADDR_SIZE : FI_PAGES * PAGE, 0666, &segid);
		if (ret)
			segid = -1;
		fi_rec(sh, FI_MAKE, ret);
		if (!ret) {
			sh->off[me] = off;
			sh->segid[me] = segid;
			ret = xp_get(fd, segid, XPMEM_RDWR, &apid);
			if (ret)
				apid = -1;
			fi_rec(sh, FI_GET, ret);
			if (!ret) {
				ret = xp_attach(fd, apid, off, 16 * PAGE, NULL, &a);
				if (ret)
					a = NULL;
				fi_rec(sh, FI_ATTACH, ret);
				if (!ret)
					fi_touch(sh, FI_FAULT, a, chance(&r, 50));
			}
		}
		/* the peer's current segment; it may be gone already */
		psegid = sh->segid[!me];
		ret = xp_get(fd, psegid, XPMEM_RDONLY, &papid);
		fi_rec(sh, FI_GET_PEER, ret == -ENOENT || ret == -EINVAL ? 0 : ret);
		if (!ret) {
			ret = xp_attach(fd, papid, sh->off[!me], 8 * PAGE, NULL,
					&pa);
			if (ret)
				pa = NULL;
			fi_rec(sh, FI_ATTACH_PEER, ret == -ENOENT ? 0 :
			       ret == -EINVAL ? 0 : ret);
			if (!ret)
				fi_touch(sh, FI_FAULT_PEER, pa, 0);
			if (!ret && chance(&r, 50)) {
				fi_rec(sh, FI_DETACH, xp_detach(fd, pa));
				pa = NULL;
			}
			if (chance(&r, 70))
				fi_rec(sh, FI_RELEASE, xp_release(fd, papid));
		}
		/* owner-side changes under our own attachment */
		if (munmap(b + 8 * PAGE, 8 * PAGE) ||
		    mmap(b + 8 * PAGE, 8 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != b + 8 * PAGE)
			fi_rec(sh, FI_OWNER_MM, -errno);
		else
			fi_rec(sh, FI_OWNER_MM, 0);
		madvise(b, 4 * PAGE, MADV_DONTNEED);
		if (segid > 0 && !chance(&r, 20)) {
			if (a && chance(&r, 50)) {
				fi_rec(sh, FI_DETACH, xp_detach(fd, a));
				a = NULL;
			}
			if (chance(&r, 70))
				fi_rec(sh, FI_RELEASE, apid > 0 ? xp_release(fd, apid) : 0);
			fi_rec(sh, FI_REMOVE, xp_remove(fd, segid));
		}
		/* the rest goes with the close */
		fi_rec(sh, FI_CLOSE, close(fd) ? -errno : 0);
		/* attachments outlive the fd: unmap what is left */
		if (a)
			munmap(a, 16 * PAGE);
		if (pa)
			munmap(pa, 8 * PAGE);
	}
	set_make_it_fail(0);
	return 0;
}

TEST_F_TIMEOUT(stress, fault_injection, tmo(180, 300, 7200))
{
	static const char *const dirs[] = { "failslab", "fail_page_alloc" };
	static const int probs[] = { 3, 10, 30, 60 };
	struct fi_shared *sh = map_shared(sizeof(*sh));
	long per = (P.fi_rounds + 3) / 4, total_enomem = 0;
	char val[64], line[512] = "";
	uint64_t t0 = now_ns(), ts = 0, te = 0;
	int i, d, ph, filtered, st;
	pid_t w[2];

	ASSERT_NE(NULL, sh);
	if (access(FI_DEBUGFS "failslab/probability", W_OK) ||
	    access(FI_DEBUGFS "fail_page_alloc/probability", W_OK) ||
	    access("/proc/self/make-it-fail", W_OK))
		SKIP(return, "no failslab/fail_page_alloc in debugfs (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	filtered = !module_text(&ts, &te) &&
		   !access(FI_DEBUGFS "failslab/require-start", W_OK);
	for (d = 0; d < 2; d++) {
		ASSERT_EQ(0, fi_write(dirs[d], "probability", "0"));
		ASSERT_EQ(0, fi_write(dirs[d], "interval", "1"));
		ASSERT_EQ(0, fi_write(dirs[d], "times", "-1"));
		ASSERT_EQ(0, fi_write(dirs[d], "space", "0"));
		ASSERT_EQ(0, fi_write(dirs[d], "verbose", "0"));
		ASSERT_EQ(0, fi_write(dirs[d], "task-filter", "Y"));
		ASSERT_EQ(0, fi_write(dirs[d], "ignore-gfp-wait", "N"));
		if (d == 1) {
			ASSERT_EQ(0, fi_write(dirs[d], "ignore-gfp-highmem", "N"));
			ASSERT_EQ(0, fi_write(dirs[d], "min-order", "0"));
		}
		if (filtered) {
			ASSERT_EQ(0, fi_write(dirs[d], "stacktrace-depth", "32"));
			snprintf(val, sizeof(val), "0x%" PRIx64, ts);
			ASSERT_EQ(0, fi_write(dirs[d], "require-start", val));
			snprintf(val, sizeof(val), "0x%" PRIx64, te);
			ASSERT_EQ(0, fi_write(dirs[d], "require-end", val));
		}
	}
	note("fault injection: %s, %ld rounds per process in 4 phases "
	     "(probability 3/10/30/60%%)", filtered ?
	     "allocations with xpmem's text on the stack" : "every allocation of the test tasks",
	     per * 4);
	for (ph = 0; ph < 4 && !sh->failed; ph++) {
		snprintf(val, sizeof(val), "%d", filtered ? probs[ph] : probs[ph] / 3 + 1);
		for (d = 0; d < 2; d++)
			fi_write(dirs[d], "probability", val);
		for (i = 0; i < 2; i++) {
			w[i] = fork_child();
			if (!w[i])
				_exit(fi_worker(sh, i, per, self->seed + ph));
		}
		for (i = 0; i < 2; i++) {
			if (w[i] < 0)
				continue;
			if (wait_bounded(w[i], &st, 120)) {
				kill_and_reap(&w[i], 1);
				snprintf(sh->fail, sizeof(sh->fail),
					 "worker stuck for 120 s in phase %d", ph);
				sh->failed = 1;
			} else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				describe_status(st, val, sizeof(val));
				snprintf(sh->fail, sizeof(sh->fail),
					 "worker %d phase %d: %s", i, ph, val);
				sh->failed = 1;
			}
		}
	}
	for (d = 0; d < 2; d++)
		fi_write(dirs[d], "probability", "0");
	fi_restore();
	for (i = 0; i < FI_NOPS; i++) {
		total_enomem += sh->enomem[i];
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 "%s%s %ld/%ld/%ld", i ? ", " : "", fi_names[i],
			 sh->calls[i], sh->enomem[i], sh->fails[i]);
	}
	note("fault injection in %.0fs (calls/ENOMEM/other errors): %s",
	     (now_ns() - t0) / 1e9, line);
	if (sh->failed)
		TH_LOG("%s", sh->fail);
	ASSERT_EQ(0, sh->failed);
	/* the injection must have hit something, or the setup is wrong */
	ASSERT_LT(0, total_enomem);
	ASSERT_COUNTERS_SETTLE(self->base);
}

TEST_HARNESS_MAIN
