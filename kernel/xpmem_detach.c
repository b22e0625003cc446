// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_detach.c - the end of attachments: DETACH, RELEASE and REMOVE
 *
 * DETACH unmaps the caller's attachment (every VMA of it, also after
 * splits and mremap).  RELEASE of a permit and REMOVE of a segment make
 * each attachment through it dead: its PTEs are zapped and every later
 * access is SIGBUS (zeros with ZERO_REVOKED, xpmem_zero.c); RELEASE by the
 * permit's own process also unmaps them.  The attachment itself goes when
 * its last VMA is unmapped and nobody holds it any more (xpmem_end.c).
 */
#include <linux/mm.h>
#include <linux/sched/signal.h>

#include "xpmem_internal.h"
#include "compat.h"

/* What xpmem_detach_unmap_matching() unmaps: @att's VMAs, or else @permit's. */
struct xpmem_unmap_what {
	struct xpmem_att *att;
	struct xpmem_permit *permit;
};

static bool xpmem_detach_vma_match(struct vm_area_struct *vma, void *data)
{
	const struct xpmem_unmap_what *what = data;
	struct xpmem_att *cur;

	if (!xpmem_fault_vma_is_att(vma))
		return false;
	cur = vma->vm_private_data;
	return what->att ? cur == what->att : cur->permit == what->permit;
}

/*
 * The first run of VMAs at or above @from that match @what: VMAs that
 * follow each other without a gap (the pieces of an mprotect() split, for
 * one).  Under the mmap_lock.  Return: its length, 0 if there is none, and
 * its start in *@start.
 */
static unsigned long xpmem_detach_match_run(struct mm_struct *mm,
					    unsigned long from,
					    struct xpmem_unmap_what *what,
					    unsigned long *start)
{
	struct vm_area_struct *vma;
	unsigned long end;

	vma = xpmem_find_vma_match(mm, from, ULONG_MAX, xpmem_detach_vma_match,
				   what);
	if (!vma)
		return 0;
	*start = vma->vm_start;
	end = vma->vm_end;
	while ((vma = vma_lookup(mm, end)) &&
	       xpmem_detach_vma_match(vma, what))
		end = vma->vm_end;
	return end - *start;
}

/*
 * Once a piece of an attachment is gone, an unmap of the rest that fails
 * for want of memory is tried again, at most this many times.  An
 * allocation that may sleep fails only under fault injection (or for a
 * task the OOM killer chose, which a fatal signal ends anyway); the bound
 * keeps an injection that fails every allocation from spinning here.
 */
#define XPMEM_UNMAP_TRIES	32

/*
 * munmap every VMA of the current mm that maps an attachment matching
 * @att (if non-NULL) or belonging to @permit, a run of adjacent ones at a
 * time: one munmap unmaps all of a run or, when it cannot allocate what
 * it needs, none of it.  The lock is dropped around each vm_munmap(); the
 * walk goes on after the run just unmapped, so it is linear in the number
 * of VMAs.  The caller keeps @att alive (a hold, xpmem_end_hold()).
 *
 * Unless @must, the walk ends with the error of its first munmap, which
 * unmapped nothing.  Once a run is unmapped (from the start with @must),
 * the rest must go too: a munmap that found no memory is tried again, up
 * to XPMEM_UNMAP_TRIES times.  A fatal signal ends the walk (the rest goes
 * at exit).
 *
 * Return: 0 when everything is unmapped, else the error of the munmap
 * that stopped the walk (-EINTR for a fatal signal); without @must,
 * -ENOMEM from the first munmap means that nothing was unmapped.
 */
static int xpmem_detach_unmap_matching(struct xpmem_att *att,
				       struct xpmem_permit *permit, bool must)
{
	struct xpmem_unmap_what what = { .att = att, .permit = permit };
	struct mm_struct *mm = current->mm;
	unsigned long next = 0, start = 0, len;
	unsigned int tries = 0;
	int ret;

	if (!mm)
		return 0;
	while (!fatal_signal_pending(current)) {
		if (mmap_read_lock_killable(mm))
			break;
		len = xpmem_detach_match_run(mm, next, &what, &start);
		mmap_read_unlock(mm);
		if (!len)
			return 0;
		ret = vm_munmap(start, len);
		if (!ret) {
			next = start + len;
			must = true;	/* all of it goes now */
			tries = 0;
		} else if (!must || ret != -ENOMEM ||
			   ++tries >= XPMEM_UNMAP_TRIES) {
			return ret;
		}
		cond_resched();
	}
	return -EINTR;
}

/**
 * xpmem_detach_cmd - DETACH: unmap the attachment containing @vaddr
 * @ctx: the caller's device context
 * @vaddr: any address inside the attachment
 *
 * Every VMA of that attachment is unmapped (split and mremapped pieces
 * too), or none: a DETACH that fails leaves the attachment whole.  Only
 * pieces mremapped apart are unmapped one after the other: once the first
 * is gone the others follow, retried while memory is short
 * (xpmem_detach_unmap_matching()), and only if that keeps failing does DETACH
 * fail with those still mapped.  The mmap_lock is dropped before munmap,
 * as for any munmap(2): a thread of the same process that replaces the
 * attachment in that window loses its new mapping, exactly as with a
 * racing munmap(2).
 *
 * Return: 0, -EINVAL if @vaddr is not inside an attachment, or the error
 * of munmap (-ENOMEM: nothing was unmapped, but for pieces apart as said
 * above; -EINTR for a fatal signal).
 */
int xpmem_detach_cmd(struct xpmem_ctx *ctx, unsigned long vaddr)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct xpmem_att *att = NULL;
	unsigned long start = 0, len = 0;
	bool whole = false;
	int ret;

	mmap_read_lock(mm);
	vma = vma_lookup(mm, vaddr);
	if (vma && xpmem_fault_vma_is_att(vma)) {
		att = vma->vm_private_data;
		/* keeps att (and so its identity) alive after the unlock */
		xpmem_end_hold(att);
		start = vma->vm_start;
		len = vma->vm_end - vma->vm_start;
		whole = atomic_read(&att->nr_vmas) == 1;
	}
	mmap_read_unlock(mm);
	if (!att)
		return -EINVAL;
	/* The common case, one VMA: no walk over the address space. */
	if (whole)
		ret = vm_munmap(start, len);
	else
		ret = xpmem_detach_unmap_matching(att, NULL, false);
	xpmem_end_put(att);
	return ret;
}

/**
 * xpmem_detach_undo - unmap the attachment an ATTACH has just made
 * @att: the attachment, still held by the ATTACH
 *
 * For an ATTACH that fails after mapping (its result could not be copied
 * out): every VMA of that attachment goes, wherever other threads may
 * have moved it meanwhile, and nothing else, whatever they mapped at its
 * address since (retried while memory is short: xpmem_detach_unmap_matching()).
 */
void xpmem_detach_undo(struct xpmem_att *att)
{
	xpmem_detach_unmap_matching(att, NULL, true);
}

/* SIGBUS from now on; PTEs inserted before are zapped. */
static void xpmem_detach_kill(struct xpmem_att *att)
{
	mutex_lock(&att->lock);
	att->dead = true;
	mutex_unlock(&att->lock);
	/* Unmapped already (RELEASE), only held a moment longer? */
	if (atomic_read(&att->nr_vmas))
		xpmem_zap_att(att, att->offset, att->size);
}

/**
 * xpmem_detach_permit_end - RELEASE a permit: it and its attachments end
 * @permit: a permit just unlinked from its ctx (xpmem_permit_unlink*())
 * @unmap: the caller is the permit's process: munmap its attachments
 *         (otherwise they stay mapped but fault with SIGBUS)
 */
void xpmem_detach_permit_end(struct xpmem_permit *permit, bool unmap)
{
	struct xpmem_att *att;

	xpmem_permit_withdraw(permit);
	xpmem_revoke_sync();		/* copies through it have stopped */
	/*
	 * An attachment with a VMA is held, so it is on the permit's list
	 * (until its end): with none listed, no walk.
	 */
	if (unmap && current->mm == permit->mm &&
	    atomic_read(&permit->nr_atts))
		xpmem_detach_unmap_matching(NULL, permit, true);

	mutex_lock(&permit->lock);
	list_for_each_entry(att, &permit->atts, permit_node)
		xpmem_detach_kill(att);
	mutex_unlock(&permit->lock);
}

/**
 * xpmem_detach_seg_end - REMOVE a segment: it and every attachment of it end
 * @seg: a segment just unlinked from its ctx (xpmem_seg_unlink*())
 *
 * Afterwards GET and ATTACH fail with ENOENT and attacher accesses get
 * SIGBUS.
 */
void xpmem_detach_seg_end(struct xpmem_seg *seg)
{
	struct xpmem_att *att;

	xpmem_seg_withdraw(seg);
	xpmem_revoke_sync();		/* copies from or to it have stopped */

	mutex_lock(&seg->att_lock);
	list_for_each_entry(att, &seg->atts, seg_node)
		xpmem_detach_kill(att);
	mutex_unlock(&seg->att_lock);
}
