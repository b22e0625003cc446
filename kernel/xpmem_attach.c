// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_attach.c - attachments: ATTACH, their files and their VMAs
 *
 * An attachment is a MAP_SHARED mapping of a pseudo file opened on an
 * anonymous inode of its own, at file offset == segment offset.  The inode
 * gives it an address_space, so invalidating it is unmap_mapping_range(),
 * whoever maps it and however its VMAs were split or moved; its
 * mmu_interval_notifiers, one per segment range it maps, cover the owner's
 * ranges (the mirror, xpmem_mirror.c).
 *
 * An attachment ends when its last VMA is unmapped and its file released.
 * RELEASE of its permit, REMOVE of its segment (xpmem_detach.c), and the
 * owner's exit make it dead first: its PTEs are zapped and every later
 * access is SIGBUS (zeros with ZERO_REVOKED: xpmem_zero.c).  POPULATE is
 * xpmem_populate.c.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "xpmem_internal.h"
#include "compat.h"

#define XPMEM_FS_MAGIC		0x78706d6d	/* "xpmm" */

/*
 * Mounted while any attachment inode exists or /dev/xpmem is open
 * (simple_pin_fs()); the mount pins the module through .owner, so a last
 * fput() after rmmod cannot reach freed module text or the freed
 * file_system_type.
 */
static struct vfsmount *xpmem_attach_mnt;
static int xpmem_attach_mnt_count;

static int xpmem_attach_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, XPMEM_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type xpmem_attach_fs_type = {
	.owner = THIS_MODULE,
	.name = "xpmem",
	.init_fs_context = xpmem_attach_init_fs_context,
	.kill_sb = kill_anon_super,
};

/**
 * xpmem_attach_fs_pin - keep the attachments' filesystem mounted
 *
 * Each open of /dev/xpmem pins it until xpmem_attach_fs_unpin() at its
 * release, so that an ATTACH after the last attachment ended does not
 * mount it again (a new superblock), nor the end of that attachment
 * unmount it.  Each attachment pins it too, for as long as its inode
 * lives.  Context: process (open of /dev/xpmem), no lock held; may sleep
 * while the first pin mounts (a superblock and root inode, charged to
 * nobody: one for the whole module).  Nothing another user controls is
 * waited for; xpmem_attach_fs_unpin() at a release or in the end worker
 * waits for nothing but the unmount of an empty file system by the last
 * pin.
 *
 * Return: 0, or a negative errno from the mount.
 */
int xpmem_attach_fs_pin(void)
{
	return simple_pin_fs(&xpmem_attach_fs_type, &xpmem_attach_mnt,
			     &xpmem_attach_mnt_count);
}

/* Drops xpmem_attach_fs_pin()'s pin; the last one unmounts. */
void xpmem_attach_fs_unpin(void)
{
	simple_release_fs(&xpmem_attach_mnt, &xpmem_attach_mnt_count);
}

static void xpmem_attach_unlink(struct xpmem_att *att)
{
	struct xpmem_permit *permit = att->permit;
	struct xpmem_seg *seg = att->seg;

	mutex_lock(&permit->lock);
	if (!list_empty(&att->permit_node)) {
		list_del_init(&att->permit_node);
		atomic_dec(&permit->nr_atts);
	}
	mutex_unlock(&permit->lock);
	mutex_lock(&seg->att_lock);
	if (!list_empty(&att->seg_node)) {
		list_del_init(&att->seg_node);
		atomic_dec(&seg->nr_atts);
	}
	mutex_unlock(&seg->att_lock);
}

/*
 * Drop what @att holds of its permit, segment and ctx, and its own pages
 * (no VMA maps them any more); count it gone.  What its notifiers still
 * use - the owner's record, the mapped bitmaps, the inode - it keeps
 * until they are removed.
 */
static void xpmem_attach_put_objects(struct xpmem_att *att)
{
	xpmem_zero_att_destroy(att);
	xpmem_attach_unlink(att);
	xpmem_permit_put(att->permit);
	xpmem_seg_put(att->seg);
	atomic_dec(&att->ctx->nr_atts);
	xpmem_ctx_put(att->ctx);
	atomic_long_dec(&xpmem_stats.attachments);
}

/*
 * Remove the notifiers, then free what only they and the zaps their
 * invalidations listed use, and @att.  Waits, uninterruptibly, for an
 * invalidation of the owner that is calling them to end
 * (mmu_interval_notifier_remove()): something the owner can prolong, so
 * only the worker of xpmem_attach_free() calls it.  The
 * callback may still run until then; it uses nothing
 * xpmem_attach_put_objects() put.  Once it returns, no zap naming @att is
 * left: the ones listed by the invalidations in progress were done before
 * those ended.
 */
static void xpmem_attach_free_mirrored(struct xpmem_att *att)
{
	unsigned int i;

	cancel_work_sync(&att->settle_work);
	for (i = 0; i < att->nr_mirrors; i++)
		if (att->mirrors[i].live)
			mmu_interval_notifier_remove(&att->mirrors[i].notifier);
	xpmem_owner_put(att);
	xpmem_zap_mapped_destroy(att);
	/* before the mount that holds its superblock */
	if (att->inode)
		iput(att->inode);
	kvfree(att);
	simple_release_fs(&xpmem_attach_mnt, &xpmem_attach_mnt_count);
}

/*
 * The worker of an attachment's end: runs on its own queue, within a tick
 * of the release (xpmem_mirror_defer() queues ends in batches), holds no
 * lock, and nothing waits for it (an owner that keeps invalidating only
 * delays it, and with it the freeing of @att's memory).
 *
 * May wait for: the settle work (cancel_work_sync(), itself waiting for
 * the owner's invalidations in flight) and, in
 * mmu_interval_notifier_remove(), the end of the owner's invalidations in
 * flight - uninterruptibly, but in a kworker, never in a task of the
 * attacher or the owner.  The core never calls it, so it cannot hold an
 * i_mmap_rwsem, mmap_lock or folio lock the wait depends on.  It owns
 * @att: the release (or failed ATTACH) handed it over and nothing else
 * reaches @att but the batch that queues this work (xpmem_mirror_defer())
 * and the notifier callbacks and their listed zaps, which the removal
 * waits for.  It maps nothing and touches no owner memory;
 * the pages it frees were charged to the attacher (memcg, and the user's
 * revoked-page count was given back at release).
 */
static void xpmem_attach_unmirror_work(struct work_struct *work)
{
	xpmem_attach_free_mirrored(container_of(work, struct xpmem_att,
						free_work));
}

/*
 * The end of @att, from its release or a failed ATTACH (which undoes
 * xpmem_attach_alloc() and whatever of the setup was done this way): the
 * objects are dropped at once, the rest is left to the worker.
 */
static void xpmem_attach_free(struct xpmem_att *att)
{
	WRITE_ONCE(att->ended, true);
	xpmem_attach_put_objects(att);
	INIT_WORK(&att->free_work, xpmem_attach_unmirror_work);
	xpmem_mirror_defer(att);
}

static int xpmem_attach_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct xpmem_att *att = file->private_data;

	/* Only the vm_mmap() in xpmem_attach_create() maps this file, once. */
	if (vma->vm_mm != att->mm || !(vma->vm_flags & VM_SHARED) ||
	    vma->vm_pgoff != att->offset >> PAGE_SHIFT ||
	    vma->vm_end - vma->vm_start != att->size ||
	    atomic_read(&att->nr_vmas))
		return -EINVAL;
	if (!att->writable) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		vm_flags_clear(vma, VM_MAYWRITE);
	}
	/* never over the source range it mirrors (xpmem_mirror.c) */
	if (xpmem_mirror_maps_itself(att->seg, vma->vm_mm, vma->vm_start,
				     att->offset, att->size))
		return -EADDRNOTAVAIL;
	/*
	 * Children do not inherit attachments: they GET and ATTACH anew.
	 * VM_IO keeps it so (madvise(MADV_DOFORK) refuses VM_IO), and keeps
	 * get_user_pages() and hmm_range_fault() away.
	 */
	vm_flags_set(vma, VM_MIXEDMAP | VM_IO | VM_DONTEXPAND | VM_DONTCOPY |
			  VM_DONTDUMP);
	/* THP "madvise" mode: attachments want huge PMDs (xpmem_fault.c) */
	if (xpmem_fault_huge_enabled())
		vm_flags_set(vma, VM_HUGEPAGE);
	vma->vm_ops = &xpmem_fault_vm_ops;
	vma->vm_private_data = att;
	atomic_set(&att->nr_vmas, 1);
	return 0;
}

/*
 * The last VMA is gone (munmap, DETACH, exit).  The objects are dropped at
 * once; the notifiers are removed, and @att freed, by a worker that
 * nothing waits for: removing a notifier waits for the owner's
 * invalidations in progress to end, which another user's owner can
 * prolong at will, and no path to exit or munmap may wait for that.
 *
 * Called from __fput() (task work of munmap, close or exit) with no lock
 * held.  May wait for: permit->lock and seg->att_lock, which RELEASE and
 * REMOVE hold across their zaps - the zap worker, which needs only
 * attachments' i_mmap_rwsem and page table locks, none of which the
 * owner can hold for long - and nothing the owner or another user can
 * prolong.  It maps nothing and touches no owner memory.
 */
static int xpmem_attach_release(struct inode *inode, struct file *file)
{
	xpmem_attach_free(file->private_data);
	return 0;
}

static const struct file_operations xpmem_attach_fops = {
	.owner = THIS_MODULE,
	.mmap = xpmem_attach_mmap,
#ifdef XPMEM_HAVE_HUGE_PFNMAP
	.get_unmapped_area = xpmem_fault_get_unmapped_area,
#endif
	.release = xpmem_attach_release,
};

/* xpmem_find_vma_match() test: any attachment. */
static bool xpmem_attach_vma_any(struct vm_area_struct *vma, void *data)
{
	return xpmem_fault_vma_is_att(vma);
}

/*
 * A fixed attach address must not cover an existing attachment (it would
 * silently detach it) or, in the owner's own process, the source ranges
 * the attachment would map (it would map itself).
 */
static int xpmem_attach_fixed_ok(struct xpmem_seg *seg, unsigned long offset,
				 unsigned long addr, unsigned long size)
{
	struct mm_struct *mm = current->mm;
	int ret = 0;

	if (addr + size < addr || addr + size > mm->task_size)
		return -EINVAL;
	if (xpmem_mirror_maps_itself(seg, mm, addr, offset, size))
		return -EINVAL;

	mmap_read_lock(mm);
	if (xpmem_find_vma_match(mm, addr, addr + size, xpmem_attach_vma_any,
				 NULL))
		ret = -EINVAL;
	mmap_read_unlock(mm);
	return ret;
}

/*
 * Map @file at @addr (FIXED), or where the kernel chooses.  In the owner's
 * own process the kernel's choice may fall on the source range the
 * attachment mirrors, which xpmem_attach_mmap() refuses: then try just above
 * and just below the source ranges before giving up.
 *
 * Return: the address, or an error value.
 */
static unsigned long xpmem_attach_place(struct xpmem_att *att,
					struct file *file,
					unsigned long addr, unsigned long size,
					unsigned long offset)
{
	unsigned long prot = PROT_READ | (att->writable ? PROT_WRITE : 0);
	unsigned long lo = ULONG_MAX, hi = 0, mapped = -EINVAL;
	unsigned long hints[3];
	unsigned int i;

	if (addr)
		return vm_mmap(file, addr, size, prot, MAP_SHARED | MAP_FIXED,
			       offset);
	/* vectored ranges may lie in any order: take the extremes */
	for (i = 0; i < att->nr_mirrors; i++) {
		lo = min(lo, att->mirrors[i].r.oaddr);
		hi = max(hi, att->mirrors[i].r.oaddr + att->mirrors[i].r.len);
	}
	hints[0] = 0;
	hints[1] = hi;
	/* room for the 2 MiB alignment xpmem_fault_get_unmapped_area() adds */
	hints[2] = lo > size + PMD_SIZE ? lo - size - PMD_SIZE : 0;
	for (i = 0; i < ARRAY_SIZE(hints); i++) {
		if (i && (att->seg->mm != current->mm || !hints[i]))
			continue;
		mapped = vm_mmap(file, hints[i], size, prot, MAP_SHARED,
				 offset);
		if (mapped != (unsigned long)-EADDRNOTAVAIL)
			return mapped;
	}
	return mapped == (unsigned long)-EADDRNOTAVAIL ? -ENOMEM : mapped;
}

/* Link @att into its permit and segment, unless they ended meanwhile. */
static int xpmem_attach_link(struct xpmem_att *att)
{
	struct xpmem_permit *permit = att->permit;
	struct xpmem_seg *seg = att->seg;
	int ret = 0;

	mutex_lock(&permit->lock);
	if (permit->released) {
		ret = -ENOENT;
	} else {
		list_add(&att->permit_node, &permit->atts);
		atomic_inc(&permit->nr_atts);
	}
	mutex_unlock(&permit->lock);
	if (ret)
		return ret;

	mutex_lock(&seg->att_lock);
	if (seg->removed) {
		ret = -ENOENT;
	} else {
		list_add(&att->seg_node, &seg->atts);
		atomic_inc(&seg->nr_atts);
	}
	mutex_unlock(&seg->att_lock);
	return ret;
}

/*
 * The owner's record, and a notifier per mirror; *@quiet: whether they
 * may settle at once (xpmem_owner_quiet(), asked before the insertion).
 */
static int xpmem_attach_insert(struct xpmem_att *att, bool *quiet)
{
	unsigned int i;
	int ret;

	ret = xpmem_owner_get(att, att->seg->mm);
	*quiet = !ret && xpmem_owner_quiet(att);
	for (i = 0; i < att->nr_mirrors && !ret; i++) {
		struct xpmem_mirror *m = &att->mirrors[i];

		ret = mmu_interval_notifier_insert(&m->notifier, att->seg->mm,
						   m->r.oaddr, m->r.len,
						   &xpmem_mirror_ops);
		m->live = !ret;
	}
	return ret;
}

/*
 * Mirror the owner's ranges: the owner must still have an address space.
 *
 * The first notifier of an mm takes every lock of it, VMA by VMA, and
 * gives up with -EINTR as soon as a signal is pending: a caller whose
 * signals come faster than that walk ends (a profiling timer, an owner of
 * thousands of VMAs) would never get through.  So, unless the owner's
 * MAKE registered everything already (xpmem_owner_ready()), every
 * signal but SIGKILL and SIGSTOP is blocked for the registration and
 * delivered after it.  What still ends it is a fatal signal (-EINTR) or
 * io_uring task work (TIF_NOTIFY_SIGNAL, which no mask holds back):
 * ATTACH, an ioctl only, has done nothing visible yet and is restarted
 * once the work has run, as a classic caller expects no EINTR.
 */
static int xpmem_attach_mirror(struct xpmem_att *att)
{
	struct xpmem_seg *seg = att->seg;
	sigset_t all, old;
	bool quiet;
	int ret;

	if (!mmget_not_zero(seg->mm))
		return -ENOENT;
	if (xpmem_owner_ready(seg)) {
		ret = xpmem_attach_insert(att, &quiet);
	} else {
		siginitsetinv(&all, sigmask(SIGKILL) | sigmask(SIGSTOP));
		sigprocmask(SIG_BLOCK, &all, &old);
		ret = xpmem_attach_insert(att, &quiet);
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	if (!ret)
		xpmem_mirror_settle(att, quiet);
	mmput(seg->mm);
	if (ret == -EINTR && !fatal_signal_pending(current))
		ret = -ERESTARTNOINTR;
	return ret;
}

/*
 * The parts of the segment's ranges that segment offsets [@offset,
 * @offset + @size) of @att cover, one mirror each.
 */
static void xpmem_attach_set_mirrors(struct xpmem_att *att,
				     unsigned long offset,
				     unsigned long size)
{
	const struct xpmem_seg *seg = att->seg;
	unsigned long end = offset + size;
	unsigned int i;

	for (i = 0; i < att->nr_mirrors; i++) {
		const struct xpmem_seg_range *r =
			&seg->ranges[att->first_range + i];
		struct xpmem_mirror *m = &att->mirrors[i];

		m->att = att;
		m->r.off = max(offset, r->off);
		m->r.len = min(end, r->off + r->len) - m->r.off;
		m->r.oaddr = xpmem_seg_range_oaddr(r, m->r.off);
	}
}

/* A new attachment of @permit, charged to @ctx; takes over @permit's ref. */
static struct xpmem_att *xpmem_attach_alloc(struct xpmem_ctx *ctx,
					    struct xpmem_permit *permit,
					    unsigned long offset,
					    unsigned long size)
{
	struct xpmem_seg *seg = permit->seg;
	unsigned int first = xpmem_seg_range_index(seg, offset);
	unsigned int nr = xpmem_seg_range_index(seg, offset + size - 1) -
			  first + 1;
	struct xpmem_att *att;
	int ret;

	if (!xpmem_ctx_charge_att(&ctx->nr_atts,
				  READ_ONCE(xpmem_max_attachments)))
		return ERR_PTR(-ENOSPC);
	/* 448 + 128 bytes a mirror: kvzalloc() beyond a few pages */
	att = kvzalloc(struct_size(att, mirrors, nr), GFP_KERNEL_ACCOUNT);
	if (!att) {
		atomic_dec(&ctx->nr_atts);
		return ERR_PTR(-ENOMEM);
	}
	att->nr_mirrors = nr;
	att->first_range = first;
	ret = simple_pin_fs(&xpmem_attach_fs_type, &xpmem_attach_mnt,
			    &xpmem_attach_mnt_count);
	if (ret) {
		atomic_dec(&ctx->nr_atts);
		kvfree(att);
		return ERR_PTR(ret);
	}
	/* From here on xpmem_attach_free() undoes everything. */
	mutex_init(&att->lock);
	mutex_init(&att->pt_lock);
	xpmem_zap_mapped_init(att);
	xpmem_zero_att_init(att);
	INIT_LIST_HEAD(&att->faults);
	xpmem_mirror_settle_init(att);
	INIT_LIST_HEAD(&att->permit_node);
	INIT_LIST_HEAD(&att->seg_node);
	att->permit = permit;
	att->seg = seg;
	xpmem_seg_get(seg);
	att->ctx = ctx;
	xpmem_ctx_get(ctx);
	att->mm = ctx->mm;
	att->offset = offset;
	att->size = size;
	xpmem_attach_set_mirrors(att, offset, size);
	att->writable = permit->writable;
	atomic_long_inc(&xpmem_stats.attachments);
	return att;
}

/* An ATTACH request's form, before anything is looked up. */
static bool xpmem_attach_args_ok(xpmem_apid_t apid, u64 offset, u64 size,
				 unsigned long addr, unsigned int flags)
{
	if ((flags & ~XPMEM_EXT_ATTACH_FLAGS) || apid <= 0 ||
	    ((flags & XPMEM_EXT_ATTACH_RDONLY) &&
	     (flags & XPMEM_EXT_ATTACH_POPULATE_WRITE)))
		return false;
	if (!(flags & XPMEM_EXT_ATTACH_FIXED) && addr)
		return false;
	return !offset_in_page(offset) && size && size <= TASK_SIZE &&
	       !offset_in_page(addr);
}

/*
 * The caller's permit @apid, if it allows attaching segment offsets
 * [@offset, @offset + @size) at @addr with @flags.
 * Return: the permit (referenced), or an ERR_PTR().
 */
static struct xpmem_permit *xpmem_attach_permit(struct xpmem_ctx *ctx,
						xpmem_apid_t apid, u64 offset,
						u64 size, unsigned long addr,
						unsigned int flags)
{
	struct xpmem_permit *permit = xpmem_permit_lookup(apid);
	struct xpmem_seg *seg;
	int ret;

	if (!permit)
		return ERR_PTR(-ENOENT);
	seg = permit->seg;
	if (permit->mm != ctx->mm)
		ret = -EACCES;
	else if (offset >= seg->size || size > seg->size - offset)
		ret = -EINVAL;
	else if ((flags & XPMEM_EXT_ATTACH_POPULATE_WRITE) &&
		 !permit->writable)
		ret = -EACCES;
	else if (READ_ONCE(seg->removed) || !xpmem_seg_owner_alive(seg))
		ret = -ENOENT;
	else if (flags & XPMEM_EXT_ATTACH_FIXED)
		ret = xpmem_attach_fixed_ok(seg, offset, addr, size);
	else
		ret = 0;
	if (ret) {
		xpmem_permit_put(permit);
		return ERR_PTR(ret);
	}
	return permit;
}

/*
 * The pseudo file of a mirrored, linked attachment, with its own inode;
 * the file owns @att once this succeeds.
 * Return: the file, or an ERR_PTR() with @att still the caller's.
 */
static struct file *xpmem_attach_file(struct xpmem_att *att)
{
	struct inode *inode;
	struct file *file;
	int ret;

	inode = alloc_anon_inode(xpmem_attach_mnt->mnt_sb);
	if (IS_ERR(inode))
		return ERR_CAST(inode);
	/* The file's f_op->owner reference is taken here, dropped by fput. */
	if (!try_module_get(THIS_MODULE)) {
		ret = -ENOENT;
		goto put_inode;
	}
	file = alloc_file_pseudo(inode, xpmem_attach_mnt, "xpmem", O_RDWR,
				 &xpmem_attach_fops);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto put_module;
	}
	/* @att's own reference, until its notifiers are removed */
	ihold(inode);
	att->inode = inode;
	file->private_data = att;
	return file;

put_module:
	module_put(THIS_MODULE);
put_inode:
	iput(inode);
	return ERR_PTR(ret);
}

/**
 * xpmem_attach_create - ATTACH, EXT_ATTACH: map a segment part into the caller
 * @ctx: the caller's device context
 * @apid: the caller's permit
 * @offset: segment offset, page aligned
 * @size: bytes, rounded up to whole pages
 * @vaddr: with XPMEM_EXT_ATTACH_FIXED the address on entry (else 0); the
 *         mapped address on success
 * @flags: XPMEM_EXT_ATTACH_*
 * @filep: on success, the attachment's file, referenced: the caller
 *         copies the address out, then fput()s it, or on failure hands it
 *         to xpmem_detach_undo() first
 *
 * A FIXED address is used as with MAP_FIXED, but may not cover an
 * existing attachment, nor the attachment's own source range when the
 * caller owns the segment.  RDONLY maps read-only through any permit.
 * POPULATE and POPULATE_WRITE fault the new mapping in (xpmem_uapi.h).
 *
 * A failure leaves nothing mapped.  What was mapped at a FIXED address
 * stays as it was, unless the failure is mmap's own after it began to
 * replace it (-ENOMEM): then the range is left unmapped, as mmap(2) with
 * MAP_FIXED leaves it.
 *
 * Return: 0, -EINVAL for a malformed request, -ENOENT for an unknown or
 * released permit or a removed segment or exited owner, -EACCES for
 * another process's permit or POPULATE_WRITE through a read-only one,
 * -ENOSPC over the max_attachments limit, -ENOMEM, or what mmap returns;
 * -ERESTARTNOINTR (the ioctl is restarted) if io_uring task work came
 * while the owner's first notifier was being registered.
 */
int xpmem_attach_create(struct xpmem_ctx *ctx, xpmem_apid_t apid, u64 offset,
			u64 size, unsigned long *vaddr, unsigned int flags,
			struct file **filep)
{
	unsigned long addr = *vaddr, mapped;
	struct xpmem_permit *permit;
	struct xpmem_att *att;
	struct file *file;
	int ret;

	if (!xpmem_attach_args_ok(apid, offset, size, addr, flags))
		return -EINVAL;
	size = PAGE_ALIGN(size);
	permit = xpmem_attach_permit(ctx, apid, offset, size, addr, flags);
	if (IS_ERR(permit))
		return PTR_ERR(permit);
	att = xpmem_attach_alloc(ctx, permit, offset, size);
	if (IS_ERR(att)) {
		xpmem_permit_put(permit);
		return PTR_ERR(att);
	}
	/* att owns the permit reference now */
	att->writable &= !(flags & XPMEM_EXT_ATTACH_RDONLY);
	att->zero_revoked = flags & XPMEM_EXT_ATTACH_ZERO_REVOKED;
	ret = xpmem_attach_mirror(att) ?: xpmem_attach_link(att);
	if (ret)
		goto free_att;
	file = xpmem_attach_file(att);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto free_att;
	}
	/* from here the file owns att */
	mapped = xpmem_attach_place(att, file, addr, size, offset);
	if (IS_ERR_VALUE(mapped)) {
		fput(file);
		return (int)mapped;
	}
	if (flags & (XPMEM_EXT_ATTACH_POPULATE |
		     XPMEM_EXT_ATTACH_POPULATE_WRITE))
		xpmem_populate_att(att, mapped, mapped, mapped + size,
				   flags & XPMEM_EXT_ATTACH_POPULATE_WRITE);
	*vaddr = mapped;
	*filep = file;
	return 0;

free_att:
	xpmem_attach_free(att);
	return ret;
}

/**
 * xpmem_attach_cmd - the classic ATTACH
 * @ctx: the caller's device context
 * @cmd: classic ATTACH argument; @cmd->vaddr is the wanted address (0: any)
 *       on entry and the mapped address on success
 * @filep: as for xpmem_attach_create()
 *
 * A non-zero address is FIXED (xpmem_attach_create()).  @cmd->fd is ignored;
 * @cmd->flags must be 0.
 *
 * Return: as xpmem_attach_create().
 */
int xpmem_attach_cmd(struct xpmem_ctx *ctx, struct xpmem_cmd_attach *cmd,
		     struct file **filep)
{
	unsigned long vaddr = cmd->vaddr;
	int ret;

	if (cmd->flags || cmd->offset < 0)
		return -EINVAL;
	ret = xpmem_attach_create(ctx, cmd->apid, cmd->offset, cmd->size,
				  &vaddr,
				  vaddr ? XPMEM_EXT_ATTACH_FIXED : 0, filep);
	if (!ret)
		cmd->vaddr = vaddr;
	return ret;
}
