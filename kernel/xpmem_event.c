// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_event.c - events: a process learns that a segment it holds a
 * permit for has ended, without touching it
 *
 * Each permit carries its one possible event (struct xpmem_permit's ev_*
 * fields), so queueing one allocates nothing and cannot fail, and the
 * queue of a ctx never holds more entries than the ctx has permits.  When
 * a segment ends (REMOVE, the owner's close or exit) every permit on its
 * list is queued on the ctx of the process that got it; RELEASE (or the
 * getter's close) takes the permit off that queue again.  read() of
 * /dev/xpmem hands out whole struct xpmem_ext_event records, oldest
 * first: copied out under ctx->ev_read_lock, and taken off the queue only
 * once the copy to the reader's buffer succeeded, so a fault in the
 * buffer loses nothing.  Calls nothing of the other layers.
 */
#include <linux/fs.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/uio.h>

#include "xpmem_internal.h"

/* Records one read() takes at most (on the stack: 8 x 32 bytes). */
#define XPMEM_EVENT_BATCH	8

/**
 * xpmem_event_ctx_init - an empty event queue for a new ctx
 * @ctx: the ctx, not yet visible to anyone
 */
void xpmem_event_ctx_init(struct xpmem_ctx *ctx)
{
	spin_lock_init(&ctx->ev_lock);
	INIT_LIST_HEAD(&ctx->events);
	mutex_init(&ctx->ev_read_lock);
	init_waitqueue_head(&ctx->ev_wait);
}

/* Queue @permit's event on its ctx; xpmem_obj_lock held (permit->ctx). */
static void xpmem_event_queue(struct xpmem_permit *permit, u32 reason)
{
	struct xpmem_ctx *ctx = permit->ctx;

	lockdep_assert_held(&xpmem_obj_lock);
	spin_lock(&ctx->ev_lock);
	if (!permit->ev_reason) {	/* one event per permit */
		permit->ev_reason = reason;
		permit->ev_seq = ++ctx->ev_seq;
		list_add_tail(&permit->ev_node, &ctx->events);
	}
	spin_unlock(&ctx->ev_lock);
	wake_up_interruptible_poll(&ctx->ev_wait, EPOLLIN | EPOLLRDNORM);
}

/**
 * xpmem_event_seg_end - a segment has ended: tell every process with a permit
 * @seg: the segment, unpublished and with its attachments revoked
 * @reason: XPMEM_EXT_EVENT_REMOVED or XPMEM_EXT_EVENT_OWNER_EXITED
 *
 * Every permit still on its getter's list is queued there (the first
 * reason wins).  GET no longer finds @seg, so no permit joins the list
 * later.
 *
 * Context: process; takes xpmem_obj_lock and each getter's ev_lock.
 */
void xpmem_event_seg_end(struct xpmem_seg *seg, u32 reason)
{
	struct xpmem_permit *permit;

	mutex_lock(&xpmem_obj_lock);
	list_for_each_entry(permit, &seg->permits, seg_node)
		xpmem_event_queue(permit, reason);
	mutex_unlock(&xpmem_obj_lock);
}

/**
 * xpmem_event_cancel - a permit leaves its ctx: its event, if queued, goes
 * @permit: the permit, being unlinked from permit->ctx
 *
 * Context: xpmem_obj_lock held.
 */
void xpmem_event_cancel(struct xpmem_permit *permit)
{
	struct xpmem_ctx *ctx = permit->ctx;

	lockdep_assert_held(&xpmem_obj_lock);
	list_del_init(&permit->seg_node);
	spin_lock(&ctx->ev_lock);
	if (!list_empty(&permit->ev_node))
		list_del_init(&permit->ev_node);
	spin_unlock(&ctx->ev_lock);
}

/**
 * xpmem_event_pending - does @ctx have an event to read? (for poll)
 * @ctx: the ctx
 */
bool xpmem_event_pending(struct xpmem_ctx *ctx)
{
	bool pending;

	spin_lock(&ctx->ev_lock);
	pending = !list_empty(&ctx->events);
	spin_unlock(&ctx->ev_lock);
	return pending;
}

/*
 * Copy the records of up to @max oldest events into @rec, leaving them
 * queued; *@last is the sequence of the last one.  Return: how many.
 */
static unsigned int xpmem_event_peek(struct xpmem_ctx *ctx,
				     struct xpmem_ext_event *rec,
				     unsigned int max, u64 *last)
{
	struct xpmem_permit *permit;
	unsigned int n = 0;

	spin_lock(&ctx->ev_lock);
	list_for_each_entry(permit, &ctx->events, ev_node) {
		if (n == max)
			break;
		/* on the queue, so on the ctx's list: alive */
		rec[n] = (struct xpmem_ext_event) {
			.segid = permit->seg->id.id,
			.apid = permit->id.id,
			.reason = permit->ev_reason,
		};
		*last = permit->ev_seq;
		n++;
	}
	spin_unlock(&ctx->ev_lock);
	return n;
}

/*
 * The peeked events were copied out: take those still queued off the
 * queue (a RELEASE meanwhile took its own).  Later events have higher
 * sequences and sit behind them; only the reader removes from the head.
 */
static void xpmem_event_consume(struct xpmem_ctx *ctx, u64 last)
{
	struct xpmem_permit *permit, *tmp;

	spin_lock(&ctx->ev_lock);
	list_for_each_entry_safe(permit, tmp, &ctx->events, ev_node) {
		if (permit->ev_seq > last)
			break;
		list_del_init(&permit->ev_node);
	}
	spin_unlock(&ctx->ev_lock);
}

/**
 * xpmem_event_read - read() of /dev/xpmem: whole event records
 * @ctx: the reader's ctx (the caller checked that it is the reader's)
 * @to: the reader's buffer
 * @nowait: O_NONBLOCK or RWF_NOWAIT: never wait
 *
 * May wait for: ctx->ev_read_lock (another reader, copying out at most
 * XPMEM_EVENT_BATCH records) and for the first event, both interruptibly;
 * nothing the owner of a segment holds.
 *
 * Return: bytes read (a multiple of the record size, at least one
 * record), -EINVAL for a buffer smaller than one record, -EAGAIN with
 * @nowait and nothing queued (or another reader busy), -ERESTARTSYS on a
 * signal, -EFAULT (and the records stay queued).
 */
ssize_t xpmem_event_read(struct xpmem_ctx *ctx, struct iov_iter *to,
			 bool nowait)
{
	struct xpmem_ext_event rec[XPMEM_EVENT_BATCH];
	size_t max = iov_iter_count(to) / sizeof(rec[0]);
	unsigned int n;
	ssize_t ret;
	u64 last = 0;

	if (!max)
		return -EINVAL;
	max = min_t(size_t, max, XPMEM_EVENT_BATCH);
	if (nowait ? !mutex_trylock(&ctx->ev_read_lock) :
		     mutex_lock_interruptible(&ctx->ev_read_lock))
		return nowait ? -EAGAIN : -ERESTARTSYS;
	for (;;) {
		n = xpmem_event_peek(ctx, rec, max, &last);
		if (n)
			break;
		ret = -EAGAIN;
		if (nowait)
			goto unlock;
		mutex_unlock(&ctx->ev_read_lock);
		if (wait_event_interruptible(ctx->ev_wait,
					     xpmem_event_pending(ctx)) ||
		    mutex_lock_interruptible(&ctx->ev_read_lock))
			return -ERESTARTSYS;
	}
	ret = n * sizeof(rec[0]);
	if (copy_to_iter(rec, ret, to) != ret) {
		ret = -EFAULT;
		goto unlock;
	}
	xpmem_event_consume(ctx, last);
unlock:
	mutex_unlock(&ctx->ev_read_lock);
	return ret;
}

/**
 * xpmem_event_group_exited - is the caller the last thread of @ctx's opener,
 * exiting?
 * @ctx: a ctx whose file is being closed
 *
 * Then the owner of the ctx's segments is gone, whoever else still holds
 * the file.
 */
bool xpmem_event_group_exited(struct xpmem_ctx *ctx)
{
	return (current->flags & PF_EXITING) &&
	       task_tgid(current) == ctx->tgid &&
	       !atomic_read(&current->signal->live);
}

/**
 * xpmem_event_close_reason - why the segments of a closing ctx end
 * @ctx: the ctx at its last close
 *
 * Return: XPMEM_EXT_EVENT_OWNER_EXITED if its opener's address space is
 * gone (exit, kill, exec) or the opener is exiting now, else
 * XPMEM_EXT_EVENT_REMOVED (the owner closed the file).
 */
u32 xpmem_event_close_reason(struct xpmem_ctx *ctx)
{
	if (!atomic_read(&ctx->mm->mm_users) || xpmem_event_group_exited(ctx))
		return XPMEM_EXT_EVENT_OWNER_EXITED;
	return XPMEM_EXT_EVENT_REMOVED;
}
