#!/bin/sh
# Usage: REV=REV selftests/vm/build-rev.sh KDIR OUTDIR
#   REV     a git revision of this project (default HEAD)
#   KDIR    the kernel build tree to build its module for
#   OUTDIR  receives kernel/xpmem.ko, lib/.libs/libxpmem.a, include/xpmem.h
#
# This project's module at revision REV, laid out as a BENCH_CLASSIC script
# lays out the other module (selftests/vm/run.sh), so that
#   BENCH_CLASSIC=selftests/vm/build-rev.sh REV=... \
#       selftests/vm/classic-compare.sh KERNEL BOOTS
# compares REV with the tree in the same boots, with the same programs: the
# "classic" columns are then REV's module.  The library is the tree's own
# (the classic ABI of both is the same), with liburing's objects added, as
# xpmem-bench-classic links a library statically and alone.  run.sh keeps
# what this builds in build/classic/KERNEL: remove that directory to build
# another REV.
set -eu
k=${1:?usage: REV=REV build-rev.sh KDIR OUTDIR}
out=${2:?usage: REV=REV build-rev.sh KDIR OUTDIR}
rev=${REV:-HEAD}
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
uring=$(gcc -print-file-name=liburing.a)
[ -f "$uring" ] || { echo "build-rev.sh: no liburing.a (liburing-dev)" >&2; exit 1; }

rm -rf "$out/src" && mkdir -p "$out/src" "$out/kernel" "$out/lib/.libs" "$out/include"
git -C "$top" archive "$rev" | tar -x -C "$out/src"
make -C "$k" M="$out/src" modules >"$out/make.log" 2>&1 ||
	{ tail -n 20 "$out/make.log" >&2; exit 1; }
cp "$out/src/xpmem.ko" "$out/kernel/xpmem.ko"

make -C "$top" -s lib
printf 'create %s\naddlib %s\naddlib %s\nsave\nend\n' \
	"$out/lib/.libs/libxpmem.a" "$top/build/lib/libxpmem.a" "$uring" | ar -M
cp "$top/include/xpmem.h" "$out/include/xpmem.h"
echo "build-rev.sh: module of $(git -C "$top" rev-parse --short "$rev") in $out/kernel"
