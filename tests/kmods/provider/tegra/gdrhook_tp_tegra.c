// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * TEST ONLY: Tegra's nvidia_p2p_* (linux/nv-p2p.h here) over ordinary
 * memory, the Tegra mode of the test provider (../gdrhook_tp.c is the
 * desktop one). Built as gdrhook_tp.ko, with the same device
 * (/dev/gdrhook_tp, FIRE), debugfs directory and counters, so the VM suite
 * loads it in place of the desktop provider for its Tegra step.
 *
 * "GPU memory" is the calling process's own anonymous memory, pinned
 * with pin_user_pages, one 4 KiB page per entry. What it models of L4T's
 * driver, and what it counts as misuse (bad_calls; the tests assert 0):
 *  - get_pages wants address and length 4 KiB aligned, and a callback and
 *    data; a client that passes anything else has skipped the guide's
 *    checks (misuse, and EINVAL);
 *  - the free callback runs exactly once per table: when the memory is
 *    freed (FIRE), or else inside put_pages, synchronously. put_pages on a
 *    table whose callback is running waits for it and runs no second one;
 *  - inside the callback, and only there, the client hands back what the
 *    table holds: free_dma_mapping for each of its mappings, then
 *    free_page_table, which unpins the pages (like L4T's). Twice is a
 *    double free (misuse); a callback that returns without it is misuse
 *    too (the provider then releases the pages itself);
 *  - the table itself is the client's handle until its put_pages, which
 *    every table gets exactly once, after a revocation too (L4T's
 *    put_pages unregisters the table's MMU notifier): put_pages of a table
 *    already put is a double put (misuse), caught by looking the pointer
 *    up, never by reading it, so it is counted on any kernel (and KASAN
 *    reports a client that reads a table after its put). A table never put
 *    stays in tables_live, a leak;
 *  - race_delay_us adds random delays before each callback and in
 *    put_pages, to widen the windows of an unpin racing a free;
 *  - bad_table makes get_pages succeed with a malformed table, of one of
 *    the shapes of enum gdrhook_tp_bad_table (../tp_bad_table.h).
 * EXPORT_SYMBOL_GPL: 6.1.y's symbol_get() refuses plain exports.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/hashtable.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "linux/nv-p2p.h"
#include "tp_bad_table.h"
#include "tp_device.h"

#define TP_PAGE 4096ULL
#define TP_MAX_LEN BIT_ULL(30)

struct tp_map {
	struct nvidia_p2p_dma_mapping m;
	struct list_head node;  /* in tp_table.maps */
	dma_addr_t *os_addrs;   /* one per page, as mapped */
	unsigned long n;
};

struct tp_table {
	struct nvidia_p2p_page_table pt;
	struct hlist_node hnode;  /* tp_hash, keyed by &pt */
	struct list_head all;     /* tp_all, for FIRE */
	struct list_head fire_node;
	bool in_callback;         /* unlinked from tp_all; the callback runs */
	bool called;              /* the callback has returned */
	bool pages_freed;         /* free_page_table, in the callback */
	bool put;                 /* put_pages has begun: the handle goes */
	struct mm_struct *mm;     /* mmgrab'd: compared by FIRE */
	void (*cb)(void *data);
	void *data;
	struct list_head maps;
	/* What is pinned, whatever bad_table made pt say. */
	struct page **pages;
	unsigned long npages;
	struct page **entry_ptrs; /* pt.pages: these, and one spare */
};

static DEFINE_SPINLOCK(tp_lock); /* tp_hash, tp_all, the flags, map lists */
static DEFINE_HASHTABLE(tp_hash, 8);
static LIST_HEAD(tp_all);
static DECLARE_WAIT_QUEUE_HEAD(tp_wq);

static struct tp_table *tp_find(const struct nvidia_p2p_page_table *pt)
{
	struct tp_table *t;

	lockdep_assert_held(&tp_lock);
	hash_for_each_possible(tp_hash, t, hnode, (unsigned long)pt)
		if (&t->pt == pt)
			return t;
	return NULL;
}

static void tp_unmap(struct tp_map *m)
{
	unsigned long i;

	for (i = 0; i < m->n; i++)
		dma_unmap_page(m->m.dev, m->os_addrs[i], PAGE_SIZE, m->m.direction);
	kvfree(m->os_addrs);
	kvfree(m->m.hw_address);
	kvfree(m->m.hw_len);
	kfree(m);
}

/* Unmap a table's mappings and unpin its pages, once. */
static void tp_release_pages(struct tp_table *t)
{
	struct tp_map *m, *tmp;

	list_for_each_entry_safe(m, tmp, &t->maps, node) {
		list_del(&m->node);
		tp_unmap(m);
	}
	if (t->pages) {
		unpin_user_pages_dirty_lock(t->pages, t->npages, true);
		atomic64_sub(t->npages, &tp_pages_pinned);
		kvfree(t->pages);
		t->pages = NULL;
	}
}

/* Free a table already out of tp_hash (and tp_all). */
static void tp_free(struct tp_table *t)
{
	tp_release_pages(t);
	atomic64_dec(&tp_tables_live);
	if (t->mm)
		mmdrop(t->mm);
	kvfree(t->entry_ptrs);
	kfree(t);
}

int nvidia_p2p_get_pages(u64 vaddr, u64 size,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	struct page **pages, **entry_ptrs;
	struct tp_table *t;
	unsigned long n;
	long pinned;

	BUILD_BUG_ON(PAGE_SIZE != TP_PAGE); /* one 4 KiB page per entry */
	if (!page_table || !free_callback || !data)
		return tp_bad("get_pages without a table pointer, callback or data");
	if (!size || !IS_ALIGNED(vaddr | size, TP_PAGE))
		return tp_bad("get_pages not 4 KiB aligned");
	if (vaddr + size < vaddr || size > TP_MAX_LEN || !current->mm)
		return -EINVAL;
	if (tp_bad_table_shape() == GDRHOOK_TP_TABLE_NULL) {
		/* Nothing pinned, nothing to put, nothing to call back. */
		*page_table = NULL;
		return 0;
	}
	n = size / TP_PAGE;
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	pages = kvmalloc_array(n, sizeof(*pages), GFP_KERNEL | __GFP_NOWARN);
	entry_ptrs = kvmalloc_array(n + 1, sizeof(*pages), GFP_KERNEL | __GFP_NOWARN);
	if (!t || !pages || !entry_ptrs) {
		kfree(t);
		kvfree(pages);
		kvfree(entry_ptrs);
		return -ENOMEM;
	}
	pinned = pin_user_pages_fast(vaddr, n, FOLL_WRITE | FOLL_LONGTERM, pages);
	if (pinned != n) {
		/* Not the caller's memory (or not all of it). */
		if (pinned > 0)
			unpin_user_pages(pages, pinned);
		kfree(t);
		kvfree(pages);
		kvfree(entry_ptrs);
		return -EFAULT;
	}
	atomic64_add(n, &tp_pages_pinned);
	atomic64_inc(&tp_tables_live);
	INIT_LIST_HEAD(&t->maps);
	t->pt.version = NVIDIA_P2P_PAGE_TABLE_VERSION;
	t->pt.page_size = NVIDIA_P2P_PAGE_SIZE_4KB;
	t->pt.size = size;
	t->pages = pages;
	t->npages = n;
	memcpy(entry_ptrs, pages, n * sizeof(*pages));
	entry_ptrs[n] = pages[n - 1]; /* pinned, never its own */
	t->entry_ptrs = entry_ptrs;
	t->pt.entries = n;
	t->pt.pages = entry_ptrs;
	t->pt.vaddr = vaddr;
	t->cb = free_callback;
	t->data = data;
	t->mm = current->mm;
	mmgrab(t->mm);
	tp_spoil_table(&t->pt, tp_bad_table_shape(), size);

	/* Like the driver: the table is stored before the callback can fire. */
	*page_table = &t->pt;
	spin_lock(&tp_lock);
	hash_add(tp_hash, &t->hnode, (unsigned long)&t->pt);
	list_add_tail(&t->all, &tp_all);
	spin_unlock(&tp_lock);
	return 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_get_pages);

/*
 * Run the callbacks of tables already unlinked for it (in_callback), one
 * after the other. The client's callback hands the pages back; one that
 * did not is misuse, and they are released here. The table stays, the
 * client's handle, until its put_pages.
 */
static u32 tp_run_callbacks(struct list_head *victims)
{
	struct tp_table *t, *tmp;
	u32 fired = 0;

	list_for_each_entry_safe(t, tmp, victims, fire_node) {
		bool freed;

		list_del(&t->fire_node);
		tp_race_delay();
		t->cb(t->data);
		atomic64_inc(&tp_callbacks);
		spin_lock(&tp_lock);
		freed = t->pages_freed;
		spin_unlock(&tp_lock);
		if (!freed) {
			tp_bad("free callback returned without free_page_table");
			tp_release_pages(t);
		}
		/* A put_pages waiting for this callback may free t from here. */
		spin_lock(&tp_lock);
		t->in_callback = false;
		t->called = true;
		spin_unlock(&tp_lock);
		wake_up_all(&tp_wq);
		fired++;
	}
	return fired;
}

static bool tp_in_callback(struct tp_table *t)
{
	bool busy;

	spin_lock(&tp_lock);
	busy = t->in_callback;
	spin_unlock(&tp_lock);
	return busy;
}

int nvidia_p2p_put_pages(struct nvidia_p2p_page_table *page_table)
{
	struct tp_table *t;
	LIST_HEAD(victims);

	tp_race_delay();
	spin_lock(&tp_lock);
	t = tp_find(page_table);
	if (!t || t->put) {
		spin_unlock(&tp_lock);
		return tp_bad("put_pages on an unknown table, or twice");
	}
	t->put = true;
	if (!t->called && !t->in_callback) {
		/* Always called, here too (the guide's rule for Tegra). */
		t->in_callback = true;
		list_del(&t->all);
		list_add_tail(&t->fire_node, &victims);
	}
	spin_unlock(&tp_lock);
	tp_run_callbacks(&victims);
	/* The memory's free got there first: its callback is the one. */
	wait_event(tp_wq, !tp_in_callback(t));
	spin_lock(&tp_lock);
	hash_del(&t->hnode);
	spin_unlock(&tp_lock);
	tp_free(t);
	return 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_put_pages);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	struct tp_table *t;
	const char *bad = NULL;

	spin_lock(&tp_lock);
	t = tp_find(page_table);
	if (!t)
		bad = "free_page_table of an unknown table (after its put_pages?)";
	else if (!t->in_callback)
		bad = "free_page_table outside its free callback";
	else if (t->pages_freed)
		bad = "free_page_table twice (double free)";
	else if (!list_empty(&t->maps))
		bad = "free_page_table with a DMA mapping not freed";
	else
		t->pages_freed = true;
	spin_unlock(&tp_lock);
	if (bad)
		return tp_bad(bad);
	tp_release_pages(t);
	return 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_free_page_table);

int nvidia_p2p_dma_map_pages(struct device *dev,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **map,
			     enum dma_data_direction direction)
{
	unsigned long i, n;
	struct tp_table *t;
	struct tp_map *m;

	if (!dev || !page_table || !map)
		return -EINVAL;
	spin_lock(&tp_lock);
	t = tp_find(page_table);
	if (!t || t->called) {
		spin_unlock(&tp_lock);
		return tp_bad("dma_map_pages on a table put or freed");
	}
	if (t->in_callback) {
		/* Being freed: the client cannot know yet; refused, no misuse. */
		spin_unlock(&tp_lock);
		return -EINVAL;
	}
	spin_unlock(&tp_lock);

	n = t->npages;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->m.dev = dev;
	m->m.direction = direction;
	m->os_addrs = kvmalloc_array(n, sizeof(*m->os_addrs), GFP_KERNEL);
	m->m.hw_address = kvmalloc_array(n, sizeof(*m->m.hw_address), GFP_KERNEL);
	m->m.hw_len = kvmalloc_array(n, sizeof(*m->m.hw_len), GFP_KERNEL);
	if (!m->os_addrs || !m->m.hw_address || !m->m.hw_len) {
		tp_unmap(m);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		dma_addr_t a = dma_map_page(dev, t->pages[i], 0, PAGE_SIZE, direction);
		u32 e = m->m.entries;

		if (dma_mapping_error(dev, a)) {
			tp_unmap(m);
			return -EIO;
		}
		m->os_addrs[m->n++] = a;
		/* Contiguous pages share an entry, as an sg table merges them. */
		if (e && m->m.hw_address[e - 1] + m->m.hw_len[e - 1] == a) {
			m->m.hw_len[e - 1] += PAGE_SIZE;
		} else {
			m->m.hw_address[e] = a;
			m->m.hw_len[e] = PAGE_SIZE;
			m->m.entries++;
		}
	}
	m->m.version = NVIDIA_P2P_DMA_MAPPING_VERSION;
	m->m.page_table = page_table;

	spin_lock(&tp_lock);
	list_add_tail(&m->node, &t->maps);
	spin_unlock(&tp_lock);
	*map = &m->m;
	return 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_dma_map_pages);

/* Take a mapping out of its table's list: NULL and misuse if it is not
 * one of the table's, or the table is not in the state wanted.
 */
static struct tp_map *tp_take_map(struct nvidia_p2p_dma_mapping *dm, bool in_callback)
{
	struct tp_map *m, *found = NULL;
	struct tp_table *t;

	spin_lock(&tp_lock);
	t = tp_find(dm->page_table);
	if (t && t->in_callback == in_callback)
		list_for_each_entry(m, &t->maps, node)
			if (&m->m == dm)
				found = m;
	if (found)
		list_del(&found->node);
	spin_unlock(&tp_lock);
	return found;
}

int nvidia_p2p_dma_unmap_pages(struct nvidia_p2p_dma_mapping *map)
{
	struct tp_map *m = map ? tp_take_map(map, false) : NULL;

	if (!m)
		return tp_bad("dma_unmap_pages of an unknown mapping, or in a callback");
	tp_unmap(m);
	return 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_dma_unmap_pages);

int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping)
{
	struct tp_map *m = dma_mapping ? tp_take_map(dma_mapping, true) : NULL;

	if (!m)
		return tp_bad("free_dma_mapping outside its free callback (or twice)");
	tp_unmap(m);
	return 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_free_dma_mapping);

/* What the driver does when memory under a table is freed. */
static u32 tp_fire(u64 addr, u64 len)
{
	struct tp_table *t, *tmp;
	LIST_HEAD(victims);

	spin_lock(&tp_lock);
	list_for_each_entry_safe(t, tmp, &tp_all, all) {
		if (t->mm != current->mm)
			continue;
		if (t->pt.vaddr >= addr + len || addr >= t->pt.vaddr + t->pt.size)
			continue;
		t->in_callback = true; /* put_pages now waits for it */
		list_del(&t->all);
		list_add_tail(&t->fire_node, &victims);
	}
	spin_unlock(&tp_lock);
	return tp_run_callbacks(&victims);
}

static int __init tp_init(void)
{
	return tp_device_register(NULL, 0);
}

static void __exit tp_exit(void)
{
	struct tp_table *t;
	struct hlist_node *n;
	int bkt;

	tp_device_unregister();
	/* Clients hold symbol references, so none is loaded now; whatever
	 * is left was leaked by one.
	 */
	hash_for_each_safe(tp_hash, bkt, n, t, hnode) {
		pr_err("gdrhook_tp: leaked table va=%llx len=%llx\n",
		       t->pt.vaddr, t->pt.size);
		hash_del(&t->hnode);
		if (!t->called)
			list_del(&t->all);
		tp_free(t);
	}
}

module_init(tp_init);
module_exit(tp_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("TEST ONLY: Tegra's nvidia_p2p_* over ordinary process memory, for gdrhook's VM test");
