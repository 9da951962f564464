#include "interpret/ablation_sweep.hpp"

#include <cmath>
#include <limits>

namespace attn::interpret {

float log_probability(const Matrix& row, int token) {
    const float max = row.maxCoeff();
    double sum = 0.0;
    for (Eigen::Index j = 0; j < row.cols(); ++j) sum += std::exp(static_cast<double>(row(0, j) - max));
    return static_cast<float>(static_cast<double>(row(0, token) - max) - std::log(sum));
}

std::optional<AblationSweep> ablation_sweep(const stack::Stack& stack, const stack::Pass& pass, int target, std::string* why,
                                            const std::function<bool(int, int)>& keep_going) {
    auto refuse = [&](const std::string& reason) -> std::optional<AblationSweep> {
        if (why) *why = reason;
        return std::nullopt;
    };
    if (stack.head.unembedding.size() == 0)
        return refuse("the model has no unembedding of the stream (a masked LM's own head reads it): the sweep reads a causal LM's next token");
    if (!pass.ok || static_cast<int>(pass.layers.size()) != stack.layers || pass.logits.rows() < 1)
        return refuse("the pass is not whole (run it first)");
    if (target < 0 || target >= pass.logits.cols())
        return refuse("token " + std::to_string(target) + " is not in the vocabulary of " + std::to_string(pass.logits.cols()) + " tokens");
    AblationSweep sweep;
    sweep.target = target;
    sweep.log_probability = log_probability(pass.logits.bottomRows(1), target);
    sweep.delta = Matrix::Zero(stack.layers, stack.heads);
    // One working copy. Layers run last to first: recomputing from layer ℓ rewrites layers
    // ℓ … L−1 only, so the layers before ℓ are still the pass's when ℓ's heads are swept.
    stack::Pass work = pass;
    const int total = stack.layers * stack.heads;
    int done = 0;
    for (int l = stack.layers - 1; l >= 0; --l) {
        for (int h = 0; h < stack.heads; ++h, ++done) {
            if (keep_going && !keep_going(done, total)) return refuse("cancelled");
            const stack::HeadId head{l, h};
            if (pass.ablated.heads.count(head) != 0) continue;  // already contributes nothing: Δ = 0
            work.ablated = pass.ablated;
            work.ablated.heads.insert(head);
            if (!stack::recompute_from(stack, l, work)) {
                std::string reason = "head " + std::to_string(h + 1) + " of layer " + std::to_string(l + 1) + " ablated:";
                for (const std::string& e : work.errors) reason += " " + e;
                return refuse(reason);
            }
            sweep.delta(l, h) = log_probability(work.logits.bottomRows(1), target) - sweep.log_probability;
        }
    }
    if (keep_going) keep_going(total, total);
    return sweep;
}

}  // namespace attn::interpret
