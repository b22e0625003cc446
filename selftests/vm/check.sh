#!/bin/bash
# Usage: selftests/vm/check.sh KERNEL...   (make check KERNELS="debian-6.1 ...")
#
# `make check`: host tests, the man-page and package checks, then the QEMU
# runner on each kernel, then one summary.  The very last line printed is "N passed, N failed, N skipped",
# summed over the host tests and every kernel; exit status 1 if anything
# failed (a failed build, a VM timeout and console findings count too).
#
# SUITES="word ..." in the environment restricts the VM suites to those
# whose name contains a word (host tests always run).  MPI_KERNEL names the
# kernel of the MPI run (run.sh --mpi; default debian-6.12, empty: none).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
B=${B:-build}
export B
t0=$(date +%s)
tp=0 tf=0 ts=0
summary=()
# elapsed: seconds since the start, for the progress lines (CI's time
# budget is judged on the whole run; these show where it goes).
elapsed() { echo "+$(( $(date +%s) - t0 ))s"; }

add() { # add LABEL RESULTFILE RC
	local label=$1 f=$2 rc=$3 p=0 fl=0 s=0 w=0
	if [ -f "$f" ]; then read -r p fl s w < "$f"; fi
	if [ "$rc" != 0 ] && [ "$fl" = 0 ]; then fl=1; fi  # failed before judging
	tp=$((tp + p)) tf=$((tf + fl)) ts=$((ts + s))
	summary+=("$(printf '%-14s %4d passed, %3d failed, %3d skipped  (%ss)' "$label" "$p" "$fl" "$s" "$w")")
}

# add_script LABEL LOG CMD...: a check script that ends with a line
# "N passed, N failed"; a script that fails without counting counts once.
add_script() {
	local label=$1 log=$2 t
	shift 2
	t=$(date +%s)
	mkdir -p "$(dirname "$log")"
	"$@" 2>&1 | tee "$log"
	script_counted "$label" "$log" "${PIPESTATUS[0]}" "$t"
}

# script_counted LABEL LOG RC START: count a check script's log.
script_counted() {
	local label=$1 log=$2 rc=$3 t=$4 p=0 fl=0 last
	last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [ -n "$last" ]; then
		p=${last%% passed*}
		fl=${last#*passed, }; fl=${fl%% failed*}
	elif [ "$rc" = 0 ]; then
		p=1
	fi
	mkdir -p "$B/results"
	echo "$p $fl 0 $(( $(date +%s) - t ))" > "$B/results/$label"
	add "$label" "$B/results/$label" "$rc"
}

# The test kernels built from source are built in the background, one
# after the other, while the host tests and the VM runs go on: the build
# runs at nice 19 (build-kernel.sh) in this session, so it takes the CPU
# time the VMs leave idle and little else.  The x86_64 ones first (the
# package check builds the module against them with dkms), the arm64 ones
# last.  Each build leaves $B/results/build-NAME (its exit status) when
# done; a VM run of a source kernel waits for its own.  A kernel that fails
# to build fails its VM run (run.sh tries again and says why).
src_kernels=() x86_src=()
for k in "$@"; do
	case "$k" in debug-* | bullseye-* | sid-*) x86_src+=("$k") ;; esac
done
src_kernels=(${x86_src[@]+"${x86_src[@]}"})
for k in "$@"; do
	case "$k" in arm64-*) src_kernels+=("$k") ;; esac
done
mkdir -p "$B/results"
for k in ${src_kernels[@]+"${src_kernels[@]}"}; do rm -f "$B/results/build-$k"; done
if [ ${#src_kernels[@]} -gt 0 ]; then
	(
		for k in "${src_kernels[@]}"; do
			echo "check: $(elapsed): build of $k started" > "$B/results/build-$k.log"
			selftests/vm/build-kernel.sh "$k" "$B/$k" >> "$B/results/build-$k.log" 2>&1
			st=$?
			echo "check: $(elapsed): build of $k ended (status $st)" >> "$B/results/build-$k.log"
			echo $st > "$B/results/build-$k.tmp"
			mv "$B/results/build-$k.tmp" "$B/results/build-$k"
		done
	) &
	builds=$!
fi
built() {	# built NAME: wait for the background build of NAME; its status
	while [ ! -f "$B/results/build-$1" ]; do
		kill -0 "$builds" 2>/dev/null || return 1
		sleep 5
	done
	sed 's/^/  /' "$B/results/build-$1.log" | tail -n 6
	return "$(cat "$B/results/build-$1")"
}

hosts=()
for f in "$B"/host/selftests/*; do [ -f "$f" ] && [ -x "$f" ] && hosts+=("$f"); done
rm -f "$B/host/result"
selftests/vm/run-host-tests.sh "$B/host" "${hosts[@]}"
add host "$B/host/result" $?

# Man pages (man/check.sh: man --warnings, lexgrog, .so links).
add_script man "$B/results/man.log" sh man/check.sh
# Docs: references that resolve, no issue numbers (selftests/doc-check.py).
add_script doc "$B/results/doc.log" python3 selftests/doc-check.py

vm_run() {	# vm_run KERNEL: one kernel's suites in QEMU, counted
	local k=$1
	rm -f "$B/results/$k"
	local nobuild=1
	# `make check` built the x86_64 userspace; run.sh cross-builds the
	# arm64 one itself.
	case "$k" in arm64-*) nobuild= ;; esac
	echo "check: $(elapsed): $k: VM run starts"
	# shellcheck disable=SC2086  # SUITES: words, each a filter
	NO_BUILD=$nobuild RESULT_FILE=$B/results/$k selftests/vm/run.sh "$k" ${SUITES:-}
	add "$k" "$B/results/$k" $?
}

# mpi_run KERNEL: Debian's Open MPI over UCX's xpmem transport
# (run.sh --mpi), counted as "mpi"; run after KERNEL's suites when
# MPI_KERNEL (default debian-6.12) is one of the kernels.
mpi_run() {
	local k=$1
	rm -f "$B/results/mpi"
	echo "check: $(elapsed): $k: MPI run starts"
	NO_BUILD=1 RESULT_FILE=$B/results/mpi selftests/vm/run.sh --mpi "$k"
	add mpi "$B/results/mpi" $?
}
mpi_kernel=${MPI_KERNEL-debian-6.12}

# Debian's kernels first (nothing to build), then each source kernel once
# built.  The package check (build, lintian, install into a scratch root,
# a classic program through pkg-config, dkms build for both Debian kernels
# and for the last x86_64 kernel built from source, the newest: the VM runs
# build the module for every kernel already, dkms adds only its own
# invocation, the same for every tree; the RPMs) runs at nice 19 in the
# background from the moment the last x86_64 source kernel is built (from
# the start without one): it is mostly single-threaded (lintian, dpkg,
# rpmbuild) and fills a core the VM runs leave idle.  Its log is printed
# and counted at the end.
trees=()
pkg_pid=
pkg_t=
pkg_start() {
	[ -z "$pkg_t" ] || return 0
	pkg_t=$(date +%s)
	[ -x selftests/pkg/check.sh ] || return 0
	echo "check: $(elapsed): package check started in the background ($B/results/pkg.log)"
	# at nice 19, as the kernel builds: the VM runs come first
	DKMS_TREES="${trees[*]}" nice -n 19 selftests/pkg/check.sh > "$B/results/pkg.log" 2>&1 &
	pkg_pid=$!
}
pkg_finish() {
	local rc
	pkg_start
	[ -n "$pkg_pid" ] || return 0
	wait "$pkg_pid"
	rc=$?
	echo "==== package check (ran in the background; ended at $(elapsed)) ===="
	cat "$B/results/pkg.log"
	script_counted pkg "$B/results/pkg.log" "$rc" "$pkg_t"
}
last_x86=
[ ${#x86_src[@]} = 0 ] && pkg_start
[ ${#x86_src[@]} = 0 ] || last_x86=${x86_src[${#x86_src[@]}-1]}
for k in "$@"; do
	case "$k" in
	debug-* | bullseye-* | sid-* | arm64-*)
		echo "check: $(elapsed): waiting for the build of $k ($B/results/build-$k.log)"
		if built "$k" && [ "$k" = "$last_x86" ]; then
			case "$B" in
			/*) trees+=("$B/$k/linux-source-${k##*-}") ;;
			*) trees+=("$top/$B/$k/linux-source-${k##*-}") ;;
			esac
		fi
		[ "$k" = "$last_x86" ] && pkg_start ;;
	esac
	vm_run "$k"
	[ "$k" != "$mpi_kernel" ] || mpi_run "$k"
done
pkg_finish
[ -z "${builds:-}" ] || wait "$builds"

echo
echo "==== summary (VM wall time per kernel; total $(( $(date +%s) - t0 ))s) ===="
for l in "${summary[@]}"; do echo "$l"; done
echo "$tp passed, $tf failed, $ts skipped"
[ "$tf" = 0 ]
