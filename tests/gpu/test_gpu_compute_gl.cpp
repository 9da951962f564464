// The window's compute layer with a real GPU backend (a headless context): a zoom of a GPU
// run's heatmap is drawn on the CPU from the row statistics the run read back, unless the
// GPU's whole run again is predicted faster.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "compute.hpp"
#include "engine.hpp"
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

}  // namespace

TEST_CASE("a GPU run's zoom: from its row statistics on the CPU, or the GPU again when faster", "[gpu-compute][zoom]") {
    GpuLayer gl;
    INFO("no OpenGL 4.3 context: " << gl.why_not);
    REQUIRE(gl.context);
    compute::Settings settings;
    settings.choice = compute::Choice::Gpu;

    SECTION("the CPU draws the region when it is faster") {
        speed::Speeds cpu_faster;
        cpu_faster.cpu_gflops = 1e4;
        cpu_faster.gpu_gflops = 1.0;
        compute::Compute layer(gl.factory(), "test", false, cpu_faster);
        edits::Session session;
        session.scenario = compute::generated_scenario(1024, 3);
        layer.finish(session, settings);
        REQUIRE(session.trace.ok);
        REQUIRE(session.trace.backend == "gpu");
        REQUIRE(session.trace.head[0].row_max.size() == session.trace.n_queries);
        const Matrix output = session.trace.output;
        const double run_ms = session.trace.milliseconds;  // a new run would have its own

        settings.region = compute::Region{100, 900, 200, 1000};
        layer.update(session, settings);
        layer.finish(session, settings);
        CHECK(session.trace.backend == "gpu");
        CHECK(session.trace.milliseconds == run_ms);  // the trace on screen, its heatmap drawn again
        CHECK(session.trace.output == output);
        require_region_matches_cpu(session, settings.region);
        CHECK(gl.backends_made == 1);
    }
    SECTION("the GPU runs the sequence again when that is faster") {
        speed::Speeds gpu_faster;
        gpu_faster.cpu_gflops = 1e-3;
        gpu_faster.gpu_gflops = 1e6;
        compute::Compute layer(gl.factory(), "test", false, gpu_faster);
        edits::Session session;
        session.scenario = compute::generated_scenario(1024, 3);
        layer.finish(session, settings);
        REQUIRE(session.trace.ok);
        const double run_ms = session.trace.milliseconds;

        settings.region = compute::Region{100, 900, 200, 1000};
        layer.update(session, settings);
        CHECK_FALSE(layer.status().zooming);
        CHECK(layer.busy());  // the GPU's run of the whole sequence, for that region
        layer.finish(session, settings);
        REQUIRE(session.trace.ok);
        CHECK(session.trace.backend == "gpu");
        CHECK(session.trace.milliseconds != run_ms);  // a new run
        require_region_matches_cpu(session, settings.region);
    }
}
