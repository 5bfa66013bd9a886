// SPDX-License-Identifier: MIT OR GPL-2.0-only
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gdrhook::cli {

// Which of several sources (the files of a job) holds the earliest next
// item: a binary min-heap of (ts_ns, source), ties broken by the source's
// index so that a merge is deterministic. Each source keeps its own order,
// even where its times step back.
//
// After an item is handed out, its source's next one usually belongs near
// the top again, and one sift down from the top (replace_top) costs half
// of a pop and a push.
class TimeMerge {
public:
    void reserve(size_t sources) { heap_.reserve(sources); }
    bool empty() const { return heap_.empty(); }

    // The source whose next item comes first.
    size_t top() const { return heap_.front().source; }

    void push(int64_t ts_ns, size_t source)
    {
        heap_.push_back({ts_ns, source});
        std::push_heap(heap_.begin(), heap_.end(), later);
    }

    // The top source's next item is at @p ts_ns now.
    void replace_top(int64_t ts_ns)
    {
        size_t i = 0, n = heap_.size();
        Entry moving{ts_ns, heap_[0].source};
        for (;;) {
            size_t child = 2 * i + 1;
            if (child >= n)
                break;
            if (child + 1 < n && later(heap_[child], heap_[child + 1]))
                ++child;
            if (!later(moving, heap_[child]))
                break;
            heap_[i] = heap_[child];
            i = child;
        }
        heap_[i] = moving;
    }

    // The top source has nothing more.
    void pop_top()
    {
        std::pop_heap(heap_.begin(), heap_.end(), later);
        heap_.pop_back();
    }

private:
    // The time sits in the heap itself, so sifting reads one array and not
    // every source's item.
    struct Entry {
        int64_t ts_ns;
        size_t source;
    };
    static bool later(const Entry &a, const Entry &b)
    {
        return a.ts_ns != b.ts_ns ? a.ts_ns > b.ts_ns : a.source > b.source;
    }

    std::vector<Entry> heap_; // min (ts_ns, source) on top
};

} // namespace gdrhook::cli
