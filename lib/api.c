// SPDX-License-Identifier: LGPL-2.1
/*
 * api.c - the public entry points: backend selection, argument checks both
 * backends share, and the conversion of internal -errno results into the
 * classic -1/errno convention.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpmem_lib.h"

/* The mode bits a permit may carry (SysV-style rwx for user/group/other). */
#define XPMEM_LIB_MODE_MASK	0777UL

static pthread_once_t select_once = PTHREAD_ONCE_INIT;
static const struct xpmem_lib_backend *backend;
static int select_err;			/* errno when no backend */
static char select_reason[160];

/*
 * select_backend - decide once per process which backend serves it.
 *
 * XPMEM_BACKEND=kernel|shm|auto (default auto).  auto uses the kernel when
 * /dev/xpmem opens, else shm.  A forced "kernel" whose device cannot be
 * opened leaves the process without a backend: every call fails with
 * ENODEV.
 */
static void select_backend(void)
{
	const char *env = getenv("XPMEM_BACKEND");
	int err;

	if (!env || !*env || strcmp(env, "auto") == 0) {
		err = xpmem_lib_kernel_probe();
		if (!err) {
			backend = &xpmem_lib_kernel_backend;
			snprintf(select_reason, sizeof(select_reason),
				 "auto: " XPMEM_DEV_PATH " opened");
		} else {
			backend = &xpmem_lib_shm_backend;
			snprintf(select_reason, sizeof(select_reason),
				 "auto: " XPMEM_DEV_PATH ": %s", strerror(-err));
		}
	} else if (strcmp(env, "kernel") == 0) {
		err = xpmem_lib_kernel_probe();
		if (!err) {
			backend = &xpmem_lib_kernel_backend;
			snprintf(select_reason, sizeof(select_reason),
				 "XPMEM_BACKEND=kernel");
		} else {
			select_err = ENODEV;
			snprintf(select_reason, sizeof(select_reason),
				 "XPMEM_BACKEND=kernel but " XPMEM_DEV_PATH
				 ": %s", strerror(-err));
		}
	} else if (strcmp(env, "shm") == 0) {
		backend = &xpmem_lib_shm_backend;
		snprintf(select_reason, sizeof(select_reason),
			 "XPMEM_BACKEND=shm");
	} else {
		select_err = EINVAL;
		snprintf(select_reason, sizeof(select_reason),
			 "XPMEM_BACKEND=%.40s is not kernel, shm or auto", env);
	}
	if (!backend) {
		static int warned;

		xpmem_lib_warn_once(&warned, "no backend: %s; every xpmem call "
				    "fails with %s", select_reason,
				    select_err == EINVAL ? "EINVAL" : "ENODEV");
	}
	xpmem_lib_log("backend %s (%s)",
		      xpmem_ext_backend_name(backend ? backend->id :
					     XPMEM_EXT_BACKEND_NONE),
		      select_reason);
}

/* The active backend, or NULL with errno set. */
static const struct xpmem_lib_backend *active(void)
{
	pthread_once(&select_once, select_backend);
	if (!backend)
		errno = select_err;
	return backend;
}

/* The same, for the entry points in event.c. */
const struct xpmem_lib_backend *xpmem_lib_active(void)
{
	return active();
}

/* Turn an internal result into the API convention: -1 with errno. */
static int fail(int err, const char *what)
{
	xpmem_lib_log("%s failed: %s", what,
		      err == XPMEM_ERRNO_NOPROC ? "XPMEM_ERRNO_NOPROC" :
		      strerror(err));
	errno = err;
	return -1;
}

static int check_permit(int permit_type, void *permit_value,
			unsigned long *mode)
{
	unsigned long v = (unsigned long)(uintptr_t)permit_value;

	if (permit_type != XPMEM_PERMIT_MODE) {
		xpmem_lib_log("permit type %d is not XPMEM_PERMIT_MODE",
			      permit_type);
		return -EINVAL;
	}
	if (v & ~XPMEM_LIB_MODE_MASK) {
		xpmem_lib_log("permit mode %#lo has bits outside 0777", v);
		return -EINVAL;
	}
	*mode = v;
	return 0;
}

/* A key or secret: NULL and 0, or 1..@max bytes. */
static int check_blob(const void *p, size_t len, size_t max)
{
	return (!p && !len) || (p && len && len <= max) ? 0 : -EINVAL;
}

/*
 * make - what every make does after its own argument checks: check the
 * request as both backends need it, and hand it to the active backend.
 */
static xpmem_segid_t make(const struct xpmem_lib_make_req *req,
			  const char *what)
{
	const struct xpmem_lib_backend *b = active();
	xpmem_segid_t segid = -1;
	int ret;

	if (!b)
		return fail(errno, what);
	if ((req->flags & ~(XPMEM_EXT_MAKE_RDONLY | XPMEM_EXT_MAKE_ANY_NS)) ||
	    /* crossing IPC namespaces takes an authorization key */
	    ((req->flags & XPMEM_EXT_MAKE_ANY_NS) && !req->auth) ||
	    req->mode < 0 ||
	    ((unsigned int)req->mode & ~XPMEM_LIB_MODE_MASK) ||
	    !req->iov || req->iovcnt < 1 ||
	    req->iovcnt > XPMEM_EXT_MAKE_IOV_MAX ||
	    check_blob(req->key, req->key_len, XPMEM_EXT_KEY_MAX) ||
	    check_blob(req->auth, req->auth_len, XPMEM_EXT_AUTH_MAX))
		ret = -EINVAL;
	else if ((req->flags & XPMEM_EXT_MAKE_ANY_NS) &&
		 !(xpmem_lib_features(b) & XPMEM_EXT_F_ANY_NS))
		ret = -EOPNOTSUPP;
	else
		ret = b->make(req, &segid);
	if (ret)
		return fail(-ret, what);
	return segid;
}

/* get - the same for every get; the segment's segid in *@found. */
static xpmem_apid_t get(const struct xpmem_lib_get_req *req,
			xpmem_segid_t *found, const char *what)
{
	const struct xpmem_lib_backend *b = active();
	xpmem_apid_t apid = -1;
	xpmem_segid_t s = 0;
	int ret;

	if (!b)
		return fail(errno, what);
	if (req->flags != XPMEM_RDONLY && req->flags != XPMEM_RDWR) {
		xpmem_lib_log("get flags %#x are not XPMEM_RDONLY or "
			      "XPMEM_RDWR", req->flags);
		ret = -EINVAL;
	} else if ((!req->key && req->segid <= 0) ||
		   (req->key && check_blob(req->key, req->key_len,
					   XPMEM_EXT_KEY_MAX)) ||
		   check_blob(req->auth, req->auth_len, XPMEM_EXT_AUTH_MAX)) {
		ret = -EINVAL;
	} else {
		ret = b->get(req, &apid, &s);
	}
	if (ret)
		return fail(-ret, what);
	if (found)
		*found = s;
	return apid;
}

XPMEM_EXPORT int xpmem_version(void)
{
	const struct xpmem_lib_backend *b = active();
	int ret;

	if (!b)
		return fail(errno, "xpmem_version");
	ret = b->version();
	if (ret < 0)
		return fail(-ret, "xpmem_version");
	return ret;
}

XPMEM_EXPORT xpmem_segid_t xpmem_make(void *vaddr, size_t size,
				      int permit_type, void *permit_value)
{
	struct iovec one = { .iov_base = vaddr, .iov_len = size };
	struct xpmem_lib_make_req req = { .iov = &one, .iovcnt = 1 };
	unsigned long mode;
	xpmem_segid_t segid;
	int ret;

	if (!active())
		return fail(errno, "xpmem_make");
	ret = check_permit(permit_type, permit_value, &mode);
	if (ret)
		return fail(-ret, "xpmem_make");
	req.mode = (int)mode;
	segid = make(&req, "xpmem_make");
	if (segid > 0)
		xpmem_lib_log("make %p+%#zx mode %#lo => segid %#llx", vaddr,
			      size, mode, (unsigned long long)segid);
	return segid;
}

XPMEM_EXPORT int xpmem_remove(xpmem_segid_t segid)
{
	const struct xpmem_lib_backend *b = active();
	int ret;

	if (!b)
		return fail(errno, "xpmem_remove");
	ret = segid > 0 ? b->remove(segid) : -EINVAL;
	if (ret)
		return fail(-ret, "xpmem_remove");
	return 0;
}

XPMEM_EXPORT xpmem_apid_t xpmem_get(xpmem_segid_t segid, int flags,
				    int permit_type, void *permit_value)
{
	struct xpmem_lib_get_req req = { .segid = segid, .flags = flags };

	(void)permit_value;	/* ignored, like the classic library */
	if (!active())
		return fail(errno, "xpmem_get");
	/* after the flags, which get() checks first */
	if ((flags == XPMEM_RDONLY || flags == XPMEM_RDWR) &&
	    permit_type != XPMEM_PERMIT_MODE) {
		xpmem_lib_log("permit type %d is not XPMEM_PERMIT_MODE",
			      permit_type);
		return fail(EINVAL, "xpmem_get");
	}
	return get(&req, NULL, "xpmem_get");
}

XPMEM_EXPORT int xpmem_release(xpmem_apid_t apid)
{
	const struct xpmem_lib_backend *b = active();
	int ret;

	if (!b)
		return fail(errno, "xpmem_release");
	ret = apid > 0 ? b->release(apid) : -EINVAL;
	if (ret)
		return fail(-ret, "xpmem_release");
	return 0;
}

/* The flags xpmem_ext_attach() takes (FIXED is a non-NULL vaddr). */
#define XPMEM_LIB_ATTACH_FLAGS	(XPMEM_EXT_ATTACH_RDONLY | \
				 XPMEM_EXT_ATTACH_POPULATE | \
				 XPMEM_EXT_ATTACH_POPULATE_WRITE | \
				 XPMEM_EXT_ATTACH_ZERO_REVOKED)

static void *attach(struct xpmem_addr addr, size_t size, void *vaddr,
		    unsigned int flags, const char *what)
{
	const struct xpmem_lib_backend *b = active();
	void *at = NULL;
	int ret;

	if (!b) {
		fail(errno, what);
		return (void *)-1;
	}
	if (addr.apid <= 0 || addr.offset < 0 || size == 0 ||
	    (flags & ~XPMEM_LIB_ATTACH_FLAGS) ||
	    ((flags & XPMEM_EXT_ATTACH_RDONLY) &&
	     (flags & XPMEM_EXT_ATTACH_POPULATE_WRITE)))
		ret = -EINVAL;
	else if ((flags & XPMEM_EXT_ATTACH_ZERO_REVOKED) &&
		 !(xpmem_lib_features(b) & XPMEM_EXT_F_ZERO_REVOKED))
		ret = -EOPNOTSUPP;	/* shm: nothing is ever revoked */
	else
		ret = b->attach(addr.apid, addr.offset, size, vaddr, flags,
				&at);
	if (ret) {
		fail(-ret, what);
		return (void *)-1;
	}
	return at;
}

XPMEM_EXPORT void *xpmem_attach(struct xpmem_addr addr, size_t size,
				void *vaddr)
{
	return attach(addr, size, vaddr, 0, "xpmem_attach");
}

XPMEM_EXPORT int xpmem_detach(void *vaddr)
{
	const struct xpmem_lib_backend *b = active();
	int ret;

	if (!b)
		return fail(errno, "xpmem_detach");
	ret = b->detach(vaddr);
	if (ret)
		return fail(-ret, "xpmem_detach");
	return 0;
}

XPMEM_EXPORT int xpmem_init(void)
{
	if (!active())
		return fail(errno, "xpmem_init");
	return 0;
}

/* ---- extensions -------------------------------------------------------- */

XPMEM_EXPORT int xpmem_ext_backend(const char **reason)
{
	const struct xpmem_lib_backend *b = active();

	if (reason)
		*reason = select_reason;
	return b ? b->id : XPMEM_EXT_BACKEND_NONE;
}

XPMEM_EXPORT const char *xpmem_ext_backend_name(int id)
{
	switch (id) {
	case XPMEM_EXT_BACKEND_KERNEL:
		return "kernel";
	case XPMEM_EXT_BACKEND_SHM:
		return "shm";
	default:
		return "none";
	}
}

XPMEM_EXPORT unsigned long xpmem_ext_features(void)
{
	const struct xpmem_lib_backend *b = active();

	return b ? xpmem_lib_features(b) : 0;
}

XPMEM_EXPORT xpmem_segid_t xpmem_ext_make(void *vaddr, size_t size, int mode,
					  unsigned int flags, const void *key,
					  size_t key_len, const void *auth,
					  size_t auth_len)
{
	struct iovec one = { .iov_base = vaddr, .iov_len = size };
	struct xpmem_lib_make_req req = {
		.iov = &one, .iovcnt = 1, .mode = mode, .flags = flags,
		.key = key, .key_len = key_len,
		.auth = auth, .auth_len = auth_len, .ext = 1,
	};

	return make(&req, "xpmem_ext_make");
}

XPMEM_EXPORT xpmem_segid_t xpmem_ext_makev(const struct iovec *iov,
					   int iovcnt, int mode,
					   unsigned int flags, const void *key,
					   size_t key_len, const void *auth,
					   size_t auth_len)
{
	struct xpmem_lib_make_req req = {
		.iov = iov, .iovcnt = iovcnt, .mode = mode, .flags = flags,
		.key = key, .key_len = key_len,
		.auth = auth, .auth_len = auth_len, .ext = 1,
	};

	return make(&req, "xpmem_ext_makev");
}

XPMEM_EXPORT xpmem_apid_t xpmem_ext_get(xpmem_segid_t segid, int flags,
					const void *auth, size_t auth_len)
{
	struct xpmem_lib_get_req req = {
		.segid = segid, .flags = flags,
		.auth = auth, .auth_len = auth_len, .ext = 1,
	};

	return get(&req, NULL, "xpmem_ext_get");
}

XPMEM_EXPORT xpmem_apid_t xpmem_ext_get_key(const void *key, size_t key_len,
					    int flags, const void *auth,
					    size_t auth_len,
					    xpmem_segid_t *segid)
{
	struct xpmem_lib_get_req req = {
		.flags = flags, .key = key, .key_len = key_len,
		.auth = auth, .auth_len = auth_len, .ext = 1,
	};

	if (!key)
		return fail(EINVAL, "xpmem_ext_get_key");
	return get(&req, segid, "xpmem_ext_get_key");
}

XPMEM_EXPORT void *xpmem_ext_attach(struct xpmem_addr addr, size_t size,
				    void *vaddr, unsigned int flags)
{
	return attach(addr, size, vaddr, flags, "xpmem_ext_attach");
}

XPMEM_EXPORT void *xpmem_ext_alloc(size_t size, unsigned int flags)
{
	const struct xpmem_lib_backend *b = active();
	void *addr = NULL;
	int ret;

	if (!b) {
		fail(errno, "xpmem_ext_alloc");
		return NULL;
	}
	if (size == 0 || (flags & ~XPMEM_EXT_ALLOC_HUGETLB))
		ret = -EINVAL;
	else
		ret = b->alloc(size, flags, &addr);
	if (ret) {
		fail(-ret, "xpmem_ext_alloc");
		return NULL;
	}
	return addr;
}

XPMEM_EXPORT int xpmem_ext_free(void *addr)
{
	const struct xpmem_lib_backend *b = active();
	int ret;

	if (!b)
		return fail(errno, "xpmem_ext_free");
	ret = b->free(addr);
	if (ret)
		return fail(-ret, "xpmem_ext_free");
	return 0;
}

/* ---- copies and io_uring (XPMEM_EXT_1.2) -------------------------------- */

/* The backend, if it copies; else NULL with errno set. */
static const struct xpmem_lib_backend *copier(void)
{
	const struct xpmem_lib_backend *b = active();

	if (b && !(xpmem_lib_features(b) & XPMEM_EXT_F_COPY)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return b;
}

static ssize_t copyv(xpmem_apid_t apid, off_t offset, const struct iovec *iov,
		     int iovcnt, unsigned int flags, const char *what)
{
	const struct xpmem_lib_backend *b = copier();
	struct xpmem_ext_copy c = {
		.apid = apid, .offset = (__u64)offset, .flags = flags,
	};
	ssize_t ret;

	if (!b)
		return fail(errno, what);
	if (apid <= 0 || offset < 0 || (flags & ~XPMEM_EXT_COPY_TO) ||
	    iovcnt < 1 || iovcnt > XPMEM_EXT_IOV_MAX || !iov)
		return fail(EINVAL, what);
	/* one buffer as it is, several as an iovec array */
	if (iovcnt == 1) {
		c.addr = (__u64)(uintptr_t)iov[0].iov_base;
		c.len = iov[0].iov_len;
	} else {
		c.addr = (__u64)(uintptr_t)iov;
		c.len = (__u64)iovcnt;
		c.flags |= XPMEM_EXT_COPY_IOV;
	}
	ret = b->copy(&c);
	if (ret < 0)
		return fail((int)-ret, what);
	return ret;
}

XPMEM_EXPORT ssize_t xpmem_ext_copy(xpmem_apid_t apid, off_t offset,
				    void *buf, size_t len, unsigned int flags)
{
	struct iovec one = { .iov_base = buf, .iov_len = len };

	return copyv(apid, offset, &one, 1, flags, "xpmem_ext_copy");
}

XPMEM_EXPORT ssize_t xpmem_ext_copyv(xpmem_apid_t apid, off_t offset,
				     const struct iovec *iov, int iovcnt,
				     unsigned int flags)
{
	return copyv(apid, offset, iov, iovcnt, flags, "xpmem_ext_copyv");
}

XPMEM_EXPORT int xpmem_ext_populate(void *addr, size_t len, unsigned int flags)
{
	const struct xpmem_lib_backend *b = copier();
	int ret;

	if (!b)
		return fail(errno, "xpmem_ext_populate");
	if (flags & ~XPMEM_EXT_POPULATE_FLAGS)
		return fail(EINVAL, "xpmem_ext_populate");
	ret = b->populate(addr, len, flags);
	if (ret < 0)
		return fail(-ret, "xpmem_ext_populate");
	return 0;
}

/* What both backends refuse alike in an argument struct. */
static int check_copy_arg(const struct xpmem_ext_copy *c)
{
	if (c->apid <= 0 || (c->flags & ~XPMEM_EXT_COPY_FLAGS) ||
	    c->reserved0 || c->reserved[0] || c->reserved[1] ||
	    c->reserved[2])
		return -EINVAL;
	if ((c->flags & XPMEM_EXT_COPY_IOV) &&
	    (!c->len || c->len > XPMEM_EXT_IOV_MAX))
		return -EINVAL;
	return 0;
}

static int check_populate_arg(const struct xpmem_ext_populate *p)
{
	if ((p->flags & ~XPMEM_EXT_POPULATE_FLAGS) || p->reserved0 ||
	    p->reserved[0] || p->reserved[1])
		return -EINVAL;
	return 0;
}

static int prep(struct io_uring_sqe *sqe, unsigned int op, const void *arg,
		int bad, int buf_index, const char *what)
{
	const struct xpmem_lib_backend *b = active();
	unsigned long need = XPMEM_EXT_F_URING |
			     (buf_index >= 0 ? XPMEM_EXT_F_URING_FIXED : 0);
	int ret;

	if (!b)
		return fail(errno, what);
	if ((xpmem_lib_features(b) & need) != need || !b->prep)
		return fail(EOPNOTSUPP, what);
	if (!sqe || !arg || bad)
		return fail(EINVAL, what);
	memset(sqe, 0, sizeof(*sqe));
	ret = b->prep(sqe, op, arg, buf_index);
	if (ret < 0)
		return fail(-ret, what);
	return 0;
}

XPMEM_EXPORT int xpmem_ext_prep_copy(struct io_uring_sqe *sqe,
				     const struct xpmem_ext_copy *arg)
{
	return prep(sqe, XPMEM_CMD_EXT_COPY, arg, arg && check_copy_arg(arg),
		    -1, "xpmem_ext_prep_copy");
}

XPMEM_EXPORT int xpmem_ext_prep_copy_fixed(struct io_uring_sqe *sqe,
					   const struct xpmem_ext_copy *arg,
					   unsigned int buf_index)
{
	return prep(sqe, XPMEM_CMD_EXT_COPY, arg,
		    arg && (check_copy_arg(arg) ||
			    (arg->flags & XPMEM_EXT_COPY_IOV) ||
			    buf_index > UINT16_MAX),
		    (int)(buf_index & 0xffff), "xpmem_ext_prep_copy_fixed");
}

XPMEM_EXPORT int xpmem_ext_prep_populate(struct io_uring_sqe *sqe,
					 const struct xpmem_ext_populate *arg)
{
	return prep(sqe, XPMEM_CMD_EXT_POPULATE, arg,
		    arg && check_populate_arg(arg), -1,
		    "xpmem_ext_prep_populate");
}

XPMEM_EXPORT struct xpmem_ext_queue *
xpmem_ext_queue_create(unsigned int depth)
{
	const struct xpmem_lib_backend *b = copier();
	struct xpmem_ext_queue *q;

	if (!b) {
		fail(errno, "xpmem_ext_queue_create");
		return NULL;
	}
	if (!depth || depth > 4096) {
		fail(EINVAL, "xpmem_ext_queue_create");
		return NULL;
	}
	q = xpmem_lib_queue_create(b, depth);
	if (!q)
		fail(errno, "xpmem_ext_queue_create");
	return q;
}

static int queue_add(struct xpmem_ext_queue *q, unsigned int op,
		     const void *arg, size_t len, unsigned long long tag,
		     const char *what)
{
	int ret;

	if (!q)
		return fail(EINVAL, what);
	ret = xpmem_lib_queue_add(q, op, arg, len, tag);
	if (ret < 0)
		return fail(-ret, what);
	return 0;
}

XPMEM_EXPORT int xpmem_ext_queue_copy(struct xpmem_ext_queue *q,
				      xpmem_apid_t apid, off_t offset,
				      void *buf, size_t len,
				      unsigned int flags,
				      unsigned long long tag)
{
	struct xpmem_ext_copy c = {
		.apid = apid, .offset = (__u64)offset,
		.addr = (__u64)(uintptr_t)buf, .len = len, .flags = flags,
	};

	if (offset < 0 || (flags & ~XPMEM_EXT_COPY_TO) || check_copy_arg(&c))
		return fail(EINVAL, "xpmem_ext_queue_copy");
	return queue_add(q, XPMEM_CMD_EXT_COPY, &c, sizeof(c), tag,
			 "xpmem_ext_queue_copy");
}

XPMEM_EXPORT int xpmem_ext_queue_copyv(struct xpmem_ext_queue *q,
				       xpmem_apid_t apid, off_t offset,
				       const struct iovec *iov, int iovcnt,
				       unsigned int flags,
				       unsigned long long tag)
{
	struct xpmem_ext_copy c = {
		.apid = apid, .offset = (__u64)offset,
		.addr = (__u64)(uintptr_t)iov, .len = (__u64)iovcnt,
		.flags = flags | XPMEM_EXT_COPY_IOV,
	};

	if (offset < 0 || iovcnt < 1 || !iov ||
	    (flags & ~XPMEM_EXT_COPY_TO) || check_copy_arg(&c))
		return fail(EINVAL, "xpmem_ext_queue_copyv");
	return queue_add(q, XPMEM_CMD_EXT_COPY, &c, sizeof(c), tag,
			 "xpmem_ext_queue_copyv");
}

XPMEM_EXPORT int xpmem_ext_queue_populate(struct xpmem_ext_queue *q,
					  void *addr,
					  size_t len, unsigned int flags,
					  unsigned long long tag)
{
	struct xpmem_ext_populate p = {
		.vaddr = (__u64)(uintptr_t)addr, .len = len, .flags = flags,
	};

	if (check_populate_arg(&p))
		return fail(EINVAL, "xpmem_ext_queue_populate");
	return queue_add(q, XPMEM_CMD_EXT_POPULATE, &p, sizeof(p), tag,
			 "xpmem_ext_queue_populate");
}

XPMEM_EXPORT int xpmem_ext_queue_submit(struct xpmem_ext_queue *q)
{
	int ret = q ? xpmem_lib_queue_submit(q) : -EINVAL;

	if (ret < 0)
		return fail(-ret, "xpmem_ext_queue_submit");
	return ret;
}

XPMEM_EXPORT int xpmem_ext_queue_reap(struct xpmem_ext_queue *q,
				      struct xpmem_ext_completion *c,
				      unsigned int max, int wait)
{
	int ret = q && (c || !max) ? xpmem_lib_queue_reap(q, c, max, wait) :
		  -EINVAL;

	if (ret < 0)
		return fail(-ret, "xpmem_ext_queue_reap");
	return ret;
}

XPMEM_EXPORT void xpmem_ext_queue_destroy(struct xpmem_ext_queue *q)
{
	xpmem_lib_queue_destroy(q);
}
