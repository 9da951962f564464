// The modern block: RMSNorm (and Gemma's (1 + γ) form), the gated feed-forward (SwiGLU,
// GeGLU), the exact GELU and SiLU, the parallel residual and Gemma's sandwich norms. Each
// is checked against plain loops in double written here, on random values, never against
// the engine's own expressions; then the files, the refusals, the presets and the registry.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "joined.hpp"
#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "tensor/random.hpp"
#include "tensor/reflect.hpp"
#include "attention/registry.hpp"
#include "attention/scenario_edits.hpp"
#include "attention/serialize.hpp"
#include "train/model.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

// [SECTION] Plain-loop references, in double

using Rows = std::vector<std::vector<double>>;

Rows rows_of(const Matrix& m) {
    Rows out(static_cast<size_t>(m.rows()), std::vector<double>(static_cast<size_t>(m.cols())));
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) out[static_cast<size_t>(i)][static_cast<size_t>(j)] = m(i, j);
    return out;
}
std::vector<double> list_of(const Vector& v) {
    std::vector<double> out;
    for (Eigen::Index j = 0; j < v.size(); ++j) out.push_back(v(j));
    return out;
}

// Hugging Face's LlamaRMSNorm: x · rsqrt(mean(x²) + ε) · w; Gemma's: · (1 + w).
Rows rms_norm_ref(const Rows& x, const std::vector<double>& w, double eps, bool plus_one) {
    Rows out = x;
    for (size_t i = 0; i < x.size(); ++i) {
        double sum_squares = 0;
        for (double v : x[i]) sum_squares += v * v;
        const double inv = 1.0 / std::sqrt(sum_squares / static_cast<double>(x[i].size()) + eps);
        for (size_t j = 0; j < x[i].size(); ++j) out[i][j] = x[i][j] * inv * (plus_one ? 1.0 + w[j] : w[j]);
    }
    return out;
}

Rows layer_norm_ref(const Rows& x, const std::vector<double>& gamma, const std::vector<double>& beta, double eps) {
    Rows out = x;
    for (size_t i = 0; i < x.size(); ++i) {
        double mean = 0, var = 0;
        for (double v : x[i]) mean += v;
        mean /= static_cast<double>(x[i].size());
        for (double v : x[i]) var += (v - mean) * (v - mean);
        var /= static_cast<double>(x[i].size());
        for (size_t j = 0; j < x[i].size(); ++j) out[i][j] = gamma[j] * (x[i][j] - mean) / std::sqrt(var + eps) + beta[j];
    }
    return out;
}

Rows matmul(const Rows& a, const Rows& b) {
    Rows out(a.size(), std::vector<double>(b[0].size(), 0.0));
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t j = 0; j < b[0].size(); ++j)
            for (size_t k = 0; k < b.size(); ++k) out[i][j] += a[i][k] * b[k][j];
    return out;
}

Rows add(const Rows& a, const Rows& b) {
    Rows out = a;
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t j = 0; j < a[i].size(); ++j) out[i][j] += b[i][j];
    return out;
}

double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }
double gelu_erf_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

Rows map_cells(const Rows& x, double (*f)(double)) {
    Rows out = x;
    for (auto& row : out)
        for (double& v : row) v = f(v);
    return out;
}
Rows cell_product(const Rows& a, const Rows& b) {
    Rows out = a;
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t j = 0; j < a[i].size(); ++j) out[i][j] *= b[i][j];
    return out;
}

// The largest |engine − reference| relative to the reference's largest magnitude (at least 1).
double gap(const Matrix& engine, const Rows& reference) {
    REQUIRE(engine.rows() == static_cast<Eigen::Index>(reference.size()));
    REQUIRE(engine.cols() == static_cast<Eigen::Index>(reference[0].size()));
    double worst = 0, scale = 1;
    for (size_t i = 0; i < reference.size(); ++i)
        for (size_t j = 0; j < reference[i].size(); ++j) {
            worst = std::max(worst, std::fabs(engine(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) - reference[i][j]));
            scale = std::max(scale, std::fabs(reference[i][j]));
        }
    return worst / scale;
}

using testing::says;

// A pre-norm block over 5 random embeddings, d_model 8, every weight random (seeded by `seed`).
Scenario random_block(std::uint64_t seed) {
    Scenario s;
    s.target.tokens = {"a", "b", "c", "d", "e"};
    s.target.embeddings = normal_matrix(5, 8, seed);
    s.d_model = 8;
    s.heads = 2;
    s.mask = MaskKind::Causal;
    s.w_q = normal_matrix(8, 8, seed + 1, 0.4f);
    s.w_k = normal_matrix(8, 8, seed + 2, 0.4f);
    s.w_v = normal_matrix(8, 8, seed + 3, 0.4f);
    s.w_o = normal_matrix(8, 8, seed + 4, 0.4f);
    BlockOptions& b = s.block;
    b.residual = b.layer_norm = b.feed_forward = true;
    b.norm = NormPlacement::Pre;
    b.d_ff = 12;
    b.w_1 = normal_matrix(8, 12, seed + 5, 0.4f);
    b.w_2 = normal_matrix(12, 8, seed + 6, 0.4f);
    b.norm_1.gamma = normal_matrix(1, 8, seed + 7, 0.3f);
    b.norm_2.gamma = normal_matrix(1, 8, seed + 8, 0.3f);
    return s;
}

}  // namespace

// [SECTION] RMSNorm

TEST_CASE("RMSNorm is x / √(mean(x²) + ε) ⊙ γ, and Gemma's form scales by 1 + γ", "[block][rmsnorm]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const Matrix x = normal_matrix(4, 8, seed, 2.0f);
    const Vector gamma = normal_matrix(1, 8, seed + 10);
    for (bool plus_one : {false, true}) {
        INFO("gamma_plus_one " << plus_one);
        const Rows reference = rms_norm_ref(rows_of(x), list_of(gamma), 1e-6, plus_one);
        CHECK(gap(rms_norm(x, 1e-6f, gamma, plus_one), reference) < 1e-6);
    }
    // ε enters under the root: a zero row stays zero, a tiny row is not blown up to unit scale.
    Matrix small = Matrix::Constant(1, 8, 1e-4f);
    CHECK(gap(rms_norm(small, 1e-6f, Vector::Ones(8)), rms_norm_ref(rows_of(small), std::vector<double>(8, 1.0), 1e-6, false)) < 1e-6);
}

TEST_CASE("a block with RMSNorm normalises what attention and the feed-forward read by their root mean square", "[block][rmsnorm]") {
    const auto seed = GENERATE(11u, 21u);
    Scenario s = random_block(seed);
    s.block.norm_kind = NormKind::RMSNorm;
    s.block.epsilon = 1e-6f;
    const Trace t = run(s);
    REQUIRE(t.ok);
    const Rows ln1 = rms_norm_ref(rows_of(t.x_pe), list_of(s.block.norm_1.gamma), 1e-6, false);
    CHECK(gap(t.block.norm1, ln1) < 1e-5);
    CHECK(gap(t.block.norm2, rms_norm_ref(rows_of(t.block.residual), list_of(s.block.norm_2.gamma), 1e-6, false)) < 1e-5);
    CHECK(t.block.beta_1.size() == 0);  // RMSNorm has no β: the trace has none to draw
    // LayerNorm of the same rows is another matrix: the setting is not ignored.
    const Rows layer = layer_norm_ref(rows_of(t.x_pe), list_of(s.block.norm_1.gamma), std::vector<double>(8, 0.0), 1e-6);
    CHECK(gap(t.block.norm1, layer) > 1e-3);

    // Gemma's form with no γ given: γ = 0, the scale 1 + 0, the plain RMS normalisation.
    s.block.gamma_plus_one = true;
    s.block.norm_1.gamma = Vector();
    const Trace gemma = run(s);
    REQUIRE(gemma.ok);
    CHECK(gap(gemma.block.norm1, rms_norm_ref(rows_of(gemma.x_pe), std::vector<double>(8, 0.0), 1e-6, true)) < 1e-5);
    CHECK(gemma.block.gamma_1.isZero());
}

// [SECTION] Activations and the gated feed-forward

TEST_CASE("SiLU and the exact GELU are x·σ(x) and ½x(1 + erf(x/√2))", "[block][activation]") {
    const Matrix z = normal_matrix(3, 7, 5, 3.0f);
    CHECK(gap(activate(z, Activation::SiLU), map_cells(rows_of(z), silu_ref)) < 1e-6);
    CHECK(gap(activate(z, Activation::GeluErf), map_cells(rows_of(z), gelu_erf_ref)) < 1e-6);
    CHECK(gap(activate(z, Activation::GeluTanh), map_cells(rows_of(z), gelu_tanh_ref)) < 1e-6);
    // The two GELUs differ somewhere (by up to ~1e-3), so "gelu" and "gelu_erf" are not one function.
    CHECK(gap(activate(z, Activation::GeluErf), map_cells(rows_of(z), gelu_tanh_ref)) > 1e-5);
}

TEST_CASE("a gated feed-forward is down(act(x·W_gate) ⊙ (x·W_up)), each step a matrix of the trace", "[block][gated]") {
    const Activation activation = GENERATE(Activation::SiLU, Activation::GeluTanh);
    Scenario s = random_block(31);
    s.block.norm_kind = NormKind::RMSNorm;
    s.block.gated = true;
    s.block.activation = activation;
    s.block.w_gate = normal_matrix(8, 12, 40, 0.4f);
    const Trace t = run(s);
    REQUIRE(t.ok);
    const Rows x = rows_of(t.block.norm2);  // what the feed-forward reads (RMSNorm₂ checked above)
    const Rows gate = map_cells(matmul(x, rows_of(s.block.w_gate)), activation == Activation::SiLU ? silu_ref : gelu_tanh_ref);
    const Rows up = matmul(x, rows_of(s.block.w_1));
    const Rows product = cell_product(gate, up);
    const Rows down = matmul(product, rows_of(s.block.w_2));
    CHECK(gap(t.block.ffn_gate, gate) < 1e-5);
    CHECK(gap(t.block.ffn_up, up) < 1e-5);
    CHECK(gap(t.block.ffn_product, product) < 1e-5);
    CHECK(gap(t.block.ffn_output, down) < 1e-5);
    CHECK(gap(t.block.output, add(rows_of(t.block.residual), down)) < 1e-5);
    CHECK(t.block.ffn_hidden.size() == 0);  // the plain feed-forward's matrices are not there
    CHECK(t.block.b_1.size() == 0);
    CHECK(t.block.b_2.size() == 0);
}

// [SECTION] Mixture of experts

// Qwen3MoeSparseMoeBlock in plain loops: softmax of each row's router logits, the k largest kept
// (ties: the smaller expert), renormalised or not; each kept expert's SwiGLU weighted and added.
struct MoeReference {
    Rows logits, probabilities, routing, output;
};
MoeReference moe_ref(const Rows& x, const Scenario& s, const std::vector<int>& ablated = {}) {
    const MixtureOfExperts& m = s.block.moe;
    MoeReference r;
    r.logits = matmul(x, rows_of(m.router));
    for (const auto& row : r.logits) {
        double top = row[0], sum = 0;
        for (double v : row) top = std::max(top, v);
        std::vector<double> p;
        for (double v : row) sum += std::exp(v - top);
        for (double v : row) p.push_back(std::exp(v - top) / sum);
        r.probabilities.push_back(p);
        std::vector<size_t> order(p.size());
        for (size_t e = 0; e < p.size(); ++e) order[e] = e;
        std::stable_sort(order.begin(), order.end(), [&p](size_t a, size_t b) { return p[a] > p[b]; });
        double kept = 0;
        for (int k = 0; k < m.top_k; ++k) kept += p[order[static_cast<size_t>(k)]];
        std::vector<double> w(p.size(), 0.0);
        for (int k = 0; k < m.top_k; ++k) {
            const size_t e = order[static_cast<size_t>(k)];
            w[e] = m.normalize_top_k ? p[e] / kept : p[e];
        }
        r.routing.push_back(w);
    }
    r.output.assign(x.size(), std::vector<double>(x[0].size(), 0.0));
    for (size_t e = 0; e < m.weights.size(); ++e) {
        if (std::find(ablated.begin(), ablated.end(), static_cast<int>(e)) != ablated.end()) continue;
        const Expert& ex = m.weights[e];
        const Rows down = matmul(cell_product(map_cells(matmul(x, rows_of(ex.w_gate)), silu_ref), matmul(x, rows_of(ex.w_1))), rows_of(ex.w_2));
        for (size_t i = 0; i < x.size(); ++i)
            for (size_t j = 0; j < x[i].size(); ++j) r.output[i][j] += r.routing[i][e] * down[i][j];
    }
    return r;
}

Scenario moe_block(std::uint64_t seed, int experts, int top_k, bool normalize) {
    Scenario s = random_block(seed);
    s.block.norm_kind = NormKind::RMSNorm;
    s.block.gated = true;
    s.block.activation = Activation::SiLU;
    s.block.w_1 = s.block.w_2 = SharedMatrix();
    s.block.moe.experts = experts;
    s.block.moe.top_k = top_k;
    s.block.moe.normalize_top_k = normalize;
    s.block.moe.router = normal_matrix(8, experts, seed + 20, 1.0f);
    for (int e = 0; e < experts; ++e)
        s.block.moe.weights.push_back({normal_matrix(8, 12, seed + 30 + 3 * static_cast<std::uint64_t>(e), 0.4f),
                                       normal_matrix(8, 12, seed + 31 + 3 * static_cast<std::uint64_t>(e), 0.4f),
                                       normal_matrix(12, 8, seed + 32 + 3 * static_cast<std::uint64_t>(e), 0.4f), Vector(), Vector(), Vector()});
    return s;
}

TEST_CASE("a mixture of experts routes each token to its k most likely experts and adds their outputs, weighted", "[block][moe]") {
    const bool normalize = GENERATE(true, false);
    const Scenario s = moe_block(61, 5, 2, normalize);
    const Trace t = run(s);
    REQUIRE(t.ok);
    const Rows x = rows_of(t.block.norm2);
    const MoeReference r = moe_ref(x, s);
    CHECK(gap(t.block.router_logits, r.logits) < 1e-5);
    CHECK(gap(t.block.router_probabilities, r.probabilities) < 1e-6);
    CHECK(gap(t.block.routing, r.routing) < 1e-6);
    CHECK(gap(t.block.ffn_output, r.output) < 1e-5);
    CHECK(gap(t.block.output, add(rows_of(t.block.residual), r.output)) < 1e-5);
    for (Eigen::Index i = 0; i < t.block.routing.rows(); ++i) {
        CHECK((t.block.routing.row(i).array() > 0.0f).count() == 2);
        if (normalize) CHECK(t.block.routing.row(i).sum() == Approx(1.0f).epsilon(1e-6));
        else CHECK(t.block.routing.row(i).sum() < 1.0f);
    }
    // each expert has weights of its own; the one feed-forward's matrices are not there
    CHECK(t.block.ffn_gate.size() == 0);
    CHECK(t.block.w_1.size() == 0);
    REQUIRE(t.block.experts.size() == 5);
    CHECK(t.settings.block.moe.experts == 5);
    CHECK(t.settings.block.moe.weights.empty());
    // the tokens do not all go to the same two experts (else the test would not see routing)
    std::set<int> chosen;
    for (Eigen::Index i = 0; i < t.block.routing.rows(); ++i)
        for (Eigen::Index e = 0; e < 5; ++e)
            if (t.block.routing(i, e) > 0) chosen.insert(static_cast<int>(e));
    CHECK(chosen.size() >= 3);
}

TEST_CASE("an ablated expert keeps its place in the routing and adds nothing", "[block][moe]") {
    Scenario s = moe_block(71, 4, 2, true);
    const Trace whole = run(s);
    REQUIRE(whole.ok);
    // the expert most tokens chose
    int busiest = 0, most = -1;
    for (int e = 0; e < 4; ++e) {
        const int n = static_cast<int>((whole.block.routing.col(e).array() > 0.0f).count());
        if (n > most) most = n, busiest = e;
    }
    REQUIRE(most > 0);
    s.block.moe.ablated = {busiest};
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.block.routing == whole.block.routing);
    CHECK(gap(t.block.ffn_output, moe_ref(rows_of(t.block.norm2), s, {busiest}).output) < 1e-5);
    CHECK_FALSE(t.block.ffn_output.isApprox(whole.block.ffn_output, 1e-3f));
    CHECK(t.settings.block.moe.ablated == std::vector<int>{busiest});
}

// Qwen2MoeSparseMoeBlock in plain loops: the routed experts as above, then every token's shared
// expert, σ(x·g)·shared(x) (gated) or shared(x), added after them.
Rows shared_expert_ref(const Rows& x, const Scenario& s, Rows* gate_values = nullptr) {
    const MixtureOfExperts& m = s.block.moe;
    Rows down = matmul(cell_product(map_cells(matmul(x, rows_of(m.shared.w_gate)), silu_ref), matmul(x, rows_of(m.shared.w_1))),
                       rows_of(m.shared.w_2));
    if (!m.shared_gated) return down;
    const Rows gate = map_cells(matmul(x, rows_of(m.shared_gate)), [](double g) { return 1.0 / (1.0 + std::exp(-g)); });
    for (size_t i = 0; i < down.size(); ++i)
        for (double& v : down[i]) v *= gate[i][0];
    if (gate_values != nullptr) *gate_values = gate;
    return down;
}

Scenario shared_moe_block(std::uint64_t seed, bool gated_shared) {
    Scenario s = moe_block(seed, 4, 2, false);  // Qwen2-MoE: norm_topk_prob false
    s.block.moe.shared_d_ff = 20;
    s.block.moe.shared = {normal_matrix(8, 20, seed + 90, 0.4f), normal_matrix(8, 20, seed + 91, 0.4f), normal_matrix(20, 8, seed + 92, 0.4f),
                          Vector(), Vector(), Vector()};
    s.block.moe.shared_gated = gated_shared;
    if (gated_shared) s.block.moe.shared_gate = normal_matrix(8, 1, seed + 93, 5.0f);
    return s;
}

TEST_CASE("a shared expert runs on every token beside the routed ones, scaled by its gate σ(x·g) or added as it is", "[block][moe]") {
    const bool gated_shared = GENERATE(true, false);
    const Scenario s = shared_moe_block(101, gated_shared);
    const Trace t = run(s);
    REQUIRE(t.ok);
    const Rows x = rows_of(t.block.norm2);
    const MoeReference routed = moe_ref(x, s);
    Rows gate;
    const Rows shared = shared_expert_ref(x, s, &gate);
    CHECK(gap(t.block.routing, routed.routing) < 1e-6);  // the router is as without it
    CHECK(gap(t.block.shared_output, shared) < 1e-5);
    CHECK(gap(t.block.ffn_output, add(routed.output, shared)) < 1e-5);
    CHECK(gap(t.block.output, add(rows_of(t.block.residual), add(routed.output, shared))) < 1e-5);
    if (gated_shared) {
        REQUIRE(t.block.shared_gate_values.cols() == 1);
        CHECK(gap(t.block.shared_gate_values, gate) < 1e-6);
        // the gate bites: the tokens take different shares of it
        CHECK(t.block.shared_gate_values.maxCoeff() - t.block.shared_gate_values.minCoeff() > 0.1f);
    } else {
        CHECK(t.block.shared_gate_values.size() == 0);
    }
    // without the shared expert the output differs by exactly what it added
    Scenario without = s;
    without.block.moe.shared_d_ff = 0;
    without.block.moe.shared = Expert{};
    without.block.moe.shared_gated = false;
    without.block.moe.shared_gate = SharedMatrix();
    const Trace bare = run(without);
    REQUIRE(bare.ok);
    CHECK(bare.block.shared_output.size() == 0);
    CHECK(gap(t.block.ffn_output, add(rows_of(bare.block.ffn_output), shared)) < 1e-5);
    // the trace's size estimate counts its output and gate, and a mixture forms no hidden layer of d_ff
    const double n = static_cast<double>(t.n_queries);
    CHECK(full_trace_bytes(s) - full_trace_bytes(without) == n * (8 + 1) * sizeof(float));  // (n × d) and (n × 1), gated or not
    Scenario dense = without;
    dense.block.moe = MixtureOfExperts{};
    dense.block.w_1 = dense.block.w_2 = SharedMatrix();
    CHECK(full_trace_bytes(dense) - full_trace_bytes(without) == n * (3.0 * 12 - 3.0 * 4) * sizeof(float));
    // the trace's settings keep its width and gate, not its weights
    CHECK(t.settings.block.moe.shared_d_ff == 20);
    CHECK(t.settings.block.moe.shared_gated == gated_shared);
    CHECK(t.settings.block.moe.shared.w_gate.size() == 0);
    // one row at a time (writing's kernel) gives the same rows
    for (Eigen::Index i = 0; i < t.block.norm2.rows(); ++i) {
        BlockTrace one;
        run_block(s, t.x_pe.row(i), t.output.row(i), one, true);
        CHECK(gap(one.shared_output, Rows{shared[static_cast<size_t>(i)]}) < 1e-5);
    }
}

TEST_CASE("a shared expert goes through a scenario file and a session's edits, and what would be ignored is refused", "[block][moe][json]") {
    const Scenario s = shared_moe_block(111, true);
    const Trace t = run(s);
    REQUIRE(t.ok);
    const nlohmann::json file = scenario_to_json(s);
    CHECK(file["block"]["moe"]["shared_d_ff"] == 20);
    CHECK(file["block"]["moe"]["shared_gated"] == true);
    const ScenarioLoad back = scenario_from_json(file, "shared.json");
    for (const std::string& e : back.errors) INFO(e);
    REQUIRE(back.scenario);
    CHECK(run(*back.scenario).block.ffn_output == t.block.ffn_output);
    // seeded: the same seed, the same shared expert and gate
    Scenario seeded = s;
    seeded.block.moe.shared = Expert{};
    seeded.block.moe.shared_gate = SharedMatrix();
    const nlohmann::json seeded_file = scenario_to_json(seeded);
    CHECK_FALSE(seeded_file["block"]["moe"].contains("shared_weights"));
    CHECK(run(*scenario_from_json(seeded_file, "seeded.json").scenario).block.ffn_output == run(seeded).block.ffn_output);
    // a session's edits keep its weights as cells, by name
    Scenario edited = s;
    edited.block.moe.shared.w_2.edit()(3, 4) = -2.0f;
    edited.block.moe.shared_gate.edit()(1, 0) = 3.0f;
    const nlohmann::json edits = scenario_edits_to_json(s, edited);
    CHECK(edits["cells"].contains("block.moe.shared_weights.w_2"));
    CHECK(edits["cells"].contains("block.moe.shared_gate"));
    CHECK_FALSE(edits["settings"].contains("block"));
    const ScenarioLoad applied = apply_scenario_edits(s, edits, "s.json: key 'edits");
    for (const std::string& e : applied.errors) INFO(e);
    REQUIRE(applied.scenario);
    CHECK(run(*applied.scenario).block.ffn_output == run(edited).block.ffn_output);
    // refused, naming the key
    auto refusal = [](const nlohmann::json& j) {
        const ScenarioLoad l = scenario_from_json(j, "bad.json");
        CHECK_FALSE(l.scenario);
        return testing::joined(l.errors);
    };
    nlohmann::json bad = file;
    bad["block"]["moe"].erase("shared_d_ff");
    CHECK_THAT(refusal(bad), Contains("block.moe.shared_gated") && Contains("ignored"));
    bad = file;
    bad["block"]["moe"]["shared_gated"] = false;
    CHECK_THAT(refusal(bad), Contains("block.moe.shared_gate'") && Contains("ignored"));
    bad = file;
    bad["block"]["moe"]["shared_weights"]["w_3"] = 1;
    CHECK_THAT(refusal(bad), Contains("shared_weights.w_3") && Contains("unknown key"));
    // the engine refuses sizes that do not fit
    Scenario wrong = s;
    wrong.block.moe.shared_gate = normal_matrix(8, 2, 3);
    CHECK(says(run(wrong).errors, "shared expert gate g is 8×2, expected 8×1"));
    wrong = s;
    wrong.block.moe.shared.w_2 = normal_matrix(12, 8, 3);
    CHECK(says(run(wrong).errors, "shared expert W_2 is 12×8, expected 20×8"));
    wrong = s;
    wrong.block.moe.shared_d_ff = 0;
    CHECK(says(run(wrong).errors, "without its width"));
    wrong = s;
    wrong.block.moe.swiglu_limit = 7.0f;
    CHECK(says(run(wrong).errors, "shared expert beside gpt-oss's clamped SwiGLU"));
}

// gpt-oss's mixture (GptOssTopKRouter, GptOssExperts) in plain loops: logits x·W + b, the k largest
// kept and softmaxed among themselves; each kept expert's biased projections, gate clamped above
// at L and up on both sides, ((up + 1)·gate·σ(α·gate))·W₂ + b₂, weighted and added.
MoeReference gpt_oss_moe_ref(const Rows& x, const Scenario& s) {
    const MixtureOfExperts& m = s.block.moe;
    const double limit = m.swiglu_limit, alpha = m.swiglu_alpha;
    MoeReference r;
    r.logits = matmul(x, rows_of(m.router));
    for (auto& row : r.logits)
        for (size_t e = 0; e < row.size(); ++e) row[e] += m.router_bias(static_cast<Eigen::Index>(e));
    for (const auto& row : r.logits) {
        std::vector<size_t> order(row.size());
        for (size_t e = 0; e < row.size(); ++e) order[e] = e;
        std::stable_sort(order.begin(), order.end(), [&row](size_t a, size_t b) { return row[a] > row[b]; });
        std::vector<double> w(row.size(), 0.0);
        double sum = 0;
        for (int k = 0; k < m.top_k; ++k) sum += w[order[static_cast<size_t>(k)]] = std::exp(row[order[static_cast<size_t>(k)]] - row[order[0]]);
        for (double& v : w) v /= sum;
        r.routing.push_back(w);
    }
    r.output.assign(x.size(), std::vector<double>(x[0].size(), 0.0));
    for (size_t e = 0; e < m.weights.size(); ++e) {
        const Expert& ex = m.weights[e];
        const Rows gate = matmul(x, rows_of(ex.w_gate)), up = matmul(x, rows_of(ex.w_1));
        Rows glu = gate;
        for (size_t i = 0; i < x.size(); ++i)
            for (size_t j = 0; j < glu[i].size(); ++j) {
                const double g = std::min(gate[i][j] + ex.b_gate(static_cast<Eigen::Index>(j)), limit);
                const double u = std::clamp(up[i][j] + ex.b_1(static_cast<Eigen::Index>(j)), -limit, limit);
                glu[i][j] = (u + 1) * g / (1 + std::exp(-alpha * g));
            }
        const Rows down = matmul(glu, rows_of(ex.w_2));
        for (size_t i = 0; i < x.size(); ++i)
            for (size_t j = 0; j < x[i].size(); ++j)
                r.output[i][j] += r.routing[i][e] * (down[i][j] + ex.b_2(static_cast<Eigen::Index>(j)));
    }
    return r;
}

Scenario gpt_oss_block(std::uint64_t seed) {
    Scenario s = moe_block(seed, 5, 2, false);
    MixtureOfExperts& m = s.block.moe;
    m.router_kind = RouterKind::TopKThenSoftmax;
    m.router_bias = normal_matrix(1, 5, seed + 90, 0.5f).row(0);
    m.swiglu_limit = 0.6f;  // small enough to clamp some gates and ups of these rows
    m.swiglu_alpha = 1.702f;
    for (size_t e = 0; e < m.weights.size(); ++e) {
        const std::uint64_t at = seed + 100 + 3 * static_cast<std::uint64_t>(e);
        m.weights[e].b_gate = normal_matrix(1, 12, at, 0.3f).row(0);
        m.weights[e].b_1 = normal_matrix(1, 12, at + 1, 0.3f).row(0);
        m.weights[e].b_2 = normal_matrix(1, 8, at + 2, 0.2f).row(0);
    }
    return s;
}

TEST_CASE("gpt-oss's mixture: the top k logits then softmax over them, biased experts and the clamped SwiGLU", "[block][moe]") {
    const Scenario s = gpt_oss_block(91);
    const Trace t = run(s);
    for (const std::string& e : t.errors) INFO(e);
    REQUIRE(t.ok);
    const Rows x = rows_of(t.block.norm2);
    const MoeReference r = gpt_oss_moe_ref(x, s);
    CHECK(gap(t.block.router_logits, r.logits) < 1e-5);
    CHECK(t.block.router_probabilities.size() == 0);  // no softmax over all E is ever formed
    CHECK(gap(t.block.routing, r.routing) < 1e-6);
    CHECK(gap(t.block.ffn_output, r.output) < 1e-5);
    for (Eigen::Index i = 0; i < t.block.routing.rows(); ++i) {
        CHECK((t.block.routing.row(i).array() > 0.0f).count() == 2);
        CHECK(t.block.routing.row(i).sum() == Approx(1.0f).epsilon(1e-6));
    }
    // the clamp bites: without it the output differs
    Scenario unclamped = s;
    unclamped.block.moe.swiglu_limit = 1000.0f;
    CHECK_FALSE(run(unclamped).block.ffn_output.isApprox(t.block.ffn_output, 1e-3f));
    // the biases and the router's order are kept by a scenario file
    const ScenarioLoad back = scenario_from_json(scenario_to_json(s), "gpt-oss.json");
    for (const std::string& e : back.errors) INFO(e);
    REQUIRE(back.scenario);
    CHECK(run(*back.scenario).block.ffn_output == t.block.ffn_output);
    const nlohmann::json file = scenario_to_json(s);
    CHECK(file["block"]["moe"]["router_kind"] == "top_k_then_softmax");
    CHECK(file["block"]["moe"]["expert_weights"][0].contains("b_gate"));
    // refused: keys that would change nothing, an activation the clamped form is not, biases of the wrong size
    nlohmann::json bad = file;
    bad["block"]["moe"]["normalize_top_k"] = true;
    CHECK(testing::joined(scenario_from_json(bad, "bad.json").errors).find("normalize_top_k") != std::string::npos);
    bad = file;
    bad["block"]["moe"].erase("swiglu_limit");
    CHECK(testing::joined(scenario_from_json(bad, "bad.json").errors).find("swiglu_alpha") != std::string::npos);
    Scenario wrong = s;
    wrong.block.activation = Activation::GeluTanh;
    CHECK(says(run(wrong).errors, "must be silu"));
    wrong = s;
    wrong.block.moe.router_bias = Vector::Zero(4);
    CHECK(says(run(wrong).errors, "block b_router has 4 numbers, expected 5"));
    wrong = s;
    wrong.block.moe.weights[2].b_2 = Vector::Zero(3);
    CHECK(says(run(wrong).errors, "block expert 2 b_2 has 3 numbers, expected 8"));
    wrong = s;
    wrong.block.moe.normalize_top_k = true;
    CHECK(says(run(wrong).errors, "would change nothing"));
}

// DeepSeek-V3's router (DeepseekV3MoE.route_tokens_to_experts) in plain loops: σ of each logit; the
// choice σ + b; each group's score the sum of its 2 largest choices; the best groups kept, the choice
// 0 elsewhere; the top k of it; their σ renormalised (+ 1e-20) and scaled. The shared expert, ungated.
MoeReference deepseek_moe_ref(const Rows& x, const Scenario& s) {
    const MixtureOfExperts& m = s.block.moe;
    const size_t experts = static_cast<size_t>(m.experts), size = experts / static_cast<size_t>(m.groups);
    MoeReference r;
    r.logits = matmul(x, rows_of(m.router));
    for (const auto& row : r.logits) {
        std::vector<double> score(experts), choice(experts);
        for (size_t e = 0; e < experts; ++e) {
            score[e] = 1.0 / (1.0 + std::exp(-row[e]));
            choice[e] = score[e] + m.choice_bias(static_cast<Eigen::Index>(e));
        }
        std::vector<std::pair<double, size_t>> groups;
        for (size_t g = 0; g < static_cast<size_t>(m.groups); ++g) {
            std::vector<double> in(choice.begin() + static_cast<long>(g * size), choice.begin() + static_cast<long>((g + 1) * size));
            std::sort(in.rbegin(), in.rend());
            groups.push_back({in[0] + in[1], g});
        }
        std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        std::vector<double> masked(experts, 0.0);
        for (int k = 0; k < m.top_groups; ++k)
            for (size_t e = groups[static_cast<size_t>(k)].second * size; e < (groups[static_cast<size_t>(k)].second + 1) * size; ++e) masked[e] = choice[e];
        std::vector<size_t> order(experts);
        for (size_t e = 0; e < experts; ++e) order[e] = e;
        std::stable_sort(order.begin(), order.end(), [&masked](size_t a, size_t b) { return masked[a] > masked[b]; });
        double kept = 0.0;
        for (int k = 0; k < m.top_k; ++k) kept += score[order[static_cast<size_t>(k)]];
        std::vector<double> w(experts, 0.0);
        for (int k = 0; k < m.top_k; ++k) {
            const size_t e = order[static_cast<size_t>(k)];
            w[e] = (m.normalize_top_k ? score[e] / (kept + 1e-20) : score[e]) * m.routed_scale;
        }
        r.probabilities.push_back(score);
        r.routing.push_back(w);
    }
    r.output.assign(x.size(), std::vector<double>(x[0].size(), 0.0));
    const auto gated = [&x](const Expert& ex) {
        return matmul(cell_product(map_cells(matmul(x, rows_of(ex.w_gate)), silu_ref), matmul(x, rows_of(ex.w_1))), rows_of(ex.w_2));
    };
    for (size_t e = 0; e < m.weights.size(); ++e) {
        const Rows down = gated(m.weights[e]);
        for (size_t i = 0; i < x.size(); ++i)
            for (size_t j = 0; j < x[i].size(); ++j) r.output[i][j] += r.routing[i][e] * down[i][j];
    }
    const Rows shared = gated(m.shared);
    for (size_t i = 0; i < x.size(); ++i)
        for (size_t j = 0; j < x[i].size(); ++j) r.output[i][j] += shared[i][j];
    return r;
}

Scenario deepseek_block(std::uint64_t seed) {
    Scenario s = moe_block(seed, 8, 2, true);
    MixtureOfExperts& m = s.block.moe;
    m.router_kind = RouterKind::SigmoidGrouped;
    m.groups = 4;
    m.top_groups = 2;
    m.routed_scale = 2.5f;
    m.choice_bias = normal_matrix(1, 8, seed + 90, 0.3f).row(0);
    m.shared_d_ff = 12;  // DeepSeek-V3's shared experts: ungated
    m.shared = {normal_matrix(8, 12, seed + 91, 0.4f), normal_matrix(8, 12, seed + 92, 0.4f), normal_matrix(12, 8, seed + 93, 0.4f),
                Vector(), Vector(), Vector()};
    return s;
}

TEST_CASE("DeepSeek-V3's router: σ scores, the best groups first, the choice biased, the weights renormalised and scaled", "[block][moe]") {
    const bool normalize = GENERATE(true, false);
    Scenario s = deepseek_block(121);
    s.block.moe.normalize_top_k = normalize;
    const Trace t = run(s);
    for (const std::string& e : t.errors) INFO(e);
    REQUIRE(t.ok);
    const Rows x = rows_of(t.block.norm2);
    const MoeReference r = deepseek_moe_ref(x, s);
    CHECK(gap(t.block.router_logits, r.logits) < 1e-5);
    CHECK(gap(t.block.router_probabilities, r.probabilities) < 1e-6);
    CHECK(gap(t.block.routing, r.routing) < 1e-5);
    CHECK(gap(t.block.ffn_output, r.output) < 1e-5);
    // each token keeps 2 experts, both in its 2 kept groups; with renormalisation the weights sum to the scale
    int outside_best_expert = 0;  // tokens whose σ-best expert lies in a group that was dropped
    for (Eigen::Index i = 0; i < t.block.routing.rows(); ++i) {
        CHECK((t.block.routing.row(i).array() > 0.0f).count() == 2);
        CHECK((t.block.router_choice.row(i).array() != 0.0f).count() == 4);  // 2 groups of 2 kept
        if (normalize) CHECK(t.block.routing.row(i).sum() == Approx(2.5f).epsilon(1e-5));
        Eigen::Index best = 0;
        t.block.router_probabilities.row(i).maxCoeff(&best);
        outside_best_expert += t.block.router_choice(i, best) == 0.0f;
    }
    INFO("tokens whose best expert's group was dropped: " << outside_best_expert);
    // the bias steers the choice: without it the routing differs, and the weights never include it
    Scenario unbiased = s;
    unbiased.block.moe.choice_bias = Vector();
    CHECK_FALSE(run(unbiased).block.routing.isApprox(t.block.routing, 1e-3f));
    // the file keeps it all
    const nlohmann::json file = scenario_to_json(s);
    CHECK(file["block"]["moe"]["router_kind"] == "sigmoid_grouped");
    CHECK(file["block"]["moe"]["groups"] == 4);
    const ScenarioLoad back = scenario_from_json(file, "deepseek.json");
    for (const std::string& e : back.errors) INFO(e);
    REQUIRE(back.scenario);
    CHECK(run(*back.scenario).block.ffn_output == t.block.ffn_output);
    // refused: what another router would ignore, groups that do not split the experts
    nlohmann::json bad = scenario_to_json(moe_block(3, 4, 2, true));
    bad["block"]["moe"]["routed_scale"] = 2.5;
    CHECK(testing::joined(scenario_from_json(bad, "bad.json").errors).find("routed_scale") != std::string::npos);
    Scenario wrong = s;
    wrong.block.moe.groups = 3;
    CHECK(says(run(wrong).errors, "must split into groups of at least 2"));
    wrong = s;
    wrong.block.moe.top_groups = 5;
    CHECK(says(run(wrong).errors, "top_groups is 5"));
    wrong = s;
    wrong.block.moe.top_groups = 1;
    wrong.block.moe.top_k = 3;
    CHECK(says(run(wrong).errors, "more than the 2 experts of the kept groups"));
    wrong = moe_block(3, 4, 2, true);
    wrong.block.moe.routed_scale = 2.0f;
    CHECK(says(run(wrong).errors, "belong to the sigmoid-grouped router"));
    wrong = s;
    wrong.block.moe.router_bias = Vector::Zero(8);
    CHECK(says(run(wrong).errors, "router_bias would be ignored"));
}

// Llama 4's router and mixture (Llama4Router, Llama4TextMoe) in plain loops: the top k logits; each
// kept expert's weight σ of its logit (σ(−∞) = 0 for the others); every expert reads w_e·x and its
// output is added unweighted; the shared expert, ungated, on every token.
MoeReference llama4_moe_ref(const Rows& x, const Scenario& s) {
    const MixtureOfExperts& m = s.block.moe;
    const size_t experts = static_cast<size_t>(m.experts);
    MoeReference r;
    r.logits = matmul(x, rows_of(m.router));
    for (const auto& row : r.logits) {
        std::vector<size_t> order(experts);
        for (size_t e = 0; e < experts; ++e) order[e] = e;
        std::stable_sort(order.begin(), order.end(), [&row](size_t a, size_t b) { return row[a] > row[b]; });
        std::vector<double> w(experts, 0.0);
        for (int k = 0; k < m.top_k; ++k) w[order[static_cast<size_t>(k)]] = 1.0 / (1.0 + std::exp(-row[order[static_cast<size_t>(k)]]));
        r.routing.push_back(w);
    }
    const auto gated = [](const Rows& in, const Expert& ex) {
        return matmul(cell_product(map_cells(matmul(in, rows_of(ex.w_gate)), silu_ref), matmul(in, rows_of(ex.w_1))), rows_of(ex.w_2));
    };
    r.output = gated(x, m.shared);
    for (size_t e = 0; e < experts; ++e) {
        Rows scaled = x;
        for (size_t i = 0; i < x.size(); ++i)
            for (double& v : scaled[i]) v *= r.routing[i][e];
        const Rows down = gated(scaled, m.weights[e]);  // an expert not kept reads 0 and writes 0
        for (size_t i = 0; i < x.size(); ++i)
            for (size_t j = 0; j < x[i].size(); ++j) r.output[i][j] += down[i][j];
    }
    return r;
}

TEST_CASE("Llama 4's router: the top k logits, each kept expert weighed by its own σ, scaling what the expert reads", "[block][moe]") {
    Scenario s = moe_block(131, 6, 2, false);
    MixtureOfExperts& m = s.block.moe;
    m.router_kind = RouterKind::TopKThenSigmoid;
    m.weight_input = true;
    m.shared_d_ff = 12;  // Llama 4's shared expert: ungated
    m.shared = {normal_matrix(8, 12, 141, 0.4f), normal_matrix(8, 12, 142, 0.4f), normal_matrix(12, 8, 143, 0.4f), Vector(), Vector(), Vector()};
    const Trace t = run(s);
    for (const std::string& e : t.errors) INFO(e);
    REQUIRE(t.ok);
    const Rows x = rows_of(t.block.norm2);
    const MoeReference r = llama4_moe_ref(x, s);
    CHECK(gap(t.block.router_logits, r.logits) < 1e-5);
    CHECK(t.block.router_probabilities.size() == 0);  // no score over all E is ever formed
    CHECK(gap(t.block.routing, r.routing) < 1e-6);
    CHECK(gap(t.block.ffn_output, r.output) < 1e-5);
    for (Eigen::Index i = 0; i < t.block.routing.rows(); ++i) CHECK((t.block.routing.row(i).array() > 0.0f).count() == 2);
    // scaling the input is not scaling the output: a SwiGLU expert is not linear
    Scenario output_weighted = s;
    output_weighted.block.moe.weight_input = false;
    CHECK_FALSE(run(output_weighted).block.ffn_output.isApprox(t.block.ffn_output, 1e-3f));
    // the file keeps it; what it would ignore is refused
    const nlohmann::json file = scenario_to_json(s);
    CHECK(file["block"]["moe"]["router_kind"] == "top_k_then_sigmoid");
    CHECK(file["block"]["moe"]["weight_input"] == true);
    const ScenarioLoad back = scenario_from_json(file, "llama4.json");
    for (const std::string& e : back.errors) INFO(e);
    REQUIRE(back.scenario);
    CHECK(run(*back.scenario).block.ffn_output == t.block.ffn_output);
    nlohmann::json bad = file;
    bad["block"]["moe"]["normalize_top_k"] = true;
    CHECK(testing::joined(scenario_from_json(bad, "bad.json").errors).find("normalize_top_k") != std::string::npos);
    Scenario wrong = s;
    wrong.block.moe.normalize_top_k = true;
    CHECK(says(run(wrong).errors, "normalize_top_k would be ignored"));
}

TEST_CASE("a mixture of experts goes through a scenario file and a session's edits, and bad ones are refused", "[block][moe][json]") {
    const Scenario s = moe_block(81, 3, 2, true);
    const Trace t = run(s);
    REQUIRE(t.ok);
    const ScenarioLoad back = scenario_from_json(scenario_to_json(s), "moe.json");
    for (const std::string& e : back.errors) INFO(e);
    REQUIRE(back.scenario);
    const Trace again = run(*back.scenario);
    REQUIRE(again.ok);
    CHECK(again.block.ffn_output == t.block.ffn_output);
    CHECK(back.scenario->block.moe.top_k == 2);
    CHECK(back.scenario->block.moe.normalize_top_k);
    // seeded: the file says only how many, and the same seed gives the same experts
    Scenario seeded = s;
    seeded.block.moe.router = SharedMatrix();
    seeded.block.moe.weights.clear();
    const nlohmann::json file = scenario_to_json(seeded);
    CHECK_FALSE(file["block"]["moe"].contains("router"));
    CHECK(run(*scenario_from_json(file, "seeded.json").scenario).block.ffn_output == run(seeded).block.ffn_output);
    // a session keeps a checkpoint's layer as its edits: a router cell and an expert's cell, by name
    Scenario edited = s;
    edited.block.moe.router.edit()(2, 1) = 7.5f;
    edited.block.moe.weights[1].w_2.edit()(3, 4) = -2.0f;
    const nlohmann::json edits = scenario_edits_to_json(s, edited);
    CHECK(edits["cells"].contains("block.moe.router"));
    CHECK(edits["cells"].contains("block.moe.experts.1.w_2"));
    CHECK(edits["cells"].size() == 2);
    CHECK_FALSE(edits["settings"].contains("block"));  // the experts are cells, never written whole
    const ScenarioLoad applied = apply_scenario_edits(s, edits, "s.json: key 'edits");
    for (const std::string& e : applied.errors) INFO(e);
    REQUIRE(applied.scenario);
    CHECK(run(*applied.scenario).block.ffn_output == run(edited).block.ffn_output);
    nlohmann::json outside = edits;
    outside["cells"]["block.moe.experts.5.w_2"] = {{0, 0, 1.0}};
    CHECK(says(apply_scenario_edits(s, outside, "s.json: key 'edits").errors, "experts.5.w_2"));
    // refused, naming the key
    auto refusal = [](const nlohmann::json& j) {
        const ScenarioLoad l = scenario_from_json(j, "bad.json");
        CHECK_FALSE(l.scenario);
        return testing::joined(l.errors);
    };
    nlohmann::json bad = scenario_to_json(s);
    bad["block"]["moe"]["routes"] = 2;
    CHECK_THAT(refusal(bad), Contains("block.moe.routes") && Contains("unknown key"));
    bad = scenario_to_json(s);
    bad["block"]["gated"] = false;
    CHECK_THAT(refusal(bad), Contains("block.moe") && Contains("gated"));
    bad = scenario_to_json(s);
    bad["block"]["w_1"] = matrix_to_json(normal_matrix(8, 12, 3));
    CHECK_THAT(refusal(bad), Contains("block.w_1") && Contains("ignored"));
    bad = scenario_to_json(s);
    bad["block"]["moe"].erase("experts");
    CHECK_THAT(refusal(bad), Contains("no \"experts\""));
    // the engine refuses sizes that do not fit, for a file's scenario or one made in the app
    Scenario wrong = s;
    wrong.block.moe.top_k = 4;
    CHECK(says(run(wrong).errors, "block moe.top_k is 4"));
    wrong = s;
    wrong.block.moe.router = normal_matrix(8, 4, 3);
    CHECK(says(run(wrong).errors, "block W_router is 8×4, expected 8×3"));
    wrong = s;
    wrong.block.moe.ablated = {2, 1};
    CHECK(says(run(wrong).errors, "ascending"));
    wrong = s;
    wrong.block.moe.ablated = {3};
    CHECK(says(run(wrong).errors, "ablates expert 3"));
    wrong = s;
    wrong.block.moe.weights.pop_back();
    CHECK(says(run(wrong).errors, "weights for 2 experts, expected E = 3"));
    // seeded experts too many to draw on every run: refused before any is drawn
    wrong = s;
    wrong.block.moe.weights.clear();
    wrong.block.moe.router = SharedMatrix();
    wrong.block.moe.experts = 1024;
    wrong.block.d_ff = 8192;
    CHECK(says(run(wrong).errors, "1024 seeded experts of 8 \xC3\x97 8192 would draw 201 million numbers"));
}

// [SECTION] Parallel residual, sandwich norms

TEST_CASE("a parallel residual adds attention and the feed-forward of the block's input: x + attn(LN₁x) + mlp(LN₂x)", "[block][parallel]") {
    Scenario s = random_block(51);
    s.block.parallel_residual = true;
    s.block.activation = Activation::GeluErf;
    s.block.norm_1.beta = normal_matrix(1, 8, 60, 0.2f);
    s.block.norm_2.beta = normal_matrix(1, 8, 61, 0.2f);
    const Trace t = run(s);
    REQUIRE(t.ok);
    const Rows x = rows_of(t.x_pe);
    const Rows ln1 = layer_norm_ref(x, list_of(s.block.norm_1.gamma), list_of(s.block.norm_1.beta), 1e-5);
    const Rows ln2 = layer_norm_ref(x, list_of(s.block.norm_2.gamma), list_of(s.block.norm_2.beta), 1e-5);
    CHECK(gap(t.block.norm1, ln1) < 1e-5);
    CHECK(gap(t.block.norm2, ln2) < 1e-5);  // LN₂ of x itself, not of x + attention
    Rows hidden = matmul(ln2, rows_of(s.block.w_1));  // b₁ = 0
    hidden = map_cells(hidden, gelu_erf_ref);
    const Rows mlp = matmul(hidden, rows_of(s.block.w_2));
    const Rows out = add(add(x, rows_of(t.output)), mlp);
    CHECK(gap(t.block.output, out) < 1e-5);
    // The sequential block reads LN₂(x + attention): another output.
    s.block.parallel_residual = false;
    CHECK(gap(run(s).block.output, out) > 1e-3);
}

TEST_CASE("a pre-norm block without N₁ (ModernBERT's first layer): attention reads x as it is, the feed-forward LN₂ of x + attention", "[block][attention_norm]") {
    Scenario s = random_block(71);
    s.block.norm_1.gamma = normal_matrix(1, 8, 72, 0.3f);
    s.block.norm_1.gamma.array() += 1.0f;
    const Trace normed = run(s);
    s.block.attention_norm = false;
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.block.norm1 == t.x_pe);  // what attention reads: x itself
    CHECK(t.block.gamma_1.size() == 0);
    CHECK(t.block.beta_1.size() == 0);
    // attention of x, by hand: head 1's q from x·W_Q
    Rows q = matmul(rows_of(t.x_pe), rows_of(s.w_q));
    for (auto& row : q) row.resize(static_cast<size_t>(t.head[0].q.cols()));  // head 1's columns
    for (Eigen::Index i = 0; i < t.head[0].q.rows(); ++i)
        for (Eigen::Index c = 0; c < t.head[0].q.cols(); ++c) CHECK(t.head[0].q(i, c) == Approx(q[static_cast<size_t>(i)][static_cast<size_t>(c)]).margin(1e-5));
    CHECK(gap(normed.head[0].q, q) > 1e-3);  // with N₁ the queries differ
    // the feed-forward still reads LN₂(x + attention)
    const Rows residual = add(rows_of(t.x_pe), rows_of(t.output));
    CHECK(gap(t.block.norm2, layer_norm_ref(residual, list_of(s.block.norm_2.gamma), std::vector<double>(8, 0.0), 1e-5)) < 1e-5);
    // the registry shows no norm-1 card's γ, and says attention reads the input as it is
    const auto find_entry = [](const std::string& key) -> const MatrixEntry* {
        for (const MatrixEntry& e : matrix_registry())
            if (key == e.key) return &e;
        return nullptr;
    };
    const MatrixEntry* gamma_1 = find_entry("block.gamma_1");
    REQUIRE(gamma_1 != nullptr);
    CHECK(gamma_1->get(t, nullptr) == nullptr);
    CHECK(gamma_1->get(normed, nullptr) != nullptr);
    CHECK(find_entry("block.norm1")->title(t, 0) == "no norm: the input as it is");
    // a scenario file keeps it, and refuses it where the block has no N₁ to leave out
    const ScenarioLoad back = scenario_from_json(scenario_to_json(s), "back");
    REQUIRE(back.scenario);
    CHECK_FALSE(back.scenario->block.attention_norm);
    CHECK(trace_to_json(run(*back.scenario)) == trace_to_json(t));
    s.block.norm = NormPlacement::Post;
    CHECK(says(run(s).errors, "block attention_norm"));
}

TEST_CASE("Gemma's sandwich normalises each sublayer's output before its residual add, four norms each with its γ", "[block][sandwich]") {
    Scenario s = random_block(71);
    s.block.norm_kind = NormKind::RMSNorm;
    s.block.gamma_plus_one = true;
    s.block.epsilon = 1e-6f;
    s.block.sandwich_norm = true;
    s.block.gated = true;
    s.block.activation = Activation::GeluTanh;
    s.block.w_gate = normal_matrix(8, 12, 80, 0.4f);
    s.block.norm_post_attention.gamma = normal_matrix(1, 8, 81, 0.3f);
    s.block.norm_post_feed_forward.gamma = normal_matrix(1, 8, 82, 0.3f);
    const Trace t = run(s);
    REQUIRE(t.ok);
    const Rows x = rows_of(t.x_pe);
    CHECK(gap(t.block.norm1, rms_norm_ref(x, list_of(s.block.norm_1.gamma), 1e-6, true)) < 1e-5);
    const Rows post_attention = rms_norm_ref(rows_of(t.output), list_of(s.block.norm_post_attention.gamma), 1e-6, true);
    CHECK(gap(t.block.post_attention_norm, post_attention) < 1e-5);
    const Rows residual = add(x, post_attention);
    CHECK(gap(t.block.residual, residual) < 1e-5);
    const Rows pre_ffn = rms_norm_ref(residual, list_of(s.block.norm_2.gamma), 1e-6, true);
    CHECK(gap(t.block.norm2, pre_ffn) < 1e-5);
    const Rows gate = map_cells(matmul(pre_ffn, rows_of(s.block.w_gate)), gelu_tanh_ref);
    const Rows ffn = matmul(cell_product(gate, matmul(pre_ffn, rows_of(s.block.w_1))), rows_of(s.block.w_2));
    CHECK(gap(t.block.ffn_output, ffn) < 1e-5);
    const Rows post_ffn = rms_norm_ref(ffn, list_of(s.block.norm_post_feed_forward.gamma), 1e-6, true);
    CHECK(gap(t.block.post_feed_forward_norm, post_ffn) < 1e-5);
    CHECK(gap(t.block.output, add(residual, post_ffn)) < 1e-5);
    CHECK(t.block.gamma_post_attention.size() == 8);
    CHECK(t.block.beta_post_attention.size() == 0);
}

// [SECTION] Files, refusals, settings

TEST_CASE("each block setting goes through a scenario file, and into the trace's settings", "[block][json]") {
    Scenario s = random_block(91);
    BlockOptions& b = s.block;
    SECTION("RMSNorm, Gemma's form") {
        b.norm_kind = NormKind::RMSNorm;
        b.gamma_plus_one = true;
    }
    SECTION("SwiGLU with its W_gate") {
        b.gated = true;
        b.activation = Activation::SiLU;
        b.w_gate = normal_matrix(8, 12, 92);
    }
    SECTION("the exact GELU and a parallel residual") {
        b.activation = Activation::GeluErf;
        b.parallel_residual = true;
    }
    SECTION("sandwich norms with their γ and β") {
        b.sandwich_norm = true;
        b.norm_post_attention = {normal_matrix(1, 8, 93), normal_matrix(1, 8, 94)};
        b.norm_post_feed_forward = {normal_matrix(1, 8, 95), normal_matrix(1, 8, 96)};
    }
    const ScenarioLoad back = scenario_from_json(scenario_to_json(s), "round trip");
    REQUIRE(back.errors.empty());
    CHECK(reflect::equal(*back.scenario, s));
    const nlohmann::json settings = trace_to_json(run(*back.scenario))["settings"]["block"];
    CHECK(settings["norm_kind"] == to_string(b.norm_kind));
    CHECK(settings["gamma_plus_one"] == b.gamma_plus_one);
    CHECK(settings["gated"] == b.gated);
    CHECK(settings["activation"] == to_string(b.activation));
    CHECK(settings["parallel_residual"] == b.parallel_residual);
    CHECK(settings["sandwich_norm"] == b.sandwich_norm);
}

TEST_CASE("the activation names: Hugging Face's, and ours", "[block][json]") {
    CHECK(activation_from_string("silu") == Activation::SiLU);
    CHECK(activation_from_string("swish") == Activation::SiLU);
    CHECK(activation_from_string("gelu_erf") == Activation::GeluErf);
    CHECK(activation_from_string("gelu_pytorch_tanh") == Activation::GeluTanh);  // Gemma's hidden_activation
    CHECK(activation_from_string("gelu") == Activation::GeluTanh);  // this app's files since the first: the tanh form
    for (Activation a : {Activation::ReLU, Activation::GeluTanh, Activation::GeluErf, Activation::SiLU})
        CHECK(activation_from_string(to_string(a)) == a);
    CHECK(norm_kind_from_string(to_string(NormKind::RMSNorm)) == NormKind::RMSNorm);
}

TEST_CASE("bad or contradictory block settings are refused, naming the key", "[block][json]") {
    auto errors = [](const std::string& block) {
        const ScenarioLoad load = scenario_from_text(R"({"tokens": ["a", "b"], "d_model": 4, "block": )" + block + "}", "b.json");
        std::string all;
        for (const std::string& e : load.errors) all += e + "\n";
        CHECK_FALSE(load.scenario);
        return all;
    };
    const std::string on = R"("residual": true, "layer_norm": true, "feed_forward": true, )";
    CHECK_THAT(errors(R"({"norm_kind": "batch_norm"})"), Contains("key 'block.norm_kind'") && Contains("rms_norm"));
    CHECK_THAT(errors(R"({"activation": "gelu_fast"})"), Contains("key 'block.activation'") && Contains("silu"));
    CHECK_THAT(errors(R"({"gated": "yes"})"), Contains("key 'block.gated'"));
    CHECK_THAT(errors(R"({"norm_post_attention": {"gamma": [1, 1, 1, 1], "mu": [0]}})"),
               Contains("key 'block.norm_post_attention.mu'"));
    CHECK_THAT(errors("{" + on + R"("gamma_plus_one": true})"), Contains("key 'block.gamma_plus_one'") && Contains("rms_norm"));
    CHECK_THAT(errors("{" + on + R"("norm_kind": "rms_norm", "norm_2": {"beta": [0, 0, 0, 0]}})"),
               Contains("key 'block.norm_2.beta'") && Contains("RMSNorm has no"));
    CHECK_THAT(errors("{" + on + R"("gated": true, "b_1": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]})"),
               Contains("key 'block.b_1'") && Contains("no biases"));
    CHECK_THAT(errors("{" + on + R"("parallel_residual": true})"), Contains("key 'block.parallel_residual'") && Contains("\"pre\""));
    CHECK_THAT(errors("{" + on + R"("norm": "pre", "parallel_residual": true, "sandwich_norm": true})"),
               Contains("key 'block.parallel_residual'") && Contains("sandwich"));
    CHECK_THAT(errors("{" + on + R"("sandwich_norm": true})"), Contains("key 'block.sandwich_norm'") && Contains("\"pre\""));
    // The engine refuses the same, for a scenario made in the app, and a W_gate of the wrong shape.
    Scenario s = random_block(101);
    s.block.norm = NormPlacement::Post;
    s.block.sandwich_norm = true;
    CHECK(says(run(s).errors, "block sandwich_norm"));
    s.block.sandwich_norm = false;
    s.block.gated = true;
    s.block.w_gate = normal_matrix(8, 5, 1);
    CHECK(says(run(s).errors, "block W_gate is 8×5, expected 8×12"));
    // A block that is off keeps its switches without complaint: turning it on again restores them.
    s = random_block(101);
    s.block.parallel_residual = true;
    s.block.residual = s.block.layer_norm = s.block.feed_forward = false;
    CHECK(run(s).ok);
    CHECK(scenario_from_json(scenario_to_json(s), "off").errors.empty());
}

TEST_CASE("training refuses an activation its backward pass cannot differentiate", "[block][train]") {
    train::ModelConfig c;
    c.vocab_size = 8;
    c.max_positions = 8;
    c.d_model = 16;
    c.feed_forward = true;
    CHECK(train::validate(c).empty());
    for (Activation a : {Activation::SiLU, Activation::GeluErf}) {
        c.activation = a;
        CHECK(says(train::validate(c), std::string("activation is ") + to_string(a)));
    }
}

// [SECTION] Presets and the registry

TEST_CASE("the modern-block presets run and draw their new matrices, each registered", "[block][presets]") {
    const std::vector<std::pair<const char*, std::vector<const char*>>> expected = {
        {"rmsnorm-block", {"block.norm1", "block.gamma_1", "block.norm2", "block.ffn_hidden"}},
        {"swiglu-feed-forward", {"block.w_gate", "block.ffn_gate", "block.ffn_up", "block.ffn_product"}},
        {"parallel-residual", {"block.norm2", "block.ffn_hidden", "block.residual2"}},
        {"gemma-sandwich-norms", {"block.post_attention_norm", "block.gamma_post_attention", "block.post_feed_forward_norm",
                                  "block.gamma_post_feed_forward", "block.ffn_product"}}};
    for (const auto& [name, matrices] : expected) {
        INFO(name);
        const Preset* p = find_preset(name);
        REQUIRE(p != nullptr);
        CHECK(p->scenario.target.tokens.size() >= 3);
        CHECK(p->scenario.target.tokens.size() <= 5);
        CHECK(p->scenario.d_model == 8);
        const Trace t = run(p->scenario);
        REQUIRE(t.ok);
        CHECK(t.warnings.empty());
        const std::vector<std::string> names = matrix_names(t);
        for (const char* m : matrices) {
            INFO(m);
            CHECK(std::find(names.begin(), names.end(), m) != names.end());
        }
        for (const std::string& n : names) CHECK(display_name(n).rfind("block.", 0) == std::string::npos);  // a user's word, never the key
    }
    // Each says what changed and where it is used.
    CHECK_THAT(find_preset("rmsnorm-block")->description, Contains("Llama"));
    CHECK_THAT(find_preset("swiglu-feed-forward")->description, Contains("Llama"));
    CHECK_THAT(find_preset("parallel-residual")->description, Contains("Pythia"));
    CHECK_THAT(find_preset("gemma-sandwich-norms")->description, Contains("Gemma 2 and 3"));
    // The sandwich preset differs from its own block without the sandwich.
    Scenario plain = find_preset("gemma-sandwich-norms")->scenario;
    plain.block.sandwich_norm = false;
    CHECK_FALSE(run(plain).block.output.isApprox(run(find_preset("gemma-sandwich-norms")->scenario).block.output, 1e-3f));
}

TEST_CASE("every block entry of the registry is some scenario's matrix, with a column label and a title", "[block][registry]") {
    std::set<std::string> seen;
    std::vector<Scenario> scenarios;
    for (const char* name : {"rmsnorm-block", "swiglu-feed-forward", "parallel-residual", "gemma-sandwich-norms", "block-qwen3-moe", "block-qwen2-moe",
                             "block-deepseek-v3"})
        scenarios.push_back(find_preset(name)->scenario);
    Scenario layer = random_block(111);  // LayerNorm's β, plain feed-forward's b, post-norm's norm1
    layer.block.norm_1.beta = normal_matrix(1, 8, 112);
    layer.block.sandwich_norm = true;
    layer.block.norm_post_attention.beta = normal_matrix(1, 8, 113);
    layer.block.norm_post_feed_forward.beta = normal_matrix(1, 8, 114);
    scenarios.push_back(layer);
    for (const Scenario& s : scenarios) {
        const Trace t = run(s);
        REQUIRE(t.ok);
        for (const std::string& n : matrix_names(t)) {
            seen.insert(n);
            const auto ref = parse_matrix_name(n);
            REQUIRE(ref);
            CHECK_FALSE(ref->entry->title(t, ref->head).empty());
            CHECK(std::string(column_label(ref->entry->column(t))) != "?");
        }
    }
    for (const MatrixEntry& e : matrix_registry()) {
        const std::string key = e.key;
        if (key.rfind("block.", 0) != 0) continue;
        INFO(key);
        CHECK(seen.count(key) == 1);
    }
}

TEST_CASE("a lesson step's matrices come from the registry: what each result reads, then the results, for every preset", "[registry][lesson]") {
    using Names = std::vector<std::string>;
    const auto names = [](const std::vector<StepMatrix>& cards) {
        Names out;
        for (const StepMatrix& c : cards) out.push_back(c.name);
        return out;
    };
    SECTION("every key a result reads is a matrix of the table, and every step's cards are the trace's, results last") {
        for (const Preset& p : presets()) {
            INFO(p.name);
            const Trace t = run(p.scenario);
            REQUIRE(t.ok);
            for (const MatrixEntry& e : matrix_registry()) {
                if (e.reads == nullptr) continue;
                for (const std::string& key : e.reads(t)) {
                    INFO(e.key << " reads " << key);  // a misspelt key would be left out as absent: said here
                    CHECK((parse_matrix_name(key) || parse_matrix_name("head0." + key)));
                }
            }
            for (Stage stage : all_stages()) {
                const std::vector<StepMatrix> cards = step_matrices(t, stage, 0);
                INFO(to_string(stage));
                const auto first_result = std::find_if(cards.begin(), cards.end(), [](const StepMatrix& c) { return c.result; });
                CHECK(std::none_of(first_result, cards.end(), [](const StepMatrix& c) { return !c.result; }));
                for (const StepMatrix& c : cards) {
                    const auto ref = parse_matrix_name(c.name);
                    REQUIRE(ref);
                    CHECK(matrix_of(t, *ref) != nullptr);
                }
            }
        }
    }
    SECTION("RoPE: the projections give Q and K as projected, the positional step turns them") {
        const Trace t = run(find_preset("grouped-query-attention")->scenario);
        REQUIRE(t.ok);
        CHECK(names(step_matrices(t, Stage::Positional, 1)) == Names{"head1.q_unrotated", "head1.k_unrotated", "head1.q", "head1.k"});
        const std::vector<StepMatrix> projections = step_matrices(t, Stage::Projections, 1);
        REQUIRE(projections.size() >= 3);
        CHECK(names({projections.end() - 3, projections.end()}) == Names{"head1.q_unrotated", "head1.k_unrotated", "head1.v"});
        CHECK(std::find_if(projections.begin(), projections.end(), [](const StepMatrix& c) { return c.name == "w_q"; }) != projections.end());
    }
    SECTION("cross-attention: the keys and values are projected from the source") {
        const Trace t = run(find_preset("cross-attention-translation")->scenario);
        REQUIRE(t.ok);
        CHECK(names(step_matrices(t, Stage::Projections, 0)) ==
              Names{"x_pe", "w_q", "source_x_pe", "w_k", "w_v", "head0.q", "head0.k", "head0.v"});
        CHECK(names(step_matrices(t, Stage::Positional, 0)) == Names{"x", "pe", "source_x", "source_pe", "x_pe", "source_x_pe"});
        // and their titles say so
        for (const char* key : {"head0.k", "head0.v"}) {
            const auto ref = parse_matrix_name(key);
            INFO(ref->entry->title(t, 0));
            CHECK(ref->entry->title(t, 0).find("(source X+PE)") != std::string::npos);
        }
        CHECK(parse_matrix_name("head0.q")->entry->title(t, 0).find("source") == std::string::npos);
    }
    SECTION("Q, K and V given: the steps before the scores show them; the tokens' step is the embeddings'") {
        const Trace given = run(find_preset("dot-product-3-tokens")->scenario);
        REQUIRE(given.ok);
        for (Stage stage : {Stage::Tokens, Stage::Embeddings, Stage::Positional, Stage::Projections})
            CHECK(names(step_matrices(given, stage, 0)) == Names{"head0.q", "head0.k", "head0.v"});
        const Trace t = run(find_preset("animal-was-tired")->scenario);
        CHECK(names(step_matrices(t, Stage::Tokens, 0)) == Names{"x"});
        CHECK(names(step_matrices(t, Stage::Concat, 0)) == Names{"head0.output", "head1.output", "concat"});
    }
    SECTION("a linear layer's weights are implied by β and the decay; no positions, no positional step") {
        const Trace t = run(find_preset("gated-deltanet")->scenario);
        REQUIRE(t.ok);
        CHECK(names(step_matrices(t, Stage::Weights, 0)) == Names{"linear.beta", "linear.decay", "head0.implied_weights"});
        CHECK(names(step_matrices(t, Stage::Output, 0)) == Names{"head0.implied_weights", "head0.v", "head0.output"});
        CHECK(step_matrices(t, Stage::Positional, 0).empty());
    }
}
