#!/bin/busybox sh
# Usage: /attach-profile.sh BENCH KIND SIZE [MODE]   (in the test VM, a
#        module loaded)
#   BENCH  the xpmem-bench program to run (/tools/xpmem-bench, or
#          /xpmem-bench-classic for the other module)
#   KIND   4k or thp;  SIZE  the cycles' window (e.g. 4M)
#   MODE   1 (default): record the functions listed below; deep: every
#          function the traced calls make, down to a depth of 7 (ATTACH
#          of the classic module: ioctl, attach, vm_mmap, ...), and static
#          functions the compiler kept (the rest count in their callers)
#
# Where ATTACH and DETACH spend their time, seen from the guest kernel (run
# by init-modes.sh in --bench mode with BENCH_CLASSIC and ATTACH_PROFILE=1 or deep,
# once per module).  Runs `BENCH -c -m KIND -s SIZE -r 1` (one new owner:
# its first attach, 16 miss cycles, one attach of 64 MiB) with the
# function_graph tracer following the modules' ioctl entries (this
# module's and the classic one's names; a kernel or module without a
# name skips it) and the workers of this module, and recording what they call that can take time.  Then
# prints, per kind of call - the first ATTACH of the new owner, the
# cycles' ATTACHes, the 64 MiB ATTACH, the cycles' DETACHes, the 64 MiB
# DETACH, the workers - the calls, the median time of
# one, and per function the median time within one such call (0 for a
# call that did not reach it) and its share of that median: medians, so
# that a call the host delayed (TCG) does not weigh.
# An ioctl that maps (vm_mmap) is an ATTACH, one that unmaps (vm_munmap) a
# DETACH; the attacher's first and last ATTACH and last DETACH are the
# first and the 64 MiB ones.  Tracing slows every traced call, so the
# shares matter, not the absolute times.
# shellcheck shell=dash
set -u
# shellcheck source=selftests/vm/trace-lib.sh
. "$(dirname "$0")/trace-lib.sh"
[ $# = 3 ] || [ $# = 4 ] || { echo "usage: $0 BENCH KIND SIZE [1|deep]"; exit 2; }
bench=$1 kind=$2 size=$3 mode=${4:-1}

# Entries: both modules' ioctl, this one's workers.
top="xpmem_main_ioctl xpmem_ioctl xpmem_mirror_settle_work xpmem_end_work"
inner="xpmem_main_ioctl_attach xpmem_main_ioctl_detach xpmem_attach_cmd
	xpmem_attach_create xpmem_attach_permit xpmem_attach_alloc
	xpmem_attach_mirror xpmem_owner_get xpmem_attach_link
	xpmem_attach_space xpmem_attach_place xpmem_main_attach_copy_out
	xpmem_detach_cmd xpmem_fault_vma_close xpmem_end_put
	xpmem_end_put_objects
	xpmem_mirror_defer xpmem_mirror_settle xpmem_zap_mapped_destroy
	xpmem_zero_att_destroy xpmem_permit_lookup
	mmu_notifier_get_locked __mmu_notifier_register mm_take_all_locks
	mm_drop_all_locks mmu_interval_notifier_insert
	mmu_interval_notifier_remove mmu_interval_read_begin
	queue_work_on cancel_work_sync simple_pin_fs simple_release_fs
	alloc_anon_inode new_inode alloc_file_pseudo iput fput
	__kvmalloc_node_noprof __kmalloc_noprof __kmalloc_cache_noprof
	kmalloc_trace_noprof kfree kvfree sigprocmask
	vm_mmap vm_mmap_pgoff do_mmap mmap_region __mmap_region
	__get_unmapped_area thp_get_unmapped_area
	xpmem_fault_get_unmapped_area vm_munmap do_vmi_munmap
	do_vmi_align_munmap unmap_vmas free_pgtables tlb_finish_mmu
	synchronize_srcu schedule vfs_kern_mount fc_mount alloc_super
	xpmem_attach_init_fs_context init_pseudo kill_anon_super
	xpmem_attach xpmem_detach xpmem_mmap xpmem_open_handler
	xpmem_close_handler xpmem_detach_att xpmem_clear_PTEs_of_att
	xpmem_tg_ref_by_apid xpmem_ap_ref_by_apid xpmem_validate_access
	xpmem_seg_down_read zap_vma_ptes zap_page_range_single find_vma
	mutex_lock down_write down_read"

trace_setup attach-profile "$top" "$inner" || exit 1
rows=16
if [ "$mode" = deep ]; then
	: > "$TR"/set_ftrace_filter
	echo 7 > "$TR"/max_graph_depth
	rows=45
	echo "deep: every function to a depth of 7 (tracing inflates the ones that call many)"
fi
echo 1 > "$TR"/options/funcgraph-proc 2>/dev/null

echo 1 > "$TR"/tracing_on
(cd /tmp && XPMEM_BACKEND=kernel "$bench" -c -m "$kind" -s "$size" -r 1 \
	> /tmp/aprof-bench.txt)
rc=$?
echo 0 > "$TR"/tracing_on
echo "== $bench -c -m $kind -s $size -r 1 (traced), exit status $rc"
grep -E '^(window|attach\+|  attach|  touch|  detach|first|single|  its)' /tmp/aprof-bench.txt
trace_overrun

# Lines: "CPU) comm-pid | DURATION us | name();" (a leaf),
# "CPU) comm-pid | | name() {" (an entry), "... | DURATION us | } /* name */".
# Per task: the open top call, its children's times; at its end, its class.
awk -v topl="$top" '
BEGIN { n = split(topl, t, " "); for (i = 1; i <= n; i++) istop[t[i]] = 1 }
# a module function is "name [module]"
function fname(s,    f) {
	if (match(s, /\} \/\* [^ ]+/))
		return substr(s, RSTART + 5, RLENGTH - 5)
	if (!match(s, /[A-Za-z_0-9.]+( \[[A-Za-z_0-9]+\])?\(\)/))
		return ""
	f = substr(s, RSTART, RLENGTH - 2)
	sub(/ .*/, "", f)
	return f
}
/\|/ {
	if (!match($0, /[^ ]+-[0-9]+ +\|/))
		next
	task = substr($0, RSTART, RLENGTH); sub(/ +\|$/, "", task)
	k = split($0, col, "|")
	fn = fname(col[k])
	if (fn == "")
		next
	d = -1
	if (match(col[k - 1], /[0-9.]+ us/))
		d = substr(col[k - 1], RSTART, RLENGTH - 3) + 0
	if (col[k] ~ /\{ *$/) {		# an entry
		if (!(task in open) && (fn in istop)) {
			open[task] = fn; nf[task] = 0; g[task]++
		}
		if (task in open)
			seen[task, g[task], fn] = 1
		next
	}
	leaf = 0
	if (!(task in open) && (fn in istop) && d >= 0) {	# a top call with no children
		open[task] = fn; nf[task] = 0; g[task]++; leaf = 1
	}
	if (!(task in open) || d < 0)
		next
	seen[task, g[task], fn] = 1
	if (!leaf && (fn != open[task] || col[k] !~ /\}/)) {
		nf[task]++; ff[task, nf[task]] = fn; fd[task, nf[task]] = d
		next
	}
	# the end of the top call: its class
	cls = fn
	if (fn ~ /ioctl$/) {
		if (seen[task, g[task], "vm_mmap"] || seen[task, g[task], "vm_mmap_pgoff"]) {
			na[task]++
			cls = na[task] == 1 ? "1 first ATTACH of the new owner" : "2 cycle ATTACH (or 64M)"
			last_att[task] = nb + 1
		} else if (seen[task, g[task], "vm_munmap"]) {
			cls = "4 cycle DETACH (or 64M)"; last_det[task] = nb + 1
		} else
			cls = "7 other ioctl (make, get, release, remove)"
	} else
		cls = "8 worker " fn
	nb++; bcls[nb] = cls; btot[nb] = d; bn[nb] = nf[task]
	for (i = 1; i <= nf[task]; i++) { bf[nb, i] = ff[task, i]; bd[nb, i] = fd[task, i] }
	delete open[task]
}
END {
	for (task in last_att) bcls[last_att[task]] = "3 single ATTACH of 64M"
	for (task in last_det) bcls[last_det[task]] = "5 DETACH of the 64M"
	for (b = 1; b <= nb; b++) {
		c = bcls[b]; cn[c]++; ct[c] += btot[b]; cv[c, cn[c]] = btot[b]
		for (i = 1; i <= bn[b]; i++) { pc[b, bf[b, i]] += bd[b, i]; fc[c, bf[b, i]]++; has[c, bf[b, i]] = 1 }
	}
	for (c in cn) order[c] = c
	m = asorti_cls(order, sorted)
	for (j = 1; j <= m; j++) {
		c = sorted[j]
		k = 0
		for (b = 1; b <= nb; b++) if (bcls[b] == c) v[++k] = btot[b]
		med = median(v, k)
		printf "\n== %s: %d calls, median %.1f us (traced)\n", substr(c, 3), cn[c], med
		printf "%-32s %9s %12s %8s\n", "function (median per call)", "calls", "us", "share"
		cmd = "sort -k3 -n -r | head -n " rows
		for (key in has) {
			split(key, kk, SUBSEP)
			if (kk[1] != c)
				continue
			k = 0
			for (b = 1; b <= nb; b++) if (bcls[b] == c) v[++k] = pc[b, kk[2]] + 0
			fm = median(v, k)
			printf "%-32s %9.1f %12.1f %7.1f%%\n", kk[2], fc[key] / cn[c],
				fm, med ? 100 * fm / med : 0 | cmd
		}
		close(cmd)
	}
	print "(per function: calls and median time within one call of that kind, summed over"
	print " nested calls too; share: of the kind'"'"'s median time)"
}
function median(a, n,    i, j, x) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { x = a[j]; a[j] = a[j - 1]; a[j - 1] = x }
	if (n == 0) return 0
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function asorti_cls(a, s,    k, i, j, x, n) {
	n = 0
	for (k in a) s[++n] = k
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && s[j - 1] > s[j]; j--) { x = s[j]; s[j] = s[j - 1]; s[j - 1] = x }
	return n
}' rows="$rows" "$TR"/trace
echo "== the trace around its first vm_mmap (the first ATTACH)"
awk '/vm_mmap/ && !at { at = NR } { l[NR] = $0 }
	END { for (i = at - 40; at && i <= at + 25; i++) if (i > 0 && i in l) print l[i] }' "$TR"/trace
echo 0 > "$TR"/options/funcgraph-proc 2>/dev/null
echo 0 > "$TR"/max_graph_depth
trace_reset
exit $rc
