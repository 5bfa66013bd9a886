// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/backends/dmabuf_backend.h"

#include "cache/backends/peer_setup.h"
#include "cache/base/capture.h"
#include "cache/base/descriptor_room.h"
#include "cache/base/diagnostics.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace gdrhook {

namespace {

bool is_host_memory(const DriverApi &driver, uint64_t addr)
{
    unsigned int type = 0;
    return driver.pointer_get_attribute &&
           driver.pointer_get_attribute(&type, cuda::pointer_attribute_memory_type, addr) ==
               cuda::success &&
           type == cuda::memorytype_host;
}

// True when the process has no descriptor number left below its limit.
bool descriptors_exhausted()
{
    const int saved_errno = errno;
    const int probe = eventfd(0, EFD_CLOEXEC);
    const bool exhausted = probe < 0 && errno == EMFILE;
    if (probe >= 0)
        close(probe);
    errno = saved_errno;
    return exhausted;
}

// The export's descriptor takes the lowest free number, as any open does.
// A program holding every number below its limit makes it fail: then
// once more with room above the limit (descriptor_room.h). Only then: the
// room raises the process's limit for as long as it lives, which the
// program's own threads would see.
int export_dma_buf(const DriverApi &driver, uint64_t addr, uint64_t length, int *fd)
{
    int rc = driver.mem_get_handle_for_address_range(fd, addr, length,
                                                     cuda::mem_range_handle_type_dma_buf_fd, 0);
    if (rc != cuda::success && descriptors_exhausted()) {
        DescriptorRoom room;
        *fd = -1;
        rc = driver.mem_get_handle_for_address_range(fd, addr, length,
                                                     cuda::mem_range_handle_type_dma_buf_fd, 0);
    }
    return rc;
}

} // namespace

Status DmabufBackend::pin(uint64_t addr, uint64_t length, Pin &out)
{
    if (!driver_.mem_get_handle_for_address_range)
        return Status::error(StatusCode::no_device, 0,
                             "cuMemGetHandleForAddressRange is not available");
    if (driver_.pointer_get_attribute) {
        unsigned int managed = 0;
        if (driver_.pointer_get_attribute(&managed, cuda::pointer_attribute_is_managed, addr) ==
                cuda::success &&
            managed)
            return Status::error(StatusCode::managed, 0, "managed memory is never pinned");
    }
    // SYNC_MEMOPS is a call a stream capture prohibits: made now it would
    // fail and invalidate the application's capture (base/capture.h).
    if (capture_in_progress())
        return Status::error(StatusCode::unsupported, 0,
                             "a stream capture is in progress: nothing is pinned");
    // Host memory has no SYNC_MEMOPS. A pin on the shim's own initiative
    // leaves the program's memory as the program set it: the first library
    // that asks for the pin sets it (prepare_for_peer).
    if (Status status = set_up_or_defer(driver_, addr, !is_host_memory(driver_, addr), out);
        !status.ok())
        return status;
    int fd = -1;
    int rc = export_dma_buf(driver_, addr, length, &fd);
    if (rc == cuda::error_out_of_memory)
        return Status::error(StatusCode::no_space, rc,
                             "cuMemGetHandleForAddressRange: out of memory");
    if (rc == cuda::error_invalid_value)
        return Status::error(StatusCode::invalid, rc,
                             "cuMemGetHandleForAddressRange: not an allocated range");
    if (rc != cuda::success || fd < 0)
        return Status::error(StatusCode::driver_error, rc, "cuMemGetHandleForAddressRange failed");
    // A program the application execs must not inherit the export: the fd
    // would keep the freed GPU memory allocated for as long as it runs.
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    // Moved out of the numbers the program's own opens take (above its
    // limit where there is room: its opens and its select() stay as
    // without the shim), and which file it is
    // remembered now (one fcntl and one fstat on the miss path): the unpin
    // closes it only if the program has not closed it first.
    out.fd = OwnedFd::adopt(UniqueFd(fd), true);
    out.handle = 0;
    return Status::success();
}

Status DmabufBackend::prepare_for_peer(uint64_t addr)
{
    return set_up_for_peer(driver_, addr);
}

Status DmabufBackend::unpin(Pin *pins, size_t count)
{
    Status first;
    for (size_t i = 0; i < count; ++i) {
        int error = pins[i].fd.reset();
        if (error == EBADF) {
            // The program closed it (closefrom): that released the pin,
            // and the number may be one of its files now.
            if (!said_closed_by_program_.exchange(true, std::memory_order_relaxed)) {
                diagnostics().warn(
                    "the program closed the descriptor of a dma-buf pin; the pin was "
                    "released then and its number is left to the program");
            }
            continue;
        }
        if (error && first.ok())
            first = Status::error(StatusCode::io_error, error, "close() of a dma-buf fd failed");
    }
    return first;
}

bool DmabufBackend::pins_host_memory(int device) const
{
    int supported = 0;
    return device >= 0 && driver_.device_get_attribute &&
           driver_.device_get_attribute(&supported,
                                        cuda::device_attribute_host_alloc_dma_buf_supported,
                                        device) == cuda::success &&
           supported == 1;
}

bool DmabufBackend::device_supports(const DriverApi &driver, int device)
{
    int supported = 0;
    return driver.device_get_attribute && driver.mem_get_handle_for_address_range &&
           driver.device_get_attribute(&supported, cuda::device_attribute_dma_buf_supported,
                                       device) == cuda::success &&
           supported == 1;
}

} // namespace gdrhook
