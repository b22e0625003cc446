/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stress/concurrency.h - the processes of xpmem_stress's concurrency cases
 * (stress/concurrency.c).  The test process forks them, watches the
 * progress counters they share with it (MAP_SHARED), stops and reaps them:
 *   owner churn: oc_owner() munmaps, mremaps, mprotects, forks and writes
 *     its exported memory while oc_attacher()'s threads fault and
 *     re-attach it; after the owner's exit every access is SIGBUS
 *   fault vs owner mmap: lv_owner()'s threads mmap and munmap unrelated
 *     memory while lv_attacher()'s threads fault its whole-address-space
 *     attachment (a livelock case)
 *   mutual mkwrite: two mk_side() processes write through RDWR
 *     attachments of each other's whole address space while mapping and
 *     unmapping
 * Each returns its exit code: 0, or the step that failed.
 */
#ifndef XPMEM_STRESS_CONCURRENCY_H
#define XPMEM_STRESS_CONCURRENCY_H

#include <stdint.h>

#include "../xpmem_test.h"

#define OC_PAGES	256

struct oc_shared {
	volatile long owner_it, faults, reattach;
	volatile int stop, stop_att;
	xpmem_segid_t segid;
	long sigbus, sigsegv, bad, final_sigbus, final_other;
	uint64_t bad_val;
	long bad_idx;
};

/* @shared: MAP_SHARED owner memory, else private; "g" on @wfd when made. */
int oc_owner(struct oc_shared *sh, int shared, int wfd, uint64_t seed);
/* Starts on "g" from @rfd; checks SIGBUS once @gofd says the owner is gone. */
int oc_attacher(struct oc_shared *sh, int rfd, int gofd);

struct lv_shared {
	volatile long owner_it, faults;
	volatile int stop;
	xpmem_segid_t segid;
	uint64_t buf;
	long sigs;
};

int lv_owner(struct lv_shared *sh, int wfd);
int lv_attacher(struct lv_shared *sh, int rfd);

struct mk_side {
	volatile long w_it, m_it;
	xpmem_segid_t segid;
	uint64_t buf;
	long sigs;
};

struct mk_shared {
	struct mk_side side[2];
	volatile int stop;
};

/* Side @i: its segment, then the peer's through @rfd and @wfd. */
int mk_side(struct mk_shared *sh, int i, int rfd, int wfd);

#endif /* XPMEM_STRESS_CONCURRENCY_H */
