// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_copy.c - copies through a permit (EXT_COPY), from an ioctl or an
 * io_uring command (xpmem_main.c)
 *
 * Invariants (docs/design.md, "Copies and io_uring"):
 * - owner pages are pinned a batch at a time (XPMEM_COPY_BATCH pages)
 *   under the owner's mmap_lock, with an mm_users reference on the
 *   owner's mm, and both are dropped before the next batch; only VMAs an
 *   attachment may mirror are reached, with the owner's protections
 *   (get_user_pages());
 * - a batch's bytes move inside a revocation read section (xpmem_revoke.c)
 *   that checks the permit and the segment first and never faults; the
 *   caller's buffers fault outside it with nothing of the owner's held
 *   (no page pinned, no mm_users reference): a caller's buffer that
 *   faults slowly keeps neither the owner's pages nor its address space
 *   past the owner's exit or exec;
 * - a batch is pinned, then written: an owner's munmap between the two
 *   takes the pages out of its address space, and the batch's bytes go
 *   to those pages, as process_vm_writev()'s do (docs/design.md);
 * - io_uring's inline issue never waits: -EAGAIN sends the copy to a
 *   worker, which restarts it from its first byte.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/pagemap.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "xpmem_internal.h"
#include "compat.h"

/* Owner pages pinned at once: 64 KiB, an array of 128 bytes. */
#define XPMEM_COPY_BATCH	16

/* Copies at most this long are tried inline by io_uring's first issue. */
#define XPMEM_COPY_INLINE_MAX	(64UL << 10)

/* The iovecs of one copy that live on the stack; more are allocated. */
#define XPMEM_COPY_FAST_IOV	8

/*
 * Pin the owner's pages of one batch at @oaddr (at most @nr) with @gup
 * flags.  The owner's VMA at @oaddr must be one attachments may mirror;
 * a batch never crosses it, so the check and the pinning see the same
 * VMA under one hold of the lock.  Without @wait the lock is only tried,
 * a fault that would wait for I/O is not started (FOLL_NOWAIT), and any
 * failure is -EAGAIN: the worker that issues the copy again finds the
 * real one.
 */
static long xpmem_copy_pin(struct mm_struct *mm, unsigned long oaddr,
			   unsigned long nr, unsigned int gup,
			   struct page **pages, bool wait)
{
	struct vm_area_struct *vma;
	long n;

	if (!wait) {
		if (!mmap_read_trylock(mm))
			return -EAGAIN;
	} else if (mmap_read_lock_killable(mm)) {
		return -EINTR;
	}
	vma = vma_lookup(mm, oaddr);
	if (!vma || !xpmem_mirror_vma_ok(vma)) {
		n = -EFAULT;
	} else {
		nr = min(nr, (vma->vm_end - (oaddr & PAGE_MASK)) >> PAGE_SHIFT);
		n = xpmem_pin_user_pages_remote(mm, oaddr & PAGE_MASK, nr,
						gup | (wait ? 0 : FOLL_NOWAIT),
						pages);
	}
	mmap_read_unlock(mm);
	if (n <= 0 && !wait)
		return -EAGAIN;
	return n ? n : -EFAULT;
}

/* Whether a copy through @permit must stop.  In a revocation section. */
static bool xpmem_copy_revoked(const struct xpmem_permit *permit)
{
	return READ_ONCE(permit->released) || READ_ONCE(permit->seg->removed);
}

/*
 * Move up to @len bytes between @iter and the pinned @pages, from byte
 * @start of the first, inside one revocation read section and without
 * faulting: REMOVE and RELEASE wait for this, so it must be a bounded
 * memcpy whatever the caller's buffer is (userfaultfd, an attachment).
 *
 * Return: bytes moved (short where the caller's buffer would fault);
 * *@revoked set, and nothing moved, if the permit or segment is gone.
 */
static size_t xpmem_copy_batch(const struct xpmem_permit *permit,
			       struct page **pages, size_t start, size_t len,
			       struct iov_iter *iter, bool to_seg,
			       bool *revoked)
{
	size_t done = 0;

	xpmem_revoke_read_lock();
	*revoked = xpmem_copy_revoked(permit);
	if (*revoked)
		goto unlock;
	pagefault_disable();
	while (done < len) {
		struct page *page = pages[(start + done) >> PAGE_SHIFT];
		size_t off = offset_in_page(start + done);
		size_t bytes = min_t(size_t, PAGE_SIZE - off, len - done);
		size_t moved;

		if (to_seg)
			moved = copy_page_from_iter(page, off, bytes, iter);
		else
			moved = copy_page_to_iter(page, off, bytes, iter);
		done += moved;
		if (moved < bytes)
			break;
	}
	pagefault_enable();
unlock:
	xpmem_revoke_read_unlock();
	return done;
}

/*
 * Fault in the next @len bytes of the caller's buffer, outside any
 * revocation section.  Return: 0, or -EFAULT if not even one byte can be.
 */
static int xpmem_copy_fault_in(struct iov_iter *iter, size_t len, bool to_seg)
{
	size_t left = xpmem_iov_iter_fault_in(iter, len, !to_seg);

	return left == len ? -EFAULT : 0;
}

/*
 * Move @len bytes between @iter and the owner's memory at @oaddr, through
 * @permit: every batch checks that it still may (xpmem_copy_batch()).
 * Each batch takes an mm_users reference and pins its pages, moves what
 * it can without faulting, and drops both; where the caller's buffer
 * faults, it is faulted in with nothing of the owner's held, and the
 * batch starts again from the first byte not moved.
 * Return: bytes moved if any, else -errno (-ENOENT once revoked or once
 * the owner's address space is gone).
 */
static ssize_t xpmem_copy_iter(const struct xpmem_permit *permit,
			       unsigned long oaddr, struct iov_iter *iter,
			       size_t len, bool to_seg, bool wait)
{
	unsigned int gup = to_seg ? FOLL_WRITE : 0;
	struct page *pages[XPMEM_COPY_BATCH];
	struct mm_struct *mm = permit->seg->mm;
	bool revoked = false;
	size_t done = 0;
	int err = 0;
	long n;

	while (len && !err) {
		size_t off = offset_in_page(oaddr);
		unsigned long nr = min_t(unsigned long, XPMEM_COPY_BATCH,
					 DIV_ROUND_UP(off + len, PAGE_SIZE));
		size_t blen, moved;

		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		if (!mmget_not_zero(mm)) {
			err = -ENOENT;
			break;
		}
		n = xpmem_copy_pin(mm, oaddr, nr, gup, pages, wait);
		if (n < 0) {
			mmput(mm);
			err = n;
			break;
		}
		blen = min_t(size_t, len, n * PAGE_SIZE - off);
		moved = xpmem_copy_batch(permit, pages, off, blen, iter, to_seg,
					 &revoked);
		unpin_user_pages_dirty_lock(pages, n, to_seg);
		mmput(mm);
		done += moved;
		oaddr += moved;
		len -= moved;
		if (revoked) {
			err = -ENOENT;
			break;
		}
		/* the caller's buffer faults: nothing of the owner's held */
		if (moved < blen) {
			if (fatal_signal_pending(current))
				err = -EINTR;
			else
				err = xpmem_copy_fault_in(iter, blen - moved,
							  to_seg);
		}
		cond_resched();
	}
	/*
	 * A copy that would wait starts over in a worker: no partial result.
	 * A worker must never get -EAGAIN: it would issue the copy again
	 * and again.
	 */
	if (err == -EAGAIN) {
		if (!wait)
			return err;
		err = -EFAULT;
	}
	return done ? done : err;
}

/*
 * Move @count bytes between @iter and the segment of @permit from segment
 * offset @off, one owner range after the other.  Return: as
 * xpmem_copy_iter(); -EAGAIN (only without @wait) whatever was moved.
 */
static ssize_t xpmem_copy_seg(const struct xpmem_permit *permit,
			      unsigned long off, struct iov_iter *iter,
			      size_t count, bool to_seg, bool wait)
{
	const struct xpmem_seg *seg = permit->seg;
	unsigned int i = xpmem_seg_range_index(seg, off);
	size_t done = 0;
	ssize_t n;

	while (done < count) {
		const struct xpmem_seg_range *r = &seg->ranges[i++];
		size_t len = min_t(size_t, count - done, r->off + r->len - off);

		n = xpmem_copy_iter(permit, xpmem_seg_range_oaddr(r, off), iter,
				    len, to_seg, wait);
		if (n == -EAGAIN || (n < 0 && !done))
			return n;
		if (n < 0)
			break;
		done += n;
		off += n;
		if (n < len)
			break;
	}
	return done;
}

/*
 * Build @iter over the caller's buffers of @cmd, in @iov (XPMEM_COPY_FAST_IOV
 * elements) or in an array allocated into *@alloc.  The total is capped at
 * MAX_RW_COUNT, as read(2) caps it.
 */
static int xpmem_copy_import(const struct xpmem_ext_copy *cmd,
			     struct iovec *iov, struct iovec **alloc,
			     struct iov_iter *iter)
{
	unsigned int dir = (cmd->flags & XPMEM_EXT_COPY_TO) ? WRITE : READ;
	unsigned long nr = 1, i;
	size_t total = 0;

	/* struct xpmem_ext_iov is a 64-bit struct iovec: copied as one */
	BUILD_BUG_ON(sizeof(struct xpmem_ext_iov) != sizeof(struct iovec));
	*alloc = NULL;
	if (cmd->flags & XPMEM_EXT_COPY_IOV) {
		nr = cmd->len;
		if (!nr || nr > XPMEM_EXT_IOV_MAX)
			return -EINVAL;
		if (nr > XPMEM_COPY_FAST_IOV) {
			*alloc = kmalloc_array(nr, sizeof(*iov), GFP_KERNEL);
			if (!*alloc)
				return -ENOMEM;
			iov = *alloc;
		}
		if (copy_from_user(iov, u64_to_user_ptr(cmd->addr),
				   nr * sizeof(*iov)))
			return -EFAULT;
	} else {
		iov[0].iov_base = u64_to_user_ptr(cmd->addr);
		iov[0].iov_len = cmd->len;
	}
	for (i = 0; i < nr; i++) {
		if (iov[i].iov_len > MAX_RW_COUNT)
			iov[i].iov_len = MAX_RW_COUNT;
		if (!access_ok(iov[i].iov_base, iov[i].iov_len))
			return -EFAULT;
		total += iov[i].iov_len;	/* <= 1024 * MAX_RW_COUNT */
	}
	iov_iter_init(iter, dir, iov, nr, total);
	iov_iter_truncate(iter, MAX_RW_COUNT);
	return 0;
}

/*
 * Build @iter over the part of the ring's registered buffer that @cmd's
 * one buffer names (IORING_URING_CMD_FIXED): its pages are pinned by the
 * ring already.  io_uring checks the index; the range must lie inside
 * the buffer (-EFAULT).
 */
static int xpmem_copy_import_fixed(const struct xpmem_ext_copy *cmd,
				   struct io_uring_cmd *ioucmd,
				   unsigned int issue_flags,
				   struct iov_iter *iter)
{
	unsigned int dir = (cmd->flags & XPMEM_EXT_COPY_TO) ? WRITE : READ;

	if (cmd->flags & XPMEM_EXT_COPY_IOV)
		return -EINVAL;
	return xpmem_uring_import_fixed(ioucmd, cmd->addr,
					min_t(u64, cmd->len, MAX_RW_COUNT),
					dir, iter, issue_flags);
}

/**
 * xpmem_copy - EXT_COPY: copy between the caller's buffers and a segment
 * @ctx: the caller's device context
 * @cmd: the argument (xpmem_uapi.h), copied in and checked
 *       (xpmem_main.c)
 * @nowait: io_uring's inline issue: -EAGAIN rather than wait for the
 *          owner's mmap_lock
 * @fixed: the io_uring command whose registered buffer is the local
 *         buffer (IORING_URING_CMD_FIXED), or NULL
 * @issue_flags: @fixed's issue flags (0 without @fixed)
 *
 * Return: bytes copied (short only if stopped after the first byte),
 * -EINVAL for a malformed request or a range outside the segment,
 * -ENOENT for an unknown or released permit, a removed segment or an
 * exited owner, -EACCES for another process's permit or COPY_TO through
 * a read-only one, -EFAULT for memory that cannot be copied, -EINTR on a
 * fatal signal, -EAGAIN (only with @nowait), -ENOMEM.
 */
ssize_t xpmem_copy(struct xpmem_ctx *ctx, const struct xpmem_ext_copy *cmd,
		   bool nowait, struct io_uring_cmd *fixed,
		   unsigned int issue_flags)
{
	bool to_seg = cmd->flags & XPMEM_EXT_COPY_TO;
	struct iovec fast[XPMEM_COPY_FAST_IOV], *alloc;
	struct xpmem_permit *permit;
	struct iov_iter iter;
	struct xpmem_seg *seg;
	size_t count;
	ssize_t ret;

	/* a copy a worker will do is not looked at twice */
	if (nowait && !(cmd->flags & XPMEM_EXT_COPY_IOV) &&
	    cmd->len > XPMEM_COPY_INLINE_MAX)
		return -EAGAIN;
	alloc = NULL;
	if (fixed)
		ret = xpmem_copy_import_fixed(cmd, fixed, issue_flags, &iter);
	else
		ret = xpmem_copy_import(cmd, fast, &alloc, &iter);
	if (ret)
		goto free_iov;
	count = iov_iter_count(&iter);
	ret = -EAGAIN;
	if (nowait && count > XPMEM_COPY_INLINE_MAX)
		goto free_iov;

	permit = xpmem_permit_lookup(cmd->apid);
	ret = -ENOENT;
	if (!permit)
		goto free_iov;
	seg = permit->seg;
	if (permit->mm != ctx->mm) {
		ret = -EACCES;
		goto put_permit;
	}
	if (cmd->offset > seg->size || count > seg->size - cmd->offset) {
		ret = -EINVAL;
		goto put_permit;
	}
	if (to_seg && !permit->writable) {
		ret = -EACCES;
		goto put_permit;
	}
	/* each batch holds the owner's mm for itself (xpmem_copy_iter()) */
	if (READ_ONCE(permit->released) || READ_ONCE(seg->removed) ||
	    !xpmem_seg_owner_alive(seg)) {
		ret = -ENOENT;
		goto put_permit;
	}
	if (!count)
		ret = 0;
	else
		ret = xpmem_copy_seg(permit, cmd->offset, &iter, count, to_seg,
				     !nowait);
put_permit:
	xpmem_permit_put(permit);
free_iov:
	kfree(alloc);
	return ret;
}
