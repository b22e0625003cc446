// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_zero.c - what an attachment made with XPMEM_EXT_ATTACH_ZERO_REVOKED
 * maps once it is revoked
 *
 * Revoked means: the attachment is dead (REMOVE, RELEASE, the owner's
 * close or exit marked it, xpmem_attach.c), or the owner's address space
 * is gone (no mm users: exited, killed, exec'd) before that mark.  A
 * classic attachment gets SIGBUS then; a ZERO_REVOKED one stays usable:
 *
 * - a read maps xpmem_revoked_zero, a page of zeros shared by all
 *   attachments and never writable;
 * - a write maps a zeroed page of the attachment's own (att->zero_pages,
 *   one per page written, allocated at that fault and charged to the
 *   attacher's memory cgroup, freed with the attachment), so what it
 *   writes reaches neither the owner nor any other process, and it reads
 *   back what it wrote.
 *
 * Both are special PTEs (VM_MIXEDMAP), like every PTE of an attachment:
 * GUP never finds them.  A write to the read-only zero page goes through
 * ->pfn_mkwrite, which zaps it so that the write comes back as a write
 * fault; a read-only PTE of the attachment's own page is simply made
 * writable by the core.  Nothing here touches the owner or its locks, and
 * nothing here can make a revoked attachment live again: revocation is
 * final, and an insertion racing with the revocation's own zap either
 * comes after it (and stays: it maps no owner page) or is zapped by it
 * (the next access faults here again).
 */
#include <linux/mm.h>
#include <linux/xarray.h>

#include "xpmem_internal.h"
#include "compat.h"

/* Read-only zeros for reads of revoked attachments; never written. */
static struct page *xpmem_revoked_zero;

int xpmem_zero_init(void)
{
	xpmem_revoked_zero = alloc_page(GFP_KERNEL | __GFP_ZERO);
	return xpmem_revoked_zero ? 0 : -ENOMEM;
}

void xpmem_zero_exit(void)
{
	__free_page(xpmem_revoked_zero);
}

/**
 * xpmem_zero_att_init - a new attachment has no private pages
 * @att: the attachment being set up
 */
void xpmem_zero_att_init(struct xpmem_att *att)
{
	xa_init(&att->zero_pages);
}

/**
 * xpmem_zero_att_destroy - free an attachment's private pages
 * @att: the attachment, with no VMA left (so no PTE names its pages)
 */
void xpmem_zero_att_destroy(struct xpmem_att *att)
{
	struct page *page;
	unsigned long idx;

	xa_for_each(&att->zero_pages, idx, page)
		__free_page(page);
	xa_destroy(&att->zero_pages);
}

/*
 * The attachment's own page for segment page @idx, allocated (zeroed) if
 * @alloc and there is none yet.  Return: the page, NULL (none, @alloc
 * false), or an ERR_PTR().
 */
static struct page *xpmem_zero_own_page(struct xpmem_att *att,
					unsigned long idx, bool alloc)
{
	struct page *page = xa_load(&att->zero_pages, idx);
	struct page *old;

	if (page || !alloc)
		return page;
	page = alloc_page(GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT);
	if (!page)
		return ERR_PTR(-ENOMEM);
	old = xa_cmpxchg(&att->zero_pages, idx, NULL, page,
			 GFP_KERNEL_ACCOUNT);
	if (!old)
		return page;
	__free_page(page);	/* another thread was first, or no memory */
	return xa_is_err(old) ? ERR_PTR(xa_err(old)) : old;
}

/**
 * xpmem_zero_fault - a fault or write-protect fault of a revoked attachment
 * @vmf: the fault, on an attachment VMA (the attacher's mmap_lock held)
 * @mkwrite: from ->pfn_mkwrite: a write to a read-only PTE
 *
 * SIGBUS unless the attachment was made with ZERO_REVOKED.  May wait for:
 * att->pt_lock (held by others only to allocate page tables or insert),
 * a page allocation (which may reclaim, and so call invalidate callbacks:
 * none takes att->pt_lock), and the zap worker (->pfn_mkwrite on the zero
 * page, as any mkwrite of an attachment may; an owner's huge PMD the
 * revocation has not zapped yet); nothing of the owner.
 *
 * Return: VM_FAULT_NOPAGE (the access is repeated), 0 from mkwrite to
 * let the core make the PTE of the attachment's own page writable,
 * VM_FAULT_OOM, or VM_FAULT_SIGBUS.
 */
vm_fault_t xpmem_zero_fault(struct vm_fault *vmf, bool mkwrite)
{
	struct vm_area_struct *vma = vmf->vma;
	struct xpmem_att *att = vma->vm_private_data;
	bool write = mkwrite || (vmf->flags & FAULT_FLAG_WRITE);
	struct page *page;
	vm_fault_t ret;
	pmd_t *pmd;

	if (!att->zero_revoked)
		return VM_FAULT_SIGBUS;
	page = xpmem_zero_own_page(att, vmf->pgoff, write);
	if (IS_ERR(page))
		return VM_FAULT_OOM;
	if (mkwrite) {
		/* our own page, mapped read-only: the core upgrades it */
		if (pte_pfn(vmf->orig_pte) == page_to_pfn(page))
			return 0;
		/*
		 * The zero page (or a stale owner PTE): write fault next.  It
		 * maps the page allocated just above, which stays the
		 * attachment's, so the next mkwrite here returns 0 above:
		 * this branch is taken at most once per page and PTE.
		 */
		xpmem_att_zap(att, vmf->pgoff << PAGE_SHIFT, PAGE_SIZE);
		return VM_FAULT_NOPAGE;
	}
	if (!page)
		page = xpmem_revoked_zero;
	/*
	 * Mapped read-only (an existing PTE is left alone, never replaced):
	 * the first write to our own page takes ->pfn_mkwrite above.  A huge
	 * PMD of the owner's that the revocation has not zapped yet goes
	 * first (no PTE can be inserted under it).
	 */
	mutex_lock(&att->pt_lock);
	pmd = xpmem_find_pmd(vma->vm_mm, vmf->address);
	if (pmd && pmd_leaf(READ_ONCE(*pmd))) {
		mutex_unlock(&att->pt_lock);
		xpmem_att_zap(att, (vmf->pgoff << PAGE_SHIFT) -
			      (vmf->address & ~PMD_MASK), PMD_SIZE);
		return VM_FAULT_NOPAGE;
	}
	ret = xpmem_insert_mixed(vma, vmf->address, page_to_pfn(page));
	mutex_unlock(&att->pt_lock);
	return ret;
}
