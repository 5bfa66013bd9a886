// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Counters, read-only in debugfs (/sys/kernel/debug/gdrhook/),
 * so that tests can assert that nothing leaked: after every file is
 * closed, pins_live and files_live must read 0. The same counters are in
 * sysfs (/sys/class/misc/gdrhook/stats/), readable by every user: debugfs
 * is root's only, and `gdrhook node` tells anyone how much the module
 * holds pinned on the machine, including pins no process they can see
 * accounts for.
 */
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kernel.h>

#include "gdrhook.h"

struct gdrhook_stats gdrhook_stats;

static struct dentry *gdrhook_debugfs_dir;

static int gdrhook_stat_get(void *data, u64 *val)
{
	*val = atomic64_read((atomic64_t *)data);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(gdrhook_stat_fops, gdrhook_stat_get, NULL, "%llu\n");

struct gdrhook_stat_attribute {
	struct device_attribute attr;
	atomic64_t *counter;
};

static ssize_t gdrhook_stat_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct gdrhook_stat_attribute *a =
		container_of(attr, struct gdrhook_stat_attribute, attr);

	/* Not sysfs_emit(): the module builds for kernels before 5.10. */
	return scnprintf(buf, PAGE_SIZE, "%lld\n", atomic64_read(a->counter));
}

#define GDRHOOK_STAT_ATTR(n) { __ATTR(n, 0444, gdrhook_stat_show, NULL), \
			       &gdrhook_stats.n }
static struct gdrhook_stat_attribute gdrhook_stat_attributes[] = {
	GDRHOOK_STAT_ATTR(pins_live),
	GDRHOOK_STAT_ATTR(pins_total),
	GDRHOOK_STAT_ATTR(callbacks),
	GDRHOOK_STAT_ATTR(late_callbacks),
	GDRHOOK_STAT_ATTR(revocations),
	GDRHOOK_STAT_ATTR(events_dropped),
	GDRHOOK_STAT_ATTR(files_open),
	GDRHOOK_STAT_ATTR(files_live),
	GDRHOOK_STAT_ATTR(pinned_bytes),
};

/* Filled from the table above by gdrhook_stats_init(), before the device
 * is registered.
 */
static struct attribute *gdrhook_stat_attrs[ARRAY_SIZE(gdrhook_stat_attributes) + 1];

static const struct attribute_group gdrhook_stat_group = {
	.name = "stats",
	.attrs = gdrhook_stat_attrs,
};

const struct attribute_group *gdrhook_stats_groups[] = {
	&gdrhook_stat_group,
	NULL,
};

int gdrhook_stats_init(void)
{
	size_t i;

	/* debugfs is optional: the module works without it, and debugfs
	 * calls are safe to make with an error pointer.
	 */
	gdrhook_debugfs_dir = debugfs_create_dir(GDRHOOK_DEVICE_NAME, NULL);
	for (i = 0; i < ARRAY_SIZE(gdrhook_stat_attributes); i++) {
		gdrhook_stat_attrs[i] = &gdrhook_stat_attributes[i].attr.attr;
		debugfs_create_file_unsafe(gdrhook_stat_attrs[i]->name, 0444,
					   gdrhook_debugfs_dir,
					   gdrhook_stat_attributes[i].counter,
					   &gdrhook_stat_fops);
	}
	return 0;
}

void gdrhook_stats_exit(void)
{
	debugfs_remove_recursive(gdrhook_debugfs_dir);
}
