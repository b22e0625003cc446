/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xpmem_internal.h - objects, lock order and internal interfaces of xpmem.ko
 *
 * Objects
 * -------
 * struct xpmem_ctx     one per open of /dev/xpmem.  Bound to the mm of the
 *                      process that opened it; an ioctl from any other mm
 *                      gets -XPMEM_ERRNO_NOPROC (the classic convention that
 *                      makes a child after fork() reopen the device).
 * struct xpmem_seg     an exported range [vaddr, vaddr + size) of the owner's
 *                      mm.  Mirrors the owner's page tables through an
 *                      mmu_interval_notifier; owns an anonymous inode whose
 *                      address_space all attachments of the segment map, so
 *                      invalidation is unmap_mapping_range() on it.
 * struct xpmem_permit  the right of one process to attach one segment (apid).
 * struct xpmem_att     one attachment: the VMA(s) of a pseudo file created by
 *                      ATTACH.  Lives as long as that file (i.e. as long as
 *                      any VMA maps it).
 *
 * References
 * ----------
 * seg:    the id table while published, the owner ctx's list until REMOVE,
 *         each permit, each attachment.
 * permit: the id table while published, the getter ctx's list until
 *         RELEASE, each attachment.
 * att:    its pseudo file (file->private_data); freed from f_op->release.
 * The pseudo file also pins the module (try_module_get), so rmmod waits for
 * every attachment to be unmapped.
 *
 * Lock order (outermost first)
 * ----------------------------
 *   attacher mmap_lock           page fault; ATTACH (vm_mmap) and DETACH
 *     owner mmap_lock            fault only, and only by trylock (or after
 *                                dropping the attacher's lock and
 *                                returning VM_FAULT_RETRY); released
 *                                before seg->lock is taken
 *     seg->lock                  the notifier lock; PTE insertion runs
 *                                under it
 *       page table lock
 *   xpmem_obj_lock               ctx lists, seg->ctx, permit->ctx
 *   seg->lock
 *     permit->lock               attachment list (also taken alone, under
 *                                an attacher's mmap_lock)
 *   seg->att_lock                the segment's attachment list; leaf
 *   xpmem_id_lock                id tables; leaf spinlock
 *
 * The invalidate callback (owner mmap_lock or reclaim context) takes
 * seg->lock only to advance the sequence number; it has a worker zap the
 * attachments after dropping it and waits (xpmem_seg.c), so zaps never
 * nest seg->locks or mmu notifier sections.
 * Nothing allocates memory while holding seg->lock: the fault path makes
 * sure the page table page exists before taking it.
 */
#ifndef _XPMEM_INTERNAL_H
#define _XPMEM_INTERNAL_H

#include <linux/types.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/mmu_notifier.h>
#include <linux/atomic.h>
#include <linux/uidgid.h>

#include "xpmem_uapi.h"

/* Version reported by XPMEM_CMD_VERSION: major 3, minor 1 (classic layout). */
#define XPMEM_VERSION_CODE	0x00030001

struct xpmem_id {
	struct hlist_node node;
	u64 id;
};

struct xpmem_ctx {
	struct mm_struct *mm;		/* mmgrab()ed opener mm */
	struct list_head segs;		/* xpmem_seg.ctx_node */
	struct list_head permits;	/* xpmem_permit.ctx_node */
};

extern struct mutex xpmem_obj_lock;

struct xpmem_seg {
	struct kref ref;
	struct xpmem_id id;
	struct xpmem_ctx *ctx;		/* owner ctx; NULL once removed */
	struct list_head ctx_node;
	struct mm_struct *mm;		/* mmgrab()ed owner mm */
	unsigned long vaddr;		/* owner start address */
	unsigned long size;		/* bytes, page multiple */
	kuid_t uid;
	kgid_t gid;
	umode_t mode;			/* 0777-style permit mode */
	struct user_namespace *user_ns;	/* for CAP_IPC_OWNER */
	const void *ipc_ns;		/* identity only, never dereferenced */
	struct inode *inode;		/* address_space of the attachments */
	struct mmu_interval_notifier notifier;
	bool notifier_live;
	struct mutex lock;		/* the notifier lock */
	bool removed;			/* under lock: no new PTEs */
	spinlock_t att_lock;		/* protects atts */
	struct list_head atts;		/* xpmem_att.seg_node, all permits */
};

struct xpmem_permit {
	struct kref ref;
	struct xpmem_id id;
	struct xpmem_seg *seg;		/* referenced */
	struct xpmem_ctx *ctx;		/* getter ctx; NULL once released */
	struct list_head ctx_node;
	struct mm_struct *mm;		/* getter mm (identity only) */
	bool writable;
	spinlock_t lock;		/* protects atts and released */
	struct list_head atts;		/* xpmem_att.permit_node */
	bool released;
};

struct xpmem_att {
	struct xpmem_permit *permit;	/* referenced */
	struct xpmem_seg *seg;		/* referenced */
	struct list_head permit_node;
	struct list_head seg_node;
	struct mm_struct *mm;		/* attacher mm (identity only) */
	unsigned long offset;		/* segment offset at attach time */
	unsigned long size;
	bool writable;
	atomic_t nr_vmas;		/* VMAs mapping it (split, mremap) */
	bool dead;			/* under seg->lock: SIGBUS on fault */
};

/* counters (xpmem_stats.c) */
struct xpmem_stats {
	atomic_long_t segments;
	atomic_long_t permits;
	atomic_long_t attachments;
	atomic_long_t faults;
	atomic_long_t fault_retries;
	atomic_long_t pages_mapped;
	atomic_long_t invalidations;
};

extern struct xpmem_stats xpmem_stats;
extern const struct attribute_group *xpmem_attr_groups[];

/* xpmem_id.c */
int xpmem_id_publish(struct xpmem_id *id, bool is_seg);
void xpmem_id_unpublish(struct xpmem_id *id);
struct xpmem_seg *xpmem_seg_lookup(u64 segid);
struct xpmem_permit *xpmem_permit_lookup(u64 apid);

/* xpmem_seg.c */
int xpmem_seg_init(void);
void xpmem_seg_exit(void);
int xpmem_cmd_make(struct xpmem_ctx *ctx, struct xpmem_cmd_make *cmd);
int xpmem_cmd_remove(struct xpmem_ctx *ctx, xpmem_segid_t segid);
void xpmem_seg_remove(struct xpmem_seg *seg);
void xpmem_seg_get(struct xpmem_seg *seg);
void xpmem_seg_put(struct xpmem_seg *seg);

/* xpmem_permit.c */
int xpmem_cmd_get(struct xpmem_ctx *ctx, struct xpmem_cmd_get *cmd);
int xpmem_cmd_release(struct xpmem_ctx *ctx, xpmem_apid_t apid);
void xpmem_permit_release(struct xpmem_permit *permit, bool unmap);
void xpmem_permit_get(struct xpmem_permit *permit);
void xpmem_permit_put(struct xpmem_permit *permit);

/* xpmem_attach.c */
int xpmem_fs_init(void);
void xpmem_fs_exit(void);
struct inode *xpmem_seg_inode_alloc(void);
int xpmem_cmd_attach(struct xpmem_ctx *ctx, struct xpmem_cmd_attach *cmd);
int xpmem_cmd_detach(struct xpmem_ctx *ctx, unsigned long vaddr);
void xpmem_att_unmap_all(struct xpmem_permit *permit);
void xpmem_att_kill_all(struct xpmem_permit *permit);
void xpmem_seg_zap(struct xpmem_seg *seg, unsigned long offset,
		   unsigned long len);
void xpmem_seg_add_att(struct xpmem_seg *seg, struct xpmem_att *att);
void xpmem_seg_del_att(struct xpmem_seg *seg, struct xpmem_att *att);

#endif /* _XPMEM_INTERNAL_H */
