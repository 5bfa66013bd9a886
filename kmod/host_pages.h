/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The pin_user_pages backend (host_pages.c): the caller's
 * own pages, pinned long-term, for integrated GPUs.
 */
#ifndef GDRHOOK_HOST_PAGES_H
#define GDRHOOK_HOST_PAGES_H

#include <linux/types.h>

struct gdrhook_backend_ops;

extern const struct gdrhook_backend_ops gdrhook_backend_host_pages;

/* Whether this kernel lets the backend pin (it needs MMU notifiers). */
bool gdrhook_host_pages_available(void);

#endif /* GDRHOOK_HOST_PAGES_H */
