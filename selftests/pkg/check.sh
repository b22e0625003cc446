#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/pkg/check.sh - checks of the Debian packaging (debian/).
#
# Run from the top of the repository, as root, on Debian 12 (CI):
#
#   selftests/pkg/check.sh
#
# Needs what `selftests/vm/deps.sh test` installs (debhelper, dh-dkms, dkms,
# lintian, dpkg-dev, fakeroot, pkg-config, man-db, the 6.1 and 6.12 kernel
# headers).  Prints one line per check, `ok - ...` or `not ok - ...` (with
# the tail of its log, lines starting with `#`), then `N passed, N failed`;
# exits 1 if anything failed.  Takes about two minutes.
#
# Nothing is written outside build/pkg/: the packages are built in a copy
# of the working tree (tracked and untracked files, not ignored ones) in
# build/pkg/src, so dpkg-buildpackage writes its .debs and .changes into
# build/pkg/.  They are installed into the scratch root build/pkg/root with
# its own dpkg database, and DKMS builds the module there in private trees
# (build/pkg/dkms-<kernel>); nothing is installed into this machine's
# /lib/modules, /var/lib/dkms or dpkg database, and no module is loaded.
# Logs: build/pkg/logs/<check>.log.
set -euo pipefail
shopt -s inherit_errexit nullglob

if ! [ -f dkms.conf ] || ! [ -f debian/control ] || ! [ -f Makefile ]; then
	echo "run from the top of the xpmem repository" >&2
	exit 2
fi
top=$(pwd)
W=$top/build/pkg
SRC=$W/src
R=$W/root
LOGS=$W/logs
VERSION=$(sed -n 's/^PACKAGE_VERSION="\([^"]*\)"$/\1/p' dkms.conf)
# The package's version and its upstream part (no epoch, no revision).
PKGVER=$(dpkg-parsechangelog -l debian/changelog -S Version)
UPVER=${PKGVER#*:}
case $UPVER in *-*) UPVER=${UPVER%-*} ;; esac
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
LIBDIR=$R/usr/lib/$MA
# The packages that are installed (dbgsym packages are not).
PKGS=(libxpmem0 libxpmem-dev xpmem-dkms xpmem-tools)
DPKG=(dpkg --root="$R" --log="$R/var/log/dpkg.log")
export LC_ALL=C.UTF-8

# dpkg chroots into the scratch root to run maintainer scripts.
if [ "$(id -u)" != 0 ]; then
	echo "$0: run as root (dpkg --root runs the maintainer scripts chrooted)" >&2
	exit 2
fi

rm -rf "$W"
mkdir -p "$LOGS"

# ------------------------------------------------------------- harness ----
# Each check is a function run as a background job with its output in
# $LOGS/<name>.log (a background job, so that `set -e` applies inside it:
# it fails on its first failing command).  It may write a short result into
# $LOGS/<name>.detail, shown on its line; exit status 77 means skipped.
# Checks run concurrently where they can; the lines come in a fixed order.

pass=0
fail=0
declare -A pid desc rc

start() {	# start NAME DESCRIPTION FUNCTION [ARGS]
	local name=$1
	desc[$name]=$2
	shift 2
	(
		# (names no check function uses for a local: a check that
		# dies under set -e exits with its locals still in scope)
		trap 'echo $(( $(date +%s) - start_t0 )) >"$LOGS/$start_name.secs"' EXIT
		# shellcheck disable=SC2034 # read by the trap
		start_t0=$(date +%s) start_name=$name
		"$@"
	) >"$LOGS/$name.log" 2>&1 &
	pid[$name]=$!
}

collect() {	# collect NAME: wait for the check to end
	local name=$1 r=0
	[ -n "${rc[$name]:-}" ] && return 0
	wait "${pid[$name]}" || r=$?
	rc[$name]=$r
}

finish() {	# finish NAME: wait for the check, print its line
	local name=$1 detail="" secs
	collect "$name"
	secs=$(cat "$LOGS/$name.secs" 2>/dev/null || echo "?")
	if [ -s "$LOGS/$name.detail" ]; then
		detail=$(tr '\n' ' ' <"$LOGS/$name.detail" | sed 's/ *$//')
	fi
	case ${rc[$name]} in
	0)
		echo "ok - ${desc[$name]}${detail:+: $detail} (${secs}s)"
		pass=$((pass + 1)) ;;
	77)
		echo "ok - ${desc[$name]} # SKIP $detail"
		pass=$((pass + 1)) ;;
	*)
		echo "not ok - ${desc[$name]}${detail:+: $detail} (exit ${rc[$name]}, ${secs}s)"
		tail -n 30 "$LOGS/$name.log" | sed 's/^/#   /'
		echo "#   (log: ${LOGS#"$top"/}/$name.log)"
		fail=$((fail + 1)) ;;
	esac
}

run() {		# run NAME DESCRIPTION FUNCTION [ARGS]: start + finish
	start "$@"
	finish "$1"
}

detail() {	# detail NAME TEXT...: the short result shown on the check's line
	local name=$1
	shift
	echo "$*" >>"$LOGS/$name.detail"
}

die() {
	echo "FAILED: $*"
	return 1
}

debs() {	# the built .debs of PKGS, in that order
	local p f
	for p in "${PKGS[@]}"; do
		f=("$W/${p}_"*.deb)
		[ ${#f[@]} = 1 ] || die "no (or several) $p .deb in $W"
		echo "${f[0]}"
	done
}

# ------------------------------------------------------------- checks -----

# 0a. The package version is the project's version (dkms.conf).
check_version() {
	detail version "$PKGVER, PACKAGE_VERSION $VERSION"
	[ -n "$VERSION" ] || die "no PACKAGE_VERSION in dkms.conf"
	[ "$UPVER" = "$VERSION" ] ||
		die "debian/changelog's upstream version $UPVER is not dkms.conf's $VERSION (dch -v $VERSION)"
}

# SPDX expression -> DEP-5 short names.
spdx_to_dep5() {
	sed -E -e 's/[()]//g' \
		-e 's/\<([A-Z]*GPL-[0-9.]+)(\.0)?(-or-later|\+)/\1+/g' \
		-e 's/\<([A-Z]*GPL-[0-9.]+)(\.0)?(-only)?\>/\1/g' \
		-e 's/\<([A-Z]*GPL-[0-9]+)\.0\>/\1/g' \
		-e 's/ WITH ([^ ]+)/ with \1 exception/g' \
		-e 's/ OR / or /g; s/ AND / and /g' -e 's/  +/ /g; s/^ //; s/ $//'
}

# 0b. debian/copyright agrees with the SPDX line of every file.
check_copyright() {
	local pats=() lics=() pat lic f spdx want got i n=0 bad=0
	while IFS=$'\t' read -r pat lic; do
		pats+=("$pat")
		lics+=("$lic")
	done < <(awk '
		function flush(  n, a, i) {
			gsub(/^[ \t]+|[ \t]+$/, "", lic)
			if (files != "") {
				n = split(files, a, /[ \t]+/)
				for (i = 1; i <= n; i++) if (a[i] != "") print a[i] "\t" lic
			}
			files = ""; lic = ""; field = ""
		}
		/^[ \t]*$/ { flush(); next }
		/^[^ \t]/ {
			field = $1; sub(/:$/, "", field)
			val = substr($0, index($0, ":") + 1)
			if (field == "Files") files = val
			else if (field == "License") lic = val
			next
		}
		{ if (field == "Files") files = files " " $0 }
		END { flush() }' "$SRC/debian/copyright")
	[ ${#pats[@]} -gt 0 ] || die "no Files paragraphs in debian/copyright"
	# file <TAB> SPDX expression, for every file with an SPDX line in its
	# first three lines; then the expression in DEP-5 terms.
	# shellcheck disable=SC2016 # an awk program
	(cd "$SRC" && find . -type f -printf '%P\0' | sort -z | xargs -0 -r awk '
		FNR <= 3 && /SPDX-License-Identifier:/ {
			s = $0
			sub(/.*SPDX-License-Identifier:[ \t]*/, "", s)
			sub(/[ \t]*(\*\/|-->)?[ \t]*$/, "", s)
			print FILENAME "\t" s
			nextfile
		}
		FNR > 3 { nextfile }') >"$W/spdx.txt"
	cut -f2 "$W/spdx.txt" | spdx_to_dep5 | paste "$W/spdx.txt" - >"$W/spdx-dep5.txt"
	while IFS=$'\t' read -r f spdx want; do
		got=""
		for i in "${!pats[@]}"; do
			# shellcheck disable=SC2053 # DEP-5 patterns: * also matches /
			[[ $f == ${pats[i]} ]] && got=${lics[i]}
		done
		n=$((n + 1))
		if [ "${got,,}" != "${want,,}" ]; then
			echo "$f: SPDX '$spdx' = '$want', debian/copyright says '${got:-nothing}'"
			bad=$((bad + 1))
		fi
	done <"$W/spdx-dep5.txt"
	detail copyright "$n files with SPDX lines$([ "$bad" = 0 ] || echo ", $bad disagree")"
	[ "$bad" = 0 ]
}

# The copy of the working tree that is packaged: tracked and untracked
# files, not ignored ones (build/ is ignored); without git, all but build/.
copy_tree() {	# copy_tree [DEST]: the tracked files (default DEST: $SRC)
	local dest=${1:-$SRC}
	mkdir -p "$dest"
	if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$top" && git ls-files -z -co --exclude-standard --deduplicate |
			while IFS= read -r -d '' f; do
				[ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"
			done | tar --null -T - -cf -) | tar -C "$dest" -xf -
	else
		tar -C "$top" --exclude=./build --exclude=./.git -cf - . | tar -C "$dest" -xf -
	fi
}

# 1. dpkg-buildpackage in the copy.
check_build() {
	cd "$SRC"
	dpkg-buildpackage -us -uc -b
	cd "$W"
	debs >/dev/null
	local -a built=("$W"/*.deb)
	detail build "${built[*]##*/}"
}

# 2. lintian, failing on errors and warnings; info and pedantic tags are
# printed (as # lines) but do not fail.
check_lintian() {
	local -a changes
	local r=0 n
	changes=("$W"/xpmem_*.changes)
	[ ${#changes[@]} = 1 ] || die "no .changes in $W"
	lintian --fail-on error,warning --display-info --pedantic "${changes[0]}" \
		>"$W/lintian.txt" 2>&1 || r=$?
	cat "$W/lintian.txt"
	# The tags that do not fail the check, on the check's line.
	grep '^[IP]: ' "$W/lintian.txt" | sed 's/^/lintian /' >>"$W/lintian-minor.txt" || true
	n=$(grep -c '^[IP]: ' "$W/lintian.txt" || true)
	detail lintian "$(grep -c '^[EW]: ' "$W/lintian.txt" || true) errors/warnings, $n info/pedantic"
	return "$r"
}

# 3. Install into a scratch root with its own dpkg database.
#
# Dependencies: each one outside this source package (libc6, dkms) must be
# installed on this host; its status entry (with no files) is copied into
# the scratch database, so dpkg checks the versions for real instead of
# being told to ignore dependencies.
#
# Maintainer scripts: dpkg, as root, runs them chrooted into the scratch
# root, which gets a minimal /bin/sh (this host's, with its libraries) for
# that.  xpmem-dkms's postinst hands over to /usr/lib/dkms/common.postinst
# (which would build and install the module with dkms) and its prerm calls
# dkms: both are stubs in the scratch root that record how they were
# called.  Check 5 does the real dkms build, in a private tree.
# host_pkg NAME: the installed host package NAME as dpkg-query wants it
# named: NAME:<native arch> or NAME:all, so that a foreign architecture's
# copy (multiarch, e.g. libc6:arm64 for cross builds) is not taken too.
host_pkg() {
	local sel
	for sel in "$1:$(dpkg --print-architecture)" "$1:all" "$1"; do
		if [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$sel" 2>/dev/null)" = "ii " ]; then
			echo "$sel"
			return 0
		fi
	done
	return 1
}

check_install() {
	local -a files
	local d dep sel name ours=" ${PKGS[*]} " seeded=() p st f rel bad=0 lib
	mapfile -t files < <(debs)
	mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" \
		"$R/var/lib/dpkg/triggers" "$R/var/log"
	: >"$R/var/lib/dpkg/status"
	: >"$R/var/lib/dpkg/available"
	for d in "${files[@]}"; do
		for dep in $( (dpkg-deb -f "$d" Pre-Depends; dpkg-deb -f "$d" Depends) |
			sed -E 's/[,|]/\n/g' | sed -E 's/\(.*\)//; s/:[a-z0-9]+//; s/[[:space:]]//g'); do
			[[ $ours == *" $dep "* ]] && continue
			[[ " ${seeded[*]} " == *" $dep "* ]] && continue
			sel=$(host_pkg "$dep") || continue
			dpkg-query -s "$sel" >>"$R/var/lib/dpkg/status"
			echo >>"$R/var/lib/dpkg/status"
			name=$(dpkg-query -W -f='${binary:Package}' "$sel")
			: >"$R/var/lib/dpkg/info/$name.list"
			seeded+=("$dep")
		done
	done
	echo "host packages recorded in the scratch database: ${seeded[*]:-none}"

	# The shell and the dkms stubs (not owned by any package).
	mkdir -p "$R/bin" "$R/usr/lib/dkms" "$R/usr/sbin"
	cp -L /bin/sh "$R/bin/sh"
	for lib in $(ldd /bin/sh | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		mkdir -p "$R${lib%/*}"
		cp -L "$lib" "$R$lib"
	done
	cat >"$R/usr/lib/dkms/common.postinst" <<'EOF'
#!/bin/sh
# selftests/pkg/check.sh stub: records the call instead of running dkms.
echo "common.postinst $*" >>/dkms-calls
EOF
	cat >"$R/usr/sbin/dkms" <<'EOF'
#!/bin/sh
# selftests/pkg/check.sh stub: records the call; "status" reports a build.
echo "dkms $*" >>/dkms-calls
[ "$1" != status ] || echo "xpmem: built (stub)"
EOF
	chmod 0755 "$R/usr/lib/dkms/common.postinst" "$R/usr/sbin/dkms"
	: >"$R/dkms-calls"

	PATH=/usr/sbin:/usr/bin:/sbin:/bin "${DPKG[@]}" -i "${files[@]}"
	for p in "${PKGS[@]}"; do
		st=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${db:Status-Abbrev}' "$p")
		[ "$st" = "ii " ] || die "$p: dpkg status '$st', expected 'ii '"
	done
	cat "$R/dkms-calls"
	[ "$(cat "$R/dkms-calls")" = "common.postinst xpmem $VERSION /usr/share/xpmem-dkms " ] ||
		die "xpmem-dkms's postinst did not call common.postinst xpmem $VERSION as expected"
	"${DPKG[@]}" --verify
	# What the packages must contain.
	for f in "usr/lib/$MA/libxpmem.so.0" "usr/lib/$MA/libxpmem.so" "usr/lib/$MA/libxpmem.a" \
		usr/include/xpmem.h usr/include/xpmem_uapi.h \
		"usr/lib/$MA/pkgconfig/xpmem.pc" "usr/lib/$MA/pkgconfig/cray-xpmem.pc" \
		usr/bin/xpmem-demo usr/bin/xpmem-bench etc/modules-load.d/xpmem.conf \
		"usr/src/xpmem-$VERSION/dkms.conf" "usr/src/xpmem-$VERSION/Kbuild" \
		"usr/src/xpmem-$VERSION/kernel/build-module.sh" \
		"usr/src/xpmem-$VERSION/include/xpmem_uapi.h"; do
		[ -e "$R/$f" ] || { echo "missing: /$f"; bad=1; }
	done
	[ -x "$R/usr/src/xpmem-$VERSION/kernel/build-module.sh" ] || { echo "build-module.sh not executable"; bad=1; }
	[ "$(readlink -f "$R/usr/lib/$MA/libxpmem.so")" = "$(readlink -f "$R/usr/lib/$MA/libxpmem.so.0")" ] ||
		{ echo "libxpmem.so does not point to libxpmem.so.0"; bad=1; }
	# Only what the module build needs in /usr/src/xpmem-<version>.
	while IFS= read -r -d '' f; do
		rel=${f#"$R/usr/src/xpmem-$VERSION/"}
		case $rel in
		Kbuild | dkms.conf | include/xpmem_uapi.h | kernel/build-module.sh | kernel/*.[ch]) ;;
		*) echo "unexpected file in /usr/src/xpmem-$VERSION: $rel"; bad=1 ;;
		esac
	done < <(find "$R/usr/src/xpmem-$VERSION" -type f -print0)
	# The modules-load.d file is a conffile and loads nothing until edited.
	dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Conffiles}\n' xpmem-dkms |
		grep -q '^ */etc/modules-load.d/xpmem.conf ' ||
		{ echo "/etc/modules-load.d/xpmem.conf is not a conffile"; bad=1; }
	if grep -Ev '^[[:space:]]*(#|$)' "$R/etc/modules-load.d/xpmem.conf"; then
		echo "/etc/modules-load.d/xpmem.conf loads a module by default (it must be opt-in)"
		bad=1
	fi
	detail install "${PKGS[*]} installed (dkms calls stubbed; dependencies from this host: ${seeded[*]:-none})"
	[ "$bad" = 0 ]
}

# 4. Build a classic-API program with pkg-config cray-xpmem against the
# scratch root and run it (no module here: the shm fallback serves it,
# unless /dev/xpmem exists).
# A program of the classic libxpmem API on its own memory (checks 4 and 10).
classic_c() {
	cat <<'EOF'
/* The classic libxpmem API on the caller's own memory. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xpmem.h>

#define FAIL(what) do { perror(what); return 1; } while (0)

int main(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), size = 4 * pg, i;
	struct xpmem_addr addr;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	unsigned char *buf, *att;
	int ver;

	ver = xpmem_version();
	if (ver < 0 && errno != ENODEV)
		FAIL("xpmem_version");
	printf("xpmem_version: %d%s\n", ver, ver < 0 ? " (ENODEV: shm fallback)" : "");

	buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		FAIL("mmap");
	for (i = 0; i < size; i++)
		buf[i] = (unsigned char)(i * 7 + 1);

	segid = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0600);
	if (segid == -1)
		FAIL("xpmem_make");
	apid = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	if (apid == -1)
		FAIL("xpmem_get");
	addr.apid = apid;
	addr.offset = (off_t)pg;
	att = xpmem_attach(addr, 2 * pg, NULL);
	if (att == (void *)-1)
		FAIL("xpmem_attach");
	if (att == buf + pg) {
		fprintf(stderr, "the attachment is the owner's own mapping\n");
		return 1;
	}
	for (i = 0; i < 2 * pg; i++)
		if (att[i] != (unsigned char)((i + pg) * 7 + 1)) {
			fprintf(stderr, "attachment byte %zu differs\n", i);
			return 1;
		}
	memcpy(att + 10, "reply", 6);
	if (memcmp(buf + pg + 10, "reply", 6) != 0) {
		fprintf(stderr, "a store through the attachment is not seen by the owner\n");
		return 1;
	}
	buf[pg + 100] = 0xa5;
	if (att[100] != 0xa5) {
		fprintf(stderr, "an owner's store is not seen through the attachment\n");
		return 1;
	}
	if (xpmem_detach(att) != 0)
		FAIL("xpmem_detach");
	if (xpmem_release(apid) != 0)
		FAIL("xpmem_release");
	if (xpmem_remove(segid) != 0)
		FAIL("xpmem_remove");
	if (memcmp(buf + pg + 10, "reply", 6) != 0 || buf[0] != 1 || buf[size - 1] != (unsigned char)((size - 1) * 7 + 1))
		FAIL("owner data after remove");
	printf("make/get/attach/detach/release/remove: ok\n");
	return 0;
}
EOF
}

check_pkgconfig() {
	local t=$W/pkgconfig flags ver
	mkdir -p "$t"
	export PKG_CONFIG_SYSROOT_DIR=$R
	export PKG_CONFIG_LIBDIR=$R/usr/lib/$MA/pkgconfig:$R/usr/share/pkgconfig
	export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
	for m in xpmem cray-xpmem; do
		ver=$(pkg-config --modversion "$m")
		[ "$ver" = "$VERSION" ] || die "pkg-config --modversion $m: '$ver', expected $VERSION"
	done
	flags=$(pkg-config --cflags --libs cray-xpmem)
	echo "pkg-config --cflags --libs cray-xpmem: $flags"
	[[ $flags == *"-I$R/usr/include"* && $flags == *"-L$R/usr/lib/$MA"* ]] ||
		die "the flags do not point into $R"
	classic_c >"$t/classic.c"
	# shellcheck disable=SC2086 # $flags is a list of options
	${CC:-cc} -Wall -Wextra -Werror -o "$t/classic" "$t/classic.c" $flags
	LD_LIBRARY_PATH=$LIBDIR ldd "$t/classic" | tee "$t/ldd.txt"
	grep -q "libxpmem.so.0 => $LIBDIR/libxpmem.so.0" "$t/ldd.txt" ||
		die "the program does not load libxpmem.so.0 from $LIBDIR"
	LD_LIBRARY_PATH=$LIBDIR "$t/classic" | tee "$t/run.txt"
	detail pkgconfig "$(head -n 1 "$t/run.txt")"
}

# 5. dkms build of the installed source for one kernel, in a private dkms
# tree, with a throw-away signing key; then the module's version and
# vermagic.  Fails if anything under /lib/modules or /var/lib/dkms changed.
check_dkms() {
	local kver=$1 ksrc=${2:-} tree=$W/dkms-$1 stamp ko ref vm want changed d
	local -a host=() src=()
	[ -z "$ksrc" ] || src=(--kernelsourcedir "$ksrc")
	mkdir -p "$tree"
	stamp=$tree/.stamp
	touch "$stamp"
	export mok_signing_key=$tree/mok.key mok_certificate=$tree/mok.pub
	if ! dkms build -m xpmem -v "$VERSION" -k "$kver" "${src[@]}" \
		--sourcetree "$R/usr/src" --dkmstree "$tree"; then
		cat "$tree/xpmem/$VERSION/build/make.log" 2>/dev/null || true
		die "dkms build for $kver"
	fi
	ko=$(find "$tree/xpmem/$VERSION/$kver" -path '*/module/xpmem.ko*' | head -n 1)
	[ -n "$ko" ] || die "no xpmem.ko in $tree/xpmem/$VERSION/$kver"
	modinfo "$ko" | grep -Ev '^(signature|sig_key|[[:space:]])'
	vm=$(modinfo -F version "$ko")
	[ "$vm" = "$UPVER" ] || die "modinfo version '$vm', the package's is $UPVER"
	vm=$(modinfo -F vermagic "$ko")
	# The vermagic of one of the kernel's own modules, else its release.
	ref=$(find "/lib/modules/$kver/kernel" -name '*.ko*' -print -quit 2>/dev/null || true)
	if [ -n "$ref" ]; then
		want=$(modinfo -F vermagic "$ref")
		[ "$vm" = "$want" ] || die "vermagic '$vm', the kernel's modules have '$want'"
	else
		[ "${vm%% *}" = "$kver" ] || die "vermagic '$vm' is not for $kver"
	fi
	for d in /lib/modules /var/lib/dkms; do
		[ -d "$d" ] && host+=("$d")
	done
	changed=$(find "${host[@]}" -newer "$stamp" -print)
	[ -z "$changed" ] || die "this machine's module trees changed: $changed"
	detail "dkms-$kver" "${ko#"$W"/}: version $UPVER, vermagic '${vm% }'"
}

# 6. Man pages: each parses (lexgrog) and renders without warnings; every
# exported function and every tool has a page.
check_man() {
	local f w n=0 bad=0 s
	local -a pages=("$R"/usr/share/man/man[0-9]*/*)
	if [ ${#pages[@]} = 0 ]; then
		detail man "no man pages"
		return 77
	fi
	for f in "${pages[@]}"; do
		n=$((n + 1))
		if ! lexgrog "$f"; then
			echo "lexgrog cannot parse ${f#"$R"}"
			bad=1
		fi
		w=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null) || { echo "man -l ${f#"$R"} failed"; bad=1; }
		if [ -n "$w" ]; then
			echo "${f#"$R"}: $w"
			bad=1
		fi
	done
	while read -r s; do
		[ -e "$R/usr/share/man/man3/$s.3.gz" ] || { echo "no man page for $s(3)"; bad=1; }
	done < <(sed -n 's/^[[:space:]]*\(xpmem_[a-z_]*\);.*/\1/p' "$SRC/lib/libxpmem.map")
	for f in "$R"/usr/bin/*; do
		[ -e "$R/usr/share/man/man1/${f##*/}.1.gz" ] || { echo "no man page for ${f##*/}(1)"; bad=1; }
	done
	detail man "$n pages"
	[ "$bad" = 0 ]
}

# 7. The tools run from the scratch root.
check_tools() {
	local env=(env LD_LIBRARY_PATH="$LIBDIR" XPMEM_BACKEND=shm) out lddout
	local ran="xpmem-demo --help"
	# (ldd's whole output first: grep -q on a pipe may SIGPIPE ldd,
	# which pipefail counts as a failure)
	lddout=$(LD_LIBRARY_PATH=$LIBDIR ldd "$R/usr/bin/xpmem-demo") || true
	grep -qF "=> $LIBDIR/libxpmem.so.0" <<<"$lddout" ||
		die "xpmem-demo does not load libxpmem.so.0 from $LIBDIR"
	"${env[@]}" "$R/usr/bin/xpmem-demo" --help
	"${env[@]}" "$R/usr/bin/xpmem-bench" -h
	ran+=", xpmem-bench -h"
	if [ -e "$R/usr/bin/xpmem" ]; then
		"${env[@]}" "$R/usr/bin/xpmem" --help
		out=$("${env[@]}" "$R/usr/bin/xpmem" --version)
		echo "$out"
		[[ $out == *"$VERSION"* ]] || die "xpmem --version does not say $VERSION"
		ran+=", xpmem --help, xpmem --version"
	fi
	# The demo itself: owner and attacher processes over the shm backend.
	"${env[@]}" "$R/usr/bin/xpmem-demo"
	ran+=", xpmem-demo (shm)"
	detail tools "$ran"
}

# 8. Exported symbols: exactly the version script's, all xpmem_*, and
# dpkg-gensymbols -c4 agrees with debian/libxpmem0.symbols (as in the build).
check_symbols() {
	local lib got want nodes
	lib=$(readlink -f "$LIBDIR/libxpmem.so.0")
	got=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sort)
	nodes=$(nm -D --defined-only "$lib" | awk '$2 == "A" { print $3 }' | sort)
	echo "exported:"
	echo "$got"
	want=$(awk '
		/^[A-Za-z_][A-Za-z0-9_.]* *\{/ { node = $1; next }
		/local:/ { node = "" }
		node != "" && /^[ \t]*[A-Za-z_][A-Za-z0-9_]*;/ {
			s = $1; sub(/;.*/, "", s); print s "@@" node }' "$SRC/lib/libxpmem.map" | sort)
	if [ "$got" != "$want" ]; then
		diff <(echo "$want") <(echo "$got") || true
		die "exported symbols differ from lib/libxpmem.map (< map, > library)"
	fi
	if grep -v '^xpmem_' <<<"$got"; then
		die "symbols other than xpmem_* are exported"
	fi
	[ "$nodes" = "$(sed -n 's/^\([A-Za-z_][A-Za-z0-9_.]*\) *{.*/\1/p' "$SRC/lib/libxpmem.map" | sort)" ] ||
		die "version nodes '$nodes' differ from lib/libxpmem.map"
	cd "$SRC"
	dpkg-gensymbols -c4 -plibxpmem0 -v"$PKGVER" \
		-Idebian/libxpmem0.symbols -e"$lib" -O"$W/libxpmem0.symbols.out"
	detail symbols "$(wc -l <<<"$got") symbols in $(tr '\n' ' ' <<<"$nodes")"
}

# 9. Purge: the prerm asks dkms to remove the module, and nothing of the
# packages is left (conffile included).
check_purge() {
	local f p left=0 extra=()
	: >"$R/dkms-calls"
	# (libucx0-xpmem, check 11, depends on libxpmem0: purged with it)
	[ -z "$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${db:Status-Abbrev}' "$UCX_PKG" 2>/dev/null)" ] ||
		extra=("$UCX_PKG")
	PATH=/usr/sbin:/usr/bin:/sbin:/bin "${DPKG[@]}" --purge "${PKGS[@]}" "${extra[@]}"
	cat "$R/dkms-calls"
	grep -qx "dkms remove -m xpmem -v $VERSION --all" "$R/dkms-calls" ||
		die "xpmem-dkms's prerm did not run dkms remove -m xpmem -v $VERSION --all"
	for p in "${PKGS[@]}" "${extra[@]}"; do
		[ -z "$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" ] ||
			die "$p is still known to dpkg after --purge"
	done
	# Only dpkg's database and log, the shell and the stubs may remain.
	while IFS= read -r -d '' f; do
		case ${f#"$R"/} in
		var/lib/dpkg/* | var/log/dpkg.log | bin/sh | lib/* | lib64/* | dkms-calls | \
			usr/lib/dkms/common.postinst | usr/sbin/dkms) ;;
		*) echo "left behind: /${f#"$R"/}"; left=1 ;;
		esac
	done < <(find "$R" ! -type d -print0)
	detail purge "prerm called dkms remove, no file left"
	[ "$left" = 0 ]
}

# 10. RPMs (rpm/xpmem.spec): rpmbuild from a tarball of the tree (without
# its dependency check: this machine's rpm database is empty), rpmlint
# without errors, each RPM's files the same as its Debian package's (the
# library directory mapped; documentation, licences and man-page
# compression aside), and the classic program built against the unpacked
# libxpmem and libxpmem-devel RPMs with only pkg-config cray-xpmem.
RPM_DEB=(libxpmem:libxpmem0 libxpmem-devel:libxpmem-dev xpmem-dkms:xpmem-dkms
	 xpmem-tools:xpmem-tools)
rpm_files() {	# rpm_files RPM LIBDIR: its files (not directories), one per line
	rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" |
		awk '$1 !~ /^d/ { print $2 }' | sed -e "s|^$2/|LIBDIR/|" -e 's/\.gz$//' |
		grep -Ev '^/usr/share/(doc|licenses)/' | sort
}
deb_files() {	# deb_files DEB: its files (not directories), one per line
	dpkg-deb --fsys-tarfile "$1" | tar -t | sed -n 's|^\./|/|p' | grep -v '/$' |
		sed -e "s|^/usr/lib/$MA/|LIBDIR/|" -e 's/\.gz$//' |
		grep -Ev '^/usr/share/(doc|lintian)/' | sort
}
check_rpm() {
	local t=$W/rpm rlib pair r d rpm deb flags out errors lddout
	local -a rpms
	mkdir -p "$t/SOURCES" "$t/root"
	copy_tree "$t/xpmem-$VERSION"
	tar -C "$t" -cJf "$t/SOURCES/xpmem-$VERSION.tar.xz" "xpmem-$VERSION"
	rpmbuild -ba --nodeps --define "_topdir $t" "$t/xpmem-$VERSION/rpm/xpmem.spec"
	mapfile -t rpms < <(find "$t/RPMS" "$t/SRPMS" -name '*.rpm' | sort)
	printf '%s\n' "${rpms[@]##*/}"
	[ ${#rpms[@]} = 5 ] || die "expected four RPMs and a source RPM"
	out=$(rpmlint -r "$t/xpmem-$VERSION/rpm/xpmem.rpmlintrc" "${rpms[@]}" 2>&1) || true
	echo "$out"
	errors=$(grep -c ': E: ' <<<"$out" || true)
	[ "$errors" = 0 ] || die "rpmlint: $errors error(s)"
	rlib=$(rpm --eval '%{_libdir}')
	for pair in "${RPM_DEB[@]}"; do
		r=${pair%%:*} d=${pair#*:}
		rpm=$(find "$t/RPMS" -name "$r-$VERSION-*.rpm")
		deb=$(debs | grep "/${d}_")
		[ -n "$rpm" ] || die "no $r RPM"
		if ! diff <(deb_files "$deb") <(rpm_files "$rpm" "$rlib"); then
			die "$r's files differ from $d's (< .deb, > .rpm)"
		fi
		(cd "$t/root" && rpm2cpio "$rpm" | cpio -idm --quiet)
	done
	export PKG_CONFIG_SYSROOT_DIR=$t/root
	export PKG_CONFIG_LIBDIR=$t/root$rlib/pkgconfig
	export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
	flags=$(pkg-config --cflags --libs cray-xpmem)
	echo "pkg-config --cflags --libs cray-xpmem: $flags"
	classic_c >"$t/classic.c"
	# shellcheck disable=SC2086 # $flags is a list of options
	${CC:-cc} -Wall -Wextra -Werror -o "$t/classic" "$t/classic.c" $flags
	lddout=$(LD_LIBRARY_PATH=$t/root$rlib ldd "$t/classic") || true
	grep -qF "=> $t/root$rlib/libxpmem.so.0" <<<"$lddout" ||
		die "the program does not load libxpmem.so.0 from the unpacked RPM"
	LD_LIBRARY_PATH=$t/root$rlib "$t/classic"
	detail rpm "${#rpms[@]} packages, rpmlint $(grep -c ': W: ' <<<"$out" || true) warning(s), no error; files as in the .debs; classic program built and run"
}

# 11. libucx0-xpmem (debian/ucx/build.sh): UCX's xpmem transport for the
# libucx0 installed here, built into $W; lintian without errors or
# warnings; installed into the scratch root beside libxpmem0 (libucx0's
# status entry copied from this host, as check 3 does for its
# dependencies); and registered with this host's libuct when preloaded:
# ucx_info -c lists the transport's UCX_XPMEM_ settings (no /dev/xpmem
# here, so it reports no device).
UCX_PKG=libucx0-xpmem
check_ucx() {
	local deb sel name r=0 so=$LIBDIR/ucx/libuct_xpmem.so.0
	deb=$("$top/debian/ucx/build.sh" -o "$W")
	dpkg-deb -c "$deb"
	lintian --fail-on error,warning --display-info --pedantic "$deb" >"$W/lintian-ucx.txt" 2>&1 || r=$?
	cat "$W/lintian-ucx.txt"
	[ "$r" = 0 ] || die "lintian: $UCX_PKG has errors or warnings"
	if [ -z "$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${db:Status-Abbrev}' libucx0 2>/dev/null)" ]; then
		sel=$(host_pkg libucx0) || die "libucx0 is not installed here"
		name=$(dpkg-query -W -f='${binary:Package}' "$sel")
		# (a status entry goes in while no other check runs dpkg on the root)
		{ dpkg-query -s "$sel"; echo; } >>"$R/var/lib/dpkg/status"
		: >"$R/var/lib/dpkg/info/$name.list"
	fi
	PATH=/usr/sbin:/usr/bin:/sbin:/bin "${DPKG[@]}" -i "$deb"
	[ "$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${db:Status-Abbrev}' "$UCX_PKG")" = "ii " ] ||
		die "$UCX_PKG is not installed in the scratch root"
	"${DPKG[@]}" --verify "$UCX_PKG"
	[ "$(readlink "$so")" = libuct_xpmem.so.0.0.0 ] || die "no $so -> libuct_xpmem.so.0.0.0"
	LD_LIBRARY_PATH=$LIBDIR LD_PRELOAD=$so ucx_info -c >"$W/ucx-info-c.txt"
	grep '^UCX_XPMEM_' "$W/ucx-info-c.txt" || die "ucx_info -c lists no UCX_XPMEM_ setting with the module preloaded"
	detail ucx "${deb##*/}, lintian $(grep -c '^[IP]: ' "$W/lintian-ucx.txt" || true) info/pedantic; installed; ucx_info sees the transport"
}

# ------------------------------------------------------------- run --------

copy_tree
run version "debian/changelog version is dkms.conf's PACKAGE_VERSION" check_version
run copyright "debian/copyright matches every file's SPDX-License-Identifier" check_copyright
run build "1. dpkg-buildpackage -us -uc -b" check_build
start lintian "2. lintian --fail-on error,warning" check_lintian
start install "3. install into the scratch root build/pkg/root" check_install
collect install

# The checks that use the installed root, concurrently.  DKMS: the newest
# headers of the 6.1 and of the 6.12 series installed here, and each kernel
# tree named in DKMS_TREES (the test kernels built from source, whose
# releases have no /lib/modules here).
kernels=()
for d in ${DKMS_TREES:-}; do
	if k=$(cat "$d/include/config/kernel.release" 2>/dev/null); then
		kernels+=("$k")
		start "dkms-$k" "5. dkms build for $k (tree $d)" check_dkms "$k" "$d"
	else
		kernels+=("${d##*/}")
		start "dkms-${d##*/}" "5. dkms build for ${d##*/}" \
			die "$d is not a configured kernel tree"
	fi
done
for series in 6.1 6.12; do
	k=""
	for d in /lib/modules/"$series".*/build /lib/modules/"$series"-*/build; do
		if [ -e "$d/Makefile" ]; then
			k=$(printf '%s\n' "$k" "$(basename "$(dirname "$d")")" | sort -V | tail -n 1)
		fi
	done
	if [ -n "$k" ]; then
		kernels+=("$k")
		start "dkms-$k" "5. dkms build for $k" check_dkms "$k"
	else
		kernels+=("$series")
		start "dkms-$series" "5. dkms build for a $series kernel" \
			die "no /lib/modules/$series.*/build here (apt-get install the kernel's headers)"
	fi
done
start pkgconfig "4. pkg-config cray-xpmem builds and runs a classic-API program" check_pkgconfig
start man "6. man pages: lexgrog, man --warnings, one per function and tool" check_man
start tools "7. the tools run from the scratch root" check_tools
start symbols "8. exported symbols: lib/libxpmem.map, xpmem_* only, dpkg-gensymbols -c4" check_symbols
start rpm "10. RPMs: rpmbuild, rpmlint, the .debs' files, pkg-config cray-xpmem" check_rpm
start ucx "11. libucx0-xpmem: UCX's xpmem transport built, lintian-clean, installed, seen by ucx_info" check_ucx

# Lines in order; the purge waits for everything that reads the root.
finish lintian
if [ -s "$W/lintian-minor.txt" ]; then sed 's/^/# /' "$W/lintian-minor.txt"; fi
finish install
finish pkgconfig
for k in "${kernels[@]}"; do
	finish "dkms-$k"
done
finish man
finish tools
finish symbols
finish rpm
finish ucx
run purge "9. dpkg --purge of every package leaves nothing behind" check_purge

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
