// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_peer.c - the peer's entry points: permits (xpmem_get, xpmem_release),
 * attachments (xpmem_attach, xpmem_detach, populate) and copies.
 *
 * A permit holds the owner's registry (to notice xpmem_remove), the
 * object, opened O_RDONLY or O_RDWR according to the permit, and on the
 * /proc way the owner's /proc/<pid> directory (it keeps naming that
 * process even if the pid is reused); shm_lookup.c fills them.  Mappings
 * of an O_RDONLY descriptor cannot be made writable, so XPMEM_RDONLY is
 * enforced by the kernel, not by us.  An apid is SHM_ID_MARK plus 46
 * random bits, unique among this process's permits: it only names a
 * permit of this process.
 *
 * Invariants: before each attach and copy, owner_alive() checks that the
 * owner still holds the registry and the slot still holds the segid (else
 * ENOENT); peer_lock protects the permit and attachment lists and is held
 * over no lookup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm.h"

struct attachment {
	struct attachment *next;
	char *addr;
	size_t size;
	xpmem_apid_t apid;
	int writable;
};

static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shm_permit *permits;
static struct attachment *attachments;
/* permits whose event was found and not taken, oldest end first */
static struct shm_permit *ev_head, **ev_tail = &ev_head;

static int event_start_locked(void);

void xpmem_lib_shm_peer_atfork(int phase)
{
	/* Permits and attachments stay valid in the child: its own copies. */
	if (phase == SHM_FORK_PREPARE) {
		pthread_mutex_lock(&peer_lock);
		return;
	}
	if (phase == SHM_FORK_CHILD)	/* the event descriptor is not */
		xpmem_lib_shm_event_reset_in_child();
	pthread_mutex_unlock(&peer_lock);
}

/*
 * owner_alive - the owner of permit @p still runs and still holds its
 * registry.  Through /proc: the registry is still at its descriptor number
 * in the owner (an exited owner has no descriptors left, even as a
 * zombie, and a /proc/<pid> directory of a reaped process stays empty even
 * when the pid is reused).  Otherwise: the owner's lock on it.
 */
static int owner_alive(const struct shm_permit *p)
{
	struct stat a, b;
	char path[32];

	if (p->procfd < 0)
		return xpmem_lib_shm_registry_owned(p->regfd);
	snprintf(path, sizeof(path), "fd/%d", p->regfd_owner);
	return fstatat(p->procfd, path, &a, 0) == 0 &&
	       fstat(p->regfd, &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

static struct shm_permit *permit_find_locked(xpmem_apid_t apid)
{
	struct shm_permit *p;

	for (p = permits; p; p = p->next)
		if (p->apid == apid)
			return p;
	return NULL;
}

/* Close a permit's descriptors and free it. */
static void permit_free(struct shm_permit *p)
{
	if (p->objfd >= 0)
		close(p->objfd);
	if (p->regfd >= 0)
		close(p->regfd);
	if (p->procfd >= 0)
		close(p->procfd);
	if (p->bellfd >= 0)
		close(p->bellfd);
	free(p);
}

/* ---- get / release ------------------------------------------------------ */

/* Give @p an apid no other permit of this process has, and list it. */
static int permit_add(struct shm_permit *p)
{
	uint64_t id;
	int ret;

	pthread_mutex_lock(&peer_lock);
	do {
		ret = xpmem_lib_shm_id_draw(&id);
	} while (!ret && permit_find_locked((xpmem_apid_t)id));
	if (!ret) {
		/* the set hears every end from the first permit on */
		event_start_locked();
		p->apid = (xpmem_apid_t)id;
		p->next = permits;
		permits = p;
		xpmem_lib_shm_event_watch_locked(p->bellfd, p);
	}
	pthread_mutex_unlock(&peer_lock);
	return ret;
}

/*
 * xpmem_lib_shm_get - a permit for @req's segment (found by its key if it
 * has one); its apid in @apid, the segment's segid in @segid.
 */
int xpmem_lib_shm_get(const struct xpmem_lib_get_req *req, xpmem_apid_t *apid,
		      xpmem_segid_t *segid)
{
	struct xpmem_lib_get_req by_id = *req;
	struct shm_reg_slot s;
	struct shm_permit *p;
	int ret;

	if (req->key) {
		ret = xpmem_lib_shm_lookup_key(req, &by_id.segid);
		if (ret)
			return ret;
		by_id.key = NULL;
		by_id.key_len = 0;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->procfd = p->regfd = p->objfd = p->regfd_owner = p->bellfd = -1;
	ret = xpmem_lib_shm_lookup(p, &by_id, &s);
	if (ret)
		goto free_p;
	p->segid = by_id.segid;
	p->flags = by_id.flags;
	p->slot = xpmem_lib_shm_slot_of(by_id.segid);
	p->offset = s.offset;
	p->size = s.size;
	p->page = s.page_size ? s.page_size : xpmem_lib_page_size();
	if (p->bellfd < 0)
		xpmem_lib_shm_bell_open(p, &s);
	ret = permit_add(p);
	if (ret)
		goto free_p;
	*apid = p->apid;
	*segid = by_id.segid;
	return 0;

free_p:
	permit_free(p);
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
	struct shm_permit **pp, *p = NULL;

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
	xpmem_lib_shm_event_unwatch_locked(p->bellfd);
	if (p->ev > 0) {	/* its event, not taken, goes with it */
		struct shm_permit **q;

		for (q = &ev_head; *q != p; q = &(*q)->ev_next)
			;
		*q = p->ev_next;
		if (ev_tail == &p->ev_next)
			ev_tail = q;
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

/*
 * permit_live_locked - the permit @apid, if its segment still lives: the
 * owner still holds its registry and the slot still holds the segid.
 * @what names the operation in the log.
 */
static int permit_live_locked(xpmem_apid_t apid, const char *what,
			      struct shm_permit **out)
{
	struct shm_permit *p = permit_find_locked(apid);
	struct shm_reg_slot s;

	if (!p)
		return -ENOENT;
	if (!owner_alive(p) ||
	    xpmem_lib_shm_read_slot(p->regfd, p->slot, &s) ||
	    s.segid != (uint64_t)p->segid) {
		xpmem_lib_log("%s: segment was removed or its owner exited",
			      what);
		return -ENOENT;
	}
	*out = p;
	return 0;
}

/*
 * The checks of an attach of *@size bytes at segment offset @off through
 * @p, *@size rounded up to the object's pages (huge-page objects map whole
 * huge pages past a segment's end).
 */
static int attach_check(const struct shm_permit *p, uint64_t off,
			size_t *size, void *vaddr, unsigned int flags)
{
	uint64_t span;

	if (*size > SIZE_MAX - p->page)
		return -EINVAL;
	*size = (*size + p->page - 1) & ~(p->page - 1);
	span = (p->size + p->page - 1) & ~(p->page - 1);
	if (off % p->page || (uintptr_t)vaddr % p->page || off > span ||
	    *size > span - off) {
		xpmem_lib_log("attach: offset %#llx size %#zx outside the "
			      "%#llx-byte segment or not %llu-aligned",
			      (unsigned long long)off, *size,
			      (unsigned long long)p->size,
			      (unsigned long long)p->page);
		return -EINVAL;
	}
	if ((flags & XPMEM_EXT_ATTACH_POPULATE_WRITE) &&
	    p->flags == XPMEM_RDONLY) {
		xpmem_lib_log("attach: POPULATE_WRITE through a read-only permit");
		return -EACCES;
	}
	return 0;
}

/*
 * Map @size bytes at segment offset @off through @p at @vaddr (NULL:
 * anywhere), read-only for a read-only permit or XPMEM_EXT_ATTACH_RDONLY.
 * *@prot receives the protection.
 */
static int attach_map(const struct shm_permit *p, uint64_t off, size_t size,
		      void *vaddr, unsigned int flags, void **m, int *prot)
{
	int fd = p->objfd, ret;

	*prot = p->flags == XPMEM_RDONLY || (flags & XPMEM_EXT_ATTACH_RDONLY) ?
		PROT_READ : PROT_READ | PROT_WRITE;
	if (p->flags != XPMEM_RDONLY && (flags & XPMEM_EXT_ATTACH_RDONLY)) {
		/*
		 * A read-only description of the same object, so that
		 * mprotect() cannot make the mapping writable (as on the
		 * kernel backend).
		 */
		fd = xpmem_lib_shm_reopen_rdonly(p->objfd);
		if (fd < 0) {
			xpmem_lib_log("attach: read-only reopen: %s",
				      strerror(-fd));
			return fd;
		}
	}
	*m = mmap(vaddr, size, *prot, MAP_SHARED | (vaddr ? MAP_FIXED : 0),
		  fd, (off_t)(p->offset + off));
	ret = *m == MAP_FAILED ? -errno : 0;
	if (fd != p->objfd)
		close(fd);
	return ret;
}

int xpmem_lib_shm_attach(xpmem_apid_t apid, off_t offset, size_t size,
			 void *vaddr, unsigned int flags, void **addr)
{
	struct attachment *a = calloc(1, sizeof(*a));
	uint64_t off = (uint64_t)offset;
	struct shm_permit *p;
	int prot, ret;
	void *m;

	if (!a)
		return -ENOMEM;
	pthread_mutex_lock(&peer_lock);
	ret = permit_live_locked(apid, "attach", &p);
	if (!ret)
		ret = attach_check(p, off, &size, vaddr, flags);
	if (!ret)
		ret = attach_map(p, off, size, vaddr, flags, &m, &prot);
	if (ret) {
		pthread_mutex_unlock(&peer_lock);
		free(a);
		return ret;
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
	struct shm_permit *p;
	int ret;

	pthread_mutex_lock(&peer_lock);
	ret = permit_live_locked(apid, "copy", &p);
	if (ret)
		goto unlock;
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

/* ---- events --------------------------------------------------------------- */

/*
 * Has @p's segment ended?  Then its event is queued, behind those found
 * before, and it leaves the set (its bell would poll ready for good).
 * What ended is read from the registry: the segment (its slot cleared: the
 * owner removed it, whether it exited since or not) or the owner (gone
 * with the slot still set).  Returns whether it ended.
 */
static int permit_check_locked(struct shm_permit *p)
{
	struct shm_reg_slot s;

	if (!xpmem_lib_shm_registry_holds(p->regfd, p->segid, &s))
		p->ev = XPMEM_EXT_EVENT_REMOVED;
	else if (!owner_alive(p))
		p->ev = XPMEM_EXT_EVENT_OWNER_EXITED;
	else
		return 0;
	xpmem_lib_shm_event_unwatch_locked(p->bellfd);
	p->ev_next = NULL;
	*ev_tail = p;
	ev_tail = &p->ev_next;
	return 1;
}

/*
 * Queue the events of the segments that ended, in the order they ended:
 * first the bells that rang, in the order they rang (a segment's bell
 * rings right after its end); then any other permit found ended (one
 * without a bell, or whose bell rings as we look).
 */
static void permits_scan_locked(void)
{
	struct shm_permit *p;
	void *rung[64];
	int i, n, found;

	xpmem_lib_shm_event_drain_locked();
	do {
		n = xpmem_lib_shm_event_rung_locked(rung, 64);
		found = 0;
		for (i = 0; i < n; i++) {
			p = rung[i];
			if (p && !p->ev)
				found += permit_check_locked(p);
		}
	} while (n == 64 && found);
	for (p = permits; p; p = p->next)
		if (!p->ev)
			permit_check_locked(p);
}

/*
 * The event descriptor, made now if need be: when made, every permit's
 * bell joins it, and if there were any, the next xpmem_ext_events() looks
 * at every permit (it polls readable at once).  Made at the first permit
 * (so that bells ring in its ready list in the order the segments end)
 * or by the first question (a fork child's, or after a failure).
 */
static int event_start_locked(void)
{
	struct shm_permit *p;
	int fd, fresh, any = 0;

	fresh = !xpmem_lib_shm_event_active_locked();
	fd = xpmem_lib_shm_event_open_locked();
	if (fd >= 0 && fresh) {
		for (p = permits; p; p = p->next) {
			if (!p->ev) {
				xpmem_lib_shm_event_watch_locked(p->bellfd, p);
				any = 1;
			}
		}
		if (any)
			xpmem_lib_shm_event_more_locked();
	}
	return fd;
}

/* xpmem_lib_shm_event_fd - the event descriptor. */
int xpmem_lib_shm_event_fd(void)
{
	int fd;

	pthread_mutex_lock(&peer_lock);
	fd = event_start_locked();
	pthread_mutex_unlock(&peer_lock);
	return fd;
}

/*
 * xpmem_lib_shm_events - up to @max events found, once each, oldest end
 * first.
 */
int xpmem_lib_shm_events(struct xpmem_ext_event *ev, unsigned int max)
{
	struct shm_permit *p;
	unsigned int n = 0;
	int fd = xpmem_lib_shm_event_fd();

	if (fd < 0)
		return fd;
	pthread_mutex_lock(&peer_lock);
	permits_scan_locked();
	while (n < max && ev_head) {
		p = ev_head;
		ev_head = p->ev_next;
		if (!ev_head)
			ev_tail = &ev_head;
		ev[n++] = (struct xpmem_ext_event){
			.segid = p->segid, .apid = p->apid,
			.reason = (uint32_t)p->ev,
		};
		p->ev = -1;
	}
	if (ev_head)
		xpmem_lib_shm_event_more_locked();
	pthread_mutex_unlock(&peer_lock);
	return (int)n;
}
