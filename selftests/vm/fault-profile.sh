#!/bin/busybox sh
# Where an attachment's first pass spends its time, seen from the guest
# kernel (run by init.sh in --bench mode when BENCH_PROFILE is set).
#
# Usage (in the VM): fault-profile.sh XPMEM-BENCH-ARGS...
#
# Runs xpmem-bench once more with the function_graph tracer following only
# the module's fault handlers and the kernel functions they spend their
# time in, then prints one table: per function, calls, total and mean
# duration, and share of the time in the handlers.  Tracing slows every
# traced call, so the shares matter, not the absolute times; the bench
# output of the same run (first pass wall time, faults) is printed too.
# Then the same bench, untraced, with fault_window_pages at 1, 16, 64 and
# 512 pages (the module parameter is writable at run time).
set -u
TR=/sys/kernel/tracing
[ -d $TR/options ] || mount -t tracefs tracefs $TR 2>/dev/null
[ -d $TR/options ] || { echo "fault-profile: no tracefs"; exit 1; }
grep -q function_graph $TR/available_tracers ||
	{ echo "fault-profile: no function_graph tracer"; exit 1; }

# Entry points, then what they call that can take time.  Functions a
# kernel does not have (or inlines) are skipped.
top="xpmem_att_fault xpmem_att_mkwrite xpmem_att_huge_fault"
inner="hmm_range_fault vmf_insert_mixed vmf_insert_pfn_pmd apply_to_page_range
	mmu_interval_read_begin folio_mark_dirty folio_mark_accessed
	xpmem_att_zap mmput_async mutex_lock __kmalloc_noprof __kmalloc kfree"

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

echo 1 > $TR/tracing_on
(cd /tmp && XPMEM_BACKEND=kernel /tools/xpmem-bench "$@" > /tmp/profile-bench.txt)
rc=$?
echo 0 > $TR/tracing_on
echo "xpmem-bench $* (traced) exit status $rc"
grep -E '^(==|xpmem read 1st|xpmem write 1st|xpmem read 2nd|faults/MiB|pages_mapped)' \
	/tmp/profile-bench.txt
overrun=$(awk '/overrun:/ { s += $2 } END { print s + 0 }' $TR/per_cpu/cpu*/stats)
[ "$overrun" = 0 ] || echo "note: $overrun trace events lost (buffer overrun)"

# function_graph lines: "CPU) [+!#] DURATION us | name();" for a leaf,
# "... | } /* name */" for the end of a call with children.
awk -v topl="$top" '
BEGIN { n = split(topl, t, " "); for (i = 1; i <= n; i++) istop[t[i]] = 1 }
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
	if (name in istop)
		alltop += d
}
END {
	printf "%-24s %9s %12s %10s %8s\n", "function", "calls", "total us", "mean us", "share"
	for (f in calls)
		printf "%-24s %9d %12.0f %10.2f %7.1f%%\n", f, calls[f], tot[f],
			tot[f] / calls[f], alltop ? 100 * tot[f] / alltop : 0 | "sort -k3 -n -r"
	close("sort -k3 -n -r")
	printf "(share: of the %.0f us spent in the fault handlers)\n", alltop
}' $TR/trace
echo nop > $TR/current_tracer
echo 1408 > $TR/buffer_size_kb

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
