// SPDX-License-Identifier: GPL-2.0
/*
 * lib_ids.c - segids and apids as classic clients handle them, and the
 * classic /proc/xpmem files.
 *
 * One binary for both backends (XPMEM_BACKEND=kernel in the VM with the
 * module loaded, unset or shm otherwise; see lib_test.h).  Ids must be
 * positive int64_t values of at most 12 hex digits: kernel ids are below
 * 2^46 (XPMEM_ID_BITS), shm ids have bit 46 set and nothing above.  The
 * /proc/xpmem tests need the kernel backend and skip on shm.  Children
 * report through exit statuses; synchronisation is by pipes and waitpid,
 * never by sleeping.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
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

#include <xpmem.h>

#include "kselftest_harness.h"
#include "lib_test.h"

/* MAKE/GET/RELEASE/REMOVE cycles of the width test... */
#define ID_CYCLES	100000
/*
 * ...unless they take longer than this (seconds): under TCG 10^5 cycles
 * take ~2 s on the kernel backend and ~45 s on shm with the debian
 * kernels, ~75 s and half an hour (25 ms per cycle: every file and socket
 * costs about a millisecond there) with the debug kernel.  Every kernel
 * of `make check` runs this, so the budget is short: the debian kernels
 * do all cycles on the kernel backend and a third on shm.  The test logs
 * how far it got; it never stops before ID_CYCLES_MIN.
 */
#define ID_BUDGET_KERNEL_S	15
#define ID_BUDGET_SHM_S		15
#define ID_CYCLES_MIN		1000
/* Segments (and permits) alive at once during those cycles. */
#define ID_LIVE		64
/* GETs of random ids of the backend's shape, to measure the guess rate... */
#define GUESSES		20000
/* ...or as many as fit in this many seconds. */
#define GUESS_BUDGET_S	5
/* The classic rendezvous area: two ids as text, lock bytes at its end. */
#define AREA_SIZE	32
#define LOCK0		0xa5
#define LOCK1		0x5a

#define SHM_MARK	(1LL << XPMEM_ID_BITS)
#define PROC_XPMEM	"/proc/xpmem"

/* ---- helpers ------------------------------------------------------------ */

/*
 * id_shape_ok - @id is what the backend must hand out: positive, never -1,
 * at most 12 hex digits; kernel ids below 2^46, shm ids with bit 46 set
 * and nothing above it.
 */
static int id_shape_ok(int64_t id, int shm)
{
	char text[32];

	if (id <= 0 || id == -1 ||
	    snprintf(text, sizeof(text), "%llx", (unsigned long long)id) > 12)
		return 0;
	if (shm)
		return (id & ~(int64_t)XPMEM_ID_MAX) == SHM_MARK;
	return (uint64_t)id <= XPMEM_ID_MAX;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Equal neighbours in @v (sorted in place). */
static size_t repeats(int64_t *v, size_t n)
{
	size_t i, r = 0;

	qsort(v, n, sizeof(*v), cmp_i64);
	for (i = 1; i < n; i++)
		r += v[i] == v[i - 1];
	return r;
}

/*
 * read_lines - whether @path holds exactly the lines "<label>: N" for each
 * of @labels, in that order and nothing else; N (decimal) go to @vals.
 */
static int read_lines(const char *path, const char *const *labels, int n,
		      unsigned long long *vals)
{
	char buf[512], *p = buf, *end;
	ssize_t len;
	size_t l;
	int fd, i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = 0;
	for (i = 0; i < n; i++) {
		l = strlen(labels[i]);
		if (strncmp(p, labels[i], l) || strncmp(p + l, ": ", 2) ||
		    !isdigit((unsigned char)p[l + 2]))
			return -1;
		errno = 0;
		vals[i] = strtoull(p + l + 2, &end, 10);
		if (errno || *end != '\n')
			return -1;
		p = end + 1;
	}
	return *p ? -1 : 0;
}

static const char *const global_labels[] = {
	"all pages pinned by XPMEM", "all pages unpinned by XPMEM",
};
static const char *const tgid_labels[] = {
	"pages pinned by XPMEM", "pages unpinned by XPMEM",
};

static int read_global(unsigned long long v[2])
{
	return read_lines(PROC_XPMEM "/global_pages", global_labels, 2, v);
}

static int read_tgid(pid_t pid, unsigned long long v[2])
{
	char path[64];

	snprintf(path, sizeof(path), PROC_XPMEM "/%d", (int)pid);
	return read_lines(path, tgid_labels, 2, v);
}

static int tgid_file_exists(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), PROC_XPMEM "/%d", (int)pid);
	return stat(path, &st) == 0;
}

/*
 * proc_leak_check - the classic check: "pages pinned" summed over every
 * file of /proc/xpmem equals "pages unpinned" summed; also counts the
 * per-tgid files and whether one of them is @self's.  -1 if a file is
 * malformed.
 */
static int proc_leak_check(pid_t self, int *ntgid, int *has_self,
			   unsigned long long *pinned,
			   unsigned long long *unpinned)
{
	DIR *d = opendir(PROC_XPMEM);
	unsigned long long v[2];
	struct dirent *e;
	int ret = 0;

	*ntgid = *has_self = 0;
	*pinned = *unpinned = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char *end;
		long pid;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, "global_pages")) {
			if (read_global(v))
				ret = -1;
		} else {
			pid = strtol(e->d_name, &end, 10);
			if (*end || pid <= 0 || read_tgid((pid_t)pid, v)) {
				ret = -1;
				continue;
			}
			(*ntgid)++;
			*has_self |= pid == self;
		}
		*pinned += v[0];
		*unpinned += v[1];
	}
	closedir(d);
	return ret;
}

/* Log every file of /proc/xpmem: mode, owner, contents. */
static void proc_dump(struct __test_metadata *_metadata)
{
	DIR *d = opendir(PROC_XPMEM);
	char path[300], text[256];
	struct dirent *e;
	struct stat st;
	ssize_t n;
	int fd, i;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), PROC_XPMEM "/%s", e->d_name);
		if (stat(path, &st))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
		if (fd >= 0)
			close(fd);
		text[n < 0 ? 0 : n] = 0;
		for (i = 0; text[i]; i++)
			if (text[i] == '\n')
				text[i] = '|';
		TH_LOG("%s %04o %d:%d \"%s\"", path, st.st_mode & 07777,
		       (int)st.st_uid, (int)st.st_gid, text);
	}
	closedir(d);
}

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(ids)
{
	int backend;
	const char *reason;
};

FIXTURE_SETUP(ids)
{
	lib_setup_backend(_metadata, &self->backend, &self->reason);
}

FIXTURE_TEARDOWN(ids)
{
}

/* ---- ids as text -------------------------------------------------------- */

/*
 * The classic rendezvous: the owner prints two segids with
 * sprintf("%llx") back to back (each with its NUL) into a 32-byte shared
 * area whose last two bytes are locks; a peer parses them back with
 * strtol (signed long) and strtoull.  16-digit ids would overwrite the
 * locks.
 */
TEST_F(ids, rendezvous_text)
{
	size_t size = 2 * page;
	unsigned char *a = xpmem_ext_alloc(size, 0);
	unsigned char *b = map_anon(size);
	xpmem_segid_t s0, s1;
	char *area, *second;
	size_t n;
	pid_t peer;
	int st, len;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	area = mmap(NULL, page, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	ASSERT_NE(NULL, area);
	memset(area, 0, AREA_SIZE);
	area[30] = (char)LOCK0;
	area[31] = (char)LOCK1;
	fill(a, size, 1);
	fill(b, size, 2);
	s0 = xpmem_make(a, size, XPMEM_PERMIT_MODE, (void *)0600);
	s1 = xpmem_make(b, size, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, s0);
	ASSERT_LT(0, s1);

	len = sprintf(area, "%llx", (unsigned long long)s0);
	ASSERT_LT(0, len);
	n = (size_t)len;
	second = area + n + 1;
	ASSERT_LT(0, sprintf(second, "%llx", (unsigned long long)s1));
	TH_LOG("%s segids as text: \"%s\" \"%s\" (%zu bytes of %d)",
	       xpmem_ext_backend_name(self->backend), area, second,
	       n + 1 + strlen(second) + 1, AREA_SIZE);
	ASSERT_EQ(LOCK0, (unsigned char)area[30]);
	ASSERT_EQ(LOCK1, (unsigned char)area[31]);
	ASSERT_GE(12, n);
	ASSERT_GE(12, strlen(second));

	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		xpmem_apid_t ap0, ap1;
		unsigned char *at0, *at1;
		long v0;
		unsigned long long v1;
		char *end;

		errno = 0;
		v0 = strtol(area, &end, 16);
		if (errno || *end || v0 != s0)
			_exit(10);
		v1 = strtoull(area + strlen(area) + 1, &end, 16);
		if (errno || *end || (xpmem_segid_t)v1 != s1 ||
		    v1 > (unsigned long long)LONG_MAX)
			_exit(11);
		at0 = get_attach((xpmem_segid_t)v0, XPMEM_RDWR, size, &ap0);
		at1 = get_attach((xpmem_segid_t)v1, XPMEM_RDWR, size, &ap1);
		if (!at0 || !at1)
			_exit(12);
		if (ap0 <= 0 || ap1 <= 0 || ap0 == ap1)
			_exit(13);
		if (check(at0, size, 1) || check(at1, size, 2))
			_exit(14);
		fill(at0, size, 3);
		fill(at1, size, 4);
		if (xpmem_detach(at0) || xpmem_detach(at1) ||
		    xpmem_release(ap0) || xpmem_release(ap1))
			_exit(15);
		_exit(CHILD_OK);
	}
	st = wait_status(peer);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
	/* The peer's stores are in the owner's memory. */
	ASSERT_EQ(0, check(a, size, 3));
	ASSERT_EQ(0, check(b, size, 4));
	ASSERT_EQ(LOCK0, (unsigned char)area[30]);
	ASSERT_EQ(LOCK1, (unsigned char)area[31]);
	ASSERT_EQ(0, xpmem_remove(s0));
	ASSERT_EQ(0, xpmem_remove(s1));
	ASSERT_EQ(0, xpmem_ext_free(a));
	munmap(b, size);
	munmap(area, page);
}

/*
 * ID_CYCLES of MAKE, GET, RELEASE, REMOVE with ID_LIVE segments and
 * permits alive at any time: every id has the backend's shape, and no
 * live id is handed out again.
 */
TEST_F_TIMEOUT(ids, width_and_sign, ID_BUDGET_KERNEL_S + 60)
{
	unsigned char *buf = xpmem_ext_alloc(ID_LIVE * page, 0);
	xpmem_segid_t live_seg[ID_LIVE] = { 0 };
	xpmem_apid_t live_ap[ID_LIVE] = { 0 };
	int64_t *all_seg = calloc(ID_CYCLES, sizeof(*all_seg));
	int64_t *all_ap = calloc(ID_CYCLES, sizeof(*all_ap));
	int budget = IS_SHM ? ID_BUDGET_SHM_S : ID_BUDGET_KERNEL_S;
	uint64_t t0, ns;
	size_t rs, ra;
	int i, j, k, n;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, all_seg);
	ASSERT_NE(NULL, all_ap);
	t0 = now_ns();
	for (i = 0; i < ID_CYCLES; i++) {
		xpmem_segid_t s;
		xpmem_apid_t ap;

		if (i % 100 == 0 && i >= ID_CYCLES_MIN &&
		    now_ns() - t0 > budget * 1000000000ULL)
			break;
		k = i % ID_LIVE;
		if (live_seg[k]) {
			ASSERT_EQ(0, xpmem_release(live_ap[k]));
			ASSERT_EQ(0, xpmem_remove(live_seg[k]));
			live_seg[k] = live_ap[k] = 0;
		}
		s = xpmem_make(buf + (size_t)k * page, page,
			       XPMEM_PERMIT_MODE, (void *)0600);
		ASSERT_TRUE(id_shape_ok(s, IS_SHM))
			TH_LOG("cycle %d: segid %#llx", i, (unsigned long long)s);
		ap = xpmem_get(s, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
		ASSERT_TRUE(id_shape_ok(ap, IS_SHM))
			TH_LOG("cycle %d: apid %#llx", i, (unsigned long long)ap);
		for (j = 0; j < ID_LIVE; j++) {
			ASSERT_NE(s, live_seg[j]);
			ASSERT_NE(ap, live_ap[j]);
		}
		live_seg[k] = s;
		live_ap[k] = ap;
		all_seg[i] = s;
		all_ap[i] = ap;
	}
	ns = now_ns() - t0;
	n = i;
	if (n < ID_CYCLES)
		TH_LOG("stopped after %d of %d cycles: %d s budget", n,
		       ID_CYCLES, budget);
	for (k = 0; k < ID_LIVE; k++) {
		ASSERT_EQ(0, xpmem_release(live_ap[k]));
		ASSERT_EQ(0, xpmem_remove(live_seg[k]));
	}
	TH_LOG("%s: %d make/get/release/remove cycles in %.1f s; segids "
	       "%llx %llx %llx %llx, apids %llx %llx %llx %llx",
	       xpmem_ext_backend_name(self->backend), n, ns / 1e9,
	       (unsigned long long)all_seg[0], (unsigned long long)all_seg[1],
	       (unsigned long long)all_seg[2], (unsigned long long)all_seg[3],
	       (unsigned long long)all_ap[0], (unsigned long long)all_ap[1],
	       (unsigned long long)all_ap[2], (unsigned long long)all_ap[3]);
	rs = repeats(all_seg, (size_t)n);
	ra = repeats(all_ap, (size_t)n);
	TH_LOG("ids seen twice over the run (not alive together): %zu segids, "
	       "%zu apids", rs, ra);
	if (!IS_SHM) {
		/* The kernel's ids are a permuted counter: never repeated. */
		ASSERT_EQ(0, rs);
		ASSERT_EQ(0, ra);
	}
	free(all_seg);
	free(all_ap);
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/*
 * GET of random ids of the backend's shape: all unknown (ENOENT).  The
 * rate is what an attacker guessing through GET gets (docs/design.md,
 * "Ids").  Ids of the other backend's shape are ENOENT too.
 */
TEST_F_TIMEOUT(ids, guess_rate, GUESS_BUDGET_S + 30)
{
	unsigned char *buf = xpmem_ext_alloc(page, 0);
	xpmem_segid_t mine, guess;
	uint64_t r, t0, ns;
	int i, n, found = 0, wrong = 0;

	ASSERT_NE(NULL, buf);
	/* One live segment, so the owner side is set up as in real use. */
	mine = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, mine);
	srandom((unsigned int)now_ns());
	t0 = now_ns();
	for (i = 0; i < GUESSES; i++) {
		if (i % 100 == 0 &&
		    now_ns() - t0 > GUESS_BUDGET_S * 1000000000ULL)
			break;
		r = ((uint64_t)random() << 31 ^ (uint64_t)random()) &
		    XPMEM_ID_MAX;
		guess = (xpmem_segid_t)(IS_SHM ? (uint64_t)SHM_MARK | r :
					r ? r : 1);
		errno = 0;
		if (xpmem_get(guess, XPMEM_RDONLY, XPMEM_PERMIT_MODE,
			      NULL) != -1)
			found++;
		else if (errno != ENOENT)
			wrong++;
	}
	ns = now_ns() - t0;
	n = i;
	TH_LOG("%s: %d gets of unknown ids in %.2f s: %.0f per second; "
	       "2^46 ids take %.1f years at that rate",
	       xpmem_ext_backend_name(self->backend), n, ns / 1e9,
	       n / (ns / 1e9),
	       (double)(1ULL << XPMEM_ID_BITS) / (n / (ns / 1e9)) /
	       (365.25 * 86400));
	ASSERT_EQ(0, found);
	ASSERT_EQ(0, wrong);

	/* The other backend's shape. */
	guess = IS_SHM ? (xpmem_segid_t)1 : (xpmem_segid_t)(SHM_MARK | 1);
	ASSERT_EQ(-1, xpmem_get(guess, XPMEM_RDONLY, XPMEM_PERMIT_MODE,
				NULL));
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(0, xpmem_remove(mine));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/*
 * Knowing an id is not enough: whoever presents it gets what the permit
 * mode grants.  Owner and peer are the same unprivileged user (no
 * CAP_IPC_OWNER), mode 0000 refuses, 0400 gives read-only only.
 */
TEST_F(ids, known_id_still_needs_mode)
{
	int seg_pipe[2], hold[2];
	xpmem_segid_t s[2];
	pid_t owner, peer;
	int st;

	ASSERT_EQ(0, pipe(seg_pipe));
	ASSERT_EQ(0, pipe(hold));
	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *buf;

		close(hold[1]);
		if (geteuid() == 0 && become(ALICE, ALICE, 0))
			_exit(CHILD_SKIP);
		buf = xpmem_ext_alloc(2 * page, 0);
		if (!buf)
			_exit(10);
		s[0] = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0);
		s[1] = xpmem_make(buf + page, page, XPMEM_PERMIT_MODE,
				  (void *)0400);
		if (s[0] <= 0 || s[1] <= 0 ||
		    write_all(seg_pipe[1], s, sizeof(s)))
			_exit(11);
		wait_eof(hold[0]);
		_exit(CHILD_OK);
	}
	close(hold[0]);
	close(seg_pipe[1]);
	if (read_all(seg_pipe[0], s, sizeof(s))) {
		st = wait_status(owner);
		ASSERT_TRUE(WIFEXITED(st));
		if (WEXITSTATUS(st) == CHILD_SKIP)
			SKIP(return, "cannot become uid %d", ALICE);
		ASSERT_EQ(0, WEXITSTATUS(st)) TH_LOG("owner failed");
		ASSERT_TRUE(0) TH_LOG("owner exited without its segids");
	}
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		xpmem_apid_t ap;

		if (geteuid() == 0 && become(ALICE, ALICE, 0))
			_exit(CHILD_SKIP);
		errno = 0;
		if (xpmem_get(s[0], XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL) !=
		    -1 || errno != EACCES)
			_exit(20);
		if (xpmem_get(s[1], XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL) !=
		    -1 || errno != EACCES)
			_exit(21);
		ap = xpmem_get(s[1], XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL);
		if (ap <= 0 || xpmem_release(ap))
			_exit(22);
		_exit(CHILD_OK);
	}
	st = wait_status(peer);
	close(hold[1]);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
	st = wait_status(owner);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
}

/*
 * More gets of one segment than a listen queue holds (somaxconn), from
 * an owner that sits in read() and never calls the library, and has no
 * descriptor left: on shm the owner's accept thread must drain the
 * lookups' connections all the same.
 */
TEST_F_TIMEOUT(ids, gets_beyond_listen_backlog, 120)
{
	struct rlimit few = { .rlim_cur = 64, .rlim_max = 64 };
	int seg_pipe[2], hold[2], n = 4096, i;
	xpmem_segid_t segid;
	xpmem_apid_t ap;
	pid_t owner;
	FILE *f;
	int st;

	f = fopen("/proc/sys/net/core/somaxconn", "re");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = 4096;
		fclose(f);
	}
	n += 64;
	ASSERT_EQ(0, pipe(seg_pipe));
	ASSERT_EQ(0, pipe(hold));
	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *buf = xpmem_ext_alloc(page, 0);
		xpmem_segid_t s;

		close(hold[1]);
		if (!buf)
			_exit(10);
		s = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0600);
		if (s <= 0)
			_exit(11);
		if (setrlimit(RLIMIT_NOFILE, &few))
			_exit(12);
		while (dup(0) >= 0)
			;
		if (errno != EMFILE || write_all(seg_pipe[1], &s, sizeof(s)))
			_exit(13);
		wait_eof(hold[0]);
		_exit(CHILD_OK);
	}
	close(hold[0]);
	close(seg_pipe[1]);
	ASSERT_EQ(0, read_all(seg_pipe[0], &segid, sizeof(segid)));
	for (i = 0; i < n; i++) {
		ap = xpmem_get(segid, XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL);
		ASSERT_LT(0, ap) TH_LOG("get %d of %d: %s", i, n,
					strerror(errno));
		ASSERT_EQ(0, xpmem_release(ap));
	}
	close(hold[1]);
	st = wait_status(owner);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
}

/* ---- namespaces --------------------------------------------------------- */

/*
 * Two processes in a new PID namespace that still use their parent's
 * /proc: the shm backend must translate the owner's pid (1 in there) into
 * /proc's numbering, or it would look at the real init.
 */
TEST_F(ids, pid_namespace_siblings)
{
	int seg_pipe[2], hold[2];
	pid_t mid;
	int st;

	ASSERT_EQ(0, pipe(seg_pipe));
	ASSERT_EQ(0, pipe(hold));
	mid = fork_child();
	ASSERT_LE(0, mid);
	if (mid == 0) {
		pid_t owner, peer;

		if (unshare(CLONE_NEWPID))
			_exit(CHILD_SKIP);
		owner = fork();
		if (owner < 0)
			_exit(10);
		if (owner == 0) {
			unsigned char *b = xpmem_ext_alloc(page, 0);
			xpmem_segid_t s;

			close(hold[1]);
			if (!b)
				_exit(11);
			fill(b, page, 71);
			s = xpmem_make(b, page, XPMEM_PERMIT_MODE,
				       (void *)0600);
			if (s <= 0 || write_all(seg_pipe[1], &s, sizeof(s)))
				_exit(12);
			wait_eof(hold[0]);
			_exit(CHILD_OK);
		}
		peer = fork();
		if (peer < 0)
			_exit(13);
		if (peer == 0) {
			xpmem_segid_t s;
			xpmem_apid_t ap;
			unsigned char *at;

			close(hold[1]);
			if (read_all(seg_pipe[0], &s, sizeof(s)))
				_exit(14);
			at = get_attach(s, XPMEM_RDWR, page, &ap);
			if (!at || check(at, page, 71))
				_exit(15);
			_exit(CHILD_OK);
		}
		/* The owner is this namespace's init: it waits for us. */
		st = wait_status(peer);
		close(hold[1]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != CHILD_OK)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 20);
		st = wait_status(owner);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 21);
	}
	close(hold[1]);
	st = wait_status(mid);
	ASSERT_TRUE(WIFEXITED(st));
	if (WEXITSTATUS(st) == CHILD_SKIP)
		SKIP(return, "cannot unshare the PID namespace");
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
}

/*
 * A peer in another network namespace: the shm backend names segments by
 * abstract unix sockets, which are per network namespace (ENOENT); the
 * kernel backend does not care.
 */
TEST_F(ids, network_namespace)
{
	unsigned char *buf = xpmem_ext_alloc(page, 0);
	xpmem_segid_t segid;
	pid_t peer;
	int st;

	ASSERT_NE(NULL, buf);
	fill(buf, page, 81);
	segid = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	peer = fork_child();
	ASSERT_LE(0, peer);
	if (peer == 0) {
		xpmem_apid_t ap;
		unsigned char *at;

		if (unshare(CLONE_NEWNET))
			_exit(CHILD_SKIP);
		errno = 0;
		at = get_attach(segid, XPMEM_RDWR, page, &ap);
		if (IS_SHM)
			_exit(!at && errno == ENOENT ? CHILD_OK : 10);
		_exit(at && !check(at, page, 81) ? CHILD_OK : 11);
	}
	st = wait_status(peer);
	ASSERT_TRUE(WIFEXITED(st));
	if (WEXITSTATUS(st) == CHILD_SKIP)
		SKIP(return, "cannot unshare the network namespace");
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

/* ---- kill -9 of an owner ------------------------------------------------ */

/* Whether an abstract socket "@xpmem-<segid>" is listed in /proc/net/unix. */
static int socket_listed(xpmem_segid_t segid)
{
	char line[512], want[64];
	int found = 0;
	FILE *f = fopen("/proc/net/unix", "re");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), " @xpmem-%012llx\n",
		 (unsigned long long)segid);
	while (fgets(line, sizeof(line), f))
		if (strlen(line) >= strlen(want) &&
		    !strcmp(line + strlen(line) - strlen(want), want))
			found = 1;
	fclose(f);
	return found;
}

/*
 * An owner with segments (allocated and migrated), a permit and an
 * attachment of its own, and an attacher (us), killed with SIGKILL:
 * nothing is left: no object in the shm directory, no socket name, no
 * /proc/xpmem file (kernel); its segids are ENOENT.
 */
TEST_F(ids, owner_kill9_leaves_nothing)
{
	char dir[] = "/dev/shm/xpmem-ids-XXXXXX";
	int seg_pipe[2], hold[2];
	xpmem_segid_t s[2];
	unsigned long long v[2];
	xpmem_apid_t ap;
	unsigned char *at;
	pid_t owner;
	int st, i;

	if (IS_SHM) {
		ASSERT_NE(NULL, mkdtemp(dir));
		ASSERT_EQ(0, setenv("XPMEM_SHM_DIR", dir, 1));
	}
	ASSERT_EQ(0, pipe(seg_pipe));
	ASSERT_EQ(0, pipe(hold));
	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		unsigned char *a = xpmem_ext_alloc(2 * page, 0);
		unsigned char *b = map_anon(2 * page);
		unsigned char *self_at;
		xpmem_apid_t self_ap;
		xpmem_segid_t m[2];

		close(hold[1]);
		if (!a || !b)
			_exit(10);
		fill(a, 2 * page, 91);
		fill(b, 2 * page, 92);
		m[0] = xpmem_make(a, 2 * page, XPMEM_PERMIT_MODE, (void *)0600);
		m[1] = xpmem_make(b, 2 * page, XPMEM_PERMIT_MODE, (void *)0600);
		if (m[0] <= 0 || m[1] <= 0)
			_exit(11);
		self_at = get_attach(m[0], XPMEM_RDWR, 2 * page, &self_ap);
		if (!self_at || check(self_at, 2 * page, 91))
			_exit(12);
		if (write_all(seg_pipe[1], m, sizeof(m)))
			_exit(13);
		wait_eof(hold[0]);
		_exit(CHILD_OK);
	}
	close(hold[0]);
	close(seg_pipe[1]);
	ASSERT_EQ(0, read_all(seg_pipe[0], s, sizeof(s)));
	at = get_attach(s[1], XPMEM_RDWR, 2 * page, &ap);
	ASSERT_NE(NULL, at);
	ASSERT_EQ(0, check(at, 2 * page, 92));
	if (IS_SHM) {
		ASSERT_EQ(0, count_dir(dir));	/* unlinked at creation */
		for (i = 0; i < 2; i++)
			ASSERT_EQ(1, socket_listed(s[i]));
	} else {
		ASSERT_EQ(0, read_tgid(owner, v));
		ASSERT_EQ(v[0], v[1]);
	}

	ASSERT_EQ(0, kill(owner, SIGKILL));
	st = wait_status(owner);
	ASSERT_TRUE(WIFSIGNALED(st));
	ASSERT_EQ(SIGKILL, WTERMSIG(st));

	for (i = 0; i < 2; i++) {
		errno = 0;
		ASSERT_EQ(-1, xpmem_get(s[i], XPMEM_RDWR, XPMEM_PERMIT_MODE,
					NULL));
		ASSERT_EQ(ENOENT, errno);
		ASSERT_EQ(0, socket_listed(s[i]));
	}
	if (IS_SHM) {
		ASSERT_EQ(0, count_dir(dir));
		ASSERT_EQ(0, rmdir(dir));
		unsetenv("XPMEM_SHM_DIR");
	} else {
		ASSERT_FALSE(tgid_file_exists(owner));
	}
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(ap));
}

/* ---- /proc/xpmem (kernel backend) --------------------------------------- */

/*
 * global_pages has exactly the classic two lines, before, during and after
 * attachments (faulted in, both ways), and pinned == unpinned throughout:
 * nothing is pinned long term.
 */
TEST_F(ids, proc_global_pages)
{
	size_t size = 8 * page;
	unsigned char *buf, *at;
	unsigned long long v[2];
	xpmem_segid_t segid;
	xpmem_apid_t ap;

	if (IS_SHM)
		SKIP(return, "/proc/xpmem is the kernel module's");
	ASSERT_EQ(0, read_global(v));
	ASSERT_EQ(v[0], v[1]);
	buf = map_anon(size);
	ASSERT_NE(NULL, buf);
	fill(buf, size, 101);
	segid = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	at = get_attach(segid, XPMEM_RDWR, size, &ap);
	ASSERT_NE(NULL, at);
	ASSERT_EQ(0, check(at, size, 101));
	fill(at, size, 102);
	ASSERT_EQ(0, read_global(v));
	ASSERT_EQ(v[0], v[1]);
	TH_LOG("global_pages during attachments: all pages pinned %llu, "
	       "unpinned %llu", v[0], v[1]);
	ASSERT_EQ(0, check(buf, size, 102));
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, xpmem_release(ap));
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, read_global(v));
	ASSERT_EQ(v[0], v[1]);
	munmap(buf, size);
}

/*
 * One file per thread group with the device open: ours (0444 and ours:
 * who may read it is decided at each read, as for /proc/PID/maps; the
 * two lines); a child that becomes another user and opens the device gets
 * its own, owned by it, gone once it exited.
 */
TEST_F(ids, proc_tgid_files)
{
	int ready[2], hold[2];
	unsigned long long v[2];
	char path[64];
	struct stat st;
	pid_t child;
	int status;
	char c;

	if (IS_SHM)
		SKIP(return, "/proc/xpmem is the kernel module's");
	ASSERT_LE(0, xpmem_version());	/* the device is open */
	snprintf(path, sizeof(path), PROC_XPMEM "/%d", (int)getpid());
	ASSERT_EQ(0, stat(path, &st));
	ASSERT_TRUE(S_ISREG(st.st_mode));
	ASSERT_EQ(0444, st.st_mode & 07777);
	ASSERT_EQ(geteuid(), st.st_uid);
	ASSERT_EQ(getegid(), st.st_gid);
	ASSERT_EQ(0, read_tgid(getpid(), v));
	ASSERT_EQ(v[0], v[1]);

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(hold));
	child = fork_child();
	ASSERT_LE(0, child);
	if (child == 0) {
		close(ready[0]);
		close(hold[1]);
		if (geteuid() == 0 && become(ALICE, ALICE, 0))
			_exit(CHILD_SKIP);
		/* The library opens its own device file in a fork child. */
		if (xpmem_version() < 0)
			_exit(10);
		if (write_all(ready[1], "r", 1))
			_exit(11);
		wait_eof(hold[0]);
		_exit(CHILD_OK);
	}
	close(ready[1]);
	close(hold[0]);
	if (read(ready[0], &c, 1) != 1) {
		status = wait_status(child);
		ASSERT_TRUE(WIFEXITED(status));
		if (WEXITSTATUS(status) == CHILD_SKIP)
			SKIP(return, "cannot become uid %d", ALICE);
		ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("child failed");
		ASSERT_TRUE(0) TH_LOG("child exited before opening the device");
	}
	snprintf(path, sizeof(path), PROC_XPMEM "/%d", (int)child);
	ASSERT_EQ(0, stat(path, &st));
	ASSERT_EQ(0444, st.st_mode & 07777);
	if (geteuid() == 0) {
		ASSERT_EQ(ALICE, st.st_uid);
		ASSERT_EQ(ALICE, st.st_gid);
	}
	ASSERT_EQ(0, read_tgid(child, v));
	ASSERT_EQ(v[0], v[1]);
	proc_dump(_metadata);
	close(hold[1]);
	status = wait_status(child);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(CHILD_OK, WEXITSTATUS(status));
	ASSERT_FALSE(tgid_file_exists(child));
}

/*
 * The classic leak check after a workload of children that make, attach
 * and exit (one of them killed): pinned == unpinned summed over every
 * file, and only global_pages and our own file are left.
 */
TEST_F(ids, proc_leak_check)
{
	unsigned long long pinned, unpinned;
	int ntgid, has_self, i, st;
	unsigned char *buf;
	xpmem_segid_t segid;

	if (IS_SHM)
		SKIP(return, "/proc/xpmem is the kernel module's");
	buf = xpmem_ext_alloc(4 * page, 0);
	ASSERT_NE(NULL, buf);
	fill(buf, 4 * page, 111);
	segid = xpmem_make(buf, 4 * page, XPMEM_PERMIT_MODE, (void *)0600);
	ASSERT_LT(0, segid);
	for (i = 0; i < 4; i++) {
		int ready[2], hold[2];
		pid_t child;
		char c;

		ASSERT_EQ(0, pipe(ready));
		ASSERT_EQ(0, pipe(hold));
		child = fork_child();
		ASSERT_LE(0, child);
		if (child == 0) {
			xpmem_apid_t ap;
			unsigned char *at;

			close(ready[0]);
			close(hold[1]);
			at = get_attach(segid, XPMEM_RDWR, 4 * page, &ap);
			if (!at || check(at, 4 * page, 111))
				_exit(10);
			if (write_all(ready[1], "r", 1))
				_exit(11);
			wait_eof(hold[0]);	/* or SIGKILL */
			_exit(CHILD_OK);
		}
		close(ready[1]);
		close(hold[0]);
		ASSERT_EQ(1, read(ready[0], &c, 1));
		close(ready[0]);
		ASSERT_TRUE(tgid_file_exists(child));
		if (i % 2)
			ASSERT_EQ(0, kill(child, SIGKILL));
		close(hold[1]);
		st = wait_status(child);
		if (i % 2) {
			ASSERT_TRUE(WIFSIGNALED(st));
		} else {
			ASSERT_TRUE(WIFEXITED(st));
			ASSERT_EQ(CHILD_OK, WEXITSTATUS(st));
		}
		ASSERT_FALSE(tgid_file_exists(child));
	}
	ASSERT_EQ(0, proc_leak_check(getpid(), &ntgid, &has_self, &pinned,
				     &unpinned));
	TH_LOG("/proc/xpmem: %d thread group file(s), pages pinned %llu, "
	       "unpinned %llu", ntgid, pinned, unpinned);
	ASSERT_EQ(pinned, unpinned);
	ASSERT_EQ(1, ntgid);
	ASSERT_TRUE(has_self);
	ASSERT_EQ(0, xpmem_remove(segid));
	ASSERT_EQ(0, xpmem_ext_free(buf));
}

TEST_HARNESS_MAIN
