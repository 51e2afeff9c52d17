// Rng: MT19937 drawing exactly what CPython's random.Random(seed) draws, so
// the compiled parts make the Python reference's random choices.
//
// Seeding is CPython's init_by_array (Modules/_randommodule.c) over a key of
// 32-bit words: for an int seed the words of abs(seed), least significant
// first ([0] for 0: key_for()); for a str seed Python computes the key
// (random.seed's version 2 hashes the string with SHA-512 first) and passes
// the words in.  getrandbits(k), k <= 32, is CPython's: the top k bits of
// one genrand_uint32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sym {

class Rng {
public:
    explicit Rng(const std::vector<uint32_t>& key) { init_by_array(key); }
    explicit Rng(uint64_t seed = 0) : Rng(key_for(seed)) {}

    // random.seed(n)'s key for a non-negative int n
    static std::vector<uint32_t> key_for(uint64_t seed) {
        std::vector<uint32_t> key{static_cast<uint32_t>(seed)};
        if (seed >> 32) key.push_back(static_cast<uint32_t>(seed >> 32));
        return key;
    }

    uint32_t genrand_uint32() {
        if (mti_ >= N) refill();
        uint32_t y = mt_[mti_++];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680U;
        y ^= (y << 15) & 0xefc60000U;
        y ^= y >> 18;
        return y;
    }

    // random.getrandbits(k) for 1 <= k <= 32 (0 draws nothing, as CPython)
    uint32_t getrandbits(unsigned k) { return k == 0 ? 0 : genrand_uint32() >> (32 - k); }

private:
    static constexpr int N = 624, M = 397;
    uint32_t mt_[N];
    int mti_ = N + 1;

    void init_genrand(uint32_t s) {
        mt_[0] = s;
        for (int i = 1; i < N; i++)
            mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
        mti_ = N;
    }

    void init_by_array(const std::vector<uint32_t>& key) {
        // CPython never passes an empty key (0 seeds as [0])
        const size_t len = key.empty() ? 1 : key.size();
        auto word = [&](size_t j) { return key.empty() ? 0U : key[j]; };
        init_genrand(19650218U);
        size_t i = 1, j = 0;
        for (size_t k = (static_cast<size_t>(N) > len ? N : len); k; k--) {
            mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + word(j) +
                     static_cast<uint32_t>(j);
            i++;
            j++;
            if (i >= static_cast<size_t>(N)) { mt_[0] = mt_[N - 1]; i = 1; }
            if (j >= len) j = 0;
        }
        for (size_t k = N - 1; k; k--) {
            mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) -
                     static_cast<uint32_t>(i);
            i++;
            if (i >= static_cast<size_t>(N)) { mt_[0] = mt_[N - 1]; i = 1; }
        }
        mt_[0] = 0x80000000U;
    }

    void refill() {
        static constexpr uint32_t MAG01[2] = {0x0U, 0x9908b0dfU};
        constexpr uint32_t UPPER = 0x80000000U, LOWER = 0x7fffffffU;
        int kk = 0;
        uint32_t y;
        for (; kk < N - M; kk++) {
            y = (mt_[kk] & UPPER) | (mt_[kk + 1] & LOWER);
            mt_[kk] = mt_[kk + M] ^ (y >> 1) ^ MAG01[y & 1U];
        }
        for (; kk < N - 1; kk++) {
            y = (mt_[kk] & UPPER) | (mt_[kk + 1] & LOWER);
            mt_[kk] = mt_[kk + (M - N)] ^ (y >> 1) ^ MAG01[y & 1U];
        }
        y = (mt_[N - 1] & UPPER) | (mt_[0] & LOWER);
        mt_[N - 1] = mt_[M - 1] ^ (y >> 1) ^ MAG01[y & 1U];
        mti_ = 0;
    }
};

}  // namespace sym
