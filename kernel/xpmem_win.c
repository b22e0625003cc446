// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_win.c - what a fault in progress tells the invalidations of its
 * owner: its window, and the owner pages it found writable
 *
 * A fault lists its window (struct xpmem_win) on att->faults before it
 * resolves it; the invalidate callback (xpmem_mirror.c) marks every
 * listed window it overlaps (xpmem_win_mark_stale()), and the fault
 * commits only if its window is not marked (xpmem_win_stale()).  A write
 * fault also remembers the owner pages it found writable in the
 * attachment's writable-page table, so that the ->pfn_mkwrite that
 * follows needs no owner lock until an invalidation forgets them.  All of
 * it is under att->lock; nothing here waits for anything else or calls
 * any other file of the module.
 */
#include <linux/hash.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>

#include "xpmem_internal.h"
#include "compat.h"

/* ---- Windows of faults in progress -------------------------------------- */

/**
 * xpmem_win_begin - list a fault's window before it is resolved
 * @win: the window, zeroed, on the fault's stack
 * @m: the mirror it lies in
 * @owner: the owner's mm (hmm_range_fault() takes it from @win->changes)
 * @start: owner address
 * @end: owner address, past the window
 * @required_start: owner address, the start of what the fault cannot do
 *	without (the faulting page, or all of the window of a PMD)
 * @required_end: its end
 *
 * Listed before the first wait: an invalidation that marked nothing
 * because it came earlier is still waited for if it has not finished.
 * An invalidation of the required part starts the attempt over; one of
 * other pages only narrows the window's usable part.
 *
 * Context: may sleep; takes att->lock briefly.
 */
void xpmem_win_begin(struct xpmem_win *win, struct xpmem_mirror *m,
		     struct mm_struct *owner, unsigned long start,
		     unsigned long end, unsigned long required_start,
		     unsigned long required_end)
{
	struct xpmem_att *att = m->att;

	win->m = m;
	win->start = start;
	win->end = end;
	win->required_start = required_start;
	win->required_end = required_end;
	win->usable_start = start;
	win->usable_end = end;
	win->changes.mm = owner;
	mutex_lock(&att->lock);
	list_add(&win->node, &att->faults);
	mutex_unlock(&att->lock);
}

/**
 * xpmem_win_clear - forget what invalidations marked in the window
 * @win: a listed window
 *
 * Before an attempt: the window is whole and unmarked again.  The
 * invalidations that marked it may still be in flight; the caller waits
 * for them (xpmem_mirror_wait()).
 *
 * Context: may sleep; takes att->lock briefly, only if something was
 * marked.
 */
void xpmem_win_clear(struct xpmem_win *win)
{
	struct xpmem_att *att = win->m->att;

	/*
	 * A mark set after this test is seen by this attempt's commit, and
	 * so is a narrowed usable part (it keeps pages unmapped that the
	 * attempt might have mapped, never wrong); the invalidations that
	 * set what is cleared here are waited for by the caller if
	 * unfinished.
	 */
	if (mmu_interval_check_retry(&win->changes, 0) ||
	    READ_ONCE(win->usable_start) != win->start ||
	    READ_ONCE(win->usable_end) != win->end) {
		mutex_lock(&att->lock);
		mmu_interval_set_seq(&win->changes, 0);
		win->usable_start = win->start;
		win->usable_end = win->end;
		mutex_unlock(&att->lock);
	}
}

/**
 * xpmem_win_narrow - the fault needs only its own page now
 * @win: a listed window
 * @start: owner address, its required page
 * @end: past it
 *
 * The window becomes [@start, @end), under att->lock, where invalidations
 * read it.  That was its required part already, so a mark an
 * invalidation of it set stays; the pages it loses no longer concern the
 * fault.
 *
 * Context: may sleep; no att->lock held.
 */
void xpmem_win_narrow(struct xpmem_win *win, unsigned long start,
		      unsigned long end)
{
	struct xpmem_att *att = win->m->att;

	mutex_lock(&att->lock);
	win->start = start;
	win->end = end;
	win->usable_start = start;
	win->usable_end = end;
	mutex_unlock(&att->lock);
}

/**
 * xpmem_win_stale - did an invalidation overlap the window's required
 * part since xpmem_win_clear()?
 * @win: a listed window
 *
 * Context: under att->lock, where the answer holds until it is dropped.
 */
bool xpmem_win_stale(struct xpmem_win *win)
{
	lockdep_assert_held(&win->m->att->lock);
	return mmu_interval_check_retry(&win->changes, 0);
}

/**
 * xpmem_win_end - unlist the window
 * @win: a listed window
 * @locked: the caller holds att->lock
 */
void xpmem_win_end(struct xpmem_win *win, bool locked)
{
	struct xpmem_att *att = win->m->att;

	if (!locked)
		mutex_lock(&att->lock);
	lockdep_assert_held(&att->lock);
	list_del(&win->node);
	if (!locked)
		mutex_unlock(&att->lock);
}

/* ---- Owner pages known writable ----------------------------------------- */

/* att->writable_pages entries: owner address | XPMEM_WRITABLE_VALID */
#define XPMEM_WRITABLE_VALID	1UL

static struct xpmem_writable_page *
xpmem_win_writable_slot(struct xpmem_att *att, unsigned long oaddr)
{
	return &att->writable_pages[hash_long(oaddr >> PAGE_SHIFT,
					      XPMEM_WRITABLE_BITS)];
}

/**
 * xpmem_win_writable_remember - a write fault found the owner's page
 * writable
 * @att: the attachment
 * @oaddr: owner address of the page
 * @pfn: the page
 *
 * Remembered for the ->pfn_mkwrite that may follow, until an invalidation
 * touches @oaddr.  Under att->lock, window not stale.
 */
void xpmem_win_writable_remember(struct xpmem_att *att, unsigned long oaddr,
				 unsigned long pfn)
{
	struct xpmem_writable_page *w = xpmem_win_writable_slot(att, oaddr);

	lockdep_assert_held(&att->lock);
	w->oaddr = oaddr | XPMEM_WRITABLE_VALID;
	w->pfn = pfn;
}

/**
 * xpmem_win_writable_take - is the owner's page at @oaddr still known
 * writable?
 * @att: the attachment
 * @oaddr: owner address of the page
 * @pfn: the page the attacher's PTE names
 *
 * Forgets it on a hit (one ->pfn_mkwrite per write fault).  Under att->lock.
 */
bool xpmem_win_writable_take(struct xpmem_att *att, unsigned long oaddr,
			     unsigned long pfn)
{
	struct xpmem_writable_page *w = xpmem_win_writable_slot(att, oaddr);

	lockdep_assert_held(&att->lock);
	if (w->oaddr != (oaddr | XPMEM_WRITABLE_VALID) || w->pfn != pfn)
		return false;
	w->oaddr = 0;
	return true;
}

/* ---- Invalidation ------------------------------------------------------- */

/**
 * xpmem_win_mark_stale - an owner range [@start, @end) changes
 * @att: the attachment whose mirror the invalidation reached
 * @start: owner address
 * @end: owner address, past the range
 *
 * Faults in progress whose required part it overlaps start over, those
 * that only have it in their window leave it unmapped (their usable part
 * shrinks, by whole pages), and its pages are no longer known to be
 * writable.  Called by the invalidate callback.
 *
 * Context: under att->lock; waits for nothing, allocates nothing.
 */
void xpmem_win_mark_stale(struct xpmem_att *att, unsigned long start,
			  unsigned long end)
{
	struct xpmem_writable_page *w;
	struct xpmem_win *win;
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
