// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_fault.c - the mirror: attacher page faults and their invalidation
 *
 * Every attachment registers an mmu_interval_notifier over each owner
 * range it maps (struct xpmem_mirror: one, or one per buffer of a
 * vectored segment that it covers), so invalidations of owner memory
 * nobody attached never reach this module, and overlapping attachments
 * are found through the core's interval tree.  A fault window never
 * crosses from one mirror into the next; all mirrors of an attachment
 * share its notifier lock, att->lock.
 *
 * The fault handler mirrors the owner's page tables (the HMM pattern),
 * with the owner's mmap_lock held for reading throughout, so that the
 * owner's mmap, munmap, mprotect and mremap (which change VMAs under the
 * lock taken for writing) cannot change the VMA a fault resolves in, nor
 * invalidate its window:
 *   lock the owner's mmap_lock (see below), check the owner VMA
 *   register the fault's window on att->faults
 *   wait for invalidations in progress that may have missed the window
 *   hmm_range_fault() over the window; an invalidation that overlaps the
 *   window stops it (the window's own sequence) and the fault starts over
 *   lock att->lock; if an invalidation overlapped the window: start over
 *   insert PTEs; unlock; unlock the owner
 * An invalidation marks only the faults whose window it overlaps, so a
 * whole-address-space attachment does not lose its faults to unrelated
 * owner activity (madvise, reclaim, NUMA hinting elsewhere).
 * No page is pinned beyond the PTE.  Every PTE is a special PFN PTE (as
 * vmf_insert_mixed() makes on a VM_MIXEDMAP | VM_IO VMA; the window is
 * filled under one page table lock with apply_to_page_range()):
 * get_user_pages() never finds the owner's page through an attachment, so
 * nothing outlives an invalidation or a REMOVE.
 *
 * Writable attachments use write notification.  A read fault maps its
 * window read-only; the first write to each page goes through
 * ->pfn_mkwrite, which makes the owner's page writable (breaking COW in
 * the owner if needed), marks the owner's folio dirty and accessed, and
 * only then lets the core make the PTE writable.  A write fault makes the
 * owner's faulting page writable the same way and gives write access at
 * once to every page of its window the owner maps writable, their folios
 * dirtied first.  An attacher therefore never writes into a page the
 * owner maps read-only, and reclaim never discards a page an attacher
 * wrote.  A write ->fault that found the owner's page writable remembers
 * it (att->wok) until an invalidation touches it, so that a ->pfn_mkwrite
 * on a PTE another thread mapped read-only meanwhile needs no owner lock.
 *
 * Huge mappings (6.12, compat.h): when the owner maps a 2 MiB range with
 * one PMD (a THP, a hugetlb page, or part of a 1 GiB one) at an address
 * congruent modulo 2 MiB with the attacher's, ->huge_fault maps it with
 * one special PMD, writable at once on a write fault whose owner PMD is
 * writable (the owner's folio is dirtied first, as for ->pfn_mkwrite);
 * anything else falls back to PTEs.  An invalidation of any part of it
 * clears the whole PMD (the core "splits" a special PMD by clearing it).
 * Page table pages of an attachment are only allocated under
 * att->pt_lock, which huge PMD insertion also holds, so a PMD slot never
 * turns from empty into a PTE table under an insertion that checked it;
 * PTE insertion, under att->lock like PMD insertion, skips a slot that
 * holds a huge PMD.  Attach addresses the caller leaves to the kernel are
 * chosen congruent with the owner's modulo 2 MiB.
 *
 * Two mmap_locks are only ever nested in address order (struct mm_struct
 * with the lower address first).  A fault whose attacher mm comes first
 * simply waits for the owner's lock.  One whose owner comes first must not
 * wait while holding the attacher's lock (another fault, or a queued
 * writer behind which our own readers wait, would close an ABBA cycle): it
 * tries once, and if that fails drops the attacher's lock, takes both in
 * order, looks the attachment up again and resolves the fault (the core
 * uses only the mm, never the VMA, once ->fault returns).  ->pfn_mkwrite
 * cannot drop the lock: it zaps the page and
 * returns VM_FAULT_NOPAGE, so that the access comes back as a write
 * ->fault, which can.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/hmm.h>
#include <linux/jiffies.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/pfn_t.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/swap.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "xpmem_internal.h"
#include "compat.h"

/* Fault window entries kept on the stack; larger windows use kmalloc. */
#define XPMEM_FAULT_STACK_PAGES	32

/*
 * Sequence retries inside one fault before it gives the CPU back by
 * returning VM_FAULT_NOPAGE (the access is simply repeated): an owner that
 * keeps changing the attached range cannot make a fault spin forever.
 */
#define XPMEM_FAULT_MAX_RETRIES	8

/*
 * A fault's owner range [start, end), on att->faults while it resolves.
 * @changes is never inserted in an interval tree: it is the sequence
 * hmm_range_fault() tests between its steps (and takes the owner's mm
 * from).  It starts at 0, and the invalidate callback sets it to 1 when
 * an invalidation overlaps the window, so every such invalidation stops
 * the walk - also while the owner keeps some invalidation in progress
 * without pause, when the mirror's own sequence no longer moves.
 */
struct xpmem_fault_win {
	struct list_head node;
	unsigned long start;
	unsigned long end;
	struct mmu_interval_notifier changes;
};

static bool xpmem_fault_win_stale(struct xpmem_fault_win *win)
{
	return mmu_interval_check_retry(&win->changes, 0);
}

/*
 * How long a fault that cannot drop the attacher's mmap_lock (GUP without
 * FAULT_FLAG_ALLOW_RETRY) polls for a contended owner mmap_lock before it
 * fails with SIGBUS (EFAULT to the GUP caller).
 */
#define XPMEM_OWNER_POLL	(HZ / 10)

static unsigned int fault_window_pages = PTRS_PER_PTE;
module_param(fault_window_pages, uint, 0644);
MODULE_PARM_DESC(fault_window_pages,
		 "Pages mapped per attacher fault when the owner has them resident (1..512, power of two; default 512 = one PMD)");

#ifdef XPMEM_HAVE_HUGE_PFNMAP
static bool huge_mappings = true;
module_param(huge_mappings, bool, 0644);
MODULE_PARM_DESC(huge_mappings,
		 "Map owner PMD mappings (THP, hugetlb) with one PMD in attachments, and choose 2 MiB-congruent attach addresses (default Y)");
#endif

static struct workqueue_struct *xpmem_zap_wq;

/* Attachment ends that may wait for the owner (xpmem_attach.c). */
static struct workqueue_struct *xpmem_free_wq;

/*
 * Mapped instead of the shared zero page, which vmf_insert_mixed()
 * refuses in writable mappings: reads of memory the owner never wrote see
 * zeroes and allocate nothing in the owner.  Read-only, never written.
 */
static struct page *xpmem_zero_page;

/* ---- zapping ------------------------------------------------------------ */

/*
 * Zapping attacher PTEs calls the attacher mm's own mmu notifiers.  From
 * inside the owner's notifier callback that would nest two
 * invalidate_range_start sections in one task (lockdep reports it as
 * recursion), and the attachment VMAs being zapped may themselves lie in a
 * range some attachment mirrors, which would call back into this file.  So
 * every zap runs in this worker, and the callback ignores invalidations the
 * worker causes: they only ever hit attachment VMAs, and a fault never
 * mirrors an attachment VMA (xpmem_vma_mirrorable()), so there is nothing
 * to invalidate.  WQ_MEM_RECLAIM: the callback runs in reclaim.
 *
 * What the worker needs, and why waiting for it from a notifier callback
 * is safe: unmap_mapping_range() takes the i_mmap_rwsem of the attachment
 * being zapped (for reading) and the attacher's page table locks, nothing
 * else.  The core calls notifiers holding an mmap_lock, folio locks, the
 * i_mmap_rwsem of the files whose folios it unmaps, and - when it splits
 * or moves the VMA of an attachment X - X's i_mmap_rwsem, over X's own
 * addresses.  A callback waits only when its attachment may have a PTE
 * in the invalidated range (xpmem_att_mapped_test_clear()), and no
 * attachment ever has a PTE for an address where an attachment VMA lies
 * (the fault refuses those VMAs, and an invalidation clears the range
 * before any attachment VMA can be placed there).  So the callback never
 * waits for an i_mmap_rwsem the core holds: not X's own (an attachment
 * never mirrors its own VMA, xpmem_att_maps_itself() is checked at every
 * placement), and not Y's when two processes split attachments of each
 * other at once (neither has a PTE for the other's attachment VMA).
 * xpmem_att_zap() asserts the first under lockdep.
 */
struct xpmem_zap_req {
	struct work_struct work;
	struct completion done;
	struct xpmem_att *att;
	unsigned long offset;
	unsigned long len;
};

static void xpmem_zap_work(struct work_struct *work)
{
	struct xpmem_zap_req *req =
		container_of(work, struct xpmem_zap_req, work);

	unmap_mapping_range(req->att->inode->i_mapping, req->offset,
			    req->len, 1);
	complete(&req->done);	/* req lives on the waiter's stack */
}

/*
 * Tells invalidations the worker causes by its context, not by their
 * range: right because the worker never reclaims (unmap_mapping_range()
 * gathers pages with GFP_NOWAIT), so no unrelated invalidation can run in
 * it.
 */
static bool xpmem_in_zap_worker(void)
{
	struct work_struct *work = current_work();

	return work && work->func == xpmem_zap_work;
}

/**
 * xpmem_att_zap - remove an attachment's PTEs over part of it
 * @att: the attachment
 * @offset: segment offset, page aligned
 * @len: bytes; 0 means to the end
 *
 * The next access faults.  Waits for the zap worker, which needs the
 * attachment's i_mmap_rwsem: the caller must not hold it (lockdep checks).
 *
 * Context: may sleep; no att->lock held.
 */
void xpmem_att_zap(struct xpmem_att *att, unsigned long offset,
		   unsigned long len)
{
	struct xpmem_zap_req req = {
		.att = att, .offset = offset, .len = len,
	};

	lockdep_assert_not_held(&att->inode->i_mapping->i_mmap_rwsem);
	init_completion(&req.done);
	INIT_WORK_ONSTACK(&req.work, xpmem_zap_work);
	queue_work(xpmem_zap_wq, &req.work);
	wait_for_completion(&req.done);
	destroy_work_on_stack(&req.work);
}

/* ---- what an attachment may have mapped --------------------------------- */

struct xpmem_mapped_block {
	DECLARE_BITMAP(bits, XPMEM_MAPPED_BLOCK);
};

/**
 * xpmem_att_mapped_init - an attachment with nothing mapped yet
 * @att: the new attachment
 */
void xpmem_att_mapped_init(struct xpmem_att *att)
{
	xa_init(&att->mapped);
}

/**
 * xpmem_att_mapped_destroy - free the bitmaps of an attachment
 * @att: an attachment whose notifiers are removed
 */
void xpmem_att_mapped_destroy(struct xpmem_att *att)
{
	struct xpmem_mapped_block *b;
	unsigned long idx;

	xa_for_each(&att->mapped, idx, b)
		kfree(b);
	xa_destroy(&att->mapped);
}

/*
 * Make sure the bitmaps of segment offsets [@off, @off + @len) exist, so
 * that marking them under att->lock allocates nothing.  Bitmaps stay until
 * the attachment goes: 64 bytes per 2 MiB it ever mapped.
 */
static int xpmem_att_mapped_prepare(struct xpmem_att *att, unsigned long off,
				    unsigned long len)
{
	unsigned long first = (off >> PAGE_SHIFT) / XPMEM_MAPPED_BLOCK;
	unsigned long last = ((off + len - 1) >> PAGE_SHIFT) /
			     XPMEM_MAPPED_BLOCK;
	struct xpmem_mapped_block *b;
	unsigned long i;
	int err;

	for (i = first; i <= last; i++) {
		if (xa_load(&att->mapped, i))
			continue;
		b = kzalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
		if (!b)
			return -ENOMEM;
		err = xa_insert(&att->mapped, i, b, GFP_KERNEL_ACCOUNT);
		if (err)
			kfree(b);
		if (err && err != -EBUSY)	/* -EBUSY: another fault's */
			return err;
	}
	return 0;
}

/*
 * Call @fn on each block's part of segment offsets [@off, @off + @len):
 * the block, the first bit and the number of bits.  Return: whether any
 * call returned true.
 */
static bool xpmem_att_mapped_walk(struct xpmem_att *att, unsigned long off,
				  unsigned long len,
				  bool (*fn)(struct xpmem_mapped_block *b,
					     unsigned int bit,
					     unsigned int nr))
{
	unsigned long pg = off >> PAGE_SHIFT;
	unsigned long end = (off + len - 1) >> PAGE_SHIFT;	/* last */
	unsigned long first = pg / XPMEM_MAPPED_BLOCK;
	unsigned long last = end / XPMEM_MAPPED_BLOCK;
	struct xpmem_mapped_block *b;
	unsigned long idx;
	bool any = false;

	lockdep_assert_held(&att->lock);
	xa_for_each_range(&att->mapped, idx, b, first, last) {
		unsigned long lo = max(pg, idx * XPMEM_MAPPED_BLOCK);
		unsigned long hi = min(end, idx * XPMEM_MAPPED_BLOCK +
					    XPMEM_MAPPED_BLOCK - 1);

		any |= fn(b, lo % XPMEM_MAPPED_BLOCK, hi - lo + 1);
	}
	return any;
}

static bool xpmem_mapped_set_fn(struct xpmem_mapped_block *b,
				unsigned int bit, unsigned int nr)
{
	bitmap_set(b->bits, bit, nr);
	return true;
}

static bool xpmem_mapped_clear_fn(struct xpmem_mapped_block *b,
				  unsigned int bit, unsigned int nr)
{
	bool any = find_next_bit(b->bits, bit + nr, bit) < bit + nr;

	if (any)
		bitmap_clear(b->bits, bit, nr);
	return any;
}

/*
 * Segment offsets [@off, @off + @len) are about to get PTEs or a PMD.
 * Under att->lock, with xpmem_att_mapped_prepare() done: a missing
 * bitmap is a bug (WARN), and the insertion is then refused.
 */
static bool xpmem_att_mapped_set(struct xpmem_att *att, unsigned long off,
				 unsigned long len)
{
	unsigned long blocks = (((off + len - 1) >> PAGE_SHIFT) /
				XPMEM_MAPPED_BLOCK) -
			       ((off >> PAGE_SHIFT) / XPMEM_MAPPED_BLOCK) + 1;
	unsigned long idx, n = 0;
	struct xpmem_mapped_block *b;

	xa_for_each_range(&att->mapped, idx, b,
			  (off >> PAGE_SHIFT) / XPMEM_MAPPED_BLOCK,
			  ((off + len - 1) >> PAGE_SHIFT) / XPMEM_MAPPED_BLOCK)
		n++;
	if (WARN_ON_ONCE(n != blocks))
		return false;
	xpmem_att_mapped_walk(att, off, len, xpmem_mapped_set_fn);
	return true;
}

/*
 * Whether segment offsets [@off, @off + @len) may have a PTE or PMD; they
 * are forgotten (the caller zaps them).  Under att->lock.
 */
static bool xpmem_att_mapped_test_clear(struct xpmem_att *att,
					unsigned long off, unsigned long len)
{
	return xpmem_att_mapped_walk(att, off, len, xpmem_mapped_clear_fn);
}

/* ---- placement ---------------------------------------------------------- */

/**
 * xpmem_att_maps_itself - would a mapping of @seg at @addr mirror itself?
 * @seg: the attachment's segment
 * @mm: the mm the mapping is placed in
 * @addr: its address
 * @off: the segment offset it maps at @addr
 * @len: its length
 *
 * True when @mm is the segment owner's and [@addr, @addr + @len) overlaps
 * an owner range that segment offsets [@off, @off + @len) mirror.  Such a
 * mapping must never exist: its own split or move would invalidate it
 * while the core holds its i_mmap_rwsem (see "zapping" above).  Checked
 * wherever a mapping is placed: mmap, mremap and split.
 */
bool xpmem_att_maps_itself(const struct xpmem_seg *seg, struct mm_struct *mm,
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
		unsigned long src = xpmem_range_oaddr(r, lo);

		if (addr < src + (hi - lo) && src < addr + len)
			return true;
	}
	return false;
}

/* ---- revocation of copies ----------------------------------------------- */

/*
 * Copies (xpmem_copy.c) move bytes between pinned owner pages and the
 * caller's buffers one batch at a time, each batch inside a read section
 * that checks the segment and permit first and never faults.  REMOVE and
 * RELEASE mark their object, then xpmem_revoke_sync() waits for the
 * batches in progress: once it returns, no copy moves another byte.  A
 * read section is a bounded memcpy, so the wait is bounded and nothing an
 * attacher does can prolong it.
 */
static DECLARE_RWSEM(xpmem_revoke_rwsem);

/** xpmem_revoke_read_lock - begin a batch that reads revocable state */
void xpmem_revoke_read_lock(void)
{
	down_read(&xpmem_revoke_rwsem);
}

/** xpmem_revoke_read_unlock - end it */
void xpmem_revoke_read_unlock(void)
{
	up_read(&xpmem_revoke_rwsem);
}

/**
 * xpmem_revoke_sync - wait for the copy batches in progress
 *
 * Called after a segment or permit is marked removed or released.
 */
void xpmem_revoke_sync(void)
{
	down_write(&xpmem_revoke_rwsem);
	up_write(&xpmem_revoke_rwsem);
}

/* ---- owner invalidations in flight --------------------------------------- */

/*
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
struct xpmem_omm {
	struct mmu_notifier mn;
	spinlock_t lock;		/* inflight, nr */
	struct list_head inflight;	/* struct xpmem_inflight */
	unsigned int nr;
	bool lost;			/* a record failed: use the core's */
	wait_queue_head_t wq;		/* faults waiting for an end */
};

struct xpmem_inflight {
	struct list_head node;
	const struct mmu_notifier_range *range;	/* identifies it at its end */
	unsigned long start;
	unsigned long end;
};

static struct mmu_notifier *xpmem_omm_alloc(struct mm_struct *mm)
{
	struct xpmem_omm *omm = kzalloc(sizeof(*omm), GFP_KERNEL_ACCOUNT);

	if (!omm)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&omm->lock);
	INIT_LIST_HEAD(&omm->inflight);
	init_waitqueue_head(&omm->wq);
	return &omm->mn;
}

static void xpmem_omm_free(struct mmu_notifier *mn)
{
	struct xpmem_omm *omm = container_of(mn, struct xpmem_omm, mn);
	struct xpmem_inflight *f, *tmp;

	list_for_each_entry_safe(f, tmp, &omm->inflight, node)
		kfree(f);
	kfree(omm);
}

/*
 * The end of any invalidation of the owner's mm.  Called with whatever
 * the invalidating task holds; takes omm->lock only (a leaf) and waits
 * for nothing.
 */
static void xpmem_omm_range_end(struct mmu_notifier *mn,
				const struct mmu_notifier_range *range)
{
	struct xpmem_omm *omm = container_of(mn, struct xpmem_omm, mn);
	struct xpmem_inflight *f, *found = NULL;

	/* listed, if at all, by this same task before: no race */
	if (!READ_ONCE(omm->nr))
		return;
	spin_lock(&omm->lock);
	list_for_each_entry(f, &omm->inflight, node) {
		if (f->range == range) {
			list_del(&f->node);
			omm->nr--;
			found = f;
			break;
		}
	}
	spin_unlock(&omm->lock);
	if (!found)
		return;
	kfree(found);
	wake_up_all(&omm->wq);
}

static const struct mmu_notifier_ops xpmem_omm_ops = {
	.invalidate_range_end = xpmem_omm_range_end,
	.alloc_notifier = xpmem_omm_alloc,
	.free_notifier = xpmem_omm_free,
};

/**
 * xpmem_att_omm_get - the owner's record of invalidations, for @att
 * @att: a new attachment, before its notifiers are inserted
 * @mm: the owner's mm (with a user reference)
 *
 * The first ATTACH of a segment registers it (mmu_notifier_get(): the
 * owner's mmap_lock for writing, and the core takes all the owner's locks
 * when the mm gets its first plain notifier); the segment keeps it until
 * it is freed, and every attachment, which holds the segment until its
 * notifiers are removed, uses it without another reference.
 *
 * Return: 0 or -errno.
 */
int xpmem_att_omm_get(struct xpmem_att *att, struct mm_struct *mm)
{
	struct xpmem_seg *seg = att->seg;
	/* pairs with the cmpxchg_release() that publishes it below */
	struct mmu_notifier *mn = smp_load_acquire(&seg->omm);

	if (!mn) {
		mn = mmu_notifier_get(&xpmem_omm_ops, mm);
		if (IS_ERR(mn))
			return PTR_ERR(mn);
		if (cmpxchg_release(&seg->omm, NULL, mn)) {
			mmu_notifier_put(mn);	/* another ATTACH was first */
			mn = smp_load_acquire(&seg->omm);
		}
	}
	att->omm = container_of(mn, struct xpmem_omm, mn);
	return 0;
}

/*
 * An invalidation [@range->start, @range->end) reaches a mirror: list it
 * until its end, once (several mirrors see the same range).  Before the
 * callback marks the faults in progress.
 */
static void xpmem_omm_note(struct xpmem_omm *omm,
			   const struct mmu_notifier_range *range)
{
	struct xpmem_inflight *f, *new;

	/* exit_mmap() releases without an invalidate_range_end */
	if (range->event == MMU_NOTIFY_RELEASE)
		return;
	new = kmalloc(sizeof(*new), GFP_NOWAIT | __GFP_NOWARN);
	spin_lock(&omm->lock);
	list_for_each_entry(f, &omm->inflight, node) {
		if (f->range == range) {
			spin_unlock(&omm->lock);
			kfree(new);
			return;
		}
	}
	if (new) {
		new->range = range;
		new->start = range->start;
		new->end = range->end;
		list_add(&new->node, &omm->inflight);
		omm->nr++;
	} else {
		WRITE_ONCE(omm->lost, true);
	}
	spin_unlock(&omm->lock);
}

static bool xpmem_omm_busy(struct xpmem_omm *omm, unsigned long start,
			   unsigned long end)
{
	struct xpmem_inflight *f;
	bool busy = false;

	spin_lock(&omm->lock);
	list_for_each_entry(f, &omm->inflight, node) {
		if (f->start < end && start < f->end) {
			busy = true;
			break;
		}
	}
	spin_unlock(&omm->lock);
	return busy;
}

/*
 * Wait until no invalidation that may have missed the listed window of a
 * fault over owner [@start, @end) of mirror @m is in progress; the ones
 * that come later mark the window.  Killable: an owner that invalidates
 * the range without pause delays the fault, but a fatal signal ends the
 * wait.
 *
 * Return: 0, or -EINTR.
 */
static int xpmem_fault_wait_settled(struct xpmem_mirror *m,
				    unsigned long start, unsigned long end)
{
	struct xpmem_omm *omm = m->att->omm;

	if (READ_ONCE(omm->lost)) {
		mmu_interval_read_begin(&m->notifier);
		return 0;
	}
	if (wait_event_killable(omm->wq, !xpmem_omm_busy(omm, start, end)))
		return -EINTR;
	return 0;
}

/* ---- invalidation ------------------------------------------------------- */

/*
 * An owner range [start, end) changes: faults in progress over it start
 * over, and its pages are no longer known to be writable.  Under att->lock.
 */
static void xpmem_att_mark_stale(struct xpmem_att *att, unsigned long start,
				 unsigned long end)
{
	struct xpmem_fault_win *win;
	unsigned int i;

	lockdep_assert_held(&att->lock);
	list_for_each_entry(win, &att->faults, node)
		if (win->start < end && start < win->end)
			mmu_interval_set_seq(&win->changes, 1);
	for (i = 0; i < XPMEM_WOK_SLOTS; i++)
		if (att->wok[i].oaddr >= start && att->wok[i].oaddr < end)
			att->wok[i].oaddr = 0;
}

/*
 * The invalidate callback.  Called by the core with the owner's mmap_lock,
 * folio locks or a file's i_mmap_rwsem possibly held, and from reclaim.
 * May wait for: att->lock (held only briefly, never across an allocation
 * or a wait), and the zap worker, which needs the attachment's own
 * i_mmap_rwsem and page table locks only - and only when the attachment
 * may have a PTE in the range, which excludes every range the core holds
 * an attachment's i_mmap_rwsem for (see "zapping" above).  It never waits
 * for a fault, a copy, or anything an attacher holds.
 */
static bool xpmem_att_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct xpmem_mirror *m = container_of(mni, struct xpmem_mirror,
					      notifier);
	struct xpmem_att *att = m->att;
	unsigned long start = max(range->start, m->r.oaddr);
	unsigned long end = min(range->end, m->r.oaddr + m->r.len);
	bool blockable = mmu_notifier_range_blockable(range);
	bool mapped, zap;

	/* Caused by our own zap of attachment VMAs: nothing mirrors those. */
	if (xpmem_in_zap_worker())
		return true;

	if (blockable) {
		xpmem_omm_note(att->omm, range);
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
		xpmem_omm_note(att->omm, range);
	/*
	 * Mark, under the lock PTE insertion holds, the faults in progress
	 * whose window this range overlaps: a fault that inserted before this
	 * point is zapped below, one that takes the lock after it sees the
	 * mark and starts over.  Faults elsewhere in the attachment carry on.
	 */
	mmu_interval_set_seq(mni, cur_seq);
	xpmem_att_mark_stale(att, range->start, range->end);
	/*
	 * Zap (and wait for the worker) only if a PTE may exist there: never
	 * for a range of attachment VMAs, which the core may be splitting or
	 * moving with their i_mmap_rwsem held (see "zapping" above).
	 */
	zap = mapped && start < end &&
	      xpmem_att_mapped_test_clear(att, m->r.off + (start - m->r.oaddr),
					  end - start);
	mutex_unlock(&att->lock);

	atomic_long_inc(&xpmem_stats.invalidations);
	if (zap)
		xpmem_att_zap(att, m->r.off + (start - m->r.oaddr),
			      end - start);
	return true;
}

const struct mmu_interval_notifier_ops xpmem_att_mni_ops = {
	.invalidate = xpmem_att_invalidate,
};

/* ---- the fault ---------------------------------------------------------- */

/**
 * xpmem_fault_window_pages - pages a fault maps at most (a power of two)
 */
unsigned long xpmem_fault_window_pages(void)
{
	unsigned int n = READ_ONCE(fault_window_pages);

	if (!n || n > PTRS_PER_PTE || !is_power_of_2(n))
		n = PTRS_PER_PTE;
	return n;
}

/* The PFN an hmm_range_fault() entry names, without its flag bits. */
static unsigned long xpmem_hmm_pfn(unsigned long hmm_pfn)
{
	return hmm_pfn & ~HMM_PFN_FLAGS;
}

/* The PFN to map for an owner PFN: our own zero page for the zero page. */
static unsigned long xpmem_map_pfn(unsigned long hmm_pfn)
{
	unsigned long pfn = xpmem_hmm_pfn(hmm_pfn);

	return is_zero_pfn(pfn) ? page_to_pfn(xpmem_zero_page) : pfn;
}

/**
 * xpmem_vma_is_att - is @vma an attachment of this module?
 * @vma: any VMA
 */
bool xpmem_vma_is_att(struct vm_area_struct *vma)
{
	return vma->vm_ops == &xpmem_vm_ops;
}

/**
 * xpmem_vma_mirrorable - may attachments (and copies) reach @vma's pages?
 * @vma: an owner VMA
 *
 * What get_user_pages() would hand out, and never an attachment (which
 * would make the mirror recurse into itself, or nest attachments' locks).
 */
bool xpmem_vma_mirrorable(struct vm_area_struct *vma)
{
	struct file *file = vma->vm_file;

	if (vma->vm_flags & (VM_IO | VM_PFNMAP | VM_MIXEDMAP | VM_SHADOW_STACK))
		return false;
	if (xpmem_vma_is_att(vma))
		return false;
	/* memfd_secret(): out of the direct map, never lent to anyone */
	if (file && file_inode(file)->i_sb->s_magic == SECRETMEM_MAGIC)
		return false;
	return true;
}

static int xpmem_noop_pte(pte_t *pte, unsigned long addr, void *data)
{
	return 0;
}

/*
 * The PMD slot of @addr in @mm, or NULL if the page tables above it do
 * not exist.  Under the mmap_lock, so they cannot be freed meanwhile.
 */
static pmd_t *xpmem_find_pmd(struct mm_struct *mm, unsigned long addr)
{
	pgd_t *pgd = pgd_offset(mm, addr);
	p4d_t *p4d;
	pud_t *pud;

	if (pgd_none(*pgd) || pgd_bad(*pgd))
		return NULL;
	p4d = p4d_offset(pgd, addr);
	if (p4d_none(*p4d) || p4d_bad(*p4d))
		return NULL;
	pud = pud_offset(p4d, addr);
	if (pud_none(*pud) || pud_leaf(*pud) || pud_bad(*pud))
		return NULL;
	return pmd_offset(pud, addr);
}

/* The faulting address's PMD slot (@vmf->pmd is NULL after a reversal). */
static pmd_t *xpmem_fault_pmd(struct vm_fault *vmf)
{
	return vmf->pmd ? vmf->pmd : xpmem_find_pmd(vmf->vma->vm_mm,
						     vmf->address);
}

/*
 * Make sure the page table page for the window exists, so that inserting
 * under att->lock never allocates (the invalidate callback, which takes
 * att->lock, runs in reclaim).  Under att->pt_lock, which huge PMD
 * insertion holds too.
 *
 * Return: 0; -EAGAIN if the slot holds a huge PMD now (the access is
 * simply repeated); -ENOMEM.
 */
static int xpmem_fault_prepare_pt(struct vm_fault *vmf)
{
	struct xpmem_att *att = vmf->vma->vm_private_data;
	pmd_t *pmd;
	int ret = 0;

	mutex_lock(&att->pt_lock);
	pmd = xpmem_fault_pmd(vmf);
	if (pmd && pmd_leaf(READ_ONCE(*pmd)))
		ret = -EAGAIN;
	else if (!pmd || pmd_none(READ_ONCE(*pmd)))
		ret = apply_to_page_range(vmf->vma->vm_mm, vmf->address,
					  PAGE_SIZE, xpmem_noop_pte, NULL);
	mutex_unlock(&att->pt_lock);
	return ret == -EAGAIN ? ret : (ret ? -ENOMEM : 0);
}

/*
 * @mm's mmap_lock for reading while @held's is held: the second of two,
 * which nest only in address order (see the lock order in
 * xpmem_internal.h; lockdep sees one class and cannot check it).
 * Return: 0, or -EINTR on a fatal signal.
 */
static int xpmem_mmap_read_lock_second(struct mm_struct *held,
				       struct mm_struct *mm)
{
	WARN_ON_ONCE((unsigned long)held >= (unsigned long)mm);
	return down_read_killable_nested(&mm->mmap_lock, SINGLE_DEPTH_NESTING);
}

/* The attacher wrote or read the owner's page: as if the owner had. */
static void xpmem_fault_touch(unsigned long hmm_pfn, bool write)
{
	unsigned long pfn = xpmem_hmm_pfn(hmm_pfn);
	struct folio *folio;

	if (!pfn_valid(pfn) || is_zero_pfn(pfn))
		return;
	folio = page_folio(pfn_to_page(pfn));
	/*
	 * The window is not stale and att->lock held, so the owner still maps
	 * the folio (truncation and unmapping wait in our invalidate
	 * callback): its mapping is alive, as the page table lock would
	 * guarantee for the owner's own write fault.
	 */
	if (write && !folio_test_dirty(folio))
		folio_mark_dirty(folio);
	folio_mark_accessed(folio);
}

/*
 * A write fault maps the owner-writable pages of its window writable:
 * their folios become dirty first, as if the attacher had written each
 * (it may, without another fault).  Accessed is the faulting page's alone.
 */
static void xpmem_fault_dirty_window(const unsigned long *pfns,
				     unsigned long npages)
{
	struct folio *folio, *last = NULL;
	unsigned long i, pfn;

	for (i = 0; i < npages; i++) {
		pfn = xpmem_hmm_pfn(pfns[i]);
		if (!(pfns[i] & HMM_PFN_VALID) || (pfns[i] & HMM_PFN_ERROR) ||
		    !(pfns[i] & HMM_PFN_WRITE) || !pfn_valid(pfn) ||
		    is_zero_pfn(pfn))
			continue;
		folio = page_folio(pfn_to_page(pfn));
		if (folio != last && !folio_test_dirty(folio))
			folio_mark_dirty(folio);
		last = folio;
	}
}

/* att->wok entries: owner address | XPMEM_WOK_VALID */
#define XPMEM_WOK_VALID		1UL

/*
 * A write ->fault found the owner's page at @oaddr writable: remember it
 * for the ->pfn_mkwrite that follows.  Under att->lock, window not stale.
 */
static struct xpmem_wok *xpmem_wok_slot(struct xpmem_att *att,
					unsigned long oaddr)
{
	return &att->wok[hash_long(oaddr >> PAGE_SHIFT, XPMEM_WOK_BITS)];
}

static void xpmem_wok_remember(struct xpmem_att *att, unsigned long oaddr,
			       unsigned long pfn)
{
	struct xpmem_wok *w = xpmem_wok_slot(att, oaddr);

	w->oaddr = oaddr | XPMEM_WOK_VALID;
	w->pfn = pfn;
}

/*
 * Make the read-only PTE @vmf found writable, if it is still there: under
 * att->lock, so that an invalidation either zaps it after this or has
 * zapped it before (the core's own upgrade after ->pfn_mkwrite returns
 * would only compare the PTE, and a zap and re-insertion of the same
 * read-only PTE in between would pass).
 *
 * Return: VM_FAULT_NOPAGE (the access is repeated, and writes).
 */
static int xpmem_upgrade_pte(pte_t *ptep, unsigned long addr, void *data)
{
	struct vm_fault *vmf = data;
	pte_t pte = ptep_get(ptep);

	if (pte_same(pte, vmf->orig_pte) && !pte_write(pte)) {
		pte = pte_mkyoung(xpmem_pte_mkwrite_dirty(pte));
		set_pte_at(vmf->vma->vm_mm, addr, ptep, pte);
		update_mmu_cache(vmf->vma, addr, ptep);
	}
	return 0;
}

static vm_fault_t xpmem_fault_set_writable(struct vm_fault *vmf)
{
	struct xpmem_att *att = vmf->vma->vm_private_data;
	pmd_t *pmd = xpmem_fault_pmd(vmf);

	lockdep_assert_held(&att->lock);
	/* huge PMDs go in under att->lock: none can appear meanwhile */
	if (!pmd || !pmd_present(READ_ONCE(*pmd)) || pmd_leaf(READ_ONCE(*pmd)))
		return VM_FAULT_NOPAGE;
	/* the page table lock; never allocates a table */
	apply_to_existing_page_range(vmf->vma->vm_mm, vmf->address, PAGE_SIZE,
				     xpmem_upgrade_pte, vmf);
	return VM_FAULT_NOPAGE;
}

/*
 * ->pfn_mkwrite without the owner's lock: if no invalidation touched the
 * owner's page since a write ->fault found it writable, and the attacher's
 * PTE still names it, the owner still maps it writable.
 */
static bool xpmem_fault_mkwrite_fast(struct vm_fault *vmf,
				     struct xpmem_att *att, unsigned long oaddr)
{
	struct xpmem_wok *w = xpmem_wok_slot(att, oaddr);
	unsigned long pfn = pte_pfn(vmf->orig_pte);
	bool hit;

	mutex_lock(&att->lock);
	hit = !att->dead && w->oaddr == (oaddr | XPMEM_WOK_VALID) &&
	      w->pfn == pfn;
	if (hit) {
		w->oaddr = 0;
		xpmem_fault_touch(pfn, true);
		xpmem_fault_set_writable(vmf);
	}
	mutex_unlock(&att->lock);
	if (hit)
		atomic_long_inc(&xpmem_stats.mkwrite_fast);
	return hit;
}

/* One window's insertion, for xpmem_fill_pte(). */
struct xpmem_fill {
	struct vm_area_struct *vma;
	const unsigned long *pfns;
	unsigned long start;	/* attacher address of pfns[0] */
	bool write;		/* map owner-writable pages writable */
	unsigned long mapped;
};

/*
 * apply_to_page_range() callback, under the attacher's page table lock:
 * map one resolved page with a special PTE (as vmf_insert_mixed() would,
 * without taking the lock and walking the tables again for every page),
 * already young, and writable and dirty where @f->write and the owner maps
 * the page writable.  A PTE that is there already stays: it names the
 * same page (an invalidation would have zapped it and marked the window).
 */
static int xpmem_fill_pte(pte_t *ptep, unsigned long addr, void *data)
{
	struct xpmem_fill *f = data;
	unsigned long p = f->pfns[(addr - f->start) >> PAGE_SHIFT];
	unsigned long pfn = xpmem_map_pfn(p);
	pte_t pte;

	if (!(p & HMM_PFN_VALID) || (p & HMM_PFN_ERROR) ||
	    !pte_none(ptep_get(ptep)))
		return 0;
	pte = pfn_pte(pfn, f->vma->vm_page_prot);
	/* never our zero page writable: it stands for the owner's */
	if (f->write && (p & HMM_PFN_WRITE) && pfn == xpmem_hmm_pfn(p))
		pte = xpmem_pte_mkwrite_dirty(pte);
	set_pte_at(f->vma->vm_mm, addr, ptep, pte_mkspecial(pte_mkyoung(pte)));
	update_mmu_cache(f->vma, addr, ptep);
	f->mapped++;
	return 0;
}

/*
 * Map the resolved window [start, start + npages pages) of the attacher,
 * all of it under one page table lock.  For a write fault, every page the
 * owner maps writable is mapped writable at once, its folio dirtied first
 * (as ->pfn_mkwrite would), so that a write pass takes one fault per
 * window instead of one more per page; a page the owner maps read-only
 * (COW-shared, write-protected) stays read-only here and goes through
 * ->pfn_mkwrite.  A read fault maps everything read-only: dirtying the
 * owner's pages on reads would make reclaim write back what nobody wrote.
 * Called with att->lock held and the window not stale, so every page in
 * @pfns is still mapped by the owner; the page table page exists
 * (xpmem_fault_prepare_pt(), and only munmap frees it), so nothing is
 * allocated under att->lock.
 */
static vm_fault_t xpmem_fault_insert(struct vm_fault *vmf, unsigned long start,
				     const unsigned long *pfns,
				     unsigned long npages, unsigned long fidx,
				     bool write)
{
	struct xpmem_fill fill = {
		.vma = vmf->vma, .pfns = pfns, .start = start,
		.write = write && (vmf->vma->vm_flags & VM_WRITE),
	};
	pmd_t *pmd = xpmem_fault_pmd(vmf);

	/* A huge PMD went in since xpmem_fault_prepare_pt(): use it. */
	if (!pmd || pmd_leaf(READ_ONCE(*pmd)))
		return VM_FAULT_NOPAGE;
	if (!(pfns[fidx] & HMM_PFN_VALID) || (pfns[fidx] & HMM_PFN_ERROR))
		return VM_FAULT_SIGBUS;
	if (fill.write)
		xpmem_fault_dirty_window(pfns, npages);
	if (apply_to_page_range(vmf->vma->vm_mm, start, npages << PAGE_SHIFT,
				xpmem_fill_pte, &fill))
		return VM_FAULT_SIGBUS;
	xpmem_fault_touch(pfns[fidx], fill.write);
	atomic_long_add(fill.mapped, &xpmem_stats.pages_mapped);
	return VM_FAULT_NOPAGE;
}

/*
 * ->pfn_mkwrite after resolution, under att->lock: the PTE becomes
 * writable here if it is unchanged.  A PTE that names another page than
 * the owner's writable one (our zero page, a page COW-broken meanwhile)
 * must go.
 *
 * Return: VM_FAULT_NOPAGE, with *@zap set if the PTE must go.
 */
static vm_fault_t xpmem_fault_mkwrite(struct vm_fault *vmf,
				      unsigned long hmm_pfn, bool *zap)
{
	if (!(hmm_pfn & HMM_PFN_WRITE) ||
	    pte_pfn(vmf->orig_pte) != xpmem_hmm_pfn(hmm_pfn)) {
		*zap = true;
		return VM_FAULT_NOPAGE;
	}
	xpmem_fault_touch(hmm_pfn, true);
	return xpmem_fault_set_writable(vmf);
}

/*
 * Attacher window [*lo, *hi) around the fault, at most @pages (a power of
 * two) aligned to its size, inside the attacher VMA, the owner VMA and the
 * mirror @m.
 */
static void xpmem_fault_window(struct vm_fault *vmf, struct xpmem_mirror *m,
			       struct vm_area_struct *ovma, unsigned long oaddr,
			       unsigned long pages, unsigned long *lo,
			       unsigned long *hi)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long win = pages << PAGE_SHIFT;
	unsigned long addr = vmf->address;

	/* distances from the faulting page, so nothing can wrap */
	unsigned long below = addr - max(ALIGN_DOWN(addr, win), vma->vm_start);
	unsigned long above = min(ALIGN_DOWN(addr, win) + win, vma->vm_end) -
			      addr;

	below = min3(below, oaddr - ovma->vm_start, oaddr - m->r.oaddr);
	above = min3(above, ovma->vm_end - oaddr,
		     m->r.oaddr + m->r.len - oaddr);
	*lo = addr - below;
	*hi = addr + above;
}

/*
 * The mirror of the attacher page @vmf faults on, and its owner address;
 * NULL (SIGBUS) for a page outside the attachment, which VMAs of an
 * attachment never map (VM_DONTEXPAND, and mmap checks vm_pgoff).
 */
static struct xpmem_mirror *xpmem_fault_mirror(struct vm_fault *vmf,
					       unsigned long *oaddr)
{
	struct xpmem_att *att = vmf->vma->vm_private_data;
	unsigned long off = vmf->pgoff << PAGE_SHIFT;
	struct xpmem_mirror *m;

	if (WARN_ON_ONCE(off < att->offset || off - att->offset >= att->size))
		return NULL;
	m = &att->mirrors[xpmem_seg_range_index(att->seg, off) -
			  att->first_range];
	*oaddr = xpmem_range_oaddr(&m->r, off);
	return m;
}

/* What a resolution is for. */
enum xpmem_fault_kind {
	XPMEM_FAULT_PTE,	/* ->fault: map the window with PTEs */
	XPMEM_FAULT_MKWRITE,	/* ->pfn_mkwrite: one PTE becomes writable */
	XPMEM_FAULT_PMD,	/* ->huge_fault: one huge PMD, or fall back */
};

#ifdef XPMEM_HAVE_HUGE_PFNMAP
/*
 * Whether @folio is memory the owner owns: anonymous, page cache or
 * hugetlb.  Not the huge zero folio (no mapping; is_huge_zero_folio()
 * needs a symbol modules do not get), which must not be made writable.
 */
static bool xpmem_folio_is_owners(struct folio *folio)
{
	return folio_test_anon(folio) || folio_test_hugetlb(folio) ||
	       READ_ONCE(folio->mapping);
}

/*
 * Whether the owner maps the 2 MiB at @haddr with a page table of PTEs:
 * then no PMD can mirror it, and resolving 512 pages only to fall back
 * would double the cost of every fault on 4 KiB owner memory.  A hint
 * (the slot may change the moment it is read; a wrong answer costs one
 * fallback or one wasted resolution); under the owner's mmap_lock, so the
 * tables above the slot stay.
 */
static bool xpmem_owner_maps_ptes(struct mm_struct *owner, unsigned long haddr)
{
	pmd_t *pmd = xpmem_find_pmd(owner, haddr);
	pmd_t val;

	if (!pmd)
		return false;
	val = pmdp_get_lockless(pmd);
	return pmd_present(val) && !pmd_leaf(val);
}

/*
 * Map the resolved 2 MiB window with one PMD if the owner maps it with
 * one (or with part of a larger one): 512 valid PFNs, physically
 * contiguous and 2 MiB aligned, none of them a zero page, all writable
 * for a write.  Under att->pt_lock and att->lock, window not stale.
 */
static vm_fault_t xpmem_fault_insert_pmd(struct vm_fault *vmf,
					 const unsigned long *pfns,
					 unsigned long fidx, bool write)
{
	unsigned long pfn0 = xpmem_hmm_pfn(pfns[0]);
	pmd_t *pmd = vmf->pmd, orig;
	unsigned long i;
	vm_fault_t ret;

	if (!IS_ALIGNED(pfn0, PTRS_PER_PMD) || !pfn_valid(pfn0) ||
	    is_zero_pfn(pfn0) ||
	    !xpmem_folio_is_owners(page_folio(pfn_to_page(pfn0))))
		return VM_FAULT_FALLBACK;
	for (i = 0; i < PTRS_PER_PMD; i++) {
		unsigned long p = pfns[i];

		if (!(p & HMM_PFN_VALID) || (p & HMM_PFN_ERROR) ||
		    xpmem_hmm_pfn(p) != pfn0 + i ||
		    hmm_pfn_to_map_order(p) < PMD_ORDER ||
		    (write && !(p & HMM_PFN_WRITE)))
			return VM_FAULT_FALLBACK;
	}
	/*
	 * Empty, or our own PMD of these pages (an invalidation would have
	 * cleared it and marked the window), or a PTE table: then PTEs.
	 */
	orig = READ_ONCE(*pmd);
	if (!pmd_none(orig) && !(pmd_leaf(orig) && pmd_pfn(orig) == pfn0))
		return VM_FAULT_FALLBACK;
	ret = vmf_insert_pfn_pmd(vmf, pfn_to_pfn_t(pfn0), write);
	if (!(ret & VM_FAULT_ERROR)) {
		xpmem_fault_touch(pfns[fidx], write);
		atomic_long_inc(&xpmem_stats.pmd_mapped);
	}
	return ret;
}
#else
static bool xpmem_owner_maps_ptes(struct mm_struct *owner, unsigned long haddr)
{
	return true;
}

static vm_fault_t xpmem_fault_insert_pmd(struct vm_fault *vmf,
					 const unsigned long *pfns,
					 unsigned long fidx, bool write)
{
	return VM_FAULT_FALLBACK;
}
#endif

/*
 * Resolve the fault and map its window.  The caller holds the owner's
 * mmap_lock for reading (it is the attacher's own for an attachment of
 * the faulting process itself), so only invalidations that need no
 * mmap_lock for writing (madvise, reclaim, migration) can overlap it.
 * @pfns has room for @maxpages entries (a power of two; 1 for mkwrite,
 * PTRS_PER_PMD for a PMD).
 */
static vm_fault_t xpmem_fault_resolve(struct vm_fault *vmf,
				      struct mm_struct *owner,
				      enum xpmem_fault_kind kind,
				      unsigned long *pfns, unsigned long maxpages)
{
	struct xpmem_att *att = vmf->vma->vm_private_data;
	bool mkwrite = kind == XPMEM_FAULT_MKWRITE;
	bool write = mkwrite || (vmf->flags & FAULT_FLAG_WRITE);
	struct hmm_range range = {
		.hmm_pfns = pfns,
		.pfn_flags_mask = HMM_PFN_REQ_FAULT | HMM_PFN_REQ_WRITE,
	};
	struct xpmem_mirror *m;
	unsigned long oaddr;
	struct xpmem_fault_win win = {};
	unsigned long lo, hi, npages, fidx, off;
	struct vm_area_struct *ovma;
	unsigned int retries = 0;
	bool zap = false;
	vm_fault_t ret;
	int err;

	m = xpmem_fault_mirror(vmf, &oaddr);
	if (!m)
		return VM_FAULT_SIGBUS;
	ovma = vma_lookup(owner, oaddr);
	if (!ovma || !xpmem_vma_mirrorable(ovma))
		return kind == XPMEM_FAULT_PMD ? VM_FAULT_FALLBACK :
						 VM_FAULT_SIGBUS;
	if (kind == XPMEM_FAULT_PMD) {
		lo = vmf->address & PMD_MASK;
		hi = lo + PMD_SIZE;
		if (oaddr - (vmf->address - lo) < ovma->vm_start ||
		    ovma->vm_end - oaddr < hi - vmf->address ||
		    oaddr - (vmf->address - lo) < m->r.oaddr ||
		    m->r.oaddr + m->r.len - oaddr < hi - vmf->address ||
		    xpmem_owner_maps_ptes(owner, oaddr & PMD_MASK))
			return VM_FAULT_FALLBACK;
	} else {
		xpmem_fault_window(vmf, m, ovma, oaddr, maxpages, &lo, &hi);
	}
	npages = (hi - lo) >> PAGE_SHIFT;
	fidx = (vmf->address - lo) >> PAGE_SHIFT;
	off = (vmf->pgoff - fidx) << PAGE_SHIFT;	/* segment offset of lo */
	range.start = oaddr - (fidx << PAGE_SHIFT);
	range.end = range.start + (npages << PAGE_SHIFT);
	win.start = range.start;
	win.end = range.end;
	win.changes.mm = owner;
	range.notifier = &win.changes;
	range.notifier_seq = 0;

	/*
	 * Listed before the wait: an invalidation that marked nothing because
	 * it came earlier is still waited for if it has not finished.
	 */
	mutex_lock(&att->lock);
	list_add(&win.node, &att->faults);
	mutex_unlock(&att->lock);
again:
	if (xpmem_fault_wait_settled(m, win.start, win.end)) {
		ret = VM_FAULT_SIGBUS;		/* killed */
		goto unlist;
	}
	memset(pfns, 0, npages * sizeof(*pfns));
	pfns[fidx] = HMM_PFN_REQ_FAULT | (write ? HMM_PFN_REQ_WRITE : 0);
	err = hmm_range_fault(&range);
	if (err == -EBUSY)		/* an invalidation marked the window */
		goto retry;
	if (err) {
		ret = err == -ENOMEM ? VM_FAULT_OOM : VM_FAULT_SIGBUS;
		goto unlist;
	}
	if (kind == XPMEM_FAULT_PTE) {
		err = xpmem_fault_prepare_pt(vmf);
		if (err) {
			ret = err == -EAGAIN ? VM_FAULT_NOPAGE : VM_FAULT_OOM;
			goto unlist;
		}
	} else if (kind == XPMEM_FAULT_PMD) {
		mutex_lock(&att->pt_lock);
	}
	if (!mkwrite && xpmem_att_mapped_prepare(att, off, hi - lo)) {
		if (kind == XPMEM_FAULT_PMD)
			mutex_unlock(&att->pt_lock);
		ret = VM_FAULT_OOM;
		goto unlist;
	}

	mutex_lock(&att->lock);
	if (xpmem_fault_win_stale(&win)) {
		mutex_unlock(&att->lock);
		if (kind == XPMEM_FAULT_PMD)
			mutex_unlock(&att->pt_lock);
		goto retry;
	}
	if (att->dead ||
	    (!mkwrite && !xpmem_att_mapped_set(att, off, hi - lo))) {
		ret = VM_FAULT_SIGBUS;
	} else if (mkwrite) {
		ret = xpmem_fault_mkwrite(vmf, pfns[fidx], &zap);
	} else if (kind == XPMEM_FAULT_PMD) {
		ret = xpmem_fault_insert_pmd(vmf, pfns, fidx, write);
	} else {
		ret = xpmem_fault_insert(vmf, lo, pfns, npages, fidx, write);
		if (write && !(ret & VM_FAULT_ERROR) &&
		    (pfns[fidx] & HMM_PFN_WRITE))
			xpmem_wok_remember(att, oaddr,
					   xpmem_hmm_pfn(pfns[fidx]));
	}
	list_del(&win.node);
	mutex_unlock(&att->lock);
	if (kind == XPMEM_FAULT_PMD)
		mutex_unlock(&att->pt_lock);
	if (zap)
		xpmem_att_zap(att, vmf->pgoff << PAGE_SHIFT, PAGE_SIZE);
	return ret;

retry:
	atomic_long_inc(&xpmem_stats.fault_seq_retries);
	if (fatal_signal_pending(current)) {
		ret = VM_FAULT_SIGBUS;
		goto unlist;
	}
	if (++retries >= XPMEM_FAULT_MAX_RETRIES) {
		/* Give the CPU back; the access is repeated. */
		cond_resched();
		ret = kind == XPMEM_FAULT_PMD ? VM_FAULT_FALLBACK :
						VM_FAULT_NOPAGE;
		goto unlist;
	}
	cond_resched();
	mutex_lock(&att->lock);
	mmu_interval_set_seq(&win.changes, 0);
	mutex_unlock(&att->lock);
	goto again;

unlist:
	mutex_lock(&att->lock);
	list_del(&win.node);
	mutex_unlock(&att->lock);
	return ret;
}

/*
 * Take the owner's mmap_lock for reading without ever waiting for it
 * out of order (see the lock order in xpmem_internal.h).
 *
 * Return: 0 with the lock held; 0 with *@reverse set if the caller must
 * drop the attacher's lock and take both in order (xpmem_fault_reversed());
 * or what the fault must return.
 */
static vm_fault_t xpmem_fault_lock_owner(struct vm_fault *vmf,
					 struct mm_struct *owner, bool mkwrite,
					 bool *reverse)
{
	struct mm_struct *mm = vmf->vma->vm_mm;
	struct xpmem_att *att = vmf->vma->vm_private_data;
	unsigned long deadline;

	if (mmap_read_trylock(owner))
		return 0;
	atomic_long_inc(&xpmem_stats.fault_retries);

	if ((unsigned long)mm < (unsigned long)owner) {
		/* in order: wait while holding the attacher's lock */
		atomic_long_inc(&xpmem_stats.fault_owner_waits);
		if (xpmem_mmap_read_lock_second(mm, owner))
			return VM_FAULT_SIGBUS;		/* killed */
		return 0;
	}
	if (mkwrite) {
		/* The next access takes ->fault, which may drop the lock. */
		xpmem_att_zap(att, vmf->pgoff << PAGE_SHIFT, PAGE_SIZE);
		return VM_FAULT_NOPAGE;
	}
	if (vmf->flags & FAULT_FLAG_ALLOW_RETRY) {
		if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
			return VM_FAULT_RETRY;
		*reverse = true;
		return 0;
	}
	/* GUP with no lock to drop: poll for a while, never wait. */
	deadline = jiffies + XPMEM_OWNER_POLL;
	do {
		if (fatal_signal_pending(current))
			return VM_FAULT_SIGBUS;
		cond_resched();
		if (mmap_read_trylock(owner))
			return 0;
	} while (time_before(jiffies, deadline));
	return VM_FAULT_SIGBUS;
}

/*
 * The owner's mmap_lock comes first and is contended: drop the attacher's,
 * take the owner's, then the attacher's, and resolve the fault if the
 * attachment is still mapped at the address.
 *
 * Return: the result, with the attacher's lock held again (after ->fault
 * returns, the core and the arch fault handlers use the mm, never the VMA,
 * which may have changed meanwhile); or VM_FAULT_RETRY with it dropped if
 * a fatal signal came or the address maps something else now.
 */
static vm_fault_t xpmem_fault_reversed(struct vm_fault *vmf,
				       struct mm_struct *owner,
				       unsigned long *pfns,
				       unsigned long maxpages)
{
	struct mm_struct *mm = vmf->vma->vm_mm;
	struct file *file = get_file(vmf->vma->vm_file);
	unsigned long address = vmf->address;
	vm_fault_t ret = VM_FAULT_RETRY;
	struct vm_area_struct *vma;

	atomic_long_inc(&xpmem_stats.fault_owner_waits);
	mmap_read_unlock(mm);
	if (mmap_read_lock_killable(owner))
		goto put_file;
	if (xpmem_mmap_read_lock_second(owner, mm))
		goto unlock_owner;
	/* the file pins the attachment; the VMA may be another one now */
	vma = vma_lookup(mm, address);
	if (vma && vma->vm_file == file) {
		struct vm_fault rvmf = {
			.vma = vma,
			.gfp_mask = vmf->gfp_mask,
			.pgoff = linear_page_index(vma, address),
			.address = address,
			.real_address = vmf->real_address,
			.flags = vmf->flags,
		};

		ret = xpmem_fault_resolve(&rvmf, owner, XPMEM_FAULT_PTE, pfns,
					  maxpages);
	} else {
		mmap_read_unlock(mm);
	}
unlock_owner:
	mmap_read_unlock(owner);
put_file:
	fput(file);
	if (ret & VM_FAULT_RETRY)
		cond_resched();	/* the arch code retries at once */
	return ret;
}

/*
 * The fault and the mkwrite handlers.  @mkwrite: the PTE exists read-only
 * and the attacher writes; make the owner's page writable and let the core
 * upgrade the PTE if it still maps that page.
 */
static vm_fault_t xpmem_fault_common(struct vm_fault *vmf, bool mkwrite)
{
	struct vm_area_struct *vma = vmf->vma;
	struct xpmem_att *att = vma->vm_private_data;
	struct mm_struct *owner = att->seg->mm;
	unsigned long stack_pfns[XPMEM_FAULT_STACK_PAGES];
	unsigned long *pfns = stack_pfns;
	enum xpmem_fault_kind kind = mkwrite ? XPMEM_FAULT_MKWRITE :
					       XPMEM_FAULT_PTE;
	unsigned long maxpages, oaddr;
	bool reverse = false;
	vm_fault_t ret;

	atomic_long_inc(&xpmem_stats.faults);
	/* A VMA copied into another mm (it cannot be: VM_DONTCOPY|VM_IO). */
	if (vma->vm_mm != att->mm || READ_ONCE(att->dead))
		return VM_FAULT_SIGBUS;
	/* (a page outside the mirrors is SIGBUS in xpmem_fault_resolve()) */
	if (mkwrite && xpmem_fault_mirror(vmf, &oaddr) &&
	    xpmem_fault_mkwrite_fast(vmf, att, oaddr))
		return VM_FAULT_NOPAGE;

	maxpages = mkwrite ? 1 : xpmem_fault_window_pages();
	if (maxpages > ARRAY_SIZE(stack_pfns)) {
		pfns = kmalloc_array(maxpages, sizeof(*pfns),
				     GFP_KERNEL | __GFP_NOWARN);
		if (!pfns) {
			/* a smaller window does as well */
			pfns = stack_pfns;
			maxpages = ARRAY_SIZE(stack_pfns);
		}
	}
	if (!mmget_not_zero(owner)) {
		ret = VM_FAULT_SIGBUS;		/* the owner has exited */
		goto free_pfns;
	}

	if (owner == vma->vm_mm) {
		ret = xpmem_fault_resolve(vmf, owner, kind, pfns, maxpages);
	} else {
		ret = xpmem_fault_lock_owner(vmf, owner, mkwrite, &reverse);
		if (reverse) {
			ret = xpmem_fault_reversed(vmf, owner, pfns, maxpages);
		} else if (!ret) {
			ret = xpmem_fault_resolve(vmf, owner, kind, pfns,
						  maxpages);
			mmap_read_unlock(owner);
		}
	}

	/* never exit_mmap() the owner from under the attacher's mmap_lock */
	mmput_async(owner);
free_pfns:
	if (pfns != stack_pfns)
		kfree(pfns);
	return ret;
}

static vm_fault_t xpmem_att_fault(struct vm_fault *vmf)
{
	return xpmem_fault_common(vmf, false);
}

static vm_fault_t xpmem_att_mkwrite(struct vm_fault *vmf)
{
	return xpmem_fault_common(vmf, true);
}

#ifdef XPMEM_HAVE_HUGE_PFNMAP
/**
 * xpmem_fault_huge_enabled - whether attachments get huge PMDs
 */
bool xpmem_fault_huge_enabled(void)
{
	return READ_ONCE(huge_mappings);
}

/*
 * ->huge_fault for a PMD: an empty PMD slot, or a write to our read-only
 * huge PMD.  Whatever cannot be one PMD falls back to PTEs (->fault),
 * including an owner mmap_lock that would have to be waited for out of
 * order (->fault knows how to).
 */
static vm_fault_t xpmem_att_huge_fault(struct vm_fault *vmf,
				       unsigned int order)
{
	struct vm_area_struct *vma = vmf->vma;
	struct xpmem_att *att = vma->vm_private_data;
	struct mm_struct *owner = att->seg->mm;
	unsigned long haddr = vmf->address & PMD_MASK;
	unsigned long *pfns, oaddr;
	vm_fault_t ret = VM_FAULT_FALLBACK;

	if (order != PMD_ORDER || !xpmem_fault_huge_enabled())
		return VM_FAULT_FALLBACK;
	/*
	 * The core calls ->huge_fault under the per-VMA lock alone (unlike
	 * ->fault and ->pfn_mkwrite, see vmf_can_call_fault()).  Waiting for
	 * an owner's mmap_lock under it could close a cycle with writers of
	 * both mms, and the owner's VMAs need the owner's mmap_lock anyway:
	 * drop it and have the fault retried under the mmap_lock.
	 */
	if (vmf->flags & FAULT_FLAG_VMA_LOCK) {
		vma_end_read(vma);
		return VM_FAULT_RETRY;
	}
	if (vma->vm_mm != att->mm || READ_ONCE(att->dead) ||
	    haddr < vma->vm_start || vma->vm_end - haddr < PMD_SIZE ||
	    !xpmem_fault_mirror(vmf, &oaddr) ||
	    !IS_ALIGNED(oaddr - (vmf->address - haddr), PMD_SIZE))
		return VM_FAULT_FALLBACK;
	pfns = kmalloc_array(PTRS_PER_PMD, sizeof(*pfns),
			     GFP_KERNEL | __GFP_NOWARN);
	if (!pfns)
		return VM_FAULT_FALLBACK;
	if (!mmget_not_zero(owner))
		goto free_pfns;
	if (owner == vma->vm_mm) {
		ret = xpmem_fault_resolve(vmf, owner, XPMEM_FAULT_PMD, pfns,
					  PTRS_PER_PMD);
	} else if (mmap_read_trylock(owner) ||
		   ((unsigned long)vma->vm_mm < (unsigned long)owner &&
		    !xpmem_mmap_read_lock_second(vma->vm_mm, owner))) {
		ret = xpmem_fault_resolve(vmf, owner, XPMEM_FAULT_PMD, pfns,
					  PTRS_PER_PMD);
		mmap_read_unlock(owner);
	}
	mmput_async(owner);
	/* a fallback is counted once, by ->fault */
	if (ret != VM_FAULT_FALLBACK)
		atomic_long_inc(&xpmem_stats.faults);
free_pfns:
	kfree(pfns);
	return ret;
}

/**
 * xpmem_att_get_unmapped_area - an attach address for the kernel to choose
 * @file: the attachment's file
 * @addr: the caller's hint or MAP_FIXED address
 * @len: the attachment's size
 * @pgoff: its segment offset in pages
 * @flags: mmap flags
 *
 * Congruent with the owner's address modulo 2 MiB when the attachment
 * spans at least 2 MiB, so that owner PMDs can be attacher PMDs.
 */
unsigned long xpmem_att_get_unmapped_area(struct file *file,
					  unsigned long addr,
					  unsigned long len,
					  unsigned long pgoff,
					  unsigned long flags)
{
	struct xpmem_att *att = file->private_data;
	unsigned long want, ret;

	if ((flags & MAP_FIXED) || len < PMD_SIZE ||
	    !xpmem_fault_huge_enabled() || len > TASK_SIZE - PMD_SIZE)
		return mm_get_unmapped_area(current->mm, NULL, addr, len, 0,
					    flags);
	want = xpmem_range_oaddr(&att->mirrors[0].r, pgoff << PAGE_SHIFT) &
	       ~PMD_MASK;
	ret = mm_get_unmapped_area(current->mm, NULL, addr, len + PMD_SIZE, 0,
				   flags);
	if (IS_ERR_VALUE(ret))
		return mm_get_unmapped_area(current->mm, NULL, addr, len, 0,
					    flags);
	return ret + ((want - ret) & ~PMD_MASK);
}
#else
bool xpmem_fault_huge_enabled(void)
{
	return false;
}
#endif

/* VMA count of an attachment: +1 on split or mremap copy, -1 on removal. */
static void xpmem_att_vma_open(struct vm_area_struct *vma)
{
	struct xpmem_att *att = vma->vm_private_data;

	atomic_inc(&att->nr_vmas);
}

static void xpmem_att_vma_close(struct vm_area_struct *vma)
{
	struct xpmem_att *att = vma->vm_private_data;

	atomic_dec(&att->nr_vmas);
}

/* The whole of @vma, were it placed where it is: does it mirror itself? */
static bool xpmem_vma_maps_itself(struct vm_area_struct *vma)
{
	struct xpmem_att *att = vma->vm_private_data;

	return xpmem_att_maps_itself(att->seg, vma->vm_mm,
				     vma->vm_start, vma->vm_pgoff << PAGE_SHIFT,
				     vma->vm_end - vma->vm_start);
}

/*
 * mremap() placed a piece of an attachment: never over its own source.
 * Called under the attacher's mmap_lock (write) and possibly the
 * attachment's i_mmap_rwsem (rmap locks); takes nothing and waits for
 * nothing.  The refused move is undone by the core, which moves the page
 * tables back over the old range: that invalidation finds no mapped
 * offsets there for any attachment of this one's VMA, so nobody waits.
 */
static int xpmem_att_vma_mremap(struct vm_area_struct *vma)
{
	return xpmem_vma_maps_itself(vma) ? -EINVAL : 0;
}

/*
 * Called under the attacher's mmap_lock (write), before the split takes
 * any i_mmap_rwsem; takes and waits for nothing.
 * A split keeps addresses, so it cannot create a self-mirror; refusing one
 * that exists anyway keeps the core from invalidating the attachment under
 * its own i_mmap_rwsem should a placement check ever be missed.
 */
static int xpmem_att_vma_may_split(struct vm_area_struct *vma,
				   unsigned long addr)
{
	return WARN_ON_ONCE(xpmem_vma_maps_itself(vma)) ? -EINVAL : 0;
}

const struct vm_operations_struct xpmem_vm_ops = {
	.open = xpmem_att_vma_open,
	.close = xpmem_att_vma_close,
	.mremap = xpmem_att_vma_mremap,
	.may_split = xpmem_att_vma_may_split,
	.fault = xpmem_att_fault,
#ifdef XPMEM_HAVE_HUGE_PFNMAP
	.huge_fault = xpmem_att_huge_fault,
#endif
	.pfn_mkwrite = xpmem_att_mkwrite,
};

/**
 * xpmem_fault_defer - run @work on the module's queue for waits the owner
 * can prolong (apart from the zap worker, which such work may wait for)
 * @work: the work
 */
void xpmem_fault_defer(struct work_struct *work)
{
	queue_work(xpmem_free_wq, work);
}

int xpmem_fault_init(void)
{
	xpmem_zero_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!xpmem_zero_page)
		return -ENOMEM;
	xpmem_zap_wq = alloc_workqueue("xpmem_zap", WQ_MEM_RECLAIM, 0);
	if (!xpmem_zap_wq)
		goto free_page;
	xpmem_free_wq = alloc_workqueue("xpmem_free", 0, 0);
	if (!xpmem_free_wq)
		goto destroy_zap;
	return 0;

destroy_zap:
	destroy_workqueue(xpmem_zap_wq);
free_page:
	__free_page(xpmem_zero_page);
	return -ENOMEM;
}

void xpmem_fault_exit(void)
{
	/* an attachment end may still be returning from its last put */
	destroy_workqueue(xpmem_free_wq);
	/* the owners' records are freed after an SRCU grace period */
	mmu_notifier_synchronize();
	destroy_workqueue(xpmem_zap_wq);
	__free_page(xpmem_zero_page);
}
