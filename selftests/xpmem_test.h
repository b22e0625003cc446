/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xpmem_test.h - helpers shared by the xpmem_* selftests: raw classic
 * ioctl wrappers, the stats counters, SIGBUS/SIGSEGV probes, byte
 * patterns, pipes and descriptors between processes, child process
 * handling and the module's limit parameters.
 *
 * Everything is static inline so that a suite using only some of the
 * helpers still builds with -Wall -Werror.
 */
#ifndef XPMEM_TEST_H
#define XPMEM_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#include "uring_probe.h"
#include "xt_wait.h"
#include "xpmem_sysfs.h"
#include "xpmem_uapi.h"

/*
 * The base page size, as the kernel says (4 KiB on x86_64; 4, 16 or 64 KiB
 * on arm64): every size and offset the suites derive from pages follows
 * it.  sysconf() reads it from the aux vector (no system call).
 */
static inline size_t xt_page_size(void)
{
	static size_t page;

	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

#define PAGE		xt_page_size()
/* Pages one PMD maps: a page table page of 8-byte entries (512 at 4 KiB). */
#define PMD_PAGES	(PAGE / 8)

/*
 * The end of the user address space (the kernel's TASK_SIZE, where a
 * whole-address-space segment ends): 0x7ffffffff000 on x86_64 with 4-level
 * page tables, 1 << 48 on arm64 with 48-bit addresses.  Found by bisection
 * on the pages MAP_FIXED_NOREPLACE may place (EEXIST counts: a page that
 * is mapped already is below the end too).
 */
static inline uint64_t xt_user_top(void)
{
	static uint64_t top;
	uint64_t lo = 1ULL << 32, hi = 1ULL << 57, mid;	/* lo valid, hi not */
	void *p;

	if (top)
		return top;
	while (hi - lo > PAGE) {
		mid = lo + ((hi - lo) / 2 & ~(uint64_t)(PAGE - 1));
		p = mmap((void *)(uintptr_t)mid, PAGE, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0);
		if (p != MAP_FAILED)
			munmap(p, PAGE);
		if (p != MAP_FAILED || errno == EEXIST)
			lo = mid;
		else
			hi = mid;
	}
	top = lo + PAGE;
	return top;
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif

/* ---- raw ioctl wrappers: 0 or -errno ------------------------------------ */

static inline int xp_open(void)
{
	return open(XPMEM_DEV_PATH, O_RDWR | O_CLOEXEC);
}

/* An ioctl's non-negative result (EXT_COPY: bytes copied), or -errno. */
static inline long xp_ioctl_ret(int fd, unsigned long cmd, void *arg)
{
	long ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

static inline int xp_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/*
 * Bytes one attacher fault maps at most (QUERY's fault_window_pages): a
 * page table's worth by default, 2 MiB with 4 KiB pages and 512 MiB with
 * 64 KiB pages.  One page if QUERY fails.
 */
static inline size_t xt_fault_window(int fd)
{
	struct xpmem_ext_query q = { 0 };

	if (xp_ioctl(fd, XPMEM_CMD_EXT_QUERY, &q) || !q.fault_window_pages)
		return PAGE;
	return (size_t)q.fault_window_pages * PAGE;
}

static inline int xp_make(int fd, void *addr, size_t size, int mode,
			  xpmem_segid_t *segid)
{
	struct xpmem_cmd_make c = {
		.vaddr = (uintptr_t)addr, .size = size,
		.permit_type = XPMEM_PERMIT_MODE, .permit_value = mode,
	};
	int ret = xp_ioctl(fd, XPMEM_CMD_MAKE, &c);

	*segid = c.segid;
	return ret;
}

static inline int xp_get(int fd, xpmem_segid_t segid, int flags,
			 xpmem_apid_t *apid)
{
	struct xpmem_cmd_get c = {
		.segid = segid, .flags = flags,
		.permit_type = XPMEM_PERMIT_MODE,
	};
	int ret = xp_ioctl(fd, XPMEM_CMD_GET, &c);

	*apid = c.apid;
	return ret;
}

static inline int xp_attach(int fd, xpmem_apid_t apid, off_t off, size_t size,
			    void *want, void **out)
{
	struct xpmem_cmd_attach c = {
		.apid = apid, .offset = off, .size = size,
		.vaddr = (uintptr_t)want, .fd = fd,
	};
	int ret = xp_ioctl(fd, XPMEM_CMD_ATTACH, &c);

	*out = (void *)(uintptr_t)c.vaddr;
	return ret;
}

/* EXT_COPY: bytes copied, or -errno. */
static inline long xp_ext_copy(int fd, struct xpmem_ext_copy *c)
{
	return xp_ioctl_ret(fd, XPMEM_CMD_EXT_COPY, c);
}

static inline int xp_detach(int fd, void *addr)
{
	struct xpmem_cmd_detach c = { .vaddr = (uintptr_t)addr };

	return xp_ioctl(fd, XPMEM_CMD_DETACH, &c);
}

static inline int xp_release(int fd, xpmem_apid_t apid)
{
	struct xpmem_cmd_release c = { .apid = apid };

	return xp_ioctl(fd, XPMEM_CMD_RELEASE, &c);
}

static inline int xp_remove(int fd, xpmem_segid_t segid)
{
	struct xpmem_cmd_remove c = { .segid = segid };

	return xp_ioctl(fd, XPMEM_CMD_REMOVE, &c);
}

/*
 * Whole-address-space segments are made as MPI runtimes make them: from
 * the lowest page (WHOLE_BASE) with XPMEM_MAXADDR_SIZE, so the segment
 * offset of an address is its distance from WHOLE_BASE.
 */
#define WHOLE_BASE	PAGE

/* MAKE the caller's whole address space, from WHOLE_BASE to the top. */
static inline int make_whole(int fd, int mode, xpmem_segid_t *segid)
{
	return xp_make(fd, (void *)WHOLE_BASE, XPMEM_MAXADDR_SIZE, mode, segid);
}

/* Offset of @addr in a segment made by make_whole(). */
static inline off_t whole_off(const void *addr)
{
	return (off_t)((uintptr_t)addr - WHOLE_BASE);
}

/* ---- helpers ------------------------------------------------------------ */

/*
 * SIGBUS/SIGSEGV probes.  probe_install() sets a handler for both signals
 * in the process; touch() then reads or writes a byte and reports the
 * signal the access raised, in any thread.  A fault outside touch() is
 * recorded in *crash_addr_slot (if set) and kills the process as usual.
 */
static __thread sigjmp_buf probe_env;
static __thread volatile sig_atomic_t probing;
static volatile uint64_t *crash_addr_slot;

static inline void probe_fault_handler(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	(void)uc;
	if (probing) {
		probing = 0;
		siglongjmp(probe_env, sig);
	}
	/* Not an access we expected to fault: die of it (reported). */
	if (crash_addr_slot)
		*crash_addr_slot = (uint64_t)(uintptr_t)si->si_addr;
	sigaction(sig, &dfl, NULL);
}

/* Install probe_fault_handler() for SIGBUS and SIGSEGV; the old ones in @old. */
static inline void probe_install_save(struct sigaction old[2])
{
	struct sigaction sa = {
		.sa_sigaction = probe_fault_handler,
		.sa_flags = SA_SIGINFO | SA_NODEFER,
	};

	sigaction(SIGBUS, &sa, old ? &old[0] : NULL);
	sigaction(SIGSEGV, &sa, old ? &old[1] : NULL);
}

static inline void probe_install(void)
{
	probe_install_save(NULL);
}

/* Read or write one byte; 0, or the signal (SIGBUS/SIGSEGV) it raised. */
static inline int touch(volatile uint8_t *p, int write, uint8_t v)
{
	int sig;

	sig = sigsetjmp(probe_env, 0);
	if (!sig) {
		probing = 1;
		if (write)
			*p = v;
		else
			(void)*p;
		probing = 0;
	}
	return sig;
}

/* Read a 64-bit word; 0 or the signal. */
static inline int touch_read64(volatile uint64_t *p, uint64_t *out)
{
	int sig;

	sig = sigsetjmp(probe_env, 0);
	if (!sig) {
		probing = 1;
		*out = *p;
		probing = 0;
	}
	return sig;
}

static inline int touch_write64(volatile uint64_t *p, uint64_t v)
{
	int sig;

	sig = sigsetjmp(probe_env, 0);
	if (!sig) {
		probing = 1;
		*p = v;
		probing = 0;
	}
	return sig;
}

/*
 * Touch @p with the probe handler installed only for this access; return
 * 0, or the signal (SIGBUS/SIGSEGV) the access raised.
 */
static inline int probe(volatile char *p, int write, char val)
{
	struct sigaction old[2];
	int sig;

	probe_install_save(old);
	sig = touch((volatile uint8_t *)p, write, (uint8_t)val);
	sigaction(SIGBUS, &old[0], NULL);
	sigaction(SIGSEGV, &old[1], NULL);
	return sig;
}

static inline void fill(void *p, size_t len, unsigned int seed)
{
	unsigned char *c = p;
	size_t i;

	for (i = 0; i < len; i++)
		c[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 12));
}

static inline int check(const void *p, size_t len, unsigned int seed)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (c[i] != (unsigned char)(seed * 131 + i * 7 + (i >> 12)))
			return -1;
	return 0;
}

static inline int all_bytes(const void *p, size_t len, unsigned char v)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (c[i] != v)
			return -1;
	return 0;
}

static inline void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

/*
 * Fault in [@p, @p + @len) for writing: MADV_POPULATE_WRITE (5.14), or a
 * write to each page where the kernel predates it (EINVAL).  The fallback
 * does not hold the mmap_lock across the range as the madvise does.
 */
static inline int populate_write(void *p, size_t len)
{
	volatile char *c = p;

	if (!madvise(p, len, MADV_POPULATE_WRITE))
		return 0;
	if (errno != EINVAL)
		return -1;
	for (size_t i = 0; i < len; i += PAGE)
		c[i] = c[i];
	return 0;
}

/* @len bytes shared with fork children. */
static inline void *map_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* A one-byte message channel between two processes. */
struct chan {
	int to_child[2];
	int to_parent[2];
};

static inline int chan_init(struct chan *c)
{
	if (pipe(c->to_child) || pipe(c->to_parent))
		return -1;
	return 0;
}

/* In the parent after fork: close the child's ends of @c, so that a child
 * that exits early shows as end of file instead of a hang. */
static inline void chan_parent(struct chan *c)
{
	close(c->to_child[0]);
	close(c->to_parent[1]);
}

/* In the child after fork: close the parent's ends of @c. */
static inline void chan_child(struct chan *c)
{
	close(c->to_child[1]);
	close(c->to_parent[0]);
}

static inline int send_msg(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

static inline int recv_msg(int fd, void *buf, size_t len)
{
	return read(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

/*
 * fork(); the child dies with its parent, so a failed test leaves no
 * process holding the device or an attachment, and inherits no unflushed
 * output.
 */
static inline pid_t fork_child(void)
{
	pid_t ppid = getpid(), pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != ppid)
			_exit(99);
	}
	return pid;
}

/* Wait for @pid; return its exit code, 128 + signal, or -1. */
static inline int wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

/* A wait status in words: "exit 3", "signal 9 (Killed)". */
static inline void describe_status(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, len, "status 0x%x", st);
}

/*
 * waitpid with a bound: a process stuck in the kernel (D state) must not
 * hang the test.  pidfd + poll; returns 0 and the status, or -1 on timeout.
 */
static inline int wait_bounded(pid_t pid, int *status, int seconds)
{
	int pfd = syscall(SYS_pidfd_open, pid, 0), r;
	struct pollfd p;

	if (pfd >= 0) {
		p.fd = pfd;
		p.events = POLLIN;
		r = poll(&p, 1, seconds * 1000);
		close(pfd);
		if (r == 0)
			return -1;
	}
	return waitpid(pid, status, 0) == pid ? 0 : -1;
}

/*
 * The children of one test, remembered so that the fixture's teardown can
 * end those a failed test left: no child may hold objects into the next
 * test's baseline.
 */
#define KIDS_MAX	32

struct kids {
	pid_t pid[KIDS_MAX];
	int n;
};

/* fork_child(), remembering the child in @k. */
static inline pid_t kids_fork(struct kids *k)
{
	pid_t pid = fork_child();

	if (pid > 0 && k->n < KIDS_MAX)
		k->pid[k->n++] = pid;
	return pid;
}

/*
 * Kill and reap the children of @k still alive.  Bounded: a child that
 * SIGKILL cannot end within 10 s (hung in the kernel) is left behind.
 */
static inline void kids_reap(struct kids *k)
{
	int i, st, pidfd;

	for (i = 0; i < k->n; i++) {
		pid_t pid = k->pid[i];
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
	k->n = 0;
}

/* Send descriptor @fd over the unix socket @sock (SCM_RIGHTS); 0 or -1. */
static inline int send_fd(int sock, int fd)
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

/* Receive a descriptor sent with send_fd() (close-on-exec); it or -1. */
static inline int recv_fd(int sock)
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

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_level != SOL_SOCKET ||
	    cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* In a child: open the device, GET and ATTACH; 0 or a line number. */
static inline int child_attach(xpmem_segid_t segid, int flags, off_t off,
			       size_t size, int *fdp, xpmem_apid_t *apidp,
			       char **addr)
{
	void *a;

	*fdp = xp_open();
	if (*fdp < 0)
		return __LINE__;
	if (xp_get(*fdp, segid, flags, apidp))
		return __LINE__;
	if (xp_attach(*fdp, *apidp, off, size, NULL, &a))
		return __LINE__;
	*addr = a;
	return 0;
}

/*
 * In a child: GET @segid with @flags and ATTACH [0, @size) of it, or
 * _exit(1).  The descriptor and the apid stay until the child exits.
 */
static inline char *child_attach_or_exit(xpmem_segid_t segid, int flags,
					 size_t size)
{
	xpmem_apid_t apid;
	char *a;
	int fd;

	if (child_attach(segid, flags, 0, size, &fd, &apid, &a))
		_exit(1);
	return a;
}

/*
 * The test process's own anonymous buffer, exported and attached by the
 * test process itself (the owner and the attacher are the same mm).
 */
struct own_att {
	char *buf;		/* the owner's side */
	size_t len;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *a;		/* the attachment */
};

/* mmap @len, fill with @c, MAKE with @mode, GET with @flags, ATTACH it all. */
static inline int own_att_setup(int fd, struct own_att *o, size_t len,
				int mode, int flags, int c)
{
	void *va = NULL;
	int ret;

	o->len = len;
	o->buf = map_anon(len);
	if (!o->buf)
		return -ENOMEM;
	memset(o->buf, c, len);
	ret = xp_make(fd, o->buf, len, mode, &o->segid);
	if (!ret)
		ret = xp_get(fd, o->segid, flags, &o->apid);
	if (!ret)
		ret = xp_attach(fd, o->apid, 0, len, NULL, &va);
	o->a = va;
	return ret;
}

/*
 * The test process's own @len bytes (fill() seed 31) exported with mode
 * 0600, and an XPMEM_RDWR and an XPMEM_RDONLY permit of its own to them.
 */
struct own_seg {
	char *buf;
	size_t len;
	xpmem_segid_t segid;
	xpmem_apid_t rw, ro;
};

static inline int own_seg_setup(int fd, struct own_seg *o, size_t len)
{
	o->len = len;
	o->buf = map_anon(len);
	if (!o->buf)
		return -ENOMEM;
	fill(o->buf, len, 31);
	if (xp_make(fd, o->buf, len, 0600, &o->segid) ||
	    xp_get(fd, o->segid, XPMEM_RDWR, &o->rw) ||
	    xp_get(fd, o->segid, XPMEM_RDONLY, &o->ro))
		return -1;
	return 0;
}

/* What own_seg_setup() made goes, whatever of it is left. */
static inline void own_seg_teardown(int fd, struct own_seg *o)
{
	xp_release(fd, o->rw);
	xp_release(fd, o->ro);
	xp_remove(fd, o->segid);
	if (o->buf)
		munmap(o->buf, o->len);
}

/* RELEASE (which detaches), REMOVE, munmap the owner's buffer. */
static inline int own_att_teardown(int fd, struct own_att *o)
{
	int ret = xp_release(fd, o->apid);

	if (!ret)
		ret = xp_remove(fd, o->segid);
	munmap(o->buf, o->len);
	return ret;
}

static inline long sys_futex(void *addr, int op, int val,
			     const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

/*
 * The object counters of a fixture with fields segs/permits/atts (read in
 * its setup) are back where they were.
 */
/*
 * In a FIXTURE_SETUP with fields fd and segs/permits/atts: open the
 * device (skip the test without the module) and read the object counters
 * ASSERT_COUNTERS_AT_BASE() compares with.
 */
#define XP_FIXTURE_OPEN() do {						\
	self->fd = xp_open();						\
	if (self->fd < 0)						\
		SKIP(return, "no %s (module not loaded)", XPMEM_DEV_PATH); \
	self->segs = stat_read("segments");				\
	self->permits = stat_read("permits");				\
	self->atts = stat_read("attachments");				\
} while (0)

#define ASSERT_COUNTERS_AT_BASE() do {					\
	ASSERT_EQ(self->segs, stat_read("segments"));			\
	ASSERT_EQ(self->permits, stat_read("permits"));			\
	ASSERT_EQ(self->atts, stat_read("attachments"));		\
} while (0)

#endif /* XPMEM_TEST_H */
