// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_fault.c - attacher page faults, and the VMAs they happen in
 *
 * A fault resolves a window around the faulting page (at most
 * fault_window_pages pages, or one PMD for ->huge_fault) in the owner's
 * mm with hmm_range_fault(), holding the owner's mmap_lock for reading,
 * until no invalidation overlapped the window (xpmem_fault_lock_stable(),
 * with the windows listed below), then commits it under att->lock in one
 * short step: PTEs, a PTE made writable, or a PMD (xpmem_map_commit()).
 * Every PTE is a special PFN PTE, so get_user_pages() never finds an
 * owner page through an attachment and nothing outlives an invalidation;
 * a page the owner maps read-only is never written through one.  The two
 * mmap_locks nest as the lock tree in xpmem_internal.h says.  The whole
 * story is in docs/design.md, "Mirror, do not pin" and what follows it.
 *
 * Reading order: xpmem_fault_common() (->fault and ->pfn_mkwrite), then
 * xpmem_fault_lock_owner() and xpmem_fault_reversed() (the owner's lock),
 * xpmem_fault_resolve() (one resolution: xpmem_fault_setup(), then
 * xpmem_fault_lock_stable() and xpmem_fault_try(), then xpmem_map_commit()
 * in xpmem_map.c); ->huge_fault last.  The windows a fault lists for
 * invalidations to mark are xpmem_window.c.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hmm.h>
#include <linux/jiffies.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/swap.h>
#include <linux/slab.h>
#include <linux/userfaultfd_k.h>

#include "xpmem_internal.h"
#include "compat.h"

/* Fault window entries kept on the stack; larger windows use kmalloc. */
#define XPMEM_FAULT_STACK_PAGES	32

/*
 * Attempts inside one fault before it gives the CPU back by returning
 * VM_FAULT_NOPAGE (the access is simply repeated): an owner that keeps
 * changing the attached range cannot make a fault spin forever.
 */
#define XPMEM_FAULT_MAX_RETRIES	8

/*
 * How long a fault that cannot drop the attacher's mmap_lock (GUP without
 * FAULT_FLAG_ALLOW_RETRY) polls for a contended owner mmap_lock before it
 * fails with SIGBUS (EFAULT to the GUP caller).
 */
#define XPMEM_OWNER_POLL	(HZ / 10)

static unsigned int fault_window_pages = PTRS_PER_PTE;
module_param(fault_window_pages, uint, 0644);
MODULE_PARM_DESC(fault_window_pages,
		 "Pages mapped per attacher fault when the owner has them resident (1 up to one page table's worth, a power of two; default one page table: 512 with 4 KiB pages, 8192 with 64 KiB pages)");

#ifdef XPMEM_HAVE_HUGE_PFNMAP
static bool huge_mappings = true;
module_param(huge_mappings, bool, 0644);
MODULE_PARM_DESC(huge_mappings,
		 "Map owner PMD mappings (THP, hugetlb) with one PMD in attachments, and choose PMD-congruent attach addresses (PMD: 2 MiB with 4 KiB pages, 512 MiB with 64 KiB pages; default Y)");
#endif

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

/**
 * xpmem_fault_vma_is_att - is @vma an attachment of this module?
 * @vma: any VMA
 */
bool xpmem_fault_vma_is_att(struct vm_area_struct *vma)
{
	return vma->vm_ops == &xpmem_fault_vm_ops;
}

/*
 * @mm's mmap_lock for reading while @held's is held: the second of two
 * (see the lock tree in xpmem_internal.h; lockdep sees one class and
 * cannot check the order, so it is asserted here).
 * Return: 0, or -EINTR on a fatal signal.
 */
static int xpmem_fault_lock_second_mm(struct mm_struct *held,
				      struct mm_struct *mm)
{
	WARN_ON_ONCE((unsigned long)held >= (unsigned long)mm);
	return down_read_killable_nested(&mm->mmap_lock, SINGLE_DEPTH_NESTING);
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

/* ---- Resolving a fault -------------------------------------------------- */

/*
 * xpmem_fault_settle - clear the window's mark and wait until it can be
 * resolved
 * @win: a listed window
 *
 * Before an attempt: the window is whole and unmarked again, and the
 * invalidations in flight that overlap it (which may have marked it) are
 * waited for (xpmem_mirror_wait()).
 *
 * Context: may sleep; no att->lock held.
 * Return: 0, or -EINTR on a fatal signal.
 */
static int xpmem_fault_settle(struct xpmem_window *win)
{
	xpmem_window_reset(win);
	return xpmem_mirror_wait(win->m, win->start, win->end);
}

#ifdef XPMEM_HAVE_HUGE_PFNMAP
/*
 * Whether the owner maps the 2 MiB at @haddr with a page table of PTEs:
 * then no PMD can mirror it, and resolving 512 pages only to fall back
 * would double the cost of every fault on 4 KiB owner memory.  A hint
 * (the slot may change the moment it is read; a wrong answer costs one
 * fallback or one wasted resolution); under the owner's mmap_lock, so the
 * tables above the slot stay.
 */
static bool xpmem_fault_owner_maps_ptes(struct mm_struct *owner,
					unsigned long haddr)
{
	pmd_t *pmd = xpmem_map_find_pmd(owner, haddr);
	pmd_t val;

	if (!pmd)
		return false;
	val = pmdp_get_lockless(pmd);
	return pmd_present(val) && !pmd_leaf(val);
}

#else
static bool xpmem_fault_owner_maps_ptes(struct mm_struct *owner,
					unsigned long haddr)
{
	return true;
}

#endif

/*
 * The 2 MiB window of a PMD fault, if the owner VMA and the mirror cover
 * all of it and the owner does not map it with PTEs.
 */
static bool xpmem_fault_pmd_window(struct vm_fault *vmf,
				   struct xpmem_mirror *m,
				   struct vm_area_struct *ovma,
				   struct mm_struct *owner,
				   unsigned long oaddr, unsigned long *lo,
				   unsigned long *hi)
{
	*lo = vmf->address & PMD_MASK;
	*hi = *lo + PMD_SIZE;
	return oaddr - (vmf->address - *lo) >= ovma->vm_start &&
	       ovma->vm_end - oaddr >= *hi - vmf->address &&
	       oaddr - (vmf->address - *lo) >= m->r.oaddr &&
	       m->r.oaddr + m->r.len - oaddr >= *hi - vmf->address &&
	       !xpmem_fault_owner_maps_ptes(owner, oaddr & PMD_MASK);
}

/*
 * Choose @f's window in the owner VMA and the mirror it faults in, and
 * list it.  Return: 0, or what the fault returns.
 */
static vm_fault_t xpmem_fault_setup(struct xpmem_fault *f,
				    struct mm_struct *owner,
				    unsigned long maxpages)
{
	struct vm_fault *vmf = f->vmf;
	struct vm_area_struct *ovma;
	struct xpmem_mirror *m;

	m = xpmem_mirror_find(vmf, &f->oaddr);
	if (!m)
		return VM_FAULT_SIGBUS;
	ovma = vma_lookup(owner, f->oaddr);
	if (!ovma || !xpmem_mirror_vma_ok(ovma))
		return f->kind == XPMEM_FAULT_PMD ? VM_FAULT_FALLBACK :
						    VM_FAULT_SIGBUS;
	if (f->kind != XPMEM_FAULT_PMD)
		xpmem_fault_window(vmf, m, ovma, f->oaddr, maxpages, &f->lo,
				   &f->hi);
	else if (!xpmem_fault_pmd_window(vmf, m, ovma, owner, f->oaddr,
					 &f->lo, &f->hi))
		return VM_FAULT_FALLBACK;
	f->fidx = (vmf->address - f->lo) >> PAGE_SHIFT;
	f->off = xpmem_att_seg_off(f->att, vmf->pgoff - f->fidx);
	f->range.start = f->oaddr - (f->fidx << PAGE_SHIFT);
	f->range.end = f->range.start + (f->hi - f->lo);
	f->range.hmm_pfns = f->pfns;
	/* hmm faults nothing there: xpmem_userfault_handle() does */
	f->look_only = userfaultfd_armed(ovma);
	if (!f->look_only)
		f->range.pfn_flags_mask = HMM_PFN_REQ_FAULT | HMM_PFN_REQ_WRITE;
	/* the window's own sequence: see struct xpmem_window */
	f->range.notifier = &f->win.changes;
	f->range.notifier_seq = 0;
	/* a PMD fault needs all of its window, the others their page */
	if (f->kind != XPMEM_FAULT_PMD)
		xpmem_window_begin(&f->win, m, owner, f->range.start,
				   f->range.end, f->oaddr & PAGE_MASK,
				   (f->oaddr & PAGE_MASK) + PAGE_SIZE);
	else
		xpmem_window_begin(&f->win, m, owner, f->range.start,
				   f->range.end, f->range.start, f->range.end);
	return 0;
}

/*
 * Under att->lock, the window not stale: keep only the part of it around
 * the faulting page that no invalidation touched since the attempt began
 * (the window's usable part, which lies inside f->range).
 */
static void xpmem_fault_trim(struct xpmem_fault *f)
{
	unsigned long start = f->win.usable_start, end = f->win.usable_end;
	unsigned long skip;

	lockdep_assert_held(&f->att->lock);
	skip = (start - f->range.start) >> PAGE_SHIFT;
	f->lo += start - f->range.start;
	f->hi -= f->range.end - end;
	f->off += start - f->range.start;
	f->fidx -= skip;
	f->pfns += skip;
}

/*
 * hmm_range_fault() faults every page from the first one that needs it to
 * the end of its walk, and fails the whole range if any of them fails: a
 * page of the owner's file mapping past the end of its file (SIGBUS for
 * the owner too), a guard page (MADV_GUARD_INSTALL), or one it cannot
 * fault now (no memory in its cgroup, no space for a filesystem's
 * ->page_mkwrite).  Such a neighbour must not fail the faulting page, so
 * the window shrinks to that page alone, which then fails only for its
 * own reasons.  The listed window shrinks with it (xpmem_window_narrow(),
 * att->lock briefly).  Not for a PMD fault, which needs its whole window.
 * Return: false if the window was that page already.
 */
static bool xpmem_fault_narrow(struct xpmem_fault *f)
{
	if (f->hi - f->lo == PAGE_SIZE)
		return false;
	f->lo += f->fidx << PAGE_SHIFT;
	f->hi = f->lo + PAGE_SIZE;
	f->off += f->fidx << PAGE_SHIFT;
	f->pfns += f->fidx;
	f->range.start += f->fidx << PAGE_SHIFT;
	f->range.end = f->range.start + PAGE_SIZE;
	f->range.hmm_pfns = f->pfns;
	f->fidx = 0;
	xpmem_window_narrow(&f->win, f->range.start, f->range.end);
	return true;
}

/*
 * One attempt: the owner's pages of the window, the attacher's tables
 * for them, then att->lock (after att->pt_lock for a PMD).
 *
 * Return: 0 with the locks held and the window not stale; -EBUSY if an
 * invalidation marked the window; -EAGAIN if a huge PMD took the slot
 * meanwhile; -EFAULT if the owner could not fault a page of the window
 * (the caller narrows it, xpmem_fault_narrow()), or the faulting page
 * needs a fault in a VMA under userfaultfd (look_only); -ENOMEM; or
 * another error (SIGBUS).
 */
static int xpmem_fault_try(struct xpmem_fault *f)
{
	struct xpmem_att *att = f->att;
	bool pmd = f->kind == XPMEM_FAULT_PMD;
	int err;

	memset(f->pfns, 0, ((f->hi - f->lo) >> PAGE_SHIFT) * sizeof(*f->pfns));
	f->pfns[f->fidx] = HMM_PFN_REQ_FAULT |
			   (f->write ? HMM_PFN_REQ_WRITE : 0);
	err = hmm_range_fault(&f->range);
	if (err)
		return err;
	if (f->look_only && (!(f->pfns[f->fidx] & HMM_PFN_VALID) ||
			     (f->write && !(f->pfns[f->fidx] & HMM_PFN_WRITE))))
		return -EFAULT;
	if (f->kind == XPMEM_FAULT_PTE) {
		err = xpmem_map_prepare_pt(f->vmf);
		if (err)
			return err;
	} else if (pmd) {
		mutex_lock(&att->pt_lock);
	}
	if (f->kind != XPMEM_FAULT_MKWRITE) {
		err = xpmem_zap_mapped_prepare(att, f->off, f->hi - f->lo);
		if (err)
			goto unlock_pt;
	}
	mutex_lock(&att->lock);
	if (!xpmem_window_stale(&f->win)) {
		xpmem_fault_trim(f);
		return 0;
	}
	mutex_unlock(&att->lock);
	err = -EBUSY;
unlock_pt:
	if (pmd)
		mutex_unlock(&att->pt_lock);
	return err;
}

/*
 * The retry loop: attempts until one finds the window unchanged.  A fault
 * that keeps meeting invalidations gives the CPU back after
 * XPMEM_FAULT_MAX_RETRIES (the access is repeated), and a fatal signal
 * ends it.
 *
 * Return: 0 with att->lock held (and att->pt_lock for a PMD), or what
 * the fault returns.
 */
static vm_fault_t xpmem_fault_lock_stable(struct xpmem_fault *f)
{
	unsigned int tries = 0;
	int err;

	for (;;) {
		if (xpmem_fault_settle(&f->win))
			return VM_FAULT_SIGBUS;		/* killed */
		err = xpmem_fault_try(f);
		if (err == -EFAULT && f->kind == XPMEM_FAULT_PMD)
			return VM_FAULT_FALLBACK;	/* page by page */
		if (err == -EFAULT && xpmem_fault_narrow(f))
			continue;
		if (err != -EBUSY)
			break;
		atomic_long_inc(&xpmem_stats.fault_seq_retries);
		if (fatal_signal_pending(current))
			return VM_FAULT_SIGBUS;
		cond_resched();
		if (++tries >= XPMEM_FAULT_MAX_RETRIES)
			return f->kind == XPMEM_FAULT_PMD ? VM_FAULT_FALLBACK :
							    VM_FAULT_NOPAGE;
	}
	switch (err) {
	case 0:
		return 0;
	case -EAGAIN:
		return VM_FAULT_NOPAGE;
	case -ENOMEM:
		return VM_FAULT_OOM;
	default:
		return VM_FAULT_SIGBUS;
	}
}

/*
 * Resolve the fault and map its window.  The caller holds the owner's
 * mmap_lock for reading (it is the attacher's own for an attachment of
 * the faulting process itself), so only invalidations that need no
 * mmap_lock for writing (madvise, reclaim, migration) can overlap it.
 * @maxpages (a power of two; PTRS_PER_PMD for a PMD) bounds and aligns the
 * window; @pfns has room for that many entries, or for all of the
 * attachment's pages if it has fewer (a window lies within one mirror).
 */
static vm_fault_t xpmem_fault_resolve(struct vm_fault *vmf,
				      struct mm_struct *owner,
				      enum xpmem_fault_kind kind,
				      unsigned long *pfns, unsigned long maxpages)
{
	struct xpmem_fault f = {
		.vmf = vmf,
		.att = vmf->vma->vm_private_data,
		.kind = kind,
		.write = kind == XPMEM_FAULT_MKWRITE ||
			 (vmf->flags & FAULT_FLAG_WRITE),
		.pfns = pfns,
	};
	bool zap = false;
	vm_fault_t ret;

	ret = xpmem_fault_setup(&f, owner, maxpages);
	if (ret)
		return ret;
	ret = xpmem_fault_lock_stable(&f);
	if (ret) {
		xpmem_window_end(&f.win, false);
		return ret;
	}
	ret = xpmem_map_commit(&f, &zap);
	xpmem_window_end(&f.win, true);
	mutex_unlock(&f.att->lock);
	if (kind == XPMEM_FAULT_PMD)
		mutex_unlock(&f.att->pt_lock);
	if (!zap)
		return ret;
	/*
	 * The written PTE names another page than the one the owner maps
	 * writable there now (our zero page, a page the owner replaced or
	 * COW-broke since): it goes, and this same fault then resolves the
	 * page as a write ->fault does and maps it writable.  Returning after
	 * the zap alone would repeat the access on nothing but the hope that
	 * it reaches ->fault next; a read fault of another thread in between
	 * would put a read-only PTE back and this branch could come round
	 * again without end.  Now the access this fault repeats finds the
	 * owner's page writable, or no PTE (the owner changed the page
	 * meanwhile: then the next fault maps the new one), or a PTE another
	 * fault mapped since, which names the owner's current page: each
	 * repeat of this branch follows a change of the owner's page.  The
	 * second resolution is a PTE fault, which never zaps: one zap per
	 * ->pfn_mkwrite.
	 */
	xpmem_zap_att(f.att, xpmem_att_seg_off(f.att, vmf->pgoff), PAGE_SIZE);
	return xpmem_fault_resolve(vmf, owner, XPMEM_FAULT_PTE, pfns, maxpages);
}

/*
 * Take the owner's mmap_lock for reading without ever waiting for it
 * out of order (see the lock tree in xpmem_internal.h).
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
		if (xpmem_fault_lock_second_mm(mm, owner))
			return VM_FAULT_SIGBUS;		/* killed */
		return 0;
	}
	if (mkwrite) {
		/*
		 * The next access takes ->fault, which may drop the lock: it
		 * finds no PTE, and ->fault never zaps, so this branch comes
		 * again only after another fault mapped the page read-only,
		 * which needed the owner's lock and so found it free.
		 */
		xpmem_zap_att(att, xpmem_att_seg_off(att, vmf->pgoff),
			      PAGE_SIZE);
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
 * attachment is still mapped at the address.  The fault holds the
 * attachment meanwhile (xpmem_end_hold()), so the VMA found again is
 * checked against the same attachment, never a new one at the same
 * address; if its hold is the last, the attachment ends here, after both
 * mmap_locks were dropped or with only the attacher's held again.  Both
 * lock waits are killable.
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
	struct xpmem_att *att = vmf->vma->vm_private_data;
	unsigned long address = vmf->address;
	vm_fault_t ret = VM_FAULT_RETRY;
	struct vm_area_struct *vma;

	atomic_long_inc(&xpmem_stats.fault_owner_waits);
	xpmem_end_hold(att);
	mmap_read_unlock(mm);
	if (mmap_read_lock_killable(owner))
		goto put_att;
	if (xpmem_fault_lock_second_mm(owner, mm))
		goto unlock_owner;
	/* held, att is still the same one; the VMA may be another one now */
	vma = vma_lookup(mm, address);
	if (vma && xpmem_fault_vma_is_att(vma) && vma->vm_private_data == att) {
		struct vm_fault rvmf = xpmem_vmf_again(vmf, vma);

		ret = xpmem_fault_resolve(&rvmf, owner, XPMEM_FAULT_PTE, pfns,
					  maxpages);
		if (xpmem_userfault_handle(&rvmf, owner, false, &ret))
			goto put_att;
	} else {
		mmap_read_unlock(mm);
	}
unlock_owner:
	mmap_read_unlock(owner);
put_att:
	xpmem_end_put(att);
	if (ret & VM_FAULT_RETRY)
		cond_resched();	/* the arch code retries at once */
	return ret;
}

/**
 * xpmem_fault_common - the ->fault and ->pfn_mkwrite handlers
 * @vmf: the fault, in an attachment VMA
 * @mkwrite: the PTE exists read-only and the attacher writes: make the
 *	owner's page writable and the PTE with it if it still maps that page,
 *	and the window's other read-only PTEs of pages the owner maps writable
 *
 * Maps only owner VMAs that are not attachments (xpmem_mirror_vma_ok()),
 * never a mirror of a mirror (a mkwrite's upgrade only makes writable
 * PTEs this attachment's faults placed); commits under att->lock after
 * checking att->dead and the window, so a REMOVE or RELEASE that marked
 * the attachment dead is seen and an invalidation after the commit zaps.
 *
 * Context:
 * - held on entry: the attacher's mmap_lock for reading (never the per-VMA
 *   lock: no ->map_pages); never an i_mmap_rwsem or a folio lock.
 * - takes: the owner's mmap_lock for reading, in address order only (see
 *   the lock tree in xpmem_internal.h; xpmem_fault_lock_owner()), then
 *   att->pt_lock and att->lock, each held by others only briefly.
 * - may wait for, killably: the owner's mmap_lock, the owner's
 *   invalidations in flight over the window and, for a new mirror, those
 *   in flight at its insertion (xpmem_fault_settle()), the owner's
 *   userfaultfd handler with no mmap_lock held (xpmem_userfault_handle()).
 * - may wait for, bounded: the owner's own page faults in hmm_range_fault(),
 *   the owner folios' ->dirty_folio (xpmem_head_mark_dirty()), the zap
 *   worker (a mkwrite's one page); a window the owner cannot fault, or a
 *   mkwrite on a stale PTE, repeats these once for one page.  Nothing the
 *   owner does keeps it in an uninterruptible sleep longer than one step.
 * - a revoked attachment: only what xpmem_zero_fault() says.
 * Return: VM_FAULT_NOPAGE, VM_FAULT_RETRY (the attacher's mmap_lock
 * dropped), VM_FAULT_SIGBUS, VM_FAULT_OOM or the owner fault's error.
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
	if (vma->vm_mm != att->mm)
		return VM_FAULT_SIGBUS;
	if (READ_ONCE(att->dead))	/* revoked: SIGBUS, or zeros */
		return xpmem_zero_fault(vmf, mkwrite);
	/* (a page outside the mirrors is SIGBUS in xpmem_fault_resolve()) */
	if (mkwrite && xpmem_mirror_find(vmf, &oaddr) &&
	    xpmem_map_mkwrite_fast(vmf, att, oaddr))
		return VM_FAULT_NOPAGE;

	maxpages = xpmem_fault_window_pages();
	/* a window lies within one mirror, so within the attachment */
	if (maxpages > ARRAY_SIZE(stack_pfns) &&
	    att->size > ARRAY_SIZE(stack_pfns) << PAGE_SHIFT) {
		pfns = kmalloc_array(maxpages, sizeof(*pfns),
				     GFP_KERNEL | __GFP_NOWARN);
		if (!pfns) {
			/* a smaller window does as well */
			pfns = stack_pfns;
			maxpages = ARRAY_SIZE(stack_pfns);
		}
	}
	if (!mmget_not_zero(owner)) {
		/* the owner has exited: revoked, whether marked yet or not */
		ret = xpmem_zero_fault(vmf, mkwrite);
		goto free_pfns;
	}

	if (owner == vma->vm_mm) {
		ret = xpmem_fault_resolve(vmf, owner, kind, pfns, maxpages);
		xpmem_userfault_handle(vmf, owner, mkwrite, &ret);
	} else {
		ret = xpmem_fault_lock_owner(vmf, owner, mkwrite, &reverse);
		if (reverse) {
			ret = xpmem_fault_reversed(vmf, owner, pfns, maxpages);
		} else if (!ret) {
			ret = xpmem_fault_resolve(vmf, owner, kind, pfns,
						  maxpages);
			if (!xpmem_userfault_handle(vmf, owner, mkwrite, &ret))
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

static vm_fault_t xpmem_fault_vma_fault(struct vm_fault *vmf)
{
	return xpmem_fault_common(vmf, false);
}

static vm_fault_t xpmem_fault_vma_mkwrite(struct vm_fault *vmf)
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
static vm_fault_t xpmem_fault_vma_huge_fault(struct vm_fault *vmf,
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
	    !xpmem_mirror_find(vmf, &oaddr) ||
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
		    !xpmem_fault_lock_second_mm(vma->vm_mm, owner))) {
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
 * xpmem_fault_get_unmapped_area - an attach address for the kernel to choose
 * @file: the ctx's pseudo file
 * @addr: the caller's hint or MAP_FIXED address
 * @len: the attachment's size
 * @pgoff: its file offset in pages
 * @flags: mmap flags
 *
 * Congruent with the file offset modulo PMD_SIZE (2 MiB with 4 KiB pages)
 * when the attachment spans at least that: ATTACH chose a file offset
 * congruent with the owner's address (xpmem_attach.c), so that owner PMDs
 * can be attacher PMDs.  Called under the attacher's mmap_lock by mmap;
 * reads only its arguments, takes and waits for nothing.  Whether the
 * address it picks lies over the attachment's own source is checked by
 * xpmem_attach_mmap() right after.
 */
unsigned long xpmem_fault_get_unmapped_area(struct file *file,
					    unsigned long addr,
					    unsigned long len,
					    unsigned long pgoff,
					    unsigned long flags)
{
	unsigned long want, ret;

	if ((flags & MAP_FIXED) || len < PMD_SIZE ||
	    !xpmem_fault_huge_enabled() || len > TASK_SIZE - PMD_SIZE)
		return xpmem_get_unmapped_area(addr, len, flags);
	want = (pgoff << PAGE_SHIFT) & ~PMD_MASK;
	ret = xpmem_get_unmapped_area(addr, len + PMD_SIZE, flags);
	if (IS_ERR_VALUE(ret))
		return xpmem_get_unmapped_area(addr, len, flags);
	return ret + ((want - ret) & ~PMD_MASK);
}
#else
bool xpmem_fault_huge_enabled(void)
{
	return false;
}
#endif

/*
 * VMA count of an attachment, and the VMAs' holds of it (xpmem_end.c):
 * +1 on split or mremap copy, -1 on removal.  ->open is called under the
 * attacher's mmap_lock (write), possibly with the i_mmap_rwsem of the
 * ctx's file held; it only counts (two atomics): takes no lock, waits for
 * nothing, allocates nothing, touches no owner memory.  It keeps the
 * VMA's addresses (a split) or the core has just checked the new ones
 * (->mremap refuses a self-mirror), so it places nothing.
 */
static void xpmem_fault_vma_open(struct vm_area_struct *vma)
{
	struct xpmem_att *att = vma->vm_private_data;

	atomic_inc(&att->nr_vmas);
	xpmem_end_hold(att);
}

/*
 * The last VMA of an attachment gone (munmap, DETACH, exit, a failed
 * mmap) ends it unless someone else holds it (DETACH and ATTACH do, so
 * their end runs in them with no lock held).  Called under the attacher's
 * mmap_lock (but in exit_mmap() before 6.1), never under an i_mmap_rwsem
 * or a folio lock (the core has unlinked the VMA from its file first).
 * May wait for what xpmem_end_put() waits for: permit->lock,
 * seg->att_lock and user->lock, mutexes whose holders never wait for an
 * mmap_lock, an i_mmap_rwsem the core holds here, or a folio lock - RELEASE
 * and REMOVE hold the first two across zaps, which take only the
 * attachments' files' i_mmap_rwsem (read) and page table locks, for a
 * bounded time - so an owner of another user can delay this unmap or
 * exit only by the length of its one REMOVE's zaps, never at will.  Maps
 * nothing, touches no owner memory (no placement or revocation question),
 * allocates nothing; the work it queues owns the attachment
 * (xpmem_end.c).
 */
static void xpmem_fault_vma_close(struct vm_area_struct *vma)
{
	struct xpmem_att *att = vma->vm_private_data;

	atomic_dec(&att->nr_vmas);
	xpmem_end_put(att);
}

/* The whole of @vma, were it placed where it is: does it mirror itself? */
static bool xpmem_fault_vma_maps_itself(struct vm_area_struct *vma)
{
	struct xpmem_att *att = vma->vm_private_data;

	return xpmem_mirror_maps_itself(att->seg, vma->vm_mm, vma->vm_start,
					xpmem_att_seg_off(att, vma->vm_pgoff),
					vma->vm_end - vma->vm_start);
}

/*
 * mremap() placed a piece of an attachment: never over its own source.
 * Called under the attacher's mmap_lock (write) and possibly the
 * i_mmap_rwsem of its ctx's pseudo file (rmap locks); takes nothing and
 * waits for nothing.  The refused move is undone by the core, which moves the page
 * tables back over the old range: that invalidation finds no mapped
 * offsets there for any attachment of this one's VMA, so nobody waits.
 */
static int xpmem_fault_vma_mremap(struct vm_area_struct *vma)
{
	return xpmem_fault_vma_maps_itself(vma) ? -EINVAL : 0;
}

/*
 * Called under the attacher's mmap_lock (write), before the split takes
 * any i_mmap_rwsem; takes and waits for nothing.
 * A split keeps addresses, so it cannot create a self-mirror; refusing one
 * that exists anyway keeps the core from invalidating the attachment under
 * its own i_mmap_rwsem should a placement check ever be missed.
 */
static int xpmem_fault_vma_may_split(struct vm_area_struct *vma,
				     unsigned long addr)
{
	return WARN_ON_ONCE(xpmem_fault_vma_maps_itself(vma)) ? -EINVAL : 0;
}

const struct vm_operations_struct xpmem_fault_vm_ops = {
	.open = xpmem_fault_vma_open,
	.close = xpmem_fault_vma_close,
	.mremap = xpmem_fault_vma_mremap,
	.XPMEM_VM_OPS_MAY_SPLIT = xpmem_fault_vma_may_split,
	.fault = xpmem_fault_vma_fault,
#ifdef XPMEM_HAVE_HUGE_PFNMAP
	.huge_fault = xpmem_fault_vma_huge_fault,
#endif
	.pfn_mkwrite = xpmem_fault_vma_mkwrite,
};
