#pragma once
// Every matrix of a trace, in one table: its name, where it lives in the trace, its axes,
// the kind of its values, its title and shape in the words of the articles, the stage of
// the pipeline it belongs to, the column of the pipeline it is drawn in, and the scenario
// matrix an in-place edit of it writes. find_matrix, matrix_names, the JSON trace, the
// exports, the pipeline, lesson and compare cards and the tooltips all read this table:
// adding a matrix is one row.
//
// Names: a whole-trace matrix by its key ("x", "w_q", "block.norm1"); a head's matrix as
// "head<h>." + key ("head0.weights"). Users never see names: display_name() says
// "head 1 · weights".
#include <optional>
#include <string>
#include <vector>

#include "tensor/matrix.hpp"
#include "attention/stage.hpp"
#include "attention/trace.hpp"

namespace attn {

// What a matrix's rows or columns count.
enum class Axis { Query, Key, Dim, Hidden, Expert };
// How its values are coloured: signed (a diverging scale around 0) or weights (0…1).
enum class ValueKind { Signed, Weights };

// The scenario matrices an in-place edit can write (edits.hpp applies them).
enum class Editable {
    None, X, SourceX, Q, K, V, WQ, WK, WV, WO, BQ, BK, BV, BO, W1, B1, W2, B2, Gamma1, Beta1, Gamma2, Beta2,
    WGate, GammaPostAttention, BetaPostAttention, GammaPostFeedForward, BetaPostFeedForward,
    QNorm, KNorm,  // QK-norm's weights, one (1 × d_k) vector each for q and k
    Router,        // a mixture of experts' W_router (d_model × E)
    // Latent attention's weights (scenario.hpp's LatentAttention): W_q_a, W_q_b, W_kv_a, W_kv_b,
    // its biases b_q_a, b_kv_a and its norms' γ_q, γ_kv
    LatentWQA, LatentWQB, LatentWKVA, LatentWKVB, LatentBQA, LatentBKVA, LatentQNorm, LatentKVNorm,
    GateW, GateB,  // gated attention's W_G (d_model × H·d_v) and b_G
};
const char* to_string(Editable editable);

// The arithmetic a cell's tooltip writes out (app/ui/arithmetic.cpp), one kind per entry.
enum class Arithmetic {
    Plain,                                   // the value alone: a bias, a pooled map
    Embedding, Encoding, WithEncoding,       // X, PE, X + PE (a source's: rows that count keys)
    Weight, ValueWeight, OutputWeight,       // W_Q and W_K, W_V, W_O: which head's column
    Query, Key, Value, QueryBeforeRope, KeyBeforeRope,  // a row of the input · a column of W
    QueryBeforeNorm, KeyBeforeNorm,          // the same, before QK-norm
    QueryNorm, KeyNorm, QKNormWeight,        // QK-norm: a row's RMS and the product; its weights
    SinkWeight,                              // attention sinks: the sink's share of a row
    QueryTemperature,                        // Llama 4: τ_i = ln(⌊(i + 1)/floor_scale⌋ + 1)·attn_scale + 1
    OutputGate, Gated,                       // gated attention: σ(x·W_G + b_G), and concat ⊙ it
    RawScore, PositionBias, ScaledScore, CappedScore, MaskedScore, Softmax, HeadOutput,
    Concat, Output,
    // The block. A norm's kind says which norm it is; the trace's settings say whether it is
    // LayerNorm or RMSNorm (and RMSNorm's (1 + γ) form), and the tooltip writes that one out.
    Residual, Norm1, Norm2, PostAttentionNorm, PostFeedForwardNorm,
    FeedForwardHidden, Gate, UpProjection, GateProduct, FeedForwardOutput, Residual2, BlockOutput,
    RouterLogit, RouterProbability, Routing, // a mixture of experts: x·W_router, its softmax, the kept top-k
    RouterChoice,                            // DeepSeek-V3's: σ + b_choice in the kept groups
    SharedGate, SharedExpertOutput,          // its shared expert: σ(x·g), and what the expert adds
    LatentDown, LatentNorm, LatentUp, LatentRopeKey,  // latent attention: x·W_a + b, RMSNorm⊙γ, ĉ·W_kv_b, RoPE(k_rope)
    LatentParameter,                         // its weights, biases and γ
    // Gated DeltaNet: the convolution then SiLU, β = σ(x·W_b), the decay g, an implied weight
    // A[t,j], the state, each head's RMSNorm and the gate SiLU(z); its weights and vectors
    DeltaConv, DeltaBeta, DeltaDecay, ImpliedWeight, DeltaState, DeltaNormed, DeltaGated, DeltaParameter,
    // Differential attention: λ's vectors, a pair's difference o_p = read_p − λ·read_{p+P}, its RMSNorm
    DifferentialLambda, DifferentialDifference, DifferentialNormed,
    BlockParameter,                          // γ, β, W_1, b_1, W_2, b_2, W_gate
};

// The columns of the pipeline, left to right: each card is drawn in its entry's column.
enum class Column {
    Inputs, Positions, InputsWithPositions, AttentionInput, Weights, Biases, Latent, Convolution, BeforeQKNorm, QKNorm, Unrotated, Projections, Scores, Scaled,
    Capped, Masked, Softmax, Sink, HeadOutput, Concat, Output, Block, Router, GateAndUp, FeedForward, BlockOutput,
};

struct MatrixEntry {
    const char* key;       // "weights", "w_q", "block.norm1"
    bool per_head;
    Stage stage;           // the lesson step that computes it (where `reads` says it is a step's result)
    Axis rows, cols;
    ValueKind values;
    Editable edit;         // Editable::None: computed, not edited in place
    const char* label;     // for users: "weights", "W_Q", "LayerNorm 1"
    Arithmetic arithmetic; // what its tooltip writes out
    // The matrix in this trace (null when this trace has none: RoPE off, no block, …).
    const Matrix* (*get)(const Trace& trace, const HeadTrace* head);
    // Its title and shape line as the pipeline writes them, from the trace's own settings:
    // "Q = LN₁(X+PE)·W_Q + b_q", "(3×8)·(8×4) → 3×4".
    std::string (*title)(const Trace& trace, int head);
    std::string (*shape)(const Trace& trace, int head);
    Column (*column)(const Trace& trace);
    // Whether the pipeline draws it (null: whenever it exists). X + PE without an additive
    // encoding is X again, one head's concat its output, the output without W_O the concat:
    // exported, not drawn twice.
    bool (*drawn)(const Trace& trace) = nullptr;
    // The lesson's focused view of a step draws the step's results, each after what it reads.
    // `reads`: the matrices it is computed from, as its formula names them ("scores" reads "q"
    // and "k"; a per-head key means the same head's, "head2.output" names another's), those the
    // trace does not have left out. Null: no step draws it as its result (a weight, or a step
    // between two that the lesson draws as one: Q before QK-norm).
    std::vector<std::string> (*reads)(const Trace& trace) = nullptr;
    // The step where the trace's settings teach it, when that is not `stage` (under RoPE, Q and
    // K are the positional step's: it turns them), or nullopt where no step does in this trace
    // (X + PE without an additive encoding is X again). Null: `stage`.
    std::optional<Stage> (*taught_in)(const Trace& trace) = nullptr;
};

// Whether the scenario holds it as a vector (a bias, γ, β): one row, exported as a list.
bool is_vector(const MatrixEntry& entry);
// W_Q, W_K, W_V, W_O and the block's W_1, W_2, W_gate: a model's weights, not computed.
// Gated DeltaNet's weights and vectors (Arithmetic::DeltaParameter) too.
bool is_weight(const MatrixEntry& entry);
// That weight of the trace as it is held (a checkpoint's may be read in place from its file:
// shared_matrix.hpp), so it can be asked about without being widened; nullptr for any other entry.
const SharedMatrix* weight_of(const Trace& trace, const MatrixEntry& entry);

// The table, in pipeline order.
const std::vector<MatrixEntry>& matrix_registry();

// A card of a lesson step's view: a matrix of the trace by name, and whether it is the step's
// result (drawn framed, last) or what a result reads.
struct StepMatrix {
    std::string name;
    bool result = false;
};
// The matrices a lesson step draws for `head`, from the table's `stage`, `taught_in` and
// `reads`: what the step's results read, in the order they read it, then the results. A result
// that another result of the step reads is drawn with what it reads (scaled scores before the
// soft-cap). With Q, K and V given (no tokens), the steps up to the projections show them.
// Empty when the step computes nothing of its own in this trace (positions none, the block
// off): the view says what stands in its place.
std::vector<StepMatrix> step_matrices(const Trace& trace, Stage stage, int head);
// A pipeline column as the stage strip names it for users: "Q K V", "Q·Kᵀ", "feed-forward".
const char* column_label(Column column);
// The column a label names, as column_label writes it; nullopt for any other text.
std::optional<Column> column_named(const std::string& label);

// A matrix named in a trace: its entry and head (−1 for whole-trace matrices).
struct MatrixRef {
    const MatrixEntry* entry = nullptr;
    int head = -1;
};
// The one parser of names: nullopt for a name no entry has (or a malformed head number).
std::optional<MatrixRef> parse_matrix_name(const std::string& name);
std::string matrix_name(const MatrixRef& ref);
// The matrix `key` of the same head as `ref` ("scores" beside head 2's weights), or null when
// this trace has none.
const Matrix* sibling_of(const Trace& trace, const MatrixRef& ref, const std::string& key);
// "head 1 · weights", "W_Q", "X": what the user reads.
std::string display_name(const std::string& name);
// The matrix, or null when the name is unknown or the matrix is empty in this trace.
const Matrix* matrix_of(const Trace& trace, const MatrixRef& ref);

// Positions [begin, end) counted from 0, as the user counts them: from 1, both ends shown —
// "1000–1015", or "1000" for one.
std::string position_span(long long begin, long long end);

// A number as cards, titles and tooltips write it: −∞, ∞, NaN, or `decimals` digits with a
// real minus sign (U+2212); values too long for that, or that it would round to zero, in
// short scientific notation ("−1e9", "2e−4").
std::string format_value(float value, int decimals);
// RoPE's scaling in words, for a text of `length` tokens: "LongRoPE's long factors (n = 11 > 4),
// cos and sin × 1.581"; empty without scaling or attention factor.
std::string rope_scaling_words(const RopeOptions& rope, int length);

}  // namespace attn
