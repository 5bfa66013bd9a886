// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * TEST ONLY: a dma-buf exporter that moves its buffers.
 *
 * vgem, the exporter the VM test otherwise uses, never moves a buffer and
 * so never calls move_notify; this one does on request (MOVE ioctl on
 * /dev/gdrhook_te), so an importer's move_notify can be exercised without
 * a GPU. A buffer is an array of ordinary pages. Two kinds, chosen per
 * buffer at CREATE:
 *  - pinnable: implements pin/unpin, which makes it a dynamic exporter;
 *    like a real one it never moves a buffer an attachment has pinned
 *    (MOVE answers EBUSY), unless told to take it back regardless, as an
 *    exporter whose device goes away does: then it notifies without
 *    moving;
 *  - plain: no pin, so the dma-buf core maps it for a dynamic importer
 *    once, at attach time; it moves whenever asked, and move_notify is
 *    all an importer gets.
 * A move copies the buffer to new pages and calls dma_buf_move_notify()
 * under the reservation lock, as exporters must. Every mapping holds a
 * reference on the pages it maps, so a mapping made before a move stays
 * valid (pointing at the old pages) until its importer unmaps it, which
 * is what the dma-buf documentation promises importers.
 *
 * The map_delay_us parameter sleeps a random time up to it at the start
 * of every map. A plain buffer is mapped for a dynamic importer inside
 * dma_buf_dynamic_attach(), after the attachment is already on the list
 * move_notify walks, so the delay widens the window in which a move
 * reaches an importer that is still setting up its attachment.
 *
 * debugfs (gdrhook_te/) counts what is alive (buffers, attachments,
 * mappings, pins), the moves and notifications made, and misuse by an
 * importer (bad_calls: a detach with mappings or pins outstanding, an
 * unpin without a pin), so tests can assert that everything an importer
 * took was given back, exactly once.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/highmem.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "gdrhook_te_ioctl.h"

static unsigned int map_delay_us;
module_param(map_delay_us, uint, 0644);
MODULE_PARM_DESC(map_delay_us, "Random sleep up to this at the start of every map (0: off)");

static atomic64_t te_buffers_live;
static atomic64_t te_attachments_live;
static atomic64_t te_mappings_live;
static atomic64_t te_pins_live;
static atomic64_t te_moves;
static atomic64_t te_moves_refused;
static atomic64_t te_notified;
static atomic64_t te_bad_calls;

struct te_buffer {
	/*
	 * pages and the pin counts. A plain buffer is mapped without the
	 * reservation lock (at attach time), so the lock of its own is what
	 * keeps a map from reading the array while a move swaps it.
	 * Nests inside the reservation lock.
	 */
	struct mutex lock;
	struct page **pages;
	unsigned long npages;
	unsigned int pins;
};

struct te_attach {
	unsigned int maps; /* under te_buffer.lock */
	unsigned int pins;
};

static void te_free_pages(struct page **pages, unsigned long n)
{
	unsigned long i;

	if (!pages)
		return;
	for (i = 0; i < n; i++)
		if (pages[i])
			__free_page(pages[i]);
	kvfree(pages);
}

static struct page **te_alloc_pages(unsigned long n)
{
	struct page **pages;
	unsigned long i;

	pages = kvcalloc(n, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!pages[i]) {
			te_free_pages(pages, n);
			return NULL;
		}
	}
	return pages;
}

static int te_attach(struct dma_buf *dmabuf, struct dma_buf_attachment *attach)
{
	struct te_attach *ta = kzalloc(sizeof(*ta), GFP_KERNEL);

	if (!ta)
		return -ENOMEM;
	attach->priv = ta;
	atomic64_inc(&te_attachments_live);
	return 0;
}

static void te_detach(struct dma_buf *dmabuf, struct dma_buf_attachment *attach)
{
	struct te_attach *ta = attach->priv;

	/* The core unmaps and unpins what it mapped itself before this. */
	if (ta->maps || ta->pins)
		atomic64_inc(&te_bad_calls);
	kfree(ta);
	atomic64_dec(&te_attachments_live);
}

static int te_pin(struct dma_buf_attachment *attach)
{
	struct te_buffer *buf = attach->dmabuf->priv;
	struct te_attach *ta = attach->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	mutex_lock(&buf->lock);
	buf->pins++;
	ta->pins++;
	mutex_unlock(&buf->lock);
	atomic64_inc(&te_pins_live);
	return 0;
}

static void te_unpin(struct dma_buf_attachment *attach)
{
	struct te_buffer *buf = attach->dmabuf->priv;
	struct te_attach *ta = attach->priv;
	bool bad;

	dma_resv_assert_held(attach->dmabuf->resv);
	mutex_lock(&buf->lock);
	bad = !ta->pins;
	if (!bad) {
		buf->pins--;
		ta->pins--;
	}
	mutex_unlock(&buf->lock);
	if (bad)
		atomic64_inc(&te_bad_calls);
	else
		atomic64_dec(&te_pins_live);
}

/* Drop the page references a mapping holds. */
static void te_put_sgt_pages(struct sg_table *sgt)
{
	struct sg_page_iter it;

	for_each_sgtable_page(sgt, &it, 0)
		put_page(sg_page_iter_page(&it));
}

static struct sg_table *te_map(struct dma_buf_attachment *attach,
			       enum dma_data_direction dir)
{
	struct te_buffer *buf = attach->dmabuf->priv;
	struct te_attach *ta = attach->priv;
	unsigned int delay = READ_ONCE(map_delay_us);
	struct sg_table *sgt;
	unsigned long i;
	int err;

	if (delay)
		usleep_range(0, get_random_u32() % delay + 1);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	mutex_lock(&buf->lock);
	err = sg_alloc_table_from_pages(sgt, buf->pages, buf->npages, 0,
					buf->npages << PAGE_SHIFT, GFP_KERNEL);
	/* The mapping keeps these pages alive across a move. */
	if (!err)
		for (i = 0; i < buf->npages; i++)
			get_page(buf->pages[i]);
	mutex_unlock(&buf->lock);
	if (err)
		goto out_free;
	err = dma_map_sgtable(attach->dev, sgt, dir, 0);
	if (err)
		goto out_put;
	mutex_lock(&buf->lock);
	ta->maps++;
	mutex_unlock(&buf->lock);
	atomic64_inc(&te_mappings_live);
	return sgt;

out_put:
	te_put_sgt_pages(sgt);
	sg_free_table(sgt);
out_free:
	kfree(sgt);
	return ERR_PTR(err);
}

static void te_unmap(struct dma_buf_attachment *attach, struct sg_table *sgt,
		     enum dma_data_direction dir)
{
	struct te_buffer *buf = attach->dmabuf->priv;
	struct te_attach *ta = attach->priv;
	bool bad;

	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	te_put_sgt_pages(sgt);
	sg_free_table(sgt);
	kfree(sgt);
	mutex_lock(&buf->lock);
	bad = !ta->maps;
	if (!bad)
		ta->maps--;
	mutex_unlock(&buf->lock);
	if (bad)
		atomic64_inc(&te_bad_calls);
	else
		atomic64_dec(&te_mappings_live);
}

static void te_release(struct dma_buf *dmabuf)
{
	struct te_buffer *buf = dmabuf->priv;

	if (buf->pins)
		atomic64_inc(&te_bad_calls);
	te_free_pages(buf->pages, buf->npages);
	mutex_destroy(&buf->lock);
	kfree(buf);
	atomic64_dec(&te_buffers_live);
}

static const struct dma_buf_ops te_ops_pinnable = {
	.attach = te_attach,
	.detach = te_detach,
	.pin = te_pin,
	.unpin = te_unpin,
	.map_dma_buf = te_map,
	.unmap_dma_buf = te_unmap,
	.release = te_release,
};

static const struct dma_buf_ops te_ops_plain = {
	.attach = te_attach,
	.detach = te_detach,
	.map_dma_buf = te_map,
	.unmap_dma_buf = te_unmap,
	.release = te_release,
};

static int te_create(struct gdrhook_te_create *a)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp);
	struct te_buffer *buf;
	struct dma_buf *dmabuf;
	int fd;

	if (!a->size || a->size > GDRHOOK_TE_MAX_SIZE || !PAGE_ALIGNED(a->size) ||
	    a->flags & ~GDRHOOK_TE_PINNABLE)
		return -EINVAL;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL_ACCOUNT);
	if (!buf)
		return -ENOMEM;
	mutex_init(&buf->lock);
	buf->npages = a->size >> PAGE_SHIFT;
	buf->pages = te_alloc_pages(buf->npages);
	if (!buf->pages) {
		kfree(buf);
		return -ENOMEM;
	}
	exp.ops = a->flags & GDRHOOK_TE_PINNABLE ? &te_ops_pinnable : &te_ops_plain;
	exp.size = a->size;
	exp.flags = O_RDWR;
	exp.priv = buf;
	dmabuf = dma_buf_export(&exp);
	if (IS_ERR(dmabuf)) {
		te_free_pages(buf->pages, buf->npages);
		kfree(buf);
		return PTR_ERR(dmabuf);
	}
	atomic64_inc(&te_buffers_live);
	fd = dma_buf_fd(dmabuf, O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf); /* te_release frees buf */
		return fd;
	}
	a->fd = fd;
	return 0;
}

static int te_move(struct gdrhook_te_move *a)
{
	struct dma_buf_attachment *attach;
	struct dma_buf *dmabuf;
	struct te_buffer *buf;
	struct page **pages;
	unsigned long i;
	int err = 0;

	if (a->flags & ~GDRHOOK_TE_MOVE_EVEN_IF_PINNED)
		return -EINVAL;
	a->moved = 0;
	dmabuf = dma_buf_get(a->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (dmabuf->ops != &te_ops_pinnable && dmabuf->ops != &te_ops_plain) {
		err = -EINVAL;
		goto out_put;
	}
	buf = dmabuf->priv;
	pages = te_alloc_pages(buf->npages);
	if (!pages) {
		err = -ENOMEM;
		goto out_put;
	}

	/* The reservation lock is what keeps new mappings out during a move. */
	dma_resv_lock(dmabuf->resv, NULL);
	mutex_lock(&buf->lock);
	if (buf->pins && !(a->flags & GDRHOOK_TE_MOVE_EVEN_IF_PINNED)) {
		mutex_unlock(&buf->lock);
		dma_resv_unlock(dmabuf->resv);
		atomic64_inc(&te_moves_refused);
		te_free_pages(pages, buf->npages);
		err = -EBUSY;
		goto out_put;
	}
	/* A pinned buffer is taken back where it is, never moved. */
	if (!buf->pins) {
		for (i = 0; i < buf->npages; i++)
			copy_highpage(pages[i], buf->pages[i]);
		swap(buf->pages, pages);
		a->moved = 1;
	}
	mutex_unlock(&buf->lock);

	a->notified = 0;
	list_for_each_entry(attach, &dmabuf->attachments, node)
		if (attach->importer_ops)
			a->notified++;
	dma_buf_move_notify(dmabuf);
	dma_resv_unlock(dmabuf->resv);

	/*
	 * The old pages (or the unused new ones): what is still mapped lives
	 * on in its mappings.
	 */
	te_free_pages(pages, buf->npages);
	atomic64_inc(&te_moves);
	atomic64_add(a->notified, &te_notified);
out_put:
	dma_buf_put(dmabuf);
	return err;
}

static long te_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	int err;

	switch (cmd) {
	case GDRHOOK_TE_IOCTL_CREATE: {
		struct gdrhook_te_create a;

		if (copy_from_user(&a, uarg, sizeof(a)))
			return -EFAULT;
		err = te_create(&a);
		/* On EFAULT here the fd stays installed: a test's own bug. */
		if (!err && copy_to_user(uarg, &a, sizeof(a)))
			err = -EFAULT;
		return err;
	}
	case GDRHOOK_TE_IOCTL_MOVE: {
		struct gdrhook_te_move a;

		if (copy_from_user(&a, uarg, sizeof(a)))
			return -EFAULT;
		err = te_move(&a);
		if (!err && copy_to_user(uarg, &a, sizeof(a)))
			err = -EFAULT;
		return err;
	}
	default:
		return -ENOTTY;
	}
}

static const struct file_operations te_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = te_ioctl,
};

static struct miscdevice te_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gdrhook_te",
	.fops = &te_fops,
};

static struct dentry *te_debugfs;

static int te_stat_get(void *data, u64 *val)
{
	*val = atomic64_read((atomic64_t *)data);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(te_stat_fops, te_stat_get, NULL, "%llu\n");

static int __init te_init(void)
{
	static const struct {
		const char *name;
		atomic64_t *v;
	} stats[] = {
		{ "buffers_live", &te_buffers_live },
		{ "attachments_live", &te_attachments_live },
		{ "mappings_live", &te_mappings_live },
		{ "pins_live", &te_pins_live },
		{ "moves", &te_moves },
		{ "moves_refused", &te_moves_refused },
		{ "notified", &te_notified },
		{ "bad_calls", &te_bad_calls },
	};
	unsigned int i;
	int err;

	te_debugfs = debugfs_create_dir("gdrhook_te", NULL);
	for (i = 0; i < ARRAY_SIZE(stats); i++)
		debugfs_create_file_unsafe(stats[i].name, 0444, te_debugfs,
					   stats[i].v, &te_stat_fops);
	err = misc_register(&te_miscdev);
	if (err)
		debugfs_remove_recursive(te_debugfs);
	return err;
}

static void __exit te_exit(void)
{
	/* Every dma-buf holds a reference on this module: none is left. */
	misc_deregister(&te_miscdev);
	debugfs_remove_recursive(te_debugfs);
}

module_init(te_init);
module_exit(te_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("TEST ONLY: a dma-buf exporter that moves its buffers, for gdrhook's VM test");
GDRHOOK_IMPORT_NS_DMA_BUF();
