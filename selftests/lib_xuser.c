// SPDX-License-Identifier: GPL-2.0
/*
 * lib_xuser.c - libxpmem between processes of different users, on both
 * backends: owners are alice, peers bob and carol (uid/gid 1000/1001/1002,
 * no shared group), each a child of the test (root; skips without).  The
 * backend comes from the environment as in lib_xpmem.c (lib_test.h).
 * Children report through exit statuses; synchronisation is by pipes,
 * never by sleeping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xpmem.h>

#include "kselftest_harness.h"
#include "lib_test.h"

#define NPAGES		4
#define FLOOD_GETS	300
#define SILENT_CONNS	8

/*
 * Probe mode "hold" (owner_exec: an owner exec's this program with
 * PROBE_ENV=hold): say so on stdout, then wait for end of file on stdin;
 * the harness never starts.
 */
__attribute__((constructor)) static void probe_main(void)
{
	const char *mode = getenv(PROBE_ENV);

	if (!mode || strcmp(mode, "hold"))
		return;
	if (write(1, "x", 1) != 1)
		_exit(1);
	wait_eof(0);
	_exit(0);
}

/* ---- fixture ------------------------------------------------------------ */

/*
 * On shm the owners create their objects in a shm directory that must be
 * empty whenever a test looks, and at its end: a tmpfs of the test's own
 * mounted over /dev/shm in a private mount namespace (so a test killed by
 * its timeout cannot leave anything behind either), or if that cannot be
 * done a fresh directory, removed by the harness's parent process (an
 * ASSERT in the test can skip a teardown in the test process).
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

/* Nothing in the shm directory (kernel backend: nothing to check). */
#define ASSERT_DIR_EMPTY() do { \
	if (self->dir[0]) \
		ASSERT_EQ(0, count_dir(self->dir)); \
} while (0)

/* ---- the processes of a test -------------------------------------------- */

/*
 * A test runs an owner and one or two peers, each a child of the test
 * (fork_child()) that has become its user with no supplementary group
 * (become()).  Between any two of the four processes there is a pipe each
 * way, all made before the first fork, all close-on-exec.  Each process
 * keeps only its own ends: one that dies early is an end of file to the
 * others, never a hang.  In a test with a `struct xu x`, TO(who) and
 * FROM(who) are the calling process's ends of the pipes to and from who.
 */
enum { XU_TEST, XU_OWNER, XU_PEER, XU_PEER2, XU_N };

struct xu {
	int me;				/* which process this is */
	const char *dir;		/* the shm directory, or "" */
	pid_t pid[XU_N];		/* in the test: the children not reaped */
	uid_t uid[XU_N];
	int pipe[XU_N][XU_N][2];	/* from one to another; -1: closed */
};

#define TO(who)		(x.pipe[x.me][who][1])
#define FROM(who)	(x.pipe[who][x.me][0])

static const char *const xu_role[XU_N] = {
	"test", "owner", "peer", "second peer"
};

static const char *xu_user(uid_t uid)
{
	return uid == ALICE ? "alice" : uid == BOB ? "bob" :
	       uid == CAROL ? "carol" : "root";
}

/* The pipes of a test whose shm directory is @dir. */
static void xu_init(struct __test_metadata *_metadata, struct xu *x,
		    const char *dir)
{
	memset(x, 0, sizeof(*x));
	x->me = XU_TEST;
	x->dir = dir;
	for (int i = 0; i < XU_N; i++) {
		for (int j = 0; j < XU_N; j++) {
			x->pipe[i][j][0] = x->pipe[i][j][1] = -1;
			if (i != j)
				ASSERT_EQ(0, pipe2(x->pipe[i][j], O_CLOEXEC));
		}
	}
}

/* Close @who's ends of the pipes (@keep 0), or every end but @who's. */
static void xu_close(struct xu *x, int who, int keep)
{
	for (int i = 0; i < XU_N; i++) {
		for (int j = 0; j < XU_N; j++) {
			for (int e = 0; e < 2; e++) {
				int *fd = &x->pipe[i][j][e];

				/* the write end is the sender's */
				if (*fd >= 0 && ((e ? i : j) == who) != keep) {
					close(*fd);
					*fd = -1;
				}
			}
		}
	}
}

/*
 * Fork @who, which becomes @uid (or exits 10): true in it, with only its
 * own pipe ends left; false in the test, which closed the child's ends.
 */
static int xu_fork(struct __test_metadata *_metadata, struct xu *x, int who,
		   uid_t uid)
{
	pid_t pid = fork_child();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		x->me = who;
		xu_close(x, who, 1);
		if (become(uid, uid, 0))
			_exit(10);
		return 1;
	}
	x->pid[who] = pid;
	x->uid[who] = uid;
	xu_close(x, who, 0);
	return 0;
}

/* Wait for child @who, which must exit CHILD_OK; @what it was doing. */
static void xu_wait(struct __test_metadata *_metadata, struct xu *x, int who,
		    const char *what)
{
	char how[64];
	int st;

	ASSERT_NE(0, x->pid[who]);
	st = wait_status(x->pid[who]);
	x->pid[who] = 0;
	describe_status(st, how, sizeof(how));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == CHILD_OK)
		TH_LOG("%s (%s), %s: %s", xu_user(x->uid[who]), xu_role[who],
		       what, how);
}

/*
 * The end of a test: the test closes the pipe ends it holds, waits for the
 * children not reaped yet, the last forked first (each must exit
 * CHILD_OK), and then the shm directory must be empty.
 */
static void xu_end(struct __test_metadata *_metadata, struct xu *x)
{
	xu_close(x, -1, 1);		/* all this process still holds */
	for (int who = XU_N - 1; who > XU_TEST; who--)
		if (x->pid[who])
			xu_wait(_metadata, x, who, "at the end");
	if (x->dir[0])
		ASSERT_EQ(0, count_dir(x->dir));
}

/*
 * In the owner: make one xpmem_ext_alloc() page of pattern @seed with
 * mode 0666, send its segid on @out and keep it until @hold reads end of
 * file.
 */
static void __attribute__((noreturn)) page_owner(unsigned int seed, int out,
						 int hold)
{
	xpmem_segid_t s;
	unsigned char *buf;

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

/* A child's exit code for a get that failed: its errno, distinctly. */
static int errno_code(int base)
{
	return errno == EACCES ? CHILD_EACCES : errno == ENOENT ? base + 1 :
	       errno == EAGAIN ? base + 2 : base;
}

/* ---- tests -------------------------------------------------------------- */

/*
 * Bob attaches alice's 0666 segment read-write and the bytes go both
 * ways: alice's to bob, bob's to alice, and alice's later ones to bob
 * through the same attachment.  Alice is not dumpable: on shm a peer of
 * another uid gets its descriptors from alice's accept thread, not /proc.
 */
TEST_F(xuser, exchange_0666)
{
	size_t size = NPAGES * page;
	struct xu x;

	xu_init(_metadata, &x, self->dir);
	if (xu_fork(_metadata, &x, XU_OWNER, ALICE)) {
		unsigned char *buf;
		xpmem_segid_t s;
		char c;

		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
			_exit(10);
		buf = xpmem_ext_alloc(size, 0);
		if (!buf)
			_exit(11);
		fill(buf, size, 11);
		s = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0666);
		if (s <= 0 || write_all(TO(XU_PEER), &s, sizeof(s)))
			_exit(12);
		if (read_all(FROM(XU_PEER), &c, 1))	/* bob wrote page 1 */
			_exit(13);
		if (check(buf + page, page, 99))
			_exit(14);
		fill(buf + 2 * page, page, 77);
		if (write_all(TO(XU_PEER), &c, 1))
			_exit(15);
		wait_eof(FROM(XU_PEER));		/* bob is done */
		if (xpmem_remove(s) || xpmem_ext_free(buf))
			_exit(16);
		_exit(CHILD_OK);
	}
	if (xu_fork(_metadata, &x, XU_PEER, BOB)) {
		unsigned char *at, *mine;
		xpmem_segid_t s;
		xpmem_apid_t apid;
		char c = 'w';

		if (read_all(FROM(XU_OWNER), &s, sizeof(s)))
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
		if (write_all(TO(XU_OWNER), &c, 1) ||
		    read_all(FROM(XU_OWNER), &c, 1))
			_exit(14);
		if (check(at + 2 * page, page, 77))
			_exit(15);
		free(mine);
		if (xpmem_detach(at) || xpmem_release(apid))
			_exit(16);
		_exit(CHILD_OK);
	}
	xu_end(_metadata, &x);
}

/*
 * A key across users: alice publishes a read-only export of 0666 memory
 * under a key; bob finds it by the key alone, gets read access only, and
 * cannot take the key himself.
 */
TEST_F(xuser, key_rdonly_export)
{
	static const char key[] = "xuser/alice";
	struct xu x;

	if (!(xpmem_ext_features() & XPMEM_EXT_F_KEYS))
		SKIP(return, "no XPMEM_EXT_F_KEYS on this backend");
	xu_init(_metadata, &x, self->dir);
	if (xu_fork(_metadata, &x, XU_OWNER, ALICE)) {
		unsigned char *buf;
		xpmem_segid_t s;

		buf = xpmem_ext_alloc(page, 0);
		if (!buf)
			_exit(11);
		fill(buf, page, 61);
		s = xpmem_ext_make(buf, page, 0666, XPMEM_EXT_MAKE_RDONLY,
				   key, sizeof(key), NULL, 0);
		if (s <= 0 || write_all(TO(XU_PEER), &s, sizeof(s)))
			_exit(12);
		wait_eof(FROM(XU_PEER));
		if (check(buf, page, 61) || xpmem_remove(s))
			_exit(13);
		_exit(CHILD_OK);
	}
	if (xu_fork(_metadata, &x, XU_PEER, BOB)) {
		struct xpmem_addr addr = { .offset = 0 };
		xpmem_segid_t s, found = 0;
		unsigned char *at, *b;

		/* made, not told */
		if (read_all(FROM(XU_OWNER), &s, sizeof(s)))
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
		b = map_anon(page);
		errno = 0;
		if (!b || xpmem_ext_make(b, page, 0600, 0, key, sizeof(key),
					 NULL, 0) != -1 || errno != EEXIST)
			_exit(15);
		if (xpmem_detach(at) || xpmem_release(addr.apid))
			_exit(16);
		_exit(CHILD_OK);
	}
	xu_end(_metadata, &x);
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
	struct xu x;

	if (!(xpmem_ext_features() & XPMEM_EXT_F_AUTH))
		SKIP(return, "no XPMEM_EXT_F_AUTH on this backend");
	xu_init(_metadata, &x, self->dir);
	if (xu_fork(_metadata, &x, XU_OWNER, ALICE)) {
		unsigned char *buf;
		xpmem_segid_t s[2];

		buf = xpmem_ext_alloc(2 * page, 0);
		if (!buf)
			_exit(11);
		fill(buf, 2 * page, 71);
		s[0] = xpmem_ext_make(buf, page, 0666, 0, NULL, 0, secret,
				      sizeof(secret));
		s[1] = xpmem_ext_make(buf + page, page, 0666, 0, NULL, 0,
				      NULL, 0);
		if (s[0] <= 0 || s[1] <= 0 ||
		    write_all(TO(XU_PEER), s, sizeof(s)))
			_exit(12);
		wait_eof(FROM(XU_PEER));
		if (buf[5] != 0x7a || xpmem_remove(s[0]) || xpmem_remove(s[1]))
			_exit(13);
		_exit(CHILD_OK);
	}
	if (xu_fork(_metadata, &x, XU_PEER, BOB)) {
		struct xpmem_addr addr = { .offset = 0 };
		xpmem_segid_t s[2];
		unsigned char *at;

		if (read_all(FROM(XU_OWNER), s, sizeof(s)))
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
	xu_end(_metadata, &x);
}

/*
 * 0644: bob gets no read-write permit, and his read-only attachment of
 * alice's (migrated, private anonymous) range cannot be written: mprotect
 * to PROT_WRITE fails, a store faults, and alice's bytes stay.
 */
TEST_F(xuser, rdonly_0644)
{
	size_t size = 2 * page;
	struct xu x;

	xu_init(_metadata, &x, self->dir);
	if (xu_fork(_metadata, &x, XU_OWNER, ALICE)) {
		unsigned char *buf;
		xpmem_segid_t s;

		buf = map_anon(size);
		if (!buf)
			_exit(11);
		fill(buf, size, 5);
		s = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0644);
		if (s <= 0 || write_all(TO(XU_PEER), &s, sizeof(s)))
			_exit(12);
		wait_eof(FROM(XU_PEER));
		if (check(buf, size, 5))
			_exit(13);
		if (xpmem_remove(s))
			_exit(14);
		_exit(CHILD_OK);
	}
	if (xu_fork(_metadata, &x, XU_PEER, BOB)) {
		unsigned char *at;
		xpmem_segid_t s;
		xpmem_apid_t apid;

		if (read_all(FROM(XU_OWNER), &s, sizeof(s)))
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
		if (IS_SHM && errno != EACCES)
			_exit(15);
		if (probe((volatile char *)at + page, 1, 1) != SIGSEGV)
			_exit(16);
		if (probe((volatile char *)at + page, 0, 1) != 0 ||
		    check(at, size, 5))
			_exit(17);
		if (xpmem_detach(at) || xpmem_release(apid))
			_exit(18);
		_exit(CHILD_OK);
	}
	xu_end(_metadata, &x);
}

/*
 * After alice removes a segment, bob's permit for it attaches no more and
 * a new get fails (ENOENT); her other segment still attaches.  After
 * alice is killed (-9), that one fails too; on shm the attachment bob
 * kept still shows the last bytes, and nothing is left in the directory.
 */
TEST_F(xuser, remove_and_owner_exit)
{
	struct xu x;
	char c;
	int st;

	xu_init(_metadata, &x, self->dir);
	if (xu_fork(_metadata, &x, XU_OWNER, ALICE)) {
		unsigned char *a, *b;
		xpmem_segid_t s[2];

		a = xpmem_ext_alloc(page, 0);
		b = map_anon(page);
		if (!a || !b)
			_exit(11);
		fill(a, page, 21);
		fill(b, page, 22);
		s[0] = xpmem_make(a, page, XPMEM_PERMIT_MODE, (void *)0666);
		s[1] = xpmem_make(b, page, XPMEM_PERMIT_MODE, (void *)0666);
		if (s[0] <= 0 || s[1] <= 0 ||
		    write_all(TO(XU_PEER), s, sizeof(s)))
			_exit(12);
		if (read_all(FROM(XU_PEER), &c, 1) || xpmem_remove(s[0]) ||
		    write_all(TO(XU_PEER), &c, 1))
			_exit(13);
		wait_eof(FROM(XU_PEER));	/* killed before that */
		_exit(CHILD_OK);
	}
	if (xu_fork(_metadata, &x, XU_PEER, BOB)) {
		struct xpmem_addr addr = { .offset = 0 };
		xpmem_apid_t apid[2];
		unsigned char *at[2], *kept;
		xpmem_segid_t s[2];

		c = 'r';
		if (read_all(FROM(XU_OWNER), s, sizeof(s)))
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
		if (write_all(TO(XU_OWNER), &c, 1) ||
		    read_all(FROM(XU_OWNER), &c, 1))
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
		if (write_all(TO(XU_TEST), &c, 1) ||
		    read_all(FROM(XU_TEST), &c, 1))
			_exit(15);
		errno = 0;
		if (xpmem_attach(addr, page, NULL) != (void *)-1 ||
		    errno != ENOENT)
			_exit(40);
		if (xpmem_get(s[1], XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL) !=
		    -1 || errno != ENOENT)
			_exit(41);
		/* shm: no revocation (the kernel backend's would SIGBUS) */
		if (IS_SHM && check(kept, page, 22))
			_exit(42);
		if (xpmem_detach(kept) || xpmem_release(apid[0]) ||
		    xpmem_release(apid[1]))
			_exit(43);
		_exit(CHILD_OK);
	}
	if (read_all(FROM(XU_PEER), &c, 1) == 0) {
		ASSERT_DIR_EMPTY();
		ASSERT_EQ(0, kill(x.pid[XU_OWNER], SIGKILL));
		st = wait_status(x.pid[XU_OWNER]);
		x.pid[XU_OWNER] = 0;
		ASSERT_TRUE(WIFSIGNALED(st));
		ASSERT_EQ(SIGKILL, WTERMSIG(st));
		ASSERT_EQ(0, write_all(TO(XU_PEER), &c, 1));
	}
	xu_end(_metadata, &x);
}

/*
 * An owner that exec's has no segments any more, although it still runs:
 * bob's permit (descriptors from alice) and root's (through /proc) attach
 * no more.  shm only: the kernel backend is not asked here.
 */
TEST_F(xuser, owner_exec)
{
	struct xpmem_addr addr = { .offset = 0 };
	xpmem_segid_t s;
	unsigned char *at;
	struct xu x;
	char c = 0;

	if (!IS_SHM)
		SKIP(return, "exec of a kernel-backend owner is not asserted");
	/* The pipes are close-on-exec: after exec alice keeps only 0 and 1. */
	xu_init(_metadata, &x, self->dir);
	if (xu_fork(_metadata, &x, XU_OWNER, ALICE)) {
		char *argv[] = { "lib_xuser-hold", NULL };
		char *env[] = { PROBE_ENV "=hold", NULL };
		unsigned char *buf;

		buf = xpmem_ext_alloc(page, 0);
		if (!buf)
			_exit(11);
		fill(buf, page, 61);
		s = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0666);
		if (s <= 0 || write_all(TO(XU_TEST), &s, sizeof(s)))
			_exit(12);
		/* the test's go; after exec, "x" to it when ready */
		if (read_all(FROM(XU_TEST), &c, 1) ||
		    dup2(FROM(XU_TEST), 0) != 0 || dup2(TO(XU_TEST), 1) != 1)
			_exit(13);
		execve("/proc/self/exe", argv, env);
		_exit(14);
	}
	if (xu_fork(_metadata, &x, XU_PEER, BOB)) {
		xpmem_apid_t apid;

		if (read_all(FROM(XU_TEST), &s, sizeof(s)))
			_exit(11);
		at = get_attach(s, XPMEM_RDWR, page, &apid);
		if (!at)
			_exit(errno_code(20));
		if (check(at, page, 61) || xpmem_detach(at))
			_exit(12);
		if (write_all(TO(XU_TEST), &c, 1) ||
		    read_all(FROM(XU_TEST), &c, 1))
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
	ASSERT_EQ(0, read_all(FROM(XU_OWNER), &s, sizeof(s)));
	ASSERT_EQ(0, write_all(TO(XU_PEER), &s, sizeof(s)));
	/* root's permit goes through /proc */
	addr.apid = xpmem_get(s, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	ASSERT_LT(0, addr.apid);
	at = xpmem_attach(addr, page, NULL);
	ASSERT_NE((void *)-1, at);
	ASSERT_EQ(0, check(at, page, 61));
	ASSERT_EQ(0, xpmem_detach(at));
	ASSERT_EQ(0, read_all(FROM(XU_PEER), &c, 1)) TH_LOG("bob failed");
	ASSERT_EQ(0, write_all(TO(XU_OWNER), &c, 1));
	ASSERT_EQ(0, read_all(FROM(XU_OWNER), &c, 1))
		TH_LOG("alice did not exec");
	errno = 0;
	ASSERT_EQ((void *)-1, xpmem_attach(addr, page, NULL));
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(0, xpmem_release(addr.apid));
	ASSERT_EQ(0, write_all(TO(XU_PEER), &c, 1));
	xu_wait(_metadata, &x, XU_PEER, "after alice's exec");
	xu_end(_metadata, &x);
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
	struct xu x;

	xu_init(_metadata, &x, self->dir);
	if (xu_fork(_metadata, &x, XU_OWNER, ALICE)) {
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
			if (write_all(TO(XU_PEER), s, sizeof(s)) ||
			    read_all(FROM(XU_PEER), &c, 1))
				_exit(14);
		}
		_exit(CHILD_OK);
	}
	if (xu_fork(_metadata, &x, XU_PEER, BOB)) {
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

		for (i = 0; i < PA_N; i++) {
			if (read_all(FROM(XU_OWNER), s, sizeof(s)))
				_exit(11);
			want = IS_SHM ? shm_ro0[i] : 1;
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
				want = IS_SHM ? shm_rw1[i] : 1;
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
			if (write_all(TO(XU_OWNER), "n", 1))
				_exit(12);
		}
		_exit(CHILD_OK);
	}
	xu_end(_metadata, &x);
}

/*
 * A stopped owner cannot answer: on shm, bob's get gives up after its
 * wait (EAGAIN); the kernel backend does not need the owner to run.  Once
 * alice runs again she answers the next get (and the abandoned connection
 * costs her nothing).
 */
TEST_F(xuser, stopped_owner)
{
	xpmem_segid_t s;
	struct xu x;
	int st;

	xu_init(_metadata, &x, self->dir);
	if (xu_fork(_metadata, &x, XU_OWNER, ALICE))
		page_owner(81, TO(XU_TEST), FROM(XU_TEST));
	ASSERT_EQ(0, read_all(FROM(XU_OWNER), &s, sizeof(s)));
	ASSERT_EQ(0, kill(x.pid[XU_OWNER], SIGSTOP));
	ASSERT_EQ(x.pid[XU_OWNER], waitpid(x.pid[XU_OWNER], &st, WUNTRACED));
	ASSERT_TRUE(WIFSTOPPED(st));
	if (xu_fork(_metadata, &x, XU_PEER, BOB)) {
		xpmem_apid_t apid;

		errno = 0;
		apid = xpmem_get(s, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
		if (IS_SHM)
			_exit(apid == -1 && errno == EAGAIN ? CHILD_OK : 11);
		_exit(apid > 0 && !xpmem_release(apid) ? CHILD_OK : 12);
	}
	xu_wait(_metadata, &x, XU_PEER, "owner stopped");
	ASSERT_EQ(0, kill(x.pid[XU_OWNER], SIGCONT));
	if (xu_fork(_metadata, &x, XU_PEER2, BOB)) {
		xpmem_apid_t apid;
		unsigned char *at;

		at = get_attach(s, XPMEM_RDWR, page, &apid);
		if (!at)
			_exit(errno_code(20));
		if (check(at, page, 81) || xpmem_detach(at) ||
		    xpmem_release(apid))
			_exit(11);
		_exit(CHILD_OK);
	}
	xu_wait(_metadata, &x, XU_PEER2, "owner running again");
	xu_end(_metadata, &x);
}

/*
 * Bob has room for the connection and one descriptor more: the owner's
 * answer cannot be received whole (EMFILE), and what did arrive is closed
 * (exactly as many descriptors free afterwards).  With room, it works.
 */
TEST_F(xuser, peer_out_of_descriptors)
{
	struct rlimit few = { .rlim_cur = 64, .rlim_max = 64 };
	xpmem_segid_t s;
	struct xu x;

	if (!IS_SHM)
		SKIP(return, "shm: descriptors come from the owner");
	xu_init(_metadata, &x, self->dir);
	if (xu_fork(_metadata, &x, XU_OWNER, ALICE))
		page_owner(91, TO(XU_TEST), FROM(XU_TEST));
	ASSERT_EQ(0, read_all(FROM(XU_OWNER), &s, sizeof(s)));
	if (xu_fork(_metadata, &x, XU_PEER, BOB)) {
		xpmem_apid_t apid;
		unsigned char *at;
		int last = -1, fd, i;

		if (setrlimit(RLIMIT_NOFILE, &few))
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
	xu_wait(_metadata, &x, XU_PEER, "short of descriptors");
	xu_end(_metadata, &x);
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
	xpmem_segid_t s;
	struct xu x;
	char c;

	if (!IS_SHM)
		SKIP(return, "shm: lookups are answered by the owner");
	xu_init(_metadata, &x, self->dir);
	if (xu_fork(_metadata, &x, XU_OWNER, ALICE)) {
		unsigned char *buf;

		buf = xpmem_ext_alloc(page, 0);
		if (!buf)
			_exit(11);
		fill(buf, page, 41);
		s = xpmem_make(buf, page, XPMEM_PERMIT_MODE, (void *)0666);
		if (s <= 0 || setrlimit(RLIMIT_NOFILE, &few))
			_exit(12);
		while (dup(0) >= 0)
			;
		if (errno != EMFILE || write_all(TO(XU_TEST), &s, sizeof(s)))
			_exit(13);
		wait_eof(FROM(XU_TEST));
		_exit(CHILD_OK);
	}
	ASSERT_EQ(0, read_all(FROM(XU_OWNER), &s, sizeof(s)));
	if (xu_fork(_metadata, &x, XU_PEER, BOB)) {
		struct pollfd pfd[SILENT_CONNS];
		int i, n;

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
		if (write_all(TO(XU_TEST), "h", 1))
			_exit(13);
		wait_eof(FROM(XU_TEST));
		_exit(CHILD_OK);
	}
	ASSERT_EQ(0, read_all(FROM(XU_PEER), &c, 1)) TH_LOG("bob's connections");
	if (xu_fork(_metadata, &x, XU_PEER2, CAROL)) {
		xpmem_apid_t apid;
		unsigned char *at;
		int i;

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
	xu_wait(_metadata, &x, XU_PEER2, "gets");
	xu_end(_metadata, &x);
}

TEST_HARNESS_MAIN
