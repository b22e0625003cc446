# SPDX-License-Identifier: GPL-2.0
#
# Top-level build of xpmem: kernel module, libxpmem, tools, selftests, and the
# QEMU test runner.  `make help` lists the targets.  Everything is written
# under $(B) (default build/); the source tree is never modified.

# ---------------------------------------------------------------- config ----

SHELL      := /bin/bash
B          ?= build
VERSION    ?= 0.1.0
LIB_MAJOR  := 0
LIB_MINOR  ?= 1
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
DESTDIR    ?=

# Kernel build dir for `make module`: default is the newest installed one.
KDIR       ?= $(shell ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1)
KERNELS    ?= debian-6.1 debian-6.12 debug-6.12
LINUX_SRC_TAR ?= /usr/src/linux-source-6.12.tar.xz

CC         ?= cc
CFLAGS     ?= -O2 -g
# -D_GNU_SOURCE= defines it empty, so a source file that itself says
# `#define _GNU_SOURCE` (the kselftest convention) does not warn.
XCFLAGS    := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE= -Iinclude -Ilib
LIB_LIBS   ?= -lpthread
TEST_LIBS  ?= -luring -lpthread
SAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer

# Dependencies: selftests/vm/deps.sh installs missing Debian packages when run as
# root, else prints the apt-get line and fails.  Checked once per top-level
# make invocation (not for clean/help); XPMEM_SKIP_DEPS=1 skips it.
ifneq ($(filter-out clean distclean help,$(or $(MAKECMDGOALS),all)),)
ifeq ($(XPMEM_SKIP_DEPS)$(XPMEM_DEPS_CHECKED),)
ifneq ($(shell selftests/vm/deps.sh >&2 && echo ok),ok)
$(error missing dependencies (see above); run selftests/vm/deps.sh as root)
endif
export XPMEM_DEPS_CHECKED := 1
endif
endif

# ---------------------------------------------------------------- sources ----

LIB_SRCS    := $(wildcard lib/*.c)
LIB_MAP     := $(wildcard lib/libxpmem.map)
comma       := ,
LIB_VSCRIPT := $(if $(LIB_MAP),-Wl$(comma)--version-script=$(LIB_MAP))
PC_INS      := $(wildcard lib/xpmem.pc.in lib/cray-xpmem.pc.in)
TEST_SRCS   := $(filter-out selftests/host_%.c,$(wildcard selftests/*.c))
HOST_SRCS   := $(wildcard selftests/lib_*.c selftests/host_*.c)
TOOL_SRCS   := $(wildcard tools/*.c)

LIB_OBJS    := $(LIB_SRCS:lib/%.c=$(B)/lib/obj/%.o)
HLIB_OBJS   := $(LIB_SRCS:lib/%.c=$(B)/host/lib/%.o)
LIB_SONAME  := libxpmem.so.$(LIB_MAJOR)
LIB_REAL    := $(B)/lib/$(LIB_SONAME).$(LIB_MINOR)
LIB_A       := $(B)/lib/libxpmem.a
PC_FILES    := $(PC_INS:lib/%.pc.in=$(B)/lib/pkgconfig/%.pc)
TESTS       := $(TEST_SRCS:selftests/%.c=$(B)/selftests/%)
HOST_TESTS  := $(HOST_SRCS:selftests/%.c=$(B)/host/selftests/%)
TOOLS       := $(TOOL_SRCS:tools/%.c=$(B)/tools/%)
KSFT        := $(B)/ksft/kselftest_harness.h $(B)/ksft/kselftest.h

# The .so/.a exist only once lib/ has sources.
ifneq ($(LIB_SRCS),)
LIB_TARGETS := $(LIB_REAL) $(B)/lib/$(LIB_SONAME) $(B)/lib/libxpmem.so $(LIB_A) $(PC_FILES)
endif

.DEFAULT_GOAL := all
FORCE:
.PHONY: FORCE all userspace lib tests tools module modules host-tests check demo bench \
	deps sparse checkpatch w1 install uninstall clean distclean help debug-kernel
.DELETE_ON_ERROR:
# Never delete these as make intermediates.
.SECONDARY: $(KSFT) $(LIB_OBJS) $(HLIB_OBJS)

all: userspace module

userspace: lib tools tests host-build

help:
	@echo "make               build module (KDIR=...), library, tools, selftests"
	@echo "make check         host tests + QEMU runs on KERNELS='$(KERNELS)' [SUITES=words]"
	@echo "make demo          boot debian-6.1 and run the owner/attacher demo"
	@echo "make bench         xpmem-bench in the first of KERNELS (BENCH_ARGS=...)"
	@echo "make module        build xpmem.ko against KDIR=$(KDIR)"
	@echo "make w1|sparse|checkpatch   static checks of the module"
	@echo "make install       PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)"
	@echo "make debug-kernel  build/refresh the cached debug-6.12 kernel"
	@echo "selftests/vm/run.sh KERNEL [SUITE-FILTER]   one kernel, some suites"

deps:
	@selftests/vm/deps.sh

# ---------------------------------------------------------------- module ----
# Built in a private copy under $(B)/mod/<kernel release> (kernel/build-module.sh)
# so that builds for several kernels do not clobber each other.

KREL = $(notdir $(patsubst %/build,%,$(KDIR)))
MOD_OUT = $(B)/mod/$(if $(KREL),$(KREL),default)

module modules:
	@if [ -z "$(wildcard kernel/*.c)" ]; then \
		echo "module: kernel/ has no sources yet, skipping xpmem.ko"; \
	elif [ -z "$(KDIR)" ]; then \
		echo "module: no kernel build dir found; run selftests/vm/deps.sh or pass KDIR=" >&2; exit 1; \
	else \
		kernel/build-module.sh "$(KDIR)" "$(MOD_OUT)" $(KBUILD_ARGS) && \
		cp -p "$(MOD_OUT)/xpmem.ko" $(B)/xpmem.ko && \
		echo "module: $(B)/xpmem.ko (for $(KREL))"; \
	fi

# W=1 and sparse builds start from scratch (so every file is compiled and
# checked) and fail on any warning in the output.
w1 sparse:
	@rm -rf $(B)/mod/$@ && mkdir -p $(B)/mod
	@set -o pipefail; kernel/build-module.sh "$(KDIR)" "$(B)/mod/$@" \
		$(if $(filter sparse,$@),C=2 CHECK=sparse,W=1) 2>&1 | tee $(B)/mod/$@.log
	@if grep -E '(warning|error):' $(B)/mod/$@.log; then \
		echo "$@: warnings above (log $(B)/mod/$@.log)" >&2; exit 1; fi
	@echo "$@: clean"

CHECKPATCH_DIR := $(B)/checkpatch
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

debug-kernel:
	selftests/vm/build-debug-kernel.sh $(B)/debug-6.12

# ---------------------------------------------------------------- kselftest --

# Both headers in one pass over the (large) tarball.
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
	$(CC) $(XCFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(LIB_REAL): $(LIB_OBJS) $(LIB_MAP)
	$(CC) $(CFLAGS) -shared -Wl,-soname,$(LIB_SONAME) \
		$(LIB_VSCRIPT) -Wl,-z,defs \
		-o $@ $(LIB_OBJS) $(LIB_LIBS)

$(B)/lib/$(LIB_SONAME) $(B)/lib/libxpmem.so: $(LIB_REAL)
	ln -sf $(notdir $<) $@

$(LIB_A): $(LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

# The .pc files depend on the values substituted into them, so that
# `make install PREFIX=/usr` after a plain `make` regenerates them.
PC_VARS := $(PREFIX)|$(LIBDIR)|$(INCLUDEDIR)|$(VERSION)
$(B)/lib/pkgconfig/.vars: FORCE
	@mkdir -p $(@D)
	@echo '$(PC_VARS)' | cmp -s - $@ || echo '$(PC_VARS)' > $@

$(B)/lib/pkgconfig/%.pc: lib/%.pc.in $(B)/lib/pkgconfig/.vars
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# ---------------------------------------------------------------- selftests --
# One .c = one statically linked binary (runs in a bare initramfs).

tests: $(TESTS)

$(B)/selftests/%: selftests/%.c $(KSFT) $(LIB_TARGETS)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) -isystem $(B)/ksft $(CFLAGS) -MMD -MP -MF $(@D)/.$*.d -static \
		-o $@ $< $(if $(LIB_SRCS),$(LIB_A)) $(TEST_LIBS)

tools: $(TOOLS)

$(B)/tools/%: tools/%.c $(LIB_TARGETS)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CFLAGS) -MMD -MP -MF $(@D)/.$*.d -static \
		-o $@ $< $(if $(LIB_SRCS),$(LIB_A)) $(TEST_LIBS)

# ---------------------------------------------------------------- host tests -
# lib_* and host_* suites, dynamically linked, ASan+UBSan, library objects
# compiled with the same sanitizers; run on the host with XPMEM_BACKEND=shm.

host-build: $(HOST_TESTS)

$(B)/host/lib/%.o: lib/%.c
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) $(CFLAGS) $(SAN_FLAGS) -fPIC -MMD -MP -c -o $@ $<

$(B)/host/selftests/%: selftests/%.c $(KSFT) $(HLIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(XCFLAGS) -isystem $(B)/ksft $(CFLAGS) $(SAN_FLAGS) -MMD -MP -MF $(@D)/.$*.d \
		-o $@ $< $(HLIB_OBJS) $(TEST_LIBS)

host-tests: $(LIB_TARGETS) $(HOST_TESTS)
	@selftests/vm/run-host-tests.sh $(B)/host $(HOST_TESTS)

# ---------------------------------------------------------------- QEMU -------

# SUITES="xpmem_core lib_abi" restricts the VM suites (names containing a word).
check: userspace
	@SUITES="$(SUITES)" selftests/vm/check.sh $(KERNELS)

demo: userspace
	@selftests/vm/run.sh --demo debian-6.1

# First-touch and copy costs, side by side in one VM run (ratios only).
bench: userspace
	@selftests/vm/run.sh --bench $(firstword $(KERNELS))

# ---------------------------------------------------------------- install ----

install: lib tools
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR)
	@if [ -n "$(LIB_SRCS)" ]; then \
		set -e; \
		install -m 0755 $(LIB_REAL) $(DESTDIR)$(LIBDIR)/; \
		ln -sf $(notdir $(LIB_REAL)) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME); \
		ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libxpmem.so; \
		install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/; \
	fi
	@for h in $(wildcard include/xpmem.h include/xpmem_uapi.h); do \
		install -m 0644 $$h $(DESTDIR)$(INCLUDEDIR)/ || exit 1; done
	@if [ -n "$(PC_FILES)" ]; then \
		install -d $(DESTDIR)$(LIBDIR)/pkgconfig && \
		install -m 0644 $(PC_FILES) $(DESTDIR)$(LIBDIR)/pkgconfig/; fi
	@for t in $(TOOLS); do install -m 0755 $$t $(DESTDIR)$(BINDIR)/ || exit 1; done

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(notdir $(LIB_REAL)) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME) \
		$(DESTDIR)$(LIBDIR)/libxpmem.so $(DESTDIR)$(LIBDIR)/libxpmem.a \
		$(DESTDIR)$(INCLUDEDIR)/xpmem.h $(DESTDIR)$(INCLUDEDIR)/xpmem_uapi.h \
		$(DESTDIR)$(LIBDIR)/pkgconfig/xpmem.pc $(DESTDIR)$(LIBDIR)/pkgconfig/cray-xpmem.pc \
		$(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(TOOLS)))

# ---------------------------------------------------------------- clean ------
# `clean` keeps the cached debug kernel (minutes to rebuild); `distclean`
# removes everything.

clean:
	rm -rf $(B)/lib $(B)/selftests $(B)/tools $(B)/host $(B)/mod $(B)/qemu \
		$(B)/ksft $(B)/checkpatch $(B)/xpmem.ko $(B)/results

distclean:
	rm -rf $(B)

-include $(wildcard $(B)/lib/obj/*.d $(B)/host/lib/*.d $(B)/selftests/.*.d \
	$(B)/tools/.*.d $(B)/host/selftests/.*.d)
