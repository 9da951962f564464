#include "model/model_pass.hpp"

#include <cmath>
#include <sstream>

#include "attention/analysis.hpp"

namespace attn {

std::string value_text(float value) {
    if (std::isnan(value)) return "nan";
    std::ostringstream out;
    out << value;
    return out.str();
}

NonFiniteOrigin find_non_finite(const stack::Pass& pass, const std::string& final_norm, const Matrix* probabilities) {
    for (size_t l = 0; l < pass.layers.size(); ++l) {
        const Matrix& output = stack::layer_output(pass.layers[l]);
        if (output.allFinite()) continue;
        const Cell cell = first_non_finite(output);
        const NonFiniteReport report = non_finite_report(pass.layers[l]);
        return {"layer " + std::to_string(l + 1), "its output holds " + value_text(output(cell.row, cell.col)) + ", " +
                                                      (report.origin.empty() ? std::string("from finite values") : report.origin)};
    }
    if (const Cell c = first_non_finite(pass.final_output); c.valid())
        return {final_norm, "row " + std::to_string(c.row + 1) + ", column " + std::to_string(c.col + 1) + " is " +
                                value_text(pass.final_output(c.row, c.col)) + " from the finite stream leaving the last layer"};
    if (const Cell c = first_non_finite(pass.logits); c.valid())
        return {"the logits", "the logit of id " + std::to_string(c.col) + " is " + value_text(pass.logits(c.row, c.col)) +
                                  " from finite values: the unembedding overflowed, or holds a non-finite weight in that row"};
    if (probabilities != nullptr)
        if (const Cell c = first_non_finite(*probabilities); c.valid())
            return {"the softmax", "the probability of id " + std::to_string(c.col) + " is " + value_text((*probabilities)(c.row, c.col)) +
                                       " from finite logits"};
    return {};
}

}  // namespace attn
