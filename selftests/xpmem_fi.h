/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xpmem_fi.h - fault injection knobs for the selftests that fail the
 * kernel's allocations (xpmem_unwind.c, xpmem_storm.c): a table of
 * debugfs knobs (failslab, fail_page_alloc) set with the old values
 * saved, then put back.  The kernels built from source have fault
 * injection (selftests/vm/base.config); Debian's do not, and a test that
 * needs it skips there.
 */
#ifndef XPMEM_FI_H
#define XPMEM_FI_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "xpmem_sysfs.h"

#define FI_DIR		"/sys/kernel/debug/"

/* One knob: FI_DIR @dir/@name gets @val; what it held is kept in @saved. */
struct fi_knob {
	const char *dir;
	const char *name;
	const char *val;
	char saved[32];
};
#define FI_KNOB(d, n, v)	{ .dir = (d), .name = (n), .val = (v) }

/*
 * failslab failing every slab allocation of a task whose make-it-fail is
 * 1 (task filter), those that may sleep included; no other task's.
 */
#define FI_FAILSLAB_EVERY_ALLOC					\
	FI_KNOB("failslab", "task-filter", "Y"),		\
	FI_KNOB("failslab", "probability", "100"),		\
	FI_KNOB("failslab", "interval", "1"),			\
	FI_KNOB("failslab", "times", "-1"),			\
	FI_KNOB("failslab", "space", "0"),			\
	FI_KNOB("failslab", "verbose", "0"),			\
	FI_KNOB("failslab", "ignore-gfp-wait", "N")

/*
 * debugfs files of fault injection are streams: one open per access.
 * With @save, the old value goes to @k->saved first.
 */
static inline int fi_knob_rw(struct fi_knob *k, const char *val, bool save)
{
	char dir[64], path[128];
	ssize_t n;
	int fd;

	snprintf(dir, sizeof(dir), FI_DIR "%s", k->dir);
	if (save) {
		if (sysfs_path(path, sizeof(path), dir, k->name))
			return -1;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		n = read(fd, k->saved, sizeof(k->saved) - 1);
		k->saved[n > 0 ? n : 0] = 0;
		close(fd);
	}
	return sysfs_write(dir, k->name, val);
}

/* Set the @n knobs of @k, saving what they were; -1 if one cannot be. */
static inline int fi_set(struct fi_knob *k, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (fi_knob_rw(&k[i], k[i].val, true)) {
			fprintf(stderr, "# cannot set %s/%s: %s\n", k[i].dir,
				k[i].name, strerror(errno));
			return -1;
		}
	return 0;
}

/* Put back what fi_set() saved, backwards (probability before filters). */
static inline void fi_reset(struct fi_knob *k, size_t n)
{
	while (n-- > 0)
		if (k[n].saved[0])
			fi_knob_rw(&k[n], k[n].saved, false);
}

#endif /* XPMEM_FI_H */
