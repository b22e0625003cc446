// SPDX-License-Identifier: GPL-2.0
/*
 * lib_xuser.c - libxpmem between processes of different users, on both
 * backends: owners are alice, peers bob and carol (uid/gid 1000/1001/1002,
 * no shared group), each a child of the test (root; skips without).
 * Children report through exit statuses; synchronisation is by pipes,
 * never by sleeping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <xpmem.h>

#include "kselftest_harness.h"
#include "lib_test.h"

#define NPAGES		4
/* ---- peers of another uid ----------------------------------------------- */

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
	int st_ = wait_status(pid); \
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
		b = map_anon(page);
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
		buf = map_anon(size);
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
		if (IS_SHM && errno != EACCES)
			_exit(15);
		if (probe((volatile char *)(at + page), 1, 1) != SIGSEGV)
			_exit(16);
		if (probe((volatile char *)(at + page), 0, 1) != 0 || check(at, size, 5))
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
		b = map_anon(page);
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
		if (IS_SHM && check(kept, page, 22))
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
			st = wait_status(owner);
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

	if (!IS_SHM)
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
		if (IS_SHM)
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

	if (!IS_SHM)
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

	if (!IS_SHM)
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

TEST_HARNESS_MAIN
