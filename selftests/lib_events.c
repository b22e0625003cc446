// SPDX-License-Identifier: GPL-2.0
/*
 * lib_events.c - xpmem_ext_event_fd(), xpmem_ext_events() and
 * XPMEM_EXT_ATTACH_ZERO_REVOKED through the library, on both backends.
 *
 * The backend comes from XPMEM_BACKEND (lib_test.h).  An owner child
 * exports memory and then removes it, exits or is killed with SIGKILL;
 * the test process, holding permits, must learn of it from the event
 * descriptor (poll, epoll, io_uring's POLL_ADD) and xpmem_ext_events():
 * one event per permit, the right reason, none lost among many, none for
 * a permit released before it was read, the oldest end first, no
 * descriptor left behind.  On
 * the kernel backend an attachment made with ZERO_REVOKED, read without
 * pause by a thread, turns to zeros when the owner is killed, with no
 * signal.  Synchronisation is by pipes and the event descriptor itself,
 * with bounded waits; never by sleeping.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing.h>
#include <xpmem.h>

#include "kselftest_harness.h"
#include "lib_test.h"
#include "xt_wait.h"

#define NPAGES		8
#define OWNERS		6
#define PERMITS		12	/* per owner */
#define WAIT_MS		60000	/* bound of every wait for an event */

/* An owner child and the pipes to it. */
struct owner {
	pid_t pid;
	int to, from;		/* our ends */
	xpmem_segid_t segid;
};

/*
 * The child: NPAGES of 'O' from xpmem_ext_alloc() (exportable on both
 * backends), made 0600; sends the segid, then obeys: 'r' remove (and
 * acknowledge), 'x' exit.  Dies with its parent.
 */
static void owner_main(int in, int out, uid_t uid)
{
	xpmem_segid_t segid;
	char *buf, cmd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (uid && switch_user(uid, uid, 0))
		_exit(5);
	buf = xpmem_ext_alloc(NPAGES * page, 0);
	if (!buf)
		_exit(1);
	memset(buf, 'O', NPAGES * page);
	segid = xpmem_make(buf, NPAGES * page, XPMEM_PERMIT_MODE,
			   (void *)(uintptr_t)(uid ? 0666 : 0600));
	if (segid == -1 || write(out, &segid, sizeof(segid)) != sizeof(segid))
		_exit(2);
	while (read(in, &cmd, 1) == 1) {
		if (cmd == 'x')
			_exit(0);
		if (cmd == 'r' && xpmem_remove(segid))
			_exit(3);
		if (write(out, &cmd, 1) != 1)
			_exit(4);
	}
	_exit(0);
}

static int owner_start_as(struct owner *o, uid_t uid)
{
	int a[2], b[2];

	if (pipe2(a, O_CLOEXEC) || pipe2(b, O_CLOEXEC))
		return -1;
	fflush(NULL);
	o->pid = fork();
	if (o->pid < 0)
		return -1;
	if (o->pid == 0) {
		close(a[1]);
		close(b[0]);
		owner_main(a[0], b[1], uid);
	}
	close(a[0]);
	close(b[1]);
	o->to = a[1];
	o->from = b[0];
	return read(o->from, &o->segid, sizeof(o->segid)) ==
	       sizeof(o->segid) ? 0 : -1;
}

static int owner_start(struct owner *o)
{
	return owner_start_as(o, 0);
}

/* Tell the owner @cmd; for 'r' wait for its acknowledgement. */
static int owner_do(struct owner *o, char cmd)
{
	char ack;

	if (cmd == 'k')
		return kill(o->pid, SIGKILL);
	if (write(o->to, &cmd, 1) != 1)
		return -1;
	if (cmd == 'x')
		return 0;
	return read(o->from, &ack, 1) == 1 && ack == cmd ? 0 : -1;
}

/* Reap the owner (killing it if it is still there); its pipes close. */
static void owner_end(struct owner *o)
{
	int st;

	if (o->pid > 0) {
		kill(o->pid, SIGKILL);
		waitpid(o->pid, &st, 0);
		o->pid = 0;
	}
	close(o->to);
	close(o->from);
}

/*
 * Bounded wait for the event descriptor; 1 when it polls readable.
 * io_uring's completions run as task work, which interrupts a waiting
 * poll or epoll_wait with EINTR: wait again.
 */
static int ev_wait(int fd)
{
	return xt_wait_readable(fd, WAIT_MS);
}

/*
 * Wait until @want events arrived; every one must name @segid, one of
 * @apid[0..@want), @reason, reserved fields zero, each apid once.
 * Return: 0, or the line that failed.
 */
static int expect_events(int fd, xpmem_segid_t segid,
			 const xpmem_apid_t *apid, int want,
			 unsigned int reason)
{
	struct xpmem_ext_event ev[3];
	int got = 0, seen[64] = { 0 };

	if (want > 64)
		return __LINE__;
	while (got < want) {
		int n = xpmem_ext_events(ev, 3);

		if (n < 0)
			return __LINE__;
		if (n == 0 && !ev_wait(fd))
			return __LINE__;
		for (int k = 0; k < n; k++) {
			int j;

			for (j = 0; j < want && apid[j] != ev[k].apid; j++)
				;
			if (j == want || seen[j] || ev[k].segid != segid ||
			    ev[k].reason != reason || ev[k].reserved0 ||
			    ev[k].reserved)
				return __LINE__;
			seen[j] = 1;
		}
		got += n;
	}
	return xpmem_ext_events(ev, 3) == 0 ? 0 : __LINE__;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

FIXTURE(ev)
{
	int backend;
	int fd;			/* the event descriptor */
	struct owner o;
};

FIXTURE_SETUP(ev)
{
	const char *reason;

	self->o.pid = 0;
	self->o.to = self->o.from = -1;
	if (lib_setup_backend(_metadata, &self->backend, &reason))
		return;
	self->fd = xpmem_ext_event_fd();
	ASSERT_LE(0, self->fd) TH_LOG("xpmem_ext_event_fd: %s",
				      strerror(errno));
}

FIXTURE_TEARDOWN(ev)
{
	if (self->o.pid)
		owner_end(&self->o);
}

#define IS_KERNEL (self->backend == XPMEM_EXT_BACKEND_KERNEL)

TEST_F(ev, features_and_arguments)
{
	unsigned long f = xpmem_ext_features();
	struct xpmem_ext_event ev;

	ASSERT_NE(0, f & XPMEM_EXT_F_EVENTS);
	ASSERT_EQ(IS_KERNEL, !!(f & XPMEM_EXT_F_ZERO_REVOKED));
	ASSERT_EQ(self->fd, xpmem_ext_event_fd());	/* the same one */
	ASSERT_EQ(-1, xpmem_ext_events(NULL, 1));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_ext_events(&ev, 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(0, xpmem_ext_events(&ev, 1));
}

TEST_F(ev, zero_revoked_flag_where_unsupported)
{
	struct xpmem_addr addr;
	xpmem_apid_t apid;
	void *a;

	if (IS_KERNEL)
		SKIP(return, "the kernel backend has ZERO_REVOKED");
	ASSERT_EQ(0, owner_start(&self->o));
	apid = xpmem_get(self->o.segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, apid);
	addr = (struct xpmem_addr){ .apid = apid, .offset = 0 };
	a = xpmem_ext_attach(addr, page, NULL, XPMEM_EXT_ATTACH_ZERO_REVOKED);
	ASSERT_EQ((void *)-1, a);
	ASSERT_EQ(EOPNOTSUPP, errno);
	ASSERT_EQ(0, xpmem_release(apid));
}

/* Two permits of one owner; the owner does @how; both hear @reason. */
static int one_owner(struct owner *o, int fd, char how, unsigned int reason)
{
	xpmem_apid_t apid[2];
	struct xpmem_ext_event ev;
	int ret = 0;

	if (owner_start(o))
		return __LINE__;
	apid[0] = xpmem_get(o->segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	apid[1] = xpmem_get(o->segid, XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL);
	if (apid[0] <= 0 || apid[1] <= 0)
		return __LINE__;
	if (xpmem_ext_events(&ev, 1) != 0)
		ret = __LINE__;
	else if (owner_do(o, how))
		ret = __LINE__;
	else if (!ev_wait(fd))	/* woken by the end itself */
		ret = __LINE__;
	else
		ret = expect_events(fd, o->segid, apid, 2, reason);
	if (xpmem_release(apid[0]) || xpmem_release(apid[1]))
		ret = ret ?: __LINE__;
	return ret;
}

TEST_F(ev, remove)
{
	ASSERT_EQ(0, one_owner(&self->o, self->fd, 'r',
			       XPMEM_EXT_EVENT_REMOVED));
}

TEST_F(ev, owner_exit)
{
	ASSERT_EQ(0, one_owner(&self->o, self->fd, 'x',
			       XPMEM_EXT_EVENT_OWNER_EXITED));
}

TEST_F(ev, owner_kill9)
{
	ASSERT_EQ(0, one_owner(&self->o, self->fd, 'k',
			       XPMEM_EXT_EVENT_OWNER_EXITED));
}

TEST_F(ev, epoll_and_io_uring_poll)
{
	struct epoll_event e = { .events = EPOLLIN };
	struct __kernel_timespec ts = { .tv_sec = WAIT_MS / 1000 };
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	xpmem_apid_t apid;
	int ep, ring_ok;

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->fd, &e));
	ASSERT_EQ(0, owner_start(&self->o));
	apid = xpmem_get(self->o.segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, apid);
	/* nothing to tell yet (shm: after the first, empty, scan) */
	ASSERT_EQ(0, xpmem_ext_events(&(struct xpmem_ext_event){ 0 }, 1));
	ASSERT_EQ(0, xt_epoll_wait_one(ep, &e, 0));
	ring_ok = io_uring_queue_init(4, &ring, 0) == 0;
	if (ring_ok) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		io_uring_prep_poll_add(sqe, self->fd, POLLIN);
		sqe->user_data = 9;
		ASSERT_EQ(1, io_uring_submit(&ring));
		ASSERT_EQ(-EAGAIN, io_uring_peek_cqe(&ring, &cqe));
	}
	ASSERT_EQ(0, owner_do(&self->o, 'k'));
	ASSERT_EQ(1, xt_epoll_wait_one(ep, &e, WAIT_MS));
	if (ring_ok) {
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
		ASSERT_EQ(9, cqe->user_data);
		ASSERT_NE(0, cqe->res & POLLIN);
		io_uring_cqe_seen(&ring, cqe);
		io_uring_queue_exit(&ring);
	} else {
		TH_LOG("no io_uring here: POLL_ADD not tested");
	}
	ASSERT_EQ(0, expect_events(self->fd, self->o.segid, &apid, 1,
				   XPMEM_EXT_EVENT_OWNER_EXITED));
	ASSERT_EQ(0, xt_epoll_wait_one(ep, &e, 0));
	close(ep);
	ASSERT_EQ(0, xpmem_release(apid));
}

/*
 * OWNERS owners of PERMITS permits each; one removes, the others exit or
 * are killed; a quarter of the permits are released before anything is
 * read.  Every other permit is heard of exactly once, read 1..4 at a
 * time, and nothing is left: no event, no descriptor.
 */
TEST_F(ev, many_permits_nothing_lost_nothing_leaked)
{
	static xpmem_apid_t apid[OWNERS][PERMITS];
	struct owner o[OWNERS];
	struct xpmem_ext_event ev[4];
	int i, j, k, n, got = 0, want = 0, seen[OWNERS][PERMITS];
	int fds = count_fds();

	memset(seen, 0, sizeof(seen));
	for (i = 0; i < OWNERS; i++) {
		ASSERT_EQ(0, owner_start(&o[i]));
		for (j = 0; j < PERMITS; j++) {
			apid[i][j] = xpmem_get(o[i].segid, XPMEM_RDONLY,
					       XPMEM_PERMIT_MODE, NULL);
			ASSERT_LT(0, apid[i][j]);
		}
	}
	for (i = 0; i < OWNERS; i++)
		for (j = 0; j < PERMITS; j += 4) {
			ASSERT_EQ(0, xpmem_release(apid[i][j]));
			seen[i][j] = -1;	/* no event for it */
		}
	ASSERT_EQ(0, owner_do(&o[0], 'r'));
	for (i = 0; i < OWNERS; i++)
		ASSERT_EQ(0, owner_do(&o[i], i & 1 ? 'k' : 'x'));
	want = OWNERS * (PERMITS - PERMITS / 4);
	while (got < want) {
		n = xpmem_ext_events(ev, 1 + got % 4);
		ASSERT_LE(0, n);
		if (!n) {
			ASSERT_TRUE(ev_wait(self->fd));
			continue;
		}
		for (k = 0; k < n; k++) {
			for (i = 0; i < OWNERS && o[i].segid != ev[k].segid; i++)
				;
			ASSERT_GT(OWNERS, i);
			for (j = 0; j < PERMITS && apid[i][j] != ev[k].apid; j++)
				;
			ASSERT_GT(PERMITS, j);
			ASSERT_EQ(0, seen[i][j]);
			seen[i][j] = 1;
			ASSERT_EQ(i ? XPMEM_EXT_EVENT_OWNER_EXITED :
				      XPMEM_EXT_EVENT_REMOVED, ev[k].reason);
		}
		got += n;
	}
	ASSERT_EQ(0, xpmem_ext_events(ev, 4));
	for (i = 0; i < OWNERS; i++) {
		for (j = 0; j < PERMITS; j++)
			if (seen[i][j] > 0)
				ASSERT_EQ(0, xpmem_release(apid[i][j]));
		owner_end(&o[i]);
	}
	ASSERT_EQ(fds, count_fds());
}

/*
 * ORDER_N owners, one permit each, gotten in owner order; the segments
 * end in another order (remove, exit, kill -9), each end complete
 * before the next.  The events come oldest end first, taken one at a
 * time.  If @ask_first, the event descriptor exists before the permits;
 * else xpmem_ext_events() is the process's first call of the kind, after
 * every end.  Returns 0 or the line that failed.
 */
#define ORDER_N	4
static int events_in_end_order(int ask_first)
{
	static const int end[ORDER_N] = { 2, 0, 3, 1 };
	static const char how[ORDER_N] = { 'r', 'x', 'k', 'r' };
	struct owner o[ORDER_N];
	xpmem_apid_t apid[ORDER_N];
	struct xpmem_ext_event ev;
	int i, n, got = 0, ret = 0, fd = -1;

	if (ask_first && (fd = xpmem_ext_event_fd()) < 0)
		return __LINE__;
	for (i = 0; i < ORDER_N; i++) {
		if (owner_start(&o[i]))
			return __LINE__;
		apid[i] = xpmem_get(o[i].segid, XPMEM_RDONLY,
				    XPMEM_PERMIT_MODE, NULL);
		if (apid[i] <= 0)
			return __LINE__;
	}
	for (i = 0; i < ORDER_N; i++) {
		struct owner *e = &o[end[i]];

		if (owner_do(e, how[i]))
			return __LINE__;
		if (how[i] != 'r')
			owner_end(e);	/* reaped: its descriptors are closed */
	}
	while (!ret && got < ORDER_N) {
		n = xpmem_ext_events(&ev, 1);
		if (n < 0)
			ret = __LINE__;
		else if (n == 0 && fd < 0 && (fd = xpmem_ext_event_fd()) < 0)
			ret = __LINE__;
		else if (n == 0 && !ev_wait(fd))
			ret = __LINE__;
		else if (n == 1 && (ev.apid != apid[end[got]] ||
				    ev.segid != o[end[got]].segid ||
				    ev.reason != (how[got] == 'r' ?
						  XPMEM_EXT_EVENT_REMOVED :
						  XPMEM_EXT_EVENT_OWNER_EXITED))) {
			fprintf(stderr, "# event %d: owner %d's, want owner %d's\n",
				got, (int)(ev.apid == apid[0] ? 0 :
					   ev.apid == apid[1] ? 1 :
					   ev.apid == apid[2] ? 2 :
					   ev.apid == apid[3] ? 3 : -1),
				end[got]);
			ret = __LINE__;
		}
		got += n > 0 ? n : 0;
	}
	if (!ret && xpmem_ext_events(&ev, 1) != 0)
		ret = __LINE__;
	for (i = 0; i < ORDER_N; i++) {
		if (xpmem_release(apid[i]))
			ret = ret ?: __LINE__;
		if (o[i].pid)
			owner_end(&o[i]);
	}
	return ret;
}

/* The event descriptor was asked for before the permits (the fixture). */
TEST_F(ev, oldest_end_first)
{
	ASSERT_EQ(0, events_in_end_order(1));
}

/*
 * A process that never asked before every segment ended: the ends are
 * still told in the order they happened.
 */
TEST_F(ev, oldest_end_first_asked_late)
{
	pid_t c;
	int st;

	fflush(NULL);
	c = fork();
	ASSERT_LE(0, c);
	if (c == 0) {
		int line;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		line = events_in_end_order(0);
		if (line)
			fprintf(stderr, "# child failed at line %d\n", line);
		_exit(line ? 1 : 0);
	}
	ASSERT_EQ(c, waitpid(c, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
}

/*
 * A peer of another uid than the owner's (root needed: both drop to
 * uids 1000 and 1001) hears of the removal too: on shm its bell comes
 * with the owner's grant.
 */
static int other_uid_peer(xpmem_segid_t segid, int ready)
{
	struct xpmem_ext_event ev;
	xpmem_apid_t apid;
	int fd;

	if (switch_user(BOB, BOB, 0))
		return 10;
	apid = xpmem_get(segid, XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL);
	fd = xpmem_ext_event_fd();
	if (apid <= 0 || fd < 0)
		return 11;
	if (xpmem_ext_events(&ev, 1) != 0 || write(ready, "g", 1) != 1)
		return 12;
	if (!ev_wait(fd) || xpmem_ext_events(&ev, 1) != 1)
		return 13;
	if (ev.segid != segid || ev.apid != apid ||
	    ev.reason != XPMEM_EXT_EVENT_REMOVED)
		return 14;
	return xpmem_release(apid) ? 15 : 0;
}

TEST_F(ev, other_uid_peer_hears_removal)
{
	int rdy[2], st;
	pid_t peer;
	char c;

	if (geteuid())
		SKIP(return, "needs root (uids 1000 and 1001)");
	ASSERT_EQ(0, owner_start_as(&self->o, ALICE));
	ASSERT_EQ(0, pipe2(rdy, O_CLOEXEC));
	fflush(NULL);
	peer = fork();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(rdy[0]);
		_exit(other_uid_peer(self->o.segid, rdy[1]));
	}
	close(rdy[1]);
	ASSERT_EQ(1, read(rdy[0], &c, 1));
	close(rdy[0]);
	ASSERT_EQ(0, owner_do(&self->o, 'r'));
	ASSERT_EQ(peer, waitpid(peer, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
}

/* ---- ZERO_REVOKED (kernel backend) --------------------------------------- */

static __thread sigjmp_buf spin_env;

static void spin_sigbus(int sig)
{
	siglongjmp(spin_env, sig);
}

struct spinner {
	volatile unsigned char *p;
	volatile int stop, zeros, signals, bad;
	volatile unsigned long passes;
};

static void *spin(void *arg)
{
	struct spinner *s = arg;

	if (sigsetjmp(spin_env, 1)) {
		s->signals++;
		return NULL;
	}
	while (!s->stop) {
		int zero = 1;

		for (size_t i = 0; i < NPAGES * page; i += page) {
			unsigned char c = s->p[i];

			if (c && c != 'O')
				s->bad++;
			zero &= !c;
		}
		if (zero)
			s->zeros = 1;
		s->passes++;
	}
	return NULL;
}

TEST_F(ev, zero_revoked_spinner_survives_kill9)
{
	struct sigaction sa = { .sa_handler = spin_sigbus }, old[2];
	struct spinner s = { 0 };
	struct xpmem_addr addr;
	xpmem_apid_t apid;
	unsigned char *a;
	pthread_t th;

	if (!IS_KERNEL)
		SKIP(return, "shm never revokes: no ZERO_REVOKED");
	ASSERT_EQ(0, owner_start(&self->o));
	apid = xpmem_get(self->o.segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, apid);
	addr = (struct xpmem_addr){ .apid = apid, .offset = 0 };
	a = xpmem_ext_attach(addr, NPAGES * page, NULL,
			     XPMEM_EXT_ATTACH_ZERO_REVOKED);
	ASSERT_NE((void *)-1, a);
	ASSERT_EQ('O', a[0]);
	sigaction(SIGBUS, &sa, &old[0]);
	sigaction(SIGSEGV, &sa, &old[1]);
	s.p = a;
	ASSERT_EQ(0, pthread_create(&th, NULL, spin, &s));
	while (!s.passes && !s.signals)
		sched_yield();
	ASSERT_EQ(0, owner_do(&self->o, 'k'));
	ASSERT_EQ(0, expect_events(self->fd, self->o.segid, &apid, 1,
				   XPMEM_EXT_EVENT_OWNER_EXITED));
	while (!s.zeros && !s.signals)
		sched_yield();
	s.stop = 1;
	pthread_join(th, NULL);
	sigaction(SIGBUS, &old[0], NULL);
	sigaction(SIGSEGV, &old[1], NULL);
	ASSERT_EQ(0, s.signals);
	ASSERT_EQ(0, s.bad);
	ASSERT_EQ(1, s.zeros);
	a[page] = 'W';		/* goes nowhere anyone else sees */
	ASSERT_EQ('W', a[page]);
	ASSERT_EQ(0, a[2 * page]);
	ASSERT_EQ(0, xpmem_release(apid));
}

TEST_HARNESS_MAIN
