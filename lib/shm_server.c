// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_server.c - the owner's sockets and the thread that serves them.
 *
 * Each segment listens on an abstract socket named from its segid (and,
 * with a key, on one named from the key): the name keeps the id unique
 * while the segment lives, and a peer learns the owner's pid from it with
 * SO_PEERCRED.  The kernel keeps every connection in the listen queue
 * until it is accepted, closed by the peer or not, and refuses new ones
 * once the queue holds the backlog (net.core.somaxconn): a socket nobody
 * accepts on would stop resolving after that many gets.  So each owner
 * process runs one thread (xpmem-accept), started by its first make, that
 * accepts those connections, answers them (shm_answer.c) and closes them.
 *
 * Invariants: the thread waits in epoll_wait() holding nothing and takes
 * the owner lock once per connection; it finds sockets by segid, never by
 * descriptor, so it never touches a descriptor the application got back
 * after a remove closed ours; a connection to a segment with an
 * authorization key whose request has not come yet waits in the pending
 * table (at most PENDING_MAX, SHM_AUTH_WAIT_MS each) and never holds up
 * the others; the thread blocks every signal.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shm.h"

/* Draws of a segid before giving up (each hits a used slot with p <= 1/2). */
#define SHM_ID_TRIES		64
/* Events the accept thread takes per epoll_wait(). */
#define ACCEPT_EVENTS		16
/* Stack of the accept thread (it only loops over epoll_wait and accept4). */
#define ACCEPT_STACK		(256 * 1024)
/* epoll data of a key's socket: the segid with this bit set. */
#define ACCEPT_KEY_BIT		(1ULL << 63)
/* epoll data of a pending connection: its descriptor with this bit set. */
#define ACCEPT_CONN_BIT		(1ULL << 62)

/*
 * Connections to segments with an authorization key whose peer has not
 * written its struct shm_auth yet: in the accept thread's epoll set until
 * it comes or SHM_AUTH_WAIT_MS pass (owner lock).  A peer that fills the
 * table pushes the oldest out (closed unanswered).
 */
#define PENDING_MAX		32
static struct pending {
	int fd;			/* -1: free */
	uint64_t segid;
	struct timespec deadline;	/* CLOCK_MONOTONIC */
} pending[PENDING_MAX] = { [0 ... PENDING_MAX - 1] = { .fd = -1 } };

/* The accept thread's state, under the owner lock. */
static int accept_epfd = -1;		/* the accept thread's epoll set */
static int accept_spare = -1;		/* freed to accept at EMFILE */
static pid_t accept_pid;		/* process the accept thread runs in */

static struct shm_owner *const own = &xpmem_lib_shm_owner;

/*
 * accept_one_locked - a connection queued on @sock, or -1.  When the
 * process is out of descriptors, the spare one is given back for it
 * (*spare set: reopen it after closing the connection): a connection left
 * in the queue would wake epoll_wait() again at once, forever.
 */
static int accept_one_locked(int sock, int *spare)
{
	int c = accept4(sock, NULL, NULL, SOCK_CLOEXEC);

	*spare = 0;
	if (c >= 0 || (errno != EMFILE && errno != ENFILE) || accept_spare < 0)
		return c;
	close(accept_spare);
	accept_spare = -1;
	*spare = 1;
	return accept4(sock, NULL, NULL, SOCK_CLOEXEC);
}

static void pending_drop_locked(int i)
{
	epoll_ctl(accept_epfd, EPOLL_CTL_DEL, pending[i].fd, NULL);
	close(pending[i].fd);
	pending[i].fd = -1;
}

/*
 * Serve connection @c of @seg, which has an authorization key: answer at
 * once if the peer's request is there, else keep @c pending.  Return:
 * whether @c was kept (the caller must not close it).
 */
static int serve_auth_locked(struct shm_segment *seg, int c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct shm_auth a;
	ssize_t n = recv(c, &a, sizeof(a), MSG_DONTWAIT);
	int i, oldest = 0;

	if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
		xpmem_lib_shm_answer_auth_locked(seg, c,
				n == (ssize_t)sizeof(a) ? &a : NULL);
		explicit_bzero(&a, sizeof(a));
		return 0;
	}
	for (i = 0; i < PENDING_MAX && pending[i].fd >= 0; i++)
		if (xpmem_lib_shm_ms_left(&pending[i].deadline) <
		    xpmem_lib_shm_ms_left(&pending[oldest].deadline))
			oldest = i;
	if (i == PENDING_MAX) {
		pending_drop_locked(oldest);
		i = oldest;
	}
	ev.data.u64 = ACCEPT_CONN_BIT | (uint32_t)c;
	if (epoll_ctl(accept_epfd, EPOLL_CTL_ADD, c, &ev) != 0)
		return 0;
	pending[i].fd = c;
	pending[i].segid = (uint64_t)seg->segid;
	xpmem_lib_shm_deadline(&pending[i].deadline, SHM_AUTH_WAIT_MS);
	return 1;
}

/*
 * The pending connection @fd has its request (or hung up): answer it if
 * its segment still lives, and close it.
 */
static void serve_pending(int fd)
{
	struct shm_auth a;
	struct shm_segment *seg;
	ssize_t n;
	int i;

	pthread_mutex_lock(&own->lock);
	for (i = 0; i < PENDING_MAX && pending[i].fd != fd; i++)
		;
	n = i < PENDING_MAX ? recv(fd, &a, sizeof(a), MSG_DONTWAIT) : -1;
	/* not for a descriptor that is another connection by now */
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		i = PENDING_MAX;
	if (i < PENDING_MAX) {
		seg = xpmem_lib_shm_segment_locked(pending[i].segid);
		if (seg)
			xpmem_lib_shm_answer_auth_locked(seg, fd,
				n == (ssize_t)sizeof(a) ? &a : NULL);
		else
			xpmem_lib_shm_answer_removed(fd, pending[i].segid);
		explicit_bzero(&a, sizeof(a));
		pending_drop_locked(i);
	}
	pthread_mutex_unlock(&own->lock);
}

/*
 * Close the pending connections whose time is up; return how long
 * epoll_wait() may sleep until the next one's is (-1: none).
 */
static int pending_expire(void)
{
	int i, ms, next = -1;

	pthread_mutex_lock(&own->lock);
	for (i = 0; i < PENDING_MAX; i++) {
		if (pending[i].fd < 0)
			continue;
		ms = xpmem_lib_shm_ms_left(&pending[i].deadline);
		if (!ms)
			pending_drop_locked(i);
		else if (next < 0 || ms < next)
			next = ms;
	}
	pthread_mutex_unlock(&own->lock);
	return next;
}

/*
 * accept_serve - accept, answer and close everything queued on the socket
 * of the live segment @segid.  The owner lock is taken per connection, so
 * the application's make/remove wait for one answer at most, and the
 * segment is looked up by segid each time: a remove in between closes its
 * socket (the connections still queued are reset: their peers get ENOENT)
 * and we stop.
 */
static void accept_serve(uint64_t data)
{
	uint64_t segid = data & ~ACCEPT_KEY_BIT;
	int key = !!(data & ACCEPT_KEY_BIT);
	struct shm_segment *seg;
	int c, spare;

	do {
		c = -1;
		spare = 0;
		pthread_mutex_lock(&own->lock);
		seg = xpmem_lib_shm_segment_locked(segid);
		if (seg && (!key || seg->key_sock >= 0)) {
			c = accept_one_locked(key ? seg->key_sock : seg->sock,
					      &spare);
			if (c >= 0) {
				if (key)
					xpmem_lib_shm_answer_key(seg, c);
				else if (!seg->auth_len)
					xpmem_lib_shm_answer_locked(seg, c);
				else if (serve_auth_locked(seg, c))
					c = INT_MAX;	/* pending: kept */
				if (c != INT_MAX)
					close(c);
			}
		}
		if (spare)
			accept_spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		pthread_mutex_unlock(&own->lock);
	} while (c >= 0);
}

/* What the accept thread is started with; on its creator's stack. */
struct accept_start {
	int epfd;
	sem_t running;
};

static void *accept_main(void *arg)
{
	struct accept_start *start = arg;
	int epfd = start->epfd;
	struct epoll_event ev[ACCEPT_EVENTS];
	int i, n;

	sem_post(&start->running);	/* @start is gone after this */

	for (;;) {
		n = epoll_wait(epfd, ev, ACCEPT_EVENTS, pending_expire());
		if (n < 0) {
			if (errno == EINTR)
				continue;
			xpmem_lib_log("accept thread: epoll_wait: %s",
				      strerror(errno));
			return NULL;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].data.u64 & ACCEPT_CONN_BIT)
				serve_pending((int)(uint32_t)ev[i].data.u64);
			else
				accept_serve(ev[i].data.u64);
		}
	}
}

/*
 * Start the accept thread of this process, once, and wait until it runs:
 * whatever the thread sets up for itself (e.g. sanitizer state) is then in
 * place when the first make returns.
 */
int xpmem_lib_shm_server_start_locked(void)
{
	struct accept_start start;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int epfd, ret;

	if (accept_pid == getpid())
		return 0;
	if (accept_epfd >= 0)
		close(accept_epfd);	/* a parent's, inherited without our handler */
	if (accept_spare >= 0)
		close(accept_spare);
	accept_epfd = accept_spare = -1;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	start.epfd = epfd;
	if (sem_init(&start.running, 0, 0)) {
		ret = -errno;
		close(epfd);
		return ret;
	}
	/* No signal of the application is ever delivered to it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_attr_init(&attr);
	if (!ret) {
		ret = pthread_attr_setdetachstate(&attr,
						  PTHREAD_CREATE_DETACHED);
		if (!ret)
			ret = pthread_attr_setstacksize(&attr, ACCEPT_STACK);
		if (!ret)
			ret = pthread_create(&t, &attr, accept_main, &start);
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		xpmem_lib_log("cannot start the accept thread: %s",
			      strerror(ret));
		sem_destroy(&start.running);
		close(epfd);
		return -ret;
	}
	while (sem_wait(&start.running) && errno == EINTR)
		;
	sem_destroy(&start.running);
	pthread_setname_np(t, "xpmem-accept");
	accept_spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	accept_epfd = epfd;
	accept_pid = getpid();
	return 0;
}

/*
 * xpmem_lib_shm_segment_listen_locked - give @seg a fresh segid and its
 * listening socket.
 *
 * Draws random ids until one has a free registry slot and its abstract
 * name can be bound: EADDRINUSE means a live segment of some process in
 * this network namespace has that id.
 */
int xpmem_lib_shm_segment_listen_locked(struct shm_segment *seg)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sockaddr_un sun;
	socklen_t len;
	uint64_t id = 0;
	int i, fd, ret = -EAGAIN;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	for (i = 0; i < SHM_ID_TRIES; i++) {
		ret = xpmem_lib_shm_id_draw(&id);
		if (ret)
			goto close_fd;
		ret = -EAGAIN;
		if (own->slot_seg[xpmem_lib_shm_slot_of((xpmem_segid_t)id)])
			continue;
		len = xpmem_lib_shm_sockaddr((xpmem_segid_t)id, &sun);
		if (bind(fd, (struct sockaddr *)&sun, len) == 0)
			break;
		if (errno != EADDRINUSE) {
			ret = -errno;
			goto close_fd;
		}
	}
	if (i == SHM_ID_TRIES) {
		xpmem_lib_log("make: no free segid after %d draws", i);
		goto close_fd;
	}
	ev.data.u64 = id;
	if (listen(fd, SOMAXCONN) != 0 ||
	    epoll_ctl(accept_epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		ret = -errno;
		goto close_fd;
	}
	seg->segid = (xpmem_segid_t)id;
	seg->slot = xpmem_lib_shm_slot_of(seg->segid);
	seg->sock = fd;
	return 0;

close_fd:
	close(fd);
	return ret;
}

/*
 * xpmem_lib_shm_segment_key_listen_locked - publish @seg under @key: bind
 * and listen on the key's abstract name.  EADDRINUSE: a live segment in
 * this network namespace has the key.
 */
int xpmem_lib_shm_segment_key_listen_locked(struct shm_segment *seg,
					    const void *key, size_t key_len)
{
	struct epoll_event ev = {
		.events = EPOLLIN,
		.data.u64 = (uint64_t)seg->segid | ACCEPT_KEY_BIT,
	};
	struct sockaddr_un sun;
	socklen_t len = xpmem_lib_shm_key_sockaddr(key, key_len, &sun);
	int fd, ret;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, len) != 0) {
		ret = errno == EADDRINUSE ? -EEXIST : -errno;
		if (ret == -EEXIST)
			xpmem_lib_log("make: the key is in use in this network "
				      "namespace");
		close(fd);
		return ret;
	}
	if (listen(fd, SOMAXCONN) != 0 ||
	    epoll_ctl(accept_epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	seg->key_sock = fd;
	return 0;
}

/* Close @seg's sockets: its names, hence its segid and key, are free again. */
void xpmem_lib_shm_segment_unlisten_locked(struct shm_segment *seg)
{
	/*
	 * Explicitly: a copy of the socket in a child that skipped our fork
	 * handler would otherwise keep it in the epoll set.
	 */
	epoll_ctl(accept_epfd, EPOLL_CTL_DEL, seg->sock, NULL);
	close(seg->sock);
	if (seg->key_sock >= 0) {
		epoll_ctl(accept_epfd, EPOLL_CTL_DEL, seg->key_sock, NULL);
		close(seg->key_sock);
		seg->key_sock = -1;
	}
}


/*
 * In a fork child: close the child's copies of the pending connections
 * and of the epoll set, without epoll_ctl (the set is the parent's too).
 * The child has no accept thread; its first make starts one.
 */
void xpmem_lib_shm_server_reset_in_child(void)
{
	for (int i = 0; i < PENDING_MAX; i++) {
		if (pending[i].fd >= 0)
			close(pending[i].fd);	/* the parent's set: no DEL */
		pending[i].fd = -1;
	}
	if (accept_epfd >= 0)
		close(accept_epfd);
	if (accept_spare >= 0)
		close(accept_spare);
	accept_epfd = accept_spare = -1;
	accept_pid = 0;
}
