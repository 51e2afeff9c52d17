// The engine's clock: a discrete-event loop on virtual time, as
// experiments/sim/engine.py's Engine and Waker (one meaning, held by the
// tests that run the same scenarios through both).  Events run in time
// order, and among equal times in the order they were scheduled, so a run
// is the same every time and the same as the Python engine's where both
// schedule the same events in the same order.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <algorithm>
#include <vector>

namespace sym {

constexpr double INF = std::numeric_limits<double>::infinity();

class Engine;

// What an event calls: a part of the world (a wire, a waker, a Python
// callback's slot); a and b say what it is about (a packet's slot, a port).
struct Handler {
    virtual ~Handler() = default;
    virtual void fire(Engine& engine, uint32_t a, uint32_t b) = 0;
};

// An event's order is one 128-bit key, the bits of its time above its
// place in the schedule's order: a time is never negative here, and the
// bits of non-negative doubles order as the doubles do (-0.0 is taken as
// 0.0, as they compare), so comparing two events needs no branch.
struct Event {
    Event(double t, uint64_t seq, Handler* h, uint32_t a, uint32_t b) : seq(seq), h(h), a(a), b(b) {
        t += 0.0;
        std::memcpy(&tbits, &t, sizeof tbits);
    }
    double t() const {
        double t;
        std::memcpy(&t, &tbits, sizeof t);
        return t;
    }
    uint64_t tbits;
    uint64_t seq;
    Handler* h;
    uint32_t a, b;
};
static_assert(sizeof(Event) == 32, "an event in half a cache line");

// The pending events, earliest (then first scheduled) on top: a heap of
// four children a node, whose sift reads one or two cache lines a level
// where a binary heap's reads one line for each of twice the levels; a
// node's four children are compared on their keys without a branch to
// mispredict (the branches' misses were most of the loop's time).
class EventHeap {
public:
    bool empty() const { return h_.empty(); }
    size_t size() const { return h_.size(); }
    const Event& top() const { return h_.front(); }
    static bool before(const Event& x, const Event& y) { return key(x) < key(y); }
    void push(const Event& e) {
        size_t i = h_.size();
        h_.push_back(e);
        const u128 ke = key(e);
        while (i > 0) {
            size_t up = (i - 1) / ARITY;
            if (!(ke < key(h_[up]))) break;
            h_[i] = h_[up];
            i = up;
        }
        h_[i] = e;
    }
    Event pop() {
        Event top = h_.front();
        Event last = h_.back();
        h_.pop_back();
        const size_t n = h_.size();
        if (n == 0) return top;
        const u128 kl = key(last);
        size_t i = 0;
        while (true) {
            size_t c = ARITY * i + 1;
            if (c >= n) break;
            size_t best;
            if (c + ARITY - 1 < n) {
                const Event* q = &h_[c];
                size_t m01 = c + (key(q[1]) < key(q[0]));
                size_t m23 = c + 2 + (key(q[3]) < key(q[2]));
                best = key(h_[m23]) < key(h_[m01]) ? m23 : m01;
            } else {
                best = c;
                for (size_t k = c + 1; k < n; k++)
                    if (key(h_[k]) < key(h_[best])) best = k;
            }
            if (!(key(h_[best]) < kl)) break;
            h_[i] = h_[best];
            i = best;
        }
        h_[i] = last;
        return top;
    }

private:
    using u128 = unsigned __int128;
    static constexpr size_t ARITY = 4;
    static_assert(ARITY == 4, "pop() picks the smallest of a full node's children as two pairs");
    static u128 key(const Event& e) { return (static_cast<u128>(e.tbits) << 64) | e.seq; }
    std::vector<Event> h_;
};

class Engine {
public:
    double now = 0.0;
    uint64_t events = 0;     // events run so far

    // Run h->fire(a, b) at time t (now, if t has passed), as Engine.at.
    void at(double t, Handler* h, uint32_t a = 0, uint32_t b = 0) {
        q_.push(Event{t > now ? t : now, ++seq_, h, a, b});
    }
    // As at(), for an event that will almost always find nothing left to do
    // (a wait's deadline, pushed every step, run long after the wait ended):
    // such events go to a heap of their own, so the heap every packet's
    // events pass through holds only what is about to happen (the 64-rank
    // ring's 8,000 stale deadlines made its events 14 % slower there).
    // The order is at()'s: the loop takes the earlier of the two heaps' tops.
    void at_deadline(double t, Handler* h, uint32_t a = 0, uint32_t b = 0) {
        deadlines_.push(Event{t > now ? t : now, ++seq_, h, a, b});
    }
    // A place in the schedule's order taken now for an event pushed later
    // (at_seq): a wire keeps only its first frame's event in the heap, yet
    // each frame keeps the order it would have had with an event of its own.
    uint64_t reserve() { return ++seq_; }
    void at_seq(double t, uint64_t seq, Handler* h, uint32_t a = 0, uint32_t b = 0) {
        q_.push(Event{t, seq, h, a, b});
    }
    void stop() { stopped_ = true; }
    size_t pending() const { return q_.size() + deadlines_.size(); }

    // Events in order until none is left, the next is after `until`, or an
    // event calls stop().  `poll` (may be null) runs every POLL_EVENTS
    // events and ends the run when it returns false: the binding checks
    // for signals there, so Ctrl-C reaches a long run.
    static constexpr uint64_t POLL_EVENTS = 1 << 14;
    template <class Poll>
    void run(double until, Poll&& poll) {
        stopped_ = false;
        uint64_t next_poll = events + POLL_EVENTS;
        while (EventHeap* q = next()) {
            if (q->top().t() > until) break;
            Event e = q->pop();
            now = e.t();
            ++events;
            e.h->fire(*this, e.a, e.b);
            if (stopped_) return;
            if (events >= next_poll) {
                next_poll = events + POLL_EVENTS;
                if (!poll()) return;
            }
        }
    }

private:
    EventHeap q_, deadlines_;
    uint64_t seq_ = 0;
    bool stopped_ = false;

    // the heap whose top runs next (null: none left)
    EventHeap* next() {
        if (deadlines_.empty()) return q_.empty() ? nullptr : &q_;
        if (q_.empty()) return &deadlines_;
        return EventHeap::before(deadlines_.top(), q_.top()) ? &deadlines_ : &q_;
    }
};

// One component's next wake-up, as experiments/sim/engine.py's Waker: of
// several requests the earliest stands; a superseded one does nothing when
// its time comes (cheaper than taking it out of the heap).  The event
// carries the time it was asked for (its 64 bits in a and b), as Python's
// carries it as the argument.
class Waker : public Handler {
public:
    double due = INF;
    virtual void wake(Engine& engine, double now) = 0;

    void wake_at(Engine& engine, double t) {
        if (t < due) {
            due = t;
            uint64_t bits;
            std::memcpy(&bits, &t, sizeof bits);
            engine.at(t, this, static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32));
        }
    }
    void fire(Engine& engine, uint32_t a, uint32_t b) override {
        uint64_t bits = (static_cast<uint64_t>(b) << 32) | a;
        double t;
        std::memcpy(&t, &bits, sizeof t);
        if (t != due) return;       // superseded by an earlier request that has run
        due = INF;
        wake(engine, engine.now);
    }
};

// Objects in flight (packets on a wire), each held in a slot an event names.
template <class T>
class Slab {
public:
    uint32_t put(T&& v) {
        if (free_.empty()) {
            items_.push_back(std::move(v));
            return static_cast<uint32_t>(items_.size() - 1);
        }
        uint32_t i = free_.back();
        free_.pop_back();
        items_[i] = std::move(v);
        return i;
    }
    T take(uint32_t i) {
        T v = std::move(items_[i]);
        free_.push_back(i);
        return v;
    }
    size_t live() const { return items_.size() - free_.size(); }
    // every slot, taken or free (a free one holds a moved-from value)
    template <class F>
    void each(F&& f) { for (auto& v : items_) f(v); }
    void clear() { items_.clear(); free_.clear(); }

private:
    std::vector<T> items_;
    std::vector<uint32_t> free_;
};

}  // namespace sym
