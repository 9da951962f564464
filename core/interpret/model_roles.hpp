#pragma once
// Head roles for the models the app opens: a checkpoint (lm::Model: GPT-2 and every family)
// and a model trained in the app (train::Model). What a probe may be drawn from is asked of
// the model's tokenizer (its special tokens are never drawn; its BOS leads the probe when it
// adds one before a text); the probe is run as ids, and every query head of every layer scored
// (head_roles.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "interpret/head_roles.hpp"
#include "model/language_model.hpp"
#include "train/model.hpp"
#include "train/tasks.hpp"

namespace attn::interpret {

ProbeVocabulary probe_vocabulary(const lm::Model& model);
// A trained model's letters: its task's separator is never drawn.
ProbeVocabulary probe_vocabulary(const train::Model& model, const train::TaskOptions& task);

struct RolesRun {
    Probe probe;
    std::vector<std::string> tokens;  // the probe's ids as the token strip shows them
    std::vector<Trace> layers;        // the probe's pass: the scores are read from its weights
    std::vector<HeadRoles> heads;     // layer by layer, head by head
};

// repeat_length 0: default_repeat_length, or for a trained model its task's content length
// (the blocks it was trained on). None, with why, when the probe cannot be made or run.
std::optional<RolesRun> run_head_roles(const lm::Model& model, int repeat_length, std::uint64_t seed, std::string* why);
std::optional<RolesRun> run_head_roles(const train::Model& model, const train::TaskOptions& task, int repeat_length,
                                       std::uint64_t seed, std::string* why);

}  // namespace attn::interpret
