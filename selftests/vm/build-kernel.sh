#!/bin/bash
# Usage: selftests/vm/build-kernel.sh [--prepare] NAME [OUTDIR]
#        (NAME: debug-6.12, bullseye-5.10, sid-7.2, arm64-6.12,
#        arm64-6.12-64k; OUTDIR default build/NAME)
#
# Build (or reuse) one of the test kernels built from source.
#
#   debug-6.12     Debian's linux-source-6.12 (/usr/src, from deps.sh)
#   bullseye-5.10  Debian 11's linux-source-5.10 (fetch-kernel-source.sh)
#   sid-7.2        Debian sid's linux-source-7.2 (fetch-kernel-source.sh)
#   arm64-6.12     linux-source-6.12 for arm64 (4 KiB pages), cross-built
#                  with ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-
#                  (gcc-aarch64-linux-gnu: deps.sh arm64)
#   arm64-6.12-64k the same with 64 KiB pages
#
# Extracts the tarball into OUTDIR/linux-source-X.Y, configures it as
# tinyconfig + selftests/vm/base.config + the architecture's fragment
# (x86_64.config or arm64.config) (+ debug.config for debug-6.12: KASAN,
# lockdep, kmemleak) (+ selftests/vm/NAME.config if present), checks that
# every option of the fragments survived (an option this kernel's Kconfig
# does not know at all is reported and skipped: the kernel predates the
# feature), and builds the boot image (x86_64: bzImage; arm64: Image) plus
# the in-tree modules (the latter writes Module.symvers, which out-of-tree
# module builds need).
# With --prepare it stops after `make modules_prepare`: enough to compile
# the module (W=1, sparse), not to link it (modpost) or boot.
#
# The result is cached: a stamp holds a hash of the options the fragments
# ask for, the recipe's version below and the tarball's identity; nothing
# is redone while it matches.
#
# Environment: LINUX_SRC_TAR (debug-6.12's tarball, default
#              /usr/src/linux-source-6.12.tar.xz), JOBS (default 2).
#              Every make runs under nice -n 19.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
stage=image
if [ "${1:-}" = "--prepare" ]; then
	stage=prepare
	shift
fi
name=${1:?usage: build-kernel.sh [--prepare] NAME [OUTDIR]}
out=${2:-$top/build/$name}
jobs=${JOBS:-2}

die() { echo "$name: $*" >&2; exit 1; }
log() { echo "$name: $*"; }

case "$name" in
debug-6.12)
	series=6.12
	tarball=${LINUX_SRC_TAR:-/usr/src/linux-source-6.12.tar.xz}
	[ -r "$tarball" ] || die "$tarball not found (run selftests/vm/deps.sh as root)" ;;
bullseye-5.10 | sid-7.2)
	series=${name#*-}
	tarball=$("$here/fetch-kernel-source.sh" -o "$top/build/src" "$series") ||
		die "could not fetch linux-source-$series" ;;
arm64-6.12 | arm64-6.12-64k)
	series=6.12
	tarball=${LINUX_SRC_TAR:-/usr/src/linux-source-6.12.tar.xz}
	[ -r "$tarball" ] || die "$tarball not found (run selftests/vm/deps.sh as root)" ;;
*)
	die "unknown kernel (known: debug-6.12 bullseye-5.10 sid-7.2 arm64-6.12 arm64-6.12-64k)" ;;
esac

# The architecture: its make arguments, fragment and boot image.
case "$name" in
arm64-*)
	arch=arm64
	cross=${CROSS_COMPILE:-aarch64-linux-gnu-}
	command -v "${cross}gcc" >/dev/null ||
		die "${cross}gcc missing (run selftests/vm/deps.sh arm64 as root)"
	kmake=(ARCH=arm64 CROSS_COMPILE="$cross")
	image=Image
	image_path=arch/arm64/boot/Image ;;
*)
	arch=x86_64
	kmake=(ARCH=x86_64)
	image=bzImage
	image_path=arch/x86/boot/bzImage ;;
esac

# Bump when the way a kernel is built changes (not for comments).
recipe=2
fragments=("$here/base.config" "$here/$arch.config")
[ "$name" = debug-6.12 ] && fragments+=("$here/debug.config")
[ -f "$here/$name.config" ] && fragments+=("$here/$name.config")

# The fragments' lines that mean something, the last about an option
# winning (NAME.config overrides base.config, as merge_config.sh does).
effective_lines() {
	cat "${fragments[@]}" | sed -n -e 's/^\(CONFIG_[A-Za-z0-9_]*\)=.*/\1 &/p' \
		-e 's/^# \(CONFIG_[A-Za-z0-9_]*\) is not set$/\1 &/p' |
		awk '{ opt = $1; sub(/^[^ ]* /, ""); last[opt] = $0; order[opt] = NR }
		     END { for (o in last) print order[o] "\t" last[o] }' |
		sort -n | cut -f2-
}

src_id=$(stat -c '%s %Y' "$tarball")
if [ "$series" = 6.12 ] && command -v dpkg-query >/dev/null 2>&1; then
	src_id="$src_id $(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)"
fi
want=$( { echo "recipe $recipe $src_id"; effective_lines | sort; } | sha256sum | cut -d' ' -f1)
mkdir -p "$out"
out=$(cd "$out" && pwd)	# absolute: we cd into the tree below
tree=$out/linux-source-$series

done_for() {	# done_for STAGE: is STAGE (or more) cached?
	[ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$want" ] || return 1
	[ "$1" = prepare ] && [ -f "$out/prepared" ] && return 0
	[ -f "$tree/$image_path" ] && [ -f "$tree/Module.symvers" ] &&
		[ ! -f "$out/prepared" ]
}
if done_for "$stage"; then
	log "up to date ($tree)"
	exit 0
fi

start=$(date +%s)
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$want" ] && [ -f "$out/prepared" ]; then
	log "configured and prepared already"
else
	rm -f "$out/stamp" "$out/prepared"
	# Reuse an extracted tree if it came from the same tarball (incremental
	# rebuild after a fragment change); otherwise extract afresh.
	if [ ! -f "$out/src-id" ] || [ "$(cat "$out/src-id")" != "$src_id" ] || [ ! -d "$tree" ]; then
		log "extracting $tarball"
		rm -rf "$tree" "$out/src-id"
		nice -n 19 tar -C "$out" -xf "$tarball"
		[ -d "$tree" ] || die "tarball did not contain linux-source-$series/"
		echo "$src_id" > "$out/src-id"
		log "extracted in $(( $(date +%s) - start )) s"
	fi

	cd "$tree"
	log "configuring (tinyconfig + ${fragments[*]##*/})"
	nice -n 19 make -s "${kmake[@]}" tinyconfig >/dev/null
	KCONFIG_CONFIG=.config scripts/kconfig/merge_config.sh -m .config "${fragments[@]}" >/dev/null
	nice -n 19 make -s "${kmake[@]}" olddefconfig >/dev/null

	# merge_config.sh and olddefconfig silently drop options whose
	# dependencies are missing: verify every line of the fragments.  An
	# option no Kconfig file of this kernel declares is a feature the
	# kernel predates: reported, not fatal.
	known() { grep -rqs --include='Kconfig*' -E "^[[:space:]]*(menu)?config ${1#CONFIG_}\$" .; }
	bad=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*)
			opt=${line%%=*}
			if ! grep -qxF "$line" .config; then
				if ! known "$opt"; then
					log "note: $opt does not exist in this kernel"
					continue
				fi
				echo "$name: MISSING in .config: $line (got: $(grep "^$opt=" .config || echo unset))" >&2
				bad=1
			fi ;;
		"# CONFIG_"*" is not set")
			opt=${line#\# }; opt=${opt%% *}
			if grep -q "^$opt=" .config; then
				echo "$name: must be unset but is: $(grep "^$opt=" .config)" >&2
				bad=1
			fi ;;
		esac
	done < <(effective_lines)
	[ "$bad" = 0 ] || die "config fragment not fully applied; fix ${fragments[*]##*/}"

	log "make modules_prepare"
	nice -n 19 make -s "${kmake[@]}" -j"$jobs" modules_prepare
	touch "$out/prepared"
	echo "$want" > "$out/stamp"
	log "configured and prepared in $(( $(date +%s) - start )) s"
fi
[ "$stage" = prepare ] && exit 0

cd "$tree"
log "building $image and modules with -j$jobs (a few minutes)"
nice -n 19 make -s "${kmake[@]}" -j"$jobs" "$image" modules
[ -f "$image_path" ] || die "no $image produced"
[ -f Module.symvers ] || die "no Module.symvers produced"
rm -f "$out/prepared"
log "built in $(( $(date +%s) - start )) s"
