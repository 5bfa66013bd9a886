// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

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

    // Opens @p name; on failure returns false and sets @p error.
    bool open(const std::string &name, std::string &error)
    {
        handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle_) {
            const char *message = dlerror();
            error = message ? message : "dlopen failed";
        }
        return handle_ != nullptr;
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
