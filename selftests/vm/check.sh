#!/bin/bash
# `make check`: host tests, then the QEMU runner on each kernel, then one
# summary.  The very last line printed is "N passed, N failed, N skipped",
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
	summary+=("$(printf '%-12s %4d passed, %3d failed, %3d skipped  (%ss)' "$label" "$p" "$fl" "$s" "$w")")
}

hosts=()
for f in "$B"/host/selftests/*; do [ -f "$f" ] && [ -x "$f" ] && hosts+=("$f"); done
rm -f "$B/host/result"
selftests/vm/run-host-tests.sh "$B/host" "${hosts[@]}"
add host "$B/host/result" $?

for k in "$@"; do
	mkdir -p "$B/results"
	rm -f "$B/results/$k"
	# shellcheck disable=SC2086  # SUITES: words, each a filter
	NO_BUILD=1 RESULT_FILE=$B/results/$k selftests/vm/run.sh "$k" ${SUITES:-}
	add "$k" "$B/results/$k" $?
done

echo
echo "==== summary (VM wall time per kernel; total $(( $(date +%s) - t0 ))s) ===="
for l in "${summary[@]}"; do echo "$l"; done
echo "$tp passed, $tf failed, $ts skipped"
[ "$tf" = 0 ]
