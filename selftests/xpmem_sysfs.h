/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xpmem_sysfs.h - reading the module's counters and parameters, for every
 * xpmem_* selftest (xpmem_test.h includes it; xpmem_stress.c, which has
 * its own ioctl wrappers, includes it alone).
 */
#ifndef XPMEM_SYSFS_H
#define XPMEM_SYSFS_H

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATS_DIR	"/sys/class/misc/xpmem/stats/"
#define PARAM_DIR	"/sys/module/xpmem/parameters/"

/* @dir/@name in @path (@dir may end with a slash); 0, or -1 if too long. */
static inline int sysfs_path(char *path, size_t len, const char *dir,
			     const char *name)
{
	size_t n = strlen(dir);
	int r = snprintf(path, len, "%s%s%s", dir,
			 n && dir[n - 1] == '/' ? "" : "/", name);

	return r < 0 || (size_t)r >= len ? -1 : 0;
}

/* The number in the file @dir/@name, or -1 if it cannot be read. */
static inline long sysfs_read_long(const char *dir, const char *name)
{
	char path[PATH_MAX], buf[32] = "";
	long v = -1;
	int fd;

	if (sysfs_path(path, sizeof(path), dir, name))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) > 0)
		v = strtol(buf, NULL, 10);
	close(fd);
	return v;
}

/* Write @val to the file @dir/@name; 0 or -1. */
static inline int sysfs_write(const char *dir, const char *name,
			      const char *val)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (sysfs_path(path, sizeof(path), dir, name))
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

/* A counter from STATS_DIR, or -1 if it does not exist (or, root only). */
static inline long stat_read(const char *name)
{
	return sysfs_read_long(STATS_DIR, name);
}

/*
 * /proc/sys/kernel/numa_balancing, to @v; the old value, or -1.  NUMA
 * hinting (on in the debug kernel and, with two nodes, in Debian's) changes
 * the owner's protections now and then, and an attachment mirrors that
 * with a zap: a pass that counts its faults runs without it.
 */
static inline int numa_balancing_set(int v)
{
	FILE *f = fopen("/proc/sys/kernel/numa_balancing", "r+");
	int old = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &old) != 1)
		old = -1;
	if (old >= 0 && v >= 0) {
		rewind(f);
		fprintf(f, "%d\n", v);
	}
	fclose(f);
	return old;
}

/*
 * A counter read afresh through @fd, a STATS_DIR file opened before: the
 * counters are readable by root only, so a child that becomes another
 * user opens them first.  -1 on error.
 */
static inline long stat_pread(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

#endif /* XPMEM_SYSFS_H */
