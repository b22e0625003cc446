/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * xpmem_lib.h - private declarations shared by the files of libxpmem.
 *
 * Inside the library, functions return 0 / a value on success and a
 * negative errno on failure; only the public entry points in api.c turn
 * that into the classic -1/errno convention.  Every symbol shared between
 * files starts with xpmem_lib_ and is hidden (-fvisibility=hidden plus the
 * version script), so nothing here leaks into the dynamic symbol table.
 */
#ifndef _XPMEM_LIB_H
#define _XPMEM_LIB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <linux/io_uring.h>
#include <xpmem.h>

/* A struct iovec is a struct xpmem_ext_iov: one array serves both. */
_Static_assert(sizeof(struct iovec) == sizeof(struct xpmem_ext_iov),
	       "iovec layout");

#define XPMEM_EXPORT __attribute__((visibility("default")))

/*
 * Huge pages of 2 MiB, the size both allocators round to, asked for by
 * size (MAP_HUGE_2MB, MFD_HUGE_2MB: log2 of the size at bit 26) rather
 * than the default hugetlb size: that is 2 MiB on x86_64 and on arm64
 * with 4 KiB pages, but 512 MiB on arm64 with 64 KiB pages (which has
 * 2 MiB pages too, of contiguous PTEs).
 */
#define XPMEM_LIB_HUGE_2MB_FLAG	(21U << 26)

/* ---- debug.c ----------------------------------------------------------- */

/* True when XPMEM_DEBUG is set to something other than "" or "0". */
int xpmem_lib_debug_enabled(void);

/* One line "libxpmem[pid]: ..." on stderr when XPMEM_DEBUG is set. */
void xpmem_lib_log(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * The same line whether XPMEM_DEBUG is set or not, once per process per
 * @done (a static int of the call site): for environment values the
 * library cannot honour, which would otherwise fail with a bare errno.
 */
void xpmem_lib_warn_once(int *done, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- util.c ------------------------------------------------------------ */

size_t xpmem_lib_page_size(void);
/* Fill @buf with random bytes (getrandom, never blocks after boot). */
int xpmem_lib_random(void *buf, size_t len);
/* @cap (CAP_*) is in the caller's effective capability set. */
int xpmem_lib_has_cap(int cap);

/* ---- requests ---------------------------------------------------------- */

/*
 * struct xpmem_lib_make_req - a make as api.c checked it: @iovcnt
 * (1..XPMEM_EXT_MAKE_IOV_MAX) buffers at @iov, a mode within 0777,
 * XPMEM_EXT_MAKE_RDONLY or 0, a key and an authorization key each NULL
 * (length 0) or 1..XPMEM_EXT_KEY_MAX / XPMEM_EXT_AUTH_MAX bytes.  @ext:
 * asked through xpmem_ext_make*(), so the kernel backend issues the
 * extension command (xpmem_make() is the classic one, with defaults).
 */
struct xpmem_lib_make_req {
	const struct iovec *iov;
	int iovcnt;
	int mode;
	unsigned int flags;
	const void *key;
	size_t key_len;
	const void *auth;
	size_t auth_len;
	int ext;
};

/*
 * struct xpmem_lib_get_req - a get as api.c checked it: of @segid, or
 * (@key non-NULL, @segid 0) of the segment made with @key; XPMEM_RDONLY or
 * XPMEM_RDWR; an authorization key NULL or 1..XPMEM_EXT_AUTH_MAX bytes.
 * @ext as for make.
 */
struct xpmem_lib_get_req {
	xpmem_segid_t segid;
	int flags;
	const void *key;
	size_t key_len;
	const void *auth;
	size_t auth_len;
	int ext;
};

/* ---- backends ---------------------------------------------------------- */

/*
 * struct xpmem_lib_backend - one way of serving the API.  Arguments reach
 * the ops already checked for what both backends reject alike (permit type,
 * mode bits, get flags); each op returns 0 or a negative errno.
 */
struct xpmem_lib_backend {
	int id;				/* enum xpmem_ext_backend_id */
	unsigned long features;		/* XPMEM_EXT_F_* */
	unsigned long (*more_features)(void);	/* found at run time, or NULL */
	int (*version)(void);		/* >= 0 or -errno */
	/* keys (XPMEM_EXT_F_KEYS), several buffers (XPMEM_EXT_F_MAKEV) */
	int (*make)(const struct xpmem_lib_make_req *req,
		    xpmem_segid_t *segid);
	int (*remove)(xpmem_segid_t segid);
	/* *@segid: the segment's (the one found by key, or req->segid) */
	int (*get)(const struct xpmem_lib_get_req *req, xpmem_apid_t *apid,
		   xpmem_segid_t *segid);
	int (*release)(xpmem_apid_t apid);
	/* @flags: XPMEM_EXT_ATTACH_RDONLY, _POPULATE, _POPULATE_WRITE */
	int (*attach)(xpmem_apid_t apid, off_t offset, size_t size,
		      void *vaddr, unsigned int flags, void **addr);
	int (*detach)(void *vaddr);
	int (*alloc)(size_t size, unsigned int flags, void **addr);
	int (*free)(void *addr);
	/*
	 * Copies (XPMEM_EXT_F_COPY): @arg as the module takes it (checked by
	 * the caller for flags and reserved fields; with XPMEM_EXT_COPY_IOV
	 * addr is a struct iovec array); bytes copied or -errno.
	 */
	ssize_t (*copy)(const struct xpmem_ext_copy *arg);
	int (*populate)(void *addr, size_t len, unsigned int flags);
	/*
	 * Fill @sqe (zeroed by the caller) for @op, XPMEM_CMD_EXT_COPY with
	 * a struct xpmem_ext_copy or XPMEM_CMD_EXT_POPULATE with a struct
	 * xpmem_ext_populate at @arg (checked by the caller for flags and
	 * reserved fields).  @buf_index >= 0: the copy's one buffer lies in
	 * the ring's registered buffer of that index (XPMEM_EXT_F_URING_FIXED;
	 * no XPMEM_EXT_COPY_IOV).  0 or -errno.
	 */
	int (*prep)(struct io_uring_sqe *sqe, unsigned int op,
		    const void *arg, int buf_index);
	/*
	 * Events (XPMEM_EXT_F_EVENTS): the descriptor to poll, or -errno;
	 * up to @max (>= 1) events into @ev without blocking: how many, or
	 * -errno.
	 */
	int (*event_fd)(void);
	int (*events)(struct xpmem_ext_event *ev, unsigned int max);
};

/* api.c: the active backend (selected at the first call), or NULL/errno */
const struct xpmem_lib_backend *xpmem_lib_active(void);

/* util.c: the backend's features, static ones and those found at run time */
unsigned long xpmem_lib_features(const struct xpmem_lib_backend *be);

/* queue.c: the library's completion queue over a backend */
struct xpmem_ext_queue *xpmem_lib_queue_create(
	const struct xpmem_lib_backend *be, unsigned int depth);
int xpmem_lib_queue_add(struct xpmem_ext_queue *q, unsigned int op,
			const void *arg, size_t arg_len,
			unsigned long long tag);
int xpmem_lib_queue_submit(struct xpmem_ext_queue *q);
int xpmem_lib_queue_reap(struct xpmem_ext_queue *q,
			 struct xpmem_ext_completion *c, unsigned int max,
			 int wait);
void xpmem_lib_queue_destroy(struct xpmem_ext_queue *q);

/* kernel.c: probe /dev/xpmem; 0 or -errno of the open. */
int xpmem_lib_kernel_probe(void);
extern const struct xpmem_lib_backend xpmem_lib_kernel_backend;

/* shm_*.c */
extern const struct xpmem_lib_backend xpmem_lib_shm_backend;

#endif /* _XPMEM_LIB_H */
