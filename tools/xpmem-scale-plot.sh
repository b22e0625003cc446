#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# xpmem-scale-plot.sh - plot the CSV of `xpmem-scale -o FILE` with gnuplot.
#
# Usage: tools/xpmem-scale-plot.sh CSV [OUT.svg|OUT.png] [TITLE]
#
# Two panels against the number of ranks N (rows of kind "ranks"; each
# point is the median of the repeats, its bar min..max):
#   1. rank 0's MADV_DONTNEED and munmap of a range its N-1 peers have
#      attached and mapped, the same calls on a range nobody attached, and
#      its mmap+munmap elsewhere (us per call)
#   2. all-to-all read bandwidth, first and second pass (MiB/s, aggregate)
# OUT defaults to the CSV's name with .svg.  Exit status: 0 plotted,
# 1 error (no gnuplot: package gnuplot-nox), 2 usage.
set -euo pipefail

me=xpmem-scale-plot
usage() { sed -n '6p' "$0" | sed 's/^# //' >&2; exit 2; }
if [ $# -lt 1 ] || [ $# -gt 3 ]; then usage; fi
case "$1" in -h|--help) sed -n '4,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; -*) usage ;; esac
csv=$1
out=${2:-${csv%.csv}.svg}
title=${3:-xpmem-scale: ${csv##*/}}
title=${title//[\'\"\\]/}

[ -r "$csv" ] || { echo "$me: $csv: cannot read" >&2; exit 1; }
[ "$(head -n 1 "$csv")" = "kind,size,metric,median,min,max,unit" ] ||
	{ echo "$me: $csv: not an xpmem-scale CSV (first line must be kind,size,metric,median,min,max,unit)" >&2; exit 1; }
grep -q '^ranks,' "$csv" || { echo "$me: $csv: no rows of kind ranks" >&2; exit 1; }
command -v gnuplot >/dev/null ||
	{ echo "$me: gnuplot not found (Debian: apt-get install gnuplot-nox): no plot" >&2; exit 1; }
case "$out" in
*.png) term="png size 1200,1000 font 'sans,10'" ;;
*.svg) term="svg size 1200,1000 dynamic font 'sans,11' background rgb 'white'" ;;
*) echo "$me: $out: want a name ending in .svg or .png" >&2; exit 2 ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/$me.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
awk -F, -v dir="$tmp" '$1 == "ranks" && $2 > 0 {
	f = dir "/" $3 ".dat"; print $2, $4, $5, $6 >> f; close(f) }' "$csv"

plot() {	# plot TITLE METRIC...
	local sep="plot " m
	for m in "$@"; do
		[ -f "$tmp/$m.dat" ] || continue
		printf "%s'%s' using 1:2:3:4 with yerrorlines title '%s'" "$sep" "$tmp/$m.dat" "$m"
		sep=", "
	done
	echo
}
{
	echo "set terminal $term"
	echo "set output '$out'"
	echo "set multiplot layout 2,1 title '$title'"
	echo "set xlabel 'ranks (N)'; set grid; set key top left"
	echo "set ylabel 'us per call'"
	plot dontneed_attached dontneed_unattached munmap_attached munmap_unattached owner_mmap_munmap detach
	echo "set ylabel 'MiB/s (all ranks)'"
	plot read1 read2
	echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
