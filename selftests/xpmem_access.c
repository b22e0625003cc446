// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_access - what an attachment may map and how it may be reached:
 * attachments of attachments (a fixed attach over a source or another
 * attachment, chains and cycles between processes) are refused or SIGBUS;
 * owner memory that cannot be pinned (memfd_secret, PFN maps) is SIGBUS;
 * get_user_pages on an attachment, MADV_DOFORK, and every way to write
 * through a read-only attachment are refused; untouched read-only owner
 * memory reads as zeros.
 *
 * Runs as root inside the test VM with the module loaded; skips when
 * /dev/xpmem is absent.  Multi-process tests fork, synchronise over pipes
 * and check exit statuses.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sys/ptrace.h>

#ifndef SYS_memfd_secret
#define SYS_memfd_secret	447
#endif

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* ---- helpers ------------------------------------------------------------ */

/*
 * ATTACH @len bytes of a whole-address-space segment's permit @apid at the
 * segment offset of @src, anywhere; the address, or NULL.
 */
static char *attach_whole(int fd, xpmem_apid_t apid, const void *src,
			  size_t len)
{
	void *va;

	return xp_attach(fd, apid, whole_off(src), len, NULL, &va) ? NULL : va;
}

/* An inaccessible range to attach at with a fixed address. */
static char *reserve(size_t len)
{
	void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* @len bytes of shared memory (memfd), mapped read/write. */
static char *map_memfd(size_t len)
{
	int mfd = memfd_create("xpmem-access", MFD_CLOEXEC);
	void *p = MAP_FAILED;

	if (mfd < 0)
		return NULL;
	if (!ftruncate(mfd, len))
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd,
			 0);
	close(mfd);
	return p == MAP_FAILED ? NULL : p;
}

/* Rss in kB of the caller's VMA containing @addr (smaps), or -1. */
static long vma_rss_kb(const void *addr)
{
	unsigned long lo, hi, a = (uintptr_t)addr;
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;
	long rss = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = a >= lo && a < hi;
			continue;
		}
		if (in && sscanf(line, "Rss: %ld kB", &rss) == 1)
			break;
	}
	fclose(f);
	return rss;
}

/* The caller's [vvar] mapping (VM_IO | VM_PFNMAP on x86); 0 or -1. */
static int find_vvar(char **lo, char **hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long s, e;
	char line[512];
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vvar]") &&
		    sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			*lo = (char *)s;
			*hi = (char *)e;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Every page of [p, p + len) raises SIGBUS on read and on write. */
static int all_sigbus(char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += PAGE) {
		if (probe(p + i, 0, 0) != SIGBUS)
			return -1;
		if (probe(p + i, 1, 'W') != SIGBUS)
			return -1;
	}
	return 0;
}

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(access)
{
	int fd;
	long segs, permits, atts;
	struct kids kids;		/* children, for the teardown */
};

FIXTURE_SETUP(access)
{
	self->kids.n = 0;
	XP_FIXTURE_OPEN();
}

/* Ends leftover children, also after a failure. */
FIXTURE_TEARDOWN(access)
{
	kids_reap(&self->kids);
	if (self->fd >= 0)
		close(self->fd);
}

/* ---- attachments that map attachments -------------------------------- */

/*
 * A whole-address-space segment attached by its own process at a
 * fixed address X with the offset of X maps itself; touching X (or
 * munmap(X)) recursed until the kernel stack overflowed.  A fixed-address
 * ATTACH overlapping the very source range it would map is refused.
 */
TEST_F(access, self_attach_fixed_over_source_refused)
{
	const size_t len = 4 * PAGE;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *x, *buf;
	void *va;

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	memset(buf, 'b', len);
	x = reserve(len);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(0, make_whole(self->fd, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));

	/* exactly itself, then partial overlaps from above and below */
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, apid, whole_off(x), len, x,
				     &va));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, apid, whole_off(x + PAGE), len,
				     x, &va));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, apid,
				     whole_off(x) - 2 * PAGE, len, x, &va));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, apid, whole_off(x + 3 * PAGE),
				     PAGE, x + 3 * PAGE, &va));
	/* nothing was mapped over the reservation */
	ASSERT_EQ(SIGSEGV, probe(x, 0, 0));
	ASSERT_EQ(SIGSEGV, probe(x + 3 * PAGE, 0, 0));

	/* a fixed attach of another source range there is fine */
	ASSERT_EQ(0, xp_attach(self->fd, apid, whole_off(buf), len, x, &va));
	ASSERT_EQ(x, va);
	ASSERT_EQ(0, all_bytes(x, len, 'b'));
	x[1] = 'c';
	ASSERT_EQ('c', buf[1]);
	ASSERT_EQ(0, xp_detach(self->fd, x));

	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/*
 * A fixed-address ATTACH over an existing attachment of the
 * caller (MAP_FIXED would silently replace it) is refused with EINVAL.
 */
TEST_F(access, fixed_attach_over_attachment_refused)
{
	const size_t len = 4 * PAGE;
	xpmem_segid_t s1, s2;
	xpmem_apid_t p1, p2;
	char *b1, *b2, *r, *a;
	void *va;

	b1 = map_anon(len);
	b2 = map_anon(len);
	ASSERT_NE(NULL, b1);
	ASSERT_NE(NULL, b2);
	memset(b1, 'f', len);
	memset(b2, 'g', len);
	/* r: [guard][attachment of b1, 4 pages][guard, 2 pages] */
	r = reserve(8 * PAGE);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, xp_make(self->fd, b1, len, 0600, &s1));
	ASSERT_EQ(0, xp_make(self->fd, b2, len, 0600, &s2));
	ASSERT_EQ(0, xp_get(self->fd, s1, XPMEM_RDWR, &p1));
	ASSERT_EQ(0, xp_get(self->fd, s2, XPMEM_RDWR, &p2));
	ASSERT_EQ(0, xp_attach(self->fd, p1, 0, len, r + 2 * PAGE, &va));
	a = va;
	ASSERT_EQ(r + 2 * PAGE, a);
	ASSERT_EQ('f', a[0]);

	/* exactly over it, inside it, straddling either end */
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, p2, 0, len, a, &va));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, p1, 0, PAGE, a + PAGE, &va));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, p2, 0, 2 * PAGE, a - PAGE,
				     &va));
	ASSERT_EQ(-EINVAL, xp_attach(self->fd, p2, 0, 2 * PAGE, a + 3 * PAGE,
				     &va));
	/* the attachment is intact and still the only one */
	ASSERT_EQ(0, all_bytes(a, len, 'f'));
	ASSERT_EQ(self->atts + 1, stat_read("attachments"));
	/* the guard pages next to it are free for a fixed attach */
	ASSERT_EQ(0, xp_attach(self->fd, p2, 0, PAGE, a + len, &va));
	ASSERT_EQ(a + len, va);
	ASSERT_EQ('g', *(char *)va);
	ASSERT_EQ(0, xp_detach(self->fd, va));

	ASSERT_EQ(0, xp_release(self->fd, p1));
	ASSERT_EQ(0, xp_release(self->fd, p2));
	ASSERT_EQ(0, xp_remove(self->fd, s1));
	ASSERT_EQ(0, xp_remove(self->fd, s2));
	ASSERT_COUNTERS_AT_BASE();
	munmap(r, 8 * PAGE);
	munmap(b1, len);
	munmap(b2, len);
}

/*
 * An attachment whose source range is another attachment of the
 * same process (private anonymous and shmem sources) maps fine, but every
 * read and write of it is SIGBUS, whether its source was faulted in or
 * not; munmap of all of them completes.
 */
TEST_F(access, attachment_of_own_attachment_sigbus)
{
	const size_t len = 4 * PAGE;
	char *buf, *mbuf, *a1, *m1, *a2, *m2;
	xpmem_segid_t segid;
	xpmem_apid_t apid;

	buf = map_anon(len);
	mbuf = map_memfd(len);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, mbuf);
	memset(buf, 'n', len);
	memset(mbuf, 'm', len);
	ASSERT_EQ(0, make_whole(self->fd, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	a1 = attach_whole(self->fd, apid, buf, len);
	ASSERT_NE(NULL, a1);
	m1 = attach_whole(self->fd, apid, mbuf, len);
	ASSERT_NE(NULL, m1);
	a2 = attach_whole(self->fd, apid, a1, len);
	ASSERT_NE(NULL, a2);
	m2 = attach_whole(self->fd, apid, m1, len);
	ASSERT_NE(NULL, m2);

	/* sources not faulted in yet */
	ASSERT_EQ(0, all_sigbus(a2, len));
	ASSERT_EQ(0, all_sigbus(m2, len));
	/* the first level works; then the second level with it mapped */
	ASSERT_EQ(0, all_bytes(a1, len, 'n'));
	ASSERT_EQ(0, all_bytes(m1, len, 'm'));
	ASSERT_EQ(0, all_sigbus(a2, len));
	ASSERT_EQ(0, all_sigbus(m2, len));
	ASSERT_EQ(0, all_bytes(buf, len, 'n'));
	ASSERT_EQ(0, all_bytes(mbuf, len, 'm'));

	ASSERT_EQ(0, munmap(a2, len));
	ASSERT_EQ(0, munmap(m2, len));
	ASSERT_EQ(0, munmap(a1, len));
	ASSERT_EQ(0, munmap(m1, len));
	ASSERT_EQ(self->atts, stat_read("attachments"));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
	munmap(mbuf, len);
}

/* What the peer process of the two-process tests below reports. */
struct peer_info {
	xpmem_segid_t segid;
	char *a1;
	char *a2;
};

/*
 * Process B attaches A's memory (shmem and private anonymous);
 * A attaches those attachments of B.  A's attachments map fine, but every
 * access is SIGBUS (the one-level attachments keep working); munmap
 * completes.
 */
TEST_F(access, attachment_chain_across_processes_sigbus)
{
	const size_t len = 4 * PAGE;
	struct peer_info pi;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *buf, *mbuf, *z1, *z2, m;
	struct chan ch;
	void *va;
	pid_t pid;

	buf = map_anon(len);
	mbuf = map_memfd(len);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, mbuf);
	memset(buf, 'n', len);
	memset(mbuf, 'm', len);
	ASSERT_EQ(0, make_whole(self->fd, 0600, &segid));
	ASSERT_EQ(0, chan_init(&ch));

	pid = kids_fork(&self->kids);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		xpmem_apid_t ap;
		int fd;

		chan_child(&ch);
		fd = xp_open();
		if (fd < 0 || xp_get(fd, segid, XPMEM_RDWR, &ap))
			_exit(1);
		if (xp_attach(fd, ap, whole_off(mbuf), len, NULL, &va))
			_exit(2);
		pi.a1 = va;
		if (xp_attach(fd, ap, whole_off(buf), len, NULL, &va))
			_exit(3);
		pi.a2 = va;
		if (all_bytes(pi.a1, len, 'm') || all_bytes(pi.a2, len, 'n'))
			_exit(4);
		if (make_whole(fd, 0600, &pi.segid))
			_exit(5);
		send_msg(ch.to_parent[1], &pi, sizeof(pi));
		if (recv_msg(ch.to_child[0], &m, 1))
			_exit(6);
		/* A's accesses did not disturb the first level */
		if (all_bytes(pi.a1, len, 'm') || all_bytes(pi.a2, len, 'n'))
			_exit(7);
		_exit(0);
	}
	chan_parent(&ch);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &pi, sizeof(pi)));
	ASSERT_EQ(0, xp_get(self->fd, pi.segid, XPMEM_RDWR, &apid));
	z1 = attach_whole(self->fd, apid, pi.a1, len);
	ASSERT_NE(NULL, z1);
	z2 = attach_whole(self->fd, apid, pi.a2, len);
	ASSERT_NE(NULL, z2);
	ASSERT_EQ(0, all_sigbus(z1, len));
	ASSERT_EQ(0, all_sigbus(z2, len));
	ASSERT_EQ(0, all_bytes(buf, len, 'n'));
	ASSERT_EQ(0, all_bytes(mbuf, len, 'm'));
	ASSERT_EQ(0, munmap(z1, len));
	ASSERT_EQ(0, munmap(z2, len));
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
	munmap(mbuf, len);
}

/*
 * Two processes attaching each other's attachments form a loop:
 * A's X maps B's Y, and B's Y maps A's X.  Touching either recursed until
 * the kernel stack overflowed.  Now every access is SIGBUS and munmap of
 * both completes.
 */
TEST_F(access, attachment_cycle_between_processes_sigbus)
{
	const size_t len = 4 * PAGE;
	struct peer_info pi;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	struct chan ch;
	char *x, m;
	void *va;
	pid_t pid;

	x = reserve(len);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(0, make_whole(self->fd, 0600, &segid));
	ASSERT_EQ(0, chan_init(&ch));

	pid = kids_fork(&self->kids);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		xpmem_apid_t ap;
		char *y;
		int fd;

		chan_child(&ch);
		fd = xp_open();
		y = reserve(len);
		if (fd < 0 || !y || make_whole(fd, 0600, &pi.segid))
			_exit(1);
		/* B's Y maps A's X */
		if (xp_get(fd, segid, XPMEM_RDWR, &ap) ||
		    xp_attach(fd, ap, whole_off(x), len, y, &va) || va != y)
			_exit(2);
		pi.a1 = y;
		pi.a2 = NULL;
		send_msg(ch.to_parent[1], &pi, sizeof(pi));
		if (recv_msg(ch.to_child[0], &m, 1))
			_exit(3);
		if (all_sigbus(y, len))
			_exit(4);
		if (munmap(y, len))
			_exit(5);
		send_msg(ch.to_parent[1], "u", 1);
		if (recv_msg(ch.to_child[0], &m, 1))
			_exit(6);
		_exit(0);
	}
	chan_parent(&ch);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &pi, sizeof(pi)));
	/* A's X maps B's Y: the loop is closed */
	ASSERT_EQ(0, xp_get(self->fd, pi.segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, whole_off(pi.a1), len, x, &va));
	ASSERT_EQ(x, va);
	ASSERT_EQ(0, all_sigbus(x, len));
	/* B probes Y, then unmaps it while X still maps it */
	ASSERT_EQ(0, send_msg(ch.to_child[1], "p", 1));
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1));
	ASSERT_EQ(0, munmap(x, len));
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
}

/* ---- owner memory GUP refuses ----------------------------------------- */

/*
 * Hmm_range_fault() has no secretmem check; an attacher could
 * read (and vmsplice) an owner's memfd_secret pages.  Now every access to
 * them through an attachment is SIGBUS.
 */
TEST_F(access, secretmem_owner_pages_sigbus)
{
	const size_t len = 2 * PAGE;
	xpmem_segid_t segid;
	char *sec;
	pid_t pid;
	int sfd;

	sfd = syscall(SYS_memfd_secret, 0);
	if (sfd < 0 && errno == ENOSYS) {
		long en = -1;
		FILE *f = fopen("/sys/module/secretmem/parameters/enable", "r");

		if (f) {
			char c = 0;

			if (fread(&c, 1, 1, f) == 1)
				en = c == 'Y' || c == '1';
			fclose(f);
		}
		SKIP(return, "memfd_secret: ENOSYS (secretmem.enable=%ld; 6.1 needs secretmem.enable=1 on the kernel command line)",
		     en);
	}
	ASSERT_GE(sfd, 0);
	ASSERT_EQ(0, ftruncate(sfd, len));
	sec = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	ASSERT_NE(MAP_FAILED, sec);
	memset(sec, 's', len);
	ASSERT_EQ(0, make_whole(self->fd, 0600, &segid));

	pid = kids_fork(&self->kids);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		xpmem_apid_t apid;
		char *a;
		int fd;

		if (child_attach(segid, XPMEM_RDWR, whole_off(sec), len, &fd,
				 &apid, &a))
			_exit(1);
		if (probe(a, 0, 0) != SIGBUS)
			_exit(2);	/* read the secret */
		if (probe(a + PAGE, 1, 'w') != SIGBUS)
			_exit(3);
		if (probe(a + PAGE, 0, 0) != SIGBUS)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, all_bytes(sec, len, 's'));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(sec, len);
	close(sfd);
}

/*
 * Owner VMAs that GUP refuses (here VM_IO | VM_PFNMAP: the
 * [vvar] mapping every process has) are not mapped into attachments:
 * SIGBUS on read and write.
 */
TEST_F(access, pfnmap_owner_range_sigbus)
{
	xpmem_segid_t segid;
	char *lo, *hi;
	pid_t pid;

	if (find_vvar(&lo, &hi))
		SKIP(return, "no [vvar] mapping in /proc/self/maps");
	ASSERT_EQ(0, make_whole(self->fd, 0600, &segid));

	pid = kids_fork(&self->kids);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		xpmem_apid_t apid;
		char *a;
		int fd;

		if (child_attach(segid, XPMEM_RDWR, whole_off(lo), hi - lo,
				 &fd, &apid, &a))
			_exit(1);
		_exit(all_sigbus(a, hi - lo) ? 2 : 0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
}

/* ---- no GUP on attachments -------------------------------------------- */

/*
 * @shmem: owner memory from a memfd, else private anonymous.  The test
 * process is owner and attacher; a child is the other process reading the
 * attachment with process_vm_readv.
 */
static void gup_refused(struct __test_metadata *_metadata,
			FIXTURE_DATA(access) *self, bool shmem)
{
	const size_t len = 2 * PAGE;
	struct timespec ts = { .tv_sec = 5 };
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	struct iovec l;
	char *buf, *a;
	int p[2], *w;
	void *va;
	pid_t pid;

	buf = shmem ? map_memfd(len) : map_anon(len);
	ASSERT_NE(NULL, buf);
	fill(buf, len, 21);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, len, NULL, &va));
	a = va;
	/* stores both ways */
	ASSERT_EQ(0, check(a, len, 21));
	a[PAGE + 5] = 'A';
	ASSERT_EQ('A', buf[PAGE + 5]);
	buf[PAGE + 6] = 'O';
	ASSERT_EQ('O', a[PAGE + 6]);

	/* vmsplice would keep a reference to the owner's page in a pipe */
	ASSERT_EQ(0, pipe(p));
	l = (struct iovec){ a + PAGE, PAGE };
	ASSERT_EQ(-1, vmsplice(p[1], &l, 1, 0));
	ASSERT_EQ(EFAULT, errno);

	/* shared futexes are keyed through GUP; the word differs from 1 */
	w = (int *)a;
	*w = 0;
	ASSERT_EQ(-1, sys_futex(w, FUTEX_WAIT, 1, &ts));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, sys_futex(w, FUTEX_WAKE, 1, NULL));
	ASSERT_EQ(EFAULT, errno);
	/* private futexes are not */
	ASSERT_EQ(-1, sys_futex(w, FUTEX_WAIT_PRIVATE, 1, &ts));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, sys_futex(w, FUTEX_WAKE_PRIVATE, 1, NULL));

	/* another process reads the attachment, and the owner's memory */
	pid = kids_fork(&self->kids);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char out[PAGE];
		struct iovec lo = { out, PAGE }, ro = { a + PAGE, PAGE };
		pid_t parent = getppid();

		if (process_vm_readv(parent, &lo, 1, &ro, 1, 0) != -1 ||
		    errno != EFAULT)
			_exit(1);
		ro.iov_base = buf + PAGE;
		if (process_vm_readv(parent, &lo, 1, &ro, 1, 0) != (ssize_t)PAGE ||
		    out[5] != 'A')
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));

	/* after REMOVE nothing is left that refers to the owner's page */
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_EQ(SIGBUS, probe(a, 0, 0));
	ASSERT_EQ(SIGBUS, probe(a + PAGE, 1, 'x'));
	ASSERT_EQ('A', buf[PAGE + 5]);
	close(p[0]);
	close(p[1]);
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/*
 * Shmem attachments were ordinary GUP-able PTEs in our VMA
 * (foreign page-cache folios: balance_dirty_pages on the owner's mapping,
 * and a live view kept after REMOVE through vmsplice).  Every attachment
 * PTE is a special PFN PTE now: vmsplice, process_vm_readv and shared
 * futexes fail with EFAULT; private futexes work.
 */
TEST_F(access, gup_refused_on_shmem_attachment)
{
	gup_refused(_metadata, self, true);
}

/* The same on an attachment of private anonymous memory. */
TEST_F(access, gup_refused_on_anon_attachment)
{
	gup_refused(_metadata, self, false);
}

/* ---- fork, read-only memory, read-only attachments -------------------- */

/*
 * Attachments are VM_DONTCOPY, but
 * madvise(MADV_DOFORK) cleared that and a fork child got a working
 * attachment.  Refused with EINVAL; the child has a hole there.
 */
TEST_F(access, madv_dofork_on_attachment_refused)
{
	struct own_att o;
	pid_t pid;

	ASSERT_EQ(0, own_att_setup(self->fd, &o, 2 * PAGE, 0600, XPMEM_RDWR,
				   'd'));
	ASSERT_EQ('d', o.a[PAGE]);
	EXPECT_EQ(-1, madvise(o.a, 2 * PAGE, MADV_DOFORK));
	EXPECT_EQ(EINVAL, errno);

	pid = kids_fork(&self->kids);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (probe(o.a, 0, 0) != SIGSEGV)
			_exit(1);
		if (probe(o.a + PAGE, 1, 'c') != SIGSEGV)
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, all_bytes(o.buf, 2 * PAGE, 'd'));
	ASSERT_EQ(0, own_att_teardown(self->fd, &o));
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * Reads through an RDWR attachment of never-touched
 * or zero-page-backed PROT_READ owner memory were SIGBUS (and reads of
 * such writable memory allocated owner pages).  Reads return zeros and
 * allocate nothing in the owner; writes are SIGBUS.
 */
TEST_F(access, rdwr_attach_of_untouched_readonly_memory_reads_zeros)
{
	const size_t len = 32 * PAGE;
	xpmem_segid_t segid;
	long rss0, rss1;
	char *buf;
	size_t i;
	pid_t pid;

	buf = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, madvise(buf, len, MADV_NOHUGEPAGE));
	/* the first half maps the zero page, the second half nothing */
	for (i = 0; i < len / 2; i += PAGE)
		ASSERT_EQ(0, *(volatile char *)(buf + i));
	rss0 = vma_rss_kb(buf);
	ASSERT_GE(rss0, 0);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));

	pid = kids_fork(&self->kids);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(segid, XPMEM_RDWR, len);

		for (i = 0; i < len; i += PAGE)
			if (probe(a + i, 0, 0))
				_exit(2);
		if (all_bytes(a, len, 0))
			_exit(3);
		if (probe(a, 1, 'w') != SIGBUS)
			_exit(4);
		if (probe(a + len - PAGE, 1, 'w') != SIGBUS)
			_exit(5);
		_exit(all_bytes(a, len, 0) ? 6 : 0);
	}
	ASSERT_EQ(0, wait_child(pid));
	rss1 = vma_rss_kb(buf);
	ASSERT_LT(rss1 - rss0, (long)(len / 1024)) {
		TH_LOG("owner Rss of the range grew from %ld to %ld kB",
		       rss0, rss1);
	}
	ASSERT_EQ(0, all_bytes(buf, len, 0));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/*
 * Every way to write through a
 * read-only attachment is refused: mprotect(PROT_WRITE) EACCES, mremap
 * growth, process_vm_writev EFAULT, PTRACE_POKEDATA into a traced child's
 * attachment.  Owner memory private anonymous and shmem.
 */
TEST_F(access, rdonly_write_bypass_refused)
{
	const size_t len = 2 * PAGE;
	int shmem;

	for (shmem = 0; shmem < 2; shmem++) {
		long word = 0x4141414141414141L;
		xpmem_segid_t segid;
		xpmem_apid_t apid;
		struct iovec l, r;
		struct chan ch;
		char *buf, *a, *ta;
		int status;
		void *va;
		pid_t pid;

		buf = shmem ? map_memfd(len) : map_anon(len);
		ASSERT_NE(NULL, buf);
		fill(buf, len, 31);
		ASSERT_EQ(0, xp_make(self->fd, buf, len, 0644, &segid));
		ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDONLY, &apid));
		ASSERT_EQ(0, xp_attach(self->fd, apid, 0, len, NULL, &va));
		a = va;
		ASSERT_EQ(0, check(a, len, 31));

		ASSERT_EQ(-1, mprotect(a, len, PROT_READ | PROT_WRITE));
		ASSERT_EQ(EACCES, errno);
		ASSERT_EQ(MAP_FAILED, mremap(a, len, 2 * len, 0));
		ASSERT_EQ(MAP_FAILED, mremap(a, len, 2 * len, MREMAP_MAYMOVE));
		l = (struct iovec){ &word, sizeof(word) };
		r = (struct iovec){ a, sizeof(word) };
		ASSERT_EQ(-1, process_vm_writev(getpid(), &l, 1, &r, 1, 0));
		ASSERT_EQ(EFAULT, errno);

		ASSERT_EQ(0, chan_init(&ch));
		pid = kids_fork(&self->kids);
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			xpmem_apid_t tap;
			int fd;

			chan_child(&ch);
			/* another process writes into ours */
			r = (struct iovec){ a + PAGE, sizeof(word) };
			if (process_vm_writev(getppid(), &l, 1, &r, 1, 0) != -1 ||
			    errno != EFAULT)
				_exit(1);
			/* and a tracer into the child's own attachment */
			if (child_attach(segid, XPMEM_RDONLY, 0, len, &fd,
					 &tap, &ta) || check(ta, len, 31))
				_exit(2);
			send_msg(ch.to_parent[1], &ta, sizeof(ta));
			if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
				_exit(3);
			raise(SIGSTOP);
			_exit(check(ta, len, 31) ? 4 : 0);
		}
		chan_parent(&ch);
		ASSERT_EQ(0, recv_msg(ch.to_parent[0], &ta, sizeof(ta)));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSTOPPED(status));
		errno = 0;
		ASSERT_EQ(-1, ptrace(PTRACE_POKEDATA, pid, ta, word));
		ASSERT_TRUE(errno == EFAULT || errno == EIO) {
			TH_LOG("PTRACE_POKEDATA: errno %d", errno);
		}
		ASSERT_EQ(0, ptrace(PTRACE_CONT, pid, NULL, NULL));
		ASSERT_EQ(0, wait_child(pid));
		close(ch.to_child[1]);
		close(ch.to_parent[0]);

		ASSERT_EQ(0, check(buf, len, 31));
		ASSERT_EQ(0, check(a, len, 31));
		ASSERT_EQ(0, xp_release(self->fd, apid));
		ASSERT_EQ(0, xp_remove(self->fd, segid));
		munmap(buf, len);
	}
	ASSERT_COUNTERS_AT_BASE();
}

TEST_HARNESS_MAIN
