// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_ctx.c - device contexts and the per-context object limits
 *
 * A context is one open of /dev/xpmem.  It lives as long as the file and
 * every attachment made through it, because attachments stay charged to
 * it until their last VMA is gone.  Every object is allocated with
 * GFP_KERNEL_ACCOUNT (charged to the caller's memory cgroup) and counted
 * against a module parameter, so no process can pin unbounded kernel
 * memory or make the owner's invalidations walk unbounded lists.
 */
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "xpmem_internal.h"

/* ctx lists, seg->ctx and permit->ctx (see xpmem_internal.h) */
DEFINE_MUTEX(xpmem_obj_lock);

unsigned int xpmem_max_segments = 65536;
module_param_named(max_segments, xpmem_max_segments, uint, 0644);
MODULE_PARM_DESC(max_segments,
		 "Segments per open of /dev/xpmem (MAKE fails with ENOSPC beyond)");

unsigned int xpmem_max_permits = 65536;
module_param_named(max_permits, xpmem_max_permits, uint, 0644);
MODULE_PARM_DESC(max_permits,
		 "Access permits per open of /dev/xpmem (GET fails with ENOSPC beyond)");

unsigned int xpmem_max_attachments = 65536;
module_param_named(max_attachments, xpmem_max_attachments, uint, 0644);
MODULE_PARM_DESC(max_attachments,
		 "Attachments per open of /dev/xpmem, mapped or not yet released (ATTACH fails with ENOSPC beyond)");

/**
 * xpmem_charge - count one more object against a limit
 * @count: the context's counter
 * @limit: the limit (lowering it never drops existing objects)
 *
 * Return: true if counted, false if the limit is reached.
 */
bool xpmem_charge(atomic_t *count, unsigned int limit)
{
	int old = atomic_read(count);

	do {
		if ((unsigned int)old >= limit)
			return false;
	} while (!atomic_try_cmpxchg(count, &old, old + 1));
	return true;
}

/**
 * xpmem_ctx_alloc - a context for the current process
 *
 * Return: the context with one reference, or NULL.
 */
struct xpmem_ctx *xpmem_ctx_alloc(void)
{
	struct xpmem_ctx *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);

	if (!ctx)
		return NULL;
	kref_init(&ctx->ref);
	INIT_LIST_HEAD(&ctx->segs);
	INIT_LIST_HEAD(&ctx->permits);
	mmgrab(current->mm);
	ctx->mm = current->mm;
	ctx->tgid = get_pid(task_tgid(current));
	return ctx;
}

void xpmem_ctx_get(struct xpmem_ctx *ctx)
{
	kref_get(&ctx->ref);
}

static void xpmem_ctx_free(struct kref *ref)
{
	struct xpmem_ctx *ctx = container_of(ref, struct xpmem_ctx, ref);

	put_pid(ctx->tgid);
	mmdrop(ctx->mm);
	kfree(ctx);
}

/**
 * xpmem_ctx_put - drop a context reference
 * @ctx: the context
 */
void xpmem_ctx_put(struct xpmem_ctx *ctx)
{
	kref_put(&ctx->ref, xpmem_ctx_free);
}
