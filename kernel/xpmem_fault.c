// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_fault.c - attacher page faults, and the VMAs they happen in
 *
 * A fault resolves a window around the faulting page (at most
 * fault_window_pages pages, or one PMD for ->huge_fault) in the owner's
 * mm with hmm_range_fault(), holding the owner's mmap_lock for reading,
 * until no invalidation overlapped the window (xpmem_fault_lock_stable(),
 * with xpmem_mirror.c's windows), then commits it under att->lock in one
 * short step: PTEs, a PTE made writable, or a PMD (xpmem_fault_commit()).
 * Every PTE is a special PFN PTE, so get_user_pages() never finds an
 * owner page through an attachment and nothing outlives an invalidation;
 * a page the owner maps read-only is never written through one.  The two
 * mmap_locks nest only as xpmem_internal.h says.  The whole story is in
 * docs/design.md, "Mirror, do not pin" and what follows it.
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
		 "Pages mapped per attacher fault when the owner has them resident (1..512, power of two; default 512 = one PMD)");

#ifdef XPMEM_HAVE_HUGE_PFNMAP
static bool huge_mappings = true;
module_param(huge_mappings, bool, 0644);
MODULE_PARM_DESC(huge_mappings,
		 "Map owner PMD mappings (THP, hugetlb) with one PMD in attachments, and choose 2 MiB-congruent attach addresses (default Y)");
#endif

/*
 * Mapped instead of the shared zero page, which vmf_insert_mixed()
 * refuses in writable mappings: reads of memory the owner never wrote see
 * zeroes and allocate nothing in the owner.  Read-only, never written.
 */
static struct page *xpmem_zero_page;

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
	if (xpmem_file_is_secretmem(file))
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
	struct page *head;

	if (!pfn_valid(pfn) || is_zero_pfn(pfn))
		return;
	head = compound_head(pfn_to_page(pfn));
	/*
	 * The window is not stale and att->lock held, so the owner still maps
	 * the page (truncation and unmapping wait in our invalidate
	 * callback): its mapping is alive, as the page table lock would
	 * guarantee for the owner's own write fault.
	 */
	if (write)
		xpmem_head_mark_dirty(head);
	xpmem_head_mark_accessed(head);
}

/*
 * A write fault maps the owner-writable pages of its window writable:
 * their folios become dirty first, as if the attacher had written each
 * (it may, without another fault).  Accessed is the faulting page's alone.
 */
static void xpmem_fault_dirty_window(const unsigned long *pfns,
				     unsigned long npages)
{
	struct page *head, *last = NULL;
	unsigned long i, pfn;

	for (i = 0; i < npages; i++) {
		pfn = xpmem_hmm_pfn(pfns[i]);
		if (!(pfns[i] & HMM_PFN_VALID) || (pfns[i] & HMM_PFN_ERROR) ||
		    !(pfns[i] & HMM_PFN_WRITE) || !pfn_valid(pfn) ||
		    is_zero_pfn(pfn))
			continue;
		head = compound_head(pfn_to_page(pfn));
		if (head != last)
			xpmem_head_mark_dirty(head);
		last = head;
	}
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

/*
 * apply_to_page_range() under att->lock, on a page table the caller saw
 * (a PMD that points to a table): nothing is allocated, unless the
 * attacher's own MADV_DONTNEED freed the emptied table meanwhile
 * (CONFIG_PT_RECLAIM, 6.13).  Then the new table is allocated without
 * direct reclaim, which could call the invalidate callback and take
 * att->lock again.  (apply_to_existing_page_range(), which would skip
 * it, is not exported from 7.x on.)
 */
static int xpmem_apply_locked(struct mm_struct *mm, unsigned long addr,
			      unsigned long size, pte_fn_t fn, void *data)
{
	unsigned int noreclaim = memalloc_noreclaim_save();
	int ret;

	ret = apply_to_page_range(mm, addr, size, fn, data);
	memalloc_noreclaim_restore(noreclaim);
	return ret;
}

static vm_fault_t xpmem_fault_set_writable(struct vm_fault *vmf)
{
	struct xpmem_att *att = vmf->vma->vm_private_data;
	pmd_t *pmd = xpmem_fault_pmd(vmf);

	lockdep_assert_held(&att->lock);
	/* huge PMDs go in under att->lock: none can appear meanwhile */
	if (!pmd || !pmd_present(READ_ONCE(*pmd)) || pmd_leaf(READ_ONCE(*pmd)))
		return VM_FAULT_NOPAGE;
	/* the page table lock */
	xpmem_apply_locked(vmf->vma->vm_mm, vmf->address, PAGE_SIZE,
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
	unsigned long pfn = pte_pfn(vmf->orig_pte);
	bool hit;

	mutex_lock(&att->lock);
	hit = !att->dead && xpmem_wok_take(att, oaddr, pfn);
	if (hit) {
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
 * (xpmem_fault_prepare_pt(); only munmap, or the attacher's own
 * MADV_DONTNEED with PT_RECLAIM, frees it: xpmem_apply_locked()), so
 * nothing is allocated under att->lock with direct reclaim.
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

	/*
	 * A huge PMD went in since xpmem_fault_prepare_pt(): use it; or the
	 * table went (PT_RECLAIM): the repeated access prepares it again.
	 */
	if (!pmd || pmd_leaf(READ_ONCE(*pmd)) || pmd_none(READ_ONCE(*pmd)))
		return VM_FAULT_NOPAGE;
	if (!(pfns[fidx] & HMM_PFN_VALID) || (pfns[fidx] & HMM_PFN_ERROR))
		return VM_FAULT_SIGBUS;
	if (fill.write)
		xpmem_fault_dirty_window(pfns, npages);
	/*
	 * It fails only if the table went while it was being walked (the
	 * attacher's own MADV_DONTNEED, PT_RECLAIM): the access is repeated.
	 */
	if (xpmem_apply_locked(vmf->vma->vm_mm, start, npages << PAGE_SHIFT,
			       xpmem_fill_pte, &fill))
		return VM_FAULT_NOPAGE;
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
	ret = xpmem_insert_pfn_pmd(vmf, pfn0, write);
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

/* One resolution: the fault, its window and the owner's pages of it. */
struct xpmem_fault {
	struct vm_fault *vmf;
	struct xpmem_att *att;
	enum xpmem_fault_kind kind;
	bool write;
	unsigned long oaddr;		/* owner address of vmf->address */
	unsigned long lo, hi;		/* the window, attacher addresses */
	unsigned long off;		/* segment offset of lo */
	unsigned long fidx;		/* the faulting page's index */
	unsigned long *pfns;		/* one entry per page of the window */
	struct xpmem_fault_win win;	/* listed while it resolves */
	struct hmm_range range;
};

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
	       !xpmem_owner_maps_ptes(owner, oaddr & PMD_MASK);
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

	m = xpmem_fault_mirror(vmf, &f->oaddr);
	if (!m)
		return VM_FAULT_SIGBUS;
	ovma = vma_lookup(owner, f->oaddr);
	if (!ovma || !xpmem_vma_mirrorable(ovma))
		return f->kind == XPMEM_FAULT_PMD ? VM_FAULT_FALLBACK :
						    VM_FAULT_SIGBUS;
	if (f->kind != XPMEM_FAULT_PMD)
		xpmem_fault_window(vmf, m, ovma, f->oaddr, maxpages, &f->lo,
				   &f->hi);
	else if (!xpmem_fault_pmd_window(vmf, m, ovma, owner, f->oaddr,
					 &f->lo, &f->hi))
		return VM_FAULT_FALLBACK;
	f->fidx = (vmf->address - f->lo) >> PAGE_SHIFT;
	f->off = (vmf->pgoff - f->fidx) << PAGE_SHIFT;
	f->range.start = f->oaddr - (f->fidx << PAGE_SHIFT);
	f->range.end = f->range.start + (f->hi - f->lo);
	f->range.hmm_pfns = f->pfns;
	f->range.pfn_flags_mask = HMM_PFN_REQ_FAULT | HMM_PFN_REQ_WRITE;
	/* the window's own sequence: see struct xpmem_fault_win */
	f->range.notifier = &f->win.changes;
	f->range.notifier_seq = 0;
	xpmem_fault_win_begin(&f->win, m, owner, f->range.start,
			      f->range.end);
	return 0;
}

/*
 * One attempt: the owner's pages of the window, the attacher's tables
 * for them, then att->lock (after att->pt_lock for a PMD).
 *
 * Return: 0 with the locks held and the window not stale; -EBUSY if an
 * invalidation marked the window; -EAGAIN if a huge PMD took the slot
 * meanwhile; -ENOMEM; or another error (SIGBUS).
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
	if (f->kind == XPMEM_FAULT_PTE) {
		err = xpmem_fault_prepare_pt(f->vmf);
		if (err)
			return err;
	} else if (pmd) {
		mutex_lock(&att->pt_lock);
	}
	if (f->kind != XPMEM_FAULT_MKWRITE) {
		err = xpmem_att_mapped_prepare(att, f->off, f->hi - f->lo);
		if (err)
			goto unlock_pt;
	}
	mutex_lock(&att->lock);
	if (!xpmem_fault_win_stale(&f->win))
		return 0;
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
		if (xpmem_fault_win_settle(&f->win))
			return VM_FAULT_SIGBUS;		/* killed */
		err = xpmem_fault_try(f);
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
 * Commit the stable window: under att->lock (and att->pt_lock for a
 * PMD).  *@zap: the mkwrite's PTE must go.
 */
static vm_fault_t xpmem_fault_commit(struct xpmem_fault *f, bool *zap)
{
	struct xpmem_att *att = f->att;
	unsigned long *pfns = f->pfns;
	vm_fault_t ret;

	if (att->dead)
		return VM_FAULT_SIGBUS;
	if (f->kind == XPMEM_FAULT_MKWRITE)
		return xpmem_fault_mkwrite(f->vmf, pfns[f->fidx], zap);
	if (!xpmem_att_mapped_set(att, f->off, f->hi - f->lo))
		return VM_FAULT_SIGBUS;
	if (f->kind == XPMEM_FAULT_PMD)
		return xpmem_fault_insert_pmd(f->vmf, pfns, f->fidx, f->write);
	ret = xpmem_fault_insert(f->vmf, f->lo, pfns,
				 (f->hi - f->lo) >> PAGE_SHIFT, f->fidx,
				 f->write);
	if (f->write && !(ret & VM_FAULT_ERROR) &&
	    (pfns[f->fidx] & HMM_PFN_WRITE))
		xpmem_wok_remember(att, f->oaddr, xpmem_hmm_pfn(pfns[f->fidx]));
	return ret;
}

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
		xpmem_fault_win_end(&f.win, false);
		return ret;
	}
	ret = xpmem_fault_commit(&f, &zap);
	xpmem_fault_win_end(&f.win, true);
	mutex_unlock(&f.att->lock);
	if (kind == XPMEM_FAULT_PMD)
		mutex_unlock(&f.att->pt_lock);
	if (zap)
		xpmem_att_zap(f.att, vmf->pgoff << PAGE_SHIFT, PAGE_SIZE);
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
		struct vm_fault rvmf = xpmem_vmf_again(vmf, vma);

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
		return xpmem_get_unmapped_area(addr, len, flags);
	want = xpmem_range_oaddr(&att->mirrors[0].r, pgoff << PAGE_SHIFT) &
	       ~PMD_MASK;
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
	.XPMEM_VM_OPS_MAY_SPLIT = xpmem_att_vma_may_split,
	.fault = xpmem_att_fault,
#ifdef XPMEM_HAVE_HUGE_PFNMAP
	.huge_fault = xpmem_att_huge_fault,
#endif
	.pfn_mkwrite = xpmem_att_mkwrite,
};

int xpmem_fault_init(void)
{
	xpmem_zero_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	return xpmem_zero_page ? 0 : -ENOMEM;
}

void xpmem_fault_exit(void)
{
	__free_page(xpmem_zero_page);
}
