/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * scale.h - declarations shared by the files of xpmem-scale.
 *
 * Files, each using only those listed before it:
 *
 *   util.c      the clocks, medians, module counters, touching memory,
 *               reaping children
 *   ranks.c     ranks mode: N ranks attaching each other
 *   churn.c     churn mode: two processes writing each other's memory
 *               while discarding their own
 *   ../xpmem-scale.c  options and the mode chosen
 */
#ifndef _XPMEM_SCALE_H
#define _XPMEM_SCALE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define PAGE		4096UL
#define KIB		(1UL << 10)
#define MIB		(1UL << 20)
#define MAX_RANKS	64
#define MAX_NS		16
#define MAX_REPEATS	1000
#define STATS_DIR	"/sys/class/misc/xpmem/stats/"

/* What the command line asks for. */
struct opts {
	int ns[MAX_NS], nn;
	size_t window;		/* bytes of each peer attached */
	size_t inval;		/* bytes discarded or unmapped */
	int repeats;
	int churn_secs;		/* 0: ranks mode */
	const char *csv;
};

/* ---- util.c --------------------------------------------------------------- */

struct summary {
	double med, min, max;
};

double now_us(void);
double cpu_us(void);
struct summary summarize(double *v, int n);
long stat_read(const char *name);
int touch_write(char *p, size_t len, char v);
uint64_t touch_read(const volatile char *p, size_t len);
int reap(pid_t *pids, int n, int secs);
char *map_anon(size_t len);

/* ---- ranks.c, churn.c ----------------------------------------------------- */

int ranks_mode(const struct opts *o, FILE *csv);
int churn_run(const struct opts *o, int mutual, FILE *csv);

#endif /* _XPMEM_SCALE_H */
