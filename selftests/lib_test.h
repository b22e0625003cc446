/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lib_test.h - what the libxpmem suites (lib_*.c) share: the backend
 * check of their fixtures, the users of the VM, the exit codes of helper
 * children, and helpers on top of the library's calls.  The helpers that
 * are not about xpmem are in test_util.h.
 *
 * Each suite is one binary for both backends: XPMEM_BACKEND=shm (the
 * host, and the VM with the module unloaded), XPMEM_BACKEND=kernel (the
 * VM with the module), or unset (auto).  Include after
 * kselftest_harness.h.
 */
#ifndef LIB_TEST_H
#define LIB_TEST_H

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <xpmem.h>

#include "test_util.h"

/* Users of the VM (selftests/vm/run.sh writes its /etc/passwd). */
#define ALICE		1000
#define BOB		1001
#define CAROL		1002

/* Exit codes of helper children. */
#define CHILD_OK	0
#define CHILD_EACCES	1
#define CHILD_SKIP	77

/* Set by the fixtures' setup. */
static size_t page;

/* In a test of a fixture with a backend field: the shm backend runs it. */
#define IS_SHM (self->backend == XPMEM_EXT_BACKEND_SHM)

/*
 * In a FIXTURE_SETUP: the backend the library chose (in @backend, its
 * reason in @reason), checked against XPMEM_BACKEND: the test skips when
 * XPMEM_BACKEND=kernel finds no module (-1: the setup must return), and
 * fails when there is no backend or the library chose another one than
 * XPMEM_BACKEND names.
 */
static inline int lib_setup_backend(struct __test_metadata *_metadata,
				    int *backend, const char **reason)
{
	const char *env = getenv("XPMEM_BACKEND");

	page = (size_t)sysconf(_SC_PAGESIZE);
	*backend = xpmem_ext_backend(reason);
	if (env && !strcmp(env, "kernel") &&
	    *backend == XPMEM_EXT_BACKEND_NONE)
		SKIP(return -1, "XPMEM_BACKEND=kernel but no module: %s",
		     *reason);
	ASSERT_NE(XPMEM_EXT_BACKEND_NONE, *backend)
		TH_LOG("no backend: %s", *reason);
	if (env && !strcmp(env, "shm"))
		ASSERT_EQ(XPMEM_EXT_BACKEND_SHM, *backend);
	if (env && !strcmp(env, "kernel"))
		ASSERT_EQ(XPMEM_EXT_BACKEND_KERNEL, *backend);
	TH_LOG("backend %s (%s)", xpmem_ext_backend_name(*backend), *reason);
	return 0;
}

/* FIXTURE(lib) of the library suites: the backend checked at each setup. */
#define LIB_FIXTURE()							\
	FIXTURE(lib)							\
	{								\
		int backend;						\
		const char *reason;					\
	};								\
	FIXTURE_SETUP(lib)						\
	{								\
		lib_setup_backend(_metadata, &self->backend,		\
				  &self->reason);			\
	}								\
	FIXTURE_TEARDOWN(lib)						\
	{								\
	}

/*
 * become - drop to @uid/@gid with the one supplementary group @supp (none
 * if 0), in a child of the test: it dies with its parent, and stays
 * dumpable (the credential change cleared both; same-uid shm peers need
 * the owner dumpable).
 */
static inline int become(uid_t uid, gid_t gid, gid_t supp)
{
	if (switch_user(uid, gid, supp))
		return -1;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0))
		return -1;
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

/* get + attach the whole @size of @segid; NULL on failure. */
static inline void *get_attach(xpmem_segid_t segid, int flags, size_t size,
			       xpmem_apid_t *apid)
{
	struct xpmem_addr addr;
	void *p;

	*apid = xpmem_get(segid, flags, XPMEM_PERMIT_MODE, NULL);
	if (*apid == -1)
		return NULL;
	addr.apid = *apid;
	addr.offset = 0;
	p = xpmem_attach(addr, size, NULL);
	if (p == (void *)-1) {
		xpmem_release(*apid);
		return NULL;
	}
	return p;
}

/* Entries of directory @path other than . and ..; -1 if it cannot be read. */
static inline int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/*
 * Set in the environment of a copy of the suite run through execve() of
 * /proc/self/exe: the copy does what the value says and exits before the
 * harness starts (each suite's constructor).
 */
#define PROBE_ENV	"XPMEM_LIBTEST_PROBE"

#endif /* LIB_TEST_H */
