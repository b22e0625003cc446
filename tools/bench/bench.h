/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench.h - declarations shared by the files of xpmem-bench.
 *
 * Files, each using only those listed before it:
 *
 *   util.c          clocks, sizes, whole reads and writes, /proc values,
 *                   mappings, error messages
 *   metrics.c       the kinds of owner memory, the metrics, the module
 *                   counters
 *   passes.c        the attacher's read and write passes over fresh
 *                   attachments and memfd mappings
 *   copies.c        the attacher's copies through a permit
 *   attacher.c      the attacher process: every repeat's measurements
 *   owner.c         the owner: one kind and size, from fork to results
 *   output.c        medians, the table, the targets, the CSV
 *   cycle.c         -c: registration-cache miss cycles (classic calls
 *                   only; with util.c, metrics.c and output.c it is all
 *                   of xpmem-bench-classic)
 *   ../xpmem-bench.c  options and the run
 */
#ifndef _XPMEM_BENCH_H
#define _XPMEM_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <xpmem.h>

/* ---- util.c --------------------------------------------------------------- */

size_t page_size(void);

/*
 * PAGE is the base page size, as the kernel says (4 KiB on x86_64; 4, 16
 * or 64 KiB on arm64).  HPAGE is the 2 MiB of the huge-page kinds: a PMD
 * with 4 KiB pages, and the 2 MiB hugetlb size every such kernel offers
 * (with 64 KiB pages a PMD is 512 MiB, and THP then gives no 2 MiB page).
 */
#define PAGE		page_size()
#define HPAGE		(2UL << 20)
#define KIB		(1UL << 10)
#define MIB		(1UL << 20)
#define GIB		(1UL << 30)
#define MIN_SIZE	PAGE
#define MAX_SIZE	(64UL << 30)
#define MAX_SIZES	16
#define MAX_REPEATS	1000
#define CYCLES		16	/* attach+detach cycles timed per repeat */
#define PATTERN		0x5a
#define TARGET_SIZE	(64UL << 20)
#define STATS_DIR	"/sys/class/misc/xpmem/stats/"
#define HUGE_2MB_FLAG	(21U << 26)	/* MAP_HUGE_2MB, MFD_HUGE_2MB */
#define HUGETLB_2MB_DIR	"/sys/kernel/mm/hugepages/hugepages-2048kB/"

#define NaN __builtin_nan("")
#define is_nan(x) __builtin_isnan(x)

double now_ns(void);
double mibps(size_t len, double ns);
const char *size_label(size_t size, char *buf, size_t len);
int full_write(int fd, const void *p, size_t len);
int full_read(int fd, void *p, size_t len);
long meminfo_kb(const char *key);
long read_long_file(const char *path);
double huge_pct(const void *addr, size_t len);
void *map_aligned(size_t len, int flags, int fd);
void *map_memfd(int kind, int memfd, size_t maplen);
int afail(const char *what);
int odie(const char *what);

/* ---- metrics.c ------------------------------------------------------------ */

enum kind { K_4K, K_THP, K_HUGETLB, K_ALLOC, NKINDS };

extern const char *const kind_name[NKINDS];
extern const char *const kind_what[NKINDS];

enum metric {
	M_LAT,
	M_XR1, M_XR2, M_XW1, M_XW2,
	M_MR1, M_MR2, M_MW1, M_MW2,
	M_PVM, M_CPY, M_XMCPY2, M_XCOPY, M_ACOPY1, M_ACOPY4, M_ACOPY16,
	M_FCOPY16, M_ACOPY16_PVM, M_ACOPY16_XMC2, M_FCOPY16_XMC2,
	M_XR_12, M_XW_12, M_MR_12, M_MW_12,
	M_R1_M, M_R2_M, M_W1_M, M_W2_M,
	M_XWR, M_MWR, M_WR_M,
	M_FR1_MIB, M_FW1_MIB, M_PG_R1_MIB, M_HUGE_R1, M_HUGE_W1,
	M_RETRY, M_SEQRETRY, M_WAITS, M_MKWF, M_FR1, M_FW1, M_FWR,
	M_OWNER_HUGE, M_MEMFD_HUGE,
	NMETRICS
};

struct metric_info {
	const char *csv;	/* CSV name */
	const char *label;	/* table row */
	const char *unit;
	int table;		/* shown in the table (all are in the CSV) */
	int fixed;		/* one value per kind and size, no spread */
};

extern struct metric_info minfo[NMETRICS];

enum counter {
	S_FAULTS, S_PAGES, S_RETRIES, S_SEQ, S_WAITS, S_MKWF, S_HUGE, NSTATS
};

extern int stat_have[NSTATS];
void stats_find(void);
void stats_snap(double *snap);

/* ---- passes.c ------------------------------------------------------------- */

/* What the owner sends the attacher. */
struct job {
	xpmem_segid_t segid;	/* <= 0: nothing to measure, exit */
	uintptr_t owner;	/* the owner's address of the segment */
};

/* What one attacher measures on: the segment or the memfd. */
struct target {
	const struct job *job;
	struct xpmem_addr addr;	/* apid set: xpmem; else the memfd */
	int memfd, kind;
	size_t size, maplen;
};

/* What passes() times first on a fresh mapping. */
enum first_pass { P_READ, P_WRITE, P_WRITE_AFTER_READ };

/* One kind of first pass, timed on the attachment and on the memfd. */
struct pass_pair {
	double t1, t2;		/* the attachment's first and second pass, ns */
	double d[NSTATS];	/* the module counters' change per first pass */
	double m_t1, m_t2;	/* the memfd mapping's */
};

uint64_t read_pass(const void *p, size_t len);
uint64_t expected_sum(size_t len);
int paired_passes(const struct target *tg, enum first_pass pass, int rep,
		  size_t fresh, size_t inner, struct pass_pair *pp);

/* ---- copies.c, attacher.c ------------------------------------------------- */

/* One kind and size: what the owner and its attacher both know. */
struct bench_case {
	int kind;
	size_t size;
	size_t maplen;		/* the owner's and the memfd's mapping */
	int repeats;
};

/* The attacher's state across its repeats. */
struct attacher_ctx {
	const struct bench_case *bc;
	const struct job *job;
	int memfd;
	pid_t owner;
	char *dst, *src;	/* local buffers of bc->size bytes */
	double *v;		/* v[metric * repeats + rep] */
	int pvm_warned;		/* process_vm_readv's failure was said */
};

/* The value of @metric in repeat @rep. */
#define AV(a, metric, rep)	((a)->v[(metric) * (a)->bc->repeats + (rep)])

int async_copies(const struct attacher_ctx *a, int rep, size_t inner);
int attacher(const struct bench_case *bc, int in, int out, int memfd,
	     pid_t owner);

/* ---- owner.c, output.c ---------------------------------------------------- */

/* One kind and size of a run. */
struct cell {
	int state;		/* 0 not run, 1 measured, -1 skipped */
	char note[256];
	double *v;		/* [NMETRICS * repeats] */
};

/* What a run measures and what it found. */
struct run {
	int nkinds, kinds[NKINDS];
	int nsizes;
	size_t sizes[MAX_SIZES];
	int repeats;
	struct cell cells[NKINDS][MAX_SIZES];
};

int run_one(int kind, size_t size, int repeats, struct cell *c);
int summarize(const double *vals, int n, double *med, double *min,
	      double *max);
void fmt_num(char *buf, size_t len, double v);
void print_table(const struct run *run);
void print_targets(const struct run *run);
int write_csv(const struct run *run, FILE *f);

/* ---- cycle.c ------------------------------------------------------------- */

/* What -c measures: @run's kinds (4k, thp), sizes and repeats. */
struct cycle_opts {
	const struct run *run;
	int write;		/* -w: the touch writes */
	int owner_vmas;		/* -v: more mappings in each owner */
};

int cycle_run(const struct cycle_opts *co, FILE *csv);

#endif /* _XPMEM_BENCH_H */
