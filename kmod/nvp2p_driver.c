// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Holding the NVIDIA driver's nvidia_p2p_* symbols, for whichever flavour
 * of the API was built (nvp2p.h).
 *
 * The functions are resolved with symbol_get(), not linked, so gdrhook.ko
 * loads (and offers dma-buf alone) where the driver is absent. They are
 * held only while some nv-p2p pin exists: the first pin resolves them, the
 * last one to go puts them back, so the driver can be unloaded (a driver
 * upgrade, a reset) whenever no nv-p2p pin is held, and is picked up
 * again if it is loaded after gdrhook.ko.
 */
#include <linux/bug.h>
#include <linux/mutex.h>

#include "gdrhook.h"
#include "nv_p2p_common_abi.h"
#include "nvp2p.h"

/*
 * Pins that hold the symbols, under nv_lock. While it is not 0 the
 * flavour's pointers are set and stay set, so the pins' code (and their
 * callbacks) read them without the lock.
 */
static unsigned int nv_users;
static DEFINE_MUTEX(nv_lock);

bool gdrhook_nvp2p_use(struct gdrhook_pin *pin)
{
	mutex_lock(&nv_lock);
	pin->nv.holds_driver = gdrhook_nvp2p_flavour_resolve();
	if (pin->nv.holds_driver)
		nv_users++;
	mutex_unlock(&nv_lock);
	return pin->nv.holds_driver;
}

void gdrhook_nvp2p_unuse(struct gdrhook_pin *pin)
{
	if (!pin->nv.holds_driver)
		return;
	pin->nv.holds_driver = false;
	mutex_lock(&nv_lock);
	if (!WARN_ON_ONCE(!nv_users) && !--nv_users)
		gdrhook_nvp2p_flavour_put_all();
	mutex_unlock(&nv_lock);
}

u32 gdrhook_nvp2p_features(void)
{
	u32 features = 0;

	/* Resolved for the answer, and let go again if no pin holds it. */
	mutex_lock(&nv_lock);
	if (gdrhook_nvp2p_flavour_resolve())
		features = gdrhook_nvp2p_flavour_features();
	if (!nv_users)
		gdrhook_nvp2p_flavour_put_all();
	mutex_unlock(&nv_lock);
	return features;
}

void gdrhook_nvp2p_exit(void)
{
	/* No file is open, so no pin holds the driver. */
	WARN_ON(nv_users);
}

u64 gdrhook_nvp2p_page_bytes(u32 type)
{
	switch (type) {
	case NVIDIA_P2P_PAGE_SIZE_4KB:
		return 4096;
	case NVIDIA_P2P_PAGE_SIZE_64KB:
		return 64 * 1024;
	case NVIDIA_P2P_PAGE_SIZE_128KB:
		return 128 * 1024;
	default:
		return 0;
	}
}
