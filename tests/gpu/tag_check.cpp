// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// The registration cache of NVIDIA's GPUDirect RDMA guide ("Buffer ID Tag
// Check for A Registration Cache"), written the way the guide writes it:
// a cache keyed by address whose entries keep the buffer ID the driver
// gave when the buffer was registered; before each use of an entry,
// cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_BUFFER_ID) and a compare, and
// a re-registration where the ID changed. Run plain and under gdrhook, it
// gives the per-use cost of the tag check with each.
//
//   tag_check [ROUNDS]
//
// For each pattern (hot: 64 buffers; random: all 4096), the median per-use
// time over ROUNDS timed passes of 2^20 uses each (per_use_ns=), and the
// same passes with the cache's lookup but no tag check (cache_only_ns=):
// the per-use time includes the cache's own hash lookup, which the shim
// cannot change, so the tag check's own cost is the difference (check_ns=,
// the two passes taking turns so that a drift falls on both); then a
// pass where a quarter of the buffers are freed and allocated again (the
// driver hands the same addresses back) between two uses of each: every
// reused buffer must fail its tag check once (missed_reuses=0), and no
// other buffer may (false_mismatches=0).
#include "driver_program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <unordered_map>
#include <vector>

namespace {

constexpr int buffer_count = 4096;
constexpr size_t buffer_size = 64 * 1024;
constexpr size_t uses_per_pass = size_t(1) << 20;

// The guide's cache entry: the registration (here only counted) and the
// buffer ID it was made for.
struct Entry {
    unsigned long long buffer_id;
    unsigned registrations;
};

std::unordered_map<CUdeviceptr, Entry> cache;

// Before each use: the tag check. Returns whether the entry had to be
// registered again.
bool use(CUdeviceptr p)
{
    unsigned long long id = 0;
    CHECK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    Entry &entry = cache[p];
    if (entry.buffer_id == id)
        return false;
    entry.buffer_id = id; // re-register: the memory behind p changed
    ++entry.registrations;
    return true;
}

// The same use without the tag check: the cache's lookup and a read of the
// entry, what a use costs where nothing asks the driver.
bool use_unchecked(CUdeviceptr p)
{
    return cache[p].registrations == 0;
}

template <typename Use> double per_use_ns(const std::vector<CUdeviceptr> &order, Use &&one_use)
{
    size_t mismatches = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < uses_per_pass; ++i)
        mismatches += one_use(order[i & (order.size() - 1)]);
    auto t1 = std::chrono::steady_clock::now();
    if (mismatches)
        std::printf("unexpected_mismatches=%zu\n", mismatches);
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / uses_per_pass;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Per pattern: the median of each kind of pass, and the median of the
// differences of the passes run side by side.
void measure(const char *name, const std::vector<CUdeviceptr> &order, int rounds)
{
    std::vector<double> checked, unchecked, check;
    for (int r = 0; r < rounds; ++r) {
        checked.push_back(per_use_ns(order, use));
        unchecked.push_back(per_use_ns(order, use_unchecked));
        check.push_back(checked.back() - unchecked.back());
    }
    std::printf("pattern=%s per_use_ns=%.2f cache_only_ns=%.2f check_ns=%.2f\n", name,
                median(checked), median(unchecked), median(check));
}

std::vector<CUdeviceptr> order_of(const std::vector<CUdeviceptr> &buffers, size_t count)
{
    std::mt19937_64 rng(42);
    std::vector<CUdeviceptr> order(size_t(1) << 16);
    for (CUdeviceptr &p : order)
        p = buffers[(rng() % count) * buffers.size() / count];
    return order;
}

} // namespace

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
    use_primary_context();
    std::vector<CUdeviceptr> buffers(buffer_count);
    for (CUdeviceptr &p : buffers) {
        CHECK(cuMemAlloc(&p, buffer_size));
        use(p); // registered on first use
    }
    for (auto [name, count] : {std::pair<const char *, size_t>{"hot", 64},
                               std::pair<const char *, size_t>{"random", buffer_count}})
        measure(name, order_of(buffers, count), rounds);

    // Reuse: free a quarter, allocate as many again (same size: the driver
    // returns the same addresses), then use every buffer twice.
    std::vector<CUdeviceptr> reused;
    for (int i = 0; i < buffer_count; i += 4) {
        CHECK(cuMemFree(buffers[i]));
        reused.push_back(buffers[i]);
    }
    size_t same_address = 0;
    for (int i = 0; i < buffer_count; i += 4) {
        CUdeviceptr p = 0;
        CHECK(cuMemAlloc(&p, buffer_size));
        same_address += cache.count(p) != 0;
        buffers[i] = p;
    }
    size_t missed = 0, false_mismatches = 0;
    for (int i = 0; i < buffer_count; ++i) {
        const bool new_memory = i % 4 == 0; // at its old address or a new one
        const bool first = use(buffers[i]);
        const bool second = use(buffers[i]);
        if (new_memory && !first)
            ++missed;
        if ((!new_memory && first) || second)
            ++false_mismatches;
    }
    std::printf("reallocated=%zu same_address=%zu missed_reuses=%zu false_mismatches=%zu\n",
                reused.size(), same_address, missed, false_mismatches);
    for (CUdeviceptr p : buffers)
        CHECK(cuMemFree(p));
    return missed || false_mismatches ? 1 : 0;
}
