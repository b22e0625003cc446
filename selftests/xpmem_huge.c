// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_huge - huge owner pages (THP, hugetlb) in attachments: mapped with
 * one PMD where the kernel can (6.12: the module parameter huge_mappings
 * exists and the counter pmd_mapped grows), 4 KiB PTEs elsewhere, and in
 * both cases the same bytes as the owner through every owner event that
 * changes a huge mapping (split, collapse, partial munmap, mprotect,
 * MADV_DONTNEED, migration, COW after fork) and every attacher-side
 * operation on it (mprotect, MADV_DONTNEED, partial munmap, mremap).
 *
 * The test process owns the memory; a forked child attaches it and runs
 * commands the parent sends over a pipe (struct cmd), answering each with
 * one int, so every step is checked in order without sleeps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

#define HPAGE		(2UL << 20)
#define LEN		(2 * HPAGE)	/* every test: two huge pages */

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif
#ifndef MPOL_BIND
#define MPOL_BIND	2
#endif
#ifndef MPOL_MF_MOVE
#define MPOL_MF_MOVE	(1 << 1)
#endif

/* What the attaching child does on command, answering with one int. */
enum {
	C_CHECK,	/* [off, off+len) holds pattern seed: 0 / -1 */
	C_ZERO,		/* [off, off+len) reads as zeros: 0 / -1 */
	C_FILL,		/* write pattern seed over [off, off+len): 0 */
	C_PROBE_R,	/* read one byte at off: 0 or the signal */
	C_PROBE_W,	/* write one byte at off: 0 or the signal */
	C_MPROTECT,	/* mprotect(off, len, seed): 0 / errno */
	C_DONTNEED,	/* madvise(off, len, MADV_DONTNEED): 0 / errno */
	C_MUNMAP,	/* munmap(off, len): 0 / errno */
	C_MREMAP,	/* move the whole attachment elsewhere: 0 / errno */
	C_ADDR,		/* attachment address modulo 2 MiB */
	C_EXIT,
};

struct cmd {
	int op;
	unsigned int seed;
	size_t off, len;
};

/* Huge PMDs in attachments: only where the module can make them. */
static int huge_supported(void)
{
	char buf[4] = "";
	int fd = open(PARAM_DIR "huge_mappings", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (read(fd, buf, sizeof(buf) - 1) < 1)
		buf[0] = 'N';
	close(fd);
	return buf[0] == 'Y';
}

/* kB of AnonHugePages in the VMA of /proc/self/smaps starting at @p. */
static long anon_huge_kb(void *p)
{
	char line[256], start[32];
	long kb = -1;
	int in = 0;
	FILE *f;

	snprintf(start, sizeof(start), "%lx-", (unsigned long)p);
	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' '))
			in = !strncmp(line, start, strlen(start));
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* @len bytes, 2 MiB aligned, THP if the kernel gives it, filled. */
static char *thp_alloc(size_t len, unsigned int seed)
{
	char *raw = mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p;

	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	munmap(p + len, (size_t)(raw + HPAGE - p));
	madvise(p, len, MADV_HUGEPAGE);
	fill(p, len, seed);
	return p;
}

static int child_loop(xpmem_segid_t segid, struct chan *ch)
{
	xpmem_apid_t apid;
	struct cmd c;
	char *a;
	int fd, r;

	if (child_attach(segid, XPMEM_RDWR, 0, LEN, &fd, &apid, &a))
		return 1;
	while (!recv_msg(ch->to_child[0], &c, sizeof(c))) {
		switch (c.op) {
		case C_CHECK:
			r = check(a + c.off, c.len, c.seed);
			break;
		case C_ZERO:
			r = all_bytes(a + c.off, c.len, 0);
			break;
		case C_FILL:
			fill(a + c.off, c.len, c.seed);
			r = 0;
			break;
		case C_PROBE_R:
		case C_PROBE_W:
			r = probe(a + c.off, c.op == C_PROBE_W, 1);
			break;
		case C_MPROTECT:
			r = mprotect(a + c.off, c.len, (int)c.seed) ? errno : 0;
			break;
		case C_DONTNEED:
			r = madvise(a + c.off, c.len, MADV_DONTNEED) ? errno : 0;
			break;
		case C_MUNMAP:
			r = munmap(a + c.off, c.len) ? errno : 0;
			break;
		case C_MREMAP: {
			/* a 2 MiB-congruent new place, so PMDs can move */
			char *dst = mmap(NULL, LEN + HPAGE, PROT_NONE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			void *m;

			if (dst == MAP_FAILED) {
				r = errno;
				break;
			}
			dst += ((uintptr_t)a - (uintptr_t)dst) & (HPAGE - 1);
			m = mremap(a, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED,
				   dst);
			r = m == MAP_FAILED ? errno : 0;
			if (!r)
				a = m;
			break;
		}
		case C_ADDR:
			r = (int)((uintptr_t)a & (HPAGE - 1));
			break;
		default:
			return 0;
		}
		if (send_msg(ch->to_parent[1], &r, sizeof(r)))
			return 2;
	}
	return 0;
}

FIXTURE(huge)
{
	int fd;
	int huge;		/* the module maps PMDs */
	char *buf;		/* the owner's memory */
	size_t maplen;		/* what to munmap at the end */
	xpmem_segid_t segid;
	struct chan ch;
	pid_t child;
};

FIXTURE_SETUP(huge)
{
	self->fd = xp_open();
	if (self->fd < 0)
		SKIP(return, "no %s (module not loaded)", XPMEM_DEV_PATH);
	self->huge = huge_supported();
	self->child = -1;
}

FIXTURE_TEARDOWN(huge)
{
	struct cmd c = { .op = C_EXIT };

	if (self->child > 0) {
		send_msg(self->ch.to_child[1], &c, sizeof(c));
		close(self->ch.to_child[1]);
		wait_child(self->child);
	}
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Export [buf, buf + LEN) and start the attaching child.  The child does
 * not inherit the buffer (MADV_DONTFORK): shared copy-on-write, the
 * owner's huge pages would be split by the first write.
 */
static int spawn(struct _test_data_huge *self)
{
	if (chan_init(&self->ch))
		return -1;
	self->child = fork_child();
	if (self->child < 0)
		return -1;
	if (self->child == 0) {
		chan_child(&self->ch);
		_exit(child_loop(self->segid, &self->ch));
	}
	chan_parent(&self->ch);
	return 0;
}

static int start(struct _test_data_huge *self)
{
	if (madvise(self->buf, LEN, MADV_DONTFORK) ||
	    xp_make(self->fd, self->buf, LEN, 0600, &self->segid))
		return -1;
	return spawn(self);
}

/* Run one command in the child; its answer, or -1000 if it died. */
static int run(struct _test_data_huge *self, int op, size_t off, size_t len,
	       unsigned int seed)
{
	struct cmd c = { .op = op, .seed = seed, .off = off, .len = len };
	int r;

	if (send_msg(self->ch.to_child[1], &c, sizeof(c)) ||
	    recv_msg(self->ch.to_parent[0], &r, sizeof(r)))
		return -1000;
	return r;
}

#define RUN(op, off, len, seed) run(self, op, off, len, seed)

/*
 * An owner file mapping of two huge pages' size over a file of two 4 KiB
 * pages, with no owner page tables yet: a PMD fault's window reaches past
 * the end of the file.  The attacher still reads and writes the file's
 * pages (the PMD fault falls back to a 4 KiB one), maps no PMD for them,
 * and gets SIGBUS past the end, as the owner does.
 */
TEST_F(huge, file_past_eof_in_pmd_window)
{
	char *raw;
	int mfd;

	mfd = memfd_create("xpmem-huge", MFD_CLOEXEC);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(0, ftruncate(mfd, 2 * PAGE));
	raw = mmap(NULL, LEN + HPAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	ASSERT_NE(MAP_FAILED, raw);
	self->buf = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	ASSERT_EQ(self->buf, mmap(self->buf, LEN, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_FIXED, mfd, 0));
	ASSERT_EQ(0, start(self));
	if (self->huge)
		ASSERT_EQ(0, RUN(C_ADDR, 0, 0, 0));
	ASSERT_EQ(0, RUN(C_ZERO, 0, 2 * PAGE, 0));
	ASSERT_EQ(0, RUN(C_FILL, 0, 2 * PAGE, 7));
	ASSERT_EQ(0, check(self->buf, 2 * PAGE, 7));
	ASSERT_EQ(SIGBUS, RUN(C_PROBE_R, 2 * PAGE, 0, 0));
	ASSERT_EQ(SIGBUS, RUN(C_PROBE_W, HPAGE + 5, 0, 0));
	munmap(raw, LEN + HPAGE);
	close(mfd);
}

/*
 * A THP owner: the attach address is congruent with the owner's, reads
 * map PMDs (at most a fault per huge page, with slack for the PTE
 * fallback's window), the first write to a read-only PMD makes it
 * writable in one more fault, and the owner sees the bytes.
 */
TEST_F(huge, thp_read_then_write)
{
	long pmd0, f0, f1;

	self->buf = thp_alloc(LEN, 1);
	ASSERT_NE(NULL, self->buf);
	if (anon_huge_kb(self->buf) < (long)(LEN >> 10))
		SKIP(return, "no THP for the owner (AnonHugePages %ld kB)",
		     anon_huge_kb(self->buf));
	ASSERT_EQ(0, start(self));
	if (self->huge)
		ASSERT_EQ((int)((uintptr_t)self->buf & (HPAGE - 1)),
			  RUN(C_ADDR, 0, 0, 0));
	pmd0 = stat_read("pmd_mapped");
	f0 = stat_read("faults");
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 1));
	f1 = stat_read("faults");
	TH_LOG("read pass: %ld faults, %ld PMDs", f1 - f0,
	       stat_read("pmd_mapped") - pmd0);
	if (self->huge) {
		ASSERT_EQ(2, stat_read("pmd_mapped") - pmd0);
		ASSERT_LE(f1 - f0, 2);
	}
	ASSERT_EQ(0, RUN(C_FILL, 0, LEN, 2));
	TH_LOG("write pass: %ld faults", stat_read("faults") - f1);
	if (self->huge)
		ASSERT_LE(stat_read("faults") - f1, 2);
	ASSERT_EQ(0, check(self->buf, LEN, 2));
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 2));
}

/*
 * A vectored segment of two THP buffers, the higher one first: each
 * buffer maps with a PMD of its own, and writes land in the right one.
 */
TEST_F(huge, vectored_thp_buffers)
{
	char *b0 = thp_alloc(HPAGE, 7), *b1 = thp_alloc(HPAGE, 8), *t;
	struct xpmem_ext_iov iov[2];
	struct xpmem_ext_make m = {
		.vaddr = (uintptr_t)iov, .size = 2,
		.flags = XPMEM_EXT_MAKE_IOV, .mode = 0600,
	};
	unsigned int seed0 = 7, seed1 = 8;
	static char two[8192];
	long pmd0, f0;

	ASSERT_NE(NULL, b0);
	ASSERT_NE(NULL, b1);
	if (anon_huge_kb(b0) < (long)(HPAGE >> 10) ||
	    anon_huge_kb(b1) < (long)(HPAGE >> 10))
		SKIP(return, "no THP for the owner");
	if (b0 < b1) {
		t = b0, b0 = b1, b1 = t;
		seed0 = 8, seed1 = 7;
	}
	ASSERT_EQ(0, madvise(b0, HPAGE, MADV_DONTFORK));
	ASSERT_EQ(0, madvise(b1, HPAGE, MADV_DONTFORK));
	iov[0] = (struct xpmem_ext_iov){ (uintptr_t)b0, HPAGE };
	iov[1] = (struct xpmem_ext_iov){ (uintptr_t)b1, HPAGE };
	ASSERT_EQ(0, xp_ioctl(self->fd, XPMEM_CMD_EXT_MAKE, &m));
	self->segid = m.segid;
	ASSERT_EQ(0, spawn(self));
	pmd0 = stat_read("pmd_mapped");
	f0 = stat_read("faults");
	ASSERT_EQ(0, RUN(C_CHECK, 0, HPAGE, seed0));
	ASSERT_EQ(0, RUN(C_CHECK, HPAGE, HPAGE, seed1));
	TH_LOG("read pass: %ld faults, %ld PMDs", stat_read("faults") - f0,
	       stat_read("pmd_mapped") - pmd0);
	if (self->huge) {
		ASSERT_EQ(2, stat_read("pmd_mapped") - pmd0);
		ASSERT_LE(stat_read("faults") - f0, 2);
	}
	/* a write across the boundary: its halves in the two buffers */
	ASSERT_EQ(0, RUN(C_FILL, HPAGE - 4096, 8192, 9));
	memcpy(two, b0 + HPAGE - 4096, 4096);
	memcpy(two + 4096, b1, 4096);
	ASSERT_EQ(0, check(two, 8192, 9));
	ASSERT_EQ(0, RUN(C_CHECK, HPAGE - 4096, 8192, 9));
}

/* Written first: one fault per huge page maps it writable at once. */
TEST_F(huge, thp_write_first_one_fault)
{
	long pmd0, f0;

	self->buf = thp_alloc(LEN, 3);
	ASSERT_NE(NULL, self->buf);
	if (anon_huge_kb(self->buf) < (long)(LEN >> 10))
		SKIP(return, "no THP for the owner");
	ASSERT_EQ(0, start(self));
	pmd0 = stat_read("pmd_mapped");
	f0 = stat_read("faults");
	ASSERT_EQ(0, RUN(C_FILL, 0, LEN, 4));
	TH_LOG("write-first pass: %ld faults, %ld PMDs",
	       stat_read("faults") - f0, stat_read("pmd_mapped") - pmd0);
	if (self->huge) {
		ASSERT_EQ(2, stat_read("pmd_mapped") - pmd0);
		ASSERT_LE(stat_read("faults") - f0, 2);
	}
	ASSERT_EQ(0, check(self->buf, LEN, 4));
}

/*
 * Owner events on huge-mapped pages, each checked from the attacher:
 * writes in place, mprotect (attacher writes SIGBUS, reads work), a THP
 * split by a partial mprotect, MADV_DONTNEED, migration to the other
 * NUMA node, partial munmap (SIGBUS there, the rest intact).
 */
TEST_F(huge, thp_owner_events)
{
	unsigned long node1 = 2;

	self->buf = thp_alloc(LEN, 5);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, start(self));
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 5));

	/* in place */
	fill(self->buf, LEN, 6);
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 6));

	/* mprotect: the owner's read-only page is never written */
	ASSERT_EQ(0, mprotect(self->buf, HPAGE, PROT_READ));
	ASSERT_EQ(0, RUN(C_PROBE_R, 0, 0, 0));
	ASSERT_EQ(SIGBUS, RUN(C_PROBE_W, 0, 0, 0));
	ASSERT_EQ(0, check(self->buf, HPAGE, 6));
	ASSERT_EQ(0, mprotect(self->buf, HPAGE, PROT_READ | PROT_WRITE));
	ASSERT_EQ(0, RUN(C_FILL, 0, HPAGE, 7));
	ASSERT_EQ(0, check(self->buf, HPAGE, 7));

	/* split the second THP by protecting half of it, then write both */
	ASSERT_EQ(0, mprotect(self->buf + HPAGE, HPAGE / 2, PROT_READ));
	ASSERT_EQ(0, mprotect(self->buf + HPAGE, HPAGE / 2,
			      PROT_READ | PROT_WRITE));
	fill(self->buf + HPAGE, HPAGE, 8);
	ASSERT_EQ(0, RUN(C_CHECK, HPAGE, HPAGE, 8));
	ASSERT_EQ(0, RUN(C_FILL, HPAGE, HPAGE, 9));
	ASSERT_EQ(0, check(self->buf + HPAGE, HPAGE, 9));

	/* MADV_DONTNEED: zeros, then new owner data */
	ASSERT_EQ(0, madvise(self->buf, HPAGE, MADV_DONTNEED));
	ASSERT_EQ(0, RUN(C_ZERO, 0, HPAGE, 0));
	fill(self->buf, HPAGE, 10);
	ASSERT_EQ(0, RUN(C_CHECK, 0, HPAGE, 10));

	/* migration to node 1 (the VM has two nodes) keeps the bytes */
	if (syscall(SYS_mbind, self->buf, LEN, MPOL_BIND, &node1,
		    sizeof(node1) * 8, MPOL_MF_MOVE) == 0) {
		ASSERT_EQ(0, RUN(C_CHECK, 0, HPAGE, 10));
		ASSERT_EQ(0, RUN(C_CHECK, HPAGE, HPAGE, 9));
		fill(self->buf, LEN, 11);
		ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 11));
	} else {
		TH_LOG("mbind: %s (migration not checked)", strerror(errno));
		fill(self->buf, LEN, 11);
	}

	/* partial munmap of the owner: SIGBUS there, the rest intact */
	ASSERT_EQ(0, munmap(self->buf + HPAGE + HPAGE / 2, HPAGE / 2));
	ASSERT_EQ(SIGBUS, RUN(C_PROBE_R, HPAGE + HPAGE / 2, 0, 0));
	ASSERT_EQ(0, RUN(C_CHECK, 0, HPAGE + HPAGE / 2, 11));
}

/*
 * COW after fork in the owner: an attacher write breaks COW in the owner
 * (the owner sees it), the owner's child keeps the old bytes.
 */
TEST_F(huge, thp_owner_fork_cow)
{
	struct chan sib;
	pid_t pid;
	char c;

	self->buf = thp_alloc(LEN, 12);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, start(self));
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 12));	/* PMDs mapped */
	ASSERT_EQ(0, madvise(self->buf, LEN, MADV_DOFORK));
	ASSERT_EQ(0, chan_init(&sib));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		chan_child(&sib);
		if (recv_msg(sib.to_child[0], &c, 1))
			_exit(1);
		_exit(check(self->buf, LEN, 12) ? 2 : 0);
	}
	chan_parent(&sib);
	ASSERT_EQ(0, RUN(C_FILL, 0, LEN, 13));
	ASSERT_EQ(0, check(self->buf, LEN, 13));
	ASSERT_EQ(0, send_msg(sib.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(pid));
}

/*
 * MADV_COLLAPSE in the owner after the attacher mapped 4 KiB pages: the
 * attacher keeps seeing the owner's bytes.  (Its range stays PTE-mapped:
 * the PTE table is only freed when the attachment is unmapped.)
 */
TEST_F(huge, owner_collapse)
{
	long pmd0;

	self->buf = thp_alloc(LEN, 14);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, madvise(self->buf, LEN, MADV_NOHUGEPAGE));
	/* make it 4 KiB pages: split by a partial mprotect round trip */
	ASSERT_EQ(0, mprotect(self->buf, PAGE, PROT_READ));
	ASSERT_EQ(0, mprotect(self->buf + HPAGE, PAGE, PROT_READ));
	ASSERT_EQ(0, mprotect(self->buf, LEN, PROT_READ | PROT_WRITE));
	ASSERT_EQ(0, start(self));
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 14));
	ASSERT_EQ(0, madvise(self->buf, LEN, MADV_HUGEPAGE));
	if (madvise(self->buf, LEN, MADV_COLLAPSE))
		SKIP(return, "MADV_COLLAPSE: %s", strerror(errno));
	pmd0 = stat_read("pmd_mapped");
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 14));
	TH_LOG("after the collapse: %ld PMDs mapped",
	       stat_read("pmd_mapped") - pmd0);
	fill(self->buf, LEN, 15);
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 15));
	ASSERT_EQ(0, RUN(C_FILL, 0, LEN, 16));
	ASSERT_EQ(0, check(self->buf, LEN, 16));
}

/*
 * Attacher-side operations on huge-mapped pages: mprotect (a write to a
 * read-only attachment range is SIGSEGV; back to read-write it works),
 * MADV_DONTNEED (refaults the same bytes), mremap to another 2 MiB-
 * congruent place, partial munmap (the rest stays).
 */
TEST_F(huge, attacher_side_ops)
{
	self->buf = thp_alloc(LEN, 17);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, start(self));
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 17));
	ASSERT_EQ(0, RUN(C_MPROTECT, 0, LEN, PROT_READ));
	ASSERT_EQ(SIGSEGV, RUN(C_PROBE_W, PAGE, 0, 0));
	ASSERT_EQ(0, RUN(C_MPROTECT, 0, LEN, PROT_READ | PROT_WRITE));
	ASSERT_EQ(0, RUN(C_FILL, 0, LEN, 18));
	ASSERT_EQ(0, check(self->buf, LEN, 18));
	ASSERT_EQ(0, RUN(C_DONTNEED, HPAGE / 2, HPAGE, 0));
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 18));
	ASSERT_EQ(0, RUN(C_MREMAP, 0, 0, 0));
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 18));
	fill(self->buf, LEN, 19);
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 19));
	ASSERT_EQ(0, RUN(C_MUNMAP, HPAGE - PAGE, 2 * PAGE, 0));
	ASSERT_EQ(0, RUN(C_CHECK, 0, HPAGE - PAGE, 19));
	fill(self->buf + HPAGE + PAGE, HPAGE - PAGE, 20);
	ASSERT_EQ(0, RUN(C_CHECK, HPAGE + PAGE, HPAGE - PAGE, 20));
}

/* A hugetlb owner (the guest reserves huge pages): PMDs, same bytes. */
TEST_F(huge, hugetlb_owner)
{
	long pmd0;

	self->buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (self->buf == MAP_FAILED)
		SKIP(return, "no hugetlb pages: %s", strerror(errno));
	fill(self->buf, LEN, 20);
	ASSERT_EQ(0, start(self));
	pmd0 = stat_read("pmd_mapped");
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 20));
	if (self->huge)
		ASSERT_EQ(2, stat_read("pmd_mapped") - pmd0);
	ASSERT_EQ(0, RUN(C_FILL, 0, LEN, 21));
	ASSERT_EQ(0, check(self->buf, LEN, 21));
	ASSERT_EQ(0, RUN(C_DONTNEED, 0, HPAGE, 0));
	ASSERT_EQ(0, RUN(C_CHECK, 0, LEN, 21));
}

/* Attacher threads of the race test: touch or discard until told to stop. */
struct racer {
	char *a;
	int kind;		/* 0 read, 1 write, 2 MADV_DONTNEED */
	volatile int *stop;
	long rounds;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	volatile char *v = r->a;
	size_t off;

	/*
	 * Never the first page of a huge page: the owner makes it read-only
	 * now and then, and a write there is SIGBUS (as it must be).
	 */
	while (!*r->stop) {
		for (off = PAGE * 61; off < LEN; off += PAGE * 61) {
			if (r->kind == 0)
				(void)v[off];
			else if (r->kind == 1)
				v[off] = (char)off;
		}
		if (r->kind == 2)
			madvise(r->a + (r->rounds & 1) * HPAGE, HPAGE,
				MADV_DONTNEED);
		r->rounds++;
		sched_yield();	/* two CPUs: let the owner run too */
	}
	return NULL;
}

/*
 * Huge and 4 KiB mappings of one attachment racing: attacher threads
 * read, write and MADV_DONTNEED (so slots go empty and fill again with
 * PMDs or PTE tables) while the owner turns its memory from THP to 4 KiB
 * pages and back.  Nothing may crash or warn (the console is checked),
 * both sides progress, and afterwards the attacher sees the owner's bytes.
 */
TEST_F_TIMEOUT(huge, pmd_and_pte_faults_race, 240)
{
	struct chan ch;
	int rounds = 24, i;
	pid_t pid;
	char c;

	self->buf = thp_alloc(LEN, 22);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, madvise(self->buf, LEN, MADV_DONTFORK));
	ASSERT_EQ(0, xp_make(self->fd, self->buf, LEN, 0600, &self->segid));
	ASSERT_EQ(0, chan_init(&ch));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct racer r[3];
		pthread_t t[3];
		volatile int stop = 0;
		xpmem_apid_t apid;
		char *a;
		int fd, k;

		chan_child(&ch);
		if (child_attach(self->segid, XPMEM_RDWR, 0, LEN, &fd, &apid,
				 &a))
			_exit(1);
		for (k = 0; k < 3; k++) {
			r[k] = (struct racer){ .a = a, .kind = k, .stop = &stop };
			if (pthread_create(&t[k], NULL, racer_main, &r[k]))
				_exit(2);
		}
		if (send_msg(ch.to_parent[1], "r", 1) ||
		    recv_msg(ch.to_child[0], &c, 1))
			_exit(3);
		stop = 1;
		for (k = 0; k < 3; k++)
			pthread_join(t[k], NULL);
		for (k = 0; k < 3; k++) {
			printf("# racer %d: %ld rounds\n", k, r[k].rounds);
			if (!r[k].rounds)
				_exit(10 + k);
		}
		fflush(stdout);
		/* quiet now: the owner's last bytes */
		if (send_msg(ch.to_parent[1], "q", 1) ||
		    recv_msg(ch.to_child[0], &c, 1))
			_exit(4);
		_exit(check(a, LEN, 23) ? 5 : 0);
	}
	chan_parent(&ch);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &c, 1));
	TH_LOG("owner: %d rounds of DONTNEED, refill, split", rounds);
	for (i = 0; i < rounds; i++) {
		char *h = self->buf + (i & 1) * HPAGE;

		ASSERT_EQ(0, madvise(h, HPAGE, MADV_DONTNEED));
		fill(h, HPAGE, (unsigned int)i);	/* THP again, if any */
		ASSERT_EQ(0, mprotect(h, PAGE, PROT_READ));	/* split */
		ASSERT_EQ(0, mprotect(h, PAGE, PROT_READ | PROT_WRITE));
	}
	ASSERT_EQ(0, send_msg(ch.to_child[1], "s", 1));
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &c, 1));
	fill(self->buf, LEN, 23);
	ASSERT_EQ(0, send_msg(ch.to_child[1], "c", 1));
	ASSERT_EQ(0, wait_child(pid));
}

/* ---- coherence: every attacher page names its own owner page ---------- */

/*
 * The owner steps of the coherence case: each changes how the owner maps
 * its huge page (a new THP, moved page tables, an empty range, a split, an
 * aged range, a COW-protected one); the owner then tags every page again.
 */
enum {
	COH_REMAP, COH_MREMAP, COH_DONTNEED, COH_MPROTECT, COH_COLD, COH_FORK,
	COH_NSTEPS,
};

static const char *const coh_names[COH_NSTEPS] = {
	"munmap+mmap", "mremap away and back", "MADV_DONTNEED",
	"mprotect split", "MADV_COLD", "fork",
};

/* Page @i's first word at step @step: the page and the step it names. */
static uint64_t coh_tag(unsigned long i, unsigned int step)
{
	return (uint64_t)i << 32 | step;
}

static void coh_retag(char *b, unsigned int step)
{
	unsigned long i;

	for (i = 0; i < HPAGE / PAGE; i++)
		*(volatile uint64_t *)(b + i * PAGE) = coh_tag(i, step);
}

struct coh {
	int fd;
	xpmem_apid_t apid;
	char *win;			/* the attachment, always here */
	pthread_mutex_t lock;		/* the re-attacher's window */
	volatile int stop;
	volatile long wrong;		/* reads that named another page */
	volatile long wrong_idx;
	volatile uint64_t wrong_val;
	volatile long passes, reattaches, reattach_fail;
};

/*
 * Reader: every page in turn, as fast as it can, while the owner steps and
 * the re-attacher detaches and attaches again.  A read may fault (the
 * owner's range moved away: SIGBUS; between detach and attach: SIGSEGV) or
 * see 0 (a fresh owner page, not yet tagged), but never another page's tag.
 */
static void *coh_reader(void *arg)
{
	struct coh *c = arg;
	unsigned long i, n = HPAGE / PAGE;
	uint64_t v;

	probe_install();
	while (!c->stop) {
		for (i = 0; i < n; i++) {
			if (touch_read64((uint64_t *)(c->win + i * PAGE), &v) ||
			    !v || v >> 32 == i)
				continue;
			c->wrong_idx = (long)i;
			c->wrong_val = v;
			__atomic_fetch_add(&c->wrong, 1, __ATOMIC_RELAXED);
		}
		__atomic_fetch_add(&c->passes, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Detach and attach again at the same address, without pause. */
static void *coh_reattacher(void *arg)
{
	struct coh *c = arg;
	void *got;

	while (!c->stop) {
		pthread_mutex_lock(&c->lock);
		if (xp_detach(c->fd, c->win) ||
		    xp_attach(c->fd, c->apid, 0, HPAGE, c->win, &got) ||
		    got != c->win)
			c->reattach_fail++;
		c->reattaches++;
		pthread_mutex_unlock(&c->lock);
		sched_yield();
	}
	return NULL;
}

/*
 * The attacher: two readers and the re-attacher run throughout; for each
 * step the owner announces, every page must hold exactly that step's tag
 * (read with the re-attacher held off, so no page is missing).  Answers
 * the number of pages that did not, and exits with the number of racing
 * reads that named another page (0: none).
 */
static int coh_child(xpmem_segid_t segid, struct chan *ch)
{
	static struct coh c = { .lock = PTHREAD_MUTEX_INITIALIZER };
	unsigned long i, n = HPAGE / PAGE;
	unsigned int step;
	pthread_t t[3];
	int k, bad;
	uint64_t v;

	if (child_attach(segid, XPMEM_RDWR, 0, HPAGE, &c.fd, &c.apid, &c.win))
		return 100;
	probe_install();
	for (k = 0; k < 3; k++)
		if (pthread_create(&t[k], NULL, k < 2 ? coh_reader :
				   coh_reattacher, &c))
			return 101;
	while (!recv_msg(ch->to_child[0], &step, sizeof(step)) && step) {
		bad = 0;
		pthread_mutex_lock(&c.lock);
		for (i = 0; i < n; i++) {
			if (!touch_read64((uint64_t *)(c.win + i * PAGE), &v) &&
			    v == coh_tag(i, step))
				continue;
			if (!bad++) {
				printf("# step %u: page %lu holds %#llx, not %#llx\n",
				       step, i, (unsigned long long)v,
				       (unsigned long long)coh_tag(i, step));
				fflush(stdout);
			}
		}
		pthread_mutex_unlock(&c.lock);
		if (send_msg(ch->to_parent[1], &bad, sizeof(bad)))
			return 102;
	}
	c.stop = 1;
	for (k = 0; k < 3; k++)
		pthread_join(t[k], NULL);
	printf("# attacher: %ld reader passes, %ld re-attaches (%ld failed)\n",
	       c.passes, c.reattaches, c.reattach_fail);
	if (c.wrong)
		printf("# %ld racing reads named another page: page %ld held %#llx\n",
		       c.wrong, c.wrong_idx, (unsigned long long)c.wrong_val);
	fflush(stdout);
	if (c.reattach_fail)
		return 103;
	return c.wrong ? 104 : 0;
}

/* One owner step on the huge page at @b (@park: 2 MiB, for mremap). */
static int coh_step(char *b, char *park, int kind)
{
	pid_t pid;

	switch (kind) {
	case COH_REMAP:
		if (munmap(b, HPAGE) ||
		    mmap(b, HPAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != b)
			return -1;
		return madvise(b, HPAGE, MADV_HUGEPAGE);
	case COH_MREMAP:
		if (mremap(b, HPAGE, HPAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
			   park) != park ||
		    mremap(park, HPAGE, HPAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
			   b) != b)
			return -1;
		/* the park is a hole now: keep it reserved */
		return mmap(park, HPAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			    MAP_NORESERVE | MAP_FIXED, -1, 0) == park ? 0 : -1;
	case COH_DONTNEED:
		return madvise(b, HPAGE, MADV_DONTNEED);
	case COH_MPROTECT:
		return mprotect(b + 7 * PAGE, 3 * PAGE, PROT_READ) ||
		       mprotect(b + 7 * PAGE, 3 * PAGE, PROT_READ | PROT_WRITE);
	case COH_COLD:
		return madvise(b, HPAGE, MADV_COLD);
	default:	/* COH_FORK: the tags written next break COW */
		if (madvise(b, HPAGE, MADV_DOFORK))
			return -1;
		pid = fork_child();
		if (pid == 0)
			_exit(0);
		if (pid < 0 || wait_child(pid))
			return -1;
		return madvise(b, HPAGE, MADV_DONTFORK);
	}
}

/*
 * The coherence case on THP owner memory: the owner exports one huge page;
 * in the attacher, two threads read every page of the attachment while a
 * third detaches and re-attaches it at the same address; after each owner
 * step (munmap+mmap, mremap away and back, MADV_DONTNEED of the whole
 * range, an mprotect split, MADV_COLD, fork) and its new tags, every page
 * of the attachment holds its own page's tag of that step, and no racing
 * read ever saw another page's.
 */
TEST_F_TIMEOUT(huge, thp_coherence_with_reattach, 600)
{
	int rounds = 4, r, k, bad = 0;
	unsigned int step = 0, stop = 0;
	char *park = thp_alloc(HPAGE, 0);

	ASSERT_NE(NULL, park);
	self->buf = thp_alloc(HPAGE, 0);
	ASSERT_NE(NULL, self->buf);
	coh_retag(self->buf, ++step);
	ASSERT_EQ(0, madvise(self->buf, HPAGE, MADV_DONTFORK));
	ASSERT_EQ(0, madvise(park, HPAGE, MADV_DONTFORK));
	ASSERT_EQ(0, xp_make(self->fd, self->buf, HPAGE, 0600, &self->segid));
	ASSERT_EQ(0, chan_init(&self->ch));
	self->child = fork_child();
	ASSERT_LE(0, self->child);
	if (self->child == 0) {
		chan_child(&self->ch);
		_exit(coh_child(self->segid, &self->ch));
	}
	chan_parent(&self->ch);
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < COH_NSTEPS; k++) {
			ASSERT_EQ(0, coh_step(self->buf, park, k)) {
				TH_LOG("step %s failed: %s", coh_names[k],
				       strerror(errno));
			}
			coh_retag(self->buf, ++step);
			ASSERT_EQ(0, send_msg(self->ch.to_child[1], &step,
					      sizeof(step)));
			ASSERT_EQ(0, recv_msg(self->ch.to_parent[0], &bad,
					      sizeof(bad)));
			EXPECT_EQ(0, bad) {
				TH_LOG("round %d, after %s: %d pages wrong", r,
				       coh_names[k], bad);
			}
		}
		TH_LOG("round %d of %d done", r + 1, rounds);
	}
	ASSERT_EQ(0, send_msg(self->ch.to_child[1], &stop, sizeof(stop)));
	EXPECT_EQ(0, wait_child(self->child));
	self->child = -1;
}

TEST_HARNESS_MAIN
