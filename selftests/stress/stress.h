/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stress/stress.h - what xpmem_stress.c and the files of stress/ share: a
 * seeded random number generator, the errnos a failing call may return,
 * note() and reserve_aligned().
 */
#ifndef XPMEM_STRESS_STRESS_H
#define XPMEM_STRESS_STRESS_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

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

/* ---- output and memory ------------------------------------------------- */

/* One line on stdout, flushed (output goes to a file; children fork). */
static inline void __attribute__((format(printf, 1, 2)))
note(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* A PROT_NONE reservation of @len bytes aligned to @align. */
static inline uint8_t *reserve_aligned(size_t len, size_t align)
{
	uint8_t *p = mmap(NULL, len + align, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((uint8_t *)a + len, (uintptr_t)p + align - a);
	return (uint8_t *)a;
}

#endif /* XPMEM_STRESS_STRESS_H */
