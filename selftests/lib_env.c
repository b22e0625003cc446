// SPDX-License-Identifier: GPL-2.0
/*
 * lib_env.c - libxpmem's environment variables, as a user who mistypes
 * one sees them: a clear errno and one line on stderr per process, with
 * XPMEM_DEBUG unset.
 *
 * The backend is chosen once per process, so every case runs in a fresh
 * child whose stderr is a pipe the test reads to the end; the child
 * reports its results through its exit status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xpmem.h>

#include "kselftest_harness.h"

#define ERR_MAX		4096

/*
 * run_child - run @fn in a child with the environment @env ("NAME=value"
 * entries, NULL-terminated; XPMEM_DEBUG is always removed), collect its
 * stderr into @err and return its exit status (or -1).
 */
static int run_child(char *const env[], int (*fn)(void), char *err)
{
	int p[2], status, i;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		if (dup2(p[1], STDERR_FILENO) < 0)
			_exit(100);
		unsetenv("XPMEM_DEBUG");
		unsetenv("XPMEM_BACKEND");
		unsetenv("XPMEM_SHM_DIR");
		for (i = 0; env[i]; i++)
			if (putenv(env[i]))
				_exit(101);
		_exit(fn());
	}
	close(p[1]);
	while (n < ERR_MAX - 1 &&
	       (r = read(p[0], err + n, ERR_MAX - 1 - n)) > 0)
		n += (size_t)r;
	err[n] = 0;
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* How many times @needle occurs in @hay. */
static int count(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* Two makes of fresh anonymous memory; exit status = errno of both or 0. */
static int two_makes(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int e1, e2;
	char *b;

	b = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return 99;
	b[0] = b[page] = 1;
	errno = 0;
	if (xpmem_make(b, page, XPMEM_PERMIT_MODE, (void *)0600) != -1)
		return 0;
	e1 = errno;
	errno = 0;
	if (xpmem_make(b + page, page, XPMEM_PERMIT_MODE, (void *)0600) != -1)
		return 98;
	e2 = errno;
	return e1 == e2 ? e1 : 97;
}

static int backend_of_process(void)
{
	return xpmem_ext_backend(NULL);
}

TEST(bogus_backend_is_einval_with_one_message)
{
	char *env[] = { "XPMEM_BACKEND=bogus", NULL };
	char err[ERR_MAX];

	ASSERT_EQ(EINVAL, run_child(env, two_makes, err));
	TH_LOG("stderr: %s", err);
	ASSERT_EQ(1, count(err, "XPMEM_BACKEND=bogus is not kernel, shm or auto"));
	ASSERT_EQ(1, count(err, "\n"));
}

TEST(forced_kernel_without_device_is_enodev_with_one_message)
{
	char *env[] = { "XPMEM_BACKEND=kernel", NULL };
	char err[ERR_MAX];
	int fd = open("/dev/xpmem", O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		ASSERT_EQ(XPMEM_EXT_BACKEND_KERNEL,
			  run_child(env, backend_of_process, err));
		ASSERT_STREQ("", err);
		return;
	}
	ASSERT_EQ(ENODEV, run_child(env, two_makes, err));
	TH_LOG("stderr: %s", err);
	ASSERT_EQ(1, count(err, "XPMEM_BACKEND=kernel but /dev/xpmem"));
	ASSERT_EQ(1, count(err, "\n"));
}

/* A missing or non-directory XPMEM_SHM_DIR: ENOTDIR, never ENOENT. */
TEST(shm_dir_missing_is_enotdir_with_one_message)
{
	char *env[] = { "XPMEM_BACKEND=shm",
			"XPMEM_SHM_DIR=/nonexistent-xpmem-dir", NULL };
	char *env2[] = { "XPMEM_BACKEND=shm", "XPMEM_SHM_DIR=/dev/null", NULL };
	char err[ERR_MAX];

	ASSERT_EQ(ENOTDIR, run_child(env, two_makes, err));
	TH_LOG("stderr: %s", err);
	ASSERT_EQ(1, count(err, "XPMEM_SHM_DIR /nonexistent-xpmem-dir is not a directory"));
	ASSERT_EQ(1, count(err, "\n"));
	ASSERT_EQ(ENOTDIR, run_child(env2, two_makes, err));
	ASSERT_EQ(1, count(err, "XPMEM_SHM_DIR /dev/null is not a directory"));
}

/* A directory where files cannot be created: EACCES and one message. */
TEST(shm_dir_unusable_is_eacces_with_one_message)
{
	char *env[] = { "XPMEM_BACKEND=shm", "XPMEM_SHM_DIR=/proc", NULL };
	char err[ERR_MAX];

	ASSERT_EQ(EACCES, run_child(env, two_makes, err));
	TH_LOG("stderr: %s", err);
	ASSERT_EQ(1, count(err, "XPMEM_SHM_DIR /proc: cannot create files there"));
	ASSERT_EQ(1, count(err, "\n"));
}

/* Good values print nothing without XPMEM_DEBUG. */
TEST(good_values_are_silent)
{
	char dir[] = "/tmp/xpmem-env-XXXXXX";
	char var[64];
	char *env[] = { "XPMEM_BACKEND=shm", var, NULL };
	char err[ERR_MAX];

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(var, sizeof(var), "XPMEM_SHM_DIR=%s", dir);
	ASSERT_EQ(0, run_child(env, two_makes, err));
	ASSERT_STREQ("", err);
	ASSERT_EQ(0, rmdir(dir));	/* and nothing was left in it */
}

TEST_HARNESS_MAIN
