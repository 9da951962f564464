#pragma once
// The session fuzz target's work, shared with the test that replays its regressions: any
// bytes through the session reader, then every model the session references restored as the
// window restores it — a GPT-2 choice checked against a small checkpoint (the folder named is
// not opened: every session meets the same one) and applied (ablations, the layer opened from
// the session's scenario), a trained run re-created at its step and its opened layer run
// again from the scenario. False when the code contradicts itself; nothing may crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "fuzz_common.hpp"
#include "model/gpt2/checkpoint.hpp"
#include "model/language_model.hpp"
#include "session_file.hpp"
#include "train/trainer.hpp"

namespace attn::fuzz {

// 2 layers, 2 heads, d = 8, 16 positions, the 256 byte tokens and one merge.
inline const gpt2::Checkpoint& session_checkpoint() {
    static const gpt2::Checkpoint checkpoint = [] {
        gpt2::Config config;
        config.n_layer = 2;
        config.n_head = 2;
        config.n_embd = 8;
        config.n_positions = 16;
        config.vocab_size = 257;
        config.n_inner = 16;
        std::vector<std::string> errors;
        auto tokenizer = tok::ByteLevelBpe::from_merges({{"h", "e"}}, errors);
        return gpt2::random_checkpoint(config, 7, std::move(*tokenizer));
    }();
    return checkpoint;
}

// The same checkpoint as the model view holds it: written once to a folder of the process's own
// (removed as it exits) and opened by the family table.
inline const lm::Model& session_model() {
    static const std::string folder =
        (std::filesystem::temp_directory_path() / ("attnlab-fuzz-session-" + std::to_string(getpid()))).string();
    static const lm::Model model = [] {
        std::string error;
        if (!gpt2::write_checkpoint(folder, session_checkpoint(), {}, &error)) std::abort();
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(folder, ec);
        });
        lm::ModelLoad load = lm::load_model(folder);
        if (!load.model) std::abort();
        return std::move(*load.model);
    }();
    return model;
}

inline bool exercise_session_model(const session_file::ModelChoice& choice, const Scenario& scenario) {
    const lm::Model& model = session_model();
    const gpt2::Config& config = session_checkpoint().config;
    const std::string sentence = choice.sentence.empty() ? "the cat" : choice.sentence;
    ModelPass pass = lm::forward_text(model, sentence);
    const session_file::ModelRestore restore = session_file::check_model_choice(choice, session_model(), sentence, pass, scenario);
    for (const auto& head : restore.ablated.heads)
        if (head.layer < 0 || head.layer >= config.n_layer || head.head < 0 || head.head >= config.n_head) return false;
    if (!restore.ablated.empty() && pass.ok) {
        pass.ablated = restore.ablated;
        if (!lm::recompute_from(model, 0, pass)) return false;   // every head checked: the recompute must run
    }
    if (restore.layer < 0) return true;
    // A layer the check let through is that layer: the window recomputes from it as edited.
    if (!pass.ok || restore.layer >= config.n_layer || restore.head < 0 || restore.head >= config.n_head) return false;
    if (!small_enough(scenario)) return true;
    lm::recompute_from(model, restore.layer, pass, &scenario);   // may refuse with a message (NaN typed in); never crash
    return true;
}

inline bool exercise_session_trained(const session_file::TrainedChoice& trained, const Scenario& scenario) {
    const train::ModelFile& file = trained.file;
    if (train::parameter_count(file.model.params) > 50000 || file.model.config.max_positions > 32) return true;   // bounded work
    std::vector<std::string> errors;
    // At any step count the run is re-created at once (no example is replayed).
    auto trainer = train::Trainer::create(file.settings, file.model, file.steps, errors, file.optimiser ? &*file.optimiser : nullptr);
    // The history was checked against the model when the session was read: the run takes it.
    if (trainer && trained.history && !trainer->restore(*trained.history).empty()) return false;
    if (trainer && file.settings.batch_size <= 16 && file.steps <= 1000) trainer->step();
    if (!trained.opened || trained.layer < 0) return true;
    // The opened layer was checked against the scenario when the session was read: it runs.
    if (!train::layer_scenario_faults(trained.opened->model, trained.layer, scenario).empty()) return false;
    if (!small_enough(scenario)) return true;
    train::ModelInput input;
    input.tokens = trained.probe_tokens;
    input.source = trained.probe_source;
    const train::ModelConfig& c = trained.opened->model.config;
    if (input.tokens.empty() || c.mask == MaskKind::Custom) return true;
    if (c.mask == MaskKind::Padding)
        input.padding.assign((c.attention == AttentionKind::Cross ? input.source : input.tokens).size(), false);
    train::ForwardPass pass = train::forward(trained.opened->model, input);
    if (pass.ok) train::recompute_from(trained.opened->model, input, trained.layer, scenario, pass);
    return true;
}

inline bool exercise_session(const std::uint8_t* data, std::size_t size) {
    const session_file::SessionLoad load =
        session_file::session_from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz-input");
    if (load.scenario_in_model) {
        // The scenario is the model's layer with the session's edits, made as the window makes
        // it: here from the one small checkpoint every session meets.
        if (!load.errors.empty() || !load.attached.model || !load.attached.model->layer_edits) return false;
        const session_file::ModelChoice& choice = *load.attached.model;
        const ModelPass pass = lm::forward_text(session_model(), choice.sentence.empty() ? "the cat" : choice.sentence);
        const session_file::LayerReopen reopened = session_file::reopen_layer(choice, session_model(), pass);
        if (!reopened.scenario) return !reopened.notices.empty();  // a layer that cannot be made is said
        exercise(*reopened.scenario);
        return exercise_session_model(choice, *reopened.scenario);
    }
    if (!load.scenario) return !load.errors.empty();
    exercise(*load.scenario);
    if (load.attached.model && !exercise_session_model(*load.attached.model, *load.scenario)) return false;
    if (load.attached.trained && !exercise_session_trained(*load.attached.trained, *load.scenario)) return false;
    return true;
}

}  // namespace attn::fuzz
