#pragma once
// The writers (writer.hpp) of the models the app holds: a checkpoint of any family
// (language_model.hpp) and a model trained in the app (train/model.hpp). The model must
// outlive its writer.
#include "generate/writer.hpp"
#include "language_model.hpp"
#include "train/model.hpp"

namespace attn::generate {

// A checkpoint: GPT-2's wte + wpe, a family's scaled embedding (and BERT's, which cannot
// write: it reads a whole sentence at once and predicts masked tokens). `cannot` says why
// a model cannot write.
Writer writer(const lm::Model& model);
// A trained decoder: E[id] + P[t] (a learned table), or E[id] with the sinusoid its first
// layer adds; a cross-attention model cannot write (it reads a source sequence).
Writer writer(const train::Model& model);

// The size of one cached number as the checkpoint stores its weights (2: BF16, 4: float32).
double element_bytes(const lm::Model& model);

}  // namespace attn::generate
