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
 *                      Charges its objects to its user.
 * struct xpmem_user    one per user (real uid of the opener) with a
 *                      context: the counts the module's limits apply to.
 * struct xpmem_seg     exported ranges of the owner's mm, one after the
 *                      other in segment offsets (one range, or several
 *                      with EXT_MAKE's IOV).  Holds identity and
 *                      permissions only; it mirrors nothing itself.
 * struct xpmem_permit  the right of one process to attach one segment (apid).
 * struct xpmem_att     one attachment: the VMA(s) ATTACH maps of its ctx's
 *                      pseudo file, at file offsets of its own.  Mirrors
 *                      the owner's ranges it maps through its own
 *                      mmu_interval_notifiers (struct xpmem_mirror, one
 *                      per segment range it covers, all under the one
 *                      att->lock); invalidating it is
 *                      unmap_mapping_range() over its own file offsets,
 *                      which touches no other attachment.  Lives as long
 *                      as any VMA maps it or anyone holds it
 *                      (xpmem_end.c).
 *
 * References
 * ----------
 * user:   each ctx of the user.
 * ctx:    the device file, each attachment made through it.
 * seg:    MAKE until it returns, the owner ctx's list from MAKE until
 *         REMOVE (or close), each permit, each attachment until its end.
 * permit: GET until it returns, the getter ctx's list from GET until
 *         RELEASE (or close), each attachment until its end.
 * att:    its holds (att->users): each VMA (vm_private_data), the ATTACH
 *         that makes it until its result is out, and a fault, DETACH or
 *         POPULATE that drops the mmap_lock; at the last, the worker that
 *         removes its notifiers and frees it (xpmem_end.c); nothing waits
 *         for that worker.  An invalidation that reaches a notifier
 *         may list a zap naming the attachment: the notifier's removal
 *         returns only after that invalidation has ended, and with it the
 *         zap, so the attachment outlives every zap that names it.  The
 *         zap holds its own reference on the attachment's inode.
 * ctx->space: the ctx's pseudo file, which every attachment of the ctx
 *         maps: the ctx and each VMA (vm_file); each attachment holds
 *         its inode and mount until it is freed.  Its private_data names
 *         the ctx without a reference (only ATTACH, holding the ctx, maps
 *         it).
 * owner_ref: the segment and each attachment of it (struct xpmem_owner_ref,
 *         a hold of the owner's notifier record).
 * The id and key tables hold no reference: an object is published only
 * while MAKE's or GET's own reference or its ctx list's keeps it, and
 * unpublished before that one is dropped.  Lookups run under RCU and take
 * a reference with kref_get_unless_zero(), so segments and permits are
 * freed after a grace period (kfree_rcu).  MAKE and GET read the new id
 * while holding their own reference, and touch the object after
 * publishing it only under it.
 * The ctxs' pseudo files live on a pseudo filesystem that is mounted
 * while /dev/xpmem is open (simple_pin_fs) and which each file keeps
 * mounted; the mount pins the module, and so does each file.  rmmod fails
 * with EBUSY while anything is left.
 *
 * Lock order (outermost first)
 * ----------------------------
 *   attacher mmap_lock           page fault; ATTACH (vm_mmap) and DETACH
 *     owner mmap_lock            fault only (read).  Two mm's mmap_locks
 *                                nest in one order only: the one whose
 *                                mm_struct has the lower address first
 *                                (SINGLE_DEPTH_NESTING for the second);
 *                                the fault never waits for them in the
 *                                other order (xpmem_fault.c; also
 *                                docs/design.md, "Two mmap_locks").
 *       att->pt_lock             page table pages of the attachment's
 *                                VMAs are allocated and huge PMDs
 *                                inserted under it (both xpmem_map.c);
 *                                so are the pages of a revoked
 *                                ZERO_REVOKED attachment (xpmem_zero.c)
 *         att->lock              the notifier lock; PTE insertion runs
 *                                under it, with the owner's mmap_lock held
 *           page table lock
 *   xpmem_proc_lock              /proc/xpmem/<tgid> entries, one per
 *                                struct pid of a thread group
 *                                (xpmem_proc.c): open, the opener's
 *                                ->flush and the last close take it,
 *                                holding nothing else; ->flush looks
 *                                through the closer's descriptors
 *                                (files->file_lock) before, not under it
 *     xpmem_proc_ctx_lock        their ctx lists; a show takes it, then
 *                                xpmem_obj_lock
 *   xpmem_obj_lock               ctx lists, seg->ctx, permit->ctx,
 *                                seg->permits
 *     permit->lock               /proc/xpmem/<tgid> lists a permit's
 *                                attachments (nothing else nests them)
 *     ctx->ev_lock               the ctx's queue of events (spinlock,
 *                                leaf; xpmem_event.c): queued and
 *                                cancelled under xpmem_obj_lock, read
 *                                under ctx->ev_read_lock alone
 *   ctx->ev_read_lock            one reader of the queue at a time
 *     ctx->ev_lock               (mutex, taken interruptibly)
 *   seg->att_lock                the segment's attachment list (mutex;
 *                                REMOVE zaps under it)
 *     att->lock
 *   permit->lock                 the permit's attachment list (mutex;
 *                                RELEASE zaps under it)
 *     att->lock
 *   xpmem_revoke_rwsem           copy batches (read) against REMOVE and
 *                                RELEASE (write, taken and dropped); a
 *                                read section is a memcpy with page
 *                                faults off, nothing nests in it but the
 *                                object flags it reads (xpmem_revoke.c)
 *   owner_notifier->lock         the owner's invalidations in flight;
 *                                leaf spinlock, taken by the invalidate
 *                                callback (before att->lock, or inside
 *                                it when non-blockable), by the owner's
 *                                invalidate_range_start and _end and by
 *                                faults (xpmem_owner.c)
 *   xpmem_key_lock               requested keys of segments: changes of
 *                                the key table (mutex; nothing but the
 *                                table's own bucket locks nests in it,
 *                                xpmem_seg.c)
 *   xpmem_user_lock              the table of users: insertion and
 *                                removal (mutex, leaf; xpmem_ctx.c)
 *   user->lock                   the user's ctx list; ATTACH's charge sums
 *                                their attachments under it (mutex, leaf;
 *                                xpmem_ctx.c)
 * The id, key and user tables are rhashtables: lookups take no lock of
 * ours (RCU), insertions and removals only the table's bucket locks
 * (xpmem_obj_lock or xpmem_key_lock may be held around them).
 *
 * The invalidate callback and the owner's invalidate_range_start (which
 * does the zaps the callbacks of the same invalidation listed) may wait
 * for the zap worker, and for nothing else an attacher or the core may
 * hold (xpmem_mirror.c and xpmem_owner.c say why that cannot close a
 * cycle).
 * Nothing allocates memory while holding att->lock: the fault path makes
 * sure the page table page exists before taking it.
 */
#ifndef _XPMEM_INTERNAL_H
#define _XPMEM_INTERNAL_H

#include <linux/bits.h>
#include <linux/types.h>
#include <linux/completion.h>
#include <linux/hmm.h>
#include <linux/kref.h>
#include <linux/llist.h>
#include <linux/refcount.h>
#include <linux/workqueue.h>
#include <linux/wait.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/mm_types.h>
#include <linux/mmu_notifier.h>
#include <linux/atomic.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/rhashtable-types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#include "xpmem_uapi.h"
#include "compat.h"

/* Version reported by XPMEM_CMD_VERSION: major 3, minor 1 (classic layout). */
#define XPMEM_VERSION_CODE	0x00030001

struct file;
struct io_uring_cmd;
struct iov_iter;
struct ipc_namespace;
struct pid;
struct xpmem_owner_notifier;
struct vm_fault;
struct vm_area_struct;

/*
 * The writable-page table of an attachment: owner pages it remembers as
 * "writable, resolved by a write fault" until an invalidation touches
 * them (filled and read by xpmem_map.c, forgotten by xpmem_mirror.c); a
 * small table indexed by a hash of the owner address.
 */
#define XPMEM_WRITABLE_BITS	4
#define XPMEM_WRITABLE_SLOTS	BIT(XPMEM_WRITABLE_BITS)

/*
 * Pages per bitmap of xpmem_att.mapped: a page table's worth with 4 KiB
 * pages; with larger pages (8192 per table with 64 KiB) a table or a PMD
 * mapping simply spans several bitmaps.
 */
#define XPMEM_MAPPED_BLOCK	512

/*
 * An object's entry in an id table (xpmem_id.c), a table that grows and
 * shrinks with its objects (rhashtable).
 */
struct xpmem_id {
	struct rhash_head node;
	u64 id;
	struct kref *ref;		/* the object's; lookups take one */
};

struct xpmem_id_table {
	struct rhashtable ht;
};

/*
 * A user's objects, counted against the module's limits (xpmem_ctx.c):
 * every ctx its user opened charges its segments and permits here while
 * they are on its lists, and its attachments (ctx->nr_atts, summed over
 * user->ctxs) until they are freed.  The pages of its revoked
 * ZERO_REVOKED attachments count here until they are freed too; each such
 * attachment holds a reference on the user meanwhile (xpmem_zero.c).
 */
struct xpmem_user {
	struct rhash_head node;		/* xpmem_users, keyed by uid */
	kuid_t uid;			/* real uid of the openers */
	refcount_t ref;			/* one per ctx; see above */
	atomic_t nr_segs;		/* limit: max_segments */
	atomic_t nr_permits;		/* limit: max_permits */
	atomic_t nr_revoked_pages;	/* limit: max_revoked_pages */
	struct mutex lock;		/* ctxs; ATTACH's charge */
	struct list_head ctxs;		/* xpmem_ctx.user_node */
	struct rcu_head rcu;
};

struct xpmem_ctx {
	struct kref ref;
	struct mm_struct *mm;		/* mmgrab()ed opener mm */
	struct pid *tgid;		/* opener's thread group (get_pid) */
	struct list_head segs;		/* xpmem_seg.ctx_node */
	struct list_head permits;	/* xpmem_permit.ctx_node */
	struct xpmem_user *user;	/* referenced; charged for everything */
	struct list_head user_node;	/* xpmem_user.ctxs (user->lock) */
	atomic_t nr_atts;		/* alive (user's limit: max_attachments) */
	struct list_head proc_node;	/* xpmem_proc_tg.ctxs (proc_ctx_lock) */
	/* events of its permits (xpmem_event.c) */
	spinlock_t ev_lock;		/* events, ev_seq */
	struct list_head events;	/* xpmem_permit.ev_node, oldest first */
	u64 ev_seq;			/* of the last event queued */
	struct mutex ev_read_lock;	/* one reader at a time */
	wait_queue_head_t ev_wait;	/* readers and pollers */
	/*
	 * The owner's record of invalidations, held from the first MAKE to
	 * the release of the file (set and dropped by xpmem_main.c only)
	 */
	struct xpmem_owner_ref *owner_ref;
	/*
	 * The pseudo file its attachments map, made by the first ATTACH
	 * (xpmem_attach.c), referenced until the ctx is freed; the file
	 * offsets it hands out and the ATTACHes mapping it (space_lock,
	 * a leaf spinlock)
	 */
	struct file *space;
	spinlock_t space_lock;		/* space_next, placing */
	unsigned long space_next;	/* the first offset never handed out */
	struct list_head placing;	/* struct xpmem_attach_placing */
};

/* One owner range of a segment: segment offsets [off, off + len). */
struct xpmem_seg_range {
	unsigned long oaddr;		/* owner address of off */
	unsigned long off;
	unsigned long len;		/* bytes, page multiple */
};

/*
 * A requested key as the key table compares it: namespace, length and all
 * XPMEM_EXT_KEY_MAX bytes (zero past the length), no padding in between.
 */
struct xpmem_seg_key {
	struct ipc_namespace *ns;
	u8 len;				/* 0: no key */
	u8 bytes[XPMEM_EXT_KEY_MAX];
};

struct xpmem_seg {
	struct kref ref;
	struct xpmem_id id;
	struct rcu_head rcu;		/* freed after a grace period */
	struct xpmem_ctx *ctx;		/* owner ctx; NULL once removed */
	struct list_head ctx_node;
	struct mm_struct *mm;		/* mmgrab()ed owner mm */
	struct pid *tgid;		/* the maker's thread group (get_pid) */
	unsigned long size;		/* bytes: the ranges' total */
	kuid_t uid;
	kgid_t gid;
	umode_t mode;			/* 0777-style permit mode */
	struct user_namespace *user_ns;	/* for CAP_IPC_OWNER */
	struct ipc_namespace *ipc_ns;	/* referenced; scope of the segid */
	struct mutex att_lock;		/* protects atts and removed */
	struct list_head atts;		/* xpmem_att.seg_node, all permits */
	atomic_t nr_atts;		/* on atts (for /proc/xpmem) */
	struct list_head permits;	/* xpmem_permit.seg_node (obj_lock) */
	bool removed;			/* no new attachments or PTEs */
	bool rdonly;			/* GET grants XPMEM_RDONLY only */
	bool any_ns;			/* GET from any IPC namespace (auth) */
	/* requested key (EXT_MAKE): changed under xpmem_key_lock */
	struct rhash_head key_node;	/* in the key table while held */
	bool key_hashed;		/* key_node is in the table */
	bool key_live;			/* GET by key finds it */
	struct xpmem_seg_key key;
	u8 auth_len;			/* 0: no authorization key */
	u8 auth[XPMEM_EXT_AUTH_MAX];	/* zero past auth_len */
	/*
	 * The owner's record of invalidations in flight (xpmem_owner.c):
	 * registered by the owner's MAKE (or, failing that, the first
	 * ATTACH), held by the segment and by each
	 * of its attachments until their notifiers are removed.
	 */
	struct xpmem_owner_ref *owner_ref;
	unsigned int nr_ranges;		/* >= 1; adjacent buffers merged */
	struct xpmem_seg_range ranges[];
};

/*
 * One hold of the owner's record of invalidations (a plain mmu_notifier
 * of the owner's mm, shared by all its segments through
 * mmu_notifier_get()): made by a segment's first ATTACH, referenced by the
 * segment and by every attachment of it until the attachment's notifiers
 * are removed, which may be long after the segment is freed.  The last
 * reference puts the notifier (xpmem_seg.c).
 */
struct xpmem_owner_ref {
	struct mmu_notifier *mn;
	refcount_t ref;
};

/* What EXT_MAKE and EXT_GET add to the classic commands. */
struct xpmem_seg_opts {
	bool rdonly;			/* make: GET grants RDONLY only */
	bool any_ns;			/* make: GET from any IPC namespace */
	const u8 *key;			/* NULL, or key_len bytes */
	u32 key_len;
	const u8 *auth;			/* NULL, or XPMEM_EXT_AUTH_MAX bytes, */
	u32 auth_len;			/* zero past auth_len */
};

struct xpmem_permit {
	struct kref ref;
	struct xpmem_id id;
	struct rcu_head rcu;		/* freed after a grace period */
	struct xpmem_seg *seg;		/* referenced */
	struct xpmem_ctx *ctx;		/* getter ctx; NULL once released */
	struct list_head ctx_node;
	struct mm_struct *mm;		/* getter mm (identity only) */
	bool writable;
	struct mutex lock;		/* protects atts and released */
	struct list_head atts;		/* xpmem_att.permit_node */
	atomic_t nr_atts;		/* on atts (for /proc/xpmem) */
	bool released;
	/* on seg->permits while on its ctx's list (xpmem_obj_lock) */
	struct list_head seg_node;
	/*
	 * Its one event (xpmem_event.c): reason 0 until the segment ends;
	 * on ctx->events (under ctx->ev_lock) until read or released.
	 */
	struct list_head ev_node;
	u32 ev_reason;			/* XPMEM_EXT_EVENT_*, 0: none */
	u64 ev_seq;
};

/*
 * The part of one segment range an attachment maps, and the notifier that
 * mirrors it (xpmem_mirror.c).
 */
struct xpmem_mirror {
	struct mmu_interval_notifier notifier;
	struct xpmem_att *att;
	struct xpmem_seg_range r;	/* within one segment range */
	bool live;			/* notifier inserted */
	/*
	 * Set once mmu_interval_read_begin() returned after the insertion
	 * (the attachment's settle work): every invalidation in flight since
	 * then reaches the callback; faults wait for it (xpmem_mirror.c).
	 */
	bool settled;
};

struct xpmem_att {
	struct xpmem_permit *permit;	/* referenced */
	struct xpmem_seg *seg;		/* referenced */
	struct xpmem_ctx *ctx;		/* referenced; charged for this */
	struct list_head permit_node;
	struct list_head seg_node;
	struct mm_struct *mm;		/* attacher mm (identity only) */
	unsigned long offset;		/* segment offset at attach time */
	unsigned long size;
	/*
	 * file offset minus segment offset: its VMAs map file offsets
	 * [offset + file_delta, offset + file_delta + size) of the ctx's
	 * pseudo file
	 * (xpmem_att_seg_off())
	 */
	unsigned long file_delta;
	bool writable;
	/*
	 * address_space of the VMAs: the inode of the ctx's pseudo file,
	 * referenced (with the mount it lives on) until @att is freed; each
	 * zap an invalidation lists holds its own inode reference
	 */
	struct inode *inode;
	struct vfsmount *mnt;
	struct mutex lock;		/* the notifiers' lock */
	struct mutex pt_lock;		/* page tables, PMDs (xpmem_map.c) */
	atomic_t nr_vmas;		/* VMAs mapping it (split, mremap) */
	atomic_t users;			/* its holds (xpmem_end.c) */
	bool dead;			/* under lock: revoked (SIGBUS) */
	/*
	 * Set once, by its end (xpmem_end_put()): no VMA maps it and none
	 * will, so no PTE, fault or zap is left for the callback to mind
	 */
	bool ended;
	bool zero_revoked;		/* revoked: zeros, not SIGBUS */
	struct xarray zero_pages;	/* its private pages once revoked */
	struct xpmem_user *zero_user;	/* charged for them (referenced) */
	/*
	 * under lock: windows of faults in progress (struct xpmem_window:
	 * listed by xpmem_fault.c, marked by xpmem_mirror.c)
	 */
	struct list_head faults;
	/* under lock: the writable-page table (XPMEM_WRITABLE_BITS) */
	struct xpmem_writable_page {
		unsigned long oaddr;	/* owner address; 0: empty */
		unsigned long pfn;
	} writable_pages[XPMEM_WRITABLE_SLOTS];
	/*
	 * Segment offsets that may have a PTE or PMD: a bitmap per block of
	 * XPMEM_MAPPED_BLOCK pages, set under att->lock before insertion,
	 * tested and cleared by the invalidate callback under att->lock
	 * (xpmem_mirror.c).  An invalidation that finds nothing set needs no
	 * zap and waits for nothing.
	 */
	struct xarray mapped;
	/* the owner's notifier record: its invalidations in flight */
	struct xpmem_owner_notifier *owner_notifier;
	struct xpmem_owner_ref *owner_ref;	/* keeps @owner_notifier */
	/* its end: the notifiers are removed, and @att freed, in a worker */
	struct work_struct free_work;
	struct llist_node end_node;	/* waiting for it (xpmem_mirror.c) */
	/* waits for the invalidations in flight at insertion (mirror.c) */
	struct work_struct settle_work;
	bool settle_queued;		/* set once, before ATTACH maps it */
	unsigned int first_range;	/* segment range of mirrors[0] */
	unsigned int nr_mirrors;	/* >= 1 */
	struct xpmem_mirror mirrors[] __counted_by(nr_mirrors);
};

/* The segment offset that file page @pgoff of @att's VMAs maps. */
static inline unsigned long xpmem_att_seg_off(const struct xpmem_att *att,
					      unsigned long pgoff)
{
	return (pgoff << PAGE_SHIFT) - att->file_delta;
}

/*
 * Interfaces, one heading per file, in layer order: a file calls only the
 * files above its heading here (docs/design.md, "Layers").  Every
 * function of xpmem_FOO.c is named xpmem_FOO_*, with one exception: the
 * lifetime helpers of struct xpmem_user (xpmem_user_get(),
 * xpmem_user_hold(), xpmem_user_put()) live in xpmem_ctx.c, which owns
 * the users.
 */

/* xpmem_stats.c: counters, sysfs */
struct xpmem_stats {
	atomic_long_t segments;
	atomic_long_t permits;
	atomic_long_t attachments;
	atomic_long_t faults;
	atomic_long_t fault_retries;
	atomic_long_t fault_seq_retries;
	atomic_long_t fault_owner_waits;
	atomic_long_t mkwrite_fast;
	atomic_long_t pages_upgraded;
	atomic_long_t pages_mapped;
	atomic_long_t pmd_mapped;
	atomic_long_t invalidations;
	atomic_long_t settle_works;
	atomic_long_t records_lost;
};

extern struct xpmem_stats xpmem_stats;
extern const struct attribute_group *xpmem_attr_groups[];

/*
 * xpmem_event.c: events of permits whose segment ended, queued on the
 * getter's ctx; the core of /dev/xpmem's read and poll
 */
void xpmem_event_ctx_init(struct xpmem_ctx *ctx);
void xpmem_event_seg_end(struct xpmem_seg *seg, u32 reason);
void xpmem_event_cancel(struct xpmem_permit *permit);
bool xpmem_event_pending(struct xpmem_ctx *ctx);
ssize_t xpmem_event_read(struct xpmem_ctx *ctx, struct iov_iter *to,
			 bool nowait);
u32 xpmem_event_close_reason(struct xpmem_ctx *ctx);
bool xpmem_event_group_exited(struct xpmem_ctx *ctx);

/* xpmem_ctx.c: device contexts and per-user limits */
extern struct mutex xpmem_obj_lock;
extern unsigned int xpmem_max_segments;
extern unsigned int xpmem_max_permits;
extern unsigned int xpmem_max_attachments;
extern unsigned int xpmem_max_revoked_pages;
int xpmem_ctx_init(void);
void xpmem_ctx_exit(void);
bool xpmem_ctx_charge(atomic_t *count, unsigned int limit);
bool xpmem_ctx_charge_att(atomic_t *count, unsigned int limit);	/* ATTACH's */
struct xpmem_user *xpmem_user_hold(struct xpmem_ctx *ctx);
void xpmem_user_put(struct xpmem_user *user);
struct xpmem_ctx *xpmem_ctx_alloc(void);
void xpmem_ctx_get(struct xpmem_ctx *ctx);
void xpmem_ctx_put(struct xpmem_ctx *ctx);

/* xpmem_id.c: id tables */
int xpmem_id_table_init(struct xpmem_id_table *table);
void xpmem_id_table_destroy(struct xpmem_id_table *table);
int xpmem_id_publish(struct xpmem_id_table *table, struct xpmem_id *id,
		     struct kref *ref);
void xpmem_id_unpublish(struct xpmem_id_table *table, struct xpmem_id *id);
struct xpmem_id *xpmem_id_lookup(struct xpmem_id_table *table, u64 id);

/* xpmem_seg.c: segments */
int xpmem_seg_init(void);
void xpmem_seg_exit(void);
int xpmem_seg_make(struct xpmem_ctx *ctx, const struct xpmem_ext_iov *iov,
		   unsigned int nr, unsigned int mode,
		   const struct xpmem_seg_opts *opts, xpmem_segid_t *segid);
unsigned int xpmem_seg_range_index(const struct xpmem_seg *seg,
				   unsigned long off);

/* Owner address of segment offset @off, which lies in range @r. */
static inline unsigned long
xpmem_seg_range_oaddr(const struct xpmem_seg_range *r, unsigned long off)
{
	return r->oaddr + (off - r->off);
}

int xpmem_seg_cmd_make(struct xpmem_ctx *ctx, struct xpmem_cmd_make *cmd);
struct xpmem_seg *xpmem_seg_lookup(xpmem_segid_t segid);
struct xpmem_seg *xpmem_seg_lookup_key(const u8 *key, u32 key_len);
bool xpmem_seg_visible(const struct xpmem_seg *seg);
bool xpmem_seg_host_ids_enabled(void);
void xpmem_seg_get(struct xpmem_seg *seg);
void xpmem_seg_put(struct xpmem_seg *seg);
void xpmem_seg_owner_ref_put(struct xpmem_owner_ref *r);
bool xpmem_seg_owner_alive(struct xpmem_seg *seg);
struct xpmem_seg *xpmem_seg_unlink(struct xpmem_ctx *ctx,
				   xpmem_segid_t segid);
struct xpmem_seg *xpmem_seg_unlink_any(struct xpmem_ctx *ctx);
void xpmem_seg_withdraw(struct xpmem_seg *seg);

/* xpmem_permit.c: access permits */
int xpmem_permit_init(void);
void xpmem_permit_exit(void);
int xpmem_permit_create(struct xpmem_ctx *ctx, struct xpmem_seg *seg, int flags,
			const struct xpmem_seg_opts *opts, xpmem_apid_t *apid);
int xpmem_permit_cmd_get(struct xpmem_ctx *ctx, struct xpmem_cmd_get *cmd);
struct xpmem_permit *xpmem_permit_lookup(xpmem_apid_t apid);
void xpmem_permit_get(struct xpmem_permit *permit);
void xpmem_permit_put(struct xpmem_permit *permit);
struct xpmem_permit *xpmem_permit_unlink(struct xpmem_ctx *ctx,
					 xpmem_apid_t apid);
struct xpmem_permit *xpmem_permit_unlink_any(struct xpmem_ctx *ctx);
void xpmem_permit_withdraw(struct xpmem_permit *permit);

/* xpmem_revoke.c: the barrier between copies and REMOVE/RELEASE */
void xpmem_revoke_read_lock(void);
void xpmem_revoke_read_unlock(void);
void xpmem_revoke_sync(void);

/*
 * xpmem_zap.c: the zap worker and the mapped offsets of attachments
 */
struct xpmem_zap {		/* one part of one attachment to zap */
	struct list_head node;
	struct xpmem_att *att;		/* lives until its notifiers are gone */
	struct inode *inode;		/* att's, referenced by the zap */
	unsigned long offset;		/* segment offset */
	unsigned long len;
	unsigned long pos;		/* @offset's file offset */
};

int xpmem_zap_init(void);
void xpmem_zap_exit(void);
bool xpmem_zap_in_worker(void);
void xpmem_zap_run(struct list_head *zaps);
struct xpmem_zap *xpmem_zap_list(struct xpmem_att *att, unsigned long offset,
				 unsigned long len, gfp_t gfp);
void xpmem_zap_list_done(struct list_head *zaps);
void xpmem_zap_att(struct xpmem_att *att, unsigned long offset,
		   unsigned long len);
void xpmem_zap_mapped_init(struct xpmem_att *att);
void xpmem_zap_mapped_destroy(struct xpmem_att *att);
int xpmem_zap_mapped_prepare(struct xpmem_att *att, unsigned long off,
			     unsigned long len);
bool xpmem_zap_mapped_set(struct xpmem_att *att, unsigned long off,
			  unsigned long len);
bool xpmem_zap_mapped_test(struct xpmem_att *att, unsigned long off,
			   unsigned long len);
void xpmem_zap_mapped_forget(struct xpmem_att *att, unsigned long off,
			     unsigned long len);

/*
 * xpmem_window.c: the windows of faults in progress, listed by faults and
 * marked by invalidations
 */

/*
 * A fault's owner range [start, end), on att->faults while it resolves
 * (listed by xpmem_fault.c, marked by the invalidate callback).
 * @changes is never inserted in an interval tree: it is the sequence
 * hmm_range_fault() tests between its steps (and takes the owner's mm
 * from).  It is 0 when an attempt starts, and the invalidate callback
 * sets it to 1 when an invalidation overlaps the window's required part
 * (its page; all of the window of a PMD or a ->pfn_mkwrite), so every
 * such invalidation stops the walk - also while the owner keeps some
 * invalidation in progress without pause, when the mirror's own sequence
 * no longer moves.  An invalidation of other pages of the window only
 * cuts them out of its usable part: one fault among the many
 * invalidations of a busy owner restarts only for those of its own page.
 */
struct xpmem_window {
	struct list_head node;
	struct xpmem_mirror *m;
	/* owner addresses; changed under att->lock (xpmem_window_narrow()) */
	unsigned long start;
	unsigned long end;
	/* required part: an invalidation of it starts the fault over */
	unsigned long required_start;
	unsigned long required_end;
	/*
	 * usable part, under att->lock: what the other invalidations of the
	 * window since the attempt began leave usable, page aligned: each
	 * lies wholly below or above the required part and moves one bound,
	 * so the required part always stays inside
	 */
	unsigned long usable_start;
	unsigned long usable_end;
	struct mmu_interval_notifier changes;
};

void xpmem_window_begin(struct xpmem_window *win, struct xpmem_mirror *m,
			struct mm_struct *owner, unsigned long start,
			unsigned long end, unsigned long required_start,
			unsigned long required_end);
void xpmem_window_reset(struct xpmem_window *win);
void xpmem_window_narrow(struct xpmem_window *win, unsigned long start,
			 unsigned long end);
bool xpmem_window_stale(struct xpmem_window *win);
void xpmem_window_end(struct xpmem_window *win, bool locked);
void xpmem_window_mark(struct xpmem_att *att, unsigned long start,
		       unsigned long end);

/*
 * xpmem_owner.c: the owner's record (one per owner mm): its invalidations
 * in flight, the zaps they carry, its sentinel
 */
struct xpmem_owner_inval;
int xpmem_owner_init(void);
void xpmem_owner_exit(void);
struct xpmem_owner_ref *xpmem_owner_prepare(struct xpmem_seg *seg);
bool xpmem_owner_ready(struct xpmem_seg *seg);
int xpmem_owner_get(struct xpmem_att *att, struct mm_struct *mm);
void xpmem_owner_put(struct xpmem_att *att);
bool xpmem_owner_quiet(struct xpmem_att *att);
bool xpmem_owner_linked(struct mmu_interval_notifier *mni);
struct xpmem_owner_inval *
xpmem_owner_note(struct xpmem_owner_notifier *notif,
		 const struct mmu_notifier_range *range);
bool xpmem_owner_defer_zap(struct xpmem_owner_notifier *notif,
			   struct xpmem_owner_inval *f, struct xpmem_att *att,
			   unsigned long off, unsigned long len);
wait_queue_head_t *xpmem_owner_waitq(struct xpmem_owner_notifier *notif);
int xpmem_owner_wait(struct xpmem_owner_notifier *notif,
		     struct mmu_interval_notifier *mni, unsigned long start,
		     unsigned long end);

/*
 * xpmem_mirror.c: what attachments mirror (the invalidate callback, the
 * settling of new mirrors, the queue of attachment ends)
 */
int xpmem_mirror_init(void);
void xpmem_mirror_exit(void);
extern const struct mmu_interval_notifier_ops xpmem_mirror_ops;
void xpmem_mirror_defer(struct xpmem_att *att);
void xpmem_mirror_ends_now(void);
bool xpmem_mirror_vma_ok(struct vm_area_struct *vma);
struct xpmem_mirror *xpmem_mirror_find(struct vm_fault *vmf,
				       unsigned long *oaddr);
void xpmem_mirror_settle_init(struct xpmem_att *att);
void xpmem_mirror_settle(struct xpmem_att *att, bool quiet);
void xpmem_mirror_settle_cancel(struct xpmem_att *att);
int xpmem_mirror_wait(struct xpmem_mirror *m, unsigned long start,
		      unsigned long end);
bool xpmem_mirror_maps_itself(const struct xpmem_seg *seg,
			      struct mm_struct *mm, unsigned long addr,
			      unsigned long off, unsigned long len);

/*
 * xpmem_map.c: a resolved window into the attacher's page tables, and the
 * owner pages a write fault found writable
 */

/* What a resolution is for. */
enum xpmem_fault_kind {
	XPMEM_FAULT_PTE,	/* ->fault: map the window with PTEs */
	XPMEM_FAULT_MKWRITE,	/* ->pfn_mkwrite: one PTE becomes writable */
	XPMEM_FAULT_PMD,	/* ->huge_fault: one huge PMD, or fall back */
};

/*
 * One resolution: the fault, its window and the owner's pages of it
 * (resolved by xpmem_fault.c, committed by xpmem_map_commit()).
 */
struct xpmem_fault {
	struct vm_fault *vmf;
	struct xpmem_att *att;
	enum xpmem_fault_kind kind;
	bool write;
	unsigned long oaddr;		/* owner address of vmf->address */
	unsigned long lo, hi;		/* the window, attacher addresses */
	unsigned long off;		/* segment offset of lo */
	unsigned long fidx;		/* the faulting page's index */
	unsigned long *pfns;		/* one entry per page of the window */
	bool look_only;			/* owner VMA under userfaultfd */
	struct xpmem_window win;	/* listed while it resolves */
	struct hmm_range range;
};

int xpmem_map_init(void);
void xpmem_map_exit(void);
pmd_t *xpmem_map_find_pmd(struct mm_struct *mm, unsigned long addr);
int xpmem_map_prepare_pt(struct vm_fault *vmf);
bool xpmem_map_mkwrite_fast(struct vm_fault *vmf, struct xpmem_att *att,
			    unsigned long oaddr);
vm_fault_t xpmem_map_commit(struct xpmem_fault *f, bool *zap);

/* xpmem_zero.c: what a revoked ZERO_REVOKED attachment maps */
int xpmem_zero_init(void);
void xpmem_zero_exit(void);
void xpmem_zero_att_init(struct xpmem_att *att);
void xpmem_zero_att_destroy(struct xpmem_att *att);
vm_fault_t xpmem_zero_fault(struct vm_fault *vmf, bool mkwrite);

/* xpmem_userfault.c: a fault on owner memory under userfaultfd */
bool xpmem_userfault_handle(struct vm_fault *vmf, struct mm_struct *owner,
			    bool mkwrite, vm_fault_t *ret);

/* xpmem_end.c: the holds of an attachment, and its end */
void xpmem_end_hold(struct xpmem_att *att);
void xpmem_end_put(struct xpmem_att *att);

/* xpmem_fault.c: attacher page faults and the attachment VMAs' operations */
extern const struct vm_operations_struct xpmem_fault_vm_ops;
bool xpmem_fault_vma_is_att(struct vm_area_struct *vma);
bool xpmem_fault_huge_enabled(void);
unsigned long xpmem_fault_window_pages(void);
unsigned long xpmem_fault_get_unmapped_area(struct file *file,
					    unsigned long addr,
					    unsigned long len,
					    unsigned long pgoff,
					    unsigned long flags); /* if huge */

/* xpmem_populate.c: faulting attachments in ahead of their first access */
void xpmem_populate_att(struct xpmem_att *att, unsigned long base,
			unsigned long a, unsigned long end, bool write);
int xpmem_populate_range(unsigned long vaddr, unsigned long len,
			 bool write);

/* xpmem_attach.c: ATTACH, the ctxs' pseudo files and their mmap */
int xpmem_attach_fs_pin(void);
void xpmem_attach_fs_unpin(void);
int xpmem_attach_create(struct xpmem_ctx *ctx, xpmem_apid_t apid, u64 offset,
			u64 size, unsigned long *vaddr, unsigned int flags,
			struct xpmem_att **attp);
int xpmem_attach_cmd(struct xpmem_ctx *ctx, struct xpmem_cmd_attach *cmd,
		     struct xpmem_att **attp);

/* xpmem_detach.c: DETACH; the end of permits and segments */
int xpmem_detach_cmd(struct xpmem_ctx *ctx, unsigned long vaddr);
void xpmem_detach_undo(struct xpmem_att *att);
void xpmem_detach_permit_end(struct xpmem_permit *permit, bool unmap);
void xpmem_detach_seg_end(struct xpmem_seg *seg);

/* xpmem_copy.c: copies through a permit */
ssize_t xpmem_copy(struct xpmem_ctx *ctx, const struct xpmem_ext_copy *cmd,
		   bool nowait, struct io_uring_cmd *fixed,
		   unsigned int issue_flags);

/*
 * xpmem_proc.c: the classic /proc/xpmem files, and the objects of each
 * thread group in its own file (reads the structures above; calls nothing)
 */
int xpmem_proc_init(void);
void xpmem_proc_exit(void);
void xpmem_proc_open(struct xpmem_ctx *ctx);
void xpmem_proc_flush(struct xpmem_ctx *ctx, struct file *file);
void xpmem_proc_close(struct xpmem_ctx *ctx);

/*
 * xpmem_main.c: every user entry point - the device, its ioctls and its
 * io_uring commands (calls everything above)
 */

#endif /* _XPMEM_INTERNAL_H */
