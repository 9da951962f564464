// The GPU backend's planner: submissions that fit the time bound, and the speeds they teach.
#include "gpu/planner.hpp"

#include <algorithm>
#include <utility>

namespace attn::gpu {

namespace {
int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }
}  // namespace

PassPlan tile_pass(const TileGrid& g, const MaskRule& rule, bool skip_hidden, bool reverse) {
    PassPlan p;
    p.pass = g.pass;
    const int blocks = ceil_div(g.row_end - g.row_begin, g.block_rows);
    p.tiles = blocks * g.heads;
    p.key_lo = g.key_lo;
    p.key_hi = g.key_hi;
    p.key_step = g.key_step;
    p.work = [g, rule, skip_hidden, reverse, blocks](int t, int j0, int j1) {
        const int block = reverse ? blocks - 1 - t / g.heads : t / g.heads;
        const int i0 = g.row_begin + block * g.block_rows, i1 = std::min(g.row_end, i0 + g.block_rows);
        int lo = g.key_lo, hi = g.key_hi;
        if (skip_hidden) {
            int first = 0, last = 0;
            rule.visible_run(i0, first, last);
            lo = first;
            rule.visible_run(i1 - 1, first, last);
            hi = std::max(lo, last);
        }
        const int keys = std::max(0, std::min(hi, j1) - std::max(lo, j0));
        return g.flops_per_cell * g.block_rows * keys;
    };
    // What a tile costs whatever its keys (its rows' setup, its state in and out): one key
    // step's worth, which a submission of many short causal rows would otherwise miss.
    p.tile_overhead = g.flops_per_cell * g.block_rows * g.key_step;
    return p;
}

void Planner::start(std::vector<PassPlan> passes) {
    passes_ = std::move(passes);
    cursor_pass_ = 0;
    cursor_tile_ = group_end_ = 0;
    cursor_key_ = passes_.empty() ? 0 : passes_[0].key_lo;
    planned_flops_ = 0.0;
    for (const PassPlan& p : passes_)
        for (int t = 0; t < p.tiles; ++t) planned_flops_ += p.work(t, p.key_lo, p.key_hi);
}

// The most work whose predicted time (Speed::predict_ms) fits budget_ms:
//  - whole tiles (all of their keys), when enough of them fit to fill the device, or all
//    that are left;
//  - else a group of tiles (as many as fill the device, fewer when even one key tile of each
//    would not fit) goes through the keys in slices, each as long as fits. Many tiles over
//    fewer keys fill a device better than a few tiles over all of theirs, and no one tile's
//    keys can hold a submission past the bound.
// The one piece that can exceed the budget is a single tile's single key tile (64 × 64 cells:
// about a megaflop).
Slice Planner::next(double budget_ms) {
    const PassPlan& p = passes_[cursor_pass_];
    const Speed& rate = speed_of(p);
    const int pass = static_cast<int>(cursor_pass_);
    // Tile t over keys [j0, j1) joins slice s: its work, and its cost with the fixed part.
    auto add = [&](Slice& s, int t, int j0, int j1) {
        const double f = p.work(t, j0, j1);
        s.flops += f;
        s.cost += f + p.tile_overhead;
        s.largest = std::max(s.largest, f + p.tile_overhead);
        ++s.tiles;
    };
    auto fits = [&](const Slice& s) { return rate.predict_ms(s.cost, s.largest) <= budget_ms; };
    auto planned = [&](Slice s) {
        s.planned_ms = rate.predict_ms(s.cost, s.largest);
        return s;
    };
    if (cursor_key_ == p.key_lo) {
        Slice whole{pass, cursor_tile_, 0, p.key_lo, p.key_hi};
        for (int t = cursor_tile_; t < p.tiles; ++t) {
            Slice more = whole;
            add(more, t, p.key_lo, p.key_hi);
            if (!fits(more)) break;
            whole = more;
        }
        if (whole.tiles >= std::min(fill_tiles_, p.tiles - cursor_tile_)) return planned(whole);
        const int first_step = std::min(p.key_hi, p.key_lo + p.key_step);
        Slice group{pass, cursor_tile_, 0, p.key_lo, first_step};
        group_end_ = cursor_tile_;
        while (group_end_ < p.tiles && group_end_ - cursor_tile_ < fill_tiles_) {
            Slice more = group;
            add(more, group_end_, p.key_lo, first_step);
            if (group_end_ > cursor_tile_ && !fits(more)) break;
            group = more;
            ++group_end_;
        }
    }
    auto group_slice = [&](int j1) {
        Slice s{pass, cursor_tile_, 0, cursor_key_, j1};
        for (int t = cursor_tile_; t < group_end_; ++t) add(s, t, cursor_key_, j1);
        return s;
    };
    // j1 = cursor_key + steps·key_step: the most steps whose work fits, at least one.
    int lo = 1, hi = ceil_div(p.key_hi - cursor_key_, p.key_step);
    auto end_of = [&](int steps) { return std::min(p.key_hi, cursor_key_ + steps * p.key_step); };
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (fits(group_slice(end_of(mid)))) lo = mid;
        else hi = mid - 1;
    }
    return planned(group_slice(end_of(lo)));
}

// Slower than planned, by enough to matter for the bound: both rates go up at once, so that
// the same slice would now be predicted as long as it took. Otherwise each rate comes down to
// what this submission shows: a short one (mostly the dispatch's fixed cost) shows little,
// but never too much, and a fast device's first tiny submissions are how the planner learns
// to give it larger ones.
void Planner::learn(const Slice& slice, double measured_ms, double bound_ms) {
    if (slice.cost <= 0.0) return;
    Speed& rate = speed[static_cast<int>(passes_[static_cast<size_t>(slice.pass)].pass)];
    if (measured_ms > 1.25 * slice.planned_ms && measured_ms > 0.25 * bound_ms) {
        const double slower = measured_ms / std::max(slice.planned_ms, 1e-9);
        rate.device_ms_per_flop *= slower;
        rate.tile_ms_per_flop *= slower;
    } else {
        constexpr double kFastest = 1e-15;  // 10⁹ TFLOP/s: a clock's zero never plans infinite work
        rate.device_ms_per_flop = std::max(kFastest, std::min(rate.device_ms_per_flop, measured_ms / slice.cost));
        rate.tile_ms_per_flop = std::max(kFastest, std::min(rate.tile_ms_per_flop, measured_ms / slice.largest));
    }
}

void Planner::advance(const Slice& slice) {
    const PassPlan& p = passes_[cursor_pass_];
    if (slice.j1 < p.key_hi) {
        cursor_key_ = slice.j1;
        return;
    }
    cursor_tile_ = slice.tile0 + slice.tiles;
    cursor_key_ = p.key_lo;
    if (cursor_tile_ >= p.tiles) {
        ++cursor_pass_;
        cursor_tile_ = 0;
        if (cursor_pass_ < passes_.size()) cursor_key_ = passes_[cursor_pass_].key_lo;
    }
}

}  // namespace attn::gpu
