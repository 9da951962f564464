#include "generate/writer.hpp"

#include <algorithm>

namespace attn::generate {

Scenario writing_scenario(const Writer& w, int layer, const stack::Ablation& ablated) {
    Scenario s;
    if (w.edited && w.edited->first == layer) {
        s = w.edited->second;
    } else {
        s = w.stack.layer_scenario(layer, Matrix::Zero(1, w.stack.d_model), nullptr);
    }
    s.target = Sequence{};  // writing reads no X of the scenario's own
    stack::ablate(s, ablated, layer);
    return s;
}

double Writing::bytes() const {
    double total = 0;
    for (const LayerCache& c : cache) total += c.bytes();
    return total;
}

std::vector<std::string> write_faults(const Writer& w, const stack::Ablation& ablated) {
    if (!w.cannot.empty()) return {w.cannot};
    std::vector<std::string> faults = stack::validate_ablation(w.stack, ablated);
    if (w.stack.head.unembedding.size() == 0) faults.push_back("the model has no unembedding to predict a next token with");
    for (int l = 0; l < w.stack.layers; ++l) {
        const Scenario s = writing_scenario(w, l, {});
        for (const std::string& f : decode_faults(s)) faults.push_back("layer " + std::to_string(l + 1) + ": " + f);
        for (std::string& f : stack::expert_faults(s, ablated.experts, l)) faults.push_back(std::move(f));
    }
    return faults;
}

namespace {

bool refuse(std::string* why, const std::string& text) {
    if (why) *why = text;
    return false;
}

void start(const Writer& w, const stack::Ablation& ablated, Writing& writing, int from_layer) {
    writing.ablated = ablated;
    writing.cache.resize(static_cast<size_t>(w.stack.layers));
    writing.layers.resize(static_cast<size_t>(w.stack.layers));
    for (int l = from_layer; l < w.stack.layers; ++l) {
        writing.layers[static_cast<size_t>(l)] = writing_scenario(w, l, ablated);
        writing.cache[static_cast<size_t>(l)] = empty_cache(writing.layers[static_cast<size_t>(l)]);
    }
}

void read_logits(const Writer& w, const Matrix& x, Writing& writing) {
    const Matrix h = stack::final_norm(w.stack.head, x);
    stack::unembed_into(w.stack.head, h, writing.logits, ProductKernel::any_order);  // (1 × d)·(d × V) → (1 × V)
}

}  // namespace

bool prefill(const Writer& w, const stack::Pass& pass, const std::vector<int>& ids, Writing& writing, std::string* why, int from_layer) {
    if (const std::vector<std::string> faults = write_faults(w, pass.ablated); !faults.empty()) return refuse(why, faults.front());
    const int n = static_cast<int>(ids.size());
    if (!pass.ok || static_cast<int>(pass.layers.size()) != w.stack.layers || pass.x0.rows() != n)
        return refuse(why, "the pass does not hold every layer of the " + std::to_string(n) + " tokens");
    if (from_layer <= 0 || writing.cache.size() != static_cast<size_t>(w.stack.layers)) from_layer = 0;
    start(w, pass.ablated, writing, from_layer);
    writing.ids = ids;
    for (int l = from_layer; l < w.stack.layers; ++l) {
        const Trace& t = pass.layers[static_cast<size_t>(l)];
        LayerCache& cache = writing.cache[static_cast<size_t>(l)];
        if (cache.is_linear()) {  // Gated DeltaNet: the pass's last mixed rows and each head's state after the prompt
            if (t.linear.mixed.rows() != n || t.head.size() != static_cast<size_t>(t.heads))
                return refuse(why, "layer " + std::to_string(l + 1) + "'s trace keeps no state of its recurrence");
            std::vector<Matrix> states;
            for (const HeadTrace& head : t.head) states.push_back(head.state);
            cache.assign_linear(t.linear.mixed, states);
            continue;
        }
        const int kv = cache.kv_heads(), group = t.heads / std::max(kv, 1);
        if (t.head.size() != static_cast<size_t>(t.heads) || t.n_queries != n || t.d_k != cache.key_dim())
            return refuse(why, "layer " + std::to_string(l + 1) + "'s trace keeps no K and V of every token");
        const int d_v = cache.value_dim();  // a differential head's v is its pair's two, 2·d_v wide
        Matrix k(n, kv * t.d_k), v(n, kv * d_v);
        for (int g = 0; g < kv; ++g) {  // K/V head g: the K and V its first query head read
            const int h = g * group;
            const HeadTrace& head = t.head[static_cast<size_t>(h)];
            if (head.k.rows() != n || head.v.rows() != n) return refuse(why, "layer " + std::to_string(l + 1) + "'s trace keeps no K and V");
            k.middleCols(g * t.d_k, t.d_k) = head.k;
            // differential: query head h's own values are the left half of its pair's (h < P), else the right
            v.middleCols(g * d_v, d_v) = !t.settings.differential ? head.v : h < t.heads / 2 ? head.v.leftCols(d_v) : head.v.rightCols(d_v);
        }
        cache.assign(k, v, 0);
    }
    read_logits(w, pass.final_input.bottomRows(1), writing);
    return true;
}

bool prefill_by_steps(const Writer& w, const std::vector<int>& ids, const stack::Ablation& ablated, Writing& writing, std::string* why) {
    if (const std::vector<std::string> faults = write_faults(w, ablated); !faults.empty()) return refuse(why, faults.front());
    if (ids.empty()) return refuse(why, "the prompt has no token");
    writing = Writing{};
    start(w, ablated, writing, 0);
    for (int id : ids)
        if (!step(w, writing, id, nullptr, why)) return false;
    return true;
}

bool step(const Writer& w, Writing& writing, int id, StepAttention* attention, std::string* why) {
    const int position = static_cast<int>(writing.ids.size());
    if (id < 0 || id >= w.vocab_size)
        return refuse(why, "token " + std::to_string(id) + " is not one of the model's " + std::to_string(w.vocab_size));
    if (writing.cache.size() != static_cast<size_t>(w.stack.layers)) return refuse(why, "the caches are not filled: no prompt was read");
    if (writing.full() || (w.max_positions > 0 && position > w.max_positions))
        return refuse(why, "the text has " + std::to_string(position) + " tokens: the model reads at most " + std::to_string(w.max_positions) +
                               " (its position table has that many rows), so nothing more can be written");
    if (w.max_positions > 0 && position == w.max_positions) {
        // The last token the model can write: it ends the text, and no position is left to read it.
        writing.ids.push_back(id);
        writing.logits.resize(0, 0);
        if (attention) attention->clear();
        return true;
    }
    if (std::any_of(writing.layers.begin(), writing.layers.end(), [&](const Scenario& layer) { return rope_factors_change(layer, position); })) {
        // LongRoPE: the text reaches its long factors, which turn every row of a full pass; the
        // keys cached so far were turned with the short ones, so every layer's cache is
        // computed again for the new length (as a full run of the whole text would turn them).
        for (int l = 0; l < w.stack.layers; ++l)
            writing.cache[static_cast<size_t>(l)] = empty_cache(writing.layers[static_cast<size_t>(l)]);
        for (int p = 0; p < position; ++p) {
            Matrix past = w.embed(writing.ids[static_cast<size_t>(p)], p);
            for (int l = 0; l < w.stack.layers; ++l)
                past = decode_layer(writing.layers[static_cast<size_t>(l)], p, past, writing.cache[static_cast<size_t>(l)], nullptr,
                                    position + 1);
        }
    }
    Matrix x = w.embed(id, position);  // (1 × d)
    if (attention) attention->assign(static_cast<size_t>(w.stack.layers), DecodedAttention{});
    for (int l = 0; l < w.stack.layers; ++l)
        x = decode_layer(writing.layers[static_cast<size_t>(l)], position, x, writing.cache[static_cast<size_t>(l)],
                         attention ? &(*attention)[static_cast<size_t>(l)] : nullptr);
    writing.ids.push_back(id);
    read_logits(w, x, writing);
    return true;
}

std::vector<LayerCacheShape> cache_shapes(const Writer& w) {
    std::vector<LayerCacheShape> shapes;
    for (int l = 0; l < w.stack.layers; ++l) {
        const Scenario s = writing_scenario(w, l, {});
        const LayerCache c = empty_cache(s);
        shapes.push_back({c.kv_heads(), c.key_dim(), c.value_dim(), c.window(), s.latent.on() ? s.latent.kv_rank + s.latent.rope_dim : 0, c.chunk(),
                          c.is_linear() ? c.linear_numbers() : 0});
    }
    return shapes;
}

CacheCost cache_cost(const std::vector<LayerCacheShape>& shapes, int query_heads, double element_bytes, long long length) {
    CacheCost cost;
    for (const LayerCacheShape& s : shapes) {
        if (s.state > 0) {  // Gated DeltaNet: its state and convolution rows, whatever the length
            cost.bytes += static_cast<double>(s.state) * element_bytes;
            cost.multi_head_bytes += static_cast<double>(query_heads) * (s.key_dim + s.value_dim) * element_bytes * static_cast<double>(length);
            continue;
        }
        const double row = (s.latent > 0 ? static_cast<double>(s.latent) : static_cast<double>(s.kv_heads) * (s.key_dim + s.value_dim)) * element_bytes;
        long long kept = s.window > 0 ? std::min<long long>(length, s.window) : length;
        if (s.chunk > 0) kept = length > 0 ? (length - 1) % s.chunk + 1 : 0;  // the current chunk's tokens
        cost.bytes += row * static_cast<double>(kept);
        if (s.chunk > 0 || s.window == 0 || length < s.window) cost.bytes_per_token += row;
        cost.multi_head_bytes += static_cast<double>(query_heads) * (s.key_dim + s.value_dim) * element_bytes * static_cast<double>(length);
    }
    return cost;
}

}  // namespace attn::generate
