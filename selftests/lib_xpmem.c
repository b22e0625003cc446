// SPDX-License-Identifier: GPL-2.0
/*
 * lib_xpmem.c - libxpmem test suite, one binary for both backends: the
 * classic calls (backend choice, argument checks, data exchange, owners
 * killed, fork, threads, leaks, PID namespaces, first-touch cost).  The
 * extension calls are in lib_ext.c, the permit modes across users in
 * lib_perm.c, peers of other users in lib_xuser.c.
 *
 * The backend comes from the environment (lib_test.h).  Every test first
 * checks that the library chose what XPMEM_BACKEND asked for; tests that
 * only make sense on one backend skip on the other with a reason.
 * Children report through exit statuses; synchronisation is by pipes,
 * never by sleeping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xpmem.h>

#include "kselftest_harness.h"
#include "lib_test.h"

#define NPAGES		4
#define NATTACHERS	8
#define NTHREADS	8
#define NTHREAD_ITERS	20
#define LEAK_CYCLES	30
#define FIRST_TOUCH_MB	32
#define FIRST_TOUCH_ROUNDS 3

/* ---- helpers ------------------------------------------------------------ */

/* Lines of the file @path; -1 if it cannot be read. */
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

static int measure_first_touch(uint64_t *att_ns, uint64_t *memfd_ns);

/*
 * Probe mode: run with PROBE_ENV set (by env_backend_choice and
 * first_touch_cost, through execve of /proc/self/exe) this reports what a
 * fresh process decides, or the first-touch cost on its backend, and
 * exits before the harness starts.
 */
__attribute__((constructor)) static void probe_main(void)
{
	const char *why;
	int be, init, err;

	if (!getenv(PROBE_ENV))
		return;
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
	return wait_status(pid);
}

/* ---- fixture ------------------------------------------------------------ */

LIB_FIXTURE();

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
		unsigned char *mine = map_anon(size);

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
	ASSERT_EQ(0, WEXITSTATUS(wait_status(pid)));
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
		st = wait_status(pids[i]);
		ASSERT_TRUE(WIFEXITED(st));
		ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
	}
	for (i = 0; i < NATTACHERS; i++)
		ASSERT_EQ(0, check(buf + (size_t)i * page, page,
				   (unsigned int)i));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* ---- read-only permits ------------------------------------------------- */

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
	ASSERT_EQ(SIGSEGV, probe((volatile char *)at, 1, 1));
	ASSERT_EQ(0, probe((volatile char *)at, 0, 1));
	ASSERT_EQ(0, check(buf, page, 5));
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(apid));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* ---- in-place migration and exportable ranges --------------------------- */

TEST_F(lib, migrate_in_place)
{
	size_t size = NPAGES * page;
	unsigned char *buf = map_anon(size), *at;
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
	hole = map_anon(2 * page);
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

	buf = map_anon(big);
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
		unsigned char *b = map_anon(2 * page);
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
	st = wait_status(owner);
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
		ASSERT_EQ(SIGBUS, probe((volatile char *)at, 0, 1));
	}
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(apid));
}

/* ---- fork --------------------------------------------------------------- */

TEST_F(lib, fork_then_use)
{
	size_t size = 2 * page;
	unsigned char *buf = xpmem_ext_alloc(size, 0);
	unsigned char *priv = map_anon(size);
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
	st = wait_status(pid);
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
	unsigned char *buf = migrate ? map_anon(size) : xpmem_ext_alloc(size, 0);
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
		st = wait_status(inner);
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
	st = wait_status(mid);
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

TEST_HARNESS_MAIN
