#include "comparison.hpp"

#include "attention/engine.hpp"

namespace attn::comparison {

std::optional<Scenario> scenario_b(const Scenario& a, const Toggles& b_toggles, std::string* error) {
    Scenario b = a;
    std::string why;
    if (!apply(b_toggles, b, &why)) {
        if (error) *error = "B: " + why;
        return std::nullopt;
    }
    const std::vector<std::string> errors = validate(b);
    if (!errors.empty()) {
        if (error) *error = "B: " + errors.front();
        return std::nullopt;
    }
    return b;
}

Comparison compare(const Trace& a, Trace b) {
    Comparison c;
    c.ready = true;
    if (!a.ok) c.error = "A cannot run: " + (a.errors.empty() ? std::string("unknown") : a.errors.front());
    else if (!b.ok) c.error = "B cannot run: " + (b.errors.empty() ? std::string("unknown") : b.errors.front());
    else c.differences = compare_traces(a, b);
    c.b = std::move(b);
    return c;
}

const MatrixDifference* find_difference(const Comparison& c, const std::string& name) {
    for (const MatrixDifference& d : c.differences)
        if (d.name == name) return &d;
    return nullptr;
}

}  // namespace attn::comparison
