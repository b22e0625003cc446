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
 * Argument structs of the classic commands.  Layouts (LP64: the same on
 * x86_64 and arm64; checked below with XPMEM_UAPI_LAYOUT_CHECKS):
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

/*
 * Extension commands are _IOWR('x', 0x20 + n, struct): the number encodes
 * the struct's size, so a struct that grows is a new command.  Every
 * field is fixed-width and naturally aligned; the structs have no padding
 * the compiler adds.  A flag bit this module does not know and a reserved
 * field that is not 0 are EINVAL; a command it does not know is ENOTTY
 * (so XPMEM_CMD_EXT_QUERY failing with ENOTTY means: a classic module).
 * 32-bit processes get ENOTTY from every command (no compat_ioctl).
 */
#define XPMEM_EXT_NR_BASE	0x20
#define XPMEM_EXT_ABI_VERSION	1

/* Bit of an extension command in xpmem_ext_query.commands. */
#define XPMEM_EXT_CMD_BIT(cmd)	(1ULL << (_IOC_NR(cmd) - XPMEM_EXT_NR_BASE))

/* xpmem_ext_query.features */
#define XPMEM_EXT_KF_HUGE_PMD	0x1ULL	/* owner PMDs map as attacher PMDs */
#define XPMEM_EXT_KF_ATTACH	0x2ULL	/* XPMEM_CMD_EXT_ATTACH and its flags */
#define XPMEM_EXT_KF_KEYS	0x4ULL	/* EXT_MAKE/EXT_GET: keys, auth, rdonly */
#define XPMEM_EXT_KF_COPY	0x8ULL	/* EXT_COPY, EXT_POPULATE (ioctl) */
#define XPMEM_EXT_KF_URING	0x10ULL	/* both as io_uring commands too */
#define XPMEM_EXT_KF_MAKE_IOV	0x20ULL	/* EXT_MAKE of several buffers */
#define XPMEM_EXT_KF_URING_FIXED 0x40ULL /* ring copies to registered buffers */
#define XPMEM_EXT_KF_ANY_NS	0x80ULL	/* XPMEM_EXT_MAKE_ANY_NS */
#define XPMEM_EXT_KF_HOST_IDS	0x100ULL /* host_ids=Y: segids resolve host-wide */
#define XPMEM_EXT_KF_ZERO_REVOKED 0x200ULL /* XPMEM_EXT_ATTACH_ZERO_REVOKED */
#define XPMEM_EXT_KF_EVENTS	0x400ULL /* poll and read() of /dev/xpmem: events */

/*
 * XPMEM_CMD_EXT_QUERY: what the module offers (as UFFDIO_API does).
 * Layout: flags@0 abi_version@4 module_version@8 fault_window_pages@12
 * features@16 commands@24 max_segments@32 max_permits@36
 * max_attachments@40 reserved0@44 reserved@48 (80).
 */
struct xpmem_ext_query {
	__u32 flags;			/* in: 0 */
	__u32 abi_version;		/* out: XPMEM_EXT_ABI_VERSION */
	__u32 module_version;		/* out: as XPMEM_CMD_VERSION returns */
	__u32 fault_window_pages;	/* out: pages mapped per fault at most */
	__u64 features;			/* out: XPMEM_EXT_KF_* */
	__u64 commands;			/* out: XPMEM_EXT_CMD_BIT() of each */
	__u32 max_segments;		/* out: per user (real uid) */
	__u32 max_permits;		/* out: per user (real uid) */
	__u32 max_attachments;		/* out: per user (real uid) */
	__u32 reserved0;		/* in: 0 */
	__u64 reserved[4];		/* in: 0 */
};

/* xpmem_ext_attach.flags */
#define XPMEM_EXT_ATTACH_RDONLY		0x1U	/* read-only, whatever the permit */
#define XPMEM_EXT_ATTACH_FIXED		0x2U	/* exactly at vaddr (MAP_FIXED) */
#define XPMEM_EXT_ATTACH_POPULATE	0x4U	/* map what the owner has now */
#define XPMEM_EXT_ATTACH_POPULATE_WRITE	0x8U	/* and writable where it may be */
#define XPMEM_EXT_ATTACH_ZERO_REVOKED	0x10U	/* revoked: zeros, never SIGBUS */
#define XPMEM_EXT_ATTACH_FLAGS		0x1fU

/*
 * XPMEM_CMD_EXT_ATTACH: ATTACH with options.  Without FIXED, vaddr must be
 * 0 and the module chooses an address (congruent with the owner's modulo
 * 2 MiB when huge mappings are on).  POPULATE maps, before returning, what
 * one read of each fault window would map (the owner's resident pages;
 * the first page of each window is faulted in the owner as a read would);
 * POPULATE_WRITE (which needs a writable attachment) what one write would:
 * those pages writable where the owner maps them writable, their folios
 * dirtied.  Populating is best effort: a window the owner maps nothing in
 * is skipped, and the attachment is made whatever it finds.
 * ZERO_REVOKED: once the attachment is revoked (its segment removed, its
 * permit released, or the owner gone: exited, killed, exec'd), accesses
 * no longer get SIGBUS: a read maps a read-only page of zeros, and a
 * write a zeroed page private to this attachment (charged to the
 * attacher's memory cgroup), which neither the owner nor any other
 * process sees.  A hole in the memory of a live owner is still SIGBUS.
 * Layout: apid@0 offset@8 size@16 vaddr@24 flags@32 reserved0@36
 * reserved@40 (64).
 */
struct xpmem_ext_attach {
	xpmem_apid_t apid;		/* in */
	__u64 offset;			/* in: page aligned */
	__u64 size;			/* in */
	__u64 vaddr;			/* in: 0, or the address with FIXED; out */
	__u32 flags;			/* in: XPMEM_EXT_ATTACH_* */
	__u32 reserved0;		/* in: 0 */
	__u64 reserved[3];		/* in: 0 */
};

/* Lengths of a requested key and of an authorization key. */
#define XPMEM_EXT_KEY_MAX	40
#define XPMEM_EXT_AUTH_MAX	64

/* xpmem_ext_make.flags */
#define XPMEM_EXT_MAKE_RDONLY	0x1U	/* GET grants XPMEM_RDONLY only */
#define XPMEM_EXT_MAKE_KEY	0x2U	/* publish under key[0, key_len) */
#define XPMEM_EXT_MAKE_AUTH	0x4U	/* GET must present auth[0, auth_len) */
#define XPMEM_EXT_MAKE_IOV	0x8U	/* vaddr: size struct xpmem_ext_iov */
#define XPMEM_EXT_MAKE_ANY_NS	0x10U	/* GET from any IPC namespace; needs AUTH */
#define XPMEM_EXT_MAKE_FLAGS	0x1fU

/* Most buffers one segment of XPMEM_EXT_MAKE_IOV exports. */
#define XPMEM_EXT_MAKE_IOV_MAX	256

/*
 * XPMEM_CMD_EXT_MAKE: MAKE with options.  mode is the classic permit mode
 * (0..0777).  A key is 1..XPMEM_EXT_KEY_MAX bytes compared in full (any
 * bytes, length included); it names the segment in the caller's IPC
 * namespace until the segment is removed, and a key in use there is
 * EEXIST.  Keys are names, not secrets: an authorization key (1 ..
 * XPMEM_EXT_AUTH_MAX bytes) is, and every GET of the segment must present
 * it, besides passing the mode check (a classic GET cannot: EACCES).
 * Bytes of key[] and auth[] past their lengths must be 0.
 * With IOV, vaddr is the address of an array of size struct
 * xpmem_ext_iov (below; 1..XPMEM_EXT_MAKE_IOV_MAX; read by the command only)
 * and the segment is those buffers one after the other: segment offset 0
 * is the first buffer's base, the second starts where the first ends, and
 * so on.  Every base and length is page aligned and no length is 0;
 * buffers may be anywhere, in any order, even overlap.  An attachment of
 * such a segment is one contiguous mapping; copies and faults cross from
 * one buffer to the next.
 * Layout: vaddr@0 size@8 flags@16 mode@20 key_len@24 auth_len@28 key@32
 * auth@72 segid@136 reserved@144 (160).
 */
struct xpmem_ext_make {
	__u64 vaddr;			/* in: page aligned; IOV: the array */
	__u64 size;			/* in: bytes, or XPMEM_MAXADDR_SIZE; */
					/*     IOV: elements */
	__u32 flags;			/* in: XPMEM_EXT_MAKE_* */
	__u32 mode;			/* in: permit mode, 0..0777 */
	__u32 key_len;			/* in: with KEY 1..40, else 0 */
	__u32 auth_len;			/* in: with AUTH 1..64, else 0 */
	__u8 key[XPMEM_EXT_KEY_MAX];	/* in */
	__u8 auth[XPMEM_EXT_AUTH_MAX];	/* in */
	xpmem_segid_t segid;		/* out */
	__u64 reserved[2];		/* in: 0 */
};

/* xpmem_ext_get.flags: XPMEM_RDONLY or XPMEM_RDWR, and */
#define XPMEM_EXT_GET_BY_KEY	0x100U	/* find the segment by key */
#define XPMEM_EXT_GET_AUTH	0x200U	/* present auth[0, auth_len) */
#define XPMEM_EXT_GET_FLAGS	0x303U

/*
 * XPMEM_CMD_EXT_GET: GET with options.  With BY_KEY the segment is the one
 * published under the key in the caller's IPC namespace (ENOENT if none)
 * and its segid is returned; without, segid names it.  A segment made
 * with an authorization key needs AUTH and that key (EACCES otherwise,
 * and for a wrong one); AUTH for a segment without one is EACCES too.
 * Layout: segid@0 flags@8 key_len@12 auth_len@16 reserved0@20 key@24
 * auth@64 apid@128 reserved@136 (152).
 */
struct xpmem_ext_get {
	xpmem_segid_t segid;		/* in without BY_KEY; out */
	__u32 flags;			/* in: see above */
	__u32 key_len;			/* in: with BY_KEY 1..40, else 0 */
	__u32 auth_len;			/* in: with AUTH 1..64, else 0 */
	__u32 reserved0;		/* in: 0 */
	__u8 key[XPMEM_EXT_KEY_MAX];	/* in */
	__u8 auth[XPMEM_EXT_AUTH_MAX];	/* in */
	xpmem_apid_t apid;		/* out */
	__u64 reserved[2];		/* in: 0 */
};

/* xpmem_ext_copy.flags */
#define XPMEM_EXT_COPY_TO	0x1U	/* write the segment (else read it) */
#define XPMEM_EXT_COPY_IOV	0x2U	/* addr: len struct xpmem_ext_iov */
#define XPMEM_EXT_COPY_FLAGS	0x3U

/* Most xpmem_ext_iov elements one copy takes (as UIO_MAXIOV). */
#define XPMEM_EXT_IOV_MAX	1024

/*
 * One local buffer of a vectored copy, or one exported buffer of an
 * EXT_MAKE with IOV: the layout of a 64-bit iovec.
 */
struct xpmem_ext_iov {
	__u64 base;			/* user address */
	__u64 len;			/* bytes */
};

/*
 * XPMEM_CMD_EXT_COPY: copy between the caller's memory and a segment,
 * through a permit and without an attachment (as process_vm_readv(2) and
 * process_vm_writev(2) copy between two processes).  The segment range
 * [offset, offset + bytes) must lie in the segment; with COPY_TO the
 * permit must be XPMEM_RDWR (else EACCES).  The local side is one buffer
 * (addr, len bytes) or, with COPY_IOV, len struct xpmem_ext_iov at addr
 * (at most XPMEM_EXT_IOV_MAX); the segment side is contiguous.  At most
 * 0x7ffff000 bytes move per command (as read(2)); the result is the
 * number of bytes copied, which is short only when a fatal signal, an
 * owner page that cannot be had (EFAULT: unmapped, PROT_NONE, read-only
 * for COPY_TO) or an unwritable local buffer stops the copy after the
 * first byte.  The owner's pages are pinned for the time of the copy of
 * a few of them at once, never longer.  ENOENT: unknown or released
 * permit, removed segment, exited owner.
 * Layout: apid@0 offset@8 addr@16 len@24 flags@32 reserved0@36
 * reserved@40 (64).
 */
struct xpmem_ext_copy {
	xpmem_apid_t apid;		/* in */
	__u64 offset;			/* in: segment offset, any alignment */
	__u64 addr;			/* in: buffer, or xpmem_ext_iov array */
	__u64 len;			/* in: bytes, or array elements */
	__u32 flags;			/* in: XPMEM_EXT_COPY_* */
	__u32 reserved0;		/* in: 0 */
	__u64 reserved[3];		/* in: 0 */
};

/* xpmem_ext_populate.flags */
#define XPMEM_EXT_POPULATE_WRITE	0x1U	/* as a write would */
#define XPMEM_EXT_POPULATE_FLAGS	0x1U

/*
 * XPMEM_CMD_EXT_POPULATE: fault in [vaddr, vaddr + len) of the caller's
 * attachments, as XPMEM_EXT_ATTACH_POPULATE (or with WRITE,
 * POPULATE_WRITE) does at attach time.  The range must be covered by
 * attachments (EFAULT where it is not; EACCES for WRITE over a read-only
 * one).  Best effort, as at attach time: what the owner does not map is
 * skipped.  Returns 0.
 * Layout: vaddr@0 len@8 flags@16 reserved0@20 reserved@24 (40).
 */
struct xpmem_ext_populate {
	__u64 vaddr;			/* in: page aligned */
	__u64 len;			/* in: bytes */
	__u32 flags;			/* in: XPMEM_EXT_POPULATE_* */
	__u32 reserved0;		/* in: 0 */
	__u64 reserved[2];		/* in: 0 */
};

/*
 * io_uring: IORING_OP_URING_CMD on a /dev/xpmem file, with cmd_op
 * XPMEM_CMD_EXT_COPY or XPMEM_CMD_EXT_POPULATE and this in the SQE's
 * 16-byte command area (the addr3 field and the one after it).  The
 * argument struct is read when the command is issued, which may be after
 * io_uring_enter() returns: keep it unchanged until the completion.  The
 * CQE's res is what the ioctl would return (bytes copied, 0) or -errno.
 * Small copies complete inline; the others run in io_uring's workers,
 * several at a time.  Rings set up with IORING_SETUP_IOPOLL are refused.
 * A copy may use a buffer registered with the ring
 * (IORING_REGISTER_BUFFERS): the SQE's uring_cmd_flags has
 * IORING_URING_CMD_FIXED and its buf_index names the buffer; addr and len
 * must lie inside it (else EFAULT), and COPY_IOV is EINVAL then.
 */
struct xpmem_ext_uring_cmd {
	__u64 arg;			/* user address of the argument */
	__u64 reserved;			/* 0 */
};

/* xpmem_ext_event.reason */
#define XPMEM_EXT_EVENT_REMOVED		1	/* REMOVE, or the owner closed its file */
#define XPMEM_EXT_EVENT_OWNER_EXITED	2	/* the owner's address space is gone */

/*
 * Events: read(2) of /dev/xpmem returns whole records of this struct, one
 * per permit of the reading file (taken with XPMEM_CMD_GET or EXT_GET
 * through it) whose segment ended: at most one per permit, in the order
 * they happened, none for a permit released before it was read.  The
 * attachments of that permit are revoked already when its record is
 * queued.  A read of less than one record is EINVAL; with no record
 * queued, a read waits (interruptibly) unless the file is O_NONBLOCK or
 * the read RWF_NOWAIT, which give EAGAIN.  poll(2), epoll and io_uring's
 * IORING_OP_POLL_ADD report EPOLLIN while a record is queued.  Another
 * process than the opener reading gets -XPMEM_ERRNO_NOPROC.
 * Layout: segid@0 apid@8 reason@16 reserved0@20 reserved@24 (32).
 */
struct xpmem_ext_event {
	xpmem_segid_t segid;		/* the segment that ended */
	xpmem_apid_t apid;		/* the reader's permit for it */
	__u32 reason;			/* XPMEM_EXT_EVENT_* */
	__u32 reserved0;		/* 0 */
	__u64 reserved;			/* 0 */
};

#define XPMEM_CMD_EXT_QUERY	_IOWR(XPMEM_IOC_MAGIC, XPMEM_EXT_NR_BASE + 0, \
				      struct xpmem_ext_query)
#define XPMEM_CMD_EXT_ATTACH	_IOWR(XPMEM_IOC_MAGIC, XPMEM_EXT_NR_BASE + 1, \
				      struct xpmem_ext_attach)
#define XPMEM_CMD_EXT_MAKE	_IOWR(XPMEM_IOC_MAGIC, XPMEM_EXT_NR_BASE + 2, \
				      struct xpmem_ext_make)
#define XPMEM_CMD_EXT_GET	_IOWR(XPMEM_IOC_MAGIC, XPMEM_EXT_NR_BASE + 3, \
				      struct xpmem_ext_get)
#define XPMEM_CMD_EXT_COPY	_IOWR(XPMEM_IOC_MAGIC, XPMEM_EXT_NR_BASE + 4, \
				      struct xpmem_ext_copy)
#define XPMEM_CMD_EXT_POPULATE	_IOWR(XPMEM_IOC_MAGIC, XPMEM_EXT_NR_BASE + 5, \
				      struct xpmem_ext_populate)

/*
 * The layouts and command numbers above, checked at compile time where
 * XPMEM_UAPI_LAYOUT_CHECKS is defined (the module's Kbuild and the
 * project's Makefile define it): the layouts on every LP64 architecture
 * (the module builds for 64-bit ones only; 32-bit processes get ENOTTY),
 * the numbers on x86_64 and arm64 (the generic ioctl encoding).  Binaries
 * of either side built elsewhere keep working only while every offset,
 * size and number stays what it is here.
 */
#if defined(XPMEM_UAPI_LAYOUT_CHECKS) && !defined(__cplusplus) && \
	__SIZEOF_LONG__ == 8
#ifdef __KERNEL__
#include <linux/build_bug.h>
#else
#include <assert.h>
#endif

#define XPMEM_UAPI_AT(type, field, off) \
	static_assert(__builtin_offsetof(struct type, field) == (off), \
		       #type "." #field " at " #off)
#define XPMEM_UAPI_SIZE(type, size) \
	static_assert(sizeof(struct type) == (size), #type " size " #size)
#define XPMEM_UAPI_CMD(cmd, val) \
	static_assert((cmd) == (val), #cmd " is " #val)

XPMEM_UAPI_AT(xpmem_addr, apid, 0);
XPMEM_UAPI_AT(xpmem_addr, offset, 8);
XPMEM_UAPI_SIZE(xpmem_addr, 16);

XPMEM_UAPI_AT(xpmem_cmd_make, vaddr, 0);
XPMEM_UAPI_AT(xpmem_cmd_make, size, 8);
XPMEM_UAPI_AT(xpmem_cmd_make, permit_type, 16);
XPMEM_UAPI_AT(xpmem_cmd_make, permit_value, 24);
XPMEM_UAPI_AT(xpmem_cmd_make, segid, 32);
XPMEM_UAPI_SIZE(xpmem_cmd_make, 40);
XPMEM_UAPI_SIZE(xpmem_cmd_remove, 8);
XPMEM_UAPI_AT(xpmem_cmd_get, segid, 0);
XPMEM_UAPI_AT(xpmem_cmd_get, flags, 8);
XPMEM_UAPI_AT(xpmem_cmd_get, permit_type, 12);
XPMEM_UAPI_AT(xpmem_cmd_get, permit_value, 16);
XPMEM_UAPI_AT(xpmem_cmd_get, apid, 24);
XPMEM_UAPI_SIZE(xpmem_cmd_get, 32);
XPMEM_UAPI_SIZE(xpmem_cmd_release, 8);
XPMEM_UAPI_AT(xpmem_cmd_attach, apid, 0);
XPMEM_UAPI_AT(xpmem_cmd_attach, offset, 8);
XPMEM_UAPI_AT(xpmem_cmd_attach, size, 16);
XPMEM_UAPI_AT(xpmem_cmd_attach, vaddr, 24);
XPMEM_UAPI_AT(xpmem_cmd_attach, fd, 32);
XPMEM_UAPI_AT(xpmem_cmd_attach, flags, 36);
XPMEM_UAPI_SIZE(xpmem_cmd_attach, 40);
XPMEM_UAPI_SIZE(xpmem_cmd_detach, 8);

XPMEM_UAPI_AT(xpmem_ext_query, flags, 0);
XPMEM_UAPI_AT(xpmem_ext_query, abi_version, 4);
XPMEM_UAPI_AT(xpmem_ext_query, module_version, 8);
XPMEM_UAPI_AT(xpmem_ext_query, fault_window_pages, 12);
XPMEM_UAPI_AT(xpmem_ext_query, features, 16);
XPMEM_UAPI_AT(xpmem_ext_query, commands, 24);
XPMEM_UAPI_AT(xpmem_ext_query, max_segments, 32);
XPMEM_UAPI_AT(xpmem_ext_query, max_permits, 36);
XPMEM_UAPI_AT(xpmem_ext_query, max_attachments, 40);
XPMEM_UAPI_AT(xpmem_ext_query, reserved0, 44);
XPMEM_UAPI_AT(xpmem_ext_query, reserved, 48);
XPMEM_UAPI_SIZE(xpmem_ext_query, 80);
XPMEM_UAPI_AT(xpmem_ext_attach, apid, 0);
XPMEM_UAPI_AT(xpmem_ext_attach, offset, 8);
XPMEM_UAPI_AT(xpmem_ext_attach, size, 16);
XPMEM_UAPI_AT(xpmem_ext_attach, vaddr, 24);
XPMEM_UAPI_AT(xpmem_ext_attach, flags, 32);
XPMEM_UAPI_AT(xpmem_ext_attach, reserved0, 36);
XPMEM_UAPI_AT(xpmem_ext_attach, reserved, 40);
XPMEM_UAPI_SIZE(xpmem_ext_attach, 64);
XPMEM_UAPI_AT(xpmem_ext_make, vaddr, 0);
XPMEM_UAPI_AT(xpmem_ext_make, size, 8);
XPMEM_UAPI_AT(xpmem_ext_make, flags, 16);
XPMEM_UAPI_AT(xpmem_ext_make, mode, 20);
XPMEM_UAPI_AT(xpmem_ext_make, key_len, 24);
XPMEM_UAPI_AT(xpmem_ext_make, auth_len, 28);
XPMEM_UAPI_AT(xpmem_ext_make, key, 32);
XPMEM_UAPI_AT(xpmem_ext_make, auth, 72);
XPMEM_UAPI_AT(xpmem_ext_make, segid, 136);
XPMEM_UAPI_AT(xpmem_ext_make, reserved, 144);
XPMEM_UAPI_SIZE(xpmem_ext_make, 160);
XPMEM_UAPI_AT(xpmem_ext_get, segid, 0);
XPMEM_UAPI_AT(xpmem_ext_get, flags, 8);
XPMEM_UAPI_AT(xpmem_ext_get, key_len, 12);
XPMEM_UAPI_AT(xpmem_ext_get, auth_len, 16);
XPMEM_UAPI_AT(xpmem_ext_get, reserved0, 20);
XPMEM_UAPI_AT(xpmem_ext_get, key, 24);
XPMEM_UAPI_AT(xpmem_ext_get, auth, 64);
XPMEM_UAPI_AT(xpmem_ext_get, apid, 128);
XPMEM_UAPI_AT(xpmem_ext_get, reserved, 136);
XPMEM_UAPI_SIZE(xpmem_ext_get, 152);
XPMEM_UAPI_AT(xpmem_ext_iov, base, 0);
XPMEM_UAPI_AT(xpmem_ext_iov, len, 8);
XPMEM_UAPI_SIZE(xpmem_ext_iov, 16);
XPMEM_UAPI_AT(xpmem_ext_copy, apid, 0);
XPMEM_UAPI_AT(xpmem_ext_copy, offset, 8);
XPMEM_UAPI_AT(xpmem_ext_copy, addr, 16);
XPMEM_UAPI_AT(xpmem_ext_copy, len, 24);
XPMEM_UAPI_AT(xpmem_ext_copy, flags, 32);
XPMEM_UAPI_AT(xpmem_ext_copy, reserved0, 36);
XPMEM_UAPI_AT(xpmem_ext_copy, reserved, 40);
XPMEM_UAPI_SIZE(xpmem_ext_copy, 64);
XPMEM_UAPI_AT(xpmem_ext_populate, vaddr, 0);
XPMEM_UAPI_AT(xpmem_ext_populate, len, 8);
XPMEM_UAPI_AT(xpmem_ext_populate, flags, 16);
XPMEM_UAPI_AT(xpmem_ext_populate, reserved0, 20);
XPMEM_UAPI_AT(xpmem_ext_populate, reserved, 24);
XPMEM_UAPI_SIZE(xpmem_ext_populate, 40);
XPMEM_UAPI_AT(xpmem_ext_uring_cmd, arg, 0);
XPMEM_UAPI_AT(xpmem_ext_uring_cmd, reserved, 8);
XPMEM_UAPI_SIZE(xpmem_ext_uring_cmd, 16);

#if defined(__x86_64__) || defined(__aarch64__)
XPMEM_UAPI_CMD(XPMEM_CMD_VERSION, 0x7800);
XPMEM_UAPI_CMD(XPMEM_CMD_MAKE, 0x7801);
XPMEM_UAPI_CMD(XPMEM_CMD_REMOVE, 0x7802);
XPMEM_UAPI_CMD(XPMEM_CMD_GET, 0x7803);
XPMEM_UAPI_CMD(XPMEM_CMD_RELEASE, 0x7804);
XPMEM_UAPI_CMD(XPMEM_CMD_ATTACH, 0x7805);
XPMEM_UAPI_CMD(XPMEM_CMD_DETACH, 0x7806);
XPMEM_UAPI_CMD(XPMEM_CMD_FORK_BEGIN, 0x7807);
XPMEM_UAPI_CMD(XPMEM_CMD_FORK_END, 0x7808);
XPMEM_UAPI_CMD(XPMEM_CMD_EXT_QUERY, 0xc0507820U);
XPMEM_UAPI_CMD(XPMEM_CMD_EXT_ATTACH, 0xc0407821U);
XPMEM_UAPI_CMD(XPMEM_CMD_EXT_MAKE, 0xc0a07822U);
XPMEM_UAPI_CMD(XPMEM_CMD_EXT_GET, 0xc0987823U);
XPMEM_UAPI_CMD(XPMEM_CMD_EXT_COPY, 0xc0407824U);
XPMEM_UAPI_CMD(XPMEM_CMD_EXT_POPULATE, 0xc0287825U);
#endif

#undef XPMEM_UAPI_AT
#undef XPMEM_UAPI_SIZE
#undef XPMEM_UAPI_CMD
#endif /* XPMEM_UAPI_LAYOUT_CHECKS */

#endif /* _XPMEM_UAPI_H */
