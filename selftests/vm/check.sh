#!/bin/bash
# `make check`: host tests, the man-page and package checks, then the QEMU
# runner on each kernel, then one summary.  The very last line printed is "N passed, N failed, N skipped",
# summed over the host tests and every kernel; exit status 1 if anything
# failed (a failed build, a VM timeout and console findings count too).
#
# Usage: selftests/vm/check.sh KERNEL...   (make check KERNELS="debian-6.1 ...")
# SUITES="word ..." in the environment restricts the VM suites to those
# whose name contains a word (host tests always run).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
B=${B:-build}
export B
t0=$(date +%s)
tp=0 tf=0 ts=0
summary=()

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
	local label=$1 log=$2 t rc p=0 fl=0 last
	shift 2
	t=$(date +%s)
	mkdir -p "$(dirname "$log")"
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
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
# time the VMs leave idle and little else.  Each build leaves
# $B/results/build-NAME (its exit status) when done; a VM run of a source
# kernel waits for its own.  A kernel that fails to build fails its VM run
# (run.sh tries again and says why).
src_kernels=()
for k in "$@"; do
	case "$k" in debug-* | bullseye-* | sid-*) src_kernels+=("$k") ;; esac
done
mkdir -p "$B/results"
for k in "${src_kernels[@]}"; do rm -f "$B/results/build-$k"; done
if [ ${#src_kernels[@]} -gt 0 ]; then
	(
		for k in "${src_kernels[@]}"; do
			selftests/vm/build-kernel.sh "$k" "$B/$k" > "$B/results/build-$k.log" 2>&1
			echo $? > "$B/results/build-$k.tmp"
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
	sed 's/^/  /' "$B/results/build-$1.log" | tail -n 5
	return "$(cat "$B/results/build-$1")"
}

hosts=()
for f in "$B"/host/selftests/*; do [ -f "$f" ] && [ -x "$f" ] && hosts+=("$f"); done
rm -f "$B/host/result"
selftests/vm/run-host-tests.sh "$B/host" "${hosts[@]}"
add host "$B/host/result" $?

# Man pages (man/check.sh: man --warnings, lexgrog, .so links).
add_script man "$B/results/man.log" sh man/check.sh

vm_run() {	# vm_run KERNEL: one kernel's suites in QEMU, counted
	local k=$1
	rm -f "$B/results/$k"
	# shellcheck disable=SC2086  # SUITES: words, each a filter
	NO_BUILD=1 RESULT_FILE=$B/results/$k selftests/vm/run.sh "$k" ${SUITES:-}
	add "$k" "$B/results/$k" $?
}

# Debian's kernels first (nothing to build), then each source kernel once
# built; the package check (build, lintian, install into a scratch root,
# a classic program through pkg-config, dkms build for both Debian
# kernels and for each kernel built from source, the RPMs) once every
# build is done.
trees=()
pkg_done=0
pkg_check() {
	[ "$pkg_done" = 1 ] && return 0
	pkg_done=1
	[ -x selftests/pkg/check.sh ] || return 0
	add_script pkg "$B/results/pkg.log" env DKMS_TREES="${trees[*]}" selftests/pkg/check.sh
}
last_src=
[ ${#src_kernels[@]} = 0 ] || last_src=${src_kernels[${#src_kernels[@]}-1]}
for k in "$@"; do
	case "$k" in
	debug-* | bullseye-* | sid-*)
		echo "check: waiting for the build of $k ($B/results/build-$k.log)"
		if built "$k"; then
			case "$B" in
			/*) trees+=("$B/$k/linux-source-${k##*-}") ;;
			*) trees+=("$top/$B/$k/linux-source-${k##*-}") ;;
			esac
		fi
		[ "$k" = "$last_src" ] && pkg_check ;;
	esac
	vm_run "$k"
done
pkg_check
[ -z "${builds:-}" ] || wait "$builds"

echo
echo "==== summary (VM wall time per kernel; total $(( $(date +%s) - t0 ))s) ===="
for l in "${summary[@]}"; do echo "$l"; done
echo "$tp passed, $tf failed, $ts skipped"
[ "$tf" = 0 ]
