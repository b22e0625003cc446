// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_copy.c - XPMEM_CMD_EXT_COPY and XPMEM_CMD_EXT_POPULATE, as ioctls
 * and as io_uring commands: every rejection on its own, data checked byte
 * for byte across processes, removed segments, exited owners, read-only
 * permits and owner pages, copy-on-write in the owner, many copies in
 * flight.
 *
 * Needs the module loaded (skips otherwise); io_uring tests skip where
 * the kernel refuses io_uring_setup().
 */
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

_Static_assert(sizeof(struct xpmem_ext_copy) == 64, "copy size");
_Static_assert(offsetof(struct xpmem_ext_copy, flags) == 32, "copy flags");
_Static_assert(offsetof(struct xpmem_ext_copy, reserved) == 40, "copy rsv");
_Static_assert(sizeof(struct xpmem_ext_populate) == 40, "populate size");
_Static_assert(offsetof(struct xpmem_ext_populate, reserved) == 24, "rsv");
_Static_assert(sizeof(struct xpmem_ext_iov) == sizeof(struct iovec), "iov");
_Static_assert(sizeof(struct xpmem_ext_uring_cmd) == 16, "uring cmd");

#define LEN	(4 * 1024 * 1024UL)

FIXTURE(copy)
{
	int fd;
	long segs, permits, atts;
	struct own_seg s;		/* LEN bytes of its own, 2 permits */
	char *dst;			/* LEN bytes of local memory */
};

FIXTURE_SETUP(copy)
{
	XP_FIXTURE_OPEN();
	ASSERT_EQ(0, own_seg_setup(self->fd, &self->s, LEN));
	self->dst = map_anon(LEN);
	ASSERT_NE(NULL, self->dst);
}

FIXTURE_TEARDOWN(copy)
{
	if (self->fd < 0)
		return;
	own_seg_teardown(self->fd, &self->s);
	munmap(self->dst, LEN);
	close(self->fd);
}

static struct xpmem_ext_copy cp(xpmem_apid_t apid, uint64_t off, void *addr,
				uint64_t len, unsigned int flags)
{
	struct xpmem_ext_copy c = {
		.apid = apid, .offset = off, .addr = (uintptr_t)addr,
		.len = len, .flags = flags,
	};

	return c;
}

static long copy_from(int fd, xpmem_apid_t apid, uint64_t off, void *buf,
		      uint64_t len)
{
	struct xpmem_ext_copy c = cp(apid, off, buf, len, 0);

	return xp_ext_copy(fd, &c);
}

static long copy_to(int fd, xpmem_apid_t apid, uint64_t off, void *buf,
		    uint64_t len)
{
	struct xpmem_ext_copy c = cp(apid, off, buf, len, XPMEM_EXT_COPY_TO);

	return xp_ext_copy(fd, &c);
}

/* Does @p hold bytes [@off, @off + @len) of fill(.., @seed)? */
static int check_at(const void *p, size_t off, size_t len, unsigned int seed)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		if (c[i] != pattern_byte(seed, off + i))
			return -1;
	return 0;
}

TEST_F(copy, query_reports_copy_and_uring)
{
	struct xpmem_ext_query q = { 0 };

	ASSERT_EQ(0, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, &q));
	ASSERT_NE(0, q.features & XPMEM_EXT_KF_COPY);
	/* io_uring commands exactly where the kernel has them */
	ASSERT_EQ(kernel_has_uring_cmd(), !!(q.features & XPMEM_EXT_KF_URING));
	ASSERT_NE(0, q.commands & XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_COPY));
	ASSERT_NE(0, q.commands & XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_POPULATE));
}

TEST_F(copy, rejects_each_bad_field)
{
	struct xpmem_ext_copy c;
	struct xpmem_ext_iov iov[2] = {
		{ (uintptr_t)self->dst, PAGE }, { (uintptr_t)self->dst, PAGE },
	};

	c = cp(self->s.rw, 0, self->dst, PAGE, 0x4);
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	c = cp(self->s.rw, 0, self->dst, PAGE, 0x80000000U);
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	c = cp(self->s.rw, 0, self->dst, PAGE, 0);
	c.reserved0 = 1;
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	for (int i = 0; i < 3; i++) {
		c = cp(self->s.rw, 0, self->dst, PAGE, 0);
		c.reserved[i] = 1;
		ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	}
	c = cp(0, 0, self->dst, PAGE, 0);
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	c = cp(-1, 0, self->dst, PAGE, 0);
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	/* vectors: no element, too many */
	c = cp(self->s.rw, 0, iov, 0, XPMEM_EXT_COPY_IOV);
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	c = cp(self->s.rw, 0, iov, XPMEM_EXT_IOV_MAX + 1, XPMEM_EXT_COPY_IOV);
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	/* ranges past the segment: offset, length, both wrapping */
	c = cp(self->s.rw, LEN + 1, self->dst, 0, 0);
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	c = cp(self->s.rw, LEN - PAGE, self->dst, PAGE + 1, 0);
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	c = cp(self->s.rw, UINT64_MAX - 10, self->dst, 100, 0);
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	c = cp(self->s.rw, 0, iov, 2, XPMEM_EXT_COPY_IOV);
	iov[1].len = LEN;	/* PAGE + LEN > LEN */
	ASSERT_EQ(-EINVAL, xp_ext_copy(self->fd, &c));
	/* unknown permit */
	c = cp(self->s.rw + 0x10000, 0, self->dst, PAGE, 0);
	ASSERT_EQ(-ENOENT, xp_ext_copy(self->fd, &c));
	/* local buffers that are not the caller's memory */
	c = cp(self->s.rw, 0, (void *)(~0UL << 47), PAGE, 0);
	ASSERT_EQ(-EFAULT, xp_ext_copy(self->fd, &c));
	c = cp(self->s.rw, 0, (void *)(~0UL << 47), 2, XPMEM_EXT_COPY_IOV);
	ASSERT_EQ(-EFAULT, xp_ext_copy(self->fd, &c));
	ASSERT_EQ(-1, ioctl(self->fd, XPMEM_CMD_EXT_COPY, (void *)8));
	ASSERT_EQ(EFAULT, errno);
	/* nothing moved through any of these */
	ASSERT_EQ(0, all_bytes(self->dst, 2 * PAGE, 0));
	ASSERT_EQ(0, check(self->s.buf, LEN, 31));
}

TEST_F(copy, zero_length_copies_nothing)
{
	ASSERT_EQ(0, copy_from(self->fd, self->s.rw, LEN, self->dst, 0));
	ASSERT_EQ(0, copy_to(self->fd, self->s.rw, 0, self->dst, 0));
	ASSERT_EQ(0, check(self->s.buf, LEN, 31));
}

TEST_F(copy, from_reads_unaligned_ranges)
{
	static const size_t offs[] = { 0, 1, 4095, 4096, 12345, LEN - 9 };
	static const size_t lens[] = { 1, 7, 4096, 4097, 3 * 4096 + 5, 9 };

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		memset(self->dst, 0, 5 * PAGE);
		ASSERT_EQ((long)lens[i], copy_from(self->fd, self->s.ro,
						   offs[i],
						   self->dst + 3, lens[i]));
		ASSERT_EQ(0, check_at(self->dst + 3, offs[i], lens[i], 31));
		ASSERT_EQ(0, all_bytes(self->dst, 3, 0));
		ASSERT_EQ(0, self->dst[3 + lens[i]]);
	}
	/* the whole segment at once */
	ASSERT_EQ((long)LEN,
		  copy_from(self->fd, self->s.rw, 0, self->dst, LEN));
	ASSERT_EQ(0, check(self->dst, LEN, 31));
}

TEST_F(copy, to_writes_the_owner)
{
	fill(self->dst, LEN, 77);
	ASSERT_EQ((long)(LEN - 2 * PAGE - 3),
		  copy_to(self->fd, self->s.rw, PAGE + 1, self->dst + 1,
			  LEN - 2 * PAGE - 3));
	ASSERT_EQ(0, check_at(self->s.buf, 0, PAGE + 1, 31));
	for (size_t i = PAGE + 1; i < LEN - PAGE - 2; i++)
		ASSERT_EQ(self->dst[i - PAGE], self->s.buf[i]);
	ASSERT_EQ(0, check_at(self->s.buf + LEN - PAGE - 2, LEN - PAGE - 2,
			      PAGE + 2, 31));
}

TEST_F(copy, to_through_rdonly_permit_eacces)
{
	memset(self->dst, 0x5a, PAGE);
	ASSERT_EQ(-EACCES, copy_to(self->fd, self->s.ro, 0, self->dst, PAGE));
	ASSERT_EQ(0, check(self->s.buf, LEN, 31));
}

TEST_F(copy, iov_gathers_and_scatters)
{
	struct xpmem_ext_iov iov[3] = {
		{ (uintptr_t)(self->dst + 5), 3 },
		{ (uintptr_t)(self->dst + 2 * PAGE), 2 * PAGE + 1 },
		{ (uintptr_t)(self->dst + 8 * PAGE + 17), 100 },
	};
	struct xpmem_ext_copy c = cp(self->s.rw, 999, iov, 3,
				     XPMEM_EXT_COPY_IOV);
	size_t total = 3 + 2 * PAGE + 1 + 100;

	ASSERT_EQ((long)total, xp_ext_copy(self->fd, &c));
	ASSERT_EQ(0, check_at(self->dst + 5, 999, 3, 31));
	ASSERT_EQ(0, check_at(self->dst + 2 * PAGE, 1002, 2 * PAGE + 1, 31));
	ASSERT_EQ(0, check_at(self->dst + 8 * PAGE + 17, 1003 + 2 * PAGE,
			      100, 31));
	/* and back: the same elements gather into the segment */
	memset(self->dst, 0xee, 9 * PAGE);
	c.flags |= XPMEM_EXT_COPY_TO;
	c.offset = 3 * PAGE;
	ASSERT_EQ((long)total, xp_ext_copy(self->fd, &c));
	ASSERT_EQ(0, all_bytes(self->s.buf + 3 * PAGE, total, 0xee));
	ASSERT_EQ(0, check_at(self->s.buf + 3 * PAGE + total, 3 * PAGE + total,
			      PAGE, 31));
	/* more elements than fit on the kernel's stack, one byte each */
	{
		struct xpmem_ext_iov many[XPMEM_EXT_IOV_MAX];

		for (int i = 0; i < XPMEM_EXT_IOV_MAX; i++) {
			many[i].base = (uintptr_t)(self->dst + 2 * i);
			many[i].len = 1;
		}
		c = cp(self->s.ro, 0, many, XPMEM_EXT_IOV_MAX,
		       XPMEM_EXT_COPY_IOV);
		ASSERT_EQ(XPMEM_EXT_IOV_MAX, xp_ext_copy(self->fd, &c));
		for (int i = 0; i < XPMEM_EXT_IOV_MAX; i++)
			ASSERT_EQ(0, check_at(self->dst + 2 * i, i, 1, 31));
	}
}

TEST_F(copy, released_permit_and_removed_segment_enoent)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;

	ASSERT_EQ(0, xp_release(self->fd, self->s.ro));
	ASSERT_EQ(-ENOENT, copy_from(self->fd, self->s.ro, 0, self->dst, PAGE));
	ASSERT_EQ(0, xp_get(self->fd, self->s.segid, XPMEM_RDONLY,
			    &self->s.ro));
	/* a second segment, removed while a permit to it is held */
	ASSERT_EQ(0, xp_make(self->fd, self->s.buf, PAGE, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ((long)PAGE, copy_from(self->fd, apid, 0, self->dst, PAGE));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_EQ(-ENOENT, copy_from(self->fd, apid, 0, self->dst, PAGE));
	ASSERT_EQ(-ENOENT, copy_to(self->fd, apid, 0, self->dst, PAGE));
	xp_release(self->fd, apid);
	ASSERT_EQ(0, check(self->s.buf, LEN, 31));
}

/* A process that did not open the device gets the classic NOPROC. */
TEST_F(copy, after_fork_noproc)
{
	pid_t pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		long r = copy_from(self->fd, self->s.rw, 0, self->dst, PAGE);

		_exit(r == -XPMEM_ERRNO_NOPROC ? 0 : 1);
	}
	ASSERT_EQ(0, wait_child(pid));
}

/*
 * An owner in a child: it exports @len bytes at @buf (its own copy of
 * them after fork) with mode 0600, sends the segid, waits for one byte
 * and exits with what @check returns for its bytes (0 without one).
 */
struct owner {
	pid_t pid;
	struct chan ch;
	xpmem_segid_t segid;
};

static int owner_start(struct owner *o, char *buf, size_t len,
		       int (*check)(const char *buf, size_t len))
{
	char c;

	if (chan_init(&o->ch))
		return -1;
	o->pid = fork_child();
	if (o->pid < 0)
		return -1;
	if (o->pid == 0) {
		int fd = xp_open();
		xpmem_segid_t s;

		chan_child(&o->ch);
		if (fd < 0 || xp_make(fd, buf, len, 0600, &s) ||
		    send_msg(o->ch.to_parent[1], &s, sizeof(s)))
			_exit(10);
		if (recv_msg(o->ch.to_child[0], &c, 1))
			_exit(11);
		_exit(check && check(buf, len) ? 12 : 0);
	}
	chan_parent(&o->ch);
	return recv_msg(o->ch.to_parent[0], &o->segid, sizeof(o->segid));
}

/* Let the owner check and exit (@kill: SIGKILL it); its wait_child(). */
static int owner_end(struct owner *o, int kill_it)
{
	char c = 0;
	int st;

	if (kill_it)
		kill(o->pid, SIGKILL);
	else
		send_msg(o->ch.to_child[1], &c, 1);
	st = wait_child(o->pid);
	close(o->ch.to_child[1]);
	close(o->ch.to_parent[0]);
	return st;
}

/* What cross_process_then_owner_exit_enoent leaves in the owner. */
static int written_by_peer(const char *b, size_t len)
{
	return check_at(b, 0, PAGE, 5) ||
	       all_bytes(b + PAGE, len - 2 * PAGE, 0x3c) ||
	       check_at(b + len - PAGE, len - PAGE, PAGE, 5);
}

/*
 * Owner in a child: the parent copies its bytes out and writes its own
 * in, the child checks them; after the owner exits, ENOENT.
 */
TEST_F(copy, cross_process_then_owner_exit_enoent)
{
	const size_t len = 1024 * 1024 + 3 * PAGE;
	char *b = map_anon(len);
	struct owner o;
	xpmem_apid_t apid;

	ASSERT_NE(NULL, b);
	fill(b, len, 5);
	ASSERT_EQ(0, owner_start(&o, b, len, written_by_peer));
	munmap(b, len);
	ASSERT_EQ(0, xp_get(self->fd, o.segid, XPMEM_RDWR, &apid));
	ASSERT_EQ((long)len, copy_from(self->fd, apid, 0, self->dst, len));
	ASSERT_EQ(0, check(self->dst, len, 5));
	memset(self->dst, 0x3c, len);
	ASSERT_EQ((long)(len - 2 * PAGE),
		  copy_to(self->fd, apid, PAGE, self->dst, len - 2 * PAGE));
	ASSERT_EQ(0, owner_end(&o, 0));
	ASSERT_EQ(-ENOENT, copy_from(self->fd, apid, 0, self->dst, PAGE));
	ASSERT_EQ(-ENOENT, copy_to(self->fd, apid, 0, self->dst, PAGE));
	xp_release(self->fd, apid);
}

/* Another process's permit (an apid it sent over) is not the caller's. */
TEST_F(copy, another_process_permit_eacces)
{
	xpmem_apid_t apid;
	struct chan ch;
	char done = 0;
	pid_t pid;

	ASSERT_EQ(0, chan_init(&ch));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = xp_open();
		xpmem_apid_t a;

		chan_child(&ch);
		if (fd < 0 || xp_get(fd, self->s.segid, XPMEM_RDWR, &a) ||
		    send_msg(ch.to_parent[1], &a, sizeof(a)) ||
		    recv_msg(ch.to_child[0], &done, 1))
			_exit(10);
		_exit(0);
	}
	chan_parent(&ch);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &apid, sizeof(apid)));
	ASSERT_EQ(-EACCES, copy_from(self->fd, apid, 0, self->dst, PAGE));
	ASSERT_EQ(-EACCES, copy_to(self->fd, apid, 0, self->dst, PAGE));
	ASSERT_EQ(0, send_msg(ch.to_child[1], &done, 1));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, check(self->s.buf, LEN, 31));
	close(ch.to_child[1]);
	close(ch.to_parent[0]);
}

/*
 * Owner memory a copy cannot have: a hole stops it (EFAULT at once, or
 * short after the first byte); a read-only owner page refuses COPY_TO
 * and keeps its bytes.
 */
TEST_F(copy, owner_holes_and_readonly_pages)
{
	char *hole = self->s.buf + 8 * PAGE;

	ASSERT_EQ(0, munmap(hole, PAGE));
	ASSERT_EQ(-EFAULT, copy_from(self->fd, self->s.rw, 8 * PAGE,
				     self->dst, PAGE));
	ASSERT_EQ((long)(PAGE + 10),
		  copy_from(self->fd, self->s.rw, 7 * PAGE - 10, self->dst,
			    3 * PAGE));
	ASSERT_EQ(0, check_at(self->dst, 7 * PAGE - 10, PAGE + 10, 31));
	ASSERT_NE(MAP_FAILED, mmap(hole, PAGE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				   -1, 0));
	fill(hole, PAGE, 2);
	ASSERT_EQ((long)PAGE, copy_from(self->fd, self->s.rw, 8 * PAGE,
					self->dst, PAGE));
	ASSERT_EQ(0, check(self->dst, PAGE, 2));

	ASSERT_EQ(0, mprotect(self->s.buf + 16 * PAGE, PAGE, PROT_READ));
	memset(self->dst, 0x11, 2 * PAGE);
	ASSERT_EQ(-EFAULT, copy_to(self->fd, self->s.rw, 16 * PAGE, self->dst,
				   PAGE));
	ASSERT_EQ((long)PAGE, copy_to(self->fd, self->s.rw, 15 * PAGE,
				      self->dst, 2 * PAGE));
	ASSERT_EQ(0, all_bytes(self->s.buf + 15 * PAGE, PAGE, 0x11));
	ASSERT_EQ(0, check_at(self->s.buf + 16 * PAGE, 16 * PAGE, PAGE, 31));
	/* reading a read-only page is fine; PROT_NONE is not */
	ASSERT_EQ((long)PAGE, copy_from(self->fd, self->s.ro, 16 * PAGE,
					self->dst, PAGE));
	ASSERT_EQ(0, mprotect(self->s.buf + 16 * PAGE, PAGE, PROT_NONE));
	ASSERT_EQ(-EFAULT, copy_from(self->fd, self->s.ro, 16 * PAGE,
				     self->dst, PAGE));
	ASSERT_EQ(0, mprotect(self->s.buf + 16 * PAGE, PAGE,
			      PROT_READ | PROT_WRITE));
}

/*
 * COPY_TO into pages the owner shares copy-on-write with its child
 * writes the owner's own copy, as a store of the owner would: the child
 * keeps the old bytes.
 */
TEST_F(copy, to_breaks_cow_in_the_owner)
{
	struct chan ch;
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, chan_init(&ch));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		chan_child(&ch);
		if (send_msg(ch.to_parent[1], &c, 1) ||
		    recv_msg(ch.to_child[0], &c, 1))
			_exit(10);
		_exit(check(self->s.buf, LEN, 31) ? 11 : 0);
	}
	chan_parent(&ch);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &c, 1));
	memset(self->dst, 0x77, 4 * PAGE);
	ASSERT_EQ((long)(4 * PAGE),
		  copy_to(self->fd, self->s.rw, 2 * PAGE, self->dst, 4 * PAGE));
	ASSERT_EQ(0, all_bytes(self->s.buf + 2 * PAGE, 4 * PAGE, 0x77));
	ASSERT_EQ(0, send_msg(ch.to_child[1], &c, 1));
	ASSERT_EQ(0, wait_child(pid));
	close(ch.to_child[1]);
	close(ch.to_parent[0]);
}

/* A copy whose local buffer is an attachment of the same segment. */
TEST_F(copy, into_an_attachment_of_the_segment)
{
	void *va;
	char *a;

	ASSERT_EQ(0, xp_attach(self->fd, self->s.rw, 0, LEN, NULL, &va));
	a = va;
	ASSERT_EQ((long)(LEN / 2),
		  copy_from(self->fd, self->s.ro, LEN / 2, a, LEN / 2));
	ASSERT_EQ(0, check_at(self->s.buf, LEN / 2, LEN / 2, 31));
	ASSERT_EQ(0, memcmp(self->s.buf, self->s.buf + LEN / 2, LEN / 2));
	ASSERT_EQ(0, xp_detach(self->fd, va));
}

/* ---------------------------------------------------------- populate -- */

static long ext_populate(int fd, void *addr, uint64_t len, unsigned int flags)
{
	struct xpmem_ext_populate p = {
		.vaddr = (uintptr_t)addr, .len = len, .flags = flags,
	};

	return ioctl(fd, XPMEM_CMD_EXT_POPULATE, &p) ? -errno : 0;
}

TEST_F(copy, populate_rejects_each_bad_field)
{
	struct xpmem_ext_populate p;
	void *va;

	ASSERT_EQ(0, xp_attach(self->fd, self->s.rw, 0, LEN, NULL, &va));
	ASSERT_EQ(-EINVAL, ext_populate(self->fd, va, LEN, 0x2));
	ASSERT_EQ(-EINVAL, ext_populate(self->fd, (char *)va + 1, PAGE, 0));
	ASSERT_EQ(-EINVAL, ext_populate(self->fd, va, 0, 0));
	ASSERT_EQ(-EINVAL, ext_populate(self->fd, va, ~0ULL - PAGE, 0));
	p = (struct xpmem_ext_populate){ .vaddr = (uintptr_t)va, .len = PAGE,
					 .reserved0 = 1 };
	ASSERT_EQ(-1, ioctl(self->fd, XPMEM_CMD_EXT_POPULATE, &p));
	ASSERT_EQ(EINVAL, errno);
	for (int i = 0; i < 2; i++) {
		p = (struct xpmem_ext_populate){ .vaddr = (uintptr_t)va,
						 .len = PAGE };
		p.reserved[i] = 1;
		ASSERT_EQ(-1, ioctl(self->fd, XPMEM_CMD_EXT_POPULATE, &p));
		ASSERT_EQ(EINVAL, errno);
	}
	/* not an attachment, or running past one */
	ASSERT_EQ(-EFAULT, ext_populate(self->fd, self->dst, PAGE, 0));
	ASSERT_EQ(-EFAULT, ext_populate(self->fd, va, LEN + PAGE, 0));
	ASSERT_EQ(0, xp_detach(self->fd, va));
	/* a read-only attachment cannot be populated for writing */
	ASSERT_EQ(0, xp_attach(self->fd, self->s.ro, 0, LEN, NULL, &va));
	ASSERT_EQ(-EACCES, ext_populate(self->fd, va, PAGE,
					XPMEM_EXT_POPULATE_WRITE));
	ASSERT_EQ(0, ext_populate(self->fd, va, PAGE, 0));
	ASSERT_EQ(0, xp_detach(self->fd, va));
}

/* Populate in another process: then reading (writing) takes no fault. */
static void populate_child(xpmem_segid_t segid, int write)
{
	long faults;
	void *va;
	char *p;
	int fd;

	fd = xp_open();
	if (fd < 0)
		_exit(10);
	{
		xpmem_apid_t apid;

		if (xp_get(fd, segid, XPMEM_RDWR, &apid) ||
		    xp_attach(fd, apid, 0, LEN, NULL, &va))
			_exit(11);
	}
	p = va;
	faults = stat_read("faults");
	/* the second half only, from its middle page on */
	if (ext_populate(fd, p + LEN / 2, LEN / 2,
			 write ? XPMEM_EXT_POPULATE_WRITE : 0))
		_exit(12);
	if (stat_read("faults") - faults < 1)
		_exit(13);
	faults = stat_read("faults");
	if (check_at(p + LEN / 2, LEN / 2, LEN / 2, 31))
		_exit(14);
	if (write)
		for (size_t i = LEN / 2; i < LEN; i += PAGE)
			p[i] = (char)(i / PAGE);
	if (stat_read("faults") != faults)
		_exit(15);
	/*
	 * The first half was left alone: reading it faults, unless one fault
	 * window covers both halves (64 KiB pages: 512 MiB windows), when
	 * populating the second half mapped the first too.
	 */
	if (check(p, PAGE, 31))
		_exit(16);
	if (xt_fault_window(fd) <= LEN / 2 && stat_read("faults") == faults)
		_exit(17);
	_exit(0);
}

TEST_F(copy, populate_read_then_no_faults)
{
	pid_t pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0)
		populate_child(self->s.segid, 0);
	ASSERT_EQ(0, wait_child(pid));
}

TEST_F(copy, populate_write_then_no_faults)
{
	pid_t pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0)
		populate_child(self->s.segid, 1);
	ASSERT_EQ(0, wait_child(pid));
	for (size_t i = LEN / 2; i < LEN; i += PAGE)
		ASSERT_EQ((char)(i / PAGE), self->s.buf[i]);
}

/* ------------------------------------------------------------ io_uring -- */

/* io_uring commands need 5.19 (query_reports_copy_and_uring checks QUERY) */
#define URING_CMD_SKIP_UNLESS() do {					\
	if (!kernel_has_uring_cmd())					\
		SKIP(return, "the kernel has no io_uring commands (5.19)"); \
} while (0)

#define RING_SKIP_UNLESS(r) do {					\
	int _e;								\
									\
	URING_CMD_SKIP_UNLESS();					\
	_e = io_uring_queue_init(64, (r), 0);				\
	if (_e == -ENOSYS || _e == -EPERM)				\
		SKIP(return, "io_uring unavailable (%s)", strerror(-_e)); \
	ASSERT_EQ(0, _e);						\
} while (0)

/* Queue one xpmem command: cmd_op @op, argument @arg, tag @tag. */
static struct io_uring_sqe *prep_sqe(struct io_uring *ring, int fd,
				     unsigned int op, const void *arg,
				     uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return NULL;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	sqe->addr3 = (uintptr_t)arg;
	sqe->user_data = tag;
	return sqe;
}

static int prep_cmd(struct io_uring *ring, int fd, unsigned int op,
		    const void *arg, uint64_t tag)
{
	return prep_sqe(ring, fd, op, arg, tag) ? 0 : -EBUSY;
}

/* Wait for @n completions; res of each by its tag into @res[tag]. */
static int reap(struct io_uring *ring, int n, int *res, int max)
{
	struct io_uring_cqe *cqe;

	for (int i = 0; i < n; i++) {
		if (io_uring_wait_cqe(ring, &cqe))
			return -1;
		if (cqe->user_data >= (uint64_t)max)
			return -1;
		res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

/*
 * 16 copies in flight, small (inline) and large (in workers), from and
 * to the segment, each checked byte for byte.
 */
TEST_F(copy, uring_many_in_flight)
{
	const size_t sizes[] = { 8, PAGE, 60000, 200 * 1024 + 1 };
	struct xpmem_ext_copy c[16];
	struct io_uring ring;
	int res[16];
	size_t off = 0;

	RING_SKIP_UNLESS(&ring);
	for (int i = 0; i < 16; i++) {
		size_t len = sizes[i % 4];

		c[i] = cp(self->s.ro, off + 1, self->dst + off, len, 0);
		ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY,
				      &c[i], i));
		off += 250 * 1024;
		res[i] = INT32_MIN;
	}
	ASSERT_EQ(16, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 16, res, 16));
	for (int i = 0; i < 16; i++) {
		ASSERT_EQ((int)c[i].len, res[i]);
		ASSERT_EQ(0, check_at((void *)(uintptr_t)c[i].addr,
				      c[i].offset, c[i].len, 31));
	}
	/* and the same 16 ranges written back shifted by one byte */
	for (int i = 0; i < 16; i++) {
		memset((void *)(uintptr_t)c[i].addr, 0x40 + i, c[i].len);
		c[i].apid = self->s.rw;
		c[i].flags = XPMEM_EXT_COPY_TO;
		ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY,
				      &c[i], i));
	}
	ASSERT_EQ(16, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 16, res, 16));
	for (int i = 0; i < 16; i++) {
		ASSERT_EQ((int)c[i].len, res[i]);
		ASSERT_EQ(0, all_bytes(self->s.buf + c[i].offset, c[i].len,
				       0x40 + i));
	}
	io_uring_queue_exit(&ring);
}

/* Errors arrive in the CQE, each as the ioctl would return it. */
TEST_F(copy, uring_errors_in_cqes)
{
	struct xpmem_ext_copy good = cp(self->s.rw, 0, self->dst, PAGE, 0);
	struct xpmem_ext_copy rdonly_to = cp(self->s.ro, 0, self->dst, PAGE,
					     XPMEM_EXT_COPY_TO);
	struct xpmem_ext_copy big_rdonly_to = cp(self->s.ro, 0, self->dst, LEN,
						 XPMEM_EXT_COPY_TO);
	struct xpmem_ext_copy bad_flag = cp(self->s.rw, 0, self->dst, PAGE, 8);
	struct xpmem_ext_copy no_permit = cp(self->s.rw + 0x10000, 0, self->dst,
					     PAGE, 0);
	struct xpmem_ext_populate bad_pop = { .vaddr = (uintptr_t)self->dst,
					      .len = PAGE };
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int res[8];

	RING_SKIP_UNLESS(&ring);
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY, &good, 0));
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY,
			      &rdonly_to, 1));
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY,
			      &big_rdonly_to, 2));
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY,
			      &bad_flag, 3));
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY,
			      &no_permit, 4));
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_POPULATE,
			      &bad_pop, 5));
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, _IO('x', 0x7f), &good, 6));
	/* a non-zero reserved word in the command area */
	sqe = prep_sqe(&ring, self->fd, XPMEM_CMD_EXT_COPY, &good, 7);
	ASSERT_NE(NULL, sqe);
	sqe->__pad2[0] = 1;
	ASSERT_EQ(8, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 8, res, 8));
	ASSERT_EQ((int)PAGE, res[0]);
	ASSERT_EQ(-EACCES, res[1]);
	ASSERT_EQ(-EACCES, res[2]);
	ASSERT_EQ(-EINVAL, res[3]);
	ASSERT_EQ(-ENOENT, res[4]);
	ASSERT_EQ(-EFAULT, res[5]);
	ASSERT_EQ(-ENOTTY, res[6]);
	ASSERT_EQ(-EINVAL, res[7]);
	ASSERT_EQ(0, check(self->s.buf, LEN, 31));
	io_uring_queue_exit(&ring);
}

/* A copy with IORING_URING_CMD_FIXED: ring's registered buffer @index. */
static int prep_fixed(struct io_uring *ring, int fd, const void *arg,
		      uint64_t tag, unsigned int index)
{
	struct io_uring_sqe *sqe = prep_sqe(ring, fd, XPMEM_CMD_EXT_COPY, arg,
					    tag);

	if (!sqe)
		return -EBUSY;
	sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
	sqe->buf_index = (uint16_t)index;
	return 0;
}

/*
 * Copies to and from a buffer registered with the ring, small (inline)
 * and large (workers), checked byte for byte; a range reaching past the
 * registered buffer, a vector and an unknown buffer index fail in the CQE.
 */
TEST_F(copy, uring_registered_buffer)
{
	struct xpmem_ext_copy c[5] = {
		cp(self->s.ro, 5, self->dst + 3, 100, 0),
		cp(self->s.ro, PAGE, self->dst + PAGE, (1 << 20) + 7, 0),
		cp(self->s.rw, 3 << 20, self->dst + (2 << 20), 3 * PAGE,
		   XPMEM_EXT_COPY_TO),
		cp(self->s.ro, 0, self->dst + LEN - PAGE, 2 * PAGE, 0),
		cp(self->s.ro, 0, self->dst, 1, XPMEM_EXT_COPY_IOV),
	};
	struct xpmem_ext_query q = { 0 };
	struct iovec reg = { self->dst, LEN };
	struct io_uring ring;
	int res[6];

	RING_SKIP_UNLESS(&ring);
	ASSERT_EQ(0, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, &q));
	ASSERT_NE(0, q.features & XPMEM_EXT_KF_URING_FIXED);
	/* nothing registered yet: io_uring itself refuses the index */
	ASSERT_EQ(0, prep_fixed(&ring, self->fd, &c[0], 0, 0));
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 1, res, 6));
	ASSERT_EQ(-EFAULT, res[0]);

	ASSERT_EQ(0, io_uring_register_buffers(&ring, &reg, 1));
	memset(self->dst + (2 << 20), 0x6b, 3 * PAGE);
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, prep_fixed(&ring, self->fd, &c[i], i, 0));
	ASSERT_EQ(0, prep_fixed(&ring, self->fd, &c[0], 5, 1));
	ASSERT_EQ(6, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 6, res, 6));
	ASSERT_EQ(100, res[0]);
	ASSERT_EQ(0, check_at(self->dst + 3, 5, 100, 31));
	ASSERT_EQ((1 << 20) + 7, res[1]);
	ASSERT_EQ(0, check_at(self->dst + PAGE, PAGE, (1 << 20) + 7, 31));
	ASSERT_EQ(3 * (int)PAGE, res[2]);
	ASSERT_EQ(0, all_bytes(self->s.buf + (3 << 20), 3 * PAGE, 0x6b));
	ASSERT_EQ(-EFAULT, res[3]);
	ASSERT_EQ(-EINVAL, res[4]);
	ASSERT_EQ(-EFAULT, res[5]);
	io_uring_queue_exit(&ring);
}

/*
 * Small copies (tried inline first) that meet an owner hole: the
 * completion carries what the ioctl returns, a short count or EFAULT.
 */
TEST_F(copy, uring_small_copies_at_a_hole)
{
	struct xpmem_ext_copy shortc = cp(self->s.ro, 19 * PAGE, self->dst,
					  2 * PAGE, 0);
	struct xpmem_ext_copy holec = cp(self->s.ro, 20 * PAGE, self->dst,
					 PAGE, 0);
	struct io_uring ring;
	int res[2];

	RING_SKIP_UNLESS(&ring);
	ASSERT_EQ(0, munmap(self->s.buf + 20 * PAGE, PAGE));
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY, &shortc, 0));
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY, &holec, 1));
	ASSERT_EQ(2, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 2, res, 2));
	ASSERT_EQ((int)PAGE, res[0]);
	ASSERT_EQ(-EFAULT, res[1]);
	ASSERT_EQ(0, check_at(self->dst, 19 * PAGE, PAGE, 31));
	io_uring_queue_exit(&ring);
}

/* A ring command against a removed segment, and after the owner exits. */
TEST_F(copy, uring_removed_segment_and_exited_owner)
{
	struct xpmem_ext_copy c;
	struct io_uring ring;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	struct owner o;
	int res[2];

	RING_SKIP_UNLESS(&ring);
	ASSERT_EQ(0, xp_make(self->fd, self->s.buf, LEN, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	c = cp(apid, 0, self->dst, LEN, 0);
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY, &c, 0));
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 1, res, 1));
	ASSERT_EQ(-ENOENT, res[0]);
	xp_release(self->fd, apid);

	ASSERT_EQ(0, owner_start(&o, self->s.buf, LEN, NULL));
	ASSERT_EQ(0, xp_get(self->fd, o.segid, XPMEM_RDWR, &apid));
	c = cp(apid, 0, self->dst, LEN, 0);
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY, &c, 0));
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 1, res, 1));
	ASSERT_EQ((int)LEN, res[0]);
	ASSERT_EQ(0, check(self->dst, LEN, 31));
	ASSERT_EQ(0, owner_end(&o, 0));
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY, &c, 1));
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 1, res, 2));
	ASSERT_EQ(-ENOENT, res[1]);
	xp_release(self->fd, apid);
	io_uring_queue_exit(&ring);
}

/* POPULATE through the ring: afterwards the range reads without faults. */
TEST_F(copy, uring_populate)
{
	struct xpmem_ext_populate p = { 0 };
	struct io_uring ring;
	long faults;
	int res[1];
	void *va;

	RING_SKIP_UNLESS(&ring);
	ASSERT_EQ(0, xp_attach(self->fd, self->s.ro, 0, LEN, NULL, &va));
	p.vaddr = (uintptr_t)va;
	p.len = LEN;
	faults = stat_read("faults");
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_POPULATE, &p, 0));
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 1, res, 1));
	ASSERT_EQ(0, res[0]);
	ASSERT_LT(faults, stat_read("faults"));
	faults = stat_read("faults");
	ASSERT_EQ(0, check(va, LEN, 31));
	ASSERT_EQ(faults, stat_read("faults"));
	/* writing through a read-only attachment is refused */
	p.flags = XPMEM_EXT_POPULATE_WRITE;
	ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_POPULATE, &p, 0));
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, reap(&ring, 1, res, 1));
	ASSERT_EQ(-EACCES, res[0]);
	ASSERT_EQ(0, xp_detach(self->fd, va));
	io_uring_queue_exit(&ring);
}

/* Another process's device file through the caller's ring: NOPROC. */
TEST_F(copy, uring_after_fork_noproc)
{
	pid_t pid;

	URING_CMD_SKIP_UNLESS();
	pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_ext_copy c = cp(self->s.rw, 0, self->dst, PAGE, 0);
		struct io_uring_cqe *cqe;
		struct io_uring ring;

		if (io_uring_queue_init(4, &ring, 0))
			_exit(0);	/* no io_uring: nothing to check */
		if (prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY, &c, 0) ||
		    io_uring_submit(&ring) != 1 ||
		    io_uring_wait_cqe(&ring, &cqe))
			_exit(10);
		_exit(cqe->res == -XPMEM_ERRNO_NOPROC ? 0 : 11);
	}
	ASSERT_EQ(0, wait_child(pid));
}

/*
 * The owner exits (killed) while large copies of its memory are in
 * flight: each completes whole or fails cleanly, nothing hangs.
 */
TEST_F(copy, uring_owner_killed_mid_flight)
{
	struct xpmem_ext_copy c[8];
	struct io_uring ring;
	xpmem_apid_t apid;
	struct owner o;
	int res[8];

	RING_SKIP_UNLESS(&ring);
	ASSERT_EQ(0, owner_start(&o, self->s.buf, LEN, NULL));
	ASSERT_EQ(0, xp_get(self->fd, o.segid, XPMEM_RDONLY, &apid));
	for (int i = 0; i < 8; i++) {
		c[i] = cp(apid, 0, self->dst, LEN, 0);
		ASSERT_EQ(0, prep_cmd(&ring, self->fd, XPMEM_CMD_EXT_COPY,
				      &c[i], i));
	}
	ASSERT_EQ(8, io_uring_submit(&ring));
	ASSERT_EQ(128 + SIGKILL, owner_end(&o, 1));
	ASSERT_EQ(0, reap(&ring, 8, res, 8));
	for (int i = 0; i < 8; i++) {
		ASSERT_TRUE(res[i] == (int)LEN || res[i] == -ENOENT ||
			    (res[i] > 0 && res[i] < (int)LEN)) {
			TH_LOG("copy %d: %d", i, res[i]);
		}
	}
	xp_release(self->fd, apid);
	io_uring_queue_exit(&ring);
}

/*
 * The submitter is killed (SIGKILL) with large copies in flight in
 * io_uring's workers, and with populates: nothing hangs, nothing stays
 * pinned or referenced (the counters return, the owner's memory is
 * intact and can be written by the owner).
 */
TEST_F(copy, uring_submitter_killed_mid_flight)
{
	struct chan ch;
	char ready = 0;
	pid_t pid;

	URING_CMD_SKIP_UNLESS();
	ASSERT_EQ(0, chan_init(&ch));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_ext_copy c[16];
		struct xpmem_ext_populate p = { 0 };
		struct io_uring ring;
		xpmem_apid_t apid;
		char *dst = map_anon(LEN);
		void *va;
		int fd = xp_open();

		chan_child(&ch);
		if (fd < 0 || !dst || io_uring_queue_init(32, &ring, 0))
			_exit(10);
		if (xp_get(fd, self->s.segid, XPMEM_RDWR, &apid) ||
		    xp_attach(fd, apid, 0, LEN, NULL, &va))
			_exit(11);
		p.vaddr = (uintptr_t)va;
		p.len = LEN;
		for (int i = 0; i < 16; i++) {
			c[i] = cp(apid, 0, dst, LEN,
				  i % 2 ? XPMEM_EXT_COPY_TO : 0);
			if (prep_cmd(&ring, fd, XPMEM_CMD_EXT_COPY, &c[i], i))
				_exit(12);
		}
		if (prep_cmd(&ring, fd, XPMEM_CMD_EXT_POPULATE, &p, 16) ||
		    io_uring_submit(&ring) != 17)
			_exit(13);
		if (send_msg(ch.to_parent[1], &ready, 1))
			_exit(14);
		for (;;)
			pause();
	}
	chan_parent(&ch);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &ready, 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(128 + SIGKILL, wait_child(pid));
	close(ch.to_child[1]);
	close(ch.to_parent[0]);
	/*
	 * The child's permit and attachment go with its files, which its
	 * ring holds until io_uring's exit work (a kernel worker, after the
	 * child is reaped) has dropped them: no event tells userspace, so
	 * wait for the counters, at most 10 s.
	 */
	for (int i = 0; i < 500; i++) {
		if (stat_read("permits") == self->permits + 2 &&
		    stat_read("attachments") == self->atts)
			break;
		poll(NULL, 0, 20);
	}
	ASSERT_EQ(self->segs + 1, stat_read("segments"));
	ASSERT_EQ(self->permits + 2, stat_read("permits"));
	ASSERT_EQ(self->atts, stat_read("attachments"));
	/* the owner's memory is still its own to write, and to copy */
	memset(self->s.buf, 0x21, LEN);
	ASSERT_EQ((long)LEN,
		  copy_from(self->fd, self->s.ro, 0, self->dst, LEN));
	ASSERT_EQ(0, all_bytes(self->dst, LEN, 0x21));
}

TEST_F(copy, counters_back_at_base)
{
	xp_release(self->fd, self->s.rw);
	xp_release(self->fd, self->s.ro);
	xp_remove(self->fd, self->s.segid);
	self->s.rw = self->s.ro = 0;
	self->s.segid = 0;
	ASSERT_COUNTERS_AT_BASE();
}

TEST_HARNESS_MAIN
