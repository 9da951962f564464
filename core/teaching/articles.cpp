#include "teaching/articles.hpp"

#include <cmath>

#include "attention/engine.hpp"

namespace attn {

std::vector<Verdict> check_preset(const Preset& preset, const Trace& trace) {
    std::vector<Verdict> verdicts;
    for (const PrintedValue& pv : preset.printed) {
        Verdict v;
        v.preset = preset.name;
        v.article = preset.article;
        v.quantity = pv.quantity;
        v.printed = pv.printed;
        // Half a unit in the last printed digit, plus float32 rounding slack.
        v.tolerance = 0.5 * std::pow(10.0, -pv.decimals) + 1e-6;
        const Matrix* m = trace.ok ? find_matrix(trace, pv.matrix) : nullptr;
        v.match = m != nullptr;
        for (size_t i = 0; i < pv.printed.size(); ++i) {
            const Eigen::Index col = pv.first_col + static_cast<Eigen::Index>(i);
            if (!m || pv.row >= m->rows() || col >= m->cols()) {
                v.match = false;
                continue;
            }
            const double computed = (*m)(pv.row, col);
            v.computed.push_back(computed);
            if (!(std::fabs(computed - pv.printed[i]) <= v.tolerance)) v.match = false;
        }
        if (!v.match) v.explanation = m ? pv.explanation : "the trace has no matrix '" + pv.matrix + "'";
        verdicts.push_back(std::move(v));
    }
    return verdicts;
}

std::vector<Verdict> check_articles() {
    std::vector<Verdict> all;
    for (const Preset& p : presets()) {
        if (p.printed.empty()) continue;
        auto v = check_preset(p, run(p.scenario));
        all.insert(all.end(), v.begin(), v.end());
    }
    return all;
}

}  // namespace attn
