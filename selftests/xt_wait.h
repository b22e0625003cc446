/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xt_wait.h - bounded waits for a descriptor, shared by the selftests
 * of the module (through xpmem_test.h) and of the library.
 */
#ifndef XT_WAIT_H
#define XT_WAIT_H

#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>

/*
 * Bounded waits for a descriptor.  io_uring's completions run as task
 * work, which interrupts a waiting poll() or epoll_wait() with EINTR:
 * both wait again.  xt_wait_readable(): 1 when @fd polls readable, 0 on
 * timeout; xt_epoll_wait_one(): epoll_wait()'s result for one event.
 */
static inline int xt_wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	do {
		n = poll(&p, 1, ms);
	} while (n < 0 && errno == EINTR);
	return n == 1 && (p.revents & POLLIN);
}

static inline int xt_epoll_wait_one(int ep, struct epoll_event *e, int ms)
{
	int n;

	do {
		n = epoll_wait(ep, e, 1, ms);
	} while (n < 0 && errno == EINTR);
	return n;
}

#endif /* XT_WAIT_H */
