// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_ns: segids across IPC and user namespaces (containers).
 *
 * By default a segid resolves only in its maker's IPC namespace.  The
 * host_ids module parameter makes segids resolve host-wide (as in the
 * classic modules); XPMEM_EXT_MAKE_ANY_NS does it for one segment, and
 * only together with an authorization key.  The permit mode compares the
 * kernel's uids: a user namespace's root is the host uid it maps to.
 *
 * Every probe runs in a forked child that enters the namespaces first and
 * exits with the GET's errno (0: the GET worked and an attachment read
 * the owner's bytes).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

#define NS_LEN		(4 * PAGE)
#define HOST_IDS	"/sys/module/xpmem/parameters/host_ids"
#define UID_A		1000	/* the owner, and container A's root */
#define UID_B		1001	/* container B's root */

static const char NS_AUTH[] = "a secret only the job's ranks know";

/* ---- namespaces ---------------------------------------------------------- */

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* host_ids: 'Y' or 'N' (-1 if the parameter cannot be read). */
static int host_ids_get(void)
{
	char c = 0;
	int fd = open(HOST_IDS, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (read(fd, &c, 1) != 1)
		c = -1;
	close(fd);
	return c;
}

static int host_ids_set(char c)
{
	const char v[2] = { c, 0 };

	return write_file(HOST_IDS, v);
}

/*
 * Become @uid (if not 0) and enter a new user namespace whose root is
 * @uid, then a new IPC namespace: what a rootless container's process
 * is.  Return: 0, or the errno of the step that failed (EPERM from
 * unshare: user namespaces are off; the caller skips).
 */
static int enter_container(uid_t uid)
{
	char map[64];

	if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		return errno;
	/* a changed uid makes the process undumpable: /proc/self root's */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		return errno;
	if (unshare(CLONE_NEWUSER | CLONE_NEWIPC))
		return errno;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned int)uid);
	if (write_file("/proc/self/setgroups", "deny\n") ||
	    write_file("/proc/self/uid_map", map) ||
	    write_file("/proc/self/gid_map", map))
		return errno ? errno : EIO;
	return 0;
}

/* ---- the probing child ------------------------------------------------- */

struct ns_probe {
	xpmem_segid_t segid;
	const char *auth;	/* EXT_GET with this key, else a classic GET */
	bool new_ipc;		/* unshare(CLONE_NEWIPC) first */
	uid_t container;	/* if not 0: enter_container(container) first */
};

/* In the child: exit with the GET's errno, 0 if it worked end to end. */
static void ns_probe_child(const struct ns_probe *p)
{
	xpmem_apid_t apid;
	unsigned char *va;
	void *at;
	int fd, err;

	if (p->container) {
		err = enter_container(p->container);
		if (err)
			_exit(err == EPERM || err == EINVAL ? 200 : 201);
	} else if (p->new_ipc && unshare(CLONE_NEWIPC)) {
		_exit(202);
	}
	fd = xp_open();
	if (fd < 0)
		_exit(203);
	if (p->auth) {
		struct xpmem_ext_get g = {
			.segid = p->segid, .flags = XPMEM_RDWR,
		};

		g.flags |= XPMEM_EXT_GET_AUTH;
		g.auth_len = strlen(p->auth);
		memcpy(g.auth, p->auth, g.auth_len);
		err = -xp_ioctl(fd, XPMEM_CMD_EXT_GET, &g);
		apid = g.apid;
	} else {
		err = -xp_get(fd, p->segid, XPMEM_RDWR, &apid);
	}
	if (err)
		_exit(err);
	if (xp_attach(fd, apid, 0, NS_LEN, NULL, &at))
		_exit(204);
	va = at;
	for (size_t i = 0; i < NS_LEN; i++)
		if (va[i] != (unsigned char)('A' + i % 26))
			_exit(205);
	_exit(0);
}

/* Run @p in a child; its exit code (200: user namespaces unavailable). */
static int ns_probe(const struct ns_probe *p)
{
	pid_t pid = fork_child();

	if (pid < 0)
		return -1;
	if (pid == 0)
		ns_probe_child(p);
	return wait_child(pid);
}

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(ns) {
	int fd;
	unsigned char *buf;
	int saved;		/* host_ids at setup */
};

FIXTURE_SETUP(ns)
{
	self->fd = xp_open();
	if (self->fd < 0)
		SKIP(return, "no %s (module not loaded)", XPMEM_DEV_PATH);
	self->buf = map_anon(NS_LEN);
	ASSERT_NE(NULL, self->buf);
	for (size_t i = 0; i < NS_LEN; i++)
		self->buf[i] = 'A' + i % 26;
	self->saved = host_ids_get();
	ASSERT_TRUE(self->saved == 'Y' || self->saved == 'N');
	ASSERT_EQ(0, host_ids_set('N'));
}

FIXTURE_TEARDOWN(ns)
{
	if (self->fd < 0)
		return;
	if (self->saved == 'Y' || self->saved == 'N')
		host_ids_set(self->saved);
	close(self->fd);
}

static int ext_make_ns(int fd, void *buf, int mode, unsigned int flags,
		       const char *auth, xpmem_segid_t *segid)
{
	struct xpmem_ext_make m = {
		.vaddr = (uintptr_t)buf, .size = NS_LEN, .flags = flags,
		.mode = mode,
	};
	int ret;

	if (auth) {
		m.flags |= XPMEM_EXT_MAKE_AUTH;
		m.auth_len = strlen(auth);
		memcpy(m.auth, auth, m.auth_len);
	}
	ret = xp_ioctl(fd, XPMEM_CMD_EXT_MAKE, &m);
	*segid = m.segid;
	return ret;
}

static uint64_t query_features(int fd)
{
	struct xpmem_ext_query q = { 0 };

	return xp_ioctl(fd, XPMEM_CMD_EXT_QUERY, &q) ? 0 : q.features;
}

/* ---- tests --------------------------------------------------------------- */

/* The safe default: a segid means nothing in another IPC namespace. */
TEST_F(ns, other_ipc_namespace_enoent_by_default)
{
	struct ns_probe p = { 0 };

	ASSERT_EQ(0, xp_make(self->fd, self->buf, NS_LEN, 0666, &p.segid));
	ASSERT_EQ(0, ns_probe(&p));		/* same namespace: works */
	p.new_ipc = true;
	ASSERT_EQ(ENOENT, ns_probe(&p));
	ASSERT_EQ(0, xp_remove(self->fd, p.segid));
}

/* host_ids=Y: segids resolve host-wide, as in the classic modules. */
TEST_F(ns, host_ids_resolves_across_ipc_namespaces)
{
	struct ns_probe p = { .new_ipc = true };

	ASSERT_EQ(0, query_features(self->fd) & XPMEM_EXT_KF_HOST_IDS);
	ASSERT_EQ(0, xp_make(self->fd, self->buf, NS_LEN, 0666, &p.segid));
	ASSERT_EQ(0, host_ids_set('Y'));
	ASSERT_NE(0, query_features(self->fd) & XPMEM_EXT_KF_HOST_IDS);
	ASSERT_EQ(0, ns_probe(&p));
	ASSERT_EQ(0, host_ids_set('N'));
	ASSERT_EQ(ENOENT, ns_probe(&p));
	ASSERT_EQ(0, xp_remove(self->fd, p.segid));
}

/* One segment crosses namespaces, and only with its key. */
TEST_F(ns, any_ns_segment_needs_its_key)
{
	struct ns_probe p = { .new_ipc = true };
	xpmem_segid_t plain;

	ASSERT_NE(0, query_features(self->fd) & XPMEM_EXT_KF_ANY_NS);
	ASSERT_EQ(-EINVAL, ext_make_ns(self->fd, self->buf, 0666,
				       XPMEM_EXT_MAKE_ANY_NS, NULL, &p.segid));
	ASSERT_EQ(0, ext_make_ns(self->fd, self->buf, 0666,
				 XPMEM_EXT_MAKE_ANY_NS, NS_AUTH, &p.segid));
	p.auth = NS_AUTH;
	ASSERT_EQ(0, ns_probe(&p));
	p.auth = "a wrong key";
	ASSERT_EQ(EACCES, ns_probe(&p));
	p.auth = NULL;				/* the classic GET */
	ASSERT_EQ(EACCES, ns_probe(&p));
	/* the same key without ANY_NS stays in its namespace */
	ASSERT_EQ(0, ext_make_ns(self->fd, self->buf, 0666, 0, NS_AUTH,
				 &plain));
	p.segid = plain;
	p.auth = NS_AUTH;
	ASSERT_EQ(ENOENT, ns_probe(&p));
	p.new_ipc = false;
	ASSERT_EQ(0, ns_probe(&p));
	ASSERT_EQ(0, xp_remove(self->fd, plain));
}

/*
 * Containers with user namespaces: the owner is host uid UID_A with mode
 * 0600.  A container whose root maps to UID_A gets it (across IPC
 * namespaces with the key, or with host_ids=Y without); one whose root
 * maps to UID_B is refused by the mode, its root notwithstanding; with
 * mode 0666 it gets it too.
 */
TEST_F(ns, user_namespaces_compare_host_uids)
{
	struct chan ch;
	xpmem_segid_t ids[3];
	struct ns_probe p = { 0 };
	pid_t owner;
	char go = 0;
	int rc;

	ASSERT_EQ(0, chan_init(&ch));
	owner = fork_child();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		int fd;

		chan_child(&ch);
		if (setresgid(UID_A, UID_A, UID_A) ||
		    setresuid(UID_A, UID_A, UID_A))
			_exit(1);
		fd = xp_open();
		if (fd < 0 ||
		    ext_make_ns(fd, self->buf, 0600, XPMEM_EXT_MAKE_ANY_NS,
				NS_AUTH, &ids[0]) ||
		    xp_make(fd, self->buf, NS_LEN, 0600, &ids[1]) ||
		    xp_make(fd, self->buf, NS_LEN, 0666, &ids[2]) ||
		    send_msg(ch.to_parent[1], ids, sizeof(ids)))
			_exit(2);
		recv_msg(ch.to_child[0], &go, 1);	/* until the parent is done */
		_exit(0);
	}
	chan_parent(&ch);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], ids, sizeof(ids)));

	p.segid = ids[0];
	p.auth = NS_AUTH;
	p.container = UID_A;
	rc = ns_probe(&p);
	if (rc == 200) {
		close(ch.to_child[1]);
		wait_child(owner);
		SKIP(return, "no user namespaces for unprivileged users here");
	}
	EXPECT_EQ(0, rc);
	p.container = UID_B;
	EXPECT_EQ(EACCES, ns_probe(&p));

	p.segid = ids[1];
	p.auth = NULL;
	p.container = UID_A;
	EXPECT_EQ(ENOENT, ns_probe(&p));		/* other IPC namespace */
	ASSERT_EQ(0, host_ids_set('Y'));
	EXPECT_EQ(0, ns_probe(&p));
	p.container = UID_B;
	EXPECT_EQ(EACCES, ns_probe(&p));
	p.segid = ids[2];
	EXPECT_EQ(0, ns_probe(&p));		/* 0666 */
	ASSERT_EQ(0, host_ids_set('N'));

	ASSERT_EQ(1, write(ch.to_child[1], &go, 1));
	ASSERT_EQ(0, wait_child(owner));
}

TEST_HARNESS_MAIN
