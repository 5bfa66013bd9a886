// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// libbistro_patcher.so: a stand-in for UCX's CUDA memory hooks in bistro
// mode. Linked with libcuda, it asks dlsym on its own handle for
// driver functions and writes a jump to a spy of its own over the first
// bytes of each answer, as bistro does: mprotect, then a 14-byte absolute
// jmp (BISTRO_JUMP=5: a 5-byte relative one); on aarch64 a 16-byte
// absolute branch through x16 (BISTRO_JUMP=5: a 4-byte relative B). Each spy counts its call,
// drops a freed address from a small registration cache of its own (what
// UCX's rcache does on UCM_EVENT_MEM_TYPE_FREE) and forwards to the code it
// patched: it writes the saved bytes back, calls them and patches again.
// Bistro relocates the saved instructions instead; for the single-threaded
// programs that use this library the effect is the same.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <sys/mman.h>
#include <tuple>
#include <type_traits>
#include <unistd.h>

// (symbol, frees: its first argument is the address it frees)
#define BISTRO_PATCHED(X)                                                                          \
    X(cuMemFree, true)                                                                             \
    X(cuMemFree_v2, true)                                                                          \
    X(cuMemFreeAsync, true)                                                                        \
    X(cuMemFreeHost, true)                                                                         \
    X(cuMemUnmap, true)                                                                            \
    X(cuMemRelease, false)                                                                         \
    X(cuMemAddressFree, true)                                                                      \
    X(cuMemAlloc, false)                                                                           \
    X(cuMemAlloc_v2, false)                                                                        \
    X(cuMemAllocAsync, false)                                                                      \
    X(cuMemAllocHost_v2, false)                                                                    \
    X(cuMemCreate, false)                                                                          \
    X(cuMemMap, false)

namespace {

enum class Patched : int {
#define BISTRO_ID(symbol, frees) symbol,
    BISTRO_PATCHED(BISTRO_ID)
#undef BISTRO_ID
        count
};

constexpr size_t max_jump = 16;

struct Patch {
    const char *symbol;
    unsigned char *target = nullptr;    // what dlsym answered
    unsigned char saved[max_jump] = {}; // the bytes the jump covers
    unsigned char jump[max_jump] = {};
    size_t length = 0;
    std::atomic<long> calls{0};
};

Patch patches[] = {
#define BISTRO_ROW(symbol, frees) {#symbol},
    BISTRO_PATCHED(BISTRO_ROW)
#undef BISTRO_ROW
};

// The registration cache: address -> the buffer id registered for it.
std::map<CUdeviceptr, unsigned long long> registered;

void forget(uint64_t address)
{
    registered.erase(static_cast<CUdeviceptr>(address));
}

template <typename T> uint64_t as_address(T value)
{
    if constexpr (std::is_pointer_v<T>)
        return reinterpret_cast<uint64_t>(value);
    else
        return static_cast<uint64_t>(value);
}

bool write_code(unsigned char *at, const unsigned char *code, size_t length)
{
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t start = reinterpret_cast<uintptr_t>(at) & ~(page - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(at) + length + page - 1) & ~(page - 1);
    void *first = reinterpret_cast<void *>(start);
    if (mprotect(first, end - start, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return false;
    memcpy(at, code, length);
    __builtin___clear_cache(reinterpret_cast<char *>(at), reinterpret_cast<char *>(at + length));
    return mprotect(first, end - start, PROT_READ | PROT_EXEC) == 0;
}

#if defined(__x86_64__)
// The jump from `from` to `to` in `out`; its length, or 0 out of reach.
size_t encode_jump(const unsigned char *from, void *to, bool relative, unsigned char *out)
{
    if (relative) {
        const intptr_t distance =
            reinterpret_cast<intptr_t>(to) - reinterpret_cast<intptr_t>(from + 5);
        const int32_t rel32 = static_cast<int32_t>(distance);
        if (rel32 != distance)
            return 0;  // out of reach of a 5-byte jump
        out[0] = 0xe9; // jmp rel32
        memcpy(out + 1, &rel32, sizeof(rel32));
        return 5;
    }
    out[0] = 0xff; // jmp *0(%rip), the address right after it
    out[1] = 0x25;
    memset(out + 2, 0, 4);
    memcpy(out + 6, &to, sizeof(to));
    return 14;
}
#elif defined(__aarch64__)
size_t encode_jump(const unsigned char *from, void *to, bool relative, unsigned char *out)
{
    if (relative) {
        const intptr_t distance = reinterpret_cast<intptr_t>(to) - reinterpret_cast<intptr_t>(from);
        if (distance < -(intptr_t{1} << 27) || distance >= (intptr_t{1} << 27))
            return 0; // out of reach of B (+-128 MiB)
        const uint32_t b = 0x14000000u | ((static_cast<uint32_t>(distance) >> 2) & 0x3ffffffu);
        memcpy(out, &b, sizeof b);
        return 4;
    }
    const uint32_t code[2] = {0x58000050u,  // ldr x16, .+8: the address after the br
                              0xd61f0200u}; // br x16
    memcpy(out, code, sizeof code);
    memcpy(out + sizeof code, &to, sizeof(to));
    return 16;
}
#else
#error "the bistro stand-in writes x86-64 and aarch64 jumps"
#endif

bool patch(Patch &p, void *spy, bool relative)
{
    p.length = encode_jump(p.target, spy, relative, p.jump);
    if (!p.length)
        return false;
    memcpy(p.saved, p.target, p.length);
    return write_code(p.target, p.jump, p.length);
}

template <Patched id, bool frees, typename F> struct Spy;

template <Patched id, bool frees, typename... Args> struct Spy<id, frees, CUresult(Args...)> {
    static CUresult call(Args... args)
    {
        Patch &p = patches[static_cast<int>(id)];
        p.calls.fetch_add(1);
        if constexpr (frees)
            forget(as_address(std::get<0>(std::make_tuple(args...))));
        if (!write_code(p.target, p.saved, p.length))
            abort();
        CUresult rc = reinterpret_cast<CUresult (*)(Args...)>(p.target)(args...);
        if (!write_code(p.target, p.jump, p.length))
            abort();
        return rc;
    }
};

void *const spies[] = {
#define BISTRO_SPY(symbol, frees)                                                                  \
    reinterpret_cast<void *>(&Spy<Patched::symbol, frees, decltype(::symbol)>::call),
    BISTRO_PATCHED(BISTRO_SPY)
#undef BISTRO_SPY
};

} // namespace

extern "C" {

// Patches every function of the list; returns how many, or -1 (with a
// message) if one could not be found or patched.
__attribute__((visibility("default"))) int bistro_install(void)
{
    Dl_info self{};
    if (!dladdr(reinterpret_cast<void *>(&bistro_install), &self))
        return -1;
    void *own = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (!own) {
        fprintf(stderr, "bistro: no handle of %s\n", self.dli_fname);
        return -1;
    }
    const char *jump = getenv("BISTRO_JUMP");
    const bool relative = jump && strcmp(jump, "5") == 0;
    int installed = 0;
    for (int i = 0; i < static_cast<int>(Patched::count); ++i) {
        Patch &p = patches[i];
        p.target = static_cast<unsigned char *>(dlsym(own, p.symbol));
        if (!p.target || !patch(p, spies[i], relative)) {
            fprintf(stderr, "bistro: cannot patch %s\n", p.symbol);
            return -1;
        }
        ++installed;
    }
    dlclose(own);
    return installed;
}

__attribute__((visibility("default"))) int bistro_symbol_count(void)
{
    return static_cast<int>(Patched::count);
}

__attribute__((visibility("default"))) const char *bistro_symbol(int i)
{
    return i >= 0 && i < static_cast<int>(Patched::count) ? patches[i].symbol : nullptr;
}

// How many calls the spy of `symbol` saw (-1: not patched).
__attribute__((visibility("default"))) long bistro_calls(const char *symbol)
{
    for (const Patch &p : patches)
        if (strcmp(p.symbol, symbol) == 0)
            return p.calls.load();
    return -1;
}

// The cache's lookup: the buffer id registered for `address`, registered
// now (the driver's current id) on a miss.
__attribute__((visibility("default"))) unsigned long long bistro_lookup(CUdeviceptr address)
{
    auto it = registered.find(address);
    if (it != registered.end())
        return it->second;
    unsigned long long id = 0;
    if (cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, address) != CUDA_SUCCESS)
        return 0;
    registered[address] = id;
    return id;
}

} // extern "C"
