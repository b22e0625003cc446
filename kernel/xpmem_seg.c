// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_seg.c - segments: MAKE and REMOVE
 *
 * A segment is the owner's promise that a range of its address space may
 * be attached: identity (the segid), permissions and the owner's mm.  It
 * never pins the owner's pages and mirrors nothing itself; each
 * attachment mirrors the part it maps (xpmem_mirror.c).
 */
#include <linux/cred.h>
#include <linux/ipc_namespace.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/pid.h>
#include <linux/rhashtable.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>

#include "xpmem_internal.h"
#include "compat.h"

/* Mode bits a permit may carry: rwx for owner, group and others. */
#define XPMEM_PERMIT_MODE_MASK	0777

static struct xpmem_id_table xpmem_seg_ids;

/*
 * Requested keys: one per segment at most, unique per IPC namespace,
 * hashed by namespace, length and bytes.  A key is reserved (hashed, not
 * live) before the segment is published and goes live after, so a
 * collision never needs a published segment undone, and GET by key never
 * finds a segment that is not published.  The table holds no reference:
 * a segment leaves it when it is withdrawn (REMOVE, close) or freed.
 * Changes are made under xpmem_key_lock; GET by key looks up under RCU
 * (segments are freed after a grace period).
 */
static struct rhashtable xpmem_seg_keys;
static DEFINE_MUTEX(xpmem_key_lock);

/* The key is compared as the bytes from ns to the end of bytes[]: no holes. */
static_assert(offsetof(struct xpmem_seg_key, len) ==
	      sizeof(struct ipc_namespace *));
static_assert(offsetof(struct xpmem_seg_key, bytes) ==
	      offsetof(struct xpmem_seg_key, len) + 1);

static const struct rhashtable_params xpmem_seg_key_params = {
	.head_offset = offsetof(struct xpmem_seg, key_node),
	.key_offset = offsetof(struct xpmem_seg, key),
	.key_len = offsetofend(struct xpmem_seg_key, bytes),
	.automatic_shrinking = true,
};

/* The tables; module load and unload (nothing is left at unload). */
int xpmem_seg_init(void)
{
	int ret = xpmem_id_table_init(&xpmem_seg_ids);

	if (ret)
		return ret;
	ret = rhashtable_init(&xpmem_seg_keys, &xpmem_seg_key_params);
	if (ret)
		xpmem_id_table_destroy(&xpmem_seg_ids);
	return ret;
}

void xpmem_seg_exit(void)
{
	WARN_ON_ONCE(atomic_read(&xpmem_seg_keys.nelems));
	rhashtable_destroy(&xpmem_seg_keys);
	xpmem_id_table_destroy(&xpmem_seg_ids);
}

/**
 * xpmem_seg_lookup - find a published segment
 * @segid: its id
 *
 * Return: the segment with a new reference, or NULL.
 */
struct xpmem_seg *xpmem_seg_lookup(xpmem_segid_t segid)
{
	struct xpmem_id *id = xpmem_id_lookup(&xpmem_seg_ids, segid);

	return id ? container_of(id, struct xpmem_seg, id) : NULL;
}

void xpmem_seg_get(struct xpmem_seg *seg)
{
	kref_get(&seg->ref);
}

static void xpmem_seg_key_release(struct xpmem_seg *seg);

static void xpmem_seg_free(struct kref *ref)
{
	struct xpmem_seg *seg = container_of(ref, struct xpmem_seg, ref);

	WARN_ON_ONCE(!list_empty(&seg->atts));
	/* withdrawn already, unless never */
	xpmem_seg_key_release(seg);
	xpmem_put_ipc_ns(seg->ipc_ns);
	put_user_ns(seg->user_ns);
	if (seg->owner_ref)
		xpmem_seg_owner_ref_put(seg->owner_ref);
	mmdrop(seg->mm);
	put_pid(seg->tgid);
	atomic_long_dec(&xpmem_stats.segments);
	kfree_rcu(seg, rcu);		/* lookups may still be looking */
}

/**
 * xpmem_seg_owner_ref_put - drop a hold of the owner's record of invalidations
 * @r: the hold (struct xpmem_owner_ref)
 *
 * The last one puts the owner's notifier; the core frees it after an SRCU
 * grace period, once no callback can be running.
 *
 * Context: any; does not sleep.
 */
void xpmem_seg_owner_ref_put(struct xpmem_owner_ref *r)
{
	if (!refcount_dec_and_test(&r->ref))
		return;
	mmu_notifier_put(r->mn);
	kfree(r);
}

/**
 * xpmem_seg_put - drop a segment reference
 * @seg: the segment
 *
 * Context: may sleep.
 */
void xpmem_seg_put(struct xpmem_seg *seg)
{
	kref_put(&seg->ref, xpmem_seg_free);
}

/**
 * xpmem_seg_owner_alive - does the owner still run in the segment's
 * address space?
 * @seg: the segment
 *
 * A segment outlives its owner's exit while another process holds the
 * owner's /dev/xpmem file, and its owner's exec while the new program
 * keeps the file open (no O_CLOEXEC); it is as good as removed then
 * (GET, ATTACH and copies fail with ENOENT).  Exit: nobody uses the
 * address space any more (mm_users 0).  Exec: the maker's thread group
 * runs in another address space, although something else may still hold
 * the old one for a moment (a copy's batch, a /proc reader, a process
 * that shares it through CLONE_VM): a thread group's mm changes only at
 * exec.  A thread group whose every thread is exiting is judged by
 * mm_users alone.
 */
bool xpmem_seg_owner_alive(struct xpmem_seg *seg)
{
	struct task_struct *g, *t;
	bool execed = false;

	if (!atomic_read(&seg->mm->mm_users))
		return false;
	rcu_read_lock();
	g = pid_task(seg->tgid, PIDTYPE_TGID);
	if (g) {
		for_each_thread(g, t) {
			struct mm_struct *mm = READ_ONCE(t->mm);

			if (mm == seg->mm) {
				execed = false;
				break;
			}
			if (mm)
				execed = true;
		}
	}
	rcu_read_unlock();
	return !execed;
}

/*
 * Segids resolve in the caller's IPC namespace, as System V IPC ids do,
 * unless the module was loaded with host_ids=Y: then host-wide, as the
 * classic modules resolve them (the permit mode and the authorization key
 * still apply, with uids compared as the kernel's: a container's root is
 * the host uid it maps to).  Root may change it at run time through
 * /sys/module/xpmem/parameters/host_ids; a GET sees the value of its
 * moment, permits granted stay.  Keys (EXT_MAKE_KEY) always name a
 * segment within one IPC namespace.
 */
static bool xpmem_host_ids;
module_param_named(host_ids, xpmem_host_ids, bool, 0644);
MODULE_PARM_DESC(host_ids,
		 "segids resolve host-wide, across IPC namespaces (default N)");

bool xpmem_seg_host_ids_enabled(void)
{
	return READ_ONCE(xpmem_host_ids);
}

/**
 * xpmem_seg_visible - may the caller GET @seg by its segid?
 * @seg: the segment
 *
 * Yes in @seg's IPC namespace; from another one only with host_ids=Y or
 * for a segment made with XPMEM_EXT_MAKE_ANY_NS (which carries an
 * authorization key the GET must present).
 */
bool xpmem_seg_visible(const struct xpmem_seg *seg)
{
	return seg->ipc_ns == current->nsproxy->ipc_ns || seg->any_ns ||
	       xpmem_seg_host_ids_enabled();
}

static void xpmem_seg_key_fill(struct xpmem_seg_key *k,
			       struct ipc_namespace *ns,
			       const u8 *key, u32 len)
{
	memset(k, 0, sizeof(*k));
	k->ns = ns;
	k->len = len;
	memcpy(k->bytes, key, len);
}

static void xpmem_seg_key_drop_locked(struct xpmem_seg *seg)
{
	lockdep_assert_held(&xpmem_key_lock);
	if (seg->key_hashed)
		rhashtable_remove_fast(&xpmem_seg_keys, &seg->key_node,
				       xpmem_seg_key_params);
	seg->key_hashed = false;
	WRITE_ONCE(seg->key_live, false);
}

/*
 * Reserve @seg's key.  A segment that holds it but whose owner has exited
 * (its file still open in another process) gives it up.
 * Return: 0, -EEXIST or -ENOMEM.
 */
static int xpmem_seg_key_reserve(struct xpmem_seg *seg)
{
	struct xpmem_seg *old;
	int ret = 0;

	mutex_lock(&xpmem_key_lock);
	/* in the table, hence not freed yet: that drops it under the lock */
	old = rhashtable_lookup_fast(&xpmem_seg_keys, &seg->key,
				     xpmem_seg_key_params);
	if (old && old->key_live && !xpmem_seg_owner_alive(old))
		xpmem_seg_key_drop_locked(old);
	else if (old)
		ret = -EEXIST;
	if (!ret) {
		ret = rhashtable_lookup_insert_fast(&xpmem_seg_keys,
						    &seg->key_node,
						    xpmem_seg_key_params);
		if (ret == -EEXIST || ret == -EBUSY || ret == -E2BIG)
			ret = -ENOMEM;	/* not in the table a moment ago */
		seg->key_hashed = !ret;
	}
	mutex_unlock(&xpmem_key_lock);
	return ret;
}

static void xpmem_seg_key_release(struct xpmem_seg *seg)
{
	if (!seg->key.len)
		return;
	mutex_lock(&xpmem_key_lock);
	xpmem_seg_key_drop_locked(seg);
	mutex_unlock(&xpmem_key_lock);
}

/**
 * xpmem_seg_lookup_key - find a segment by its requested key
 * @key: the key
 * @key_len: its length, 1..XPMEM_EXT_KEY_MAX
 *
 * Only segments of the caller's IPC namespace are found.
 *
 * Context: takes no lock but rcu_read_lock().
 * Return: the segment with a new reference, or NULL.
 */
struct xpmem_seg *xpmem_seg_lookup_key(const u8 *key, u32 key_len)
{
	struct xpmem_seg_key k;
	struct xpmem_seg *seg;

	xpmem_seg_key_fill(&k, current->nsproxy->ipc_ns, key, key_len);
	rcu_read_lock();
	seg = rhashtable_lookup(&xpmem_seg_keys, &k, xpmem_seg_key_params);
	if (seg && (!READ_ONCE(seg->key_live) ||
		    !kref_get_unless_zero(&seg->ref)))
		seg = NULL;
	rcu_read_unlock();
	return seg;
}

/*
 * Fill @seg's ranges from @iov (@nr buffers, checked here): page aligned,
 * non-empty, inside the user address space.  A single buffer may be
 * XPMEM_MAXADDR_SIZE long: everything from its base to the top.  A buffer
 * that starts where the one before it ends extends that range: the same
 * segment, with one notifier less per attachment and huge mappings
 * possible across the seam.
 */
static int xpmem_seg_set_ranges(struct xpmem_seg *seg,
				const struct xpmem_ext_iov *iov,
				unsigned int nr, unsigned long limit)
{
	struct xpmem_seg_range *r = NULL;
	unsigned long off = 0;
	unsigned int i;

	for (i = 0; i < nr; i++) {
		u64 base = iov[i].base, len = iov[i].len;

		if (base >= limit || offset_in_page(base))
			return -EINVAL;
		if (nr == 1 && len == (u64)XPMEM_MAXADDR_SIZE)
			len = limit - base;
		else if (!len || offset_in_page(len) || len > limit - base)
			return -EINVAL;
		if (r && r->oaddr + r->len == base) {
			r->len += len;
		} else {
			r = &seg->ranges[seg->nr_ranges++];
			r->oaddr = base;
			r->off = off;
			r->len = len;
		}
		off += len;	/* <= XPMEM_EXT_MAKE_IOV_MAX * limit */
	}
	seg->size = off;
	return 0;
}

/**
 * xpmem_seg_range_index - which range of @seg holds segment offset @off
 * @seg: the segment
 * @off: an offset below seg->size
 */
unsigned int xpmem_seg_range_index(const struct xpmem_seg *seg,
				   unsigned long off)
{
	unsigned int lo = 0, hi = seg->nr_ranges - 1;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo + 1) / 2;

		if (seg->ranges[mid].off <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/*
 * A new segment's identity, taken from the calling owner; from here on
 * xpmem_seg_put() undoes everything but the user's charge.
 */
static void xpmem_seg_own(struct xpmem_seg *seg, unsigned int mode)
{
	struct mm_struct *mm = current->mm;

	kref_init(&seg->ref);		/* MAKE's own, until it returns */
	mutex_init(&seg->att_lock);
	INIT_LIST_HEAD(&seg->atts);
	INIT_LIST_HEAD(&seg->permits);
	INIT_LIST_HEAD(&seg->ctx_node);
	seg->uid = current_euid();
	seg->gid = current_egid();
	seg->mode = mode;
	seg->ipc_ns = get_ipc_ns(current->nsproxy->ipc_ns);
	seg->user_ns = get_user_ns(current_user_ns());
	mmgrab(mm);
	seg->mm = mm;
	seg->tgid = get_pid(task_tgid(current));
	atomic_long_inc(&xpmem_stats.segments);
}

/* EXT_MAKE's options: read-only, authorization key, requested key. */
static int xpmem_seg_set_opts(struct xpmem_seg *seg,
			      const struct xpmem_seg_opts *opts)
{
	seg->rdonly = opts->rdonly;
	seg->any_ns = opts->any_ns;	/* xpmem_main_check_make(): with auth */
	if (opts->auth) {
		seg->auth_len = opts->auth_len;
		memcpy(seg->auth, opts->auth, sizeof(seg->auth));
	}
	if (!opts->key)
		return 0;
	xpmem_seg_key_fill(&seg->key, seg->ipc_ns, opts->key, opts->key_len);
	return xpmem_seg_key_reserve(seg);
}

/*
 * A published segment goes on its owner ctx's list, and its key becomes
 * findable.  From then on a REMOVE by a guessed or listed segid can end it
 * at any time; only MAKE's own reference keeps it.
 */
static void xpmem_seg_list(struct xpmem_ctx *ctx, struct xpmem_seg *seg)
{
	mutex_lock(&xpmem_obj_lock);
	kref_get(&seg->ref);		/* the ctx list's (REMOVE's, close's) */
	seg->ctx = ctx;
	list_add(&seg->ctx_node, &ctx->segs);
	mutex_unlock(&xpmem_obj_lock);

	if (seg->key.len) {
		mutex_lock(&xpmem_key_lock);
		/* not if REMOVE, by a guessed segid, came first */
		WRITE_ONCE(seg->key_live, seg->key_hashed);
		mutex_unlock(&xpmem_key_lock);
	}
}

/**
 * xpmem_seg_make - MAKE and EXT_MAKE: export ranges of the caller's memory
 * @ctx: the caller's device context
 * @iov: the buffers, one after the other in segment offsets: each page
 *       aligned; a single one may be XPMEM_MAXADDR_SIZE long, for
 *       everything from its base to the top of the user address space,
 *       holes included
 * @nr: how many, 1..XPMEM_EXT_MAKE_IOV_MAX
 * @mode: permit mode, 0..0777
 * @opts: EXT_MAKE's options (checked by the caller), or NULL
 * @segid: the new segment's id on success
 *
 * Return: 0, -EINVAL for a malformed request, -EEXIST for a key in use in
 * the caller's IPC namespace, -ENOSPC over the max_segments limit,
 * -ENOMEM, -EAGAIN.
 */
int xpmem_seg_make(struct xpmem_ctx *ctx, const struct xpmem_ext_iov *iov,
		   unsigned int nr, unsigned int mode,
		   const struct xpmem_seg_opts *opts, xpmem_segid_t *segid)
{
	struct xpmem_seg *seg;
	xpmem_segid_t id;
	int ret;

	if ((mode & ~XPMEM_PERMIT_MODE_MASK) || !nr ||
	    nr > XPMEM_EXT_MAKE_IOV_MAX)
		return -EINVAL;

	seg = kzalloc(struct_size(seg, ranges, nr), GFP_KERNEL_ACCOUNT);
	if (!seg)
		return -ENOMEM;
	ret = xpmem_seg_set_ranges(seg, iov, nr, current->mm->task_size);
	if (ret)
		goto free_ranges;
	ret = -ENOSPC;
	if (!xpmem_ctx_charge(&ctx->user->nr_segs,
			      READ_ONCE(xpmem_max_segments)))
		goto free_ranges;
	xpmem_seg_own(seg, mode);
	ret = opts ? xpmem_seg_set_opts(seg, opts) : 0;
	if (ret)
		goto put_seg;
	ret = xpmem_id_publish(&xpmem_seg_ids, &seg->id, &seg->ref);
	if (ret)
		goto put_seg;
	id = seg->id.id;	/* read while MAKE's reference keeps it */
	xpmem_seg_list(ctx, seg);
	xpmem_seg_put(seg);
	*segid = id;
	return 0;

put_seg:
	xpmem_seg_put(seg);
	atomic_dec(&ctx->user->nr_segs);
	return ret;

free_ranges:
	kfree(seg);
	return ret;
}

/**
 * xpmem_seg_cmd_make - the classic MAKE
 * @ctx: the caller's device context
 * @cmd: classic MAKE argument; @cmd->segid is set on success
 *
 * Return: as xpmem_seg_make().
 */
int xpmem_seg_cmd_make(struct xpmem_ctx *ctx, struct xpmem_cmd_make *cmd)
{
	struct xpmem_ext_iov iov = { .base = cmd->vaddr, .len = cmd->size };

	if (cmd->permit_type != XPMEM_PERMIT_MODE ||
	    cmd->permit_value & ~(u64)XPMEM_PERMIT_MODE_MASK)
		return -EINVAL;
	return xpmem_seg_make(ctx, &iov, 1, cmd->permit_value, NULL,
			      &cmd->segid);
}

/**
 * xpmem_seg_withdraw - unpublish a segment and stop new attachments
 * @seg: a segment just unlinked from its ctx
 *
 * Afterwards GET and ATTACH fail with ENOENT.  Ending the attachments it
 * has is the attachment layer's part of REMOVE (xpmem_detach.c).
 */
void xpmem_seg_withdraw(struct xpmem_seg *seg)
{
	xpmem_seg_key_release(seg);
	xpmem_id_unpublish(&xpmem_seg_ids, &seg->id);

	mutex_lock(&seg->att_lock);
	seg->removed = true;
	mutex_unlock(&seg->att_lock);
}

/* Unlink @seg from its ctx; the caller holds xpmem_obj_lock. */
static void xpmem_seg_unlink_locked(struct xpmem_seg *seg)
{
	/* charged to the user of the ctx it is on, until now */
	atomic_dec(&seg->ctx->user->nr_segs);
	list_del_init(&seg->ctx_node);
	seg->ctx = NULL;
}

/**
 * xpmem_seg_unlink - REMOVE's checks: take the segment away from its owner
 * @ctx: the caller's device context
 * @segid: the segment
 *
 * Return: the segment, with the reference its ctx list held, or
 * ERR_PTR(-EINVAL) for a non-positive id, -ENOENT for an unknown or removed
 * segment, -EACCES if the caller is not the process that made it.
 */
struct xpmem_seg *xpmem_seg_unlink(struct xpmem_ctx *ctx,
				   xpmem_segid_t segid)
{
	struct xpmem_seg *seg;
	int ret = 0;

	if (segid <= 0)
		return ERR_PTR(-EINVAL);
	seg = xpmem_seg_lookup(segid);
	if (!seg)
		return ERR_PTR(-ENOENT);

	mutex_lock(&xpmem_obj_lock);
	if (!seg->ctx)
		ret = -ENOENT;
	else if (seg->mm != ctx->mm)
		ret = -EACCES;
	else
		xpmem_seg_unlink_locked(seg);
	mutex_unlock(&xpmem_obj_lock);

	xpmem_seg_put(seg);		/* the lookup's; the list's stays */
	return ret ? ERR_PTR(ret) : seg;
}

/**
 * xpmem_seg_unlink_any - take any segment away from a closing ctx
 * @ctx: the ctx
 *
 * Return: a segment with the reference its ctx list held, or NULL.
 */
struct xpmem_seg *xpmem_seg_unlink_any(struct xpmem_ctx *ctx)
{
	struct xpmem_seg *seg;

	mutex_lock(&xpmem_obj_lock);
	seg = list_first_entry_or_null(&ctx->segs, struct xpmem_seg,
				       ctx_node);
	if (seg)
		xpmem_seg_unlink_locked(seg);
	mutex_unlock(&xpmem_obj_lock);
	return seg;
}
