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
	const struct xpmem_lib_backend *b = active();
	xpmem_segid_t segid;
	unsigned long mode;
	int ret;

	if (!b)
		return fail(errno, "xpmem_make");
	ret = check_permit(permit_type, permit_value, &mode);
	if (!ret)
		ret = b->make(vaddr, size, (int)mode, &segid);
	if (ret)
		return fail(-ret, "xpmem_make");
	xpmem_lib_log("make %p+%#zx mode %#lo => segid %#llx", vaddr, size,
		      mode, (unsigned long long)segid);
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
	const struct xpmem_lib_backend *b = active();
	xpmem_apid_t apid;
	int ret = 0;

	(void)permit_value;	/* ignored, like the classic library */
	if (!b)
		return fail(errno, "xpmem_get");
	if (flags != XPMEM_RDONLY && flags != XPMEM_RDWR) {
		xpmem_lib_log("get flags %#x are not XPMEM_RDONLY or XPMEM_RDWR",
			      flags);
		ret = -EINVAL;
	} else if (permit_type != XPMEM_PERMIT_MODE) {
		xpmem_lib_log("permit type %d is not XPMEM_PERMIT_MODE",
			      permit_type);
		ret = -EINVAL;
	} else if (segid <= 0) {
		ret = -EINVAL;
	}
	if (!ret)
		ret = b->get(segid, flags, &apid);
	if (ret)
		return fail(-ret, "xpmem_get");
	return apid;
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
				 XPMEM_EXT_ATTACH_POPULATE_WRITE)

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

	if (!b)
		return 0;
	return b->features | (b->more_features ? b->more_features() : 0);
}

/* A key or secret: NULL and 0, or 1..@max bytes. */
static int check_blob(const void *p, size_t len, size_t max)
{
	return (!p && !len) || (p && len && len <= max) ? 0 : -EINVAL;
}

XPMEM_EXPORT xpmem_segid_t xpmem_ext_make(void *vaddr, size_t size, int mode,
					  unsigned int flags, const void *key,
					  size_t key_len, const void *auth,
					  size_t auth_len)
{
	const struct xpmem_lib_backend *b = active();
	xpmem_segid_t segid = -1;
	int ret;

	if (!b)
		return fail(errno, "xpmem_ext_make");
	if ((flags & ~XPMEM_EXT_MAKE_RDONLY) || mode < 0 ||
	    ((unsigned int)mode & ~XPMEM_LIB_MODE_MASK) ||
	    check_blob(key, key_len, XPMEM_EXT_KEY_MAX) ||
	    check_blob(auth, auth_len, XPMEM_EXT_AUTH_MAX))
		ret = -EINVAL;
	else if (!b->make_ext)
		ret = -EOPNOTSUPP;
	else
		ret = b->make_ext(vaddr, size, mode, flags, key, key_len, auth,
				  auth_len, &segid);
	if (ret)
		return fail(-ret, "xpmem_ext_make");
	return segid;
}

static xpmem_apid_t get_ext(xpmem_segid_t segid, const void *key,
			    size_t key_len, int flags, const void *auth,
			    size_t auth_len, xpmem_segid_t *found,
			    const char *what)
{
	const struct xpmem_lib_backend *b = active();
	xpmem_apid_t apid = -1;
	xpmem_segid_t s = 0;
	int ret;

	if (!b)
		return fail(errno, what);
	if ((flags != XPMEM_RDONLY && flags != XPMEM_RDWR) ||
	    (!key && segid <= 0) ||
	    (key && check_blob(key, key_len, XPMEM_EXT_KEY_MAX)) ||
	    check_blob(auth, auth_len, XPMEM_EXT_AUTH_MAX))
		ret = -EINVAL;
	else if (!b->get_ext)
		ret = -EOPNOTSUPP;
	else
		ret = b->get_ext(segid, key, key_len, flags, auth, auth_len,
				 &apid, &s);
	if (ret)
		return fail(-ret, what);
	if (found)
		*found = s;
	return apid;
}

XPMEM_EXPORT xpmem_apid_t xpmem_ext_get(xpmem_segid_t segid, int flags,
					const void *auth, size_t auth_len)
{
	return get_ext(segid, NULL, 0, flags, auth, auth_len, NULL,
		       "xpmem_ext_get");
}

XPMEM_EXPORT xpmem_apid_t xpmem_ext_get_key(const void *key, size_t key_len,
					    int flags, const void *auth,
					    size_t auth_len,
					    xpmem_segid_t *segid)
{
	if (!key)
		return fail(EINVAL, "xpmem_ext_get_key");
	return get_ext(0, key, key_len, flags, auth, auth_len, segid,
		       "xpmem_ext_get_key");
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
