/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stress/kill_storm.h - the kill storm of xpmem_stress (stress/kill_storm.c):
 * lifecycles of an owner and an attacher, each multi-threaded and busy in
 * every ioctl and fault path at once, SIGKILLed at a random point: after a
 * random number (0..12) of completed operations, counted by an eventfd
 * the victim's threads write after each.  The test runs lanes
 * concurrently, each a process in ks_lane().
 */
#ifndef XPMEM_STRESS_KILL_STORM_H
#define XPMEM_STRESS_KILL_STORM_H

#include <stdint.h>

#include "../xpmem_test.h"

enum ks_variant {
	KS_OWNER_FIRST, KS_ATTACHER_FIRST, KS_BOTH, KS_OWNER_AT_ONCE,
	KS_SELF, KS_OWNER_EXITS, KS_NVARIANTS
};

extern const char *const ks_names[KS_NVARIANTS];

/* What the lanes share with the test process (MAP_SHARED). */
struct ks_shared {
	long lifecycles[KS_NVARIANTS];
	volatile long done;
	long killed, exited, victims_sigbus;
	int failed;
	char fail[512];
};

/* @n lifecycles drawn from @seed and @lane; the first failure goes in @sh. */
void ks_lane(struct ks_shared *sh, int lane, uint64_t seed, long n);

#endif /* XPMEM_STRESS_KILL_STORM_H */
