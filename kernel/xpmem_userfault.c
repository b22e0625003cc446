// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_userfault.c - an attacher fault on owner memory registered with
 * userfaultfd
 *
 * hmm_range_fault() cannot wait for a userfaultfd handler, so the fault
 * path (xpmem_fault.c) only looks at such owner pages, and when the page
 * it needs is not there yet it comes here: the owner's page is faulted
 * as an owner access would fault it, with the attacher's mmap_lock
 * dropped, and the attacher's access is repeated.
 */
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/userfaultfd_k.h>

#include "xpmem_internal.h"
#include "compat.h"

/**
 * xpmem_userfault_handle - fault the owner's page as the owner would
 * @vmf: the attacher's fault
 * @owner: the owner's mm, its mmap_lock held for reading
 * @mkwrite: the fault is a ->pfn_mkwrite
 * @ret: what the fault returns so far; changed as said below
 *
 * The fault failed (*@ret is VM_FAULT_SIGBUS) on an owner page in a VMA
 * registered with userfaultfd.  A missing, write-protected or minor page
 * there waits for the owner's handler, which hmm_range_fault() cannot do
 * (it faults without FAULT_FLAG_ALLOW_RETRY, and userfaultfd answers such
 * a fault with SIGBUS), so it only looks at such VMAs (look_only) and the
 * owner's page is faulted here, as an owner access would fault it: the
 * attacher's mmap_lock dropped, then one handle_mm_fault() of that page
 * under the owner's lock alone, which drops that too while it waits for
 * the handler, killably (and interruptibly for a fault from user mode).
 * No mmap_lock is held while the handler runs.  The access is then
 * repeated (VM_FAULT_RETRY) and maps what the handler placed.  The
 * attacher VMA and its locks are checked again by the repeated fault.
 * ->pfn_mkwrite cannot drop the lock: it zaps the page and the write
 * comes back as a ->fault, which can (it never comes back here as a
 * mkwrite, so the repeat progresses).  A fault that may not drop its lock
 * (no FAULT_FLAG_ALLOW_RETRY) keeps SIGBUS, as userfaultfd gives it.  Not
 * FAULT_FLAG_USER (the attacher's own fault is the user's, and the owner's
 * is a kernel access): a handler made with UFFD_USER_MODE_ONLY fails it,
 * as it fails every kernel access to the owner's memory.
 *
 * Context: called after xpmem_fault_resolve() with the attacher's
 * mmap_lock and the owner's held (one lock when the owner is the
 * attacher); waits, with no mmap_lock held, for the owner's userfaultfd
 * handler (killably), and for the zap worker for a ->pfn_mkwrite.
 * Return: false with the locks as they were and *@ret as it was (or
 * VM_FAULT_RETRY for FAULT_FLAG_RETRY_NOWAIT, VM_FAULT_NOPAGE for a
 * mkwrite); true with the owner's lock dropped: *@ret is then
 * VM_FAULT_RETRY with the attacher's lock dropped too, or the owner
 * fault's error with the attacher's lock held again.
 */
bool xpmem_userfault_handle(struct vm_fault *vmf, struct mm_struct *owner,
			    bool mkwrite, vm_fault_t *ret)
{
	struct mm_struct *mm = vmf->vma->vm_mm;
	struct xpmem_att *att = vmf->vma->vm_private_data;
	bool write = mkwrite || (vmf->flags & FAULT_FLAG_WRITE);
	unsigned int flags = FAULT_FLAG_ALLOW_RETRY | FAULT_FLAG_KILLABLE |
			     FAULT_FLAG_REMOTE;
	struct vm_area_struct *ovma;
	unsigned long oaddr;
	vm_fault_t oret;

	if (*ret != VM_FAULT_SIGBUS || READ_ONCE(att->dead) ||
	    fatal_signal_pending(current) || !xpmem_mirror_find(vmf, &oaddr))
		return false;
	ovma = vma_lookup(owner, oaddr);
	if (!ovma || !userfaultfd_armed(ovma) || !xpmem_mirror_vma_ok(ovma) ||
	    !(ovma->vm_flags & VM_READ) ||
	    (write && !(ovma->vm_flags & VM_WRITE)))
		return false;
	if (!(vmf->flags & FAULT_FLAG_ALLOW_RETRY))
		return false;
	if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT) {
		*ret = VM_FAULT_RETRY;
		return false;
	}
	if (mkwrite) {
		xpmem_zap_att(att, xpmem_att_seg_off(att, vmf->pgoff),
			      PAGE_SIZE);
		*ret = VM_FAULT_NOPAGE;
		return false;
	}
	if (write)
		flags |= FAULT_FLAG_WRITE;
	if (vmf->flags & FAULT_FLAG_USER)
		flags |= vmf->flags & FAULT_FLAG_INTERRUPTIBLE;
	if (mm != owner)
		mmap_read_unlock(mm);
	oret = handle_mm_fault(ovma, oaddr & PAGE_MASK, flags, NULL);
	if (!xpmem_mm_fault_dropped_lock(oret))
		mmap_read_unlock(owner);
	*ret = VM_FAULT_RETRY;
	if (!(oret & VM_FAULT_ERROR) || (oret & VM_FAULT_RETRY) ||
	    mmap_read_lock_killable(mm))
		return true;
	/* the handler refused (UFFD_FEATURE_SIGBUS, user mode only) */
	*ret = oret & VM_FAULT_OOM ? VM_FAULT_OOM : VM_FAULT_SIGBUS;
	return true;
}
