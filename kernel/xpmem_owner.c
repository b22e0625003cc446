// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_owner.c - the owner's record: one per owner mm, shared by its
 * segments and their attachments.  It lists the owner's invalidations
 * that reached an attachment until their end (a plain mmu_notifier of the
 * owner's mm), carries the zaps its interval callbacks list to the
 * owner's invalidate_range_start, lets faults wait - killably - for the
 * listed invalidations that overlap their window, and holds the owner's
 * sentinel, which lets new attachments settle at once.  The interval
 * callback of the attachments, and what they mirror, is xpmem_mirror.c,
 * the only user of this file besides MAKE's registration (xpmem_main.c)
 * and ATTACH (xpmem_attach.c).
 */
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>

#include "xpmem_internal.h"
#include "compat.h"

/* The removal of owners' sentinels, after the core freed their record. */
static struct workqueue_struct *xpmem_owner_free_wq;
/*
 * Records the core made (alloc_notifier) and our free work has not yet
 * freed.  mmu_notifier_synchronize() waits for an SRCU grace period, not
 * for the callbacks that grace period readies on other CPUs, so module
 * exit also waits for this to reach 0 (xpmem_owner_exit()).
 */
static atomic_t xpmem_owner_live = ATOMIC_INIT(0);

/*
 * The owner's notifier record, one per owner mm, shared by its segments.
 * mmu_interval_read_begin() sleeps, uninterruptibly, until no invalidation
 * of the owner's mm is in progress at all, if one touched the mirror since
 * its last call; an owner whose threads invalidate in a loop (16 threads
 * of MADV_DONTNEED) keeps that from ever happening, and the faulting
 * attacher stayed in D state through SIGKILL.  So a fault keeps its own
 * record instead: every invalidation that reaches a mirror of the owner is
 * listed by the callback, before it marks the faults in progress, until
 * the owner's invalidate_range_end, which a plain mmu_notifier of the
 * owner's mm (one per owner, shared through mmu_notifier_get()) reports.
 * A fault lists its window first, then waits - killably - only for the
 * listed invalidations that overlap it: one that was listed later marks
 * the window and the fault starts over.  The callback takes an entry for
 * an invalidation from the XPMEM_OWNER_SPARES the record keeps (no
 * allocation: one per owner thread invalidating at the same time), and
 * only beyond those allocates one (GFP_NOWAIT).  If that fails too, the
 * record is lost: faults of that owner go back to
 * mmu_interval_read_begin(), which is always correct but waits
 * uninterruptibly.
 */
#define XPMEM_OWNER_SPARES	16

/* One invalidation of the owner in flight, from a callback to its end. */
struct xpmem_owner_inval {
	struct list_head node;
	const struct mmu_notifier_range *range;	/* identifies it at its end */
	unsigned long start;
	unsigned long end;
	struct list_head zaps;		/* struct xpmem_zap, until its start */
};

struct xpmem_owner_notifier {
	struct mmu_notifier mn;
	spinlock_t lock;		/* inflight, nr, taking a spare */
	struct list_head inflight;	/* struct xpmem_owner_inval */
	unsigned int nr;		/* on inflight */
	bool lost;			/* a record failed: use the core's */
	/* entries for invalidations, and which are taken (atomic bitops) */
	unsigned long spares_used;
	struct xpmem_owner_inval spares[XPMEM_OWNER_SPARES];
	/*
	 * The sentinel is inserted (so the mm's interval tree is enabled):
	 * set once, with release, by xpmem_owner_prepare()
	 */
	bool itree;
	atomic_t sentinel_claim;	/* 1: an insertion is being tried */
	/*
	 * An interval notifier over the whole address space, whose callback
	 * does nothing: see xpmem_owner_quiet().  Removed, and the record
	 * freed, by @free_work once the core frees the record.
	 */
	struct mmu_interval_notifier sentinel;
	struct work_struct free_work;
	wait_queue_head_t wq;		/* faults waiting for an end */
};

/*
 * An entry for an invalidation: a spare of the record, or else a new one
 * (GFP_NOWAIT: the callback may run in reclaim, under the owner's
 * mmap_lock, an i_mmap_rwsem or folio locks, so it may not sleep or
 * reclaim).  Under notif->lock, a leaf spinlock: waits for nothing else.
 * The spares were allocated with the record at the owner's MAKE and
 * charged to the owner; a new entry is allocated in the invalidating
 * task, which is the owner's or acts on the owner's memory, and lives
 * only until that invalidation ends.  Return: the entry, or NULL.
 */
static struct xpmem_owner_inval *
xpmem_owner_inval_get(struct xpmem_owner_notifier *notif)
{
	unsigned int i = find_first_zero_bit(&notif->spares_used,
					     XPMEM_OWNER_SPARES);

	lockdep_assert_held(&notif->lock);
	/* only takers hold the lock: the bit is still clear */
	if (i < XPMEM_OWNER_SPARES &&
	    !WARN_ON_ONCE(test_and_set_bit_lock(i, &notif->spares_used)))
		return &notif->spares[i];
	return kmalloc(sizeof(struct xpmem_owner_inval),
		       GFP_NOWAIT | __GFP_NOWARN);
}

/*
 * Give back an entry that is on no list any more, from the owner's
 * invalidate_range_end (or the record's free); takes no lock, waits for
 * nothing.  A spare is released (clear_bit_unlock()): what its last user
 * read of it is done before the next taker writes it.
 */
static void xpmem_owner_inval_put(struct xpmem_owner_notifier *notif,
				  struct xpmem_owner_inval *f)
{
	if (f >= notif->spares && f < notif->spares + XPMEM_OWNER_SPARES)
		clear_bit_unlock(f - notif->spares, &notif->spares_used);
	else
		kfree(f);
}

static struct mmu_notifier *xpmem_owner_alloc(struct mm_struct *mm)
{
	struct xpmem_owner_notifier *notif = kzalloc(sizeof(*notif),
						     GFP_KERNEL_ACCOUNT);

	if (!notif)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&notif->lock);
	INIT_LIST_HEAD(&notif->inflight);
	init_waitqueue_head(&notif->wq);
	atomic_inc(&xpmem_owner_live);
	return &notif->mn;
}

static void xpmem_owner_release(struct xpmem_owner_notifier *notif)
{
	struct xpmem_owner_inval *f, *tmp;

	list_for_each_entry_safe(f, tmp, &notif->inflight, node) {
		WARN_ON_ONCE(!list_empty(&f->zaps));
		xpmem_owner_inval_put(notif, f);
	}
	kfree(notif);
}

/*
 * The end of an owner's record: remove its sentinel, if inserted, then free.
 *
 * May wait for: the owner's invalidations in flight, uninterruptibly, if
 * the removal is deferred (mmu_interval_notifier_remove()) - in a kworker,
 * which nothing waits for but module exit, when no owner is left to
 * prolong it.  The core never calls it, so it holds no lock that wait
 * could need.  It owns the record: the core handed it over
 * (xpmem_owner_free()) after its last put and an SRCU grace
 * period, and only the sentinel's callback, which touches nothing, may
 * still run until the removal returns.  It maps nothing, reads no owner
 * memory and allocates nothing; the record it frees was charged to the
 * owner who made it.  No task's exit, unmap or close waits for it.
 */
static void xpmem_owner_free_work(struct work_struct *work)
{
	struct xpmem_owner_notifier *notif =
		container_of(work, struct xpmem_owner_notifier, free_work);

	if (READ_ONCE(notif->itree))
		mmu_interval_notifier_remove(&notif->sentinel);
	xpmem_owner_release(notif);
	/* the last thing: module exit may go on once it reads 0 */
	if (atomic_dec_and_test(&xpmem_owner_live))
		wake_up_var(&xpmem_owner_live);
}

/*
 * The core's free_notifier, from an SRCU callback after the record's last
 * put (or from a failed mmu_notifier_get(), in MAKE or ATTACH): hands the
 * record to a work that owns it from here, and does nothing after
 * queueing it, so that no code of the module runs in the SRCU callback
 * once the work can have run (module exit waits for the work:
 * xpmem_owner_exit()).
 *
 * May wait for: nothing - it takes no lock and allocates nothing (the work
 * is part of the record), so whatever the core holds around an SRCU
 * callback cannot matter.  Nothing of an owner or another user can
 * prolong it, and no task's exit, unmap or close waits for it.  It maps
 * nothing and touches no owner memory: placement and revocation do not
 * arise.  The work it queues owns the record, which nothing else reaches
 * any more (its last put was made and the grace period has passed), and
 * the module stays until the work has run.
 */
static void xpmem_owner_free(struct mmu_notifier *mn)
{
	struct xpmem_owner_notifier *notif =
		container_of(mn, struct xpmem_owner_notifier, mn);

	INIT_WORK(&notif->free_work, xpmem_owner_free_work);
	queue_work(xpmem_owner_free_wq, &notif->free_work);
}

/*
 * The sentinel's callback: being in the owner's interval tree is all a
 * sentinel does.  Called by the core with whatever the invalidating task
 * holds (the owner's mmap_lock, an i_mmap_rwsem, folio locks), also for
 * non-blockable ranges: it waits for nothing, takes no lock, allocates
 * nothing and touches nothing but its argument, which the record keeps
 * until its removal returns.  It maps nothing and reads no owner memory,
 * so no attachment can map its own source through it and revocation does
 * not arise; no owner or other user can make anyone sleep through it.
 */
static bool
xpmem_owner_sentinel_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range,
				unsigned long cur_seq)
{
	return true;
}

static const struct mmu_interval_notifier_ops xpmem_owner_sentinel_ops = {
	.invalidate = xpmem_owner_sentinel_invalidate,
};

/*
 * Is @mni in its mm's interval tree (not waiting on the deferred list)?
 * The core clears the node at insertion and links it under the
 * subscriptions' lock, directly or at the end of the invalidations that
 * deferred it; once linked, it stays until removed.
 */
bool xpmem_owner_linked(struct mmu_interval_notifier *mni)
{
	struct rb_node *node = &mni->interval_tree.rb;

	/*
	 * Acquire: what the invalidations that deferred it did before their
	 * end linked it is seen after this
	 */
	return smp_load_acquire(&node->__rb_parent_color) !=
	       (unsigned long)node;
}

/*
 * The start of any invalidation of the owner's mm, after the interval
 * callbacks of the same invalidation: do the zaps they listed, in one
 * round trip to the zap worker.
 *
 * Called by the core with whatever the invalidating task holds: the
 * owner's mmap_lock, folio locks, the i_mmap_rwsem of a file whose folios
 * it unmaps or of an attachment whose VMA it splits or moves.  May wait
 * for: owner_notifier->lock (a leaf spinlock); the zap worker, which needs only
 * the listed attachments' i_mmap_rwsem and the attachers' page table locks -
 * and a zap is listed only where its attachment may have a PTE, never
 * over an attachment VMA, so never for an i_mmap_rwsem the core holds
 * (see "Zapping" in xpmem_zap.c: the same grounds on which the callbacks
 * zapped themselves before); then att->lock of each zapped attachment,
 * held by others only briefly and never across a wait.  It never waits
 * for a fault, a copy or anything an attacher holds, so the owner cannot
 * make an attacher sleep uninterruptibly here.  It only removes PTEs:
 * it places no mapping, so it cannot make an attachment map its own
 * source.  Revocation is not its concern: it neither maps nor reads owner
 * memory (faults check att->dead under att->lock, copies the revocation
 * barrier).  Zaps are listed only for blockable ranges, so a
 * non-blockable start finds nothing.
 */
static int xpmem_owner_start(struct mmu_notifier *mn,
			     const struct mmu_notifier_range *range)
{
	struct xpmem_owner_notifier *notif =
		container_of(mn, struct xpmem_owner_notifier, mn);
	struct xpmem_owner_inval *f;
	LIST_HEAD(zaps);

	/* listed, if at all, by this same task before: no race */
	if (!READ_ONCE(notif->nr))
		return 0;
	spin_lock(&notif->lock);
	list_for_each_entry(f, &notif->inflight, node) {
		if (f->range == range) {
			list_splice_init(&f->zaps, &zaps);
			break;
		}
	}
	spin_unlock(&notif->lock);
	if (list_empty(&zaps))
		return 0;
	if (WARN_ON_ONCE(!mmu_notifier_range_blockable(range)))
		return 0;	/* never listed so: a bug, and no zap possible */
	xpmem_zap_run(&zaps);
	xpmem_zap_list_done(&zaps);
	return 0;
}

/*
 * The end of any invalidation of the owner's mm.  Called with whatever
 * the invalidating task holds; takes owner_notifier->lock only (a leaf) and
 * waits for nothing: its start has done the listed zaps.
 */
static void xpmem_owner_end(struct mmu_notifier *mn,
			    const struct mmu_notifier_range *range)
{
	struct xpmem_owner_notifier *notif =
		container_of(mn, struct xpmem_owner_notifier, mn);
	struct xpmem_owner_inval *f, *found = NULL;

	/* listed, if at all, by this same task before: no race */
	if (!READ_ONCE(notif->nr))
		return;
	spin_lock(&notif->lock);
	list_for_each_entry(f, &notif->inflight, node) {
		if (f->range == range) {
			list_del(&f->node);
			notif->nr--;
			found = f;
			break;
		}
	}
	spin_unlock(&notif->lock);
	if (!found)
		return;
	/* its start did them, unless the core skipped it: a bug */
	if (WARN_ON_ONCE(!list_empty(&found->zaps))) {
		xpmem_zap_run(&found->zaps);
		xpmem_zap_list_done(&found->zaps);
	}
	xpmem_owner_inval_put(notif, found);
	wake_up_all(&notif->wq);
}

static const struct mmu_notifier_ops xpmem_owner_ops = {
	.invalidate_range_start = xpmem_owner_start,
	.invalidate_range_end = xpmem_owner_end,
	.alloc_notifier = xpmem_owner_alloc,
	.free_notifier = xpmem_owner_free,
};

/* The segment's hold of the owner's record, registering it if need be. */
static struct xpmem_owner_ref *xpmem_owner_of_seg(struct xpmem_seg *seg,
						  struct mm_struct *mm)
{
	/* pairs with the cmpxchg_release() that publishes it below */
	struct xpmem_owner_ref *r = smp_load_acquire(&seg->owner_ref);
	struct mmu_notifier *mn;

	if (r)
		return r;
	r = kmalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return ERR_PTR(-ENOMEM);
	mn = mmu_notifier_get(&xpmem_owner_ops, mm);
	if (IS_ERR(mn)) {
		kfree(r);
		return ERR_CAST(mn);
	}
	r->mn = mn;
	refcount_set(&r->ref, 1);	/* the segment's */
	if (cmpxchg_release(&seg->owner_ref, NULL, r)) {
		xpmem_seg_owner_ref_put(r);	/* another ATTACH was first */
		r = smp_load_acquire(&seg->owner_ref);
	}
	return r;
}

/**
 * xpmem_owner_prepare - register the owner's notifiers at its MAKE
 * @seg: a segment the current process just made (@seg->mm is current's)
 *
 * The first plain notifier of an mm and the first interval notifier each
 * make the core take every lock of the mm (mm_take_all_locks(): a walk of
 * all its VMAs).  Done here, in the owner's own MAKE and once per open of
 * /dev/xpmem (the caller keeps the returned reference until the file's
 * release), so that no ATTACH pays it, however many mappings the owner
 * has; the first interval notifier is the owner's sentinel, which lets
 * later ATTACHes settle at once (xpmem_owner_quiet()).  Every signal but
 * SIGKILL and SIGSTOP is blocked meanwhile, as in ATTACH (xpmem_attach.c
 * says why).  Best effort: on failure ATTACH registers the notifiers as
 * before, and its attachments settle in the settle work.
 *
 * Context: the MAKE ioctl only, in the owner's own process, holding no
 * lock; never called by the core, so no notifier section, i_mmap_rwsem or
 * folio lock is held around it.  It waits for the owner's own mmap_lock
 * (for writing) and, in the core's registration, for every i_mmap_rwsem
 * and anon_vma lock of the owner's VMAs: locks of the owner's own memory,
 * held by others only for bounded core work (an attacher's fault holds the
 * owner's mmap_lock for reading only around hmm_range_fault(), never while
 * a userfaultfd handler runs).  SIGKILL ends the registration (-EINTR).
 * It maps nothing and reads no owner memory, so placement and revocation
 * do not arise; no work is queued.  Its allocations (the record and the
 * owner notifier) are GFP_KERNEL_ACCOUNT, charged to the owner, who makes
 * them; the core's subscriptions allocation is the core's.  The returned
 * reference is dropped by the file's release without waiting
 * (mmu_notifier_put() frees after an SRCU grace period, and a work
 * removes the sentinel: xpmem_owner_free_work()).
 *
 * Return: a reference on the owner's record, or NULL.
 */
struct xpmem_owner_ref *xpmem_owner_prepare(struct xpmem_seg *seg)
{
	struct xpmem_owner_notifier *notif;
	struct xpmem_owner_ref *r;
	sigset_t all, old;

	siginitsetinv(&all, sigmask(SIGKILL) | sigmask(SIGSTOP));
	sigprocmask(SIG_BLOCK, &all, &old);
	r = xpmem_owner_of_seg(seg, seg->mm);
	if (IS_ERR(r)) {
		r = NULL;
		goto out;
	}
	refcount_inc(&r->ref);	/* the caller's */
	notif = container_of(r->mn, struct xpmem_owner_notifier, mn);
	/*
	 * The sentinel; its insertion enables the mm's interval tree, as the
	 * first ATTACH would.  One thread tries at a time; on failure a later
	 * MAKE tries again.
	 */
	if (!READ_ONCE(notif->itree) &&
	    !atomic_cmpxchg(&notif->sentinel_claim, 0, 1)) {
		if (!mmu_interval_notifier_insert(&notif->sentinel, seg->mm, 0,
						  ULONG_MAX,
						  &xpmem_owner_sentinel_ops))
			/* pairs with xpmem_owner_ready() */
			smp_store_release(&notif->itree, true);
		else
			atomic_set(&notif->sentinel_claim, 0);
	}
out:
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

/**
 * xpmem_owner_ready - will an ATTACH of @seg register nothing?
 * @seg: a segment
 *
 * True once @seg has the owner's record and the owner's mm has interval
 * notifiers enabled (xpmem_owner_prepare() at MAKE): then neither
 * xpmem_owner_get() nor mmu_interval_notifier_insert() registers a
 * notifier, the only part of them that takes the owner's locks or gives
 * up at a signal (-EINTR).  Neither is ever undone while the mm lives.
 */
bool xpmem_owner_ready(struct xpmem_seg *seg)
{
	/* pairs with the cmpxchg_release() in xpmem_owner_of_seg() */
	struct xpmem_owner_ref *r = smp_load_acquire(&seg->owner_ref);

	/* and the mm's registration is seen with the flag */
	return r && smp_load_acquire(&container_of(r->mn,
						   struct xpmem_owner_notifier,
						   mn)->itree);
}

/**
 * xpmem_owner_get - the owner's record of invalidations, for @att
 * @att: a new attachment, before its notifiers are inserted
 * @mm: the owner's mm (with a user reference)
 *
 * The first ATTACH of a segment registers it (mmu_notifier_get(): the
 * owner's mmap_lock for writing, and the core takes all the owner's locks
 * when the mm gets its first plain notifier); the segment holds it until
 * it is freed, and every attachment from now until its notifiers are
 * removed (xpmem_owner_put()), which may be after the segment is gone.
 *
 * Return: 0 or -errno.
 */
int xpmem_owner_get(struct xpmem_att *att, struct mm_struct *mm)
{
	struct xpmem_owner_ref *r = xpmem_owner_of_seg(att->seg, mm);

	if (IS_ERR(r))
		return PTR_ERR(r);
	/* the segment's hold keeps it: @att holds the segment */
	refcount_inc(&r->ref);
	att->owner_ref = r;
	att->owner_notifier = container_of(r->mn, struct xpmem_owner_notifier,
					   mn);
	return 0;
}

/**
 * xpmem_owner_put - @att no longer uses the owner's record
 * @att: an attachment whose notifiers are removed (or were never inserted)
 */
void xpmem_owner_put(struct xpmem_att *att)
{
	if (att->owner_ref)
		xpmem_seg_owner_ref_put(att->owner_ref);
	att->owner_ref = NULL;
	att->owner_notifier = NULL;
}

/*
 * An invalidation [@range->start, @range->end) reaches a mirror: list it
 * until its end, once (several mirrors see the same range).  Before the
 * callback marks the faults in progress.  Return: its record, or NULL for
 * the release at exit and when neither a spare nor memory was left for
 * one (the record is lost then: see struct xpmem_owner_notifier).
 */
struct xpmem_owner_inval *
xpmem_owner_note(struct xpmem_owner_notifier *notif,
		 const struct mmu_notifier_range *range)
{
	struct xpmem_owner_inval *f, *new;

	/* exit_mmap() releases without an invalidate_range_end */
	if (range->event == MMU_NOTIFY_RELEASE)
		return NULL;
	spin_lock(&notif->lock);
	list_for_each_entry(f, &notif->inflight, node) {
		if (f->range == range) {	/* another mirror listed it */
			spin_unlock(&notif->lock);
			return f;
		}
	}
	new = xpmem_owner_inval_get(notif);
	if (new) {
		new->range = range;
		new->start = range->start;
		new->end = range->end;
		INIT_LIST_HEAD(&new->zaps);
		list_add(&new->node, &notif->inflight);
		notif->nr++;
	} else if (!notif->lost) {
		WRITE_ONCE(notif->lost, true);
		atomic_long_inc(&xpmem_stats.records_lost);
	}
	spin_unlock(&notif->lock);
	return new;
}

/*
 * List a zap of @att's segment offsets [@off, @off + @len) on @f, the
 * record xpmem_owner_note() returned for this invalidation (it stays
 * until the invalidation's end, which only the invalidating task - this one -
 * reaches), for the owner's invalidate_range_start to do.  Return: false
 * without a record or memory: the caller zaps itself.
 */
bool xpmem_owner_defer_zap(struct xpmem_owner_notifier *notif,
			   struct xpmem_owner_inval *f, struct xpmem_att *att,
			   unsigned long off, unsigned long len)
{
	struct xpmem_zap *z;

	if (!f)
		return false;
	z = xpmem_zap_list(att, off, len, GFP_NOWAIT | __GFP_NOWARN);
	if (!z)
		return false;
	spin_lock(&notif->lock);
	list_add_tail(&z->node, &f->zaps);
	spin_unlock(&notif->lock);
	return true;
}

static bool xpmem_owner_busy(struct xpmem_owner_notifier *notif,
			     unsigned long start, unsigned long end)
{
	struct xpmem_owner_inval *f;
	bool busy = false;

	spin_lock(&notif->lock);
	list_for_each_entry(f, &notif->inflight, node) {
		if (f->start < end && start < f->end) {
			busy = true;
			break;
		}
	}
	spin_unlock(&notif->lock);
	return busy;
}

/**
 * xpmem_owner_quiet - may @att's mirrors settle at their insertion?
 * @att: an attachment holding the owner's record, before its notifiers
 *       are inserted
 *
 * While the owner's sentinel is linked in its interval tree, every
 * invalidation of the mm overlaps it, so the core marks the tree as being
 * invalidated from the start of any invalidation to the end of the last
 * one, and defers every insertion meanwhile.  A mirror inserted after
 * this returned true and linked when its insertion returns was therefore
 * inserted while no invalidation was in flight, or linked at the end of
 * the ones that deferred it: what mmu_interval_read_begin() would wait
 * for is over, and every later invalidation reaches its callback.
 * (Without the sentinel the core links at once during an invalidation
 * that overlapped no notifier, which then never reaches the new one.)
 *
 * Context: any; takes no lock.
 */
bool xpmem_owner_quiet(struct xpmem_att *att)
{
	struct xpmem_owner_notifier *notif = att->owner_notifier;

	/* pairs with the smp_store_release() in xpmem_owner_prepare() */
	return smp_load_acquire(&notif->itree) &&
	       xpmem_owner_linked(&notif->sentinel);
}

/**
 * xpmem_owner_waitq - where faults wait for the owner's invalidations to end
 * @notif: the owner's record
 *
 * Woken at the end of every listed invalidation and when an attachment
 * of the owner settles (xpmem_mirror.c).
 */
wait_queue_head_t *xpmem_owner_waitq(struct xpmem_owner_notifier *notif)
{
	return &notif->wq;
}

/**
 * xpmem_owner_wait - wait until no listed invalidation overlaps a window
 * @notif: the owner's record
 * @mni: the settled interval notifier of the mirror the window lies in
 * @start: owner address, the window's start
 * @end: owner address, past it
 *
 * Waits until no listed invalidation of the owner that overlaps owner
 * [@start, @end) is in progress; the ones listed later mark the window.
 * Killable: an owner that invalidates the range without pause delays the
 * fault, but a fatal signal ends the wait.  If the record was lost (no
 * memory for an entry), waits uninterruptibly in
 * mmu_interval_read_begin() of @mni instead, which is always correct.
 *
 * Context: the fault, with the owner's mmap_lock held for reading and no
 * att->lock; never a notifier.  May sleep.
 * Return: 0, or -EINTR on a fatal signal.
 */
int xpmem_owner_wait(struct xpmem_owner_notifier *notif,
		     struct mmu_interval_notifier *mni, unsigned long start,
		     unsigned long end)
{
	if (READ_ONCE(notif->lost)) {
		mmu_interval_read_begin(mni);
		return 0;
	}
	if (wait_event_killable(notif->wq,
				!xpmem_owner_busy(notif, start, end)))
		return -EINTR;
	return 0;
}

int xpmem_owner_init(void)
{
	int ret = xpmem_zap_init();

	if (ret)
		return ret;
	xpmem_owner_free_wq = alloc_workqueue("xpmem_owner", WQ_PERCPU, 0);
	if (!xpmem_owner_free_wq) {
		xpmem_zap_exit();
		return -ENOMEM;
	}
	return 0;
}

/*
 * Called once every attachment's end has run (the mirror's exit waits
 * for them): those ends put the owners' records; the core hands them to
 * xpmem_owner_free() after an SRCU grace period, which queues their end
 * on this file's queue.  The grace period is not enough (the callbacks
 * it readied may run later on other CPUs): wait until every record the
 * core made has been freed by its work, then let the destroy wait for
 * the works to return.
 */
void xpmem_owner_exit(void)
{
	mmu_notifier_synchronize();
	wait_var_event(&xpmem_owner_live, !atomic_read(&xpmem_owner_live));
	destroy_workqueue(xpmem_owner_free_wq);
	xpmem_zap_exit();
}
