#pragma once
// One stack of layers: the runtime every model runs on (a model trained in the app, GPT-2,
// and each family after it). A family says how its weights make a layer's scenario and
// what its head is; the loop, the recompute after an edit, the ablation of heads, the
// layer's output and the top-k are written here once (llm.c's gpt2_forward loop).
//
//   x₀                                   (n × d): the family's embedding of the tokens
//   for ℓ = 0 … L−1:
//     sₗ = layer_scenario(ℓ, xₗ, m)      the family's weights, shared (shared_matrix.hpp), not
//                                        copied; ablated heads' rows of W_O zeroed in sₗ's own W_O
//     traceₗ = run(sₗ)                   the engine: attention and its block, every step kept
//     xₗ₊₁ = layer_output(traceₗ)        (n × d): the block's output, else the attention's
//   h = norm_f(x_L), or x_L              (n × d): LayerNorm, or RMSNorm (Gemma's (1 + γ))
//   logits = h·W_U + b_U                 (n × d)·(d × V) → (n × V); tied: h·Eᵀ with E (V × d);
//                                        only h's last row when the family predicts one token;
//                                        soft-capped c·tanh(logits/c) when the family says so
//
// Cross-attention: every layer reads one memory m (n_s × d), the source's X + PE as layer 1's
// trace holds it (a decoder reading its encoder's output); layer 1 is given the memory as
// the family made it.
//
// Ablation: head h of layer ℓ contributes nothing. The concatenation's columns
// [h·d_k, (h+1)·d_k) are head h's, and they meet rows [h·d_k, (h+1)·d_k) of W_O:
// concat·W_O = Σ_h head_h·W_O[h's rows]. Those rows are zeroed in the layer's scenario (the
// family's weights are not changed); the head's weights are still computed and shown.
// Expert e of layer ℓ's mixture ablated adds nothing to the block's output: the router still
// scores and keeps it, the other kept experts keep their weights (MixtureOfExperts::ablated),
// so the routing shown is the model's own and only that expert's share of y is missing.
#include <atomic>
#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensor/matrix.hpp"
#include "tensor/product.hpp"
#include "attention/scenario.hpp"
#include "tensor/shared_matrix.hpp"
#include "attention/trace.hpp"

namespace attn::stack {

// One head of one layer (both from 0).
struct HeadId {
    int layer = 0, head = 0;
    bool operator<(const HeadId& o) const { return layer != o.layer ? layer < o.layer : head < o.head; }
    bool operator==(const HeadId& o) const { return layer == o.layer && head == o.head; }
    // Whether a model of `layers` layers of `heads` heads has it.
    bool within(int layers, int heads) const { return layer >= 0 && layer < layers && head >= 0 && head < heads; }
};
using HeadSet = std::set<HeadId>;

// One expert of one layer's mixture of experts (both from 0).
struct ExpertId {
    int layer = 0, expert = 0;
    bool operator<(const ExpertId& o) const { return layer != o.layer ? layer < o.layer : expert < o.expert; }
    bool operator==(const ExpertId& o) const { return layer == o.layer && expert == o.expert; }
};
using ExpertSet = std::set<ExpertId>;

// What a pass runs without: heads and experts. A set of heads alone converts to one.
struct Ablation {
    HeadSet heads;
    ExpertSet experts;
    Ablation() = default;
    Ablation(HeadSet h) : heads(std::move(h)) {}  // NOLINT: implicit, heads alone
    Ablation(std::initializer_list<HeadId> h) : heads(h) {}  // {{layer, head}, …}
    Ablation(HeadSet h, ExpertSet e) : heads(std::move(h)), experts(std::move(e)) {}
    bool empty() const { return heads.empty() && experts.empty(); }
    // The lowest layer a head or an expert of it is in; `none` when it is empty.
    int lowest_layer(int none) const;
    bool operator==(const Ablation& o) const { return heads == o.heads && experts == o.experts; }
    bool operator!=(const Ablation& o) const { return !(*this == o); }
};

// The end of the stack: the final norm and the unembedding (the LM head).
struct Head {
    bool final_norm = false;        // h = norm_f(x_L) with `norm`, else h = x_L
    LayerNormParams norm;           // (1 × d) each; RMSNorm: γ only
    NormKind norm_kind = NormKind::LayerNorm;
    bool gamma_plus_one = false;    // Gemma's RMSNorm: (1 + γ)
    float epsilon = 1e-5f;
    // W_U (d × V); tied: the embedding table E (V × d), shared with the family (a checkpoint's
    // stored, not copied). Empty: the stack ends at h, and the family's own head reads it
    // (BERT's masked-token head).
    SharedMatrix unembedding;
    bool tied = false;                    // logits = h·Eᵀ
    const Vector* bias = nullptr;         // b_U (1 × V), or none
    bool last_row_only = false;           // logits of h's last row only (1 × V): the next token's
    float softcap = 0.0f;                 // c > 0: logits → c·tanh(logits/c) (Gemma 2)
};

// What a family gives the runtime. The functions may hold references to the family's
// weights: the stack is used while they live.
struct Stack {
    int layers = 0;
    int d_model = 0;
    int heads = 1;
    bool cross = false;  // every layer's keys and values read the memory
    // Layer ℓ's scenario for the stream entering it (n × d) and, in cross-attention, the memory.
    std::function<Scenario(int layer, const Matrix& input, const Matrix* memory)> layer_scenario;
    // Labels layer 1's trace when x₀ already holds an encoding the engine did not add (a learned
    // table): the trace then reads as the engine's own "X + PE". May be empty.
    std::function<void(Trace& first)> label_first_layer;
    Head head;
};

struct Pass {
    bool ok = false;
    std::vector<std::string> errors;
    Matrix x0;                  // the stream entering layer 1 (n × d)
    Matrix memory0;             // cross-attention: the memory layer 1 was given (n_s × d)
    std::vector<Trace> layers;  // layer ℓ's trace: attention and its block
    Matrix final_input;         // x_L (n × d)
    Matrix final_output;        // LN_f(x_L), or x_L: what the unembedding reads (n × d)
    Matrix logits;              // (n × V), or (1 × V) with Head::last_row_only
    // Heads and experts ablated: every layer run applies them (a change needs a recompute from
    // its lowest changed layer).
    Ablation ablated;
};

// Reasons the ablated heads and experts cannot be applied to the stack (empty when they can):
// a head or a layer the stack does not have. Whether a layer has the expert is known from its
// scenario (expert_faults).
std::vector<std::string> validate_ablation(const Stack& stack, const Ablation& ablated);
// Reasons layer ℓ's scenario cannot drop the experts of `ablated` in that layer: it has no
// mixture of experts, or fewer experts.
std::vector<std::string> expert_faults(const Scenario& scenario, const ExpertSet& ablated, int layer);
// The number of heads of `ablated` in layer ℓ.
int ablated_in_layer(const HeadSet& ablated, int layer);
// The experts of `ablated` in layer ℓ, ascending.
std::vector<int> experts_ablated_in_layer(const ExpertSet& ablated, int layer);
// Zeroes, in layer ℓ's W_O (H·d_k × d), the rows the heads of `ablated` in that layer meet;
// true when the layer has any. The scenario's form is what every run applies; the matrix's
// lets a family keep weights with the heads ablated (a trained layer opened in the pipeline).
bool ablate_heads(Matrix& w_o, int head_dim, const HeadSet& ablated, int layer);
// Layer ℓ's scenario with the heads of `ablated` zeroed and its experts added to the mixture's
// own ablated ones (those it does not have are left for expert_faults to say); true when it
// changed.
bool ablate(Scenario& scenario, const Ablation& ablated, int layer);

// What the next layer reads: the block's output, or the attention's without a block.
const Matrix& layer_output(const Trace& trace);

// A job's cancel flag for the passes run on this thread while the scope lives: forward_into and
// recompute_from stop between two layers once it is set, the pass not ok ("cancelled"). The
// window's jobs cancel the passes they run (a recompute of a model replaced on screen) without
// every function between the job and the stack carrying the flag. Scopes nest: the innermost counts.
class CancelScope {
public:
    explicit CancelScope(const std::atomic<bool>* cancel);
    ~CancelScope();
    CancelScope(const CancelScope&) = delete;
    CancelScope& operator=(const CancelScope&) = delete;
    // True when the innermost scope of this thread is cancelled.
    static bool cancelled();

private:
    const std::atomic<bool>* outer_;
};

// Every layer from x₀ (and the memory, in cross-attention), every trace kept, then the head.
// Runs into pass's traces, reusing their storage. False with pass.errors.
bool forward_into(const Stack& stack, Matrix x0, Matrix memory, Pass& pass);

// After an edit in layer ℓ (or of the ablated heads): layers ℓ … L−1 and the head again;
// layers before ℓ are kept. With `edited`, layer ℓ runs that scenario (the app's pipeline
// edits it; its X is the stream entering the layer and must keep one row of d per token) with
// the ablated heads zeroed in a copy where needed; without, the family's own layer. False with
// pass.errors.
bool recompute_from(const Stack& stack, int layer, Pass& pass, const Scenario* edited = nullptr);

// The head's two steps, for any rows (a lens on an earlier layer reads them too):
// h = norm_f(x) (x itself without a final norm), then logits = h·W_U + b_U of every row
// given (n × V; last_row_only is the caller's choice of rows), soft-capped where the head is.
// The head must have an unembedding.
Matrix final_norm(const Head& head, const Matrix& x);
// `kernel`: ProductKernel::any_order for a decode step's one row (product.hpp).
void unembed_into(const Head& head, const Matrix& rows, Matrix& logits, ProductKernel kernel = ProductKernel::row_major);

// The k largest values of a row (1 × V), best first; ties: the smaller index; NaN ranks
// below every number.
std::vector<int> top_k(const Matrix& row, int k);

}  // namespace attn::stack
