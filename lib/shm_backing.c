// SPDX-License-Identifier: LGPL-2.1
/*
 * shm_backing.c - backings: memory of this process that sits on a shared
 * object, and so can be exported.  Either an allocator block
 * (xpmem_ext_alloc) or private anonymous memory migrated in place by a
 * make: one range, or (xpmem_ext_makev, a "vector" backing) several ranges
 * laid out one after the other in one object, so that a peer maps the
 * segment as one range of one object.
 *
 * Migration copies the ranges into a new object and maps the object
 * MAP_SHARED|MAP_FIXED over the same addresses (each range at its
 * offset); removing the last segment of a migrated backing, or fork() in
 * the child, turns it back into private anonymous memory the same way.
 * Both moves race with other threads touching the range: a store made by
 * another thread during the copy can be lost, so callers must not use the
 * range concurrently with make/remove.
 *
 * Invariants, under the owner lock: backings never overlap; a vector
 * backing has exactly one segment, and its ranges are not exported again,
 * whole or in part, while it lives; a migrated backing lives exactly as
 * long as it has segments, an allocator block until xpmem_ext_free.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm.h"

static struct shm_backing *backings;	/* under the owner lock */

/* The ranges a backing takes in our address space: 1, or its pieces. */
static unsigned int backing_npieces(const struct shm_backing *b)
{
	return b->kind == BACKING_VECTOR ? b->npieces : 1;
}

static struct shm_piece backing_piece(const struct shm_backing *b,
				      unsigned int i)
{
	if (b->kind == BACKING_VECTOR)
		return b->pieces[i];
	return (struct shm_piece){ .addr = b->addr, .size = b->size, .off = 0 };
}

static int overlaps(const char *a, size_t as, const char *b, size_t bs)
{
	return a < b + bs && b < a + as;
}

/*
 * The backing that holds all of [addr, addr + size), or NULL with
 * *@overlap set if one holds part of it.  A vector backing never holds a
 * range for a new segment: it only overlaps.
 */
static struct shm_backing *backing_find_locked(const char *addr,
					       size_t size, int *overlap)
{
	struct shm_backing *b;
	unsigned int i;

	*overlap = 0;
	for (b = backings; b; b = b->next) {
		if (b->kind != BACKING_VECTOR && addr >= b->addr &&
		    size <= b->size &&
		    (size_t)(addr - b->addr) <= b->size - size)
			return b;
		for (i = 0; i < backing_npieces(b); i++) {
			struct shm_piece pc = backing_piece(b, i);

			if (overlaps(addr, size, pc.addr, pc.size))
				*overlap = 1;
		}
	}
	return NULL;
}

static void backing_unlink_locked(struct shm_backing *b)
{
	struct shm_backing **pp;

	for (pp = &backings; *pp; pp = &(*pp)->next) {
		if (*pp == b) {
			*pp = b->next;
			return;
		}
	}
}

static int backing_stat(struct shm_backing *b)
{
	struct stat st;

	if (fstat(b->fd, &st) != 0)
		return -errno;
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	return 0;
}

/*
 * range_is_private_anon - whether [addr, addr + size) is covered, without
 * holes, by private anonymous read-write mappings (no [heap], [stack] or
 * other special mapping), according to /proc/self/maps.  On a mismatch,
 * @why receives a short description of the first offending part.
 */
static int range_is_private_anon(uintptr_t addr, size_t size, char *why,
				 size_t whylen)
{
	uintptr_t end = addr + size, cur = addr;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f) {
		snprintf(why, whylen, "cannot read /proc/self/maps");
		return 0;
	}
	snprintf(why, whylen, "hole at %#lx", (unsigned long)cur);
	while (cur < end && fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		char perms[8], path[256] = "";
		unsigned long long ino;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %llu %255s",
			   &lo, &hi, perms, &ino, path) < 4)
			continue;
		if (hi <= cur)
			continue;
		if (lo > cur)
			break;		/* hole */
		if (strcmp(perms, "rw-p") != 0 || ino != 0 ||
		    (path[0] && strncmp(path, "[anon:", 6) != 0)) {
			snprintf(why, whylen, "%#lx-%#lx is %s %s",
				 (unsigned long)lo, (unsigned long)hi, perms,
				 path[0] ? path : "(anonymous)");
			break;
		}
		cur = hi;
		snprintf(why, whylen, "hole at %#lx", (unsigned long)cur);
	}
	fclose(f);
	return cur >= end;
}

/*
 * Give @n pieces that are mapped from object @fd back private anonymous
 * memory with the same contents.  @view maps the object (or is NULL: the
 * pieces stay shared, with a log line).
 */
static void pieces_unmigrate(const unsigned char *view,
			     const struct shm_piece *pc, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!view) {
			xpmem_lib_log("cannot map object back, %p+%#zx stays "
				      "shared", (void *)pc[i].addr, pc[i].size);
		} else if (mmap(pc[i].addr, pc[i].size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				0) == MAP_FAILED) {
			xpmem_lib_log("cannot remap %p privately (%s), range "
				      "stays shared", (void *)pc[i].addr,
				      strerror(errno));
		} else {
			xpmem_lib_shm_copy_nonzero(pc[i].addr, view + pc[i].off,
						   pc[i].size);
		}
	}
}

/*
 * backing_migrate_locked - move @n private anonymous ranges (@pc: their
 * object offsets one after the other, @total bytes in all) onto a new
 * shared object at the same addresses, keeping their contents.  One range
 * makes a BACKING_MIGRATED backing, several a BACKING_VECTOR one (which
 * takes over the array, malloc()ed by the caller).
 */
static int backing_migrate_locked(struct shm_piece *pc, unsigned int n,
				  size_t total, struct shm_backing **out)
{
	struct shm_backing *b;
	unsigned char *view;
	unsigned int i;
	char why[200];
	int ret;

	for (i = 0; i < n; i++) {
		if (range_is_private_anon((uintptr_t)pc[i].addr, pc[i].size,
					  why, sizeof(why)))
			continue;
		xpmem_lib_log("make %p+%#zx: %s; the shm backend exports only "
			      "xpmem_ext_alloc() memory and private anonymous "
			      "read-write ranges", (void *)pc[i].addr,
			      pc[i].size, why);
		return -EOPNOTSUPP;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->rofd = -1;
	ret = xpmem_lib_shm_object_create(total, &b->fd);
	if (ret)
		goto free_b;
	ret = backing_stat(b);
	if (ret)
		goto close_fd;
	view = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (view == MAP_FAILED) {
		ret = -errno;
		goto close_fd;
	}
	for (i = 0; i < n; i++)
		xpmem_lib_shm_copy_nonzero(view + pc[i].off, pc[i].addr,
					   pc[i].size);
	for (i = 0; i < n; i++) {
		if (mmap(pc[i].addr, pc[i].size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, b->fd,
			 (off_t)pc[i].off) == MAP_FAILED) {
			/* this one is still private; undo the others */
			ret = -errno;
			pieces_unmigrate(view, pc, i);
			munmap(view, total);
			goto close_fd;
		}
	}
	munmap(view, total);
	b->size = b->used = total;
	b->page = xpmem_lib_page_size();
	if (n == 1) {
		b->addr = pc[0].addr;
		b->kind = BACKING_MIGRATED;
	} else {
		b->pieces = pc;
		b->npieces = n;
		b->kind = BACKING_VECTOR;
	}
	b->next = backings;
	backings = b;
	xpmem_lib_log("migrated %u range(s) from %p, %#zx bytes, onto a shared "
		      "object", n, (void *)pc[0].addr, total);
	*out = b;
	return 0;

close_fd:
	close(b->fd);
free_b:
	free(b);
	return ret;
}

/*
 * backing_unmigrate - turn a migrated backing's ranges back into private
 * anonymous memory with the same contents, drop the object, free @b.
 */
static void backing_unmigrate(struct shm_backing *b)
{
	struct shm_piece one = backing_piece(b, 0);
	void *view = mmap(NULL, b->size, PROT_READ, MAP_SHARED, b->fd, 0);

	pieces_unmigrate(view == MAP_FAILED ? NULL : view,
			 b->kind == BACKING_VECTOR ? b->pieces : &one,
			 backing_npieces(b));
	if (view != MAP_FAILED)
		munmap(view, b->size);
	close(b->fd);
	if (b->rofd >= 0)
		close(b->rofd);
	free(b->pieces);
	free(b);
}

/* In a fork child: give migrated ranges back their private copy, keep
 * allocator blocks (shared with the parent, as documented). */
void xpmem_lib_shm_backings_reset_in_child(void)
{
	struct shm_backing *b, *next, **pp = &backings;

	for (b = backings; b; b = next) {
		next = b->next;
		b->nsegs = 0;
		if (b->kind != BACKING_ALLOC) {
			backing_unmigrate(b);
			continue;
		}
		*pp = b;
		pp = &b->next;
	}
	*pp = NULL;
}

/*
 * The pieces of @n buffers at @iov into @pc: each page aligned and
 * non-empty, at object offsets one after the other (*@total bytes in
 * all).  Overlapping buffers cannot each be migrated: EOPNOTSUPP.
 */
static int pieces_from_iov(const struct iovec *iov, int n,
			   struct shm_piece *pc, size_t *total)
{
	size_t page = xpmem_lib_page_size(), off = 0;
	int i, j;

	for (i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)iov[i].iov_base;
		size_t len = iov[i].iov_len;

		if (!len || a % page || len % page || a + len < a ||
		    off + len < off) {
			xpmem_lib_log("make %p+%#zx: address and size must be "
				      "page-aligned and non-zero",
				      iov[i].iov_base, len);
			return -EINVAL;
		}
		pc[i].addr = iov[i].iov_base;
		pc[i].size = len;
		pc[i].off = off;
		off += len;
		for (j = 0; j < i; j++) {
			if (!overlaps(pc[i].addr, len, pc[j].addr, pc[j].size))
				continue;
			xpmem_lib_log("makev: buffers %d and %d overlap; the "
				      "shm backend exports a range once", j, i);
			return -EOPNOTSUPP;
		}
	}
	*total = off;
	return 0;
}

/*
 * A new vector backing of @n > 1 buffers: none may be exported already,
 * in whole or in part.  Takes over @pc on success.
 */
static int backing_vector_locked(struct shm_piece *pc, int n, size_t total,
				 struct shm_backing **b)
{
	int i, overlap;

	for (i = 0; i < n; i++) {
		if (backing_find_locked(pc[i].addr, pc[i].size, &overlap) ||
		    overlap) {
			xpmem_lib_log("makev %p+%#zx: range is exported memory "
				      "already; the shm backend exports it once",
				      (void *)pc[i].addr, pc[i].size);
			return -EOPNOTSUPP;
		}
	}
	return backing_migrate_locked(pc, (unsigned int)n, total, b);
}


/**
 * xpmem_lib_shm_pieces - check the @n buffers of a make and lay them out.
 * @iov:   the buffers
 * @n:     1..XPMEM_EXT_MAKE_IOV_MAX
 * @pc:    receives a new array of @n pieces (the caller frees it, unless
 *         xpmem_lib_shm_backing_get_locked() takes it over)
 * @total: receives their size in all
 *
 * Return: 0, -EINVAL (not page aligned, empty), -EOPNOTSUPP (the whole
 * address space, overlapping buffers) or -ENOMEM.
 */
int xpmem_lib_shm_pieces(const struct iovec *iov, int n,
			 struct shm_piece **pc, size_t *total)
{
	int ret;

	if (n == 1 && iov[0].iov_len == XPMEM_MAXADDR_SIZE) {
		xpmem_lib_log("make: the shm backend cannot export the whole "
			      "address space (XPMEM_MAXADDR_SIZE); load the "
			      "xpmem module for that");
		return -EOPNOTSUPP;
	}
	*pc = calloc((size_t)n, sizeof(**pc));
	if (!*pc)
		return -ENOMEM;
	ret = pieces_from_iov(iov, n, *pc, total);
	if (ret) {
		free(*pc);
		*pc = NULL;
	}
	return ret;
}

/**
 * xpmem_lib_shm_backing_get_locked - the backing a new segment of @n
 * pieces lies on, and where in its object it starts.
 * @pc:    from xpmem_lib_shm_pieces(); set to NULL when a new vector
 *         backing (@n > 1) takes it over
 * @n:     their number
 * @total: their size in all
 * @b:     receives the backing: an existing one that holds the one range
 *         whole, or a new one the range(s) migrated onto
 * @boff:  receives the segment's offset in @b's object
 *
 * Return: 0, -EOPNOTSUPP (the range straddles exported memory, or a
 * vector buffer is exported already, or is not private anonymous memory),
 * -EINVAL (not aligned to the backing's pages), or another -errno.
 */
int xpmem_lib_shm_backing_get_locked(struct shm_piece **pc, int n,
				     size_t total, struct shm_backing **b,
				     size_t *boff)
{
	char *addr = (*pc)[0].addr;
	int overlap, ret;

	if (n > 1) {
		ret = backing_vector_locked(*pc, n, total, b);
		if (ret)
			return ret;
		*pc = NULL;		/* *b's now */
		*boff = 0;		/* its object from offset 0 */
		return 0;
	}
	*b = backing_find_locked(addr, total, &overlap);
	if (!*b && overlap) {
		xpmem_lib_log("make %p+%#zx: range straddles exported "
			      "memory", (void *)addr, total);
		return -EOPNOTSUPP;
	}
	if (!*b) {
		ret = backing_migrate_locked(*pc, 1, total, b);
		if (ret)
			return ret;
	}
	*boff = (size_t)(addr - (*b)->addr);
	if (*boff % (*b)->page) {
		xpmem_lib_log("make %p: not aligned to the %zu-byte pages of "
			      "its allocation", (void *)addr, (*b)->page);
		xpmem_lib_shm_backing_put_locked(*b);
		return -EINVAL;
	}
	return 0;
}

/*
 * xpmem_lib_shm_backing_put_locked - a migrated backing without segments
 * goes back to private memory; anything else stays.
 */
void xpmem_lib_shm_backing_put_locked(struct shm_backing *b)
{
	if (b->kind != BACKING_ALLOC && b->nsegs == 0) {
		backing_unlink_locked(b);
		backing_unmigrate(b);
	}
}

/* ---- allocator --------------------------------------------------------- */

/*
 * A hugetlb object of @size rounded up to huge pages, mapped, in @b; or
 * nothing (b->addr NULL), and the caller falls back to base pages.
 */
static void alloc_huge(struct shm_backing *b, size_t size)
{
	size_t hsize = (size + SHM_HUGE_PAGE - 1) & ~(SHM_HUGE_PAGE - 1);
	int ret = xpmem_lib_shm_huge_create(hsize, &b->fd);
	void *p;

	if (!ret) {
		/* Shared hugetlb mappings reserve their pages here. */
		p = mmap(NULL, hsize, PROT_READ | PROT_WRITE, MAP_SHARED,
			 b->fd, 0);
		if (p != MAP_FAILED) {
			b->addr = p;
			b->size = hsize;
			b->page = SHM_HUGE_PAGE;
			return;
		}
		ret = -errno;
		close(b->fd);
		b->fd = -1;
	}
	xpmem_lib_log("alloc: no huge pages (%s), using base pages",
		      strerror(-ret));
}

int xpmem_lib_shm_alloc(size_t size, unsigned int flags, void **addr)
{
	size_t page = xpmem_lib_page_size();
	struct shm_backing *b = calloc(1, sizeof(*b));
	int ret = -ENOMEM;
	void *p;

	if (!b)
		return -ENOMEM;
	if (size > SIZE_MAX - SHM_HUGE_PAGE)
		goto free_b;
	b->fd = b->rofd = -1;
	size = (size + page - 1) & ~(page - 1);
	b->used = size;
	if (flags & XPMEM_EXT_ALLOC_HUGETLB)
		alloc_huge(b, size);
	if (!b->addr) {
		ret = xpmem_lib_shm_object_create(size, &b->fd);
		if (ret)
			goto free_b;
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 b->fd, 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			goto close_fd;
		}
		b->addr = p;
		b->size = size;
		b->page = page;
	}
	ret = backing_stat(b);
	if (ret)
		goto unmap;
	b->kind = BACKING_ALLOC;
	pthread_mutex_lock(&xpmem_lib_shm_owner.lock);
	b->next = backings;
	backings = b;
	pthread_mutex_unlock(&xpmem_lib_shm_owner.lock);
	*addr = b->addr;
	return 0;

unmap:
	munmap(b->addr, b->size);
close_fd:
	close(b->fd);
free_b:
	free(b);
	return ret;
}

/* The allocator block that starts at @addr, or NULL. */
struct shm_backing *xpmem_lib_shm_backing_alloc_locked(void *addr)
{
	struct shm_backing *b;

	for (b = backings; b; b = b->next)
		if (b->kind == BACKING_ALLOC && b->addr == addr)
			return b;
	return NULL;
}

/*
 * xpmem_lib_shm_backing_free_locked - unlink the allocator block @b (its
 * segments removed already) and unmap, close and free it.
 */
void xpmem_lib_shm_backing_free_locked(struct shm_backing *b)
{
	backing_unlink_locked(b);
	munmap(b->addr, b->size);
	close(b->fd);
	if (b->rofd >= 0)
		close(b->rofd);
	free(b);
}
