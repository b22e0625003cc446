// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_revoke.c - what REMOVE and RELEASE revoke: copies in flight
 *
 * Once REMOVE or RELEASE has returned, no byte moves between the owner's
 * memory and anyone else, also for a copy (EXT_COPY, as an ioctl or as an
 * io_uring command run by an io-wq worker) that was already running.  To
 * stop a copy at a known point, its local buffer's second half is
 * registered with userfaultfd: the copy blocks on the first byte there,
 * the revocation happens, the owner rewrites its memory, then the fault
 * is resolved.  The copy must stop there with a short count: nothing of
 * the owner's new bytes arrives, nothing of the attacher's reaches the
 * owner.
 */
#define _GNU_SOURCE
#include <liburing.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/inotify.h>
#include <pthread.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

#define LEN		(2UL << 20)
#define HALF		(LEN / 2)

FIXTURE(revoke)
{
	int fd;
	long segs, permits, atts;
	char *buf;		/* the owner's */
};

/* by whom, in which direction, through which path */
FIXTURE_VARIANT(revoke)
{
	bool release;		/* RELEASE by the attacher, else owner REMOVE */
	bool to_seg;		/* COPY_TO, else from the segment */
	bool ring;		/* io_uring command, else ioctl */
};

FIXTURE_VARIANT_ADD(revoke, remove_from_ioctl) { .release = false };
FIXTURE_VARIANT_ADD(revoke, remove_to_ioctl) { .to_seg = true };
FIXTURE_VARIANT_ADD(revoke, release_from_ioctl) { .release = true };
FIXTURE_VARIANT_ADD(revoke, release_to_ioctl) {
	.release = true, .to_seg = true,
};
FIXTURE_VARIANT_ADD(revoke, remove_from_ring) { .ring = true };
FIXTURE_VARIANT_ADD(revoke, remove_to_ring) { .to_seg = true, .ring = true };
FIXTURE_VARIANT_ADD(revoke, release_to_ring) {
	.release = true, .to_seg = true, .ring = true,
};

FIXTURE_SETUP(revoke)
{
	self->buf = NULL;
	XP_FIXTURE_OPEN();
	self->buf = map_anon(LEN);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 'O', LEN);
}

FIXTURE_TEARDOWN(revoke)
{
	if (self->buf)
		munmap(self->buf, LEN);
	if (self->fd >= 0)
		close(self->fd);
}

/* The attacher's side: its state, shared with its fault handler. */
struct attacher {
	int fd, uffd;
	xpmem_apid_t apid;
	bool release;
	char *local;		/* LEN; second half behind userfaultfd */
	struct chan *c;
	int err;		/* the handler's: 0 or a line number */
};

/*
 * Wait for the copy's fault in the second half, have the revocation done
 * (by the owner, told over the channel, or here), then resolve the fault
 * with zeroes for the whole half: bytes that arrive there later would be
 * the copy's, after the revocation.
 */
static void *fault_handler(void *arg)
{
	struct attacher *a = arg;
	struct pollfd pfd = { .fd = a->uffd, .events = POLLIN };
	struct uffdio_zeropage zp = {
		.range = { .start = (uintptr_t)a->local + HALF, .len = HALF },
	};
	struct uffd_msg msg;
	char go;

	/* bounded: a copy that never blocks is a failure, not a hang */
	if (poll(&pfd, 1, 20000) != 1 || read(a->uffd, &msg, sizeof(msg)) !=
	    sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT) {
		a->err = __LINE__;
		return NULL;
	}
	if (a->release) {
		if (xp_release(a->fd, a->apid))
			a->err = __LINE__;
	} else if (send_msg(a->c->to_parent[1], "b", 1) ||
		   recv_msg(a->c->to_child[0], &go, 1)) {
		a->err = __LINE__;
	}
	if (ioctl(a->uffd, UFFDIO_ZEROPAGE, &zp))
		a->err = a->err ? a->err : __LINE__;
	return NULL;
}

static long ring_copy(int fd, struct xpmem_ext_copy *c)
{
	struct xpmem_ext_uring_cmd uc = { .arg = (uintptr_t)c };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	long res;

	if (io_uring_queue_init(4, &ring, 0))
		return -ENOSYS;
	sqe = io_uring_get_sqe(&ring);
	if (!sqe) {
		io_uring_queue_exit(&ring);
		return -EIO;
	}
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = XPMEM_CMD_EXT_COPY;
	memcpy(&sqe->addr3, &uc, sizeof(uc));
	/* always from a worker: the case the review saw */
	sqe->flags |= IOSQE_ASYNC;
	if (io_uring_submit(&ring) != 1 || io_uring_wait_cqe(&ring, &cqe)) {
		io_uring_queue_exit(&ring);
		return -EIO;
	}
	res = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	return res;
}

/*
 * The attacher: copy LEN bytes between its buffer and the segment; the
 * copy must stop where it blocked, at HALF.  Exit status: 0, or the line
 * of the first failed check (128 and up: the handler's).
 */
static int attacher_run(xpmem_segid_t segid, const FIXTURE_VARIANT(revoke) *v,
			struct chan *c)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct attacher a = { .release = v->release, .c = c };
	struct xpmem_ext_copy cp = { .len = LEN };
	pthread_t th;
	long n;

	a.fd = xp_open();
	if (a.fd < 0 || xp_get(a.fd, segid, XPMEM_RDWR, &a.apid))
		return __LINE__;
	a.local = map_anon(LEN);
	if (!a.local)
		return __LINE__;
	/* 4 KiB pages: a THP would fill the second half too */
	if (madvise(a.local, LEN, MADV_NOHUGEPAGE))
		return __LINE__;
	memset(a.local, 'A', HALF);
	a.uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (a.uffd < 0)
		return 100;	/* no userfaultfd: the parent skips */
	reg.range.start = (uintptr_t)a.local + HALF;
	reg.range.len = HALF;
	if (ioctl(a.uffd, UFFDIO_API, &api) ||
	    ioctl(a.uffd, UFFDIO_REGISTER, &reg))
		return 100;
	if (pthread_create(&th, NULL, fault_handler, &a))
		return __LINE__;

	cp.apid = a.apid;
	cp.addr = (uintptr_t)a.local;
	cp.flags = v->to_seg ? XPMEM_EXT_COPY_TO : 0;
	n = v->ring ? ring_copy(a.fd, &cp) : xp_ext_copy(a.fd, &cp);
	pthread_join(th, NULL);
	if (a.err)
		return 128 + (a.err & 127);
	if (n == -ENOSYS && v->ring)
		return 101;	/* no io_uring: skip */
	/* stopped where it blocked; nothing after the revocation */
	if (n != (long)HALF)
		return __LINE__;
	if (!v->to_seg && (all_bytes(a.local, HALF, 'O') ||
			   all_bytes(a.local + HALF, HALF, 0)))
		return __LINE__;
	return 0;
}

TEST_F_TIMEOUT(revoke, copy_in_flight_stops, 60)
{
	xpmem_segid_t segid;
	bool removed = false;
	struct chan c;
	pid_t pid;
	char b;
	int st;

	if (variant->ring && !kernel_has_uring_cmd())
		SKIP(return, "the kernel has no io_uring commands (5.19)");
	ASSERT_EQ(0, xp_make(self->fd, self->buf, LEN, 0600, &segid));
	ASSERT_EQ(0, chan_init(&c));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		chan_child(&c);
		_exit(attacher_run(segid, variant, &c));
	}
	chan_parent(&c);
	if (!variant->release) {
		/* the copy is blocked in its local buffer: REMOVE now */
		if (recv_msg(c.to_parent[0], &b, 1) == 0) {
			ASSERT_EQ(0, xp_remove(self->fd, segid));
			removed = true;
			/* after REMOVE returned: must not reach the attacher */
			memset(self->buf, 'N', LEN);
			ASSERT_EQ(0, send_msg(c.to_child[1], "g", 1));
		}
	}
	st = wait_child(pid);
	if (st == 100)
		SKIP(goto out, "userfaultfd unavailable");
	if (st == 101)
		SKIP(goto out, "io_uring unavailable");
	ASSERT_EQ(0, st) {
		TH_LOG("attacher failed at line %d", st);
	}
	if (variant->to_seg) {
		/* the attacher's first half arrived, nothing after it */
		ASSERT_EQ(0, all_bytes(self->buf, HALF,
				       variant->release ? 'A' : 'N'));
		ASSERT_EQ(0, all_bytes(self->buf + HALF, HALF,
				       variant->release ? 'O' : 'N'));
	}
out:
	if (!removed)
		ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * A copy whose local buffer faults slowly holds nothing of the owner's
 * while it waits: no page and no reference to its address space.  The
 * owner, which maps a file, exits while the copy waits in its local
 * buffer; its address space is torn down at its exit all the same, which
 * shows as the mapping's close of the file (inotify) before the owner is
 * reaped.  The copy, when its fault is resolved, stops where it waited.
 */
FIXTURE(owner_gone)
{
	int fd;
	long segs, permits, atts;
};

FIXTURE_SETUP(owner_gone)
{
	XP_FIXTURE_OPEN();
}

FIXTURE_TEARDOWN(owner_gone)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F_TIMEOUT(owner_gone, copy_waiting_in_local_fault, 60)
{
	FIXTURE_VARIANT(revoke) from = { .release = false };
	char path[64], ev[4096];
	xpmem_segid_t segid;
	struct chan co, cc;
	int in, st, f, rerr = 0;
	ssize_t n = -1;
	pid_t o, c;
	char b;

	snprintf(path, sizeof(path), "/tmp/xpmem_revoke-map.%d", (int)getpid());
	f = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_LE(0, f);
	ASSERT_EQ(0, ftruncate(f, PAGE));
	close(f);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (in < 0 && errno == ENOSYS) {
		unlink(path);
		SKIP(return, "no inotify (CONFIG_INOTIFY_USER)");
	}
	ASSERT_LE(0, in);
	ASSERT_LE(0, inotify_add_watch(in, path, IN_CLOSE));
	ASSERT_EQ(0, chan_init(&co));
	o = fork_child();
	ASSERT_LE(0, o);
	if (o == 0) {
		char *p = map_anon(LEN), *m;
		int fd = xp_open(), mf = open(path, O_RDWR | O_CLOEXEC);

		chan_child(&co);
		if (!p || fd < 0 || mf < 0)
			_exit(1);
		m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, mf, 0);
		close(mf);	/* the mapping keeps the file until teardown */
		memset(p, 'O', LEN);
		if (m == MAP_FAILED || xp_make(fd, p, LEN, 0666, &segid) ||
		    send_msg(co.to_parent[1], &segid, sizeof(segid)))
			_exit(2);
		recv_msg(co.to_child[0], &b, 1);
		_exit(0);
	}
	chan_parent(&co);
	ASSERT_EQ(0, recv_msg(co.to_parent[0], &segid, sizeof(segid)));
	/* the events of the opens and closes so far */
	while (read(in, ev, sizeof(ev)) > 0)
		;

	ASSERT_EQ(0, chan_init(&cc));
	c = fork_child();
	ASSERT_LE(0, c);
	if (c == 0) {
		chan_child(&cc);
		_exit(attacher_run(segid, &from, &cc));
	}
	chan_parent(&cc);
	/* the copy waits in its local buffer: the owner exits now */
	if (recv_msg(cc.to_parent[0], &b, 1) == 0) {
		ASSERT_EQ(0, send_msg(co.to_child[1], "x", 1));
		ASSERT_EQ(0, wait_child(o));
		o = 0;
		n = read(in, ev, sizeof(ev));
		rerr = errno;
		ASSERT_EQ(0, send_msg(cc.to_child[1], "g", 1));
	}
	st = wait_child(c);
	if (o)
		wait_child(o);
	close(in);
	unlink(path);
	if (st == 100)
		SKIP(return, "userfaultfd unavailable");
	/* the owner's address space went with it: its mapping closed */
	EXPECT_LT(0, n) TH_LOG("no close of the owner's mapped file: %s",
			       n < 0 ? strerror(rerr) : "end of file");
	/* stopped where it waited */
	ASSERT_EQ(0, st) {
		TH_LOG("attacher failed at line %d", st);
	}
	ASSERT_COUNTERS_AT_BASE();
}

TEST_HARNESS_MAIN
