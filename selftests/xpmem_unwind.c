// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_unwind - a call that fails leaves nothing behind.
 *
 * A failed ATTACH or EXT_ATTACH has mapped nothing (no attachment VMA, no
 * object, the counters as before); with a FIXED address the mapping it
 * would have replaced is still there with its contents, unless mmap
 * itself failed after it began to replace it (ENOMEM: the range is then
 * unmapped, as mmap(2) with MAP_FIXED leaves it).  A failed DETACH leaves
 * the attachment whole: every piece mapped and readable.  A failed MAKE or
 * GET leaves no segment or permit (and a segment's key free).
 *
 * The walks fail one allocation at a time with /proc/thread-self/fail-nth:
 * for N = 1, 2, ... the Nth slab or page allocation of the call fails
 * (failslab and fail_page_alloc, GFP_KERNEL and user pages included),
 * until a call makes fewer than N.  The argument of each call lies in a
 * private page of a memfd that the call has only read so far, so writing
 * the result back takes a copy-on-write page, which can fail too.  The
 * walks skip on kernels without fault injection (the debug kernel has
 * it); result_unwritable needs none.
 *
 * Runs as root inside the test VM with the module loaded (skips without
 * it); the fault injection knobs are saved and restored.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* Pages of the owner's buffer and of each attachment. */
#define NPAGES		4
/* fill() seeds: the owner's buffer, the mapping under a FIXED attach */
#define SRC_SEED	5
#define DST_SEED	9
/* A call that still fails its Nth allocation at this N never ends. */
#define MAX_NTH		3000

#define FI_DIR		"/sys/kernel/debug/"

/* ---- fault injection ---------------------------------------------------- */

/*
 * The knobs that let fail-nth reach every allocation: by default
 * failslab and fail_page_alloc leave out allocations that may sleep, and
 * fail_page_alloc those of order 0 and of user pages.  Besides, every
 * allocation fails of a task whose make-it-fail is 1 (task-filter,
 * probability 100): no task's is but ours, and ours only from the
 * moment fail-nth fired to the end of the call (FROM_NTH).
 */
static const char *const fi_knobs[][3] = {
	{ "failslab", "task-filter", "Y" },
	{ "failslab", "probability", "100" },
	{ "failslab", "interval", "1" },
	{ "failslab", "times", "-1" },
	{ "failslab", "space", "0" },
	{ "failslab", "verbose", "0" },
	{ "failslab", "ignore-gfp-wait", "N" },
	{ "fail_page_alloc", "task-filter", "Y" },
	{ "fail_page_alloc", "probability", "100" },
	{ "fail_page_alloc", "interval", "1" },
	{ "fail_page_alloc", "times", "-1" },
	{ "fail_page_alloc", "space", "0" },
	{ "fail_page_alloc", "verbose", "0" },
	{ "fail_page_alloc", "ignore-gfp-wait", "N" },
	{ "fail_page_alloc", "ignore-gfp-highmem", "N" },
	{ "fail_page_alloc", "min-order", "0" },
};
#define NR_KNOBS	(sizeof(fi_knobs) / sizeof(fi_knobs[0]))

static char fi_saved[NR_KNOBS][32];

/* debugfs files of fault injection are streams: one open per access */
static int knob_rw(int i, const char *val, char *old, size_t oldlen)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), FI_DIR "%s/%s", fi_knobs[i][0],
		 fi_knobs[i][1]);
	if (old) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		n = read(fd, old, oldlen - 1);
		old[n > 0 ? n : 0] = 0;
		close(fd);
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

/* Set the knobs, saving what they were; -1 if there are none. */
static int fi_setup(void)
{
	unsigned int i;

	for (i = 0; i < NR_KNOBS; i++)
		if (knob_rw(i, fi_knobs[i][2], fi_saved[i],
			    sizeof(fi_saved[i]))) {
			fprintf(stderr, "# cannot set %s/%s: %s\n",
				fi_knobs[i][0], fi_knobs[i][1],
				strerror(errno));
			return -1;
		}
	return 0;
}

/* Backwards: probability goes back to 0 before task-filter to N. */
static void fi_restore(void)
{
	unsigned int i;

	for (i = NR_KNOBS; i-- > 0;)
		if (fi_saved[i][0])
			knob_rw(i, fi_saved[i], NULL, 0);
}

/*
 * How a walk fails the calls: only their Nth allocation (the kernel's
 * retries then mostly succeed), or the Nth and every one after it.
 */
enum { ONLY_NTH, FROM_NTH, NR_MODES };
static const char *const mode_names[NR_MODES] = {
	"allocation N fails", "allocations N and on fail",
};

/* The two per-thread files, opened once (opening allocates). */
struct fi_fds {
	int nth;		/* /proc/thread-self/fail-nth */
	int mif;		/* /proc/thread-self/make-it-fail */
};

/*
 * One ioctl with its @n-th allocation failing (and, FROM_NTH, every one
 * after it); *@hit tells whether the call made that many (the failure was
 * injected).  Nothing between arming and the ioctl may allocate or fault.
 */
static long nth_ioctl(const struct fi_fds *fi, int mode, unsigned int n,
		      int fd, unsigned long cmd, void *arg, bool *hit)
{
	/* on the stack: written by us, so present for the kernel to read */
	char num[16], left[16] = "", on[2] = "1", off[2] = "0";
	int len = snprintf(num, sizeof(num), "%u", n);
	long r;

	if (pwrite(fi->nth, num, len, 0) != len)
		return -EIO;
	if (mode == FROM_NTH && write(fi->mif, on, 1) != 1)
		return -EIO;
	r = ioctl(fd, cmd, arg);
	r = r < 0 ? -errno : r;
	if (mode == FROM_NTH && write(fi->mif, off, 1) != 1)
		return -EIO;
	*hit = pread(fi->nth, left, sizeof(left) - 1, 0) > 0 && atoi(left) == 0;
	if (!*hit && pwrite(fi->nth, off, 1, 0) != 1)
		return -EIO;
	return r;
}

/* ---- what the process has: counters, objects, mappings ---------------- */

struct snap {
	long segs, permits, atts;
	int maps_atts;			/* attachment VMAs */
	char objs[4096];		/* /proc/xpmem-objects/<pid> */
};

/* The path /proc/self/maps shows for an attachment: "/xpmem (deleted)". */
static bool att_path(const char *path)
{
	return !strncmp(path, "/xpmem", 6) && (!path[6] || path[6] == ' ');
}

/*
 * Walk /proc/self/maps: the number of attachment VMAs, and the bytes of
 * [@a, @a + @len) that attachments (*@xp) and other mappings (*@other)
 * cover.
 */
static int maps_scan(uintptr_t a, size_t len, size_t *xp, size_t *other)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512], path[256];
	unsigned long s, e, lo, hi;
	int n = 0;

	if (xp)
		*xp = *other = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255[^\n]", &s, &e,
			   path) < 2)
			continue;
		n += att_path(path);
		if (!xp)
			continue;
		lo = s > a ? s : a;
		hi = e < a + len ? e : a + len;
		if (lo < hi)
			*(att_path(path) ? xp : other) += hi - lo;
	}
	fclose(f);
	return n;
}

static void read_objs(char *buf, size_t len)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/xpmem-objects/%d", (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = 0;
}

static void snap_take(struct snap *s)
{
	s->segs = stat_read("segments");
	s->permits = stat_read("permits");
	s->atts = stat_read("attachments");
	s->maps_atts = maps_scan(0, 0, NULL, NULL);
	read_objs(s->objs, sizeof(s->objs));
}

static bool snap_eq(const struct snap *a, const struct snap *b)
{
	return a->segs == b->segs && a->permits == b->permits &&
	       a->atts == b->atts && a->maps_atts == b->maps_atts &&
	       !strcmp(a->objs, b->objs);
}

/*
 * Is the process's state @want again?  Deferred work (the end of an
 * attachment's notifiers) may lag behind a call by a moment: polled up to
 * 10 s, and *@now is the last state seen.
 */
static bool snap_back(const struct snap *want, struct snap *now)
{
	uint64_t t0 = now_ns();

	for (;;) {
		snap_take(now);
		if (snap_eq(want, now))
			return true;
		if (now_ns() - t0 > 10000000000ULL)
			return false;
		poll(NULL, 0, 20);
	}
}

#define ASSERT_SNAP_BACK(want, what, n) do {				\
	struct snap __now;						\
	bool __ok = snap_back(want, &__now);				\
	if (!__ok)							\
		TH_LOG("%s, allocation %u failing: segments %ld (was %ld), " \
		       "permits %ld (%ld), attachments %ld (%ld), "	\
		       "attachment VMAs %d (%d); objects now:\n%s\nwere:\n%s", \
		       what, n, __now.segs, (want)->segs, __now.permits, \
		       (want)->permits, __now.atts, (want)->atts,	\
		       __now.maps_atts, (want)->maps_atts, __now.objs,	\
		       (want)->objs);					\
	ASSERT_TRUE(__ok);						\
} while (0)

/* ---- call arguments ----------------------------------------------------- */

/*
 * @len bytes of @arg in a fresh private mapping of @mfd's first page,
 * mapped by a read (the memfd's own page): the call reads it as it is,
 * and its first write needs a page of its own.
 */
static void *cow_arg(int mfd, void **page, const void *arg, size_t len)
{
	volatile char *p;

	if (*page)
		munmap(*page, PAGE);
	*page = NULL;
	if (pwrite(mfd, arg, len, 0) != (ssize_t)len)
		return NULL;
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, mfd, 0);
	if (p == MAP_FAILED)
		return NULL;
	(void)p[0];
	*page = (void *)p;
	return *page;
}

/* @len bytes of @arg in a read-only page: the result cannot go back. */
static void *ro_arg(const void *arg, size_t len)
{
	void *p = map_anon(PAGE);

	if (!p)
		return NULL;
	memcpy(p, arg, len);
	if (mprotect(p, PAGE, PROT_READ)) {
		munmap(p, PAGE);
		return NULL;
	}
	return p;
}

/* ---- the fixtures ------------------------------------------------------- */

/* What every test has: attach (with variants) and unwind (without). */
struct unw {
	int fd;
	struct fi_fds fi;	/* -1 until a walk opens them */
	int mfd;		/* holds the arguments of the calls */
	void *argpage;
	bool fi_set;
	char *src;		/* the owner's buffer (fill SRC_SEED) */
	char *dst;		/* under FIXED attaches (fill DST_SEED) */
	struct snap base;
};

/* Open the device; false without the module. */
static bool unw_open(struct unw *u)
{
	memset(u, 0, sizeof(*u));
	u->fi.nth = -1;
	u->fi.mif = -1;
	u->mfd = -1;
	u->fd = xp_open();
	return u->fd >= 0;
}

static void unw_setup(struct __test_metadata *_metadata, struct unw *u)
{
	snap_take(&u->base);
	u->src = map_anon(NPAGES * PAGE);
	u->dst = map_anon(NPAGES * PAGE);
	ASSERT_NE(NULL, u->src);
	ASSERT_NE(NULL, u->dst);
	fill(u->src, NPAGES * PAGE, SRC_SEED);
	fill(u->dst, NPAGES * PAGE, DST_SEED);
	u->mfd = memfd_create("xpmem_unwind_arg", MFD_CLOEXEC);
	ASSERT_LE(0, u->mfd);
	ASSERT_EQ(0, ftruncate(u->mfd, PAGE));
}

static void unw_teardown(struct __test_metadata *_metadata, struct unw *u)
{
	if (u->fi.mif >= 0) {
		if (write(u->fi.mif, "0", 1) != 1)
			TH_LOG("cannot reset make-it-fail");
		close(u->fi.mif);
	}
	if (u->fi.nth >= 0) {
		if (pwrite(u->fi.nth, "0", 1, 0) != 1)
			TH_LOG("cannot reset fail-nth");
		close(u->fi.nth);
	}
	if (u->fi_set)
		fi_restore();
	if (u->fd >= 0)
		close(u->fd);
}

/* The walks need fail-nth and the knobs; false: skip. */
static bool nth_ready(struct unw *u)
{
	u->fi.nth = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	u->fi.mif = open("/proc/thread-self/make-it-fail",
			 O_WRONLY | O_CLOEXEC);
	if (u->fi.nth < 0 || u->fi.mif < 0)
		return false;
	u->fi_set = true;
	return !fi_setup();
}

FIXTURE(unwind) {
	struct unw u;
};

FIXTURE_SETUP(unwind)
{
	if (!unw_open(&self->u))
		SKIP(return, "no %s (module not loaded)", XPMEM_DEV_PATH);
	unw_setup(_metadata, &self->u);
}

FIXTURE_TEARDOWN(unwind)
{
	unw_teardown(_metadata, &self->u);
}

FIXTURE(attach) {
	struct unw u;
};

FIXTURE_SETUP(attach)
{
	if (!unw_open(&self->u))
		SKIP(return, "no %s (module not loaded)", XPMEM_DEV_PATH);
	unw_setup(_metadata, &self->u);
}

FIXTURE_TEARDOWN(attach)
{
	unw_teardown(_metadata, &self->u);
}

/*
 * After a failed ATTACH with FIXED at @dst: whatever was there is still
 * there with its contents, or (mmap's own ENOMEM only) nothing is.  The
 * range is made the DST_SEED mapping again for the next call.  Returns
 * NULL, or what is wrong.
 */
static const char *dst_after_failure(char *dst, long err)
{
	size_t xp, other;

	if (maps_scan((uintptr_t)dst, NPAGES * PAGE, &xp, &other) < 0)
		return "cannot read /proc/self/maps";
	if (xp)
		return "an attachment is mapped there";
	if (other == NPAGES * PAGE)
		return check(dst, NPAGES * PAGE, DST_SEED) ?
		       "the old mapping holds other data" : NULL;
	if (other)
		return "part of the old mapping is gone";
	if (err != -ENOMEM)
		return "the old mapping is gone (unmapped)";
	if (mmap(dst, NPAGES * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != dst)
		return "cannot map it again";
	fill(dst, NPAGES * PAGE, DST_SEED);
	return NULL;
}

/* A segment of the owner's buffer and an RDWR permit of it. */
static int seg_permit(int fd, char *src, xpmem_segid_t *segid,
		      xpmem_apid_t *apid)
{
	return xp_make(fd, src, NPAGES * PAGE, 0600, segid) ?:
	       xp_get(fd, *segid, XPMEM_RDWR, apid);
}

/* ---- ATTACH ------------------------------------------------------------- */

FIXTURE_VARIANT(attach) {
	bool ext;		/* EXT_ATTACH, else the classic ATTACH */
	bool fixed;		/* at the address of the mapping dst */
	unsigned int flags;	/* EXT_ATTACH flags besides FIXED */
};

FIXTURE_VARIANT_ADD(attach, attach) { .ext = false };
FIXTURE_VARIANT_ADD(attach, attach_at_address) { .fixed = true };
FIXTURE_VARIANT_ADD(attach, ext_attach) { .ext = true };
FIXTURE_VARIANT_ADD(attach, ext_attach_fixed) { .ext = true, .fixed = true };
FIXTURE_VARIANT_ADD(attach, ext_attach_fixed_populate_write) {
	.ext = true, .fixed = true,
	.flags = XPMEM_EXT_ATTACH_POPULATE_WRITE,
};
FIXTURE_VARIANT_ADD(attach, ext_attach_rdonly_populate_zero_revoked) {
	.ext = true,
	.flags = XPMEM_EXT_ATTACH_RDONLY | XPMEM_EXT_ATTACH_POPULATE |
		 XPMEM_EXT_ATTACH_ZERO_REVOKED,
};

/* The variant's ATTACH of all of @apid's segment, as an ioctl. */
struct att_call {
	unsigned long cmd;
	union {
		struct xpmem_cmd_attach classic;
		struct xpmem_ext_attach ext;
	} u;
	size_t len;
};

static void att_call_init(struct att_call *c,
			  const FIXTURE_VARIANT(attach) *v, xpmem_apid_t apid,
			  char *dst)
{
	memset(c, 0, sizeof(*c));
	if (v->ext) {
		c->cmd = XPMEM_CMD_EXT_ATTACH;
		c->u.ext.apid = apid;
		c->u.ext.size = NPAGES * PAGE;
		c->u.ext.flags = v->flags;
		if (v->fixed) {
			c->u.ext.flags |= XPMEM_EXT_ATTACH_FIXED;
			c->u.ext.vaddr = (uintptr_t)dst;
		}
		c->len = sizeof(c->u.ext);
	} else {
		c->cmd = XPMEM_CMD_ATTACH;
		c->u.classic.apid = apid;
		c->u.classic.size = NPAGES * PAGE;
		c->u.classic.vaddr = v->fixed ? (uintptr_t)dst : 0;
		c->len = sizeof(c->u.classic);
	}
}

/* The address field of an ATTACH argument @arg of @c's kind. */
static uint64_t att_vaddr(const struct att_call *c, const void *arg)
{
	return c->cmd == XPMEM_CMD_EXT_ATTACH ?
	       ((const struct xpmem_ext_attach *)arg)->vaddr :
	       ((const struct xpmem_cmd_attach *)arg)->vaddr;
}

/*
 * The variant's ATTACH with its Nth allocation failing (ONLY_NTH), or all
 * from the Nth on (FROM_NTH), N = 1, 2, ..., each time with a fresh
 * segment and permit (the first attachment of a segment registers the
 * owner's notifier).  A success maps the owner's data where the call
 * says; a failure maps nothing, leaves the address field as it was and
 * the counters and objects as before, and a FIXED one leaves the old
 * mapping (dst_after_failure()).
 */
TEST_F_TIMEOUT(attach, fails_whole, 900)
{
	struct unw *u = &self->u;
	long fails, enomem, efault, r = 0;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	struct att_call c;
	struct snap before;
	unsigned int n;
	uint64_t want;
	size_t xp, other;
	const char *why;
	bool hit;
	void *arg;
	int mode;
	char *a;

	if (!nth_ready(u))
		SKIP(return, "no fail-nth or fault injection knobs (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	for (mode = 0; mode < NR_MODES; mode++) {
		fails = enomem = efault = 0;
		hit = true;
		for (n = 1; hit && n < MAX_NTH; n++) {
			ASSERT_EQ(0, seg_permit(u->fd, u->src, &segid, &apid));
			snap_take(&before);
			att_call_init(&c, variant, apid, u->dst);
			want = att_vaddr(&c, &c.u);
			arg = cow_arg(u->mfd, &u->argpage, &c.u, c.len);
			ASSERT_NE(NULL, arg);
			r = nth_ioctl(&u->fi, mode, n, u->fd, c.cmd, arg, &hit);
			ASSERT_NE(-EIO, r);
			if (!r) {
				a = (char *)(uintptr_t)att_vaddr(&c, arg);
				if (variant->fixed)
					ASSERT_EQ((uintptr_t)u->dst, (uintptr_t)a);
				maps_scan((uintptr_t)a, NPAGES * PAGE, &xp,
					  &other);
				ASSERT_EQ(NPAGES * PAGE, xp);
				ASSERT_EQ(0, check(a, NPAGES * PAGE, SRC_SEED))
					TH_LOG("%s, N = %u: attached, wrong data",
					       mode_names[mode], n);
				ASSERT_EQ(0, xp_detach(u->fd, a));
				/* MAP_FIXED replaced it: a new one */
				if (variant->fixed)
					ASSERT_EQ(NULL, dst_after_failure(u->dst,
									  -ENOMEM));
			} else {
				fails++;
				enomem += r == -ENOMEM;
				efault += r == -EFAULT;
				ASSERT_TRUE(r == -ENOMEM || r == -EFAULT)
					TH_LOG("%s, N = %u: errno %ld",
					       mode_names[mode], n, -r);
				ASSERT_EQ(want, att_vaddr(&c, arg))
					TH_LOG("%s, N = %u: errno %ld, yet the address was written",
					       mode_names[mode], n, -r);
				ASSERT_SNAP_BACK(&before, "failed ATTACH", n);
				if (variant->fixed) {
					why = dst_after_failure(u->dst, r);
					ASSERT_EQ(NULL, why)
						TH_LOG("%s, N = %u (errno %ld), under the FIXED address: %s",
						       mode_names[mode], n, -r,
						       why);
					ASSERT_EQ(-EINVAL,
						  xp_detach(u->fd, u->dst));
				}
			}
			ASSERT_EQ(0, xp_release(u->fd, apid));
			ASSERT_EQ(0, xp_remove(u->fd, segid));
		}
		TH_LOG("%s: %u allocations walked, %ld failed calls (%ld ENOMEM, %ld EFAULT)",
		       mode_names[mode], n - 1, fails, enomem, efault);
		ASSERT_FALSE(hit)
			TH_LOG("%s: still failing at N = %u", mode_names[mode],
			       n);
		ASSERT_EQ(0, r);
		ASSERT_LT(0, fails);
	}
	ASSERT_SNAP_BACK(&u->base, "after the walk", n);
}

/*
 * The variant's ATTACH with its argument in a read-only page: the result
 * cannot be written back, so the call fails with EFAULT, and nothing is
 * left: no attachment, the counters as before, and a FIXED one leaves
 * the mapping at its address as it was.  No fault injection needed.
 */
TEST_F(attach, result_unwritable)
{
	struct unw *u = &self->u;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	struct att_call c;
	struct snap before;
	const char *why;
	void *arg;

	ASSERT_EQ(0, seg_permit(u->fd, u->src, &segid, &apid));
	snap_take(&before);
	att_call_init(&c, variant, apid, u->dst);
	arg = ro_arg(&c.u, c.len);
	ASSERT_NE(NULL, arg);
	ASSERT_EQ(-EFAULT, xp_ioctl(u->fd, c.cmd, arg));
	ASSERT_SNAP_BACK(&before, "ATTACH with a read-only argument", 0);
	if (variant->fixed) {
		why = dst_after_failure(u->dst, -EFAULT);
		ASSERT_EQ(NULL, why)
			TH_LOG("EFAULT, under the FIXED address: %s", why);
		ASSERT_EQ(-EINVAL, xp_detach(u->fd, u->dst));
	}
	munmap(arg, PAGE);
	ASSERT_EQ(0, xp_release(u->fd, apid));
	ASSERT_EQ(0, xp_remove(u->fd, segid));
	ASSERT_SNAP_BACK(&u->base, "after the test", 0);
}

/* ---- DETACH ------------------------------------------------------------- */

enum { ONE_VMA, SPLIT, MOVED_APART, NR_SHAPES };
static const char *const shape_names[NR_SHAPES] = {
	"one VMA", "split in three by mprotect", "a piece mremapped apart",
};

/*
 * An attachment of all of @apid's segment, in the shape @shape; its
 * pieces in @piece[] (address and length, two at most).  0 or a line.
 */
static int att_shape(int fd, xpmem_apid_t apid, int shape, char *far,
		     char *piece[2], size_t plen[2])
{
	void *a;

	if (xp_attach(fd, apid, 0, NPAGES * PAGE, NULL, &a))
		return __LINE__;
	piece[0] = a;
	plen[0] = NPAGES * PAGE;
	piece[1] = NULL;
	plen[1] = 0;
	if (shape == SPLIT &&
	    mprotect(piece[0] + PAGE, PAGE, PROT_READ))
		return __LINE__;
	if (shape == MOVED_APART) {
		if (mremap(piece[0] + (NPAGES - 1) * PAGE, PAGE, PAGE,
			   MREMAP_MAYMOVE | MREMAP_FIXED, far) != far)
			return __LINE__;
		plen[0] -= PAGE;
		piece[1] = far;
		plen[1] = PAGE;
	}
	return 0;
}

/* Bytes of @piece[i] mapped as an attachment. */
static size_t piece_mapped(char *piece[2], size_t plen[2], int i)
{
	size_t xp, other;

	maps_scan((uintptr_t)piece[i], plen[i], &xp, &other);
	return xp;
}

/*
 * DETACH with its Nth allocation failing (ONLY_NTH), or all from the Nth
 * on (FROM_NTH), N = 1, 2, ..., of attachments of three shapes: one VMA,
 * three adjacent VMAs of an mprotect split, two pieces apart after
 * mremap.  A success unmaps every piece (and a second DETACH is EINVAL);
 * a failure is ENOMEM and leaves every piece mapped with the owner's
 * data, and the counters and objects as they were.  Pieces apart are
 * unmapped one after the other: if the second cannot be even after
 * retries (FROM_NTH), the DETACH fails with the second still whole.
 */
TEST_F_TIMEOUT(unwind, detach_fails_whole, 900)
{
	struct unw *u = &self->u;
	struct xpmem_cmd_detach d;
	struct snap before, attached;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *piece[2], *far;
	long fails, partial, r = 0;
	int shape, mode, i, line;
	size_t plen[2];
	unsigned int n;
	bool hit;

	if (!nth_ready(u))
		SKIP(return, "no fail-nth or fault injection knobs (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	ASSERT_EQ(0, seg_permit(u->fd, u->src, &segid, &apid));
	snap_take(&before);
	/* where the moved piece goes: a page of its own, far from the rest */
	far = mmap(NULL, 64 * PAGE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, far);
	far += 32 * PAGE;
	for (mode = 0; mode < NR_MODES; mode++) {
		for (shape = 0; shape < NR_SHAPES; shape++) {
			fails = partial = 0;
			hit = true;
			for (n = 1; hit && n < MAX_NTH; n++) {
				line = att_shape(u->fd, apid, shape, far, piece,
						 plen);
				ASSERT_EQ(0, line);
				snap_take(&attached);
				d.vaddr = (uintptr_t)piece[0];
				r = nth_ioctl(&u->fi, mode, n, u->fd,
					      XPMEM_CMD_DETACH, &d, &hit);
				ASSERT_NE(-EIO, r);
				if (!r) {
					ASSERT_SNAP_BACK(&before, "DETACH", n);
					for (i = 0; i < 2 && piece[i]; i++)
						ASSERT_EQ(0, piece_mapped(piece,
									  plen,
									  i));
					ASSERT_EQ(-EINVAL,
						  xp_detach(u->fd, piece[0]));
					continue;
				}
				fails++;
				ASSERT_EQ(-ENOMEM, r)
					TH_LOG("%s, %s, N = %u: errno %ld",
					       mode_names[mode],
					       shape_names[shape], n, -r);
				if (shape == MOVED_APART &&
				    mode == FROM_NTH &&
				    !piece_mapped(piece, plen, 0)) {
					/* the first went; the second stays */
					partial++;
					ASSERT_EQ(plen[1],
						  piece_mapped(piece, plen, 1));
					ASSERT_EQ(0, memcmp(piece[1],
							    u->src + plen[0],
							    plen[1]));
					ASSERT_EQ(0, xp_detach(u->fd,
							       piece[1]));
					ASSERT_SNAP_BACK(&before,
							 "DETACH of the rest",
							 n);
					continue;
				}
				ASSERT_SNAP_BACK(&attached, "failed DETACH", n);
				for (i = 0; i < 2 && piece[i]; i++)
					ASSERT_EQ(plen[i],
						  piece_mapped(piece, plen, i))
						TH_LOG("%s, %s, N = %u: piece %d not whole after a failed DETACH",
						       mode_names[mode],
						       shape_names[shape], n,
						       i);
				ASSERT_EQ(0, check(piece[0], plen[0],
						   SRC_SEED));
				if (piece[1])
					ASSERT_EQ(0, memcmp(piece[1],
							    u->src + plen[0],
							    plen[1]));
				/* whole: a DETACH takes it all */
				ASSERT_EQ(0, xp_detach(u->fd, piece[0]));
				ASSERT_SNAP_BACK(&before,
						 "DETACH after a failed one", n);
			}
			TH_LOG("%s, %s: %u allocations walked, %ld failed DETACHes (%ld with the second piece left)",
			       mode_names[mode], shape_names[shape], n - 1,
			       fails, partial);
			ASSERT_FALSE(hit)
				TH_LOG("%s, %s: still failing at N = %u",
				       mode_names[mode], shape_names[shape],
				       n);
			ASSERT_EQ(0, r);
		}
	}
	ASSERT_EQ(0, xp_release(u->fd, apid));
	ASSERT_EQ(0, xp_remove(u->fd, segid));
	ASSERT_SNAP_BACK(&u->base, "after the walk", n);
}

/* ---- MAKE and GET ------------------------------------------------------- */

static const char seg_key[] = "xpmem_unwind";

/*
 * MAKE and EXT_MAKE with a key, each with its Nth allocation failing, or
 * all from the Nth on, N = 1, 2, ...  A failure leaves no segment
 * (counters, objects), the segid field as it was, and the key free for
 * the next EXT_MAKE.
 */
TEST_F_TIMEOUT(unwind, make_fails_whole, 900)
{
	struct unw *u = &self->u;
	struct xpmem_cmd_make mk;
	struct xpmem_ext_make emk;
	xpmem_segid_t segid;
	struct snap before;
	unsigned int n;
	int ext, mode;
	long fails, r = 0;
	bool hit;
	void *arg;

	if (!nth_ready(u))
		SKIP(return, "no fail-nth or fault injection knobs (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	snap_take(&before);
	for (mode = 0; mode < NR_MODES; mode++) {
		for (ext = 0; ext < 2; ext++) {
			fails = 0;
			hit = true;
			for (n = 1; hit && n < MAX_NTH; n++) {
				memset(&mk, 0, sizeof(mk));
				mk.vaddr = (uintptr_t)u->src;
				mk.size = NPAGES * PAGE;
				mk.permit_type = XPMEM_PERMIT_MODE;
				mk.permit_value = 0600;
				memset(&emk, 0, sizeof(emk));
				emk.vaddr = (uintptr_t)u->src;
				emk.size = NPAGES * PAGE;
				emk.flags = XPMEM_EXT_MAKE_KEY;
				emk.mode = 0600;
				emk.key_len = sizeof(seg_key) - 1;
				memcpy(emk.key, seg_key, emk.key_len);
				arg = ext ? cow_arg(u->mfd, &u->argpage, &emk,
						    sizeof(emk)) :
					    cow_arg(u->mfd, &u->argpage, &mk,
						    sizeof(mk));
				ASSERT_NE(NULL, arg);
				r = nth_ioctl(&u->fi, mode, n, u->fd,
					      ext ? XPMEM_CMD_EXT_MAKE :
						    XPMEM_CMD_MAKE,
					      arg, &hit);
				ASSERT_NE(-EIO, r);
				segid = ext ?
					((struct xpmem_ext_make *)arg)->segid :
					((struct xpmem_cmd_make *)arg)->segid;
				if (!r) {
					ASSERT_EQ(0, xp_remove(u->fd, segid));
					ASSERT_SNAP_BACK(&before,
							 "MAKE + REMOVE", n);
					continue;
				}
				fails++;
				ASSERT_TRUE(r == -ENOMEM || r == -EFAULT)
					TH_LOG("%s, N = %u: errno %ld",
					       mode_names[mode], n, -r);
				ASSERT_EQ(0, segid);
				ASSERT_SNAP_BACK(&before, "failed MAKE", n);
				if (ext) {
					/* the key is free again */
					emk.segid = 0;
					ASSERT_EQ(0, xp_ioctl(u->fd,
							      XPMEM_CMD_EXT_MAKE,
							      &emk));
					ASSERT_EQ(0, xp_remove(u->fd,
							       emk.segid));
				}
			}
			TH_LOG("%s, %s: %u allocations walked, %ld failed",
			       mode_names[mode], ext ? "EXT_MAKE" : "MAKE",
			       n - 1, fails);
			ASSERT_FALSE(hit);
			ASSERT_EQ(0, r);
		}
	}
	ASSERT_SNAP_BACK(&u->base, "after the walk", n);
}

/*
 * GET and EXT_GET by key, each with its Nth allocation failing, or all
 * from the Nth on, N = 1, 2, ...  A failure leaves no permit (counters,
 * objects) and the apid field as it was.
 */
TEST_F_TIMEOUT(unwind, get_fails_whole, 900)
{
	struct unw *u = &self->u;
	struct xpmem_ext_make emk = {
		.vaddr = (uintptr_t)u->src, .size = NPAGES * PAGE,
		.flags = XPMEM_EXT_MAKE_KEY, .mode = 0600,
		.key_len = sizeof(seg_key) - 1,
	};
	struct xpmem_cmd_get g;
	struct xpmem_ext_get eg;
	struct snap before;
	xpmem_apid_t apid;
	unsigned int n;
	long fails, r = 0;
	int ext, mode;
	bool hit;
	void *arg;

	if (!nth_ready(u))
		SKIP(return, "no fail-nth or fault injection knobs (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	memcpy(emk.key, seg_key, emk.key_len);
	ASSERT_EQ(0, xp_ioctl(u->fd, XPMEM_CMD_EXT_MAKE, &emk));
	snap_take(&before);
	for (mode = 0; mode < NR_MODES; mode++) {
		for (ext = 0; ext < 2; ext++) {
			fails = 0;
			hit = true;
			for (n = 1; hit && n < MAX_NTH; n++) {
				memset(&g, 0, sizeof(g));
				g.segid = emk.segid;
				g.flags = XPMEM_RDWR;
				g.permit_type = XPMEM_PERMIT_MODE;
				memset(&eg, 0, sizeof(eg));
				eg.flags = XPMEM_RDWR | XPMEM_EXT_GET_BY_KEY;
				eg.key_len = emk.key_len;
				memcpy(eg.key, seg_key, eg.key_len);
				arg = ext ? cow_arg(u->mfd, &u->argpage, &eg,
						    sizeof(eg)) :
					    cow_arg(u->mfd, &u->argpage, &g,
						    sizeof(g));
				ASSERT_NE(NULL, arg);
				r = nth_ioctl(&u->fi, mode, n, u->fd,
					      ext ? XPMEM_CMD_EXT_GET :
						    XPMEM_CMD_GET,
					      arg, &hit);
				ASSERT_NE(-EIO, r);
				apid = ext ?
				       ((struct xpmem_ext_get *)arg)->apid :
				       ((struct xpmem_cmd_get *)arg)->apid;
				if (!r) {
					ASSERT_EQ(0, xp_release(u->fd, apid));
					ASSERT_SNAP_BACK(&before,
							 "GET + RELEASE", n);
					continue;
				}
				fails++;
				ASSERT_TRUE(r == -ENOMEM || r == -EFAULT)
					TH_LOG("%s, N = %u: errno %ld",
					       mode_names[mode], n, -r);
				ASSERT_EQ(0, apid);
				ASSERT_SNAP_BACK(&before, "failed GET", n);
			}
			TH_LOG("%s, %s: %u allocations walked, %ld failed",
			       mode_names[mode], ext ? "EXT_GET" : "GET",
			       n - 1, fails);
			ASSERT_FALSE(hit);
			ASSERT_EQ(0, r);
		}
	}
	ASSERT_EQ(0, xp_remove(u->fd, emk.segid));
	ASSERT_SNAP_BACK(&u->base, "after the walk", n);
}

TEST_HARNESS_MAIN
