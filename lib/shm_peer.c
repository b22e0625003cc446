// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_peer.c - the attaching side of the shm backend: permits (xpmem_get /
 * xpmem_release) and attachments (xpmem_attach / xpmem_detach).
 *
 * A permit holds three descriptors: the owner's /proc/<pid> directory (it
 * keeps naming that process even if the pid is reused, and works where a
 * pidfd cannot: from a child PID namespace through the parent's /proc), the
 * owner's registry (to notice xpmem_remove) and the object itself, opened O_RDONLY or O_RDWR according to the permit.  Mappings of
 * an O_RDONLY descriptor cannot be made writable, so XPMEM_RDONLY is
 * enforced by the kernel, not by us.
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
 * Lock: peer_lock protects the permit and attachment lists.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm.h"

struct permit {
	struct permit *next;
	xpmem_apid_t apid;
	int flags;		/* XPMEM_RDONLY or XPMEM_RDWR */
	int procfd;		/* /proc/<owner pid> */
	int regfd;
	int regfd_owner;	/* the registry's fd number in the owner */
	int objfd;
	unsigned int slot;
	uint32_t tag;		/* full slot tag at get time */
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

static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
static struct permit *permits;
static struct attachment *attachments;
static xpmem_apid_t next_apid = 1;

void xpmem_lib_shm_peer_atfork(int phase)
{
	/* Permits and attachments stay valid in the child: its own copies. */
	if (phase == SHM_FORK_PREPARE)
		pthread_mutex_lock(&peer_lock);
	else
		pthread_mutex_unlock(&peer_lock);
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

static int read_slot(int regfd, unsigned int slot, struct shm_reg_slot *s)
{
	if (pread(regfd, s, sizeof(*s), shm_slot_pos(slot)) !=
	    (ssize_t)sizeof(*s))
		return -ENOENT;
	return 0;
}

/*
 * check_registry - the registry we opened belongs to the process /proc/<pid>
 * names, in the PID namespace that process lives in.
 */
static int check_registry(int procfd, int regfd, pid_t pid)
{
	struct shm_reg_header hdr;
	struct stat st;

	if (fstat(regfd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size != (off_t)SHM_REG_SIZE ||
	    pread(regfd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    hdr.magic != SHM_REG_MAGIC || hdr.nslots != SHM_REG_SLOTS) {
		xpmem_lib_log("get: process %d has no xpmem registry there "
			      "(stale segid?)", (int)pid);
		return -ENOENT;
	}
	if (hdr.pid != pid ||
	    (hdr.pidns_ino && (fstatat(procfd, "ns/pid", &st, 0) != 0 ||
			       st.st_ino != hdr.pidns_ino ||
			       st.st_dev != hdr.pidns_dev))) {
		xpmem_lib_log("get: registry found at pid %d belongs to pid %d "
			      "of another process or PID namespace", (int)pid,
			      (int)hdr.pid);
		return -ENOENT;
	}
	return 0;
}

/* SysV IPC style check, as ipcperms() does it. */
static int check_mode(const struct shm_reg_slot *s, int flags)
{
	unsigned int need = flags == XPMEM_RDONLY ? 4 : 6;
	unsigned int bits;

	if (xpmem_lib_has_cap(CAP_IPC_OWNER))
		return 0;
	if (geteuid() == s->uid)
		bits = s->mode >> 6;
	else if (xpmem_lib_in_group(s->gid))
		bits = s->mode >> 3;
	else
		bits = s->mode;
	if ((bits & need) != need) {
		xpmem_lib_log("get: mode %#o does not grant %s", s->mode,
			      flags == XPMEM_RDONLY ? "read" : "read-write");
		return -EACCES;
	}
	return 0;
}

int xpmem_lib_shm_get(xpmem_segid_t segid, int flags, xpmem_apid_t *apid)
{
	struct shm_reg_slot s;
	struct shm_segid id;
	struct permit *p;
	char path[32];
	struct stat st;
	int ret;

	ret = xpmem_lib_shm_segid_decode(segid, &id);
	if (ret) {
		xpmem_lib_log("get %#llx: not a segid of the shm backend",
			      (unsigned long long)segid);
		return ret;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->regfd = p->objfd = -1;
	snprintf(path, sizeof(path), "/proc/%d", (int)id.pid);
	p->procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->procfd < 0) {
		ret = errno == EACCES ? -EACCES : -ENOENT;
		xpmem_lib_log("get: %s: %s", path, strerror(errno));
		goto free_p;
	}
	ret = open_owner_fd(p->procfd, id.pid, id.regfd, O_RDONLY);
	if (ret < 0)
		goto close_fds;
	p->regfd = ret;
	ret = check_registry(p->procfd, p->regfd, id.pid);
	if (!ret)
		ret = read_slot(p->regfd, id.slot, &s);
	if (ret)
		goto close_fds;
	if (!(s.tag & SHM_SLOT_USED) ||
	    (s.tag & ((1U << SHM_SEGID_TAG_BITS) - 1)) != id.tag) {
		xpmem_lib_log("get %#llx: segment was removed or never existed",
			      (unsigned long long)segid);
		ret = -ENOENT;
		goto close_fds;
	}
	ret = check_mode(&s, flags);
	if (ret)
		goto close_fds;
	ret = open_owner_fd(p->procfd, id.pid, s.obj_fd,
			    flags == XPMEM_RDONLY ? O_RDONLY : O_RDWR);
	if (ret < 0)
		goto close_fds;
	p->objfd = ret;
	if (fstat(p->objfd, &st) != 0 || st.st_ino != s.obj_ino ||
	    st.st_dev != s.obj_dev ||
	    !owner_alive(p->procfd, id.regfd, p->regfd)) {
		xpmem_lib_log("get %#llx: owner's object changed or owner exited",
			      (unsigned long long)segid);
		ret = -ENOENT;
		goto close_fds;
	}
	p->flags = flags;
	p->regfd_owner = id.regfd;
	p->slot = id.slot;
	p->tag = s.tag;
	p->offset = s.offset;
	p->size = s.size;
	p->page = s.page_size ? s.page_size : xpmem_lib_page_size();

	pthread_mutex_lock(&peer_lock);
	p->apid = next_apid++;
	p->next = permits;
	permits = p;
	*apid = p->apid;
	pthread_mutex_unlock(&peer_lock);
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

static struct permit *permit_find_locked(xpmem_apid_t apid)
{
	struct permit *p;

	for (p = permits; p; p = p->next)
		if (p->apid == apid)
			return p;
	return NULL;
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
	if (!owner_alive(p->procfd, p->regfd_owner, p->regfd) || read_slot(p->regfd, p->slot, &s) ||
	    s.tag != p->tag) {
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
