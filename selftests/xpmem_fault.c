// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_fault - how the owner's memory reaches an attacher: the
 * attacher follows the owner's changes (munmap and mmap, MADV_DONTNEED,
 * COW, mprotect, NUMA migration), memory of every kind (shared memory,
 * files past their end, guard pages) faults only where the owner's own
 * access would, faults map a window of pages at once, and a write never
 * maps writable what the owner shares copy-on-write.  Through the raw
 * classic ioctl ABI, like xpmem_core.c.
 *
 * Runs as root inside the test VM with the module loaded; skips when
 * /dev/xpmem is absent.  Every multi-process test forks, synchronises over
 * pipes and checks exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* ---- fixture ------------------------------------------------------------ */

XP_FIXTURE_DEVICE(xpmem);

/*
 * Owner-side changes reach the attacher: munmap + new mmap at the same
 * address, MADV_DONTNEED, fork followed by a write (COW), mprotect.
 * The attacher (child) reads after each step on command.
 */
TEST_F(xpmem, owner_changes_are_mirrored)
{
	const size_t len = 4 * PAGE;
	xpmem_segid_t segid;
	struct chan ch;
	char *buf, *nb, m, r;
	pid_t pid, cow;
	int cowp[2];

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	memset(buf, 'a', len);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_EQ(0, chan_init(&ch));

	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

		/* each command: expected byte of every page ('Z': zero) */
		while (recv_msg(ch.to_child[0], &m, 1) == 0 && m != '!') {
			r = all_bytes(a, len, m == 'Z' ? 0 : m) ? 'F' : 'K';
			send_msg(ch.to_parent[1], &r, 1);
		}
		_exit(0);
	}
#define ATTACHER_SEES(c) do {						\
	m = (c);							\
	ASSERT_EQ(0, send_msg(ch.to_child[1], &m, 1));			\
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &r, 1));			\
	ASSERT_EQ('K', r) TH_LOG("attacher did not see '%c'", c);	\
} while (0)

	ATTACHER_SEES('a');

	/* munmap + mmap at the same address */
	ASSERT_EQ(0, munmap(buf, len));
	nb = mmap(buf, len, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_EQ(buf, nb);
	memset(buf, 'b', len);
	ATTACHER_SEES('b');

	/* MADV_DONTNEED: zeros */
	ASSERT_EQ(0, madvise(buf, len, MADV_DONTNEED));
	ATTACHER_SEES('Z');
	memset(buf, 'c', len);
	ATTACHER_SEES('c');

	/* fork, then the owner writes: the owner's copy, not the child's */
	ASSERT_EQ(0, pipe(cowp));
	cow = fork_child();
	ASSERT_GE(cow, 0);
	if (cow == 0) {
		char x;

		recv_msg(cowp[0], &x, 1);
		_exit(all_bytes(buf, len, 'c') ? 1 : 0);
	}
	memset(buf, 'd', len);
	ATTACHER_SEES('d');
	/* the COW child still has the old data */
	ASSERT_EQ(0, send_msg(cowp[1], "q", 1));
	ASSERT_EQ(0, wait_child(cow));

	/* mprotect round trip keeps the mirror coherent */
	ASSERT_EQ(0, mprotect(buf, len, PROT_READ));
	ASSERT_EQ(0, mprotect(buf, len, PROT_READ | PROT_WRITE));
	memset(buf, 'e', len);
	ATTACHER_SEES('e');

	ASSERT_EQ(0, send_msg(ch.to_child[1], "!", 1));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/* Page migration between NUMA nodes: the attacher follows the page. */
TEST_F(xpmem, numa_migration)
{
	int node = 1, status = -1;
	struct own_att o;
	void *page;

	if (access("/sys/devices/system/node/node1", F_OK))
		SKIP(return, "VM has a single NUMA node");
	ASSERT_EQ(0, own_att_setup(self->fd, &o, PAGE, 0600, XPMEM_RDWR, 'm'));
	ASSERT_EQ('m', o.a[0]);

	/* query, then move to the other node */
	page = o.buf;
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, 1, &page, NULL, &status, 0));
	node = status == 0 ? 1 : 0;
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, 1, &page, &node, &status, 0));
	ASSERT_EQ(node, status);
	/* the owner writes to the new page; a stale mapping would miss it */
	o.buf[0] = 'n';
	ASSERT_EQ('n', o.a[0]);
	o.a[1] = 'o';
	ASSERT_EQ('o', o.buf[1]);
	ASSERT_EQ(0, own_att_teardown(self->fd, &o));
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * No GUP on attachments, even of shared memory (memfd): every attachment
 * PTE is a special PFN PTE, so process_vm_readv, vmsplice and shared
 * futexes (keyed through GUP) fail with EFAULT.  Private futexes and plain
 * user copies (read(2) into the attachment) work, and owner and attacher
 * see each other's stores.
 */
TEST_F(xpmem, futex_and_gup_on_shmem)
{
	const size_t len = 2 * PAGE;
	xpmem_segid_t segid;
	struct chan ch;
	char *buf, m;
	pid_t pid;
	int mfd;

	mfd = memfd_create("xpmem-test", MFD_CLOEXEC);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(0, ftruncate(mfd, len));
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 0, len);
	fill(buf + PAGE, PAGE, 9);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_EQ(0, chan_init(&ch));

	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct timespec ts = { .tv_sec = 5 };
		char out[PAGE], *a;
		struct iovec l, rv;
		xpmem_apid_t apid;
		int fd, p[2];

		chan_child(&ch);
		if (child_attach(segid, XPMEM_RDWR, 0, len, &fd, &apid, &a))
			_exit(1);
		if (check(a + PAGE, PAGE, 9))
			_exit(2);
		/* process_vm_readv goes through GUP */
		l = (struct iovec){ out, PAGE };
		rv = (struct iovec){ a + PAGE, PAGE };
		if (process_vm_readv(getpid(), &l, 1, &rv, 1, 0) != -1 ||
		    errno != EFAULT)
			_exit(3);
		/* so does vmsplice of the attachment into a pipe */
		if (pipe(p))
			_exit(4);
		l = (struct iovec){ a + PAGE, PAGE };
		if (vmsplice(p[1], &l, 1, 0) != -1 || errno != EFAULT)
			_exit(5);
		/* read(2) into the attachment is a user copy, no GUP */
		if (write(p[1], "pipe", 4) != 4 || read(p[0], a + 16, 4) != 4 ||
		    memcmp(buf + 16, "pipe", 4))
			_exit(6);
		/*
		 * Shared futexes are keyed through GUP: EFAULT.  The word is
		 * 0 and the wait expects 1, so a wait that got a key would
		 * return EAGAIN at once instead of sleeping.
		 */
		if (sys_futex(a, FUTEX_WAIT, 1, &ts) != -1 || errno != EFAULT)
			_exit(7);
		if (sys_futex(a, FUTEX_WAKE, 1, NULL) != -1 || errno != EFAULT)
			_exit(8);
		/* private futexes need no GUP */
		if (sys_futex(a, FUTEX_WAIT_PRIVATE, 1, &ts) != -1 ||
		    errno != EAGAIN)
			_exit(9);
		if (sys_futex(a, FUTEX_WAKE_PRIVATE, 1, NULL) != 0)
			_exit(10);
		/* stores both ways */
		a[PAGE + 8] = 'A';
		send_msg(ch.to_parent[1], "w", 1);
		if (recv_msg(ch.to_child[0], &m, 1) || a[PAGE + 9] != 'O')
			_exit(11);
		_exit(0);
	}
	chan_parent(&ch);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1)) {
		TH_LOG("attacher exited with %d", wait_child(pid));
	}
	ASSERT_EQ('A', buf[PAGE + 8]);
	buf[PAGE + 9] = 'O';
	ASSERT_EQ(0, send_msg(ch.to_child[1], "k", 1));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
	close(mfd);
}

/*
 * An owner's file mapping may reach past the end of its file (mapped
 * larger, grown later with ftruncate): its pages there raise SIGBUS, for
 * the owner and for the attacher alike.  A fault on a page inside the file
 * maps more than that page (a window), but a neighbour past the end, or
 * one the owner cannot fault now, must not make it fail: the attacher
 * reads and writes the file's pages, and gets SIGBUS only past the end.
 * Both with and without owner page tables over the window (a first fault,
 * and one after the owner's PTEs went).
 */
TEST_F(xpmem, file_mapping_past_eof_fails_only_there)
{
	const size_t len = 16 * PAGE;
	xpmem_segid_t segid;
	int mfd, round;
	char *buf;

	mfd = memfd_create("xpmem-test", MFD_CLOEXEC);
	ASSERT_GE(mfd, 0);
	ASSERT_EQ(0, ftruncate(mfd, 2 * PAGE));
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	for (round = 0; round < 2; round++) {
		pid_t pid;

		/* round 0: never touched; round 1: filled, PTEs dropped */
		if (round == 1) {
			fill(buf, 2 * PAGE, 21);
			ASSERT_EQ(0, madvise(buf, len, MADV_DONTNEED));
		}
		pid = fork_child();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

			probe_install();
			/* the last page of the file, then the first */
			if (touch((uint8_t *)a + PAGE + 5, 0, 0))
				_exit(2);
			if (round == 1 && check(a, 2 * PAGE, 21))
				_exit(3);
			if (touch((uint8_t *)a + 7, 1, 'a') ||
			    touch((uint8_t *)a + PAGE + 7, 1, 'b'))
				_exit(4);
			if (touch((uint8_t *)a + 2 * PAGE, 0, 0) != SIGBUS ||
			    touch((uint8_t *)a + len - 1, 1, 'c') != SIGBUS)
				_exit(5);
			_exit(0);
		}
		ASSERT_EQ(0, wait_child(pid));
		ASSERT_EQ('a', buf[7]);
		ASSERT_EQ('b', buf[PAGE + 7]);
	}
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
	close(mfd);
}

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL	102
#endif

/*
 * Guard pages inside an owner VMA (MADV_GUARD_INSTALL, 6.13): the owner's
 * own access there is SIGSEGV.  A fault on a page beside one, whose window
 * covers it, maps the page; only the guard page itself fails (SIGBUS in
 * the attacher).  Skipped where the kernel has no guard pages.
 */
TEST_F(xpmem, guard_page_in_window_fails_only_there)
{
	const size_t len = 16 * PAGE;
	xpmem_segid_t segid;
	char *buf;
	pid_t pid;

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	if (madvise(buf + 8 * PAGE, PAGE, MADV_GUARD_INSTALL)) {
		munmap(buf, len);
		SKIP(return, "no MADV_GUARD_INSTALL (%s)", strerror(errno));
	}
	/* owner-exclusive pages: the child would share them copy-on-write */
	ASSERT_EQ(0, madvise(buf, len, MADV_DONTFORK));
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

		probe_install();
		/* never touched: each needs a fault, the guard follows */
		if (touch((uint8_t *)a + 7 * PAGE, 0, 0) ||
		    touch((uint8_t *)a + 6 * PAGE + 1, 1, 'g'))
			_exit(2);
		if (touch((uint8_t *)a + 8 * PAGE, 0, 0) != SIGBUS)
			_exit(3);
		if (touch((uint8_t *)a + 9 * PAGE, 1, 'h'))
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ('g', buf[6 * PAGE + 1]);
	ASSERT_EQ('h', buf[9 * PAGE]);
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/* A fault maps the resident neighbours too: far fewer faults than pages. */
TEST_F(xpmem, faults_are_batched)
{
	const size_t len = 1024 * PAGE;
	xpmem_segid_t segid;
	pid_t pid;
	char *buf;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	memset(buf, 'b', len);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0644, &segid));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		long faults, mapped, pmds;
		xpmem_apid_t apid;
		size_t i;
		char *a;
		int fd;

		if (child_attach(segid, XPMEM_RDONLY, 0, len, &fd, &apid, &a))
			_exit(1);
		faults = stat_read("faults");
		mapped = stat_read("pages_mapped");
		pmds = stat_read("pmd_mapped");
		for (i = 0; i < len; i += PAGE)
			if (a[i] != 'b')
				_exit(2);
		faults = stat_read("faults") - faults;
		/* THP owner memory may be mapped with huge PMDs (6.12) */
		mapped = stat_read("pages_mapped") - mapped +
			 (stat_read("pmd_mapped") - pmds) * (long)PMD_PAGES;
		/* 4 MiB: 2 or 3 PMD-sized windows, a little slack */
		if (faults < 1 || faults > 8)
			_exit(3);
		if (mapped < (long)(len / PAGE))
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/*
 * A write pass over an attachment of 4 KiB owner pages takes one fault per
 * window, not one more per page.  @read_first false: a fresh attachment,
 * whose write faults map the owner-writable pages of their window
 * writable at once (was 1024 + 2 faults), on owner memory a plain fork
 * made COW-shared (the write fault breaks COW for the rest of its window).
 * @read_first true: a read pass maps everything read-only first, and the
 * write to a read-only PTE makes the window's other read-only PTEs of
 * owner-writable pages writable at once (was one ->pfn_mkwrite per page);
 * the owner's pages are its own (MADV_DONTFORK), as an MPI rank's are.
 */
static void writes_one_fault_per_window(struct __test_metadata *_metadata,
					FIXTURE_DATA(xpmem) *self,
					bool read_first)
{
	const size_t len = 1024 * PAGE;
	xpmem_segid_t segid;
	pid_t pid;
	char *buf;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, madvise(buf, len, MADV_NOHUGEPAGE));
	fill(buf, len, read_first ? 23 : 21);
	if (read_first)
		ASSERT_EQ(0, madvise(buf, len, MADV_DONTFORK));
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		long faults, mkwrites, upgraded;
		xpmem_apid_t apid;
		unsigned int sum = 0;
		size_t i;
		char *a;
		int fd;

		if (child_attach(segid, XPMEM_RDWR, 0, len, &fd, &apid, &a))
			_exit(1);
		for (i = 0; read_first && i < len; i += PAGE)
			sum += (unsigned char)a[i];
		faults = stat_read("faults");
		mkwrites = stat_read("mkwrite_fast");
		upgraded = stat_read("pages_upgraded");
		for (i = 0; i < len; i += PAGE)
			a[i] = (char)(i / PAGE + read_first);
		faults = stat_read("faults") - faults;
		mkwrites = stat_read("mkwrite_fast") - mkwrites;
		upgraded = stat_read("pages_upgraded") - upgraded;
		/* 4 MiB: 2 or 3 windows of 512 pages */
		if (faults < 1 || faults > 8 || (!read_first && mkwrites))
			_exit(2);
		if (read_first && upgraded < (long)(len / PAGE) - 8)
			_exit(3);
		_exit(read_first && !sum ? 4 : 0);
	}
	ASSERT_EQ(0, wait_child(pid));
	for (size_t i = 0; i < len; i += PAGE)
		ASSERT_EQ((char)(i / PAGE + read_first), buf[i]);
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

TEST_F(xpmem, first_write_one_fault_per_window)
{
	writes_one_fault_per_window(_metadata, self, false);
}

TEST_F(xpmem, write_after_read_one_fault_per_window)
{
	writes_one_fault_per_window(_metadata, self, true);
}

/*
 * An attachment made while the owner is in the middle of discarding the
 * range must not map the pages being discarded.  The owner discards 96
 * MiB of 4 KiB pages with one MADV_DONTNEED, the exported 16 pages last;
 * meanwhile the attacher attaches them and reads them.  That invalidation
 * began before the attachment's notifier existed, so it never reaches the
 * attachment's callback (the core inserts such a notifier marked "under
 * invalidation" and expects its first reader to wait for the owner's
 * invalidations to end); a fault that did not wait mapped the old pages
 * just before the owner freed them, and after the owner had written new
 * tags the attacher still read the old ones from freed memory.  Each
 * round reads the pages once more after the owner's new tags, which must
 * be what it reads.  (Another segment of the owner stays attached and
 * away from the range, so that the owner has an interval notifier and the
 * invalidation nothing of it overlaps.)
 */
#define INFLIGHT_BIG	(96UL << 20)
#define INFLIGHT_PAGES	16
#define INFLIGHT_ROUNDS	6

static int inflight_attacher(xpmem_segid_t other, xpmem_segid_t segid,
			     struct chan *ch)
{
	xpmem_apid_t apid;
	uint64_t gen, v;
	char *a, *keep;
	int fd, r, bad;
	size_t i;

	if (child_attach(other, XPMEM_RDWR, 0, PAGE, &fd, &apid, &keep))
		return 10;
	(void)*(volatile char *)keep;
	if (xp_get(fd, segid, XPMEM_RDWR, &apid))
		return 11;
	for (r = 0; r < INFLIGHT_ROUNDS; r++) {
		if (recv_msg(ch->to_child[0], &gen, sizeof(gen)))
			return 12;
		/* the owner is discarding now */
		if (xp_attach(fd, apid, 0, INFLIGHT_PAGES * PAGE, NULL,
			      (void **)&a))
			return 13;
		for (i = 0; i < INFLIGHT_PAGES; i++)
			(void)*(volatile uint64_t *)(a + i * PAGE);
		if (send_msg(ch->to_parent[1], "r", 1) ||
		    recv_msg(ch->to_child[0], &gen, sizeof(gen)))
			return 14;
		for (bad = 0, i = 0; i < INFLIGHT_PAGES; i++) {
			v = *(volatile uint64_t *)(a + i * PAGE);
			if (v == ((uint64_t)i << 32 | gen))
				continue;
			if (!bad++)
				printf("# round %d: page %zu reads %#llx, not %#llx\n",
				       r, i, (unsigned long long)v,
				       (unsigned long long)((uint64_t)i << 32 | gen));
		}
		fflush(stdout);
		if (xp_detach(fd, a) ||
		    send_msg(ch->to_parent[1], &bad, sizeof(bad)))
			return 15;
	}
	return 0;
}

TEST_F_TIMEOUT(xpmem, attach_during_owner_discard_maps_no_freed_page, 240)
{
	char *big, *tail, *other;
	xpmem_segid_t segid, oseg;
	uint64_t gen = 0;
	struct chan ch;
	int r, bad, total = 0;
	size_t i;
	pid_t pid;
	char c;

	big = map_anon(INFLIGHT_BIG);
	other = map_anon(PAGE);
	ASSERT_NE(NULL, big);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, madvise(big, INFLIGHT_BIG, MADV_NOHUGEPAGE));
	tail = big + INFLIGHT_BIG - INFLIGHT_PAGES * PAGE;
	other[0] = 1;
	ASSERT_EQ(0, xp_make(self->fd, other, PAGE, 0600, &oseg));
	ASSERT_EQ(0, xp_make(self->fd, tail, INFLIGHT_PAGES * PAGE, 0600,
			     &segid));
	ASSERT_EQ(0, madvise(big, INFLIGHT_BIG, MADV_DONTFORK));
	ASSERT_EQ(0, chan_init(&ch));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		chan_child(&ch);
		_exit(inflight_attacher(oseg, segid, &ch));
	}
	chan_parent(&ch);
	for (r = 0; r < INFLIGHT_ROUNDS; r++) {
		ASSERT_EQ(0, populate_write(big, INFLIGHT_BIG));
		gen++;
		for (i = 0; i < INFLIGHT_PAGES; i++)
			*(uint64_t *)(tail + i * PAGE) = (uint64_t)i << 32 | gen;
		ASSERT_EQ(0, send_msg(ch.to_child[1], &gen, sizeof(gen)));
		ASSERT_EQ(0, madvise(big, INFLIGHT_BIG, MADV_DONTNEED));
		ASSERT_EQ(0, recv_msg(ch.to_parent[0], &c, 1));
		gen++;
		for (i = 0; i < INFLIGHT_PAGES; i++)
			*(uint64_t *)(tail + i * PAGE) = (uint64_t)i << 32 | gen;
		ASSERT_EQ(0, send_msg(ch.to_child[1], &gen, sizeof(gen)));
		ASSERT_EQ(0, recv_msg(ch.to_parent[0], &bad, sizeof(bad)));
		total += bad;
	}
	EXPECT_EQ(0, total) {
		TH_LOG("%d pages read old contents after the owner's new tags",
		       total);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_EQ(0, xp_remove(self->fd, oseg));
	ASSERT_COUNTERS_AT_BASE();
	munmap(big, INFLIGHT_BIG);
	munmap(other, PAGE);
}

/*
 * A write to a read-only PTE that names another page than the owner's
 * writable one - here our zero page, read before the owner ever wrote the
 * page - zaps that PTE and maps the owner's new page writable in the same
 * ->pfn_mkwrite: one fault of the attachment, where zapping alone and
 * repeating the access would take two, and a read fault of another
 * thread in between could put a read-only PTE back each time, so that
 * the write could go round zap and repeat without end.
 */
TEST_F(xpmem, mkwrite_of_stale_pte_maps_in_the_same_fault)
{
	const size_t len = 4 * PAGE;
	xpmem_segid_t segid;
	int numa, status;
	pid_t pid;
	char *buf;

	buf = map_anon(len);	/* never written: the owner's zero page */
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, madvise(buf, len, MADV_NOHUGEPAGE));
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	numa = numa_balancing_set(0);	/* its zaps would add faults */
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);
		long faults;
		size_t i;

		if (all_bytes(a, len, 0))	/* read-only, our zero page */
			_exit(2);
		faults = stat_read("faults");
		for (i = 0; i < len; i += PAGE)
			a[i + 1] = (char)('a' + i / PAGE);
		faults = stat_read("faults") - faults;
		if (faults != 1) {
			printf("# %ld faults for the first write pass\n",
			       faults);
			fflush(stdout);
			_exit(3);
		}
		_exit(0);
	}
	status = wait_child(pid);
	numa_balancing_set(numa);
	ASSERT_EQ(0, status);
	for (size_t i = 0; i < len; i += PAGE)
		ASSERT_EQ((char)('a' + i / PAGE), buf[i + 1]);
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/*
 * A write maps the pages of its window that the owner maps writable
 * writable, never the ones it shares copy-on-write: the owner forked, so
 * pages 1..3 are shared with its child and read-only in both; the owner
 * wrote page 0 again, so only page 0 is its own.  The attacher's write to
 * page 0 must not let its writes to pages 1..3 reach the child's copies:
 * they go through ->pfn_mkwrite, which breaks COW in the owner first.
 * @read_first: the attacher reads all four pages first, so that its
 * write to page 0 is a ->pfn_mkwrite that upgrades the window, not a
 * write fault that fills it.
 */
static void cow_shared_pages_stay_read_only(struct __test_metadata *_metadata,
					    FIXTURE_DATA(xpmem) *self,
					    bool read_first)
{
	const size_t len = 4 * PAGE;
	struct chan sib;
	xpmem_segid_t segid;
	pid_t sibling, pid;
	char *buf, c;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, madvise(buf, len, MADV_NOHUGEPAGE));
	memset(buf, 'o', len);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_EQ(0, madvise(buf, len, MADV_DOFORK));
	ASSERT_EQ(0, chan_init(&sib));
	sibling = fork_child();
	ASSERT_LE(0, sibling);
	if (sibling == 0) {
		chan_child(&sib);
		if (recv_msg(sib.to_child[0], &c, 1))
			_exit(1);
		_exit(all_bytes(buf, len, 'o') ? 2 : 0);
	}
	chan_parent(&sib);
	/* the attacher must not share the pages too */
	ASSERT_EQ(0, madvise(buf, len, MADV_DONTFORK));
	buf[0] = 'p';		/* page 0: the owner's own again */
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

		/* page 0 is the owner's 'p', the others the shared 'o' */
		if (read_first &&
		    (a[0] != 'p' || all_bytes(a + PAGE, len - PAGE, 'o')))
			_exit(2);
		a[0] = 'A';		/* its window is 0..3 */
		a[PAGE] = 'B';
		a[2 * PAGE + 5] = 'C';
		a[3 * PAGE - 1] = 'D';
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ('A', buf[0]);
	ASSERT_EQ('B', buf[PAGE]);
	ASSERT_EQ('C', buf[2 * PAGE + 5]);
	ASSERT_EQ('D', buf[3 * PAGE - 1]);
	ASSERT_EQ('o', buf[3 * PAGE]);
	/* the sibling's copies never saw any of it */
	ASSERT_EQ(0, send_msg(sib.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(sibling));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

TEST_F(xpmem, write_fault_never_maps_cow_shared_pages_writable)
{
	cow_shared_pages_stay_read_only(_metadata, self, false);
}

TEST_F(xpmem, write_after_read_never_maps_cow_shared_pages_writable)
{
	cow_shared_pages_stay_read_only(_metadata, self, true);
}

/* RDWR attachment of memory the owner maps read-only: reads, no writes. */
TEST_F(xpmem, rdwr_attach_of_readonly_owner_memory)
{
	struct own_att o;

	ASSERT_EQ(0, own_att_setup(self->fd, &o, 2 * PAGE, 0600, XPMEM_RDWR,
				   'R'));
	ASSERT_EQ(0, mprotect(o.buf, 2 * PAGE, PROT_READ));
	ASSERT_EQ('R', o.a[0]);
	ASSERT_EQ('R', o.a[PAGE + 7]);
	ASSERT_EQ(SIGBUS, probe(o.a, 1, 'w'));
	ASSERT_EQ('R', o.buf[0]);
	/* once the owner allows writes, so does the attachment */
	ASSERT_EQ(0, mprotect(o.buf, 2 * PAGE, PROT_READ | PROT_WRITE));
	ASSERT_EQ(0, probe(o.a, 1, 'w'));
	ASSERT_EQ('w', o.buf[0]);
	ASSERT_EQ(0, own_att_teardown(self->fd, &o));
	ASSERT_COUNTERS_AT_BASE();
}

/* Invalidation reaches an attachment of part of a segment, and only it. */
TEST_F(xpmem, partial_attachment_invalidation)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *buf, *a, *b;
	void *va;

	buf = map_anon(4 * PAGE);
	ASSERT_NE(NULL, buf);
	memset(buf, 'p', 4 * PAGE);
	ASSERT_EQ(0, xp_make(self->fd, buf, 4 * PAGE, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 2 * PAGE, PAGE, NULL, &va));
	a = va;
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, PAGE, NULL, &va));
	b = va;
	ASSERT_EQ('p', a[0]);
	ASSERT_EQ('p', b[0]);
	/* outside the first attachment, inside the second */
	ASSERT_EQ(0, madvise(buf, PAGE, MADV_DONTNEED));
	ASSERT_EQ('p', a[0]);
	ASSERT_EQ(0, b[0]);
	ASSERT_EQ(0, madvise(buf + 2 * PAGE, PAGE, MADV_DONTNEED));
	ASSERT_EQ(0, a[0]);
	buf[2 * PAGE] = 'q';
	ASSERT_EQ('q', a[0]);
	ASSERT_EQ(0, xp_detach(self->fd, b));
	/* no attachment covers page 0 any more; page 2 still follows */
	ASSERT_EQ(0, madvise(buf, 4 * PAGE, MADV_DONTNEED));
	ASSERT_EQ(0, a[0]);
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, 4 * PAGE);
}

TEST_HARNESS_MAIN
