#pragma once
// The model-file fuzz target's work, shared with the core test that replays its regressions:
// any bytes through the model-file reader; a file that loads is run, written and read back,
// and (when small) trained one step from its optimiser state.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attention/serialize.hpp"
#include "train/model_file.hpp"
#include "train/trainer.hpp"

namespace attn::fuzz {

// False when a loaded model misbehaves (a forward pass refused, a file that does not read
// back); never crashes.
inline bool exercise_model_file(const std::uint8_t* data, std::size_t size) {
    using namespace attn::train;
    const ModelFileLoad load = model_from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz-input");
    if (!load.file) return !load.errors.empty();
    const ModelFile& file = *load.file;
    const ModelConfig& c = file.model.config;
    if (parameter_count(file.model.params) > 50000 || c.max_positions > 32) return true;  // bounded work per input
    // Tokens 0, 1, … of the vocabulary, as long as the model reads.
    ModelInput input;
    for (int i = 0; i < c.max_positions; ++i) input.tokens.push_back(i % c.vocab_size);
    if (c.attention == AttentionKind::Cross) input.source = input.tokens;
    if (c.mask == MaskKind::Padding) input.padding.assign((c.attention == AttentionKind::Cross ? input.source : input.tokens).size(), false);
    if (c.mask == MaskKind::Custom) return true;  // a custom mask is the input's, not the file's
    if (!forward(file.model, input).ok) return false;
    const ModelFileLoad again = model_from_json(model_to_json(file), "fuzz-again");
    if (!again.file) return false;
    std::vector<std::string> errors;
    auto trainer = Trainer::create(file.settings, file.model, file.steps, errors, file.optimiser ? &*file.optimiser : nullptr);
    if (trainer && file.settings.batch_size <= 16 && file.steps <= 1000) trainer->step();
    return true;
}

}  // namespace attn::fuzz
