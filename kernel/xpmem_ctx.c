// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_ctx.c - device contexts and the per-user object limits
 *
 * A context is one open of /dev/xpmem.  It lives as long as the file and
 * every attachment made through it, because attachments stay charged to
 * it until their last VMA is gone.  Every object is allocated with
 * GFP_KERNEL_ACCOUNT (charged to the caller's memory cgroup) and counted
 * against a module parameter, so no process can pin unbounded kernel
 * memory or make the owner's invalidations walk unbounded lists.
 *
 * The limits are per user, not per open (opens are unlimited): a context
 * belongs to the user of its opener's real uid (the kernel's own choice
 * for per-user resources: struct user_struct, RLIMIT_NPROC, mqueue and
 * pipe accounting; a set-user-ID program still charges whoever ran it),
 * and charges everything made through it to that user, whichever process
 * or context ends it.  struct user_struct has no room for a module's
 * counters (and find_user() is not exported), so the module keeps its own
 * table of users, each alive while it has a context (or an attachment
 * with pages of its own: xpmem_zero.c).
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/rhashtable.h>
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
		 "Segments per user, across all opens of /dev/xpmem (MAKE fails with ENOSPC beyond)");

unsigned int xpmem_max_permits = 65536;
module_param_named(max_permits, xpmem_max_permits, uint, 0644);
MODULE_PARM_DESC(max_permits,
		 "Access permits per user, across all opens of /dev/xpmem (GET fails with ENOSPC beyond)");

unsigned int xpmem_max_attachments = 65536;
module_param_named(max_attachments, xpmem_max_attachments, uint, 0644);
MODULE_PARM_DESC(max_attachments,
		 "Attachments per user, mapped or not yet released (ATTACH fails with ENOSPC beyond)");

unsigned int xpmem_max_revoked_pages = 65536;
module_param_named(max_revoked_pages, xpmem_max_revoked_pages, uint, 0644);
MODULE_PARM_DESC(max_revoked_pages,
		 "Pages per user that writes to revoked ZERO_REVOKED attachments allocate, until the attachment is freed (a write beyond gets SIGBUS)");

/* Users with a context, by uid; changes under xpmem_user_lock. */
static struct rhashtable xpmem_users;
static DEFINE_MUTEX(xpmem_user_lock);

static const struct rhashtable_params xpmem_user_params = {
	.head_offset = offsetof(struct xpmem_user, node),
	.key_offset = offsetof(struct xpmem_user, uid),
	.key_len = sizeof(kuid_t),
	.automatic_shrinking = true,
};

int xpmem_ctx_init(void)
{
	return rhashtable_init(&xpmem_users, &xpmem_user_params);
}

void xpmem_ctx_exit(void)
{
	WARN_ON_ONCE(atomic_read(&xpmem_users.nelems));
	rhashtable_destroy(&xpmem_users);
}

/* The user of @uid with a new reference, created if need be; or NULL. */
static struct xpmem_user *xpmem_user_get(kuid_t uid)
{
	struct xpmem_user *user, *new;
	int ret;

	rcu_read_lock();
	user = rhashtable_lookup(&xpmem_users, &uid, xpmem_user_params);
	if (user && !refcount_inc_not_zero(&user->ref))
		user = NULL;
	rcu_read_unlock();
	if (user)
		return user;

	new = kzalloc(sizeof(*new), GFP_KERNEL_ACCOUNT);
	if (!new)
		return NULL;
	new->uid = uid;
	refcount_set(&new->ref, 1);
	mutex_init(&new->lock);
	INIT_LIST_HEAD(&new->ctxs);

	mutex_lock(&xpmem_user_lock);
	/* under the lock a user in the table has a reference (put below) */
	user = rhashtable_lookup_fast(&xpmem_users, &uid, xpmem_user_params);
	if (user) {
		refcount_inc(&user->ref);
	} else {
		ret = rhashtable_insert_fast(&xpmem_users, &new->node,
					     xpmem_user_params);
		if (!ret) {
			user = new;
			new = NULL;
		}
	}
	mutex_unlock(&xpmem_user_lock);
	kfree(new);
	return user;
}

/**
 * xpmem_user_hold - another reference to the user of a context
 * @ctx: a context, referenced by the caller
 *
 * For what is charged to the user and may outlive @ctx (the pages of an
 * attachment, xpmem_zero.c).
 *
 * Return: @ctx->user, to be put with xpmem_user_put().
 */
struct xpmem_user *xpmem_user_hold(struct xpmem_ctx *ctx)
{
	refcount_inc(&ctx->user->ref);
	return ctx->user;
}

/**
 * xpmem_user_put - drop a user reference; the last one frees the user
 * @user: the user, with nothing charged to it by the caller any more
 *
 * Context: may sleep (takes xpmem_user_lock); no lock of ours held.
 */
void xpmem_user_put(struct xpmem_user *user)
{
	if (!refcount_dec_and_mutex_lock(&user->ref, &xpmem_user_lock))
		return;
	rhashtable_remove_fast(&xpmem_users, &user->node, xpmem_user_params);
	mutex_unlock(&xpmem_user_lock);
	WARN_ON_ONCE(atomic_read(&user->nr_segs) ||
		     atomic_read(&user->nr_permits) ||
		     atomic_read(&user->nr_revoked_pages) ||
		     !list_empty(&user->ctxs));
	kfree_rcu(user, rcu);
}

/**
 * xpmem_ctx_charge - count one more object against a limit
 * @count: the user's counter (ctx->user->nr_segs, ->nr_permits or
 *         ->nr_revoked_pages)
 * @limit: the limit (lowering it never drops existing objects)
 *
 * Undone with atomic_dec(@count).
 *
 * Return: true if counted, false if the limit is reached.
 */
bool xpmem_ctx_charge(atomic_t *count, unsigned int limit)
{
	int old = atomic_read(count);

	do {
		if ((unsigned int)old >= limit)
			return false;
	} while (!atomic_try_cmpxchg(count, &old, old + 1));
	return true;
}

/**
 * xpmem_ctx_charge_att - ATTACH's charge: one more attachment of the user
 * @count: &ctx->nr_atts of the caller's context (xpmem_attach.c, the only
 *         caller, passes that and undoes it with atomic_dec() when the
 *         attachment is freed)
 * @limit: max_attachments (lowering it never drops existing attachments)
 *
 * A user's attachments are the sum of its contexts' counters: every
 * context stays on its user's list until it is freed, which is after its
 * last attachment, so an attachment is charged to its user until freed.
 * The sum and the increment are one step under the user's lock, so that
 * two ATTACHes of the user cannot both take the last slot; the cost is
 * O(contexts of the caller's user).
 *
 * Return: true if counted, false if the limit is reached.
 */
bool xpmem_ctx_charge_att(atomic_t *count, unsigned int limit)
{
	struct xpmem_ctx *ctx = container_of(count, struct xpmem_ctx, nr_atts);
	struct xpmem_user *user = ctx->user;
	unsigned long sum = 0;
	struct xpmem_ctx *c;
	bool ok;

	mutex_lock(&user->lock);
	list_for_each_entry(c, &user->ctxs, user_node)
		sum += (unsigned int)atomic_read(&c->nr_atts);
	ok = sum < limit;
	if (ok)
		atomic_inc(count);
	mutex_unlock(&user->lock);
	return ok;
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
	ctx->user = xpmem_user_get(current_uid());
	if (!ctx->user) {
		kfree(ctx);
		return NULL;
	}
	mutex_lock(&ctx->user->lock);
	list_add(&ctx->user_node, &ctx->user->ctxs);
	mutex_unlock(&ctx->user->lock);
	kref_init(&ctx->ref);
	INIT_LIST_HEAD(&ctx->segs);
	INIT_LIST_HEAD(&ctx->permits);
	spin_lock_init(&ctx->space_lock);
	INIT_LIST_HEAD(&ctx->placing);
	xpmem_event_ctx_init(ctx);
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
	struct xpmem_user *user = ctx->user;

	mutex_lock(&user->lock);
	list_del(&ctx->user_node);
	mutex_unlock(&user->lock);
	xpmem_user_put(user);
	if (ctx->space)
		fput(ctx->space);
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
