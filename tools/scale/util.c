// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * util.c - xpmem-scale's helpers: the clock, the median of repeats, the
 * module's counters, touching memory, and reaping children that may hang.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scale.h"

double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* CPU time of the calling process (user and system), in us. */
double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct summary summarize(double *v, int n)
{
	struct summary s = { __builtin_nan(""), __builtin_nan(""),
			     __builtin_nan("") };

	if (n <= 0)
		return s;
	qsort(v, n, sizeof(*v), cmp_double);
	s.min = v[0];
	s.max = v[n - 1];
	s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return s;
}

long stat_read(const char *name)
{
	char path[128], buf[64];
	FILE *f;
	long v = -1;

	snprintf(path, sizeof(path), STATS_DIR "%s", name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

int touch_write(char *p, size_t len, char v)
{
	size_t i;

	for (i = 0; i < len; i += PAGE)
		p[i] = v;
	return 0;
}

uint64_t touch_read(const volatile char *p, size_t len)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < len; i += 64)
		sum += p[i];
	return sum;
}

/*
 * Wait for @n children; those still running after @secs seconds (a rank
 * stuck on a peer that failed) are killed.  Return: 0 if all exited 0.
 */
int reap(pid_t *pids, int n, int secs)
{
	double deadline = now_us() + secs * 1e6;
	int left = 0, bad = 0, i, st;

	for (i = 0; i < n; i++)
		left += pids[i] > 0;
	while (left) {
		for (i = 0; i < n; i++) {
			pid_t r;

			if (pids[i] <= 0)
				continue;
			r = waitpid(pids[i], &st, WNOHANG);
			if (r == 0)
				continue;
			if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
				bad = 1;
			pids[i] = 0;
			left--;
		}
		if (left && now_us() > deadline) {
			fprintf(stderr, "xpmem-scale: %d process(es) still running after %d s: killed\n",
				left, secs);
			for (i = 0; i < n; i++)
				if (pids[i] > 0)
					kill(pids[i], SIGKILL);
			deadline = now_us() + 3600e6;
			bad = 1;
		}
		if (left)
			usleep(10000);
	}
	return bad;
}

/* Private anonymous 4 KiB pages, populated. */
char *map_anon(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	touch_write(p, len, 1);
	return p;
}
