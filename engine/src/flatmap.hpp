// A hash table for the switch's exact-match lookups (forward's buckets,
// symphony_flows): open addressing with linear probing in one array of
// power-of-two size, kept at most half full.  The control plane only adds
// entries (overwriting a key) and clears whole tables, so there is no
// erase.  Why not std::unordered_map: its lookup is a modulo by a prime and
// two or three dependent loads (bucket, node, next node), each a cache miss
// once a 1,024-host fabric's tables no longer fit the caches; here it is a
// multiply, a shift and mostly one load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sym {

template <class K, class V, class Hash>
class FlatMap {
public:
    const V* find(const K& k) const {
        if (slots_.empty()) return nullptr;
        for (size_t i = index(k);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (!s.used) return nullptr;
            if (s.key == k) return &s.value;
        }
    }
    void put(const K& k, const V& v) {
        if ((n_ + 1) * 2 > slots_.size()) grow();
        for (size_t i = index(k);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (!s.used) {
                s = Slot{k, v, true};
                n_++;
                return;
            }
            if (s.key == k) {
                s.value = v;
                return;
            }
        }
    }
    void clear() {
        slots_.clear();
        n_ = 0;
        mask_ = 0;
    }

private:
    struct Slot {
        K key{};
        V value{};
        bool used = false;
    };
    std::vector<Slot> slots_;
    size_t n_ = 0, mask_ = 0;

    // Fibonacci hashing: the top bits of the product, spread whatever the
    // key's own hash leaves in its low bits (addresses differ in their last byte)
    size_t index(const K& k) const {
        const uint64_t h = static_cast<uint64_t>(Hash{}(k)) * 0x9E3779B97F4A7C15ULL;
        return static_cast<size_t>(h >> 32) & mask_;
    }
    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
        mask_ = slots_.size() - 1;
        n_ = 0;
        for (const Slot& s : old)
            if (s.used) put(s.key, s.value);
    }
};

}  // namespace sym
