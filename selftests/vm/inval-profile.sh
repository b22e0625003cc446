#!/bin/busybox sh
# shellcheck shell=dash
# Where an owner's invalidation of attached memory spends its time, seen
# from the guest kernel (run by init.sh in --scale mode with SCALE_PROFILE=1).
#
# Usage (in the VM): inval-profile.sh [XPMEM-SCALE-ARGS...]
#   (default: -n 2,8 -r 7, no churn)
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
set -u
TR=/sys/kernel/tracing
[ -d $TR/options ] || mount -t tracefs tracefs $TR 2>/dev/null
[ -d $TR/options ] || { echo "inval-profile: no tracefs"; exit 1; }
grep -q function_graph $TR/available_tracers ||
	{ echo "inval-profile: no function_graph tracer"; exit 1; }
[ $# -gt 0 ] || set -- -n 2,8 -r 7

top="__x64_sys_madvise __x64_sys_munmap xpmem_zap_work"
inner="xpmem_att_invalidate xpmem_omm_note xpmem_omm_range_start
	xpmem_omm_range_end xpmem_att_zap xpmem_zap_run
	do_vmi_align_munmap __split_vma __split_huge_pmd unmap_vmas free_pgtables
	mutex_lock __mmu_notifier_invalidate_range_start
	__mmu_notifier_invalidate_range_end mn_itree_invalidate
	unmap_mapping_range unmap_mapping_pages zap_page_range_single
	unmap_page_range tlb_finish_mmu flush_tlb_mm_range
	queue_work_on wait_for_completion __wake_up __kmalloc_noprof
	__kmalloc_cache_noprof kfree xa_find mmap_read_lock
	down_read i_mmap_lock_read"

echo nop > $TR/current_tracer
echo > $TR/trace
: > $TR/set_ftrace_filter
: > $TR/set_graph_function
for f in $top; do
	echo "$f" >> $TR/set_graph_function 2>/dev/null
	echo "$f" >> $TR/set_ftrace_filter 2>/dev/null
done
for f in $inner; do
	echo "$f" >> $TR/set_ftrace_filter 2>/dev/null
done
echo 32768 > $TR/buffer_size_kb
echo 0 > $TR/options/funcgraph-irqs 2>/dev/null
echo 1 > $TR/options/funcgraph-tail 2>/dev/null
echo 0 > $TR/options/funcgraph-proc 2>/dev/null
echo function_graph > $TR/current_tracer
echo "traced: $(tr '\n' ' ' < $TR/set_ftrace_filter)"

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
	overrun=$(awk '/overrun:/ { s += $2 } END { print s + 0 }' $TR/per_cpu/cpu*/stats)
	[ "$overrun" = 0 ] || echo "note: $overrun trace events lost (buffer overrun)"
	awk '
	/ us +\|/ {
		line = $0
		name = ""
		if (match(line, /\} \/\* [^ ]+/))
			name = substr(line, RSTART + 5, RLENGTH - 5)
		else if (match(line, /\| +[A-Za-z_0-9.]+\(\);/)) {
			name = substr(line, RSTART, RLENGTH)
			sub(/^\| +/, "", name); sub(/\(\);$/, "", name)
		}
		if (name == "")
			next
		sub(/ us +\|.*/, "", line)
		k = split(line, w, " ")
		d = w[k] + 0
		calls[name]++
		tot[name] += d
		if (name == "__x64_sys_madvise" || name == "__x64_sys_munmap")
			alltop += d
	}
	END {
		printf "%-40s %9s %12s %10s %8s\n", "function", "calls", "total us", "mean us", "share"
		for (f in calls)
			printf "%-40s %9d %12.0f %10.2f %7.1f%%\n", f, calls[f], tot[f],
				tot[f] / calls[f], alltop ? 100 * tot[f] / alltop : 0 | "sort -k3 -n -r"
		close("sort -k3 -n -r")
		printf "(share: of the %.0f us spent in madvise() and munmap())\n", alltop
	}' $TR/trace
done
echo nop > $TR/current_tracer
echo 1408 > $TR/buffer_size_kb
exit 0
