// A priority queue for keys that mostly arrive in order: those that come
// after the last one pushed go to a sorted run read from its head (no
// sifting, memory read in order), the few that do not go to a heap, and
// the smaller of the two heads is the top.  Pops come in exactly the order
// one heap would give them, provided Less is a strict total order on what
// is in the queue at once.  A sender's retransmission timers are such keys:
// one per packet sent, now + RTO, so all but the ones re-armed or pushed
// just after the RTO shrank land on the run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "ring.hpp"

namespace sym {

template <class T, class Less>
class SortedRun {
public:
    bool empty() const { return run_.empty() && heap_.empty(); }
    size_t size() const { return run_.size() + heap_.size(); }

    void push(T v) {
        if (run_.empty() || Less{}(run_.back(), v)) {
            run_.push_back(std::move(v));
        } else {
            heap_.push_back(v);
            std::push_heap(heap_.begin(), heap_.end(), Greater{});
        }
    }
    const T& top() const { return from_run() ? run_.front() : heap_.front(); }
    T pop() {
        if (from_run()) return run_.pop_front();
        std::pop_heap(heap_.begin(), heap_.end(), Greater{});
        T v = heap_.back();
        heap_.pop_back();
        return v;
    }

private:
    struct Greater {
        bool operator()(const T& x, const T& y) const { return Less{}(y, x); }
    };
    bool from_run() const { return !run_.empty() && (heap_.empty() || Less{}(run_.front(), heap_.front())); }
    Ring<T> run_;
    std::vector<T> heap_;
};

}  // namespace sym
