// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_limits - the object limits are per user, and so is the limit on
 * the pages of revoked ZERO_REVOKED attachments; objects are referenced
 * before they are published, and the id and key tables hold many objects.
 *
 * Runs as root inside the test VM with the module loaded (skips without
 * it).  The users alice, bob and carol (uid/gid 1000, 1001, 1002) exist
 * there; children drop to them with setresuid().  The fixture saves the
 * limit parameters and restores them, also after a failure.
 *
 * Environment: XPMEM_LIMITS_SCALE (objects of the scale test, default
 * 100000), XPMEM_LIMITS_RACE (iterations of each racing thread, default
 * 20000).
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

#define ALICE		1000
#define BOB		1001

/* The limit the per-user tests lower a parameter to. */
#define N		4

/* The module's default limits; every test starts from them. */
#define DEFAULT_LIMIT	65536

enum { LIM_SEGMENTS, LIM_PERMITS, LIM_ATTACHMENTS, NR_LIMITS };
static const char *const limit_names[NR_LIMITS] = {
	"max_segments", "max_permits", "max_attachments",
};

/*
 * Pages that writes to a user's revoked ZERO_REVOKED attachments allocate
 * (not an object count: saved and restored apart from the others).
 */
#define REVOKED_PAGES	"max_revoked_pages"

/* ---- helpers ------------------------------------------------------------ */

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
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = write(fd, buf, len) == len ? 0 : -1;
	close(fd);
	return ret;
}

static long env_long(const char *name, long def)
{
	const char *s = getenv(name);

	return s && *s ? strtol(s, NULL, 0) : def;
}

static int ext_make_key(int fd, void *buf, size_t len, const char *key,
			xpmem_segid_t *segid)
{
	struct xpmem_ext_make m = {
		.vaddr = (uintptr_t)buf, .size = len, .mode = 0600,
	};
	int ret;

	if (key) {
		m.flags = XPMEM_EXT_MAKE_KEY;
		m.key_len = strlen(key);
		memcpy(m.key, key, m.key_len);
	}
	ret = xp_ioctl(fd, XPMEM_CMD_EXT_MAKE, &m);
	*segid = m.segid;
	return ret;
}

static int ext_get_key(int fd, const char *key, xpmem_segid_t *segid,
		       xpmem_apid_t *apid)
{
	struct xpmem_ext_get g = { .flags = XPMEM_RDONLY | XPMEM_EXT_GET_BY_KEY };
	int ret;

	g.key_len = strlen(key);
	memcpy(g.key, key, g.key_len);
	ret = xp_ioctl(fd, XPMEM_CMD_EXT_GET, &g);
	*segid = g.segid;
	*apid = g.apid;
	return ret;
}

/* Wait for one byte on @fd (0), or end of file (-1). */
static int wait_byte(int fd)
{
	char c;

	return read(fd, &c, 1) == 1 ? 0 : -1;
}

static int put_byte(int fd)
{
	return write(fd, "x", 1) == 1 ? 0 : -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* All @n ids positive, at most 46 bits and different from each other. */
static bool ids_distinct(const __s64 *ids, size_t n)
{
	uint64_t *s = malloc(n * sizeof(*s));
	bool ok = true;
	size_t i;

	if (!s)
		return false;
	for (i = 0; i < n; i++) {
		if (ids[i] <= 0 || (uint64_t)ids[i] >> XPMEM_ID_BITS)
			ok = false;
		s[i] = ids[i];
	}
	qsort(s, n, sizeof(*s), cmp_u64);
	for (i = 1; i < n; i++)
		if (s[i] == s[i - 1])
			ok = false;
	free(s);
	return ok;
}

/* ---- fixture ------------------------------------------------------------ */

#define MAX_KIDS	8

FIXTURE(limits)
{
	int fd;
	long segs, permits, atts;
	long saved[NR_LIMITS];
	long saved_revoked;		/* max_revoked_pages, -1: none */
	pid_t pid;			/* the test process */
	pid_t kids[MAX_KIDS];
	int nkids;
};

static pid_t fork_tracked(FIXTURE_DATA(limits) *self)
{
	pid_t pid = fork_child();

	if (pid > 0 && self->nkids < MAX_KIDS)
		self->kids[self->nkids++] = pid;
	return pid;
}

FIXTURE_SETUP(limits)
{
	int i;

	self->nkids = 0;
	self->pid = getpid();
	for (i = 0; i < NR_LIMITS; i++)
		self->saved[i] = -1;
	self->saved_revoked = -1;
	XP_FIXTURE_OPEN();
	for (i = 0; i < NR_LIMITS; i++) {
		self->saved[i] = param_read(limit_names[i]);
		if (self->saved[i] < 0)
			SKIP(return, "no module parameter %s", limit_names[i]);
	}
	/* the default, whatever an earlier suite may have left */
	for (i = 0; i < NR_LIMITS; i++)
		if (self->saved[i] != DEFAULT_LIMIT)
			ASSERT_EQ(0, param_write(limit_names[i], DEFAULT_LIMIT));
	/* only its own test needs it (and fails without it) */
	self->saved_revoked = param_read(REVOKED_PAGES);
}

/*
 * Run by the test's parent process (the harness skips a child's teardown
 * after a failed ASSERT), so the limits are always restored; the
 * descriptor and the children are the test process's own.
 */
FIXTURE_TEARDOWN_PARENT(limits)
{
	int i, st;

	if (getpid() == self->pid) {
		for (i = 0; i < self->nkids; i++) {
			if (waitpid(self->kids[i], &st, WNOHANG) != 0)
				continue;
			kill(self->kids[i], SIGKILL);
			waitpid(self->kids[i], &st, 0);
		}
		if (self->fd >= 0)
			close(self->fd);
	}
	for (i = 0; i < NR_LIMITS; i++)
		if (self->saved[i] >= 0 &&
		    param_read(limit_names[i]) != self->saved[i])
			param_write(limit_names[i], self->saved[i]);
	if (self->saved_revoked >= 0 &&
	    param_read(REVOKED_PAGES) != self->saved_revoked)
		param_write(REVOKED_PAGES, self->saved_revoked);
}

#define SET_LIMIT(i, v) do {						\
	ASSERT_EQ(0, param_write(limit_names[i], (v)));			\
	ASSERT_EQ((long)(v), param_read(limit_names[i]));		\
} while (0)

/* ---- (b) limits per user ------------------------------------------------ */

/*
 * In a child as another user: N segments across two opens, the next one
 * ENOSPC; 0 or a line number.
 */
static int other_user_makes_n(uid_t uid)
{
	xpmem_segid_t s;
	int fd[2], i;
	char *buf;

	if (switch_user(uid, uid, 0))
		return __LINE__;
	buf = map_anon(PAGE);
	fd[0] = xp_open();
	fd[1] = xp_open();
	if (!buf || fd[0] < 0 || fd[1] < 0)
		return __LINE__;
	for (i = 0; i < N; i++)
		if (xp_make(fd[i & 1], buf, PAGE, 0600, &s))
			return __LINE__;
	if (xp_make(fd[0], buf, PAGE, 0600, &s) != -ENOSPC)
		return __LINE__;
	return 0;	/* exit removes them */
}

/*
 * max_segments counts a user's segments across all its opens of
 * /dev/xpmem and all its processes: with the limit at N, alice's (N+1)th
 * segment (a page, a keyed one or her whole address space) is ENOSPC on a
 * descriptor that has none yet, and in another process of hers; bob and root are unaffected; REMOVE and the close of a
 * descriptor (which removes its segments) give room back.
 */
TEST_F(limits, segments_per_user_across_opens)
{
	struct chan ch;
	pid_t alice, pid;

	SET_LIMIT(LIM_SEGMENTS, N);
	ASSERT_EQ(0, chan_init(&ch));
	alice = fork_tracked(self);
	ASSERT_LE(0, alice);
	if (alice == 0) {
		xpmem_segid_t s[N + 1], extra;
		int fd[N + 1], i;
		char *buf;

		chan_child(&ch);
		if (switch_user(ALICE, ALICE, 0))
			_exit(100);
		buf = map_anon(PAGE);
		if (!buf)
			_exit(101);
		for (i = 0; i <= N; i++) {
			fd[i] = xp_open();
			if (fd[i] < 0)
				_exit(102);
		}
		for (i = 0; i < N; i++)
			if (xp_make(fd[i], buf, PAGE, 0600, &s[i]))
				_exit(10 + i);
		/* the (N+1)th on a fresh descriptor: ENOSPC per user */
		if (xp_make(fd[N], buf, PAGE, 0600, &extra) != -ENOSPC)
			_exit(20);
		if (ext_make_key(fd[N], buf, PAGE, "lim-seg", &extra) != -ENOSPC)
			_exit(21);
		if (make_whole(fd[N], 0600, &extra) != -ENOSPC)
			_exit(23);
		/* another process of alice's: no room either */
		pid = fork();
		if (pid == 0) {
			int f = xp_open();

			_exit(f >= 0 && xp_make(f, buf, PAGE, 0600, &extra) ==
				       -ENOSPC ? 0 : 1);
		}
		if (wait_child(pid) != 0)
			_exit(22);
		if (put_byte(ch.to_parent[1]) || wait_byte(ch.to_child[0]))
			_exit(103);
		/* REMOVE gives exactly one back, to any descriptor */
		if (xp_remove(fd[1], s[1]))
			_exit(30);
		if (xp_make(fd[N], buf, PAGE, 0600, &s[N]))
			_exit(31);
		if (xp_make(fd[0], buf, PAGE, 0600, &extra) != -ENOSPC)
			_exit(32);
		/* so does closing a descriptor with a segment */
		close(fd[2]);
		if (xp_make(fd[1], buf, PAGE, 0600, &s[1]))
			_exit(33);
		if (xp_make(fd[1], buf, PAGE, 0600, &extra) != -ENOSPC)
			_exit(34);
		_exit(0);
	}
	chan_parent(&ch);
	ASSERT_EQ(0, wait_byte(ch.to_parent[0]))
		TH_LOG("alice's child failed at %d (20: per open, not per user)",
		       wait_child(alice));
	/* alice is at her limit: bob is not */
	pid = fork_tracked(self);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(other_user_makes_n(BOB));
	ASSERT_EQ(0, wait_child(pid));
	/* neither is root */
	{
		char *buf = map_anon(PAGE);
		xpmem_segid_t s;

		ASSERT_NE(NULL, buf);
		ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0600, &s));
		ASSERT_EQ(0, xp_remove(self->fd, s));
		munmap(buf, PAGE);
	}
	ASSERT_EQ(0, put_byte(ch.to_child[1]));
	ASSERT_EQ(0, wait_child(alice));
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * max_permits counts a user's permits across opens: alice's (N+1)th GET is
 * ENOSPC on a fresh descriptor, bob's N are not affected, RELEASE gives
 * one back.
 */
TEST_F(limits, permits_per_user_across_opens)
{
	xpmem_segid_t segid;
	struct chan ch;
	pid_t alice, pid;
	char *buf;

	SET_LIMIT(LIM_PERMITS, N);
	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0644, &segid));
	ASSERT_EQ(0, chan_init(&ch));
	alice = fork_tracked(self);
	ASSERT_LE(0, alice);
	if (alice == 0) {
		xpmem_apid_t p[N + 1], extra;
		int fd[N + 1], i;

		chan_child(&ch);
		if (switch_user(ALICE, ALICE, 0))
			_exit(100);
		for (i = 0; i <= N; i++) {
			fd[i] = xp_open();
			if (fd[i] < 0)
				_exit(102);
		}
		for (i = 0; i < N; i++)
			if (xp_get(fd[i], segid, XPMEM_RDONLY, &p[i]))
				_exit(10 + i);
		if (xp_get(fd[N], segid, XPMEM_RDONLY, &extra) != -ENOSPC)
			_exit(20);
		if (put_byte(ch.to_parent[1]) || wait_byte(ch.to_child[0]))
			_exit(103);
		if (xp_release(fd[0], p[0]))
			_exit(30);
		if (xp_get(fd[N], segid, XPMEM_RDONLY, &p[N]))
			_exit(31);
		if (xp_get(fd[0], segid, XPMEM_RDONLY, &extra) != -ENOSPC)
			_exit(32);
		_exit(0);
	}
	chan_parent(&ch);
	ASSERT_EQ(0, wait_byte(ch.to_parent[0]))
		TH_LOG("alice's child failed at %d (20: per open, not per user)",
		       wait_child(alice));
	pid = fork_tracked(self);
	ASSERT_LE(0, pid);
	if (pid == 0) {
		xpmem_apid_t a;
		int fd[2], i;

		if (switch_user(BOB, BOB, 0))
			_exit(100);
		fd[0] = xp_open();
		fd[1] = xp_open();
		if (fd[0] < 0 || fd[1] < 0)
			_exit(101);
		for (i = 0; i < N; i++)
			if (xp_get(fd[i & 1], segid, XPMEM_RDONLY, &a))
				_exit(10 + i);
		_exit(xp_get(fd[1], segid, XPMEM_RDONLY, &a) == -ENOSPC ? 0 :
									 20);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, put_byte(ch.to_child[1]));
	ASSERT_EQ(0, wait_child(alice));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

/*
 * max_attachments counts a user's attachments across opens, until each is
 * freed: one whose descriptor was closed still counts while it is mapped,
 * and munmap gives it back.  bob is not affected.
 */
TEST_F(limits, attachments_per_user_until_freed)
{
	xpmem_segid_t segid;
	pid_t alice, bob;
	char *buf;

	SET_LIMIT(LIM_ATTACHMENTS, N);
	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	buf[0] = 'a';
	ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0644, &segid));
	alice = fork_tracked(self);
	ASSERT_LE(0, alice);
	if (alice == 0) {
		xpmem_apid_t p[N + 1];
		void *a[N + 1], *extra;
		int fd[N + 1], i;

		if (switch_user(ALICE, ALICE, 0))
			_exit(100);
		for (i = 0; i <= N; i++) {
			fd[i] = xp_open();
			if (fd[i] < 0 ||
			    xp_get(fd[i], segid, XPMEM_RDONLY, &p[i]))
				_exit(101);
		}
		for (i = 0; i < N; i++)
			if (xp_attach(fd[i], p[i], 0, PAGE, NULL, &a[i]) ||
			    *(char *)a[i] != 'a')
				_exit(10 + i);
		if (xp_attach(fd[N], p[N], 0, PAGE, NULL, &extra) != -ENOSPC)
			_exit(20);
		/* closed descriptor, attachment still mapped: still counted */
		close(fd[0]);
		if (xp_attach(fd[N], p[N], 0, PAGE, NULL, &extra) != -ENOSPC)
			_exit(21);
		if (munmap(a[0], PAGE))
			_exit(102);
		if (xp_attach(fd[N], p[N], 0, PAGE, NULL, &a[0]))
			_exit(22);
		if (xp_attach(fd[1], p[1], 0, PAGE, NULL, &extra) != -ENOSPC)
			_exit(23);
		/* DETACH gives one back too */
		if (xp_detach(fd[1], a[1]) ||
		    xp_attach(fd[2], p[2], 0, PAGE, NULL, &a[1]))
			_exit(24);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(alice));
	bob = fork_tracked(self);
	ASSERT_LE(0, bob);
	if (bob == 0) {
		xpmem_apid_t p;
		void *a;
		int fd, i;

		if (switch_user(BOB, BOB, 0))
			_exit(100);
		fd = xp_open();
		if (fd < 0 || xp_get(fd, segid, XPMEM_RDONLY, &p))
			_exit(101);
		for (i = 0; i < N; i++)
			if (xp_attach(fd, p, 0, PAGE, NULL, &a))
				_exit(10 + i);
		_exit(xp_attach(fd, p, 0, PAGE, NULL, &a) == -ENOSPC ? 0 : 20);
	}
	ASSERT_EQ(0, wait_child(bob));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(buf, PAGE);
}

/*
 * In a child: a segment of 2N pages of its own (never touched), attached
 * twice with ZERO_REVOKED (*@a, *@b) and removed, so that both
 * attachments are revoked; 0 or a line number.
 */
static int revoked_pair(char **a, char **b)
{
	size_t len = 2 * N * PAGE;
	char *buf = map_anon(len);
	int fd = xp_open(), i;
	xpmem_segid_t segid;

	if (!buf || fd < 0 || xp_make(fd, buf, len, 0600, &segid))
		return __LINE__;
	for (i = 0; i < 2; i++) {
		struct xpmem_ext_attach x = {
			.size = len, .flags = XPMEM_EXT_ATTACH_ZERO_REVOKED,
		};

		if (xp_get(fd, segid, XPMEM_RDWR, &x.apid) ||
		    xp_ioctl(fd, XPMEM_CMD_EXT_ATTACH, &x))
			return __LINE__;
		*(i ? b : a) = (char *)(uintptr_t)x.vaddr;
	}
	return xp_remove(fd, segid) ? __LINE__ : 0;
}

/* In a child: each of @n pages from @p written (@v) without a signal. */
static int write_pages(char *p, int n, char v)
{
	int i;

	for (i = 0; i < n; i++)
		if (probe(p + i * PAGE, 1, v))
			return -1;
	return 0;
}

/*
 * max_revoked_pages counts the pages that writes to a user's revoked
 * ZERO_REVOKED attachments allocate, across its attachments, until the
 * attachment is freed: with the limit at N, alice's write that needs an
 * (N+1)th page is SIGBUS, in her other attachment too, while reads still
 * see zeros and pages she has (also after MADV_DONTNEED) cost nothing
 * more; bob, meanwhile, has N of his own; alice's munmap of the first
 * attachment gives its pages back.
 */
TEST_F(limits, revoked_pages_per_user_until_freed)
{
	int ready[2], go[2];
	pid_t alice, bob;

	ASSERT_LE(0, self->saved_revoked) TH_LOG("no " REVOKED_PAGES);
	ASSERT_EQ(0, param_write(REVOKED_PAGES, N));
	ASSERT_EQ(N, param_read(REVOKED_PAGES));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	alice = fork_tracked(self);
	ASSERT_LE(0, alice);
	if (alice == 0) {
		char *a, *b;
		int line;

		close(ready[0]);
		close(go[1]);
		if (switch_user(ALICE, ALICE, 0))
			_exit(100);
		line = revoked_pair(&a, &b);
		if (line) {
			TH_LOG("alice: revoked_pair() failed at line %d", line);
			_exit(101);
		}
		probe_install();
		if (write_pages(a, N, 'a'))
			_exit(10);
		if (probe(a + N * PAGE, 1, 'a') != SIGBUS)
			_exit(11);
		if (probe(a + N * PAGE, 0, 0) || a[N * PAGE])
			_exit(12);
		if (probe(b, 1, 'b') != SIGBUS)
			_exit(13);
		if (madvise(a, 2 * N * PAGE, MADV_DONTNEED) ||
		    a[PAGE] != 'a' || write_pages(a, N, 'c'))
			_exit(14);
		if (put_byte(ready[1]) || wait_byte(go[0]))
			_exit(102);
		if (munmap(a, 2 * N * PAGE))
			_exit(103);
		if (write_pages(b, N, 'b'))
			_exit(15);
		_exit(probe(b + N * PAGE, 1, 'b') == SIGBUS ? 0 : 16);
	}
	close(ready[1]);
	close(go[0]);
	if (wait_byte(ready[0]))	/* alice failed: say where */
		ASSERT_EQ(0, wait_child(alice));
	bob = fork_tracked(self);
	ASSERT_LE(0, bob);
	if (bob == 0) {
		char *a, *b;
		int line;

		if (switch_user(BOB, BOB, 0))
			_exit(100);
		line = revoked_pair(&a, &b);
		if (line) {
			TH_LOG("bob: revoked_pair() failed at line %d", line);
			_exit(101);
		}
		probe_install();
		if (write_pages(a, N / 2, 'a') || write_pages(b, N / 2, 'b'))
			_exit(10);
		_exit(probe(b + N / 2 * PAGE, 1, 'b') == SIGBUS ? 0 : 11);
	}
	ASSERT_EQ(0, wait_child(bob));
	ASSERT_EQ(0, put_byte(go[1]));
	ASSERT_EQ(0, wait_child(alice));
	close(ready[0]);
	close(go[1]);
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * A segment is charged to its maker until it is removed, whoever frees it
 * in the end: alice's removed segments that bob still holds permits to do
 * not count against her, and bob's RELEASE, which frees them, changes
 * neither user's count.
 */
TEST_F(limits, charge_follows_the_maker)
{
	struct chan ch;
	pid_t alice, bob;
	int seg_pipe[2];

	SET_LIMIT(LIM_SEGMENTS, N);
	SET_LIMIT(LIM_PERMITS, N);
	ASSERT_EQ(0, chan_init(&ch));
	ASSERT_EQ(0, pipe(seg_pipe));
	alice = fork_tracked(self);
	ASSERT_LE(0, alice);
	if (alice == 0) {
		xpmem_segid_t s[N], extra;
		int fd, i;
		char *buf;

		chan_child(&ch);
		close(seg_pipe[0]);
		if (switch_user(ALICE, ALICE, 0))
			_exit(100);
		buf = map_anon(PAGE);
		fd = xp_open();
		if (!buf || fd < 0)
			_exit(101);
		for (i = 0; i < N; i++)
			if (xp_make(fd, buf, PAGE, 0644, &s[i]))
				_exit(10 + i);
		if (send_msg(seg_pipe[1], s, sizeof(s)) ||
		    wait_byte(ch.to_child[0]))	/* bob has his permits */
			_exit(102);
		for (i = 0; i < N; i++)
			if (xp_remove(fd, s[i]))
				_exit(20 + i);
		for (i = 0; i < N; i++)
			if (xp_make(fd, buf, PAGE, 0644, &s[i]))
				_exit(30 + i);
		if (xp_make(fd, buf, PAGE, 0644, &extra) != -ENOSPC)
			_exit(40);
		if (put_byte(ch.to_parent[1]) || wait_byte(ch.to_child[0]))
			_exit(103);
		/* bob released (and so freed) the old ones: no change */
		if (xp_make(fd, buf, PAGE, 0644, &extra) != -ENOSPC)
			_exit(41);
		if (xp_remove(fd, s[0]) || xp_make(fd, buf, PAGE, 0644, &s[0]))
			_exit(42);
		_exit(0);
	}
	chan_parent(&ch);
	close(seg_pipe[1]);
	bob = fork_tracked(self);
	ASSERT_LE(0, bob);
	if (bob == 0) {
		long segs_before, segs_removed;
		xpmem_segid_t s[N], mine[N], extra;
		xpmem_apid_t p[N], q;
		int fd, sfd, i;
		char *buf;

		if (recv_msg(seg_pipe[0], s, sizeof(s)))
			_exit(100);
		segs_before = stat_read("segments");
		/* the counters are root's: opened now, read as bob */
		sfd = open(STATS_DIR "segments", O_RDONLY | O_CLOEXEC);
		if (sfd < 0 || switch_user(BOB, BOB, 0))
			_exit(101);
		fd = xp_open();
		buf = map_anon(PAGE);
		if (fd < 0 || !buf)
			_exit(102);
		for (i = 0; i < N; i++)
			if (xp_get(fd, s[i], XPMEM_RDONLY, &p[i]))
				_exit(10 + i);
		if (xp_get(fd, s[0], XPMEM_RDONLY, &q) != -ENOSPC)
			_exit(20);
		if (put_byte(ch.to_child[1]) || wait_byte(ch.to_parent[0]))
			_exit(103);
		/* alice removed them and made N new ones: ours live on */
		segs_removed = stat_pread(sfd);
		if (segs_removed != segs_before + N)
			_exit(21);
		for (i = 0; i < N; i++)
			if (xp_release(fd, p[i]))
				_exit(30 + i);
		if (stat_pread(sfd) != segs_before)
			_exit(31);
		/* bob's own counts: all his permits back, no segment charged */
		for (i = 0; i < N; i++)
			if (xp_make(fd, buf, PAGE, 0600, &mine[i]))
				_exit(40 + i);
		if (xp_make(fd, buf, PAGE, 0600, &extra) != -ENOSPC)
			_exit(50);
		for (i = 0; i < N; i++)
			if (xp_get(fd, mine[i], XPMEM_RDONLY, &p[i]))
				_exit(60 + i);
		if (put_byte(ch.to_child[1]))
			_exit(104);
		_exit(0);
	}
	/* bob talks to alice over the same channel: parent only waits */
	close(ch.to_child[1]);
	close(ch.to_parent[0]);
	close(seg_pipe[0]);
	ASSERT_EQ(0, wait_child(bob));
	ASSERT_EQ(0, wait_child(alice));
	ASSERT_COUNTERS_AT_BASE();
}

/* ---- (a) objects referenced before they are published ------------------ */

struct race {
	int fd;
	pid_t pid;
	long iters;
	char *buf;
	xpmem_segid_t keep;		/* GET's segment; never removed */
	xpmem_segid_t held;		/* holds the key "race-held" */
	xpmem_segid_t *made;		/* MAKE results */
	xpmem_apid_t *got;		/* GET results */
	int make_err, get_err, other_err;
	long make_fail_at, get_fail_at;	/* first failing iteration */
	long removed, released;
	volatile int done;		/* makers and getters finished */
};

static void *race_maker(void *arg)
{
	struct race *r = arg;
	char key[XPMEM_EXT_KEY_MAX];
	long i;
	int ret;

	for (i = 0; i < r->iters; i++) {
		if (i & 1) {
			snprintf(key, sizeof(key), "race-%ld", i);
			ret = ext_make_key(r->fd, r->buf, PAGE, key,
					   &r->made[i]);
		} else {
			ret = xp_make(r->fd, r->buf, PAGE, 0600, &r->made[i]);
		}
		if (ret && !r->make_err) {
			r->make_err = ret;
			r->make_fail_at = i;
		}
	}
	return NULL;
}

static void *race_getter(void *arg)
{
	struct race *r = arg;
	long i;
	int ret;

	for (i = 0; i < r->iters; i++) {
		ret = xp_get(r->fd, r->keep, XPMEM_RDONLY, &r->got[i]);
		if (ret && !r->get_err) {
			r->get_err = ret;
			r->get_fail_at = i;
		}
	}
	return NULL;
}

/*
 * Keeps xpmem_key_lock busy: a MAKE of a key in use is EEXIST after
 * looking under the lock; GET by a key just made looks it up.
 */
static void *race_key_contender(void *arg)
{
	struct race *r = arg;
	xpmem_segid_t s;
	xpmem_apid_t a;
	char key[XPMEM_EXT_KEY_MAX];
	long i = 0;
	int ret;

	while (!r->done) {
		ret = ext_make_key(r->fd, r->buf, PAGE, "race-held", &s);
		if (ret != -EEXIST && !r->other_err)
			r->other_err = ret ? ret : -EBADE;
		snprintf(key, sizeof(key), "race-%ld", (i++ % 64) * 2 + 1);
		if (!ext_get_key(r->fd, key, &s, &a))
			xp_release(r->fd, a);
	}
	return NULL;
}

/* Read /proc/xpmem-objects/<pid> whole into a malloc'ed string. */
static char *read_objects(pid_t pid)
{
	size_t len = 0, cap = 1 << 16;
	char path[64], *buf = malloc(cap), *nb;
	ssize_t n;
	int fd;

	if (!buf)
		return NULL;
	snprintf(path, sizeof(path), "/proc/xpmem-objects/%d", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return NULL;
	}
	for (;;) {
		if (cap - len < 4096) {
			nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

/*
 * REMOVE every segment and RELEASE every permit the process's
 * /proc/xpmem-objects file shows (but the two the test keeps), as soon as
 * it shows them: that is, as early as another thread can learn the id of
 * an object MAKE or GET is still returning.
 */
static void *race_remover(void *arg)
{
	struct race *r = arg;
	unsigned long long id;
	char *objs, *line;
	int ret;

	while (!r->done) {
		objs = read_objects(r->pid);
		if (!objs)
			continue;
		for (line = objs; line && *line;
		     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
			if (sscanf(line, "segment %llx", &id) == 1) {
				if ((int64_t)id == r->keep ||
				    (int64_t)id == r->held)
					continue;
				ret = xp_remove(r->fd, id);
				if (!ret)
					r->removed++;
				else if (ret != -ENOENT && !r->other_err)
					r->other_err = ret;
			} else if (sscanf(line, "permit %llx", &id) == 1) {
				ret = xp_release(r->fd, id);
				if (!ret)
					r->released++;
				else if (ret != -ENOENT && !r->other_err)
					r->other_err = ret;
			}
		}
		free(objs);
	}
	return NULL;
}

/*
 * Finding (a): MAKE and GET used the new object after publishing it
 * without a reference of their own, so a thread that learned the id and
 * removed or released it at once could free it under them.  One thread
 * MAKEs (half with keys), one GETs, two remove and release whatever
 * /proc/xpmem-objects lists, one keeps the key lock busy.  Every MAKE and
 * GET must succeed with an id of its own; on a debug kernel KASAN reports
 * a use after free.  A race: not guaranteed to hit the window on any
 * given run.
 */
TEST_F_TIMEOUT(limits, make_get_vs_remove_release_race, 600)
{
	pthread_t maker, getter, key, rm[2];
	struct race r = {
		.fd = self->fd, .pid = getpid(),
		.iters = env_long("XPMEM_LIMITS_RACE", 20000),
	};
	long i;

	r.buf = map_anon(PAGE);
	ASSERT_NE(NULL, r.buf);
	r.made = calloc(r.iters, sizeof(*r.made));
	r.got = calloc(r.iters, sizeof(*r.got));
	ASSERT_NE(NULL, r.made);
	ASSERT_NE(NULL, r.got);
	ASSERT_EQ(0, xp_make(self->fd, r.buf, PAGE, 0600, &r.keep));
	ASSERT_EQ(0, ext_make_key(self->fd, r.buf, PAGE, "race-held", &r.held));

	ASSERT_EQ(0, pthread_create(&rm[0], NULL, race_remover, &r));
	ASSERT_EQ(0, pthread_create(&rm[1], NULL, race_remover, &r));
	ASSERT_EQ(0, pthread_create(&key, NULL, race_key_contender, &r));
	ASSERT_EQ(0, pthread_create(&maker, NULL, race_maker, &r));
	ASSERT_EQ(0, pthread_create(&getter, NULL, race_getter, &r));
	pthread_join(maker, NULL);
	pthread_join(getter, NULL);
	r.done = 1;
	pthread_join(key, NULL);
	pthread_join(rm[0], NULL);
	pthread_join(rm[1], NULL);
	TH_LOG("%ld MAKEs, %ld GETs; %ld removed, %ld released by the racers",
	       r.iters, r.iters, r.removed, r.released);
	if (r.make_err || r.get_err)
		TH_LOG("first failed MAKE %ld (%d), GET %ld (%d); max_segments %ld max_permits %ld",
		       r.make_fail_at, r.make_err, r.get_fail_at, r.get_err,
		       param_read("max_segments"), param_read("max_permits"));

	EXPECT_EQ(0, r.make_err);
	EXPECT_EQ(0, r.get_err);
	EXPECT_EQ(0, r.other_err);
	EXPECT_TRUE(ids_distinct(r.made, r.iters));
	EXPECT_TRUE(ids_distinct(r.got, r.iters));
	for (i = 0; i < r.iters; i++) {
		int ret = xp_remove(self->fd, r.made[i]);

		EXPECT_TRUE(ret == 0 || ret == -ENOENT);
		ret = xp_release(self->fd, r.got[i]);
		EXPECT_TRUE(ret == 0 || ret == -ENOENT);
	}
	ASSERT_EQ(0, xp_remove(self->fd, r.keep));
	ASSERT_EQ(0, xp_remove(self->fd, r.held));
	ASSERT_COUNTERS_AT_BASE();
	free(r.made);
	free(r.got);
	munmap(r.buf, PAGE);
}

/* ---- (c) many objects ---------------------------------------------------- */

/*
 * The id and key tables grow: XPMEM_LIMITS_SCALE (10^5) segments, every
 * fifth with a key, and a permit to each; all ids distinct (segids and
 * apids share one space), every GET by id and by key finds its segment,
 * every RELEASE and REMOVE succeeds once.  Correctness only, no timing.
 */
TEST_F_TIMEOUT(limits, many_segments_and_permits, 600)
{
	long n = env_long("XPMEM_LIMITS_SCALE", 100000), i;
	char key[XPMEM_EXT_KEY_MAX];
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	__s64 *ids;
	char *buf;

	ASSERT_LT(0, n);
	if (param_read(limit_names[LIM_SEGMENTS]) < n)
		SET_LIMIT(LIM_SEGMENTS, n);
	if (param_read(limit_names[LIM_PERMITS]) < 2 * n)
		SET_LIMIT(LIM_PERMITS, 2 * n);
	buf = map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	ids = calloc(3 * n, sizeof(*ids));	/* segids, apids, key apids */
	ASSERT_NE(NULL, ids);

	for (i = 0; i < n; i++) {
		if (i % 5 == 0) {
			snprintf(key, sizeof(key), "scale-%ld", i);
			ASSERT_EQ(0, ext_make_key(self->fd, buf, PAGE, key,
						  &ids[i])) TH_LOG("make %ld", i);
		} else {
			ASSERT_EQ(0, xp_make(self->fd, buf, PAGE, 0600,
					     &ids[i])) TH_LOG("make %ld", i);
		}
	}
	ASSERT_EQ(self->segs + n, stat_read("segments"));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, xp_get(self->fd, ids[i], XPMEM_RDONLY,
				    &ids[n + i])) TH_LOG("get %ld", i);
	for (i = 0; i < n; i += 5) {
		snprintf(key, sizeof(key), "scale-%ld", i);
		ASSERT_EQ(0, ext_get_key(self->fd, key, &segid,
					 &ids[2 * n + i / 5]))
			TH_LOG("get by key %ld", i);
		ASSERT_EQ(ids[i], segid);
	}
	ASSERT_TRUE(ids_distinct(ids, 2 * n + (n + 4) / 5));

	for (i = 0; i < (n + 4) / 5; i++)
		ASSERT_EQ(0, xp_release(self->fd, ids[2 * n + i]));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, xp_release(self->fd, ids[n + i]))
			TH_LOG("release %ld", i);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, xp_remove(self->fd, ids[i])) TH_LOG("remove %ld", i);
	ASSERT_EQ(-ENOENT, xp_remove(self->fd, ids[0]));
	ASSERT_EQ(-ENOENT, xp_get(self->fd, ids[n - 1], XPMEM_RDONLY, &apid));
	snprintf(key, sizeof(key), "scale-%d", 0);
	ASSERT_EQ(-ENOENT, ext_get_key(self->fd, key, &segid, &apid));
	ASSERT_COUNTERS_AT_BASE();
	free(ids);
	munmap(buf, PAGE);
}

TEST_HARNESS_MAIN
