// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_mmlock - the owner's and the attacher's mm locks together: two
 * processes writing through RDWR attachments of each other's whole
 * address space while they map, unmap and populate do not deadlock, and
 * faults make progress with a bounded number of retries while the owner
 * churns its mappings, and restart only for invalidations of the page
 * they need; the OOM reaper (process_mrelease) reaps an owner
 * of a whole-address-space segment; the fault counters exist.
 *
 * Runs as root inside the test VM with the module loaded; skips when
 * /dev/xpmem is absent.  Every test forks, synchronises over pipes or a
 * futex and checks exit statuses.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>

#ifndef SYS_process_mrelease
#define SYS_process_mrelease	448
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal	424
#endif

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(mmlock)
{
	int fd;
	long segs, permits, atts;
	struct kids kids;		/* children, for the teardown */
};

FIXTURE_SETUP(mmlock)
{
	self->kids.n = 0;
	XP_FIXTURE_OPEN();
}

/* Ends leftover children, also after a failure. */
FIXTURE_TEARDOWN(mmlock)
{
	kids_reap(&self->kids);
	if (self->fd >= 0)
		close(self->fd);
}

/* ---- ABBA deadlock ---------------------------------------------------- */

#define ABBA_PAGES	64	/* attached from the peer, written each round */
#define ABBA_ROUNDS	30	/* rounds of thread 1 in each process */
#define ABBA_BIG	(1UL << 20)	/* populated and discarded by thread 3 */
#define ABBA_STALL_MS	20000	/* no progress this long: a hang */
#define ABBA_POLL_MS	1000

#define CHURN_ROUNDS	400	/* fault rounds of thread 1, churn variant */
#define CHURN_SENTINEL	2048	/* offset of a word the owner set per page */

/* Progress counters, in memory shared by the parent and both children. */
struct abba_shared {
	int rounds[2];			/* thread 1 (a futex word) */
	unsigned long cycles[2];	/* thread 2: mmap/munmap cycles */
	unsigned long holds[2];		/* thread 3: populate/discard */
	int target;			/* rounds thread 1 runs */
	bool churn;			/* thread 1: the churn variant */
};

struct abba_thread_arg {
	struct abba_shared *sh;
	int i;
};

static int abba_rounds(struct abba_shared *sh, int i)
{
	return __atomic_load_n(&sh->rounds[i], __ATOMIC_ACQUIRE);
}

/* Helper threads run until thread 1 of both processes is done. */
static bool abba_running(struct abba_shared *sh)
{
	return abba_rounds(sh, 0) < sh->target ||
	       abba_rounds(sh, 1) < sh->target;
}

/* Thread 2: mmap/munmap of unrelated memory (mmap_lock writer). */
static void *abba_mapper(void *p)
{
	struct abba_thread_arg *arg = p;
	struct abba_shared *sh = arg->sh;

	while (abba_running(sh)) {
		char *m = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return (void *)1;
		memset(m, 1, 16 * PAGE);
		munmap(m, 16 * PAGE);
		__atomic_add_fetch(&sh->cycles[arg->i], 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * Thread 3: populate and discard unrelated memory, holding mmap_lock for
 * read long enough that thread 2's write lock waits and new readers queue
 * behind it (rwsem handoff), as a busy runtime's allocator does.
 */
static void *abba_holder(void *p)
{
	struct abba_thread_arg *arg = p;
	struct abba_shared *sh = arg->sh;
	char *big = map_anon(ABBA_BIG);

	if (!big)
		return (void *)1;
	while (abba_running(sh)) {
		if (populate_write(big, ABBA_BIG) ||
		    madvise(big, ABBA_BIG, MADV_DONTNEED))
			return (void *)2;
		__atomic_add_fetch(&sh->holds[arg->i], 1, __ATOMIC_RELAXED);
	}
	munmap(big, ABBA_BIG);
	return NULL;
}

/* Where one process's exported buffer is. */
struct abba_info {
	xpmem_segid_t segid;
	char *buf;
};

/*
 * Thread 1 of the churn variant: each round drops the attachment's PTEs,
 * reads a word the peer set in one of its pages (a read ->fault), then
 * writes and reads back a word of this process's own (->pfn_mkwrite, or a
 * write ->fault); every 8th round it also reads the peer's last page, which
 * the peer made PROT_NONE, and must get SIGBUS (a failure found while the
 * owner's lock is busy must be reported, not retried).  No lockstep with
 * the peer: faults as fast as they go.  Returns 0 or a failing step.
 */
static int churn_rounds(struct abba_shared *sh, int i, char *a, size_t len)
{
	int round;

	for (round = 0; round < sh->target; round++) {
		size_t p = (size_t)(round * 7 + i) % (len / PAGE - 1);
		volatile uint64_t *s = (uint64_t *)(a + p * PAGE +
						    CHURN_SENTINEL);
		volatile uint64_t *w = (uint64_t *)(a + p * PAGE) + 8 + i;

		if (madvise(a, len, MADV_DONTNEED))
			return 10;
		if (*s != (uint64_t)(!i) * 1000 + p)
			return 11;
		*w = round;
		if (*w != (uint64_t)round)
			return 12;
		if (round % 8 == 0 && probe(a + len - PAGE, 0, 0) != SIGBUS)
			return 13;
		__atomic_store_n(&sh->rounds[i], round + 1, __ATOMIC_RELEASE);
	}
	return 0;
}

/*
 * One of the two processes: export the whole address space 0666, attach
 * the peer's buffer RDWR.  Thread 1, in rounds kept in step with the
 * peer's over a shared futex: read then write every page of the
 * attachment (the read maps a read-only PTE, the write goes through
 * ->pfn_mkwrite), then discard its own exported pages (MADV_DONTNEED) so
 * that the peer's next round writes fresh pages.  Threads 2 and 3 stress
 * the process's mmap_lock meanwhile.  Returns the exit code.
 */
static int abba_process(struct abba_shared *sh, int i, struct chan *ch)
{
	const size_t len = ABBA_PAGES * PAGE;
	struct abba_thread_arg arg = { .sh = sh, .i = i };
	struct abba_info mine, peer;
	void *ret2, *ret3;
	xpmem_apid_t apid;
	pthread_t t2, t3;
	int fd, round, cur;
	size_t p;
	char *a, m;
	void *va;

	fd = xp_open();
	mine.buf = map_anon(len);
	if (fd < 0 || !mine.buf)
		return 1;
	memset(mine.buf, 'a' + i, len);
	for (p = 0; p < len; p += PAGE)
		*(uint64_t *)(mine.buf + p + CHURN_SENTINEL) =
			(uint64_t)i * 1000 + p / PAGE;
	/* PROT_NONE rather than unmapped: no other mmap can land there */
	if (sh->churn && mprotect(mine.buf + len - PAGE, PAGE, PROT_NONE))
		return 1;
	if (make_whole(fd, 0666, &mine.segid))
		return 2;
	if (send_msg(ch->to_parent[1], &mine, sizeof(mine)) ||
	    recv_msg(ch->to_child[0], &peer, sizeof(peer)))
		return 3;
	if (xp_get(fd, peer.segid, XPMEM_RDWR, &apid) ||
	    xp_attach(fd, apid, whole_off(peer.buf), len, NULL, &va))
		return 4;
	a = va;
	if (pthread_create(&t2, NULL, abba_mapper, &arg) ||
	    pthread_create(&t3, NULL, abba_holder, &arg))
		return 5;
	if (sh->churn) {
		round = churn_rounds(sh, i, a, len);
		if (round)
			return round;
	}
	for (round = 0; !sh->churn && round < sh->target; round++) {
		for (p = 0; p < len; p += PAGE) {
			volatile char *q = a + p + (round % 64) * 8;
			char v = *q;	/* read first: a read-only PTE */

			*q = v + 1;	/* then write: ->pfn_mkwrite */
		}
		if (madvise(mine.buf, len, MADV_DONTNEED))
			return 6;
		__atomic_store_n(&sh->rounds[i], round + 1, __ATOMIC_RELEASE);
		sys_futex(&sh->rounds[i], FUTEX_WAKE, 1, NULL);
		/* until the peer has refreshed its pages for this round */
		while ((cur = abba_rounds(sh, !i)) < round + 1)
			if (sys_futex(&sh->rounds[!i], FUTEX_WAIT, cur, NULL) &&
			    errno != EAGAIN && errno != EINTR)
				return 7;
	}
	if (pthread_join(t2, &ret2) || pthread_join(t3, &ret3) || ret2 ||
	    ret3)
		return 8;
	/* keep this mm alive until the peer is done with it too */
	if (send_msg(ch->to_parent[1], "d", 1) ||
	    recv_msg(ch->to_child[0], &m, 1))
		return 9;
	return 0;
}

static unsigned long abba_progress(struct abba_shared *sh)
{
	return abba_rounds(sh, 0) + abba_rounds(sh, 1) +
	       __atomic_load_n(&sh->cycles[0], __ATOMIC_RELAXED) +
	       __atomic_load_n(&sh->cycles[1], __ATOMIC_RELAXED) +
	       __atomic_load_n(&sh->holds[0], __ATOMIC_RELAXED) +
	       __atomic_load_n(&sh->holds[1], __ATOMIC_RELAXED);
}

/*
 * A and B each hold an RDWR attachment of the other's whole-space
 * segment and write fresh pages (->pfn_mkwrite) while other threads of
 * each map, unmap and populate.  An mkwrite that waited for the other
 * mm's mmap_lock while holding its own would be ABBA with the queued
 * writers, both hung in D state.  Both must finish their rounds.  A watchdog (poll()
 * timeouts on the pipes each child reports "done" on, or closes by dying)
 * fails the test when the shared progress counters stop moving.
 */
static void abba_run(struct __test_metadata *_metadata,
		     FIXTURE_DATA(mmlock) *self, struct abba_shared *sh)
{
	struct abba_info info[2];
	unsigned long last = 0, cur;
	int stalled = 0, done[2] = { 0, 0 }, i, r;
	struct pollfd pfd[2];
	struct chan ch[2];
	pid_t pid[2];
	char m;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, chan_init(&ch[i]));
		pid[i] = kids_fork(&self->kids);
		ASSERT_GE(pid[i], 0);
		if (pid[i] == 0) {
			chan_child(&ch[i]);
			_exit(abba_process(sh, i, &ch[i]));
		}
		chan_parent(&ch[i]);
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, recv_msg(ch[i].to_parent[0], &info[i],
				      sizeof(info[i])));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, send_msg(ch[i].to_child[1], &info[!i],
				      sizeof(info[!i])));

	/* watchdog: until both said done (1), one died (-1), or a stall */
	while (done[0] >= 0 && done[1] >= 0 && (!done[0] || !done[1])) {
		for (i = 0; i < 2; i++)
			pfd[i] = (struct pollfd){
				.fd = done[i] ? -1 : ch[i].to_parent[0],
				.events = POLLIN,
			};
		r = poll(pfd, 2, ABBA_POLL_MS);
		ASSERT_GE(r, 0);
		for (i = 0; i < 2; i++)
			if (pfd[i].revents)
				done[i] = read(ch[i].to_parent[0], &m, 1) == 1 ?
					  1 : -1;
		cur = abba_progress(sh);
		if (r > 0 || cur != last) {
			last = cur;
			stalled = 0;
		} else if ((stalled += ABBA_POLL_MS) >= ABBA_STALL_MS) {
			break;
		}
	}
	if (stalled >= ABBA_STALL_MS || done[0] < 0 || done[1] < 0) {
		for (i = 0; i < 2; i++)
			kill(pid[i], SIGKILL);
	}
	ASSERT_LT(stalled, ABBA_STALL_MS) {
		TH_LOG("no progress for %d s: rounds %d/%d, mmap cycles %lu/%lu, populate/discard %lu/%lu",
		       ABBA_STALL_MS / 1000, sh->rounds[0], sh->rounds[1],
		       sh->cycles[0], sh->cycles[1], sh->holds[0],
		       sh->holds[1]);
	}
	for (i = 0; i < 2; i++)
		send_msg(ch[i].to_child[1], "x", 1);
	for (i = 0; i < 2; i++) {
		int np = sh->rounds[i], rc = wait_child(pid[i]);

		ASSERT_EQ(0, rc) {
			TH_LOG("process %d: %d rounds", i, np);
		}
	}
	ASSERT_EQ(sh->target, sh->rounds[0]);
	ASSERT_EQ(sh->target, sh->rounds[1]);
}

static struct abba_shared *abba_shared_new(int target, bool churn)
{
	struct abba_shared *sh = mmap(NULL, sizeof(*sh),
				      PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (sh == MAP_FAILED)
		return NULL;
	memset(sh, 0, sizeof(*sh));
	sh->target = target;
	sh->churn = churn;
	return sh;
}

/* The module's fault counters, for deltas over one test. */
struct fault_stats {
	long faults, retries, seq_retries, owner_waits, mkwrite_fast;
};

static void fault_stats_read(struct fault_stats *f)
{
	f->faults = stat_read("faults");
	f->retries = stat_read("fault_retries");
	f->seq_retries = stat_read("fault_seq_retries");
	f->owner_waits = stat_read("fault_owner_waits");
	f->mkwrite_fast = stat_read("mkwrite_fast");
}

TEST_F_TIMEOUT(mmlock, mutual_rdwr_attach_mkwrite_vs_mmap_no_deadlock, 240)
{
	struct abba_shared *sh = abba_shared_new(ABBA_ROUNDS, false);

	ASSERT_NE(NULL, sh);
	abba_run(_metadata, self, sh);
	TH_LOG("mmap cycles %lu/%lu, populate/discard %lu/%lu, fault_retries %ld, fault_seq_retries %ld",
	       sh->cycles[0], sh->cycles[1], sh->holds[0], sh->holds[1],
	       stat_read("fault_retries"), stat_read("fault_seq_retries"));
	ASSERT_COUNTERS_AT_BASE();
	munmap(sh, sizeof(*sh));
}

/*
 * Fault retries under churn: attacher threads fault while owner threads
 * mmap/munmap and populate/discard in a loop.  A fault that gave up the
 * owner's lock between resolving and inserting would lose to every owner
 * mmap or munmap (whole-address-space segments see them all), and one
 * that had to wait for the lock would find it contended again at once:
 * hundreds of retries per fault, neither side progressing under load.
 * Both processes attach each
 * other, so both lock orders (struct mm_struct addresses) are exercised.
 * Each must finish its rounds with every value right, the mappers must
 * progress meanwhile, and the fault path must not spin.  A round is at
 * least two faults (the read, then ->pfn_mkwrite) and at most three lock
 * contentions (those two, and the write ->fault after a zap).
 */
TEST_F_TIMEOUT(mmlock, mutual_fault_vs_owner_churn_progress, 240)
{
	struct abba_shared *sh = abba_shared_new(CHURN_ROUNDS, true);
	struct fault_stats a, b;

	ASSERT_NE(NULL, sh);
	fault_stats_read(&a);
	abba_run(_metadata, self, sh);
	fault_stats_read(&b);
	TH_LOG("rounds %d/%d, mmap cycles %lu/%lu, populate/discard %lu/%lu; faults %ld, fault_retries %ld, fault_seq_retries %ld, fault_owner_waits %ld, mkwrite_fast %ld",
	       sh->rounds[0], sh->rounds[1], sh->cycles[0], sh->cycles[1],
	       sh->holds[0], sh->holds[1], b.faults - a.faults,
	       b.retries - a.retries, b.seq_retries - a.seq_retries,
	       b.owner_waits - a.owner_waits,
	       b.mkwrite_fast - a.mkwrite_fast);
	ASSERT_LT(0, sh->cycles[0] + sh->cycles[1]);
	ASSERT_LT(0, sh->holds[0] + sh->holds[1]);
	ASSERT_LE(2L * 2 * CHURN_ROUNDS, b.faults - a.faults);
	ASSERT_GE(4L * 2 * CHURN_ROUNDS, b.faults - a.faults);
	ASSERT_GE(3L * 2 * CHURN_ROUNDS, b.retries - a.retries);
	ASSERT_GE(2L * CHURN_ROUNDS, b.seq_retries - a.seq_retries);
	ASSERT_COUNTERS_AT_BASE();
	munmap(sh, sizeof(*sh));
}

/* ---- Restarts only for the fault's own page -------------------------- */

#define EDGE_MAX_PAGES	512	/* the attachment, at most one fault window */
#define EDGE_PIECE	16	/* pages the owner discards at each end */
#define EDGE_ROUNDS	300	/* faults of the attacher */

/* Shared by the owner child and the attacher (the test process). */
struct edge_shared {
	int stop;			/* set by the attacher when done */
	unsigned long discards;		/* the owner's MADV_DONTNEEDs */
};

/*
 * The owner: export the whole address space, then discard the first and
 * the last EDGE_PIECE pages of its @len bytes, in turn and without pause,
 * until told to stop.  Exit 0, or the step that failed.
 */
static int edge_owner(struct edge_shared *sh, struct chan *ch, size_t len)
{
	const size_t piece = EDGE_PIECE * PAGE;
	xpmem_segid_t segid;
	size_t p;
	char *buf;
	int fd;

	fd = xp_open();
	buf = map_anon(len);
	if (fd < 0 || !buf)
		return 1;
	for (p = 0; p < len / PAGE; p++)
		*(uint64_t *)(buf + p * PAGE) = 7000 + p;
	if (make_whole(fd, 0600, &segid))
		return 2;
	if (send_msg(ch->to_parent[1], &segid, sizeof(segid)) ||
	    send_msg(ch->to_parent[1], &buf, sizeof(buf)))
		return 3;
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		char *edge = buf + (sh->discards & 1 ? len - piece : 0);

		if (madvise(edge, piece, MADV_DONTNEED))
			return 4;
		__atomic_add_fetch(&sh->discards, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

/*
 * A fault window holds the faulting page and its neighbours; an
 * invalidation of neighbours must not start the fault over, only keep
 * them out of what the fault maps.  Here the owner discards the first and
 * the last 16 pages of a buffer of one fault window (at most 512 pages)
 * without pause - every window of the attachment holds one of them -
 * while the attacher drops its PTEs and reads one of the pages in
 * between, EDGE_ROUNDS times.  The reads must see the owner's values, the
 * owner must have discarded at least once per fault, and the faults may
 * restart (fault_seq_retries) at most 5 times per 100 faults; before,
 * every such invalidation restarted them.
 */
TEST_F_TIMEOUT(mmlock, fault_restarts_only_for_its_own_page, 120)
{
	size_t len = xt_fault_window(self->fd), mid;
	struct edge_shared *sh = map_shared(sizeof(*sh));
	struct fault_stats a, b;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	unsigned long d0, d1;
	int round, bad = 0;
	struct chan ch;
	char *obuf, *at;
	void *va;
	pid_t pid;

	ASSERT_NE(NULL, sh);
	if (len > EDGE_MAX_PAGES * PAGE)
		len = EDGE_MAX_PAGES * PAGE;
	if (len < 4 * EDGE_PIECE * PAGE)
		SKIP(return, "fault windows of %zu pages", len / PAGE);
	mid = len / PAGE - 2 * EDGE_PIECE;
	ASSERT_EQ(0, chan_init(&ch));
	pid = kids_fork(&self->kids);
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		chan_child(&ch);
		_exit(edge_owner(sh, &ch, len));
	}
	chan_parent(&ch);
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &segid, sizeof(segid)));
	ASSERT_EQ(0, recv_msg(ch.to_parent[0], &obuf, sizeof(obuf)));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDONLY, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, whole_off(obuf), len, NULL,
			       &va));
	at = va;
	fault_stats_read(&a);
	d0 = __atomic_load_n(&sh->discards, __ATOMIC_RELAXED);
	for (round = 0; round < EDGE_ROUNDS; round++) {
		size_t p = EDGE_PIECE + (size_t)round * 7 % mid;

		ASSERT_EQ(0, madvise(at, len, MADV_DONTNEED));
		if (*(volatile uint64_t *)(at + p * PAGE) != 7000 + p)
			bad++;
	}
	d1 = __atomic_load_n(&sh->discards, __ATOMIC_RELAXED);
	fault_stats_read(&b);
	ASSERT_EQ(0, munmap(va, len));
	ASSERT_EQ(0, xp_release(self->fd, apid));
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, wait_child(pid));
	TH_LOG("%d rounds over %zu pages: faults %ld, fault_seq_retries %ld, fault_retries %ld; owner discards %lu",
	       EDGE_ROUNDS, len / PAGE, b.faults - a.faults,
	       b.seq_retries - a.seq_retries, b.retries - a.retries, d1 - d0);
	EXPECT_EQ(0, bad);
	ASSERT_LE(EDGE_ROUNDS, b.faults - a.faults);
	/* the owner ran beside the faults: the race was there to lose */
	ASSERT_LE(EDGE_ROUNDS, d1 - d0);
	ASSERT_GE(b.faults - a.faults, 20 * (b.seq_retries - a.seq_retries));
	ASSERT_COUNTERS_AT_BASE();
	munmap(sh, sizeof(*sh));
}

/* ---- OOM reaper ------------------------------------------------------- */

#define MRELEASE_ROUNDS	20
#define MRELEASE_BYTES	(32UL << 20)

/*
 * SIGKILL (pidfd_send_signal) a child that exported its whole address
 * space and touched MRELEASE_BYTES, then process_mrelease() it at once,
 * MRELEASE_ROUNDS times.  @detached: the child also attached part of its
 * own memory and unmapped that attachment again.
 */
static void mrelease_rounds(struct __test_metadata *_metadata,
			    FIXTURE_DATA(mmlock) *self, bool detached)
{
	int reaped = 0, esrch = 0, eagain = 0, other = 0, round;

	if (syscall(SYS_process_mrelease, -1, 0) < 0 && errno == ENOSYS)
		SKIP(return, "process_mrelease: ENOSYS (the kernel predates 5.15)");
	for (round = 0; round < MRELEASE_ROUNDS; round++) {
		int pidfd, err;
		struct chan ch;
		pid_t pid;
		char m;
		long r;

		ASSERT_EQ(0, chan_init(&ch));
		pid = kids_fork(&self->kids);
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			xpmem_segid_t segid;
			xpmem_apid_t apid;
			char *mem;
			void *va;
			int fd;

			chan_child(&ch);
			/* 4 KiB pages, populated by the kernel: slow to tear down */
			mem = mmap(NULL, MRELEASE_BYTES, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (mem == MAP_FAILED ||
			    madvise(mem, MRELEASE_BYTES, MADV_NOHUGEPAGE) ||
			    populate_write(mem, MRELEASE_BYTES))
				_exit(1);
			memset(mem, 1, 16 * PAGE);
			fd = xp_open();
			if (fd < 0 || make_whole(fd, 0600, &segid))
				_exit(2);
			if (detached) {
				if (xp_get(fd, segid, XPMEM_RDWR, &apid) ||
				    xp_attach(fd, apid, whole_off(mem),
					      16 * PAGE, NULL, &va))
					_exit(3);
				if (all_bytes(va, 16 * PAGE, 1) ||
				    munmap(va, 16 * PAGE))
					_exit(4);
			}
			send_msg(ch.to_parent[1], "r", 1);
			recv_msg(ch.to_child[0], &m, 1);	/* never */
			_exit(5);
		}
		chan_parent(&ch);
		ASSERT_EQ(0, recv_msg(ch.to_parent[0], &m, 1));
		pidfd = syscall(SYS_pidfd_open, pid, 0);
		ASSERT_GE(pidfd, 0);
		ASSERT_EQ(0, syscall(SYS_pidfd_send_signal, pidfd, SIGKILL,
				     NULL, 0));
		r = syscall(SYS_process_mrelease, pidfd, 0);
		err = r ? errno : 0;
		ASSERT_EQ(128 + SIGKILL, wait_child(pid));
		close(pidfd);
		close(ch.to_child[1]);
		close(ch.to_parent[0]);
		if (err == ENOSYS)
			SKIP(return, "process_mrelease: ENOSYS");
		if (!err)
			reaped++;
		else if (err == ESRCH)
			esrch++;
		else if (err == EAGAIN)
			eagain++;
		else
			other++;
	}
	TH_LOG("process_mrelease: %d reaped, %d ESRCH, %d EAGAIN, %d other",
	       reaped, esrch, eagain, other);
	ASSERT_EQ(0, eagain);
	ASSERT_EQ(0, other);
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * The invalidate callback refused every non-blockable range, so
 * the OOM reaper (and process_mrelease) could not reap any owner of a
 * whole-address-space segment: EAGAIN.  Nothing is attached here.
 */
TEST_F_TIMEOUT(mmlock, mrelease_whole_space_owner_never_eagain, 180)
{
	mrelease_rounds(_metadata, self, false);
}

/*
 * The same with an attachment of the owner's memory that is not
 * mapped any more (it no longer needs a zap).
 */
TEST_F_TIMEOUT(mmlock, mrelease_after_detach_never_eagain, 180)
{
	mrelease_rounds(_metadata, self, true);
}

#define ENDED_ROUNDS	8
#define ENDED_PAGES	16

/*
 * An attachment whose last mapping is gone has ended, though its notifier
 * is removed up to a tick later: the owner's invalidations in between find
 * nothing to do and take none of its locks - otherwise an exiting owner's
 * own unmapping, holding one, made the OOM reaper and process_mrelease()
 * fail with EAGAIN (mrelease_after_detach_never_eagain, now and then).
 * Seen here as the invalidation count, which a callback that does any work
 * raises: in ENDED_ROUNDS rounds of attach, touch, munmap and at once
 * MADV_DONTNEED of the owner's pages, none may be counted.
 */
TEST_F(mmlock, invalidation_after_detach_finds_nothing)
{
	long counted = 0, base;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *mem;
	int round;
	void *va;

	if (stat_read("invalidations") < 0)
		SKIP(return, "no statistics (sysfs of the module unreadable)");
	mem = mmap(NULL, ENDED_PAGES * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_EQ(0, xp_make(self->fd, mem, ENDED_PAGES * PAGE, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	for (round = 0; round < ENDED_ROUNDS; round++) {
		memset(mem, round + 1, ENDED_PAGES * PAGE);
		ASSERT_EQ(0, xp_attach(self->fd, apid, 0, ENDED_PAGES * PAGE,
				       NULL, &va));
		ASSERT_EQ(0, all_bytes(va, ENDED_PAGES * PAGE, round + 1));
		/* the release runs before munmap returns (its task work) */
		ASSERT_EQ(0, munmap(va, ENDED_PAGES * PAGE));
		base = stat_read("invalidations");
		ASSERT_EQ(0, madvise(mem, ENDED_PAGES * PAGE, MADV_DONTNEED));
		counted += stat_read("invalidations") - base;
	}
	TH_LOG("%ld of %d invalidations after a detach reached an attachment",
	       counted, ENDED_ROUNDS);
	ASSERT_EQ(0, counted);
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_EQ(0, munmap(mem, ENDED_PAGES * PAGE));
	ASSERT_COUNTERS_AT_BASE();
}

#define QUIET_ATTACHES	16

/*
 * With no invalidation of the owner in flight, a new attachment's faults
 * have nothing to wait for: it is settled at ATTACH, without a worker
 * (counter settle_works).  Each window is then read, to check that it
 * maps the owner's bytes.  A change of this process's mappings by the
 * kernel itself (khugepaged, NUMA balancing) may overlap an ATTACH now
 * and then and is allowed twice.
 */
TEST_F(mmlock, attach_with_owner_quiet_settles_at_once)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	long base, works;
	char *mem;
	void *va;
	int i;

	if (stat_read("settle_works") < 0)
		SKIP(return, "no settle_works counter (sysfs unreadable)");
	mem = mmap(NULL, QUIET_ATTACHES * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	for (i = 0; i < QUIET_ATTACHES; i++)
		memset(mem + i * PAGE, i + 1, PAGE);
	ASSERT_EQ(0, xp_make(self->fd, mem, QUIET_ATTACHES * PAGE, 0600,
			     &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	base = stat_read("settle_works");
	for (i = 0; i < QUIET_ATTACHES; i++) {
		ASSERT_EQ(0, xp_attach(self->fd, apid, i * PAGE, PAGE, NULL,
				       &va));
		ASSERT_EQ(0, all_bytes(va, PAGE, i + 1));
		ASSERT_EQ(0, munmap(va, PAGE));
	}
	works = stat_read("settle_works") - base;
	TH_LOG("%ld of %d attachments settled in a worker", works,
	       QUIET_ATTACHES);
	ASSERT_LE(works, 2);
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_EQ(0, munmap(mem, QUIET_ATTACHES * PAGE));
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * The fault path counts sequence retries
 * (an invalidation raced with the fault) apart from lock retries.  Values
 * are not checked, only that the counters are there.
 */
TEST_F(mmlock, stats_count_fault_seq_retries)
{
	ASSERT_LE(0, stat_read("fault_retries"));
	ASSERT_LE(0, stat_read("fault_seq_retries"));
	ASSERT_LE(0, stat_read("fault_owner_waits"));
	ASSERT_LE(0, stat_read("mkwrite_fast"));
}

TEST_HARNESS_MAIN
