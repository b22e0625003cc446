// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_proc.c - reading an owner's registry: through /proc/<pid> for peers
 * of the owner's uid and root, and the checks of a registry descriptor
 * however it was obtained.
 *
 * Through /proc the owner does not have to run.  When this process's
 * /proc belongs to another PID namespace (it unshared its PID namespace
 * but kept its parent's /proc) the owner's pid is translated into /proc's
 * numbering through a pidfd.  The registry is found among /proc/<pid>/fd
 * by its memfd name (the descriptor is remembered per owner pid, so the
 * directory is read once per owner); the segment's slot must hold its
 * segid; after the permission check (shm_perm.c) the object is opened
 * through /proc/<pid>/fd/<n>, which needs ptrace read access to the owner
 * (its uid and a dumpable owner, or CAP_SYS_PTRACE), and the object's
 * file mode applies.
 *
 * Invariants: the lookup lock protects only the caches here and is never
 * held across a system call on the owner; a registry is trusted only with
 * its size, magic and slot count right, and a slot only when it holds the
 * 64-bit segid asked for.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shm.h"

/* Owners whose registry descriptor is remembered. */
#define REG_HINTS		16

/* Most supplementary groups the permission check looks at. */
#define SELF_MAX_GROUPS		256


/* Where the registry of the owner with this (/proc) pid was last found. */
struct reg_hint {
	pid_t pid;
	int fd;
};

/* The lookup lock and the caches it protects. */
static pthread_mutex_t lookup_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reg_hint reg_hints[REG_HINTS];
static unsigned int reg_hint_next;
static pid_t procns_checked;	/* process that checked its /proc */
static int procns_foreign;	/* /proc is not our PID namespace's */

void xpmem_lib_shm_lookup_atfork(int phase)
{
	if (phase == SHM_FORK_PREPARE)
		pthread_mutex_lock(&lookup_lock);
	else
		pthread_mutex_unlock(&lookup_lock);
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

	pthread_mutex_lock(&lookup_lock);
	if (procns_checked == me) {
		foreign = procns_foreign;
		pthread_mutex_unlock(&lookup_lock);
		return foreign;
	}
	pthread_mutex_unlock(&lookup_lock);
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
	pthread_mutex_lock(&lookup_lock);
	procns_checked = me;
	procns_foreign = foreign;
	pthread_mutex_unlock(&lookup_lock);
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

/* Slot @slot of the registry @regfd into @s: 0 or -ENOENT. */
int xpmem_lib_shm_read_slot(int regfd, unsigned int slot,
			    struct shm_reg_slot *s)
{
	if (pread(regfd, s, sizeof(*s), shm_slot_pos(slot)) !=
	    (ssize_t)sizeof(*s))
		return -ENOENT;
	return 0;
}

/* Whether @regfd is a registry at all (a memfd of that name may not be). */
int xpmem_lib_shm_registry_valid(int regfd)
{
	struct shm_reg_header hdr;
	struct stat st;

	return fstat(regfd, &st) == 0 && S_ISREG(st.st_mode) &&
	       st.st_size == (off_t)SHM_REG_SIZE &&
	       pread(regfd, &hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) &&
	       hdr.magic == SHM_REG_MAGIC && hdr.nslots == SHM_REG_SLOTS;
}

/* Whether the registry @regfd holds @segid; copies its slot to @s. */
int xpmem_lib_shm_registry_holds(int regfd, xpmem_segid_t segid,
				 struct shm_reg_slot *s)
{
	return xpmem_lib_shm_read_slot(regfd, xpmem_lib_shm_slot_of(segid), s) == 0 &&
	       s->segid == (uint64_t)segid;
}

static int reg_hint_get(pid_t pid)
{
	int i, fd = -1;

	pthread_mutex_lock(&lookup_lock);
	for (i = 0; i < REG_HINTS; i++)
		if (reg_hints[i].pid == pid)
			fd = reg_hints[i].fd;
	pthread_mutex_unlock(&lookup_lock);
	return fd;
}

static void reg_hint_set(pid_t pid, int fd)
{
	int i;

	pthread_mutex_lock(&lookup_lock);
	for (i = 0; i < REG_HINTS && reg_hints[i].pid != pid; i++)
		;
	if (i == REG_HINTS)
		i = (int)(reg_hint_next++ % REG_HINTS);
	reg_hints[i].pid = pid;
	reg_hints[i].fd = fd;
	pthread_mutex_unlock(&lookup_lock);
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
		if (fd >= 0 && xpmem_lib_shm_registry_holds(fd, segid, s)) {
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
		if (xpmem_lib_shm_registry_valid(fd) &&
		    xpmem_lib_shm_registry_holds(fd, segid, s)) {
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
 * xpmem_lib_shm_registry_owned - whether the owner of the registry @regfd
 * still holds it open: it keeps an OFD write lock on the header while it
 * does (shm_wire.h), which exit, kill -9 and exec drop, and which no
 * holder of a read-only descriptor can take.
 */
int xpmem_lib_shm_registry_owned(int regfd)
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
 * The SysV check of the permit mode in @s for this process (root's
 * CAP_IPC_OWNER included), and a read-only export refusing XPMEM_RDWR.
 */
static int check_mode(const struct shm_reg_slot *s, int flags)
{
	enum shm_access need = flags == XPMEM_RDONLY ? SHM_ACCESS_READ :
			       SHM_ACCESS_RDWR;
	gid_t groups[SELF_MAX_GROUPS];
	struct shm_cred me;

	xpmem_lib_shm_self_cred(&me, groups, SELF_MAX_GROUPS);
	if (xpmem_lib_shm_mode_access(s, &me) >= need)
		return 0;
	if (flags == XPMEM_RDWR && (s->flags & SHM_SLOT_RDONLY))
		xpmem_lib_log("get: a read-only export");
	else
		xpmem_lib_log("get: mode %#o does not grant %s", s->mode,
			      flags == XPMEM_RDONLY ? "read" : "read-write");
	return -EACCES;
}

/*
 * xpmem_lib_shm_get_through_proc - fill @p for @segid from the owner's
 * /proc/<@pid>: its registry, the permit check, the object opened for
 * @flags.  The way for peers of the owner's uid (ptrace access) and root.
 */
int xpmem_lib_shm_get_through_proc(struct shm_permit *p, xpmem_segid_t segid,
				   int flags, pid_t pid,
				   struct shm_reg_slot *s)
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
 * The segment's bell (shm_wire.h), read end, through the owner's /proc
 * (a pipe opened there is opened as a FIFO): its POLLHUP is the event.
 * It is the segment's if the slot still names the segment afterwards
 * (the owner clears the slot before it closes the bell, and the number
 * cannot be another file before that).  A permit from the owner (a peer
 * of another uid) gets its bell with the grant (shm_lookup.c).
 */
void xpmem_lib_shm_bell_open(struct shm_permit *p,
			     const struct shm_reg_slot *s)
{
	struct shm_reg_slot again;
	struct stat st;
	char path[32];
	int fd;

	if (p->procfd < 0)
		return;
	snprintf(path, sizeof(path), "fd/%d", s->bell_fd);
	fd = openat(p->procfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !S_ISFIFO(st.st_mode) ||
	    !xpmem_lib_shm_registry_holds(p->regfd, p->segid, &again)) {
		xpmem_lib_log("get %#llx: no bell (%s): no events for it",
			      (unsigned long long)p->segid,
			      fd < 0 ? strerror(errno) : "not the segment's");
		if (fd >= 0)
			close(fd);
		return;
	}
	p->bellfd = fd;
}
