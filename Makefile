# SPDX-License-Identifier: GPL-2.0
#
# Top-level build of xpmem: kernel module, libxpmem, tools, selftests, and the
# QEMU test runner.  `make help` lists the targets.  Everything is written
# under $(B) (default build/); the source tree is never modified.
#
# Building and installing (`make`, `make lib`, `make install`) needs only a C
# compiler and, for the module, the target kernel's headers; it never runs
# apt.  The test targets (tests, check, demo, bench, host-tests, ...) first
# run `selftests/vm/deps.sh test`, which installs what the QEMU rig needs
# (XPMEM_SKIP_DEPS=1 skips that).

# ---------------------------------------------------------------- config ----

SHELL      := /bin/bash
B          ?= build
# The one place the version is written is dkms.conf (Kbuild reads it too).
VERSION    := $(shell sed -n 's/^PACKAGE_VERSION="\([^"]*\)"$$/\1/p' dkms.conf)
LIB_MAJOR  := 0
LIB_MINOR  ?= 1
PREFIX     ?= /usr/local
# Multiarch: LIBDIR=$(PREFIX)/lib/$$(gcc -print-multiarch) (as debian/rules does).
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
DKMSDIR    ?= /usr/src
DESTDIR    ?=

# Kernel build dir for `make module`: default is the newest installed one.
KDIR       ?= $(shell ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1)
KERNELS    ?= debian-6.1 debian-6.12 debug-6.12 bullseye-5.10 sid-7.2 arm64-6.12
LINUX_SRC_TAR ?= /usr/src/linux-source-6.12.tar.xz

# Standard variables are honoured: CC, CPPFLAGS, CFLAGS, LDFLAGS (e.g.
# Debian's hardening flags).  WERROR=0 drops -Werror (for packagers on
# compilers newer than ours).
CC         ?= cc
CFLAGS     ?= -O2 -g
CPPFLAGS   ?=
LDFLAGS    ?=
WERROR     ?= 1
# -D_GNU_SOURCE= defines it empty, so a source file that itself says
# `#define _GNU_SOURCE` (the kselftest convention) does not warn.
XCFLAGS    := -std=gnu11 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) \
	      -D_GNU_SOURCE= -DXPMEM_PKG_VERSION='"$(VERSION)"' -Iinclude -Ilib \
	      -DXPMEM_UAPI_LAYOUT_CHECKS
LIB_LIBS   ?= -luring -lpthread
TEST_LIBS  ?= -luring -lpthread
SAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer

# ---------------------------------------------------------------- sources ----

LIB_SRCS    := $(wildcard lib/*.c)
LIB_MAP     := $(wildcard lib/libxpmem.map)
comma       := ,
LIB_VSCRIPT := $(if $(LIB_MAP),-Wl$(comma)--version-script=$(LIB_MAP))
PC_INS      := $(wildcard lib/xpmem.pc.in lib/cray-xpmem.pc.in)
TEST_SRCS   := $(filter-out selftests/host_%.c,$(wildcard selftests/*.c))
# selftests/stress/: what the processes of xpmem_stress run (the fuzzer, the
# kill storm, the concurrency cases, fault injection), in files of their own
STRESS_SRCS := $(wildcard selftests/stress/*.c)
HOST_SRCS   := $(wildcard selftests/lib_*.c selftests/host_*.c)
TOOL_SRCS   := $(wildcard tools/*.c)
# tools/cli/, tools/bench/, tools/scale/: the parts of xpmem, xpmem-bench and
# xpmem-scale (tools/<name>.c is each one's command line)
CLI_SRCS    := $(wildcard tools/cli/*.c)
BENCH_SRCS  := $(wildcard tools/bench/*.c)
SCALE_SRCS  := $(wildcard tools/scale/*.c)

LIB_OBJS    := $(LIB_SRCS:lib/%.c=$(B)/lib/obj/%.o)
HLIB_OBJS   := $(LIB_SRCS:lib/%.c=$(B)/host/lib/%.o)
LIB_SONAME  := libxpmem.so.$(LIB_MAJOR)
LIB_REAL    := $(B)/lib/$(LIB_SONAME).$(LIB_MINOR)
LIB_A       := $(B)/lib/libxpmem.a
PC_FILES    := $(PC_INS:lib/%.pc.in=$(B)/lib/pkgconfig/%.pc)
TESTS       := $(TEST_SRCS:selftests/%.c=$(B)/selftests/%)
STRESS_OBJS := $(STRESS_SRCS:selftests/%.c=$(B)/selftests/%.o)
HOST_TESTS  := $(HOST_SRCS:selftests/%.c=$(B)/host/selftests/%)
TOOLS       := $(TOOL_SRCS:tools/%.c=$(B)/tools/%)
CLI_OBJS    := $(CLI_SRCS:tools/%.c=$(B)/tools/%.o)
BENCH_OBJS  := $(BENCH_SRCS:tools/%.c=$(B)/tools/%.o)
SCALE_OBJS  := $(SCALE_SRCS:tools/%.c=$(B)/tools/%.o)
KSFT        := $(B)/ksft/kselftest_harness.h $(B)/ksft/kselftest.h

# The .so/.a exist only once lib/ has sources.
ifneq ($(LIB_SRCS),)
LIB_TARGETS := $(LIB_REAL) $(B)/lib/$(LIB_SONAME) $(B)/lib/libxpmem.so $(LIB_A) $(PC_FILES)
endif

.DEFAULT_GOAL := all
FORCE:
.PHONY: FORCE all userspace lib tests tools module modules host-build host-tests check \
	demo bench bench-classic classic-lib-check deps deps-test arm64 sparse checkpatch w1 install install-lib install-tools \
	install-man install-module-conf install-dkms-src dkms-src dist uninstall clean \
	distclean help debug-kernel man-check pkg-check doc-check ucx-module \
	mpi-bench
.DELETE_ON_ERROR:
# Never delete these as make intermediates.
.SECONDARY: $(KSFT) $(LIB_OBJS) $(HLIB_OBJS)

# What users and packagers build: no test rig, no apt.
all: lib tools module

# Everything the test rig runs (selftests/vm/run.sh builds this).
userspace: lib tools tests host-build

# The library, tools and selftests cross-built for arm64 into $(B)/arm64
# (what selftests/vm/run.sh arm64-6.12 builds and boots).  The module for
# an arm64 kernel: make module KDIR=<arm64 tree> (kernel/build-module.sh
# cross-compiles for a tree configured for arm64).
ARM64_CROSS ?= aarch64-linux-gnu-
arm64:
	$(MAKE) B=$(B)/arm64 CC=$(ARM64_CROSS)gcc AR=$(ARM64_CROSS)ar MPICC= lib tools tests

help:
	@echo "make               library, tools and xpmem.ko (KDIR=...; needs the kernel's headers)"
	@echo "make lib tools     only the library (+ .pc files) and the tools"
	@echo "make install       PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) DESTDIR=$(DESTDIR): library, headers,"
	@echo "                   .pc files, tools, man pages (install-lib, -tools, -man separately)"
	@echo "make install-dkms-src   module sources + dkms.conf to DESTDIR$(DKMSDIR)/xpmem-$(VERSION)"
	@echo "make install-module-conf  $(SYSCONFDIR)/modules-load.d/xpmem.conf (commented out)"
	@echo "make dkms-src | dist    $(B)/xpmem-$(VERSION)/ (module sources) | $(B)/xpmem-$(VERSION).tar.xz"
	@echo "make check         host tests + QEMU runs on KERNELS='$(KERNELS)' [SUITES=words]"
	@echo "                   (also arm64-6.12, arm64-6.12-64k: make check KERNELS=arm64-6.12)"
	@echo "make arm64         library, tools and selftests cross-built for arm64 in $(B)/arm64"
	@echo "make demo          boot debian-6.1 and run the owner/attacher demo"
	@echo "make bench         xpmem-bench, then xpmem-scale, in the first of KERNELS (BENCH_ARGS=..., SCALE_ARGS=...)"
	@echo "make bench-classic CLASSIC=DIR   xpmem-bench -c and xpmem-scale against another libxpmem (DIR/include, DIR/lib/.libs)"
	@echo "make module        build xpmem.ko against KDIR=$(KDIR)"
	@echo "make w1|sparse|checkpatch   static checks of the module"
	@echo "make man-check | pkg-check  man pages; Debian packages (as root)"
	@echo "make ucx-module    build/pkg/libucx0-xpmem_*.deb: UCX's xpmem transport for the installed libucx0"
	@echo "make mpi-bench     xpmem-mpi-bench (MPI latency/bandwidth; built by make tools where mpicc exists)"
	@echo "make doc-check     references in docs and comments resolve (run by make check)"
	@echo "make debug-kernel  build/refresh the cached debug-6.12 kernel"
	@echo "selftests/vm/run.sh KERNEL [SUITE-FILTER]   one kernel, some suites"
	@echo "Variables: CC CPPFLAGS CFLAGS LDFLAGS WERROR=0 PREFIX LIBDIR MANDIR DESTDIR"

# Dependencies.  deps-test is an order-only prerequisite of everything that
# needs the test rig (kselftest header, QEMU, kernel images, sparse): it runs
# once per make invocation and installs what is missing when run as root
# (else prints the apt-get line and fails).
deps:
	@selftests/vm/deps.sh all

# With an arm64 kernel in KERNELS, the cross compiler, qemu-system-arm and
# the arm64 libraries too (deps.sh arm64).
deps-test:
	@[ -n "$(XPMEM_SKIP_DEPS)" ] || selftests/vm/deps.sh $(if $(filter arm64-%,$(KERNELS)),arm64,test)

# ---------------------------------------------------------------- module ----
# Built in a private copy under $(B)/mod/<kernel release> (kernel/build-module.sh)
# so that builds for several kernels do not clobber each other.

KREL = $(notdir $(patsubst %/build,%,$(KDIR)))
MOD_OUT = $(B)/mod/$(if $(KREL),$(KREL),default)

module modules:
	@if [ -z "$(wildcard kernel/*.c)" ]; then \
		echo "module: kernel/ has no sources yet, skipping xpmem.ko"; \
	elif [ -z "$(KDIR)" ]; then \
		echo "module: no kernel headers found in /lib/modules/*/build." >&2; \
		echo "  Install them (apt-get install linux-headers-$$(uname -r)) or pass KDIR=;" >&2; \
		echo "  'make lib tools' builds everything but the module." >&2; exit 1; \
	else \
		kernel/build-module.sh "$(KDIR)" "$(MOD_OUT)" $(KBUILD_ARGS) && \
		cp -p "$(MOD_OUT)/xpmem.ko" $(B)/xpmem.ko && \
		echo "module: $(B)/xpmem.ko (for $(KREL))"; \
	fi

# W=1 and sparse builds start from scratch (so every file is compiled and
# checked) and fail on any warning in the output.
w1 sparse: | deps-test
	@rm -rf $(B)/mod/$@ && mkdir -p $(B)/mod
	@set -o pipefail; kernel/build-module.sh "$(KDIR)" "$(B)/mod/$@" \
		$(if $(filter sparse,$@),C=2 CHECK=sparse,W=1) 2>&1 | tee $(B)/mod/$@.log
	@if grep -E '(warning|error):' $(B)/mod/$@.log; then \
		echo "$@: warnings above (log $(B)/mod/$@.log)" >&2; exit 1; fi
	@echo "$@: clean"

CHECKPATCH_DIR := $(B)/checkpatch
$(CHECKPATCH_DIR)/checkpatch.pl: | deps-test
$(CHECKPATCH_DIR)/checkpatch.pl: $(LINUX_SRC_TAR)
	@mkdir -p $(CHECKPATCH_DIR)
	tar -C $(CHECKPATCH_DIR) --strip-components=1 -xf $(LINUX_SRC_TAR) \
		linux-source-6.12/scripts/checkpatch.pl \
		linux-source-6.12/scripts/spelling.txt \
		linux-source-6.12/scripts/const_structs.checkpatch
	mv $(CHECKPATCH_DIR)/scripts/* $(CHECKPATCH_DIR)/ && rmdir $(CHECKPATCH_DIR)/scripts
	touch $@

checkpatch: $(CHECKPATCH_DIR)/checkpatch.pl
	@files="$(wildcard kernel/*.c kernel/*.h include/*.h)"; \
	if [ -z "$$files" ]; then echo "checkpatch: nothing to check"; exit 0; fi; \
	$(CHECKPATCH_DIR)/checkpatch.pl --strict --no-tree --show-types --terse -f $$files

debug-kernel: | deps-test
	selftests/vm/build-debug-kernel.sh $(B)/debug-6.12

# ---------------------------------------------------------------- kselftest --

# Both headers in one pass over the (large) tarball.
$(LINUX_SRC_TAR): | deps-test
$(KSFT) &: $(LINUX_SRC_TAR)
	@mkdir -p $(B)/ksft
	tar -C $(B)/ksft --strip-components=4 -xf $(LINUX_SRC_TAR) \
		linux-source-6.12/tools/testing/selftests/kselftest_harness.h \
		linux-source-6.12/tools/testing/selftests/kselftest.h
	@touch $(KSFT)

# ---------------------------------------------------------------- library ----

lib: $(LIB_TARGETS)

$(B)/lib/obj/%.o: lib/%.c
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(LIB_REAL): $(LIB_OBJS) $(LIB_MAP)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(LIB_SONAME) \
		$(LIB_VSCRIPT) -Wl,-z,defs \
		-o $@ $(LIB_OBJS) $(LIB_LIBS)

$(B)/lib/$(LIB_SONAME) $(B)/lib/libxpmem.so: $(LIB_REAL)
	ln -sf $(notdir $<) $@

$(LIB_A): $(LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

# The .pc files depend on the values substituted into them, so that
# `make install PREFIX=/usr` after a plain `make` regenerates them.  Paths
# under PREFIX are written relative to ${prefix}, so the files stay right
# when the tree is moved (pkg-config --define-prefix).
pc_rel = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
PC_VARS := $(PREFIX)|$(LIBDIR)|$(INCLUDEDIR)|$(VERSION)
$(B)/lib/pkgconfig/.vars: FORCE
	@mkdir -p $(@D)
	@echo '$(PC_VARS)' | cmp -s - $@ || echo '$(PC_VARS)' > $@

$(B)/lib/pkgconfig/%.pc: lib/%.pc.in $(B)/lib/pkgconfig/.vars
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|g' \
	    -e 's|@INCLUDEDIR@|$(call pc_rel,$(INCLUDEDIR))|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# ---------------------------------------------------------------- selftests --
# One selftests/*.c = one statically linked binary (runs in a bare
# initramfs); xpmem_stress also links the objects of selftests/stress/.

tests: $(TESTS)

$(B)/selftests/%: selftests/%.c $(KSFT) $(LIB_TARGETS)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) -isystem $(B)/ksft $(CPPFLAGS) $(CFLAGS) -MMD -MP -MF $(@D)/.$*.d -static \
		-o $@ $< $(filter %.o,$^) $(if $(LIB_SRCS),$(LIB_A)) $(TEST_LIBS)

$(B)/selftests/xpmem_stress: $(STRESS_OBJS)

$(B)/selftests/stress/%.o: selftests/stress/%.c
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# The tools are what users run: linked against the shared library, like
# any program built against the installed one (the VM rig copies the
# libraries they need into its initramfs).
tools: $(TOOLS) mpi-bench

# xpmem-mpi-bench (tools/mpi/): MPI transfers between two ranks, built with
# $(MPICC) where it exists (Debian: libopenmpi-dev) and skipped elsewhere;
# the arm64 cross build sets MPICC empty.
MPICC     ?= mpicc
MPI_BENCH := $(B)/tools/xpmem-mpi-bench
mpi-bench:
	@if [ -n "$(MPICC)" ] && command -v $(MPICC) >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory $(MPI_BENCH); \
	else echo "mpi-bench: no $(if $(MPICC),$(MPICC),MPICC) here, xpmem-mpi-bench not built"; fi

$(MPI_BENCH): tools/mpi/xpmem-mpi-bench.c
	@mkdir -p $(@D)
	$(MPICC) -std=c11 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -O2 $(CPPFLAGS) $(CFLAGS) \
		$(LDFLAGS) -o $@ $<

$(B)/tools/%: tools/%.c $(LIB_TARGETS)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -MMD -MP -MF $(@D)/.$*.d \
		-o $@ $< $(filter %.o,$^) -L$(B)/lib -lxpmem $(LIB_LIBS)

$(B)/tools/xpmem: $(CLI_OBJS)
$(B)/tools/xpmem-bench: $(BENCH_OBJS)
$(B)/tools/xpmem-scale: $(SCALE_OBJS)

$(B)/tools/%.o: tools/%.c
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# xpmem-bench's -c mode and xpmem-scale's ranks mode linked against another
# implementation's libxpmem (CLASSIC=OUTDIR of a build that left
# include/xpmem.h and lib/.libs/libxpmem.a there, e.g. openucx/xpmem's),
# statically, for a comparison in one VM boot (selftests/vm/run.sh --bench,
# BENCH_CLASSIC).  Only files that make classic calls alone are in them
# (bench.h; xpmem-scale makes none other).
CLASSIC_BENCH_SRCS := tools/xpmem-bench.c $(addprefix tools/bench/,util.c metrics.c output.c cycle.c)
CLASSIC_BENCH      := $(B)/classic/xpmem-bench-classic
CLASSIC_SCALE      := $(B)/classic/xpmem-scale-classic
CLASSIC_LIB         = $(CLASSIC)/lib/.libs/libxpmem.a

bench-classic: $(CLASSIC_BENCH) $(CLASSIC_SCALE)

classic-lib-check:
	@[ -f "$(CLASSIC)/include/xpmem.h" ] && [ -f "$(CLASSIC_LIB)" ] || \
		{ echo "bench-classic: CLASSIC=<dir with include/xpmem.h and lib/.libs/libxpmem.a>" >&2; exit 1; }

$(CLASSIC_BENCH): $(CLASSIC_BENCH_SRCS) tools/bench/bench.h classic-lib-check FORCE
	@mkdir -p $(@D)
	$(CC) -I$(CLASSIC)/include -DXPMEM_BENCH_CLASSIC $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) \
		$(LDFLAGS) -static -o $@ $(CLASSIC_BENCH_SRCS) $(CLASSIC_LIB)

$(CLASSIC_SCALE): tools/xpmem-scale.c $(SCALE_SRCS) tools/scale/scale.h classic-lib-check FORCE
	@mkdir -p $(@D)
	$(CC) -I$(CLASSIC)/include $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) \
		$(LDFLAGS) -static -o $@ tools/xpmem-scale.c $(SCALE_SRCS) $(CLASSIC_LIB) -lpthread

# ---------------------------------------------------------------- host tests -
# lib_* and host_* suites, dynamically linked, ASan+UBSan, library objects
# compiled with the same sanitizers; run on the host with XPMEM_BACKEND=shm.

host-build: $(HOST_TESTS)

$(B)/host/lib/%.o: lib/%.c
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CPPFLAGS) $(CFLAGS) $(SAN_FLAGS) -fPIC -MMD -MP -c -o $@ $<

$(B)/host/selftests/%: selftests/%.c $(KSFT) $(HLIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) -isystem $(B)/ksft $(CPPFLAGS) $(CFLAGS) $(SAN_FLAGS) -MMD -MP -MF $(@D)/.$*.d \
		-o $@ $< $(HLIB_OBJS) $(TEST_LIBS)

host-tests: $(LIB_TARGETS) $(HOST_TESTS) mpi-bench | deps-test
	@selftests/vm/run-host-tests.sh $(B)/host $(HOST_TESTS)

# ---------------------------------------------------------------- QEMU -------

# SUITES="xpmem_core lib_abi" restricts the VM suites (names containing a word).
check: userspace | deps-test
	@SUITES="$(SUITES)" selftests/vm/check.sh $(KERNELS)

demo: lib tools tests | deps-test
	@selftests/vm/run.sh --demo debian-6.1

# First-touch and copy costs, side by side in one VM run (ratios only);
# then the costs that grow with the number of ranks (xpmem-scale; SCALE_BASE=
# <git rev> runs the module of that revision first in the same boot).
bench: lib tools tests | deps-test
	@selftests/vm/run.sh --bench $(firstword $(KERNELS))
	@selftests/vm/run.sh --scale $(firstword $(KERNELS))

# ---------------------------------------------------------------- install ----

MAN_PAGES := $(wildcard man/*.[0-9])

install: install-lib install-tools install-man

install-lib: lib
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 0644 $(LIB_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_REAL)) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libxpmem.so
	install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 0644 include/xpmem.h include/xpmem_uapi.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 0644 $(PC_FILES) $(DESTDIR)$(LIBDIR)/pkgconfig/
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig || true; \
	else echo "install-lib: run ldconfig (as root) if $(LIBDIR) is in the loader's path"; fi

install-tools: tools
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(TOOLS) $(DESTDIR)$(BINDIR)/

# Section 1 pages for the tools, 3 for the library, 7 for the overview;
# a page whose body is one `.so` line is a link.
install-man:
	@set -e; for m in $(MAN_PAGES); do \
		sec=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$sec; \
		install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$sec/; done

install-module-conf:
	install -d $(DESTDIR)$(SYSCONFDIR)/modules-load.d
	install -m 0644 kernel/xpmem.modules-load.conf $(DESTDIR)$(SYSCONFDIR)/modules-load.d/xpmem.conf

# The module's sources as DKMS wants them: Kbuild, dkms.conf, kernel/ and
# the uapi header, nothing else (no build tree, no tests).
DKMS_FILES := Kbuild dkms.conf kernel/build-module.sh $(wildcard kernel/*.c kernel/*.h) \
	include/xpmem_uapi.h

dkms-src:
	@rm -rf $(B)/xpmem-$(VERSION) && mkdir -p $(B)/xpmem-$(VERSION)
	cp --parents -p $(DKMS_FILES) $(B)/xpmem-$(VERSION)/
	@echo "dkms-src: $(B)/xpmem-$(VERSION) (cp -r it to $(DKMSDIR)/, then dkms install xpmem/$(VERSION))"

install-dkms-src:
	install -d $(DESTDIR)$(DKMSDIR)/xpmem-$(VERSION)
	cp --parents -p $(DKMS_FILES) $(DESTDIR)$(DKMSDIR)/xpmem-$(VERSION)/

# A release tarball of what git tracks (needs a git checkout).
dist:
	@mkdir -p $(B)
	git archive --format=tar --prefix=xpmem-$(VERSION)/ HEAD | xz -9 > $(B)/xpmem-$(VERSION).tar.xz
	@echo "dist: $(B)/xpmem-$(VERSION).tar.xz"

man-check:
	@sh man/check.sh

# References in the docs and comments resolve (selftests/doc-check.py).
doc-check:
	@python3 selftests/doc-check.py

# Debian packages: build, lintian, scratch-root install, dkms build (root).
pkg-check: | deps-test
	@selftests/pkg/check.sh

# UCX's xpmem transport for the installed libucx0 (debian/ucx/build.sh):
# $(B)/pkg/libucx0-xpmem_<libucx0 version>+xpmem<version>_<arch>.deb.
ucx-module:
	@debian/ucx/build.sh -o $(B)/pkg

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(notdir $(LIB_REAL)) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME) \
		$(DESTDIR)$(LIBDIR)/libxpmem.so $(DESTDIR)$(LIBDIR)/libxpmem.a \
		$(DESTDIR)$(INCLUDEDIR)/xpmem.h $(DESTDIR)$(INCLUDEDIR)/xpmem_uapi.h \
		$(DESTDIR)$(LIBDIR)/pkgconfig/xpmem.pc $(DESTDIR)$(LIBDIR)/pkgconfig/cray-xpmem.pc \
		$(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(TOOLS))) \
		$(foreach m,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))

# ---------------------------------------------------------------- clean ------
# `clean` keeps the cached debug kernel (minutes to rebuild); `distclean`
# removes everything.

clean:
	rm -rf $(B)/lib $(B)/selftests $(B)/tools $(B)/host $(B)/mod $(B)/qemu $(B)/arm64 \
		$(B)/ksft $(B)/checkpatch $(B)/xpmem.ko $(B)/results

distclean:
	rm -rf $(B)

-include $(wildcard $(B)/lib/obj/*.d $(B)/host/lib/*.d $(B)/selftests/.*.d $(B)/selftests/stress/*.d \
	$(B)/tools/.*.d $(B)/tools/*/*.d $(B)/host/selftests/.*.d)
