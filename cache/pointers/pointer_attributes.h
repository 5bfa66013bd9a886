// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The pointer attributes the shim answers from its own table, and how each
// is written: the driver's numbers (cache/base/driver_api.h's, checked
// against cuda.h in hook/driver_queries.cpp) mapped onto a bit each.
//
// An attribute is here when its value is the same for every pointer into
// an allocation and for its whole life, whichever thread asks. Not here:
// DEVICE_POINTER and HOST_POINTER (they answer "through the calling
// thread's current context"), SYNC_MEMOPS (the program may set it),
// P2P_TOKENS, MAPPED, ACCESS_FLAGS and the rest (they change with what the
// program does to the range, or are rarely asked).
#pragma once

#include "cache/base/driver_api.h"

#include <cstdint>

namespace gdrhook {

enum class AnsweredAttribute : uint8_t {
    buffer_id,
    memory_type,
    device_ordinal,
    context,
    range_start,
    range_size,
    is_managed,
    count,
};
inline constexpr int answered_attribute_count = static_cast<int>(AnsweredAttribute::count);

// The answered attribute a driver attribute number names; count for any
// other.
constexpr AnsweredAttribute answered_attribute(int attribute)
{
    switch (attribute) {
    case cuda::pointer_attribute_buffer_id: return AnsweredAttribute::buffer_id;
    case cuda::pointer_attribute_memory_type: return AnsweredAttribute::memory_type;
    case cuda::pointer_attribute_device_ordinal: return AnsweredAttribute::device_ordinal;
    case cuda::pointer_attribute_context: return AnsweredAttribute::context;
    case cuda::pointer_attribute_range_start_addr: return AnsweredAttribute::range_start;
    case cuda::pointer_attribute_range_size: return AnsweredAttribute::range_size;
    case cuda::pointer_attribute_is_managed: return AnsweredAttribute::is_managed;
    default: return AnsweredAttribute::count;
    }
}

constexpr uint8_t attribute_bit(AnsweredAttribute attribute)
{
    return static_cast<uint8_t>(1u << static_cast<int>(attribute));
}

// Bytes the driver writes for each: unsigned long long (BUFFER_ID),
// unsigned int (MEMORY_TYPE, IS_MANAGED), int (DEVICE_ORDINAL), a pointer
// (CONTEXT, RANGE_START_ADDR), size_t (RANGE_SIZE).
constexpr unsigned attribute_bytes(AnsweredAttribute attribute)
{
    switch (attribute) {
    case AnsweredAttribute::memory_type:
    case AnsweredAttribute::device_ordinal:
    case AnsweredAttribute::is_managed: return 4;
    default: return 8;
    }
}

} // namespace gdrhook
