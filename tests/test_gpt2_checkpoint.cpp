// GPT-2 checkpoint folders written (model/gpt2/checkpoint.hpp) and opened by the family table
// in F32, F16 and BF16, with and without the "transformer." prefix; GPT-2's Conv1D (in, out)
// layout kept as stored; config.json's defaults; every entry of the bad-model catalogue refused
// with its message.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "joined.hpp"
#include "bad_model_catalogue.hpp"
#include "model/gpt2/checkpoint.hpp"
#include "model/hf/model.hpp"
#include "model/language_model.hpp"
#include "tensor/random.hpp"

using namespace attn;
using namespace attn::gpt2;
using namespace attn::safetensors;
using attn::testing::joined;
using attn::testing::tiny_checkpoint;
using attn::testing::tiny_config;
using Catch::Matchers::Contains;

namespace {

float rounded(float x, Dtype dtype) {
    return dtype == Dtype::F32 ? x : dtype == Dtype::F16 ? f16_to_f32(f32_to_f16(x)) : bf16_to_f32(f32_to_bf16(x));
}

// The tiny checkpoint with every LayerNorm γ and β random too, so a swapped vector shows.
Checkpoint distinct_checkpoint() {
    Checkpoint c = tiny_checkpoint(5);
    std::uint64_t seed = 100;
    for (auto& layer : c.layers)
        for (Vector* v : {&layer.ln_1_gamma, &layer.ln_1_beta, &layer.ln_2_gamma, &layer.ln_2_beta})
            *v = normal_matrix(1, static_cast<int>(v->cols()), ++seed);
    c.ln_f_gamma = normal_matrix(1, 8, ++seed);
    c.ln_f_beta = normal_matrix(1, 8, ++seed);
    return c;
}

// The opened model's matrix for one of GPT-2's stored tensors ("h.1.attn.c_attn.weight"): the
// family keeps c_attn as W_Q | W_K | W_V and its bias as b_q | b_k | b_v.
Matrix opened_tensor(const hf::Weights& w, const std::string& name) {
    auto joined_columns = [](const std::vector<Matrix>& parts) {
        Matrix whole(parts.front().rows(), 0);
        for (const Matrix& part : parts) {
            whole.conservativeResize(Eigen::NoChange, whole.cols() + part.cols());
            whole.rightCols(part.cols()) = part;
        }
        return whole;
    };
    if (name == "wte.weight") return *w.token_embedding;
    if (name == "wpe.weight") return *w.position_embedding;
    if (name == "ln_f.weight") return w.final_norm.weight;
    if (name == "ln_f.bias") return w.final_norm.bias;
    REQUIRE(name.rfind("h.", 0) == 0);
    const std::size_t dot = name.find('.', 2);
    const hf::LayerWeights& L = w.layers.at(static_cast<std::size_t>(std::stoi(name.substr(2, dot - 2))));
    const std::string rest = name.substr(dot + 1);
    if (rest == "ln_1.weight") return L.attn_norm.weight;
    if (rest == "ln_1.bias") return L.attn_norm.bias;
    if (rest == "attn.c_attn.weight") return joined_columns({*L.w_q, *L.w_k, *L.w_v});
    if (rest == "attn.c_attn.bias") return joined_columns({L.b_q, L.b_k, L.b_v});
    if (rest == "attn.c_proj.weight") return *L.w_o;
    if (rest == "attn.c_proj.bias") return L.b_o;
    if (rest == "ln_2.weight") return L.mlp_norm.weight;
    if (rest == "ln_2.bias") return L.mlp_norm.bias;
    if (rest == "mlp.c_fc.weight") return *L.w_up;
    if (rest == "mlp.c_fc.bias") return L.b_up;
    if (rest == "mlp.c_proj.weight") return *L.w_down;
    if (rest == "mlp.c_proj.bias") return L.b_down;
    FAIL("no opened matrix for " << name);
    return {};
}

}  // namespace

TEST_CASE("a checkpoint written in F32, F16 and BF16, with and without the prefix, reads back") {
    const Checkpoint original = distinct_checkpoint();
    std::vector<NamedTensor> expected;
    std::string error;
    REQUIRE(checkpoint_tensors(original, false, expected, &error));
    REQUIRE(expected.size() == 2 + 2 * 12 + 2);

    for (const bool prefix : {false, true})
        for (const Dtype dtype : {Dtype::F32, Dtype::F16, Dtype::BF16}) {
            INFO("prefix " << prefix << ", " << to_string(dtype));
            const std::string folder = std::string("test_gpt2_checkpoint_") + (prefix ? "prefixed_" : "") + to_string(dtype);
            std::filesystem::remove_all(folder);
            CheckpointWriteOptions options;
            options.dtype = dtype;
            options.transformer_prefix = prefix;
            options.mask_buffers = prefix;   // old exports' buffers and a separate LM head are ignored
            options.lm_head = prefix;
            REQUIRE(write_checkpoint(folder, original, options, &error));
            for (const char* file : {"config.json", "model.safetensors", "vocab.json", "merges.txt"})
                CHECK(std::filesystem::exists(folder + "/" + file));

            // The names on disk are Hugging Face's.
            std::vector<std::string> errors;
            const auto file = SafetensorsFile::open(folder + "/model.safetensors", errors);
            REQUIRE(file);
            CHECK(file->has(prefix ? "transformer.h.1.attn.c_attn.weight" : "h.1.attn.c_attn.weight"));
            CHECK(file->has("transformer.wte.weight") == prefix);
            CHECK(file->has("lm_head.weight") == prefix);
            CHECK(file->has("transformer.h.0.attn.bias") == prefix);
            if (prefix) CHECK(file->info("transformer.h.0.attn.bias")->shape == std::vector<std::int64_t>{1, 1, 16, 16});

            const lm::ModelLoad load = lm::load_model(folder);
            INFO(joined(load.errors));
            REQUIRE(load.model);
            CHECK(load.errors.empty());
            // The buffers GPT-2 recomputes and the tied LM head are listed, never silently dropped.
            if (prefix)
                CHECK(load.ignored == "ignored 5 tensors the family recomputes or drops: lm_head.weight, transformer.h.0.attn.bias, "
                                      "transformer.h.0.attn.masked_bias, \xE2\x80\xA6");
            else
                CHECK(load.ignored.empty());
            const hf::OpenedModel& m = load.model->opened();
            CHECK(m.folder == folder);
            CHECK(m.spec.model_type == "gpt2");
            CHECK(m.spec.n_layers == 2);
            CHECK(m.spec.n_heads == 2);
            CHECK(m.spec.d_model == 8);
            CHECK(m.spec.max_positions == 16);
            CHECK(m.spec.vocab_size == 260);
            CHECK(m.spec.d_ff == 32);
            CHECK(m.spec.norm.epsilon == 1e-5);
            CHECK(m.spec.activation == hf::Activation::gelu_tanh);
            REQUIRE(m.tokenizer);
            CHECK(m.tokenizer->size() == 259);
            std::vector<std::string> encode_errors;
            CHECK(hf::encode_text(m, " the", encode_errors) == std::vector<int>{258});
            for (const NamedTensor& t : expected) {
                INFO(t.name);
                const Matrix actual = opened_tensor(m.weights, t.name);
                const std::int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1, cols = t.shape.back();
                REQUIRE(actual.rows() == rows);
                REQUIRE(actual.cols() == cols);
                int mismatches = 0;
                for (std::int64_t i = 0; i < rows; ++i)
                    for (std::int64_t j = 0; j < cols; ++j)
                        mismatches += actual(i, j) != rounded(t.values[i * cols + j], dtype);
                CHECK(mismatches == 0);
            }
            std::filesystem::remove_all(folder);
        }
}

TEST_CASE("Conv1D weights keep GPT-2's (in, out) layout: x·W, Q | K | V along the columns") {
    Checkpoint c = tiny_checkpoint();
    // W(i, j) = 32·i + j: every entry names its row and column, exactly in F16.
    Matrix numbered(8, 24);
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 24; ++j) numbered(i, j) = static_cast<float>(32 * i + j);
    set_c_attn(c.layers[1], numbered);
    const std::string folder = "test_gpt2_conv1d";
    std::string error;
    CheckpointWriteOptions options;
    options.dtype = Dtype::F16;
    REQUIRE(write_checkpoint(folder, c, options, &error));

    // On disk: shape [in, out] = [8, 24], row-major: the first 24 values are row 0.
    std::vector<std::string> errors;
    const auto file = SafetensorsFile::open(folder + "/model.safetensors", errors);
    REQUIRE(file);
    CHECK(file->info("h.1.attn.c_attn.weight")->shape == std::vector<std::int64_t>{8, 24});
    std::vector<float> raw;
    REQUIRE(file->read("h.1.attn.c_attn.weight", raw, errors));
    for (int j = 0; j < 24; ++j) CHECK(raw[j] == static_cast<float>(j));
    CHECK(raw[24] == 32.0f);

    const hf::OpenedModelLoad load = hf::open_model(folder);
    INFO(joined(load.errors));
    REQUIRE(load.model);
    const hf::LayerWeights& opened = load.model->weights.layers[1];
    const Matrix w = opened_tensor(load.model->weights, "h.1.attn.c_attn.weight");
    REQUIRE(w.rows() == 8);
    REQUIRE(w.cols() == 24);
    // The one-hot x = e₃ picks row 3: q = x·W[:, 0:8], k = x·W[:, 8:16], v = x·W[:, 16:24].
    Matrix x = Matrix::Zero(1, 8);
    x(0, 3) = 1.0f;
    const Matrix qkv = x * w;   // (1 × 8)·(8 × 24) → (1 × 24)
    for (int j = 0; j < 24; ++j) CHECK(qkv(0, j) == static_cast<float>(96 + j));
    CHECK(qkv.block(0, 8, 1, 8)(0, 0) == 104.0f);   // K starts at column d = 8
    // Head h of Q owns columns [h·d_k, (h+1)·d_k), d_k = 4.
    CHECK(load.model->spec.head_dim == 4);
    CHECK(opened.w_k->col(0) == w.col(8));
    std::filesystem::remove_all(folder);
}

TEST_CASE("config.json: defaults, n_ctx, n_inner, the tanh GELU's other name") {
    std::vector<std::string> errors;
    const auto minimal = hf::spec_from_config(
        R"({"model_type": "gpt2", "n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024, "vocab_size": 50257})", "config.json", errors);
    INFO(joined(errors));
    REQUIRE(minimal);
    CHECK(minimal->d_ff == 3072);
    CHECK(minimal->norm.epsilon == 1e-5);
    CHECK(minimal->activation == hf::Activation::gelu_tanh);
    CHECK(minimal->head_dim == 64);
    const auto old = hf::spec_from_config(R"({"n_layer": 1, "n_head": 1, "n_embd": 4, "n_ctx": 32, "vocab_size": 300, "n_inner": null,
                                          "activation_function": "gelu_pytorch_tanh", "layer_norm_epsilon": 1e-6,
                                          "model_type": "gpt2", "scale_attn_weights": true})",
                                          "config.json", errors);
    INFO(joined(errors));
    REQUIRE(old);
    CHECK(old->max_positions == 32);
    CHECK(old->positions_key == "n_ctx");
    CHECK(old->d_ff == 16);
    CHECK(old->activation == hf::Activation::gelu_tanh);
    CHECK(old->norm.epsilon == 1e-6);
    CHECK(errors.empty());
    // Written as Hugging Face writes it: n_inner null for 4·d, ε as 1e-05.
    const std::string text = config_json(tiny_config());
    CHECK_THAT(text, Contains("\"n_inner\": null") && Contains("\"layer_norm_epsilon\": 1e-05") && Contains("\"model_type\": \"gpt2\""));
    Config wide = tiny_config();
    wide.n_inner = 20;
    wide.activation = "gelu_pytorch_tanh";
    const auto back = hf::spec_from_config(config_json(wide), "config.json", errors);
    REQUIRE(back);
    CHECK(back->d_ff == 20);
    CHECK(back->activation == hf::Activation::gelu_tanh);

    // A checkpoint with d_ff ≠ 4·d opens with (8 × 20) and (20 × 8) MLP weights.
    std::string error;
    const Checkpoint c = random_checkpoint(wide, 3, tiny_checkpoint().tokenizer);
    REQUIRE(write_checkpoint("test_gpt2_wide", c, {}, &error));
    {
        const hf::OpenedModelLoad load = hf::open_model("test_gpt2_wide");
        INFO(joined(load.errors));
        REQUIRE(load.model);
        CHECK(load.model->weights.layers[0].w_up.cols() == 20);
        CHECK(load.model->weights.layers[0].w_down.rows() == 20);
        CHECK(*load.model->weights.layers[0].w_down == *c.layers[0].mlp_proj_w);
    }
    std::filesystem::remove_all("test_gpt2_wide");
}

TEST_CASE("random checkpoints: N(0, 0.02), γ = 1, β = 0, the same for the same seed") {
    const Checkpoint a = tiny_checkpoint(9), b = tiny_checkpoint(9), other = tiny_checkpoint(10);
    CHECK(a.wte == b.wte);
    CHECK(a.wte != other.wte);
    CHECK(a.layers[1].ln_2_gamma == Vector::Ones(8));
    CHECK(a.layers[1].ln_2_beta == Vector::Zero(8));
    CHECK(c_attn(a.layers[0]).rows() == 8);
    CHECK(c_attn(a.layers[0]).cols() == 24);
    const Matrix big = random_checkpoint(tiny_config(), 1).wte;   // 260 × 8 values
    const float mean = big.mean();
    const float stddev = std::sqrt((big.array() - mean).square().mean());
    CHECK(std::abs(mean) < 0.005f);
    CHECK(stddev == Approx(0.02f).epsilon(0.1));
    // A checkpoint whose matrices disagree with its config is not written.
    Checkpoint wrong = tiny_checkpoint();
    wrong.layers[0].c_fc_w.edit().resize(32, 8);
    std::string error;
    CHECK_FALSE(write_checkpoint("test_gpt2_wrong", wrong, {}, &error));
    CHECK_THAT(error, Contains("'h.0.mlp.c_fc.weight' is [32, 8], its config gives [8, 32]"));
    std::filesystem::remove_all("test_gpt2_wrong");
}

TEST_CASE("every folder of the bad-model catalogue is refused with its message") {
    const std::string root = "test_gpt2_bad_models";
    std::filesystem::create_directories(root);
    for (const auto& bad : attn::testing::bad_model_catalogue()) {
        INFO(bad.item);
        const std::string folder = root + "/" + bad.folder;
        bad.write(folder);
        const lm::ModelLoad load = lm::load_model(folder);
        const std::string message = joined(load.errors);
        INFO(message);
        CHECK_FALSE(load.model);
        CHECK_THAT(message, Contains(folder));
        for (const auto& fragment : bad.says) CHECK_THAT(message, Contains(fragment));
    }
    std::filesystem::remove_all(root);
}

TEST_CASE("one attempt reports the faults of every file") {
    const std::string folder = "test_gpt2_many_faults";
    attn::testing::with_config("n_layer", 3)(folder);
    std::filesystem::remove(folder + "/vocab.json");
    std::filesystem::remove(folder + "/model.safetensors");
    const lm::ModelLoad load = lm::load_model(folder);
    CHECK_FALSE(load.model);
    CHECK_THAT(joined(load.errors), Contains("vocab.json: cannot open") && Contains("model.safetensors: missing"));
    // A config that fails leaves the weights unread (their shapes come from it), but the tokenizer is read.
    attn::testing::with_config("activation_function", "mish")(folder);
    std::filesystem::remove(folder + "/merges.txt");
    const std::string both = joined(lm::load_model(folder).errors);
    CHECK_THAT(both, Contains("config.json: key 'activation_function'") && Contains("merges.txt: cannot open"));
    std::filesystem::remove_all(folder);
}

TEST_CASE("the folder above a checkpoint is one message naming the checkpoint inside it") {
    namespace fs = std::filesystem;
    const std::string parent = "test_gpt2_parent";
    fs::remove_all(parent);
    attn::testing::write_tiny_checkpoint(parent + "/gpt2-tiny");
    fs::create_directories(parent + "/notes");
    lm::ModelLoad load = lm::load_model(parent);
    CHECK_FALSE(load.model);
    REQUIRE(load.errors.size() == 1);  // not one "cannot open" per file
    CHECK_THAT(load.errors[0], Contains(parent + ": no checkpoint here (config.json, model.safetensors and tokenizer.json") &&
                                   Contains("the checkpoint folder inside it is " + parent + "/gpt2-tiny"));
    CHECK(load.inside == std::vector<std::string>{parent + "/gpt2-tiny"});
    CHECK(lm::load_model(load.inside.front()).model);
    // An empty folder: what was expected there, and nothing inside.
    load = lm::load_model(parent + "/notes");
    REQUIRE(load.errors.size() == 1);
    CHECK_THAT(load.errors[0], Contains("no checkpoint here") && !Contains("inside it"));
    CHECK(load.inside.empty());
    fs::remove_all(parent);
}

// Not run by default (it writes 500 MB): build/tests/test_gpt2 "[.large]". Its time is
// gpt2_bench's to measure; this checks that a folder of GPT-2 small's size round-trips.
TEST_CASE("a GPT-2-small-sized folder opens in F32 and F16 with its weights as written", "[.large]") {
    Config config;
    config.n_layer = 12;
    config.n_head = 12;
    config.n_embd = 768;
    config.n_positions = 1024;
    config.vocab_size = 50257;
    config.n_inner = 3072;
    const Checkpoint c = random_checkpoint(config, 1);
    for (const Dtype dtype : {Dtype::F32, Dtype::F16}) {
        const std::string folder = std::string("test_gpt2_small_") + to_string(dtype);
        CheckpointWriteOptions options;
        options.dtype = dtype;
        std::string error;
        REQUIRE(write_checkpoint(folder, c, options, &error));
        {
            const hf::OpenedModelLoad load = hf::open_model(folder);
            INFO(joined(load.errors));
            REQUIRE(load.model);
            CHECK(load.model->weights.layers[11].w_down(3071, 767) == rounded(c.layers[11].mlp_proj_w(3071, 767), dtype));
            CHECK(load.model->weights.token_embedding(50256, 767) == rounded(c.wte(50256, 767), dtype));
        }
        std::filesystem::remove_all(folder);
    }
}

