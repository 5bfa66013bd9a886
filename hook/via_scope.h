// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Which resolution path the application's call came through. The exported
// wrappers are also handed out through dlsym, cuGetProcAddress and
// cudaGetDriverEntryPoint, each time behind a thunk that records its path
// for the duration of the call, so events can say how the program reached
// the hook.
#pragma once

#include "cache/events/thread_state.h"
#include "cache/prim/hot_path.h"

namespace gdrhook {

inline Via current_via()
{
    return hot_thread_state().via;
}

class ViaScope {
public:
    explicit ViaScope(Via via) : state_(hot_thread_state()), saved_(state_.via)
    {
        state_.via = via;
    }
    ~ViaScope() { state_.via = saved_; }
    ViaScope(const ViaScope &) = delete;
    ViaScope &operator=(const ViaScope &) = delete;

private:
    HotThreadState &state_;
    Via saved_;
};

// `hot`: laid out with the hot path (is_hot_entry of the wrapped entry).
template <typename F, F *impl, Via via, bool hot> struct ViaThunk;

template <typename R, typename... Args, R (*impl)(Args...), Via via>
struct ViaThunk<R(Args...), impl, via, true> {
    GDRHOOK_HOT static R call(Args... args)
    {
        ViaScope scope(via);
        return impl(args...);
    }
};

template <typename R, typename... Args, R (*impl)(Args...), Via via>
struct ViaThunk<R(Args...), impl, via, false> {
    static R call(Args... args)
    {
        ViaScope scope(via);
        return impl(args...);
    }
};

} // namespace gdrhook
