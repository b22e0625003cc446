// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_map.c - a resolved fault window goes into the attacher's page
 * tables: PTEs, a PTE made writable, or one huge PMD
 *
 * Invariants (docs/design.md, "PTE kinds and GUP", "Writable attachments"):
 * - every PTE is a special PFN PTE (our own zero page for the owner's), so
 *   get_user_pages() never finds an owner page through an attachment;
 * - everything here but xpmem_map_prepare_pt() runs under att->lock with
 *   the window not stale, so every page it maps is still the owner's; it
 *   allocates nothing and waits for nothing but the attacher's page table
 *   lock, and it never assumes that a page table it saw is still there
 *   (the attacher's own MADV_DONTNEED may free an emptied one: PT_RECLAIM);
 * - a PTE or PMD is writable only if the owner maps the page writable, and
 *   the owner's folio is dirtied first.
 */
#include <linux/hmm.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/rcupdate.h>
#include <linux/swap.h>

#include "xpmem_internal.h"
#include "compat.h"

/*
 * Mapped instead of the shared zero page, which vmf_insert_mixed()
 * refuses in writable mappings: reads of memory the owner never wrote see
 * zeroes and allocate nothing in the owner.  Read-only, never written.
 */
static struct page *xpmem_map_zero_page;

/* The PFN an hmm_range_fault() entry names, without its flag bits. */
static unsigned long xpmem_map_hmm_pfn(unsigned long hmm_pfn)
{
	return hmm_pfn & ~HMM_PFN_FLAGS;
}

/* The PFN to map for an owner PFN: our own zero page for the zero page. */
static unsigned long xpmem_map_pfn(unsigned long hmm_pfn)
{
	unsigned long pfn = xpmem_map_hmm_pfn(hmm_pfn);

	return is_zero_pfn(pfn) ? page_to_pfn(xpmem_map_zero_page) : pfn;
}

static int xpmem_map_noop_pte(pte_t *pte, unsigned long addr, void *data)
{
	return 0;
}

/*
 * The PMD slot of @addr in @mm, or NULL if the page tables above it do
 * not exist.  Under the mmap_lock, so they cannot be freed meanwhile.
 */
pmd_t *xpmem_map_find_pmd(struct mm_struct *mm, unsigned long addr)
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

/*
 * What the owner's page tables map at @oaddr now: the PFN and whether it
 * is writable, read without the table locks.  The caller holds the
 * owner's mmap_lock for reading, so the tables above a PTE table stay,
 * and rcu_read_lock(), so a PTE table freed meanwhile (PT_RECLAIM,
 * khugepaged's retraction) is freed only after it.  Return: false if
 * nothing present is mapped there (none, swap, migration entries).
 */
static bool xpmem_map_owner_pfn(struct mm_struct *mm, unsigned long oaddr,
				unsigned long *pfn, bool *write)
{
	pgd_t *pgd = pgd_offset(mm, oaddr);
	p4d_t *p4d;
	pud_t *pud, pudval;
	pmd_t pmdval;
	pte_t pte;

	if (pgd_none(*pgd) || pgd_bad(*pgd))
		return false;
	p4d = p4d_offset(pgd, oaddr);
	if (p4d_none(*p4d) || p4d_bad(*p4d))
		return false;
	pud = pud_offset(p4d, oaddr);
	pudval = READ_ONCE(*pud);
	if (pud_none(pudval) || !pud_present(pudval))
		return false;
	if (pud_leaf(pudval)) {
		*pfn = pud_pfn(pudval) + ((oaddr & ~PUD_MASK) >> PAGE_SHIFT);
		*write = pud_write(pudval);
		return true;
	}
	if (pud_bad(pudval))
		return false;
	pmdval = xpmem_pmdp_get_lockless(pmd_offset(pud, oaddr));
	if (pmd_none(pmdval) || !pmd_present(pmdval))
		return false;
	if (pmd_leaf(pmdval)) {
		*pfn = pmd_pfn(pmdval) + ((oaddr & ~PMD_MASK) >> PAGE_SHIFT);
		*write = pmd_write(pmdval);
		return true;
	}
	if (pmd_bad(pmdval))
		return false;
	pte = ptep_get(pte_offset_kernel(&pmdval, oaddr));
	if (!pte_present(pte))
		return false;
	*pfn = pte_pfn(pte);
	*write = pte_write(pte);
	return true;
}

/**
 * xpmem_map_verify - keep only the entries that name the owner's page
 * @owner: the owner's mm, its mmap_lock held for reading
 * @oaddr: the owner address of @pfns[0], from the attacher address and
 *	the attachment's segment offset (not from the window's arithmetic)
 * @pfns: hmm_range_fault() entries, one per page of a resolved window
 * @npages: how many
 * @fidx: the faulting page's index
 *
 * Whatever the module maps names exactly the owner's page at that offset:
 * each valid entry is compared with what the owner's page tables map at
 * @oaddr + i pages now.  Under att->lock with the window not stale, so
 * every change of those entries since hmm_range_fault() read them marked
 * the window (the invalidate callback takes att->lock first): a present
 * entry that names another page is a bug (WARN), and is not mapped, nor
 * is an entry the owner does not map now; one the owner no longer maps
 * writable is mapped read-only.  Lock-free reads only (no table lock, no
 * allocation), so it may run under the attacher's page table lock too.
 *
 * Return: false if the faulting page's entry was dropped (the access is
 * then repeated rather than failed).
 */
static bool xpmem_map_verify(struct mm_struct *owner, unsigned long oaddr,
			     unsigned long *pfns, unsigned long npages,
			     unsigned long fidx)
{
	unsigned long i, pfn;
	bool write;

	rcu_read_lock();
	for (i = 0; i < npages; i++, oaddr += PAGE_SIZE) {
		unsigned long p = pfns[i];

		if (!(p & HMM_PFN_VALID) || (p & HMM_PFN_ERROR))
			continue;
		if (!xpmem_map_owner_pfn(owner, oaddr, &pfn, &write) ||
		    WARN_ON_ONCE(pfn != xpmem_map_hmm_pfn(p))) {
			pfns[i] = 0;
			continue;
		}
		if (!write)
			pfns[i] &= ~HMM_PFN_WRITE;
	}
	rcu_read_unlock();
	return pfns[fidx] & HMM_PFN_VALID;
}

/* The faulting address's PMD slot (@vmf->pmd is NULL after a reversal). */
static pmd_t *xpmem_map_fault_pmd(struct vm_fault *vmf)
{
	return vmf->pmd ? vmf->pmd : xpmem_map_find_pmd(vmf->vma->vm_mm,
						     vmf->address);
}

/*
 * Make sure the page table page for the window exists, so that inserting
 * under att->lock never allocates (the invalidate callback, which takes
 * att->lock, runs in reclaim).  Under att->pt_lock, which huge PMD
 * insertion holds too.  With CONFIG_PT_RECLAIM (6.13) the attacher's own
 * MADV_DONTNEED of the whole 2 MiB can free the new table before
 * apply_to_page_range() maps it, which then fails as if out of memory:
 * tried again a few times.
 *
 * May wait for: att->pt_lock and a page table allocation, which may
 * reclaim and so call our invalidate callback; that takes att->lock, never
 * att->pt_lock, and att->lock is not held here.  Touches no owner memory.
 *
 * Return: 0; -EAGAIN if the slot holds a huge PMD now (the access is
 * simply repeated); -ENOMEM.
 */
int xpmem_map_prepare_pt(struct vm_fault *vmf)
{
	struct xpmem_att *att = vmf->vma->vm_private_data;
	int ret = 0, tries = 3;
	pmd_t *pmd;

	mutex_lock(&att->pt_lock);
	do {
		pmd = xpmem_map_fault_pmd(vmf);
		if (pmd && pmd_leaf(READ_ONCE(*pmd)))
			ret = -EAGAIN;
		else if (!pmd || pmd_none(READ_ONCE(*pmd)))
			ret = apply_to_page_range(vmf->vma->vm_mm,
						  vmf->address, PAGE_SIZE,
						  xpmem_map_noop_pte, NULL) ?
			      -ENOMEM : 0;
		else
			ret = 0;
	} while (ret == -ENOMEM && --tries);
	mutex_unlock(&att->pt_lock);
	return ret;
}

/**
 * xpmem_map_pte_apply - run @fn on PTEs of one page table, under its lock
 * @mm: the attacher's mm, under its mmap_lock
 * @pmd: the PMD slot that holds the table (xpmem_map_fault_pmd())
 * @addr: the first address, page aligned
 * @npages: how many pages, all inside @pmd's 2 MiB
 * @fn: called for each PTE under the page table lock; must not sleep;
 *      a non-zero return stops the walk
 * @data: its argument
 *
 * Allocates nothing and never writes a PMD.  The table may be gone, or
 * going: with CONFIG_PT_RECLAIM (6.13) the attacher's own MADV_DONTNEED
 * of a whole 2 MiB clears the PMD under its lock, with only the
 * mmap_lock read side held, and frees the table after an RCU grace
 * period.  So the PMD is read once, its table locked and the PMD checked
 * unchanged under the lock, as the core's pte_offset_map_lock() does (not
 * exported).  apply_to_page_range() reads the PMD unlocked several times
 * and warns about, then clears, one that changed in between;
 * apply_to_existing_page_range() is not exported from 7.x on.
 *
 * May wait for: the table's spinlock only (@fn must not sleep).  Called
 * from our fault handlers with the attacher's mmap_lock (read) and
 * att->lock held, never by the core, so it holds no i_mmap_rwsem or folio
 * lock the core might want.  It places no mapping (only PTEs in an
 * attachment VMA already placed), so it cannot make an attachment map its
 * own source; revocation is seen by the callers: they hold att->lock with
 * the window checked not stale, which an invalidation or revocation must
 * take first.  Nothing here can block on the owner.
 *
 * Return: 0 or what @fn returned; -EAGAIN if @pmd holds no page table.
 */
static int xpmem_map_pte_apply(struct mm_struct *mm, pmd_t *pmd,
			       unsigned long addr, unsigned long npages,
			       pte_fn_t fn, void *data)
{
	unsigned long i;
	spinlock_t *ptl;	/* the table's lock (split PTE locks) */
	pmd_t pmdval;
	pte_t *pte;
	int ret = -EAGAIN;

	VM_WARN_ON_ONCE((addr & PMD_MASK) !=
			((addr + (npages << PAGE_SHIFT) - 1) & PMD_MASK));
	rcu_read_lock();
	pmdval = xpmem_pmdp_get_lockless(pmd);
	if (!pmd_present(pmdval) || pmd_leaf(pmdval) || pmd_bad(pmdval))
		goto out;
	ptl = pte_lockptr(mm, &pmdval);
	spin_lock(ptl);
	if (pmd_same(pmdval, xpmem_pmdp_get_lockless(pmd))) {
		pte = pte_offset_kernel(&pmdval, addr);
		for (i = 0, ret = 0; i < npages && !ret; i++)
			ret = fn(pte + i, addr + (i << PAGE_SHIFT), data);
	}
	spin_unlock(ptl);
out:
	rcu_read_unlock();
	return ret;
}

/* The attacher wrote or read the owner's page: as if the owner had. */
static void xpmem_map_touch(unsigned long hmm_pfn, bool write)
{
	unsigned long pfn = xpmem_map_hmm_pfn(hmm_pfn);
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
static void xpmem_map_dirty_window(const unsigned long *pfns,
				   unsigned long npages)
{
	struct page *head, *last = NULL;
	unsigned long i, pfn;

	for (i = 0; i < npages; i++) {
		pfn = xpmem_map_hmm_pfn(pfns[i]);
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

/* One ->pfn_mkwrite's upgrade of its window, for xpmem_map_upgrade_pte(). */
struct xpmem_map_upgrade {
	struct vm_fault *vmf;
	unsigned long *pfns;		/* NULL: the written page alone */
	unsigned long start;		/* attacher address of pfns[0] */
	bool commit;			/* the second walk */
	unsigned long upgraded;		/* PTEs made writable besides it */
};

/*
 * xpmem_map_pte_apply() callback, under the attacher's page table lock, in
 * two walks.  The first keeps HMM_PFN_WRITE only in the entries of the
 * window's other read-only PTEs that name the page the owner maps
 * writable there, so that their folios can be dirtied between the walks,
 * outside the page table lock (a filesystem's ->dirty_folio may sleep);
 * window not stale and att->lock held, so each such PTE still mirrors the
 * owner's.  The second makes them writable, and the written page's PTE
 * if it is still the one the core found: under att->lock, so that an
 * invalidation either zaps it after this or has zapped it before (the
 * core's own upgrade after ->pfn_mkwrite returns would only compare the
 * PTE, and a zap and re-insertion of the same read-only PTE in between
 * would pass).  A page the owner maps read-only (COW-shared,
 * write-protected) stays read-only and takes its own ->pfn_mkwrite, which
 * breaks COW in the owner first.
 */
static int xpmem_map_upgrade_pte(pte_t *ptep, unsigned long addr, void *data)
{
	struct xpmem_map_upgrade *u = data;
	struct vm_fault *vmf = u->vmf;
	pte_t pte = ptep_get(ptep);
	unsigned long *p;

	if (addr == (vmf->address & PAGE_MASK)) {
		if (!u->commit || !pte_same(pte, vmf->orig_pte) ||
		    pte_write(pte))
			return 0;
		pte = pte_mkyoung(xpmem_pte_mkwrite_dirty(pte));
		goto set;
	}
	if (!u->pfns)
		return 0;
	p = &u->pfns[(addr - u->start) >> PAGE_SHIFT];
	if (!(*p & HMM_PFN_WRITE))
		return 0;
	if (!pte_present(pte) || pte_write(pte) || !(*p & HMM_PFN_VALID) ||
	    (*p & HMM_PFN_ERROR) || pte_pfn(pte) != xpmem_map_hmm_pfn(*p) ||
	    is_zero_pfn(pte_pfn(pte))) {
		*p &= ~HMM_PFN_WRITE;	/* not this one */
		return 0;
	}
	if (!u->commit)
		return 0;
	pte = xpmem_pte_mkwrite_dirty(pte);
	u->upgraded++;
set:
	set_pte_at(vmf->vma->vm_mm, addr, ptep, pte);
	update_mmu_cache(vmf->vma, addr, ptep);
	return 0;
}

static vm_fault_t xpmem_map_set_writable(struct xpmem_map_upgrade *u,
					 unsigned long npages)
{
	struct vm_fault *vmf = u->vmf;
	struct mm_struct *mm = vmf->vma->vm_mm;
	struct xpmem_att *att = vmf->vma->vm_private_data;
	pmd_t *pmd = xpmem_map_fault_pmd(vmf);

	lockdep_assert_held(&att->lock);
	/* huge PMDs go in under att->lock: none can appear meanwhile */
	if (!pmd || !pmd_present(READ_ONCE(*pmd)) || pmd_leaf(READ_ONCE(*pmd)))
		return VM_FAULT_NOPAGE;
	/* gone meanwhile (PT_RECLAIM): the repeated access faults again */
	if (u->pfns) {
		if (xpmem_map_pte_apply(mm, pmd, u->start, npages,
					xpmem_map_upgrade_pte, u))
			return VM_FAULT_NOPAGE;
		xpmem_map_dirty_window(u->pfns, npages);
	}
	u->commit = true;
	xpmem_map_pte_apply(mm, pmd, u->start, npages, xpmem_map_upgrade_pte,
			    u);
	if (u->upgraded)
		atomic_long_add(u->upgraded, &xpmem_stats.pages_upgraded);
	return VM_FAULT_NOPAGE;
}

/* ---- Owner pages known writable ----------------------------------------- */

/*
 * A small table per attachment (att->writable_pages), indexed by a hash
 * of the owner address: filled by a write fault's commit, taken by the
 * ->pfn_mkwrite that follows, and forgotten by any invalidation of the
 * page (the invalidate callback clears its entries, xpmem_mirror.c).
 */
/* att->writable_pages entries: owner address | XPMEM_WRITABLE_VALID */
#define XPMEM_WRITABLE_VALID	1UL

static struct xpmem_writable_page *
xpmem_map_writable_slot(struct xpmem_att *att, unsigned long oaddr)
{
	return &att->writable_pages[hash_long(oaddr >> PAGE_SHIFT,
					      XPMEM_WRITABLE_BITS)];
}

/*
 * xpmem_map_writable_remember - a write fault found the owner's page
 * writable
 * @att: the attachment
 * @oaddr: owner address of the page
 * @pfn: the page
 *
 * Remembered for the ->pfn_mkwrite that may follow, until an invalidation
 * touches @oaddr.  Under att->lock, window not stale.
 */
static void xpmem_map_writable_remember(struct xpmem_att *att,
					unsigned long oaddr,
					unsigned long pfn)
{
	struct xpmem_writable_page *w = xpmem_map_writable_slot(att, oaddr);

	lockdep_assert_held(&att->lock);
	w->oaddr = oaddr | XPMEM_WRITABLE_VALID;
	w->pfn = pfn;
}

/*
 * xpmem_map_writable_take - is the owner's page at @oaddr still known
 * writable?
 * @att: the attachment
 * @oaddr: owner address of the page
 * @pfn: the page the attacher's PTE names
 *
 * Forgets it on a hit (one ->pfn_mkwrite per write fault).  Under att->lock.
 */
static bool xpmem_map_writable_take(struct xpmem_att *att, unsigned long oaddr,
				    unsigned long pfn)
{
	struct xpmem_writable_page *w = xpmem_map_writable_slot(att, oaddr);

	lockdep_assert_held(&att->lock);
	if (w->oaddr != (oaddr | XPMEM_WRITABLE_VALID) || w->pfn != pfn)
		return false;
	w->oaddr = 0;
	return true;
}

/*
 * ->pfn_mkwrite without the owner's lock: if no invalidation touched the
 * owner's page since a write ->fault found it writable, and the attacher's
 * PTE still names it, the owner still maps it writable.
 */
bool xpmem_map_mkwrite_fast(struct vm_fault *vmf,
			    struct xpmem_att *att, unsigned long oaddr)
{
	unsigned long pfn = pte_pfn(vmf->orig_pte);
	bool hit;

	mutex_lock(&att->lock);
	hit = !att->dead && xpmem_map_writable_take(att, oaddr, pfn);
	if (hit) {
		struct xpmem_map_upgrade u = {
			.vmf = vmf, .start = vmf->address & PAGE_MASK,
		};

		xpmem_map_touch(pfn, true);
		xpmem_map_set_writable(&u, 1);
	}
	mutex_unlock(&att->lock);
	if (hit)
		atomic_long_inc(&xpmem_stats.mkwrite_fast);
	return hit;
}

/* One window's insertion, for xpmem_map_fill_pte(). */
struct xpmem_map_fill {
	struct vm_area_struct *vma;
	const unsigned long *pfns;
	unsigned long start;	/* attacher address of pfns[0] */
	bool write;		/* map owner-writable pages writable */
	unsigned long mapped;
};

/*
 * xpmem_map_pte_apply() callback, under the attacher's page table lock:
 * map one resolved page with a special PTE (as vmf_insert_mixed() would,
 * without taking the lock and walking the tables again for every page),
 * already young, and writable and dirty where @f->write and the owner maps
 * the page writable.  A PTE that is there already stays: it names the
 * same page (an invalidation would have zapped it and marked the window).
 */
static int xpmem_map_fill_pte(pte_t *ptep, unsigned long addr, void *data)
{
	struct xpmem_map_fill *f = data;
	unsigned long p = f->pfns[(addr - f->start) >> PAGE_SHIFT];
	unsigned long pfn = xpmem_map_pfn(p);
	pte_t pte;

	if (!(p & HMM_PFN_VALID) || (p & HMM_PFN_ERROR) ||
	    !pte_none(ptep_get(ptep)))
		return 0;
	pte = pfn_pte(pfn, f->vma->vm_page_prot);
	/* never our zero page writable: it stands for the owner's */
	if (f->write && (p & HMM_PFN_WRITE) && pfn == xpmem_map_hmm_pfn(p))
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
 * @pfns is still mapped by the owner.  The page table page was made by
 * xpmem_map_prepare_pt(); if the attacher's own MADV_DONTNEED freed it
 * since (PT_RECLAIM), nothing is mapped and the access is repeated:
 * nothing is allocated under att->lock.
 */
static vm_fault_t xpmem_map_insert(struct vm_fault *vmf, unsigned long start,
				   const unsigned long *pfns,
				   unsigned long npages, unsigned long fidx,
				   bool write)
{
	struct xpmem_map_fill fill = {
		.vma = vmf->vma, .pfns = pfns, .start = start,
		.write = write && (vmf->vma->vm_flags & VM_WRITE),
	};
	pmd_t *pmd = xpmem_map_fault_pmd(vmf);

	/* A huge PMD went in since xpmem_map_prepare_pt(): use it. */
	if (!pmd || pmd_leaf(READ_ONCE(*pmd)))
		return VM_FAULT_NOPAGE;
	if (!(pfns[fidx] & HMM_PFN_VALID) || (pfns[fidx] & HMM_PFN_ERROR))
		return VM_FAULT_SIGBUS;
	if (fill.write)
		xpmem_map_dirty_window(pfns, npages);
	if (xpmem_map_pte_apply(vmf->vma->vm_mm, pmd, start, npages,
				xpmem_map_fill_pte, &fill))
		return VM_FAULT_NOPAGE;	/* the table went: repeat */
	xpmem_map_touch(pfns[fidx], fill.write);
	atomic_long_add(fill.mapped, &xpmem_stats.pages_mapped);
	return VM_FAULT_NOPAGE;
}

/*
 * ->pfn_mkwrite after resolution, under att->lock, window not stale: the
 * written PTE becomes writable here if it is unchanged, and with it every
 * other read-only PTE of the resolved window [@start, @start + @npages
 * pages) whose page the owner maps writable, so that a write pass after a
 * read pass takes one fault per window, not one per page.  A written PTE
 * that names another page than the owner's writable one (our zero page, a
 * page COW-broken meanwhile) must go, and nothing else changes here: the
 * caller zaps it and maps the owner's page as a write fault does.
 *
 * Return: VM_FAULT_NOPAGE, with *@zap set if the written PTE must go.
 */
static vm_fault_t xpmem_map_mkwrite(struct vm_fault *vmf, unsigned long start,
				    unsigned long *pfns, unsigned long npages,
				    unsigned long fidx, bool *zap)
{
	struct xpmem_map_upgrade u = { .vmf = vmf, .pfns = pfns, .start = start };
	unsigned long hmm_pfn = pfns[fidx];

	if (!(hmm_pfn & HMM_PFN_WRITE) ||
	    pte_pfn(vmf->orig_pte) != xpmem_map_hmm_pfn(hmm_pfn)) {
		*zap = true;
		return VM_FAULT_NOPAGE;
	}
	xpmem_map_touch(hmm_pfn, true);
	return xpmem_map_set_writable(&u, npages);
}

#ifdef XPMEM_HAVE_HUGE_PFNMAP
/*
 * Whether @folio is memory the owner owns: anonymous, page cache or
 * hugetlb.  Not the huge zero folio (no mapping; is_huge_zero_folio()
 * needs a symbol modules do not get), which must not be made writable.
 */
static bool xpmem_map_folio_is_owners(struct folio *folio)
{
	return folio_test_anon(folio) || folio_test_hugetlb(folio) ||
	       READ_ONCE(folio->mapping);
}

/*
 * Map the resolved 2 MiB window with one PMD if the owner maps it with
 * one (or with part of a larger one): 512 valid PFNs, physically
 * contiguous and 2 MiB aligned, none of them a zero page, all writable
 * for a write.  Under att->pt_lock and att->lock, window not stale.
 */
static vm_fault_t xpmem_map_insert_pmd(struct vm_fault *vmf,
				       const unsigned long *pfns,
				       unsigned long fidx, bool write)
{
	unsigned long pfn0 = xpmem_map_hmm_pfn(pfns[0]);
	pmd_t *pmd = vmf->pmd, orig;
	unsigned long i;
	vm_fault_t ret;

	if (!IS_ALIGNED(pfn0, PTRS_PER_PMD) || !pfn_valid(pfn0) ||
	    is_zero_pfn(pfn0) ||
	    !xpmem_map_folio_is_owners(page_folio(pfn_to_page(pfn0))))
		return VM_FAULT_FALLBACK;
	for (i = 0; i < PTRS_PER_PMD; i++) {
		unsigned long p = pfns[i];

		if (!(p & HMM_PFN_VALID) || (p & HMM_PFN_ERROR) ||
		    xpmem_map_hmm_pfn(p) != pfn0 + i ||
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
		xpmem_map_touch(pfns[fidx], write);
		atomic_long_inc(&xpmem_stats.pmd_mapped);
	}
	return ret;
}
#else
static vm_fault_t xpmem_map_insert_pmd(struct vm_fault *vmf,
				       const unsigned long *pfns,
				       unsigned long fidx, bool write)
{
	return VM_FAULT_FALLBACK;
}
#endif

/* ---- Commit ------------------------------------------------------------- */

/*
 * The owner address that attacher address @addr of @f's VMA mirrors,
 * found from the VMA's file offset (so the segment offset) and the
 * window's mirror alone, never from the window's own arithmetic.
 */
static unsigned long xpmem_map_oaddr(struct xpmem_fault *f, unsigned long addr)
{
	unsigned long pgoff = linear_page_index(f->vmf->vma, addr);

	return xpmem_seg_range_oaddr(&f->win.m->r,
				     xpmem_att_seg_off(f->att, pgoff));
}

/**
 * xpmem_map_commit - map a resolved window that no invalidation touched
 * @f: the resolution, its window not stale
 * @zap: set if the ->pfn_mkwrite's PTE must go
 *
 * PTEs, a PTE made writable, or a PMD, each entry checked against the
 * owner's page first.
 *
 * Context: under att->lock (and att->pt_lock for a PMD), with the owner's
 * mmap_lock held for reading; waits for nothing but the attacher's page
 * table lock, allocates nothing.
 * Return: what the fault returns.
 */
vm_fault_t xpmem_map_commit(struct xpmem_fault *f, bool *zap)
{
	struct xpmem_att *att = f->att;
	unsigned long *pfns = f->pfns;
	unsigned long npages = (f->hi - f->lo) >> PAGE_SHIFT;
	vm_fault_t ret;

	if (att->dead)	/* revoked: the repeated access sees it first */
		return att->zero_revoked ? VM_FAULT_NOPAGE : VM_FAULT_SIGBUS;
	/*
	 * Every entry checked against the owner's page at its own offset,
	 * found afresh from the attacher address: whatever the window's
	 * arithmetic did (narrowing, the usable part), no PTE, upgrade or PMD
	 * below names another page than the owner's there.
	 */
	if (!xpmem_map_verify(att->seg->mm, xpmem_map_oaddr(f, f->lo),
			      pfns, npages, f->fidx)) {
		if (f->kind == XPMEM_FAULT_PMD)
			return VM_FAULT_FALLBACK;
		*zap = f->kind == XPMEM_FAULT_MKWRITE;
		return VM_FAULT_NOPAGE;
	}
	if (f->kind == XPMEM_FAULT_MKWRITE)
		return xpmem_map_mkwrite(f->vmf, f->lo, pfns, npages,
					   f->fidx, zap);
	if (!xpmem_zap_mapped_set(att, f->off, f->hi - f->lo))
		return VM_FAULT_SIGBUS;
	if (f->kind == XPMEM_FAULT_PMD)
		return xpmem_map_insert_pmd(f->vmf, pfns, f->fidx, f->write);
	ret = xpmem_map_insert(f->vmf, f->lo, pfns, npages, f->fidx,
			       f->write);
	if (f->write && !(ret & VM_FAULT_ERROR) &&
	    (pfns[f->fidx] & HMM_PFN_WRITE))
		xpmem_map_writable_remember(att, f->oaddr,
					    xpmem_map_hmm_pfn(pfns[f->fidx]));
	return ret;
}

int xpmem_map_init(void)
{
	xpmem_map_zero_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	return xpmem_map_zero_page ? 0 : -ENOMEM;
}

void xpmem_map_exit(void)
{
	__free_page(xpmem_map_zero_page);
}
