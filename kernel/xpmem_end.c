// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_end.c - the holds of an attachment, and its end
 *
 * An attachment is held by each of its VMAs (counted by their ->open and
 * ->close, xpmem_fault.c), by the ATTACH that makes it until the new
 * address is out (xpmem_attach.c), and by a fault, DETACH or POPULATE
 * that must find it again after dropping the mmap_lock.  When the last
 * hold goes, it ends: what it holds of its permit, segment and ctx is
 * dropped at once, and a worker that nothing waits for removes its
 * notifiers and frees it.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/mount.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "xpmem_internal.h"
#include "compat.h"

static void xpmem_end_unlink(struct xpmem_att *att)
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
static void xpmem_end_put_objects(struct xpmem_att *att)
{
	xpmem_zero_att_destroy(att);
	xpmem_end_unlink(att);
	xpmem_permit_put(att->permit);
	xpmem_seg_put(att->seg);
	atomic_dec(&att->ctx->nr_atts);
	xpmem_ctx_put(att->ctx);
	atomic_long_dec(&xpmem_stats.attachments);
}

/*
 * The worker of an attachment's end: runs on the mirror's queue, within a
 * tick of the end (xpmem_mirror_defer() queues ends in batches), holds no
 * lock, and nothing waits for it (an owner that keeps invalidating only
 * delays it, and with it the freeing of @att's memory).
 *
 * Removes the notifiers, then frees what only they and the zaps their
 * invalidations listed use, and @att.  May wait for: the settle work, if
 * ATTACH queued it (xpmem_mirror_settle_cancel(); it waits for the
 * owner's invalidations in flight) and, in mmu_interval_notifier_remove(), the end of the owner's
 * invalidations in flight - uninterruptibly, but in a kworker, never in
 * a task of the attacher or the owner.  The core never calls it, so it
 * cannot hold an i_mmap_rwsem, mmap_lock or folio lock the wait depends
 * on.  It owns @att: the end handed it over and nothing else reaches
 * @att but the batch that queues this work and the notifier callbacks and
 * their listed zaps, which the removal waits for (once it returns, no zap
 * naming @att is left).  The callbacks use nothing
 * xpmem_end_put_objects() put.  It maps nothing and touches no owner
 * memory; the pages it frees were charged to the attacher (memcg, and the
 * user's revoked-page count was given back at the end).  The inode and
 * mount it puts last were pinned for it (synchronous: an internal
 * mount's last reference unmounts at once, so nothing of the module is
 * left behind).
 */
static void xpmem_end_work(struct work_struct *work)
{
	struct xpmem_att *att = container_of(work, struct xpmem_att,
					     free_work);
	struct vfsmount *mnt = att->mnt;
	unsigned int i;

	xpmem_mirror_settle_cancel(att);
	for (i = 0; i < att->nr_mirrors; i++)
		if (att->mirrors[i].live)
			mmu_interval_notifier_remove(&att->mirrors[i].notifier);
	xpmem_owner_put(att);
	xpmem_zap_mapped_destroy(att);
	/* before the mount that holds its superblock */
	iput(att->inode);
	kvfree(att);
	mntput(mnt);
}

/**
 * xpmem_end_hold - hold an attachment
 * @att: an attachment someone holds already: a VMA found under the
 *	mmap_lock, or the caller's own hold
 *
 * For a caller that drops the mmap_lock and needs @att after it; undone by
 * xpmem_end_put().
 */
void xpmem_end_hold(struct xpmem_att *att)
{
	atomic_inc(&att->users);
}

/**
 * xpmem_end_put - drop a hold of an attachment; the last one ends it
 * @att: the attachment
 *
 * The end: no VMA maps @att and none will (``ended``), its objects are
 * dropped at once, and the rest is left to xpmem_end_work().  Called from
 * the last VMA's ->close (under the attacher's mmap_lock, held for writing
 * but in exit_mmap() on kernels before 6.1; or in the error path of
 * mmap), from ATTACH, DETACH and POPULATE with no lock held, and from the
 * fault with at most the attacher's mmap_lock held; never under an
 * i_mmap_rwsem or a folio lock.  May wait for: permit->lock and
 * seg->att_lock, which RELEASE and REMOVE hold across their zaps - the
 * zap worker, which needs only the attachments' files' i_mmap_rwsem (read)
 * and page table locks and never an mmap_lock, none of which anyone holds
 * for long - and user->lock (leaf) when the ctx goes with it.  These
 * mutex waits are uninterruptible but bounded: an owner of another user
 * can delay them by the zaps of one REMOVE at most, never for as long as
 * it likes.  It maps
 * nothing and touches no owner memory (no placement or revocation
 * question).  The work it queues owns @att, which holds everything that
 * work touches: the file's inode and mount, the owner's record (an
 * owner_ref) and its own bitmaps; the ctx file itself is put with the ctx
 * (fput(), from task context but for an exit_mmap() run by a kthread).
 * The pages it frees (revoked-page copies, the bitmaps) were charged to
 * the attacher.
 */
void xpmem_end_put(struct xpmem_att *att)
{
	if (!atomic_dec_and_test(&att->users))
		return;
	WRITE_ONCE(att->ended, true);
	xpmem_end_put_objects(att);
	INIT_WORK(&att->free_work, xpmem_end_work);
	xpmem_mirror_defer(att);
}
