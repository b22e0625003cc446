// SPDX-License-Identifier: GPL-2.0
/*
 * stress/kill_storm.c - the lanes of xpmem_stress's kill storm (see
 * kill_storm.h): victims forked, driven and SIGKILLed, and reaped.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../xpmem_test.h"
#include "kill_storm.h"
#include "stress.h"

#define KS_PAGES	16

const char *const ks_names[KS_NVARIANTS] = {
	"owner-first", "attacher-first", "both", "owner-at-fork", "self-attach",
	"owner-exits",
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

void ks_lane(struct ks_shared *sh, int lane, uint64_t seed, long n)
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
