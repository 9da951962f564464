// The one loop over layers (stack.hpp has the maths).
#include "model/stack.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <new>
#include <optional>
#include <numeric>

#include "attention/engine.hpp"
#include "io/json_read.hpp"  // byte_size_text
#include "tensor/memory_room.hpp"
#include "tensor/product.hpp"

namespace attn::stack {

int Ablation::lowest_layer(int none) const {
    int lowest = none;
    if (!heads.empty()) lowest = std::min(lowest, heads.begin()->layer);
    if (!experts.empty()) lowest = std::min(lowest, experts.begin()->layer);
    return lowest;
}

std::vector<std::string> validate_ablation(const Stack& stack, const Ablation& ablated) {
    std::vector<std::string> errors;
    const std::string layers = std::to_string(stack.layers) + (stack.layers == 1 ? " layer" : " layers");
    for (const HeadId& id : ablated.heads)
        if (!id.within(stack.layers, stack.heads))
            errors.push_back("the ablated head " + std::to_string(id.head + 1) + " of layer " + std::to_string(id.layer + 1) +
                             " does not exist: the model has " + layers + " of " + std::to_string(stack.heads) +
                             (stack.heads == 1 ? " head" : " heads"));
    for (const ExpertId& id : ablated.experts)
        if (id.layer < 0 || id.layer >= stack.layers || id.expert < 0)
            errors.push_back("the ablated expert " + std::to_string(id.expert + 1) + " of layer " + std::to_string(id.layer + 1) +
                             " does not exist: the model has " + layers);
    return errors;
}

std::vector<std::string> expert_faults(const Scenario& s, const ExpertSet& ablated, int layer) {
    std::vector<std::string> faults;
    const MixtureOfExperts& moe = s.block.moe;
    const bool mixture = s.block.feed_forward && moe.routed();
    for (auto it = ablated.lower_bound({layer, 0}); it != ablated.end() && it->layer == layer; ++it)
        if (!mixture || it->expert >= moe.experts)
            faults.push_back("the ablated expert " + std::to_string(it->expert + 1) + " of layer " + std::to_string(layer + 1) +
                             " does not exist: " +
                             (mixture ? "its mixture has " + std::to_string(moe.experts) + " experts"
                                      : std::string("the layer's feed-forward is not a mixture of experts")));
    return faults;
}

int ablated_in_layer(const HeadSet& ablated, int layer) {
    return static_cast<int>(std::distance(ablated.lower_bound({layer, 0}), ablated.lower_bound({layer + 1, 0})));
}

std::vector<int> experts_ablated_in_layer(const ExpertSet& ablated, int layer) {
    std::vector<int> experts;
    for (auto it = ablated.lower_bound({layer, 0}); it != ablated.end() && it->layer == layer; ++it) experts.push_back(it->expert);
    return experts;
}

bool ablate_heads(Matrix& w_o, int d_k, const HeadSet& ablated, int layer) {
    bool any = false;
    for (auto it = ablated.lower_bound({layer, 0}); it != ablated.end() && it->layer == layer; ++it) {
        // Head h's slice of the concatenation, columns [h·d_k, (h+1)·d_k), meets these rows of W_O. A layer
        // with fewer heads than the model's most (Qwen3-Next's softmax layers beside its linear ones) has
        // no head h to ablate.
        if ((static_cast<Eigen::Index>(it->head) + 1) * d_k > w_o.rows()) continue;
        w_o.middleRows(static_cast<Eigen::Index>(it->head) * d_k, d_k).setZero();
        any = true;
    }
    return any;
}

bool ablate(Scenario& s, const Ablation& ablated, int layer) {
    bool changed = false;
    // W_O stays shared with the family's weights unless a head of this layer is ablated. Head h meets
    // the rows output_rows_of says: its own, or in differential attention its pair's (the two maps of a
    // pair share one normed output, so ablating either silences the pair).
    if (ablated_in_layer(ablated.heads, layer) > 0) {
        Matrix& w_o = s.w_o.edit();
        for (auto it = ablated.heads.lower_bound({layer, 0}); it != ablated.heads.end() && it->layer == layer; ++it) {
            const RowRange rows = output_rows_of(s, it->head);
            if (rows.begin + rows.count > w_o.rows()) continue;  // no head h in this layer (see ablate_heads)
            w_o.middleRows(rows.begin, rows.count).setZero();
            changed = true;
        }
    }
    std::vector<int>& dropped = s.block.moe.ablated;
    for (int e : experts_ablated_in_layer(ablated.experts, layer)) {
        const auto at = std::lower_bound(dropped.begin(), dropped.end(), e);
        if (at != dropped.end() && *at == e) continue;
        dropped.insert(at, e);
        changed = true;
    }
    return changed;
}

const Matrix& layer_output(const Trace& trace) { return trace.has_block ? trace.block.output : trace.output; }

namespace {

// Whether an ablated head of layer ℓ still has a nonzero row of W_O in the scenario, or an
// ablated expert of it is not among the mixture's own ablated ones.
bool needs_ablation(const Scenario& s, const Ablation& ablated, int layer) {
    for (auto it = ablated.heads.lower_bound({layer, 0}); it != ablated.heads.end() && it->layer == layer; ++it) {
        const RowRange rows = output_rows_of(s, it->head);  // head h's rows of W_O
        if (rows.begin + rows.count <= s.w_o.rows() && !s.w_o->middleRows(rows.begin, rows.count).isZero(0.0f)) return true;
    }
    for (int e : experts_ablated_in_layer(ablated.experts, layer))
        if (!s.block.moe.is_ablated(e)) return true;
    return false;
}

template <typename M>  // a Matrix or a SharedMatrix
std::string shape(const M& m) { return std::to_string(m.rows()) + " \xC3\x97 " + std::to_string(m.cols()); }

std::vector<std::string> head_faults(const Stack& stack) {
    const Head& h = stack.head;
    if (h.unembedding.size() == 0) return {};  // the family's own head reads h
    const SharedMatrix& u = h.unembedding;
    const Eigen::Index d = stack.d_model;
    if ((h.tied ? u.cols() : u.rows()) != d)
        return {"the unembedding is " + shape(u) + (h.tied ? ", tied to the embedding table: expected V \xC3\x97 " : ": expected ") +
                std::to_string(d) + (h.tied ? "" : " \xC3\x97 V")};
    const Eigen::Index v = h.tied ? u.rows() : u.cols();
    if (h.bias != nullptr && h.bias->size() != 0 && h.bias->size() != v)
        return {"the unembedding's bias has " + std::to_string(h.bias->size()) + " values for " + std::to_string(v) + " tokens"};
    if (h.final_norm && ((h.norm.gamma.size() != 0 && h.norm.gamma.size() != d) || (h.norm.beta.size() != 0 && h.norm.beta.size() != d)))
        return {"the final norm's \xCE\xB3 or \xCE\xB2 is not one value per column of d_model " + std::to_string(d)};
    return {};
}

// h = LN_f(x_L) (or x_L), then the logits of its rows, or of its last row only.
void finish(const Stack& stack, const Matrix& x, Pass& pass) {
    const Head& h = stack.head;
    pass.final_input = x;
    pass.final_output = final_norm(h, x);
    if (h.unembedding.size() == 0) {
        pass.logits.resize(0, 0);
        pass.ok = true;
        return;
    }
    if (h.last_row_only) unembed_into(h, Matrix(pass.final_output.bottomRows(1)), pass.logits);
    else unembed_into(h, pass.final_output, pass.logits);
    pass.ok = true;
}

// Layers [from, L) from the stream entering layer `from` (and the memory); layer `from`
// runs `edited` when given.
bool run_layers(const Stack& stack, int from, const Matrix& entering, const Matrix& memory_entering, const Scenario* edited,
                Pass& pass) {
    pass.ok = false;
    pass.errors.clear();
    const Eigen::Index n = pass.x0.rows();
    auto fail = [&](int l, const std::string& why) {
        pass.errors.push_back("layer " + std::to_string(l + 1) + ": " + why);
        return false;
    };
    const Matrix* x = &entering;
    const Matrix* memory = &memory_entering;
    for (int l = from; l < stack.layers; ++l) {
        if (CancelScope::cancelled()) {
            pass.errors.assign(1, "cancelled");
            return false;
        }
        Trace& t = pass.layers[static_cast<size_t>(l)];
        const bool is_edited = l == from && edited != nullptr;
        if (is_edited) {
            // The edited scenario as it is: its X is the stream entering the layer, and an edit
            // there counts too; it must still hold one row per token.
            const Matrix& ex = edited->target.embeddings;
            if (ex.rows() != n || ex.cols() != stack.d_model)
                return fail(l, "the edited scenario's X is " + shape(ex) + "; the model's stream is " + std::to_string(n) +
                                   " \xC3\x97 " + std::to_string(stack.d_model) + " (one row per token of the sentence)");
            if (const std::vector<std::string> faults = expert_faults(*edited, pass.ablated.experts, l); !faults.empty())
                return fail(l, faults.front());
            if (needs_ablation(*edited, pass.ablated, l)) {
                Scenario ablated = *edited;
                ablate(ablated, pass.ablated, l);
                run_into(ablated, RunOptions{}, t);
            } else {
                run_into(*edited, RunOptions{}, t);
            }
        } else {
            Scenario s = stack.layer_scenario(l, *x, stack.cross ? memory : nullptr);
            if (const std::vector<std::string> faults = expert_faults(s, pass.ablated.experts, l); !faults.empty())
                return fail(l, faults.front());
            ablate(s, pass.ablated, l);
            run_into(s, RunOptions{}, t);
        }
        if (!t.ok) {
            for (const std::string& e : t.errors) pass.errors.push_back("layer " + std::to_string(l + 1) + ": " + e);
            return false;
        }
        const Matrix& out = layer_output(t);
        if (out.rows() != n || out.cols() != stack.d_model)  // what the next layer and the head read
            return fail(l, "its output is " + shape(out) + "; the model's stream is " + std::to_string(n) + " \xC3\x97 " +
                               std::to_string(stack.d_model));
        if (l == 0 && !is_edited && stack.label_first_layer) stack.label_first_layer(t);
        if (l == 0 && stack.cross) memory = &t.source_x_pe;  // the memory every later layer reads
        x = &out;
    }
    finish(stack, *x, pass);
    return true;
}

// Why the whole pass would not fit in the memory left, or empty: every layer's trace (as
// layer 1's scenario would keep it), the stream and the logits with their softmax, estimated
// before anything is computed (memory_room.hpp).
std::string pass_too_large(const Stack& stack, const Matrix& x0, const Matrix& memory) {
    // A generous bound first, from the shapes alone: six (n × n) maps a head, sixty-four
    // floats a token and dimension for the rest of a layer, the logits. Under it the pass
    // fits anywhere the app runs, and a training step (a pass an example) reads no /proc.
    constexpr double kAlwaysFits = 256.0 * 1024 * 1024;
    const double n = static_cast<double>(x0.rows()), d = stack.d_model;
    const SharedMatrix& u = stack.head.unembedding;
    const double vocabulary = u.size() == 0 ? 0.0 : static_cast<double>(stack.head.tied ? u.rows() : u.cols());
    const double logits = (stack.head.last_row_only ? 1.0 : n) * vocabulary * 2.0 * sizeof(float);  // and their softmax
    const double bound = stack.layers * (std::max(1, stack.heads) * 6.0 * n * n + 64.0 * n * d) * sizeof(float) + logits;
    if (bound < kAlwaysFits && !memory_room_set_for_testing()) return {};
    const std::optional<MemoryRoom> room = memory_room();
    if (!room) return {};
    const double per_layer = full_trace_bytes(stack.layer_scenario(0, x0, stack.cross ? &memory : nullptr));
    const double bytes = stack.layers * per_layer + 3.0 * n * d * sizeof(float) + logits;
    if (bytes <= room->bytes) return {};
    const auto size = [](double b) { return byte_size_text(static_cast<std::uint64_t>(b)); };
    return "the pass would keep about " + size(bytes) + " (" + std::to_string(stack.layers) + (stack.layers == 1 ? " layer" : " layers") +
           " \xC3\x97 " + size(per_layer) + " of attention maps and activations for " + std::to_string(x0.rows()) +
           " tokens, and the logits), more than " + room->what + ", " + size(room->bytes) + ": use fewer tokens";
}

thread_local const std::atomic<bool>* current_cancel = nullptr;

// Runs the layers, an allocation that fails anywhere (the scenario's copies, the logits)
// becoming the pass's message rather than an exception out of the model's job.
bool run_layers_guarded(const Stack& stack, int from, const Matrix& entering, const Matrix& memory_entering, const Scenario* edited,
                        Pass& pass) {
    try {
        return run_layers(stack, from, entering, memory_entering, edited, pass);
    } catch (const std::bad_alloc&) {
        pass.ok = false;
        pass.layers.clear();
        pass.layers.shrink_to_fit();
        pass.logits.resize(0, 0);
        pass.errors.assign(1, "not enough memory for the pass of " + std::to_string(pass.x0.rows()) + " tokens through " +
                                  std::to_string(stack.layers) + " layers: use fewer tokens");
        return false;
    }
}

}  // namespace

CancelScope::CancelScope(const std::atomic<bool>* cancel) : outer_(current_cancel) { current_cancel = cancel; }
CancelScope::~CancelScope() { current_cancel = outer_; }
bool CancelScope::cancelled() { return current_cancel != nullptr && current_cancel->load(std::memory_order_relaxed); }

bool forward_into(const Stack& stack, Matrix x0, Matrix memory, Pass& pass) {
    pass.ok = false;
    pass.errors = validate_ablation(stack, pass.ablated);
    for (std::string& e : head_faults(stack)) pass.errors.push_back(std::move(e));
    if (stack.layers < 1) pass.errors.push_back("the model has no layer");
    if (x0.rows() < 1 || x0.cols() != stack.d_model)
        pass.errors.push_back("the embedded tokens are " + shape(x0) + ": expected one row of d_model " + std::to_string(stack.d_model) +
                              " per token");
    if (pass.errors.empty())
        if (std::string why = pass_too_large(stack, x0, memory); !why.empty()) pass.errors.push_back(std::move(why));
    if (!pass.errors.empty()) {
        pass.layers.clear();
        return false;
    }
    pass.x0 = std::move(x0);
    pass.memory0 = std::move(memory);
    pass.layers.resize(static_cast<size_t>(stack.layers));  // kept traces keep their storage (run_into)
    return run_layers_guarded(stack, 0, pass.x0, pass.memory0, nullptr, pass);
}

bool recompute_from(const Stack& stack, int layer, Pass& pass, const Scenario* edited) {
    auto refuse = [&](std::vector<std::string> errors) {
        pass.ok = false;
        pass.errors = std::move(errors);
        return false;
    };
    const std::string from = "recompute from layer " + std::to_string(layer + 1) + ": ";
    if (layer < 0 || layer >= stack.layers || static_cast<int>(pass.layers.size()) != stack.layers || pass.x0.rows() < 1)
        return refuse({from + "the pass has no layer there (run forward first)"});
    for (int k = 0; k < layer; ++k)
        if (!pass.layers[static_cast<size_t>(k)].ok)
            return refuse({from + "layer " + std::to_string(k + 1) + " was not computed (run forward first)"});
    if (std::vector<std::string> errors = validate_ablation(stack, pass.ablated); !errors.empty()) return refuse(std::move(errors));
    if (std::vector<std::string> errors = head_faults(stack); !errors.empty()) return refuse(std::move(errors));
    const Matrix& entering = layer == 0 ? pass.x0 : layer_output(pass.layers[static_cast<size_t>(layer - 1)]);
    const Matrix& memory = layer == 0 ? pass.memory0 : pass.layers.front().source_x_pe;
    return run_layers_guarded(stack, layer, entering, memory, edited, pass);
}

Matrix final_norm(const Head& h, const Matrix& x) {
    if (!h.final_norm) return x;
    return h.norm_kind == NormKind::RMSNorm ? rms_norm(x, h.epsilon, h.norm.gamma, h.gamma_plus_one) : layer_norm(x, h.epsilon, h.norm);
}

void unembed_into(const Head& h, const Matrix& rows, Matrix& logits, ProductKernel kernel) {
    if (h.tied) product_transposed_into(rows, h.unembedding, logits, 0, kernel);  // (n, d)·(d, V) → (n, V)
    else product_into(rows, h.unembedding, logits, kernel);                       // (n, d)·(d, V) → (n, V)
    if (h.bias != nullptr && h.bias->size() != 0) logits.rowwise() += *h.bias;
    if (h.softcap > 0.0f) {
        const float c = h.softcap;
        logits = logits.unaryExpr([c](float v) { return c * std::tanh(v / c); });
    }
}

std::vector<int> top_k(const Matrix& row, int k) {
    std::vector<int> order(static_cast<size_t>(row.cols()));
    std::iota(order.begin(), order.end(), 0);
    k = std::clamp<int>(k, 0, static_cast<int>(order.size()));
    // NaN ranks below every number, so the order stays a strict weak ordering (partial_sort
    // needs one) when NaN reached the row.
    const auto rank = [&](int i) {
        const float value = row(0, i);
        return std::isnan(value) ? -std::numeric_limits<float>::infinity() : value;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
        const float ra = rank(a), rb = rank(b);
        return ra != rb ? ra > rb : a < b;
    });
    order.resize(static_cast<size_t>(k));
    return order;
}

}  // namespace attn::stack
