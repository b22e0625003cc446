#!/bin/busybox sh
# Usage: /init (rdinit=/init on the kernel command line)
#
# /init of the xpmem test VM (busybox initramfs, packed by selftests/vm/run.sh).
#
# Console (ttyS0; arm64: ttyAMA0) gets everything a human wants to read;
# the result channel (RESULT_DEV: /dev/ttyS1; arm64: the virtio console
# /dev/hvc0) gets a clean, machine-readable copy of each suite's output
# framed by "@@XPMEM" lines, which the host parses (kernel messages never
# go there).
# Settings come from /etc/xpmem-run.conf, the suites to run (check mode)
# from /etc/xpmem-suites.txt, one line each: "PASS NAME TIMEOUT
# [ENV-ARG...]" (both written by run.sh, selftests/vm/initramfs.sh).  The
# other modes (demo, bench, scale) are in /init-modes.sh.
# shellcheck shell=dash

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
KERNEL_NAME=unknown
RESULT_DEV=/dev/ttyS1
# shellcheck source=/dev/null # written by run.sh
[ -f /etc/xpmem-run.conf ] && . /etc/xpmem-run.conf
SUITES=/etc/xpmem-suites.txt

R=$RESULT_DEV
[ -c "$R" ] || R=/dev/console
rec() { echo "@@XPMEM $*" > "$R"; }
say() { echo "xpmem-vm: $*"; }

say "kernel $(uname -r) ($KERNEL_NAME), $(nproc) cpus," \
	"nodes: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)," \
	"mode $MODE, filter '${SUITE_FILTER:-*}'"
rec "START $KERNEL_NAME $(uname -r)"

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

# run_suite PASS NAME TIMEOUT [ENV...]: run /selftests/NAME in its own
# session (so that the whole process group can be killed: a test's children
# must not outlive it) with a watchdog of TIMEOUT seconds, in its own tmpfs
# directory; stream the output to the console, then copy it
# to the result channel, then look for tasks left in D state.  Output goes
# to a file, not a pipe, so a child stuck in the kernel cannot hang the
# runner.
run_suite() {
	pass=$1; name=$2; tmo=$3; shift 3
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

# finish WHAT: report DONE, power off.
finish() {
	rec DONE
	say "$1, powering off"
	sync
	reboot -f
	sleep 5
	poweroff -f
}

# run_pass PASS: every suite of $SUITES in pass PASS, in order.
run_pass() {
	list=$(grep "^$1 " "$SUITES" 2>/dev/null)
	while read -r p n tmo env; do
		[ -n "$n" ] || continue
		# shellcheck disable=SC2086 # the ENV-ARGs are a word list
		run_suite "$p" "$n" "$tmo" $env
	done <<EOF
$list
EOF
}

if [ "$MODE" != check ]; then
	# shellcheck source=selftests/vm/init-modes.sh
	. /init-modes.sh
	run_mode
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

run_pass kernel

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

# An attachment's end runs within a tick of its release, so the module's
# exit runs the ends still waiting: unload_after_detach removes the module
# as soon as its child's attachment is gone; a timer left behind would fire
# into the freed module (a kernel report, which judge.sh counts).
if [ -f /xpmem.ko ] && [ ! -d /sys/module/xpmem ] && insmod /xpmem.ko; then
	if /selftests/unload_after_detach; then
		rec "RESULT rmmod_right_after_detach ok"
	else
		rec "RESULT rmmod_right_after_detach fail"
		unload_module
	fi
fi

if grep -q '^fallback ' "$SUITES" 2>/dev/null; then
	run_pass fallback
else
	say "no fallback pass (FALLBACK_PASS=0, or no lib_* suite selected)"
fi

if [ -w /sys/kernel/debug/kmemleak ]; then
	kmemleak_dump final
fi

finish "all suites done"
