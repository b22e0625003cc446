// SPDX-License-Identifier: LGPL-2.1
/*
 * shm.c - the shm backend's entry points: its operation table and the
 * fork handlers, on top of the owner side (shm_owner.c) and the peer side
 * (shm_peer.c), which share the helpers of shm_object.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>

#include "shm.h"

static int shm_version(void)
{
	/*
	 * The shm backend cannot serve the classic contract (whole address
	 * space export), so it does not claim a module version: UCX treats
	 * version >= 0 as "xpmem usable" and would then fail at its first
	 * xpmem_make(0, XPMEM_MAXADDR_SIZE).
	 */
	xpmem_lib_log("xpmem_version: shm backend has no kernel module");
	return -ENODEV;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void shm_prepare(void)
{
	xpmem_lib_shm_owner_atfork(SHM_FORK_PREPARE);
	xpmem_lib_shm_peer_atfork(SHM_FORK_PREPARE);
}

static void shm_parent(void)
{
	xpmem_lib_shm_peer_atfork(SHM_FORK_PARENT);
	xpmem_lib_shm_owner_atfork(SHM_FORK_PARENT);
}

static void shm_child(void)
{
	xpmem_lib_shm_peer_atfork(SHM_FORK_CHILD);
	xpmem_lib_shm_owner_atfork(SHM_FORK_CHILD);
}

static void shm_register_atfork(void)
{
	pthread_atfork(shm_prepare, shm_parent, shm_child);
}

/* Wrappers that make sure fork() is handled before any state exists. */
static int shm_make(void *vaddr, size_t size, int mode, xpmem_segid_t *segid)
{
	struct iovec one = { .iov_base = vaddr, .iov_len = size };

	pthread_once(&atfork_once, shm_register_atfork);
	return xpmem_lib_shm_make(&one, 1, mode, 0, NULL, 0, NULL, 0, segid);
}

/* Keys, read-only exports, authorization keys (shm.h), several buffers. */
static int shm_make_ext(const struct iovec *iov, int iovcnt, int mode,
			unsigned int flags, const void *key, size_t key_len,
			const void *auth, size_t auth_len, xpmem_segid_t *segid)
{
	pthread_once(&atfork_once, shm_register_atfork);
	return xpmem_lib_shm_make(iov, iovcnt, mode, flags, key, key_len,
				  auth, auth_len, segid);
}

static int shm_get(xpmem_segid_t segid, int flags, xpmem_apid_t *apid)
{
	pthread_once(&atfork_once, shm_register_atfork);
	return xpmem_lib_shm_get(segid, flags, NULL, 0, apid);
}

static int shm_get_ext(xpmem_segid_t segid, const void *key, size_t key_len,
		       int flags, const void *auth, size_t auth_len,
		       xpmem_apid_t *apid, xpmem_segid_t *found)
{
	pthread_once(&atfork_once, shm_register_atfork);
	if (key)
		return xpmem_lib_shm_get_key(key, key_len, flags, auth,
					     auth_len, apid, found);
	*found = segid;
	return xpmem_lib_shm_get(segid, flags, auth, auth_len, apid);
}

static int shm_alloc(size_t size, unsigned int flags, void **addr)
{
	pthread_once(&atfork_once, shm_register_atfork);
	return xpmem_lib_shm_alloc(size, flags, addr);
}

const struct xpmem_lib_backend xpmem_lib_shm_backend = {
	.id = XPMEM_EXT_BACKEND_SHM,
	.features = XPMEM_EXT_F_MIGRATE | XPMEM_EXT_F_CROSS_USER |
		    XPMEM_EXT_F_MAKEV |
		    XPMEM_EXT_F_ATTACH_OPTS | XPMEM_EXT_F_KEYS |
		    XPMEM_EXT_F_AUTH |
		    XPMEM_EXT_F_COPY | XPMEM_EXT_F_URING |
		    XPMEM_EXT_F_URING_FIXED,
	.version = shm_version,
	.make = shm_make,
	.remove = xpmem_lib_shm_remove,
	.get = shm_get,
	.make_ext = shm_make_ext,
	.get_ext = shm_get_ext,
	.release = xpmem_lib_shm_release,
	.attach = xpmem_lib_shm_attach,
	.detach = xpmem_lib_shm_detach,
	.alloc = shm_alloc,
	.free = xpmem_lib_shm_free,
	.copy = xpmem_lib_shm_copy,
	.populate = xpmem_lib_shm_populate,
	.prep = xpmem_lib_shm_prep,
};
