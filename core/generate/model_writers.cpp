#include "generate/model_writers.hpp"

#include <cmath>

#include "gpt2/model.hpp"
#include "hf_model/model.hpp"

namespace attn::generate {

Writer writer(const lm::Model& model) {
    Writer w;
    auto kept = std::make_shared<ModelPass>();  // the tokens a stack's traces would be labelled with: none
    w.keep = kept;
    w.stack = lm::model_stack(model, *kept);
    w.vocab_size = model.shape().vocab_size;
    w.max_positions = model.shape().max_positions;
    w.token_text = [&model](int id) { return model.token_text(id); };
    if (const gpt2::Checkpoint* c = model.gpt2()) {
        w.embed = [c](int id, int position) { return gpt2::embed(*c, {id}, position); };
    } else {
        const hf::OpenedModel* m = model.hf();
        w.embed = [m](int id, int position) { return hf::embed(*m, {id}, position); };
    }
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

}  // namespace attn::generate
