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
 *   one per page written, allocated at that fault, freed with the
 *   attachment), so what it writes reaches neither the owner nor any other
 *   process, and it reads back what it wrote.
 *
 * The zero page is a special PTE (VM_MIXEDMAP), like every PTE of an
 * attachment that names a page it does not own: GUP never finds it.  A
 * write to it goes through ->pfn_mkwrite, which zaps it so that the write
 * comes back as a write fault.  The attachment's own page is memory the
 * attacher uses as its own, and is charged as such:
 *
 * - mapped as an ordinary page (vm_insert_page(): a reference and a
 *   mapping count per PTE), it counts in the attacher's RSS as a file page
 *   (RssFile, so the OOM killer sees it in the process that uses it) while
 *   mapped;
 * - allocated with __GFP_ACCOUNT, it is charged to the attacher's memory
 *   cgroup until freed (not before 5.11: compat.h);
 * - it counts against max_revoked_pages of the attachment's user
 *   (att->ctx->user, referenced by the attachment from its first such
 *   page to its last: att->zero_user) until freed; a write that needs one
 *   more gets SIGBUS, as without ZERO_REVOKED (VM_FAULT_OOM would have the
 *   core retry the fault forever, or, before 5.16, kill whichever process
 *   the OOM killer picks).
 *
 * Such a page is not on an LRU list, so it is not swapped out, and it is
 * not in Committed_AS: the limit is what bounds it.  It is mapped
 * read-only first; the core makes it writable at the first write, as any
 * shared page without ->page_mkwrite.  GUP's fast path may take a
 * reference to it (it is the attacher's own memory, and the reference
 * keeps it alive); the slow path refuses the VMA (VM_IO) as before.
 * Nothing here touches the owner or its locks, and nothing here can make
 * a revoked attachment live again: revocation is final, and an insertion
 * racing with the revocation's own zap either comes after it (and stays:
 * it maps no owner page) or is zapped by it (the next access faults here
 * again).
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
 * @att: the attachment, with no VMA left (so no fault adds pages)
 *
 * A page still mapped somewhere (a PTE not zapped yet, or a reference GUP
 * took) is freed when that goes; it is uncharged from the user now.
 *
 * Context: may sleep (xpmem_user_put()); no lock of ours held.
 */
void xpmem_zero_att_destroy(struct xpmem_att *att)
{
	struct page *page;
	unsigned long idx;
	int nr = 0;

	xa_for_each(&att->zero_pages, idx, page) {
		put_page(page);
		nr++;
	}
	xa_destroy(&att->zero_pages);
	if (att->zero_user) {
		atomic_sub(nr, &att->zero_user->nr_revoked_pages);
		xpmem_user_put(att->zero_user);
		att->zero_user = NULL;
	}
}

/*
 * The user the attachment's own pages are charged to: its ctx's, with a
 * reference of the attachment's own, taken at the first page (a fault
 * runs with a VMA of the attachment, which keeps att->ctx), so that the
 * pages can be uncharged whenever they are freed, also after the ctx.
 */
static struct xpmem_user *xpmem_zero_user(struct xpmem_att *att)
{
	struct xpmem_user *user = READ_ONCE(att->zero_user);

	if (user)
		return user;
	user = xpmem_user_hold(att->ctx);
	/* another fault was first: the same user, and not its last reference */
	if (cmpxchg(&att->zero_user, NULL, user))
		xpmem_user_put(user);
	return READ_ONCE(att->zero_user);
}

/*
 * The attachment's own page for segment page @idx, allocated (zeroed) and
 * charged if @alloc and there is none yet.  Return: the page, NULL (none,
 * @alloc false), ERR_PTR(-ENOSPC) (the user's max_revoked_pages reached)
 * or another ERR_PTR().
 */
static struct page *xpmem_zero_own_page(struct xpmem_att *att,
					unsigned long idx, bool alloc)
{
	struct page *page = xa_load(&att->zero_pages, idx);
	struct xpmem_user *user;
	struct page *old;

	if (page || !alloc)
		return page;
	user = xpmem_zero_user(att);
	if (!xpmem_ctx_charge(&user->nr_revoked_pages,
			      READ_ONCE(xpmem_max_revoked_pages)))
		return ERR_PTR(-ENOSPC);
	page = alloc_page(XPMEM_GFP_USER_PAGE | __GFP_ZERO);
	if (!page) {
		old = ERR_PTR(-ENOMEM);
		goto uncharge;
	}
	old = xa_cmpxchg(&att->zero_pages, idx, NULL, page,
			 GFP_KERNEL_ACCOUNT);
	if (!old)
		return page;
	put_page(page);		/* another thread was first, or no memory */
	if (xa_is_err(old))
		old = ERR_PTR(xa_err(old));
uncharge:
	atomic_dec(&user->nr_revoked_pages);
	return old;
}

/* Map @page of the attachment's own at @addr, read-only; under pt_lock. */
static vm_fault_t xpmem_zero_insert_own(struct vm_area_struct *vma,
					unsigned long addr, struct page *page)
{
	int err = vm_insert_page(vma, addr, page);

	/* -EBUSY: a PTE is there already (another thread's) */
	if (!err || err == -EBUSY)
		return VM_FAULT_NOPAGE;
	return vmf_error(err);
}

/**
 * xpmem_zero_fault - a fault or write-protect fault of a revoked attachment
 * @vmf: the fault, on an attachment VMA (the attacher's mmap_lock held)
 * @mkwrite: from ->pfn_mkwrite: a write to a read-only special PTE
 *
 * SIGBUS unless the attachment was made with ZERO_REVOKED.  May wait for:
 * att->pt_lock (held by others only to allocate page tables or insert),
 * a page allocation (which may reclaim, and so call invalidate callbacks:
 * none takes att->pt_lock), and the zap worker
 * (->pfn_mkwrite on the zero page, as any mkwrite of an attachment may;
 * an owner's huge PMD the revocation has not zapped yet); nothing of the
 * owner.
 *
 * Return: VM_FAULT_NOPAGE (the access is repeated), VM_FAULT_OOM (no
 * memory for the page), or VM_FAULT_SIGBUS (no ZERO_REVOKED, or the
 * user's max_revoked_pages reached).
 */
vm_fault_t xpmem_zero_fault(struct vm_fault *vmf, bool mkwrite)
{
	struct vm_area_struct *vma = vmf->vma;
	struct xpmem_att *att = vma->vm_private_data;
	struct page *page;
	vm_fault_t ret;
	pmd_t *pmd;

	if (!att->zero_revoked)
		return VM_FAULT_SIGBUS;
	if (mkwrite) {
		/*
		 * Only a special PTE gets here: the zero page, or an owner
		 * page the revocation has not zapped yet (our own page is an
		 * ordinary one, which the core makes writable without us).
		 * Gone, the write comes back as a write fault, which maps the
		 * attachment's own ordinary page: this branch is taken at most
		 * once per page and PTE.
		 */
		xpmem_zap_att(att, xpmem_att_seg_off(att, vmf->pgoff),
			      PAGE_SIZE);
		return VM_FAULT_NOPAGE;
	}
	page = xpmem_zero_own_page(att,
				   xpmem_att_seg_off(att, vmf->pgoff) >>
				   PAGE_SHIFT,
				   vmf->flags & FAULT_FLAG_WRITE);
	if (IS_ERR(page))
		return PTR_ERR(page) == -ENOMEM ? VM_FAULT_OOM :
						  VM_FAULT_SIGBUS;
	/*
	 * Mapped read-only (an existing PTE is left alone, never replaced).
	 * A huge PMD of the owner's that the revocation has not zapped yet
	 * goes first (no PTE can be inserted under it).
	 */
	mutex_lock(&att->pt_lock);
	pmd = xpmem_map_find_pmd(vma->vm_mm, vmf->address);
	if (pmd && pmd_leaf(READ_ONCE(*pmd))) {
		mutex_unlock(&att->pt_lock);
		xpmem_zap_att(att, xpmem_att_seg_off(att, vmf->pgoff) -
			      (vmf->address & ~PMD_MASK), PMD_SIZE);
		return VM_FAULT_NOPAGE;
	}
	if (page)
		ret = xpmem_zero_insert_own(vma, vmf->address, page);
	else
		ret = xpmem_insert_mixed(vma, vmf->address,
					 page_to_pfn(xpmem_revoked_zero));
	mutex_unlock(&att->pt_lock);
	return ret;
}
