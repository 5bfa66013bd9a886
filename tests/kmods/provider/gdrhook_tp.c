// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * TEST ONLY: an nvidia_p2p_* provider over ordinary memory.
 *
 * Exports the nv-p2p functions gdrhook.ko resolves with symbol_get(), so
 * the module can be exercised in a VM with no GPU. "GPU memory" is the
 * calling process's own anonymous memory, pinned with pin_user_pages; a
 * 64 KiB "GPU page" is reported by the address of its first 4 KiB page.
 *
 * It copies the semantics of the current NVIDIA driver that matter to a
 * client, and counts every misuse in debugfs (bad_calls) so tests can
 * assert there was none:
 *  - the free callback runs after the table is unlinked (FIRE ioctl);
 *    the table is freed by the provider once the callback returns, and
 *    nvidia_p2p_free_page_table() is only legal inside the callback;
 *  - exactly one of two things must happen to each non-persistent table:
 *    the client calls nvidia_p2p_free_page_table() inside the callback, or
 *    it calls nvidia_p2p_put_pages() (before, during or after the
 *    callback). put_pages on a table whose callback is running answers 0
 *    once the callback has finished; a table whose callback returned
 *    without free_page_table is kept as a tombstone (pages released, the
 *    address not reused) until its put_pages arrives; put_pages on a
 *    table already freed is a double free, counted as misuse. Tombstones
 *    count in tables_live, so a client that never puts them shows as a
 *    leak;
 *  - the race_delay_us parameter inserts random delays in put_pages and
 *    before each callback, to widen the windows in which an unpin and a
 *    callback on the same table overlap;
 *  - fire_on_get_ms makes get_pages fire the new table's callback at once,
 *    from a work item on another CPU, and wait up to that long for it
 *    before returning: the callback lands while the client is still
 *    reading the table it was just given;
 *  - hold_in_free_ms makes free_page_table (called from inside the
 *    client's callback) sleep, so a test can act while the client's
 *    callback is known to be running (frees_held in debugfs counts the
 *    sleepers);
 *  - get_pages_errno makes get_pages fail with that (kernel) errno, as
 *    the driver does with -ENOTSUPP;
 *  - bad_table makes get_pages succeed with a malformed table, of one of
 *    the shapes of enum gdrhook_tp_bad_table (tp_bad_table.h).
 * EXPORT_SYMBOL_GPL: 6.1.y's symbol_get() refuses plain exports.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/completion.h>
#include <linux/dma-mapping.h>
#include <linux/hashtable.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "nv_p2p_abi.h"
#include "tp_bad_table.h"
#include "tp_device.h"

#define TP_GPU_PAGE (64ULL * 1024)
#define TP_OS_PER_GPU_PAGE (TP_GPU_PAGE / PAGE_SIZE)
#define TP_MAX_LEN BIT_ULL(30)

/*
 * Whether put_pages on a table whose callback is running waits for the
 * callback to finish (1), or answers 0 at once (0), in which case the
 * callback reaches the client after its unpin has returned: the "late
 * callback" that must find nothing.
 */
static bool put_waits_for_callback = true;
module_param(put_waits_for_callback, bool, 0644);
MODULE_PARM_DESC(put_waits_for_callback, "put_pages during a callback waits for it (default 1)");

static unsigned int fire_on_get_ms;
module_param(fire_on_get_ms, uint, 0644);
MODULE_PARM_DESC(fire_on_get_ms, "get_pages fires the callback from another CPU and waits up to this for it (0: off)");

static unsigned int hold_in_free_ms;
module_param(hold_in_free_ms, uint, 0644);
MODULE_PARM_DESC(hold_in_free_ms, "free_page_table sleeps this long inside the client's callback");

static int get_pages_errno;
module_param(get_pages_errno, int, 0644);
MODULE_PARM_DESC(get_pages_errno, "get_pages fails with -this (0: off)");

enum tp_state {
	TP_LIVE,
	TP_IN_CALLBACK, /* unlinked by a "free"; the callback is running */
	TP_DEAD,        /* callback done without free_page_table: put_pages owed */
};

struct tp_map {
	struct nvidia_p2p_dma_mapping m;
	struct list_head node;  /* in tp_table.maps */
	dma_addr_t *os_addrs;   /* one per 4 KiB page */
	unsigned long n;
};

struct tp_table {
	struct nvidia_p2p_page_table pt;
	struct hlist_node hnode;    /* tp_hash, keyed by &pt */
	struct list_head all;       /* tp_all, for FIRE */
	struct list_head fire_node; /* FIRE's private list */
	enum tp_state state;
	bool persistent;
	bool client_freed;          /* free_page_table called in the callback */
	bool client_put;            /* put_pages called during the callback */
	struct mm_struct *mm;       /* mmgrab'd: compared by FIRE */
	u64 va, len;
	struct page **pages;
	unsigned long npages;
	struct nvidia_p2p_page *entries;
	struct nvidia_p2p_page **entry_ptrs;
	void (*cb)(void *data);
	void *data;
	struct list_head maps;
	u64 serial;                 /* tells a reused address from its table */
	u8 uuid[16];
};

static DEFINE_SPINLOCK(tp_lock); /* tp_hash, tp_all, states, map lists */
static DEFINE_HASHTABLE(tp_hash, 8);
static LIST_HEAD(tp_all);
static DECLARE_WAIT_QUEUE_HEAD(tp_wq);
static atomic64_t tp_frees_held, tp_serial;
static struct workqueue_struct *tp_fire_wq; /* fire_on_get_ms's work items */

static void tp_fire_soon(struct tp_table *t, unsigned int wait_ms);

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
		dma_unmap_page(&m->m.pci_dev->dev, m->os_addrs[i], PAGE_SIZE,
			       DMA_BIDIRECTIONAL);
	kvfree(m->os_addrs);
	kvfree(m->m.dma_addresses);
	kfree(m);
}

/* Release what an unlinked table holds: its mappings, then its pages. */
static void tp_release_memory(struct tp_table *t)
{
	struct tp_map *m, *tmp;

	list_for_each_entry_safe(m, tmp, &t->maps, node) {
		list_del(&m->node);
		tp_unmap(m);
	}
	if (t->pages && t->npages) {
		unpin_user_pages_dirty_lock(t->pages, t->npages, true);
		atomic64_sub(t->npages, &tp_pages_pinned);
		t->npages = 0;
	}
}

/* Free an unlinked table. */
static void tp_free(struct tp_table *t)
{
	tp_release_memory(t);
	if (t->pages)
		atomic64_dec(&tp_tables_live);
	if (t->mm)
		mmdrop(t->mm);
	kvfree(t->pages);
	kvfree(t->entries);
	kvfree(t->entry_ptrs);
	kfree(t);
}

static int tp_get(u64 va, u64 len, struct nvidia_p2p_page_table **out,
		  void (*cb)(void *), void *data, bool persistent)
{
	unsigned long i, n_entries;
	struct tp_table *t;
	long pinned;

	if (!out || !len || !IS_ALIGNED(va | len, TP_GPU_PAGE) ||
	    va + len < va || len > TP_MAX_LEN || !current->mm)
		return -EINVAL;
	if (!persistent && !cb)
		return -EINVAL;
	if (tp_bad_table_shape() == GDRHOOK_TP_TABLE_NULL) {
		/* Nothing pinned, nothing to put, nothing to call back. */
		*out = NULL;
		return 0;
	}

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	INIT_LIST_HEAD(&t->maps);
	t->npages = len >> PAGE_SHIFT;
	n_entries = len / TP_GPU_PAGE;
	t->pages = kvmalloc_array(t->npages, sizeof(*t->pages), GFP_KERNEL | __GFP_NOWARN);
	/* One entry more than the range needs, for bad_table's ONE_EXTRA. */
	t->entries = kvcalloc(n_entries + 1, sizeof(*t->entries), GFP_KERNEL | __GFP_NOWARN);
	t->entry_ptrs = kvcalloc(n_entries + 1, sizeof(*t->entry_ptrs), GFP_KERNEL | __GFP_NOWARN);
	if (!t->pages || !t->entries || !t->entry_ptrs) {
		kvfree(t->pages);
		t->pages = NULL;
		tp_free(t);
		return -ENOMEM;
	}
	pinned = pin_user_pages_fast(va, t->npages, FOLL_WRITE | FOLL_LONGTERM, t->pages);
	if (pinned != t->npages) {
		/* Not the caller's memory (or not all of it). */
		if (pinned > 0)
			unpin_user_pages(t->pages, pinned);
		kvfree(t->pages);
		t->pages = NULL;
		tp_free(t);
		return -EFAULT;
	}
	atomic64_add(t->npages, &tp_pages_pinned);
	atomic64_inc(&tp_tables_live);

	for (i = 0; i <= n_entries; i++) {
		/* The spare entry repeats the last page: pinned, never its own. */
		t->entries[i].physical_address =
			page_to_phys(t->pages[min(i, n_entries - 1) * TP_OS_PER_GPU_PAGE]);
		t->entry_ptrs[i] = &t->entries[i];
	}
	get_random_bytes(t->uuid, sizeof(t->uuid));
	t->pt.version = NVIDIA_P2P_PAGE_TABLE_VERSION;
	t->pt.page_size = NVIDIA_P2P_PAGE_SIZE_64KB;
	t->pt.pages = t->entry_ptrs;
	t->pt.entries = n_entries;
	t->pt.gpu_uuid = t->uuid;
	t->va = va;
	t->len = len;
	t->cb = cb;
	t->data = data;
	t->persistent = persistent;
	t->state = TP_LIVE;
	t->serial = atomic64_inc_return(&tp_serial);
	t->mm = current->mm;
	mmgrab(t->mm);
	tp_spoil_table(&t->pt, tp_bad_table_shape(), len);

	/* Like the driver: the table is stored before the callback can fire. */
	*out = &t->pt;
	spin_lock(&tp_lock);
	hash_add(tp_hash, &t->hnode, (unsigned long)&t->pt);
	list_add_tail(&t->all, &tp_all);
	spin_unlock(&tp_lock);
	return 0;
}

static bool tp_in_callback(const struct nvidia_p2p_page_table *pt)
{
	struct tp_table *t;
	bool busy;

	spin_lock(&tp_lock);
	t = tp_find(pt);
	busy = t && t->state == TP_IN_CALLBACK;
	spin_unlock(&tp_lock);
	return busy;
}

static int tp_put(u64 va, struct nvidia_p2p_page_table *pt, bool persistent)
{
	struct tp_table *t;

	tp_race_delay();
	for (;;) {
		spin_lock(&tp_lock);
		t = tp_find(pt);
		if (!t || t->va != va || t->persistent != persistent) {
			spin_unlock(&tp_lock);
			return tp_bad("put_pages on an unknown table (double free?)");
		}
		if (t->state != TP_IN_CALLBACK)
			break;
		if (!READ_ONCE(put_waits_for_callback)) {
			bool twice = t->client_put || t->client_freed;

			t->client_put = true;
			spin_unlock(&tp_lock);
			return twice ? tp_bad("put_pages twice, or after free_page_table") : 0;
		}
		spin_unlock(&tp_lock);
		/* The free got there first: answer once its callback is done. */
		wait_event(tp_wq, !tp_in_callback(pt));
	}
	hash_del(&t->hnode);
	if (t->state == TP_LIVE)
		list_del(&t->all);
	spin_unlock(&tp_lock);
	tp_free(t); /* a tombstone's memory is already released */
	return 0;
}

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space,
			 u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	unsigned int wait_ms = READ_ONCE(fire_on_get_ms);
	int fail = READ_ONCE(get_pages_errno);
	int err;

	if (p2p_token || va_space)
		return -EINVAL;
	if (fail)
		return -abs(fail);
	err = tp_get(virtual_address, length, page_table, free_callback, data, false);
	if (!err && wait_ms)
		tp_fire_soon(container_of(*page_table, struct tp_table, pt), wait_ms);
	return err;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_get_pages);

int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space,
			 u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	if (p2p_token || va_space)
		return -EINVAL;
	return tp_put(virtual_address, page_table, false);
}
EXPORT_SYMBOL_GPL(nvidia_p2p_put_pages);

int nvidia_p2p_get_pages_persistent(u64 virtual_address, u64 length,
				    struct nvidia_p2p_page_table **page_table,
				    u32 flags)
{
	if (flags)
		return -EINVAL;
	return tp_get(virtual_address, length, page_table, NULL, NULL, true);
}
EXPORT_SYMBOL_GPL(nvidia_p2p_get_pages_persistent);

int nvidia_p2p_put_pages_persistent(u64 virtual_address,
				    struct nvidia_p2p_page_table *page_table,
				    u32 flags)
{
	if (flags)
		return -EINVAL;
	return tp_put(virtual_address, page_table, true);
}
EXPORT_SYMBOL_GPL(nvidia_p2p_put_pages_persistent);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	struct tp_table *t;
	int err = 0;

	spin_lock(&tp_lock);
	t = tp_find(page_table);
	if (!t || t->state != TP_IN_CALLBACK || t->client_freed || t->client_put)
		err = -EINVAL;
	else
		t->client_freed = true;
	spin_unlock(&tp_lock);
	if (err)
		return tp_bad("free_page_table outside its free callback");
	if (READ_ONCE(hold_in_free_ms)) {
		atomic64_inc(&tp_frees_held);
		msleep(READ_ONCE(hold_in_free_ms));
		atomic64_dec(&tp_frees_held);
	}
	/* Freed after the callback returns; here we only check the call. */
	return 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_free_page_table);

int nvidia_p2p_dma_map_pages(struct pci_dev *peer,
			     struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping)
{
	struct tp_table *t;
	struct tp_map *m;
	unsigned long i, n_entries;

	if (!peer || !page_table || !dma_mapping)
		return -EINVAL;
	spin_lock(&tp_lock);
	t = tp_find(page_table);
	if (!t || t->state == TP_DEAD) {
		spin_unlock(&tp_lock);
		return tp_bad("dma_map_pages on a table that is not live");
	}
	if (t->state == TP_IN_CALLBACK) {
		/* Being freed: the client cannot know yet; refused, no misuse. */
		spin_unlock(&tp_lock);
		return -EINVAL;
	}
	spin_unlock(&tp_lock);
	/* The range's count, whatever bad_table made the table say. */
	n_entries = t->len / TP_GPU_PAGE;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->os_addrs = kvmalloc_array(t->npages, sizeof(*m->os_addrs), GFP_KERNEL);
	m->m.dma_addresses = kvmalloc_array(n_entries, sizeof(u64), GFP_KERNEL);
	m->m.pci_dev = peer;
	if (!m->os_addrs || !m->m.dma_addresses) {
		tp_unmap(m);
		return -ENOMEM;
	}
	for (i = 0; i < t->npages; i++) {
		dma_addr_t a = dma_map_page(&peer->dev, t->pages[i], 0, PAGE_SIZE,
					    DMA_BIDIRECTIONAL);

		if (dma_mapping_error(&peer->dev, a)) {
			tp_unmap(m);
			return -EIO;
		}
		m->os_addrs[m->n++] = a;
	}
	for (i = 0; i < n_entries; i++)
		m->m.dma_addresses[i] = m->os_addrs[i * TP_OS_PER_GPU_PAGE];
	m->m.version = NVIDIA_P2P_DMA_MAPPING_VERSION;
	m->m.page_size_type = NVIDIA_P2P_PAGE_SIZE_64KB;
	m->m.entries = n_entries;
	m->m.private = m;

	spin_lock(&tp_lock);
	list_add_tail(&m->node, &t->maps);
	spin_unlock(&tp_lock);
	*dma_mapping = &m->m;
	return 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_dma_map_pages);

/* Find the wrapper of a mapping handed out for table t (under tp_lock). */
static struct tp_map *tp_find_map(struct tp_table *t,
				  const struct nvidia_p2p_dma_mapping *dm)
{
	struct tp_map *m;

	list_for_each_entry(m, &t->maps, node)
		if (&m->m == dm)
			return m;
	return NULL;
}

int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer,
			       struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping)
{
	struct tp_table *t;
	struct tp_map *m = NULL;

	spin_lock(&tp_lock);
	t = tp_find(page_table);
	if (t && t->state == TP_LIVE)
		m = tp_find_map(t, dma_mapping);
	if (m && m->m.pci_dev == peer)
		list_del(&m->node);
	else
		m = NULL;
	spin_unlock(&tp_lock);
	if (!m)
		return tp_bad("dma_unmap_pages of an unknown mapping");
	tp_unmap(m);
	return 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_dma_unmap_pages);

int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping)
{
	struct tp_table *t;
	bool ok = false;

	spin_lock(&tp_lock);
	list_for_each_entry(t, &tp_all, all)
		if (t->state == TP_IN_CALLBACK && tp_find_map(t, dma_mapping)) {
			ok = true;
			break;
		}
	spin_unlock(&tp_lock);
	return ok ? 0 : tp_bad("free_dma_mapping outside its free callback");
}
EXPORT_SYMBOL_GPL(nvidia_p2p_free_dma_mapping);

/* Run the callbacks of tables already marked TP_IN_CALLBACK, then free them. */
static u32 tp_run_callbacks(struct list_head *victims)
{
	struct tp_table *t, *tmp;
	u32 fired = 0;

	list_for_each_entry_safe(t, tmp, victims, fire_node) {
		bool owed;

		tp_race_delay();
		t->cb(t->data);
		atomic64_inc(&tp_callbacks);
		/* The memory goes now, whoever the table's owner turns out to be;
		 * put_pages waits while the state is TP_IN_CALLBACK.
		 */
		tp_release_memory(t);
		spin_lock(&tp_lock);
		list_del(&t->all);
		owed = !t->client_freed && !t->client_put;
		if (owed)
			t->state = TP_DEAD;
		else
			hash_del(&t->hnode);
		spin_unlock(&tp_lock);
		wake_up_all(&tp_wq);
		if (!owed)
			tp_free(t);
		fired++;
	}
	return fired;
}

/* Unlink a live table for its callback (under tp_lock). */
static void tp_mark_victim(struct tp_table *t, struct list_head *victims)
{
	lockdep_assert_held(&tp_lock);
	t->state = TP_IN_CALLBACK; /* unlinked: put_pages now defers */
	list_add_tail(&t->fire_node, victims);
}

/* What nvidia.ko does when memory under a table is freed. */
static u32 tp_fire(u64 addr, u64 len)
{
	struct tp_table *t;
	LIST_HEAD(victims);

	spin_lock(&tp_lock);
	list_for_each_entry(t, &tp_all, all) {
		if (t->state != TP_LIVE || t->persistent || t->mm != current->mm)
			continue;
		if (t->va >= addr + len || addr >= t->va + t->len)
			continue;
		tp_mark_victim(t, &victims);
	}
	spin_unlock(&tp_lock);
	return tp_run_callbacks(&victims);
}

/* fire_on_get_ms: one table's callback, fired from a work item. */
struct tp_fire_work {
	struct work_struct work;
	struct completion done;
	refcount_t ref;             /* the work item and the waiter */
	const struct nvidia_p2p_page_table *pt;
	u64 serial;
};

static void tp_fire_work_put(struct tp_fire_work *w)
{
	if (refcount_dec_and_test(&w->ref))
		kfree(w);
}

static void tp_fire_work_fn(struct work_struct *work)
{
	struct tp_fire_work *w = container_of(work, struct tp_fire_work, work);
	struct tp_table *t;
	LIST_HEAD(victims);

	spin_lock(&tp_lock);
	t = tp_find(w->pt);
	/* Gone already (the client failed and put it): nothing to fire. */
	if (t && t->serial == w->serial && t->state == TP_LIVE)
		tp_mark_victim(t, &victims);
	spin_unlock(&tp_lock);
	tp_run_callbacks(&victims);
	complete(&w->done);
	tp_fire_work_put(w);
}

static void tp_fire_soon(struct tp_table *t, unsigned int wait_ms)
{
	struct tp_fire_work *w = kzalloc(sizeof(*w), GFP_KERNEL);
	int cpu;

	if (!w)
		return;
	INIT_WORK(&w->work, tp_fire_work_fn);
	init_completion(&w->done);
	refcount_set(&w->ref, 2);
	w->pt = &t->pt;
	w->serial = t->serial;
	cpu = cpumask_next(raw_smp_processor_id(), cpu_online_mask);
	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(cpu_online_mask);
	queue_work_on(cpu, tp_fire_wq, &w->work);
	wait_for_completion_timeout(&w->done, msecs_to_jiffies(wait_ms));
	tp_fire_work_put(w);
}

static int __init tp_init(void)
{
	static const struct tp_stat extra[] = {
		{ "frees_held", &tp_frees_held },
	};
	int err;

	tp_fire_wq = alloc_workqueue("gdrhook_tp", WQ_HIGHPRI, 0);
	if (!tp_fire_wq)
		return -ENOMEM;
	err = tp_device_register(extra, ARRAY_SIZE(extra));
	if (err)
		destroy_workqueue(tp_fire_wq);
	return err;
}

static void __exit tp_exit(void)
{
	struct tp_table *t;
	struct hlist_node *n;
	int bkt;

	tp_device_unregister();
	destroy_workqueue(tp_fire_wq); /* runs what fire_on_get_ms queued */
	/* Clients hold symbol references, so none is loaded now; whatever
	 * is left was leaked by one.
	 */
	hash_for_each_safe(tp_hash, bkt, n, t, hnode) {
		pr_err("gdrhook_tp: leaked table va=%llx len=%llx\n", t->va, t->len);
		hash_del(&t->hnode);
		if (t->state != TP_DEAD)
			list_del(&t->all);
		tp_free(t);
	}
}

module_init(tp_init);
module_exit(tp_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("TEST ONLY: nvidia_p2p_* over ordinary process memory, for gdrhook's VM test");
