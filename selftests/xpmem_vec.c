// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_vec - selftests of vectored exports: XPMEM_CMD_EXT_MAKE with
 * XPMEM_EXT_MAKE_IOV (several owner buffers as one segment) through raw
 * ioctls.  Attachments, copies and populates of such a segment cross from
 * one buffer to the next; the owner's changes to one buffer reach only
 * its part of the attachments; every rejection on its own.
 *
 * Runs as root inside the test VM with the module loaded; skips when
 * /dev/xpmem is absent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

/*
 * The fixture's buffers, in segment order: out of address order, with
 * holes (PROT_NONE) between them, of different lengths.
 */
#define REGION_PAGES	64
#define NBUF		3
static const size_t buf_page[NBUF] = { 40, 2, 20 };	/* page in region */
static const size_t buf_pages[NBUF] = { 3, 5, 8 };
#define TOTAL		(16 * PAGE)

FIXTURE(vec)
{
	int fd;
	long segs, permits, atts;
	char *region;
	struct xpmem_ext_iov iov[NBUF];
	unsigned char *want;		/* the segment's bytes, TOTAL */
	xpmem_segid_t segid;
};

/* Segment offset where buffer @i starts. */
static size_t buf_off(int i)
{
	size_t off = 0;

	for (int j = 0; j < i; j++)
		off += buf_pages[j] * PAGE;
	return off;
}

static int ext_make(int fd, struct xpmem_ext_make *m)
{
	return xp_ioctl(fd, XPMEM_CMD_EXT_MAKE, m);
}

/* A valid vectored EXT_MAKE of @n buffers at @iov. */
static struct xpmem_ext_make mkv(const struct xpmem_ext_iov *iov, size_t n)
{
	struct xpmem_ext_make m = {
		.vaddr = (uintptr_t)iov, .size = n,
		.flags = XPMEM_EXT_MAKE_IOV, .mode = 0666,
	};

	return m;
}

static int makev(int fd, const struct xpmem_ext_iov *iov, size_t n,
		 xpmem_segid_t *segid)
{
	struct xpmem_ext_make m = mkv(iov, n);
	int ret = ext_make(fd, &m);

	*segid = m.segid;
	return ret;
}

FIXTURE_SETUP(vec)
{
	XP_FIXTURE_OPEN();
	self->region = mmap(NULL, REGION_PAGES * PAGE, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->region);
	self->want = map_anon(TOTAL);
	ASSERT_NE(NULL, self->want);
	fill(self->want, TOTAL, 5);
	for (int i = 0; i < NBUF; i++) {
		char *b = self->region + buf_page[i] * PAGE;

		ASSERT_EQ(0, mprotect(b, buf_pages[i] * PAGE,
				      PROT_READ | PROT_WRITE));
		memcpy(b, self->want + buf_off(i), buf_pages[i] * PAGE);
		self->iov[i].base = (uintptr_t)b;
		self->iov[i].len = buf_pages[i] * PAGE;
	}
	ASSERT_EQ(0, makev(self->fd, self->iov, NBUF, &self->segid));
}

FIXTURE_TEARDOWN(vec)
{
	if (self->fd < 0)
		return;
	xp_remove(self->fd, self->segid);
	munmap(self->region, REGION_PAGES * PAGE);
	munmap(self->want, TOTAL);
	close(self->fd);
}

/* The owner's byte at segment offset @off, read from its buffers. */
static unsigned char owner_byte(FIXTURE_DATA(vec) *self, size_t off)
{
	int i = 0;

	while (off >= buf_pages[i] * PAGE)
		off -= buf_pages[i++] * PAGE;
	return ((unsigned char *)(uintptr_t)self->iov[i].base)[off];
}

TEST_F(vec, query_reports_make_iov)
{
	struct xpmem_ext_query q = { .flags = 0 };

	ASSERT_EQ(0, xp_ioctl(self->fd, XPMEM_CMD_EXT_QUERY, &q));
	ASSERT_TRUE(q.features & XPMEM_EXT_KF_MAKE_IOV);
}

TEST_F(vec, make_rejects_each_bad_buffer)
{
	struct xpmem_ext_iov bad[2];
	struct xpmem_ext_make m;
	xpmem_segid_t segid;

	m = mkv(self->iov, 0);
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mkv(self->iov, XPMEM_EXT_MAKE_IOV_MAX + 1);
	ASSERT_EQ(-EINVAL, ext_make(self->fd, &m));
	m = mkv(NULL, 2);
	ASSERT_EQ(-EFAULT, ext_make(self->fd, &m));
	m = mkv((void *)(uintptr_t)1, 2);
	ASSERT_EQ(-EFAULT, ext_make(self->fd, &m));

	/* each field of the second buffer bad on its own */
	const struct { uint64_t base, len; } cases[] = {
		{ self->iov[1].base + 8, PAGE },	/* unaligned base */
		{ self->iov[1].base, 0 },		/* empty */
		{ self->iov[1].base, PAGE + 1 },	/* unaligned length */
		{ ~0ULL & ~(PAGE - 1), PAGE },		/* above the top */
		{ self->iov[1].base, 1ULL << 60 },	/* past the top */
		{ self->iov[1].base, XPMEM_MAXADDR_SIZE },	/* only alone */
		{ self->iov[1].base, ~0ULL & ~(PAGE - 1) },	/* wraps */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bad[0] = self->iov[0];
		bad[1].base = cases[i].base;
		bad[1].len = cases[i].len;
		ASSERT_EQ(-EINVAL, makev(self->fd, bad, 2, &segid)) {
			TH_LOG("case %zu", i);
		}
	}
	/* a bad buffer is bad in first place too */
	bad[0].base = self->iov[0].base + 1;
	bad[0].len = PAGE;
	ASSERT_EQ(-EINVAL, makev(self->fd, bad, 1, &segid));
	ASSERT_EQ(self->segs + 1, stat_read("segments"));
}

/* Another process attaches the whole segment: the buffers, in order. */
TEST_F(vec, attach_maps_the_buffers_in_order)
{
	pid_t pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		xpmem_apid_t apid;
		char *a;
		int fd, ret;

		ret = child_attach(self->segid, XPMEM_RDONLY, 0, TOTAL, &fd,
				   &apid, &a);
		if (ret)
			_exit(1);
		/* both sides of every boundary first, then everything */
		for (int i = 1; i < NBUF; i++) {
			size_t o = buf_off(i);

			if (a[o - 1] != (char)self->want[o - 1] ||
			    a[o] != (char)self->want[o])
				_exit(2);
		}
		if (memcmp(a, self->want, TOTAL))
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
}

/* Part of the segment, starting inside one buffer and ending in another. */
TEST_F(vec, attach_part_across_buffers)
{
	const size_t off = 2 * PAGE, len = 10 * PAGE;	/* buffers 0-2 */
	xpmem_apid_t apid;
	void *a;

	ASSERT_EQ(0, xp_get(self->fd, self->segid, XPMEM_RDONLY, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, off, len, NULL, &a));
	ASSERT_EQ(0, memcmp(a, self->want + off, len));
	/* the part's last page is the third buffer's fourth page */
	ASSERT_EQ(0, memcmp((char *)a + len - PAGE,
			    (char *)(uintptr_t)self->iov[2].base + 3 * PAGE,
			    PAGE));
	ASSERT_EQ(0, xp_detach(self->fd, a));
	ASSERT_EQ(0, xp_release(self->fd, apid));
}

/* Writes through an attachment land in the owner's buffers. */
TEST_F(vec, attacher_writes_reach_each_buffer)
{
	pid_t pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		xpmem_apid_t apid;
		char *a;
		int fd;

		if (child_attach(self->segid, XPMEM_RDWR, 0, TOTAL, &fd,
				 &apid, &a))
			_exit(1);
		/* a stretch across each boundary, one store at a time */
		for (int i = 1; i < NBUF; i++)
			for (size_t o = buf_off(i) - 64; o < buf_off(i) + 64;
			     o++)
				a[o] = (char)(o ^ 0x5a);
		memset(a + TOTAL - PAGE, 0x77, PAGE);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	for (int i = 1; i < NBUF; i++)
		for (size_t o = buf_off(i) - 64; o < buf_off(i) + 64; o++)
			ASSERT_EQ((unsigned char)(o ^ 0x5a),
				  owner_byte(self, o));
	ASSERT_EQ(0, all_bytes((char *)(uintptr_t)self->iov[2].base +
			       7 * PAGE, PAGE, 0x77));
	/* untouched bytes stayed */
	ASSERT_EQ(self->want[PAGE], owner_byte(self, PAGE));
	ASSERT_EQ(self->want[buf_off(2) + PAGE],
		  owner_byte(self, buf_off(2) + PAGE));
}

/*
 * The owner replaces one buffer with new memory, then unmaps another:
 * an attachment follows in those parts only.
 */
TEST_F(vec, owner_changes_reach_only_their_part)
{
	struct chan c;
	pid_t pid;
	char m;

	ASSERT_EQ(0, chan_init(&c));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		size_t o1 = buf_off(1), o2 = buf_off(2);
		xpmem_apid_t apid;
		char *a;
		int fd;

		chan_child(&c);
		if (child_attach(self->segid, XPMEM_RDONLY, 0, TOTAL, &fd,
				 &apid, &a) ||
		    memcmp(a, self->want, TOTAL))
			_exit(1);
		if (send_msg(c.to_parent[1], "a", 1) ||
		    recv_msg(c.to_child[0], &m, 1))
			_exit(2);
		/* buffer 1 is new memory of 0x42; the others unchanged */
		if (all_bytes(a + o1, buf_pages[1] * PAGE, 0x42) ||
		    memcmp(a, self->want, o1) ||
		    memcmp(a + o2, self->want + o2, TOTAL - o2))
			_exit(3);
		if (send_msg(c.to_parent[1], "b", 1) ||
		    recv_msg(c.to_child[0], &m, 1))
			_exit(4);
		/* buffer 2 is gone: SIGBUS there, the rest still maps */
		if (probe(a + o2, 0, 0) != SIGBUS ||
		    probe(a + TOTAL - 1, 0, 0) != SIGBUS)
			_exit(5);
		if (memcmp(a, self->want, o1) ||
		    all_bytes(a + o1, buf_pages[1] * PAGE, 0x42))
			_exit(6);
		_exit(0);
	}
	chan_parent(&c);
	ASSERT_EQ(0, recv_msg(c.to_parent[0], &m, 1));
	ASSERT_NE(MAP_FAILED, mmap((void *)(uintptr_t)self->iov[1].base,
				   self->iov[1].len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				   -1, 0));
	memset((void *)(uintptr_t)self->iov[1].base, 0x42, self->iov[1].len);
	ASSERT_EQ(0, send_msg(c.to_child[1], "A", 1));
	ASSERT_EQ(0, recv_msg(c.to_parent[0], &m, 1));
	ASSERT_EQ(0, munmap((void *)(uintptr_t)self->iov[2].base,
			    self->iov[2].len));
	ASSERT_EQ(0, send_msg(c.to_child[1], "B", 1));
	ASSERT_EQ(0, wait_child(pid));
	close(c.to_child[1]);
	close(c.to_parent[0]);
}

static ssize_t ext_copy(int fd, xpmem_apid_t apid, size_t off, void *buf,
			size_t len, unsigned int flags)
{
	struct xpmem_ext_copy c = {
		.apid = apid, .offset = off, .addr = (uintptr_t)buf,
		.len = len, .flags = flags,
	};

	return xp_ext_copy(fd, &c);
}

/* EXT_COPY from and to the segment crosses from buffer to buffer. */
TEST_F(vec, copy_across_buffers)
{
	unsigned char *buf = map_anon(TOTAL);
	xpmem_apid_t apid;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, xp_get(self->fd, self->segid, XPMEM_RDWR, &apid));
	ASSERT_EQ((ssize_t)TOTAL, ext_copy(self->fd, apid, 0, buf, TOTAL, 0));
	ASSERT_EQ(0, memcmp(buf, self->want, TOTAL));
	/* unaligned, from inside buffer 0 to inside buffer 2 */
	memset(buf, 0, TOTAL);
	ASSERT_EQ((ssize_t)(10 * PAGE + 3),
		  ext_copy(self->fd, apid, 2 * PAGE + 5, buf, 10 * PAGE + 3,
			   0));
	ASSERT_EQ(0, memcmp(buf, self->want + 2 * PAGE + 5, 10 * PAGE + 3));
	/* and back: every byte lands in the right buffer */
	for (size_t i = 0; i < TOTAL; i++)
		buf[i] = (unsigned char)~self->want[i];
	ASSERT_EQ((ssize_t)(TOTAL - 7),
		  ext_copy(self->fd, apid, 7, buf + 7, TOTAL - 7,
			   XPMEM_EXT_COPY_TO));
	for (size_t o = 0; o < TOTAL; o++)
		ASSERT_EQ(o < 7 ? self->want[o] : (unsigned char)~self->want[o],
			  owner_byte(self, o));
	/* past the end */
	ASSERT_EQ(-EINVAL, ext_copy(self->fd, apid, TOTAL - 1, buf, 2, 0));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	munmap(buf, TOTAL);
}

/* A copy that meets an unmapped buffer stops there, with a short count. */
TEST_F(vec, copy_stops_at_a_missing_buffer)
{
	unsigned char *buf = map_anon(TOTAL);
	xpmem_apid_t apid;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, munmap((void *)(uintptr_t)self->iov[1].base,
			    self->iov[1].len));
	ASSERT_EQ(0, xp_get(self->fd, self->segid, XPMEM_RDONLY, &apid));
	ASSERT_EQ((ssize_t)buf_off(1),
		  ext_copy(self->fd, apid, 0, buf, TOTAL, 0));
	ASSERT_EQ(-EFAULT, ext_copy(self->fd, apid, buf_off(1), buf, PAGE, 0));
	ASSERT_EQ((ssize_t)(TOTAL - buf_off(2)),
		  ext_copy(self->fd, apid, buf_off(2), buf,
			   TOTAL - buf_off(2), 0));
	ASSERT_EQ(0, memcmp(buf, self->want + buf_off(2), TOTAL - buf_off(2)));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	munmap(buf, TOTAL);
}

/* POPULATE maps every buffer: the first pass takes no fault. */
TEST_F(vec, attach_populate_covers_every_buffer)
{
	struct xpmem_ext_attach at = {
		.size = TOTAL, .flags = XPMEM_EXT_ATTACH_POPULATE,
	};
	pid_t pid;

	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = xp_open();
		long faults;
		char *a;

		if (fd < 0 || xp_get(fd, self->segid, XPMEM_RDONLY, &at.apid) ||
		    xp_ioctl(fd, XPMEM_CMD_EXT_ATTACH, &at))
			_exit(1);
		a = (char *)(uintptr_t)at.vaddr;
		faults = stat_read("faults");
		if (memcmp(a, self->want, TOTAL))
			_exit(2);
		_exit(stat_read("faults") == faults ? 0 : 3);
	}
	ASSERT_EQ(0, wait_child(pid));
}

/* The owner may not attach at a fixed address over one of its buffers. */
TEST_F(vec, fixed_attach_over_a_source_buffer_einval)
{
	struct xpmem_ext_attach at = {
		.size = TOTAL, .flags = XPMEM_EXT_ATTACH_FIXED,
	};
	char *spare = map_anon(TOTAL);

	ASSERT_NE(NULL, spare);
	ASSERT_EQ(0, xp_get(self->fd, self->segid, XPMEM_RDONLY, &at.apid));
	/* the attachment would cover buffer 2's first pages */
	at.vaddr = self->iov[2].base - 4 * PAGE;
	ASSERT_EQ(-EINVAL, xp_ioctl(self->fd, XPMEM_CMD_EXT_ATTACH, &at));
	/* only part of it covers buffer 1 */
	at.vaddr = self->iov[1].base + 4 * PAGE;
	ASSERT_EQ(-EINVAL, xp_ioctl(self->fd, XPMEM_CMD_EXT_ATTACH, &at));
	/* elsewhere it is fine */
	at.vaddr = (uintptr_t)spare;
	ASSERT_EQ(0, xp_ioctl(self->fd, XPMEM_CMD_EXT_ATTACH, &at));
	ASSERT_EQ(0, memcmp(spare, self->want, TOTAL));
	ASSERT_EQ(0, xp_release(self->fd, at.apid));
	munmap(spare, TOTAL);
}

/* The same buffer twice: a store through one part shows in the other. */
TEST_F(vec, one_buffer_twice)
{
	struct xpmem_ext_iov two[2] = { self->iov[0], self->iov[0] };
	size_t len = self->iov[0].len;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *a;

	ASSERT_EQ(0, makev(self->fd, two, 2, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, 2 * len, NULL,
			       (void **)&a));
	ASSERT_EQ(0, memcmp(a, a + len, len));
	a[5] = 'q';
	ASSERT_EQ('q', a[len + 5]);
	a[2 * len - 1] = 'z';
	ASSERT_EQ('z', a[len - 1]);
	ASSERT_EQ('z', ((char *)(uintptr_t)self->iov[0].base)[len - 1]);
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
}

/*
 * XPMEM_EXT_MAKE_IOV_MAX one-page buffers, every other page of a region
 * in reverse order: the attachment and a copy see page i of buffer i.
 */
TEST_F(vec, most_buffers)
{
	const size_t n = XPMEM_EXT_MAKE_IOV_MAX, len = n * PAGE;
	struct xpmem_ext_iov *iov = calloc(n + 1, sizeof(*iov));
	char *r = map_anon(2 * len + PAGE), *buf = map_anon(len);
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *a;

	ASSERT_NE(NULL, iov);
	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, buf);
	for (size_t i = 0; i <= n; i++) {
		char *p = r + (2 * (n - i)) * PAGE;

		memset(p, (int)i, PAGE);
		iov[i].base = (uintptr_t)p;
		iov[i].len = PAGE;
	}
	ASSERT_EQ(-EINVAL, makev(self->fd, iov, n + 1, &segid));
	ASSERT_EQ(0, makev(self->fd, iov, n, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDONLY, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, len, NULL, (void **)&a));
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(0, all_bytes(a + i * PAGE, PAGE,
				       (unsigned char)i)) {
			TH_LOG("page %zu", i);
		}
	}
	ASSERT_EQ((ssize_t)len, ext_copy(self->fd, apid, 0, buf, len, 0));
	ASSERT_EQ(0, memcmp(buf, a, len));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	munmap(r, 2 * len + PAGE);
	munmap(buf, len);
	free(iov);
}

/* A vectored segment with a key is found by the key. */
TEST_F(vec, with_a_key)
{
	static const char key[] = "vec/key";
	struct xpmem_ext_make m = mkv(self->iov, NBUF);
	struct xpmem_ext_get g = {
		.flags = XPMEM_RDONLY | XPMEM_EXT_GET_BY_KEY,
		.key_len = sizeof(key) - 1,
	};
	char *a;

	m.flags |= XPMEM_EXT_MAKE_KEY;
	m.key_len = sizeof(key) - 1;
	memcpy(m.key, key, m.key_len);
	memcpy(g.key, key, g.key_len);
	ASSERT_EQ(0, ext_make(self->fd, &m));
	ASSERT_EQ(0, xp_ioctl(self->fd, XPMEM_CMD_EXT_GET, &g));
	ASSERT_EQ(m.segid, g.segid);
	ASSERT_EQ(0, xp_attach(self->fd, g.apid, 0, TOTAL, NULL,
			       (void **)&a));
	ASSERT_EQ(0, memcmp(a, self->want, TOTAL));
	ASSERT_EQ(0, xp_release(self->fd, g.apid));
	ASSERT_EQ(0, xp_remove(self->fd, m.segid));
}

/* The number of ranges /proc/xpmem-objects shows for @segid, or -1. */
static int proc_ranges(xpmem_segid_t segid)
{
	char path[64], line[256], want[40];
	int n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/xpmem-objects/%d", (int)getpid());
	snprintf(want, sizeof(want), "segment %#llx ", (unsigned long long)segid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *r = strstr(line, " ranges ");

		if (!strncmp(line, want, strlen(want)) && r)
			n = atoi(r + 8);
	}
	fclose(f);
	return n;
}

/*
 * Buffers that follow each other in the owner are one range (the module
 * merges them); the same buffers the other way round are two, and both
 * segments read the same owner bytes in their own order.
 */
TEST_F(vec, adjacent_buffers_merge)
{
	char *b = (char *)(uintptr_t)self->iov[2].base;	/* 8 pages */
	struct xpmem_ext_iov fwd[3] = {
		{ (uintptr_t)b, 2 * PAGE }, { (uintptr_t)b + 2 * PAGE, PAGE },
		{ (uintptr_t)b + 3 * PAGE, 5 * PAGE },
	};
	struct xpmem_ext_iov rev[2] = {
		{ (uintptr_t)b + 4 * PAGE, 4 * PAGE }, { (uintptr_t)b, 4 * PAGE },
	};
	xpmem_segid_t sf, sr;
	xpmem_apid_t af, ar;
	char *pf, *pr;

	ASSERT_EQ(0, makev(self->fd, fwd, 3, &sf));
	ASSERT_EQ(0, makev(self->fd, rev, 2, &sr));
	ASSERT_EQ(1, proc_ranges(sf));
	ASSERT_EQ(2, proc_ranges(sr));
	ASSERT_EQ(3, proc_ranges(self->segid));
	ASSERT_EQ(0, xp_get(self->fd, sf, XPMEM_RDONLY, &af));
	ASSERT_EQ(0, xp_get(self->fd, sr, XPMEM_RDONLY, &ar));
	ASSERT_EQ(0, xp_attach(self->fd, af, 0, 8 * PAGE, NULL, (void **)&pf));
	ASSERT_EQ(0, xp_attach(self->fd, ar, 0, 8 * PAGE, NULL, (void **)&pr));
	ASSERT_EQ(0, memcmp(pf, b, 8 * PAGE));
	ASSERT_EQ(0, memcmp(pr, b + 4 * PAGE, 4 * PAGE));
	ASSERT_EQ(0, memcmp(pr + 4 * PAGE, b, 4 * PAGE));
	ASSERT_EQ(0, xp_release(self->fd, af));
	ASSERT_EQ(0, xp_release(self->fd, ar));
	ASSERT_EQ(0, xp_remove(self->fd, sf));
	ASSERT_EQ(0, xp_remove(self->fd, sr));
}

/* REMOVE ends attachments of every buffer; nothing is left. */
TEST_F(vec, remove_revokes_and_frees)
{
	xpmem_apid_t apid;
	char *a;

	ASSERT_EQ(0, xp_get(self->fd, self->segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, TOTAL, NULL, (void **)&a));
	ASSERT_EQ(0, memcmp(a, self->want, TOTAL));
	ASSERT_EQ(0, xp_remove(self->fd, self->segid));
	for (int i = 0; i < NBUF; i++)
		ASSERT_EQ(SIGBUS, probe(a + buf_off(i), 0, 0));
	ASSERT_EQ(0, xp_detach(self->fd, a));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_COUNTERS_AT_BASE();
}

TEST_HARNESS_MAIN
