#pragma once
// One table of attention cases, run on every backend against the reference, the CPU engine's
// full trace (as ggml's test-backend-ops runs one case list against the CPU):
//
//   backend                       where                              tolerance
//   output-only (streaming)       tests/test_streaming.cpp           1e-5 outputs, 1e-5·σ_i weights
//   incremental (an edit)         tests/test_incremental.cpp         2e-5·max(1, |value|), every matrix
//   GPU rows kernel, tiled kernel tests/gpu/test_gpu_gl.cpp (GL)     1e-4 outputs, 1e-5·σ_i weights,
//                                                                    1e-5·σ_i row max and sum
//
// Weights are compared cell for cell: each backend pools them at full resolution (up to 512
// a side) and from its row statistics into a 13 × 11 grid as a zoom draws them. σ_i =
// max(1, max_j |s_ij|) is the size of row i's scores (weight_scale). A cell
// non-finite on one side only is infinitely wrong. The naive softmax's rows within reach of
// the float limits (softmax.hpp: naive_row_far_from_overflow and _underflow) are not
// compared: exp is rounded differently on each backend, and that decides whether the row
// overflows or underflows.
//
// The table covers every mask (custom included) × every position encoding, fills −∞, −1e9
// and 0, cross-attention, fully masked rows, rows whose naive exponentials all underflow, the
// naive softmax's overflow, custom scales and logit soft-capping, QK-norm (both forms),
// attention sinks (fully masked rows included: the sink takes them whole), latent attention
// (d_v ≠ d_k, the rotary key shared by the heads), 1 to 8 heads, d_k 2 … 128 and n up to 1024.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention/attention_rules.hpp"
#include "attention/engine.hpp"
#include "tensor/random.hpp"
#include "attention/softmax.hpp"
#include "attention/trace.hpp"

namespace attn::testing {

// How the case's inputs are made.
enum class Inputs {
    Embeddings,  // N(0, 1) embeddings through seeded projections (the source's too in cross-attention)
    Overflow,    // direct Q, K, V: head 1's scores far above 88, head 2's small
    Underflow,   // direct Q, K, V: every fourth row's scores near −300, others near −40, −95 and 0
};

struct AttentionCase {
    std::string name;
    MaskKind mask = MaskKind::None;
    PositionalEncoding positional = PositionalEncoding::None;
    int heads = 1, n_q = 1, n_k = 1, d_k = 2;  // n_k ≠ n_q: cross-attention
    float fill = -std::numeric_limits<float>::infinity();
    SoftmaxKind softmax = SoftmaxKind::Stable;
    bool scale = true;
    float score_scale = 0.0f;  // > 0: in place of 1/√d_k
    float softcap = 0.0f;      // > 0: logit soft-capping
    int kv_heads = 0;          // > 0: grouped-query attention
    RopeOptions rope;          // with rope: its variant
    int d_model = 0;           // > 0 (embedding inputs): a head width independent of it (head_dim = d_k)
    int window = 3;
    int chunk = 4;             // the chunked mask's C
    QueryTemperature temperature;  // Llama 4's query temperature (self-attention of embeddings)
    bool output_gate = false;      // gated attention: the heads' outputs × σ(x·W_G + b_G)
    bool differential = false;     // differential attention: heads in pairs, λ_init 0.5 and λ vectors of their own
    bool qk_norm = false, qk_norm_plus_one = false;  // QK-norm, with weights that are not the identity
    bool sinks = false;        // a sink logit per head: 2, −1, 0.5, 4, 2, −1, …
    bool every_key_padding = false;
    Inputs inputs = Inputs::Embeddings;
    LatentAttention latent;    // kv_rank > 0: latent attention (its sizes; seeded weights); d_k = nope_dim + rope_dim

    AttentionCase with_fill(float f) const { AttentionCase c = *this; c.fill = f; return c; }
    AttentionCase naive() const { AttentionCase c = *this; c.softmax = SoftmaxKind::Naive; return c; }
    AttentionCase unscaled() const { AttentionCase c = *this; c.scale = false; return c; }
    AttentionCase with_window(int w) const { AttentionCase c = *this; c.window = w; return c; }
    AttentionCase with_chunk(int size) const { AttentionCase c = *this; c.chunk = size; return c; }
    AttentionCase gated() const { AttentionCase c = *this; c.output_gate = true; return c; }
    AttentionCase paired() const { AttentionCase c = *this; c.differential = true; return c; }
    AttentionCase tempered(float floor_scale, float attn_scale) const { AttentionCase c = *this; c.temperature = {floor_scale, attn_scale}; return c; }
    AttentionCase scaled_by(float f) const { AttentionCase c = *this; c.score_scale = f; return c; }
    AttentionCase capped_at(float cap) const { AttentionCase c = *this; c.softcap = cap; return c; }
    AttentionCase qk_normed(bool plus_one) const { AttentionCase c = *this; c.qk_norm = true; c.qk_norm_plus_one = plus_one; return c; }
    AttentionCase with_sinks() const { AttentionCase c = *this; c.sinks = true; return c; }
    AttentionCase grouped(int kv) const { AttentionCase c = *this; c.kv_heads = kv; return c; }
    AttentionCase rotate_half(float theta, int dims = 0) const {
        AttentionCase c = *this;
        c.rope.pairing = RopePairing::RotateHalf;
        c.rope.theta = theta;
        c.rope.rotary_dims = dims;
        return c;
    }
    AttentionCase model_width(int d) const { AttentionCase c = *this; c.d_model = d; return c; }
    AttentionCase with_inputs(Inputs i) const { AttentionCase c = *this; c.inputs = i; return c; }
    AttentionCase padding_every_key() const { AttentionCase c = *this; c.every_key_padding = true; return c; }
    AttentionCase latent_kv(int kv_rank, int q_rank, int nope, int rope_dims, int v) const {
        AttentionCase c = *this;
        c.latent.kv_rank = kv_rank, c.latent.q_rank = q_rank, c.latent.nope_dim = nope, c.latent.rope_dim = rope_dims, c.latent.v_dim = v;
        c.d_k = nope + rope_dims;
        return c;
    }
    bool cross() const { return n_k != n_q; }
};

inline AttentionCase attention_case(std::string name, MaskKind mask, PositionalEncoding positional, int heads, int n_q,
                                    int n_k, int d_k) {
    AttentionCase c;
    c.name = std::move(name);
    c.mask = mask;
    c.positional = positional;
    c.heads = heads;
    c.n_q = n_q;
    c.n_k = n_k;
    c.d_k = d_k;
    return c;
}

inline std::vector<AttentionCase> attention_cases() {
    using M = MaskKind;
    using P = PositionalEncoding;
    const float minus_1e9 = -1e9f;
    // name, mask, position encoding, heads, n_q, n_k (≠ n_q: cross), d_k; then what differs
    std::vector<AttentionCase> cases = {
        attention_case("one token", M::None, P::None, 1, 1, 1, 2),
        attention_case("one token, rope", M::None, P::Rotary, 1, 1, 1, 2),
        attention_case("causal, sinusoidal, odd d_k", M::Causal, P::Sinusoidal, 2, 7, 7, 3),
        attention_case("padding, learned", M::Padding, P::Learned, 1, 64, 64, 16),
        attention_case("window, rope", M::SlidingWindow, P::Rotary, 2, 257, 257, 8),
        attention_case("custom, alibi, 8 heads", M::Custom, P::ALiBi, 8, 64, 64, 4),
        attention_case("custom, −1e9 fill: the hidden row is uniform", M::Custom, P::None, 2, 64, 64, 5).with_fill(minus_1e9),
        attention_case("custom, fill 0", M::Custom, P::Sinusoidal, 2, 64, 64, 4).with_fill(0.0f),
        attention_case("custom, 77 tokens", M::Custom, P::None, 2, 77, 77, 8),
        attention_case("padding, −1e9 fill", M::Padding, P::Sinusoidal, 2, 257, 257, 7).with_fill(minus_1e9),
        attention_case("padding, alibi, 4 heads", M::Padding, P::ALiBi, 4, 130, 130, 8),
        attention_case("padding, every key hidden: no row sees a key", M::Padding, P::None, 2, 33, 33, 4).padding_every_key(),
        attention_case("padding, every key hidden, fill 0", M::Padding, P::ALiBi, 2, 33, 33, 4).padding_every_key().with_fill(0.0f),
        attention_case("causal, −1e9 fill", M::Causal, P::None, 1, 257, 257, 64).with_fill(minus_1e9),
        attention_case("causal, learned, 8 heads", M::Causal, P::Learned, 8, 257, 257, 8),
        attention_case("window, −1e9 fill, alibi", M::SlidingWindow, P::ALiBi, 2, 64, 64, 6).with_fill(minus_1e9),
        attention_case("window 5, fill 0, rope", M::SlidingWindow, P::Rotary, 2, 64, 64, 8).with_fill(0.0f).with_window(5),
        attention_case("no scaling", M::Causal, P::None, 2, 64, 64, 8).unscaled(),
        attention_case("naive softmax", M::None, P::Learned, 2, 64, 64, 8).naive(),
        attention_case("naive, custom, −1e9 fill: the hidden row's exponentials all underflow", M::Custom, P::None, 2, 64, 64, 8)
            .naive().with_fill(minus_1e9),
        attention_case("naive, custom, fill 0: the hidden row is uniform", M::Custom, P::Rotary, 2, 64, 64, 8).naive().with_fill(0.0f),
        attention_case("cross, sinusoidal", M::None, P::Sinusoidal, 2, 7, 33, 8),
        attention_case("cross, padding, sinusoidal", M::Padding, P::Sinusoidal, 2, 50, 53, 8),
        attention_case("cross, rope, one head", M::None, P::Rotary, 1, 300, 303, 16),
        attention_case("cross, window: rows past the keys see nothing", M::SlidingWindow, P::None, 1, 64, 20, 16),
        attention_case("cross, window, −1e9 fill: those rows are uniform", M::SlidingWindow, P::Sinusoidal, 2, 64, 20, 8)
            .with_fill(minus_1e9),
        attention_case("cross, custom, rope", M::Custom, P::Rotary, 1, 257, 100, 32),
        attention_case("cross, padding, alibi", M::Padding, P::ALiBi, 8, 7, 257, 2),
        attention_case("n = 1024, causal, rope, 8 heads", M::Causal, P::Rotary, 8, 1024, 1024, 64),
        attention_case("n = 1024, no mask, alibi, d_k = 128", M::None, P::ALiBi, 1, 1024, 1024, 128),
        attention_case("n = 1024, window, learned", M::SlidingWindow, P::Learned, 2, 1024, 1024, 32),
        attention_case("naive overflow: head 1 overflows, head 2 does not", M::Causal, P::None, 2, 64, 64, 32)
            .naive().unscaled().with_inputs(Inputs::Overflow),
        attention_case("naive underflow: every exponential of every fourth row is 0", M::Causal, P::ALiBi, 2, 64, 64, 8)
            .naive().unscaled().with_inputs(Inputs::Underflow),
        attention_case("naive underflow, padding, −1e9 fill", M::Padding, P::None, 1, 130, 130, 8)
            .naive().unscaled().with_inputs(Inputs::Underflow).with_fill(minus_1e9),
        attention_case("stable softmax of the same far-below scores", M::Causal, P::ALiBi, 2, 64, 64, 8)
            .unscaled().with_inputs(Inputs::Underflow),
        attention_case("soft-cap 0.5, causal, rope", M::Causal, P::Rotary, 2, 64, 64, 8).capped_at(0.5f),
        attention_case("custom scale 2, soft-cap 3, window, −1e9 fill", M::SlidingWindow, P::Sinusoidal, 2, 130, 130, 8)
            .scaled_by(2.0f).capped_at(3.0f).with_fill(minus_1e9),
        attention_case("custom scale 0.25, custom mask, alibi", M::Custom, P::ALiBi, 4, 64, 64, 4).scaled_by(0.25f),
        attention_case("cross, soft-cap 1, padding", M::Padding, P::None, 2, 50, 53, 8).capped_at(1.0f),
        attention_case("naive softmax of scores soft-capped at 20: they cannot overflow", M::Causal, P::None, 2, 64, 64, 32)
            .naive().unscaled().with_inputs(Inputs::Overflow).capped_at(20.0f),
        attention_case("grouped-query: 8 query heads, 2 K/V heads, causal, rope", M::Causal, P::Rotary, 8, 130, 130, 8).grouped(2),
        attention_case("multi-query: 4 heads, 1 K/V head, window, alibi", M::SlidingWindow, P::ALiBi, 4, 64, 64, 6).grouped(1),
        attention_case("grouped-query, head_dim 5 in d_model 12, custom", M::Custom, P::Sinusoidal, 4, 64, 64, 5).grouped(2).model_width(12),
        attention_case("cross, grouped-query, padding", M::Padding, P::None, 6, 50, 53, 4).grouped(3),
        attention_case("rope rotate_half, base 500000, grouped-query (Llama 3)", M::Causal, P::Rotary, 4, 130, 130, 8)
            .rotate_half(500000.0f).grouped(2),
        attention_case("rope rotate_half on 4 of 16 dims (Pythia)", M::Causal, P::Rotary, 2, 64, 64, 16).rotate_half(10000.0f, 4),
        attention_case("cross, rope rotate_half, window", M::SlidingWindow, P::Rotary, 2, 50, 53, 8).rotate_half(1000.0f),
        attention_case("grouped-query, direct inputs, naive overflow", M::Causal, P::None, 4, 64, 64, 32)
            .grouped(2).naive().unscaled().with_inputs(Inputs::Overflow),
        attention_case("QK-norm, causal, rope", M::Causal, P::Rotary, 2, 64, 64, 8).qk_normed(false),
        attention_case("QK-norm (1 + w), grouped-query, window, alibi", M::SlidingWindow, P::ALiBi, 4, 130, 130, 8).grouped(2).qk_normed(true),
        attention_case("cross, QK-norm, padding, −1e9 fill", M::Padding, P::Sinusoidal, 2, 50, 53, 8).qk_normed(false).with_fill(minus_1e9),
        attention_case("QK-norm of direct inputs that overflow without it: the naive softmax stays finite", M::Causal, P::None, 2, 64, 64, 32)
            .naive().unscaled().with_inputs(Inputs::Overflow).qk_normed(false),
        attention_case("latent attention (DeepSeek-V3), causal, rope on k_rope", M::Causal, P::Rotary, 4, 130, 130, 6)
            .latent_kv(8, 12, 4, 2, 5).model_width(16),
        attention_case("latent attention without q_rank, window, alibi, d_v 3", M::SlidingWindow, P::ALiBi, 2, 64, 64, 4)
            .latent_kv(6, 0, 2, 2, 3).model_width(8),
        attention_case("latent attention, sinks, rotate_half, −1e9 fill", M::Causal, P::Rotary, 2, 64, 64, 8)
            .latent_kv(4, 0, 4, 4, 6).model_width(8).rotate_half(10000.0f).with_sinks().with_fill(minus_1e9),
        attention_case("sinks, causal, rope", M::Causal, P::Rotary, 2, 64, 64, 8).with_sinks(),
        attention_case("sinks, custom, alibi: the fully masked row is the sink's", M::Custom, P::ALiBi, 4, 64, 64, 4).with_sinks(),
        attention_case("sinks, every key hidden: every row is the sink's", M::Padding, P::None, 2, 33, 33, 4).padding_every_key().with_sinks(),
        attention_case("sinks, every key hidden, −1e9 fill: the sink still takes it all", M::Padding, P::None, 2, 33, 33, 4)
            .padding_every_key().with_sinks().with_fill(minus_1e9),
        attention_case("sinks, every key hidden, fill 0: the keys weigh beside the sink", M::Padding, P::Sinusoidal, 2, 33, 33, 4)
            .padding_every_key().with_sinks().with_fill(0.0f),
        attention_case("cross, sinks, window: rows past the keys are the sink's", M::SlidingWindow, P::None, 2, 64, 20, 8).with_sinks(),
        attention_case("sinks, naive softmax", M::None, P::Learned, 2, 64, 64, 8).with_sinks().naive(),
        attention_case("sinks, soft-cap, QK-norm, grouped-query, 257 tokens", M::Causal, P::Rotary, 4, 257, 257, 16)
            .with_sinks().capped_at(5.0f).qk_normed(true).grouped(2),
        attention_case("sinks, n = 1024, 8 heads", M::Causal, P::None, 8, 1024, 1024, 32).with_sinks(),
        // Llama 4: chunks across the kernels' query blocks and key tiles; the query temperature of its NoPE layers
        attention_case("chunked 16, rope, 257 tokens", M::Chunked, P::Rotary, 2, 257, 257, 8).with_chunk(16),
        attention_case("chunked 64, −1e9 fill, query temperature, grouped-query", M::Chunked, P::None, 4, 130, 130, 8)
            .with_chunk(64).with_fill(minus_1e9).tempered(16.0f, 0.5f).grouped(2),
        attention_case("causal, query temperature, QK-norm, sinks", M::Causal, P::None, 2, 100, 100, 8).tempered(8.0f, 0.1f).qk_normed(false).with_sinks(),
        // Qwen3-Next: the output gate (before W_O, on every backend's concat)
        attention_case("gated attention, causal, rope, grouped-query", M::Causal, P::Rotary, 4, 130, 130, 8).grouped(2).gated(),
        // DiffLlama: each head reads its pair's values (2·d_k wide); the pairs' difference and norm before W_O
        attention_case("differential attention, causal, rope, grouped-query", M::Causal, P::Rotary, 4, 130, 130, 8).grouped(2).paired(),
        attention_case("differential attention, window, 6 heads, 300 tokens", M::SlidingWindow, P::None, 6, 300, 300, 16).with_window(40).paired(),
        // ModernBERT's local layers: a band of ±w across the kernels' query blocks and key tiles, the blocks past it
        // skipped; ±1 and ±33 put a block's first key on the last query's band edge (64 query rows, 32 keys a block)
        attention_case("band ±33, rope, 300 tokens", M::Band, P::Rotary, 2, 300, 300, 8).with_window(33),
        attention_case("band ±1, 200 tokens", M::Band, P::None, 2, 200, 200, 8).with_window(1),
        attention_case("band ±0, 130 tokens, −1e9 fill", M::Band, P::None, 2, 130, 130, 8).with_window(0).with_fill(minus_1e9),
    };
    // Every mask × every position encoding on a short sequence.
    for (M mask : {M::None, M::Causal, M::Padding, M::SlidingWindow, M::Custom, M::Chunked, M::Band})
        for (P positional : {P::None, P::Sinusoidal, P::Learned, P::Rotary, P::ALiBi})
            cases.push_back(attention_case(std::string("40 tokens, ") + to_string(mask) + ", " + to_string(positional), mask,
                                           positional, 4, 40, 40, 8)
                                .with_window(4));
    return cases;
}

// The table as a backend's agreement test runs it: whole in the plain build; under the sanitizers
// without the cases of 1024 tokens, whose instrumented CPU reference is most of the stage's time
// there (every code path they take, the others take too).
inline std::vector<AttentionCase> attention_cases_of_this_build() {
    std::vector<AttentionCase> cases = attention_cases();
#ifdef ATTNLAB_SANITIZED_BUILD
    cases.erase(std::remove_if(cases.begin(), cases.end(), [](const AttentionCase& c) { return c.n_q >= 1024; }), cases.end());
#endif
    return cases;
}

// The case's scenario.
inline Scenario case_scenario(const AttentionCase& c, std::uint64_t seed = 7) {
    Scenario s;
    s.name = c.name;
    s.heads = c.heads;
    s.seed = seed;
    s.positional = c.positional;
    s.mask = c.mask;
    s.window = c.window;
    s.chunk = c.chunk;
    s.temperature = c.temperature;
    s.output_gate.on = c.output_gate;
    if (c.differential) {  // λ = e^{Σ q1⊙k1} − e^{Σ q2⊙k2} + 0.5, with q·k sums of a few tenths
        s.differential.on = true;
        s.differential.lambda_init = 0.5f;
        for (Vector* v : {&s.differential.lambda_q1, &s.differential.lambda_k1, &s.differential.lambda_q2, &s.differential.lambda_k2})
            v->resize(c.d_k);
        for (int i = 0; i < c.d_k; ++i) {
            s.differential.lambda_q1(i) = 0.3f * std::sin(0.7f * static_cast<float>(i));
            s.differential.lambda_k1(i) = 0.2f * std::cos(0.3f * static_cast<float>(i));
            s.differential.lambda_q2(i) = -0.25f * std::cos(0.5f * static_cast<float>(i));
            s.differential.lambda_k2(i) = 0.15f * std::sin(0.9f * static_cast<float>(i) + 1.0f);
        }
    }
    s.scale = c.scale;
    s.score_scale = c.score_scale;
    s.softcap = c.softcap;
    s.softmax = c.softmax;
    s.masked_fill = c.fill;
    s.kv_heads = c.kv_heads;
    s.rope = c.rope;
    if (c.qk_norm) {
        // Weights in [0.8, 1.2] (around 0 in the (1 + w) form): |q·k| ≤ d_k·1.2², far below 88 at d_k = 32.
        s.qk_norm = true;
        s.qk_norm_plus_one = c.qk_norm_plus_one;
        s.q_norm = s.k_norm = Vector(c.d_k);
        for (int i = 0; i < c.d_k; ++i) {
            s.q_norm(i) = 0.8f + 0.1f * static_cast<float>((i * 7) % 5) - (c.qk_norm_plus_one ? 1.0f : 0.0f);
            s.k_norm(i) = 1.2f - 0.1f * static_cast<float>((i * 3) % 5) - (c.qk_norm_plus_one ? 1.0f : 0.0f);
        }
        s.block.epsilon = 1e-6f;
    }
    if (c.sinks) {
        const float logits[] = {2.0f, -1.0f, 0.5f, 4.0f};
        s.sinks = Vector(c.heads);
        for (int h = 0; h < c.heads; ++h) s.sinks(h) = logits[h % 4];
    }
    const int width = c.heads * c.d_k, kv_width = (c.kv_heads > 0 ? c.kv_heads : c.heads) * c.d_k;
    if (c.inputs == Inputs::Embeddings) {
        s.d_model = c.d_model > 0 ? c.d_model : width;
        if (s.d_model != width && c.latent.kv_rank == 0) s.head_dim = c.d_k;
        if (c.latent.kv_rank > 0) {  // K and V from the latent; its RMSNorms' ε
            s.latent = c.latent;
            s.block.epsilon = 1e-6f;
        }
        s.target.embeddings = normal_matrix(c.n_q, s.d_model, seed * 11 + 1);
        if (c.cross()) {
            s.attention = AttentionKind::Cross;
            s.source.embeddings = normal_matrix(c.n_k, s.d_model, seed * 11 + 2);
        }
    } else {
        s.input = InputMode::Direct;
        s.q = normal_matrix(c.n_q, width, seed * 11 + 1);
        s.k = normal_matrix(c.n_k, kv_width, seed * 11 + 2);
        s.v = normal_matrix(c.n_k, kv_width, seed * 11 + 3);
        if (c.inputs == Inputs::Overflow) {
            s.q *= 6.0f;                             // head 1: scores far above 88, exp overflows
            s.q.rightCols(width - c.d_k) *= 0.02f;   // the other heads' scores stay small
        } else {
            // Each head's first column: keys 10, queries −30, −4, −9.5 or 0 by row, so the
            // unscaled scores sit near −300 (every exponential 0), −40, −95 (within reach of
            // the flush bound: not compared) and 0.
            const float query_first[] = {-30.0f, -4.0f, -9.5f, 0.0f};
            for (int h = 0; h < c.heads; ++h) {
                for (int i = 0; i < c.n_q; ++i) s.q(i, h * c.d_k) = query_first[i % 4];
            }
            for (int g = 0; g * c.d_k < kv_width; ++g) s.k.col(g * c.d_k).setConstant(10.0f);
        }
    }
    // Padding: every third key from the middle on, and the last (the source's keys in
    // cross-attention); or every key.
    std::vector<bool> padding(static_cast<size_t>(c.n_k), c.every_key_padding);
    for (int j = c.n_k / 2; j < c.n_k; j += 3) padding[static_cast<size_t>(j)] = true;
    padding.back() = true;
    (c.cross() ? s.source : s.target).padding = padding;
    if (c.mask == MaskKind::Custom) {
        // Random cells, a band of whole hidden key blocks, and the last row fully hidden.
        Rng rng(seed);
        s.custom_mask = MaskMatrix(c.n_q, c.n_k);
        for (int i = 0; i < c.n_q; ++i)
            for (int j = 0; j < c.n_k; ++j) s.custom_mask(i, j) = rng.uniform() < 0.6f && !(j >= 64 && j < 160);
        s.custom_mask(0, 0) = true;
        s.custom_mask.row(c.n_q - 1).setConstant(false);
    }
    return s;
}

// [SECTION] Comparisons

// A reference row compared with another backend's: every row of a stable softmax; a naive
// softmax row only when it is far from both float limits.
inline bool row_compared(const Trace& reference, const HeadTrace& head, Eigen::Index row) {
    if (reference.settings.softmax != SoftmaxKind::Naive) return true;
    const float row_max = head.masked_scores.row(row).maxCoeff();
    const int n_keys = static_cast<int>(head.masked_scores.cols());
    return naive_row_far_from_overflow(row_max, n_keys) && naive_row_far_from_underflow(row_max, n_keys);
}

// max |got − want| over the rows keep(row) selects, a cell non-finite on both sides counting
// as equal and on one side only as infinitely wrong.
template <typename Keep>
float max_difference(const Matrix& got, const Matrix& want, Keep keep) {
    REQUIRE(got.rows() == want.rows());
    REQUIRE(got.cols() == want.cols());
    float worst = 0.0f;
    for (Eigen::Index i = 0; i < want.rows(); ++i) {
        if (!keep(i)) continue;
        for (Eigen::Index j = 0; j < want.cols(); ++j) {
            const float x = got(i, j), y = want(i, j);
            if (!std::isfinite(x) || !std::isfinite(y)) {
                if (std::isnan(x) != std::isnan(y) || (!std::isnan(x) && x != y)) return INFINITY;
                continue;
            }
            worst = std::max(worst, std::abs(x - y));
        }
    }
    return worst;
}

inline float max_difference(const Matrix& got, const Matrix& want) {
    return max_difference(got, want, [](Eigen::Index) { return true; });
}

// The tolerance of a row's weights is scaled by its scores' size, max(1, max_j |s_ij|): a
// score is known to a relative precision, and an error δ in s − m is a factor e^δ in the
// weight. 0: the row is not compared.
inline float weight_scale(const Trace& reference, const HeadTrace& head, Eigen::Index row) {
    if (!row_compared(reference, head, row)) return 0.0f;
    return std::max(1.0f, head.scaled_scores.row(row).cwiseAbs().maxCoeff());
}

// Pooled weights against the reference's full weights max-pooled over the same grid: bin
// (b, c) within tolerance × the largest weight_scale of the rows of row bin b,
// [begin + b·len/bins, begin + (b+1)·len/bins).
inline void check_pooled(const Trace& reference, const HeadTrace& want, const PooledWeights& got, float tolerance) {
    const PooledWeights expected =
        max_pool(want.weights, got.row_begin, got.row_end, got.col_begin, got.col_end, static_cast<int>(got.values.rows()),
                 static_cast<int>(got.values.cols()));
    REQUIRE(got.values.rows() == expected.values.rows());
    REQUIRE(got.values.cols() == expected.values.cols());
    const long long rows = got.row_end - got.row_begin, bins = got.values.rows();
    int wrong = 0;
    float worst = 0.0f;
    for (Eigen::Index b = 0; b < bins; ++b) {
        float scale = 1.0f;
        bool compared = true;
        for (auto i = got.row_begin + b * rows / bins; i < got.row_begin + (b + 1) * rows / bins; ++i) {
            const float row_scale = weight_scale(reference, want, i);
            compared = compared && row_scale > 0.0f;
            scale = std::max(scale, row_scale);
        }
        if (!compared) continue;
        const float difference = max_difference(Matrix(got.values.row(b)), Matrix(expected.values.row(b)));
        worst = std::max(worst, difference / scale);
        wrong += !(difference <= tolerance * scale);
    }
    INFO("largest difference ÷ scale " << worst);
    CHECK(wrong == 0);
}

struct Tolerance {
    float output;   // outputs, concat, W_O output
    float weights;  // pooled weights
};
constexpr Tolerance kOutputOnlyTolerance{1e-5f, 1e-5f};
constexpr Tolerance kGpuTolerance{1e-4f, 1e-5f};
// Relative to max(1, |value|): the update sums an edited row of QKᵀ in another order than
// the full product does (up to 1.1e-5 seen at d_k = 64).
constexpr float kIncrementalTolerance = 2e-5f;

// The region a zoom redraws from the row statistics, against the reference over that region.
inline RunOptions zoom_region(const Trace& t) {
    RunOptions region{Detail::OutputOnly};
    region.region_row_begin = t.n_queries / 5;
    region.region_row_end = std::max(region.region_row_begin + 1, t.n_queries - t.n_queries / 7);
    region.region_col_begin = t.n_keys / 6;
    region.region_col_end = std::max(region.region_col_begin + 1, t.n_keys - t.n_keys / 9);
    region.pooled_rows = 13;
    region.pooled_cols = 11;
    return region;
}

// An output-only trace (the streaming engine's or a GPU's) against the full reference: the
// outputs, the rules' verdicts (fully masked rows, overflow, ALiBi slopes), the weights
// pooled at full resolution and redrawn as a zoom from its own row statistics.
inline void check_output_only_trace(const Scenario& s, const Trace& reference, const Trace& got, Tolerance tolerance) {
    INFO("errors: " << (got.errors.empty() ? std::string() : got.errors.front()));
    REQUIRE(reference.ok);
    REQUIRE(got.ok);
    CHECK(got.detail == Detail::OutputOnly);
    CHECK(got.visible.size() == 0);
    REQUIRE(got.head.size() == reference.head.size());
    CHECK(got.n_queries == reference.n_queries);
    CHECK(got.n_keys == reference.n_keys);
    CHECK(got.scale == reference.scale);
    CHECK(got.key_tokens == reference.key_tokens);
    const auto compared_rows = [&](size_t h) {
        return [&reference, h](Eigen::Index i) { return row_compared(reference, reference.head[h], i); };
    };
    int rows_compared = 0;
    for (size_t h = 0; h < reference.head.size(); ++h) {
        INFO("head " << h + 1);
        const HeadTrace& want = reference.head[h];
        const HeadTrace& head = got.head[h];
        CHECK(head.weights.size() == 0);  // never an (n_q × n_k) matrix
        CHECK(head.scores.size() == 0);
        CHECK(max_difference(head.q, want.q) <= tolerance.output);
        CHECK(max_difference(head.k, want.k) <= tolerance.output);
        CHECK(max_difference(head.v, want.v) <= tolerance.output);
        CHECK(max_difference(head.output, want.output, compared_rows(h)) <= tolerance.output);
        CHECK(head.fully_masked_rows == want.fully_masked_rows);
        CHECK(head.softmax_overflow == want.softmax_overflow);
        CHECK(head.alibi_slope == want.alibi_slope);
        CHECK(head.pooled_weights.row_end == reference.n_queries);
        CHECK(head.pooled_weights.col_end == reference.n_keys);
        check_pooled(reference, want, head.pooled_weights, tolerance.weights);
        CHECK(head.sink == want.sink);
        REQUIRE(head.sink_weights.size() == want.sink_weights.size());  // from the row statistics
        for (Eigen::Index i = 0; i < want.sink_weights.rows(); ++i) {
            const float scale = weight_scale(reference, want, i);
            if (scale == 0.0f) continue;
            INFO("sink weight of row " << i + 1);
            CHECK(max_difference(Matrix(head.sink_weights.row(i)), Matrix(want.sink_weights.row(i))) <= tolerance.weights * scale);
        }
        for (Eigen::Index i = 0; i < reference.n_queries; ++i) rows_compared += row_compared(reference, want, i);
    }
    CHECK(rows_compared > 0);  // a case is never compared on nothing
    std::string error;
    const auto zoom = repool_weights(s, got, zoom_region(got), &error);
    INFO("zoom: " << error);
    REQUIRE(zoom);
    for (size_t h = 0; h < reference.head.size(); ++h) {
        INFO("zoom, head " << h + 1);
        check_pooled(reference, reference.head[h], (*zoom)[h], tolerance.weights);
    }
    if (s.input == InputMode::Embeddings) {
        CHECK(got.x_pe == reference.x_pe);
        CHECK(got.w_q == reference.w_q);
        CHECK(got.w_o == reference.w_o);
    }
    for (size_t h = 0; h < reference.head.size(); ++h) {
        const Eigen::Index d_v = reference.d_v, first = static_cast<Eigen::Index>(h) * d_v;
        INFO("concat, head " << h + 1);
        CHECK(max_difference(got.concat.middleCols(first, d_v), reference.concat.middleCols(first, d_v), compared_rows(h)) <=
              tolerance.output);
    }
    // W_O mixes the heads: a row of the output is compared when every head's is.
    const auto every_head = [&](Eigen::Index i) {
        for (const HeadTrace& head : reference.head)
            if (!row_compared(reference, head, i)) return false;
        return true;
    };
    CHECK(max_difference(got.output, reference.output, every_head) <= tolerance.output);
}

// The reference does what the case says: a row that sees no key weighs what the rule says
// (attention_rules.hpp: nothing when its fill's exponential is 0, else uniformly), the
// overflow and underflow cases overflow and underflow where they should.
inline void check_case_premise(const AttentionCase& c, const Trace& reference) {
    REQUIRE(reference.ok);
    const HeadTrace& first = reference.head[0];
    const std::vector<int>& hidden = first.fully_masked_rows;
    if (c.mask == MaskKind::Custom) CHECK(std::count(hidden.begin(), hidden.end(), c.n_q - 1) == 1);
    if (c.mask == MaskKind::Padding && c.every_key_padding) CHECK(static_cast<int>(hidden.size()) == c.n_q);
    if (c.mask == MaskKind::SlidingWindow && c.n_q > c.n_k + c.window) CHECK(!hidden.empty());
    for (const HeadTrace& head : reference.head) {
        // A row of nothing but the fill, beside the sink when there is one (attention_rules.hpp).
        const RowStart start = row_start(c.softmax, head.sink);
        const float shift = row_shift(c.softmax, row_max_with_sink(c.fill, start.max));
        const float fill_exp = cell_exp(c.fill, shift), sink_exp = cell_exp(head.sink, shift);
        const float l = sink_exp + static_cast<float>(c.n_k) * fill_exp;
        for (int i : head.fully_masked_rows) {
            INFO("row " << i + 1 << " sees no key");
            if (fill_exp == 0.0f) {
                CHECK(head.weights.row(i).isZero(0.0f));
                CHECK(head.output.row(i).isZero(0.0f));
            } else {
                CHECK((head.weights.row(i).array() - fill_exp / l).abs().maxCoeff() <= 1e-6f);
            }
            if (c.sinks) CHECK(std::abs(head.sink_weights(i, 0) - sink_exp / l) <= 1e-6f);
        }
        if (c.sinks) {  // every row: its weights and its sink weight make 1
            REQUIRE(head.sink_weights.rows() == c.n_q);
            CHECK(head.sink != kMinusInfinity);
            for (Eigen::Index i = 0; i < c.n_q; ++i) {
                if (!row_compared(reference, head, i)) continue;
                INFO("row " << i + 1);
                CHECK(std::abs(head.weights.row(i).sum() + head.sink_weights(i, 0) - 1.0f) <= 1e-5f);
            }
        } else {
            CHECK(head.sink_weights.size() == 0);
        }
    }
    if (c.qk_norm) {  // each row of q and k has RMS 1 before its weights
        for (const HeadTrace& head : reference.head) {
            REQUIRE(head.q_before_norm.rows() == c.n_q);
            const Matrix& normed = head.q_normed;
            for (Eigen::Index i = 0; i < normed.rows(); ++i) {
                Eigen::ArrayXf unweighted = normed.row(i).array().transpose() / reference.q_norm.row(0).array().transpose();
                if (c.qk_norm_plus_one) unweighted = normed.row(i).array().transpose() / (reference.q_norm.row(0).array().transpose() + 1.0f);
                CHECK(std::abs(std::sqrt(unweighted.square().mean()) - 1.0f) <= 1e-3f);
            }
        }
    }
    if (c.inputs == Inputs::Overflow && (c.softcap > 0.0f || c.qk_norm)) {  // capped or normed scores stay below 88: nothing overflows
        for (const HeadTrace& head : reference.head) {
            CHECK_FALSE(head.softmax_overflow);
            CHECK(head.output.allFinite());
            if (c.softcap > 0.0f) CHECK(head.capped_scores.maxCoeff() < c.softcap);
        }
    } else if (c.inputs == Inputs::Overflow) {
        CHECK(reference.head[0].softmax_overflow);
        for (size_t h = 1; h < reference.head.size(); ++h) CHECK_FALSE(reference.head[h].softmax_overflow);
        CHECK_FALSE(reference.head[0].output.allFinite());
    }
    if (c.inputs == Inputs::Underflow) {
        for (const HeadTrace& head : reference.head)
            for (int i = 0; i < c.n_q; i += 4) {
                INFO("row " << i + 1 << ": scores near −300");
                if (c.softmax == SoftmaxKind::Naive) CHECK(head.weights.row(i).isZero(0.0f));  // every exponential is 0
                else CHECK(std::abs(head.weights.row(i).sum() - 1.0f) <= 1e-5f);
            }
    }
}

// A GPU's row statistics (m_i, l_i) against the CPU's output-only run: the same shift and
// the same sum within 1e-5·σ_i (relative for the sum), a sum of exactly 0 where nothing
// weighs anything.
inline void check_row_statistics(const Trace& reference, const Trace& cpu_output_only, const Trace& got) {
    for (size_t h = 0; h < got.head.size(); ++h) {
        const HeadTrace &want = cpu_output_only.head[h], &head = got.head[h];
        REQUIRE(head.row_max.size() == got.n_queries);
        REQUIRE(head.row_sum.size() == got.n_queries);
        int mismatches = 0;
        for (Eigen::Index i = 0; i < got.n_queries; ++i) {
            // An error δ in the scores is δ in m and a factor e^δ in l: both within 1e-5·σ_i.
            const float scale = weight_scale(reference, reference.head[h], i);
            if (scale == 0.0f) continue;
            if (want.row_sum(i) == 0.0f) {
                mismatches += head.row_sum(i) != 0.0f;
                continue;
            }
            mismatches += !(std::abs(head.row_max(i) - want.row_max(i)) <= 1e-5f * scale);
            mismatches += !(std::abs(head.row_sum(i) - want.row_sum(i)) <= 1e-5f * scale * want.row_sum(i));
        }
        INFO("head " << h + 1 << ": rows whose max or sum differ");
        CHECK(mismatches == 0);
    }
}

}  // namespace attn::testing
