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
 *   XPMEM_STRESS_FI_ROUNDS  fault-injection rounds per process (100/1000/10000)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/auxv.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* Bound on the wait for deferred teardown to bring the counters back. */
#define SETTLE_SECONDS	30

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif
#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

/* ---- settings ----------------------------------------------------------- */

struct stress_params {
	int level;		/* 0 quick, 1 ci, 2 long */
	uint64_t seed;
	long fuzz_ops;
	int procs;
	long kills;
	int seconds;
	int window;
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

/* ---- random numbers ----------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* splitmix64 */
static uint64_t rnd64(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix64(r->s);
}

static unsigned long rnd(struct rng *r, unsigned long n)
{
	return n ? rnd64(r) % n : 0;
}

static int chance(struct rng *r, unsigned int pct)
{
	return rnd(r, 100) < pct;
}

static void rng_init(struct rng *r, uint64_t seed, uint64_t stream)
{
	r->s = mix64(seed ^ mix64(stream + 1));
}

/* ---- the device --------------------------------------------------------- */

/*
 * errnos a failing call may return: argument, permission, lookup, memory
 * and limit errors, and the classic NOPROC.  Anything else (EIO, a
 * kernel-internal code such as ERESTARTSYS or EBADE, ...) is a bug.
 */
static int clean_errno(long e)
{
	switch (-e) {
	case EINVAL: case ENOENT: case EACCES: case EPERM: case EFAULT:
	case ENOMEM: case ENOTTY: case EBUSY: case EEXIST: case EAGAIN:
	case ENOSPC: case EMFILE: case ENFILE: case EDQUOT: case EOVERFLOW:
	case E2BIG: case ERANGE: case ENXIO: case ENODEV: case EOPNOTSUPP:
	case ELOOP: case ESRCH: case EINTR: case EDEADLK:
	case XPMEM_ERRNO_NOPROC:
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

/*
 * N worker processes, forked after the test process reserved an arena (so
 * the arena is at the same address in every worker), share a table of ids
 * and addresses in MAP_SHARED memory and call random operations on them:
 * their own and each other's segments and permits, removed and released
 * ids, guessed ids, garbage structs and argument pointers, fixed attach
 * addresses over everything inside the arena, and memory operations on
 * both sides.
 *
 * Every MAP_FIXED the fuzzer issues stays inside its arena (kernel
 * addresses aside, which cannot map), so the fuzzer's code, stack and heap
 * are never replaced.  Each worker keeps a model of its arena, page by
 * page, that says what may be written: its own memory, and attachments
 * whose owner-side range lies inside the owner's arena.  Writable
 * attachments of anything outside an arena are only ever mapped outside
 * the arenas, so no chain of attachments leads a write out of an arena.
 */

#define FZ_PAGES	4096UL			/* 16 MiB arena */
#define FZ_ARENA	(FZ_PAGES * PAGE)
#define FZ_SLOTS	64
#define FZ_MAXPROCS	16
#define FZ_PERMS	24
#define FZ_ATTS		64
#define FZ_SEGS		16
#define FZ_SECRET_PAGES	16
#define FZ_TOP		0x7ffffffff000ULL	/* 47-bit user space */
#define KADDR		0xffff888000000000ULL	/* the direct map */

enum fz_op {
	FZ_MAKE, FZ_MAKE_BAD, FZ_REMOVE, FZ_GET, FZ_RELEASE, FZ_ATTACH,
	FZ_DETACH, FZ_JUNK, FZ_TOUCH, FZ_MMAP, FZ_MUNMAP, FZ_MREMAP,
	FZ_MPROTECT, FZ_MADVISE, FZ_GUP, FZ_FORK, FZ_REOPEN, FZ_PROC, FZ_COPY,
	FZ_SELFPLACE, FZ_NOPS
};

static const char *const fz_names[FZ_NOPS] = {
	"make", "make-bad", "remove", "get", "release", "attach", "detach",
	"junk-ioctl", "touch", "mmap", "munmap", "mremap", "mprotect",
	"madvise", "gup", "fork", "reopen", "proc-read", "copy", "self-place",
};

/*
 * Per mille.  fork is drawn separately, at 0.5 per mille: it costs ~0.5 s
 * on the debug kernel under TCG; mmap and touch (faults) come next.
 */
static const unsigned short fz_weight[FZ_NOPS] = {
	70, 60, 55, 110, 45, 100, 68, 60, 127, 40, 35, 25, 40, 60, 40, 0, 2, 20,
	40, 3,
};

struct fz_segslot {
	int64_t segid;
	uint64_t vaddr, size;
	int32_t pid, uid, gid, mode, removed;
};

struct fz_apidslot {
	int64_t apid;
	int32_t pid, released;
};

struct fz_procinfo {
	int32_t pid, uid;
	uint64_t addr[5];		/* stack, text, data, heap, vdso */
	volatile int32_t op;
	volatile int64_t opi;
};

struct fz_shared {
	int lock;
	struct fz_segslot segs[FZ_SLOTS];
	struct fz_apidslot apids[FZ_SLOTS];
	uint64_t addrs[FZ_SLOTS];
	struct fz_procinfo procs[FZ_MAXPROCS];
	long ops[FZ_NOPS], ok[FZ_NOPS], ns[FZ_NOPS];
	long touches, sigbus, sigsegv, refused, selfmaps, forks, child_touches;
	long ext_attaches, ext_makes, ext_gets, ext_copies, uring_cmds;
	int secretmem;
	uint64_t crash_addr[FZ_MAXPROCS];
	int failed;
	char fail[640];
};

enum { PK_RESV, PK_PRIV, PK_SHARED, PK_MEMFD, PK_SECRET, PK_ATT };

struct fz_perm {
	int used;
	int64_t apid, segid;
	uint64_t svaddr, slen;		/* the segment, as its owner made it */
	int32_t spid;			/* owner, 0 if unknown */
	int rdwr;
};

struct fz_att {
	int used;
	int perm;
	int writable, safe;		/* safe: owner range inside the arena */
	long pages;			/* arena pages mapping it */
	uint64_t oaddr, olen;		/* mapped outside the arena */
};

struct fz_seg {
	int used;
	int64_t segid;
	uint64_t vaddr, size;
	int slot;
};

struct fz {
	struct rng r;
	struct fz_shared *sh;
	int id, fd, uid, gid;
	pid_t pid;
	uint8_t *arena;
	uint8_t kind[FZ_PAGES], prot[FZ_PAGES], inh[FZ_PAGES];
	int8_t att[FZ_PAGES];
	uint32_t hist[FZ_PAGES][4];	/* last changes: op # << 8 | what */
	struct fz_perm perm[FZ_PERMS];
	struct fz_att atts[FZ_ATTS];
	struct fz_seg seg[FZ_SEGS];
	int64_t dead[16];
	int ndead;
	uint8_t *scr;			/* [0] rw, [1] PROT_NONE, [2] ro */
	uint8_t *buf;			/* 4 pages for gup ops */
	int memfd, secretfd, tmpfd, pfd[2];
	int op;
	long opi;
	long ops[FZ_NOPS], ok[FZ_NOPS], ns[FZ_NOPS];
	long touches, sigbus, sigsegv, refused, selfmaps, forks;
	long ext_attaches, ext_makes, ext_gets, ext_copies, uring_cmds;
	struct io_uring ring;
	int have_ring, have_fixed;
};

static struct fz F;

static void sh_lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void sh_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static void __attribute__((noreturn, format(printf, 2, 3)))
fz_fail(struct fz *f, const char *fmt, ...)
{
	struct fz_shared *sh = f->sh;
	va_list ap;
	int n;

	sh_lock(&sh->lock);
	if (!sh->failed) {
		sh->failed = 1;
		n = snprintf(sh->fail, sizeof(sh->fail),
			     "worker %d (pid %d, uid %d) op #%ld (%s): ", f->id,
			     f->pid, f->uid, f->opi, fz_names[f->op]);
		va_start(ap, fmt);
		vsnprintf(sh->fail + n, sizeof(sh->fail) - n, fmt, ap);
		va_end(ap);
	}
	sh_unlock(&sh->lock);
	_exit(10);
}

/* A failing call must fail cleanly; a call that must fail must not pass. */
static void fz_check(struct fz *f, long r, int must_fail, const char *what)
{
	if (r < 0 && !clean_errno(r))
		fz_fail(f, "%s: unexpected errno %ld (%s)", what, -r,
			strerror(-r));
	if (r >= 0 && must_fail)
		fz_fail(f, "%s: accepted, must fail", what);
	if (r < 0 && must_fail)
		f->refused++;
	if (r >= 0)
		f->ok[f->op]++;
}

static uint8_t *pg_addr(struct fz *f, unsigned long p)
{
	return f->arena + p * PAGE;
}

static int in_arena(struct fz *f, uint64_t a, uint64_t len)
{
	uint64_t lo = (uintptr_t)f->arena;

	return a >= lo && len <= FZ_ARENA && a - lo <= FZ_ARENA - len;
}

/* History of a page's model, for failure messages. */
static void fz_hist(struct fz *f, unsigned long p, char what)
{
	memmove(&f->hist[p][1], &f->hist[p][0], 3 * sizeof(f->hist[p][0]));
	f->hist[p][0] = (uint32_t)f->opi << 8 | (uint8_t)what;
}

static const char *fz_hist_str(struct fz *f, unsigned long p)
{
	static char buf[96];
	int i, n = 0;

	buf[0] = 0;
	for (i = 0; i < 4 && f->hist[p][i]; i++)
		n += snprintf(buf + n, sizeof(buf) - n, " %c@%u",
			      (char)(f->hist[p][i] & 0xff), f->hist[p][i] >> 8);
	return buf;
}

/* Set the model of arena pages [p, p + n). */
static void fz_set(struct fz *f, unsigned long p, unsigned long n, int kind,
		   int prot, int att)
{
	unsigned long i;

	for (i = p; i < p + n; i++) {
		if (f->kind[i] == PK_ATT)
			f->atts[f->att[i]].pages--;
		f->kind[i] = kind;
		f->prot[i] = prot;
		f->att[i] = kind == PK_ATT ? att : -1;
		/* attachments are VM_DONTCOPY; everything else is inherited */
		f->inh[i] = kind != PK_ATT;
		fz_hist(f, i, 'a' + kind);
		if (kind == PK_ATT)
			f->atts[att].pages++;
	}
}

/* munmap arena pages [p, p + n) and put the PROT_NONE reservation back. */
static void fz_reset(struct fz *f, unsigned long p, unsigned long n)
{
	uint8_t *a = pg_addr(f, p);

	if (!n)
		return;
	if (munmap(a, n * PAGE) ||
	    mmap(a, n * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE | MAP_FIXED, -1, 0) != a)
		fz_fail(f, "cannot reset arena pages %lu+%lu: %s", p, n,
			strerror(errno));
	fz_set(f, p, n, PK_RESV, PROT_NONE, -1);
}

/* Forget attachment @ai after the kernel unmapped it (or unmap it). */
static void fz_att_gone(struct fz *f, int ai, int do_unmap)
{
	struct fz_att *a = &f->atts[ai];
	unsigned long p, q;

	for (p = 0; p < FZ_PAGES && a->pages; p = q) {
		if (f->kind[p] != PK_ATT || f->att[p] != ai) {
			q = p + 1;
			continue;
		}
		for (q = p; q < FZ_PAGES && f->kind[q] == PK_ATT &&
		     f->att[q] == ai; q++)
			;
		fz_reset(f, p, q - p);
	}
	if (a->olen && do_unmap)
		munmap((void *)(uintptr_t)a->oaddr, a->olen * PAGE);
	memset(a, 0, sizeof(*a));
}

static int fz_att_alloc(struct fz *f)
{
	int i;

	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used && !f->atts[i].pages && !f->atts[i].olen)
			memset(&f->atts[i], 0, sizeof(f->atts[i]));
	for (i = 0; i < FZ_ATTS; i++)
		if (!f->atts[i].used)
			return i;
	return -1;
}

/* A random range: mostly small, sometimes large. */
static void fz_range(struct fz *f, unsigned long *p, unsigned long *n)
{
	unsigned long len = chance(&f->r, 40) ? 1 : chance(&f->r, 80) ?
			    1 + rnd(&f->r, 16) : 1 + rnd(&f->r, 512);

	*p = rnd(&f->r, FZ_PAGES);
	if (*p + len > FZ_PAGES)
		len = FZ_PAGES - *p;
	*n = len;
}

/* A random page whose model satisfies @kind (-1: anything but RESV). */
static long fz_find(struct fz *f, int kind, int ai)
{
	unsigned long start = rnd(&f->r, FZ_PAGES), i, p;

	for (i = 0; i < FZ_PAGES; i++) {
		p = (start + i) % FZ_PAGES;
		if (kind < 0 ? f->kind[p] != PK_RESV :
		    f->kind[p] == kind && (ai < 0 || f->att[p] == ai))
			return p;
	}
	return -1;
}

static int fz_write_ok(struct fz *f, unsigned long p)
{
	if (!(f->prot[p] & PROT_WRITE))
		return 0;
	if (f->kind[p] == PK_ATT)
		return f->atts[f->att[p]].writable && f->atts[f->att[p]].safe;
	return f->kind[p] != PK_RESV;
}

/* ---- argument pointers ---- */

enum { ARG_OK, ARG_NULL, ARG_KERNEL, ARG_NONE, ARG_STRADDLE, ARG_RO, ARG_N };

static int fz_argmode(struct fz *f)
{
	return chance(&f->r, 5) ? 1 + (int)rnd(&f->r, ARG_N - 1) : ARG_OK;
}

static void *fz_arg(struct fz *f, int mode, const void *cmd, size_t len)
{
	switch (mode) {
	case ARG_NULL:
		return (void *)(uintptr_t)(rnd(&f->r, 2) * 16);
	case ARG_KERNEL:
		return (void *)(uintptr_t)(KADDR + rnd(&f->r, 1024) * PAGE);
	case ARG_NONE:
		return f->scr + PAGE;
	case ARG_STRADDLE:
		memcpy(f->scr + PAGE - len / 2, cmd, len / 2);
		return f->scr + PAGE - len / 2;
	case ARG_RO:
		mprotect(f->scr + 2 * PAGE, PAGE, PROT_READ | PROT_WRITE);
		memcpy(f->scr + 2 * PAGE, cmd, len);
		mprotect(f->scr + 2 * PAGE, PAGE, PROT_READ);
		return f->scr + 2 * PAGE;
	}
	return (void *)cmd;
}

/* ---- the shared table ---- */

static void fz_publish_seg(struct fz *f, struct fz_seg *s, uint64_t mode)
{
	struct fz_segslot *e;

	s->slot = rnd(&f->r, FZ_SLOTS);
	sh_lock(&f->sh->lock);
	e = &f->sh->segs[s->slot];
	e->segid = s->segid;
	e->vaddr = s->vaddr;
	e->size = s->size;
	e->pid = f->pid;
	e->uid = f->uid;
	e->gid = f->gid;
	e->mode = mode;
	e->removed = 0;
	sh_unlock(&f->sh->lock);
}

/* After REMOVE (or close) returned: nobody may GET it any more. */
static void fz_seg_removed(struct fz *f, int si)
{
	struct fz_seg *s = &f->seg[si];

	sh_lock(&f->sh->lock);
	if (f->sh->segs[s->slot].segid == s->segid)
		f->sh->segs[s->slot].removed = 1;
	sh_unlock(&f->sh->lock);
	memset(s, 0, sizeof(*s));
}

static void fz_perm_released(struct fz *f, int pi)
{
	struct fz_perm *pm = &f->perm[pi];
	int i;

	sh_lock(&f->sh->lock);
	for (i = 0; i < FZ_SLOTS; i++)
		if (f->sh->apids[i].apid == pm->apid)
			f->sh->apids[i].released = 1;
	sh_unlock(&f->sh->lock);
	f->dead[f->ndead++ % 16] = pm->apid;
	/* RELEASE munmapped every attachment made through the permit */
	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used && f->atts[i].perm == pi)
			fz_att_gone(f, i, 0);
	memset(pm, 0, sizeof(*pm));
}

static int fz_own_seg(struct fz *f, int64_t segid)
{
	int i;

	for (i = 0; i < FZ_SEGS; i++)
		if (f->seg[i].used && f->seg[i].segid == segid)
			return i;
	return -1;
}

static int fz_own_perm(struct fz *f, int64_t apid)
{
	int i;

	for (i = 0; i < FZ_PERMS; i++)
		if (f->perm[i].used && f->perm[i].apid == apid)
			return i;
	return -1;
}

static int fz_pick_used(struct fz *f, int n, size_t stride, const void *base)
{
	int start = rnd(&f->r, n), i;

	for (i = 0; i < n; i++) {
		const int *used = (const void *)((const char *)base +
					((start + i) % n) * stride);
		if (*used)
			return (start + i) % n;
	}
	return -1;
}

#define FZ_PICK(f, arr) \
	fz_pick_used(f, sizeof(arr) / sizeof(arr[0]), sizeof(arr[0]), arr)

static int64_t fz_guess(struct fz *f)
{
	int64_t known = f->sh->segs[rnd(&f->r, FZ_SLOTS)].segid;

	switch (rnd(&f->r, 4)) {
	case 0:
		return (int64_t)(rnd64(&f->r) >> 1);
	case 1:
		return known + 1;
	case 2:
		return known ^ (1LL << rnd(&f->r, 62));
	}
	return 1 + (int64_t)rnd(&f->r, 1 << 20);
}

static int fz_id_known(struct fz *f, int64_t id)
{
	int i;

	for (i = 0; i < FZ_SLOTS; i++)
		if (f->sh->segs[i].segid == id || f->sh->apids[i].apid == id)
			return 1;
	return 0;
}

/* ---- ioctl operations ---- */

static void op_remove_own(struct fz *f, int si)
{
	long r = xp_remove(f->fd, f->seg[si].segid);

	if (r)
		fz_fail(f, "REMOVE of own live segment: %s", strerror(-r));
	fz_seg_removed(f, si);
}

/*
 * EXT_MAKE/EXT_GET options drawn from small sets, so that keys collide
 * and authorization keys are sometimes right: key "fzk0".."fzk7", secret
 * "fzs0" or "fzs1".
 */
static void fz_key(struct fz *f, uint8_t *key, uint32_t *len)
{
	*len = (uint32_t)snprintf((char *)key, XPMEM_EXT_KEY_MAX, "fzk%u",
				  (unsigned int)rnd(&f->r, 8));
}

static void fz_auth(struct fz *f, uint8_t *auth, uint32_t *len)
{
	*len = (uint32_t)snprintf((char *)auth, XPMEM_EXT_AUTH_MAX, "fzs%u",
				  (unsigned int)rnd(&f->r, 2));
}

/* MAKE through EXT_MAKE with random options; @bad: a malformed one. */
static long fz_ext_make(struct fz *f, struct xpmem_cmd_make *c, int bad,
			int am)
{
	struct xpmem_ext_make x = {
		.vaddr = c->vaddr, .size = c->size,
		.mode = (uint32_t)c->permit_value,
	};
	struct xpmem_ext_iov iov[4];
	long r;

	/*
	 * Half of them vectored: the same range cut into 2-4 buffers, in
	 * order (the module merges them back into one range) or, when the
	 * whole range is arena memory, in reverse order: then every byte of
	 * the segment is still one of the range's arena pages, which is all
	 * the model's safety rules ask (writable attachments and copies
	 * reach only the arena), while faults, copies and invalidations
	 * cross from buffer to buffer.  A malformed make is one buffer,
	 * which must fail as well.
	 */
	if (chance(&f->r, 50) &&
	    (bad || (c->size != XPMEM_MAXADDR_SIZE && c->size >= 2 * PAGE))) {
		uint64_t left = bad ? 1 : c->size / PAGE, at = c->vaddr;
		unsigned int k = bad ? 1 : 2 + rnd(&f->r, 3), i;

		for (i = 0; i < k && left; i++) {
			uint64_t n = i == k - 1 ? left :
				     1 + rnd(&f->r, left - (left > 1));

			iov[i].base = at;
			iov[i].len = bad ? c->size : n * PAGE;
			at += n * PAGE;
			left -= n;
		}
		if (!bad && in_arena(f, c->vaddr, c->size) &&
		    chance(&f->r, 50)) {
			for (unsigned int j = 0; j < i / 2; j++) {
				struct xpmem_ext_iov t = iov[j];

				iov[j] = iov[i - 1 - j];
				iov[i - 1 - j] = t;
			}
		}
		x.vaddr = (uintptr_t)iov;
		x.size = i;
		x.flags |= XPMEM_EXT_MAKE_IOV;
	}

	if (chance(&f->r, 50)) {
		x.flags |= XPMEM_EXT_MAKE_KEY;
		fz_key(f, x.key, &x.key_len);
	}
	if (chance(&f->r, 25)) {
		x.flags |= XPMEM_EXT_MAKE_AUTH;
		fz_auth(f, x.auth, &x.auth_len);
	}
	if (chance(&f->r, 20))
		x.flags |= XPMEM_EXT_MAKE_RDONLY;
	/* what has no EXT_MAKE counterpart becomes an unknown flag */
	if (bad && (c->permit_type != XPMEM_PERMIT_MODE ||
		    c->permit_value > 0777))
		x.flags |= 0x10U << rnd(&f->r, 28);
	if (chance(&f->r, 3))
		x.key_len = XPMEM_EXT_KEY_MAX + 1;	/* and so must fail */
	r = xp_ioctl_ret(f->fd, XPMEM_CMD_EXT_MAKE, fz_arg(f, am, &x, sizeof(x)));
	c->segid = x.segid;
	f->ext_makes++;
	return r;
}

static void op_make(struct fz *f, int bad)
{
	static const int modes[] = { 0600, 0666, 0640, 0604, 0644, 0400, 0, 0660 };
	struct xpmem_cmd_make c = { .permit_type = XPMEM_PERMIT_MODE };
	uint8_t frame;
	unsigned long p, n;
	int must_fail = bad, am, si;
	long r;

	for (si = 0; si < FZ_SEGS && f->seg[si].used; si++)
		;
	if (si == FZ_SEGS) {
		si = rnd(&f->r, FZ_SEGS);
		op_remove_own(f, si);
	}
	c.permit_value = modes[rnd(&f->r, 8)];
	fz_range(f, &p, &n);
	c.vaddr = (uintptr_t)pg_addr(f, p);
	c.size = n * PAGE;
	switch (rnd(&f->r, 10)) {
	case 0:
		c.vaddr = 0;
		c.size = XPMEM_MAXADDR_SIZE;
		break;
	case 1:
		c.size = XPMEM_MAXADDR_SIZE;
		break;
	case 2:		/* our stack, holes included */
		c.vaddr = (((uintptr_t)&frame) & ~(PAGE - 1)) - 16 * PAGE;
		c.size = 32 * PAGE;
		break;
	case 3:		/* our text */
		c.vaddr = ((uintptr_t)&op_make) & ~(PAGE - 1);
		c.size = 16 * PAGE;
		break;
	}
	if (bad) {
		switch (rnd(&f->r, 9)) {
		case 0:
			c.vaddr |= 1 + rnd(&f->r, PAGE - 1);
			break;
		case 1:
			c.size = 0;
			break;
		case 2:
			c.size = (c.size == XPMEM_MAXADDR_SIZE ? PAGE : c.size) +
				 1 + rnd(&f->r, PAGE - 2);
			break;
		case 3:
			do {
				c.permit_type = (int)rnd64(&f->r);
			} while (c.permit_type == XPMEM_PERMIT_MODE);
			break;
		case 4:
			c.permit_value |= 01000ULL << rnd(&f->r, 50);
			break;
		case 5:
			c.vaddr = KADDR + rnd(&f->r, 4096) * PAGE;
			c.size = PAGE;
			break;
		case 6:		/* vaddr + size wraps */
			c.vaddr = (uintptr_t)pg_addr(f, p);
			c.size = -c.vaddr + PAGE * (1 + rnd(&f->r, 16));
			break;
		case 7:
			c.size = 1ULL << 60;
			break;
		default:
			c.vaddr = -PAGE;
			c.size = PAGE;
			break;
		}
	}
	am = fz_argmode(f);
	if (am != ARG_OK)
		must_fail = 1;	/* the segid cannot be written back */
	if (chance(&f->r, 25)) {
		r = fz_ext_make(f, &c, bad, am);
		if (c.segid && r)
			fz_fail(f, "EXT_MAKE failed but wrote a segid");
	} else {
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_MAKE,
			     fz_arg(f, am, &c, sizeof(c)));
	}
	fz_check(f, r, must_fail, bad ? "MAKE (invalid)" : "MAKE");
	if (r)
		return;
	if (c.segid <= 0)
		fz_fail(f, "MAKE returned segid %" PRId64, (int64_t)c.segid);
	f->seg[si].used = 1;
	f->seg[si].segid = c.segid;
	f->seg[si].vaddr = c.vaddr;
	f->seg[si].size = c.size;
	fz_publish_seg(f, &f->seg[si], c.permit_value);
}

/*
 * REMOVE or RELEASE of @id (each command is one id, the same layout) with
 * a random argument mode, checked against this worker's own table: @own
 * finds the id among ours (index or -1), @gone records that it ended.
 * Only our own live object may end, and with a good argument it must.
 */
static void fz_end_id(struct fz *f, unsigned long cmd, const char *what,
		      int64_t id, int must_fail,
		      int (*own)(struct fz *, int64_t),
		      void (*gone)(struct fz *, int))
{
	int64_t c = id;
	int am = fz_argmode(f), i;
	long r;

	_Static_assert(sizeof(struct xpmem_cmd_remove) == sizeof(c) &&
		       sizeof(struct xpmem_cmd_release) == sizeof(c),
		       "REMOVE and RELEASE take one 64-bit id");
	if (am != ARG_OK && am != ARG_RO)
		must_fail = 1;
	r = xp_ioctl_ret(f->fd, cmd, fz_arg(f, am, &c, sizeof(c)));
	fz_check(f, r, must_fail, what);
	i = own(f, id);
	if (!r && i < 0)
		fz_fail(f, "%s of id %" PRId64 " (not ours) succeeded", what,
			id);
	if (!r)
		gone(f, i);
	else if (i >= 0 && am == ARG_OK)
		fz_fail(f, "%s of our own live object: %s", what, strerror(-r));
}

static void op_remove(struct fz *f)
{
	struct xpmem_cmd_remove c = { 0 };
	struct fz_segslot e = { 0 };
	int must_fail = 0, si;

	switch (rnd(&f->r, 10)) {
	case 0: case 1: case 2: case 3: case 4:
		si = FZ_PICK(f, f->seg);
		if (si < 0)
			return;
		c.segid = f->seg[si].segid;
		break;
	case 5: case 6: case 7:
		sh_lock(&f->sh->lock);
		e = f->sh->segs[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.segid = e.segid;
		must_fail = e.removed || e.pid != f->pid;
		break;
	case 8:
		c.segid = fz_guess(f);
		must_fail = !fz_id_known(f, c.segid);
		break;
	default:
		c.segid = -(int64_t)rnd(&f->r, 3);
		must_fail = 1;
		break;
	}
	fz_end_id(f, XPMEM_CMD_REMOVE, "REMOVE", c.segid, must_fail,
		  fz_own_seg, fz_seg_removed);
}

/* Would SysV-style permission checks refuse @flags on segment @e? */
static int fz_denied(struct fz *f, const struct fz_segslot *e, int flags)
{
	int granted, need = 4 | (flags == XPMEM_RDWR ? 2 : 0);

	if (!f->uid)
		return 0;	/* CAP_IPC_OWNER */
	if (e->uid == f->uid)
		granted = e->mode >> 6;
	else if (e->gid == f->gid)
		granted = e->mode >> 3;
	else
		granted = e->mode;
	return (need & ~granted & 7) != 0;
}

static void op_release_perm(struct fz *f, int pi)
{
	long r = xp_release(f->fd, f->perm[pi].apid);

	if (r)
		fz_fail(f, "RELEASE of own permit: %s", strerror(-r));
	fz_perm_released(f, pi);
}

static void op_get(struct fz *f)
{
	struct xpmem_cmd_get c = { .permit_type = XPMEM_PERMIT_MODE };
	struct fz_segslot e = { 0 };
	int must_fail = 0, known = 0, am, pi, si;
	unsigned long v = rnd(&f->r, 20);
	long r;

	for (pi = 0; pi < FZ_PERMS && f->perm[pi].used; pi++)
		;
	if (pi == FZ_PERMS) {
		pi = rnd(&f->r, FZ_PERMS);
		op_release_perm(f, pi);
	}
	c.flags = chance(&f->r, 50) ? XPMEM_RDONLY : XPMEM_RDWR;
	if (v < 10) {
		sh_lock(&f->sh->lock);
		e = f->sh->segs[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.segid = e.segid;
		known = e.segid > 0;
		must_fail = !known || e.removed || fz_denied(f, &e, c.flags);
	} else if (v < 14 && (si = FZ_PICK(f, f->seg)) >= 0) {
		c.segid = f->seg[si].segid;
		e.segid = c.segid;
		e.vaddr = f->seg[si].vaddr;
		e.size = f->seg[si].size;
		e.pid = f->pid;
		known = 1;
	} else if (v < 16) {
		c.segid = fz_guess(f);
		must_fail = !fz_id_known(f, c.segid);
	} else if (v < 17) {
		c.segid = -(int64_t)rnd(&f->r, 3);
		must_fail = 1;
	} else {
		sh_lock(&f->sh->lock);
		e = f->sh->segs[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.segid = e.segid;
		must_fail = 1;
		if (chance(&f->r, 50)) {
			do {
				c.flags = (int)rnd64(&f->r);
			} while (c.flags == XPMEM_RDONLY || c.flags == XPMEM_RDWR);
		} else {
			do {
				c.permit_type = (int)rnd64(&f->r);
			} while (c.permit_type == XPMEM_PERMIT_MODE);
		}
	}
	am = fz_argmode(f);
	if (am != ARG_OK)
		must_fail = 1;
	if (chance(&f->r, 25)) {
		/* EXT_GET: by segid or by key, with or without a secret */
		struct xpmem_ext_get x = {
			.segid = c.segid,
			.flags = (uint32_t)c.flags,
		};

		if (c.permit_type != XPMEM_PERMIT_MODE ||
		    (c.flags != XPMEM_RDONLY && c.flags != XPMEM_RDWR))
			x.flags |= 0x400U << rnd(&f->r, 20);
		/* a key may name any segment: not where failure is due */
		if (!must_fail && chance(&f->r, 40)) {
			x.segid = 0;
			x.flags |= XPMEM_EXT_GET_BY_KEY;
			fz_key(f, x.key, &x.key_len);
			known = 0;	/* some segment, maybe not this one */
		}
		if (chance(&f->r, 30)) {
			x.flags |= XPMEM_EXT_GET_AUTH;
			fz_auth(f, x.auth, &x.auth_len);
		}
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_EXT_GET,
			     fz_arg(f, am, &x, sizeof(x)));
		c.apid = x.apid;
		c.segid = x.segid;
		f->ext_gets++;
	} else {
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_GET,
			     fz_arg(f, am, &c, sizeof(c)));
	}
	fz_check(f, r, must_fail, "GET");
	if (r)
		return;
	if (c.apid <= 0)
		fz_fail(f, "GET returned apid %" PRId64, (int64_t)c.apid);
	f->perm[pi].used = 1;
	f->perm[pi].apid = c.apid;
	f->perm[pi].segid = c.segid;
	f->perm[pi].rdwr = c.flags == XPMEM_RDWR;
	if (known) {
		f->perm[pi].svaddr = e.vaddr;
		f->perm[pi].slen = e.size == XPMEM_MAXADDR_SIZE ?
				   FZ_TOP - e.vaddr : e.size;
		f->perm[pi].spid = e.pid;
	}
	sh_lock(&f->sh->lock);
	f->sh->apids[rnd(&f->r, FZ_SLOTS)] =
		(struct fz_apidslot){ .apid = c.apid, .pid = f->pid };
	sh_unlock(&f->sh->lock);
}

static void op_release(struct fz *f)
{
	struct xpmem_cmd_release c = { 0 };
	struct fz_apidslot e;
	int must_fail = 1, pi;
	unsigned long v = rnd(&f->r, 20);

	if (v < 11) {
		pi = FZ_PICK(f, f->perm);
		if (pi < 0)
			return;
		c.apid = f->perm[pi].apid;
		must_fail = 0;
	} else if (v < 15) {
		sh_lock(&f->sh->lock);
		e = f->sh->apids[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.apid = e.apid;
		must_fail = e.pid != f->pid || e.released ||
			    fz_own_perm(f, e.apid) < 0;
	} else if (v < 17 && f->ndead) {
		c.apid = f->dead[rnd(&f->r, f->ndead < 16 ? f->ndead : 16)];
	} else if (v < 19) {
		c.apid = fz_guess(f);
		must_fail = !fz_id_known(f, c.apid);
	} else {
		c.apid = -(int64_t)rnd(&f->r, 3);
	}
	fz_end_id(f, XPMEM_CMD_RELEASE, "RELEASE", c.apid, must_fail,
		  fz_own_perm, fz_perm_released);
}

/* A fixed attach address inside the arena, often over something. */
static unsigned long fz_fixed_page(struct fz *f)
{
	long p = -1;
	uint64_t a;

	switch (rnd(&f->r, 10)) {
	case 0: case 1: case 2:
		p = fz_find(f, PK_ATT, -1);		/* over an attachment */
		break;
	case 3: case 4:
		p = fz_find(f, -1, -1);			/* over our memory */
		break;
	case 5:
		a = f->sh->addrs[rnd(&f->r, FZ_SLOTS)];	/* someone's attachment */
		if (in_arena(f, a & ~(PAGE - 1), PAGE))
			p = (a - (uintptr_t)f->arena) / PAGE;
		break;
	}
	return p >= 0 ? (unsigned long)p : rnd(&f->r, FZ_PAGES);
}

static void op_attach(struct fz *f)
{
	struct xpmem_cmd_attach c = { .fd = f->fd };
	struct fz_perm *pm = NULL;
	struct fz_apidslot e;
	uint64_t tgt = 0, want = 0, lo, hi;
	unsigned long n = 1, fp = 0, v = rnd(&f->r, 100);
	int must_fail = 1, fixed = 0, selfmap = 0, safe = 0, am, pi = -1, ai;
	int rdonly = 0;
	unsigned char vec;
	long r;

	ai = fz_att_alloc(f);
	if (ai < 0) {		/* table full: drop one */
		ai = rnd(&f->r, FZ_ATTS);
		r = xp_detach(f->fd, f->atts[ai].olen ?
			      (void *)(uintptr_t)f->atts[ai].oaddr :
			      pg_addr(f, fz_find(f, PK_ATT, ai)));
		fz_att_gone(f, ai, 1);
	}
	if (v < 75 && (pi = FZ_PICK(f, f->perm)) >= 0) {
		pm = &f->perm[pi];
		c.apid = pm->apid;
		must_fail = 0;
	} else if (v < 85) {
		sh_lock(&f->sh->lock);
		e = f->sh->apids[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.apid = e.apid;
		pi = fz_own_perm(f, e.apid);
		must_fail = pi < 0;
		pm = pi < 0 ? NULL : &f->perm[pi];
	} else if (v < 92 && f->ndead) {
		c.apid = f->dead[rnd(&f->r, f->ndead < 16 ? f->ndead : 16)];
	} else {
		c.apid = chance(&f->r, 50) ? fz_guess(f) :
			 -(int64_t)rnd(&f->r, 3);
		must_fail = !fz_id_known(f, c.apid);
	}

	if (!pm || !pm->slen) {
		/* not ours, or a segment we know nothing about: never fixed */
		c.offset = rnd(&f->r, 4) * PAGE;
		c.size = PAGE * (1 + rnd(&f->r, 4));
		goto call;
	}
	/* the owner-side range */
	n = chance(&f->r, 50) ? 1 + rnd(&f->r, 4) : 1 + rnd(&f->r, 64);
	lo = pm->svaddr > (uintptr_t)f->arena ? pm->svaddr : (uintptr_t)f->arena;
	hi = (uintptr_t)f->arena + FZ_ARENA;
	if (pm->svaddr + pm->slen < hi)
		hi = pm->svaddr + pm->slen;
	v = rnd(&f->r, 100);
	if (v < 70 && lo < hi) {
		tgt = lo + rnd(&f->r, (hi - lo) / PAGE) * PAGE;
	} else if (v < 85 && pm->spid) {
		int i;

		for (i = 0; i < FZ_MAXPROCS; i++)
			if (f->sh->procs[i].pid == pm->spid)
				tgt = f->sh->procs[i].addr[rnd(&f->r, 5)] &
				      ~(PAGE - 1);
		if (tgt < pm->svaddr || tgt >= pm->svaddr + pm->slen)
			tgt = pm->svaddr;
	} else {
		tgt = pm->svaddr + rnd(&f->r, pm->slen / PAGE) * PAGE;
	}
	if (tgt + n * PAGE > pm->svaddr + pm->slen)
		n = (pm->svaddr + pm->slen - tgt) / PAGE;
	if (!n)
		n = 1;
	fixed = chance(&f->r, 55);
	if (fixed) {
		fp = fz_fixed_page(f);
		/* an attachment of itself, or of the same address elsewhere */
		if (chance(&f->r, 8) && pm->svaddr <= (uintptr_t)pg_addr(f, fp) &&
		    (uintptr_t)pg_addr(f, fp) < pm->svaddr + pm->slen) {
			tgt = (uintptr_t)pg_addr(f, fp);
			selfmap = 1;
		}
		if (fp + n > FZ_PAGES)
			n = FZ_PAGES - fp;
		if (tgt + n * PAGE > pm->svaddr + pm->slen)
			n = (pm->svaddr + pm->slen - tgt) / PAGE;
		want = (uintptr_t)pg_addr(f, fp);
	}
	safe = in_arena(f, tgt, n * PAGE);
	if (fixed && pm->rdwr && !safe)
		fixed = 0, want = 0, selfmap = 0;	/* see the comment above */
	c.offset = (off_t)(tgt - pm->svaddr);
	c.size = n * PAGE - (chance(&f->r, 10) ? rnd(&f->r, PAGE - 1) : 0);
	c.vaddr = want;
	if (chance(&f->r, 15)) {
		must_fail = 1;
		switch (rnd(&f->r, 8)) {
		case 0:
			c.offset |= 1 + rnd(&f->r, PAGE - 1);
			break;
		case 1:
			c.offset = -(off_t)(PAGE * (1 + rnd(&f->r, 4)));
			break;
		case 2:
			c.offset = (off_t)(1ULL << 62);
			break;
		case 3:
			c.size = 0;
			break;
		case 4:		/* offset + size wraps */
			c.size = -(uint64_t)PAGE * (1 + rnd(&f->r, 4));
			c.vaddr = 0;
			break;
		case 5:
			c.flags = (int)(1 + rnd(&f->r, 0x7fffffff));
			break;
		case 6:
			c.vaddr = (fixed ? want : (uintptr_t)pg_addr(f, 0)) |
				  (1 + rnd(&f->r, PAGE - 1));
			break;
		default:
			c.vaddr = chance(&f->r, 50) ? KADDR + rnd(&f->r, 64) * PAGE :
				  -PAGE * (1 + rnd(&f->r, 4));
			break;
		}
	}
call:
	am = fz_argmode(f);
	if (am != ARG_OK)
		must_fail = 1;
	if (selfmap)
		f->selfmaps++;
	if (chance(&f->r, 30)) {
		/* EXT_ATTACH: the same request, with random options */
		struct xpmem_ext_attach x = {
			.apid = c.apid, .offset = (uint64_t)c.offset,
			.size = c.size, .vaddr = c.vaddr,
			.flags = c.vaddr ? XPMEM_EXT_ATTACH_FIXED : 0,
		};
		unsigned int o = rnd(&f->r, 8);

		if (c.flags)
			x.flags |= 0x10U << rnd(&f->r, 28);
		x.flags |= (o & 1 ? XPMEM_EXT_ATTACH_RDONLY : 0) |
			   (o & 2 ? XPMEM_EXT_ATTACH_POPULATE : 0) |
			   (o & 4 ? XPMEM_EXT_ATTACH_POPULATE_WRITE : 0);
		if ((o & 5) == 5 || ((o & 4) && (!pm || !pm->rdwr)))
			must_fail = 1;
		if (chance(&f->r, 3)) {
			x.reserved[rnd(&f->r, 3)] = 1 + rnd(&f->r, 8);
			must_fail = 1;
		}
		rdonly = o & 1;
		if (am != ARG_OK)
			must_fail = 1;
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_EXT_ATTACH,
			     fz_arg(f, am, &x, sizeof(x)));
		c.vaddr = x.vaddr;
		f->ext_attaches++;
	} else {
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_ATTACH,
			     fz_arg(f, am, &c, sizeof(c)));
	}
	fz_check(f, r, must_fail, selfmap ? "ATTACH (onto its own source)" :
		 "ATTACH");
	if (r) {
		/* a MAP_FIXED attempt may have unmapped the target */
		if (fixed && c.vaddr == want)
			fz_reset(f, fp, n);
		return;
	}
	if (c.vaddr & (PAGE - 1) || (fixed && c.vaddr != want))
		fz_fail(f, "ATTACH returned address 0x%llx (wanted 0x%llx)",
			(unsigned long long)c.vaddr, (unsigned long long)want);
	if (mincore((void *)(uintptr_t)c.vaddr, PAGE, &vec))
		fz_fail(f, "ATTACH returned 0x%llx, nothing mapped there: %s",
			(unsigned long long)c.vaddr, strerror(errno));
	n = (c.size + PAGE - 1) / PAGE;
	f->atts[ai] = (struct fz_att){
		.used = 1, .perm = pi, .writable = pm->rdwr && !rdonly,
		.safe = safe,
	};
	if (in_arena(f, c.vaddr, n * PAGE)) {
		fz_set(f, (c.vaddr - (uintptr_t)f->arena) / PAGE, n, PK_ATT,
		       PROT_READ | (pm->rdwr && !rdonly ? PROT_WRITE : 0), ai);
		if (pm->rdwr && !safe)
			fz_fail(f, "internal: unsafe writable attachment in the arena");
	} else if (c.vaddr + n * PAGE > (uintptr_t)f->arena &&
		   c.vaddr < (uintptr_t)f->arena + FZ_ARENA) {
		fz_fail(f, "ATTACH at 0x%llx straddles the arena",
			(unsigned long long)c.vaddr);
	} else {
		f->atts[ai].oaddr = c.vaddr;
		f->atts[ai].olen = n;
	}
	f->sh->addrs[rnd(&f->r, FZ_SLOTS)] = c.vaddr + rnd(&f->r, n) * PAGE;
}

/* Which of our attachments contains @a? -1 if none. */
static int fz_att_at(struct fz *f, uint64_t a)
{
	int i;

	if (in_arena(f, a, 1)) {
		unsigned long p = (a - (uintptr_t)f->arena) / PAGE;

		return f->kind[p] == PK_ATT ? f->att[p] : -1;
	}
	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used && f->atts[i].olen && a >= f->atts[i].oaddr &&
		    a < f->atts[i].oaddr + f->atts[i].olen * PAGE)
			return i;
	return -1;
}

static void op_detach(struct fz *f)
{
	struct xpmem_cmd_detach c = { 0 };
	unsigned long v = rnd(&f->r, 20);
	unsigned char vec;
	int ai, am, must_fail = 0;
	long p, r;

	if (v < 10) {
		ai = FZ_PICK(f, f->atts);
		if (ai < 0)
			return;
		if (f->atts[ai].olen)
			c.vaddr = f->atts[ai].oaddr + rnd(&f->r, f->atts[ai].olen) * PAGE;
		else if ((p = fz_find(f, PK_ATT, ai)) >= 0)
			c.vaddr = (uintptr_t)pg_addr(f, p);
		else
			return;
		c.vaddr += rnd(&f->r, 8) ? 0 : rnd(&f->r, PAGE);
	} else if (v < 14) {
		c.vaddr = (uintptr_t)pg_addr(f, rnd(&f->r, FZ_PAGES));
	} else if (v < 17) {
		c.vaddr = f->sh->addrs[rnd(&f->r, FZ_SLOTS)];
	} else {
		c.vaddr = chance(&f->r, 50) ? KADDR : rnd(&f->r, 3) * PAGE;
	}
	ai = fz_att_at(f, c.vaddr);
	am = fz_argmode(f);
	if (am != ARG_OK && am != ARG_RO)
		must_fail = 1;
	r = xp_ioctl_ret(f->fd, XPMEM_CMD_DETACH, fz_arg(f, am, &c, sizeof(c)));
	fz_check(f, r, must_fail, "DETACH");
	if (r && ai >= 0 && am == ARG_OK)
		fz_fail(f, "DETACH of own attachment at 0x%llx: %s",
			(unsigned long long)c.vaddr, strerror(-r));
	if (r)
		return;
	if (ai >= 0) {
		fz_att_gone(f, ai, 0);
		return;
	}
	/* No attachment there: nothing may have been unmapped. */
	if (in_arena(f, c.vaddr, 1) &&
	    mincore((void *)(uintptr_t)(c.vaddr & ~(PAGE - 1)), PAGE, &vec))
		fz_fail(f, "DETACH at 0x%llx (not an attachment) unmapped it",
			(unsigned long long)c.vaddr);
}

static void op_junk(struct fz *f)
{
	unsigned long cmd;
	uint64_t *w = (uint64_t *)f->scr;
	void *arg;
	long r;
	int i;

	do {
		switch (rnd(&f->r, 4)) {
		case 0:
			cmd = _IO(XPMEM_IOC_MAGIC, 9 + rnd(&f->r, 247));
			break;
		case 1:
			cmd = _IOC(rnd(&f->r, 4), XPMEM_IOC_MAGIC, rnd(&f->r, 256),
				   8 * (1 + rnd(&f->r, 32)));
			break;
		case 2:
			cmd = _IOC(rnd(&f->r, 4), XPMEM_IOC_MAGIC, 1 + rnd(&f->r, 8),
				   8 * (1 + rnd(&f->r, 8)));
			break;
		default:
			cmd = (uint32_t)rnd64(&f->r);
			break;
		}
	} while (_IOC_TYPE(cmd) == XPMEM_IOC_MAGIC && _IOC_NR(cmd) <= 8 &&
		 _IOC_SIZE(cmd) == 0 && _IOC_DIR(cmd) == _IOC_NONE);
	for (i = 0; i < 32; i++)
		w[i] = chance(&f->r, 30) ? rnd(&f->r, 8) : rnd64(&f->r);
	switch (rnd(&f->r, 4)) {
	case 0:
		arg = NULL;
		break;
	case 1:
		arg = (void *)(uintptr_t)KADDR;
		break;
	default:
		arg = f->scr;
		break;
	}
	r = xp_ioctl_ret(f->fd, cmd, arg);
	if (r < 0 && !clean_errno(r))
		fz_fail(f, "ioctl 0x%lx: unexpected errno %ld", cmd, -r);
	if (r >= 0)
		f->ok[f->op]++;
}

/* ---- memory operations ---- */

/* Touch one page; check what must hold for our own memory. */
static void fz_touch_page(struct fz *f, uint8_t *a, long p)
{
	int w = p >= 0 ? fz_write_ok(f, p) && chance(&f->r, 50) : 0;
	int sig = touch(a + (rnd(&f->r, PAGE) & ~7UL), w, (uint8_t)f->opi);

	f->touches++;
	if (sig == SIGBUS)
		f->sigbus++;
	else if (sig)
		f->sigsegv++;
	if (p < 0)
		return;
	if (f->kind[p] != PK_ATT && f->prot[p] && sig)
		fz_fail(f, "%s of own memory at %p (kind %d prot %d) raised %s",
			w ? "write" : "read", (void *)a, f->kind[p], f->prot[p],
			strsignal(sig));
	if (!f->prot[p] && sig != SIGSEGV)
		fz_fail(f, "access to PROT_NONE page %p (kind %d): %s", (void *)a,
			f->kind[p], sig ? strsignal(sig) : "no fault");
}

static void op_touch(struct fz *f)
{
	int i, n = 1 + rnd(&f->r, 4), ai;
	long p;

	f->ok[f->op]++;		/* what must hold is checked per page */
	for (i = 0; i < n; i++) {
		if (chance(&f->r, 40) && (ai = FZ_PICK(f, f->atts)) >= 0) {
			if (f->atts[ai].olen && chance(&f->r, 50)) {
				uint8_t *a = (uint8_t *)(uintptr_t)f->atts[ai].oaddr +
					     rnd(&f->r, f->atts[ai].olen) * PAGE;
				int sig = touch(a, 0, 0);

				f->touches++;
				f->sigbus += sig == SIGBUS;
				f->sigsegv += sig == SIGSEGV;
				continue;
			}
			p = fz_find(f, PK_ATT, ai);
		} else {
			p = rnd(&f->r, FZ_PAGES);
			if (f->kind[p] == PK_RESV && chance(&f->r, 80))
				p = fz_find(f, -1, -1);
		}
		if (p < 0)
			p = rnd(&f->r, FZ_PAGES);
		fz_touch_page(f, pg_addr(f, p), p);
	}
}

static void op_mmap(struct fz *f)
{
	unsigned long p, n, i;
	int kind, prot = chance(&f->r, 90) ? PROT_READ | PROT_WRITE : PROT_READ;
	int flags = MAP_FIXED, fd = -1, thp = chance(&f->r, 1);
	off_t off = 0;
	void *a;

	fz_range(f, &p, &n);
	if (n > 64)
		n = 64;
	if (thp) {
		p &= ~511UL;
		n = 512;
	}
	switch (rnd(&f->r, 20)) {
	case 0: case 1: case 2: case 3:
		kind = PK_SHARED;
		flags |= MAP_SHARED | MAP_ANONYMOUS;
		break;
	case 4: case 5: case 6: case 7:
		kind = PK_MEMFD;
		flags |= MAP_SHARED;
		fd = f->memfd;
		off = p * PAGE;
		break;
	case 8:
		if (f->secretfd >= 0 && !thp) {
			kind = PK_SECRET;
			flags |= MAP_SHARED;
			fd = f->secretfd;
			if (n > FZ_SECRET_PAGES)
				n = FZ_SECRET_PAGES;
			prot = PROT_READ | PROT_WRITE;
			break;
		}
		/* fall through */
	default:
		kind = PK_PRIV;
		flags |= MAP_PRIVATE | MAP_ANONYMOUS;
		break;
	}
	if (chance(&f->r, 3) && n <= 64)
		flags |= MAP_POPULATE;
	a = mmap(pg_addr(f, p), n * PAGE, prot, flags, fd, off);
	if (a == MAP_FAILED) {
		if (errno != ENOMEM && errno != EAGAIN)
			fz_fail(f, "mmap kind %d at page %lu+%lu: %s", kind, p,
				n, strerror(errno));
		fz_reset(f, p, n);
		return;
	}
	fz_set(f, p, n, kind, prot, -1);
	f->ok[f->op]++;
	if (thp)
		madvise(a, n * PAGE, MADV_HUGEPAGE);	/* the first write: a THP */
	if (prot & PROT_WRITE)
		for (i = 0; i < 4; i++)
			pg_addr(f, p + rnd(&f->r, n))[rnd(&f->r, PAGE)] = (uint8_t)i;
}

static void op_munmap(struct fz *f)
{
	unsigned long p, n;
	long q;

	fz_range(f, &p, &n);
	if (chance(&f->r, 30) && (q = fz_find(f, PK_ATT, -1)) >= 0) {
		p = q;		/* part of an attachment */
		if (p + n > FZ_PAGES)
			n = FZ_PAGES - p;
	}
	fz_reset(f, p, n);
	f->ok[f->op]++;
}

/* Move the model of [p, p + n) to [q, q + n). */
static void fz_move(struct fz *f, unsigned long p, unsigned long q,
		    unsigned long n)
{
	unsigned long i;
	uint8_t inh;

	for (i = 0; i < n; i++) {
		inh = f->inh[p + i];
		fz_set(f, q + i, 1, f->kind[p + i], f->prot[p + i], f->att[p + i]);
		f->inh[q + i] = inh;
	}
}

static void op_mremap(struct fz *f)
{
	long p0 = fz_find(f, -1, -1);
	unsigned long p, n, q, m;
	int dontunmap = 0;
	void *r;

	if (p0 < 0)
		return;
	p = p0;
	for (n = 1; p + n < FZ_PAGES && n < 64 && f->kind[p + n] == f->kind[p] &&
	     f->att[p + n] == f->att[p] && f->prot[p + n] == f->prot[p]; n++)
		;
	n = 1 + rnd(&f->r, n);
	switch (rnd(&f->r, 10)) {
	case 0: case 1:		/* shrink in place */
		if (n < 2)
			return;
		m = 1 + rnd(&f->r, n - 1);
		r = mremap(pg_addr(f, p), n * PAGE, m * PAGE, 0);
		if (r != MAP_FAILED) {
			fz_reset(f, p + m, n - m);
			f->ok[f->op]++;
		}
		return;
	case 2:			/* grow in place: the neighbour is mapped */
		if (p + n >= FZ_PAGES)
			return;
		r = mremap(pg_addr(f, p), n * PAGE, (n + 1) * PAGE, 0);
		if (r != MAP_FAILED)
			fz_reset(f, p, n + 1);	/* unexpected: forget it */
		return;
	case 3:
		dontunmap = f->kind[p] == PK_PRIV;
		break;
	}
	do {
		q = rnd(&f->r, FZ_PAGES - n + 1);
	} while (q < p + n && p < q + n);
	r = mremap(pg_addr(f, p), n * PAGE, n * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED |
		   (dontunmap ? MREMAP_DONTUNMAP : 0), pg_addr(f, q));
	if (r == MAP_FAILED) {
		fz_reset(f, q, n);
		fz_reset(f, p, n);
		return;
	}
	if (r != pg_addr(f, q))
		fz_fail(f, "mremap moved to %p, not %p", r, (void *)pg_addr(f, q));
	f->ok[f->op]++;
	fz_move(f, p, q, n);
	if (dontunmap) {
		/* the source keeps its (now empty) mapping */
		return;
	}
	fz_reset(f, p, n);
}

static void op_mprotect(struct fz *f)
{
	static const int prots[] = {
		PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE,
	};
	int prot = prots[rnd(&f->r, 4)];
	unsigned long p, n, i;

	fz_range(f, &p, &n);
	if (chance(&f->r, 50)) {
		long q = fz_find(f, -1, -1);

		if (q >= 0)
			p = q;
		if (p + n > FZ_PAGES)
			n = FZ_PAGES - p;
	}
	if (mprotect(pg_addr(f, p), n * PAGE, prot)) {
		fz_reset(f, p, n);	/* partly applied: start over */
		return;
	}
	f->ok[f->op]++;
	for (i = p; i < p + n; i++) {
		if (f->kind[i] == PK_RESV && prot)
			f->kind[i] = PK_PRIV;	/* the reservation is memory now */
		fz_hist(f, i, '0' + prot);
		f->prot[i] = prot;
	}
}

static void op_madvise(struct fz *f)
{
	static const int advs[] = {
		MADV_DONTNEED, MADV_FREE, MADV_PAGEOUT, MADV_DOFORK,
		MADV_DONTFORK, MADV_WILLNEED, MADV_COLD, MADV_HUGEPAGE,
		MADV_NOHUGEPAGE, MADV_REMOVE, MADV_DONTNEED, MADV_FREE,
		MADV_PAGEOUT, MADV_DOFORK, MADV_COLLAPSE, MADV_DONTDUMP,
	};
	int adv = advs[rnd(&f->r, 16)], r;
	unsigned long p, n, i;
	long q;

	if (adv == MADV_COLLAPSE && !chance(&f->r, 20))
		adv = MADV_PAGEOUT;
	fz_range(f, &p, &n);
	if (chance(&f->r, 60) && (q = fz_find(f, chance(&f->r, 50) ? PK_ATT : -1,
					      -1)) >= 0) {
		p = q;
		if (p + n > FZ_PAGES)
			n = FZ_PAGES - p;
	}
	r = madvise(pg_addr(f, p), n * PAGE, adv);
	if (!r)
		f->ok[f->op]++;
	if (adv == MADV_DOFORK || adv == MADV_DONTFORK)
		for (i = p; i < p + n; i++) {
			f->inh[i] = r ? 2 : adv == MADV_DOFORK;
			fz_hist(f, i, r ? 'E' : adv == MADV_DOFORK ? 'F' : 'D');
		}
}

/* get_user_pages and uaccess on our pages and attachments */
static void op_gup(struct fz *f)
{
	unsigned long n = 1 + rnd(&f->r, 4), i;
	long p = chance(&f->r, 60) ? fz_find(f, PK_ATT, -1) : -1;
	struct iovec local, remote;
	uint8_t *a, vec[4];
	int wok = 1;
	loff_t off = 0;
	ssize_t r;

	if (p < 0)
		p = fz_find(f, -1, -1);
	if (p < 0)
		return;
	if (p + n > FZ_PAGES)
		n = FZ_PAGES - p;
	for (i = p; i < p + n; i++)
		wok &= fz_write_ok(f, i);
	a = pg_addr(f, p);
	local.iov_base = f->buf;
	local.iov_len = n * PAGE;
	remote.iov_base = a;
	remote.iov_len = n * PAGE;
	switch (rnd(&f->r, 7)) {
	case 0:
		r = process_vm_readv(f->pid, &local, 1, &remote, 1, 0);
		break;
	case 1:
		r = wok ? process_vm_writev(f->pid, &local, 1, &remote, 1, 0) :
		    process_vm_readv(f->pid, &local, 1, &remote, 1, 0);
		break;
	case 2:
		r = vmsplice(f->pfd[1], &remote, 1, SPLICE_F_NONBLOCK);
		if (r > 0)
			splice(f->pfd[0], NULL, f->tmpfd, &off, r,
			       SPLICE_F_NONBLOCK);
		while (read(f->pfd[0], f->buf, 4 * PAGE) > 0)
			;
		break;
	case 3:
		r = syscall(SYS_futex, a + 4 * rnd(&f->r, PAGE / 4), FUTEX_WAKE, 1,
			    NULL, NULL, 0);
		break;
	case 4:
		r = wok ? pread(f->tmpfd, a, n * PAGE, 0) :
		    pwrite(f->tmpfd, a, n * PAGE, 0);
		break;
	case 5:
		r = pwrite(f->tmpfd, a, n * PAGE, 0);
		break;
	default:
		r = mincore(a, n * PAGE, vec);
		break;
	}
	if (r >= 0)
		f->ok[f->op]++;
	if (ftruncate(f->tmpfd, 4 * PAGE))
		fz_fail(f, "ftruncate: %s", strerror(errno));
}

/* ---- fork: the child touches inherited memory and exits ---- */

static int fz_child(struct fz *f)
{
	int i, k = 4 + rnd(&f->r, 12), sig, w, fd;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	void *a;
	long p, r;

	for (i = 0; i < k; i++) {
		p = chance(&f->r, 50) ? fz_find(f, -1, -1) : (long)rnd(&f->r, FZ_PAGES);
		if (p < 0)
			continue;
		w = fz_write_ok(f, p) && f->inh[p] == 1 && chance(&f->r, 50);
		sig = touch(pg_addr(f, p) + (rnd(&f->r, PAGE) & ~7UL), w, 7);
		__atomic_fetch_add(&f->sh->child_touches, 1, __ATOMIC_RELAXED);
		if (sig == SIGBUS)
			__atomic_fetch_add(&f->sh->sigbus, 1, __ATOMIC_RELAXED);
		else if (sig)
			__atomic_fetch_add(&f->sh->sigsegv, 1, __ATOMIC_RELAXED);
		/* inherited own memory works; what was not inherited is a hole */
		if ((f->inh[p] == 1 && f->prot[p] && f->kind[p] != PK_ATT &&
		     f->kind[p] != PK_SECRET && sig) ||
		    (f->inh[p] == 0 && sig != SIGSEGV))
			fz_fail(f, "fork child: %s of page %ld (%p, kind %d, prot %d, "
				"%s; history:%s) gave %s",
				w ? "write" : "read", p, (void *)pg_addr(f, p),
				f->kind[p], f->prot[p],
				f->inh[p] ? "inherited" : "not inherited",
				fz_hist_str(f, p), sig ? strsignal(sig) : "no fault");
	}
	/* the parent's device fd is the parent's */
	r = xp_make(f->fd, f->arena, PAGE, 0600, &segid);
	if (r != -XPMEM_ERRNO_NOPROC && !(r < 0 && clean_errno(r)))
		return 22;
	if (chance(&f->r, 30)) {
		fd = xp_open();
		if (fd < 0)
			return 23;
		segid = f->sh->segs[rnd(&f->r, FZ_SLOTS)].segid;
		if (!xp_get(fd, segid, XPMEM_RDONLY, &apid) &&
		    !xp_attach(fd, apid, 0, PAGE, NULL, &a))
			touch(a, 0, 0);
		/* exit cleans up */
	}
	return 0;
}

static void op_fork(struct fz *f)
{
	char how[64];
	pid_t pid;
	int st;

	pid = fork_child();
	if (pid < 0) {
		if (errno != ENOMEM && errno != EAGAIN)
			fz_fail(f, "fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		crash_addr_slot = NULL;
		_exit(fz_child(f));
	}
	f->forks++;
	if (wait_bounded(pid, &st, 120))
		fz_fail(f, "fork child %d did not exit within 120s", pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		describe_status(st, how, sizeof(how));
		fz_fail(f, "fork child: %s (20: own memory faulted, 21: "
			"uninherited page accessible, 22: parent's fd usable)", how);
	}
	f->ok[f->op]++;
}

/* close and reopen the device: our segments and permits go away */
/*
 * An attachment over its own source (issue 20): a scratch range of this
 * process is exported and unmapped, then attached without FIXED (the
 * kernel's next choice is that very hole) and moved onto its source with
 * mremap(MREMAP_FIXED); neither may land there, and a split of the
 * attachment in its middle (page tables present) returns.  Self-contained:
 * the scratch range lies outside the arena and is gone at the end.
 */
static void op_selfplace(struct fz *f)
{
	const size_t len = 4UL << 20;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	void *src, *to, *va;

	src = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (src == MAP_FAILED)
		return;
	if (xp_make(f->fd, src, len, 0600, &segid)) {
		munmap(src, len);
		return;
	}
	munmap(src, len);
	if (xp_get(f->fd, segid, XPMEM_RDWR, &apid))
		goto remove;
	if (xp_attach(f->fd, apid, 0, len, NULL, &va))
		goto release;
	if ((uint8_t *)va < (uint8_t *)src + len &&
	    (uint8_t *)src < (uint8_t *)va + len)
		fz_fail(f, "attach without FIXED at %p over its own source %p",
			va, src);
	munmap((uint8_t *)va + len / 2 + PAGE, PAGE);
	to = mremap(va, len / 2, len / 2,
		    MREMAP_MAYMOVE | MREMAP_FIXED, src);
	if (to != MAP_FAILED)
		fz_fail(f, "mremap of an attachment onto its own source at %p",
			to);
	xp_detach(f->fd, (uint8_t *)va + len - PAGE);
	f->ok[f->op]++;
release:
	xp_release(f->fd, apid);
remove:
	xp_remove(f->fd, segid);
}

static void op_reopen(struct fz *f)
{
	int i;

	close(f->fd);
	for (i = 0; i < FZ_SEGS; i++)
		if (f->seg[i].used)
			fz_seg_removed(f, i);
	for (i = 0; i < FZ_PERMS; i++) {
		if (!f->perm[i].used)
			continue;
		sh_lock(&f->sh->lock);
		for (int j = 0; j < FZ_SLOTS; j++)
			if (f->sh->apids[j].apid == f->perm[i].apid)
				f->sh->apids[j].released = 1;
		sh_unlock(&f->sh->lock);
		f->dead[f->ndead++ % 16] = f->perm[i].apid;
		memset(&f->perm[i], 0, sizeof(f->perm[i]));
	}
	/* attachments stay mapped (dead); unmap them */
	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used)
			fz_att_gone(f, i, 1);
	f->fd = xp_open();
	if (f->fd < 0)
		fz_fail(f, "reopen %s: %s", XPMEM_DEV_PATH, strerror(errno));
	f->ok[f->op]++;
}

/* Read all of @path into @buf (NUL-terminated); bytes read or -errno. */
static long read_file(const char *path, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return (long)n;
}

/*
 * Read the /proc/xpmem-objects file of a random fuzz process (another
 * uid's: EACCES; one closing its device: ENOENT) while they all change
 * their objects, and our own, which must list every segment we hold.
 */
static void op_proc(struct fz *f)
{
	static char buf[1 << 16];
	char path[64], want[48];
	pid_t pid = f->sh->procs[rnd(&f->r, FZ_MAXPROCS)].pid;
	long n;
	int i;

	if (pid > 0 && pid != f->pid) {
		snprintf(path, sizeof(path), "/proc/xpmem-objects/%d", (int)pid);
		n = read_file(path, buf, sizeof(buf));
		if (n < 0 && n != -EACCES && n != -ENOENT)
			fz_fail(f, "read %s: %s", path, strerror((int)-n));
	}
	snprintf(path, sizeof(path), "/proc/xpmem-objects/%d", (int)f->pid);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		fz_fail(f, "read %s: %s", path, strerror((int)-n));
	for (i = 0; i < FZ_SEGS && n < (long)sizeof(buf) - 1; i++) {
		if (!f->seg[i].used)
			continue;
		snprintf(want, sizeof(want), "segment %#llx ",
			 (unsigned long long)f->seg[i].segid);
		if (!strstr(buf, want))
			fz_fail(f, "%s does not list our segment %#llx",
				path, (unsigned long long)f->seg[i].segid);
	}
	f->ok[f->op]++;
}

static int fz_pick_op(struct fz *f)
{
	unsigned long x = rnd(&f->r, 1000), acc = 0;
	int i;

	if (rnd(&f->r, 2000) == 0)
		return FZ_FORK;		/* 0.5 per mille */
	for (i = 0; i < FZ_NOPS; i++) {
		acc += fz_weight[i];
		if (x < acc)
			return i;
	}
	return FZ_TOUCH;	/* not reached */
}

/*
 * EXT_COPY (or EXT_POPULATE) with a random permit, range, local buffer
 * and flags, through the ioctl or, in batches of up to four, through the
 * worker's io_uring.  The local side of a copy from a segment is the
 * worker's scratch buffer (valid), one of its PROT_NONE or read-only
 * pages, or a kernel address; of a copy to a segment (only where the
 * segment's bytes are arena pages), any arena page.
 * What must fail: a bad flag or reserved word, a permit that is not
 * ours, COPY_TO through a read-only one.  A copy never reports more
 * bytes than asked for.
 */
static void op_copy(struct fz *f)
{
	struct xpmem_ext_copy x[4];
	struct xpmem_ext_populate pp[4];
	int must_fail[4], pop[4], n = 1, i, pi;
	struct io_uring_cqe *cqe;
	int ring = f->have_ring && chance(&f->r, 40);
	uint64_t want[4];
	long r;

	if (ring)
		n = 1 + rnd(&f->r, 4);
	for (i = 0; i < n; i++) {
		struct fz_perm *pm = NULL;
		uint64_t len = 1 + rnd(&f->r, 4 * PAGE);

		memset(&x[i], 0, sizeof(x[i]));
		memset(&pp[i], 0, sizeof(pp[i]));
		must_fail[i] = 0;
		pop[i] = chance(&f->r, 15);
		if (pop[i]) {
			long p = fz_find(f, chance(&f->r, 70) ? PK_ATT : -1, -1);

			if (p < 0)
				p = rnd(&f->r, FZ_PAGES);
			pp[i].vaddr = (uintptr_t)pg_addr(f, p);
			pp[i].len = (1 + rnd(&f->r, 8)) * PAGE;
			pp[i].flags = rnd(&f->r, 2);
			if (chance(&f->r, 5)) {
				pp[i].flags |= 2;
				must_fail[i] = 1;
			}
			continue;
		}
		pi = chance(&f->r, 85) ? FZ_PICK(f, f->perm) : -1;
		if (pi >= 0) {
			pm = &f->perm[pi];
			x[i].apid = pm->apid;
		} else {
			x[i].apid = chance(&f->r, 50) ? fz_guess(f) :
				    f->sh->apids[rnd(&f->r, FZ_SLOTS)].apid;
			pi = fz_own_perm(f, x[i].apid);
			pm = pi < 0 ? NULL : &f->perm[pi];
			must_fail[i] = !pm;
		}
		x[i].offset = pm && chance(&f->r, 90) && pm->slen > len ?
			rnd(&f->r, (pm->slen - len) < (1UL << 30) ?
			    pm->slen - len : 1UL << 30) :
			rnd(&f->r, 1UL << 40);
		/* mostly where the owner has memory: its arena */
		if (pm && chance(&f->r, 60)) {
			uint64_t a = (uintptr_t)pg_addr(f, rnd(&f->r, FZ_PAGES)) +
				     rnd(&f->r, PAGE);

			if (a >= pm->svaddr && a - pm->svaddr + len <= pm->slen)
				x[i].offset = a - pm->svaddr;
		}
		x[i].len = len;
		/*
		 * Writes go only into arena memory: a segment may be a whole
		 * address space, and a random offset into it the owner's
		 * stack.  A permit that is not ours writes nothing (EACCES).
		 */
		if (chance(&f->r, 50) &&
		    (!pm || in_arena(f, pm->svaddr + x[i].offset, len))) {
			x[i].flags = XPMEM_EXT_COPY_TO;
			x[i].addr = (uintptr_t)pg_addr(f, rnd(&f->r, FZ_PAGES));
			if (pm && !pm->rdwr)
				must_fail[i] = 1;
		} else {
			switch (rnd(&f->r, 8)) {
			case 0:
				x[i].addr = (uintptr_t)f->scr + PAGE;
				break;
			case 1:
				x[i].addr = (uintptr_t)f->scr + 2 * PAGE;
				break;
			case 2:
				x[i].addr = KADDR;
				break;
			default:
				x[i].addr = (uintptr_t)f->buf;
				break;
			}
		}
		if (chance(&f->r, 5)) {
			x[i].flags |= 0x4U << rnd(&f->r, 29);
			must_fail[i] = 1;
		}
		if (chance(&f->r, 5)) {
			x[i].reserved[rnd(&f->r, 3)] = 1;
			must_fail[i] = 1;
		}
	}
	f->ext_copies += n;
	f->ops[f->op] += n - 1;		/* counted per command */
	for (i = 0; i < n; i++) {
		want[i] = pop[i] ? 0 : x[i].len;
		if (!ring) {
			r = xp_ioctl_ret(f->fd, pop[i] ? XPMEM_CMD_EXT_POPULATE :
				     XPMEM_CMD_EXT_COPY,
				     pop[i] ? (void *)&pp[i] : (void *)&x[i]);
			if (r > (long)want[i])
				fz_fail(f, "EXT_COPY of %llu bytes returned %ld",
					(unsigned long long)want[i], r);
			fz_check(f, r, must_fail[i], "EXT_COPY");
			continue;
		}
		{
			struct io_uring_sqe *sqe = io_uring_get_sqe(&f->ring);

			if (!sqe)
				fz_fail(f, "no free SQE in an idle ring");
			memset(sqe, 0, sizeof(*sqe));
			sqe->opcode = IORING_OP_URING_CMD;
			sqe->fd = f->fd;
			sqe->cmd_op = pop[i] ? XPMEM_CMD_EXT_POPULATE :
				      XPMEM_CMD_EXT_COPY;
			sqe->addr3 = pop[i] ? (uintptr_t)&pp[i] :
				     (uintptr_t)&x[i];
			sqe->user_data = i;
			/*
			 * Some name the registered buffer: those whose
			 * bytes lie in it copy, the others fail (EFAULT,
			 * EINVAL for a vector), and what must fail still
			 * does.
			 */
			if (!pop[i] && f->have_fixed && chance(&f->r, 30)) {
				sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
				sqe->buf_index = chance(&f->r, 95) ? 0 : 1;
			}
		}
	}
	if (!ring)
		return;
	f->uring_cmds += n;
	/*
	 * An SQE io_uring refuses at prep (a bad buffer index) ends the
	 * submission there with its error in a CQE: submit the rest again.
	 */
	for (i = 0; i < n; i += r) {
		r = io_uring_submit(&f->ring);
		if (r <= 0)
			fz_fail(f, "io_uring_submit of %d xpmem commands: %ld",
				n - (int)i, r);
	}
	for (i = 0; i < n; i++) {
		if (io_uring_wait_cqe(&f->ring, &cqe))
			fz_fail(f, "io_uring_wait_cqe failed");
		r = cqe->res;
		if (cqe->user_data >= (uint64_t)n)
			fz_fail(f, "CQE with unknown tag %llu",
				(unsigned long long)cqe->user_data);
		if (r > (long)want[cqe->user_data])
			fz_fail(f, "ring EXT_COPY of %llu bytes returned %ld",
				(unsigned long long)want[cqe->user_data], r);
		fz_check(f, r, must_fail[cqe->user_data], "ring EXT_COPY");
		io_uring_cqe_seen(&f->ring, cqe);
	}
}

static int fz_worker(struct fz_shared *sh, uint8_t *arena, int id,
		     uint64_t seed, long nops)
{
	struct fz *f = &F;
	uint8_t frame;
	uint64_t t;
	long i;
	int op;

	memset(f, 0, sizeof(*f));
	rng_init(&f->r, seed, id);
	f->sh = sh;
	f->id = id;
	f->pid = getpid();
	f->arena = arena;
	memset(f->att, -1, sizeof(f->att));
	memset(f->inh, 1, sizeof(f->inh));	/* the reservation is inherited */
	/* odd workers run as alice / bob: the permission checks matter */
	if (id & 1) {
		f->uid = f->gid = 1000 + (id / 2) % 2;
		if (setgroups(0, NULL) || setresgid(f->gid, f->gid, f->gid) ||
		    setresuid(f->uid, f->uid, f->uid))
			return 2;
	}
	f->fd = xp_open();
	f->scr = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	f->buf = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	f->memfd = memfd_create("xpmem-stress", MFD_CLOEXEC);
	f->secretfd = syscall(SYS_memfd_secret, 0);
	f->tmpfd = open("/tmp", O_TMPFILE | O_RDWR, 0600);
	if (f->fd < 0 || f->scr == MAP_FAILED || f->buf == MAP_FAILED ||
	    f->memfd < 0 || f->tmpfd < 0 ||
	    pipe2(f->pfd, O_NONBLOCK | O_CLOEXEC) ||
	    ftruncate(f->memfd, FZ_ARENA) || ftruncate(f->tmpfd, 4 * PAGE) ||
	    mprotect(f->scr + PAGE, PAGE, PROT_NONE) ||
	    mprotect(f->scr + 2 * PAGE, PAGE, PROT_READ))
		return 3;
	if (f->secretfd >= 0 && ftruncate(f->secretfd, FZ_SECRET_PAGES * PAGE)) {
		close(f->secretfd);
		f->secretfd = -1;
	}
	if (f->secretfd >= 0)
		sh->secretmem = 1;
	f->have_ring = !io_uring_queue_init(8, &f->ring, 0);
	if (f->have_ring) {
		/* the gup buffer, registered: ring copies may name it */
		struct iovec reg = { f->buf, 4 * PAGE };

		f->have_fixed = !io_uring_register_buffers(&f->ring, &reg, 1);
	}
	sh->procs[id].pid = f->pid;
	sh->procs[id].uid = f->uid;
	sh->procs[id].addr[0] = (uintptr_t)&frame;
	sh->procs[id].addr[1] = (uintptr_t)&fz_worker;
	sh->procs[id].addr[2] = (uintptr_t)&F;
	sh->procs[id].addr[3] = (uintptr_t)sbrk(0) - PAGE;
	sh->procs[id].addr[4] = getauxval(AT_SYSINFO_EHDR);
	crash_addr_slot = &sh->crash_addr[id];
	probe_install();

	for (i = 0; i < nops && !sh->failed; i++) {
		f->opi = i;
		op = fz_pick_op(f);
		f->op = op;
		sh->procs[id].op = op;
		sh->procs[id].opi = i;
		f->ops[op]++;
		t = now_ns();
		switch (op) {
		case FZ_MAKE:
		case FZ_MAKE_BAD:
			op_make(f, op == FZ_MAKE_BAD);
			break;
		case FZ_REMOVE:
			op_remove(f);
			break;
		case FZ_GET:
			op_get(f);
			break;
		case FZ_RELEASE:
			op_release(f);
			break;
		case FZ_ATTACH:
			op_attach(f);
			break;
		case FZ_DETACH:
			op_detach(f);
			break;
		case FZ_JUNK:
			op_junk(f);
			break;
		case FZ_TOUCH:
			op_touch(f);
			break;
		case FZ_MMAP:
			op_mmap(f);
			break;
		case FZ_MUNMAP:
			op_munmap(f);
			break;
		case FZ_MREMAP:
			op_mremap(f);
			break;
		case FZ_MPROTECT:
			op_mprotect(f);
			break;
		case FZ_MADVISE:
			op_madvise(f);
			break;
		case FZ_GUP:
			op_gup(f);
			break;
		case FZ_FORK:
			op_fork(f);
			break;
		case FZ_REOPEN:
			op_reopen(f);
			break;
		case FZ_PROC:
			op_proc(f);
			break;
		case FZ_COPY:
			op_copy(f);
			break;
		case FZ_SELFPLACE:
			op_selfplace(f);
			break;
		}
		f->ns[op] += now_ns() - t;
	}
	sh->procs[id].opi = i;
	/* clean up what is left: the counters must return to the baseline */
	for (i = 0; i < FZ_PERMS; i++)
		if (f->perm[i].used)
			op_release_perm(f, i);
	for (i = 0; i < FZ_SEGS; i++)
		if (f->seg[i].used)
			op_remove_own(f, i);
	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used)
			fz_att_gone(f, i, 1);
	close(f->fd);
	for (i = 0; i < FZ_NOPS; i++) {
		__atomic_fetch_add(&sh->ops[i], f->ops[i], __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->ok[i], f->ok[i], __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->ns[i], f->ns[i], __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&sh->touches, f->touches, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->sigbus, f->sigbus, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->sigsegv, f->sigsegv, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->refused, f->refused, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->selfmaps, f->selfmaps, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->forks, f->forks, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ext_attaches, f->ext_attaches, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ext_makes, f->ext_makes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ext_gets, f->ext_gets, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ext_copies, f->ext_copies, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->uring_cmds, f->uring_cmds, __ATOMIC_RELAXED);
	return 0;
}

TEST_F_TIMEOUT(stress, fuzz, tmo(300, 900, 14400))
{
	struct fz_shared *sh = map_shared(sizeof(*sh));
	uint8_t *arena = reserve_aligned(FZ_ARENA, 512 * PAGE);
	int n = P.procs, i, st, live, lp[2], bad = 0;
	long per = (P.fuzz_ops + n - 1) / n, done, ok = 0;
	pid_t pids[FZ_MAXPROCS] = { 0 };
	uint64_t t0 = now_ns(), last = t0;
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
	/* Progress every 15 s; a worker that dies stops the others. */
	pf.fd = lp[0];
	pf.events = POLLIN;
	for (live = n; live;) {
		poll(&pf, 1, 1000);
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

/* The children of one case: reaped with a bound, exit 0 expected. */
struct kids {
	pid_t pid[4];
	int n;
};

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
	static const unsigned int offs[] = { 0, 2048, PAGE - 8 };
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
