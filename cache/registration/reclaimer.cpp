// SPDX-License-Identifier: MIT OR GPL-2.0-only
#include "cache/registration/reclaimer.h"

#include "cache/base/clock.h"
#include "cache/events/event_clock.h"
#include "cache/prim/asymmetric_fence.h"
#include "cache/prim/hot_path.h"
#include "cache/prim/profile.h"

#include <algorithm>
#include <new>
#include <utility>

namespace gdrhook {
namespace {

std::atomic<uint64_t> next_claim{1};

} // namespace

uint64_t this_threads_claim()
{
    static GDRHOOK_THREAD_LOCAL uint64_t mine = 0;
    if (GDRHOOK_UNLIKELY(mine == 0))
        mine = next_claim.fetch_add(1, std::memory_order_relaxed);
    return mine;
}

Reclaimer::Reclaimer(PinBackend &backend, PublishedState &published, const ThreadRecords &records,
                     CacheWriter &writer)
    : backend_(backend), published_(published), records_(records), writer_(writer)
{}

void Reclaimer::reclaim()
{
    reclaim_on(this_threads_claim(), false);
}

void Reclaimer::reclaim_on(uint64_t claim, bool worker)
{
    TakenPins taken;
    uint64_t rounds_before_us;
    bool others_releasing;
    {
        ProfileTimer waited(ProfilePart::reclaim_lock_wait);
        std::lock_guard<SpinThenSleepMutex> lock(mu_);
        waited.stop();
        take_round(taken, claim);
        // Every shared round begun so far may hold what this call's
        // caller retired unclaimed: it returns once they all are released.
        // What it claimed is in its own round or still held.
        rounds_before_us = rounds_started_;
        others_releasing = rounds_releasing_.size() > (taken.shared ? 1 : 0);
    }
    if (!taken.pins.empty())
        release(taken, worker);
    if (others_releasing)
        wait_for_releases_up_to(rounds_before_us);
}

// mu_ held. A free unpins on its own thread (unpin_retired()): the
// worker's drain after it finds nothing to unpin. What the entries and the
// index's old blocks occupy waits for the worker (free_unreachable()).
void Reclaimer::take_round(TakenPins &taken, uint64_t claim)
{
    ProfileTimer round(ProfilePart::reclaim_round);
    writer_.take_retired(considered_, nodes_waiting_);
    if (std::all_of(considered_.begin(), considered_.end(),
                    [](const CacheEntry *e) { return e->unpinned; })) {
        round.discard();
        note_memory_waiting();
        return;
    }
    // After the fence the scan sees every hold published before it (get()
    // and put() fence as well), and a put() after it sees pending_held.
    published_.pending_held.store(1, std::memory_order_seq_cst);
    hold_fence();
    take_pins(take_unheld(scan_holds(), claim, taken.shared), taken);
    note_memory_waiting();
    if (taken.pins.empty())
        return;
    if (!taken.shared) {
        ++own_rounds_releasing_;
        return;
    }
    taken.round = ++rounds_started_;
    rounds_releasing_.push_back(taken.round);
}

// mu_ held: the batch's pins leave their entries, with what their unpin
// events will say.
void Reclaimer::take_pins(const std::vector<CacheEntry *> &batch, TakenPins &taken)
{
    taken.pins.reserve(batch.size());
    taken.records.reserve(batch.size());
    taken.retired_ns.reserve(batch.size());
    for (CacheEntry *e : batch) {
        taken.pins.push_back(std::move(e->pin));
        UnpinRecord record;
        record.entry_id = e->range.id;
        record.addr = e->range.start;
        record.length = e->range.end - e->range.start;
        record.handle = e->range.handle;
        record.fd = e->range.fd;
        record.reason = e->reason;
        taken.records.push_back(record);
        taken.retired_ns.push_back(e->retired_ns);
        taken.bytes += record.length;
    }
}

// mu_ held. Only unpinned entries count: one still held is not memory
// free_unreachable() could take.
void Reclaimer::note_memory_waiting()
{
    const auto unpinned = std::count_if(considered_.begin(), considered_.end(),
                                        [](const CacheEntry *e) { return e->unpinned; });
    unfreed_.store(static_cast<size_t>(unpinned) + nodes_waiting_.size(),
                   std::memory_order_relaxed);
}

// The entry ids in every thread's hold slots, sorted.
std::vector<uint64_t> Reclaimer::scan_holds() const
{
    std::vector<uint64_t> held;
    records_.for_each([&held](const ThreadRecord &r) {
        for (auto &hold : r.holds)
            if (uint64_t id = hold.load(std::memory_order_acquire))
                held.push_back(id);
    });
    std::sort(held.begin(), held.end());
    return held;
}

// The epoch of the oldest read section open now (UINT64_MAX: none).
uint64_t Reclaimer::oldest_read_section() const
{
    uint64_t oldest = UINT64_MAX;
    records_.for_each([&oldest](const ThreadRecord &r) {
        if (uint64_t active = r.active.load(std::memory_order_acquire))
            oldest = std::min(oldest, active);
    });
    return oldest;
}

// Whether the entry is another thread's free's to release: that thread's
// reclaim follows its retirement.
bool Reclaimer::claimed_by_another(const CacheEntry *e, uint64_t claim) const
{
    return e->claimed_by != 0 && e->claimed_by != claim && e->claimed_by >= claims_from_;
}

// The entries to unpin now: taken, not yet unpinned, held by nobody, and
// claimed by no other thread. `shared`: one of them is not the caller's.
std::vector<CacheEntry *> Reclaimer::take_unheld(const std::vector<uint64_t> &held, uint64_t claim,
                                                 bool &shared)
{
    std::vector<CacheEntry *> batch;
    bool still_held = false;
    for (CacheEntry *e : considered_) {
        if (e->unpinned || claimed_by_another(e, claim))
            continue;
        if (std::binary_search(held.begin(), held.end(), e->range.id) ||
            e->refs.load(std::memory_order_acquire) != 0) {
            still_held = true;
            deferred_.fetch_add(1, std::memory_order_relaxed);
            // Its free is done: whoever reclaims after its put() releases it.
            e->claimed_by = 0;
            continue;
        }
        e->unpinned = true;
        shared |= claim == 0 || e->claimed_by != claim;
        batch.push_back(e);
    }
    if (!still_held)
        published_.pending_held.store(0, std::memory_order_relaxed);
    return batch;
}

// One backend call for the round's batch, outside the lock: several
// threads' releases run at once. Each unpin then waits in reports_ for
// drain(), and the round leaves rounds_releasing_.
void Reclaimer::release(TakenPins &taken, bool worker)
{
    // The unpin happened now, not when the worker writes its line.
    const uint64_t started = queued_time_now();
    Status status;
    {
        ProfileTimer released(ProfilePart::release);
        status = backend_.unpin(taken.pins.data(), taken.pins.size());
    }
    const uint64_t now = monotonic_ns();
    for (size_t i = 0; i < taken.records.size(); ++i) {
        UnpinRecord &record = taken.records[i];
        const uint64_t retired_ns = taken.retired_ns[i];
        record.lat_ns = now > retired_ns ? now - retired_ns : 0;
        record.started = started;
        record.status = status;
        if (profiling())
            profile_add(worker ? ProfilePart::unpin_latency_by_worker : ProfilePart::unpin_latency,
                        record.lat_ns);
    }
    // Counted before the round ends: a caller that waits for it sees the
    // pins gone from pinned_now() too.
    writer_.count_unpins(taken.records.size(), taken.bytes);
    if (!status.ok())
        unpin_failures_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard<SpinThenSleepMutex> lock(mu_);
        reports_.insert(reports_.end(), taken.records.begin(), taken.records.end());
        reports_waiting_.store(true, std::memory_order_release);
        if (!taken.shared) {
            --own_rounds_releasing_;
            if (!fork_waiting_)
                return; // nobody waits for it
        } else {
            rounds_releasing_.erase(
                std::find(rounds_releasing_.begin(), rounds_releasing_.end(), taken.round));
        }
    }
    released_.notify_all();
}

// Returns once every round numbered up to `round` has released its pins:
// an entry the caller retired may be in another thread's round.
void Reclaimer::wait_for_releases_up_to(uint64_t round)
{
    std::unique_lock<SpinThenSleepMutex> lock(mu_);
    auto done = [&] {
        return std::none_of(rounds_releasing_.begin(), rounds_releasing_.end(),
                            [round](uint64_t r) { return r <= round; });
    };
    if (done())
        return;
    ProfileTimer waited(ProfilePart::release_wait_in_flight);
    released_.wait(lock, done);
}

// Frees the unpinned entries and the index's old blocks that no read
// section can still reach: those tagged before the oldest section open
// after the epoch moved. The one round that needs heavy_fence(), a system
// call that interrupts every running thread of the process: the worker's,
// and outside mu_, so that a free's round never waits behind it.
void Reclaimer::free_unreachable()
{
    std::vector<CacheEntry *> entries;
    std::vector<RetiredNode> nodes;
    {
        std::lock_guard<SpinThenSleepMutex> lock(mu_);
        auto pinned = std::partition(considered_.begin(), considered_.end(),
                                     [](const CacheEntry *e) { return !e->unpinned; });
        entries.assign(pinned, considered_.end());
        considered_.erase(pinned, considered_.end());
        nodes.swap(nodes_waiting_);
    }
    if (entries.empty() && nodes.empty())
        return;
    ProfileTimer round(ProfilePart::reclaim_memory);
    // Everything taken carries a tag at most the epoch before this bump;
    // after the fence the scan sees every read section begun before it,
    // and readers that start later see the retirements.
    published_.epoch.fetch_add(1, std::memory_order_seq_cst);
    heavy_fence();
    const uint64_t oldest = oldest_read_section();
    auto reachable = [oldest](uint64_t tag) { return tag >= oldest; };
    auto keep = std::remove_if(entries.begin(), entries.end(), [&](CacheEntry *e) {
        if (reachable(e->tag))
            return false;
        delete e;
        return true;
    });
    entries.erase(keep, entries.end());
    auto keep_nodes = std::remove_if(nodes.begin(), nodes.end(), [&](const RetiredNode &node) {
        if (reachable(node.second))
            return false;
        index_free_block(node.first);
        return true;
    });
    nodes.erase(keep_nodes, nodes.end());
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    considered_.insert(considered_.end(), entries.begin(), entries.end());
    nodes_waiting_.insert(nodes_waiting_.end(), nodes.begin(), nodes.end());
    note_memory_waiting();
}

size_t Reclaimer::drain(const std::function<void(const UnpinRecord &)> &report)
{
    reclaim_on(0, true);
    if (memory_waiting())
        free_unreachable();
    return this->report(report);
}

size_t Reclaimer::report(const std::function<void(const UnpinRecord &)> &report)
{
    if (!reports_waiting_.load(std::memory_order_acquire))
        return 0;
    std::vector<UnpinRecord> done;
    {
        std::lock_guard<SpinThenSleepMutex> lock(mu_);
        done.swap(reports_);
        reports_waiting_.store(false, std::memory_order_relaxed);
    }
    if (report)
        for (const UnpinRecord &record : done)
            report(record);
    const size_t reported = done.size();
    // The vector goes back, its capacity with it: the worker reports each
    // free's unpin as it comes, and a free should not allocate a vector
    // for its report each time.
    done.clear();
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    if (reports_.empty())
        reports_.swap(done);
    return reported;
}

bool Reclaimer::has_unreported() const
{
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    return !reports_.empty() || !rounds_releasing_.empty() || own_rounds_releasing_ != 0 ||
           std::any_of(considered_.begin(), considered_.end(),
                       [](const CacheEntry *e) { return !e->unpinned; });
}

void Reclaimer::release_all(std::vector<CacheEntry *> all)
{
    writer_.take_retired(considered_, nodes_waiting_);
    all.insert(all.end(), considered_.begin(), considered_.end());
    considered_.clear();
    std::vector<Pin> pins;
    for (CacheEntry *entry : all)
        if (!entry->unpinned)
            pins.push_back(std::move(entry->pin));
    if (!pins.empty())
        backend_.unpin(pins.data(), pins.size());
    for (CacheEntry *entry : all)
        delete entry;
    for (const RetiredNode &node : nodes_waiting_)
        index_free_block(node.first);
    nodes_waiting_.clear();
    unfreed_.store(0, std::memory_order_relaxed);
}

void Reclaimer::void_claims()
{
    std::lock_guard<SpinThenSleepMutex> lock(mu_);
    claims_from_ = UINT64_MAX;
}

void Reclaimer::add_stats(CacheStats &s) const
{
    s.unpin_failures = unpin_failures_.load(std::memory_order_relaxed);
    s.unpins_deferred = deferred_.load(std::memory_order_relaxed);
    s.unfreed = unfreed_.load(std::memory_order_relaxed);
}

void Reclaimer::hold_for_fork()
{
    std::unique_lock<SpinThenSleepMutex> lock(mu_);
    fork_waiting_ = true;
    released_.wait(lock,
                   [this] { return rounds_releasing_.empty() && own_rounds_releasing_ == 0; });
    fork_waiting_ = false;
    lock.release(); // held across the fork: no round starts
}

void Reclaimer::after_fork_in_parent()
{
    mu_.unlock();
}

void Reclaimer::after_fork_in_child()
{
    mu_.reset();
    new (&released_) std::condition_variable_any();
    // The threads releasing them, and those whose frees claimed entries,
    // are the parent's.
    rounds_releasing_.clear();
    own_rounds_releasing_ = 0;
    claims_from_ = next_claim.load(std::memory_order_relaxed);
}

} // namespace gdrhook
