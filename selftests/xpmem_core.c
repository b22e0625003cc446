// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_core - selftests of xpmem.ko through the raw classic ioctl ABI.
 *
 * Runs as root inside the test VM with the module loaded; skips when
 * /dev/xpmem is absent.  Every multi-process test forks, synchronises over
 * pipes and checks exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
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
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(xpmem)
{
	int fd;
	long segs, permits, atts;
};

FIXTURE_SETUP(xpmem)
{
	XP_FIXTURE_OPEN();
}

FIXTURE_TEARDOWN(xpmem)
{
	if (self->fd >= 0)
		close(self->fd);
}

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

/*
 * Owner-side changes reach the attacher: munmap + new mmap at the same
 * address, MADV_DONTNEED, fork followed by a write (COW), mprotect.
 * The attacher (child) reads after each step on command.
 */
TEST_F(xpmem, owner_changes_are_mirrored)
{
	const size_t len = 4 * PAGE;
	xpmem_segid_t segid;
	struct chan ch;
	char *buf, *nb, m, r;
	pid_t pid, cow;
	int cowp[2];

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	memset(buf, 'a', len);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_EQ(0, chan_init(&ch));

	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

		/* each command: expected byte of every page ('Z': zero) */
		while (recv_msg(ch.to_child[0], &m, 1) == 0 && m != '!') {
			r = all_bytes(a, len, m == 'Z' ? 0 : m) ? 'F' : 'K';
			send_msg(ch.to_parent[1], &r, 1);
		}
		_exit(0);
	}
#define ATTACHER_SEES(c) do {						\
	m = (c);							\
	ASSERT_EQ(0, send_msg(ch.to_child[1], &m, 1));			\
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &r, 1));			\
	ASSERT_EQ('K', r) TH_LOG("attacher did not see '%c'", c);	\
} while (0)

	ATTACHER_SEES('a');

	/* munmap + mmap at the same address */
	ASSERT_EQ(0, munmap(buf, len));
	nb = mmap(buf, len, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_EQ(buf, nb);
	memset(buf, 'b', len);
	ATTACHER_SEES('b');

	/* MADV_DONTNEED: zeros */
	ASSERT_EQ(0, madvise(buf, len, MADV_DONTNEED));
	ATTACHER_SEES('Z');
	memset(buf, 'c', len);
	ATTACHER_SEES('c');

	/* fork, then the owner writes: the owner's copy, not the child's */
	ASSERT_EQ(0, pipe(cowp));
	cow = fork_child();
	ASSERT_GE(cow, 0);
	if (cow == 0) {
		char x;

		recv_msg(cowp[0], &x, 1);
		_exit(all_bytes(buf, len, 'c') ? 1 : 0);
	}
	memset(buf, 'd', len);
	ATTACHER_SEES('d');
	/* the COW child still has the old data */
	ASSERT_EQ(0, send_msg(cowp[1], "q", 1));
	ASSERT_EQ(0, wait_child(cow));

	/* mprotect round trip keeps the mirror coherent */
	ASSERT_EQ(0, mprotect(buf, len, PROT_READ));
	ASSERT_EQ(0, mprotect(buf, len, PROT_READ | PROT_WRITE));
	memset(buf, 'e', len);
	ATTACHER_SEES('e');

	ASSERT_EQ(0, send_msg(ch.to_child[1], "!", 1));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/* Page migration between NUMA nodes: the attacher follows the page. */
TEST_F(xpmem, numa_migration)
{
	int node = 1, status = -1;
	struct own_att o;
	void *page;

	if (access("/sys/devices/system/node/node1", F_OK))
		SKIP(return, "VM has a single NUMA node");
	ASSERT_EQ(0, own_att_setup(self->fd, &o, PAGE, 0600, XPMEM_RDWR, 'm'));
	ASSERT_EQ('m', o.a[0]);

	/* query, then move to the other node */
	page = o.buf;
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, 1, &page, NULL, &status, 0));
	node = status == 0 ? 1 : 0;
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, 1, &page, &node, &status, 0));
	ASSERT_EQ(node, status);
	/* the owner writes to the new page; a stale mapping would miss it */
	o.buf[0] = 'n';
	ASSERT_EQ('n', o.a[0]);
	o.a[1] = 'o';
	ASSERT_EQ('o', o.buf[1]);
	ASSERT_EQ(0, own_att_teardown(self->fd, &o));
	ASSERT_COUNTERS_AT_BASE();
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

/*
 * No GUP on attachments, even of shared memory (memfd): every attachment
 * PTE is a special PFN PTE, so process_vm_readv, vmsplice and shared
 * futexes (keyed through GUP) fail with EFAULT.  Private futexes and plain
 * user copies (read(2) into the attachment) work, and owner and attacher
 * see each other's stores.
 */
TEST_F(xpmem, futex_and_gup_on_shmem)
{
	const size_t len = 2 * PAGE;
	xpmem_segid_t segid;
	struct chan ch;
	char *buf, m;
	pid_t pid;
	int mfd;

	mfd = memfd_create("xpmem-test", MFD_CLOEXEC);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(0, ftruncate(mfd, len));
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 0, len);
	fill(buf + PAGE, PAGE, 9);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_EQ(0, chan_init(&ch));

	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct timespec ts = { .tv_sec = 5 };
		char out[PAGE], *a;
		struct iovec l, rv;
		xpmem_apid_t apid;
		int fd, p[2];

		chan_child(&ch);
		if (child_attach(segid, XPMEM_RDWR, 0, len, &fd, &apid, &a))
			_exit(1);
		if (check(a + PAGE, PAGE, 9))
			_exit(2);
		/* process_vm_readv goes through GUP */
		l = (struct iovec){ out, PAGE };
		rv = (struct iovec){ a + PAGE, PAGE };
		if (process_vm_readv(getpid(), &l, 1, &rv, 1, 0) != -1 ||
		    errno != EFAULT)
			_exit(3);
		/* so does vmsplice of the attachment into a pipe */
		if (pipe(p))
			_exit(4);
		l = (struct iovec){ a + PAGE, PAGE };
		if (vmsplice(p[1], &l, 1, 0) != -1 || errno != EFAULT)
			_exit(5);
		/* read(2) into the attachment is a user copy, no GUP */
		if (write(p[1], "pipe", 4) != 4 || read(p[0], a + 16, 4) != 4 ||
		    memcmp(buf + 16, "pipe", 4))
			_exit(6);
		/*
		 * Shared futexes are keyed through GUP: EFAULT.  The word is
		 * 0 and the wait expects 1, so a wait that got a key would
		 * return EAGAIN at once instead of sleeping.
		 */
		if (sys_futex(a, FUTEX_WAIT, 1, &ts) != -1 || errno != EFAULT)
			_exit(7);
		if (sys_futex(a, FUTEX_WAKE, 1, NULL) != -1 || errno != EFAULT)
			_exit(8);
		/* private futexes need no GUP */
		if (sys_futex(a, FUTEX_WAIT_PRIVATE, 1, &ts) != -1 ||
		    errno != EAGAIN)
			_exit(9);
		if (sys_futex(a, FUTEX_WAKE_PRIVATE, 1, NULL) != 0)
			_exit(10);
		/* stores both ways */
		a[PAGE + 8] = 'A';
		send_msg(ch.to_parent[1], "w", 1);
		if (recv_msg(ch.to_child[0], &m, 1) || a[PAGE + 9] != 'O')
			_exit(11);
		_exit(0);
	}
	chan_parent(&ch);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1)) {
		TH_LOG("attacher exited with %d", wait_child(pid));
	}
	ASSERT_EQ('A', buf[PAGE + 8]);
	buf[PAGE + 9] = 'O';
	ASSERT_EQ(0, send_msg(ch.to_child[1], "k", 1));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
	close(mfd);
}

/*
 * An owner's file mapping may reach past the end of its file (mapped
 * larger, grown later with ftruncate): its pages there raise SIGBUS, for
 * the owner and for the attacher alike.  A fault on a page inside the file
 * maps more than that page (a window), but a neighbour past the end, or
 * one the owner cannot fault now, must not make it fail: the attacher
 * reads and writes the file's pages, and gets SIGBUS only past the end.
 * Both with and without owner page tables over the window (a first fault,
 * and one after the owner's PTEs went).
 */
TEST_F(xpmem, file_mapping_past_eof_fails_only_there)
{
	const size_t len = 16 * PAGE;
	xpmem_segid_t segid;
	int mfd, round;
	char *buf;

	mfd = memfd_create("xpmem-test", MFD_CLOEXEC);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(0, ftruncate(mfd, 2 * PAGE));
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	for (round = 0; round < 2; round++) {
		pid_t pid;

		/* round 0: never touched; round 1: filled, PTEs dropped */
		if (round == 1) {
			fill(buf, 2 * PAGE, 21);
			ASSERT_EQ(0, madvise(buf, len, MADV_DONTNEED));
		}
		pid = fork_child();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

			probe_install();
			/* the last page of the file, then the first */
			if (touch((uint8_t *)a + PAGE + 5, 0, 0))
				_exit(2);
			if (round == 1 && check(a, 2 * PAGE, 21))
				_exit(3);
			if (touch((uint8_t *)a + 7, 1, 'a') ||
			    touch((uint8_t *)a + PAGE + 7, 1, 'b'))
				_exit(4);
			if (touch((uint8_t *)a + 2 * PAGE, 0, 0) != SIGBUS ||
			    touch((uint8_t *)a + len - 1, 1, 'c') != SIGBUS)
				_exit(5);
			_exit(0);
		}
		ASSERT_EQ(0, wait_child(pid));
		ASSERT_EQ('a', buf[7]);
		ASSERT_EQ('b', buf[PAGE + 7]);
	}
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
	close(mfd);
}

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL	102
#endif

/*
 * Guard pages inside an owner VMA (MADV_GUARD_INSTALL, 6.13): the owner's
 * own access there is SIGSEGV.  A fault on a page beside one, whose window
 * covers it, maps the page; only the guard page itself fails (SIGBUS in
 * the attacher).  Skipped where the kernel has no guard pages.
 */
TEST_F(xpmem, guard_page_in_window_fails_only_there)
{
	const size_t len = 16 * PAGE;
	xpmem_segid_t segid;
	char *buf;
	pid_t pid;

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	if (madvise(buf + 8 * PAGE, PAGE, MADV_GUARD_INSTALL)) {
		munmap(buf, len);
		SKIP(return, "no MADV_GUARD_INSTALL (%s)", strerror(errno));
	}
	/* owner-exclusive pages: the child would share them copy-on-write */
	ASSERT_EQ(0, madvise(buf, len, MADV_DONTFORK));
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

		probe_install();
		/* never touched: each needs a fault, the guard follows */
		if (touch((uint8_t *)a + 7 * PAGE, 0, 0) ||
		    touch((uint8_t *)a + 6 * PAGE + 1, 1, 'g'))
			_exit(2);
		if (touch((uint8_t *)a + 8 * PAGE, 0, 0) != SIGBUS)
			_exit(3);
		if (touch((uint8_t *)a + 9 * PAGE, 1, 'h'))
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ('g', buf[6 * PAGE + 1]);
	ASSERT_EQ('h', buf[9 * PAGE]);
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/* ---- owner memory registered with userfaultfd ------------------------- */

#define UFFD_PAGES	16
#define UFFD_SEED	40	/* page i of the owner: fill() seed 40 + i */

/* The owner's userfaultfd, and its handler thread's state. */
struct uffd_owner {
	int uffd;
	int stop[2];		/* written to end the handler */
	char *buf;		/* UFFD_PAGES, registered */
	bool wp;		/* serve write-protect faults, not missing pages */
	int flags;		/* of userfaultfd(2), besides O_CLOEXEC etc. */
	int served;		/* faults the handler resolved */
	int err;		/* the handler's: 0 or a line number */
};

/*
 * A userfaultfd of the test process with @o->buf registered for missing
 * pages, or write-protected (@o->wp, the pages present).  Not
 * UFFD_USER_MODE_ONLY unless @o->flags says so: an attacher's fault is a
 * kernel access to the owner's memory, which such a handler refuses
 * (SIGBUS), as it refuses every other.  0, or -1 with a reason where the
 * kernel has no
 * userfaultfd, refuses it (vm.unprivileged_userfaultfd) or lacks
 * write-protection for anonymous memory.
 */
static int uffd_owner_setup(struct uffd_owner *o, const char **why)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)o->buf,
			   .len = UFFD_PAGES * PAGE },
		.mode = o->wp ? UFFDIO_REGISTER_MODE_WP :
				UFFDIO_REGISTER_MODE_MISSING,
	};
	struct uffdio_writeprotect wp = { .range = reg.range,
					  .mode = UFFDIO_WRITEPROTECT_MODE_WP };

	o->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | o->flags);
	*why = "no userfaultfd";
	if (o->uffd < 0)
		return -1;
	*why = "UFFDIO_API";
	if (ioctl(o->uffd, UFFDIO_API, &api))
		return -1;
	*why = "no write-protection of anonymous memory";
	if (o->wp && !(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP))
		return -1;
	*why = "UFFDIO_REGISTER";
	if (ioctl(o->uffd, UFFDIO_REGISTER, &reg))
		return -1;
	*why = "UFFDIO_WRITEPROTECT";
	if (o->wp && ioctl(o->uffd, UFFDIO_WRITEPROTECT, &wp))
		return -1;
	return pipe(o->stop);
}

/*
 * The owner's handler: each missing page i gets fill() seed UFFD_SEED + i
 * (UFFDIO_COPY), each write-protected page loses its protection; until
 * o->stop is written.
 */
static void *uffd_owner_serve(void *arg)
{
	struct uffd_owner *o = arg;
	struct pollfd p[2] = { { .fd = o->uffd, .events = POLLIN },
			       { .fd = o->stop[0], .events = POLLIN } };
	char *page = map_anon(PAGE);
	struct uffd_msg msg;
	uintptr_t addr;

	if (!page) {
		o->err = __LINE__;
		return NULL;
	}
	while (!o->err) {
		if (poll(p, 2, -1) < 0) {
			if (errno != EINTR)
				o->err = __LINE__;
			continue;
		}
		if (p[1].revents)
			break;
		if (read(o->uffd, &msg, sizeof(msg)) != sizeof(msg)) {
			if (errno != EAGAIN)
				o->err = __LINE__;
			continue;
		}
		addr = msg.arg.pagefault.address & ~(uintptr_t)(PAGE - 1);
		if (msg.event != UFFD_EVENT_PAGEFAULT ||
		    addr < (uintptr_t)o->buf ||
		    addr >= (uintptr_t)o->buf + UFFD_PAGES * PAGE) {
			o->err = __LINE__;
			break;
		}
		if (o->wp) {
			struct uffdio_writeprotect wp = {
				.range = { .start = addr, .len = PAGE },
			};

			if (!(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) ||
			    ioctl(o->uffd, UFFDIO_WRITEPROTECT, &wp))
				o->err = __LINE__;
		} else {
			struct uffdio_copy c = {
				.dst = addr, .src = (uintptr_t)page, .len = PAGE,
			};
			struct uffdio_range r = { .start = addr, .len = PAGE };

			fill(page, PAGE,
			     UFFD_SEED + (addr - (uintptr_t)o->buf) / PAGE);
			/* present already (a second fault on it): wake it */
			if (ioctl(o->uffd, UFFDIO_COPY, &c) &&
			    (errno != EEXIST ||
			     ioctl(o->uffd, UFFDIO_WAKE, &r)))
				o->err = __LINE__;
		}
		o->served++;
	}
	munmap(page, PAGE);
	return NULL;
}

/*
 * @o->buf: UFFD_PAGES of the owner's own (MADV_DONTFORK: the attacher
 * shares none of them copy-on-write), 4 KiB pages; for write-protection
 * present, page i with fill() seed UFFD_SEED + i.  NULL on failure.
 */
static char *uffd_owner_buf(bool present)
{
	char *buf = map_anon(UFFD_PAGES * PAGE);
	int i;

	if (!buf || madvise(buf, UFFD_PAGES * PAGE, MADV_DONTFORK) ||
	    madvise(buf, UFFD_PAGES * PAGE, MADV_NOHUGEPAGE))
		return NULL;
	for (i = 0; present && i < UFFD_PAGES; i++)
		fill(buf + i * PAGE, PAGE, UFFD_SEED + i);
	return buf;
}

/*
 * Owner memory filled lazily by the owner's userfaultfd handler: each of
 * the attacher's faults there waits for the handler, as the owner's own
 * access would, and maps what it placed; a write to a missing page lands
 * in the owner's page the handler placed.
 */
TEST_F(xpmem, userfaultfd_missing_pages_wait_for_owner_handler)
{
	const size_t len = UFFD_PAGES * PAGE;
	struct uffd_owner o = { .uffd = -1 };
	xpmem_segid_t segid;
	const char *why;
	char desc[64];
	pthread_t th;
	pid_t pid;
	int st;

	o.buf = uffd_owner_buf(false);
	ASSERT_NE(NULL, o.buf);
	if (uffd_owner_setup(&o, &why))
		SKIP(return, "%s (%s)", why, strerror(errno));
	ASSERT_EQ(0, xp_make(self->fd, o.buf, len, 0600, &segid));
	ASSERT_EQ(0, pthread_create(&th, NULL, uffd_owner_serve, &o));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);
		int i;

		a[len - 1] = 'W';	/* a write first, to a missing page */
		for (i = 0; i < UFFD_PAGES - 1; i++)
			if (check(a + i * PAGE, PAGE, UFFD_SEED + i))
				_exit(10 + i);
		_exit(0);
	}
	/* bounded: an attacher that never gets its pages fails, not hangs */
	ASSERT_EQ(0, wait_bounded(pid, &st, 60));
	ASSERT_EQ(1, write(o.stop[1], "s", 1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	describe_status(st, desc, sizeof(desc));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		TH_LOG("attacher: %s (SIGBUS: its fault did not wait for the owner's handler)",
		       desc);
	}
	ASSERT_EQ(0, o.err);
	ASSERT_EQ(UFFD_PAGES, o.served);
	ASSERT_EQ('W', o.buf[len - 1]);
	ASSERT_EQ(0, check(o.buf + len - PAGE, PAGE - 1,
			   UFFD_SEED + UFFD_PAGES - 1));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	close(o.uffd);
	ASSERT_COUNTERS_AT_BASE();
	munmap(o.buf, len);
}

/*
 * The same with the owner attached to itself (one mm, one mmap_lock): the
 * reading thread waits for the handler thread of its own process.
 */
TEST_F(xpmem, userfaultfd_missing_pages_self_attach)
{
	const size_t len = UFFD_PAGES * PAGE;
	struct uffd_owner o = { .uffd = -1 };
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	const char *why;
	pthread_t th;
	int i, sig = 0;
	char *a;
	void *va;

	o.buf = uffd_owner_buf(false);
	ASSERT_NE(NULL, o.buf);
	if (uffd_owner_setup(&o, &why))
		SKIP(return, "%s (%s)", why, strerror(errno));
	ASSERT_EQ(0, xp_make(self->fd, o.buf, len, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, len, NULL, &va));
	a = va;
	ASSERT_EQ(0, pthread_create(&th, NULL, uffd_owner_serve, &o));
	probe_install();
	for (i = 0; i < UFFD_PAGES; i++) {
		sig = touch((uint8_t *)a + i * PAGE, 0, 0);
		if (sig)
			break;
	}
	ASSERT_EQ(UFFD_PAGES, i) {
		TH_LOG("page %d: signal %d (SIGBUS: the fault did not wait for the handler)",
		       i, sig);
	}
	ASSERT_EQ(1, write(o.stop[1], "s", 1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, o.err);
	ASSERT_EQ(UFFD_PAGES, o.served);
	for (i = 0; i < UFFD_PAGES; i++)
		ASSERT_EQ(0, check(a + i * PAGE, PAGE, UFFD_SEED + i));
	ASSERT_EQ(0, xp_detach(self->fd, a));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	close(o.uffd);
	ASSERT_COUNTERS_AT_BASE();
	munmap(o.buf, len);
}

/*
 * Write-protected owner pages (UFFDIO_REGISTER_MODE_WP): the attacher's
 * write waits for the owner's handler to lift the protection, both to a
 * page it has read (a read-only PTE made writable) and to one it has not,
 * and lands in the owner's page.
 */
TEST_F(xpmem, userfaultfd_write_protect_waits_for_owner_handler)
{
	const size_t len = UFFD_PAGES * PAGE;
	struct uffd_owner o = { .uffd = -1, .wp = true };
	xpmem_segid_t segid;
	const char *why;
	char desc[64];
	pthread_t th;
	pid_t pid;
	int st;

	o.buf = uffd_owner_buf(true);
	ASSERT_NE(NULL, o.buf);
	if (uffd_owner_setup(&o, &why))
		SKIP(return, "%s (%s)", why, strerror(errno));
	ASSERT_EQ(0, xp_make(self->fd, o.buf, len, 0600, &segid));
	ASSERT_EQ(0, pthread_create(&th, NULL, uffd_owner_serve, &o));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

		if (check(a, PAGE, UFFD_SEED))
			_exit(2);
		a[1] = 'R';		/* read first, then written */
		a[3 * PAGE + 1] = 'W';	/* written, never read */
		_exit(0);
	}
	ASSERT_EQ(0, wait_bounded(pid, &st, 60));
	ASSERT_EQ(1, write(o.stop[1], "s", 1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	describe_status(st, desc, sizeof(desc));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		TH_LOG("attacher: %s (SIGBUS: its write did not wait for the owner's handler)",
		       desc);
	}
	ASSERT_EQ(0, o.err);
	ASSERT_EQ(2, o.served);
	ASSERT_EQ('R', o.buf[1]);
	ASSERT_EQ('W', o.buf[3 * PAGE + 1]);
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	close(o.uffd);
	ASSERT_COUNTERS_AT_BASE();
	munmap(o.buf, len);
}

/*
 * A handler made with UFFD_USER_MODE_ONLY (what an unprivileged owner
 * gets by default) serves only the owner's own user-mode accesses: the
 * attacher's access, a kernel access to the owner's memory, is SIGBUS at
 * once, without reaching the handler and without looping.
 */
TEST_F(xpmem, userfaultfd_user_mode_only_refuses_attacher)
{
	const size_t len = UFFD_PAGES * PAGE;
	struct uffd_owner o = { .uffd = -1, .flags = UFFD_USER_MODE_ONLY };
	struct pollfd p;
	xpmem_segid_t segid;
	const char *why;
	pid_t pid;

	o.buf = uffd_owner_buf(false);
	ASSERT_NE(NULL, o.buf);
	if (uffd_owner_setup(&o, &why))
		SKIP(return, "%s (%s)", why, strerror(errno));
	ASSERT_EQ(0, xp_make(self->fd, o.buf, len, 0600, &segid));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

		_exit(probe(a + PAGE, 0, 0) == SIGBUS ? 0 : 2);
	}
	ASSERT_EQ(0, wait_child(pid));
	p = (struct pollfd){ .fd = o.uffd, .events = POLLIN };
	ASSERT_EQ(0, poll(&p, 1, 0));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	close(o.uffd);
	ASSERT_COUNTERS_AT_BASE();
	munmap(o.buf, len);
}

/*
 * An attacher waiting for the owner's handler, which never serves it, is
 * killable: once the handler sees the fault, SIGKILL ends the attacher
 * (no D state, nothing left behind).  The attacher holds a pipe open, so
 * an attacher that dies before its fault reaches the handler is seen.
 */
TEST_F(xpmem, userfaultfd_unserved_fault_is_killable)
{
	const size_t len = UFFD_PAGES * PAGE;
	struct uffd_owner o = { .uffd = -1 };
	xpmem_segid_t segid;
	struct pollfd p[2];
	struct uffd_msg msg;
	int alive[2], st;
	const char *why;
	char desc[64];
	pid_t pid;

	o.buf = uffd_owner_buf(false);
	ASSERT_NE(NULL, o.buf);
	if (uffd_owner_setup(&o, &why))
		SKIP(return, "%s (%s)", why, strerror(errno));
	ASSERT_EQ(0, xp_make(self->fd, o.buf, len, 0600, &segid));
	ASSERT_EQ(0, pipe(alive));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a;

		close(alive[0]);
		a = child_attach_or_exit(segid, XPMEM_RDWR, len);
		_exit(a[2 * PAGE] ? 3 : 2);	/* never served */
	}
	close(alive[1]);
	p[0] = (struct pollfd){ .fd = o.uffd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = alive[0], .events = POLLIN };
	/* bounded: a fault that never reaches the handler fails, not hangs */
	ASSERT_EQ(1, poll(p, 2, 60000) > 0);
	if (!(p[0].revents & POLLIN)) {
		ASSERT_EQ(0, wait_bounded(pid, &st, 10));
		describe_status(st, desc, sizeof(desc));
		ASSERT_TRUE(p[0].revents & POLLIN) {
			TH_LOG("attacher ended before its fault reached the owner's handler: %s",
			       desc);
		}
	}
	ASSERT_EQ(sizeof(msg), read(o.uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
	ASSERT_EQ((uintptr_t)o.buf + 2 * PAGE,
		  msg.arg.pagefault.address & ~(uint64_t)(PAGE - 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(0, wait_bounded(pid, &st, 30)) {
		TH_LOG("attacher still there 30 s after SIGKILL");
	}
	describe_status(st, desc, sizeof(desc));
	ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
		TH_LOG("attacher: %s", desc);
	}
	close(alive[0]);
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	close(o.uffd);
	ASSERT_COUNTERS_AT_BASE();
	munmap(o.buf, len);
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

/* A fault maps the resident neighbours too: far fewer faults than pages. */
TEST_F(xpmem, faults_are_batched)
{
	const size_t len = 1024 * PAGE;
	xpmem_segid_t segid;
	pid_t pid;
	char *buf;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	memset(buf, 'b', len);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0644, &segid));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		long faults, mapped, pmds;
		xpmem_apid_t apid;
		size_t i;
		char *a;
		int fd;

		if (child_attach(segid, XPMEM_RDONLY, 0, len, &fd, &apid, &a))
			_exit(1);
		faults = stat_read("faults");
		mapped = stat_read("pages_mapped");
		pmds = stat_read("pmd_mapped");
		for (i = 0; i < len; i += PAGE)
			if (a[i] != 'b')
				_exit(2);
		faults = stat_read("faults") - faults;
		/* THP owner memory may be mapped with huge PMDs (6.12) */
		mapped = stat_read("pages_mapped") - mapped +
			 (stat_read("pmd_mapped") - pmds) * (long)PMD_PAGES;
		/* 4 MiB: 2 or 3 PMD-sized windows, a little slack */
		if (faults < 1 || faults > 8)
			_exit(3);
		if (mapped < (long)(len / PAGE))
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/*
 * A write pass over an attachment of 4 KiB owner pages takes one fault per
 * window, not one more per page.  @read_first false: a fresh attachment,
 * whose write faults map the owner-writable pages of their window
 * writable at once (was 1024 + 2 faults), on owner memory a plain fork
 * made COW-shared (the write fault breaks COW for the rest of its window).
 * @read_first true: a read pass maps everything read-only first, and the
 * write to a read-only PTE makes the window's other read-only PTEs of
 * owner-writable pages writable at once (was one ->pfn_mkwrite per page);
 * the owner's pages are its own (MADV_DONTFORK), as an MPI rank's are.
 */
static void writes_one_fault_per_window(struct __test_metadata *_metadata,
					FIXTURE_DATA(xpmem) *self,
					bool read_first)
{
	const size_t len = 1024 * PAGE;
	xpmem_segid_t segid;
	pid_t pid;
	char *buf;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, madvise(buf, len, MADV_NOHUGEPAGE));
	fill(buf, len, read_first ? 23 : 21);
	if (read_first)
		ASSERT_EQ(0, madvise(buf, len, MADV_DONTFORK));
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		long faults, mkwrites, upgraded;
		xpmem_apid_t apid;
		unsigned int sum = 0;
		size_t i;
		char *a;
		int fd;

		if (child_attach(segid, XPMEM_RDWR, 0, len, &fd, &apid, &a))
			_exit(1);
		for (i = 0; read_first && i < len; i += PAGE)
			sum += (unsigned char)a[i];
		faults = stat_read("faults");
		mkwrites = stat_read("mkwrite_fast");
		upgraded = stat_read("pages_upgraded");
		for (i = 0; i < len; i += PAGE)
			a[i] = (char)(i / PAGE + read_first);
		faults = stat_read("faults") - faults;
		mkwrites = stat_read("mkwrite_fast") - mkwrites;
		upgraded = stat_read("pages_upgraded") - upgraded;
		/* 4 MiB: 2 or 3 windows of 512 pages */
		if (faults < 1 || faults > 8 || (!read_first && mkwrites))
			_exit(2);
		if (read_first && upgraded < (long)(len / PAGE) - 8)
			_exit(3);
		_exit(read_first && !sum ? 4 : 0);
	}
	ASSERT_EQ(0, wait_child(pid));
	for (size_t i = 0; i < len; i += PAGE)
		ASSERT_EQ((char)(i / PAGE + read_first), buf[i]);
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

TEST_F(xpmem, first_write_one_fault_per_window)
{
	writes_one_fault_per_window(_metadata, self, false);
}

TEST_F(xpmem, write_after_read_one_fault_per_window)
{
	writes_one_fault_per_window(_metadata, self, true);
}

/*
 * An attachment made while the owner is in the middle of discarding the
 * range must not map the pages being discarded.  The owner discards 96
 * MiB of 4 KiB pages with one MADV_DONTNEED, the exported 16 pages last;
 * meanwhile the attacher attaches them and reads them.  That invalidation
 * began before the attachment's notifier existed, so it never reaches the
 * attachment's callback (the core inserts such a notifier marked "under
 * invalidation" and expects its first reader to wait for the owner's
 * invalidations to end); a fault that did not wait mapped the old pages
 * just before the owner freed them, and after the owner had written new
 * tags the attacher still read the old ones from freed memory.  Each
 * round reads the pages once more after the owner's new tags, which must
 * be what it reads.  (Another segment of the owner stays attached and
 * away from the range, so that the owner has an interval notifier and the
 * invalidation nothing of it overlaps.)
 */
#define INFLIGHT_BIG	(96UL << 20)
#define INFLIGHT_PAGES	16
#define INFLIGHT_ROUNDS	6

static int inflight_attacher(xpmem_segid_t other, xpmem_segid_t segid,
			     struct chan *ch)
{
	xpmem_apid_t apid;
	uint64_t gen, v;
	char *a, *keep;
	int fd, r, bad;
	size_t i;

	if (child_attach(other, XPMEM_RDWR, 0, PAGE, &fd, &apid, &keep))
		return 10;
	(void)*(volatile char *)keep;
	if (xp_get(fd, segid, XPMEM_RDWR, &apid))
		return 11;
	for (r = 0; r < INFLIGHT_ROUNDS; r++) {
		if (recv_msg(ch->to_child[0], &gen, sizeof(gen)))
			return 12;
		/* the owner is discarding now */
		if (xp_attach(fd, apid, 0, INFLIGHT_PAGES * PAGE, NULL,
			      (void **)&a))
			return 13;
		for (i = 0; i < INFLIGHT_PAGES; i++)
			(void)*(volatile uint64_t *)(a + i * PAGE);
		if (send_msg(ch->to_parent[1], "r", 1) ||
		    recv_msg(ch->to_child[0], &gen, sizeof(gen)))
			return 14;
		for (bad = 0, i = 0; i < INFLIGHT_PAGES; i++) {
			v = *(volatile uint64_t *)(a + i * PAGE);
			if (v == ((uint64_t)i << 32 | gen))
				continue;
			if (!bad++)
				printf("# round %d: page %zu reads %#llx, not %#llx\n",
				       r, i, (unsigned long long)v,
				       (unsigned long long)((uint64_t)i << 32 | gen));
		}
		fflush(stdout);
		if (xp_detach(fd, a) ||
		    send_msg(ch->to_parent[1], &bad, sizeof(bad)))
			return 15;
	}
	return 0;
}

TEST_F_TIMEOUT(xpmem, attach_during_owner_discard_maps_no_freed_page, 240)
{
	char *big, *tail, *other;
	xpmem_segid_t segid, oseg;
	uint64_t gen = 0;
	struct chan ch;
	int r, bad, total = 0;
	size_t i;
	pid_t pid;
	char c;

	big = map_anon(INFLIGHT_BIG);
	other = map_anon(PAGE);
	ASSERT_NE(NULL, big);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, madvise(big, INFLIGHT_BIG, MADV_NOHUGEPAGE));
	tail = big + INFLIGHT_BIG - INFLIGHT_PAGES * PAGE;
	other[0] = 1;
	ASSERT_EQ(0, xp_make(self->fd, other, PAGE, 0600, &oseg));
	ASSERT_EQ(0, xp_make(self->fd, tail, INFLIGHT_PAGES * PAGE, 0600,
			     &segid));
	ASSERT_EQ(0, madvise(big, INFLIGHT_BIG, MADV_DONTFORK));
	ASSERT_EQ(0, chan_init(&ch));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		chan_child(&ch);
		_exit(inflight_attacher(oseg, segid, &ch));
	}
	chan_parent(&ch);
	for (r = 0; r < INFLIGHT_ROUNDS; r++) {
		ASSERT_EQ(0, populate_write(big, INFLIGHT_BIG));
		gen++;
		for (i = 0; i < INFLIGHT_PAGES; i++)
			*(uint64_t *)(tail + i * PAGE) = (uint64_t)i << 32 | gen;
		ASSERT_EQ(0, send_msg(ch.to_child[1], &gen, sizeof(gen)));
		ASSERT_EQ(0, madvise(big, INFLIGHT_BIG, MADV_DONTNEED));
		ASSERT_EQ(0, recv_msg(ch.to_parent[0], &c, 1));
		gen++;
		for (i = 0; i < INFLIGHT_PAGES; i++)
			*(uint64_t *)(tail + i * PAGE) = (uint64_t)i << 32 | gen;
		ASSERT_EQ(0, send_msg(ch.to_child[1], &gen, sizeof(gen)));
		ASSERT_EQ(0, recv_msg(ch.to_parent[0], &bad, sizeof(bad)));
		total += bad;
	}
	EXPECT_EQ(0, total) {
		TH_LOG("%d pages read old contents after the owner's new tags",
		       total);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_EQ(0, xp_remove(self->fd, oseg));
	ASSERT_COUNTERS_AT_BASE();
	munmap(big, INFLIGHT_BIG);
	munmap(other, PAGE);
}

/*
 * A write to a read-only PTE that names another page than the owner's
 * writable one - here our zero page, read before the owner ever wrote the
 * page - zaps that PTE and maps the owner's new page writable in the same
 * ->pfn_mkwrite: one fault of the attachment, where zapping alone and
 * repeating the access would take two, and a read fault of another
 * thread in between could put a read-only PTE back each time, so that
 * the write could go round zap and repeat without end.
 */
TEST_F(xpmem, mkwrite_of_stale_pte_maps_in_the_same_fault)
{
	const size_t len = 4 * PAGE;
	xpmem_segid_t segid;
	pid_t pid;
	char *buf;

	buf = map_anon(len);	/* never written: the owner's zero page */
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, madvise(buf, len, MADV_NOHUGEPAGE));
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);
		long faults;
		size_t i;

		if (all_bytes(a, len, 0))	/* read-only, our zero page */
			_exit(2);
		faults = stat_read("faults");
		for (i = 0; i < len; i += PAGE)
			a[i + 1] = (char)('a' + i / PAGE);
		faults = stat_read("faults") - faults;
		if (faults != 1) {
			printf("# %ld faults for the first write pass\n",
			       faults);
			fflush(stdout);
			_exit(3);
		}
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	for (size_t i = 0; i < len; i += PAGE)
		ASSERT_EQ((char)('a' + i / PAGE), buf[i + 1]);
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/*
 * A write maps the pages of its window that the owner maps writable
 * writable, never the ones it shares copy-on-write: the owner forked, so
 * pages 1..3 are shared with its child and read-only in both; the owner
 * wrote page 0 again, so only page 0 is its own.  The attacher's write to
 * page 0 must not let its writes to pages 1..3 reach the child's copies:
 * they go through ->pfn_mkwrite, which breaks COW in the owner first.
 * @read_first: the attacher reads all four pages first, so that its
 * write to page 0 is a ->pfn_mkwrite that upgrades the window, not a
 * write fault that fills it.
 */
static void cow_shared_pages_stay_read_only(struct __test_metadata *_metadata,
					    FIXTURE_DATA(xpmem) *self,
					    bool read_first)
{
	const size_t len = 4 * PAGE;
	struct chan sib;
	xpmem_segid_t segid;
	pid_t sibling, pid;
	char *buf, c;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, madvise(buf, len, MADV_NOHUGEPAGE));
	memset(buf, 'o', len);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_EQ(0, madvise(buf, len, MADV_DOFORK));
	ASSERT_EQ(0, chan_init(&sib));
	sibling = fork_child();
	ASSERT_LE(0, sibling);
	if (sibling == 0) {
		chan_child(&sib);
		if (recv_msg(sib.to_child[0], &c, 1))
			_exit(1);
		_exit(all_bytes(buf, len, 'o') ? 2 : 0);
	}
	chan_parent(&sib);
	/* the attacher must not share the pages too */
	ASSERT_EQ(0, madvise(buf, len, MADV_DONTFORK));
	buf[0] = 'p';		/* page 0: the owner's own again */
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

		/* page 0 is the owner's 'p', the others the shared 'o' */
		if (read_first &&
		    (a[0] != 'p' || all_bytes(a + PAGE, len - PAGE, 'o')))
			_exit(2);
		a[0] = 'A';		/* its window is 0..3 */
		a[PAGE] = 'B';
		a[2 * PAGE + 5] = 'C';
		a[3 * PAGE - 1] = 'D';
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ('A', buf[0]);
	ASSERT_EQ('B', buf[PAGE]);
	ASSERT_EQ('C', buf[2 * PAGE + 5]);
	ASSERT_EQ('D', buf[3 * PAGE - 1]);
	ASSERT_EQ('o', buf[3 * PAGE]);
	/* the sibling's copies never saw any of it */
	ASSERT_EQ(0, send_msg(sib.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(sibling));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

TEST_F(xpmem, write_fault_never_maps_cow_shared_pages_writable)
{
	cow_shared_pages_stay_read_only(_metadata, self, false);
}

TEST_F(xpmem, write_after_read_never_maps_cow_shared_pages_writable)
{
	cow_shared_pages_stay_read_only(_metadata, self, true);
}

/* RDWR attachment of memory the owner maps read-only: reads, no writes. */
TEST_F(xpmem, rdwr_attach_of_readonly_owner_memory)
{
	struct own_att o;

	ASSERT_EQ(0, own_att_setup(self->fd, &o, 2 * PAGE, 0600, XPMEM_RDWR,
				   'R'));
	ASSERT_EQ(0, mprotect(o.buf, 2 * PAGE, PROT_READ));
	ASSERT_EQ('R', o.a[0]);
	ASSERT_EQ('R', o.a[PAGE + 7]);
	ASSERT_EQ(SIGBUS, probe(o.a, 1, 'w'));
	ASSERT_EQ('R', o.buf[0]);
	/* once the owner allows writes, so does the attachment */
	ASSERT_EQ(0, mprotect(o.buf, 2 * PAGE, PROT_READ | PROT_WRITE));
	ASSERT_EQ(0, probe(o.a, 1, 'w'));
	ASSERT_EQ('w', o.buf[0]);
	ASSERT_EQ(0, own_att_teardown(self->fd, &o));
	ASSERT_COUNTERS_AT_BASE();
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

/* Invalidation reaches an attachment of part of a segment, and only it. */
TEST_F(xpmem, partial_attachment_invalidation)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *buf, *a, *b;
	void *va;

	buf = map_anon(4 * PAGE);
	ASSERT_NE(NULL, buf);
	memset(buf, 'p', 4 * PAGE);
	ASSERT_EQ(0, xp_make(self->fd, buf, 4 * PAGE, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 2 * PAGE, PAGE, NULL, &va));
	a = va;
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, PAGE, NULL, &va));
	b = va;
	ASSERT_EQ('p', a[0]);
	ASSERT_EQ('p', b[0]);
	/* outside the first attachment, inside the second */
	ASSERT_EQ(0, madvise(buf, PAGE, MADV_DONTNEED));
	ASSERT_EQ('p', a[0]);
	ASSERT_EQ(0, b[0]);
	ASSERT_EQ(0, madvise(buf + 2 * PAGE, PAGE, MADV_DONTNEED));
	ASSERT_EQ(0, a[0]);
	buf[2 * PAGE] = 'q';
	ASSERT_EQ('q', a[0]);
	ASSERT_EQ(0, xp_detach(self->fd, b));
	/* no attachment covers page 0 any more; page 2 still follows */
	ASSERT_EQ(0, madvise(buf, 4 * PAGE, MADV_DONTNEED));
	ASSERT_EQ(0, a[0]);
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, 4 * PAGE);
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
	ASSERT_EQ(0, pipe2(e, O_CLOEXEC));	/* end of file: exec done */
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
		    dup2(ch.to_child[0], 0) != 0)
			_exit(3);
		execl("/bin/sh", "sh", "-c", "read x; exit 0", (char *)NULL);
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
	ASSERT_EQ(0, read(e[0], &m, 1));
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
