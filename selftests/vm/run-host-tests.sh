#!/bin/bash
# Usage: selftests/vm/run-host-tests.sh OUTDIR [TEST-BINARY...]
#
# Run the host-side suites (selftests/lib_*.c, selftests/host_*.c built with
# ASan+UBSan into build/host/selftests/) with XPMEM_BACKEND=shm.
#
# Each suite runs under `timeout` (SUITE_TIMEOUT, default 300 s) in its own
# temporary directory; logs go to OUTDIR/logs/<name>.log.  Counting follows
# the kselftest "# Totals:" line; a suite that crashes, times out, exits
# non-zero without a counted failure, or prints no Totals line counts as one
# failure.  Then, where Open MPI's mpirun and the build's
# tools/xpmem-mpi-bench exist, the benchmark on two ranks with small sizes
# (whatever transport the MPI library picks; every byte is checked) counts
# as one test.  Writes "PASS FAIL SKIP SECONDS" to OUTDIR/result.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [TEST...]" >&2; exit 1; }
out=$1; shift
mkdir -p "$out/logs"
suite_timeout=${SUITE_TIMEOUT:-300}
# The build dir is the parent of OUTDIR (build/host); host_build needs it.
build_dir=$(cd "$out/.." && pwd)
pass=0 fail=0 skip=0
t0=$(date +%s)
bad() { echo "  FAIL  $*"; fail=$((fail + 1)); }

echo "---- host: $# suite(s), XPMEM_BACKEND=shm, ASan+UBSan ----"
for t in "$@"; do
	n=$(basename "$t")
	log=$out/logs/$n.log
	dir=$(mktemp -d "${TMPDIR:-/tmp}/xpmem-host-$n.XXXXXX")
	abs=$(cd "$(dirname "$t")" && pwd)/$n
	set +e
	(cd "$dir" && XPMEM_BACKEND=shm XPMEM_BUILD_DIR="$build_dir" \
		ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1} \
		UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		timeout -k 5 "$suite_timeout" "$abs") > "$log" 2>&1
	rc=$?
	set -e
	rm -rf "$dir"
	tot=$(grep '^# Totals:' "$log" | tail -n 1 || true)
	if [ -z "$tot" ]; then
		bad "$n: no '# Totals:' line (rc=$rc), log $log"
		tail -n 15 "$log" | sed 's/^/          /'
		continue
	fi
	get() { printf '%s\n' "$tot" | sed -n "s/.*[ :]$1:\([0-9]*\).*/\1/p"; }
	sp=$(get pass) sf=$(get fail) sx=$(get xfail) sxp=$(get xpass) ss=$(get skip) se=$(get error)
	np=$((${sp:-0} + ${sx:-0})) nf=$((${sf:-0} + ${sxp:-0} + ${se:-0})) ns=${ss:-0}
	pass=$((pass + np)) fail=$((fail + nf)) skip=$((skip + ns))
	line="$n: pass $np, fail $nf, skip $ns (rc=$rc)"
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		bad "$line: timed out after ${suite_timeout}s"
	elif grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log"; then
		bad "$line: sanitizer report in $log"
		grep -m 5 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log" | sed 's/^/          /'
	elif [ "$nf" = 0 ] && [ "$rc" != 0 ] && [ "$rc" != 4 ]; then
		bad "$line: non-zero exit without a counted failure"
	elif [ "$nf" != 0 ]; then
		echo "  FAIL  $line"
		grep -E '^not ok|^# .*(:Expected |Test terminated|Test failed|: Test exited)' "$log" | head -n 20 | sed 's/^/          /'
	else
		echo "  ok    $line"
	fi
done
# mpi_bench: xpmem-mpi-bench, 8 B to 64 KiB, 3 iterations a size.
mpi_bench() {
	local bench=$build_dir/tools/xpmem-mpi-bench log=$out/logs/xpmem-mpi-bench.log rc=0
	if [ ! -x "$bench" ] || ! command -v mpirun >/dev/null; then
		echo "  skip  xpmem-mpi-bench: no mpirun or no $bench (make mpi-bench)"
		skip=$((skip + 1))
		return 0
	fi
	timeout -k 5 "$suite_timeout" mpirun --allow-run-as-root --oversubscribe -np 2 \
		"$bench" -m 64K -n 3 > "$log" 2>&1 || rc=$?
	if [ "$rc" = 0 ] && grep -q '^# every transfer checked' "$log"; then
		echo "  ok    xpmem-mpi-bench: 2 ranks, 8 B to 64 KiB, every byte checked"
		pass=$((pass + 1))
	else
		bad "xpmem-mpi-bench (rc=$rc), log $log"
		tail -n 15 "$log" | sed 's/^/          /'
	fi
}
mpi_bench

secs=$(( $(date +%s) - t0 ))
echo "$pass $fail $skip $secs" > "$out/result"
echo "== host: $pass passed, $fail failed, $skip skipped (${secs}s)"
[ "$fail" = 0 ]
