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

TEST_HARNESS_MAIN
