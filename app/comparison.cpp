#include "comparison.hpp"

#include "engine.hpp"

namespace attn::comparison {

Comparison compare_with(const Scenario& a, const Toggles& b_toggles) {
    Comparison c;
    Scenario b = a;
    std::string error;
    if (!apply(b_toggles, b, &error)) {
        c.error = "B: " + error;
        return c;
    }
    c.a = run(a);
    c.b = run(b);
    if (!c.a.ok) c.error = "A cannot run: " + (c.a.errors.empty() ? std::string("unknown") : c.a.errors.front());
    else if (!c.b.ok) c.error = "B cannot run: " + (c.b.errors.empty() ? std::string("unknown") : c.b.errors.front());
    else c.differences = compare_traces(c.a, c.b);
    return c;
}

const MatrixDifference* find_difference(const Comparison& c, const std::string& name) {
    for (const MatrixDifference& d : c.differences)
        if (d.name == name) return &d;
    return nullptr;
}

}  // namespace attn::comparison
