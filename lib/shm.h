/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * shm.h - declarations shared by the files of the POSIX shared-memory
 * backend; the cross-process layouts are in shm_wire.h.
 *
 * Files, each calling only those listed before it:
 *
 *   shm_object.c    ids, socket names, object creation, copying
 *   shm_perm.c      the SysV permission check, for both sides
 *   shm_registry.c  the owner's state, its registry memfd and slots
 *   shm_backing.c   backings: migration in place and the allocator
 *   shm_answer.c    what the owner answers a lookup (grants, verdicts)
 *   shm_server.c    segment sockets and the accept thread
 *   shm_owner.c     make, remove, free, fork (the owner's entry points)
 *   shm_proc.c      reading an owner's registry through /proc
 *   shm_lookup.c    finding a segment's owner: both ways, and by key
 *   shm_event.c     the event descriptor: an epoll set of segments' bells
 *   shm_peer.c      permits, attachments, copies, events (the peer's
 *                   entry points)
 *   shm.c           the backend's operation table and fork handlers
 *
 * Locks: the owner lock (struct shm_owner) protects all owner state; the
 * peer lock (shm_peer.c) the permits and attachments; the lookup lock
 * (shm_proc.c) its caches.  None is taken while another is held.
 */
#ifndef _XPMEM_SHM_H
#define _XPMEM_SHM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "shm_wire.h"
#include "xpmem_lib.h"

/* Segments per owner: at most half the slots, so a draw finds a free one
 * with probability >= 1/2. */
#define SHM_REG_MAX_SEGS	(SHM_REG_SLOTS / 2)

/* Default directory for objects, overridden by XPMEM_SHM_DIR. */
#define SHM_DEFAULT_DIR		"/dev/shm"
/* Huge pages: 2 MiB ones, asked for by size (XPMEM_LIB_HUGE_2MB_FLAG). */
#define SHM_HUGE_PAGE		(2UL << 20)

/* atfork phases */
#define SHM_FORK_PREPARE	0
#define SHM_FORK_PARENT		1
#define SHM_FORK_CHILD		2

/* ---- shm_object.c ------------------------------------------------------- */

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
int xpmem_lib_shm_reopen_rdonly(int fd);

/* ---- shm_perm.c --------------------------------------------------------- */

/* Whose access a permit mode is checked for. */
struct shm_cred {
	uid_t uid;		/* effective */
	gid_t gid;		/* effective */
	const gid_t *groups;	/* supplementary groups */
	int ngroups;
	int ipc_owner;		/* CAP_IPC_OWNER: the mode bits do not apply */
};

enum shm_access xpmem_lib_shm_mode_access(const struct shm_reg_slot *s,
					  const struct shm_cred *who);
/* This process's credentials; @buf holds up to @n supplementary groups. */
void xpmem_lib_shm_self_cred(struct shm_cred *who, gid_t *buf, int n);

/* ---- owner side --------------------------------------------------------- */

enum shm_backing_kind { BACKING_ALLOC, BACKING_MIGRATED, BACKING_VECTOR };

/* One owner range of a migrated backing, at object offset @off. */
struct shm_piece {
	char *addr;
	size_t size;
	size_t off;
};

/* Memory that sits on one shared object (shm_backing.c). */
struct shm_backing {
	struct shm_backing *next;
	char *addr;
	size_t size;
	size_t used;		/* bytes asked for, page-rounded */
	size_t page;		/* page size of the object */
	int fd;
	int rofd;		/* read-only reopen for other uids, or -1 */
	dev_t dev;
	ino_t ino;
	enum shm_backing_kind kind;
	struct shm_piece *pieces;	/* BACKING_VECTOR: npieces ranges */
	unsigned int npieces;
	unsigned int nsegs;
	unsigned int mode;	/* union of the modes of its segments */
};

/* A live segment of this process (shm_owner.c). */
struct shm_segment {
	struct shm_segment *next;
	xpmem_segid_t segid;
	unsigned int slot;
	int sock;		/* listening on the segid's abstract name */
	int key_sock;		/* listening on its key's name, or -1 */
	int bell;		/* write end of its bell pipe (shm_wire.h) */
	int bell_r;		/* its read end, for grants to other uids */
	struct shm_backing *b;
	struct shm_reg_slot info;	/* what its registry slot says */
	uint32_t auth_len;		/* 0: no authorization key */
	uint8_t auth[XPMEM_EXT_AUTH_MAX];	/* zero past auth_len */
};

/* The owner side's state, all under @lock (shm_registry.c). */
struct shm_owner {
	pthread_mutex_t lock;
	struct shm_segment *segments;
	unsigned int nsegments;
	struct shm_segment *slot_seg[SHM_REG_SLOTS];	/* segment per slot */
	int reg_fd;			/* the registry, or -1 */
	pid_t reg_pid;			/* process the registry belongs to */
	int reg_rofd;			/* read-only reopen, for other uids */
	uint64_t reg_dev, reg_ino;	/* the registry's inode */
};

/* shm_registry.c */
extern struct shm_owner xpmem_lib_shm_owner;
int xpmem_lib_shm_registry_create_locked(void);
int xpmem_lib_shm_slot_write(unsigned int slot, const struct shm_reg_slot *s);
void xpmem_lib_shm_slot_clear(unsigned int slot);
struct shm_segment *xpmem_lib_shm_segment_locked(uint64_t segid);
void xpmem_lib_shm_registry_reset_in_child(void);

/* shm_backing.c */
int xpmem_lib_shm_pieces(const struct iovec *iov, int n,
			 struct shm_piece **pc, size_t *total);
int xpmem_lib_shm_backing_get_locked(struct shm_piece **pc, int n,
				     size_t total, struct shm_backing **b,
				     size_t *boff);
void xpmem_lib_shm_backing_put_locked(struct shm_backing *b);
struct shm_backing *xpmem_lib_shm_backing_alloc_locked(void *addr);
void xpmem_lib_shm_backing_free_locked(struct shm_backing *b);
int xpmem_lib_shm_alloc(size_t size, unsigned int flags, void **addr);
void xpmem_lib_shm_backings_reset_in_child(void);

/* shm_answer.c */
int xpmem_lib_shm_grant_fds_open_locked(struct shm_backing *b);
void xpmem_lib_shm_answer_locked(struct shm_segment *seg, int c);
void xpmem_lib_shm_answer_auth_locked(struct shm_segment *seg, int c,
				      const struct shm_auth *a);
void xpmem_lib_shm_answer_removed(int c, uint64_t segid);
void xpmem_lib_shm_answer_key(const struct shm_segment *seg, int c);

/* shm_server.c */
int xpmem_lib_shm_server_start_locked(void);
int xpmem_lib_shm_segment_listen_locked(struct shm_segment *seg);
int xpmem_lib_shm_segment_key_listen_locked(struct shm_segment *seg,
					    const void *key, size_t key_len);
void xpmem_lib_shm_segment_unlisten_locked(struct shm_segment *seg);
void xpmem_lib_shm_server_reset_in_child(void);

/* shm_owner.c */
int xpmem_lib_shm_make(const struct xpmem_lib_make_req *req,
		       xpmem_segid_t *segid);
int xpmem_lib_shm_remove(xpmem_segid_t segid);
int xpmem_lib_shm_free(void *addr);
void xpmem_lib_shm_owner_atfork(int phase);

/* ---- peer side ---------------------------------------------------------- */

/* A permit of this process (shm_peer.c); the lookup fills its files. */
struct shm_permit {
	struct shm_permit *next;
	xpmem_apid_t apid;
	xpmem_segid_t segid;
	int flags;		/* XPMEM_RDONLY or XPMEM_RDWR */
	int procfd;		/* /proc/<owner pid>; -1: from the owner */
	int regfd;
	int regfd_owner;	/* registry's fd number in the owner, or -1 */
	int objfd;
	unsigned int slot;
	uint64_t offset;	/* segment start in the object */
	uint64_t size;
	uint64_t page;
	int bellfd;		/* the segment's bell, read end, or -1 */
	int ev;			/* XPMEM_EXT_EVENT_* found, 0, or -1: taken */
	struct shm_permit *ev_next;	/* events found, in end order */
};

/* shm_proc.c */
int xpmem_lib_shm_read_slot(int regfd, unsigned int slot,
			    struct shm_reg_slot *s);
int xpmem_lib_shm_registry_valid(int regfd);
int xpmem_lib_shm_registry_holds(int regfd, xpmem_segid_t segid,
				 struct shm_reg_slot *s);
int xpmem_lib_shm_registry_owned(int regfd);
void xpmem_lib_shm_bell_open(struct shm_permit *p,
			     const struct shm_reg_slot *s);
int xpmem_lib_shm_get_through_proc(struct shm_permit *p, xpmem_segid_t segid,
				   int flags, pid_t pid,
				   struct shm_reg_slot *s);
void xpmem_lib_shm_lookup_atfork(int phase);

/* shm_lookup.c */
int xpmem_lib_shm_lookup(struct shm_permit *p,
			 const struct xpmem_lib_get_req *req,
			 struct shm_reg_slot *s);
int xpmem_lib_shm_lookup_key(const struct xpmem_lib_get_req *req,
			     xpmem_segid_t *segid);

/* shm_event.c (under the peer lock) */
int xpmem_lib_shm_event_open_locked(void);
int xpmem_lib_shm_event_active_locked(void);
void xpmem_lib_shm_event_watch_locked(int bellfd, void *tag);
void xpmem_lib_shm_event_unwatch_locked(int bellfd);
int xpmem_lib_shm_event_rung_locked(void **tags, int max);
void xpmem_lib_shm_event_drain_locked(void);
void xpmem_lib_shm_event_more_locked(void);
void xpmem_lib_shm_event_reset_in_child(void);

/* shm_peer.c */
int xpmem_lib_shm_get(const struct xpmem_lib_get_req *req, xpmem_apid_t *apid,
		      xpmem_segid_t *segid);
int xpmem_lib_shm_release(xpmem_apid_t apid);
int xpmem_lib_shm_attach(xpmem_apid_t apid, off_t offset, size_t size,
			 void *vaddr, unsigned int flags, void **addr);
int xpmem_lib_shm_detach(void *vaddr);
ssize_t xpmem_lib_shm_copy(const struct xpmem_ext_copy *c);
int xpmem_lib_shm_populate(void *addr, size_t len, unsigned int flags);
int xpmem_lib_shm_prep(struct io_uring_sqe *sqe, unsigned int op,
		       const void *arg, int buf_index);
int xpmem_lib_shm_event_fd(void);
int xpmem_lib_shm_events(struct xpmem_ext_event *ev, unsigned int max);
void xpmem_lib_shm_peer_atfork(int phase);

#endif /* _XPMEM_SHM_H */
