// SPDX-License-Identifier: GPL-2.0
/*
 * lib_xpmem.c - libxpmem test suite, one binary for both backends.
 *
 * The backend comes from the environment: XPMEM_BACKEND=shm (host, and the
 * VM with the module unloaded), XPMEM_BACKEND=kernel (VM with the module),
 * or unset (auto).  Every test first checks that the library chose what
 * XPMEM_BACKEND asked for; tests that only make sense on one backend skip
 * on the other with a reason.  Children report through exit statuses;
 * synchronisation is by pipes, never by sleeping.  The perm and xuser
 * tests need root: they fork owners and peers that drop to alice, bob and
 * carol (uid/gid 1000/1001/1002) and check the permit modes across uids.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <sys/uio.h>
#include <xpmem.h>

#include "kselftest_harness.h"
#include "uring_probe.h"

#define NPAGES		4
#define NATTACHERS	8
#define NTHREADS	8
#define NTHREAD_ITERS	20
#define LEAK_CYCLES	30
#define FIRST_TOUCH_MB	32
#define FIRST_TOUCH_ROUNDS 3
#define PROBE_ENV	"XPMEM_LIBTEST_PROBE"

/* Exit codes of helper children. */
#define CHILD_OK	0
#define CHILD_EACCES	1
#define CHILD_SKIP	77

static size_t page;

/* ---- helpers ------------------------------------------------------------ */

static int write_all(int fd, const void *buf, size_t len)
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

static int read_all(int fd, void *buf, size_t len)
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

/* Block until the other end of @fd is closed. */
static void wait_eof(int fd)
{
	char c;

	while (read(fd, &c, 1) > 0 || errno == EINTR)
		;
}

static int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 7 + (i >> 12));
}

static int check(const unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(seed + i * 7 + (i >> 12)))
			return -1;
	return 0;
}

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "re");
	int c, n = 0;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Whether /proc/self/maps shows @addr backed by one of our objects. */
static int mapped_from_object(void *addr)
{
	char line[512], want[32];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = 0;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)addr);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want)))
			found = strstr(line, "/xpmem-") != NULL;
	fclose(f);
	return found;
}

/* get + attach the whole @size of @segid; NULL on failure. */
static void *get_attach(xpmem_segid_t segid, int flags, size_t size,
			xpmem_apid_t *apid)
{
	struct xpmem_addr addr;
	void *p;

	*apid = xpmem_get(segid, flags, XPMEM_PERMIT_MODE, NULL);
	if (*apid == -1)
		return NULL;
	addr.apid = *apid;
	addr.offset = 0;
	p = xpmem_attach(addr, size, NULL);
	if (p == (void *)-1) {
		xpmem_release(*apid);
		return NULL;
	}
	return p;
}

static void *anon(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * probe_access - touch @p in this process (a forked child would not do:
 * the kernel backend's attachments are not inherited across fork) and
 * return the signal that raised, or 0.
 */
static sigjmp_buf probe_env;
static volatile sig_atomic_t probe_sig;

static void probe_handler(int sig)
{
	probe_sig = sig;
	siglongjmp(probe_env, 1);
}

static int probe_access(volatile unsigned char *p, int write)
{
	struct sigaction sa = { .sa_handler = probe_handler };
	struct sigaction old_segv, old_bus;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	probe_sig = 0;
	if (!sigsetjmp(probe_env, 1)) {
		if (write)
			*p = 1;
		else
			(void)*p;
	}
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
	return probe_sig;
}

/*
 * become - drop to @uid/@gid with the one supplementary group @supp (none
 * if 0), in a child of the test: it dies with its parent.
 */
static int become(uid_t uid, gid_t gid, gid_t supp)
{
	if (setgroups(supp ? 1 : 0, supp ? &supp : NULL) ||
	    setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -1;
	/* The credential change cleared both; same-uid shm peers need it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0))
		return -1;
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

static int drop_to(uid_t uid, gid_t gid)
{
	return become(uid, gid, 0);
}

/* fork() a child that dies with the test process. */
static pid_t fork_child(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid == 0 &&
	    (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() != parent))
		_exit(99);
	return pid;
}

static int measure_first_touch(uint64_t *att_ns, uint64_t *memfd_ns);

/*
 * Probe mode: run with PROBE_ENV set (by the env_* tests, through execve of
 * /proc/self/exe) this reports what a fresh process decides and exits
 * before the harness starts.
 */
__attribute__((constructor)) static void probe_main(void)
{
	const char *why;
	int be, init, err;

	if (!getenv(PROBE_ENV))
		return;
	if (!strcmp(getenv(PROBE_ENV), "hold")) {
		/* An owner after exec: say so, then wait for EOF on stdin. */
		if (write(1, "x", 1) != 1)
			_exit(1);
		wait_eof(0);
		_exit(0);
	}
	if (!strcmp(getenv(PROBE_ENV), "touch")) {
		uint64_t att = 0, memfd = 0;
		int ret;

		page = (size_t)sysconf(_SC_PAGESIZE);
		ret = measure_first_touch(&att, &memfd);
		printf("touch att=%llu memfd=%llu ret=%d\n",
		       (unsigned long long)att, (unsigned long long)memfd, ret);
		fflush(stdout);
		_exit(ret);
	}
	init = xpmem_init();
	err = errno;
	be = xpmem_ext_backend(&why);
	printf("backend=%d init=%d errno=%d version=%d\n", be, init,
	       init ? err : 0, xpmem_version());
	fflush(stdout);
	_exit(0);
}

/* CLOCK_MONOTONIC in ns */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A probe that has not ended by then is shown and killed. */
#define PROBE_DEADLINE_S	40

/* Each thread of @pid: state, wait channel and kernel stack (as root). */
static void show_stuck(pid_t pid)
{
	char path[320], buf[2048];
	struct dirent *e;
	DIR *d;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		static const char *const what[] = { "stat", "wchan", "stack" };

		if (e->d_name[0] == '.')
			continue;
		for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
			snprintf(path, sizeof(path), "/proc/%d/task/%s/%s",
				 (int)pid, e->d_name, what[i]);
			fd = open(path, O_RDONLY);
			if (fd < 0)
				continue;
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n > 0) {
				buf[n] = 0;
				ksft_print_msg("probe %d thread %s %s: %s\n",
					       (int)pid, e->d_name, what[i],
					       buf);
			}
		}
	}
	closedir(d);
}

/*
 * Run ourselves in probe mode with @env; capture stdout+stderr in @out.
 * The probe dies with the test; one still running after PROBE_DEADLINE_S
 * is shown (show_stuck()) and killed, so that a hang says where it was
 * and leaves nothing behind for the next test.
 */
static int run_probe(char *const env[], char *out, size_t outlen)
{
	uint64_t deadline = now_ns() + PROBE_DEADLINE_S * 1000000000ULL;
	struct pollfd p = { .events = POLLIN };
	int pfd[2];
	pid_t pid, parent = getpid();
	size_t got = 0;
	ssize_t n;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "lib_xpmem-probe", NULL };

		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) ||
		    getppid() != parent)
			_exit(99);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execve("/proc/self/exe", argv, env);
		_exit(127);
	}
	close(pfd[1]);
	p.fd = pfd[0];
	while (got < outlen - 1) {
		uint64_t now = now_ns();

		if (now >= deadline) {
			ksft_print_msg("probe %d still running after %d s\n",
				       (int)pid, PROBE_DEADLINE_S);
			show_stuck(pid);
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) < 0 &&
		    errno != EINTR)
			break;
		if (!p.revents)
			continue;
		n = read(pfd[0], out + got, outlen - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = 0;
	close(pfd[0]);
	return wait_child(pid);
}

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(lib)
{
	int backend;
	const char *reason;
};

FIXTURE_SETUP(lib)
{
	const char *env = getenv("XPMEM_BACKEND");

	page = (size_t)sysconf(_SC_PAGESIZE);
	self->backend = xpmem_ext_backend(&self->reason);
	if (env && !strcmp(env, "kernel") &&
	    self->backend == XPMEM_EXT_BACKEND_NONE)
		SKIP(return, "XPMEM_BACKEND=kernel but no module: %s",
		     self->reason);
	ASSERT_NE(XPMEM_EXT_BACKEND_NONE, self->backend)
		TH_LOG("no backend: %s", self->reason);
	if (env && !strcmp(env, "shm"))
		ASSERT_EQ(XPMEM_EXT_BACKEND_SHM, self->backend);
	if (env && !strcmp(env, "kernel"))
		ASSERT_EQ(XPMEM_EXT_BACKEND_KERNEL, self->backend);
	TH_LOG("backend %s (%s)", xpmem_ext_backend_name(self->backend),
	       self->reason);
}

FIXTURE_TEARDOWN(lib)
{
}

#define IS_SHM (self->backend == XPMEM_EXT_BACKEND_SHM)

/* ---- backend selection and signals ------------------------------------- */

TEST_F(lib, backend_signals)
{
	unsigned long f = xpmem_ext_features();

	ASSERT_EQ(0, xpmem_init());
	ASSERT_NE(0, (int)strlen(self->reason));
	if (IS_SHM) {
		/* UCX reads version >= 0 as "usable": must be false here. */
		errno = 0;
		ASSERT_EQ(-1, xpmem_version());
		ASSERT_EQ(ENODEV, errno);
		/*
		 * CROSS_USER (peers of other uids: xuser tests), copies and
		 * prep helpers; nothing else.
		 */
		ASSERT_EQ(XPMEM_EXT_F_MIGRATE | XPMEM_EXT_F_CROSS_USER |
			  XPMEM_EXT_F_ATTACH_OPTS | XPMEM_EXT_F_KEYS |
			  XPMEM_EXT_F_COPY | XPMEM_EXT_F_URING |
			  XPMEM_EXT_F_MAKEV | XPMEM_EXT_F_URING_FIXED |
			  XPMEM_EXT_F_AUTH | XPMEM_EXT_F_EVENTS, f);
		ASSERT_STREQ("shm", xpmem_ext_backend_name(self->backend));
	} else {
		ASSERT_LE(0, xpmem_version());
		ASSERT_TRUE((f & XPMEM_EXT_F_WHOLE_AS) != 0);
		/* this module answers XPMEM_CMD_EXT_QUERY */
		ASSERT_TRUE((f & XPMEM_EXT_F_ATTACH_OPTS) != 0);
		ASSERT_TRUE((f & XPMEM_EXT_F_KEYS) != 0);
		ASSERT_TRUE((f & XPMEM_EXT_F_AUTH) != 0);
		ASSERT_TRUE((f & XPMEM_EXT_F_MAKEV) != 0);
		ASSERT_STREQ("kernel", xpmem_ext_backend_name(self->backend));
	}
}

TEST_F(lib, env_backend_choice)
{
	char *shm_env[] = { PROBE_ENV "=1", "XPMEM_BACKEND=shm",
			    "XPMEM_DEBUG=1", NULL };
	char *bad_env[] = { PROBE_ENV "=1", "XPMEM_BACKEND=bogus", NULL };
	char *kern_env[] = { PROBE_ENV "=1", "XPMEM_BACKEND=kernel", NULL };
	char out[4096];
	int st;

	st = run_probe(shm_env, out, sizeof(out));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ASSERT_NE(NULL, strstr(out, "backend=2 init=0"));
	ASSERT_NE(NULL, strstr(out, "backend shm (XPMEM_BACKEND=shm)"));

	st = run_probe(bad_env, out, sizeof(out));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ASSERT_NE(NULL, strstr(out, "backend=0 init=-1 errno=22"));

	st = run_probe(kern_env, out, sizeof(out));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (access(XPMEM_DEV_PATH, F_OK) != 0) {
		/* Forced kernel without the module: ENODEV on every call. */
		ASSERT_NE(NULL, strstr(out, "backend=0 init=-1 errno=19 "
					    "version=-1"));
	} else {
		ASSERT_NE(NULL, strstr(out, "backend=1 init=0"));
	}
}

/* ---- argument checking -------------------------------------------------- */

TEST_F(lib, bad_arguments)
{
	unsigned char *buf = xpmem_ext_alloc(NPAGES * page, 0);
	struct xpmem_addr addr = { .apid = 424242, .offset = 0 };
	xpmem_segid_t segid;

	ASSERT_NE(NULL, buf);
	errno = 0;
	ASSERT_EQ(-1, xpmem_make(buf, 0, XPMEM_PERMIT_MODE, (void *)0600));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_make(buf + 1, page, XPMEM_PERMIT_MODE,
				 (void *)0600));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_make(buf, page, 7, (void *)0600));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_make(buf, page, XPMEM_PERMIT_MODE,
				 (void *)01600));
	ASSERT_EQ(EINVAL, errno);

	segid = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	ASSERT_EQ(-1, xpmem_get(segid, 3, XPMEM_PERMIT_MODE, NULL));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_get(segid, XPMEM_RDWR, 0, NULL));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_get(0, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_get(-5, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ((void *)-1, xpmem_attach(addr, page, NULL));
	ASSERT_EQ(-1, xpmem_release(424242));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(-1, xpmem_remove(segid));
	ASSERT_EQ(-1, xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL));
	ASSERT_EQ(ENOENT, errno);

	errno = 0;
	ASSERT_EQ(NULL, xpmem_ext_alloc(0, 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(NULL, xpmem_ext_alloc(page, 0x80));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_ext_free(buf + page));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

TEST_F(lib, whole_address_space)
{
	xpmem_segid_t segid;

	errno = 0;
	segid = xpmem_make(NULL, XPMEM_MAXADDR_SIZE, XPMEM_PERMIT_MODE,
			   (void *)0666);
	if (IS_SHM) {
		/* MPICH/Open MPI read this failure as "fall back". */
		ASSERT_EQ(-1, segid);
		ASSERT_EQ(EOPNOTSUPP, errno);
	} else {
		ASSERT_LT(0, segid);
		ASSERT_EQ(0, xpmem_remove(segid));
	}
}

TEST_F(lib, attach_bounds)
{
	unsigned char *buf = xpmem_ext_alloc(NPAGES * page, 0);
	struct xpmem_addr addr;
	xpmem_segid_t segid;
	unsigned char *at;

	ASSERT_NE(NULL, buf);
	fill(buf, NPAGES * page, 3);
	segid = xpmem_make(buf, NPAGES * page, XPMEM_PERMIT_MODE,
			   (void *)0600);
	ASSERT_LT(0, segid);
	addr.apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, addr.apid);

	addr.offset = 1;
	errno = 0;
	ASSERT_EQ((void *)-1, xpmem_attach(addr, page, NULL));
	ASSERT_EQ(EINVAL, errno);
	addr.offset = (off_t)(NPAGES * page);
	ASSERT_EQ((void *)-1, xpmem_attach(addr, page, NULL));
	ASSERT_EQ(EINVAL, errno);
	addr.offset = (off_t)(2 * page);
	ASSERT_EQ((void *)-1, xpmem_attach(addr, 3 * page, NULL));
	ASSERT_EQ(EINVAL, errno);

	/* The last page, alone, at its offset. */
	addr.offset = (off_t)((NPAGES - 1) * page);
	at = xpmem_attach(addr, page, NULL);
	ASSERT_NE((void *)-1, at);
	ASSERT_EQ(0, memcmp(at, buf + (NPAGES - 1) * page, page));
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(addr.apid));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

TEST_F(lib, remove_stops_new_attach)
{
	unsigned char *buf = xpmem_ext_alloc(page, 0);
	struct xpmem_addr addr = { .offset = 0 };
	xpmem_segid_t segid;

	ASSERT_NE(NULL, buf);
	segid = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	addr.apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, addr.apid);
	ASSERT_EQ(0, xpmem_remove(segid));
	errno = 0;
	ASSERT_EQ((void *)-1, xpmem_attach(addr, page, NULL));
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(0, xpmem_release(addr.apid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

#define MANY_SEGS	64

TEST_F(lib, segids_distinct)
{
	unsigned char *buf = xpmem_ext_alloc(MANY_SEGS * page, 0);
	xpmem_segid_t ids[MANY_SEGS];
	int i, j;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < MANY_SEGS; i++) {
		ids[i] = xpmem_make(buf + (size_t)i * page, page,
				    XPMEM_PERMIT_MODE, (void *)0600);
		ASSERT_LT(0, ids[i]);
		for (j = 0; j < i; j++)
			ASSERT_NE(ids[j], ids[i]);
	}
	for (i = 0; i < MANY_SEGS; i++)
		ASSERT_EQ(0, xpmem_remove(ids[i]));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* ---- data exchange ------------------------------------------------------ */

/* Owner in the parent, attacher in the child, then the other way round. */
TEST_F(lib, exchange_both_ways)
{
	size_t size = NPAGES * page;
	unsigned char *buf = xpmem_ext_alloc(size, 0);
	int to_child[2], to_parent[2], done[2];
	xpmem_segid_t segid, csegid;
	xpmem_apid_t apid;
	unsigned char *at;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	fill(buf, size, 11);
	segid = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(to_parent));
	ASSERT_EQ(0, pipe(done));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		xpmem_segid_t s;
		unsigned char *mine = anon(size);

		close(done[1]);
		if (read_all(to_child[0], &s, sizeof(s)))
			_exit(10);
		at = get_attach(s, XPMEM_RDWR, size, &apid);
		if (!at)
			_exit(11);
		if (check(at, size, 11))
			_exit(12);
		fill(at + page, page, 99);	/* reply in page 1 */
		/* Now the child owns plain anonymous memory. */
		if (!mine)
			_exit(13);
		fill(mine, size, 55);
		s = xpmem_make(mine, size, XPMEM_PERMIT_MODE, (void *)0600);
		if (s <= 0)
			_exit(14);
		if (write_all(to_parent[1], &s, sizeof(s)))
			_exit(15);
		wait_eof(done[0]);	/* parent has written into mine */
		if (check(mine + 2 * page, page, 77))
			_exit(16);
		if (xpmem_detach(at) || xpmem_release(apid) || xpmem_remove(s))
			_exit(17);
		_exit(CHILD_OK);
	}
	close(done[0]);
	close(to_parent[1]);	/* EOF, not a hang, if the child fails */
	ASSERT_EQ(0, write_all(to_child[1], &segid, sizeof(segid)));
	ASSERT_EQ(0, read_all(to_parent[0], &csegid, sizeof(csegid)));
	ASSERT_EQ(0, check(buf + page, page, 99));
	at = get_attach(csegid, XPMEM_RDWR, size, &apid);
	ASSERT_NE(NULL, at);
	ASSERT_EQ(0, check(at, 2 * page, 55));
	fill(at + 2 * page, page, 77);
	close(done[1]);
	ASSERT_EQ(0, WEXITSTATUS(wait_child(pid)));
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(apid));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

TEST_F(lib, many_attachers)
{
	size_t size = NATTACHERS * page;
	unsigned char *buf = xpmem_ext_alloc(size, 0);
	int seg_pipe[2], go[2];
	xpmem_segid_t segid;
	pid_t pids[NATTACHERS];
	int i, st;

	ASSERT_NE(NULL, buf);
	segid = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	ASSERT_EQ(0, pipe(seg_pipe));
	ASSERT_EQ(0, pipe(go));
	for (i = 0; i < NATTACHERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			xpmem_apid_t apid;
			xpmem_segid_t s;
			unsigned char *at;

			close(go[1]);
			wait_eof(go[0]);
			if (read_all(seg_pipe[0], &s, sizeof(s)))
				_exit(10);
			at = get_attach(s, XPMEM_RDWR, size, &apid);
			if (!at)
				_exit(11);
			fill(at + (size_t)i * page, page, (unsigned int)i);
			if (xpmem_detach(at) || xpmem_release(apid))
				_exit(12);
			_exit(CHILD_OK);
		}
	}
	/* Every child reads the segid from the pipe once. */
	for (i = 0; i < NATTACHERS; i++)
		ASSERT_EQ(0, write_all(seg_pipe[1], &segid, sizeof(segid)));
	close(go[1]);
	for (i = 0; i < NATTACHERS; i++) {
		st = wait_child(pids[i]);
		ASSERT_TRUE(WIFEXITED(st));
		ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
	}
	for (i = 0; i < NATTACHERS; i++)
		ASSERT_EQ(0, check(buf + (size_t)i * page, page,
				   (unsigned int)i));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* ---- permissions -------------------------------------------------------- */

FIXTURE(perm)
{
	int backend;
};

FIXTURE_VARIANT(perm)
{
	unsigned int mode;
};

FIXTURE_VARIANT_ADD(perm, m0600) { .mode = 0600 };
FIXTURE_VARIANT_ADD(perm, m0640) { .mode = 0640 };
FIXTURE_VARIANT_ADD(perm, m0660) { .mode = 0660 };
FIXTURE_VARIANT_ADD(perm, m0666) { .mode = 0666 };
FIXTURE_VARIANT_ADD(perm, m0400) { .mode = 0400 };
FIXTURE_VARIANT_ADD(perm, m0066) { .mode = 0066 };
FIXTURE_VARIANT_ADD(perm, m0604) { .mode = 0604 };

FIXTURE_SETUP(perm)
{
	const char *why;

	page = (size_t)sysconf(_SC_PAGESIZE);
	self->backend = xpmem_ext_backend(&why);
	if (self->backend == XPMEM_EXT_BACKEND_NONE)
		SKIP(return, "no backend: %s", why);
	if (geteuid() != 0)
		SKIP(return, "needs root to switch uid/gid");
}

FIXTURE_TEARDOWN(perm)
{
}

/*
 * The owner is alice (1000:1000).  Peers: alice, bob in alice's group (as
 * his primary group), carol with alice's group as a supplementary group,
 * carol alone, root.
 */
enum { WHO_OWNER, WHO_GROUP, WHO_SUPP, WHO_OTHER, WHO_ROOT, WHO_N };
static const uid_t who_uid[WHO_N] = { 1000, 1001, 1002, 1002, 0 };
static const gid_t who_gid[WHO_N] = { 1000, 1000, 1002, 1002, 0 };
static const gid_t who_supp[WHO_N] = { 0, 0, 1000, 0, 0 };
static const char *const who_name[WHO_N] = {
	"owner", "group (primary)", "group (supplementary)", "other", "root"
};

/* What both backends answer: 1 = permit granted. */
static int perm_expect(unsigned int mode, int who, int flags)
{
	unsigned int need = flags == XPMEM_RDONLY ? 4 : 6, bits;

	if (who == WHO_ROOT)
		return 1;		/* CAP_IPC_OWNER */
	bits = who == WHO_OWNER ? mode >> 6 :
	       who == WHO_GROUP || who == WHO_SUPP ? mode >> 3 : mode;
	return (bits & need) == need;
}

/*
 * perm_peer - in a child: become @who, get @segid with @flags, attach it
 * and check what a permit gives: the owner's bytes, a writable mapping
 * for RDWR, one that cannot be made writable for RDONLY.  Exits CHILD_OK,
 * CHILD_EACCES or a step number.
 */
static void perm_peer(xpmem_segid_t segid, int who, int flags, int shm)
{
	struct xpmem_addr addr = { .offset = 0 };
	volatile unsigned char *at;

	if (who != WHO_ROOT &&
	    become(who_uid[who], who_gid[who], who_supp[who]))
		_exit(10);
	addr.apid = xpmem_get(segid, flags, XPMEM_PERMIT_MODE, NULL);
	if (addr.apid == -1)
		_exit(errno == EACCES ? CHILD_EACCES : 20);
	at = xpmem_attach(addr, page, NULL);
	if (at == (void *)-1)
		_exit(21);
	if (check((unsigned char *)at, page, 51))
		_exit(22);
	if (flags == XPMEM_RDWR) {
		at[page - 1] = at[page - 1];	/* others check the value */
	} else if (!mprotect((void *)at, page, PROT_READ | PROT_WRITE) ||
		   (shm && errno != EACCES)) {
		_exit(23);
	}
	if (xpmem_detach((void *)at) || xpmem_release(addr.apid))
		_exit(24);
	_exit(CHILD_OK);
}

TEST_F(perm, matrix)
{
	int seg_pipe[2], hold[2];
	xpmem_segid_t segid;
	pid_t owner;
	int who, fl, st;

	if (self->backend == XPMEM_EXT_BACKEND_NONE || geteuid() != 0)
		return;
	ASSERT_EQ(0, pipe(seg_pipe));
	ASSERT_EQ(0, pipe(hold));
	owner = fork();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *buf;
		xpmem_segid_t s;

		close(hold[1]);
		if (drop_to(who_uid[WHO_OWNER], who_gid[WHO_OWNER]))
			_exit(10);
		buf = xpmem_ext_alloc(page, 0);
		if (!buf)
			_exit(11);
		fill(buf, page, 51);
		s = xpmem_make(buf, page, XPMEM_PERMIT_MODE,
			       (void *)(uintptr_t)variant->mode);
		if (s <= 0)
			_exit(12);
		if (write_all(seg_pipe[1], &s, sizeof(s)))
			_exit(13);
		wait_eof(hold[0]);
		_exit(CHILD_OK);
	}
	close(hold[0]);
	close(seg_pipe[1]);
	ASSERT_EQ(0, read_all(seg_pipe[0], &segid, sizeof(segid)));

	for (who = 0; who < WHO_N; who++) {
		for (fl = XPMEM_RDONLY; fl <= XPMEM_RDWR; fl++) {
			pid_t pid = fork();

			ASSERT_LE(0, pid);
			if (pid == 0) {
				close(hold[1]);
				perm_peer(segid, who, fl, self->backend ==
					  XPMEM_EXT_BACKEND_SHM);
			}
			st = wait_child(pid);
			ASSERT_TRUE(WIFEXITED(st));
			ASSERT_EQ(perm_expect(variant->mode, who, fl) ?
				  CHILD_OK : CHILD_EACCES, WEXITSTATUS(st))
				TH_LOG("mode %#o, %s (uid %d gid %d), %s",
				       variant->mode, who_name[who],
				       (int)who_uid[who], (int)who_gid[who],
				       fl == XPMEM_RDONLY ? "RDONLY" : "RDWR");
		}
	}
	close(hold[1]);
	st = wait_child(owner);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
}

TEST_F(lib, rdonly)
{
	unsigned char *buf = xpmem_ext_alloc(page, 0);
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	unsigned char *at;

	ASSERT_NE(NULL, buf);
	fill(buf, page, 5);
	segid = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0644);
	ASSERT_LT(0, segid);
	at = get_attach(segid, XPMEM_RDONLY, page, &apid);
	ASSERT_NE(NULL, at);
	ASSERT_EQ(0, check(at, page, 5));
	/* Cannot be made writable. */
	ASSERT_NE(0, mprotect(at, page, PROT_READ | PROT_WRITE));
	ASSERT_EQ(SIGSEGV, probe_access(at, 1));
	ASSERT_EQ(0, probe_access(at, 0));
	ASSERT_EQ(0, check(buf, page, 5));
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(apid));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* ---- xpmem_ext_attach() ------------------------------------------------- */

static void *ext_attach(xpmem_apid_t apid, size_t size, unsigned int flags)
{
	struct xpmem_addr addr = { .apid = apid, .offset = 0 };

	return xpmem_ext_attach(addr, size, NULL, flags);
}

TEST_F(lib, ext_attach_rejections)
{
	const size_t len = 4 * page;
	unsigned char *buf = xpmem_ext_alloc(len, 0);
	xpmem_apid_t rw, ro;
	xpmem_segid_t segid;

	ASSERT_NE(NULL, buf);
	segid = xpmem_make(buf, len, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	rw = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	ro = xpmem_get(segid, XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, rw);
	ASSERT_LT(0, ro);
	/*
	 * FIXED is a non-NULL vaddr here, not a flag; bit 4 is ZERO_REVOKED
	 * (lib_events)
	 */
	for (unsigned int bit = 1; bit < 32; bit += bit == 1 ? 4 : 1) {
		errno = 0;
		ASSERT_EQ((void *)-1, ext_attach(rw, len, 1U << bit));
		ASSERT_EQ(EINVAL, errno) TH_LOG("flag bit %u", bit);
	}
	errno = 0;
	ASSERT_EQ((void *)-1, ext_attach(rw, len, XPMEM_EXT_ATTACH_RDONLY |
					 XPMEM_EXT_ATTACH_POPULATE_WRITE));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ((void *)-1,
		  ext_attach(ro, len, XPMEM_EXT_ATTACH_POPULATE_WRITE));
	ASSERT_EQ(EACCES, errno);
	errno = 0;
	ASSERT_EQ((void *)-1, ext_attach(rw, 0, XPMEM_EXT_ATTACH_POPULATE));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ((void *)-1, ext_attach(rw, len + page,
					 XPMEM_EXT_ATTACH_POPULATE));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(0, xpmem_release(rw));
	ASSERT_EQ(0, xpmem_release(ro));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* Each option does what it says, on either backend. */
TEST_F(lib, ext_attach_options)
{
	const size_t len = 64 * page;
	unsigned char *buf = xpmem_ext_alloc(len, 0);
	unsigned char *plain, *rd, *pop, *popw;
	xpmem_segid_t segid;
	xpmem_apid_t rw;

	ASSERT_NE(NULL, buf);
	fill(buf, len, 41);
	segid = xpmem_make(buf, len, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	rw = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, rw);

	plain = ext_attach(rw, len, 0);
	ASSERT_NE((void *)-1, plain);
	ASSERT_EQ(0, check(plain, len, 41));
	plain[1] ^= 0xff;
	ASSERT_EQ(buf[1], plain[1]);
	plain[1] ^= 0xff;

	/* read-only through a read-write permit, for good */
	rd = ext_attach(rw, len, XPMEM_EXT_ATTACH_RDONLY);
	ASSERT_NE((void *)-1, rd);
	ASSERT_EQ(0, check(rd, len, 41));
	ASSERT_EQ(SIGSEGV, probe_access(rd + page, 1));
	ASSERT_NE(0, mprotect(rd, page, PROT_READ | PROT_WRITE));
	ASSERT_EQ(0, check(buf, len, 41));

	pop = ext_attach(rw, len, XPMEM_EXT_ATTACH_POPULATE);
	ASSERT_NE((void *)-1, pop);
	ASSERT_EQ(0, check(pop, len, 41));

	popw = ext_attach(rw, len, XPMEM_EXT_ATTACH_POPULATE_WRITE);
	ASSERT_NE((void *)-1, popw);
	ASSERT_EQ(0, check(popw, len, 41));
	for (size_t i = 0; i < len; i += page)
		popw[i + 3] = 0x5a;
	for (size_t i = 0; i < len; i += page) {
		ASSERT_EQ(0x5a, buf[i + 3]);
		ASSERT_EQ(0x5a, rd[i + 3]);
		ASSERT_EQ(0x5a, pop[i + 3]);
	}

	ASSERT_EQ(0, xpmem_detach(plain));
	ASSERT_EQ(0, xpmem_detach(rd));
	ASSERT_EQ(0, xpmem_detach(pop));
	ASSERT_EQ(0, xpmem_detach(popw));
	ASSERT_EQ(0, xpmem_release(rw));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* ---- xpmem_ext_make() / xpmem_ext_get*() -------------------------------- */

static const char lib_key[] = "lib_xpmem/well-known";
static const char lib_auth[] = "s3cr3t";

/*
 * Authorization keys on every backend, for a peer of the owner's uid (a
 * child): a get without the key, with a wrong one or a prefix of it, and
 * with a key for a segment that has none are EACCES; the right key gets a
 * permit that attaches.  Where a backend has none, calls with one say so.
 */
TEST_F(lib, ext_auth_key_checked)
{
	unsigned char *buf = xpmem_ext_alloc(2 * page, 0);
	xpmem_segid_t s[2];
	pid_t pid;

	ASSERT_NE(NULL, buf);
	if (!(xpmem_ext_features() & XPMEM_EXT_F_AUTH)) {
		errno = 0;
		ASSERT_EQ(-1, xpmem_ext_make(buf, page, 0600, 0, NULL, 0,
					     lib_auth, 6));
		ASSERT_EQ(EOPNOTSUPP, errno);
		ASSERT_EQ(0, xpmem_ext_free(buf));
		return;
	}
	fill(buf, 2 * page, 33);
	s[0] = xpmem_ext_make(buf, page, 0600, 0, NULL, 0, lib_auth,
			      strlen(lib_auth));
	s[1] = xpmem_ext_make(buf + page, page, 0600, 0, NULL, 0, NULL, 0);
	ASSERT_LT(0, s[0]);
	ASSERT_LT(0, s[1]);
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_addr addr = { .offset = 0 };
		unsigned char *at;

		errno = 0;
		if (xpmem_get(s[0], XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL) != -1 ||
		    errno != EACCES)
			_exit(1);
		errno = 0;
		if (xpmem_ext_get(s[0], XPMEM_RDONLY, "s3cr3x", 6) != -1 ||
		    errno != EACCES)
			_exit(2);
		errno = 0;
		if (xpmem_ext_get(s[0], XPMEM_RDONLY, lib_auth, 5) != -1 ||
		    errno != EACCES)
			_exit(3);
		errno = 0;
		if (xpmem_ext_get(s[1], XPMEM_RDONLY, lib_auth, 6) != -1 ||
		    errno != EACCES)
			_exit(4);
		addr.apid = xpmem_ext_get(s[0], XPMEM_RDWR, lib_auth, 6);
		if (addr.apid <= 0)
			_exit(5);
		at = xpmem_attach(addr, page, NULL);
		if (at == (void *)-1 || check(at, page, 33))
			_exit(6);
		at[1] = 0x44;
		_exit(xpmem_release(addr.apid) ? 7 : 0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0x44, buf[1]);
	ASSERT_EQ(0, xpmem_remove(s[0]));
	ASSERT_EQ(0, xpmem_remove(s[1]));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/*
 * shm: peers that connect to a keyed segment's socket and never present a
 * key (more of them than the owner keeps waiting) hold up nobody: a get
 * with the key meanwhile succeeds, and the owner closes the silent
 * connections unanswered.
 */
TEST_F(lib, ext_auth_silent_peers_hold_up_nobody)
{
	unsigned char *buf = xpmem_ext_alloc(page, 0);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int silent[40], n;
	xpmem_segid_t s;
	xpmem_apid_t a;
	socklen_t alen;

	if (!IS_SHM)
		SKIP(return, "the module checks keys in the ioctl");
	ASSERT_NE(NULL, buf);
	s = xpmem_ext_make(buf, page, 0600, 0, NULL, 0, lib_auth, 6);
	ASSERT_LT(0, s);
	n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
		     "xpmem-%012llx", (unsigned long long)s);
	alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	for (int i = 0; i < 40; i++) {
		silent[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ASSERT_LE(0, silent[i]);
		ASSERT_EQ(0, connect(silent[i], (struct sockaddr *)&sun, alen));
	}
	a = xpmem_ext_get(s, XPMEM_RDONLY, lib_auth, 6);
	ASSERT_LT(0, a);
	ASSERT_EQ(0, xpmem_release(a));
	/* each silent one is closed, answered with nothing (EOF or reset) */
	for (int i = 0; i < 40; i++) {
		struct pollfd pfd = { .fd = silent[i], .events = POLLIN };
		char c;

		ASSERT_EQ(1, poll(&pfd, 1, 30000));
		ASSERT_GE(0, recv(silent[i], &c, 1, MSG_DONTWAIT));
		close(silent[i]);
	}
	ASSERT_EQ(0, xpmem_remove(s));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

TEST_F(lib, ext_keys_argument_checks)
{
	unsigned char *buf = xpmem_ext_alloc(page, 0);
	char big[XPMEM_EXT_AUTH_MAX + 1] = { 0 };

	ASSERT_NE(NULL, buf);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_make(buf, page, 0600, 0x2, NULL, 0, NULL, 0));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_make(buf, page, 01000, 0, NULL, 0, NULL, 0));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_make(buf, page, 0600, 0, lib_key, 0, NULL, 0));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_make(buf, page, 0600, 0, big,
				     XPMEM_EXT_KEY_MAX + 1, NULL, 0));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_make(buf, page, 0600, 0, NULL, 3, NULL, 0));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_make(buf, page, 0600, 0, NULL, 0, big,
				     sizeof(big)));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_get_key(NULL, 0, XPMEM_RDONLY, NULL, 0, NULL));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_get_key(lib_key, sizeof(lib_key), 3, NULL, 0,
					NULL));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_get(0, XPMEM_RDONLY, NULL, 0));
	ASSERT_EQ(EINVAL, errno);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_get(5, XPMEM_RDONLY, lib_auth, 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/*
 * A runtime's rendezvous by name: the owner publishes its buffer under a
 * key with a secret; a child finds it by key alone (no segid passed),
 * must present the secret, and writes what the owner then reads.
 */
TEST_F(lib, ext_keys_rendezvous)
{
	const int auth = !!(xpmem_ext_features() & XPMEM_EXT_F_AUTH);
	const char *secret = auth ? lib_auth : NULL;
	const size_t slen = auth ? strlen(lib_auth) : 0;
	const size_t len = 16 * page;
	unsigned char *buf;
	xpmem_segid_t segid;
	int done[2];
	pid_t pid;
	char c;

	if (!(xpmem_ext_features() & XPMEM_EXT_F_KEYS))
		SKIP(return, "no XPMEM_EXT_F_KEYS on this backend");
	buf = xpmem_ext_alloc(len, 0);
	ASSERT_NE(NULL, buf);
	fill(buf, len, 51);
	segid = xpmem_ext_make(buf, len, 0600, 0, lib_key, sizeof(lib_key),
			       secret, slen);
	ASSERT_LT(0, segid);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_make(buf, len, 0600, 0, lib_key,
				     sizeof(lib_key), NULL, 0));
	ASSERT_EQ(EEXIST, errno);
	ASSERT_EQ(0, pipe(done));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_addr addr = { .offset = 0 };
		xpmem_segid_t found = 0;
		unsigned char *at;

		close(done[0]);
		/* another process cannot take the key either */
		if (xpmem_ext_make(buf, len, 0600, 0, lib_key,
				   sizeof(lib_key), NULL, 0) != -1 ||
		    errno != EEXIST)
			_exit(1);
		if (auth && (xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE,
				       NULL) != -1 || errno != EACCES))
			_exit(2);
		if (auth && (xpmem_ext_get_key(lib_key, sizeof(lib_key),
					       XPMEM_RDWR, "wrong", 5,
					       NULL) != -1 || errno != EACCES))
			_exit(3);
		if (xpmem_ext_get_key(lib_key, sizeof(lib_key) - 1, XPMEM_RDWR,
				      secret, slen, NULL) != -1 ||
		    errno != ENOENT)
			_exit(4);
		addr.apid = xpmem_ext_get_key(lib_key, sizeof(lib_key),
					      XPMEM_RDWR, secret, slen, &found);
		if (addr.apid <= 0 || found != segid)
			_exit(5);
		at = xpmem_ext_attach(addr, len, NULL,
				      XPMEM_EXT_ATTACH_POPULATE_WRITE);
		if (at == (void *)-1 || check(at, len, 51))
			_exit(6);
		fill(at, len, 52);
		if (write(done[1], "x", 1) != 1)
			_exit(7);
		_exit(0);
	}
	close(done[1]);
	ASSERT_EQ(1, read(done[0], &c, 1));
	close(done[0]);
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, check(buf, len, 52));
	ASSERT_EQ(0, xpmem_remove(segid));
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_get_key(lib_key, sizeof(lib_key), XPMEM_RDONLY,
					secret, slen, NULL));
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* A key whose owner was killed is free again at once. */
TEST_F(lib, ext_key_free_after_owner_killed)
{
	unsigned char *buf;
	xpmem_segid_t segid;
	int ready[2];
	pid_t pid;
	char c;

	if (!(xpmem_ext_features() & XPMEM_EXT_F_KEYS))
		SKIP(return, "no XPMEM_EXT_F_KEYS on this backend");
	buf = xpmem_ext_alloc(page, 0);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, pipe(ready));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(ready[0]);
		if (xpmem_ext_make(buf, page, 0600, 0, lib_key,
				   sizeof(lib_key), NULL, 0) <= 0)
			_exit(1);
		if (write(ready[1], "k", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_make(buf, page, 0600, 0, lib_key,
				     sizeof(lib_key), NULL, 0));
	ASSERT_EQ(EEXIST, errno);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	{
		int st = wait_child(pid);

		ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	segid = xpmem_ext_make(buf, page, 0600, 0, lib_key, sizeof(lib_key),
			       NULL, 0);
	ASSERT_LT(0, segid);
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* A read-only export refuses RDWR gets whatever the mode says. */
TEST_F(lib, ext_make_rdonly)
{
	unsigned char *buf;
	xpmem_segid_t segid;
	xpmem_apid_t apid;

	if (!(xpmem_ext_features() & XPMEM_EXT_F_KEYS))
		SKIP(return, "no XPMEM_EXT_F_KEYS on this backend");
	buf = xpmem_ext_alloc(page, 0);
	ASSERT_NE(NULL, buf);
	segid = xpmem_ext_make(buf, page, 0666, XPMEM_EXT_MAKE_RDONLY, NULL, 0,
			       NULL, 0);
	ASSERT_LT(0, segid);
	errno = 0;
	ASSERT_EQ(-1, xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL));
	ASSERT_EQ(EACCES, errno);
	apid = xpmem_ext_get(segid, XPMEM_RDONLY, NULL, 0);
	ASSERT_LT(0, apid);
	ASSERT_EQ(0, xpmem_release(apid));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/*
 * XPMEM_EXT_MAKE_ANY_NS: refused without an authorization key; on the
 * kernel backend a child in a new IPC namespace gets the segment with the
 * key (and only with it); the shm backend says EOPNOTSUPP.
 */
TEST_F(lib, ext_make_any_ns)
{
	static const char auth[] = "rank key";
	unsigned char *buf;
	xpmem_segid_t segid;
	pid_t pid;

	buf = xpmem_ext_alloc(page, 0);
	ASSERT_NE(NULL, buf);
	memset(buf, 0x6b, page);
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_make(buf, page, 0666, XPMEM_EXT_MAKE_ANY_NS,
				     NULL, 0, NULL, 0));
	ASSERT_EQ(EINVAL, errno);
	segid = xpmem_ext_make(buf, page, 0666, XPMEM_EXT_MAKE_ANY_NS, NULL, 0,
			       auth, sizeof(auth));
	if (IS_SHM) {
		ASSERT_EQ(0, xpmem_ext_features() & XPMEM_EXT_F_ANY_NS);
		ASSERT_EQ(-1, segid);
		ASSERT_EQ(EOPNOTSUPP, errno);
		ASSERT_EQ(0, xpmem_ext_free(buf));
		return;
	}
	ASSERT_NE(0, xpmem_ext_features() & XPMEM_EXT_F_ANY_NS);
	ASSERT_LT(0, segid);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_addr a;
		unsigned char *at;

		if (unshare(CLONE_NEWIPC))
			_exit(10);
		if (xpmem_ext_get(segid, XPMEM_RDWR, "wrong", 5) != -1 ||
		    errno != EACCES)
			_exit(11);
		a.apid = xpmem_ext_get(segid, XPMEM_RDWR, auth, sizeof(auth));
		if (a.apid <= 0)
			_exit(12);
		a.offset = 0;
		at = xpmem_attach(a, page, NULL);
		if (at == (void *)-1 || at[0] != 0x6b || at[page - 1] != 0x6b)
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));	/* a wait status: exit 0 */
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/*
 * xpmem_ext_makev(): argument checks and one buffer; three buffers, out
 * of address order, where XPMEM_EXT_F_MAKEV says so (both backends: a
 * child attaches them as one mapping, reads each, writes across the
 * boundaries and copies across them; after the remove the owner's
 * buffers keep what was written and export again), EOPNOTSUPP where it
 * does not.
 */
TEST_F(lib, ext_makev)
{
	const size_t pages[3] = { 2, 1, 3 }, at[3] = { 8, 0, 3 };
	unsigned char *r = anon(12 * page), *one = xpmem_ext_alloc(page, 0);
	struct iovec iov[3];
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	size_t total = 0;
	pid_t pid;

	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, one);
	for (int i = 0; i < 3; i++) {
		iov[i].iov_base = r + at[i] * page;
		iov[i].iov_len = pages[i] * page;
		memset(iov[i].iov_base, 'a' + i, iov[i].iov_len);
		total += iov[i].iov_len;
	}
	errno = 0;
	ASSERT_EQ(-1, xpmem_ext_makev(NULL, 1, 0600, 0, NULL, 0, NULL, 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_ext_makev(iov, 0, 0600, 0, NULL, 0, NULL, 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_ext_makev(iov, XPMEM_EXT_MAKE_IOV_MAX + 1, 0600,
				      0, NULL, 0, NULL, 0));
	ASSERT_EQ(EINVAL, errno);

	/* one buffer: xpmem_ext_make() */
	struct iovec v1 = { one, page };

	memset(one, 0x3c, page);
	segid = xpmem_ext_makev(&v1, 1, 0600, 0, NULL, 0, NULL, 0);
	ASSERT_LT(0, segid);
	apid = xpmem_get(segid, XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, apid);
	unsigned char got;

	ASSERT_EQ(1, xpmem_ext_copy(apid, page - 1, &got, 1, 0));
	ASSERT_EQ(0x3c, got);
	ASSERT_EQ(0, xpmem_release(apid));
	ASSERT_EQ(0, xpmem_remove(segid));

	segid = xpmem_ext_makev(iov, 3, 0600, 0, NULL, 0, NULL, 0);
	if (!(xpmem_ext_features() & XPMEM_EXT_F_MAKEV)) {
		ASSERT_EQ(-1, segid);
		ASSERT_EQ(EOPNOTSUPP, errno);
		goto out;
	}
	ASSERT_LT(0, segid);
	/*
	 * shm migrates each buffer once: no overlapping buffers, no second
	 * export of part of one while it lives.  The module has no such rule.
	 */
	struct iovec twice[2] = { iov[0], iov[0] };
	xpmem_segid_t s2 = xpmem_ext_makev(twice, 2, 0600, 0, NULL, 0, NULL, 0);
	xpmem_segid_t s3 = xpmem_ext_make(iov[2].iov_base, page, 0600, 0,
					  NULL, 0, NULL, 0);

	if (IS_SHM) {
		ASSERT_EQ(-1, s2);
		ASSERT_EQ(-1, s3);
		ASSERT_EQ(EOPNOTSUPP, errno);
	} else {
		ASSERT_LT(0, s2);
		ASSERT_LT(0, s3);
		ASSERT_EQ(0, xpmem_remove(s2));
		ASSERT_EQ(0, xpmem_remove(s3));
	}
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct xpmem_addr addr = { .offset = 0 };
		unsigned char *p;
		size_t off = 0;

		addr.apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE,
				      NULL);
		p = addr.apid > 0 ? xpmem_attach(addr, total, NULL) :
				    (void *)-1;
		if (p == (void *)-1)
			_exit(1);
		for (int i = 0; i < 3; off += iov[i++].iov_len)
			for (size_t b = 0; b < iov[i].iov_len; b++)
				if (p[off + b] != 'a' + i)
					_exit(2);
		p[pages[0] * page - 1] = 'X';	/* last of buffer 0 */
		p[pages[0] * page] = 'Y';	/* first of buffer 1 */
		p[total - 1] = 'Z';		/* last of buffer 2 */
		char two[2];

		if (xpmem_ext_copy(addr.apid, pages[0] * page - 1, two, 2,
				   0) != 2 || two[0] != 'X' || two[1] != 'Y')
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ('X', r[at[0] * page + pages[0] * page - 1]);
	ASSERT_EQ('Y', r[at[1] * page]);
	ASSERT_EQ('Z', r[(at[2] + pages[2]) * page - 1]);
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ('X', r[at[0] * page + pages[0] * page - 1]);
	ASSERT_EQ('Z', r[(at[2] + pages[2]) * page - 1]);
	segid = xpmem_ext_make(iov[1].iov_base, iov[1].iov_len, 0600, 0, NULL,
			       0, NULL, 0);
	ASSERT_LT(0, segid);
	ASSERT_EQ(0, xpmem_remove(segid));
out:
	ASSERT_EQ(0, xpmem_ext_free(one));
	munmap(r, 12 * page);
}

/* ---- peers of another uid ----------------------------------------------- */

#define ALICE		1000
#define BOB		1001
#define CAROL		1002
#define FLOOD_GETS	300
#define SILENT_CONNS	8

/*
 * Owners are alice, peers bob and carol (no shared group), forked from the
 * test (root).  On shm the owners create their objects in a shm directory
 * that must be empty whenever a test looks, and at its end: a tmpfs of
 * the test's own mounted over /dev/shm in a private mount namespace (so a
 * test killed by its timeout cannot leave anything behind either), or if
 * that cannot be done a fresh directory, removed by the harness's parent
 * process (an ASSERT in the test can skip a teardown in the test process).
 */
FIXTURE(xuser)
{
	int backend;
	int own_mount;		/* dir is our private tmpfs on /dev/shm */
	char dir[64];
};

FIXTURE_SETUP(xuser)
{
	const char *why;

	page = (size_t)sysconf(_SC_PAGESIZE);
	self->dir[0] = 0;
	self->own_mount = 0;
	self->backend = xpmem_ext_backend(&why);
	if (self->backend == XPMEM_EXT_BACKEND_NONE)
		SKIP(return, "no backend: %s", why);
	if (geteuid() != 0)
		SKIP(return, "needs root to switch uid/gid");
	if (self->backend != XPMEM_EXT_BACKEND_SHM)
		return;
	if (!unshare(CLONE_NEWNS) &&
	    !mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) &&
	    !mount("tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777,size=64m")) {
		self->own_mount = 1;
		snprintf(self->dir, sizeof(self->dir), "/dev/shm");
	} else {
		snprintf(self->dir, sizeof(self->dir),
			 "/dev/shm/xpmem-xuser-XXXXXX");
		ASSERT_NE(NULL, mkdtemp(self->dir));
		if (chmod(self->dir, 0777)) {
			rmdir(self->dir);
			ASSERT_TRUE(0) TH_LOG("chmod %s: %s", self->dir,
					      strerror(errno));
		}
	}
	ASSERT_EQ(0, setenv("XPMEM_SHM_DIR", self->dir, 1));
	ASSERT_EQ(0, count_dir(self->dir));
}

FIXTURE_TEARDOWN_PARENT(xuser)
{
	/* The private mount went with the test process's namespace. */
	if (self->dir[0] && !self->own_mount)
		rmdir(self->dir);
}

#define XU_SHM (self->backend == XPMEM_EXT_BACKEND_SHM)
/* Nothing in the shm directory (kernel backend: nothing to check). */
#define ASSERT_DIR_EMPTY() do { \
	if (self->dir[0]) \
		ASSERT_EQ(0, count_dir(self->dir)); \
} while (0)

/*
 * keep_fds - close every descriptor of @all (@n) that is not in @keep
 * (@nk): each process keeps only its own pipe ends, so a process that
 * dies early is an EOF to the others, never a hang.
 */
static void keep_fds(const int *all, int n, const int *keep, int nk)
{
	int i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < nk && keep[j] != all[i]; j++)
			;
		if (j == nk)
			close(all[i]);
	}
}

#define KEEP(all, ...) do { \
	const int k_[] = { __VA_ARGS__ }; \
	keep_fds(all, (int)(sizeof(all) / sizeof((all)[0])), k_, \
		 (int)(sizeof(k_) / sizeof(k_[0]))); \
} while (0)
#define KEEP_NONE(all) keep_fds(all, (int)(sizeof(all) / sizeof((all)[0])), \
				NULL, 0)

/*
 * In a fork child: become alice, make one xpmem_ext_alloc() page of
 * pattern @seed with mode 0666, send its segid on @out and keep it until
 * @hold reads end of file.
 */
static void __attribute__((noreturn)) alice_page_owner(unsigned int seed,
							int out, int hold)
{
	xpmem_segid_t s;
	unsigned char *buf;

	if (become(ALICE, ALICE, 0))
		_exit(10);
	buf = xpmem_ext_alloc(page, 0);
	if (!buf)
		_exit(11);
	fill(buf, page, seed);
	s = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0666);
	if (s <= 0 || write_all(out, &s, sizeof(s)))
		_exit(12);
	wait_eof(hold);
	_exit(CHILD_OK);
}

/* Wait for child @pid and expect it to exit with @code. */
#define ASSERT_CHILD(code, pid, what) do { \
	int st_ = wait_child(pid); \
	ASSERT_TRUE(WIFEXITED(st_)) \
		TH_LOG("%s: %s %d", what, WIFSIGNALED(st_) ? "signal" : \
		       "status", WIFSIGNALED(st_) ? WTERMSIG(st_) : st_); \
	ASSERT_EQ(code, WEXITSTATUS(st_)) TH_LOG("%s failed", what); \
} while (0)

/* A child's exit code for a get that failed: its errno, distinctly. */
static int errno_code(int base)
{
	return errno == EACCES ? CHILD_EACCES : errno == ENOENT ? base + 1 :
	       errno == EAGAIN ? base + 2 : base;
}

/*
 * Bob attaches alice's 0666 segment read-write and the bytes go both
 * ways: alice's to bob, bob's to alice, and alice's later ones to bob
 * through the same attachment.  Alice is not dumpable: on shm a peer of
 * another uid gets its descriptors from alice's accept thread, not /proc.
 */
TEST_F(xuser, exchange_0666)
{
	size_t size = NPAGES * page;
	int seg[2], p2o[2], o2p[2];
	pid_t owner, peer;

	ASSERT_EQ(0, pipe(seg));
	ASSERT_EQ(0, pipe(p2o));
	ASSERT_EQ(0, pipe(o2p));
	int all[] = { seg[0], seg[1], p2o[0], p2o[1], o2p[0], o2p[1] };

	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *buf;
		xpmem_segid_t s;
		char c;

		KEEP(all, seg[1], p2o[0], o2p[1]);
		if (become(ALICE, ALICE, 0) ||
		    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
			_exit(10);
		buf = xpmem_ext_alloc(size, 0);
		if (!buf)
			_exit(11);
		fill(buf, size, 11);
		s = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0666);
		if (s <= 0 || write_all(seg[1], &s, sizeof(s)))
			_exit(12);
		if (read_all(p2o[0], &c, 1))	/* bob wrote page 1 */
			_exit(13);
		if (check(buf + page, page, 99))
			_exit(14);
		fill(buf + 2 * page, page, 77);
		if (write_all(o2p[1], &c, 1))
			_exit(15);
		wait_eof(p2o[0]);			/* bob is done */
		if (xpmem_remove(s) || xpmem_ext_free(buf))
			_exit(16);
		_exit(CHILD_OK);
	}
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		unsigned char *at, *mine;
		xpmem_segid_t s;
		xpmem_apid_t apid;
		char c = 'w';

		KEEP(all, seg[0], p2o[1], o2p[0]);
		if (become(BOB, BOB, 0))
			_exit(10);
		if (read_all(seg[0], &s, sizeof(s)))
			_exit(11);
		at = get_attach(s, XPMEM_RDWR, size, &apid);
		if (!at)
			_exit(errno_code(20));
		mine = malloc(size);
		if (!mine)
			_exit(12);
		fill(mine, size, 11);
		if (memcmp(at, mine, size))		/* all of it */
			_exit(13);
		fill(at + page, page, 99);
		if (write_all(p2o[1], &c, 1) || read_all(o2p[0], &c, 1))
			_exit(14);
		if (check(at + 2 * page, page, 77))
			_exit(15);
		free(mine);
		if (xpmem_detach(at) || xpmem_release(apid))
			_exit(16);
		_exit(CHILD_OK);
	}
	KEEP_NONE(all);
	ASSERT_CHILD(CHILD_OK, peer, "bob");
	ASSERT_CHILD(CHILD_OK, owner, "alice");
	ASSERT_DIR_EMPTY();
}

/*
 * 0644: bob gets no read-write permit, and his read-only attachment of
 * alice's (migrated, private anonymous) range cannot be written: mprotect
 * to PROT_WRITE fails, a store faults, and alice's bytes stay.
 */
/*
 * A key across users: alice publishes a read-only export of 0666 memory
 * under a key; bob finds it by the key alone, gets read access only, and
 * cannot take the key himself.
 */
TEST_F(xuser, key_rdonly_export)
{
	static const char key[] = "xuser/alice";
	int seg[2], done[2];
	pid_t owner, peer;

	if (!(xpmem_ext_features() & XPMEM_EXT_F_KEYS))
		SKIP(return, "no XPMEM_EXT_F_KEYS on this backend");
	ASSERT_EQ(0, pipe(seg));
	ASSERT_EQ(0, pipe(done));
	int all[] = { seg[0], seg[1], done[0], done[1] };

	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *buf;
		xpmem_segid_t s;

		KEEP(all, seg[1], done[0]);
		if (become(ALICE, ALICE, 0))
			_exit(10);
		buf = xpmem_ext_alloc(page, 0);
		if (!buf)
			_exit(11);
		fill(buf, page, 61);
		s = xpmem_ext_make(buf, page, 0666, XPMEM_EXT_MAKE_RDONLY,
				   key, sizeof(key), NULL, 0);
		if (s <= 0 || write_all(seg[1], &s, sizeof(s)))
			_exit(12);
		wait_eof(done[0]);
		if (check(buf, page, 61) || xpmem_remove(s))
			_exit(13);
		_exit(CHILD_OK);
	}
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		struct xpmem_addr addr = { .offset = 0 };
		xpmem_segid_t s, found = 0;
		unsigned char *at, *b;

		KEEP(all, seg[0], done[1]);
		if (become(BOB, BOB, 0))
			_exit(10);
		if (read_all(seg[0], &s, sizeof(s)))	/* made, not told */
			_exit(11);
		errno = 0;
		if (xpmem_ext_get_key(key, sizeof(key), XPMEM_RDWR, NULL, 0,
				      NULL) != -1 || errno != EACCES)
			_exit(12);
		addr.apid = xpmem_ext_get_key(key, sizeof(key), XPMEM_RDONLY,
					      NULL, 0, &found);
		if (addr.apid <= 0)
			_exit(errno_code(20));
		if (found != s)
			_exit(13);
		at = xpmem_attach(addr, page, NULL);
		if (at == (void *)-1 || check(at, page, 61))
			_exit(14);
		b = anon(page);
		errno = 0;
		if (!b || xpmem_ext_make(b, page, 0600, 0, key, sizeof(key),
					 NULL, 0) != -1 || errno != EEXIST)
			_exit(15);
		if (xpmem_detach(at) || xpmem_release(addr.apid))
			_exit(16);
		_exit(CHILD_OK);
	}
	KEEP_NONE(all);
	ASSERT_CHILD(CHILD_OK, peer, "bob");
	ASSERT_CHILD(CHILD_OK, owner, "alice");
	ASSERT_DIR_EMPTY();
}

/*
 * An authorization key binds a peer of another uid: bob, whom the mode
 * grants read-write, gets nothing without the key, with a wrong one, or
 * with a key for a segment that has none, nor with a prefix of the key;
 * with the right one he attaches and writes what alice then reads.
 */
TEST_F(xuser, auth_key_binds_other_uids)
{
	static const char secret[] = "alice's secret";
	int seg[2], done[2];
	pid_t owner, peer;

	if (!(xpmem_ext_features() & XPMEM_EXT_F_AUTH))
		SKIP(return, "no XPMEM_EXT_F_AUTH on this backend");
	ASSERT_EQ(0, pipe(seg));
	ASSERT_EQ(0, pipe(done));
	int all[] = { seg[0], seg[1], done[0], done[1] };

	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *buf;
		xpmem_segid_t s[2];

		KEEP(all, seg[1], done[0]);
		if (become(ALICE, ALICE, 0))
			_exit(10);
		buf = xpmem_ext_alloc(2 * page, 0);
		if (!buf)
			_exit(11);
		fill(buf, 2 * page, 71);
		s[0] = xpmem_ext_make(buf, page, 0666, 0, NULL, 0, secret,
				      sizeof(secret));
		s[1] = xpmem_ext_make(buf + page, page, 0666, 0, NULL, 0,
				      NULL, 0);
		if (s[0] <= 0 || s[1] <= 0 || write_all(seg[1], s, sizeof(s)))
			_exit(12);
		wait_eof(done[0]);
		if (buf[5] != 0x7a || xpmem_remove(s[0]) || xpmem_remove(s[1]))
			_exit(13);
		_exit(CHILD_OK);
	}
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		struct xpmem_addr addr = { .offset = 0 };
		xpmem_segid_t s[2];
		unsigned char *at;

		KEEP(all, seg[0], done[1]);
		if (become(BOB, BOB, 0))
			_exit(10);
		if (read_all(seg[0], s, sizeof(s)))
			_exit(11);
		errno = 0;
		if (xpmem_get(s[0], XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL) != -1 ||
		    errno != EACCES)
			_exit(12);
		errno = 0;
		if (xpmem_ext_get(s[0], XPMEM_RDWR, "wrong", 5) != -1 ||
		    errno != EACCES)
			_exit(13);
		errno = 0;
		if (xpmem_ext_get(s[0], XPMEM_RDWR, secret,
				  sizeof(secret) - 1) != -1 || errno != EACCES)
			_exit(14);	/* a prefix is wrong too */
		errno = 0;
		if (xpmem_ext_get(s[1], XPMEM_RDWR, secret,
				  sizeof(secret)) != -1 || errno != EACCES)
			_exit(15);	/* a key for a segment without */
		addr.apid = xpmem_ext_get(s[0], XPMEM_RDWR, secret,
					  sizeof(secret));
		if (addr.apid <= 0)
			_exit(errno_code(20));
		at = xpmem_attach(addr, page, NULL);
		if (at == (void *)-1 || check(at, page, 71))
			_exit(16);
		at[5] = 0x7a;
		if (xpmem_detach(at) || xpmem_release(addr.apid))
			_exit(17);
		_exit(CHILD_OK);
	}
	KEEP_NONE(all);
	ASSERT_CHILD(CHILD_OK, peer, "bob");
	ASSERT_CHILD(CHILD_OK, owner, "alice");
	ASSERT_DIR_EMPTY();
}

TEST_F(xuser, rdonly_0644)
{
	size_t size = 2 * page;
	int seg[2], done[2];
	pid_t owner, peer;

	ASSERT_EQ(0, pipe(seg));
	ASSERT_EQ(0, pipe(done));
	int all[] = { seg[0], seg[1], done[0], done[1] };

	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *buf;
		xpmem_segid_t s;

		KEEP(all, seg[1], done[0]);
		if (become(ALICE, ALICE, 0))
			_exit(10);
		buf = anon(size);
		if (!buf)
			_exit(11);
		fill(buf, size, 5);
		s = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0644);
		if (s <= 0 || write_all(seg[1], &s, sizeof(s)))
			_exit(12);
		wait_eof(done[0]);
		if (check(buf, size, 5))
			_exit(13);
		if (xpmem_remove(s))
			_exit(14);
		_exit(CHILD_OK);
	}
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		unsigned char *at;
		xpmem_segid_t s;
		xpmem_apid_t apid;

		KEEP(all, seg[0], done[1]);
		if (become(BOB, BOB, 0))
			_exit(10);
		if (read_all(seg[0], &s, sizeof(s)))
			_exit(11);
		errno = 0;
		if (xpmem_get(s, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL) != -1 ||
		    errno != EACCES)
			_exit(12);
		at = get_attach(s, XPMEM_RDONLY, size, &apid);
		if (!at)
			_exit(errno_code(20));
		if (check(at, size, 5))
			_exit(13);
		if (!mprotect(at, size, PROT_READ | PROT_WRITE))
			_exit(14);
		if (XU_SHM && errno != EACCES)
			_exit(15);
		if (probe_access(at + page, 1) != SIGSEGV)
			_exit(16);
		if (probe_access(at + page, 0) != 0 || check(at, size, 5))
			_exit(17);
		if (xpmem_detach(at) || xpmem_release(apid))
			_exit(18);
		_exit(CHILD_OK);
	}
	KEEP_NONE(all);
	ASSERT_CHILD(CHILD_OK, peer, "bob");
	ASSERT_CHILD(CHILD_OK, owner, "alice");
	ASSERT_DIR_EMPTY();
}

/*
 * After alice removes a segment, bob's permit for it attaches no more and
 * a new get fails (ENOENT); her other segment still attaches.  After
 * alice is killed (-9), that one fails too; on shm the attachment bob
 * kept still shows the last bytes, and nothing is left in the directory.
 */
TEST_F(xuser, remove_and_owner_exit)
{
	int seg[2], cmd[2], ack[2], kill_pipe[2], killed[2];
	pid_t owner, peer;
	int st;

	ASSERT_EQ(0, pipe(seg));
	ASSERT_EQ(0, pipe(cmd));
	ASSERT_EQ(0, pipe(ack));
	ASSERT_EQ(0, pipe(kill_pipe));
	ASSERT_EQ(0, pipe(killed));
	int all[] = { seg[0], seg[1], cmd[0], cmd[1], ack[0], ack[1],
		      kill_pipe[0], kill_pipe[1], killed[0], killed[1] };

	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *a, *b;
		xpmem_segid_t s[2];
		char c;

		KEEP(all, seg[1], cmd[0], ack[1]);
		if (become(ALICE, ALICE, 0))
			_exit(10);
		a = xpmem_ext_alloc(page, 0);
		b = anon(page);
		if (!a || !b)
			_exit(11);
		fill(a, page, 21);
		fill(b, page, 22);
		s[0] = xpmem_make(a, page, XPMEM_PERMIT_MODE, (void *)0666);
		s[1] = xpmem_make(b, page, XPMEM_PERMIT_MODE, (void *)0666);
		if (s[0] <= 0 || s[1] <= 0 ||
		    write_all(seg[1], s, sizeof(s)))
			_exit(12);
		if (read_all(cmd[0], &c, 1) || xpmem_remove(s[0]) ||
		    write_all(ack[1], &c, 1))
			_exit(13);
		wait_eof(cmd[0]);	/* killed before that */
		_exit(CHILD_OK);
	}
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		struct xpmem_addr addr = { .offset = 0 };
		xpmem_apid_t apid[2];
		unsigned char *at[2], *kept;
		xpmem_segid_t s[2];
		char c = 'r';

		KEEP(all, seg[0], cmd[1], ack[0], kill_pipe[1], killed[0]);
		if (become(BOB, BOB, 0))
			_exit(10);
		if (read_all(seg[0], s, sizeof(s)))
			_exit(11);
		at[0] = get_attach(s[0], XPMEM_RDWR, page, &apid[0]);
		at[1] = get_attach(s[1], XPMEM_RDWR, page, &apid[1]);
		if (!at[0] || !at[1])
			_exit(errno_code(20));
		if (check(at[0], page, 21) || check(at[1], page, 22))
			_exit(12);
		if (xpmem_detach(at[0]))
			_exit(13);
		kept = at[1];
		/* alice removes s[0] */
		if (write_all(cmd[1], &c, 1) || read_all(ack[0], &c, 1))
			_exit(14);
		addr.apid = apid[0];
		errno = 0;
		if (xpmem_attach(addr, page, NULL) != (void *)-1 ||
		    errno != ENOENT)
			_exit(30);
		if (xpmem_get(s[0], XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL) !=
		    -1 || errno != ENOENT)
			_exit(31);
		addr.apid = apid[1];
		at[1] = xpmem_attach(addr, page, NULL);
		if (at[1] == (void *)-1 || check(at[1], page, 22) ||
		    xpmem_detach(at[1]))
			_exit(32);
		/* the test kills alice */
		if (write_all(kill_pipe[1], &c, 1) ||
		    read_all(killed[0], &c, 1))
			_exit(15);
		errno = 0;
		if (xpmem_attach(addr, page, NULL) != (void *)-1 ||
		    errno != ENOENT)
			_exit(40);
		if (xpmem_get(s[1], XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL) !=
		    -1 || errno != ENOENT)
			_exit(41);
		/* shm: no revocation (the kernel backend's would SIGBUS) */
		if (XU_SHM && check(kept, page, 22))
			_exit(42);
		if (xpmem_detach(kept) || xpmem_release(apid[0]) ||
		    xpmem_release(apid[1]))
			_exit(43);
		_exit(CHILD_OK);
	}
	KEEP(all, kill_pipe[0], killed[1]);
	{
		char c;

		if (read_all(kill_pipe[0], &c, 1) == 0) {
			ASSERT_DIR_EMPTY();
			ASSERT_EQ(0, kill(owner, SIGKILL));
			st = wait_child(owner);
			ASSERT_TRUE(WIFSIGNALED(st));
			ASSERT_EQ(SIGKILL, WTERMSIG(st));
			ASSERT_EQ(0, write_all(killed[1], &c, 1));
		}
	}
	close(killed[1]);
	ASSERT_CHILD(CHILD_OK, peer, "bob");
	close(kill_pipe[0]);
	ASSERT_DIR_EMPTY();
}

/*
 * An owner that exec's has no segments any more, although it still runs:
 * bob's permit (descriptors from alice) and root's (through /proc) attach
 * no more.  shm only: the kernel backend is not asked here.
 */
TEST_F(xuser, owner_exec)
{
	int seg[2], fwd[2], go[2], ready[2], bob_ok[2], execd[2];
	struct xpmem_addr addr = { .offset = 0 };
	xpmem_segid_t s;
	pid_t owner, peer;
	unsigned char *at;
	char c;

	if (!XU_SHM)
		SKIP(return, "exec of a kernel-backend owner is not asserted");
	/* Close-on-exec: after exec alice keeps only stdin/stdout. */
	ASSERT_EQ(0, pipe2(seg, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(fwd, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(ready, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(bob_ok, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(execd, O_CLOEXEC));
	int all[] = { seg[0], seg[1], fwd[0], fwd[1], go[0], go[1],
		      ready[0], ready[1], bob_ok[0], bob_ok[1],
		      execd[0], execd[1] };

	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		char *argv[] = { "lib_xpmem-hold", NULL };
		char *env[] = { PROBE_ENV "=hold", NULL };
		unsigned char *buf;

		KEEP(all, seg[1], go[0], ready[1]);
		if (become(ALICE, ALICE, 0))
			_exit(10);
		buf = xpmem_ext_alloc(page, 0);
		if (!buf)
			_exit(11);
		fill(buf, page, 61);
		s = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0666);
		if (s <= 0 || write_all(seg[1], &s, sizeof(s)))
			_exit(12);
		if (read_all(go[0], &c, 1) || dup2(go[0], 0) != 0 ||
		    dup2(ready[1], 1) != 1)
			_exit(13);
		execve("/proc/self/exe", argv, env);
		_exit(14);
	}
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		xpmem_apid_t apid;

		KEEP(all, fwd[0], bob_ok[1], execd[0]);
		if (become(BOB, BOB, 0))
			_exit(10);
		if (read_all(fwd[0], &s, sizeof(s)))
			_exit(11);
		at = get_attach(s, XPMEM_RDWR, page, &apid);
		if (!at)
			_exit(errno_code(20));
		if (check(at, page, 61) || xpmem_detach(at))
			_exit(12);
		if (write_all(bob_ok[1], &c, 1) || read_all(execd[0], &c, 1))
			_exit(13);
		addr.apid = apid;
		errno = 0;
		if (xpmem_attach(addr, page, NULL) != (void *)-1 ||
		    errno != ENOENT)
			_exit(30);
		if (xpmem_get(s, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL) != -1 ||
		    errno != ENOENT)
			_exit(31);
		if (xpmem_release(apid))
			_exit(32);
		_exit(CHILD_OK);
	}
	KEEP(all, seg[0], fwd[1], go[1], ready[0], bob_ok[0], execd[1]);
	ASSERT_EQ(0, read_all(seg[0], &s, sizeof(s)));
	ASSERT_EQ(0, write_all(fwd[1], &s, sizeof(s)));
	/* root's permit goes through /proc */
	addr.apid = xpmem_get(s, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, addr.apid);
	at = xpmem_attach(addr, page, NULL);
	ASSERT_NE((void *)-1, at);
	ASSERT_EQ(0, check(at, page, 61));
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, read_all(bob_ok[0], &c, 1)) TH_LOG("bob failed");
	ASSERT_EQ(0, write_all(go[1], &c, 1));
	ASSERT_EQ(0, read_all(ready[0], &c, 1)) TH_LOG("alice did not exec");
	errno = 0;
	ASSERT_EQ((void *)-1, xpmem_attach(addr, page, NULL));
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(0, xpmem_release(addr.apid));
	ASSERT_EQ(0, write_all(execd[1], &c, 1));
	ASSERT_CHILD(CHILD_OK, peer, "bob");
	close(go[1]);
	ASSERT_CHILD(CHILD_OK, owner, "alice after exec");
	ASSERT_DIR_EMPTY();
}

/*
 * A descriptor gives a whole allocation, so on shm a peer of another uid
 * gets one only if every byte of the allocation is in a live segment that
 * grants it that much; the kernel backend grants segment by segment.
 * Alice's allocation: page 0 and page 1.  Bob asks after each step.
 */
enum { PA_S0644, PA_S1_0640, PA_S1_0666, PA_ALL_0666, PA_ALL_GONE, PA_N };

TEST_F(xuser, partial_allocation)
{
	int seg[2], ack[2];
	pid_t owner, peer;

	ASSERT_EQ(0, pipe(seg));
	ASSERT_EQ(0, pipe(ack));
	int all[] = { seg[0], seg[1], ack[0], ack[1] };

	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		static const struct {
			size_t first, pages;
			unsigned long mode;
		} step[PA_ALL_GONE] = {
			[PA_S0644] = { 0, 1, 0644 },
			[PA_S1_0640] = { 1, 1, 0640 },
			[PA_S1_0666] = { 1, 1, 0666 },
			[PA_ALL_0666] = { 0, 2, 0666 },
		};
		xpmem_segid_t s[PA_ALL_GONE];
		unsigned char *buf;
		char c;
		int i;

		KEEP(all, seg[1], ack[0]);
		if (become(ALICE, ALICE, 0))
			_exit(10);
		buf = xpmem_ext_alloc(2 * page, 0);
		if (!buf)
			_exit(11);
		fill(buf, page, 31);
		fill(buf + page, page, 32);
		for (i = 0; i < PA_N; i++) {
			if (i < PA_ALL_GONE) {
				s[i] = xpmem_make(buf + step[i].first * page,
						  step[i].pages * page,
						  XPMEM_PERMIT_MODE,
						  (void *)step[i].mode);
				if (s[i] <= 0)
					_exit(12);
			} else if (xpmem_remove(s[PA_ALL_0666])) {
				_exit(13);
			}
			if (write_all(seg[1], s, sizeof(s)) ||
			    read_all(ack[0], &c, 1))
				_exit(14);
		}
		_exit(CHILD_OK);
	}
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		/*
		 * shm, per step: does get(page-0 0644 segment, RDONLY),
		 * and get(page-1 0666 segment, RDWR), succeed?
		 */
		static const int shm_ro0[PA_N] = { 0, 0, 1, 1, 1 };
		static const int shm_rw1[PA_N] = { -1, -1, 0, 1, 0 };
		xpmem_segid_t s[PA_ALL_GONE];
		xpmem_apid_t apid;
		unsigned char *at;
		int i, want;

		KEEP(all, seg[0], ack[1]);
		if (become(BOB, BOB, 0))
			_exit(10);
		for (i = 0; i < PA_N; i++) {
			if (read_all(seg[0], s, sizeof(s)))
				_exit(11);
			want = XU_SHM ? shm_ro0[i] : 1;
			errno = 0;
			at = get_attach(s[PA_S0644], XPMEM_RDONLY, page, &apid);
			if (!at != !want || (!at && errno != EACCES))
				_exit(20 + i);
			if (at && (check(at, page, 31) || xpmem_detach(at) ||
				   xpmem_release(apid)))
				_exit(30 + i);
			/* the 0644 segment never gives read-write */
			if (xpmem_get(s[PA_S0644], XPMEM_RDWR,
				      XPMEM_PERMIT_MODE, NULL) != -1 ||
			    errno != EACCES)
				_exit(40 + i);
			if (i >= PA_S1_0666) {
				want = XU_SHM ? shm_rw1[i] : 1;
				errno = 0;
				at = get_attach(s[PA_S1_0666], XPMEM_RDWR, page,
						&apid);
				if (!at != !want || (!at && errno != EACCES))
					_exit(50 + i);
				if (at && (check(at, page, 32) ||
					   xpmem_detach(at) ||
					   xpmem_release(apid)))
					_exit(60 + i);
			}
			if (write_all(ack[1], "n", 1))
				_exit(12);
		}
		_exit(CHILD_OK);
	}
	KEEP_NONE(all);
	ASSERT_CHILD(CHILD_OK, peer, "bob");
	ASSERT_CHILD(CHILD_OK, owner, "alice");
	ASSERT_DIR_EMPTY();
}

/*
 * A stopped owner cannot answer: on shm, bob's get gives up after its
 * wait (EAGAIN); the kernel backend does not need the owner to run.  Once
 * alice runs again she answers the next get (and the abandoned connection
 * costs her nothing).
 */
TEST_F(xuser, stopped_owner)
{
	int seg[2], hold[2];
	xpmem_segid_t s;
	pid_t owner, peer;
	int st;

	ASSERT_EQ(0, pipe(seg));
	ASSERT_EQ(0, pipe(hold));
	int all[] = { seg[0], seg[1], hold[0], hold[1] };

	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		KEEP(all, seg[1], hold[0]);
		alice_page_owner(81, seg[1], hold[0]);
	}
	KEEP(all, seg[0], hold[1]);
	ASSERT_EQ(0, read_all(seg[0], &s, sizeof(s)));
	ASSERT_EQ(0, kill(owner, SIGSTOP));
	ASSERT_EQ(owner, waitpid(owner, &st, WUNTRACED));
	ASSERT_TRUE(WIFSTOPPED(st));
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		xpmem_apid_t apid;

		if (become(BOB, BOB, 0))
			_exit(10);
		errno = 0;
		apid = xpmem_get(s, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
		if (XU_SHM)
			_exit(apid == -1 && errno == EAGAIN ? CHILD_OK : 11);
		_exit(apid > 0 && !xpmem_release(apid) ? CHILD_OK : 12);
	}
	ASSERT_CHILD(CHILD_OK, peer, "bob, owner stopped");
	ASSERT_EQ(0, kill(owner, SIGCONT));
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		xpmem_apid_t apid;
		unsigned char *at;

		if (become(BOB, BOB, 0))
			_exit(10);
		at = get_attach(s, XPMEM_RDWR, page, &apid);
		if (!at)
			_exit(errno_code(20));
		if (check(at, page, 81) || xpmem_detach(at) ||
		    xpmem_release(apid))
			_exit(11);
		_exit(CHILD_OK);
	}
	ASSERT_CHILD(CHILD_OK, peer, "bob, owner running again");
	close(hold[1]);
	ASSERT_CHILD(CHILD_OK, owner, "alice");
	close(seg[0]);
	ASSERT_DIR_EMPTY();
}

/*
 * Bob has room for the connection and one descriptor more: the owner's
 * answer cannot be received whole (EMFILE), and what did arrive is closed
 * (exactly as many descriptors free afterwards).  With room, it works.
 */
TEST_F(xuser, peer_out_of_descriptors)
{
	struct rlimit few = { .rlim_cur = 64, .rlim_max = 64 };
	int seg[2], hold[2];
	xpmem_segid_t s;
	pid_t owner, peer;

	if (!XU_SHM)
		SKIP(return, "shm: descriptors come from the owner");
	ASSERT_EQ(0, pipe(seg));
	ASSERT_EQ(0, pipe(hold));
	int all[] = { seg[0], seg[1], hold[0], hold[1] };

	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		KEEP(all, seg[1], hold[0]);
		alice_page_owner(91, seg[1], hold[0]);
	}
	KEEP(all, seg[0], hold[1]);
	ASSERT_EQ(0, read_all(seg[0], &s, sizeof(s)));
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		xpmem_apid_t apid;
		unsigned char *at;
		int last = -1, fd, i;

		close(hold[1]);
		if (become(BOB, BOB, 0) || setrlimit(RLIMIT_NOFILE, &few))
			_exit(10);
		while ((fd = dup(0)) >= 0)
			last = fd;
		if (errno != EMFILE || last < 5)
			_exit(11);
		close(last);
		close(last - 1);	/* the connection, and one more */
		errno = 0;
		if (xpmem_get(s, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL) != -1 ||
		    errno != EMFILE)
			_exit(12);
		for (i = 0; i < 2; i++)
			if (dup(0) < 0)
				_exit(13);	/* a descriptor leaked */
		if (dup(0) >= 0 || errno != EMFILE)
			_exit(14);
		for (i = 0; i < 6; i++)
			close(last - i);
		at = get_attach(s, XPMEM_RDWR, page, &apid);
		if (!at)
			_exit(errno_code(20));
		if (check(at, page, 91) || xpmem_detach(at) ||
		    xpmem_release(apid))
			_exit(15);
		_exit(CHILD_OK);
	}
	ASSERT_CHILD(CHILD_OK, peer, "bob");
	close(hold[1]);
	ASSERT_CHILD(CHILD_OK, owner, "alice");
	close(seg[0]);
	ASSERT_DIR_EMPTY();
}

/* Connect to @segid's socket (shm: "\0xpmem-<segid in 12 hex digits>"). */
static int raw_connect(xpmem_segid_t segid)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
			 "xpmem-%012llx", (unsigned long long)segid);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 &&
	    connect(fd, (struct sockaddr *)&sun,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				(size_t)n))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * Alice's process has no descriptor left, and bob holds connections to her
 * segment whose answers he never reads.  Her accept thread must still
 * answer them all without stalling and without losing a descriptor: carol
 * then does FLOOD_GETS gets and attaches in a row (one lost descriptor
 * and the next answer could not be accepted).
 */
TEST_F_TIMEOUT(xuser, silent_peer_owner_at_emfile, 120)
{
	struct rlimit few = { .rlim_cur = 64, .rlim_max = 64 };
	int seg[2], hold[2], held[2];
	xpmem_segid_t s;
	pid_t owner, silent, peer;
	char c;

	if (!XU_SHM)
		SKIP(return, "shm: lookups are answered by the owner");
	ASSERT_EQ(0, pipe(seg));
	ASSERT_EQ(0, pipe(hold));
	ASSERT_EQ(0, pipe(held));
	int all[] = { seg[0], seg[1], hold[0], hold[1], held[0], held[1] };

	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *buf;

		KEEP(all, seg[1], hold[0]);
		if (become(ALICE, ALICE, 0))
			_exit(10);
		buf = xpmem_ext_alloc(page, 0);
		if (!buf)
			_exit(11);
		fill(buf, page, 41);
		s = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0666);
		if (s <= 0 || setrlimit(RLIMIT_NOFILE, &few))
			_exit(12);
		while (dup(0) >= 0)
			;
		if (errno != EMFILE || write_all(seg[1], &s, sizeof(s)))
			_exit(13);
		wait_eof(hold[0]);
		_exit(CHILD_OK);
	}
	KEEP(all, seg[0], hold[1], held[0], held[1]);
	ASSERT_EQ(0, read_all(seg[0], &s, sizeof(s)));
	silent = fork_child();
	ASSERT_LE(0, silent);
	if (silent == 0) {
		struct pollfd pfd[SILENT_CONNS];
		int i, n;

		close(seg[0]);
		close(hold[1]);
		close(held[0]);
		if (become(BOB, BOB, 0))
			_exit(10);
		for (i = 0; i < SILENT_CONNS; i++) {
			pfd[i].fd = raw_connect(s);
			pfd[i].events = POLLIN;
			if (pfd[i].fd < 0)
				_exit(11);
		}
		/* Every answer arrives; none is read. */
		for (n = 0; n < SILENT_CONNS;) {
			int r = poll(pfd, SILENT_CONNS, 30000);

			if (r <= 0)
				_exit(12);
			for (i = 0; i < SILENT_CONNS; i++) {
				if (pfd[i].revents & POLLIN) {
					pfd[i].events = 0;
					n++;
				}
			}
		}
		if (write_all(held[1], "h", 1))
			_exit(13);
		wait_eof(hold[0]);
		_exit(CHILD_OK);
	}
	close(held[1]);
	ASSERT_EQ(0, read_all(held[0], &c, 1)) TH_LOG("bob's connections");
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		xpmem_apid_t apid;
		unsigned char *at;
		int i;

		close(seg[0]);
		close(hold[1]);
		close(held[0]);
		if (become(CAROL, CAROL, 0))
			_exit(10);
		for (i = 0; i < FLOOD_GETS; i++) {
			at = get_attach(s, XPMEM_RDWR, page, &apid);
			if (!at)
				_exit(errno_code(20));
			if (check(at, page, 41) || xpmem_detach(at) ||
			    xpmem_release(apid))
				_exit(11);
		}
		_exit(CHILD_OK);
	}
	ASSERT_CHILD(CHILD_OK, peer, "carol's gets");
	close(hold[1]);
	ASSERT_CHILD(CHILD_OK, silent, "bob");
	ASSERT_CHILD(CHILD_OK, owner, "alice");
	ASSERT_DIR_EMPTY();
}

/* ---- in-place migration and exportable ranges --------------------------- */

TEST_F(lib, migrate_in_place)
{
	size_t size = NPAGES * page;
	unsigned char *buf = anon(size), *at;
	unsigned char *copy = malloc(size);
	xpmem_segid_t segid;
	xpmem_apid_t apid;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, copy);
	fill(buf, size, 21);
	memset(buf + 2 * page, 0, page);	/* a zero page stays zero */
	memcpy(copy, buf, size);

	segid = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	/* Same address, same contents. */
	ASSERT_EQ(0, memcmp(buf, copy, size));
	if (IS_SHM)
		ASSERT_EQ(1, mapped_from_object(buf));

	at = get_attach(segid, XPMEM_RDWR, size, &apid);
	ASSERT_NE(NULL, at);
	ASSERT_EQ(0, memcmp(at, copy, size));
	buf[5] = 0xa5;
	ASSERT_EQ(0xa5, at[5]);
	at[page + 9] = 0x5a;
	ASSERT_EQ(0x5a, buf[page + 9]);
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(apid));

	/* A second segment on a sub-range shares the backing. */
	segid = (xpmem_remove(segid), xpmem_make(buf + page, page,
						 XPMEM_PERMIT_MODE,
						 (void *)0600));
	ASSERT_LT(0, segid);
	ASSERT_EQ(0, xpmem_remove(segid));

	/* After the last remove the memory is private again, unchanged. */
	if (IS_SHM)
		ASSERT_EQ(0, mapped_from_object(buf + page));
	copy[5] = 0xa5;
	copy[page + 9] = 0x5a;
	ASSERT_EQ(0, memcmp(buf, copy, size));
	munmap(buf, size);
	free(copy);
}

TEST_F(lib, unexportable_ranges)
{
	char path[] = "/tmp/xpmem-libtest-XXXXXX";
	unsigned char *hole, *file;
	int fd;

	if (!IS_SHM)
		SKIP(return, "the kernel backend exports any range");
	/* A hole. */
	hole = anon(2 * page);
	ASSERT_NE(NULL, hole);
	ASSERT_EQ(0, munmap(hole + page, page));
	errno = 0;
	ASSERT_EQ(-1, xpmem_make(hole, 2 * page, XPMEM_PERMIT_MODE,
				 (void *)0600));
	ASSERT_EQ(EOPNOTSUPP, errno);
	munmap(hole, page);
	/* A file mapping. */
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	unlink(path);
	ASSERT_EQ(0, ftruncate(fd, (off_t)page));
	file = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, file);
	ASSERT_EQ(-1, xpmem_make(file, page, XPMEM_PERMIT_MODE,
				 (void *)0600));
	ASSERT_EQ(EOPNOTSUPP, errno);
	munmap(file, page);
	close(fd);
}

/* ---- shm directory: full, and nothing left behind ----------------------- */

TEST_F(lib, full_shm_dir_enospc)
{
	char dir[] = "/tmp/xpmem-full-XXXXXX";
	size_t big = 4UL << 20;
	unsigned char *buf, *small;

	if (!IS_SHM)
		SKIP(return, "the kernel backend uses no shm directory");
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		SKIP(return, "cannot make a private mount namespace: %s",
		     strerror(errno));
	ASSERT_NE(NULL, mkdtemp(dir));
	if (mount("tmpfs", dir, "tmpfs", 0, "size=1m")) {
		rmdir(dir);
		SKIP(return, "cannot mount a tmpfs: %s", strerror(errno));
	}
	ASSERT_EQ(0, setenv("XPMEM_SHM_DIR", dir, 1));

	errno = 0;
	ASSERT_EQ(NULL, xpmem_ext_alloc(big, 0));
	ASSERT_EQ(ENOSPC, errno);

	buf = anon(big);
	ASSERT_NE(NULL, buf);
	fill(buf, page, 8);
	ASSERT_EQ(-1, xpmem_make(buf, big, XPMEM_PERMIT_MODE, (void *)0600));
	ASSERT_EQ(ENOSPC, errno);
	ASSERT_EQ(0, check(buf, page, 8));	/* untouched, still private */
	ASSERT_EQ(0, mapped_from_object(buf));

	small = xpmem_ext_alloc(16 * page, 0);
	ASSERT_NE(NULL, small);
	ASSERT_EQ(0, count_dir(dir));
	ASSERT_EQ(0, xpmem_ext_free(small));
	munmap(buf, big);
	unsetenv("XPMEM_SHM_DIR");
	umount2(dir, MNT_DETACH);
	rmdir(dir);
}

TEST_F(lib, owner_killed)
{
	char dir[] = "/dev/shm/xpmem-kill-XXXXXX";
	int seg_pipe[2], hold[2];
	xpmem_segid_t segid[2];
	xpmem_apid_t apid;
	unsigned char *at;
	pid_t owner;
	int st;

	if (IS_SHM) {
		ASSERT_NE(NULL, mkdtemp(dir));
		ASSERT_EQ(0, setenv("XPMEM_SHM_DIR", dir, 1));
	}
	ASSERT_EQ(0, pipe(seg_pipe));
	ASSERT_EQ(0, pipe(hold));
	owner = fork();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *a = xpmem_ext_alloc(2 * page, 0);
		unsigned char *b = anon(2 * page);
		xpmem_segid_t s[2];

		close(hold[1]);
		if (!a || !b)
			_exit(10);
		fill(a, 2 * page, 31);
		fill(b, 2 * page, 32);
		s[0] = xpmem_make(a, 2 * page, XPMEM_PERMIT_MODE, (void *)0600);
		s[1] = xpmem_make(b, 2 * page, XPMEM_PERMIT_MODE, (void *)0600);
		if (s[0] <= 0 || s[1] <= 0)
			_exit(11);
		if (write_all(seg_pipe[1], s, sizeof(s)))
			_exit(12);
		wait_eof(hold[0]);
		_exit(CHILD_OK);
	}
	close(hold[0]);
	close(seg_pipe[1]);
	ASSERT_EQ(0, read_all(seg_pipe[0], segid, sizeof(segid)));
	if (IS_SHM)
		ASSERT_EQ(0, count_dir(dir));	/* unlinked at creation */
	at = get_attach(segid[1], XPMEM_RDWR, 2 * page, &apid);
	ASSERT_NE(NULL, at);
	ASSERT_EQ(0, check(at, 2 * page, 32));

	ASSERT_EQ(0, kill(owner, SIGKILL));
	st = wait_child(owner);
	ASSERT_TRUE(WIFSIGNALED(st));
	ASSERT_EQ(SIGKILL, WTERMSIG(st));

	errno = 0;
	ASSERT_EQ(-1, xpmem_get(segid[0], XPMEM_RDWR, XPMEM_PERMIT_MODE,
				NULL));
	ASSERT_EQ(ENOENT, errno);
	if (IS_SHM) {
		struct xpmem_addr addr = { .apid = apid, .offset = 0 };

		ASSERT_EQ(0, count_dir(dir));
		/* No revocation: the old mapping keeps the last contents. */
		ASSERT_EQ(0, check(at, 2 * page, 32));
		ASSERT_EQ((void *)-1, xpmem_attach(addr, page, NULL));
		ASSERT_EQ(ENOENT, errno);
		ASSERT_EQ(0, rmdir(dir));
		unsetenv("XPMEM_SHM_DIR");
	} else {
		/* The kernel backend revokes: access => SIGBUS. */
		ASSERT_EQ(SIGBUS, probe_access(at, 0));
	}
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(apid));
}

/* ---- fork --------------------------------------------------------------- */

TEST_F(lib, fork_then_use)
{
	size_t size = 2 * page;
	unsigned char *buf = xpmem_ext_alloc(size, 0);
	unsigned char *priv = anon(size);
	int to_parent[2], done[2];
	xpmem_segid_t segid, psegid, csegid;
	xpmem_apid_t apid;
	unsigned char *at;
	pid_t pid;
	int st;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, priv);
	fill(buf, size, 41);
	fill(priv, size, 42);
	segid = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	/* A migrated range: still private to each process after fork. */
	psegid = xpmem_make(priv, size, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, psegid);
	ASSERT_EQ(0, pipe(to_parent));
	ASSERT_EQ(0, pipe(done));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		unsigned char *mine;
		xpmem_segid_t s;

		close(done[1]);
		at = get_attach(segid, XPMEM_RDWR, size, &apid);
		if (!at)
			_exit(10);
		if (check(at, size, 41))
			_exit(11);
		if (check(priv, size, 42))
			_exit(12);
		priv[0] ^= 0xff;	/* must not reach the parent */
		mine = xpmem_ext_alloc(size, 0);
		if (!mine)
			_exit(13);
		fill(mine, size, 43);
		s = xpmem_make(mine, size, XPMEM_PERMIT_MODE, (void *)0600);
		if (s <= 0 || s == segid)
			_exit(14);
		if (write_all(to_parent[1], &s, sizeof(s)))
			_exit(15);
		wait_eof(done[0]);
		if (xpmem_detach(at) || xpmem_release(apid) || xpmem_remove(s))
			_exit(16);
		_exit(CHILD_OK);
	}
	close(done[0]);
	close(to_parent[1]);
	ASSERT_EQ(0, read_all(to_parent[0], &csegid, sizeof(csegid)));
	at = get_attach(csegid, XPMEM_RDWR, size, &apid);
	ASSERT_NE(NULL, at);
	ASSERT_EQ(0, check(at, size, 43));
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(apid));
	close(done[1]);
	st = wait_child(pid);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
	ASSERT_EQ(0, check(priv, size, 42));
	ASSERT_EQ(0, xpmem_remove(psegid));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
	munmap(priv, size);
}

/* ---- threads ------------------------------------------------------------ */

static void *thread_cycles(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg;
	size_t size = 2 * page;
	int i;

	for (i = 0; i < NTHREAD_ITERS; i++) {
		unsigned char *buf = xpmem_ext_alloc(size, 0), *at;
		xpmem_segid_t segid;
		xpmem_apid_t apid;

		if (!buf)
			return (void *)1;
		fill(buf, size, id * 100 + (unsigned int)i);
		segid = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0600);
		if (segid <= 0)
			return (void *)2;
		at = get_attach(segid, XPMEM_RDWR, size, &apid);
		if (!at)
			return (void *)3;
		if (check(at, size, id * 100 + (unsigned int)i))
			return (void *)4;
		at[7] = (unsigned char)id;
		if (buf[7] != (unsigned char)id)
			return (void *)5;
		if (xpmem_detach(at) || xpmem_release(apid) ||
		    xpmem_remove(segid) || xpmem_ext_free(buf))
			return (void *)6;
	}
	return NULL;
}

TEST_F(lib, concurrent_threads)
{
	pthread_t t[NTHREADS];
	void *ret;
	int i;

	for (i = 0; i < NTHREADS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, thread_cycles,
					    (void *)(uintptr_t)i));
	for (i = 0; i < NTHREADS; i++) {
		ASSERT_EQ(0, pthread_join(t[i], &ret));
		ASSERT_EQ(NULL, ret) TH_LOG("thread %d failed at step %ld", i,
					    (long)(uintptr_t)ret);
	}
}

/* ---- leaks -------------------------------------------------------------- */

static int one_cycle(int migrate)
{
	size_t size = NPAGES * page;
	unsigned char *buf = migrate ? anon(size) : xpmem_ext_alloc(size, 0);
	struct xpmem_addr addr;
	xpmem_segid_t segid;
	void *a, *b;

	if (!buf)
		return 1;
	buf[0] = 1;
	segid = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0600);
	if (segid <= 0)
		return 2;
	addr.apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	if (addr.apid <= 0)
		return 3;
	addr.offset = 0;
	a = xpmem_attach(addr, page, NULL);
	addr.offset = (off_t)page;
	b = xpmem_attach(addr, 2 * page, NULL);
	if (a == (void *)-1 || b == (void *)-1)
		return 4;
	if (xpmem_detach(a))
		return 5;
	/* b is detached by the release. */
	if (xpmem_release(addr.apid) || xpmem_remove(segid))
		return 6;
	if (migrate)
		return munmap(buf, size) ? 7 : 0;
	return xpmem_ext_free(buf) ? 8 : 0;
}

TEST_F(lib, no_leaks)
{
	int fds, maps, i;

	/* Warm up: the device fd or the registry are created once. */
	ASSERT_EQ(0, one_cycle(0));
	ASSERT_EQ(0, one_cycle(1));
	fds = count_dir("/proc/self/fd");
	maps = count_lines("/proc/self/maps");
	for (i = 0; i < LEAK_CYCLES; i++) {
		ASSERT_EQ(0, one_cycle(0));
		ASSERT_EQ(0, one_cycle(1));
	}
	ASSERT_EQ(fds, count_dir("/proc/self/fd"));
	ASSERT_EQ(maps, count_lines("/proc/self/maps"));
}

/* ---- PID namespaces ----------------------------------------------------- */

TEST_F(lib, pid_namespace)
{
	int seg_pipe[2], hold[2];
	unsigned char *buf = xpmem_ext_alloc(page, 0);
	xpmem_segid_t segid, mine;
	pid_t mid;
	int st;

	ASSERT_NE(NULL, buf);
	fill(buf, page, 61);
	mine = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, mine);
	ASSERT_EQ(0, pipe(seg_pipe));
	ASSERT_EQ(0, pipe(hold));
	mid = fork();
	ASSERT_LE(0, mid);
	if (mid == 0) {
		pid_t inner;

		close(hold[1]);
		if (unshare(CLONE_NEWPID))
			_exit(CHILD_SKIP);
		inner = fork();
		if (inner < 0)
			_exit(10);
		if (inner == 0) {
			/* pid 1 of a new namespace, /proc of the old one */
			unsigned char *b = xpmem_ext_alloc(page, 0);
			xpmem_apid_t apid;
			unsigned char *at;
			xpmem_segid_t s;

			if (!b)
				_exit(11);
			fill(b, page, 62);
			s = xpmem_make(b, page, XPMEM_PERMIT_MODE, (void *)0600);
			if (s <= 0 || write_all(seg_pipe[1], &s, sizeof(s)))
				_exit(12);
			errno = 0;
			at = get_attach(mine, XPMEM_RDWR, page, &apid);
			if (IS_SHM) {
				/* SO_PEERCRED: its owner is outside our namespace */
				if (at || errno != ENOENT)
					_exit(13);
			} else if (!at || check(at, page, 61)) {
				_exit(14);
			}
			wait_eof(hold[0]);
			_exit(CHILD_OK);
		}
		st = wait_child(inner);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 20);
	}
	close(hold[0]);
	close(seg_pipe[1]);	/* EOF if the child cannot unshare */
	if (read_all(seg_pipe[0], &segid, sizeof(segid)) == 0) {
		xpmem_apid_t apid;
		unsigned char *at;

		/* The owner is in a descendant namespace: we see it. */
		at = get_attach(segid, XPMEM_RDWR, page, &apid);
		ASSERT_NE(NULL, at);
		ASSERT_EQ(0, check(at, page, 62));
		ASSERT_EQ(0, xpmem_detach(at));
		ASSERT_EQ(0, xpmem_release(apid));
	}
	close(hold[1]);
	st = wait_child(mid);
	ASSERT_TRUE(WIFEXITED(st));
	if (WEXITSTATUS(st) == CHILD_SKIP)
		SKIP(return, "cannot unshare the PID namespace");
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
	ASSERT_EQ(0, xpmem_remove(mine));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

TEST_F(lib, hugetlb_alloc_falls_back)
{
	unsigned char *buf = xpmem_ext_alloc(3 * page, XPMEM_EXT_ALLOC_HUGETLB);
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	unsigned char *at;
	size_t i;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < 3 * page; i++)
		ASSERT_EQ(0, buf[i]);
	fill(buf, 3 * page, 71);
	segid = xpmem_make(buf, 3 * page, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	at = get_attach(segid, XPMEM_RDWR, 3 * page, &apid);
	ASSERT_NE(NULL, at);
	ASSERT_EQ(0, check(at, 3 * page, 71));
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(apid));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* ---- first-touch cost --------------------------------------------------- */

/* Read one byte per page; returns the elapsed ns and checks the data. */
static uint64_t touch_pages(const unsigned char *p, size_t size, int *bad)
{
	uint64_t t0 = now_ns();
	size_t off;

	for (off = 0; off < size; off += page)
		if (p[off] != (unsigned char)(off / page))
			*bad = 1;
	return now_ns() - t0;
}

/*
 * first_touch_once - ns per page for the first touch of every page of a
 * fresh attachment of a populated segment, and of a fresh mapping of a
 * populated memfd of the same size.  Returns 0 or a step number.
 */
static int first_touch_once(uint64_t *att_ns, uint64_t *memfd_ns)
{
	size_t size = FIRST_TOUCH_MB << 20, off, npages = size / page;
	unsigned char *buf = xpmem_ext_alloc(size, 0), *at, *m;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	int fd, bad = 0;

	if (!buf)
		return 1;
	for (off = 0; off < size; off += page)
		buf[off] = (unsigned char)(off / page);
	segid = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0600);
	if (segid <= 0)
		return 2;
	at = get_attach(segid, XPMEM_RDONLY, size, &apid);
	if (!at)
		return 3;
	*att_ns = touch_pages(at, size, &bad) / npages;
	if (bad)
		return 4;
	if (xpmem_detach(at) || xpmem_release(apid) || xpmem_remove(segid) ||
	    xpmem_ext_free(buf))
		return 5;

	fd = memfd_create("first-touch", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size))
		return 6;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 7;
	for (off = 0; off < size; off += page)
		m[off] = (unsigned char)(off / page);
	munmap(m, size);
	m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 8;
	*memfd_ns = touch_pages(m, size, &bad) / npages;
	munmap(m, size);
	close(fd);
	return bad ? 9 : 0;
}

/* The best of FIRST_TOUCH_ROUNDS, to tame emulation noise. */
static int measure_first_touch(uint64_t *att_ns, uint64_t *memfd_ns)
{
	uint64_t a, m;
	int i, ret;

	*att_ns = *memfd_ns = UINT64_MAX;
	for (i = 0; i < FIRST_TOUCH_ROUNDS; i++) {
		ret = first_touch_once(&a, &m);
		if (ret)
			return ret;
		if (a < *att_ns)
			*att_ns = a;
		if (m < *memfd_ns)
			*memfd_ns = m;
	}
	return 0;
}

/*
 * Not a pass/fail benchmark: logs the first-touch cost of an attachment on
 * the active backend against a memfd mapping, and, on the kernel backend,
 * also the shm backend's (measured in a re-executed copy of this program
 * with XPMEM_BACKEND=shm), so one VM run reports both.
 */
TEST_F_TIMEOUT(lib, first_touch_cost, PROBE_DEADLINE_S + 30)
{
	uint64_t att = 0, memfd = 0;
	char *env[] = { PROBE_ENV "=touch", "XPMEM_BACKEND=shm", NULL };
	unsigned long long s_att, s_memfd;
	char out[4096], *line;
	int st;

	ASSERT_EQ(0, measure_first_touch(&att, &memfd));
	ksft_print_msg("first-touch %s: attachment %llu ns/page, memfd %llu "
		       "ns/page (%d MiB, best of %d)\n",
		       xpmem_ext_backend_name(self->backend),
		       (unsigned long long)att, (unsigned long long)memfd,
		       FIRST_TOUCH_MB, FIRST_TOUCH_ROUNDS);
	if (IS_SHM)
		return;
	st = run_probe(env, out, sizeof(out));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	line = strstr(out, "touch att=");
	ASSERT_NE(NULL, line);
	ASSERT_EQ(2, sscanf(line, "touch att=%llu memfd=%llu", &s_att,
			    &s_memfd));
	ksft_print_msg("first-touch shm: attachment %llu ns/page, memfd %llu "
		       "ns/page; shm/kernel attachment ratio %.2f\n", s_att,
		       s_memfd, att ? (double)s_att / (double)att : 0.0);
}

/* ---- copies, populate and io_uring (XPMEM_EXT_1.2) --------------------- */

/* 1 MiB and three pages (fixture lib sets page) */
#define COPY_SIZE	(1024 * 1024 + 3 * page)

/* fill()'s byte at @i of @seed: what a copy from offset @i must bring. */
static int check_from(const unsigned char *p, size_t off, size_t len,
		      unsigned int seed)
{
	for (size_t i = 0; i < len; i++) {
		size_t j = off + i;

		if (p[i] != (unsigned char)(seed + j * 7 + (j >> 12)))
			return -1;
	}
	return 0;
}

/*
 * A child owns COPY_SIZE bytes (fill() seed 21) exported 0600 and waits;
 * the parent gets @flags.  The child checks, when told, that bytes
 * [page, 2 page) hold 0x5c (exit 0) and exits.
 */
struct copy_owner {
	pid_t pid;
	int go[2], seg[2];
	xpmem_segid_t segid;
	xpmem_apid_t apid;
};

static int copy_owner_start(struct copy_owner *o, int flags)
{
	if (pipe(o->go) || pipe(o->seg))
		return -1;
	o->pid = fork_child();
	if (o->pid < 0)
		return -1;
	if (o->pid == 0) {
		unsigned char *b = xpmem_ext_alloc(COPY_SIZE, 0);
		xpmem_segid_t s;
		char c;

		close(o->go[1]);
		close(o->seg[0]);
		if (!b)
			_exit(10);
		fill(b, COPY_SIZE, 21);
		s = xpmem_make(b, COPY_SIZE, XPMEM_PERMIT_MODE, (void *)0600);
		if (s <= 0 || write_all(o->seg[1], &s, sizeof(s)))
			_exit(11);
		if (read(o->go[0], &c, 1) != 1)
			_exit(12);
		for (size_t i = page; i < 2 * page; i++)
			if (b[i] != 0x5c)
				_exit(13);
		if (check_from(b + 2 * page, 2 * page, COPY_SIZE - 2 * page,
			       21) || check(b, page, 21))
			_exit(14);
		_exit(CHILD_OK);
	}
	close(o->go[0]);
	close(o->seg[1]);
	if (read_all(o->seg[0], &o->segid, sizeof(o->segid)))
		return -1;
	o->apid = xpmem_get(o->segid, flags, XPMEM_PERMIT_MODE, NULL);
	return o->apid > 0 ? 0 : -1;
}

/* Tell the child to check and exit; its exit status. */
static int copy_owner_end(struct copy_owner *o)
{
	char c = 1;
	int st;

	if (write(o->go[1], &c, 1) != 1)
		return -1;
	st = wait_child(o->pid);
	close(o->go[1]);
	close(o->seg[0]);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST_F(lib, ext_copy_features)
{
	unsigned long f = xpmem_ext_features();

	ASSERT_NE(0, f & XPMEM_EXT_F_COPY);
	/* the module has io_uring commands where the kernel has them */
	ASSERT_EQ(IS_SHM || kernel_has_uring_cmd(), !!(f & XPMEM_EXT_F_URING));
}

TEST_F(lib, ext_copy_both_ways)
{
	unsigned char *buf = anon(COPY_SIZE);
	struct copy_owner o;
	struct iovec iov[3];
	xpmem_apid_t ro;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, copy_owner_start(&o, XPMEM_RDWR));
	/* unaligned, the whole, and vectored reads */
	ASSERT_EQ(COPY_SIZE - 5,
		  xpmem_ext_copy(o.apid, 3, buf, COPY_SIZE - 5, 0));
	ASSERT_EQ(0, check_from(buf, 3, COPY_SIZE - 5, 21));
	ASSERT_EQ(COPY_SIZE, xpmem_ext_copy(o.apid, 0, buf, COPY_SIZE, 0));
	ASSERT_EQ(0, check(buf, COPY_SIZE, 21));
	memset(buf, 0, COPY_SIZE);
	iov[0] = (struct iovec){ buf + 1, 10 };
	iov[1] = (struct iovec){ buf + page, 2 * page + 1 };
	iov[2] = (struct iovec){ buf + 8 * page, 77 };
	ASSERT_EQ(10 + 2 * page + 1 + 77,
		  xpmem_ext_copyv(o.apid, 100, iov, 3, 0));
	ASSERT_EQ(0, check_from(buf + 1, 100, 10, 21));
	ASSERT_EQ(0, check_from(buf + page, 110, 2 * page + 1, 21));
	ASSERT_EQ(0, check_from(buf + 8 * page, 111 + 2 * page, 77, 21));
	/* rejections */
	ASSERT_EQ(-1, xpmem_ext_copy(o.apid, COPY_SIZE - 1, buf, 2, 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_ext_copy(o.apid, -1, buf, 2, 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_ext_copy(o.apid, 0, buf, 2, 0x2));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_ext_copyv(o.apid, 0, iov, 0, 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_ext_copy(o.apid + 1, 0, buf, 2, 0));
	ASSERT_EQ(ENOENT, errno);
	ro = xpmem_get(o.segid, XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, ro);
	ASSERT_EQ(-1, xpmem_ext_copy(ro, 0, buf, page, XPMEM_EXT_COPY_TO));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ((ssize_t)page, xpmem_ext_copy(ro, 0, buf, page, 0));
	/* a write the owner checks */
	memset(buf, 0x5c, page);
	ASSERT_EQ((ssize_t)page,
		  xpmem_ext_copy(o.apid, page, buf, page, XPMEM_EXT_COPY_TO));
	ASSERT_EQ(0, copy_owner_end(&o));
	/* the owner is gone: its segment with it */
	ASSERT_EQ(-1, xpmem_ext_copy(o.apid, 0, buf, page, 0));
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(-1, xpmem_ext_copy(ro, 0, buf, page, 0));
	ASSERT_EQ(ENOENT, errno);
	xpmem_release(ro);
	xpmem_release(o.apid);
	munmap(buf, COPY_SIZE);
}

/* The library's queue: many copies in flight, results by tag, EBUSY. */
TEST_F(lib, ext_queue_many_in_flight)
{
	static const size_t sizes[] = { 1, 4096, 65537, 300000 };
	unsigned char *buf = anon(COPY_SIZE);
	struct xpmem_ext_completion c[20];
	int seen[16] = { 0 }, n, got = 0;
	struct xpmem_ext_queue *q;
	struct copy_owner o;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, copy_owner_start(&o, XPMEM_RDWR));
	ASSERT_EQ(NULL, xpmem_ext_queue_create(0));
	ASSERT_EQ(EINVAL, errno);
	q = xpmem_ext_queue_create(16);
	ASSERT_NE(NULL, q);
	for (int i = 0; i < 16; i++) {
		size_t off = (size_t)i * 65536, len = sizes[i % 4];

		if (off + len > COPY_SIZE)
			len = COPY_SIZE - off;
		ASSERT_EQ(0, xpmem_ext_queue_copy(q, o.apid, (off_t)off,
						  buf + off, len, 0,
						  1000 + i));
	}
	/* full: the 17th waits for a slot */
	ASSERT_EQ(-1, xpmem_ext_queue_copy(q, o.apid, 0, buf, 1, 0, 99));
	ASSERT_EQ(EBUSY, errno);
	ASSERT_EQ(16, xpmem_ext_queue_submit(q));
	while (got < 16) {
		n = xpmem_ext_queue_reap(q, c, 20, 1);
		ASSERT_LT(0, n);
		for (int k = 0; k < n; k++) {
			int i = (int)c[k].tag - 1000;
			size_t off = (size_t)i * 65536, len = sizes[i % 4];

			if (off + len > COPY_SIZE)
				len = COPY_SIZE - off;
			ASSERT_TRUE(i >= 0 && i < 16 && !seen[i]);
			seen[i] = 1;
			ASSERT_EQ((long long)len, c[k].result);
			ASSERT_EQ(0, check_from(buf + off, off, len, 21));
		}
		got += n;
	}
	ASSERT_EQ(0, xpmem_ext_queue_reap(q, c, 20, 1));
	/* errors come back as completions too */
	ASSERT_EQ(0, xpmem_ext_queue_copy(q, o.apid, COPY_SIZE, buf, 1, 0, 7));
	ASSERT_EQ(1, xpmem_ext_queue_submit(q));
	ASSERT_EQ(1, xpmem_ext_queue_reap(q, c, 1, 1));
	ASSERT_EQ(7ULL, c[0].tag);
	ASSERT_EQ(-EINVAL, c[0].result);
	/* a write, vectored */
	{
		struct iovec iov[2] = { { buf, 100 }, { buf + 100, page - 100 } };

		memset(buf, 0x5c, page);
		ASSERT_EQ(0, xpmem_ext_queue_copyv(q, o.apid, (off_t)page, iov,
						   2, XPMEM_EXT_COPY_TO, 8));
		ASSERT_EQ(1, xpmem_ext_queue_submit(q));
		ASSERT_EQ(1, xpmem_ext_queue_reap(q, c, 1, 1));
		ASSERT_EQ((long long)page, c[0].result);
	}
	xpmem_ext_queue_destroy(q);
	ASSERT_EQ(0, copy_owner_end(&o));
	xpmem_release(o.apid);
	munmap(buf, COPY_SIZE);
}

/*
 * On the kernel backend of a kernel without io_uring commands (before
 * 5.19) the prep helpers say EOPNOTSUPP, and a test of rings skips.
 */
#define PREP_SKIP_WITHOUT_URING_CMD() do {				\
	struct xpmem_ext_copy _a = { 0 };				\
	struct io_uring_sqe _sqe;					\
									\
	if (!IS_SHM && !kernel_has_uring_cmd()) {			\
		ASSERT_EQ(-1, xpmem_ext_prep_copy(&_sqe, &_a));		\
		ASSERT_EQ(EOPNOTSUPP, errno);				\
		SKIP(return, "no io_uring commands in this kernel (5.19): prep says EOPNOTSUPP"); \
	}								\
} while (0)

/* Prep helpers for the caller's own ring, and populate, on each backend. */
TEST_F(lib, ext_prep_own_ring_and_populate)
{
	unsigned char *buf = anon(COPY_SIZE);
	struct xpmem_ext_copy arg = { 0 };
	struct xpmem_ext_populate pa = { 0 };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct xpmem_addr addr;
	struct io_uring ring;
	struct copy_owner o;
	unsigned char *at;
	int ret;

	ASSERT_NE(NULL, buf);
	PREP_SKIP_WITHOUT_URING_CMD();
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret == -ENOSYS || ret == -EPERM)
		SKIP(return, "io_uring unavailable");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, copy_owner_start(&o, XPMEM_RDWR));
	arg.apid = o.apid;
	arg.offset = 5;
	arg.addr = (uintptr_t)buf;
	arg.len = 3 * page;
	sqe = io_uring_get_sqe(&ring);
	ASSERT_EQ(0, xpmem_ext_prep_copy(sqe, &arg));
	sqe->user_data = 42;
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	ASSERT_EQ(42ULL, cqe->user_data);
	ASSERT_EQ((int)(3 * page), cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	ASSERT_EQ(0, check_from(buf, 5, 3 * page, 21));
	/* rejected at once: a reserved word, unknown flags */
	arg.reserved[1] = 1;
	ASSERT_EQ(-1, xpmem_ext_prep_copy(sqe, &arg));
	ASSERT_EQ(EINVAL, errno);
	arg.reserved[1] = 0;
	arg.flags = 0x100;
	ASSERT_EQ(-1, xpmem_ext_prep_copy(sqe, &arg));
	ASSERT_EQ(EINVAL, errno);
	/* populate an attachment, through the ring and directly */
	addr.apid = o.apid;
	addr.offset = 0;
	at = xpmem_attach(addr, COPY_SIZE & ~(page - 1), NULL);
	ASSERT_NE((void *)-1, at);
	pa.vaddr = (uintptr_t)at;
	pa.len = 16 * page;
	sqe = io_uring_get_sqe(&ring);
	ASSERT_EQ(0, xpmem_ext_prep_populate(sqe, &pa));
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	ASSERT_EQ(0, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	ASSERT_EQ(0, check(at, 16 * page, 21));
	ASSERT_EQ(0, xpmem_ext_populate(at, 16 * page,
					XPMEM_EXT_POPULATE_WRITE));
	ASSERT_EQ(-1, xpmem_ext_populate(buf, page, 0));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, xpmem_ext_populate(at, page, 0x10));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(0, xpmem_detach(at));
	at = xpmem_ext_attach(addr, 4 * page, NULL, XPMEM_EXT_ATTACH_RDONLY);
	ASSERT_NE((void *)-1, at);
	ASSERT_EQ(-1, xpmem_ext_populate(at, page, XPMEM_EXT_POPULATE_WRITE));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(0, xpmem_detach(at));
	memset(buf, 0x5c, page);
	ASSERT_EQ((ssize_t)page,
		  xpmem_ext_copy(o.apid, page, buf, page, XPMEM_EXT_COPY_TO));
	ASSERT_EQ(0, copy_owner_end(&o));
	xpmem_release(o.apid);
	io_uring_queue_exit(&ring);
	munmap(buf, COPY_SIZE);
}

/*
 * xpmem_ext_prep_copy_fixed(): copies into and out of a buffer registered
 * with the caller's ring, on both backends; a range past the registered
 * buffer completes with EFAULT; a vector is refused at once.
 */
TEST_F(lib, ext_prep_copy_fixed)
{
	unsigned char *buf = anon(COPY_SIZE);
	struct iovec reg = { buf, COPY_SIZE };
	struct xpmem_ext_copy arg[3] = { 0 };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	struct copy_owner o;
	int res[3], ret;

	ASSERT_NE(NULL, buf);
	PREP_SKIP_WITHOUT_URING_CMD();
	ASSERT_NE(0, xpmem_ext_features() & XPMEM_EXT_F_URING_FIXED);
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret == -ENOSYS || ret == -EPERM)
		SKIP(return, "io_uring unavailable");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, io_uring_register_buffers(&ring, &reg, 1));
	ASSERT_EQ(0, copy_owner_start(&o, XPMEM_RDWR));
	/* read 3 pages + 1 from offset 9; write a page; read past the end */
	arg[0] = (struct xpmem_ext_copy){ .apid = o.apid, .offset = 9,
		.addr = (uintptr_t)buf + 1, .len = 3 * page + 1 };
	memset(buf + 8 * page, 0x5c, page);	/* what copy_owner_end() wants */
	arg[1] = (struct xpmem_ext_copy){ .apid = o.apid, .offset = page,
		.addr = (uintptr_t)buf + 8 * page, .len = page,
		.flags = XPMEM_EXT_COPY_TO };
	arg[2] = (struct xpmem_ext_copy){ .apid = o.apid,
		.addr = (uintptr_t)buf + COPY_SIZE - page, .len = 2 * page };
	for (int i = 0; i < 3; i++) {
		sqe = io_uring_get_sqe(&ring);
		ASSERT_NE(NULL, sqe);
		ASSERT_EQ(0, xpmem_ext_prep_copy_fixed(sqe, &arg[i], 0));
		sqe->user_data = (uint64_t)i;
		/*
		 * The write overlaps what the read reads: the read first
		 * (io_uring may run independent requests in any order).
		 */
		if (i == 0)
			sqe->flags |= IOSQE_IO_LINK;
	}
	ASSERT_EQ(3, io_uring_submit(&ring));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		ASSERT_GT(3ULL, cqe->user_data);
		res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
	}
	ASSERT_EQ((int)(3 * page + 1), res[0]);
	ASSERT_EQ(0, check_from(buf + 1, 9, 3 * page + 1, 21));
	ASSERT_EQ((int)page, res[1]);
	ASSERT_EQ(-EFAULT, res[2]);
	/* what the write left in the segment, read back plainly */
	memset(buf, 0, page);
	ASSERT_EQ((ssize_t)page, xpmem_ext_copy(o.apid, page, buf, page, 0));
	for (size_t i = 0; i < page; i++)
		ASSERT_EQ(0x5c, buf[i]);
	arg[0].flags = XPMEM_EXT_COPY_IOV;
	ASSERT_EQ(-1, xpmem_ext_prep_copy_fixed(sqe, &arg[0], 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, xpmem_ext_prep_copy_fixed(sqe, &arg[1], 70000));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(0, copy_owner_end(&o));
	xpmem_release(o.apid);
	io_uring_queue_exit(&ring);
	munmap(buf, COPY_SIZE);
}

TEST_HARNESS_MAIN
