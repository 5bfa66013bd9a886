// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// An intrusive doubly linked list in least-recently-used order: the front
// is the entry inserted (or given a second chance) last, the back the one
// eviction looks at first. The entries carry the links (`lru_prev`,
// `lru_next`); the list allocates nothing. Not thread-safe: the
// registration cache's writer mutex guards it.
#pragma once

namespace gdrhook {

template <typename Entry> class LruList {
public:
    Entry *front() const { return head_; }
    Entry *back() const { return tail_; }

    void push_front(Entry *e)
    {
        e->lru_prev = nullptr;
        e->lru_next = head_;
        (head_ ? head_->lru_prev : tail_) = e;
        head_ = e;
    }

    void unlink(Entry *e)
    {
        (e->lru_prev ? e->lru_prev->lru_next : head_) = e->lru_next;
        (e->lru_next ? e->lru_next->lru_prev : tail_) = e->lru_prev;
        e->lru_prev = e->lru_next = nullptr;
    }

    void move_to_front(Entry *e)
    {
        if (e == head_)
            return;
        unlink(e);
        push_front(e);
    }

private:
    Entry *head_ = nullptr;
    Entry *tail_ = nullptr;
};

} // namespace gdrhook
