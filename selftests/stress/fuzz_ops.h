/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stress/fuzz_ops.h - what the files of the fuzzer share (see fuzz.h):
 * the worker's model of its arena, ids and attachments (struct fz), the
 * helpers that keep it and report failures (stress/fuzz.c), and the
 * operations, by object:
 *   stress/fuzz_ops_seg.c  segments and permits: MAKE, REMOVE, GET,
 *                          RELEASE (classic and extended), close and
 *                          reopen, /proc/xpmem-objects
 *   stress/fuzz_ops_att.c  attachments and copies: ATTACH, DETACH,
 *                          an attachment over its own source, EXT_COPY
 *                          and EXT_POPULATE (ioctl and io_uring), junk
 *                          ioctls
 *   stress/fuzz_ops_mem.c  memory: touch, mmap, munmap, mremap, mprotect,
 *                          madvise, get_user_pages, fork
 * Every operation draws from the worker's one random stream (f->r), so a
 * seed replays the same operations in the same order.
 *
 * touch() keeps its state per translation unit (xpmem_test.h), and the
 * handler fz_worker() installs is stress/fuzz.c's: the operation files
 * probe memory through fz_touch(), and a fork child forgets the worker's
 * crash-address slot through fz_child_crash_slot().
 */
#ifndef XPMEM_STRESS_FUZZ_OPS_H
#define XPMEM_STRESS_FUZZ_OPS_H

#include <sched.h>
#include <stdint.h>
#include <liburing.h>

#include "../xpmem_test.h"
#include "fuzz.h"
#include "stress.h"

#define FZ_PERMS	24
#define FZ_ATTS		64
#define FZ_SEGS		16
#define FZ_SECRET_PAGES	16
#define FZ_TOP		xt_user_top()	/* end of the user address space */
#define KADDR		0xffff888000000000ULL	/* the direct map */

/* ---- the worker's model ---- */

/* What an arena page is. */
enum { PK_RESV, PK_PRIV, PK_SHARED, PK_MEMFD, PK_SECRET, PK_ATT };

struct fz_perm {
	int used;
	int64_t apid, segid;
	uint64_t svaddr, slen;		/* the segment, as its owner made it */
	int32_t spid;			/* owner, 0 if unknown */
	int rdwr;
};

struct fz_att {
	int used;
	int perm;
	int writable, safe;		/* safe: owner range inside the arena */
	long pages;			/* arena pages mapping it */
	uint64_t oaddr, olen;		/* mapped outside the arena */
};

struct fz_seg {
	int used;
	int64_t segid;
	uint64_t vaddr, size;
	int slot;
};

struct fz {
	struct rng r;
	struct fz_shared *sh;
	int id, fd, uid, gid;
	pid_t pid;
	uint8_t *arena;
	uint8_t kind[FZ_PAGES], prot[FZ_PAGES], inh[FZ_PAGES];
	int8_t att[FZ_PAGES];
	uint32_t hist[FZ_PAGES][4];	/* last changes: op # << 8 | what */
	struct fz_perm perm[FZ_PERMS];
	struct fz_att atts[FZ_ATTS];
	struct fz_seg seg[FZ_SEGS];
	int64_t dead[16];
	int ndead;
	uint8_t *scr;			/* [0] rw, [1] PROT_NONE, [2] ro */
	uint8_t *buf;			/* 4 pages for gup ops */
	int memfd, secretfd, tmpfd, pfd[2];
	int op;
	long opi;
	long ops[FZ_NOPS], ok[FZ_NOPS], ns[FZ_NOPS];
	long touches, sigbus, sigsegv, refused, selfmaps, forks;
	long ext_attaches, ext_makes, ext_gets, ext_copies, uring_cmds;
	struct io_uring ring;
	int have_ring, have_fixed;
};

static inline void sh_lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static inline void sh_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static inline uint8_t *pg_addr(struct fz *f, unsigned long p)
{
	return f->arena + p * PAGE;
}

static inline int in_arena(struct fz *f, uint64_t a, uint64_t len)
{
	uint64_t lo = (uintptr_t)f->arena;

	return a >= lo && len <= FZ_ARENA && a - lo <= FZ_ARENA - len;
}

/* ---- stress/fuzz.c: failures, the model, the shared table ---- */

void __attribute__((noreturn, format(printf, 2, 3)))
fz_fail(struct fz *f, const char *fmt, ...);
void fz_check(struct fz *f, long r, int must_fail, const char *what);
int fz_touch(volatile uint8_t *p, int write, uint8_t v);
void fz_child_crash_slot(void);

void fz_hist(struct fz *f, unsigned long p, char what);
const char *fz_hist_str(struct fz *f, unsigned long p);
void fz_set(struct fz *f, unsigned long p, unsigned long n, int kind,
	    int prot, int att);
void fz_reset(struct fz *f, unsigned long p, unsigned long n);
void fz_att_gone(struct fz *f, int ai, int do_unmap);
int fz_att_alloc(struct fz *f);
void fz_range(struct fz *f, unsigned long *p, unsigned long *n);
long fz_find(struct fz *f, int kind, int ai);
int fz_write_ok(struct fz *f, unsigned long p);

/* How an ioctl's argument is passed: fz_arg(). */
enum { ARG_OK, ARG_NULL, ARG_KERNEL, ARG_NONE, ARG_STRADDLE, ARG_RO, ARG_N };

int fz_argmode(struct fz *f);
void *fz_arg(struct fz *f, int mode, const void *cmd, size_t len);

void fz_publish_seg(struct fz *f, struct fz_seg *s, uint64_t mode);
void fz_seg_removed(struct fz *f, int si);
void fz_perm_released(struct fz *f, int pi);
int fz_own_seg(struct fz *f, int64_t segid);
int fz_own_perm(struct fz *f, int64_t apid);
int fz_pick_used(struct fz *f, int n, size_t stride, const void *base);
#define FZ_PICK(f, arr) \
	fz_pick_used(f, sizeof(arr) / sizeof(arr[0]), sizeof(arr[0]), arr)
int64_t fz_guess(struct fz *f);
int fz_id_known(struct fz *f, int64_t id);

/* ---- the operations ---- */

/* stress/fuzz_ops_seg.c */
void op_make(struct fz *f, int bad);
void op_remove(struct fz *f);
void op_remove_own(struct fz *f, int si);
void op_get(struct fz *f);
void op_release(struct fz *f);
void op_release_perm(struct fz *f, int pi);
void op_reopen(struct fz *f);
void op_proc(struct fz *f);

/* stress/fuzz_ops_att.c */
void op_attach(struct fz *f);
void op_detach(struct fz *f);
void op_selfplace(struct fz *f);
void op_copy(struct fz *f);
void op_junk(struct fz *f);

/* stress/fuzz_ops_mem.c */
void op_touch(struct fz *f);
void op_mmap(struct fz *f);
void op_munmap(struct fz *f);
void op_mremap(struct fz *f);
void op_mprotect(struct fz *f);
void op_madvise(struct fz *f);
void op_gup(struct fz *f);
void op_fork(struct fz *f);

#endif /* XPMEM_STRESS_FUZZ_OPS_H */
