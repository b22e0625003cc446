/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - the kernel-version differences xpmem.ko cares about, in one
 * place.  Supported: 6.1 (Debian 12 stock) up to 6.12.
 */
#ifndef _XPMEM_COMPAT_H
#define _XPMEM_COMPAT_H

#include <linux/ipc_namespace.h>
#include <linux/mm.h>
#include <linux/proc_ns.h>

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
 * io_uring commands: struct io_uring_cmd moved to <linux/io_uring/cmd.h>
 * (6.7), and its 16-byte command area, a copy of the SQE's in 6.1
 * (ioucmd->cmd), is reached through the SQE from 6.6 on (Kbuild looks for
 * both).
 */
#ifdef XPMEM_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

static inline const void *xpmem_uring_cmd_area(struct io_uring_cmd *ioucmd)
{
#ifdef XPMEM_HAVE_IO_URING_SQE_CMD
	return io_uring_sqe_cmd(ioucmd->sqe);
#else
	return ioucmd->cmd;
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

#endif /* _XPMEM_COMPAT_H */
