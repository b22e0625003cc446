// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_seg.c - segments: MAKE, REMOVE, and the mirror of the owner's
 * page tables
 *
 * A segment never pins the owner's pages.  It registers an
 * mmu_interval_notifier over the exported range; every change the owner's
 * mm makes there (munmap, mremap, mprotect, COW, migration, reclaim, THP
 * split/collapse, exit) bumps the notifier sequence and zaps the
 * attachments' PTEs over the affected offsets.  The next attacher access
 * faults and resolves the owner's page again (xpmem_attach.c).
 */
#include <linux/fs.h>
#include <linux/ipc_namespace.h>
#include <linux/mm.h>
#include <linux/nsproxy.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>
#include <linux/cred.h>
#include <linux/completion.h>
#include <linux/workqueue.h>

#include "xpmem_internal.h"
#include "compat.h"

/* Mode bits a permit may carry: rwx for owner, group and others. */
#define XPMEM_PERMIT_MODE_MASK	0777

void xpmem_seg_get(struct xpmem_seg *seg)
{
	kref_get(&seg->ref);
}

static void xpmem_seg_free(struct kref *ref)
{
	struct xpmem_seg *seg = container_of(ref, struct xpmem_seg, ref);

	if (seg->notifier_live)
		mmu_interval_notifier_remove(&seg->notifier);
	iput(seg->inode);
	put_user_ns(seg->user_ns);
	mmdrop(seg->mm);
	kfree(seg);
	atomic_long_dec(&xpmem_stats.segments);
}

/**
 * xpmem_seg_put - drop a segment reference
 * @seg: the segment
 *
 * Context: may sleep (the last put removes the notifier).
 */
void xpmem_seg_put(struct xpmem_seg *seg)
{
	kref_put(&seg->ref, xpmem_seg_free);
}

/**
 * xpmem_seg_zap - remove attacher PTEs over part of a segment
 * @seg: the segment
 * @offset: byte offset into the segment, page aligned
 * @len: bytes; 0 means to the end
 *
 * Every attachment of every attacher loses its PTEs over the range; the
 * next access faults.  Takes the address_space's i_mmap_rwsem, no mmap_lock.
 */
void xpmem_seg_zap(struct xpmem_seg *seg, unsigned long offset,
		   unsigned long len)
{
	unmap_mapping_range(seg->inode->i_mapping, offset, len, 1);
}

/*
 * Zapping attacher PTEs calls the attacher mm's own mmu notifiers.  Doing
 * that from inside the owner's notifier callback nests two
 * invalidate_range_start sections in one task, which lockdep reports as
 * recursion (it models all of them as one lock).  So the callback hands the
 * zap to a worker and waits for it: the zap holds nothing the waiting task
 * holds (only our i_mmap_rwsem and attacher page table locks), so the wait
 * cannot deadlock.  WQ_MEM_RECLAIM: the callback runs in reclaim, the
 * worker must make progress without allocating.  Zaps that a worker itself
 * triggers (nested xpmem) run inline.
 */
static struct workqueue_struct *xpmem_zap_wq;

struct xpmem_zap_req {
	struct work_struct work;
	struct completion done;
	struct xpmem_seg *seg;
	unsigned long offset;
	unsigned long len;
};

static void xpmem_zap_work(struct work_struct *work)
{
	struct xpmem_zap_req *req =
		container_of(work, struct xpmem_zap_req, work);

	xpmem_seg_zap(req->seg, req->offset, req->len);
	complete(&req->done);	/* req lives on the waiter's stack */
}

static bool xpmem_in_zap_worker(void)
{
	struct work_struct *work = current_work();

	return work && work->func == xpmem_zap_work;
}

static void xpmem_seg_zap_from_notifier(struct xpmem_seg *seg,
					unsigned long offset,
					unsigned long len)
{
	struct xpmem_zap_req req = {
		.seg = seg, .offset = offset, .len = len,
	};

	if (xpmem_in_zap_worker()) {
		xpmem_seg_zap(seg, offset, len);
		return;
	}
	init_completion(&req.done);
	INIT_WORK_ONSTACK(&req.work, xpmem_zap_work);
	queue_work(xpmem_zap_wq, &req.work);
	wait_for_completion(&req.done);
	destroy_work_on_stack(&req.work);
}

int xpmem_seg_init(void)
{
	xpmem_zap_wq = alloc_workqueue("xpmem_zap", WQ_MEM_RECLAIM, 0);
	return xpmem_zap_wq ? 0 : -ENOMEM;
}

void xpmem_seg_exit(void)
{
	destroy_workqueue(xpmem_zap_wq);
}

/*
 * An attachment keeps the file offsets it was created with for life (split
 * and mremap keep vm_pgoff), so this list says which segment offsets can
 * have attacher PTEs at all.
 */
void xpmem_seg_add_att(struct xpmem_seg *seg, struct xpmem_att *att)
{
	spin_lock(&seg->att_lock);
	list_add(&att->seg_node, &seg->atts);
	spin_unlock(&seg->att_lock);
}

void xpmem_seg_del_att(struct xpmem_seg *seg, struct xpmem_att *att)
{
	spin_lock(&seg->att_lock);
	list_del(&att->seg_node);
	spin_unlock(&seg->att_lock);
}

static bool xpmem_seg_attached(struct xpmem_seg *seg, unsigned long offset,
			       unsigned long len)
{
	struct xpmem_att *att;
	bool hit = false;

	spin_lock(&seg->att_lock);
	list_for_each_entry(att, &seg->atts, seg_node) {
		if (offset < att->offset + att->size &&
		    att->offset < offset + len) {
			hit = true;
			break;
		}
	}
	spin_unlock(&seg->att_lock);
	return hit;
}

static bool xpmem_seg_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct xpmem_seg *seg = container_of(mni, struct xpmem_seg, notifier);
	unsigned long start = max(range->start, seg->vaddr);
	unsigned long end = min(range->end, seg->vaddr + seg->size);

	/* Zapping sleeps; the OOM reaper will come back blockable. */
	if (!mmu_notifier_range_blockable(range))
		return false;

	/*
	 * Advance the sequence under the lock that PTE insertion holds: a
	 * fault that inserted before this point is zapped below, a fault
	 * that takes the lock after it sees the new sequence and retries.
	 */
	mutex_lock(&seg->lock);
	mmu_interval_set_seq(mni, cur_seq);
	mutex_unlock(&seg->lock);

	/*
	 * Nothing to zap, and no worker round trip, unless an attachment
	 * covers the range: an owner exporting its whole address space
	 * munmaps and mprotects all the time, mostly where nobody attached.
	 */
	if (start < end &&
	    xpmem_seg_attached(seg, start - seg->vaddr, end - start))
		xpmem_seg_zap_from_notifier(seg, start - seg->vaddr,
					    end - start);
	atomic_long_inc(&xpmem_stats.invalidations);
	return true;
}

static const struct mmu_interval_notifier_ops xpmem_seg_mni_ops = {
	.invalidate = xpmem_seg_invalidate,
};

/**
 * xpmem_cmd_make - export a range of the caller's address space
 * @ctx: the caller's device context
 * @cmd: classic MAKE argument; @cmd->segid is set on success
 *
 * @cmd->size == XPMEM_MAXADDR_SIZE exports from @cmd->vaddr to the top of
 * the user address space, holes included.
 *
 * Return: 0 or a negative errno.
 */
int xpmem_cmd_make(struct xpmem_ctx *ctx, struct xpmem_cmd_make *cmd)
{
	struct mm_struct *mm = current->mm;
	unsigned long limit = mm->task_size;
	unsigned long vaddr = cmd->vaddr;
	unsigned long size = cmd->size;
	struct xpmem_seg *seg;
	int ret;

	if (cmd->permit_type != XPMEM_PERMIT_MODE ||
	    cmd->permit_value & ~(u64)XPMEM_PERMIT_MODE_MASK)
		return -EINVAL;
	if (cmd->vaddr >= limit || offset_in_page(vaddr))
		return -EINVAL;
	if (size == XPMEM_MAXADDR_SIZE)
		size = limit - vaddr;
	else if (!size || offset_in_page(size) || size > limit - vaddr)
		return -EINVAL;

	seg = kzalloc(sizeof(*seg), GFP_KERNEL);
	if (!seg)
		return -ENOMEM;
	kref_init(&seg->ref);
	mutex_init(&seg->lock);
	spin_lock_init(&seg->att_lock);
	INIT_LIST_HEAD(&seg->atts);
	INIT_LIST_HEAD(&seg->ctx_node);
	INIT_HLIST_NODE(&seg->id.node);
	seg->vaddr = vaddr;
	seg->size = size;
	seg->uid = current_euid();
	seg->gid = current_egid();
	seg->mode = cmd->permit_value;
	seg->ipc_ns = current->nsproxy->ipc_ns;
	seg->user_ns = get_user_ns(current_user_ns());
	mmgrab(mm);
	seg->mm = mm;

	seg->inode = xpmem_seg_inode_alloc();
	if (IS_ERR(seg->inode)) {
		ret = PTR_ERR(seg->inode);
		goto free_seg;
	}

	ret = mmu_interval_notifier_insert(&seg->notifier, mm, vaddr, size,
					   &xpmem_seg_mni_ops);
	if (ret)
		goto put_inode;
	seg->notifier_live = true;

	ret = xpmem_id_publish(&seg->id, true);
	if (ret)
		goto remove_notifier;

	/* From here on the reference is the ctx list's and the id table's. */
	atomic_long_inc(&xpmem_stats.segments);

	mutex_lock(&xpmem_obj_lock);
	seg->ctx = ctx;
	list_add(&seg->ctx_node, &ctx->segs);
	mutex_unlock(&xpmem_obj_lock);

	cmd->segid = seg->id.id;
	return 0;

remove_notifier:
	mmu_interval_notifier_remove(&seg->notifier);
put_inode:
	iput(seg->inode);
free_seg:
	mmdrop(mm);
	put_user_ns(seg->user_ns);
	kfree(seg);
	return ret;
}

/**
 * xpmem_seg_remove - unpublish a segment and cut off its attachments
 * @seg: a segment just unlinked from its ctx (by the caller, under
 *       xpmem_obj_lock); the caller still holds the list's reference
 *
 * Afterwards GET fails with ENOENT, attacher accesses get SIGBUS, and the
 * owner's mm no longer calls back into the segment.
 */
void xpmem_seg_remove(struct xpmem_seg *seg)
{
	xpmem_id_unpublish(&seg->id);

	mutex_lock(&seg->lock);
	seg->removed = true;
	mutex_unlock(&seg->lock);

	xpmem_seg_zap(seg, 0, 0);
	mmu_interval_notifier_remove(&seg->notifier);
	seg->notifier_live = false;
}

/**
 * xpmem_cmd_remove - REMOVE: the owner withdraws a segment
 * @ctx: the caller's device context
 * @segid: the segment
 *
 * Return: 0, -ENOENT for an unknown segment, -EACCES if the caller is not
 * the process that made it.
 */
int xpmem_cmd_remove(struct xpmem_ctx *ctx, xpmem_segid_t segid)
{
	struct xpmem_seg *seg;
	int ret = 0;

	if (segid <= 0)
		return -EINVAL;
	seg = xpmem_seg_lookup(segid);
	if (!seg)
		return -ENOENT;

	mutex_lock(&xpmem_obj_lock);
	if (!seg->ctx) {
		ret = -ENOENT;
	} else if (seg->mm != ctx->mm) {
		ret = -EACCES;
	} else {
		list_del_init(&seg->ctx_node);
		seg->ctx = NULL;
	}
	mutex_unlock(&xpmem_obj_lock);

	if (!ret) {
		xpmem_seg_remove(seg);
		xpmem_seg_put(seg);
	}
	xpmem_seg_put(seg);
	return ret;
}
