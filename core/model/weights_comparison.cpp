// Two heads' attention weights and B − A (weights_comparison.hpp).
#include "model/weights_comparison.hpp"

#include <cmath>
#include <limits>

namespace attn {

namespace {

const Matrix* head_weights(const ModelPass& pass, stack::HeadId id, const char* which, std::string& error, bool& implied) {
    if (!pass.ok) {
        error = std::string(which) + "'s sentence has no computed pass";
        return nullptr;
    }
    if (id.layer < 0 || id.layer >= static_cast<int>(pass.layers.size()) || id.head < 0 ||
        id.head >= static_cast<int>(pass.layers[static_cast<size_t>(id.layer)].head.size())) {
        error = std::string(which) + ": head " + std::to_string(id.head + 1) + " of layer " + std::to_string(id.layer + 1) +
                " does not exist";
        return nullptr;
    }
    const HeadTrace& head = pass.layers[static_cast<size_t>(id.layer)].head[static_cast<size_t>(id.head)];
    implied = pass.layers[static_cast<size_t>(id.layer)].settings.delta_net;  // Gated DeltaNet: the weights its recurrence implies
    return implied ? &head.implied_weights : &head.weights;
}

}  // namespace

WeightsComparison compare_weights(const ModelPass& a, stack::HeadId head_a, const ModelPass& b, stack::HeadId head_b) {
    WeightsComparison r;
    r.a = head_weights(a, head_a, "A", r.error, r.a_implied);
    if (r.a != nullptr) r.b = head_weights(b, head_b, "B", r.error, r.b_implied);
    if (r.a == nullptr || r.b == nullptr) {
        r.a = r.b = nullptr;
        return r;
    }
    r.ok = true;
    const Eigen::Index n_a = r.a->rows(), n_b = r.b->rows();
    if (n_a != n_b) {
        r.message = "A has " + std::to_string(n_a) + " tokens, B has " + std::to_string(n_b) +
                    ": B \xE2\x88\x92 A needs the same tokens";
        return r;
    }
    if (r.a_implied != r.b_implied) {
        r.message = std::string(r.a_implied ? "A" : "B") + "'s layer is linear (Gated DeltaNet): its implied weights are signed and need not sum "
                    "to 1, no softmax's, so B \xE2\x88\x92 A between them would mean nothing";
        return r;
    }
    r.has_difference = true;
    r.difference = *r.b - *r.a;  // (n × n): weight by weight, query i → key j
    for (Eigen::Index i = 0; i < r.difference.rows(); ++i)
        for (Eigen::Index j = 0; j < r.difference.cols(); ++j)
            if (const float d = std::abs(r.difference(i, j)); d > r.max_abs || r.max_row < 0) {
                r.max_abs = d;
                r.max_row = static_cast<int>(i);
                r.max_col = static_cast<int>(j);
            }
    // A NaN is larger than nothing: said as NaN, never hidden behind the finite largest.
    if (!r.difference.allFinite()) r.max_abs = std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 0; i < static_cast<size_t>(n_a); ++i) {
        const std::string& ta = i < a.tokens.size() ? a.tokens[i] : std::string();
        const std::string& tb = i < b.tokens.size() ? b.tokens[i] : std::string();
        if (ta == tb) {
            r.tokens.push_back(ta);
        } else {
            r.tokens.push_back(ta + " | " + tb);
            ++r.differing_tokens;
        }
    }
    return r;
}

}  // namespace attn
