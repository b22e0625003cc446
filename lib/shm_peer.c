// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_peer.c - the attaching side of the shm backend: permits (xpmem_get /
 * xpmem_release) and attachments (xpmem_attach / xpmem_detach).
 *
 * Finding a segment (shm.h has the layout).  xpmem_get connects to the
 * segid's abstract socket and reads SO_PEERCRED, which gives the owner's
 * pid as this process's PID namespace numbers it (0 when the owner is
 * outside it: ENOENT) and its euid as of its listen(); no name, no live
 * segment.  Then one of two ways:
 *
 * - Through /proc, when our euid is the owner's, or we are root (today's
 *   way; the owner does not have to run).  The connection is closed at
 *   once.  When this process's /proc belongs to another PID namespace (a
 *   process that unshared its PID namespace but kept its parent's /proc)
 *   the pid is translated into /proc's numbering through a pidfd.  The
 *   owner's registry is found among /proc/<pid>/fd by its memfd name (the
 *   descriptor is remembered per owner pid, so the directory is read once
 *   per owner), the segment's slot is the one at segid % SHM_REG_SLOTS,
 *   which must hold this segid, and after the permit check the object is
 *   opened through /proc/<pid>/fd/<n>.  That needs ptrace read access to
 *   the owner: its uid and a dumpable owner, or CAP_SYS_PTRACE.
 *
 * - From the owner, for peers of any other uid.  The owner's accept thread
 *   checks our credentials itself (SO_PEERCRED, SO_PEERGROUPS) and answers
 *   with one struct shm_grant and SCM_RIGHTS (shm_owner.c, shm.h): a
 *   read-only registry descriptor and a read-only object descriptor, plus
 *   a read-write one if the mode lets us write; or none and why.  We wait
 *   for it at most CONNECT_WAIT_S (a stopped owner: EAGAIN), receive with
 *   MSG_CMSG_CLOEXEC and check it all (size, magic, segid, descriptor
 *   count, each descriptor's type, inode and access mode, the registry's
 *   slot against the answer and the owner's lock on the registry) before
 *   keeping anything; every received descriptor is closed on any error.
 *   A peer without room for the descriptors gets EMFILE.  Because a
 *   descriptor opens the whole object, the owner also refuses an access
 *   when some of the allocation is in no segment granting it to us.
 *
 * A permit holds the owner's registry (to notice xpmem_remove), the object
 * itself, opened O_RDONLY or O_RDWR according to the permit, and on the
 * /proc way the owner's /proc/<pid> directory (it keeps naming that
 * process even if the pid is reused).  Mappings of an O_RDONLY descriptor
 * cannot be made writable, so XPMEM_RDONLY is enforced by the kernel, not
 * by us; a permit from the owner keeps only the descriptor its flags need.
 * Before each attach, owner_alive() checks that the owner still holds the
 * registry: through /proc, that it is still at its descriptor number; for
 * a permit from the owner, that the owner's OFD write lock on the registry
 * header is still there (exit, kill -9 and exec drop it; a read-only
 * descriptor cannot take it, so no other peer can fake it).  An apid is
 * SHM_ID_MARK plus 46 random bits, unique among this process's permits: it
 * only names a permit of this process.
 *
 * Why not as first planned.  The plan kept a pidfd of the owner (from the
 * SO_PEERCRED pid) to notice its exit; the lock replaces it because a
 * pidfd does not see an exec (the /proc way does: the registry leaves the
 * owner's descriptor table), because pidfd_open on a pid read earlier can
 * name a reused pid, and because it costs a descriptor per permit.  The
 * answer is waited for with poll() on the non-blocking connection, with a
 * deadline that survives EINTR, rather than SO_RCVTIMEO.
 *
 * Permissions.  The check is the SysV IPC one done by the kernel backend
 * (owner, group, other bits of the permit mode against the owner's euid and
 * egid at make time; the caller's egid and supplementary groups count;
 * CAP_IPC_OWNER bypasses on the /proc way, i.e. for root).  On the /proc
 * way we check it and the object's file mode (the union of its segments'
 * modes, plus rw for the owner) applies to the open; from the owner, the
 * owner checks our credentials, and a peer of another uid that has
 * CAP_IPC_OWNER but is not root gets what the mode grants only.  What
 * still differs from the kernel backend: a same-uid peer of a
 * non-dumpable owner needs prctl(PR_SET_DUMPABLE, 1) in the owner, a
 * stopped owner cannot answer peers of other uids, and those peers are
 * refused a segment whose allocation is not shared with them as a whole.
 *
 * Lock: peer_lock protects the permit and attachment lists and the caches
 * below.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

/* Owners whose registry descriptor is remembered. */
#define REG_HINTS		16
/* How long a get waits when a segment's listen queue is full (seconds). */
#define CONNECT_WAIT_S		2

struct permit {
	struct permit *next;
	xpmem_apid_t apid;
	xpmem_segid_t segid;
	int flags;		/* XPMEM_RDONLY or XPMEM_RDWR */
	int procfd;		/* /proc/<owner pid>; -1: from the owner */
	int regfd;
	int regfd_owner;	/* registry's fd number in the owner, or -1 */
	int objfd;
	unsigned int slot;
	uint64_t offset;	/* segment start in the object */
	uint64_t size;
	uint64_t page;
};

struct attachment {
	struct attachment *next;
	char *addr;
	size_t size;
	xpmem_apid_t apid;
	int writable;
};

/* Where the registry of the owner with this (/proc) pid was last found. */
struct reg_hint {
	pid_t pid;
	int fd;
};

static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
static struct permit *permits;
static struct attachment *attachments;
static struct reg_hint reg_hints[REG_HINTS];
static unsigned int reg_hint_next;
static pid_t procns_checked;	/* process that checked its /proc */
static int procns_foreign;	/* /proc is not our PID namespace's */

void xpmem_lib_shm_peer_atfork(int phase)
{
	/* Permits and attachments stay valid in the child: its own copies. */
	if (phase == SHM_FORK_PREPARE)
		pthread_mutex_lock(&peer_lock);
	else
		pthread_mutex_unlock(&peer_lock);
}

/* ---- finding the owner -------------------------------------------------- */

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
 * procns_is_foreign - whether /proc numbers processes in another PID
 * namespace than ours: then /proc/self/status lists more than one pid in
 * NSpid, or one that is not getpid(), or /proc/self does not exist.
 */
static int procns_is_foreign(void)
{
	pid_t me = getpid();
	char line[256];
	int foreign = 1;
	FILE *f;

	pthread_mutex_lock(&peer_lock);
	if (procns_checked == me) {
		foreign = procns_foreign;
		pthread_mutex_unlock(&peer_lock);
		return foreign;
	}
	pthread_mutex_unlock(&peer_lock);
	f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f)) {
		long first;
		char *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		first = strtol(line + 6, &end, 10);
		foreign = first != me || strspn(end, " \t\n") != strlen(end);
		break;
	}
	if (f)
		fclose(f);
	pthread_mutex_lock(&peer_lock);
	procns_checked = me;
	procns_foreign = foreign;
	pthread_mutex_unlock(&peer_lock);
	return foreign;
}

/*
 * proc_pid - @pid (in our PID namespace) as our /proc numbers it.  A pidfd
 * shows the pid in the namespace of the /proc it is looked at through.
 */
static int proc_pid(pid_t pid, pid_t *out)
{
	char path[64], line[64];
	long nr = -1;
	FILE *f;
	int pfd;

	if (!procns_is_foreign()) {
		*out = pid;
		return 0;
	}
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pfd);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Pid:", 4))
			nr = strtol(line + 4, NULL, 10);
	if (f)
		fclose(f);
	close(pfd);
	if (nr <= 0 || nr > INT32_MAX) {
		xpmem_lib_log("get: owner pid %d is not in this process's "
			      "/proc", (int)pid);
		return -ENOENT;
	}
	*out = (pid_t)nr;
	return 0;
}

static int open_owner_fd(int procfd, pid_t pid, int fd, int flags)
{
	char path[64];
	int f;

	snprintf(path, sizeof(path), "fd/%d", fd);
	f = openat(procfd, path, flags | O_CLOEXEC);
	if (f >= 0)
		return f;
	if (errno == EACCES || errno == EPERM) {
		xpmem_lib_log("get: /proc/%d/%s: %s (peers need the owner's "
			      "uid and a dumpable owner, or CAP_SYS_PTRACE)",
			      (int)pid, path, strerror(errno));
		return -EACCES;
	}
	xpmem_lib_log("get: /proc/%d/%s: %s", (int)pid, path, strerror(errno));
	return -ENOENT;
}

static int read_slot(int regfd, unsigned int slot, struct shm_reg_slot *s)
{
	if (pread(regfd, s, sizeof(*s), shm_slot_pos(slot)) !=
	    (ssize_t)sizeof(*s))
		return -ENOENT;
	return 0;
}

/* Whether @regfd is a registry at all (a memfd of that name may not be). */
static int registry_valid(int regfd)
{
	struct shm_reg_header hdr;
	struct stat st;

	return fstat(regfd, &st) == 0 && S_ISREG(st.st_mode) &&
	       st.st_size == (off_t)SHM_REG_SIZE &&
	       pread(regfd, &hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) &&
	       hdr.magic == SHM_REG_MAGIC && hdr.nslots == SHM_REG_SLOTS;
}

/* Whether the registry @regfd holds @segid; copies its slot to @s. */
static int registry_holds(int regfd, xpmem_segid_t segid,
			  struct shm_reg_slot *s)
{
	return read_slot(regfd, xpmem_lib_shm_slot_of(segid), s) == 0 &&
	       s->segid == (uint64_t)segid;
}

static int reg_hint_get(pid_t pid)
{
	int i, fd = -1;

	pthread_mutex_lock(&peer_lock);
	for (i = 0; i < REG_HINTS; i++)
		if (reg_hints[i].pid == pid)
			fd = reg_hints[i].fd;
	pthread_mutex_unlock(&peer_lock);
	return fd;
}

static void reg_hint_set(pid_t pid, int fd)
{
	int i;

	pthread_mutex_lock(&peer_lock);
	for (i = 0; i < REG_HINTS && reg_hints[i].pid != pid; i++)
		;
	if (i == REG_HINTS)
		i = (int)(reg_hint_next++ % REG_HINTS);
	reg_hints[i].pid = pid;
	reg_hints[i].fd = fd;
	pthread_mutex_unlock(&peer_lock);
}

/*
 * registry_open - open the registry of the owner at @procfd that holds
 * @segid; return its descriptor, its fd number in the owner in @ownfd and
 * the segment's slot in @s.
 *
 * Tries the descriptor remembered for @pid (a slot holding the 64-bit
 * segid is proof enough), then every descriptor of the owner that is a
 * memfd named SHM_REG_NAME with a valid header (normally one).
 */
static int registry_open(int procfd, pid_t pid, xpmem_segid_t segid,
			 int *ownfd, struct shm_reg_slot *s)
{
	static const char want[] = "/memfd:" SHM_REG_NAME " (deleted)";
	char link[sizeof(want) + 1];
	struct dirent *e;
	int fd, dfd, n, ret = -ENOENT;
	DIR *d;

	n = reg_hint_get(pid);
	if (n >= 0) {
		fd = open_owner_fd(procfd, pid, n, O_RDONLY);
		if (fd >= 0 && registry_holds(fd, segid, s)) {
			*ownfd = n;
			return fd;
		}
		if (fd >= 0)
			close(fd);
	}
	dfd = openat(procfd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		ret = errno == EACCES || errno == EPERM ? -EACCES : -ENOENT;
		xpmem_lib_log("get: /proc/%d/fd: %s%s", (int)pid,
			      strerror(errno), ret == -EACCES ? " (peers need "
			      "the owner's uid and a dumpable owner, or "
			      "CAP_SYS_PTRACE)" : "");
		return ret;
	}
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	while ((e = readdir(d))) {
		ssize_t len = readlinkat(dfd, e->d_name, link, sizeof(link));

		if (len != (ssize_t)sizeof(want) - 1 ||
		    memcmp(link, want, sizeof(want) - 1))
			continue;
		n = atoi(e->d_name);
		fd = open_owner_fd(procfd, pid, n, O_RDONLY);
		if (fd < 0) {
			ret = fd;
			continue;
		}
		if (registry_valid(fd) && registry_holds(fd, segid, s)) {
			closedir(d);
			reg_hint_set(pid, n);
			*ownfd = n;
			return fd;
		}
		close(fd);
	}
	closedir(d);
	if (ret == -ENOENT)
		xpmem_lib_log("get %#llx: process %d has no registry holding "
			      "it (segment removed?)", (unsigned long long)segid,
			      (int)pid);
	return ret;
}

/*
 * registry_owned - whether the owner of the registry @regfd still holds
 * it open: it keeps an OFD write lock on the header while it does (shm.h),
 * which exit, kill -9 and exec drop, and which no holder of a read-only
 * descriptor can take.
 */
static int registry_owned(int regfd)
{
	struct flock lk = {
		.l_type = F_RDLCK,
		.l_whence = SEEK_SET,
		.l_start = SHM_REG_LOCK_START,
		.l_len = SHM_REG_LOCK_LEN,
	};

	return fcntl(regfd, F_OFD_GETLK, &lk) == 0 && lk.l_type == F_WRLCK;
}

/*
 * owner_alive - the owner of permit @p still runs and still holds its
 * registry.  Through /proc: the registry is still at its descriptor number
 * in the owner (an exited owner has no descriptors left, even as a
 * zombie, and a /proc/<pid> directory of a reaped process stays empty even
 * when the pid is reused).  Otherwise: the owner's lock on it.
 */
static int owner_alive(const struct permit *p)
{
	struct stat a, b;
	char path[32];

	if (p->procfd < 0)
		return registry_owned(p->regfd);
	snprintf(path, sizeof(path), "fd/%d", p->regfd_owner);
	return fstatat(p->procfd, path, &a, 0) == 0 &&
	       fstat(p->regfd, &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

/* SysV IPC style check, as ipcperms() does it. */
static int check_mode(const struct shm_reg_slot *s, int flags)
{
	unsigned int need = flags == XPMEM_RDONLY ? 4 : 6;
	unsigned int bits;

	if (geteuid() == s->uid)
		bits = s->mode >> 6;
	else if (xpmem_lib_in_group(s->gid))
		bits = s->mode >> 3;
	else
		bits = s->mode;
	if ((bits & need) != need && !xpmem_lib_has_cap(CAP_IPC_OWNER)) {
		xpmem_lib_log("get: mode %#o does not grant %s", s->mode,
			      flags == XPMEM_RDONLY ? "read" : "read-write");
		return -EACCES;
	}
	if (flags == XPMEM_RDWR && (s->flags & SHM_SLOT_RDONLY)) {
		xpmem_lib_log("get: a read-only export");
		return -EACCES;
	}
	return 0;
}

static struct permit *permit_find_locked(xpmem_apid_t apid)
{
	struct permit *p;

	for (p = permits; p; p = p->next)
		if (p->apid == apid)
			return p;
	return NULL;
}

/* Close a permit's descriptors and free it. */
static void permit_free(struct permit *p)
{
	if (p->objfd >= 0)
		close(p->objfd);
	if (p->regfd >= 0)
		close(p->regfd);
	if (p->procfd >= 0)
		close(p->procfd);
	free(p);
}

/* ---- the two ways to a permit ------------------------------------------ */

/*
 * get_through_proc - fill @p for @segid from the owner's /proc/<@pid>: its
 * registry, the permit check, the object opened for @flags.  The way for
 * peers of the owner's uid (ptrace access) and root.
 */
static int get_through_proc(struct permit *p, xpmem_segid_t segid, int flags,
			    pid_t pid, struct shm_reg_slot *s)
{
	char path[32];
	struct stat st;
	int ret;

	ret = proc_pid(pid, &pid);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	p->procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->procfd < 0) {
		ret = errno == EACCES ? -EACCES : -ENOENT;
		xpmem_lib_log("get: %s: %s", path, strerror(errno));
		return ret;
	}
	ret = registry_open(p->procfd, pid, segid, &p->regfd_owner, s);
	if (ret < 0)
		return ret;
	p->regfd = ret;
	ret = check_mode(s, flags);
	if (ret)
		return ret;
	ret = open_owner_fd(p->procfd, pid, s->obj_fd,
			    flags == XPMEM_RDONLY ? O_RDONLY : O_RDWR);
	if (ret < 0)
		return ret;
	p->objfd = ret;
	/* Both were just opened through the owner's fd table: it is alive. */
	if (fstat(p->objfd, &st) != 0 || st.st_ino != s->obj_ino ||
	    st.st_dev != s->obj_dev) {
		xpmem_lib_log("get %#llx: owner's object changed",
			      (unsigned long long)segid);
		return -ENOENT;
	}
	return 0;
}

/*
 * grant_recv - wait at most CONNECT_WAIT_S for the owner's answer on
 * @sock and check its form: exactly one struct shm_grant for @segid, with
 * exactly the descriptors its access announces.  The descriptors received
 * are in @fds (*nfds of them) whatever happens: the caller closes them.
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
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	struct timespec deadline;
	struct cmsghdr *cmsg;
	int bad = 0, i, k, r, fd;
	ssize_t n;

	memset(g, 0, sizeof(*g));
	xpmem_lib_shm_deadline(&deadline, CONNECT_WAIT_S * 1000);
	while ((r = poll(&pfd, 1, xpmem_lib_shm_ms_left(&deadline))) <= 0) {
		if (r == 0) {
			xpmem_lib_log("get %#llx: no answer from the owner in "
				      "%d s (its accept thread is busy or the "
				      "process is stopped)",
				      (unsigned long long)segid,
				      CONNECT_WAIT_S);
			return -EAGAIN;
		}
		if (errno != EINTR)
			return -errno;
	}
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
	for (cmsg = CMSG_FIRSTHDR(&msg); cmsg; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
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
	if (n == (ssize_t)sizeof(*g))
		memcpy(g, data, sizeof(*g));
	if (bad || (msg.msg_flags & MSG_CTRUNC) || n != (ssize_t)sizeof(*g) ||
	    g->magic != SHM_GRANT_MAGIC || g->segid != (uint64_t)segid ||
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
			      (unsigned long long)segid, g->mode, want,
			      (unsigned int)geteuid(),
			      g->access == SHM_ACCESS_READ ? "read" : "none");
	else
		xpmem_lib_log("get %#llx: mode %#o (owner uid %u gid %u) does "
			      "not grant %s to uid %u",
			      (unsigned long long)segid, g->mode, g->uid,
			      g->gid, want, (unsigned int)geteuid());
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
static int get_from_owner(struct permit *p, int sock, xpmem_segid_t segid,
			  int flags, struct shm_reg_slot *s)
{
	int fds[SHM_GRANT_MAX_FDS] = { -1, -1, -1 };
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
	    !fd_is(fds[1], O_RDONLY, g.obj_dev, g.obj_ino) ||
	    (nfds > 2 && !fd_is(fds[2], O_RDWR, g.obj_dev, g.obj_ino)) ||
	    !registry_valid(fds[0]) ||
	    g.slot != xpmem_lib_shm_slot_of(segid)) {
		xpmem_lib_log("get %#llx: the owner's descriptors are not what "
			      "its answer says", (unsigned long long)segid);
		ret = -ENOENT;
		goto close_fds;
	}
	if (!registry_holds(fds[0], segid, s) || !registry_owned(fds[0])) {
		xpmem_lib_log("get %#llx: removed, or its owner exited, since "
			      "it answered", (unsigned long long)segid);
		ret = -ENOENT;
		goto close_fds;
	}
	if (s->obj_dev != g.obj_dev || s->obj_ino != g.obj_ino ||
	    s->offset != g.offset || s->size != g.size ||
	    s->page_size != g.page_size || s->mode != g.mode ||
	    s->uid != g.uid || s->gid != g.gid || !s->size ||
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
	fds[0] = fds[i] = -1;
	ret = 0;

close_fds:
	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret;
}

/* ---- get / release ------------------------------------------------------ */

/*
 * Present @auth (NULL: none) on the owner's socket @sock (shm.h): an owner
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
 * A peer that reads /proc and presented a key: the owner's verdict on it
 * (a grant of access NONE, error 0: go ahead; return 0).  An owner that
 * closes without one (return 1) has no key for the segment, or the
 * segment is gone: the slot tells which.
 */
static int auth_verdict(int sock, xpmem_segid_t segid, int flags)
{
	int fds[SHM_GRANT_MAX_FDS] = { -1, -1, -1 };
	int nfds = 0, i, ret;
	struct shm_grant g;

	ret = grant_recv(sock, segid, &g, fds, &nfds);
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	/* closed unanswered (EOF), or with our request unread (reset) */
	if (ret == -EACCES || ret == -ENOENT)
		return 1;
	if (ret)
		return ret;
	if (g.error || g.access != SHM_ACCESS_NONE) {
		grant_log_refusal(segid, &g, flags);
		return g.error == ENOENT ? -ENOENT : -EACCES;
	}
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

int xpmem_lib_shm_get(xpmem_segid_t segid, int flags, const void *auth,
		      size_t auth_len, xpmem_apid_t *apid)
{
	struct shm_reg_slot s;
	struct ucred cred;
	struct permit *p;
	uid_t me = geteuid();
	int sock = -1, ret, unconfirmed = 0;
	uint64_t id;

	if (!xpmem_lib_shm_id_valid(segid)) {
		xpmem_lib_log("get %#llx: not a segid of the shm backend",
			      (unsigned long long)segid);
		return -ENOENT;
	}
	ret = owner_connect(segid, &sock, &cred);
	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(sock);
		return -ENOMEM;
	}
	p->procfd = p->regfd = p->objfd = p->regfd_owner = -1;
	auth_send(sock, segid, auth, auth_len);
	if (me == cred.uid || me == 0) {
		/* Only a key makes the owner answer us. */
		ret = auth ? auth_verdict(sock, segid, flags) : 0;
		close(sock);
		unconfirmed = ret == 1;
		if (ret >= 0)
			ret = get_through_proc(p, segid, flags, cred.pid, &s);
	} else {
		ret = get_from_owner(p, sock, segid, flags, &s);
		close(sock);
	}
	if (!ret)
		ret = auth_matches(segid, &s, auth);
	if (!ret && unconfirmed) {
		/* a key the owner never confirmed for a segment with one */
		xpmem_lib_log("get %#llx: the owner did not answer for the "
			      "authorization key", (unsigned long long)segid);
		ret = -EACCES;
	}
	if (ret)
		goto free_p;
	p->segid = segid;
	p->flags = flags;
	p->slot = xpmem_lib_shm_slot_of(segid);
	p->offset = s.offset;
	p->size = s.size;
	p->page = s.page_size ? s.page_size : xpmem_lib_page_size();

	pthread_mutex_lock(&peer_lock);
	do {
		ret = xpmem_lib_shm_id_draw(&id);
	} while (!ret && permit_find_locked((xpmem_apid_t)id));
	if (!ret) {
		p->apid = (xpmem_apid_t)id;
		p->next = permits;
		permits = p;
		*apid = p->apid;
	}
	pthread_mutex_unlock(&peer_lock);
	if (!ret)
		return 0;

free_p:
	permit_free(p);
	return ret;
}

/*
 * key_answer_recv - the segid the owner of the key socket @fd names,
 * waiting at most CONNECT_WAIT_S.
 */
static int key_answer_recv(int fd, uint64_t *segid)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct shm_key_answer a;
	struct timespec deadline;
	ssize_t n;
	int r;

	xpmem_lib_shm_deadline(&deadline, CONNECT_WAIT_S * 1000);
	while ((r = poll(&pfd, 1, xpmem_lib_shm_ms_left(&deadline))) <= 0) {
		if (r == 0) {
			xpmem_lib_log("get by key: no answer from the owner in "
				      "%d s", CONNECT_WAIT_S);
			return -EAGAIN;
		}
		if (errno != EINTR)
			return -errno;
	}
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

/*
 * xpmem_ext_get_key() on this backend: the key's socket names the
 * segment, whose own socket must belong to the same process (a key is
 * then never an alias for someone else's segment), and the get is the
 * usual one.
 */
int xpmem_lib_shm_get_key(const void *key, size_t key_len, int flags,
			  const void *auth, size_t auth_len, xpmem_apid_t *apid,
			  xpmem_segid_t *segid)
{
	struct sockaddr_un sun;
	socklen_t alen = xpmem_lib_shm_key_sockaddr(key, key_len, &sun);
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
	ret = xpmem_lib_shm_get((xpmem_segid_t)id, flags, auth, auth_len,
				apid);
	if (!ret)
		*segid = (xpmem_segid_t)id;
	return ret;
}

static void attachment_unmap(struct attachment *a)
{
	munmap(a->addr, a->size);
	free(a);
}

int xpmem_lib_shm_release(xpmem_apid_t apid)
{
	struct attachment **ap, *a;
	struct permit **pp, *p = NULL;

	pthread_mutex_lock(&peer_lock);
	for (pp = &permits; *pp; pp = &(*pp)->next) {
		if ((*pp)->apid == apid) {
			p = *pp;
			*pp = p->next;
			break;
		}
	}
	if (!p) {
		pthread_mutex_unlock(&peer_lock);
		return -ENOENT;
	}
	/* Like the kernel backend, releasing a permit detaches its users. */
	for (ap = &attachments; *ap;) {
		a = *ap;
		if (a->apid == apid) {
			*ap = a->next;
			attachment_unmap(a);
		} else {
			ap = &a->next;
		}
	}
	pthread_mutex_unlock(&peer_lock);
	permit_free(p);
	return 0;
}

/*
 * XPMEM_EXT_ATTACH_POPULATE*: fault the new mapping in (its pages are the
 * owner's shared memory, resident or swapped).  Best effort, as on the
 * kernel backend: a kernel before 5.14 has no MADV_POPULATE_*.
 */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#define MADV_POPULATE_WRITE	23
#endif

static void attachment_populate(void *m, size_t size, unsigned int flags)
{
	int advice = flags & XPMEM_EXT_ATTACH_POPULATE_WRITE ?
		     MADV_POPULATE_WRITE : MADV_POPULATE_READ;

	if (madvise(m, size, advice))
		xpmem_lib_log("attach: populating %p: %s", m, strerror(errno));
}

int xpmem_lib_shm_attach(xpmem_apid_t apid, off_t offset, size_t size,
			 void *vaddr, unsigned int flags, void **addr)
{
	struct attachment *a = calloc(1, sizeof(*a));
	struct shm_reg_slot s;
	struct permit *p;
	uint64_t off = (uint64_t)offset, span;
	int prot, ret, fd;
	char path[40];
	void *m;

	if (!a)
		return -ENOMEM;
	pthread_mutex_lock(&peer_lock);
	p = permit_find_locked(apid);
	if (!p) {
		ret = -ENOENT;
		goto unlock;
	}
	if (!owner_alive(p) ||
	    read_slot(p->regfd, p->slot, &s) ||
	    s.segid != (uint64_t)p->segid) {
		xpmem_lib_log("attach: segment was removed or its owner exited");
		ret = -ENOENT;
		goto unlock;
	}
	if (size > SIZE_MAX - p->page) {
		ret = -EINVAL;
		goto unlock;
	}
	/* Huge-page objects map whole huge pages past a segment's end. */
	size = (size + p->page - 1) & ~(p->page - 1);
	span = (p->size + p->page - 1) & ~(p->page - 1);
	if (off % p->page || (uintptr_t)vaddr % p->page || off > span ||
	    size > span - off) {
		xpmem_lib_log("attach: offset %#llx size %#zx outside the "
			      "%#llx-byte segment or not %llu-aligned",
			      (unsigned long long)off, size,
			      (unsigned long long)p->size,
			      (unsigned long long)p->page);
		ret = -EINVAL;
		goto unlock;
	}
	if ((flags & XPMEM_EXT_ATTACH_POPULATE_WRITE) &&
	    p->flags == XPMEM_RDONLY) {
		xpmem_lib_log("attach: POPULATE_WRITE through a read-only permit");
		ret = -EACCES;
		goto unlock;
	}
	prot = p->flags == XPMEM_RDONLY || (flags & XPMEM_EXT_ATTACH_RDONLY) ?
	       PROT_READ : PROT_READ | PROT_WRITE;
	fd = p->objfd;
	if (p->flags != XPMEM_RDONLY && (flags & XPMEM_EXT_ATTACH_RDONLY)) {
		/*
		 * A read-only description of the same object, so that
		 * mprotect() cannot make the mapping writable (as on the
		 * kernel backend).
		 */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", p->objfd);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			xpmem_lib_log("attach: read-only reopen: %s",
				      strerror(errno));
			goto unlock;
		}
	}
	m = mmap(vaddr, size, prot, MAP_SHARED | (vaddr ? MAP_FIXED : 0),
		 fd, (off_t)(p->offset + off));
	if (fd != p->objfd)
		close(fd);
	if (m == MAP_FAILED) {
		ret = -errno;
		goto unlock;
	}
	if (flags & (XPMEM_EXT_ATTACH_POPULATE |
		     XPMEM_EXT_ATTACH_POPULATE_WRITE))
		attachment_populate(m, size, flags);
	a->addr = m;
	a->size = size;
	a->apid = apid;
	a->writable = prot & PROT_WRITE;
	a->next = attachments;
	attachments = a;
	*addr = m;
	pthread_mutex_unlock(&peer_lock);
	return 0;

unlock:
	pthread_mutex_unlock(&peer_lock);
	free(a);
	return ret;
}

int xpmem_lib_shm_detach(void *vaddr)
{
	struct attachment **ap, *a = NULL;
	char *v = vaddr;

	pthread_mutex_lock(&peer_lock);
	for (ap = &attachments; *ap; ap = &(*ap)->next) {
		if (v >= (*ap)->addr && v < (*ap)->addr + (*ap)->size) {
			a = *ap;
			*ap = a->next;
			break;
		}
	}
	if (a)
		attachment_unmap(a);
	pthread_mutex_unlock(&peer_lock);
	if (!a) {
		xpmem_lib_log("detach %p: not an attachment", vaddr);
		return -EINVAL;
	}
	return 0;
}

/*
 * Copies: the segment is bytes [offset, offset + size) of the permit's
 * object, so a copy is a pread/pwrite of the object (one copy, as
 * through the kernel's permit).  Hugetlb objects cannot be written that
 * way: their range is mapped and copied instead.
 */

/*
 * What a copy of @total bytes at segment offset @off through @apid may
 * touch: the object (a descriptor of the caller's own in *@fd) and where
 * the range starts in it.  -ENOENT, -EINVAL, -EACCES as the kernel says.
 */
static int copy_target(xpmem_apid_t apid, uint64_t off, uint64_t total,
		       int to, int dup_fd, int *fd, uint64_t *objoff,
		       uint64_t *page)
{
	struct shm_reg_slot s;
	struct permit *p;
	int ret = 0;

	pthread_mutex_lock(&peer_lock);
	p = permit_find_locked(apid);
	if (!p) {
		ret = -ENOENT;
		goto unlock;
	}
	if (!owner_alive(p) || read_slot(p->regfd, p->slot, &s) ||
	    s.segid != (uint64_t)p->segid) {
		xpmem_lib_log("copy: segment was removed or its owner exited");
		ret = -ENOENT;
		goto unlock;
	}
	if (off > p->size || total > p->size - off) {
		xpmem_lib_log("copy: %#llx bytes at %#llx outside the %#llx-byte "
			      "segment", (unsigned long long)total,
			      (unsigned long long)off,
			      (unsigned long long)p->size);
		ret = -EINVAL;
		goto unlock;
	}
	if (to && p->flags == XPMEM_RDONLY) {
		xpmem_lib_log("copy: COPY_TO through a read-only permit");
		ret = -EACCES;
		goto unlock;
	}
	*fd = dup_fd ? fcntl(p->objfd, F_DUPFD_CLOEXEC, 0) : p->objfd;
	if (*fd < 0)
		ret = -errno;
	*objoff = p->offset + off;
	*page = p->page;
unlock:
	pthread_mutex_unlock(&peer_lock);
	return ret;
}

/* Copy through a mapping of the object's pages (hugetlb objects). */
static ssize_t copy_mapped(int fd, int to, char *buf, size_t len,
			   uint64_t objoff, uint64_t page)
{
	uint64_t start = objoff & ~(page - 1);
	size_t span = (size_t)((objoff + len + page - 1) / page * page - start);
	char *m = mmap(NULL, span, to ? PROT_READ | PROT_WRITE : PROT_READ,
		       MAP_SHARED, fd, (off_t)start);

	if (m == MAP_FAILED)
		return -errno;
	if (to)
		memcpy(m + (objoff - start), buf, len);
	else
		memcpy(buf, m + (objoff - start), len);
	munmap(m, span);
	return (ssize_t)len;
}

/* One local buffer: all of it, or the bytes before an error. */
static ssize_t copy_one(int fd, int to, char *buf, size_t len,
			uint64_t objoff, uint64_t page)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = to ? pwrite(fd, buf + done, len - done,
				(off_t)(objoff + done)) :
			 pread(fd, buf + done, len - done,
			       (off_t)(objoff + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && !done)
			return copy_mapped(fd, to, buf, len, objoff, page);
		if (n < 0)
			return done ? (ssize_t)done : -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

#define COPY_MAX	0x7ffff000UL	/* as the kernel's MAX_RW_COUNT */

/*
 * The local buffers of @c (its iovec array, or @one) into *@iov; returns
 * their count and puts the bytes a copy moves, capped as the kernel
 * caps them, in *@total.
 */
static int copy_buffers(const struct xpmem_ext_copy *c, struct iovec *one,
			const struct iovec **iov, uint64_t *total)
{
	int n = 1, i;

	if (c->flags & XPMEM_EXT_COPY_IOV) {
		*iov = (const struct iovec *)(uintptr_t)c->addr;
		n = (int)c->len;
	} else {
		one->iov_base = (void *)(uintptr_t)c->addr;
		one->iov_len = c->len;
		*iov = one;
	}
	*total = 0;
	for (i = 0; i < n; i++)
		*total += (*iov)[i].iov_len > COPY_MAX ? COPY_MAX :
			  (*iov)[i].iov_len;
	if (*total > COPY_MAX)
		*total = COPY_MAX;
	return n;
}

ssize_t xpmem_lib_shm_copy(const struct xpmem_ext_copy *c)
{
	int to = c->flags & XPMEM_EXT_COPY_TO;
	uint64_t total, objoff, page;
	const struct iovec *iov;
	struct iovec one;
	size_t done = 0, len;
	ssize_t n = 0;
	int fd, i, iovcnt, ret;

	iovcnt = copy_buffers(c, &one, &iov, &total);
	ret = copy_target(c->apid, c->offset, total, to, 1, &fd, &objoff,
			  &page);
	if (ret)
		return ret;
	for (i = 0; i < iovcnt && done < total; i++) {
		len = iov[i].iov_len;
		if (len > total - done)
			len = total - done;
		n = copy_one(fd, to, iov[i].iov_base, len, objoff + done, page);
		if (n > 0)
			done += (size_t)n;
		if (n < 0 || (size_t)n < len)
			break;
	}
	close(fd);
	return done ? (ssize_t)done : n;
}

/* The attachment holding [addr, addr + len), or NULL; under peer_lock. */
static struct attachment *attachment_covering(const char *addr, size_t len)
{
	struct attachment *a;

	for (a = attachments; a; a = a->next)
		if (addr >= a->addr && len <= a->size &&
		    addr - a->addr <= (ptrdiff_t)(a->size - len))
			return a;
	return NULL;
}

int xpmem_lib_shm_populate(void *addr, size_t len, unsigned int flags)
{
	struct attachment *a;
	int ret = 0;

	pthread_mutex_lock(&peer_lock);
	a = attachment_covering(addr, len);
	if (!a)
		ret = -EFAULT;
	else if ((flags & XPMEM_EXT_POPULATE_WRITE) && !a->writable)
		ret = -EACCES;
	pthread_mutex_unlock(&peer_lock);
	if (ret) {
		xpmem_lib_log("populate %p+%#zx: %s", addr, len,
			      ret == -EFAULT ? "not an attachment" :
			      "read-only attachment");
		return ret;
	}
	if (madvise(addr, len, flags & XPMEM_EXT_POPULATE_WRITE ?
		    MADV_POPULATE_WRITE : MADV_POPULATE_READ))
		xpmem_lib_log("populate %p: %s", addr, strerror(errno));
	return 0;		/* best effort, as at attach time */
}

/*
 * Prep for the caller's ring: a read or write of the object at the
 * segment's place in it (the permit's descriptor, which must stay open
 * until the completion, as the permit must), READ_FIXED/WRITE_FIXED into
 * registered buffer @buf_index if >= 0; populate happens now and the SQE
 * is a no-op.
 */
int xpmem_lib_shm_prep(struct io_uring_sqe *sqe, unsigned int op,
		       const void *arg, int buf_index)
{
	const struct xpmem_ext_copy *c = arg;
	const struct xpmem_ext_populate *pp = arg;
	const struct iovec *iov;
	uint64_t total, objoff, page;
	struct iovec one;
	int to, fd, ret;

	if (op == XPMEM_CMD_EXT_POPULATE) {
		ret = xpmem_lib_shm_populate((void *)(uintptr_t)pp->vaddr,
					     pp->len, pp->flags);
		if (!ret)
			sqe->opcode = IORING_OP_NOP;
		return ret;
	}
	to = c->flags & XPMEM_EXT_COPY_TO;
	copy_buffers(c, &one, &iov, &total);
	ret = copy_target(c->apid, c->offset, total, to, 0, &fd, &objoff,
			  &page);
	if (ret)
		return ret;
	if (c->flags & XPMEM_EXT_COPY_IOV) {
		sqe->opcode = to ? IORING_OP_WRITEV : IORING_OP_READV;
		sqe->len = (__u32)c->len;
	} else if (buf_index >= 0) {
		sqe->opcode = to ? IORING_OP_WRITE_FIXED : IORING_OP_READ_FIXED;
		sqe->len = (__u32)total;
		sqe->buf_index = (__u16)buf_index;
	} else {
		sqe->opcode = to ? IORING_OP_WRITE : IORING_OP_READ;
		sqe->len = (__u32)total;
	}
	sqe->fd = fd;
	sqe->addr = c->addr;
	sqe->off = objoff;
	return 0;
}
