/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * TEST ONLY: what the two test providers (gdrhook_tp.c, the desktop API;
 * tegra/gdrhook_tp_tegra.c, Tegra's) show the tests in the same way, so
 * the in-guest helpers serve both: the device /dev/gdrhook_tp, whose FIRE
 * frees memory as the driver does (tp_fire(), each provider's own), and
 * the debugfs directory gdrhook_tp with the counters the tests assert on
 * (bad_calls: misuse by the client, always 0 in a passing test), and the
 * race_delay_us parameter. Included
 * by the one source file of each provider.
 */
#ifndef GDRHOOK_TP_DEVICE_H
#define GDRHOOK_TP_DEVICE_H

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/miscdevice.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <linux/uaccess.h>

#include "gdrhook_tp_ioctl.h"

/* The provider's: fire the callbacks of the caller's tables in the range. */
static u32 tp_fire(u64 addr, u64 len);

static atomic64_t tp_tables_live, tp_pages_pinned, tp_callbacks, tp_bad_calls;

static unsigned int race_delay_us;
module_param(race_delay_us, uint, 0644);
MODULE_PARM_DESC(race_delay_us, "Random delay up to this, in put_pages and before each callback");

/* Widens the windows in which an unpin and a free of one table overlap. */
static void tp_race_delay(void)
{
	unsigned int max = READ_ONCE(race_delay_us);

	if (max)
		udelay(get_random_u32() % max);
}

static int tp_bad(const char *what)
{
	atomic64_inc(&tp_bad_calls);
	pr_err("%s: misuse: %s\n", KBUILD_MODNAME, what);
	return -EINVAL;
}

static long tp_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct gdrhook_tp_fire a;

	if (cmd != GDRHOOK_TP_IOCTL_FIRE)
		return -ENOTTY;
	if (copy_from_user(&a, (void __user *)arg, sizeof(a)))
		return -EFAULT;
	if (a.reserved || !a.length || a.addr + a.length < a.addr)
		return -EINVAL;
	a.fired = tp_fire(a.addr, a.length);
	return copy_to_user((void __user *)arg, &a, sizeof(a)) ? -EFAULT : 0;
}

static const struct file_operations tp_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = tp_ioctl,
};

static struct miscdevice tp_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gdrhook_tp",
	.fops = &tp_fops,
};

static struct dentry *tp_debugfs;

static int tp_stat_get(void *data, u64 *val)
{
	*val = atomic64_read((atomic64_t *)data);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(tp_stat_fops, tp_stat_get, NULL, "%llu\n");

/* One more counter in the debugfs directory, a provider's own. */
struct tp_stat {
	const char *name;
	atomic64_t *value;
};

/* The counters (and the provider's extra ones), then the device. */
static int tp_device_register(const struct tp_stat *extra, unsigned int n_extra)
{
	const struct tp_stat common[] = {
		{ "tables_live", &tp_tables_live },
		{ "pages_pinned", &tp_pages_pinned },
		{ "callbacks", &tp_callbacks },
		{ "bad_calls", &tp_bad_calls },
	};
	unsigned int i;
	int err;

	tp_debugfs = debugfs_create_dir("gdrhook_tp", NULL);
	for (i = 0; i < ARRAY_SIZE(common) + n_extra; i++) {
		const struct tp_stat *s = i < ARRAY_SIZE(common) ?
			&common[i] : &extra[i - ARRAY_SIZE(common)];

		debugfs_create_file_unsafe(s->name, 0444, tp_debugfs, s->value,
					   &tp_stat_fops);
	}
	err = misc_register(&tp_miscdev);
	if (err)
		debugfs_remove_recursive(tp_debugfs);
	return err;
}

static void tp_device_unregister(void)
{
	misc_deregister(&tp_miscdev);
	debugfs_remove_recursive(tp_debugfs);
}

#endif /* GDRHOOK_TP_DEVICE_H */
