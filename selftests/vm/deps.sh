#!/bin/sh
# Usage: selftests/vm/deps.sh [build|test|all|arm64] [--check]
#
# Install the Debian packages a build or the tests need.
#
# Run as root on Debian: runs `apt-get update` once, then `apt-get install -y`.
# Otherwise: prints the exact install line and exits non-zero.
#
#   build     what `make` and `make install` need: a compiler, liburing-dev and the
#             headers of the running kernel (for the module)
#   test      (default; also `all`) everything the test rig needs on top:
#             QEMU, busybox, the two Debian kernels it boots and their
#             headers, linux-source-6.12 (kselftest header, checkpatch, the
#             debug kernel), sparse, liburing-dev, packaging tools (Debian
#             and RPM), what the UCX module package needs (libucx-dev,
#             ucx-utils, libnuma-dev, autotools: debian/ucx/build.sh) and
#             Open MPI (the MPI benchmark, xpmem-mpi-bench); autotools also
#             build the other implementation run.sh --bench's BENCH_CLASSIC
#             compares with
#   arm64     test, plus what the arm64 kernels (arm64-6.12, arm64-6.12-64k)
#             need: the arm64 architecture in dpkg (multiarch), the cross
#             compiler, qemu-system-arm and liburing-dev:arm64 (the
#             static arm64 busybox is fetched by run.sh with apt-get
#             download; it cannot be installed beside the amd64 one)
#   --check   only report what is missing (exit 1 if anything is)
set -eu

BUILD_PKGS="build-essential make gcc libc6-dev pkg-config kmod liburing-dev"
TEST_PKGS="$BUILD_PKGS cpio xz-utils \
gzip util-linux perl busybox-static qemu-system-x86 liburing-dev sparse dkms bc flex bison \
libelf-dev libssl-dev dwarves python3 linux-headers-amd64 linux-image-amd64 \
linux-source-6.12 man-db groff-base debhelper dh-dkms lintian fakeroot dpkg-dev \
gnuplot-nox openssl rpm rpmlint \
autoconf automake libtool libnuma-dev libucx-dev ucx-utils openmpi-bin libopenmpi-dev"
ARM64_PKGS="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-system-arm liburing-dev:arm64"

mode="test"
check_only=0
for a in "$@"; do
	case $a in
	build|test|arm64) mode=$a ;;
	all) mode="test" ;;
	--check) check_only=1 ;;
	*) echo "usage: $0 [build|test|all|arm64] [--check]" >&2; exit 2 ;;
	esac
done

stamp_dir=${XPMEM_DEPS_STAMP_DIR:-/var/tmp}

# Newest 6.12 flavour for which both an unsigned image and headers exist.
pick_612() {
	apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' 2>/dev/null |
		sed -n 's/^linux-image-\(6\.12\.[0-9]*+deb12-amd64\)-unsigned .*/\1/p' |
		sort -V | while read -r v; do
			if apt-cache show "linux-headers-$v" >/dev/null 2>&1; then
				echo "$v"
			fi
		done | tail -n 1
}

missing() {
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
	done
}

have_612() {
	ls -d /lib/modules/6.12.*-amd64/build >/dev/null 2>&1 &&
		ls /boot/vmlinuz-6.12.*-amd64 >/dev/null 2>&1
}

if [ "$mode" = build ]; then
	# The module is built for the running kernel unless KDIR says otherwise.
	hdr="linux-headers-$(uname -r)"
	if ! apt-cache show "$hdr" >/dev/null 2>&1; then
		echo "xpmem: $hdr is not in the package archive; for another kernel" \
			"install its headers and pass KDIR=/lib/modules/<version>/build" >&2
		hdr=""
	fi
	need=$(missing $BUILD_PKGS $hdr | tr "\n" " ")
	need612=""
else
	need=$(missing $TEST_PKGS | tr "\n" " ")
	need612=""
	have_612 || need612=yes
fi
# arm64: the foreign architecture must be known to dpkg before apt can
# see liburing-dev:arm64 (and busybox-static:arm64, for run.sh).
need_arch=""
if [ "$mode" = arm64 ]; then
	need="$need$(missing $ARM64_PKGS | tr "\n" " ")"
	dpkg --print-foreign-architectures 2>/dev/null | grep -qx arm64 || need_arch=yes
fi

if [ -z "$need" ] && [ -z "$need612" ] && [ -z "$need_arch" ]; then
	exit 0
fi

if [ "$check_only" = 1 ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "xpmem: missing $mode dependencies. Install them with:" >&2
	echo "  ${need_arch:+dpkg --add-architecture arm64 && }apt-get update && apt-get install -y $need${need612:+ linux-image-6.12.<N>+deb12-amd64-unsigned linux-headers-6.12.<N>+deb12-amd64}" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if [ -n "$need_arch" ]; then
	dpkg --add-architecture arm64
	rm -f "$stamp_dir/xpmem-apt-updated"
fi
if [ ! -f "$stamp_dir/xpmem-apt-updated" ]; then
	apt-get update
	touch "$stamp_dir/xpmem-apt-updated" 2>/dev/null || true
fi
extra=""
if [ -n "$need612" ]; then
	v=$(pick_612)
	if [ -z "$v" ]; then
		echo "xpmem: no linux-image-6.12.*-amd64-unsigned with matching headers in the archive" >&2
		exit 1
	fi
	extra="linux-image-$v-unsigned linux-headers-$v"
fi
# No initramfs-tools hooks are needed for the guest kernels we boot ourselves.
apt-get install -y --no-install-recommends $need $extra
