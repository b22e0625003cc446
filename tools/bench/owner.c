// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * owner.c - the owner's side of one kind and size: it creates an empty
 * memfd and forks the attacher; only then does it allocate and fill its
 * memory and the memfd (nothing is shared copy-on-write, as between
 * unrelated processes), export its memory with xpmem_make() and send the
 * segid through a pipe; the attacher sends its numbers back through
 * another.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* One kind and size on the owner's side, from run_fits() to run_finish(). */
struct owner_run {
	struct bench_case bc;
	char lbl[24];		/* the size, for messages */
	unsigned int mfd_flags;
	int memfd;
	int to_child[2], to_owner[2];
	pid_t pid;		/* the attacher */
	char *buf;		/* the owner's memory, or MAP_FAILED */
	char *m;		/* the memfd's mapping, or MAP_FAILED */
	struct job job;
	int sent;		/* the job went to the attacher */
};

/* Skip @c: say why (@fmt) in its note. */
static void note(struct cell *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->note, sizeof(c->note), fmt, ap);
	va_end(ap);
	c->state = -1;
}

/* The owner's memory of @kind, filled after the fork; MAP_FAILED on error. */
static void *owner_alloc(int kind, size_t size, size_t maplen)
{
	void *p;

	switch (kind) {
	case K_4K:
		p = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED)
			madvise(p, maplen, MADV_NOHUGEPAGE);
		return p;
	case K_THP:
		p = map_aligned(maplen, MAP_PRIVATE | MAP_ANONYMOUS, -1);
		if (p != MAP_FAILED)
			madvise(p, maplen, MADV_HUGEPAGE);
		return p;
	case K_HUGETLB:
		return mmap(NULL, maplen, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
			    HUGE_2MB_FLAG, -1, 0);
	default:
		p = xpmem_ext_alloc(size, 0);
		return p ? p : MAP_FAILED;
	}
}

static void owner_free(int kind, void *p, size_t maplen)
{
	if (kind == K_ALLOC)
		xpmem_ext_free(p);
	else
		munmap(p, maplen);
}


/*
 * Whether the huge pages and the memory @o needs are there: 1, or 0 with
 * @c skipped and a note saying why.
 */
static int run_fits(struct owner_run *o, struct cell *c)
{
	size_t maplen = o->bc.maplen, size = o->bc.size;
	long avail_kb, need_kb;

	if (o->bc.kind == K_HUGETLB) {
		long free_pages = read_long_file(HUGETLB_2MB_DIR "free_hugepages");
		long need = 2 * (long)(maplen / HPAGE);

		if (free_pages <= 0) {
			note(c, "%s: skipped: no free 2 MiB huge pages (%s); reserve some: echo N > /proc/sys/vm/nr_hugepages",
			     o->lbl, free_pages < 0 ? "no " HUGETLB_2MB_DIR : "0 free");
			return 0;
		}
		if (free_pages < need) {
			note(c, "%s: skipped: needs %ld free 2 MiB huge pages (owner %ld + memfd %ld), %ld free",
			     o->lbl, need, need / 2, need / 2, free_pages);
			return 0;
		}
		o->mfd_flags |= MFD_HUGETLB | HUGE_2MB_FLAG;
	}
	/* owner memory + memfd (not hugetlb: reserved already) + 2 local buffers */
	need_kb = (long)((o->bc.kind == K_HUGETLB ? 0 : 2 * maplen) + 2 * size) / 1024;
	avail_kb = meminfo_kb("MemAvailable");
	if (avail_kb > 0 && need_kb > avail_kb - avail_kb / 8) {
		note(c, "%s: skipped: needs about %ld MiB of memory, %ld MiB available",
		     o->lbl, need_kb / 1024, avail_kb / 1024);
		return 0;
	}
	return 1;
}

/*
 * The results' array, the empty memfd, the pipes and the attacher: 0, or
 * 1 on an error (reported on stderr; nothing to undo but the memfd,
 * closed here).
 */
static int run_fork(struct owner_run *o, struct cell *c)
{
	c->v = calloc(NMETRICS * o->bc.repeats, sizeof(double));
	if (!c->v)
		return odie("calloc");
	o->memfd = memfd_create("xpmem-bench", o->mfd_flags);
	if (o->memfd < 0)
		return odie("memfd_create");
	if (ftruncate(o->memfd, o->bc.maplen)) {
		close(o->memfd);
		return odie("memfd ftruncate");
	}
	if (pipe(o->to_child) || pipe(o->to_owner)) {
		close(o->memfd);
		return odie("pipe");
	}
	fflush(stdout);
	fflush(stderr);
	o->pid = fork();
	if (o->pid < 0) {
		close(o->memfd);
		return odie("fork");
	}
	if (o->pid == 0) {
		close(o->to_child[1]);
		close(o->to_owner[0]);
		_exit(attacher(&o->bc, o->to_child[0], o->to_owner[1],
			       o->memfd, getppid()));
	}
	close(o->to_child[0]);
	close(o->to_owner[1]);
	/* Yama ptrace_scope 1 lets a process read only its descendants */
	prctl(PR_SET_PTRACER, o->pid, 0, 0, 0);
	return 0;
}

/*
 * The owner's memory and the memfd, touched only after the fork: 0, or
 * -1 with *@rc the run's result (0: skipped with a note, 1: an error).
 */
static int run_memory(struct owner_run *o, struct cell *c, int *rc)
{
	size_t size = o->bc.size, maplen = o->bc.maplen;
	int kind = o->bc.kind;

	*rc = 1;
	o->buf = owner_alloc(kind, size, maplen);
	if (o->buf == MAP_FAILED) {
		if (kind == K_HUGETLB) {
			note(c, "%s: skipped: MAP_HUGETLB of %zu MiB: %s", o->lbl,
			     maplen / MIB, strerror(errno));
			*rc = 0;
		} else {
			odie("owner memory");
		}
		return -1;
	}
	memset(o->buf, PATTERN, size);
	o->m = map_memfd(kind, o->memfd, maplen);
	if (o->m == MAP_FAILED) {
		if (kind == K_HUGETLB) {
			note(c, "%s: skipped: mmap of a %zu MiB MFD_HUGETLB memfd: %s",
			     o->lbl, maplen / MIB, strerror(errno));
			*rc = 0;
		} else {
			odie("mmap memfd");
		}
		return -1;
	}
	memset(o->m, PATTERN, size);	/* stays mapped, as a transport's owner keeps it */
	return 0;
}

/* Export the memory, send the job, take the attacher's numbers: 0 or 1. */
static int run_measure(struct owner_run *o, struct cell *c)
{
	size_t vlen = sizeof(double) * NMETRICS * o->bc.repeats;
	double opct, mpct;
	int rep;

	o->job.segid = xpmem_make(o->buf, o->bc.size, XPMEM_PERMIT_MODE,
				  (void *)0600);
	if (o->job.segid == -1)
		return odie("xpmem_make");
	o->job.owner = (uintptr_t)o->buf;
	opct = huge_pct(o->buf, o->bc.maplen);
	mpct = huge_pct(o->m, o->bc.maplen);
	if (full_write(o->to_child[1], &o->job, sizeof(o->job)))
		return odie("write to the attacher");
	o->sent = 1;
	if (full_read(o->to_owner[0], c->v, vlen)) {
		fprintf(stderr, "xpmem-bench: %s %s: the attacher failed\n",
			kind_name[o->bc.kind], o->lbl);
		return 1;
	}
	for (rep = 0; rep < o->bc.repeats; rep++) {
		c->v[M_OWNER_HUGE * o->bc.repeats + rep] = opct;
		c->v[M_MEMFD_HUGE * o->bc.repeats + rep] = mpct;
	}
	c->state = 1;
	return 0;
}

/* Reap the attacher and undo run_fork() and after: the run's result. */
static int run_finish(struct owner_run *o, struct cell *c, int rc)
{
	int status;

	if (!o->sent) {	/* tell the attacher there is nothing to do */
		struct job none = { 0, 0 };

		(void)!full_write(o->to_child[1], &none, sizeof(none));
	}
	close(o->to_child[1]);
	close(o->to_owner[0]);
	if (waitpid(o->pid, &status, 0) != o->pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		if (rc == 0 && c->state == 1) {
			fprintf(stderr, "xpmem-bench: %s %s: the attacher failed\n",
				kind_name[o->bc.kind], o->lbl);
			c->state = 0;
		}
		rc = 1;
	}
	if (o->job.segid > 0)
		xpmem_remove(o->job.segid);
	if (o->m != MAP_FAILED)
		munmap(o->m, o->bc.maplen);
	if (o->buf != MAP_FAILED)
		owner_free(o->bc.kind, o->buf, o->bc.maplen);
	close(o->memfd);
	return rc;
}

/*
 * Measure one kind and size: 0 (measured or skipped with a note in @c),
 * 1 on an error (reported on stderr).
 */
int run_one(int kind, size_t size, int repeats, struct cell *c)
{
	struct owner_run o = {
		.bc = { .kind = kind, .size = size, .maplen = size,
			.repeats = repeats },
		.mfd_flags = MFD_CLOEXEC, .memfd = -1,
		.buf = MAP_FAILED, .m = MAP_FAILED,
	};
	int rc;

	if (kind == K_THP || kind == K_HUGETLB)
		o.bc.maplen = (size + HPAGE - 1) & ~(HPAGE - 1);
	size_label(size, o.lbl, sizeof(o.lbl));
	if (!run_fits(&o, c))
		return 0;
	if (run_fork(&o, c))
		return 1;
	if (!run_memory(&o, c, &rc))
		rc = run_measure(&o, c);
	return run_finish(&o, c, rc);
}
