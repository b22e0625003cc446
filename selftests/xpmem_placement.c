// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_placement.c - where an attachment may lie
 *
 * An attachment must never lie over the owner range it mirrors: its own
 * split or move would invalidate it while the core holds the lock its
 * zap needs, and the process would hang for good (unkillable, rmmod
 * impossible).  Every path that places a mapping is checked: ATTACH with
 * and without a fixed address, mremap() of a whole attachment or of a
 * piece; and splits of attachments that two processes mirror of each
 * other go on concurrently without waiting for each other.
 */
#define _GNU_SOURCE
#include <poll.h>

#include "kselftest_harness.h"
#include "xpmem_test.h"

/* A window big enough that a split in its middle splits a PMD range. */
#define WIN		(8UL << 20)

static int overlaps(const void *a, size_t alen, const void *b, size_t blen)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y + blen && y < x + alen;
}

FIXTURE(placement)
{
	int fd;
	long segs, permits, atts;
};

FIXTURE_SETUP(placement)
{
	XP_FIXTURE_OPEN();
}

FIXTURE_TEARDOWN(placement)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * The review's deadlock: attach a window of one's own whole address space
 * anywhere, detach, and attach again at the segment offset of the address
 * it got: the kernel's choice is that same hole, i.e. the attachment's own
 * source.  It must land elsewhere; reading it is SIGBUS (no owner memory
 * there), and munmap() of one page in its middle (a split with page
 * tables present) returns.
 */
TEST_F(placement, non_fixed_self_attach_lands_off_source)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	void *va, *va2;

	ASSERT_EQ(0, make_whole(self->fd, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, PAGE, WIN, NULL, &va));
	ASSERT_EQ(0, xp_detach(self->fd, va));

	ASSERT_EQ(0, xp_attach(self->fd, apid, whole_off(va), WIN, NULL,
			       &va2));
	ASSERT_FALSE(overlaps(va2, WIN, va, WIN)) {
		TH_LOG("attachment at %p mirrors itself (source %p)", va2, va);
	}
	/* what it mirrors is unmapped in the owner */
	ASSERT_EQ(SIGBUS, probe((char *)va2 + WIN / 2, 0, 0));
	ASSERT_EQ(0, munmap((char *)va2 + WIN / 2 + PAGE, PAGE));
	ASSERT_EQ(0, xp_detach(self->fd, va2));

	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * The same with the whole address below the window taken, so that the
 * only hole the kernel would choose is the source: still elsewhere, or
 * ENOMEM, never over it.  Here: a source window made of a freed hole right
 * below a mapped guard, attached repeatedly.
 */
TEST_F(placement, non_fixed_self_attach_repeated)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	void *src, *va;
	int i;

	ASSERT_EQ(0, make_whole(self->fd, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	for (i = 0; i < 16; i++) {
		src = mmap(NULL, WIN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
		ASSERT_NE(MAP_FAILED, src);
		ASSERT_EQ(0, munmap(src, WIN));
		ASSERT_EQ(0, xp_attach(self->fd, apid, whole_off(src), WIN,
				       NULL, &va));
		ASSERT_FALSE(overlaps(va, WIN, src, WIN));
		ASSERT_EQ(0, munmap((char *)va + WIN / 2 + PAGE, PAGE));
		ASSERT_EQ(0, xp_detach(self->fd, va));
	}
	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
}

/*
 * mremap(MREMAP_FIXED) of an attachment onto its own source is refused
 * (EINVAL), whole or a piece of it; the attachment stays where it was and
 * still mirrors (the source that mremap unmapped first now reads as
 * SIGBUS), and splitting it afterwards returns.
 */
TEST_F(placement, mremap_onto_own_source_refused)
{
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	char *src, *va, *to;

	src = map_anon(WIN);
	ASSERT_NE(NULL, src);
	memset(src, 's', WIN);
	ASSERT_EQ(0, make_whole(self->fd, 0600, &segid));
	ASSERT_EQ(0, xp_get(self->fd, segid, XPMEM_RDWR, &apid));
	ASSERT_EQ(0, xp_attach(self->fd, apid, whole_off(src), WIN, NULL,
			       (void **)&va));
	ASSERT_FALSE(overlaps(va, WIN, src, WIN));
	ASSERT_EQ(0, all_bytes(va, WIN, 's'));

	/* a piece onto the part of the source it mirrors */
	to = mremap(va + WIN / 2, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		    src + WIN / 2);
	ASSERT_EQ(MAP_FAILED, to);
	ASSERT_EQ(EINVAL, errno);
	/* the whole attachment onto the whole source */
	to = mremap(va, WIN, WIN, MREMAP_MAYMOVE | MREMAP_FIXED, src);
	ASSERT_EQ(MAP_FAILED, to);
	ASSERT_EQ(EINVAL, errno);
	/*
	 * shifted by a page, still over its own source (and inside src:
	 * MREMAP_FIXED unmaps its destination first)
	 */
	to = mremap(va, WIN - PAGE, WIN - PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		    src + PAGE);
	ASSERT_EQ(MAP_FAILED, to);
	ASSERT_EQ(EINVAL, errno);

	/* still the attachment, still mirroring: the source is gone */
	ASSERT_EQ(SIGBUS, probe(va + PAGE, 0, 0));
	ASSERT_EQ(0, munmap(va + WIN / 2 + PAGE, PAGE));
	/* moving it elsewhere is fine */
	to = mremap(va, WIN / 2, WIN / 2, MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, to);
	/* DETACH unmaps every piece of it, moved ones too */
	ASSERT_EQ(0, xp_detach(self->fd, to));
	ASSERT_EQ(SIGSEGV, probe(va + WIN / 2 + 2 * PAGE, 0, 0));

	ASSERT_EQ(0, xp_release(self->fd, apid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(src, WIN);
}

/*
 * An attachment of another process's segment may be mremapped anywhere,
 * including over memory of its own process: only the owner's own source
 * range is forbidden.
 */
TEST_F(placement, mremap_of_foreign_attachment_allowed)
{
	xpmem_segid_t segid;
	char *src, *va, *to, *dst;
	pid_t pid;

	src = map_anon(WIN);
	ASSERT_NE(NULL, src);
	memset(src, 'f', WIN);
	ASSERT_EQ(0, xp_make(self->fd, src, WIN, 0600, &segid));
	pid = fork_child();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = xp_open();
		xpmem_apid_t apid;
		int ok;

		dst = map_anon(WIN);
		ok = fd >= 0 && dst &&
		     !xp_get(fd, segid, XPMEM_RDWR, &apid) &&
		     !xp_attach(fd, apid, 0, WIN, NULL, (void **)&va);
		if (ok) {
			to = mremap(va, WIN, WIN,
				    MREMAP_MAYMOVE | MREMAP_FIXED, dst);
			ok = to == dst && !all_bytes(dst, WIN, 'f') &&
			     !munmap(dst + WIN / 2 + PAGE, PAGE);
		}
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(0, xp_remove(self->fd, segid));
	ASSERT_COUNTERS_AT_BASE();
	munmap(src, WIN);
}

/*
 * Two processes each attach a window of the other at a fixed address over
 * their own reserved range R, so that each attachment mirrors the other's
 * attachment VMA (a cycle), then split their attachments at the same
 * time.  Each split invalidates the range the other's attachment mirrors,
 * with the split attachment's own i_mmap_rwsem held.  Before the fix the
 * callback waited for a zap of the other attachment, which needed the
 * lock the other split held: both hung for good.  Neither may wait: no
 * attachment has a PTE for an attachment VMA.  A hang shows as the
 * suite's timeout and the hung-task report.
 */
struct cyc_msg {
	xpmem_segid_t segid;
	uint64_t r;
};

static int cycle_rounds(int fd, struct chan *c, int rounds)
{
	struct cyc_msg me, peer;
	xpmem_apid_t apid;
	char *r;
	int i;

	r = mmap(NULL, WIN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return 1;
	me.r = (uintptr_t)r;
	if (make_whole(fd, 0600, &me.segid) ||
	    send_msg(c->to_parent[1], &me, sizeof(me)) ||
	    recv_msg(c->to_child[0], &peer, sizeof(peer)) ||
	    xp_get(fd, peer.segid, XPMEM_RDWR, &apid))
		return 2;
	for (i = 0; i < rounds; i++) {
		void *va;

		if (xp_attach(fd, apid, whole_off((void *)(uintptr_t)peer.r),
			      WIN, r, &va) || va != r)
			return 3;
		/* the other's attachment VMA: never mirrored */
		if (probe(r + WIN / 2, 0, 0) != SIGBUS)
			return 4;
		if (munmap(r + WIN / 2 + (i % 8 + 1) * PAGE, PAGE))
			return 5;
		if (xp_detach(fd, r))
			return 6;
	}
	/* the peer may still attach our segment: stay until told */
	if (send_msg(c->to_parent[1], &me, sizeof(me)) ||
	    recv_msg(c->to_child[0], &peer, sizeof(peer)))
		return 7;
	return 0;
}

TEST_F(placement, attachment_cycle_splits_do_not_wait)
{
	struct cyc_msg m[2];
	struct chan c[2];
	pid_t pid[2];
	int i;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, chan_init(&c[i]));
		pid[i] = fork_child();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0) {
			int fd = xp_open();

			chan_child(&c[i]);
			_exit(fd < 0 ? 10 : cycle_rounds(fd, &c[i], 128));
		}
		chan_parent(&c[i]);
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, recv_msg(c[i].to_parent[0], &m[i], sizeof(m[i])));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, send_msg(c[i].to_child[1], &m[!i],
				      sizeof(m[!i])));
	/* both done with their rounds (or failed), then both may go */
	for (i = 0; i < 2; i++)
		recv_msg(c[i].to_parent[0], &m[i], sizeof(m[i]));
	for (i = 0; i < 2; i++)
		send_msg(c[i].to_child[1], &m[i], sizeof(m[i]));
	ASSERT_EQ(0, wait_child(pid[0]));
	ASSERT_EQ(0, wait_child(pid[1]));
	ASSERT_COUNTERS_AT_BASE();
}

TEST_HARNESS_MAIN
