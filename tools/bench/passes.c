// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * passes.c - the attacher's passes: first passes over fresh attachments
 * and memfd mappings, second passes over a mapped one, and the module's
 * counters around each first pass.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"

/*
 * One read pass sums every 64-bit word (and the sum is checked: the owner
 * filled everything with PATTERN and every write pass writes PATTERN
 * again); one write pass is a memset of PATTERN.  The same two functions
 * serve every kind of mapping.
 */
__attribute__((noinline)) uint64_t read_pass(const void *p, size_t len)
{
	const uint64_t *q = p;
	uint64_t s = 0;
	size_t i, n = len / sizeof(*q);

	for (i = 0; i < n; i++)
		s += q[i];
	return s;
}

static __attribute__((noinline)) void write_pass(void *p, size_t len)
{
	memset(p, PATTERN, len);
}

uint64_t expected_sum(size_t len)
{
	uint64_t w;

	memset(&w, PATTERN, sizeof(w));
	return w * (uint64_t)(len / sizeof(w));
}

/* Time @inner read passes over @p (already mapped): ns per pass; -1 on a bad sum. */
static double read_again(const void *p, size_t len, size_t inner, uint64_t want)
{
	double t0 = now_ns();
	int bad = 0;
	size_t k;

	for (k = 0; k < inner; k++)
		bad |= read_pass(p, len) != want;
	return bad ? -1 : (now_ns() - t0) / inner;
}

static double write_again(void *p, size_t len, size_t inner)
{
	double t0 = now_ns();
	size_t k;

	for (k = 0; k < inner; k++)
		write_pass(p, len);
	return (now_ns() - t0) / inner;
}

static void *fresh_map(const struct target *tg, int xp)
{
	void *m;

	if (!xp)
		return map_memfd(tg->kind, tg->memfd, tg->maplen);
	m = xpmem_attach(tg->addr, tg->size, NULL);
	return m == (void *)-1 ? MAP_FAILED : m;
}

static int fresh_unmap(const struct target *tg, int xp, void *m)
{
	return xp ? xpmem_detach(m) : munmap(m, tg->maplen);
}

/*
 * First passes over @fresh fresh attachments (@xp) or memfd mappings, one
 * after the other, then, unless @t2 is NULL, a second pass (@inner times)
 * over the last one.  P_WRITE_AFTER_READ reads each mapping (untimed, its
 * sum checked) and times the write pass that follows.
 * @t1, @t2: ns per pass; @d: the module counters' change per timed pass.
 * 0, or 1 with a message.
 */
static int passes(const struct target *tg, int xp, enum first_pass pass,
		  size_t fresh, size_t inner, double *t1, double *t2,
		  double *d)
{
	int write = pass != P_READ;
	uint64_t want = expected_sum(tg->size);
	double s0[NSTATS], s1[NSTATS], t0;
	size_t k;
	int s;
	void *m;

	*t1 = 0;
	for (s = 0; s < NSTATS; s++)
		d[s] = 0;
	for (k = 0; k < fresh; k++) {
		m = fresh_map(tg, xp);
		if (m == MAP_FAILED)
			return afail(xp ? "xpmem_attach" : "mmap memfd");
		if (pass == P_WRITE_AFTER_READ && read_pass(m, tg->size) != want)
			goto bad_data;
		if (xp)
			stats_snap(s0);
		t0 = now_ns();
		if (write)
			write_pass(m, tg->size);
		else if (read_pass(m, tg->size) != want)
			goto bad_data;
		*t1 += now_ns() - t0;
		if (xp) {
			stats_snap(s1);
			for (s = 0; s < NSTATS; s++)
				d[s] += s1[s] - s0[s];	/* NaN if unknown */
		}
		if (k == fresh - 1 && t2) {
			*t2 = write ? write_again(m, tg->size, inner) :
				      read_again(m, tg->size, inner, want);
			if (*t2 < 0)
				goto bad_data;
		}
		if (fresh_unmap(tg, xp, m))
			return afail(xp ? "xpmem_detach" : "munmap memfd");
	}
	*t1 /= fresh;
	for (s = 0; s < NSTATS; s++)
		d[s] /= fresh;
	return 0;

bad_data:
	fprintf(stderr, "xpmem-bench: attacher: %s %s %zu bytes: data differs from what the owner wrote\n",
		xp ? "attachment" : "memfd", kind_name[tg->kind], tg->size);
	return 1;
}

/*
 * @pass on the attachment and right beside it on the memfd (their ratio
 * is taken per repeat), the two in turn first; P_WRITE_AFTER_READ has no
 * second pass.  0, or 1 with a message.
 */
int paired_passes(const struct target *tg, enum first_pass pass, int rep,
		  size_t fresh, size_t inner, struct pass_pair *pp)
{
	int again = pass != P_WRITE_AFTER_READ;
	double dm[NSTATS];
	int c, xp;

	for (c = 0; c < 2; c++) {
		xp = (rep + c) % 2 == 0;
		if (passes(tg, xp, pass, fresh, inner,
			   xp ? &pp->t1 : &pp->m_t1,
			   !again ? NULL : xp ? &pp->t2 : &pp->m_t2,
			   xp ? pp->d : dm))
			return 1;
	}
	return 0;
}
