// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_owner.c - the owner's entry points: xpmem_make, xpmem_remove,
 * xpmem_ext_free and the fork handler.  A make puts the buffers on a
 * backing (shm_backing.c), gives the segment its sockets (shm_server.c)
 * and publishes it in the registry (shm_registry.c), in that order, and a
 * failure undoes the steps done; remove undoes them in reverse.
 *
 * Invariants, under the owner lock: a segment is in the list, in
 * slot_seg[] and in the registry, or in none of them; a backing's nsegs
 * counts its live segments; in a fork child nothing of the parent's
 * segments survives but allocator blocks (shared with the parent).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "shm.h"

static struct shm_owner *const own = &xpmem_lib_shm_owner;

/* ---- fork -------------------------------------------------------------- */

/*
 * In the child, segments belong to the parent: forget them without touching
 * the registry (the child's descriptor shares it with the parent), close
 * the child's copies of their sockets, give migrated ranges back their
 * private copy, keep allocator blocks.
 */
static void owner_reset_in_child(void)
{
	struct shm_segment *s, *snext;

	for (s = own->segments; s; s = snext) {
		snext = s->next;
		close(s->sock);
		close(s->bell);
		close(s->bell_r);
		if (s->key_sock >= 0)
			close(s->key_sock);
		explicit_bzero(s->auth, sizeof(s->auth));
		free(s);
	}
	xpmem_lib_shm_server_reset_in_child();
	own->segments = NULL;
	xpmem_lib_shm_backings_reset_in_child();
	xpmem_lib_shm_registry_reset_in_child();
}

void xpmem_lib_shm_owner_atfork(int phase)
{
	switch (phase) {
	case SHM_FORK_PREPARE:
		pthread_mutex_lock(&own->lock);
		break;
	case SHM_FORK_PARENT:
		pthread_mutex_unlock(&own->lock);
		break;
	case SHM_FORK_CHILD:
		owner_reset_in_child();
		pthread_mutex_unlock(&own->lock);
		break;
	}
}

/* ---- make -------------------------------------------------------------- */

/*
 * What every make needs first: this process's own registry (a child made
 * without fork()'s atfork handlers, by a raw clone, drops its parent's),
 * its accept thread, and room for one more segment.
 */
static int owner_ready_locked(void)
{
	int ret;

	if (own->reg_fd >= 0 && own->reg_pid != getpid())
		owner_reset_in_child();
	if (own->reg_fd < 0) {
		ret = xpmem_lib_shm_registry_create_locked();
		if (ret) {
			xpmem_lib_log("cannot create the registry: %s",
				      strerror(-ret));
			return ret;
		}
	}
	ret = xpmem_lib_shm_server_start_locked();
	if (ret)
		return ret;
	if (own->nsegments >= SHM_REG_MAX_SEGS) {
		xpmem_lib_log("make: this process has %u segments, the most "
			      "the shm backend keeps", own->nsegments);
		return -ENOSPC;
	}
	return 0;
}

/* Give @seg its segid socket and, if @req has one, its key socket. */
static int segment_open_locked(struct shm_segment *seg,
			       const struct xpmem_lib_make_req *req)
{
	int ret = xpmem_lib_shm_segment_listen_locked(seg);

	if (ret || !req->key)
		return ret;
	ret = xpmem_lib_shm_segment_key_listen_locked(seg, req->key,
						      req->key_len);
	if (ret)
		xpmem_lib_shm_segment_unlisten_locked(seg);
	return ret;
}

/*
 * The registry slot of @seg, @size bytes at @boff in @b's object, and the
 * object's file mode: that of its live segments (read/write bits), plus
 * rw for us (grant fds reopen it; a process of our uid can fchmod it
 * anyway).
 */
static void segment_describe_locked(struct shm_segment *seg,
				    struct shm_backing *b, size_t boff,
				    size_t size,
				    const struct xpmem_lib_make_req *req)
{
	struct shm_reg_slot *slot = &seg->info;
	unsigned int fmode;

	memset(slot, 0, sizeof(*slot));
	slot->segid = (uint64_t)seg->segid;
	slot->obj_fd = b->fd;
	slot->mode = (uint32_t)req->mode;
	slot->uid = geteuid();
	slot->gid = getegid();
	slot->page_size = (uint32_t)b->page;
	slot->flags = (req->flags & XPMEM_EXT_MAKE_RDONLY ?
		       SHM_SLOT_RDONLY : 0) |
		      (req->auth ? SHM_SLOT_AUTH : 0);
	if (req->auth) {
		seg->auth_len = (uint32_t)req->auth_len;
		memcpy(seg->auth, req->auth, req->auth_len);
	}
	slot->obj_dev = b->dev;
	slot->obj_ino = b->ino;
	slot->offset = boff;
	slot->size = size;
	slot->bell_fd = seg->bell;
	fmode = (b->nsegs ? b->mode : 0) | (unsigned int)req->mode;
	if ((!b->nsegs || fmode != b->mode) &&
	    fchmod(b->fd, (fmode & 0666) | 0600) == 0)
		b->mode = fmode;
}

/* Write @seg's slot and link it: peers find it from here on. */
static int segment_publish_locked(struct shm_segment *seg,
				  struct shm_backing *b)
{
	int ret;

	ret = seg->info.mode & 0044 ? xpmem_lib_shm_grant_fds_open_locked(b) :
	      0;
	if (!ret)
		ret = xpmem_lib_shm_slot_write(seg->slot, &seg->info);
	if (ret)
		return ret;
	seg->b = b;
	seg->next = own->segments;
	own->segments = seg;
	own->slot_seg[seg->slot] = seg;
	own->nsegments++;
	b->nsegs++;
	return 0;
}

/*
 * The segment's bell: a pipe whose write end the owner keeps until the
 * segment ends, and nothing is ever written.  Its closing is the event
 * peers poll for (shm_event.c).  Peers of our uid open their own read
 * end through /proc; the one kept here goes to peers of other uids with
 * their grant (an owner at EMFILE still has it to send).
 */
static int segment_bell_locked(struct shm_segment *seg)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	seg->bell_r = p[0];
	seg->bell = p[1];
	return 0;
}

static void segment_bell_close(struct shm_segment *seg)
{
	close(seg->bell);
	close(seg->bell_r);
}

/* Steps of a make under the owner lock; @pc as for the backing. */
static int make_locked(struct shm_segment *seg, struct shm_piece **pc,
		       size_t size, const struct xpmem_lib_make_req *req)
{
	struct shm_backing *b;
	size_t boff;
	int ret;

	ret = owner_ready_locked();
	if (ret)
		return ret;
	ret = xpmem_lib_shm_backing_get_locked(pc, req->iovcnt, size, &b,
					       &boff);
	if (ret)
		return ret;
	ret = segment_open_locked(seg, req);
	if (ret)
		goto put_backing;
	ret = segment_bell_locked(seg);
	if (ret)
		goto unlisten;
	segment_describe_locked(seg, b, boff, size, req);
	ret = segment_publish_locked(seg, b);
	if (ret) {
		segment_bell_close(seg);
		goto unlisten;
	}
	if (xpmem_lib_debug_enabled() && prctl(PR_GET_DUMPABLE) != 1)
		xpmem_lib_log("process is not dumpable: peers of uid %u cannot "
			      "open /proc/%d/fd and will get EACCES (peers of "
			      "other uids are answered by the accept thread)",
			      (unsigned int)seg->info.uid, (int)own->reg_pid);
	return 0;

unlisten:
	xpmem_lib_shm_segment_unlisten_locked(seg);
put_backing:
	xpmem_lib_shm_backing_put_locked(b);
	return ret;
}

int xpmem_lib_shm_make(const struct xpmem_lib_make_req *req,
		       xpmem_segid_t *segid)
{
	struct shm_piece *pc;
	struct shm_segment *seg;
	size_t size;
	int ret;

	ret = xpmem_lib_shm_pieces(req->iov, req->iovcnt, &pc, &size);
	if (ret)
		return ret;
	seg = calloc(1, sizeof(*seg));
	if (!seg) {
		free(pc);
		return -ENOMEM;
	}
	seg->key_sock = -1;
	pthread_mutex_lock(&own->lock);
	ret = make_locked(seg, &pc, size, req);
	if (!ret)
		*segid = seg->segid;
	pthread_mutex_unlock(&own->lock);
	free(pc);
	if (ret) {
		explicit_bzero(seg->auth, sizeof(seg->auth));
		free(seg);
	}
	return ret;
}

/* ---- remove, free ------------------------------------------------------ */

/* Drop one segment, unlinked by the caller. */
static void segment_destroy_locked(struct shm_segment *seg)
{
	struct shm_backing *b = seg->b;

	xpmem_lib_shm_slot_clear(seg->slot);
	segment_bell_close(seg);	/* after the slot: peers see it cleared */
	own->slot_seg[seg->slot] = NULL;
	xpmem_lib_shm_segment_unlisten_locked(seg);
	own->nsegments--;
	b->nsegs--;
	xpmem_lib_shm_backing_put_locked(b);
	explicit_bzero(seg->auth, sizeof(seg->auth));
	free(seg);
}

int xpmem_lib_shm_remove(xpmem_segid_t segid)
{
	struct shm_segment **pp, *seg = NULL;

	pthread_mutex_lock(&own->lock);
	for (pp = &own->segments; *pp; pp = &(*pp)->next) {
		if ((*pp)->segid == segid) {
			seg = *pp;
			*pp = seg->next;
			break;
		}
	}
	if (seg)
		segment_destroy_locked(seg);
	pthread_mutex_unlock(&own->lock);
	if (!seg) {
		xpmem_lib_log("remove %#llx: no such segment of this process",
			      (unsigned long long)segid);
		return -ENOENT;
	}
	return 0;
}

/* xpmem_ext_free(): the segments on the block are removed first. */
int xpmem_lib_shm_free(void *addr)
{
	struct shm_segment **pp, *seg;
	struct shm_backing *b;

	pthread_mutex_lock(&own->lock);
	b = xpmem_lib_shm_backing_alloc_locked(addr);
	if (!b) {
		pthread_mutex_unlock(&own->lock);
		return -EINVAL;
	}
	for (pp = &own->segments; *pp;) {
		seg = *pp;
		if (seg->b == b) {
			*pp = seg->next;
			segment_destroy_locked(seg);
		} else {
			pp = &seg->next;
		}
	}
	xpmem_lib_shm_backing_free_locked(b);
	pthread_mutex_unlock(&own->lock);
	return 0;
}
