// Multi-head latent attention (DeepSeek-V2, V3) against a plain loop in double written from its
// formula, against the same attention with every head's k and v expanded and given directly,
// its preset, its scenario file, its refusals and its head ablation.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "tensor/random.hpp"
#include "tensor/reflect.hpp"
#include "attention/registry.hpp"
#include "teaching/report.hpp"
#include "attention/scenario_edits.hpp"
#include "attention/serialize.hpp"
#include "model/stack.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

constexpr int kLatentTokens = 5, kLatentModel = 6, kLatentHeads = 3, kLatentKvRank = 4, kLatentQRank = 5, kLatentNope = 2, kLatentRope = 4, kLatentV = 3;

Vector latent_vector(int n, std::uint64_t seed, float offset = 0.0f) {
    return (normal_matrix(1, n, seed, 0.5f).array() + offset).matrix().row(0);
}

// Every weight given, biases and norms not the identity, a causal mask and RoPE.
Scenario latent_scenario(int q_rank, RopePairing pairing) {
    Scenario s;
    s.name = "latent";
    s.d_model = kLatentModel;
    s.heads = kLatentHeads;
    s.target.tokens = {"a", "b", "c", "d", "e"};
    s.target.embeddings = normal_matrix(kLatentTokens, kLatentModel, 301);
    s.positional = PositionalEncoding::Rotary;
    s.rope.pairing = pairing;
    s.rope.theta = 100.0f;  // turns fast enough that five positions differ
    s.mask = MaskKind::Causal;
    s.block.epsilon = 1e-6f;
    LatentAttention& l = s.latent;
    l.kv_rank = kLatentKvRank;
    l.q_rank = q_rank;
    l.nope_dim = kLatentNope;
    l.rope_dim = kLatentRope;
    l.v_dim = kLatentV;
    const int d_qk = kLatentNope + kLatentRope;
    if (q_rank > 0) {
        l.w_q_a = normal_matrix(kLatentModel, q_rank, 302, 0.7f);
        l.w_q_b = normal_matrix(q_rank, kLatentHeads * d_qk, 303, 0.7f);
        l.b_q_a = latent_vector(q_rank, 304);
        l.q_a_norm = latent_vector(q_rank, 305, 1.0f);
    } else {
        s.w_q = normal_matrix(kLatentModel, kLatentHeads * d_qk, 306, 0.7f);
        s.b_q = latent_vector(kLatentHeads * d_qk, 307);
    }
    l.w_kv_a = normal_matrix(kLatentModel, kLatentKvRank + kLatentRope, 308, 0.7f);
    l.w_kv_b = normal_matrix(kLatentKvRank, kLatentHeads * (kLatentNope + kLatentV), 309, 0.7f);
    l.b_kv_a = latent_vector(kLatentKvRank + kLatentRope, 310);
    l.kv_a_norm = latent_vector(kLatentKvRank, 311, 1.0f);
    s.w_o = normal_matrix(kLatentHeads * kLatentV, kLatentModel, 312, 0.5f);
    return s;
}

using LatentRows = std::vector<std::vector<double>>;

LatentRows latent_times(const LatentRows& a, const Matrix& w, const Vector* bias) {
    LatentRows out(a.size(), std::vector<double>(static_cast<size_t>(w.cols()), 0.0));
    for (size_t i = 0; i < a.size(); ++i)
        for (Eigen::Index c = 0; c < w.cols(); ++c) {
            double sum = bias != nullptr && bias->size() != 0 ? (*bias)(c) : 0.0;
            for (Eigen::Index r = 0; r < w.rows(); ++r) sum += a[i][static_cast<size_t>(r)] * w(r, c);
            out[i][static_cast<size_t>(c)] = sum;
        }
    return out;
}

// x / √(mean(x²) + ε) · γ over columns [begin, begin + n) of each row.
LatentRows latent_rms(const LatentRows& a, size_t begin, size_t n, const Vector& gamma, double epsilon) {
    LatentRows out(a.size(), std::vector<double>(n));
    for (size_t i = 0; i < a.size(); ++i) {
        double mean_square = 0.0;
        for (size_t c = 0; c < n; ++c) mean_square += a[i][begin + c] * a[i][begin + c] / static_cast<double>(n);
        for (size_t c = 0; c < n; ++c) out[i][c] = a[i][begin + c] / std::sqrt(mean_square + epsilon) * gamma(static_cast<Eigen::Index>(c));
    }
    return out;
}

// RoPE on d numbers at position p, the pairs (2i, 2i+1) or (i, i + d/2) turned by p·θ^(−2i/d).
std::vector<double> latent_turn(const std::vector<double>& x, int p, double theta, RopePairing pairing) {
    const size_t d = x.size();
    std::vector<double> out = x;
    for (size_t i = 0; i < d / 2; ++i) {
        const double angle = p * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
        const size_t a = pairing == RopePairing::Interleaved ? 2 * i : i, b = pairing == RopePairing::Interleaved ? 2 * i + 1 : i + d / 2;
        out[a] = x[a] * std::cos(angle) - x[b] * std::sin(angle);
        out[b] = x[b] * std::cos(angle) + x[a] * std::sin(angle);
    }
    return out;
}

struct LatentReference {
    std::vector<LatentRows> weights;  // per head (n × n)
    LatentRows latent, k_rope, output;
};

// The formula of scenario.hpp's LatentAttention, in double, one loop at a time.
LatentReference latent_reference(const Scenario& s) {
    const LatentAttention& l = s.latent;
    const double eps = s.block.epsilon, theta = s.rope.theta;
    const int n = static_cast<int>(s.target.embeddings.rows()), d_qk = l.nope_dim + l.rope_dim, d_kv = l.nope_dim + l.v_dim;
    LatentRows x(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(s.d_model)));
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < s.d_model; ++c) x[static_cast<size_t>(i)][static_cast<size_t>(c)] = s.target.embeddings(i, c);
    LatentReference ref;
    const LatentRows compressed = latent_times(x, *l.w_kv_a, &l.b_kv_a);
    ref.latent = latent_rms(compressed, 0, static_cast<size_t>(l.kv_rank), l.kv_a_norm, eps);
    const LatentRows expanded = latent_times(ref.latent, *l.w_kv_b, nullptr);
    const LatentRows q = l.q_rank > 0 ? latent_times(latent_rms(latent_times(x, *l.w_q_a, &l.b_q_a), 0, static_cast<size_t>(l.q_rank), l.q_a_norm, eps), *l.w_q_b, nullptr)
                                : latent_times(x, *s.w_q, &s.b_q);
    for (int i = 0; i < n; ++i) {
        std::vector<double> rope(compressed[static_cast<size_t>(i)].begin() + l.kv_rank, compressed[static_cast<size_t>(i)].end());
        ref.k_rope.push_back(latent_turn(rope, i, theta, s.rope.pairing));
    }
    LatentRows concat(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(s.heads * l.v_dim), 0.0));
    for (int h = 0; h < s.heads; ++h) {
        LatentRows w(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(n), 0.0));
        for (int i = 0; i < n; ++i) {
            // q_h = [q_nope | RoPE(q_rope)], k_h = [k_nope | RoPE(k_rope)]
            const auto& qi = q[static_cast<size_t>(i)];
            std::vector<double> q_rope(qi.begin() + h * d_qk + l.nope_dim, qi.begin() + (h + 1) * d_qk);
            q_rope = latent_turn(q_rope, i, theta, s.rope.pairing);
            std::vector<double> scores(static_cast<size_t>(i + 1));
            double max = -1e300;
            for (int j = 0; j <= i; ++j) {  // causal
                double dot = 0.0;
                for (int c = 0; c < l.nope_dim; ++c) dot += qi[static_cast<size_t>(h * d_qk + c)] * expanded[static_cast<size_t>(j)][static_cast<size_t>(h * d_kv + c)];
                for (int c = 0; c < l.rope_dim; ++c) dot += q_rope[static_cast<size_t>(c)] * ref.k_rope[static_cast<size_t>(j)][static_cast<size_t>(c)];
                scores[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(d_qk));
                max = std::max(max, scores[static_cast<size_t>(j)]);
            }
            double sum = 0.0;
            for (int j = 0; j <= i; ++j) sum += std::exp(scores[static_cast<size_t>(j)] - max);
            for (int j = 0; j <= i; ++j) {
                const double weight = std::exp(scores[static_cast<size_t>(j)] - max) / sum;
                w[static_cast<size_t>(i)][static_cast<size_t>(j)] = weight;
                for (int c = 0; c < l.v_dim; ++c)
                    concat[static_cast<size_t>(i)][static_cast<size_t>(h * l.v_dim + c)] +=
                        weight * expanded[static_cast<size_t>(j)][static_cast<size_t>(h * d_kv + l.nope_dim + c)];
            }
        }
        ref.weights.push_back(w);
    }
    ref.output = latent_times(concat, *s.w_o, nullptr);
    return ref;
}

void check_latent_close(const Matrix& m, const LatentRows& expected, double tolerance) {
    REQUIRE(m.rows() == static_cast<Eigen::Index>(expected.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
        REQUIRE(m.cols() == static_cast<Eigen::Index>(expected[i].size()));
        for (size_t c = 0; c < expected[i].size(); ++c) {
            INFO("row " << i + 1 << ", column " << c + 1);
            CHECK(m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c)) == Approx(expected[i][c]).margin(tolerance));
        }
    }
}

}  // namespace

TEST_CASE("latent attention: every step against a plain loop written from the formula", "[engine][latent]") {
    const int q_rank = GENERATE(0, kLatentQRank);
    const RopePairing pairing = GENERATE(RopePairing::Interleaved, RopePairing::RotateHalf);
    INFO("q_rank " << q_rank << ", " << to_string(pairing));
    const Scenario s = latent_scenario(q_rank, pairing);
    const Trace t = run(s);
    REQUIRE(t.ok);
    CHECK(t.d_k == kLatentNope + kLatentRope);
    CHECK(t.d_v == kLatentV);
    CHECK(t.kv_heads == kLatentHeads);
    CHECK(t.scale == Approx(1.0 / std::sqrt(6.0)));
    const LatentReference ref = latent_reference(s);
    check_latent_close(t.latent.latent, ref.latent, 1e-4);
    check_latent_close(t.latent.k_rope, ref.k_rope, 1e-4);
    for (int h = 0; h < kLatentHeads; ++h) {
        INFO("head " << h + 1);
        const HeadTrace& head = t.head[static_cast<size_t>(h)];
        check_latent_close(head.weights, ref.weights[static_cast<size_t>(h)], 1e-5);
        CHECK(head.k.rightCols(kLatentRope) == t.latent.k_rope);  // one rotary key, every head's
        CHECK(head.q.rows() == kLatentTokens);
        CHECK(head.v.cols() == kLatentV);
    }
    check_latent_close(t.output, ref.output, 1e-4);
    CHECK(t.latent.q_compressed.size() == (q_rank > 0 ? kLatentTokens * q_rank : 0));
    CHECK(t.w_k.size() == 0);  // no W_K, W_V: K and V come from the latent
    CHECK(t.w_v.size() == 0);
    // The plain loop can tell a wrong step: the output moves when the latent's γ does.
    Scenario other = s;
    other.latent.kv_a_norm(0) += 1.0f;
    const Trace moved = run(other);
    REQUIRE(moved.ok);
    CHECK_FALSE(moved.output.isApprox(t.output, 1e-3f));
}

TEST_CASE("latent attention is the same attention with each head's k and v expanded and given", "[engine][latent]") {
    // Without RoPE, the latent's expansion is a key and a value per head: given directly, the
    // weights and the output are the same.
    Scenario s = latent_scenario(kLatentQRank, RopePairing::Interleaved);
    s.positional = PositionalEncoding::None;
    const Trace latent = run(s);
    REQUIRE(latent.ok);
    Scenario direct;
    direct.input = InputMode::Direct;
    direct.heads = kLatentHeads;
    direct.mask = MaskKind::Causal;
    direct.q = Matrix(kLatentTokens, kLatentHeads * 6);
    direct.k = Matrix(kLatentTokens, kLatentHeads * 6);
    direct.v = Matrix(kLatentTokens, kLatentHeads * kLatentV);
    for (int h = 0; h < kLatentHeads; ++h) {
        const HeadTrace& head = latent.head[static_cast<size_t>(h)];
        direct.q.middleCols(h * 6, 6) = head.q;
        direct.k.middleCols(h * 6, kLatentNope) = latent.latent.expanded.middleCols(h * (kLatentNope + kLatentV), kLatentNope);
        direct.k.middleCols(h * 6 + kLatentNope, kLatentRope) = latent.latent.compressed.rightCols(kLatentRope);
        direct.v.middleCols(h * kLatentV, kLatentV) = latent.latent.expanded.middleCols(h * (kLatentNope + kLatentV) + kLatentNope, kLatentV);
    }
    direct.w_o = s.w_o;
    const Trace expanded = run(direct);
    REQUIRE(expanded.ok);
    for (int h = 0; h < kLatentHeads; ++h) CHECK(expanded.head[static_cast<size_t>(h)].weights.isApprox(latent.head[static_cast<size_t>(h)].weights, 1e-6f));
    CHECK(expanded.output.isApprox(latent.output, 1e-5f));
}

TEST_CASE("latent attention's preset: the latent card says what a cache keeps", "[engine][latent][presets]") {
    const Preset* p = find_preset("latent-attention");
    REQUIRE(p != nullptr);
    const Trace t = run(p->scenario);
    REQUIRE(t.ok);
    CHECK(t.d_k == 6);
    CHECK(t.d_v == 3);
    const std::vector<std::string> names = matrix_names(t);
    for (const char* name : {"latent.w_q_a", "latent.w_q_b", "latent.w_kv_a", "latent.w_kv_b", "latent.q_compressed", "latent.q_latent",
                             "latent.compressed", "latent.latent", "latent.k_rope", "latent.expanded", "latent.kv_a_norm"}) {
        INFO(name);
        CHECK(std::find(names.begin(), names.end(), name) != names.end());
    }
    const auto ref = parse_matrix_name("latent.latent");
    REQUIRE(ref);
    // 4 + 2 numbers a token, against 4 heads × (6 + 3)
    CHECK_THAT(ref->entry->shape(t, -1), Contains("r_kv + d_rope = 6 numbers a token") && Contains("= 36 (6.0"));
    const auto k = parse_matrix_name("head1.k");
    REQUIRE(k);
    CHECK_THAT(k->entry->title(t, 1), Contains("k_rope"));
    CHECK_THAT(k->entry->shape(t, 1), Contains("shared by all 4 heads"));
    // --print writes the latent's steps before the heads
    const std::string printed = format_trace(t);
    CHECK_THAT(printed, Contains("latent \xC4\x89 = RMSNorm(c)") && Contains("(6 numbers a token)") && Contains("k_rope: one rotary key for every head") &&
                            Contains("d_k = 6, d_v = 3"));
    // Seeded weights are the same from run to run; the preset is itself until edited.
    CHECK(run(p->scenario).output == t.output);
    CHECK(exact_preset(p->scenario) == p);
}

TEST_CASE("latent attention's scenario file: written and read back, the same numbers", "[engine][latent][serialize]") {
    const Scenario s = latent_scenario(kLatentQRank, RopePairing::RotateHalf);
    const ScenarioLoad back = scenario_from_json(scenario_to_json(s), "latent.json");
    REQUIRE(back.errors.empty());
    REQUIRE(back.scenario);
    CHECK(reflect::equal(*back.scenario, s));
    CHECK(run(*back.scenario).output == run(s).output);
    // The trace's export writes the latent's steps under "latent" and its sizes in the settings.
    const nlohmann::json trace = trace_to_json(run(s), true);
    REQUIRE(trace.contains("latent"));
    CHECK(trace["latent"].contains("latent"));
    CHECK(trace["latent"].contains("k_rope"));
    CHECK(trace["latent"]["w_kv_b"].size() == kLatentKvRank);
    CHECK(trace["settings"]["latent"]["kv_rank"] == kLatentKvRank);
    CHECK(trace["d_v"] == kLatentV);
}

TEST_CASE("latent attention refuses what it would ignore or cannot compute", "[engine][latent]") {
    const auto refused = [](const Scenario& s, const std::string& words) {
        INFO(words);
        const std::vector<std::string> errors = validate(s);
        REQUIRE_FALSE(errors.empty());
        bool found = false;
        for (const std::string& e : errors) found = found || e.find(words) != std::string::npos;
        CHECK(found);
    };
    const Scenario good = latent_scenario(kLatentQRank, RopePairing::Interleaved);
    REQUIRE(validate(good).empty());
    Scenario s = good;
    s.w_k = normal_matrix(kLatentModel, kLatentHeads * 6, 1);
    refused(s, "W_K is given, but latent attention makes K and V from its latent");
    s = good;
    s.head_dim = 6;
    refused(s, "head_dim is given, but latent attention's d_k is nope_dim + rope_dim");
    s = good;
    s.kv_heads = 1;
    refused(s, "gives every query head its own K and V");
    s = good;
    s.latent.rope_dim = 3;
    refused(s, "expected an even number");
    s = good;
    s.latent.w_kv_b = normal_matrix(kLatentKvRank, 5, 1);
    refused(s, "latent W_kv_b");
    s = good;
    s.w_q = normal_matrix(kLatentModel, kLatentHeads * 6, 1);
    refused(s, "with q_rank the queries come from W_q_a and W_q_b");
    s = latent_scenario(0, RopePairing::Interleaved);
    s.latent.q_a_norm = latent_vector(3, 1);
    refused(s, "without q_rank");
    s = good;
    s.rope.rotary_dims = 2;
    refused(s, "leave rotary_dims at 0");
    s = good;
    s.qk_norm = true;
    refused(s, "QK-norm with latent attention");
    s = good;
    s.attention = AttentionKind::Cross;
    s.source.tokens = {"x", "y"};
    refused(s, "self-attention only");
    Scenario off;
    off.latent.v_dim = 3;
    refused(off, "without its kv_rank");
    // The file reader names the key.
    nlohmann::json j = scenario_to_json(latent_scenario(0, RopePairing::Interleaved));
    j["latent"]["w_q_a"] = nlohmann::json::array({nlohmann::json::array({1.0})});
    const ScenarioLoad bad = scenario_from_json(j, "bad.json");
    REQUIRE_FALSE(bad.errors.empty());
    CHECK_THAT(bad.errors.front(), Contains("latent.w_q_a") && Contains("q_rank"));
    j = scenario_to_json(good);
    j["latent"]["kv_lora_rank"] = 4;
    const ScenarioLoad unknown = scenario_from_json(j, "bad.json");
    REQUIRE_FALSE(unknown.errors.empty());
    CHECK_THAT(unknown.errors.front(), Contains("latent.kv_lora_rank") && Contains("unknown key"));
}

TEST_CASE("latent attention: ablating a head zeroes its d_v rows of W_O", "[engine][latent][ablation]") {
    Scenario s = latent_scenario(kLatentQRank, RopePairing::Interleaved);
    const Trace before = run(s);
    REQUIRE(before.ok);
    REQUIRE(stack::ablate(s, stack::HeadSet{{0, 1}}, 0));
    CHECK(s.w_o->middleRows(kLatentV, kLatentV).isZero(0.0f));           // head 2's rows: [d_v, 2·d_v)
    CHECK_FALSE(s.w_o->middleRows(0, kLatentV).isZero(0.0f));      // head 1's kept
    CHECK_FALSE(s.w_o->middleRows(2 * kLatentV, kLatentV).isZero(0.0f)); // head 3's kept
    const Trace after = run(s);
    REQUIRE(after.ok);
    // The output is now heads 1 and 3 alone.
    const Matrix expected = before.concat.middleCols(0, kLatentV) * s.w_o->middleRows(0, kLatentV) + before.concat.middleCols(2 * kLatentV, kLatentV) * s.w_o->middleRows(2 * kLatentV, kLatentV);
    CHECK(after.output.isApprox(expected, 1e-5f));
}

TEST_CASE("latent attention's weights edited in a session are kept as cell edits of the layer they came from", "[engine][latent][serialize]") {
    const Scenario base = latent_scenario(kLatentQRank, RopePairing::Interleaved);
    Scenario edited = base;
    edited.latent.w_kv_b.edit()(1, 2) = 7.0f;
    edited.latent.kv_a_norm(3) = -0.5f;
    const nlohmann::json edits = scenario_edits_to_json(base, edited);
    REQUIRE(edits["cells"].contains("latent.w_kv_b"));
    CHECK(edits["cells"]["latent.w_kv_b"].size() == 1);
    CHECK(edits["cells"].contains("latent.kv_a_norm"));
    CHECK_FALSE((edits.contains("settings") && edits["settings"].contains("latent")));  // only the cells, not the matrices again
    const ScenarioLoad back = apply_scenario_edits(base, edits, "session.json");
    REQUIRE(back.errors.empty());
    REQUIRE(back.scenario);
    CHECK(reflect::equal(*back.scenario, edited));
    CHECK(back.scenario->latent.w_q_a.shares(base.latent.w_q_a));  // what was not edited stays the base's
    // a cell outside the latent's weight is refused, naming it
    nlohmann::json bad = edits;
    bad["cells"]["latent.w_kv_b"] = nlohmann::json::array({nlohmann::json::array({kLatentKvRank, 0, 1.0})});
    const ScenarioLoad refused = apply_scenario_edits(base, bad, "session.json");
    REQUIRE_FALSE(refused.errors.empty());
    CHECK_THAT(refused.errors.front(), Contains("latent.w_kv_b"));
}
