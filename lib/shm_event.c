// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_event.c - the shm backend's event descriptor: an epoll set of the
 * bells of this process's permits, and an eventfd.
 *
 * Every segment has a bell (shm_wire.h): a pipe whose only writer is its
 * owner, who closes it right after clearing the segment's registry slot
 * at xpmem_remove(); the kernel closes it when the owner exits, is
 * killed or execs.  A peer that reads the owner's /proc holds the read
 * end of it in each permit, so the closing is POLLHUP in this set; which
 * it was (the slot cleared, or the owner gone) is then read from the
 * registry (shm_peer.c).  The eventfd stays readable while events found
 * were not all taken yet (xpmem_ext_events() with a small @max).
 *
 * The order the segments ended is the order their bells rang: epoll
 * keeps its ready list in the order of the wake-ups, and
 * xpmem_lib_shm_event_rung_locked() takes it in that order.  So the set
 * exists from the process's first permit on (shm_peer.c), not from its
 * first question: a bell that rang before it joined the set would be
 * found in no particular order.  A process that gets no permit pays
 * nothing.  Everything here runs under the peer lock (shm_peer.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "shm.h"

static int ev_ep = -1, ev_efd = -1;

static void event_close(void)
{
	if (ev_ep >= 0)
		close(ev_ep);
	if (ev_efd >= 0)
		close(ev_efd);
	ev_ep = ev_efd = -1;
}

/* The epoll descriptor, made now if need be; or -errno. */
int xpmem_lib_shm_event_open_locked(void)
{
	struct epoll_event e = { .events = EPOLLIN };

	if (ev_ep >= 0)
		return ev_ep;
	ev_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ev_ep = epoll_create1(EPOLL_CLOEXEC);
	if (ev_efd < 0 || ev_ep < 0 ||
	    epoll_ctl(ev_ep, EPOLL_CTL_ADD, ev_efd, &e)) {
		int err = -errno;

		xpmem_lib_log("events: %s", strerror(-err));
		event_close();
		return err;
	}
	return ev_ep;
}

/* Whether the event descriptor exists (then new permits' bells join). */
int xpmem_lib_shm_event_active_locked(void)
{
	return ev_ep >= 0;
}

/*
 * A permit's bell joins the set (its POLLHUP wakes the descriptor); @tag
 * (the permit, never NULL) is what xpmem_lib_shm_event_rung_locked()
 * gives back for it.
 */
void xpmem_lib_shm_event_watch_locked(int bellfd, void *tag)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = tag };

	if (ev_ep >= 0 && bellfd >= 0 &&
	    epoll_ctl(ev_ep, EPOLL_CTL_ADD, bellfd, &e))
		xpmem_lib_log("events: watching a bell: %s", strerror(errno));
}

/*
 * A bell leaves the set: its event was found (it would poll ready for
 * good), or its permit is released.
 */
void xpmem_lib_shm_event_unwatch_locked(int bellfd)
{
	if (ev_ep >= 0 && bellfd >= 0)
		epoll_ctl(ev_ep, EPOLL_CTL_DEL, bellfd, NULL);
}

/*
 * Up to @max (at most 64) entries of the set that polled ready, oldest
 * wake-up first (epoll keeps its ready list in that order), their tags
 * in @tags (NULL: the eventfd); the count.  A bell stays ready until it
 * is unwatched: the caller unwatches those it found ended; one it leaves
 * comes again, behind the others, at the next call.
 */
int xpmem_lib_shm_event_rung_locked(void **tags, int max)
{
	struct epoll_event e[64];
	int i, n;

	if (ev_ep < 0 || max <= 0)
		return 0;
	n = epoll_wait(ev_ep, e, max < 64 ? max : 64, 0);
	for (i = 0; i < n; i++)
		tags[i] = e[i].data.ptr;
	return n > 0 ? n : 0;
}

/* Events found before are being looked at again: the eventfd empties. */
void xpmem_lib_shm_event_drain_locked(void)
{
	uint64_t v;

	if (read(ev_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		xpmem_lib_log("events: eventfd: %s", strerror(errno));
}

/* Events found are left for the next call: keep the descriptor readable. */
void xpmem_lib_shm_event_more_locked(void)
{
	uint64_t one = 1;

	if (write(ev_efd, &one, sizeof(one)) < 0)
		xpmem_lib_log("events: eventfd: %s", strerror(errno));
}

/* In a fork child: the descriptors are the parent's; the child has none. */
void xpmem_lib_shm_event_reset_in_child(void)
{
	event_close();
}
