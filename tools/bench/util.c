// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * util.c - xpmem-bench's helpers: the clock, sizes, whole reads and
 * writes on pipes, values of /proc files, 2 MiB-aligned and memfd
 * mappings, and the owner's and the attacher's error messages.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* The base page size, as the kernel says (PAGE, bench.h). */
size_t page_size(void)
{
	static size_t page;

	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

double mibps(size_t len, double ns)
{
	return ns > 0 ? (double)len / MIB / (ns / 1e9) : NaN;
}

const char *size_label(size_t size, char *buf, size_t len)
{
	if (size % GIB == 0)
		snprintf(buf, len, "%zuG", size / GIB);
	else if (size % MIB == 0)
		snprintf(buf, len, "%zuM", size / MIB);
	else
		snprintf(buf, len, "%zuK", size / KIB);
	return buf;
}

/* All of @len bytes through @fd, retrying short transfers and EINTR. */
static int full_io(int fd, void *p, size_t len, int writing)
{
	char *c = p;

	while (len) {
		ssize_t n = writing ? write(fd, c, len) : read(fd, c, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		c += n;
		len -= n;
	}
	return 0;
}

int full_write(int fd, const void *p, size_t len)
{
	return full_io(fd, (void *)p, len, 1);
}

int full_read(int fd, void *p, size_t len)
{
	return full_io(fd, p, len, 0);
}

/* A value from /proc/meminfo in kB, or -1. */
long meminfo_kb(const char *key)
{
	char line[256];
	size_t kl = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

long read_long_file(const char *path)
{
	char buf[64];
	long v = -1;
	FILE *f = fopen(path, "re");

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			v = strtol(buf, NULL, 10);
		fclose(f);
	}
	return v;
}

/*
 * Percentage of [addr, addr + len) that /proc/self/smaps shows as huge
 * pages (AnonHugePages, ShmemPmdMapped, FilePmdMapped, Private_Hugetlb,
 * Shared_Hugetlb of the VMAs in the range), capped at 100.
 */
double huge_pct(const void *addr, size_t len)
{
	static const char *const fields[] = {
		"AnonHugePages:", "ShmemPmdMapped:", "FilePmdMapped:",
		"Private_Hugetlb:", "Shared_Hugetlb:",
	};
	uintptr_t a = (uintptr_t)addr, start, end;
	double kb = 0, pct;
	char line[512];
	int in = 0;
	size_t i;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return NaN;
	while (fgets(line, sizeof(line), f)) {
		if ((line[0] >= '0' && line[0] <= '9') ||
		    (line[0] >= 'a' && line[0] <= 'f')) {
			in = sscanf(line, "%lx-%lx", &start, &end) == 2 &&
			     start < a + len && end > a;
			continue;
		}
		if (!in)
			continue;
		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (!strncmp(line, fields[i], strlen(fields[i])))
				kb += strtod(line + strlen(fields[i]), NULL);
	}
	fclose(f);
	pct = kb * KIB * 100.0 / len;
	return pct > 100 ? 100 : pct;
}

/*
 * A mapping whose start is 2 MiB-aligned (so THP and PMD mappings are
 * possible): reserve len + 2 MiB, map at the aligned address inside it,
 * unmap the rest.
 */
void *map_aligned(size_t len, int flags, int fd)
{
	char *res, *p;
	uintptr_t al;

	res = mmap(NULL, len + HPAGE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return MAP_FAILED;
	al = ((uintptr_t)res + HPAGE - 1) & ~(HPAGE - 1);
	p = mmap((void *)al, len, PROT_READ | PROT_WRITE, flags | MAP_FIXED,
		 fd, 0);
	if (p == MAP_FAILED) {
		munmap(res, len + HPAGE);
		return MAP_FAILED;
	}
	if (al > (uintptr_t)res)
		munmap(res, al - (uintptr_t)res);
	munmap(p + len, (uintptr_t)res + len + HPAGE - (uintptr_t)(p + len));
	return p;
}

/* A MAP_SHARED mapping of the memfd with the kind's page policy. */
void *map_memfd(int kind, int memfd, size_t maplen)
{
	void *m;

	if (kind == K_THP)
		m = map_aligned(maplen, MAP_SHARED, memfd);
	else
		m = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED,
			 memfd, 0);
	if (m == MAP_FAILED)
		return m;
	if (kind == K_4K)
		madvise(m, maplen, MADV_NOHUGEPAGE);
	else if (kind == K_THP)
		madvise(m, maplen, MADV_HUGEPAGE);
	return m;
}

int afail(const char *what)
{
	fprintf(stderr, "xpmem-bench: attacher: %s: %s\n", what, strerror(errno));
	return 1;
}

int odie(const char *what)
{
	fprintf(stderr, "xpmem-bench: %s: %s\n", what, strerror(errno));
	return 1;
}
