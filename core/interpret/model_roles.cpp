#include "interpret/model_roles.hpp"

#include <algorithm>

#include "tokenizer/text.hpp"

namespace attn::interpret {

namespace {

// The tokenizer's BOS: the first of the ids its template puts before a text, or none.
std::optional<int> leading_special(const std::vector<int>& with, const std::vector<int>& without) {
    if (without.empty()) return std::nullopt;
    const auto at = std::search(with.begin(), with.end(), without.begin(), without.end());
    if (at == with.end() || at == with.begin()) return std::nullopt;
    return with.front();
}

std::optional<RolesRun> did_not_run(const std::vector<std::string>& errors, std::string* why) {
    if (why) {
        *why = "the probe did not run:";
        for (const std::string& e : errors) *why += " " + e;
    }
    return std::nullopt;
}

std::optional<RolesRun> scored(Probe probe, std::vector<std::string> tokens, std::vector<Trace> layers, std::string* why) {
    RolesRun run;
    run.heads = head_roles(layers, probe.repeat_length);
    if (run.heads.empty()) {
        if (why) *why = "the probe's pass kept no attention weights to score";
        return std::nullopt;
    }
    run.probe = std::move(probe);
    run.tokens = std::move(tokens);
    run.layers = std::move(layers);
    return run;
}

}  // namespace

ProbeVocabulary probe_vocabulary(const lm::Model& model) {
    ProbeVocabulary v;
    v.size = model.shape().vocab_size;
    v.max_positions = model.shape().max_positions;
    const hf::OpenedModel& m = model.opened();
    if (!m.tokenizer) return v;  // ids only: every row of the embedding
    const tok::TokenizerJson& t = *m.tokenizer;
    v.size = std::min(v.size, t.size());
    for (int id = 0; id < v.size; ++id)
        if (t.is_special(id) || t.token(id).empty()) v.excluded.push_back(id);
    try {
        v.bos = leading_special(t.encode("a"), t.encode_without_special_tokens("a"));
    } catch (const tok::EncodeError&) {
        // "a" encodes under every pattern and normalizer bound; no BOS is the safe reading.
    }
    if (v.bos && *v.bos >= v.size) v.bos.reset();
    return v;
}

ProbeVocabulary probe_vocabulary(const train::Model& model, const train::TaskOptions& task) {
    ProbeVocabulary v;
    v.size = model.config.vocab_size;
    v.max_positions = model.config.max_positions;
    const int separator = train::separator_id(task);
    if (separator >= 0 && separator < v.size) v.excluded.push_back(separator);
    return v;
}

std::optional<RolesRun> run_head_roles(const lm::Model& model, int repeat_length, std::uint64_t seed, std::string* why) {
    const ProbeVocabulary vocabulary = probe_vocabulary(model);
    std::optional<Probe> probe = make_probe(vocabulary, repeat_length > 0 ? repeat_length : default_repeat_length(vocabulary), seed, why);
    if (!probe) return std::nullopt;
    ModelPass pass = lm::forward_ids(model, probe->ids);
    if (!pass.ok) return did_not_run(pass.errors, why);
    return scored(std::move(*probe), std::move(pass.tokens), std::move(pass.layers), why);
}

std::optional<RolesRun> run_head_roles(const train::Model& model, const train::TaskOptions& task, int repeat_length,
                                       std::uint64_t seed, std::string* why) {
    if (model.config.attention == AttentionKind::Cross) {
        if (why) *why = "a cross-attention model reads a source and a target: the probe is one sequence";
        return std::nullopt;
    }
    const ProbeVocabulary vocabulary = probe_vocabulary(model, task);
    // By default the block is as long as the content the model was trained on: a longer one
    // asks it about positions its training never showed it.
    const int trained_length = std::max(kMinRepeatLength, std::min(task.length, longest_repeat_length(vocabulary)));
    std::optional<Probe> probe = make_probe(vocabulary, repeat_length > 0 ? repeat_length : trained_length, seed, why);
    if (!probe) return std::nullopt;
    train::ModelInput input;
    input.tokens = probe->ids;
    train::ForwardPass pass = train::forward(model, input);
    if (!pass.ok) return did_not_run(pass.errors, why);
    std::vector<std::string> tokens;
    for (int id : probe->ids) tokens.push_back(model.vocabulary[static_cast<size_t>(id)]);
    return scored(std::move(*probe), std::move(tokens), std::move(pass.layers), why);
}

}  // namespace attn::interpret
