// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * sysfs.c - reading small value files (a module's version, its
 * parameters, its counters): one file, or every file of a directory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/*
 * read_value - the contents of the small file @name in directory @dirfd,
 * without trailing whitespace, into @buf.  0, or -errno (-EFBIG when it
 * does not fit in @size - 1 bytes).
 */
int read_value(int dirfd, const char *name, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd, ret = 0;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		char extra;

		if (len < size - 1)
			n = read(fd, buf + len, size - 1 - len);
		else
			n = read(fd, &extra, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ret = -errno;
		else if (n > 0 && len == size - 1)
			ret = -EFBIG;
		if (n <= 0 || ret)
			break;
		len += (size_t)n;
	}
	close(fd);
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' ' ||
		       buf[len - 1] == '\t'))
		len--;
	buf[len] = '\0';
	return ret;
}

static int no_dots(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

/*
 * read_values - every file of directory @dir, sorted by name, into a new
 * array @kvs of @n entries (a file that cannot be read has its err set).
 * 0, or -errno if the directory cannot be read.
 */
int read_values(const char *dir, struct kv **kvs, size_t *n)
{
	struct dirent **names;
	int dfd, cnt, i, ret = 0;

	*kvs = NULL;
	*n = 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	cnt = scandirat(dfd, ".", &names, no_dots, alphasort);
	if (cnt < 0) {
		ret = -errno;
		close(dfd);
		return ret;
	}
	*kvs = calloc(cnt ? (size_t)cnt : 1, sizeof(**kvs));
	if (!*kvs)
		ret = -ENOMEM;
	for (i = 0; i < cnt; i++) {
		if (*kvs) {
			struct kv *e = &(*kvs)[i];

			_Static_assert(sizeof(e->name) ==
				       sizeof(names[i]->d_name), "name size");
			memcpy(e->name, names[i]->d_name, sizeof(e->name));
			e->err = -read_value(dfd, e->name, e->value,
					     sizeof(e->value));
		}
		free(names[i]);
	}
	free(names);
	close(dfd);
	if (!ret)
		*n = (size_t)cnt;
	return ret;
}
