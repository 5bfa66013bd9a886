// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Device addresses of host memory (cuMemHostGetDevicePointer,
// cudaHostGetDevicePointer) where the driver gives an address other than
// the host one for the same bytes. On an integrated GPU that memory is what
// a NIC reaches, and a library may ask gdrhook_get() for either address;
// the registration is the host range's (the backend pins host pages), so
// the public API turns a device address into the host one before the
// lookup. Where both are the same (unified addressing, every current
// driver) nothing is recorded and a lookup pays one relaxed load.
#pragma once

#include <cstdint>

namespace gdrhook {

// The driver answered device_addr for host_addr (any byte of a host
// allocation): the whole allocation's device range is recorded.
void note_device_alias(uint64_t device_addr, uint64_t host_addr);

// The host allocation at host_addr is being freed or unregistered: its
// device range means nothing from now on.
void forget_device_aliases(uint64_t host_addr);

// addr in a recorded device range: true, with the host address of the
// same byte.
bool host_address_of(uint64_t addr, uint64_t &host_addr);

} // namespace gdrhook
