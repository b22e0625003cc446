#!/bin/busybox sh
# Usage: /fault-profile.sh XPMEM-BENCH-ARGS...   (in the test VM)
#
# Where an attachment's first pass spends its time, seen from the guest
# kernel (run by init.sh in --bench mode when BENCH_PROFILE is set).
#
# Runs xpmem-bench once more with the function_graph tracer following only
# the module's fault handlers and the kernel functions they spend their
# time in, then prints one table: per function, calls, total and mean
# duration, and share of the time in the handlers.  Tracing slows every
# traced call, so the shares matter, not the absolute times; the bench
# output of the same run (first pass wall time, faults) is printed too.
# Then the same bench, untraced, with fault_window_pages at 1, 16, 64 and
# 512 pages (the module parameter is writable at run time).
# shellcheck shell=dash
set -u
# shellcheck source=selftests/vm/trace-lib.sh
. "$(dirname "$0")/trace-lib.sh"

# Entry points, then what they call that can take time.  Functions a
# kernel does not have (or inlines) are skipped.
top="xpmem_fault_vma_fault xpmem_fault_vma_mkwrite xpmem_fault_vma_huge_fault"
inner="hmm_range_fault vmf_insert_mixed vmf_insert_pfn_pmd apply_to_page_range
	mmu_interval_read_begin folio_mark_dirty folio_mark_accessed
	xpmem_zap_att mmput_async mutex_lock __kmalloc_noprof __kmalloc kfree"

trace_setup fault-profile "$top" "$inner" || exit 1

echo 1 > $TR/tracing_on
(cd /tmp && XPMEM_BACKEND=kernel /tools/xpmem-bench "$@" > /tmp/profile-bench.txt)
rc=$?
echo 0 > $TR/tracing_on
echo "xpmem-bench $* (traced) exit status $rc"
grep -E '^(==|xpmem read 1st|xpmem write 1st|xpmem read 2nd|faults/MiB|pages_mapped)' \
	/tmp/profile-bench.txt
trace_overrun
trace_table 24 "$top" "the fault handlers"
trace_reset

# The fault_window_pages default: the same bench, untraced, per window.
P=/sys/module/xpmem/parameters/fault_window_pages
[ -w $P ] || { echo "fault-profile: no $P"; exit 1; }
saved=$(cat $P)
echo "fault_window_pages sweep (untraced), xpmem-bench $*:"
for w in 1 16 64 512; do
	echo $w > $P
	(cd /tmp && XPMEM_BACKEND=kernel /tools/xpmem-bench "$@" > /tmp/profile-w.txt) ||
		{ echo "xpmem-bench failed with fault_window_pages=$w"; rc=1; }
	grep -E '^(==|xpmem read 1st|xpmem write 1st|faults/MiB)' /tmp/profile-w.txt |
		sed "s/^/window $w: /"
done
echo "$saved" > $P
exit $rc
