// The incremental update after an embedding edit equals a full run.
#include <catch2/catch.hpp>

#include "engine.hpp"
#include "incremental.hpp"

using namespace attn;

namespace {

float largest_difference(const Trace& a, const Trace& b) {
    float worst = 0;
    for (const std::string& name : matrix_names(b)) {
        const Matrix* ma = find_matrix(a, name);
        const Matrix* mb = find_matrix(b, name);
        REQUIRE(ma);
        REQUIRE(ma->rows() == mb->rows());
        REQUIRE(ma->cols() == mb->cols());
        for (Eigen::Index i = 0; i < ma->size(); ++i) {
            const float x = ma->data()[i], y = mb->data()[i];
            if (x == y) continue;  // also −∞ == −∞
            worst = std::max(worst, std::abs(x - y));
        }
    }
    return worst;
}

}  // namespace

TEST_CASE("editing one token's embedding updates the trace as a full run would") {
    auto mask = GENERATE(MaskKind::None, MaskKind::Causal, MaskKind::SlidingWindow, MaskKind::Padding);
    auto pe = GENERATE(PositionalEncoding::None, PositionalEncoding::Sinusoidal, PositionalEncoding::Rotary,
                       PositionalEncoding::ALiBi);
    Scenario before;
    for (int i = 0; i < 40; ++i) before.target.tokens.push_back("w" + std::to_string(i % 13));
    before.d_model = 32;
    before.heads = 4;
    before.mask = mask;
    before.window = 4;
    before.positional = pe;
    before.target.padding.assign(40, false);
    before.target.padding[39] = before.target.padding[38] = true;
    before.target.embeddings = resolved_embeddings(before.target, before.d_model);
    Trace trace = run(before);
    REQUIRE(trace.ok);

    Scenario after = before;
    after.target.embeddings(17, 3) += 0.75f;
    after.target.embeddings(5, 0) -= 1.5f;
    REQUIRE(update_after_embedding_edit(before, after, trace));
    const Trace full = run(after);
    CHECK(largest_difference(trace, full) < 1e-5f);
    CHECK(trace.head[0].weights(17, 5) == Approx(full.head[0].weights(17, 5)));
}

TEST_CASE("any other change is refused and leaves the trace alone") {
    Scenario before;
    before.target.tokens = {"a", "b", "c"};
    before.d_model = 8;
    before.target.embeddings = resolved_embeddings(before.target, 8);
    Trace trace = run(before);
    const Trace copy = trace;
    Scenario heads = before;
    heads.heads = 2;
    CHECK_FALSE(update_after_embedding_edit(before, heads, trace));
    Scenario token = before;
    token.target.tokens[1] = "z";
    CHECK_FALSE(update_after_embedding_edit(before, token, trace));
    Scenario nan = before;
    nan.target.embeddings(0, 0) = NAN;
    CHECK_FALSE(update_after_embedding_edit(before, nan, trace));
    CHECK(trace.head[0].weights == copy.head[0].weights);
}
