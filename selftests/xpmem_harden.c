// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_harden - regression tests for the defects of issue 7 (hardening:
 * no user can crash, hang or corrupt through /dev/xpmem), through the raw
 * classic ioctl ABI.
 *
 * Each test names its defect number in the comment above it.  Runs as root
 * inside the test VM with the module loaded; skips when /dev/xpmem is
 * absent.  Multi-process tests fork, synchronise over pipes and check exit
 * statuses; children die with their parent (PR_SET_PDEATHSIG).
 *
 * Whole-address-space segments are made as MPI runtimes make them: from
 * the lowest page (WHOLE_BASE) with XPMEM_MAXADDR_SIZE, so the segment
 * offset of an address is its distance from WHOLE_BASE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret	447
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease	448
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal	424
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT		21
#endif

/* Start of the whole-address-space segments these tests make. */
#define WHOLE_BASE		PAGE

/* Module parameters limiting objects per user (defect 6; issue 20). */
enum { LIM_SEGMENTS, LIM_PERMITS, LIM_ATTACHMENTS, NR_LIMITS };
static const char *const limit_names[NR_LIMITS] = {
	"max_segments", "max_permits", "max_attachments",
};

/* ---- helpers ------------------------------------------------------------ */

/* MAKE the caller's whole address space, from WHOLE_BASE to the top. */
static int make_whole(int fd, int mode, xpmem_segid_t *segid)
{
	return xp_make(fd, (void *)WHOLE_BASE, XPMEM_MAXADDR_SIZE, mode, segid);
}

/* Offset of @addr in a segment made by make_whole(). */
static off_t whole_off(const void *addr)
{
	return (off_t)((uintptr_t)addr - WHOLE_BASE);
}

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
	int mfd = memfd_create("xpmem-harden", MFD_CLOEXEC);
	void *p = MAP_FAILED;

	if (mfd < 0)
		return NULL;
	if (!ftruncate(mfd, len))
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd,
			 0);
	close(mfd);
	return p == MAP_FAILED ? NULL : p;
}

static long param_read(const char *name)
{
	return sysfs_read_long(PARAM_DIR, name);
}

static int param_write(const char *name, long v)
{
	char path[128], buf[32];
	int fd, len, ret;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	len = snprintf(buf, sizeof(buf), "%ld\n", v);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ret = write(fd, buf, len) == len ? 0 : -1;
	close(fd);
	return ret;
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

/* Pass @fd over the unix socket @sock (SCM_RIGHTS). */
static int send_fd(int sock, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	char c = 'f';
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

/* Receive a descriptor sent with send_fd(); the new fd or -1. */
static int recv_fd(int sock)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	char c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_level != SOL_SOCKET ||
	    cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
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

#define MAX_KIDS	32

FIXTURE(harden)
{
	int fd;
	long segs, permits, atts;
	long saved[NR_LIMITS];		/* module parameters, -1: absent */
	pid_t kids[MAX_KIDS];		/* children, for the teardown */
	int nkids;
};

/*
 * fork_child(), remembering the child so that the teardown can end it if
 * the test fails before reaping it.
 */
static pid_t fork_tracked(FIXTURE_DATA(harden) *self)
{
	pid_t pid = fork_child();

	if (pid > 0 && self->nkids < MAX_KIDS)
		self->kids[self->nkids++] = pid;
	return pid;
}

/*
 * Kill and reap the children still alive: a failed test must not leave a
 * child holding objects into the next test's baseline.  Bounded: a child
 * that SIGKILL cannot end within 10 s (hung in the kernel) is left behind.
 */
static void reap_tracked(FIXTURE_DATA(harden) *self)
{
	int i, st, pidfd;

	for (i = 0; i < self->nkids; i++) {
		pid_t pid = self->kids[i];
		struct pollfd pfd;

		/* reaped already (ECHILD), or exited just now */
		if (waitpid(pid, &st, WNOHANG) != 0)
			continue;
		pidfd = syscall(SYS_pidfd_open, pid, 0);
		kill(pid, SIGKILL);
		if (pidfd >= 0) {
			pfd = (struct pollfd){ .fd = pidfd, .events = POLLIN };
			poll(&pfd, 1, 10000);
			close(pidfd);
		}
		waitpid(pid, &st, WNOHANG);
	}
}

FIXTURE_SETUP(harden)
{
	int i;

	self->nkids = 0;
	for (i = 0; i < NR_LIMITS; i++)
		self->saved[i] = -1;
	XP_FIXTURE_OPEN();
	for (i = 0; i < NR_LIMITS; i++)
		self->saved[i] = param_read(limit_names[i]);
}

/* Ends leftover children and restores the limits, also after a failure. */
FIXTURE_TEARDOWN(harden)
{
	int i;

	reap_tracked(self);
	for (i = 0; i < NR_LIMITS; i++)
		if (self->saved[i] >= 0 &&
		    param_read(limit_names[i]) != self->saved[i])
			param_write(limit_names[i], self->saved[i]);
	if (self->fd >= 0)
		close(self->fd);
}

/* ---- 1: attachments that map attachments -------------------------------- */

/*
 * Defect 1: a whole-address-space segment attached by its own process at a
 * fixed address X with the offset of X maps itself; touching X (or
 * munmap(X)) recursed until the kernel stack overflowed.  A fixed-address
 * ATTACH overlapping the very source range it would map is refused.
 */
TEST_F(harden, self_attach_fixed_over_source_refused)
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
 * Defect 1: a fixed-address ATTACH over an existing attachment of the
 * caller (MAP_FIXED would silently replace it) is refused with EINVAL.
 */
TEST_F(harden, fixed_attach_over_attachment_refused)
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
 * Defect 1: an attachment whose source range is another attachment of the
 * same process (private anonymous and shmem sources) maps fine, but every
 * read and write of it is SIGBUS, whether its source was faulted in or
 * not; munmap of all of them completes.
 */
TEST_F(harden, attachment_of_own_attachment_sigbus)
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

/* What the peer process of the two-process defect 1 tests reports. */
struct peer_info {
	xpmem_segid_t segid;
	char *a1;
	char *a2;
};

/*
 * Defect 1: process B attaches A's memory (shmem and private anonymous);
 * A attaches those attachments of B.  A's attachments map fine, but every
 * access is SIGBUS (the one-level attachments keep working); munmap
 * completes.
 */
TEST_F(harden, attachment_chain_across_processes_sigbus)
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

	pid = fork_tracked(self);
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
 * Defect 1: two processes attaching each other's attachments form a loop:
 * A's X maps B's Y, and B's Y maps A's X.  Touching either recursed until
 * the kernel stack overflowed.  Now every access is SIGBUS and munmap of
 * both completes.
 */
TEST_F(harden, attachment_cycle_between_processes_sigbus)
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

	pid = fork_tracked(self);
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

/* ---- 2: owner memory GUP refuses ----------------------------------------- */

/*
 * Defect 2: hmm_range_fault() has no secretmem check; an attacher could
 * read (and vmsplice) an owner's memfd_secret pages.  Now every access to
 * them through an attachment is SIGBUS.
 */
TEST_F(harden, secretmem_owner_pages_sigbus)
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

	pid = fork_tracked(self);
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
 * Defect 2: owner VMAs that GUP refuses (here VM_IO | VM_PFNMAP: the
 * [vvar] mapping every process has) are not mapped into attachments:
 * SIGBUS on read and write.
 */
TEST_F(harden, pfnmap_owner_range_sigbus)
{
	xpmem_segid_t segid;
	char *lo, *hi;
	pid_t pid;

	if (find_vvar(&lo, &hi))
		SKIP(return, "no [vvar] mapping in /proc/self/maps");
	ASSERT_EQ(0, make_whole(self->fd, 0600, &segid));

	pid = fork_tracked(self);
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

/* ---- 3: ABBA deadlock ---------------------------------------------------- */

#define ABBA_PAGES	64	/* attached from the peer, written each round */
#define ABBA_ROUNDS	30	/* rounds of thread 1 in each process */
#define ABBA_BIG	(1UL << 20)	/* populated and discarded by thread 3 */
#define ABBA_STALL_MS	20000	/* no progress this long: a hang */
#define ABBA_POLL_MS	1000

#define CHURN_ROUNDS	400	/* fault rounds of thread 1, churn variant */
#define CHURN_SENTINEL	2048	/* offset of a word the owner set per page */

/* Progress counters, in memory shared by the parent and both children. */
struct abba_shared {
	int rounds[2];			/* thread 1 (a futex word) */
	unsigned long cycles[2];	/* thread 2: mmap/munmap cycles */
	unsigned long holds[2];		/* thread 3: populate/discard */
	int target;			/* rounds thread 1 runs */
	bool churn;			/* thread 1: the churn variant */
};

struct abba_thread_arg {
	struct abba_shared *sh;
	int i;
};

static int abba_rounds(struct abba_shared *sh, int i)
{
	return __atomic_load_n(&sh->rounds[i], __ATOMIC_ACQUIRE);
}

/* Helper threads run until thread 1 of both processes is done. */
static bool abba_running(struct abba_shared *sh)
{
	return abba_rounds(sh, 0) < sh->target ||
	       abba_rounds(sh, 1) < sh->target;
}

/* Thread 2: mmap/munmap of unrelated memory (mmap_lock writer). */
static void *abba_mapper(void *p)
{
	struct abba_thread_arg *arg = p;
	struct abba_shared *sh = arg->sh;

	while (abba_running(sh)) {
		char *m = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return (void *)1;
		memset(m, 1, 16 * PAGE);
		munmap(m, 16 * PAGE);
		__atomic_add_fetch(&sh->cycles[arg->i], 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * Thread 3: populate and discard unrelated memory, holding mmap_lock for
 * read long enough that thread 2's write lock waits and new readers queue
 * behind it (rwsem handoff), as a busy runtime's allocator does.
 */
static void *abba_holder(void *p)
{
	struct abba_thread_arg *arg = p;
	struct abba_shared *sh = arg->sh;
	char *big = map_anon(ABBA_BIG);

	if (!big)
		return (void *)1;
	while (abba_running(sh)) {
		if (madvise(big, ABBA_BIG, MADV_POPULATE_WRITE) ||
		    madvise(big, ABBA_BIG, MADV_DONTNEED))
			return (void *)2;
		__atomic_add_fetch(&sh->holds[arg->i], 1, __ATOMIC_RELAXED);
	}
	munmap(big, ABBA_BIG);
	return NULL;
}

/* Where one process's exported buffer is. */
struct abba_info {
	xpmem_segid_t segid;
	char *buf;
};

/*
 * Thread 1 of the churn variant: each round drops the attachment's PTEs,
 * reads a word the peer set in one of its pages (a read ->fault), then
 * writes and reads back a word of this process's own (->pfn_mkwrite, or a
 * write ->fault); every 8th round it also reads the peer's last page, which
 * the peer made PROT_NONE, and must get SIGBUS (a failure found while the
 * owner's lock is busy must be reported, not retried).  No lockstep with
 * the peer: faults as fast as they go.  Returns 0 or a failing step.
 */
static int churn_rounds(struct abba_shared *sh, int i, char *a, size_t len)
{
	int round;

	for (round = 0; round < sh->target; round++) {
		size_t p = (size_t)(round * 7 + i) % (len / PAGE - 1);
		volatile uint64_t *s = (uint64_t *)(a + p * PAGE +
						    CHURN_SENTINEL);
		volatile uint64_t *w = (uint64_t *)(a + p * PAGE) + 8 + i;

		if (madvise(a, len, MADV_DONTNEED))
			return 10;
		if (*s != (uint64_t)(!i) * 1000 + p)
			return 11;
		*w = round;
		if (*w != (uint64_t)round)
			return 12;
		if (round % 8 == 0 && probe(a + len - PAGE, 0, 0) != SIGBUS)
			return 13;
		__atomic_store_n(&sh->rounds[i], round + 1, __ATOMIC_RELEASE);
	}
	return 0;
}

/*
 * One of the two processes: export the whole address space 0666, attach
 * the peer's buffer RDWR.  Thread 1, in rounds kept in step with the
 * peer's over a shared futex: read then write every page of the
 * attachment (the read maps a read-only PTE, the write goes through
 * ->pfn_mkwrite), then discard its own exported pages (MADV_DONTNEED) so
 * that the peer's next round writes fresh pages.  Threads 2 and 3 stress
 * the process's mmap_lock meanwhile.  Returns the exit code.
 */
static int abba_process(struct abba_shared *sh, int i, struct chan *ch)
{
	const size_t len = ABBA_PAGES * PAGE;
	struct abba_thread_arg arg = { .sh = sh, .i = i };
	struct abba_info mine, peer;
	void *ret2, *ret3;
	xpmem_apid_t apid;
	pthread_t t2, t3;
	int fd, round, cur;
	size_t p;
	char *a, m;
	void *va;

	fd = xp_open();
	mine.buf = map_anon(len);
	if (fd < 0 || !mine.buf)
		return 1;
	memset(mine.buf, 'a' + i, len);
	for (p = 0; p < len; p += PAGE)
		*(uint64_t *)(mine.buf + p + CHURN_SENTINEL) =
			(uint64_t)i * 1000 + p / PAGE;
	/* PROT_NONE rather than unmapped: no other mmap can land there */
	if (sh->churn && mprotect(mine.buf + len - PAGE, PAGE, PROT_NONE))
		return 1;
	if (make_whole(fd, 0666, &mine.segid))
		return 2;
	if (send_msg(ch->to_parent[1], &mine, sizeof(mine)) ||
	    recv_msg(ch->to_child[0], &peer, sizeof(peer)))
		return 3;
	if (xp_get(fd, peer.segid, XPMEM_RDWR, &apid) ||
	    xp_attach(fd, apid, whole_off(peer.buf), len, NULL, &va))
		return 4;
	a = va;
	if (pthread_create(&t2, NULL, abba_mapper, &arg) ||
	    pthread_create(&t3, NULL, abba_holder, &arg))
		return 5;
	if (sh->churn) {
		round = churn_rounds(sh, i, a, len);
		if (round)
			return round;
	}
	for (round = 0; !sh->churn && round < sh->target; round++) {
		for (p = 0; p < len; p += PAGE) {
			volatile char *q = a + p + (round % 64) * 8;
			char v = *q;	/* read first: a read-only PTE */

			*q = v + 1;	/* then write: ->pfn_mkwrite */
		}
		if (madvise(mine.buf, len, MADV_DONTNEED))
			return 6;
		__atomic_store_n(&sh->rounds[i], round + 1, __ATOMIC_RELEASE);
		sys_futex(&sh->rounds[i], FUTEX_WAKE, 1, NULL);
		/* until the peer has refreshed its pages for this round */
		while ((cur = abba_rounds(sh, !i)) < round + 1)
			if (sys_futex(&sh->rounds[!i], FUTEX_WAIT, cur, NULL) &&
			    errno != EAGAIN && errno != EINTR)
				return 7;
	}
	if (pthread_join(t2, &ret2) || pthread_join(t3, &ret3) || ret2 ||
	    ret3)
		return 8;
	/* keep this mm alive until the peer is done with it too */
	if (send_msg(ch->to_parent[1], "d", 1) ||
	    recv_msg(ch->to_child[0], &m, 1))
		return 9;
	return 0;
}

static unsigned long abba_progress(struct abba_shared *sh)
{
	return abba_rounds(sh, 0) + abba_rounds(sh, 1) +
	       __atomic_load_n(&sh->cycles[0], __ATOMIC_RELAXED) +
	       __atomic_load_n(&sh->cycles[1], __ATOMIC_RELAXED) +
	       __atomic_load_n(&sh->holds[0], __ATOMIC_RELAXED) +
	       __atomic_load_n(&sh->holds[1], __ATOMIC_RELAXED);
}

/*
 * Defect 3: A and B each hold an RDWR attachment of the other's
 * whole-space segment and write fresh pages (->pfn_mkwrite) while other
 * threads of each map, unmap and populate.  mkwrite waited for the other
 * mm's mmap_lock while holding its own: ABBA with the queued writers, both
 * hung in D state.  Both must finish their rounds.  A watchdog (poll()
 * timeouts on the pipes each child reports "done" on, or closes by dying)
 * fails the test when the shared progress counters stop moving.
 */
static void abba_run(struct __test_metadata *_metadata,
		     FIXTURE_DATA(harden) *self, struct abba_shared *sh)
{
	struct abba_info info[2];
	unsigned long last = 0, cur;
	int stalled = 0, done[2] = { 0, 0 }, i, r;
	struct pollfd pfd[2];
	struct chan ch[2];
	pid_t pid[2];
	char m;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, chan_init(&ch[i]));
		pid[i] = fork_tracked(self);
		ASSERT_GE(pid[i], 0);
		if (pid[i] == 0) {
			chan_child(&ch[i]);
			_exit(abba_process(sh, i, &ch[i]));
		}
		chan_parent(&ch[i]);
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, recv_msg(ch[i].to_parent[0], &info[i],
				      sizeof(info[i])));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, send_msg(ch[i].to_child[1], &info[!i],
				      sizeof(info[!i])));

	/* watchdog: until both said done (1), one died (-1), or a stall */
	while (done[0] >= 0 && done[1] >= 0 && (!done[0] || !done[1])) {
		for (i = 0; i < 2; i++)
			pfd[i] = (struct pollfd){
				.fd = done[i] ? -1 : ch[i].to_parent[0],
				.events = POLLIN,
			};
		r = poll(pfd, 2, ABBA_POLL_MS);
		ASSERT_GE(r, 0);
		for (i = 0; i < 2; i++)
			if (pfd[i].revents)
				done[i] = read(ch[i].to_parent[0], &m, 1) == 1 ?
					  1 : -1;
		cur = abba_progress(sh);
		if (r > 0 || cur != last) {
			last = cur;
			stalled = 0;
		} else if ((stalled += ABBA_POLL_MS) >= ABBA_STALL_MS) {
			break;
		}
	}
	if (stalled >= ABBA_STALL_MS || done[0] < 0 || done[1] < 0) {
		for (i = 0; i < 2; i++)
			kill(pid[i], SIGKILL);
	}
	ASSERT_LT(stalled, ABBA_STALL_MS) {
		TH_LOG("no progress for %d s: rounds %d/%d, mmap cycles %lu/%lu, populate/discard %lu/%lu",
		       ABBA_STALL_MS / 1000, sh->rounds[0], sh->rounds[1],
		       sh->cycles[0], sh->cycles[1], sh->holds[0],
		       sh->holds[1]);
	}
	for (i = 0; i < 2; i++)
		send_msg(ch[i].to_child[1], "x", 1);
	for (i = 0; i < 2; i++) {
		int np = sh->rounds[i], rc = wait_child(pid[i]);

		ASSERT_EQ(0, rc) {
			TH_LOG("process %d: %d rounds", i, np);
		}
	}
	ASSERT_EQ(sh->target, sh->rounds[0]);
	ASSERT_EQ(sh->target, sh->rounds[1]);
}

static struct abba_shared *abba_shared_new(int target, bool churn)
{
	struct abba_shared *sh = mmap(NULL, sizeof(*sh),
				      PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (sh == MAP_FAILED)
		return NULL;
	memset(sh, 0, sizeof(*sh));
	sh->target = target;
	sh->churn = churn;
	return sh;
}

/* The module's fault counters, for deltas over one test. */
struct fault_stats {
	long faults, retries, seq_retries, owner_waits, mkwrite_fast;
};

static void fault_stats_read(struct fault_stats *f)
{
	f->faults = stat_read("faults");
	f->retries = stat_read("fault_retries");
	f->seq_retries = stat_read("fault_seq_retries");
	f->owner_waits = stat_read("fault_owner_waits");
	f->mkwrite_fast = stat_read("mkwrite_fast");
}

TEST_F_TIMEOUT(harden, mutual_rdwr_attach_mkwrite_vs_mmap_no_deadlock, 240)
{
	struct abba_shared *sh = abba_shared_new(ABBA_ROUNDS, false);

	ASSERT_NE(NULL, sh);
	abba_run(_metadata, self, sh);
	TH_LOG("mmap cycles %lu/%lu, populate/discard %lu/%lu, fault_retries %ld, fault_seq_retries %ld",
	       sh->cycles[0], sh->cycles[1], sh->holds[0], sh->holds[1],
	       stat_read("fault_retries"), stat_read("fault_seq_retries"));
	ASSERT_COUNTERS_AT_BASE();
	munmap(sh, sizeof(*sh));
}

/*
 * The fault retry livelock (found by a stress run after the defects
 * above): attacher threads fault while owner threads mmap/munmap and
 * populate/discard in a loop.  A fault that gave up the owner's lock
 * between resolving and inserting lost to every owner mmap or munmap
 * (whole-address-space segments see them all), and one that had to wait
 * for the lock found it contended again at once: hundreds of retries per
 * fault, neither side progressing under load.  Both processes attach each
 * other, so both lock orders (struct mm_struct addresses) are exercised.
 * Each must finish its rounds with every value right, the mappers must
 * progress meanwhile, and the fault path must not spin.  A round is at
 * least two faults (the read, then ->pfn_mkwrite) and at most three lock
 * contentions (those two, and the write ->fault after a zap); the old
 * code took about 18 faults and 16 contentions per round on debian-6.12.
 */
TEST_F_TIMEOUT(harden, mutual_fault_vs_owner_churn_progress, 240)
{
	struct abba_shared *sh = abba_shared_new(CHURN_ROUNDS, true);
	struct fault_stats a, b;

	ASSERT_NE(NULL, sh);
	fault_stats_read(&a);
	abba_run(_metadata, self, sh);
	fault_stats_read(&b);
	TH_LOG("rounds %d/%d, mmap cycles %lu/%lu, populate/discard %lu/%lu; faults %ld, fault_retries %ld, fault_seq_retries %ld, fault_owner_waits %ld, mkwrite_fast %ld",
	       sh->rounds[0], sh->rounds[1], sh->cycles[0], sh->cycles[1],
	       sh->holds[0], sh->holds[1], b.faults - a.faults,
	       b.retries - a.retries, b.seq_retries - a.seq_retries,
	       b.owner_waits - a.owner_waits,
	       b.mkwrite_fast - a.mkwrite_fast);
	ASSERT_LT(0, sh->cycles[0] + sh->cycles[1]);
	ASSERT_LT(0, sh->holds[0] + sh->holds[1]);
	ASSERT_LE(2L * 2 * CHURN_ROUNDS, b.faults - a.faults);
	ASSERT_GE(4L * 2 * CHURN_ROUNDS, b.faults - a.faults);
	ASSERT_GE(3L * 2 * CHURN_ROUNDS, b.retries - a.retries);
	ASSERT_GE(2L * CHURN_ROUNDS, b.seq_retries - a.seq_retries);
	ASSERT_COUNTERS_AT_BASE();
	munmap(sh, sizeof(*sh));
}

/* ---- 4: MADV_FREE -------------------------------------------------------- */

/*
 * Defect 4: an attacher's writes into MADV_FREE'd (clean lazyfree) owner
 * pages did not dirty the owner's folios, and reclaim discarded them:
 * 16 of 16 pages lost.  After the attacher writes, MADV_PAGEOUT in the
 * owner must keep every page.
 */
TEST_F(harden, madv_free_attacher_writes_survive_pageout)
{
	const size_t len = 16 * PAGE;
	xpmem_segid_t segid;
	struct chan ch;
	char *buf, *ctl, m;
	cpu_set_t one;
	int lost = 0;
	size_t i;
	pid_t pid;

	/* madvise drains the LRU batches of the CPU it runs on */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));

	/* control, no xpmem: clean lazyfree pages are discarded here */
	ctl = map_anon(len);
	ASSERT_NE(NULL, ctl);
	memset(ctl, 'c', len);
	ASSERT_EQ(0, madvise(ctl, len, MADV_FREE));
	ASSERT_EQ(0, madvise(ctl, len, MADV_PAGEOUT));
	if (all_bytes(ctl, len, 0))
		SKIP(return, "MADV_PAGEOUT keeps clean MADV_FREE pages here: nothing to measure");
	munmap(ctl, len);

	/*
	 * The attacher is forked before the buffer exists: forked later, it
	 * would share the pages copy-on-write, and its first write would
	 * break COW in the owner, giving it fresh dirty pages.
	 */
	ASSERT_EQ(0, chan_init(&ch));
	pid = fork_tracked(self);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		xpmem_apid_t apid;
		char *a;
		int fd;

		chan_child(&ch);
		if (recv_msg(ch.to_child[0], &segid, sizeof(segid)))
			_exit(1);
		if (child_attach(segid, XPMEM_RDWR, 0, len, &fd, &apid, &a))
			_exit(2);
		fill(a, len, 44);
		send_msg(ch.to_parent[1], "w", 1);
		/* stay attached until the owner has checked */
		recv_msg(ch.to_child[0], &m, 1);
		_exit(0);
	}
	chan_parent(&ch);

	buf = map_anon(len);
	ASSERT_NE(NULL, buf);
	memset(buf, 'o', len);
	ASSERT_EQ(0, xp_make(self->fd, buf, len, 0600, &segid));
	ASSERT_EQ(0, madvise(buf, len, MADV_FREE));
	ASSERT_EQ(0, send_msg(ch.to_child[1], &segid, sizeof(segid)));
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1)) {
		TH_LOG("attacher exited with %d", wait_child(pid));
	}
	ASSERT_EQ(0, madvise(buf, len, MADV_PAGEOUT));
	for (i = 0; i < len; i += PAGE)
		if (!all_bytes(buf + i, PAGE, 0))
			lost++;
	ASSERT_EQ(0, check(buf, len, 44)) {
		TH_LOG("%d of %zu pages lost (zeros)", lost, len / PAGE);
	}
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, len);
}

/* ---- 5: OOM reaper ------------------------------------------------------- */

#define MRELEASE_ROUNDS	20
#define MRELEASE_BYTES	(32UL << 20)

/*
 * SIGKILL (pidfd_send_signal) a child that exported its whole address
 * space and touched MRELEASE_BYTES, then process_mrelease() it at once,
 * MRELEASE_ROUNDS times.  @detached: the child also attached part of its
 * own memory and unmapped that attachment again.
 */
static void mrelease_rounds(struct __test_metadata *_metadata,
			    FIXTURE_DATA(harden) *self, bool detached)
{
	int reaped = 0, esrch = 0, eagain = 0, other = 0, round;

	for (round = 0; round < MRELEASE_ROUNDS; round++) {
		int pidfd, err;
		struct chan ch;
		pid_t pid;
		char m;
		long r;

		ASSERT_EQ(0, chan_init(&ch));
		pid = fork_tracked(self);
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			xpmem_segid_t segid;
			xpmem_apid_t apid;
			char *mem;
			void *va;
			int fd;

			chan_child(&ch);
			/* 4 KiB pages, populated by the kernel: slow to tear down */
			mem = mmap(NULL, MRELEASE_BYTES, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (mem == MAP_FAILED ||
			    madvise(mem, MRELEASE_BYTES, MADV_NOHUGEPAGE) ||
			    madvise(mem, MRELEASE_BYTES, MADV_POPULATE_WRITE))
				_exit(1);
			memset(mem, 1, 16 * PAGE);
			fd = xp_open();
			if (fd < 0 || make_whole(fd, 0600, &segid))
				_exit(2);
			if (detached) {
				if (xp_get(fd, segid, XPMEM_RDWR, &apid) ||
				    xp_attach(fd, apid, whole_off(mem),
					      16 * PAGE, NULL, &va))
					_exit(3);
				if (all_bytes(va, 16 * PAGE, 1) ||
				    munmap(va, 16 * PAGE))
					_exit(4);
			}
			send_msg(ch.to_parent[1], "r", 1);
			recv_msg(ch.to_child[0], &m, 1);	/* never */
			_exit(5);
		}
		chan_parent(&ch);
		ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1));
		pidfd = syscall(SYS_pidfd_open, pid, 0);
		ASSERT_GE(pidfd, 0);
		ASSERT_EQ(0, syscall(SYS_pidfd_send_signal, pidfd, SIGKILL,
				     NULL, 0));
		r = syscall(SYS_process_mrelease, pidfd, 0);
		err = r ? errno : 0;
		ASSERT_EQ(128 + SIGKILL, wait_child(pid));
		close(pidfd);
		close(ch.to_child[1]);
		close(ch.to_parent[0]);
		if (err == ENOSYS)
			SKIP(return, "process_mrelease: ENOSYS");
		if (!err)
			reaped++;
		else if (err == ESRCH)
			esrch++;
		else if (err == EAGAIN)
			eagain++;
		else
			other++;
	}
	TH_LOG("process_mrelease: %d reaped, %d ESRCH, %d EAGAIN, %d other",
	       reaped, esrch, eagain, other);
	ASSERT_EQ(0, eagain);
	ASSERT_EQ(0, other);
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * Defect 5: the invalidate callback refused every non-blockable range, so
 * the OOM reaper (and process_mrelease) could not reap any owner of a
 * whole-address-space segment: EAGAIN.  Nothing is attached here.
 */
TEST_F_TIMEOUT(harden, mrelease_whole_space_owner_never_eagain, 180)
{
	mrelease_rounds(_metadata, self, false);
}

/*
 * Defect 5: the same with an attachment of the owner's memory that is not
 * mapped any more (it no longer needs a zap).
 */
TEST_F_TIMEOUT(harden, mrelease_after_detach_never_eagain, 180)
{
	mrelease_rounds(_metadata, self, true);
}

/* ---- 6: limits ----------------------------------------------------------- */

/* Set limit @i to @v; fails the test if the module has no such parameter. */
#define SET_LIMIT(i, v) do {						\
	ASSERT_LE(0, self->saved[i]) {					\
		TH_LOG("no module parameter " PARAM_DIR "%s",		\
		       limit_names[i]);					\
	}								\
	ASSERT_EQ(0, param_write(limit_names[i], v));			\
	ASSERT_EQ(v, param_read(limit_names[i]));			\
} while (0)

/*
 * Defect 6: segments were unlimited.  max_segments limits them per user
 * (across opens of /dev/xpmem; selftests/xpmem_limits.c has more): ENOSPC
 * beyond it, room again after a REMOVE.
 */
TEST_F(harden, limit_max_segments_enospc)
{
	xpmem_segid_t s[3], extra;
	char *buf;
	int fd, i;

	SET_LIMIT(LIM_SEGMENTS, 3);
	buf = map_anon(4 * PAGE);
	ASSERT_NE(NULL, buf);
	fd = xp_open();
	ASSERT_GE(fd, 0);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, xp_make(fd, buf + i * PAGE, PAGE, 0600, &s[i]));
	ASSERT_EQ(-ENOSPC, xp_make(fd, buf + 3 * PAGE, PAGE, 0600, &extra));
	ASSERT_EQ(-ENOSPC, make_whole(fd, 0600, &extra));
	/* per user: another descriptor of the same user has none either */
	ASSERT_EQ(-ENOSPC, xp_make(self->fd, buf, PAGE, 0600, &extra));
	/* a REMOVE makes room for exactly one */
	ASSERT_EQ(0, xp_remove(fd, s[1]));
	ASSERT_EQ(0, xp_make(fd, buf + 3 * PAGE, PAGE, 0600, &s[1]));
	ASSERT_EQ(-ENOSPC, xp_make(fd, buf + PAGE, PAGE, 0600, &extra));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, xp_remove(fd, s[i]));
	ASSERT_EQ(0, close(fd));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, 4 * PAGE);
}

/*
 * Defect 6: permits were unlimited.  max_permits limits them per user:
 * ENOSPC beyond it, room again after a RELEASE.
 */
TEST_F(harden, limit_max_permits_enospc)
{
	xpmem_apid_t p[3], extra;
	xpmem_segid_t segid;
	char *buf;
	int fd, i;

	SET_LIMIT(LIM_PERMITS, 3);
	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0600, &segid));
	fd = xp_open();
	ASSERT_GE(fd, 0);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, xp_get(fd, segid, XPMEM_RDONLY, &p[i]));
	ASSERT_EQ(-ENOSPC, xp_get(fd, segid, XPMEM_RDWR, &extra));
	/* per user, not per open */
	ASSERT_EQ(-ENOSPC, xp_get(self->fd, segid, XPMEM_RDWR, &extra));
	ASSERT_EQ(0, xp_release(fd, p[0]));
	ASSERT_EQ(0, xp_get(fd, segid, XPMEM_RDWR, &p[0]));
	ASSERT_EQ(-ENOSPC, xp_get(fd, segid, XPMEM_RDONLY, &extra));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, xp_release(fd, p[i]));
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

/*
 * Defect 6: attachments were limited only by max_map_count.
 * max_attachments limits them per user: ENOSPC beyond it, room again after
 * a DETACH or a munmap of one.
 */
TEST_F(harden, limit_max_attachments_enospc)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	void *a[3], *extra;
	char *buf;
	int fd, i;

	SET_LIMIT(LIM_ATTACHMENTS, 3);
	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	buf[0] = 'l';
	ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0600, &segid));
	fd = xp_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, xp_get(fd, segid, XPMEM_RDWR, &apid));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, xp_attach(fd, apid, 0, PAGE, NULL, &a[i]));
	ASSERT_EQ(-ENOSPC, xp_attach(fd, apid, 0, PAGE, NULL, &extra));
	ASSERT_EQ(0, xp_detach(fd, a[2]));
	ASSERT_EQ(0, xp_attach(fd, apid, 0, PAGE, NULL, &a[2]));
	ASSERT_EQ(-ENOSPC, xp_attach(fd, apid, 0, PAGE, NULL, &extra));
	ASSERT_EQ(0, munmap(a[1], PAGE));
	ASSERT_EQ(0, xp_attach(fd, apid, 0, PAGE, NULL, &a[1]));
	ASSERT_EQ(-ENOSPC, xp_attach(fd, apid, 0, PAGE, NULL, &extra));
	for (i = 0; i < 3; i++)
		ASSERT_EQ('l', *(char *)a[i]);
	ASSERT_EQ(0, xp_release(fd, apid));
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

/* ---- 7: no GUP on attachments -------------------------------------------- */

/*
 * @shmem: owner memory from a memfd, else private anonymous.  The test
 * process is owner and attacher; a child is the other process reading the
 * attachment with process_vm_readv.
 */
static void gup_refused(struct __test_metadata *_metadata,
			FIXTURE_DATA(harden) *self, bool shmem)
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
	pid = fork_tracked(self);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char out[PAGE];
		struct iovec lo = { out, PAGE }, ro = { a + PAGE, PAGE };
		pid_t parent = getppid();

		if (process_vm_readv(parent, &lo, 1, &ro, 1, 0) != -1 ||
		    errno != EFAULT)
			_exit(1);
		ro.iov_base = buf + PAGE;
		if (process_vm_readv(parent, &lo, 1, &ro, 1, 0) != PAGE ||
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
 * Defect 7: shmem attachments were ordinary GUP-able PTEs in our VMA
 * (foreign page-cache folios: balance_dirty_pages on the owner's mapping,
 * and a live view kept after REMOVE through vmsplice).  Every attachment
 * PTE is a special PFN PTE now: vmsplice, process_vm_readv and shared
 * futexes fail with EFAULT; private futexes work.
 */
TEST_F(harden, gup_refused_on_shmem_attachment)
{
	gup_refused(_metadata, self, true);
}

/* Defect 7: the same on an attachment of private anonymous memory. */
TEST_F(harden, gup_refused_on_anon_attachment)
{
	gup_refused(_metadata, self, false);
}

/* ---- 8: smaller ones ----------------------------------------------------- */

/*
 * Defect 8 (MADV_DOFORK): attachments are VM_DONTCOPY, but
 * madvise(MADV_DOFORK) cleared that and a fork child got a working
 * attachment.  Refused with EINVAL; the child has a hole there.
 */
TEST_F(harden, madv_dofork_on_attachment_refused)
{
	struct own_att o;
	pid_t pid;

	ASSERT_EQ(0, own_att_setup(self->fd, &o, 2 * PAGE, 0600, XPMEM_RDWR,
				   'd'));
	ASSERT_EQ('d', o.a[PAGE]);
	EXPECT_EQ(-1, madvise(o.a, 2 * PAGE, MADV_DOFORK));
	EXPECT_EQ(EINVAL, errno);

	pid = fork_tracked(self);
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

#define IPC_NS_TRIES	200

/*
 * Defect 8 (IPC namespace): a segment kept a bare pointer to the IPC
 * namespace it was made in.  P makes a 0666 segment in a fresh namespace
 * and leaves it (freeing it, before the fix); Q keeps creating namespaces,
 * one of which could reuse the freed object and match.  GET from every
 * other namespace is ENOENT.
 */
TEST_F(harden, ipc_namespace_left_and_reused_enoent)
{
	xpmem_segid_t segid;
	cpu_set_t one;
	xpmem_apid_t apid;
	char *buf;
	pid_t pid;

	/*
	 * One CPU for P, Q and the kworker that frees P's namespace (queued
	 * on the CPU that dropped it): the freed object is then on top of
	 * that CPU's slab freelist when Q allocates its next namespace.
	 */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0666, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDONLY, &apid));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	/* no task is left in the segment's namespace */
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	ASSERT_EQ(-ENOENT, xp_get(self->fd, segid, XPMEM_RDONLY, &apid));

	pid = fork_tracked(self);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = xp_open(), i, r;
		xpmem_apid_t ap;

		if (fd < 0)
			_exit(1);
		for (i = 0; i < IPC_NS_TRIES; i++) {
			if (unshare(CLONE_NEWIPC))
				_exit(2);
			r = xp_get(fd, segid, XPMEM_RDONLY, &ap);
			if (r == 0)
				_exit(3);	/* matched a reused namespace */
			if (r != -ENOENT)
				_exit(4);
		}
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

/*
 * Defect 8 (zero page): reads through an RDWR attachment of never-touched
 * or zero-page-backed PROT_READ owner memory were SIGBUS (and reads of
 * such writable memory allocated owner pages).  Reads return zeros and
 * allocate nothing in the owner; writes are SIGBUS.
 */
TEST_F(harden, rdwr_attach_of_untouched_readonly_memory_reads_zeros)
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

	pid = fork_tracked(self);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		xpmem_apid_t apid;
		char *a;
		int fd;

		if (child_attach(segid, XPMEM_RDWR, 0, len, &fd, &apid, &a))
			_exit(1);
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
 * Defect 8 (GET after owner exit): segments went away only with the last
 * close of the owner's descriptor, so a process that had been passed the
 * fd kept an exited owner's segments alive for GET and ATTACH.  Both are
 * ENOENT once the owner has exited.
 */
TEST_F(harden, get_attach_after_owner_exit_enoent_with_fd_held)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid, a2;
	struct chan co, ch;
	pid_t owner, helper;
	int sv[2];
	void *va;
	char m;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, chan_init(&ch));
	helper = fork_tracked(self);
	ASSERT_GE(helper, 0);
	if (helper == 0) {
		int kept;

		chan_child(&ch);
		close(sv[0]);
		kept = recv_fd(sv[1]);
		if (kept < 0)
			_exit(1);
		send_msg(ch.to_parent[1], "h", 1);
		recv_msg(ch.to_child[0], &m, 1);
		close(kept);
		_exit(0);
	}
	chan_parent(&ch);
	close(sv[1]);

	ASSERT_EQ(0, chan_init(&co));
	owner = fork_tracked(self);
	ASSERT_GE(owner, 0);
	if (owner == 0) {
		char *b = map_anon(PAGE);
		xpmem_segid_t s;
		int fd = xp_open();

		chan_child(&co);
		if (fd < 0 || !b || xp_make(fd, b, PAGE, 0666, &s))
			_exit(1);
		send_msg(co.to_parent[1], &s, sizeof(s));
		if (recv_msg(co.to_child[0], &m, 1))
			_exit(2);
		if (send_fd(sv[0], fd))
			_exit(3);
		_exit(0);
	}
	chan_parent(&co);
	ASSERT_EQ(0, recv_msg(co.to_parent[0], &segid, sizeof(segid)));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, send_msg(co.to_child[1], "g", 1));
	ASSERT_EQ(0, wait_child(owner));
	/* the helper holds the owner's /dev/xpmem descriptor */
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1));

	ASSERT_EQ(-ENOENT, xp_get(self->fd, segid, XPMEM_RDONLY, &a2));
	ASSERT_EQ(-ENOENT, xp_attach(self->fd, apid, 0, PAGE, NULL, &va));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, send_msg(ch.to_child[1], "x", 1));
	ASSERT_EQ(0, wait_child(helper));
	close(sv[0]);
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * Defect 8 (permission bypass, RDONLY): every way to write through a
 * read-only attachment is refused: mprotect(PROT_WRITE) EACCES, mremap
 * growth, process_vm_writev EFAULT, PTRACE_POKEDATA into a traced child's
 * attachment.  Owner memory private anonymous and shmem.
 */
TEST_F(harden, rdonly_write_bypass_refused)
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
		pid = fork_tracked(self);
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

#define GUESSES		1000

/* A random positive 63-bit id, never 0. */
static int64_t random_id(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)rand() << 32 | (uint64_t)rand();
	v >>= 1;
	return v ? (int64_t)v : 1;
}

/*
 * Defect 8 (permission bypass, ids): another process's apid is refused
 * for ATTACH and RELEASE (EACCES), another process's segid for REMOVE;
 * guessed segids and apids are ENOENT.
 */
TEST_F(harden, foreign_apid_and_guessed_ids_refused)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *buf;
	void *va;
	pid_t pid;
	int i;

	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	buf[0] = 'i';
	ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0666, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));

	pid = fork_tracked(self);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = xp_open();

		if (fd < 0)
			_exit(1);
		if (xp_attach(fd, apid, 0, PAGE, NULL, &va) != -EACCES)
			_exit(2);
		if (xp_release(fd, apid) != -EACCES)
			_exit(3);
		if (xp_remove(fd, segid) != -EACCES)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	/* the permit still works for its owner */
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, PAGE, NULL, &va));
	ASSERT_EQ('i', *(char *)va);
	ASSERT_EQ(0, xp_detach(self->fd, va));

	for (i = 0; i < GUESSES; i++) {
		int64_t id = random_id();
		xpmem_apid_t ap;

		if (id == segid || id == apid)
			continue;
		ASSERT_EQ(-ENOENT, xp_get(self->fd, id, XPMEM_RDONLY, &ap));
		ASSERT_EQ(-ENOENT, xp_attach(self->fd, id, 0, PAGE, NULL,
					     &va));
	}
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

/*
 * Defect 8 (fault_retries bursts): the fault path counts sequence retries
 * (an invalidation raced with the fault) apart from lock retries.  Values
 * are not checked, only that the counters are there.
 */
TEST_F(harden, stats_count_fault_seq_retries)
{
	ASSERT_LE(0, stat_read("fault_retries"));
	ASSERT_LE(0, stat_read("fault_seq_retries"));
	ASSERT_LE(0, stat_read("fault_owner_waits"));
	ASSERT_LE(0, stat_read("mkwrite_fast"));
}

TEST_HARNESS_MAIN
