#pragma once
// Edit commands: the only way the UI changes a Scenario. Panels read a const Trace and
// push edits; the edits are applied between frames, mark the session dirty, and the
// trace is recomputed once. Pure logic: no window, no GL.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "comparison.hpp"
#include "attention/history.hpp"
#include "attention/registry.hpp"
#include "attention/scenario.hpp"
#include "attention/trace.hpp"

namespace attn::edits {

// The scenario matrices a user may edit in place (registry.hpp names them for every card).
using MatrixId = Editable;
// Which token row: the target (queries) or the source (keys/values in cross-attention).
enum class Side { Target, Source };


struct SetCell { MatrixId matrix; int row = 0; int col = 0; float value = 0.0f; };
struct SetTokens { Side side = Side::Target; std::vector<std::string> tokens; };
struct InsertToken { Side side = Side::Target; int index = 0; std::string text; };
struct DeleteToken { Side side = Side::Target; int index = 0; };
struct MoveToken { Side side = Side::Target; int from = 0; int to = 0; };
struct RenameToken { Side side = Side::Target; int index = 0; std::string text; };
struct SetHeads { int heads = 1; };
struct SetMaskKind { MaskKind kind = MaskKind::None; };
struct SetWindow { int window = 1; };
struct SetChunk { int chunk = 1; };
struct SetPadding { Side side = Side::Target; int index = 0; bool padding = false; };
struct PaintMaskCell { int row = 0; int col = 0; bool visible = true; };
struct SetMaskedFill { float value = 0.0f; };
struct SetScale { bool on = true; };
struct SetScoreScale { float value = 0.0f; };  // 0: 1/√d_k
struct SetSoftcap { float value = 0.0f; };     // 0: no soft-capping
struct SetRope { RopeOptions rope; };          // RoPE's variant (with rotary positions)
// QK-norm on or off and its form (1 + w); its weights are kept either way.
// whole: over the whole projection, every head at once (OLMo 2); a change of form drops the
// weights, whose count it changes (d_k, or H·d_k).
struct SetQKNorm { bool on = false; bool plus_one = false; bool whole = false; };
// Attention sinks: one logit per query head, or none (empty).
struct SetSinks { Vector sinks; };
struct SetTemperature { QueryTemperature temperature; };  // Llama 4's query temperature; floor_scale 0: off
struct SetOutputGate { bool on = false; };  // gated attention (Qwen3-Next): its weights kept while off
// Differential attention (DiffLlama): heads in pairs, λ_init as given; its λ vectors kept while off.
// On, it drops what it has no place for (the sinks, the output gate); not with latent attention or
// Gated DeltaNet, nor on direct Q, K, V.
struct SetDifferential { bool on = false; float lambda_init = 0.8f; };
// Gated DeltaNet (Qwen3-Next's linear layers) in place of softmax attention: on, it takes a causal mask,
// no RoPE or ALiBi, and drops what it has no place for (QK-norm, sinks, the soft-cap, the output gate, the
// temperature, latent attention), one key head of d_k = d_v; off, its sizes and weights go. W_Q, W_K, W_V
// and W_O change shape either way: seeded again.
struct SetDeltaNet { bool on = false; };
struct SetSoftmax { SoftmaxKind kind = SoftmaxKind::Stable; };
struct SetPositional { PositionalEncoding kind = PositionalEncoding::None; };
struct SetAttention { AttentionKind kind = AttentionKind::Self; };
struct SetBlock { bool on = false; };
// The block's design, its weights kept: which norm, the feed-forward, where the norms stand.
// RMSNorm drops any β and a gated feed-forward drops b₁ and b₂ (neither has them).
struct SetBlockDesign {
    NormKind norm_kind = NormKind::LayerNorm;
    bool gamma_plus_one = false;
    NormPlacement norm = NormPlacement::Post;
    bool parallel_residual = false;
    bool sandwich_norm = false;
    bool gated = false;
    Activation activation = Activation::ReLU;
    // The block's own norms (layer_norm): off in OLMo 2's block, where sandwich_norm's norms
    // after each sublayer are the only ones. Absent: as they are.
    std::optional<bool> layer_norm;
};
// A mixture of experts' choices, its router and experts kept: how many experts each token
// keeps, whether their weights are renormalised, and the experts whose output is dropped
// (ascending, from 0). Refused where the block has no mixture or the numbers do not fit it.
struct SetMixture {
    int top_k = 1;
    bool normalize_top_k = false;
    std::vector<int> ablated;
};
// Latent attention's sizes (kv_rank 0: off; scenario.hpp's LatentAttention), for embeddings and
// self-attention. A change of size drops what no longer fits, to be seeded again at the new sizes:
// the latent's weights, W_Q and b_q (with q_rank, or when d_k changes) and W_O (its H·d_v rows);
// turned on, W_K, W_V, their biases, head_dim, kv_heads and QK-norm go (the latent makes K and V).
struct SetLatent { int kv_rank = 0; int q_rank = 0; int nope_dim = 0; int rope_dim = 0; int v_dim = 0; };
struct SetSeed { std::uint64_t seed = 1; };   // also re-seeds W_Q, W_K, W_V, W_O and the latent's weights
// navigation: a lesson step being shown, not an edit: it is not undone, and the undo
// history starts again from it (undo never mixes one step's scenario with another's text).
struct ReplaceScenario { Scenario scenario; bool navigation = false; };

using Edit = std::variant<SetCell, SetTokens, InsertToken, DeleteToken, MoveToken, RenameToken, SetHeads,
                          SetMaskKind, SetWindow, SetChunk, SetPadding, PaintMaskCell, SetMaskedFill, SetScale, SetScoreScale, SetSoftcap, SetRope,
                          SetQKNorm, SetSinks, SetTemperature, SetOutputGate, SetDifferential, SetDeltaNet, SetSoftmax, SetPositional, SetAttention, SetBlock, SetBlockDesign, SetMixture, SetLatent, SetSeed,
                          ReplaceScenario>;

// Applies one edit. Returns true when the scenario changed; false (scenario untouched)
// when the edit does not fit it (a cell out of range, a head count that does not divide).
// The first SetCell on a derived matrix (X from the token text, a seeded W) copies the
// matrix the engine would use into the scenario, then changes the one cell.
bool apply(const Edit& edit, Scenario& scenario);

// Number of queries and keys the scenario describes (before running it).
int query_count(const Scenario& scenario);
int key_count(const Scenario& scenario);
// The head counts that split the columns evenly (divisors of d_model, or of Q's columns
// in direct mode), ascending.
std::vector<int> head_choices(const Scenario& scenario);

// Undo and redo, queued like edits and applied between frames after them.
enum class HistoryStep { Undo, Redo };

// The document the UI edits: the scenario, the last good trace, and the queue.
struct Session {
    Scenario scenario;
    Trace trace;                         // the last trace that ran (ok); shown on screen
    Trace spare;                         // the next run is computed into this one, then swapped
    Scenario computed;                   // the scenario `trace` was computed from
    std::vector<std::string> errors;     // why the current scenario cannot run (empty when it can)
    std::vector<Edit> pending;           // applied by update(), between frames
    bool dirty = true;                   // the scenario changed since the trace was computed
    std::uint64_t revision = 0;          // bumped each time the scenario changes (edits, undo, redo)
    std::uint64_t generation = 0;        // bumped each time `trace` is replaced
    double last_run_ms = 0.0;
    comparison::Comparison comparison;   // Compare's B against `trace` (compute.hpp installs it)
    History history;                     // the scenario before each batch of edits that changed it
    std::vector<HistoryStep> history_steps;  // applied by update(), after the pending edits
    // A scenario and its undo history put back whole (leaving a lesson returns to the
    // user's own work): applied by update(), after the pending edits.
    struct Restore { Scenario scenario; History history; };
    std::optional<Restore> restore;

    void push(Edit edit) { pending.push_back(std::move(edit)); }
    void request_undo() { history_steps.push_back(HistoryStep::Undo); }
    void request_redo() { history_steps.push_back(HistoryStep::Redo); }
};

// What an edit does, in words, for the Edit menu: "edit W_Q[1,2]" (rows and columns count
// from 1, as everywhere in the app).
std::string describe(const Edit& edit);

// Applies the pending edits in order (marking the session dirty when one changed the
// scenario), recording the scenario before the batch in the history when it changed (a
// batch with a navigation clears the history instead), then the queued undo/redo steps.
// Returns true when the scenario changed.
bool apply_pending(Session& session);
// The scenario and its undo history as apply_pending would leave them, the session itself
// unchanged: the user's work, edits still queued included (what a lesson keeps as it opens).
Session::Restore queued_work(const Session& session);
// Steps back (forward) through the history now; false when there is nothing to undo (redo).
bool undo(Session& session);
bool redo(Session& session);
// apply_pending, then recomputes the trace when dirty. An impossible scenario keeps the
// last good trace and fills `errors`. Returns true when a new trace was computed.
bool update(Session& session);
// The name of the preset `scenario` exactly is (unedited), or empty: what a trace computed
// from it records in settings.preset, so that a panel naming a preset or comparing an
// article's numbers does so only for the scenario on screen.
std::string preset_of(const Scenario& scenario);

}  // namespace attn::edits
