// SPDX-License-Identifier: GPL-2.0
/*
 * lib_wire.c - the shm backend's socket protocol between processes of
 * different library versions (lib/shm_wire.h): a peer that gets an
 * answer in an older layout refuses it with EPROTO and, with XPMEM_DEBUG,
 * one line that says so, instead of reading fields where they no longer
 * are.
 *
 * The test plays the owner of an older library: it listens on the
 * abstract socket of a made-up segid, reads the request of the get, and
 * answers with a grant of the previous layout.  The get runs in a child
 * with XPMEM_BACKEND=shm (so the suite means the same on the module and
 * on the fallback) and reports its errno through its exit status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xpmem.h>

#include "shm_wire.h"

#include "kselftest_harness.h"

#define ERR_MAX		4096
#define WAIT_MS		10000	/* a child that never connects: a failure */
#define OTHER_UID	65534

/*
 * The grant of the previous wire version ("XPGMGRB3", 96 bytes): the
 * slot's fields copied one by one after the verdict.
 */
#define OLD_GRANT_MAGIC	0x5850474d47524233ULL

struct old_grant {
	uint64_t magic;
	uint64_t segid;
	int32_t error;
	uint32_t access;
	uint32_t limit;
	uint32_t slot;
	uint32_t mode, uid, gid, page_size;
	uint64_t offset, size, obj_dev, obj_ino, reg_dev, reg_ino;
};

_Static_assert(sizeof(struct old_grant) == 96, "old grant size");

/* The made-up segment and its socket. */
struct fake_owner {
	uint64_t segid;
	int lsock;
};

/* Listen on the socket of a fresh segid of the shm backend; 0 or -1. */
static int fake_owner_listen(struct fake_owner *o)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	uint64_t r;
	int n;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -1;
	o->segid = SHM_ID_MARK | (r & SHM_ID_RANDOM);
	n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
		     SHM_SOCK_PREFIX "%012llx", (unsigned long long)o->segid);
	o->lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (o->lsock < 0)
		return -1;
	if (bind(o->lsock, (struct sockaddr *)&sun,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			     (size_t)n)) ||
	    listen(o->lsock, 4)) {
		close(o->lsock);
		return -1;
	}
	return 0;
}

/*
 * Answer the one get on @o's socket the way an owner of the previous
 * version does: read its struct shm_auth, send @g.  0, or -1 (no get
 * within WAIT_MS, or a request that is not a struct shm_auth for the
 * segid).
 */
static int fake_owner_answer(struct fake_owner *o, const struct old_grant *g)
{
	struct pollfd pfd = { .fd = o->lsock, .events = POLLIN };
	struct shm_auth a;
	ssize_t n;
	int c;

	if (poll(&pfd, 1, WAIT_MS) != 1)
		return -1;
	c = accept4(o->lsock, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return -1;
	pfd.fd = c;
	n = poll(&pfd, 1, WAIT_MS) == 1 ? recv(c, &a, sizeof(a), MSG_WAITALL) :
	    -1;
	if (n == (ssize_t)sizeof(a) && a.magic == SHM_AUTH_MAGIC &&
	    a.segid == o->segid &&
	    send(c, g, sizeof(*g), MSG_NOSIGNAL) == (ssize_t)sizeof(*g)) {
		close(c);
		return 0;
	}
	close(c);
	return -1;
}

/*
 * get_child - a child that gets @segid with XPMEM_BACKEND=shm and
 * XPMEM_DEBUG=1, as @uid if not -1, presenting @key if not NULL; its
 * stderr goes to the write end of @errpipe.  Exit status: the get's
 * errno, 0 if it succeeded, 100+ if the child could not set up.
 */
static void get_child(uint64_t segid, int uid, const char *key, int errpipe[2])
{
	xpmem_apid_t apid;

	close(errpipe[0]);
	if (dup2(errpipe[1], STDERR_FILENO) < 0)
		_exit(100);
	if (setenv("XPMEM_BACKEND", "shm", 1) ||
	    setenv("XPMEM_DEBUG", "1", 1))
		_exit(101);
	if (uid >= 0 &&
	    (setgroups(0, NULL) || setgid((gid_t)uid) || setuid((uid_t)uid)))
		_exit(102);
	errno = 0;
	apid = key ? xpmem_ext_get((xpmem_segid_t)segid, XPMEM_RDWR, key,
				   strlen(key)) :
		     xpmem_get((xpmem_segid_t)segid, XPMEM_RDWR,
			       XPMEM_PERMIT_MODE, NULL);
	_exit(apid == -1 ? (errno ? errno : 103) : 0);
}

/*
 * old_owner_get - a get of a child (see get_child) answered with @g by a
 * fake owner of the previous version.  Returns the child's exit status,
 * or -1; the child's stderr in @err.
 */
static int old_owner_get(struct old_grant *g, int uid, const char *key,
			 char *err)
{
	struct fake_owner o;
	int p[2], status, answered;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	if (fake_owner_listen(&o))
		return -1;
	g->segid = o.segid;
	g->slot = (uint32_t)(o.segid % SHM_REG_SLOTS);
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		get_child(o.segid, uid, key, p);
	close(p[1]);
	answered = fake_owner_answer(&o, g);
	close(o.lsock);
	while (n < ERR_MAX - 1 && (r = read(p[0], err + n, ERR_MAX - 1 - n)) > 0)
		n += (size_t)r;
	err[n] = 0;
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || answered)
		return -1;
	return WEXITSTATUS(status);
}

/*
 * A peer of the owner's uid that presents a key waits for the owner's
 * verdict on it: a previous-version grant that says "go ahead" is not
 * taken for one.
 */
TEST(old_grant_verdict_is_eproto)
{
	struct old_grant g = { .magic = OLD_GRANT_MAGIC, .error = 0,
			       .access = SHM_ACCESS_NONE };
	char err[ERR_MAX];

	ASSERT_EQ(EPROTO, old_owner_get(&g, -1, "s3cret", err));
	TH_LOG("stderr: %s", err);
	ASSERT_NE(NULL, strstr(err, "older wire version"));
}

/*
 * A peer of another uid gets its descriptors from the owner: a
 * previous-version grant (here a refusal) is refused as such, not read
 * as a refusal for the reasons at the fields' old places.
 */
TEST(old_grant_to_other_uid_is_eproto)
{
	struct old_grant g = { .magic = OLD_GRANT_MAGIC, .error = EACCES,
			       .access = SHM_ACCESS_NONE,
			       .limit = SHM_LIMIT_MODE, .mode = 0600 };
	char err[ERR_MAX];

	if (geteuid() != 0)
		SKIP(return, "needs root to run a peer of another uid");
	ASSERT_EQ(EPROTO, old_owner_get(&g, OTHER_UID, NULL, err));
	TH_LOG("stderr: %s", err);
	ASSERT_NE(NULL, strstr(err, "older wire version"));
}

TEST_HARNESS_MAIN
