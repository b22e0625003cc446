// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_uffd - owner memory registered with userfaultfd: an attacher's
 * fault there waits for the owner's handler as the owner's own access
 * would (missing pages, write-protected pages, a self-attachment), a
 * UFFD_USER_MODE_ONLY handler refuses it, and an attacher waiting for a
 * handler that never serves it is killable.
 *
 * Runs as root inside the test VM with the module loaded; skips when
 * /dev/xpmem is absent.  Every multi-process test forks, synchronises over
 * pipes and checks exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* ---- the owner's userfaultfd and its handler --------------------------- */

#define UFFD_PAGES	16
#define UFFD_SEED	40	/* page i of the owner: fill() seed 40 + i */
#define UFFD_LEN	(UFFD_PAGES * PAGE)

/* The owner's userfaultfd, and its handler thread's state. */
struct uffd_owner {
	int uffd;
	int stop[2];		/* written to end the handler */
	char *buf;		/* UFFD_PAGES, registered */
	bool wp;		/* serve write-protect faults, not missing pages */
	int flags;		/* of userfaultfd(2), besides O_CLOEXEC etc. */
	int served;		/* faults the handler resolved */
	int err;		/* the handler's: 0 or a line number */
};

/*
 * A userfaultfd of the test process with @o->buf registered for missing
 * pages, or write-protected (@o->wp, the pages present).  Not
 * UFFD_USER_MODE_ONLY unless @o->flags says so: an attacher's fault is a
 * kernel access to the owner's memory, which such a handler refuses
 * (SIGBUS), as it refuses every other.  0, or -1 with a reason where the
 * kernel has no
 * userfaultfd, refuses it (vm.unprivileged_userfaultfd) or lacks
 * write-protection for anonymous memory.
 */
static int uffd_owner_setup(struct uffd_owner *o, const char **why)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)o->buf,
			   .len = UFFD_LEN },
		.mode = o->wp ? UFFDIO_REGISTER_MODE_WP :
				UFFDIO_REGISTER_MODE_MISSING,
	};
	struct uffdio_writeprotect wp = { .range = reg.range,
					  .mode = UFFDIO_WRITEPROTECT_MODE_WP };

	o->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | o->flags);
	*why = "no userfaultfd";
	if (o->uffd < 0)
		return -1;
	*why = "UFFDIO_API";
	if (ioctl(o->uffd, UFFDIO_API, &api))
		return -1;
	*why = "no write-protection of anonymous memory";
	if (o->wp && !(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP))
		return -1;
	*why = "UFFDIO_REGISTER";
	if (ioctl(o->uffd, UFFDIO_REGISTER, &reg))
		return -1;
	*why = "UFFDIO_WRITEPROTECT";
	if (o->wp && ioctl(o->uffd, UFFDIO_WRITEPROTECT, &wp))
		return -1;
	return pipe(o->stop);
}

/*
 * The owner's handler: each missing page i gets fill() seed UFFD_SEED + i
 * (UFFDIO_COPY), each write-protected page loses its protection; until
 * o->stop is written.
 */
static void *uffd_owner_serve(void *arg)
{
	struct uffd_owner *o = arg;
	struct pollfd p[2] = { { .fd = o->uffd, .events = POLLIN },
			       { .fd = o->stop[0], .events = POLLIN } };
	char *page = map_anon(PAGE);
	struct uffd_msg msg;
	uintptr_t addr;

	if (!page) {
		o->err = __LINE__;
		return NULL;
	}
	while (!o->err) {
		if (poll(p, 2, -1) < 0) {
			if (errno != EINTR)
				o->err = __LINE__;
			continue;
		}
		if (p[1].revents)
			break;
		if (read(o->uffd, &msg, sizeof(msg)) != sizeof(msg)) {
			if (errno != EAGAIN)
				o->err = __LINE__;
			continue;
		}
		addr = msg.arg.pagefault.address & ~(uintptr_t)(PAGE - 1);
		if (msg.event != UFFD_EVENT_PAGEFAULT ||
		    addr < (uintptr_t)o->buf ||
		    addr >= (uintptr_t)o->buf + UFFD_LEN) {
			o->err = __LINE__;
			break;
		}
		if (o->wp) {
			struct uffdio_writeprotect wp = {
				.range = { .start = addr, .len = PAGE },
			};

			if (!(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) ||
			    ioctl(o->uffd, UFFDIO_WRITEPROTECT, &wp))
				o->err = __LINE__;
		} else {
			struct uffdio_copy c = {
				.dst = addr, .src = (uintptr_t)page, .len = PAGE,
			};
			struct uffdio_range r = { .start = addr, .len = PAGE };

			fill(page, PAGE,
			     UFFD_SEED + (addr - (uintptr_t)o->buf) / PAGE);
			/* present already (a second fault on it): wake it */
			if (ioctl(o->uffd, UFFDIO_COPY, &c) &&
			    (errno != EEXIST ||
			     ioctl(o->uffd, UFFDIO_WAKE, &r)))
				o->err = __LINE__;
		}
		o->served++;
	}
	munmap(page, PAGE);
	return NULL;
}

/*
 * @o->buf: UFFD_PAGES of the owner's own (MADV_DONTFORK: the attacher
 * shares none of them copy-on-write), 4 KiB pages; for write-protection
 * present, page i with fill() seed UFFD_SEED + i.  NULL on failure.
 */
static char *uffd_owner_buf(bool present)
{
	char *buf = map_anon(UFFD_LEN);
	int i;

	if (!buf || madvise(buf, UFFD_LEN, MADV_DONTFORK) ||
	    madvise(buf, UFFD_LEN, MADV_NOHUGEPAGE))
		return NULL;
	for (i = 0; present && i < UFFD_PAGES; i++)
		fill(buf + i * PAGE, PAGE, UFFD_SEED + i);
	return buf;
}

/* ---- fixture ------------------------------------------------------------ */

/*
 * The device file and the object counters at the start, as in every
 * xpmem_* suite, and the test's owner: its UFFD_PAGES registered with its
 * userfaultfd and exported as @segid (uffd_start()), the handler thread
 * serving them (uffd_serve() to uffd_stop()).
 */
FIXTURE(xpmem)
{
	int fd;
	long segs, permits, atts;
	struct uffd_owner o;
	xpmem_segid_t segid;
	pthread_t th;
};

FIXTURE_SETUP(xpmem)
{
	self->o.uffd = -1;
	XP_FIXTURE_OPEN();
}

FIXTURE_TEARDOWN(xpmem)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * The owner's buffer (uffd_owner_buf(): present if @wp), registered with a
 * userfaultfd made with @flags, for write-protection if @wp, else for
 * missing pages, and made segment self->segid.  0, or -1 after SKIP where
 * the kernel cannot (the test returns).
 */
static int uffd_start(struct __test_metadata *_metadata,
		      FIXTURE_DATA(xpmem) *self, bool wp, int flags)
{
	const char *why;

	self->o = (struct uffd_owner){ .uffd = -1, .wp = wp, .flags = flags };
	self->o.buf = uffd_owner_buf(wp);
	ASSERT_NE(NULL, self->o.buf);
	if (uffd_owner_setup(&self->o, &why))
		SKIP(return -1, "%s (%s)", why, strerror(errno));
	ASSERT_EQ(0, xp_make(self->fd, self->o.buf, UFFD_LEN, 0600,
			     &self->segid));
	return 0;
}

/* The owner's handler thread starts serving faults. */
static void uffd_serve(struct __test_metadata *_metadata,
		       FIXTURE_DATA(xpmem) *self)
{
	ASSERT_EQ(0, pthread_create(&self->th, NULL, uffd_owner_serve,
				    &self->o));
}

/* The handler thread stops (its counts in self->o.served, .err). */
static void uffd_stop(struct __test_metadata *_metadata,
		      FIXTURE_DATA(xpmem) *self)
{
	ASSERT_EQ(1, write(self->o.stop[1], "s", 1));
	ASSERT_EQ(0, pthread_join(self->th, NULL));
}

/* The segment goes, the userfaultfd too; nothing is left behind. */
static void uffd_end(struct __test_metadata *_metadata,
		     FIXTURE_DATA(xpmem) *self)
{
	ASSERT_EQ(0, xp_remove(self->fd, self->segid));
	close(self->o.uffd);
	ASSERT_COUNTERS_AT_BASE();
	munmap(self->o.buf, UFFD_LEN);
}

/*
 * Owner memory filled lazily by the owner's userfaultfd handler: each of
 * the attacher's faults there waits for the handler, as the owner's own
 * access would, and maps what it placed; a write to a missing page lands
 * in the owner's page the handler placed.
 */
TEST_F(xpmem, userfaultfd_missing_pages_wait_for_owner_handler)
{
	const size_t len = UFFD_LEN;
	char desc[64];
	pid_t pid;
	int st;

	if (uffd_start(_metadata, self, false, 0))
		return;
	uffd_serve(_metadata, self);
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(self->segid, XPMEM_RDWR, len);
		int i;

		a[len - 1] = 'W';	/* a write first, to a missing page */
		for (i = 0; i < UFFD_PAGES - 1; i++)
			if (check(a + i * PAGE, PAGE, UFFD_SEED + i))
				_exit(10 + i);
		_exit(0);
	}
	/* bounded: an attacher that never gets its pages fails, not hangs */
	ASSERT_EQ(0, wait_bounded(pid, &st, 60));
	uffd_stop(_metadata, self);
	describe_status(st, desc, sizeof(desc));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		TH_LOG("attacher: %s (SIGBUS: its fault did not wait for the owner's handler)",
		       desc);
	}
	ASSERT_EQ(0, self->o.err);
	ASSERT_EQ(UFFD_PAGES, self->o.served);
	ASSERT_EQ('W', self->o.buf[len - 1]);
	ASSERT_EQ(0, check(self->o.buf + len - PAGE, PAGE - 1,
			   UFFD_SEED + UFFD_PAGES - 1));
	uffd_end(_metadata, self);
}

/*
 * The same with the owner attached to itself (one mm, one mmap_lock): the
 * reading thread waits for the handler thread of its own process.
 */
TEST_F(xpmem, userfaultfd_missing_pages_self_attach)
{
	xpmem_apid_t apid;
	int i, sig = 0;
	char *a;
	void *va;

	if (uffd_start(_metadata, self, false, 0))
		return;
	ASSERT_EQ(0, xp_get(self->fd, self->segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, 0, UFFD_LEN, NULL, &va));
	a = va;
	uffd_serve(_metadata, self);
	probe_install();
	for (i = 0; i < UFFD_PAGES; i++) {
		sig = touch((uint8_t *)a + i * PAGE, 0, 0);
		if (sig)
			break;
	}
	ASSERT_EQ(UFFD_PAGES, i) {
		TH_LOG("page %d: signal %d (SIGBUS: the fault did not wait for the handler)",
		       i, sig);
	}
	uffd_stop(_metadata, self);
	ASSERT_EQ(0, self->o.err);
	ASSERT_EQ(UFFD_PAGES, self->o.served);
	for (i = 0; i < UFFD_PAGES; i++)
		ASSERT_EQ(0, check(a + i * PAGE, PAGE, UFFD_SEED + i));
	ASSERT_EQ(0, xp_detach(self->fd, a));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	uffd_end(_metadata, self);
}

/*
 * Write-protected owner pages (UFFDIO_REGISTER_MODE_WP): the attacher's
 * write waits for the owner's handler to lift the protection, both to a
 * page it has read (a read-only PTE made writable) and to one it has not,
 * and lands in the owner's page.
 */
TEST_F(xpmem, userfaultfd_write_protect_waits_for_owner_handler)
{
	char desc[64];
	pid_t pid;
	int st;

	if (uffd_start(_metadata, self, true, 0))
		return;
	uffd_serve(_metadata, self);
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(self->segid, XPMEM_RDWR,
					       UFFD_LEN);

		if (check(a, PAGE, UFFD_SEED))
			_exit(2);
		a[1] = 'R';		/* read first, then written */
		a[3 * PAGE + 1] = 'W';	/* written, never read */
		_exit(0);
	}
	ASSERT_EQ(0, wait_bounded(pid, &st, 60));
	uffd_stop(_metadata, self);
	describe_status(st, desc, sizeof(desc));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		TH_LOG("attacher: %s (SIGBUS: its write did not wait for the owner's handler)",
		       desc);
	}
	ASSERT_EQ(0, self->o.err);
	ASSERT_EQ(2, self->o.served);
	ASSERT_EQ('R', self->o.buf[1]);
	ASSERT_EQ('W', self->o.buf[3 * PAGE + 1]);
	uffd_end(_metadata, self);
}

/*
 * A handler made with UFFD_USER_MODE_ONLY (what an unprivileged owner
 * gets by default) serves only the owner's own user-mode accesses: the
 * attacher's access, a kernel access to the owner's memory, is SIGBUS at
 * once, without reaching the handler and without looping.
 */
TEST_F(xpmem, userfaultfd_user_mode_only_refuses_attacher)
{
	struct pollfd p;
	pid_t pid;

	if (uffd_start(_metadata, self, false, UFFD_USER_MODE_ONLY))
		return;
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a = child_attach_or_exit(self->segid, XPMEM_RDWR,
					       UFFD_LEN);

		_exit(probe(a + PAGE, 0, 0) == SIGBUS ? 0 : 2);
	}
	ASSERT_EQ(0, wait_child(pid));
	p = (struct pollfd){ .fd = self->o.uffd, .events = POLLIN };
	ASSERT_EQ(0, poll(&p, 1, 0));
	uffd_end(_metadata, self);
}

/*
 * An attacher waiting for the owner's handler, which never serves it, is
 * killable: once the handler sees the fault, SIGKILL ends the attacher
 * (no D state, nothing left behind).  The attacher holds a pipe open, so
 * an attacher that dies before its fault reaches the handler is seen.
 */
TEST_F(xpmem, userfaultfd_unserved_fault_is_killable)
{
	struct pollfd p[2];
	struct uffd_msg msg;
	int alive[2], st;
	char desc[64];
	pid_t pid;

	if (uffd_start(_metadata, self, false, 0))
		return;
	ASSERT_EQ(0, pipe(alive));
	pid = fork_child();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *a;

		close(alive[0]);
		a = child_attach_or_exit(self->segid, XPMEM_RDWR, UFFD_LEN);
		_exit(a[2 * PAGE] ? 3 : 2);	/* never served */
	}
	close(alive[1]);
	p[0] = (struct pollfd){ .fd = self->o.uffd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = alive[0], .events = POLLIN };
	/* bounded: a fault that never reaches the handler fails, not hangs */
	ASSERT_EQ(1, poll(p, 2, 60000) > 0);
	if (!(p[0].revents & POLLIN)) {
		ASSERT_EQ(0, wait_bounded(pid, &st, 10));
		describe_status(st, desc, sizeof(desc));
		ASSERT_TRUE(p[0].revents & POLLIN) {
			TH_LOG("attacher ended before its fault reached the owner's handler: %s",
			       desc);
		}
	}
	ASSERT_EQ(sizeof(msg), read(self->o.uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
	ASSERT_EQ((uintptr_t)self->o.buf + 2 * PAGE,
		  msg.arg.pagefault.address & ~(uint64_t)(PAGE - 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(0, wait_bounded(pid, &st, 30)) {
		TH_LOG("attacher still there 30 s after SIGKILL");
	}
	describe_status(st, desc, sizeof(desc));
	ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
		TH_LOG("attacher: %s", desc);
	}
	close(alive[0]);
	uffd_end(_metadata, self);
}

TEST_HARNESS_MAIN
