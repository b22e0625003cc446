#!/bin/bash
# Build (or reuse) the debug-6.12 test kernel.
#
# Usage: selftests/vm/build-debug-kernel.sh [OUTDIR]   (default build/debug-6.12)
#
# Extracts Debian's linux-source-6.12 tarball into OUTDIR/linux-source-6.12,
# configures it as tinyconfig + selftests/vm/debug-6.12.config, checks that
# every option of the fragment survived, and builds bzImage plus the in-tree
# modules (the latter writes Module.symvers, which out-of-tree module builds
# need).  The result is cached: a stamp holds a hash of the fragment, this
# script and the tarball's identity; nothing is rebuilt while it matches.
#
# Environment: LINUX_SRC_TAR (default /usr/src/linux-source-6.12.tar.xz),
#              JOBS (default 2).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:-$top/build/debug-6.12}
tarball=${LINUX_SRC_TAR:-/usr/src/linux-source-6.12.tar.xz}
fragment=$here/debug-6.12.config
jobs=${JOBS:-2}

die() { echo "build-debug-kernel: $*" >&2; exit 1; }

[ -r "$tarball" ] || die "$tarball not found (run selftests/vm/deps.sh as root)"
[ -r "$fragment" ] || die "$fragment not found"

src_id=$(stat -c '%s %Y' "$tarball")
if command -v dpkg-query >/dev/null 2>&1; then
	src_id="$src_id $(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)"
fi
want=$( { echo "$src_id"; cat "$fragment" "$0"; } | sha256sum | cut -d' ' -f1)
tree=$out/linux-source-6.12
stamp=$out/stamp

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
	[ -f "$tree/arch/x86/boot/bzImage" ] && [ -f "$tree/Module.symvers" ]; then
	echo "debug-6.12: up to date ($tree)"
	exit 0
fi

start=$(date +%s)
mkdir -p "$out"
out=$(cd "$out" && pwd)	# absolute: we cd into the tree below
tree=$out/linux-source-6.12
stamp=$out/stamp
rm -f "$stamp"
# Reuse an extracted tree if it came from the same tarball (incremental
# rebuild after a fragment change); otherwise extract afresh.
if [ ! -f "$out/src-id" ] || [ "$(cat "$out/src-id")" != "$src_id" ] || [ ! -d "$tree" ]; then
	echo "debug-6.12: extracting $tarball"
	rm -rf "$tree" "$out/src-id"
	tar -C "$out" -xf "$tarball"
	[ -d "$tree" ] || die "tarball did not contain linux-source-6.12/"
	echo "$src_id" > "$out/src-id"
fi

cd "$tree"
echo "debug-6.12: configuring (tinyconfig + $(basename "$fragment"))"
make -s ARCH=x86_64 tinyconfig >/dev/null
KCONFIG_CONFIG=.config scripts/kconfig/merge_config.sh -m .config "$fragment" >/dev/null
make -s ARCH=x86_64 olddefconfig >/dev/null

# merge_config.sh and olddefconfig silently drop options whose dependencies
# are missing: verify every line of the fragment.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		if ! grep -qxF "$line" .config; then
			echo "debug-6.12: MISSING in .config: $line (got: $(grep "^${line%%=*}=" .config || echo unset))" >&2
			bad=1
		fi ;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }; opt=${opt%% *}
		if grep -q "^$opt=" .config; then
			echo "debug-6.12: must be unset but is: $(grep "^$opt=" .config)" >&2
			bad=1
		fi ;;
	esac
done < "$fragment"
[ "$bad" = 0 ] || die "config fragment not fully applied; fix selftests/vm/debug-6.12.config"

echo "debug-6.12: building bzImage and modules with -j$jobs (a few minutes)"
make -s ARCH=x86_64 -j"$jobs" bzImage modules
[ -f arch/x86/boot/bzImage ] || die "no bzImage produced"
[ -f Module.symvers ] || die "no Module.symvers produced"
echo "$want" > "$stamp"
echo "debug-6.12: built in $(( $(date +%s) - start )) s"
