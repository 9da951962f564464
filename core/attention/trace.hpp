#pragma once
// The Trace keeps every intermediate of one run. The UI draws it, the exports write it,
// the tests read it; nothing else recomputes attention.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tensor/matrix.hpp"
#include "attention/scenario.hpp"

namespace attn {

// The weights of a region of a head's (n_q × n_k) matrix reduced to a small grid for
// display: cell (r, c) is the max of the weights it covers (max, not mean, so one sharp
// spike stays visible). Query rows [row_begin, row_end) map onto values.rows() bins and
// key columns [col_begin, col_end) onto values.cols() bins, bin b covering
// [begin + b·len/bins, begin + (b+1)·len/bins) in integer arithmetic.
struct PooledWeights {
    Matrix values;
    int row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
    // At one cell per token (a zoomed region): whether the mask lets the cell's query see its
    // key, so the map hatches what the mask hides as a full trace's does. Empty when a bin
    // pools several tokens (its value is then the block's largest weight).
    MaskMatrix visible;
};
// The region and the grid it is pooled into, bins clamped to [1, region length] (at most
// one bin per row or column, at least one).
struct PooledGrid {
    int row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
    int bins_rows = 1, bins_cols = 1;
};
PooledGrid pooled_grid(int row_begin, int row_end, int col_begin, int col_end, int bins_rows, int bins_cols);
PooledWeights max_pool(const Matrix& weights, int row_begin, int row_end, int col_begin, int col_end,
                       int bins_rows, int bins_cols);

struct HeadTrace {
    Matrix q, k, v;                      // (n_q × d_k), (n_k × d_k), (n_k × d_v); after RoPE when on;
                                         // with grouped-query attention k and v are its K/V head's
    Matrix q_before_norm, k_before_norm; // the projection before QK-norm (QK-norm only)
    Matrix q_normed, k_normed;           // RMSNorm(q)⊙w, RMSNorm(k)⊙w per row (QK-norm only)
    Matrix q_unrotated, k_unrotated;     // before RoPE (RoPE only; after QK-norm when on)
    Matrix scores;                       // QKᵀ: (n_q × d_k)·(d_k × n_k) → (n_q × n_k)
    Matrix position_bias;                // ALiBi: −m·|i − j| (ALiBi only)
    float alibi_slope = 0.0f;
    Matrix scaled_scores;                // scores / √d_k (or · a custom scale, or · 1) + position_bias
    Matrix capped_scores;                // c·tanh(scaled / c) (soft-capping only)
    Matrix masked_scores;                // masked cells replaced by the fill value
    Matrix weights;                      // softmax over each row
    float sink = -std::numeric_limits<float>::infinity();  // the head's sink logit b_h (−∞: no sink)
    Matrix sink_weights;                 // (n_q × 1): the weight the sink took from each row
                                         // (sinks only): row i's weights sum to 1 − this
    Matrix output;                       // weights · V: (n_q × n_k)·(n_k × d_v) → (n_q × d_v)
    std::vector<int> fully_masked_rows;  // rows with no visible key (see docs/conventions.md: the rule)
    bool softmax_overflow = false;       // the naive softmax produced inf or NaN
    // Gated DeltaNet (scenario.hpp's GatedDeltaNet) in place of every softmax step above, which
    // stay empty: q and k are L2-normed (q also × 1/√d_k), v the convolved values, and
    Matrix implied_weights;              // A (n × n): o = A·V exactly; not a softmax (a row need not sum
                                         // to 1, a cell may be negative), never written as `weights`
    Matrix state;                        // S after the last token (d_k × d_v): all a linear layer keeps
    PooledWeights pooled_weights;        // output-only runs: the weights at display size
    // Output-only CPU runs: each row's softmax max m_i and sum l_i (n_q), so the weights of
    // any region, w_ij = exp(s_ij − m_i)/l_i, can be drawn again without rerunning attention.
    Vector row_max, row_sum;
};

// The rest of the transformer block, x being X + PE (n × d_model):
//   post-norm (2017)                     pre-norm (GPT-2)
//   residual  = x + attention            norm1     = LN₁(x)          ← attention reads this
//   norm1     = LN₁(residual)            residual  = x + attention
//   ffn_hidden = act(norm1·W₁ + b₁)      norm2     = LN₂(residual)
//   ffn_output = ffn_hidden·W₂ + b₂      ffn_hidden = act(norm2·W₁ + b₁)
//   residual2 = norm1 + ffn_output       ffn_output = ffn_hidden·W₂ + b₂
//   output    = LN₂(residual2)           output    = residual2 = residual + ffn_output
// A switch that is off passes its input through (no residual: the sublayer alone; no
// LayerNorm: the identity; no feed-forward: the block ends after the first residual).
// "LN" is the block's norm, LayerNorm or RMSNorm (BlockOptions::norm_kind). The modern
// options change single lines of the pre-norm column:
//   gated feed-forward:  ffn_gate = act(norm2·W_gate), ffn_up = norm2·W₁,
//                        ffn_product = ffn_gate ⊙ ffn_up, ffn_output = ffn_product·W₂ (no ffn_hidden, no b)
//   parallel residual:   norm2 = LN₂(x), so residual2 = x + attention + ffn_output
//   sandwich norms:      residual = x + post_attention_norm, post_attention_norm = LN(attention);
//                        residual2 = residual + post_feed_forward_norm, post_feed_forward_norm = LN(ffn_output)
//   mixture of experts:  router_logits = norm2·W_router, router_probabilities = softmax(router_logits),
//                        routing = the kept top-k (renormalised or not), ffn_output = Σ routing·expert(norm2)
//                        (+ shared_output = σ(norm2·g)·shared(norm2), or shared(norm2), with a shared expert)
struct BlockTrace {
    Matrix norm1;        // see above: (n × d_model)
    Matrix post_attention_norm;  // sandwich only: LN(attention output), what the residual adds
    Matrix residual;     // x + attention output
    Matrix norm2;        // pre-norm only
    Matrix ffn_hidden;   // (n × d_ff), the plain feed-forward
    Matrix ffn_gate, ffn_up, ffn_product;  // (n × d_ff) each, the gated feed-forward
    Matrix ffn_output;   // (n × d_model)
    // A mixture of experts (scenario.hpp's MixtureOfExperts) in place of ffn_gate, ffn_up and
    // ffn_product, which stay empty (each expert has its own): the router's logits and
    // probabilities, and the weight each token's output took from each expert (0 where the
    // expert was not kept), each (n × E).
    Matrix router_logits, router_probabilities, routing;
    // DeepSeek-V3's router (RouterKind::SigmoidGrouped): router_probabilities holds σ of each logit, and
    // this what the top k is chosen from: σ + b_choice in the kept groups, 0 outside them (n × E).
    Matrix router_choice;
    // Its shared expert, on every token (has_shared): the gate σ(x·g) (n × 1, shared_gated only)
    // and what the expert adds to ffn_output, the gate applied (n × d_model).
    Matrix shared_gate_values, shared_output;
    Matrix post_feed_forward_norm;  // sandwich only: LN(ffn_output)
    Matrix residual2;
    Matrix output;       // the block's output
    SharedMatrix w_1, w_2;  // as used: (d_model × d_ff), (d_ff × d_model); the scenario's when given
    SharedMatrix w_gate;    // gated only: (d_model × d_ff)
    SharedMatrix router;          // a mixture of experts: W_router (d_model × E) as used
    std::vector<Expert> experts;  // and each expert's weights as used
    Expert shared_expert;         // the shared expert's weights as used (has_shared)
    SharedMatrix shared_gate;     // and its gate g (d_model × 1), shared_gated only
    Matrix b_1, b_2;     // as used: (1 × d_ff), (1 × d_model); empty in a gated feed-forward
    // The norms' γ and β as used, (1 × d_model): the identity's unless given (γ = 1, or 0 in
    // RMSNorm's (1 + γ) form; β = 0). RMSNorm has no β: empty.
    Matrix gamma_1, beta_1, gamma_2, beta_2;
    Matrix gamma_post_attention, beta_post_attention, gamma_post_feed_forward, beta_post_feed_forward;  // sandwich only
};

// Multi-head latent attention's own steps (scenario.hpp's LatentAttention), before the heads
// split: empty when it is off. Each head's q, k and v (HeadTrace) are then its slices.
struct LatentTrace {
    Matrix q_compressed;  // x·W_q_a + b_q_a (n × r_q): the queries' low-rank path (q_rank only)
    Matrix q_latent;      // RMSNorm(q_compressed)⊙γ_q (n × r_q): what W_q_b reads
    Matrix compressed;    // x·W_kv_a + b_kv_a (n × (r_kv + d_rope)): c's columns, then k_rope's
    Matrix latent;        // ĉ = RMSNorm(c)⊙γ_kv (n × r_kv): what a latent cache keeps
    Matrix k_rope;        // the rotary key every head shares (n × d_rope), turned when RoPE is on
    Matrix expanded;      // ĉ·W_kv_b (n × H·(d_nope + d_v)): each head's k_nope, then its v
    SharedMatrix w_q_a, w_q_b, w_kv_a, w_kv_b;  // as used (w_q_a, w_q_b: q_rank only)
    Matrix b_q_a, b_kv_a;                       // as given (1 × columns), or empty
    Matrix q_a_norm, kv_a_norm;                 // γ as used: ones unless given
};

// Differential attention's own steps (scenario.hpp's DifferentialAttention): empty when it is off. Each
// head's map is its HeadTrace's weights, its v the pair's values [V_p | V_{p+P}] and its output A·V'.
struct DifferentialTrace {
    int pairs = 0;                       // P = H/2: pair p is heads p and p + P (0-based)
    float lambda_init = 0.0f;
    float lambda_1 = 0.0f, lambda_2 = 0.0f;  // exp(Σ λ_q1⊙λ_k1), exp(Σ λ_q2⊙λ_k2)
    float lambda = 0.0f;                 // λ_1 − λ_2 + λ_init
    Matrix lambda_q1, lambda_k1, lambda_q2, lambda_k2;  // (1 × d_k) each, as used
    Matrix difference;                   // (n_q × P·2·d_k): pair p's o_p = A_p·V'_p − λ·A_{p+P}·V'_p in its columns
    Matrix normed;                       // (1 − λ_init)·RMSNorm(o_p) per pair: what W_O reads
};

// Gated DeltaNet's own steps (scenario.hpp's GatedDeltaNet): empty when it is off. Each head's
// q, k, v, implied weights, output and state are its HeadTrace.
struct LinearTrace {
    Matrix mixed;       // x·[W_Q | W_K | W_V] (n × C), C = 2·H_k·d_k + H·d_v: before the convolution
    Matrix convolved;   // SiLU(causal depthwise conv of mixed) (n × C): q's, k's and v's columns
    Matrix z;           // x·W_Z (n × H·d_v): the output gate's input
    Matrix beta;        // σ(x·W_b) (n × H): how much of each token's correction is written
    Matrix decay;       // g = −exp(A_log)·softplus(x·W_a + dt_bias) (n × H): the state × e^g each token
    Matrix normed;      // RMSNorm(o_h)⊙w per head (n × H·d_v)
    Matrix gated;       // normed ⊙ SiLU(z) (n × H·d_v): what W_O reads
    SharedMatrix w_z, w_b, w_a;  // as used
    Matrix conv;                 // the convolution's taps as used (C × K)
    Matrix a_log, dt_bias, norm; // as used: (1 × H), (1 × H), (1 × d_v)
    int key_heads = 0, conv_kernel = 0;
};

// Where a non-finite value first appears: "X(2,3)", "W_Q(0,1)".
struct NonFinite {
    std::string matrix;
    Cell cell;
};

// What produced a trace: a copy of the settings it was computed with. Panels, titles,
// tooltips and exports describe a trace by these, never by the live scenario, which may
// already hold an edit whose run is under way, or one that was refused.
struct TraceSettings {
    std::string scenario_name;
    std::string preset;           // the preset the scenario exactly is (unedited), or empty;
                                  // set by the compute layer, which knows the presets
    InputMode input = InputMode::Embeddings;
    AttentionKind attention = AttentionKind::Self;
    PositionalEncoding positional = PositionalEncoding::None;
    RopeOptions rope;
    MaskKind mask = MaskKind::None;
    int window = 0;
    int chunk = 0;                // the chunked mask's C
    QueryTemperature temperature; // Llama 4's query temperature (its τ per query: Trace::temperature)
    bool output_gate = false;     // gated attention (Trace::output_gate, gated)
    bool differential = false;    // differential attention (Trace::differential)
    bool delta_net = false;       // Gated DeltaNet (Trace::linear): no softmax, the implied weights
    float masked_fill = 0.0f;
    bool scale = true;
    float score_scale = 0.0f;     // > 0: the custom scale used in place of 1/√d_k
    float softcap = 0.0f;         // > 0: the soft-cap c
    bool qk_norm = false;         // QK-norm, and its (1 + w) form
    bool qk_norm_plus_one = false;
    bool qk_norm_whole = false;   // over every head's numbers at once (OLMo 2)
    bool sinks = false;           // attention sinks: each head's logit is its HeadTrace::sink
    LatentAttention latent;       // latent attention's sizes (its weights are the trace's LatentTrace)
    SoftmaxKind softmax = SoftmaxKind::Stable;
    int heads = 0;
    int kv_heads = 0;             // H_kv (= heads without grouped-query attention)
    int head_dim = 0;             // the scenario's head_dim (0: d_model / heads)
    BlockOptions block;           // the switches only: the block's weights are in the trace
    std::uint64_t seed = 0;
};

// How much of the computation a run keeps.
enum class Detail {
    Full,        // every (n_q × n_k) matrix, for display and teaching
    OutputOnly,  // Q, K, V, outputs and the pooled weights; never an (n_q × n_k) matrix
};

struct Trace {
    bool ok = false;                     // false → errors says why; no matrix is valid
    std::vector<std::string> errors;
    std::vector<std::string> warnings;   // computed, but worth telling the user
    std::vector<NonFinite> non_finite_inputs;
    TraceSettings settings;              // what produced it (with detail and backend)
    Detail detail = Detail::Full;
    std::string backend = "cpu";         // which engine produced it
    double milliseconds = 0.0;           // wall time of the run

    std::vector<std::string> query_tokens, key_tokens;
    int n_queries = 0, n_keys = 0;
    int d_model = 0, heads = 0, d_k = 0, d_v = 0;
    int kv_heads = 0;                    // H_kv: query head h reads K/V head h / (heads / kv_heads)
    float scale = 1.0f;                  // 1/√d_k, or 1 when scaling is off

    // Embedding mode (empty in direct mode). Target = query side; source = key side in
    // cross-attention (in self-attention the source matrices are empty).
    Matrix x, pe, x_pe;                  // (n_q × d_model)
    Matrix source_x, source_pe, source_x_pe;
    SharedMatrix w_q, w_k, w_v, w_o;     // as used (W_K, W_V: H_kv heads' columns); the scenario's when given
    Matrix b_q, b_k, b_v, b_o;           // the projections' biases (1 × columns), or empty (none)
    Matrix q_norm, k_norm;               // QK-norm's weights as used (1 × d_k), or empty (QK-norm off);
                                         // over the whole projection (1 × H·d_k) and (1 × H_kv·d_k)
    Matrix q_projected, k_projected;     // QK-norm over the whole projection: Q (n_q × H·d_k) and
                                         // K (n_k × H_kv·d_k) before it; else empty
    LatentTrace latent;                  // latent attention only
    Matrix temperature;                  // (n_q × 1): each query's τ_i (query temperature only), which
                                         // every head's q was multiplied by

    MaskMatrix visible;                  // (n_q × n_k), true = query may attend to key
    std::vector<HeadTrace> head;
    Matrix concat;                       // (n_q × h·d_v): head h in columns [h·d_v, (h+1)·d_v)
    // Gated attention (Scenario::output_gate) only, else empty: W_G and b_G as used, the gate
    // σ(x·W_G + b_G) and concat ⊙ gate, which W_O then reads
    SharedMatrix w_g;
    Matrix b_g;                          // (1 × H·d_v), or empty
    Matrix output_gate;                  // (n_q × H·d_v)
    Matrix gated;                        // (n_q × H·d_v)
    LinearTrace linear;                  // Gated DeltaNet only: W_O reads linear.gated
    DifferentialTrace differential;      // differential attention only: W_O reads differential.normed
    Matrix output;                       // concat · W_O (direct mode without W_O: concat)

    bool has_block = false;
    BlockTrace block;
};

}  // namespace attn

namespace attn {

// What the projections read: X + PE, or in a pre-norm block LN₁(X + PE).
const Matrix& attention_input(const Trace& trace);

// Whether the scores were scaled by a number other than 1/√d_k (Gemma 2 27B's
// query_pre_attn_scalar 144 with d_k = 128). A scale given that equals 1/√d_k — Qwen 3's
// head_dim^−½, Gemma 2 2B's 256^−½ with d_k = 256 — is the usual scaling by another name, and
// is never called custom.
bool has_custom_scale(const Trace& trace);

// When `values` is one of the trace's weights (W_Q, W_K, W_V, W_O, W_1, W_2: a SharedMatrix),
// the version of its values (SharedMatrix::version); else 0. A drawing of a weight keyed by it
// is kept across traces that share the weight (an edit of X recomputes the trace, not W_1).
std::uint64_t weight_version(const Trace& trace, const Matrix* values);

// Every matrix of a trace by name (the names of registry.hpp, which implements these):
// "x", "w_q", "head0.weights", "block.output". nullptr when the name is unknown or the
// matrix is empty in this trace.
const Matrix* find_matrix(const Trace& trace, const std::string& name);
// The names find_matrix answers for this trace, in pipeline order.
std::vector<std::string> matrix_names(const Trace& trace);

// Each head's columns of W_V and rows of W_O: d_v, or in differential attention d_v / 2 (a head's map
// reads its pair's two values side by side, 2·d_k wide; W_V, the cache and W_O keep d_k per head).
inline int projected_value_dim(const Trace& t) { return t.settings.differential ? t.d_v / 2 : t.d_v; }

// What W_O reads and its name: Gated DeltaNet's gated heads, differential attention's normed pairs,
// gated attention's gated heads, or the concatenation.
struct OutputInput {
    const Matrix& m;
    const char* name;
};
inline OutputInput output_projection_input(const Trace& t) {
    if (t.linear.gated.size() != 0) return {t.linear.gated, "gated"};
    if (t.differential.normed.size() != 0) return {t.differential.normed, "normed"};
    if (t.gated.size() != 0) return {t.gated, "gated"};
    return {t.concat, "concat"};
}

}  // namespace attn
