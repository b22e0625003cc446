#!/bin/bash
# Build xpmem.ko for one kernel in a private copy of the sources.
#
# Usage: kernel/build-module.sh KDIR OUTDIR [extra kbuild args, e.g. W=1 C=2]
#
# Copies Kbuild, dkms.conf (the version), kernel/ and include/ into OUTDIR (only files whose content
# changed, so Kbuild's incremental build works; files deleted from the repo
# are deleted from the copy) and runs `make -C KDIR M=OUTDIR modules`.
# Builds for different kernels therefore never clobber each other, and
# nothing is written into the source tree.  A KDIR configured for arm64
# is built with ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- (CROSS_COMPILE
# from the environment wins) unless this machine is arm64.  Result:
# OUTDIR/xpmem.ko.
# Exit status 2 (with a message) when kernel/ has no sources yet.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 KDIR OUTDIR [kbuild args]" >&2; exit 1; }
kdir=$1
out=$2
shift 2

if ! ls "$top"/kernel/*.c >/dev/null 2>&1; then
	echo "build-module: kernel/ has no *.c yet; no module to build" >&2
	exit 2
fi
[ -f "$kdir/Makefile" ] || { echo "build-module: $kdir is not a kernel build dir (install its headers: apt-get install linux-headers-<version>)" >&2; exit 1; }

mkdir -p "$out"
out=$(cd "$out" && pwd)

# sync_tree SRC DST: mirror the *.c/*.h files of SRC (recursively) into DST.
sync_tree() {
	local src=$1 dst=$2 rel
	mkdir -p "$dst"
	(cd "$src" && find . -type f \( -name '*.c' -o -name '*.h' \)) | while read -r rel; do
		mkdir -p "$dst/$(dirname "$rel")"
		if ! cmp -s "$src/$rel" "$dst/$rel"; then
			cp "$src/$rel" "$dst/$rel"
		fi
	done
	(cd "$dst" && find . -type f \( -name '*.c' -o -name '*.h' \) ! -name '*.mod.c') | while read -r rel; do
		[ -e "$src/$rel" ] || rm -f "$dst/$rel" "$dst/${rel%.c}.o"
	done
}

sync_tree "$top/kernel" "$out/kernel"
sync_tree "$top/include" "$out/include"
for f in Kbuild dkms.conf; do
	cmp -s "$top/$f" "$out/$f" || cp "$top/$f" "$out/$f"
done

# A tree configured for arm64 on another machine (a test kernel built by
# selftests/vm/build-kernel.sh): cross-compile (gcc-aarch64-linux-gnu).
cross=()
if grep -qs '^CONFIG_ARM64=y' "$kdir/.config" && [ "$(uname -m)" != aarch64 ]; then
	cross=(ARCH=arm64 CROSS_COMPILE="${CROSS_COMPILE:-aarch64-linux-gnu-}")
fi

make -C "$kdir" M="$out" ${cross[@]+"${cross[@]}"} "$@" modules
[ -f "$out/xpmem.ko" ] || { echo "build-module: no xpmem.ko produced in $out" >&2; exit 1; }
