// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * metrics.c - what xpmem-bench measures: the kinds of owner memory, the
 * metrics (CSV name, table row, unit), and the module's counters it
 * reads around each first pass.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"

const char *const kind_name[NKINDS] = { "4k", "thp", "hugetlb", "alloc" };

const char *const kind_what[NKINDS] = {
	"private anonymous, MADV_NOHUGEPAGE; memfd: MADV_NOHUGEPAGE",
	"private anonymous, 2 MiB-aligned, MADV_HUGEPAGE; memfd: MADV_HUGEPAGE",
	"private MAP_HUGETLB, 2 MiB pages; memfd: MFD_HUGETLB",
	"xpmem_ext_alloc(); memfd: default page size",
};

/* The huge-mapping counter's name is the stats file found (see stats_find). */
static char huge_csv_r[48] = "huge_mapped_read1", huge_csv_w[48] = "huge_mapped_write1";
static char huge_lbl_r[48] = "huge_mapped rd 1st", huge_lbl_w[48] = "huge_mapped wr 1st";

struct metric_info minfo[NMETRICS] = {
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

static const char *stat_file[NSTATS] = {
	"faults", "pages_mapped", "fault_retries", "fault_seq_retries",
	"fault_owner_waits", "mkwrite_fast", NULL,
};
int stat_have[NSTATS];

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
void stats_find(void)
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

void stats_snap(double *snap)
{
	int s;

	for (s = 0; s < NSTATS; s++)
		if (!stat_have[s] || stat_read(s, &snap[s]))
			snap[s] = __builtin_nan("");
}
