// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// Test doubles for the registration cache: a simulated address space (what
// is allocated where, with the buffer ID the driver would report) and a pin
// backend over it that refuses ranges that are not allocated, can run out
// of space, and records every pin and unpin so that checkers can catch a
// double unpin or an unpin of a held registration.
#pragma once

#include "cache/backends/pin_backend.h"
#include "cache/events/event_clock.h"
#include "cache/registration/registration_cache.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace gdrhook::testing {

class FakeMemory {
public:
    struct Block {
        uint64_t size = 0;
        uint64_t buffer_id = 0;
        bool managed = false;
    };

    uint64_t allocate(uint64_t base, uint64_t size, bool managed = false)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        uint64_t id = next_id_++;
        blocks_[base] = Block{size, id, managed};
        return id;
    }
    void free(uint64_t base)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        blocks_.erase(base);
    }
    // Whether [addr, addr + len) lies inside one live allocation.
    bool covers(uint64_t addr, uint64_t len) const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = containing(addr);
        return it != blocks_.end() && addr + len <= it->first + it->second.size;
    }
    bool allocation_of(uint64_t addr, AllocationInfo &out) const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = containing(addr);
        if (it == blocks_.end())
            return false;
        out = AllocationInfo{it->first, it->second.size, it->second.managed};
        return true;
    }
    uint64_t buffer_id(uint64_t addr) const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = containing(addr);
        return it == blocks_.end() ? 0 : it->second.buffer_id;
    }

    // Options wired to this memory: the cache widens to allocations and
    // records buffer IDs.
    CacheOptions options()
    {
        CacheOptions options;
        options.allocation_of = [this](uint64_t addr, AllocationInfo &out) {
            return allocation_of(addr, out);
        };
        options.buffer_id = [this](uint64_t addr) { return buffer_id(addr); };
        return options;
    }

private:
    std::map<uint64_t, Block>::const_iterator containing(uint64_t addr) const
    {
        auto it = blocks_.upper_bound(addr);
        if (it == blocks_.begin())
            return blocks_.end();
        --it;
        return addr < it->first + it->second.size ? it : blocks_.end();
    }

    mutable std::mutex mutex_;
    std::map<uint64_t, Block> blocks_;
    uint64_t next_id_ = 1;
};

// Shared with the test after the cache takes ownership of the backend.
struct FakeBackendState {
    std::mutex mutex;
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> live; // handle -> (addr, len)
    uint64_t next_handle = 1;
    uint64_t used_bytes = 0;
    uint64_t capacity = 0; // 0: unlimited
    std::atomic<uint64_t> pins{0};
    size_t most_live = 0; // the most pins alive at once (under mutex)
    std::atomic<uint64_t> unpin_calls{0};
    std::atomic<uint64_t> unpins{0};
    std::atomic<uint64_t> bad_unpins{0};  // unknown or already unpinned handle
    std::atomic<uint64_t> peer_setups{0}; // prepare_for_peer() calls
    std::atomic<int> pin_delay_us{0};
    // The slow mode of unpin(): each call takes this long, between the
    // times it records as it begins and as it ends (the event clock's
    // queued form, event_clock.h).
    std::atomic<int> unpin_delay_us{0};
    std::atomic<uint64_t> last_unpin_began{0}, last_unpin_ended{0};
    // Called inside pin(), before it succeeds (to race an invalidation).
    std::function<void(uint64_t addr, uint64_t len)> during_pin;
    // Called for every handle unpinned; a checker returns false on a
    // violation (an unpin of a registration the test still holds).
    std::function<bool(uint64_t handle)> unpin_allowed;
    std::atomic<uint64_t> forbidden_unpins{0};

    bool is_live(uint64_t handle)
    {
        std::lock_guard<std::mutex> lock(mutex);
        return live.count(handle) != 0;
    }
    size_t live_count()
    {
        std::lock_guard<std::mutex> lock(mutex);
        return live.size();
    }
};

class FakeBackend final : public PinBackend {
public:
    FakeBackend(std::shared_ptr<FakeBackendState> state, FakeMemory *memory)
        : state_(std::move(state)), memory_(memory)
    {}

    BackendKind kind() const override { return BackendKind::kmod; }
    const char *name() const override { return "fake"; }
    uint64_t alignment() const override { return 4096; }

    Status pin(uint64_t addr, uint64_t len, Pin &out) override
    {
        if (int us = state_->pin_delay_us.load())
            std::this_thread::sleep_for(std::chrono::microseconds(us));
        if (state_->during_pin)
            state_->during_pin(addr, len);
        if (memory_ && !memory_->covers(addr, len))
            return Status::error(StatusCode::invalid, 1, "fake: not allocated");
        std::lock_guard<std::mutex> lock(state_->mutex);
        if (state_->capacity && state_->used_bytes + len > state_->capacity)
            return Status::error(StatusCode::no_space, 2, "fake: out of BAR space");
        uint64_t handle = state_->next_handle++;
        state_->live[handle] = {addr, len};
        state_->most_live = std::max(state_->most_live, state_->live.size());
        state_->used_bytes += len;
        state_->pins++;
        out.handle = handle;
        out.peer_setup_deferred = pinning_on_own_initiative; // as the GPU backends
        return Status::success();
    }

    Status prepare_for_peer(uint64_t) override
    {
        state_->peer_setups++;
        return Status::success();
    }

    Status unpin(Pin *pins, size_t count) override
    {
        state_->last_unpin_began = queued_time_now();
        if (int us = state_->unpin_delay_us.load())
            std::this_thread::sleep_for(std::chrono::microseconds(us));
        unpin_now(pins, count);
        state_->last_unpin_ended = queued_time_now();
        return Status::success();
    }

private:
    void unpin_now(Pin *pins, size_t count)
    {
        state_->unpin_calls++;
        for (size_t i = 0; i < count; ++i) {
            uint64_t handle = pins[i].handle;
            pins[i].handle = 0;
            if (state_->unpin_allowed && !state_->unpin_allowed(handle))
                state_->forbidden_unpins++;
            std::lock_guard<std::mutex> lock(state_->mutex);
            auto it = state_->live.find(handle);
            if (it == state_->live.end()) {
                state_->bad_unpins++;
                continue;
            }
            state_->used_bytes -= it->second.second;
            state_->live.erase(it);
            state_->unpins++;
        }
    }

    std::shared_ptr<FakeBackendState> state_;
    FakeMemory *memory_;
};

// Runs until the counters say the threads did enough work, so that a
// loaded machine (sanitizers, CI) still exercises every interleaving it can,
// within a time cap.
template <typename Done> void run_until(Done done, std::atomic<bool> &stop)
{
    auto start = std::chrono::steady_clock::now();
    while (!done() && std::chrono::steady_clock::now() - start < std::chrono::seconds(30))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop = true;
}

// A stress run: `lookers` and `freers` threads (each given its own seed)
// and a worker that drains the cache, until done() or the time cap.
template <typename Fixture, typename Looker, typename Freer, typename Done>
void run_stress(Fixture &f, Looker looker, int lookers, Freer freer, int freers, Done done)
{
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < lookers; ++t)
        threads.emplace_back(looker, std::ref(stop), 100u + t);
    for (int t = 0; t < freers; ++t)
        threads.emplace_back(freer, std::ref(stop), 200u + t);
    threads.emplace_back([&] {
        while (!stop.load(std::memory_order_relaxed)) {
            f.drain();
            std::this_thread::yield();
        }
    });
    run_until(done, stop);
    for (auto &t : threads)
        t.join();
}

// A cache over fake memory with a fake backend, for one test.
struct Fixture {
    FakeMemory memory;
    std::shared_ptr<FakeBackendState> backend = std::make_shared<FakeBackendState>();
    std::unique_ptr<RegistrationCache> cache;

    explicit Fixture(std::function<void(CacheOptions &)> tune = nullptr)
    {
        CacheOptions options = memory.options();
        if (tune)
            tune(options);
        cache = std::make_unique<RegistrationCache>(std::make_unique<FakeBackend>(backend, &memory),
                                                    std::move(options));
    }

    size_t drain() { return cache->drain_unpins(nullptr); }
};

inline constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

} // namespace gdrhook::testing
