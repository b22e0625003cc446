// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_registry.c - the owner side's state and its registry: the memfd
 * named SHM_REG_NAME that peers find among /proc/<pid>/fd, one slot per
 * live segment (shm_wire.h).
 *
 * Invariants, under xpmem_lib_shm_owner.lock: slot_seg[i] is the live
 * segment whose registry slot is i, or NULL; a slot's body is written
 * before its segid, so a peer never sees a segid on a stale body; the
 * registry's OFD write lock is held on our own descriptor for as long as
 * it is open (exit, exec and the child's close after fork drop it), and
 * never on the read-only copies sent to peers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm.h"

struct shm_owner xpmem_lib_shm_owner = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.reg_fd = -1,
	.reg_rofd = -1,
};

static struct shm_owner *const own = &xpmem_lib_shm_owner;

/**
 * xpmem_lib_shm_registry_create_locked - this process's registry: a memfd
 * of SHM_REG_SIZE bytes with its header, mode 0644, write-locked.
 *
 * Return: 0 or -errno.
 */
int xpmem_lib_shm_registry_create_locked(void)
{
	struct shm_reg_header hdr = { .magic = SHM_REG_MAGIC };
	struct flock lk = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = SHM_REG_LOCK_START,
		.l_len = SHM_REG_LOCK_LEN,
	};
	struct stat st;
	int fd, ret;

	/* Peers find it by this name among /proc/<pid>/fd (shm_proc.c). */
	fd = memfd_create(SHM_REG_NAME, MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	hdr.pid = getpid();
	hdr.nslots = SHM_REG_SLOTS;
	/*
	 * The lock lives as long as this open file description: it goes at
	 * exit and exec (close-on-exec), and fork children close their copy.
	 */
	if (ftruncate(fd, (off_t)SHM_REG_SIZE) != 0 ||
	    pwrite(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    fchmod(fd, 0644) != 0 || fcntl(fd, F_OFD_SETLK, &lk) != 0 ||
	    fstat(fd, &st) != 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	own->reg_fd = fd;
	own->reg_pid = hdr.pid;
	own->reg_dev = st.st_dev;
	own->reg_ino = st.st_ino;
	memset(own->slot_seg, 0, sizeof(own->slot_seg));
	own->nsegments = 0;
	return 0;
}

/* Publish @s in registry slot @slot: body first, segid last. */
int xpmem_lib_shm_slot_write(unsigned int slot, const struct shm_reg_slot *s)
{
	if (pwrite(own->reg_fd, (const char *)s + sizeof(s->segid),
		   sizeof(*s) - sizeof(s->segid),
		   shm_slot_pos(slot) + (off_t)sizeof(s->segid)) < 0)
		return -errno;
	if (pwrite(own->reg_fd, &s->segid, sizeof(s->segid),
		   shm_slot_pos(slot)) < 0)
		return -errno;
	return 0;
}

/* Free registry slot @slot (its segid 0): peers no longer find it. */
void xpmem_lib_shm_slot_clear(unsigned int slot)
{
	uint64_t zero = 0;

	if (pwrite(own->reg_fd, &zero, sizeof(zero), shm_slot_pos(slot)) < 0)
		xpmem_lib_log("cannot clear registry slot %u: %s", slot,
			      strerror(errno));
}

/* The live segment @segid of this process, or NULL. */
struct shm_segment *xpmem_lib_shm_segment_locked(uint64_t segid)
{
	struct shm_segment *seg;

	seg = own->slot_seg[xpmem_lib_shm_slot_of((xpmem_segid_t)segid)];
	return seg && (uint64_t)seg->segid == segid ? seg : NULL;
}

/*
 * In a fork child: the registry is the parent's (our descriptor shares
 * its open file description), so close it without touching it.
 */
void xpmem_lib_shm_registry_reset_in_child(void)
{
	if (own->reg_fd >= 0)
		close(own->reg_fd);
	if (own->reg_rofd >= 0)
		close(own->reg_rofd);
	own->reg_fd = own->reg_rofd = -1;
	own->reg_pid = 0;
	own->nsegments = 0;
	memset(own->slot_seg, 0, sizeof(own->slot_seg));
}
