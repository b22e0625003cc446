#!/bin/bash
# Boot one test kernel in QEMU (TCG) and run the selftests in it.
#
# Usage: selftests/vm/run.sh [--demo|--bench|--scale] KERNEL [SUITE-FILTER...]
#   KERNEL        debian-6.1 | debian-6.12 | debug-6.12 | bullseye-5.10 |
#                 sid-7.2 | arm64-6.12 | arm64-6.12-64k (the last five
#                 built from source; debug-6.12 with KASAN, lockdep and
#                 kmemleak; the arm64 ones with 4 KiB and 64 KiB pages)
#   SUITE-FILTER  words; only suites whose name contains one of them run
#                 (e.g. `selftests/vm/run.sh debian-6.1 xpmem_basic`)
#   --demo        run /tools/xpmem-demo with and without the module instead
#   --bench       run /tools/xpmem-bench (options from BENCH_ARGS) once with
#                 the module; write its table, CSV and a gnuplot plot to
#                 build/bench/KERNEL.{txt,csv,svg}
#   --scale       run /tools/xpmem-scale (N ranks, options from SCALE_ARGS;
#                 then its churn mode for SCALE_CHURN seconds, default 20,
#                 0 skips it) with the module; with SCALE_BASE=<git rev>,
#                 first with the module built from that revision, in the
#                 same boot (before/after side by side); with
#                 SCALE_PROFILE=1, also where the owner's MADV_DONTNEED
#                 spends its time (selftests/vm/inval-profile.sh).  Output:
#                 build/bench/KERNEL.scale[-base].{txt,csv,svg},
#                 KERNEL.scale[-base].profile.txt
#
# Steps: build xpmem.ko for KERNEL in build/mod/KERNEL, pack a busybox
# initramfs (init = selftests/vm/init.sh) with the module, build/selftests/*,
# build/tools/*, the library, and the dynamic loader and shared libraries
# the (dynamically linked) tools need, boot qemu-system-x86_64 -accel tcg -cpu max
# with two NUMA nodes, then judge the run.  arm64 kernels: the userspace is
# cross-built into build/arm64 (CC=aarch64-linux-gnu-gcc), the static
# busybox comes from Debian's busybox-static:arm64 (apt-get download, kept
# in build/arm64/busybox/), and the VM is qemu-system-aarch64 -M virt -cpu
# max -accel tcg (console ttyAMA0, results on a virtio console, hvc0).
# The run is judged the same way:
#   - every suite's kselftest "# Totals:" line (pass/fail/skip summed; a
#     suite that crashes, times out, exits non-zero with no failure counted
#     or prints no Totals line counts as one failure);
#   - insmod and "rmmod after suites" count as one test each;
#   - every kernel BUG/WARNING/Oops/KASAN/lockdep/... line in the console
#     counts as one failure, and so does every hung-task ("blocked for more
#     than", after 20 s in the guest), soft/hard lockup and RCU stall report;
#   - a task the guest finds in D state after a suite (for 5 s) fails that
#     suite (its kernel stack is in the console log);
#   - kmemleak (debug kernel): each leaked object involving xpmem fails;
#   - VM wall-clock timeout or a VM that never reports DONE fails.
# Logs: build/qemu/KERNEL/{console.log,results.log}; summary line in
# build/qemu/KERNEL/result ("PASS FAIL SKIP WALLSECONDS"; also copied to
# $RESULT_FILE if set).  If another run holds build/qemu/KERNEL, this run
# uses build/qemu/KERNEL.<pid> instead.
#
# Environment: VM_TIMEOUT (s, whole VM; default 900, debug-6.12 and arm64: 1800;
#   plus STRESS_TIMEOUT in long mode; --bench: 1800, debug-6.12: 3600),
#   BENCH_ARGS (--bench: xpmem-bench options, e.g. "-s 4K,64M -r 3";
#   default none, i.e. the tool's defaults), BENCH_PROFILE (--bench: if
#   set, xpmem-bench options for a second run traced with function_graph,
#   e.g. "-s 64M -m 4k,thp -r 1": time per kernel function in the fault
#   handlers, to build/bench/KERNEL.profile.txt; selftests/vm/fault-profile.sh), SUITE_TIMEOUT (s per suite, default
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
esac
[ $# -ge 1 ] || { sed -n '2,22p' "$0" >&2; exit 1; }
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
# and in mode XPMEM_STRESS_STOCK (default off; quick takes ~30 s) on the
# others.
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
# The default bench (3 kinds, 4K..256M, 5 repeats) takes 2-4 minutes under
# TCG on 2 cpus (more with other VMs on the same cores); twice the usual
# limit leaves room for larger BENCH_ARGS.
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
bench_args=${BENCH_ARGS:-}
[[ "$bench_args" =~ ^[A-Za-z0-9_.,:+\ -]*$ ]] ||
	die "BENCH_ARGS: only letters, digits, spaces and _.,:+- allowed, not '$bench_args'"
bench_profile=${BENCH_PROFILE:-}
[[ "$bench_profile" =~ ^[A-Za-z0-9_.,:+\ -]*$ ]] ||
	die "BENCH_PROFILE: only letters, digits, spaces and _.,:+- allowed, not '$bench_profile'"
[ "$stress" = long ] && def_timeout=$((def_timeout + stress_timeout))
vm_timeout=${VM_TIMEOUT:-$def_timeout}
suite_timeout=${SUITE_TIMEOUT:-300}
mem=${VM_MEM_MB:-2048}
smp=${VM_SMP:-2}

# One run per kernel directory at a time: teammates share the tree.  If the
# default directory is busy, use a private one for this run.
out=$B/qemu/$kname
mkdir -p "$out"
exec 9> "$out/.lock"
if ! flock -n 9; then
	out=$B/qemu/$kname.$$
	mkdir -p "$out"
	echo "run.sh[$kname]: $B/qemu/$kname is in use by another run; using $out" >&2
	trap 'rm -rf "$out/root" "$moddir"' EXIT
fi
moddir=$B/mod/$kname${out#"$B/qemu/$kname"}

# ---- build ------------------------------------------------------------------
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

# ---- initramfs --------------------------------------------------------------
# copy_shlibs FILE: the dynamic loader and the libraries ldd resolves for
# FILE (nothing for a static binary), each at the same path in the guest,
# where the guest's loader finds them without an ld.so.cache; a library of
# this build (libxpmem.so.0, resolved in $B/lib) goes to /lib by its name.
bdir=$(realpath "$UB")
copy_shlibs() {
	if [ "$KARCH" = arm64 ]; then
		copy_shlibs_cross "$1"
		return
	fi
	local out line name path dest
	out=$(LD_LIBRARY_PATH="$bdir/lib" ldd "$1" 2>&1) || return 0
	while IFS= read -r line; do
		line=${line#"${line%%[![:space:]]*}"}
		case "$line" in
		*"=> not found"*) die "$1 needs ${line%% =>*}, which ldd does not find" ;;
		*" => /"*) name=${line%% =>*} path=${line#*=> } ;;
		/*) name=${line%% (*} path=$line ;;
		*) continue ;;	# linux-vdso.so.1 (no file), "statically linked"
		esac
		path=${path% (0x*}
		case "$(realpath "$path")" in
		"$bdir"/*) dest=/lib/${name##*/} ;;
		*) dest=$path ;;
		esac
		[ -e "$root$dest" ] && continue
		mkdir -p "$root$(dirname "$dest")"
		cp -L "$path" "$root$dest"
	done <<< "$out"
	return 0
}
# find_cross_lib NAME: an arm64 library, from this build or the cross
# toolchain (libc6-arm64-cross) or multiarch (liburing2:arm64).
find_cross_lib() {
	local d
	for d in "$bdir/lib" /usr/aarch64-linux-gnu/lib /usr/lib/aarch64-linux-gnu \
		/lib/aarch64-linux-gnu; do
		[ -e "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	return 1
}
# copy_shlibs_cross FILE: what copy_shlibs does, for an arm64 binary that
# ldd cannot run: its program interpreter (at that path) and its DT_NEEDED
# libraries, recursively, all in /lib (the loader's default path).
copy_shlibs_cross() {
	local interp lib p
	interp=$("${cross}readelf" -lW "$1" |
		sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p')
	if [ -n "$interp" ] && [ ! -e "$root$interp" ]; then
		p=$(find_cross_lib "${interp##*/}") || die "$1: no arm64 ${interp##*/}"
		mkdir -p "$root$(dirname "$interp")"
		cp -L "$p" "$root$interp"
	fi
	for lib in $("${cross}readelf" -dW "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$root/lib/$lib" ] && continue
		p=$(find_cross_lib "$lib") || die "$1 needs $lib, which is not found for arm64"
		cp -L "$p" "$root/lib/$lib"
		copy_shlibs_cross "$p"
	done
	return 0
}
# arm64_busybox: a static arm64 busybox, from Debian's busybox-static:arm64
# (needs the arm64 architecture in dpkg: deps.sh arm64), fetched once into
# $UB/busybox/.
arm64_busybox() {
	local d=$UB/busybox deb
	if [ ! -x "$d/busybox" ]; then
		rm -rf "$d/tmp" && mkdir -p "$d/tmp"
		(cd "$d/tmp" && apt-get download -q -o APT::Sandbox::User=root \
			busybox-static:arm64) >&2 ||
			die "apt-get download busybox-static:arm64 failed (selftests/vm/deps.sh arm64)"
		deb=$(ls "$d"/tmp/busybox-static_*_arm64.deb)
		dpkg-deb -x "$deb" "$d/tmp/root"
		[ -f "$d/tmp/root/bin/busybox" ] || die "$deb holds no bin/busybox"
		mv "$d/tmp/root/bin/busybox" "$d/busybox"
		rm -rf "$d/tmp"
	fi
	echo "$d/busybox"
}
root=$out/root
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,dev,etc,proc,sys,tmp,selftests,tools,lib}
if [ "$KARCH" = arm64 ]; then
	cp "$(arm64_busybox)" "$root/bin/busybox"
else
	cp /bin/busybox "$root/bin/busybox"
fi
cp selftests/vm/init.sh "$root/init"
cp selftests/vm/fault-profile.sh "$root/fault-profile.sh"
cp selftests/vm/inval-profile.sh "$root/inval-profile.sh"
chmod 0755 "$root/init" "$root/fault-profile.sh" "$root/inval-profile.sh"
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
[ "$have_mod" = 1 ] && cp "$moddir/xpmem.ko" "$root/xpmem.ko"
[ -n "$scale_base" ] && cp "$moddir.base/xpmem.ko" "$root/xpmem-base.ko"
# Only binaries whose source still exists (no stale suites from old builds).
for c in selftests/*.c tools/*.c; do
	[ -f "$c" ] || continue
	case "$c" in selftests/host_*) continue ;; esac	# host-only suites
	d=${c%%/*} n=$(basename "$c" .c)
	if [ -x "$UB/$d/$n" ]; then
		cp "$UB/$d/$n" "$root/$d/"
	else
		die "$UB/$d/$n missing: run make first"
	fi
	if [ "$d" = tools ]; then copy_shlibs "$UB/$d/$n"; fi
done
cp -P "$UB"/lib/libxpmem.so* "$root/lib/" 2>/dev/null || true
cat > "$root/etc/passwd" <<'EOP'
root:x:0:0:root:/tmp:/bin/sh
alice:x:1000:1000:test user:/tmp:/bin/sh
bob:x:1001:1001:test user:/tmp:/bin/sh
carol:x:1002:1002:test user:/tmp:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOP
cat > "$root/etc/group" <<'EOG'
root:x:0:
alice:x:1000:
bob:x:1001:
carol:x:1002:
xpmemtest:x:1500:alice,bob
nogroup:x:65534:
EOG
{
	echo "MODE=$mode"
	echo "KERNEL_NAME='$kname'"
	echo "SUITE_TIMEOUT=$suite_timeout"
	echo "SUITE_FILTER='$filter'"
	echo "BENCH_ARGS='$bench_args'"
	echo "BENCH_PROFILE='$bench_profile'"
	echo "SCALE_ARGS='$scale_args'"
	echo "SCALE_CHURN=$scale_churn"
	echo "SCALE_PROFILE=$scale_profile"
	echo "XPMEM_STRESS=$stress"
	echo "STRESS_TIMEOUT=$stress_timeout"
	echo "FALLBACK_PASS=$fallback_pass"
	echo "RESULT_DEV=$result_dev"
	# XPMEM_STRESS_SEED, _ONLY, _FUZZ_OPS, ... for the suite (one word each)
	stress_env=
	while IFS='=' read -r k v; do
		case "$k" in XPMEM_STRESS_STOCK) continue ;; esac
		[[ "$v" =~ ^[A-Za-z0-9_.,:+-]*$ ]] || die "$k: only [A-Za-z0-9_.,:+-] allowed"
		stress_env="$stress_env $k=$v"
	done < <(env | grep '^XPMEM_STRESS_' || true)
	echo "STRESS_ENV='${stress_env# }'"
} > "$root/etc/xpmem-run.conf"
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out/initramfs.cpio.gz"

# Suites the guest must report (same selection as init.sh).
matches() {
	[ -z "$filter" ] && return 0
	local w
	for w in $filter; do case "$1" in *"$w"*) return 0 ;; esac; done
	return 1
}
expected=()
if [ "$mode" = check ]; then
	for p in xpmem_ lib_; do
		for f in "$root"/selftests/"$p"*; do
			[ -f "$f" ] || continue
			n=${f##*/}
			[ "$n" = xpmem_stress ] && [ "$stress" = off ] && continue
			matches "$n" && expected+=("kernel $n")
		done
	done
	for f in "$root"/selftests/lib_*; do
		[ -f "$f" ] || continue
		[ "$fallback_pass" = 1 ] || continue
		n=${f##*/}; matches "$n" && expected+=("fallback $n")
	done
	[ "$have_mod" = 1 ] && expected+=("RESULT insmod" "RESULT rmmod_after_suites")
fi

# ---- boot -------------------------------------------------------------------
half=$((mem / 2))
# secretmem.enable=1: memfd_secret is off by default on 6.1 (on by default
# later; an unknown parameter is ignored).
append="console=$console,115200 rdinit=/init panic=-1 mitigations=off printk.devkmsg=on secretmem.enable=1"
# The x86_64 kernels built here have neither ACPI nor PCI (x86_64.config)
# and boot on QEMU's microvm machine without ACPI: its MP table gives them
# every CPU (SeaBIOS's, on the pc machine, lists the boot CPU only), NUMA
# emulation splits memory into the two nodes that QEMU's SRAT gives
# Debian's kernels on the pc machine, and, with no PIT or HPET to
# calibrate against, the TSC runs at the host's rate (TCG's TSC is the
# host's) and is trusted.  reboot=t: /init's final reboot(2) goes
# straight to a triple fault, which -no-reboot turns into QEMU's exit; the
# kernel's default order starts with the keyboard controller, which microvm
# lacks: 6.12 then restarts and runs the suites again until the time limit,
# and 5.10 hangs.
microvm=
if [ "$KARCH" = x86_64 ] && [ -f "$KDIR/.config" ] &&
   grep -qx 'CONFIG_NUMA_EMU=y' "$KDIR/.config" &&
   ! grep -qx 'CONFIG_ACPI=y' "$KDIR/.config"; then
	microvm=1
	append="$append numa=fake=2 tsc=reliable reboot=t"
	khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
	[ -n "$khz" ] && [ "$khz" -gt 0 ] && append="$append tsc_early_khz=$khz"
fi
rm -f "$out/console.log" "$out/results.log"
echo "run.sh[$kname]: booting $KIMAGE in $qemu${microvm:+ (microvm)} (${mem} MiB, $smp cpus, 2 NUMA nodes, limit ${vm_timeout}s, xpmem_stress: $stress)" >&2
t0=$(date +%s)
if [ -n "${VERBOSE:-}" ]; then
	touch "$out/console.log"
	tail -n +1 -F "$out/console.log" 2>/dev/null &
	tailpid=$!
fi
# A kernel that dies before /init starts has not run any of our code yet
# (the module is loaded by /init).  Under TCG that happens rarely (an int3
# "Oops" in sched_clock_cpu while 6.12 patches its text during SMP
# bring-up); such a boot is retried once, and said so.
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
wall=$(( $(date +%s) - t0 ))
[ -n "${VERBOSE:-}" ] && { sleep 1; kill "$tailpid" 2>/dev/null || true; }

# ---- judge ------------------------------------------------------------------
pass=0 fail=0 skip=0
bad() { echo "  FAIL  $*"; fail=$((fail + 1)); }

res=$out/results.clean
tr -d '\r' < "$out/results.log" > "$res" 2>/dev/null || : > "$res"

echo "---- $kname: results ($(basename "$KIMAGE"), VM wall time ${wall}s) ----"
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	bad "VM timed out after ${vm_timeout}s (see $out/console.log)"
elif [ "$qrc" != 0 ]; then
	bad "qemu exited with status $qrc: $(tail -n 3 "$out/qemu.log" | tr '\n' ' ')"
fi

if [ "$mode" = check ]; then
	for e in "${expected[@]}"; do
		case "$e" in
		"RESULT "*)
			what=${e#RESULT }
			st=$(sed -n "s/^@@XPMEM RESULT $what //p" "$res" | tail -n 1)
			case "$st" in
			ok) echo "  ok    $what"; pass=$((pass + 1)) ;;
			fail) bad "$what" ;;
			*) bad "$what: not reported by the VM" ;;
			esac
			continue ;;
		esac
		read -r p n <<< "$e"
		block=$(awk -v p="$p" -v n="$n" '
			$0 == "@@XPMEM BEGIN " p " " n { on = 1; next }
			on && index($0, "@@XPMEM END " p " " n " ") == 1 { print; exit }
			on { print }' "$res")
		endl=$(printf '%s\n' "$block" | grep '^@@XPMEM END ' || true)
		if [ -z "$endl" ]; then
			bad "$n [$p]: did not run to completion (VM crash or timeout?)"
			continue
		fi
		# tasks the guest found in D state after this suite
		while read -r _ _ _ _ dpid dcomm; do
			bad "$n [$p]: task $dpid ($dcomm) left in D state (stack in $out/console.log)"
		done < <(grep "^@@XPMEM DSTATE $p $n " "$res" || true)
		rc=$(printf '%s\n' "$endl" | sed -n 's/.* rc=\([0-9]*\).*/\1/p')
		tm=$(printf '%s\n' "$endl" | sed -n 's/.* time=\([0-9]*\).*/\1/p')
		tot=$(printf '%s\n' "$block" | grep '^# Totals:' | tail -n 1 || true)
		if [ -z "$tot" ]; then
			if [ "$rc" = 124 ]; then
				bad "$n [$p]: killed by the ${suite_timeout}s suite timeout, no '# Totals:' line"
			else
				bad "$n [$p]: no '# Totals:' line (rc=$rc, ${tm}s)"
			fi
			continue
		fi
		get() { printf '%s\n' "$tot" | sed -n "s/.*[ :]$1:\([0-9]*\).*/\1/p"; }
		sp=$(get pass) sf=$(get fail) sx=$(get xfail) sxp=$(get xpass) ss=$(get skip) se=$(get error)
		sp=${sp:-0} sf=${sf:-0} sx=${sx:-0} sxp=${sxp:-0} ss=${ss:-0} se=${se:-0}
		np=$((sp + sx)) nf=$((sf + sxp + se))
		pass=$((pass + np)) skip=$((skip + ss)) fail=$((fail + nf))
		line="$n [$p]: pass $np, fail $nf, skip $ss (rc=$rc, ${tm}s)"
		if [ "$rc" = 124 ]; then
			bad "$line: killed by the ${suite_timeout}s suite timeout"
		elif [ "$nf" = 0 ] && [ "$rc" != 0 ] && [ "$rc" != 4 ]; then
			bad "$line: non-zero exit without a counted failure"
		elif [ "$nf" != 0 ]; then
			echo "  FAIL  $line"
			printf '%s\n' "$block" | grep -E '^not ok|^# .*(:Expected |Test terminated|Test failed|: Test exited)' | head -n 20 | sed 's/^/          /'
		else
			echo "  ok    $line"
		fi
	done
fi
if [ "$mode" = demo ]; then
	# Show what the guest's userspace printed (kernel lines are timestamped).
	tr -d '\r' < "$out/console.log" | grep -vE '^\[ *[0-9]+\.[0-9]+\]' | sed 's/^/  | /'
	if grep -q 'SUCCESS' "$out/console.log"; then
		pass=$(grep -c 'xpmem-demo: SUCCESS' "$out/console.log")
	fi
	grep -q 'xpmem-demo: FAILED' "$out/console.log" && bad "the demo program reported a failure"
fi
if [ "$mode" = bench ]; then
	# The guest sends the table and the CSV framed by @@XPMEM BENCH lines on
	# the result channel; they go to build/bench/KERNEL.{txt,csv}, the plot
	# (gnuplot, if installed) to build/bench/KERNEL.svg.  Timings under TCG
	# are emulated: the tool prints ratios measured within this one run.
	bench_dir=$B/bench
	mkdir -p "$bench_dir"
	block() { awk -v b="@@XPMEM BENCH-$1-BEGIN" -v e="@@XPMEM BENCH-$1-END" '
		$0 == b { on = 1; next } index($0, e) == 1 { exit } on { print }' "$res"; }
	brc=$(sed -n 's/^@@XPMEM BENCH-TABLE-END rc=\([0-9]*\).*/\1/p' "$res" | tail -n 1)
	btxt=$bench_dir/$kname.txt bcsv=$bench_dir/$kname.csv bsvg=$bench_dir/$kname.svg
	{
		echo "# selftests/vm/run.sh --bench $kname: $(basename "$KIMAGE"), QEMU TCG, $smp cpus," \
			"$mem MiB, BENCH_ARGS='$bench_args', $(date -u '+%Y-%m-%d %H:%M UTC'), VM wall time ${wall}s"
		block TABLE
	} > "$btxt.tmp" && mv "$btxt.tmp" "$btxt"
	block CSV > "$bcsv.tmp" && mv "$bcsv.tmp" "$bcsv"
	sed 's/^/  | /' "$btxt"
	if [ -z "$brc" ]; then
		bad "xpmem-bench did not finish (see $out/console.log)"
	elif [ "$brc" != 0 ]; then
		bad "xpmem-bench exited with status $brc (see $out/console.log)"
	elif [ "$(wc -l < "$bcsv")" -lt 2 ]; then
		bad "xpmem-bench wrote no CSV rows"
	else
		echo "  ok    xpmem-bench: $btxt, $bcsv"
		pass=1
	fi
	if [ -n "$bench_profile" ]; then
		bprof=$bench_dir/$kname.profile.txt
		prc=$(sed -n 's/^@@XPMEM BENCH-PROFILE-END rc=\([0-9]*\).*/\1/p' "$res" | tail -n 1)
		{
			echo "# selftests/vm/run.sh --bench $kname: BENCH_PROFILE='$bench_profile'," \
				"function_graph in the guest, $(date -u '+%Y-%m-%d %H:%M UTC')"
			block PROFILE
		} > "$bprof"
		sed 's/^/  | /' "$bprof"
		if [ "$prc" != 0 ]; then
			bad "the traced xpmem-bench run failed (status '${prc:-none}', see $out/console.log)"
		else
			echo "  ok    fault profile: $bprof"
		fi
	fi
	rm -f "$bsvg"	# never a plot of an older run beside this run's CSV
	if [ "$(wc -l < "$bcsv")" -ge 2 ]; then
		if ! command -v gnuplot >/dev/null; then
			echo "  info  no plot: gnuplot is not installed (apt-get install gnuplot-nox)"
		elif tools/xpmem-bench-plot.sh "$bcsv" "$bsvg.tmp.svg" \
			"xpmem-bench, $kname ($(basename "$KIMAGE")), QEMU TCG, $smp cpus" >"$out/plot.log" 2>&1; then
			mv "$bsvg.tmp.svg" "$bsvg"
			echo "  info  plot: $bsvg"
		else
			echo "  info  no plot: tools/xpmem-bench-plot.sh failed: $(tail -n 1 "$out/plot.log")"
		fi
	fi
fi
if [ "$mode" = scale ]; then
	# One block set per module (base first if SCALE_BASE), framed by
	# @@XPMEM SCALE-<what>-<label> lines: build/bench/KERNEL.scale[-base].*
	bench_dir=$B/bench
	mkdir -p "$bench_dir"
	sblock() { awk -v b="@@XPMEM SCALE-$1-BEGIN $2" -v e="@@XPMEM SCALE-$1-END $2" '
		$0 == b { on = 1; next } index($0, e) == 1 { exit } on { print }' "$res"; }
	labels=new
	[ -n "$scale_base" ] && labels="base new"
	for l in $labels; do
		case "$l" in
		base) stem=$bench_dir/$kname.scale-base what="SCALE_BASE=$scale_base ($(git rev-parse --short "$scale_base"))" ;;
		*) stem=$bench_dir/$kname.scale what="this tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- kernel include Kbuild || echo ', modified'))" ;;
		esac
		src=$(sed -n "s/^@@XPMEM SCALE-TABLE-END $l rc=\([0-9]*\).*/\1/p" "$res" | tail -n 1)
		{
			echo "# selftests/vm/run.sh --scale $kname: module of $what, $(basename "$KIMAGE"), QEMU TCG," \
				"$smp cpus, $mem MiB, SCALE_ARGS='$scale_args', SCALE_CHURN=$scale_churn," \
				"$(date -u '+%Y-%m-%d %H:%M UTC'), VM wall time ${wall}s (one boot for all modules)"
			sblock TABLE "$l"
		} > "$stem.txt"
		sblock CSV "$l" > "$stem.csv"
		sed 's/^/  | /' "$stem.txt"
		if [ "$src" = 0 ] && [ "$(wc -l < "$stem.csv")" -ge 2 ]; then
			echo "  ok    xpmem-scale [$l]: $stem.txt, $stem.csv"
			pass=$((pass + 1))
		else
			bad "xpmem-scale [$l] failed or did not finish (status '${src:-none}', see $out/console.log)"
		fi
		if [ "$scale_profile" = 1 ]; then
			sblock PROFILE "$l" > "$stem.profile.txt"
			sed 's/^/  | /' "$stem.profile.txt"
		fi
		rm -f "$stem.svg"
		if command -v gnuplot >/dev/null && [ "$(wc -l < "$stem.csv")" -ge 2 ]; then
			tools/xpmem-scale-plot.sh "$stem.csv" "$stem.svg" \
				"xpmem-scale, $kname, module of $what, QEMU TCG" >"$out/plot.log" 2>&1 &&
				echo "  info  plot: $stem.svg" ||
				echo "  info  no plot: $(tail -n 1 "$out/plot.log")"
		fi
	done
fi
grep -q '^@@XPMEM DONE' "$res" || bad "VM did not report DONE (crashed, hung or panicked?)"

# Kernel findings: only printk lines (timestamped) are scanned, so test output
# that happens to contain one of the words cannot trigger a false failure;
# call-trace frames ("func+0x1/0x2") are skipped so that one splat counts
# once per headline, not once per lockdep_* frame.
# Hangs and stalls: the hung-task detector's "INFO: task X:PID blocked for
# more than N seconds", the soft/hard lockup watchdog, and RCU CPU and task
# stall reports ("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
# "... self-detected stall on CPU", "INFO: rcu_tasks detected stalls").
pat='BUG:|WARNING:|Oops|general protection fault|KASAN|UBSAN|possible recursive locking|possible circular locking|(^|[^_a-z])lockdep([^_a-z]|$)|inconsistent lock state|suspicious RCU usage|unreferenced object|Kernel panic|list_add corruption|list_del corruption|sleeping function called from invalid context|refcount_t'
pat="$pat"'|blocked for more than [0-9]+ seconds|soft lockup|hard LOCKUP|rcu: INFO: rcu_|INFO: rcu_[a-z_]+ detected stall|self-detected stall'
if [ -f "$out/console.log" ]; then
	findings=$(tr -d '\r' < "$out/console.log" |
		grep -E '\[ *[0-9]+\.[0-9]{6}\]' |
		grep -vE '\] +(\? )?[A-Za-z_][A-Za-z_0-9.]*\+0x[0-9a-f]+/0x[0-9a-f]+' |
		grep -E "$pat" |
		grep -vE 'RCU lockdep checking is enabled|Lock dependency validator' || true)
	if [ -n "$findings" ]; then
		while IFS= read -r l; do bad "console: $l"; done <<< "$findings"
	fi
fi

# kmemleak: objects reported after the module was loaded whose backtrace
# involves xpmem (a resolved xpmem symbol, or an unresolved module-area
# address once the module is unloaded).  Boot-time leaks are only printed.
if grep -q '^@@XPMEM KMEMLEAK-BEGIN' "$res"; then
	nboot=$(awk '/^@@XPMEM KMEMLEAK-BEGIN boot/{on=1;next} /^@@XPMEM KMEMLEAK-END/{on=0} on && /unreferenced object/{c++} END{print c+0}' "$res")
	echo "  info  kmemleak: $nboot boot-time leak(s) before the module was loaded (not counted)"
	leaks=$(awk '
		/^@@XPMEM KMEMLEAK-BEGIN (loaded|final)/ { on = 1; next }
		/^@@XPMEM KMEMLEAK-END/ { flush(); on = 0; next }
		!on { next }
		/unreferenced object/ { flush(); obj = $3; head = $0; ours = 0; why = ""; next }
		/\[xpmem\]/ || /^ +(\[<[0-9a-f]+>\] )?0xffffffff[0-9a-f]+$/ || /comm "xpmem/ {
			ours = 1; if (why == "" && $0 !~ /comm/) { why = $0; sub(/^ +/, "", why) }
		}
		function flush() {
			if (obj != "" && ours && !(obj in seen)) { seen[obj] = 1; print head " " why }
			obj = ""
		}
		END { flush() }' "$res")
	if [ -n "$leaks" ]; then
		while IFS= read -r l; do bad "kmemleak: $l (details in $out/results.log)"; done <<< "$leaks"
	else
		echo "  ok    kmemleak: no leak involving xpmem"
		pass=$((pass + 1))
	fi
fi

echo "$pass $fail $skip $wall" > "$out/result"
[ -n "${RESULT_FILE:-}" ] && cp "$out/result" "$RESULT_FILE"
echo "== $kname: $pass passed, $fail failed, $skip skipped; VM wall time ${wall}s; log $out/console.log"
[ "$fail" = 0 ]
