// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_owner.c - the owner side of the shm backend: backings (memory that
 * sits on a shared object), the registry, xpmem_make/xpmem_remove and the
 * allocator.
 *
 * A backing is either an allocator block (xpmem_ext_alloc) or private
 * anonymous memory migrated in place onto a shared object by xpmem_make:
 * one range, or (xpmem_ext_makev, a "vector" backing) several ranges laid
 * out one after the other in one object, so that a peer maps the segment
 * as one range of one object.  Migration copies the ranges into a new
 * object and maps the object MAP_SHARED|MAP_FIXED over the same addresses
 * (each range at its offset); removing the last segment of a migrated
 * backing, or fork() in the child, turns it back into private anonymous
 * memory the same way.  A vector backing has exactly one segment: its
 * ranges cannot be exported again, whole or in part, while it lives.  Both moves race with other threads
 * touching the range: a store made by another thread during the copy can
 * be lost.  Callers must not use the range concurrently with make/remove.
 *
 * Each segment has a listening abstract socket named from its segid
 * (shm.h): the name keeps the segid unique while the segment lives, and a
 * peer learns the owner's pid from it with SO_PEERCRED.
 *
 * Peers of other uids.  They cannot read /proc/<pid>/fd, so the accept
 * thread answers their lookups itself (shm.h, struct shm_grant): it checks
 * the connection's SO_PEERCRED and SO_PEERGROUPS against the segment's
 * permit mode (the SysV check of shm_peer.c, without capabilities: root
 * peers use /proc) and sends read-only descriptors of the registry and the
 * object, plus the object's read-write descriptor when the mode lets that
 * peer write.  A descriptor gives the whole object, not one segment's
 * range, so the grant is also capped by the other segments on the same
 * allocation: every byte of the allocation must lie in a live segment
 * whose mode grants that peer the access (else less or nothing, with the
 * reason).  The read-only descriptors are opened once, by the make of the
 * first segment whose mode grants group or other read (reopening our own
 * through /proc/self/fd; the object's file mode always keeps rw for its
 * owner so that works), and kept: answering needs no new descriptor, so it
 * works in an owner at EMFILE too.  Every send is MSG_DONTWAIT|MSG_NOSIGNAL
 * on a fresh connection and the connection is closed right after: a peer
 * that never reads costs us nothing but its queued message (whose
 * descriptors count as in flight for our uid: a peer that hoards
 * thousands of unread answers can make later sends fail, and those peers
 * then get EAGAIN; it must have been granted access to do so).
 *
 * While the registry is open the owner holds an OFD write lock on its
 * header (shm.h); peers of other uids test for it to tell that the owner
 * still runs and has not exec'd.  It is taken on our own descriptor, so
 * the read-only copies sent to peers never hold it.
 *
 * Lock: owner_lock protects everything here; it is never nested with the
 * peer lock of shm_peer.c.  The accept thread takes it once per
 * connection.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm.h"

/* Random draws of a segid before giving up (each hits a used slot with p <= 1/2). */
#define SHM_ID_TRIES		64
/* Events the accept thread takes per epoll_wait(). */
#define ACCEPT_EVENTS		16
/* Stack of the accept thread (it only loops over epoll_wait and accept4). */
#define ACCEPT_STACK		(256 * 1024)

enum backing_kind { BACKING_ALLOC, BACKING_MIGRATED, BACKING_VECTOR };

/* One owner range of a migrated backing, at object offset @off. */
struct piece {
	char *addr;
	size_t size;
	size_t off;
};

struct backing {
	struct backing *next;
	char *addr;
	size_t size;
	size_t used;		/* bytes asked for, page-rounded */
	size_t page;		/* page size of the object */
	int fd;
	int rofd;		/* read-only reopen for other uids, or -1 */
	dev_t dev;
	ino_t ino;
	enum backing_kind kind;
	struct piece *pieces;	/* BACKING_VECTOR: npieces ranges */
	unsigned int npieces;
	unsigned int nsegs;
	unsigned int mode;	/* union of the modes of its segments */
};

struct segment {
	struct segment *next;
	xpmem_segid_t segid;
	unsigned int slot;
	int sock;		/* listening on the segid's abstract name */
	int key_sock;		/* listening on its key's name, or -1 */
	struct backing *b;
	struct shm_reg_slot info;	/* what its registry slot says */
	uint32_t auth_len;		/* 0: no authorization key */
	uint8_t auth[XPMEM_EXT_AUTH_MAX];	/* zero past auth_len */
};

/*
 * Connections to segments with an authorization key whose peer has not
 * written its struct shm_auth yet: in the accept thread's epoll set until
 * it comes or SHM_AUTH_WAIT_MS pass (owner_lock).  A peer that fills the
 * table pushes the oldest out (closed unanswered).
 */
#define PENDING_MAX		32
static struct pending {
	int fd;			/* -1: free */
	uint64_t segid;
	struct timespec deadline;	/* CLOCK_MONOTONIC */
} pending[PENDING_MAX] = { [0 ... PENDING_MAX - 1] = { .fd = -1 } };

static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;
static struct backing *backings;
static struct segment *segments;
static int reg_fd = -1;
static pid_t reg_pid;			/* process the registry belongs to */
static int reg_rofd = -1;		/* read-only reopen, for other uids */
static uint64_t reg_dev, reg_ino;	/* the registry's inode */
static unsigned int nsegments;
static struct segment *slot_seg[SHM_REG_SLOTS];	/* segment in each slot */
static int accept_epfd = -1;		/* the accept thread's epoll set */
static int accept_spare = -1;		/* freed to accept at EMFILE */
static pid_t accept_pid;		/* process the accept thread runs in */

/* ---- registry ---------------------------------------------------------- */

static int registry_create_locked(void)
{
	struct shm_reg_header hdr = { .magic = SHM_REG_MAGIC };
	struct flock lk = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = SHM_REG_LOCK_START,
		.l_len = SHM_REG_LOCK_LEN,
	};
	struct stat st;
	int fd, ret;

	/* Peers find it by this name among /proc/<pid>/fd (shm_peer.c). */
	fd = memfd_create(SHM_REG_NAME, MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	hdr.pid = getpid();
	hdr.nslots = SHM_REG_SLOTS;
	/*
	 * The lock lives as long as this open file description: it goes at
	 * exit and exec (close-on-exec), and fork children close their copy.
	 */
	if (ftruncate(fd, (off_t)SHM_REG_SIZE) != 0 ||
	    pwrite(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    fchmod(fd, 0644) != 0 || fcntl(fd, F_OFD_SETLK, &lk) != 0 ||
	    fstat(fd, &st) != 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	reg_fd = fd;
	reg_pid = hdr.pid;
	reg_dev = st.st_dev;
	reg_ino = st.st_ino;
	memset(slot_seg, 0, sizeof(slot_seg));
	nsegments = 0;
	return 0;
}

static int slot_write(unsigned int slot, const struct shm_reg_slot *s)
{
	/* Body first, segid last: a peer never sees its segid on a stale body. */
	if (pwrite(reg_fd, (const char *)s + sizeof(s->segid),
		   sizeof(*s) - sizeof(s->segid),
		   shm_slot_pos(slot) + (off_t)sizeof(s->segid)) < 0)
		return -errno;
	if (pwrite(reg_fd, &s->segid, sizeof(s->segid), shm_slot_pos(slot)) < 0)
		return -errno;
	return 0;
}

static void slot_clear(unsigned int slot)
{
	uint64_t zero = 0;

	if (pwrite(reg_fd, &zero, sizeof(zero), shm_slot_pos(slot)) < 0)
		xpmem_lib_log("cannot clear registry slot %u: %s", slot,
			      strerror(errno));
}

/* ---- answers to peers of other uids ------------------------------------ */

/* A peer's credentials, from its connection. */
struct peer_cred {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;	/* supplementary groups */
	int ngroups;
};

/*
 * mode_access - what the permit mode of @s grants @who: the SysV check of
 * shm_peer.c's check_mode(), on the peer's credentials instead of ours.
 * No capability bypass: root peers do not ask us.
 */
static enum shm_access mode_access(const struct shm_reg_slot *s,
				   const struct peer_cred *who)
{
	unsigned int bits;
	int i, in = who->gid == s->gid;

	for (i = 0; !in && i < who->ngroups; i++)
		in = who->groups[i] == s->gid;
	if (who->uid == s->uid)
		bits = s->mode >> 6;
	else
		bits = in ? s->mode >> 3 : s->mode;
	if ((bits & 6) == 6 && !(s->flags & SHM_SLOT_RDONLY))
		return SHM_ACCESS_RDWR;
	return bits & 4 ? SHM_ACCESS_READ : SHM_ACCESS_NONE;
}

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
static int object_access_locked(const struct backing *b,
				enum shm_access want,
				const struct peer_cred *who)
{
	struct span *sp = calloc(b->nsegs, sizeof(*sp));
	const struct segment *seg;
	unsigned int i, n = 0;
	uint64_t end;
	int a;

	if (!sp)
		return -ENOMEM;
	for (seg = segments; seg && n < b->nsegs; seg = seg->next) {
		if (seg->b != b)
			continue;
		a = mode_access(&seg->info, who);
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
 * answer_locked - answer the lookup connection @c on @seg's socket.
 *
 * Root and peers of the segment's uid read the registry and the object
 * through /proc and get nothing.  Others get a struct shm_grant: the
 * descriptors their credentials allow, or none and the errno of the
 * refusal.
 */
static void answer_locked(struct segment *seg, int c)
{
	struct backing *b = seg->b;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	gid_t gbuf[64], *groups;
	struct peer_cred who;
	struct shm_grant g;
	int fds[SHM_GRANT_MAX_FDS] = { reg_rofd, b->rofd, b->fd };
	int want, got, ret;

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
	g.segid = (uint64_t)seg->segid;
	g.slot = seg->slot;
	g.mode = seg->info.mode;
	g.uid = seg->info.uid;
	g.gid = seg->info.gid;
	g.page_size = seg->info.page_size;
	g.offset = seg->info.offset;
	g.size = seg->info.size;
	g.obj_dev = seg->info.obj_dev;
	g.obj_ino = seg->info.obj_ino;
	g.reg_dev = reg_dev;
	g.reg_ino = reg_ino;

	want = (int)mode_access(&seg->info, &who);
	got = want ? object_access_locked(b, (enum shm_access)want, &who) :
	      SHM_ACCESS_NONE;
	if (got > SHM_ACCESS_NONE && (reg_rofd < 0 || b->rofd < 0))
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
	ret = grant_send(c, &g, fds, shm_grant_fds(g.access));
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

/* ---- segment sockets and the accept thread ----------------------------- */

/*
 * A peer's xpmem_get connects to the segment's socket, reads SO_PEERCRED
 * and, if it has our uid or is root, closes: it never waits for us.  But
 * the kernel keeps every connection in the listen queue until it is
 * accepted, closed or not, and refuses new ones once the queue holds the
 * backlog (net.core.somaxconn): a socket nobody accepts on would stop
 * resolving after that many gets.  So each owner process runs one thread,
 * started by its first make, that accepts those connections, answers the
 * ones of peers of other uids (above) and closes them.  It waits in
 * epoll_wait() holding nothing, and takes owner_lock only to accept on the
 * sockets of live segments, found by segid, and answer: it never touches
 * a descriptor that the application got back after a remove closed ours.
 */
/*
 * accept_one_locked - a connection queued on @sock, or -1.  When the
 * process is out of descriptors, the spare one is given back for it
 * (*spare set: reopen it after closing the connection): a connection left
 * in the queue would wake epoll_wait() again at once, forever.
 */
static int accept_one_locked(int sock, int *spare)
{
	int c = accept4(sock, NULL, NULL, SOCK_CLOEXEC);

	*spare = 0;
	if (c >= 0 || (errno != EMFILE && errno != ENFILE) || accept_spare < 0)
		return c;
	close(accept_spare);
	accept_spare = -1;
	*spare = 1;
	return accept4(sock, NULL, NULL, SOCK_CLOEXEC);
}

/*
 * accept_serve - accept, answer and close everything queued on the socket
 * of the live segment @segid.  owner_lock is taken per connection, so the
 * application's make/remove wait for one answer at most, and the segment
 * is looked up by segid each time: a remove in between closes its socket
 * (the connections still queued are reset: their peers get ENOENT) and we
 * stop.
 */
/* epoll data of a key's socket: the segid with this bit set. */
#define ACCEPT_KEY_BIT		(1ULL << 63)
/* epoll data of a pending connection: its descriptor with this bit set. */
#define ACCEPT_CONN_BIT		(1ULL << 62)

/* Whether @a holds @seg's authorization key: every byte compared. */
static int auth_ok(const struct segment *seg, const struct shm_auth *a)
{
	unsigned int diff = a->len ^ seg->auth_len;
	size_t i;

	for (i = 0; i < XPMEM_EXT_AUTH_MAX; i++)
		diff |= (unsigned int)(a->key[i] ^ seg->auth[i]);
	return a->magic == SHM_AUTH_MAGIC && a->segid == (uint64_t)seg->segid &&
	       !a->reserved && !diff;
}

/*
 * The answer to a peer of @seg that presented @a (NULL: a malformed or
 * missing request): a refusal, or what answer_locked() sends, or to a
 * peer that reads /proc (our uid, root) a grant of access NONE and error
 * 0 that says go ahead.
 */
static void answer_auth_locked(struct segment *seg, int c,
			       const struct shm_auth *a)
{
	struct shm_grant g = {
		.magic = SHM_GRANT_MAGIC, .segid = (uint64_t)seg->segid,
		.slot = seg->slot, .mode = seg->info.mode,
		.uid = seg->info.uid, .gid = seg->info.gid,
	};
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (!a || !auth_ok(seg, a)) {
		g.error = EACCES;
		g.limit = SHM_LIMIT_AUTH;
	} else if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
		   cred.uid != seg->info.uid && cred.uid != 0) {
		answer_locked(seg, c);
		return;
	}
	grant_send(c, &g, NULL, 0);
}

static void pending_drop_locked(int i)
{
	epoll_ctl(accept_epfd, EPOLL_CTL_DEL, pending[i].fd, NULL);
	close(pending[i].fd);
	pending[i].fd = -1;
}

/*
 * Serve connection @c of @seg, which has an authorization key: answer at
 * once if the peer's request is there, else keep @c pending.  Return:
 * whether @c was kept (the caller must not close it).
 */
static int serve_auth_locked(struct segment *seg, int c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct shm_auth a;
	ssize_t n = recv(c, &a, sizeof(a), MSG_DONTWAIT);
	int i, oldest = 0;

	if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
		answer_auth_locked(seg, c, n == (ssize_t)sizeof(a) ? &a : NULL);
		explicit_bzero(&a, sizeof(a));
		return 0;
	}
	for (i = 0; i < PENDING_MAX && pending[i].fd >= 0; i++)
		if (xpmem_lib_shm_ms_left(&pending[i].deadline) <
		    xpmem_lib_shm_ms_left(&pending[oldest].deadline))
			oldest = i;
	if (i == PENDING_MAX) {
		pending_drop_locked(oldest);
		i = oldest;
	}
	ev.data.u64 = ACCEPT_CONN_BIT | (uint32_t)c;
	if (epoll_ctl(accept_epfd, EPOLL_CTL_ADD, c, &ev) != 0)
		return 0;
	pending[i].fd = c;
	pending[i].segid = (uint64_t)seg->segid;
	xpmem_lib_shm_deadline(&pending[i].deadline, SHM_AUTH_WAIT_MS);
	return 1;
}

/*
 * The pending connection @fd has its request (or hung up): answer it if
 * its segment still lives, and close it.
 */
static void serve_pending(int fd)
{
	struct shm_auth a;
	struct segment *seg;
	ssize_t n;
	int i;

	pthread_mutex_lock(&owner_lock);
	for (i = 0; i < PENDING_MAX && pending[i].fd != fd; i++)
		;
	n = i < PENDING_MAX ? recv(fd, &a, sizeof(a), MSG_DONTWAIT) : -1;
	/* not for a descriptor that is another connection by now */
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		i = PENDING_MAX;
	if (i < PENDING_MAX) {
		seg = slot_seg[xpmem_lib_shm_slot_of(
			(xpmem_segid_t)pending[i].segid)];
		if (seg && (uint64_t)seg->segid == pending[i].segid) {
			answer_auth_locked(seg, fd, n == (ssize_t)sizeof(a) ?
					   &a : NULL);
		} else {
			struct shm_grant g = {
				.magic = SHM_GRANT_MAGIC,
				.segid = pending[i].segid, .error = ENOENT,
			};

			grant_send(fd, &g, NULL, 0);	/* removed */
		}
		explicit_bzero(&a, sizeof(a));
		pending_drop_locked(i);
	}
	pthread_mutex_unlock(&owner_lock);
}

/*
 * Close the pending connections whose time is up; return how long
 * epoll_wait() may sleep until the next one's is (-1: none).
 */
static int pending_expire(void)
{
	int i, ms, next = -1;

	pthread_mutex_lock(&owner_lock);
	for (i = 0; i < PENDING_MAX; i++) {
		if (pending[i].fd < 0)
			continue;
		ms = xpmem_lib_shm_ms_left(&pending[i].deadline);
		if (!ms)
			pending_drop_locked(i);
		else if (next < 0 || ms < next)
			next = ms;
	}
	pthread_mutex_unlock(&owner_lock);
	return next;
}

/* Tell a peer on a key's socket which segment has the key. */
static void answer_key(struct segment *seg, int c)
{
	struct shm_key_answer a = {
		.magic = SHM_KEY_MAGIC, .segid = (uint64_t)seg->segid,
	};

	if (send(c, &a, sizeof(a), MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(a))
		xpmem_lib_log("accept thread: answering a key lookup: %s",
			      strerror(errno));
}

static void accept_serve(uint64_t data)
{
	uint64_t segid = data & ~ACCEPT_KEY_BIT;
	int key = !!(data & ACCEPT_KEY_BIT);
	struct segment *seg;
	int c, spare;

	do {
		c = -1;
		spare = 0;
		pthread_mutex_lock(&owner_lock);
		seg = slot_seg[xpmem_lib_shm_slot_of((xpmem_segid_t)segid)];
		if (seg && (uint64_t)seg->segid == segid &&
		    (!key || seg->key_sock >= 0)) {
			c = accept_one_locked(key ? seg->key_sock : seg->sock,
					      &spare);
			if (c >= 0) {
				if (key)
					answer_key(seg, c);
				else if (!seg->auth_len)
					answer_locked(seg, c);
				else if (serve_auth_locked(seg, c))
					c = INT_MAX;	/* pending: kept */
				if (c != INT_MAX)
					close(c);
			}
		}
		if (spare)
			accept_spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		pthread_mutex_unlock(&owner_lock);
	} while (c >= 0);
}

/* What the accept thread is started with; on its creator's stack. */
struct accept_start {
	int epfd;
	sem_t running;
};

static void *accept_main(void *arg)
{
	struct accept_start *start = arg;
	int epfd = start->epfd;
	struct epoll_event ev[ACCEPT_EVENTS];
	int i, n;

	sem_post(&start->running);	/* @start is gone after this */

	for (;;) {
		n = epoll_wait(epfd, ev, ACCEPT_EVENTS, pending_expire());
		if (n < 0) {
			if (errno == EINTR)
				continue;
			xpmem_lib_log("accept thread: epoll_wait: %s",
				      strerror(errno));
			return NULL;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].data.u64 & ACCEPT_CONN_BIT)
				serve_pending((int)(uint32_t)ev[i].data.u64);
			else
				accept_serve(ev[i].data.u64);
		}
	}
}

/*
 * Start the accept thread of this process, once, and wait until it runs:
 * whatever the thread sets up for itself (e.g. sanitizer state) is then in
 * place when the first make returns.
 */
static int accept_start_locked(void)
{
	struct accept_start start;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int epfd, ret;

	if (accept_pid == getpid())
		return 0;
	if (accept_epfd >= 0)
		close(accept_epfd);	/* a parent's, inherited without our handler */
	if (accept_spare >= 0)
		close(accept_spare);
	accept_epfd = accept_spare = -1;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	start.epfd = epfd;
	if (sem_init(&start.running, 0, 0)) {
		ret = -errno;
		close(epfd);
		return ret;
	}
	/* No signal of the application is ever delivered to it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_attr_init(&attr);
	if (!ret) {
		ret = pthread_attr_setdetachstate(&attr,
						  PTHREAD_CREATE_DETACHED);
		if (!ret)
			ret = pthread_attr_setstacksize(&attr, ACCEPT_STACK);
		if (!ret)
			ret = pthread_create(&t, &attr, accept_main, &start);
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		xpmem_lib_log("cannot start the accept thread: %s",
			      strerror(ret));
		sem_destroy(&start.running);
		close(epfd);
		return -ret;
	}
	while (sem_wait(&start.running) && errno == EINTR)
		;
	sem_destroy(&start.running);
	pthread_setname_np(t, "xpmem-accept");
	accept_spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	accept_epfd = epfd;
	accept_pid = getpid();
	return 0;
}

/*
 * segment_listen_locked - give @seg a fresh segid and its listening socket.
 *
 * Draws random ids until one has a free registry slot and its abstract
 * name can be bound: EADDRINUSE means a live segment of some process in
 * this network namespace has that id.
 */
static int segment_listen_locked(struct segment *seg)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sockaddr_un sun;
	socklen_t len;
	uint64_t id = 0;
	int i, fd, ret = -EAGAIN;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	for (i = 0; i < SHM_ID_TRIES; i++) {
		ret = xpmem_lib_shm_id_draw(&id);
		if (ret)
			goto close_fd;
		ret = -EAGAIN;
		if (slot_seg[xpmem_lib_shm_slot_of((xpmem_segid_t)id)])
			continue;
		len = xpmem_lib_shm_sockaddr((xpmem_segid_t)id, &sun);
		if (bind(fd, (struct sockaddr *)&sun, len) == 0)
			break;
		if (errno != EADDRINUSE) {
			ret = -errno;
			goto close_fd;
		}
	}
	if (i == SHM_ID_TRIES) {
		xpmem_lib_log("make: no free segid after %d draws", i);
		goto close_fd;
	}
	ev.data.u64 = id;
	if (listen(fd, SOMAXCONN) != 0 ||
	    epoll_ctl(accept_epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		ret = -errno;
		goto close_fd;
	}
	seg->segid = (xpmem_segid_t)id;
	seg->slot = xpmem_lib_shm_slot_of(seg->segid);
	seg->sock = fd;
	return 0;

close_fd:
	close(fd);
	return ret;
}

/*
 * segment_key_listen_locked - publish @seg under @key: bind and listen on
 * the key's abstract name.  EADDRINUSE: a live segment in this network
 * namespace has the key.
 */
static int segment_key_listen_locked(struct segment *seg, const void *key,
				     size_t key_len)
{
	struct epoll_event ev = {
		.events = EPOLLIN,
		.data.u64 = (uint64_t)seg->segid | ACCEPT_KEY_BIT,
	};
	struct sockaddr_un sun;
	socklen_t len = xpmem_lib_shm_key_sockaddr(key, key_len, &sun);
	int fd, ret;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, len) != 0) {
		ret = errno == EADDRINUSE ? -EEXIST : -errno;
		if (ret == -EEXIST)
			xpmem_lib_log("make: the key is in use in this network "
				      "namespace");
		close(fd);
		return ret;
	}
	if (listen(fd, SOMAXCONN) != 0 ||
	    epoll_ctl(accept_epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	seg->key_sock = fd;
	return 0;
}

/* Close @seg's sockets: its names, hence its segid and key, are free again. */
static void segment_unlisten_locked(struct segment *seg)
{
	/*
	 * Explicitly: a copy of the socket in a child that skipped our fork
	 * handler would otherwise keep it in the epoll set.
	 */
	epoll_ctl(accept_epfd, EPOLL_CTL_DEL, seg->sock, NULL);
	close(seg->sock);
	if (seg->key_sock >= 0) {
		epoll_ctl(accept_epfd, EPOLL_CTL_DEL, seg->key_sock, NULL);
		close(seg->key_sock);
		seg->key_sock = -1;
	}
}

/* ---- backings ---------------------------------------------------------- */

/* The ranges a backing takes in our address space: 1, or its pieces. */
static unsigned int backing_npieces(const struct backing *b)
{
	return b->kind == BACKING_VECTOR ? b->npieces : 1;
}

static struct piece backing_piece(const struct backing *b, unsigned int i)
{
	if (b->kind == BACKING_VECTOR)
		return b->pieces[i];
	return (struct piece){ .addr = b->addr, .size = b->size, .off = 0 };
}

static int overlaps(const char *a, size_t as, const char *b, size_t bs)
{
	return a < b + bs && b < a + as;
}

/*
 * The backing that holds all of [addr, addr + size), or NULL with
 * *@overlap set if one holds part of it.  A vector backing never holds a
 * range for a new segment: it only overlaps.
 */
static struct backing *backing_find_locked(const char *addr, size_t size,
					   int *overlap)
{
	struct backing *b;
	unsigned int i;

	*overlap = 0;
	for (b = backings; b; b = b->next) {
		if (b->kind != BACKING_VECTOR && addr >= b->addr &&
		    size <= b->size &&
		    (size_t)(addr - b->addr) <= b->size - size)
			return b;
		for (i = 0; i < backing_npieces(b); i++) {
			struct piece pc = backing_piece(b, i);

			if (overlaps(addr, size, pc.addr, pc.size))
				*overlap = 1;
		}
	}
	return NULL;
}

static void backing_unlink_locked(struct backing *b)
{
	struct backing **pp;

	for (pp = &backings; *pp; pp = &(*pp)->next) {
		if (*pp == b) {
			*pp = b->next;
			return;
		}
	}
}

static int backing_stat(struct backing *b)
{
	struct stat st;

	if (fstat(b->fd, &st) != 0)
		return -errno;
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	return 0;
}

/*
 * range_is_private_anon - whether [addr, addr + size) is covered, without
 * holes, by private anonymous read-write mappings (no [heap], [stack] or
 * other special mapping), according to /proc/self/maps.  On a mismatch,
 * @why receives a short description of the first offending part.
 */
static int range_is_private_anon(uintptr_t addr, size_t size, char *why,
				 size_t whylen)
{
	uintptr_t end = addr + size, cur = addr;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f) {
		snprintf(why, whylen, "cannot read /proc/self/maps");
		return 0;
	}
	snprintf(why, whylen, "hole at %#lx", (unsigned long)cur);
	while (cur < end && fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		char perms[8], path[256] = "";
		unsigned long long ino;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %llu %255s",
			   &lo, &hi, perms, &ino, path) < 4)
			continue;
		if (hi <= cur)
			continue;
		if (lo > cur)
			break;		/* hole */
		if (strcmp(perms, "rw-p") != 0 || ino != 0 ||
		    (path[0] && strncmp(path, "[anon:", 6) != 0)) {
			snprintf(why, whylen, "%#lx-%#lx is %s %s",
				 (unsigned long)lo, (unsigned long)hi, perms,
				 path[0] ? path : "(anonymous)");
			break;
		}
		cur = hi;
		snprintf(why, whylen, "hole at %#lx", (unsigned long)cur);
	}
	fclose(f);
	return cur >= end;
}

/*
 * Give @n pieces that are mapped from object @fd back private anonymous
 * memory with the same contents.  @view maps the object (or is NULL: the
 * pieces stay shared, with a log line).
 */
static void pieces_unmigrate(const unsigned char *view, const struct piece *pc,
			     unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!view) {
			xpmem_lib_log("cannot map object back, %p+%#zx stays "
				      "shared", (void *)pc[i].addr, pc[i].size);
		} else if (mmap(pc[i].addr, pc[i].size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				0) == MAP_FAILED) {
			xpmem_lib_log("cannot remap %p privately (%s), range "
				      "stays shared", (void *)pc[i].addr,
				      strerror(errno));
		} else {
			xpmem_lib_shm_copy_nonzero(pc[i].addr, view + pc[i].off,
						   pc[i].size);
		}
	}
}

/*
 * backing_migrate_locked - move @n private anonymous ranges (@pc: their
 * object offsets one after the other, @total bytes in all) onto a new
 * shared object at the same addresses, keeping their contents.  One range
 * makes a BACKING_MIGRATED backing, several a BACKING_VECTOR one (which
 * takes over the array, malloc()ed by the caller).
 */
static int backing_migrate_locked(struct piece *pc, unsigned int n,
				  size_t total, struct backing **out)
{
	struct backing *b;
	unsigned char *view;
	unsigned int i;
	char why[200];
	int ret;

	for (i = 0; i < n; i++) {
		if (range_is_private_anon((uintptr_t)pc[i].addr, pc[i].size,
					  why, sizeof(why)))
			continue;
		xpmem_lib_log("make %p+%#zx: %s; the shm backend exports only "
			      "xpmem_ext_alloc() memory and private anonymous "
			      "read-write ranges", (void *)pc[i].addr,
			      pc[i].size, why);
		return -EOPNOTSUPP;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->rofd = -1;
	ret = xpmem_lib_shm_object_create(total, &b->fd);
	if (ret)
		goto free_b;
	ret = backing_stat(b);
	if (ret)
		goto close_fd;
	view = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (view == MAP_FAILED) {
		ret = -errno;
		goto close_fd;
	}
	for (i = 0; i < n; i++)
		xpmem_lib_shm_copy_nonzero(view + pc[i].off, pc[i].addr,
					   pc[i].size);
	for (i = 0; i < n; i++) {
		if (mmap(pc[i].addr, pc[i].size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, b->fd,
			 (off_t)pc[i].off) == MAP_FAILED) {
			/* this one is still private; undo the others */
			ret = -errno;
			pieces_unmigrate(view, pc, i);
			munmap(view, total);
			goto close_fd;
		}
	}
	munmap(view, total);
	b->size = b->used = total;
	b->page = xpmem_lib_page_size();
	if (n == 1) {
		b->addr = pc[0].addr;
		b->kind = BACKING_MIGRATED;
	} else {
		b->pieces = pc;
		b->npieces = n;
		b->kind = BACKING_VECTOR;
	}
	b->next = backings;
	backings = b;
	xpmem_lib_log("migrated %u range(s) from %p, %#zx bytes, onto a shared "
		      "object", n, (void *)pc[0].addr, total);
	*out = b;
	return 0;

close_fd:
	close(b->fd);
free_b:
	free(b);
	return ret;
}

/*
 * backing_unmigrate - turn a migrated backing's ranges back into private
 * anonymous memory with the same contents, drop the object, free @b.
 */
static void backing_unmigrate(struct backing *b)
{
	struct piece one = backing_piece(b, 0);
	void *view = mmap(NULL, b->size, PROT_READ, MAP_SHARED, b->fd, 0);

	pieces_unmigrate(view == MAP_FAILED ? NULL : view,
			 b->kind == BACKING_VECTOR ? b->pieces : &one,
			 backing_npieces(b));
	if (view != MAP_FAILED)
		munmap(view, b->size);
	close(b->fd);
	if (b->rofd >= 0)
		close(b->rofd);
	free(b->pieces);
	free(b);
}

/* ---- fork -------------------------------------------------------------- */

/*
 * In the child, segments belong to the parent: forget them without touching
 * the registry (the child's descriptor shares it with the parent), close
 * the child's copies of their sockets and of the epoll set (without
 * epoll_ctl: the set is the parent's too), give migrated ranges back their
 * private copy, keep allocator blocks (shared with the parent, as
 * documented).  The child has no accept thread; its first make starts one.
 */
static void owner_reset_in_child(void)
{
	struct backing *b, *next, **pp = &backings;
	struct segment *s, *snext;

	for (s = segments; s; s = snext) {
		snext = s->next;
		close(s->sock);
		if (s->key_sock >= 0)
			close(s->key_sock);
		explicit_bzero(s->auth, sizeof(s->auth));
		free(s);
	}
	for (int i = 0; i < PENDING_MAX; i++) {
		if (pending[i].fd >= 0)
			close(pending[i].fd);	/* the parent's set: no DEL */
		pending[i].fd = -1;
	}
	if (accept_epfd >= 0)
		close(accept_epfd);
	if (accept_spare >= 0)
		close(accept_spare);
	accept_epfd = accept_spare = -1;
	accept_pid = 0;
	segments = NULL;
	for (b = backings; b; b = next) {
		next = b->next;
		b->nsegs = 0;
		if (b->kind != BACKING_ALLOC) {
			backing_unmigrate(b);
			continue;
		}
		*pp = b;
		pp = &b->next;
	}
	*pp = NULL;
	if (reg_fd >= 0)
		close(reg_fd);
	if (reg_rofd >= 0)
		close(reg_rofd);
	reg_fd = reg_rofd = -1;
	reg_pid = 0;
	nsegments = 0;
	memset(slot_seg, 0, sizeof(slot_seg));
}

void xpmem_lib_shm_owner_atfork(int phase)
{
	switch (phase) {
	case SHM_FORK_PREPARE:
		pthread_mutex_lock(&owner_lock);
		break;
	case SHM_FORK_PARENT:
		pthread_mutex_unlock(&owner_lock);
		break;
	case SHM_FORK_CHILD:
		owner_reset_in_child();
		pthread_mutex_unlock(&owner_lock);
		break;
	}
}

/* ---- make / remove ----------------------------------------------------- */

/* A read-only descriptor of what our @fd opens: -errno on failure. */
static int reopen_rdonly(int fd)
{
	char path[40];
	int f;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	return f < 0 ? -errno : f;
}

/*
 * grant_fds_open_locked - the read-only descriptors of the registry and of
 * @b's object that answer_locked() sends to peers of other uids; opened
 * once, by the first make whose mode grants group or other read, and kept
 * (so that answering needs no descriptor).
 */
static int grant_fds_open_locked(struct backing *b)
{
	int f;

	if (reg_rofd < 0) {
		f = reopen_rdonly(reg_fd);
		if (f < 0)
			goto fail;
		reg_rofd = f;
	}
	if (b->rofd < 0) {
		f = reopen_rdonly(b->fd);
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

/*
 * The pieces of @n buffers at @iov into @pc: each page aligned and
 * non-empty, at object offsets one after the other (*@total bytes in
 * all).  Overlapping buffers cannot each be migrated: EOPNOTSUPP.
 */
static int pieces_from_iov(const struct iovec *iov, int n, struct piece *pc,
			   size_t *total)
{
	size_t page = xpmem_lib_page_size(), off = 0;
	int i, j;

	for (i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)iov[i].iov_base;
		size_t len = iov[i].iov_len;

		if (!len || a % page || len % page || a + len < a ||
		    off + len < off) {
			xpmem_lib_log("make %p+%#zx: address and size must be "
				      "page-aligned and non-zero",
				      iov[i].iov_base, len);
			return -EINVAL;
		}
		pc[i].addr = iov[i].iov_base;
		pc[i].size = len;
		pc[i].off = off;
		off += len;
		for (j = 0; j < i; j++) {
			if (!overlaps(pc[i].addr, len, pc[j].addr, pc[j].size))
				continue;
			xpmem_lib_log("makev: buffers %d and %d overlap; the "
				      "shm backend exports a range once", j, i);
			return -EOPNOTSUPP;
		}
	}
	*total = off;
	return 0;
}

/*
 * A new vector backing of @n > 1 buffers: none may be exported already,
 * in whole or in part.  Takes over @pc on success.
 */
static int backing_vector_locked(struct piece *pc, int n, size_t total,
				 struct backing **b)
{
	int i, overlap;

	for (i = 0; i < n; i++) {
		if (backing_find_locked(pc[i].addr, pc[i].size, &overlap) ||
		    overlap) {
			xpmem_lib_log("makev %p+%#zx: range is exported memory "
				      "already; the shm backend exports it once",
				      (void *)pc[i].addr, pc[i].size);
			return -EOPNOTSUPP;
		}
	}
	return backing_migrate_locked(pc, (unsigned int)n, total, b);
}

int xpmem_lib_shm_make(const struct iovec *iov, int n, int mode,
		       unsigned int flags, const void *key, size_t key_len,
		       const void *auth, size_t auth_len, xpmem_segid_t *segid)
{
	struct piece one, *pc = &one, *alloc = NULL;
	struct shm_reg_slot slot = { 0 };
	char *addr = iov[0].iov_base;
	size_t size = iov[0].iov_len, boff;
	struct backing *b;
	struct segment *seg;
	unsigned int fmode;
	int overlap, ret;

	if (n == 1 && size == XPMEM_MAXADDR_SIZE) {
		xpmem_lib_log("make: the shm backend cannot export the whole "
			      "address space (XPMEM_MAXADDR_SIZE); load the "
			      "xpmem module for that");
		return -EOPNOTSUPP;
	}
	if (n > 1) {
		alloc = calloc((size_t)n, sizeof(*alloc));
		if (!alloc)
			return -ENOMEM;
		pc = alloc;
	}
	ret = pieces_from_iov(iov, n, pc, &size);
	seg = ret ? NULL : calloc(1, sizeof(*seg));
	if (!seg) {
		free(alloc);
		return ret ? ret : -ENOMEM;
	}
	seg->key_sock = -1;

	pthread_mutex_lock(&owner_lock);
	if (reg_fd >= 0 && reg_pid != getpid()) {
		/* A child made without fork()'s atfork handlers (raw clone). */
		owner_reset_in_child();
	}
	if (reg_fd < 0) {
		ret = registry_create_locked();
		if (ret) {
			xpmem_lib_log("cannot create the registry: %s",
				      strerror(-ret));
			goto unlock;
		}
	}
	ret = accept_start_locked();
	if (ret)
		goto unlock;
	if (nsegments >= SHM_REG_MAX_SEGS) {
		xpmem_lib_log("make: this process has %u segments, the most "
			      "the shm backend keeps", nsegments);
		ret = -ENOSPC;
		goto unlock;
	}
	if (n > 1) {
		ret = backing_vector_locked(pc, n, size, &b);
		if (ret)
			goto unlock;
		alloc = NULL;		/* b's now */
		boff = 0;		/* its object from offset 0 */
	} else {
		b = backing_find_locked(addr, size, &overlap);
		if (!b && overlap) {
			xpmem_lib_log("make %p+%#zx: range straddles exported "
				      "memory", (void *)addr, size);
			ret = -EOPNOTSUPP;
			goto unlock;
		}
		if (!b) {
			ret = backing_migrate_locked(pc, 1, size, &b);
			if (ret)
				goto unlock;
		}
		boff = (size_t)(addr - b->addr);
	}
	if (boff % b->page) {
		xpmem_lib_log("make %p: not aligned to the %zu-byte pages of "
			      "its allocation", (void *)addr, b->page);
		ret = -EINVAL;
		goto drop_backing;
	}
	ret = segment_listen_locked(seg);
	if (ret)
		goto drop_backing;
	if (key) {
		ret = segment_key_listen_locked(seg, key, key_len);
		if (ret) {
			segment_unlisten_locked(seg);
			goto drop_backing;
		}
	}

	slot.segid = (uint64_t)seg->segid;
	slot.obj_fd = b->fd;
	slot.mode = (uint32_t)mode;
	slot.uid = geteuid();
	slot.gid = getegid();
	slot.page_size = (uint32_t)b->page;
	slot.flags = (flags & XPMEM_EXT_MAKE_RDONLY ? SHM_SLOT_RDONLY : 0) |
		     (auth ? SHM_SLOT_AUTH : 0);
	if (auth) {
		seg->auth_len = (uint32_t)auth_len;
		memcpy(seg->auth, auth, auth_len);
	}
	slot.obj_dev = b->dev;
	slot.obj_ino = b->ino;
	slot.offset = boff;
	slot.size = size;
	/*
	 * The object's own mode mirrors the permits of its live segments
	 * (read/write bits), plus rw for us: grant_fds_open_locked() reopens
	 * it, and a process of our uid can fchmod it anyway.
	 */
	fmode = (b->nsegs ? b->mode : 0) | (unsigned int)mode;
	if ((!b->nsegs || fmode != b->mode) &&
	    fchmod(b->fd, (fmode & 0666) | 0600) == 0)
		b->mode = fmode;
	ret = mode & 0044 ? grant_fds_open_locked(b) : 0;
	if (!ret)
		ret = slot_write(seg->slot, &slot);
	if (ret) {
		segment_unlisten_locked(seg);
		goto drop_backing;
	}

	seg->info = slot;
	seg->b = b;
	seg->next = segments;
	segments = seg;
	slot_seg[seg->slot] = seg;
	nsegments++;
	b->nsegs++;
	*segid = seg->segid;
	if (xpmem_lib_debug_enabled() && prctl(PR_GET_DUMPABLE) != 1)
		xpmem_lib_log("process is not dumpable: peers of uid %u cannot "
			      "open /proc/%d/fd and will get EACCES (peers of "
			      "other uids are answered by the accept thread)",
			      (unsigned int)slot.uid, (int)reg_pid);
	pthread_mutex_unlock(&owner_lock);
	return 0;

drop_backing:
	if (b->kind != BACKING_ALLOC && b->nsegs == 0) {
		backing_unlink_locked(b);
		backing_unmigrate(b);
	}
unlock:
	pthread_mutex_unlock(&owner_lock);
	explicit_bzero(seg->auth, sizeof(seg->auth));
	free(seg);
	free(alloc);
	return ret;
}

/* Drop one segment; the caller holds owner_lock. */
static void segment_destroy_locked(struct segment *seg)
{
	struct backing *b = seg->b;

	slot_clear(seg->slot);
	slot_seg[seg->slot] = NULL;
	segment_unlisten_locked(seg);
	nsegments--;
	if (--b->nsegs == 0 && b->kind != BACKING_ALLOC) {
		backing_unlink_locked(b);
		backing_unmigrate(b);
	}
	explicit_bzero(seg->auth, sizeof(seg->auth));
	free(seg);
}

int xpmem_lib_shm_remove(xpmem_segid_t segid)
{
	struct segment **pp, *seg = NULL;

	pthread_mutex_lock(&owner_lock);
	for (pp = &segments; *pp; pp = &(*pp)->next) {
		if ((*pp)->segid == segid) {
			seg = *pp;
			*pp = seg->next;
			break;
		}
	}
	if (seg)
		segment_destroy_locked(seg);
	pthread_mutex_unlock(&owner_lock);
	if (!seg) {
		xpmem_lib_log("remove %#llx: no such segment of this process",
			      (unsigned long long)segid);
		return -ENOENT;
	}
	return 0;
}

/* ---- allocator --------------------------------------------------------- */

int xpmem_lib_shm_alloc(size_t size, unsigned int flags, void **addr)
{
	size_t page = xpmem_lib_page_size();
	struct backing *b = calloc(1, sizeof(*b));
	int ret = -ENOMEM;
	void *p;

	if (!b)
		return -ENOMEM;
	if (size > SIZE_MAX - SHM_HUGE_PAGE)
		goto free_b;
	b->fd = b->rofd = -1;
	size = (size + page - 1) & ~(page - 1);
	b->used = size;
	if (flags & XPMEM_EXT_ALLOC_HUGETLB) {
		size_t hsize = (size + SHM_HUGE_PAGE - 1) & ~(SHM_HUGE_PAGE - 1);

		ret = xpmem_lib_shm_huge_create(hsize, &b->fd);
		if (!ret) {
			/* Shared hugetlb mappings reserve their pages here. */
			p = mmap(NULL, hsize, PROT_READ | PROT_WRITE,
				 MAP_SHARED, b->fd, 0);
			if (p != MAP_FAILED) {
				b->addr = p;
				b->size = hsize;
				b->page = SHM_HUGE_PAGE;
			} else {
				ret = -errno;
				close(b->fd);
				b->fd = -1;
			}
		}
		if (ret)
			xpmem_lib_log("alloc: no huge pages (%s), using base "
				      "pages", strerror(-ret));
	}
	if (!b->addr) {
		ret = xpmem_lib_shm_object_create(size, &b->fd);
		if (ret)
			goto free_b;
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 b->fd, 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			goto close_fd;
		}
		b->addr = p;
		b->size = size;
		b->page = page;
	}
	ret = backing_stat(b);
	if (ret)
		goto unmap;
	b->kind = BACKING_ALLOC;
	pthread_mutex_lock(&owner_lock);
	b->next = backings;
	backings = b;
	pthread_mutex_unlock(&owner_lock);
	*addr = b->addr;
	return 0;

unmap:
	munmap(b->addr, b->size);
close_fd:
	close(b->fd);
free_b:
	free(b);
	return ret;
}

int xpmem_lib_shm_free(void *addr)
{
	struct segment **pp, *seg;
	struct backing *b;

	pthread_mutex_lock(&owner_lock);
	for (b = backings; b; b = b->next)
		if (b->kind == BACKING_ALLOC && b->addr == addr)
			break;
	if (!b) {
		pthread_mutex_unlock(&owner_lock);
		return -EINVAL;
	}
	for (pp = &segments; *pp;) {
		seg = *pp;
		if (seg->b == b) {
			*pp = seg->next;
			segment_destroy_locked(seg);
		} else {
			pp = &seg->next;
		}
	}
	backing_unlink_locked(b);
	pthread_mutex_unlock(&owner_lock);
	munmap(b->addr, b->size);
	close(b->fd);
	if (b->rofd >= 0)
		close(b->rofd);
	free(b);
	return 0;
}
