// SPDX-License-Identifier: GPL-2.0
/*
 * stress/fuzz_ops_mem.c - the fuzzer's memory operations (see fuzz_ops.h):
 * accesses to the arena and to attachments, mmap, munmap, mremap,
 * mprotect and madvise of arena pages, get_user_pages and uaccess on
 * them, and fork.
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../xpmem_test.h"
#include "fuzz_ops.h"
#include "stress.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

/* Touch one page; check what must hold for our own memory. */
static void fz_touch_page(struct fz *f, uint8_t *a, long p)
{
	int w = p >= 0 ? fz_write_ok(f, p) && chance(&f->r, 50) : 0;
	int sig = fz_touch(a + (rnd(&f->r, PAGE) & ~7UL), w, (uint8_t)f->opi);

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

/* Reads and writes of arena pages and attachments (see fz_touch_page()). */
void op_touch(struct fz *f)
{
	int i, n = 1 + rnd(&f->r, 4), ai;
	long p;

	f->ok[f->op]++;		/* what must hold is checked per page */
	for (i = 0; i < n; i++) {
		if (chance(&f->r, 40) && (ai = FZ_PICK(f, f->atts)) >= 0) {
			if (f->atts[ai].olen && chance(&f->r, 50)) {
				uint8_t *a = (uint8_t *)(uintptr_t)f->atts[ai].oaddr +
					     rnd(&f->r, f->atts[ai].olen) * PAGE;
				int sig = fz_touch(a, 0, 0);

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

/* mmap over arena pages: private, shared, memfd or secret memory; or a THP. */
void op_mmap(struct fz *f)
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

/* munmap of arena pages, often part of an attachment. */
void op_munmap(struct fz *f)
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

/* mremap of a run of like pages: shrink, grow, or move (maybe DONTUNMAP). */
void op_mremap(struct fz *f)
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

/* mprotect of arena pages. */
void op_mprotect(struct fz *f)
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

/* madvise of arena pages, often attachments. */
void op_madvise(struct fz *f)
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
void op_gup(struct fz *f)
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
		sig = fz_touch(pg_addr(f, p) + (rnd(&f->r, PAGE) & ~7UL), w, 7);
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
			fz_touch(a, 0, 0);
		/* exit cleans up */
	}
	return 0;
}

/* fork: the child touches what it inherited (fz_child()) and exits. */
void op_fork(struct fz *f)
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
		fz_child_crash_slot();
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
