#!/bin/busybox sh
# /init of the xpmem test VM (busybox initramfs, packed by selftests/vm/run.sh).
#
# Console (ttyS0; arm64: ttyAMA0) gets everything a human wants to read;
# the result channel (RESULT_DEV: /dev/ttyS1; arm64: the virtio console
# /dev/hvc0) gets a clean, machine-readable copy of each suite's output
# framed by "@@XPMEM" lines, which the host parses (kernel messages never
# go there).
# Settings come from /etc/xpmem-run.conf (see run.sh).

# No `set -e`: if init exits the kernel panics, and one failing step must not
# cost the rest of the run (the host judges everything from the logs).
set -u
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/tools
export HOME=/tmp

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/shm /dev/pts /tmp /dev/hugepages
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t devpts devpts /dev/pts 2>/dev/null
[ -d /sys/kernel/debug ] && mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
if grep -q hugetlbfs /proc/filesystems; then
	mount -t hugetlbfs hugetlbfs /dev/hugepages
	# 128 MiB of huge pages of the default size (64 of 2 MiB on x86_64
	# and on arm64 with 4 KiB pages); none where that size is larger
	# (arm64 with 64 KiB pages: 512 MiB, a quarter of the VM).
	hkb=$(sed -n 's/^Hugepagesize: *\([0-9]*\) kB$/\1/p' /proc/meminfo)
	if [ -n "$hkb" ] && [ "$hkb" -gt 0 ] && [ "$hkb" -le 131072 ]; then
		echo $((131072 / hkb)) > /proc/sys/vm/nr_hugepages 2>/dev/null
	fi
fi
hostname xpmem-vm
# Hung tasks are reported after 20 s instead of 120 s (the host fails the
# run on "blocked for more than"); a suite's timeout is longer than that.
[ -w /proc/sys/kernel/hung_task_timeout_secs ] &&
	echo 20 > /proc/sys/kernel/hung_task_timeout_secs

MODE=check
SUITE_FILTER=
SUITE_TIMEOUT=300
KERNEL_NAME=unknown
# xpmem_stress: off, quick, ci or long (run.sh: ci on the debug kernel, off
# on the others), its own timeout, and XPMEM_STRESS_* settings to pass on.
XPMEM_STRESS=off
STRESS_TIMEOUT=900
STRESS_ENV=
FALLBACK_PASS=1
BENCH_ARGS=
BENCH_PROFILE=
RESULT_DEV=/dev/ttyS1
SCALE_ARGS=
SCALE_CHURN=0
SCALE_PROFILE=0
[ -f /etc/xpmem-run.conf ] && . /etc/xpmem-run.conf

R=$RESULT_DEV
[ -c "$R" ] || R=/dev/console
rec() { echo "@@XPMEM $*" > "$R"; }
say() { echo "xpmem-vm: $*"; }

say "kernel $(uname -r) ($KERNEL_NAME), $(nproc) cpus," \
	"nodes: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)," \
	"mode $MODE, filter '${SUITE_FILTER:-*}'"
rec "START $KERNEL_NAME $(uname -r)"

# matches NAME: true if SUITE_FILTER is empty or NAME contains one of its
# space-separated words.
matches() {
	[ -z "$SUITE_FILTER" ] && return 0
	for w in $SUITE_FILTER; do
		case "$1" in *"$w"*) return 0 ;; esac
	done
	return 1
}

# dstate_pids: tasks (user or kernel) in uninterruptible sleep.  The state
# is the field after the last ')' of /proc/PID/stat (comm may contain any
# character).
dstate_pids() {
	for d in /proc/[0-9]*; do
		s=$(cat "$d/stat" 2>/dev/null) || continue
		s=${s##*) }
		[ "${s%% *}" = D ] && echo "${d#/proc/}"
	done
}

# dstate_check PASS NAME: after a suite, a task that stays in D state for
# 5 s (passing through D is normal) is reported with its kernel stack and
# recorded as a failure of that suite (once per task).
DSTATE_SEEN=" "
dstate_check() {
	stuck=
	for p in $(dstate_pids); do
		case "$DSTATE_SEEN" in *" $p "*) ;; *) stuck="$stuck $p" ;; esac
	done
	i=0
	while [ -n "$stuck" ] && [ "$i" -lt 5 ]; do
		sleep 1
		i=$((i + 1))
		now=" $(dstate_pids | tr '\n' ' ') "
		keep=
		for p in $stuck; do
			case "$now" in *" $p "*) keep="$keep $p" ;; esac
		done
		stuck=$keep
	done
	for p in $stuck; do
		DSTATE_SEEN="$DSTATE_SEEN$p "
		comm=$(cat "/proc/$p/comm" 2>/dev/null)
		say "task $p ($comm) in D state after suite $2 ($1); wchan $(cat "/proc/$p/wchan" 2>/dev/null); stack:"
		sed 's/^/  /' "/proc/$p/stack" 2>/dev/null
		{
			echo "@@XPMEM DSTATE $1 $2 $p $comm"
			sed 's/^/@@XPMEM DSTACK /' "/proc/$p/stack" 2>/dev/null
		} > "$R"
	done
}

# procs_dump SID: on the console, every process of session SID (a timed
# out suite) with its state, wait channel and command line, and its kernel
# stack: what a hang was waiting for.
procs_dump() {
	sid=$1
	say "suite timed out; the processes of its session (pid ppid state wchan cmdline, stack):"
	for d in /proc/[0-9]*; do
		st=$(cut -d')' -f2- "$d/stat" 2>/dev/null) || continue
		# after the comm: state ppid pgrp session ...
		# shellcheck disable=SC2086
		set -- $st
		[ "${4:-}" = "$sid" ] || continue
		say "  ${d#/proc/} ppid $2 $1 $(cat "$d/wchan" 2>/dev/null) $(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)"
		sed 's/^/      /' "$d/stack" 2>/dev/null
	done
}

# run_suite PASS NAME [ENV...]: run /selftests/NAME in its own session (so
# that the whole process group can be killed: a test's children must not
# outlive it) with a watchdog of SUITE_TIMEOUT seconds (RUN_TIMEOUT if set),
# in its own tmpfs directory; stream the output to the console, then copy it
# to the result channel, then look for tasks left in D state.  Output goes
# to a file, not a pipe, so a child stuck in the kernel cannot hang the
# runner.
run_suite() {
	pass=$1; name=$2; shift 2
	tmo=${RUN_TIMEOUT:-$SUITE_TIMEOUT}
	dir=/tmp/run-$pass-$name
	mkdir -p "$dir"
	: > "$dir/.out"
	say "=== suite $name ($pass) start"
	t0=$(date +%s)
	tail -f "$dir/.out" &
	tailpid=$!
	setsid sh -c 'cd "$1" && shift && exec env "$@"' sh "$dir" "$@" \
		"/selftests/$name" > "$dir/.out" 2>&1 < /dev/null &
	pid=$!
	( sleep "$tmo"; echo timeout > "$dir/.timeout"
	  procs_dump "$pid"
	  kill -TERM -- "-$pid" 2>/dev/null; sleep 5; kill -KILL -- "-$pid" 2>/dev/null ) &
	dog=$!
	wait "$pid"
	rc=$?
	kill "$dog" 2>/dev/null
	kill -KILL -- "-$pid" 2>/dev/null   # leftover children of the suite
	sleep 1
	kill "$tailpid" 2>/dev/null
	wait "$tailpid" 2>/dev/null
	t=$(( $(date +%s) - t0 ))
	[ -f "$dir/.timeout" ] && rc=124
	{
		echo "@@XPMEM BEGIN $pass $name"
		cat "$dir/.out"
		echo "@@XPMEM END $pass $name rc=$rc time=$t"
	} > "$R"
	tot=$(grep '^# Totals:' "$dir/.out" | tail -n 1)
	[ "$rc" = 124 ] && tot="TIMEOUT after ${tmo}s; $tot"
	say "=== suite $name ($pass) rc=$rc ${t}s ${tot:-NO TOTALS LINE}"
	dstate_check "$pass" "$name"
}

kmemleak_dump() {
	f=/sys/kernel/debug/kmemleak
	[ -w "$f" ] || return 0
	# Twice, with a settle in between, as Documentation/dev-tools/kmemleak.rst
	# suggests (objects younger than 5 s are never reported), while the
	# module is loaded.  The boot scan only serves to forget boot-time
	# leaks, and the final one (after rmmod and the fallback pass, each
	# scan about 20 s on the debug kernel under TCG) looks for what the
	# module's exit left: once is enough there.
	echo scan > "$f"
	if [ "$1" = loaded ]; then sleep 5; echo scan > "$f"; fi
	n=$(grep -c 'unreferenced object' "$f")
	say "kmemleak ($1): $n unreferenced object(s)"
	{ echo "@@XPMEM KMEMLEAK-BEGIN $1"; cat "$f"; echo "@@XPMEM KMEMLEAK-END $1"; } > "$R"
	sed 's/^/kmemleak| /' "$f"
}

# unload_module: rmmod xpmem, retrying for up to 5 s (cleanup the module
# defers to a workqueue may still hold a reference just after the suites).
unload_module() {
	i=0
	while ! rmmod xpmem 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -ge 5 ]; then
			rmmod xpmem
			return 1
		fi
		sleep 1
	done
	[ "$i" = 0 ] || say "rmmod xpmem succeeded after $i retries"
	return 0
}

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

suites() { # suites PREFIX: basenames of /selftests/PREFIX* that match the filter
	for s in /selftests/"$1"*; do
		[ -x "$s" ] || continue
		n=${s##*/}
		[ "$n" = xpmem_stress ] && [ "$XPMEM_STRESS" = off ] && continue
		matches "$n" && echo "$n"
	done
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

if [ "$MODE" = demo ]; then
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
	rec DONE
	say "done, powering off"
	sync
	reboot -f
	sleep 5; poweroff -f
fi

if [ "$MODE" = bench ]; then
	# One xpmem-bench run with the module: the table goes to the console,
	# then table and CSV to the result channel between @@XPMEM BENCH lines
	# (run.sh writes them to build/bench/).  Progress (stderr) streams to
	# the console.  Shared-memory THP for the memfd baseline of the thp
	# kind (off by default: with it, thp compares like with like).
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
	rec DONE
	say "done, powering off"
	sync
	reboot -f
	sleep 5; poweroff -f
fi

if [ "$MODE" = scale ]; then
	# xpmem-scale with each module in turn, in one boot: /xpmem-base.ko
	# (SCALE_BASE) first if present, then /xpmem.ko.  Table and CSV go to
	# the result channel between @@XPMEM SCALE-*-BEGIN/END <label> lines.
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
	rec DONE
	say "done, powering off"
	sync
	reboot -f
	sleep 5; poweroff -f
fi

# ---- check mode -------------------------------------------------------------

if [ -w /sys/kernel/debug/kmemleak ]; then
	# Leaks from boot are not ours: print them, then forget them.
	kmemleak_dump boot
	echo clear > /sys/kernel/debug/kmemleak
fi

if [ -f /xpmem.ko ]; then
	if insmod /xpmem.ko; then
		rec "RESULT insmod ok"
		say "module loaded; /dev/xpmem: $(ls -l /dev/xpmem 2>&1)"
	else
		rec "RESULT insmod fail"
		say "insmod /xpmem.ko FAILED"
	fi
else
	say "no /xpmem.ko in this initramfs (kernel/ empty?)"
fi

for n in $(suites xpmem_); do
	if [ "$n" = xpmem_stress ]; then
		RUN_TIMEOUT=$STRESS_TIMEOUT
		# shellcheck disable=SC2086 # STRESS_ENV is a word list
		run_suite kernel "$n" XPMEM_BACKEND=kernel \
			XPMEM_STRESS="$XPMEM_STRESS" $STRESS_ENV
		RUN_TIMEOUT=
	else
		run_suite kernel "$n" XPMEM_BACKEND=kernel
	fi
done
for n in $(suites lib_); do run_suite kernel "$n" XPMEM_BACKEND=kernel; done

if [ -w /sys/kernel/debug/kmemleak ] && [ -d /sys/module/xpmem ]; then
	# While the module is loaded its symbols resolve in the backtraces.
	kmemleak_dump loaded
fi

if [ -d /sys/module/xpmem ]; then
	if unload_module; then
		rec "RESULT rmmod_after_suites ok"
		say "rmmod xpmem: ok"
	else
		rec "RESULT rmmod_after_suites fail"
		say "rmmod xpmem: FAILED"
		lsmod
	fi
fi

if [ "$FALLBACK_PASS" = 1 ]; then
	for n in $(suites lib_); do run_suite fallback "$n" -u XPMEM_BACKEND; done
else
	say "fallback pass skipped (FALLBACK_PASS=0)"
fi

if [ -w /sys/kernel/debug/kmemleak ]; then
	kmemleak_dump final
fi

rec DONE
say "all suites done, powering off"
sync
reboot -f
sleep 5
poweroff -f
