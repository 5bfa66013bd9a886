// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Pinning the caller's own pages with pin_user_pages (the
 * path for integrated GPUs: on Jetson Thor, and on Orin from CUDA 13.0,
 * the memory a NIC reaches is cuMemHostAlloc/cudaHostAlloc/
 * cuMemHostRegister memory, ordinary pages of the process, and nv-p2p is
 * gone or deprecated).
 *
 * A pin holds: a long-term pin on every page of the range (FOLL_LONGTERM,
 * so the pages are not migrated away under the peer's DMA), an sg table
 * of them, mapped with dma_map_sgtable() for the peer when PIN names one,
 * and an MMU interval notifier on the range.
 *
 * The notifier is how the pin learns that the memory went away without
 * an UNPIN: munmap (MMU_NOTIFY_UNMAP), a zap such as
 * madvise(MADV_DONTNEED) (MMU_NOTIFY_CLEAR) and the end of the address
 * space (MMU_NOTIFY_RELEASE: exit, exec). It then revokes the pin (state
 * REVOKED, one GDRHOOK_EVENT_REVOKED_HOST event), like a dma-buf
 * move_notify, and does no more: the pages and the mapping stay the
 * owner's until its UNPIN or close(). Unpinning from the notifier would
 * hand the pages back to the allocator while the peer may still DMA to
 * them; held, they belong to nobody else, and a revocation never races
 * the teardown. Other invalidations (mprotect, NUMA hinting, a failed
 * migration) leave the pages where they are and do not revoke. Reclaim
 * trying a pinned page reports MMU_NOTIFY_CLEAR too, so a revocation may
 * be spurious: the cache then pins again, which costs a pin and is never
 * wrong.
 *
 * Pinning faults the pages in for writing, and breaking copy-on-write
 * (a page still shared after fork, the zero page of untouched memory)
 * invalidates the range with MMU_NOTIFY_CLEAR: our own pin would revoke
 * itself. So the notifier is not armed until the pages are pinned:
 * PIN inserts it, pins between mmu_interval_read_begin() and
 * mmu_interval_read_retry(), pins again if an invalidation came in
 * between, and arms it under the lock the notifier takes. From then on
 * every invalidation of the range is seen.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "compat.h"
#include "gdrhook.h"
#include "host_pages.h"

#ifdef CONFIG_MMU_NOTIFIER

/* Pinning attempts an invalidation may spoil before PIN gives up (EAGAIN). */
#define GDRHOOK_HOST_PIN_ATTEMPTS 8

struct gdrhook_host_pages {
	struct mmu_interval_notifier notifier;
	bool notifier_inserted;
	/*
	 * Taken by the notifier around mmu_interval_set_seq() and by PIN
	 * around mmu_interval_read_retry() and setting armed: the pairing the
	 * interval notifier API asks for.
	 */
	spinlock_t lock;
	bool armed;       /* the pages are pinned: invalidations revoke */
	u32 pin_id;       /* what the notifier hands gdrhook_callback_begin() */
	struct page **pages;
	unsigned long nr_pinned;
	struct sg_table sgt;
	bool sgt_allocated;
	bool dma_mapped;  /* sgt mapped for pin->peer */
};

/* The invalidations after which the range no longer holds these pages. */
static bool gdrhook_host_memory_gone(const struct mmu_notifier_range *range)
{
	return range->event == MMU_NOTIFY_UNMAP ||
	       range->event == MMU_NOTIFY_CLEAR ||
	       range->event == MMU_NOTIFY_RELEASE;
}

/*
 * Never sleeps (the callback may be told it must not): a spinlock, an SRCU
 * read section and the event ring's spinlock.
 */
static bool gdrhook_host_invalidate(struct mmu_interval_notifier *mni,
				    const struct mmu_notifier_range *range,
				    unsigned long cur_seq)
{
	struct gdrhook_host_pages *hp =
		container_of(mni, struct gdrhook_host_pages, notifier);
	struct gdrhook_pin *pin;
	bool armed;
	int srcu_idx;

	spin_lock(&hp->lock);
	mmu_interval_set_seq(mni, cur_seq);
	armed = hp->armed;
	spin_unlock(&hp->lock);
	/* Not armed: PIN is still pinning and sees the new sequence. */
	if (!armed || !gdrhook_host_memory_gone(range))
		return true;

	pin = gdrhook_callback_begin(hp->pin_id, &srcu_idx);
	/* Only marked: the pages are released by the pin's owner. */
	if (pin)
		gdrhook_pin_revoke(pin, GDRHOOK_EVENT_REVOKED_HOST);
	gdrhook_callback_end(pin, srcu_idx);
	return true;
}

static const struct mmu_interval_notifier_ops gdrhook_host_notifier_ops = {
	.invalidate = gdrhook_host_invalidate,
};

static void gdrhook_host_unpin_pages(struct gdrhook_host_pages *hp)
{
	/* The peer may have written to them. */
	unpin_user_pages_dirty_lock(hp->pages, hp->nr_pinned, true);
	hp->nr_pinned = 0;
}

/* Long-term pins on every page of the range, or none. */
static int gdrhook_host_pin_pages(struct gdrhook_host_pages *hp, u64 addr,
				  unsigned long nr_pages)
{
	while (hp->nr_pinned < nr_pages) {
		int got = pin_user_pages_fast(addr + hp->nr_pinned * PAGE_SIZE,
					      min_t(unsigned long, INT_MAX,
						    nr_pages - hp->nr_pinned),
					      FOLL_WRITE | FOLL_LONGTERM,
					      hp->pages + hp->nr_pinned);

		if (got <= 0) {
			gdrhook_host_unpin_pages(hp);
			return got ? got : -EFAULT;
		}
		hp->nr_pinned += got;
	}
	return 0;
}

/*
 * Whether a mapping's pages may be pinned long-term for writing. Not the
 * page cache of a file written back through a shared mapping: the file
 * system tracks the pages' dirtiness by write-protecting them
 * (page_mkwrite) and may write them back or truncate them while the peer
 * still writes, which is why the kernel refuses such pins itself from 6.5;
 * refused here on every kernel (6.1 would pin them). Nor file system DAX,
 * refused by the kernel on every version. Anonymous memory, a private
 * mapping (pinning for writing makes the pages the process's own copies)
 * and shared memory (shmem has no page_mkwrite) are pinned.
 */
static bool gdrhook_vma_pinnable(struct vm_area_struct *vma)
{
	const struct vm_operations_struct *ops = vma->vm_ops;

	if (vma_is_fsdax(vma))
		return false;
	if (!vma->vm_file || !(vma->vm_flags & VM_SHARED))
		return true;
	return !(ops && (ops->page_mkwrite || ops->pfn_mkwrite));
}

/* Every page of the range is mapped, by mappings that may be pinned. */
static int gdrhook_host_range_pinnable(u64 addr, unsigned long nr_pages)
{
	struct mm_struct *mm = current->mm;
	u64 end = addr + nr_pages * PAGE_SIZE;
	int err = 0;

	mmap_read_lock(mm);
	while (addr < end) {
		struct vm_area_struct *vma = find_vma(mm, addr);

		if (!vma || vma->vm_start > addr) {
			err = -EFAULT;
			break;
		}
		if (!gdrhook_vma_pinnable(vma)) {
			err = -EOPNOTSUPP;
			break;
		}
		addr = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return err;
}

/*
 * Pins the pages with no invalidation between the start and the arming of
 * the notifier, retrying a few times when one came. The mappings are
 * checked inside that window: one replaced after the check unmaps the old
 * one first, an invalidation, and the pin is made again.
 */
static int gdrhook_host_pin_stable(struct gdrhook_host_pages *hp, u64 addr,
				   unsigned long nr_pages)
{
	int attempt;

	for (attempt = 0; attempt < GDRHOOK_HOST_PIN_ATTEMPTS; attempt++) {
		unsigned long seq = mmu_interval_read_begin(&hp->notifier);
		bool spoiled;
		int err;

		err = gdrhook_host_range_pinnable(addr, nr_pages);
		if (!err)
			err = gdrhook_host_pin_pages(hp, addr, nr_pages);
		if (err)
			return err;
		spin_lock(&hp->lock);
		spoiled = mmu_interval_read_retry(&hp->notifier, seq);
		if (!spoiled)
			hp->armed = true;
		spin_unlock(&hp->lock);
		if (!spoiled)
			return 0;
		gdrhook_host_unpin_pages(hp);
		cond_resched();
	}
	return -EAGAIN;
}

/* What GET_PAGES reports: DMA addresses for the peer, else physical. */
static int gdrhook_host_collect(struct gdrhook_pin *pin)
{
	struct gdrhook_host_pages *hp = pin->hp;
	struct sg_dma_page_iter it;
	u64 i = 0;

	pin->bus_addrs = kvmalloc_array(pin->page_count, sizeof(u64),
					GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!pin->bus_addrs)
		return -ENOMEM;
	if (!hp->dma_mapped) {
		for (i = 0; i < pin->page_count; i++)
			pin->bus_addrs[i] = page_to_phys(hp->pages[i]);
		return 0;
	}
	gdrhook_for_each_sgtable_dma_page(&hp->sgt, &it, 0) {
		if (i == pin->page_count)
			break;
		pin->bus_addrs[i++] = sg_page_iter_dma_address(&it);
	}
	return i == pin->page_count ? 0 : -EIO;
}

static int gdrhook_host_map(struct gdrhook_pin *pin)
{
	struct gdrhook_host_pages *hp = pin->hp;
	int err;

	err = sg_alloc_table_from_pages(&hp->sgt, hp->pages, hp->nr_pinned, 0,
					pin->length, GFP_KERNEL_ACCOUNT);
	if (err)
		return err;
	hp->sgt_allocated = true;
	if (!pin->peer)
		return 0;
	err = dma_map_sgtable(&pin->peer->dev, &hp->sgt, DMA_BIDIRECTIONAL, 0);
	if (err)
		return err;
	hp->dma_mapped = true;
	return 0;
}

static int gdrhook_host_pin(struct gdrhook_pin *pin,
			    const struct gdrhook_pin_req_k *req)
{
	unsigned long nr_pages = req->length >> PAGE_SHIFT;
	struct gdrhook_host_pages *hp;
	int err;

	hp = kzalloc(sizeof(*hp), GFP_KERNEL_ACCOUNT);
	if (!hp)
		return -ENOMEM;
	spin_lock_init(&hp->lock);
	hp->pin_id = pin->id;
	pin->hp = hp;
	pin->page_size = PAGE_SIZE;
	pin->page_count = nr_pages;
	pin->pinned_bytes = req->length;

	hp->pages = kvmalloc_array(nr_pages, sizeof(*hp->pages),
				   GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!hp->pages)
		return -ENOMEM;
	/* On failure what was got stays in the pin, for release(). */
	err = mmu_interval_notifier_insert(&hp->notifier, current->mm,
					   req->addr, req->length,
					   &gdrhook_host_notifier_ops);
	if (err)
		return err;
	hp->notifier_inserted = true;
	err = gdrhook_host_pin_stable(hp, req->addr, nr_pages);
	if (err)
		return err;
	err = gdrhook_host_map(pin);
	if (err)
		return err;
	return gdrhook_host_collect(pin);
}

static void gdrhook_host_release(struct gdrhook_pin *pin, bool revoked)
{
	struct gdrhook_host_pages *hp = pin->hp;

	/* Revoked or not, the pages and the mapping are still ours. */
	if (!hp)
		return;
	/* First, and it waits out a running invalidate: none comes after. */
	if (hp->notifier_inserted)
		mmu_interval_notifier_remove(&hp->notifier);
	if (hp->dma_mapped)
		dma_unmap_sgtable(&pin->peer->dev, &hp->sgt, DMA_BIDIRECTIONAL,
				  0);
	if (hp->sgt_allocated)
		sg_free_table(&hp->sgt);
	if (hp->nr_pinned)
		gdrhook_host_unpin_pages(hp);
	kvfree(hp->pages);
	kfree(hp);
	pin->hp = NULL;
}

bool gdrhook_host_pages_available(void)
{
	return true;
}

#else /* !CONFIG_MMU_NOTIFIER: a pin could not learn of munmap */

static int gdrhook_host_pin(struct gdrhook_pin *pin,
			    const struct gdrhook_pin_req_k *req)
{
	return -EOPNOTSUPP;
}

static void gdrhook_host_release(struct gdrhook_pin *pin, bool revoked)
{
}

bool gdrhook_host_pages_available(void)
{
	return false;
}

#endif

const struct gdrhook_backend_ops gdrhook_backend_host_pages = {
	.name = "pin_user_pages",
	.host_memory = true,
	.pin = gdrhook_host_pin,
	.release = gdrhook_host_release,
};
