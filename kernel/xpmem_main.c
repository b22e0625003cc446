// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_main.c - every user entry point of xpmem.ko: the /dev/xpmem misc
 * device (open, flush, release), its ioctls and its io_uring commands
 *
 * The classic commands are _IO('x', 0..8) with their historical argument
 * layouts, the extension commands _IOWR('x', 0x20 + n, struct) with
 * fixed-width ones (include/xpmem_uapi.h).  Each command copies its
 * argument in, checks it (one xpmem_main_check_*() per extension command,
 * shared by the ioctl and the io_uring paths), calls one function of the
 * core and copies the result out; a result that cannot be copied out is
 * undone so nothing is left behind that the caller cannot name.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "xpmem_internal.h"
#include "compat.h"

static int xpmem_main_open(struct inode *inode, struct file *file)
{
	struct xpmem_ctx *ctx;
	int ret;

	if (!current->mm)
		return -EINVAL;
	ctx = xpmem_ctx_alloc();
	if (!ctx)
		return -ENOMEM;
	ret = xpmem_attach_fs_pin();
	if (ret) {
		xpmem_ctx_put(ctx);
		return ret;
	}
	file->private_data = ctx;
	/* reads of events honour RWF_NOWAIT (xpmem_main_read_iter()) */
	file->f_mode |= FMODE_NOWAIT;
	xpmem_proc_open(ctx);
	return 0;
}

/*
 * The ctx's segments end: revoked, then their getters are told why
 * (XPMEM_EXT_EVENT_*).
 */
static void xpmem_main_end_segs(struct xpmem_ctx *ctx, u32 reason)
{
	struct xpmem_seg *seg;

	while ((seg = xpmem_seg_unlink_any(ctx))) {
		xpmem_detach_seg_end(seg);
		xpmem_event_seg_end(seg, reason);
		xpmem_seg_put(seg);
	}
}

/*
 * Every close of a descriptor: the opener's thread group may stop holding
 * the file (its /proc files, xpmem_proc.c).  If the group is exiting,
 * its segments end now, also while another process (a fork child, a
 * receiver of the descriptor) keeps the file open: nobody can use them
 * any more, and their getters learn of it at once.
 */
static int xpmem_main_flush(struct file *file, fl_owner_t id)
{
	struct xpmem_ctx *ctx = file->private_data;

	xpmem_proc_flush(ctx, file);
	if (xpmem_event_group_exited(ctx))
		xpmem_main_end_segs(ctx, XPMEM_EXT_EVENT_OWNER_EXITED);
	return 0;
}

/* Last close: the ctx's segments are removed and its permits released. */
static int xpmem_main_release(struct inode *inode, struct file *file)
{
	struct xpmem_ctx *ctx = file->private_data;
	u32 reason = xpmem_event_close_reason(ctx);
	struct xpmem_permit *permit;

	while ((permit = xpmem_permit_unlink_any(ctx))) {
		xpmem_detach_permit_end(permit, false);
		xpmem_permit_put(permit);
	}
	xpmem_main_end_segs(ctx, reason);
	xpmem_proc_close(ctx);
	if (ctx->owner_ref)
		xpmem_seg_owner_ref_put(ctx->owner_ref);
	ctx->owner_ref = NULL;
	xpmem_ctx_put(ctx);	/* attachments may keep it a while */
	xpmem_mirror_ends_now();	/* theirs, released before this close */
	xpmem_attach_fs_unpin();
	return 0;
}

/* REMOVE: the segment and every attachment of it end. */
static int xpmem_main_remove(struct xpmem_ctx *ctx, xpmem_segid_t segid)
{
	struct xpmem_seg *seg = xpmem_seg_unlink(ctx, segid);

	if (IS_ERR(seg))
		return PTR_ERR(seg);
	xpmem_detach_seg_end(seg);
	xpmem_event_seg_end(seg, XPMEM_EXT_EVENT_REMOVED);
	xpmem_seg_put(seg);
	return 0;
}

/* RELEASE: the permit ends; the caller's attachments through it go. */
static int xpmem_main_release_permit(struct xpmem_ctx *ctx, xpmem_apid_t apid)
{
	struct xpmem_permit *permit = xpmem_permit_unlink(ctx, apid);

	if (IS_ERR(permit))
		return PTR_ERR(permit);
	xpmem_detach_permit_end(permit, true);
	xpmem_permit_put(permit);
	return 0;
}

/*
 * A segment was made: the first MAKE of an open file registers the
 * owner's notifiers (xpmem_owner_prepare(), which says what it
 * waits for), held until the file's release, so that ATTACHes of its
 * segments register nothing.  The release drops that hold without
 * waiting, so no exit or close waits on it.
 */
static void xpmem_main_made(struct xpmem_ctx *ctx, xpmem_segid_t segid)
{
	struct xpmem_owner_ref *r;
	struct xpmem_seg *seg;

	if (READ_ONCE(ctx->owner_ref))
		return;
	seg = xpmem_seg_lookup(segid);
	if (!seg)
		return;		/* removed meanwhile by another thread */
	r = xpmem_owner_prepare(seg);
	xpmem_seg_put(seg);
	if (r && cmpxchg(&ctx->owner_ref, NULL, r))
		xpmem_seg_owner_ref_put(r);	/* another thread was first */
}

static long xpmem_main_ioctl_make(struct xpmem_ctx *ctx, void __user *uarg)
{
	struct xpmem_cmd_make cmd;
	int ret;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	ret = xpmem_seg_cmd_make(ctx, &cmd);
	if (ret)
		return ret;
	xpmem_main_made(ctx, cmd.segid);
	if (put_user(cmd.segid,
		     &((struct xpmem_cmd_make __user *)uarg)->segid)) {
		xpmem_main_remove(ctx, cmd.segid);
		return -EFAULT;
	}
	return 0;
}

static long xpmem_main_ioctl_remove(struct xpmem_ctx *ctx, void __user *uarg)
{
	struct xpmem_cmd_remove cmd;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	return xpmem_main_remove(ctx, cmd.segid);
}

static long xpmem_main_ioctl_get(struct xpmem_ctx *ctx, void __user *uarg)
{
	struct xpmem_cmd_get cmd;
	int ret;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	ret = xpmem_permit_cmd_get(ctx, &cmd);
	if (ret)
		return ret;
	if (put_user(cmd.apid, &((struct xpmem_cmd_get __user *)uarg)->apid)) {
		xpmem_main_release_permit(ctx, cmd.apid);
		return -EFAULT;
	}
	return 0;
}

static long xpmem_main_ioctl_release(struct xpmem_ctx *ctx, void __user *uarg)
{
	struct xpmem_cmd_release cmd;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	return xpmem_main_release_permit(ctx, cmd.apid);
}

/*
 * ATTACH's result, the new address, goes to @out; the place is written
 * (with what it holds) before the attachment is made, so a result that
 * cannot be copied out (a read-only page, a copy-on-write page for which
 * no memory is left) is found before anything is mapped, and a FIXED
 * attachment never replaces a mapping only to fail.  If the copy-out still
 * fails (another thread made the page unwritable meanwhile), the new
 * attachment is unmapped again: a failed ATTACH leaves nothing attached.
 */
static int xpmem_main_attach_prepare_out(__u64 __user *out)
{
	__u64 v;

	return get_user(v, out) || put_user(v, out) ? -EFAULT : 0;
}

static int xpmem_main_attach_copy_out(struct xpmem_att *att, __u64 vaddr,
				      __u64 __user *out)
{
	int ret = put_user(vaddr, out) ? -EFAULT : 0;

	if (ret)
		xpmem_detach_undo(att);
	xpmem_end_put(att);
	return ret;
}

static long xpmem_main_ioctl_attach(struct xpmem_ctx *ctx, void __user *uarg)
{
	struct xpmem_cmd_attach __user *ucmd = uarg;
	struct xpmem_cmd_attach cmd;
	struct xpmem_att *att;
	int ret;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	ret = xpmem_main_attach_prepare_out(&ucmd->vaddr) ?:
	      xpmem_attach_cmd(ctx, &cmd, &att);
	if (ret)
		return ret;
	return xpmem_main_attach_copy_out(att, cmd.vaddr, &ucmd->vaddr);
}

static long xpmem_main_ioctl_detach(struct xpmem_ctx *ctx, void __user *uarg)
{
	struct xpmem_cmd_detach cmd;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	return xpmem_detach_cmd(ctx, cmd.vaddr);
}

static bool xpmem_main_zeroed(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

/* ---- Checks of the extension commands' arguments ------------------------ */

/*
 * A key field: given (@set) exactly when 1 <= @len <= @max, and every
 * byte of @buf past @len zero.
 */
static bool xpmem_main_key_field_ok(bool set, u32 len, const u8 *buf, u32 max)
{
	if (!set)
		return !len && xpmem_main_zeroed(buf, max);
	return len && len <= max && xpmem_main_zeroed(buf + len, max - len);
}

static int xpmem_main_check_query(const struct xpmem_ext_query *q)
{
	if (q->flags || q->reserved0 ||
	    !xpmem_main_zeroed(q->reserved, sizeof(q->reserved)))
		return -EINVAL;
	return 0;
}

static int xpmem_main_check_make(const struct xpmem_ext_make *cmd)
{
	if ((cmd->flags & ~XPMEM_EXT_MAKE_FLAGS) ||
	    /* crossing IPC namespaces takes a secret, not just a segid */
	    ((cmd->flags & XPMEM_EXT_MAKE_ANY_NS) &&
	     !(cmd->flags & XPMEM_EXT_MAKE_AUTH)) ||
	    !xpmem_main_zeroed(cmd->reserved, sizeof(cmd->reserved)) ||
	    !xpmem_main_key_field_ok(cmd->flags & XPMEM_EXT_MAKE_KEY,
				     cmd->key_len,
				cmd->key, sizeof(cmd->key)) ||
	    !xpmem_main_key_field_ok(cmd->flags & XPMEM_EXT_MAKE_AUTH,
				cmd->auth_len, cmd->auth, sizeof(cmd->auth)))
		return -EINVAL;
	return 0;
}

static int xpmem_main_check_get(const struct xpmem_ext_get *cmd)
{
	int access = cmd->flags & (XPMEM_RDONLY | XPMEM_RDWR);

	if ((cmd->flags & ~XPMEM_EXT_GET_FLAGS) ||
	    (access != XPMEM_RDONLY && access != XPMEM_RDWR) ||
	    cmd->reserved0 ||
	    !xpmem_main_zeroed(cmd->reserved, sizeof(cmd->reserved)) ||
	    !xpmem_main_key_field_ok(cmd->flags & XPMEM_EXT_GET_BY_KEY,
				cmd->key_len, cmd->key, sizeof(cmd->key)) ||
	    !xpmem_main_key_field_ok(cmd->flags & XPMEM_EXT_GET_AUTH,
				cmd->auth_len, cmd->auth, sizeof(cmd->auth)))
		return -EINVAL;
	/* by key or by segid, not both */
	if ((cmd->flags & XPMEM_EXT_GET_BY_KEY) ? cmd->segid : cmd->segid <= 0)
		return -EINVAL;
	return 0;
}

/* (xpmem_attach_create() checks the flags, the offset and the size) */
static int xpmem_main_check_attach(const struct xpmem_ext_attach *cmd)
{
	if (cmd->reserved0 ||
	    !xpmem_main_zeroed(cmd->reserved, sizeof(cmd->reserved)) ||
	    cmd->vaddr > TASK_SIZE)
		return -EINVAL;
	return 0;
}

/* (xpmem_copy() checks the range against the segment) */
static int xpmem_main_check_copy(const struct xpmem_ext_copy *cmd)
{
	if ((cmd->flags & ~XPMEM_EXT_COPY_FLAGS) || cmd->reserved0 ||
	    !xpmem_main_zeroed(cmd->reserved, sizeof(cmd->reserved)) ||
	    cmd->apid <= 0)
		return -EINVAL;
	return 0;
}

static int xpmem_main_check_populate(const struct xpmem_ext_populate *cmd)
{
	if ((cmd->flags & ~XPMEM_EXT_POPULATE_FLAGS) || cmd->reserved0 ||
	    !xpmem_main_zeroed(cmd->reserved, sizeof(cmd->reserved)))
		return -EINVAL;
	return 0;
}

/* ---- Extension commands, once their argument is in and checked ---------- */

/* Extension commands this module serves (xpmem_ext_query.commands). */
#define XPMEM_EXT_COMMANDS	(XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_QUERY) | \
				 XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_ATTACH) | \
				 XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_MAKE) | \
				 XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_GET) | \
				 XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_COPY) | \
				 XPMEM_EXT_CMD_BIT(XPMEM_CMD_EXT_POPULATE))

static void xpmem_main_query(struct xpmem_ext_query *q)
{
	memset(q, 0, sizeof(*q));
	q->abi_version = XPMEM_EXT_ABI_VERSION;
	q->module_version = XPMEM_VERSION_CODE;
	q->fault_window_pages = xpmem_fault_window_pages();
	q->features = XPMEM_EXT_KF_ATTACH | XPMEM_EXT_KF_KEYS |
		      XPMEM_EXT_KF_COPY | XPMEM_EXT_KF_MAKE_IOV |
		      XPMEM_EXT_KF_ANY_NS | XPMEM_EXT_KF_ZERO_REVOKED |
		      XPMEM_EXT_KF_EVENTS |
		      (xpmem_seg_host_ids_enabled() ? XPMEM_EXT_KF_HOST_IDS : 0) |
		      (XPMEM_URING_CMDS ? XPMEM_EXT_KF_URING : 0) |
		      (XPMEM_URING_FIXED ? XPMEM_EXT_KF_URING_FIXED : 0) |
		      (xpmem_fault_huge_enabled() ? XPMEM_EXT_KF_HUGE_PMD : 0);
	q->commands = XPMEM_EXT_COMMANDS;
	q->max_segments = READ_ONCE(xpmem_max_segments);
	q->max_permits = READ_ONCE(xpmem_max_permits);
	q->max_attachments = READ_ONCE(xpmem_max_attachments);
}

/*
 * EXT_MAKE's buffers: the one (vaddr, size) in *@one, or with IOV an
 * array of @cmd->size read from @cmd->vaddr into *@alloc.
 */
static int xpmem_main_make_iov(const struct xpmem_ext_make *cmd,
			       struct xpmem_ext_iov *one,
			       struct xpmem_ext_iov **alloc)
{
	u64 nr = cmd->size;

	*alloc = NULL;
	if (!(cmd->flags & XPMEM_EXT_MAKE_IOV)) {
		one->base = cmd->vaddr;
		one->len = cmd->size;
		return 0;
	}
	if (!nr || nr > XPMEM_EXT_MAKE_IOV_MAX)
		return -EINVAL;
	*alloc = memdup_user(u64_to_user_ptr(cmd->vaddr),
			     nr * sizeof(**alloc));
	if (IS_ERR(*alloc)) {
		int ret = PTR_ERR(*alloc);

		*alloc = NULL;
		return ret;
	}
	return 0;
}

static int xpmem_main_ext_make(struct xpmem_ctx *ctx,
			       const struct xpmem_ext_make *cmd,
			       xpmem_segid_t *segid)
{
	struct xpmem_seg_opts opts = {
		.rdonly = cmd->flags & XPMEM_EXT_MAKE_RDONLY,
		.any_ns = cmd->flags & XPMEM_EXT_MAKE_ANY_NS,
	};
	struct xpmem_ext_iov one, *iov;
	int ret;

	ret = xpmem_main_make_iov(cmd, &one, &iov);
	if (ret)
		return ret;
	if (cmd->flags & XPMEM_EXT_MAKE_KEY) {
		opts.key = cmd->key;
		opts.key_len = cmd->key_len;
	}
	if (cmd->flags & XPMEM_EXT_MAKE_AUTH) {
		opts.auth = cmd->auth;
		opts.auth_len = cmd->auth_len;
	}
	ret = xpmem_seg_make(ctx, iov ? iov : &one, iov ? cmd->size : 1,
			     cmd->mode, &opts, segid);
	kfree(iov);
	if (!ret)
		xpmem_main_made(ctx, *segid);
	return ret;
}

static int xpmem_main_ext_get(struct xpmem_ctx *ctx,
			      const struct xpmem_ext_get *cmd,
			      xpmem_segid_t *segid, xpmem_apid_t *apid)
{
	struct xpmem_seg_opts opts = {};
	struct xpmem_seg *seg;

	if (cmd->flags & XPMEM_EXT_GET_BY_KEY)
		seg = xpmem_seg_lookup_key(cmd->key, cmd->key_len);
	else
		seg = xpmem_seg_lookup(cmd->segid);
	if (!seg)
		return -ENOENT;
	*segid = seg->id.id;
	if (cmd->flags & XPMEM_EXT_GET_AUTH) {
		opts.auth = cmd->auth;
		opts.auth_len = cmd->auth_len;
	}
	return xpmem_permit_create(ctx, seg,
				   cmd->flags & (XPMEM_RDONLY | XPMEM_RDWR),
			 &opts, apid);
}

/* ---- ioctl: extension commands ------------------------------------------ */

static long xpmem_main_ioctl_ext_query(void __user *uarg)
{
	struct xpmem_ext_query q;

	if (copy_from_user(&q, uarg, sizeof(q)))
		return -EFAULT;
	if (xpmem_main_check_query(&q))
		return -EINVAL;
	xpmem_main_query(&q);
	if (copy_to_user(uarg, &q, sizeof(q)))
		return -EFAULT;
	return 0;
}

static long xpmem_main_ioctl_ext_make(struct xpmem_ctx *ctx, void __user *uarg)
{
	struct xpmem_ext_make cmd;
	xpmem_segid_t segid;
	int ret;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	ret = xpmem_main_check_make(&cmd);
	if (!ret)
		ret = xpmem_main_ext_make(ctx, &cmd, &segid);
	if (!ret &&
	    put_user(segid, &((struct xpmem_ext_make __user *)uarg)->segid)) {
		xpmem_main_remove(ctx, segid);
		ret = -EFAULT;
	}
	memzero_explicit(&cmd, sizeof(cmd));	/* the authorization key */
	return ret;
}

static long xpmem_main_ioctl_ext_get(struct xpmem_ctx *ctx, void __user *uarg)
{
	struct xpmem_ext_get __user *ucmd = uarg;
	struct xpmem_ext_get cmd;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	int ret;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	ret = xpmem_main_check_get(&cmd);
	if (!ret)
		ret = xpmem_main_ext_get(ctx, &cmd, &segid, &apid);
	if (!ret &&
	    (put_user(apid, &ucmd->apid) || put_user(segid, &ucmd->segid))) {
		xpmem_main_release_permit(ctx, apid);
		ret = -EFAULT;
	}
	memzero_explicit(&cmd, sizeof(cmd));	/* the authorization key */
	return ret;
}

static long xpmem_main_ioctl_ext_attach(struct xpmem_ctx *ctx,
					void __user *uarg)
{
	struct xpmem_ext_attach __user *ucmd = uarg;
	struct xpmem_ext_attach cmd;
	unsigned long vaddr;
	struct xpmem_att *att;
	int ret;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	ret = xpmem_main_check_attach(&cmd);
	if (ret)
		return ret;
	vaddr = cmd.vaddr;
	ret = xpmem_main_attach_prepare_out(&ucmd->vaddr) ?:
	      xpmem_attach_create(ctx, cmd.apid, cmd.offset, cmd.size, &vaddr,
				  cmd.flags, &att);
	if (ret)
		return ret;
	return xpmem_main_attach_copy_out(att, vaddr, &ucmd->vaddr);
}

static long xpmem_main_ioctl_ext_copy(struct xpmem_ctx *ctx, void __user *uarg)
{
	struct xpmem_ext_copy cmd;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	return xpmem_main_check_copy(&cmd) ?:
	       xpmem_copy(ctx, &cmd, false, NULL, 0);
}

static long xpmem_main_ioctl_ext_populate(void __user *uarg)
{
	struct xpmem_ext_populate cmd;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	return xpmem_main_check_populate(&cmd) ?:
	       xpmem_populate_range(cmd.vaddr, cmd.len,
				    cmd.flags & XPMEM_EXT_POPULATE_WRITE);
}

/* ---- ioctl -------------------------------------------------------------- */

static long xpmem_main_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	struct xpmem_ctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;

	if (cmd == XPMEM_CMD_VERSION)
		return XPMEM_VERSION_CODE;
	if (cmd == XPMEM_CMD_EXT_QUERY)
		return xpmem_main_ioctl_ext_query(uarg);
	/* Classic convention: a process that did not open the device. */
	if (ctx->mm != current->mm)
		return -XPMEM_ERRNO_NOPROC;

	switch (cmd) {
	case XPMEM_CMD_MAKE:
		return xpmem_main_ioctl_make(ctx, uarg);
	case XPMEM_CMD_REMOVE:
		return xpmem_main_ioctl_remove(ctx, uarg);
	case XPMEM_CMD_GET:
		return xpmem_main_ioctl_get(ctx, uarg);
	case XPMEM_CMD_RELEASE:
		return xpmem_main_ioctl_release(ctx, uarg);
	case XPMEM_CMD_ATTACH:
		return xpmem_main_ioctl_attach(ctx, uarg);
	case XPMEM_CMD_DETACH:
		return xpmem_main_ioctl_detach(ctx, uarg);
	case XPMEM_CMD_EXT_ATTACH:
		return xpmem_main_ioctl_ext_attach(ctx, uarg);
	case XPMEM_CMD_EXT_MAKE:
		return xpmem_main_ioctl_ext_make(ctx, uarg);
	case XPMEM_CMD_EXT_GET:
		return xpmem_main_ioctl_ext_get(ctx, uarg);
	case XPMEM_CMD_EXT_COPY:
		return xpmem_main_ioctl_ext_copy(ctx, uarg);
	case XPMEM_CMD_EXT_POPULATE:
		return xpmem_main_ioctl_ext_populate(uarg);
	case XPMEM_CMD_FORK_BEGIN:
	case XPMEM_CMD_FORK_END:
		/* Nothing is pinned, so fork needs no preparation. */
		return 0;
	default:
		return -ENOTTY;
	}
}

/* ---- io_uring commands -------------------------------------------------- */

/* (compiled where the kernel has file_operations.uring_cmd: compat.h) */
#ifdef XPMEM_HAVE_URING_CMD

/*
 * The argument of an io_uring command: its struct xpmem_ext_uring_cmd,
 * then the struct it points to.
 */
static int xpmem_main_uring_arg(struct io_uring_cmd *ioucmd, void *arg,
				size_t size)
{
	const struct xpmem_ext_uring_cmd *uc = xpmem_uring_cmd_area(ioucmd);
	u64 uarg = READ_ONCE(uc->arg);

	if (READ_ONCE(uc->reserved))
		return -EINVAL;
	if (copy_from_user(arg, u64_to_user_ptr(uarg), size))
		return -EFAULT;
	return 0;
}

static int xpmem_main_uring_copy(struct xpmem_ctx *ctx,
				 struct io_uring_cmd *ioucmd,
				 unsigned int issue_flags)
{
	bool fixed = xpmem_uring_cmd_fixed(ioucmd);
	struct xpmem_ext_copy cmd;
	ssize_t ret;

	ret = xpmem_main_uring_arg(ioucmd, &cmd, sizeof(cmd)) ?:
	      xpmem_main_check_copy(&cmd) ?:
	      xpmem_copy(ctx, &cmd, issue_flags & IO_URING_F_NONBLOCK,
			 fixed ? ioucmd : NULL, fixed ? issue_flags : 0);
	return xpmem_uring_result(ioucmd, ret, issue_flags);
}

static int xpmem_main_uring_populate(struct io_uring_cmd *ioucmd,
				     unsigned int issue_flags)
{
	struct xpmem_ext_populate cmd;

	/* faults take locks and wait: a worker's job */
	if (issue_flags & IO_URING_F_NONBLOCK)
		return -EAGAIN;
	return xpmem_main_uring_arg(ioucmd, &cmd, sizeof(cmd)) ?:
	       xpmem_main_check_populate(&cmd) ?:
	       xpmem_populate_range(cmd.vaddr, cmd.len,
				    cmd.flags & XPMEM_EXT_POPULATE_WRITE);
}

/*
 * file_operations.uring_cmd: cmd_op is the ioctl number.  Runs in the
 * submitting process (inline, or in one of its io_uring workers, which
 * share its mm), so the rules of the ioctls apply as they are: another
 * process's device file is -XPMEM_ERRNO_NOPROC.  The inline issue
 * (IO_URING_F_NONBLOCK) waits for nothing: a copy that would wait for the
 * owner's mmap_lock, and every POPULATE, go to a worker.  There a copy
 * waits killably for the owner's mmap_lock and moves each batch inside a
 * revocation section (xpmem_copy.c), so REMOVE and RELEASE stop it; a
 * POPULATE faults as the attacher would.  Never called with a core mm
 * lock held.
 *
 * Return: what the ioctl would return, -EAGAIN to be issued again from
 * a worker (io_uring then copies the command area, which holds only the
 * argument's address), or -EIOCBQUEUED for a result posted already
 * (xpmem_uring_result()).
 */
static int xpmem_main_uring_cmd(struct io_uring_cmd *ioucmd,
				unsigned int issue_flags)
{
	struct xpmem_ctx *ctx = ioucmd->file->private_data;

	if (ctx->mm != current->mm)
		return -XPMEM_ERRNO_NOPROC;
	switch (ioucmd->cmd_op) {
	case XPMEM_CMD_EXT_COPY:
		return xpmem_main_uring_copy(ctx, ioucmd, issue_flags);
	case XPMEM_CMD_EXT_POPULATE:
		return xpmem_main_uring_populate(ioucmd, issue_flags);
	default:
		return -ENOTTY;
	}
}
#endif /* XPMEM_HAVE_URING_CMD */

/* ---- events: read and poll ---------------------------------------------- */

/*
 * read(2): struct xpmem_ext_event records of the reader's permits
 * (include/xpmem_uapi.h; xpmem_event_read()).  The file position is
 * ignored.  Waits only for events and another reader, interruptibly.
 */
static ssize_t xpmem_main_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *file = iocb->ki_filp;
	struct xpmem_ctx *ctx = file->private_data;

	if (ctx->mm != current->mm)
		return -XPMEM_ERRNO_NOPROC;
	return xpmem_event_read(ctx, to, (iocb->ki_flags & IOCB_NOWAIT) ||
				(file->f_flags & O_NONBLOCK));
}

/* poll(2), epoll, io_uring's POLL_ADD: readable while events are queued. */
static __poll_t xpmem_main_poll(struct file *file, poll_table *wait)
{
	struct xpmem_ctx *ctx = file->private_data;

	poll_wait(file, &ctx->ev_wait, wait);
	return xpmem_event_pending(ctx) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations xpmem_main_fops = {
	.owner = THIS_MODULE,
	.open = xpmem_main_open,
	.flush = xpmem_main_flush,
	.release = xpmem_main_release,
	.read_iter = xpmem_main_read_iter,
	.poll = xpmem_main_poll,
	.unlocked_ioctl = xpmem_main_ioctl,
#ifdef XPMEM_HAVE_URING_CMD
	.uring_cmd = xpmem_main_uring_cmd,
#endif
	.llseek = noop_llseek,
};

static struct miscdevice xpmem_main_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "xpmem",
	.fops = &xpmem_main_fops,
	.mode = 0666,
	.groups = xpmem_attr_groups,
};

static int __init xpmem_main_init(void)
{
	int ret;

	ret = xpmem_ctx_init();
	if (ret)
		return ret;
	ret = xpmem_seg_init();
	if (ret)
		goto exit_ctx;
	ret = xpmem_permit_init();
	if (ret)
		goto exit_seg;
	ret = xpmem_mirror_init();
	if (ret)
		goto exit_permit;
	ret = xpmem_map_init();
	if (ret)
		goto exit_mirror;
	ret = xpmem_zero_init();
	if (ret)
		goto exit_map;
	ret = xpmem_proc_init();
	if (ret)
		goto exit_zero;
	ret = misc_register(&xpmem_main_dev);
	if (ret)
		goto exit_proc;
	return 0;

exit_proc:
	xpmem_proc_exit();
exit_zero:
	xpmem_zero_exit();
exit_map:
	xpmem_map_exit();
exit_mirror:
	xpmem_mirror_exit();
exit_permit:
	xpmem_permit_exit();
exit_seg:
	xpmem_seg_exit();
exit_ctx:
	xpmem_ctx_exit();
	return ret;
}

static void __exit xpmem_main_exit(void)
{
	misc_deregister(&xpmem_main_dev);
	xpmem_proc_exit();
	xpmem_zero_exit();
	xpmem_map_exit();
	xpmem_mirror_exit();
	xpmem_permit_exit();
	xpmem_seg_exit();
	xpmem_ctx_exit();
}

module_init(xpmem_main_init);
module_exit(xpmem_main_exit);

MODULE_DESCRIPTION("Cross-process memory attach (XPMEM) mirroring the owner's page tables");
MODULE_LICENSE("GPL");
MODULE_VERSION(XPMEM_MODULE_VERSION);
