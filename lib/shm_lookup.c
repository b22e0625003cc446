// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_lookup.c - finding a segment's owner, the peer's half of a get.
 *
 * A get connects to the segid's abstract socket and reads SO_PEERCRED:
 * the owner's pid as this process's PID namespace numbers it (0 when the
 * owner is outside it: ENOENT) and its euid as of its listen(); no name,
 * no live segment.  It presents its authorization key (struct shm_auth,
 * none if it has none), then goes one of two ways:
 *
 * - through /proc (shm_proc.c) when our euid is the owner's, or we are
 *   root; with a key, after the owner's verdict on it;
 * - from the owner, for peers of any other uid: the owner's accept thread
 *   checks our credentials and answers with one struct shm_grant and
 *   SCM_RIGHTS (shm_answer.c), which we wait for at most CONNECT_WAIT_S
 *   (a stopped owner: EAGAIN) and check in full (size, magic, segid,
 *   descriptor count, each descriptor's type, inode and access mode, the
 *   registry's slot against the answer and the owner's lock on the
 *   registry) before keeping anything.
 *
 * Invariants: every descriptor received is closed on any error; a peer
 * without room for them gets EMFILE; an XPMEM_RDONLY permit keeps only the
 * read-only object descriptor; a key names a segment only if the key's
 * socket and the segment's belong to the same process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

/* How long a get waits for room in a full listen queue and for an answer
 * (seconds). */
#define CONNECT_WAIT_S		2

/* What the owner said about the key a peer that reads /proc presented. */
enum auth_verdict {
	AUTH_CONFIRMED,		/* a grant of access NONE, error 0: go on */
	AUTH_UNCONFIRMED,	/* closed unanswered: the slot tells why */
};

/*
 * name_connect - connect to the abstract name @sun, waiting at most
 * CONNECT_WAIT_S for room in a full listen queue, and read the listener's
 * credentials.  Return: 0 with *@sock set, or -errno.
 */
static int name_connect(const struct sockaddr_un *sun, socklen_t alen,
			int *sock, struct ucred *cred)
{
	struct timeval wait = { .tv_sec = CONNECT_WAIT_S };
	socklen_t len = sizeof(*cred);
	int fd, ret;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (const struct sockaddr *)sun, alen) ? -errno : 0;
	if (ret == -EAGAIN) {
		if (fcntl(fd, F_SETFL, 0) == 0 &&
		    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait,
			       sizeof(wait)) == 0)
			ret = connect(fd, (const struct sockaddr *)sun, alen) ?
			      -errno : 0;
	}
	memset(cred, 0, sizeof(*cred));
	if (!ret && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len))
		ret = -errno;
	if (ret)
		close(fd);
	else
		*sock = fd;
	return ret;
}

/*
 * owner_connect - connect to @segid's socket; return the connection in
 * @sock and, in @cred, the credentials of the process that listens on it
 * as of its listen(): its pid in this process's PID namespace, its euid
 * and egid.
 *
 * The owner's accept thread accepts the connection, and answers it when
 * our euid differs from its own (get_from_owner).  A full listen queue
 * (more gets in flight than the backlog) is waited out for at most
 * CONNECT_WAIT_S.
 */
static int owner_connect(xpmem_segid_t segid, int *sock, struct ucred *cred)
{
	struct sockaddr_un sun;
	socklen_t alen = xpmem_lib_shm_sockaddr(segid, &sun);
	int fd = -1, ret;

	ret = name_connect(&sun, alen, &fd, cred);
	if (ret == -ECONNREFUSED || ret == -ENOENT) {
		xpmem_lib_log("get %#llx: no such segment in this network "
			      "namespace", (unsigned long long)segid);
		return -ENOENT;
	}
	if (ret == -EAGAIN)
		xpmem_lib_log("get %#llx: the segment's listen queue stayed "
			      "full for %d s", (unsigned long long)segid,
			      CONNECT_WAIT_S);
	if (ret)
		return ret;
	if (cred->pid <= 0) {
		xpmem_lib_log("get %#llx: its owner is outside this PID "
			      "namespace", (unsigned long long)segid);
		close(fd);
		return -ENOENT;
	}
	*sock = fd;
	return 0;
}

/*
 * answer_wait - wait at most CONNECT_WAIT_S for the owner's answer on
 * @fd, across signals.  Return: 0 when it is there, -ETIMEDOUT, -errno.
 */
static int answer_wait(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct timespec deadline;
	int r;

	xpmem_lib_shm_deadline(&deadline, CONNECT_WAIT_S * 1000);
	while ((r = poll(&pfd, 1, xpmem_lib_shm_ms_left(&deadline))) <= 0) {
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/*
 * Keep the descriptors of @msg's SCM_RIGHTS in @fds (up to
 * SHM_GRANT_MAX_FDS, *@nfds of them), close any beyond.  Return: whether
 * the control data held anything else or too many.
 */
static int grant_take_fds(struct msghdr *msg, int *fds, int *nfds)
{
	struct cmsghdr *cmsg;
	int bad = 0, i, k, fd;

	for (cmsg = CMSG_FIRSTHDR(msg); cmsg; cmsg = CMSG_NXTHDR(msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS) {
			bad = 1;
			continue;
		}
		k = (int)((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int),
			       sizeof(fd));
			if (*nfds < SHM_GRANT_MAX_FDS) {
				fds[(*nfds)++] = fd;
			} else {
				close(fd);
				bad = 1;
			}
		}
	}
	return bad;
}

/* Whether the @n bytes at @data start with the magic of an older grant. */
static int grant_old_version(const char *data, size_t n)
{
	uint64_t magic;

	if (n < sizeof(magic))
		return 0;
	memcpy(&magic, data, sizeof(magic));
	return magic == SHM_GRANT_MAGIC_OLD;
}

/*
 * grant_recv - wait at most CONNECT_WAIT_S for the owner's answer on
 * @sock and check its form: exactly one struct shm_grant for @segid, with
 * exactly the descriptors its access announces; a grant of an older wire
 * version is -EPROTO.  The descriptors received are in @fds (*nfds of
 * them) whatever happens: the caller closes them.
 */
static int grant_recv(int sock, xpmem_segid_t segid, struct shm_grant *g,
		      int *fds, int *nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * SHM_GRANT_MAX_FDS)];
	} cm;
	char data[sizeof(*g) + 1];	/* one more: a longer answer is bad */
	struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
	struct msghdr msg;
	int bad, ret;
	ssize_t n;

	memset(g, 0, sizeof(*g));
	ret = answer_wait(sock);
	if (ret == -ETIMEDOUT) {
		xpmem_lib_log("get %#llx: no answer from the owner in %d s "
			      "(its accept thread is busy or the process is "
			      "stopped)", (unsigned long long)segid,
			      CONNECT_WAIT_S);
		return -EAGAIN;
	}
	if (ret)
		return ret;
	do {
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cm.buf;
		msg.msg_controllen = sizeof(cm.buf);
		n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == ECONNRESET || errno == EPIPE) {
			xpmem_lib_log("get %#llx: removed, or its owner "
				      "exited, while we waited",
				      (unsigned long long)segid);
			return -ENOENT;
		}
		return -errno;
	}
	bad = grant_take_fds(&msg, fds, nfds);
	if (n == 0) {
		xpmem_lib_log("get %#llx: the owner closed without an answer "
			      "(a libxpmem that serves only its own uid?)",
			      (unsigned long long)segid);
		return -EACCES;
	}
	if ((msg.msg_flags & MSG_CTRUNC) && *nfds < SHM_GRANT_MAX_FDS) {
		xpmem_lib_log("get %#llx: cannot receive the owner's "
			      "descriptors (out of descriptors?)",
			      (unsigned long long)segid);
		return -EMFILE;
	}
	if (grant_old_version(data, (size_t)n)) {
		xpmem_lib_log("get %#llx: the owner speaks an older wire "
			      "version of the shm backend (another libxpmem "
			      "version): refused", (unsigned long long)segid);
		return -EPROTO;
	}
	if (n == (ssize_t)sizeof(*g))
		memcpy(g, data, sizeof(*g));
	if (bad || (msg.msg_flags & MSG_CTRUNC) || n != (ssize_t)sizeof(*g) ||
	    g->magic != SHM_GRANT_MAGIC || g->seg.segid != (uint64_t)segid ||
	    g->access > SHM_ACCESS_RDWR ||
	    *nfds != shm_grant_fds(g->access)) {
		xpmem_lib_log("get %#llx: malformed answer from the socket's "
			      "owner (%zd bytes, %d descriptors)",
			      (unsigned long long)segid, n, *nfds);
		return -ENOENT;
	}
	return 0;
}

/* Whether @fd is a regular file of that inode, opened with @accmode. */
static int fd_is(int fd, int accmode, uint64_t dev, uint64_t ino)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_ACCMODE) == accmode &&
	       fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

/* Whether @fd is a pipe's read end: a segment's bell (shm_wire.h). */
static int fd_is_bell(int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_ACCMODE) == O_RDONLY &&
	       fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

/* Why the owner refused: one log line. */
static void grant_log_refusal(xpmem_segid_t segid, const struct shm_grant *g,
			      int flags)
{
	const char *want = flags == XPMEM_RDONLY ? "read" : "read-write";

	if (g->limit == SHM_LIMIT_OWNER)
		xpmem_lib_log("get %#llx: the owner could not send its "
			      "descriptors (too many in flight?)",
			      (unsigned long long)segid);
	else if (g->limit == SHM_LIMIT_AUTH)
		xpmem_lib_log("get %#llx: missing or wrong authorization key",
			      (unsigned long long)segid);
	else if (g->limit == SHM_LIMIT_SPAN)
		xpmem_lib_log("get %#llx (mode %#o): %s access refused: a peer "
			      "of another uid gets the owner's whole "
			      "allocation, and parts of it are in no segment "
			      "that grants uid %u as much (granted: %s)",
			      (unsigned long long)segid, g->seg.mode, want,
			      (unsigned int)geteuid(),
			      g->access == SHM_ACCESS_READ ? "read" : "none");
	else
		xpmem_lib_log("get %#llx: mode %#o (owner uid %u gid %u) does "
			      "not grant %s to uid %u",
			      (unsigned long long)segid, g->seg.mode,
			      g->seg.uid, g->seg.gid, want,
			      (unsigned int)geteuid());
}

/*
 * get_from_owner - fill @p for @segid from the owner's answer on @sock:
 * the way for peers of another uid, who cannot read /proc/<owner>/fd.
 *
 * The answer is checked completely before anything is kept: its form
 * (grant_recv), the descriptors (regular files of the announced inodes,
 * the access modes announced), the registry (valid, its slot holds @segid
 * and agrees with the answer) and the owner's lock on it.  An XPMEM_RDONLY
 * permit keeps only the read-only descriptor of the object.
 */
static int get_from_owner(struct shm_permit *p, int sock, xpmem_segid_t segid,
			  int flags, struct shm_reg_slot *s)
{
	int fds[SHM_GRANT_MAX_FDS] = { -1, -1, -1, -1 };
	int nfds = 0, i, ret;
	struct shm_grant g;

	ret = grant_recv(sock, segid, &g, fds, &nfds);
	if (ret)
		goto close_fds;
	if (g.access == SHM_ACCESS_NONE ||
	    (flags == XPMEM_RDWR && g.access != SHM_ACCESS_RDWR)) {
		grant_log_refusal(segid, &g, flags);
		ret = g.error == EAGAIN || g.error == ENOENT ? -g.error :
		      -EACCES;
		goto close_fds;
	}
	if (!fd_is(fds[0], O_RDONLY, g.reg_dev, g.reg_ino) ||
	    !fd_is(fds[1], O_RDONLY, g.seg.obj_dev, g.seg.obj_ino) ||
	    (nfds > 3 &&
	     !fd_is(fds[2], O_RDWR, g.seg.obj_dev, g.seg.obj_ino)) ||
	    !fd_is_bell(fds[nfds - 1]) ||
	    !xpmem_lib_shm_registry_valid(fds[0]) ||
	    g.slot != xpmem_lib_shm_slot_of(segid)) {
		xpmem_lib_log("get %#llx: the owner's descriptors are not what "
			      "its answer says", (unsigned long long)segid);
		ret = -ENOENT;
		goto close_fds;
	}
	if (!xpmem_lib_shm_registry_holds(fds[0], segid, s) ||
	    !xpmem_lib_shm_registry_owned(fds[0])) {
		xpmem_lib_log("get %#llx: removed, or its owner exited, since "
			      "it answered", (unsigned long long)segid);
		ret = -ENOENT;
		goto close_fds;
	}
	if (memcmp(s, &g.seg, sizeof(*s)) || !s->size ||
	    s->page_size < xpmem_lib_page_size() ||
	    (s->page_size & (s->page_size - 1))) {
		xpmem_lib_log("get %#llx: the owner's answer does not match "
			      "its registry", (unsigned long long)segid);
		ret = -ENOENT;
		goto close_fds;
	}
	p->regfd = fds[0];
	i = flags == XPMEM_RDONLY ? 1 : 2;
	p->objfd = fds[i];
	p->bellfd = fds[nfds - 1];
	fds[0] = fds[i] = fds[nfds - 1] = -1;
	ret = 0;

close_fds:
	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret;
}

/* ---- get / release ------------------------------------------------------ */

/*
 * Present @auth (NULL: none) on the owner's socket @sock (shm_wire.h): an owner
 * whose segment has no key never reads it.  A send that fails is not an
 * error here: the answer (or its absence) tells.
 */
static void auth_send(int sock, xpmem_segid_t segid, const void *auth,
		      size_t auth_len)
{
	struct shm_auth a = {
		.magic = SHM_AUTH_MAGIC, .segid = (uint64_t)segid,
		.len = auth ? (uint32_t)auth_len : 0,
	};

	if (auth)
		memcpy(a.key, auth, auth_len);
	if (send(sock, &a, sizeof(a), MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(a))
		xpmem_lib_log("get %#llx: cannot present the authorization "
			      "key: %s", (unsigned long long)segid,
			      strerror(errno));
	explicit_bzero(&a, sizeof(a));
}

/*
 * auth_verdict - a peer that reads /proc and presented a key: the owner's
 * verdict on it in *@v.  AUTH_CONFIRMED: a grant of access NONE and error
 * 0, go ahead.  AUTH_UNCONFIRMED: the owner closed without one, so it has
 * no key for the segment, or the segment is gone (the slot tells which).
 *
 * Return: 0, or -errno of a refusal or of waiting for the answer.
 */
static int auth_verdict(int sock, xpmem_segid_t segid, int flags,
			enum auth_verdict *v)
{
	int fds[SHM_GRANT_MAX_FDS] = { -1, -1, -1, -1 };
	int nfds = 0, i, ret;
	struct shm_grant g;

	ret = grant_recv(sock, segid, &g, fds, &nfds);
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	/* closed unanswered (EOF), or with our request unread (reset) */
	if (ret == -EACCES || ret == -ENOENT) {
		*v = AUTH_UNCONFIRMED;
		return 0;
	}
	if (ret)
		return ret;
	if (g.error || g.access != SHM_ACCESS_NONE) {
		grant_log_refusal(segid, &g, flags);
		return g.error == ENOENT ? -ENOENT : -EACCES;
	}
	*v = AUTH_CONFIRMED;
	return 0;
}

/*
 * Whether the slot @s agrees with what the get presented: a key for a
 * segment with one, none for one without (as the module refuses both).
 */
static int auth_matches(xpmem_segid_t segid, const struct shm_reg_slot *s,
			const void *auth)
{
	if (!(s->flags & SHM_SLOT_AUTH) == !auth)
		return 0;
	xpmem_lib_log("get %#llx: %s", (unsigned long long)segid,
		      auth ? "an authorization key presented for a segment "
			     "that has none" :
			     "the segment needs an authorization key");
	return -EACCES;
}

/*
 * key_answer_recv - the segid the owner of the key socket @fd names,
 * waiting at most CONNECT_WAIT_S.
 */
static int key_answer_recv(int fd, uint64_t *segid)
{
	struct shm_key_answer a;
	ssize_t n;
	int ret = answer_wait(fd);

	if (ret == -ETIMEDOUT) {
		xpmem_lib_log("get by key: no answer from the owner in %d s",
			      CONNECT_WAIT_S);
		return -EAGAIN;
	}
	if (ret)
		return ret;
	do {
		n = recv(fd, &a, sizeof(a), MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(a) && a.magic == SHM_KEY_MAGIC &&
	    xpmem_lib_shm_id_valid((xpmem_segid_t)a.segid)) {
		*segid = a.segid;
		return 0;
	}
	xpmem_lib_log("get by key: %s", n <= 0 ? "removed while we asked" :
		      "a malformed answer");
	return -ENOENT;
}

/**
 * xpmem_lib_shm_lookup - find @req's segment and fill @p's descriptors.
 * @p:   a new permit (descriptors -1), closed by the caller on failure
 * @req: segid, flags and authorization key of the get
 * @s:   receives the segment's registry slot
 *
 * Return: 0, or -ENOENT (no such segment, owner gone), -EACCES (mode,
 * key), -EAGAIN (owner stopped, queue full), -EMFILE, -EPROTO (an owner
 * of an older wire version answered), or another -errno.
 */
int xpmem_lib_shm_lookup(struct shm_permit *p,
			 const struct xpmem_lib_get_req *req,
			 struct shm_reg_slot *s)
{
	enum auth_verdict v = AUTH_CONFIRMED;
	xpmem_segid_t segid = req->segid;
	uid_t me = geteuid();
	struct ucred cred;
	int sock = -1, ret;

	if (!xpmem_lib_shm_id_valid(segid)) {
		xpmem_lib_log("get %#llx: not a segid of the shm backend",
			      (unsigned long long)segid);
		return -ENOENT;
	}
	ret = owner_connect(segid, &sock, &cred);
	if (ret)
		return ret;
	auth_send(sock, segid, req->auth, req->auth_len);
	if (me == cred.uid || me == 0) {
		/* Only a key makes the owner answer us. */
		ret = req->auth ? auth_verdict(sock, segid, req->flags, &v) : 0;
		close(sock);
		if (!ret)
			ret = xpmem_lib_shm_get_through_proc(p, segid,
							     req->flags,
							     cred.pid, s);
	} else {
		ret = get_from_owner(p, sock, segid, req->flags, s);
		close(sock);
	}
	if (!ret)
		ret = auth_matches(segid, s, req->auth);
	if (!ret && v == AUTH_UNCONFIRMED) {
		/* a key the owner never confirmed for a segment with one */
		xpmem_lib_log("get %#llx: the owner did not answer for the "
			      "authorization key", (unsigned long long)segid);
		ret = -EACCES;
	}
	return ret;
}

/**
 * xpmem_lib_shm_lookup_key - the segment made with @req's key.
 * @req:   its key (1..XPMEM_EXT_KEY_MAX bytes)
 * @segid: receives the segment's segid
 *
 * The key's socket names the segment, whose own socket must belong to the
 * same process (a key is then never an alias for someone else's segment).
 *
 * Return: 0, -ENOENT (no such key, or not the key's process's segment),
 * -EAGAIN, or another -errno.
 */
int xpmem_lib_shm_lookup_key(const struct xpmem_lib_get_req *req,
			     xpmem_segid_t *segid)
{
	struct sockaddr_un sun;
	socklen_t alen = xpmem_lib_shm_key_sockaddr(req->key, req->key_len,
						    &sun);
	struct ucred kcred, scred;
	uint64_t id = 0;
	int fd = -1, ret;

	ret = name_connect(&sun, alen, &fd, &kcred);
	if (ret == -ECONNREFUSED || ret == -ENOENT) {
		xpmem_lib_log("get by key: no such key in this network "
			      "namespace");
		return -ENOENT;
	}
	if (ret)
		return ret;
	ret = key_answer_recv(fd, &id);
	close(fd);
	if (ret)
		return ret;
	ret = owner_connect((xpmem_segid_t)id, &fd, &scred);
	if (ret)
		return ret;
	close(fd);
	if (scred.pid != kcred.pid) {
		xpmem_lib_log("get by key: the key's process does not own "
			      "segment %#llx", (unsigned long long)id);
		return -ENOENT;
	}
	*segid = (xpmem_segid_t)id;
	return 0;
}
