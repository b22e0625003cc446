/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * shm.h - private declarations of the POSIX shared-memory backend.
 *
 * Objects.  Exportable memory lives in shared objects: files created with
 * O_CREAT|O_EXCL under an unguessable name in $XPMEM_SHM_DIR (default
 * /dev/shm) and unlinked at once, or hugetlb memfds.  The owner keeps each
 * object open; peers reach it through /proc/<owner>/fd/<fd>, so nothing is
 * ever left in the directory, even after kill -9.
 *
 * Registry.  Each owner process has one registry: a memfd holding a header
 * and a table of segment slots (object fd, inode, offset, size, mode,
 * creator credentials).  A segid names the registry and the slot:
 *
 *   bit  63     0 (segids are positive)
 *   bit  62     1 (marks a segid of this backend)
 *   bits 50-61  12 random bits, also stored in the slot (stale-id check)
 *   bits 38-49  slot index (chosen at random among the free ones)
 *   bits 22-37  registry fd in the owner
 *   bits  0-21  owner pid (pid_max is at most 2^22)
 *
 * A peer opens /proc/<pid>/fd/<registry fd>, checks the header says the
 * registry belongs to <pid> in the PID namespace that /proc/<pid> is in,
 * checks the slot's random bits, then opens the object the same way and
 * compares its inode with the slot.  Any mismatch is ENOENT: a stale,
 * reused or foreign-namespace pid is never silently mis-resolved.
 */
#ifndef _XPMEM_SHM_H
#define _XPMEM_SHM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpmem_lib.h"

#define SHM_REG_MAGIC		0x5845504d52454731ULL	/* "XEPMREG1" */
#define SHM_REG_SLOTS		4096	/* segments per owner process */

#define SHM_SEGID_MARK		(1ULL << 62)
#define SHM_SEGID_PID_BITS	22
#define SHM_SEGID_FD_BITS	16
#define SHM_SEGID_SLOT_BITS	12
#define SHM_SEGID_TAG_BITS	12
#define SHM_SEGID_FD_SHIFT	SHM_SEGID_PID_BITS
#define SHM_SEGID_SLOT_SHIFT	(SHM_SEGID_FD_SHIFT + SHM_SEGID_FD_BITS)
#define SHM_SEGID_TAG_SHIFT	(SHM_SEGID_SLOT_SHIFT + SHM_SEGID_SLOT_BITS)
#define SHM_SLOT_USED		0x80000000U	/* in shm_reg_slot.tag */

/* Default directory for objects, overridden by XPMEM_SHM_DIR. */
#define SHM_DEFAULT_DIR		"/dev/shm"
#define SHM_HUGE_PAGE		(2UL << 20)

/* Registry header at offset 0 of the registry memfd (64 bytes). */
struct shm_reg_header {
	uint64_t magic;
	int32_t pid;		/* owner pid as the owner sees it */
	uint32_t nslots;
	uint64_t pidns_dev;	/* owner's /proc/self/ns/pid */
	uint64_t pidns_ino;
	uint64_t reserved[4];
};

/* One segment (64 bytes).  tag == 0: free. */
struct shm_reg_slot {
	uint32_t tag;		/* SHM_SLOT_USED | 12 random bits */
	int32_t obj_fd;		/* object fd in the owner */
	uint32_t mode;		/* permit mode, 0777-style */
	uint32_t uid;		/* owner's euid at make time */
	uint32_t gid;		/* owner's egid at make time */
	uint32_t reserved;
	uint64_t obj_dev;
	uint64_t obj_ino;
	uint64_t offset;	/* segment start in the object */
	uint64_t size;		/* segment size */
	uint64_t page_size;	/* object page size (attach alignment) */
};

_Static_assert(sizeof(struct shm_reg_header) == 64, "registry header size");
_Static_assert(sizeof(struct shm_reg_slot) == 64, "registry slot size");

#define SHM_REG_SIZE	(sizeof(struct shm_reg_header) + \
			 SHM_REG_SLOTS * sizeof(struct shm_reg_slot))

static inline off_t shm_slot_pos(unsigned int slot)
{
	return (off_t)(sizeof(struct shm_reg_header) +
		       slot * sizeof(struct shm_reg_slot));
}

/* Decoded segid. */
struct shm_segid {
	pid_t pid;
	int regfd;
	unsigned int slot;
	unsigned int tag;	/* 12 bits */
};

xpmem_segid_t xpmem_lib_shm_segid_encode(const struct shm_segid *s);
int xpmem_lib_shm_segid_decode(xpmem_segid_t segid, struct shm_segid *s);

/* shm_object.c */
int xpmem_lib_shm_object_create(size_t size, int *fd);
int xpmem_lib_shm_huge_create(size_t size, int *fd);
void xpmem_lib_shm_copy_nonzero(void *dst, const void *src, size_t size);

/* shm_owner.c */
int xpmem_lib_shm_make(void *vaddr, size_t size, int mode,
		       xpmem_segid_t *segid);
int xpmem_lib_shm_remove(xpmem_segid_t segid);
int xpmem_lib_shm_alloc(size_t size, unsigned int flags, void **addr);
int xpmem_lib_shm_free(void *addr);
void xpmem_lib_shm_owner_atfork(int phase);

/* shm_peer.c */
int xpmem_lib_shm_get(xpmem_segid_t segid, int flags, xpmem_apid_t *apid);
int xpmem_lib_shm_release(xpmem_apid_t apid);
int xpmem_lib_shm_attach(xpmem_apid_t apid, off_t offset, size_t size,
			 void *vaddr, void **addr);
int xpmem_lib_shm_detach(void *vaddr);
void xpmem_lib_shm_peer_atfork(int phase);

/* atfork phases */
#define SHM_FORK_PREPARE	0
#define SHM_FORK_PARENT		1
#define SHM_FORK_CHILD		2

#endif /* _XPMEM_SHM_H */
