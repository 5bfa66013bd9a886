// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/backends/pin_user_pages_backend.h"

#include <unistd.h>

namespace gdrhook {

uint64_t PinUserPagesBackend::alignment() const
{
    static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    return page;
}

bool PinUserPagesBackend::device_is_integrated(const DriverApi &driver, int device)
{
    int integrated = 0;
    return device >= 0 && driver.device_get_attribute &&
           driver.device_get_attribute(&integrated, cuda::device_attribute_integrated, device) ==
               cuda::success &&
           integrated == 1;
}

} // namespace gdrhook
