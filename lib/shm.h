/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * shm.h - private declarations of the POSIX shared-memory backend.
 *
 * Objects.  Exportable memory lives in shared objects: files created with
 * O_CREAT|O_EXCL under an unguessable name in $XPMEM_SHM_DIR (default
 * /dev/shm) and unlinked at once, or hugetlb memfds.  The owner keeps each
 * object open; peers of its uid reach it through /proc/<owner>/fd/<fd>,
 * peers of other uids receive descriptors from the owner (below), so
 * nothing is ever left in the directory, even after kill -9.
 *
 * Ids.  Segids and apids of this backend are bit XPMEM_ID_BITS (46) plus 46
 * random bits: positive, at most 12 hex digits, never 0 or -1, and apart
 * from the kernel's ids (1 .. 2^46 - 1).  An apid is only a key into the
 * peer's own permit list.  A segid names a live segment through an
 * abstract unix socket "\0xpmem-<segid in 12 hex digits>" that the owner
 * binds and listens on for as long as the segment exists: bind() failing
 * with EADDRINUSE means the id is taken in this network namespace (draw
 * again), and the kernel removes the name when the owner dies.
 *
 * Registry.  Each owner process has one registry: a memfd named
 * SHM_REG_NAME holding a header and a table of segment slots (segid,
 * object fd, inode, offset, size, mode, creator credentials).  A segment
 * lives in slot segid % SHM_REG_SLOTS; the owner draws segids until that
 * slot is free, and keeps the table at most half full.
 *
 * Lookup (xpmem_get).  The peer connects to the segid's socket and reads
 * SO_PEERCRED: the owner's pid, as the peer's PID namespace numbers it.
 * It finds the registry among /proc/<pid>/fd by its memfd name (and
 * remembers where, per owner), reads the one slot, checks that it holds
 * this segid, checks the permit mode, opens the object and compares its
 * inode with the slot.  The owner never has to run for this: a helper
 * thread only accepts and closes those connections so that the listen
 * queue never fills (shm_owner.c).
 *
 * Peers of another uid cannot read /proc/<owner>/fd (that needs ptrace
 * access).  For them the owner's helper thread answers on the accepted
 * connection itself: it checks the peer's credentials (SO_PEERCRED,
 * SO_PEERGROUPS) against the permit mode and sends one struct shm_grant
 * with SCM_RIGHTS: read-only descriptors of the registry and of the
 * object and, when the mode lets that peer write, the object's read-write
 * descriptor; or no descriptor and the errno of the refusal.  Root and
 * peers of the owner's euid get no answer (they use /proc).  While the
 * owner holds its registry open it holds an OFD write lock on the
 * registry header; a peer with a read-only descriptor cannot take one, so
 * a lock found there (F_OFD_GETLK) means the owner still runs and has not
 * exec'd.
 */
#ifndef _XPMEM_SHM_H
#define _XPMEM_SHM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "xpmem_lib.h"

#define SHM_REG_MAGIC		0x5845504d52454732ULL	/* "XEPMREG2" */
#define SHM_REG_NAME		"xpmem-registry"	/* memfd name */
#define SHM_REG_SLOTS		8192	/* slot = segid % SHM_REG_SLOTS */
#define SHM_REG_MAX_SEGS	(SHM_REG_SLOTS / 2)	/* segments per owner */

/* Ids of this backend: SHM_ID_MARK | 46 random bits. */
#define SHM_ID_MARK		(1ULL << XPMEM_ID_BITS)
#define SHM_ID_RANDOM		XPMEM_ID_MAX
/* A segment's abstract socket: "\0xpmem-" and the segid in 12 hex digits. */
#define SHM_SOCK_PREFIX		"xpmem-"

/* Default directory for objects, overridden by XPMEM_SHM_DIR. */
#define SHM_DEFAULT_DIR		"/dev/shm"
#define SHM_HUGE_PAGE		(2UL << 20)

/* Registry header at offset 0 of the registry memfd (64 bytes). */
struct shm_reg_header {
	uint64_t magic;
	int32_t pid;		/* owner pid as the owner sees it (for humans) */
	uint32_t nslots;
	uint64_t reserved[6];
};

/* One segment (64 bytes), in slot segid % SHM_REG_SLOTS.  segid 0: free. */
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
_Static_assert(sizeof(struct shm_reg_slot) == 64, "registry slot size");

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
 * for SHM_ACCESS_RDWR).  The slot fields are those of the segment's
 * registry slot, which the peer compares with the slot itself.
 */
#define SHM_GRANT_MAGIC	0x5850474d4752414eULL	/* "XPGMGRAN" */

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
	uint64_t segid;
	int32_t error;		/* 0, or a refusal's positive errno */
	uint32_t access;	/* enum shm_access: which descriptors follow */
	uint32_t limit;		/* enum shm_grant_limit */
	uint32_t slot;		/* segid % SHM_REG_SLOTS */
	uint32_t mode;		/* permit mode */
	uint32_t uid;		/* owner's euid at make time */
	uint32_t gid;		/* owner's egid at make time */
	uint32_t page_size;	/* object page size */
	uint64_t offset;	/* segment start in the object */
	uint64_t size;		/* segment size */
	uint64_t obj_dev;
	uint64_t obj_ino;
	uint64_t reg_dev;
	uint64_t reg_ino;
};

_Static_assert(sizeof(struct shm_grant) == 96, "grant size");
_Static_assert(sizeof(struct shm_auth) == 88, "auth size");

/* Descriptors that come with a grant of @access. */
static inline int shm_grant_fds(uint32_t access)
{
	return access == SHM_ACCESS_RDWR ? 3 :
	       access == SHM_ACCESS_READ ? 2 : 0;
}
#define SHM_GRANT_MAX_FDS	3

static inline off_t shm_slot_pos(unsigned int slot)
{
	return (off_t)(sizeof(struct shm_reg_header) +
		       slot * sizeof(struct shm_reg_slot));
}

/* shm_object.c */
int xpmem_lib_shm_id_draw(uint64_t *id);
int xpmem_lib_shm_id_valid(int64_t id);
unsigned int xpmem_lib_shm_slot_of(xpmem_segid_t segid);
void xpmem_lib_shm_deadline(struct timespec *ts, int ms);
int xpmem_lib_shm_ms_left(const struct timespec *deadline);
socklen_t xpmem_lib_shm_sockaddr(xpmem_segid_t segid,
				 struct sockaddr_un *sun);
socklen_t xpmem_lib_shm_key_sockaddr(const void *key, size_t key_len,
				     struct sockaddr_un *sun);
int xpmem_lib_shm_object_create(size_t size, int *fd);
int xpmem_lib_shm_huge_create(size_t size, int *fd);
void xpmem_lib_shm_copy_nonzero(void *dst, const void *src, size_t size);

/* shm_owner.c */
/*
 * @n (1..XPMEM_EXT_MAKE_IOV_MAX) buffers at @iov as one segment; @key
 * and @auth NULL (and their lengths 0) or as xpmem_ext_make() takes them
 */
int xpmem_lib_shm_make(const struct iovec *iov, int n, int mode,
		       unsigned int flags, const void *key, size_t key_len,
		       const void *auth, size_t auth_len, xpmem_segid_t *segid);
int xpmem_lib_shm_remove(xpmem_segid_t segid);
int xpmem_lib_shm_alloc(size_t size, unsigned int flags, void **addr);
int xpmem_lib_shm_free(void *addr);
void xpmem_lib_shm_owner_atfork(int phase);

/* shm_peer.c */
/* @auth: the authorization key presented (@auth_len bytes), or NULL */
int xpmem_lib_shm_get(xpmem_segid_t segid, int flags, const void *auth,
		      size_t auth_len, xpmem_apid_t *apid);
int xpmem_lib_shm_get_key(const void *key, size_t key_len, int flags,
			  const void *auth, size_t auth_len, xpmem_apid_t *apid,
			  xpmem_segid_t *segid);
int xpmem_lib_shm_release(xpmem_apid_t apid);
int xpmem_lib_shm_attach(xpmem_apid_t apid, off_t offset, size_t size,
			 void *vaddr, unsigned int flags, void **addr);
int xpmem_lib_shm_detach(void *vaddr);
ssize_t xpmem_lib_shm_copy(const struct xpmem_ext_copy *c);
int xpmem_lib_shm_populate(void *addr, size_t len, unsigned int flags);
int xpmem_lib_shm_prep(struct io_uring_sqe *sqe, unsigned int op,
		       const void *arg, int buf_index);
void xpmem_lib_shm_peer_atfork(int phase);

/* atfork phases */
#define SHM_FORK_PREPARE	0
#define SHM_FORK_PARENT		1
#define SHM_FORK_CHILD		2

#endif /* _XPMEM_SHM_H */
