// SPDX-License-Identifier: LGPL-2.1
/*
 * util.c - small helpers: page size, randomness, credentials.
 */
#include <errno.h>
#include <linux/capability.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xpmem_lib.h"

/* Base page size (sysconf reads it from the aux vector: no syscall). */
size_t xpmem_lib_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/**
 * xpmem_lib_random - fill a buffer with random bytes.
 * @buf: destination
 * @len: number of bytes
 *
 * Return: 0, or -errno when getrandom(2) fails.
 */
int xpmem_lib_random(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/**
 * xpmem_lib_has_cap - whether a capability is in the caller's effective set.
 * @cap: CAP_* number
 */
int xpmem_lib_has_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
		.pid = 0,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &hdr, data) != 0)
		return 0;
	return !!(data[cap / 32].effective & (1U << (cap % 32)));
}

/* The backend's features: its static ones and those found at run time. */
unsigned long xpmem_lib_features(const struct xpmem_lib_backend *be)
{
	return be->features | (be->more_features ? be->more_features() : 0);
}
