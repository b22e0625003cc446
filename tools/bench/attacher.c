// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * attacher.c - the attacher process: it waits for the owner's job, runs
 * every repeat (attach+detach cycles, the passes beside their memfd
 * counterparts, process_vm_readv, the copies, a local memcpy) and sends
 * its numbers back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "bench.h"

/* attach+detach latency: the whole get/attach/detach/release cycle. */
static int cycle_latency(const struct attacher_ctx *a, int rep)
{
	struct xpmem_addr addr = { .offset = 0 };
	xpmem_apid_t apid;
	double t0;
	char *m;
	int c;

	t0 = now_ns();
	for (c = 0; c < CYCLES; c++) {
		apid = xpmem_get(a->job->segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
		if (apid == -1)
			return afail("xpmem_get");
		addr.apid = apid;
		m = xpmem_attach(addr, a->bc->size, NULL);
		if (m == (void *)-1)
			return afail("xpmem_attach");
		if (xpmem_detach(m))
			return afail("xpmem_detach");
		if (xpmem_release(apid))
			return afail("xpmem_release");
	}
	AV(a, M_LAT, rep) = (now_ns() - t0) / CYCLES / 1e3;
	return 0;
}

/*
 * Each xpmem measurement right beside its memfd counterpart (their ratio
 * is taken per repeat), the two in turn first: reads, writes, then writes
 * after reads, through one permit.
 */
static int all_passes(const struct attacher_ctx *a, int rep, size_t inner,
		      struct pass_pair *rd, struct pass_pair *wt,
		      struct pass_pair *war)
{
	size_t fresh = inner > 64 ? 64 : inner;
	struct target tg = {
		.job = a->job, .memfd = a->memfd, .kind = a->bc->kind,
		.size = a->bc->size, .maplen = a->bc->maplen,
	};

	tg.addr.apid = xpmem_get(a->job->segid, XPMEM_RDWR, XPMEM_PERMIT_MODE,
				 NULL);
	if (tg.addr.apid == -1)
		return afail("xpmem_get");
	tg.addr.offset = 0;
	if (paired_passes(&tg, P_READ, rep, fresh, inner, rd) ||
	    paired_passes(&tg, P_WRITE, rep, fresh, inner, wt) ||
	    paired_passes(&tg, P_WRITE_AFTER_READ, rep, fresh, inner, war))
		return 1;
	if (xpmem_release(tg.addr.apid))
		return afail("xpmem_release");
	return 0;
}

/* process_vm_readv of the owner's range into local memory. */
static int pvm_copies(struct attacher_ctx *a, int rep, size_t inner)
{
	size_t size = a->bc->size, k;
	struct iovec l = { a->dst, size };
	struct iovec r = { (void *)a->job->owner, size };
	double t0, t;

	t0 = now_ns();
	for (k = 0; k < inner; k++)
		if (process_vm_readv(a->owner, &l, 1, &r, 1, 0) != (ssize_t)size)
			break;
	t = now_ns() - t0;
	if (k < inner) {
		if (!a->pvm_warned)
			fprintf(stderr, "xpmem-bench: attacher: process_vm_readv: %s (not measured)\n",
				strerror(errno));
		a->pvm_warned = 1;
		AV(a, M_PVM, rep) = NaN;
	} else if (read_pass(a->dst, size) != expected_sum(size)) {
		fprintf(stderr, "xpmem-bench: attacher: process_vm_readv %s %zu bytes: data differs from what the owner wrote\n",
			kind_name[a->bc->kind], size);
		return 1;
	} else {
		AV(a, M_PVM, rep) = mibps(size, t / inner);
	}
	return 0;
}

/* The passes' speeds and the ratios of their times, per repeat. */
static void pass_speeds(const struct attacher_ctx *a, int rep,
			const struct pass_pair *rd, const struct pass_pair *wt,
			const struct pass_pair *war)
{
	size_t size = a->bc->size;

#define V(metric) AV(a, metric, rep)
	V(M_ACOPY16_PVM) = V(M_ACOPY16) / V(M_PVM);
	V(M_XR1) = mibps(size, rd->t1);
	V(M_XR2) = mibps(size, rd->t2);
	V(M_XW1) = mibps(size, wt->t1);
	V(M_XW2) = mibps(size, wt->t2);
	V(M_MR1) = mibps(size, rd->m_t1);
	V(M_MR2) = mibps(size, rd->m_t2);
	V(M_MW1) = mibps(size, wt->m_t1);
	V(M_MW2) = mibps(size, wt->m_t2);
	V(M_XWR) = mibps(size, war->t1);
	V(M_MWR) = mibps(size, war->m_t1);
	V(M_WR_M) = war->t1 / war->m_t1;
	/* ratios of times, per repeat: < 1 means the first one is faster */
	V(M_ACOPY16_XMC2) = V(M_ACOPY16) / V(M_XMCPY2);
	V(M_FCOPY16_XMC2) = V(M_FCOPY16) / V(M_XMCPY2);
	V(M_XR_12) = rd->t1 / rd->t2;
	V(M_XW_12) = wt->t1 / wt->t2;
	V(M_MR_12) = rd->m_t1 / rd->m_t2;
	V(M_MW_12) = wt->m_t1 / wt->m_t2;
	V(M_R1_M) = rd->t1 / rd->m_t1;
	V(M_R2_M) = rd->t2 / rd->m_t2;
	V(M_W1_M) = wt->t1 / wt->m_t1;
	V(M_W2_M) = wt->t2 / wt->m_t2;
#undef V
}

/* The module counters' change, per first pass over one attachment. */
static void pass_counters(const struct attacher_ctx *a, int rep,
			  const struct pass_pair *rd,
			  const struct pass_pair *wt,
			  const struct pass_pair *war)
{
	size_t size = a->bc->size;

#define V(metric) AV(a, metric, rep)
	V(M_FR1) = rd->d[S_FAULTS];
	V(M_FW1) = wt->d[S_FAULTS];
	V(M_FWR) = war->d[S_FAULTS];
	V(M_FR1_MIB) = rd->d[S_FAULTS] * MIB / size;
	V(M_FW1_MIB) = wt->d[S_FAULTS] * MIB / size;
	V(M_PG_R1_MIB) = rd->d[S_PAGES] * MIB / size;
	V(M_HUGE_R1) = rd->d[S_HUGE];
	V(M_HUGE_W1) = wt->d[S_HUGE];
	V(M_RETRY) = rd->d[S_RETRIES] + wt->d[S_RETRIES];
	V(M_SEQRETRY) = rd->d[S_SEQ] + wt->d[S_SEQ];
	V(M_WAITS) = rd->d[S_WAITS] + wt->d[S_WAITS];
	V(M_MKWF) = wt->d[S_MKWF];
#undef V
}

/*
 * Everything one repeat measures, into AV(@a, metric, @rep).  Below 1 MiB
 * a single pass is mostly clock and scheduling noise, so first passes are
 * timed over several fresh attachments (or mappings; at most 64, 1 MiB in
 * all) and the other passes repeated on the mapped range (1 MiB in all);
 * every number is per pass.
 */
static int attacher_repeat(struct attacher_ctx *a, int rep)
{
	size_t size = a->bc->size, k;
	size_t inner = size >= MIB ? 1 : MIB / size;
	struct pass_pair rd, wt, war;
	double t0;

	if (cycle_latency(a, rep) ||
	    all_passes(a, rep, inner, &rd, &wt, &war) ||
	    pvm_copies(a, rep, inner))
		return 1;
	/* the same range through the permit: xpmem_ext_copy, then queued */
	if (async_copies(a, rep, inner))
		return 1;
	/* local memcpy between two populated buffers of the attacher */
	t0 = now_ns();
	for (k = 0; k < inner; k++)
		memcpy(a->dst, a->src, size);
	AV(a, M_CPY, rep) = mibps(size, (now_ns() - t0) / inner);
	pass_speeds(a, rep, &rd, &wt, &war);
	pass_counters(a, rep, &rd, &wt, &war);
	return 0;
}

/* The attacher process: wait for the job, run every repeat, send results. */
int attacher(const struct bench_case *bc, int in, int out, int memfd,
	     pid_t owner)
{
	size_t vlen = sizeof(double) * NMETRICS * bc->repeats;
	struct attacher_ctx a = { .bc = bc, .memfd = memfd, .owner = owner };
	struct job job;
	int rep;

	if (full_read(in, &job, sizeof(job)))
		return 1;
	if (job.segid <= 0)
		return 0;
	a.job = &job;
	a.v = calloc(NMETRICS * bc->repeats, sizeof(*a.v));
	a.dst = mmap(NULL, bc->size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	a.src = mmap(NULL, bc->size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!a.v || a.dst == MAP_FAILED || a.src == MAP_FAILED)
		return afail("local memory");
	memset(a.src, PATTERN, bc->size);
	for (rep = 0; rep < bc->repeats; rep++)
		if (attacher_repeat(&a, rep))
			return 1;
	if (full_write(out, a.v, vlen))
		return afail("write results");
	return 0;
}
