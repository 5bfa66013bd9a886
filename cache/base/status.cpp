// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/base/status.h"

namespace gdrhook {

const char *to_string(StatusCode code)
{
    switch (code) {
    case StatusCode::ok: return "ok";
    case StatusCode::no_device: return "no_device";
    case StatusCode::no_space: return "no_space";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::managed: return "managed";
    case StatusCode::invalid: return "invalid";
    case StatusCode::driver_error: return "driver_error";
    case StatusCode::io_error: return "io_error";
    case StatusCode::not_found: return "not_found";
    case StatusCode::no_descriptors: return "no_descriptors";
    }
    return "?";
}

} // namespace gdrhook
