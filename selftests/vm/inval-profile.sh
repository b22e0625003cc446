#!/bin/busybox sh
# Usage: /inval-profile.sh [XPMEM-SCALE-ARGS...]   (in the test VM)
#   (default: -n 2,8 -r 7, no churn)
#
# Where an owner's invalidation of attached memory spends its time, seen
# from the guest kernel (run by init.sh in --scale mode with SCALE_PROFILE=1).
#
# Runs xpmem-scale with the function_graph tracer following only
# madvise(), munmap() and the module's zap worker, recording the kernel
# functions an invalidation spends its time in (the module's callback,
# the core's notifier walk, the zap and its TLB flush, the worker round
# trip), then prints per function: calls, total and mean duration, and
# share of the time in madvise() and munmap().  Tracing slows every traced
# call, so the shares and the calls per invalidation matter, not the
# absolute times.  Functions a kernel does not have (or inlines) are
# skipped.
# shellcheck shell=dash
set -u
# shellcheck source=selftests/vm/trace-lib.sh
. "$(dirname "$0")/trace-lib.sh"
[ $# -gt 0 ] || set -- -n 2,8 -r 7

top="__x64_sys_madvise __x64_sys_munmap xpmem_zap_work"
inner="xpmem_mirror_invalidate xpmem_owner_note xpmem_owner_start
	xpmem_owner_end xpmem_zap_att xpmem_zap_run
	do_vmi_align_munmap __split_vma __split_huge_pmd unmap_vmas free_pgtables
	mutex_lock __mmu_notifier_invalidate_range_start
	__mmu_notifier_invalidate_range_end mn_itree_invalidate
	unmap_mapping_range unmap_mapping_pages zap_page_range_single
	unmap_page_range tlb_finish_mmu flush_tlb_mm_range
	queue_work_on wait_for_completion __wake_up __kmalloc_noprof
	__kmalloc_cache_noprof kfree xa_find mmap_read_lock
	down_read i_mmap_lock_read"

trace_setup inval-profile "$top" "$inner" || exit 1

for n in $(echo "$*" | sed -n 's/.*-n \([0-9,]*\).*/\1/p' | tr ',' ' '); do
	echo > $TR/trace
	echo 1 > $TR/tracing_on
	args=$(echo "$*" | sed "s/-n [0-9,]*/-n $n/")
	# shellcheck disable=SC2086 # a word list
	(cd /tmp && XPMEM_BACKEND=kernel /tools/xpmem-scale $args > /tmp/iprof-scale.txt)
	rc=$?
	echo 0 > $TR/tracing_on
	echo "== xpmem-scale $args (traced), exit status $rc"
	grep -E '^(MADV_DONTNEED|munmap)' /tmp/iprof-scale.txt
	trace_overrun
	trace_table 40 "__x64_sys_madvise __x64_sys_munmap" "madvise() and munmap()"
done
trace_reset
exit 0
