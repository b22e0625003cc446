// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xpmem-bench - what it costs a process to use another process's memory
 * through an xpmem attachment, side by side in one run with a memfd
 * mapping the two processes share, process_vm_readv(2) and a local memcpy,
 * for three kinds of owner memory (4 KiB pages, THP, 2 MiB hugetlb pages)
 * and a list of sizes.  Under emulation (QEMU TCG) only the ratios inside
 * one run mean anything; man/xpmem-bench.1 describes every number.
 *
 * For each kind and size the owner (this process) creates an empty memfd
 * and forks the attacher; only then does it allocate and fill its memory
 * and the memfd (nothing is shared copy-on-write, as between unrelated
 * processes), export its memory with xpmem_make() and send the segid
 * through a pipe.  The attacher runs every repeat and sends its numbers
 * back through another pipe.  At the end the owner prints a table on
 * stdout, the first-touch target ratios at 64 MiB and, with -o, writes a CSV
 * (kind,size,metric,median,min,max,unit).  Progress goes to stderr.
 *
 * With -c it measures instead what a registration-cache miss costs
 * (attach a window, touch it, detach; tools/bench/cycle.c).  Built with
 * XPMEM_BENCH_CLASSIC (xpmem-bench-classic, against another
 * implementation's libxpmem) it has only that mode.
 *
 * This file is the options and the run; the rest is in tools/bench/
 * (bench.h lists its files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <xpmem.h>

#include "bench/bench.h"

#ifndef XPMEM_PKG_VERSION
#define XPMEM_PKG_VERSION "unknown"
#endif

static const char default_sizes[] = "4K,64K,1M,16M,64M,256M";
static const char default_cycle_sizes[] = "4K,64K,1M,4M";
#define MAX_OWNER_VMAS	60000	/* below vm.max_map_count's default */
/* without 4K, where a page is larger */
static const char default_sizes_large[] = "64K,1M,16M,64M,256M";

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [-s SIZES] [-r repeats] [-m KINDS] [-o file.csv] [-h]\n"
		"       %s -c [-w] [-v N] [-s SIZES] [-r repeats] [-m KINDS] [-o file.csv]\n"
		"  -s SIZES    comma-separated sizes, each a multiple of 4K from 4K to 64G,\n"
		"              with a suffix K, M or G (a bare number is MiB);\n"
		"              default %s\n"
		"  -r repeats  repeats of each measurement, 1..%d (default 5)\n"
		"  -m KINDS    comma-separated owner memory kinds: 4k, thp, hugetlb, alloc\n"
		"              (xpmem_ext_alloc); anon means 4k,thp,hugetlb; default anon\n"
		"              on the kernel backend, alloc on the shm backend\n"
		"  -o FILE     also write the results as CSV to FILE\n"
		"  -c          registration-cache miss cycles instead: attach a window\n"
		"              of each size (default %s, at most 64M), touch one byte\n"
		"              a page, detach; kinds 4k and thp (the default)\n"
		"  -w          with -c: the touch writes (default: reads)\n"
		"  -v N        with -c: each owner maps N more pages apart first\n"
		"              (0..%d, default 0), as a process of many mappings\n"
		"  -h, --help  this help\n"
		"Timings are wall-clock: under emulation (QEMU TCG) compare only the\n"
		"ratios within one run.\n",
		prog, prog, PAGE > 4096 ? default_sizes_large : default_sizes,
		MAX_REPEATS, default_cycle_sizes, MAX_OWNER_VMAS);
}

/* A size list like "4K,64K,1M": 0, or -1 with a message. */
static int parse_sizes(const char *arg, struct run *run)
{
	const char *p = arg;

	run->nsizes = 0;
	for (;;) {
		unsigned long long v, mul = MIB;
		char *end;

		if (*p < '0' || *p > '9')
			goto bad;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno)
			goto bad;
		switch (*end) {
		case 'k': case 'K': mul = KIB; end++; break;
		case 'm': case 'M': mul = MIB; end++; break;
		case 'g': case 'G': mul = GIB; end++; break;
		}
		if (*end != ',' && *end)
			goto bad;
		if (v > MAX_SIZE / mul || v * mul < MIN_SIZE || (v * mul) % PAGE)
			goto bad;
		if (run->nsizes == MAX_SIZES) {
			fprintf(stderr, "xpmem-bench: -s '%s': at most %d sizes\n",
				arg, MAX_SIZES);
			return -1;
		}
		run->sizes[run->nsizes++] = v * mul;
		if (!*end)
			return 0;
		p = end + 1;
	}
bad:
	fprintf(stderr, "xpmem-bench: -s '%s': want sizes like 4K,64K,1M,2G separated by commas, each a multiple of 4K from 4K to 64G (a bare number is MiB)\n",
		arg);
	return -1;
}

static int parse_kinds(const char *arg, struct run *run)
{
	int seen[NKINDS] = { 0 }, k;
	char *copy = strdup(arg), *tok, *save = NULL;

	if (!copy)
		return -1;
	run->nkinds = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "anon")) {
			seen[K_4K] = seen[K_THP] = seen[K_HUGETLB] = 1;
			continue;
		}
		for (k = 0; k < NKINDS; k++)
			if (!strcmp(tok, kind_name[k]))
				break;
		if (k == NKINDS)
			goto bad;
		seen[k] = 1;
	}
	if (arg[0] == ',' || !arg[0] || arg[strlen(arg) - 1] == ',' ||
	    strstr(arg, ",,"))
		goto bad;
	free(copy);
	for (k = 0; k < NKINDS; k++)
		if (seen[k])
			run->kinds[run->nkinds++] = k;
	return 0;
bad:
	free(copy);
	fprintf(stderr, "xpmem-bench: -m '%s': want a comma-separated list of 4k, thp, hugetlb, alloc or anon\n",
		arg);
	return -1;
}

static long parse_count(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "xpmem-bench: %s '%s': want an integer from %ld to %ld\n",
			opt, arg, min, max);
		return -1;
	}
	return v;
}

/* What the command line asks for besides @run's kinds, sizes and repeats. */
struct options {
	const char *kinds;	/* -m as given, or NULL: the backend's default */
	const char *sizes;	/* -s as given, or NULL: the mode's default */
	const char *csv;	/* -o, or NULL */
	int cycle;		/* -c */
	int write;		/* -w */
	int owner_vmas;		/* -v, or -1 */
};

/*
 * The -c mode's defaults and limits on @run: -1 to go on, else 2 (a
 * usage error, said).
 */
static int check_cycle_options(struct run *run, struct options *o)
{
	int i;

	if (!o->cycle) {
		if (!o->write && o->owner_vmas < 0)
			return -1;
		fprintf(stderr, "xpmem-bench: -w and -v go with -c\n");
		return 2;
	}
	if (o->owner_vmas < 0)
		o->owner_vmas = 0;
	if (!o->sizes)
		parse_sizes(default_cycle_sizes, run);
	if (!o->kinds)
		parse_kinds("4k,thp", run);
	for (i = 0; i < run->nkinds; i++)
		if (run->kinds[i] != K_4K && run->kinds[i] != K_THP) {
			fprintf(stderr, "xpmem-bench: -c: kinds 4k and thp only\n");
			return 2;
		}
	for (i = 0; i < run->nsizes; i++)
		if (run->sizes[i] > TARGET_SIZE) {
			fprintf(stderr, "xpmem-bench: -c: sizes up to 64M only\n");
			return 2;
		}
	return -1;
}

/*
 * parse_options - the command line into @run and @o.  Returns -1 to go
 * on, else the exit status (0 after the help, 2 on a usage error).
 */
static int parse_options(int argc, char **argv, struct run *run,
			 struct options *o)
{
	int opt;
	long v;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		usage(stdout, argv[0]);
		return 0;
	}
	while ((opt = getopt(argc, argv, ":s:r:m:o:cwv:h")) != -1) {
		switch (opt) {
		case 's':
			if (parse_sizes(optarg, run))
				return 2;
			o->sizes = optarg;
			break;
		case 'c':
			o->cycle = 1;
			break;
		case 'w':
			o->write = 1;
			break;
		case 'v':
			v = parse_count("-v", optarg, 0, MAX_OWNER_VMAS);
			if (v < 0)
				return 2;
			o->owner_vmas = v;
			break;
		case 'r':
			v = parse_count("-r", optarg, 1, MAX_REPEATS);
			if (v < 0)
				return 2;
			run->repeats = v;
			break;
		case 'm':
			if (parse_kinds(optarg, run))
				return 2;
			o->kinds = optarg;
			break;
		case 'o':
			if (!optarg[0]) {
				fprintf(stderr, "xpmem-bench: -o: want a file name\n");
				return 2;
			}
			o->csv = optarg;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		case ':':
			fprintf(stderr, "xpmem-bench: -%c needs a value\n", optopt);
			usage(stderr, argv[0]);
			return 2;
		default:
			if (optopt == '-' && optind < argc)	/* --long */
				fprintf(stderr, "xpmem-bench: unknown option %s\n",
					argv[optind]);
			else
				fprintf(stderr, "xpmem-bench: unknown option -%c\n",
					optopt);
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "xpmem-bench: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr, argv[0]);
		return 2;
	}
	return check_cycle_options(run, o);
}

#ifndef XPMEM_BENCH_CLASSIC
/* The run's first lines: what is measured where, and how to read it. */
static void print_header(const struct run *run, int backend,
			 const char *reason)
{
	struct utsname un;
	char lbl[24];
	int ki, si;

	if (uname(&un))
		strcpy(un.release, "?");
	printf("xpmem-bench %s: backend %s (%s), kernel %s, %ld cpus, %d repeats\n",
	       XPMEM_PKG_VERSION, xpmem_ext_backend_name(backend), reason,
	       un.release, sysconf(_SC_NPROCESSORS_ONLN), run->repeats);
	printf("sizes");
	for (si = 0; si < run->nsizes; si++)
		printf(" %s", size_label(run->sizes[si], lbl, sizeof(lbl)));
	printf("; kinds");
	for (ki = 0; ki < run->nkinds; ki++)
		printf(" %s", kind_name[run->kinds[ki]]);
	printf("; module counters: %s\n",
	       stat_have[S_FAULTS] ? STATS_DIR : "none (not the kernel backend)");
	printf("Wall-clock timings: under emulation (QEMU TCG) they are not machine\n"
	       "speeds; compare only ratios within one run.  Each cell: the median of\n"
	       "the repeats, then the spread (max - min) in %% of it.  1st = first pass\n"
	       "over a fresh attachment or mapping (nothing mapped yet), 2nd = the next.\n");
	fflush(stdout);
}

/* Every kind and size, progress on stderr, until the first error: 0 or 1. */
static int run_all(struct run *run)
{
	char lbl[24];
	int ki, si, err = 0;

	for (ki = 0; ki < run->nkinds && !err; ki++)
		for (si = 0; si < run->nsizes && !err; si++) {
			int kind = run->kinds[ki];
			struct cell *c = &run->cells[kind][si];
			double t1 = now_ns();

			size_label(run->sizes[si], lbl, sizeof(lbl));
			fprintf(stderr, "xpmem-bench: %s %s ...", kind_name[kind], lbl);
			fflush(stderr);
			err = run_one(kind, run->sizes[si], run->repeats, c);
			if (c->state == -1)
				fprintf(stderr, " skipped\n");
			else
				fprintf(stderr, " %s in %.1f s\n",
					err ? "FAILED" : "done",
					(now_ns() - t1) / 1e9);
		}
	return err;
}

/*
 * The default mode: every kind and size, the table, the targets and the
 * CSV (to @csvf, closed here).  Returns the exit status.
 */
static int run_default(struct run *run, const struct options *o, FILE *csvf)
{
	const char *reason = "";
	int backend, err;
	double t0, t;

	backend = xpmem_ext_backend(&reason);
	if (backend == XPMEM_EXT_BACKEND_NONE) {
		fprintf(stderr, "xpmem-bench: no xpmem backend: %s\n", reason);
		return 1;
	}
	if (!o->kinds)
		parse_kinds(backend == XPMEM_EXT_BACKEND_KERNEL ? "anon" : "alloc",
			    run);
	stats_find();
	print_header(run, backend, reason);
	t0 = now_ns();
	err = run_all(run);
	t = (now_ns() - t0) / 1e9;
	print_table(run);
	print_targets(run);
	printf("\nxpmem-bench: %s in %.0f s\n", err ? "FAILED" : "done", t);
	if (csvf && (write_csv(run, csvf) | fclose(csvf))) {
		fprintf(stderr, "xpmem-bench: writing %s: %s\n", o->csv,
			strerror(errno));
		err = 1;
	}
	return err ? 1 : 0;
}
#endif /* !XPMEM_BENCH_CLASSIC */

/* -c: the miss cycles; the CSV to @csvf (closed here).  The exit status. */
static int run_cycles(struct run *run, const struct options *o, FILE *csvf)
{
	struct cycle_opts co = { .run = run, .write = o->write,
				 .owner_vmas = o->owner_vmas };
	int err = cycle_run(&co, csvf);

	if (csvf && fclose(csvf)) {
		fprintf(stderr, "xpmem-bench: writing %s: %s\n", o->csv,
			strerror(errno));
		err = 1;
	}
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	static struct run run;
	struct options o = { .owner_vmas = -1 };
	FILE *csvf = NULL;
	int err;

	run.repeats = 5;
	parse_sizes(PAGE > 4096 ? default_sizes_large : default_sizes, &run);
	err = parse_options(argc, argv, &run, &o);
	if (err >= 0)
		return err;
#ifdef XPMEM_BENCH_CLASSIC
	if (!o.cycle) {
		fprintf(stderr, "xpmem-bench: this build (the classic library) has only -c\n");
		return 2;
	}
#endif
	signal(SIGPIPE, SIG_IGN);	/* a dead attacher is an error, not a kill */
	if (o.csv) {
		csvf = fopen(o.csv, "we");
		if (!csvf) {
			fprintf(stderr, "xpmem-bench: -o %s: %s\n", o.csv, strerror(errno));
			return 1;
		}
	}
	if (o.cycle)
		return run_cycles(&run, &o, csvf);
#ifndef XPMEM_BENCH_CLASSIC
	return run_default(&run, &o, csvf);
#endif
}
