/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - the kernel-version differences xpmem.ko cares about, in one
 * place.  Built against 5.10 (Debian 11) up to 7.2.  Every difference is
 * decided by what the kernel's headers have (the XPMEM_HAVE_* probes in
 * Kbuild, or a macro's own presence), never by a version number.
 */
#ifndef _XPMEM_COMPAT_H
#define _XPMEM_COMPAT_H

#include <linux/fs.h>
#include <linux/ipc_namespace.h>
#include <linux/lockdep.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/proc_ns.h>
#include <linux/sched/mm.h>
#include <linux/swap.h>
#include <linux/uio.h>
#include <linux/workqueue.h>

#include "xpmem_uapi.h"

/*
 * XPMEM_HAVE_VM_FLAGS_SET comes from Kbuild, which looks for the helper in
 * the kernel's headers (vm_flags became read-only behind it in 6.3).
 */
#ifndef XPMEM_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * Workqueues say whether they are per-CPU or unbound from 7.x on (Kbuild:
 * XPMEM_HAVE_WQ_PERCPU); per-CPU is what they were before without it.
 */
#ifndef XPMEM_HAVE_WQ_PERCPU
#define WQ_PERCPU	0
#endif

/*
 * A /proc entry's data is pde_data() from 5.17 on (Kbuild:
 * XPMEM_HAVE_PDE_DATA), PDE_DATA() before.
 */
#ifndef XPMEM_HAVE_PDE_DATA
#include <linux/proc_fs.h>
#define pde_data(inode)	PDE_DATA(inode)
#endif

/*
 * Whether @task's memory may be read by its user as ptrace decides it -
 * dumpable as its user - and the user namespace of its exec (referenced;
 * NULL for a task without an mm).  Under task_lock(@task).  Kernels with
 * struct task_exec_state (7.2 here; Kbuild: XPMEM_HAVE_TASK_EXEC_STATE)
 * keep both in the task's exec state, older ones in its mm.
 */
#ifdef XPMEM_HAVE_TASK_EXEC_STATE
#include <linux/sched/exec_state.h>
static inline struct user_namespace *
xpmem_task_dump_ns(struct task_struct *task, bool *dumpable)
{
	struct task_exec_state *es;
	struct user_namespace *ns = NULL;

	if (!task->mm)
		return NULL;
	rcu_read_lock();
	es = rcu_dereference(task->exec_state);
	if (es) {
		*dumpable = READ_ONCE(es->dumpable) == TASK_DUMPABLE_OWNER;
		ns = get_user_ns(es->user_ns);
	}
	rcu_read_unlock();
	return ns;
}
#else
#include <linux/sched/coredump.h>
static inline struct user_namespace *
xpmem_task_dump_ns(struct task_struct *task, bool *dumpable)
{
	struct mm_struct *mm = task->mm;

	if (!mm)
		return NULL;
	*dumpable = get_dumpable(mm) == SUID_DUMP_USER;
	return get_user_ns(mm->user_ns);
}
#endif

/* Annotations and debug checks that older kernels lack. */
#ifndef __counted_by
#define __counted_by(...)
#endif

#ifndef lockdep_assert_not_held
#ifdef CONFIG_LOCKDEP
#define lockdep_assert_not_held(l)	WARN_ON_ONCE(debug_locks && lockdep_is_held(l))
#else
#define lockdep_assert_not_held(l)	((void)(l))
#endif
#endif

/*
 * vma_lookup() (5.14): the VMA that contains @addr, or NULL
 * (XPMEM_HAVE_VMA_LOOKUP from Kbuild).
 */
#ifndef XPMEM_HAVE_VMA_LOOKUP
static inline struct vm_area_struct *vma_lookup(struct mm_struct *mm,
						unsigned long addr)
{
	struct vm_area_struct *vma = find_vma(mm, addr);

	return vma && addr >= vma->vm_start ? vma : NULL;
}
#endif

/**
 * xpmem_find_vma_match - the first VMA of @mm overlapping [@start, @end)
 *                        that @match accepts, in address order
 * @mm: under its mmap_lock
 * @start: first address
 * @end: end of the range (exclusive)
 * @match: the test, called for each overlapping VMA until it is true
 * @data: its argument
 *
 * The VMA iterator (maple tree, 6.1; Kbuild: XPMEM_HAVE_VMA_ITERATOR), or
 * the VMA list before it.  Return: the VMA, or NULL.
 */
static inline struct vm_area_struct *
xpmem_find_vma_match(struct mm_struct *mm, unsigned long start,
		     unsigned long end,
		     bool (*match)(struct vm_area_struct *vma, void *data),
		     void *data)
{
	struct vm_area_struct *vma;
#ifdef XPMEM_HAVE_VMA_ITERATOR
	VMA_ITERATOR(vmi, mm, start);

	for_each_vma_range(vmi, vma, end)
		if (match(vma, data))
			return vma;
#else
	for (vma = find_vma(mm, start); vma && vma->vm_start < end;
	     vma = vma->vm_next)
		if (match(vma, data))
			return vma;
#endif
	return NULL;
}

/*
 * vm_operations_struct.split became .may_split in 5.11 (Kbuild:
 * XPMEM_HAVE_MAY_SPLIT); same arguments, same meaning.
 */
#ifdef XPMEM_HAVE_MAY_SPLIT
#define XPMEM_VM_OPS_MAY_SPLIT	may_split
#else
#define XPMEM_VM_OPS_MAY_SPLIT	split
#endif

/*
 * The fault @vmf at the same address, in @vma (found again after the
 * mmap_lock was dropped).  vm_fault.real_address, the unmasked address,
 * exists from 5.18 on (Kbuild: XPMEM_HAVE_VMF_REAL_ADDRESS).
 */
static inline struct vm_fault xpmem_vmf_again(const struct vm_fault *vmf,
					      struct vm_area_struct *vma)
{
	struct vm_fault again = {
		.vma = vma,
		.gfp_mask = vmf->gfp_mask,
		.pgoff = linear_page_index(vma, vmf->address),
		.address = vmf->address,
#ifdef XPMEM_HAVE_VMF_REAL_ADDRESS
		.real_address = vmf->real_address,
#endif
		.flags = vmf->flags,
	};

	return again;
}

/*
 * Whether handle_mm_fault(), called with FAULT_FLAG_ALLOW_RETRY, returned
 * with the mmap_lock dropped: VM_FAULT_RETRY, or VM_FAULT_COMPLETED
 * (5.19; Kbuild: XPMEM_HAVE_VM_FAULT_COMPLETED), a fault done after the
 * lock was dropped.
 */
static inline bool xpmem_mm_fault_dropped_lock(vm_fault_t ret)
{
#ifdef XPMEM_HAVE_VM_FAULT_COMPLETED
	return ret & (VM_FAULT_RETRY | VM_FAULT_COMPLETED);
#else
	return ret & VM_FAULT_RETRY;
#endif
}

/*
 * memfd_secret() memory (5.14, where <linux/magic.h> has SECRETMEM_MAGIC):
 * out of the direct map, never lent to anyone.  Without it no file is.
 */
static inline bool xpmem_file_is_secretmem(struct file *file)
{
#ifdef SECRETMEM_MAGIC
	return file && file_inode(file)->i_sb->s_magic == SECRETMEM_MAGIC;
#else
	return false;
#endif
}

/*
 * The owner's page @head (a head page: compound_head()) was written or
 * read through an attachment.  Folios (5.16; Kbuild: XPMEM_HAVE_FOLIO)
 * or the head page's own flags before them.
 *
 * Called under att->lock, which the invalidate callback takes in reclaim.
 * A folio the owner maps writable is almost always dirty already; when it
 * is not (an owner's shared-file write fault between its PTE and its own
 * folio_mark_dirty()), the filesystem's ->dirty_folio may allocate (iomap
 * does, __GFP_NOFAIL): without direct reclaim here, so that it never
 * reaches our own callback for the same attachment.
 */
static inline void xpmem_head_mark_dirty(struct page *head)
{
	unsigned int noreclaim;
#ifdef XPMEM_HAVE_FOLIO
	struct folio *folio = page_folio(head);

	if (folio_test_dirty(folio))
		return;
	noreclaim = memalloc_noreclaim_save();
	folio_mark_dirty(folio);
#else
	if (PageDirty(head))
		return;
	noreclaim = memalloc_noreclaim_save();
	set_page_dirty(head);
#endif
	memalloc_noreclaim_restore(noreclaim);
}

static inline void xpmem_head_mark_accessed(struct page *head)
{
#ifdef XPMEM_HAVE_FOLIO
	folio_mark_accessed(page_folio(head));
#else
	mark_page_accessed(head);
#endif
}

/*
 * Fault in the start of @iter's next @len bytes, as the destination of a
 * copy (@dest) or its source, as the caller's own accesses would (through
 * an attachment's fault handler too).  Return: how many of the @len bytes
 * were not faulted in (@len: not even one byte can be).
 * May wait for: the caller's own page fault, with only the caller's
 * mmap_lock (read) held and no att or revocation lock (xpmem_copy.c calls
 * it outside revocation sections); on 5.10 the fault may drop that lock
 * and is killable (fixup_user_fault() with @unlocked).  A fault on an
 * attachment goes through our fault handler, which waits for the owner
 * killably, so the owner cannot make this sleep uninterruptible.  Before
 * fault_in_iov_iter_readable() and _writeable() (5.16; Kbuild:
 * XPMEM_HAVE_FAULT_IN_IOV_ITER), the bytes up to the end of the first
 * page of the first segment are faulted in (an iovec iterator: the only
 * kind the module builds there).
 */
static inline size_t xpmem_iov_iter_fault_in(struct iov_iter *iter,
					     size_t len, bool dest)
{
#ifdef XPMEM_HAVE_FAULT_IN_IOV_ITER
	return dest ? fault_in_iov_iter_writeable(iter, len) :
		      fault_in_iov_iter_readable(iter, len);
#else
	const struct iovec *iov = iter->iov;
	unsigned long nr = iter->nr_segs, addr;
	size_t skip = iter->iov_offset, n;
	int err;

	if (!iter_is_iovec(iter))
		return len;
	while (nr && skip >= iov->iov_len) {	/* consumed or empty */
		skip = 0;
		iov++;
		nr--;
	}
	if (!nr)
		return len;
	addr = (unsigned long)iov->iov_base + skip;
	n = min3(len, iov->iov_len - skip, PAGE_SIZE - offset_in_page(addr));
	if (dest) {
		/*
		 * With @unlocked the fault may drop the mmap_lock and wait
		 * (FAULT_FLAG_ALLOW_RETRY): userfaultfd, for one, refuses a
		 * fault that may not.
		 */
		bool unlocked = false;

		mmap_read_lock(current->mm);
		err = fixup_user_fault(current->mm, addr, FAULT_FLAG_WRITE,
				       &unlocked);
		mmap_read_unlock(current->mm);
	} else {
		err = fault_in_pages_readable((const char __user *)addr, n);
	}
	return err ? len : len - n;
#endif
}

/*
 * PMD-sized attacher mappings (xpmem_fault.c) need a huge PMD that
 * get_user_pages() never follows and that a VM_MIXEDMAP VMA may hold:
 * the special ("pfnmap") PMDs of 6.12, which vmf_insert_pfn_pmd() makes
 * on architectures with CONFIG_ARCH_SUPPORTS_PMD_PFNMAP (a symbol that
 * exists only where the feature does), with ->huge_fault(vmf, order) and
 * mm_get_unmapped_area().  6.1 maps 4 KiB PTEs only: its
 * vmf_insert_pfn_pmd() wants VM_PFNMAP, which attachments cannot be.
 */
#if defined(CONFIG_TRANSPARENT_HUGEPAGE) && \
	defined(CONFIG_ARCH_SUPPORTS_PMD_PFNMAP)
#define XPMEM_HAVE_HUGE_PFNMAP	1
#endif

/*
 * A special PTE of @pfn at @addr in a VM_MIXEDMAP VMA, mapped with the
 * VMA's page protection; an existing PTE stays.  vmf_insert_mixed()
 * takes a pfn_t until 7.x, the PFN itself after (XPMEM_HAVE_PFN_T).
 */
#ifdef XPMEM_HAVE_PFN_T
#include <linux/pfn_t.h>
#endif

static inline vm_fault_t xpmem_insert_mixed(struct vm_area_struct *vma,
					    unsigned long addr,
					    unsigned long pfn)
{
#ifdef XPMEM_HAVE_PFN_T
	return vmf_insert_mixed(vma, addr, pfn_to_pfn_t(pfn));
#else
	return vmf_insert_mixed(vma, addr, pfn);
#endif
}

/*
 * The pages a revoked ZERO_REVOKED attachment takes writes into are
 * mapped as ordinary pages (vm_insert_page(), xpmem_zero.c).  Until 5.11 a
 * page allocated with __GFP_ACCOUNT carries a page type (PG_kmemcg, a
 * macro only there) in the word that counts its mappings, and
 * vm_insert_page() refuses it: there such a page is not charged to the
 * memory cgroup, and counts in the RSS and the per-user limit only.
 */
#ifdef PG_kmemcg
#define XPMEM_GFP_USER_PAGE	GFP_HIGHUSER
#else
#define XPMEM_GFP_USER_PAGE	(GFP_HIGHUSER | __GFP_ACCOUNT)
#endif

/*
 * A huge PMD of @pfn for @vmf.  pfn_t (and <linux/pfn_t.h>) went away in
 * 7.x: vmf_insert_pfn_pmd() takes the PFN itself (Kbuild looks for the
 * header: XPMEM_HAVE_PFN_T).
 */
#ifdef XPMEM_HAVE_HUGE_PFNMAP
static inline vm_fault_t xpmem_insert_pfn_pmd(struct vm_fault *vmf,
					      unsigned long pfn, bool write)
{
#ifdef XPMEM_HAVE_PFN_T
	return vmf_insert_pfn_pmd(vmf, pfn_to_pfn_t(pfn), write);
#else
	return vmf_insert_pfn_pmd(vmf, pfn, write);
#endif
}

/*
 * An address for @len bytes in the current mm, as mmap() would choose it
 * for anonymous memory.  mm_get_unmapped_area() lost its mm argument in
 * 7.x (Kbuild: XPMEM_HAVE_MM_GET_UNMAPPED_AREA_MM).
 */
static inline unsigned long xpmem_get_unmapped_area(unsigned long addr,
						    unsigned long len,
						    unsigned long flags)
{
#ifdef XPMEM_HAVE_MM_GET_UNMAPPED_AREA_MM
	return mm_get_unmapped_area(current->mm, NULL, addr, len, 0, flags);
#else
	return mm_get_unmapped_area(NULL, addr, len, 0, flags);
#endif
}
#endif /* XPMEM_HAVE_HUGE_PFNMAP */

/*
 * A writable, dirty PTE for a VMA that is never a shadow stack.  From 6.6
 * pte_mkwrite() takes the VMA and is out of line on x86 (not exported);
 * pte_mkwrite_novma() is what it does for every other VMA.  Made writable
 * before dirty: with user shadow stacks, x86 keeps the dirty bit of a
 * read-only PTE elsewhere.  XPMEM_HAVE_PTE_MKWRITE_NOVMA comes from Kbuild.
 */
static inline pte_t xpmem_pte_mkwrite_dirty(pte_t pte)
{
#ifdef XPMEM_HAVE_PTE_MKWRITE_NOVMA
	return pte_mkdirty(pte_mkwrite_novma(pte));
#else
	return pte_mkdirty(pte_mkwrite(pte));
#endif
}

/*
 * A PMD read once, without its lock (pmdp_get_lockless(), 6.5; Kbuild:
 * XPMEM_HAVE_PMDP_GET_LOCKLESS).  A PMD is one word on the 64-bit
 * architectures the module builds for, so READ_ONCE() is the same there.
 */
static inline pmd_t xpmem_pmdp_get_lockless(pmd_t *pmdp)
{
#ifdef XPMEM_HAVE_PMDP_GET_LOCKLESS
	return pmdp_get_lockless(pmdp);
#else
	return READ_ONCE(*pmdp);
#endif
}

/* User shadow stacks (6.6): attachments never mirror them. */
#ifndef VM_SHADOW_STACK
#define VM_SHADOW_STACK		VM_NONE
#endif

/*
 * put_ipc_ns() is exported only from 6.3 on; the namespace's own
 * operations drop the reference the same way on every version.
 */
static inline void xpmem_put_ipc_ns(struct ipc_namespace *ns)
{
#ifdef CONFIG_IPC_NS
	ns->ns.ops->put(&ns->ns);
#endif
}

/*
 * pin_user_pages_remote() lost its vmas argument in 6.5 (Kbuild looks for
 * it: XPMEM_HAVE_GUP_VMAS).  Called with the mmap_lock held and no
 * "locked" pointer, so it never drops the lock.
 */
static inline long xpmem_pin_user_pages_remote(struct mm_struct *mm,
					       unsigned long start,
					       unsigned long nr,
					       unsigned int gup_flags,
					       struct page **pages)
{
#ifdef XPMEM_HAVE_GUP_VMAS
	return pin_user_pages_remote(mm, start, nr, gup_flags, pages, NULL,
				     NULL);
#else
	return pin_user_pages_remote(mm, start, nr, gup_flags, pages, NULL);
#endif
}

/*
 * io_uring commands: file_operations.uring_cmd (5.19; Kbuild looks for it:
 * XPMEM_HAVE_URING_CMD).  Without it the module has no io_uring commands
 * and QUERY does not report them (XPMEM_URING_CMDS is 0).  struct
 * io_uring_cmd moved to <linux/io_uring/cmd.h> (6.7), and its 16-byte
 * command area, a copy of the SQE's in 6.1 (ioucmd->cmd), is reached
 * through the SQE from 6.6 on, with the area's type from 7.x (Kbuild
 * looks for each).
 */
struct io_uring_cmd;
struct iov_iter;

#ifdef XPMEM_HAVE_URING_CMD
#define XPMEM_URING_CMDS	IS_ENABLED(CONFIG_IO_URING)

#ifdef XPMEM_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

static inline const struct xpmem_ext_uring_cmd *
xpmem_uring_cmd_area(struct io_uring_cmd *ioucmd)
{
#if defined(XPMEM_HAVE_IO_URING_SQE_CMD_TYPE)
	return io_uring_sqe_cmd(ioucmd->sqe, struct xpmem_ext_uring_cmd);
#elif defined(XPMEM_HAVE_IO_URING_SQE_CMD)
	return io_uring_sqe_cmd(ioucmd->sqe);
#else
	return (const void *)ioucmd->cmd;
#endif
}

/*
 * The result of an io_uring command that ->uring_cmd() returns.  From
 * 6.7 (<linux/io_uring/cmd.h>) io_uring posts any result returned.  6.1
 * posts 0 and errors, but a positive result returned from an io_uring
 * worker is lost (the request never completes) and one returned inline
 * fails the request's links: it has to go through io_uring_cmd_done(),
 * and the command reports -EIOCBQUEUED (done already).  Later 6.1
 * releases gave io_uring_cmd_done() the issue flags (Kbuild looks:
 * XPMEM_HAVE_URING_CMD_DONE_FLAGS).
 */
static inline int xpmem_uring_result(struct io_uring_cmd *ioucmd,
				     ssize_t ret, unsigned int issue_flags)
{
#ifndef XPMEM_HAVE_IO_URING_CMD_H
	if (ret > 0) {
#ifdef XPMEM_HAVE_URING_CMD_DONE_FLAGS
		io_uring_cmd_done(ioucmd, ret, 0, issue_flags);
#else
		io_uring_cmd_done(ioucmd, ret, 0);
#endif
		return -EIOCBQUEUED;
	}
#endif
	return ret;
}
#else
#define XPMEM_URING_CMDS	0
#endif /* XPMEM_HAVE_URING_CMD */

/*
 * Copies to and from a ring's registered buffers (IORING_URING_CMD_FIXED,
 * 6.1; Kbuild: XPMEM_HAVE_URING_CMD_FIXED).  io_uring_cmd_import_fixed()
 * takes the issue flags from 6.16 on (Kbuild:
 * XPMEM_HAVE_URING_IMPORT_FLAGS): it locks the ring's buffer table unless
 * the issue holds the ring's lock.
 */
#if XPMEM_URING_CMDS && defined(XPMEM_HAVE_URING_CMD_FIXED)
#define XPMEM_URING_FIXED	1

static inline bool xpmem_uring_cmd_fixed(struct io_uring_cmd *ioucmd)
{
	return ioucmd->flags & IORING_URING_CMD_FIXED;
}

static inline int xpmem_uring_import_fixed(struct io_uring_cmd *ioucmd,
					   u64 ubuf, unsigned long len,
					   int rw, struct iov_iter *iter,
					   unsigned int issue_flags)
{
#ifdef XPMEM_HAVE_URING_IMPORT_FLAGS
	return io_uring_cmd_import_fixed(ubuf, len, rw, iter, ioucmd,
					 issue_flags);
#else
	return io_uring_cmd_import_fixed(ubuf, len, rw, iter, ioucmd);
#endif
}
#else
#define XPMEM_URING_FIXED	0

static inline bool xpmem_uring_cmd_fixed(struct io_uring_cmd *ioucmd)
{
	return false;
}

static inline int xpmem_uring_import_fixed(struct io_uring_cmd *ioucmd,
					   u64 ubuf, unsigned long len,
					   int rw, struct iov_iter *iter,
					   unsigned int issue_flags)
{
	return -EOPNOTSUPP;
}
#endif

#endif /* _XPMEM_COMPAT_H */
