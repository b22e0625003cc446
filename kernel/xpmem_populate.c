// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_populate.c - POPULATE: fault attachments in before they are read
 *
 * At ATTACH (XPMEM_EXT_ATTACH_POPULATE, _POPULATE_WRITE) and later through
 * XPMEM_CMD_EXT_POPULATE: each fault window of the range is faulted once,
 * as the first access to it would be, through the attachment's own fault
 * handler (fixup_user_fault()), so what the owner has resident is mapped
 * and holes of the owner cost one VMA lookup each.  Calls the fault path
 * and the segment's range helpers only.
 */
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>

#include "xpmem_internal.h"
#include "compat.h"

/*
 * The attacher address where the segment range at @a ends (attachment
 * mapped at @base), and *@oaddr the owner address of @a.
 */
static unsigned long xpmem_populate_range_end(struct xpmem_att *att,
					      unsigned long base, unsigned long a,
					      unsigned long *oaddr)
{
	struct xpmem_seg *seg = att->seg;
	unsigned long off = att->offset + (a - base);
	const struct xpmem_seg_range *r =
		&seg->ranges[xpmem_seg_range_index(seg, off)];

	*oaddr = xpmem_seg_range_oaddr(r, off);
	return a + (r->off + r->len - off);
}

/*
 * Where populating goes on after a fault at @a (attachment mapped at
 * @base) failed: the attacher address of the next owner VMA if @a is in a
 * hole of the owner, or of the end of the owner VMA at @a if that is one
 * no attachment may map; the start of the next segment range if that
 * comes first; @end if nothing follows before it.  Called with no
 * mmap_lock held.
 */
static unsigned long xpmem_populate_skip_hole(struct xpmem_att *att,
					      unsigned long base, unsigned long a,
					      unsigned long end)
{
	struct mm_struct *owner = att->seg->mm;
	unsigned long oaddr;
	/* distances from @a */
	unsigned long d = min(end, xpmem_populate_range_end(att, base, a,
							     &oaddr)) - a;
	struct vm_area_struct *vma;

	if (!mmget_not_zero(owner))
		return end;
	if (!mmap_read_lock_killable(owner)) {
		vma = find_vma(owner, oaddr);
		if (vma)	/* both > oaddr */
			d = min(d, (vma->vm_start > oaddr ? vma->vm_start :
				    vma->vm_end) - oaddr);
		mmap_read_unlock(owner);
	}
	mmput(owner);
	return a + d;
}

/*
 * Where the owner VMA that maps @oaddr (the owner address of attacher
 * address @a) ends, as an attacher address; @next if the owner's
 * mmap_lock is not free at once (the caller holds the attacher's: see
 * the lock tree in xpmem_internal.h) or nothing maps @oaddr.  A fault window
 * stops there, so populating goes on from there rather than from the next
 * window.
 */
static unsigned long xpmem_populate_owner_vma_end(struct xpmem_att *att,
						  unsigned long a,
						  unsigned long oaddr,
						  unsigned long next)
{
	struct mm_struct *owner = att->seg->mm;
	struct vm_area_struct *ovma;
	bool self = owner == current->mm;	/* its lock is held */

	if (!mmget_not_zero(owner))
		return next;
	if (self || mmap_read_trylock(owner)) {
		ovma = vma_lookup(owner, oaddr);
		if (ovma && ovma->vm_end - oaddr < next - a)
			next = a + (ovma->vm_end - oaddr);
		if (!self)
			mmap_read_unlock(owner);
	}
	mmput_async(owner);
	return next;
}

/**
 * xpmem_populate_att - fault in part of one attachment VMA
 * @att: the attachment
 * @base: where its segment offset att->offset is (or would be) mapped
 * @a: first attacher address, page aligned
 * @end: attacher address past the last page
 * @write: as a write would, else as a read
 *
 * Faults each fault window of [@a, @end) once, as an access to its first
 * page would, so that the first pass over what the owner has resident
 * takes no fault.  Windows the owner maps nothing in are skipped by looking up
 * its next VMA, so a sparse whole-address-space attachment costs one lookup per
 * hole.  Best effort: stops early on a fatal signal, on an error other
 * than a hole, or if the attachment is unmapped meanwhile.  The caller
 * holds @att (xpmem_end_hold()), so it stays.
 */
void xpmem_populate_att(struct xpmem_att *att, unsigned long base,
			unsigned long a, unsigned long end, bool write)
{
	unsigned long step = xpmem_fault_window_pages() << PAGE_SHIFT;
	unsigned int flags = write ? FAULT_FLAG_WRITE : 0;
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	unsigned long next, oaddr;
	bool unlocked;
	int ret;

	if (mmap_read_lock_killable(mm))
		return;
	while (a < end && !fatal_signal_pending(current)) {
		vma = vma_lookup(mm, a);
		if (!vma || vma->vm_private_data != att)
			break;			/* unmapped meanwhile */
		/* a window ends where its segment range does */
		next = min3(ALIGN_DOWN(a, step) + step, end,
			    xpmem_populate_range_end(att, base, a, &oaddr));
		unlocked = false;
		ret = fixup_user_fault(mm, a, flags, &unlocked);
		if (ret && ret != -EFAULT)
			break;
		if (!ret)	/* the window stopped at the owner VMA's end? */
			next = xpmem_populate_owner_vma_end(att, a, oaddr,
							    next);
		if (ret || need_resched()) {
			mmap_read_unlock(mm);
			if (ret)	/* nothing to map here */
				next = xpmem_populate_skip_hole(att, base, a,
								end);
			cond_resched();
			if (mmap_read_lock_killable(mm))
				return;
		}
		a = next;
	}
	mmap_read_unlock(mm);
}

/**
 * xpmem_populate_range - EXT_POPULATE: fault in part of attachments
 * @vaddr: start, page aligned, in the caller's address space
 * @len: bytes
 * @write: as a write would (POPULATE_WRITE), else as a read
 *
 * Each attachment VMA in the range is populated as at attach time, with a
 * hold of its attachment so that it stays while the caller's mmap_lock is
 * dropped.
 *
 * Return: 0, -EINVAL for a malformed range, -EFAULT where the range is not
 * an attachment, -EACCES for @write over a read-only one, -EINTR on a
 * fatal signal.
 */
int xpmem_populate_range(unsigned long vaddr, unsigned long len,
			 bool write)
{
	struct mm_struct *mm = current->mm;
	unsigned long a = vaddr, end, base, stop;
	struct vm_area_struct *vma;
	struct xpmem_att *att;

	if (offset_in_page(vaddr) || !len || len > TASK_SIZE ||
	    vaddr > TASK_SIZE - PAGE_ALIGN(len))
		return -EINVAL;
	end = vaddr + PAGE_ALIGN(len);
	while (a < end) {
		if (mmap_read_lock_killable(mm))
			return -EINTR;
		vma = vma_lookup(mm, a);
		if (!vma || !xpmem_fault_vma_is_att(vma)) {
			mmap_read_unlock(mm);
			return -EFAULT;
		}
		if (write && !(vma->vm_flags & VM_WRITE)) {
			mmap_read_unlock(mm);
			return -EACCES;
		}
		att = vma->vm_private_data;
		xpmem_end_hold(att);
		/* where att->offset is (or would be) mapped in this VMA */
		base = vma->vm_start - (xpmem_att_seg_off(att, vma->vm_pgoff) -
					att->offset);
		stop = min(vma->vm_end, end);
		mmap_read_unlock(mm);
		xpmem_populate_att(att, base, a, stop, write);
		xpmem_end_put(att);
		if (fatal_signal_pending(current))
			return -EINTR;
		a = stop;
	}
	return 0;
}
