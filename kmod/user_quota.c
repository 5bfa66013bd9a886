// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * The per-user cap on pinned pages.
 *
 * Every pin is charged, once the backend has pinned, with the pages it
 * actually holds pinned (pin_table.c decides how many), to the file's
 * opener (pin_account.c); the charge goes when the pin is destroyed. The cap
 * (max_pinned_pages_per_user) is across every open file of that user, so
 * opening more files, or pinning the same memory again, does not get
 * around it. Users are kept in a small hash table, one entry per user
 * holding pins, freed when its count falls back to 0.
 */
#include <linux/hashtable.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uidgid.h>

#include "gdrhook.h"

struct gdrhook_user {
	struct hlist_node node;
	kuid_t uid;
	u64 pages;
};

static DEFINE_SPINLOCK(gdrhook_users_lock);
static DEFINE_HASHTABLE(gdrhook_users, 6);

static struct gdrhook_user *gdrhook_user_find(kuid_t uid)
{
	struct gdrhook_user *u;

	lockdep_assert_held(&gdrhook_users_lock);
	hash_for_each_possible(gdrhook_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

int gdrhook_quota_charge(kuid_t uid, u64 pages)
{
	struct gdrhook_user *spare, *u;
	u64 cap = READ_ONCE(gdrhook_max_pinned_pages_per_user);
	int err = 0;

	/* Allocated before the lock, in case this user holds nothing yet. */
	spare = kzalloc(sizeof(*spare), GFP_KERNEL_ACCOUNT);
	if (!spare)
		return -ENOMEM;
	spin_lock(&gdrhook_users_lock);
	u = gdrhook_user_find(uid);
	if (!u && pages <= cap) {
		u = spare;
		spare = NULL;
		u->uid = uid;
		hash_add(gdrhook_users, &u->node, __kuid_val(uid));
	}
	if (!u || pages > cap - min(u->pages, cap))
		err = -ENOSPC;
	else
		u->pages += pages;
	spin_unlock(&gdrhook_users_lock);
	kfree(spare);
	return err;
}

void gdrhook_quota_uncharge(kuid_t uid, u64 pages)
{
	struct gdrhook_user *u, *gone = NULL;

	if (!pages)
		return;
	spin_lock(&gdrhook_users_lock);
	u = gdrhook_user_find(uid);
	if (!WARN_ON_ONCE(!u || u->pages < pages)) {
		u->pages -= pages;
		if (!u->pages) {
			hash_del(&u->node);
			gone = u;
		}
	}
	spin_unlock(&gdrhook_users_lock);
	kfree(gone);
}

void gdrhook_quota_exit(void)
{
	/* Every pin is gone before the module can be, and each took its charge. */
	WARN_ON(!hash_empty(gdrhook_users));
}
