#!/bin/busybox sh
# Usage: . /init-mpi.sh   (sourced by /init-modes.sh in the test VM; run.sh
#        --mpi runs mode_mpi)
#
# Debian's Open MPI over UCX, with and without the module, as root and as
# a normal user (alice, uid 1000).  Every run is xpmem-mpi-bench on two
# ranks under mpirun --mca pml ucx --mca osc ucx, with what Open MPI 4.1
# needs to take UCX without an InfiniBand adapter (pml_ucx_tls and
# pml_ucx_devices any), ranks not bound by mpirun (the guest's topology is
# not what hwloc expects) but each pinned to a CPU of its own with taskset
# (/tmp/mpi-rank.sh), and libuct_xpmem.so.0 preloaded (Debian's libuct
# does not load a module it was not built with).  The benchmark checks every byte
# it moves; UCX logs at info level into a file per process, so its
# selection lines ("ep_cfg[N]: tag(...) rma(...)") are kept apart from the
# table.
#
# RESULT lines (selftests/vm/judge.sh counts them):
#   insmod, ucx_info_xpmem  the module loads; ucx_info -d lists xpmem
#   mpi_sm_picks_xpmem      UCX_TLS=sm,self: UCX itself puts xpmem on the
#                           lanes of the tagged messages, every transfer
#                           checked, the module counted page faults
#   mpi_T_U                 UCX_TLS=self,posix,T (T xpmem or cma) or
#                           self,posix (T posix) as U (root or alice):
#                           exit status 0 and every transfer checked; for
#                           xpmem also the lanes and the page faults
#   mpi_no_leftovers        after the runs the module holds no segment,
#                           permit or attachment and /proc/xpmem-objects
#                           no process
#   rmmod                   the module unloads
#   nomod_xpmem_unavailable without the module ucx_info -d lists no xpmem
#                           and UCX's debug log says it is unavailable
#   nomod_sm_U              without the module, UCX_TLS unset, as U: exit
#                           status 0, every transfer checked, nothing
#                           printed but the benchmark's table
# Bandwidths are not judged here (timings under TCG): the tables and CSVs
# go to the result channel framed as MPI-TABLE/MPI-CSV LABEL, LABEL being
# T-U or nomod-U, and judge.sh writes the comparison.
# shellcheck shell=dash

UCT_XPMEM=/usr/lib/x86_64-linux-gnu/ucx/libuct_xpmem.so.0
MPI_STATS=/sys/class/misc/xpmem/stats

# mpi_check NAME CMD...: run CMD, record RESULT NAME ok or fail by its exit
# status.
mpi_check() {
	n=$1
	shift
	if "$@"; then rec "RESULT $n ok"; else rec "RESULT $n fail"; fi
}

# mpi_faults: the module's page-fault count, 0 without the module.
mpi_faults() {
	cat $MPI_STATS/faults 2>/dev/null || echo 0
}

# mpi_bench LABEL USER TLS [LOG]: xpmem-mpi-bench (MPI_BENCH_ARGS) on two
# ranks as USER with UCX_TLS=TLS (unset if empty); with LOG, UCX's info log
# of each process in /tmp/ucx-LABEL.<pid>.  Output in /tmp/mpi-LABEL.txt,
# table and CSV framed on the result channel.  Sets rc (mpirun's exit
# status), faults (the module's page faults during the run) and checked
# (0 when the benchmark did not say every transfer was checked).
mpi_bench() {
	l=$1 who=$2 tls=$3 log=${4:-}
	say "---- mpi $l: xpmem-mpi-bench $MPI_BENCH_ARGS as $who, UCX_TLS=${tls:-unset} ----"
	rm -f /tmp/ucx-"$l".* /tmp/mpi-"$l".csv
	env=""
	[ -z "$tls" ] || env="UCX_TLS=$tls"
	[ -z "$log" ] || env="$env UCX_LOG_LEVEL=info UCX_LOG_FILE=/tmp/ucx-$l.%p"
	root=""
	[ "$who" = root ] && root=--allow-run-as-root
	cmd="cd /tmp && env $env LD_PRELOAD=$UCT_XPMEM /usr/bin/mpirun.openmpi $root \
--oversubscribe --bind-to none -np 2 -x LD_PRELOAD ${tls:+-x UCX_TLS} ${log:+-x UCX_LOG_LEVEL -x UCX_LOG_FILE} \
--mca plm isolated --mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
/tmp/mpi-rank.sh /tools/xpmem-mpi-bench $MPI_BENCH_ARGS -o /tmp/mpi-$l.csv"
	f0=$(mpi_faults) t0=$(date +%s)
	if [ "$who" = root ]; then
		sh -c "$cmd" > /tmp/mpi-"$l".txt 2>&1
	else
		su "$who" -c "$cmd" > /tmp/mpi-"$l".txt 2>&1
	fi
	rc=$?
	faults=$(( $(mpi_faults) - f0 ))
	checked=0
	grep -q '^# every transfer checked' /tmp/mpi-"$l".txt && checked=1
	say "exit status $rc after $(( $(date +%s) - t0 ))s; xpmem page faults $faults"
	cat /tmp/mpi-"$l".txt
	{
		echo "@@XPMEM MPI-TABLE-BEGIN $l"
		cat /tmp/mpi-"$l".txt
		echo "@@XPMEM MPI-TABLE-END $l rc=$rc"
		echo "@@XPMEM MPI-CSV-BEGIN $l"
		cat /tmp/mpi-"$l".csv 2>/dev/null
		echo "@@XPMEM MPI-CSV-END $l"
	} > "$R"
}

# mpi_lanes LABEL: UCX's selection lines of the run LABEL; true when the
# lanes of its tagged messages between the two processes (ep_cfg lines
# whose tag lanes are not self's loopback) include xpmem.
mpi_lanes() {
	cat /tmp/ucx-"$1".* 2>/dev/null | grep 'ep_cfg\[' | sed 's/.*INFO *//' | sort -u
	cat /tmp/ucx-"$1".* 2>/dev/null | grep 'ep_cfg\[.*tag(' | grep -v 'tag(self/' |
		grep -q 'tag([^)]*xpmem/'
}

# mpi_ok: the last mpi_bench exited 0 and checked every transfer.
mpi_ok() {
	[ "$rc" = 0 ] && [ "$checked" = 1 ]
}

# mpi_xpmem_ok LABEL: mpi_ok, the module counted faults, xpmem on the lanes.
mpi_xpmem_ok() {
	mpi_ok && [ "$faults" -gt 0 ] && mpi_lanes "$1"
}

# mpi_quiet LABEL: the run printed nothing but the benchmark's table
# (comment lines, the header and the rows).
mpi_quiet() {
	! grep -vE '^#|^test +bytes|^(pingpong|stream|put|get) +[0-9]' /tmp/mpi-"$1".txt
}

# mpi_nomod_ok LABEL: mpi_ok and mpi_quiet LABEL.
mpi_nomod_ok() {
	mpi_ok && mpi_quiet "$1"
}

# mpi_no_leftovers: no segment, permit or attachment in the module, no
# process in /proc/xpmem-objects.
mpi_no_leftovers() {
	ok=0
	for c in segments permits attachments; do
		v=$(cat $MPI_STATS/$c)
		say "after the MPI runs: $c $v"
		[ "$v" = 0 ] || ok=1
	done
	left=$(ls /proc/xpmem-objects 2>/dev/null)
	[ -z "$left" ] || { say "/proc/xpmem-objects still lists: $left"; ok=1; }
	return $ok
}

mode_mpi() {
	# One rank per CPU: left to the scheduler both ranks share one CPU
	# (each NUMA node of the guest has one), and a ping-pong then waits
	# for the scheduler tick.
	# shellcheck disable=SC2016
	printf '#!/bin/busybox sh\nexec taskset -c $((OMPI_COMM_WORLD_LOCAL_RANK %% %s)) "$@"\n' \
		"$(grep -c '^processor' /proc/cpuinfo)" > /tmp/mpi-rank.sh
	chmod 755 /tmp/mpi-rank.sh
	ifconfig lo 127.0.0.1 up ||
		say "no IPv4 in this kernel (CONFIG_INET): Open MPI's PMIx server cannot listen, the MPI runs will fail"
	chmod 1777 /tmp
	mpi_check insmod insmod /xpmem.ko
	say "---- ucx_info -d, libuct_xpmem.so.0 preloaded ----"
	LD_PRELOAD=$UCT_XPMEM /usr/bin/ucx_info -d > /tmp/ucx-d.txt 2>&1
	grep -B2 -A12 'Transport: xpmem' /tmp/ucx-d.txt || head -n 20 /tmp/ucx-d.txt
	mpi_check ucx_info_xpmem grep -q 'Transport: xpmem' /tmp/ucx-d.txt
	say "without the preload, ucx_info -d lists xpmem: $(/usr/bin/ucx_info -d 2>&1 | grep -c 'Transport: xpmem') time(s)"

	mpi_bench sm-root root sm,self log
	mpi_check mpi_sm_picks_xpmem mpi_xpmem_ok sm-root
	for who in root alice; do
		mpi_bench "xpmem-$who" "$who" self,posix,xpmem log
		mpi_check "mpi_xpmem_$who" mpi_xpmem_ok "xpmem-$who"
		mpi_bench "cma-$who" "$who" self,posix,cma
		mpi_check "mpi_cma_$who" mpi_ok
		mpi_bench "posix-$who" "$who" self,posix
		mpi_check "mpi_posix_$who" mpi_ok
	done
	mpi_check mpi_no_leftovers mpi_no_leftovers
	mpi_check rmmod unload_module

	say "---- without the module ----"
	/usr/bin/ucx_info -d > /tmp/ucx-d.txt 2>&1
	LD_PRELOAD=$UCT_XPMEM UCX_LOG_LEVEL=debug /usr/bin/ucx_info -d 2>&1 |
		grep 'xpmem' | grep -i 'unavailable' > /tmp/ucx-unavail.txt
	cat /tmp/ucx-unavail.txt
	mpi_check nomod_xpmem_unavailable sh -c \
		'! grep -q "Transport: xpmem" /tmp/ucx-d.txt && [ -s /tmp/ucx-unavail.txt ]'
	for who in root alice; do
		mpi_bench "nomod-$who" "$who" ""
		mpi_check "nomod_sm_$who" mpi_nomod_ok "nomod-$who"
	done
}
