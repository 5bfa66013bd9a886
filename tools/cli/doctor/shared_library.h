// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include "cache/base/result.h"

#include <dlfcn.h>

#include <string>
#include <utility>

namespace gdrhook::cli {

// A library opened with dlopen, closed when this goes. The doctor opens
// the driver libraries this way instead of linking them, so the tool
// runs (and says what is missing) on machines without them.
class SharedLibrary {
public:
    SharedLibrary() = default;
    SharedLibrary(SharedLibrary &&other) noexcept : handle_(std::exchange(other.handle_, nullptr))
    {}
    SharedLibrary &operator=(SharedLibrary &&other) noexcept
    {
        std::swap(handle_, other.handle_);
        return *this;
    }
    SharedLibrary(const SharedLibrary &) = delete;
    SharedLibrary &operator=(const SharedLibrary &) = delete;
    ~SharedLibrary()
    {
        if (handle_)
            dlclose(handle_);
    }

    // Opens @p name; why() is the loader's message where it cannot.
    Result<void> open(const std::string &name)
    {
        handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle_)
            return {};
        const char *message = dlerror();
        return Result<void>::failure(Status::error(StatusCode::not_found, 0, "dlopen failed"),
                                     message ? message : "dlopen failed");
    }

    // The function @p name as type F, or nullptr.
    template <typename F> F function(const char *name) const
    {
        return handle_ ? reinterpret_cast<F>(dlsym(handle_, name)) : nullptr;
    }

    // The file the library was loaded from, as the loader resolved it.
    std::string path(const char *any_symbol) const
    {
        Dl_info info;
        void *address = handle_ ? dlsym(handle_, any_symbol) : nullptr;
        if (address && dladdr(address, &info) && info.dli_fname)
            return info.dli_fname;
        return {};
    }

private:
    void *handle_ = nullptr;
};

} // namespace gdrhook::cli
