#pragma once
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attention/scenario.hpp"
#include "attention/trace.hpp"

namespace attn {

struct RunOptions {
    Detail detail = Detail::Full;
    // OutputOnly: size of the pooled weights grid (0 → min(n, 512)) and the region it
    // covers (row_end/col_end 0 → n).
    bool pool_weights = true;  // false: outputs only, no weights at all
    int pooled_rows = 0, pooled_cols = 0;
    int region_row_begin = 0, region_row_end = 0, region_col_begin = 0, region_col_end = 0;
    // OutputOnly: set from another thread to stop between two blocks of work; the run then
    // returns ok = false ("cancelled"), never a partial result.
    const std::atomic<bool>* cancel = nullptr;
};

// Computes every step of the scenario. Never throws for bad input: an impossible
// scenario returns a Trace with ok = false and errors naming what and where.
Trace run(const Scenario& scenario);
Trace run(const Scenario& scenario, const RunOptions& options);
// The same into an existing trace, reusing its matrices' storage: recomputing after an
// edit then allocates (and page-faults) nothing. The UI keeps two traces and swaps them.
void run_into(const Scenario& scenario, const RunOptions& options, Trace& trace);
// How many runs (run, run_into) this process has started: what the tests count to see that
// a path (a zoom drawn from row statistics) did not run attention again.
std::uint64_t engine_runs();

// Anything that turns a scenario into a trace: the CPU engine, the GPU backend.
using Engine = Trace (*)(const Scenario&, const RunOptions&);

// About how many bytes a full trace of the scenario keeps (embedding mode; 0 for direct input):
// every head's matrices, its (n_q × n_k) maps above all, the block's. What a model's pass
// multiplies by its layers before it starts (stack.hpp).
double full_trace_bytes(const Scenario& scenario);

// The problems that make a scenario impossible (empty when it can run).
std::vector<std::string> validate(const Scenario& scenario, Detail detail = Detail::Full);

// The heatmap of an output-only run: the region of the (n_q × n_k) weights and its grid
// (RunOptions: an end of 0 → the whole matrix; 0 bins → min(n, 512)). nullopt, with the
// reason in *error, when the region lies outside the weights.
std::optional<PooledGrid> pooled_grid(const RunOptions& options, int n_queries, int n_keys, std::string* error);

// The heatmap of another region from a finished output-only trace of the same scenario:
// only the region's scores are computed again (region rows × cols × d_k per head), each
// row normalised by the max and sum its output pass kept (HeadTrace::row_max, row_sum),
// so zooming never reruns attention. One PooledWeights per head; nullopt with *error when
// the trace keeps no row statistics (a GPU run), the region lies outside, or it was cancelled.
std::optional<std::vector<PooledWeights>> repool_weights(const Scenario& scenario, const Trace& trace,
                                                         const RunOptions& options, std::string* error);

// The matrices the engine would use when the scenario leaves them empty: derived
// embeddings and seeded weights. The UI calls this before the first in-place edit.
Matrix resolved_embeddings(const Sequence& sequence, int d_model);
SharedMatrix resolved_weight(const SharedMatrix& given, int rows, int cols, std::uint64_t seed, int which);
// Latent attention's weights as the engine uses them: the scenario's, or seeded at their shape
// (scenario.hpp's LatentAttention).
enum class LatentWeight { QA, QB, KVA, KVB };
SharedMatrix latent_weight(const Scenario& scenario, LatentWeight which);
// Gated attention's W_G as the engine uses it: the scenario's, or seeded (d_model × H·d_v).
SharedMatrix gate_weight(const Scenario& scenario);
// Gated attention's gate σ(x·W_G + b_G) for the rows x that attention reads (n × d_model) → (n × H·d_v).
Matrix output_gate_values(const Matrix& x, const SharedMatrix& w_g, const Vector& b_g, bool any_order = false);

// Gated DeltaNet's weights as the engine uses them: the scenario's, or seeded at their shape
// (the projections Xavier-uniform, the convolution's taps too; A_log = ln(1 + h), dt_bias = 1,
// the norm's w ones).
struct DeltaNetWeights {
    SharedMatrix w_q, w_k, w_v, w_z, w_b, w_a;
    Matrix conv;
    Vector a_log, dt_bias, norm;
};
DeltaNetWeights delta_net_weights(const Scenario& scenario);
// Gated DeltaNet's per-token inputs for the rows x it reads (n × d_model): into `steps` the
// mixed channels, their convolution (with `history`, the K − 1 rows of mixed channels before x,
// when given: a decode step's), z, β and the decay g; into q_all and k_all each value head's q
// (L2-normed, × 1/√d_k with scaling on) and k (L2-normed), H·d_k columns, and into v_all its v (H·d_v).
void delta_net_inputs(const Scenario& scenario, const DeltaNetWeights& weights, const Matrix& x, const Matrix* history, LinearTrace& steps,
                      Matrix& q_all, Matrix& k_all, Matrix& v_all, bool any_order = false);
// What W_O reads from the heads' outputs (n × H·d_v): each head's RMSNorm(o_h)⊙w, into `normed`
// when given, then ⊙ SiLU(z).
Matrix delta_net_gated(const Matrix& concat, const Matrix& z, const Vector& norm, int d_v, float epsilon, Matrix* normed = nullptr);

// Differential attention (scenario.hpp's DifferentialAttention). Each query head's values as its map
// reads them, [V_p | V_{p+P}] with p = h mod H/2, from one V per query head (n × H·d_k → n × H·2·d_k).
Matrix pair_values(const Matrix& v_per_head, int heads, int d_k);
// What W_O reads from the maps' readings (`read`: n × H·2·d_k, head h's A_h·V'_h in its columns): each pair's
// o_p = read_p − λ·read_{p+P} into `difference` when given, then (1 − λ_init)·RMSNorm(o_p) over its
// 2·d_k numbers (n × H·d_k).
Matrix differential_pairs(const Matrix& read, int heads, int d_k, float lambda, float lambda_init, float epsilon,
                          Matrix* difference = nullptr);

// [SECTION] Pieces shared by the backends (the GPU backend prepares and finishes a trace
// with these and computes only the attention itself on the device).

// Fills the trace's settings and inputs: tokens, sizes, d_k, scale, X, PE, X + PE (both
// sequences), the weights as used, non-finite notes and warnings; and the projections
// Q = (X+PE)·W_Q, K, V (every head's columns side by side), or the direct Q, K, V; with
// grouped-query attention K and V come out one per query head (repeat_kv_heads).
void prepare_inputs(const Scenario& scenario, Trace& trace, Matrix& q_all, Matrix& k_all, Matrix& v_all);
// Latent attention's projections of the rows x that attention reads (n × d_model; scenario.hpp's
// LatentAttention): every head's q, k and v side by side, as the usual projections are, k's last
// d_rope dims the shared k_rope not yet turned (head_inputs turns them); each step and weight as used
// into `steps` (its k_rope turned), and W_Q as used into w_q (empty with q_rank: the low-rank path).
// any_order: products in any summation order (a decode step's row).
void latent_projections(const Scenario& scenario, const Matrix& x, LatentTrace& steps, SharedMatrix& w_q, Matrix& q_all, Matrix& k_all,
                        Matrix& v_all, bool any_order = false);
// Grouped-query attention's K or V of H_kv heads (n × H_kv·width) as one per query head
// (n × H_kv·group·width): query head h = g·group + r reads K/V head g.
Matrix repeat_kv_heads(const Matrix& per_kv_head, int kv_heads, int group, int width);
// Head h's Q, K, V: its columns [h·d_k, (h+1)·d_k) of the projections, rotated by RoPE
// (keep_unrotated: the unrotated ones kept beside them), and its ALiBi slope.
void head_inputs(const Scenario& scenario, const Trace& trace, const Matrix& q_all, const Matrix& k_all,
                 const Matrix& v_all, int h, HeadTrace& head, bool keep_unrotated);
// What every backend does once each head's output is in trace.concat: gated attention's gate
// (concat ⊙ σ(x·W_G + b_G)); the output concat · W_O (or gated · W_O); each head's fully masked rows (the mask rule) and overflow flag (the
// overflow rule: a naive softmax whose finite inputs gave a non-finite output); the
// warnings; the block. Then trace.ok.
void finish_trace(const Scenario& scenario, Trace& trace);
// The rest of the block after attention (trace.hpp: BlockTrace), given x = X + PE and the
// attention's output. In a pre-norm block, `block` already holds norm1 (prepare_inputs
// computed it: attention reads it). `any_order`: its products in any summation order
// (ProductKernel::any_order: a decode step's one row, compared within float rounding).
// One expert of a mixture on its tokens' rows (m × d_model) → down (m × d_model): its gated
// feed-forward with its biases and the mixture's clamp, before the routing weight.
void expert_forward(const MixtureOfExperts& moe, Activation activation, const Expert& expert, const Matrix& rows, Matrix& down,
                    bool any_order = false);
void run_block(const Scenario& scenario, const Matrix& x, const Matrix& attention_output, BlockTrace& block, bool any_order = false);
// True when the scenario asks for any part of the block.
bool has_block(const Scenario& scenario);
// "t1", "t2", … when the labels are missing or do not match n.
std::vector<std::string> labels_or_numbers(const std::vector<std::string>& given, int n, const char* prefix);
void note_non_finite(Trace& trace, const char* name, const Matrix& m);
// The same for a weight, scanned once per content (SharedMatrix::first_non_finite).
void note_non_finite(Trace& trace, const char* name, const SharedMatrix& m);

// Row-wise LayerNorm: γ ⊙ (x − mean) / √(var + ε) + β, the variance biased (÷ d). γ, β
// empty → 1 and 0.
Matrix layer_norm(const Matrix& x, float epsilon = 1e-5f, const LayerNormParams& params = {});
// Row-wise RMSNorm (Llama, Gemma): x / √(mean(x²) + ε) ⊙ γ, or ⊙ (1 + γ) with gamma_plus_one
// (Gemma, γ as its checkpoint stores it). γ empty → no scale.
Matrix rms_norm(const Matrix& x, float epsilon, const Vector& gamma = {}, bool gamma_plus_one = false);
// The feed-forward's activation, element by element.
Matrix activate(const Matrix& x, Activation activation);

}  // namespace attn
