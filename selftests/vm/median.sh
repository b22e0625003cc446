#!/bin/bash
# Sourced by selftests/vm/scale-compare.sh and classic-compare.sh:
# AWK_MEDIAN, an awk function median(a, n) - the median of a[1..n], which
# it sorts - to put before an awk program of theirs.
# shellcheck disable=SC2034 # used by the scripts that source this
AWK_MEDIAN='
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
'
