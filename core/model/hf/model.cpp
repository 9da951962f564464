#include "model/hf/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <sys/stat.h>

#include "attention/engine.hpp"
#include "io/json_read.hpp"
#include "io/path_kind.hpp"
#include "attention/positional.hpp"
#include "tensor/product.hpp"
#include "attention/softmax.hpp"
#include "tokenizer/text.hpp"

namespace attn::hf {

namespace {

attn::Activation engine_activation(Activation a) {
    switch (a) {
        case Activation::gelu_tanh: return attn::Activation::GeluTanh;
        case Activation::gelu_exact: return attn::Activation::GeluErf;
        case Activation::silu: return attn::Activation::SiLU;
        case Activation::relu: return attn::Activation::ReLU;
    }
    return attn::Activation::ReLU;
}

LayerNormParams norm_params(const NormWeights& w) { return LayerNormParams{w.weight, w.bias}; }

// x normalised as every norm of the model is (its kind, Gemma's (1 + w), ε).
Matrix apply_norm(const Matrix& x, const NormSpec& spec, const NormWeights& w) {
    const float epsilon = static_cast<float>(spec.epsilon);
    if (spec.kind == NormKind::rms_norm) return rms_norm(x, epsilon, w.weight, spec.one_plus_weight);
    return layer_norm(x, epsilon, norm_params(w));
}

// What the engine does not compute yet, for a spec: refused by name rather than run as
// something else.
std::vector<std::string> not_computed(const ModelSpec& spec) {
    std::vector<std::string> why;
    if (spec.mlp == MlpKind::gated && spec.mlp_bias) why.push_back("a gated MLP with biases (mlp_bias: true) is not computed by the engine");
    return why;
}

// The k best ids of the (1 × V) probabilities, labelled; with `before` (a causal model's next
// token after these ids), a byte of a character also says what it does there.
std::vector<TokenProbability> top_predictions(const OpenedModel& m, const Matrix& probabilities, int k,
                                              const std::vector<int>* before = nullptr) {
    std::vector<TokenProbability> top;
    for (int id : stack::top_k(probabilities, k))
        top.push_back({id, before ? token_description(m, id, *before) : token_label(m, id), probabilities(0, id)});
    return top;
}

// BERT's decoder: logits = t·Eᵀ + b.
Matrix unembed(const OpenedModel& m, const Matrix& t) {
    Matrix logits;
    product_transposed_into(t, m.weights.unembedding(), logits);  // (1 × d)·(d × V) → (1 × V)
    if (m.weights.lm_head_bias.size() != 0) logits.rowwise() += m.weights.lm_head_bias;
    return logits;
}

// tokenizer_config.json, read where it exists: transformers' tokenizer class applies some of
// its settings over tokenizer.json. Nullopt: no file, or one that cannot be read (said).
std::optional<nlohmann::json> read_tokenizer_config(const std::string& path, std::vector<std::string>& errors) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    const auto text = read_text_file(path, json_limits::kTokenizerConfigBytes, "tokenizer_config", errors);
    if (!text) return std::nullopt;
    auto config = parse_json(*text, path, errors, json_limits::kTokenizerConfig);
    if (config && !config->is_object()) {
        errors.push_back(path + ": expected an object");
        return std::nullopt;
    }
    return config;
}

// The class, without "Fast" (AutoTokenizer loads the fast one either way).
std::string tokenizer_class(const nlohmann::json& config) {
    const auto it = config.find("tokenizer_class");
    std::string type = it != config.end() && it->is_string() ? it->get<std::string>() : std::string();
    if (type.size() > 4 && type.compare(type.size() - 4, 4, "Fast") == 0) type.resize(type.size() - 4);
    return type;
}

// tokenizer.json, with what BertTokenizerFast changes in it: when the file's BertNormalizer
// differs from tokenizer_config.json's do_lower_case (default true), strip_accents (default
// none) or tokenize_chinese_chars (default true), transformers builds the normalizer again from
// those three (tokenization_bert_fast.py), so a cased tokenizer.json with no do_lower_case
// beside it lowercases. Every other class reads the file as it is.
std::optional<tok::TokenizerJson> load_tokenizer(const std::string& path, const nlohmann::json* config, std::vector<std::string>& errors) {
    if (config == nullptr || tokenizer_class(*config) != "BertTokenizer") return tok::TokenizerJson::load(path, errors);
    const auto text = read_text_file(path, tok::kTokenizerJsonMaxBytes, "tokenizer.json", errors);
    if (!text) return std::nullopt;
    auto document = parse_json(*text, path, errors, tok::kTokenizerJsonLimits);
    if (!document) return std::nullopt;
    auto setting = [&](const char* key, const nlohmann::json& fallback) {
        const auto it = config->find(key);
        return it == config->end() ? fallback : *it;
    };
    const nlohmann::json lowercase = setting("do_lower_case", true), strip_accents = setting("strip_accents", nullptr),
                         chinese = setting("tokenize_chinese_chars", true);
    if (document->is_object() && document->contains("normalizer")) {
        nlohmann::json& normalizer = (*document)["normalizer"];
        if (normalizer.is_object() && normalizer.value("type", "") == "BertNormalizer") {
            auto stored = [&](const char* key, const nlohmann::json& fallback) {
                const auto it = normalizer.find(key);
                return it == normalizer.end() ? fallback : *it;
            };
            if (stored("lowercase", lowercase) != lowercase || stored("strip_accents", strip_accents) != strip_accents ||
                stored("handle_chinese_chars", chinese) != chinese) {
                normalizer["lowercase"] = lowercase;
                normalizer["strip_accents"] = strip_accents;
                normalizer["handle_chinese_chars"] = chinese;
            }
        }
    }
    return tok::TokenizerJson::from_text(document->dump(), path, errors);
}

// The special tokens tokenizer_config.json decides: transformers' Llama, Code Llama, Gemma
// and GPT-NeoX tokenizers replace the post-processor by "[bos] $A [eos]" from add_bos_token and
// add_eos_token (defaults: true and false for Llama and Gemma, false and false for GPT-NeoX)
// with bos_token and eos_token (update_post_processor in their tokenization_*_fast.py). Every
// other class keeps tokenizer.json's.
void apply_special_tokens(const std::string& path, const nlohmann::json& config_json, tok::TokenizerJson& tokenizer,
                          std::vector<std::string>& errors) {
    const nlohmann::json* config = &config_json;
    const std::string type = tokenizer_class(config_json);
    struct Defaults {
        bool bos, eos;
        const char *bos_token, *eos_token;
    };
    Defaults d{};
    if (type == "LlamaTokenizer" || type == "CodeLlamaTokenizer") d = {true, false, "<s>", "</s>"};
    else if (type == "GemmaTokenizer") d = {true, false, "<bos>", "<eos>"};
    else if (type == "GPTNeoXTokenizer") d = {false, false, "<|endoftext|>", "<|endoftext|>"};
    else return;
    auto flag = [&](const char* key, bool fallback) {
        const auto it = config->find(key);
        if (it == config->end() || it->is_null()) return fallback;
        if (!it->is_boolean()) {
            errors.push_back(path + ": key '" + key + "': expected true or false");
            return fallback;
        }
        return it->get<bool>();
    };
    // A token as the file writes it: a string, or an AddedToken object with its "content".
    auto token = [&](const char* key, const char* fallback) -> std::string {
        const auto it = config->find(key);
        if (it == config->end() || it->is_null()) return fallback;
        if (it->is_string()) return it->get<std::string>();
        if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
        errors.push_back(path + ": key '" + key + "': expected a token (a string or {\"content\": …})");
        return fallback;
    };
    const bool add_bos = flag("add_bos_token", d.bos), add_eos = flag("add_eos_token", d.eos);
    std::vector<int> before, after;
    auto id_of = [&](const char* key, const std::string& content, std::vector<int>& into) {
        if (const std::optional<int> id = tokenizer.id(content)) into.push_back(*id);
        else errors.push_back(path + ": key '" + key + "' is \"" + content + "\", which is no token of tokenizer.json, so it cannot be added");
    };
    if (add_bos) id_of("bos_token", token("bos_token", d.bos_token), before);
    if (add_eos) id_of("eos_token", token("eos_token", d.eos_token), after);
    tokenizer.set_special_tokens(std::move(before), std::move(after));
}

}  // namespace

namespace {

// token_label of an id whose piece is already in hand.
std::string label_of(const OpenedModel& m, int id, const std::string& piece) {
    // WordPiece's continuations keep their "##": "c ##a ##t" reads as one word cut in three.
    const std::string& stored = m.tokenizer->token(id);
    if (stored.size() > 2 && stored.compare(0, 2, "##") == 0 && piece == stored.substr(2)) return stored;
    const std::string label = tok::piece_label(piece);
    return label.empty() ? "#" + std::to_string(id) : label;
}

}  // namespace

std::string token_label(const OpenedModel& m, int id) {
    return m.tokenizer ? label_of(m, id, m.tokenizer->piece(id)) : "#" + std::to_string(id);
}

std::string token_description(const OpenedModel& m, int id, const std::vector<int>& before) {
    if (!m.tokenizer) return token_label(m, id);
    const std::string piece = m.tokenizer->piece(id);
    if (m.tokenizer->token(id).empty() || tok::whole_characters(piece)) return label_of(m, id, piece);
    // The text the ids before it stand for: the last 64 of them are enough for a word.
    std::string text;
    for (size_t i = before.size() > 64 ? before.size() - 64 : 0; i < before.size(); ++i) text += m.tokenizer->piece(before[i]);
    return tok::piece_description(piece, text);
}

namespace {

// The folder itself: there, a folder, and holding a checkpoint's files. None of them: one message
// saying what was expected, and the checkpoint folders one level down (the folder above a
// checkpoint, or a download's parent), which `inside` lists.
bool checkpoint_folder(const std::string& folder, OpenedModelLoad& out) {
    namespace fs = std::filesystem;
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0) {
        out.errors.push_back(folder + ": " + (errno == ENOENT ? std::string("no such folder") : reason_of_errno(errno)));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        out.errors.push_back(folder + ": is " + kind_of_mode(st.st_mode) + ", not a checkpoint folder (config.json, the weights, the tokenizer)");
        return false;
    }
    std::error_code ec;
    const fs::path root(folder);
    const char* const files[] = {"config.json", "model.safetensors", "model.safetensors.index.json", "tokenizer.json", "vocab.json", "merges.txt"};
    if (std::any_of(std::begin(files), std::end(files), [&](const char* f) { return fs::exists(fs::symlink_status(root / f, ec)); }))
        return true;
    for (fs::directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec) && fs::exists(it->path() / "config.json", ec)) out.inside.push_back(it->path().string());
    std::sort(out.inside.begin(), out.inside.end());
    std::string message = folder + ": no checkpoint here (config.json, model.safetensors and tokenizer.json were expected)";
    if (!out.inside.empty()) {
        message += "; the checkpoint folder" + std::string(out.inside.size() == 1 ? " inside it is " : "s inside it are ");
        for (std::size_t i = 0; i < out.inside.size() && i < 5; ++i) message += (i ? ", " : "") + out.inside[i];
        if (out.inside.size() > 5) message += ", \xE2\x80\xA6";
    }
    out.errors.push_back(message);
    return false;
}

}  // namespace

OpenedModelLoad open_model(const std::string& folder, bool with_tokenizer) {
    OpenedModelLoad out;
    if (!checkpoint_folder(folder, out)) return out;
    // Each file is read even when another failed, so that one attempt reports every fault (the
    // weights need the config's shapes, so a config that fails leaves them unread).
    ModelLoad load = load_model(folder);
    out.errors = std::move(load.errors);
    out.ignored = std::move(load.ignored);
    if (load.spec && load.weights)
        for (const std::string& why : not_computed(*load.spec)) out.errors.push_back(folder + "/config.json: " + why);
    std::optional<tok::TokenizerJson> tokenizer;
    if (with_tokenizer) {
        namespace fs = std::filesystem;
        const std::string tokenizer_file = (fs::path(folder) / "tokenizer.json").string();
        std::vector<std::string> tokenizer_errors;
        const std::string config_file = (fs::path(folder) / "tokenizer_config.json").string();
        const std::optional<nlohmann::json> config = read_tokenizer_config(config_file, tokenizer_errors);
        // GPT-2's folders may hold vocab.json and merges.txt instead, as transformers' GPT-2
        // tokenizer reads them: read as the tokenizer.json its converter makes of them.
        const fs::path vocab = fs::path(folder) / "vocab.json", merges = fs::path(folder) / "merges.txt";
        std::error_code ec;
        const std::optional<int> vocab_size = load.spec ? std::optional<int>(load.spec->vocab_size) : std::nullopt;
        if (!fs::exists(fs::symlink_status(tokenizer_file, ec)) &&
            (fs::exists(fs::symlink_status(vocab, ec)) || fs::exists(fs::symlink_status(merges, ec))))
            tokenizer = tok::TokenizerJson::from_vocab_merges(vocab.string(), merges.string(), tokenizer_errors, vocab_size);
        else
            tokenizer = load_tokenizer(tokenizer_file, config ? &*config : nullptr, tokenizer_errors);
        if (tokenizer && config) apply_special_tokens(config_file, *config, *tokenizer, tokenizer_errors);
        for (std::string& e : tokenizer_errors) out.errors.push_back(std::move(e));
        // More tokens than the embedding's rows is no fault of the folder (Gemma 3's tokenizer holds
        // the multimodal model's image token beyond the text model's vocab_size): a text that
        // produces one is refused where it is run (token_beyond_embedding).
    }
    if (!out.errors.empty() || !load.spec || !load.weights || (with_tokenizer && !tokenizer)) return out;
    out.model.emplace(OpenedModel{folder, std::move(*load.spec), std::move(*load.weights), std::move(tokenizer)});
    return out;
}

namespace {

// Layer ℓ's scenario from the family's weights (shared, not copied), labelled with `tokens`.
Scenario family_layer(const OpenedModel& m, const std::vector<std::string>* tokens, int layer, const Matrix& input) {
    const ModelSpec& spec = m.spec;
    const LayerSpec& ls = spec.layers[static_cast<size_t>(layer)];
    const LayerWeights& w = m.weights.layers[static_cast<size_t>(layer)];
    Scenario s;
    s.name = std::filesystem::path(m.folder).filename().string() + " layer " + std::to_string(layer + 1);
    s.d_model = spec.d_model;
    s.heads = spec.n_heads;
    s.kv_heads = spec.n_kv_heads;
    s.head_dim = spec.head_dim;
    s.target.embeddings = input;
    if (tokens != nullptr) s.target.tokens = *tokens;
    s.w_q = w.w_q;
    s.w_k = w.w_k;
    s.w_v = w.w_v;
    s.w_o = w.w_o;
    s.b_q = w.b_q;
    s.b_k = w.b_k;
    s.b_v = w.b_v;
    s.b_o = w.b_o;
    if (spec.positions == PositionKind::rope && ls.rope) {  // a NoPE layer (SmolLM3) turns nothing
        s.positional = PositionalEncoding::Rotary;
        s.rope = rope_options(spec, layer);
    }
    s.mask = !ls.causal ? (ls.window > 0 ? MaskKind::Band : MaskKind::None)  // BERT; ModernBERT's local layers: |i − j| ≤ W
             : ls.window > 0 ? MaskKind::SlidingWindow : ls.chunk > 0 ? MaskKind::Chunked : MaskKind::Causal;
    if (ls.window > 0) s.window = ls.window;
    if (ls.chunk > 0) s.chunk = ls.chunk;  // Llama 4's chunked layers
    if (ls.temperature) s.temperature = {static_cast<float>(spec.temperature_floor_scale), static_cast<float>(spec.temperature_attn_scale)};
    if (ls.qk_norm) s.qk_norm = true;  // Llama 4: weightless (ones), after RoPE there, the same numbers before it
    if (spec.qk_norm) {  // Qwen3, Gemma 3: RMSNorm of each head's q and k before RoPE; OLMo 2: of the whole projection
        s.qk_norm = true;
        s.qk_norm_plus_one = spec.norm.one_plus_weight;
        s.qk_norm_whole = spec.qk_norm_whole;
        s.q_norm = w.q_norm.weight;
        s.k_norm = w.k_norm.weight;
    }
    if (spec.sinks) s.sinks = w.sinks;  // gpt-oss: each head's learned sink logit
    if (spec.latent.kv_rank > 0) {  // DeepSeek-V3: K and V from the latent; d_k, d_v and H_kv are its own
        const LatentSpec& l = spec.latent;
        s.kv_heads = 0;
        s.head_dim = 0;
        s.w_k = s.w_v = SharedMatrix();
        s.latent.kv_rank = l.kv_rank;
        s.latent.q_rank = l.q_rank;
        s.latent.nope_dim = l.nope_dim;
        s.latent.rope_dim = l.rope_dim;
        s.latent.v_dim = l.v_dim;
        s.latent.w_q_a = w.w_q_a;
        s.latent.w_q_b = w.w_q_b;
        s.latent.w_kv_a = w.w_kv_a;
        s.latent.w_kv_b = w.w_kv_b;
        s.latent.b_q_a = w.b_q_a;
        s.latent.b_kv_a = w.b_kv_a;
        s.latent.q_a_norm = w.q_a_norm.weight;
        s.latent.kv_a_norm = w.kv_a_norm.weight;
    }
    s.score_scale = static_cast<float>(spec.attention_scale);
    s.softcap = static_cast<float>(spec.attn_logit_softcap);
    if (spec.differential) {  // DiffLlama: the heads in pairs; λ_init = lambda_init_fn(layer_idx), in double, used as float32
        s.differential.on = true;
        s.differential.lambda_init = static_cast<float>(0.8 - 0.6 * std::exp(-0.3 * static_cast<double>(layer)));
        s.differential.lambda_q1 = w.lambda_q1;
        s.differential.lambda_k1 = w.lambda_k1;
        s.differential.lambda_q2 = w.lambda_q2;
        s.differential.lambda_k2 = w.lambda_k2;
    }
    if (spec.output_gate && !ls.linear) {  // Qwen3-Next's full layers: each head's output × σ(x·W_G) before o_proj
        s.output_gate.on = true;
        s.output_gate.w_g = w.w_g;
    }
    if (ls.linear) {  // Qwen3-Next's Gated DeltaNet: no softmax, no RoPE, its own heads and weights
        const LinearSpec& n = spec.linear;
        s.positional = PositionalEncoding::None;
        s.rope = RopeOptions{};
        s.mask = MaskKind::Causal;
        s.qk_norm = s.qk_norm_plus_one = false;
        s.q_norm = s.k_norm = Vector();
        s.score_scale = 0.0f;
        s.heads = n.value_heads;
        s.kv_heads = 0;
        s.head_dim = n.value_dim;
        s.delta_net.on = true;
        s.delta_net.key_heads = n.key_heads;
        s.delta_net.key_dim = n.key_dim;
        s.delta_net.conv_kernel = n.conv_kernel;
        s.delta_net.w_z = w.w_z;
        s.delta_net.w_b = w.w_b;
        s.delta_net.w_a = w.w_a;
        s.delta_net.conv = w.conv;
        s.delta_net.a_log = w.a_log;
        s.delta_net.dt_bias = w.dt_bias;
        s.delta_net.norm = w.delta_norm;
    }
    BlockOptions& b = s.block;
    b.residual = b.layer_norm = b.feed_forward = true;
    b.d_ff = spec.d_ff;
    b.epsilon = static_cast<float>(spec.norm.epsilon);
    b.norm_kind = spec.norm.kind == NormKind::rms_norm ? attn::NormKind::RMSNorm : attn::NormKind::LayerNorm;
    b.gamma_plus_one = spec.norm.one_plus_weight;
    b.activation = engine_activation(spec.activation);
    b.gated = spec.mlp == MlpKind::gated;
    if (ls.moe) {  // Qwen3-MoE, Mixtral: the router and the experts in place of the one MLP
        b.d_ff = spec.experts.d_ff;
        b.moe.experts = spec.experts.experts;
        b.moe.top_k = spec.experts.experts_per_token;
        b.moe.normalize_top_k = spec.experts.normalize_top_k;
        if (spec.experts.top_k_then_softmax) b.moe.router_kind = RouterKind::TopKThenSoftmax;  // gpt-oss
        if (spec.experts.top_k_then_sigmoid) {  // Llama 4: σ of each kept logit, scaling what the expert reads
            b.moe.router_kind = RouterKind::TopKThenSigmoid;
            b.moe.weight_input = true;
        }
        if (spec.experts.sigmoid_grouped) {  // DeepSeek-V3
            b.moe.router_kind = RouterKind::SigmoidGrouped;
            b.moe.groups = spec.experts.groups;
            b.moe.top_groups = spec.experts.top_groups;
            b.moe.routed_scale = static_cast<float>(spec.experts.routed_scale);
            b.moe.choice_bias = w.choice_bias;
        }
        b.moe.swiglu_limit = static_cast<float>(spec.experts.swiglu_limit);
        b.moe.swiglu_alpha = static_cast<float>(spec.experts.swiglu_alpha);
        b.moe.router = w.router;
        b.moe.router_bias = w.router_bias;
        b.moe.weights.reserve(w.experts.size());
        for (const ExpertWeights& e : w.experts) b.moe.weights.push_back(Expert{e.w_gate, e.w_up, e.w_down, e.b_gate, e.b_up, e.b_down});
        if (spec.experts.shared_d_ff > 0) {  // Qwen2-MoE: the shared expert, and its gate
            const ExpertWeights& x = w.shared_expert;
            b.moe.shared_d_ff = spec.experts.shared_d_ff;
            b.moe.shared = Expert{x.w_gate, x.w_up, x.w_down, x.b_gate, x.b_up, x.b_down};
            b.moe.shared_gated = spec.experts.shared_gate;
            b.moe.shared_gate = w.shared_gate;
        }
    } else {
        b.w_gate = w.w_gate;
        b.w_1 = w.w_up;
        b.w_2 = w.w_down;
        b.b_1 = w.b_up;
        b.b_2 = w.b_down;
    }
    switch (spec.layout) {
        case BlockLayout::post_norm:  // BERT: LN(x + attention), then LN(y + MLP)
            b.norm = NormPlacement::Post;
            b.norm_1 = norm_params(w.post_attn_norm);
            b.norm_2 = norm_params(w.post_mlp_norm);
            break;
        case BlockLayout::pre_norm:
        case BlockLayout::parallel_residual:
        case BlockLayout::sandwich:
            b.norm = NormPlacement::Pre;
            b.norm_1 = norm_params(w.attn_norm);
            b.norm_2 = norm_params(w.mlp_norm);
            b.parallel_residual = spec.layout == BlockLayout::parallel_residual;
            b.attention_norm = ls.attn_norm;  // ModernBERT's first layer: attention reads the stream as it is
            b.sandwich_norm = spec.layout == BlockLayout::sandwich;
            if (b.sandwich_norm) {
                b.norm_post_attention = norm_params(w.post_attn_norm);
                b.norm_post_feed_forward = norm_params(w.post_mlp_norm);
            }
            break;
        case BlockLayout::after_sublayers:  // OLMo 2: x + N(attention(x)), then y + N(MLP(y)); no norm before either
            b.norm = NormPlacement::Pre;
            b.layer_norm = false;
            b.sandwich_norm = true;
            b.norm_post_attention = norm_params(w.post_attn_norm);
            b.norm_post_feed_forward = norm_params(w.post_mlp_norm);
            break;
    }
    // The family's scale, when it is the float the engine's own 1/√d_k gives, is left to the
    // engine (0), so the scenario reads as the usual ÷ √d_k; any other is the layer's own
    // (kept while scaling is turned off).
    if (s.score_scale > 0.0f && s.score_scale == 1.0f / std::sqrt(static_cast<float>(head_dim_of(s)))) s.score_scale = 0.0f;
    return s;
}

}  // namespace

Scenario layer_scenario(const OpenedModel& m, const std::vector<std::string>& tokens, int layer, const Matrix& input,
                        const stack::Ablation& ablated) {
    Scenario s = family_layer(m, &tokens, layer, input);
    stack::ablate(s, ablated, layer);
    return s;
}

stack::Stack model_stack(const OpenedModel& m, const std::vector<std::string>* tokens, const std::vector<int>* ids) {
    const ModelSpec& spec = m.spec;
    stack::Stack st;
    st.layers = spec.n_layers;
    st.d_model = spec.d_model;
    st.heads = spec.most_heads();
    st.layer_scenario = [&m, tokens](int layer, const Matrix& input, const Matrix*) { return family_layer(m, tokens, layer, input); };
    if (ids && m.weights.position_embedding.size() != 0 && !spec.embedding_norm && m.weights.token_type_embedding.size() == 0) {
        // x₀ = E[id]·scale + P[i] is layer 1's input: labelled as the engine labels an added
        // encoding, X and PE the tables' rows, x_pe = X + PE the input used.
        st.label_first_layer = [&m, ids](Trace& t) {
            const Eigen::Index n = static_cast<Eigen::Index>(ids->size());
            if (n != t.x_pe.rows()) return;   // a pass of other tokens: left as computed
            t.settings.positional = PositionalEncoding::Learned;
            t.x.resize(n, m.spec.d_model);
            t.pe.resize(n, m.spec.d_model);
            for (Eigen::Index i = 0; i < n; ++i) {
                m.weights.token_embedding.row_into((*ids)[static_cast<size_t>(i)], t.x.row(i).data());
                t.x.row(i) *= m.spec.embedding_scale;
                m.weights.position_embedding.row_into(static_cast<int>(i), t.pe.row(i).data());
            }
        };
    }
    // The head: the final norm and, for a causal LM, the next token's logits (BERT's masked
    // positions are read by forward_text from h).
    stack::Head& head = st.head;
    head.final_norm = spec.final_norm;
    head.norm = norm_params(m.weights.final_norm);
    head.norm_kind = spec.norm.kind == NormKind::rms_norm ? attn::NormKind::RMSNorm : attn::NormKind::LayerNorm;
    head.gamma_plus_one = spec.norm.one_plus_weight;
    head.epsilon = static_cast<float>(spec.norm.epsilon);
    if (spec.head == HeadKind::causal_lm) {
        head.unembedding = m.weights.unembedding();  // (V × d): logits = h·Uᵀ, shared
        head.tied = true;
        head.bias = &m.weights.lm_head_bias;
        head.last_row_only = true;
        head.softcap = static_cast<float>(spec.final_logit_softcap);
    }
    return st;
}

namespace {

// The largest |value| of a row, for a message about an overflow.
std::string largest(const Vector& v) { return value_text(v.size() ? v.cwiseAbs().maxCoeff() : 0.0f); }

// The first stage of a causal model's pass where NaN or ±∞ appears, and what brought it there,
// naming the stored tensor: the final norm's weight or bias, or the head's row.
NonFiniteOrigin causal_non_finite(const OpenedModel& m, const ModelPass& pass, const Matrix& probabilities) {
    const ModelSpec& spec = m.spec;
    const HeadTensorNames names = head_tensor_names(spec);
    const std::string final_norm = spec.final_norm ? names.final_norm : "the last layer";
    NonFiniteOrigin found = find_non_finite(pass, final_norm, &probabilities);
    auto token_named = [&](int id) {
        std::string label = m.tokenizer ? token_label(m, id) : std::string();
        if (label == "#" + std::to_string(id)) label.clear();  // a row no token uses
        return "id " + std::to_string(id) + (label.empty() ? std::string() : " ('" + label + "')");
    };
    if (found.stage == final_norm && spec.final_norm) {
        const NormWeights& norm = m.weights.final_norm;
        for (const auto& [part, values] : {std::pair<const char*, const Vector*>{".weight", &norm.weight}, {".bias", &norm.bias}}) {
            const Cell bad = first_non_finite(*values);
            if (bad.valid())
                return {final_norm, final_norm + part + "[" + std::to_string(bad.col) + "] is " + value_text((*values)(bad.col)) +
                                        ": the final norm carries it to every row and every logit"};
        }
        const Cell cell = first_non_finite(pass.final_output);
        const Eigen::Index row = cell.row;
        const Vector input = stack::layer_output(pass.layers.back()).row(row);
        return {final_norm, "row " + std::to_string(row + 1) + " ('" + pass.tokens[static_cast<size_t>(row)] + "') is " +
                                value_text(pass.final_output(row, cell.col)) +
                                " from finite values: the final norm overflowed the float range (about \xC2\xB1" "3.4e38); its input there reaches " +
                                largest(input) + ", " + final_norm + ".weight " + largest(norm.weight) +
                                (norm.bias.size() ? ", " + final_norm + ".bias " + largest(norm.bias) : std::string())};
    }
    if (found.stage == "the logits") {
        // logit t = the last row · the head's row t: every row of the head meets the prediction,
        // also those no token of the sentence uses.
        const Cell logit = first_non_finite(pass.logits);
        const int id = logit.col;
        const std::string start = "the last token's logit for " + token_named(id) + " is " + value_text(pass.logits(0, id));
        const SharedMatrix& head = m.weights.unembedding();
        const Vector row = head.row_vector(id);
        const std::string tensor = names.lm_head.empty() ? names.embedding : names.lm_head;
        if (const Cell bad = first_non_finite(row); bad.valid())
            return {"the logits", start + ", from " + tensor + "[" + std::to_string(id) + ", " + std::to_string(bad.col) + "] = " +
                                      value_text(row(bad.col)) +
                                      (names.lm_head.empty() ? " (" + names.embedding_short + " is also the LM head)" : std::string())};
        return {"the logits", start + " from finite values: the last row \xC2\xB7 " + tensor + " row " + std::to_string(id) + " (reaching " +
                                  largest(row) + ") is beyond the float range (about \xC2\xB1" "3.4e38)"};
    }
    return found;
}

// What the model predicts from the stack's pass: the next token's top 5, or each [MASK]'s
// (BERT's MLM head: dense, activation, LayerNorm, then the tied decoder with its bias); and
// where NaN or ±∞ first arose.
void read_prediction(const OpenedModel& m, ModelPass& pass) {
    const ModelSpec& spec = m.spec;
    pass.next_token_top5.clear();
    pass.masked_predictions.clear();
    const std::string final_norm = spec.final_norm ? "the final norm" : "the last layer";
    if (spec.head == HeadKind::causal_lm) {
        const Matrix probabilities = softmax_rows(pass.logits, SoftmaxKind::Stable);  // (1 × V)
        pass.next_token_top5 = top_predictions(m, probabilities, 5, &pass.token_ids);
        pass.non_finite = causal_non_finite(m, pass, probabilities);
        return;
    }
    pass.non_finite = find_non_finite(pass, final_norm);
    const std::optional<int> mask = spec.mask_token_id ? spec.mask_token_id : m.tokenizer ? m.tokenizer->id("[MASK]") : std::nullopt;
    const Matrix& h = pass.final_output;
    for (int i = 0; i < static_cast<int>(pass.token_ids.size()); ++i) {
        if (!mask || pass.token_ids[static_cast<size_t>(i)] != *mask) continue;
        Matrix t;
        product_into(Matrix(h.row(i)), m.weights.mlm_dense, t);  // (1 × d)·(d × d)
        if (m.weights.mlm_dense_bias.size() != 0) t.row(0) += m.weights.mlm_dense_bias;
        t = activate(t, engine_activation(spec.mlm_activation));
        t = apply_norm(t, spec.norm, m.weights.mlm_norm);
        const Matrix logits = unembed(m, t);
        const Matrix probabilities = softmax_rows(logits, SoftmaxKind::Stable);
        if (!pass.non_finite.any()) {
            if (const Cell c = first_non_finite(logits); c.valid())
                pass.non_finite = {"the logits", "[MASK] at token " + std::to_string(i + 1) + ": the logit of id " + std::to_string(c.col) +
                                                     " is not finite"};
            else if (const Cell p = first_non_finite(probabilities); p.valid())
                pass.non_finite = {"the softmax", "[MASK] at token " + std::to_string(i + 1) + ": a probability is not finite"};
        }
        pass.masked_predictions.push_back({i, top_predictions(m, probabilities, 5)});
    }
}

}  // namespace

std::vector<std::string> validate(const OpenedModel& m, const std::vector<int>& ids) {
    std::vector<std::string> errors;
    const ModelSpec& spec = m.spec;
    const int n = static_cast<int>(ids.size());
    if (n == 0) errors.push_back("the text has no token: the model needs at least one");
    if (spec.positions == PositionKind::learned_absolute && n > spec.max_positions)
        errors.push_back("the text has " + std::to_string(n) + " tokens; the model reads at most " + spec.positions_key + " = " +
                         std::to_string(spec.max_positions) + " (its position table has that many rows)");
    const Eigen::Index rows = m.weights.token_embedding.rows();
    for (int i = 0; i < n; ++i)
        if (const int id = ids[static_cast<size_t>(i)]; id < 0 || id >= rows) {
            const std::string token = m.tokenizer && id >= 0 ? m.tokenizer->token(id) : std::string();
            errors.push_back("token " + std::to_string(i + 1) + " has id " + std::to_string(id) + (token.empty() ? "" : " `" + token + "`") +
                             ", beyond the model's embedding of " + std::to_string(rows) + " rows");
            break;
        }
    return errors;
}

std::vector<int> encode_text(const OpenedModel& m, const std::string& text, std::vector<std::string>& errors) {
    if (!m.tokenizer) {
        errors.push_back(m.folder + ": no tokenizer.json was read: the text cannot be made into ids");
        return {};
    }
    try {
        return m.tokenizer->encode(text);
    } catch (const tok::EncodeError& e) {
        errors.push_back(m.folder + "/tokenizer.json cannot encode the text: " + e.what());
    } catch (const std::bad_alloc&) {
        errors.push_back(m.folder + "/tokenizer.json: not enough memory to encode the text's " + std::to_string(text.size()) + " bytes");
    }
    return {};
}

ModelPass forward_text(const OpenedModel& m, const std::string& text, const stack::Ablation& ablated) {
    std::vector<std::string> errors;
    std::vector<int> ids = encode_text(m, text, errors);
    if (!errors.empty()) {
        ModelPass out;
        out.ablated = ablated;
        out.errors = std::move(errors);
        return out;
    }
    if (std::string beyond = token_beyond_embedding(m, text, ids); !beyond.empty()) {
        ModelPass out;
        out.ablated = ablated;
        out.token_ids = std::move(ids);
        out.errors.push_back(std::move(beyond));
        return out;
    }
    return forward_ids(m, std::move(ids), ablated);
}

namespace {

// The characters (UTF-8 code points) of text before byte `end`.
int characters_before(const std::string& text, size_t end) {
    int n = 0;
    for (size_t i = 0; i < end && i < text.size(); ++i)
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++n;
    return n;
}

}  // namespace

std::string token_beyond_embedding(const OpenedModel& m, const std::string& text, const std::vector<int>& ids) {
    const Eigen::Index rows = m.weights.token_embedding.rows();
    for (size_t i = 0; i < ids.size(); ++i) {
        const int id = ids[i];
        if (id >= 0 && id < rows) continue;
        const std::string token = m.tokenizer ? m.tokenizer->token(id) : std::string();
        // Where the text holds it: the k-th place its content appears, k the tokens of this id
        // before it (an added token such as <image_soft_token> is cut from the text as it is).
        std::string where = "as token " + std::to_string(i + 1) + " of the sentence";
        const std::string piece = m.tokenizer ? m.tokenizer->piece(id) : std::string();
        if (!piece.empty()) {
            const long before = std::count(ids.begin(), ids.begin() + static_cast<long>(i), id);
            size_t at = text.find(piece);
            for (long k = 0; k < before && at != std::string::npos; ++k) at = text.find(piece, at + piece.size());
            if (at != std::string::npos) where = "at character " + std::to_string(characters_before(text, at) + 1) + " of the sentence";
        }
        return "token " + std::to_string(id) + (token.empty() ? std::string() : " `" + token + "`") + " " + where +
               " is beyond the model's embedding of " + std::to_string(rows) + " rows";
    }
    return {};
}

ModelPass forward_ids(const OpenedModel& m, std::vector<int> ids, const stack::Ablation& ablated) {
    ModelPass out;
    out.ablated = ablated;
    forward_ids_into(m, std::move(ids), out);
    return out;
}

Matrix embed(const OpenedModel& m, const std::vector<int>& ids, int first_position) {
    const ModelSpec& spec = m.spec;
    const int n = static_cast<int>(ids.size());
    // x₀: the embedding rows, scaled (Gemma), plus positions and token type 0 with their norm (BERT).
    // The tables' rows are read where the checkpoint stores them (stored_matrix.hpp).
    Matrix x0(n, spec.d_model);
    for (int i = 0; i < n; ++i) {
        m.weights.token_embedding.row_into(ids[static_cast<size_t>(i)], x0.row(i).data());
        x0.row(i) *= spec.embedding_scale;
        if (m.weights.position_embedding.size() != 0) x0.row(i) += m.weights.position_embedding.row_vector(first_position + i);
        if (m.weights.token_type_embedding.size() != 0) x0.row(i) += m.weights.token_type_embedding.row_vector(0);
    }
    if (spec.embedding_norm) x0 = apply_norm(x0, spec.norm, m.weights.embedding_norm);
    return x0;
}

bool forward_ids_into(const OpenedModel& m, std::vector<int> ids, ModelPass& out) {
    // Everything but the traces' storage starts afresh.
    out.ok = false;
    out.errors.clear();
    out.tokens.clear();
    out.next_token_top5.clear();
    out.masked_predictions.clear();
    out.non_finite = {};
    out.token_ids = std::move(ids);
    out.errors = validate(m, out.token_ids);
    if (!out.errors.empty()) {
        out.layers.clear();  // no trace of an earlier sentence stays beside these errors
        return false;
    }
    for (int id : out.token_ids) out.tokens.push_back(token_label(m, id));
    Matrix x0 = embed(m, out.token_ids, 0);
    const stack::Stack st = model_stack(m, &out.tokens, &out.token_ids);
    if (!stack::forward_into(st, std::move(x0), Matrix(), out)) return false;
    read_prediction(m, out);
    return true;
}

bool recompute_from(const OpenedModel& m, int layer, ModelPass& pass, const Scenario* edited) {
    const stack::Stack st = model_stack(m, &pass.tokens, &pass.token_ids);
    if (!stack::recompute_from(st, layer, pass, edited)) return false;
    read_prediction(m, pass);
    return true;
}

}  // namespace attn::hf
