// SPDX-License-Identifier: GPL-2.0
/*
 * xpmem_stats.c - object and event counters
 *
 * Read-only sysfs attributes of the misc device, one value per file, under
 * /sys/class/misc/xpmem/stats/.  The object counters (segments, permits,
 * attachments) are the live objects; tests use them to prove that cycles
 * leak nothing.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "xpmem_internal.h"

struct xpmem_stats xpmem_stats;

#define XPMEM_STAT_ATTR(name)						\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%ld\n",					\
			  atomic_long_read(&xpmem_stats.name));		\
}									\
static DEVICE_ATTR_RO(name)

XPMEM_STAT_ATTR(segments);
XPMEM_STAT_ATTR(permits);
XPMEM_STAT_ATTR(attachments);
XPMEM_STAT_ATTR(faults);
XPMEM_STAT_ATTR(fault_retries);
XPMEM_STAT_ATTR(pages_mapped);
XPMEM_STAT_ATTR(invalidations);

static struct attribute *xpmem_stats_attrs[] = {
	&dev_attr_segments.attr,
	&dev_attr_permits.attr,
	&dev_attr_attachments.attr,
	&dev_attr_faults.attr,
	&dev_attr_fault_retries.attr,
	&dev_attr_pages_mapped.attr,
	&dev_attr_invalidations.attr,
	NULL,
};

static const struct attribute_group xpmem_stats_group = {
	.name = "stats",
	.attrs = xpmem_stats_attrs,
};

const struct attribute_group *xpmem_attr_groups[] = {
	&xpmem_stats_group,
	NULL,
};
