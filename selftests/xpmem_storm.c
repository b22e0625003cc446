// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_storm.c - attachers stay killable whatever the owner does
 *
 * An owner whose threads invalidate an attached range without pause (here
 * 16 threads of MADV_DONTNEED, or of mprotect round trips) must not be
 * able to keep a faulting or detaching attacher in an uninterruptible
 * sleep: SIGKILL ends the attacher while the storm goes on.  Before the
 * fix the fault waited in mmu_interval_read_begin(), and the end of an
 * attachment in mmu_interval_notifier_remove(), until no invalidation of
 * the owner was in progress at all, which a storm may never allow.  The
 * 60 s bound below is a failure bound, not a speed target: a killable
 * attacher dies as soon as it gets a CPU, but under TCG with the storm's
 * 16 threads on the guest's two CPUs (and the debug kernel) its exit took
 * more than 10 s once.  On this rig the storm never kept the module
 * before the fix from delivering SIGKILL either (the review saw it on
 * its machine), so this test is a guard, not a proven regression test.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

#define LEN		(4UL << 20)
#define STORM_THREADS	64

FIXTURE(storm)
{
	int fd;
	long segs, permits, atts;
	char *buf;
	atomic_int stop;
	pthread_t th[STORM_THREADS];
	int nth;
};

FIXTURE_VARIANT(storm)
{
	int advice;		/* madvise(), or -1: mprotect round trips */
	bool write;		/* the attacher writes */
	bool churn;		/* the attacher attaches and detaches */
	int threads;		/* 0: 16 */
	bool one_page;		/* everyone on the first 64 KiB */
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
		char path[64], buf[2048];
		ssize_t n;
		int sfd;

		/* where it sleeps, for the log */
		snprintf(path, sizeof(path), "/proc/%d/stack", pid);
		sfd = open(path, O_RDONLY);
		n = sfd >= 0 ? read(sfd, buf, sizeof(buf) - 1) : -1;
		if (n > 0) {
			buf[n] = 0;
			TH_LOG("attacher still alive 60 s after SIGKILL:\n%s",
			       buf);
		}
		if (sfd >= 0)
			close(sfd);
		storm_stop(self);
	}
	close(pfd.fd);
	storm_stop(self);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFSIGNALED(st));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
}

TEST_HARNESS_MAIN
