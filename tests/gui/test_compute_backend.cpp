// The compute layer without a window: the plan for each size and choice, the CPU worker
// (an edit while it runs makes its result stale and runs again), no GPU factory at all.
#include <catch2/catch.hpp>

#include "compute.hpp"
#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "speed.hpp"

using namespace attn;

TEST_CASE("plan: full detail up to the limit, output-only above, the GPU only where it helps") {
    const Scenario small = compute::generated_scenario(64, 1);
    const Scenario large = compute::generated_scenario(compute::kFullDetailLimit + 1, 1);
    speed::Speeds fast_gpu{50.0, 5000.0, true}, slow_gpu{50.0, 20.0, true}, software{50.0, 5000.0, false}, unmeasured{50.0, 0.0, true};
    CHECK(compute::plan(small, compute::Choice::Auto, true, fast_gpu).detail == Detail::Full);
    CHECK(compute::plan(large, compute::Choice::Cpu, true, fast_gpu).detail == Detail::OutputOnly);
    CHECK_FALSE(compute::plan(large, compute::Choice::Cpu, true, fast_gpu).gpu);
    CHECK(compute::plan(large, compute::Choice::Auto, true, fast_gpu).gpu);       // measured faster
    CHECK_FALSE(compute::plan(large, compute::Choice::Auto, true, slow_gpu).gpu);  // measured slower than the CPU
    CHECK_FALSE(compute::plan(large, compute::Choice::Auto, true, software).gpu);  // llvmpipe is never chosen
    CHECK_FALSE(compute::plan(large, compute::Choice::Auto, true, unmeasured).gpu);  // no measurement, no guess
    CHECK_FALSE(compute::plan(large, compute::Choice::Auto, false, fast_gpu).gpu);  // no backend
    CHECK(compute::plan(small, compute::Choice::Gpu, true, software).gpu);          // asked for: output-only on the GPU
    CHECK(compute::plan(small, compute::Choice::Gpu, false, software).detail == Detail::Full);
    // The prediction itself: a GPU 100× faster wins at 65,536 tokens; the fixed cost of a
    // GPU run loses to the CPU on a tiny request.
    const Scenario huge = compute::generated_scenario(65536, 1);
    CHECK(speed::gpu_is_faster(huge, speed::Speeds{50.0, 5000.0, true}));
    const Scenario tiny = compute::generated_scenario(16, 1);
    CHECK_FALSE(speed::gpu_is_faster(tiny, speed::Speeds{50.0, 5000.0, true}));
}

TEST_CASE("a full run too costly for a frame runs on the worker, the trace on screen kept until it lands, a small one within the frame") {
    compute::Compute layer;
    compute::Settings settings;
    settings.choice = compute::Choice::Cpu;
    edits::Session session;
    // A GPT-2 layer's shape: 32 tokens of d_model 768 with a feed-forward block.
    Scenario heavy;
    for (int i = 0; i < 32; ++i) heavy.target.tokens.push_back("t" + std::to_string(i));
    heavy.d_model = 768;
    heavy.heads = 12;
    heavy.block.feed_forward = heavy.block.residual = heavy.block.layer_norm = true;
    REQUIRE(speed::full_run_flops(heavy) > compute::kFullOnFrameFlops);
    const compute::Plan p = compute::plan(heavy, compute::Choice::Cpu, false, speed::Speeds{});
    CHECK(p.detail == Detail::Full);
    CHECK(p.worker);
    session.scenario = heavy;
    layer.update(session, settings);
    CHECK(layer.status().busy);  // handed to the worker: update returned without running it
    CHECK(session.generation == 0);
    layer.finish(session, settings);
    INFO((session.errors.empty() ? std::string() : session.errors.front()));
    REQUIRE(session.trace.ok);
    CHECK(session.trace.detail == Detail::Full);
    CHECK(session.trace.d_model == 768);
    CHECK(session.generation == 1);
    // An edit while it runs: the edit's run is what lands, never the one before it.
    session.push(edits::SetCell{edits::MatrixId::X, 0, 0, 3.0f});
    layer.update(session, settings);
    session.push(edits::SetCell{edits::MatrixId::X, 0, 1, -2.0f});
    layer.update(session, settings);
    layer.finish(session, settings);
    CHECK(session.trace.x(0, 0) == 3.0f);
    CHECK(session.trace.x(0, 1) == -2.0f);
    const Trace direct = run(session.scenario);
    CHECK(session.trace.output == direct.output);
    // A preset: a few thousand operations, within the frame.
    session.scenario = find_preset(default_preset_name())->scenario;
    CHECK_FALSE(compute::plan(session.scenario, compute::Choice::Cpu, false, speed::Speeds{}).worker);
    session.dirty = true;
    const std::uint64_t before = session.generation;
    layer.update(session, settings);
    CHECK_FALSE(layer.status().busy);
    CHECK(session.generation == before + 1);
}

TEST_CASE("the CPU worker: output-only off the UI thread, stale results run again") {
    compute::Compute layer;  // no GPU factory
    compute::Settings settings;
    settings.choice = compute::Choice::Gpu;  // unavailable: the CPU takes over
    edits::Session session;
    session.scenario = compute::generated_scenario(2048, 1);
    layer.update(session, settings);
    CHECK(layer.status().busy);
    CHECK_FALSE(layer.status().planned_gpu);
    session.push(edits::SetCell{edits::MatrixId::X, 0, 0, 3.0f});  // while the worker runs
    layer.update(session, settings);
    layer.finish(session, settings);
    REQUIRE(session.trace.ok);
    CHECK(session.trace.detail == Detail::OutputOnly);
    CHECK(session.trace.backend == "cpu");
    CHECK(session.trace.x(0, 0) == 3.0f);  // the edit's run, not the stale one
    CHECK(session.trace.head[0].scores.size() == 0);
    CHECK(session.trace.head[0].pooled_weights.values.rows() == 512);

    settings.region = compute::Region{100, 132, 200, 232};  // zoom: full resolution
    layer.finish(session, settings);
    const PooledWeights& zoomed = session.trace.head[0].pooled_weights;
    CHECK(zoomed.row_begin == 100);
    CHECK(zoomed.col_end == 232);
    CHECK(zoomed.values.rows() == 32);
    CHECK(zoomed.values.cols() == 32);
}

TEST_CASE("a zoom draws the region from the trace's row statistics, never running attention again, and Cancel stops it") {
    // Output-only from kFullDetailLimit tokens on; the sanitized build runs the same steps on
    // half as many (a quarter of the work), the Release build on 4096.
#ifdef ATTNLAB_SANITIZED_BUILD
    constexpr int tokens = 2048;
#else
    constexpr int tokens = 4096;
#endif
    static_assert(tokens > compute::kFullDetailLimit, "the trace must be output-only");
    compute::Compute layer;
    compute::Settings settings;
    settings.choice = compute::Choice::Cpu;
    edits::Session session;
    session.scenario = compute::generated_scenario(tokens, 1);
    layer.finish(session, settings);
    REQUIRE(session.trace.ok);
    REQUIRE(session.trace.detail == Detail::OutputOnly);
    const Matrix output = session.trace.output;
    const std::uint64_t generation = session.generation;

    settings.region = compute::Region{100, 132, 200, 232};
    const std::uint64_t runs = engine_runs();
    layer.update(session, settings);  // the region only, on the worker (a 32×32 region may be done by the time update returns)
    layer.finish(session, settings);
    const PooledWeights& zoomed = session.trace.head[0].pooled_weights;
    CHECK(zoomed.row_begin == 100);
    CHECK(zoomed.values.rows() == 32);
    CHECK(session.generation == generation + 1);
    CHECK(session.trace.output == output);      // the outputs were not computed again
    CHECK(engine_runs() == runs);  // 32×32 scores per head from the row statistics, no run of the engine
    // The region's weights are those a whole run for that region draws.
    RunOptions options = compute::output_only_options(session.scenario, settings.region);
    const Trace fresh = run(session.scenario, options);
    for (size_t h = 0; h < fresh.head.size(); ++h)
        CHECK(session.trace.head[h].pooled_weights.values == fresh.head[h].pooled_weights.values);
    CHECK(compute::shown_region(session.trace) == settings.region);

    // Cancel: a large region started and stopped at once; the screen keeps the 32×32 region.
    settings.region = compute::Region{0, tokens - 96, 0, tokens - 96};
    layer.update(session, settings);
    REQUIRE(layer.status().zooming);
    settings.region = compute::shown_region(session.trace);  // what the panel's Cancel does
    ++settings.cancel_requests;
    layer.update(session, settings);
    CHECK_FALSE(layer.status().zooming);
    layer.finish(session, settings);
    CHECK(session.generation == generation + 1);  // nothing installed, nothing run again
    CHECK(session.trace.head[0].pooled_weights.row_begin == 100);
    CHECK(session.trace.output == output);
    CHECK_FALSE(session.dirty);
}
