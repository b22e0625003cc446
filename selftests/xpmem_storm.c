// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_storm.c - attachers stay killable whatever the owner does
 *
 * An owner whose threads invalidate an attached range without pause (here
 * 16 threads of MADV_DONTNEED, or of mprotect round trips) must not be
 * able to keep a faulting or detaching attacher in an uninterruptible
 * sleep: SIGKILL ends the attacher while the storm goes on.  The core's
 * mmu_interval_read_begin() and mmu_interval_notifier_remove() wait until
 * no invalidation of the owner is in progress at all, which a storm may
 * never allow, so neither a fault nor the end of an attachment may wait
 * in them.  The 60 s bounds below are failure bounds, not speed targets:
 * a killable attacher dies as soon as it gets a CPU, but under TCG with
 * the storm's 16 threads on the guest's two CPUs (and the debug kernel)
 * its exit can take more than 10 s.
 *
 * The same holds after the owner failed to allocate while an invalidation
 * reached the attachment (fault injection: the kernels built from source
 * have it, Debian's skip that variant): its record of the invalidations
 * in flight must not be lost, or faults would wait in the core's
 * uninterruptible mmu_interval_read_begin() again.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "xpmem_fi.h"
#include "xpmem_test.h"

#define LEN		(4UL << 20)
#define STORM_THREADS	64

/* 'D', 'R', 'S', ... of @pid, or 0 once it is gone */
static char proc_state(pid_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Log where @pid, killed 60 s ago, still is: its state and kernel stack. */
static void log_still_there(struct __test_metadata *_metadata, pid_t pid)
{
	char path[64], buf[2048];
	ssize_t n;
	int sfd;

	snprintf(path, sizeof(path), "/proc/%d/stack", pid);
	sfd = open(path, O_RDONLY);
	n = sfd >= 0 ? read(sfd, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = 0;
	TH_LOG("pid %d still there 60 s after SIGKILL, state %c, in:\n%s",
	       pid, proc_state(pid), buf);
	if (sfd >= 0)
		close(sfd);
}

FIXTURE(storm)
{
	int fd;
	long segs, permits, atts;
	char *buf;
	atomic_int stop;
	pthread_t th[STORM_THREADS];
	int nth;
	bool knobs_set;
};

FIXTURE_VARIANT(storm)
{
	int advice;		/* madvise(), or -1: mprotect round trips */
	bool write;		/* the attacher writes */
	bool churn;		/* the attacher attaches and detaches */
	int threads;		/* 0: 16 */
	bool one_page;		/* everyone on the first 64 KiB */
	bool alloc_fails;	/* one invalidation's allocations fail first */
};

FIXTURE_VARIANT_ADD(storm, dontneed_read) { .advice = MADV_DONTNEED };
FIXTURE_VARIANT_ADD(storm, dontneed_write) {
	.advice = MADV_DONTNEED, .write = true,
};
FIXTURE_VARIANT_ADD(storm, mprotect_read) { .advice = -1 };
/*
 * The attacher faults one page while every owner thread discards the
 * 64 KiB around it: some invalidation of the owner is always in
 * progress, and the page a fault brings in is discarded again at once.
 */
FIXTURE_VARIANT_ADD(storm, dontneed_one_page) {
	.advice = MADV_DONTNEED, .one_page = true,
};
FIXTURE_VARIANT_ADD(storm, dontneed_attach_detach) {
	.advice = MADV_DONTNEED, .churn = true,
};
FIXTURE_VARIANT_ADD(storm, dontneed_read_after_failed_allocation) {
	.advice = MADV_DONTNEED, .alloc_fails = true,
};

/* Every slab allocation of a task whose make-it-fail is 1 fails. */
static struct fi_knob storm_fi[] = { FI_FAILSLAB_EVERY_ALLOC };
#define STORM_FI	(sizeof(storm_fi) / sizeof(storm_fi[0]))

/*
 * Discard @len bytes at @buf with every slab allocation of this thread
 * failing: the invalidation reaches the attachment's callback, which can
 * allocate nothing.  Return: 0, or -1 without make-it-fail.
 */
static int discard_without_memory(char *buf, size_t len)
{
	int fd = open("/proc/thread-self/make-it-fail", O_WRONLY | O_CLOEXEC);
	int r = -1;

	if (fd < 0)
		return -1;
	if (write(fd, "1", 1) == 1) {
		r = madvise(buf, len, MADV_DONTNEED);
		if (write(fd, "0", 1) != 1)
			r = -1;
	}
	close(fd);
	return r;
}

struct storm_arg {
	FIXTURE_DATA(storm) *self;
	int advice;
	int idx;
	bool one_page;
};

static struct storm_arg storm_args[STORM_THREADS];

static void *storm_thread(void *p)
{
	struct storm_arg *a = p;
	char *buf = a->self->buf;

	while (!atomic_load(&a->self->stop)) {
		/* each thread a 64 KiB slice, all of them the whole range */
		size_t off = a->one_page ? 0 : (a->idx * 16 * PAGE) % LEN;

		if (a->advice >= 0) {
			/* memory to discard: every invalidation has work */
			memset(buf + off, 'x', 16 * PAGE);
			madvise(buf + off, 16 * PAGE, a->advice);
			if (!a->one_page)
				madvise(buf, LEN, a->advice);
		} else {
			mprotect(buf + off, 16 * PAGE, PROT_READ);
			mprotect(buf + off, 16 * PAGE, PROT_READ | PROT_WRITE);
		}
	}
	return NULL;
}

FIXTURE_SETUP(storm)
{
	self->buf = NULL;
	self->nth = 0;
	self->knobs_set = false;
	atomic_store(&self->stop, 0);
	XP_FIXTURE_OPEN();
	self->buf = map_anon(LEN);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 's', LEN);
}

static void storm_stop(FIXTURE_DATA(storm) *self)
{
	atomic_store(&self->stop, 1);
	while (self->nth > 0)
		pthread_join(self->th[--self->nth], NULL);
}

FIXTURE_TEARDOWN(storm)
{
	storm_stop(self);
	if (self->knobs_set)
		fi_reset(storm_fi, STORM_FI);
	if (self->buf)
		munmap(self->buf, LEN);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * The churning attacher: attach, touch a few pages, detach, forever (the
 * end of each attachment removes its notifiers while the owner storms).
 */
static void attacher_churn(xpmem_segid_t segid, int wr)
{
	volatile char *p;
	xpmem_apid_t apid;
	int fd = xp_open();
	size_t i;

	if (fd < 0 || xp_get(fd, segid, XPMEM_RDWR, &apid))
		_exit(1);
	if (send_msg(wr, "s", 1))
		_exit(2);
	for (;;) {
		if (xp_attach(fd, apid, 0, LEN, NULL, (void **)&p))
			_exit(3);
		for (i = 0; i < LEN; i += 64 * PAGE)
			(void)p[i];
		if (xp_detach(fd, (void *)p))
			_exit(4);
	}
}

/* The attacher: fault the whole attachment over and over, forever. */
static void attacher_loop(xpmem_segid_t segid, bool write, size_t len,
			  int wr)
{
	volatile char *p;
	xpmem_apid_t apid;
	int fd = xp_open();
	size_t i;

	if (fd < 0 || xp_get(fd, segid, XPMEM_RDWR, &apid) ||
	    xp_attach(fd, apid, 0, LEN, NULL, (void **)&p))
		_exit(1);
	if (send_msg(wr, "s", 1))
		_exit(2);
	for (;;) {
		for (i = 0; i < len; i += PAGE) {
			if (write)
				p[i] = 'a';
			else
				(void)p[i];
		}
	}
}

TEST_F_TIMEOUT(storm, sigkill_ends_faulting_attacher, 180)
{
	struct pollfd pfd = { .events = POLLIN };
	xpmem_segid_t segid;
	struct chan c;
	pid_t pid;
	char b;
	int i, st;

	if (variant->alloc_fails) {
		self->knobs_set = true;
		if (fi_set(storm_fi, STORM_FI) ||
		    access("/proc/thread-self/make-it-fail", W_OK))
			SKIP(return, "no fault injection (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS)");
	}
	ASSERT_EQ(0, xp_make(self->fd, self->buf, LEN, 0600, &segid));
	ASSERT_EQ(0, chan_init(&c));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		chan_child(&c);
		if (variant->churn)
			attacher_churn(segid, c.to_parent[1]);
		attacher_loop(segid, variant->write,
			      variant->one_page ? PAGE : LEN, c.to_parent[1]);
	}
	chan_parent(&c);
	ASSERT_EQ(0, recv_msg(c.to_parent[0], &b, 1));
	if (variant->alloc_fails) {
		long base = stat_read("invalidations");
		long lost = stat_read("records_lost");

		ASSERT_LE(0, lost);
		ASSERT_EQ(0, discard_without_memory(self->buf, LEN));
		/* it reached the attachment, and its record kept it */
		ASSERT_LT(base, stat_read("invalidations"));
		ASSERT_EQ(lost, stat_read("records_lost"));
		memset(self->buf, 's', LEN);
	}

	for (i = 0; i < (variant->threads ? variant->threads : 16); i++) {
		storm_args[i] = (struct storm_arg){
			.self = self, .advice = variant->advice, .idx = i,
			.one_page = variant->one_page,
		};
		ASSERT_EQ(0, pthread_create(&self->th[i], NULL, storm_thread,
					    &storm_args[i]));
		self->nth++;
	}
	/* let the storm and the faults meet: some hundreds of invalidations */
	{
		long base = stat_read("invalidations");

		while (stat_read("invalidations") - base < 500)
			sched_yield();
	}

	pfd.fd = syscall(SYS_pidfd_open, pid, 0);
	ASSERT_LE(0, pfd.fd);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	/* with the storm still running */
	ASSERT_EQ(1, poll(&pfd, 1, 60000)) {
		log_still_there(_metadata, pid);
		storm_stop(self);
	}
	close(pfd.fd);
	storm_stop(self);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFSIGNALED(st));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
}

/*
 * The end of an attachment while its owner invalidates: the attachment's
 * notifiers can only be removed once no invalidation of the owner is in
 * progress, which an owner that keeps invalidating postpones; neither the
 * attacher's exit nor its munmap may wait for that, and what the
 * invalidations in progress still do with the attachment (their queued
 * zaps) must not touch what the attacher's release frees.
 */
#define TD_LEN		(1UL << 20)
#define TD_HOLDER_ATTS	64
#define TD_THREADS	16
#define TD_ROUNDS	8

FIXTURE(teardown)
{
	int fd;
	long segs, permits, atts;
	char *buf;
	xpmem_segid_t segid;
	atomic_int stop;
	pthread_t th[TD_THREADS];
	int nth;
	pid_t holder;
	struct chan hc;
	atomic_long *passes;	/* the holder's, shared */
};

struct td_arg {
	FIXTURE_DATA(teardown) *self;
	int idx;
};

static struct td_arg td_args[TD_THREADS];

static void *td_storm_thread(void *p)
{
	struct td_arg *a = p;
	char *buf = a->self->buf;
	size_t off = (a->idx * 16 * PAGE) % TD_LEN;

	while (!atomic_load(&a->self->stop)) {
		/* pages of its own to discard, then all the attachers' */
		memset(buf + off, 't', 16 * PAGE);
		madvise(buf, TD_LEN, MADV_DONTNEED);
	}
	return NULL;
}

/* @n threads of the owner discard the whole range without pause. */
static int td_storm_start(FIXTURE_DATA(teardown) *self, int n)
{
	atomic_store(&self->stop, 0);
	for (; self->nth < n; self->nth++) {
		td_args[self->nth] = (struct td_arg){
			.self = self, .idx = self->nth,
		};
		if (pthread_create(&self->th[self->nth], NULL,
				   td_storm_thread, &td_args[self->nth]))
			return -1;
	}
	return 0;
}

static void td_storm_stop(FIXTURE_DATA(teardown) *self)
{
	atomic_store(&self->stop, 1);
	while (self->nth > 0)
		pthread_join(self->th[--self->nth], NULL);
}

/* Read every page of @p once. */
static void td_touch(volatile char *p)
{
	size_t i;

	for (i = 0; i < TD_LEN; i += PAGE)
		(void)p[i];
}

/* Attach the whole segment, faulting every page in: 0, or an exit code. */
static int td_attach(xpmem_segid_t segid, volatile char **p)
{
	xpmem_apid_t apid;
	int fd = xp_open();

	if (fd < 0 || xp_get(fd, segid, XPMEM_RDWR, &apid))
		return 1;
	if (xp_attach(fd, apid, 0, TD_LEN, NULL, (void **)p))
		return 2;
	td_touch(*p);
	return 0;
}

/*
 * The holder: TD_HOLDER_ATTS attachments whose pages it keeps faulting
 * in (counting its passes), so that each owner invalidation has that many
 * zaps for the zap worker, and waits for them.
 */
static void td_holder(FIXTURE_DATA(teardown) *self)
{
	struct pollfd pfd = { .fd = self->hc.to_child[0], .events = POLLIN };
	volatile char *p[TD_HOLDER_ATTS];
	int i;

	chan_child(&self->hc);
	for (i = 0; i < TD_HOLDER_ATTS; i++)
		if (td_attach(self->segid, &p[i]))
			_exit(1);
	if (send_msg(self->hc.to_parent[1], "h", 1))
		_exit(2);
	while (poll(&pfd, 1, 0) == 0) {	/* until the parent closes it */
		for (i = 0; i < TD_HOLDER_ATTS; i++)
			td_touch(p[i]);
		atomic_fetch_add(self->passes, 1);
	}
	_exit(0);
}

/* With no storm: until the holder has mapped all its pages once more. */
static void td_holder_mapped(FIXTURE_DATA(teardown) *self)
{
	long base = atomic_load(self->passes);

	while (atomic_load(self->passes) < base + 2)
		sched_yield();
}

FIXTURE_SETUP(teardown)
{
	char b;

	self->buf = NULL;
	self->nth = 0;
	self->holder = -1;
	self->passes = NULL;
	XP_FIXTURE_OPEN();
	self->passes = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->passes);
	atomic_store(self->passes, 0);
	self->buf = map_anon(TD_LEN);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 't', TD_LEN);
	ASSERT_EQ(0, xp_make(self->fd, self->buf, TD_LEN, 0600,
			     &self->segid));
	ASSERT_EQ(0, chan_init(&self->hc));
	self->holder = fork_child();
	ASSERT_LE(0, self->holder);
	if (self->holder == 0)
		td_holder(self);
	chan_parent(&self->hc);
	ASSERT_EQ(0, recv_msg(self->hc.to_parent[0], &b, 1));
}

FIXTURE_TEARDOWN(teardown)
{
	td_storm_stop(self);
	if (self->holder > 0) {
		close(self->hc.to_child[1]);
		EXPECT_EQ(0, wait_child(self->holder));
	}
	if (self->buf) {
		EXPECT_EQ(0, xp_remove(self->fd, self->segid));
		munmap(self->buf, TD_LEN);
	}
	if (self->passes)
		munmap(self->passes, PAGE);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Wait for @pid's death with the storm still running: 1 once it is
 * dead (reaped, killed by a signal), 0 if it is still there after 60 s,
 * which is a failure bound, not a speed target (its kernel stack is
 * logged).
 */
static int td_dies(struct __test_metadata *_metadata, pid_t pid)
{
	struct pollfd pfd = { .events = POLLIN };
	int st;

	pfd.fd = syscall(SYS_pidfd_open, pid, 0);
	if (pfd.fd < 0)
		return 0;
	if (poll(&pfd, 1, 60000) != 1) {
		log_still_there(_metadata, pid);
		close(pfd.fd);
		return 0;
	}
	close(pfd.fd);
	return waitpid(pid, &st, 0) == pid && WIFSIGNALED(st);
}

/*
 * An attacher killed while it waits for nothing of ours (in read()) ends
 * its attachment in exit, with the owner invalidating all the while:
 * its exit must not wait for the owner's invalidations to pause.
 */
TEST_F_TIMEOUT(teardown, exit_not_held_by_owner_invalidations, 600)
{
	volatile char *p;
	struct chan c;
	long base;
	pid_t pid;
	char b;
	int r;

	for (r = 0; r < TD_ROUNDS / 2; r++) {
		ASSERT_EQ(0, chan_init(&c));
		pid = fork_child();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			chan_child(&c);
			if (td_attach(self->segid, &p))
				_exit(1);
			if (send_msg(c.to_parent[1], "a", 1))
				_exit(2);
			recv_msg(c.to_child[0], &b, 1);
			_exit(3);
		}
		chan_parent(&c);
		ASSERT_EQ(0, recv_msg(c.to_parent[0], &b, 1));
		base = stat_read("invalidations");
		ASSERT_EQ(0, td_storm_start(self, TD_THREADS));
		while (stat_read("invalidations") - base < 200)
			sched_yield();
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_TRUE(td_dies(_metadata, pid));
		td_storm_stop(self);
		close(c.to_child[1]);
		close(c.to_parent[0]);
	}
}

static void *td_toucher(void *p)
{
	for (;;)
		td_touch(p);
	return NULL;
}

/* The toucher's access after the munmap: wait for the parent's SIGKILL. */
static void td_segv(int sig)
{
	(void)sig;
	for (;;)
		pause();
}

/*
 * An attacher munmaps its attachment, which a thread of it keeps faulting
 * in, as the owner starts to invalidate it: the zaps of the attachment
 * are listed behind the holder's, and the attacher is killed as soon as
 * it sleeps in munmap or is done.  The zaps that run after its release
 * must find the attachment's address_space still there (KASAN on the
 * debug kernel reports it if not; elsewhere it is silent).
 */
TEST_F_TIMEOUT(teardown, munmap_while_zaps_queued, 600)
{
	volatile char *p;
	struct chan c;
	pthread_t t;
	pid_t pid;
	char b;
	int r;

	for (r = 0; r < TD_ROUNDS; r++) {
		ASSERT_EQ(0, chan_init(&c));
		pid = fork_child();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			chan_child(&c);
			if (td_attach(self->segid, &p))
				_exit(1);
			signal(SIGSEGV, td_segv);
			if (pthread_create(&t, NULL, td_toucher, (void *)p))
				_exit(2);
			if (send_msg(c.to_parent[1], "a", 1) ||
			    recv_msg(c.to_child[0], &b, 1))
				_exit(3);
			munmap((void *)p, TD_LEN);
			send_msg(c.to_parent[1], "u", 1);
			recv_msg(c.to_child[0], &b, 1);
			_exit(4);
		}
		chan_parent(&c);
		ASSERT_EQ(0, recv_msg(c.to_parent[0], &b, 1));
		td_holder_mapped(self);
		ASSERT_EQ(0, td_storm_start(self, 4));
		ASSERT_EQ(0, send_msg(c.to_child[1], "m", 1));
		/* as soon as it sleeps in munmap, or is done with it */
		for (;;) {
			struct pollfd u = {
				.fd = c.to_parent[0], .events = POLLIN,
			};

			if (proc_state(pid) == 'D' || poll(&u, 1, 0) == 1)
				break;
		}
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_TRUE(td_dies(_metadata, pid));
		td_storm_stop(self);
		close(c.to_child[1]);
		close(c.to_parent[0]);
	}
	ASSERT_EQ(TD_HOLDER_ATTS, stat_read("attachments") - self->atts);
}

TEST_HARNESS_MAIN
