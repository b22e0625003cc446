// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_core - selftests of xpmem.ko through the raw classic ioctl ABI:
 * the life of segments, permits and attachments (make, get, attach,
 * detach, release, remove; fork, exit, kill, close, exec), the ABI's
 * layout and arguments, permissions, /proc/xpmem-objects.  How the
 * owner's memory reaches an attacher (faults, mirroring) is in
 * xpmem_fault.c; owner memory behind userfaultfd in xpmem_uffd.c.
 *
 * Runs as root inside the test VM with the module loaded; skips when
 * /dev/xpmem is absent.  Every multi-process test forks, synchronises over
 * pipes and checks exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* ---- fixture ------------------------------------------------------------ */

XP_FIXTURE_DEVICE(xpmem);

TEST_F(xpmem, version)
{
	int v = ioctl(self->fd, XPMEM_CMD_VERSION, NULL);

	ASSERT_GT(v, 0);
	ASSERT_GE(stat_read("segments"), 0);
}

/* Owner and attacher see each other's writes, byte for byte. */
TEST_F(xpmem, two_way_exchange)
{
	const size_t len = 8 * PAGE;
	xpmem_segid_t segid;
	struct chan ch;
	char *buf, m;
	pid_t pid;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	fill(buf, len, 1);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_GT(segid, 0);
	ASSERT_EQ(0, chan_init(&ch));

	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		xpmem_apid_t apid;
		char *a;
		int fd, r;

		r = child_attach(segid, XPMEM_RDWR, 0, len, &fd, &apid, &a);
		if (r)
			_exit(1);
		if (check(a, len, 1))
			_exit(2);
		fill(a + 3 * PAGE, PAGE, 2);
		send_msg(ch.to_parent[1], "w", 1);
		recv_msg(ch.to_child[0], &m, 1);
		if (all_bytes(a, PAGE, 0x5a))
			_exit(3);
		if (xp_detach(fd, a + PAGE) || xp_release(fd, apid))
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1));
	ASSERT_EQ(0, check(buf + 3 * PAGE, PAGE, 2));
	memset(buf, 0x5a, PAGE);
	ASSERT_EQ(0, send_msg(ch.to_child[1], "r", 1));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_EQ(-ENOENT, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/* Several attachers at once, each writing its own page. */
TEST_F(xpmem, many_attachers)
{
	const int n = 6;
	const size_t len = n * PAGE;
	xpmem_segid_t segid;
	pid_t pids[6];
	struct chan ch;
	char *buf, m;
	int i;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	memset(buf, 0, len);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_EQ(0, chan_init(&ch));

	for (i = 0; i < n; i++) {
		pids[i] = fork_child();
		ASSERT_GE(pids[i], 0);
		if (pids[i] == 0) {
			char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

			memset(a + i * PAGE, 'A' + i, PAGE);
			send_msg(ch.to_parent[1], "d", 1);
			/* stay attached until everyone has written */
			recv_msg(ch.to_child[0], &m, 1);
			for (int j = 0; j < n; j++)
				if (all_bytes(a + j * PAGE, PAGE, 'A' + j))
					_exit(2);
			_exit(0);
		}
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, all_bytes(buf + i * PAGE, PAGE, 'A' + i));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, send_msg(ch.to_child[1], "g", 1));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, wait_child(pids[i]));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/* XPMEM_MAXADDR_SIZE exports everything; a hole faults with SIGBUS. */
TEST_F(xpmem, whole_address_space_with_hole)
{
	xpmem_segid_t segid;
	struct chan ch;
	char *buf, m;
	pid_t pid;

	buf = map_anon(3 * PAGE);
	ASSERT_NE(NULL, buf);
	fill(buf, 3 * PAGE, 7);
	ASSERT_EQ(0, munmap(buf + PAGE, PAGE));
	ASSERT_EQ(0, xp_make(self->fd, NULL, XPMEM_MAXADDR_SIZE, 0600,
			     &segid));
	ASSERT_EQ(0, chan_init(&ch));

	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		xpmem_apid_t apid;
		char *a;
		int fd;

		if (child_attach(segid, XPMEM_RDWR, (uintptr_t)buf, 3 * PAGE,
				 &fd, &apid, &a))
			_exit(1);
		if (check(a, PAGE, 7))
			_exit(2);
		if (probe(a + PAGE, 0, 0) != SIGBUS)
			_exit(3);
		if (probe(a + 2 * PAGE, 0, 0))
			_exit(4);
		for (size_t i = 0; i < PAGE; i++)
			if ((unsigned char)a[2 * PAGE + i] !=
			    (unsigned char)(7 * 131 + (2 * PAGE + i) * 7 +
					    ((2 * PAGE + i) >> 12)))
				_exit(5);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	(void)m;
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
	munmap(buf + 2 * PAGE, PAGE);
}

/* Malformed requests fail with the documented errno, one at a time. */
TEST_F(xpmem, invalid_arguments)
{
	const size_t len = 4 * PAGE;
	struct xpmem_cmd_make mk;
	struct xpmem_cmd_get g;
	struct xpmem_cmd_attach at;
	xpmem_segid_t segid, s2;
	xpmem_apid_t apid, a2;
	char *buf;
	void *a;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);

	/* MAKE */
	ASSERT_EQ(-EINVAL, xp_make(self->fd, buf + 1, PAGE, 0600, &s2));
	ASSERT_EQ(-EINVAL, xp_make(self->fd, buf, 0, 0600, &s2));
	ASSERT_EQ(-EINVAL, xp_make(self->fd, buf, PAGE + 1, 0600, &s2));
	ASSERT_EQ(-EINVAL, xp_make(self->fd, buf, -2 * PAGE, 0600, &s2));
	ASSERT_EQ(-EINVAL, xp_make(self->fd, buf, PAGE, 01000, &s2));
	mk = (struct xpmem_cmd_make){ .vaddr = (uintptr_t)buf, .size = PAGE,
		.permit_type = 2, .permit_value = 0600 };
	ASSERT_EQ(-EINVAL, xp_ioctl(self->fd, XPMEM_CMD_MAKE, &mk));
	ASSERT_EQ(-EFAULT, xp_ioctl(self->fd, XPMEM_CMD_MAKE, (void *)8));

	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));

	/* GET */
	ASSERT_EQ(-EINVAL, xp_get(self->fd, segid, 0, &a2));
	ASSERT_EQ(-EINVAL, xp_get(self->fd, segid, 3, &a2));
	ASSERT_EQ(-ENOENT, xp_get(self->fd, segid ^ 0x10000, XPMEM_RDWR, &a2));
	ASSERT_EQ(-EINVAL, xp_get(self->fd, -5, XPMEM_RDWR, &a2));
	g = (struct xpmem_cmd_get){ .segid = segid, .flags = XPMEM_RDWR,
		.permit_type = 7 };
	ASSERT_EQ(-EINVAL, xp_ioctl(self->fd, XPMEM_CMD_GET, &g));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_GT(apid, 0);

	/* ATTACH */
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, apid, 1, PAGE, NULL, &a));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, apid, len, PAGE, NULL, &a));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, apid, PAGE, len, NULL, &a));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, apid, 0, 0, NULL, &a));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, apid, 0, -PAGE, NULL, &a));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, apid, 0, PAGE,
				     (void *)(0x10000 + 5), &a));
	ASSERT_EQ(-ENOENT, xp_attach(self->fd, apid ^ 0x10000, 0, PAGE, NULL,
				     &a));
	at = (struct xpmem_cmd_attach){ .apid = apid, .size = PAGE,
		.flags = 1 };
	ASSERT_EQ(-EINVAL, xp_ioctl(self->fd, XPMEM_CMD_ATTACH, &at));
	/* the last page exactly is fine */
	ASSERT_EQ(0, xp_attach(self->fd, apid, len - PAGE, PAGE, NULL, &a));
	ASSERT_EQ(0, probe(a, 1, 'z'));
	ASSERT_EQ('z', buf[len - PAGE]);
	ASSERT_EQ(0, xp_detach(self->fd, a));

	/* DETACH, RELEASE, REMOVE, unknown command */
	ASSERT_EQ(-EINVAL, xp_detach(self->fd, buf));
	ASSERT_EQ(-ENOENT, xp_release(self->fd, apid ^ 0x10000));
	ASSERT_EQ(-ENOENT, xp_remove(self->fd, segid ^ 0x10000));
	ASSERT_EQ(-ENOTTY, xp_ioctl(self->fd, _IO('x', 42), NULL));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(-ENOENT, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/* The classic structs, built by hand at the historical offsets. */
TEST_F(xpmem, classic_abi_layout)
{
	unsigned char mk[40], g[32], at[40], dt[8], rl[8], rm[8];
	uint64_t u, segid, apid, vaddr;
	int i32;
	char *buf;

	ASSERT_EQ(40, sizeof(struct xpmem_cmd_make));
	ASSERT_EQ(32, offsetof(struct xpmem_cmd_make, segid));
	ASSERT_EQ(32, sizeof(struct xpmem_cmd_get));
	ASSERT_EQ(24, offsetof(struct xpmem_cmd_get, apid));
	ASSERT_EQ(40, sizeof(struct xpmem_cmd_attach));
	ASSERT_EQ(36, offsetof(struct xpmem_cmd_attach, flags));
	ASSERT_EQ(0x7800, XPMEM_CMD_VERSION);
	ASSERT_EQ(0x7808, XPMEM_CMD_FORK_END);

	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	strcpy(buf, "classic");

	memset(mk, 0, sizeof(mk));
	u = (uintptr_t)buf;
	memcpy(mk + 0, &u, 8);
	u = PAGE;
	memcpy(mk + 8, &u, 8);
	i32 = XPMEM_PERMIT_MODE;
	memcpy(mk + 16, &i32, 4);
	u = 0600;
	memcpy(mk + 24, &u, 8);
	ASSERT_EQ(0, ioctl(self->fd, _IO('x', 1), mk));
	memcpy(&segid, mk + 32, 8);
	ASSERT_GT((int64_t)segid, 0);

	memset(g, 0, sizeof(g));
	memcpy(g + 0, &segid, 8);
	i32 = XPMEM_RDWR;
	memcpy(g + 8, &i32, 4);
	i32 = XPMEM_PERMIT_MODE;
	memcpy(g + 12, &i32, 4);
	ASSERT_EQ(0, ioctl(self->fd, _IO('x', 3), g));
	memcpy(&apid, g + 24, 8);
	ASSERT_GT((int64_t)apid, 0);

	memset(at, 0, sizeof(at));
	memcpy(at + 0, &apid, 8);
	u = PAGE;
	memcpy(at + 16, &u, 8);
	memcpy(at + 32, &self->fd, 4);
	ASSERT_EQ(0, ioctl(self->fd, _IO('x', 5), at));
	memcpy(&vaddr, at + 24, 8);
	ASSERT_NE(0, vaddr);
	ASSERT_EQ(0, strcmp((char *)(uintptr_t)vaddr, "classic"));

	ASSERT_EQ(0, ioctl(self->fd, _IO('x', 7), NULL));
	ASSERT_EQ(0, ioctl(self->fd, _IO('x', 8), NULL));
	memcpy(dt, &vaddr, 8);
	ASSERT_EQ(0, ioctl(self->fd, _IO('x', 6), dt));
	memcpy(rl, &apid, 8);
	ASSERT_EQ(0, ioctl(self->fd, _IO('x', 4), rl));
	memcpy(rm, &segid, 8);
	ASSERT_EQ(0, ioctl(self->fd, _IO('x', 2), rm));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

/* A child that inherited the fd but never opened the device: NOPROC. */
TEST_F(xpmem, noproc_after_fork)
{
	pid_t pid = fork_child();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		xpmem_segid_t s;
		char *b = map_anon(PAGE);
		int fd;

		if (!b)
			_exit(1);
		if (xp_make(self->fd, b, PAGE, 0600, &s) != -XPMEM_ERRNO_NOPROC)
			_exit(2);
		fd = xp_open();
		if (fd < 0 || xp_make(fd, b, PAGE, 0600, &s))
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_COUNTERS_AT_BASE();
}

struct perm_case {
	int mode;
	uid_t uid;
	gid_t gid;
	int rdonly_ok;
	int rdwr_ok;
};

/* Owner is uid/gid 1000; accessors: same uid, same group, other, root. */
TEST_F(xpmem, permission_matrix)
{
	static const struct perm_case cases[] = {
		{ 0600, 1000, 1000, 1, 1 }, { 0600, 1001, 1000, 0, 0 },
		{ 0600, 1002, 1002, 0, 0 }, { 0640, 1000, 1000, 1, 1 },
		{ 0640, 1001, 1000, 1, 0 }, { 0640, 1002, 1002, 0, 0 },
		{ 0666, 1001, 1000, 1, 1 }, { 0666, 1002, 1002, 1, 1 },
		{ 0604, 1002, 1002, 1, 0 }, { 0000, 0, 0, 1, 1 },
	};
	struct chan ch;
	unsigned int i;
	pid_t owner;
	char m;

	ASSERT_EQ(0, chan_init(&ch));
	owner = fork_child();
	ASSERT_GE(owner, 0);
	if (owner == 0) {
		xpmem_segid_t segs[10];
		char *b;
		int fd;

		if (setgroups(0, NULL) || setgid(1000) || setuid(1000))
			_exit(1);
		fd = xp_open();
		b = map_anon(PAGE);
		if (fd < 0 || !b)
			_exit(2);
		for (i = 0; i < ARRAY_SIZE(cases); i++)
			if (xp_make(fd, b, PAGE, cases[i].mode, &segs[i]))
				_exit(3);
		send_msg(ch.to_parent[1], segs, sizeof(segs));
		recv_msg(ch.to_child[0], &m, 1);
		_exit(0);
	}
	{
		xpmem_segid_t segs[10];

		ASSERT_EQ(0, recv_msg(ch.to_parent[0], segs, sizeof(segs)));
		for (i = 0; i < ARRAY_SIZE(cases); i++) {
			const struct perm_case *c = &cases[i];
			pid_t pid = fork_child();

			ASSERT_GE(pid, 0);
			if (pid == 0) {
				xpmem_apid_t apid;
				int fd, r1, r2;

				if (c->uid && (setgroups(0, NULL) ||
					       setgid(c->gid) ||
					       setuid(c->uid)))
					_exit(1);
				fd = xp_open();
				if (fd < 0)
					_exit(2);
				r1 = xp_get(fd, segs[i], XPMEM_RDONLY, &apid);
				r2 = xp_get(fd, segs[i], XPMEM_RDWR, &apid);
				if (r1 != (c->rdonly_ok ? 0 : -EACCES))
					_exit(3);
				if (r2 != (c->rdwr_ok ? 0 : -EACCES))
					_exit(4);
				_exit(0);
			}
			EXPECT_EQ(0, wait_child(pid)) {
				TH_LOG("mode %o uid %u gid %u", c->mode,
				       c->uid, c->gid);
			}
		}
	}
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(owner));
	ASSERT_COUNTERS_AT_BASE();
}

/* RDONLY: reads work, writes SIGSEGV, mprotect cannot add write. */
TEST_F(xpmem, rdonly_attachment)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *buf, *a;
	void *va;

	buf = map_anon(2 * PAGE);
	ASSERT_NE(NULL, buf);
	fill(buf, 2 * PAGE, 3);
	ASSERT_EQ(0, xp_make(self->fd, buf, 2 * PAGE, 0644, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDONLY, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, 2 * PAGE, NULL, &va));
	a = va;
	ASSERT_EQ(0, check(a, 2 * PAGE, 3));
	ASSERT_EQ(SIGSEGV, probe(a, 1, 1));
	ASSERT_EQ(SIGSEGV, probe(a + PAGE, 1, 1));
	ASSERT_NE(0, mprotect(a, 2 * PAGE, PROT_READ | PROT_WRITE));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(0, check(buf, 2 * PAGE, 3));
	/* the owner's later writes are still seen */
	buf[5] = 0x11;
	ASSERT_EQ(0x11, a[5]);
	ASSERT_EQ(0, xp_release(self->fd, apid));
	/* release unmapped the attachment */
	ASSERT_EQ(SIGSEGV, probe(a, 0, 0));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, 2 * PAGE);
}

/* The owner exits: the attacher gets SIGBUS, and can still clean up. */
TEST_F(xpmem, owner_exit_sigbus)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid, a2;
	struct chan ch;
	pid_t owner;
	char *a, m;
	void *va;

	ASSERT_EQ(0, chan_init(&ch));
	owner = fork_child();
	ASSERT_GE(owner, 0);
	if (owner == 0) {
		char *b = map_anon(2 * PAGE);
		xpmem_segid_t s;
		int fd = xp_open();

		if (fd < 0 || !b)
			_exit(1);
		memset(b, 'o', 2 * PAGE);
		if (xp_make(fd, b, 2 * PAGE, 0600, &s))
			_exit(2);
		send_msg(ch.to_parent[1], &s, sizeof(s));
		recv_msg(ch.to_child[0], &m, 1);
		_exit(0);
	}
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &segid, sizeof(segid)));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, 2 * PAGE, NULL, &va));
	a = va;
	ASSERT_EQ('o', a[0]);
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(owner));
	ASSERT_EQ(SIGBUS, probe(a, 0, 0));
	ASSERT_EQ(SIGBUS, probe(a + PAGE, 1, 1));
	ASSERT_EQ(-ENOENT, xp_get(self->fd, segid, XPMEM_RDWR, &a2));
	ASSERT_EQ(0, xp_detach(self->fd, a));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_COUNTERS_AT_BASE();
}

/* REMOVE while attached: SIGBUS for the attacher, ENOENT for new GETs. */
TEST_F(xpmem, remove_while_attached)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid, a2;
	char *buf, *a;
	void *va;

	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	buf[0] = 'r';
	ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, PAGE, NULL, &va));
	a = va;
	ASSERT_EQ('r', a[0]);
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_EQ(SIGBUS, probe(a, 0, 0));
	ASSERT_EQ(-ENOENT, xp_get(self->fd, segid, XPMEM_RDWR, &a2));
	ASSERT_EQ(-ENOENT, xp_attach(self->fd, apid, 0, PAGE, NULL, &va));
	ASSERT_EQ('r', buf[0]);
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

/* Attachers that exit or are killed with live attachments leak nothing. */
TEST_F(xpmem, attacher_exit_and_kill)
{
	const size_t len = 4 * PAGE;
	xpmem_segid_t segid;
	struct chan ch;
	char *buf, m;
	int k;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	memset(buf, 'k', len);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_EQ(0, chan_init(&ch));

	for (k = 0; k < 2; k++) {
		pid_t pid = fork_child();

		ASSERT_GE(pid, 0);
		if (pid == 0) {
			char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

			a[0] = 'K';
			send_msg(ch.to_parent[1], "a", 1);
			if (k == 0)
				_exit(0);	/* exit with everything live */
			for (;;)
				pause();
		}
		ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1));
		ASSERT_EQ('K', buf[0]);
		buf[0] = 'k';
		if (k == 1) {
			ASSERT_EQ(0, kill(pid, SIGKILL));
			ASSERT_EQ(128 + SIGKILL, wait_child(pid));
		} else {
			ASSERT_EQ(0, wait_child(pid));
		}
		ASSERT_EQ(self->permits, stat_read("permits"));
		ASSERT_EQ(self->atts, stat_read("attachments"));
	}
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/* munmap of an attachment is an implicit detach; children inherit none. */
TEST_F(xpmem, munmap_detaches_and_fork_does_not_inherit)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *buf, *a;
	void *va;
	pid_t pid;

	buf = map_anon(2 * PAGE);
	ASSERT_NE(NULL, buf);
	memset(buf, 'u', 2 * PAGE);
	ASSERT_EQ(0, xp_make(self->fd, buf, 2 * PAGE, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, 2 * PAGE, NULL, &va));
	a = va;
	ASSERT_EQ('u', a[PAGE]);
	ASSERT_EQ(self->atts + 1, stat_read("attachments"));

	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0)
		_exit(probe(a, 0, 0) == SIGSEGV ? 0 : 1);
	ASSERT_EQ(0, wait_child(pid));

	/* a partial munmap keeps the rest; the last one detaches */
	ASSERT_EQ(0, munmap(a, PAGE));
	ASSERT_EQ('u', a[PAGE]);
	ASSERT_EQ(self->atts + 1, stat_read("attachments"));
	ASSERT_EQ(0, munmap(a + PAGE, PAGE));
	ASSERT_EQ(self->atts, stat_read("attachments"));
	ASSERT_EQ(-EINVAL, xp_detach(self->fd, a));

	/* attaching at a fixed address */
	va = mmap(NULL, 2 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		  0);
	ASSERT_NE(MAP_FAILED, va);
	ASSERT_EQ(0, xp_attach(self->fd, apid, PAGE, PAGE, (char *)va + PAGE,
			       &va));
	ASSERT_EQ('u', *(char *)va);
	ASSERT_EQ(0, xp_detach(self->fd, va));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, 2 * PAGE);
}

TEST_F(xpmem, private_futex_on_anon)
{
	struct own_att o;

	ASSERT_EQ(0, own_att_setup(self->fd, &o, PAGE, 0600, XPMEM_RDWR, 0));
	((int *)o.buf)[0] = 5;
	ASSERT_EQ(0, sys_futex(o.a, FUTEX_WAKE_PRIVATE, 1, NULL));
	ASSERT_EQ(-1, sys_futex(o.a, FUTEX_WAIT_PRIVATE, 4, NULL));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, own_att_teardown(self->fd, &o));
	ASSERT_COUNTERS_AT_BASE();
}

/* 1000 attach/touch/detach cycles leave the object counters unchanged. */
TEST_F(xpmem, attach_detach_cycles)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *buf;
	void *va;
	int i;

	buf = map_anon(4 * PAGE);
	ASSERT_NE(NULL, buf);
	memset(buf, 'y', 4 * PAGE);
	ASSERT_EQ(0, xp_make(self->fd, buf, 4 * PAGE, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	for (i = 0; i < 1000; i++) {
		ASSERT_EQ(0, xp_attach(self->fd, apid, (i % 4) * PAGE, PAGE,
				       NULL, &va));
		ASSERT_EQ('y', *(volatile char *)va);
		ASSERT_EQ(0, xp_detach(self->fd, va));
	}
	ASSERT_EQ(self->atts, stat_read("attachments"));
	ASSERT_EQ(self->permits + 1, stat_read("permits"));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, 4 * PAGE);
}

/*
 * Attachments made through one open of the device share its pseudo file
 * at offsets of their own: each maps its own window, an invalidation of
 * the owner reaches every attachment of the page at its own offset, and
 * the end of one leaves the others alone.
 */
TEST_F(xpmem, attachments_of_one_open_keep_their_own_pages)
{
	static const struct { int permit; size_t off, pages; } w[] = {
		{ 0, 0, 4 }, { 0, 8, 4 }, { 1, 8, 4 }, { 1, 4, 2 }, { 0, 9, 1 },
	};
	const size_t n = sizeof(w) / sizeof(w[0]);
	xpmem_segid_t segid;
	xpmem_apid_t apid[2];
	char *buf, *a[5];
	size_t i, j;
	void *va;

	buf = map_anon(16 * PAGE);
	ASSERT_NE(NULL, buf);
	for (i = 0; i < 16; i++)
		memset(buf + i * PAGE, 'a' + i, PAGE);
	ASSERT_EQ(0, xp_make(self->fd, buf, 16 * PAGE, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid[0]));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid[1]));
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, xp_attach(self->fd, apid[w[i].permit],
				       w[i].off * PAGE, w[i].pages * PAGE,
				       NULL, &va));
		a[i] = va;
	}
	for (i = 0; i < n; i++)
		for (j = 0; j < w[i].pages; j++)
			ASSERT_EQ('a' + w[i].off + j,
				  *(volatile char *)(a[i] + j * PAGE));
	/*
	 * Page 9 is mapped by three attachments: each must let it go (a PTE
	 * left behind would still show the freed page's 'j').
	 */
	ASSERT_EQ(0, madvise(buf + 9 * PAGE, PAGE, MADV_DONTNEED));
	ASSERT_EQ(0, *(volatile char *)(a[1] + PAGE));
	ASSERT_EQ(0, *(volatile char *)(a[2] + PAGE));
	ASSERT_EQ(0, *(volatile char *)a[4]);
	buf[9 * PAGE] = 'Q';
	ASSERT_EQ('Q', *(volatile char *)(a[1] + PAGE));
	ASSERT_EQ('Q', *(volatile char *)(a[2] + PAGE));
	ASSERT_EQ('Q', *(volatile char *)a[4]);
	ASSERT_EQ('i', *(volatile char *)a[1]);
	/* writes through one reach the owner and every other */
	a[3][PAGE] = 'R';
	ASSERT_EQ('R', buf[5 * PAGE]);
	a[2][2 * PAGE] = 'S';
	ASSERT_EQ('S', *(volatile char *)(a[1] + 2 * PAGE));
	ASSERT_EQ('S', buf[10 * PAGE]);
	/* the end of permit 0's attachments leaves permit 1's */
	ASSERT_EQ(0, xp_release(self->fd, apid[0]));
	ASSERT_EQ(SIGSEGV, probe(a[0], 0, 0));
	ASSERT_EQ(SIGSEGV, probe(a[4], 0, 0));
	ASSERT_EQ('Q', *(volatile char *)(a[2] + PAGE));
	ASSERT_EQ('R', *(volatile char *)(a[3] + PAGE));
	ASSERT_EQ(self->atts + 2, stat_read("attachments"));
	ASSERT_EQ(0, xp_detach(self->fd, a[2]));
	ASSERT_EQ(0, xp_detach(self->fd, a[3]));
	ASSERT_EQ(0, xp_release(self->fd, apid[1]));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, 16 * PAGE);
}

/* Closing the device fd removes segments and releases permits. */
TEST_F(xpmem, close_cleans_up)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *buf, *a;
	void *va;
	int fd;

	fd = xp_open();
	ASSERT_GE(fd, 0);
	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	buf[0] = 'c';
	ASSERT_EQ(0, xp_make(fd, buf, PAGE, 0600, &segid));
	ASSERT_EQ(0, xp_get(fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(fd, apid, 0, PAGE, NULL, &va));
	a = va;
	ASSERT_EQ('c', a[0]);
	ASSERT_EQ(0, close(fd));
	/* the attachment stays mapped but has lost its memory */
	ASSERT_EQ(SIGBUS, probe(a, 0, 0));
	ASSERT_EQ(-ENOENT, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	/* the attachment holds the last references */
	ASSERT_EQ(self->atts + 1, stat_read("attachments"));
	ASSERT_EQ(0, munmap(a, PAGE));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

/* Attaching one's own segment works and sees one's own writes. */
TEST_F(xpmem, self_attach)
{
	const size_t len = 64 * PAGE;
	struct own_att o;

	ASSERT_EQ(0, own_att_setup(self->fd, &o, len, 0600, XPMEM_RDWR, 0));
	fill(o.buf, len, 4);
	ASSERT_EQ(0, check(o.a, len, 4));
	fill(o.a, len, 5);
	ASSERT_EQ(0, check(o.buf, len, 5));
	ASSERT_EQ(0, xp_detach(self->fd, o.a));
	ASSERT_EQ(0, own_att_teardown(self->fd, &o));
	ASSERT_COUNTERS_AT_BASE();
}

static volatile sig_atomic_t alarms;

static void count_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/*
 * In a fresh process (a new mm, no notifier yet), with SIGALRM every
 * 100 us handled without SA_RESTART: self-attach one page.  0 if the
 * attachment works, 1 if a command said EINTR, 2 if the setup failed, 3
 * if the attachment reads wrong, 100 + errno for another error.
 */
static int attach_under_alarms(void)
{
	struct sigaction sa = { .sa_handler = count_alarm };
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct own_att o;
	int fd = xp_open(), ret;

	if (fd < 0 || sigaction(SIGALRM, &sa, NULL) ||
	    setitimer(ITIMER_REAL, &it, NULL))
		return 2;
	ret = own_att_setup(fd, &o, PAGE, 0600, XPMEM_RDWR, 7);
	setitimer(ITIMER_REAL, &off, NULL);
	if (ret == -EINTR)
		return 1;
	if (ret)
		return ret < 0 && ret > -100 ? 100 - ret : 2;
	return all_bytes(o.a, PAGE, 7) ? 3 : 0;
}

/*
 * The kernel's first notifier on an mm takes every VMA's locks and gives
 * up on any pending signal (or io_uring task work).  ATTACH must not
 * hand that on as EINTR: classic callers do not retry it.  Each child
 * inherits thousands of VMAs, so the walk is long and signals land in it
 * (tens to hundreds of them per ATTACH).  A round costs about a second on
 * the debug kernel under TCG, mostly the fork and exit of the 4096 VMAs:
 * 8 rounds, and more time than the harness's default 30 s.
 */
TEST_F_TIMEOUT(xpmem, attach_not_interrupted_by_signals, 120)
{
	const size_t n = 4096;
	int round, st;
	size_t i;
	char *many = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, many);
	for (i = 0; i < n; i += 2)	/* n VMAs that cannot merge */
		ASSERT_EQ(0, mprotect(many + i * PAGE, PAGE, PROT_READ));
	for (round = 0; round < 8; round++) {
		pid_t pid = fork_child();

		ASSERT_LE(0, pid);
		if (pid == 0)
			_exit(attach_under_alarms());
		st = wait_child(pid);
		EXPECT_EQ(0, st) {
			TH_LOG("round %d: child status %d (1: EINTR)", round, st);
		}
		if (st)
			break;
	}
	munmap(many, n * PAGE);
}

/* DETACH removes every piece of a split or moved attachment. */
TEST_F(xpmem, detach_after_split_and_mremap)
{
	struct own_att o;
	char *moved;
	void *va;

	ASSERT_EQ(0, own_att_setup(self->fd, &o, 4 * PAGE, 0600, XPMEM_RDWR,
				   's'));
	/* split into three VMAs, then move the last one elsewhere */
	ASSERT_EQ(0, mprotect(o.a + PAGE, PAGE, PROT_READ));
	va = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, va);
	moved = mremap(o.a + 3 * PAGE, PAGE, PAGE,
		       MREMAP_MAYMOVE | MREMAP_FIXED, va);
	ASSERT_EQ(va, moved);
	ASSERT_EQ('s', moved[0]);
	o.buf[3 * PAGE] = 't';
	ASSERT_EQ('t', moved[0]);
	ASSERT_EQ('s', o.a[PAGE]);
	ASSERT_EQ(self->atts + 1, stat_read("attachments"));
	ASSERT_EQ(0, xp_detach(self->fd, o.a + 2 * PAGE));
	ASSERT_EQ(SIGSEGV, probe(o.a, 0, 0));
	ASSERT_EQ(SIGSEGV, probe(o.a + PAGE, 0, 0));
	ASSERT_EQ(SIGSEGV, probe(moved, 0, 0));
	ASSERT_EQ(self->atts, stat_read("attachments"));
	ASSERT_EQ(0, own_att_teardown(self->fd, &o));
	ASSERT_COUNTERS_AT_BASE();
}

/* exec replaces the mm: everything the old image had goes away. */
TEST_F(xpmem, exec_cleans_up)
{
	pid_t pid = fork_child();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		xpmem_segid_t segid;
		xpmem_apid_t apid;
		char *b = map_anon(PAGE);
		void *a;
		int fd = xp_open();

		if (fd < 0 || !b || xp_make(fd, b, PAGE, 0600, &segid) ||
		    xp_get(fd, segid, XPMEM_RDWR, &apid) ||
		    xp_attach(fd, apid, 0, PAGE, NULL, &a))
			_exit(1);
		*(volatile char *)a = 1;
		/* the same fd without O_CLOEXEC must not keep anything */
		if (dup2(fd, 100) != 100)
			_exit(2);
		execl("/bin/sh", "sh", "-c", "exec 100>&-; exit 0", (char *)NULL);
		_exit(3);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_COUNTERS_AT_BASE();
}

/* A process that shares its creator's address space (CLONE_VM). */
struct vm_sharer {
	int rd;			/* waits for end of file on it */
	int close[4];		/* its copies of the creator's descriptors */
};

static int vm_sharer_main(void *arg)
{
	struct vm_sharer *v = arg;
	unsigned int i;
	char c;

	for (i = 0; i < ARRAY_SIZE(v->close); i++)
		close(v->close[i]);
	while (read(v->rd, &c, 1) > 0)
		;
	return 0;
}

/*
 * An owner execs keeping its device file open (no O_CLOEXEC) while
 * another process still uses its old address space (it shares it through
 * CLONE_VM, as a copy or a /proc reader may hold it for a while): the
 * segments it made before are as good as removed.  GET, ATTACH through a
 * permit gotten before, and a copy fail with ENOENT.
 */
TEST_F(xpmem, exec_keeping_fd_ends_segments)
{
	struct xpmem_ext_copy cp = { .len = PAGE };
	xpmem_segid_t segid;
	xpmem_apid_t apid, apid2;
	int e[2], pb[2], r_get, r_att;
	long r_copy;
	pid_t a, b;
	struct chan ch;
	char *buf, m;
	void *att;

	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, chan_init(&ch));
	/*
	 * The new program's first byte: exec done.  Not the end of file of
	 * a close-on-exec pipe: newer kernels close those before the new
	 * address space replaces the old one.
	 */
	ASSERT_EQ(0, pipe2(e, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(pb, O_CLOEXEC));	/* to the sharer */
	a = fork_child();
	ASSERT_LE(0, a);
	if (a == 0) {
		struct vm_sharer v;
		char *p = map_anon(PAGE), *stack = map_anon(16 * PAGE);
		int fd = open(XPMEM_DEV_PATH, O_RDWR);	/* kept over exec */

		chan_child(&ch);
		close(e[0]);
		close(pb[1]);
		if (!p || !stack || fd < 0 || xp_make(fd, p, PAGE, 0666, &segid))
			_exit(1);
		memset(p, 'a', PAGE);
		v = (struct vm_sharer){
			.rd = pb[0],
			.close = { fd, e[1], ch.to_parent[1], ch.to_child[0] },
		};
		b = clone(vm_sharer_main, stack + 16 * PAGE, CLONE_VM | SIGCHLD,
			  &v);
		if (b < 0)
			_exit(2);
		close(pb[0]);
		if (send_msg(ch.to_parent[1], &segid, sizeof(segid)) ||
		    send_msg(ch.to_parent[1], &b, sizeof(b)) ||
		    recv_msg(ch.to_child[0], &m, 1) ||
		    dup2(ch.to_child[0], 0) != 0 || dup2(e[1], 1) != 1)
			_exit(3);
		execl("/bin/sh", "sh", "-c", "echo; read x; exit 0",
		      (char *)NULL);
		_exit(4);
	}
	chan_parent(&ch);
	close(e[1]);
	close(pb[0]);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &segid, sizeof(segid)));
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &b, sizeof(b)));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));

	/* the exec; the sharer keeps the old address space */
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(1, read(e[0], &m, 1));
	r_get = xp_get(self->fd, segid, XPMEM_RDWR, &apid2);
	r_att = xp_attach(self->fd, apid, 0, PAGE, NULL, &att);
	cp.apid = apid;
	cp.addr = (uintptr_t)buf;
	r_copy = xp_ext_copy(self->fd, &cp);
	TH_LOG("after the owner's exec: get %d, attach %d, copy %ld",
	       r_get, r_att, r_copy);
	EXPECT_EQ(-ENOENT, r_get);
	EXPECT_EQ(-ENOENT, r_att);
	EXPECT_EQ(-ENOENT, r_copy);

	if (!r_get)
		EXPECT_EQ(0, xp_release(self->fd, apid2));
	if (!r_att)
		EXPECT_EQ(0, xp_detach(self->fd, att));
	EXPECT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, send_msg(ch.to_child[1], "\n", 1));
	ASSERT_EQ(0, wait_child(a));
	close(pb[1]);			/* the sharer (now ours) ends */
	ASSERT_EQ(0, wait_child(b));
	close(e[0]);
	munmap(buf, PAGE);
	ASSERT_COUNTERS_AT_BASE();
}

/* Read /proc/xpmem-objects/<pid> into @buf; -errno if it cannot. */
static int read_objects(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/xpmem-objects/%d", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = 0;
	return 0;
}

/*
 * /proc/xpmem-objects/<tgid> lists the thread group's segments, permits
 * and attachments (for `xpmem list`), is readable only by who may
 * ptrace-read the group (another uid gets EACCES), and follows RELEASE
 * and REMOVE; the classic
 * /proc/xpmem/<tgid> keeps exactly its two lines.
 */
TEST_F(xpmem, proc_objects_lists_what_exists)
{
	char buf[4096], want[256], classic[256];
	struct own_att o;
	pid_t pid;
	int fd;

	ASSERT_EQ(0, own_att_setup(self->fd, &o, 4 * PAGE, 0640, XPMEM_RDONLY,
				   7));
	ASSERT_EQ(0, read_objects(getpid(), buf, sizeof(buf)));
	TH_LOG("%s", buf);
	snprintf(want, sizeof(want),
		 "segment %#llx vaddr %#lx size %lu mode 0640 attachments 1 ranges 1\n",
		 (unsigned long long)o.segid, (unsigned long)o.buf, 4 * PAGE);
	ASSERT_NE(NULL, strstr(buf, want)) TH_LOG("no line: %s", want);
	snprintf(want, sizeof(want),
		 "permit %#llx segment %#llx owner %d access rdonly attachments 1\n",
		 (unsigned long long)o.apid, (unsigned long long)o.segid,
		 (int)getpid());
	ASSERT_NE(NULL, strstr(buf, want)) TH_LOG("no line: %s", want);
	snprintf(want, sizeof(want),
		 "attachment segment %#llx apid %#llx offset 0 size %lu access rdonly\n",
		 (unsigned long long)o.segid, (unsigned long long)o.apid,
		 4 * PAGE);
	ASSERT_NE(NULL, strstr(buf, want)) TH_LOG("no line: %s", want);

	/* the classic file is untouched by all that */
	snprintf(want, sizeof(want), "/proc/xpmem/%d", (int)getpid());
	fd = open(want, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	memset(classic, 0, sizeof(classic));
	ASSERT_LT(0, read(fd, classic, sizeof(classic) - 1));
	close(fd);
	ASSERT_STREQ("pages pinned by XPMEM: 0\npages unpinned by XPMEM: 0\n",
		     classic);

	/* another uid cannot read it */
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(1001) || setuid(1001))
			_exit(1);
		_exit(read_objects(getppid(), buf, sizeof(buf)) == -EACCES ?
		      0 : 2);
	}
	ASSERT_EQ(0, wait_child(pid));

	/* RELEASE drops the permit and its attachment, not the segment */
	ASSERT_EQ(0, xp_release(self->fd, o.apid));
	ASSERT_EQ(0, read_objects(getpid(), buf, sizeof(buf)));
	ASSERT_EQ(NULL, strstr(buf, "permit "));
	ASSERT_EQ(NULL, strstr(buf, "attachment "));
	snprintf(want, sizeof(want), "segment %#llx ",
		 (unsigned long long)o.segid);
	ASSERT_NE(NULL, strstr(buf, want));
	ASSERT_EQ(0, xp_remove(self->fd, o.segid));
	ASSERT_EQ(0, read_objects(getpid(), buf, sizeof(buf)));
	ASSERT_STREQ("", buf);
	munmap(o.buf, o.len);
	ASSERT_COUNTERS_AT_BASE();
}

TEST_HARNESS_MAIN
