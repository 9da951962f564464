#include "model/language_model.hpp"

#include <initializer_list>
#include <set>

#include "io/json_read.hpp"  // byte_size_text

namespace attn::lm {

namespace {

Shape shape_of(const hf::OpenedModel& m) {
    const hf::ModelSpec& s = m.spec;
    return Shape{s.n_layers, s.most_heads(), s.n_kv_heads, s.d_model, s.head_dim, s.vocab_size,
                 s.positions == hf::PositionKind::learned_absolute ? s.max_positions : 0};
}

}  // namespace

Model::Model(hf::OpenedModel model) : opened_(std::move(model)), shape_(shape_of(opened_)) {}

std::string Model::family() const { return hf::family_name(model_type()); }

int Model::window(int layer) const {
    const hf::ModelSpec& spec = opened_.spec;
    if (layer < 0 || layer >= static_cast<int>(spec.layers.size())) return 0;
    return spec.layers[static_cast<size_t>(layer)].window;
}

bool Model::masked_lm() const { return opened_.spec.head == hf::HeadKind::masked_lm; }

std::vector<int> Model::encode(const std::string& text, std::vector<std::string>& errors) const {
    return hf::encode_text(opened_, text, errors);
}

std::string Model::token_text(int id) const { return hf::token_label(opened_, id); }
std::string Model::token_description(int id, const std::vector<int>& before) const { return hf::token_description(opened_, id, before); }

std::string Model::text_of(const std::vector<int>& ids) const {
    std::string text;
    for (int id : ids) text += opened_.tokenizer ? opened_.tokenizer->piece(id) : "#" + std::to_string(id);
    return valid_utf8(text);
}

std::string Model::vocabulary_token(int id) const { return opened_.tokenizer ? opened_.tokenizer->token(id) : std::string(); }

std::string Model::token_beyond_embedding(const std::string& text) const {
    if (!opened_.tokenizer) return {};
    std::vector<std::string> unencoded;  // a text the tokenizer cannot encode: forward_text says why
    const std::vector<int> ids = hf::encode_text(opened_, text, unencoded);
    return unencoded.empty() ? hf::token_beyond_embedding(opened_, text, ids) : std::string();
}

std::string Model::tokens_beyond_embedding() const {
    const hf::OpenedModel* m = &opened_;
    if (!m->tokenizer) return {};
    const int rows = static_cast<int>(m->weights.token_embedding.rows()), tokens = m->tokenizer->size();
    if (tokens <= rows) return {};
    const int beyond = tokens - rows;
    std::string named;
    for (int id = rows; id < tokens && id < rows + 3; ++id) named += (named.empty() ? "`" : ", `") + m->tokenizer->token(id) + "`";
    if (beyond > 3) named += ", …";
    return "tokenizer.json holds " + std::to_string(tokens) + " tokens, " + std::to_string(beyond) + " beyond the embedding's " +
           std::to_string(rows) + " rows (" + named + "): a sentence that produces " + (beyond == 1 ? "it" : "one") + " is refused";
}

std::vector<std::string> Model::validate(const std::vector<int>& ids) const { return hf::validate(opened_, ids); }

Scenario Model::layer_scenario(const std::vector<std::string>& tokens, int layer, const Matrix& input, const stack::Ablation& ablated) const {
    return hf::layer_scenario(opened_, tokens, layer, input, ablated);
}

namespace {

HeldWeights held_of(std::initializer_list<const SharedMatrix*> tables, const std::vector<std::vector<const SharedMatrix*>>& layers) {
    HeldWeights h;
    std::set<std::string> dtypes;
    auto add = [&](const SharedMatrix& w) {
        if (w.size() == 0) return;  // a table this family has not
        h.elements += static_cast<double>(w.size());
        if (const StoredMatrix* s = w.stored()) {
            h.bytes += static_cast<double>(s->stored_bytes());
            dtypes.insert(s->storage_name());
        } else {
            h.bytes += static_cast<double>(w.size()) * sizeof(float);
            dtypes.insert("float32");
        }
    };
    for (const SharedMatrix* w : tables) add(*w);
    for (const auto& layer : layers)
        for (const SharedMatrix* w : layer) add(*w);
    for (const std::string& d : dtypes) h.dtypes += (h.dtypes.empty() ? "" : " and ") + d;
    return h;
}

}  // namespace

std::string HeldWeights::sentence() const {
    return "weights " + dtypes + ", " + byte_size_text(static_cast<std::uint64_t>(bytes)) +
           (dtypes.find("float32") == std::string::npos ? " read in place from the file" : "");
}

HeldWeights held_weights(const hf::OpenedModel& m) {
    const hf::Weights& w = m.weights;
    std::vector<std::vector<const SharedMatrix*>> layers;
    for (const hf::LayerWeights& l : w.layers) {
        layers.push_back({&l.w_q, &l.w_k, &l.w_v, &l.w_o, &l.w_gate, &l.w_up, &l.w_down, &l.router});
        for (const hf::ExpertWeights& e : l.experts) layers.push_back({&e.w_gate, &e.w_up, &e.w_down});  // a mixture's experts
        const hf::ExpertWeights& shared = l.shared_expert;  // and its shared expert (Qwen2-MoE)
        layers.push_back({&shared.w_gate, &shared.w_up, &shared.w_down, &l.shared_gate});
    }
    return held_of({&w.token_embedding, &w.position_embedding, &w.token_type_embedding, &w.lm_head, &w.mlm_dense}, layers);
}

HeldWeights Model::held_weights() const { return lm::held_weights(opened_); }

std::vector<std::pair<std::string, std::string>> Model::layer_weight_names(int layer) const {
    return hf::layer_weight_names(opened_.spec, layer);
}

ModelLoad load_model(const std::string& folder) {
    ModelLoad load;
    hf::OpenedModelLoad opened = hf::open_model(folder);
    load.errors = std::move(opened.errors);
    load.inside = std::move(opened.inside);
    // A multimodal folder's other towers (Qwen3.5's vision tower) are counted apart: hundreds of
    // tensors, none of them the text model's
    std::vector<std::string> dropped;
    int tower = 0;
    for (const std::string& name : opened.ignored) {
        if (opened.model && opened.model->spec.in_other_tower(name)) ++tower;
        else dropped.push_back(name);
    }
    if (opened.model && !opened.model->spec.multimodal_type.empty()) {
        const hf::ModelSpec& spec = opened.model->spec;
        load.ignored = "the text model of a multimodal folder (model_type \"" + spec.multimodal_type + "\"), its tensors under " + spec.tensor_prefix;
        if (tower > 0)
            load.ignored += "; " + std::to_string(tower) + " tensors of its other towers (" + spec.skipped_prefixes.front() + "\xE2\x80\xA6) not read";
    }
    if (!dropped.empty()) {
        load.ignored += (load.ignored.empty() ? "" : "; ") + std::string("ignored ") + std::to_string(dropped.size()) + " tensors the family recomputes or drops: ";
        for (size_t i = 0; i < dropped.size() && i < 3; ++i) load.ignored += (i ? ", " : "") + dropped[i];
        if (dropped.size() > 3) load.ignored += ", \xE2\x80\xA6";
    }
    if (opened.model) load.model.emplace(std::move(*opened.model));
    return load;
}

int Model::experts_in_layer(int layer) const {
    const hf::ModelSpec& spec = opened_.spec;
    if (layer < 0 || layer >= static_cast<int>(spec.layers.size())) return 0;
    return spec.layers[static_cast<size_t>(layer)].moe ? spec.experts.experts : 0;
}

stack::Ablation Model::fitting(const stack::Ablation& ablated) const {
    stack::Ablation fits;
    for (const stack::HeadId& id : ablated.heads)
        if (id.within(shape_.layers, shape_.heads)) fits.heads.insert(id);
    for (const stack::ExpertId& id : ablated.experts)
        if (id.expert >= 0 && id.expert < experts_in_layer(id.layer)) fits.experts.insert(id);
    return fits;
}

ModelPass forward_text(const Model& model, const std::string& text, const stack::Ablation& ablated) {
    return hf::forward_text(model.opened(), text, ablated);
}

ModelPass forward_ids(const Model& model, const std::vector<int>& ids, const stack::Ablation& ablated) {
    return hf::forward_ids(model.opened(), ids, ablated);
}

stack::Stack model_stack(const Model& model, const ModelPass& pass) {
    return hf::model_stack(model.opened(), &pass.tokens, &pass.token_ids);
}

bool recompute_from(const Model& model, int layer, ModelPass& pass, const Scenario* edited) {
    return hf::recompute_from(model.opened(), layer, pass, edited);
}

const Matrix& layer_input(const Trace& trace) { return trace.x_pe; }

}  // namespace attn::lm
