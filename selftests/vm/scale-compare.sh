#!/bin/bash
# Usage: selftests/vm/scale-compare.sh KERNEL BASE-REV [BOOTS]
#   BOOTS       boots of KERNEL (default 5), each running both modules
#   SCALE_ARGS  xpmem-scale options (default "-n 2,4,8,16 -r 31")
#
# Compare the invalidation cost per attacher of two modules over several
# boots: one boot of `selftests/vm/run.sh --scale` runs xpmem-scale with
# both (SCALE_BASE first), and under TCG the slope of one boot can be off
# by a factor of two or more, so a single boot says little.
#
# Prints, for MADV_DONTNEED and munmap of an attached range: each boot's
# slope (us per attacher) for BASE-REV and for this tree and their ratio,
# then the medians over the boots, and the same for "1 attacher /
# unattached".  Written to build/bench/KERNEL.scale-compare.txt too.
# Every boot's own tables are in build/bench/KERNEL.scale-compare.boots.txt.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
# shellcheck source=selftests/vm/median.sh
. selftests/vm/median.sh
me=scale-compare
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 KERNEL BASE-REV [BOOTS]" >&2
	exit 2
fi
kernel=$1 base=$2 boots=${3:-5}
[[ "$boots" =~ ^[1-9][0-9]?$ ]] || { echo "$me: BOOTS: 1..99, not '$boots'" >&2; exit 2; }
args=${SCALE_ARGS:--n 2,4,8,16 -r 31}
B=${B:-build}
out=$B/bench/$kernel.scale-compare.txt
all=$B/bench/$kernel.scale-compare.boots.txt
mkdir -p "$B/bench"
: > "$all"

# "<call> <slope> <ratio>" lines of one table (MADV_DONTNEED, munmap)
slopes() {
	sed -n 's/^\(MADV_DONTNEED\|munmap\) attached *\([0-9.naif-]*\) us per attacher; 1 attacher \/ unattached \([0-9.naif-]*\)$/\1 \2 \3/p' "$1"
}

i=0
while [ "$i" -lt "$boots" ]; do
	i=$((i + 1))
	nb=1
	[ "$i" = 1 ] && nb=
	echo "$me: boot $i of $boots" >&2
	if ! NO_BUILD=$nb SCALE_BASE=$base SCALE_ARGS=$args SCALE_CHURN=0 \
		selftests/vm/run.sh --scale "$kernel" > "$B/bench/.scale-compare.log" 2>&1; then
		cat "$B/bench/.scale-compare.log" >&2
		echo "$me: boot $i failed" >&2
		exit 1
	fi
	for l in base new; do
		f=$B/bench/$kernel.scale.txt
		[ "$l" = base ] && f=$B/bench/$kernel.scale-base.txt
		{ echo "== boot $i, $l"; cat "$f"; } >> "$all"
		slopes "$f" | sed "s/^/$i $l /"
	done
done > "$B/bench/.scale-compare.raw"

# boot label call slope ratio -> per boot, then medians
awk -v kernel="$kernel" -v base="$(git rev-parse --short "$base")" \
	-v head="$(git rev-parse --short HEAD)" -v args="$args" "$AWK_MEDIAN"'
{ s[$1, $2, $3] = $4; r[$1, $2, $3] = $5; if ($1 > nb) nb = $1 }
END {
	printf "# %s: module of %s (base) and of this tree (%s), xpmem-scale %s, %d boots\n",
		kernel, base, head, args, nb
	split("MADV_DONTNEED munmap", calls, " ")
	for (c = 1; c <= 2; c++) {
		call = calls[c]
		printf "%s attached, us per attacher (slope over N):\n", call
		printf "  %-6s %10s %10s %8s   %s\n", "boot", "base", "new", "new/base", "1 attacher/unattached base, new"
		n = 0
		for (b = 1; b <= nb; b++) {
			x = s[b, "base", call]; y = s[b, "new", call]
			if (x == "" || y == "" || x + 0 <= 0)
				continue
			n++
			sb[n] = x; sn[n] = y; q[n] = y / x
			rb[n] = r[b, "base", call]; rn[n] = r[b, "new", call]
			printf "  %-6d %10.2f %10.2f %8.2f   %.2f, %.2f\n", b, x, y, y / x, rb[n], rn[n]
		}
		if (!n)
			continue
		mb = median(sb, n); mn = median(sn, n); mq = median(q, n)
		printf "  %-6s %10.2f %10.2f %8.2f   %.2f, %.2f  (median; ratio column: median of the ratios)\n",
			"median", mb, mn, mq, median(rb, n), median(rn, n)
	}
}' "$B/bench/.scale-compare.raw" | tee "$out"
echo "$me: $out (every boot: $all)" >&2
