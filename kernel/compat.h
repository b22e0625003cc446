/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - the kernel-version differences xpmem.ko cares about, in one
 * place.  Supported: 6.1 (Debian 12 stock) up to 6.12.
 */
#ifndef _XPMEM_COMPAT_H
#define _XPMEM_COMPAT_H

#include <linux/version.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
/* vm_flags became read-only behind these helpers in 6.3. */
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
 * Zapping attacher PTEs from inside an owner's mmu notifier callback calls
 * the attacher mm's own notifiers, a different mm.  Lockdep models every
 * invalidate_range_start section as one lock, so it would report that
 * nesting as recursion.  The nesting is bounded (each level is another
 * mm's invalidation of attacher mappings and takes no lock that the outer
 * level holds), so tell lockdep about it around the zap.
 */
#ifdef CONFIG_LOCKDEP
static inline void xpmem_nested_invalidate_begin(void)
{
	lock_map_release(&__mmu_notifier_invalidate_range_start_map);
}

static inline void xpmem_nested_invalidate_end(void)
{
	lock_map_acquire(&__mmu_notifier_invalidate_range_start_map);
}
#else
static inline void xpmem_nested_invalidate_begin(void) { }
static inline void xpmem_nested_invalidate_end(void) { }
#endif

#endif /* _XPMEM_COMPAT_H */
