// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_mirror.c - what an attachment mirrors of its owner, and how it
 * learns that the owner changed: the invalidate callback, the settling of
 * new mirrors, and the queue of attachment ends.  The owner's record of
 * its invalidations in flight is xpmem_owner.c; the zap worker and the
 * record of what is mapped are xpmem_zap.c.
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
#include <linux/llist.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
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
 * mmap checks the file offset).
 */
struct xpmem_mirror *xpmem_mirror_find(struct vm_fault *vmf,
				       unsigned long *oaddr)
{
	struct xpmem_att *att = vmf->vma->vm_private_data;
	unsigned long off = xpmem_att_seg_off(att, vmf->pgoff);
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
 * wait (xpmem_owner_wait(), which falls back to an uninterruptible
 * mmu_interval_read_begin() if the record was lost).  Called from the
 * fault with the owner's mmap_lock held for reading, never from
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
	    wait_event_killable(*xpmem_owner_waitq(notif),
				xpmem_mirror_settled(m)))
		return -EINTR;
	return xpmem_owner_wait(notif, &m->notifier, start, end);
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
	wake_up_all(xpmem_owner_waitq(att->owner_notifier));
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
 * xpmem_mirror_settle - let faults of @att in once the owner's invalidations
 * in flight at its notifiers' insertion have ended
 * @att: an attachment whose notifiers were just inserted
 * @quiet: xpmem_owner_quiet() before their insertion
 *
 * At once if @quiet and the core linked every notifier; otherwise in the
 * settle work, which is cancelled (xpmem_mirror_settle_cancel()) before
 * the notifiers are removed.  Called before the attachment is mapped, so
 * no fault waits for it yet.
 */
void xpmem_mirror_settle(struct xpmem_att *att, bool quiet)
{
	unsigned int i;

	for (i = 0; quiet && i < att->nr_mirrors; i++)
		quiet = xpmem_owner_linked(&att->mirrors[i].notifier);
	if (!quiet) {
		atomic_long_inc(&xpmem_stats.settle_works);
		att->settle_queued = true;
		queue_work(xpmem_mirror_free_wq, &att->settle_work);
		return;
	}
	for (i = 0; i < att->nr_mirrors; i++)
		/* pairs with xpmem_mirror_wait() */
		smp_store_release(&att->mirrors[i].settled, true);
}

/**
 * xpmem_mirror_settle_cancel - make sure @att's settle work is not running
 * @att: an ended attachment, owned by its end's worker
 *
 * Waits for the work if xpmem_mirror_settle() queued it (that ATTACH
 * handed @att over since, so the flag is seen); else nothing to wait for.
 */
void xpmem_mirror_settle_cancel(struct xpmem_att *att)
{
	if (att->settle_queued)
		cancel_work_sync(&att->settle_work);
}

/* ---- Invalidation -------------------------------------------------------- */

/*
 * The invalidate callback.  Called by the core with the owner's mmap_lock,
 * folio locks or a file's i_mmap_rwsem possibly held, and from reclaim.
 * May wait for: att->lock (held only briefly, never across an allocation
 * or a wait; taken once more after a zap, to clear the zapped offsets),
 * and the zap worker, which needs the i_mmap_rwsem of the attachment's
 * file and page table locks only - and only when the attachment may have a PTE in
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
 * bounds narrowed under att->lock (xpmem_window_mark()): no wait, no
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
		rec = xpmem_owner_note(att->owner_notifier, range);
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
		xpmem_owner_note(att->owner_notifier, range);
	/*
	 * Mark, under the lock PTE insertion holds, the faults in progress
	 * whose window this range overlaps: a fault that inserted before this
	 * point is zapped below, one that takes the lock after it sees the
	 * mark and starts over.  Faults elsewhere in the attachment carry on.
	 */
	mmu_interval_set_seq(mni, cur_seq);
	xpmem_window_mark(att, range->start, range->end);
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
	if (zap && !xpmem_owner_defer_zap(att->owner_notifier, rec, att, off,
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
	int ret = xpmem_owner_init();

	if (ret)
		return ret;
	xpmem_mirror_free_wq = alloc_workqueue("xpmem_free", WQ_PERCPU, 0);
	if (!xpmem_mirror_free_wq) {
		xpmem_owner_exit();
		return -ENOMEM;
	}
	return 0;
}

void xpmem_mirror_exit(void)
{
	/*
	 * Every attachment has ended (its mount held the module): queue
	 * the last batch of ends now; the destroy runs them and waits for
	 * ends still returning from their last put.  The owners' records
	 * they put are freed in xpmem_owner_exit().
	 */
	flush_delayed_work(&xpmem_mirror_ends_dwork);
	flush_workqueue(xpmem_mirror_free_wq);
	destroy_workqueue(xpmem_mirror_free_wq);
	xpmem_owner_exit();
}
