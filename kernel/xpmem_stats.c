// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_stats.c - object and event counters
 *
 * Read-only sysfs attributes of the misc device, one value per file, under
 * /sys/class/misc/xpmem/stats/.  The object counters (segments, permits,
 * attachments) are the live objects; tests use them to prove that cycles
 * leak nothing.
 *
 * Every counter is global (all users, all namespaces), so each one tells
 * of other users' activity: mode 0400, owned by the initial namespace's
 * root, so no user reads them, nor the root of a user namespace (the
 * owner is not mapped there).  What a user may know of its own objects is
 * in /proc/xpmem-objects/<tgid> (xpmem_proc.c).
 */
#include <linux/build_bug.h>
#include <linux/device.h>
#include <linux/sysfs.h>

#include "xpmem_internal.h"

struct xpmem_stats xpmem_stats;

struct xpmem_stat_attr {
	struct device_attribute attr;
	atomic_long_t *counter;
};

static ssize_t xpmem_stats_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct xpmem_stat_attr *sa =
		container_of(attr, struct xpmem_stat_attr, attr);

	return sysfs_emit(buf, "%ld\n", atomic_long_read(sa->counter));
}

static struct xpmem_stat_attr xpmem_stat_attrs[] = {
	{ __ATTR(segments, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.segments },
	{ __ATTR(permits, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.permits },
	{ __ATTR(attachments, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.attachments },
	{ __ATTR(faults, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.faults },
	{ __ATTR(fault_retries, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.fault_retries },
	{ __ATTR(fault_seq_retries, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.fault_seq_retries },
	{ __ATTR(fault_owner_waits, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.fault_owner_waits },
	{ __ATTR(mkwrite_fast, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.mkwrite_fast },
	{ __ATTR(pages_upgraded, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.pages_upgraded },
	{ __ATTR(pages_mapped, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.pages_mapped },
	{ __ATTR(pmd_mapped, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.pmd_mapped },
	{ __ATTR(invalidations, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.invalidations },
	{ __ATTR(settle_works, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.settle_works },
	{ __ATTR(records_lost, 0400, xpmem_stats_show, NULL),
	  &xpmem_stats.records_lost },
};

static struct attribute *xpmem_stats_attrs[] = {
	&xpmem_stat_attrs[0].attr.attr,
	&xpmem_stat_attrs[1].attr.attr,
	&xpmem_stat_attrs[2].attr.attr,
	&xpmem_stat_attrs[3].attr.attr,
	&xpmem_stat_attrs[4].attr.attr,
	&xpmem_stat_attrs[5].attr.attr,
	&xpmem_stat_attrs[6].attr.attr,
	&xpmem_stat_attrs[7].attr.attr,
	&xpmem_stat_attrs[8].attr.attr,
	&xpmem_stat_attrs[9].attr.attr,
	&xpmem_stat_attrs[10].attr.attr,
	&xpmem_stat_attrs[11].attr.attr,
	&xpmem_stat_attrs[12].attr.attr,
	&xpmem_stat_attrs[13].attr.attr,
	NULL,
};

/* one entry above per counter (a counter left out vanishes from sysfs) */
static_assert(ARRAY_SIZE(xpmem_stats_attrs) ==
	      ARRAY_SIZE(xpmem_stat_attrs) + 1);

static const struct attribute_group xpmem_stats_group = {
	.name = "stats",
	.attrs = xpmem_stats_attrs,
};

const struct attribute_group *xpmem_attr_groups[] = {
	&xpmem_stats_group,
	NULL,
};
