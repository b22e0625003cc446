// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_attach.c - attachments: ATTACH, DETACH and the page fault
 *
 * Each segment has an anonymous inode on a private pseudo filesystem.  An
 * attachment is a MAP_SHARED mapping of a pseudo file opened on that inode,
 * at file offset == segment offset, so invalidating a range of the segment
 * is unmap_mapping_range() on the inode, whoever maps it.
 *
 * The fault handler mirrors the owner's page tables (the HMM pattern):
 *   seq = mmu_interval_read_begin()
 *   lock owner mmap (trylock), hmm_range_fault() over a window, unlock
 *   lock seg->lock; if mmu_interval_read_retry(seq): unlock, start over
 *   insert PTEs; unlock seg->lock
 * No page is pinned beyond the PTE.  The window is the PMD-sized block
 * around the fault: the owner's page at the faulting address is faulted
 * into the owner's mm, the others are mapped if the owner has them.
 *
 * Page cache and shmem pages are inserted as ordinary refcounted PTEs
 * (vm_insert_page), so get_user_pages() works on them: futexes, O_DIRECT,
 * vmsplice and process_vm_readv on an attachment of shared memory.
 * Anonymous pages cannot be mapped into another mm as ordinary pages; they
 * get special PFN PTEs, on which get_user_pages() fails with EFAULT.
 *
 * Writable attachments use write notification: pages are mapped read-only
 * first and the first write to each goes through ->pfn_mkwrite or
 * ->page_mkwrite, which makes the owner's page writable (breaking COW in
 * the owner if needed) before the PTE is made writable.  So an attacher
 * can never write into a page that is read-only in the owner.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hmm.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/pfn_t.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "xpmem_internal.h"
#include "compat.h"

#define XPMEM_FS_MAGIC		0x78706d6d	/* "xpmm" */

/* Fault window entries kept on the stack; larger windows use kmalloc. */
#define XPMEM_FAULT_STACK_PAGES	32

static unsigned int fault_window_pages = PTRS_PER_PTE;
module_param(fault_window_pages, uint, 0644);
MODULE_PARM_DESC(fault_window_pages,
		 "Pages mapped per attacher fault when the owner has them resident (1..512, power of two; default 512 = one PMD)");

static struct vfsmount *xpmem_mnt;
static const struct file_operations xpmem_att_fops;

static int xpmem_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, XPMEM_FS_MAGIC) ? 0 : -ENOMEM;
}

/*
 * No .owner: the module's own kern_mount() would then pin the module.
 * Attachment files pin it instead (xpmem_cmd_attach()).
 */
static struct file_system_type xpmem_fs_type = {
	.name = "xpmem",
	.init_fs_context = xpmem_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

int xpmem_fs_init(void)
{
	xpmem_mnt = kern_mount(&xpmem_fs_type);
	return PTR_ERR_OR_ZERO(xpmem_mnt);
}

void xpmem_fs_exit(void)
{
	kern_unmount(xpmem_mnt);
}

/**
 * xpmem_seg_inode_alloc - a fresh inode whose address_space a segment's
 * attachments will map
 *
 * Return: the inode or an ERR_PTR.
 */
struct inode *xpmem_seg_inode_alloc(void)
{
	return alloc_anon_inode(xpmem_mnt->mnt_sb);
}

static unsigned long xpmem_window_pages(void)
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

static int xpmem_noop_pte(pte_t *pte, unsigned long addr, void *data)
{
	return 0;
}

/*
 * Make sure the page table page for the window exists, so that inserting
 * under seg->lock never allocates (the invalidate callback, which takes
 * seg->lock, runs in reclaim).
 */
static int xpmem_fault_prepare_pt(struct vm_fault *vmf)
{
	if (!pmd_none(*vmf->pmd))
		return 0;
	return apply_to_page_range(vmf->vma->vm_mm, vmf->address & PAGE_MASK,
				   PAGE_SIZE, xpmem_noop_pte, NULL);
}

/*
 * The owner's mmap_lock is contended.  Drop the attacher's and wait for the
 * owner's without holding anything, then let the fault be retried; or, if
 * the caller cannot retry, wait while holding the attacher's lock.
 * ->pfn_mkwrite cannot be retried: the core carries on after it as if the
 * lock were still held.
 *
 * Return: true if the fault must return VM_FAULT_RETRY now.
 */
static bool xpmem_fault_lock_owner(struct vm_fault *vmf,
				   struct mm_struct *owner, bool mkwrite)
{
	if (mmap_read_trylock(owner))
		return false;

	if (!mkwrite && (vmf->flags & FAULT_FLAG_ALLOW_RETRY)) {
		if (!(vmf->flags & FAULT_FLAG_RETRY_NOWAIT)) {
			mmap_read_unlock(vmf->vma->vm_mm);
			mmap_read_lock(owner);
			mmap_read_unlock(owner);
		}
		atomic_long_inc(&xpmem_stats.fault_retries);
		return true;
	}
	/* Different mm, so a different lock instance: not a recursion. */
	down_read_nested(&owner->mmap_lock, SINGLE_DEPTH_NESTING);
	return false;
}

/*
 * Pages that may be mapped as ordinary refcounted PTEs: small or THP page
 * cache and shmem folios.  Anonymous, KSM, zero and hugetlb pages (whose
 * rmap is handled elsewhere or not at all) get special PFN PTEs.
 */
static bool xpmem_page_is_file(unsigned long pfn)
{
	struct folio *folio;

	if (!pfn_valid(pfn) || is_zero_pfn(pfn))
		return false;
	folio = page_folio(pfn_to_page(pfn));
	return folio->mapping && !folio_test_anon(folio) &&
	       !folio_test_hugetlb(folio);
}

static vm_fault_t xpmem_insert_one(struct vm_area_struct *vma,
				   unsigned long addr, unsigned long hpfn)
{
	unsigned long pfn = xpmem_hmm_pfn(hpfn);
	int err;

	if (is_zero_pfn(pfn) && (vma->vm_flags & VM_MAYWRITE))
		return VM_FAULT_SIGBUS;	/* refused by vmf_insert_mixed() */

	if (xpmem_page_is_file(pfn)) {
		/* Page cache / shmem: a normal PTE that GUP can follow. */
		err = vm_insert_page(vma, addr, pfn_to_page(pfn));
		if (!err || err == -EBUSY)
			return VM_FAULT_NOPAGE;
		if (err == -ENOMEM)
			return VM_FAULT_OOM;
		/* anything vm_insert_page() refuses: pfn map */
	}
	return vmf_insert_mixed(vma, addr, pfn_to_pfn_t(pfn));
}

/*
 * Map the resolved window.  Called with seg->lock held and the sequence
 * validated, so every page in @pfns is still mapped by the owner.
 */
static vm_fault_t xpmem_fault_insert(struct vm_fault *vmf, unsigned long start,
				     const unsigned long *pfns,
				     unsigned long npages, unsigned long fidx)
{
	struct vm_area_struct *vma = vmf->vma;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	unsigned long i, mapped = 0;
	vm_fault_t r;

	for (i = 0; i < npages; i++) {
		if (!(pfns[i] & HMM_PFN_VALID) || (pfns[i] & HMM_PFN_ERROR))
			continue;
		/* neighbours: skip the zero page in writable attachments */
		if (i != fidx && (vma->vm_flags & VM_MAYWRITE) &&
		    is_zero_pfn(xpmem_hmm_pfn(pfns[i])))
			continue;
		r = xpmem_insert_one(vma, start + i * PAGE_SIZE, pfns[i]);
		if (i == fidx)
			ret = r;
		if (!(r & VM_FAULT_ERROR))
			mapped++;
	}
	atomic_long_add(mapped, &xpmem_stats.pages_mapped);
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
	struct xpmem_seg *seg = att->seg;
	struct mm_struct *owner = seg->mm;
	unsigned long stack_pfns[XPMEM_FAULT_STACK_PAGES];
	unsigned long *pfns = stack_pfns;
	bool self = owner == vma->vm_mm;
	bool write = vmf->flags & FAULT_FLAG_WRITE;
	unsigned long win, start, end, npages, fidx, i;
	struct hmm_range range = {};
	vm_fault_t ret;
	int err;

	atomic_long_inc(&xpmem_stats.faults);
	if (READ_ONCE(att->dead) || READ_ONCE(seg->removed))
		return VM_FAULT_SIGBUS;

	win = mkwrite ? PAGE_SIZE : xpmem_window_pages() << PAGE_SHIFT;
	start = max(ALIGN_DOWN(vmf->address, win), vma->vm_start);
	end = min(ALIGN_DOWN(vmf->address, win) + win, vma->vm_end);
	npages = (end - start) >> PAGE_SHIFT;
	fidx = (vmf->address - start) >> PAGE_SHIFT;

	if (npages > ARRAY_SIZE(stack_pfns)) {
		pfns = kmalloc_array(npages, sizeof(*pfns), GFP_KERNEL);
		if (!pfns)
			return VM_FAULT_OOM;
	}

	if (!mmget_not_zero(owner)) {
		ret = VM_FAULT_SIGBUS;		/* the owner has exited */
		goto free_pfns;
	}

	range.notifier = &seg->notifier;
	range.start = seg->vaddr + (vma->vm_pgoff << PAGE_SHIFT) +
		      (start - vma->vm_start);
	range.end = range.start + (npages << PAGE_SHIFT);
	range.hmm_pfns = pfns;
	range.pfn_flags_mask = HMM_PFN_REQ_FAULT | HMM_PFN_REQ_WRITE;

again:
	for (i = 0; i < npages; i++)
		pfns[i] = 0;
	pfns[fidx] = HMM_PFN_REQ_FAULT | (write ? HMM_PFN_REQ_WRITE : 0);
	range.notifier_seq = mmu_interval_read_begin(&seg->notifier);

	if (!self && xpmem_fault_lock_owner(vmf, owner, mkwrite)) {
		ret = VM_FAULT_RETRY;
		goto put_owner;
	}
	err = hmm_range_fault(&range);
	if (!self)
		mmap_read_unlock(owner);
	if (err == -EBUSY) {
		if (fatal_signal_pending(current)) {
			ret = VM_FAULT_SIGBUS;
			goto put_owner;
		}
		goto again;
	}
	if (err) {
		ret = err == -ENOMEM ? VM_FAULT_OOM : VM_FAULT_SIGBUS;
		goto put_owner;
	}
	/* A writable attachment never maps the zero page: fault it writable. */
	if (!write && (vma->vm_flags & VM_MAYWRITE) &&
	    is_zero_pfn(xpmem_hmm_pfn(pfns[fidx]))) {
		write = true;
		goto again;
	}

	if (!mkwrite && xpmem_fault_prepare_pt(vmf)) {
		ret = VM_FAULT_OOM;
		goto put_owner;
	}

	mutex_lock(&seg->lock);
	if (mmu_interval_read_retry(&seg->notifier, range.notifier_seq)) {
		mutex_unlock(&seg->lock);
		goto again;
	}
	if (seg->removed || att->dead) {
		ret = VM_FAULT_SIGBUS;
	} else if (mkwrite) {
		/*
		 * 0 lets the core make the PTE writable if it is unchanged;
		 * an invalidation after this point zaps it first.
		 */
		ret = pte_pfn(vmf->orig_pte) == xpmem_hmm_pfn(pfns[0]) ?
		      0 : VM_FAULT_NOPAGE;
	} else {
		ret = xpmem_fault_insert(vmf, start, pfns, npages, fidx);
	}
	mutex_unlock(&seg->lock);

put_owner:
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

static const struct vm_operations_struct xpmem_vm_ops = {
	.open = xpmem_att_vma_open,
	.close = xpmem_att_vma_close,
	.fault = xpmem_att_fault,
	.pfn_mkwrite = xpmem_att_mkwrite,
	.page_mkwrite = xpmem_att_mkwrite,
};

static int xpmem_att_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct xpmem_att *att = file->private_data;

	/* Only the vm_mmap() in xpmem_cmd_attach() maps this file. */
	if (vma->vm_mm != att->mm || !(vma->vm_flags & VM_SHARED) ||
	    vma->vm_pgoff != att->offset >> PAGE_SHIFT ||
	    vma->vm_end - vma->vm_start != att->size)
		return -EINVAL;
	if (!att->writable) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		vm_flags_clear(vma, VM_MAYWRITE);
	}
	/* Children do not inherit attachments: they GET and ATTACH anew. */
	vm_flags_set(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTCOPY |
			  VM_DONTDUMP);
	vma->vm_ops = &xpmem_vm_ops;
	vma->vm_private_data = att;
	atomic_set(&att->nr_vmas, 1);
	return 0;
}

static void xpmem_att_free(struct xpmem_att *att)
{
	struct xpmem_permit *permit = att->permit;

	spin_lock(&permit->lock);
	list_del(&att->permit_node);
	spin_unlock(&permit->lock);
	xpmem_seg_del_att(att->seg, att);
	xpmem_seg_put(att->seg);
	xpmem_permit_put(permit);
	kfree(att);
	atomic_long_dec(&xpmem_stats.attachments);
}

static int xpmem_att_release(struct inode *inode, struct file *file)
{
	xpmem_att_free(file->private_data);
	return 0;
}

static const struct file_operations xpmem_att_fops = {
	.owner = THIS_MODULE,
	.mmap = xpmem_att_mmap,
	.release = xpmem_att_release,
};

/**
 * xpmem_cmd_attach - ATTACH: map part of a segment into the caller
 * @ctx: the caller's device context
 * @cmd: classic ATTACH argument; @cmd->vaddr is the wanted address (0: any)
 *       on entry and the mapped address on success
 *
 * A non-zero address is used as with MAP_FIXED.  The size is rounded up to
 * whole pages.  @cmd->fd is ignored; @cmd->flags must be 0.
 *
 * Return: 0, -EINVAL for a malformed request, -ENOENT for an unknown or
 * released permit or a removed segment, -EACCES for another process's
 * permit, -ENOMEM, or what mmap returns.
 */
int xpmem_cmd_attach(struct xpmem_ctx *ctx, struct xpmem_cmd_attach *cmd)
{
	unsigned long size = PAGE_ALIGN(cmd->size);
	unsigned long addr = cmd->vaddr;
	struct xpmem_permit *permit;
	struct xpmem_seg *seg;
	struct xpmem_att *att;
	struct file *file;
	unsigned long mapped;
	int ret;

	if (cmd->flags || cmd->apid <= 0)
		return -EINVAL;
	if (cmd->offset < 0 || offset_in_page(cmd->offset) || !cmd->size ||
	    !size || offset_in_page(addr))
		return -EINVAL;

	permit = xpmem_permit_lookup(cmd->apid);
	if (!permit)
		return -ENOENT;
	if (permit->mm != ctx->mm) {
		ret = -EACCES;
		goto put_permit;
	}
	seg = permit->seg;
	if (cmd->offset >= seg->size || size > seg->size - cmd->offset) {
		ret = -EINVAL;
		goto put_permit;
	}
	if (READ_ONCE(seg->removed)) {
		ret = -ENOENT;
		goto put_permit;
	}

	att = kzalloc(sizeof(*att), GFP_KERNEL);
	if (!att) {
		ret = -ENOMEM;
		goto put_permit;
	}
	att->permit = permit;		/* takes over the lookup reference */
	att->seg = seg;
	att->mm = ctx->mm;
	att->offset = cmd->offset;
	att->size = size;
	att->writable = permit->writable;

	spin_lock(&permit->lock);
	if (permit->released) {
		spin_unlock(&permit->lock);
		ret = -ENOENT;
		goto free_att;
	}
	list_add(&att->permit_node, &permit->atts);
	spin_unlock(&permit->lock);
	xpmem_seg_get(seg);
	xpmem_seg_add_att(seg, att);
	atomic_long_inc(&xpmem_stats.attachments);

	/* The file's f_op->owner reference is taken here, dropped by fput. */
	if (!try_module_get(THIS_MODULE)) {
		xpmem_att_free(att);
		return -ENOENT;
	}
	ihold(seg->inode);
	file = alloc_file_pseudo(seg->inode, xpmem_mnt, "xpmem", O_RDWR,
				 &xpmem_att_fops);
	if (IS_ERR(file)) {
		iput(seg->inode);
		module_put(THIS_MODULE);
		xpmem_att_free(att);
		return PTR_ERR(file);
	}
	file->private_data = att;	/* from here the file owns att */

	mapped = vm_mmap(file, addr, size,
			 PROT_READ | (att->writable ? PROT_WRITE : 0),
			 MAP_SHARED | (addr ? MAP_FIXED : 0), cmd->offset);
	fput(file);
	if (IS_ERR_VALUE(mapped))
		return (int)mapped;
	cmd->vaddr = mapped;
	return 0;

free_att:
	kfree(att);
put_permit:
	xpmem_permit_put(permit);
	return ret;
}

static bool xpmem_vma_is_att(struct vm_area_struct *vma)
{
	return vma->vm_file && vma->vm_file->f_op == &xpmem_att_fops;
}

/*
 * munmap every VMA of the current mm that maps an attachment matching
 * @att (if non-NULL) or belonging to @permit.  The lock is dropped around
 * each vm_munmap(); an attachment freed meanwhile is only compared, never
 * dereferenced.
 */
static void xpmem_unmap_matching(struct xpmem_att *att,
				 struct xpmem_permit *permit)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	unsigned long start, len;

	if (!mm)
		return;
	for (;;) {
		VMA_ITERATOR(vmi, mm, 0);

		len = 0;
		mmap_read_lock(mm);
		for_each_vma(vmi, vma) {
			struct xpmem_att *cur;

			if (!xpmem_vma_is_att(vma))
				continue;
			cur = vma->vm_file->private_data;
			if (att ? cur == att : cur->permit == permit) {
				start = vma->vm_start;
				len = vma->vm_end - vma->vm_start;
				break;
			}
		}
		mmap_read_unlock(mm);
		if (!len || vm_munmap(start, len))
			return;
	}
}

/**
 * xpmem_cmd_detach - DETACH: unmap the attachment containing @vaddr
 * @ctx: the caller's device context
 * @vaddr: any address inside the attachment
 *
 * Return: 0, or -EINVAL if @vaddr is not inside an attachment.
 */
int xpmem_cmd_detach(struct xpmem_ctx *ctx, unsigned long vaddr)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct xpmem_att *att = NULL;
	unsigned long start = 0, len = 0;
	bool whole = false;

	mmap_read_lock(mm);
	vma = vma_lookup(mm, vaddr);
	if (vma && xpmem_vma_is_att(vma)) {
		att = vma->vm_file->private_data;
		start = vma->vm_start;
		len = vma->vm_end - vma->vm_start;
		whole = atomic_read(&att->nr_vmas) == 1;
	}
	mmap_read_unlock(mm);
	if (!att)
		return -EINVAL;
	/* The common case, one VMA: no walk over the address space. */
	if (whole) {
		vm_munmap(start, len);
		return 0;
	}
	xpmem_unmap_matching(att, NULL);
	return 0;
}

/**
 * xpmem_att_unmap_all - munmap the caller's attachments through @permit
 * @permit: a permit of the current process
 */
void xpmem_att_unmap_all(struct xpmem_permit *permit)
{
	if (current->mm == permit->mm)
		xpmem_unmap_matching(NULL, permit);
}

/**
 * xpmem_att_kill_all - make the remaining attachments of @permit fault
 * with SIGBUS
 * @permit: a released permit
 */
void xpmem_att_kill_all(struct xpmem_permit *permit)
{
	struct xpmem_seg *seg = permit->seg;
	unsigned long lo = ULONG_MAX, hi = 0;
	struct xpmem_att *att;

	mutex_lock(&seg->lock);
	spin_lock(&permit->lock);
	list_for_each_entry(att, &permit->atts, permit_node) {
		att->dead = true;
		/* already unmapped (RELEASE), only waiting for its fput */
		if (!atomic_read(&att->nr_vmas))
			continue;
		lo = min(lo, att->offset);
		hi = max(hi, att->offset + att->size);
	}
	spin_unlock(&permit->lock);
	mutex_unlock(&seg->lock);

	/* Other attachers of the same offsets only refault. */
	if (lo < hi)
		xpmem_seg_zap(seg, lo, hi - lo);
}
