#pragma once
// Choosing the next token from the logits, every step kept so that it can be drawn: the
// distribution before and after the temperature, the tokens top-k and top-p keep, and the
// number drawn. The order is Hugging Face's (its LogitsProcessors): temperature, then top-k,
// then top-p, then a draw from what is left, renormalised.
//
//   p      = softmax(logits)                 the model's distribution (temperature 1)
//   p_T    = softmax(logits / T)             T > 0; T = 0 is greedy: the most likely token
//   top-k  keeps the k most likely tokens of p_T
//   top-p  keeps, most likely first, the fewest tokens whose p_T sum reaches p (the token
//          that crosses p is kept)
//   draw   u ∈ [0, 1), the first number of random.hpp's generator seeded from the seed and
//          the position the token will stand at; the first kept token (best first) whose
//          cumulative renormalised probability exceeds u
//
// Ties rank the smaller id first. The same logits, settings, seed and position give the same
// token on every machine (the probabilities are summed in double), so a continuation
// replays whole, and a step undone and written again draws the same number.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/matrix.hpp"
#include "tensor/random.hpp"

namespace attn::generate {

struct SamplerSettings {
    float temperature = 0.0f;  // 0: greedy
    int top_k = 0;             // 0: off; else ≥ 1
    float top_p = 1.0f;        // (0, 1]; 1: off
    std::uint64_t seed = 1;
    bool greedy() const { return temperature == 0.0f; }
};

// Every reason the settings cannot sample, each naming the setting ("temperature is -1: it
// must be 0 (greedy) or more"). Empty when they can.
std::vector<std::string> validate(const SamplerSettings& settings);

// One step's choice and everything that made it.
struct Sampled {
    std::vector<float> probability;     // p: softmax(logits), one per token
    std::vector<float> tempered;        // p_T: softmax(logits / T); greedy: p
    std::vector<int> kept;              // the tokens the draw chose among, best first (greedy: one)
    std::vector<float> kept_probability;// each kept token's p_T renormalised over `kept`
    int top_k_cut = 0;                  // how many tokens top-k kept (0: top-k off)
    int top_p_cut = 0;                  // how many tokens top-p kept (0: top-p off)
    float draw = 0.0f;                  // u, the number drawn (greedy: none, 0)
    int chosen = -1;
    bool forced = false;                // the token was given (a click on a bar), not drawn
};

// The ids of a row by probability, best first, ties the smaller id first; at most `count`.
std::vector<int> ranked(const std::vector<float>& probability, int count);

// u for the token at `position` (from 0) under `seed`.
float draw_for(std::uint64_t seed, int position);
// Samples the token at `position` from one row of logits (1 × V). nullopt with *why when the
// logits hold NaN or ±∞: no distribution can be made of them.
std::optional<Sampled> sample(const Matrix& logits, const SamplerSettings& settings, int position, std::string* why);
// The distribution and the kept set the next draw would choose among, nothing drawn (chosen −1).
std::optional<Sampled> preview(const Matrix& logits, const SamplerSettings& settings, std::string* why);
// The same distribution with `token` chosen instead of a draw.
std::optional<Sampled> choose(const Matrix& logits, const SamplerSettings& settings, int token, std::string* why);

}  // namespace attn::generate
