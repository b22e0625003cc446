/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stress/fault_inject.h - the fault injection of xpmem_stress
 * (stress/fault_inject.c): failslab and fail_page_alloc, filtered to our
 * tasks (task-filter, /proc/self/make-it-fail) and, where the kernel has
 * the stack filter, to allocations made with xpmem's text on the stack
 * (require-start/-end = the module's .text and size).  Two worker
 * processes run every ioctl path, the fault path and the owner's
 * invalidation path in rounds; every call must succeed or fail with a
 * clean errno.
 */
#ifndef XPMEM_STRESS_FAULT_INJECT_H
#define XPMEM_STRESS_FAULT_INJECT_H

#include <stdint.h>

#include "../xpmem_test.h"

#define FI_DEBUGFS	"/sys/kernel/debug/"

enum {
	FI_OPEN, FI_MAKE, FI_GET, FI_ATTACH, FI_FAULT, FI_GET_PEER,
	FI_ATTACH_PEER, FI_FAULT_PEER, FI_OWNER_MM, FI_DETACH, FI_RELEASE,
	FI_REMOVE, FI_CLOSE, FI_NOPS
};

extern const char *const fi_names[FI_NOPS];

/* What the workers share with the test process (MAP_SHARED). */
struct fi_shared {
	xpmem_segid_t segid[2];
	uint64_t off[2];
	long calls[FI_NOPS], enomem[FI_NOPS], fails[FI_NOPS];
	int failed;
	char fail[256];
};

/* Write @val to debugfs FI_DEBUGFS/@dir/@attr, saving the old value. */
int fi_write(const char *dir, const char *attr, const char *val);
/* Put back every value fi_write() changed. */
void fi_restore(void);
/* The module's text range: [.text, .text + size from /proc/modules). */
int module_text(uint64_t *start, uint64_t *end);
/* Worker @me: @rounds of every path with failures injected; exit code. */
int fi_worker(struct fi_shared *sh, int me, long rounds, uint64_t seed);

#endif /* XPMEM_STRESS_FAULT_INJECT_H */
