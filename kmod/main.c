// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Module entry points, parameters and /dev/gdrhook itself.
 *
 * The device is a misc device; each open gets its own handle table and
 * event queue (pin_table.c, events.c), and closing the file releases
 * every pin it holds, whatever way the process went (exit, kill -9, the
 * last fd of a fork closing), and returns only once no callback is
 * running on any of them. The module cannot be unloaded while a file is
 * open (the file holds a module reference), and with no file open there
 * are no pins; unload only waits for late callbacks (ones that found no
 * pin) to leave our code.
 *
 * Access model (README.md): the node is 0666, open to every user as RDMA's
 * uverbs devices are (the opener's locked-memory limit and the per-user
 * cap bound what it pins), group gdrhook (udev) for a site that restricts
 * it; each
 * open file belongs to the process that opened it: the ioctls that name
 * pins, read() and poll() all refuse another process (a forked child, a
 * receiver of the fd), so nobody else can pin in its name or take its
 * revocation events.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>

#include "compat.h"
#include "gdrhook.h"
#include "gdrhook_version.h"

unsigned int gdrhook_max_handles_per_file = 65536;
module_param_named(max_handles_per_file, gdrhook_max_handles_per_file, uint, 0644);
MODULE_PARM_DESC(max_handles_per_file, "Most pins one open file may hold (default 65536)");

unsigned long long gdrhook_max_pinned_bytes_per_file = 1ULL << 40;
module_param_named(max_pinned_bytes_per_file, gdrhook_max_pinned_bytes_per_file, ullong, 0644);
MODULE_PARM_DESC(max_pinned_bytes_per_file, "Most bytes one open file may hold pinned (default 1 TiB)");

unsigned long long gdrhook_max_pinned_pages_per_user = 1ULL << 28;
module_param_named(max_pinned_pages_per_user, gdrhook_max_pinned_pages_per_user, ullong, 0644);
MODULE_PARM_DESC(max_pinned_pages_per_user,
		 "Most pages (PAGE_SIZE) one user may hold pinned through all its open files, counted as the driver or exporter pins them (default 2^28: 1 TiB of 4 KiB pages)");

bool gdrhook_allow_unprivileged_get_pages;
module_param_named(allow_unprivileged_get_pages, gdrhook_allow_unprivileged_get_pages, bool, 0644);
MODULE_PARM_DESC(allow_unprivileged_get_pages,
		 "Let callers without CAP_SYS_RAWIO read bus addresses with GET_PAGES (default no)");

unsigned int gdrhook_event_queue_len = 1024;
module_param_named(event_queue_len, gdrhook_event_queue_len, uint, 0444);
MODULE_PARM_DESC(event_queue_len, "Revocation events queued per open file before overflow (16..65536)");

bool gdrhook_dmabuf_dynamic = true;
module_param_named(dmabuf_dynamic, gdrhook_dmabuf_dynamic, bool, 0644);
MODULE_PARM_DESC(dmabuf_dynamic,
		 "Import dma-bufs dynamically (peer-to-peer allowed, move_notify revocations); 0: static attachment");

static int gdrhook_open(struct inode *inode, struct file *filp)
{
	struct gdrhook_file *f = gdrhook_file_create();

	if (IS_ERR(f))
		return PTR_ERR(f);
	filp->private_data = f;
	atomic64_inc(&gdrhook_stats.files_open);
	return stream_open(inode, filp);
}

static int gdrhook_release(struct inode *inode, struct file *filp)
{
	struct gdrhook_file *f = filp->private_data;

	gdrhook_file_release_all(f);
	atomic64_dec(&gdrhook_stats.files_open);
	/* Callbacks still holding a pin keep the rest alive until they end. */
	gdrhook_file_put(f);
	return 0;
}

/* The events are the opener's: its cache misses any another reads. */
static bool gdrhook_is_opener(const struct gdrhook_file *f)
{
	return current->mm == f->mm;
}

static ssize_t gdrhook_read(struct file *filp, char __user *buf, size_t len,
			    loff_t *ppos)
{
	struct gdrhook_file *f = filp->private_data;

	if (!gdrhook_is_opener(f))
		return -EPERM;
	return gdrhook_events_read(&f->events, buf, len,
				   filp->f_flags & O_NONBLOCK);
}

static __poll_t gdrhook_poll(struct file *filp, struct poll_table_struct *pt)
{
	struct gdrhook_file *f = filp->private_data;

	if (!gdrhook_is_opener(f))
		return EPOLLERR;
	return gdrhook_events_poll(&f->events, filp, pt);
}

static void gdrhook_show_fdinfo(struct seq_file *m, struct file *filp)
{
	gdrhook_file_show(m, filp->private_data);
}

static const struct file_operations gdrhook_fops = {
	.owner = THIS_MODULE,
	.open = gdrhook_open,
	.release = gdrhook_release,
	.read = gdrhook_read,
	.poll = gdrhook_poll,
	.unlocked_ioctl = gdrhook_ioctl,
	.compat_ioctl = gdrhook_compat_ptr_ioctl,
	.show_fdinfo = gdrhook_show_fdinfo,
};

static struct miscdevice gdrhook_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = GDRHOOK_DEVICE_NAME,
	.fops = &gdrhook_fops,
	.groups = gdrhook_stats_groups,
	.mode = 0666, /* any user, as RDMA's uverbs: memlock bounds its pins */
};

static int __init gdrhook_init(void)
{
	int err;

	gdrhook_stats_init();
	err = gdrhook_pin_table_init();
	if (err)
		goto out_stats;
	err = misc_register(&gdrhook_miscdev);
	if (err)
		goto out_table;
	pr_info("gdrhook: ABI %u.%u, /dev/%s\n", GDRHOOK_ABI_MAJOR,
		GDRHOOK_ABI_MINOR, GDRHOOK_DEVICE_NAME);
	return 0;

out_table:
	gdrhook_pin_table_exit();
out_stats:
	gdrhook_stats_exit();
	return err;
}

static void __exit gdrhook_exit(void)
{
	misc_deregister(&gdrhook_miscdev);
	gdrhook_nvp2p_exit();
	gdrhook_pin_table_exit();
	gdrhook_quota_exit();
	gdrhook_stats_exit();
}

module_init(gdrhook_init);
module_exit(gdrhook_exit);

MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("gdrhook: pin GPU memory (nv-p2p or dma-buf) for RDMA registration caches");
MODULE_AUTHOR("The gdrhook project");
MODULE_VERSION(GDRHOOK_MODULE_VERSION);
GDRHOOK_IMPORT_NS_DMA_BUF();
