#pragma once
// What the benchmarks measure with: a duration since a time point, the median of runs, and the
// process's peak resident memory.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace attn::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// The most resident memory this process has held so far, KiB (getrusage's ru_maxrss).
inline long peak_rss_kib() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

}  // namespace attn::bench
