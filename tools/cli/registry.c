// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * registry.c - the shm backend's segments for `xpmem list`: the registry
 * memfd (lib/shm_wire.h) each owner holds open for writing, found among
 * the descriptors of the processes the caller may open.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_wire.h"
#include "cli.h"

#define REG_LINK	"/memfd:" SHM_REG_NAME " (deleted)"

/* pread @len bytes at @off, short only at end of file; 0 or -errno. */
static int pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done,
			  off + (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		done += (size_t)n;
	}
	return 0;
}

/* Whether the registry @st is new to @l (then it is remembered). */
static int registry_new(struct listing *l, const struct stat *st)
{
	struct reg_id *r;
	size_t i;

	for (i = 0; i < l->regs.n; i++) {
		r = vec_at(&l->regs, i);
		if (r->dev == st->st_dev && r->ino == st->st_ino)
			return 0;
	}
	r = vec_push(&l->regs);
	if (!r)
		return -ENOMEM;
	r->dev = st->st_dev;
	r->ino = st->st_ino;
	return 1;
}

/* Add the segments of the valid registry image @buf owned by @pid. */
static int registry_segments(const char *buf, uint64_t pid,
			     struct listing *l)
{
	struct shm_reg_slot s;
	struct sseg *out;
	unsigned int i;

	for (i = 0; i < SHM_REG_SLOTS; i++) {
		memcpy(&s, buf + shm_slot_pos(i), sizeof(s));
		/* free, or a slot being rewritten or not of this backend */
		if (!s.segid || s.segid % SHM_REG_SLOTS != i ||
		    (s.segid & ~SHM_ID_RANDOM) != SHM_ID_MARK)
			continue;
		out = vec_push(&l->shm);
		if (!out)
			return -ENOMEM;
		out->pid = pid;
		out->segid = s.segid;
		out->size = s.size;
		out->mode = s.mode & 07777;
		out->uid = s.uid;
	}
	return 0;
}

/*
 * read_registry - list the segments of the registry open at @fd in
 * process @pid, once per registry; files that are not a registry of this
 * library version are ignored.  0 or -errno.
 */
static int read_registry(int fd, uint64_t pid, struct listing *l)
{
	struct shm_reg_header hdr;
	struct stat st;
	char *buf;
	int ret;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size != (off_t)SHM_REG_SIZE)
		return 0;
	buf = malloc(SHM_REG_SIZE);
	if (!buf)
		return -ENOMEM;
	ret = pread_full(fd, buf, SHM_REG_SIZE, 0);
	if (ret) {
		free(buf);
		return ret == -ENODATA ? 0 : ret;	/* truncated meanwhile */
	}
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.magic == SHM_REG_MAGIC && hdr.nslots == SHM_REG_SLOTS) {
		ret = registry_new(l, &st);
		if (ret > 0)
			ret = registry_segments(buf, pid, l);
	}
	free(buf);
	return ret;
}

/*
 * owner_registry - whether descriptor @name of the /proc/<pid>/fd
 * directory @dfd is an owner's registry: a memfd of that name open for
 * writing.  Peers hold registries too, read-only (the link's mode shows
 * how the descriptor is open).
 */
static bool owner_registry(int dfd, const char *name)
{
	char link[sizeof(REG_LINK) + 1];
	struct stat st;
	ssize_t len;

	len = readlinkat(dfd, name, link, sizeof(link));
	return len == (ssize_t)sizeof(REG_LINK) - 1 &&
	       !memcmp(link, REG_LINK, (size_t)len) &&
	       !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	       (st.st_mode & S_IWUSR);
}

/*
 * list_shm_pid - the registries among the descriptors of process @name.
 * Processes whose descriptors the caller may not open (other users,
 * non-dumpable ones) and processes that exit meanwhile are skipped.
 * 0, or 1 after a reported failure.
 */
static int list_shm_pid(int procfd, const char *name, struct listing *l)
{
	struct dirent *e;
	char path[64];
	uint64_t pid;
	int dfd, fd, ret = 0;
	DIR *d;

	if (!parse_u64(name, 10, &pid) || pid == (uint64_t)getpid() ||
	    !path_join(path, sizeof(path), name, "fd"))
		return 0;
	dfd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	while ((e = readdir(d))) {
		if (!owner_registry(dfd, e->d_name))
			continue;
		fd = openat(dfd, e->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ret = read_registry(fd, pid, l);
		close(fd);
		if (ret) {
			fprintf(stderr, PROG ": /proc/%s/fd/%s: %s\n", name,
				e->d_name, strerror(-ret));
			break;
		}
	}
	closedir(d);
	return ret ? 1 : 0;
}

int list_shm(struct listing *l)
{
	struct dirent *e;
	int rc = 0;
	DIR *d;

	d = opendir("/proc");
	if (!d) {
		report("/proc", errno);
		return 1;
	}
	while ((e = readdir(d)))
		if (all_digits(e->d_name))
			rc |= list_shm_pid(dirfd(d), e->d_name, l);
	closedir(d);
	return rc;
}
