// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_events.c - revocation without SIGBUS, and events
 *
 * XPMEM_EXT_ATTACH_ZERO_REVOKED: once its segment is removed, its permit
 * released or its owner gone, an attachment reads zeros and takes writes
 * into pages of its own, with no signal; without the flag, SIGBUS as
 * before; a hole in a live owner is SIGBUS either way.  Events: read(2)
 * and poll(2) of /dev/xpmem tell the process that got a permit that its
 * segment ended (REMOVE, owner exit, kill -9 of the owner, the owner's
 * exit while another process holds its file), with epoll and io_uring's
 * POLL_ADD too; the record format and read's validation; many permits,
 * many events, none lost and nothing left behind.  The pages a revoked
 * attachment takes writes into count in the attacher's RSS.
 */
#define _GNU_SOURCE
#include <liburing.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

#define LEN		(64 * PAGE)
#define EV_SIZE		sizeof(struct xpmem_ext_event)

_Static_assert(sizeof(struct xpmem_ext_event) == 32, "event size");
_Static_assert(offsetof(struct xpmem_ext_event, apid) == 8, "apid");
_Static_assert(offsetof(struct xpmem_ext_event, reason) == 16, "reason");
_Static_assert(offsetof(struct xpmem_ext_event, reserved0) == 20, "res0");
_Static_assert(offsetof(struct xpmem_ext_event, reserved) == 24, "res");

#ifndef RWF_NOWAIT
#define RWF_NOWAIT	0x00000008
#endif

FIXTURE(events)
{
	int fd;			/* the getter's (and attacher's) file */
	int ofd;		/* the owner's, when the owner is this process */
	long segs, permits, atts;
	struct kids kids;
};

FIXTURE_SETUP(events)
{
	self->ofd = -1;
	self->kids.n = 0;
	XP_FIXTURE_OPEN();
	self->ofd = xp_open();
	ASSERT_LE(0, self->ofd);
}

FIXTURE_TEARDOWN(events)
{
	kids_reap(&self->kids);
	if (self->ofd >= 0)
		close(self->ofd);
	if (self->fd >= 0) {
		close(self->fd);
		ASSERT_COUNTERS_AT_BASE();
	}
}

/* EXT_ATTACH of all of @len of @apid with @flags; the address or NULL. */
static void *ext_attach(int fd, xpmem_apid_t apid, size_t len,
			unsigned int flags)
{
	struct xpmem_ext_attach a = {
		.apid = apid, .size = len, .flags = flags,
	};

	if (xp_ioctl(fd, XPMEM_CMD_EXT_ATTACH, &a))
		return NULL;
	return (void *)(uintptr_t)a.vaddr;
}

/* Non-blocking read of up to @max events: how many, or -errno. */
static int ev_read(int fd, struct xpmem_ext_event *ev, int max)
{
	struct iovec iov = { .iov_base = ev, .iov_len = max * EV_SIZE };
	ssize_t n = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);

	if (n < 0)
		return -errno;
	if (n % EV_SIZE)
		return -EPROTO;
	return n / EV_SIZE;
}

/*
 * Wait (bounded: 60 s) until @fd polls readable; 1, or 0 on timeout.
 * io_uring's completions run as task work, which interrupts a waiting
 * poll or epoll_wait with EINTR: wait again.
 */
static int ev_wait(int fd)
{
	return xt_wait_readable(fd, 60000);
}

/* The one event a test expects, checked field by field; 0 or a line. */
static int ev_expect(int fd, xpmem_segid_t segid, xpmem_apid_t apid,
		     unsigned int reason)
{
	struct xpmem_ext_event ev[2];

	if (!ev_wait(fd))
		return __LINE__;
	if (ev_read(fd, ev, 2) != 1)
		return __LINE__;
	if (ev[0].segid != segid || ev[0].apid != apid ||
	    ev[0].reason != reason || ev[0].reserved0 || ev[0].reserved)
		return __LINE__;
	if (ev_read(fd, ev, 2) != -EAGAIN)	/* one per permit */
		return __LINE__;
	return 0;
}

/*
 * An owner child: maps @len bytes of 'O', MAKEs them (0600) through its
 * own file, sends the segid (and, if @sock >= 0, its device fd over that
 * socket), then waits for a byte on @c and does what it says: 'r' REMOVE
 * and wait again, 'x' exit, 'h' munmap the second page and wait again.
 */
static void owner_child(struct chan *c, size_t len, int sock)
{
	int fd = xp_open();
	xpmem_segid_t segid;
	char *buf = map_anon(len), cmd;

	chan_child(c);
	if (fd < 0 || !buf)
		_exit(1);
	memset(buf, 'O', len);
	if (xp_make(fd, buf, len, 0600, &segid))
		_exit(2);
	if (sock >= 0 && send_fd(sock, fd))
		_exit(3);
	if (send_msg(c->to_parent[1], &segid, sizeof(segid)))
		_exit(4);
	while (recv_msg(c->to_child[0], &cmd, 1) == 0) {
		if (cmd == 'r' && xp_remove(fd, segid))
			_exit(5);
		if (cmd == 'h' && munmap(buf + PAGE, PAGE))
			_exit(6);
		if (cmd == 'x')
			_exit(0);
		if (send_msg(c->to_parent[1], &cmd, 1))
			_exit(7);
	}
	_exit(0);
}

/* Fork an owner child; its segid in *@segid.  The child's pid, or -1. */
static pid_t owner_start(struct kids *k, struct chan *c, size_t len, int sock,
			 xpmem_segid_t *segid)
{
	pid_t pid;

	if (chan_init(c))
		return -1;
	pid = kids_fork(k);
	if (pid == 0)
		owner_child(c, len, sock);
	chan_parent(c);
	if (pid < 0 || recv_msg(c->to_parent[0], segid, sizeof(*segid)))
		return -1;
	return pid;
}

/* Tell the owner child @cmd and wait for its acknowledgement. */
static int owner_do(struct chan *c, char cmd)
{
	char ack;

	return send_msg(c->to_child[1], &cmd, 1) ||
	       recv_msg(c->to_parent[0], &ack, 1) || ack != cmd ? -1 : 0;
}

TEST_F(events, query_reports_both_features)
{
	struct xpmem_ext_query q = {};

	ASSERT_EQ(0, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, &q));
	ASSERT_NE(0, q.features & XPMEM_EXT_KF_ZERO_REVOKED);
	ASSERT_NE(0, q.features & XPMEM_EXT_KF_EVENTS);
}

TEST_F(events, read_validates_and_never_blocks_when_asked)
{
	struct xpmem_ext_event ev[1];
	struct pollfd p = { .fd = self->fd, .events = POLLIN };
	char small[EV_SIZE - 1];
	int nb;

	ASSERT_EQ(-1, read(self->fd, small, sizeof(small)));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, read(self->fd, small, 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-EAGAIN, ev_read(self->fd, ev, 1));
	ASSERT_EQ(0, poll(&p, 1, 0));
	/* an O_NONBLOCK file: EAGAIN from plain read() */
	nb = open(XPMEM_DEV_PATH, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, nb);
	ASSERT_EQ(-1, read(nb, ev, sizeof(ev)));
	ASSERT_EQ(EAGAIN, errno);
	close(nb);
}

/* A blocking read waits, and a signal interrupts it (EINTR, no restart). */
static void on_alarm(int sig)
{
	(void)sig;
}

TEST_F(events, blocking_read_is_interruptible)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct xpmem_ext_event ev;

	ASSERT_EQ(0, sigaction(SIGALRM, &sa, &old));	/* no SA_RESTART */
	alarm(1);
	ASSERT_EQ(-1, read(self->fd, &ev, sizeof(ev)));
	ASSERT_EQ(EINTR, errno);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
}

TEST_F(events, remove_queues_one_event_for_each_permit)
{
	char *buf = map_anon(LEN);
	xpmem_segid_t segid;
	xpmem_apid_t rw, ro, other;
	struct xpmem_ext_event ev[4];
	int i, n;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, xp_make(self->ofd, buf, LEN, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &rw));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDONLY, &ro));
	ASSERT_EQ(0, xp_get(self->ofd, segid, XPMEM_RDONLY, &other));
	ASSERT_EQ(-EAGAIN, ev_read(self->fd, ev, 4));

	ASSERT_EQ(0, xp_remove(self->ofd, segid));
	ASSERT_TRUE(ev_wait(self->fd));
	n = ev_read(self->fd, ev, 4);
	ASSERT_EQ(2, n);		/* both of this file's, in GET order */
	ASSERT_EQ(rw, ev[0].apid);
	ASSERT_EQ(ro, ev[1].apid);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(segid, ev[i].segid);
		ASSERT_EQ(XPMEM_EXT_EVENT_REMOVED, ev[i].reason);
		ASSERT_EQ(0, ev[i].reserved0);
		ASSERT_EQ(0, ev[i].reserved);
	}
	ASSERT_EQ(-EAGAIN, ev_read(self->fd, ev, 4));
	/* the owner's own permit: its event on its own file */
	ASSERT_EQ(0, ev_expect(self->ofd, segid, other,
			       XPMEM_EXT_EVENT_REMOVED));
	ASSERT_EQ(0, xp_release(self->fd, rw));
	ASSERT_EQ(0, xp_release(self->fd, ro));
	ASSERT_EQ(0, xp_release(self->ofd, other));
	munmap(buf, LEN);
}

TEST_F(events, released_permit_takes_its_event_back)
{
	char *buf = map_anon(LEN);
	xpmem_segid_t segid;
	xpmem_apid_t a, b;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, xp_make(self->ofd, buf, LEN, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &a));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &b));
	ASSERT_EQ(0, xp_remove(self->ofd, segid));
	ASSERT_EQ(0, xp_release(self->fd, a));	/* queued, not read */
	ASSERT_EQ(0, ev_expect(self->fd, segid, b, XPMEM_EXT_EVENT_REMOVED));
	ASSERT_EQ(0, xp_release(self->fd, b));
	munmap(buf, LEN);
}

TEST_F(events, bad_buffer_loses_nothing)
{
	char *buf = map_anon(LEN);
	xpmem_segid_t segid;
	xpmem_apid_t a;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, xp_make(self->ofd, buf, LEN, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &a));
	ASSERT_EQ(0, xp_remove(self->ofd, segid));
	void *none = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	ASSERT_NE(MAP_FAILED, none);
	ASSERT_EQ(-1, read(self->fd, none, EV_SIZE));
	ASSERT_EQ(EFAULT, errno);
	munmap(none, PAGE);
	ASSERT_EQ(0, ev_expect(self->fd, segid, a, XPMEM_EXT_EVENT_REMOVED));
	ASSERT_EQ(0, xp_release(self->fd, a));
	munmap(buf, LEN);
}

TEST_F(events, another_process_reading_gets_noproc)
{
	pid_t pid = kids_fork(&self->kids);
	char ev[EV_SIZE];

	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(read(self->fd, ev, sizeof(ev)) == -1 &&
		      errno == XPMEM_ERRNO_NOPROC ? 0 : 1);
	ASSERT_EQ(0, wait_child(pid));
}

/*
 * The owner child exits ('x'), is killed ('k'), or exits while this
 * process holds its device file ('h'): OWNER_EXITED arrives, at once.
 * Return: 0, or the line that failed.
 */
static int owner_gone(int fd, struct kids *kids, int how)
{
	int sv[2] = { -1, -1 }, held = -1, ret = 0;
	struct xpmem_ext_event ev;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	struct chan c;
	pid_t pid;

	if (how == 'h' && socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return __LINE__;
	pid = owner_start(kids, &c, LEN, sv[1], &segid);
	if (pid <= 0)
		return __LINE__;
	if (how == 'h')
		held = recv_fd(sv[0]);	/* the owner's file, kept here */
	if ((how == 'h' && held < 0) ||
	    xp_get(fd, segid, XPMEM_RDONLY, &apid) ||
	    ev_read(fd, &ev, 1) != -EAGAIN)
		ret = __LINE__;
	else if (how == 'k' ? kill(pid, SIGKILL) :
			      send_msg(c.to_child[1], "x", 1))
		ret = __LINE__;
	else if (ev_expect(fd, segid, apid, XPMEM_EXT_EVENT_OWNER_EXITED))
		ret = __LINE__;
	else if (xp_release(fd, apid))
		ret = __LINE__;
	wait_child(pid);
	if (held >= 0)
		close(held);
	if (sv[0] >= 0) {
		close(sv[0]);
		close(sv[1]);
	}
	close(c.to_child[1]);
	close(c.to_parent[0]);
	return ret;
}

TEST_F(events, owner_exit_queues_owner_exited)
{
	ASSERT_EQ(0, owner_gone(self->fd, &self->kids, 'x'));
}

TEST_F(events, owner_kill9_queues_owner_exited)
{
	ASSERT_EQ(0, owner_gone(self->fd, &self->kids, 'k'));
}

/* Its exit ends its segments now, not at the holder's close. */
TEST_F(events, owner_exit_with_file_held_elsewhere_queues_owner_exited)
{
	ASSERT_EQ(0, owner_gone(self->fd, &self->kids, 'h'));
}

/* A thread that reads an attachment without pause, as a progress thread. */
struct spinner {
	volatile uint64_t *p;
	size_t words;
	volatile int stop;
	volatile int saw_zero;	/* a whole pass of zeros */
	int signals;		/* SIGBUS or SIGSEGV seen */
	int bad;		/* a word neither 'O'-filled nor zero */
	unsigned long passes;
};

static void *spin(void *arg)
{
	struct spinner *s = arg;
	uint64_t v, ones;

	memset(&ones, 'O', sizeof(ones));
	probe_install();
	while (!s->stop) {
		int zeros = 1;

		for (size_t i = 0; i < s->words; i += 512) {
			if (touch_read64(s->p + i, &v)) {
				s->signals++;
				return NULL;
			}
			if (v && v != ones)
				s->bad++;
			zeros &= !v;
		}
		if (zeros)
			s->saw_zero = 1;
		s->passes++;
	}
	return NULL;
}

TEST_F(events, spinning_attacher_sees_zeros_when_owner_killed)
{
	struct spinner s = {};
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	pthread_t th;
	struct chan c;
	char *a;
	pid_t pid;

	pid = owner_start(&self->kids, &c, LEN, -1, &segid);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	a = ext_attach(self->fd, apid, LEN, XPMEM_EXT_ATTACH_ZERO_REVOKED);
	ASSERT_NE(NULL, a);
	ASSERT_EQ('O', a[LEN - 1]);
	s.p = (volatile uint64_t *)a;
	s.words = LEN / sizeof(uint64_t);
	ASSERT_EQ(0, pthread_create(&th, NULL, spin, &s));
	while (!s.passes)	/* it runs over the owner's pages */
		sched_yield();
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(0, ev_expect(self->fd, segid, apid,
			       XPMEM_EXT_EVENT_OWNER_EXITED));
	/* revoked before the event was queued: the next pass is zeros */
	while (!s.saw_zero && !s.signals)
		sched_yield();
	s.stop = 1;
	pthread_join(th, NULL);
	ASSERT_EQ(0, s.signals);
	ASSERT_EQ(0, s.bad);
	ASSERT_EQ(1, s.saw_zero);
	ASSERT_EQ(0, all_bytes(a, LEN, 0));
	/* writes land in pages of this attachment's own */
	probe_install();
	ASSERT_EQ(0, touch_write64((uint64_t *)(a + PAGE), 0x1234));
	ASSERT_EQ(0x1234, *(uint64_t *)(a + PAGE));
	ASSERT_EQ(0, all_bytes(a + 2 * PAGE, LEN - 2 * PAGE, 0));
	wait_child(pid);
	ASSERT_EQ(0, xp_release(self->fd, apid));	/* unmaps it */
	close(c.to_child[1]);
	close(c.to_parent[0]);
}

TEST_F(events, zero_revoked_after_remove_hides_writes)
{
	char *buf = map_anon(LEN), *z1, *z2, *plain;
	xpmem_apid_t a1, a2, a3;
	xpmem_segid_t segid;

	ASSERT_NE(NULL, buf);
	memset(buf, 'O', LEN);
	ASSERT_EQ(0, xp_make(self->ofd, buf, LEN, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &a1));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &a2));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &a3));
	z1 = ext_attach(self->fd, a1, LEN, XPMEM_EXT_ATTACH_ZERO_REVOKED);
	z2 = ext_attach(self->fd, a2, LEN, XPMEM_EXT_ATTACH_ZERO_REVOKED |
					   XPMEM_EXT_ATTACH_POPULATE);
	plain = ext_attach(self->fd, a3, LEN, 0);
	ASSERT_NE(NULL, z1);
	ASSERT_NE(NULL, z2);
	ASSERT_NE(NULL, plain);
	ASSERT_EQ('O', z1[0]);
	z1[PAGE] = 'A';			/* live: reaches the owner */
	ASSERT_EQ('A', buf[PAGE]);

	ASSERT_EQ(0, xp_remove(self->ofd, segid));
	probe_install();
	ASSERT_EQ(0, probe(z1, 0, 0));		/* a read: no signal */
	ASSERT_EQ(0, all_bytes(z1, LEN, 0));
	ASSERT_EQ(0, all_bytes(z2, LEN, 0));
	ASSERT_EQ(SIGBUS, probe(plain, 0, 0));	/* the classic way */
	/* a write after a read of the same page (the zero page first) */
	ASSERT_EQ(0, probe(z1 + PAGE, 1, 'W'));
	ASSERT_EQ('W', z1[PAGE]);
	ASSERT_EQ(0, z1[PAGE + 1]);
	/* a write first, then a read back */
	ASSERT_EQ(0, probe(z1 + 3 * PAGE, 1, 'V'));
	ASSERT_EQ('V', z1[3 * PAGE]);
	/* nobody else sees either */
	ASSERT_EQ('A', buf[PAGE]);
	ASSERT_EQ('O', buf[3 * PAGE]);
	ASSERT_EQ(0, z2[PAGE]);
	ASSERT_EQ(0, z2[3 * PAGE]);
	/* munmap and MADV_DONTNEED keep what it wrote, as its own memory */
	ASSERT_EQ(0, madvise(z1, LEN, MADV_DONTNEED));
	ASSERT_EQ('W', z1[PAGE]);
	ASSERT_EQ(0, xp_release(self->fd, a1));
	ASSERT_EQ(0, xp_release(self->fd, a2));
	ASSERT_EQ(0, xp_release(self->fd, a3));
	munmap(buf, LEN);
}

/* VmRSS of this process in KiB (/proc/self/status), or -1. */
static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* The revoked attachment of zero_revoked_pages_count_in_rss: 16 MiB. */
#define RSS_LEN		(16UL << 20)
#define RSS_KIB		((long)(RSS_LEN >> 10))

/* Pages of @z (RSS_LEN) that do not hold what the RSS test wrote. */
static long rss_bad_pages(const char *z)
{
	long bad = 0;
	size_t i;

	for (i = 0; i < RSS_LEN; i += PAGE)
		bad += z[i] != ((char)(i / PAGE) | 1) || z[i + 1];
	return bad;
}

/*
 * The pages a revoked attachment takes writes into are the attacher's
 * memory and count as such: a segment of a hole (no owner memory behind
 * it), attached ZERO_REVOKED, removed and written one byte a page, grows
 * the attacher's RSS (what the OOM killer weighs) by about its size, and
 * reads back what was written; moved by mremap(), it keeps both; it
 * leaves the RSS as it is unmapped, half by half.
 */
TEST_F(events, zero_revoked_private_pages_count_in_rss)
{
	char *hole = map_anon(2 * RSS_LEN), *z, *to;
	long before, written, half, after;
	xpmem_segid_t segid;
	xpmem_apid_t a;
	size_t i;

	/* the hole, and after it where mremap() moves the attachment */
	ASSERT_NE(NULL, hole);
	to = hole + RSS_LEN;
	ASSERT_EQ(0, munmap(hole, RSS_LEN));
	ASSERT_EQ(0, xp_make(self->ofd, hole, RSS_LEN, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &a));
	z = ext_attach(self->fd, a, RSS_LEN, XPMEM_EXT_ATTACH_ZERO_REVOKED);
	ASSERT_NE(NULL, z);
	ASSERT_EQ(0, xp_remove(self->ofd, segid));
	before = rss_kib();
	ASSERT_LT(0, before);
	for (i = 0; i < RSS_LEN; i += PAGE)
		z[i] = (char)(i / PAGE) | 1;
	written = rss_kib();
	TH_LOG("VmRSS %ld kB, %ld kB after writing %ld KiB", before,
	       written, RSS_KIB);
	/* all of it, but for what else the process may have let go */
	ASSERT_LE(before + RSS_KIB * 15 / 16, written);
	ASSERT_EQ(0, rss_bad_pages(z));
	z = mremap(z, RSS_LEN, RSS_LEN, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	ASSERT_EQ(to, z);
	ASSERT_LE(before + RSS_KIB * 15 / 16, rss_kib());
	ASSERT_EQ(0, rss_bad_pages(z));
	ASSERT_EQ(0, munmap(z, RSS_LEN / 2));
	half = rss_kib();
	ASSERT_GE(written - RSS_KIB / 2 * 15 / 16, half);
	ASSERT_EQ(0, munmap(z + RSS_LEN / 2, RSS_LEN / 2));
	after = rss_kib();
	ASSERT_GT(written - RSS_KIB * 15 / 16, after);
	ASSERT_EQ(0, xp_release(self->fd, a));
}

/* Whether the running kernel is at least @major.@minor. */
static int kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return 0;
	return ma > major || (ma == major && mi >= minor);
}

/*
 * In a child that is alone in its memory cgroup @cg: a revoked
 * ZERO_REVOKED attachment of RSS_LEN written one byte a page grows the
 * cgroup's memory.current by about RSS_LEN; 0 or a line number.
 */
static int revoked_writes_in_memcg(const char *cg)
{
	char *buf = map_anon(RSS_LEN), *z, pid[16];
	int fd = xp_open(), ofd = xp_open();
	long before, written;
	xpmem_segid_t segid;
	xpmem_apid_t a;
	size_t i;

	snprintf(pid, sizeof(pid), "%d", getpid());
	if (sysfs_write(cg, "cgroup.procs", pid))
		return __LINE__;
	if (!buf || fd < 0 || ofd < 0 ||
	    xp_make(ofd, buf, RSS_LEN, 0600, &segid) ||
	    xp_get(fd, segid, XPMEM_RDWR, &a))
		return __LINE__;
	z = ext_attach(fd, a, RSS_LEN, XPMEM_EXT_ATTACH_ZERO_REVOKED);
	if (!z || xp_remove(ofd, segid))
		return __LINE__;
	before = sysfs_read_long(cg, "memory.current");
	for (i = 0; i < RSS_LEN; i += PAGE)
		z[i] = 1;
	written = sysfs_read_long(cg, "memory.current");
	if (before < 0 || written < before + (long)RSS_LEN / 16 * 15) {
		fprintf(stderr, "# memory.current %ld, %ld after the writes\n",
			before, written);
		return __LINE__;
	}
	return 0;
}

/*
 * ... and to its memory cgroup (from 5.11 on: before, a page charged to a
 * cgroup cannot be mapped into a process): the same writes from a process
 * alone in a cgroup of its own grow the cgroup's memory.current by about
 * as much.  Mounts cgroup2 where the rig has not.
 */
TEST_F(events, zero_revoked_private_pages_charge_the_memcg)
{
	char top[] = "/tmp/xpmem-cg.XXXXXX", cg[PATH_MAX];
	const char *root = "/sys/fs/cgroup";
	int mounted = 0;
	pid_t pid;

	if (!kernel_at_least(5, 11))
		SKIP(return, "pages mapped into a process are charged from 5.11");
	if (sysfs_read_long(root, "cgroup.procs") < 0) {
		ASSERT_NE(NULL, mkdtemp(top));
		if (mount("cgroup2", top, "cgroup2", 0, NULL)) {
			rmdir(top);
			SKIP(return, "no cgroup2 (%s)", strerror(errno));
		}
		root = top;
		mounted = 1;
	}
	snprintf(cg, sizeof(cg), "%s/xpmem-zero-%d", root, getpid());
	if (sysfs_write(root, "cgroup.subtree_control", "+memory") ||
	    mkdir(cg, 0755)) {
		if (mounted) {
			umount(top);
			rmdir(top);
		}
		SKIP(return, "no memory controller to use (%s)",
		     strerror(errno));
	}
	pid = kids_fork(&self->kids);
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int line = revoked_writes_in_memcg(cg);

		if (line)
			fprintf(stderr, "# failed at line %d\n", line);
		_exit(!!line);
	}
	EXPECT_EQ(0, wait_child(pid));
	EXPECT_EQ(0, rmdir(cg));
	if (mounted) {
		EXPECT_EQ(0, umount(top));
		EXPECT_EQ(0, rmdir(top));
	}
}

TEST_F(events, zero_revoked_read_only_attachment_reads_zeros)
{
	char *buf = map_anon(LEN), *z;
	xpmem_segid_t segid;
	xpmem_apid_t a;

	ASSERT_NE(NULL, buf);
	memset(buf, 'O', LEN);
	ASSERT_EQ(0, xp_make(self->ofd, buf, LEN, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDONLY, &a));
	z = ext_attach(self->fd, a, LEN, XPMEM_EXT_ATTACH_ZERO_REVOKED);
	ASSERT_NE(NULL, z);
	ASSERT_EQ('O', z[0]);
	ASSERT_EQ(0, xp_remove(self->ofd, segid));
	probe_install();
	ASSERT_EQ(0, probe(z, 0, 0));
	ASSERT_EQ(0, all_bytes(z, LEN, 0));
	ASSERT_EQ(SIGSEGV, probe(z, 1, 'x'));	/* still read-only */
	ASSERT_EQ(0, xp_release(self->fd, a));
	munmap(buf, LEN);
}

TEST_F(events, zero_revoked_hole_in_live_owner_is_sigbus)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	struct chan c;
	pid_t pid;
	char *a;

	pid = owner_start(&self->kids, &c, LEN, -1, &segid);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	a = ext_attach(self->fd, apid, LEN, XPMEM_EXT_ATTACH_ZERO_REVOKED);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, owner_do(&c, 'h'));	/* munmap of its 2nd page */
	probe_install();
	ASSERT_EQ(0, probe(a, 0, 0));
	ASSERT_EQ('O', a[0]);
	ASSERT_EQ(SIGBUS, probe(a + PAGE, 0, 0));
	ASSERT_EQ(SIGBUS, probe(a + PAGE, 1, 'x'));
	ASSERT_EQ(0, send_msg(c.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	close(c.to_child[1]);
	close(c.to_parent[0]);
}

TEST_F(events, epoll_and_io_uring_poll_see_events)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct epoll_event e = { .events = EPOLLIN };
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	struct chan c;
	int ep, ret;
	pid_t pid;

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->fd, &e));
	ret = io_uring_queue_init(4, &ring, 0);
	pid = owner_start(&self->kids, &c, LEN, -1, &segid);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xt_epoll_wait_one(ep, &e, 0));
	if (!ret) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_poll_add(sqe, self->fd, POLLIN);
		sqe->user_data = 7;
		ASSERT_EQ(1, io_uring_submit(&ring));
		ASSERT_EQ(-EAGAIN, io_uring_peek_cqe(&ring, &cqe));
	}
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(1, xt_epoll_wait_one(ep, &e, 60000));
	ASSERT_NE(0, e.events & EPOLLIN);
	if (!ret) {
		struct __kernel_timespec ts = { .tv_sec = 60 };

		ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
		ASSERT_EQ(7, cqe->user_data);
		ASSERT_NE(0, cqe->res & POLLIN);
		io_uring_cqe_seen(&ring, cqe);
		io_uring_queue_exit(&ring);
	} else {
		TH_LOG("no io_uring (%d): POLL_ADD not tested", ret);
	}
	ASSERT_EQ(0, ev_expect(self->fd, segid, apid,
			       XPMEM_EXT_EVENT_OWNER_EXITED));
	ASSERT_EQ(0, xt_epoll_wait_one(ep, &e, 0));	/* read: not ready */
	close(ep);
	wait_child(pid);
	ASSERT_EQ(0, xp_release(self->fd, apid));
	close(c.to_child[1]);
	close(c.to_parent[0]);
}

/*
 * Many owners, many permits: every event arrives once, whatever the
 * reader's buffer, and nothing is left.
 */
#define OWNERS		8
#define PERMITS		16	/* per owner */

TEST_F(events, many_permits_many_events_nothing_lost)
{
	static xpmem_apid_t apid[OWNERS][PERMITS];
	xpmem_segid_t segid[OWNERS];
	struct xpmem_ext_event ev[5];
	struct chan c[OWNERS];
	pid_t pid[OWNERS];
	int i, j, k, n, got = 0, seen[OWNERS][PERMITS] = {};

	for (i = 0; i < OWNERS; i++) {
		pid[i] = owner_start(&self->kids, &c[i], LEN, -1, &segid[i]);
		ASSERT_LT(0, pid[i]);
		for (j = 0; j < PERMITS; j++)
			ASSERT_EQ(0, xp_get(self->fd, segid[i],
					    XPMEM_RDONLY, &apid[i][j]));
	}
	/* half exit, half are killed; one REMOVEs first */
	ASSERT_EQ(0, owner_do(&c[0], 'r'));
	for (i = 0; i < OWNERS; i++) {
		int r = i & 1 ? kill(pid[i], SIGKILL) :
				send_msg(c[i].to_child[1], "x", 1);

		ASSERT_EQ(0, r);
		wait_child(pid[i]);
	}
	while (got < OWNERS * PERMITS) {
		ASSERT_TRUE(ev_wait(self->fd));
		n = ev_read(self->fd, ev, 1 + got % 5);
		ASSERT_LT(0, n);
		for (k = 0; k < n; k++) {
			for (i = 0; i < OWNERS; i++)
				if (ev[k].segid == segid[i])
					break;
			ASSERT_GT(OWNERS, i);
			for (j = 0; j < PERMITS; j++)
				if (ev[k].apid == apid[i][j])
					break;
			ASSERT_GT(PERMITS, j);
			ASSERT_EQ(0, seen[i][j]);
			seen[i][j] = 1;
			ASSERT_EQ(i ? XPMEM_EXT_EVENT_OWNER_EXITED :
				      XPMEM_EXT_EVENT_REMOVED, ev[k].reason);
		}
		got += n;
	}
	ASSERT_EQ(-EAGAIN, ev_read(self->fd, ev, 5));
	for (i = 0; i < OWNERS; i++) {
		for (j = 0; j < PERMITS; j++)
			ASSERT_EQ(0, xp_release(self->fd, apid[i][j]));
		close(c[i].to_child[1]);
		close(c[i].to_parent[0]);
	}
}

/* Closing the getter's file with events queued leaves nothing behind. */
TEST_F(events, close_with_events_queued_frees_them)
{
	char *buf = map_anon(LEN);
	xpmem_segid_t segid;
	xpmem_apid_t a;
	int g = xp_open();
	char *z;

	ASSERT_NE(NULL, buf);
	ASSERT_LE(0, g);
	memset(buf, 'O', LEN);
	ASSERT_EQ(0, xp_make(self->ofd, buf, LEN, 0600, &segid));
	for (int i = 0; i < 32; i++)
		ASSERT_EQ(0, xp_get(g, segid, XPMEM_RDONLY, &a));
	z = ext_attach(g, a, LEN, XPMEM_EXT_ATTACH_ZERO_REVOKED);
	ASSERT_NE(NULL, z);
	ASSERT_EQ('O', z[0]);
	ASSERT_EQ(0, xp_remove(self->ofd, segid));
	ASSERT_TRUE(ev_wait(g));
	close(g);	/* the attachment stays mapped, its permit ends */
	ASSERT_EQ(0, all_bytes(z, LEN, 0));
	ASSERT_EQ(0, munmap(z, LEN));
	munmap(buf, LEN);
}

TEST_HARNESS_MAIN
