// SPDX-License-Identifier: GPL-2.0
/*
 * stress/fuzz.c - the worker of xpmem_stress's fuzz test (see fuzz.h):
 * random classic and extended ioctls, io_uring commands, faults and memory
 * operations on its arena, checked against a model of what each page of
 * the arena is and what each call may return.  This file has the worker
 * (set-up, the operation mix, the end), the failure report and the model;
 * the operations are in fuzz_ops_seg.c, fuzz_ops_att.c and fuzz_ops_mem.c
 * (fuzz_ops.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <liburing.h>

#include "../xpmem_test.h"
#include "fuzz.h"
#include "fuzz_ops.h"
#include "stress.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

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

static struct fz F;

void __attribute__((noreturn, format(printf, 2, 3)))
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
void fz_check(struct fz *f, long r, int must_fail, const char *what)
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

/*
 * touch() for the operation files: its state is per translation unit, and
 * the handler that fz_worker() installs is this file's.
 */
int fz_touch(volatile uint8_t *p, int write, uint8_t v)
{
	return touch(p, write, v);
}

/* In a fork child: a crash of the child is not the worker's to report. */
void fz_child_crash_slot(void)
{
	crash_addr_slot = NULL;
}

/* ---- the model of the arena ---- */

/* History of a page's model, for failure messages. */
void fz_hist(struct fz *f, unsigned long p, char what)
{
	memmove(&f->hist[p][1], &f->hist[p][0], 3 * sizeof(f->hist[p][0]));
	f->hist[p][0] = (uint32_t)f->opi << 8 | (uint8_t)what;
}

const char *fz_hist_str(struct fz *f, unsigned long p)
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
void fz_set(struct fz *f, unsigned long p, unsigned long n, int kind,
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
void fz_reset(struct fz *f, unsigned long p, unsigned long n)
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
void fz_att_gone(struct fz *f, int ai, int do_unmap)
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

int fz_att_alloc(struct fz *f)
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
void fz_range(struct fz *f, unsigned long *p, unsigned long *n)
{
	unsigned long len = chance(&f->r, 40) ? 1 : chance(&f->r, 80) ?
			    1 + rnd(&f->r, 16) : 1 + rnd(&f->r, 512);

	*p = rnd(&f->r, FZ_PAGES);
	if (*p + len > FZ_PAGES)
		len = FZ_PAGES - *p;
	*n = len;
}

/* A random page whose model satisfies @kind (-1: anything but RESV). */
long fz_find(struct fz *f, int kind, int ai)
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

int fz_write_ok(struct fz *f, unsigned long p)
{
	if (!(f->prot[p] & PROT_WRITE))
		return 0;
	if (f->kind[p] == PK_ATT)
		return f->atts[f->att[p]].writable && f->atts[f->att[p]].safe;
	return f->kind[p] != PK_RESV;
}

/* ---- argument pointers ---- */

int fz_argmode(struct fz *f)
{
	return chance(&f->r, 5) ? 1 + (int)rnd(&f->r, ARG_N - 1) : ARG_OK;
}

void *fz_arg(struct fz *f, int mode, const void *cmd, size_t len)
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

void fz_publish_seg(struct fz *f, struct fz_seg *s, uint64_t mode)
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
void fz_seg_removed(struct fz *f, int si)
{
	struct fz_seg *s = &f->seg[si];

	sh_lock(&f->sh->lock);
	if (f->sh->segs[s->slot].segid == s->segid)
		f->sh->segs[s->slot].removed = 1;
	sh_unlock(&f->sh->lock);
	memset(s, 0, sizeof(*s));
}

void fz_perm_released(struct fz *f, int pi)
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

int fz_own_seg(struct fz *f, int64_t segid)
{
	int i;

	for (i = 0; i < FZ_SEGS; i++)
		if (f->seg[i].used && f->seg[i].segid == segid)
			return i;
	return -1;
}

int fz_own_perm(struct fz *f, int64_t apid)
{
	int i;

	for (i = 0; i < FZ_PERMS; i++)
		if (f->perm[i].used && f->perm[i].apid == apid)
			return i;
	return -1;
}

int fz_pick_used(struct fz *f, int n, size_t stride, const void *base)
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

int64_t fz_guess(struct fz *f)
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

int fz_id_known(struct fz *f, int64_t id)
{
	int i;

	for (i = 0; i < FZ_SLOTS; i++)
		if (f->sh->segs[i].segid == id || f->sh->apids[i].apid == id)
			return 1;
	return 0;
}

/* ---- the worker ---- */

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
 * The worker's state: its random stream, identity (odd workers run as
 * alice or bob: the permission checks matter), device file, scratch and
 * gup buffers, memfd, secret memfd, tmpfile, pipe and io_uring.  0, or
 * the worker's exit code.
 */
static int fz_setup(struct fz *f, struct fz_shared *sh, uint8_t *arena,
		    int id, uint64_t seed)
{
	memset(f, 0, sizeof(*f));
	rng_init(&f->r, seed, id);
	f->sh = sh;
	f->id = id;
	f->pid = getpid();
	f->arena = arena;
	memset(f->att, -1, sizeof(f->att));
	memset(f->inh, 1, sizeof(f->inh));	/* the reservation is inherited */
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
	return 0;
}

/* Operation @op (enum fz_op). */
static void fz_do_op(struct fz *f, int op)
{
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
}

/*
 * Clean up what is left (the counters must return to the baseline) and
 * add the worker's counts to the shared table.
 */
static void fz_finish(struct fz *f, struct fz_shared *sh)
{
	long i;

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
}

int fz_worker(struct fz_shared *sh, uint8_t *arena, int id,
	      uint64_t seed, long nops)
{
	struct fz *f = &F;
	uint8_t frame;
	uint64_t t;
	long i;
	int op;

	op = fz_setup(f, sh, arena, id, seed);
	if (op)
		return op;
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
		fz_do_op(f, op);
		f->ns[op] += now_ns() - t;
	}
	sh->procs[id].opi = i;
	fz_finish(f, sh);
	return 0;
}
