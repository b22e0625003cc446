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
#include "xpmem_fi.h"
#include "xpmem_test.h"

/* Pages of the owner's buffer and of each attachment. */
#define NPAGES		4
/* fill() seeds: the owner's buffer, the mapping under a FIXED attach */
#define SRC_SEED	5
#define DST_SEED	9
/* A call that still fails its Nth allocation at this N never ends. */
#define MAX_NTH		3000

/* ---- fault injection ---------------------------------------------------- */

/*
 * The knobs that let fail-nth reach every allocation: by default
 * failslab and fail_page_alloc leave out allocations that may sleep, and
 * fail_page_alloc those of order 0 and of user pages.  Besides, every
 * allocation fails of a task whose make-it-fail is 1 (task-filter,
 * probability 100): no task's is but ours, and ours only from the
 * moment fail-nth fired to the end of the call (FROM_NTH).
 */
static struct fi_knob fi_knobs[] = {
	FI_FAILSLAB_EVERY_ALLOC,
	FI_KNOB("fail_page_alloc", "task-filter", "Y"),
	FI_KNOB("fail_page_alloc", "probability", "100"),
	FI_KNOB("fail_page_alloc", "interval", "1"),
	FI_KNOB("fail_page_alloc", "times", "-1"),
	FI_KNOB("fail_page_alloc", "space", "0"),
	FI_KNOB("fail_page_alloc", "verbose", "0"),
	FI_KNOB("fail_page_alloc", "ignore-gfp-wait", "N"),
	FI_KNOB("fail_page_alloc", "ignore-gfp-highmem", "N"),
	FI_KNOB("fail_page_alloc", "min-order", "0"),
};
#define NR_KNOBS	(sizeof(fi_knobs) / sizeof(fi_knobs[0]))

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
	bool knobs_set;
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
	if (u->knobs_set)
		fi_reset(fi_knobs, NR_KNOBS);
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
	u->knobs_set = true;
	return !fi_set(fi_knobs, NR_KNOBS);
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

/* ---- the walk ----------------------------------------------------------- */

/* One fail-nth walk of a call (nth_walk()), as its callbacks see it. */
struct walk {
	struct unw *u;
	int mode;		/* ONLY_NTH or FROM_NTH */
	char what[64];		/* the mode and the call, for messages */
	unsigned int n;		/* the call's allocation N fails (and on) */
	long r;			/* what the call returned */
	long fails;		/* calls that failed so far */
	void *ctx;		/* the test's own */
};

/*
 * A walk's call: @prep makes its argument (its address; *@cmd the
 * ioctl), @check judges what the call returned (w->r, one of w->fails
 * if not 0) and what it left, and undoes what it made.
 */
struct walk_ops {
	void *(*prep)(struct __test_metadata *_metadata, struct walk *w,
		      unsigned long *cmd);
	void (*check)(struct __test_metadata *_metadata, struct walk *w,
		      void *arg);
};

/*
 * The walk: the call with its allocation N failing (ONLY_NTH), or all
 * from the Nth on (FROM_NTH), for N = 1, 2, ... until a call makes fewer
 * than N (the failure was not injected), which must then succeed.
 */
static void nth_walk(struct __test_metadata *_metadata, struct walk *w,
		     const struct walk_ops *ops)
{
	unsigned long cmd;
	bool hit = true;
	void *arg;

	w->fails = 0;
	w->r = 0;
	for (w->n = 1; hit && w->n < MAX_NTH; w->n++) {
		arg = ops->prep(_metadata, w, &cmd);
		ASSERT_NE(NULL, arg);
		w->r = nth_ioctl(&w->u->fi, w->mode, w->n, w->u->fd, cmd, arg,
				 &hit);
		ASSERT_NE(-EIO, w->r);
		w->fails += w->r != 0;
		ops->check(_metadata, w, arg);
	}
	TH_LOG("%s: %u allocations walked, %ld failed calls", w->what,
	       w->n - 1, w->fails);
	ASSERT_FALSE(hit)
		TH_LOG("%s: still failing at N = %u", w->what, w->n);
	ASSERT_EQ(0, w->r);
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

/* An ATTACH walk between its calls. */
struct att_walk {
	const FIXTURE_VARIANT(attach) *v;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	struct att_call c;
	struct snap before;
	uint64_t want;		/* the address field as the call gets it */
	long enomem, efault;
};

/* A fresh segment and permit, and the variant's ATTACH of it. */
static void *att_prep(struct __test_metadata *_metadata, struct walk *w,
		      unsigned long *cmd)
{
	struct att_walk *aw = w->ctx;
	struct unw *u = w->u;

	ASSERT_EQ(0, seg_permit(u->fd, u->src, &aw->segid, &aw->apid));
	snap_take(&aw->before);
	att_call_init(&aw->c, aw->v, aw->apid, u->dst);
	aw->want = att_vaddr(&aw->c, &aw->c.u);
	*cmd = aw->c.cmd;
	return cow_arg(u->mfd, &u->argpage, &aw->c.u, aw->c.len);
}

static void att_check(struct __test_metadata *_metadata, struct walk *w,
		      void *arg)
{
	struct att_walk *aw = w->ctx;
	struct unw *u = w->u;
	size_t xp, other;
	const char *why;
	char *a;

	if (!w->r) {
		a = (char *)(uintptr_t)att_vaddr(&aw->c, arg);
		if (aw->v->fixed)
			ASSERT_EQ((uintptr_t)u->dst, (uintptr_t)a);
		maps_scan((uintptr_t)a, NPAGES * PAGE, &xp, &other);
		ASSERT_EQ(NPAGES * PAGE, xp);
		ASSERT_EQ(0, check(a, NPAGES * PAGE, SRC_SEED))
			TH_LOG("%s, N = %u: attached, wrong data", w->what,
			       w->n);
		ASSERT_EQ(0, xp_detach(u->fd, a));
		/* MAP_FIXED replaced it: a new one */
		if (aw->v->fixed)
			ASSERT_EQ(NULL, dst_after_failure(u->dst, -ENOMEM));
	} else {
		aw->enomem += w->r == -ENOMEM;
		aw->efault += w->r == -EFAULT;
		ASSERT_TRUE(w->r == -ENOMEM || w->r == -EFAULT)
			TH_LOG("%s, N = %u: errno %ld", w->what, w->n, -w->r);
		ASSERT_EQ(aw->want, att_vaddr(&aw->c, arg))
			TH_LOG("%s, N = %u: errno %ld, yet the address was written",
			       w->what, w->n, -w->r);
		ASSERT_SNAP_BACK(&aw->before, "failed ATTACH", w->n);
		if (aw->v->fixed) {
			why = dst_after_failure(u->dst, w->r);
			ASSERT_EQ(NULL, why)
				TH_LOG("%s, N = %u (errno %ld), under the FIXED address: %s",
				       w->what, w->n, -w->r, why);
			ASSERT_EQ(-EINVAL, xp_detach(u->fd, u->dst));
		}
	}
	ASSERT_EQ(0, xp_release(u->fd, aw->apid));
	ASSERT_EQ(0, xp_remove(u->fd, aw->segid));
}

/*
 * The variant's ATTACH walked (nth_walk()), each time with a fresh
 * segment and permit (the first attachment of a segment registers the
 * owner's notifier).  A success maps the owner's data where the call
 * says; a failure maps nothing, leaves the address field as it was and
 * the counters and objects as before, and a FIXED one leaves the old
 * mapping (dst_after_failure()).
 */
TEST_F_TIMEOUT(attach, fails_whole, 900)
{
	static const struct walk_ops ops = { att_prep, att_check };
	struct att_walk aw = { .v = variant };
	struct walk w = { .u = &self->u, .ctx = &aw };

	if (!nth_ready(&self->u))
		SKIP(return, "no fail-nth or fault injection knobs (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	for (w.mode = 0; w.mode < NR_MODES; w.mode++) {
		aw.enomem = aw.efault = 0;
		snprintf(w.what, sizeof(w.what), "%s", mode_names[w.mode]);
		nth_walk(_metadata, &w, &ops);
		TH_LOG("%s: %ld ENOMEM, %ld EFAULT", w.what, aw.enomem,
		       aw.efault);
		ASSERT_LT(0, w.fails);
	}
	ASSERT_SNAP_BACK(&self->u.base, "after the walk", w.n);
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

/* A DETACH walk between its calls. */
struct det_walk {
	xpmem_apid_t apid;
	int shape;
	char *far;		/* where the moved piece goes */
	char *piece[2];
	size_t plen[2];
	struct xpmem_cmd_detach d;
	struct snap before;	/* without the attachment */
	struct snap attached;	/* with it */
	long partial;		/* failed, with the second piece left */
};

/* An attachment in the walk's shape, and a DETACH of it. */
static void *det_prep(struct __test_metadata *_metadata, struct walk *w,
		      unsigned long *cmd)
{
	struct det_walk *dw = w->ctx;

	ASSERT_EQ(0, att_shape(w->u->fd, dw->apid, dw->shape, dw->far,
			       dw->piece, dw->plen));
	snap_take(&dw->attached);
	dw->d.vaddr = (uintptr_t)dw->piece[0];
	*cmd = XPMEM_CMD_DETACH;
	return &dw->d;
}

static void det_check(struct __test_metadata *_metadata, struct walk *w,
		      void *arg)
{
	struct det_walk *dw = w->ctx;
	struct unw *u = w->u;
	int i;

	(void)arg;
	if (!w->r) {
		ASSERT_SNAP_BACK(&dw->before, "DETACH", w->n);
		for (i = 0; i < 2 && dw->piece[i]; i++)
			ASSERT_EQ(0, piece_mapped(dw->piece, dw->plen, i));
		ASSERT_EQ(-EINVAL, xp_detach(u->fd, dw->piece[0]));
		return;
	}
	ASSERT_EQ(-ENOMEM, w->r)
		TH_LOG("%s, N = %u: errno %ld", w->what, w->n, -w->r);
	if (dw->shape == MOVED_APART && w->mode == FROM_NTH &&
	    !piece_mapped(dw->piece, dw->plen, 0)) {
		/* the first went; the second stays */
		dw->partial++;
		ASSERT_EQ(dw->plen[1], piece_mapped(dw->piece, dw->plen, 1));
		ASSERT_EQ(0, memcmp(dw->piece[1], u->src + dw->plen[0],
				    dw->plen[1]));
		ASSERT_EQ(0, xp_detach(u->fd, dw->piece[1]));
		ASSERT_SNAP_BACK(&dw->before, "DETACH of the rest", w->n);
		return;
	}
	ASSERT_SNAP_BACK(&dw->attached, "failed DETACH", w->n);
	for (i = 0; i < 2 && dw->piece[i]; i++)
		ASSERT_EQ(dw->plen[i], piece_mapped(dw->piece, dw->plen, i))
			TH_LOG("%s, N = %u: piece %d not whole after a failed DETACH",
			       w->what, w->n, i);
	ASSERT_EQ(0, check(dw->piece[0], dw->plen[0], SRC_SEED));
	if (dw->piece[1])
		ASSERT_EQ(0, memcmp(dw->piece[1], u->src + dw->plen[0],
				    dw->plen[1]));
	/* whole: a DETACH takes it all */
	ASSERT_EQ(0, xp_detach(u->fd, dw->piece[0]));
	ASSERT_SNAP_BACK(&dw->before, "DETACH after a failed one", w->n);
}

/*
 * DETACH walked (nth_walk()) for attachments of three shapes: one VMA,
 * three adjacent VMAs of an mprotect split, two pieces apart after
 * mremap.  A success unmaps every piece (and a second DETACH is EINVAL);
 * a failure is ENOMEM and leaves every piece mapped with the owner's
 * data, and the counters and objects as they were.  Pieces apart are
 * unmapped one after the other: if the second cannot be even after
 * retries (FROM_NTH), the DETACH fails with the second still whole.
 */
TEST_F_TIMEOUT(unwind, detach_fails_whole, 900)
{
	static const struct walk_ops ops = { det_prep, det_check };
	struct unw *u = &self->u;
	struct det_walk dw = { 0 };
	struct walk w = { .u = u, .ctx = &dw };
	xpmem_segid_t segid;

	if (!nth_ready(u))
		SKIP(return, "no fail-nth or fault injection knobs (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	ASSERT_EQ(0, seg_permit(u->fd, u->src, &segid, &dw.apid));
	snap_take(&dw.before);
	/* where the moved piece goes: a page of its own, far from the rest */
	dw.far = mmap(NULL, 64 * PAGE, PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, dw.far);
	dw.far += 32 * PAGE;
	for (w.mode = 0; w.mode < NR_MODES; w.mode++) {
		for (dw.shape = 0; dw.shape < NR_SHAPES; dw.shape++) {
			dw.partial = 0;
			snprintf(w.what, sizeof(w.what), "%s, %s",
				 mode_names[w.mode], shape_names[dw.shape]);
			nth_walk(_metadata, &w, &ops);
			TH_LOG("%s: %ld failed with the second piece left",
			       w.what, dw.partial);
		}
	}
	ASSERT_EQ(0, xp_release(u->fd, dw.apid));
	ASSERT_EQ(0, xp_remove(u->fd, segid));
	ASSERT_SNAP_BACK(&u->base, "after the walk", w.n);
}

/* ---- MAKE and GET ------------------------------------------------------- */

static const char seg_key[] = "xpmem_unwind";

/* A MAKE or GET walk between its calls. */
struct id_walk {
	int ext;		/* EXT_MAKE or EXT_GET (by key) */
	struct xpmem_ext_make emk;	/* MAKE: the last EXT_MAKE; GET: the segment */
	struct snap before;
};

/* MAKE, or EXT_MAKE with the key, of the owner's buffer. */
static void *make_prep(struct __test_metadata *_metadata, struct walk *w,
		       unsigned long *cmd)
{
	struct id_walk *iw = w->ctx;
	struct xpmem_cmd_make mk = {
		.vaddr = (uintptr_t)w->u->src, .size = NPAGES * PAGE,
		.permit_type = XPMEM_PERMIT_MODE, .permit_value = 0600,
	};

	(void)_metadata;
	memset(&iw->emk, 0, sizeof(iw->emk));
	iw->emk.vaddr = (uintptr_t)w->u->src;
	iw->emk.size = NPAGES * PAGE;
	iw->emk.flags = XPMEM_EXT_MAKE_KEY;
	iw->emk.mode = 0600;
	iw->emk.key_len = sizeof(seg_key) - 1;
	memcpy(iw->emk.key, seg_key, iw->emk.key_len);
	*cmd = iw->ext ? XPMEM_CMD_EXT_MAKE : XPMEM_CMD_MAKE;
	return iw->ext ? cow_arg(w->u->mfd, &w->u->argpage, &iw->emk,
				 sizeof(iw->emk)) :
			 cow_arg(w->u->mfd, &w->u->argpage, &mk, sizeof(mk));
}

static void make_check(struct __test_metadata *_metadata, struct walk *w,
		       void *arg)
{
	struct id_walk *iw = w->ctx;
	struct unw *u = w->u;
	xpmem_segid_t segid = iw->ext ?
			      ((struct xpmem_ext_make *)arg)->segid :
			      ((struct xpmem_cmd_make *)arg)->segid;

	if (!w->r) {
		ASSERT_EQ(0, xp_remove(u->fd, segid));
		ASSERT_SNAP_BACK(&iw->before, "MAKE + REMOVE", w->n);
		return;
	}
	ASSERT_TRUE(w->r == -ENOMEM || w->r == -EFAULT)
		TH_LOG("%s, N = %u: errno %ld", w->what, w->n, -w->r);
	ASSERT_EQ(0, segid);
	ASSERT_SNAP_BACK(&iw->before, "failed MAKE", w->n);
	if (iw->ext) {
		/* the key is free again */
		iw->emk.segid = 0;
		ASSERT_EQ(0, xp_ioctl(u->fd, XPMEM_CMD_EXT_MAKE, &iw->emk));
		ASSERT_EQ(0, xp_remove(u->fd, iw->emk.segid));
	}
}

/*
 * MAKE and EXT_MAKE with a key, walked (nth_walk()).  A failure leaves no
 * segment (counters, objects), the segid field as it was, and the key
 * free for the next EXT_MAKE.
 */
TEST_F_TIMEOUT(unwind, make_fails_whole, 900)
{
	static const struct walk_ops ops = { make_prep, make_check };
	struct id_walk iw = { 0 };
	struct walk w = { .u = &self->u, .ctx = &iw };

	if (!nth_ready(&self->u))
		SKIP(return, "no fail-nth or fault injection knobs (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	snap_take(&iw.before);
	for (w.mode = 0; w.mode < NR_MODES; w.mode++) {
		for (iw.ext = 0; iw.ext < 2; iw.ext++) {
			snprintf(w.what, sizeof(w.what), "%s, %s",
				 mode_names[w.mode],
				 iw.ext ? "EXT_MAKE" : "MAKE");
			nth_walk(_metadata, &w, &ops);
		}
	}
	ASSERT_SNAP_BACK(&self->u.base, "after the walk", w.n);
}

/* GET of the walk's segment, or EXT_GET by its key. */
static void *get_prep(struct __test_metadata *_metadata, struct walk *w,
		      unsigned long *cmd)
{
	struct id_walk *iw = w->ctx;
	struct xpmem_cmd_get g = {
		.segid = iw->emk.segid, .flags = XPMEM_RDWR,
		.permit_type = XPMEM_PERMIT_MODE,
	};
	struct xpmem_ext_get eg = {
		.flags = XPMEM_RDWR | XPMEM_EXT_GET_BY_KEY,
		.key_len = iw->emk.key_len,
	};

	(void)_metadata;
	memcpy(eg.key, seg_key, eg.key_len);
	*cmd = iw->ext ? XPMEM_CMD_EXT_GET : XPMEM_CMD_GET;
	return iw->ext ? cow_arg(w->u->mfd, &w->u->argpage, &eg, sizeof(eg)) :
			 cow_arg(w->u->mfd, &w->u->argpage, &g, sizeof(g));
}

static void get_check(struct __test_metadata *_metadata, struct walk *w,
		      void *arg)
{
	struct id_walk *iw = w->ctx;
	xpmem_apid_t apid = iw->ext ? ((struct xpmem_ext_get *)arg)->apid :
				      ((struct xpmem_cmd_get *)arg)->apid;

	if (!w->r) {
		ASSERT_EQ(0, xp_release(w->u->fd, apid));
		ASSERT_SNAP_BACK(&iw->before, "GET + RELEASE", w->n);
		return;
	}
	ASSERT_TRUE(w->r == -ENOMEM || w->r == -EFAULT)
		TH_LOG("%s, N = %u: errno %ld", w->what, w->n, -w->r);
	ASSERT_EQ(0, apid);
	ASSERT_SNAP_BACK(&iw->before, "failed GET", w->n);
}

/*
 * GET and EXT_GET by key, walked (nth_walk()).  A failure leaves no
 * permit (counters, objects) and the apid field as it was.
 */
TEST_F_TIMEOUT(unwind, get_fails_whole, 900)
{
	static const struct walk_ops ops = { get_prep, get_check };
	struct unw *u = &self->u;
	struct id_walk iw = {
		.emk = {
			.vaddr = (uintptr_t)u->src, .size = NPAGES * PAGE,
			.flags = XPMEM_EXT_MAKE_KEY, .mode = 0600,
			.key_len = sizeof(seg_key) - 1,
		},
	};
	struct walk w = { .u = u, .ctx = &iw };

	if (!nth_ready(u))
		SKIP(return, "no fail-nth or fault injection knobs (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	memcpy(iw.emk.key, seg_key, iw.emk.key_len);
	ASSERT_EQ(0, xp_ioctl(u->fd, XPMEM_CMD_EXT_MAKE, &iw.emk));
	snap_take(&iw.before);
	for (w.mode = 0; w.mode < NR_MODES; w.mode++) {
		for (iw.ext = 0; iw.ext < 2; iw.ext++) {
			snprintf(w.what, sizeof(w.what), "%s, %s",
				 mode_names[w.mode],
				 iw.ext ? "EXT_GET" : "GET");
			nth_walk(_metadata, &w, &ops);
		}
	}
	ASSERT_EQ(0, xp_remove(u->fd, iw.emk.segid));
	ASSERT_SNAP_BACK(&u->base, "after the walk", w.n);
}

TEST_HARNESS_MAIN
