#!/bin/bash
# Usage: debian/ucx/build.sh [-o OUTDIR]      (OUTDIR default build/pkg)
#
# Build libucx0-xpmem, UCX's own xpmem transport module
# (/usr/lib/<triplet>/ucx/libuct_xpmem.so.0) for the libucx0 installed on
# this machine, into OUTDIR/libucx0-xpmem_<version>_<arch>.deb, and print
# that path.  Needs libucx-dev (hence libucx0), libnuma-dev, autoconf,
# automake, libtool (selftests/vm/deps.sh test installs them).
#
# The source is Debian's ucx source package of exactly the installed
# libucx0 version, fetched with apt-get source through a private deb-src
# list of this machine's Debian repositories (selftests/vm/apt-private.sh:
# this machine's apt configuration is neither used nor changed).  It is
# configured as Debian's debian/rules configures libucx0 (the options that
# change UCX's headers: --enable-mt, --disable-logging, NUMA), with
# --with-xpmem pointing at this tree's libxpmem staged under the cache
# directory; only the module is compiled, linked against the system's
# libucs.so.0 and libuct.so.0 of that same version (same source, same
# options: the same ABI).  The configured tree is cached under
# build/ucx/<version>/ (delete it to start again); a cached run only
# recompiles the module if our header changed and repacks the .deb.
#
# Debian's libuct.so.0 loads only the modules named in its build-time list
# (":ib:rdmacm:cma" for 1.13.1-1): it does not dlopen libuct_xpmem.so.0 by
# itself.  The package's README.Debian says how to load it (LD_PRELOAD).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=$top/build/pkg
while [ $# -gt 0 ]; do
	case "$1" in
	-o) out=$2; shift 2 ;;
	*) echo "usage: $0 [-o OUTDIR]" >&2; exit 2 ;;
	esac
done
PKG=libucx0-xpmem

die() { echo "ucx-module: $*" >&2; exit 1; }
log() { echo "ucx-module: $*" >&2; }

# archive_uris, debian_repos, apt_private
# shellcheck source=selftests/vm/apt-private.sh
. "$top/selftests/vm/apt-private.sh"

MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
UCXVER=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null) ||
	die "libucx0 is not installed (apt-get install libucx-dev, or selftests/vm/deps.sh test)"
[ "$(dpkg-query -W -f='${Version}' libucx-dev 2>/dev/null)" = "$UCXVER" ] ||
	die "libucx-dev $UCXVER is not installed (apt-get install libucx-dev=$UCXVER)"
XPVER=$(sed -n 's/^PACKAGE_VERSION="\([^"]*\)"$/\1/p' "$top/dkms.conf")
VERSION=$UCXVER+xpmem$XPVER
W=$top/build/ucx/$UCXVER
mkdir -p "$W"
# One build at a time per cache (make ucx-module, the package check and
# run.sh --mpi may all ask for it).
exec 9>"$W.lock"
flock 9
SRC=$W/src
export LC_ALL=C.UTF-8

# fetch_source: Debian's ucx source package $UCXVER, unpacked in $SRC.
fetch_source() {
	local a=$W/apt uri rel comp
	[ -f "$SRC/.unpacked" ] && return 0
	apt_private "$a"
	while read -r uri rel comp; do
		echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $rel $comp"
	done < <(debian_repos) >"$a/etc/sources.list"
	[ -s "$a/etc/sources.list" ] || {
		archive_uris
		# shellcheck disable=SC2154 # set by archive_uris
		echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $archive $(. /etc/os-release && echo "$VERSION_CODENAME") main" \
			>"$a/etc/sources.list"
	}
	log "ucx $UCXVER: apt-get update (private deb-src lists in $a)"
	apt-get -q "${APT_PRIVATE[@]}" update >&2 || die "apt-get update failed"
	rm -rf "$W/dl" "$SRC"
	mkdir -p "$W/dl"
	(cd "$W/dl" && apt-get -q "${APT_PRIVATE[@]}" source --download-only "ucx=$UCXVER" >&2) ||
		die "apt-get source ucx=$UCXVER failed"
	dpkg-source -x "$W/dl/ucx_${UCXVER#*:}.dsc" "$SRC" >&2
	touch "$SRC/.unpacked"
}

# stage_xpmem: this tree's libxpmem and headers under $W/xpmem/usr
# (--with-xpmem wants DIR/include/xpmem.h and DIR/lib/libxpmem.so).
stage_xpmem() {
	make -s -C "$top" B="$W/libxpmem" DESTDIR="$W/xpmem" PREFIX=/usr LIBDIR=/usr/lib \
		INCLUDEDIR=/usr/include install-lib >&2
}

# configure_ucx: autoreconf and configure once per source version, with
# the options of Debian's debian/rules that reach UCX's headers and
# config.h, and dpkg-buildflags' flags.
configure_ucx() {
	[ -f "$SRC/.configured" ] && return 0
	log "ucx $UCXVER: autoreconf and configure"
	(cd "$SRC" && mkdir -p config/m4 config/aux && autoreconf -f -i) >"$W/autoreconf.log" 2>&1 ||
		die "autoreconf failed (log: $W/autoreconf.log)"
	(
		cd "$SRC"
		eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh)"
		./configure --build="$(dpkg-architecture -qDEB_BUILD_GNU_TYPE)" \
			--prefix=/usr --libdir="/usr/lib/$MA" --sysconfdir=/etc \
			--localstatedir=/var --disable-silent-rules --disable-dependency-tracking \
			--disable-maintainer-mode \
			--enable-mt --disable-backtrace-detail --disable-logging --enable-cma \
			--without-verbs --without-rdmacm --without-knem --without-cuda \
			--without-rocm --without-java --without-go --without-fuse3 \
			--with-xpmem="$W/xpmem/usr"
	) >"$W/configure.log" 2>&1 || die "configure failed (log: $W/configure.log)"
	grep -q '^#define uct_MODULES ".*:xpmem' "$SRC/config.h" ||
		die "configure did not enable xpmem (log: $W/configure.log)"
	touch "$SRC/.configured"
}

# build_module: only src/uct/sm/mm/xpmem, linked against the system's
# libucs.so.0 and libuct.so.0 instead of the tree's (never built).
build_module() {
	local d=$SRC/src/uct/sm/mm/xpmem
	make -C "$d" libuct_xpmem_la_DEPENDENCIES= \
		libuct_xpmem_la_LIBADD="-L/usr/lib/$MA -lucs -luct" libuct_xpmem.la >"$W/make.log" 2>&1 ||
		die "make failed (log: $W/make.log)"
	[ -f "$d/.libs/libuct_xpmem.so.0.0.0" ] || die "no $d/.libs/libuct_xpmem.so.0.0.0"
	if readelf -d "$d/.libs/libuct_xpmem.so.0.0.0" | grep -E 'R(UN)?PATH'; then
		die "the module has a library search path"
	fi
}

# abi_check: our config.h defines what Debian's build of libucx0 defined
# (ucx_info -b prints it), leaving aside what only the transports we do not
# build (InfiniBand, mlx5, FUSE) and the module lists depend on.
abi_norm() {
	sed -nE 's/^#define[[:space:]]+([A-Za-z0-9_]+)[[:space:]]*(.*)$/\1 \2/p' |
		sed -E 's/[[:space:]]+$//' |
		grep -Ev '^((HAVE_(DECL_)?)?(IBV|MLX5|MLX5DV|STRUCT_MLX5DV|IB|DEVX|ODP|TL|DC|INFINIBAND|STRUCT_IBV|FUSE)_|HAVE_(IB|DEVX|ODP|MLX5_DV|DC_DV|PREFETCH) |UCX_CONFIGURE_FLAGS |[a-z_]+_MODULES )' |
		sort
}
abi_check() {
	local v
	v=$(dpkg-query -W -f='${Version}' ucx-utils 2>/dev/null) ||
		die "ucx-utils is not installed (its ucx_info -b shows Debian's build configuration)"
	[ "$v" = "$UCXVER" ] || die "ucx-utils $v is not libucx0's version $UCXVER"
	if ! diff <(ucx_info -b | abi_norm) <(abi_norm <"$SRC/config.h") >"$W/abi.diff"; then
		cat "$W/abi.diff" >&2
		die "config.h differs from Debian's libucx0 build (< Debian, > ours)"
	fi
}

# deb_copyright: DEP-5 copyright of the package: UCX's LICENSE (the module
# is UCX's code) and this project's packaging.
deb_copyright() {
	echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
	echo "Upstream-Name: UCX"
	echo "Source: Debian's ucx source package $UCXVER (src/uct/sm/mm/xpmem)"
	echo
	echo "Files: *"
	sed -n 's/^Copyright ([cC]) */ /p; s/^  \{10,\}/  /p' "$SRC/LICENSE" |
		sed '1s/^ /Copyright: /'
	echo "License: BSD-3-Clause"
	sed -n '/^Redistribution/,$p' "$SRC/LICENSE" | sed -E 's/[[:space:]]+$//; s/^$/./; s/^/ /'
	echo
	echo "Files: debian/*"
	echo "Copyright: 2026 the xpmem developers"
	echo "License: GPL-2"
	echo " On Debian systems, the complete text of the GNU General Public License"
	echo " version 2 can be found in \"/usr/share/common-licenses/GPL-2\"."
}

deb_changelog() {
	echo "$PKG ($VERSION) unstable; urgency=medium"
	echo
	echo "  * UCX's xpmem transport module from Debian's ucx $UCXVER source,"
	echo "    built against libxpmem $XPVER."
	echo
	echo " -- $MAINT  $(date -R -d "@$STAMP")"
}

deb_control() {	# deb_control DEPENDS INSTALLED-SIZE
	cat <<EOC
Package: $PKG
Version: $VERSION
Architecture: $ARCH
Multi-Arch: same
Maintainer: $MAINT
Installed-Size: $2
Depends: $1
Section: libs
Priority: optional
Homepage: https://www.openucx.org
Description: UCX transport over XPMEM (cross-process memory mapping)
 UCX's xpmem shared-memory transport (libuct_xpmem.so.0 in UCX's module
 directory), built from Debian's ucx $UCXVER source for libucx0 $UCXVER
 and linked against libxpmem.  With it, MPI ranks on one node that use
 UCX (Open MPI's pml ucx) map each other's buffers for single-copy
 transfers through /dev/xpmem (the xpmem-dkms module).
 .
 libucx0 $UCXVER loads only the modules named when it was built; see
 /usr/share/doc/$PKG/README.Debian for loading this one.
EOC
}

# make_deb: the .deb, with dpkg-deb from a staged tree.
make_deb() {
	local so=$SRC/src/uct/sm/mm/xpmem/.libs/libuct_xpmem.so.0.0.0
	local r=$W/deb/$PKG doc mod shl deps size deb
	rm -rf "$W/deb"
	doc=$r/usr/share/doc/$PKG mod=$r/usr/lib/$MA/ucx
	install -d -m 0755 "$r/DEBIAN" "$doc" "$mod"
	install -m 0644 "$so" "$mod/libuct_xpmem.so.0.0.0"
	strip --strip-unneeded --remove-section=.comment --remove-section=.note \
		"$mod/libuct_xpmem.so.0.0.0"
	ln -s libuct_xpmem.so.0.0.0 "$mod/libuct_xpmem.so.0"
	deb_copyright >"$doc/copyright"
	deb_changelog | gzip -9n >"$doc/changelog.Debian.gz"
	sed "s|@MA@|$MA|g; s|@UCXVER@|$UCXVER|g" "$here/README.Debian" >"$doc/README.Debian"
	chmod 0644 "$doc"/*
	# libc's dependency from dpkg-shlibdeps; libucx0 exactly this version,
	# libxpmem0 with the classic API (not installed here: no shlibs info).
	mkdir -p "$W/deb/debian"
	printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$PKG" "$PKG" >"$W/deb/debian/control"
	shl=$(cd "$W/deb" && dpkg-shlibdeps -O --ignore-missing-info -l"$W/xpmem/usr/lib" \
		-xlibucx0 -xlibxpmem0 "$mod/libuct_xpmem.so.0.0.0" 2>"$W/shlibdeps.log" |
		sed -n 's/^shlibs:Depends=//p') || die "dpkg-shlibdeps failed (log: $W/shlibdeps.log)"
	deps="${shl:+$shl, }libucx0 (= $UCXVER), libxpmem0 (>= 3.0.0)"
	size=$(du -k -s --apparent-size "$r" | cut -f1)
	deb_control "$deps" "$size" >"$r/DEBIAN/control"
	(cd "$r" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$r/DEBIAN/md5sums"
	chmod 0644 "$r/DEBIAN/control" "$r/DEBIAN/md5sums"
	mkdir -p "$out"
	deb=$out/${PKG}_${VERSION}_$ARCH.deb
	dpkg-deb --root-owner-group -Zxz --build "$r" "$deb" >&2
	echo "$deb"
}

MAINT=$(sed -n 's/^Maintainer: //p' "$top/debian/control")
# The changelog's date: this project's latest changelog entry.
STAMP=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Timestamp)
fetch_source
stage_xpmem
configure_ucx
abi_check
build_module
make_deb
