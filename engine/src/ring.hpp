// The engine's FIFO: NIC rings, queues, wires, a sender's retransmissions
// and its record of what it sent all push at the back and pop at the front.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace sym {

// A FIFO on a power-of-two ring that only grows: a queue that has reached
// its depth once pushes and pops without touching the heap again.
template <class T>
class Ring {
public:
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    T& front() { return buf_[head_]; }
    const T& front() const { return buf_[head_]; }
    const T& operator[](size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }
    const T& back() const { return (*this)[n_ - 1]; }
    void push_back(T&& v) {
        if (n_ == buf_.size()) grow();
        buf_[(head_ + n_) & (buf_.size() - 1)] = std::move(v);
        n_++;
    }
    T pop_front() {
        T v = std::move(buf_[head_]);
        buf_[head_] = T{};               // drop the descriptor's shared buffers now, not at overwrite
        head_ = (head_ + 1) & (buf_.size() - 1);
        n_--;
        return v;
    }
    void clear() { while (n_) pop_front(); }

private:
    std::vector<T> buf_;
    size_t head_ = 0, n_ = 0;
    void grow() {
        std::vector<T> bigger(buf_.empty() ? 8 : buf_.size() * 2);
        for (size_t i = 0; i < n_; i++) bigger[i] = std::move(buf_[(head_ + i) & (buf_.size() - 1)]);
        buf_.swap(bigger);
        head_ = 0;
    }
};

}  // namespace sym
