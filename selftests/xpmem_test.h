/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xpmem_test.h - helpers shared by the xpmem_* selftests: raw classic
 * ioctl wrappers, the stats counters, the page size and the module's
 * limit parameters, buffers exported and attached in one step.  The
 * helpers that are not about xpmem (byte patterns, probes, pipes, child
 * processes) are in test_util.h, which the lib_* suites include too.
 *
 * Everything is static inline so that a suite using only some of the
 * helpers still builds with -Wall -Werror.
 */
#ifndef XPMEM_TEST_H
#define XPMEM_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "uring_probe.h"
#include "xt_wait.h"
#include "xpmem_sysfs.h"
#include "xpmem_uapi.h"

/*
 * The base page size, as the kernel says (4 KiB on x86_64; 4, 16 or 64 KiB
 * on arm64): every size and offset the suites derive from pages follows
 * it.  sysconf() reads it from the aux vector (no system call).
 */
static inline size_t xt_page_size(void)
{
	static size_t page;

	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

#define PAGE		xt_page_size()
/* Pages one PMD maps: a page table page of 8-byte entries (512 at 4 KiB). */
#define PMD_PAGES	(PAGE / 8)

/*
 * The end of the user address space (the kernel's TASK_SIZE, where a
 * whole-address-space segment ends): 0x7ffffffff000 on x86_64 with 4-level
 * page tables, 1 << 48 on arm64 with 48-bit addresses.  Found by bisection
 * on the pages MAP_FIXED_NOREPLACE may place (EEXIST counts: a page that
 * is mapped already is below the end too).
 */
static inline uint64_t xt_user_top(void)
{
	static uint64_t top;
	uint64_t lo = 1ULL << 32, hi = 1ULL << 57, mid;	/* lo valid, hi not */
	void *p;

	if (top)
		return top;
	while (hi - lo > PAGE) {
		mid = lo + ((hi - lo) / 2 & ~(uint64_t)(PAGE - 1));
		p = mmap((void *)(uintptr_t)mid, PAGE, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0);
		if (p != MAP_FAILED)
			munmap(p, PAGE);
		if (p != MAP_FAILED || errno == EEXIST)
			lo = mid;
		else
			hi = mid;
	}
	top = lo + PAGE;
	return top;
}

/* ---- raw ioctl wrappers: 0 or -errno ------------------------------------ */

static inline int xp_open(void)
{
	return open(XPMEM_DEV_PATH, O_RDWR | O_CLOEXEC);
}

/* An ioctl's non-negative result (EXT_COPY: bytes copied), or -errno. */
static inline long xp_ioctl_ret(int fd, unsigned long cmd, void *arg)
{
	long ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

static inline int xp_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/*
 * Bytes one attacher fault maps at most (QUERY's fault_window_pages): a
 * page table's worth by default, 2 MiB with 4 KiB pages and 512 MiB with
 * 64 KiB pages.  One page if QUERY fails.
 */
static inline size_t xt_fault_window(int fd)
{
	struct xpmem_ext_query q = { 0 };

	if (xp_ioctl(fd, XPMEM_CMD_EXT_QUERY, &q) || !q.fault_window_pages)
		return PAGE;
	return (size_t)q.fault_window_pages * PAGE;
}

static inline int xp_make(int fd, void *addr, size_t size, int mode,
			  xpmem_segid_t *segid)
{
	struct xpmem_cmd_make c = {
		.vaddr = (uintptr_t)addr, .size = size,
		.permit_type = XPMEM_PERMIT_MODE, .permit_value = mode,
	};
	int ret = xp_ioctl(fd, XPMEM_CMD_MAKE, &c);

	*segid = c.segid;
	return ret;
}

static inline int xp_get(int fd, xpmem_segid_t segid, int flags,
			 xpmem_apid_t *apid)
{
	struct xpmem_cmd_get c = {
		.segid = segid, .flags = flags,
		.permit_type = XPMEM_PERMIT_MODE,
	};
	int ret = xp_ioctl(fd, XPMEM_CMD_GET, &c);

	*apid = c.apid;
	return ret;
}

static inline int xp_attach(int fd, xpmem_apid_t apid, off_t off, size_t size,
			    void *want, void **out)
{
	struct xpmem_cmd_attach c = {
		.apid = apid, .offset = off, .size = size,
		.vaddr = (uintptr_t)want, .fd = fd,
	};
	int ret = xp_ioctl(fd, XPMEM_CMD_ATTACH, &c);

	*out = (void *)(uintptr_t)c.vaddr;
	return ret;
}

/* EXT_COPY: bytes copied, or -errno. */
static inline long xp_ext_copy(int fd, struct xpmem_ext_copy *c)
{
	return xp_ioctl_ret(fd, XPMEM_CMD_EXT_COPY, c);
}

static inline int xp_detach(int fd, void *addr)
{
	struct xpmem_cmd_detach c = { .vaddr = (uintptr_t)addr };

	return xp_ioctl(fd, XPMEM_CMD_DETACH, &c);
}

static inline int xp_release(int fd, xpmem_apid_t apid)
{
	struct xpmem_cmd_release c = { .apid = apid };

	return xp_ioctl(fd, XPMEM_CMD_RELEASE, &c);
}

static inline int xp_remove(int fd, xpmem_segid_t segid)
{
	struct xpmem_cmd_remove c = { .segid = segid };

	return xp_ioctl(fd, XPMEM_CMD_REMOVE, &c);
}

/*
 * Whole-address-space segments are made as MPI runtimes make them: from
 * the lowest page (WHOLE_BASE) with XPMEM_MAXADDR_SIZE, so the segment
 * offset of an address is its distance from WHOLE_BASE.
 */
#define WHOLE_BASE	PAGE

/* MAKE the caller's whole address space, from WHOLE_BASE to the top. */
static inline int make_whole(int fd, int mode, xpmem_segid_t *segid)
{
	return xp_make(fd, (void *)WHOLE_BASE, XPMEM_MAXADDR_SIZE, mode, segid);
}

/* Offset of @addr in a segment made by make_whole(). */
static inline off_t whole_off(const void *addr)
{
	return (off_t)((uintptr_t)addr - WHOLE_BASE);
}

/* ---- helpers ------------------------------------------------------------ */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

/*
 * Fault in [@p, @p + @len) for writing: MADV_POPULATE_WRITE (5.14), or a
 * write to each page where the kernel predates it (EINVAL).  The fallback
 * does not hold the mmap_lock across the range as the madvise does.
 */
static inline int populate_write(void *p, size_t len)
{
	volatile char *c = p;

	if (!madvise(p, len, MADV_POPULATE_WRITE))
		return 0;
	if (errno != EINVAL)
		return -1;
	for (size_t i = 0; i < len; i += PAGE)
		c[i] = c[i];
	return 0;
}

/* In a child: open the device, GET and ATTACH; 0 or a line number. */
static inline int child_attach(xpmem_segid_t segid, int flags, off_t off,
			       size_t size, int *fdp, xpmem_apid_t *apidp,
			       char **addr)
{
	void *a;

	*fdp = xp_open();
	if (*fdp < 0)
		return __LINE__;
	if (xp_get(*fdp, segid, flags, apidp))
		return __LINE__;
	if (xp_attach(*fdp, *apidp, off, size, NULL, &a))
		return __LINE__;
	*addr = a;
	return 0;
}

/*
 * In a child: GET @segid with @flags and ATTACH [0, @size) of it, or
 * _exit(1).  The descriptor and the apid stay until the child exits.
 */
static inline char *child_attach_or_exit(xpmem_segid_t segid, int flags,
					 size_t size)
{
	xpmem_apid_t apid;
	char *a;
	int fd;

	if (child_attach(segid, flags, 0, size, &fd, &apid, &a))
		_exit(1);
	return a;
}

/*
 * The test process's own anonymous buffer, exported and attached by the
 * test process itself (the owner and the attacher are the same mm).
 */
struct own_att {
	char *buf;		/* the owner's side */
	size_t len;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *a;		/* the attachment */
};

/* mmap @len, fill with @c, MAKE with @mode, GET with @flags, ATTACH it all. */
static inline int own_att_setup(int fd, struct own_att *o, size_t len,
				int mode, int flags, int c)
{
	void *va = NULL;
	int ret;

	o->len = len;
	o->buf = map_anon(len);
	if (!o->buf)
		return -ENOMEM;
	memset(o->buf, c, len);
	ret = xp_make(fd, o->buf, len, mode, &o->segid);
	if (!ret)
		ret = xp_get(fd, o->segid, flags, &o->apid);
	if (!ret)
		ret = xp_attach(fd, o->apid, 0, len, NULL, &va);
	o->a = va;
	return ret;
}

/*
 * The test process's own @len bytes (fill() seed 31) exported with mode
 * 0600, and an XPMEM_RDWR and an XPMEM_RDONLY permit of its own to them.
 */
struct own_seg {
	char *buf;
	size_t len;
	xpmem_segid_t segid;
	xpmem_apid_t rw, ro;
};

static inline int own_seg_setup(int fd, struct own_seg *o, size_t len)
{
	o->len = len;
	o->buf = map_anon(len);
	if (!o->buf)
		return -ENOMEM;
	fill(o->buf, len, 31);
	if (xp_make(fd, o->buf, len, 0600, &o->segid) ||
	    xp_get(fd, o->segid, XPMEM_RDWR, &o->rw) ||
	    xp_get(fd, o->segid, XPMEM_RDONLY, &o->ro))
		return -1;
	return 0;
}

/* What own_seg_setup() made goes, whatever of it is left. */
static inline void own_seg_teardown(int fd, struct own_seg *o)
{
	xp_release(fd, o->rw);
	xp_release(fd, o->ro);
	xp_remove(fd, o->segid);
	if (o->buf)
		munmap(o->buf, o->len);
}

/* RELEASE (which detaches), REMOVE, munmap the owner's buffer. */
static inline int own_att_teardown(int fd, struct own_att *o)
{
	int ret = xp_release(fd, o->apid);

	if (!ret)
		ret = xp_remove(fd, o->segid);
	munmap(o->buf, o->len);
	return ret;
}

static inline long sys_futex(void *addr, int op, int val,
			     const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

/*
 * The object counters of a fixture with fields segs/permits/atts (read in
 * its setup) are back where they were.
 */
/*
 * In a FIXTURE_SETUP with fields fd and segs/permits/atts: open the
 * device (skip the test without the module) and read the object counters
 * ASSERT_COUNTERS_AT_BASE() compares with.
 */
#define XP_FIXTURE_OPEN() do {						\
	self->fd = xp_open();						\
	if (self->fd < 0)						\
		SKIP(return, "no %s (module not loaded)", XPMEM_DEV_PATH); \
	self->segs = stat_read("segments");				\
	self->permits = stat_read("permits");				\
	self->atts = stat_read("attachments");				\
} while (0)

/*
 * FIXTURE(name) of a suite whose tests need only the device open and the
 * object counters at their start (xpmem_core, xpmem_fault).
 */
#define XP_FIXTURE_DEVICE(name)						\
	FIXTURE(name)							\
	{								\
		int fd;							\
		long segs, permits, atts;				\
	};								\
	FIXTURE_SETUP(name)						\
	{								\
		XP_FIXTURE_OPEN();					\
	}								\
	FIXTURE_TEARDOWN(name)						\
	{								\
		if (self->fd >= 0)					\
			close(self->fd);				\
	}

#define ASSERT_COUNTERS_AT_BASE() do {					\
	ASSERT_EQ(self->segs, stat_read("segments"));			\
	ASSERT_EQ(self->permits, stat_read("permits"));			\
	ASSERT_EQ(self->atts, stat_read("attachments"));		\
} while (0)

#endif /* XPMEM_TEST_H */
