// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_permit.c - access permits: GET, RELEASE, permission checks
 *
 * GET checks the segment's 0777-style mode the way SysV IPC does: the owner
 * bits if the caller's effective uid is the creator's, the group bits if
 * the caller is in the creator's group, the other bits otherwise;
 * CAP_IPC_OWNER in the segment's user namespace overrides.  Segments are
 * visible only inside the IPC namespace they were made in.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "xpmem_internal.h"

/* Mode bits needed for each kind of access (in the "other" position). */
#define XPMEM_MODE_READ		04
#define XPMEM_MODE_WRITE	02

static struct xpmem_id_table xpmem_permit_ids;

/* The table; module load and unload (nothing is left at unload). */
int xpmem_permit_init(void)
{
	return xpmem_id_table_init(&xpmem_permit_ids);
}

void xpmem_permit_exit(void)
{
	xpmem_id_table_destroy(&xpmem_permit_ids);
}

/**
 * xpmem_permit_lookup - find a published access permit
 * @apid: its id
 *
 * Return: the permit with a new reference, or NULL.
 */
struct xpmem_permit *xpmem_permit_lookup(xpmem_apid_t apid)
{
	struct xpmem_id *id = xpmem_id_lookup(&xpmem_permit_ids, apid);

	return id ? container_of(id, struct xpmem_permit, id) : NULL;
}

void xpmem_permit_get(struct xpmem_permit *permit)
{
	kref_get(&permit->ref);
}

static void xpmem_permit_free(struct kref *ref)
{
	struct xpmem_permit *permit =
		container_of(ref, struct xpmem_permit, ref);

	WARN_ON_ONCE(!list_empty(&permit->atts));
	xpmem_seg_put(permit->seg);
	atomic_long_dec(&xpmem_stats.permits);
	kfree_rcu(permit, rcu);		/* lookups may still be looking */
}

/**
 * xpmem_permit_put - drop a permit reference
 * @permit: the permit
 *
 * Context: may sleep.
 */
void xpmem_permit_put(struct xpmem_permit *permit)
{
	kref_put(&permit->ref, xpmem_permit_free);
}

static int xpmem_permit_seg_access(const struct xpmem_seg *seg, int flags)
{
	unsigned int need = XPMEM_MODE_READ;
	unsigned int granted;

	if (flags == XPMEM_RDWR)
		need |= XPMEM_MODE_WRITE;

	if (uid_eq(current_euid(), seg->uid))
		granted = seg->mode >> 6;
	else if (in_group_p(seg->gid))
		granted = seg->mode >> 3;
	else
		granted = seg->mode;

	if ((need & ~granted & 07) == 0)
		return 0;
	if (ns_capable(seg->user_ns, CAP_IPC_OWNER))
		return 0;
	return -EACCES;
}

/*
 * The authorization key check: a segment made with one needs exactly it,
 * one made without needs none presented.  Compares every byte of both
 * zero-padded keys and the lengths, so the time taken says nothing about
 * how much of a wrong key was right.
 */
static bool xpmem_permit_auth_ok(const struct xpmem_seg *seg,
				 const struct xpmem_seg_opts *opts)
{
	const u8 *auth = opts ? opts->auth : NULL;
	unsigned int diff, i;

	if (!seg->auth_len || !auth)
		return !seg->auth_len && !auth;
	diff = seg->auth_len ^ opts->auth_len;
	for (i = 0; i < XPMEM_EXT_AUTH_MAX; i++)
		diff |= seg->auth[i] ^ auth[i];
	return !diff;
}

/**
 * xpmem_permit_create - GET and EXT_GET: obtain the right to attach a segment
 * @ctx: the caller's device context
 * @seg: the segment, with a reference this function takes over
 * @flags: XPMEM_RDONLY or XPMEM_RDWR
 * @opts: EXT_GET's authorization key, or NULL
 * @apid: the permit's id on success
 *
 * Return: 0, -ENOENT for a removed segment, one the caller may not see
 * (another IPC namespace's: xpmem_seg_visible()) or an
 * exited owner, -EACCES (mode bits, a read-only export asked for RDWR, a
 * missing or wrong authorization key), -ENOSPC over the max_permits
 * limit, -ENOMEM.
 */
int xpmem_permit_create(struct xpmem_ctx *ctx, struct xpmem_seg *seg, int flags,
			const struct xpmem_seg_opts *opts, xpmem_apid_t *apid)
{
	struct xpmem_permit *permit;
	int ret;

	if (!xpmem_seg_visible(seg) || !xpmem_seg_owner_alive(seg)) {
		ret = -ENOENT;
		goto put_seg;
	}
	if (!xpmem_permit_auth_ok(seg, opts) ||
	    (flags == XPMEM_RDWR && seg->rdonly)) {
		ret = -EACCES;
		goto put_seg;
	}
	ret = xpmem_permit_seg_access(seg, flags);
	if (ret)
		goto put_seg;

	if (!xpmem_ctx_charge(&ctx->user->nr_permits,
			      READ_ONCE(xpmem_max_permits))) {
		ret = -ENOSPC;
		goto put_seg;
	}
	permit = kzalloc(sizeof(*permit), GFP_KERNEL_ACCOUNT);
	if (!permit) {
		atomic_dec(&ctx->user->nr_permits);
		ret = -ENOMEM;
		goto put_seg;
	}
	kref_init(&permit->ref);	/* GET's own, until it returns */
	mutex_init(&permit->lock);
	INIT_LIST_HEAD(&permit->atts);
	INIT_LIST_HEAD(&permit->ctx_node);
	INIT_LIST_HEAD(&permit->seg_node);
	INIT_LIST_HEAD(&permit->ev_node);
	permit->seg = seg;		/* takes over the lookup reference */
	permit->mm = ctx->mm;
	permit->writable = flags == XPMEM_RDWR;
	atomic_long_inc(&xpmem_stats.permits);

	mutex_lock(&xpmem_obj_lock);
	/* removed since the lookup? */
	ret = seg->ctx ? xpmem_id_publish(&xpmem_permit_ids, &permit->id,
					  &permit->ref) : -ENOENT;
	if (!ret) {
		/*
		 * Published: from the unlock on, RELEASE by another thread of
		 * the caller's, or the close of its file, can end it; only
		 * GET's own reference keeps it.  Here the ctx list takes its
		 * own (dropped by RELEASE or the close).
		 */
		kref_get(&permit->ref);
		permit->ctx = ctx;
		list_add(&permit->ctx_node, &ctx->permits);
		/* its segment's end reaches it there (xpmem_event.c) */
		list_add_tail(&permit->seg_node, &seg->permits);
	}
	mutex_unlock(&xpmem_obj_lock);

	if (!ret)
		*apid = permit->id.id;
	else
		atomic_dec(&ctx->user->nr_permits);
	xpmem_permit_put(permit);
	return ret;

put_seg:
	xpmem_seg_put(seg);
	return ret;
}

/**
 * xpmem_permit_cmd_get - the classic GET
 * @ctx: the caller's device context
 * @cmd: classic GET argument; @cmd->apid is set on success
 *
 * The permit value is ignored, as in the classic module (the classic
 * library always passes NULL).
 *
 * Return: 0, -EINVAL for bad flags, permit type or id, -ENOENT for an
 * unknown segment, or as xpmem_permit_create().
 */
int xpmem_permit_cmd_get(struct xpmem_ctx *ctx, struct xpmem_cmd_get *cmd)
{
	struct xpmem_seg *seg;

	if (cmd->flags != XPMEM_RDONLY && cmd->flags != XPMEM_RDWR)
		return -EINVAL;
	if (cmd->permit_type != XPMEM_PERMIT_MODE)
		return -EINVAL;
	if (cmd->segid <= 0)
		return -EINVAL;

	seg = xpmem_seg_lookup(cmd->segid);
	if (!seg)
		return -ENOENT;
	return xpmem_permit_create(ctx, seg, cmd->flags, NULL, &cmd->apid);
}

/**
 * xpmem_permit_withdraw - unpublish a permit and stop new attachments
 * @permit: a permit just unlinked from its ctx
 *
 * Ending the attachments it has is the attachment layer's part of RELEASE
 * (RELEASE in xpmem_detach.c).
 */
void xpmem_permit_withdraw(struct xpmem_permit *permit)
{
	xpmem_id_unpublish(&xpmem_permit_ids, &permit->id);
	mutex_lock(&permit->lock);
	permit->released = true;
	mutex_unlock(&permit->lock);
}

/* Unlink @permit from its ctx; the caller holds xpmem_obj_lock. */
static void xpmem_permit_unlink_locked(struct xpmem_permit *permit)
{
	/* charged to the user of the ctx it is on, until now */
	atomic_dec(&permit->ctx->user->nr_permits);
	xpmem_event_cancel(permit);
	list_del_init(&permit->ctx_node);
	permit->ctx = NULL;
}

/**
 * xpmem_permit_unlink - RELEASE's checks: take a permit from its process
 * @ctx: the caller's device context
 * @apid: the permit
 *
 * Return: the permit, with the reference its ctx list held, or
 * ERR_PTR(-EINVAL) for a non-positive id, -ENOENT for an unknown or
 * released permit, -EACCES if it belongs to another process.
 */
struct xpmem_permit *xpmem_permit_unlink(struct xpmem_ctx *ctx,
					 xpmem_apid_t apid)
{
	struct xpmem_permit *permit;
	int ret = 0;

	if (apid <= 0)
		return ERR_PTR(-EINVAL);
	permit = xpmem_permit_lookup(apid);
	if (!permit)
		return ERR_PTR(-ENOENT);

	mutex_lock(&xpmem_obj_lock);
	if (!permit->ctx)
		ret = -ENOENT;
	else if (permit->mm != ctx->mm)
		ret = -EACCES;
	else
		xpmem_permit_unlink_locked(permit);
	mutex_unlock(&xpmem_obj_lock);

	xpmem_permit_put(permit);	/* the lookup's; the list's stays */
	return ret ? ERR_PTR(ret) : permit;
}

/**
 * xpmem_permit_unlink_any - take any permit away from a closing ctx
 * @ctx: the ctx
 *
 * Return: a permit with the reference its ctx list held, or NULL.
 */
struct xpmem_permit *xpmem_permit_unlink_any(struct xpmem_ctx *ctx)
{
	struct xpmem_permit *permit;

	mutex_lock(&xpmem_obj_lock);
	permit = list_first_entry_or_null(&ctx->permits, struct xpmem_permit,
					  ctx_node);
	if (permit)
		xpmem_permit_unlink_locked(permit);
	mutex_unlock(&xpmem_obj_lock);
	return permit;
}
