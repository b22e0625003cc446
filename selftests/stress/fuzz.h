/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stress/fuzz.h - the ioctl fuzzer of xpmem_stress (stress/fuzz.c, its
 * operations in stress/fuzz_ops_*.c): the table its worker processes
 * share with the test process, which forks them and reports on it, and
 * the worker's entry point.
 *
 * N worker processes, forked after the test process reserved an arena (so
 * the arena is at the same address in every worker), share a table of ids
 * and addresses in MAP_SHARED memory and call random operations on them:
 * their own and each other's segments and permits, removed and released
 * ids, guessed ids, garbage structs and argument pointers, fixed attach
 * addresses over everything inside the arena, and memory operations on
 * both sides.
 *
 * Every MAP_FIXED the fuzzer issues stays inside its arena (kernel
 * addresses aside, which cannot map), so the fuzzer's code, stack and heap
 * are never replaced.  Each worker keeps a model of its arena, page by
 * page, that says what may be written: its own memory, and attachments
 * whose owner-side range lies inside the owner's arena.  Writable
 * attachments of anything outside an arena are only ever mapped outside
 * the arenas, so no chain of attachments leads a write out of an arena.
 */
#ifndef XPMEM_STRESS_FUZZ_H
#define XPMEM_STRESS_FUZZ_H

#include <stdint.h>

#include "../xpmem_test.h"

#define FZ_PAGES	4096UL			/* 16 MiB arena */
#define FZ_ARENA	(FZ_PAGES * PAGE)
#define FZ_SLOTS	64
#define FZ_MAXPROCS	16

enum fz_op {
	FZ_MAKE, FZ_MAKE_BAD, FZ_REMOVE, FZ_GET, FZ_RELEASE, FZ_ATTACH,
	FZ_DETACH, FZ_JUNK, FZ_TOUCH, FZ_MMAP, FZ_MUNMAP, FZ_MREMAP,
	FZ_MPROTECT, FZ_MADVISE, FZ_GUP, FZ_FORK, FZ_REOPEN, FZ_PROC, FZ_COPY,
	FZ_SELFPLACE, FZ_NOPS
};

extern const char *const fz_names[FZ_NOPS];

struct fz_segslot {
	int64_t segid;
	uint64_t vaddr, size;
	int32_t pid, uid, gid, mode, removed;
};

struct fz_apidslot {
	int64_t apid;
	int32_t pid, released;
};

struct fz_procinfo {
	int32_t pid, uid;
	uint64_t addr[5];		/* stack, text, data, heap, vdso */
	volatile int32_t op;
	volatile int64_t opi;
};

struct fz_shared {
	int lock;
	struct fz_segslot segs[FZ_SLOTS];
	struct fz_apidslot apids[FZ_SLOTS];
	uint64_t addrs[FZ_SLOTS];
	struct fz_procinfo procs[FZ_MAXPROCS];
	long ops[FZ_NOPS], ok[FZ_NOPS], ns[FZ_NOPS];
	long touches, sigbus, sigsegv, refused, selfmaps, forks, child_touches;
	long ext_attaches, ext_makes, ext_gets, ext_copies, uring_cmds;
	int secretmem;
	uint64_t crash_addr[FZ_MAXPROCS];
	int failed;
	char fail[640];
};

/*
 * One worker process: @nops random operations drawn from @seed and @id
 * on the arena (FZ_ARENA bytes at the same address in every worker) and
 * the shared table @sh.  Returns the exit code: 0, or the step that
 * failed (the message is in @sh->fail).
 */
int fz_worker(struct fz_shared *sh, uint8_t *arena, int id, uint64_t seed,
	      long nops);

#endif /* XPMEM_STRESS_FUZZ_H */
