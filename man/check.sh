#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1
#
# man/check.sh - check every man page in man/ (run as `sh man/check.sh`
# from the repository root, or from anywhere: it finds its own directory).
#
# Pages are copied into a temporary man1/man3/man7 tree, laid out as
# `make install-man` installs them, so that `.so man3/x.3` links resolve.
# For each page:
#   - a link page (".so manN/target.N") must point at a page of man/ that
#     exists and is not itself a link, and its own name must be one of the
#     names in the target's NAME section;
#   - `man --warnings -l` must print nothing on stderr, and neither may
#     `groff -man -ww -z` (every groff warning);
#   - lexgrog(1) must parse its NAME section, and the file's name must be
#     one of the names there (that is how man(1) and apropos find it);
#   - a real page's .TH section must match its file name suffix;
#   - every xpmem page it cross-references (.BR xpmem_get (3), ...) must
#     exist in man/.
# Prints one line per problem, naming the page, and exits 1 if there was
# any (also when a tool is missing); prints a summary and exits 0 if not.

LC_ALL=C.UTF-8
MANROFFSEQ=
MANWIDTH=80
export LC_ALL MANROFFSEQ MANWIDTH

me=check.sh
dir=$(cd "$(dirname "$0")" && pwd) || exit 1

missing=
for tool in man lexgrog groff; do
	command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
	echo "$me: missing tool(s):$missing (install man-db and groff)" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xpmem-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

problems=0
pages=0
links=0

# problem PAGE MESSAGE...: report one problem of man/PAGE.
problem() {
	page=$1
	shift
	echo "$me: man/$page: $*" >&2
	problems=$((problems + 1))
}

# First line of a file that is not a roff comment.
first_line() {
	sed -n '/^\.\\"/d; /^'"'"'\\"/d; p; q' "$1"
}

# Lay the pages out as installed.
for f in "$dir"/*.[0-9]; do
	[ -f "$f" ] || continue
	base=${f##*/}
	sec=${base##*.}
	mkdir -p "$tmp/man$sec" && cp "$f" "$tmp/man$sec/$base" || exit 1
done

cd "$tmp" || exit 1
for f in man*/*; do
	[ -f "$f" ] || continue
	base=${f##*/}
	name=${base%.*}
	sec=${base##*.}
	pages=$((pages + 1))
	first=$(first_line "$f")

	case $first in
	.so\ *)
		links=$((links + 1))
		target=${first#.so }
		if [ "$(grep -c . "$f")" -ne 1 ]; then
			problem "$base" "a link page must hold only its .so line"
		fi
		case $target in
		man[0-9]/*.[0-9])
			tbase=${target##*/}
			if [ "${target%%/*}" != "man${tbase##*.}" ]; then
				problem "$base" ".so $target: directory does not match the section"
			elif [ ! -f "$dir/$tbase" ]; then
				problem "$base" ".so $target: man/$tbase does not exist"
			else
				case $(first_line "$dir/$tbase") in
				.so\ *) problem "$base" ".so $target: the target is a link page too" ;;
				esac
			fi
			;;
		*)
			problem "$base" ".so $target: want .so manN/page.N"
			;;
		esac
		;;
	*)
		th=$(awk '/^\.TH[ \t]/ { print $3; exit }' "$f")
		if [ -z "$th" ]; then
			problem "$base" "no .TH line"
		elif [ "$th" != "$sec" ]; then
			problem "$base" ".TH section $th, file suffix .$sec"
		fi
		;;
	esac

	err=$( { man --warnings -E UTF-8 -l -Tutf8 -Z "$f" >/dev/null; } 2>&1 )
	if [ -n "$err" ]; then
		problem "$base" "man --warnings:"
		printf '%s\n' "$err" | sed 's/^/    /' >&2
	fi
	err=$( { groff -k -man -ww -z -Tutf8 "$f"; } 2>&1 )
	if [ -n "$err" ]; then
		problem "$base" "groff -man -ww -z:"
		printf '%s\n' "$err" | sed 's/^/    /' >&2
	fi

	if ! names=$(lexgrog "$f" 2>&1) ||
	   printf '%s\n' "$names" | grep -q 'parse failed'; then
		problem "$base" "lexgrog cannot parse the NAME section: $names"
	elif ! printf '%s\n' "$names" | grep -qF ": \"$name - "; then
		problem "$base" "'$name' is not a name in the NAME section:"
		printf '%s\n' "$names" | sed 's/^/    /' >&2
	fi

	# Cross-references to this project's pages: .BR xpmem_get (3) etc.
	refs=$(sed -n 's/^\.[BI]R  *\(xpmem[A-Za-z0-9_\\-]*\)  *(\([0-9]\)).*/\1.\2/p' "$f" |
	       sed 's/\\-/-/g' | sort -u)
	for ref in $refs; do
		[ -f "$dir/$ref" ] || problem "$base" "refers to ${ref%.*}(${ref##*.}), but man/$ref does not exist"
	done
done

if [ "$pages" -eq 0 ]; then
	echo "$me: no pages in $dir" >&2
	exit 1
fi
if [ "$problems" -ne 0 ]; then
	echo "$me: $problems problem(s) in $pages pages" >&2
	exit 1
fi
echo "$me: $pages pages ($links links) OK"
exit 0
