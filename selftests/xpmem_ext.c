// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_ext - selftests of the extension commands of xpmem.ko
 * (XPMEM_CMD_EXT_QUERY, XPMEM_CMD_EXT_ATTACH) through raw ioctls: what they
 * report and map, and every rejection on its own.
 *
 * Runs as root inside the test VM with the module loaded; skips when
 * /dev/xpmem is absent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* The layouts xpmem_uapi.h documents, checked where they are used. */
_Static_assert(sizeof(struct xpmem_ext_query) == 80, "query size");
_Static_assert(offsetof(struct xpmem_ext_query, features) == 16, "features");
_Static_assert(offsetof(struct xpmem_ext_query, reserved) == 48, "reserved");
_Static_assert(sizeof(struct xpmem_ext_attach) == 64, "attach size");
_Static_assert(offsetof(struct xpmem_ext_attach, flags) == 32, "flags");
_Static_assert(offsetof(struct xpmem_ext_attach, reserved) == 40, "reserved");
_Static_assert(sizeof(struct xpmem_ext_make) == 160, "make size");
_Static_assert(offsetof(struct xpmem_ext_make, auth) == 72, "make auth");
_Static_assert(offsetof(struct xpmem_ext_make, segid) == 136, "make segid");
_Static_assert(sizeof(struct xpmem_ext_get) == 152, "get size");
_Static_assert(offsetof(struct xpmem_ext_get, key) == 24, "get key");
_Static_assert(offsetof(struct xpmem_ext_get, apid) == 128, "get apid");

#define LEN	(4 * 1024 * 1024UL)

FIXTURE(ext)
{
	int fd;
	long segs, permits, atts;
	struct own_seg s;		/* LEN bytes of its own, 2 permits */
};

FIXTURE_SETUP(ext)
{
	XP_FIXTURE_OPEN();
	ASSERT_EQ(0, own_seg_setup(self->fd, &self->s, LEN));
}

FIXTURE_TEARDOWN(ext)
{
	if (self->fd < 0)
		return;
	own_seg_teardown(self->fd, &self->s);
	close(self->fd);
}

static int ext_attach(int fd, struct xpmem_ext_attach *a)
{
	return xp_ioctl(fd, XPMEM_CMD_EXT_ATTACH, a);
}

/* A valid EXT_ATTACH of the whole segment through @apid. */
static struct xpmem_ext_attach whole(xpmem_apid_t apid, unsigned int flags)
{
	struct xpmem_ext_attach a = {
		.apid = apid, .size = LEN, .flags = flags,
	};

	return a;
}

TEST_F(ext, query_reports_the_module)
{
	struct xpmem_ext_query q;

	memset(&q, 0xa5, sizeof(q));
	q.flags = 0;
	q.reserved0 = 0;
	memset(q.reserved, 0, sizeof(q.reserved));
	ASSERT_EQ(0, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, &q));
	ASSERT_EQ(XPMEM_EXT_ABI_VERSION, q.abi_version);
	ASSERT_EQ(ioctl(self->fd, XPMEM_CMD_VERSION, 0), (int)q.module_version);
	ASSERT_EQ(sysfs_read_long(PARAM_DIR, "fault_window_pages"),
		  (long)q.fault_window_pages);
	ASSERT_EQ(sysfs_read_long(PARAM_DIR, "max_segments"),
		  (long)q.max_segments);
	ASSERT_EQ(sysfs_read_long(PARAM_DIR, "max_permits"),
		  (long)q.max_permits);
	ASSERT_EQ(sysfs_read_long(PARAM_DIR, "max_attachments"),
		  (long)q.max_attachments);
	ASSERT_NE(0, q.features & XPMEM_EXT_KF_ATTACH);
	ASSERT_NE(0, q.features & XPMEM_EXT_KF_KEYS);
	ASSERT_EQ(XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_QUERY) |
		  XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_ATTACH) |
		  XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_MAKE) |
		  XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_GET) |
		  XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_COPY) |
		  XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_POPULATE), q.commands);
	/* what it does not fill is zeroed, not left as it came */
	ASSERT_EQ(0, q.flags);
	ASSERT_EQ(0, q.reserved0);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, q.reserved[i]);
	/* huge PMDs are reported as the parameter says (6.12 only) */
	{
		char y = 'N';
		int pfd = open(PARAM_DIR "huge_mappings", O_RDONLY);

		if (pfd >= 0) {
			ASSERT_EQ(1, read(pfd, &y, 1));
			close(pfd);
		}
		ASSERT_EQ(y == 'Y', !!(q.features & XPMEM_EXT_KF_HUGE_PMD));
	}
}

/* QUERY works from a process that did not open the device (as VERSION). */
TEST_F(ext, query_after_fork)
{
	pid_t pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_ext_query q = {};

		_exit(xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, &q) ||
		      q.abi_version != XPMEM_EXT_ABI_VERSION);
	}
	ASSERT_EQ(0, wait_child(pid));
}

TEST_F(ext, query_rejects_flags)
{
	struct xpmem_ext_query q = { .flags = 1 };

	ASSERT_EQ(-EINVAL, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, &q));
	q.flags = 0x80000000U;
	ASSERT_EQ(-EINVAL, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, &q));
}

TEST_F(ext, query_rejects_reserved0)
{
	struct xpmem_ext_query q = { .reserved0 = 1 };

	ASSERT_EQ(-EINVAL, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, &q));
}

TEST_F(ext, query_rejects_each_reserved_word)
{
	for (int i = 0; i < 4; i++) {
		struct xpmem_ext_query q = {};

		q.reserved[i] = 1ULL << (i * 16);
		ASSERT_EQ(-EINVAL, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, &q));
	}
}

TEST_F(ext, query_bad_pointer_efault)
{
	char *guard = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, guard);
	ASSERT_EQ(0, mprotect(guard + PAGE, PAGE, PROT_NONE));
	memset(guard, 0, PAGE);
	ASSERT_EQ(-EFAULT, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, NULL));
	/* the struct runs into the PROT_NONE page */
	ASSERT_EQ(-EFAULT, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY,
				    guard + PAGE - 40));
	munmap(guard, 2 * PAGE);
}

/* Another size, another number: unknown commands are ENOTTY. */
TEST_F(ext, unknown_and_resized_commands_enotty)
{
	char big[96] = {};

	ASSERT_EQ(-ENOTTY, xp_ioctl(self->fd, _IOWR('x', 0x20, char[88]), big));
	ASSERT_EQ(-ENOTTY, xp_ioctl(self->fd, _IOWR('x', 0x21, char[72]), big));
	ASSERT_EQ(-ENOTTY, xp_ioctl(self->fd, _IOR('x', 0x20,
						   struct xpmem_ext_query), big));
	ASSERT_EQ(-ENOTTY, xp_ioctl(self->fd, _IOWR('x', 0x3f, char[64]), big));
	ASSERT_EQ(-ENOTTY, xp_ioctl(self->fd, _IO('x', 9), NULL));
}

TEST_F(ext, attach_rejects_unknown_flags)
{
	/* bit 4 is ZERO_REVOKED (xpmem_events) */
	for (unsigned int bit = 5; bit < 32; bit++) {
		struct xpmem_ext_attach a = whole(self->s.rw, 1U << bit);

		ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	}
	ASSERT_EQ(self->atts, stat_read("attachments"));
}

TEST_F(ext, attach_rejects_reserved0)
{
	struct xpmem_ext_attach a = whole(self->s.rw, 0);

	a.reserved0 = 1;
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
}

TEST_F(ext, attach_rejects_each_reserved_word)
{
	for (int i = 0; i < 3; i++) {
		struct xpmem_ext_attach a = whole(self->s.rw, 0);

		a.reserved[i] = 1;
		ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	}
}

TEST_F(ext, attach_rejects_rdonly_with_populate_write)
{
	struct xpmem_ext_attach a = whole(self->s.rw, XPMEM_EXT_ATTACH_RDONLY |
					  XPMEM_EXT_ATTACH_POPULATE_WRITE);

	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
}

TEST_F(ext, attach_rejects_address_without_fixed)
{
	struct xpmem_ext_attach a = whole(self->s.rw, 0);

	a.vaddr = 0x7f0000000000ULL;
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
}

TEST_F(ext, attach_rejects_bad_geometry)
{
	struct xpmem_ext_attach a;

	a = whole(self->s.rw, 0);
	a.offset = 100;
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	a = whole(self->s.rw, 0);
	a.size = 0;
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	a = whole(self->s.rw, 0);
	a.size = LEN + PAGE;
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	a = whole(self->s.rw, 0);
	a.offset = LEN;
	a.size = PAGE;
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	a = whole(self->s.rw, 0);
	a.size = ~0ULL;
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	a = whole(self->s.rw, 0);
	a.offset = ~0ULL & ~(PAGE - 1);
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	a = whole(self->s.rw, XPMEM_EXT_ATTACH_FIXED);
	a.vaddr = 0x7f0000000123ULL;
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	a = whole(self->s.rw, XPMEM_EXT_ATTACH_FIXED);
	a.vaddr = ~0ULL & ~(PAGE - 1);
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	ASSERT_EQ(self->atts, stat_read("attachments"));
}

TEST_F(ext, attach_rejects_bad_permits)
{
	struct xpmem_ext_attach a;

	a = whole(0, 0);
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	a = whole(-5, 0);
	ASSERT_EQ(-EINVAL, ext_attach(self->fd, &a));
	a = whole(XPMEM_ID_MAX, 0);
	ASSERT_EQ(-ENOENT, ext_attach(self->fd, &a));
	/* writing through a read-only permit */
	a = whole(self->s.ro, XPMEM_EXT_ATTACH_POPULATE_WRITE);
	ASSERT_EQ(-EACCES, ext_attach(self->fd, &a));
	ASSERT_EQ(-EFAULT, xp_ioctl(self->fd, XPMEM_CMD_EXT_ATTACH, NULL));
}

/* A child that did not open the device gets the classic NOPROC errno. */
TEST_F(ext, attach_after_fork_noproc)
{
	pid_t pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_ext_attach a = whole(self->s.rw, 0);

		_exit(ext_attach(self->fd, &a) != -XPMEM_ERRNO_NOPROC);
	}
	ASSERT_EQ(0, wait_child(pid));
}

/* Flags 0: the classic ATTACH, with the data of the owner. */
TEST_F(ext, attach_plain_maps_the_segment)
{
	struct xpmem_ext_attach a = whole(self->s.rw, 0);
	char *p;

	ASSERT_EQ(0, ext_attach(self->fd, &a));
	p = (char *)(uintptr_t)a.vaddr;
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, check(p, LEN, 31));
	p[5] = 'w';
	ASSERT_EQ('w', self->s.buf[5]);
	ASSERT_EQ(0, xp_detach(self->fd, p));
}

/* RDONLY through an RDWR permit: reads, no writes, no mprotect to write. */
TEST_F(ext, attach_rdonly_through_rdwr_permit)
{
	struct xpmem_ext_attach a = whole(self->s.rw, XPMEM_EXT_ATTACH_RDONLY);
	char *p;

	ASSERT_EQ(0, ext_attach(self->fd, &a));
	p = (char *)(uintptr_t)a.vaddr;
	ASSERT_EQ(0, check(p, LEN, 31));
	ASSERT_EQ(SIGSEGV, probe(p + PAGE, 1, 'x'));
	ASSERT_EQ(-1, mprotect(p, PAGE, PROT_READ | PROT_WRITE));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(0, check(self->s.buf, LEN, 31));
	ASSERT_EQ(0, xp_detach(self->fd, p));
}

/* FIXED: exactly there, over a reservation of the caller's. */
TEST_F(ext, attach_fixed_at_the_address)
{
	struct xpmem_ext_attach a = whole(self->s.rw, XPMEM_EXT_ATTACH_FIXED);
	char *hole = mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	ASSERT_NE(MAP_FAILED, hole);
	a.vaddr = (uintptr_t)hole;
	ASSERT_EQ(0, ext_attach(self->fd, &a));
	ASSERT_EQ((uintptr_t)hole, a.vaddr);
	ASSERT_EQ(0, check(hole, LEN, 31));
	ASSERT_EQ(0, xp_detach(self->fd, hole));
}

/*
 * POPULATE in another process: the first pass takes no fault at all, and
 * reads the owner's bytes; POPULATE_WRITE: a write pass takes none either.
 */
static void populate_child(xpmem_segid_t segid, unsigned int flags, int write)
{
	struct xpmem_ext_attach a;
	long faults, mk;
	int fd, numa;
	char *p;

	fd = xp_open();
	if (fd < 0)
		_exit(10);
	a = whole(0, flags);
	if (xp_get(fd, segid, XPMEM_RDWR, &a.apid))
		_exit(11);
	faults = stat_read("faults");
	if (ext_attach(fd, &a))
		_exit(12);
	p = (char *)(uintptr_t)a.vaddr;
	/* populating took at least one fault per fault window it spans */
	if (stat_read("faults") - faults <
	    (long)((LEN + xt_fault_window(fd) - 1) / xt_fault_window(fd)))
		_exit(13);
	numa = numa_balancing_set(0);
	faults = stat_read("faults");
	mk = stat_read("mkwrite_fast");
	if (check(p, LEN, 31))
		_exit(14);
	if (write)
		for (size_t i = 0; i < LEN; i += PAGE)
			p[i] = (char)(i / PAGE);
	faults = stat_read("faults") - faults;
	mk = stat_read("mkwrite_fast") - mk;
	numa_balancing_set(numa);
	if (faults || mk)
		_exit(15);
	_exit(0);
}

TEST_F(ext, attach_populate_then_no_faults)
{
	pid_t pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0)
		populate_child(self->s.segid, XPMEM_EXT_ATTACH_POPULATE, 0);
	ASSERT_EQ(0, wait_child(pid));
}

TEST_F(ext, attach_populate_write_then_no_faults)
{
	pid_t pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0)
		populate_child(self->s.segid,
			       XPMEM_EXT_ATTACH_POPULATE_WRITE, 1);
	ASSERT_EQ(0, wait_child(pid));
	for (size_t i = 0; i < LEN; i += PAGE)
		ASSERT_EQ((char)(i / PAGE), self->s.buf[i]);
}

/*
 * EXT_ATTACH with POPULATE through @apid, then a read pass: 0 if it read
 * the fixture's bytes without a fault, else a step number.
 */
static int populated_read_takes_no_fault(int fd, xpmem_apid_t apid)
{
	struct xpmem_ext_attach a = whole(apid, XPMEM_EXT_ATTACH_POPULATE);
	int numa = numa_balancing_set(0);
	long faults;
	int ret = 0;

	if (xp_ioctl(fd, XPMEM_CMD_EXT_ATTACH, &a)) {
		numa_balancing_set(numa);
		return 1;
	}
	faults = stat_read("faults");
	if (check((char *)(uintptr_t)a.vaddr, LEN, 31))
		ret = 2;
	else if (stat_read("faults") != faults)
		ret = 3;
	if (xp_detach(fd, (void *)(uintptr_t)a.vaddr))
		ret = 4;
	numa_balancing_set(numa);
	return ret;
}

/*
 * POPULATE of an owner range split into many VMAs (every other 64 KiB
 * read-only), so that fault windows stop inside their 2 MiB: populating
 * goes on where each stopped, and a first read pass takes no fault, in
 * the owner's own process and in another one.
 */
TEST_F(ext, attach_populate_across_owner_vmas)
{
	const size_t chunk = 64 * 1024;
	pid_t pid;

	for (size_t off = chunk; off < LEN; off += 2 * chunk)
		ASSERT_EQ(0, mprotect(self->s.buf + off, chunk, PROT_READ));
	ASSERT_EQ(0, populated_read_takes_no_fault(self->fd, self->s.ro));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = xp_open();
		xpmem_apid_t apid;

		if (fd < 0 || xp_get(fd, self->s.segid, XPMEM_RDONLY, &apid))
			_exit(10);
		_exit(populated_read_takes_no_fault(fd, apid));
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, mprotect(self->s.buf, LEN, PROT_READ | PROT_WRITE));
}

/*
 * POPULATE over an owner range with holes and memory no attachment may
 * map: the holes are skipped, the rest is mapped, the attach succeeds.
 */
TEST_F(ext, attach_populate_skips_holes)
{
	const size_t len = 8 * 1024 * 1024UL;
	struct xpmem_ext_attach a;
	xpmem_segid_t segid;
	long faults;
	char *r, *p;

	r = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	/* [0, 2M) data, [2M, 6M) hole, [6M, 8M) data */
	ASSERT_EQ(0, munmap(r + 2 * 1024 * 1024, 4 * 1024 * 1024));
	ASSERT_EQ(0, mprotect(r, 2 * 1024 * 1024, PROT_READ | PROT_WRITE));
	ASSERT_EQ(0, mprotect(r + 6 * 1024 * 1024, 2 * 1024 * 1024,
			      PROT_READ | PROT_WRITE));
	memset(r, 'x', 2 * 1024 * 1024);
	memset(r + 6 * 1024 * 1024, 'y', 2 * 1024 * 1024);
	ASSERT_EQ(0, xp_make(self->fd, r, len, 0600, &segid));
	a = whole(0, XPMEM_EXT_ATTACH_POPULATE);
	a.size = len;
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDONLY, &a.apid));
	ASSERT_EQ(0, ext_attach(self->fd, &a));
	p = (char *)(uintptr_t)a.vaddr;
	faults = stat_read("faults");
	ASSERT_EQ('x', p[0]);
	ASSERT_EQ('x', p[2 * 1024 * 1024 - 1]);
	ASSERT_EQ('y', p[6 * 1024 * 1024]);
	ASSERT_EQ('y', p[len - 1]);
	ASSERT_EQ(faults, stat_read("faults"));
	ASSERT_EQ(SIGBUS, probe(p + 3 * 1024 * 1024, 0, 0));
	ASSERT_EQ(0, xp_release(self->fd, a.apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	munmap(r, 2 * 1024 * 1024);
	munmap(r + 6 * 1024 * 1024, 2 * 1024 * 1024);
}

/*
 * A whole-address-space segment, populated over the terabyte around the
 * owner's buffer: libraries, guard pages, [vvar] and holes are skipped
 * one owner VMA at a time, the buffer is mapped.
 */
TEST_F(ext, attach_populate_whole_address_space)
{
	const uint64_t tib = 1ULL << 40;
	uint64_t base = (uintptr_t)self->s.buf & ~(tib - 1);
	struct xpmem_ext_attach a;
	xpmem_segid_t segid;
	pid_t pid;

	ASSERT_EQ(0, xp_make(self->fd, NULL, XPMEM_MAXADDR_SIZE, 0600, &segid));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = xp_open();
		long faults;
		char *p;

		a = whole(0, XPMEM_EXT_ATTACH_POPULATE);
		if (fd < 0 || xp_get(fd, segid, XPMEM_RDONLY, &a.apid))
			_exit(1);
		a.offset = base;
		/* the segment ends at the top of the address space */
		a.size = base + tib > xt_user_top() ?
			 xt_user_top() - base : tib;
		if (ext_attach(fd, &a))
			_exit(2);
		p = (char *)(uintptr_t)a.vaddr +
		    ((uintptr_t)self->s.buf - base);
		faults = stat_read("faults");
		if (check(p, LEN, 31))
			_exit(3);
		_exit(stat_read("faults") == faults ? 0 : 4);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
}

/* ---- EXT_MAKE and EXT_GET: keys, authorization keys, read-only -------- */

static const char KEY[] = "job42/rank0";
static const char AUTH[] = "correct horse battery staple";

/* A valid EXT_MAKE of the fixture's buffer, with @flags' fields filled. */
static struct xpmem_ext_make mk(const void *buf, unsigned int flags)
{
	struct xpmem_ext_make m = {
		.vaddr = (uintptr_t)buf, .size = LEN, .flags = flags,
		.mode = 0666,
	};

	if (flags & XPMEM_EXT_MAKE_KEY) {
		m.key_len = strlen(KEY);
		memcpy(m.key, KEY, m.key_len);
	}
	if (flags & XPMEM_EXT_MAKE_AUTH) {
		m.auth_len = strlen(AUTH);
		memcpy(m.auth, AUTH, m.auth_len);
	}
	return m;
}

/* A valid EXT_GET by key (or by @segid if not 0), with @auth if not NULL. */
static struct xpmem_ext_get gt(xpmem_segid_t segid, int access,
			       const char *auth)
{
	struct xpmem_ext_get g = { .segid = segid, .flags = access };

	if (!segid) {
		g.flags |= XPMEM_EXT_GET_BY_KEY;
		g.key_len = strlen(KEY);
		memcpy(g.key, KEY, g.key_len);
	}
	if (auth) {
		g.flags |= XPMEM_EXT_GET_AUTH;
		g.auth_len = strlen(auth);
		memcpy(g.auth, auth, g.auth_len);
	}
	return g;
}

static int ext_make(int fd, struct xpmem_ext_make *m)
{
	return xp_ioctl(fd, XPMEM_CMD_EXT_MAKE, m);
}

static int ext_get(int fd, struct xpmem_ext_get *g)
{
	return xp_ioctl(fd, XPMEM_CMD_EXT_GET, g);
}

TEST_F(ext, make_rejects_each_bad_field)
{
	const unsigned int all = XPMEM_EXT_MAKE_KEY | XPMEM_EXT_MAKE_AUTH;
	struct xpmem_ext_make m;

	for (unsigned int bit = 5; bit < 32; bit++) {
		m = mk(self->s.buf, all | (1U << bit));
		ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	}
	/* other IPC namespaces only with an authorization key */
	m = mk(self->s.buf, XPMEM_EXT_MAKE_ANY_NS);
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, XPMEM_EXT_MAKE_ANY_NS | XPMEM_EXT_MAKE_KEY);
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	for (int i = 0; i < 2; i++) {
		m = mk(self->s.buf, all);
		m.reserved[i] = 1;
		ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	}
	m = mk(self->s.buf, all);
	m.mode = 01000;
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, all);
	m.key_len = 0;
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));	/* KEY, no key */
	m = mk(self->s.buf, all);
	m.key_len = XPMEM_EXT_KEY_MAX + 1;
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, all);
	m.key[XPMEM_EXT_KEY_MAX - 1] = 'x';		/* past key_len */
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, XPMEM_EXT_MAKE_AUTH);
	m.key_len = 3;					/* no KEY flag */
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, XPMEM_EXT_MAKE_AUTH);
	m.key[0] = 'k';
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, all);
	m.auth_len = 0;
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, all);
	m.auth_len = XPMEM_EXT_AUTH_MAX + 1;
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, all);
	m.auth[XPMEM_EXT_AUTH_MAX - 1] = 1;
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
	m.auth_len = 4;
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
	m.auth[5] = 1;
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf + 8, all);
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, all);
	m.size = 0;
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mk(self->s.buf, all);
	m.size = PAGE + 1;
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	ASSERT_EQ(-EFAULT, xp_ioctl(self->fd, XPMEM_CMD_EXT_MAKE, NULL));
	ASSERT_EQ(self->segs + 1, stat_read("segments"));
}

TEST_F(ext, get_rejects_each_bad_field)
{
	struct xpmem_ext_get g;

	for (unsigned int bit = 2; bit < 32; bit++) {
		if ((1U << bit) & XPMEM_EXT_GET_FLAGS)
			continue;
		g = gt(0, XPMEM_RDONLY, AUTH);
		g.flags |= 1U << bit;
		ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	}
	g = gt(0, 0, NULL);
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));	/* neither RDONLY nor RDWR */
	g = gt(0, XPMEM_RDONLY | XPMEM_RDWR, NULL);
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(0, XPMEM_RDONLY, NULL);
	g.reserved0 = 1;
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	for (int i = 0; i < 2; i++) {
		g = gt(0, XPMEM_RDONLY, NULL);
		g.reserved[i] = 1;
		ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	}
	g = gt(0, XPMEM_RDONLY, NULL);
	g.segid = self->s.segid;				/* BY_KEY and a segid */
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(0, XPMEM_RDONLY, NULL);
	g.key_len = 0;
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(0, XPMEM_RDONLY, NULL);
	g.key_len = XPMEM_EXT_KEY_MAX + 1;
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(0, XPMEM_RDONLY, NULL);
	g.key[XPMEM_EXT_KEY_MAX - 1] = 1;
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(self->s.segid, XPMEM_RDONLY, NULL);
	g.key_len = 2;					/* no BY_KEY flag */
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(self->s.segid, XPMEM_RDONLY, NULL);
	g.segid = 0;
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(self->s.segid, XPMEM_RDONLY, NULL);
	g.segid = -3;
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(self->s.segid, XPMEM_RDONLY, AUTH);
	g.auth_len = 0;
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(self->s.segid, XPMEM_RDONLY, AUTH);
	g.auth_len = XPMEM_EXT_AUTH_MAX + 1;
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(self->s.segid, XPMEM_RDONLY, AUTH);
	g.auth[XPMEM_EXT_AUTH_MAX - 1] = 1;
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(self->s.segid, XPMEM_RDONLY, NULL);
	g.auth_len = 5;					/* no AUTH flag */
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	g = gt(self->s.segid, XPMEM_RDONLY, NULL);
	g.auth[0] = 1;
	ASSERT_EQ(-EINVAL, ext_get(self->fd, &g));
	ASSERT_EQ(-EFAULT, xp_ioctl(self->fd, XPMEM_CMD_EXT_GET, NULL));
	ASSERT_EQ(self->permits + 2, stat_read("permits"));
}

/* EXT_GET without a key or auth is the classic GET. */
TEST_F(ext, get_by_segid_is_classic)
{
	struct xpmem_ext_get g = gt(self->s.segid, XPMEM_RDWR, NULL);
	struct xpmem_ext_attach a;

	ASSERT_EQ(0, ext_get(self->fd, &g));
	ASSERT_LT(0, g.apid);
	ASSERT_EQ(self->s.segid, g.segid);
	a = whole(g.apid, 0);
	ASSERT_EQ(0, ext_attach(self->fd, &a));
	ASSERT_EQ(0, check((void *)(uintptr_t)a.vaddr, LEN, 31));
	ASSERT_EQ(0, xp_release(self->fd, g.apid));
	g = gt(XPMEM_ID_MAX, XPMEM_RDONLY, NULL);
	ASSERT_EQ(-ENOENT, ext_get(self->fd, &g));
}

/*
 * A well-known name: another process finds the segment by key alone and
 * learns its segid; keys are compared in full, length included.
 */
TEST_F(ext, key_finds_the_segment_in_another_process)
{
	struct xpmem_ext_make m = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
	pid_t pid;

	ASSERT_EQ(0, ext_make(self->fd, &m));
	ASSERT_LT(0, m.segid);
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_ext_get g = gt(0, XPMEM_RDWR, NULL);
		struct xpmem_ext_attach a;
		int fd = xp_open();

		if (fd < 0 || ext_get(fd, &g))
			_exit(1);
		if (g.segid != m.segid || g.apid <= 0)
			_exit(2);
		a = whole(g.apid, 0);
		if (ext_attach(fd, &a) ||
		    check((void *)(uintptr_t)a.vaddr, LEN, 31))
			_exit(3);
		g = gt(0, XPMEM_RDONLY, NULL);
		g.key_len--;				/* a prefix */
		g.key[g.key_len] = 0;
		if (ext_get(fd, &g) != -ENOENT)
			_exit(4);
		g = gt(0, XPMEM_RDONLY, NULL);
		g.key_len++;				/* with a NUL after */
		if (ext_get(fd, &g) != -ENOENT)
			_exit(5);
		g = gt(0, XPMEM_RDONLY, NULL);
		g.key[0] ^= 0x20;
		if (ext_get(fd, &g) != -ENOENT)
			_exit(6);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, m.segid));
}

/* One key per IPC namespace, whoever asks; free again after REMOVE. */
TEST_F(ext, key_collision_eexist_until_remove)
{
	struct xpmem_ext_make m = mk(self->s.buf, XPMEM_EXT_MAKE_KEY), m2;
	struct xpmem_ext_get g;
	pid_t pid;

	ASSERT_EQ(0, ext_make(self->fd, &m));
	m2 = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
	ASSERT_EQ(-EEXIST, ext_make(self->fd, &m2));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {		/* another user in the same namespace */
		struct xpmem_ext_make m3;
		char *b;
		int fd;

		if (setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
			_exit(1);
		fd = xp_open();
		b = map_anon(LEN);
		if (fd < 0 || !b)
			_exit(2);
		m3 = mk(b, XPMEM_EXT_MAKE_KEY);
		_exit(ext_make(fd, &m3) == -EEXIST ? 0 : 3);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, m.segid));
	g = gt(0, XPMEM_RDONLY, NULL);
	ASSERT_EQ(-ENOENT, ext_get(self->fd, &g));
	m2 = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
	ASSERT_EQ(0, ext_make(self->fd, &m2));
	ASSERT_NE(m.segid, m2.segid);
	g = gt(0, XPMEM_RDONLY, NULL);
	ASSERT_EQ(0, ext_get(self->fd, &g));
	ASSERT_EQ(m2.segid, g.segid);
	ASSERT_EQ(0, xp_release(self->fd, g.apid));
	ASSERT_EQ(0, xp_remove(self->fd, m2.segid));
}

/* The same key in another IPC namespace is another name. */
TEST_F(ext, key_per_ipc_namespace)
{
	struct xpmem_ext_make m = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
	pid_t pid;

	ASSERT_EQ(0, ext_make(self->fd, &m));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_ext_make m2;
		struct xpmem_ext_get g;
		int fd;

		if (unshare(CLONE_NEWIPC))
			_exit(1);
		fd = xp_open();
		if (fd < 0)
			_exit(2);
		g = gt(0, XPMEM_RDONLY, NULL);
		if (ext_get(fd, &g) != -ENOENT)	/* the parent's is not here */
			_exit(3);
		m2 = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
		if (ext_make(fd, &m2))
			_exit(4);
		g = gt(0, XPMEM_RDONLY, NULL);
		if (ext_get(fd, &g) || g.segid != m2.segid ||
		    g.segid == m.segid)
			_exit(5);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	/* the child's namespace is gone; the parent's key still works */
	{
		struct xpmem_ext_get g = gt(0, XPMEM_RDONLY, NULL);

		ASSERT_EQ(0, ext_get(self->fd, &g));
		ASSERT_EQ(m.segid, g.segid);
		ASSERT_EQ(0, xp_release(self->fd, g.apid));
	}
	ASSERT_EQ(0, xp_remove(self->fd, m.segid));
}

/* A key made by a process that was killed is free again. */
TEST_F(ext, key_free_after_owner_killed)
{
	struct xpmem_ext_make m;
	struct xpmem_ext_get g;
	int p[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(p));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_ext_make mc;
		int fd = xp_open();

		close(p[0]);
		mc = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
		if (fd < 0 || ext_make(fd, &mc))
			_exit(1);
		if (write(p[1], "k", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));
	close(p[0]);
	m = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
	ASSERT_EQ(-EEXIST, ext_make(self->fd, &m));
	g = gt(0, XPMEM_RDONLY, NULL);
	ASSERT_EQ(0, ext_get(self->fd, &g));
	ASSERT_EQ(0, xp_release(self->fd, g.apid));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(128 + SIGKILL, wait_child(pid));
	g = gt(0, XPMEM_RDONLY, NULL);
	ASSERT_EQ(-ENOENT, ext_get(self->fd, &g));
	m = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
	ASSERT_EQ(0, ext_make(self->fd, &m));
	ASSERT_EQ(0, xp_remove(self->fd, m.segid));
}

/*
 * A segment outlives its owner's exit while another process holds the
 * owner's device file; its key then goes to the next MAKE, and GET by key
 * finds nothing meanwhile.
 */
TEST_F(ext, key_of_exited_owner_taken_over)
{
	struct xpmem_ext_make m;
	struct xpmem_ext_get g;
	int ready[2], hold[2];
	pid_t owner;
	char c;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(hold));
	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		struct xpmem_ext_make mc;
		int fd = xp_open();
		pid_t keeper;

		close(ready[0]);
		close(hold[1]);
		if (fd < 0)
			_exit(1);
		mc = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
		if (ext_make(fd, &mc))
			_exit(2);
		keeper = fork();	/* holds the owner's file open */
		if (keeper < 0)
			_exit(3);
		if (keeper == 0) {
			close(ready[1]);
			if (read(hold[0], &c, 1) < 0)
				_exit(4);
			_exit(0);
		}
		_exit(write(ready[1], "k", 1) == 1 ? 0 : 5);
	}
	close(ready[1]);
	close(hold[0]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(0, wait_child(owner));	/* the owner has exited */
	g = gt(0, XPMEM_RDONLY, NULL);
	ASSERT_EQ(-ENOENT, ext_get(self->fd, &g));
	m = mk(self->s.buf, XPMEM_EXT_MAKE_KEY);
	ASSERT_EQ(0, ext_make(self->fd, &m));
	g = gt(0, XPMEM_RDONLY, NULL);
	ASSERT_EQ(0, ext_get(self->fd, &g));
	ASSERT_EQ(m.segid, g.segid);
	ASSERT_EQ(0, xp_release(self->fd, g.apid));
	close(hold[1]);			/* the keeper exits, closing the file */
	close(ready[0]);
	ASSERT_EQ(0, xp_remove(self->fd, m.segid));
}

/* An authorization key is needed beside the mode, and must be exact. */
TEST_F(ext, auth_key_missing_or_wrong_eacces)
{
	struct xpmem_ext_make m = mk(self->s.buf, XPMEM_EXT_MAKE_KEY |
				     XPMEM_EXT_MAKE_AUTH);
	struct xpmem_ext_get g;
	xpmem_apid_t apid;
	pid_t pid;

	ASSERT_EQ(0, ext_make(self->fd, &m));
	/* the owner too: the check knows nobody */
	ASSERT_EQ(-EACCES, xp_get(self->fd, m.segid, XPMEM_RDONLY, &apid));
	g = gt(0, XPMEM_RDONLY, NULL);
	ASSERT_EQ(-EACCES, ext_get(self->fd, &g));
	g = gt(m.segid, XPMEM_RDONLY, "correct horse battery stapl");
	ASSERT_EQ(-EACCES, ext_get(self->fd, &g));	/* a prefix */
	g = gt(m.segid, XPMEM_RDONLY, "correct horse battery staple!");
	ASSERT_EQ(-EACCES, ext_get(self->fd, &g));
	g = gt(m.segid, XPMEM_RDONLY, "Correct horse battery staple");
	ASSERT_EQ(-EACCES, ext_get(self->fd, &g));
	g = gt(m.segid, XPMEM_RDONLY, AUTH);
	g.auth_len++;					/* a NUL after */
	ASSERT_EQ(-EACCES, ext_get(self->fd, &g));
	/* auth for a segment that has none */
	g = gt(self->s.segid, XPMEM_RDONLY, AUTH);
	ASSERT_EQ(-EACCES, ext_get(self->fd, &g));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {		/* another user, by key, with the secret */
		struct xpmem_ext_get gc = gt(0, XPMEM_RDWR, AUTH);
		struct xpmem_ext_attach a;
		int fd;

		if (setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
			_exit(1);
		fd = xp_open();
		if (fd < 0 || ext_get(fd, &gc) || gc.segid != m.segid)
			_exit(2);
		a = whole(gc.apid, 0);
		if (ext_attach(fd, &a))
			_exit(3);
		((char *)(uintptr_t)a.vaddr)[7] = 'z';
		gc = gt(0, XPMEM_RDWR, "wrong");
		_exit(ext_get(fd, &gc) == -EACCES ? 0 : 4);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ('z', self->s.buf[7]);
	ASSERT_EQ(0, xp_remove(self->fd, m.segid));
}

/* A read-only export: RDWR permits are refused, even to root. */
TEST_F(ext, rdonly_export_refuses_rdwr)
{
	struct xpmem_ext_make m = mk(self->s.buf, XPMEM_EXT_MAKE_RDONLY);
	struct xpmem_ext_get g;
	struct xpmem_ext_attach a;
	xpmem_apid_t apid;

	ASSERT_EQ(0, ext_make(self->fd, &m));
	ASSERT_EQ(-EACCES, xp_get(self->fd, m.segid, XPMEM_RDWR, &apid));
	g = gt(m.segid, XPMEM_RDWR, NULL);
	ASSERT_EQ(-EACCES, ext_get(self->fd, &g));
	ASSERT_EQ(0, xp_get(self->fd, m.segid, XPMEM_RDONLY, &apid));
	a = whole(apid, 0);
	ASSERT_EQ(0, ext_attach(self->fd, &a));
	ASSERT_EQ(0, check((void *)(uintptr_t)a.vaddr, LEN, 31));
	ASSERT_EQ(SIGSEGV, probe((char *)(uintptr_t)a.vaddr, 1, 'w'));
	ASSERT_EQ(0, xp_remove(self->fd, m.segid));
}

TEST_F(ext, counters_back_at_base)
{
	struct xpmem_ext_attach a = whole(self->s.rw,
					  XPMEM_EXT_ATTACH_POPULATE);

	ASSERT_EQ(0, ext_attach(self->fd, &a));
	ASSERT_EQ(0, xp_detach(self->fd, (void *)(uintptr_t)a.vaddr));
	ASSERT_EQ(0, xp_release(self->fd, self->s.rw));
	ASSERT_EQ(0, xp_release(self->fd, self->s.ro));
	ASSERT_EQ(0, xp_remove(self->fd, self->s.segid));
	self->s.rw = self->s.ro = 0;
	ASSERT_COUNTERS_AT_BASE();
}

TEST_HARNESS_MAIN
