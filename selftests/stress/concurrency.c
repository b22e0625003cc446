// SPDX-License-Identifier: GPL-2.0
/*
 * stress/concurrency.c - the processes of xpmem_stress's concurrency cases
 * (see concurrency.h) and their threads.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../xpmem_test.h"
#include "concurrency.h"
#include "stress.h"

static void thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	if (pthread_create(t, NULL, fn, arg))
		_exit(90);
}

/* ---- owner churn: munmap/mremap/mprotect/fork/exit vs faulting attachers */

struct oc_att {
	struct oc_shared *sh;
	int fd;
	xpmem_apid_t apid;
	uint8_t *win;
	int tid;
};

static void oc_tag(uint8_t *b, unsigned long p, unsigned long k, uint64_t gen)
{
	unsigned long i;

	for (i = p; i < p + k; i++)
		if (i < OC_PAGES / 2)
			*(volatile uint64_t *)(b + i * PAGE) = (uint64_t)i << 32 | gen;
}

int oc_owner(struct oc_shared *sh, int shared, int wfd, uint64_t seed)
{
	int flags = (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS;
	uint8_t *b = reserve_aligned(OC_PAGES * PAGE, 512 * PAGE);
	uint8_t *park = reserve_aligned(OC_PAGES * PAGE, PAGE);
	unsigned long p, k;
	uint64_t gen = 1;
	struct rng r;
	pid_t c;
	int fd = xp_open(), st;

	rng_init(&r, seed, 77);
	if (fd < 0 || !b || !park ||
	    mmap(b, OC_PAGES * PAGE, PROT_READ | PROT_WRITE, flags | MAP_FIXED,
		 -1, 0) != b)
		return 60;
	oc_tag(b, 0, OC_PAGES, gen);
	if (xp_make(fd, b, OC_PAGES * PAGE, 0600, &sh->segid) ||
	    write(wfd, "g", 1) != 1)
		return 61;
	while (!sh->stop) {
		p = rnd(&r, OC_PAGES);
		k = 1 + rnd(&r, OC_PAGES - p < 16 ? OC_PAGES - p : 16);
		gen++;
		switch (rnd(&r, 6)) {
		case 0:
			if (munmap(b + p * PAGE, k * PAGE) ||
			    mmap(b + p * PAGE, k * PAGE, PROT_READ | PROT_WRITE,
				 flags | MAP_FIXED, -1, 0) != b + p * PAGE)
				return 62;
			oc_tag(b, p, k, gen);
			break;
		case 1:		/* away and back: contents preserved */
			if (mremap(b + p * PAGE, k * PAGE, k * PAGE,
				   MREMAP_MAYMOVE | MREMAP_FIXED, park + p * PAGE) ==
			    MAP_FAILED) {
				/* EFAULT: the range spans two mappings */
				if (errno != EFAULT)
					return 63;
				mmap(park + p * PAGE, k * PAGE, PROT_NONE, MAP_PRIVATE |
				     MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
				break;
			}
			if (mremap(park + p * PAGE, k * PAGE, k * PAGE,
				   MREMAP_MAYMOVE | MREMAP_FIXED, b + p * PAGE) ==
			    MAP_FAILED)
				return 64;
			/* the park range is a hole now: reserve it again */
			mmap(park + p * PAGE, k * PAGE, PROT_NONE, MAP_PRIVATE |
			     MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
			break;
		case 2:
			if (mprotect(b + p * PAGE, k * PAGE, PROT_READ) ||
			    mprotect(b + p * PAGE, k * PAGE, PROT_READ | PROT_WRITE))
				return 65;
			break;
		case 3:		/* fork, then write: COW breaks in the owner */
			c = fork_child();
			if (c == 0)
				_exit(0);
			if (c < 0 || waitpid(c, &st, 0) != c)
				return 66;
			oc_tag(b, p, k, gen);
			break;
		case 4:
			if (madvise(b + p * PAGE, k * PAGE, MADV_DONTNEED))
				return 67;
			oc_tag(b, p, k, gen);
			break;
		default:
			oc_tag(b, p, k, gen);
			break;
		}
		sh->owner_it++;
	}
	return 0;	/* exits while the attacher's threads still fault */
}

static void *oc_faulter(void *arg)
{
	struct oc_att *a = arg;
	struct oc_shared *sh = a->sh;
	unsigned long i;
	struct rng r;
	uint64_t v;
	int sig;

	rng_init(&r, (uintptr_t)a, a->tid);
	probe_install();
	while (!sh->stop_att) {
		i = rnd(&r, OC_PAGES);
		if (i < OC_PAGES / 2) {
			sig = touch_read64((uint64_t *)(a->win + i * PAGE), &v);
			/* 0 (a fresh page) or the owner's tag for this page */
			if (!sig && v && v >> 32 != i) {
				__atomic_fetch_add(&sh->bad, 1, __ATOMIC_RELAXED);
				sh->bad_val = v;
				sh->bad_idx = i;
			}
		} else {
			sig = touch_write64((uint64_t *)(a->win + i * PAGE) + a->tid,
					    (uint64_t)i << 32 | 0x80000000u);
		}
		if (sig == SIGBUS)
			__atomic_fetch_add(&sh->sigbus, 1, __ATOMIC_RELAXED);
		else if (sig)
			__atomic_fetch_add(&sh->sigsegv, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->faults, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *oc_reattacher(void *arg)
{
	struct oc_att *a = arg;
	void *got;
	long next = 0;
	int over = 0;

	while (!a->sh->stop_att) {
		/* pace: one re-attach per 64 accesses of the faulters */
		next += 64;
		while (a->sh->faults < next && !a->sh->stop_att)
			sched_yield();
		/* sometimes attach over the live attachment without detaching */
		if (!(over++ % 4) ||
		    xp_attach(a->fd, a->apid, 0, OC_PAGES * PAGE, a->win, &got)) {
			xp_detach(a->fd, a->win);
			xp_attach(a->fd, a->apid, 0, OC_PAGES * PAGE, a->win, &got);
		}
		a->sh->reattach++;
	}
	return NULL;
}

int oc_attacher(struct oc_shared *sh, int rfd, int gofd)
{
	struct oc_att a[3];
	pthread_t t[3];
	void *got, *keep;
	xpmem_apid_t apid;
	char c;
	int fd, i, sig;
	uint8_t *win;

	if (read(rfd, &c, 1) != 1)
		return 70;
	fd = xp_open();
	win = reserve_aligned(OC_PAGES * PAGE, 512 * PAGE);
	if (fd < 0 || !win || xp_get(fd, sh->segid, XPMEM_RDWR, &apid) ||
	    xp_attach(fd, apid, 0, OC_PAGES * PAGE, win, &got) ||
	    xp_attach(fd, apid, 0, OC_PAGES * PAGE, NULL, &keep))
		return 71;
	for (i = 0; i < 3; i++) {
		a[i] = (struct oc_att){ .sh = sh, .fd = fd, .apid = apid,
					.win = win, .tid = i };
		thread_start(&t[i], i < 2 ? oc_faulter : oc_reattacher, &a[i]);
	}
	/* the parent says when the owner has exited and been reaped */
	if (read(gofd, &c, 1) != 1)
		return 72;
	sh->stop_att = 1;
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	/* owner exit revokes the attachment: every access is SIGBUS */
	for (i = 0; i < OC_PAGES; i++) {
		sig = touch((uint8_t *)keep + i * PAGE, 0, 0);
		if (sig == SIGBUS)
			sh->final_sigbus++;
		else
			sh->final_other++;
	}
	xp_detach(fd, keep);
	xp_release(fd, apid);
	close(fd);
	return 0;
}

/* ---- whole-address-space fault vs owner mmap/munmap (livelock case) ---- */

#define LV_PAGES	512

/*
 * Unrelated memory: mmap, touch, mprotect, munmap.  Each takes the owner's
 * mmap_lock for writing, and mprotect and munmap invalidate a range of the
 * whole-address-space segment, which the attacher's fault (a 2 MiB window)
 * must not keep losing to.
 */
static void *lv_mapper(void *arg)
{
	struct lv_shared *sh = arg;
	uint8_t *q;
	int i;

	while (!sh->stop) {
		q = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q == MAP_FAILED)
			_exit(80);
		for (i = 0; i < 4; i++)
			q[i * PAGE] = 1;
		munmap(q, 4 * PAGE);
		__atomic_fetch_add(&sh->owner_it, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int lv_owner(struct lv_shared *sh, int wfd)
{
	uint8_t *b = mmap(NULL, LV_PAGES * PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = xp_open();
	pthread_t t;

	if (fd < 0 || b == MAP_FAILED)
		return 81;
	memset(b, 0x3c, LV_PAGES * PAGE);
	sh->buf = (uintptr_t)b;
	if (xp_make(fd, NULL, XPMEM_MAXADDR_SIZE, 0600, &sh->segid) ||
	    write(wfd, "g", 1) != 1)
		return 82;
	thread_start(&t, lv_mapper, sh);
	lv_mapper(sh);
	pthread_join(t, NULL);
	return 0;
}

struct lv_att {
	struct lv_shared *sh;
	uint8_t *a;
	int tid;
};

static void *lv_faulter(void *arg)
{
	struct lv_att *la = arg;
	struct lv_shared *sh = la->sh;
	struct rng r;
	int sig;

	rng_init(&r, 5, la->tid);
	probe_install();
	while (!sh->stop) {
		/* drop our PTEs so that the next access faults again */
		madvise(la->a, LV_PAGES * PAGE, MADV_DONTNEED);
		sig = touch(la->a + rnd(&r, LV_PAGES) * PAGE, 0, 0);
		if (sig && !sh->stop)
			__atomic_fetch_add(&sh->sigs, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->faults, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int lv_attacher(struct lv_shared *sh, int rfd)
{
	struct lv_att la[2];
	pthread_t t[2];
	xpmem_apid_t apid;
	void *a;
	int fd, i;
	char c;

	if (read(rfd, &c, 1) != 1)
		return 83;
	fd = xp_open();
	if (fd < 0 || xp_get(fd, sh->segid, XPMEM_RDONLY, &apid) ||
	    xp_attach(fd, apid, sh->buf, LV_PAGES * PAGE, NULL, &a))
		return 84;
	for (i = 0; i < 2; i++) {
		la[i] = (struct lv_att){ .sh = sh, .a = a,
					 .tid = i };
		thread_start(&t[i], lv_faulter, &la[i]);
	}
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	xp_detach(fd, a);
	xp_release(fd, apid);
	close(fd);
	return 0;
}

/* ---- mutual RDWR attachments, mkwrite, and mmap/munmap on both sides ---- */

#define MK_PAGES	64

struct mk_ctx {
	struct mk_shared *sh;
	struct mk_side *me;
	uint8_t *a;
};

static void *mk_writer(void *arg)
{
	struct mk_ctx *m = arg;
	struct rng r;
	unsigned long p;
	int j, sig;

	rng_init(&r, 9, (uintptr_t)m->me);
	probe_install();
	while (!m->sh->stop) {
		madvise(m->a, MK_PAGES * PAGE, MADV_DONTNEED);
		for (j = 0; j < 4; j++) {
			p = rnd(&r, MK_PAGES);
			/* read (maps read-only), then write: ->mkwrite */
			sig = touch(m->a + p * PAGE, 0, 0);
			if (!sig)
				sig = touch(m->a + p * PAGE + 64, 1, (uint8_t)j);
			if (sig && !m->sh->stop)
				__atomic_fetch_add(&m->me->sigs, 1, __ATOMIC_RELAXED);
		}
		m->me->w_it++;
	}
	return NULL;
}

int mk_side(struct mk_shared *sh, int i, int rfd, int wfd)
{
	struct mk_side *me = &sh->side[i], *peer = &sh->side[!i];
	uint8_t *b = mmap(NULL, MK_PAGES * PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *q;
	struct mk_ctx m = { .sh = sh, .me = me };
	int fd = xp_open();
	xpmem_apid_t apid;
	pthread_t t;
	void *a;
	char c;

	if (fd < 0 || b == MAP_FAILED)
		return 85;
	memset(b, i + 1, MK_PAGES * PAGE);
	me->buf = (uintptr_t)b;
	if (xp_make(fd, NULL, XPMEM_MAXADDR_SIZE, 0600, &me->segid) ||
	    write(wfd, "r", 1) != 1 || read(rfd, &c, 1) != 1)
		return 86;
	if (xp_get(fd, peer->segid, XPMEM_RDWR, &apid) ||
	    xp_attach(fd, apid, peer->buf, MK_PAGES * PAGE, NULL, &a))
		return 87;
	m.a = a;
	thread_start(&t, mk_writer, &m);
	while (!sh->stop) {
		q = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q == MAP_FAILED)
			return 88;
		q[0] = 1;
		munmap(q, 16 * PAGE);
		me->m_it++;
	}
	pthread_join(t, NULL);
	/* both sides stop writing before either removes its segment */
	if (write(wfd, "d", 1) != 1 || read(rfd, &c, 1) != 1)
		return 89;
	xp_detach(fd, a);
	xp_release(fd, apid);
	close(fd);
	return 0;
}
