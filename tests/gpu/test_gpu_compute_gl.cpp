// The window's compute layer with a real GPU backend (a headless context): a zoom of a GPU
// run's heatmap is drawn on the CPU from the row statistics the run read back, unless the
// GPU's whole run again is predicted faster.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "compute.hpp"
#include "attention/engine.hpp"
#include "gpu/backend.hpp"
#include "gpu/context.hpp"

using namespace attn;

namespace {

struct GpuLayer {
    std::unique_ptr<gpu::HeadlessContext> context;
    std::string why_not;
    int backends_made = 0;

    GpuLayer() { context = gpu::HeadlessContext::create(&why_not); }

    compute::BackendFactory factory() {
        return [this](std::string* why) {
            ++backends_made;
            return gpu::Backend::create(why);
        };
    }
};

// Each cell of the region's heatmap against the CPU engine's run of that region.
void require_region_matches_cpu(const edits::Session& session, const compute::Region& region) {
    const Trace cpu = run(session.scenario, compute::output_only_options(session.scenario, region));
    REQUIRE(cpu.ok);
    for (size_t h = 0; h < cpu.head.size(); ++h) {
        const PooledWeights& got = session.trace.head[h].pooled_weights;
        const PooledWeights& want = cpu.head[h].pooled_weights;
        REQUIRE(got.values.rows() == want.values.rows());
        REQUIRE(got.values.cols() == want.values.cols());
        CHECK(got.row_begin == want.row_begin);
        CHECK(got.col_end == want.col_end);
        CHECK((got.values - want.values).cwiseAbs().maxCoeff() <= 1e-5f);
    }
}

// A compute layer planning with these speeds, after its first GPU run of 1,024 tokens.
struct FirstRun {
    compute::Compute layer;
    edits::Session session;
    compute::Settings settings;

    FirstRun(GpuLayer& gl, double cpu_gflops, double gpu_gflops)
        : layer(gl.factory(), "test", false, speed::Speeds{cpu_gflops, gpu_gflops, false}) {
        settings.choice = compute::Choice::Gpu;
        session.scenario = compute::generated_scenario(1024, 3);
        layer.finish(session, settings);
    }
};

}  // namespace

TEST_CASE("a GPU run's zoom: from its row statistics on the CPU, or the GPU again when faster", "[gpu-compute][zoom]") {
    GpuLayer gl;
    INFO("no OpenGL 4.3 context: " << gl.why_not);
    REQUIRE(gl.context);
    const compute::Region region{100, 900, 200, 1000};

    SECTION("the CPU draws the region when it is faster") {
        FirstRun run(gl, 1e4, 1.0);
        edits::Session& session = run.session;
        REQUIRE(session.trace.ok);
        REQUIRE(session.trace.backend == "gpu");
        REQUIRE(session.trace.head[0].row_max.size() == session.trace.n_queries);
        const Matrix output = session.trace.output;
        const double run_ms = session.trace.milliseconds;  // a new run would have its own

        run.settings.region = region;
        run.layer.update(session, run.settings);
        run.layer.finish(session, run.settings);
        CHECK(session.trace.backend == "gpu");
        CHECK(session.trace.milliseconds == run_ms);  // the trace on screen, its heatmap drawn again
        CHECK(session.trace.output == output);
        require_region_matches_cpu(session, region);
        CHECK(gl.backends_made == 1);
    }
    SECTION("the GPU runs the sequence again when that is faster") {
        FirstRun run(gl, 1e-3, 1e6);
        edits::Session& session = run.session;
        REQUIRE(session.trace.ok);
        const double run_ms = session.trace.milliseconds;

        run.settings.region = region;
        run.layer.update(session, run.settings);
        CHECK_FALSE(run.layer.status().zooming);
        CHECK(run.layer.busy());  // the GPU's run of the whole sequence, for that region
        run.layer.finish(session, run.settings);
        REQUIRE(session.trace.ok);
        CHECK(session.trace.backend == "gpu");
        CHECK(session.trace.milliseconds != run_ms);  // a new run
        require_region_matches_cpu(session, region);
    }
}
