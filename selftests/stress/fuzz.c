// SPDX-License-Identifier: GPL-2.0
/*
 * stress/fuzz.c - the worker of xpmem_stress's fuzz test (see fuzz.h):
 * random classic and extended ioctls, io_uring commands, faults and memory
 * operations on its arena, checked against a model of what each page of
 * the arena is and what each call may return.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/auxv.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing.h>

#include "../xpmem_test.h"
#include "fuzz.h"
#include "stress.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif
#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

#define FZ_PERMS	24
#define FZ_ATTS		64
#define FZ_SEGS		16
#define FZ_SECRET_PAGES	16
#define FZ_TOP		xt_user_top()	/* end of the user address space */
#define KADDR		0xffff888000000000ULL	/* the direct map */

const char *const fz_names[FZ_NOPS] = {
	"make", "make-bad", "remove", "get", "release", "attach", "detach",
	"junk-ioctl", "touch", "mmap", "munmap", "mremap", "mprotect",
	"madvise", "gup", "fork", "reopen", "proc-read", "copy", "self-place",
};

/*
 * Per mille.  fork is drawn separately, at 0.5 per mille: it costs ~0.5 s
 * on the debug kernel under TCG; mmap and touch (faults) come next.
 */
static const unsigned short fz_weight[FZ_NOPS] = {
	70, 60, 55, 110, 45, 100, 68, 60, 127, 40, 35, 25, 40, 60, 40, 0, 2, 20,
	40, 3,
};

enum { PK_RESV, PK_PRIV, PK_SHARED, PK_MEMFD, PK_SECRET, PK_ATT };

struct fz_perm {
	int used;
	int64_t apid, segid;
	uint64_t svaddr, slen;		/* the segment, as its owner made it */
	int32_t spid;			/* owner, 0 if unknown */
	int rdwr;
};

struct fz_att {
	int used;
	int perm;
	int writable, safe;		/* safe: owner range inside the arena */
	long pages;			/* arena pages mapping it */
	uint64_t oaddr, olen;		/* mapped outside the arena */
};

struct fz_seg {
	int used;
	int64_t segid;
	uint64_t vaddr, size;
	int slot;
};

struct fz {
	struct rng r;
	struct fz_shared *sh;
	int id, fd, uid, gid;
	pid_t pid;
	uint8_t *arena;
	uint8_t kind[FZ_PAGES], prot[FZ_PAGES], inh[FZ_PAGES];
	int8_t att[FZ_PAGES];
	uint32_t hist[FZ_PAGES][4];	/* last changes: op # << 8 | what */
	struct fz_perm perm[FZ_PERMS];
	struct fz_att atts[FZ_ATTS];
	struct fz_seg seg[FZ_SEGS];
	int64_t dead[16];
	int ndead;
	uint8_t *scr;			/* [0] rw, [1] PROT_NONE, [2] ro */
	uint8_t *buf;			/* 4 pages for gup ops */
	int memfd, secretfd, tmpfd, pfd[2];
	int op;
	long opi;
	long ops[FZ_NOPS], ok[FZ_NOPS], ns[FZ_NOPS];
	long touches, sigbus, sigsegv, refused, selfmaps, forks;
	long ext_attaches, ext_makes, ext_gets, ext_copies, uring_cmds;
	struct io_uring ring;
	int have_ring, have_fixed;
};

static struct fz F;

static void sh_lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void sh_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static void __attribute__((noreturn, format(printf, 2, 3)))
fz_fail(struct fz *f, const char *fmt, ...)
{
	struct fz_shared *sh = f->sh;
	va_list ap;
	int n;

	sh_lock(&sh->lock);
	if (!sh->failed) {
		sh->failed = 1;
		n = snprintf(sh->fail, sizeof(sh->fail),
			     "worker %d (pid %d, uid %d) op #%ld (%s): ", f->id,
			     f->pid, f->uid, f->opi, fz_names[f->op]);
		va_start(ap, fmt);
		vsnprintf(sh->fail + n, sizeof(sh->fail) - n, fmt, ap);
		va_end(ap);
	}
	sh_unlock(&sh->lock);
	_exit(10);
}

/* A failing call must fail cleanly; a call that must fail must not pass. */
static void fz_check(struct fz *f, long r, int must_fail, const char *what)
{
	if (r < 0 && !clean_errno(r))
		fz_fail(f, "%s: unexpected errno %ld (%s)", what, -r,
			strerror(-r));
	if (r >= 0 && must_fail)
		fz_fail(f, "%s: accepted, must fail", what);
	if (r < 0 && must_fail)
		f->refused++;
	if (r >= 0)
		f->ok[f->op]++;
}

static uint8_t *pg_addr(struct fz *f, unsigned long p)
{
	return f->arena + p * PAGE;
}

static int in_arena(struct fz *f, uint64_t a, uint64_t len)
{
	uint64_t lo = (uintptr_t)f->arena;

	return a >= lo && len <= FZ_ARENA && a - lo <= FZ_ARENA - len;
}

/* History of a page's model, for failure messages. */
static void fz_hist(struct fz *f, unsigned long p, char what)
{
	memmove(&f->hist[p][1], &f->hist[p][0], 3 * sizeof(f->hist[p][0]));
	f->hist[p][0] = (uint32_t)f->opi << 8 | (uint8_t)what;
}

static const char *fz_hist_str(struct fz *f, unsigned long p)
{
	static char buf[96];
	int i, n = 0;

	buf[0] = 0;
	for (i = 0; i < 4 && f->hist[p][i]; i++)
		n += snprintf(buf + n, sizeof(buf) - n, " %c@%u",
			      (char)(f->hist[p][i] & 0xff), f->hist[p][i] >> 8);
	return buf;
}

/* Set the model of arena pages [p, p + n). */
static void fz_set(struct fz *f, unsigned long p, unsigned long n, int kind,
		   int prot, int att)
{
	unsigned long i;

	for (i = p; i < p + n; i++) {
		if (f->kind[i] == PK_ATT)
			f->atts[f->att[i]].pages--;
		f->kind[i] = kind;
		f->prot[i] = prot;
		f->att[i] = kind == PK_ATT ? att : -1;
		/* attachments are VM_DONTCOPY; everything else is inherited */
		f->inh[i] = kind != PK_ATT;
		fz_hist(f, i, 'a' + kind);
		if (kind == PK_ATT)
			f->atts[att].pages++;
	}
}

/* munmap arena pages [p, p + n) and put the PROT_NONE reservation back. */
static void fz_reset(struct fz *f, unsigned long p, unsigned long n)
{
	uint8_t *a = pg_addr(f, p);

	if (!n)
		return;
	if (munmap(a, n * PAGE) ||
	    mmap(a, n * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE | MAP_FIXED, -1, 0) != a)
		fz_fail(f, "cannot reset arena pages %lu+%lu: %s", p, n,
			strerror(errno));
	fz_set(f, p, n, PK_RESV, PROT_NONE, -1);
}

/* Forget attachment @ai after the kernel unmapped it (or unmap it). */
static void fz_att_gone(struct fz *f, int ai, int do_unmap)
{
	struct fz_att *a = &f->atts[ai];
	unsigned long p, q;

	for (p = 0; p < FZ_PAGES && a->pages; p = q) {
		if (f->kind[p] != PK_ATT || f->att[p] != ai) {
			q = p + 1;
			continue;
		}
		for (q = p; q < FZ_PAGES && f->kind[q] == PK_ATT &&
		     f->att[q] == ai; q++)
			;
		fz_reset(f, p, q - p);
	}
	if (a->olen && do_unmap)
		munmap((void *)(uintptr_t)a->oaddr, a->olen * PAGE);
	memset(a, 0, sizeof(*a));
}

static int fz_att_alloc(struct fz *f)
{
	int i;

	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used && !f->atts[i].pages && !f->atts[i].olen)
			memset(&f->atts[i], 0, sizeof(f->atts[i]));
	for (i = 0; i < FZ_ATTS; i++)
		if (!f->atts[i].used)
			return i;
	return -1;
}

/* A random range: mostly small, sometimes large. */
static void fz_range(struct fz *f, unsigned long *p, unsigned long *n)
{
	unsigned long len = chance(&f->r, 40) ? 1 : chance(&f->r, 80) ?
			    1 + rnd(&f->r, 16) : 1 + rnd(&f->r, 512);

	*p = rnd(&f->r, FZ_PAGES);
	if (*p + len > FZ_PAGES)
		len = FZ_PAGES - *p;
	*n = len;
}

/* A random page whose model satisfies @kind (-1: anything but RESV). */
static long fz_find(struct fz *f, int kind, int ai)
{
	unsigned long start = rnd(&f->r, FZ_PAGES), i, p;

	for (i = 0; i < FZ_PAGES; i++) {
		p = (start + i) % FZ_PAGES;
		if (kind < 0 ? f->kind[p] != PK_RESV :
		    f->kind[p] == kind && (ai < 0 || f->att[p] == ai))
			return p;
	}
	return -1;
}

static int fz_write_ok(struct fz *f, unsigned long p)
{
	if (!(f->prot[p] & PROT_WRITE))
		return 0;
	if (f->kind[p] == PK_ATT)
		return f->atts[f->att[p]].writable && f->atts[f->att[p]].safe;
	return f->kind[p] != PK_RESV;
}

/* ---- argument pointers ---- */

enum { ARG_OK, ARG_NULL, ARG_KERNEL, ARG_NONE, ARG_STRADDLE, ARG_RO, ARG_N };

static int fz_argmode(struct fz *f)
{
	return chance(&f->r, 5) ? 1 + (int)rnd(&f->r, ARG_N - 1) : ARG_OK;
}

static void *fz_arg(struct fz *f, int mode, const void *cmd, size_t len)
{
	switch (mode) {
	case ARG_NULL:
		return (void *)(uintptr_t)(rnd(&f->r, 2) * 16);
	case ARG_KERNEL:
		return (void *)(uintptr_t)(KADDR + rnd(&f->r, 1024) * PAGE);
	case ARG_NONE:
		return f->scr + PAGE;
	case ARG_STRADDLE:
		memcpy(f->scr + PAGE - len / 2, cmd, len / 2);
		return f->scr + PAGE - len / 2;
	case ARG_RO:
		mprotect(f->scr + 2 * PAGE, PAGE, PROT_READ | PROT_WRITE);
		memcpy(f->scr + 2 * PAGE, cmd, len);
		mprotect(f->scr + 2 * PAGE, PAGE, PROT_READ);
		return f->scr + 2 * PAGE;
	}
	return (void *)cmd;
}

/* ---- the shared table ---- */

static void fz_publish_seg(struct fz *f, struct fz_seg *s, uint64_t mode)
{
	struct fz_segslot *e;

	s->slot = rnd(&f->r, FZ_SLOTS);
	sh_lock(&f->sh->lock);
	e = &f->sh->segs[s->slot];
	e->segid = s->segid;
	e->vaddr = s->vaddr;
	e->size = s->size;
	e->pid = f->pid;
	e->uid = f->uid;
	e->gid = f->gid;
	e->mode = mode;
	e->removed = 0;
	sh_unlock(&f->sh->lock);
}

/* After REMOVE (or close) returned: nobody may GET it any more. */
static void fz_seg_removed(struct fz *f, int si)
{
	struct fz_seg *s = &f->seg[si];

	sh_lock(&f->sh->lock);
	if (f->sh->segs[s->slot].segid == s->segid)
		f->sh->segs[s->slot].removed = 1;
	sh_unlock(&f->sh->lock);
	memset(s, 0, sizeof(*s));
}

static void fz_perm_released(struct fz *f, int pi)
{
	struct fz_perm *pm = &f->perm[pi];
	int i;

	sh_lock(&f->sh->lock);
	for (i = 0; i < FZ_SLOTS; i++)
		if (f->sh->apids[i].apid == pm->apid)
			f->sh->apids[i].released = 1;
	sh_unlock(&f->sh->lock);
	f->dead[f->ndead++ % 16] = pm->apid;
	/* RELEASE munmapped every attachment made through the permit */
	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used && f->atts[i].perm == pi)
			fz_att_gone(f, i, 0);
	memset(pm, 0, sizeof(*pm));
}

static int fz_own_seg(struct fz *f, int64_t segid)
{
	int i;

	for (i = 0; i < FZ_SEGS; i++)
		if (f->seg[i].used && f->seg[i].segid == segid)
			return i;
	return -1;
}

static int fz_own_perm(struct fz *f, int64_t apid)
{
	int i;

	for (i = 0; i < FZ_PERMS; i++)
		if (f->perm[i].used && f->perm[i].apid == apid)
			return i;
	return -1;
}

static int fz_pick_used(struct fz *f, int n, size_t stride, const void *base)
{
	int start = rnd(&f->r, n), i;

	for (i = 0; i < n; i++) {
		const int *used = (const void *)((const char *)base +
					((start + i) % n) * stride);
		if (*used)
			return (start + i) % n;
	}
	return -1;
}

#define FZ_PICK(f, arr) \
	fz_pick_used(f, sizeof(arr) / sizeof(arr[0]), sizeof(arr[0]), arr)

static int64_t fz_guess(struct fz *f)
{
	int64_t known = f->sh->segs[rnd(&f->r, FZ_SLOTS)].segid;

	switch (rnd(&f->r, 4)) {
	case 0:
		return (int64_t)(rnd64(&f->r) >> 1);
	case 1:
		return known + 1;
	case 2:
		return known ^ (1LL << rnd(&f->r, 62));
	}
	return 1 + (int64_t)rnd(&f->r, 1 << 20);
}

static int fz_id_known(struct fz *f, int64_t id)
{
	int i;

	for (i = 0; i < FZ_SLOTS; i++)
		if (f->sh->segs[i].segid == id || f->sh->apids[i].apid == id)
			return 1;
	return 0;
}

/* ---- ioctl operations ---- */

static void op_remove_own(struct fz *f, int si)
{
	long r = xp_remove(f->fd, f->seg[si].segid);

	if (r)
		fz_fail(f, "REMOVE of own live segment: %s", strerror(-r));
	fz_seg_removed(f, si);
}

/*
 * EXT_MAKE/EXT_GET options drawn from small sets, so that keys collide
 * and authorization keys are sometimes right: key "fzk0".."fzk7", secret
 * "fzs0" or "fzs1".
 */
static void fz_key(struct fz *f, uint8_t *key, uint32_t *len)
{
	*len = (uint32_t)snprintf((char *)key, XPMEM_EXT_KEY_MAX, "fzk%u",
				  (unsigned int)rnd(&f->r, 8));
}

static void fz_auth(struct fz *f, uint8_t *auth, uint32_t *len)
{
	*len = (uint32_t)snprintf((char *)auth, XPMEM_EXT_AUTH_MAX, "fzs%u",
				  (unsigned int)rnd(&f->r, 2));
}

/* MAKE through EXT_MAKE with random options; @bad: a malformed one. */
static long fz_ext_make(struct fz *f, struct xpmem_cmd_make *c, int bad,
			int am)
{
	struct xpmem_ext_make x = {
		.vaddr = c->vaddr, .size = c->size,
		.mode = (uint32_t)c->permit_value,
	};
	struct xpmem_ext_iov iov[4];
	long r;

	/*
	 * Half of them vectored: the same range cut into 2-4 buffers, in
	 * order (the module merges them back into one range) or, when the
	 * whole range is arena memory, in reverse order: then every byte of
	 * the segment is still one of the range's arena pages, which is all
	 * the model's safety rules ask (writable attachments and copies
	 * reach only the arena), while faults, copies and invalidations
	 * cross from buffer to buffer.  A malformed make is one buffer,
	 * which must fail as well.
	 */
	if (chance(&f->r, 50) &&
	    (bad || (c->size != XPMEM_MAXADDR_SIZE && c->size >= 2 * PAGE))) {
		uint64_t left = bad ? 1 : c->size / PAGE, at = c->vaddr;
		unsigned int k = bad ? 1 : 2 + rnd(&f->r, 3), i;

		for (i = 0; i < k && left; i++) {
			uint64_t n = i == k - 1 ? left :
				     1 + rnd(&f->r, left - (left > 1));

			iov[i].base = at;
			iov[i].len = bad ? c->size : n * PAGE;
			at += n * PAGE;
			left -= n;
		}
		if (!bad && in_arena(f, c->vaddr, c->size) &&
		    chance(&f->r, 50)) {
			for (unsigned int j = 0; j < i / 2; j++) {
				struct xpmem_ext_iov t = iov[j];

				iov[j] = iov[i - 1 - j];
				iov[i - 1 - j] = t;
			}
		}
		x.vaddr = (uintptr_t)iov;
		x.size = i;
		x.flags |= XPMEM_EXT_MAKE_IOV;
	}

	if (chance(&f->r, 50)) {
		x.flags |= XPMEM_EXT_MAKE_KEY;
		fz_key(f, x.key, &x.key_len);
	}
	if (chance(&f->r, 25)) {
		x.flags |= XPMEM_EXT_MAKE_AUTH;
		fz_auth(f, x.auth, &x.auth_len);
	}
	if (chance(&f->r, 20))
		x.flags |= XPMEM_EXT_MAKE_RDONLY;
	/* what has no EXT_MAKE counterpart becomes an unknown flag */
	if (bad && (c->permit_type != XPMEM_PERMIT_MODE ||
		    c->permit_value > 0777))
		x.flags |= (XPMEM_EXT_MAKE_FLAGS + 1) << rnd(&f->r, 27);
	if (chance(&f->r, 3))
		x.key_len = XPMEM_EXT_KEY_MAX + 1;	/* and so must fail */
	r = xp_ioctl_ret(f->fd, XPMEM_CMD_EXT_MAKE, fz_arg(f, am, &x, sizeof(x)));
	c->segid = x.segid;
	f->ext_makes++;
	return r;
}

static void op_make(struct fz *f, int bad)
{
	static const int modes[] = { 0600, 0666, 0640, 0604, 0644, 0400, 0, 0660 };
	struct xpmem_cmd_make c = { .permit_type = XPMEM_PERMIT_MODE };
	uint8_t frame;
	unsigned long p, n;
	int must_fail = bad, am, si;
	long r;

	for (si = 0; si < FZ_SEGS && f->seg[si].used; si++)
		;
	if (si == FZ_SEGS) {
		si = rnd(&f->r, FZ_SEGS);
		op_remove_own(f, si);
	}
	c.permit_value = modes[rnd(&f->r, 8)];
	fz_range(f, &p, &n);
	c.vaddr = (uintptr_t)pg_addr(f, p);
	c.size = n * PAGE;
	switch (rnd(&f->r, 10)) {
	case 0:
		c.vaddr = 0;
		c.size = XPMEM_MAXADDR_SIZE;
		break;
	case 1:
		c.size = XPMEM_MAXADDR_SIZE;
		break;
	case 2:		/* our stack, holes included */
		c.vaddr = (((uintptr_t)&frame) & ~(PAGE - 1)) - 16 * PAGE;
		c.size = 32 * PAGE;
		break;
	case 3:		/* our text */
		c.vaddr = ((uintptr_t)&op_make) & ~(PAGE - 1);
		c.size = 16 * PAGE;
		break;
	}
	if (bad) {
		switch (rnd(&f->r, 9)) {
		case 0:
			c.vaddr |= 1 + rnd(&f->r, PAGE - 1);
			break;
		case 1:
			c.size = 0;
			break;
		case 2:
			c.size = (c.size == XPMEM_MAXADDR_SIZE ? PAGE : c.size) +
				 1 + rnd(&f->r, PAGE - 2);
			break;
		case 3:
			do {
				c.permit_type = (int)rnd64(&f->r);
			} while (c.permit_type == XPMEM_PERMIT_MODE);
			break;
		case 4:
			c.permit_value |= 01000ULL << rnd(&f->r, 50);
			break;
		case 5:
			c.vaddr = KADDR + rnd(&f->r, 4096) * PAGE;
			c.size = PAGE;
			break;
		case 6:		/* vaddr + size wraps */
			c.vaddr = (uintptr_t)pg_addr(f, p);
			c.size = -c.vaddr + PAGE * (1 + rnd(&f->r, 16));
			break;
		case 7:
			c.size = 1ULL << 60;
			break;
		default:
			c.vaddr = -PAGE;
			c.size = PAGE;
			break;
		}
	}
	am = fz_argmode(f);
	if (am != ARG_OK)
		must_fail = 1;	/* the segid cannot be written back */
	if (chance(&f->r, 25)) {
		r = fz_ext_make(f, &c, bad, am);
		if (c.segid && r)
			fz_fail(f, "EXT_MAKE failed but wrote a segid");
	} else {
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_MAKE,
			     fz_arg(f, am, &c, sizeof(c)));
	}
	fz_check(f, r, must_fail, bad ? "MAKE (invalid)" : "MAKE");
	if (r)
		return;
	if (c.segid <= 0)
		fz_fail(f, "MAKE returned segid %" PRId64, (int64_t)c.segid);
	f->seg[si].used = 1;
	f->seg[si].segid = c.segid;
	f->seg[si].vaddr = c.vaddr;
	f->seg[si].size = c.size;
	fz_publish_seg(f, &f->seg[si], c.permit_value);
}

/*
 * REMOVE or RELEASE of @id (each command is one id, the same layout) with
 * a random argument mode, checked against this worker's own table: @own
 * finds the id among ours (index or -1), @gone records that it ended.
 * Only our own live object may end, and with a good argument it must.
 */
static void fz_end_id(struct fz *f, unsigned long cmd, const char *what,
		      int64_t id, int must_fail,
		      int (*own)(struct fz *, int64_t),
		      void (*gone)(struct fz *, int))
{
	int64_t c = id;
	int am = fz_argmode(f), i;
	long r;

	_Static_assert(sizeof(struct xpmem_cmd_remove) == sizeof(c) &&
		       sizeof(struct xpmem_cmd_release) == sizeof(c),
		       "REMOVE and RELEASE take one 64-bit id");
	if (am != ARG_OK && am != ARG_RO)
		must_fail = 1;
	r = xp_ioctl_ret(f->fd, cmd, fz_arg(f, am, &c, sizeof(c)));
	fz_check(f, r, must_fail, what);
	i = own(f, id);
	if (!r && i < 0)
		fz_fail(f, "%s of id %" PRId64 " (not ours) succeeded", what,
			id);
	if (!r)
		gone(f, i);
	else if (i >= 0 && am == ARG_OK)
		fz_fail(f, "%s of our own live object: %s", what, strerror(-r));
}

static void op_remove(struct fz *f)
{
	struct xpmem_cmd_remove c = { 0 };
	struct fz_segslot e = { 0 };
	int must_fail = 0, si;

	switch (rnd(&f->r, 10)) {
	case 0: case 1: case 2: case 3: case 4:
		si = FZ_PICK(f, f->seg);
		if (si < 0)
			return;
		c.segid = f->seg[si].segid;
		break;
	case 5: case 6: case 7:
		sh_lock(&f->sh->lock);
		e = f->sh->segs[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.segid = e.segid;
		must_fail = e.removed || e.pid != f->pid;
		break;
	case 8:
		c.segid = fz_guess(f);
		must_fail = !fz_id_known(f, c.segid);
		break;
	default:
		c.segid = -(int64_t)rnd(&f->r, 3);
		must_fail = 1;
		break;
	}
	fz_end_id(f, XPMEM_CMD_REMOVE, "REMOVE", c.segid, must_fail,
		  fz_own_seg, fz_seg_removed);
}

/* Would SysV-style permission checks refuse @flags on segment @e? */
static int fz_denied(struct fz *f, const struct fz_segslot *e, int flags)
{
	int granted, need = 4 | (flags == XPMEM_RDWR ? 2 : 0);

	if (!f->uid)
		return 0;	/* CAP_IPC_OWNER */
	if (e->uid == f->uid)
		granted = e->mode >> 6;
	else if (e->gid == f->gid)
		granted = e->mode >> 3;
	else
		granted = e->mode;
	return (need & ~granted & 7) != 0;
}

static void op_release_perm(struct fz *f, int pi)
{
	long r = xp_release(f->fd, f->perm[pi].apid);

	if (r)
		fz_fail(f, "RELEASE of own permit: %s", strerror(-r));
	fz_perm_released(f, pi);
}

static void op_get(struct fz *f)
{
	struct xpmem_cmd_get c = { .permit_type = XPMEM_PERMIT_MODE };
	struct fz_segslot e = { 0 };
	int must_fail = 0, known = 0, am, pi, si;
	unsigned long v = rnd(&f->r, 20);
	long r;

	for (pi = 0; pi < FZ_PERMS && f->perm[pi].used; pi++)
		;
	if (pi == FZ_PERMS) {
		pi = rnd(&f->r, FZ_PERMS);
		op_release_perm(f, pi);
	}
	c.flags = chance(&f->r, 50) ? XPMEM_RDONLY : XPMEM_RDWR;
	if (v < 10) {
		sh_lock(&f->sh->lock);
		e = f->sh->segs[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.segid = e.segid;
		known = e.segid > 0;
		must_fail = !known || e.removed || fz_denied(f, &e, c.flags);
	} else if (v < 14 && (si = FZ_PICK(f, f->seg)) >= 0) {
		c.segid = f->seg[si].segid;
		e.segid = c.segid;
		e.vaddr = f->seg[si].vaddr;
		e.size = f->seg[si].size;
		e.pid = f->pid;
		known = 1;
	} else if (v < 16) {
		c.segid = fz_guess(f);
		must_fail = !fz_id_known(f, c.segid);
	} else if (v < 17) {
		c.segid = -(int64_t)rnd(&f->r, 3);
		must_fail = 1;
	} else {
		sh_lock(&f->sh->lock);
		e = f->sh->segs[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.segid = e.segid;
		must_fail = 1;
		if (chance(&f->r, 50)) {
			do {
				c.flags = (int)rnd64(&f->r);
			} while (c.flags == XPMEM_RDONLY || c.flags == XPMEM_RDWR);
		} else {
			do {
				c.permit_type = (int)rnd64(&f->r);
			} while (c.permit_type == XPMEM_PERMIT_MODE);
		}
	}
	am = fz_argmode(f);
	if (am != ARG_OK)
		must_fail = 1;
	if (chance(&f->r, 25)) {
		/* EXT_GET: by segid or by key, with or without a secret */
		struct xpmem_ext_get x = {
			.segid = c.segid,
			.flags = (uint32_t)c.flags,
		};

		if (c.permit_type != XPMEM_PERMIT_MODE ||
		    (c.flags != XPMEM_RDONLY && c.flags != XPMEM_RDWR))
			x.flags |= 0x400U << rnd(&f->r, 20);
		/* a key may name any segment: not where failure is due */
		if (!must_fail && chance(&f->r, 40)) {
			x.segid = 0;
			x.flags |= XPMEM_EXT_GET_BY_KEY;
			fz_key(f, x.key, &x.key_len);
			known = 0;	/* some segment, maybe not this one */
		}
		if (chance(&f->r, 30)) {
			x.flags |= XPMEM_EXT_GET_AUTH;
			fz_auth(f, x.auth, &x.auth_len);
		}
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_EXT_GET,
			     fz_arg(f, am, &x, sizeof(x)));
		c.apid = x.apid;
		c.segid = x.segid;
		f->ext_gets++;
	} else {
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_GET,
			     fz_arg(f, am, &c, sizeof(c)));
	}
	fz_check(f, r, must_fail, "GET");
	if (r)
		return;
	if (c.apid <= 0)
		fz_fail(f, "GET returned apid %" PRId64, (int64_t)c.apid);
	f->perm[pi].used = 1;
	f->perm[pi].apid = c.apid;
	f->perm[pi].segid = c.segid;
	f->perm[pi].rdwr = c.flags == XPMEM_RDWR;
	if (known) {
		f->perm[pi].svaddr = e.vaddr;
		f->perm[pi].slen = e.size == XPMEM_MAXADDR_SIZE ?
				   FZ_TOP - e.vaddr : e.size;
		f->perm[pi].spid = e.pid;
	}
	sh_lock(&f->sh->lock);
	f->sh->apids[rnd(&f->r, FZ_SLOTS)] =
		(struct fz_apidslot){ .apid = c.apid, .pid = f->pid };
	sh_unlock(&f->sh->lock);
}

static void op_release(struct fz *f)
{
	struct xpmem_cmd_release c = { 0 };
	struct fz_apidslot e;
	int must_fail = 1, pi;
	unsigned long v = rnd(&f->r, 20);

	if (v < 11) {
		pi = FZ_PICK(f, f->perm);
		if (pi < 0)
			return;
		c.apid = f->perm[pi].apid;
		must_fail = 0;
	} else if (v < 15) {
		sh_lock(&f->sh->lock);
		e = f->sh->apids[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.apid = e.apid;
		must_fail = e.pid != f->pid || e.released ||
			    fz_own_perm(f, e.apid) < 0;
	} else if (v < 17 && f->ndead) {
		c.apid = f->dead[rnd(&f->r, f->ndead < 16 ? f->ndead : 16)];
	} else if (v < 19) {
		c.apid = fz_guess(f);
		must_fail = !fz_id_known(f, c.apid);
	} else {
		c.apid = -(int64_t)rnd(&f->r, 3);
	}
	fz_end_id(f, XPMEM_CMD_RELEASE, "RELEASE", c.apid, must_fail,
		  fz_own_perm, fz_perm_released);
}

/* A fixed attach address inside the arena, often over something. */
static unsigned long fz_fixed_page(struct fz *f)
{
	long p = -1;
	uint64_t a;

	switch (rnd(&f->r, 10)) {
	case 0: case 1: case 2:
		p = fz_find(f, PK_ATT, -1);		/* over an attachment */
		break;
	case 3: case 4:
		p = fz_find(f, -1, -1);			/* over our memory */
		break;
	case 5:
		a = f->sh->addrs[rnd(&f->r, FZ_SLOTS)];	/* someone's attachment */
		if (in_arena(f, a & ~(PAGE - 1), PAGE))
			p = (a - (uintptr_t)f->arena) / PAGE;
		break;
	}
	return p >= 0 ? (unsigned long)p : rnd(&f->r, FZ_PAGES);
}

static void op_attach(struct fz *f)
{
	struct xpmem_cmd_attach c = { .fd = f->fd };
	struct fz_perm *pm = NULL;
	struct fz_apidslot e;
	uint64_t tgt = 0, want = 0, lo, hi;
	unsigned long n = 1, fp = 0, v = rnd(&f->r, 100);
	int must_fail = 1, fixed = 0, selfmap = 0, safe = 0, am, pi = -1, ai;
	int rdonly = 0;
	unsigned char vec;
	long r;

	ai = fz_att_alloc(f);
	if (ai < 0) {		/* table full: drop one */
		ai = rnd(&f->r, FZ_ATTS);
		r = xp_detach(f->fd, f->atts[ai].olen ?
			      (void *)(uintptr_t)f->atts[ai].oaddr :
			      pg_addr(f, fz_find(f, PK_ATT, ai)));
		fz_att_gone(f, ai, 1);
	}
	if (v < 75 && (pi = FZ_PICK(f, f->perm)) >= 0) {
		pm = &f->perm[pi];
		c.apid = pm->apid;
		must_fail = 0;
	} else if (v < 85) {
		sh_lock(&f->sh->lock);
		e = f->sh->apids[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.apid = e.apid;
		pi = fz_own_perm(f, e.apid);
		must_fail = pi < 0;
		pm = pi < 0 ? NULL : &f->perm[pi];
	} else if (v < 92 && f->ndead) {
		c.apid = f->dead[rnd(&f->r, f->ndead < 16 ? f->ndead : 16)];
	} else {
		c.apid = chance(&f->r, 50) ? fz_guess(f) :
			 -(int64_t)rnd(&f->r, 3);
		must_fail = !fz_id_known(f, c.apid);
	}

	if (!pm || !pm->slen) {
		/* not ours, or a segment we know nothing about: never fixed */
		c.offset = rnd(&f->r, 4) * PAGE;
		c.size = PAGE * (1 + rnd(&f->r, 4));
		goto call;
	}
	/* the owner-side range */
	n = chance(&f->r, 50) ? 1 + rnd(&f->r, 4) : 1 + rnd(&f->r, 64);
	lo = pm->svaddr > (uintptr_t)f->arena ? pm->svaddr : (uintptr_t)f->arena;
	hi = (uintptr_t)f->arena + FZ_ARENA;
	if (pm->svaddr + pm->slen < hi)
		hi = pm->svaddr + pm->slen;
	v = rnd(&f->r, 100);
	if (v < 70 && lo < hi) {
		tgt = lo + rnd(&f->r, (hi - lo) / PAGE) * PAGE;
	} else if (v < 85 && pm->spid) {
		int i;

		for (i = 0; i < FZ_MAXPROCS; i++)
			if (f->sh->procs[i].pid == pm->spid)
				tgt = f->sh->procs[i].addr[rnd(&f->r, 5)] &
				      ~(PAGE - 1);
		if (tgt < pm->svaddr || tgt >= pm->svaddr + pm->slen)
			tgt = pm->svaddr;
	} else {
		tgt = pm->svaddr + rnd(&f->r, pm->slen / PAGE) * PAGE;
	}
	if (tgt + n * PAGE > pm->svaddr + pm->slen)
		n = (pm->svaddr + pm->slen - tgt) / PAGE;
	if (!n)
		n = 1;
	fixed = chance(&f->r, 55);
	if (fixed) {
		fp = fz_fixed_page(f);
		/* an attachment of itself, or of the same address elsewhere */
		if (chance(&f->r, 8) && pm->svaddr <= (uintptr_t)pg_addr(f, fp) &&
		    (uintptr_t)pg_addr(f, fp) < pm->svaddr + pm->slen) {
			tgt = (uintptr_t)pg_addr(f, fp);
			selfmap = 1;
		}
		if (fp + n > FZ_PAGES)
			n = FZ_PAGES - fp;
		if (tgt + n * PAGE > pm->svaddr + pm->slen)
			n = (pm->svaddr + pm->slen - tgt) / PAGE;
		want = (uintptr_t)pg_addr(f, fp);
	}
	safe = in_arena(f, tgt, n * PAGE);
	if (fixed && pm->rdwr && !safe)
		fixed = 0, want = 0, selfmap = 0;	/* see the comment above */
	c.offset = (off_t)(tgt - pm->svaddr);
	c.size = n * PAGE - (chance(&f->r, 10) ? rnd(&f->r, PAGE - 1) : 0);
	c.vaddr = want;
	if (chance(&f->r, 15)) {
		must_fail = 1;
		switch (rnd(&f->r, 8)) {
		case 0:
			c.offset |= 1 + rnd(&f->r, PAGE - 1);
			break;
		case 1:
			c.offset = -(off_t)(PAGE * (1 + rnd(&f->r, 4)));
			break;
		case 2:
			c.offset = (off_t)(1ULL << 62);
			break;
		case 3:
			c.size = 0;
			break;
		case 4:		/* offset + size wraps */
			c.size = -(uint64_t)PAGE * (1 + rnd(&f->r, 4));
			c.vaddr = 0;
			break;
		case 5:
			c.flags = (int)(1 + rnd(&f->r, 0x7fffffff));
			break;
		case 6:
			c.vaddr = (fixed ? want : (uintptr_t)pg_addr(f, 0)) |
				  (1 + rnd(&f->r, PAGE - 1));
			break;
		default:
			c.vaddr = chance(&f->r, 50) ? KADDR + rnd(&f->r, 64) * PAGE :
				  -PAGE * (1 + rnd(&f->r, 4));
			break;
		}
	}
call:
	am = fz_argmode(f);
	if (am != ARG_OK)
		must_fail = 1;
	if (selfmap)
		f->selfmaps++;
	if (chance(&f->r, 30)) {
		/* EXT_ATTACH: the same request, with random options */
		struct xpmem_ext_attach x = {
			.apid = c.apid, .offset = (uint64_t)c.offset,
			.size = c.size, .vaddr = c.vaddr,
			.flags = c.vaddr ? XPMEM_EXT_ATTACH_FIXED : 0,
		};
		unsigned int o = rnd(&f->r, 8);

		/* a bit above every defined flag (must fail) */
		if (c.flags)
			x.flags |= (XPMEM_EXT_ATTACH_FLAGS + 1) <<
				   rnd(&f->r, 27);
		x.flags |= (o & 1 ? XPMEM_EXT_ATTACH_RDONLY : 0) |
			   (o & 2 ? XPMEM_EXT_ATTACH_POPULATE : 0) |
			   (o & 4 ? XPMEM_EXT_ATTACH_POPULATE_WRITE : 0);
		if ((o & 5) == 5 || ((o & 4) && (!pm || !pm->rdwr)))
			must_fail = 1;
		if (chance(&f->r, 3)) {
			x.reserved[rnd(&f->r, 3)] = 1 + rnd(&f->r, 8);
			must_fail = 1;
		}
		rdonly = o & 1;
		if (am != ARG_OK)
			must_fail = 1;
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_EXT_ATTACH,
			     fz_arg(f, am, &x, sizeof(x)));
		c.vaddr = x.vaddr;
		f->ext_attaches++;
	} else {
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_ATTACH,
			     fz_arg(f, am, &c, sizeof(c)));
	}
	fz_check(f, r, must_fail, selfmap ? "ATTACH (onto its own source)" :
		 "ATTACH");
	if (r) {
		/* a MAP_FIXED attempt may have unmapped the target */
		if (fixed && c.vaddr == want)
			fz_reset(f, fp, n);
		return;
	}
	if (c.vaddr & (PAGE - 1) || (fixed && c.vaddr != want))
		fz_fail(f, "ATTACH returned address 0x%llx (wanted 0x%llx)",
			(unsigned long long)c.vaddr, (unsigned long long)want);
	if (mincore((void *)(uintptr_t)c.vaddr, PAGE, &vec))
		fz_fail(f, "ATTACH returned 0x%llx, nothing mapped there: %s",
			(unsigned long long)c.vaddr, strerror(errno));
	n = (c.size + PAGE - 1) / PAGE;
	f->atts[ai] = (struct fz_att){
		.used = 1, .perm = pi, .writable = pm->rdwr && !rdonly,
		.safe = safe,
	};
	if (in_arena(f, c.vaddr, n * PAGE)) {
		fz_set(f, (c.vaddr - (uintptr_t)f->arena) / PAGE, n, PK_ATT,
		       PROT_READ | (pm->rdwr && !rdonly ? PROT_WRITE : 0), ai);
		if (pm->rdwr && !safe)
			fz_fail(f, "internal: unsafe writable attachment in the arena");
	} else if (c.vaddr + n * PAGE > (uintptr_t)f->arena &&
		   c.vaddr < (uintptr_t)f->arena + FZ_ARENA) {
		fz_fail(f, "ATTACH at 0x%llx straddles the arena",
			(unsigned long long)c.vaddr);
	} else {
		f->atts[ai].oaddr = c.vaddr;
		f->atts[ai].olen = n;
	}
	f->sh->addrs[rnd(&f->r, FZ_SLOTS)] = c.vaddr + rnd(&f->r, n) * PAGE;
}

/* Which of our attachments contains @a? -1 if none. */
static int fz_att_at(struct fz *f, uint64_t a)
{
	int i;

	if (in_arena(f, a, 1)) {
		unsigned long p = (a - (uintptr_t)f->arena) / PAGE;

		return f->kind[p] == PK_ATT ? f->att[p] : -1;
	}
	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used && f->atts[i].olen && a >= f->atts[i].oaddr &&
		    a < f->atts[i].oaddr + f->atts[i].olen * PAGE)
			return i;
	return -1;
}

static void op_detach(struct fz *f)
{
	struct xpmem_cmd_detach c = { 0 };
	unsigned long v = rnd(&f->r, 20);
	unsigned char vec;
	int ai, am, must_fail = 0;
	long p, r;

	if (v < 10) {
		ai = FZ_PICK(f, f->atts);
		if (ai < 0)
			return;
		if (f->atts[ai].olen)
			c.vaddr = f->atts[ai].oaddr + rnd(&f->r, f->atts[ai].olen) * PAGE;
		else if ((p = fz_find(f, PK_ATT, ai)) >= 0)
			c.vaddr = (uintptr_t)pg_addr(f, p);
		else
			return;
		c.vaddr += rnd(&f->r, 8) ? 0 : rnd(&f->r, PAGE);
	} else if (v < 14) {
		c.vaddr = (uintptr_t)pg_addr(f, rnd(&f->r, FZ_PAGES));
	} else if (v < 17) {
		c.vaddr = f->sh->addrs[rnd(&f->r, FZ_SLOTS)];
	} else {
		c.vaddr = chance(&f->r, 50) ? KADDR : rnd(&f->r, 3) * PAGE;
	}
	ai = fz_att_at(f, c.vaddr);
	am = fz_argmode(f);
	if (am != ARG_OK && am != ARG_RO)
		must_fail = 1;
	r = xp_ioctl_ret(f->fd, XPMEM_CMD_DETACH, fz_arg(f, am, &c, sizeof(c)));
	fz_check(f, r, must_fail, "DETACH");
	if (r && ai >= 0 && am == ARG_OK)
		fz_fail(f, "DETACH of own attachment at 0x%llx: %s",
			(unsigned long long)c.vaddr, strerror(-r));
	if (r)
		return;
	if (ai >= 0) {
		fz_att_gone(f, ai, 0);
		return;
	}
	/* No attachment there: nothing may have been unmapped. */
	if (in_arena(f, c.vaddr, 1) &&
	    mincore((void *)(uintptr_t)(c.vaddr & ~(PAGE - 1)), PAGE, &vec))
		fz_fail(f, "DETACH at 0x%llx (not an attachment) unmapped it",
			(unsigned long long)c.vaddr);
}

static void op_junk(struct fz *f)
{
	unsigned long cmd;
	uint64_t *w = (uint64_t *)f->scr;
	void *arg;
	long r;
	int i;

	do {
		switch (rnd(&f->r, 4)) {
		case 0:
			cmd = _IO(XPMEM_IOC_MAGIC, 9 + rnd(&f->r, 247));
			break;
		case 1:
			cmd = _IOC(rnd(&f->r, 4), XPMEM_IOC_MAGIC, rnd(&f->r, 256),
				   8 * (1 + rnd(&f->r, 32)));
			break;
		case 2:
			cmd = _IOC(rnd(&f->r, 4), XPMEM_IOC_MAGIC, 1 + rnd(&f->r, 8),
				   8 * (1 + rnd(&f->r, 8)));
			break;
		default:
			cmd = (uint32_t)rnd64(&f->r);
			break;
		}
	} while (_IOC_TYPE(cmd) == XPMEM_IOC_MAGIC && _IOC_NR(cmd) <= 8 &&
		 _IOC_SIZE(cmd) == 0 && _IOC_DIR(cmd) == _IOC_NONE);
	for (i = 0; i < 32; i++)
		w[i] = chance(&f->r, 30) ? rnd(&f->r, 8) : rnd64(&f->r);
	switch (rnd(&f->r, 4)) {
	case 0:
		arg = NULL;
		break;
	case 1:
		arg = (void *)(uintptr_t)KADDR;
		break;
	default:
		arg = f->scr;
		break;
	}
	r = xp_ioctl_ret(f->fd, cmd, arg);
	if (r < 0 && !clean_errno(r))
		fz_fail(f, "ioctl 0x%lx: unexpected errno %ld", cmd, -r);
	if (r >= 0)
		f->ok[f->op]++;
}

/* ---- memory operations ---- */

/* Touch one page; check what must hold for our own memory. */
static void fz_touch_page(struct fz *f, uint8_t *a, long p)
{
	int w = p >= 0 ? fz_write_ok(f, p) && chance(&f->r, 50) : 0;
	int sig = touch(a + (rnd(&f->r, PAGE) & ~7UL), w, (uint8_t)f->opi);

	f->touches++;
	if (sig == SIGBUS)
		f->sigbus++;
	else if (sig)
		f->sigsegv++;
	if (p < 0)
		return;
	if (f->kind[p] != PK_ATT && f->prot[p] && sig)
		fz_fail(f, "%s of own memory at %p (kind %d prot %d) raised %s",
			w ? "write" : "read", (void *)a, f->kind[p], f->prot[p],
			strsignal(sig));
	if (!f->prot[p] && sig != SIGSEGV)
		fz_fail(f, "access to PROT_NONE page %p (kind %d): %s", (void *)a,
			f->kind[p], sig ? strsignal(sig) : "no fault");
}

static void op_touch(struct fz *f)
{
	int i, n = 1 + rnd(&f->r, 4), ai;
	long p;

	f->ok[f->op]++;		/* what must hold is checked per page */
	for (i = 0; i < n; i++) {
		if (chance(&f->r, 40) && (ai = FZ_PICK(f, f->atts)) >= 0) {
			if (f->atts[ai].olen && chance(&f->r, 50)) {
				uint8_t *a = (uint8_t *)(uintptr_t)f->atts[ai].oaddr +
					     rnd(&f->r, f->atts[ai].olen) * PAGE;
				int sig = touch(a, 0, 0);

				f->touches++;
				f->sigbus += sig == SIGBUS;
				f->sigsegv += sig == SIGSEGV;
				continue;
			}
			p = fz_find(f, PK_ATT, ai);
		} else {
			p = rnd(&f->r, FZ_PAGES);
			if (f->kind[p] == PK_RESV && chance(&f->r, 80))
				p = fz_find(f, -1, -1);
		}
		if (p < 0)
			p = rnd(&f->r, FZ_PAGES);
		fz_touch_page(f, pg_addr(f, p), p);
	}
}

static void op_mmap(struct fz *f)
{
	unsigned long p, n, i;
	int kind, prot = chance(&f->r, 90) ? PROT_READ | PROT_WRITE : PROT_READ;
	int flags = MAP_FIXED, fd = -1, thp = chance(&f->r, 1);
	off_t off = 0;
	void *a;

	fz_range(f, &p, &n);
	if (n > 64)
		n = 64;
	if (thp) {
		p &= ~511UL;
		n = 512;
	}
	switch (rnd(&f->r, 20)) {
	case 0: case 1: case 2: case 3:
		kind = PK_SHARED;
		flags |= MAP_SHARED | MAP_ANONYMOUS;
		break;
	case 4: case 5: case 6: case 7:
		kind = PK_MEMFD;
		flags |= MAP_SHARED;
		fd = f->memfd;
		off = p * PAGE;
		break;
	case 8:
		if (f->secretfd >= 0 && !thp) {
			kind = PK_SECRET;
			flags |= MAP_SHARED;
			fd = f->secretfd;
			if (n > FZ_SECRET_PAGES)
				n = FZ_SECRET_PAGES;
			prot = PROT_READ | PROT_WRITE;
			break;
		}
		/* fall through */
	default:
		kind = PK_PRIV;
		flags |= MAP_PRIVATE | MAP_ANONYMOUS;
		break;
	}
	if (chance(&f->r, 3) && n <= 64)
		flags |= MAP_POPULATE;
	a = mmap(pg_addr(f, p), n * PAGE, prot, flags, fd, off);
	if (a == MAP_FAILED) {
		if (errno != ENOMEM && errno != EAGAIN)
			fz_fail(f, "mmap kind %d at page %lu+%lu: %s", kind, p,
				n, strerror(errno));
		fz_reset(f, p, n);
		return;
	}
	fz_set(f, p, n, kind, prot, -1);
	f->ok[f->op]++;
	if (thp)
		madvise(a, n * PAGE, MADV_HUGEPAGE);	/* the first write: a THP */
	if (prot & PROT_WRITE)
		for (i = 0; i < 4; i++)
			pg_addr(f, p + rnd(&f->r, n))[rnd(&f->r, PAGE)] = (uint8_t)i;
}

static void op_munmap(struct fz *f)
{
	unsigned long p, n;
	long q;

	fz_range(f, &p, &n);
	if (chance(&f->r, 30) && (q = fz_find(f, PK_ATT, -1)) >= 0) {
		p = q;		/* part of an attachment */
		if (p + n > FZ_PAGES)
			n = FZ_PAGES - p;
	}
	fz_reset(f, p, n);
	f->ok[f->op]++;
}

/* Move the model of [p, p + n) to [q, q + n). */
static void fz_move(struct fz *f, unsigned long p, unsigned long q,
		    unsigned long n)
{
	unsigned long i;
	uint8_t inh;

	for (i = 0; i < n; i++) {
		inh = f->inh[p + i];
		fz_set(f, q + i, 1, f->kind[p + i], f->prot[p + i], f->att[p + i]);
		f->inh[q + i] = inh;
	}
}

static void op_mremap(struct fz *f)
{
	long p0 = fz_find(f, -1, -1);
	unsigned long p, n, q, m;
	int dontunmap = 0;
	void *r;

	if (p0 < 0)
		return;
	p = p0;
	for (n = 1; p + n < FZ_PAGES && n < 64 && f->kind[p + n] == f->kind[p] &&
	     f->att[p + n] == f->att[p] && f->prot[p + n] == f->prot[p]; n++)
		;
	n = 1 + rnd(&f->r, n);
	switch (rnd(&f->r, 10)) {
	case 0: case 1:		/* shrink in place */
		if (n < 2)
			return;
		m = 1 + rnd(&f->r, n - 1);
		r = mremap(pg_addr(f, p), n * PAGE, m * PAGE, 0);
		if (r != MAP_FAILED) {
			fz_reset(f, p + m, n - m);
			f->ok[f->op]++;
		}
		return;
	case 2:			/* grow in place: the neighbour is mapped */
		if (p + n >= FZ_PAGES)
			return;
		r = mremap(pg_addr(f, p), n * PAGE, (n + 1) * PAGE, 0);
		if (r != MAP_FAILED)
			fz_reset(f, p, n + 1);	/* unexpected: forget it */
		return;
	case 3:
		dontunmap = f->kind[p] == PK_PRIV;
		break;
	}
	do {
		q = rnd(&f->r, FZ_PAGES - n + 1);
	} while (q < p + n && p < q + n);
	r = mremap(pg_addr(f, p), n * PAGE, n * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED |
		   (dontunmap ? MREMAP_DONTUNMAP : 0), pg_addr(f, q));
	if (r == MAP_FAILED) {
		fz_reset(f, q, n);
		fz_reset(f, p, n);
		return;
	}
	if (r != pg_addr(f, q))
		fz_fail(f, "mremap moved to %p, not %p", r, (void *)pg_addr(f, q));
	f->ok[f->op]++;
	fz_move(f, p, q, n);
	if (dontunmap) {
		/* the source keeps its (now empty) mapping */
		return;
	}
	fz_reset(f, p, n);
}

static void op_mprotect(struct fz *f)
{
	static const int prots[] = {
		PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE,
	};
	int prot = prots[rnd(&f->r, 4)];
	unsigned long p, n, i;

	fz_range(f, &p, &n);
	if (chance(&f->r, 50)) {
		long q = fz_find(f, -1, -1);

		if (q >= 0)
			p = q;
		if (p + n > FZ_PAGES)
			n = FZ_PAGES - p;
	}
	if (mprotect(pg_addr(f, p), n * PAGE, prot)) {
		fz_reset(f, p, n);	/* partly applied: start over */
		return;
	}
	f->ok[f->op]++;
	for (i = p; i < p + n; i++) {
		if (f->kind[i] == PK_RESV && prot)
			f->kind[i] = PK_PRIV;	/* the reservation is memory now */
		fz_hist(f, i, '0' + prot);
		f->prot[i] = prot;
	}
}

static void op_madvise(struct fz *f)
{
	static const int advs[] = {
		MADV_DONTNEED, MADV_FREE, MADV_PAGEOUT, MADV_DOFORK,
		MADV_DONTFORK, MADV_WILLNEED, MADV_COLD, MADV_HUGEPAGE,
		MADV_NOHUGEPAGE, MADV_REMOVE, MADV_DONTNEED, MADV_FREE,
		MADV_PAGEOUT, MADV_DOFORK, MADV_COLLAPSE, MADV_DONTDUMP,
	};
	int adv = advs[rnd(&f->r, 16)], r;
	unsigned long p, n, i;
	long q;

	if (adv == MADV_COLLAPSE && !chance(&f->r, 20))
		adv = MADV_PAGEOUT;
	fz_range(f, &p, &n);
	if (chance(&f->r, 60) && (q = fz_find(f, chance(&f->r, 50) ? PK_ATT : -1,
					      -1)) >= 0) {
		p = q;
		if (p + n > FZ_PAGES)
			n = FZ_PAGES - p;
	}
	r = madvise(pg_addr(f, p), n * PAGE, adv);
	if (!r)
		f->ok[f->op]++;
	if (adv == MADV_DOFORK || adv == MADV_DONTFORK)
		for (i = p; i < p + n; i++) {
			f->inh[i] = r ? 2 : adv == MADV_DOFORK;
			fz_hist(f, i, r ? 'E' : adv == MADV_DOFORK ? 'F' : 'D');
		}
}

/* get_user_pages and uaccess on our pages and attachments */
static void op_gup(struct fz *f)
{
	unsigned long n = 1 + rnd(&f->r, 4), i;
	long p = chance(&f->r, 60) ? fz_find(f, PK_ATT, -1) : -1;
	struct iovec local, remote;
	uint8_t *a, vec[4];
	int wok = 1;
	loff_t off = 0;
	ssize_t r;

	if (p < 0)
		p = fz_find(f, -1, -1);
	if (p < 0)
		return;
	if (p + n > FZ_PAGES)
		n = FZ_PAGES - p;
	for (i = p; i < p + n; i++)
		wok &= fz_write_ok(f, i);
	a = pg_addr(f, p);
	local.iov_base = f->buf;
	local.iov_len = n * PAGE;
	remote.iov_base = a;
	remote.iov_len = n * PAGE;
	switch (rnd(&f->r, 7)) {
	case 0:
		r = process_vm_readv(f->pid, &local, 1, &remote, 1, 0);
		break;
	case 1:
		r = wok ? process_vm_writev(f->pid, &local, 1, &remote, 1, 0) :
		    process_vm_readv(f->pid, &local, 1, &remote, 1, 0);
		break;
	case 2:
		r = vmsplice(f->pfd[1], &remote, 1, SPLICE_F_NONBLOCK);
		if (r > 0)
			splice(f->pfd[0], NULL, f->tmpfd, &off, r,
			       SPLICE_F_NONBLOCK);
		while (read(f->pfd[0], f->buf, 4 * PAGE) > 0)
			;
		break;
	case 3:
		r = syscall(SYS_futex, a + 4 * rnd(&f->r, PAGE / 4), FUTEX_WAKE, 1,
			    NULL, NULL, 0);
		break;
	case 4:
		r = wok ? pread(f->tmpfd, a, n * PAGE, 0) :
		    pwrite(f->tmpfd, a, n * PAGE, 0);
		break;
	case 5:
		r = pwrite(f->tmpfd, a, n * PAGE, 0);
		break;
	default:
		r = mincore(a, n * PAGE, vec);
		break;
	}
	if (r >= 0)
		f->ok[f->op]++;
	if (ftruncate(f->tmpfd, 4 * PAGE))
		fz_fail(f, "ftruncate: %s", strerror(errno));
}

/* ---- fork: the child touches inherited memory and exits ---- */

static int fz_child(struct fz *f)
{
	int i, k = 4 + rnd(&f->r, 12), sig, w, fd;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	void *a;
	long p, r;

	for (i = 0; i < k; i++) {
		p = chance(&f->r, 50) ? fz_find(f, -1, -1) : (long)rnd(&f->r, FZ_PAGES);
		if (p < 0)
			continue;
		w = fz_write_ok(f, p) && f->inh[p] == 1 && chance(&f->r, 50);
		sig = touch(pg_addr(f, p) + (rnd(&f->r, PAGE) & ~7UL), w, 7);
		__atomic_fetch_add(&f->sh->child_touches, 1, __ATOMIC_RELAXED);
		if (sig == SIGBUS)
			__atomic_fetch_add(&f->sh->sigbus, 1, __ATOMIC_RELAXED);
		else if (sig)
			__atomic_fetch_add(&f->sh->sigsegv, 1, __ATOMIC_RELAXED);
		/* inherited own memory works; what was not inherited is a hole */
		if ((f->inh[p] == 1 && f->prot[p] && f->kind[p] != PK_ATT &&
		     f->kind[p] != PK_SECRET && sig) ||
		    (f->inh[p] == 0 && sig != SIGSEGV))
			fz_fail(f, "fork child: %s of page %ld (%p, kind %d, prot %d, "
				"%s; history:%s) gave %s",
				w ? "write" : "read", p, (void *)pg_addr(f, p),
				f->kind[p], f->prot[p],
				f->inh[p] ? "inherited" : "not inherited",
				fz_hist_str(f, p), sig ? strsignal(sig) : "no fault");
	}
	/* the parent's device fd is the parent's */
	r = xp_make(f->fd, f->arena, PAGE, 0600, &segid);
	if (r != -XPMEM_ERRNO_NOPROC && !(r < 0 && clean_errno(r)))
		return 22;
	if (chance(&f->r, 30)) {
		fd = xp_open();
		if (fd < 0)
			return 23;
		segid = f->sh->segs[rnd(&f->r, FZ_SLOTS)].segid;
		if (!xp_get(fd, segid, XPMEM_RDONLY, &apid) &&
		    !xp_attach(fd, apid, 0, PAGE, NULL, &a))
			touch(a, 0, 0);
		/* exit cleans up */
	}
	return 0;
}

static void op_fork(struct fz *f)
{
	char how[64];
	pid_t pid;
	int st;

	pid = fork_child();
	if (pid < 0) {
		if (errno != ENOMEM && errno != EAGAIN)
			fz_fail(f, "fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		crash_addr_slot = NULL;
		_exit(fz_child(f));
	}
	f->forks++;
	if (wait_bounded(pid, &st, 120))
		fz_fail(f, "fork child %d did not exit within 120s", pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		describe_status(st, how, sizeof(how));
		fz_fail(f, "fork child: %s (20: own memory faulted, 21: "
			"uninherited page accessible, 22: parent's fd usable)", how);
	}
	f->ok[f->op]++;
}

/*
 * An attachment over its own source: a scratch range of this
 * process is exported and unmapped, then attached without FIXED (the
 * kernel's next choice is that very hole) and moved onto its source with
 * mremap(MREMAP_FIXED); neither may land there, and a split of the
 * attachment in its middle (page tables present) returns.  Self-contained:
 * the scratch range lies outside the arena and is gone at the end.
 */
static void op_selfplace(struct fz *f)
{
	const size_t len = 4UL << 20;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	void *src, *to, *va;

	src = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (src == MAP_FAILED)
		return;
	if (xp_make(f->fd, src, len, 0600, &segid)) {
		munmap(src, len);
		return;
	}
	munmap(src, len);
	if (xp_get(f->fd, segid, XPMEM_RDWR, &apid))
		goto remove;
	if (xp_attach(f->fd, apid, 0, len, NULL, &va))
		goto release;
	if ((uint8_t *)va < (uint8_t *)src + len &&
	    (uint8_t *)src < (uint8_t *)va + len)
		fz_fail(f, "attach without FIXED at %p over its own source %p",
			va, src);
	munmap((uint8_t *)va + len / 2 + PAGE, PAGE);
	to = mremap(va, len / 2, len / 2,
		    MREMAP_MAYMOVE | MREMAP_FIXED, src);
	if (to != MAP_FAILED)
		fz_fail(f, "mremap of an attachment onto its own source at %p",
			to);
	xp_detach(f->fd, (uint8_t *)va + len - PAGE);
	f->ok[f->op]++;
release:
	xp_release(f->fd, apid);
remove:
	xp_remove(f->fd, segid);
}

/* close and reopen the device: our segments and permits go away */
static void op_reopen(struct fz *f)
{
	int i;

	close(f->fd);
	for (i = 0; i < FZ_SEGS; i++)
		if (f->seg[i].used)
			fz_seg_removed(f, i);
	for (i = 0; i < FZ_PERMS; i++) {
		if (!f->perm[i].used)
			continue;
		sh_lock(&f->sh->lock);
		for (int j = 0; j < FZ_SLOTS; j++)
			if (f->sh->apids[j].apid == f->perm[i].apid)
				f->sh->apids[j].released = 1;
		sh_unlock(&f->sh->lock);
		f->dead[f->ndead++ % 16] = f->perm[i].apid;
		memset(&f->perm[i], 0, sizeof(f->perm[i]));
	}
	/* attachments stay mapped (dead); unmap them */
	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used)
			fz_att_gone(f, i, 1);
	f->fd = xp_open();
	if (f->fd < 0)
		fz_fail(f, "reopen %s: %s", XPMEM_DEV_PATH, strerror(errno));
	f->ok[f->op]++;
}

/* Read all of @path into @buf (NUL-terminated); bytes read or -errno. */
static long read_file(const char *path, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return (long)n;
}

/*
 * Read the /proc/xpmem-objects file of a random fuzz process (another
 * uid's: EACCES; one closing its device: ENOENT) while they all change
 * their objects, and our own, which must list every segment we hold.
 */
static void op_proc(struct fz *f)
{
	static char buf[1 << 16];
	char path[64], want[48];
	pid_t pid = f->sh->procs[rnd(&f->r, FZ_MAXPROCS)].pid;
	long n;
	int i;

	if (pid > 0 && pid != f->pid) {
		snprintf(path, sizeof(path), "/proc/xpmem-objects/%d", (int)pid);
		n = read_file(path, buf, sizeof(buf));
		if (n < 0 && n != -EACCES && n != -ENOENT)
			fz_fail(f, "read %s: %s", path, strerror((int)-n));
	}
	snprintf(path, sizeof(path), "/proc/xpmem-objects/%d", (int)f->pid);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		fz_fail(f, "read %s: %s", path, strerror((int)-n));
	for (i = 0; i < FZ_SEGS && n < (long)sizeof(buf) - 1; i++) {
		if (!f->seg[i].used)
			continue;
		snprintf(want, sizeof(want), "segment %#llx ",
			 (unsigned long long)f->seg[i].segid);
		if (!strstr(buf, want))
			fz_fail(f, "%s does not list our segment %#llx",
				path, (unsigned long long)f->seg[i].segid);
	}
	f->ok[f->op]++;
}

static int fz_pick_op(struct fz *f)
{
	unsigned long x = rnd(&f->r, 1000), acc = 0;
	int i;

	if (rnd(&f->r, 2000) == 0)
		return FZ_FORK;		/* 0.5 per mille */
	for (i = 0; i < FZ_NOPS; i++) {
		acc += fz_weight[i];
		if (x < acc)
			return i;
	}
	return FZ_TOUCH;	/* not reached */
}

/*
 * EXT_COPY (or EXT_POPULATE) with a random permit, range, local buffer
 * and flags, through the ioctl or, in batches of up to four, through the
 * worker's io_uring.  The local side of a copy from a segment is the
 * worker's scratch buffer (valid), one of its PROT_NONE or read-only
 * pages, or a kernel address; of a copy to a segment (only where the
 * segment's bytes are arena pages), any arena page.
 * What must fail: a bad flag or reserved word, a permit that is not
 * ours, COPY_TO through a read-only one.  A copy never reports more
 * bytes than asked for.
 */
static void op_copy(struct fz *f)
{
	struct xpmem_ext_copy x[4];
	struct xpmem_ext_populate pp[4];
	int must_fail[4], pop[4], n = 1, i, pi;
	struct io_uring_cqe *cqe;
	int ring = f->have_ring && chance(&f->r, 40);
	uint64_t want[4];
	long r;

	if (ring)
		n = 1 + rnd(&f->r, 4);
	for (i = 0; i < n; i++) {
		struct fz_perm *pm = NULL;
		uint64_t len = 1 + rnd(&f->r, 4 * PAGE);

		memset(&x[i], 0, sizeof(x[i]));
		memset(&pp[i], 0, sizeof(pp[i]));
		must_fail[i] = 0;
		pop[i] = chance(&f->r, 15);
		if (pop[i]) {
			long p = fz_find(f, chance(&f->r, 70) ? PK_ATT : -1, -1);

			if (p < 0)
				p = rnd(&f->r, FZ_PAGES);
			pp[i].vaddr = (uintptr_t)pg_addr(f, p);
			pp[i].len = (1 + rnd(&f->r, 8)) * PAGE;
			pp[i].flags = rnd(&f->r, 2);
			if (chance(&f->r, 5)) {
				pp[i].flags |= 2;
				must_fail[i] = 1;
			}
			continue;
		}
		pi = chance(&f->r, 85) ? FZ_PICK(f, f->perm) : -1;
		if (pi >= 0) {
			pm = &f->perm[pi];
			x[i].apid = pm->apid;
		} else {
			x[i].apid = chance(&f->r, 50) ? fz_guess(f) :
				    f->sh->apids[rnd(&f->r, FZ_SLOTS)].apid;
			pi = fz_own_perm(f, x[i].apid);
			pm = pi < 0 ? NULL : &f->perm[pi];
			must_fail[i] = !pm;
		}
		x[i].offset = pm && chance(&f->r, 90) && pm->slen > len ?
			rnd(&f->r, (pm->slen - len) < (1UL << 30) ?
			    pm->slen - len : 1UL << 30) :
			rnd(&f->r, 1UL << 40);
		/* mostly where the owner has memory: its arena */
		if (pm && chance(&f->r, 60)) {
			uint64_t a = (uintptr_t)pg_addr(f, rnd(&f->r, FZ_PAGES)) +
				     rnd(&f->r, PAGE);

			if (a >= pm->svaddr && a - pm->svaddr + len <= pm->slen)
				x[i].offset = a - pm->svaddr;
		}
		x[i].len = len;
		/*
		 * Writes go only into arena memory: a segment may be a whole
		 * address space, and a random offset into it the owner's
		 * stack.  A permit that is not ours writes nothing (EACCES).
		 */
		if (chance(&f->r, 50) &&
		    (!pm || in_arena(f, pm->svaddr + x[i].offset, len))) {
			x[i].flags = XPMEM_EXT_COPY_TO;
			x[i].addr = (uintptr_t)pg_addr(f, rnd(&f->r, FZ_PAGES));
			if (pm && !pm->rdwr)
				must_fail[i] = 1;
		} else {
			switch (rnd(&f->r, 8)) {
			case 0:
				x[i].addr = (uintptr_t)f->scr + PAGE;
				break;
			case 1:
				x[i].addr = (uintptr_t)f->scr + 2 * PAGE;
				break;
			case 2:
				x[i].addr = KADDR;
				break;
			default:
				x[i].addr = (uintptr_t)f->buf;
				break;
			}
		}
		if (chance(&f->r, 5)) {
			x[i].flags |= 0x4U << rnd(&f->r, 29);
			must_fail[i] = 1;
		}
		if (chance(&f->r, 5)) {
			x[i].reserved[rnd(&f->r, 3)] = 1;
			must_fail[i] = 1;
		}
	}
	f->ext_copies += n;
	f->ops[f->op] += n - 1;		/* counted per command */
	for (i = 0; i < n; i++) {
		want[i] = pop[i] ? 0 : x[i].len;
		if (!ring) {
			r = xp_ioctl_ret(f->fd, pop[i] ? XPMEM_CMD_EXT_POPULATE :
				     XPMEM_CMD_EXT_COPY,
				     pop[i] ? (void *)&pp[i] : (void *)&x[i]);
			if (r > (long)want[i])
				fz_fail(f, "EXT_COPY of %llu bytes returned %ld",
					(unsigned long long)want[i], r);
			fz_check(f, r, must_fail[i], "EXT_COPY");
			continue;
		}
		{
			struct io_uring_sqe *sqe = io_uring_get_sqe(&f->ring);

			if (!sqe)
				fz_fail(f, "no free SQE in an idle ring");
			memset(sqe, 0, sizeof(*sqe));
			sqe->opcode = IORING_OP_URING_CMD;
			sqe->fd = f->fd;
			sqe->cmd_op = pop[i] ? XPMEM_CMD_EXT_POPULATE :
				      XPMEM_CMD_EXT_COPY;
			sqe->addr3 = pop[i] ? (uintptr_t)&pp[i] :
				     (uintptr_t)&x[i];
			sqe->user_data = i;
			/*
			 * Some name the registered buffer: those whose
			 * bytes lie in it copy, the others fail (EFAULT,
			 * EINVAL for a vector), and what must fail still
			 * does.
			 */
			if (!pop[i] && f->have_fixed && chance(&f->r, 30)) {
				sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
				sqe->buf_index = chance(&f->r, 95) ? 0 : 1;
			}
		}
	}
	if (!ring)
		return;
	f->uring_cmds += n;
	/*
	 * An SQE io_uring refuses at prep (a bad buffer index) ends the
	 * submission there with its error in a CQE: submit the rest again.
	 */
	for (i = 0; i < n; i += r) {
		r = io_uring_submit(&f->ring);
		if (r <= 0)
			fz_fail(f, "io_uring_submit of %d xpmem commands: %ld",
				n - (int)i, r);
	}
	for (i = 0; i < n; i++) {
		if (io_uring_wait_cqe(&f->ring, &cqe))
			fz_fail(f, "io_uring_wait_cqe failed");
		r = cqe->res;
		if (cqe->user_data >= (uint64_t)n)
			fz_fail(f, "CQE with unknown tag %llu",
				(unsigned long long)cqe->user_data);
		if (r > (long)want[cqe->user_data])
			fz_fail(f, "ring EXT_COPY of %llu bytes returned %ld",
				(unsigned long long)want[cqe->user_data], r);
		fz_check(f, r, must_fail[cqe->user_data], "ring EXT_COPY");
		io_uring_cqe_seen(&f->ring, cqe);
	}
}

int fz_worker(struct fz_shared *sh, uint8_t *arena, int id,
		     uint64_t seed, long nops)
{
	struct fz *f = &F;
	uint8_t frame;
	uint64_t t;
	long i;
	int op;

	memset(f, 0, sizeof(*f));
	rng_init(&f->r, seed, id);
	f->sh = sh;
	f->id = id;
	f->pid = getpid();
	f->arena = arena;
	memset(f->att, -1, sizeof(f->att));
	memset(f->inh, 1, sizeof(f->inh));	/* the reservation is inherited */
	/* odd workers run as alice / bob: the permission checks matter */
	if (id & 1) {
		f->uid = f->gid = 1000 + (id / 2) % 2;
		if (setgroups(0, NULL) || setresgid(f->gid, f->gid, f->gid) ||
		    setresuid(f->uid, f->uid, f->uid))
			return 2;
	}
	f->fd = xp_open();
	f->scr = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	f->buf = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	f->memfd = memfd_create("xpmem-stress", MFD_CLOEXEC);
	f->secretfd = syscall(SYS_memfd_secret, 0);
	f->tmpfd = open("/tmp", O_TMPFILE | O_RDWR, 0600);
	if (f->fd < 0 || f->scr == MAP_FAILED || f->buf == MAP_FAILED ||
	    f->memfd < 0 || f->tmpfd < 0 ||
	    pipe2(f->pfd, O_NONBLOCK | O_CLOEXEC) ||
	    ftruncate(f->memfd, FZ_ARENA) || ftruncate(f->tmpfd, 4 * PAGE) ||
	    mprotect(f->scr + PAGE, PAGE, PROT_NONE) ||
	    mprotect(f->scr + 2 * PAGE, PAGE, PROT_READ))
		return 3;
	if (f->secretfd >= 0 && ftruncate(f->secretfd, FZ_SECRET_PAGES * PAGE)) {
		close(f->secretfd);
		f->secretfd = -1;
	}
	if (f->secretfd >= 0)
		sh->secretmem = 1;
	f->have_ring = !io_uring_queue_init(8, &f->ring, 0);
	if (f->have_ring) {
		/* the gup buffer, registered: ring copies may name it */
		struct iovec reg = { f->buf, 4 * PAGE };

		f->have_fixed = !io_uring_register_buffers(&f->ring, &reg, 1);
	}
	sh->procs[id].pid = f->pid;
	sh->procs[id].uid = f->uid;
	sh->procs[id].addr[0] = (uintptr_t)&frame;
	sh->procs[id].addr[1] = (uintptr_t)&fz_worker;
	sh->procs[id].addr[2] = (uintptr_t)&F;
	sh->procs[id].addr[3] = (uintptr_t)sbrk(0) - PAGE;
	sh->procs[id].addr[4] = getauxval(AT_SYSINFO_EHDR);
	crash_addr_slot = &sh->crash_addr[id];
	probe_install();

	for (i = 0; i < nops && !sh->failed; i++) {
		f->opi = i;
		op = fz_pick_op(f);
		f->op = op;
		sh->procs[id].op = op;
		sh->procs[id].opi = i;
		f->ops[op]++;
		t = now_ns();
		switch (op) {
		case FZ_MAKE:
		case FZ_MAKE_BAD:
			op_make(f, op == FZ_MAKE_BAD);
			break;
		case FZ_REMOVE:
			op_remove(f);
			break;
		case FZ_GET:
			op_get(f);
			break;
		case FZ_RELEASE:
			op_release(f);
			break;
		case FZ_ATTACH:
			op_attach(f);
			break;
		case FZ_DETACH:
			op_detach(f);
			break;
		case FZ_JUNK:
			op_junk(f);
			break;
		case FZ_TOUCH:
			op_touch(f);
			break;
		case FZ_MMAP:
			op_mmap(f);
			break;
		case FZ_MUNMAP:
			op_munmap(f);
			break;
		case FZ_MREMAP:
			op_mremap(f);
			break;
		case FZ_MPROTECT:
			op_mprotect(f);
			break;
		case FZ_MADVISE:
			op_madvise(f);
			break;
		case FZ_GUP:
			op_gup(f);
			break;
		case FZ_FORK:
			op_fork(f);
			break;
		case FZ_REOPEN:
			op_reopen(f);
			break;
		case FZ_PROC:
			op_proc(f);
			break;
		case FZ_COPY:
			op_copy(f);
			break;
		case FZ_SELFPLACE:
			op_selfplace(f);
			break;
		}
		f->ns[op] += now_ns() - t;
	}
	sh->procs[id].opi = i;
	/* clean up what is left: the counters must return to the baseline */
	for (i = 0; i < FZ_PERMS; i++)
		if (f->perm[i].used)
			op_release_perm(f, i);
	for (i = 0; i < FZ_SEGS; i++)
		if (f->seg[i].used)
			op_remove_own(f, i);
	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used)
			fz_att_gone(f, i, 1);
	close(f->fd);
	for (i = 0; i < FZ_NOPS; i++) {
		__atomic_fetch_add(&sh->ops[i], f->ops[i], __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->ok[i], f->ok[i], __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->ns[i], f->ns[i], __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&sh->touches, f->touches, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->sigbus, f->sigbus, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->sigsegv, f->sigsegv, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->refused, f->refused, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->selfmaps, f->selfmaps, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->forks, f->forks, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ext_attaches, f->ext_attaches, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ext_makes, f->ext_makes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ext_gets, f->ext_gets, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ext_copies, f->ext_copies, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->uring_cmds, f->uring_cmds, __ATOMIC_RELAXED);
	return 0;
}
