// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_detach.c - the end of attachments: DETACH, RELEASE and REMOVE
 *
 * DETACH unmaps the caller's attachment (every VMA of it, also after
 * splits and mremap).  RELEASE of a permit and REMOVE of a segment make
 * each attachment through it dead: its PTEs are zapped and every later
 * access is SIGBUS (zeros with ZERO_REVOKED, xpmem_zero.c); RELEASE by the
 * permit's own process also unmaps them.  The attachment itself goes when
 * its last VMA is unmapped and its file released (xpmem_attach.c).
 */
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>

#include "xpmem_internal.h"
#include "compat.h"

/* What xpmem_unmap_matching() unmaps: @att's VMAs, or else @permit's. */
struct xpmem_unmap_what {
	struct xpmem_att *att;
	struct xpmem_permit *permit;
};

static bool xpmem_vma_unmap_match(struct vm_area_struct *vma, void *data)
{
	const struct xpmem_unmap_what *what = data;
	struct xpmem_att *cur;

	if (!xpmem_vma_is_att(vma))
		return false;
	cur = vma->vm_private_data;
	return what->att ? cur == what->att : cur->permit == what->permit;
}

/*
 * munmap every VMA of the current mm that maps an attachment matching
 * @att (if non-NULL) or belonging to @permit.  The lock is dropped around
 * each vm_munmap(); the walk goes on after the VMA just unmapped, so it
 * is linear in the number of VMAs, and a fatal signal ends it (the rest
 * then goes at exit).  The caller keeps @att alive (a file reference).
 */
static void xpmem_unmap_matching(struct xpmem_att *att,
				 struct xpmem_permit *permit)
{
	struct xpmem_unmap_what what = { .att = att, .permit = permit };
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	unsigned long next = 0, start, len;

	if (!mm)
		return;
	while (!fatal_signal_pending(current)) {
		len = 0;
		if (mmap_read_lock_killable(mm))
			return;
		vma = xpmem_find_vma_match(mm, next, ULONG_MAX,
					   xpmem_vma_unmap_match, &what);
		if (vma) {
			start = vma->vm_start;
			len = vma->vm_end - vma->vm_start;
		}
		mmap_read_unlock(mm);
		if (!len || vm_munmap(start, len))
			return;
		next = start + len;
		cond_resched();
	}
}

/**
 * xpmem_cmd_detach - DETACH: unmap the attachment containing @vaddr
 * @ctx: the caller's device context
 * @vaddr: any address inside the attachment
 *
 * Every VMA of that attachment is unmapped (split and mremapped pieces
 * too).  The mmap_lock is dropped before munmap, as for any munmap(2): a
 * thread of the same process that replaces the attachment in that window
 * loses its new mapping, exactly as with a racing munmap(2).
 *
 * Return: 0, or -EINVAL if @vaddr is not inside an attachment.
 */
int xpmem_cmd_detach(struct xpmem_ctx *ctx, unsigned long vaddr)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct file *file = NULL;
	unsigned long start = 0, len = 0;
	bool whole = false;

	mmap_read_lock(mm);
	vma = vma_lookup(mm, vaddr);
	if (vma && xpmem_vma_is_att(vma)) {
		struct xpmem_att *att = vma->vm_private_data;

		/* keeps att (and so its identity) alive after the unlock */
		file = get_file(vma->vm_file);
		start = vma->vm_start;
		len = vma->vm_end - vma->vm_start;
		whole = atomic_read(&att->nr_vmas) == 1;
	}
	mmap_read_unlock(mm);
	if (!file)
		return -EINVAL;
	/* The common case, one VMA: no walk over the address space. */
	if (whole)
		vm_munmap(start, len);
	else
		xpmem_unmap_matching(file->private_data, NULL);
	fput(file);
	return 0;
}

/* SIGBUS from now on; PTEs inserted before are zapped. */
static void xpmem_att_kill(struct xpmem_att *att)
{
	mutex_lock(&att->lock);
	att->dead = true;
	mutex_unlock(&att->lock);
	/* Unmapped already (RELEASE), only waiting for its fput? */
	if (atomic_read(&att->nr_vmas))
		xpmem_att_zap(att, 0, 0);
}

/**
 * xpmem_permit_end - RELEASE a permit: it and its attachments end
 * @permit: a permit just unlinked from its ctx (xpmem_permit_unlink*())
 * @unmap: the caller is the permit's process: munmap its attachments
 *         (otherwise they stay mapped but fault with SIGBUS)
 */
void xpmem_permit_end(struct xpmem_permit *permit, bool unmap)
{
	struct xpmem_att *att;

	xpmem_permit_withdraw(permit);
	xpmem_revoke_sync();		/* copies through it have stopped */
	if (unmap && current->mm == permit->mm)
		xpmem_unmap_matching(NULL, permit);

	mutex_lock(&permit->lock);
	list_for_each_entry(att, &permit->atts, permit_node)
		xpmem_att_kill(att);
	mutex_unlock(&permit->lock);
}

/**
 * xpmem_seg_end - REMOVE a segment: it and every attachment of it end
 * @seg: a segment just unlinked from its ctx (xpmem_seg_unlink*())
 *
 * Afterwards GET and ATTACH fail with ENOENT and attacher accesses get
 * SIGBUS.
 */
void xpmem_seg_end(struct xpmem_seg *seg)
{
	struct xpmem_att *att;

	xpmem_seg_withdraw(seg);
	xpmem_revoke_sync();		/* copies from or to it have stopped */

	mutex_lock(&seg->att_lock);
	list_for_each_entry(att, &seg->atts, seg_node)
		xpmem_att_kill(att);
	mutex_unlock(&seg->att_lock);
}
