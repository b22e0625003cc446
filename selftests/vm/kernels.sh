# Usage: . selftests/vm/kernels.sh; resolve_kernel NAME TOPDIR BUILDDIR
#
# Kernel name -> boot image, module build dir and architecture.  Sourced
# by run.sh.  Names: debian-6.1, debian-6.12 (Debian's stock kernels),
# debug-6.12, bullseye-5.10, sid-7.2 (built from source by
# build-kernel.sh), arm64-6.12, arm64-6.12-64k (arm64, 4 KiB and 64 KiB
# pages, cross-built from source by build-kernel.sh).
# shellcheck shell=bash disable=SC2034
KNOWN_KERNELS="debian-6.1 debian-6.12 debug-6.12 bullseye-5.10 sid-7.2 arm64-6.12 arm64-6.12-64k"

# resolve_kernel NAME TOPDIR BUILDDIR: sets KIMAGE, KDIR and KARCH
# (x86_64 or arm64), or fails.
resolve_kernel() {
	local name=$1 top=$2 b=$3 img=
	KARCH=x86_64
	case "$name" in
	debian-6.1)  img=$(ls /boot/vmlinuz-6.1.0-*-amd64 2>/dev/null | sort -V | tail -n 1) ;;
	debian-6.12) img=$(ls /boot/vmlinuz-6.12.*+deb12-amd64 2>/dev/null | sort -V | tail -n 1) ;;
	debug-6.12 | bullseye-5.10 | sid-7.2)
		"$top/selftests/vm/build-kernel.sh" "$name" "$b/$name" >&2 || return 1
		KDIR=$b/$name/linux-source-${name##*-}
		KIMAGE=$KDIR/arch/x86/boot/bzImage
		return 0 ;;
	arm64-6.12 | arm64-6.12-64k)
		"$top/selftests/vm/build-kernel.sh" "$name" "$b/$name" >&2 || return 1
		KDIR=$b/$name/linux-source-6.12
		KIMAGE=$KDIR/arch/arm64/boot/Image
		KARCH=arm64
		return 0 ;;
	*)
		echo "unknown kernel '$name' (known: $KNOWN_KERNELS)" >&2
		return 1 ;;
	esac
	if [ -z "$img" ]; then
		echo "$name: no matching /boot/vmlinuz image; run selftests/vm/deps.sh as root" >&2
		return 1
	fi
	KIMAGE=$img
	KDIR=/lib/modules/${img#/boot/vmlinuz-}/build
	if [ ! -f "$KDIR/Makefile" ]; then
		echo "$name: headers missing ($KDIR); run selftests/vm/deps.sh as root" >&2
		return 1
	fi
}
