#include "generate/model_writers.hpp"

#include <cmath>
#include <cstdio>

#include "model/hf/model.hpp"

namespace attn::generate {

Writer writer(const lm::Model& model) {
    Writer w;
    auto kept = std::make_shared<ModelPass>();  // the tokens a stack's traces would be labelled with: none
    w.keep = kept;
    w.stack = lm::model_stack(model, *kept);
    w.vocab_size = model.shape().vocab_size;
    w.max_positions = model.shape().max_positions;
    w.token_text = [&model](int id) { return model.token_text(id); };
    const hf::OpenedModel* m = &model.opened();
    w.embed = [m](int id, int position) { return hf::embed(*m, {id}, position); };
    if (model.masked_lm())
        w.cannot = model.family() + " is a masked language model: it reads the whole sentence at once, each token seeing the "
                                    "later ones, and predicts masked tokens; it does not write one token after another";
    return w;
}

Writer writer(const train::Model& model) {
    Writer w;
    auto input = std::make_shared<train::ModelInput>();
    w.keep = input;
    w.stack = train::make_stack(model, *input);
    w.vocab_size = model.config.vocab_size;
    w.max_positions = model.config.max_positions;
    w.token_text = [&model](int id) { return model.vocabulary[static_cast<size_t>(id)]; };
    const bool learned = model.config.positional == PositionalEncoding::Learned;
    w.embed = [&model, learned](int id, int position) {
        Matrix x = model.params.token_embedding.row(id);  // E[id] (1 × d)
        if (learned) x += model.params.position_embedding.row(position);
        return x;
    };
    if (model.config.attention == AttentionKind::Cross)
        w.cannot = "a cross-attention model reads a source sequence beside the text; it writes only with that source given";
    return w;
}

double element_bytes(const lm::Model& model) {
    const lm::HeldWeights held = model.held_weights();
    return held.elements > 0 ? std::round(held.bytes / held.elements) : 4.0;
}

std::string bytes_text(double bytes) {
    char text[48];
    if (bytes >= 1024.0 * 1024 * 1024) std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    else if (bytes >= 1024.0 * 1024) std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024));
    else if (bytes >= 1024.0) std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
    else std::snprintf(text, sizeof text, "%.0f B", bytes);
    return text;
}

namespace {

std::string probability_text(float p) {
    char text[16];
    std::snprintf(text, sizeof text, "%.2f", static_cast<double>(p));
    return text;
}

// A distribution's most likely tokens: "f 0.97, e 0.01, d 0.01, c 0.00".
std::string top_text(const train::Model& model, const std::vector<float>& p, int count) {
    std::string text;
    for (int id : generate::ranked(p, count))
        text += (text.empty() ? "" : ", ") + model.vocabulary[static_cast<size_t>(id)] + " " + probability_text(p[static_cast<size_t>(id)]);
    return text;
}

}  // namespace

WrittenText write_after(const train::Model& model, const std::vector<std::string>& prompt_names, int tokens, const SamplerSettings& sampler,
                        const stack::Ablation& ablated) {
    WrittenText out;
    std::vector<std::string>& lines = out.lines;
    std::string error;
    const std::vector<int> prompt = train::token_ids(model, prompt_names, &error);
    const Writer writer = generate::writer(model);
    Writing writing;
    std::string why;
    if (!error.empty() || !prefill_by_steps(writer, prompt, ablated, writing, &why)) {
        lines.push_back("The model cannot write: " + (error.empty() ? why : error));
        out.ids = prompt;
        return out;
    }
    std::string prompt_text;
    for (const std::string& name : prompt_names) prompt_text += (prompt_text.empty() ? "" : " ") + name;
    std::string mode = sampler.greedy() ? "greedy" : "temperature " + probability_text(sampler.temperature);
    if (!sampler.greedy() && sampler.top_k > 0) mode += ", top-k " + std::to_string(sampler.top_k);
    if (!sampler.greedy() && sampler.top_p < 1.0f) mode += ", top-p " + probability_text(sampler.top_p);
    if (!sampler.greedy()) mode += ", seed " + std::to_string(sampler.seed);
    if (std::optional<Sampled> first = preview(writing.logits, sampler, &why)) {
        lines.push_back("After the prompt \"" + prompt_text + "\", the next token: " + top_text(model, first->probability, 4) +
                        (sampler.greedy() || sampler.temperature == 1.0f ? "" : "; at " + mode + ": " + top_text(model, first->tempered, 4)));
    }
    std::string written, steps;
    for (int k = 0; k < tokens && !writing.full(); ++k) {
        const std::optional<Sampled> s = sample(writing.logits, sampler, static_cast<int>(writing.ids.size()), &why);
        if (!s) break;
        const std::string& token = model.vocabulary[static_cast<size_t>(s->chosen)];
        written += (written.empty() ? "" : " ") + token;
        steps += (steps.empty() ? "" : "; ") + token + " p " + probability_text(s->probability[static_cast<size_t>(s->chosen)]) + ", " +
                 std::to_string(s->kept.size()) + " kept";
        if (!step(writer, writing, s->chosen, nullptr, &why)) break;
    }
    if (tokens > 0) {
        lines.push_back("Written (" + mode + "): " + prompt_text + " \xE2\x86\x92 " + written);
        lines.push_back("Each step (the token, its probability under the model, how many tokens the draw chose among): " + steps);
    }
    const std::vector<LayerCacheShape> shapes = cache_shapes(writer);
    const CacheCost cost = cache_cost(shapes, model.config.heads, 4.0, static_cast<long long>(writing.ids.size()));
    lines.push_back("KV cache: " + std::to_string(shapes.size()) + (shapes.size() == 1 ? " layer" : " layers") + " \xC3\x97 " +
                    std::to_string(shapes.front().kv_heads) + " K/V heads \xC3\x97 (K and V of " + std::to_string(shapes.front().key_dim) +
                    ") = " + bytes_text(cost.bytes_per_token) + " a token in float32; the text's " + std::to_string(writing.ids.size()) +
                    " tokens: " + bytes_text(cost.bytes) + (writing.full() ? " (the last token written fills the model's positions: it is never read)" : ""));
    out.ids = writing.ids;
    out.last_unread = writing.full();
    if (writing.full()) out.ids.pop_back();  // never read: the model has no position for it
    return out;
}


}  // namespace attn::generate
