#!/bin/bash
# Usage: selftests/vm/report.sh bench|scale OUTDIR [BENCHDIR]
#
# The reports of `selftests/vm/run.sh --bench` and `--scale`, from what the
# run left in OUTDIR (build/qemu/KERNEL.MODE): run.env (settings, written by
# run.sh) and results.log, where the guest framed its tables and CSV with
# @@XPMEM BENCH-<what>-BEGIN/END (bench) or @@XPMEM SCALE-<what>-BEGIN/END
# <label> lines (scale; label base for the SCALE_BASE module, new for this
# tree's).  Writes into BENCHDIR (default: run.env's BENCH_DIR, $B/bench):
#   bench: KERNEL.txt (table), KERNEL.csv, KERNEL.svg (gnuplot, if
#          installed: tools/xpmem-bench-plot.sh), and with BENCH_PROFILE
#          KERNEL.profile.txt (selftests/vm/fault-profile.sh's table);
#   bench with BENCH_CLASSIC: KERNEL.cycles.{txt,csv} (xpmem-bench -c,
#          this module), KERNEL.cycles-classic.{txt,csv} (the other),
#          KERNEL.cycles-compare.txt (the two side by side), the same for
#          xpmem-scale's ranks mode as KERNEL.ranks* (RANKS frames), with
#          ATTACH_PROFILE=1 or deep KERNEL.attach-profile.txt;
#   scale: KERNEL.scale[-base].{txt,csv,svg}, and with SCALE_PROFILE=1
#          KERNEL.scale[-base].profile.txt (inval-profile.sh's table).
# Prints the tables and one "  ok" or "  FAIL" line per report, and writes
# "PASS FAIL" to OUTDIR/report.counts (selftests/vm/judge.sh adds them to
# the run's counts).  Timings under TCG are emulated: the tools print
# ratios measured within one run.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 2 ] || { sed -n '2p' "$0" >&2; exit 2; }
what=$1 out=$2
# shellcheck source=/dev/null # written by run.sh
. "$out/run.env"
bench_dir=${3:-$BENCH_DIR}
mkdir -p "$bench_dir"
res=$(mktemp)
trap 'rm -f "$res"' EXIT
tr -d '\r' < "$out/results.log" > "$res" 2>/dev/null || : > "$res"
now=$(date -u '+%Y-%m-%d %H:%M UTC')

pass=0 fail=0
bad() { echo "  FAIL  $*"; fail=$((fail + 1)); }

# block BEGIN-LINE END-PREFIX: the lines between the two.
block() {
	awk -v b="$1" -v e="$2" '$0 == b { on = 1; next } index($0, e) == 1 { exit } on { print }' "$res"
}

# plot CSV SVG TITLE SCRIPT: the CSV's plot, if gnuplot is installed and
# the CSV has rows; never an older run's plot beside this run's CSV.
plot() {
	rm -f "$2"
	[ "$(wc -l < "$1")" -ge 2 ] || return 0
	if ! command -v gnuplot >/dev/null; then
		echo "  info  no plot: gnuplot is not installed (apt-get install gnuplot-nox)"
	elif "$top/tools/$4" "$1" "$2.tmp.svg" "$3" >"$out/plot.log" 2>&1; then
		mv "$2.tmp.svg" "$2"
		echo "  info  plot: $2"
	else
		rm -f "$2.tmp.svg"
		echo "  info  no plot: tools/$4 failed: $(tail -n 1 "$out/plot.log")"
	fi
}

report_bench() {
	local brc prc btxt=$bench_dir/$KNAME.txt bcsv=$bench_dir/$KNAME.csv bprof
	brc=$(sed -n 's/^@@XPMEM BENCH-TABLE-END rc=\([0-9]*\).*/\1/p' "$res" | tail -n 1)
	{
		echo "# selftests/vm/run.sh --bench $KNAME: $KIMAGE_NAME, QEMU TCG, $SMP cpus," \
			"$MEM MiB, BENCH_ARGS='$BENCH_ARGS', $now, VM wall time ${WALL}s"
		block "@@XPMEM BENCH-TABLE-BEGIN" "@@XPMEM BENCH-TABLE-END"
	} > "$btxt.tmp" && mv "$btxt.tmp" "$btxt"
	block "@@XPMEM BENCH-CSV-BEGIN" "@@XPMEM BENCH-CSV-END" > "$bcsv.tmp" && mv "$bcsv.tmp" "$bcsv"
	sed 's/^/  | /' "$btxt"
	if [ -z "$brc" ]; then
		bad "xpmem-bench did not finish (see $out/console.log)"
	elif [ "$brc" != 0 ]; then
		bad "xpmem-bench exited with status $brc (see $out/console.log)"
	elif [ "$(wc -l < "$bcsv")" -lt 2 ]; then
		bad "xpmem-bench wrote no CSV rows"
	else
		echo "  ok    xpmem-bench: $btxt, $bcsv"
		pass=1
	fi
	if [ -n "$BENCH_PROFILE" ]; then
		bprof=$bench_dir/$KNAME.profile.txt
		prc=$(sed -n 's/^@@XPMEM BENCH-PROFILE-END rc=\([0-9]*\).*/\1/p' "$res" | tail -n 1)
		{
			echo "# selftests/vm/run.sh --bench $KNAME: BENCH_PROFILE='$BENCH_PROFILE'," \
				"function_graph in the guest, $now"
			block "@@XPMEM BENCH-PROFILE-BEGIN" "@@XPMEM BENCH-PROFILE-END"
		} > "$bprof"
		sed 's/^/  | /' "$bprof"
		if [ "$prc" != 0 ]; then
			bad "the traced xpmem-bench run failed (status '${prc:-none}', see $out/console.log)"
		else
			echo "  ok    fault profile: $bprof"
		fi
	fi
	plot "$bcsv" "$bench_dir/$KNAME.svg" \
		"xpmem-bench, $KNAME ($KIMAGE_NAME), QEMU TCG, $SMP cpus" xpmem-bench-plot.sh
}

# classic_pair TAG NAME TOOL ARGS: one tool's two runs of --bench with
# BENCH_CLASSIC, this module's (new) and the other's (classic), framed by
# @@XPMEM TAG-{TABLE,CSV}-{BEGIN,END} <label>: KERNEL.NAME{,-classic}.
# {txt,csv}, and the two CSVs joined side by side with ratios in
# KERNEL.NAME-compare.txt.
classic_pair() {
	local tag=$1 name=$2 tool=$3 args=$4 l stem src cmp=$bench_dir/$KNAME.$2-compare.txt
	for l in new classic; do
		stem=$bench_dir/$KNAME.$name
		[ "$l" = classic ] && stem=$stem-classic
		src=$(sed -n "s/^@@XPMEM $tag-TABLE-END $l rc=\([0-9]*\).*/\1/p" "$res" | tail -n 1)
		{
			echo "# selftests/vm/run.sh --bench $KNAME, BENCH_CLASSIC: $tool with the $l module," \
				"$KIMAGE_NAME, QEMU TCG, $SMP cpus, $MEM MiB, options '$args'," \
				"$now, VM wall time ${WALL}s (one boot for both modules)"
			block "@@XPMEM $tag-TABLE-BEGIN $l" "@@XPMEM $tag-TABLE-END $l"
		} > "$stem.txt"
		block "@@XPMEM $tag-CSV-BEGIN $l" "@@XPMEM $tag-CSV-END $l" > "$stem.csv"
		sed 's/^/  | /' "$stem.txt"
		if [ "$src" = 0 ] && [ "$(wc -l < "$stem.csv")" -ge 2 ]; then
			echo "  ok    $tool [$l]: $stem.txt, $stem.csv"
			pass=$((pass + 1))
		else
			bad "$tool [$l] failed or did not finish (status '${src:-none}', see $out/console.log)"
		fi
	done
	{
		echo "# $KNAME, one boot: $tool medians with this module and the classic" \
			"one; ratio = this / classic for times, classic / this for MiB/s" \
			"(below 1: this one is faster); $now"
		awk -F, 'function lbl(k, b) {
				if (k == "ranks") return b
				return b % 1048576 ? b / 1024 "K" : b / 1048576 "M"
			}
			FNR == 1 { f++; next }
			{ k = $1 "," $2 "," $3; v[f, k] = $4; u[k] = $7; if (f == 1) keys[++n] = k }
			END {
				printf "%-6s %-7s %-28s %12s %12s %8s\n", "kind", "size", "metric", "this", "classic", "ratio"
				for (i = 1; i <= n; i++) {
					split(keys[i], p, ",")
					t = v[1, keys[i]]; c = v[2, keys[i]]
					r = "-"
					if (u[keys[i]] == "MiB/s" && t > 0)
						r = sprintf("%.2f", c / t)
					else if (u[keys[i]] != "MiB/s" && c > 0)
						r = sprintf("%.2f", t / c)
					printf "%-6s %-7s %-28s %12.1f %12s %8s\n", p[1], lbl(p[1], p[2]), p[3], t,
						(c == "" ? "-" : sprintf("%.1f", c)), r
				}
			}' "$bench_dir/$KNAME.$name.csv" "$bench_dir/$KNAME.$name-classic.csv"
	} > "$cmp"
	sed 's/^/  | /' "$cmp"
	echo "  info  side by side: $cmp"
}

# report_classic: --bench with BENCH_CLASSIC: the miss cycles (xpmem-bench
# -c) and, unless BENCH_SCALE_ARGS is "-", the ranks mode of xpmem-scale,
# each with this module and the other, and the ATTACH_PROFILE profiles.
report_classic() {
	local l
	classic_pair CYCLES cycles "xpmem-bench -c" "$BENCH_ARGS"
	[ "$BENCH_SCALE_ARGS" = - ] ||
		classic_pair RANKS ranks xpmem-scale "$BENCH_SCALE_ARGS"
	[ "$ATTACH_PROFILE" != 0 ] || return 0
	for l in new classic; do
		echo "#### $l module"
		block "@@XPMEM ATTACH-PROFILE-BEGIN $l" "@@XPMEM ATTACH-PROFILE-END $l"
	done > "$bench_dir/$KNAME.attach-profile.txt"
	echo "  info  attach profiles: $bench_dir/$KNAME.attach-profile.txt"
}

report_scale() {
	local labels=new l stem mod src
	[ -n "$SCALE_BASE" ] && labels="base new"
	for l in $labels; do
		case "$l" in
		base) stem=$bench_dir/$KNAME.scale-base mod=$SCALE_BASE_DESC ;;
		*) stem=$bench_dir/$KNAME.scale mod=$TREE_DESC ;;
		esac
		src=$(sed -n "s/^@@XPMEM SCALE-TABLE-END $l rc=\([0-9]*\).*/\1/p" "$res" | tail -n 1)
		{
			echo "# selftests/vm/run.sh --scale $KNAME: module of $mod, $KIMAGE_NAME, QEMU TCG," \
				"$SMP cpus, $MEM MiB, SCALE_ARGS='$SCALE_ARGS', SCALE_CHURN=$SCALE_CHURN," \
				"$now, VM wall time ${WALL}s (one boot for all modules)"
			block "@@XPMEM SCALE-TABLE-BEGIN $l" "@@XPMEM SCALE-TABLE-END $l"
		} > "$stem.txt"
		block "@@XPMEM SCALE-CSV-BEGIN $l" "@@XPMEM SCALE-CSV-END $l" > "$stem.csv"
		sed 's/^/  | /' "$stem.txt"
		if [ "$src" = 0 ] && [ "$(wc -l < "$stem.csv")" -ge 2 ]; then
			echo "  ok    xpmem-scale [$l]: $stem.txt, $stem.csv"
			pass=$((pass + 1))
		else
			bad "xpmem-scale [$l] failed or did not finish (status '${src:-none}', see $out/console.log)"
		fi
		if [ "$SCALE_PROFILE" = 1 ]; then
			block "@@XPMEM SCALE-PROFILE-BEGIN $l" "@@XPMEM SCALE-PROFILE-END $l" > "$stem.profile.txt"
			sed 's/^/  | /' "$stem.profile.txt"
		fi
		plot "$stem.csv" "$stem.svg" "xpmem-scale, $KNAME, module of $mod, QEMU TCG" \
			xpmem-scale-plot.sh
	done
}

case "$what" in
bench) if [ -n "${BENCH_CLASSIC:-}" ]; then report_classic; else report_bench; fi ;;
scale) report_scale ;;
*) sed -n '2p' "$0" >&2; exit 2 ;;
esac
echo "$pass $fail" > "$out/report.counts"
[ "$fail" = 0 ]
