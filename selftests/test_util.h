/* SPDX-License-Identifier: GPL-2.0 */
/*
 * test_util.h - helpers of every selftest suite (the xpmem_* suites
 * through xpmem_test.h, the lib_* suites directly), nothing about xpmem:
 * the byte pattern and anonymous buffers, SIGBUS/SIGSEGV probes, pipes,
 * descriptors between processes, child processes and user switches.
 *
 * Everything is static inline so that a suite using only some of the
 * helpers still builds with -Wall -Werror.  Each .c file of selftests/ is one
 * binary (the static VM build and the host build alike), so helpers
 * shared by suites live in headers.
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif

/* ---- buffers ------------------------------------------------------------ */

/*
 * The byte pattern of the suites: fill(@p, @len, @seed) writes
 * pattern_byte(@seed, i) at offset i, check() compares with it, and a test
 * that reads part of a filled buffer from offset @off compares byte i with
 * pattern_byte(@seed, @off + i).  Distinct seeds give distinct patterns,
 * and no byte repeats within a 4 KiB page.
 */
static inline unsigned char pattern_byte(unsigned int seed, size_t i)
{
	return (unsigned char)(seed * 131 + i * 7 + (i >> 12));
}

static inline void fill(void *p, size_t len, unsigned int seed)
{
	unsigned char *c = p;
	size_t i;

	for (i = 0; i < len; i++)
		c[i] = pattern_byte(seed, i);
}

static inline int check(const void *p, size_t len, unsigned int seed)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (c[i] != pattern_byte(seed, i))
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

/* ---- pipes and descriptors between processes --------------------------- */

/* Write all of @buf to @fd (through EINTR and short writes); 0 or -1. */
static inline int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read @len bytes from @fd; 0, or -1 on an error or an early end of file. */
static inline int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Block until every write end of the pipe @fd reads from is closed. */
static inline void wait_eof(int fd)
{
	ssize_t n;
	char c;

	do
		n = read(fd, &c, 1);
	while (n > 0 || (n < 0 && errno == EINTR));
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

/* ---- child processes --------------------------------------------------- */

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

/* Wait for @pid (through EINTR); its wait status, or -1. */
static inline int wait_status(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) != pid)
		if (errno != EINTR)
			return -1;
	return status;
}

/* Wait for @pid; return its exit code, 128 + signal, or -1. */
static inline int wait_child(pid_t pid)
{
	int status = wait_status(pid);

	if (status == -1)
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

/*
 * Become @uid with primary group @gid and the one supplementary group
 * @supp (none if 0): real, effective and saved ids all (as root).  0 or -1.
 * The kernel clears the parent-death signal and dumpability on the change.
 */
static inline int switch_user(uid_t uid, gid_t gid, gid_t supp)
{
	if (setgroups(supp ? 1 : 0, supp ? &supp : NULL) ||
	    setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -1;
	return 0;
}

/* ---- SIGBUS/SIGSEGV probes --------------------------------------------- */

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

#endif /* TEST_UTIL_H */
