// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_answer.c - what the owner answers on a segment's or a key's socket.
 *
 * Peers of other uids cannot read /proc/<pid>/fd, so the owner answers
 * their lookups itself with one struct shm_grant (shm_wire.h): it checks
 * the connection's SO_PEERCRED and SO_PEERGROUPS against the segment's
 * permit mode (shm_perm.c, without capabilities: root peers use /proc)
 * and sends read-only descriptors of the registry and the object, plus
 * the object's read-write descriptor when the mode lets that peer write.
 * A descriptor gives the whole object, not one segment's range, so the
 * grant is also capped by the other segments on the same allocation:
 * every byte of it must lie in a live segment whose mode grants that peer
 * the access (else less or nothing, with the reason).
 *
 * Invariants: an answer is one MSG_DONTWAIT|MSG_NOSIGNAL send and never
 * blocks; the descriptors sent are opened once, by the make of the first
 * segment whose mode grants group or other read, and kept, so answering
 * needs no new descriptor (it works in an owner at EMFILE); everything
 * here runs under the owner lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shm.h"

static struct shm_owner *const own = &xpmem_lib_shm_owner;

/* The part of an object that one segment grants, and at what access. */
struct span {
	uint64_t start, end;
	enum shm_access access;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * object_access_locked - the most that a descriptor of @b's object may
 * give @who, at most @want.
 *
 * A descriptor opens the whole object, not a segment's range: an access is
 * granted only if every byte the application uses of the object lies in a
 * live segment whose mode grants @who at least that access.
 *
 * Return: an enum shm_access, or -ENOMEM.
 */
static int object_access_locked(const struct shm_backing *b,
				enum shm_access want,
				const struct shm_cred *who)
{
	struct span *sp = calloc(b->nsegs, sizeof(*sp));
	const struct shm_segment *seg;
	unsigned int i, n = 0;
	uint64_t end;
	int a;

	if (!sp)
		return -ENOMEM;
	for (seg = own->segments; seg && n < b->nsegs; seg = seg->next) {
		if (seg->b != b)
			continue;
		a = xpmem_lib_shm_mode_access(&seg->info, who);
		if (a == SHM_ACCESS_NONE)
			continue;
		sp[n].start = seg->info.offset;
		sp[n].end = seg->info.offset + seg->info.size;
		sp[n].access = (enum shm_access)a;
		n++;
	}
	qsort(sp, n, sizeof(*sp), span_cmp);
	for (a = (int)want; a > SHM_ACCESS_NONE; a--) {
		end = 0;
		for (i = 0; i < n && end < b->used; i++) {
			if ((int)sp[i].access < a)
				continue;
			if (sp[i].start > end)
				break;		/* a hole */
			if (sp[i].end > end)
				end = sp[i].end;
		}
		if (end >= b->used)
			break;
	}
	free(sp);
	return a;
}

/* Send @g and @n descriptors in one message; never blocks, never SIGPIPE. */
static int grant_send(int c, struct shm_grant *g, const int *fds, int n)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * SHM_GRANT_MAX_FDS)];
	} cm;
	struct iovec iov = { .iov_base = g, .iov_len = sizeof(*g) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cmsg;
	ssize_t r;

	if (n) {
		memset(&cm, 0, sizeof(cm));
		msg.msg_control = cm.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
		memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * (size_t)n);
	}
	r = sendmsg(c, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (r == (ssize_t)sizeof(*g))
		return 0;
	return r < 0 ? -errno : -EIO;
}

/*
 * peer_groups - the supplementary groups of the peer on @c: in @buf if
 * they fit in its @n entries, else in a new allocation.
 *
 * Return: the groups, or NULL with *count 0 when they cannot be read (the
 * check then knows the primary group only, which can only grant less).
 */
static gid_t *peer_groups(int c, gid_t *buf, size_t n, int *count)
{
	socklen_t len = (socklen_t)(n * sizeof(gid_t));
	gid_t *g = buf;

	*count = 0;
	if (getsockopt(c, SOL_SOCKET, SO_PEERGROUPS, g, &len) != 0) {
		if (errno != ERANGE || !(g = malloc(len)))
			goto fail;
		if (getsockopt(c, SOL_SOCKET, SO_PEERGROUPS, g, &len) != 0) {
			free(g);
			goto fail;
		}
	}
	*count = (int)(len / sizeof(gid_t));
	return g;

fail:
	xpmem_lib_log("accept: SO_PEERGROUPS: %s; the peer's supplementary "
		      "groups are not considered", strerror(errno));
	return NULL;
}

/*
 * xpmem_lib_shm_answer_locked - answer the lookup connection @c on
 * @seg's socket.
 *
 * Root and peers of the segment's uid read the registry and the object
 * through /proc and get nothing.  Others get a struct shm_grant: the
 * descriptors their credentials allow, or none and the errno of the
 * refusal.
 */
void xpmem_lib_shm_answer_locked(struct shm_segment *seg, int c)
{
	struct shm_backing *b = seg->b;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	gid_t gbuf[64], *groups;
	struct shm_cred who = { .ipc_owner = 0 };
	struct shm_grant g;
	int fds[SHM_GRANT_MAX_FDS] = { own->reg_rofd, b->rofd, b->fd };
	int want, got, ret, n;

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    cred.uid == seg->info.uid || cred.uid == 0)
		return;
	groups = peer_groups(c, gbuf, sizeof(gbuf) / sizeof(gbuf[0]),
			     &who.ngroups);
	who.uid = cred.uid;
	who.gid = cred.gid;
	who.groups = groups;

	memset(&g, 0, sizeof(g));
	g.magic = SHM_GRANT_MAGIC;
	g.slot = seg->slot;
	g.reg_dev = own->reg_dev;
	g.reg_ino = own->reg_ino;
	g.seg = seg->info;

	want = (int)xpmem_lib_shm_mode_access(&seg->info, &who);
	got = want ? object_access_locked(b, (enum shm_access)want, &who) :
	      SHM_ACCESS_NONE;
	if (got > SHM_ACCESS_NONE && (own->reg_rofd < 0 || b->rofd < 0))
		got = -EBADF;	/* make opens them for such modes */
	if (got < 0) {
		g.error = EAGAIN;
		g.limit = SHM_LIMIT_OWNER;
		got = SHM_ACCESS_NONE;
	} else if (want == SHM_ACCESS_NONE) {
		g.error = EACCES;
		g.limit = SHM_LIMIT_MODE;
	} else if (got < want) {
		g.limit = SHM_LIMIT_SPAN;
		if (got == SHM_ACCESS_NONE)
			g.error = EACCES;
	}
	g.access = (uint32_t)got;
	n = shm_grant_fds(g.access);
	if (n)
		fds[n - 1] = seg->bell_r;	/* the bell comes last */
	ret = grant_send(c, &g, fds, n);
	if (ret && g.access && ret != -EPIPE && ret != -ECONNRESET) {
		/* E.g. ETOOMANYREFS: too many of our descriptors in flight. */
		xpmem_lib_log("accept: cannot send descriptors of %#llx to uid "
			      "%u: %s", (unsigned long long)seg->segid,
			      (unsigned int)cred.uid, strerror(-ret));
		g.access = SHM_ACCESS_NONE;
		g.error = EAGAIN;
		g.limit = SHM_LIMIT_OWNER;
		grant_send(c, &g, NULL, 0);
	}
	if (groups != gbuf)
		free(groups);
}

/* Whether @a holds @seg's authorization key: every byte compared. */
static int auth_ok(const struct shm_segment *seg, const struct shm_auth *a)
{
	unsigned int diff = a->len ^ seg->auth_len;
	size_t i;

	for (i = 0; i < XPMEM_EXT_AUTH_MAX; i++)
		diff |= (unsigned int)(a->key[i] ^ seg->auth[i]);
	return a->magic == SHM_AUTH_MAGIC && a->segid == (uint64_t)seg->segid &&
	       !a->reserved && !diff;
}

/*
 * xpmem_lib_shm_answer_auth_locked - the answer to a peer of @seg that
 * presented @a (NULL: a malformed or missing request): a refusal, or
 * what xpmem_lib_shm_answer_locked() sends, or to a peer that reads /proc
 * (our uid, root) a grant of access NONE and error 0 that says go ahead.
 */
void xpmem_lib_shm_answer_auth_locked(struct shm_segment *seg, int c,
				      const struct shm_auth *a)
{
	struct shm_grant g = {
		.magic = SHM_GRANT_MAGIC, .slot = seg->slot,
		.seg = { .segid = (uint64_t)seg->segid, .mode = seg->info.mode,
			 .uid = seg->info.uid, .gid = seg->info.gid },
	};
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (!a || !auth_ok(seg, a)) {
		g.error = EACCES;
		g.limit = SHM_LIMIT_AUTH;
	} else if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
		   cred.uid != seg->info.uid && cred.uid != 0) {
		xpmem_lib_shm_answer_locked(seg, c);
		return;
	}
	grant_send(c, &g, NULL, 0);
}

/* Tell a peer on a key's socket which segment has the key. */
void xpmem_lib_shm_answer_key(const struct shm_segment *seg, int c)
{
	struct shm_key_answer a = {
		.magic = SHM_KEY_MAGIC, .segid = (uint64_t)seg->segid,
	};

	if (send(c, &a, sizeof(a), MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(a))
		xpmem_lib_log("accept thread: answering a key lookup: %s",
			      strerror(errno));
}

/*
 * xpmem_lib_shm_grant_fds_open_locked - the read-only descriptors of the
 * registry and of @b's object that the answers send; opened once, by the
 * first make whose mode grants group or other read, and kept (so that
 * answering needs no descriptor).
 */
int xpmem_lib_shm_grant_fds_open_locked(struct shm_backing *b)
{
	int f;

	if (own->reg_rofd < 0) {
		f = xpmem_lib_shm_reopen_rdonly(own->reg_fd);
		if (f < 0)
			goto fail;
		own->reg_rofd = f;
	}
	if (b->rofd < 0) {
		f = xpmem_lib_shm_reopen_rdonly(b->fd);
		if (f < 0)
			goto fail;
		b->rofd = f;
	}
	return 0;

fail:
	xpmem_lib_log("make: cannot reopen /proc/self/fd read-only for peers "
		      "of other uids: %s", strerror(-f));
	return f;
}


/* Tell a peer whose request waited that its segment was removed. */
void xpmem_lib_shm_answer_removed(int c, uint64_t segid)
{
	struct shm_grant g = {
		.magic = SHM_GRANT_MAGIC, .error = ENOENT,
		.seg = { .segid = segid },
	};

	grant_send(c, &g, NULL, 0);
}
