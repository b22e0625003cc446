// SPDX-License-Identifier: GPL-2.0
/*
 * stress/fuzz_ops_att.c - the fuzzer's operations on attachments (see
 * fuzz_ops.h): ATTACH and EXT_ATTACH, DETACH, an attachment over its own
 * source, EXT_COPY and EXT_POPULATE (ioctl and io_uring), and junk
 * ioctls.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../xpmem_test.h"
#include "fuzz_ops.h"
#include "stress.h"

/* A fixed attach address inside the arena, often over something. */
static unsigned long fz_fixed_page(struct fz *f)
{
	long p = -1;
	uint64_t a;

	switch (rnd(&f->r, 10)) {
	case 0: case 1: case 2:
		p = fz_find(f, PK_ATT, -1);		/* over an attachment */
		break;
	case 3: case 4:
		p = fz_find(f, -1, -1);			/* over our memory */
		break;
	case 5:
		a = f->sh->addrs[rnd(&f->r, FZ_SLOTS)];	/* someone's attachment */
		if (in_arena(f, a & ~(PAGE - 1), PAGE))
			p = (a - (uintptr_t)f->arena) / PAGE;
		break;
	}
	return p >= 0 ? (unsigned long)p : rnd(&f->r, FZ_PAGES);
}

/* An ATTACH being built: op_attach()'s steps fill it in, in order. */
struct fz_attach_req {
	struct xpmem_cmd_attach c;
	struct fz_perm *pm;		/* our permit named by c.apid, or NULL */
	int pi, must_fail;
	unsigned long n, fp;		/* pages; the fixed target's arena page */
	uint64_t want;			/* the fixed address, or 0 */
	int fixed, selfmap, safe, rdonly;
};

/* A free slot of our attachment table; when full, one is detached. */
static int fz_attach_slot(struct fz *f)
{
	int ai = fz_att_alloc(f);

	if (ai < 0) {		/* table full: drop one */
		ai = rnd(&f->r, FZ_ATTS);
		xp_detach(f->fd, f->atts[ai].olen ?
			  (void *)(uintptr_t)f->atts[ai].oaddr :
			  pg_addr(f, fz_find(f, PK_ATT, ai)));
		fz_att_gone(f, ai, 1);
	}
	return ai;
}

/*
 * The permit, chosen by @v (0..99): one of ours, one of the shared table
 * (ours or not), a released one, a guess or a negative id.
 */
static void fz_attach_permit(struct fz *f, unsigned long v,
			     struct fz_attach_req *q)
{
	struct fz_apidslot e;

	if (v < 75 && (q->pi = FZ_PICK(f, f->perm)) >= 0) {
		q->pm = &f->perm[q->pi];
		q->c.apid = q->pm->apid;
		q->must_fail = 0;
	} else if (v < 85) {
		sh_lock(&f->sh->lock);
		e = f->sh->apids[rnd(&f->r, FZ_SLOTS)];
		sh_unlock(&f->sh->lock);
		q->c.apid = e.apid;
		q->pi = fz_own_perm(f, e.apid);
		q->must_fail = q->pi < 0;
		q->pm = q->pi < 0 ? NULL : &f->perm[q->pi];
	} else if (v < 92 && f->ndead) {
		q->c.apid = f->dead[rnd(&f->r, f->ndead < 16 ? f->ndead : 16)];
	} else {
		q->c.apid = chance(&f->r, 50) ? fz_guess(f) :
			    -(int64_t)rnd(&f->r, 3);
		q->must_fail = !fz_id_known(f, q->c.apid);
	}
}

/*
 * The owner-side address of an attachment of @pm's segment (*@n pages,
 * cut to the segment): mostly in the owner's arena, sometimes its stack,
 * text, data, heap or vdso, else anywhere in the segment.
 */
static uint64_t fz_attach_source(struct fz *f, const struct fz_perm *pm,
				 unsigned long *n)
{
	uint64_t tgt = 0, lo, hi;
	unsigned long v;

	*n = chance(&f->r, 50) ? 1 + rnd(&f->r, 4) : 1 + rnd(&f->r, 64);
	lo = pm->svaddr > (uintptr_t)f->arena ? pm->svaddr : (uintptr_t)f->arena;
	hi = (uintptr_t)f->arena + FZ_ARENA;
	if (pm->svaddr + pm->slen < hi)
		hi = pm->svaddr + pm->slen;
	v = rnd(&f->r, 100);
	if (v < 70 && lo < hi) {
		tgt = lo + rnd(&f->r, (hi - lo) / PAGE) * PAGE;
	} else if (v < 85 && pm->spid) {
		int i;

		for (i = 0; i < FZ_MAXPROCS; i++)
			if (f->sh->procs[i].pid == pm->spid)
				tgt = f->sh->procs[i].addr[rnd(&f->r, 5)] &
				      ~(PAGE - 1);
		if (tgt < pm->svaddr || tgt >= pm->svaddr + pm->slen)
			tgt = pm->svaddr;
	} else {
		tgt = pm->svaddr + rnd(&f->r, pm->slen / PAGE) * PAGE;
	}
	if (tgt + *n * PAGE > pm->svaddr + pm->slen)
		*n = (pm->svaddr + pm->slen - tgt) / PAGE;
	if (!*n)
		*n = 1;
	return tgt;
}

/*
 * Offset and size of an attachment of our permit's segment, and often a
 * fixed address in our arena (sometimes its own source: a self-map).
 */
static void fz_attach_range(struct fz *f, struct fz_attach_req *q)
{
	const struct fz_perm *pm = q->pm;
	uint64_t tgt = fz_attach_source(f, pm, &q->n);

	q->fixed = chance(&f->r, 55);
	if (q->fixed) {
		q->fp = fz_fixed_page(f);
		/* an attachment of itself, or of the same address elsewhere */
		if (chance(&f->r, 8) &&
		    pm->svaddr <= (uintptr_t)pg_addr(f, q->fp) &&
		    (uintptr_t)pg_addr(f, q->fp) < pm->svaddr + pm->slen) {
			tgt = (uintptr_t)pg_addr(f, q->fp);
			q->selfmap = 1;
		}
		if (q->fp + q->n > FZ_PAGES)
			q->n = FZ_PAGES - q->fp;
		if (tgt + q->n * PAGE > pm->svaddr + pm->slen)
			q->n = (pm->svaddr + pm->slen - tgt) / PAGE;
		q->want = (uintptr_t)pg_addr(f, q->fp);
	}
	q->safe = in_arena(f, tgt, q->n * PAGE);
	/* writable, of memory outside an arena: never into ours (fuzz.h) */
	if (q->fixed && pm->rdwr && !q->safe)
		q->fixed = 0, q->want = 0, q->selfmap = 0;
	q->c.offset = (off_t)(tgt - pm->svaddr);
	q->c.size = q->n * PAGE - (chance(&f->r, 10) ? rnd(&f->r, PAGE - 1) : 0);
	q->c.vaddr = q->want;
}

/* Sometimes one field made wrong: then the ATTACH must fail. */
static void fz_attach_break(struct fz *f, struct fz_attach_req *q)
{
	struct xpmem_cmd_attach *c = &q->c;

	if (!chance(&f->r, 15))
		return;
	q->must_fail = 1;
	switch (rnd(&f->r, 8)) {
	case 0:
		c->offset |= 1 + rnd(&f->r, PAGE - 1);
		break;
	case 1:
		c->offset = -(off_t)(PAGE * (1 + rnd(&f->r, 4)));
		break;
	case 2:
		c->offset = (off_t)(1ULL << 62);
		break;
	case 3:
		c->size = 0;
		break;
	case 4:		/* offset + size wraps */
		c->size = -(uint64_t)PAGE * (1 + rnd(&f->r, 4));
		c->vaddr = 0;
		break;
	case 5:
		c->flags = (int)(1 + rnd(&f->r, 0x7fffffff));
		break;
	case 6:
		c->vaddr = (q->fixed ? q->want : (uintptr_t)pg_addr(f, 0)) |
			   (1 + rnd(&f->r, PAGE - 1));
		break;
	default:
		c->vaddr = chance(&f->r, 50) ? KADDR + rnd(&f->r, 64) * PAGE :
			   -PAGE * (1 + rnd(&f->r, 4));
		break;
	}
}

/* EXT_ATTACH: the same request, with random options. */
static long fz_ext_attach(struct fz *f, struct fz_attach_req *q, int am)
{
	struct xpmem_ext_attach x = {
		.apid = q->c.apid, .offset = (uint64_t)q->c.offset,
		.size = q->c.size, .vaddr = q->c.vaddr,
		.flags = q->c.vaddr ? XPMEM_EXT_ATTACH_FIXED : 0,
	};
	unsigned int o = rnd(&f->r, 8);
	long r;

	/* a bit above every defined flag (must fail) */
	if (q->c.flags)
		x.flags |= (XPMEM_EXT_ATTACH_FLAGS + 1) << rnd(&f->r, 27);
	x.flags |= (o & 1 ? XPMEM_EXT_ATTACH_RDONLY : 0) |
		   (o & 2 ? XPMEM_EXT_ATTACH_POPULATE : 0) |
		   (o & 4 ? XPMEM_EXT_ATTACH_POPULATE_WRITE : 0);
	if ((o & 5) == 5 || ((o & 4) && (!q->pm || !q->pm->rdwr)))
		q->must_fail = 1;
	if (chance(&f->r, 3)) {
		x.reserved[rnd(&f->r, 3)] = 1 + rnd(&f->r, 8);
		q->must_fail = 1;
	}
	q->rdonly = o & 1;
	if (am != ARG_OK)
		q->must_fail = 1;
	r = xp_ioctl_ret(f->fd, XPMEM_CMD_EXT_ATTACH,
			 fz_arg(f, am, &x, sizeof(x)));
	q->c.vaddr = x.vaddr;
	f->ext_attaches++;
	return r;
}

/* After a successful ATTACH: check where it went, and model it as @ai. */
static void fz_attach_record(struct fz *f, const struct fz_attach_req *q,
			     int ai)
{
	const struct fz_perm *pm = q->pm;
	uint64_t va = q->c.vaddr;
	unsigned long n = (q->c.size + PAGE - 1) / PAGE;
	unsigned char vec;

	if (va & (PAGE - 1) || (q->fixed && va != q->want))
		fz_fail(f, "ATTACH returned address 0x%llx (wanted 0x%llx)",
			(unsigned long long)va, (unsigned long long)q->want);
	if (mincore((void *)(uintptr_t)va, PAGE, &vec))
		fz_fail(f, "ATTACH returned 0x%llx, nothing mapped there: %s",
			(unsigned long long)va, strerror(errno));
	f->atts[ai] = (struct fz_att){
		.used = 1, .perm = q->pi, .writable = pm->rdwr && !q->rdonly,
		.safe = q->safe,
	};
	if (in_arena(f, va, n * PAGE)) {
		fz_set(f, (va - (uintptr_t)f->arena) / PAGE, n, PK_ATT,
		       PROT_READ | (pm->rdwr && !q->rdonly ? PROT_WRITE : 0), ai);
		if (pm->rdwr && !q->safe)
			fz_fail(f, "internal: unsafe writable attachment in the arena");
	} else if (va + n * PAGE > (uintptr_t)f->arena &&
		   va < (uintptr_t)f->arena + FZ_ARENA) {
		fz_fail(f, "ATTACH at 0x%llx straddles the arena",
			(unsigned long long)va);
	} else {
		f->atts[ai].oaddr = va;
		f->atts[ai].olen = n;
	}
	f->sh->addrs[rnd(&f->r, FZ_SLOTS)] = va + rnd(&f->r, n) * PAGE;
}

/*
 * ATTACH (or EXT_ATTACH) through one of our permits, someone else's, a
 * dead or a guessed one; of our permit's segment, mostly a range of the
 * owner's arena, often at a fixed address in ours.
 */
void op_attach(struct fz *f)
{
	struct fz_attach_req q = {
		.c = { .fd = f->fd }, .pi = -1, .must_fail = 1, .n = 1,
	};
	unsigned long v;
	int ai, am;
	long r;

	v = rnd(&f->r, 100);
	ai = fz_attach_slot(f);
	fz_attach_permit(f, v, &q);
	if (!q.pm || !q.pm->slen) {
		/* not ours, or a segment we know nothing about: never fixed */
		q.c.offset = rnd(&f->r, 4) * PAGE;
		q.c.size = PAGE * (1 + rnd(&f->r, 4));
	} else {
		fz_attach_range(f, &q);
		fz_attach_break(f, &q);
	}
	am = fz_argmode(f);
	if (am != ARG_OK)
		q.must_fail = 1;
	if (q.selfmap)
		f->selfmaps++;
	if (chance(&f->r, 30))
		r = fz_ext_attach(f, &q, am);
	else
		r = xp_ioctl_ret(f->fd, XPMEM_CMD_ATTACH,
				 fz_arg(f, am, &q.c, sizeof(q.c)));
	fz_check(f, r, q.must_fail, q.selfmap ? "ATTACH (onto its own source)" :
		 "ATTACH");
	if (r) {
		/* a MAP_FIXED attempt may have unmapped the target */
		if (q.fixed && q.c.vaddr == q.want)
			fz_reset(f, q.fp, q.n);
		return;
	}
	fz_attach_record(f, &q, ai);
}

/* Which of our attachments contains @a? -1 if none. */
static int fz_att_at(struct fz *f, uint64_t a)
{
	int i;

	if (in_arena(f, a, 1)) {
		unsigned long p = (a - (uintptr_t)f->arena) / PAGE;

		return f->kind[p] == PK_ATT ? f->att[p] : -1;
	}
	for (i = 0; i < FZ_ATTS; i++)
		if (f->atts[i].used && f->atts[i].olen && a >= f->atts[i].oaddr &&
		    a < f->atts[i].oaddr + f->atts[i].olen * PAGE)
			return i;
	return -1;
}

/*
 * DETACH inside one of our attachments, at an arena page, at someone's
 * attachment address or at a bad address.
 */
void op_detach(struct fz *f)
{
	struct xpmem_cmd_detach c = { 0 };
	unsigned long v = rnd(&f->r, 20);
	unsigned char vec;
	int ai, am, must_fail = 0;
	long p, r;

	if (v < 10) {
		ai = FZ_PICK(f, f->atts);
		if (ai < 0)
			return;
		if (f->atts[ai].olen)
			c.vaddr = f->atts[ai].oaddr + rnd(&f->r, f->atts[ai].olen) * PAGE;
		else if ((p = fz_find(f, PK_ATT, ai)) >= 0)
			c.vaddr = (uintptr_t)pg_addr(f, p);
		else
			return;
		c.vaddr += rnd(&f->r, 8) ? 0 : rnd(&f->r, PAGE);
	} else if (v < 14) {
		c.vaddr = (uintptr_t)pg_addr(f, rnd(&f->r, FZ_PAGES));
	} else if (v < 17) {
		c.vaddr = f->sh->addrs[rnd(&f->r, FZ_SLOTS)];
	} else {
		c.vaddr = chance(&f->r, 50) ? KADDR : rnd(&f->r, 3) * PAGE;
	}
	ai = fz_att_at(f, c.vaddr);
	am = fz_argmode(f);
	if (am != ARG_OK && am != ARG_RO)
		must_fail = 1;
	r = xp_ioctl_ret(f->fd, XPMEM_CMD_DETACH, fz_arg(f, am, &c, sizeof(c)));
	fz_check(f, r, must_fail, "DETACH");
	if (r && ai >= 0 && am == ARG_OK)
		fz_fail(f, "DETACH of own attachment at 0x%llx: %s",
			(unsigned long long)c.vaddr, strerror(-r));
	if (r)
		return;
	if (ai >= 0) {
		fz_att_gone(f, ai, 0);
		return;
	}
	/* No attachment there: nothing may have been unmapped. */
	if (in_arena(f, c.vaddr, 1) &&
	    mincore((void *)(uintptr_t)(c.vaddr & ~(PAGE - 1)), PAGE, &vec))
		fz_fail(f, "DETACH at 0x%llx (not an attachment) unmapped it",
			(unsigned long long)c.vaddr);
}

/*
 * An attachment over its own source: a scratch range of this
 * process is exported and unmapped, then attached without FIXED (the
 * kernel's next choice is that very hole) and moved onto its source with
 * mremap(MREMAP_FIXED); neither may land there, and a split of the
 * attachment in its middle (page tables present) returns.  Self-contained:
 * the scratch range lies outside the arena and is gone at the end.
 */
void op_selfplace(struct fz *f)
{
	const size_t len = 4UL << 20;
	xpmem_segid_t segid;
	xpmem_apid_t apid;
	void *src, *to, *va;

	src = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (src == MAP_FAILED)
		return;
	if (xp_make(f->fd, src, len, 0600, &segid)) {
		munmap(src, len);
		return;
	}
	munmap(src, len);
	if (xp_get(f->fd, segid, XPMEM_RDWR, &apid))
		goto remove;
	if (xp_attach(f->fd, apid, 0, len, NULL, &va))
		goto release;
	if ((uint8_t *)va < (uint8_t *)src + len &&
	    (uint8_t *)src < (uint8_t *)va + len)
		fz_fail(f, "attach without FIXED at %p over its own source %p",
			va, src);
	munmap((uint8_t *)va + len / 2 + PAGE, PAGE);
	to = mremap(va, len / 2, len / 2,
		    MREMAP_MAYMOVE | MREMAP_FIXED, src);
	if (to != MAP_FAILED)
		fz_fail(f, "mremap of an attachment onto its own source at %p",
			to);
	xp_detach(f->fd, (uint8_t *)va + len - PAGE);
	f->ok[f->op]++;
release:
	xp_release(f->fd, apid);
remove:
	xp_remove(f->fd, segid);
}

/* An EXT_POPULATE of arena pages, mostly attachments; whether it must fail. */
static int fz_populate_cmd(struct fz *f, struct xpmem_ext_populate *pp)
{
	long p = fz_find(f, chance(&f->r, 70) ? PK_ATT : -1, -1);

	if (p < 0)
		p = rnd(&f->r, FZ_PAGES);
	pp->vaddr = (uintptr_t)pg_addr(f, p);
	pp->len = (1 + rnd(&f->r, 8)) * PAGE;
	pp->flags = rnd(&f->r, 2);
	if (chance(&f->r, 5)) {
		pp->flags |= 2;
		return 1;
	}
	return 0;
}

/*
 * The local side of a copy from a segment: the scratch buffer's PROT_NONE
 * or read-only page, a kernel address, or (mostly) the gup buffer.
 */
static uint64_t fz_copy_local(struct fz *f)
{
	switch (rnd(&f->r, 8)) {
	case 0:
		return (uintptr_t)f->scr + PAGE;
	case 1:
		return (uintptr_t)f->scr + 2 * PAGE;
	case 2:
		return KADDR;
	default:
		return (uintptr_t)f->buf;
	}
}

/* An EXT_COPY of @len bytes (see op_copy()); whether it must fail. */
static int fz_copy_cmd(struct fz *f, struct xpmem_ext_copy *x, uint64_t len)
{
	struct fz_perm *pm = NULL;
	int pi, must_fail = 0;

	pi = chance(&f->r, 85) ? FZ_PICK(f, f->perm) : -1;
	if (pi >= 0) {
		pm = &f->perm[pi];
		x->apid = pm->apid;
	} else {
		x->apid = chance(&f->r, 50) ? fz_guess(f) :
			  f->sh->apids[rnd(&f->r, FZ_SLOTS)].apid;
		pi = fz_own_perm(f, x->apid);
		pm = pi < 0 ? NULL : &f->perm[pi];
		must_fail = !pm;
	}
	x->offset = pm && chance(&f->r, 90) && pm->slen > len ?
		rnd(&f->r, (pm->slen - len) < (1UL << 30) ?
		    pm->slen - len : 1UL << 30) :
		rnd(&f->r, 1UL << 40);
	/* mostly where the owner has memory: its arena */
	if (pm && chance(&f->r, 60)) {
		uint64_t a = (uintptr_t)pg_addr(f, rnd(&f->r, FZ_PAGES)) +
			     rnd(&f->r, PAGE);

		if (a >= pm->svaddr && a - pm->svaddr + len <= pm->slen)
			x->offset = a - pm->svaddr;
	}
	x->len = len;
	/*
	 * Writes go only into arena memory: a segment may be a whole
	 * address space, and a random offset into it the owner's stack.
	 * A permit that is not ours writes nothing (EACCES).
	 */
	if (chance(&f->r, 50) &&
	    (!pm || in_arena(f, pm->svaddr + x->offset, len))) {
		x->flags = XPMEM_EXT_COPY_TO;
		x->addr = (uintptr_t)pg_addr(f, rnd(&f->r, FZ_PAGES));
		if (pm && !pm->rdwr)
			must_fail = 1;
	} else {
		x->addr = fz_copy_local(f);
	}
	if (chance(&f->r, 5)) {
		x->flags |= 0x4U << rnd(&f->r, 29);
		must_fail = 1;
	}
	if (chance(&f->r, 5)) {
		x->reserved[rnd(&f->r, 3)] = 1;
		must_fail = 1;
	}
	return must_fail;
}

/* Command @i (EXT_POPULATE @pp if @pop, else EXT_COPY @x) as a ring SQE. */
static void fz_copy_sqe(struct fz *f, int i, int pop,
			struct xpmem_ext_copy *x, struct xpmem_ext_populate *pp)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&f->ring);

	if (!sqe)
		fz_fail(f, "no free SQE in an idle ring");
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = f->fd;
	sqe->cmd_op = pop ? XPMEM_CMD_EXT_POPULATE : XPMEM_CMD_EXT_COPY;
	sqe->addr3 = pop ? (uintptr_t)pp : (uintptr_t)x;
	sqe->user_data = i;
	/*
	 * Some name the registered buffer: those whose bytes lie in it copy,
	 * the others fail (EFAULT, EINVAL for a vector), and what must fail
	 * still does.
	 */
	if (!pop && f->have_fixed && chance(&f->r, 30)) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = chance(&f->r, 95) ? 0 : 1;
	}
}

/*
 * Submit the ring's @n commands and check their completions: no more
 * than @want bytes, and a failure where @must_fail says so.
 */
static void fz_copy_ring_end(struct fz *f, int n, const uint64_t *want,
			     const int *must_fail)
{
	struct io_uring_cqe *cqe;
	long r;
	int i;

	f->uring_cmds += n;
	/*
	 * An SQE io_uring refuses at prep (a bad buffer index) ends the
	 * submission there with its error in a CQE: submit the rest again.
	 */
	for (i = 0; i < n; i += r) {
		r = io_uring_submit(&f->ring);
		if (r <= 0)
			fz_fail(f, "io_uring_submit of %d xpmem commands: %ld",
				n - (int)i, r);
	}
	for (i = 0; i < n; i++) {
		if (io_uring_wait_cqe(&f->ring, &cqe))
			fz_fail(f, "io_uring_wait_cqe failed");
		r = cqe->res;
		if (cqe->user_data >= (uint64_t)n)
			fz_fail(f, "CQE with unknown tag %llu",
				(unsigned long long)cqe->user_data);
		if (r > (long)want[cqe->user_data])
			fz_fail(f, "ring EXT_COPY of %llu bytes returned %ld",
				(unsigned long long)want[cqe->user_data], r);
		fz_check(f, r, must_fail[cqe->user_data], "ring EXT_COPY");
		io_uring_cqe_seen(&f->ring, cqe);
	}
}

/*
 * EXT_COPY (or EXT_POPULATE) with a random permit, range, local buffer
 * and flags, through the ioctl or, in batches of up to four, through the
 * worker's io_uring.  The local side of a copy from a segment is the
 * worker's scratch buffer (valid), one of its PROT_NONE or read-only
 * pages, or a kernel address; of a copy to a segment (only where the
 * segment's bytes are arena pages), any arena page.
 * What must fail: a bad flag or reserved word, a permit that is not
 * ours, COPY_TO through a read-only one.  A copy never reports more
 * bytes than asked for.
 */
void op_copy(struct fz *f)
{
	struct xpmem_ext_copy x[4];
	struct xpmem_ext_populate pp[4];
	int must_fail[4], pop[4], n = 1, i;
	int ring = f->have_ring && chance(&f->r, 40);
	uint64_t want[4];
	long r;

	if (ring)
		n = 1 + rnd(&f->r, 4);
	for (i = 0; i < n; i++) {
		uint64_t len = 1 + rnd(&f->r, 4 * PAGE);

		memset(&x[i], 0, sizeof(x[i]));
		memset(&pp[i], 0, sizeof(pp[i]));
		pop[i] = chance(&f->r, 15);
		must_fail[i] = pop[i] ? fz_populate_cmd(f, &pp[i]) :
			       fz_copy_cmd(f, &x[i], len);
	}
	f->ext_copies += n;
	f->ops[f->op] += n - 1;		/* counted per command */
	for (i = 0; i < n; i++) {
		want[i] = pop[i] ? 0 : x[i].len;
		if (ring) {
			fz_copy_sqe(f, i, pop[i], &x[i], &pp[i]);
			continue;
		}
		r = xp_ioctl_ret(f->fd, pop[i] ? XPMEM_CMD_EXT_POPULATE :
				 XPMEM_CMD_EXT_COPY,
				 pop[i] ? (void *)&pp[i] : (void *)&x[i]);
		if (r > (long)want[i])
			fz_fail(f, "EXT_COPY of %llu bytes returned %ld",
				(unsigned long long)want[i], r);
		fz_check(f, r, must_fail[i], "EXT_COPY");
	}
	if (ring)
		fz_copy_ring_end(f, n, want, must_fail);
}

/* An ioctl the device does not have, with random words as its argument. */
void op_junk(struct fz *f)
{
	unsigned long cmd;
	uint64_t *w = (uint64_t *)f->scr;
	void *arg;
	long r;
	int i;

	do {
		switch (rnd(&f->r, 4)) {
		case 0:
			cmd = _IO(XPMEM_IOC_MAGIC, 9 + rnd(&f->r, 247));
			break;
		case 1:
			cmd = _IOC(rnd(&f->r, 4), XPMEM_IOC_MAGIC, rnd(&f->r, 256),
				   8 * (1 + rnd(&f->r, 32)));
			break;
		case 2:
			cmd = _IOC(rnd(&f->r, 4), XPMEM_IOC_MAGIC, 1 + rnd(&f->r, 8),
				   8 * (1 + rnd(&f->r, 8)));
			break;
		default:
			cmd = (uint32_t)rnd64(&f->r);
			break;
		}
	} while (_IOC_TYPE(cmd) == XPMEM_IOC_MAGIC && _IOC_NR(cmd) <= 8 &&
		 _IOC_SIZE(cmd) == 0 && _IOC_DIR(cmd) == _IOC_NONE);
	for (i = 0; i < 32; i++)
		w[i] = chance(&f->r, 30) ? rnd(&f->r, 8) : rnd64(&f->r);
	switch (rnd(&f->r, 4)) {
	case 0:
		arg = NULL;
		break;
	case 1:
		arg = (void *)(uintptr_t)KADDR;
		break;
	default:
		arg = f->scr;
		break;
	}
	r = xp_ioctl_ret(f->fd, cmd, arg);
	if (r < 0 && !clean_errno(r))
		fz_fail(f, "ioctl 0x%lx: unexpected errno %ld", cmd, -r);
	if (r >= 0)
		f->ok[f->op]++;
}
