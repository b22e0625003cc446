// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_ids - who may use a segid or an apid: a segment is found only in
 * its IPC namespace, also when that namespace is gone and another takes
 * its place; an exited owner's segments are gone even while another
 * process holds its /dev/xpmem descriptor; another process's apid and
 * segid are refused, guessed ones are not found.
 *
 * Runs as root inside the test VM with the module loaded; skips when
 * /dev/xpmem is absent.  Multi-process tests fork, synchronise over pipes
 * and check exit statuses.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/random.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(ids)
{
	int fd;
	long segs, permits, atts;
	struct kids kids;		/* children, for the teardown */
};

FIXTURE_SETUP(ids)
{
	self->kids.n = 0;
	XP_FIXTURE_OPEN();
}

/* Ends leftover children, also after a failure. */
FIXTURE_TEARDOWN(ids)
{
	kids_reap(&self->kids);
	if (self->fd >= 0)
		close(self->fd);
}

#define IPC_NS_TRIES	200

/*
 * A segment is found only in the IPC namespace it was made in, also after
 * that namespace is freed.  P makes a 0666 segment in a fresh namespace
 * and leaves it (freeing the namespace if the segment does not hold it);
 * Q keeps creating namespaces, one of which could reuse the freed object
 * and match.  GET from every other namespace is ENOENT.
 */
TEST_F(ids, ipc_namespace_left_and_reused_enoent)
{
	xpmem_segid_t segid;
	cpu_set_t one;
	xpmem_apid_t apid;
	char *buf;
	pid_t pid;

	/*
	 * One CPU for P, Q and the kworker that frees P's namespace (queued
	 * on the CPU that dropped it): the freed object is then on top of
	 * that CPU's slab freelist when Q allocates its next namespace.
	 */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0666, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDONLY, &apid));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	/* no task is left in the segment's namespace */
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	ASSERT_EQ(-ENOENT, xp_get(self->fd, segid, XPMEM_RDONLY, &apid));

	pid = kids_fork(&self->kids);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = xp_open(), i, r;
		xpmem_apid_t ap;

		if (fd < 0)
			_exit(1);
		for (i = 0; i < IPC_NS_TRIES; i++) {
			if (unshare(CLONE_NEWIPC))
				_exit(2);
			r = xp_get(fd, segid, XPMEM_RDONLY, &ap);
			if (r == 0)
				_exit(3);	/* matched a reused namespace */
			if (r != -ENOENT)
				_exit(4);
		}
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

/*
 * Segments went away only with the last
 * close of the owner's descriptor, so a process that had been passed the
 * fd kept an exited owner's segments alive for GET and ATTACH.  Both are
 * ENOENT once the owner has exited.
 */
TEST_F(ids, get_attach_after_owner_exit_enoent_with_fd_held)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid, a2;
	struct chan co, ch;
	pid_t owner, helper;
	int sv[2];
	void *va;
	char m;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, chan_init(&ch));
	helper = kids_fork(&self->kids);
	ASSERT_GE(helper, 0);
	if (helper == 0) {
		int kept;

		chan_child(&ch);
		close(sv[0]);
		kept = recv_fd(sv[1]);
		if (kept < 0)
			_exit(1);
		send_msg(ch.to_parent[1], "h", 1);
		recv_msg(ch.to_child[0], &m, 1);
		close(kept);
		_exit(0);
	}
	chan_parent(&ch);
	close(sv[1]);

	ASSERT_EQ(0, chan_init(&co));
	owner = kids_fork(&self->kids);
	ASSERT_GE(owner, 0);
	if (owner == 0) {
		char *b = map_anon(PAGE);
		xpmem_segid_t s;
		int fd = xp_open();

		chan_child(&co);
		if (fd < 0 || !b || xp_make(fd, b, PAGE, 0666, &s))
			_exit(1);
		send_msg(co.to_parent[1], &s, sizeof(s));
		if (recv_msg(co.to_child[0], &m, 1))
			_exit(2);
		if (send_fd(sv[0], fd))
			_exit(3);
		_exit(0);
	}
	chan_parent(&co);
	ASSERT_EQ(0, recv_msg(co.to_parent[0], &segid, sizeof(segid)));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, send_msg(co.to_child[1], "g", 1));
	ASSERT_EQ(0, wait_child(owner));
	/* the helper holds the owner's /dev/xpmem descriptor */
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1));

	ASSERT_EQ(-ENOENT, xp_get(self->fd, segid, XPMEM_RDONLY, &a2));
	ASSERT_EQ(-ENOENT, xp_attach(self->fd, apid, 0, PAGE, NULL, &va));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(helper));
	close(sv[0]);
	ASSERT_COUNTERS_AT_BASE();
}

#define GUESSES		1000

/* A random positive 63-bit id, never 0. */
static int64_t random_id(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)rand() << 32 | (uint64_t)rand();
	v >>= 1;
	return v ? (int64_t)v : 1;
}

/*
 * Another process's apid is refused
 * for ATTACH and RELEASE (EACCES), another process's segid for REMOVE;
 * guessed segids and apids are ENOENT.
 */
TEST_F(ids, foreign_apid_and_guessed_ids_refused)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *buf;
	void *va;
	pid_t pid;
	int i;

	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	buf[0] = 'i';
	ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0666, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));

	pid = kids_fork(&self->kids);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = xp_open();

		if (fd < 0)
			_exit(1);
		if (xp_attach(fd, apid, 0, PAGE, NULL, &va) != -EACCES)
			_exit(2);
		if (xp_release(fd, apid) != -EACCES)
			_exit(3);
		if (xp_remove(fd, segid) != -EACCES)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	/* the permit still works for its owner */
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, PAGE, NULL, &va));
	ASSERT_EQ('i', *(char *)va);
	ASSERT_EQ(0, xp_detach(self->fd, va));

	for (i = 0; i < GUESSES; i++) {
		int64_t id = random_id();
		xpmem_apid_t ap;

		if (id == segid || id == apid)
			continue;
		ASSERT_EQ(-ENOENT, xp_get(self->fd, id, XPMEM_RDONLY, &ap));
		ASSERT_EQ(-ENOENT, xp_attach(self->fd, id, 0, PAGE, NULL,
					     &va));
	}
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

TEST_HARNESS_MAIN
