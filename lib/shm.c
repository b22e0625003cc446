// SPDX-License-Identifier: LGPL-2.1
/*
 * shm.c - the shm backend's operation table and fork handlers, on top
 * of the owner side (shm_owner.c) and the peer side (shm_peer.c); shm.h
 * has the file map.  The fork handlers are registered before the backend
 * keeps any state.
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

/* Every lock of the backend is held across fork(), released in both. */
static void shm_prepare(void)
{
	xpmem_lib_shm_owner_atfork(SHM_FORK_PREPARE);
	xpmem_lib_shm_peer_atfork(SHM_FORK_PREPARE);
	xpmem_lib_shm_lookup_atfork(SHM_FORK_PREPARE);
}

static void shm_parent(void)
{
	xpmem_lib_shm_lookup_atfork(SHM_FORK_PARENT);
	xpmem_lib_shm_peer_atfork(SHM_FORK_PARENT);
	xpmem_lib_shm_owner_atfork(SHM_FORK_PARENT);
}

static void shm_child(void)
{
	xpmem_lib_shm_lookup_atfork(SHM_FORK_CHILD);
	xpmem_lib_shm_peer_atfork(SHM_FORK_CHILD);
	xpmem_lib_shm_owner_atfork(SHM_FORK_CHILD);
}

static void shm_register_atfork(void)
{
	pthread_atfork(shm_prepare, shm_parent, shm_child);
}

/* Wrappers that make sure fork() is handled before any state exists. */
static int shm_make(const struct xpmem_lib_make_req *req,
		    xpmem_segid_t *segid)
{
	pthread_once(&atfork_once, shm_register_atfork);
	return xpmem_lib_shm_make(req, segid);
}

static int shm_get(const struct xpmem_lib_get_req *req, xpmem_apid_t *apid,
		   xpmem_segid_t *segid)
{
	pthread_once(&atfork_once, shm_register_atfork);
	return xpmem_lib_shm_get(req, apid, segid);
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
		    XPMEM_EXT_F_URING_FIXED | XPMEM_EXT_F_EVENTS,
	.version = shm_version,
	.make = shm_make,
	.remove = xpmem_lib_shm_remove,
	.get = shm_get,
	.release = xpmem_lib_shm_release,
	.attach = xpmem_lib_shm_attach,
	.detach = xpmem_lib_shm_detach,
	.alloc = shm_alloc,
	.free = xpmem_lib_shm_free,
	.copy = xpmem_lib_shm_copy,
	.populate = xpmem_lib_shm_populate,
	.prep = xpmem_lib_shm_prep,
	.event_fd = xpmem_lib_shm_event_fd,
	.events = xpmem_lib_shm_events,
};
