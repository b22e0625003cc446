/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * shm_wire.h - what processes of the shm backend read of each other: the
 * registry memfd, the segment and key socket names, and the messages on
 * those sockets (authorization request, key answer, grant).  Fixed-width
 * fields only; a layout change changes its magic.  The library and
 * tools/cli/registry.c (which lists registries) include it; it declares no
 * function of the library.
 *
 * Invariants: a segment lives in registry slot segid % SHM_REG_SLOTS, and
 * a slot's segid is written after its body (segid 0: free); the owner
 * holds an OFD write lock on the registry header while its registry
 * descriptor is open; a grant carries exactly shm_grant_fds(access)
 * descriptors.  docs/library.md tells the whole protocol.
 */
#ifndef _XPMEM_SHM_WIRE_H
#define _XPMEM_SHM_WIRE_H

#include <stdint.h>
#include <sys/types.h>

#include <xpmem.h>

#define SHM_REG_MAGIC		0x5845504d52454733ULL	/* "XEPMREG3" */
#define SHM_REG_NAME		"xpmem-registry"	/* memfd name */
#define SHM_REG_SLOTS		8192	/* slot = segid % SHM_REG_SLOTS */

/* Ids of this backend: SHM_ID_MARK | 46 random bits. */
#define SHM_ID_MARK		(1ULL << XPMEM_ID_BITS)
#define SHM_ID_RANDOM		XPMEM_ID_MAX
/* A segment's abstract socket: "\0xpmem-" and the segid in 12 hex digits. */
#define SHM_SOCK_PREFIX		"xpmem-"

/* Registry header at offset 0 of the registry memfd (64 bytes). */
struct shm_reg_header {
	uint64_t magic;
	int32_t pid;		/* owner pid as the owner sees it (for humans) */
	uint32_t nslots;
	uint64_t reserved[6];
};

/*
 * One segment (72 bytes), in slot segid % SHM_REG_SLOTS.  segid 0: free.
 * bell_fd is the write end of a pipe the owner holds while the segment
 * lives and closes right after clearing the slot (the kernel closes it
 * when the owner exits): a peer that opened the pipe for reading through
 * /proc/<owner>/fd/<bell_fd> sees POLLHUP then.
 */
struct shm_reg_slot {
	uint64_t segid;
	int32_t obj_fd;		/* object fd in the owner */
	uint32_t mode;		/* permit mode, 0777-style */
	uint32_t uid;		/* owner's euid at make time */
	uint32_t gid;		/* owner's egid at make time */
	uint32_t page_size;	/* object page size (attach alignment) */
	uint32_t flags;		/* SHM_SLOT_* */
	uint64_t obj_dev;
	uint64_t obj_ino;
	uint64_t offset;	/* segment start in the object */
	uint64_t size;		/* segment size */
	int32_t bell_fd;	/* the segment's bell (a pipe) in the owner */
	uint32_t reserved;	/* 0 */
};

/* struct shm_reg_slot.flags */
#define SHM_SLOT_RDONLY		0x1U	/* XPMEM_EXT_MAKE_RDONLY: no RDWR gets */
#define SHM_SLOT_AUTH		0x2U	/* gets present an authorization key */

/*
 * Authorization keys.  The owner keeps a segment's key in its own memory
 * (the registry only says SHM_SLOT_AUTH).  A peer of this library writes
 * one struct shm_auth on the segment's socket right after connecting,
 * with the key it presents (len 0: none).  For a segment without a key
 * the owner answers as always and never reads it; for one with a key it
 * reads it first (waiting SHM_AUTH_WAIT_MS at most, without holding up
 * other connections) and answers a missing or wrong key with a refusal
 * (SHM_LIMIT_AUTH), a right one as usual, and a right one from a peer of
 * its own uid or root (who read /proc) with a struct shm_grant of access
 * NONE and error 0: go ahead.  Peers that do not present a key, or
 * present one to a segment without, refuse themselves when they read the
 * slot (EACCES), as the module does; only peers of another uid are bound
 * by more than this library's word (they need the owner's descriptors).
 */
#define SHM_AUTH_MAGIC		0x5850414d41555448ULL	/* "XPAMAUTH" */
#define SHM_AUTH_WAIT_MS	2000

struct shm_auth {
	uint64_t magic;		/* SHM_AUTH_MAGIC */
	uint64_t segid;
	uint32_t len;		/* 0..XPMEM_EXT_AUTH_MAX */
	uint32_t reserved;	/* 0 */
	uint8_t key[XPMEM_EXT_AUTH_MAX];	/* zero past len */
};

/*
 * Requested keys (xpmem_ext_make()).  A key names a segment through a
 * second abstract socket of the owner, "\0xpmem-key-" and the key in hex,
 * so it is unique in the network namespace (bind: EADDRINUSE is EEXIST)
 * and gone with the owner.  The owner's accept thread answers every
 * connection there, whoever connects (keys are names, not secrets), with
 * one struct shm_key_answer; the peer then gets the segid as usual.
 */
#define SHM_KEY_PREFIX		"xpmem-key-"
#define SHM_KEY_MAGIC		0x58504d4b45594e4dULL	/* "XPMKEYNM" */

struct shm_key_answer {
	uint64_t magic;		/* SHM_KEY_MAGIC */
	uint64_t segid;
};

_Static_assert(sizeof(struct shm_reg_header) == 64, "registry header size");
_Static_assert(sizeof(struct shm_reg_slot) == 72, "registry slot size");

#define SHM_REG_SIZE	(sizeof(struct shm_reg_header) + \
			 SHM_REG_SLOTS * sizeof(struct shm_reg_slot))

/*
 * The owner holds an OFD write lock on these bytes of its registry for as
 * long as its registry descriptor is open (exit, kill -9 and exec drop it).
 */
#define SHM_REG_LOCK_START	0
#define SHM_REG_LOCK_LEN	((off_t)sizeof(struct shm_reg_header))

/*
 * The owner's answer to a lookup by a peer of another uid: one message of
 * exactly sizeof(struct shm_grant) bytes on the accepted connection, with
 * shm_grant_fds(access) descriptors in one SCM_RIGHTS: [0] the registry,
 * read-only; [1] the object, read-only; [2] the object, read-write (only
 * for SHM_ACCESS_RDWR); last, the segment's bell, read end (a peer of
 * another uid cannot open it through /proc).  seg is the segment's
 * registry slot as the owner wrote it, which the peer compares with the
 * slot itself; a refusal fills only seg.segid (and, for a key, its mode,
 * uid and gid).
 *
 * The magic is the wire version: a peer that receives the grant magic of
 * the previous layout (SHM_GRANT_MAGIC_OLD) refuses the get with EPROTO.
 */
#define SHM_GRANT_MAGIC		0x5850474d47524234ULL	/* "XPGMGRB4" */
#define SHM_GRANT_MAGIC_OLD	0x5850474d47524233ULL	/* "XPGMGRB3" */

enum shm_access {
	SHM_ACCESS_NONE = 0,
	SHM_ACCESS_READ = 1,
	SHM_ACCESS_RDWR = 2,
};

/* Why a grant gives less than the peer asked for (log text only). */
enum shm_grant_limit {
	SHM_LIMIT_NONE = 0,
	SHM_LIMIT_MODE = 1,	/* the permit mode */
	SHM_LIMIT_SPAN = 2,	/* the object holds memory shared less */
	SHM_LIMIT_OWNER = 3,	/* the owner could not send descriptors */
	SHM_LIMIT_AUTH = 4,	/* a missing or wrong authorization key */
};

struct shm_grant {
	uint64_t magic;		/* SHM_GRANT_MAGIC */
	int32_t error;		/* 0, or a refusal's positive errno */
	uint32_t access;	/* enum shm_access: which descriptors follow */
	uint32_t limit;		/* enum shm_grant_limit */
	uint32_t slot;		/* segid % SHM_REG_SLOTS */
	uint64_t reg_dev;	/* the registry's inode */
	uint64_t reg_ino;
	struct shm_reg_slot seg;	/* the segment's registry slot */
};

_Static_assert(sizeof(struct shm_grant) == 112, "grant size");
_Static_assert(sizeof(struct shm_auth) == 88, "auth size");

/* Descriptors that come with a grant of @access. */
static inline int shm_grant_fds(uint32_t access)
{
	return access == SHM_ACCESS_RDWR ? 4 :
	       access == SHM_ACCESS_READ ? 3 : 0;
}
#define SHM_GRANT_MAX_FDS	4

static inline off_t shm_slot_pos(unsigned int slot)
{
	return (off_t)(sizeof(struct shm_reg_header) +
		       slot * sizeof(struct shm_reg_slot));
}

#endif /* _XPMEM_SHM_WIRE_H */
