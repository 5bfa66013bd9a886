// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * stats.c - counters, read-only in debugfs (/sys/kernel/debug/gdrhook/),
 * so that tests can assert that nothing leaked: after every file is
 * closed, pins_live and files_live must read 0.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>

#include "gdrhook.h"

struct gdrhook_stats gdrhook_stats;

static struct dentry *gdrhook_debugfs_dir;

static int gdrhook_stat_get(void *data, u64 *val)
{
	*val = atomic64_read((atomic64_t *)data);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(gdrhook_stat_fops, gdrhook_stat_get, NULL, "%llu\n");

static const struct {
	const char *name;
	atomic64_t *counter;
} gdrhook_stat_files[] = {
	{ "pins_live", &gdrhook_stats.pins_live },
	{ "pins_total", &gdrhook_stats.pins_total },
	{ "callbacks", &gdrhook_stats.callbacks },
	{ "late_callbacks", &gdrhook_stats.late_callbacks },
	{ "revocations", &gdrhook_stats.revocations },
	{ "events_dropped", &gdrhook_stats.events_dropped },
	{ "files_open", &gdrhook_stats.files_open },
	{ "files_live", &gdrhook_stats.files_live },
};

int gdrhook_stats_init(void)
{
	size_t i;

	/* debugfs is optional: the module works without it, and debugfs
	 * calls are safe to make with an error pointer. */
	gdrhook_debugfs_dir = debugfs_create_dir(GDRHOOK_DEVICE_NAME, NULL);
	for (i = 0; i < ARRAY_SIZE(gdrhook_stat_files); i++)
		debugfs_create_file_unsafe(gdrhook_stat_files[i].name, 0444,
					   gdrhook_debugfs_dir,
					   gdrhook_stat_files[i].counter,
					   &gdrhook_stat_fops);
	return 0;
}

void gdrhook_stats_exit(void)
{
	debugfs_remove_recursive(gdrhook_debugfs_dir);
}
