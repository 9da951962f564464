// GPT-2 as the family table opens it (model/hf/model.hpp), on checkpoints the tests write in
// the Hugging Face layout (model/gpt2/checkpoint.hpp) and open as the app does: checked against
// a forward pass written here with plain loops in double from the weights as written (no
// engine, no Eigen products), a hand-checkable case, Conv1D's (in, out) layout entry by entry,
// recomputing from a middle layer, a refused long input and the top 5; heads ablated against a
// checkpoint written with their rows zeroed, and two heads' weights compared.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <numeric>

#include "bad_model_catalogue.hpp"
#include "attention/engine.hpp"
#include "model/weights_comparison.hpp"
#include "model/gpt2/checkpoint.hpp"
#include "model/hf/model.hpp"
#include "model/language_model.hpp"
#include "model/stack.hpp"
#include "joined.hpp"
#include "written_gpt2.hpp"
#include "tensor/random.hpp"

using namespace attn;
using namespace attn::gpt2;
using attn::hf::OpenedModel;
using attn::stack::HeadSet;
using attn::stack::layer_output;
using ForwardPass = attn::ModelPass;
using attn::testing::joined;
using Catch::Matchers::Contains;

namespace {

using Rows = std::vector<std::vector<double>>;  // [row][column]

Tokenizer three_merge_tokenizer() {
    std::vector<std::string> errors;
    auto t = Tokenizer::from_merges({{"\xC4\xA0", "t"}, {"h", "e"}, {"\xC4\xA0t", "he"}}, errors);
    REQUIRE(t);
    return *t;
}

Config config_of(int layers, int heads, int d, int d_ff) {
    Config c;
    c.n_layer = layers;
    c.n_head = heads;
    c.n_embd = d;
    c.n_positions = 16;
    c.vocab_size = 260;
    c.n_inner = d_ff;
    c.layer_norm_epsilon = 1e-5f;
    return c;
}

// Every weight random, γ and β too, so a swapped or transposed tensor shows.
Checkpoint random_everything(const Config& config, std::uint64_t seed) {
    Checkpoint c = random_checkpoint(config, seed, three_merge_tokenizer());
    std::uint64_t s = seed * 1000;
    for (auto& layer : c.layers)
        for (Vector* v : {&layer.ln_1_gamma, &layer.ln_1_beta, &layer.ln_2_gamma, &layer.ln_2_beta})
            *v = normal_matrix(1, static_cast<int>(v->cols()), ++s, 0.5f) + Vector::Ones(v->cols());
    c.ln_f_gamma = normal_matrix(1, config.n_embd, ++s) + Vector::Ones(config.n_embd);
    c.ln_f_beta = normal_matrix(1, config.n_embd, ++s, 0.3f);
    // Larger projections than N(0, 0.02), so the attention is far from uniform.
    for (auto& layer : c.layers) {
        set_c_attn(layer, c_attn(layer) * 40.0f);
        layer.c_proj_w.edit() *= 20.0f;
        layer.c_fc_w.edit() *= 20.0f;
        layer.mlp_proj_w.edit() *= 20.0f;
    }
    c.wte.edit() *= 30.0f;
    c.wpe.edit() *= 30.0f;
    return c;
}

// Writes the checkpoint in the HF layout (F32: every value as it is) and opens it as the app
// does (written_gpt2_folder: the folder stays while the process runs).
OpenedModel opened(const Checkpoint& c, const std::string& tag) {
    hf::OpenedModelLoad load = hf::open_model(testing::written_gpt2_folder(c, tag));
    INFO(joined(load.errors));
    REQUIRE(load.model);
    return std::move(*load.model);
}

std::vector<int> encode(const OpenedModel& m, const std::string& text) {
    std::vector<std::string> errors;
    std::vector<int> ids = hf::encode_text(m, text, errors);
    INFO(joined(errors));
    REQUIRE(errors.empty());
    return ids;
}

ForwardPass forward(const OpenedModel& m, const std::vector<int>& ids, const stack::Ablation& ablated = {}) {
    return hf::forward_ids(m, ids, ablated);
}

// y = x·W + b with W stored (in, out), entry by entry.
Rows conv1d(const Rows& x, const Matrix& w, const Vector& b, int col_begin = 0, int cols = -1) {
    if (cols < 0) cols = static_cast<int>(w.cols());
    Rows y(x.size(), std::vector<double>(static_cast<size_t>(cols)));
    for (size_t i = 0; i < x.size(); ++i)
        for (int j = 0; j < cols; ++j) {
            double sum = b(col_begin + j);
            for (int k = 0; k < w.rows(); ++k) sum += x[i][static_cast<size_t>(k)] * w(k, col_begin + j);
            y[i][static_cast<size_t>(j)] = sum;
        }
    return y;
}

Rows layer_norm_ref(const Rows& x, const Vector& gamma, const Vector& beta, double eps) {
    Rows y = x;
    for (size_t i = 0; i < x.size(); ++i) {
        const double d = static_cast<double>(x[i].size());
        double mean = 0, var = 0;
        for (double v : x[i]) mean += v / d;
        for (double v : x[i]) var += (v - mean) * (v - mean) / d;  // biased
        for (size_t j = 0; j < x[i].size(); ++j)
            y[i][j] = gamma(static_cast<Eigen::Index>(j)) * (x[i][j] - mean) / std::sqrt(var + eps) + beta(static_cast<Eigen::Index>(j));
    }
    return y;
}

double gelu_new(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

struct Reference {
    std::vector<std::vector<Rows>> weights;  // [layer][head] (n × n)
    std::vector<Rows> outputs;                // [layer] the block's output
    std::vector<double> next_probabilities;   // softmax of the last row's logits
};

Reference reference_forward(const Checkpoint& c, const std::vector<int>& ids) {
    const int n = static_cast<int>(ids.size()), d = c.config.n_embd, H = c.config.n_head, dk = d / H;
    Rows x(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(d)));
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < d; ++j) x[static_cast<size_t>(i)][static_cast<size_t>(j)] = c.wte(ids[static_cast<size_t>(i)], j) + c.wpe(i, j);
    Reference r;
    for (const LayerWeights& w : c.layers) {
        const double eps = c.config.layer_norm_epsilon;
        const Rows a = layer_norm_ref(x, w.ln_1_gamma, w.ln_1_beta, eps);
        const Matrix c_attn_w = c_attn(w);
        const Rows q = conv1d(a, c_attn_w, w.c_attn_b, 0, d), k = conv1d(a, c_attn_w, w.c_attn_b, d, d),
                   v = conv1d(a, c_attn_w, w.c_attn_b, 2 * d, d);
        Rows concat(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(d), 0.0));
        std::vector<Rows> head_weights;
        for (int h = 0; h < H; ++h) {
            Rows p(static_cast<size_t>(n), std::vector<double>(static_cast<size_t>(n), 0.0));
            for (int i = 0; i < n; ++i) {
                std::vector<double> s(static_cast<size_t>(i + 1));  // causal: keys 0 … i
                for (int j = 0; j <= i; ++j) {
                    double dot = 0;
                    for (int t = 0; t < dk; ++t) dot += q[static_cast<size_t>(i)][static_cast<size_t>(h * dk + t)] * k[static_cast<size_t>(j)][static_cast<size_t>(h * dk + t)];
                    s[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(dk));
                }
                const double m = *std::max_element(s.begin(), s.end());
                double z = 0;
                for (double& e : s) z += (e = std::exp(e - m));
                for (int j = 0; j <= i; ++j) p[static_cast<size_t>(i)][static_cast<size_t>(j)] = s[static_cast<size_t>(j)] / z;
                for (int t = 0; t < dk; ++t) {
                    double o = 0;
                    for (int j = 0; j <= i; ++j) o += p[static_cast<size_t>(i)][static_cast<size_t>(j)] * v[static_cast<size_t>(j)][static_cast<size_t>(h * dk + t)];
                    concat[static_cast<size_t>(i)][static_cast<size_t>(h * dk + t)] = o;
                }
            }
            head_weights.push_back(p);
        }
        r.weights.push_back(head_weights);
        const Rows attn_out = conv1d(concat, w.c_proj_w, w.c_proj_b);
        Rows residual = x;
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < d; ++j) residual[static_cast<size_t>(i)][static_cast<size_t>(j)] += attn_out[static_cast<size_t>(i)][static_cast<size_t>(j)];
        Rows hidden = conv1d(layer_norm_ref(residual, w.ln_2_gamma, w.ln_2_beta, eps), w.c_fc_w, w.c_fc_b);
        for (auto& row : hidden)
            for (double& e : row) e = gelu_new(e);
        const Rows mlp = conv1d(hidden, w.mlp_proj_w, w.mlp_proj_b);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < d; ++j) x[static_cast<size_t>(i)][static_cast<size_t>(j)] = residual[static_cast<size_t>(i)][static_cast<size_t>(j)] + mlp[static_cast<size_t>(i)][static_cast<size_t>(j)];
        r.outputs.push_back(x);
    }
    const Rows h = layer_norm_ref({x.back()}, c.ln_f_gamma, c.ln_f_beta, c.config.layer_norm_epsilon);
    std::vector<double> logits(static_cast<size_t>(c.wte.rows()));
    for (size_t t = 0; t < logits.size(); ++t) {
        double dot = 0;  // h·wteᵀ: row t of wte is token t's vector
        for (int j = 0; j < d; ++j) dot += h[0][static_cast<size_t>(j)] * c.wte(static_cast<Eigen::Index>(t), j);
        logits[t] = dot;
    }
    const double m = *std::max_element(logits.begin(), logits.end());
    double z = 0;
    for (double l : logits) z += std::exp(l - m);
    for (double l : logits) r.next_probabilities.push_back(std::exp(l - m) / z);
    return r;
}

void check_against_reference(const ForwardPass& pass, const Reference& r, double tolerance) {
    REQUIRE(pass.layers.size() == r.outputs.size());
    for (size_t l = 0; l < r.outputs.size(); ++l) {
        const Trace& t = pass.layers[l];
        for (size_t h = 0; h < r.weights[l].size(); ++h)
            for (size_t i = 0; i < r.weights[l][h].size(); ++i)
                for (size_t j = 0; j < r.weights[l][h][i].size(); ++j) {
                    INFO("layer " << l + 1 << " head " << h + 1 << " weight (" << i + 1 << ", " << j + 1 << ")");
                    CHECK(t.head[h].weights(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) ==
                          Approx(r.weights[l][h][i][j]).margin(tolerance));
                }
        const Matrix& out = layer_output(t);
        for (size_t i = 0; i < r.outputs[l].size(); ++i)
            for (size_t j = 0; j < r.outputs[l][i].size(); ++j) {
                INFO("layer " << l + 1 << " output (" << i + 1 << ", " << j + 1 << ")");
                CHECK(out(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) ==
                      Approx(r.outputs[l][i][j]).margin(tolerance * (1 + std::abs(r.outputs[l][i][j]))));
            }
    }
}

void check_equal(const Matrix& a, const Matrix& b) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    CHECK(a == b);
}

}  // namespace

TEST_CASE("GPT-2 forward on a written checkpoint matches plain loops, layer by layer", "[gpt2][model]") {
    const Config config = config_of(2, 2, 8, 12);  // d_ff 12: not 4·d, not square
    const Checkpoint original = random_everything(config, 3);
    const OpenedModel m = opened(original, "test_gpt2_model_forward");
    const std::vector<int> ids = encode(m, " the cat, 42 h\xC3\xA9");
    REQUIRE(ids.size() >= 8);
    const ForwardPass pass = forward(m, ids);
    INFO(joined(pass.errors));
    REQUIRE(pass.ok);
    const Reference r = reference_forward(original, ids);  // from the weights before they were written
    check_against_reference(pass, r, 2e-4);
    // The attention is far from uniform: a transposed weight would change it.
    CHECK(pass.layers[1].head[0].weights.maxCoeff() > 0.6f);
    for (size_t t = 0; t < pass.next_token_top5.size(); ++t)
        CHECK(pass.next_token_top5[t].probability ==
              Approx(r.next_probabilities[static_cast<size_t>(pass.next_token_top5[t].id)]).margin(1e-5));

    SECTION("the traces are labelled with the tokens and layer 1 reads X + PE") {
        REQUIRE(pass.tokens.size() == ids.size());
        CHECK(pass.tokens[0] == "\xE2\x90\xA3" "the");  // "␣the" (Ġ t, he): a leading space made visible
        CHECK(pass.layers[0].query_tokens == pass.tokens);
        CHECK(pass.layers[1].key_tokens == pass.tokens);
        const Trace& first = pass.layers[0];
        CHECK(first.settings.positional == PositionalEncoding::Learned);
        for (size_t i = 0; i < ids.size(); ++i) {
            CHECK(Matrix(first.x.row(static_cast<Eigen::Index>(i))) == Matrix(original.wte->row(ids[i])));
            CHECK(Matrix(first.pe.row(static_cast<Eigen::Index>(i))) == Matrix(original.wpe->row(static_cast<Eigen::Index>(i))));
        }
        CHECK(first.x_pe.isApprox(first.x + first.pe));
        CHECK(pass.layers[1].settings.positional == PositionalEncoding::None);
        check_equal(pass.layers[1].x_pe, layer_output(pass.layers[0]));
        CHECK(first.settings.mask == MaskKind::Causal);
        CHECK(first.settings.block.norm == NormPlacement::Pre);
        CHECK(first.settings.block.activation == Activation::GeluTanh);
        CHECK(first.d_k == 4);
    }
}

TEST_CASE("GPT-2 hand-checkable layer: zero projections give uniform causal weights and V = b_v", "[gpt2][model]") {
    // c_attn = 0: Q = b_q, K = b_k for every row, so every visible score is equal and row i
    // spreads 1/i over its i keys (counted from 1); V = b_v in every row, so each head's output
    // is b_v's slice; c_proj_w = 0 and c_fc_w = mlp_proj_w = 0 leave
    //   output = x₀ + c_proj_b + mlp_proj_b.
    Config config = config_of(1, 2, 4, 6);
    Checkpoint c = random_checkpoint(config, 1, three_merge_tokenizer());
    LayerWeights& w = c.layers[0];
    set_c_attn(w, Matrix::Zero(4, 12));
    w.c_proj_w.edit().setZero();
    w.c_fc_w.edit().setZero();
    w.mlp_proj_w.edit().setZero();
    w.c_attn_b << 1, 2, 3, 4, 5, 6, 7, 8, 0.5f, -1, 2, 0.25f;
    w.c_proj_b << 1, 0, 0, -1;
    w.mlp_proj_b << 0, 2, 0, 0;
    const OpenedModel m = opened(c, "test_gpt2_model_hand");
    const std::vector<int> ids = {10, 20, 30};
    const ForwardPass pass = forward(m, ids);
    INFO(joined(pass.errors));
    REQUIRE(pass.ok);
    const Trace& t = pass.layers[0];
    for (int h = 0; h < 2; ++h) {
        const Matrix& p = t.head[static_cast<size_t>(h)].weights;
        CHECK(p(0, 0) == Approx(1.0));
        CHECK(p(0, 1) == 0.0f);
        CHECK(p(1, 0) == Approx(0.5));
        CHECK(p(1, 1) == Approx(0.5));
        CHECK(p(2, 2) == Approx(1.0 / 3));
    }
    // Head 1 owns V's columns 1–2 (b_v = 0.5, −1), head 2 columns 3–4 (2, 0.25).
    CHECK(t.head[0].output(2, 0) == Approx(0.5));
    CHECK(t.head[0].output(2, 1) == Approx(-1.0));
    CHECK(t.head[1].output(1, 0) == Approx(2.0));
    CHECK(t.head[1].output(1, 1) == Approx(0.25));
    // gelu_new(0) = 0 times a zero weight: the MLP adds its bias alone.
    const float expected[4] = {1, 2, 0, -1};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j)
            CHECK(t.block.output(i, j) == Approx(c.wte(ids[static_cast<size_t>(i)], j) + c.wpe(i, j) + expected[j]).margin(1e-6));
}

TEST_CASE("GPT-2's Conv1D weights are read (in, out): one entry moves one column to another", "[gpt2][model]") {
    // d = 4, d_ff = 6. Read as (out, in), each single entry below would move a different
    // column (or the (d × d_ff) weight would not even fit).
    Config config = config_of(1, 1, 4, 6);
    Checkpoint c = random_checkpoint(config, 2, three_merge_tokenizer());
    LayerWeights& w = c.layers[0];
    Matrix c_attn_w = Matrix::Zero(4, 12);
    w.c_attn_b.setZero();
    w.c_proj_w.edit().setZero();
    w.c_proj_b.setZero();
    w.c_fc_w.edit().setZero();
    w.c_fc_b.setZero();
    w.mlp_proj_w.edit().setZero();
    w.mlp_proj_b.setZero();
    c_attn_w(0, 4 + 2) = 1.0f;            // K's column 3 = LN₁(x)'s column 1
    c_attn_w(3, 8 + 1) = 1.0f;            // V's column 2 = LN₁(x)'s column 4
    set_c_attn(w, c_attn_w);
    w.c_proj_w.edit()(1, 3) = 1.0f;       // attention output column 4 = concat column 2
    w.c_fc_w.edit()(2, 5) = 1.0f;         // hidden column 6 = gelu(LN₂(r) column 3)
    w.mlp_proj_w.edit()(5, 0) = 1.0f;     // MLP output column 1 = hidden column 6
    const ForwardPass pass = forward(opened(c, "test_gpt2_model_conv1d"), {65, 66, 67, 68, 69});
    INFO(joined(pass.errors));
    REQUIRE(pass.ok);
    const Trace& t = pass.layers[0];
    const Matrix& a = t.block.norm1;  // LN₁(x₀) (n × d)
    for (int i = 0; i < 5; ++i) {
        INFO("row " << i + 1);
        for (int j = 0; j < 4; ++j) {
            CHECK(t.head[0].k(i, j) == Approx(j == 2 ? a(i, 0) : 0.0f).margin(1e-6));
            CHECK(t.head[0].v(i, j) == Approx(j == 1 ? a(i, 3) : 0.0f).margin(1e-6));
            CHECK(t.output(i, j) == Approx(j == 3 ? t.concat(i, 1) : 0.0f).margin(1e-6));
        }
        for (int j = 0; j < 6; ++j)
            CHECK(t.block.ffn_hidden(i, j) == Approx(j == 5 ? gelu_new(t.block.norm2(i, 2)) : 0.0).margin(1e-6));
        CHECK(t.block.ffn_output(i, 0) == Approx(t.block.ffn_hidden(i, 5)).margin(1e-6));
        CHECK(t.block.ffn_output(i, 1) == 0.0f);
    }
    CHECK(t.concat.col(1).cwiseAbs().maxCoeff() > 0.1f);  // the moved column is not all zero
}

TEST_CASE("GPT-2 recomputing from a middle layer equals a full run", "[gpt2][model]") {
    const Config config = config_of(3, 2, 8, 12);
    const Checkpoint original = random_everything(config, 7);
    const OpenedModel m = opened(original, "test_gpt2_model_recompute");
    const std::vector<int> ids = encode(m, "The animal");
    ForwardPass pass = forward(m, ids);
    REQUIRE(pass.ok);

    SECTION("unedited: the same numbers") {
        ForwardPass again = pass;
        REQUIRE(hf::recompute_from(m, 1, again));
        for (size_t l = 0; l < 3; ++l) check_equal(layer_output(again.layers[l]), layer_output(pass.layers[l]));
        CHECK(again.logits == pass.logits);
    }
    SECTION("a weight edited in layer 2 gives what a full run of the edited checkpoint gives") {
        Scenario edited = hf::layer_scenario(m, pass.tokens, 1, lm::layer_input(pass.layers[1]));
        edited.w_o.edit()(2, 5) += 3.0f;  // c_proj_w (in 3, out 6)
        edited.block.w_1.edit()(0, 7) = -2.0f;
        const Matrix layer_1_before = layer_output(pass.layers[0]);
        const float* layer_1_storage = pass.layers[0].block.output.data();
        REQUIRE(hf::recompute_from(m, 1, pass, &edited));
        CHECK(pass.layers[0].block.output.data() == layer_1_storage);  // layer 1 not recomputed
        check_equal(layer_output(pass.layers[0]), layer_1_before);

        Checkpoint changed = original;
        changed.layers[1].c_proj_w.edit()(2, 5) += 3.0f;
        changed.layers[1].c_fc_w.edit()(0, 7) = -2.0f;
        const ForwardPass full = forward(opened(changed, "test_gpt2_model_recompute_changed"), ids);
        REQUIRE(full.ok);
        for (size_t l = 0; l < 3; ++l) check_equal(layer_output(pass.layers[l]), layer_output(full.layers[l]));
        CHECK(pass.logits == full.logits);
        CHECK_FALSE(layer_output(pass.layers[2]).isApprox(layer_output(forward(m, ids).layers[2])));
        check_against_reference(pass, reference_forward(changed, ids), 2e-4);
    }
    SECTION("an edit of the stream entering layer 3 counts; an X that lost a row is refused") {
        Scenario edited = hf::layer_scenario(m, pass.tokens, 2, lm::layer_input(pass.layers[2]));
        edited.target.embeddings(1, 4) += 2.0f;
        REQUIRE(hf::recompute_from(m, 2, pass, &edited));
        CHECK(pass.layers[2].x_pe(1, 4) == edited.target.embeddings(1, 4));
        Trace by_hand = run(edited);
        check_equal(layer_output(pass.layers[2]), layer_output(by_hand));
        edited.target.embeddings.conservativeResize(edited.target.embeddings.rows() - 1, Eigen::NoChange);
        CHECK_FALSE(hf::recompute_from(m, 2, pass, &edited));
        CHECK_THAT(joined(pass.errors), Contains("layer 3: the edited scenario's X is 8 × 8; the model's stream is 9 × 8"));
    }
    SECTION("a pass run again into its own storage equals a fresh one") {
        const std::vector<int> other = encode(m, " the bank");
        REQUIRE(hf::forward_ids_into(m, other, pass));
        const ForwardPass fresh = forward(m, other);
        REQUIRE(pass.layers.size() == fresh.layers.size());
        for (size_t l = 0; l < 3; ++l) check_equal(layer_output(pass.layers[l]), layer_output(fresh.layers[l]));
        CHECK(pass.tokens == fresh.tokens);
        CHECK(pass.logits == fresh.logits);
        CHECK_FALSE(hf::forward_ids_into(m, std::vector<int>(17, 65), pass));
        CHECK_FALSE(pass.ok);
    }
    SECTION("a layer that does not exist is refused") {
        CHECK_FALSE(hf::recompute_from(m, 3, pass));
        CHECK_THAT(joined(pass.errors), Contains("layer 4"));
    }
}

TEST_CASE("GPT-2 refuses a text longer than n_positions, and an empty one", "[gpt2][model]") {
    const OpenedModel m = opened(random_checkpoint(config_of(1, 1, 4, 8), 1, three_merge_tokenizer()), "test_gpt2_model_refusals");
    CHECK(forward(m, std::vector<int>(16, 65)).ok);
    const ForwardPass long_pass = forward(m, std::vector<int>(17, 65));
    CHECK_FALSE(long_pass.ok);
    CHECK(long_pass.layers.empty());
    CHECK_THAT(joined(long_pass.errors), Contains("17 tokens") && Contains("n_positions = 16"));
    CHECK_THAT(joined(forward(m, {}).errors), Contains("no token"));
    CHECK_THAT(joined(forward(m, {65, 900}).errors), Contains("token 2 has id 900"));
    // 1 layer of 1 head, in the singular.
    CHECK_THAT(joined(forward(m, {65}, HeadSet{{0, 1}}).errors), Contains("the model has 1 layer of 1 head"));
}

TEST_CASE("GPT-2's top 5 next tokens: an independent softmax, best first, summing to at most 1", "[gpt2][model]") {
    const Checkpoint c = random_everything(config_of(1, 2, 8, 32), 11);
    const OpenedModel m = opened(c, "test_gpt2_model_top5");
    const std::vector<int> ids = encode(m, "the the the");
    const ForwardPass pass = forward(m, ids);
    REQUIRE(pass.ok);
    const Reference r = reference_forward(c, ids);
    std::vector<int> order(r.next_probabilities.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return r.next_probabilities[static_cast<size_t>(a)] > r.next_probabilities[static_cast<size_t>(b)]; });
    REQUIRE(pass.next_token_top5.size() == 5);
    double sum = 0;
    for (size_t i = 0; i < 5; ++i) {
        const TokenProbability& t = pass.next_token_top5[i];
        INFO("rank " << i + 1);
        CHECK(t.id == order[i]);
        CHECK(t.probability == Approx(r.next_probabilities[static_cast<size_t>(order[i])]).margin(1e-6));
        CHECK(t.token == hf::token_description(m, t.id, ids));
        if (i > 0) CHECK(t.probability <= pass.next_token_top5[i - 1].probability);
        sum += t.probability;
    }
    CHECK(sum <= 1.0 + 1e-6);
    CHECK(sum > 0.0);
}

TEST_CASE("a byte of a character in the top 5 says what it does after the sentence, and a control character shows its byte",
          "[gpt2][model]") {
    const OpenedModel m = opened(testing::tiny_checkpoint(), "test_gpt2_model_bytes");
    REQUIRE(m.tokenizer);
    // GPT-2's byte-level vocabulary: byte 0xA9 is the token "©", 0xC3 "Ã", 0xFF "ÿ".
    const std::optional<int> a9 = m.tokenizer->id("\xC2\xA9"), c3 = m.tokenizer->id("\xC3\x83"), ff = m.tokenizer->id("\xC3\xBF");
    REQUIRE(a9);
    REQUIRE(c3);
    REQUIRE(ff);
    const std::vector<int> caf = encode(m, " the caf\xC3\xA9");  // " the", " ", "c", "a", "f", 0xC3, 0xA9
    REQUIRE(caf.back() == *a9);
    const std::vector<int> before(caf.begin(), caf.end() - 1);  // "… caf" and the lead byte 0xC3
    CHECK(hf::token_description(m, *a9, before) == "<0xA9>, completes \"caf\xC3\xA9\"");
    CHECK(hf::token_description(m, *a9, {}) == "<0xA9>, part of a character");
    CHECK(hf::token_description(m, *c3, caf) == "<0xC3>, the first byte of a character");
    CHECK(hf::token_description(m, *ff, caf) == "<0xFF>, never part of UTF-8 text");
    // Whole characters: the label alone.
    CHECK(hf::token_description(m, 258, before) == "\xE2\x90\xA3the");
    CHECK(hf::token_label(m, *a9) == "<0xA9>");
    // A control character draws nothing: its byte is shown (0x18 is the token "Ę"); a tab is ⇥ (the token "ĉ").
    const std::optional<int> cancel = m.tokenizer->id("\xC4\x98"), tab = m.tokenizer->id("\xC4\x89");
    REQUIRE(cancel);
    REQUIRE(tab);
    CHECK(hf::token_label(m, *cancel) == "<0x18>");
    CHECK(hf::token_label(m, *tab) == "\xE2\x87\xA5");
}

// NaN or ∞ that arises after the layers (LN_f, the logits) spoils the top 5 without touching
// a trace (their probabilities may even print as numbers: the softmax clamps its exponent):
// the pass says where it arose, as precisely as one comparison per stage can.
TEST_CASE("GPT-2 NaN or ∞ after the last layer is recorded in the pass with the stage and the tensor it came from",
          "[gpt2][model][non-finite]") {
    struct Fault {
        std::string item;
        std::function<void(Checkpoint&)> spoil;
        std::string stage;                  // empty: every value stays finite
        std::vector<std::string> says;
    };
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const std::vector<Fault> faults = {
        {"nothing spoiled", [](Checkpoint&) {}, "", {}},
        {"NaN in ln_f's γ", [&](Checkpoint& c) { c.ln_f_gamma(3) = nan; }, "ln_f", {"ln_f.weight[3] is nan"}},
        {"∞ in ln_f's β", [&](Checkpoint& c) { c.ln_f_beta(5) = -inf; }, "ln_f", {"ln_f.bias[5] is -inf"}},
        {"γ of 3e38: LN_f overflows from finite values", [](Checkpoint& c) { c.ln_f_gamma.setConstant(3e38f); }, "ln_f",
         {"from finite values", "overflowed"}},
        {"NaN in a row of wte no token of the sentence uses (the padding row)", [&](Checkpoint& c) { c.wte.edit()(259, 2) = nan; },
         "the logits", {"logit for id 259 is nan", "wte.weight[259, 2] = nan", "LM head"}},
        {"∞ in an unused row of wte", [&](Checkpoint& c) { c.wte.edit()(120, 0) = inf; }, "the logits",
         {"logit for id 120 ('", "wte.weight[120, 0] = inf"}},
        {"a finite row of wte at 3e38 that overflows in the logits", [](Checkpoint& c) { c.wte.edit().row(120).setConstant(3e38f); },
         "the logits", {"logit for id 120", "from finite values", "beyond the float range"}},
        {"NaN in a row of wte a token uses: layer 1 carries it", [&](Checkpoint& c) { c.wte.edit()(66, 1) = nan; }, "layer 1",
         {"its output holds nan", "from the input X("}},
    };
    const std::vector<int> ids = {258, 66, 64, 83};  // "␣the c a t": no id 120, no 259
    const OpenedModel repaired = opened(testing::tiny_checkpoint(), "test_gpt2_model_repaired");
    for (const Fault& fault : faults) {
        INFO(fault.item);
        Checkpoint c = testing::tiny_checkpoint();
        fault.spoil(c);
        const OpenedModel m = opened(c, "test_gpt2_model_non_finite");
        const ForwardPass pass = forward(m, ids);
        REQUIRE(pass.ok);
        CHECK(pass.non_finite.stage == fault.stage);
        for (const std::string& fragment : fault.says) CHECK_THAT(pass.non_finite.origin, Contains(fragment));
        REQUIRE(pass.next_token_top5.size() == 5);
        if (fault.stage.empty()) {
            CHECK_FALSE(pass.non_finite.any());
            for (const TokenProbability& t : pass.next_token_top5) CHECK(std::isfinite(t.probability));
            continue;
        }
        // Recomputing from the last layer finds the same; a repaired checkpoint clears it.
        ForwardPass again = pass;
        REQUIRE(hf::recompute_from(m, 1, again));
        CHECK(again.non_finite.sentence() == pass.non_finite.sentence());
        REQUIRE(hf::forward_ids_into(repaired, ids, again));
        CHECK_FALSE(again.non_finite.any());
    }
}

// A finite weight near the float range in a row the sentence never uses: its logit is either
// the exact sum (computed here in double) or, where that sum is beyond float32, reported as
// the overflow it is (exit 5 on the command line), never a top 5 that looks fine.
TEST_CASE("GPT-2: a 3e38 in one cell of an unused row of wte gives its exact logit or a reported overflow", "[gpt2][model][non-finite]") {
    const std::vector<int> ids = {258, 66, 64, 83};
    int overflowed = 0, finite = 0;
    for (int column = 0; column < testing::tiny_config().n_embd; ++column) {
        INFO("wte[259, " << column << "] = 3e38");
        Checkpoint c = testing::tiny_checkpoint();
        c.wte.edit()(259, column) = 3e38f;
        const ForwardPass pass = forward(opened(c, "test_gpt2_model_overflow"), ids);
        REQUIRE(pass.ok);
        const Eigen::Index last = pass.final_output.rows() - 1;
        double exact = 0.0;
        for (Eigen::Index j = 0; j < pass.final_output.cols(); ++j)
            exact += static_cast<double>(pass.final_output(last, j)) * static_cast<double>(c.wte(259, j));
        if (std::abs(exact) > static_cast<double>(std::numeric_limits<float>::max())) {
            ++overflowed;
            CHECK(pass.non_finite.stage == "the logits");
            CHECK_THAT(pass.non_finite.origin, Contains("id 259"));
        } else {
            ++finite;
            CHECK(pass.logits(0, 259) == Approx(exact).epsilon(1e-5));
        }
    }
    CHECK(overflowed + finite == testing::tiny_config().n_embd);
}

// [SECTION] Ablation and comparison

namespace {

// The checkpoint with head h of layer ℓ's rows of c_proj_w zeroed, as a file would hold it.
Checkpoint with_zeroed_rows(Checkpoint c, int layer, int head) {
    const int d_k = c.config.n_embd / c.config.n_head;
    c.layers[static_cast<size_t>(layer)].c_proj_w.edit().middleRows(head * d_k, d_k).setZero();
    return c;
}

void check_close(const Matrix& a, const Matrix& b, double tolerance) {
    REQUIRE(a.rows() == b.rows());
    REQUIRE(a.cols() == b.cols());
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j) {
            INFO("(" << i + 1 << ", " << j + 1 << ")");
            CHECK(a(i, j) == Approx(b(i, j)).margin(tolerance * (1 + std::abs(b(i, j)))));
        }
}

}  // namespace

TEST_CASE("GPT-2 with a head ablated equals a checkpoint written with that head's c_proj rows zeroed", "[gpt2][model][ablation]") {
    const Config config = config_of(3, 2, 8, 12);
    const Checkpoint original = random_everything(config, 21);
    const OpenedModel m = opened(original, "test_gpt2_model_ablation");
    // Written to its own folder with rows 4–7 (head 2 of layer 2) of h.1.attn.c_proj.weight zero.
    const OpenedModel zeroed = opened(with_zeroed_rows(original, 1, 1), "test_gpt2_model_ablation_zeroed");
    REQUIRE(zeroed.weights.layers[1].w_o->middleRows(4, 4).isZero(0.0f));
    REQUIRE_FALSE(m.weights.layers[1].w_o->middleRows(4, 4).isZero(0.0f));
    const std::vector<int> ids = encode(m, " the cat, 42");

    const ForwardPass intact = forward(m, ids);
    const ForwardPass ablated = forward(m, ids, HeadSet{{1, 1}});
    const ForwardPass written = forward(zeroed, ids);
    INFO(joined(ablated.errors));
    REQUIRE(intact.ok);
    REQUIRE(ablated.ok);
    REQUIRE(written.ok);
    CHECK(ablated.ablated.heads == HeadSet{{1, 1}});
    CHECK(stack::ablated_in_layer(HeadSet{{0, 1}, {1, 0}, {1, 1}, {2, 0}}, 1) == 2);
    CHECK(stack::ablated_in_layer(HeadSet{{0, 1}, {2, 0}}, 1) == 0);
    // Tolerance: 1e-5 relative on every layer's output, weight and logit (the same float
    // operations run, so they agree far closer than this).
    for (size_t l = 0; l < 3; ++l) {
        INFO("layer " << l + 1);
        check_close(layer_output(ablated.layers[l]), layer_output(written.layers[l]), 1e-5);
        for (size_t h = 0; h < 2; ++h) check_close(ablated.layers[l].head[h].weights, written.layers[l].head[h].weights, 1e-5);
    }
    check_close(ablated.logits, written.logits, 1e-5);
    // The scenario the layer ran holds the zero rows, and only those.
    const Scenario s = hf::layer_scenario(m, ablated.tokens, 1, lm::layer_input(ablated.layers[1]), ablated.ablated);
    CHECK(s.w_o->middleRows(4, 4).isZero(0.0f));
    CHECK(s.w_o->middleRows(0, 4) == m.weights.layers[1].w_o->middleRows(0, 4));
    CHECK(hf::layer_scenario(m, ablated.tokens, 2, lm::layer_input(ablated.layers[2]), ablated.ablated).w_o == m.weights.layers[2].w_o);
    // And the plain-loop reference of the zeroed weights agrees.
    check_against_reference(ablated, reference_forward(with_zeroed_rows(original, 1, 1), ids), 2e-4);

    SECTION("the ablation changes what comes after it, not what comes before") {
        check_equal(layer_output(ablated.layers[0]), layer_output(intact.layers[0]));
        CHECK(ablated.layers[1].head[1].weights == intact.layers[1].head[1].weights);  // its pattern is still computed
        CHECK((layer_output(ablated.layers[1]) - layer_output(intact.layers[1])).cwiseAbs().maxCoeff() > 1e-2f);
        CHECK((ablated.layers[2].head[0].weights - intact.layers[2].head[0].weights).cwiseAbs().maxCoeff() > 1e-4f);
        CHECK((ablated.logits - intact.logits).cwiseAbs().maxCoeff() > 1e-3f);
    }
    SECTION("a head the model does not have is refused") {
        const ForwardPass bad = forward(m, ids, HeadSet{{3, 0}});
        CHECK_FALSE(bad.ok);
        CHECK_THAT(joined(bad.errors), Contains("the ablated head 1 of layer 4 does not exist: the model has 3 layers of 2 heads"));
        CHECK_THAT(joined(forward(m, ids, HeadSet{{0, 2}}).errors), Contains("head 3 of layer 1"));
    }
}

TEST_CASE("GPT-2 passes share the opened weights: an edit or an ablation copies only the matrix it changes", "[gpt2][model][memory]") {
    const OpenedModel m = opened(random_everything(config_of(3, 2, 8, 12), 23), "test_gpt2_model_shared");
    const std::vector<int> ids = encode(m, " the cat");
    const ForwardPass pass = forward(m, ids, HeadSet{{1, 0}});
    INFO(joined(pass.errors));
    REQUIRE(pass.ok);
    for (size_t l = 0; l < 3; ++l) {
        INFO("layer " << l + 1);
        const Trace& t = pass.layers[l];
        const hf::LayerWeights& w = m.weights.layers[l];
        CHECK(t.w_q.shares(w.w_q));
        CHECK(t.w_k.shares(w.w_k));
        CHECK(t.w_v.shares(w.w_v));
        CHECK(t.block.w_1.shares(w.w_up));
        CHECK(t.block.w_2.shares(w.w_down));
        // W_O: the ablated layer ran its own copy with head 1's rows zeroed; the others share.
        CHECK(t.w_o.shares(w.w_o) == (l != 1));
        // A drawing of a weight is named by its content: the opened model's version, in every
        // pass that shares it; an activation has none.
        CHECK(weight_version(t, &t.w_q.get()) == w.w_q.version());
        CHECK(weight_version(t, &t.block.w_1.get()) == w.w_up.version());
        CHECK(weight_version(t, &t.x_pe) == 0);
    }
    CHECK(forward(m, ids).layers[0].w_k.version() == pass.layers[0].w_k.version());
    CHECK(pass.layers[1].w_o.version() != m.weights.layers[1].w_o.version());
    CHECK(pass.layers[1].w_o->topRows(4).isZero(0.0f));
    CHECK_FALSE(m.weights.layers[1].w_o->topRows(4).isZero(0.0f));

    // An edit in the pipeline: the scenario's W_V becomes its own; the opened model keeps its
    // value, and every other weight of the scenario is still the model's.
    const hf::LayerWeights& w = m.weights.layers[2];
    Scenario edited = hf::layer_scenario(m, pass.tokens, 2, lm::layer_input(pass.layers[2]));
    const float before = w.w_v(0, 1);
    edited.w_v.edit()(0, 1) = before + 1.0f;
    CHECK(w.w_v(0, 1) == before);
    CHECK_FALSE(edited.w_v.shares(w.w_v));
    CHECK(edited.w_v.version() != w.w_v.version());
    CHECK(edited.w_q.shares(w.w_q));
    CHECK(edited.block.w_1.shares(w.w_up));
    // A copy of a scenario shares its matrices; editing the copy leaves the original as it was.
    Scenario copy = edited;
    CHECK(copy.w_v.shares(edited.w_v));
    copy.w_v.edit()(0, 1) = 7.0f;
    CHECK(edited.w_v(0, 1) == before + 1.0f);
    CHECK(copy.w_v(0, 1) == 7.0f);
}

TEST_CASE("GPT-2 ablation toggled on a pass: recompute_from equals a full forward with the ablation", "[gpt2][model][ablation]") {
    const Config config = config_of(3, 2, 8, 12);
    const Checkpoint original = random_everything(config, 23);
    const OpenedModel m = opened(original, "test_gpt2_model_ablation_toggle");
    const std::vector<int> ids = encode(m, "The animal");
    ForwardPass pass = forward(m, ids);
    REQUIRE(pass.ok);
    const ForwardPass intact = pass;

    // Head 1 of layer 3, then head 2 of layer 2: each recomputed from its own layer.
    pass.ablated.heads.insert({2, 0});
    const float* layer_2_storage = pass.layers[1].block.output.data();
    REQUIRE(hf::recompute_from(m, 2, pass));
    CHECK(pass.layers[1].block.output.data() == layer_2_storage);  // before the change: not recomputed
    const ForwardPass one = forward(m, ids, HeadSet{{2, 0}});
    for (size_t l = 0; l < 3; ++l) check_equal(layer_output(pass.layers[l]), layer_output(one.layers[l]));
    CHECK(pass.logits == one.logits);
    CHECK_FALSE(pass.logits == intact.logits);

    pass.ablated.heads.insert({1, 1});
    REQUIRE(hf::recompute_from(m, 1, pass));
    const ForwardPass two = forward(m, ids, HeadSet{{1, 1}, {2, 0}});
    for (size_t l = 0; l < 3; ++l) check_equal(layer_output(pass.layers[l]), layer_output(two.layers[l]));
    CHECK(pass.layers[2].head[0].weights == two.layers[2].head[0].weights);
    CHECK(pass.logits == two.logits);
    for (size_t t = 0; t < 5; ++t) CHECK(pass.next_token_top5[t].id == two.next_token_top5[t].id);

    SECTION("toggled off again: the intact model's numbers") {
        pass.ablated = {};
        REQUIRE(hf::recompute_from(m, 1, pass));
        for (size_t l = 0; l < 3; ++l) check_equal(layer_output(pass.layers[l]), layer_output(intact.layers[l]));
        CHECK(pass.logits == intact.logits);
    }
    SECTION("an edited layer keeps its ablated heads at zero, whatever the edit") {
        Scenario edited = hf::layer_scenario(m, pass.tokens, 1, lm::layer_input(pass.layers[1]));  // rows not zeroed
        edited.block.w_1.edit()(0, 3) = 1.5f;
        REQUIRE(hf::recompute_from(m, 1, pass, &edited));
        Checkpoint changed = original;
        changed.layers[1].c_fc_w.edit()(0, 3) = 1.5f;
        const ForwardPass full = forward(opened(changed, "test_gpt2_model_ablation_toggle_changed"), ids, HeadSet{{1, 1}, {2, 0}});
        for (size_t l = 0; l < 3; ++l) check_equal(layer_output(pass.layers[l]), layer_output(full.layers[l]));
        CHECK(pass.logits == full.logits);
    }
    SECTION("forward_ids_into keeps the pass's ablation for a new sentence") {
        const std::vector<int> other = encode(m, " the bank");
        REQUIRE(hf::forward_ids_into(m, other, pass));
        CHECK(pass.logits == forward(m, other, HeadSet{{1, 1}, {2, 0}}).logits);
    }
}

TEST_CASE("GPT-2 weights compared: B − A of two heads and of two sentences, or why there is none", "[gpt2][model][compare]") {
    const Config config = config_of(2, 2, 8, 12);
    const Checkpoint original = random_everything(config, 5);
    const OpenedModel m = opened(original, "test_gpt2_model_compare");
    const std::vector<int> ids = encode(m, " the cat");
    const ForwardPass pass = forward(m, ids);
    REQUIRE(pass.ok);
    const Reference r = reference_forward(original, ids);
    const int n = static_cast<int>(ids.size());

    SECTION("two heads on one sentence: B − A against the plain-loop weights") {
        const WeightsComparison cmp = compare_weights(pass, {0, 1}, pass, {1, 0});
        REQUIRE(cmp.ok);
        REQUIRE(cmp.has_difference);
        CHECK(cmp.message.empty());
        CHECK(cmp.a == &pass.layers[0].head[1].weights);
        CHECK(cmp.b == &pass.layers[1].head[0].weights);
        REQUIRE(cmp.difference.rows() == n);
        double largest = -1;
        int at_row = -1, at_col = -1;
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
                const double expected = r.weights[1][0][static_cast<size_t>(i)][static_cast<size_t>(j)] -
                                        r.weights[0][1][static_cast<size_t>(i)][static_cast<size_t>(j)];
                INFO("(" << i + 1 << ", " << j + 1 << ")");
                CHECK(cmp.difference(i, j) == Approx(expected).margin(2e-4));
                if (std::abs(expected) > largest) {
                    largest = std::abs(expected);
                    at_row = i;
                    at_col = j;
                }
            }
        CHECK(cmp.max_abs == Approx(largest).margin(2e-4));
        // Where it is (a row's weights sum to 1 in both, so its largest change may be tied).
        REQUIRE(cmp.max_row >= 0);
        CHECK(std::abs(r.weights[1][0][static_cast<size_t>(cmp.max_row)][static_cast<size_t>(cmp.max_col)] -
                       r.weights[0][1][static_cast<size_t>(cmp.max_row)][static_cast<size_t>(cmp.max_col)]) ==
              Approx(largest).margin(2e-4));
        CHECK(std::abs(cmp.difference(at_row, at_col)) == Approx(cmp.max_abs).margin(2e-4));
        CHECK(largest > 0.05);  // the two heads do differ
        CHECK(cmp.tokens == pass.tokens);
        CHECK(cmp.differing_tokens == 0);
        // A head against itself: zero everywhere.
        CHECK(compare_weights(pass, {1, 1}, pass, {1, 1}).max_abs == 0.0f);
    }
    SECTION("two sentences of the same length: position against position, the differing tokens named") {
        const std::vector<int> other_ids = encode(m, " the dog");
        REQUIRE(static_cast<int>(other_ids.size()) == n);
        const ForwardPass other = forward(m, other_ids);
        const Reference ro = reference_forward(original, other_ids);
        const WeightsComparison cmp = compare_weights(pass, {1, 1}, other, {1, 1});
        REQUIRE(cmp.has_difference);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j <= i; ++j)
                CHECK(cmp.difference(i, j) == Approx(ro.weights[1][1][static_cast<size_t>(i)][static_cast<size_t>(j)] -
                                                     r.weights[1][1][static_cast<size_t>(i)][static_cast<size_t>(j)])
                                                  .margin(2e-4));
        CHECK(cmp.differing_tokens == 3);  // c a t against d o g
        CHECK(cmp.tokens[0] == pass.tokens[0]);
        CHECK(cmp.tokens.back() == "t | g");
    }
    SECTION("different token counts: A and B, no difference, and the reason in words") {
        const ForwardPass longer = forward(m, encode(m, " the cats"));
        const WeightsComparison cmp = compare_weights(pass, {0, 0}, longer, {0, 0});
        REQUIRE(cmp.ok);
        CHECK_FALSE(cmp.has_difference);
        CHECK(cmp.difference.size() == 0);
        CHECK(cmp.message == "A has " + std::to_string(n) + " tokens, B has " + std::to_string(n + 1) +
                                 ": B \xE2\x88\x92 A needs the same tokens");
    }
    SECTION("a head that does not exist, or no pass") {
        CHECK_FALSE(compare_weights(pass, {0, 2}, pass, {0, 0}).ok);
        CHECK_THAT(compare_weights(pass, {0, 0}, pass, {2, 0}).error, Contains("B: head 1 of layer 3 does not exist"));
        CHECK_THAT(compare_weights(pass, {0, 0}, ForwardPass{}, {0, 0}).error, Contains("B's sentence has no computed pass"));
    }
}
