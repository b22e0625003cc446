/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stress/stress.h - what xpmem_stress.c and stress/fuzz.c share: a
 * seeded random number generator, and the errnos a failing call may
 * return.
 */
#ifndef XPMEM_STRESS_STRESS_H
#define XPMEM_STRESS_STRESS_H

#include <errno.h>
#include <stdint.h>

#include "../xpmem_test.h"

/* ---- random numbers ----------------------------------------------------- */

struct rng {
	uint64_t s;
};

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* splitmix64 */
static inline uint64_t rnd64(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix64(r->s);
}

static inline unsigned long rnd(struct rng *r, unsigned long n)
{
	return n ? rnd64(r) % n : 0;
}

static inline int chance(struct rng *r, unsigned int pct)
{
	return rnd(r, 100) < pct;
}

static inline void rng_init(struct rng *r, uint64_t seed, uint64_t stream)
{
	r->s = mix64(seed ^ mix64(stream + 1));
}

/*
 * errnos a failing call may return: argument, permission, lookup, memory
 * and limit errors, and the classic NOPROC.  Anything else (EIO, a
 * kernel-internal code such as ERESTARTSYS or EBADE, ...) is a bug.
 */
static inline int clean_errno(long e)
{
	switch (-e) {
	case EINVAL: case ENOENT: case EACCES: case EPERM: case EFAULT:
	case ENOMEM: case ENOTTY: case EBUSY: case EEXIST: case EAGAIN:
	case ENOSPC: case EMFILE: case ENFILE: case EDQUOT: case EOVERFLOW:
	case E2BIG: case ERANGE: case ENXIO: case ENODEV: case EOPNOTSUPP:
	case ELOOP: case ESRCH: case EINTR: case EDEADLK:
	case XPMEM_ERRNO_NOPROC:
		return 1;
	}
	return 0;
}

#endif /* XPMEM_STRESS_STRESS_H */
