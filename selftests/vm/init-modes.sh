#!/bin/busybox sh
# Usage: . /init-modes.sh   (sourced by /init, init.sh, in the test VM for
#        MODE demo, bench, scale or mpi; then run_mode)
#
# What the VM runs instead of the suites in run.sh's --demo, --bench (with
# BENCH_CLASSIC: mode_classic), --scale and --mpi (init-mpi.sh) modes.  Uses init.sh's
# settings (BENCH_*, SCALE_*, ATTACH_PROFILE) and helpers (say, rec,
# unload_module) and the result channel R; each mode ends with finish
# (DONE, power off).
# shellcheck shell=dash

# shellcheck source=selftests/vm/init-mpi.sh
. /init-mpi.sh

# Defaults of the settings /etc/xpmem-run.conf gives.
: "${BENCH_ARGS=}" "${MPI_BENCH_ARGS=}" "${BENCH_PROFILE=}" "${SCALE_ARGS=}" "${SCALE_CHURN=0}" "${SCALE_PROFILE=0}"
: "${BENCH_CLASSIC=0}" "${ATTACH_PROFILE=0}" "${CLASSIC_FIRST=0}" "${BENCH_SCALE_ARGS=-}"

# bench_profile: with BENCH_PROFILE set, run fault-profile.sh with it and
# send its report to the result channel between @@XPMEM BENCH-PROFILE lines.
bench_profile() {
	[ -n "$BENCH_PROFILE" ] || return 0
	say "---- bench profile: xpmem-bench $BENCH_PROFILE, traced ----"
	# shellcheck disable=SC2086 # BENCH_PROFILE is a word list
	/fault-profile.sh $BENCH_PROFILE > /tmp/profile.txt 2>&1
	prc=$?
	cat /tmp/profile.txt
	{
		echo "@@XPMEM BENCH-PROFILE-BEGIN"
		cat /tmp/profile.txt
		echo "@@XPMEM BENCH-PROFILE-END rc=$prc"
	} > "$R"
}

# The cross-container transcript: an owner in this IPC namespace shares a
# page with a secret (xpmem-demo share), attachers in new IPC namespaces
# (and a user namespace) join it with the secret, a wrong one and none.
containers_demo() {
	say "---- demo 1b: across IPC namespaces (containers) ----"
	mkfifo /tmp/demo-in /tmp/demo-out || return
	(cd /tmp && XPMEM_BACKEND=kernel /tools/xpmem-demo share s3cret \
		< /tmp/demo-in > /tmp/demo-out 2>&1) &
	exec 3> /tmp/demo-in 4< /tmp/demo-out
	segid=
	while [ -z "$segid" ] && IFS= read -r line <&4; do
		echo "$line"
		case "$line" in "segid "*) segid=${line#segid } ;; esac
	done
	if [ -n "$segid" ]; then
		for args in "-i|$segid s3cret" "-i|$segid wrong" "-i|$segid" \
			    "-i -U -r|$segid s3cret"; do
			echo "\$ unshare ${args%%|*} xpmem-demo join ${args#*|}"
			# shellcheck disable=SC2086 # options and arguments
			unshare ${args%%|*} /tools/xpmem-demo join ${args#*|} 2>&1
			echo "(exit status $?)"
		done
	fi
	exec 3>&-
	cat <&4
	exec 4<&-
	wait
	rm -f /tmp/demo-in /tmp/demo-out
}

# mode_demo: the demo through the module, then on the fallback.
mode_demo() {
	say "---- demo 1: through the module (/dev/xpmem) ----"
	if insmod /xpmem.ko; then
		ls -l /dev/xpmem
		if [ -x /tools/xpmem-demo ]; then
			(cd /tmp && XPMEM_BACKEND=kernel /tools/xpmem-demo)
			say "demo (module) exit status $?"
			containers_demo
		else
			say "no /tools/xpmem-demo in this build"
		fi
		bench_profile
		unload_module && say "module unloaded"
	else
		say "insmod /xpmem.ko failed"
	fi
	say "---- demo 2: module unloaded, fallback (POSIX shm) ----"
	if [ -x /tools/xpmem-demo ]; then
		if [ -e /dev/xpmem ]; then
			say "module still loaded: forcing XPMEM_BACKEND=shm"
			(cd /tmp && XPMEM_BACKEND=shm /tools/xpmem-demo)
		else
			(cd /tmp && /tools/xpmem-demo)
		fi
		say "demo (fallback) exit status $?"
	fi
}

# framed_run TAG LABEL PROGRAM ARGS...: run PROGRAM ARGS -o CSV in /tmp
# through the module; its table to the console, then table and CSV to the
# result channel between @@XPMEM TAG-TABLE-BEGIN/END and TAG-CSV-BEGIN/END
# LABEL lines (the table's end line with rc=STATUS).
framed_run() {
	tag=$1 lbl=$2
	shift 2
	t0=$(date +%s)
	(cd /tmp && XPMEM_BACKEND=kernel "$@" -o /tmp/framed.csv > /tmp/framed.txt)
	rc=$?
	say "$1 exit status $rc after $(( $(date +%s) - t0 ))s"
	cat /tmp/framed.txt
	{
		echo "@@XPMEM $tag-TABLE-BEGIN $lbl"
		cat /tmp/framed.txt
		echo "@@XPMEM $tag-TABLE-END $lbl rc=$rc"
		echo "@@XPMEM $tag-CSV-BEGIN $lbl"
		cat /tmp/framed.csv 2>/dev/null
		echo "@@XPMEM $tag-CSV-END $lbl"
	} > "$R"
	rm -f /tmp/framed.csv /tmp/framed.txt
}

# mode_classic: xpmem-bench -c (BENCH_ARGS) and xpmem-scale
# (BENCH_SCALE_ARGS, "-" for none) with this module, then
# xpmem-bench-classic -c and xpmem-scale-classic with the other
# implementation's (the other way round with CLASSIC_FIRST=1), in this
# boot; with ATTACH_PROFILE=1 or deep attach-profile.sh with each (4k and thp
# owner pages, 4 MiB windows).  Tables, CSV and profiles go to the result
# channel between @@XPMEM CYCLES-*-BEGIN/END, RANKS-*-BEGIN/END and
# ATTACH-PROFILE-BEGIN/END <label> lines (label new or classic).
mode_classic() {
	order="new classic"
	[ "$CLASSIC_FIRST" = 1 ] && order="classic new"
	for l in $order; do
		ko=/xpmem.ko bench=/tools/xpmem-bench scale=/tools/xpmem-scale
		[ "$l" = classic ] &&
			ko=/xpmem-classic.ko bench=/xpmem-bench-classic scale=/xpmem-scale-classic
		say "---- bench: $bench -c $BENCH_ARGS, module $ko ----"
		if ! insmod $ko; then
			say "insmod $ko failed"
			continue
		fi
		# shellcheck disable=SC2086 # BENCH_ARGS is a word list
		framed_run CYCLES "$l" $bench -c $BENCH_ARGS
		if [ "$BENCH_SCALE_ARGS" != - ]; then
			say "---- bench: $scale $BENCH_SCALE_ARGS, module $ko ----"
			# shellcheck disable=SC2086 # BENCH_SCALE_ARGS is a word list
			framed_run RANKS "$l" $scale $BENCH_SCALE_ARGS
		fi
		if [ "$ATTACH_PROFILE" != 0 ]; then
			: > /tmp/aprof.txt
			for k in 4k thp; do
				/attach-profile.sh $bench $k 4M "$ATTACH_PROFILE" \
					>> /tmp/aprof.txt 2>&1
			done
			cat /tmp/aprof.txt
			{
				echo "@@XPMEM ATTACH-PROFILE-BEGIN $l"
				cat /tmp/aprof.txt
				echo "@@XPMEM ATTACH-PROFILE-END $l"
			} > "$R"
		fi
		unload_module && say "module $ko unloaded"
	done
}

# mode_bench: one xpmem-bench run with the module: the table goes to the
# console, then table and CSV to the result channel between @@XPMEM BENCH
# lines (report.sh writes them to build/bench/).  Progress (stderr) streams
# to the console.  Shared-memory THP for the memfd baseline of the thp
# kind (off by default: with it, thp compares like with like).
mode_bench() {
	T=/sys/kernel/mm/transparent_hugepage
	[ -w $T/shmem_enabled ] && echo advise > $T/shmem_enabled
	say "---- bench: xpmem-bench $BENCH_ARGS through the module ----"
	say "THP enabled: $(cat $T/enabled 2>/dev/null), shmem_enabled:" \
		"$(cat $T/shmem_enabled 2>/dev/null), 2 MiB huge pages free:" \
		"$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null)"
	if insmod /xpmem.ko; then
		t0=$(date +%s)
		# shellcheck disable=SC2086 # BENCH_ARGS is a word list
		(cd /tmp && XPMEM_BACKEND=kernel /tools/xpmem-bench $BENCH_ARGS \
			-o /tmp/bench.csv > /tmp/bench.txt)
		rc=$?
		say "xpmem-bench exit status $rc after $(( $(date +%s) - t0 ))s"
		cat /tmp/bench.txt
		{
			echo "@@XPMEM BENCH-TABLE-BEGIN"
			cat /tmp/bench.txt
			echo "@@XPMEM BENCH-TABLE-END rc=$rc"
			echo "@@XPMEM BENCH-CSV-BEGIN"
			cat /tmp/bench.csv 2>/dev/null
			echo "@@XPMEM BENCH-CSV-END"
		} > "$R"
		bench_profile
		unload_module && say "module unloaded"
	else
		say "insmod /xpmem.ko failed"
	fi
}

# mode_scale: xpmem-scale with each module in turn, in one boot:
# /xpmem-base.ko (SCALE_BASE) first if present, then /xpmem.ko.  Table and
# CSV go to the result channel between @@XPMEM SCALE-*-BEGIN/END <label>
# lines.
mode_scale() {
	for ko in /xpmem-base.ko /xpmem.ko; do
		[ -f "$ko" ] || continue
		l=new
		[ "$ko" = /xpmem-base.ko ] && l=base
		say "---- scale: xpmem-scale $SCALE_ARGS, churn ${SCALE_CHURN}s, module $ko ----"
		if ! insmod "$ko"; then
			say "insmod $ko failed"
			continue
		fi
		t0=$(date +%s)
		# shellcheck disable=SC2086 # SCALE_ARGS is a word list
		(cd /tmp && XPMEM_BACKEND=kernel /tools/xpmem-scale $SCALE_ARGS \
			-o /tmp/scale.csv > /tmp/scale.txt)
		rc=$?
		if [ "$rc" = 0 ] && [ "$SCALE_CHURN" != 0 ]; then
			(cd /tmp && XPMEM_BACKEND=kernel /tools/xpmem-scale -c "$SCALE_CHURN" \
				-o /tmp/churn.csv >> /tmp/scale.txt)
			rc=$?
			tail -n +2 /tmp/churn.csv >> /tmp/scale.csv 2>/dev/null
		fi
		say "xpmem-scale exit status $rc after $(( $(date +%s) - t0 ))s"
		cat /tmp/scale.txt
		{
			echo "@@XPMEM SCALE-TABLE-BEGIN $l"
			cat /tmp/scale.txt
			echo "@@XPMEM SCALE-TABLE-END $l rc=$rc"
			echo "@@XPMEM SCALE-CSV-BEGIN $l"
			cat /tmp/scale.csv 2>/dev/null
			echo "@@XPMEM SCALE-CSV-END $l"
		} > "$R"
		if [ "$SCALE_PROFILE" = 1 ]; then
			/inval-profile.sh > /tmp/iprof.txt 2>&1
			cat /tmp/iprof.txt
			{
				echo "@@XPMEM SCALE-PROFILE-BEGIN $l"
				cat /tmp/iprof.txt
				echo "@@XPMEM SCALE-PROFILE-END $l"
			} > "$R"
		fi
		unload_module && say "module $ko unloaded"
	done
}

# run_mode: the mode MODE names, then DONE and power off.
run_mode() {
	case "$MODE" in
	demo) mode_demo ;;
	bench)
		if [ "$BENCH_CLASSIC" = 1 ]; then mode_classic; else mode_bench; fi ;;
	scale) mode_scale ;;
	mpi) mode_mpi ;;
	esac
	finish "done"
}
