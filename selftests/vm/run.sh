#!/bin/bash
# Usage: selftests/vm/run.sh [--demo|--bench|--scale|--mpi] KERNEL [SUITE-FILTER...]
#
# Boot one test kernel in QEMU (TCG) and run the selftests in it.
#   KERNEL        debian-6.1 | debian-6.12 | debug-6.12 | bullseye-5.10 |
#                 sid-7.2 | arm64-6.12 | arm64-6.12-64k (the last five
#                 built from source; debug-6.12 with KASAN, lockdep and
#                 kmemleak; the arm64 ones with 4 KiB and 64 KiB pages)
#   SUITE-FILTER  words; only suites whose name contains one of them run
#                 (e.g. `selftests/vm/run.sh debian-6.1 xpmem_core lib_abi`)
#   --demo        run /tools/xpmem-demo with and without the module instead
#   --bench       run /tools/xpmem-bench (options from BENCH_ARGS) once with
#                 the module; write its table, CSV and a gnuplot plot to
#                 build/bench/KERNEL.{txt,csv,svg}; with BENCH_CLASSIC=SCRIPT,
#                 instead its registration-cache miss cycles (-c, options
#                 from BENCH_ARGS) with this module, then, in the same boot,
#                 with another implementation's module and library, built
#                 by `SCRIPT KDIR OUTDIR` (into build/classic/KERNEL, kept;
#                 it must leave OUTDIR/kernel/xpmem.ko, OUTDIR/include/xpmem.h
#                 and OUTDIR/lib/.libs/libxpmem.a; x86_64 only), side by
#                 side: build/bench/KERNEL.cycles{,-classic}.{txt,csv},
#                 KERNEL.cycles-compare.txt, and xpmem-scale's ranks mode
#                 (all-to-all attach, passes, detach; options from
#                 BENCH_SCALE_ARGS, default "-n 2,4,8,16 -r 5", "-" skips
#                 it) with each: KERNEL.ranks{,-classic}.{txt,csv},
#                 KERNEL.ranks-compare.txt (CLASSIC_FIRST=1: the other
#                 module first); with ATTACH_PROFILE=1 also
#                 where ATTACH and DETACH spend their time in each
#                 (selftests/vm/attach-profile.sh): KERNEL.attach-profile.txt
#                 (ATTACH_PROFILE=deep: every function the calls make, to
#                 a depth of 7, not only the listed ones);
#                 SCRIPT selftests/vm/build-rev.sh (with REV=) makes the
#                 other module an older revision of this one
#   --scale       run /tools/xpmem-scale (N ranks, options from SCALE_ARGS;
#                 then its churn mode for SCALE_CHURN seconds, default 20,
#                 0 skips it) with the module; with SCALE_BASE=<git rev>,
#                 first with the module built from that revision, in the
#                 same boot (before/after side by side); with
#                 SCALE_PROFILE=1, also where the owner's MADV_DONTNEED
#                 spends its time (selftests/vm/inval-profile.sh).  Output:
#                 build/bench/KERNEL.scale[-base].{txt,csv,svg},
#                 KERNEL.scale[-base].profile.txt
#   --mpi         Debian's Open MPI over UCX's xpmem transport (x86_64):
#                 the guest gets the files of this machine's openmpi-bin,
#                 libopenmpi3, libucx0, ucx-utils (and the libraries they
#                 load) and libucx0-xpmem (debian/ucx/build.sh), and runs
#                 xpmem-mpi-bench (MPI_BENCH_ARGS, default "-m 4M -n 10")
#                 on two ranks under mpirun --mca pml ucx: with the module,
#                 UCX_TLS=sm,self and xpmem, cma, posix each as root and
#                 as alice; without it, as both (init-mpi.sh says what
#                 counts); tables and CSV: build/bench/KERNEL.mpi-LABEL.
#                 {txt,csv}, side by side in KERNEL.mpi-compare.txt;
#                 needs a kernel with IPv4 (Open MPI's PMIx listens on
#                 loopback): Debian's kernels, not the ones built from
#                 base.config, which has no CONFIG_INET
#
# Steps: build xpmem.ko for KERNEL in build/mod/KERNEL; pack a busybox
# initramfs (selftests/vm/initramfs.sh: init = selftests/vm/init.sh, the
# module, build/selftests/*, build/tools/*, the library, the shared
# libraries the tools need, and the suite list, computed here from the
# built suites); boot qemu-system-x86_64 -accel tcg -cpu max with two NUMA
# nodes; then judge the run (selftests/vm/judge.sh, which says what fails a
# run; --bench and --scale reports: selftests/vm/report.sh).  arm64
# kernels: the userspace is cross-built into build/arm64
# (CC=aarch64-linux-gnu-gcc), the static busybox comes from Debian's
# busybox-static:arm64 (apt-get download, kept in build/arm64/busybox/),
# and the VM is qemu-system-aarch64 -M virt -cpu max -accel tcg (console
# ttyAMA0, results on a virtio console, hvc0).
# Logs: build/qemu/KERNEL/{console.log,results.log,suites.txt,run.env};
# summary line in build/qemu/KERNEL/result ("PASS FAIL SKIP WALLSECONDS";
# also copied to $RESULT_FILE if set); the modes' in build/qemu/KERNEL.MODE
# (demo, bench, scale, mpi), their modules in build/mod/KERNEL.MODE.  If
# another run holds that directory, this run uses DIR.<pid> instead.
#
# Environment: VM_TIMEOUT (s, whole VM; default 900, debug-6.12 and arm64: 1800;
#   plus STRESS_TIMEOUT in long mode; --bench: 1800, debug-6.12: 3600),
#   BENCH_ARGS (--bench: xpmem-bench options, e.g. "-s 4K,64M -r 3";
#   default none, i.e. the tool's defaults), BENCH_PROFILE (--bench: if
#   set, xpmem-bench options for a second run traced with function_graph,
#   e.g. "-s 64M -m 4k,thp -r 1": time per kernel function in the fault
#   handlers, to build/bench/KERNEL.profile.txt;
#   selftests/vm/fault-profile.sh), SUITE_TIMEOUT (s per suite, default
#   300), VM_MEM_MB (default 2048, split over two NUMA nodes), VM_SMP (2),
#   VERBOSE=1 streams the console live, NO_BUILD=1 skips `make userspace`,
#   FALLBACK_PASS=0|1 (the lib_* pass on the shm fallback; default 1 on
#   debian-6.12, bullseye-5.10 and arm64, 0 on the others),
#   B (build dir, default build), CROSS_COMPILE (arm64 userspace and
#   module; default aarch64-linux-gnu-).
#   xpmem_stress: XPMEM_STRESS (mode on debug kernels: off|quick|ci|long,
#   default ci), XPMEM_STRESS_STOCK (mode on the other kernels, default
#   off), STRESS_TIMEOUT (s for that suite; quick 600, ci 1200, long
#   28800), and every other XPMEM_STRESS_* variable (SEED, ONLY, FUZZ_OPS,
#   ...; see selftests/xpmem_stress.c) is passed to the suite.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
B=${B:-build}
. selftests/vm/kernels.sh

mode=check
case "${1:-}" in
--demo) mode=demo; shift ;;
--bench) mode=bench; shift ;;
--scale) mode=scale; shift ;;
--mpi) mode=mpi; shift ;;
esac
[ $# -ge 1 ] || { sed -n '2,34p' "$0" >&2; exit 1; }
kname=$1; shift
filter="$*"

die() { echo "run.sh[$kname]: $*" >&2; exit 1; }

# The architecture's tools first (a kernel of the other one is built by
# resolve_kernel, with the cross compiler).
case "$kname" in
arm64-*)
	cross=${CROSS_COMPILE:-aarch64-linux-gnu-}
	for t in qemu-system-aarch64 "${cross}gcc" "${cross}ar" "${cross}readelf"; do
		command -v "$t" >/dev/null || die "$t missing; run selftests/vm/deps.sh arm64 as root"
	done ;;
*)
	command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing; run selftests/vm/deps.sh as root"
	[ -x /bin/busybox ] || die "/bin/busybox missing (busybox-static); run selftests/vm/deps.sh as root" ;;
esac

resolve_kernel "$kname" "$top" "$B" || die "cannot resolve kernel"
# Per architecture: the userspace build dir (UB), the QEMU binary, the
# kernel's console and the guest's result channel (init.sh writes the
# @@XPMEM lines there; QEMU puts them in results.log).
case "$KARCH" in
arm64)
	UB=$B/arm64
	qemu="qemu-system-aarch64"
	console=ttyAMA0
	result_dev=/dev/hvc0 ;;
*)
	UB=$B
	qemu="qemu-system-x86_64"
	console=ttyS0
	result_dev=/dev/ttyS1 ;;
esac
# xpmem_stress runs in mode XPMEM_STRESS (default ci) on the debug kernel
# and in mode XPMEM_STRESS_STOCK (default off) on the others.
case "$kname" in
debug-*) stress=${XPMEM_STRESS:-ci} ;;
*) stress=${XPMEM_STRESS_STOCK:-off} ;;
esac
case "$stress" in
off) stress_timeout=0 ;;
quick) stress_timeout=600 ;;
ci) stress_timeout=1200 ;;
long) stress_timeout=28800 ;;
*) die "XPMEM_STRESS/XPMEM_STRESS_STOCK: off, quick, ci or long, not '$stress'" ;;
esac
stress_timeout=${STRESS_TIMEOUT:-$stress_timeout}
# Only debug-6.12 has KASAN and lockdep (debug.config): slow under TCG.
# arm64 under TCG (a foreign architecture) is slower too.
case "$kname" in debug-* | arm64-*) def_timeout=1800 ;; *) def_timeout=900 ;; esac
# Pass 2 (lib_* suites on the shm fallback, module unloaded) exercises no
# module code, only the kernel's memfd, socket and pidfd calls: it runs by
# default on the oldest kernel (bullseye-5.10), on Debian's 6.12 and on
# arm64, and elsewhere with FALLBACK_PASS=1 (on the debug kernel it costs
# minutes: every file and socket is slow under KASAN and TCG).
case "$kname" in
debian-6.12 | bullseye-* | arm64-*) fallback_pass=${FALLBACK_PASS:-1} ;;
*) fallback_pass=${FALLBACK_PASS:-0} ;;
esac
# --bench and --scale: twice the usual limit, room for larger BENCH_ARGS
# and SCALE_ARGS than the tools' defaults.
[ "$mode" = bench ] && def_timeout=$((def_timeout * 2))
[ "$mode" = scale ] && def_timeout=$((def_timeout * 2))
scale_args=${SCALE_ARGS:-}
[[ "$scale_args" =~ ^[A-Za-z0-9_.,:+\ -]*$ ]] ||
	die "SCALE_ARGS: only letters, digits, spaces and _.,:+- allowed, not '$scale_args'"
scale_churn=${SCALE_CHURN:-20}
[[ "$scale_churn" =~ ^[0-9]+$ ]] || die "SCALE_CHURN: seconds, not '$scale_churn'"
scale_profile=${SCALE_PROFILE:-0}
[[ "$scale_profile" =~ ^[01]$ ]] || die "SCALE_PROFILE: 0 or 1, not '$scale_profile'"
scale_base=${SCALE_BASE:-}
if [ -n "$scale_base" ]; then
	[ "$mode" = scale ] || die "SCALE_BASE needs --scale"
	git rev-parse --verify -q "$scale_base^{commit}" >/dev/null ||
		die "SCALE_BASE: '$scale_base' is not a commit of this repository"
fi
mpi_bench_args=${MPI_BENCH_ARGS:--m 4M -n 10}
[[ "$mpi_bench_args" =~ ^[A-Za-z0-9_.,:+\ -]*$ ]] ||
	die "MPI_BENCH_ARGS: only letters, digits, spaces and _.,:+- allowed, not '$mpi_bench_args'"
bench_args=${BENCH_ARGS:-}
bench_scale_args=${BENCH_SCALE_ARGS:--n 2,4,8,16 -r 5}
[[ "$bench_scale_args" =~ ^[A-Za-z0-9_.,:+\ -]*$ ]] ||
	die "BENCH_SCALE_ARGS: only letters, digits, spaces and _.,:+- allowed, not '$bench_scale_args'"
[[ "$bench_args" =~ ^[A-Za-z0-9_.,:+\ -]*$ ]] ||
	die "BENCH_ARGS: only letters, digits, spaces and _.,:+- allowed, not '$bench_args'"
bench_profile=${BENCH_PROFILE:-}
bench_classic=${BENCH_CLASSIC:-}
attach_profile=${ATTACH_PROFILE:-0}
classic_first=${CLASSIC_FIRST:-0}
[[ "$classic_first" =~ ^[01]$ ]] || die "CLASSIC_FIRST: 0 or 1, not '$classic_first'"
[[ "$attach_profile" =~ ^(0|1|deep)$ ]] || die "ATTACH_PROFILE: 0, 1 or deep, not '$attach_profile'"
if [ -n "$bench_classic" ]; then
	[ "$mode" = bench ] || die "BENCH_CLASSIC needs --bench"
	[ "$KARCH" = x86_64 ] || die "BENCH_CLASSIC: x86_64 kernels only"
	[ -x "$bench_classic" ] || die "BENCH_CLASSIC: '$bench_classic' is not an executable script"
	bench_classic=$(realpath "$bench_classic")
fi
[[ "$bench_profile" =~ ^[A-Za-z0-9_.,:+\ -]*$ ]] ||
	die "BENCH_PROFILE: only letters, digits, spaces and _.,:+- allowed, not '$bench_profile'"
[ "$stress" = long ] && def_timeout=$((def_timeout + stress_timeout))
vm_timeout=${VM_TIMEOUT:-$def_timeout}
suite_timeout=${SUITE_TIMEOUT:-300}
mem=${VM_MEM_MB:-2048}
smp=${VM_SMP:-2}

# One run per kernel directory at a time: teammates share the tree.  If the
# default directory is busy, use a private one for this run.  A mode other
# than the suites has its own (KERNEL.MODE), so its logs sit beside theirs.
base=$B/qemu/$kname
[ "$mode" = check ] || base=$base.$mode
out=$base
mkdir -p "$out"
exec 9> "$out/.lock"
if ! flock -n 9; then
	out=$base.$$
	mkdir -p "$out"
	echo "run.sh[$kname]: $base is in use by another run; using $out" >&2
	trap 'rm -rf "$out/root" "$moddir"' EXIT
fi
moddir=$B/mod/$kname${out#"$B/qemu/$kname"}

# build: the userspace (unless NO_BUILD), the module (have_mod=1) and, with
# SCALE_BASE, that revision's module from its own sources, in a copy.
build() {
	if [ -z "${NO_BUILD:-}" ]; then
		mkdir -p "$B"
		if [ "$KARCH" = arm64 ]; then
			# library, tools and selftests only (the host tests are x86's)
			flock "$B/.make.lock" make -s B="$UB" CC="${cross}gcc" AR="${cross}ar" \
				lib tools tests >&2 || die "arm64 userspace build failed"
		else
			flock "$B/.make.lock" make -s userspace >&2 || die "userspace build failed"
		fi
	fi
	have_mod=0
	if ls kernel/*.c >/dev/null 2>&1; then
		kernel/build-module.sh "$KDIR" "$moddir" >"$out/module-build.log" 2>&1 ||
			{ cat "$out/module-build.log" >&2; die "module build failed for $KDIR"; }
		have_mod=1
		if [ -n "$scale_base" ]; then
			# The base revision's own sources and build script, in a copy.
			basesrc=$moddir.base-src
			rm -rf "$basesrc" && mkdir -p "$basesrc"
			git archive "$scale_base" Kbuild dkms.conf kernel include | tar -x -C "$basesrc"
			"$basesrc"/kernel/build-module.sh "$KDIR" "$moddir.base" \
				>"$out/module-build-base.log" 2>&1 ||
				{ cat "$out/module-build-base.log" >&2; die "module build of SCALE_BASE=$scale_base failed"; }
		fi
	else
		echo "run.sh[$kname]: kernel/ has no sources: booting without a module" >&2
	fi
	[ -z "$bench_classic" ] || build_classic
}

# build_classic: BENCH_CLASSIC's module and library for KDIR (once, kept
# in $B/classic/KERNEL), and xpmem-bench-classic and xpmem-scale-classic
# linked against them.
build_classic() {
	local cdir=$B/classic/$kname
	if [ ! -f "$cdir/kernel/xpmem.ko" ] || [ ! -f "$cdir/lib/.libs/libxpmem.a" ]; then
		rm -rf "$cdir" && mkdir -p "$cdir"
		"$bench_classic" "$KDIR" "$cdir" >"$out/classic-build.log" 2>&1 ||
			{ tail -n 20 "$out/classic-build.log" >&2; die "BENCH_CLASSIC: $bench_classic $KDIR $cdir failed"; }
	fi
	flock "$B/.make.lock" make -s B="$B" CLASSIC="$cdir" bench-classic >&2 ||
		die "xpmem-bench-classic or xpmem-scale-classic build failed"
}

# ---- initramfs --------------------------------------------------------------
# shellcheck source=selftests/vm/initramfs.sh
. selftests/vm/initramfs.sh

# ---- boot -------------------------------------------------------------------
# boot_params: the kernel command line (append), the machine (microvm) and
# the first NUMA node's share of the memory (half).
# secretmem.enable=1: memfd_secret is off by default on 6.1 (on by default
# later; an unknown parameter is ignored).
# The x86_64 kernels built here have neither ACPI nor PCI (x86_64.config)
# and boot on QEMU's microvm machine without ACPI: its MP table gives them
# every CPU (SeaBIOS's, on the pc machine, lists the boot CPU only), NUMA
# emulation splits memory into the two nodes that QEMU's SRAT gives
# Debian's kernels on the pc machine, and, with no PIT or HPET to
# calibrate against, the TSC runs at the host's rate (TCG's TSC is the
# host's) and is trusted.  reboot=t: /init's final reboot(2) goes
# straight to a triple fault, which -no-reboot turns into QEMU's exit (the
# kernel's default reboot method starts with the keyboard controller,
# which microvm lacks).
boot_params() {
	half=$((mem / 2))
	append="console=$console,115200 rdinit=/init panic=-1 mitigations=off printk.devkmsg=on secretmem.enable=1"
	microvm=
	if [ "$KARCH" = x86_64 ] && [ -f "$KDIR/.config" ] &&
	   grep -qx 'CONFIG_NUMA_EMU=y' "$KDIR/.config" &&
	   ! grep -qx 'CONFIG_ACPI=y' "$KDIR/.config"; then
		microvm=1
		append="$append numa=fake=2 tsc=reliable reboot=t"
		khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
		if [ -n "$khz" ] && [ "$khz" -gt 0 ]; then
			append="$append tsc_early_khz=$khz"
		fi
	fi
}
# arm64: the virt machine (device tree, PSCI, PL011, GICv2), the
# results on a virtio console; node 0 gets the first half of the CPUs,
# node 1 the others (the device tree gives each CPU its numa-node-id).
# pauth-impdef=on: -cpu max with QEMU's own pointer-authentication
# algorithm instead of QARMA5, which is much slower to emulate (the guest
# sees the same features).
boot_vm() {
	if [ "$KARCH" = arm64 ]; then
		local c0=$(( smp > 1 ? smp / 2 : 1 )) n1=
		[ "$smp" -gt "$c0" ] && n1=",cpus=$c0-$((smp - 1))"
		timeout -k 10 "$vm_timeout" qemu-system-aarch64 \
			-M virt -cpu max,pauth-impdef=on -accel tcg -smp "$smp" -m "${mem}M" \
			-object memory-backend-ram,id=m0,size="${half}M" \
			-numa node,memdev=m0,nodeid=0,cpus=0-$((c0 - 1)) \
			-object memory-backend-ram,id=m1,size="$((mem - half))M" \
			-numa "node,memdev=m1,nodeid=1$n1" \
			-nodefaults -display none -no-reboot \
			-serial file:"$out/console.log" \
			-device virtio-serial-device \
			-chardev file,id=results,path="$out/results.log" \
			-device virtconsole,chardev=results \
			-kernel "$KIMAGE" -initrd "$out/initramfs.cpio.gz" -append "$append" \
			</dev/null >"$out/qemu.log" 2>&1
		return
	fi
	if [ -n "$microvm" ]; then
		timeout -k 10 "$vm_timeout" qemu-system-x86_64 \
			-M microvm,acpi=off -accel tcg -cpu max -smp "$smp" -m "${mem}M" \
			-nodefaults -display none -no-reboot \
			-serial file:"$out/console.log" \
			-chardev file,id=results,path="$out/results.log" \
			-device isa-serial,chardev=results \
			-kernel "$KIMAGE" -initrd "$out/initramfs.cpio.gz" -append "$append" \
			</dev/null >"$out/qemu.log" 2>&1
		return
	fi
	timeout -k 10 "$vm_timeout" qemu-system-x86_64 \
		-accel tcg -cpu max -smp "$smp" -m "${mem}M" \
		-object memory-backend-ram,id=m0,size="${half}M" -numa node,memdev=m0,nodeid=0 \
		-object memory-backend-ram,id=m1,size="$((mem - half))M" -numa node,memdev=m1,nodeid=1 \
		-nodefaults -display none -no-reboot \
		-serial file:"$out/console.log" -serial file:"$out/results.log" \
		-kernel "$KIMAGE" -initrd "$out/initramfs.cpio.gz" -append "$append" \
		</dev/null >"$out/qemu.log" 2>&1
}

# boot: boot_vm (qrc: its status, wall: its seconds).  A kernel that dies
# before /init starts has run none of our code (the module is loaded by
# /init): such a boot is retried once, and said so.
boot() {
	rm -f "$out/console.log" "$out/results.log"
	echo "run.sh[$kname]: booting $KIMAGE in $qemu${microvm:+ (microvm)} (${mem} MiB, $smp cpus, 2 NUMA nodes, limit ${vm_timeout}s, xpmem_stress: $stress)" >&2
	t0=$(date +%s)
	if [ -n "${VERBOSE:-}" ]; then
		touch "$out/console.log"
		tail -n +1 -F "$out/console.log" 2>/dev/null &
		tailpid=$!
	fi
	set +e
	boot_vm
	qrc=$?
	if ! grep -q '^@@XPMEM START' "$out/results.log" 2>/dev/null &&
	   [ "$qrc" != 124 ] && [ "$qrc" != 137 ]; then
		mv "$out/console.log" "$out/console.boot-failure.log"
		echo "run.sh[$kname]: the kernel died before /init started (see $out/console.boot-failure.log); booting once more" >&2
		boot_vm
		qrc=$?
	fi
	set -e
	# shellcheck disable=SC2034 # read by write_run_env (${!n})
	wall=$(( $(date +%s) - t0 ))
	if [ -n "${VERBOSE:-}" ]; then
		sleep 1
		kill "$tailpid" 2>/dev/null || true
	fi
}

# ---- judge ------------------------------------------------------------------
# write_run_env: what judge.sh and report.sh need to know of this run, as
# shell assignments, to $out/run.env.
write_run_env() {
	local v n
	for v in mode:MODE kname:KNAME qrc:QRC vm_timeout:VM_TIMEOUT wall:WALL \
		mpi_bench_args:MPI_BENCH_ARGS \
		have_mod:HAVE_MOD smp:SMP mem:MEM bench_args:BENCH_ARGS \
		bench_profile:BENCH_PROFILE scale_args:SCALE_ARGS \
		scale_churn:SCALE_CHURN scale_profile:SCALE_PROFILE scale_base:SCALE_BASE \
		bench_classic:BENCH_CLASSIC bench_scale_args:BENCH_SCALE_ARGS attach_profile:ATTACH_PROFILE classic_first:CLASSIC_FIRST; do
		n=${v%%:*}
		printf '%s=%q\n' "${v#*:}" "${!n}"
	done
	printf 'KIMAGE_NAME=%q\n' "$(basename "$KIMAGE")"
	printf 'BENCH_DIR=%q\n' "$B/bench"
	if [ "$mode" = scale ]; then
		printf 'TREE_DESC=%q\n' "this tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- kernel include Kbuild || echo ', modified'))"
		[ -z "$scale_base" ] ||
			printf 'SCALE_BASE_DESC=%q\n' "SCALE_BASE=$scale_base ($(git rev-parse --short "$scale_base"))"
	fi
} > "$out/run.env"

# ---- main -------------------------------------------------------------------
build
pack_initramfs "$out/root" "$out/initramfs.cpio.gz"
cp "$out/root/etc/xpmem-suites.txt" "$out/suites.txt"
boot_params
boot
write_run_env
set +e
selftests/vm/judge.sh "$out"
jrc=$?
set -e
[ -n "${RESULT_FILE:-}" ] && cp "$out/result" "$RESULT_FILE"
exit $jrc
