# Usage: . selftests/vm/initramfs.sh   (sourced by run.sh; then
#        pack_initramfs ROOT IMAGE)
#
# The test VM's busybox initramfs: /init (init.sh, with init-modes.sh and
# the profile scripts beside it), xpmem.ko (and xpmem-base.ko for
# SCALE_BASE; xpmem-classic.ko, xpmem-bench-classic and xpmem-scale-classic for
# BENCH_CLASSIC), the selftests and tools of this build with the shared
# libraries they need, /etc/passwd and /etc/group with the test users,
# /etc/xpmem-run.conf (the settings) and /etc/xpmem-suites.txt (the suite
# list, see suite_list).  Uses run.sh's settings: UB (userspace build
# dir), KARCH, cross, mode, kname, filter, stress, stress_timeout,
# suite_timeout, fallback_pass, have_mod, moddir, scale_base, result_dev,
# mpi_bench_args, bench_args, bench_profile, scale_args, scale_churn,
# scale_profile, bench_classic, bench_scale_args, attach_profile, classic_first,
# B; and die().
# shellcheck shell=bash disable=SC2154 # run.sh's settings

# copy_shlibs ROOT FILE: the dynamic loader and the libraries ldd resolves
# for FILE (nothing for a static binary), each at the same path in the
# guest, where the guest's loader finds them without an ld.so.cache; a
# library of this build (libxpmem.so.0, resolved in $UB/lib) goes to /lib
# by its name.
copy_shlibs() {
	local root=$1 bdir lddout line name path dest
	if [ "$KARCH" = arm64 ]; then
		copy_shlibs_cross "$1" "$2"
		return
	fi
	bdir=$(realpath "$UB")
	lddout=$(LD_LIBRARY_PATH="$bdir/lib" ldd "$2" 2>&1) || return 0
	while IFS= read -r line; do
		line=${line#"${line%%[![:space:]]*}"}
		case "$line" in
		*"=> not found"*) die "$2 needs ${line%% =>*}, which ldd does not find" ;;
		*" => /"*) name=${line%% =>*} path=${line#*=> } ;;
		/*) name=${line%% (*} path=$line ;;
		*) continue ;;	# linux-vdso.so.1 (no file), "statically linked"
		esac
		path=${path% (0x*}
		case "$(realpath "$path")" in
		"$bdir"/*) dest=/lib/${name##*/} ;;
		*) dest=$path ;;
		esac
		[ -e "$root$dest" ] && continue
		mkdir -p "$root$(dirname "$dest")"
		cp -L "$path" "$root$dest"
	done <<< "$lddout"
	return 0
}

# find_cross_lib NAME: an arm64 library, from this build or the cross
# toolchain (libc6-arm64-cross) or multiarch (liburing2:arm64).
find_cross_lib() {
	local d
	for d in "$(realpath "$UB")/lib" /usr/aarch64-linux-gnu/lib \
		/usr/lib/aarch64-linux-gnu /lib/aarch64-linux-gnu; do
		[ -e "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	return 1
}

# copy_shlibs_cross ROOT FILE: what copy_shlibs does, for an arm64 binary
# that ldd cannot run: its program interpreter (at that path) and its
# DT_NEEDED libraries, recursively, all in /lib (the loader's default path).
copy_shlibs_cross() {
	local root=$1 interp lib p
	interp=$("${cross}readelf" -lW "$2" |
		sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p')
	if [ -n "$interp" ] && [ ! -e "$root$interp" ]; then
		p=$(find_cross_lib "${interp##*/}") || die "$2: no arm64 ${interp##*/}"
		mkdir -p "$root$(dirname "$interp")"
		cp -L "$p" "$root$interp"
	fi
	for lib in $("${cross}readelf" -dW "$2" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$root/lib/$lib" ] && continue
		p=$(find_cross_lib "$lib") || die "$2 needs $lib, which is not found for arm64"
		cp -L "$p" "$root/lib/$lib"
		copy_shlibs_cross "$root" "$p"
	done
	return 0
}

# arm64_busybox: a static arm64 busybox, from Debian's busybox-static:arm64
# (needs the arm64 architecture in dpkg: deps.sh arm64), fetched once into
# $UB/busybox/.
arm64_busybox() {
	local d=$UB/busybox deb
	if [ ! -x "$d/busybox" ]; then
		rm -rf "$d/tmp" && mkdir -p "$d/tmp"
		(cd "$d/tmp" && apt-get download -q -o APT::Sandbox::User=root \
			busybox-static:arm64) >&2 ||
			die "apt-get download busybox-static:arm64 failed (selftests/vm/deps.sh arm64)"
		deb=$(ls "$d"/tmp/busybox-static_*_arm64.deb)
		dpkg-deb -x "$deb" "$d/tmp/root"
		[ -f "$d/tmp/root/bin/busybox" ] || die "$deb holds no bin/busybox"
		mv "$d/tmp/root/bin/busybox" "$d/busybox"
		rm -rf "$d/tmp"
	fi
	echo "$d/busybox"
}

# matches NAME: true if the filter is empty or NAME contains one of its
# words.
matches() {
	[ -z "$filter" ] && return 0
	local w
	for w in $filter; do case "$1" in *"$w"*) return 0 ;; esac; done
	return 1
}

# suite_list DIR: the suite runs of check mode, from the suite binaries in
# DIR (the initramfs's /selftests), in the order the guest runs them, one
# line each: "PASS NAME TIMEOUT [ENV-ARG...]" (PASS kernel: with the
# module loaded; fallback: after rmmod, on the shm fallback; ENV-ARGs go
# to env(1) before the suite).  The rules:
#   - kernel pass: the xpmem_* suites, then the lib_* suites, with
#     XPMEM_BACKEND=kernel;
#   - xpmem_stress only if its mode (stress) is not off, with its own
#     timeout, XPMEM_STRESS=mode and the XPMEM_STRESS_* settings;
#   - fallback pass (if fallback_pass=1): the lib_* suites, XPMEM_BACKEND
#     unset;
#   - only names that match the filter; every other suite gets
#     suite_timeout seconds.
suite_list() {
	local dir=$1 n
	local -a names
	[ "$mode" = check ] || return 0
	mapfile -t names < <(find "$dir" -maxdepth 1 -type f -perm -u+x -printf '%f\n' |
		LC_ALL=C sort)
	echo "# PASS NAME TIMEOUT [ENV-ARG...] (written by selftests/vm/run.sh)"
	for n in ${names[@]+"${names[@]}"}; do
		case "$n" in xpmem_*) ;; *) continue ;; esac
		matches "$n" || continue
		if [ "$n" = xpmem_stress ]; then
			[ "$stress" = off ] ||
				echo "kernel $n $stress_timeout XPMEM_BACKEND=kernel XPMEM_STRESS=$stress${stress_env:+ $stress_env}"
		else
			echo "kernel $n $suite_timeout XPMEM_BACKEND=kernel"
		fi
	done
	for n in ${names[@]+"${names[@]}"}; do
		case "$n" in lib_*) matches "$n" && echo "kernel $n $suite_timeout XPMEM_BACKEND=kernel" ;; esac
	done
	[ "$fallback_pass" = 1 ] || return 0
	for n in ${names[@]+"${names[@]}"}; do
		case "$n" in lib_*) matches "$n" && echo "fallback $n $suite_timeout -u XPMEM_BACKEND" ;; esac
	done
	return 0
}

# stress_settings: the XPMEM_STRESS_* variables of the environment (SEED,
# ONLY, FUZZ_OPS, ...; XPMEM_STRESS_STOCK is run.sh's own) as one word
# list, each value checked.
stress_settings() {
	local k v words=
	while IFS='=' read -r k v; do
		case "$k" in XPMEM_STRESS_STOCK) continue ;; esac
		[[ "$v" =~ ^[A-Za-z0-9_.,:+-]*$ ]] || die "$k: only [A-Za-z0-9_.,:+-] allowed"
		words="$words $k=$v"
	done < <(env | grep '^XPMEM_STRESS_' || true)
	echo "${words# }"
}

# The installed Debian packages whose files the --mpi guest gets: Open MPI
# as Debian's openmpi-bin runs it and UCX with ucx_info; the libraries
# their programs and plugins load come with them (copy_shlibs).
MPI_PKGS="openmpi-bin openmpi-common libopenmpi3 libpmix2 libucx0 ucx-utils libhwloc15"

# is_elf FILE: FILE starts with the ELF magic.
is_elf() {
	[ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]
}

# mpi_payload ROOT: MPI_PKGS' files (not their documentation) at their
# paths, each ELF file's libraries, libucx0-xpmem (built by
# debian/ucx/build.sh, unpacked) and /tools/xpmem-mpi-bench.
mpi_payload() {
	local root=$1 p f deb
	[ "$KARCH" = x86_64 ] || die "--mpi: x86_64 kernels only"
	[ -x "$UB/tools/xpmem-mpi-bench" ] ||
		die "$UB/tools/xpmem-mpi-bench missing (make mpi-bench; needs mpicc: selftests/vm/deps.sh)"
	for p in $MPI_PKGS; do
		[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" = "ii " ] ||
			die "--mpi: $p is not installed (selftests/vm/deps.sh test)"
		while IFS= read -r f; do
			case "$f" in /usr/share/doc/* | /usr/share/man/* | /usr/share/lintian/*) continue ;; esac
			[ -f "$f" ] || [ -L "$f" ] || continue
			mkdir -p "$root$(dirname "$f")"
			cp -P "$f" "$root$f"
			if [ ! -L "$f" ] && is_elf "$f"; then copy_shlibs "$root" "$f"; fi
		done < <(dpkg -L "$p")
	done
	deb=$(debian/ucx/build.sh -o "$B/pkg") || die "--mpi: debian/ucx/build.sh failed"
	dpkg-deb -x "$deb" "$root"
	cp "$UB/tools/xpmem-mpi-bench" "$root/tools/"
	copy_shlibs "$root" "$UB/tools/xpmem-mpi-bench"
}

# pack_initramfs ROOT IMAGE: fill ROOT (emptied first) and pack it into
# IMAGE (gzip'd newc cpio); ROOT/etc/xpmem-suites.txt is the suite list.
pack_initramfs() {
	local root=$1 image=$2 c d n vm=selftests/vm stress_env
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,dev,etc,proc,sys,tmp,selftests,tools,lib}
	if [ "$KARCH" = arm64 ]; then
		cp "$(arm64_busybox)" "$root/bin/busybox"
	else
		cp /bin/busybox "$root/bin/busybox"
	fi
	cp $vm/init.sh "$root/init"
	cp $vm/init-modes.sh $vm/init-mpi.sh $vm/trace-lib.sh $vm/fault-profile.sh $vm/inval-profile.sh \
		$vm/attach-profile.sh "$root/"
	chmod 0755 "$root/init" "$root/fault-profile.sh" "$root/inval-profile.sh" \
		"$root/attach-profile.sh"
	mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
	[ "$have_mod" = 1 ] && cp "$moddir/xpmem.ko" "$root/xpmem.ko"
	[ -n "$scale_base" ] && cp "$moddir.base/xpmem.ko" "$root/xpmem-base.ko"
	if [ -n "$bench_classic" ]; then
		cp "$B/classic/$kname/kernel/xpmem.ko" "$root/xpmem-classic.ko"
		cp "$B/classic/xpmem-bench-classic" "$B/classic/xpmem-scale-classic" "$root/"
	fi
	# Only binaries whose source still exists (no stale suites from old
	# builds); every one must be built.
	for c in selftests/*.c tools/*.c; do
		[ -f "$c" ] || continue
		case "$c" in selftests/host_*) continue ;; esac	# host-only suites
		d=${c%%/*} n=$(basename "$c" .c)
		[ -x "$UB/$d/$n" ] || die "$UB/$d/$n missing: run make first"
		cp "$UB/$d/$n" "$root/$d/"
		if [ "$d" = tools ]; then copy_shlibs "$root" "$UB/$d/$n"; fi
	done
	cp -P "$UB"/lib/libxpmem.so* "$root/lib/" 2>/dev/null || true
	[ "$mode" != mpi ] || mpi_payload "$root"
	cat > "$root/etc/passwd" <<'EOP'
root:x:0:0:root:/tmp:/bin/sh
alice:x:1000:1000:test user:/tmp:/bin/sh
bob:x:1001:1001:test user:/tmp:/bin/sh
carol:x:1002:1002:test user:/tmp:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOP
	cat > "$root/etc/group" <<'EOG'
root:x:0:
alice:x:1000:
bob:x:1001:
carol:x:1002:
xpmemtest:x:1500:alice,bob
nogroup:x:65534:
EOG
	stress_env=$(stress_settings) || exit 1
	suite_list "$root/selftests" > "$root/etc/xpmem-suites.txt"
	{
		echo "MODE=$mode"
		echo "KERNEL_NAME='$kname'"
		echo "SUITE_FILTER='$filter'"
		echo "BENCH_ARGS='$bench_args'"
		echo "MPI_BENCH_ARGS='$mpi_bench_args'"
		echo "BENCH_PROFILE='$bench_profile'"
		echo "SCALE_ARGS='$scale_args'"
		echo "SCALE_CHURN=$scale_churn"
		echo "SCALE_PROFILE=$scale_profile"
		echo "BENCH_CLASSIC=$([ -n "$bench_classic" ] && echo 1 || echo 0)"
		echo "ATTACH_PROFILE=$attach_profile"
		echo "CLASSIC_FIRST=$classic_first"
		echo "BENCH_SCALE_ARGS='$bench_scale_args'"
		echo "RESULT_DEV=$result_dev"
	} > "$root/etc/xpmem-run.conf"
	(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$image"
}
