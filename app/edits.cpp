// Edit commands applied to a Scenario, and the session that recomputes the trace.
//
// Index
// [SECTION] Helpers
// [SECTION] Cells
// [SECTION] Tokens
// [SECTION] Switches
// [SECTION] Session
#include "edits.hpp"

#include "teaching/presets.hpp"

#include "attention/incremental.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <Eigen/Core>

#include "attention/engine.hpp"
#include "attention/mask.hpp"
#include "tensor/random.hpp"
#include "tensor/reflect.hpp"

namespace attn::edits {

// [SECTION] Helpers

namespace {

bool same_value(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, sizeof a) == 0;  // tells −0 from +0: the user typed it
}

Matrix without_row(const Matrix& m, int row) {
    Matrix out(m.rows() - 1, m.cols());
    for (Eigen::Index r = 0, o = 0; r < m.rows(); ++r)
        if (r != row) out.row(o++) = m.row(r);
    return out;
}

Matrix with_row(const Matrix& m, int at, const Vector& row) {
    Matrix out(m.rows() + 1, m.cols());
    for (Eigen::Index r = 0, o = 0; o < out.rows(); ++o) {
        if (o == at) out.row(o) = row;
        else out.row(o) = m.row(r++);
    }
    return out;
}

// Moves row `from` to index `to`, shifting the rows between.
Matrix moved_row(const Matrix& m, int from, int to) {
    const Vector moving = m.row(from);
    Matrix rest = without_row(m, from);
    return with_row(rest, to, moving);
}

template <typename T>
void move_element(std::vector<T>& v, int from, int to) {
    T moving = v[static_cast<size_t>(from)];
    v.erase(v.begin() + from);
    v.insert(v.begin() + to, moving);
}

// Keeps the overlap of the old custom mask; new cells are visible.
void resize_custom_mask(Scenario& s) {
    const int n_q = query_count(s), n_k = key_count(s);
    if (s.custom_mask.rows() == n_q && s.custom_mask.cols() == n_k) return;
    if (s.custom_mask.size() == 0 && s.mask != MaskKind::Custom) return;
    MaskMatrix resized = MaskMatrix::Constant(n_q, n_k, true);
    const Eigen::Index rows = std::min<Eigen::Index>(n_q, s.custom_mask.rows());
    const Eigen::Index cols = std::min<Eigen::Index>(n_k, s.custom_mask.cols());
    if (rows > 0 && cols > 0) resized.topLeftCorner(rows, cols) = s.custom_mask.topLeftCorner(rows, cols);
    s.custom_mask = resized;
}

SharedMatrix* weight_matrix(Scenario& s, MatrixId id, int& which) {
    switch (id) {
        case MatrixId::WQ: which = 0; return &s.w_q;
        case MatrixId::WK: which = 1; return &s.w_k;
        case MatrixId::WV: which = 2; return &s.w_v;
        case MatrixId::WO: which = 3; return &s.w_o;
        default: return nullptr;
    }
}

}  // namespace

int query_count(const Scenario& s) {
    if (s.input == InputMode::Direct) return static_cast<int>(s.q.rows());
    return s.target.tokens.empty() ? static_cast<int>(s.target.embeddings.rows()) : static_cast<int>(s.target.tokens.size());
}

int key_count(const Scenario& s) {
    if (s.input == InputMode::Direct) return static_cast<int>(s.k.rows());
    if (s.attention == AttentionKind::Self) return query_count(s);
    return s.source.tokens.empty() ? static_cast<int>(s.source.embeddings.rows()) : static_cast<int>(s.source.tokens.size());
}

std::vector<int> head_choices(const Scenario& s) {
    // Grouped-query attention or a head width of its own: the weights' shapes fix the count.
    if (s.kv_heads > 0 || s.head_dim > 0) return {s.heads};
    // Latent attention's heads need no division of d_model; its given weights fix the count.
    if (s.latent.on()) {
        const LatentAttention& l = s.latent;
        if (l.w_q_b.size() != 0 || l.w_kv_b.size() != 0 || s.w_q.size() != 0 || s.w_o.size() != 0 || s.b_q.size() != 0) return {s.heads};
        return {1, 2, 3, 4, 6, 8};
    }
    int columns = s.d_model;
    if (s.input == InputMode::Direct) columns = static_cast<int>(s.q.cols());
    std::vector<int> choices;
    for (int h = 1; h <= columns; ++h) {
        if (columns % h != 0) continue;
        if (s.input == InputMode::Direct && s.v.cols() % h != 0) continue;
        choices.push_back(h);
    }
    if (choices.empty()) choices.push_back(1);
    return choices;
}

// [SECTION] Cells

namespace {

// A vector of the scenario (a bias, γ or β) as edited: the one used, copied in on the first
// edit (zeros, or ones for γ), then the one entry changed.
bool set_vector_cell(const SetCell& e, Scenario& s) {
    const bool qk_norm = e.matrix == MatrixId::QNorm || e.matrix == MatrixId::KNorm;
    if (s.input != InputMode::Embeddings && e.matrix != MatrixId::BO && !qk_norm) return false;
    const LatentAttention& latent = s.latent;
    const bool latent_queries = e.matrix == MatrixId::LatentBQA || e.matrix == MatrixId::LatentQNorm;
    if ((e.matrix == MatrixId::LatentBQA || e.matrix == MatrixId::LatentBKVA || latent_queries || e.matrix == MatrixId::LatentKVNorm) &&
        (!latent.on() || (latent_queries && latent.q_rank == 0)))
        return false;
    const int d_ff = s.block.d_ff > 0 ? s.block.d_ff : 4 * s.d_model;
    Vector* target = nullptr;
    int length = s.d_model;
    float fill = 0.0f;
    const float identity_gamma = s.block.gamma_plus_one ? 0.0f : 1.0f;  // Gemma's (1 + γ) is the identity at γ = 0
    switch (e.matrix) {
        case MatrixId::BQ: target = &s.b_q; break;
        case MatrixId::BK: target = &s.b_k; break;
        case MatrixId::BV: target = &s.b_v; break;
        case MatrixId::BO:
            target = &s.b_o;
            if (s.input == InputMode::Direct) length = static_cast<int>(s.w_o.size() != 0 ? s.w_o.cols() : s.v.cols());
            break;
        case MatrixId::B1: target = &s.block.b_1; length = d_ff; break;
        case MatrixId::B2: target = &s.block.b_2; break;
        case MatrixId::Gamma1: target = &s.block.norm_1.gamma; fill = identity_gamma; break;
        case MatrixId::Beta1: target = &s.block.norm_1.beta; break;
        case MatrixId::Gamma2: target = &s.block.norm_2.gamma; fill = identity_gamma; break;
        case MatrixId::Beta2: target = &s.block.norm_2.beta; break;
        case MatrixId::GammaPostAttention: target = &s.block.norm_post_attention.gamma; fill = identity_gamma; break;
        case MatrixId::BetaPostAttention: target = &s.block.norm_post_attention.beta; break;
        case MatrixId::GammaPostFeedForward: target = &s.block.norm_post_feed_forward.gamma; fill = identity_gamma; break;
        case MatrixId::BetaPostFeedForward: target = &s.block.norm_post_feed_forward.beta; break;
        case MatrixId::LatentBQA: target = &s.latent.b_q_a; length = latent.q_rank; break;
        case MatrixId::LatentBKVA: target = &s.latent.b_kv_a; length = latent.kv_rank + latent.rope_dim; break;
        case MatrixId::LatentQNorm: target = &s.latent.q_a_norm; length = latent.q_rank; fill = 1.0f; break;
        case MatrixId::LatentKVNorm: target = &s.latent.kv_a_norm; length = latent.kv_rank; fill = 1.0f; break;
        case MatrixId::GateB:
            if (!s.output_gate.on) return false;
            target = &s.output_gate.b_g;
            length = s.heads * value_dim_of(s);
            break;
        case MatrixId::QNorm:
        case MatrixId::KNorm:
            // One number per dimension of a head, shared by every head (over the whole projection, one per
            // head and dimension): the identity is 1, or 0 in the (1 + w) form.
            target = e.matrix == MatrixId::QNorm ? &s.q_norm : &s.k_norm;
            length = s.input == InputMode::Direct ? static_cast<int>(s.q.cols()) / std::max(1, s.heads) : head_dim_of(s);
            length = qk_norm_length(s.qk_norm_whole, length, e.matrix == MatrixId::QNorm ? s.heads : kv_heads_of(s));
            fill = s.qk_norm_plus_one ? 0.0f : 1.0f;
            break;
        default: return false;
    }
    // RMSNorm has no β and a gated feed-forward no biases: there is nothing of theirs to edit.
    const bool beta = e.matrix == MatrixId::Beta1 || e.matrix == MatrixId::Beta2 || e.matrix == MatrixId::BetaPostAttention ||
                      e.matrix == MatrixId::BetaPostFeedForward;
    if ((beta && s.block.norm_kind == NormKind::RMSNorm) || (s.block.gated && (e.matrix == MatrixId::B1 || e.matrix == MatrixId::B2)))
        return false;
    bool materialised = false;
    if (target->size() == 0) {
        *target = Vector::Constant(length, fill);
        materialised = true;
    }
    if (e.row != 0 || e.col < 0 || e.col >= target->size()) return materialised;
    if (same_value((*target)(e.col), e.value)) return materialised;
    (*target)(e.col) = e.value;
    return true;
}

bool set_cell(const SetCell& e, Scenario& s) {
    Matrix* target = nullptr;
    SharedMatrix* weight = nullptr;  // a weight: copied from the model it shares only when a cell changes
    bool materialised = false;
    switch (e.matrix) {
        case MatrixId::None: return false;
        case MatrixId::BQ:
        case MatrixId::BK:
        case MatrixId::BV:
        case MatrixId::BO:
        case MatrixId::B1:
        case MatrixId::B2:
        case MatrixId::Gamma1:
        case MatrixId::Beta1:
        case MatrixId::Gamma2:
        case MatrixId::Beta2:
        case MatrixId::GammaPostAttention:
        case MatrixId::BetaPostAttention:
        case MatrixId::GammaPostFeedForward:
        case MatrixId::BetaPostFeedForward:
        case MatrixId::QNorm:
        case MatrixId::KNorm:
        case MatrixId::LatentBQA:
        case MatrixId::LatentBKVA:
        case MatrixId::LatentQNorm:
        case MatrixId::LatentKVNorm:
        case MatrixId::GateB: return set_vector_cell(e, s);
        case MatrixId::GateW: {
            if (s.input != InputMode::Embeddings || !s.output_gate.on) return false;
            weight = &s.output_gate.w_g;
            if (weight->size() == 0) {  // the seeded one the engine uses (engine.cpp's gate_weight)
                *weight = gate_weight(s);
                materialised = true;
            }
            break;
        }
        case MatrixId::LatentWQA:
        case MatrixId::LatentWQB:
        case MatrixId::LatentWKVA:
        case MatrixId::LatentWKVB: {
            const bool queries = e.matrix == MatrixId::LatentWQA || e.matrix == MatrixId::LatentWQB;
            if (s.input != InputMode::Embeddings || !s.latent.on() || (queries && s.latent.q_rank == 0)) return false;
            const LatentWeight which = e.matrix == MatrixId::LatentWQA ? LatentWeight::QA : e.matrix == MatrixId::LatentWQB ? LatentWeight::QB
                                     : e.matrix == MatrixId::LatentWKVA ? LatentWeight::KVA : LatentWeight::KVB;
            weight = which == LatentWeight::QA ? &s.latent.w_q_a : which == LatentWeight::QB ? &s.latent.w_q_b
                   : which == LatentWeight::KVA ? &s.latent.w_kv_a : &s.latent.w_kv_b;
            if (weight->size() == 0) {  // the seeded one the engine uses (engine.cpp's latent_weight)
                *weight = latent_weight(s, which);
                materialised = true;
            }
            break;
        }
        case MatrixId::W1:
        case MatrixId::W2:
        case MatrixId::WGate: {
            if (s.input != InputMode::Embeddings) return false;
            const int d_ff = s.block.d_ff > 0 ? s.block.d_ff : 4 * s.d_model;
            const bool down = e.matrix == MatrixId::W2;
            weight = e.matrix == MatrixId::W1 ? &s.block.w_1 : down ? &s.block.w_2 : &s.block.w_gate;
            if (weight->size() == 0) {  // the seeded one the engine uses, before the edit (engine.cpp's run_block)
                const int which = e.matrix == MatrixId::W1 ? 10 : down ? 11 : 12;
                *weight = down ? resolved_weight(Matrix(), d_ff, s.d_model, s.seed, which) : resolved_weight(Matrix(), s.d_model, d_ff, s.seed, which);
                materialised = true;
            }
            break;
        }
        case MatrixId::Router: {
            if (s.input != InputMode::Embeddings || !s.block.moe.routed()) return false;
            weight = &s.block.moe.router;
            if (weight->size() == 0) {  // the seeded one the engine uses (engine.cpp's run_experts)
                *weight = resolved_weight(Matrix(), s.d_model, s.block.moe.experts, s.seed, 20);
                materialised = true;
            }
            break;
        }
        case MatrixId::X:
        case MatrixId::SourceX: {
            if (s.input != InputMode::Embeddings) return false;
            Sequence& seq = e.matrix == MatrixId::X ? s.target : s.source;
            if (seq.embeddings.size() == 0) {
                seq.embeddings = resolved_embeddings(seq, s.d_model);  // X from the token text, before the edit
                materialised = true;
            }
            target = &seq.embeddings;
            break;
        }
        case MatrixId::Q: target = &s.q; break;
        case MatrixId::K: target = &s.k; break;
        case MatrixId::V: target = &s.v; break;
        default: {
            int which = 0;
            weight = weight_matrix(s, e.matrix, which);
            if (weight->size() == 0) {
                if (s.input != InputMode::Embeddings) return false;  // direct mode without W_O
                // W_Q (d_model × H·d_k), W_K and W_V (d_model × H_kv·d_k), W_O (H·d_k × d_model)
                const int d_k = head_dim_of(s), query_width = s.heads * d_k, kv_width = kv_heads_of(s) * d_k;
                const int rows = which == 3 ? s.heads * value_dim_of(s) : s.d_model;  // W_O reads H·d_v
                const int cols = which == 0 ? query_width : which == 3 ? s.d_model : kv_width;
                *weight = resolved_weight(*weight, rows, cols, s.seed, which);
                materialised = true;
            }
        }
    }
    const Matrix& current = weight ? weight->get() : *target;
    if (e.row < 0 || e.col < 0 || e.row >= current.rows() || e.col >= current.cols()) return materialised;
    if (same_value(current(e.row, e.col), e.value)) return materialised;
    (weight ? weight->edit() : *target)(e.row, e.col) = e.value;
    return true;
}

}  // namespace

// [SECTION] Tokens

namespace {

// The rows that follow one side's tokens: the token texts (or direct-mode labels), the
// matrices with one row per token, and the padding flags.
struct TokenRows {
    std::vector<std::string>* labels = nullptr;
    std::vector<Matrix*> matrices;   // materialised matrices with one row per token
    std::vector<bool>* padding = nullptr;
    bool derive_rows = false;        // new rows come from token_embedding (embedding mode)
    int count = 0;
};

TokenRows token_rows(Scenario& s, Side side) {
    TokenRows rows;
    if (s.input == InputMode::Embeddings) {
        Sequence& seq = side == Side::Source && s.attention == AttentionKind::Cross ? s.source : s.target;
        rows.labels = &seq.tokens;
        if (seq.embeddings.size() != 0) rows.matrices.push_back(&seq.embeddings);
        rows.padding = &seq.padding;
        rows.derive_rows = true;
        rows.count = seq.tokens.empty() ? static_cast<int>(seq.embeddings.rows()) : static_cast<int>(seq.tokens.size());
        if (seq.tokens.empty())
            for (int i = 0; i < rows.count; ++i) seq.tokens.push_back("t" + std::to_string(i + 1));
    } else if (side == Side::Target) {
        rows.labels = &s.direct_query_labels;
        rows.matrices.push_back(&s.q);
        rows.count = static_cast<int>(s.q.rows());
        if (static_cast<int>(s.direct_query_labels.size()) != rows.count) {
            s.direct_query_labels.clear();
            for (int i = 0; i < rows.count; ++i) s.direct_query_labels.push_back("q" + std::to_string(i + 1));
        }
    } else {
        rows.labels = &s.direct_key_labels;
        rows.matrices.push_back(&s.k);
        rows.matrices.push_back(&s.v);
        rows.count = static_cast<int>(s.k.rows());
        if (static_cast<int>(s.direct_key_labels.size()) != rows.count) {
            s.direct_key_labels.clear();
            for (int i = 0; i < rows.count; ++i) s.direct_key_labels.push_back("k" + std::to_string(i + 1));
        }
    }
    return rows;
}

Vector new_row(const TokenRows& rows, const Matrix& m, const std::string& text, int d_model) {
    if (rows.derive_rows) return token_embedding(text, d_model);
    return Vector::Zero(m.cols());
}

bool insert_token(const InsertToken& e, Scenario& s) {
    TokenRows rows = token_rows(s, e.side);
    if (e.index < 0 || e.index > rows.count) return false;
    rows.labels->insert(rows.labels->begin() + e.index, e.text);
    for (Matrix* m : rows.matrices) *m = with_row(*m, e.index, new_row(rows, *m, e.text, s.d_model));
    if (rows.padding && !rows.padding->empty()) rows.padding->insert(rows.padding->begin() + e.index, false);
    resize_custom_mask(s);
    return true;
}

bool delete_token(const DeleteToken& e, Scenario& s) {
    TokenRows rows = token_rows(s, e.side);
    if (e.index < 0 || e.index >= rows.count || rows.count <= 1) return false;  // attention needs one token
    rows.labels->erase(rows.labels->begin() + e.index);
    for (Matrix* m : rows.matrices) *m = without_row(*m, e.index);
    if (rows.padding && static_cast<int>(rows.padding->size()) > e.index)
        rows.padding->erase(rows.padding->begin() + e.index);
    resize_custom_mask(s);
    return true;
}

bool move_token(const MoveToken& e, Scenario& s) {
    TokenRows rows = token_rows(s, e.side);
    if (e.from < 0 || e.to < 0 || e.from >= rows.count || e.to >= rows.count || e.from == e.to) return false;
    move_element(*rows.labels, e.from, e.to);
    for (Matrix* m : rows.matrices) *m = moved_row(*m, e.from, e.to);
    if (rows.padding && static_cast<int>(rows.padding->size()) == rows.count) {
        std::vector<bool>& flags = *rows.padding;
        const bool moving = flags[static_cast<size_t>(e.from)];
        flags.erase(flags.begin() + e.from);
        flags.insert(flags.begin() + e.to, moving);
    }
    return true;
}

bool rename_token(const RenameToken& e, Scenario& s) {
    TokenRows rows = token_rows(s, e.side);
    if (e.index < 0 || e.index >= rows.count || e.text.empty()) return false;
    if ((*rows.labels)[static_cast<size_t>(e.index)] == e.text) return false;
    (*rows.labels)[static_cast<size_t>(e.index)] = e.text;
    if (rows.derive_rows)  // a new word has its own vector
        for (Matrix* m : rows.matrices) m->row(e.index) = token_embedding(e.text, s.d_model);
    return true;
}

bool set_tokens(const SetTokens& e, Scenario& s) {
    if (e.tokens.empty()) return false;
    TokenRows rows = token_rows(s, e.side);
    const std::vector<std::string> old = *rows.labels;
    if (old == e.tokens) return false;
    const int n = static_cast<int>(e.tokens.size());
    for (Matrix* m : rows.matrices) {
        Matrix updated(n, m->cols());
        for (int i = 0; i < n; ++i) {
            // A position keeps its (possibly edited) row while its word stays the same.
            const bool kept = i < static_cast<int>(old.size()) && old[static_cast<size_t>(i)] == e.tokens[static_cast<size_t>(i)] &&
                              i < m->rows();
            updated.row(i) = kept ? Vector(m->row(i)) : new_row(rows, *m, e.tokens[static_cast<size_t>(i)], s.d_model);
        }
        *m = updated;
    }
    *rows.labels = e.tokens;
    if (rows.padding && !rows.padding->empty()) rows.padding->resize(static_cast<size_t>(n), false);
    resize_custom_mask(s);
    return true;
}

bool set_padding(const SetPadding& e, Scenario& s) {
    if (s.input != InputMode::Embeddings) return false;
    Sequence& seq = e.side == Side::Source && s.attention == AttentionKind::Cross ? s.source : s.target;
    const int n = seq.tokens.empty() ? static_cast<int>(seq.embeddings.rows()) : static_cast<int>(seq.tokens.size());
    if (e.index < 0 || e.index >= n) return false;
    if (static_cast<int>(seq.padding.size()) != n) seq.padding.assign(static_cast<size_t>(n), false);
    if (seq.padding[static_cast<size_t>(e.index)] == e.padding) return false;
    seq.padding[static_cast<size_t>(e.index)] = e.padding;
    return true;
}

}  // namespace

// [SECTION] Switches

namespace {

bool set_mask_kind(const SetMaskKind& e, Scenario& s) {
    if (s.mask == e.kind) return false;
    if (e.kind == MaskKind::Custom) {
        const int n_q = query_count(s), n_k = key_count(s);
        if (s.custom_mask.rows() != n_q || s.custom_mask.cols() != n_k) {
            // Start painting from the mask on screen, so switching to Custom changes nothing yet.
            MaskRule rule = mask_rule(s, n_k);
            if (rule.kind == MaskKind::SlidingWindow) rule.window = std::max(1, rule.window);
            s.custom_mask = mask_matrix(rule, n_q);
        }
    }
    if (e.kind == MaskKind::SlidingWindow) s.window = std::max(1, s.window);  // a band's half-width may be 0
    s.mask = e.kind;
    return true;
}

bool paint_mask_cell(const PaintMaskCell& e, Scenario& s) {
    const int n_q = query_count(s), n_k = key_count(s);
    if (e.row < 0 || e.col < 0 || e.row >= n_q || e.col >= n_k) return false;
    if (s.custom_mask.rows() != n_q || s.custom_mask.cols() != n_k) s.custom_mask = MaskMatrix::Constant(n_q, n_k, true);
    const bool changed_kind = s.mask != MaskKind::Custom;
    s.mask = MaskKind::Custom;
    if (s.custom_mask(e.row, e.col) == e.visible) return changed_kind;
    s.custom_mask(e.row, e.col) = e.visible;
    return true;
}

bool set_attention(const SetAttention& e, Scenario& s) {
    if (s.attention == e.kind || s.input != InputMode::Embeddings) return false;
    s.attention = e.kind;
    if (e.kind == AttentionKind::Cross && s.source.tokens.empty() && s.source.embeddings.size() == 0) {
        // A second sentence to attend to: the target's words, reversed, so the two rows differ.
        s.source.tokens = s.target.tokens;
        std::reverse(s.source.tokens.begin(), s.source.tokens.end());
    }
    resize_custom_mask(s);
    return true;
}

template <typename T, typename V>
bool assign(T& field, const V& value) {
    if (field == value) return false;
    field = value;
    return true;
}

}  // namespace

bool apply(const Edit& edit, Scenario& s) {
    return std::visit(
        [&s](const auto& e) -> bool {
            using E = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<E, SetCell>) return set_cell(e, s);
            else if constexpr (std::is_same_v<E, SetTokens>) return set_tokens(e, s);
            else if constexpr (std::is_same_v<E, InsertToken>) return insert_token(e, s);
            else if constexpr (std::is_same_v<E, DeleteToken>) return delete_token(e, s);
            else if constexpr (std::is_same_v<E, MoveToken>) return move_token(e, s);
            else if constexpr (std::is_same_v<E, RenameToken>) return rename_token(e, s);
            else if constexpr (std::is_same_v<E, SetHeads>) {
                const std::vector<int> choices = head_choices(s);
                if (std::find(choices.begin(), choices.end(), e.heads) == choices.end()) return false;
                // A sink per head: the new heads start from the first head's.
                if (s.sinks.size() != 0 && s.sinks.size() != e.heads) s.sinks = Vector::Constant(e.heads, s.sinks(0));
                // QK-norm's weights are one per dimension of a head: a new width starts from the identity.
                // Over the whole projection (OLMo 2) they are one per head and dimension.
                const int d_k = s.input == InputMode::Direct ? static_cast<int>(s.q.cols()) / e.heads : s.d_model / e.heads;
                const int q_width = qk_norm_length(s.qk_norm_whole, d_k, e.heads);
                const int k_width = qk_norm_length(s.qk_norm_whole, d_k, s.kv_heads > 0 ? s.kv_heads : e.heads);
                if (s.q_norm.size() != 0 && s.q_norm.size() != q_width) s.q_norm = Vector();
                if (s.k_norm.size() != 0 && s.k_norm.size() != k_width) s.k_norm = Vector();
                // differential attention's λ vectors are d_k long: another width starts from zeros (λ = λ_init)
                if (s.head_dim == 0 && s.differential.lambda_q1.size() != 0 && s.differential.lambda_q1.size() != d_k)
                    s.differential.lambda_q1 = s.differential.lambda_k1 = s.differential.lambda_q2 = s.differential.lambda_k2 = Vector();
                // the output gate's weights are one column per head and value dim: another width is seeded again
                Scenario after = s;
                after.heads = e.heads;
                const Eigen::Index gate_width = static_cast<Eigen::Index>(e.heads) * value_dim_of(after);
                if (s.output_gate.w_g.size() != 0 && s.output_gate.w_g.cols() != gate_width) s.output_gate.w_g = Matrix();
                if (s.output_gate.b_g.size() != 0 && s.output_gate.b_g.size() != gate_width) s.output_gate.b_g = Vector();
                if (s.delta_net.on && s.heads != e.heads) {  // Gated DeltaNet: one column (or d_v) per value head, seeded again
                    GatedDeltaNet& n = s.delta_net;
                    if (n.key_heads > 0 && e.heads % n.key_heads != 0) n.key_heads = 1;
                    n.w_z = n.w_b = n.w_a = Matrix();
                    n.conv = Matrix();
                    n.a_log = n.dt_bias = n.norm = Vector();
                    s.w_q = s.w_k = s.w_v = s.w_o = Matrix();
                }
                return assign(s.heads, e.heads);  // W_Q… stay (d_model × d_model); only the split changes
            } else if constexpr (std::is_same_v<E, SetMaskKind>) return set_mask_kind(e, s);
            else if constexpr (std::is_same_v<E, SetWindow>)
                return e.window >= (s.mask == MaskKind::Band ? 0 : 1) && assign(s.window, e.window);  // a band: keys on each side
            else if constexpr (std::is_same_v<E, SetChunk>) return e.chunk >= 1 && assign(s.chunk, e.chunk);
            else if constexpr (std::is_same_v<E, SetPadding>) return set_padding(e, s);
            else if constexpr (std::is_same_v<E, PaintMaskCell>) return paint_mask_cell(e, s);
            else if constexpr (std::is_same_v<E, SetMaskedFill>) {
                if (same_value(s.masked_fill, e.value)) return false;
                s.masked_fill = e.value;
                return true;
            } else if constexpr (std::is_same_v<E, SetScale>) return assign(s.scale, e.on);
            else if constexpr (std::is_same_v<E, SetScoreScale>) {
                if (same_value(s.score_scale, e.value)) return false;
                s.score_scale = e.value;  // validate says what is wrong with a bad one
                return true;
            } else if constexpr (std::is_same_v<E, SetRope>) {
                if (reflect::equal(s.rope, e.rope)) return false;
                s.rope = e.rope;  // validate says what is wrong with a bad one
                return true;
            } else if constexpr (std::is_same_v<E, SetSoftcap>) {
                if (same_value(s.softcap, e.value)) return false;
                s.softcap = e.value;
                return true;
            }
            else if constexpr (std::is_same_v<E, SetQKNorm>) {
                const bool changed = s.qk_norm != e.on || s.qk_norm_plus_one != e.plus_one || s.qk_norm_whole != e.whole;
                if (s.qk_norm_whole != e.whole) s.q_norm = s.k_norm = Vector();  // d_k weights, or H·d_k: the identity's
                s.qk_norm = e.on;
                s.qk_norm_plus_one = e.plus_one;
                s.qk_norm_whole = e.whole;
                return changed;
            }
            else if constexpr (std::is_same_v<E, SetSinks>) {
                if (reflect::equal(s.sinks, e.sinks)) return false;
                s.sinks = e.sinks;  // validate says what is wrong with a bad one
                return true;
            }
            else if constexpr (std::is_same_v<E, SetOutputGate>) return assign(s.output_gate.on, e.on);
            else if constexpr (std::is_same_v<E, SetDifferential>) {
                if (e.on && (s.input != InputMode::Embeddings || s.latent.on() || s.delta_net.on || !std::isfinite(e.lambda_init))) return false;
                if (s.differential.on == e.on && (!e.on || s.differential.lambda_init == e.lambda_init)) return false;
                s.differential.on = e.on;
                if (e.on) {
                    s.differential.lambda_init = e.lambda_init;
                    s.sinks = Vector();
                    s.output_gate.on = false;
                }
                return true;
            }
            else if constexpr (std::is_same_v<E, SetDeltaNet>) {
                if (s.delta_net.on == e.on || s.input != InputMode::Embeddings || s.attention != AttentionKind::Self) return false;
                s.delta_net = GatedDeltaNet{};
                s.w_q = s.w_k = s.w_v = s.w_o = Matrix();  // their shapes change: seeded again
                s.b_q = s.b_k = s.b_v = Vector();
                if (!e.on) return true;
                s.delta_net.on = true;
                s.delta_net.key_heads = 1;
                s.mask = MaskKind::Causal;
                if (s.positional == PositionalEncoding::Rotary || s.positional == PositionalEncoding::ALiBi) s.positional = PositionalEncoding::None;
                s.qk_norm = false;
                s.sinks = Vector();
                s.softcap = 0.0f;
                s.score_scale = 0.0f;
                s.output_gate.on = false;
                s.differential.on = false;
                s.temperature = QueryTemperature{};
                s.latent = LatentAttention{};
                s.kv_heads = 0;
                if (!(s.block.epsilon > 0.0f)) s.block.epsilon = 1e-6f;
                return true;
            }
            else if constexpr (std::is_same_v<E, SetTemperature>) {
                if (reflect::equal(s.temperature, e.temperature)) return false;
                s.temperature = e.temperature;  // validate says what is wrong with a bad one
                return true;
            }
            else if constexpr (std::is_same_v<E, SetSoftmax>) return assign(s.softmax, e.kind);
            else if constexpr (std::is_same_v<E, SetPositional>) return assign(s.positional, e.kind);
            else if constexpr (std::is_same_v<E, SetAttention>) return set_attention(e, s);
            else if constexpr (std::is_same_v<E, SetBlock>) {
                BlockOptions block = s.block;
                block.residual = block.layer_norm = block.feed_forward = e.on;
                const bool changed = block.residual != s.block.residual || block.layer_norm != s.block.layer_norm ||
                                     block.feed_forward != s.block.feed_forward;
                s.block = block;
                return changed;
            } else if constexpr (std::is_same_v<E, SetBlockDesign>) {
                BlockOptions block = s.block;
                block.norm_kind = e.norm_kind;
                block.gamma_plus_one = e.gamma_plus_one;
                block.norm = e.norm;
                block.parallel_residual = e.parallel_residual;
                block.sandwich_norm = e.sandwich_norm;
                block.gated = e.gated;
                block.activation = e.activation;
                if (e.layer_norm) block.layer_norm = *e.layer_norm;
                // only a pre-norm block with norms can leave N₁ out (ModernBERT's first layer): another layout has it back
                if (block.norm != NormPlacement::Pre || !block.layer_norm) block.attention_norm = true;
                if (block.norm_kind == NormKind::RMSNorm)
                    for (LayerNormParams* n : {&block.norm_1, &block.norm_2, &block.norm_post_attention, &block.norm_post_feed_forward})
                        n->beta = Vector();
                if (block.gated) block.b_1 = block.b_2 = Vector();
                if (reflect::equal(block, s.block)) return false;
                s.block = std::move(block);
                return true;
            } else if constexpr (std::is_same_v<E, SetMixture>) {
                MixtureOfExperts& m = s.block.moe;
                if (!m.routed() || e.top_k < 1 || e.top_k > m.experts || !std::is_sorted(e.ablated.begin(), e.ablated.end()) ||
                    std::adjacent_find(e.ablated.begin(), e.ablated.end()) != e.ablated.end() ||
                    (!e.ablated.empty() && (e.ablated.front() < 0 || e.ablated.back() >= m.experts)))
                    return false;
                if (m.top_k == e.top_k && m.normalize_top_k == e.normalize_top_k && m.ablated == e.ablated) return false;
                m.top_k = e.top_k;
                m.normalize_top_k = e.normalize_top_k;
                m.ablated = e.ablated;
                return true;
            } else if constexpr (std::is_same_v<E, SetLatent>) {
                const LatentAttention& l = s.latent;
                if (s.input != InputMode::Embeddings || s.attention != AttentionKind::Self) return false;
                if (e.kv_rank < 0 || e.q_rank < 0 || e.nope_dim < 0 || e.rope_dim < 0 || e.rope_dim % 2 != 0 ||
                    (e.kv_rank > 0 && (e.v_dim < 1 || e.nope_dim + e.rope_dim < 1)) || e.kv_rank > 4096 || e.q_rank > 4096 ||
                    e.nope_dim > 4096 || e.rope_dim > 4096 || e.v_dim > 4096)
                    return false;
                if (e.kv_rank == 0 && !l.on()) return false;
                if (e.kv_rank == l.kv_rank && e.q_rank == l.q_rank && e.nope_dim == l.nope_dim && e.rope_dim == l.rope_dim && e.v_dim == l.v_dim)
                    return false;
                const int d_k_before = head_dim_of(s), d_v_before = value_dim_of(s), q_rank_before = l.q_rank;
                LatentAttention next;
                if (e.kv_rank > 0) {
                    next.kv_rank = e.kv_rank, next.q_rank = e.q_rank, next.nope_dim = e.nope_dim, next.rope_dim = e.rope_dim, next.v_dim = e.v_dim;
                    s.w_k = s.w_v = Matrix();  // the latent makes K and V
                    s.b_k = s.b_v = Vector();
                    s.kv_heads = 0;
                    s.differential.on = false;
                    s.head_dim = 0;
                    s.qk_norm = false;
                    s.q_norm = s.k_norm = Vector();
                }
                s.latent = std::move(next);
                // what no longer fits is seeded again: W_Q and b_q (another width, or the low-rank path), W_O (H·d_v rows)
                if (head_dim_of(s) != d_k_before || s.latent.q_rank > 0 || q_rank_before > 0) {
                    s.w_q = Matrix();
                    s.b_q = Vector();
                }
                if (value_dim_of(s) != d_v_before) s.w_o = Matrix();
                if (s.positional == PositionalEncoding::Rotary) s.rope.rotary_dims = 0;
                return true;
            } else if constexpr (std::is_same_v<E, SetSeed>) {
                const LatentAttention& l = s.latent;
                const bool had_weights = s.w_q.size() || s.w_k.size() || s.w_v.size() ||
                                         (s.input == InputMode::Embeddings && s.w_o.size()) || l.w_q_a.size() || l.w_q_b.size() ||
                                         l.w_kv_a.size() || l.w_kv_b.size() || s.output_gate.w_g.size() || s.delta_net.w_z.size() ||
                                         s.delta_net.w_b.size() || s.delta_net.w_a.size() || s.delta_net.conv.size();
                if (s.seed == e.seed && !had_weights) return false;
                s.seed = e.seed;
                s.w_q = s.w_k = s.w_v = s.output_gate.w_g = Matrix();  // seeded again from the new seed
                s.delta_net.w_z = s.delta_net.w_b = s.delta_net.w_a = Matrix();
                s.delta_net.conv = Matrix();
                s.latent.w_q_a = s.latent.w_q_b = s.latent.w_kv_a = s.latent.w_kv_b = Matrix();
                if (s.input == InputMode::Embeddings) s.w_o = Matrix();
                return true;
            } else if constexpr (std::is_same_v<E, ReplaceScenario>) {
                s = e.scenario;
                return true;
            }
        },
        edit);
}

// [SECTION] Session

std::string describe(const Edit& edit) {
    const auto side = [](Side s) { return s == Side::Source ? std::string("source ") : std::string(); };
    return std::visit(
        [&](const auto& e) -> std::string {
            using E = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<E, SetCell>)
                return std::string("edit ") + to_string(e.matrix) + "[" + std::to_string(e.row + 1) + "," + std::to_string(e.col + 1) + "]";
            else if constexpr (std::is_same_v<E, SetTokens>) return "set the " + side(e.side) + "tokens";
            else if constexpr (std::is_same_v<E, InsertToken>) return "insert " + side(e.side) + "token '" + e.text + "'";
            else if constexpr (std::is_same_v<E, DeleteToken>) return "delete " + side(e.side) + "token " + std::to_string(e.index + 1);
            else if constexpr (std::is_same_v<E, MoveToken>) return "move " + side(e.side) + "token " + std::to_string(e.from + 1) + " to " + std::to_string(e.to + 1);
            else if constexpr (std::is_same_v<E, RenameToken>) return "rename " + side(e.side) + "token " + std::to_string(e.index + 1) + " to '" + e.text + "'";
            else if constexpr (std::is_same_v<E, SetHeads>) return "set heads to " + std::to_string(e.heads);
            else if constexpr (std::is_same_v<E, SetMaskKind>) return std::string("set the mask to ") + to_string(e.kind);
            else if constexpr (std::is_same_v<E, SetWindow>) return "set the window to " + std::to_string(e.window);
            else if constexpr (std::is_same_v<E, SetChunk>) return "set the chunk to " + std::to_string(e.chunk);
            else if constexpr (std::is_same_v<E, SetPadding>) return std::string(e.padding ? "pad " : "unpad ") + side(e.side) + "token " + std::to_string(e.index + 1);
            else if constexpr (std::is_same_v<E, PaintMaskCell>) return "paint mask cell [" + std::to_string(e.row + 1) + "," + std::to_string(e.col + 1) + "]";
            else if constexpr (std::is_same_v<E, SetMaskedFill>) return "set the masked fill";
            else if constexpr (std::is_same_v<E, SetScale>) return e.on ? "turn scaling on" : "turn scaling off";
            else if constexpr (std::is_same_v<E, SetScoreScale>) return e.value == 0.0f ? std::string("scale by 1/\xE2\x88\x9A" "d_k") : "set the score scale";
            else if constexpr (std::is_same_v<E, SetRope>) return std::string("set RoPE's variant");
            else if constexpr (std::is_same_v<E, SetSoftcap>) return e.value == 0.0f ? std::string("turn soft-capping off") : "set the soft-cap";
            else if constexpr (std::is_same_v<E, SetSinks>) return e.sinks.size() == 0 ? "remove the attention sinks" : "set the sink logits";
            else if constexpr (std::is_same_v<E, SetOutputGate>) return e.on ? "gate the heads' outputs" : "remove the output gate";
            else if constexpr (std::is_same_v<E, SetDifferential>) return e.on ? "pair the heads (differential attention)" : "unpair the heads";
            else if constexpr (std::is_same_v<E, SetDeltaNet>) return e.on ? "make the layer Gated DeltaNet" : "back to softmax attention";
            else if constexpr (std::is_same_v<E, SetTemperature>)
                return e.temperature.on() ? "set the query temperature" : "remove the query temperature";
            else if constexpr (std::is_same_v<E, SetQKNorm>) return e.on ? "turn QK-norm on" : "turn QK-norm off";
            else if constexpr (std::is_same_v<E, SetSoftmax>) return std::string("set softmax to ") + to_string(e.kind);
            else if constexpr (std::is_same_v<E, SetPositional>) return std::string("set positions to ") + to_string(e.kind);
            else if constexpr (std::is_same_v<E, SetAttention>) return std::string("set attention to ") + to_string(e.kind);
            else if constexpr (std::is_same_v<E, SetBlock>) return e.on ? "turn the block on" : "turn the block off";
            else if constexpr (std::is_same_v<E, SetBlockDesign>) return "change the block's design";
            else if constexpr (std::is_same_v<E, SetMixture>) return std::string("change the experts' routing");
            else if constexpr (std::is_same_v<E, SetLatent>) return e.kv_rank == 0 ? std::string("turn latent attention off") : "set latent attention's sizes";
            else if constexpr (std::is_same_v<E, SetSeed>) return "set the seed to " + std::to_string(e.seed);
            else return "replace the scenario";
        },
        edit);
}

bool apply_pending(Session& session) {
    bool changed = false;
    std::vector<Edit> edits;
    edits.swap(session.pending);  // an edit never sees edits pushed while applying
    if (!edits.empty()) {
        Scenario before = session.scenario;  // one snapshot per batch: a drag of one frame is one undo step
        bool navigated = false;
        for (const Edit& e : edits) {
            changed = apply(e, session.scenario) || changed;
            if (const auto* replace = std::get_if<ReplaceScenario>(&e)) navigated = navigated || replace->navigation;
        }
        if (navigated) session.history.clear();
        else if (changed) {
            std::string action = describe(edits.front());
            if (edits.size() > 1) {
                const bool one_kind = std::all_of(edits.begin(), edits.end(), [&](const Edit& e) { return e.index() == edits.front().index(); });
                action = one_kind && std::holds_alternative<SetCell>(edits.front())
                             ? std::string("edit ") + to_string(std::get<SetCell>(edits.front()).matrix) + " (" + std::to_string(edits.size()) + " cells)"
                             : action + " and " + std::to_string(edits.size() - 1) + " more";
            }
            session.history.record(before, std::move(action));
        }
    }
    if (session.restore) {
        session.scenario = std::move(session.restore->scenario);
        session.history = std::move(session.restore->history);
        session.restore.reset();
        changed = true;
    }
    std::vector<HistoryStep> steps;
    steps.swap(session.history_steps);
    for (HistoryStep step : steps)
        changed = (step == HistoryStep::Undo ? session.history.undo(session.scenario) : session.history.redo(session.scenario)) || changed;
    if (changed) {
        session.dirty = true;
        ++session.revision;
    }
    return changed;
}

Session::Restore queued_work(const Session& session) {
    Session copy;  // the queue and what it changes; no trace
    copy.scenario = session.scenario;
    copy.history = session.history;
    copy.pending = session.pending;
    copy.history_steps = session.history_steps;
    copy.restore = session.restore;
    apply_pending(copy);
    return Session::Restore{std::move(copy.scenario), std::move(copy.history)};
}

bool undo(Session& session) {
    if (!session.history.undo(session.scenario)) return false;
    session.dirty = true;
    ++session.revision;
    return true;
}

bool redo(Session& session) {
    if (!session.history.redo(session.scenario)) return false;
    session.dirty = true;
    ++session.revision;
    return true;
}

bool update(Session& session) {
    apply_pending(session);
    if (!session.dirty) return false;
    session.dirty = false;
    // Recompute into the spare trace (its matrices are reused: no allocation per edit),
    // then swap, so the last good trace stays intact when the new one fails.
    const auto start = std::chrono::steady_clock::now();
    // An edit of embedding cells only: update just what it reaches (exact, see incremental.hpp).
    if (update_after_embedding_edit(session.computed, session.scenario, session.trace)) {
        session.computed = session.scenario;
        session.trace.settings.preset = preset_of(session.scenario);
        session.last_run_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        session.errors.clear();
        ++session.generation;
        return true;
    }
    run_into(session.scenario, RunOptions{}, session.spare);
    Trace& trace = session.spare;
    session.last_run_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!trace.ok) {
        session.errors = trace.errors;  // the last good trace stays on screen
        if (session.errors.empty()) session.errors.push_back("the scenario cannot run");
        return false;
    }
    session.errors.clear();
    trace.settings.preset = preset_of(session.scenario);
    std::swap(session.trace, session.spare);
    session.computed = session.scenario;
    ++session.generation;
    return true;
}

std::string preset_of(const Scenario& scenario) {
    const Preset* p = exact_preset(scenario);
    return p != nullptr ? p->name : std::string();
}

}  // namespace attn::edits
