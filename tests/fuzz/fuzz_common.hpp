#pragma once
// What the fuzz targets share: a bound on one input's work, and running a scenario the
// way the app does (full trace, output-only, the files written from them).
#include <string>

#include "attention/engine.hpp"
#include "attention/serialize.hpp"

namespace attn::fuzz {

// Keeps one input's work small so the fuzzer explores instead of computing.
inline bool small_enough(const Scenario& s) {
    const auto cells = [](const Matrix& m) { return m.size(); };
    if (s.input == InputMode::Direct) return cells(s.q) + cells(s.k) + cells(s.v) <= 4096 && s.q.rows() <= 256 && s.k.rows() <= 256;
    return s.d_model <= 128 && s.target.tokens.size() <= 128 && s.source.tokens.size() <= 128 && s.target.embeddings.rows() <= 128 &&
           s.source.embeddings.rows() <= 128 && s.block.d_ff <= 512 && s.block.moe.experts <= 16;
}

// Both detail levels; they must accept the same scenarios. Nothing may crash or trip a sanitizer.
inline void exercise(const Scenario& s) {
    if (!small_enough(s)) return;
    const Trace trace = run(s);
    RunOptions output_only;
    output_only.detail = Detail::OutputOnly;
    const Trace streamed = run(s, output_only);
    if (trace.ok != streamed.ok) __builtin_trap();
    (void)dump_json(trace_to_json(trace));
    (void)dump_json(scenario_to_json(s));
}

}  // namespace attn::fuzz
