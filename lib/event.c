// SPDX-License-Identifier: LGPL-2.1
/*
 * event.c - the events entry points: xpmem_ext_event_fd() and
 * xpmem_ext_events(), over the active backend's event operations
 * (lib/kernel.c: /dev/xpmem's poll and read; lib/shm_peer.c: the owners'
 * registries watched with inotify).
 */
#include <errno.h>
#include <string.h>

#include "xpmem_lib.h"

/* The active backend if it has events; NULL with errno otherwise. */
static const struct xpmem_lib_backend *eventer(void)
{
	const struct xpmem_lib_backend *b = xpmem_lib_active();

	if (b && (!(xpmem_lib_features(b) & XPMEM_EXT_F_EVENTS) ||
		  !b->event_fd)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return b;
}

static int fail(int err, const char *what)
{
	xpmem_lib_log("%s failed: %s", what, strerror(err));
	errno = err;
	return -1;
}

XPMEM_EXPORT int xpmem_ext_event_fd(void)
{
	const struct xpmem_lib_backend *b = eventer();
	int fd;

	if (!b)
		return fail(errno, "xpmem_ext_event_fd");
	fd = b->event_fd();
	return fd < 0 ? fail(-fd, "xpmem_ext_event_fd") : fd;
}

XPMEM_EXPORT int xpmem_ext_events(struct xpmem_ext_event *ev, int max)
{
	const struct xpmem_lib_backend *b = eventer();
	int n;

	if (!b)
		return fail(errno, "xpmem_ext_events");
	if (!ev || max <= 0)
		return fail(EINVAL, "xpmem_ext_events");
	n = b->events(ev, (unsigned int)max);
	return n < 0 ? fail(-n, "xpmem_ext_events") : n;
}
