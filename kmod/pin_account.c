// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * What a pin costs its opener: the one place every long-term pin is
 * charged and uncharged (kmod/README.md, "What a pin is charged").
 *
 * Two charges, both to the file's opener (whose credentials the file
 * keeps), never to whoever issues PIN later (a process that changes uid
 * after open does not get a fresh allowance):
 *  - the per-user cap (user_quota.c) on every pin, GPU memory included;
 *  - for host memory (pages of the process, pinned long-term), the
 *    process's locked memory: mm->pinned_vm, against RLIMIT_MEMLOCK, as
 *    the RDMA core and VFIO charge their long-term pins, with the same
 *    answer past the limit (ENOMEM) and the same exemption (CAP_IPC_LOCK,
 *    here the opener's, decided at open). GPU memory pinned through nv-p2p
 *    or a dma-buf is not the process's pages and is not charged there.
 * A pin is charged once and uncharged once, by its owner: on UNPIN,
 * close() (process exit included) or a failed PIN; a revocation (MMU
 * notifier, driver callback) leaves the pages pinned until then, and so
 * the charge.
 */
#include <linux/mm.h>
#include <linux/mm_types.h>
#include <linux/sched/signal.h>

#include "gdrhook.h"

/* Adds pages to the opener's pinned_vm, or nothing past RLIMIT_MEMLOCK. */
static int gdrhook_memlock_charge(struct gdrhook_file *f, u64 pages)
{
	u64 limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 pinned;

	if (f->ipc_lock_exempt)
		return 0;
	pinned = atomic64_add_return(pages, &f->mm->pinned_vm);
	if (pinned > 0 && (u64)pinned <= limit)
		return 0;
	atomic64_sub(pages, &f->mm->pinned_vm);
	return -ENOMEM;
}

int gdrhook_pin_charge(struct gdrhook_pin *pin, u64 pages)
{
	struct gdrhook_file *f = pin->file;
	int err;

	if (WARN_ON_ONCE(pin->charged_pages || pin->memlock_pages))
		return -EINVAL;
	if (pin->backend->host_memory) {
		err = gdrhook_memlock_charge(f, pages);
		if (err)
			return err;
		if (!f->ipc_lock_exempt)
			pin->memlock_pages = pages;
	}
	err = gdrhook_quota_charge(f->opener_uid, pages);
	if (err) {
		gdrhook_pin_uncharge(pin);
		return err;
	}
	pin->charged_pages = pages;
	return 0;
}

void gdrhook_pin_uncharge(struct gdrhook_pin *pin)
{
	struct gdrhook_file *f = pin->file;

	/* The mm_struct is grabbed by the file: still there after exit. */
	if (pin->memlock_pages)
		atomic64_sub(pin->memlock_pages, &f->mm->pinned_vm);
	pin->memlock_pages = 0;
	gdrhook_quota_uncharge(f->opener_uid, pin->charged_pages);
	pin->charged_pages = 0;
}
