// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * What a pin costs its opener: the one place every long-term pin is
 * charged and uncharged (kmod/README.md, "Locked memory").
 *
 * Two charges, both to the file's opener (whose credentials the file
 * keeps), never to whoever issues PIN later (a process that changes uid
 * after open does not get a fresh allowance):
 *  - the per-user cap (user_quota.c) on every pin, GPU memory included;
 *  - for host memory (pages of the process, pinned long-term), locked
 *    memory against RLIMIT_MEMLOCK, charged to the opener's user
 *    (user->locked_vm), as io_uring and MSG_ZEROCOPY charge theirs: the
 *    pins live as long as the file, which outlives the opener when the
 *    fd is inherited or passed, so a charge to the process would go with
 *    it and every child could pin a full limit again for one holder.
 *    The answer past the limit is ENOMEM, the RDMA core's, and the
 *    opener's CAP_IPC_LOCK (decided at open) exempts it from both the
 *    charge and its uncharge. GPU memory pinned through nv-p2p or a
 *    dma-buf is not the process's pages and is not charged there.
 * The opener's mm->pinned_vm (VmPin in /proc/PID/status) is given the same
 * pages, only to show them: it is never compared to the limit, and the
 * file keeps the mm_struct (mmgrab), so the uncharge always finds it.
 * A pin is charged once and uncharged once, by its file: on UNPIN,
 * close() of the last fd (whichever process holds it) or a failed PIN; a
 * revocation (MMU notifier, driver callback) leaves the pages pinned until
 * then, and so the charge.
 */
#include <linux/mm.h>
#include <linux/mm_types.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>

#include "compat.h"
#include "gdrhook.h"

/*
 * Adds pages to the opener's user's locked_vm, or nothing when that would
 * pass the caller's RLIMIT_MEMLOCK (the caller is the opener: PIN is the
 * opener's only).
 */
static int gdrhook_memlock_charge(struct gdrhook_file *f, u64 pages)
{
	u64 limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	atomic_long_t *locked = &f->user->locked_vm;
	long cur = atomic_long_read(locked);

	do {
		/* Unsigned: a count some other charger drove negative refuses. */
		if (pages > limit || (unsigned long)cur > limit - pages)
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(locked, &cur, cur + (long)pages));
	atomic64_add(pages, &f->mm->pinned_vm);
	return 0;
}

static void gdrhook_memlock_uncharge(struct gdrhook_file *f, u64 pages)
{
	atomic_long_sub(pages, &f->user->locked_vm);
	atomic64_sub(pages, &f->mm->pinned_vm);
}

int gdrhook_pin_charge(struct gdrhook_pin *pin, u64 pages)
{
	struct gdrhook_file *f = pin->file;
	int err;

	if (WARN_ON_ONCE(pin->charged_pages || pin->memlock_pages))
		return -EINVAL;
	if (pin->backend->host_memory && !f->ipc_lock_exempt) {
		err = gdrhook_memlock_charge(f, pages);
		if (err)
			return err;
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

	if (pin->memlock_pages)
		gdrhook_memlock_uncharge(f, pin->memlock_pages);
	pin->memlock_pages = 0;
	gdrhook_quota_uncharge(f->opener_uid, pin->charged_pages);
	pin->charged_pages = 0;
}
