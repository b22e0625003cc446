#!/bin/busybox sh
# Usage: . "$(dirname "$0")/trace-lib.sh"   (sourced by fault-profile.sh and
#        inval-profile.sh in the test VM)
#
# The function_graph set-up the profile scripts share, and the table they
# print from its trace:
#   trace_setup NAME "TOP..." "INNER...": tracefs mounted, the trace
#     emptied, the graph following the TOP functions and recording them and
#     the INNER ones (functions a kernel does not have, or inlines, are
#     skipped), a 32 MiB buffer per CPU, no interrupts, the function's name
#     at the end of each call; fails (with NAME in its message) without
#     tracefs or function_graph.
#   trace_overrun: a note if events were lost (buffer overrun).
#   trace_table WIDTH "SHARE-OF..." NOTE: per function, calls, total and
#     mean duration and share of the time spent in the SHARE-OF functions,
#     from the trace; NOTE names what those functions are.
#   trace_reset: the nop tracer and the default buffer again.
# shellcheck shell=dash
TR=/sys/kernel/tracing

trace_setup() {
	[ -d $TR/options ] || mount -t tracefs tracefs $TR 2>/dev/null
	[ -d $TR/options ] || { echo "$1: no tracefs"; return 1; }
	grep -q function_graph $TR/available_tracers ||
		{ echo "$1: no function_graph tracer"; return 1; }
	echo nop > $TR/current_tracer
	echo > $TR/trace
	: > $TR/set_ftrace_filter
	: > $TR/set_graph_function
	for f in $2; do
		echo "$f" >> $TR/set_graph_function 2>/dev/null
		echo "$f" >> $TR/set_ftrace_filter 2>/dev/null
	done
	for f in $3; do
		echo "$f" >> $TR/set_ftrace_filter 2>/dev/null
	done
	echo 32768 > $TR/buffer_size_kb
	echo 0 > $TR/options/funcgraph-irqs 2>/dev/null
	echo 1 > $TR/options/funcgraph-tail 2>/dev/null
	echo 0 > $TR/options/funcgraph-proc 2>/dev/null
	echo function_graph > $TR/current_tracer
	echo "traced: $(tr '\n' ' ' < $TR/set_ftrace_filter)"
}

trace_overrun() {
	overrun=$(awk '/overrun:/ { s += $2 } END { print s + 0 }' $TR/per_cpu/cpu*/stats)
	[ "$overrun" = 0 ] || echo "note: $overrun trace events lost (buffer overrun)"
}

# function_graph lines: "CPU) [+!#] DURATION us | name();" for a leaf,
# "... | } /* name */" for the end of a call with children.
trace_table() {
	awk -v width="$1" -v topl="$2" -v note="$3" '
	BEGIN { n = split(topl, t, " "); for (i = 1; i <= n; i++) istop[t[i]] = 1 }
	/ us +\|/ {
		line = $0
		name = ""
		if (match(line, /\} \/\* [^ ]+/))
			name = substr(line, RSTART + 5, RLENGTH - 5)
		else if (match(line, /\| +[A-Za-z_0-9.]+\(\);/)) {
			name = substr(line, RSTART, RLENGTH)
			sub(/^\| +/, "", name); sub(/\(\);$/, "", name)
		}
		if (name == "")
			next
		sub(/ us +\|.*/, "", line)
		k = split(line, w, " ")
		d = w[k] + 0
		calls[name]++
		tot[name] += d
		if (name in istop)
			alltop += d
	}
	END {
		printf "%-" width "s %9s %12s %10s %8s\n", "function", "calls", "total us", "mean us", "share"
		for (f in calls)
			printf "%-" width "s %9d %12.0f %10.2f %7.1f%%\n", f, calls[f], tot[f],
				tot[f] / calls[f], alltop ? 100 * tot[f] / alltop : 0 | "sort -k3 -n -r"
		close("sort -k3 -n -r")
		printf "(share: of the %.0f us spent in %s)\n", alltop, note
	}' $TR/trace
}

trace_reset() {
	echo nop > $TR/current_tracer
	echo 1408 > $TR/buffer_size_kb
}
