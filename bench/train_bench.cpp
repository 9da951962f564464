// Training speed: wall time until the held-out accuracy reaches the target, and the
// training throughput in tokens per second (the batch's target tokens, forward and
// backward, evaluation not counted). One line per case, and each time as a fraction of its
// budget (reverse and copy: 60 s to 99%; induction with 2 layers: 180 s to 95%).
//
//   train_bench [--quick]      --quick: one seed per case instead of three
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "train/trainer.hpp"

using namespace attn;
using namespace attn::train;

namespace {

struct Case {
    const char* name;
    TaskKind task;
    int layers;
    PositionalEncoding positional;
    double target;
    double budget_seconds;
};

struct Result {
    bool reached = false;
    int steps = 0;
    double seconds = 0.0;        // wall time, evaluation included
    double train_seconds = 0.0;  // steps only
    long long tokens = 0;
};

Result time_to_target(const Case& c, std::uint64_t seed) {
    TrainSettings s;
    s.task.kind = c.task;
    s.model.d_model = 32;
    s.model.heads = 2;
    s.model.layers = c.layers;
    s.model.positional = c.positional;
    s.seed = seed;
    s.evaluate_every = 0;
    std::vector<std::string> errors;
    auto trainer = Trainer::create(s, errors);
    Result r;
    if (!trainer) {
        for (const std::string& e : errors) std::fprintf(stderr, "%s: %s\n", c.name, e.c_str());
        return r;
    }
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    while (!r.reached) {
        const auto before = clock::now();
        for (int i = 0; i < 25; ++i) {
            trainer->step();
            for (int b = 0; b < s.batch_size; ++b) r.tokens += target_length(s.task);  // an upper bound for induction
        }
        r.train_seconds += std::chrono::duration<double>(clock::now() - before).count();
        r.steps = trainer->steps_done();
        r.reached = trainer->evaluate().accuracy >= c.target;
        r.seconds = std::chrono::duration<double>(clock::now() - start).count();
        if (r.seconds > c.budget_seconds) break;
    }
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const std::vector<Case> cases{
        {"reverse, learned positions", TaskKind::Reverse, 1, PositionalEncoding::Learned, 0.99, 60.0},
        {"copy, learned positions", TaskKind::Copy, 1, PositionalEncoding::Learned, 0.99, 60.0},
        {"reverse, sinusoidal", TaskKind::Reverse, 1, PositionalEncoding::Sinusoidal, 0.99, 60.0},
        {"copy, sinusoidal", TaskKind::Copy, 1, PositionalEncoding::Sinusoidal, 0.99, 60.0},
        {"induction, 2 layers, learned", TaskKind::Induction, 2, PositionalEncoding::Learned, 0.95, 180.0},
    };
    std::printf("1 or 2 layers, 2 heads, d_model 32, batch 16; accuracy on 256 held-out examples every 25 steps\n");
    std::printf("%-30s %5s %7s %9s %10s %12s\n", "case", "seed", "steps", "seconds", "of budget", "tokens/s");
    for (const Case& c : cases)
        for (std::uint64_t seed = 1; seed <= (quick ? 1u : 3u); ++seed) {
            const Result r = time_to_target(c, seed);
            std::printf("%-30s %5llu %7d %9.3f %9.4f%s %12.0f\n", c.name, static_cast<unsigned long long>(seed), r.steps,
                        r.seconds, r.seconds / c.budget_seconds, r.reached ? " " : "!", r.tokens / r.train_seconds);
        }
    std::printf("! = the target was not reached within the budget\n");
    return 0;
}
