// contract/lateness.py's Lateness: how late something ran against its
// schedule, as a geometric histogram.  Only what is added per sample lives
// here; the record (as_dict's rounding and quantiles) is made once a run by
// the Python face from these fields, so it is the Python's own code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace sym {

constexpr double LATENESS_FLOOR_S = 10e-6;   // bucket 0: under 10 us
constexpr int LATENESS_PER_OCTAVE = 4;

inline int lateness_bucket(double seconds) {
    if (seconds < LATENESS_FLOOR_S) return 0;
    return static_cast<int>(LATENESS_PER_OCTAVE * std::log2(seconds / LATENESS_FLOOR_S)) + 1;
}

struct Lateness {
    std::vector<int64_t> counts;   // by bucket; the Python's dict holds the non-zero ones
    int64_t n = 0;
    double total = 0.0;
    double max = 0.0;

    void add(double seconds) {
        seconds = std::max(seconds, 0.0);
        size_t b = static_cast<size_t>(lateness_bucket(seconds));
        if (seconds > max) max = seconds;
        if (b >= counts.size()) counts.resize(b + 1, 0);
        ++counts[b];
        ++n;
        total += seconds;
    }
};

}  // namespace sym
