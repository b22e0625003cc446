// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_peer.c - the attaching side of the shm backend: permits (xpmem_get /
 * xpmem_release) and attachments (xpmem_attach / xpmem_detach).
 *
 * Finding a segment (shm.h has the layout).  xpmem_get connects to the
 * segid's abstract socket and reads SO_PEERCRED, which gives the owner's
 * pid as this process's PID namespace numbers it (0 when the owner is
 * outside it); no name, no live segment.  When this process's /proc
 * belongs to another PID namespace (a process that unshared its PID
 * namespace but kept its parent's /proc) the pid is translated into
 * /proc's numbering through a pidfd.  The owner's registry is then found
 * among /proc/<pid>/fd by its memfd name (the descriptor is remembered per
 * owner pid, so the directory is read once per owner), and the segment's
 * slot is the one at segid % SHM_REG_SLOTS, which must hold this segid.
 *
 * A permit holds three descriptors: the owner's /proc/<pid> directory (it
 * keeps naming that process even if the pid is reused), the owner's
 * registry (to notice xpmem_remove) and the object itself, opened O_RDONLY
 * or O_RDWR according to the permit.  Mappings of an O_RDONLY descriptor
 * cannot be made writable, so XPMEM_RDONLY is enforced by the kernel, not
 * by us.  An apid is SHM_ID_MARK plus 46 random bits, unique among this
 * process's permits: it only names a permit of this process.
 *
 * Permissions.  The check is the SysV IPC one done by the kernel backend
 * (owner, group, other bits of the permit mode against the owner's euid and
 * egid at make time; CAP_IPC_OWNER bypasses).  Beyond it, opening
 * /proc/<pid>/fd/<n> needs ptrace read access to the owner (same uid and a
 * dumpable owner, or CAP_SYS_PTRACE), and the object's file mode follows
 * the permit mode.  So a peer with another uid is refused (EACCES) even
 * when the mode grants group or other access: that is the one place where
 * the shm backend cannot match the kernel backend.
 *
 * Lock: peer_lock protects the permit and attachment lists and the caches
 * below.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
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
	int procfd;		/* /proc/<owner pid> */
	int regfd;
	int regfd_owner;	/* the registry's fd number in the owner */
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
 * owner_pid - the pid of the process that listens on @segid's socket, in
 * this process's PID namespace.
 *
 * The connection is only for SO_PEERCRED; the owner's accept thread
 * accepts and closes it.  A full listen queue (more gets in flight than
 * the backlog) is waited out for at most CONNECT_WAIT_S.
 */
static int owner_pid(xpmem_segid_t segid, pid_t *pid)
{
	struct timeval wait = { .tv_sec = CONNECT_WAIT_S };
	struct sockaddr_un sun;
	socklen_t alen = xpmem_lib_shm_sockaddr(segid, &sun);
	struct ucred cred = { 0 };
	socklen_t len = sizeof(cred);
	int fd, ret;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (struct sockaddr *)&sun, alen) ? -errno : 0;
	if (ret == -EAGAIN) {
		if (fcntl(fd, F_SETFL, 0) == 0 &&
		    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait,
			       sizeof(wait)) == 0)
			ret = connect(fd, (struct sockaddr *)&sun, alen) ?
			      -errno : 0;
	}
	if (!ret && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		ret = -errno;
	close(fd);
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
	if (cred.pid <= 0) {
		xpmem_lib_log("get %#llx: its owner is outside this PID "
			      "namespace", (unsigned long long)segid);
		return -ENOENT;
	}
	*pid = cred.pid;
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
 * owner_alive - the owner still runs and still holds the registry @regfd at
 * descriptor @fd.  An exited owner has no descriptors left, even as a
 * zombie, and a /proc/<pid> directory of a reaped process stays empty even
 * when the pid is reused.
 */
static int owner_alive(int procfd, int fd, int regfd)
{
	struct stat a, b;
	char path[32];

	snprintf(path, sizeof(path), "fd/%d", fd);
	return fstatat(procfd, path, &a, 0) == 0 && fstat(regfd, &b) == 0 &&
	       a.st_ino == b.st_ino && a.st_dev == b.st_dev;
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

/* ---- get / release ------------------------------------------------------ */

int xpmem_lib_shm_get(xpmem_segid_t segid, int flags, xpmem_apid_t *apid)
{
	struct shm_reg_slot s;
	struct permit *p;
	char path[32];
	struct stat st;
	pid_t pid = 0;
	uint64_t id;
	int ret;

	if (!xpmem_lib_shm_id_valid(segid)) {
		xpmem_lib_log("get %#llx: not a segid of the shm backend",
			      (unsigned long long)segid);
		return -ENOENT;
	}
	ret = owner_pid(segid, &pid);
	if (!ret)
		ret = proc_pid(pid, &pid);
	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->regfd = p->objfd = -1;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	p->procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->procfd < 0) {
		ret = errno == EACCES ? -EACCES : -ENOENT;
		xpmem_lib_log("get: %s: %s", path, strerror(errno));
		goto free_p;
	}
	ret = registry_open(p->procfd, pid, segid, &p->regfd_owner, &s);
	if (ret < 0)
		goto close_fds;
	p->regfd = ret;
	ret = check_mode(&s, flags);
	if (ret)
		goto close_fds;
	ret = open_owner_fd(p->procfd, pid, s.obj_fd,
			    flags == XPMEM_RDONLY ? O_RDONLY : O_RDWR);
	if (ret < 0)
		goto close_fds;
	p->objfd = ret;
	/* Both were just opened through the owner's fd table: it is alive. */
	if (fstat(p->objfd, &st) != 0 || st.st_ino != s.obj_ino ||
	    st.st_dev != s.obj_dev) {
		xpmem_lib_log("get %#llx: owner's object changed",
			      (unsigned long long)segid);
		ret = -ENOENT;
		goto close_fds;
	}
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

close_fds:
	if (p->objfd >= 0)
		close(p->objfd);
	if (p->regfd >= 0)
		close(p->regfd);
	close(p->procfd);
free_p:
	free(p);
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
	close(p->objfd);
	close(p->regfd);
	close(p->procfd);
	free(p);
	return 0;
}

int xpmem_lib_shm_attach(xpmem_apid_t apid, off_t offset, size_t size,
			 void *vaddr, void **addr)
{
	struct attachment *a = calloc(1, sizeof(*a));
	struct shm_reg_slot s;
	struct permit *p;
	uint64_t off = (uint64_t)offset, span;
	int prot, ret;
	void *m;

	if (!a)
		return -ENOMEM;
	pthread_mutex_lock(&peer_lock);
	p = permit_find_locked(apid);
	if (!p) {
		ret = -ENOENT;
		goto unlock;
	}
	if (!owner_alive(p->procfd, p->regfd_owner, p->regfd) ||
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
	prot = p->flags == XPMEM_RDONLY ? PROT_READ : PROT_READ | PROT_WRITE;
	m = mmap(vaddr, size, prot, MAP_SHARED | (vaddr ? MAP_FIXED : 0),
		 p->objfd, (off_t)(p->offset + off));
	if (m == MAP_FAILED) {
		ret = -errno;
		goto unlock;
	}
	a->addr = m;
	a->size = size;
	a->apid = apid;
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
