#!/bin/bash
# Usage: BENCH_CLASSIC=SCRIPT selftests/vm/classic-compare.sh KERNEL [BOOTS]
#   BOOTS             boots of KERNEL (default 5), each running both modules
#   BENCH_CLASSIC     the script that builds the other module and library
#                     (as for selftests/vm/run.sh --bench)
#   BENCH_ARGS        xpmem-bench -c options (default: the tool's)
#   BENCH_SCALE_ARGS  xpmem-scale options (default "-n 2,4,8,16 -r 5";
#                     "-" for none)
#
# This module beside another implementation (the maintained classic one)
# over several boots: each boot of `selftests/vm/run.sh --bench` with
# BENCH_CLASSIC runs the registration-cache miss cycles (xpmem-bench -c)
# and xpmem-scale's ranks mode with both modules, in turn; the order
# alternates from boot to boot (CLASSIC_FIRST), since under TCG a boot's
# numbers can be off by a factor of two and the one that runs second can
# differ.  Prints, per metric, the medians over the boots of this
# module's and the other's medians, and the median of the boots' ratios
# (this / classic for times, classic / this for MiB/s: below 1, this one
# is faster).  Written to build/bench/KERNEL.classic-compare.txt; every
# boot's own tables in build/bench/KERNEL.classic-compare.boots.txt.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
# shellcheck source=selftests/vm/median.sh
. selftests/vm/median.sh
me=classic-compare
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: BENCH_CLASSIC=SCRIPT $0 KERNEL [BOOTS]" >&2
	exit 2
fi
kernel=$1 boots=${2:-5}
[[ "$boots" =~ ^[1-9][0-9]?$ ]] || { echo "$me: BOOTS: 1..99, not '$boots'" >&2; exit 2; }
[ -n "${BENCH_CLASSIC:-}" ] || { echo "$me: set BENCH_CLASSIC (see selftests/vm/run.sh)" >&2; exit 2; }
export BENCH_CLASSIC BENCH_ARGS=${BENCH_ARGS:-}
export BENCH_SCALE_ARGS=${BENCH_SCALE_ARGS:--n 2,4,8,16 -r 5}
B=${B:-build}
out=$B/bench/$kernel.classic-compare.txt
all=$B/bench/$kernel.classic-compare.boots.txt
raw=$B/bench/.classic-compare.raw
mkdir -p "$B/bench"
: > "$all"

# "BOOT NAME kind size metric this classic unit" from one boot's CSVs
pairs() {
	awk -F, -v boot="$1" -v name="$2" '
		FNR == 1 { f++; next }
		{ k = $1 " " $2 " " $3; v[f, k] = $4; u[k] = $7; if (f == 1) keys[++n] = k }
		END {
			for (i = 1; i <= n; i++)
				if (v[2, keys[i]] != "")
					print boot, name, keys[i], v[1, keys[i]], v[2, keys[i]], u[keys[i]]
		}' "$B/bench/$kernel.$2.csv" "$B/bench/$kernel.$2-classic.csv"
}

names=cycles
[ "$BENCH_SCALE_ARGS" = - ] || names="cycles ranks"
i=0
while [ "$i" -lt "$boots" ]; do
	i=$((i + 1))
	nb=1
	[ "$i" = 1 ] && nb=
	echo "$me: boot $i of $boots (CLASSIC_FIRST=$(( (i + 1) % 2 )))" >&2
	if ! NO_BUILD=$nb CLASSIC_FIRST=$(( (i + 1) % 2 )) \
		selftests/vm/run.sh --bench "$kernel" > "$B/bench/.classic-compare.log" 2>&1; then
		cat "$B/bench/.classic-compare.log" >&2
		echo "$me: boot $i failed" >&2
		exit 1
	fi
	for n in $names; do
		{ echo "== boot $i"; cat "$B/bench/$kernel.$n-compare.txt"; } >> "$all"
		pairs "$i" "$n"
	done
done > "$raw"

# boot name kind size metric this classic unit -> medians per metric
awk -v kernel="$kernel" -v head="$(git rev-parse --short HEAD)" \
	-v args="xpmem-bench -c ${BENCH_ARGS:-(defaults)}; xpmem-scale $BENCH_SCALE_ARGS" "$AWK_MEDIAN"'
function lbl(k, b) {
	if (k == "ranks") return b
	return b % 1048576 ? b / 1024 "K" : b / 1048576 "M"
}
{
	k = $2 " " $3 " " $4 " " $5
	if (!(k in cnt)) keys[++nk] = k
	c = ++cnt[k]; t[k, c] = $6; cl[k, c] = $7; u[k] = $8
	if ($1 > nb) nb = $1
}
END {
	printf "# %s: this tree (%s) and the classic module, %d boots (order alternating); %s\n",
		kernel, head, nb, args
	printf "# medians over the boots; ratio: median of the boots ratios, this / classic for times,\n"
	printf "# classic / this for MiB/s (below 1: this one is faster)\n"
	printf "%-6s %-6s %-7s %-28s %12s %12s %7s %s\n", "tool", "kind", "size", "metric", "this",
		"classic", "ratio", "unit"
	for (i = 1; i <= nk; i++) {
		k = keys[i]; n = 0
		for (c = 1; c <= cnt[k]; c++) {
			x = t[k, c]; y = cl[k, c]
			if (u[k] == "MiB/s" ? x + 0 <= 0 : y + 0 <= 0)
				continue
			n++; a[n] = x; b[n] = y; q[n] = u[k] == "MiB/s" ? y / x : x / y
		}
		if (!n)
			continue
		split(k, p, " ")
		printf "%-6s %-6s %-7s %-28s %12.1f %12.1f %7.2f %s\n", p[1], p[2], lbl(p[2], p[3]), p[4],
			median(a, n), median(b, n), median(q, n), u[k]
	}
}' "$raw" | tee "$out"
echo "$me: $out (every boot: $all)" >&2
