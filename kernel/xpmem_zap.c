// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_zap.c - removing attacher PTEs, and the record of what an
 * attachment may have mapped
 *
 * Every zap of an attachment runs in one worker (why: "Zapping" below),
 * and each attachment keeps a bitmap of the segment offsets it may have a
 * PTE or PMD for, set before an insertion and cleared only after a zap,
 * so that an invalidation zaps - and waits - only where something may be
 * mapped.  Called by the invalidation code (xpmem_mirror.c and
 * xpmem_owner.c), the fault path and the end of attachments; calls nothing of this module.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "xpmem_internal.h"
#include "compat.h"

static struct workqueue_struct *xpmem_zap_wq;

/* ---- Zapping ------------------------------------------------------------ */

/*
 * Zapping attacher PTEs calls the attacher mm's own mmu notifiers.  From
 * inside the owner's notifier callback that would nest two
 * invalidate_range_start sections in one task (lockdep reports it as
 * recursion), and the attachment VMAs being zapped may themselves lie in a
 * range some attachment mirrors, which would call back into this file.  So
 * every zap runs in this worker, and the callback ignores invalidations the
 * worker causes: they only ever hit attachment VMAs, and a fault never
 * mirrors an attachment VMA (the fault path refuses them), so there is nothing
 * to invalidate.  WQ_MEM_RECLAIM: the callback runs in reclaim.
 *
 * What the worker needs, and why waiting for it from a notifier callback
 * is safe: unmap_mapping_range() takes the i_mmap_rwsem of the pseudo
 * file the attachment being zapped maps (for reading; one per open of
 * /dev/xpmem, shared by every attachment made through it) and the
 * attacher's page table locks, nothing else.  The core calls notifiers
 * holding an mmap_lock, folio locks, the i_mmap_rwsem of the files whose
 * folios it unmaps, and - when it splits or moves the VMA of an
 * attachment X - the i_mmap_rwsem of X's file, over X's own addresses.
 * Which attachments share that file does not matter below: the argument
 * is about addresses.  A callback waits only when its attachment may have a PTE
 * in the invalidated range (xpmem_zap_mapped_test()), and no
 * attachment ever has a PTE for an address where an attachment VMA lies
 * (the fault refuses those VMAs, and an invalidation clears the range
 * before any attachment VMA can be placed there).  So the callback never
 * waits for an i_mmap_rwsem the core holds: not X's file's (no attachment
 * has a PTE for X's addresses, X itself included: xpmem_mirror.c's
 * placement check runs at every placement), and not Y's when two processes
 * split attachments of each other at once (neither has a PTE for the
 * other's attachment VMA).
 * xpmem_zap_att() asserts the first under lockdep.
 *
 * One invalidation of the owner reaches every attachment of the range,
 * one callback each.  A round trip to the worker per attachment made the
 * owner's call cost grow by two context switches per attacher, so the
 * callbacks only list their zaps on the invalidation's record (struct
 * xpmem_owner_inval) and the owner's plain notifier, whose
 * invalidate_range_start the core calls after every interval callback of
 * the same invalidation (and before the owner's PTEs change), hands them
 * to the worker at once and waits once.  A callback that cannot list its
 * zap (no record: the release at exit, no memory) zaps at once.
 */
struct xpmem_zap_req {
	struct work_struct work;
	struct completion done;
	struct list_head zaps;		/* struct xpmem_zap */
};

/*
 * May wait for: the listed attachments' i_mmap_rwsem (read) and the
 * attachers' page table locks (above: never one the core holds while it
 * waits for this worker).  It owns what it touches: each zap holds its
 * attachment's inode (xpmem_zap_list()), and the attachment outlives the
 * invalidation that listed it.  It only removes PTEs (maps nothing, reads
 * no owner memory) and allocates no page.
 */
static void xpmem_zap_work(struct work_struct *work)
{
	struct xpmem_zap_req *req =
		container_of(work, struct xpmem_zap_req, work);
	struct xpmem_zap *z;

	list_for_each_entry(z, &req->zaps, node)
		unmap_mapping_range(z->inode->i_mapping, z->pos, z->len, 1);
	complete(&req->done);	/* req lives on the waiter's stack */
}

/*
 * Tells invalidations the worker causes by its context, not by their
 * range: right because the worker never reclaims (unmap_mapping_range()
 * gathers pages with GFP_NOWAIT), so no unrelated invalidation can run in
 * it.
 */
bool xpmem_zap_in_worker(void)
{
	struct work_struct *work = current_work();

	return work && work->func == xpmem_zap_work;
}

/*
 * Zap every part in @zaps in one round trip to the worker, and wait.
 * The list is the caller's again on return.  No attachment's
 * i_mmap_rwsem may be held (lockdep checks the caller's).
 */
void xpmem_zap_run(struct list_head *zaps)
{
	struct xpmem_zap_req req;
	struct xpmem_zap *z;

	list_for_each_entry(z, zaps, node)
		lockdep_assert_not_held(&z->inode->i_mapping->i_mmap_rwsem);
	init_completion(&req.done);
	INIT_LIST_HEAD(&req.zaps);
	list_splice_init(zaps, &req.zaps);
	INIT_WORK_ONSTACK(&req.work, xpmem_zap_work);
	queue_work(xpmem_zap_wq, &req.work);
	wait_for_completion(&req.done);
	destroy_work_on_stack(&req.work);
	list_splice(&req.zaps, zaps);
}

/**
 * xpmem_zap_att - remove an attachment's PTEs over part of it
 * @att: the attachment
 * @offset: segment offset, page aligned
 * @len: bytes
 *
 * The next access faults.  Waits for the zap worker, which needs the
 * attachment's i_mmap_rwsem: the caller must not hold it (lockdep checks).
 * The caller keeps @att and its inode alive until this returns: it is
 * the attachment's fault, its notifier callback, or REMOVE or RELEASE
 * while @att is on the segment's or permit's list.
 *
 * Context: may sleep; no att->lock held.
 */
void xpmem_zap_att(struct xpmem_att *att, unsigned long offset,
		   unsigned long len)
{
	struct xpmem_zap z = {
		.att = att, .inode = att->inode, .offset = offset, .len = len,
		.pos = offset + att->file_delta,
	};
	LIST_HEAD(zaps);

	list_add(&z.node, &zaps);
	xpmem_zap_run(&zaps);
}

/* ---- what an attachment may have mapped --------------------------------- */

struct xpmem_mapped_block {
	DECLARE_BITMAP(bits, XPMEM_MAPPED_BLOCK);
};

/**
 * xpmem_zap_mapped_init - an attachment with nothing mapped yet
 * @att: the new attachment
 */
void xpmem_zap_mapped_init(struct xpmem_att *att)
{
	xa_init(&att->mapped);
}

/**
 * xpmem_zap_mapped_destroy - free the bitmaps of an attachment
 * @att: an attachment whose notifiers are removed
 */
void xpmem_zap_mapped_destroy(struct xpmem_att *att)
{
	struct xpmem_mapped_block *b;
	unsigned long idx;

	xa_for_each(&att->mapped, idx, b)
		kfree(b);
	xa_destroy(&att->mapped);
}

/**
 * xpmem_zap_mapped_prepare - allocate the bitmaps of part of an attachment
 * @att: the attachment
 * @off: segment offset
 * @len: bytes
 *
 * Makes sure the bitmaps of segment offsets [@off, @off + @len) exist, so
 * that marking them under att->lock allocates nothing.  Bitmaps stay until
 * the attachment goes: 64 bytes per 2 MiB it ever mapped.
 *
 * Return: 0 or -ENOMEM.
 */
int xpmem_zap_mapped_prepare(struct xpmem_att *att, unsigned long off,
			     unsigned long len)
{
	unsigned long first = (off >> PAGE_SHIFT) / XPMEM_MAPPED_BLOCK;
	unsigned long last = ((off + len - 1) >> PAGE_SHIFT) /
			     XPMEM_MAPPED_BLOCK;
	struct xpmem_mapped_block *b;
	unsigned long i;
	int err;

	for (i = first; i <= last; i++) {
		if (xa_load(&att->mapped, i))
			continue;
		b = kzalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
		if (!b)
			return -ENOMEM;
		err = xa_insert(&att->mapped, i, b, GFP_KERNEL_ACCOUNT);
		if (err)
			kfree(b);
		if (err && err != -EBUSY)	/* -EBUSY: another fault's */
			return err;
	}
	return 0;
}

/*
 * Call @fn on each block's part of segment offsets [@off, @off + @len):
 * the block, the first bit and the number of bits.  Return: whether any
 * call returned true.
 */
static bool xpmem_zap_mapped_walk(struct xpmem_att *att, unsigned long off,
				  unsigned long len,
				  bool (*fn)(struct xpmem_mapped_block *b,
					     unsigned int bit, unsigned int nr))
{
	unsigned long pg = off >> PAGE_SHIFT;
	unsigned long end = (off + len - 1) >> PAGE_SHIFT;	/* last */
	unsigned long first = pg / XPMEM_MAPPED_BLOCK;
	unsigned long last = end / XPMEM_MAPPED_BLOCK;
	struct xpmem_mapped_block *b;
	unsigned long idx;
	bool any = false;

	lockdep_assert_held(&att->lock);
	xa_for_each_range(&att->mapped, idx, b, first, last) {
		unsigned long lo = max(pg, idx * XPMEM_MAPPED_BLOCK);
		unsigned long hi = min(end, idx * XPMEM_MAPPED_BLOCK +
					    XPMEM_MAPPED_BLOCK - 1);

		any |= fn(b, lo % XPMEM_MAPPED_BLOCK, hi - lo + 1);
	}
	return any;
}

static bool xpmem_zap_mapped_set_fn(struct xpmem_mapped_block *b,
				    unsigned int bit, unsigned int nr)
{
	bitmap_set(b->bits, bit, nr);
	return true;
}

static bool xpmem_zap_mapped_test_fn(struct xpmem_mapped_block *b,
				     unsigned int bit, unsigned int nr)
{
	return find_next_bit(b->bits, bit + nr, bit) < bit + nr;
}

static bool xpmem_zap_mapped_clear_fn(struct xpmem_mapped_block *b,
				      unsigned int bit, unsigned int nr)
{
	bitmap_clear(b->bits, bit, nr);
	return false;
}

/**
 * xpmem_zap_mapped_set - part of an attachment is about to be mapped
 * @att: the attachment
 * @off: segment offset
 * @len: bytes
 *
 * Segment offsets [@off, @off + @len) are about to get PTEs or a PMD.
 * Under att->lock, with xpmem_zap_mapped_prepare() done: a missing
 * bitmap is a bug (WARN), and the insertion is then refused.
 *
 * Return: false if the insertion must not happen.
 */
bool xpmem_zap_mapped_set(struct xpmem_att *att, unsigned long off,
			  unsigned long len)
{
	unsigned long blocks = (((off + len - 1) >> PAGE_SHIFT) /
				XPMEM_MAPPED_BLOCK) -
			       ((off >> PAGE_SHIFT) / XPMEM_MAPPED_BLOCK) + 1;
	unsigned long idx, n = 0;
	struct xpmem_mapped_block *b;

	xa_for_each_range(&att->mapped, idx, b,
			  (off >> PAGE_SHIFT) / XPMEM_MAPPED_BLOCK,
			  ((off + len - 1) >> PAGE_SHIFT) / XPMEM_MAPPED_BLOCK)
		n++;
	if (WARN_ON_ONCE(n != blocks))
		return false;
	xpmem_zap_mapped_walk(att, off, len, xpmem_zap_mapped_set_fn);
	return true;
}

/*
 * Whether segment offsets [@off, @off + @len) may have a PTE or PMD.
 * Under att->lock.  The bits stay set until the caller's zap is done
 * (xpmem_zap_mapped_forget()): an overlapping invalidation that runs
 * meanwhile must find them and zap - and wait - too, or it would let the
 * owner free pages that the first one's zap, still queued, has not yet
 * removed from the attacher.
 */
bool xpmem_zap_mapped_test(struct xpmem_att *att, unsigned long off,
			   unsigned long len)
{
	return xpmem_zap_mapped_walk(att, off, len, xpmem_zap_mapped_test_fn);
}

/*
 * Segment offsets [@off, @off + @len) were zapped by an invalidation that
 * is still in flight, so no fault can have mapped them since (a fault
 * whose window overlaps an invalidation in flight waits for its end, or
 * finds its window marked): they have no PTE or PMD now.
 */
void xpmem_zap_mapped_forget(struct xpmem_att *att, unsigned long off,
			     unsigned long len)
{
	mutex_lock(&att->lock);
	xpmem_zap_mapped_walk(att, off, len, xpmem_zap_mapped_clear_fn);
	mutex_unlock(&att->lock);
}

/**
 * xpmem_zap_list - a zap of part of an attachment, for a list
 * @att: an attachment with a VMA, so with an inode
 * @offset: segment offset, page aligned
 * @len: bytes
 * @gfp: allocation flags
 *
 * The zap holds its own reference on the attachment's inode, dropped by
 * xpmem_zap_list_done(): the ctx's pseudo file may be released before the
 * zap runs.  The attachment itself lives until its notifiers are removed,
 * which waits for the invalidation that lists the zap to end.
 *
 * Return: the zap, or NULL without memory.
 */
struct xpmem_zap *xpmem_zap_list(struct xpmem_att *att, unsigned long offset,
				 unsigned long len, gfp_t gfp)
{
	struct xpmem_zap *z = kmalloc(sizeof(*z), gfp);

	if (!z)
		return NULL;
	z->att = att;
	z->inode = att->inode;
	ihold(z->inode);
	z->offset = offset;
	z->len = len;
	z->pos = offset + att->file_delta;
	return z;
}

/*
 * Free the zaps of @zaps after they were done: their offsets are
 * unmapped.  Drops their inode references, never the last one (the
 * attachment holds one until its notifiers are removed).
 */
void xpmem_zap_list_done(struct list_head *zaps)
{
	struct xpmem_zap *z, *tmp;

	list_for_each_entry_safe(z, tmp, zaps, node) {
		xpmem_zap_mapped_forget(z->att, z->offset, z->len);
		iput(z->inode);
		kfree(z);
	}
}

/**
 * xpmem_zap_init - create the zap worker's queue
 *
 * WQ_MEM_RECLAIM: invalidations run in reclaim and wait for it.
 *
 * Return: 0 or -ENOMEM.
 */
int xpmem_zap_init(void)
{
	xpmem_zap_wq = alloc_workqueue("xpmem_zap", WQ_MEM_RECLAIM | WQ_PERCPU,
				       0);
	return xpmem_zap_wq ? 0 : -ENOMEM;
}

/**
 * xpmem_zap_exit - destroy it, once no invalidation can queue a zap
 */
void xpmem_zap_exit(void)
{
	destroy_workqueue(xpmem_zap_wq);
}
