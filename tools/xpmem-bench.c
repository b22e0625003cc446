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
 * stdout, the issue-10 target ratios at 64 MiB and, with -o, writes a CSV
 * (kind,size,metric,median,min,max,unit).  Progress goes to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <xpmem.h>

#ifndef XPMEM_PKG_VERSION
#define XPMEM_PKG_VERSION "unknown"
#endif

/*
 * The base page size, as the kernel says (4 KiB on x86_64; 4, 16 or
 * 64 KiB on arm64).  HPAGE is the 2 MiB of the huge-page kinds: a PMD
 * with 4 KiB pages, and the 2 MiB hugetlb size every such kernel offers
 * (with 64 KiB pages a PMD is 512 MiB, and THP then gives no 2 MiB page).
 */
static size_t page_size(void)
{
	static size_t page;

	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

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

static const char default_sizes[] = "4K,64K,1M,16M,64M,256M";
/* without 4K, where a page is larger */
static const char default_sizes_large[] = "64K,1M,16M,64M,256M";

/* ---- kinds of owner memory -------------------------------------------- */

enum kind { K_4K, K_THP, K_HUGETLB, K_ALLOC, NKINDS };

static const char *const kind_name[NKINDS] = { "4k", "thp", "hugetlb", "alloc" };

static const char *const kind_what[NKINDS] = {
	"private anonymous, MADV_NOHUGEPAGE; memfd: MADV_NOHUGEPAGE",
	"private anonymous, 2 MiB-aligned, MADV_HUGEPAGE; memfd: MADV_HUGEPAGE",
	"private MAP_HUGETLB, 2 MiB pages; memfd: MFD_HUGETLB",
	"xpmem_ext_alloc(); memfd: default page size",
};

/* ---- metrics ----------------------------------------------------------- */

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

/* The huge-mapping counter's name is the stats file found (see stats_find). */
static char huge_csv_r[48] = "huge_mapped_read1", huge_csv_w[48] = "huge_mapped_write1";
static char huge_lbl_r[48] = "huge_mapped rd 1st", huge_lbl_w[48] = "huge_mapped wr 1st";

static struct metric_info minfo[NMETRICS] = {
	[M_LAT]       = { "attach_detach", "attach+detach", "us", 1, 0 },
	[M_XR1]       = { "xpmem_read1", "xpmem read 1st", "MiB/s", 1, 0 },
	[M_XR2]       = { "xpmem_read2", "xpmem read 2nd", "MiB/s", 1, 0 },
	[M_XW1]       = { "xpmem_write1", "xpmem write 1st", "MiB/s", 1, 0 },
	[M_XW2]       = { "xpmem_write2", "xpmem write 2nd", "MiB/s", 1, 0 },
	[M_MR1]       = { "memfd_read1", "memfd read 1st", "MiB/s", 1, 0 },
	[M_MR2]       = { "memfd_read2", "memfd read 2nd", "MiB/s", 1, 0 },
	[M_MW1]       = { "memfd_write1", "memfd write 1st", "MiB/s", 1, 0 },
	[M_MW2]       = { "memfd_write2", "memfd write 2nd", "MiB/s", 1, 0 },
	[M_PVM]       = { "process_vm_readv", "process_vm_readv", "MiB/s", 1, 0 },
	[M_CPY]       = { "memcpy", "memcpy (local)", "MiB/s", 1, 0 },
	[M_XMCPY2]    = { "xpmem_memcpy2", "memcpy from warm att.", "MiB/s", 1, 0 },
	[M_XCOPY]     = { "xpmem_copy", "xpmem_ext_copy", "MiB/s", 1, 0 },
	[M_ACOPY1]    = { "async_copy_1", "async copy, 1 in flight", "MiB/s", 1, 0 },
	[M_ACOPY4]    = { "async_copy_4", "async copy, 4 in flight", "MiB/s", 1, 0 },
	[M_ACOPY16]   = { "async_copy_16", "async copy, 16 in flight", "MiB/s", 1, 0 },
	[M_FCOPY16]   = { "fixed_copy_16", "own ring, registered, 16", "MiB/s", 1, 0 },
	[M_ACOPY16_PVM] = { "async_copy_16_over_pvm", "async16/process_vm_readv", "x", 1, 0 },
	[M_ACOPY16_XMC2] = { "async_copy_16_over_memcpy2", "async16/memcpy warm", "x", 1, 0 },
	[M_FCOPY16_XMC2] = { "fixed_copy_16_over_memcpy2", "registered16/memcpy warm", "x", 1, 0 },
	[M_XR_12]     = { "xpmem_read1_over_read2", "xpmem read 1st/2nd", "x", 1, 0 },
	[M_XW_12]     = { "xpmem_write1_over_write2", "xpmem write 1st/2nd", "x", 1, 0 },
	[M_MR_12]     = { "memfd_read1_over_read2", "memfd read 1st/2nd", "x", 1, 0 },
	[M_MW_12]     = { "memfd_write1_over_write2", "memfd write 1st/2nd", "x", 1, 0 },
	[M_R1_M]      = { "xpmem_over_memfd_read1", "read 1st xpmem/memfd", "x", 1, 0 },
	[M_R2_M]      = { "xpmem_over_memfd_read2", "read 2nd xpmem/memfd", "x", 1, 0 },
	[M_W1_M]      = { "xpmem_over_memfd_write1", "write 1st xpmem/memfd", "x", 1, 0 },
	[M_W2_M]      = { "xpmem_over_memfd_write2", "write 2nd xpmem/memfd", "x", 1, 0 },
	[M_XWR]       = { "xpmem_write_after_read", "xpmem write after read", "MiB/s", 1, 0 },
	[M_MWR]       = { "memfd_write_after_read", "memfd write after read", "MiB/s", 1, 0 },
	[M_WR_M]      = { "xpmem_over_memfd_write_after_read", "wr after rd xpmem/memfd", "x", 1, 0 },
	[M_FR1_MIB]   = { "faults_read1_per_mib", "faults/MiB read 1st", "1/MiB", 1, 0 },
	[M_FW1_MIB]   = { "faults_write1_per_mib", "faults/MiB write 1st", "1/MiB", 1, 0 },
	[M_PG_R1_MIB] = { "pages_mapped_read1_per_mib", "pages_mapped/MiB rd 1st", "1/MiB", 1, 0 },
	[M_HUGE_R1]   = { huge_csv_r, huge_lbl_r, "count", 1, 0 },
	[M_HUGE_W1]   = { huge_csv_w, huge_lbl_w, "count", 1, 0 },
	[M_RETRY]     = { "fault_retries", "fault_retries 1st", "count", 1, 0 },
	[M_SEQRETRY]  = { "fault_seq_retries", "fault_seq_retries 1st", "count", 1, 0 },
	[M_WAITS]     = { "fault_owner_waits", "fault_owner_waits 1st", "count", 1, 0 },
	[M_MKWF]      = { "mkwrite_fast_write1", "mkwrite_fast wr 1st", "count", 1, 0 },
	[M_FR1]       = { "faults_read1", "faults read 1st", "count", 0, 0 },
	[M_FW1]       = { "faults_write1", "faults write 1st", "count", 0, 0 },
	[M_FWR]       = { "faults_write_after_read", "faults wr after read", "count", 1, 0 },
	[M_OWNER_HUGE] = { "owner_huge_pct", "owner huge pages %", "%", 1, 1 },
	[M_MEMFD_HUGE] = { "memfd_huge_pct", "memfd huge pages %", "%", 1, 1 },
};

/* ---- module counters --------------------------------------------------- */

enum counter {
	S_FAULTS, S_PAGES, S_RETRIES, S_SEQ, S_WAITS, S_MKWF, S_HUGE, NSTATS
};

static const char *stat_file[NSTATS] = {
	"faults", "pages_mapped", "fault_retries", "fault_seq_retries",
	"fault_owner_waits", "mkwrite_fast", NULL,
};
static int stat_have[NSTATS];

static int stat_read(int s, double *out)
{
	char path[128], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), STATS_DIR "%s", stat_file[s]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	*out = (double)strtoull(buf, NULL, 10);
	return 0;
}

/* Which counters exist; the huge one is huge_mapped or pmd_mapped. */
static void stats_find(void)
{
	static const char *const huge[] = { "huge_mapped", "pmd_mapped" };
	double v;
	int s;
	size_t i;

	for (i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		stat_file[S_HUGE] = huge[i];
		if (!stat_read(S_HUGE, &v))
			break;
	}
	if (i == sizeof(huge) / sizeof(huge[0]))
		stat_file[S_HUGE] = huge[0];
	snprintf(huge_csv_r, sizeof(huge_csv_r), "%s_read1", stat_file[S_HUGE]);
	snprintf(huge_csv_w, sizeof(huge_csv_w), "%s_write1", stat_file[S_HUGE]);
	snprintf(huge_lbl_r, sizeof(huge_lbl_r), "%s rd 1st", stat_file[S_HUGE]);
	snprintf(huge_lbl_w, sizeof(huge_lbl_w), "%s wr 1st", stat_file[S_HUGE]);
	for (s = 0; s < NSTATS; s++)
		stat_have[s] = !stat_read(s, &v);
}

static void stats_snap(double *snap)
{
	int s;

	for (s = 0; s < NSTATS; s++)
		if (!stat_have[s] || stat_read(s, &snap[s]))
			snap[s] = __builtin_nan("");
}

/* ---- small helpers ------------------------------------------------------ */

#define NaN __builtin_nan("")
#define is_nan(x) __builtin_isnan(x)

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double mibps(size_t len, double ns)
{
	return ns > 0 ? (double)len / MIB / (ns / 1e9) : NaN;
}

static const char *size_label(size_t size, char *buf, size_t len)
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

static int full_write(int fd, const void *p, size_t len)
{
	return full_io(fd, (void *)p, len, 1);
}

static int full_read(int fd, void *p, size_t len)
{
	return full_io(fd, p, len, 0);
}

/* A value from /proc/meminfo in kB, or -1. */
static long meminfo_kb(const char *key)
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

static long read_long_file(const char *path)
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
static double huge_pct(const void *addr, size_t len)
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
static void *map_aligned(size_t len, int flags, int fd)
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
static void *map_memfd(int kind, int memfd, size_t maplen)
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

/* ---- the passes ----------------------------------------------------------
 * One read pass sums every 64-bit word (and the sum is checked: the owner
 * filled everything with PATTERN and every write pass writes PATTERN
 * again); one write pass is a memset of PATTERN.  The same two functions
 * serve every kind of mapping.
 */
static __attribute__((noinline)) uint64_t read_pass(const void *p, size_t len)
{
	const uint64_t *q = p;
	uint64_t s = 0;
	size_t i, n = len / sizeof(*q);

	for (i = 0; i < n; i++)
		s += q[i];
	return s;
}

static __attribute__((noinline)) void write_pass(void *p, size_t len)
{
	memset(p, PATTERN, len);
}

static uint64_t expected_sum(size_t len)
{
	uint64_t w;

	memset(&w, PATTERN, sizeof(w));
	return w * (uint64_t)(len / sizeof(w));
}

/* ---- the attacher ---------------------------------------------------------- */

struct job {
	xpmem_segid_t segid;	/* <= 0: nothing to measure, exit */
	uintptr_t owner;	/* the owner's address of the segment */
};

static int afail(const char *what)
{
	fprintf(stderr, "xpmem-bench: attacher: %s: %s\n", what, strerror(errno));
	return 1;
}

/* Time @inner read passes over @p (already mapped): ns per pass; -1 on a bad sum. */
static double read_again(const void *p, size_t len, size_t inner, uint64_t want)
{
	double t0 = now_ns();
	int bad = 0;
	size_t k;

	for (k = 0; k < inner; k++)
		bad |= read_pass(p, len) != want;
	return bad ? -1 : (now_ns() - t0) / inner;
}

static double write_again(void *p, size_t len, size_t inner)
{
	double t0 = now_ns();
	size_t k;

	for (k = 0; k < inner; k++)
		write_pass(p, len);
	return (now_ns() - t0) / inner;
}

/* What one attacher measures on: the segment or the memfd. */
struct target {
	const struct job *job;
	struct xpmem_addr addr;	/* apid set: xpmem; else the memfd */
	int memfd, kind;
	size_t size, maplen;
};

static void *fresh_map(const struct target *tg, int xp)
{
	void *m;

	if (!xp)
		return map_memfd(tg->kind, tg->memfd, tg->maplen);
	m = xpmem_attach(tg->addr, tg->size, NULL);
	return m == (void *)-1 ? MAP_FAILED : m;
}

static int fresh_unmap(const struct target *tg, int xp, void *m)
{
	return xp ? xpmem_detach(m) : munmap(m, tg->maplen);
}

/* What passes() times first on a fresh mapping. */
enum first_pass { P_READ, P_WRITE, P_WRITE_AFTER_READ };

/*
 * First passes over @fresh fresh attachments (@xp) or memfd mappings, one
 * after the other, then, unless @t2 is NULL, a second pass (@inner times)
 * over the last one.  P_WRITE_AFTER_READ reads each mapping (untimed, its
 * sum checked) and times the write pass that follows.
 * @t1, @t2: ns per pass; @d: the module counters' change per timed pass.
 * 0, or 1 with a message.
 */
static int passes(const struct target *tg, int xp, enum first_pass pass,
		  size_t fresh, size_t inner, double *t1, double *t2,
		  double *d)
{
	int write = pass != P_READ;
	uint64_t want = expected_sum(tg->size);
	double s0[NSTATS], s1[NSTATS], t0;
	size_t k;
	int s;
	void *m;

	*t1 = 0;
	for (s = 0; s < NSTATS; s++)
		d[s] = 0;
	for (k = 0; k < fresh; k++) {
		m = fresh_map(tg, xp);
		if (m == MAP_FAILED)
			return afail(xp ? "xpmem_attach" : "mmap memfd");
		if (pass == P_WRITE_AFTER_READ && read_pass(m, tg->size) != want)
			goto bad_data;
		if (xp)
			stats_snap(s0);
		t0 = now_ns();
		if (write)
			write_pass(m, tg->size);
		else if (read_pass(m, tg->size) != want)
			goto bad_data;
		*t1 += now_ns() - t0;
		if (xp) {
			stats_snap(s1);
			for (s = 0; s < NSTATS; s++)
				d[s] += s1[s] - s0[s];	/* NaN if unknown */
		}
		if (k == fresh - 1 && t2) {
			*t2 = write ? write_again(m, tg->size, inner) :
				      read_again(m, tg->size, inner, want);
			if (*t2 < 0)
				goto bad_data;
		}
		if (fresh_unmap(tg, xp, m))
			return afail(xp ? "xpmem_detach" : "munmap memfd");
	}
	*t1 /= fresh;
	for (s = 0; s < NSTATS; s++)
		d[s] /= fresh;
	return 0;

bad_data:
	fprintf(stderr, "xpmem-bench: attacher: %s %s %zu bytes: data differs from what the owner wrote\n",
		xp ? "attachment" : "memfd", kind_name[tg->kind], tg->size);
	return 1;
}

/* One kind of first pass, timed on the attachment and on the memfd. */
struct pass_pair {
	double t1, t2;		/* the attachment's first and second pass, ns */
	double d[NSTATS];	/* the module counters' change per first pass */
	double m_t1, m_t2;	/* the memfd mapping's */
};

/*
 * @pass on the attachment and right beside it on the memfd (their ratio
 * is taken per repeat), the two in turn first; P_WRITE_AFTER_READ has no
 * second pass.  0, or 1 with a message.
 */
static int paired_passes(const struct target *tg, enum first_pass pass,
			 int rep, size_t fresh, size_t inner,
			 struct pass_pair *pp)
{
	int again = pass != P_WRITE_AFTER_READ;
	double dm[NSTATS];
	int c, xp;

	for (c = 0; c < 2; c++) {
		xp = (rep + c) % 2 == 0;
		if (passes(tg, xp, pass, fresh, inner,
			   xp ? &pp->t1 : &pp->m_t1,
			   !again ? NULL : xp ? &pp->t2 : &pp->m_t2,
			   xp ? pp->d : dm))
			return 1;
	}
	return 0;
}

/*
 * Everything one repeat measures, into v[metric * repeats + rep].  Below
 * 1 MiB a single pass is mostly clock and scheduling noise, so first
 * passes are timed over several fresh attachments (or mappings; at most
 * 64, 1 MiB in all) and the other passes repeated on the mapped range
 * (1 MiB in all); every number is per pass.
 */
/*
 * Copies of @size bytes from segment offset 0 into @dst with at most
 * @depth in flight through the library's queue, @n in all.  The time per
 * copy in ns, or a negative number on error.
 */
static double queued_copies(struct xpmem_ext_queue *q, xpmem_apid_t apid,
			    char *dst, size_t size, size_t n,
			    unsigned int depth)
{
	struct xpmem_ext_completion c[16];
	size_t issued = 0, done = 0;
	double t0 = now_ns();
	int got, i;

	while (done < n) {
		while (issued < n && issued - done < depth) {
			if (xpmem_ext_queue_copy(q, apid, 0, dst, size, 0,
						 issued))
				return -1;
			issued++;
		}
		if (xpmem_ext_queue_submit(q) < 0)
			return -1;
		got = xpmem_ext_queue_reap(q, c, 16, 1);
		if (got <= 0)
			return -1;
		for (i = 0; i < got; i++)
			if (c[i].result != (long long)size) {
				errno = c[i].result < 0 ? (int)-c[i].result : EIO;
				return -1;
			}
		done += (size_t)got;
	}
	return (now_ns() - t0) / n;
}

/*
 * The same copies from the caller's own ring into a buffer registered
 * with it (xpmem_ext_prep_copy_fixed), 16 in flight, @n in all: the time
 * per copy in ns; NaN where there is no such ring; negative on error.
 */
static double fixed_copies(xpmem_apid_t apid, char *dst, size_t size,
			   size_t n)
{
	struct iovec reg = { dst, size };
	struct xpmem_ext_copy arg = {
		.apid = apid, .addr = (uintptr_t)dst, .len = size,
	};
	size_t issued = 0, done = 0;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	double t0, t = -1;

	if (!(xpmem_ext_features() & XPMEM_EXT_F_URING_FIXED) ||
	    io_uring_queue_init(16, &ring, 0))
		return NaN;
	if (io_uring_register_buffers(&ring, &reg, 1)) {
		io_uring_queue_exit(&ring);
		return NaN;
	}
	t0 = now_ns();
	while (done < n) {
		for (; issued < n && issued - done < 16; issued++)
			if (xpmem_ext_prep_copy_fixed(io_uring_get_sqe(&ring),
						      &arg, 0))
				goto out;
		if (io_uring_submit_and_wait(&ring, 1) < 0)
			goto out;
		while (!io_uring_peek_cqe(&ring, &cqe)) {
			if (cqe->res != (int)size) {
				errno = cqe->res < 0 ? -cqe->res : EIO;
				t = -1;
				goto out;
			}
			io_uring_cqe_seen(&ring, cqe);
			done++;
		}
	}
	t = (now_ns() - t0) / n;
out:
	io_uring_queue_exit(&ring);
	return t;
}

/*
 * memcpy out of a warm attachment, xpmem_ext_copy (synchronous) and the
 * queue with 1, 4 and 16 copies in flight, each copy the whole @size; at
 * least as many copies as are in flight, and at most 256 MiB per
 * measurement.  Checked: the bytes the attachment and a synchronous copy
 * bring.
 */
static int async_copies(const struct job *job, int kind, size_t size,
			size_t inner, char *dst, double *v, int rep,
			int repeats)
{
	static const unsigned int depth[3] = { 1, 4, 16 };
	static const int metric[3] = { M_ACOPY1, M_ACOPY4, M_ACOPY16 };
	size_t cap = size >= 256 * MIB ? 1 : 256 * MIB / size, n, k;
	struct xpmem_ext_queue *q;
	xpmem_apid_t apid;
	double t0, t;
	int d;

#define V(metric) v[(metric) * repeats + rep]
	if (!(xpmem_ext_features() & XPMEM_EXT_F_COPY)) {
		for (d = 0; d < 3; d++)
			V(metric[d]) = NaN;
		V(M_XMCPY2) = V(M_XCOPY) = V(M_FCOPY16) = NaN;
		V(M_ACOPY16_PVM) = V(M_ACOPY16_XMC2) = NaN;
		return 0;
	}
	apid = xpmem_get(job->segid, XPMEM_RDONLY, XPMEM_PERMIT_MODE, NULL);
	if (apid == -1)
		return afail("xpmem_get");
	/* what a copy competes with: memcpy out of a warm attachment */
	{
		struct xpmem_addr addr = { .apid = apid, .offset = 0 };
		char *a = xpmem_attach(addr, size, NULL);

		if (a == (void *)-1)
			return afail("xpmem_attach");
		if (read_pass(a, size) != expected_sum(size)) {
			fprintf(stderr, "xpmem-bench: attacher: attachment data differs\n");
			return 1;
		}
		t0 = now_ns();
		for (k = 0; k < inner; k++)
			memcpy(dst, a, size);
		V(M_XMCPY2) = mibps(size, (now_ns() - t0) / inner);
		if (xpmem_detach(a))
			return afail("xpmem_detach");
	}
	memset(dst, 0, size);
	t0 = now_ns();
	for (k = 0; k < inner; k++)
		if (xpmem_ext_copy(apid, 0, dst, size, 0) != (ssize_t)size)
			return afail("xpmem_ext_copy");
	t = now_ns() - t0;
	if (read_pass(dst, size) != expected_sum(size)) {
		fprintf(stderr, "xpmem-bench: attacher: xpmem_ext_copy %s %zu bytes: data differs from what the owner wrote\n",
			kind_name[kind], size);
		return 1;
	}
	V(M_XCOPY) = mibps(size, t / inner);
	q = xpmem_ext_queue_create(16);
	if (!q)
		return afail("xpmem_ext_queue_create");
	for (d = 0; d < 3; d++) {
		n = inner > depth[d] ? inner : depth[d];
		if (n > cap)
			n = cap;
		t = queued_copies(q, apid, dst, size, n, depth[d]);
		if (t < 0) {
			xpmem_ext_queue_destroy(q);
			return afail("queued xpmem_ext_copy");
		}
		V(metric[d]) = mibps(size, t);
	}
	xpmem_ext_queue_destroy(q);
	n = inner > 16 ? inner : 16;
	t = fixed_copies(apid, dst, size, n > cap ? cap : n);
	if (t < 0)
		return afail("xpmem_ext_prep_copy_fixed copies");
	V(M_FCOPY16) = mibps(size, t);
	if (xpmem_release(apid))
		return afail("xpmem_release");
#undef V
	return 0;
}

static int attacher_repeat(const struct job *job, int kind, size_t size,
			   size_t maplen, int memfd, pid_t owner, int rep,
			   int repeats, char *dst, const char *src, double *v,
			   int *pvm_warned)
{
	size_t inner = size >= MIB ? 1 : MIB / size;
	size_t fresh = inner > 64 ? 64 : inner;
	struct pass_pair rd, wt, war;
	double t0, t;
	struct target tg = {
		.job = job, .memfd = memfd, .kind = kind, .size = size,
		.maplen = maplen,
	};
	struct xpmem_addr addr = { .offset = 0 };
	struct iovec l, r;
	xpmem_apid_t apid;
	char *a;
	size_t k;
	int c;

#define V(metric) v[(metric) * repeats + rep]
	/* attach+detach latency: the whole get/attach/detach/release cycle */
	t0 = now_ns();
	for (c = 0; c < CYCLES; c++) {
		apid = xpmem_get(job->segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
		if (apid == -1)
			return afail("xpmem_get");
		addr.apid = apid;
		a = xpmem_attach(addr, size, NULL);
		if (a == (void *)-1)
			return afail("xpmem_attach");
		if (xpmem_detach(a))
			return afail("xpmem_detach");
		if (xpmem_release(apid))
			return afail("xpmem_release");
	}
	V(M_LAT) = (now_ns() - t0) / CYCLES / 1e3;

	tg.addr.apid = xpmem_get(job->segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL);
	if (tg.addr.apid == -1)
		return afail("xpmem_get");
	tg.addr.offset = 0;
	/*
	 * Each xpmem measurement right beside its memfd counterpart (their
	 * ratio is taken per repeat), the two in turn first: reads, writes,
	 * then writes after reads.
	 */
	if (paired_passes(&tg, P_READ, rep, fresh, inner, &rd) ||
	    paired_passes(&tg, P_WRITE, rep, fresh, inner, &wt) ||
	    paired_passes(&tg, P_WRITE_AFTER_READ, rep, fresh, inner, &war))
		return 1;
	if (xpmem_release(tg.addr.apid))
		return afail("xpmem_release");

	/* process_vm_readv of the owner's range into local memory */
	l = (struct iovec){ dst, size };
	r = (struct iovec){ (void *)job->owner, size };
	t0 = now_ns();
	for (k = 0; k < inner; k++)
		if (process_vm_readv(owner, &l, 1, &r, 1, 0) != (ssize_t)size)
			break;
	t = now_ns() - t0;
	if (k < inner) {
		if (!*pvm_warned)
			fprintf(stderr, "xpmem-bench: attacher: process_vm_readv: %s (not measured)\n",
				strerror(errno));
		*pvm_warned = 1;
		V(M_PVM) = NaN;
	} else if (read_pass(dst, size) != expected_sum(size)) {
		fprintf(stderr, "xpmem-bench: attacher: process_vm_readv %s %zu bytes: data differs from what the owner wrote\n",
			kind_name[kind], size);
		return 1;
	} else {
		V(M_PVM) = mibps(size, t / inner);
	}

	/* the same range through the permit: xpmem_ext_copy, then queued */
	if (async_copies(job, kind, size, inner, dst, v, rep, repeats))
		return 1;

	/* local memcpy between two populated buffers of the attacher */
	t0 = now_ns();
	for (k = 0; k < inner; k++)
		memcpy(dst, src, size);
	V(M_CPY) = mibps(size, (now_ns() - t0) / inner);

	V(M_ACOPY16_PVM) = V(M_ACOPY16) / V(M_PVM);
	V(M_XR1) = mibps(size, rd.t1);
	V(M_XR2) = mibps(size, rd.t2);
	V(M_XW1) = mibps(size, wt.t1);
	V(M_XW2) = mibps(size, wt.t2);
	V(M_MR1) = mibps(size, rd.m_t1);
	V(M_MR2) = mibps(size, rd.m_t2);
	V(M_MW1) = mibps(size, wt.m_t1);
	V(M_MW2) = mibps(size, wt.m_t2);
	V(M_XWR) = mibps(size, war.t1);
	V(M_MWR) = mibps(size, war.m_t1);
	V(M_WR_M) = war.t1 / war.m_t1;
	/* ratios of times, per repeat: < 1 means the first one is faster */
	V(M_ACOPY16_XMC2) = V(M_ACOPY16) / V(M_XMCPY2);
	V(M_FCOPY16_XMC2) = V(M_FCOPY16) / V(M_XMCPY2);
	V(M_XR_12) = rd.t1 / rd.t2;
	V(M_XW_12) = wt.t1 / wt.t2;
	V(M_MR_12) = rd.m_t1 / rd.m_t2;
	V(M_MW_12) = wt.m_t1 / wt.m_t2;
	V(M_R1_M) = rd.t1 / rd.m_t1;
	V(M_R2_M) = rd.t2 / rd.m_t2;
	V(M_W1_M) = wt.t1 / wt.m_t1;
	V(M_W2_M) = wt.t2 / wt.m_t2;
	/* counters: per first pass over one attachment */
	V(M_FR1) = rd.d[S_FAULTS];
	V(M_FW1) = wt.d[S_FAULTS];
	V(M_FWR) = war.d[S_FAULTS];
	V(M_FR1_MIB) = rd.d[S_FAULTS] * MIB / size;
	V(M_FW1_MIB) = wt.d[S_FAULTS] * MIB / size;
	V(M_PG_R1_MIB) = rd.d[S_PAGES] * MIB / size;
	V(M_HUGE_R1) = rd.d[S_HUGE];
	V(M_HUGE_W1) = wt.d[S_HUGE];
	V(M_RETRY) = rd.d[S_RETRIES] + wt.d[S_RETRIES];
	V(M_SEQRETRY) = rd.d[S_SEQ] + wt.d[S_SEQ];
	V(M_WAITS) = rd.d[S_WAITS] + wt.d[S_WAITS];
	V(M_MKWF) = wt.d[S_MKWF];
#undef V
	return 0;
}

/* The attacher process: wait for the job, run every repeat, send results. */
static int attacher(int in, int out, int kind, size_t size, size_t maplen,
		    int memfd, pid_t owner, int repeats)
{
	size_t vlen = sizeof(double) * NMETRICS * repeats;
	int rep, pvm_warned = 0;
	char *dst, *src;
	struct job job;
	double *v;

	if (full_read(in, &job, sizeof(job)))
		return 1;
	if (job.segid <= 0)
		return 0;
	v = calloc(NMETRICS * repeats, sizeof(*v));
	dst = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	src = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!v || dst == MAP_FAILED || src == MAP_FAILED)
		return afail("local memory");
	memset(src, PATTERN, size);
	for (rep = 0; rep < repeats; rep++)
		if (attacher_repeat(&job, kind, size, maplen, memfd, owner, rep,
				    repeats, dst, src, v, &pvm_warned))
			return 1;
	if (full_write(out, v, vlen))
		return afail("write results");
	return 0;
}

/* ---- the owner ----------------------------------------------------------- */

struct cell {
	int state;		/* 0 not run, 1 measured, -1 skipped */
	char note[256];
	double *v;		/* [NMETRICS * repeats] */
};

static void note(struct cell *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->note, sizeof(c->note), fmt, ap);
	va_end(ap);
	c->state = -1;
}

static int odie(const char *what)
{
	fprintf(stderr, "xpmem-bench: %s: %s\n", what, strerror(errno));
	return 1;
}

/* The owner's memory of @kind, filled after the fork; MAP_FAILED on error. */
static void *owner_alloc(int kind, size_t size, size_t maplen)
{
	void *p;

	switch (kind) {
	case K_4K:
		p = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED)
			madvise(p, maplen, MADV_NOHUGEPAGE);
		return p;
	case K_THP:
		p = map_aligned(maplen, MAP_PRIVATE | MAP_ANONYMOUS, -1);
		if (p != MAP_FAILED)
			madvise(p, maplen, MADV_HUGEPAGE);
		return p;
	case K_HUGETLB:
		return mmap(NULL, maplen, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
			    HUGE_2MB_FLAG, -1, 0);
	default:
		p = xpmem_ext_alloc(size, 0);
		return p ? p : MAP_FAILED;
	}
}

static void owner_free(int kind, void *p, size_t maplen)
{
	if (kind == K_ALLOC)
		xpmem_ext_free(p);
	else
		munmap(p, maplen);
}

/*
 * Measure one kind and size: 0 (measured or skipped with a note in @c),
 * 1 on an error (reported on stderr).
 */
static int run_one(int kind, size_t size, int repeats, struct cell *c)
{
	size_t maplen = size, vlen = sizeof(double) * NMETRICS * repeats;
	int to_child[2], to_owner[2], memfd, status, rc = 1, rep, sent = 0;
	long avail_kb, need_kb;
	char *buf = MAP_FAILED, *m = MAP_FAILED, lbl[24];
	double opct = NaN, mpct = NaN;
	struct job job = { 0, 0 };
	unsigned int mfd_flags = MFD_CLOEXEC;
	pid_t pid;

	if (kind == K_THP || kind == K_HUGETLB)
		maplen = (size + HPAGE - 1) & ~(HPAGE - 1);
	size_label(size, lbl, sizeof(lbl));

	if (kind == K_HUGETLB) {
		long free_pages = read_long_file(HUGETLB_2MB_DIR "free_hugepages");
		long need = 2 * (long)(maplen / HPAGE);

		if (free_pages <= 0) {
			note(c, "%s: skipped: no free 2 MiB huge pages (%s); reserve some: echo N > /proc/sys/vm/nr_hugepages",
			     lbl, free_pages < 0 ? "no " HUGETLB_2MB_DIR : "0 free");
			return 0;
		}
		if (free_pages < need) {
			note(c, "%s: skipped: needs %ld free 2 MiB huge pages (owner %ld + memfd %ld), %ld free",
			     lbl, need, need / 2, need / 2, free_pages);
			return 0;
		}
		mfd_flags |= MFD_HUGETLB | HUGE_2MB_FLAG;
	}
	/* owner memory + memfd (not hugetlb: reserved already) + 2 local buffers */
	need_kb = (long)((kind == K_HUGETLB ? 0 : 2 * maplen) + 2 * size) / 1024;
	avail_kb = meminfo_kb("MemAvailable");
	if (avail_kb > 0 && need_kb > avail_kb - avail_kb / 8) {
		note(c, "%s: skipped: needs about %ld MiB of memory, %ld MiB available",
		     lbl, need_kb / 1024, avail_kb / 1024);
		return 0;
	}

	c->v = calloc(NMETRICS * repeats, sizeof(double));
	if (!c->v)
		return odie("calloc");
	memfd = memfd_create("xpmem-bench", mfd_flags);
	if (memfd < 0)
		return odie("memfd_create");
	if (ftruncate(memfd, maplen)) {
		close(memfd);
		return odie("memfd ftruncate");
	}
	if (pipe(to_child) || pipe(to_owner)) {
		close(memfd);
		return odie("pipe");
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(memfd);
		return odie("fork");
	}
	if (pid == 0) {
		close(to_child[1]);
		close(to_owner[0]);
		_exit(attacher(to_child[0], to_owner[1], kind, size, maplen,
			       memfd, getppid(), repeats));
	}
	close(to_child[0]);
	close(to_owner[1]);
	/* Yama ptrace_scope 1 lets a process read only its descendants */
	prctl(PR_SET_PTRACER, pid, 0, 0, 0);

	/* The owner's memory and the memfd, touched only after the fork. */
	buf = owner_alloc(kind, size, maplen);
	if (buf == MAP_FAILED) {
		if (kind == K_HUGETLB) {
			note(c, "%s: skipped: MAP_HUGETLB of %zu MiB: %s", lbl,
			     maplen / MIB, strerror(errno));
			rc = 0;
		} else {
			odie("owner memory");
		}
		goto out;
	}
	memset(buf, PATTERN, size);
	m = map_memfd(kind, memfd, maplen);
	if (m == MAP_FAILED) {
		if (kind == K_HUGETLB) {
			note(c, "%s: skipped: mmap of a %zu MiB MFD_HUGETLB memfd: %s",
			     lbl, maplen / MIB, strerror(errno));
			rc = 0;
		} else {
			odie("mmap memfd");
		}
		goto out;
	}
	memset(m, PATTERN, size);	/* stays mapped, as a transport's owner keeps it */
	job.segid = xpmem_make(buf, size, XPMEM_PERMIT_MODE, (void *)0600);
	if (job.segid == -1) {
		odie("xpmem_make");
		goto out;
	}
	job.owner = (uintptr_t)buf;
	opct = huge_pct(buf, maplen);
	mpct = huge_pct(m, maplen);
	if (full_write(to_child[1], &job, sizeof(job))) {
		odie("write to the attacher");
		goto out;
	}
	sent = 1;
	if (full_read(to_owner[0], c->v, vlen)) {
		fprintf(stderr, "xpmem-bench: %s %s: the attacher failed\n",
			kind_name[kind], lbl);
		goto out;
	}
	for (rep = 0; rep < repeats; rep++) {
		c->v[M_OWNER_HUGE * repeats + rep] = opct;
		c->v[M_MEMFD_HUGE * repeats + rep] = mpct;
	}
	c->state = 1;
	rc = 0;
out:
	if (!sent) {	/* tell the attacher there is nothing to do */
		struct job none = { 0, 0 };

		(void)!full_write(to_child[1], &none, sizeof(none));
	}
	close(to_child[1]);
	close(to_owner[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		if (rc == 0 && c->state == 1) {
			fprintf(stderr, "xpmem-bench: %s %s: the attacher failed\n",
				kind_name[kind], lbl);
			c->state = 0;
		}
		rc = 1;
	}
	if (job.segid > 0)
		xpmem_remove(job.segid);
	if (m != MAP_FAILED)
		munmap(m, maplen);
	if (buf != MAP_FAILED)
		owner_free(kind, buf, maplen);
	close(memfd);
	return rc;
}

/* ---- statistics and output -------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median, min and max of the repeats' values that are numbers; 0 if none. */
static int summarize(const double *vals, int n, double *med, double *min,
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

static void fmt_num(char *buf, size_t len, double v)
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

struct run {
	int nkinds, kinds[NKINDS];
	int nsizes;
	size_t sizes[MAX_SIZES];
	int repeats;
	struct cell cells[NKINDS][MAX_SIZES];
};

static void print_table(const struct run *run)
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

/* The first-touch targets at 64 MiB (an attachment and a memfd). */
static void print_targets(const struct run *run)
{
	static const struct {
		int metric;
		const char *what;
		double lim_4k, lim_huge;	/* < 0: none for that kind */
		int strict;			/* "<" instead of "<=" */
	} tg[] = {
		{ M_XR_12, "xpmem read 1st/2nd", 1.25, 1.05, 0 },
		{ M_XW_12, "xpmem write 1st/2nd", 1.25, 1.05, 0 },
		{ M_R1_M, "read 1st xpmem/memfd", 1, 1, 1 },
		{ M_W1_M, "write 1st xpmem/memfd", 1, 1, 1 },
		{ M_R2_M, "read 2nd xpmem/memfd", 1.05, 1.05, 0 },
		{ M_W2_M, "write 2nd xpmem/memfd", 1.05, 1.05, 0 },
		{ M_FR1, "faults read 1st", -1, 40, 0 },
		{ M_FW1, "faults write 1st", -1, 40, 0 },
	};
	double med, min, max;
	char a[32], b[32], d[32];
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
		for (t = 0; t < (int)(sizeof(tg) / sizeof(tg[0])); t++) {
			double lim = kind == K_4K ? tg[t].lim_4k : tg[t].lim_huge;
			const char *met;

			/* the fault-count target is for THP-backed attachments */
			if ((tg[t].metric == M_FR1 || tg[t].metric == M_FW1) &&
			    kind != K_THP)
				lim = -1;
			if (!summarize(c->v + tg[t].metric * run->repeats,
				       run->repeats, &med, &min, &max))
				continue;
			fmt_num(a, sizeof(a), min);
			fmt_num(b, sizeof(b), max);
			fmt_num(d, sizeof(d), med);
			if (lim < 0)
				met = "";
			else
				met = (tg[t].strict ? med < lim : med <= lim) ?
				      "yes" : "NO";
			{
				char range[72], lims[16] = "-";

				snprintf(range, sizeof(range), "%s..%s", a, b);
				if (lim >= 0)
					snprintf(lims, sizeof(lims), "%s %g",
						 tg[t].strict ? "<" : "<=", lim);
				printf("%-8s %-22s %8s %17s  %-8s %s\n",
				       kind_name[kind], tg[t].what, d, range,
				       lims, met);
			}
			shown = 1;
		}
	}
	if (!shown)
		printf("nothing measured at 64M\n");
}

static int write_csv(const struct run *run, FILE *f)
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

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [-s SIZES] [-r repeats] [-m KINDS] [-o file.csv] [-h]\n"
		"  -s SIZES    comma-separated sizes, each a multiple of 4K from 4K to 64G,\n"
		"              with a suffix K, M or G (a bare number is MiB);\n"
		"              default %s\n"
		"  -r repeats  repeats of each measurement, 1..%d (default 5)\n"
		"  -m KINDS    comma-separated owner memory kinds: 4k, thp, hugetlb, alloc\n"
		"              (xpmem_ext_alloc); anon means 4k,thp,hugetlb; default anon\n"
		"              on the kernel backend, alloc on the shm backend\n"
		"  -o FILE     also write the results as CSV to FILE\n"
		"  -h, --help  this help\n"
		"Timings are wall-clock: under emulation (QEMU TCG) compare only the\n"
		"ratios within one run.\n",
		prog, PAGE > 4096 ? default_sizes_large : default_sizes,
		MAX_REPEATS);
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

int main(int argc, char **argv)
{
	static struct run run;
	const char *kinds = NULL, *csv = NULL, *reason = "";
	char lbl[24];
	struct utsname un;
	FILE *csvf = NULL;
	int opt, backend, ki, si, err = 0;
	double t0, t;
	long v;

	run.repeats = 5;
	parse_sizes(PAGE > 4096 ? default_sizes_large : default_sizes, &run);
	if (argc > 1 && !strcmp(argv[1], "--help")) {
		usage(stdout, argv[0]);
		return 0;
	}
	while ((opt = getopt(argc, argv, ":s:r:m:o:h")) != -1) {
		switch (opt) {
		case 's':
			if (parse_sizes(optarg, &run))
				return 2;
			break;
		case 'r':
			v = parse_count("-r", optarg, 1, MAX_REPEATS);
			if (v < 0)
				return 2;
			run.repeats = v;
			break;
		case 'm':
			if (parse_kinds(optarg, &run))
				return 2;
			kinds = optarg;
			break;
		case 'o':
			if (!optarg[0]) {
				fprintf(stderr, "xpmem-bench: -o: want a file name\n");
				return 2;
			}
			csv = optarg;
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
	signal(SIGPIPE, SIG_IGN);	/* a dead attacher is an error, not a kill */
	if (csv) {
		csvf = fopen(csv, "we");
		if (!csvf) {
			fprintf(stderr, "xpmem-bench: -o %s: %s\n", csv, strerror(errno));
			return 1;
		}
	}
	backend = xpmem_ext_backend(&reason);
	if (backend == XPMEM_EXT_BACKEND_NONE) {
		fprintf(stderr, "xpmem-bench: no xpmem backend: %s\n", reason);
		return 1;
	}
	if (!kinds)
		parse_kinds(backend == XPMEM_EXT_BACKEND_KERNEL ? "anon" : "alloc",
			    &run);
	stats_find();
	if (uname(&un))
		strcpy(un.release, "?");

	printf("xpmem-bench %s: backend %s (%s), kernel %s, %ld cpus, %d repeats\n",
	       XPMEM_PKG_VERSION, xpmem_ext_backend_name(backend), reason,
	       un.release, sysconf(_SC_NPROCESSORS_ONLN), run.repeats);
	printf("sizes");
	for (si = 0; si < run.nsizes; si++)
		printf(" %s", size_label(run.sizes[si], lbl, sizeof(lbl)));
	printf("; kinds");
	for (ki = 0; ki < run.nkinds; ki++)
		printf(" %s", kind_name[run.kinds[ki]]);
	printf("; module counters: %s\n",
	       stat_have[S_FAULTS] ? STATS_DIR : "none (not the kernel backend)");
	printf("Wall-clock timings: under emulation (QEMU TCG) they are not machine\n"
	       "speeds; compare only ratios within one run.  Each cell: the median of\n"
	       "the repeats, then the spread (max - min) in %% of it.  1st = first pass\n"
	       "over a fresh attachment or mapping (nothing mapped yet), 2nd = the next.\n");
	fflush(stdout);

	t0 = now_ns();
	for (ki = 0; ki < run.nkinds && !err; ki++)
		for (si = 0; si < run.nsizes && !err; si++) {
			int kind = run.kinds[ki];
			struct cell *c = &run.cells[kind][si];
			double t1 = now_ns();

			size_label(run.sizes[si], lbl, sizeof(lbl));
			fprintf(stderr, "xpmem-bench: %s %s ...", kind_name[kind], lbl);
			fflush(stderr);
			err = run_one(kind, run.sizes[si], run.repeats, c);
			if (c->state == -1)
				fprintf(stderr, " skipped\n");
			else
				fprintf(stderr, " %s in %.1f s\n",
					err ? "FAILED" : "done",
					(now_ns() - t1) / 1e9);
		}
	t = (now_ns() - t0) / 1e9;

	print_table(&run);
	print_targets(&run);
	printf("\nxpmem-bench: %s in %.0f s\n", err ? "FAILED" : "done", t);
	if (csvf) {
		if (write_csv(&run, csvf) | fclose(csvf)) {
			fprintf(stderr, "xpmem-bench: writing %s: %s\n", csv,
				strerror(errno));
			err = 1;
		}
	}
	return err ? 1 : 0;
}
