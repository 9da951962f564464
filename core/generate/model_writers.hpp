#pragma once
// The writers (writer.hpp) of the models the app holds: a checkpoint of any family
// (language_model.hpp) and a model trained in the app (train/model.hpp). The model must
// outlive its writer.
#include "generate/writer.hpp"
#include "model/language_model.hpp"
#include "train/model.hpp"

namespace attn::generate {

// A checkpoint: GPT-2's wte + wpe, a family's scaled embedding (and BERT's, which cannot
// write: it reads a whole sentence at once and predicts masked tokens). `cannot` says why
// a model cannot write.
Writer writer(const lm::Model& model);
// A trained decoder: E[id] + P[t] (a learned table), or E[id] with the sinusoid its first
// layer adds; a cross-attention model cannot write (it reads a source sequence).
Writer writer(const train::Model& model);

// A trained model writes `tokens` tokens after the prompt (its vocabulary's names), sampled as
// `sampler` says, the heads of `ablated` zeroed: the ids of the text it can read (the last one
// written is dropped when no position is left to read it) and what writing computed, in lines
// (the next token's distribution after the prompt, what was written, each step's token with its
// probability and how many tokens the draw chose among, the cache's size).
struct WrittenText {
    std::vector<int> ids;
    bool last_unread = false;
    std::vector<std::string> lines;
};
WrittenText write_after(const train::Model& model, const std::vector<std::string>& prompt, int tokens, const SamplerSettings& sampler,
                        const stack::Ablation& ablated = {});

// "256 B", "32.0 KiB", "4.0 GiB".
std::string bytes_text(double bytes);

// The size of one cached number as the checkpoint stores its weights (2: BF16, 4: float32).
double element_bytes(const lm::Model& model);

}  // namespace attn::generate
