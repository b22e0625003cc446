#!/bin/bash
# Usage: selftests/vm/judge.sh OUTDIR
#
# Judge one run of selftests/vm/run.sh from what it left in OUTDIR
# (build/qemu/KERNEL): run.env (the run's settings and QEMU's exit status,
# written by run.sh), suites.txt (the suite runs the guest was given),
# results.log (the guest's result channel) and console.log.  Prints one
# line per finding ("  ok" or "  FAIL"), writes OUTDIR/result
# ("PASS FAIL SKIP WALLSECONDS") and ends with the line
# "== KERNEL: N passed, N failed, N skipped; ..."; exit status 1 if
# anything failed.  What counts:
#   - every suite's kselftest "# Totals:" line (pass/fail/skip summed; a
#     suite that crashes, times out, exits non-zero with no failure counted
#     or prints no Totals line counts as one failure);
#   - insmod and "rmmod after suites" count as one test each;
#   - every kernel BUG/WARNING/Oops/KASAN/lockdep/... line in the console
#     counts as one failure, and so does every hung-task ("blocked for more
#     than", after 20 s in the guest), soft/hard lockup and RCU stall report;
#   - a task the guest finds in D state after a suite (for 5 s) fails that
#     suite (its kernel stack is in the console log);
#   - kmemleak (debug kernel): each leaked object involving xpmem fails;
#   - VM wall-clock timeout or a VM that never reports DONE fails;
#   - --demo: each "xpmem-demo: SUCCESS" passes, a reported failure fails;
#     --bench and --scale: what selftests/vm/report.sh counts; --mpi: the
#     guest's RESULT lines (init-mpi.sh).
set -euo pipefail

vm=$(cd "$(dirname "$0")" && pwd)
[ $# = 1 ] || { sed -n '2p' "$0" >&2; exit 2; }
out=$1
# shellcheck source=/dev/null # written by run.sh
. "$out/run.env"

pass=0 fail=0 skip=0
bad() { echo "  FAIL  $*"; fail=$((fail + 1)); }

res=$out/results.clean
tr -d '\r' < "$out/results.log" > "$res" 2>/dev/null || : > "$res"

# judge_suites: each suite run of suites.txt, and insmod and rmmod if the
# initramfs had a module.
judge_suites() {
	local p n tmo block endl rc tm tot line sp sf sx sxp ss se np nf
	local -a expected=()
	while read -r p n tmo _; do
		case "$p" in kernel | fallback) expected+=("$p $n $tmo") ;; esac
	done < "$out/suites.txt"
	[ "$HAVE_MOD" = 1 ] && expected+=("RESULT insmod" "RESULT rmmod_after_suites"
		"RESULT rmmod_right_after_detach")
	for e in ${expected[@]+"${expected[@]}"}; do
		case "$e" in
		"RESULT "*)
			what=${e#RESULT }
			st=$(sed -n "s/^@@XPMEM RESULT $what //p" "$res" | tail -n 1)
			case "$st" in
			ok) echo "  ok    $what"; pass=$((pass + 1)) ;;
			fail) bad "$what" ;;
			*) bad "$what: not reported by the VM" ;;
			esac
			continue ;;
		esac
		read -r p n tmo <<< "$e"
		block=$(awk -v p="$p" -v n="$n" '
			$0 == "@@XPMEM BEGIN " p " " n { on = 1; next }
			on && index($0, "@@XPMEM END " p " " n " ") == 1 { print; exit }
			on { print }' "$res")
		endl=$(printf '%s\n' "$block" | grep '^@@XPMEM END ' || true)
		if [ -z "$endl" ]; then
			bad "$n [$p]: did not run to completion (VM crash or timeout?)"
			continue
		fi
		# tasks the guest found in D state after this suite
		while read -r _ _ _ _ dpid dcomm; do
			bad "$n [$p]: task $dpid ($dcomm) left in D state (stack in $out/console.log)"
		done < <(grep "^@@XPMEM DSTATE $p $n " "$res" || true)
		rc=$(printf '%s\n' "$endl" | sed -n 's/.* rc=\([0-9]*\).*/\1/p')
		tm=$(printf '%s\n' "$endl" | sed -n 's/.* time=\([0-9]*\).*/\1/p')
		tot=$(printf '%s\n' "$block" | grep '^# Totals:' | tail -n 1 || true)
		if [ -z "$tot" ]; then
			if [ "$rc" = 124 ]; then
				bad "$n [$p]: killed by the ${tmo}s suite timeout, no '# Totals:' line"
			else
				bad "$n [$p]: no '# Totals:' line (rc=$rc, ${tm}s)"
			fi
			continue
		fi
		sp=$(count pass) sf=$(count fail) sx=$(count xfail)
		sxp=$(count xpass) ss=$(count skip) se=$(count error)
		np=$((sp + sx)) nf=$((sf + sxp + se))
		pass=$((pass + np)) skip=$((skip + ss)) fail=$((fail + nf))
		line="$n [$p]: pass $np, fail $nf, skip $ss (rc=$rc, ${tm}s)"
		if [ "$rc" = 124 ]; then
			bad "$line: killed by the ${tmo}s suite timeout"
		elif [ "$nf" = 0 ] && [ "$rc" != 0 ] && [ "$rc" != 4 ]; then
			bad "$line: non-zero exit without a counted failure"
		elif [ "$nf" != 0 ]; then
			echo "  FAIL  $line"
			printf '%s\n' "$block" |
				grep -E '^not ok|^# .*(:Expected |Test terminated|Test failed|: Test exited)' |
				head -n 20 | sed 's/^/          /' || true
		else
			echo "  ok    $line"
		fi
	done
}
# count WORD: the number after WORD: in the suite's Totals line (tot), 0 if none.
count() {
	local v
	v=$(printf '%s\n' "$tot" | sed -n "s/.*[ :]$1:\([0-9]*\).*/\1/p")
	echo "${v:-0}"
}

# judge_demo: what the guest's userspace printed (kernel lines are
# timestamped), each successful demo, a reported failure.
judge_demo() {
	tr -d '\r' < "$out/console.log" | grep -vE '^\[ *[0-9]+\.[0-9]+\]' | sed 's/^/  | /'
	if grep -q 'SUCCESS' "$out/console.log"; then
		pass=$(grep -c 'xpmem-demo: SUCCESS' "$out/console.log")
	fi
	if grep -q 'xpmem-demo: FAILED' "$out/console.log"; then
		bad "the demo program reported a failure"
	fi
}

# judge_mpi: the --mpi mode's RESULT lines (selftests/vm/init-mpi.sh);
# each run's table and CSV into BENCH_DIR/KERNEL.mpi-LABEL.{txt,csv}, and
# BENCH_DIR/KERNEL.mpi-compare.txt: latency and bandwidth per run, side by
# side (one boot; not judged, TCG timings).
judge_mpi() {
	local what st l cmp=$BENCH_DIR/$KNAME.mpi-compare.txt
	for what in insmod ucx_info_xpmem mpi_sm_picks_xpmem \
		mpi_xpmem_root mpi_cma_root mpi_posix_root \
		mpi_xpmem_alice mpi_cma_alice mpi_posix_alice \
		mpi_no_leftovers rmmod nomod_xpmem_unavailable \
		nomod_sm_root nomod_sm_alice; do
		st=$(sed -n "s/^@@XPMEM RESULT $what //p" "$res" | tail -n 1)
		case "$st" in
		ok) echo "  ok    $what"; pass=$((pass + 1)) ;;
		fail) bad "$what" ;;
		*) bad "$what: not reported by the VM" ;;
		esac
	done
	mkdir -p "$BENCH_DIR"
	{
		echo "# $KNAME, one boot: xpmem-mpi-bench, 2 ranks, Open MPI pml/osc ucx; label = transport-user"
		echo "# (sm: UCX_TLS=sm,self; xpmem, cma: self,posix,T; posix: self,posix; nomod: no module, UCX_TLS unset)"
		printf '%-13s %10s %10s %10s %10s %10s %10s\n' label "lat8B_us" "bw1M_MBps" "bw4M_MBps" \
			"put4M_MBps" "get4M_MBps" "pp1M_us"
	} > "$cmp"
	for l in sm-root xpmem-root cma-root posix-root xpmem-alice cma-alice posix-alice \
		nomod-root nomod-alice; do
		sed -n "/^@@XPMEM MPI-TABLE-BEGIN $l\$/,/^@@XPMEM MPI-TABLE-END $l /{/^@@XPMEM/!p}" "$res" \
			>"$BENCH_DIR/$KNAME.mpi-$l.txt"
		sed -n "/^@@XPMEM MPI-CSV-BEGIN $l\$/,/^@@XPMEM MPI-CSV-END $l\$/{/^@@XPMEM/!p}" "$res" \
			>"$BENCH_DIR/$KNAME.mpi-$l.csv"
		awk -F, -v l="$l" '
			{ v[$1 "," $2] = ($1 == "pingpong") ? $4 : $5 }
			function g(k) { return (k in v) ? v[k] : "-" }
			END { printf "%-13s %10s %10s %10s %10s %10s %10s\n", l, g("pingpong,8"),
				g("stream,1048576"), g("stream,4194304"), g("put,4194304"),
				g("get,4194304"), g("pingpong,1048576") }' \
			"$BENCH_DIR/$KNAME.mpi-$l.csv" >> "$cmp"
	done
	sed 's/^/  info  /' "$cmp"
	echo "  info  tables and CSV: $BENCH_DIR/$KNAME.mpi-LABEL.{txt,csv}"
}

# judge_report: bench and scale reports (selftests/vm/report.sh), with
# their counts.
judge_report() {
	local rp rf
	rm -f "$out/report.counts"
	"$vm/report.sh" "$MODE" "$out" || true
	read -r rp rf < "$out/report.counts" 2>/dev/null || { rp=0 rf=1; }
	pass=$((pass + rp)) fail=$((fail + rf))
}

# judge_console: kernel findings.  Only printk lines (timestamped) are
# scanned, so test output that happens to contain one of the words cannot
# trigger a false failure; call-trace frames ("func+0x1/0x2") are skipped
# so that one splat counts once per headline, not once per lockdep_* frame.
# Hangs and stalls: the hung-task detector's "INFO: task X:PID blocked for
# more than N seconds", the soft/hard lockup watchdog, and RCU CPU and task
# stall reports ("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
# "... self-detected stall on CPU", "INFO: rcu_tasks detected stalls").
judge_console() {
	local pat findings l
	pat='BUG:|WARNING:|Oops|general protection fault|KASAN|UBSAN|possible recursive locking|possible circular locking|(^|[^_a-z])lockdep([^_a-z]|$)|inconsistent lock state|suspicious RCU usage|unreferenced object|Kernel panic|list_add corruption|list_del corruption|sleeping function called from invalid context|refcount_t'
	pat="$pat"'|blocked for more than [0-9]+ seconds|soft lockup|hard LOCKUP|rcu: INFO: rcu_|INFO: rcu_[a-z_]+ detected stall|self-detected stall'
	[ -f "$out/console.log" ] || return 0
	findings=$(tr -d '\r' < "$out/console.log" |
		grep -E '\[ *[0-9]+\.[0-9]{6}\]' |
		grep -vE '\] +(\? )?[A-Za-z_][A-Za-z_0-9.]*\+0x[0-9a-f]+/0x[0-9a-f]+' |
		grep -E "$pat" |
		grep -vE 'RCU lockdep checking is enabled|Lock dependency validator' || true)
	if [ -n "$findings" ]; then
		while IFS= read -r l; do bad "console: $l"; done <<< "$findings"
	fi
}

# judge_kmemleak: objects reported after the module was loaded whose
# backtrace involves xpmem (a resolved xpmem symbol, or an unresolved
# module-area address once the module is unloaded).  Boot-time leaks are
# only printed.
judge_kmemleak() {
	local nboot leaks l
	grep -q '^@@XPMEM KMEMLEAK-BEGIN' "$res" || return 0
	nboot=$(awk '/^@@XPMEM KMEMLEAK-BEGIN boot/{on=1;next} /^@@XPMEM KMEMLEAK-END/{on=0} on && /unreferenced object/{c++} END{print c+0}' "$res")
	echo "  info  kmemleak: $nboot boot-time leak(s) before the module was loaded (not counted)"
	leaks=$(awk '
		/^@@XPMEM KMEMLEAK-BEGIN (loaded|final)/ { on = 1; next }
		/^@@XPMEM KMEMLEAK-END/ { flush(); on = 0; next }
		!on { next }
		/unreferenced object/ { flush(); obj = $3; head = $0; ours = 0; why = ""; next }
		/\[xpmem\]/ || /^ +(\[<[0-9a-f]+>\] )?0xffffffff[0-9a-f]+$/ || /comm "xpmem/ {
			ours = 1; if (why == "" && $0 !~ /comm/) { why = $0; sub(/^ +/, "", why) }
		}
		function flush() {
			if (obj != "" && ours && !(obj in seen)) { seen[obj] = 1; print head " " why }
			obj = ""
		}
		END { flush() }' "$res")
	if [ -n "$leaks" ]; then
		while IFS= read -r l; do bad "kmemleak: $l (details in $out/results.log)"; done <<< "$leaks"
	else
		echo "  ok    kmemleak: no leak involving xpmem"
		pass=$((pass + 1))
	fi
}

echo "---- $KNAME: results ($KIMAGE_NAME, VM wall time ${WALL}s) ----"
if [ "$QRC" = 124 ] || [ "$QRC" = 137 ]; then
	bad "VM timed out after ${VM_TIMEOUT}s (see $out/console.log)"
elif [ "$QRC" != 0 ]; then
	bad "qemu exited with status $QRC: $(tail -n 3 "$out/qemu.log" | tr '\n' ' ')"
fi
case "$MODE" in
check) judge_suites ;;
demo) judge_demo ;;
bench | scale) judge_report ;;
mpi) judge_mpi ;;
esac
grep -q '^@@XPMEM DONE' "$res" || bad "VM did not report DONE (crashed, hung or panicked?)"
judge_console
judge_kmemleak

echo "$pass $fail $skip $WALL" > "$out/result"
echo "== $KNAME: $pass passed, $fail failed, $skip skipped; VM wall time ${WALL}s; log $out/console.log"
[ "$fail" = 0 ]
