// Every input means something documented or is refused with a message: the block's
// weights, LayerNorm's γ and β, the projections' biases, padding in both input modes, the
// masks that need a size or a matrix; and the field-by-field scenario comparison that a new
// field cannot slip past. The block is checked against values computed here, in double,
// without the engine's own functions.
#include <catch2/catch.hpp>

#include <cmath>

#include "joined.hpp"
#include "attention/engine.hpp"
#include "tensor/random.hpp"
#include "tensor/reflect.hpp"
#include "attention/serialize.hpp"

using namespace attn;

namespace {

using testing::says;

// LayerNorm in double: γ·(x − mean)/√(var + ε) + β, biased variance.
Eigen::MatrixXd layer_norm_ref(const Eigen::MatrixXd& x, const Eigen::RowVectorXd& gamma, const Eigen::RowVectorXd& beta, double eps) {
    Eigen::MatrixXd out(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const double mean = x.row(i).mean();
        const double var = (x.row(i).array() - mean).square().mean();
        out.row(i) = ((x.row(i).array() - mean) / std::sqrt(var + eps)).matrix().cwiseProduct(gamma) + beta;
    }
    return out;
}

double gelu_ref(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

Eigen::MatrixXd d(const Matrix& m) { return m.cast<double>(); }
Eigen::RowVectorXd d(const Vector& v) { return v.cast<double>(); }

// Attention in double, one head, no mask but causal when asked: softmax(QKᵀ/√d)·V.
Eigen::MatrixXd attention_ref(const Eigen::MatrixXd& q, const Eigen::MatrixXd& k, const Eigen::MatrixXd& v, bool causal) {
    Eigen::MatrixXd s = q * k.transpose() / std::sqrt(static_cast<double>(q.cols()));
    for (Eigen::Index i = 0; i < s.rows(); ++i) {
        double m = -1e300;
        for (Eigen::Index j = 0; j < s.cols(); ++j)
            if (!causal || j <= i) m = std::max(m, s(i, j));
        double sum = 0;
        for (Eigen::Index j = 0; j < s.cols(); ++j) {
            s(i, j) = !causal || j <= i ? std::exp(s(i, j) - m) : 0.0;
            sum += s(i, j);
        }
        s.row(i) /= sum;
    }
    return s * v;
}

}  // namespace

TEST_CASE("a GPT-2 style pre-norm block with biases, γ, β and GELU matches a hand computation") {
    Scenario s;
    s.target.tokens = {"a", "b", "c", "d"};
    s.target.embeddings = normal_matrix(4, 6, 1);
    s.d_model = 6;
    s.heads = 1;
    s.mask = MaskKind::Causal;
    s.w_q = normal_matrix(6, 6, 2, 0.4f);
    s.w_k = normal_matrix(6, 6, 3, 0.4f);
    s.w_v = normal_matrix(6, 6, 4, 0.4f);
    s.w_o = normal_matrix(6, 6, 5, 0.4f);
    s.b_q = normal_matrix(1, 6, 6, 0.1f);
    s.b_k = normal_matrix(1, 6, 7, 0.1f);
    s.b_v = normal_matrix(1, 6, 8, 0.1f);
    s.b_o = normal_matrix(1, 6, 9, 0.1f);
    BlockOptions& b = s.block;
    b.residual = b.layer_norm = b.feed_forward = true;
    b.norm = NormPlacement::Pre;
    b.activation = Activation::GeluTanh;
    b.d_ff = 8;
    b.w_1 = normal_matrix(6, 8, 10, 0.4f);
    b.w_2 = normal_matrix(8, 6, 11, 0.4f);
    b.b_1 = normal_matrix(1, 8, 12, 0.1f);
    b.b_2 = normal_matrix(1, 6, 13, 0.1f);
    b.norm_1 = {normal_matrix(1, 6, 14, 0.2f).array() + 1.0f, normal_matrix(1, 6, 15, 0.1f)};
    b.norm_2 = {normal_matrix(1, 6, 16, 0.2f).array() + 1.0f, normal_matrix(1, 6, 17, 0.1f)};
    const Trace t = run(s);
    REQUIRE(t.ok);

    const Eigen::MatrixXd x = d(s.target.embeddings);
    const Eigen::MatrixXd ln1 = layer_norm_ref(x, d(b.norm_1.gamma), d(b.norm_1.beta), 1e-5);
    const Eigen::MatrixXd q = (ln1 * d(s.w_q)).rowwise() + d(s.b_q);
    const Eigen::MatrixXd k = (ln1 * d(s.w_k)).rowwise() + d(s.b_k);
    const Eigen::MatrixXd v = (ln1 * d(s.w_v)).rowwise() + d(s.b_v);
    const Eigen::MatrixXd attn = (attention_ref(q, k, v, true) * d(s.w_o)).rowwise() + d(s.b_o);
    const Eigen::MatrixXd h = x + attn;
    const Eigen::MatrixXd ln2 = layer_norm_ref(h, d(b.norm_2.gamma), d(b.norm_2.beta), 1e-5);
    Eigen::MatrixXd hidden = (ln2 * d(b.w_1)).rowwise() + d(b.b_1);
    hidden = hidden.unaryExpr(&gelu_ref);
    const Eigen::MatrixXd out = h + ((hidden * d(b.w_2)).rowwise() + d(b.b_2));

    CHECK((d(t.block.norm1) - ln1).cwiseAbs().maxCoeff() < 1e-5);  // attention read LN₁(x)
    CHECK((d(t.head[0].q) - q).cwiseAbs().maxCoeff() < 1e-5);
    CHECK((d(t.output) - attn).cwiseAbs().maxCoeff() < 1e-5);
    CHECK((d(t.block.norm2) - ln2).cwiseAbs().maxCoeff() < 1e-5);
    CHECK((d(t.block.output) - out).cwiseAbs().maxCoeff() < 1e-4);
    CHECK(&attention_input(t) == &t.block.norm1);

    // The post-norm block of the 2017 paper, ReLU, with the same weights: LN(x + sublayer(x)).
    b.norm = NormPlacement::Post;
    b.activation = Activation::ReLU;
    const Trace post = run(s);
    REQUIRE(post.ok);
    const Eigen::MatrixXd qp = (x * d(s.w_q)).rowwise() + d(s.b_q);
    const Eigen::MatrixXd kp = (x * d(s.w_k)).rowwise() + d(s.b_k);
    const Eigen::MatrixXd vp = (x * d(s.w_v)).rowwise() + d(s.b_v);
    const Eigen::MatrixXd attn_p = (attention_ref(qp, kp, vp, true) * d(s.w_o)).rowwise() + d(s.b_o);
    const Eigen::MatrixXd n1 = layer_norm_ref(x + attn_p, d(b.norm_1.gamma), d(b.norm_1.beta), 1e-5);
    const Eigen::MatrixXd hid = ((n1 * d(b.w_1)).rowwise() + d(b.b_1)).cwiseMax(0.0);
    const Eigen::MatrixXd out_p = layer_norm_ref(n1 + ((hid * d(b.w_2)).rowwise() + d(b.b_2)), d(b.norm_2.gamma), d(b.norm_2.beta), 1e-5);
    CHECK((d(post.block.output) - out_p).cwiseAbs().maxCoeff() < 1e-4);
    CHECK(post.block.norm2.size() == 0);
}

TEST_CASE("the block's weights, γ, β and the biases go through a scenario file and the trace JSON") {
    Scenario s;
    s.target.tokens = {"x", "y"};
    s.d_model = 4;
    s.b_q = normal_matrix(1, 4, 1);
    s.b_o = normal_matrix(1, 4, 2);
    s.block.feed_forward = s.block.layer_norm = s.block.residual = true;
    s.block.d_ff = 3;
    s.block.norm = NormPlacement::Pre;
    s.block.activation = Activation::GeluTanh;
    s.block.epsilon = 1e-6f;
    s.block.w_1 = normal_matrix(4, 3, 3);
    s.block.b_2 = normal_matrix(1, 4, 4);
    s.block.norm_2.gamma = normal_matrix(1, 4, 5);
    const ScenarioLoad back = scenario_from_json(scenario_to_json(s), "round trip");
    REQUIRE(back.errors.empty());
    CHECK(reflect::equal(*back.scenario, s));
    const nlohmann::json trace = trace_to_json(run(s));
    CHECK(trace["block"]["w_1"].size() == 4);
    CHECK(trace["block"]["gamma_2"].size() == 4);  // a vector: one list
    CHECK(trace["b_q"].size() == 4);
    CHECK(trace["settings"]["block"]["norm"] == "pre");
    CHECK(trace["settings"]["block"]["activation"] == "gelu");
}

TEST_CASE("inputs that would be ignored or defaulted are refused with a message") {
    auto load = [](const std::string& text) { return scenario_from_text(text, "f.json"); };
    SECTION("a window mask needs its size, a custom mask its matrix") {
        CHECK(says(load(R"({"tokens": ["a", "b"], "mask": "window"})").errors, "\"window\" needs the window size"));
        CHECK(says(load(R"({"tokens": ["a", "b"], "mask": "custom"})").errors, "needs the mask itself"));
        CHECK(load(R"({"tokens": ["a", "b"], "mask": "window", "window": 1})").errors.empty());
    }
    SECTION("padding lists of the wrong length, in both modes") {
        const auto shorter = load(R"({"tokens": ["a", "b", "c"], "padding": [false, true], "mask": "padding"})");
        REQUIRE(shorter.scenario);
        CHECK(says(validate(*shorter.scenario), "2 padding flags for 3 tokens"));
        const auto direct = load(R"({"q": [[1, 0]], "k": [[1, 0], [0, 1], [1, 1]], "v": [[1], [2], [3]], "mask": "padding", "padding": [false, true]})");
        REQUIRE(direct.scenario);
        CHECK(says(validate(*direct.scenario), "padding has 2 flags for 3 rows of k"));
    }
    SECTION("padding in direct mode hides those keys") {
        const auto direct = load(R"({"q": [[1, 0]], "k": [[1, 0], [0, 1], [1, 1]], "v": [[1], [2], [3]], "mask": "padding", "padding": [false, true, false]})");
        REQUIRE(direct.scenario);
        const Trace t = run(*direct.scenario);
        REQUIRE(t.ok);
        CHECK(t.head[0].weights(0, 1) == 0.0f);
        CHECK(t.head[0].weights(0, 0) > 0.0f);
        const auto again = scenario_from_json(scenario_to_json(*direct.scenario), "again");
        REQUIRE(again.scenario);
        CHECK(again.scenario->target.padding == std::vector<bool>({false, true, false}));
    }
    SECTION("biases for direct input, a block of the wrong shape, a bad ε") {
        CHECK(says(load(R"({"q": [[1]], "k": [[1]], "v": [[1]], "b_q": [1]})").errors, "not used with direct q, k, v input"));
        Scenario s;
        s.target.tokens = {"a"};
        s.d_model = 4;
        s.block.feed_forward = true;
        s.block.w_1 = Matrix::Zero(4, 5);  // d_ff defaults to 16
        s.block.epsilon = 0.0f;
        s.b_v = Vector::Zero(3);
        const auto errors = validate(s);
        CHECK(says(errors, "block W_1 is 4×5, expected 4×16"));
        CHECK(says(errors, "block epsilon"));
        CHECK(says(errors, "b_v has 3 numbers, expected 4"));
    }
}

namespace {

// A struct with one more field than Scenario has: what a developer adding a field makes.
struct ScenarioWithNewField {
    Scenario scenario;
    int new_field = 0;
};

// Changes the field in place (some value it did not hold).
template <typename T>
void change(T& x) {
    if constexpr (std::is_same_v<T, bool>) x = !x;
    else if constexpr (std::is_floating_point_v<T>) x = std::isfinite(x) ? x + 1.5f : 0.0f;
    else if constexpr (std::is_enum_v<T>) x = static_cast<T>((static_cast<int>(x) + 1) % 2);
    else if constexpr (std::is_arithmetic_v<T>) x = x + 1;
    else if constexpr (std::is_same_v<T, std::string>) x += "!";
    else if constexpr (std::is_same_v<T, SharedMatrix>) x = Matrix::Zero(x.rows() + 1, std::max<Eigen::Index>(1, x.cols()));
    else if constexpr (reflect::detail::is_eigen<T>::value) {
        // A fixed-row Eigen type (a Vector is 1×n) grows in its columns.
        if constexpr (T::RowsAtCompileTime == 1) x.resize(1, x.cols() + 1);
        else x.resize(x.rows() + 1, std::max<Eigen::Index>(1, x.cols()));
    }
    else if constexpr (reflect::detail::is_vector<T>::value) x.push_back(typename T::value_type{});
    else {
        int first = 0;  // an aggregate: change its first field
        reflect::for_each_field_pair(x, x, [&](auto& a, auto&) { if (first++ == 0) change(a); });
    }
}

}  // namespace

TEST_CASE("scenario comparison: every field is compared, and a new one is too") {
    constexpr int fields = reflect::field_count<Scenario>();
    CHECK(fields >= 29);
    // Each field of Scenario, changed on its own, makes the two differ.
    for (int index = 0; index < fields; ++index) {
        Scenario a, b;
        int i = 0;
        reflect::for_each_field_pair(b, b, [&](auto& field, auto&) {
            if (i++ == index) change(field);
        });
        INFO("field " << index);
        CHECK_FALSE(reflect::equal(a, b));
        CHECK(reflect::equal(a, a));
    }
    // A field added later (here: around Scenario) is compared without anyone listing it.
    ScenarioWithNewField x, y;
    y.new_field = 1;
    CHECK_FALSE(reflect::equal(x, y));
    // The field the incremental path skips: only that one.
    Scenario edited;
    edited.target.embeddings = Matrix::Ones(2, 8);
    const Scenario base;
    CHECK(reflect::equal(base, edited, &base.target.embeddings));
    edited.block.b_1 = Vector::Ones(3);
    CHECK_FALSE(reflect::equal(base, edited, &base.target.embeddings));
}
