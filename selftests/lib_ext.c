// SPDX-License-Identifier: GPL-2.0
/*
 * lib_ext.c - libxpmem's extension calls on both backends: attach
 * options, keys and authorization keys, read-only and any-namespace
 * exports, makev, copies, the copy queue, and the io_uring prep helpers.
 * Same fixture and rules as lib_xpmem.c (lib_test.h): the test names are
 * lib.<name> as there.
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
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing.h>
#include <xpmem.h>

#include "kselftest_harness.h"
#include "lib_test.h"
#include "uring_probe.h"

/* ---- fixture ------------------------------------------------------------ */

LIB_FIXTURE();

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
	ASSERT_EQ(SIGSEGV, probe((volatile char *)(rd + page), 1, 1));
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
	ASSERT_EQ(0, wait_status(pid));
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
	ASSERT_EQ(0, wait_status(pid));
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
		int st = wait_status(pid);

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
	ASSERT_EQ(0, wait_status(pid));	/* a wait status: exit 0 */
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
	unsigned char *r = map_anon(12 * page), *one = xpmem_ext_alloc(page, 0);
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
	ASSERT_EQ(0, wait_status(pid));
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

/* ---- copies, populate and io_uring (XPMEM_EXT_1.2) --------------------- */

/* 1 MiB and three pages (fixture lib sets page) */
#define COPY_SIZE	(1024 * 1024 + 3 * page)

/* fill()'s byte at @i of @seed: what a copy from offset @i must bring. */
static int check_from(const unsigned char *p, size_t off, size_t len,
		      unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(seed, off + i))
			return -1;
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
	st = wait_status(o->pid);
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
	unsigned char *buf = map_anon(COPY_SIZE);
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
	unsigned char *buf = map_anon(COPY_SIZE);
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
	unsigned char *buf = map_anon(COPY_SIZE);
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
	unsigned char *buf = map_anon(COPY_SIZE);
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
