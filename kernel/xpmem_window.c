// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_window.c - the windows of faults in progress: what a fault lists
 * on its attachment before it resolves a window of the owner (struct
 * xpmem_window), and what an invalidation of the owner marks there.
 *
 * A fault lists its window (xpmem_window_begin()), clears it before each
 * attempt (xpmem_window_reset()), and tests it under att->lock before it
 * commits (xpmem_window_stale()); the invalidate callback, under the same
 * lock, marks the windows it overlaps (xpmem_window_mark()): an
 * invalidation of a window's required part starts the attempt over, one
 * of its other pages only narrows what the attempt may map.  The fault is
 * xpmem_fault.c, the callback xpmem_mirror.c; this file calls neither.
 */
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>

#include "xpmem_internal.h"

/**
 * xpmem_window_begin - list a fault's window before it is resolved
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
void xpmem_window_begin(struct xpmem_window *win, struct xpmem_mirror *m,
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
 * xpmem_window_reset - clear the window's mark before an attempt
 * @win: a listed window
 *
 * The window is whole and unmarked again; the caller then waits for the
 * invalidations in flight that overlap it (the mirror's wait), which
 * may have marked it.
 *
 * Context: may sleep; no att->lock held (it takes it briefly, only if
 * something was marked).
 */
void xpmem_window_reset(struct xpmem_window *win)
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
 * xpmem_window_narrow - the fault needs only its own page now
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
void xpmem_window_narrow(struct xpmem_window *win, unsigned long start,
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
 * xpmem_window_stale - did an invalidation overlap the window's required
 * part since xpmem_window_settle()?
 * @win: a listed window
 *
 * Context: under att->lock, where the answer holds until it is dropped.
 */
bool xpmem_window_stale(struct xpmem_window *win)
{
	lockdep_assert_held(&win->m->att->lock);
	return mmu_interval_check_retry(&win->changes, 0);
}

/**
 * xpmem_window_end - unlist the window
 * @win: a listed window
 * @locked: the caller holds att->lock
 */
void xpmem_window_end(struct xpmem_window *win, bool locked)
{
	struct xpmem_att *att = win->m->att;

	if (!locked)
		mutex_lock(&att->lock);
	lockdep_assert_held(&att->lock);
	list_del(&win->node);
	if (!locked)
		mutex_unlock(&att->lock);
}

/**
 * xpmem_window_mark - an owner range [@start, @end) changes
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
void xpmem_window_mark(struct xpmem_att *att, unsigned long start,
		       unsigned long end)
{
	struct xpmem_writable_page *w;
	struct xpmem_window *win;
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
