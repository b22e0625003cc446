// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_mirror.c - what an attachment mirrors of its owner, and how it
 * learns that the owner changed: the invalidate callback and the owner's
 * invalidations in flight.  The zap worker and the record of what is
 * mapped are xpmem_zap.c.
 *
 * Invariants (docs/design.md, "Mirror, do not pin"):
 * - an attachment may have a PTE or PMD only for segment offsets set in
 *   its mapped bitmap; an invalidation that finds some set zaps them - in
 *   the zap worker, waited for - and only then clears them, so that an
 *   overlapping invalidation meanwhile finds them too and waits for its
 *   own zap before the owner frees anything;
 * - no attachment maps its own source range (xpmem_mirror_maps_itself() at
 *   every placement), so no callback ever waits for a zap that needs an
 *   i_mmap_rwsem the core holds;
 * - a fault lists its window before it resolves it; every invalidation
 *   that overlaps a listed window marks it, and a fault waits - killably -
 *   only for listed invalidations in flight that overlap its window, once
 *   its mirror's first fault has waited out the invalidations in flight
 *   at the notifier's insertion, which never reach its callback.
 * This file calls nothing of the fault path (xpmem_fault.c), which uses it.
 */
#include <linux/hash.h>
#include <linux/llist.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "xpmem_internal.h"
#include "compat.h"

/* Attachment ends that may wait for the owner (xpmem_attach.c). */
static struct workqueue_struct *xpmem_mirror_free_wq;

/* ---- What attachments mirror, and where --------------------------------- */

/**
 * xpmem_mirror_vma_ok - may attachments (and copies) reach @vma's pages?
 * @vma: an owner VMA
 *
 * What get_user_pages() would hand out, and never an attachment (which
 * would make the mirror recurse into itself, or nest attachments' locks).
 */
bool xpmem_mirror_vma_ok(struct vm_area_struct *vma)
{
	struct file *file = vma->vm_file;

	if (vma->vm_flags & (VM_IO | VM_PFNMAP | VM_MIXEDMAP | VM_SHADOW_STACK))
		return false;
	/* an attachment: what xpmem_fault_vma_is_att tests */
	if (vma->vm_ops == &xpmem_fault_vm_ops)
		return false;
	/* memfd_secret(): out of the direct map, never lent to anyone */
	if (xpmem_file_is_secretmem(file))
		return false;
	return true;
}

/**
 * xpmem_mirror_find - the mirror of the attacher page a fault is on
 * @vmf: the fault, in an attachment VMA
 * @oaddr: set to the owner address of the page
 *
 * Return: the mirror, or NULL (SIGBUS) for a page outside the
 * attachment, which VMAs of an attachment never map (VM_DONTEXPAND, and
 * mmap checks vm_pgoff).
 */
struct xpmem_mirror *xpmem_mirror_find(struct vm_fault *vmf,
				       unsigned long *oaddr)
{
	struct xpmem_att *att = vmf->vma->vm_private_data;
	unsigned long off = vmf->pgoff << PAGE_SHIFT;
	struct xpmem_mirror *m;

	if (WARN_ON_ONCE(off < att->offset || off - att->offset >= att->size))
		return NULL;
	m = &att->mirrors[xpmem_seg_range_index(att->seg, off) -
			  att->first_range];
	*oaddr = xpmem_seg_range_oaddr(&m->r, off);
	return m;
}

/**
 * xpmem_mirror_maps_itself - would a mapping of @seg at @addr mirror itself?
 * @seg: the attachment's segment
 * @mm: the mm the mapping is placed in
 * @addr: its address
 * @off: the segment offset it maps at @addr
 * @len: its length
 *
 * True when @mm is the segment owner's and [@addr, @addr + @len) overlaps
 * an owner range that segment offsets [@off, @off + @len) mirror.  Such a
 * mapping must never exist: its own split or move would invalidate it
 * while the core holds its i_mmap_rwsem (see "Zapping" in xpmem_zap.c).
 * Checked wherever a mapping is placed: mmap, mremap and split.
 */
bool xpmem_mirror_maps_itself(const struct xpmem_seg *seg, struct mm_struct *mm,
			      unsigned long addr, unsigned long off,
			      unsigned long len)
{
	unsigned long end = off + len;
	unsigned int i;

	if (mm != seg->mm)
		return false;
	for (i = xpmem_seg_range_index(seg, off);
	     i < seg->nr_ranges && seg->ranges[i].off < end; i++) {
		const struct xpmem_seg_range *r = &seg->ranges[i];
		unsigned long lo = max(off, r->off);
		unsigned long hi = min(end, r->off + r->len);
		unsigned long src = xpmem_seg_range_oaddr(r, lo);

		if (addr < src + (hi - lo) && src < addr + len)
			return true;
	}
	return false;
}

/* ---- The owner's invalidations in flight --------------------------------- */

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
 * the window and the fault starts over.  If the callback cannot record an
 * invalidation (no memory, GFP_NOWAIT), faults of that owner go back to
 * mmu_interval_read_begin(), which is always correct.
 */
struct xpmem_owner_notifier {
	struct mmu_notifier mn;
	spinlock_t lock;		/* inflight, nr */
	struct list_head inflight;	/* struct xpmem_owner_inval */
	unsigned int nr;		/* on inflight */
	bool lost;			/* a record failed: use the core's */
	/*
	 * The sentinel is inserted (so the mm's interval tree is enabled):
	 * set once, with release, by xpmem_mirror_owner_prepare()
	 */
	bool itree;
	atomic_t sentinel_claim;	/* 1: an insertion is being tried */
	/*
	 * An interval notifier over the whole address space, whose callback
	 * does nothing: see xpmem_mirror_quiet().  Removed, and the record
	 * freed, by @free_work once the core frees the record.
	 */
	struct mmu_interval_notifier sentinel;
	struct work_struct free_work;
	wait_queue_head_t wq;		/* faults waiting for an end */
};

/* One invalidation of the owner in flight, from a callback to its end. */
struct xpmem_owner_inval {
	struct list_head node;
	const struct mmu_notifier_range *range;	/* identifies it at its end */
	unsigned long start;
	unsigned long end;
	struct list_head zaps;		/* struct xpmem_zap, until its start */
};

static struct mmu_notifier *xpmem_mirror_owner_alloc(struct mm_struct *mm)
{
	struct xpmem_owner_notifier *notif = kzalloc(sizeof(*notif),
						     GFP_KERNEL_ACCOUNT);

	if (!notif)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&notif->lock);
	INIT_LIST_HEAD(&notif->inflight);
	init_waitqueue_head(&notif->wq);
	return &notif->mn;
}

static void xpmem_mirror_owner_release(struct xpmem_owner_notifier *notif)
{
	struct xpmem_owner_inval *f, *tmp;

	list_for_each_entry_safe(f, tmp, &notif->inflight, node) {
		WARN_ON_ONCE(!list_empty(&f->zaps));
		kfree(f);
	}
	kfree(notif);
}

/*
 * The end of an owner's record with a sentinel: remove it, then free.
 *
 * May wait for: the owner's invalidations in flight, uninterruptibly, if
 * the removal is deferred (mmu_interval_notifier_remove()) - in a kworker,
 * which nothing waits for but module exit, when no owner is left to
 * prolong it.  The core never calls it, so it holds no lock that wait
 * could need.  It owns the record: the core handed it over
 * (xpmem_mirror_owner_free()) after its last put and an SRCU grace
 * period, and only the sentinel's callback, which touches nothing, may
 * still run until the removal returns.  It maps nothing, reads no owner
 * memory and allocates nothing; the record it frees was charged to the
 * owner who made it.  No task's exit, unmap or close waits for it.
 */
static void xpmem_mirror_owner_free_work(struct work_struct *work)
{
	struct xpmem_owner_notifier *notif =
		container_of(work, struct xpmem_owner_notifier, free_work);

	mmu_interval_notifier_remove(&notif->sentinel);
	xpmem_mirror_owner_release(notif);
}

/*
 * The core's free_notifier, from an SRCU callback after the record's last
 * put: may not sleep, so a record with a sentinel goes to a work that owns
 * it from here (module exit waits for the SRCU callbacks, then the work).
 * Waits for nothing, takes no lock, touches no owner memory.
 */
static void xpmem_mirror_owner_free(struct mmu_notifier *mn)
{
	struct xpmem_owner_notifier *notif =
		container_of(mn, struct xpmem_owner_notifier, mn);

	if (!READ_ONCE(notif->itree)) {
		xpmem_mirror_owner_release(notif);
		return;
	}
	INIT_WORK(&notif->free_work, xpmem_mirror_owner_free_work);
	queue_work(xpmem_mirror_free_wq, &notif->free_work);
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
static bool xpmem_mirror_sentinel_invalidate(struct mmu_interval_notifier *mni,
					     const struct mmu_notifier_range *range,
					     unsigned long cur_seq)
{
	return true;
}

static const struct mmu_interval_notifier_ops xpmem_mirror_sentinel_ops = {
	.invalidate = xpmem_mirror_sentinel_invalidate,
};

/*
 * Is @mni in its mm's interval tree (not waiting on the deferred list)?
 * The core clears the node at insertion and links it under the
 * subscriptions' lock, directly or at the end of the invalidations that
 * deferred it; once linked, it stays until removed.
 */
static bool xpmem_mirror_linked(struct mmu_interval_notifier *mni)
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
static int xpmem_mirror_owner_start(struct mmu_notifier *mn,
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
static void xpmem_mirror_owner_end(struct mmu_notifier *mn,
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
	kfree(found);
	wake_up_all(&notif->wq);
}

static const struct mmu_notifier_ops xpmem_mirror_owner_ops = {
	.invalidate_range_start = xpmem_mirror_owner_start,
	.invalidate_range_end = xpmem_mirror_owner_end,
	.alloc_notifier = xpmem_mirror_owner_alloc,
	.free_notifier = xpmem_mirror_owner_free,
};

/* The segment's hold of the owner's record, registering it if need be. */
static struct xpmem_owner_ref *xpmem_mirror_seg_owner(struct xpmem_seg *seg,
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
	mn = mmu_notifier_get(&xpmem_mirror_owner_ops, mm);
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
 * xpmem_mirror_owner_prepare - register the owner's notifiers at its MAKE
 * @seg: a segment the current process just made (@seg->mm is current's)
 *
 * The first plain notifier of an mm and the first interval notifier each
 * make the core take every lock of the mm (mm_take_all_locks(): a walk of
 * all its VMAs).  Done here, in the owner's own MAKE and once per open of
 * /dev/xpmem (the caller keeps the returned reference until the file's
 * release), so that no ATTACH pays it, however many mappings the owner
 * has; the first interval notifier is the owner's sentinel, which lets
 * later ATTACHes settle at once (xpmem_mirror_quiet()).  Every signal but
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
 * removes the sentinel: xpmem_mirror_owner_free_work()).
 *
 * Return: a reference on the owner's record, or NULL.
 */
struct xpmem_owner_ref *xpmem_mirror_owner_prepare(struct xpmem_seg *seg)
{
	struct xpmem_owner_notifier *notif;
	struct xpmem_owner_ref *r;
	sigset_t all, old;

	siginitsetinv(&all, sigmask(SIGKILL) | sigmask(SIGSTOP));
	sigprocmask(SIG_BLOCK, &all, &old);
	r = xpmem_mirror_seg_owner(seg, seg->mm);
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
						  &xpmem_mirror_sentinel_ops))
			/* pairs with xpmem_mirror_owner_ready() */
			smp_store_release(&notif->itree, true);
		else
			atomic_set(&notif->sentinel_claim, 0);
	}
out:
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

/**
 * xpmem_mirror_owner_ready - will an ATTACH of @seg register nothing?
 * @seg: a segment
 *
 * True once @seg has the owner's record and the owner's mm has interval
 * notifiers enabled (xpmem_mirror_owner_prepare() at MAKE): then neither
 * xpmem_mirror_owner_get() nor mmu_interval_notifier_insert() registers a
 * notifier, the only part of them that takes the owner's locks or gives
 * up at a signal (-EINTR).  Neither is ever undone while the mm lives.
 */
bool xpmem_mirror_owner_ready(struct xpmem_seg *seg)
{
	/* pairs with the cmpxchg_release() in xpmem_mirror_seg_owner() */
	struct xpmem_owner_ref *r = smp_load_acquire(&seg->owner_ref);

	/* and the mm's registration is seen with the flag */
	return r && smp_load_acquire(&container_of(r->mn,
						   struct xpmem_owner_notifier,
						   mn)->itree);
}

/**
 * xpmem_mirror_owner_get - the owner's record of invalidations, for @att
 * @att: a new attachment, before its notifiers are inserted
 * @mm: the owner's mm (with a user reference)
 *
 * The first ATTACH of a segment registers it (mmu_notifier_get(): the
 * owner's mmap_lock for writing, and the core takes all the owner's locks
 * when the mm gets its first plain notifier); the segment holds it until
 * it is freed, and every attachment from now until its notifiers are
 * removed (xpmem_mirror_owner_put()), which may be after the segment is gone.
 *
 * Return: 0 or -errno.
 */
int xpmem_mirror_owner_get(struct xpmem_att *att, struct mm_struct *mm)
{
	struct xpmem_owner_ref *r = xpmem_mirror_seg_owner(att->seg, mm);

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
 * xpmem_mirror_owner_put - @att no longer uses the owner's record
 * @att: an attachment whose notifiers are removed (or were never inserted)
 */
void xpmem_mirror_owner_put(struct xpmem_att *att)
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
 * the release at exit and when no memory was left for one.
 */
static struct xpmem_owner_inval *
xpmem_mirror_owner_note(struct xpmem_owner_notifier *notif,
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
	new = kmalloc(sizeof(*new), GFP_NOWAIT | __GFP_NOWARN);
	if (new) {
		new->range = range;
		new->start = range->start;
		new->end = range->end;
		INIT_LIST_HEAD(&new->zaps);
		list_add(&new->node, &notif->inflight);
		notif->nr++;
	} else {
		WRITE_ONCE(notif->lost, true);
	}
	spin_unlock(&notif->lock);
	return new;
}

/*
 * List a zap of @att's segment offsets [@off, @off + @len) on @f, the
 * record xpmem_mirror_owner_note() returned for this invalidation (it stays
 * until the invalidation's end, which only the invalidating task - this one -
 * reaches), for the owner's invalidate_range_start to do.  Return: false
 * without a record or memory: the caller zaps itself.
 */
static bool xpmem_mirror_defer_zap(struct xpmem_owner_notifier *notif,
				   struct xpmem_owner_inval *f,
				   struct xpmem_att *att, unsigned long off,
				   unsigned long len)
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

static bool xpmem_mirror_owner_busy(struct xpmem_owner_notifier *notif,
				    unsigned long start,
				    unsigned long end)
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

static bool xpmem_mirror_settled(struct xpmem_mirror *m)
{
	/* pairs with smp_store_release() in xpmem_mirror_settle_work() */
	return smp_load_acquire(&m->settled);
}

/**
 * xpmem_mirror_wait - wait until a listed window can be resolved
 * @m: the mirror the window lies in
 * @start: owner address, the window's start
 * @end: owner address, past it
 *
 * Waits until no invalidation that may have missed the listed window of a
 * fault over owner [@start, @end) of mirror @m is in progress; the ones
 * that come later mark the window.  Killable: an owner that invalidates
 * the range without pause delays the fault, but a fatal signal ends the
 * wait.  If the record was lost, waits uninterruptibly in
 * mmu_interval_read_begin() instead, which is always correct.  Called
 * from the fault with the owner's mmap_lock held for reading, never from
 * a notifier.
 *
 * Context: may sleep; no att->lock held.
 * Return: 0, or -EINTR on a fatal signal.
 */
int xpmem_mirror_wait(struct xpmem_mirror *m, unsigned long start,
		      unsigned long end)
{
	struct xpmem_owner_notifier *notif = m->att->owner_notifier;

	/* until the owner's invalidations in flight at insertion are over */
	if (!xpmem_mirror_settled(m) &&
	    wait_event_killable(notif->wq, xpmem_mirror_settled(m)))
		return -EINTR;
	if (READ_ONCE(notif->lost)) {
		mmu_interval_read_begin(&m->notifier);
		return 0;
	}
	if (wait_event_killable(notif->wq,
				!xpmem_mirror_owner_busy(notif, start, end)))
		return -EINTR;
	return 0;
}

/*
 * An invalidation already in progress when a mirror's notifier was
 * inserted never calls its callback (the core even defers the insertion
 * while the owner's interval tree is being walked, and then no new
 * invalidation calls it either), and it is on the record only if another
 * mirror of the owner saw it: a fault that trusted the record could map
 * pages the owner is about to free.  mmu_interval_read_begin() of the new
 * notifier returns once the owner has had no invalidation in flight at
 * some moment since: from then on every invalidation reaches the
 * callback.  It sleeps uninterruptibly for as long as the owner keeps an
 * invalidation going, so a worker asks it for every new attachment, and
 * a fault waits - killably - only until the worker is done
 * (xpmem_mirror_wait()).  Runs on the queue of attachment ends,
 * which cancels it before removing the notifiers.
 *
 * May wait for: the owner's invalidations in flight, uninterruptibly, in
 * a kworker (never a task of the attacher: a fault's wait for it is
 * killable, and nothing on a path to exit, munmap or close waits for it -
 * the end worker cancels it, in a kworker too).  The core never calls it,
 * so it holds no i_mmap_rwsem, mmap_lock or folio lock that wait could
 * need.  What it touches - the attachment, its notifiers and the owner's
 * record - stays until cancel_work_sync() in the end worker returns, and
 * the attachment holds the record until then.  It maps nothing and reads
 * no owner memory, so placement and revocation are not its concern; it
 * allocates nothing.
 */
static void xpmem_mirror_settle_work(struct work_struct *work)
{
	struct xpmem_att *att = container_of(work, struct xpmem_att,
					     settle_work);
	unsigned int i;

	for (i = 0; i < att->nr_mirrors; i++) {
		struct xpmem_mirror *m = &att->mirrors[i];

		if (m->live)
			mmu_interval_read_begin(&m->notifier);
		/* pairs with xpmem_mirror_wait() */
		smp_store_release(&m->settled, true);
	}
	wake_up_all(&att->owner_notifier->wq);
}

/**
 * xpmem_mirror_settle_init - prepare an attachment's settling
 * @att: a new attachment
 */
void xpmem_mirror_settle_init(struct xpmem_att *att)
{
	INIT_WORK(&att->settle_work, xpmem_mirror_settle_work);
}

/**
 * xpmem_mirror_quiet - may @att's mirrors settle at their insertion?
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
bool xpmem_mirror_quiet(struct xpmem_att *att)
{
	struct xpmem_owner_notifier *notif = att->owner_notifier;

	/* pairs with the smp_store_release() in xpmem_mirror_owner_prepare() */
	return smp_load_acquire(&notif->itree) &&
	       xpmem_mirror_linked(&notif->sentinel);
}

/**
 * xpmem_mirror_settle - let faults of @att in once the owner's invalidations
 * in flight at its notifiers' insertion have ended
 * @att: an attachment whose notifiers were just inserted
 * @quiet: xpmem_mirror_quiet() before their insertion
 *
 * At once if @quiet and the core linked every notifier; otherwise in the
 * settle work, which is cancelled (cancel_work_sync()) before the
 * notifiers are removed.  Called before the attachment is mapped, so no
 * fault waits for it yet.
 */
void xpmem_mirror_settle(struct xpmem_att *att, bool quiet)
{
	unsigned int i;

	for (i = 0; quiet && i < att->nr_mirrors; i++)
		quiet = xpmem_mirror_linked(&att->mirrors[i].notifier);
	if (!quiet) {
		atomic_long_inc(&xpmem_stats.settle_works);
		queue_work(xpmem_mirror_free_wq, &att->settle_work);
		return;
	}
	for (i = 0; i < att->nr_mirrors; i++)
		/* pairs with xpmem_mirror_wait() */
		smp_store_release(&att->mirrors[i].settled, true);
}

/* ---- Invalidation -------------------------------------------------------- */

/*
 * xpmem_mirror_mark_stale - an owner range [@start, @end) changes
 * @att: the attachment whose mirror the invalidation reached
 * @start: owner address
 * @end: owner address, past the range
 *
 * Faults in progress whose required part it overlaps start over, those
 * that only have it in their window leave it unmapped (their usable part
 * shrinks, by whole pages), and its pages are no longer known to be
 * writable (the table xpmem_map.c fills).
 *
 * Context: under att->lock; waits for nothing, allocates nothing.
 */
static void xpmem_mirror_mark_stale(struct xpmem_att *att,
				    unsigned long start, unsigned long end)
{
	struct xpmem_writable_page *w;
	struct xpmem_fault_win *win;
	unsigned int i;

	lockdep_assert_held(&att->lock);
	list_for_each_entry(win, &att->faults, node) {
		unsigned long lo = max(start, win->start);
		unsigned long hi = min(end, win->end);

		if (lo >= hi)
			continue;
		if (win->required_start < hi && lo < win->required_end)
			mmu_interval_set_seq(&win->changes, 1);
		else if (hi <= win->required_start)	/* below it */
			win->usable_start = max(win->usable_start,
						PAGE_ALIGN(hi));
		else					/* above it */
			win->usable_end = min(win->usable_end, lo & PAGE_MASK);
	}
	for (i = 0; i < XPMEM_WRITABLE_SLOTS; i++) {
		w = &att->writable_pages[i];
		if (w->oaddr >= start && w->oaddr < end)
			w->oaddr = 0;
	}
}

/*
 * The invalidate callback.  Called by the core with the owner's mmap_lock,
 * folio locks or a file's i_mmap_rwsem possibly held, and from reclaim.
 * May wait for: att->lock (held only briefly, never across an allocation
 * or a wait; taken once more after a zap, to clear the zapped offsets),
 * and the zap worker, which needs the attachment's own i_mmap_rwsem and
 * page table locks only - and only when the attachment may have a PTE in
 * the range (its bits are set until a zap of it is done, so an overlapping
 * invalidation meanwhile waits for its own zap too), which excludes every
 * range the core holds an attachment's i_mmap_rwsem for (see "Zapping" in
 * xpmem_zap.c).  Usually the zap is only listed (GFP_NOWAIT) and the owner's
 * invalidate_range_start does it and waits for it, on the same grounds;
 * the callback waits itself only when it cannot list it.  It never waits
 * for a fault, a copy, or anything an attacher holds, so nothing the owner
 * does makes an attacher sleep uninterruptibly here.  It places no mapping
 * (it only removes PTEs), so it cannot make an attachment map its own
 * source; revocation is not its concern (faults check att->dead under the
 * same att->lock).  Faults in progress are only marked or have their keep
 * bounds narrowed under att->lock (xpmem_mirror_mark_stale()): no wait, no
 * allocation, and a narrowed window maps fewer pages, never one the range
 * touched.
 */
static bool xpmem_mirror_invalidate(struct mmu_interval_notifier *mni,
				    const struct mmu_notifier_range *range,
				    unsigned long cur_seq)
{
	struct xpmem_mirror *m = container_of(mni, struct xpmem_mirror,
					      notifier);
	struct xpmem_att *att = m->att;
	unsigned long start = max(range->start, m->r.oaddr);
	unsigned long end = min(range->end, m->r.oaddr + m->r.len);
	bool blockable = mmu_notifier_range_blockable(range);
	struct xpmem_owner_inval *rec = NULL;
	unsigned long off;
	bool mapped, zap;

	/* Caused by our own zap of attachment VMAs: nothing mirrors those. */
	if (xpmem_zap_in_worker())
		return true;
	/*
	 * Released, its notifiers not yet removed (its end waits up to a
	 * tick; the end owns @att and removes them before freeing it):
	 * nothing to do, and no lock to take, so the OOM reaper's or
	 * process_mrelease()'s invalidation of an exiting owner cannot fail
	 * on att->lock held by the owner's own exit.
	 */
	if (READ_ONCE(att->ended))
		return true;

	if (blockable) {
		rec = xpmem_mirror_owner_note(att->owner_notifier, range);
		mutex_lock(&att->lock);
	} else if (!mutex_trylock(&att->lock)) {
		return false;
	}
	/*
	 * Once an attachment has had VMAs and lost them all it never gets
	 * one again, so with none there is no PTE to zap and even the OOM
	 * reaper's non-blockable invalidation can succeed.
	 */
	mapped = atomic_read(&att->nr_vmas) > 0;
	if (!blockable && mapped) {
		mutex_unlock(&att->lock);
		return false;		/* zapping sleeps */
	}
	/* a VMA may come (an ATTACH in progress): its faults must wait */
	if (!blockable)
		xpmem_mirror_owner_note(att->owner_notifier, range);
	/*
	 * Mark, under the lock PTE insertion holds, the faults in progress
	 * whose window this range overlaps: a fault that inserted before this
	 * point is zapped below, one that takes the lock after it sees the
	 * mark and starts over.  Faults elsewhere in the attachment carry on.
	 */
	mmu_interval_set_seq(mni, cur_seq);
	xpmem_mirror_mark_stale(att, range->start, range->end);
	/*
	 * Zap (and wait for the worker) only if a PTE may exist there: never
	 * for a range of attachment VMAs, which the core may be splitting or
	 * moving with their i_mmap_rwsem held (see "Zapping" in xpmem_zap.c).
	 */
	zap = mapped && start < end &&
	      xpmem_zap_mapped_test(att, m->r.off + (start - m->r.oaddr),
				    end - start);
	mutex_unlock(&att->lock);

	atomic_long_inc(&xpmem_stats.invalidations);
	off = m->r.off + (start - m->r.oaddr);
	if (zap && !xpmem_mirror_defer_zap(att->owner_notifier, rec, att, off,
					   end - start)) {
		xpmem_zap_att(att, off, end - start);
		xpmem_zap_mapped_forget(att, off, end - start);
	}
	return true;
}

const struct mmu_interval_notifier_ops xpmem_mirror_ops = {
	.invalidate = xpmem_mirror_invalidate,
};

/*
 * Attachment ends wait here, for up to a tick, before their works are
 * queued: a work queued at each release wakes a kworker there and then,
 * and that wake-up (and the switch to the kworker it causes) took most of
 * a release's time.  The batch work only queues each end's own work, so
 * an end whose owner keeps invalidating holds up no other.  The ends of a
 * process that exits, or closes /dev/xpmem, are queued at once.
 */
static LLIST_HEAD(xpmem_mirror_ends);

/*
 * The batch work: queues the end work of every attachment on the list.
 *
 * May wait for: nothing - it takes no lock, allocates nothing and only
 * queues works.  The core never calls it, so it holds no i_mmap_rwsem,
 * mmap_lock or folio lock.  It maps nothing and touches no owner memory
 * (placement and revocation are not its concern), so no owner or other
 * user can prolong it or make anyone's sleep uninterruptible through it.
 * What it touches: each listed attachment, which its release handed over
 * to its end and which only that end frees - queued here, so it cannot
 * run before (llist_for_each_entry_safe() reads the next node first); and
 * the module, which the listed attachments keep loaded (their file
 * system's pin) and whose exit flushes this work.
 */
static void xpmem_mirror_ends_work(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&xpmem_mirror_ends);
	struct xpmem_att *att, *next;

	llist_for_each_entry_safe(att, next, list, end_node)
		queue_work(xpmem_mirror_free_wq, &att->free_work);
}

static DECLARE_DELAYED_WORK(xpmem_mirror_ends_dwork, xpmem_mirror_ends_work);

/**
 * xpmem_mirror_ends_now - queue the waiting attachment ends at once
 *
 * At the close of /dev/xpmem (a process that exits or is done with xpmem),
 * so that what its attachments hold - their memory, and the module while
 * their file system is pinned - goes as soon as their ends can run, not a
 * tick later.  Context: process; takes no lock, waits for nothing.
 */
void xpmem_mirror_ends_now(void)
{
	if (!llist_empty(&xpmem_mirror_ends))
		mod_delayed_work(xpmem_mirror_free_wq,
				 &xpmem_mirror_ends_dwork, 0);
}

/**
 * xpmem_mirror_defer - run @att's end (@att->free_work) on the module's
 * queue for waits the owner can prolong (apart from the zap worker, which
 * such work may wait for), within a tick (at once in an exiting task)
 * @att: an attachment whose objects are put; its end owns it from here
 *
 * Context: any process context; takes no lock, waits for nothing.
 */
void xpmem_mirror_defer(struct xpmem_att *att)
{
	/* the first end of a batch schedules it; the batch work empties it */
	bool first = llist_add(&att->end_node, &xpmem_mirror_ends);

	if (current->flags & PF_EXITING)
		xpmem_mirror_ends_now();
	else if (first)
		queue_delayed_work(xpmem_mirror_free_wq,
				   &xpmem_mirror_ends_dwork, 1);
}

int xpmem_mirror_init(void)
{
	int ret = xpmem_zap_init();

	if (ret)
		return ret;
	xpmem_mirror_free_wq = alloc_workqueue("xpmem_free", WQ_PERCPU, 0);
	if (!xpmem_mirror_free_wq) {
		xpmem_zap_exit();
		return -ENOMEM;
	}
	return 0;
}

void xpmem_mirror_exit(void)
{
	/*
	 * Every attachment is released (its file held the module): queue
	 * the last batch of ends now; the destroy runs them and waits for
	 * ends still returning from their last put.
	 */
	flush_delayed_work(&xpmem_mirror_ends_dwork);
	flush_workqueue(xpmem_mirror_free_wq);
	/*
	 * The ends put the owners' records; the core frees them after an
	 * SRCU grace period, queueing the removal of their sentinels here.
	 */
	mmu_notifier_synchronize();
	destroy_workqueue(xpmem_mirror_free_wq);
	xpmem_zap_exit();
}
