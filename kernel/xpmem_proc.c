// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_proc.c - the classic read-only /proc/xpmem files, and
 * /proc/xpmem-objects/<tgid> (each thread group's objects, for `xpmem list`)
 *
 * Invariants (docs/design.md, "Counters and /proc/xpmem"):
 * - /proc/xpmem/global_pages and /proc/xpmem/<tgid> say exactly what the
 *   classic files say; nothing is ever pinned, so every count is 0;
 * - a <tgid> file belongs to a thread group (its struct pid), never to a
 *   number, and lists only ctxs that very thread group opened;
 * - who may read a <tgid> file is decided at each open and at each read,
 *   against the thread group's credentials of that moment, as
 *   /proc/PID/maps decides it (xpmem_proc_may_read()); the file's owner
 *   and mode decide nothing (exec keeps the struct pid: a set-user-ID
 *   program's objects must not be shown to the user who ran it);
 * - a ctx leaves its entry at the ->flush after which its thread group
 *   holds the file no more, or at the last close; an entry whose group is
 *   gone shows nothing and goes at the next open of the device.
 * This file reads the structures of every layer below main and calls none
 * of their functions.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fdtable.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/proc_fs.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/coredump.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>

#include "xpmem_internal.h"

/* One per thread group with an open /dev/xpmem. */
struct xpmem_proc_tg {
	struct list_head node;
	struct pid *tgid;		/* the thread group (referenced) */
	struct list_head ctxs;		/* xpmem_ctx.proc_node: its opens */
	struct proc_dir_entry *pde;	/* /proc/xpmem/<tgid> */
	struct proc_dir_entry *objs;	/* /proc/xpmem-objects/<tgid> */
};

static struct proc_dir_entry *xpmem_proc_dir;
static struct proc_dir_entry *xpmem_proc_objs_dir;
/*
 * xpmem_proc_lock protects xpmem_proc_tgs and the creation and removal of
 * the <tgid> files; it is held across proc_remove(), which waits for the
 * shows in progress, so shows never take it.
 * xpmem_proc_ctx_lock (inside it) protects each entry's ctxs; every change
 * of them holds both, so either one is enough to read them.  A show
 * takes it, then xpmem_obj_lock, then one permit->lock at a time.
 */
static DEFINE_MUTEX(xpmem_proc_lock);
static DEFINE_MUTEX(xpmem_proc_ctx_lock);
static LIST_HEAD(xpmem_proc_tgs);

/* Pages pinned and unpinned, ever: nothing pins, so both stay 0. */
static atomic_long_t xpmem_pages_pinned;
static atomic_long_t xpmem_pages_unpinned;

static int xpmem_proc_global_show(struct seq_file *m, void *v)
{
	seq_printf(m, "all pages pinned by XPMEM: %ld\n"
		   "all pages unpinned by XPMEM: %ld\n",
		   atomic_long_read(&xpmem_pages_pinned),
		   atomic_long_read(&xpmem_pages_unpinned));
	return 0;
}

static const char *xpmem_proc_access(bool writable)
{
	return writable ? "rdwr" : "rdonly";
}

/*
 * Is the thread group @tgid still there?  Until it is reaped, its number
 * cannot be anybody else's.
 */
static bool xpmem_proc_alive(struct pid *tgid)
{
	bool alive;

	rcu_read_lock();
	alive = pid_task(tgid, PIDTYPE_TGID);
	rcu_read_unlock();
	return alive;
}

/* The number of the thread group that made a segment, 0 if none. */
static pid_t xpmem_proc_owner_nr(const struct xpmem_ctx *owner)
{
	if (!owner || !xpmem_proc_alive(owner->tgid))
		return 0;
	return pid_nr(owner->tgid);
}

/*
 * May current read the description of thread group @tgid now?
 *
 * The test ptrace_may_access(task, PTRACE_MODE_READ_FSCREDS) makes (it is
 * not exported): same thread group; or current's fsuid and fsgid equal to
 * the group's real, effective and saved ids, and its mm dumpable as its
 * user (a set-user-ID exec or a change of credentials makes it not); or
 * CAP_SYS_PTRACE over the group's user namespace (over its exec's when
 * it is not dumpable: xpmem_task_dump_ns()).  The security module hook is not
 * called (not exported either): Yama decides only attaching; other modules see
 * /proc/PID. A group that is gone, or has no mm (exiting), is readable by
 * nobody. Returns 0 or -EACCES.
 */
static int xpmem_proc_may_read(struct pid *tgid)
{
	const struct cred *cred = current_cred(), *tcred;
	struct user_namespace *mm_ns;
	struct task_struct *task;
	bool dumpable = false;
	bool ok;

	task = get_pid_task(tgid, PIDTYPE_TGID);
	if (!task)
		return -EACCES;
	if (same_thread_group(task, current)) {
		ok = true;
		goto put_task;
	}
	rcu_read_lock();
	tcred = __task_cred(task);
	ok = (uid_eq(cred->fsuid, tcred->euid) &&
	      uid_eq(cred->fsuid, tcred->suid) &&
	      uid_eq(cred->fsuid, tcred->uid) &&
	      gid_eq(cred->fsgid, tcred->egid) &&
	      gid_eq(cred->fsgid, tcred->sgid) &&
	      gid_eq(cred->fsgid, tcred->gid)) ||
	     ns_capable(tcred->user_ns, CAP_SYS_PTRACE);
	rcu_read_unlock();
	if (!ok)
		goto put_task;
	/* dumpability after the credentials (pairs with commit_creds()) */
	smp_rmb();
	task_lock(task);
	mm_ns = xpmem_task_dump_ns(task, &dumpable);
	task_unlock(task);
	ok = mm_ns && (dumpable || ns_capable(mm_ns, CAP_SYS_PTRACE));
	if (mm_ns)
		put_user_ns(mm_ns);
put_task:
	put_task_struct(task);
	return ok ? 0 : -EACCES;
}

/* The objects made through @ctx; under xpmem_proc_ctx_lock. */
static void xpmem_proc_show_ctx(struct seq_file *m, struct xpmem_ctx *ctx)
{
	struct xpmem_permit *permit;
	struct xpmem_seg *seg;
	struct xpmem_att *att;

	mutex_lock(&xpmem_obj_lock);
	list_for_each_entry(seg, &ctx->segs, ctx_node)
		seq_printf(m, "segment %#llx vaddr %#lx size %lu mode 0%o attachments %d ranges %u\n",
			   seg->id.id, seg->ranges[0].oaddr, seg->size, seg->mode,
			   atomic_read(&seg->nr_atts), seg->nr_ranges);
	list_for_each_entry(permit, &ctx->permits, ctx_node) {
		seq_printf(m, "permit %#llx segment %#llx owner %d access %s attachments %d\n",
			   permit->id.id, permit->seg->id.id,
			   xpmem_proc_owner_nr(permit->seg->ctx),
			   xpmem_proc_access(permit->writable),
			   atomic_read(&permit->nr_atts));
		mutex_lock(&permit->lock);
		list_for_each_entry(att, &permit->atts, permit_node)
			seq_printf(m, "attachment segment %#llx apid %#llx offset %lu size %lu access %s\n",
				   att->seg->id.id, permit->id.id, att->offset,
				   att->size, xpmem_proc_access(att->writable));
		mutex_unlock(&permit->lock);
	}
	mutex_unlock(&xpmem_obj_lock);
}

static int xpmem_proc_tg_show(struct seq_file *m, void *v)
{
	struct xpmem_proc_tg *tg = m->private;
	int ret;

	ret = xpmem_proc_may_read(tg->tgid);
	if (ret)
		return ret;
	seq_puts(m, "pages pinned by XPMEM: 0\npages unpinned by XPMEM: 0\n");
	return 0;
}

static int xpmem_proc_objs_show(struct seq_file *m, void *v)
{
	struct xpmem_proc_tg *tg = m->private;
	struct xpmem_ctx *ctx;
	int ret;

	/* an entry left behind by a thread group that is gone */
	if (!xpmem_proc_alive(tg->tgid))
		return 0;
	/* decided at each read: an exec may have changed the credentials */
	ret = xpmem_proc_may_read(tg->tgid);
	if (ret)
		return ret;
	mutex_lock(&xpmem_proc_ctx_lock);
	list_for_each_entry(ctx, &tg->ctxs, proc_node)
		xpmem_proc_show_ctx(m, ctx);
	mutex_unlock(&xpmem_proc_ctx_lock);
	return 0;
}

/*
 * Open of a <tgid> file: refused unless current may read the thread
 * group's description now (each read asks again).  An entry whose group is
 * gone opens and shows nothing.
 */
static int xpmem_proc_open_common(struct inode *inode, struct file *file,
				  int (*show)(struct seq_file *, void *))
{
	struct xpmem_proc_tg *tg = pde_data(inode);
	int ret;

	if (xpmem_proc_alive(tg->tgid)) {
		ret = xpmem_proc_may_read(tg->tgid);
		if (ret)
			return ret;
	}
	return single_open(file, show, tg);
}

static int xpmem_proc_tg_open(struct inode *inode, struct file *file)
{
	return xpmem_proc_open_common(inode, file, xpmem_proc_tg_show);
}

static int xpmem_proc_objs_open(struct inode *inode, struct file *file)
{
	return xpmem_proc_open_common(inode, file, xpmem_proc_objs_show);
}

static const struct proc_ops xpmem_proc_tg_ops = {
	.proc_open	= xpmem_proc_tg_open,
	.proc_read	= seq_read,
	.proc_lseek	= seq_lseek,
	.proc_release	= single_release,
};

static const struct proc_ops xpmem_proc_objs_ops = {
	.proc_open	= xpmem_proc_objs_open,
	.proc_read	= seq_read,
	.proc_lseek	= seq_lseek,
	.proc_release	= single_release,
};

/* The entry of thread group @tgid; under xpmem_proc_lock. */
static struct xpmem_proc_tg *xpmem_proc_find(struct pid *tgid)
{
	struct xpmem_proc_tg *tg;

	list_for_each_entry(tg, &xpmem_proc_tgs, node)
		if (tg->tgid == tgid)
			return tg;
	return NULL;
}

/* Remove @tg and its files; its ctxs are listed nowhere then. */
static void xpmem_proc_remove(struct xpmem_proc_tg *tg)
{
	struct xpmem_ctx *ctx, *tmp;

	lockdep_assert_held(&xpmem_proc_lock);
	mutex_lock(&xpmem_proc_ctx_lock);
	list_for_each_entry_safe(ctx, tmp, &tg->ctxs, proc_node)
		list_del_init(&ctx->proc_node);
	mutex_unlock(&xpmem_proc_ctx_lock);
	list_del(&tg->node);
	/* waits for shows in progress */
	proc_remove(tg->objs);
	proc_remove(tg->pde);
	put_pid(tg->tgid);
	kfree(tg);
}

/**
 * xpmem_proc_open - the current thread group opened /dev/xpmem as @ctx
 * @ctx: the new context (ctx->tgid is current's)
 *
 * Creates /proc/xpmem/<tgid> and /proc/xpmem-objects/<tgid> on its thread
 * group's first open and lists @ctx in the latter.  They show the opener's
 * euid as their owner (as /proc/PID does) and are mode 0444: who may read
 * them is xpmem_proc_may_read()'s to decide, at each open and read.
 * Entries of thread groups that are gone are removed first, so the number
 * is free for this one.
 * Failing to create them is not an error of the open (the files are
 * informational).
 */
void xpmem_proc_open(struct xpmem_ctx *ctx)
{
	struct xpmem_proc_tg *tg, *tmp, *found = NULL;
	char name[16];

	INIT_LIST_HEAD(&ctx->proc_node);
	if (!xpmem_proc_dir)
		return;
	mutex_lock(&xpmem_proc_lock);
	list_for_each_entry_safe(tg, tmp, &xpmem_proc_tgs, node) {
		if (tg->tgid == ctx->tgid)
			found = tg;
		else if (!xpmem_proc_alive(tg->tgid))
			xpmem_proc_remove(tg);
	}
	tg = found;
	if (tg)
		goto add;
	tg = kzalloc(sizeof(*tg), GFP_KERNEL_ACCOUNT);
	if (!tg)
		goto unlock;
	INIT_LIST_HEAD(&tg->ctxs);
	snprintf(name, sizeof(name), "%d", pid_nr(ctx->tgid));
	tg->tgid = get_pid(ctx->tgid);
	tg->pde = proc_create_data(name, 0444, xpmem_proc_dir,
				   &xpmem_proc_tg_ops, tg);
	if (!tg->pde)
		goto free_tg;
	tg->objs = proc_create_data(name, 0444, xpmem_proc_objs_dir,
				    &xpmem_proc_objs_ops, tg);
	if (!tg->objs)
		goto remove_pde;
	proc_set_user(tg->pde, current_euid(), current_egid());
	proc_set_user(tg->objs, current_euid(), current_egid());
	list_add(&tg->node, &xpmem_proc_tgs);
add:
	mutex_lock(&xpmem_proc_ctx_lock);
	list_add_tail(&ctx->proc_node, &tg->ctxs);
	mutex_unlock(&xpmem_proc_ctx_lock);
	mutex_unlock(&xpmem_proc_lock);
	return;

remove_pde:
	proc_remove(tg->pde);
free_tg:
	put_pid(tg->tgid);
	kfree(tg);
unlock:
	mutex_unlock(&xpmem_proc_lock);
}

/* Take @ctx off its entry; the entry and its files go with its last ctx. */
static void xpmem_proc_unlist(struct xpmem_ctx *ctx)
{
	struct xpmem_proc_tg *tg;
	bool last;

	mutex_lock(&xpmem_proc_lock);
	if (list_empty(&ctx->proc_node))
		goto unlock;
	tg = xpmem_proc_find(ctx->tgid);
	if (WARN_ON_ONCE(!tg))
		goto unlock;
	mutex_lock(&xpmem_proc_ctx_lock);
	list_del_init(&ctx->proc_node);
	last = list_empty(&tg->ctxs);
	mutex_unlock(&xpmem_proc_ctx_lock);
	if (last)
		xpmem_proc_remove(tg);
unlock:
	mutex_unlock(&xpmem_proc_lock);
}

static int xpmem_proc_same_file(const void *p, struct file *file,
				unsigned int fd)
{
	return file == p;
}

/**
 * xpmem_proc_flush - a descriptor of the device file of @ctx was closed
 * @ctx: its context
 * @file: the file
 *
 * If the closer belongs to the thread group that opened @file and leaves
 * no other descriptor of it in its table (at exit the table is being torn
 * down and current->files is NULL), that thread group no longer holds it:
 * @ctx leaves the group's /proc files, even while another process holds
 * the file.  A close by any other process changes nothing.
 */
void xpmem_proc_flush(struct xpmem_ctx *ctx, struct file *file)
{
	if (task_tgid(current) != ctx->tgid)
		return;
	if (iterate_fd(current->files, 0, xpmem_proc_same_file, file))
		return;
	xpmem_proc_unlist(ctx);
}

/**
 * xpmem_proc_close - the device file of @ctx was released
 * @ctx: its context (the releaser may be another task than the opener)
 */
void xpmem_proc_close(struct xpmem_ctx *ctx)
{
	xpmem_proc_unlist(ctx);
}

int xpmem_proc_init(void)
{
	xpmem_proc_dir = proc_mkdir("xpmem", NULL);
	if (!xpmem_proc_dir)
		return -ENOMEM;
	if (!proc_create_single("global_pages", 0444, xpmem_proc_dir,
				xpmem_proc_global_show))
		goto remove_dir;
	xpmem_proc_objs_dir = proc_mkdir("xpmem-objects", NULL);
	if (!xpmem_proc_objs_dir)
		goto remove_dir;
	return 0;

remove_dir:
	proc_remove(xpmem_proc_dir);
	xpmem_proc_dir = NULL;
	return -ENOMEM;
}

void xpmem_proc_exit(void)
{
	/* every device file is closed: no <tgid> entries are left */
	proc_remove(xpmem_proc_objs_dir);
	proc_remove(xpmem_proc_dir);
}
