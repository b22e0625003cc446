#!/bin/bash
# Sourced by scripts that fetch Debian packages or sources without touching
# this machine's apt configuration (fetch-kernel-source.sh, the UCX module
# build in debian/ucx/build.sh).  The caller defines die (print and exit).
#
#   archive_uris        sets $archive and $security: the Debian archive and
#                       its security archive as this machine's apt sources
#                       name them
#   debian_repos        prints "URI RELEASE COMPONENT" for each Debian
#                       repository of this machine's package lists
#   apt_private DIR     sets the array APT_PRIVATE: apt options for a private
#                       sources list (DIR/etc/sources.list, written by the
#                       caller), package lists, state, status file and
#                       archive cache, all under DIR, without dpkg or its
#                       lock; /etc/apt, /var/lib/apt and /var/cache/apt are
#                       neither used nor changed
#
# apt's own configuration (proxies, authentication) applies.

# The Debian archive and its security archive, as this machine's apt
# sources name them (sources.list, sources.list.d/*.list and *.sources,
# whatever mirror or proxy they point at), read by apt itself: the
# repositories of its package lists whose Release file says Origin
# "Debian", Label "Debian" or "Debian-Security" (apt-get indextargets);
# without lists (apt-get update never ran), the repositories apt would
# fetch (apt-get update --print-uris), told apart by their path:
# .../debian/ and .../debian-security/.  XPMEM_DEBIAN_ARCHIVE and
# XPMEM_DEBIAN_SECURITY (URIs) override both.
archive_uris() {
	local main='' sec=''
	classify < <(
		# shellcheck disable=SC2016 # apt's $(FIELD) placeholders
		apt-get indextargets --format '$(REPO_URI)|$(ORIGIN)|$(LABEL)' \
			'Created-By: Packages' 2>/dev/null | sort -u)
	if [ -z "$main" ]; then
		classify < <(apt-get -o Debug::NoLocking=1 update --print-uris 2>/dev/null |
			sed -n "s#^'\(.*/\)dists/[^/]*/InRelease' .*#\1||#p" | sort -u)
	fi
	main=${XPMEM_DEBIAN_ARCHIVE:-$main}
	sec=${XPMEM_DEBIAN_SECURITY:-$sec}
	[ -n "$main" ] || die "no Debian archive in this machine's apt sources (set XPMEM_DEBIAN_ARCHIVE=URI)"
	# shellcheck disable=SC2034 # used by the caller
	archive=${main%/} security=${sec%/}
}
# classify: lines "REPO-URI|ORIGIN|LABEL" on stdin; sets archive_uris's
# main and sec (the first of each).
classify() {
	local uri origin label
	while IFS='|' read -r uri origin label; do
		# shellcheck disable=SC2016 # an unfilled $(FIELD) placeholder
		case "$origin" in '$('*) origin= ;; esac
		# shellcheck disable=SC2016
		case "$label" in '$('*) label= ;; esac
		if [ "$origin" = Debian ]; then
			case "$label" in
			Debian) main=${main:-$uri} ;;
			Debian-Security) sec=${sec:-$uri} ;;
			esac
		elif [ -z "$origin" ]; then
			case "$uri" in
			*/debian/) main=${main:-$uri} ;;
			*/debian-security/) sec=${sec:-$uri} ;;
			esac
		fi
	done
}

# The Debian repositories (Origin "Debian") of this machine's package
# lists, one "URI RELEASE COMPONENT" line each: what a private list needs
# to reach the same packages (or, with deb-src, their sources).
debian_repos() {
	# shellcheck disable=SC2016 # apt's $(FIELD) placeholders
	apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT) $(ORIGIN)' \
		'Created-By: Packages' 2>/dev/null | awk '$4 == "Debian" { print $1, $2, $3 }' | sort -u
}

apt_private() {	# apt_private DIR
	local a=$1
	mkdir -p "$a/lists/partial" "$a/archives/partial" "$a/etc"
	[ -f "$a/status" ] || : > "$a/status"
	# shellcheck disable=SC2034 # used by the caller
	APT_PRIVATE=(
		-o "Dir::State=$a"
		-o "Dir::State::Lists=$a/lists"
		-o "Dir::State::status=$a/status"
		-o "Dir::Cache=$a"
		-o "Dir::Cache::archives=$a/archives"
		-o "Dir::Cache::pkgcache="
		-o "Dir::Cache::srcpkgcache="
		-o "Dir::Etc::SourceList=$a/etc/sources.list"
		-o "Dir::Etc::SourceParts=/dev/null"
		-o "Debug::NoLocking=1"
		-o "Acquire::Languages=none"
		-o "APT::Get::List-Cleanup=0"
		-o "APT::Sandbox::User=root"
	)
}
