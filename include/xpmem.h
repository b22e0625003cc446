/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * xpmem.h - public interface of libxpmem.so.0.
 *
 * Part 1 is the classic libxpmem API: the same types, constants and seven
 * functions (plus xpmem_init) with the same signatures and return
 * conventions as the libxpmem headers existing MPI/PGAS runtimes are built
 * against.  Errors are reported as -1 (or (void *)-1 for xpmem_attach) with
 * errno set.
 *
 * Part 2 holds this library's extensions.  Every extension name starts with
 * xpmem_ext_ / XPMEM_EXT_.  They are additive: a program that uses only
 * part 1 builds and behaves exactly as with the classic library.
 *
 * The library serves the API from one of two backends, chosen once per
 * process on first use: the kernel module (/dev/xpmem) or, when the module
 * is absent or XPMEM_BACKEND=shm, POSIX shared memory.  docs/library.md
 * lists every behavioural difference between them.
 */
#ifndef _XPMEM_H
#define _XPMEM_H

#include <stddef.h>
#include "xpmem_uapi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- part 1: classic API ---------------------------------------------- */

/*
 * xpmem_version - version of the active backend.
 *
 * Returns the kernel module's version (>= 0) on the kernel backend.  On the
 * shared-memory backend it returns -1 with errno ENODEV, because the classic
 * API cannot be fully served there (no whole-address-space export); callers
 * that treat "version >= 0" as "xpmem is usable" (UCX) then fall back.
 */
int xpmem_version(void);

/*
 * xpmem_make - export [vaddr, vaddr + size) of the caller as a segment.
 * @permit_type:  XPMEM_PERMIT_MODE
 * @permit_value: the 0777-style access mode, cast to a pointer
 *
 * Returns a positive segment id, or -1 with errno.
 */
xpmem_segid_t xpmem_make(void *vaddr, size_t size, int permit_type,
			 void *permit_value);

/* xpmem_remove - withdraw a segment made by the caller.  0 or -1/errno. */
int xpmem_remove(xpmem_segid_t segid);

/*
 * xpmem_get - obtain an access permit for a segment.
 * @flags:        XPMEM_RDONLY or XPMEM_RDWR
 * @permit_type:  XPMEM_PERMIT_MODE
 * @permit_value: ignored (some callers pass NULL, others (void *)0666)
 *
 * Returns a positive access permit id, or -1 with errno.
 */
xpmem_apid_t xpmem_get(xpmem_segid_t segid, int flags, int permit_type,
		       void *permit_value);

/* xpmem_release - drop a permit and detach its attachments.  0 or -1/errno. */
int xpmem_release(xpmem_apid_t apid);

/*
 * xpmem_attach - map @size bytes of a segment at page-aligned @addr.offset.
 * @vaddr: the address to map at, or NULL to let the system choose.
 *
 * Returns the address of the attachment, or (void *)-1 with errno.
 */
void *xpmem_attach(struct xpmem_addr addr, size_t size, void *vaddr);

/* xpmem_detach - unmap the attachment containing @vaddr.  0 or -1/errno. */
int xpmem_detach(void *vaddr);

/*
 * xpmem_init - select and set up the backend now instead of on first use.
 * Returns 0 when a backend is available, -1 with errno otherwise (e.g.
 * ENODEV for XPMEM_BACKEND=kernel without the module).
 */
int xpmem_init(void);

/* ---- part 2: extensions (not in the classic libxpmem) ------------------ */

/* Backends, as reported by xpmem_ext_backend(). */
enum xpmem_ext_backend_id {
	XPMEM_EXT_BACKEND_NONE = 0,	/* no backend could be set up */
	XPMEM_EXT_BACKEND_KERNEL = 1,	/* ioctls on /dev/xpmem */
	XPMEM_EXT_BACKEND_SHM = 2,	/* POSIX shared memory fallback */
};

/*
 * xpmem_ext_backend - which backend serves this process, and why.
 * @reason: if not NULL, receives a static human-readable explanation
 *          (e.g. "XPMEM_BACKEND=shm" or "auto: /dev/xpmem: No such file
 *          or directory"); valid for the life of the process.
 *
 * Selects the backend if that has not happened yet.  Returns one of
 * enum xpmem_ext_backend_id; XPMEM_EXT_BACKEND_NONE comes with errno set
 * to the reason no backend is usable.
 */
int xpmem_ext_backend(const char **reason);

/* xpmem_ext_backend_name - "kernel", "shm" or "none". */
const char *xpmem_ext_backend_name(int backend);

/*
 * Feature bits of the active backend, from xpmem_ext_features().  A
 * fallback-aware caller checks them instead of guessing from the backend.
 */
/* make(NULL, XPMEM_MAXADDR_SIZE) works */
#define XPMEM_EXT_F_WHOLE_AS	0x01UL
/* any mapped page-aligned range exports */
#define XPMEM_EXT_F_ANY_MEMORY	0x02UL
/* private anonymous ranges export by in-place migration onto shared memory */
#define XPMEM_EXT_F_MIGRATE	0x04UL
/* peers with another uid can attach when the permit mode allows it */
#define XPMEM_EXT_F_CROSS_USER	0x08UL
/* remove/owner exit revokes existing attachments (access => SIGBUS) */
#define XPMEM_EXT_F_REVOKE	0x10UL
/* attachments follow the owner's later munmap/mmap/fork (mirror) */
#define XPMEM_EXT_F_COHERENT	0x20UL
/* xpmem_ext_attach() takes its flags (the module answers XPMEM_CMD_EXT_QUERY) */
#define XPMEM_EXT_F_ATTACH_OPTS	0x40UL
/* owner huge pages (THP, hugetlb) map as huge pages in attachments */
#define XPMEM_EXT_F_HUGE	0x80UL
/* xpmem_ext_make() and xpmem_ext_get_key(): keys, read-only exports */
#define XPMEM_EXT_F_KEYS	0x100UL
/* authorization keys in xpmem_ext_make() and xpmem_ext_get*() */
#define XPMEM_EXT_F_AUTH	0x200UL
/* xpmem_ext_copy*(), xpmem_ext_populate() and the queue API */
#define XPMEM_EXT_F_COPY	0x400UL
/* xpmem_ext_prep_*() fill SQEs for the caller's own io_uring */
#define XPMEM_EXT_F_URING	0x800UL
/* xpmem_ext_makev(): several buffers as one segment */
#define XPMEM_EXT_F_MAKEV	0x1000UL
/* xpmem_ext_prep_copy_fixed(): copies to/from registered ring buffers */
#define XPMEM_EXT_F_URING_FIXED	0x2000UL
/*
 * XPMEM_EXT_MAKE_ANY_NS: segments other IPC namespaces (containers) may
 * get, with the authorization key (the kernel backend only)
 */
#define XPMEM_EXT_F_ANY_NS	0x4000UL
/* XPMEM_EXT_ATTACH_ZERO_REVOKED: revoked attachments read zeros (kernel) */
#define XPMEM_EXT_F_ZERO_REVOKED 0x8000UL
/* xpmem_ext_event_fd() and xpmem_ext_events() */
#define XPMEM_EXT_F_EVENTS	0x10000UL

/* xpmem_ext_features - XPMEM_EXT_F_* of the active backend; 0 if none. */
unsigned long xpmem_ext_features(void);

/*
 * xpmem_ext_attach - xpmem_attach() with options.
 * @flags: 0 or more of (from xpmem_uapi.h)
 *   XPMEM_EXT_ATTACH_RDONLY          map read-only, even through an
 *                                    XPMEM_RDWR permit;
 *   XPMEM_EXT_ATTACH_POPULATE        map what the owner has resident now,
 *                                    so that a first read pass takes no
 *                                    page faults;
 *   XPMEM_EXT_ATTACH_POPULATE_WRITE  the same for a first write pass
 *                                    (writable where the owner's pages are;
 *                                    needs an XPMEM_RDWR permit);
 *   XPMEM_EXT_ATTACH_ZERO_REVOKED    once revoked (segment removed, permit
 *                                    released, owner exited or killed),
 *                                    the attachment stays mapped and reads
 *                                    zeros; writes go to pages of its own
 *                                    that nobody else sees; no SIGBUS (a
 *                                    hole in a live owner still is).
 * @vaddr, @size and the result are as for xpmem_attach(); flags 0 is
 * exactly xpmem_attach().  Populating is best effort: ranges the owner
 * maps nothing in are skipped.
 *
 * Returns the address, or (void *)-1 with errno: EINVAL for unknown flags
 * or RDONLY with POPULATE_WRITE, EACCES for POPULATE_WRITE through an
 * XPMEM_RDONLY permit, EOPNOTSUPP for flags on a module too old for them
 * (XPMEM_EXT_F_ATTACH_OPTS is not in xpmem_ext_features()) and for
 * ZERO_REVOKED where XPMEM_EXT_F_ZERO_REVOKED is not (the shm backend,
 * which never revokes), and what xpmem_attach() returns.
 */
void *xpmem_ext_attach(struct xpmem_addr addr, size_t size, void *vaddr,
		       unsigned int flags);

/*
 * xpmem_ext_make - xpmem_make() with options.
 * @vaddr, @size: as for xpmem_make()
 * @mode: the permit mode (0..0777), as XPMEM_PERMIT_MODE's value
 * @flags: 0 or more of XPMEM_EXT_MAKE_RDONLY (xpmem_ext_get*() grant
 *         read-only permits only, whatever the mode) and
 *         XPMEM_EXT_MAKE_ANY_NS (gets from any IPC namespace of the host
 *         find it by its segid too, e.g. from other containers; needs
 *         @auth, which every get must present)
 * @key, @key_len: NULL and 0, or a name of 1..XPMEM_EXT_KEY_MAX bytes
 *         (any bytes, compared in full) under which xpmem_ext_get_key()
 *         finds the segment in this IPC namespace until it is removed
 * @auth, @auth_len: NULL and 0, or a secret of 1..XPMEM_EXT_AUTH_MAX bytes
 *         that every get of the segment must present (xpmem_get() cannot)
 *
 * Returns the segid, or -1 with errno: EEXIST for a key in use, EINVAL for
 * bad flags, lengths or mode (or ANY_NS without @auth), EOPNOTSUPP where
 * XPMEM_EXT_F_KEYS (for ANY_NS: XPMEM_EXT_F_ANY_NS) is not in
 * xpmem_ext_features(), and what xpmem_make() returns.
 */
xpmem_segid_t xpmem_ext_make(void *vaddr, size_t size, int mode,
			     unsigned int flags, const void *key,
			     size_t key_len, const void *auth,
			     size_t auth_len);

struct iovec;

/*
 * xpmem_ext_makev - xpmem_ext_make() of several buffers as one segment.
 * @iov, @iovcnt: 1..XPMEM_EXT_MAKE_IOV_MAX buffers, each page aligned
 *         (base and length, no length 0), anywhere and in any order; the
 *         segment is their concatenation: offset 0 is iov[0].iov_base,
 *         iov[1] follows at offset iov[0].iov_len, and so on.  An
 *         attachment of it is one contiguous mapping, and copies cross
 *         from one buffer to the next.
 * The other arguments and the result are as for xpmem_ext_make().
 * EOPNOTSUPP for more than one buffer where XPMEM_EXT_F_MAKEV is not in
 * xpmem_ext_features() (the shm backend, a module without it).
 */
xpmem_segid_t xpmem_ext_makev(const struct iovec *iov, int iovcnt, int mode,
			      unsigned int flags, const void *key,
			      size_t key_len, const void *auth,
			      size_t auth_len);

/*
 * xpmem_ext_get - xpmem_get() presenting an authorization key.
 * @auth, @auth_len: the segment's secret (NULL and 0 for none)
 *
 * Returns the apid, or -1 with errno: EACCES also for a missing or wrong
 * authorization key, or one presented for a segment that has none.
 */
xpmem_apid_t xpmem_ext_get(xpmem_segid_t segid, int flags, const void *auth,
			   size_t auth_len);

/*
 * xpmem_ext_get_key - xpmem_ext_get() of the segment made with @key.
 * @segid: if not NULL, receives the segment's id
 *
 * ENOENT if no segment of this IPC namespace has the key.
 */
xpmem_apid_t xpmem_ext_get_key(const void *key, size_t key_len, int flags,
			       const void *auth, size_t auth_len,
			       xpmem_segid_t *segid);

/* xpmem_ext_alloc() flags */
#define XPMEM_EXT_ALLOC_HUGETLB	0x1U	/* try huge pages, quietly fall back */

/*
 * xpmem_ext_alloc - allocate memory that xpmem_make() can export on every
 * backend.  @size is rounded up to the page size (the huge page size when
 * huge pages were used).  The memory is zeroed and shared with children
 * after fork (it is a shared mapping, not copy-on-write).
 *
 * Returns the page-aligned address, or NULL with errno (EINVAL for size 0
 * or unknown flags, ENOSPC when the shared-memory directory is full,
 * ENOMEM).
 */
void *xpmem_ext_alloc(size_t size, unsigned int flags);

/*
 * xpmem_ext_free - free memory from xpmem_ext_alloc().  On the shm backend
 * segments made on it are removed first; on the kernel backend they stay
 * and their attachers see a hole (SIGBUS), as after munmap.  Returns 0, or
 * -1 with errno EINVAL if @addr did not come from xpmem_ext_alloc().
 */
int xpmem_ext_free(void *addr);

/* ---- part 2b: copies and io_uring (XPMEM_EXT_1.2) ----------------------- */

struct io_uring_sqe;

/*
 * xpmem_ext_copy - copy between @buf and a segment, through a permit and
 * without an attachment (as process_vm_readv(2) does between processes).
 * @apid:   the caller's permit (XPMEM_RDWR for XPMEM_EXT_COPY_TO)
 * @offset: byte offset into the segment, any alignment
 * @flags:  0 (segment to @buf) or XPMEM_EXT_COPY_TO (@buf to segment)
 *
 * The range must lie in the segment.  Returns the bytes copied (at most
 * 0x7ffff000; short only when an owner page that cannot be had, or a
 * fatal signal, stops the copy after its first byte), or -1 with errno:
 * EINVAL (flags, range), ENOENT (unknown or released permit, removed
 * segment, exited owner), EACCES (COPY_TO through a read-only permit),
 * EFAULT (memory that cannot be copied), EOPNOTSUPP (XPMEM_EXT_F_COPY is
 * not in xpmem_ext_features(): a module without the command).
 */
ssize_t xpmem_ext_copy(xpmem_apid_t apid, off_t offset, void *buf,
		       size_t len, unsigned int flags);

/*
 * xpmem_ext_copyv - xpmem_ext_copy() with @iovcnt (1..XPMEM_EXT_IOV_MAX)
 * local buffers; the segment side is contiguous from @offset.
 */
ssize_t xpmem_ext_copyv(xpmem_apid_t apid, off_t offset,
			const struct iovec *iov, int iovcnt,
			unsigned int flags);

/*
 * xpmem_ext_populate - fault in [@addr, @addr + @len) of the caller's
 * attachments, as XPMEM_EXT_ATTACH_POPULATE (@flags 0) or
 * XPMEM_EXT_ATTACH_POPULATE_WRITE (@flags XPMEM_EXT_POPULATE_WRITE) would
 * at attach time.  0, or -1 with errno (EFAULT where the range is not an
 * attachment, EACCES for WRITE over a read-only one, EINVAL).
 */
int xpmem_ext_populate(void *addr, size_t len, unsigned int flags);

/*
 * Callers with their own io_uring (liburing): xpmem_ext_prep_copy() and
 * xpmem_ext_prep_populate() fill @sqe (everything but user_data, which
 * they leave 0) with an operation whose CQE res is what xpmem_ext_copy()
 * or xpmem_ext_populate() returns, as -errno on failure.  @arg is read
 * when the operation is issued and must stay unchanged until its CQE, as
 * must the permit.  On the kernel backend the SQE is an IORING_OP_URING_CMD
 * on /dev/xpmem; on the shm backend a read or write of the segment's
 * object (populate: a no-op).  Returns 0, or -1 with errno for what can be
 * told at once (EINVAL, ENOENT, EACCES; EOPNOTSUPP without
 * XPMEM_EXT_F_URING).
 */
int xpmem_ext_prep_copy(struct io_uring_sqe *sqe,
			const struct xpmem_ext_copy *arg);
int xpmem_ext_prep_populate(struct io_uring_sqe *sqe,
			    const struct xpmem_ext_populate *arg);

/*
 * xpmem_ext_prep_copy_fixed - xpmem_ext_prep_copy() whose one local
 * buffer (@arg->addr, @arg->len; no XPMEM_EXT_COPY_IOV) lies inside the
 * buffer the caller registered with its ring at @buf_index
 * (io_uring_register_buffers()): the kernel copies into or out of the
 * pages the ring holds pinned.  A range outside that buffer completes
 * with -EFAULT.  EOPNOTSUPP without XPMEM_EXT_F_URING_FIXED.
 */
int xpmem_ext_prep_copy_fixed(struct io_uring_sqe *sqe,
			      const struct xpmem_ext_copy *arg,
			      unsigned int buf_index);

/*
 * Events: the process learns that a segment it holds a permit for has
 * ended, without touching it.  struct xpmem_ext_event (xpmem_uapi.h):
 * the segid, the apid of the permit, and the reason,
 * XPMEM_EXT_EVENT_REMOVED (xpmem_remove(), or the owner closed its
 * device) or XPMEM_EXT_EVENT_OWNER_EXITED (exit, kill -9, exec).  At
 * most one event per permit; none for a permit released before it was
 * read.
 *
 * xpmem_ext_event_fd - a descriptor that polls readable (POLLIN; poll,
 * epoll, io_uring's IORING_OP_POLL_ADD) while events may be waiting.  It
 * belongs to the library: do not read or close it.  The same one for
 * the life of the process; a child after fork() gets its own from its
 * own call (for its own permits).  Returns it, or -1 with errno
 * (EOPNOTSUPP without XPMEM_EXT_F_EVENTS, ENODEV without a backend).
 */
int xpmem_ext_event_fd(void);

/*
 * xpmem_ext_events - take up to @max (>= 1) events into @ev, oldest first;
 * never blocks.  Returns how many (0: none; the descriptor may wake with
 * none to report), or -1 with errno (EINVAL, EOPNOTSUPP, ENODEV).
 */
int xpmem_ext_events(struct xpmem_ext_event *ev, int max);

/*
 * A completion queue owned by the library, for callers without a ring:
 * queue operations (each with a caller's @tag), submit them, then reap
 * their completions in any order.  Operations run concurrently, in the
 * kernel's io_uring workers on the kernel backend (on both backends
 * synchronously at submit when io_uring is unavailable).  Buffers, iovecs
 * and permits must stay valid until the operation's completion.  A queue
 * belongs to one thread at a time and is not inherited over fork().
 */
struct xpmem_ext_queue;

struct xpmem_ext_completion {
	unsigned long long tag;		/* as queued */
	long long result;		/* as xpmem_ext_copy(): >= 0 or -errno */
};

/* At most @depth (1..4096) operations queued or in flight.  NULL/errno. */
struct xpmem_ext_queue *xpmem_ext_queue_create(unsigned int depth);

/* Queue a copy (as xpmem_ext_copy()).  0, or -1 with errno (EBUSY: full). */
int xpmem_ext_queue_copy(struct xpmem_ext_queue *q, xpmem_apid_t apid,
			 off_t offset, void *buf, size_t len,
			 unsigned int flags, unsigned long long tag);

/* Queue a vectored copy; @iov must stay valid until its completion. */
int xpmem_ext_queue_copyv(struct xpmem_ext_queue *q, xpmem_apid_t apid,
			  off_t offset, const struct iovec *iov, int iovcnt,
			  unsigned int flags, unsigned long long tag);

/* Queue a populate (as xpmem_ext_populate()). */
int xpmem_ext_queue_populate(struct xpmem_ext_queue *q, void *addr,
			     size_t len, unsigned int flags,
			     unsigned long long tag);

/* Start what was queued.  Returns how many started, or -1 with errno. */
int xpmem_ext_queue_submit(struct xpmem_ext_queue *q);

/*
 * Reap up to @max completions into @c; with @wait, block until at least
 * one is there (if anything is in flight).  Returns how many, or -1/errno.
 */
int xpmem_ext_queue_reap(struct xpmem_ext_queue *q,
			 struct xpmem_ext_completion *c, unsigned int max,
			 int wait);

/* Wait for what is in flight (its completions are dropped), then free. */
void xpmem_ext_queue_destroy(struct xpmem_ext_queue *q);

#ifdef __cplusplus
}
#endif

#endif /* _XPMEM_H */
