// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xpmem-scale - the costs of xpmem that grow with the size of a job, as
 * MPI uses it: N ranks, each exporting its whole address space and
 * attaching a window of every other rank (classic API).  Companion of
 * xpmem-bench; man/xpmem-scale.1 describes every number.
 *
 * Ranks mode (default), for each N of -n:
 *   - all-to-all get+attach, then detach+release, of every peer's window
 *     in every rank at once, in -r rounds (wall time and the ranks' CPU
 *     time; the first round's attach also on its own);
 *   - all-to-all first and second read pass over the peers' windows
 *     (aggregate MiB/s, all ranks at once);
 *   - rank 0's MADV_DONTNEED and munmap of a range that its N-1 peers
 *     have attached and mapped, against the same call on a range of its
 *     own that nobody attached (us per call);
 *   - rank 0's mmap+munmap of fresh memory elsewhere (us per pair);
 *   - xpmem_detach() of one attachment (us, median over ranks).
 * The last lines give the growth of the attached calls per attacher (the
 * least-squares slope over N) and the one-attacher cost over the
 * unattached one.
 *
 * Churn mode (-c SECONDS): two processes attach each other's buffer
 * read-write through whole-address-space segments; in each, one thread
 * writes the peer's buffer page by page while another discards pieces of
 * its own buffer (MADV_DONTNEED) and, in the "mutual" variant, maps and
 * unmaps memory elsewhere.  Reports both sides' passes (progress) and the
 * module's fault and retry counters.
 *
 * Output: a table on stdout and, with -o, a CSV in xpmem-bench's format
 * (kind,size,metric,median,min,max,unit; kind "ranks" with size = N, or
 * "churn-mutual"/"churn-plain" with size = seconds).  Under emulation
 * (QEMU TCG) only ratios inside one run mean anything.
 *
 * This file is the options; the modes are in tools/scale/ (scale.h lists
 * its files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scale/scale.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: xpmem-scale [-n N,N,...] [-w SIZE] [-i SIZE] [-r REPEATS] [-c SECONDS] [-o CSV]\n"
		"  -n  rank counts, 2..%d (default 2,4,8,16)\n"
		"  -w  window of each peer attached (default 4M)\n"
		"  -i  range discarded and unmapped (default 64K; at most the window)\n"
		"  -r  repeats of each timed call and attach round (default 7)\n"
		"  -c  churn mode instead: two processes for SECONDS each, mutual and plain\n"
		"  -o  also write a CSV\n", MAX_RANKS);
}

static int parse_size(const char *opt, const char *arg, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (errno || end == arg || *end || !v || v % PAGE || v > (1ULL << 30)) {
		fprintf(stderr, "xpmem-scale: %s '%s': want a multiple of 4K up to 1G (K and M suffixes)\n",
			opt, arg);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_int(const char *opt, const char *arg, int min, int max,
		     int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "xpmem-scale: %s '%s': want a number from %d to %d\n",
			opt, arg, min, max);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int parse_ns(const char *arg, struct opts *o)
{
	char buf[256], *tok, *save;

	if (strlen(arg) >= sizeof(buf)) {
		fprintf(stderr, "xpmem-scale: -n: list too long\n");
		return -1;
	}
	strcpy(buf, arg);
	o->nn = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->nn == MAX_NS) {
			fprintf(stderr, "xpmem-scale: -n: at most %d counts\n",
				MAX_NS);
			return -1;
		}
		if (parse_int("-n", tok, 2, MAX_RANKS, &o->ns[o->nn++]))
			return -1;
	}
	if (!o->nn) {
		fprintf(stderr, "xpmem-scale: -n: empty list\n");
		return -1;
	}
	return 0;
}

/*
 * parse_options - the command line into @o.  Returns -1 to go on, else
 * the exit status (0 after the help, 2 on a usage error).
 */
static int parse_options(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt(argc, argv, "n:w:i:r:c:o:h")) != -1) {
		switch (c) {
		case 'n':
			if (parse_ns(optarg, o))
				return 2;
			break;
		case 'w':
			if (parse_size("-w", optarg, &o->window))
				return 2;
			break;
		case 'i':
			if (parse_size("-i", optarg, &o->inval))
				return 2;
			break;
		case 'r':
			if (parse_int("-r", optarg, 1, MAX_REPEATS, &o->repeats))
				return 2;
			break;
		case 'c':
			if (parse_int("-c", optarg, 1, 3600, &o->churn_secs))
				return 2;
			break;
		case 'o':
			o->csv = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "xpmem-scale: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if (o->inval > o->window) {
		fprintf(stderr, "xpmem-scale: -i %zu is larger than the window -w %zu\n",
			o->inval, o->window);
		return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.ns = { 2, 4, 8, 16 }, .nn = 4, .window = 4 * MIB,
		.inval = 64 * KIB, .repeats = 7,
	};
	FILE *csv = NULL;
	int rc;

	rc = parse_options(argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.csv) {
		csv = fopen(o.csv, "we");
		if (!csv) {
			fprintf(stderr, "xpmem-scale: %s: %s\n", o.csv,
				strerror(errno));
			return 1;
		}
		fprintf(csv, "kind,size,metric,median,min,max,unit\n");
	}
	if (o.churn_secs)
		rc = churn_run(&o, 1, csv) | churn_run(&o, 0, csv);
	else
		rc = ranks_mode(&o, csv);
	if (csv && fclose(csv)) {
		fprintf(stderr, "xpmem-scale: %s: %s\n", o.csv, strerror(errno));
		rc = 1;
	}
	return rc;
}
