// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_object.c - the shm backend's shared helpers: ids and their socket
 * names, object creation and reopening, copying.  The bottom of the
 * backend: calls no other shm file.  Objects are created O_EXCL under a
 * random name and unlinked before anyone else can open them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

/* Attempts at an unused random name before giving up. */
#define SHM_NAME_TRIES		16

/**
 * xpmem_lib_shm_id_draw - a new random id of this backend.
 * @id: receives SHM_ID_MARK | 46 random bits
 *
 * Used for segids (made unique by their socket) and apids (made unique in
 * the peer's permit list).  Bit 46 set and nothing above: positive, at
 * most 12 hex digits, never 0 or -1, never a kernel id.
 *
 * Return: 0 or -errno of getrandom(2).
 */
int xpmem_lib_shm_id_draw(uint64_t *id)
{
	uint64_t r;
	int ret = xpmem_lib_random(&r, sizeof(r));

	if (ret)
		return ret;
	*id = SHM_ID_MARK | (r & SHM_ID_RANDOM);
	return 0;
}

/* Whether @id has the shape of an id of this backend. */
int xpmem_lib_shm_id_valid(int64_t id)
{
	return ((uint64_t)id & ~SHM_ID_RANDOM) == SHM_ID_MARK;
}

/* *@ts = @ms milliseconds from now (CLOCK_MONOTONIC). */
void xpmem_lib_shm_deadline(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Milliseconds left until @deadline (CLOCK_MONOTONIC), at least 0. */
int xpmem_lib_shm_ms_left(const struct timespec *deadline)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(deadline->tv_sec - now.tv_sec) * 1000 +
	     (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : (int)ms;
}

/* The registry slot of @segid. */
unsigned int xpmem_lib_shm_slot_of(xpmem_segid_t segid)
{
	return (unsigned int)((uint64_t)segid % SHM_REG_SLOTS);
}

/**
 * xpmem_lib_shm_sockaddr - the abstract socket address that names @segid.
 * @segid: a segid of this backend
 * @sun:   filled with "\0xpmem-" and the segid in 12 hex digits
 *
 * Return: the address length to pass to bind(2)/connect(2) (an abstract
 * name is exactly that many bytes, no terminating NUL).
 */
socklen_t xpmem_lib_shm_sockaddr(xpmem_segid_t segid, struct sockaddr_un *sun)
{
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1,
		     SHM_SOCK_PREFIX "%012llx", (unsigned long long)segid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
}

/**
 * xpmem_lib_shm_key_sockaddr - the abstract socket address of a key.
 * @key:     1..XPMEM_EXT_KEY_MAX bytes
 * @key_len: their number
 * @sun:     filled with "\0xpmem-key-" and the key in hex
 *
 * Return: the address length to pass to bind(2)/connect(2).
 */
socklen_t xpmem_lib_shm_key_sockaddr(const void *key, size_t key_len,
				     struct sockaddr_un *sun)
{
	const unsigned char *k = key;
	size_t i, n = sizeof(SHM_KEY_PREFIX) - 1;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + 1, SHM_KEY_PREFIX, n);
	for (i = 0; i < key_len; i++, n += 2)
		snprintf(sun->sun_path + 1 + n, 3, "%02x", k[i]);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static const char *shm_dir(void)
{
	const char *d = getenv("XPMEM_SHM_DIR");

	return d && *d ? d : SHM_DEFAULT_DIR;
}

/*
 * shm_dir_error - why objects cannot be created in @dir, which open(2)
 * refused with @err: a missing or non-directory XPMEM_SHM_DIR is ENOTDIR
 * (never ENOENT, which means "no such segment"), one where files cannot
 * be created (permissions, read-only, a filesystem like /proc) EACCES;
 * either is said on stderr once per process, XPMEM_DEBUG or not.
 */
static int shm_dir_error(const char *dir, int err)
{
	static int warned;
	const char *what = getenv("XPMEM_SHM_DIR") && *getenv("XPMEM_SHM_DIR") ?
			   "XPMEM_SHM_DIR" : "the default shm directory";
	struct stat st;

	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		xpmem_lib_warn_once(&warned, "%s %s is not a directory "
				    "(shared-memory objects cannot be created)",
				    what, dir);
		return -ENOTDIR;
	}
	if (err == EACCES || err == EPERM || err == EROFS || err == ENOENT) {
		xpmem_lib_warn_once(&warned, "%s %s: cannot create files there: "
				    "%s", what, dir, strerror(err));
		return -EACCES;
	}
	xpmem_lib_log("cannot create object in %s: %s", dir, strerror(err));
	return -err;
}

/**
 * xpmem_lib_shm_object_create - a new, already unlinked shared object.
 * @size: bytes, page-aligned
 * @fd:   receives the O_RDWR|O_CLOEXEC descriptor
 *
 * The name is 128 random bits under $XPMEM_SHM_DIR, created O_EXCL and
 * unlinked before this returns.  The directory's free space is checked
 * first so that a full /dev/shm is ENOSPC here rather than SIGBUS at first
 * touch.  (A concurrent consumer can still fill it later; pages are only
 * allocated when touched.)
 *
 * Return: 0 or -errno.
 */
int xpmem_lib_shm_object_create(size_t size, int *fd)
{
	const char *dir = shm_dir();
	char path[PATH_MAX];
	unsigned char rnd[16];
	struct statvfs vfs;
	int i, j, ret, f = -1;

	for (i = 0; i < SHM_NAME_TRIES && f < 0; i++) {
		char hex[sizeof(rnd) * 2 + 1];

		ret = xpmem_lib_random(rnd, sizeof(rnd));
		if (ret)
			return ret;
		for (j = 0; j < (int)sizeof(rnd); j++)
			snprintf(hex + 2 * j, 3, "%02x", rnd[j]);
		if (snprintf(path, sizeof(path), "%s/xpmem-%s", dir, hex) >=
		    (int)sizeof(path))
			return -ENAMETOOLONG;
		f = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC |
			 O_NOFOLLOW, 0600);
		if (f < 0 && errno != EEXIST)
			return shm_dir_error(dir, errno);
	}
	if (f < 0)
		return -EEXIST;
	unlink(path);

	if (fstatvfs(f, &vfs) == 0 &&
	    (unsigned long long)vfs.f_bavail * vfs.f_frsize < size) {
		xpmem_lib_log("%s has %llu bytes free, %zu needed", dir,
			      (unsigned long long)vfs.f_bavail * vfs.f_frsize,
			      size);
		ret = -ENOSPC;
		goto close_fd;
	}
	if (ftruncate(f, (off_t)size) != 0) {
		ret = -errno;
		goto close_fd;
	}
	*fd = f;
	return 0;

close_fd:
	close(f);
	return ret;
}

/**
 * xpmem_lib_shm_huge_create - a hugetlb memfd of @size (huge-page multiple).
 *
 * Return: 0 or -errno; callers fall back to xpmem_lib_shm_object_create().
 */
int xpmem_lib_shm_huge_create(size_t size, int *fd)
{
	int f = memfd_create("xpmem-huge",
			     MFD_CLOEXEC | MFD_HUGETLB | XPMEM_LIB_HUGE_2MB_FLAG);
	int ret;

	if (f < 0)
		return -errno;
	if (ftruncate(f, (off_t)size) != 0) {
		ret = -errno;
		close(f);
		return ret;
	}
	*fd = f;
	return 0;
}

static int page_is_zero(const unsigned char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)(const void *)p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if (w[i])
			return 0;
	return 1;
}

/**
 * xpmem_lib_shm_copy_nonzero - copy page by page, skipping zero pages.
 *
 * The destination is freshly created and reads as zeros, so zero pages
 * need no copy; skipping them keeps untouched memory unallocated on both
 * sides (reading an untouched anonymous page maps the shared zero page).
 */
void xpmem_lib_shm_copy_nonzero(void *dst, const void *src, size_t size)
{
	size_t page = xpmem_lib_page_size();
	size_t off;

	for (off = 0; off < size; off += page) {
		const unsigned char *s = (const unsigned char *)src + off;

		if (!page_is_zero(s, page))
			memcpy((unsigned char *)dst + off, s, page);
	}
}

/**
 * xpmem_lib_shm_reopen_rdonly - a new read-only open file description of
 * what this process's @fd opens (through /proc/self/fd): mappings of it
 * can never be made writable.
 *
 * Return: the O_RDONLY|O_CLOEXEC descriptor, or -errno.
 */
int xpmem_lib_shm_reopen_rdonly(int fd)
{
	char path[40];
	int f;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	return f < 0 ? -errno : f;
}
