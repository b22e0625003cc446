/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR LGPL-2.1 */
/*
 * xpmem_uapi.h - kernel/user interface of /dev/xpmem.
 *
 * Shared by the kernel module and libxpmem.  The classic part (types,
 * constants, _IO('x', 0..8) commands and their argument structs) keeps the
 * historical layout byte for byte so that an existing libxpmem.so.0 works
 * against this module and this library works against an existing module.
 * Do not change it.
 *
 * Extensions (new commands) live in the second half of this file.  They use
 * size-encoded _IOWR numbers, fixed-width fields, no implicit padding, and a
 * flags/reserved discipline: unknown flag bits and non-zero reserved fields
 * are rejected with EINVAL.
 */
#ifndef _XPMEM_UAPI_H
#define _XPMEM_UAPI_H

#include <linux/types.h>
#include <linux/ioctl.h>
#ifndef __KERNEL__
#include <sys/types.h>
#endif

/* ---- classic ABI ------------------------------------------------------ */

typedef __s64 xpmem_segid_t;	/* returned by xpmem_make() */
typedef __s64 xpmem_apid_t;	/* returned by xpmem_get() */

struct xpmem_addr {
	xpmem_apid_t apid;	/* access permit of the memory */
	off_t offset;		/* byte offset into the segment */
};

/* Size argument of xpmem_make() that exports the whole address space. */
#define XPMEM_MAXADDR_SIZE	((size_t)(-1L))

#define XPMEM_DEV_PATH		"/dev/xpmem"

/*
 * errno returned by the module when the calling process is not the one
 * that opened the device file (e.g. a child after fork()); the library
 * then reopens the device and retries.
 */
#define XPMEM_ERRNO_NOPROC	2004

/* xpmem_get() flags */
#define XPMEM_RDONLY		0x1
#define XPMEM_RDWR		0x2

/* xpmem_make() permit types */
#define XPMEM_PERMIT_MODE	0x1

#define XPMEM_IOC_MAGIC		'x'
#define XPMEM_CMD_VERSION	_IO(XPMEM_IOC_MAGIC, 0)
#define XPMEM_CMD_MAKE		_IO(XPMEM_IOC_MAGIC, 1)
#define XPMEM_CMD_REMOVE	_IO(XPMEM_IOC_MAGIC, 2)
#define XPMEM_CMD_GET		_IO(XPMEM_IOC_MAGIC, 3)
#define XPMEM_CMD_RELEASE	_IO(XPMEM_IOC_MAGIC, 4)
#define XPMEM_CMD_ATTACH	_IO(XPMEM_IOC_MAGIC, 5)
#define XPMEM_CMD_DETACH	_IO(XPMEM_IOC_MAGIC, 6)
#define XPMEM_CMD_FORK_BEGIN	_IO(XPMEM_IOC_MAGIC, 7)
#define XPMEM_CMD_FORK_END	_IO(XPMEM_IOC_MAGIC, 8)

/*
 * Argument structs of the classic commands.  Layouts (x86_64, LP64):
 *   make:    vaddr@0 size@8 permit_type@16 permit_value@24 segid@32 (40)
 *   remove:  segid@0 (8)
 *   get:     segid@0 flags@8 permit_type@12 permit_value@16 apid@24 (32)
 *   release: apid@0 (8)
 *   attach:  apid@0 offset@8 size@16 vaddr@24 fd@32 flags@36 (40)
 *   detach:  vaddr@0 (8)
 */
struct xpmem_cmd_make {
	__u64 vaddr;
	size_t size;
	int permit_type;
	__u64 permit_value;
	xpmem_segid_t segid;	/* out */
};

struct xpmem_cmd_remove {
	xpmem_segid_t segid;
};

struct xpmem_cmd_get {
	xpmem_segid_t segid;
	int flags;
	int permit_type;
	__u64 permit_value;
	xpmem_apid_t apid;	/* out */
};

struct xpmem_cmd_release {
	xpmem_apid_t apid;
};

struct xpmem_cmd_attach {
	xpmem_apid_t apid;
	off_t offset;
	size_t size;
	__u64 vaddr;		/* in: wanted address or 0; out: address */
	int fd;
	int flags;
};

struct xpmem_cmd_detach {
	__u64 vaddr;
};

/* ---- extensions (not in the classic ABI) ------------------------------ */

/*
 * Segids and apids issued by xpmem.ko are 1 .. XPMEM_ID_MAX (46 bits: at
 * most 12 hex digits, positive as int64_t).  libxpmem's shm backend issues
 * ids with bit XPMEM_ID_BITS set, so the two never collide.
 */
#define XPMEM_ID_BITS		46
#define XPMEM_ID_MAX		((1ULL << XPMEM_ID_BITS) - 1)

#endif /* _XPMEM_UAPI_H */
