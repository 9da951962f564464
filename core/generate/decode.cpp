#include "generate/decode.hpp"

#include <algorithm>
#include <cmath>

#include <omp.h>

#include "attention/attention_rules.hpp"
#include "attention/engine.hpp"
#include "attention/linear_attention.hpp"
#include "attention/positional.hpp"
#include "tensor/product.hpp"
#include "attention/softmax.hpp"
#include "tensor/worker_errors.hpp"

namespace attn::generate {

LayerCache::LayerCache(int kv_heads, int key_dim, int value_dim, int window, int chunk)
    : kv_heads_(kv_heads), key_dim_(key_dim), value_dim_(value_dim), window_(window), chunk_(chunk), k_(0, key_dim), v_(0, value_dim) {}

LayerCache LayerCache::linear(int heads, int key_dim, int value_dim, int channels, int kernel) {
    LayerCache c(heads, key_dim, value_dim, 0, 0);
    c.linear_ = true;
    c.channels_ = channels;
    c.kernel_ = kernel;
    c.conv_rows_.resize(0, channels);
    c.states_.assign(static_cast<size_t>(heads), Matrix::Zero(key_dim, value_dim));
    return c;
}

void LayerCache::push_conv_row(const Matrix& row) {
    ++seen_;
    const Eigen::Index keep = kernel_ - 1;
    if (keep <= 0) return;
    Matrix rows(std::min<Eigen::Index>(conv_rows_.rows() + 1, keep), channels_);
    rows.topRows(rows.rows() - 1) = conv_rows_.bottomRows(rows.rows() - 1);
    rows.bottomRows(1) = row;
    conv_rows_.swap(rows);
}

void LayerCache::assign_linear(const Matrix& mixed, const std::vector<Matrix>& states) {
    conv_rows_ = mixed.bottomRows(std::min<Eigen::Index>(mixed.rows(), std::max(kernel_ - 1, 0)));
    states_ = states;
    seen_ = static_cast<int>(mixed.rows());
}

Matrix LayerCache::k() const {
    Matrix out(rows(), static_cast<Eigen::Index>(kv_heads_) * key_dim_);
    for (int g = 0; g < kv_heads_; ++g) out.middleCols(static_cast<Eigen::Index>(g) * key_dim_, key_dim_) = k(g);
    return out;
}

Matrix LayerCache::v() const {
    Matrix out(rows(), static_cast<Eigen::Index>(kv_heads_) * value_dim_);
    for (int g = 0; g < kv_heads_; ++g) out.middleCols(static_cast<Eigen::Index>(g) * value_dim_, value_dim_) = v(g);
    return out;
}

void LayerCache::make_room() {
    if (end_ < capacity_) return;
    const int used = rows();
    if (begin_ > 0 && used <= capacity_ / 2) {  // a window's rows slid forward: move them back to each block's start
        for (int g = 0; g < kv_heads_; ++g) {
            const Eigen::Index at = static_cast<Eigen::Index>(g) * capacity_;
            k_.middleRows(at, used) = Matrix(k_.middleRows(at + begin_, used));
            v_.middleRows(at, used) = Matrix(v_.middleRows(at + begin_, used));
        }
    } else {
        const int grown = std::max(16, 2 * capacity_);
        Matrix k(static_cast<Eigen::Index>(kv_heads_) * grown, key_dim_), v(static_cast<Eigen::Index>(kv_heads_) * grown, value_dim_);
        for (int g = 0; g < kv_heads_; ++g) {
            k.middleRows(static_cast<Eigen::Index>(g) * grown, used) = this->k(g);
            v.middleRows(static_cast<Eigen::Index>(g) * grown, used) = this->v(g);
        }
        k_.swap(k);
        v_.swap(v);
        capacity_ = grown;
    }
    begin_ = 0;
    end_ = used;
}

void LayerCache::append(const Matrix& k_row, const Matrix& v_row) {
    if (chunk_ > 0 && rows() > 0 && end_position() % chunk_ == 0) {  // a new chunk: no later query sees an earlier row
        first_position_ = end_position();
        begin_ = end_;
    }
    make_room();
    for (int g = 0; g < kv_heads_; ++g) {
        k_.row(static_cast<Eigen::Index>(g) * capacity_ + end_) = k_row.row(0).segment(static_cast<Eigen::Index>(g) * key_dim_, key_dim_);
        v_.row(static_cast<Eigen::Index>(g) * capacity_ + end_) = v_row.row(0).segment(static_cast<Eigen::Index>(g) * value_dim_, value_dim_);
    }
    ++end_;
    if (window_ > 0 && rows() > window_) {  // the row t − W leaves: no later query sees it
        ++begin_;
        ++first_position_;
    }
}

void LayerCache::assign(const Matrix& k, const Matrix& v, int first) {
    const int n = static_cast<int>(k.rows());
    int keep = window_ > 0 ? std::min(n, window_) : n;
    if (chunk_ > 0 && n > 0) keep = std::min(n, (first + n - 1) % chunk_ + 1);  // the last row's chunk, up to it
    capacity_ = keep;
    k_.resize(static_cast<Eigen::Index>(kv_heads_) * capacity_, key_dim_);
    v_.resize(static_cast<Eigen::Index>(kv_heads_) * capacity_, value_dim_);
    for (int g = 0; g < kv_heads_; ++g) {
        k_.middleRows(static_cast<Eigen::Index>(g) * capacity_, keep) =
            k.bottomRows(keep).middleCols(static_cast<Eigen::Index>(g) * key_dim_, key_dim_);
        v_.middleRows(static_cast<Eigen::Index>(g) * capacity_, keep) =
            v.bottomRows(keep).middleCols(static_cast<Eigen::Index>(g) * value_dim_, value_dim_);
    }
    begin_ = 0;
    end_ = keep;
    first_position_ = first + (n - keep);
}

std::vector<std::string> decode_faults(const Scenario& s) {
    std::vector<std::string> faults;
    if (s.input != InputMode::Embeddings) faults.push_back("the layer takes Q, K and V as given: there is no token to add");
    if (s.attention != AttentionKind::Self) faults.push_back("a cross-attention layer reads a source sequence, not the text it writes");
    if (s.mask != MaskKind::Causal && s.mask != MaskKind::SlidingWindow && s.mask != MaskKind::Chunked)
        faults.push_back(std::string("the layer's mask is ") + to_string(s.mask) +
                         ": each token's keys and values would change as later tokens come, so none can be kept "
                         "(writing needs a causal, sliding-window or chunked mask)");
    if (s.heads < 1 || kv_heads_of(s) < 1 || s.heads % kv_heads_of(s) != 0 || head_dim_of(s) < 1)
        faults.push_back("the layer's heads do not fit: " + std::to_string(s.heads) + " query heads, " + std::to_string(kv_heads_of(s)) +
                         " K/V heads, d_k " + std::to_string(head_dim_of(s)));
    return faults;
}

LayerCache empty_cache(const Scenario& s) {
    if (s.delta_net.on)
        return LayerCache::linear(s.heads, head_dim_of(s), value_dim_of(s), delta_channels(s), s.delta_net.conv_kernel);
    return LayerCache(kv_heads_of(s), head_dim_of(s), value_dim_of(s), s.mask == MaskKind::SlidingWindow ? std::max(s.window, 1) : 0,
                      s.mask == MaskKind::Chunked ? std::max(s.chunk, 1) : 0);
}

namespace {

// The block's norm of one row, with the identity's γ and β where the scenario leaves them empty.
Matrix norm_row(const BlockOptions& o, const Matrix& x, const LayerNormParams& p) {
    if (o.norm_kind == NormKind::RMSNorm) return rms_norm(x, o.epsilon, p.gamma, o.gamma_plus_one);
    return layer_norm(x, o.epsilon, p);
}

// QK-norm of one head (before RoPE) and the rotation of its row (`turn`: to the step's position,
// for RoPE). QK-norm over the whole projection (OLMo 2) is done before the heads are split
// (decode_layer).
// Latent attention turns the last d_rope dims only.
Matrix head_row(const Scenario& s, const Matrix& row, const Vector& norm_weight, const RowTurn& turn) {
    Matrix out = row;
    if (s.qk_norm && !s.qk_norm_whole) out = rms_norm(out, s.block.epsilon, norm_weight, s.qk_norm_plus_one);
    if (s.positional != PositionalEncoding::Rotary) return out;
    if (s.latent.on()) {
        const int d_rope = s.latent.rope_dim;
        if (d_rope > 0) out.rightCols(d_rope) = rotate_row(out.rightCols(d_rope).row(0), turn);
    } else {
        out = rotate_row(out.row(0), turn);
    }
    return out;
}

}  // namespace

bool rope_factors_change(const Scenario& s, int position) {
    return s.positional == PositionalEncoding::Rotary && s.rope.scaling == RopeScalingKind::LongRope &&
           position == s.rope.original_max_positions;  // the text grows from L to L + 1 tokens
}

namespace {

// Gated DeltaNet's heads for the new row (what W_O reads, 1 × H·d_v): the row convolved with the kept
// rows, then one step of each head's recurrence, then each head's RMSNorm ⊙ SiLU(z). No weights are
// drawn: the implied row would need every earlier k, which the layer does not keep.
Matrix linear_heads(const Scenario& s, const Matrix& a, LayerCache& cache) {
    const int d_k = head_dim_of(s), d_v = value_dim_of(s), heads = s.heads;
    const DeltaNetWeights w = delta_net_weights(s);
    LinearTrace steps;
    Matrix q, k, v;
    delta_net_inputs(s, w, a, &cache.conv_rows(), steps, q, k, v, true);
    cache.push_conv_row(steps.mixed);
    Matrix concat(1, heads * d_v);
    for (int h = 0; h < heads; ++h)
        concat.middleCols(h * d_v, d_v) = linear::delta_rule(q.middleCols(h * d_k, d_k), k.middleCols(h * d_k, d_k), v.middleCols(h * d_v, d_v),
                                                             steps.beta.col(h).transpose(), steps.decay.col(h).transpose(), cache.state(h));
    return delta_net_gated(concat, steps.z, w.norm, d_v, s.block.epsilon);
}

// Softmax attention's heads for the new row (what W_O reads, 1 × H·d_v): its K and V join the cache,
// each query head reads its K/V head's rows, and the output gate where there is one.
Matrix softmax_heads(const Scenario& s, int position, int length, const Matrix& a, LayerCache& cache, DecodedAttention* attention) {
    const int d = s.d_model, d_k = head_dim_of(s), d_v = value_dim_of(s), kv = kv_heads_of(s), heads = s.heads, group = heads / kv;
    Matrix q, k, v;
    if (s.latent.on()) {
        LatentTrace steps;  // the cache keeps every head's k and v, as transformers' does
        SharedMatrix w_q;
        latent_projections(s, a, steps, w_q, q, k, v, true);
    } else {
        const SharedMatrix w_q = resolved_weight(s.w_q, d, heads * d_k, s.seed, 0);
        const SharedMatrix w_k = resolved_weight(s.w_k, d, kv * d_k, s.seed, 1);
        const SharedMatrix w_v = resolved_weight(s.w_v, d, kv * d_k, s.seed, 2);
        // One row against each weight: memory-bound, shared among the threads (ProductKernel::any_order).
        // (1, d)·(d, H·d_k) → (1, H·d_k); (1, d)·(d, H_kv·d_k) twice: in one region
        row_products_into(a, {{&w_q, &q}, {&w_k, &k}, {&w_v, &v}});
        if (s.b_q.size() != 0) q += s.b_q;
        if (s.b_k.size() != 0) k += s.b_k;
        if (s.b_v.size() != 0) v += s.b_v;
    }
    if (s.qk_norm && s.qk_norm_whole) {  // OLMo 2: the whole row, every head at once, before the split
        q = rms_norm(q, s.block.epsilon, s.q_norm, s.qk_norm_plus_one);  // (1, H·d_k)
        k = rms_norm(k, s.block.epsilon, s.k_norm, s.qk_norm_plus_one);  // (1, H_kv·d_k)
    }

    // K/V head g's row, QK-normed and rotated, joins the cache. Every head turns by one table.
    const int turned = s.latent.on() ? s.latent.rope_dim : d_k;  // latent attention turns its d_rope dims
    const RowTurn turn = s.positional == PositionalEncoding::Rotary && turned > 0 ? row_turn(s.rope, turned, position, length) : RowTurn{};
    Matrix k_row(1, kv * d_k);
    for (int g = 0; g < kv; ++g) k_row.middleCols(g * d_k, d_k) = head_row(s, k.middleCols(g * d_k, d_k), s.k_norm, turn);
    cache.append(k_row, v);

    const float scale = !s.scale ? 1.0f : s.score_scale > 0.0f ? s.score_scale : 1.0f / std::sqrt(static_cast<float>(d_k));
    const int rows = cache.rows(), first = cache.first_position();
    // Differential attention: head h reads its pair's values side by side, [V_p | V_{p+P}] (2·d_v wide)
    const bool differential = s.differential.on;
    const int pairs = heads / 2, read_width = differential ? 2 * d_v : d_v;
    Matrix concat(1, heads * read_width);
    if (attention) attention->first_position = first;  // after the append: a window or a chunk may have dropped rows
    // The heads read their own K/V blocks: shared among the threads once the cache is long
    // enough to pay for a region (each head's scores, weights and output its own).
    const double head_work = static_cast<double>(heads) * rows * (d_k + d_v);
    WorkerErrors errors;
#pragma omp parallel for schedule(static) if (head_work > 2.0e5 && !omp_in_parallel())
    for (int h = 0; h < heads; ++h) {
        errors.run([&] {
            const int g = h / group;
            Matrix q_h = head_row(s, q.middleCols(h * d_k, d_k), s.q_norm, turn);
            if (s.temperature.on()) q_h *= query_temperature(s.temperature, position);  // Llama 4's NoPE layers
            const float slope = s.positional == PositionalEncoding::ALiBi ? alibi_slope(h, heads) : 0.0f;
            const float sink = head_sink(s, h);
            const ScoreRule rule = score_rule(s, scale, slope, position + 1, sink);
            Matrix scores(1, rows), weights, sink_weights;
            scores.noalias() = q_h * cache.k(g).transpose();  // (1, d_k)·(d_k, rows)
            for (int j = 0; j < rows; ++j) scores(0, j) = masked_score(rule, scores(0, j), position, first + j);
            if (sink != kMinusInfinity) softmax_rows_into(scores, s.softmax, sink, weights, sink_weights);
            else softmax_rows_into(scores, s.softmax, weights);
            if (differential) {  // (1, rows)·(rows, d_v) twice: the pair's first head's values, then its second's
                const int p = h % pairs;
                concat.middleCols(h * read_width, d_v).noalias() = weights * cache.v(p / group);
                concat.middleCols(h * read_width + d_v, d_v).noalias() = weights * cache.v((p + pairs) / group);
            } else {
                concat.middleCols(h * d_v, d_v).noalias() = weights * cache.v(g);  // (1, rows)·(rows, d_v)
            }
            if (attention) {
                attention->weights[static_cast<size_t>(h)] = weights.row(0);
                attention->sink[static_cast<size_t>(h)] = sink != kMinusInfinity ? sink_weights(0, 0) : 0.0f;
            }
        });
    }
    errors.rethrow();
    if (s.output_gate.on) concat = concat.cwiseProduct(output_gate_values(a, gate_weight(s), s.output_gate.b_g, true));  // gated attention
    if (differential)  // each pair's difference, normed: 1 × H·d_v again
        return differential_pairs(concat, heads, d_v, differential_lambda(s.differential), s.differential.lambda_init, s.block.epsilon);
    return concat;
}

}  // namespace

Matrix decode_layer(const Scenario& s, int position, const Matrix& x_in, LayerCache& cache, DecodedAttention* attention, int length) {
    if (length <= 0) length = position + 1;
    const int d = s.d_model, heads = s.heads;
    // x + PE(t): order enters here for a sinusoidal or the engine's seeded learned encoding.
    Matrix x = x_in;
    if (s.positional == PositionalEncoding::Sinusoidal || s.positional == PositionalEncoding::Learned)
        x += additive_encoding(s.positional, position + 1, d, s.seed).row(position);
    const bool pre = has_block(s) && s.block.norm == NormPlacement::Pre;
    const Matrix a = has_block(s) && s.block.normalises_attention_input() ? norm_row(s.block, x, s.block.norm_1) : x;  // what attention reads

    if (attention) {
        attention->weights.assign(static_cast<size_t>(heads), Vector());
        attention->sink.assign(static_cast<size_t>(heads), 0.0f);
        attention->first_position = cache.first_position();
    }
    const Matrix heads_out = s.delta_net.on ? linear_heads(s, a, cache) : softmax_heads(s, position, length, a, cache, attention);
    const SharedMatrix w_o = resolved_weight(s.w_o, heads * value_dim_of(s), d, s.seed, 3);
    Matrix output;
    product_into(heads_out, w_o, output, ProductKernel::any_order);  // (1, H·d_v)·(H·d_v, d) → (1, d)
    if (s.b_o.size() != 0) output += s.b_o;
    if (!has_block(s)) return output;
    BlockTrace block;
    if (pre) block.norm1 = a;
    run_block(s, x, output, block, true);
    return block.output;
}

}  // namespace attn::generate
