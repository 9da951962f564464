// Opening and writing a GPT-2 checkpoint folder.
//
// [SECTION] The weights: one list of names, shapes and members
// [SECTION] config.json
// [SECTION] Loading the folder
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

// Bounds well beyond every published GPT-2-family model (GPT-2 XL: 48 layers, 25 heads,
// d = 1600, P = 1024, V = 50257); they keep every product of sizes far inside 64 bits.
constexpr int kMaxLayers = 1024;
constexpr int kMaxHeads = 1024;
constexpr int kMaxEmbd = 1 << 16;
constexpr int kMaxPositions = 1 << 20;
constexpr int kMaxVocab = 1 << 24;
constexpr int kMaxInner = 1 << 18;

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

std::optional<Config> config_from_text(const std::string& text, const std::string& source_name,
                                       std::vector<std::string>& errors) {
    const std::optional<json> document = parse_json(text, source_name, errors, json_limits::kConfig);
    if (!document) return std::nullopt;
    Faults faults(source_name);
    if (!document->is_object()) {
        faults.add("top level: expected a JSON object, found " + std::string(document->type_name()));
        faults.flush_into(errors);
        return std::nullopt;
    }
    const json& j = *document;
    auto found = [](const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 60); };
    // An integer in [low, high]; absent → fallback (or a message when there is none).
    auto integer = [&](const char* key, int low, int high, std::optional<int> fallback) -> int {
        const auto it = j.find(key);
        if (it == j.end() || (fallback && it->is_null())) {
            if (!fallback)
                faults.add(std::string("key '") + key + "': missing (expected an integer from " + std::to_string(low) + " to " +
                           std::to_string(high) + ")");
            return fallback.value_or(0);
        }
        const bool in_range = (it->is_number_unsigned() && it->get<std::uint64_t>() <= static_cast<std::uint64_t>(high) &&
                               it->get<std::uint64_t>() >= static_cast<std::uint64_t>(low)) ||
                              (it->is_number_integer() && !it->is_number_unsigned() && it->get<std::int64_t>() >= low &&
                               it->get<std::int64_t>() <= high);
        if (!in_range) {
            faults.add(std::string("key '") + key + "': expected an integer from " + std::to_string(low) + " to " +
                       std::to_string(high) + ", found " + found(*it));
            return fallback.value_or(0);
        }
        return static_cast<int>(it->get<std::int64_t>());
    };
    auto flag = [&](const char* key, bool fallback) {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return fallback;
        if (!it->is_boolean()) {
            faults.add(std::string("key '") + key + "': expected true or false, found " + found(*it));
            return fallback;
        }
        return it->get<bool>();
    };

    if (const auto type = j.find("model_type"); type != j.end() && !type->is_string())
        faults.add("key 'model_type': found " + found(*type) + ", expected a string naming the model's family, such as \"gpt2\" or \"llama\"");
    else if (type != j.end() && *type != "gpt2")
        faults.add("key 'model_type': " + found(*type) + " is not a GPT-2 model; only model_type \"gpt2\" is read");

    Config config;
    config.n_layer = integer("n_layer", 1, kMaxLayers, std::nullopt);
    config.n_head = integer("n_head", 1, kMaxHeads, std::nullopt);
    config.n_embd = integer("n_embd", 1, kMaxEmbd, std::nullopt);
    const char* positions_key = j.contains("n_positions") || !j.contains("n_ctx") ? "n_positions" : "n_ctx";
    config.n_positions = integer(positions_key, 1, kMaxPositions, std::nullopt);
    config.vocab_size = integer("vocab_size", 1, kMaxVocab, std::nullopt);
    config.n_inner = integer("n_inner", 1, kMaxInner, 0);
    if (config.n_inner == 0) config.n_inner = 4 * config.n_embd;   // GPT-2's default: null means 4·d
    if (config.n_inner > kMaxInner)
        faults.add("key 'n_inner': null means 4·n_embd = " + std::to_string(config.n_inner) + ", more than " + std::to_string(kMaxInner));

    if (const auto it = j.find("layer_norm_epsilon"); it != j.end() && !it->is_null()) {
        const double epsilon = it->is_number() ? it->get<double>() : -1.0;
        if (!(epsilon > 0.0 && epsilon < 1.0))
            faults.add("key 'layer_norm_epsilon': expected a number between 0 and 1, found " + found(*it));
        else if (epsilon < static_cast<double>(std::numeric_limits<float>::min()))  // 0 or a subnormal in float32, where LN runs
            faults.add("key 'layer_norm_epsilon': " + found(*it) + " is too small for float32, in which the model computes");
        else config.layer_norm_epsilon = static_cast<float>(epsilon);
    }
    if (const auto it = j.find("activation_function"); it != j.end() && !it->is_null()) {
        const std::string name = it->is_string() ? it->get<std::string>() : found(*it);
        if (name == "gelu_new" || name == "gelu_pytorch_tanh") config.activation = name;
        else faults.add("key 'activation_function': \"" + printable(name, 60) +
                        "\" is not read; expected \"gelu_new\" (or \"gelu_pytorch_tanh\", the same tanh approximation)");
    }
    // Switches of GPT2Config that change the attention itself: only GPT-2's own settings are computed.
    if (!flag("scale_attn_weights", true)) faults.add("key 'scale_attn_weights': false is not supported (scores are divided by √d_k)");
    if (!flag("tie_word_embeddings", true))
        faults.add("key 'tie_word_embeddings': false is not supported (GPT-2's head is wte: logits = h·wteᵀ)");
    if (flag("scale_attn_by_inverse_layer_idx", false))
        faults.add("key 'scale_attn_by_inverse_layer_idx': true is not supported (scores are divided by √d_k only)");

    if (config.n_head > 0 && config.n_embd > 0 && config.n_embd % config.n_head != 0)
        faults.add("n_embd " + std::to_string(config.n_embd) + " is not divisible by n_head " + std::to_string(config.n_head));
    if (!faults.flush_into(errors)) return std::nullopt;
    return config;
}

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

// [SECTION] Loading the folder

namespace {

// model.safetensors, or why not with a hint for the layouts seen beside it.
std::optional<SafetensorsFile> open_weights(const fs::path& folder, std::vector<std::string>& errors) {
    const fs::path path = folder / "model.safetensors";
    std::error_code ec;
    if (!fs::exists(path, ec)) {
        if (fs::exists(folder / "model.safetensors.index.json", ec)) {
            errors.push_back(path.string() + ": missing; the weights are sharded (model.safetensors.index.json), "
                                             "which is not read: save them as one file");
            return std::nullopt;
        }
        if (fs::exists(folder / "pytorch_model.bin", ec)) {
            errors.push_back(path.string() + ": missing; pytorch_model.bin is there, but only safetensors are read: "
                                             "convert it (save_pretrained(…, safe_serialization=True))");
            return std::nullopt;
        }
    }
    return SafetensorsFile::open(path.string(), errors);
}

}  // namespace

namespace {

// Buffers GPT-2's Hugging Face implementation skips when loading: the causal mask
// h.N.attn.bias and its fill h.N.attn.masked_bias (the engine has its own mask), and
// lm_head.weight, which GPT2LMHeadModel ties to wte.
bool ignored_buffer(const std::string& name) {
    std::string bare = name.rfind("transformer.", 0) == 0 ? name.substr(12) : name;
    if (bare == "lm_head.weight") return true;
    if (bare.rfind("h.", 0) != 0) return false;
    const std::size_t dot = bare.find('.', 2);
    if (dot == std::string::npos || dot == 2 || bare.find_first_not_of("0123456789", 2) != dot) return false;
    const std::string rest = bare.substr(dot + 1);
    return rest == "attn.bias" || rest == "attn.masked_bias";
}

CheckpointLoad load_checkpoint_unguarded(const std::string& folder);

}  // namespace

CheckpointLoad load_checkpoint(const std::string& folder) {
    // Sizes are checked against the machine before anything large is allocated; an
    // allocation that fails all the same is a message, never an abort.
    try {
        return load_checkpoint_unguarded(folder);
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    CheckpointLoad result;
    result.errors.push_back(folder + ": not enough memory to open this checkpoint");
    return result;
}

namespace {

CheckpointLoad load_checkpoint_unguarded(const std::string& folder) {
    CheckpointLoad result;
    std::vector<std::string>& errors = result.errors;
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0) {
        errors.push_back(folder + ": " + (errno == ENOENT ? std::string("no such folder") : reason_of_errno(errno)));
        return result;
    }
    if (!S_ISDIR(st.st_mode)) {
        errors.push_back(folder + ": is " + kind_of_mode(st.st_mode) +
                         ", not a checkpoint folder (config.json, model.safetensors, vocab.json, merges.txt)");
        return result;
    }
    std::error_code ec;
    const fs::path root(folder);
    // None of the four files: one message saying what was expected here, and the checkpoint
    // folders one level down (the folder above a checkpoint, or a download's parent).
    const char* const kFiles[] = {"config.json", "model.safetensors", "vocab.json", "merges.txt"};
    if (std::none_of(std::begin(kFiles), std::end(kFiles), [&](const char* f) { return fs::exists(fs::symlink_status(root / f, ec)); })) {
        for (fs::directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end; it.increment(ec))
            if (it->is_directory(ec) && fs::exists(it->path() / "config.json", ec)) result.inside.push_back(it->path().string());
        std::sort(result.inside.begin(), result.inside.end());
        std::string message = folder + ": no checkpoint here (config.json, model.safetensors, vocab.json and merges.txt were expected)";
        if (!result.inside.empty()) {
            message += "; the checkpoint folder" + std::string(result.inside.size() == 1 ? " inside it is " : "s inside it are ");
            for (std::size_t i = 0; i < result.inside.size() && i < 5; ++i) message += (i ? ", " : "") + result.inside[i];
            if (result.inside.size() > 5) message += ", …";
        }
        errors.push_back(message);
        return result;
    }
    // Each file is read even when another failed, so one attempt reports every fault.
    std::optional<Config> config;
    const std::string config_path = (root / "config.json").string();
    if (const auto text = read_text_file(config_path, json_limits::kConfigBytes, "config", errors))
        config = config_from_text(*text, config_path, errors);
    std::optional<Tokenizer> tokenizer =
        Tokenizer::load((root / "vocab.json").string(), (root / "merges.txt").string(), errors,
                        config ? std::optional<int>(config->vocab_size) : std::nullopt);
    std::optional<SafetensorsFile> file = open_weights(root, errors);
    if (!config || !tokenizer || !file) return result;

    Checkpoint checkpoint;
    checkpoint.folder = folder;
    checkpoint.config = *config;
    checkpoint.layers.resize(static_cast<std::size_t>(config->n_layer));
    checkpoint.tokenizer = std::move(*tokenizer);
    const auto refs = weight_refs(checkpoint);

    // Pass 1: every name, shape and dtype, before a byte is allocated. A tensor is taken
    // under its bare name or with GPT2LMHeadModel's "transformer." prefix. Ignored: the
    // h.N.attn.bias / masked_bias buffers (the causal mask is the engine's), and
    // lm_head.weight: GPT-2 ties the LM head to wte, and a file whose lm_head differs from
    // wte (a fine-tune that untied them) is still read with the tied head.
    Faults faults(file->source());
    // A layer of which no tensor is here is one message, not twelve.
    const std::vector<std::string> names = file->names();
    std::vector<bool> layer_present(static_cast<std::size_t>(config->n_layer), false);
    for (const std::string& name : names) {
        const std::size_t start = name.rfind("transformer.h.", 0) == 0 ? 14 : name.rfind("h.", 0) == 0 ? 2 : 0;
        const std::size_t dot = start ? name.find('.', start) : std::string::npos;
        if (dot == std::string::npos || dot == start || dot - start > 6 || name.find_first_not_of("0123456789", start) != dot) continue;
        const int layer = std::atoi(name.c_str() + start);
        if (layer < config->n_layer) layer_present[static_cast<std::size_t>(layer)] = true;
    }
    std::vector<std::string> stored_names;
    std::size_t missing = 0;
    int last_missing_layer = -1;
    for (const auto& ref : refs) {
        std::string stored = ref.name;
        const TensorInfo* info = file->info(stored);
        if (!info) info = file->info(stored = "transformer." + ref.name);
        stored_names.push_back(stored);
        if (!info) {
            ++missing;
            const int layer = ref.name.rfind("h.", 0) == 0 ? std::atoi(ref.name.c_str() + 2) : -1;
            if (layer < 0 || layer_present[static_cast<std::size_t>(layer)])
                faults.add("tensor '" + ref.name + "' is missing (nor is there 'transformer." + ref.name + "')");
            else if (layer != last_missing_layer)
                faults.add("layer " + std::to_string(layer) + " is missing: no tensor 'h." + std::to_string(layer) +
                           ".…' (nor 'transformer.h." + std::to_string(layer) + ".…'), but config.json says n_layer " +
                           std::to_string(config->n_layer));
            if (layer >= 0) last_missing_layer = layer;
            continue;
        }
        if (info->shape != ref.shape) {
            std::string message = "tensor '" + stored + "' is " + shape_text(info->shape) + ", but config.json gives " +
                                  shape_text(ref.shape) + " (" + ref.meaning + ")";
            const bool transposed = ref.shape.size() == 2 && ref.shape[0] != ref.shape[1] &&
                                    info->shape == std::vector<std::int64_t>{ref.shape[1], ref.shape[0]};
            if (transposed && ref.name.rfind("h.", 0) == 0)
                message += "; that is the transpose: nn.Linear's (out, in), where GPT-2's Conv1D stores (in, out)";
            else if (transposed)
                message += "; that is the transpose";
            faults.add(message);
        } else if (!info->floating) {
            faults.add("tensor '" + stored + "': dtype " + info->dtype + " is not read (only F32, F16 and BF16 are)");
        }
    }
    // Every other tensor of the file is a buffer GPT-2 skips, or refused by name: nothing in
    // the file goes unread without a word. The bare and the prefixed name of one weight
    // cannot both be there: which would be meant?
    std::vector<bool> used(names.size(), false);
    {
        std::map<std::string, std::size_t> index;
        for (std::size_t i = 0; i < names.size(); ++i) index.emplace(names[i], i);
        for (const std::string& stored : stored_names)
            if (const auto it = index.find(stored); it != index.end()) used[it->second] = true;
        std::size_t unused = 0;
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (used[i]) continue;
            const std::string& name = names[i];
            if (ignored_buffer(name)) {
                result.ignored.push_back(name);
                continue;
            }
            const std::string other = name.rfind("transformer.", 0) == 0 ? name.substr(12) : "transformer." + name;
            if (const auto it = index.find(other); it != index.end() && used[it->second]) {
                faults.add("tensors '" + printable(name) + "' and '" + printable(other) +
                           "' are both here: one weight under two names (with and without 'transformer.')");
                continue;
            }
            if (unused++ >= 8) continue;   // counted below
            const std::string bare = name.rfind("transformer.", 0) == 0 ? name.substr(12) : name;
            const long layer = bare.rfind("h.", 0) == 0 && std::isdigit(static_cast<unsigned char>(bare[2]))
                                   ? std::strtol(bare.c_str() + 2, nullptr, 10)
                                   : -1;
            if (layer >= config->n_layer)
                faults.add("tensor '" + printable(name) + "' belongs to layer " + std::to_string(layer + 1) +
                           ", but config.json says n_layer " + std::to_string(config->n_layer) + ": it would be left unused");
            else
                faults.add("tensor '" + printable(name, 80) + "' is not a GPT-2 weight: it would be left unused");
        }
        if (unused > 8) faults.add("… and " + std::to_string(unused - 8) + " more tensors that would be left unused");
    }
    if (missing == refs.size()) {  // nothing of GPT-2's: say so once instead of listing every tensor
        faults = Faults(file->source());
        std::string some;
        for (std::size_t i = 0; i < names.size() && i < 3; ++i) some += (i ? ", '" : "'") + printable(names[i], 60) + "'";
        faults.add("none of GPT-2's tensors is here (no 'wte.weight' nor 'transformer.wte.weight'); the file holds " +
                   std::to_string(names.size()) + (names.size() == 1 ? " tensor" : " tensors") +
                   (names.empty() ? "" : ", such as " + some) + ": not a GPT-2 checkpoint?");
    }
    if (!faults.flush_into(errors)) return result;

    // The weights are read where the file stores them: the stored bytes become resident as the
    // passes read them, so they are checked against what the machine can still give.
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < refs.size(); ++i) {
        const TensorInfo* info = file->info(stored_names[i]);
        bytes += info->element_count * dtype_size(*info->floating);
    }
    if (const auto available = available_memory_bytes(); available && bytes > *available) {
        errors.push_back(file->source() + ": its weights need " + byte_size_text(bytes) + " of memory, but only " +
                         byte_size_text(*available) + " is available");
        return result;
    }

    // Pass 2: each matrix held where the file stores it (stored_matrix.hpp: the mapping stays
    // while the checkpoint's weights live; a BF16 file stays BF16), c_attn.weight as three
    // views of its columns; the vectors read as float32.
    for (std::size_t i = 0; i < refs.size(); ++i) {
        const auto& ref = refs[i];
        const std::string& stored = stored_names[i];
        if (ref.vector) {
            ref.vector->resize(ref.shape[0]);
            file->read_into(stored, ref.vector->data(), static_cast<std::size_t>(ref.vector->size()), errors);
            file->release(stored);
            continue;
        }
        const auto held = file->stored(stored);  // floating, checked in pass 1
        const StoredMatrix whole = StoredMatrix::as_stored(held->owner, held->bytes, held->dtype, ref.shape[0], ref.shape[1]);
        const Eigen::Index cols = ref.shape[1] / ref.parts;
        for (int p = 0; p < ref.parts; ++p)
            *ref.shared[static_cast<std::size_t>(p)] = SharedMatrix(ref.parts == 1 ? whole : whole.columns(p * cols, cols, ref.shape[1], cols));
    }
    if (!errors.empty()) return result;
    result.checkpoint = std::move(checkpoint);
    return result;
}

}  // namespace

std::string ignored_text(const std::vector<std::string>& ignored) {
    if (ignored.empty()) return {};
    std::string text = "ignored " + std::to_string(ignored.size()) + (ignored.size() == 1 ? " tensor" : " tensors") + " GPT-2 skips: ";
    for (std::size_t i = 0; i < ignored.size() && i < 3; ++i) text += (i ? ", " : "") + printable(ignored[i], 60);
    return text + (ignored.size() > 3 ? ", …" : "");
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
