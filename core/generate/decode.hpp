#pragma once
// One new token through one layer against the keys and values kept from every earlier token
// (the KV cache): the incremental decode a model writes with. The layer is the engine's
// scenario of it (the family's weights and every rule: grouped-query attention, RoPE, QK-norm,
// ALiBi, the scale, the soft-cap, the sliding window, sinks, the block), and each value is
// computed by the engine's own functions, so that the new row equals the last row of a full
// run of the whole sequence (to float rounding; tests/test_generate.cpp checks 1e-5).
//
//   x      (1 × d)          the stream entering the layer at position t (+ the scenario's
//                           additive encoding of position t)
//   a      = N₁(x) (pre-norm) or x
//   q      = a·W_Q + b_q    (1 × H·d_k)      k = a·W_K + b_k, v = a·W_V + b_v (1 × H_kv·d_k)
//   q_h, k_g  QK-normed, then rotated to position t (RoPE)
//   cache  K_g, V_g gain the row (t); a sliding-window layer drops the row t − W, a chunked
//          layer every earlier row when t starts a chunk (t mod C = 0)
//   w_h    = softmax(mask(cap(q_h·K_gᵀ·scale + ALiBi)) with the sink)     (1 × rows)
//   o_h    = w_h·V_g;  out = concat(o_h)·W_O + b_o;  then the block (residuals, norms, MLP)
// A Gated DeltaNet layer (Qwen3-Next) keeps instead its convolution's last K − 1 rows and each head's
// state S: the new row is convolved with them, and S takes one step of the delta rule (linear_attention.hpp).
//
// g = h / (H / H_kv): the K/V head query head h reads (Hugging Face's repeat_kv).
#include <string>
#include <vector>

#include "tensor/matrix.hpp"
#include "attention/scenario.hpp"

namespace attn::generate {

// One layer's cache: K and V exactly as attention reads them (after QK-norm and RoPE), one
// row per kept token, a block per K/V head (as a model's cache is laid out: [head][token][d]),
// so that a head's query reads its keys and values as one run of memory.
class LayerCache {
public:
    LayerCache() = default;
    LayerCache(int kv_heads, int key_dim, int value_dim, int window, int chunk = 0);

    int kv_heads() const { return kv_heads_; }
    int key_dim() const { return key_dim_; }
    int value_dim() const { return value_dim_; }
    int window() const { return window_; }             // 0: every earlier token; W: the last W
    int chunk() const { return chunk_; }               // 0: none; C: the tokens of the current chunk of C
    int rows() const { return end_ - begin_; }
    int first_position() const { return first_position_; }  // the position of row 0
    int end_position() const { return linear_ ? seen_ : first_position_ + rows(); }  // the tokens read so far end here
    // K/V head g's (rows × d_k) and (rows × d_v), oldest first.
    auto k(int g) const { return k_.middleRows(static_cast<Eigen::Index>(g) * capacity_ + begin_, rows()); }
    auto v(int g) const { return v_.middleRows(static_cast<Eigen::Index>(g) * capacity_ + begin_, rows()); }
    // Every K/V head's columns side by side: (rows × H_kv·d_k) and (rows × H_kv·d_v).
    Matrix k() const;
    Matrix v() const;
    // Adds the next position's row (each K/V head's columns side by side); a sliding-window
    // layer then keeps its last W rows, a chunked one drops every earlier row when the row starts a chunk.
    void append(const Matrix& k_row, const Matrix& v_row);
    // The cache of positions [first, first + k.rows()) as given (a prompt pass's K and V, each
    // K/V head's columns side by side), the window or the chunk applied.
    void assign(const Matrix& k, const Matrix& v, int first);
    // Bytes the cache holds (float32).
    double bytes() const {
        if (linear_) return static_cast<double>(linear_numbers()) * sizeof(float);
        return static_cast<double>(rows()) * kv_heads_ * (key_dim_ + value_dim_) * sizeof(float);
    }

    // Gated DeltaNet (Qwen3-Next's linear layers) keeps no row of K or V: the convolution's last K − 1
    // rows of mixed channels (oldest first) and each head's state S (d_k × d_v), the same size
    // whatever the length of the text.
    static LayerCache linear(int heads, int key_dim, int value_dim, int channels, int kernel);
    bool is_linear() const { return linear_; }
    const Matrix& conv_rows() const { return conv_rows_; }
    Matrix& state(int head) { return states_[static_cast<size_t>(head)]; }
    const Matrix& state(int head) const { return states_[static_cast<size_t>(head)]; }
    // The newest row of mixed channels (1 × C) joins the convolution's window, the oldest leaving.
    void push_conv_row(const Matrix& row);
    // After a prompt pass: its last K − 1 rows of mixed channels and each head's state.
    void assign_linear(const Matrix& mixed, const std::vector<Matrix>& states);
    // The numbers a linear layer keeps: (K − 1)·C + H·d_k·d_v.
    long long linear_numbers() const {
        return static_cast<long long>(kernel_ - 1) * channels_ + static_cast<long long>(states_.size()) * key_dim_ * value_dim_;
    }

private:
    void make_room();

    int kv_heads_ = 0, key_dim_ = 0, value_dim_ = 0, window_ = 0, chunk_ = 0;
    int first_position_ = 0;
    int capacity_ = 0;         // rows of each K/V head's block: grows by doubling
    int begin_ = 0, end_ = 0;  // the rows of each block in use
    // K/V head g's block is rows [g·capacity, (g + 1)·capacity): one allocation for the layer.
    Matrix k_, v_;  // (H_kv·capacity × d_k), (H_kv·capacity × d_v)
    bool linear_ = false;            // Gated DeltaNet: conv_rows_ and states_ in place of K and V
    int channels_ = 0, kernel_ = 0, seen_ = 0;
    Matrix conv_rows_;               // (≤ K − 1 × C)
    std::vector<Matrix> states_;     // [head] (d_k × d_v)
};

// What the new row's attention did, for drawing: each query head's weights over the cache's
// rows (oldest first) and the share its sink took (0 without one).
struct DecodedAttention {
    std::vector<Vector> weights;   // [head]: (1 × rows)
    std::vector<float> sink;       // [head]
    int first_position = 0;        // the position of each weights row's first cell
};

// Why a layer's scenario cannot be decoded incrementally (empty when it can): direct Q, K, V,
// cross-attention, a mask that lets a token see later ones (none, padding, custom), a
// scenario whose shapes do not fit.
std::vector<std::string> decode_faults(const Scenario& layer);

// The cache a layer's scenario keeps (its K/V heads, d_k, d_v, window and chunk), empty.
LayerCache empty_cache(const Scenario& layer);

// The new token's row through the layer at `position` (the cache holds every earlier
// position the layer sees): appends its K and V to the cache and returns the layer's output
// (1 × d): the block's, or the attention's without one. The scenario's X is not read.
// `length` is the length of the text RoPE turns the row for (0: position + 1): LongRoPE's
// factors depend on it, and a text that grows past its original_max_positions turns every
// row with the long ones (rope_factors_change).
Matrix decode_layer(const Scenario& layer, int position, const Matrix& x, LayerCache& cache, DecodedAttention* attention = nullptr,
                    int length = 0);

// Whether writing the token at `position` changes how the layer's RoPE turns every earlier
// row: LongRoPE, as the text grows past original_max_positions tokens, turns a whole pass with
// its long factors, so the cached keys (turned with the short ones) no longer equal a full
// run's and are computed again.
bool rope_factors_change(const Scenario& layer, int position);

}  // namespace attn::generate
