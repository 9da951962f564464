#include "interpret/logit_lens.hpp"

#include <algorithm>

#include "attention/softmax.hpp"

namespace attn::interpret {

namespace {

// Rows at a time: the logits of a long sentence over a 150k vocabulary would be gigabytes.
constexpr Eigen::Index kRowsAtATime = 32;

}  // namespace

std::optional<LogitLens> logit_lens(const stack::Stack& stack, const stack::Pass& pass, int top_k, std::string* why,
                                    const std::function<bool(int, int)>& keep_going) {
    auto refuse = [&](const std::string& reason) -> std::optional<LogitLens> {
        if (why) *why = reason;
        return std::nullopt;
    };
    if (stack.head.unembedding.size() == 0)
        return refuse("the model has no unembedding of the stream (a masked LM's own head reads it): the logit lens reads a causal LM's");
    if (!pass.ok || static_cast<int>(pass.layers.size()) != stack.layers) return refuse("the pass is not whole (run it first)");
    LogitLens lens;
    lens.top_k = top_k;
    Matrix logits;
    for (int l = 0; l < stack.layers; ++l) {
        const Matrix& stream = stack::layer_output(pass.layers[static_cast<size_t>(l)]);  // x_{ℓ+1} (n × d)
        std::vector<LensCell> cells;
        for (Eigen::Index begin = 0; begin < stream.rows(); begin += kRowsAtATime) {
            const Eigen::Index rows = std::min(kRowsAtATime, stream.rows() - begin);
            const Matrix normed = stack::final_norm(stack.head, stream.middleRows(begin, rows));  // (r × d)
            stack::unembed_into(stack.head, normed, logits);                                     // (r × V)
            const Matrix p = softmax_rows(logits, SoftmaxKind::Stable);
            for (Eigen::Index r = 0; r < rows; ++r) {
                const Matrix row = p.row(r);
                LensCell cell;
                cell.ids = stack::top_k(row, top_k);
                for (int id : cell.ids) cell.probabilities.push_back(row(0, id));
                cells.push_back(std::move(cell));
            }
        }
        lens.layers.push_back(std::move(cells));
        if (keep_going && !keep_going(l + 1, stack.layers)) return refuse("cancelled");
    }
    return lens;
}

}  // namespace attn::interpret
