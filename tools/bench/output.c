// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * output.c - what a run found: per kind and size the median of the
 * repeats and their spread, as a table on stdout, the first-touch targets
 * at 64 MiB, and the CSV (kind,size,metric,median,min,max,unit).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median, min and max of the repeats' values that are numbers; 0 if none. */
int summarize(const double *vals, int n, double *med, double *min,
	      double *max)
{
	double tmp[MAX_REPEATS];
	int i, k = 0;

	for (i = 0; i < n; i++)
		if (!is_nan(vals[i]))
			tmp[k++] = vals[i];
	if (!k)
		return 0;
	qsort(tmp, k, sizeof(tmp[0]), cmp_double);
	*med = k % 2 ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2;
	*min = tmp[0];
	*max = tmp[k - 1];
	return 1;
}

void fmt_num(char *buf, size_t len, double v)
{
	double a = v < 0 ? -v : v;

	if (a >= 99.95 || (a < 1e15 && v == (long long)v))
		snprintf(buf, len, "%.0f", v);
	else if (a >= 9.995)
		snprintf(buf, len, "%.1f", v);
	else if (a >= 0.9995)
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, "%.3f", v);
}

void print_table(const struct run *run)
{
	char lbl[24], num[32], spr[16];
	double med, min, max;
	int ki, si, mi;

	for (ki = 0; ki < run->nkinds; ki++) {
		int kind = run->kinds[ki];

		printf("\n== %s: %s\n", kind_name[kind], kind_what[kind]);
		printf("%-24s", "metric");
		for (si = 0; si < run->nsizes; si++)
			printf(" %12s", size_label(run->sizes[si], lbl, sizeof(lbl)));
		printf("  unit\n");
		for (mi = 0; mi < NMETRICS; mi++) {
			char row[512];
			int any = 0, off;

			if (!minfo[mi].table)
				continue;
			off = snprintf(row, sizeof(row), "%-24s", minfo[mi].label);
			for (si = 0; si < run->nsizes; si++) {
				const struct cell *c = &run->cells[kind][si];

				if (c->state != 1 ||
				    !summarize(c->v + mi * run->repeats,
					       run->repeats, &med, &min, &max)) {
					off += snprintf(row + off, sizeof(row) - off,
							" %12s", "-");
					continue;
				}
				any = 1;
				fmt_num(num, sizeof(num), med);
				spr[0] = 0;
				if (!minfo[mi].fixed && med > 0) {
					double s = (max - min) * 100 / med;

					snprintf(spr, sizeof(spr), "%3.0f%%",
						 s > 999 ? 999 : s);
				}
				off += snprintf(row + off, sizeof(row) - off,
						" %7s %4s", num, spr);
			}
			if (any)
				printf("%s  %s\n", row, minfo[mi].unit);
		}
		for (si = 0; si < run->nsizes; si++)
			if (run->cells[kind][si].note[0])
				printf("note: %s %s\n", kind_name[kind],
				       run->cells[kind][si].note);
	}
}

/* A first-touch target: a metric's median against a limit. */
struct target_row {
	int metric;
	const char *what;
	double lim_4k, lim_huge;	/* < 0: none for that kind */
	int strict;			/* "<" instead of "<=" */
};

static const struct target_row targets[] = {
	{ M_XR_12, "xpmem read 1st/2nd", 1.25, 1.05, 0 },
	{ M_XW_12, "xpmem write 1st/2nd", 1.25, 1.05, 0 },
	{ M_R1_M, "read 1st xpmem/memfd", 1, 1, 1 },
	{ M_W1_M, "write 1st xpmem/memfd", 1, 1, 1 },
	{ M_R2_M, "read 2nd xpmem/memfd", 1.05, 1.05, 0 },
	{ M_W2_M, "write 2nd xpmem/memfd", 1.05, 1.05, 0 },
	{ M_FR1, "faults read 1st", -1, 40, 0 },
	{ M_FW1, "faults write 1st", -1, 40, 0 },
};

/* The line of target @tg for @kind measured in @c; 0 if it has no value. */
static int print_target(const struct target_row *tg, int kind,
			const struct cell *c, int repeats)
{
	double lim = kind == K_4K ? tg->lim_4k : tg->lim_huge;
	char a[32], b[32], d[32], range[72], lims[16] = "-";
	double med, min, max;
	const char *met;

	/* the fault-count target is for THP-backed attachments */
	if ((tg->metric == M_FR1 || tg->metric == M_FW1) && kind != K_THP)
		lim = -1;
	if (!summarize(c->v + tg->metric * repeats, repeats, &med, &min, &max))
		return 0;
	fmt_num(a, sizeof(a), min);
	fmt_num(b, sizeof(b), max);
	fmt_num(d, sizeof(d), med);
	if (lim < 0)
		met = "";
	else
		met = (tg->strict ? med < lim : med <= lim) ? "yes" : "NO";
	snprintf(range, sizeof(range), "%s..%s", a, b);
	if (lim >= 0)
		snprintf(lims, sizeof(lims), "%s %g", tg->strict ? "<" : "<=",
			 lim);
	printf("%-8s %-22s %8s %17s  %-8s %s\n", kind_name[kind], tg->what, d,
	       range, lims, met);
	return 1;
}

/* The first-touch targets at 64 MiB (an attachment and a memfd). */
void print_targets(const struct run *run)
{
	int si, ki, t, shown = 0;

	for (si = 0; si < run->nsizes; si++)
		if (run->sizes[si] == TARGET_SIZE)
			break;
	printf("\n== first-touch targets at 64M (ratios are of times within this run,\n"
	       "   per repeat, then the median: below 1 the first named is faster)\n");
	if (si == run->nsizes) {
		printf("64M was not measured (add it to -s)\n");
		return;
	}
	printf("%-8s %-22s %8s %17s  %-8s %s\n", "kind", "what", "median",
	       "min..max", "target", "met");
	for (ki = 0; ki < run->nkinds; ki++) {
		int kind = run->kinds[ki];
		const struct cell *c = &run->cells[kind][si];

		if (kind == K_ALLOC)
			continue;
		if (c->state != 1) {
			printf("%-8s not measured%s%s\n", kind_name[kind],
			       c->note[0] ? ": " : "", c->note);
			continue;
		}
		for (t = 0; t < (int)(sizeof(targets) / sizeof(targets[0])); t++)
			shown |= print_target(&targets[t], kind, c, run->repeats);
	}
	if (!shown)
		printf("nothing measured at 64M\n");
}

int write_csv(const struct run *run, FILE *f)
{
	double med, min, max;
	int ki, si, mi;

	fprintf(f, "kind,size,metric,median,min,max,unit\n");
	for (ki = 0; ki < run->nkinds; ki++)
		for (si = 0; si < run->nsizes; si++) {
			int kind = run->kinds[ki];
			const struct cell *c = &run->cells[kind][si];

			if (c->state != 1)
				continue;
			for (mi = 0; mi < NMETRICS; mi++)
				if (summarize(c->v + mi * run->repeats,
					      run->repeats, &med, &min, &max))
					fprintf(f, "%s,%zu,%s,%.6g,%.6g,%.6g,%s\n",
						kind_name[kind], run->sizes[si],
						minfo[mi].csv, med, min, max,
						minfo[mi].unit);
		}
	return fflush(f) || ferror(f) ? -1 : 0;
}
