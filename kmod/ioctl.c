// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Decoding and validating requests, then handing them to the
 * pin table. Every field of every request is checked here, before any
 * state changes; the backends may assume a well-formed request.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "gdrhook.h"
#include "host_pages.h"

/*
 * Which device a caller may name as the peer (the device that will DMA to
 * the pinned memory, and gets an IOMMU mapping for it): with CAP_SYS_RAWIO
 * any PCI device; without, only a network controller or an InfiniBand
 * controller, the devices an RDMA registration cache registers for. A
 * caller cannot make a disk controller, a GPU or a bridge reach memory.
 */
#define GDRHOOK_PCI_CLASS_INFINIBAND 0x0c06 /* serial bus: InfiniBand */

static bool gdrhook_may_name_peer(const struct pci_dev *peer)
{
	if ((peer->class >> 16) == PCI_BASE_CLASS_NETWORK ||
	    (peer->class >> 8) == GDRHOOK_PCI_CLASS_INFINIBAND)
		return true;
	return capable(CAP_SYS_RAWIO);
}

static bool gdrhook_may_get_pages(void)
{
	return gdrhook_allow_unprivileged_get_pages || capable(CAP_SYS_RAWIO);
}

static long gdrhook_ioc_get_version(struct gdrhook_file *f, void __user *arg)
{
	struct gdrhook_ioc_version v = {
		.abi_major = GDRHOOK_ABI_MAJOR,
		.abi_minor = GDRHOOK_ABI_MINOR,
		.features = gdrhook_nvp2p_features() | GDRHOOK_FEATURE_DMABUF |
			    (gdrhook_may_get_pages() ? GDRHOOK_FEATURE_GET_PAGES : 0) |
			    (gdrhook_host_pages_available() ?
			     GDRHOOK_FEATURE_HOST_PAGES : 0),
		.unpin_batch_max = GDRHOOK_UNPIN_BATCH_MAX,
		.max_handles = gdrhook_max_handles_per_file,
		.max_pinned_bytes = gdrhook_max_pinned_bytes_per_file,
	};

	return copy_to_user(arg, &v, sizeof(v)) ? -EFAULT : 0;
}

/* Check a PIN request's shape; resolves the peer device (counted ref). */
static long gdrhook_pin_validate(const struct gdrhook_ioc_pin *a,
				 struct gdrhook_pin_req_k *req,
				 const struct gdrhook_backend_ops **backend)
{
	if (a->reserved0 || a->reserved1 || (a->flags & ~GDRHOOK_PIN_FLAGS_ALL))
		return -EINVAL;
	if (a->handle || a->page_size || a->page_count)
		return -EINVAL; /* outputs must come in zeroed */
	if (a->length == 0)
		return -EINVAL;
	if (a->addr + a->length < a->addr)
		return -EOVERFLOW;

	switch (a->backend) {
	case GDRHOOK_BACKEND_NVP2P:
		if (a->dmabuf_fd != -1)
			return -EINVAL;
		if (!IS_ALIGNED(a->addr | a->length, gdrhook_nvp2p_align))
			return -EINVAL;
		/* Only the caller's own (user) address space can be pinned;
		 * the driver further checks that it is the caller's GPU memory.
		 */
		if (!access_ok(u64_to_user_ptr(a->addr), a->length))
			return -EFAULT;
		*backend = &gdrhook_backend_nvp2p;
		break;
	case GDRHOOK_BACKEND_DMABUF:
		if (a->flags & GDRHOOK_PIN_PERSISTENT)
			return -EINVAL;
		if (!(a->flags & GDRHOOK_PIN_PEER))
			return -EINVAL; /* a dma-buf is mapped for a device */
		if (a->dmabuf_fd < 0)
			return -EBADF;
		if (!PAGE_ALIGNED(a->addr) || !PAGE_ALIGNED(a->length))
			return -EINVAL;
		*backend = &gdrhook_backend_dmabuf;
		break;
	case GDRHOOK_BACKEND_HOST_PAGES:
		if (a->dmabuf_fd != -1 || (a->flags & GDRHOOK_PIN_PERSISTENT))
			return -EINVAL;
		if (!PAGE_ALIGNED(a->addr) || !PAGE_ALIGNED(a->length))
			return -EINVAL;
		if (!access_ok(u64_to_user_ptr(a->addr), a->length))
			return -EFAULT;
		*backend = &gdrhook_backend_host_pages;
		break;
	default:
		return -EINVAL;
	}

	if (a->length > gdrhook_max_pinned_bytes_per_file)
		return -ENOSPC;

	req->flags = a->flags;
	req->addr = a->addr;
	req->length = a->length;
	req->dmabuf_fd = a->dmabuf_fd;
	req->peer = NULL;
	if (a->flags & GDRHOOK_PIN_PEER) {
		req->peer = pci_get_domain_bus_and_slot(a->peer_domain,
							a->peer_bdf >> 8,
							a->peer_bdf & 0xff);
		if (!req->peer)
			return -ENODEV;
		if (!gdrhook_may_name_peer(req->peer)) {
			pci_dev_put(req->peer);
			req->peer = NULL;
			return -EPERM;
		}
	} else if (a->peer_domain || a->peer_bdf) {
		return -EINVAL;
	}
	return 0;
}

static long gdrhook_ioc_pin(struct gdrhook_file *f, void __user *arg)
{
	const struct gdrhook_backend_ops *backend = NULL;
	struct gdrhook_pin_req_k req;
	struct gdrhook_ioc_pin a;
	long err;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	err = gdrhook_pin_validate(&a, &req, &backend);
	if (err)
		return err;
	err = gdrhook_pin_create(f, backend, &req, a.user_tag, &a);
	if (req.peer)
		pci_dev_put(req.peer); /* the pin holds its own reference */
	if (err)
		return err;
	if (copy_to_user(arg, &a, sizeof(a))) {
		/* The caller cannot learn the handle: do not leak the pin. */
		gdrhook_pin_unpin(f, a.handle);
		return -EFAULT;
	}
	return 0;
}

static long gdrhook_ioc_unpin(struct gdrhook_file *f, void __user *arg)
{
	struct gdrhook_ioc_unpin a;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	return gdrhook_pin_unpin(f, a.handle);
}

static long gdrhook_ioc_unpin_batch(struct gdrhook_file *f, void __user *arg)
{
	struct gdrhook_ioc_unpin_batch a;
	long first_err = 0;
	u64 *handles;
	u32 i;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.reserved || a.unpinned || a.first_failed)
		return -EINVAL;
	if (a.count == 0)
		return -EINVAL;
	if (a.count > GDRHOOK_UNPIN_BATCH_MAX)
		return -E2BIG;

	handles = kvmalloc_array(a.count, sizeof(*handles), GFP_KERNEL_ACCOUNT);
	if (!handles)
		return -ENOMEM;
	if (copy_from_user(handles, u64_to_user_ptr(a.handles),
			   (size_t)a.count * sizeof(*handles))) {
		kvfree(handles);
		return -EFAULT;
	}
	for (i = 0; i < a.count; i++) {
		long err = gdrhook_pin_unpin(f, handles[i]);

		if (!err) {
			a.unpinned++;
		} else if (!first_err) {
			first_err = err;
			a.first_failed = i;
		}
		cond_resched();
	}
	kvfree(handles);
	if (copy_to_user(arg, &a, sizeof(a)))
		return -EFAULT;
	return first_err;
}

static u32 gdrhook_backend_uapi(const struct gdrhook_backend_ops *backend)
{
	if (backend == &gdrhook_backend_nvp2p)
		return GDRHOOK_BACKEND_NVP2P;
	if (backend == &gdrhook_backend_host_pages)
		return GDRHOOK_BACKEND_HOST_PAGES;
	return GDRHOOK_BACKEND_DMABUF;
}

static long gdrhook_ioc_query(struct gdrhook_file *f, void __user *arg)
{
	struct gdrhook_ioc_query a;
	struct gdrhook_pin *pin;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.reserved)
		return -EINVAL;
	pin = gdrhook_pin_lookup(f, a.handle);
	if (!pin)
		return -ENOENT;
	a.state = atomic_read(&pin->state) == GDRHOOK_PIN_REVOKED ?
		  GDRHOOK_STATE_REVOKED : GDRHOOK_STATE_VALID;
	a.backend = gdrhook_backend_uapi(pin->backend);
	a.flags = pin->flags;
	a.addr = pin->addr;
	a.length = pin->length;
	a.page_size = pin->page_size;
	a.page_count = pin->page_count;
	a.user_tag = pin->user_tag;
	gdrhook_pin_put(pin);
	return copy_to_user(arg, &a, sizeof(a)) ? -EFAULT : 0;
}

static long gdrhook_ioc_get_pages(struct gdrhook_file *f, void __user *arg)
{
	struct gdrhook_ioc_get_pages a;
	struct gdrhook_pin *pin;
	long err = 0;
	u32 n;

	if (!gdrhook_may_get_pages())
		return -EPERM;
	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.reserved || a.entries || a.max_entries == 0)
		return -EINVAL;
	pin = gdrhook_pin_lookup(f, a.handle);
	if (!pin)
		return -ENOENT;
	/*
	 * A process's own pages: their physical addresses are for
	 * CAP_SYS_RAWIO only, whatever allow_unprivileged_get_pages says (it
	 * is about GPU memory's bus addresses), as /proc/PID/pagemap hides
	 * them from the unprivileged.
	 */
	if (pin->backend->host_memory && !capable(CAP_SYS_RAWIO)) {
		err = -EPERM;
		goto out;
	}
	if (atomic_read(&pin->state) == GDRHOOK_PIN_REVOKED) {
		err = -ENODEV;
		goto out;
	}
	if (a.first >= pin->page_count) {
		err = -EINVAL;
		goto out;
	}
	n = min_t(u64, a.max_entries, pin->page_count - a.first);
	/* bus_addrs is ours and lives as long as the reference we hold. */
	if (copy_to_user(u64_to_user_ptr(a.addrs), pin->bus_addrs + a.first,
			 (size_t)n * sizeof(u64))) {
		err = -EFAULT;
		goto out;
	}
	a.entries = n;
	a.page_size = pin->page_size;
	a.page_count = pin->page_count;
	if (copy_to_user(arg, &a, sizeof(a)))
		err = -EFAULT;
out:
	gdrhook_pin_put(pin);
	return err;
}

static const struct {
	unsigned int cmd;  /* the full number: direction and size included */
	bool owner_only;   /* only the opener's process may issue it */
	long (*fn)(struct gdrhook_file *f, void __user *arg);
} gdrhook_ioctls[] = {
	[_IOC_NR(GDRHOOK_IOCTL_GET_VERSION)] = {
		GDRHOOK_IOCTL_GET_VERSION, false, gdrhook_ioc_get_version },
	[_IOC_NR(GDRHOOK_IOCTL_PIN)] = {
		GDRHOOK_IOCTL_PIN, true, gdrhook_ioc_pin },
	[_IOC_NR(GDRHOOK_IOCTL_UNPIN)] = {
		GDRHOOK_IOCTL_UNPIN, true, gdrhook_ioc_unpin },
	[_IOC_NR(GDRHOOK_IOCTL_UNPIN_BATCH)] = {
		GDRHOOK_IOCTL_UNPIN_BATCH, true, gdrhook_ioc_unpin_batch },
	[_IOC_NR(GDRHOOK_IOCTL_QUERY)] = {
		GDRHOOK_IOCTL_QUERY, true, gdrhook_ioc_query },
	[_IOC_NR(GDRHOOK_IOCTL_GET_PAGES)] = {
		GDRHOOK_IOCTL_GET_PAGES, true, gdrhook_ioc_get_pages },
};

long gdrhook_user_errno(long err)
{
	/* The restart codes mean something to the syscall exit path when
	 * a signal is pending, and only then.
	 */
	if (signal_pending(current) &&
	    (err == -ERESTARTSYS || err == -ERESTARTNOINTR ||
	     err == -ERESTARTNOHAND || err == -ERESTART_RESTARTBLOCK))
		return err;
	if (err >= -EHWPOISON) /* 0, or an errno user space knows */
		return err;
	/* Kernel-internal: NVIDIA answers -ENOTSUPP for "not supported". */
	return err == -ENOTSUPP ? -EOPNOTSUPP : -EIO;
}

long gdrhook_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct gdrhook_file *f = filp->private_data;
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != GDRHOOK_IOCTL_MAGIC ||
	    nr >= ARRAY_SIZE(gdrhook_ioctls) || !gdrhook_ioctls[nr].fn)
		return -ENOTTY;
	/* Same command, other size or direction: a truncated or foreign
	 * structure, never read.
	 */
	if (cmd != gdrhook_ioctls[nr].cmd)
		return -EINVAL;
	if (gdrhook_ioctls[nr].owner_only && current->mm != f->mm)
		return -EPERM;
	return gdrhook_user_errno(gdrhook_ioctls[nr].fn(f, (void __user *)arg));
}
