#pragma once
// A model writing, one token at a time, on the one stack of layers (stack.hpp): the prompt's
// pass fills each layer's KV cache (its traces hold K and V as attention read them), then
// each new token runs one row per layer against the caches (decode.hpp) and the head reads
// that row alone. Every family the app opens and every model trained in it writes through
// this: what differs is the Writer a model gives (model_writers.hpp).
//
//   prompt:  pass = the stack on x₀ of every prompt token        caches ← each layer's K, V
//   step t:  x = embed(id_t, t); for ℓ: x = decode_layer(sₗ, t, x, cacheₗ)
//            logits = unembed(final_norm(x))                        (1 × V): the next token's
//
// An edit or an ablation changes the layers from ℓ on: their caches are filled again from
// the recomputed pass (prefill from ℓ), and writing goes on from there.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "generate/decode.hpp"
#include "generate/sampler.hpp"
#include "model/stack.hpp"

namespace attn::generate {

// What writing needs of a model.
struct Writer {
    stack::Stack stack;                                     // its layers' scenarios and its head
    std::function<Matrix(int id, int position)> embed;      // x₀'s row of a token at a position (1 × d)
    std::function<std::string(int id)> token_text;          // an id as the token strip shows it
    int vocab_size = 0;
    int max_positions = 0;                                  // the longest text it reads; 0: no table limits it
    std::string cannot;                                     // why this model cannot write; empty: it can
    // Layer ℓ as the pipeline edited it (its weights, its switches), in place of the model's own.
    std::optional<std::pair<int, Scenario>> edited;
    std::shared_ptr<const void> keep;                       // what the stack's functions read, kept alive
};

// Layer ℓ's scenario for writing: the model's (or the edited one), the heads and experts of
// `ablated` dropped.
Scenario writing_scenario(const Writer& writer, int layer, const stack::Ablation& ablated);

// One step's new row of every head, per layer: what the maps grow by.
using StepAttention = std::vector<DecodedAttention>;

struct Writing {
    std::vector<int> ids;               // the prompt and every token written
    std::vector<LayerCache> cache;      // one per layer
    std::vector<Scenario> layers;       // each layer's scenario as writing runs it (writing_scenario)
    Matrix logits;                      // (1 × V): the next token's
    stack::Ablation ablated;
    double bytes() const;               // what the caches hold
    // The text fills the model's positions: its last token was written but cannot be read, so
    // there are no logits and nothing more can be written.
    bool full() const { return logits.size() == 0 && !ids.empty(); }
};

// Reasons the writer and what is ablated cannot write (empty when they can): the model's
// own reason, a layer that cannot be decoded (decode_faults), an ablated expert it lacks.
std::vector<std::string> write_faults(const Writer& writer, const stack::Ablation& ablated = {});

// The caches of layers from `from_layer` on, from a full pass of `ids` (every layer's trace
// kept, pass.ablated applied), and the next token's logits. Layers before `from_layer` keep
// theirs (an edit of layer ℓ changes ℓ on). False with *why.
bool prefill(const Writer& writer, const stack::Pass& pass, const std::vector<int>& ids, Writing& writing, std::string* why,
             int from_layer = 0);
// The prompt decoded one token at a time from empty caches (no full pass): what a full pass's
// prefill must equal.
bool prefill_by_steps(const Writer& writer, const std::vector<int>& ids, const stack::Ablation& ablated, Writing& writing,
                      std::string* why);
// Token `id` written: one row through every layer against the caches, then the head; the new
// rows of every head in *attention. A token at the position just past the model's last is
// written unread (Writing::full); after it, or for an id outside the vocabulary, false with *why.
bool step(const Writer& writer, Writing& writing, int id, StepAttention* attention, std::string* why);

// [SECTION] What a cache costs

// One layer's cache as a checkpoint would keep it.
struct LayerCacheShape {
    int kv_heads = 0, key_dim = 0, value_dim = 0;
    int window = 0;  // 0: every token
    // Latent attention (DeepSeek-V2, V3): r_kv + d_rope numbers a token, the latent ĉ and the turned
    // k_rope, as its own inference keeps them; 0 for any other layer. (transformers' cache, and this
    // app's while writing, keep each head's k and v expanded from it: kv_heads·(key_dim + value_dim).)
    int latent = 0;
    int chunk = 0;   // > 0: the tokens of the current chunk of C (Llama 4's chunked layers)
    // > 0: a Gated DeltaNet layer (Qwen3-Next), which keeps this many numbers whatever the length: each
    // head's state (d_k × d_v) and its convolution's last K − 1 rows
    long long state = 0;
};
std::vector<LayerCacheShape> cache_shapes(const Writer& writer);

struct CacheCost {
    double bytes = 0;              // the model's cache at `length` tokens
    double bytes_per_token = 0;    // what one more token adds (windowed layers past their window add nothing; a
                                   // chunked layer a row, until the token that starts the next chunk drops the others)
    double multi_head_bytes = 0;   // multi-head attention with the same query heads, no window
};
// Bytes of `element_bytes` each (2: BF16, 4: float32) for a text of `length` tokens;
// `query_heads` gives multi-head attention's comparison.
CacheCost cache_cost(const std::vector<LayerCacheShape>& shapes, int query_heads, double element_bytes, long long length);

}  // namespace attn::generate
