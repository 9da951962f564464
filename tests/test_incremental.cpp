// The incremental update after an embedding edit equals a full run, over the one table of
// attention cases (attention_cases.hpp); where the update does not apply, it refuses.
#include <catch2/catch.hpp>

#include "attention_cases.hpp"
#include "attention/engine.hpp"
#include "attention/incremental.hpp"

using namespace attn;

namespace {

// Every matrix of the trace, cell for cell: |a − b| ≤ tolerance·max(1, |b|); a cell
// non-finite on one side only, or another non-finite value, is a mismatch.
int mismatches(const Trace& a, const Trace& b, float tolerance, std::string* where = nullptr) {
    int count = 0;
    for (const std::string& name : matrix_names(b)) {
        const Matrix* ma = find_matrix(a, name);
        const Matrix* mb = find_matrix(b, name);
        INFO(name);
        REQUIRE(ma);
        REQUIRE(ma->rows() == mb->rows());
        REQUIRE(ma->cols() == mb->cols());
        int here = 0;
        float worst = 0.0f;
        for (Eigen::Index i = 0; i < ma->size(); ++i) {
            const float x = ma->data()[i], y = mb->data()[i];
            if (x == y || (std::isnan(x) && std::isnan(y))) continue;  // also −∞ == −∞
            const float relative = std::abs(x - y) / std::max(1.0f, std::abs(y));
            worst = std::max(worst, relative);
            here += !(std::isfinite(x) && std::isfinite(y) && relative <= tolerance);
        }
        if (here > 0 && where) *where += name + ": " + std::to_string(here) + " cells, up to " + std::to_string(worst) + "; ";
        count += here;
    }
    return count;
}

}  // namespace

TEST_CASE("every attention case: an edit of two tokens updated incrementally equals a full run", "[cases][incremental]") {
    const testing::AttentionCase c = GENERATE(from_range(testing::attention_cases()));
    INFO("case: " << c.name);
    const Scenario before = testing::case_scenario(c);
    Trace trace = run(before);
    REQUIRE(trace.ok);
    Scenario after = before;
    const int a = c.n_q * 17 / 40, b = c.n_q / 8;  // rows 17 and 5 of 40
    if (before.input == InputMode::Embeddings) {
        after.target.embeddings(a, 3 % before.d_model) += 0.75f;
        after.target.embeddings(b, 0) -= 1.5f;
    } else {
        after.q(a, 0) += 0.75f;
    }
    // The update applies to self-attention on embeddings under the stable softmax.
    // Latent attention's keys come through its latent's norm, the output gate multiplies every
    // head's row before W_O, differential attention norms each pair of heads together: the whole run again.
    const bool applies = c.inputs == testing::Inputs::Embeddings && !c.cross() && c.softmax == SoftmaxKind::Stable && c.latent.kv_rank == 0 &&
                         !c.output_gate && !c.differential;
    if (!applies) {
        const Trace unchanged = trace;
        CHECK_FALSE(update_after_embedding_edit(before, after, trace));
        CHECK(mismatches(trace, unchanged, 0.0f) == 0);
        return;
    }
    REQUIRE(update_after_embedding_edit(before, after, trace));
    const Trace full = run(after);
    REQUIRE(full.ok);
    std::string where;
    const int wrong = mismatches(trace, full, testing::kIncrementalTolerance, &where);
    INFO(where);
    CHECK(wrong == 0);
    for (size_t h = 0; h < full.head.size(); ++h) {
        CHECK(trace.head[h].fully_masked_rows == full.head[h].fully_masked_rows);
        CHECK(trace.head[h].softmax_overflow == full.head[h].softmax_overflow);
    }
    CHECK(trace.warnings == full.warnings);
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
