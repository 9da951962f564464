// Writing a GPT-2 checkpoint folder (the family table opens it: model/hf).
//
// [SECTION] The weights: one list of names, shapes and members
// [SECTION] config.json
// [SECTION] Writing a folder; random checkpoints
#include "model/gpt2/checkpoint.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <map>
#include <new>
#include <stdexcept>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "io/messages.hpp"
#include "io/path_kind.hpp"
#include "tensor/random.hpp"
#include "io/json_read.hpp"   // parse_json, read_text_file
#include "io/json_write.hpp"  // write_file_atomic

namespace attn::gpt2 {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace safetensors;  // the format GPT-2's checkpoints are stored in

namespace {

// [SECTION] The weights: one list of names, shapes and members

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// Every weight of a checkpoint with its file name (no prefix), its shape by the config, what
// that shape is in the config's words, and the member it is read into: a vector, or `parts`
// shared matrices that split the tensor's columns evenly (c_attn.weight: W_Q | W_K | W_V; one
// part: the whole tensor). C is Checkpoint or const Checkpoint; layers must already number n_layer. The one list
// the loader, the writer and random_checkpoint share, so the three cannot disagree.
template <class C>
auto weight_refs(C& checkpoint) {
    constexpr bool read_only = std::is_const_v<C>;
    using V = std::conditional_t<read_only, const Vector, Vector>;
    using S = std::conditional_t<read_only, const SharedMatrix, SharedMatrix>;
    struct Ref {
        std::string name;
        std::vector<std::int64_t> shape;
        const char* meaning;
        V* vector = nullptr;
        std::array<S*, 3> shared{};  // the first `parts` are used
        int parts = 0;
    };
    const Config& k = checkpoint.config;
    const std::int64_t d = k.n_embd, d_ff = k.n_inner;
    std::vector<Ref> refs;
    auto shared = [&](std::string name, std::int64_t rows, std::int64_t cols, const char* meaning, std::array<S*, 3> parts, int count) {
        refs.push_back({std::move(name), {rows, cols}, meaning, nullptr, parts, count});
    };
    auto vector = [&](std::string name, std::int64_t n, const char* meaning, V& v) {
        refs.push_back({std::move(name), {n}, meaning, &v, {}, 0});
    };
    shared("wte.weight", k.vocab_size, d, "vocab_size × n_embd", {&checkpoint.wte}, 1);
    shared("wpe.weight", k.n_positions, d, "n_positions × n_embd", {&checkpoint.wpe}, 1);
    for (std::size_t i = 0; i < checkpoint.layers.size(); ++i) {
        auto& layer = checkpoint.layers[i];
        const std::string h = "h." + std::to_string(i) + ".";
        vector(h + "ln_1.weight", d, "n_embd", layer.ln_1_gamma);
        vector(h + "ln_1.bias", d, "n_embd", layer.ln_1_beta);
        shared(h + "attn.c_attn.weight", d, 3 * d, "n_embd × 3·n_embd", {&layer.w_q, &layer.w_k, &layer.w_v}, 3);
        vector(h + "attn.c_attn.bias", 3 * d, "3·n_embd", layer.c_attn_b);
        shared(h + "attn.c_proj.weight", d, d, "n_embd × n_embd", {&layer.c_proj_w}, 1);
        vector(h + "attn.c_proj.bias", d, "n_embd", layer.c_proj_b);
        vector(h + "ln_2.weight", d, "n_embd", layer.ln_2_gamma);
        vector(h + "ln_2.bias", d, "n_embd", layer.ln_2_beta);
        shared(h + "mlp.c_fc.weight", d, d_ff, "n_embd × n_inner", {&layer.c_fc_w}, 1);
        vector(h + "mlp.c_fc.bias", d_ff, "n_inner", layer.c_fc_b);
        shared(h + "mlp.c_proj.weight", d_ff, d, "n_inner × n_embd", {&layer.mlp_proj_w}, 1);
        vector(h + "mlp.c_proj.bias", d, "n_embd", layer.mlp_proj_b);
    }
    vector("ln_f.weight", d, "n_embd", checkpoint.ln_f_gamma);
    vector("ln_f.bias", d, "n_embd", checkpoint.ln_f_beta);
    return refs;
}

// Splits a (rows × parts·c) tensor's columns into `parts` matrices of (rows × c).
template <class Ref>
void split_into(const Ref& ref, const Matrix& whole) {
    const Eigen::Index cols = whole.cols() / ref.parts;
    for (int p = 0; p < ref.parts; ++p) *ref.shared[static_cast<std::size_t>(p)] = whole.middleCols(p * cols, cols);
}

}  // namespace

std::vector<WeightShape> weight_shapes(const Config& config) {
    Checkpoint empty;
    empty.config = config;
    empty.layers.resize(static_cast<std::size_t>(std::max(config.n_layer, 0)));
    std::vector<WeightShape> shapes;
    for (const auto& ref : weight_refs(empty)) shapes.push_back({ref.name, ref.shape});
    return shapes;
}

// [SECTION] config.json

namespace {

// The shortest decimal that reads back as the same float32: 1e-5f is written 1e-05, not
// 9.99999974737875e-06.
double shortest_decimal(float value) {
    for (int digits = 1; digits <= 9; ++digits) {
        char text[32];
        std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(value));
        const double parsed = std::strtod(text, nullptr);
        if (static_cast<float>(parsed) == value) return parsed;
    }
    return static_cast<double>(value);
}

}  // namespace

std::string config_json(const Config& config) {
    json j = {
        {"activation_function", config.activation},
        {"architectures", json::array({"GPT2LMHeadModel"})},
        {"layer_norm_epsilon", shortest_decimal(config.layer_norm_epsilon)},
        {"model_type", "gpt2"},
        {"n_ctx", config.n_positions},
        {"n_embd", config.n_embd},
        {"n_head", config.n_head},
        {"n_inner", nullptr},
        {"n_layer", config.n_layer},
        {"n_positions", config.n_positions},
        {"vocab_size", config.vocab_size},
    };
    if (config.n_inner != 4 * config.n_embd) j["n_inner"] = config.n_inner;
    return j.dump(2) + "\n";
}

// [SECTION] Writing a folder; random checkpoints

bool checkpoint_tensors(const Checkpoint& checkpoint, bool transformer_prefix, std::vector<NamedTensor>& tensors,
                        std::string* error) {
    if (checkpoint.layers.size() != static_cast<std::size_t>(std::max(checkpoint.config.n_layer, 0))) {
        if (error) *error = "the checkpoint has " + std::to_string(checkpoint.layers.size()) + " layers, its config says " +
                            std::to_string(checkpoint.config.n_layer);
        return false;
    }
    const std::string prefix = transformer_prefix ? "transformer." : "";
    for (const auto& ref : weight_refs(checkpoint)) {
        std::vector<std::int64_t> actual;
        if (ref.vector) actual = {ref.vector->cols()};
        else actual = {ref.shared[0]->rows(), ref.shared[0]->cols() * ref.parts};
        bool equal_parts = true;  // c_attn's thirds: each (d × d)
        for (int p = 1; p < ref.parts; ++p) {
            const SharedMatrix& part = *ref.shared[static_cast<std::size_t>(p)];
            equal_parts = equal_parts && part.rows() == ref.shared[0]->rows() && part.cols() == ref.shared[0]->cols();
        }
        if (actual != ref.shape || !equal_parts) {
            if (error)
                *error = "the checkpoint's '" + ref.name + "' is " +
                         (equal_parts ? shape_text(actual) : std::string("W_Q, W_K, W_V of different shapes")) +
                         ", its config gives " + shape_text(ref.shape);
            return false;
        }
        NamedTensor tensor{prefix + ref.name, ref.shape, nullptr, nullptr};
        if (ref.vector) tensor.values = ref.vector->data();
        else if (ref.parts == 1) tensor.values = ref.shared[0]->data();
        else {
            auto whole = std::make_shared<Matrix>(ref.shape[0], ref.shape[1]);
            const Eigen::Index cols = ref.shared[0]->cols();
            for (int p = 0; p < ref.parts; ++p) whole->middleCols(p * cols, cols) = ref.shared[static_cast<std::size_t>(p)]->get();
            tensor.values = whole->data();
            tensor.storage = std::move(whole);
        }
        tensors.push_back(std::move(tensor));
    }
    return true;
}

bool write_checkpoint(const std::string& folder, const Checkpoint& checkpoint, const CheckpointWriteOptions& options,
                      std::string* error) {
    std::vector<NamedTensor> tensors;
    if (!checkpoint_tensors(checkpoint, options.transformer_prefix, tensors, error)) return false;
    // Old exports' buffers: attn.bias, the causal mask (1 × 1 × P × P, 1 on and below the
    // diagonal), and attn.masked_bias, the scalar −10⁴ filled in above it.
    const Config& config = checkpoint.config;
    Matrix causal_mask;
    const float masked_bias = -1e4f;
    const std::string prefix = options.transformer_prefix ? "transformer." : "";
    if (options.mask_buffers) {
        causal_mask = Matrix::Ones(config.n_positions, config.n_positions).triangularView<Eigen::Lower>();
        for (int i = 0; i < config.n_layer; ++i) {
            const std::string h = prefix + "h." + std::to_string(i) + ".attn.";
            tensors.push_back({h + "bias", {1, 1, config.n_positions, config.n_positions}, causal_mask.data()});
            tensors.push_back({h + "masked_bias", {}, &masked_bias});
        }
    }
    if (options.lm_head) tensors.push_back({"lm_head.weight", {config.vocab_size, config.n_embd}, checkpoint.wte.data()});

    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) {
        if (error) *error = "cannot create the folder " + folder + ": " + ec.message();
        return false;
    }
    const fs::path root(folder);
    return write_file_atomic((root / "config.json").string(), config_json(config), error) &&
           write_file_atomic((root / "vocab.json").string(), checkpoint.tokenizer.vocab_json(), error) &&
           write_file_atomic((root / "merges.txt").string(), checkpoint.tokenizer.merges_text(), error) &&
           write_safetensors((root / "model.safetensors").string(), tensors, {{"format", "pt"}}, options.dtype, error);
}

Matrix c_attn(const LayerWeights& layer) {
    const Eigen::Index d = layer.w_q.cols();
    Matrix whole(layer.w_q.rows(), 3 * d);
    whole << *layer.w_q, *layer.w_k, *layer.w_v;
    return whole;
}

void set_c_attn(LayerWeights& layer, const Matrix& c_attn_w) {
    const Eigen::Index d = c_attn_w.cols() / 3;
    layer.w_q = c_attn_w.middleCols(0, d);
    layer.w_k = c_attn_w.middleCols(d, d);
    layer.w_v = c_attn_w.middleCols(2 * d, d);
}

Checkpoint random_checkpoint(const Config& config, std::uint64_t seed, Tokenizer tokenizer) {
    Checkpoint checkpoint;
    checkpoint.config = config;
    checkpoint.layers.resize(static_cast<std::size_t>(std::max(config.n_layer, 0)));
    checkpoint.tokenizer = std::move(tokenizer);
    Rng seeds(seed);
    for (const auto& ref : weight_refs(checkpoint)) {
        const bool layer_norm = ref.name.find("ln_") != std::string::npos;
        const bool gamma = layer_norm && ref.name.size() > 7 && ref.name.compare(ref.name.size() - 7, 7, ".weight") == 0;
        const std::uint64_t tensor_seed = seeds.next_u64();
        if (ref.parts > 0) {
            split_into(ref, normal_matrix(static_cast<int>(ref.shape[0]), static_cast<int>(ref.shape[1]), tensor_seed, 0.02f));
        } else if (layer_norm) {
            *ref.vector = gamma ? Vector::Ones(ref.shape[0]) : Vector::Zero(ref.shape[0]);
        } else {
            *ref.vector = normal_matrix(1, static_cast<int>(ref.shape[0]), tensor_seed, 0.02f);
        }
    }
    return checkpoint;
}

}  // namespace attn::gpt2
