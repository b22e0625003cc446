// SPDX-License-Identifier: GPL-2.0
/*
 * stress/fuzz_ops_seg.c - the fuzzer's operations on segments and permits (see
 * fuzz_ops.h): MAKE, REMOVE, GET and RELEASE, classic and extended, with
 * ids of its own, of the others, released and guessed ones; close and
 * reopen of the device; /proc/xpmem-objects.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../xpmem_test.h"
#include "fuzz_ops.h"
#include "stress.h"

/* REMOVE of our own live segment @si: it must succeed. */
void op_remove_own(struct fz *f, int si)
{
	long r = xp_remove(f->fd, f->seg[si].segid);

	if (r)
		fz_fail(f, "REMOVE of own live segment: %s", strerror(-r));
	fz_seg_removed(f, si);
}

/*
 * EXT_MAKE/EXT_GET options drawn from small sets, so that keys collide
 * and authorization keys are sometimes right: key "fzk0".."fzk7", secret
 * "fzs0" or "fzs1".
 */
static void fz_key(struct fz *f, uint8_t *key, uint32_t *len)
{
	*len = (uint32_t)snprintf((char *)key, XPMEM_EXT_KEY_MAX, "fzk%u",
				  (unsigned int)rnd(&f->r, 8));
}

static void fz_auth(struct fz *f, uint8_t *auth, uint32_t *len)
{
	*len = (uint32_t)snprintf((char *)auth, XPMEM_EXT_AUTH_MAX, "fzs%u",
				  (unsigned int)rnd(&f->r, 2));
}

/* MAKE through EXT_MAKE with random options; @bad: a malformed one. */
static long fz_ext_make(struct fz *f, struct xpmem_cmd_make *c, int bad,
			int am)
{
	struct xpmem_ext_make x = {
		.vaddr = c->vaddr, .size = c->size,
		.mode = (uint32_t)c->permit_value,
	};
	struct xpmem_ext_iov iov[4];
	long r;

	/*
	 * Half of them vectored: the same range cut into 2-4 buffers, in
	 * order (the module merges them back into one range) or, when the
	 * whole range is arena memory, in reverse order: then every byte of
	 * the segment is still one of the range's arena pages, which is all
	 * the model's safety rules ask (writable attachments and copies
	 * reach only the arena), while faults, copies and invalidations
	 * cross from buffer to buffer.  A malformed make is one buffer,
	 * which must fail as well.
	 */
	if (chance(&f->r, 50) &&
	    (bad || (c->size != XPMEM_MAXADDR_SIZE && c->size >= 2 * PAGE))) {
		uint64_t left = bad ? 1 : c->size / PAGE, at = c->vaddr;
		unsigned int k = bad ? 1 : 2 + rnd(&f->r, 3), i;

		for (i = 0; i < k && left; i++) {
			uint64_t n = i == k - 1 ? left :
				     1 + rnd(&f->r, left - (left > 1));

			iov[i].base = at;
			iov[i].len = bad ? c->size : n * PAGE;
			at += n * PAGE;
			left -= n;
		}
		if (!bad && in_arena(f, c->vaddr, c->size) &&
		    chance(&f->r, 50)) {
			for (unsigned int j = 0; j < i / 2; j++) {
				struct xpmem_ext_iov t = iov[j];

				iov[j] = iov[i - 1 - j];
				iov[i - 1 - j] = t;
			}
		}
		x.vaddr = (uintptr_t)iov;
		x.size = i;
		x.flags |= XPMEM_EXT_MAKE_IOV;
	}

	if (chance(&f->r, 50)) {
		x.flags |= XPMEM_EXT_MAKE_KEY;
		fz_key(f, x.key, &x.key_len);
	}
	if (chance(&f->r, 25)) {
		x.flags |= XPMEM_EXT_MAKE_AUTH;
		fz_auth(f, x.auth, &x.auth_len);
	}
	if (chance(&f->r, 20))
		x.flags |= XPMEM_EXT_MAKE_RDONLY;
	/* what has no EXT_MAKE counterpart becomes an unknown flag */
	if (bad && (c->permit_type != XPMEM_PERMIT_MODE ||
		    c->permit_value > 0777))
		x.flags |= (XPMEM_EXT_MAKE_FLAGS + 1) << rnd(&f->r, 27);
	if (chance(&f->r, 3))
		x.key_len = XPMEM_EXT_KEY_MAX + 1;	/* and so must fail */
	r = xp_ioctl_ret(f->fd, XPMEM_CMD_EXT_MAKE, fz_arg(f, am, &x, sizeof(x)));
	c->segid = x.segid;
	f->ext_makes++;
	return r;
}

/* The range of a MAKE: arena pages from *@p, or one of the others. */
static void fz_make_range(struct fz *f, struct xpmem_cmd_make *c,
			  unsigned long *p)
{
	uint8_t frame;
	unsigned long n;

	fz_range(f, p, &n);
	c->vaddr = (uintptr_t)pg_addr(f, *p);
	c->size = n * PAGE;
	switch (rnd(&f->r, 10)) {
	case 0:
		c->vaddr = 0;
		c->size = XPMEM_MAXADDR_SIZE;
		break;
	case 1:
		c->size = XPMEM_MAXADDR_SIZE;
		break;
	case 2:		/* our stack, holes included */
		c->vaddr = (((uintptr_t)&frame) & ~(PAGE - 1)) - 16 * PAGE;
		c->size = 32 * PAGE;
		break;
	case 3:		/* our text */
		c->vaddr = ((uintptr_t)&op_make) & ~(PAGE - 1);
		c->size = 16 * PAGE;
		break;
	}
}

/* A malformed MAKE: one thing of @c made wrong (@p: its arena page). */
static void fz_make_break(struct fz *f, struct xpmem_cmd_make *c,
			  unsigned long p)
{
	switch (rnd(&f->r, 9)) {
	case 0:
		c->vaddr |= 1 + rnd(&f->r, PAGE - 1);
		break;
	case 1:
		c->size = 0;
		break;
	case 2:
		c->size = (c->size == XPMEM_MAXADDR_SIZE ? PAGE : c->size) +
			  1 + rnd(&f->r, PAGE - 2);
		break;
	case 3:
		do {
			c->permit_type = (int)rnd64(&f->r);
		} while (c->permit_type == XPMEM_PERMIT_MODE);
		break;
	case 4:
		c->permit_value |= 01000ULL << rnd(&f->r, 50);
		break;
	case 5:
		c->vaddr = KADDR + rnd(&f->r, 4096) * PAGE;
		c->size = PAGE;
		break;
	case 6:		/* vaddr + size wraps */
		c->vaddr = (uintptr_t)pg_addr(f, p);
		c->size = -c->vaddr + PAGE * (1 + rnd(&f->r, 16));
		break;
	case 7:
		c->size = 1ULL << 60;
		break;
	default:
		c->vaddr = -PAGE;
		c->size = PAGE;
		break;
	}
}

/* MAKE (or EXT_MAKE) of a random range; @bad: a malformed one. */
void op_make(struct fz *f, int bad)
{
	static const int modes[] = { 0600, 0666, 0640, 0604, 0644, 0400, 0, 0660 };
	struct xpmem_cmd_make c = { .permit_type = XPMEM_PERMIT_MODE };
	int must_fail = bad, am, si;
	unsigned long p;
	long r;

	for (si = 0; si < FZ_SEGS && f->seg[si].used; si++)
		;
	if (si == FZ_SEGS) {
		si = rnd(&f->r, FZ_SEGS);
		op_remove_own(f, si);
	}
	c.permit_value = modes[rnd(&f->r, 8)];
	fz_make_range(f, &c, &p);
	if (bad)
		fz_make_break(f, &c, p);
	am = fz_argmode(f);
	if (am != ARG_OK)
		must_fail = 1;	/* the segid cannot be written back */
	if (chance(&f->r, 25)) {
		r = fz_ext_make(f, &c, bad, am);
		if (c.segid && r)
			fz_fail(f, "EXT_MAKE failed but wrote a segid");
	} else {
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_MAKE,
			     fz_arg(f, am, &c, sizeof(c)));
	}
	fz_check(f, r, must_fail, bad ? "MAKE (invalid)" : "MAKE");
	if (r)
		return;
	if (c.segid <= 0)
		fz_fail(f, "MAKE returned segid %" PRId64, (int64_t)c.segid);
	f->seg[si].used = 1;
	f->seg[si].segid = c.segid;
	f->seg[si].vaddr = c.vaddr;
	f->seg[si].size = c.size;
	fz_publish_seg(f, &f->seg[si], c.permit_value);
}

/*
 * REMOVE or RELEASE of @id (each command is one id, the same layout) with
 * a random argument mode, checked against this worker's own table: @own
 * finds the id among ours (index or -1), @gone records that it ended.
 * Only our own live object may end, and with a good argument it must.
 */
static void fz_end_id(struct fz *f, unsigned long cmd, const char *what,
		      int64_t id, int must_fail,
		      int (*own)(struct fz *, int64_t),
		      void (*gone)(struct fz *, int))
{
	int64_t c = id;
	int am = fz_argmode(f), i;
	long r;

	_Static_assert(sizeof(struct xpmem_cmd_remove) == sizeof(c) &&
		       sizeof(struct xpmem_cmd_release) == sizeof(c),
		       "REMOVE and RELEASE take one 64-bit id");
	if (am != ARG_OK && am != ARG_RO)
		must_fail = 1;
	r = xp_ioctl_ret(f->fd, cmd, fz_arg(f, am, &c, sizeof(c)));
	fz_check(f, r, must_fail, what);
	i = own(f, id);
	if (!r && i < 0)
		fz_fail(f, "%s of id %" PRId64 " (not ours) succeeded", what,
			id);
	if (!r)
		gone(f, i);
	else if (i >= 0 && am == ARG_OK)
		fz_fail(f, "%s of our own live object: %s", what, strerror(-r));
}

/* REMOVE of one of our segments, someone else's, a guessed or a bad id. */
void op_remove(struct fz *f)
{
	struct xpmem_cmd_remove c = { 0 };
	struct fz_segslot e = { 0 };
	int must_fail = 0, si;

	switch (rnd(&f->r, 10)) {
	case 0: case 1: case 2: case 3: case 4:
		si = FZ_PICK(f, f->seg);
		if (si < 0)
			return;
		c.segid = f->seg[si].segid;
		break;
	case 5: case 6: case 7:
		sh_lock(&f->sh->lock);
		e = f->sh->segs[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.segid = e.segid;
		must_fail = e.removed || e.pid != f->pid;
		break;
	case 8:
		c.segid = fz_guess(f);
		must_fail = !fz_id_known(f, c.segid);
		break;
	default:
		c.segid = -(int64_t)rnd(&f->r, 3);
		must_fail = 1;
		break;
	}
	fz_end_id(f, XPMEM_CMD_REMOVE, "REMOVE", c.segid, must_fail,
		  fz_own_seg, fz_seg_removed);
}

/* Would SysV-style permission checks refuse @flags on segment @e? */
static int fz_denied(struct fz *f, const struct fz_segslot *e, int flags)
{
	int granted, need = 4 | (flags == XPMEM_RDWR ? 2 : 0);

	if (!f->uid)
		return 0;	/* CAP_IPC_OWNER */
	if (e->uid == f->uid)
		granted = e->mode >> 6;
	else if (e->gid == f->gid)
		granted = e->mode >> 3;
	else
		granted = e->mode;
	return (need & ~granted & 7) != 0;
}

/* RELEASE of our own permit @pi: it must succeed. */
void op_release_perm(struct fz *f, int pi)
{
	long r = xp_release(f->fd, f->perm[pi].apid);

	if (r)
		fz_fail(f, "RELEASE of own permit: %s", strerror(-r));
	fz_perm_released(f, pi);
}

/*
 * The segment a GET names, chosen by @v (0..19), its access flags in @c
 * drawn already: a slot of the shared table, one of ours, a guess, a
 * negative id, or a bad flag or permit type.  @e: what we know of the
 * segment, *@known: whether it is its real range.  Whether the GET must
 * fail.
 */
static int fz_get_target(struct fz *f, unsigned long v,
			 struct xpmem_cmd_get *c, struct fz_segslot *e,
			 int *known)
{
	int must_fail = 0, si;

	if (v < 10) {
		sh_lock(&f->sh->lock);
		*e = f->sh->segs[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c->segid = e->segid;
		*known = e->segid > 0;
		must_fail = !*known || e->removed || fz_denied(f, e, c->flags);
	} else if (v < 14 && (si = FZ_PICK(f, f->seg)) >= 0) {
		c->segid = f->seg[si].segid;
		e->segid = c->segid;
		e->vaddr = f->seg[si].vaddr;
		e->size = f->seg[si].size;
		e->pid = f->pid;
		*known = 1;
	} else if (v < 16) {
		c->segid = fz_guess(f);
		must_fail = !fz_id_known(f, c->segid);
	} else if (v < 17) {
		c->segid = -(int64_t)rnd(&f->r, 3);
		must_fail = 1;
	} else {
		sh_lock(&f->sh->lock);
		*e = f->sh->segs[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c->segid = e->segid;
		must_fail = 1;
		if (chance(&f->r, 50)) {
			do {
				c->flags = (int)rnd64(&f->r);
			} while (c->flags == XPMEM_RDONLY || c->flags == XPMEM_RDWR);
		} else {
			do {
				c->permit_type = (int)rnd64(&f->r);
			} while (c->permit_type == XPMEM_PERMIT_MODE);
		}
	}
	return must_fail;
}

/*
 * GET through EXT_GET: by segid or by key, with or without a secret.  A
 * key may name any segment: then *@known is 0.
 */
static long fz_ext_get(struct fz *f, struct xpmem_cmd_get *c, int must_fail,
		       int am, int *known)
{
	struct xpmem_ext_get x = {
		.segid = c->segid,
		.flags = (uint32_t)c->flags,
	};
	long r;

	if (c->permit_type != XPMEM_PERMIT_MODE ||
	    (c->flags != XPMEM_RDONLY && c->flags != XPMEM_RDWR))
		x.flags |= 0x400U << rnd(&f->r, 20);
	/* a key may name any segment: not where failure is due */
	if (!must_fail && chance(&f->r, 40)) {
		x.segid = 0;
		x.flags |= XPMEM_EXT_GET_BY_KEY;
		fz_key(f, x.key, &x.key_len);
		*known = 0;	/* some segment, maybe not this one */
	}
	if (chance(&f->r, 30)) {
		x.flags |= XPMEM_EXT_GET_AUTH;
		fz_auth(f, x.auth, &x.auth_len);
	}
	r = xp_ioctl_ret(f->fd, XPMEM_CMD_EXT_GET, fz_arg(f, am, &x, sizeof(x)));
	c->apid = x.apid;
	c->segid = x.segid;
	f->ext_gets++;
	return r;
}

/* The permit GET returned, in our slot @pi and in the shared table. */
static void fz_got(struct fz *f, int pi, const struct xpmem_cmd_get *c,
		   const struct fz_segslot *e, int known)
{
	f->perm[pi].used = 1;
	f->perm[pi].apid = c->apid;
	f->perm[pi].segid = c->segid;
	f->perm[pi].rdwr = c->flags == XPMEM_RDWR;
	if (known) {
		f->perm[pi].svaddr = e->vaddr;
		f->perm[pi].slen = e->size == XPMEM_MAXADDR_SIZE ?
				   FZ_TOP - e->vaddr : e->size;
		f->perm[pi].spid = e->pid;
	}
	sh_lock(&f->sh->lock);
	f->sh->apids[rnd(&f->r, FZ_SLOTS)] =
		(struct fz_apidslot){ .apid = c->apid, .pid = f->pid };
	sh_unlock(&f->sh->lock);
}

/* GET (or EXT_GET) of a segment: ours, someone's, or none. */
void op_get(struct fz *f)
{
	struct xpmem_cmd_get c = { .permit_type = XPMEM_PERMIT_MODE };
	struct fz_segslot e = { 0 };
	unsigned long v = rnd(&f->r, 20);
	int must_fail, known = 0, am, pi;
	long r;

	for (pi = 0; pi < FZ_PERMS && f->perm[pi].used; pi++)
		;
	if (pi == FZ_PERMS) {
		pi = rnd(&f->r, FZ_PERMS);
		op_release_perm(f, pi);
	}
	c.flags = chance(&f->r, 50) ? XPMEM_RDONLY : XPMEM_RDWR;
	must_fail = fz_get_target(f, v, &c, &e, &known);
	am = fz_argmode(f);
	if (am != ARG_OK)
		must_fail = 1;
	if (chance(&f->r, 25))
		r = fz_ext_get(f, &c, must_fail, am, &known);
	else
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_GET,
			     fz_arg(f, am, &c, sizeof(c)));
	fz_check(f, r, must_fail, "GET");
	if (r)
		return;
	if (c.apid <= 0)
		fz_fail(f, "GET returned apid %" PRId64, (int64_t)c.apid);
	fz_got(f, pi, &c, &e, known);
}

/* RELEASE of one of our permits, someone else's, a dead or a guessed id. */
void op_release(struct fz *f)
{
	struct xpmem_cmd_release c = { 0 };
	struct fz_apidslot e;
	int must_fail = 1, pi;
	unsigned long v = rnd(&f->r, 20);

	if (v < 11) {
		pi = FZ_PICK(f, f->perm);
		if (pi < 0)
			return;
		c.apid = f->perm[pi].apid;
		must_fail = 0;
	} else if (v < 15) {
		sh_lock(&f->sh->lock);
		e = f->sh->apids[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		c.apid = e.apid;
		must_fail = e.pid != f->pid || e.released ||
			    fz_own_perm(f, e.apid) < 0;
	} else if (v < 17 && f->ndead) {
		c.apid = f->dead[rnd(&f->r, f->ndead < 16 ? f->ndead : 16)];
	} else if (v < 19) {
		c.apid = fz_guess(f);
		must_fail = !fz_id_known(f, c.apid);
	} else {
		c.apid = -(int64_t)rnd(&f->r, 3);
	}
	fz_end_id(f, XPMEM_CMD_RELEASE, "RELEASE", c.apid, must_fail,
		  fz_own_perm, fz_perm_released);
}

/* close and reopen the device: our segments and permits go away */
void op_reopen(struct fz *f)
{
	int i;

	close(f->fd);
	for (i = 0; i < FZ_SEGS; i++)
		if (f->seg[i].used)
			fz_seg_removed(f, i);
	for (i = 0; i < FZ_PERMS; i++) {
		if (!f->perm[i].used)
			continue;
		sh_lock(&f->sh->lock);
		for (int j = 0; j < FZ_SLOTS; j++)
			if (f->sh->apids[j].apid == f->perm[i].apid)
				f->sh->apids[j].released = 1;
		sh_unlock(&f->sh->lock);
		f->dead[f->ndead++ % 16] = f->perm[i].apid;
		memset(&f->perm[i], 0, sizeof(f->perm[i]));
	}
	/* attachments stay mapped (dead); unmap them */
	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used)
			fz_att_gone(f, i, 1);
	f->fd = xp_open();
	if (f->fd < 0)
		fz_fail(f, "reopen %s: %s", XPMEM_DEV_PATH, strerror(errno));
	f->ok[f->op]++;
}

/* Read all of @path into @buf (NUL-terminated); bytes read or -errno. */
static long read_file(const char *path, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return (long)n;
}

/*
 * Read the /proc/xpmem-objects file of a random fuzz process (another
 * uid's: EACCES; one closing its device: ENOENT) while they all change
 * their objects, and our own, which must list every segment we hold.
 */
void op_proc(struct fz *f)
{
	static char buf[1 << 16];
	char path[64], want[48];
	pid_t pid = f->sh->procs[rnd(&f->r, FZ_MAXPROCS)].pid;
	long n;
	int i;

	if (pid > 0 && pid != f->pid) {
		snprintf(path, sizeof(path), "/proc/xpmem-objects/%d", (int)pid);
		n = read_file(path, buf, sizeof(buf));
		if (n < 0 && n != -EACCES && n != -ENOENT)
			fz_fail(f, "read %s: %s", path, strerror((int)-n));
	}
	snprintf(path, sizeof(path), "/proc/xpmem-objects/%d", (int)f->pid);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		fz_fail(f, "read %s: %s", path, strerror((int)-n));
	for (i = 0; i < FZ_SEGS && n < (long)sizeof(buf) - 1; i++) {
		if (!f->seg[i].used)
			continue;
		snprintf(want, sizeof(want), "segment %#llx ",
			 (unsigned long long)f->seg[i].segid);
		if (!strstr(buf, want))
			fz_fail(f, "%s does not list our segment %#llx",
				path, (unsigned long long)f->seg[i].segid);
	}
	f->ok[f->op]++;
}
