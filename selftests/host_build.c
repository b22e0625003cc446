// SPDX-License-Identifier: GPL-2.0
/*
 * host_build - smoke test of the build products (host only, no VM).
 *
 * Checks what the Makefile promises about the installed artefacts: the
 * shared library is found under its soname, exports the seven classic
 * libxpmem functions and nothing un-prefixed, and the pkg-config files
 * were generated with every @VARIABLE@ substituted.
 *
 * Needs XPMEM_BUILD_DIR (absolute path of build/, set by
 * selftests/vm/run-host-tests.sh); skips when it is unset.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"

static const char *build_dir(void)
{
	return getenv("XPMEM_BUILD_DIR");
}

FIXTURE(lib)
{
	void *handle;
};

FIXTURE_SETUP(lib)
{
	char path[PATH_MAX];

	self->handle = NULL;
	if (!build_dir())
		SKIP(return, "XPMEM_BUILD_DIR not set");
	snprintf(path, sizeof(path), "%s/lib/libxpmem.so.0", build_dir());
	self->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(NULL, self->handle) TH_LOG("dlopen %s: %s", path, dlerror());
}

FIXTURE_TEARDOWN(lib)
{
	if (self->handle)
		dlclose(self->handle);
}

TEST_F(lib, classic_symbols_exported)
{
	static const char *const names[] = {
		"xpmem_version", "xpmem_make", "xpmem_remove", "xpmem_get",
		"xpmem_release", "xpmem_attach", "xpmem_detach",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *sym = dlsym(self->handle, names[i]);

		if (!sym)
			TH_LOG("not exported: %s", dlerror());
		EXPECT_NE(NULL, sym);
	}
}

TEST_F(lib, soname_is_libxpmem_so_0)
{
	char cmd[PATH_MAX + 64];
	char line[256];
	FILE *p;
	int found = 0;

	snprintf(cmd, sizeof(cmd), "objdump -p '%s/lib/libxpmem.so.0' 2>/dev/null",
		 build_dir());
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "SONAME") && strstr(line, "libxpmem.so.0"))
			found = 1;
	pclose(p);
	EXPECT_EQ(1, found);
}

/* Every exported function is xpmem_-prefixed (no internal symbol leaks). */
TEST_F(lib, only_prefixed_functions_exported)
{
	char cmd[PATH_MAX + 64];
	char line[512];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd),
		 "nm -D --defined-only '%s/lib/libxpmem.so.0' 2>/dev/null", build_dir());
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p)) {
		char addr[64], type[8], name[256];

		if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3)
			continue;
		if (strcmp(type, "T") != 0 && strcmp(type, "W") != 0)
			continue;
		n++;
		EXPECT_EQ(0, strncmp(name, "xpmem_", 6))
			TH_LOG("unprefixed export: %s", name);
	}
	pclose(p);
	EXPECT_GE(n, 7);
}

TEST(pkgconfig_substituted)
{
	static const char *const pcs[] = { "xpmem.pc", "cray-xpmem.pc" };
	char path[PATH_MAX], line[512];
	size_t i;

	if (!build_dir())
		SKIP(return, "XPMEM_BUILD_DIR not set");
	for (i = 0; i < 2; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/lib/pkgconfig/%s", build_dir(), pcs[i]);
		f = fopen(path, "r");
		if (!f) {
			TH_LOG("%s absent (no lib/%s.in yet?)", path, pcs[i]);
			continue;
		}
		while (fgets(line, sizeof(line), f))
			EXPECT_EQ(NULL, strchr(line, '@')) TH_LOG("%s: %s", pcs[i], line);
		fclose(f);
	}
}

TEST_HARNESS_MAIN
