// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Which resolution path the application's call came through. The exported
// wrappers are also handed out through dlsym, cuGetProcAddress and
// cudaGetDriverEntryPoint, each time behind a thunk that records its path
// for the duration of the call, so events can say how the program reached
// the hook.
#pragma once

#include "cache/hot_path.h"
#include "cache/clock.h"
#include "cache/event.h"

namespace gdrhook {

extern GDRHOOK_THREAD_LOCAL Via current_via_slot;

inline Via current_via()
{
    return current_via_slot;
}

class ViaScope
{
public:
    explicit ViaScope(Via via) : saved_(current_via_slot) { current_via_slot = via; }
    ~ViaScope() { current_via_slot = saved_; }
    ViaScope(const ViaScope &) = delete;
    ViaScope &operator=(const ViaScope &) = delete;

private:
    Via saved_;
};

template <typename F, F *impl, Via via>
struct ViaThunk;

template <typename R, typename... Args, R (*impl)(Args...), Via via>
struct ViaThunk<R(Args...), impl, via> {
    GDRHOOK_HOT static R call(Args... args)
    {
        ViaScope scope(via);
        return impl(args...);
    }
};

} // namespace gdrhook
