// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_attach.c - ATTACH: the ctxs' pseudo files and how they are mapped
 *
 * An attachment is a MAP_SHARED mapping of its ctx's pseudo file (one
 * per open of /dev/xpmem, made at its first ATTACH), at file offsets of
 * its own: segment offset + att->file_delta.  The file's inode gives it
 * an address_space, so invalidating an attachment is
 * unmap_mapping_range() over its offsets, whoever maps it and however its
 * VMAs were split or moved; its mmu_interval_notifiers, one per segment
 * range it maps, cover the owner's ranges (the mirror, xpmem_mirror.c).
 *
 * An attachment ends when its last VMA is unmapped and nobody holds it
 * any more (xpmem_end.c).  RELEASE of its permit, REMOVE of its segment
 * (xpmem_detach.c), and the owner's exit make it dead first: its PTEs are
 * zapped and every later access is SIGBUS (zeros with ZERO_REVOKED:
 * xpmem_zero.c).  POPULATE is xpmem_populate.c.
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
 * Mounted while /dev/xpmem is open (simple_pin_fs()), and kept by each
 * pseudo file and each attachment; the mount pins the module through
 * .owner, so a last fput() or iput() after rmmod cannot reach freed
 * module text or the freed file_system_type.
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
 * xpmem_attach_fs_pin - keep the pseudo files' filesystem mounted
 *
 * Each open of /dev/xpmem pins it until xpmem_attach_fs_unpin() at its
 * release, so that its ATTACH can make the ctx's pseudo file there.  The
 * file and each attachment keep the mount (a reference, not a pin) for as
 * long as they live.  Context: process (open of /dev/xpmem), no lock
 * held; may sleep while the first pin mounts (a superblock and root
 * inode, charged to nobody: one for the whole module).  Nothing another
 * user controls is waited for; xpmem_attach_fs_unpin() at a release
 * waits for nothing but the unmount of an empty file system by the last
 * reference.
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

/*
 * An ATTACH mapping its ctx's pseudo file: the only caller whose mmap the
 * file accepts (ctx->placing, under ctx->space_lock).
 */
struct xpmem_attach_placing {
	struct list_head node;
	struct xpmem_att *att;
	struct task_struct *task;
};

/* The attachment the current ATTACH maps at file page @pgoff, if any. */
static struct xpmem_att *xpmem_attach_placed(struct xpmem_ctx *ctx,
					     unsigned long pgoff)
{
	struct xpmem_attach_placing *p;
	struct xpmem_att *att = NULL;

	spin_lock(&ctx->space_lock);
	list_for_each_entry(p, &ctx->placing, node) {
		if (p->task == current &&
		    (p->att->offset + p->att->file_delta) >> PAGE_SHIFT ==
		    pgoff) {
			att = p->att;
			break;
		}
	}
	spin_unlock(&ctx->space_lock);
	return att;
}

/*
 * Called under the attacher's mmap_lock (write) by the vm_mmap() of
 * xpmem_attach_place(), before the core links the VMA to the file (no
 * i_mmap_rwsem, no folio lock); takes ctx->space_lock (a leaf spinlock)
 * and waits for nothing else, allocates nothing.  Only the listed ATTACH
 * (same task, same file offset) gets through, so nobody else can map the
 * file or an attachment twice.  Refuses an address over the source
 * ranges the attachment mirrors (-EADDRNOTAVAIL: xpmem_attach_place()
 * tries elsewhere), so an attachment never maps its own source.  Maps no
 * page and reads no owner memory: faults do, and see revocation
 * (att->dead) there.  The VMA takes a hold of the attachment
 * (xpmem_end.c), given back by its ->close.
 */
static int xpmem_attach_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct xpmem_att *att = xpmem_attach_placed(file->private_data,
						    vma->vm_pgoff);

	/* Only ATTACH maps this file, each attachment once. */
	if (!att || vma->vm_mm != att->mm || !(vma->vm_flags & VM_SHARED) ||
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
	xpmem_end_hold(att);
	return 0;
}

static const struct file_operations xpmem_attach_fops = {
	.owner = THIS_MODULE,
	.mmap = xpmem_attach_mmap,
#ifdef XPMEM_HAVE_HUGE_PFNMAP
	.get_unmapped_area = xpmem_fault_get_unmapped_area,
#endif
};

/*
 * The pseudo file every attachment of @ctx maps, made at the first ATTACH
 * (a dentry, a file and an inode, charged to the caller) and kept by @ctx
 * until it is freed; the VMAs hold it too.
 *
 * Return: the file, or an ERR_PTR().
 */
static struct file *xpmem_attach_space(struct xpmem_ctx *ctx)
{
	/* pairs with the cmpxchg() that published it */
	struct file *file = smp_load_acquire(&ctx->space), *old;
	struct inode *inode;
	int ret;

	if (file)
		return file;
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
	file->private_data = ctx;
	/* another thread of the caller may have been first */
	old = cmpxchg(&ctx->space, NULL, file);
	if (old) {
		fput(file);
		return old;
	}
	return file;

put_module:
	module_put(THIS_MODULE);
put_inode:
	iput(inode);
	return ERR_PTR(ret);
}

/* The end of the file offsets a ctx hands out (file_mmap_ok() allows more) */
#define XPMEM_SPACE_END		((ULONG_MAX >> 1) & PMD_MASK)

/*
 * File offsets for @att in its ctx's pseudo file: from a PMD_SIZE block
 * no attachment of the ctx had, congruent modulo PMD_SIZE with the owner
 * address they mirror first, so that the attach address, congruent with
 * the file offset (xpmem_fault_get_unmapped_area()), lets owner PMDs be
 * attacher PMDs.  Offsets are handed out from 0 up, at least 2 MiB an
 * attachment, and start again at 0 after 2^62 bytes (on 64 bits).  Two
 * live attachments that share offsets after that only share their zaps
 * (each faults again after the other's), never their pages: a fault
 * translates the file offset through its own VMA's attachment.
 */
static void xpmem_attach_reserve(struct xpmem_ctx *ctx, struct xpmem_att *att)
{
	unsigned long congruent = att->mirrors[0].r.oaddr & ~PMD_MASK;
	unsigned long base;

	spin_lock(&ctx->space_lock);
	base = round_up(ctx->space_next, PMD_SIZE) + congruent;
	if (base > XPMEM_SPACE_END || XPMEM_SPACE_END - base < att->size)
		base = congruent;
	att->file_delta = base - att->offset;
	ctx->space_next = base + att->size;
	spin_unlock(&ctx->space_lock);
}

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
 * vm_mmap() of @att's file offsets.  A failure after xpmem_attach_mmap()
 * accepted the VMA drops the VMA's hold where the core did not call
 * ->close (kernels without "mm: unconditionally close VMAs on error"):
 * nobody else saw that VMA.
 */
static unsigned long xpmem_attach_mmap_once(struct xpmem_att *att,
					    struct file *file,
					    unsigned long addr,
					    unsigned long flags)
{
	unsigned long prot = PROT_READ | (att->writable ? PROT_WRITE : 0);
	unsigned long mapped;

	mapped = vm_mmap(file, addr, att->size, prot, MAP_SHARED | flags,
			 att->offset + att->file_delta);
	if (IS_ERR_VALUE(mapped) && atomic_read(&att->nr_vmas)) {
		atomic_set(&att->nr_vmas, 0);
		xpmem_end_put(att);	/* never the last: ATTACH holds it */
	}
	return mapped;
}

/*
 * Map @att at @addr (FIXED), or where the kernel chooses.  In the owner's
 * own process the kernel's choice may fall on the source range the
 * attachment mirrors, which xpmem_attach_mmap() refuses: then try just above
 * and just below the source ranges before giving up.
 *
 * Return: the address, or an error value.
 */
static unsigned long xpmem_attach_place(struct xpmem_att *att,
					struct file *file, unsigned long addr)
{
	unsigned long lo = ULONG_MAX, hi = 0, mapped = -EINVAL;
	unsigned long size = att->size;
	unsigned long hints[3];
	unsigned int i;

	if (addr)
		return xpmem_attach_mmap_once(att, file, addr, MAP_FIXED);
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
		mapped = xpmem_attach_mmap_once(att, file, hints[i], 0);
		if (mapped != (unsigned long)-EADDRNOTAVAIL)
			return mapped;
	}
	return mapped == (unsigned long)-EADDRNOTAVAIL ? -ENOMEM : mapped;
}

/* xpmem_attach_place() as the one caller whose mmap @file accepts. */
static unsigned long xpmem_attach_place_listed(struct xpmem_att *att,
					       struct file *file,
					       unsigned long addr)
{
	struct xpmem_attach_placing p = { .att = att, .task = current };
	struct xpmem_ctx *ctx = att->ctx;
	unsigned long mapped;

	spin_lock(&ctx->space_lock);
	list_add(&p.node, &ctx->placing);
	spin_unlock(&ctx->space_lock);
	mapped = xpmem_attach_place(att, file, addr);
	spin_lock(&ctx->space_lock);
	list_del(&p.node);
	spin_unlock(&ctx->space_lock);
	return mapped;
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

/*
 * A new attachment of @permit in @space, charged to @ctx, with the
 * caller's hold; takes over @permit's ref, also when it fails.
 */
static struct xpmem_att *xpmem_attach_alloc(struct xpmem_ctx *ctx,
					    struct file *space,
					    struct xpmem_permit *permit,
					    unsigned long offset,
					    unsigned long size)
{
	struct xpmem_seg *seg = permit->seg;
	unsigned int first = xpmem_seg_range_index(seg, offset);
	unsigned int nr = xpmem_seg_range_index(seg, offset + size - 1) -
			  first + 1;
	struct xpmem_att *att;

	if (!xpmem_ctx_charge_att(&ctx->nr_atts,
				  READ_ONCE(xpmem_max_attachments))) {
		xpmem_permit_put(permit);
		return ERR_PTR(-ENOSPC);
	}
	/* 448 + 128 bytes a mirror: kvzalloc() beyond a few pages */
	att = kvzalloc(struct_size(att, mirrors, nr), GFP_KERNEL_ACCOUNT);
	if (!att) {
		atomic_dec(&ctx->nr_atts);
		xpmem_permit_put(permit);
		return ERR_PTR(-ENOMEM);
	}
	att->nr_mirrors = nr;
	att->first_range = first;
	/* From here on xpmem_end_put() undoes everything. */
	atomic_set(&att->users, 1);
	att->inode = file_inode(space);
	ihold(att->inode);
	att->mnt = mntget(space->f_path.mnt);
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
	xpmem_attach_reserve(ctx, att);
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

/**
 * xpmem_attach_create - ATTACH, EXT_ATTACH: map a segment part into the caller
 * @ctx: the caller's device context
 * @apid: the caller's permit
 * @offset: segment offset, page aligned
 * @size: bytes, rounded up to whole pages
 * @vaddr: with XPMEM_EXT_ATTACH_FIXED the address on entry (else 0); the
 *         mapped address on success
 * @flags: XPMEM_EXT_ATTACH_*
 * @attp: on success, the attachment, with a hold of the caller's: the
 *        caller copies the address out, then drops it with
 *        xpmem_end_put(), or on failure hands it to xpmem_detach_undo()
 *        first
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
			struct xpmem_att **attp)
{
	unsigned long addr = *vaddr, mapped;
	struct xpmem_permit *permit;
	struct xpmem_att *att;
	struct file *space;
	int ret;

	if (!xpmem_attach_args_ok(apid, offset, size, addr, flags))
		return -EINVAL;
	size = PAGE_ALIGN(size);
	permit = xpmem_attach_permit(ctx, apid, offset, size, addr, flags);
	if (IS_ERR(permit))
		return PTR_ERR(permit);
	space = xpmem_attach_space(ctx);
	if (IS_ERR(space)) {
		xpmem_permit_put(permit);
		return PTR_ERR(space);
	}
	/* att owns the permit reference now */
	att = xpmem_attach_alloc(ctx, space, permit, offset, size);
	if (IS_ERR(att))
		return PTR_ERR(att);
	att->writable &= !(flags & XPMEM_EXT_ATTACH_RDONLY);
	att->zero_revoked = flags & XPMEM_EXT_ATTACH_ZERO_REVOKED;
	ret = xpmem_attach_mirror(att) ?: xpmem_attach_link(att);
	if (ret)
		goto put_att;
	mapped = xpmem_attach_place_listed(att, space, addr);
	if (IS_ERR_VALUE(mapped)) {
		ret = (int)mapped;
		goto put_att;
	}
	if (flags & (XPMEM_EXT_ATTACH_POPULATE |
		     XPMEM_EXT_ATTACH_POPULATE_WRITE))
		xpmem_populate_att(att, mapped, mapped, mapped + size,
				   flags & XPMEM_EXT_ATTACH_POPULATE_WRITE);
	*vaddr = mapped;
	*attp = att;
	return 0;

put_att:
	xpmem_end_put(att);
	return ret;
}

/**
 * xpmem_attach_cmd - the classic ATTACH
 * @ctx: the caller's device context
 * @cmd: classic ATTACH argument; @cmd->vaddr is the wanted address (0: any)
 *       on entry and the mapped address on success
 * @attp: as for xpmem_attach_create()
 *
 * A non-zero address is FIXED (xpmem_attach_create()).  @cmd->fd is ignored;
 * @cmd->flags must be 0.
 *
 * Return: as xpmem_attach_create().
 */
int xpmem_attach_cmd(struct xpmem_ctx *ctx, struct xpmem_cmd_attach *cmd,
		     struct xpmem_att **attp)
{
	unsigned long vaddr = cmd->vaddr;
	int ret;

	if (cmd->flags || cmd->offset < 0)
		return -EINVAL;
	ret = xpmem_attach_create(ctx, cmd->apid, cmd->offset, cmd->size,
				  &vaddr,
				  vaddr ? XPMEM_EXT_ATTACH_FIXED : 0, attp);
	if (!ret)
		cmd->vaddr = vaddr;
	return ret;
}
