#!/bin/bash
# Usage: selftests/vm/fetch-kernel-source.sh [-n] [-o SRCDIR] X.Y...
#        (X.Y one of: 5.10 (bullseye), 7.2 (sid); SRCDIR default build/src;
#        -n: update the private lists and print the package's URI, fetch
#        nothing)
#
# Fetch (or reuse) a Debian linux-source-X.Y package for a test kernel.
#
# The archive is the one this machine's apt sources name (see
# archive_uris below); apt's own configuration (proxies, authentication)
# applies.  apt runs with a private sources list, private package lists, state,
# status file and archive cache, all under SRCDIR/apt, and without dpkg
# or its lock: the machine's own apt configuration (/etc/apt, /var/lib/apt,
# /var/cache/apt) is neither used nor changed.  The .deb is unpacked with
# dpkg-deb -x (no dpkg database), leaving SRCDIR/linux-source-X.Y.tar.xz,
# the tarball the kernel build script extracts.  Cached: nothing is
# fetched while that tarball is present (delete it to refetch).
#
# Prints the path of each tarball on stdout; progress goes to stderr.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
srcdir=$top/build/src
dry=
while [ $# -gt 0 ]; do
	case "$1" in
	-n) dry=1; shift ;;
	-o) srcdir=$2; shift 2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || set -- 5.10 7.2

die() { echo "fetch-kernel-source: $*" >&2; exit 1; }
log() { echo "fetch-kernel-source: $*" >&2; }

# archive_uris, apt_private
# shellcheck source=selftests/vm/apt-private.sh
. "$here/apt-private.sh"

# apt source lines per kernel series: the Debian release that ships it,
# from the archive (and for bullseye its security archive, if this machine
# has one) that archive_uris found.
kr=/usr/share/keyrings
sources_for() {
	local main=$archive sec=$security
	case "$1" in
	5.10)
		echo "deb [signed-by=$kr/debian-archive-bullseye-stable.gpg,$kr/debian-archive-bullseye-automatic.gpg] $main bullseye main"
		[ -z "$sec" ] ||
			echo "deb [signed-by=$kr/debian-archive-bullseye-security-automatic.gpg,$kr/debian-archive-bullseye-stable.gpg] $sec bullseye-security main" ;;
	7.2)
		echo "deb [signed-by=$kr/debian-archive-keyring.gpg] $main sid main" ;;
	*)
		return 1 ;;
	esac
}

fetch_one() {
	local ver=$1 pkg=linux-source-$1 tar=$srcdir/linux-source-$1.tar.xz
	local a=$srcdir/apt/$ver deb start
	if [ -s "$tar" ] && [ -z "$dry" ]; then
		log "$pkg: cached ($tar)"
		echo "$tar"
		return 0
	fi
	start=$(date +%s)
	mkdir -p "$a/etc"
	sources_for "$ver" > "$a/etc/sources.list" || die "unknown kernel series '$ver' (known: 5.10 7.2)"
	log "$pkg: from $(awk '{ print $(NF - 2), $(NF - 1) }' "$a/etc/sources.list" | tr '\n' ' ')"
	: > "$a/status"
	apt_private "$a"
	local opts=("${APT_PRIVATE[@]}")
	log "$pkg: apt-get update (private lists in $a)"
	apt-get -q "${opts[@]}" update >&2 || die "apt-get update failed"
	if [ -n "$dry" ]; then
		apt-get -q "${opts[@]}" --print-uris download "$pkg" || die "no $pkg in $a/etc/sources.list"
		return 0
	fi
	log "$pkg: downloading $(apt-cache "${opts[@]}" policy "$pkg" | sed -n 's/^ *Candidate: //p')"
	# apt-get download writes into the current directory (as root: the
	# private tree need not be reachable by the _apt user).
	(cd "$a/archives" && apt-get -q "${opts[@]}" download "$pkg" >&2) ||
		die "apt-get download $pkg failed"
	deb=$(ls "$a/archives/${pkg}_"*.deb | sort -V | tail -n 1)
	[ -f "$deb" ] || die "no .deb for $pkg"
	log "$pkg: unpacking $(basename "$deb")"
	rm -rf "$a/root"
	dpkg-deb -x "$deb" "$a/root"
	[ -f "$a/root/usr/src/$pkg.tar.xz" ] || die "$deb holds no usr/src/$pkg.tar.xz"
	mv "$a/root/usr/src/$pkg.tar.xz" "$tar.tmp"
	basename "$deb" > "$srcdir/$pkg.deb-name"
	mv "$tar.tmp" "$tar"
	rm -rf "$a/root" "$deb"
	log "$pkg: fetched in $(( $(date +%s) - start )) s"
	echo "$tar"
}

mkdir -p "$srcdir"
srcdir=$(cd "$srcdir" && pwd)
archive_uris
for v in "$@"; do
	fetch_one "$v"
done
