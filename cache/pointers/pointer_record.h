// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What the shim knows of one tracked allocation's pointer attributes: its
// range and the driver's answers it has seen, each with how it may be used
// (pointer_attributes.h). A plain copy, read out of the table
// (pointer_table.h) or built by its writer.
#pragma once

#include "cache/pointers/pointer_attributes.h"

#include <cstdint>
#include <cstring>

namespace gdrhook {

struct PointerRecord {
    uint64_t base = 0; // the allocation's range, as the driver names it
    uint64_t size = 0;
    uint64_t buffer_id = 0;
    uint64_t context = 0;
    uint32_t memory_type = 0;
    int32_t device_ordinal = 0;
    uint32_t is_managed = 0;
    // Bits of AnsweredAttribute: the value came from a successful
    // cuPointerGetAttribute, so both calls may answer it...
    uint8_t known_single = 0;
    // ...or from cuPointerGetAttributes, which never fails and writes 0 for
    // what the memory lacks: only that call may answer it.
    uint8_t known_many = 0;

    bool contains(uint64_t ptr) const { return ptr >= base && ptr - base < size; }

    // The value of `attribute` as the driver wrote it (the low bytes of the
    // result for a 4-byte one).
    uint64_t value(AnsweredAttribute attribute) const
    {
        switch (attribute) {
        case AnsweredAttribute::buffer_id: return buffer_id;
        case AnsweredAttribute::memory_type: return memory_type;
        case AnsweredAttribute::device_ordinal: return static_cast<uint32_t>(device_ordinal);
        case AnsweredAttribute::context: return context;
        case AnsweredAttribute::range_start: return base;
        case AnsweredAttribute::range_size: return size;
        case AnsweredAttribute::is_managed: return is_managed;
        default: return 0;
        }
    }

    // Keeps the driver's answer; false when the record cannot hold it (a
    // range other than the one the record is keyed by).
    bool keep(AnsweredAttribute attribute, uint64_t value)
    {
        switch (attribute) {
        case AnsweredAttribute::buffer_id: buffer_id = value; return true;
        case AnsweredAttribute::memory_type:
            memory_type = static_cast<uint32_t>(value);
            return true;
        case AnsweredAttribute::device_ordinal:
            device_ordinal = static_cast<int32_t>(static_cast<uint32_t>(value));
            return true;
        case AnsweredAttribute::context: context = value; return true;
        case AnsweredAttribute::range_start: return value == base;
        case AnsweredAttribute::range_size: return value == size;
        case AnsweredAttribute::is_managed: is_managed = static_cast<uint32_t>(value); return true;
        default: return false;
        }
    }
};

// The driver's result buffer for one attribute, read and written at its
// size.
inline uint64_t read_attribute(const void *data, AnsweredAttribute attribute)
{
    if (attribute_bytes(attribute) == 4) {
        uint32_t v;
        memcpy(&v, data, 4);
        return v;
    }
    uint64_t v;
    memcpy(&v, data, 8);
    return v;
}

inline void write_attribute(void *data, AnsweredAttribute attribute, uint64_t value)
{
    if (attribute_bytes(attribute) == 4) {
        const uint32_t v = static_cast<uint32_t>(value);
        memcpy(data, &v, 4);
    } else {
        memcpy(data, &value, 8);
    }
}

} // namespace gdrhook
