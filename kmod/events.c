// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * The per-file queue of revocations user space did not ask for.
 *
 * Producers are callbacks (the NVIDIA free callback, dma-buf move_notify),
 * which may run in any process and must not block, so the queue is a fixed
 * ring under a spinlock: posting never allocates and never sleeps. When the
 * ring is full the event is counted, not queued, and the reader gets one
 * GDRHOOK_EVENT_OVERFLOW record telling it to QUERY what it holds: losing
 * detail is acceptable, losing the fact that something was lost is not.
 */
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "gdrhook.h"

int gdrhook_events_init(struct gdrhook_events *ev, u32 cap)
{
	spin_lock_init(&ev->lock);
	init_waitqueue_head(&ev->wait);
	ev->cap = clamp_t(u32, cap, 16, 65536);
	ev->ring = kvcalloc(ev->cap, sizeof(*ev->ring), GFP_KERNEL_ACCOUNT);
	ev->head = 0;
	ev->count = 0;
	ev->dropped = 0;
	return ev->ring ? 0 : -ENOMEM;
}

void gdrhook_events_free(struct gdrhook_events *ev)
{
	kvfree(ev->ring);
	ev->ring = NULL;
}

void gdrhook_events_post(struct gdrhook_events *ev,
			 const struct gdrhook_event *e)
{
	spin_lock(&ev->lock);
	if (ev->count < ev->cap) {
		ev->ring[(ev->head + ev->count) % ev->cap] = *e;
		ev->count++;
	} else {
		ev->dropped++;
		atomic64_inc(&gdrhook_stats.events_dropped);
	}
	spin_unlock(&ev->lock);
	wake_up_interruptible(&ev->wait);
}

static bool gdrhook_events_pending(struct gdrhook_events *ev)
{
	return READ_ONCE(ev->count) != 0 || READ_ONCE(ev->dropped) != 0;
}

/* Take one record off the ring (an OVERFLOW report comes first). */
static bool gdrhook_events_pop(struct gdrhook_events *ev,
			       struct gdrhook_event *out)
{
	bool got = true;

	spin_lock(&ev->lock);
	if (ev->dropped) {
		memset(out, 0, sizeof(*out));
		out->type = GDRHOOK_EVENT_OVERFLOW;
		out->addr = ev->dropped;
		ev->dropped = 0;
	} else if (ev->count) {
		*out = ev->ring[ev->head];
		ev->head = (ev->head + 1) % ev->cap;
		ev->count--;
	} else {
		got = false;
	}
	spin_unlock(&ev->lock);
	return got;
}

ssize_t gdrhook_events_read(struct gdrhook_events *ev, char __user *buf,
			    size_t len, bool nonblock)
{
	size_t done = 0;

	if (len < sizeof(struct gdrhook_event))
		return -EINVAL;

	while (done == 0) {
		if (!gdrhook_events_pending(ev)) {
			int err;

			if (nonblock)
				return -EAGAIN;
			err = wait_event_interruptible(ev->wait,
						       gdrhook_events_pending(ev));
			if (err)
				return err;
		}
		/* Whole records only; copy outside the spinlock. */
		while (len - done >= sizeof(struct gdrhook_event)) {
			struct gdrhook_event e;

			if (!gdrhook_events_pop(ev, &e))
				break;
			if (copy_to_user(buf + done, &e, sizeof(e))) {
				/* The record is lost to this reader; say so. */
				spin_lock(&ev->lock);
				ev->dropped++;
				spin_unlock(&ev->lock);
				return done ? done : -EFAULT;
			}
			done += sizeof(e);
		}
	}
	return done;
}

__poll_t gdrhook_events_poll(struct gdrhook_events *ev, struct file *filp,
			     struct poll_table_struct *pt)
{
	poll_wait(filp, &ev->wait, pt);
	return gdrhook_events_pending(ev) ? (EPOLLIN | EPOLLRDNORM) : 0;
}
