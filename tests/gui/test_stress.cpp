// Thousands of random edits, toggles, undos and redos applied to scenarios the way the UI
// applies them (edits::update, with its incremental path), checking after every one that
// the trace is consistent: shapes agree with the scenario, every row of weights that has a
// visible key sums to 1, fully masked rows follow the documented rule, and the trace equals
// a fresh run. Memory stays flat once the undo history is full (and the sanitizer stage
// runs this same test under LeakSanitizer).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "attention/serialize.hpp"
#include "session_fixtures.hpp"

using namespace attn;
using namespace attn::edits;
using namespace attn::testing;

namespace {

// AddressSanitizer holds freed memory in quarantine, so the resident size grows whatever
// the code does: under it, LeakSanitizer checks for leaks instead of the size. (The sanitized
// build compiles this file without it, and says so by ATTNLAB_SANITIZED_BUILD.)
#if defined(__SANITIZE_ADDRESS__) || defined(ATTNLAB_SANITIZED_BUILD)
constexpr bool kResidentSizeMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kResidentSizeMeaningful = false;
#else
constexpr bool kResidentSizeMeaningful = true;
#endif
#else
constexpr bool kResidentSizeMeaningful = true;
#endif

constexpr float kInf = std::numeric_limits<float>::infinity();
const char* const kWords[] = {"the", "cat", "sat", "on", "a", "mat", "bank", "river", "it", "was", "tired", "\xC3\xA9t\xC3\xA9"};

struct Random {
    std::mt19937_64 engine;
    explicit Random(std::uint64_t seed) : engine(seed) {}
    int below(int n) { return n <= 0 ? 0 : static_cast<int>(engine() % static_cast<std::uint64_t>(n)); }
    bool chance(double p) { return std::uniform_real_distribution<double>(0.0, 1.0)(engine) < p; }
    float value() {
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(engine);
        if (u < 0.01) return std::numeric_limits<float>::quiet_NaN();  // typing NaN is allowed
        if (u < 0.02) return chance(0.5) ? kInf : -kInf;
        if (u < 0.03) return 1e38f;
        return static_cast<float>(std::normal_distribution<double>(0.0, 1.5)(engine));
    }
    std::string word() { return kWords[below(static_cast<int>(std::size(kWords)))]; }
};

MatrixId random_matrix(Random& r, const Scenario& s) {
    if (s.input == InputMode::Direct) {
        const MatrixId direct[] = {MatrixId::Q, MatrixId::K, MatrixId::V, MatrixId::WO};
        return direct[r.below(4)];
    }
    const MatrixId embedded[] = {MatrixId::X, MatrixId::X, MatrixId::X, MatrixId::SourceX, MatrixId::WQ,
                                 MatrixId::WK, MatrixId::WV, MatrixId::WO};
    return embedded[r.below(8)];
}

// One random edit; some do not fit the scenario (apply() refuses them) and some make it
// impossible to run (the session keeps the last good trace and says why).
Edit random_edit(Random& r, const Scenario& s) {
    const int n_q = query_count(s), n_k = key_count(s);
    const Side side = s.attention == AttentionKind::Cross && r.chance(0.3) ? Side::Source : Side::Target;
    const int tokens = side == Side::Source ? static_cast<int>(s.source.tokens.size()) : static_cast<int>(s.target.tokens.size());
    switch (r.below(20)) {
        case 0: case 1: case 2: case 3: case 4:
            return SetCell{random_matrix(r, s), r.below(std::max(n_q, 8) + 1), r.below(std::max(s.d_model, 4) + 1), r.value()};
        case 5: return tokens < 12 ? Edit(InsertToken{side, r.below(tokens + 1), r.word()}) : Edit(DeleteToken{side, r.below(tokens)});
        case 6: return tokens > 1 ? Edit(DeleteToken{side, r.below(tokens)}) : Edit(InsertToken{side, 0, r.word()});
        case 7: return MoveToken{side, r.below(tokens), r.below(tokens)};
        case 8: return RenameToken{side, r.below(tokens), r.word()};
        case 9: {
            const std::vector<int> choices = head_choices(s);
            return SetHeads{choices.empty() ? 1 : choices[static_cast<size_t>(r.below(static_cast<int>(choices.size())))]};
        }
        case 10: {
            const MaskKind kinds[] = {MaskKind::None, MaskKind::Causal, MaskKind::Padding, MaskKind::SlidingWindow, MaskKind::Custom};
            return SetMaskKind{kinds[r.below(5)]};
        }
        case 11: return SetWindow{1 + r.below(5)};
        case 12: return r.chance(0.5) ? Edit(SetPadding{side, r.below(tokens), r.chance(0.5)})
                                      : Edit(PaintMaskCell{r.below(n_q), r.below(n_k), r.chance(0.6)});
        case 13: {
            const float fills[] = {-kInf, -1e9f, -5.0f, 0.0f};
            return SetMaskedFill{fills[r.below(4)]};
        }
        case 14: return r.chance(0.5) ? Edit(SetScale{r.chance(0.5)}) : Edit(SetSoftmax{r.chance(0.8) ? SoftmaxKind::Stable : SoftmaxKind::Naive});
        case 15: {
            const PositionalEncoding kinds[] = {PositionalEncoding::None, PositionalEncoding::Sinusoidal, PositionalEncoding::Learned,
                                                PositionalEncoding::Rotary, PositionalEncoding::ALiBi};
            return SetPositional{kinds[r.below(5)]};
        }
        case 16: return SetAttention{r.chance(0.7) ? AttentionKind::Self : AttentionKind::Cross};
        case 17: {
            if (r.chance(0.5)) return SetBlock{r.chance(0.4)};
            // A design as the side bar offers them: a norm, where the norms stand, a feed-forward.
            // Layout 4 is OLMo 2's: the norms after each sublayer only.
            const int layout = r.below(5), norm = r.below(3), ffn = r.below(6);
            const Activation plain[] = {Activation::ReLU, Activation::GeluTanh, Activation::GeluErf, Activation::SiLU};
            return SetBlockDesign{norm == 0 ? NormKind::LayerNorm : NormKind::RMSNorm, norm == 2,
                                  layout == 0 ? NormPlacement::Post : NormPlacement::Pre, layout == 2, layout >= 3, ffn >= 4,
                                  ffn == 4 ? Activation::SiLU : ffn == 5 ? Activation::GeluTanh : plain[ffn],
                                  layout == 4 ? std::optional<bool>(false) : std::optional<bool>(true)};
        }
        case 18: return SetSeed{static_cast<std::uint64_t>(1 + r.below(1000))};
        default: {
            std::vector<std::string> sentence;
            for (int i = 1 + r.below(8); i > 0; --i) sentence.push_back(r.word());
            return SetTokens{side, sentence};
        }
    }
}

bool row_finite(const Matrix& m, Eigen::Index row) { return m.row(row).allFinite(); }

// The documented invariants of a trace that ran (docs/conventions.md: the fully masked row rule).
void check_consistent(const Session& session) {
    const Scenario& s = session.scenario;
    const Trace& t = session.trace;
    REQUIRE(t.ok);
    REQUIRE(t.n_queries == query_count(s));
    REQUIRE(t.n_keys == key_count(s));
    REQUIRE(static_cast<int>(t.head.size()) == t.heads);
    REQUIRE(t.visible.rows() == t.n_queries);
    REQUIRE(t.visible.cols() == t.n_keys);
    REQUIRE(t.concat.rows() == t.n_queries);
    REQUIRE(t.concat.cols() == t.heads * t.d_v);
    REQUIRE(t.output.rows() == t.n_queries);
    const bool minus_infinity = std::isinf(s.masked_fill) && s.masked_fill < 0;
    for (const HeadTrace& h : t.head) {
        REQUIRE(h.q.rows() == t.n_queries);
        REQUIRE(h.q.cols() == t.d_k);
        REQUIRE(h.k.rows() == t.n_keys);
        REQUIRE(h.k.cols() == t.d_k);
        REQUIRE(h.v.rows() == t.n_keys);
        REQUIRE(h.v.cols() == t.d_v);
        REQUIRE(h.scores.rows() == t.n_queries);
        REQUIRE(h.scores.cols() == t.n_keys);
        REQUIRE(h.weights.rows() == t.n_queries);
        REQUIRE(h.weights.cols() == t.n_keys);
        REQUIRE(h.output.rows() == t.n_queries);
        REQUIRE(h.output.cols() == t.d_v);
        for (Eigen::Index i = 0; i < t.n_queries; ++i) {
            if (!row_finite(h.weights, i)) {  // NaN/∞ reached this row: only from a non-finite input or an overflow
                REQUIRE((!t.non_finite_inputs.empty() || h.softmax_overflow || !h.scaled_scores.allFinite()));
                continue;
            }
            const bool fully_masked = !t.visible.row(i).any();
            const bool listed = std::find(h.fully_masked_rows.begin(), h.fully_masked_rows.end(), static_cast<int>(i)) != h.fully_masked_rows.end();
            REQUIRE(fully_masked == listed);
            if (fully_masked && minus_infinity) {
                REQUIRE(h.weights.row(i).isZero(0.0f));  // no distribution: all 0, output 0
                REQUIRE(h.output.row(i).isZero(0.0f));
                continue;
            }
            INFO("row " << i << " weights " << h.weights.row(i));
            REQUIRE(std::abs(h.weights.row(i).sum() - 1.0f) < 1e-4f);
            REQUIRE(h.weights.row(i).minCoeff() >= 0.0f);
            if (minus_infinity && !fully_masked)
                for (Eigen::Index j = 0; j < t.n_keys; ++j)
                    if (!t.visible(i, j)) REQUIRE(h.weights(i, j) == 0.0f);
        }
    }
}

// The trace the session shows equals a fresh run of its scenario (the incremental update
// after an embedding edit included).
void check_equals_fresh_run(const Session& session) {
    const Trace fresh = run(session.scenario);
    REQUIRE(fresh.ok);
    for (const std::string& name : matrix_names(fresh)) {
        const Matrix* a = find_matrix(session.trace, name);
        const Matrix& b = *find_matrix(fresh, name);
        INFO(name);
        REQUIRE(a != nullptr);
        REQUIRE(a->rows() == b.rows());
        REQUIRE(a->cols() == b.cols());
        for (Eigen::Index i = 0; i < b.size(); ++i) {
            const float x = a->data()[i], y = b.data()[i];
            if (std::isnan(x) || std::isnan(y)) {
                REQUIRE(std::isnan(x) == std::isnan(y));
            } else if (std::isinf(x) || std::isinf(y)) {
                REQUIRE(x == y);
            } else {
                REQUIRE(std::abs(x - y) <= 1e-4f * std::max(1.0f, std::abs(y)));
            }
        }
    }
}

long resident_kib() {
    std::ifstream statm("/proc/self/statm");
    long pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

// Sets every non-finite input cell back to a number now and then, so NaN does not stay
// for the rest of the run and the sums keep being checked.
void heal(Random& r, Session& session) {
    for (const NonFinite& n : session.trace.non_finite_inputs) {
        if (!r.chance(0.3)) continue;
        const MatrixId id = n.matrix == "X" ? MatrixId::X : n.matrix == "source X" ? MatrixId::SourceX : n.matrix == "W_Q" ? MatrixId::WQ
                          : n.matrix == "W_K" ? MatrixId::WK : n.matrix == "W_V" ? MatrixId::WV : n.matrix == "W_O" ? MatrixId::WO
                          : n.matrix == "Q" ? MatrixId::Q : n.matrix == "K" ? MatrixId::K : MatrixId::V;
        session.push(SetCell{id, n.cell.row, n.cell.col, 0.5f});
    }
}

}  // namespace

TEST_CASE("thousands of random edits and toggles keep the trace consistent and memory flat") {
    const int edits_per_start = 1500;
    int applied = 0, refused = 0, impossible = 0;
    std::vector<long> rss;
    const std::vector<Scenario> starts = {sentence_scenario(), preset_scenario("dot-product-3-tokens"),
                                          preset_scenario("cross-attention-translation"), preset_scenario("numpy-seed-42")};
    for (size_t start = 0; start < starts.size(); ++start) {
        Random r(1000 + start);
        Session session = ready(starts[start]);
        for (int i = 0; i < edits_per_start; ++i) {
            INFO("start " << start << ", edit " << i << ", scenario " << dump_json(scenario_to_json(session.scenario)));
            const double roll = std::uniform_real_distribution<double>(0.0, 1.0)(r.engine);
            if (roll < 0.05) session.request_undo();
            else if (roll < 0.08) session.request_redo();
            else session.push(random_edit(r, session.scenario));
            heal(r, session);
            const std::uint64_t revision = session.revision;
            update(session);
            if (session.revision == revision) ++refused;
            else ++applied;
            if (!session.errors.empty()) {  // the scenario cannot run: the last good trace stays, and why is said
                REQUIRE(session.trace.ok);
                REQUIRE_FALSE(validate(session.scenario, Detail::Full).empty());
                ++impossible;
                continue;
            }
            check_consistent(session);
            if (i % 25 == 0) check_equals_fresh_run(session);
        }
        rss.push_back(resident_kib());
    }
    INFO("applied " << applied << ", refused " << refused << ", impossible " << impossible);
    CHECK(applied > 3000);
    CHECK(impossible > 0);  // the walk did reach scenarios that cannot run, and came back
    // Memory: the later starts run as many edits as the first; their history and traces
    // replace the first's. Growth beyond a few MiB would be a leak of every edit.
    if (kResidentSizeMeaningful) CHECK(rss.back() - rss[1] < 32 * 1024);
}
