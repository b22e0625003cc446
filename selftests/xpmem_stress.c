// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_stress - adversarial stress of xpmem.ko
 *
 *   fuzz              seeded multi-process ioctl fuzzer with memory operations
 *                     on both sides (ids shared between processes)
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
 * This file has the settings, the fixture and the tests: each starts its
 * processes, watches and reaps them, and reports.  What those processes
 * run is in selftests/stress/ (linked into this suite only): the fuzzer
 * (fuzz*.c), the kill storm's lanes (kill_storm.c), the concurrency
 * cases' owners and attachers (concurrency.c), the fault-injection
 * workers (fault_inject.c).
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
#include "stress/concurrency.h"
#include "stress/fault_inject.h"
#include "stress/fuzz.h"
#include "stress/kill_storm.h"
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
 * the victim's threads write after each.  KS_LANES lanes run concurrently
 * (stress/kill_storm.c).
 */

#define KS_LANES	2

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

/* ---- owner churn: munmap/mremap/mprotect/fork/exit vs faulting attachers */

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
 * the baseline (the runner's kmemleak scan then looks for leaks).  The
 * workers and the debugfs settings are in stress/fault_inject.c.
 */

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
