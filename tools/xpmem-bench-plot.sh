#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# xpmem-bench-plot.sh - plot the CSV of `xpmem-bench -o FILE` with gnuplot.
#
# Usage: tools/xpmem-bench-plot.sh CSV [OUT.svg|OUT.png] [TITLE]
#
# One column per kind of owner memory (4k, thp, hugetlb, alloc: those in
# the CSV), four rows, against the size (log scale); each point is the
# median of the repeats, its bar min..max:
#   1. read bandwidth: xpmem and memfd first and second pass,
#      process_vm_readv, local memcpy (MiB/s)
#   2. write bandwidth: xpmem and memfd first and second pass (MiB/s)
#   3. time ratios: xpmem first/second pass (read, write) and xpmem/memfd
#      (first and second pass, read and write); 1 is drawn
#   4. module counters during the first passes: faults per MiB (read,
#      write), pages_mapped per MiB (read); only if the CSV has them
# OUT defaults to the CSV's name with .svg; a name ending in .png gives a
# PNG.  Exit status: 0 plotted, 1 error (no gnuplot: package gnuplot-nox),
# 2 usage.
set -euo pipefail

me=xpmem-bench-plot
usage() { sed -n '6p' "$0" | sed 's/^# //' >&2; exit 2; }
if [ $# -lt 1 ] || [ $# -gt 3 ]; then usage; fi
case "$1" in -h|--help) sed -n '4,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; -*) usage ;; esac
csv=$1
out=${2:-${csv%.csv}.svg}
title=${3:-xpmem-bench: ${csv##*/}}
title=${title//[\'\"\\]/}	# quoted in the gnuplot script

[ -r "$csv" ] || { echo "$me: $csv: cannot read" >&2; exit 1; }
[ "$(head -n 1 "$csv")" = "kind,size,metric,median,min,max,unit" ] ||
	{ echo "$me: $csv: not an xpmem-bench CSV (first line must be kind,size,metric,median,min,max,unit)" >&2; exit 1; }
command -v gnuplot >/dev/null ||
	{ echo "$me: gnuplot not found (Debian: apt-get install gnuplot-nox): no plot" >&2; exit 1; }
case "$out" in
*.png) term="png size 1600,1800 font 'sans,10'" ;;
*.svg) term="svg size 1600,1800 dynamic font 'sans,11' background rgb 'white'" ;;
*) echo "$me: $out: want a name ending in .svg or .png" >&2; exit 2 ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/$me.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# One data file per kind and metric: size median min max (sorted by size).
tail -n +2 "$csv" | sort -t, -k2,2n | awk -F, -v dir="$tmp" 'NF == 7 {
	f = dir "/" $1 "." $3 ".dat"
	print $2, $4, $5, $6 >> f
	close(f)
}'
kinds=$(awk -F, 'NR > 1 && !seen[$1]++ { print $1 }' "$csv")
[ -n "$kinds" ] || { echo "$me: $csv: no data rows" >&2; exit 1; }
nk=$(printf '%s\n' "$kinds" | wc -l)

# x tics at the measured sizes, labelled 4K, 64K, 1M, ...
xtics=$(awk -F, 'NR > 1 && !seen[$2]++ { print $2 }' "$csv" | sort -n | awk '
	{ s = $1
	  if (s % 1073741824 == 0) l = s / 1073741824 "G"
	  else if (s % 1048576 == 0) l = s / 1048576 "M"
	  else l = s / 1024 "K"
	  printf "%s\"%s\" %s", (NR > 1 ? ", " : ""), l, s }')

# panel KIND TITLE YLABEL LOGY REFLINE METRIC:LEGEND...
panel() {
	local kind=$1 ptitle=$2 ylabel=$3 logy=$4 ref=$5 spec m leg f plots=
	shift 5
	for spec in "$@"; do
		m=${spec%%:*} leg=${spec#*:} f=$tmp/$kind.$m.dat
		[ -s "$f" ] || continue
		plots="$plots${plots:+, }'$f' using 1:2:3:4 with yerrorlines title '$leg'"
	done
	echo "set title '$kind: $ptitle'"
	echo "set ylabel '$ylabel'"
	if [ "$logy" = 1 ]; then echo "set logscale y"; else echo "unset logscale y"; fi
	if [ -z "$plots" ]; then
		echo "unset key; set yrange [0:1]; set label 1 'not measured' at graph 0.4, graph 0.5"
		echo "plot NaN notitle"
		echo "unset label 1; set yrange [*:*]; set key"
		return
	fi
	[ "$ref" = 1 ] && plots="$plots, 1 with lines dashtype 2 linecolor rgb 'gray' notitle"
	echo "plot $plots"
}

{
	echo "set terminal $term"
	echo "set termoption noenhanced"
	echo "set output '$out'"
	echo "set datafile separator ' '"
	echo "set logscale x 2"
	echo "set xtics ($xtics)"
	echo "set xlabel 'size'"
	echo "set grid"
	echo "set key top left opaque box font ',8' spacing 0.9"
	echo "set offsets graph 0.05, graph 0.05, 0, 0"
	printf '%s\n' "set multiplot layout 4,$nk columnsfirst title \"$title\\n(medians, bars min..max; under emulation only ratios mean anything)\""
	for k in $kinds; do
		panel "$k" "read bandwidth" "MiB/s" 1 0 \
			xpmem_read1:"xpmem 1st" xpmem_read2:"xpmem 2nd" \
			memfd_read1:"memfd 1st" memfd_read2:"memfd 2nd" \
			process_vm_readv:"process_vm_readv" memcpy:"memcpy (local)"
		panel "$k" "write bandwidth" "MiB/s" 1 0 \
			xpmem_write1:"xpmem 1st" xpmem_write2:"xpmem 2nd" \
			memfd_write1:"memfd 1st" memfd_write2:"memfd 2nd" \
			xpmem_write_after_read:"xpmem after read" \
			memfd_write_after_read:"memfd after read"
		panel "$k" "time ratios (below 1: first named faster)" "ratio" 1 1 \
			xpmem_read1_over_read2:"xpmem read 1st/2nd" \
			xpmem_write1_over_write2:"xpmem write 1st/2nd" \
			xpmem_over_memfd_read1:"read 1st xpmem/memfd" \
			xpmem_over_memfd_read2:"read 2nd xpmem/memfd" \
			xpmem_over_memfd_write1:"write 1st xpmem/memfd" \
			xpmem_over_memfd_write2:"write 2nd xpmem/memfd"
		panel "$k" "module counters, first passes" "per MiB" 0 0 \
			faults_read1_per_mib:"faults/MiB read" \
			faults_write1_per_mib:"faults/MiB write" \
			pages_mapped_read1_per_mib:"pages_mapped/MiB read"
	done
	echo "unset multiplot"
} > "$tmp/plot.gp"

if ! gnuplot "$tmp/plot.gp" 2> "$tmp/err"; then
	cat "$tmp/err" >&2
	echo "$me: gnuplot failed (script: kept in $out.gp)" >&2
	cp "$tmp/plot.gp" "$out.gp"
	exit 1
fi
# gnuplot warns about panels it could not fill; pass that on.
grep -v '^$' "$tmp/err" >&2 || true
echo "$me: wrote $out"
