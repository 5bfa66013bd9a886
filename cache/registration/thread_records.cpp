// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/registration/thread_records.h"

#include <algorithm>
#include <new>
#include <utility>
#include <vector>

namespace gdrhook {

thread_local TlsBinding tls_bindings[tls_binding_count] __attribute__((tls_model("initial-exec")));

void release_thread_records_at_exit();

namespace {

std::atomic<uint64_t> next_serial{1};

// Live record sets by serial, so that a thread's exit can hand its records
// back to caches that still exist (a binding may outlive its cache).
struct LiveRecordSets {
    std::mutex mutex;
    std::vector<std::pair<uint64_t, ThreadRecords *>> sets;
};
LiveRecordSets &live_sets()
{
    static auto *live = new LiveRecordSets(); // never destroyed: threads exit late
    return *live;
}

struct ThreadExit {
    ~ThreadExit() { release_thread_records_at_exit(); }
};
thread_local ThreadExit thread_exit;

} // namespace

void release_thread_records_at_exit()
{
    LiveRecordSets &live = live_sets();
    std::lock_guard<std::mutex> lock(live.mutex);
    for (TlsBinding &binding : tls_bindings) {
        if (!binding.serial)
            continue;
        for (auto &[serial, records] : live.sets)
            if (serial == binding.serial)
                records->release(binding.record);
        binding = TlsBinding{0, nullptr};
    }
}

ThreadRecords::ThreadRecords() : serial_(next_serial.fetch_add(1, std::memory_order_relaxed))
{
    LiveRecordSets &live = live_sets();
    std::lock_guard<std::mutex> lock(live.mutex);
    live.sets.emplace_back(serial_, this);
}

ThreadRecords::~ThreadRecords()
{
    {
        LiveRecordSets &live = live_sets();
        std::lock_guard<std::mutex> lock(live.mutex);
        auto &s = live.sets;
        s.erase(
            std::remove_if(s.begin(), s.end(), [this](const auto &p) { return p.second == this; }),
            s.end());
    }
    for (ThreadRecord *r = head_.load(std::memory_order_relaxed); r;) {
        ThreadRecord *next = r->next;
        delete r;
        r = next;
    }
}

ThreadRecord *ThreadRecords::bind_thread()
{
    (void)&thread_exit; // odr-use: registers the exit hook for this thread
    for (int i = 1; i < tls_binding_count; ++i) {
        if (tls_bindings[i].serial == serial_) {
            std::swap(tls_bindings[0], tls_bindings[i]);
            return tls_bindings[0].record;
        }
    }
    ThreadRecord *record = nullptr;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (ThreadRecord *r = head_.load(std::memory_order_relaxed); r; r = r->next) {
            if (!r->owned) {
                record = r;
                break;
            }
        }
        if (!record) {
            record = new ThreadRecord();
            record->next = head_.load(std::memory_order_relaxed);
            // release: the reclaimer walks the list without the mutex.
            head_.store(record, std::memory_order_release);
        }
        record->owned = true;
        for (HitSlot &slot : record->slots) {
            bank_slot_hits(record, slot);
            slot.fill(Registration{}, 0); // a previous owner's copies may name freed fds
        }
    }
    // The least recently used binding makes room; its record stays owned by
    // this thread until it exits (bindings are few, caches are few).
    TlsBinding evicted = tls_bindings[tls_binding_count - 1];
    for (int i = tls_binding_count - 1; i > 0; --i)
        tls_bindings[i] = tls_bindings[i - 1];
    tls_bindings[0] = TlsBinding{serial_, record};
    if (evicted.serial) {
        LiveRecordSets &live = live_sets();
        std::lock_guard<std::mutex> lock(live.mutex);
        for (auto &[serial, records] : live.sets)
            if (serial == evicted.serial)
                records->release(evicted.record);
    }
    return record;
}

void ThreadRecords::release(ThreadRecord *record)
{
    std::lock_guard<std::mutex> lock(mutex_);
    record->owned = false;
}

void ThreadRecords::after_fork_in_child()
{
    new (&mutex_) std::mutex();
    new (&live_sets().mutex) std::mutex();
    ThreadRecord *mine = tls_bindings[0].serial == serial_ ? tls_bindings[0].record : nullptr;
    for (ThreadRecord *r = head_.load(std::memory_order_relaxed); r; r = r->next) {
        if (r == mine)
            continue;
        r->owned = false;
        r->active.store(0, std::memory_order_relaxed);
        for (auto &hold : r->holds)
            hold.store(0, std::memory_order_relaxed);
    }
}

} // namespace gdrhook
