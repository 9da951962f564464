// The GPU backend's planner against simulated devices (no GL): an H100's width at every n up
// to 65,536, a device that slows down mid-run, a slow one under a tiny bound. Each run checks
// that every (tile, key) is submitted exactly once, in order, and how long each submission
// took on the simulated device against the bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <queue>
#include <sstream>
#include <vector>

#include "gpu/planner.hpp"

using attn::MaskKind;
using attn::MaskRule;
using attn::gpu::Pass;
using attn::gpu::PassPlan;
using attn::gpu::Planner;
using attn::gpu::Slice;
using attn::gpu::TileGrid;

namespace {

// `slots` workgroups resident at once, each at tile_gflops; a submission's tiles are started
// in order, each on the first slot free (as a GPU's workgroup scheduler does), and the
// submission costs overhead_ms more (dispatch, fence, wake-up).
struct SimulatedDevice {
    int slots = 1;
    double tile_gflops = 1.0;
    double overhead_ms = 0.0;
    double slowdown = 1.0;

    double run_ms(const PassPlan& p, const Slice& s) const {
        std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
        for (int i = 0; i < std::min(slots, s.tiles); ++i) free_at.push(0.0);
        double end = 0.0;
        for (int t = s.tile0; t < s.tile0 + s.tiles; ++t) {
            const double start = free_at.top();
            free_at.pop();
            const double done = start + (p.work(t, s.j0, s.j1) + p.tile_overhead) / (tile_gflops * 1e6);
            end = std::max(end, done);
            free_at.push(done);
        }
        return (end + overhead_ms) * slowdown;
    }
    double ideal_ms(double flops) const { return flops / (slots * tile_gflops * 1e6); }
};

struct RunStats {
    int submissions = 0, over_bound = 0;
    double longest_ms = 0.0, busy_ms = 0.0, ideal_ms = 0.0;
    int min_tiles = 1 << 30;  // the fewest tiles in a submission (the last one excepted)
    std::string summary() const {
        std::ostringstream out;
        out << submissions << " submissions, longest " << longest_ms << " ms, " << over_bound << " over the bound, device "
            << 100.0 * ideal_ms / std::max(busy_ms, 1e-12) << "% busy, fewest tiles " << min_tiles;
        return out.str();
    }
};

// One run through the planner on the device; every (tile, key) must be covered once, in order.
RunStats simulate(Planner& planner, SimulatedDevice& device, const std::vector<PassPlan>& passes, double bound_ms,
                  const std::function<void(int)>& before_submission = {}) {
    RunStats stats;
    std::vector<std::vector<int>> next_key(passes.size());
    for (size_t i = 0; i < passes.size(); ++i) next_key[i].assign(static_cast<size_t>(passes[i].tiles), passes[i].key_lo);
    planner.start(passes);
    int out_of_order = 0;
    std::vector<Slice> slices;
    while (!planner.done()) {
        if (before_submission) before_submission(stats.submissions);
        const Slice s = planner.next(bound_ms);
        const PassPlan& p = passes[static_cast<size_t>(s.pass)];
        for (int t = s.tile0; t < s.tile0 + s.tiles; ++t) {
            int& next = next_key[static_cast<size_t>(s.pass)][static_cast<size_t>(t)];
            out_of_order += next != s.j0;
            next = s.j1;
        }
        const double ms = device.run_ms(p, s);
        planner.learn(s, ms, bound_ms);
        planner.advance(s);
        ++stats.submissions;
        stats.longest_ms = std::max(stats.longest_ms, ms);
        stats.over_bound += ms > bound_ms + device.overhead_ms * device.slowdown;
        stats.busy_ms += ms;
        stats.ideal_ms += device.ideal_ms(s.cost) * device.slowdown;
        slices.push_back(s);
    }
    for (size_t i = 0; i + 1 < slices.size(); ++i) stats.min_tiles = std::min(stats.min_tiles, slices[i].tiles);
    CHECK(out_of_order == 0);
    for (size_t i = 0; i < passes.size(); ++i)
        for (int next : next_key[i]) CHECK(next == passes[i].key_hi);
    return stats;
}

// The attention pass of n queries × n keys, as the backend plans it (d_k = d_v = 64).
struct AttentionPass {
    MaskRule rule;
    std::vector<PassPlan> passes;
    AttentionPass(int n, int heads, bool causal) {
        rule.kind = causal ? MaskKind::Causal : MaskKind::None;
        rule.n_keys = n;
        passes.push_back(attn::gpu::tile_pass(TileGrid{Pass::Attention, 0, n, 64, heads, 0, n, 64, 2.0 * (64 + 64)}, rule,
                                              causal, causal));
    }
};

// An H100 running a kernel at a third of its FP32 peak: 132 SMs × 2 resident workgroups at
// 85 GFLOP/s each (22 TFLOP/s), and 30 µs per submission.
SimulatedDevice h100() { return SimulatedDevice{264, 85.0, 0.03}; }

}  // namespace

TEST_CASE("planner: a simulated H100 stays within the bound and filled at every n up to 65,536",
          "[gpu-planner][h100]") {
    SimulatedDevice device = h100();
    Planner planner(2048);
    const double bound = 50.0;
    {
        // create()'s probe: from the cautious 1 GFLOP/s, a few submissions teach the planner
        // the device's speed.
        const AttentionPass probe(4096, 4, false);
        const RunStats s = simulate(planner, device, probe.passes, bound);
        INFO("probe: " << s.summary());
        CHECK(s.submissions <= 6);
        CHECK(s.over_bound == 0);
    }
    for (bool causal : {false, true})
        for (int n : {1024, 4096, 16384, 65536}) {
            const AttentionPass run(n, 8, causal);
            const RunStats s = simulate(planner, device, run.passes, bound);
            INFO((causal ? "causal" : "unmasked") << ", n = " << n << ": " << s.summary());
            CHECK(s.over_bound == 0);
            CHECK(s.longest_ms <= bound + device.overhead_ms);
            // Busy: the least time the work could take on every slot, over the time it took.
            // n = 1,024 has 128 tiles for 264 slots: it cannot fill the device.
            if (n >= 4096) CHECK(s.ideal_ms >= 0.75 * s.busy_ms);
            // Never a handful of workgroups when more would fit.
            if (n >= 16384) CHECK(s.min_tiles >= device.slots);
        }
}

TEST_CASE("planner: a device that slows down tenfold is caught after one submission", "[gpu-planner][slowdown]") {
    SimulatedDevice device = h100();
    Planner planner(2048);
    const double bound = 50.0;
    const AttentionPass warm(8192, 8, false);
    simulate(planner, device, warm.passes, bound);
    const AttentionPass run(65536, 8, false);
    const RunStats s = simulate(planner, device, run.passes, bound, [&](int submission) {
        if (submission == 3) device.slowdown = 10.0;  // another process takes the GPU, or it throttles
    });
    INFO(s.summary());
    CHECK(s.over_bound <= 1);
    CHECK(s.longest_ms <= 10.0 * (bound + device.overhead_ms));
}

TEST_CASE("planner: a slow device under a 4 ms bound, 65,536 causal keys, in bounded slices", "[gpu-planner][slow]") {
    // Mesa llvmpipe's order of speed on two cores: a whole tile takes far longer than the
    // bound, so every tile's keys go in slices.
    SimulatedDevice device{2, 3.0, 0.1};
    Planner planner(2);
    const double bound = 4.0;
    const AttentionPass run(65536, 1, true);
    const RunStats s = simulate(planner, device, run.passes, bound);
    INFO(s.summary());
    CHECK(s.submissions > 1000);
    // The first submissions are planned at the cautious starting speed, above this device's.
    CHECK(s.over_bound <= 2);
    CHECK(s.longest_ms <= 2.0 * bound);
}

TEST_CASE("planner: tiles over a heatmap region and under a window mask", "[gpu-planner][work]") {
    // The pooled heatmap of the region rows [100, 300) × keys [50, 250) under a window of 16:
    // a block streams only its rows' visible keys within the region.
    MaskRule rule;
    rule.kind = MaskKind::SlidingWindow;
    rule.window = 16;
    rule.n_keys = 400;
    const PassPlan p = attn::gpu::tile_pass(TileGrid{Pass::Pooling, 100, 300, 64, 2, 50, 250, 32, 1.0}, rule, true, false);
    REQUIRE(p.tiles == 4 * 2);
    // Block 0 is rows [100, 164): keys [85, 164) visible, 64 rows each.
    CHECK(p.work(0, 50, 250) == 64.0 * (164 - 85));
    CHECK(p.work(1, 50, 250) == p.work(0, 50, 250));  // the same block, head 2
    CHECK(p.work(0, 50, 100) == 64.0 * (100 - 85));
    // Block 3 is rows [292, 300): keys [277, 300) visible, none of them in the region.
    CHECK(p.work(6, 50, 250) == 0.0);
    CHECK(p.tile_overhead == 64.0 * 32);  // a key step's worth per tile in a submission
    // Without skipping, every key of the region.
    const PassPlan all = attn::gpu::tile_pass(TileGrid{Pass::Pooling, 100, 300, 64, 2, 50, 250, 32, 1.0}, rule, false, false);
    CHECK(all.work(6, 50, 250) == 64.0 * 200);
}
